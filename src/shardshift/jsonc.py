"""Parse JSON with comments and trailing commas into a positioned `Node` tree.

The grammar is `grammars/jsonc.lark`; it is compiled ahead of time into the stand-alone parser
`shardshift._parsers.jsonc` so that a check does not pay for importing lark.
"""

from __future__ import annotations

import json
import math

from shardshift._parsers import jsonc as _generated
from shardshift.source import Member, Node, join_pointer


class ParseError(Exception):
    """The text is not JSON (with comments). Carries a 1-based position."""

    def __init__(self, message: str, line: int, column: int):
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


def _number(token) -> int | float:
    # hjson, DeepSpeed's loader, turns integral numbers such as 5e8 or 1.0 into ints; json.load
    # keeps them floats. The Node keeps the json.load value; `raw` keeps the text.
    text = token.value
    shown = text if len(text) <= 24 else f"{text[:12]}...{text[-6:]}"
    if any(c in text for c in ".eE"):
        value = float(text)
        if math.isinf(value):  # hjson raises OverflowError on it, so DeepSpeed cannot load the file
            raise ParseError(f"number {shown} is out of range (it overflows to infinity)", token.line, token.column)
        return value
    try:
        return int(text)
    except ValueError:  # Python's limit on digits in int(); json.load and hjson fail the same way
        raise ParseError(f"number {shown} has {len(text.lstrip('-'))} digits, too many to read", token.line,
                         token.column) from None


def _string(token) -> str:
    try:
        return json.loads(token.value)
    except ValueError as error:  # the grammar lets `\u` through without four hex digits
        reason = getattr(error, "msg", error)
        raise ParseError(f"invalid escape in string {token.value[:40]}: {reason}", token.line, token.column) from None


class _ToNodes(_generated.Transformer):
    """Builds `Node`s from the parse tree; pointers are filled in afterwards."""

    def string(self, children):
        token = children[0]
        return Node("string", token.line, token.column, value=_string(token), raw=token.value)

    def number(self, children):
        token = children[0]
        return Node("number", token.line, token.column, value=_number(token), raw=token.value)

    def true(self, children):
        token = children[0]
        return Node("bool", token.line, token.column, value=True, raw=token.value)

    def false(self, children):
        token = children[0]
        return Node("bool", token.line, token.column, value=False, raw=token.value)

    def null(self, children):
        token = children[0]
        return Node("null", token.line, token.column, value=None, raw=token.value)

    @_generated.v_args(meta=True)
    def pair(self, meta, children):
        token, value = children
        return Member(_string(token), token.line, token.column, value)

    @_generated.v_args(meta=True)
    def object(self, meta, children):
        return Node("object", meta.line, meta.column, members=[c for c in children if c is not None])

    @_generated.v_args(meta=True)
    def array(self, meta, children):
        return Node("array", meta.line, meta.column, elements=[c for c in children if c is not None])


_parser = None


def _get_parser():
    global _parser
    if _parser is None:
        _parser = _generated.Lark_StandAlone()
    return _parser


def _assign_pointers(node: Node, pointer: str) -> None:
    node.pointer = pointer
    for member in node.members:
        _assign_pointers(member.value, join_pointer(pointer, member.key))
    for index, element in enumerate(node.elements):
        _assign_pointers(element, join_pointer(pointer, index))


def _describe(error: Exception) -> tuple[str, int, int]:
    line = getattr(error, "line", 1) or 1
    column = getattr(error, "column", 1) or 1
    token = getattr(error, "token", None)
    if token is not None and getattr(token, "type", "") == "$END":
        return "unexpected end of file", line, column
    if token is not None:
        return f"unexpected {str(token)!r}", line, column
    char = getattr(error, "char", None)
    if char is not None:
        if char.isalpha() or char in "_$":
            return (f"unexpected character {char!r}: an unquoted word is not JSON "
                    "(a template placeholder that a script substitutes?)"), line, column
        return f"unexpected character {char!r}", line, column
    return str(error).splitlines()[0], line, column


def parse_jsonc(text: str) -> Node:
    """Parse `text` into a `Node` tree, or raise `ParseError` with the position of the problem."""
    if not text.strip():
        raise ParseError("the file is empty", 1, 1)
    try:
        tree = _get_parser().parse(text)
        root = _ToNodes().transform(tree) if not isinstance(tree, Node) else tree
    except _generated.UnexpectedInput as error:
        message, line, column = _describe(error)
        raise ParseError(message, line, column) from None
    except _generated.VisitError as error:  # a bad number or string escape, raised by _ToNodes
        if isinstance(error.orig_exc, ParseError):
            raise error.orig_exc from None
        raise ParseError(f"invalid value: {error.orig_exc}", 1, 1) from None
    except RecursionError:
        raise ParseError("the document is nested too deeply", 1, 1) from None
    _assign_pointers(root, "")
    return root
