"""Parse a ds_config the way DeepSpeed's loader reads it (hjson) into a positioned `Node` tree.

DeepSpeed opens a config path with `hjson.load(f, object_pairs_hook=dict_raise_error_on_duplicate_keys)`
(deepspeed/runtime/config.py). hjson reads every JSON text, and more: `#`, `//` and `/* */`
comments, trailing commas, members and elements separated by newlines instead of commas, keys
without quotes, quoteless string values that run to the end of the line (`"train_batch_size":
CONFIG_BATCH_SIZE` is the string "CONFIG_BATCH_SIZE"), single-quoted strings, `'''` multi-line
strings, a root object without braces, and an empty file (an empty object).

This is a hand-written recursive-descent parser that follows hjson 3.1's decoder step by step
(the same places are accepted and refused, to the same values), with regular expressions for the
common cases, so that reading is linear in the text with a small constant. Each node records the
1-based line and column where it starts, its JSON pointer, and its exact source text (`raw`).

The values are the ones `json.load` gives for the same text where json.load can read it: a number
written `5e8` or `1.0` is a float in `Node.value`, as the Hugging Face integration (json.load)
hands it on, while hjson makes it an int; `Node.to_hjson()` gives hjson's values. The forms
hjson reads but json.load refuses (other than comments and trailing commas) are listed in the
root's `hjson_forms`, for the rule SS004.
"""

from __future__ import annotations

import gc
import math
import re
from bisect import bisect_right

from shardshift.source import Member, Node

# Nesting deeper than this is refused: hjson's recursive decoder itself stops with RecursionError
# at about 500 levels, and the rest of shardshift (copies, writers) recurses over the tree too.
MAX_DEPTH = 256


class ParseError(Exception):
    """The text cannot be read by DeepSpeed's hjson loader. Carries a 1-based position."""

    def __init__(self, message: str, line: int, column: int):
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


class _Fail(Exception):
    """A refusal at an offset (turned into a ParseError with line and column at the end)."""

    def __init__(self, message: str, offset: int, fatal: bool = False):
        super().__init__(message)
        self.message = message
        self.offset = offset
        self.fatal = fatal  # hjson fails with another exception than HjsonDecodeError: no fallback


# hjson's decoder, transcribed: whitespace is these four characters only; a comment starts with
# `#`, `//` (both to the end of the line: \r or \n) or `/*` (to the next `*/`; an unterminated one
# makes hjson raise IndexError).
_SKIP = re.compile(r"(?:[ \t\n\r]+|#[^\r\n]*|//[^\r\n]*|/\*.*?\*/)*", re.S)
# hjson's NUMBER_RE (note `\d`: any Unicode digit after the first one, as in hjson).
_NUMBER = re.compile(r"[\t ]*(-?(?:0|[1-9]\d*))(\.\d+)?([eE][-+]?\d+)?[\t ]*")
# Where a quoteless value may end: end of line, `,`, `}`, `]`, `#`, `//`, `/*`.
_TERMINATOR = re.compile(r"[\r\n,}\]#]|/[/*]")
_EOL = re.compile(r"[\r\n]")
_PLAIN_DOUBLE = re.compile(r'"([^"\\\x00-\x1f]*)"')
_PLAIN_SINGLE = re.compile(r"'([^'\\\x00-\x1f]*)'")
_CHUNK_DOUBLE = re.compile(r'[^"\\\x00-\x1f]*')
_CHUNK_SINGLE = re.compile(r"[^'\\\x00-\x1f]*")
_QUOTELESS_KEY = re.compile(r"([^ \t\n\r{}\[\],:]+)([ \t\n\r]*):")
# Fast paths for the common JSON forms; each accepts only text hjson reads to the same value (a
# number or keyword must be followed by what ends a quoteless value; anything else takes the
# general path, which follows hjson step by step).
_END = r"[ \t]*(?=[\r\n,}\]#]|//|/\*|\Z)"
_SCALAR_BODY = (r'"([^"\\\x00-\x1f]*)"'
                r"|(-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?)" + _END +
                r"|(true|false|null)" + _END)
