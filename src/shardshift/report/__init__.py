"""Reporters: one module per output format. They format a CheckResult and decide nothing."""

import os

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
