"""`--format sarif`: SARIF 2.1.0, for GitHub code scanning and other SARIF viewers.

One run; the driver lists every rule with its documentation as help text and a help URI (its page
on the documentation site, `shardshift.docs_url`: the configured `docs-url`, else the default);
each finding is a result with its physical location (file, line, column), its JSON pointer as a
logical location, and related locations for findings that involve other places or files.
Columns count Unicode code points, as the parsers do.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from urllib.parse import quote

from shardshift.check import CheckResult
from shardshift.docs_url import fallback_url, rule_url
from shardshift.rules.base import Finding, Related

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVELS = {"error": "error", "warning": "warning", "info": "note"}
SRCROOT = "%SRCROOT%"


def _section(doc: str, title: str) -> str:
    """The text of one `## title` section of a rule's documentation."""
    lines, inside = [], False
    for line in doc.splitlines():
        if line.startswith("## "):
            inside = line[3:].strip() == title
            continue
        if inside:
            lines.append(line)
    return " ".join(" ".join(lines).split())


def _descriptor(rule, base: str) -> dict:
    doc = rule.documentation()
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary()},
        "fullDescription": {"text": _section(doc, "What it does") or rule.summary()},
        "help": {"text": doc, "markdown": doc},
        "helpUri": rule_url(rule.code, base=base),
        "defaultConfiguration": {"level": LEVELS[rule.severity]},
        "properties": {"tags": list(rule.formats) or ["all"]},
    }


def checkout_root() -> str:
    """The directory %SRCROOT% stands for: the checkout (GITHUB_WORKSPACE inside GitHub Actions,
    else the nearest directory up from here holding `.git`), else the current directory. Code
    scanning resolves repository-relative URIs, so a run from a subdirectory still links."""
    cwd = os.getcwd()
    workspace = os.environ.get("GITHUB_WORKSPACE")
    if workspace and _under(cwd, os.path.abspath(workspace)):
        return os.path.abspath(workspace)
    directory = cwd
    while True:
        if os.path.exists(os.path.join(directory, ".git")):
            return directory
        parent = os.path.dirname(directory)
        if parent == directory:
            return cwd
        directory = parent


def _under(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:  # another drive
        return False


def _artifact(path: str, root: str | None = None) -> dict:
    """A file under the checkout is a URI relative to %SRCROOT%; others are file URIs."""
    root = root or checkout_root()
    absolute = os.path.abspath(path)
    if _under(absolute, root):
        relative = os.path.relpath(absolute, root).replace(os.sep, "/")
        return {"uri": quote(relative), "uriBaseId": SRCROOT}
    return {"uri": Path(absolute).as_uri()}


def _location(file: str, line: int, column: int, pointer: str | None, root: str) -> dict:
    location: dict = {"physicalLocation": {"artifactLocation": _artifact(file, root),
                                           "region": {"startLine": line, "startColumn": column}}}
    if pointer:
        location["logicalLocations"] = [{"fullyQualifiedName": pointer, "kind": "member"}]
    return location


def _related(index: int, related: Related, root: str) -> dict:
    location = _location(related.file, related.line, related.column, related.pointer, root)
    return {"id": index, **location, "message": {"text": related.message}}


def _fingerprint(finding: Finding) -> str:
    """Stable across runs and line moves: the code, file, pointer and message."""
    text = "\0".join((finding.code, finding.file, finding.pointer or "", finding.message))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _result(finding: Finding, rule_index: dict[str, int], root: str) -> dict:
    message = finding.message
    if finding.unknown_context is not None:
        message += f" (unknown {finding.unknown_context.kind}: {finding.unknown_context.what}; {finding.unknown_context.how})"
    if finding.related:
        # SARIF viewers turn "[text](id)" into links to the related locations.
        message += " (see " + ", ".join(f"[{r.file}:{r.line}]({i})" for i, r in enumerate(finding.related, 1)) + ")"
    result: dict = {
        "ruleId": finding.code,
        "level": LEVELS[finding.severity],
        "message": {"text": message},
        "locations": [_location(finding.file, finding.line, finding.column, finding.pointer, root)],
        "partialFingerprints": {"shardshiftFinding/v1": _fingerprint(finding)},
    }
    if finding.code in rule_index:
        result["ruleIndex"] = rule_index[finding.code]
    if finding.related:
        result["relatedLocations"] = [_related(i, r, root) for i, r in enumerate(finding.related, 1)]
    properties = {k: v for k, v in (("pointer", finding.pointer), ("fix", finding.fix), ("fixKind", finding.fix_kind),
                                    ("unknownContext", finding.unknown_context and finding.unknown_context.to_json()),
                                    ("assumed", [a.to_json() for a in finding.assumed] or None),
                                    ("evidence", [p.to_json() for p in finding.evidence] or None))
                  if v is not None}
    if properties:
        result["properties"] = properties
    return result


def render(result: CheckResult) -> str:
    from shardshift import __version__
    from shardshift.rules import all_rules

    base = result.docs_url or fallback_url()  # the run's docs-url, else the package's, else the default
    rules = all_rules()
    rule_index = {rule.code: index for index, rule in enumerate(rules)}
    root = checkout_root()
    run = {
        "tool": {"driver": {"name": "shardshift", "version": __version__, "semanticVersion": __version__,
                            "informationUri": base, "rules": [_descriptor(r, base) for r in rules]}},
        "originalUriBaseIds": {SRCROOT: {"uri": Path(root).as_uri().rstrip("/") + "/"}},
        "artifacts": [{"location": _artifact(f.path, root)} for f in result.files],
        "results": [_result(f, rule_index, root) for f in result.findings],
        "columnKind": "unicodeCodePoints",
    }
    log = {"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"
