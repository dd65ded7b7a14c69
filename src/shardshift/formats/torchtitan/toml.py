"""A positioned TOML reader: the `Node` tree of a TOML document (source.Node), every table, key and
value with its line and column, every scalar with its exact source text (`raw`), so that findings
point at the value and the writer can replace a value in place.

`tomllib` stays the authority on what the document means and whether it is valid: `parse` runs it
first and reports its error; this module only adds the positions. Table headers (`[a.b]`) become
object nodes positioned at the header; dotted keys (`a.b = 1`) and implicit parents are objects
positioned at their first key. Dates and times keep tomllib's value.
"""

from __future__ import annotations

import re
from typing import Any

import tomllib

from shardshift.document import TOOL_BOUND
from shardshift.source import Member, Node, join_pointer


class TomlProblem(Exception):
    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(message)
        self.message, self.line, self.column = message, line, column


_AT = re.compile(r"\(at line (\d+), column (\d+)\)")
_BARE = re.compile(r"[A-Za-z0-9_-]+")
_NUMBER = re.compile(r"[+-]?(?:inf|nan)|0x[0-9A-Fa-f_]+|0o[0-7_]+|0b[01_]+|[+-]?[0-9_]+(?:\.[0-9_]+)?(?:[eE][+-]?[0-9_]+)?")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(?:[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})?)?|\d{2}:\d{2}:\d{2}(?:\.\d+)?")


