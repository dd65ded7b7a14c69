"""The Python API: what the command line does, for tools that want findings, a Plan or a
conversion without running a process and parsing its JSON. The command line is built on it.

    import shardshift

    result = shardshift.check(["configs/"], world_size=16)
    for finding in result.findings:          # Finding: code, severity, file, line, column, message, fix
        print(finding.file, finding.line, finding.code, finding.message)

    setup = shardshift.load("train.sh")      # the file with the files it names (its ds_config)
    setup.plan.get("parallelism.tensor")     # the merged Plan; an Unknown where it is decided at run time

    migration = shardshift.convert("ds_config.json", to="fsdp2")
    migration.text, migration.summary        # the target text; exact / approximate / dropped / unknown

Errors a caller can act on (a path that does not exist, a file that is no configuration, a bad
option) raise `ShardshiftError`; findings about the files are never exceptions.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from shardshift.options import (  # the API's own names, defined with the check they serve
    SEVERITIES,
    CheckOptions,
    Severity,
    ShardshiftError,
    display_path,
    environment,
    present,
    resolve_options,
)

# The public API, in the order the reference page documents it.
__all__ = ["resolve_options", "environment", "run", "present", "check", "display_path", "load", "targets", "convert",
           "ShardshiftError", "CheckOptions", "Migration", "Severity", "SEVERITIES"]

if TYPE_CHECKING:
    from shardshift.check import CheckResult
    from shardshift.document import Document, MappingEntry
    from shardshift.setup import Setup


def run(paths: Iterable[str], options: CheckOptions) -> CheckResult:
    """Check `paths` with resolved options; every finding, paths as the readers saw them."""
    from shardshift.check import run as run_paths

    return run_paths(paths, options)


def check(paths: str | Iterable[str], **options: Any) -> CheckResult:
    """Check files or directories, as `shardshift check` does: `result.findings` (every finding,
    unless `min_severity` is given), `result.files`, `result.unknowns` (settings known only when
    the job runs), `result.to_json()` (the `--format json` contract). Options are those of
    `resolve_options` (the command line's, with underscores)."""
    resolved = resolve_options(**options)
    return present(run([paths] if isinstance(paths, str) else paths, resolved), resolved.min_severity)


def _document(path: str, *, needs_plan: bool = True) -> Document:
    from shardshift.check import load as load_document

    if not os.path.isfile(path):
        raise ShardshiftError(f"no such file: {path}", usage=True)
    document = load_document(path, explicit=True)
    if document is None or document.format == "unrecognised":
        raise ShardshiftError(f"{path}: not a configuration file of a known format")
    if document.syntax is not None:
        s = document.syntax
        raise ShardshiftError(f"{path}:{s.line}:{s.column}: cannot parse: {s.message}")
    if document.plan is None and needs_plan:
        raise ShardshiftError(f"{path}: a {document.format} file describes no training setup")
    return document


def _linked(document: Document) -> Setup | None:
    """The setup `document` forms with the files it refers to (its ds_config), or None when it names none."""
    from shardshift.check import load as load_document
    from shardshift.setup import build_setups

    if not any(r.resolved for r in document.references):
        return None
    setups = build_setups([document], lambda path: load_document(path, explicit=False))
    return next((s for s in setups if s.documents[0] is document and len(s.documents) > 1), None)


def load(path: str) -> Setup:
    """Read one file and the files it refers to into their setup: `setup.documents` (the file
    first), `setup.plan` (the merged Plan, each value with where it came from), `setup.conflicts`."""
    from shardshift.setup import Setup

    document = _document(path, needs_plan=False)  # a script may describe its setup only through the files it names
    linked = _linked(document)
    if linked is not None:
        return linked
    if document.plan is None:
        raise ShardshiftError(f"{path}: a {document.format} file that names no configuration describes no "
                              "training setup")
    return Setup([document], document.plan)


@dataclass(slots=True)
class Migration:
    """A conversion: the target `text` and what happened to every source setting (`entries`)."""

    source: str
    source_format: str
    target_format: str
    text: str
    entries: list[MappingEntry] = field(default_factory=list)

    @property
    def summary(self) -> dict[str, int]:
        from shardshift.document import MAPPING_STATUSES

        return {s: sum(e.status == s for e in self.entries) for s in MAPPING_STATUSES}

    def to_json(self) -> dict:
        """The `convert --report` contract."""
        return {"source": self.source, "source_format": self.source_format, "target_format": self.target_format,
                "entries": [e.to_json() for e in self.entries], "summary": self.summary}


def targets() -> list[str]:
    from shardshift import formats

    return sorted(formats.WRITERS)


def convert(path: str, to: str, env: Mapping[str, str] | Iterable[str] | None = None) -> Migration:
    """Translate one file (with the files it names, unless `to` is its own format) into `to`
    (see `targets()`), with the migration report. `env`: the environment a launch script is read
    in (as `check`'s)."""
    from shardshift.context.environment import given

    with given(environment(env)):
        return _convert(path, to)


def _convert(path: str, to: str) -> Migration:
    from shardshift import formats

    if to not in formats.WRITERS:
        raise ShardshiftError(f"unknown target format {to!r}; choose from {', '.join(targets())}", usage=True)
    document = _document(path)
    # a round trip of the file when the target is the source's own format; else the setup's merged
    # Plan, resolved with the source framework's defaults and measured against the output read back
    same_format = to == document.format or (to, document.format) == ("megatron-args", "megatron")
    if same_format:
        conversion = formats.writer(to).convert(document)
        conversion.mark_unknowns(document.plan, document.path)
    else:
        from shardshift.migration import migrate

        linked = _linked(document)
        plan = linked.plan if linked is not None else document.plan
        conversion = migrate(document, plan, to, linked.documents[1:] if linked is not None else [])
    for entry in conversion.entries:  # the one form every output uses for a location
        if entry.file is not None:
            entry.file = display_path(entry.file)
    return Migration(path, document.format, to, conversion.text, conversion.entries)
