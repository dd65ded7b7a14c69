"""Megatron-LM's flag table (flags.json, dumped from Megatron's own parser by
scripts/dump_megatron_flags.py) and what argparse does with a flag and its values.

Megatron builds its parser with `allow_abbrev=False` and parses strictly: a flag must be spelled
exactly as one of its option strings (no prefixes, no underscore spellings), a switch takes no
value, and a flag given twice keeps the last value."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

TABLE = Path(__file__).with_name("flags.json")


class Flag:
    """One argparse action: its spellings, dest, kind and what it accepts."""

    __slots__ = ("spellings", "dest", "action", "type", "default", "const", "choices", "nargs", "deprecated",
                 "deprecation", "help", "group", "type_name")

    def __init__(self, entry: dict) -> None:
        self.spellings: list[str] = entry["spellings"]
        self.dest: str = entry["dest"]
        self.action: str = entry["action"]
        self.type: str = entry["type"]
        self.default = entry["default"]
        self.const = entry["const"]
        self.choices: list | None = entry["choices"]
        self.nargs = entry["nargs"]
        self.deprecated: bool = entry["deprecated"]
        self.deprecation: list[str] = entry["deprecation"]
        self.help: str = entry["help"] or ""
        self.group: str = entry["group"] or ""
        self.type_name: str | None = entry.get("type_name")  # a custom converter's qualified name (upstream's table)

    @property
    def name(self) -> str:
        """The long spelling shown in messages."""
        return next((s for s in self.spellings if s.startswith("--")), self.spellings[0])

    def takes_value(self, spelling: str) -> bool:
        if self.action in ("store_true", "store_false", "boolean_optional", "help", "count"):
            return False
        return self.nargs != 0

    def switch_value(self, spelling: str) -> bool:
        """The value a switch stores when given as `spelling`."""
        if self.action == "store_false":
            return False
        if self.action == "boolean_optional":
            return not spelling.startswith("--no-")
        return True

    def replacement(self) -> str | None:
        """The flag Megatron's own deprecation message names instead, when it names one."""
        import re

        for message in self.deprecation:
            found = re.findall(r"--[a-z0-9][a-z0-9-]*", message)
            others = [f for f in found if f not in self.spellings]
            if others:
                return others[0]
        return None

    def why_deprecated(self) -> str:
        for message in self.deprecation:
            kind, _, text = message.partition(": ")
            if kind in ("validate_args", "parse_args", "post_init") and text:
                return text
        return self.deprecation[0].partition(": ")[2] if self.deprecation else "deprecated"


_CLOSE: dict[tuple[frozenset[str], str], str | None] = {}  # (a parser's long spellings, flag) -> close_to


class FlagTable:
    def __init__(self, data: dict) -> None:
        self.commit: str = data.get("megatron_commit", "")
        self.version: str = data.get("megatron_core_version", "")
        self.flags = [Flag(entry) for entry in data["flags"]]
        self.by_spelling: dict[str, Flag] = {s: f for f in self.flags for s in f.spellings}
        self.by_dest: dict[str, list[Flag]] = {}
        self._long: frozenset[str] | None = None
        self._long_listed: tuple[str, ...] = ()
        for flag in self.flags:
            self.by_dest.setdefault(flag.dest, []).append(flag)

    def get(self, spelling: str) -> Flag | None:
        return self.by_spelling.get(spelling)

    def close_to(self, spelling: str) -> str | None:
        """The flag a misspelt one most likely meant: the same with `-` for `_` (Megatron accepts
        only dashes), else the closest long spelling."""
        if not spelling.startswith("--"):
            return None
        dashed = "--" + spelling[2:].replace("_", "-")
        if dashed in self.by_spelling:
            return dashed
        if self._long is None:
            self._long_listed = tuple(s for s in self.by_spelling if s.startswith("--"))
            self._long = frozenset(self._long_listed)
        key = (self._long, dashed)
        if key not in _CLOSE:
            # a tree's launch scripts repeat the same few unknown flags, and its entries share a
            # few parsers (the same flags in tables of their own): asked once per parser and flag
            from shardshift.rules.base import did_you_mean

            if len(_CLOSE) > 20_000:  # the editor's server runs for days: bounded
                _CLOSE.clear()
            _CLOSE[key] = did_you_mean(dashed, self._long_listed)  # its answer does not depend on the order
        return _CLOSE[key]

    @property
    def described(self) -> str:
        return f"Megatron-LM {self.version} ({self.commit[:8]})" if self.commit else "Megatron-LM"


@lru_cache(maxsize=1)
def table() -> FlagTable:
    return FlagTable(json.loads(TABLE.read_text(encoding="utf-8")))


_TRUE = {"1", "true", "yes", "y", "t", "on"}


# Megatron-LM's converters of layer patterns (megatron/training/arguments.py): a word is an int, or, with a `[`, a
# list expression of digits and , [ ] ( ) + * only (`_eval_pattern` raises ValueError on any other character)
_PATTERN_TYPES = {f"megatron.training.arguments.{name}" for name in ("moe_freq_type", "no_rope_freq_type",
                                                                       "la_freq_type")}
_NOT_IN_PATTERN = re.compile(r"[^,\d\[\]\(\)\+\*]")


def _pattern_problem(flag: Flag, text: str) -> str | None:
    """argparse's rejection of a layer-pattern word (the converter raised ValueError), None when it takes it."""
    if "[" in text:
        bad = _NOT_IN_PATTERN.search(text) is not None
    else:
        try:
            int(text)
            bad = False
        except ValueError:
            bad = True
    return f"invalid {flag.type_name.rsplit('.', 1)[-1]} value: {text!r}" if bad else None


def convert(flag: Flag, text: Any) -> tuple[Any, str | None]:
    """(value, None) as argparse would store `text` for `flag`, or (None, why argparse rejects it).
    Custom types (Megatron's own callables) and Unknowns stay as written."""
    if not isinstance(text, str):
        return text, None
    kind = flag.type
    value: Any = text
    if kind == "custom" and flag.type_name in _PATTERN_TYPES:
        problem = _pattern_problem(flag, text)
        return (None, problem) if problem else (text, None)
    try:
        if kind == "int":
            value = int(text)
        elif kind == "float":
            value = float(text)
        elif kind == "bool":
            value = text.lower() in _TRUE
    except ValueError:
        return None, f"invalid {kind} value: {text!r}"
    if flag.choices is not None and kind in ("int", "float", "str") and value not in flag.choices:
        shown = ", ".join(repr(c) for c in flag.choices)
        return None, f"invalid choice: {text!r} (choose from {shown})"
    return value, None
