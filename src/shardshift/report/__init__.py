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
