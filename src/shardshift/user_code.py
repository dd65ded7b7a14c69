"""The user's Python, read and never run."""

from __future__ import annotations

import ast


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    """`ast.parse` without the SyntaxWarnings and DeprecationWarnings the user's code would print
    (an invalid escape sequence in a help string is the user's business, not the check's output).
    Raises what `ast.parse` raises."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(source, filename)
