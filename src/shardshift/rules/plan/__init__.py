"""Semantic rules written once over the (merged) Plan of a setup, for every format."""
