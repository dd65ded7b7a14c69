"""Where a value came from: parsed documents that keep the position and raw text of every node.

Readers of JSON-like formats produce a tree of `Node`s. Positions are recorded while parsing
(never searched for again after values are normalised), and each node knows its JSON pointer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator


@dataclass(frozen=True, slots=True)
class Location:
    """A place in a source file: 1-based line and column, plus the JSON pointer or flag."""

    file: str
    line: int
    column: int
    pointer: str | None = None


@dataclass(slots=True)
class Node:
    """One value of a parsed JSON-like document.

    `kind` is one of object, array, string, number, bool, null. Scalars keep `value` (the Python
    value) and `raw` (the exact source text, e.g. `5e8`). Objects keep `members` in source order,
    duplicates included; arrays keep `elements`.
    """

    kind: str
    line: int
    column: int
    pointer: str = ""
    value: Any = None
    raw: str = ""
    members: list[Member] = field(default_factory=list)
    elements: list[Node] = field(default_factory=list)

    def get(self, key: str) -> Node | None:
        """The last member named `key` (the one json.load keeps), or None."""
        found = None
        for member in self.members:
            if member.key == key:
                found = member.value
        return found

    def to_python(self) -> Any:
        """Plain Python data, as `json.load` would give it (last duplicate wins)."""
        if self.kind == "object":
            return {m.key: m.value.to_python() for m in self.members}
        if self.kind == "array":
            return [e.to_python() for e in self.elements]
        return self.value

    def walk(self) -> Iterator[Node]:
        """This node and every node below it, depth first, in source order."""
        yield self
        for member in self.members:
            yield from member.value.walk()
        for element in self.elements:
            yield from element.walk()


@dataclass(slots=True)
class Member:
    """A key of an object with the position of the key itself."""

    key: str
    line: int
    column: int
    value: Node


def escape_pointer_token(token: str) -> str:
    """Escape one reference token of a JSON pointer (RFC 6901)."""
    return token.replace("~", "~0").replace("/", "~1")


def join_pointer(base: str, token: str | int) -> str:
    """`base` extended by one key or index."""
    return f"{base}/{escape_pointer_token(str(token))}"


def split_pointer(pointer: str) -> list[str]:
    """The unescaped tokens of a JSON pointer."""
    if not pointer:
        return []
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]]


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


MISSING: Any = _Missing()  # "no value here", distinct from a JSON null


def value_at(data: Any, pointer: str, default: Any = MISSING) -> Any:
    """The value at `pointer` in plain JSON-like data (dicts and lists), or `default`."""
    for token in split_pointer(pointer):
        if isinstance(data, dict) and token in data:
            data = data[token]
        elif isinstance(data, list) and token.isdigit() and int(token) < len(data):
            data = data[int(token)]
        else:
            return default
    return data


def find_node(root: Node, pointer: str) -> Node | None:
    """The node at `pointer` (last duplicate wins), or None."""
    node: Node | None = root
    for token in split_pointer(pointer):
        if node is None:
            return None
        if node.kind == "object":
            node = node.get(token)
        elif node.kind == "array" and token.isdigit() and int(token) < len(node.elements):
            node = node.elements[int(token)]
        else:
            return None
    return node


def find_member(root: Node, pointer: str) -> Member | None:
    """The object member whose value is at `pointer` (for the key's own position)."""
    tokens = split_pointer(pointer)
    if not tokens:
        return None
    parent = find_node(root, "/" + "/".join(escape_pointer_token(t) for t in tokens[:-1])) if len(tokens) > 1 else root
    if parent is None or parent.kind != "object":
        return None
    found = None
    for member in parent.members:
        if member.key == tokens[-1]:
            found = member
    return found
