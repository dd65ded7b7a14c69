"""YAML read the way PyYAML's `yaml.safe_load` reads it (YAML 1.1), with positions.

Accelerate (`yaml.safe_load` in `config_args.py`) and Axolotl both load their configs with PyYAML,
so a value means what PyYAML's YAML 1.1 resolver makes of it: `2e-5` is a string (a 1.1 float
needs a dot and a signed exponent), `no` / `on` / `yes` / `off` are booleans, `010` is octal,
`1:30` is sexagesimal. ruamel.yaml composes the node tree (with marks); the plain scalars are then
resolved here with PyYAML's own implicit-resolver patterns rather than ruamel's, whose YAML 1.1
mode reads `2e-5` as a float. Merge keys (`<<`) and aliases are expanded as PyYAML expands them;
duplicate keys are kept in the tree (the last one wins in the data, as in PyYAML).

ruamel.yaml is imported by `load`, never at module import.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import re
import warnings
from functools import lru_cache
from typing import Any

from shardshift.source import Member, Node, join_pointer

# PyYAML 6 resolver.py, Resolver.add_implicit_resolver patterns (YAML 1.1).
IMPLICIT: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("bool", re.compile(r"^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$")),
    ("float", re.compile(r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?
                    |\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
                    |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
                    |[-+]?\.(?:inf|Inf|INF)
                    |\.(?:nan|NaN|NAN))$""", re.X)),
    ("int", re.compile(r"""^(?:[-+]?0b[0-1_]+
                    |[-+]?0[0-7_]+
                    |[-+]?(?:0|[1-9][0-9_]*)
                    |[-+]?0x[0-9a-fA-F_]+
                    |[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$""", re.X)),
    ("null", re.compile(r"^(?:~|null|Null|NULL|)$")),
    ("timestamp", re.compile(r"""^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]
                    |[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?
                     (?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?
                     (?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$""", re.X)),
)
_TAG = "tag:yaml.org,2002:"
_EXPLICIT_TAG = re.compile(r"^(?:&\S+\s+)?!")
_BOOLS = {"yes": True, "true": True, "on": True, "no": False, "false": False, "off": False}
MAX_NODES = 200_000  # alias expansion ("billion laughs") stops here


class YamlProblem(Exception):
    """The text is not YAML that PyYAML's safe loader accepts; 1-based position."""

    def __init__(self, message: str, line: int = 1, column: int = 1) -> None:
        super().__init__(message)
        self.message, self.line, self.column = message, line, column