_SCALAR = re.compile(_SCALAR_BODY)
_MEMBER = re.compile(r'"([^"\\\x00-\x1f]*)"[ \t\n\r]*:[ \t\n\r]*()(?:' + _SCALAR_BODY + r")[ \t\n\r]*(?:(,)[ \t\n\r]*)?")
_ESCAPES = {'"': '"', "'": "'", "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_HEX = frozenset("0123456789abcdefABCDEF")
_PUNCTUATORS = "{}[],:"
_SCALAR_FIRST = frozenset('"-0123456789tfn')

# What SS004 says about each hjson-only form (the text json.load refuses).
FORMS = {
    "quoteless-value": "a string value without quotes",
    "quoteless-key": "a key without quotes",
    "single-quoted": "a single-quoted string",
    "multiline-string": "a ''' multi-line string",
    "missing-comma": "no comma between two members or elements",
    "braceless-root": "a root object without braces",
    "empty-file": "an empty file, which hjson reads as an empty object",
    "escape": "a string escape JSON does not have",
    "non-ascii-digits": "a number with non-ASCII digits",
    "non-finite": "a bare NaN or Infinity",
}
# the tokens Python's json.load reads as floats; hjson reads them as strings
NON_FINITE = ("NaN", "Infinity", "-Infinity")


def _took_comma(node: Node) -> bool:
    """Whether `node` is a quoteless string that ran past the comma written after it (then hjson
    sees no comma, but the author wrote one: not a form of its own)."""
    return node.kind == "string" and node.raw.endswith(",") and node.raw[:1] not in "\"'"


def _escape_token(token: str) -> str:
    if "~" in token or "/" in token:
        return token.replace("~", "~0").replace("/", "~1")
    return token


class _Parser:
    __slots__ = ("text", "n", "newlines", "forms", "swallowed")

    def __init__(self, text: str):
        self.text = text
        self.n = len(text)
        self.newlines = [m.start() for m in re.finditer("\n", text)]
        self.forms: list[tuple[str, int]] = []  # (form, offset) in source order
        self.swallowed: int | None = None  # the first quoteless value that runs past a } or ]

    # --- positions ------------------------------------------------------------------------

    def position(self, offset: int) -> tuple[int, int]:
        line = bisect_right(self.newlines, offset - 1)
        start = self.newlines[line - 1] + 1 if line else 0
        return line + 1, offset - start + 1

    def node(self, kind: str, offset: int, pointer: str, value, raw: str) -> Node:
        line, column = self.position(offset)
        return Node(kind, line, column, pointer, value, raw)

    # --- lexical pieces -------------------------------------------------------------------

    def skip(self, pos: int) -> int:
        pos = _SKIP.match(self.text, pos).end()
        if self.text.startswith("/*", pos):
            raise _Fail("a /* comment is never closed", pos, fatal=True)
        return pos

    def string(self, pos: int) -> tuple[str, int]:
        """A quoted string at `pos` ("..." or '...'): its value and the offset after it."""
        text = self.text
        quote = text[pos]
        plain = (_PLAIN_DOUBLE if quote == '"' else _PLAIN_SINGLE).match(text, pos)
        if plain is not None:
            return plain.group(1), plain.end()
        chunk = _CHUNK_DOUBLE if quote == '"' else _CHUNK_SINGLE
        parts = []
        end = pos + 1
        while True:
            found = chunk.match(text, end)
            parts.append(found.group())
            end = found.end()
            if end >= self.n:
                raise _Fail("a string is never closed", pos)
            ch = text[end]
            if ch == quote:
                return "".join(parts), end + 1
            if ch != "\\":
                raise _Fail(f"invalid control character {ch!r} in a string (write it as an escape)", end)
            esc = text[end + 1:end + 2]
            if esc == "":
                raise _Fail("a string is never closed", pos)
            if esc != "u":
                if esc not in _ESCAPES:
                    raise _Fail(f"invalid escape \\{esc} in a string", end)
                if esc == "'":
                    self.forms.append(("escape", end))
                parts.append(_ESCAPES[esc])
                end += 2
                continue
            code, end = self.unicode_escape(end)
            if 0xD800 <= code <= 0xDBFF and text.startswith("\\u", end):  # hjson joins a surrogate pair
                second = text[end + 2:end + 6]
                if len(second) == 4 and second[1:2] not in ("x", "X"):
                    try:
                        low = int(second, 16)
                    except ValueError:
                        raise _Fail("invalid \\uXXXX escape in a string", end) from None
                    if low & 0xFC00 == 0xDC00:
                        if not _HEX.issuperset(second):
                            self.forms.append(("escape", end))
                        code = 0x10000 + (((code - 0xD800) << 10) | (low - 0xDC00))
                        end += 6
            parts.append(chr(code))

    def unicode_escape(self, backslash: int) -> tuple[int, int]:
        digits = self.text[backslash + 2:backslash + 6]
        if len(digits) != 4 or digits[1:2] in ("x", "X"):
            raise _Fail("invalid \\uXXXX escape in a string", backslash)
        try:
            code = int(digits, 16)  # as hjson: Python's int() also takes " 1a ", "+1a2", "1_a2"
        except ValueError:
            raise _Fail("invalid \\uXXXX escape in a string", backslash) from None
        if code < 0:
            raise _Fail("invalid \\uXXXX escape in a string", backslash, fatal=True)
        if not _HEX.issuperset(digits):
            self.forms.append(("escape", backslash))
        return code, backslash + 6

    def multiline(self, pos: int) -> tuple[str, int]:
        """hjson's mlscanstring: a ''' string at `pos`, its indentation removed."""
        text, n = self.text, self.n
        indent = 0
        while True:  # as hjson: counts back to the previous newline (wrapping past the start)
            index = pos - indent - 1
            if index < -n:
                raise _Fail("a ''' string is not on a line of its own", pos, fatal=True)
            if text[index] == "\n":
                break
            indent += 1
        end = self._skip_indent(pos + 3, -1)
        if end >= n:
            raise _Fail("a ''' string is never closed", pos, fatal=True)
        if text[end] == "\n":
            end = self._skip_indent(end + 1, indent)
        parts: list[str] = []
        triple = 0
        while True:
            ch = text[end:end + 1]
            if ch == "":
                raise _Fail("a ''' string is never closed", pos)
            if ch == "'":
                triple += 1
                end += 1
                if triple == 3:
                    value = "".join(parts)
                    return (value[:-1] if value.endswith("\n") else value), end
                continue
            if triple:
                parts.append("'" * triple)
                triple = 0
            if ch == "\n":
                parts.append(ch)
                end = self._skip_indent(end + 1, indent)
            else:
                if ch != "\r":
                    parts.append(ch)
                end += 1

    def _skip_indent(self, end: int, count: int) -> int:
        text = self.text
        while count != 0 and end < self.n and text[end] in " \t\r":
            end += 1
            count -= 1
        return end

    # --- values ---------------------------------------------------------------------------

    def value(self, pos: int, pointer: str, depth: int) -> tuple[Node, int]:
        """The value starting at `pos` (after whitespace and comments)."""
        text = self.text
        ch = text[pos:pos + 1]
        if ch in _SCALAR_FIRST:
            found = _SCALAR.match(text, pos)
            if found is not None:
                return self.scalar(found, 0, pos, pointer), found.end()
        if ch == '"' or ch == "'":
            if ch == "'":
                if text.startswith("'''", pos):
                    self.forms.append(("multiline-string", pos))
                    value, end = self.multiline(pos)
                    return self.node("string", pos, pointer, value, text[pos:end]), end
                self.forms.append(("single-quoted", pos))
            value, end = self.string(pos)
            return self.node("string", pos, pointer, value, text[pos:end]), end
        if ch == "{":
            return self.object(pos, pointer, depth + 1)
        if ch == "[":
            return self.array(pos, pointer, depth + 1)
        return self.quoteless(pos, pointer)

    def scalar(self, found: re.Match, group: int, pos: int, pointer: str) -> Node:
        """The Node of a `_SCALAR` match (its groups start after `group`) at offset `pos`."""
        line, column = self.position(pos)
        string = found.group(group + 1)
        if string is not None:
            return Node("string", line, column, pointer, string,
                        self.text[found.start(group + 1) - 1:found.end(group + 1) + 1])
        raw = found.group(group + 2)
        if raw is not None:
            is_float = found.group(group + 3) is not None or found.group(group + 4) is not None
            return Node("number", line, column, pointer, self.number(raw, is_float, pos), raw)
        word = found.group(group + 5)
        return Node("null" if word == "null" else "bool", line, column, pointer,
                    None if word == "null" else word == "true", word)

    def quoteless(self, pos: int, pointer: str) -> tuple[Node, int]:
        """hjson's scantfnns: true, false, null, a number, or a string to the end of the line."""
        text = self.text
        first = text[pos:pos + 1]
        if first == "":
            raise _Fail("unexpected end of file: a value is missing", pos)
        if first in _PUNCTUATORS:
            raise _Fail(f"unexpected {first!r}: a value is missing", pos)
        stop = _TERMINATOR.search(text, pos)
        end = stop.start() if stop is not None else self.n
        token = text[pos:end].strip()
        if first == "-" or "0" <= first <= "9":
            number = _NUMBER.match(text, pos)
            if number is not None and number.end() == end:
                integer, fraction, exponent = number.groups()
                raw = integer + (fraction or "") + (exponent or "")
                if not raw.isascii():
                    self.forms.append(("non-ascii-digits", pos))
                return self.node("number", pos, pointer, self.number(raw, bool(fraction or exponent), pos), raw), end
        elif first in "ntf":
            word = text[pos:end].strip()
            if word in ("null", "true", "false") and word[0] == first:
                value = None if word == "null" else word == "true"
                return self.node("null" if value is None else "bool", pos, pointer, value, word), end
        if stop is not None and text[end] not in "\r\n":
            eol = _EOL.search(text, end)
            end = eol.start() if eol is not None else self.n
        value = text[pos:end].strip()
        raw = text[pos:end].rstrip()
        if stop is not None and self.swallowed is None and any(c in value for c in "}]"):
            self.swallowed = pos  # the value took a closing bracket with it: said if one is missing
        # json.load reads a bare NaN/Infinity as a float (Python's extension): not a form it refuses
        self.forms.append(("non-finite" if token in NON_FINITE else "quoteless-value", pos))
        return self.node("string", pos, pointer, value, raw), end

    def number(self, raw: str, is_float: bool, pos: int) -> int | float:
        shown = raw if len(raw) <= 24 else f"{raw[:12]}...{raw[-6:]}"
        if is_float:
            value = float(raw)
            if math.isinf(value):  # hjson raises OverflowError on it, so DeepSpeed cannot load the file
                raise _Fail(f"number {shown} is out of range (it overflows to infinity)", pos, fatal=True)
            return value
        try:
            return int(raw)
        except ValueError:  # Python's limit on digits in int(); json.load and hjson fail the same way
            raise _Fail(f"number {shown} has {len(raw.lstrip('-'))} digits, too many to read", pos,
                        fatal=True) from None

    def key(self, pos: int) -> tuple[str, int]:
        """hjson's scanKeyName at `pos` (after whitespace): the key and the offset of its ':'."""
        text = self.text
        ch = text[pos:pos + 1]
        if ch == '"' or ch == "'":
            if ch == "'":
                self.forms.append(("single-quoted", pos))
            key, end = self.string(pos)
            end = self.skip(end)
            if text[end:end + 1] != ":":
                raise self._expected_colon(end)
            return key, end
        plain = _QUOTELESS_KEY.match(text, pos)
        if plain is not None:
            self.forms.append(("quoteless-key", pos))
            key = plain.group(1)
            if plain.group(2):
                key = key.rstrip()
            return key, plain.end() - 1
        raise self._bad_key(pos)

    def _missing(self, closer: str, end: int) -> _Fail:
        message = f"unexpected end of file: a {closer!r} is missing"
        if self.swallowed is not None:
            line, column = self.position(self.swallowed)
            message += (f" (the value without quotes at line {line}, column {column} runs to the end of its line, "
                        "closing brackets and commas included, as hjson reads it)")
        return _Fail(message, end)

    def _expected_colon(self, end: int) -> _Fail:
        ch = self.text[end:end + 1]
        if ch == "":
            return _Fail("unexpected end of file: expected ':' after a key", end)
        return _Fail(f"unexpected {ch!r}: expected ':' after a key", end)

    def _bad_key(self, begin: int) -> _Fail:
        """Why a quoteless key at `begin` is refused (hjson's messages, shortened)."""
        text = self.text
        end, space = begin, -1
        while True:
            ch = text[end:end + 1]
            if ch == "":
                if begin == end:
                    return _Fail("unexpected end of file: a key or '}' is missing", end)
                word = text[begin:end].split(None, 1)[0] if text[begin:end].strip() else text[begin:end]
                return _Fail(f"unexpected {word[:40]!r} here: an unquoted word with no ':' after it runs to the "
                             "end of the file", begin)
            if ch == ":":
                if begin == end:
                    return _Fail("unexpected ':': a key is missing", begin)
                return _Fail("whitespace inside a key without quotes (quote the key)", space)
            if ch in " \t\n\r":
                if space < 0 or space == end - 1:
                    space = end
            elif ch in "{}[],":
                if begin == end:
                    return _Fail(f"unexpected {ch!r} where a key was expected", begin)
                return _Fail(f"unexpected {text[begin:end + 1][:40]!r} where a key was expected: a key without "
                             f"quotes cannot contain {ch!r} (an unquoted placeholder such as {{NAME}}?)", begin)
            end += 1

    def object(self, pos: int, pointer: str, depth: int, braces: bool = True) -> tuple[Node, int]:
        if depth > MAX_DEPTH:
            raise _Fail(f"the document is nested more than {MAX_DEPTH} levels deep", pos, fatal=True)
        text = self.text
        node = self.node("object", pos, pointer, None, "")
        members = node.members
        end = self.skip(pos + 1 if braces else pos)
        if braces and text[end:end + 1] == "}":
            return node, end + 1
        fast = _MEMBER.match
        newlines = self.newlines
        prefix = pointer + "/"
        while True:
            key_at = end
            found = fast(text, end)
            if found is not None:  # "key": scalar, in one match (the common case, inlined)
                key, _, string, raw, fraction, exponent, word, comma = found.groups()
                child_pointer = prefix + (key if "~" not in key and "/" not in key else _escape_token(key))
                at = found.start(2)
                if newlines:
                    index = bisect_right(newlines, key_at - 1)
                    line, column = index + 1, key_at - (newlines[index - 1] if index else -1)
                    index = bisect_right(newlines, at - 1)
                    value_line, value_column = index + 1, at - (newlines[index - 1] if index else -1)
                else:
                    line, column, value_line, value_column = 1, key_at + 1, 1, at + 1
                if string is not None:
                    child = Node("string", value_line, value_column, child_pointer, string,
                                 text[at:found.end(3) + 1])
                elif raw is not None:
                    if fraction is None and exponent is None and len(raw) < 19:
                        number: int | float = int(raw)
                    else:
                        number = self.number(raw, fraction is not None or exponent is not None, at)
                    child = Node("number", value_line, value_column, child_pointer, number, raw)
                else:
                    child = Node("null" if word == "null" else "bool", value_line, value_column, child_pointer,
                                 None if word == "null" else word == "true", word)
                members.append(Member(key, line, column, child))
                end = found.end()
                ch = text[end:end + 1]
                if ch == "#" or ch == "/":  # a comment after the value (or after its comma)
                    end = self.skip(end)
                    ch = text[end:end + 1]
                    if not comma and ch == ",":
                        comma = ch
                        end = self.skip(end + 1)
                        ch = text[end:end + 1]
            else:
                key, end = self.key(end)
                end = self.skip(end + 1)
                child, end = self.value(end, prefix + _escape_token(key), depth)
                line, column = self.position(key_at)
                members.append(Member(key, line, column, child))
                end = self.skip(end)
                ch = text[end:end + 1]
                comma = ch == ","
                if comma:
                    end = self.skip(end + 1)
                    ch = text[end:end + 1]
            if braces:
                if ch == "}":
                    return node, end + 1
            elif ch == "":
                return node, end
            if not comma:
                if ch == "":
                    raise self._missing("}", end)
                if not _took_comma(child):
                    self.forms.append(("missing-comma", end))

    def array(self, pos: int, pointer: str, depth: int) -> tuple[Node, int]:
        if depth > MAX_DEPTH:
            raise _Fail(f"the document is nested more than {MAX_DEPTH} levels deep", pos, fatal=True)
        text = self.text
        node = self.node("array", pos, pointer, None, "")
        elements = node.elements
        end = self.skip(pos + 1)
        ch = text[end:end + 1]
        if ch == "]":
            return node, end + 1
        if ch == "":
            raise _Fail("unexpected end of file: a ']' is missing", end)
        index = 0
        while True:
            child, end = self.value(end, f"{pointer}/{index}", depth)
            elements.append(child)
            index += 1
            end = self.skip(end)
            ch = text[end:end + 1]
            comma = ch == ","
            if comma:
                end = self.skip(end + 1)
                ch = text[end:end + 1]
            if ch == "]":
                return node, end + 1
            if not comma:
                if ch == "":
                    raise self._missing("]", end)
                if not _took_comma(child):
                    self.forms.append(("missing-comma", end))

    # --- the document ---------------------------------------------------------------------

    def document(self) -> Node:
        text = self.text
        start = 1 if text.startswith("\ufeff") else 0
        pos = self.skip(start)
        if pos >= self.n:
            if start:  # hjson: a byte-order mark and nothing else is not an empty file
                raise _Fail("unexpected end of file: the file has only a byte-order mark", pos)
            self.forms.append(("empty-file", 0))
            return Node("object", 1, 1, "")
        ch = text[pos]
        if ch == "{" or ch == "[":
            root, end = self.value(pos, "", 0)
        else:
            forms = len(self.forms)
            try:
                root, end = self.object(pos, "", 1, braces=False)
                self.forms.insert(forms, ("braceless-root", pos))
            except _Fail as error:  # hjson then tries a single value (a string, number, ...)
                if error.fatal:
                    raise
                del self.forms[forms:]
                try:
                    root, end = self.value(pos, "", 0)
                except _Fail:
                    raise error from None
        end = self.skip(end)
        if end != self.n:
            raise _Fail(f"unexpected {text[end:end + 20]!r} after the end of the document", end)
        return root


def parse_jsonc(text: str) -> Node:
    """Parse `text` as DeepSpeed's hjson loader does into a `Node` tree, or raise `ParseError`
    with the position of the problem. The root's `hjson_forms` lists (form, line, column) for
    every place json.load would refuse (comments and trailing commas aside)."""
    parser = _Parser(text)
    collecting = gc.isenabled()
    gc.disable()  # the tree has no cycles; the collector's passes over a growing heap cost more than the parse
    try:
        root = parser.document()
    except _Fail as error:
        line, column = parser.position(max(0, min(error.offset, len(text))))
        raise ParseError(error.message, line, column) from None
    finally:
        if collecting:
            gc.enable()
    root.hjson_forms = [(form, *parser.position(offset)) for form, offset in parser.forms]
    return root


parse_hjson = parse_jsonc

