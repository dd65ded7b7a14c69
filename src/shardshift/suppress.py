"""Inline suppressions: a post-filter on findings, and the findings for suppressions that
suppressed nothing (SS003).

A comment `shardshift: ignore[CODE]` (or `ignore[CODE1,CODE2]`, or a bare `shardshift: ignore`
for every code) suppresses findings on its own line; a comment alone on its line also covers
the next line that holds more than a comment. The comment is written the way the file's
syntax allows:

    YAML, TOML, Python, shell:   batch_size: 8  # shardshift: ignore[AX101]
    JSON with comments:          "stage": 3,  // shardshift: ignore[DS102]

Strict JSON has no comments (and Hugging Face reads ds_config with `json.load`, which rejects
them): use per-file-ignores in the project configuration instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from shardshift.rules.base import Finding

DIRECTIVE = re.compile(r"(?<![\w-])shardshift:\s*ignore\b(?P<bracket>\[(?P<codes>[^\]]*)\])?(?P<rest>.*)", re.I | re.S)
BARE_TAIL = re.compile(r"\s*(?:$|#|//|\*/|[;,.)]|--?\s)", re.S)
MENTION = re.compile("shardshift", re.I)
JSON_SUFFIXES = (".json", ".jsonc", ".hjson", ".json5", ".conf")


@dataclass(slots=True)
class Suppression:
    """One suppression comment: where it is, the lines it covers and the codes it names
    (`codes` None: every code; `malformed`: a directive that could not be read)."""

    file: str
    line: int
    column: int
    lines: tuple[int, ...]
    codes: tuple[str, ...] | None
    text: str
    malformed: str | None = None
    used: set[str] = field(default_factory=set)

    def covers(self, finding: Finding) -> bool:
        if self.malformed or finding.line not in self.lines:
            return False
        return self.codes is None or finding.code in self.codes


# --- comments per syntax --------------------------------------------------------------------


def _json_comments(text: str) -> Iterator[tuple[int, int, str]]:
    """(offset of the marker, offset after the marker, comment text) outside JSON strings."""
    i, n, in_string = 0, len(text), False
    while i < n:
        c = text[i]
        if in_string:
            if c == "\\":
                i += 2
                continue
            if c == '"' or c == "\n":
                in_string = False
        elif c == '"':
            in_string = True
        elif c == "#" or text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            start = i + (1 if c == "#" else 2)
            yield i, start, text[start:end]
            i = end
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end
            yield i, i + 2, text[i + 2:end]
            i = end + 2
            continue
        i += 1


def _hash_comments(text: str) -> Iterator[tuple[int, int, str]]:
    """`#` comments of YAML, TOML and shell: a `#` at the start of a line or after white space,
    outside quotes (a quote opens a string only at the start of a value)."""
    offset = 0
    for line in text.split("\n"):
        quote, index, n = None, 0, len(line)
        while index < n:
            c = line[index]
            previous = line[index - 1] if index else " "
            if quote:
                if c == "\\" and quote == '"':
                    index += 1
                elif c == quote:
                    quote = None
            elif c in "\"'" and (previous.isspace() or previous in ":,[{=(-"):
                quote = c
            elif c == "#" and previous.isspace():
                yield offset + index, offset + index + 1, line[index + 1:].rstrip("\r")
                break
            index += 1
        offset += len(line) + 1


def _python_comments(text: str) -> Iterator[tuple[int, int, str]]:
    import io
    import tokenize

    starts = _line_starts(text)
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                row, col = token.start
                offset = starts[row - 1] + col
                yield offset, offset + 1, token.string[1:]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        yield from _hash_comments(text)


def _comments(path: str, text: str) -> Iterator[tuple[int, int, str]]:
    lowered = path.lower()
    if lowered.endswith(JSON_SUFFIXES):
        return _json_comments(text)
    if lowered.endswith((".py", ".pyi")):
        return _python_comments(text)
    return _hash_comments(text)


# --- reading directives ---------------------------------------------------------------------


def scan(path: str, text: str) -> list[Suppression]:
    """Every suppression comment of one file."""
    if not MENTION.search(text):
        return []
    line_starts = _line_starts(text)
    lines = text.split("\n")
    found: list[Suppression] = []
    for marker, start, comment in _comments(path, text):
        match = DIRECTIVE.search(comment)
        if match is None:
            continue
        line = _line_of(line_starts, marker)
        column = marker - line_starts[line - 1] + 1
        own_line = not text[line_starts[line - 1]:marker].strip()
        covered = [line]
        if own_line:
            following = _next_code_line(lines, line, path)
            if following is not None:
                covered.append(following)
        directive = match.group(0).split("*/")[0].strip()
        codes, malformed = _codes(match)
        found.append(Suppression(path, line, column, tuple(covered), codes, directive, malformed))
    return found


def _codes(match: re.Match) -> tuple[tuple[str, ...] | None, str | None]:
    if match.group("bracket") is None:
        if BARE_TAIL.match(match.group("rest")):
            return None, None
        return None, "write the codes in brackets: shardshift: ignore[CODE1,CODE2]"
    codes = tuple(c.strip().upper() for c in match.group("codes").split(",") if c.strip())
    if not codes:
        return None, "the brackets are empty: name the codes, or drop the brackets to ignore every code"
    return codes, None


def _line_starts(text: str) -> list[int]:
    """Offsets where each line starts (lines end at "\\n", as the parsers count them)."""
    return [0, *(m.end() for m in re.finditer("\n", text))]


def _line_of(line_starts: list[int], offset: int) -> int:
    import bisect

    return bisect.bisect_right(line_starts, offset)


def _next_code_line(lines: list[str], line: int, path: str) -> int | None:
    """The first line after `line` (1-based) holding more than blank space or a comment."""
    prefixes = ("#", "//") if path.lower().endswith(JSON_SUFFIXES) else ("#",)
    for index in range(line, len(lines)):
        stripped = lines[index].strip()
        if stripped and not stripped.startswith(prefixes):
            return index + 1
    return None


# --- filtering and the unused-suppression findings -------------------------------------------


class Index:
    """The suppressions of a run by (file, line): a file may hold thousands of suppressions and
    findings, so each finding meets only the comments of its own line."""

    def __init__(self, suppressions: dict[str, list[Suppression]]) -> None:
        self.by_line: dict[tuple[str, int], list[Suppression]] = {}
        for file, items in suppressions.items():
            for suppression in items:
                for line in suppression.lines:
                    self.by_line.setdefault((file, line), []).append(suppression)

    def suppresses(self, finding: Finding) -> bool:
        """Whether a suppression covers `finding`; marks each covering one with the code it used."""
        covering = [s for s in self.by_line.get((finding.file, finding.line), ()) if s.covers(finding)]
        for suppression in covering:
            suppression.used.add(finding.code)
        return bool(covering)


def apply(findings: Iterable[Finding], suppressions: dict[str, list[Suppression]]) -> list[Finding]:
    """The findings no suppression covers; marks each suppression with the codes it used."""
    index = Index(suppressions)
    return [finding for finding in findings if not index.suppresses(finding)]


def unused(suppressions: Iterable[Suppression], active: set[str], known: set[str], rule_name: str) -> list[Finding]:
    """SS003 findings for one file: suppressions (or codes of one) that suppressed nothing.
    `active` are the codes that ran on the file: a code switched off by --select, --ignore or
    per-file-ignores is not reported, since its findings could not occur."""
    found = []
    for s in suppressions:
        if s.malformed:
            message = f"malformed suppression {s.text!r}: it suppresses nothing; {s.malformed}"
        elif s.codes is None:
            if s.used:
                continue
            message = f"suppression {s.text!r} suppressed nothing on line {_lines_text(s)}; remove it"
        else:
            unknown = [c for c in s.codes if c not in known]
            idle = [c for c in s.codes if c in known and c in active and c not in s.used]
            if unknown:
                message = (f"suppression {s.text!r} names unknown rule code{'s' if len(unknown) > 1 else ''} "
                           f"{', '.join(unknown)} (see `shardshift rules`)")
            elif idle:
                message = (f"suppression {s.text!r}: no {', '.join(idle)} finding on line {_lines_text(s)}; "
                           f"remove {'them' if len(idle) > 1 else 'it'}")
            else:
                continue
        found.append(Finding("SS003", "warning", s.file, s.line, s.column, None, message, None, rule_name))
    return found


def _lines_text(s: Suppression) -> str:
    return " or ".join(str(n) for n in s.lines)
