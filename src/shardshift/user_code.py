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


def walk(node: ast.AST) -> list[ast.AST]:
    """`ast.walk(node)` as a list, kept on the node: the FSDP2 reader and its rules walk the same
    shared, never modified trees many times (a list is walked ten times faster than ast.walk's
    generator rebuilds it)."""
    found = node.__dict__.get("_shardshift_walk")
    if found is None:
        found = list(ast.walk(node))
        node._shardshift_walk = found
    return found