def load(text: str) -> Node | None:
    """The positioned tree of a single-document YAML text (None for an empty document).
    Raises YamlProblem for anything PyYAML's `safe_load` would reject."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError

    yaml = YAML(typ="safe", pure=True)
    yaml.version = (1, 1)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            composed = yaml.compose(text)
    except MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        message = " ".join(str(part) for part in (error.context, error.problem) if part) or "invalid YAML"
        raise YamlProblem(message, *_position(mark)) from None
    except RecursionError:
        raise YamlProblem("nesting too deep to read") from None
    except Exception as error:  # ruamel's reader and scanner raise a few unmarked errors
        raise YamlProblem(str(error).splitlines()[0] if str(error) else type(error).__name__,
                          *_position(getattr(error, "problem_mark", None))) from None
    if composed is None:
        return None
    builder = _Builder(text, yaml)
    try:
        return builder.build(composed, "")
    except RecursionError:
        raise YamlProblem("nesting too deep to read") from None


@lru_cache(maxsize=4)
def _lines(text: str) -> list[str]:
    return text.splitlines()  # once per file: a rule asks for the token of every number in it


def plain_token(text: str, line: int, column: int) -> str | None:
    """The scalar at a 1-based position as written, when it is plain (not quoted) and on one line."""
    lines = _lines(text)
    if not 1 <= line <= len(lines):
        return None
    token = lines[line - 1][column - 1:].split(" #", 1)[0].strip()
    return None if not token or token[0] in "'\"" else token


_OCTAL = re.compile(r"^[-+]?0[0-7_]+$")


def number_surprise(token: str, value: Any) -> str | None:
    """What a plain number is to PyYAML when YAML 1.2 (and a reader's eye) would read another one:
    "the octal number 8" for `010`, "the base-60 number 90" for `1:30`; None otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    digits = token.replace("_", "")
    if _OCTAL.match(token) and isinstance(value, int) and int(digits, 10) != value:
        return f"the octal number {value}"
    if ":" in token and digits.replace(":", "").lstrip("+-").replace(".", "", 1).isdigit():
        return f"the base-60 number {value}"
    return None


def surprising_number(text: str, line: int, column: int, value: Any) -> tuple[str, str] | None:
    """(the token as written, what PyYAML reads it as) for a plain number at a 1-based position that
    YAML 1.1 reads in another base than it looks (number_surprise); None otherwise."""
    token = plain_token(text, line, column)
    surprise = number_surprise(token, value) if token is not None else None
    return (token, surprise) if surprise is not None else None


def _position(mark: Any) -> tuple[int, int]:
    if mark is None:
        return 1, 1
    return mark.line + 1, mark.column + 1


class _Builder:
    def __init__(self, text: str, yaml: Any) -> None:
        self.text = text
        self.yaml = yaml
        self.count = 0
        self.active: set[int] = set()

    def build(self, node: Any, pointer: str) -> Node:
        from ruamel.yaml.nodes import MappingNode, SequenceNode

        self.count += 1
        if self.count > MAX_NODES:
            raise YamlProblem("too many values after expanding aliases", *_position(node.start_mark))
        line, column = _position(node.start_mark)
        if id(node) in self.active:
            raise YamlProblem("an alias refers to the collection that contains it", line, column)
        if isinstance(node, MappingNode):
            self.active.add(id(node))
            out = Node("object", line, column, pointer)
            for key, value in self._pairs(node):
                name = self._key(key)
                out.members.append(Member(name, *_position(key.start_mark),
                                          self.build(value, join_pointer(pointer, name))))
            self.active.discard(id(node))
            return out
        if isinstance(node, SequenceNode):
            self.active.add(id(node))
            out = Node("array", line, column, pointer)
            out.elements = [self.build(item, join_pointer(pointer, i)) for i, item in enumerate(node.value)]
            self.active.discard(id(node))
            return out
        value = self._scalar(node)
        raw = self.text[node.start_mark.index:node.end_mark.index]
        return Node(_kind(value), line, column, pointer, value=value, raw=raw)

    def _pairs(self, node: Any) -> list[tuple[Any, Any]]:
        """The key/value node pairs of a mapping with merge keys expanded as PyYAML's
        `flatten_mapping` does: merged pairs first (earlier sources win), own pairs last."""
        from ruamel.yaml.nodes import MappingNode, SequenceNode

        merged: list[tuple[Any, Any]] = []
        own: list[tuple[Any, Any]] = []
        for key, value in node.value:
            if key.tag == _TAG + "merge" or (key.tag in (None, "?", _TAG + "str") and key.style is None
                                              and key.value == "<<"):
                if isinstance(value, MappingNode):
                    merged.extend(self._pairs(value))
                elif isinstance(value, SequenceNode):
                    parts = []
                    for item in value.value:
                        if not isinstance(item, MappingNode):
                            raise YamlProblem("a merge key takes a mapping or a list of mappings",
                                              *_position(item.start_mark))
                        parts.append(self._pairs(item))
                    for part in reversed(parts):
                        merged.extend(part)
                else:
                    raise YamlProblem("a merge key takes a mapping or a list of mappings", *_position(value.start_mark))
            else:
                own.append((key, value))
        return merged + own

    def _key(self, key: Any) -> Any:
        from ruamel.yaml.nodes import ScalarNode

        if not isinstance(key, ScalarNode):
            raise YamlProblem("a mapping key must be a plain value (PyYAML cannot hash it)", *_position(key.start_mark))
        value = self._scalar(key)
        return value if isinstance(value, str) else str(value) if value is not None else "null"

    def _scalar(self, node: Any) -> Any:
        text = node.value
        tag = node.tag
        source = self.text[node.start_mark.index:node.end_mark.index]
        if node.style is None and not _EXPLICIT_TAG.match(source):
            # a plain scalar: resolve it with PyYAML's patterns, not ruamel's
            tag = _TAG + next((name for name, pattern in IMPLICIT if pattern.match(text)), "str")
        elif tag in (None, "?", "!"):
            tag = _TAG + "str"
        kind = tag[len(_TAG):] if tag.startswith(_TAG) else None
        try:
            if kind == "str":
                return text
            if kind == "null":
                return None
            if kind == "bool":
                return _BOOLS[text.lower()]
            if kind == "int":
                return _int(text)
            if kind == "float":
                return _float(text)
            if kind == "timestamp":
                return self._timestamp(node)
            if kind == "binary":
                return base64.b64decode("".join(text.split()), validate=True)
        except (ValueError, KeyError, binascii.Error):
            raise YamlProblem(f"cannot read {text!r} as {kind}", *_position(node.start_mark)) from None
        raise YamlProblem(f"the tag {tag} is not one PyYAML's safe loader accepts", *_position(node.start_mark))

    def _timestamp(self, node: Any) -> datetime.date:
        from ruamel.yaml.nodes import ScalarNode

        probe = ScalarNode(_TAG + "timestamp", node.value, node.start_mark, node.end_mark)
        return self.yaml.constructor.construct_yaml_timestamp(probe)


def _int(text: str) -> int:
    value = text.replace("_", "")
    sign = -1 if value.startswith("-") else 1
    value = value.lstrip("+-")
    if value == "0":
        return 0
    if value.startswith("0b"):
        return sign * int(value[2:], 2)
    if value.startswith("0x"):
        return sign * int(value[2:], 16)
    if value.startswith("0"):
        return sign * int(value, 8)
    if ":" in value:
        total = 0
        for part in value.split(":"):
            total = total * 60 + int(part)
        return sign * total
    return sign * int(value)


def _float(text: str) -> float:
    value = text.replace("_", "").lower()
    sign = -1.0 if value.startswith("-") else 1.0
    value = value.lstrip("+-")
    if value == ".inf":
        return sign * float("inf")
    if value == ".nan":
        return float("nan")
    if ":" in value:
        total = 0.0
        for part in value.split(":"):
            total = total * 60 + float(part)
        return sign * total
    return sign * float(value)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return "string"
