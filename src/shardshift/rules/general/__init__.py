"""Rules for every format: syntax, suppressions."""