def parse(text: str) -> tuple[Node, dict]:
    """(positioned root, tomllib's data). Raises TomlProblem with tomllib's message and place."""
    from shardshift.toml_guard import refusal

    refused = refusal(text)
    if refused is not None:
        raise TomlProblem(f"{refused}, {TOOL_BOUND}", 1, 1)
    try:
        data = tomllib.loads(text)
    except RecursionError:  # past the guard's bounds, still too deep for tomllib's recursion
        raise TomlProblem(f"nested too deep, {TOOL_BOUND}", 1, 1) from None
    except tomllib.TOMLDecodeError as error:
        message = str(error)
        found = _AT.search(message)
        line, column = (int(found.group(1)), int(found.group(2))) if found else (1, 1)
        raise TomlProblem(_AT.sub("", message).strip(), line, column) from None
    return _Parser(text).document(), data


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.starts = [0] + [m.end() for m in re.finditer(r"\n", text)]

    def where(self, index: int) -> tuple[int, int]:
        lo, hi = 0, len(self.starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.starts[mid] <= index:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1, index - self.starts[lo] + 1

    def node(self, kind: str, index: int, pointer: str, **values: Any) -> Node:
        line, column = self.where(index)
        return Node(kind, line, column, pointer, **values)

    # --- whitespace ------------------------------------------------------------------------------
    def blank(self, newlines: bool) -> None:
        text = self.text
        while self.i < len(text):
            c = text[self.i]
            if c in " \t" or (newlines and c in "\r\n"):
                self.i += 1
            elif c == "#":
                while self.i < len(text) and text[self.i] != "\n":
                    self.i += 1
            else:
                return

    # --- structure -------------------------------------------------------------------------------
    def document(self) -> Node:
        root = self.node("object", 0, "")
        table = root
        text = self.text
        while True:
            self.blank(True)
            if self.i >= len(text):
                return root
            start = self.i
            if text.startswith("[[", self.i):
                self.i += 2
                keys = self.keys()
                self.i += 2  # ]]
                parent = self.descend(root, keys[:-1], start)
                array = self.child(parent, keys[-1][0], keys[-1][1], "array", start)
                table = self.node("object", start, join_pointer(array.pointer, len(array.elements)))
                array.elements.append(table)
            elif text[self.i] == "[":
                self.i += 1
                keys = self.keys()
                self.i += 1  # ]
                table = self.descend(root, keys, start, header=True)
            else:
                self.pair(table)

    def descend(self, node: Node, keys: list[tuple[str, int]], start: int, header: bool = False) -> Node:
        for number, (key, at) in enumerate(keys):
            last = header and number == len(keys) - 1
            child = node.get(key)
            if child is not None and child.kind == "array":  # [[a]] then [a.b]: the last element
                node = child.elements[-1]
                continue
            if child is None:
                child = self.child(node, key, at, "object", start if last else at)
            elif last:  # an implicitly created table defined now: position it at its header
                child.line, child.column = self.where(start)
            node = child
        return node

    def child(self, parent: Node, key: str, key_at: int, kind: str, value_at: int | None = None) -> Node:
        found = parent.get(key)
        if found is not None:
            return found
        line, column = self.where(key_at)
        child = self.node(kind, key_at if value_at is None else value_at, join_pointer(parent.pointer, key))
        parent.members.append(Member(key, line, column, child))
        return child

    def keys(self) -> list[tuple[str, int]]:
        keys = []
        while True:
            self.blank(False)
            at = self.i
            keys.append((self.key(), at))
            self.blank(False)
            if self.i < len(self.text) and self.text[self.i] == ".":
                self.i += 1
                continue
            return keys

    def key(self) -> str:
        c = self.text[self.i]
        if c == '"':
            return self.basic_string()
        if c == "'":
            return self.literal_string()
        found = _BARE.match(self.text, self.i)
        assert found is not None
        self.i = found.end()
        return found.group()

    def pair(self, table: Node) -> None:
        keys = self.keys()
        self.i += 1  # =
        parent = self.descend(table, keys[:-1], keys[0][1])
        key, at = keys[-1]
        self.blank(False)
        value = self.value(join_pointer(parent.pointer, key))
        line, column = self.where(at)
        parent.members.append(Member(key, line, column, value))

    # --- values ----------------------------------------------------------------------------------
    def value(self, pointer: str) -> Node:
        text, start = self.text, self.i
        c = text[start]
        if c in "\"'":
            if text.startswith('"""', start):
                value = self.multiline('"""')
            elif text.startswith("'''", start):
                value = self.multiline("'''")
            else:
                value = self.basic_string() if c == '"' else self.literal_string()
            return self.node("string", start, pointer, value=value, raw=text[start:self.i])
        if c == "[":
            return self.array(pointer)
        if c == "{":
            return self.inline_table(pointer)
        for word, value in (("true", True), ("false", False)):
            if text.startswith(word, start):
                self.i += len(word)
                return self.node("bool", start, pointer, value=value, raw=word)
        found = _DATE.match(text, start)
        if found is not None:
            self.i = found.end()
            raw = found.group()
            value = tomllib.loads(f"v = {raw}")["v"]
            return self.node("string", start, pointer, value=value, raw=raw)
        found = _NUMBER.match(text, start)
        assert found is not None
        self.i = found.end()
        raw = found.group()
        return self.node("number", start, pointer, value=tomllib.loads(f"v = {raw}")["v"], raw=raw)

    def array(self, pointer: str) -> Node:
        node = self.node("array", self.i, pointer, raw="")
        start = self.i
        self.i += 1
        while True:
            self.blank(True)
            if self.text[self.i] == "]":
                self.i += 1
                break
            node.elements.append(self.value(join_pointer(pointer, len(node.elements))))
            self.blank(True)
            if self.text[self.i] == ",":
                self.i += 1
        node.raw = self.text[start:self.i]
        return node

    def inline_table(self, pointer: str) -> Node:
        node = self.node("object", self.i, pointer)
        start = self.i
        self.i += 1
        while True:
            self.blank(False)
            if self.text[self.i] == "}":
                self.i += 1
                break
            self.pair(node)
            self.blank(False)
            if self.text[self.i] == ",":
                self.i += 1
        node.raw = self.text[start:self.i]
        return node

    def literal_string(self) -> str:
        end = self.text.index("'", self.i + 1)
        value = self.text[self.i + 1:end]
        self.i = end + 1
        return value

    def basic_string(self) -> str:
        j = self.i + 1
        while self.text[j] != '"':
            j += 2 if self.text[j] == "\\" else 1
        raw = self.text[self.i:j + 1]
        self.i = j + 1
        return tomllib.loads(f"v = {raw}")["v"]

    def multiline(self, quote: str) -> str:
        j = self.i + 3
        while True:
            j = self.text.index(quote, j)
            if quote == '"""' and _escaped(self.text, j):
                j += 1
                continue
            while self.text.startswith(quote[0], j + 3):  # up to two quotes may end the content
                j += 1
            break
        raw = self.text[self.i:j + 3]
        self.i = j + 3
        return tomllib.loads(f"v = {raw}")["v"]


def _escaped(text: str, index: int) -> bool:
    count = 0
    while index > 0 and text[index - 1] == "\\":
        count += 1
        index -= 1
    return count % 2 == 1
