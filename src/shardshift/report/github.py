"""`--format github`: GitHub Actions workflow commands, one annotation per finding.

    ::error file=configs/ds.json,line=4,col=3,title=DS101 unknown-key::unknown key 'zero_optimisation' ...

GitHub shows these on the pull request's changed lines. Paths are made relative to
GITHUB_WORKSPACE when they lie under it, since annotations need repository-relative paths.
"""

from __future__ import annotations

import os

from shardshift.check import CheckResult
from shardshift.report import hidden_line, printable

LEVELS = {"error": "error", "warning": "warning", "info": "notice"}


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def _path(path: str) -> str:
    workspace = os.environ.get("GITHUB_WORKSPACE")
    if workspace:
        absolute = os.path.abspath(path)
        root = os.path.abspath(workspace)
        if os.path.commonpath([absolute, root]) == root:
            path = os.path.relpath(absolute, root)
    path = path.replace(os.sep, "/")
    return path[2:] if path.startswith("./") else path


def render(result: CheckResult) -> str:
    lines = []
    for f in result.findings:
        title = f"{f.code} {f.rule}".strip()
        # each part escaped on its own (printable), then joined by the newlines the annotation shows
        parts = [printable(f.message + (f" [{f.pointer}]" if f.pointer else ""))]
        if f.fix is not None:
            parts.append(printable(f"fix: {f.fix}"))
        for related in f.related:
            parts.append(printable(f"see {_path(related.file)}:{related.line}:{related.column}: {related.message}"))
        if f.unknown_context is not None:
            parts.append(printable(f"unknown {f.unknown_context.kind}: {f.unknown_context.what}; "
                                   f"{f.unknown_context.how}"))
        lines.append(f"::{LEVELS[f.severity]} file={_property(printable(_path(f.file)))},line={f.line},"
                     f"col={f.column},title={_property(printable(title))}::{_data(chr(10).join(parts))}")
    if result.fixed:
        lines.append(f"shardshift fixed {len(result.fixed)} finding(s)")
    hidden = hidden_line(result)
    if hidden:
        lines.append(f"shardshift: {hidden}")
    counts = result.counts()
    lines.append(f"shardshift: {len(result.files)} file(s) checked: {counts['error']} error(s), "
                 f"{counts['warning']} warning(s)"
                 + ("" if result.hidden_counts()["info"] else f", {counts['info']} info"))
    return "\n".join(lines) + "\n"
