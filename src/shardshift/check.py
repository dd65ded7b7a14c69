"""Loading -> checking -> a result. Finds the configuration files under the given paths, reads
each with its format's reader, runs the selected rules and collects every finding."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from shardshift.document import Document, SyntaxProblem
from shardshift.rules.base import SEVERITY_RANK, Context, Finding

SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache",
             ".pytest_cache", "build", "dist", ".eggs", "site-packages"}
MAX_BYTES = 5_000_000


@dataclass(slots=True)
class CheckedFile:
    path: str
    format: str


@dataclass(slots=True)
class CheckResult:
    findings: list[Finding] = field(default_factory=list)
    files: list[CheckedFile] = field(default_factory=list)

    def worst(self) -> int:
        return max((SEVERITY_RANK[f.severity] for f in self.findings), default=-1)

    def counts(self) -> dict[str, int]:
        counts = {"error": 0, "warning": 0, "info": 0}
        for finding in self.findings:
            counts[finding.severity] += 1
        return counts

    def to_json(self) -> dict:
        counts = self.counts()
        return {
            "findings": [f.to_json() for f in self.findings],
            "files": [{"path": f.path, "format": f.format} for f in self.files],
            "summary": {"files": len(self.files), "findings": len(self.findings), "errors": counts["error"],
                        "warnings": counts["warning"], "infos": counts["info"]},
        }


def discover(paths: list[str]) -> list[tuple[str, bool]]:
    """Files to consider: (path, given explicitly). Directories are walked in sorted order."""
    found: list[tuple[str, bool]] = []
    for path in paths:
        if os.path.isdir(path):
            for directory, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
                for name in sorted(files):
                    found.append((os.path.join(directory, name), False))
        else:
            found.append((path, True))
    return found


def load(path: str, explicit: bool) -> Document | None:
    """Read one file into a Document, or None when it is not a training config."""
    from shardshift import formats

    try:
        if os.path.getsize(path) > MAX_BYTES:
            return None
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as error:
        if not explicit:
            return None
        return Document(path=path, format="unknown", text="", syntax=SyntaxProblem(f"cannot read: {error.strerror}", 1, 1))
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
    name = formats.detect(path, text)
    if name is None:
        return None
    document = formats.reader(name).read(text, path)
    if document.syntax is not None and not _worth_reporting(name, path, text, explicit):
        return None
    return document


def _worth_reporting(name: str, path: str, text: str, explicit: bool) -> bool:
    """An unparseable file is reported when its content says it is a config of this format;
    a file matched by name only (say, some other `ds_*.json`) is skipped when found by a walk."""
    from shardshift import formats

    module = formats.reader(name)
    markers = getattr(module, "MARKER_KEYS", ())
    return explicit or any(marker in text for marker in markers)


def run_check(paths: list[str], context: Context, select: set[str] | None = None,
              ignore: set[str] | None = None) -> CheckResult:
    """Check every config under `paths` with the rules chosen by `select` / `ignore` (code
    prefixes, as in ruff: "DS" selects every DS rule)."""
    from shardshift.rules import all_rules

    result = CheckResult()
    documents: list[Document] = []
    for path, explicit in discover(paths):
        document = load(path, explicit)
        if document is not None:
            documents.append(document)
            result.files.append(CheckedFile(path, document.format))
    context.documents = documents
    rules = [rule() for rule in all_rules() if _chosen(rule.code, select, ignore)]
    for document in documents:
        for rule in rules:
            if rule.formats and document.format not in rule.formats:
                continue
            if document.syntax is not None and rule.code != "SS001":
                continue
            result.findings.extend(rule.check(document, context))
    result.findings.sort(key=lambda f: (f.file, f.line, f.column, f.code))
    return result


def _chosen(code: str, select: set[str] | None, ignore: set[str] | None) -> bool:
    if select and not any(code.startswith(prefix) for prefix in select):
        return False
    return not (ignore and any(code.startswith(prefix) for prefix in ignore))
