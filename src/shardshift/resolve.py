"""The resolved Plan: the defaults of the framework that runs a file, filled in and marked.

A Plan as read says what the file says: a field left None means "whatever this framework does by
default", and frameworks differ there (torchtitan and Axolotl train bf16, DeepSpeed and Megatron
fp32; FSDP shards fully, DeepSpeed's ZeRO is off; Megatron decays the LR linearly). A writer that
reads None as *its own* default silently changes the run. `resolve(plan, format, path)` fills
every field the source framework decides by default with the value that framework's release uses,
each with the provenance `default of <framework> <release>` (`is_default`), so that reports and
outputs can tell a value the file wrote from one its framework chose. After resolution None means
"does not apply"; an Unknown stays unknown.

Each format package may hold a `defaults` module (its *defaults table*):

    FRAMEWORK = "torchtitan"          # the framework whose release decides (context.FRAMEWORKS)
    def defaults(plan, version):      # version: a tuple, or None for the newest release known
        yield "precision.param_dtype", "bf16"
        ...

`defaults` yields (dotted field, value) pairs in order; each is set (when the field is still None)
before the next is asked for, so a later default may read an earlier one (the accumulation from
the batch triple, after the world). A format without a defaults module resolves to itself.
"""

from __future__ import annotations

import copy
import importlib
from typing import Any

from shardshift.plan import Plan, Unknown
from shardshift.source import Location

DEFAULT_MARK = "default of "


def table_release(framework: str, checked: tuple[tuple[int, ...], ...] = ()) -> tuple[int, ...] | None:
    """The release a defaults table answers for when no pin says: the newest whose source it was
    checked against (`checked`, its CHECKED_RELEASES), else the newest shardshift knows."""
    if checked:
        return max(checked)
    from shardshift.context.releases import known_releases

    releases = known_releases(framework)
    return releases[-1] if releases else None


def default_location(path: str, framework: str, version: tuple[int, ...] | None,
                     checked: tuple[tuple[int, ...], ...] = ()) -> Location:
    """The provenance of a value the framework chose: line 0 (no place in the file). No release
    found: `table_release`'s."""
    version = version or table_release(framework, checked)
    release = ".".join(map(str, version)) if version else "(newest release)"
    return Location(path, 0, 0, f"{DEFAULT_MARK}{framework} {release}")


def is_default(where: Location | None) -> bool:
    """Whether a provenance marks a framework's default rather than a place in a file."""
    return where is not None and where.line == 0 and (where.pointer or "").startswith(DEFAULT_MARK)


def defaults_table(format_name: str):
    """The `defaults` module of a format package, or None (a format with no defaults of its own)."""
    from shardshift import formats

    package = formats.READERS.get(format_name)
    if package is None:
        return None
    try:
        return importlib.import_module(package + ".defaults")
    except ModuleNotFoundError as error:
        if error.name != package + ".defaults":
            raise
        return None


def resolve(plan: Plan, format_name: str, path: str, version: tuple[int, ...] | None = None,
            *, release_of=None, entry: str | None = None) -> Plan:
    """A copy of `plan` with `format_name`'s defaults filled in (see the module doc). `version`:
    the framework's release; by default the one pinned around `path` (`release_of(framework,
    path)`, else the dependency files' pin), else the newest known. `entry`: for a format that is
    no framework of its own (a launch script), what it runs (`formats.launch.defaults.entry(
    document)`): its module's `table_for(entry)` gives the table, None when no defaults are known."""
    resolved = copy.deepcopy(plan)
    table = defaults_table(format_name)
    if table is not None and hasattr(table, "table_for"):
        table = table.table_for(entry)
    if table is None:
        return resolved
    framework = table.FRAMEWORK
    if version is None:
        version = _version(framework, path, release_of)
    checked = tuple(getattr(table, "CHECKED_RELEASES", ()))
    where = default_location(path, framework, version, checked)
    unchecked = unchecked_release(framework, version, checked)
    if getattr(table, "UNKNOWN_BECAUSE", None):  # a table for a program whose defaults no table holds
        where = Location(path, 0, 0, f"{DEFAULT_MARK}{table.PROGRAM}")
        unchecked = table.UNKNOWN_BECAUSE
    for dotted, value in table.defaults(resolved, version):
        if value is None or resolved.get(dotted) is not None:
            continue
        if unchecked is not None:
            value = Unknown(unchecked, where)  # a release the table was not read from: never its values
        resolved.set(dotted, value, where)
    return resolved


def unchecked_release(framework: str, version: tuple[int, ...] | None,
                      checked: tuple[tuple[int, ...], ...]) -> str | None:
    """Why the defaults of `version` are not known, when it lies outside the releases whose source
    the table was checked against (their range, first to last); None when it does not."""
    if version is None or not checked or min(checked) <= tuple(version) <= max(checked):
        return None
    shown = ".".join(map(str, version))
    span = ".".join(map(str, min(checked))) + ("" if len(checked) == 1 else "–" + ".".join(map(str, max(checked))))
    return (f"{framework} {shown}'s default: shardshift's table of {framework} defaults was read from the source of "
            f"{span} only (say the release with --{framework}-version if the pin is not the one that runs)")


def resolve_document(document, plan: Plan | None = None) -> Plan | None:
    """`document`'s Plan (or `plan`, its setup's merged Plan) resolved with the defaults of what the
    document runs (a launch script: its entry's framework, `defaults.entry(document)`)."""
    plan = document.plan if plan is None else plan
    if plan is None:
        return None
    table = defaults_table(document.format)
    entry = table.entry(document) if table is not None and hasattr(table, "entry") else None
    return resolve(plan, document.format, document.path, entry=entry)


def _version(framework: str, path: str, release_of) -> tuple[int, ...] | None:
    try:
        if release_of is not None:
            release = release_of(framework, path)
        else:
            from shardshift.context.releases import detect

            release = detect(framework, path)
    except (OSError, ValueError):
        return None
    return tuple(release.version) if release.version is not None else None


def defaulted(plan: Plan) -> dict[str, Any]:
    """The fields of a resolved Plan that hold a framework's default: dotted -> value."""
    return {dotted: plan.get(dotted) for dotted, where in plan.provenance.items() if is_default(where)}


# --- placeholders -------------------------------------------------------------------------------

# What a writer writes for a setting its target requires and the Plan cannot supply (the number of
# processes of an Accelerate config written from a ds_config; the model shape of a Megatron run):
# a value no framework accepts, so the run stops until someone fills it in, and the report says
# `unknown` with what to put there. Never a plausible number: a guess would run.
PLACEHOLDER = "FILL_IN"


def placeholder_reason(what: str) -> str:
    """The report's reason for a placeholder: what to fill in."""
    return f"placeholder {PLACEHOLDER}: fill in {what}"
