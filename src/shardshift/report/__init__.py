"""Reporters: one module per output format. They format a CheckResult and decide nothing."""

import os
import re

REPORTERS = {
    "text": "shardshift.report.text",
    "json": "shardshift.report.json",
    "sarif": "shardshift.report.sarif",
    "github": "shardshift.report.github",
}
FORMATS = (*REPORTERS, "auto")


def resolve(name: str) -> str:
    """The reporter for `--format NAME`: `auto` is github inside GitHub Actions, else text."""
    if name == "auto":
        return "github" if os.environ.get("GITHUB_ACTIONS") == "true" else "text"
    return name


def hidden_line(result) -> str | None:
    """The line that says what --min-severity (or the quiet default) left out, or None."""
    counts = result.hidden_counts()
    parts = [f"{n} {name}{'s' if n != 1 else ''}" for name, n in
             (("error", counts["error"]), ("warning", counts["warning"]), ("info", counts["info"])) if n]
    if not parts:
        return None
    lowest = "info" if counts["info"] else "warning" if counts["warning"] else "error"
    return (f"{' and '.join(parts)} not shown; --min-severity {lowest} (or min-severity in "
            f"[tool.shardshift]) shows {'them' if len(result.hidden) != 1 else 'it'}")


# Characters that must never reach a terminal or a CI log as they are: C0 and C1 controls (a newline
# would start a line of its own, where `::error ...` is a GitHub workflow command; ESC drives the
# terminal), DEL, line and paragraph separators and the bidirectional overrides (text that reads
# differently from what it is).
UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match) -> str:
    char = match.group()
    return NAMED.get(char) or (f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")


def printable(text: str) -> str:
    """`text` with every control character written as an escape (`\\n`, `\\x1b`, `\\u202e`): the one
    rule for every field that a human-readable output (text, GitHub annotations, messages on
    stderr) prints, so that a file name, key or value cannot inject lines or terminal commands."""
    text = str(text)
    return UNPRINTABLE.sub(_escape, text) if UNPRINTABLE.search(text) else text


def line_start(text: str) -> str:
    """A line of a log that begins with `::` is a GitHub workflow command: such a line starts `./`
    instead (only a relative path can begin so, and `./` names the same file)."""
    return "./" + text if text.startswith("::") else text
