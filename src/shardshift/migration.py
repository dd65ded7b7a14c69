"""Conversion reports by measurement, one mechanism for every pair of formats.

`migrate(document, plan, to)` resolves the source Plan with its framework's defaults
(shardshift.resolve), has the target's writer write it, reads the output back with the target's
own reader, resolves that with the *target's* defaults, and compares the two field by field:

- exact: the output, read back, holds the same value;
- approximate: it holds another value (both are named);
- dropped: it holds none, so the target framework's default or launcher decides;
- unknown: the source value is not known before the job runs (or the output cannot be read back).

Fields are grouped per source setting through the Plan's provenance (a ds_config key, a Megatron
flag, a `fully_shard` call of FSDP2 code, a launch script's flag), so that every setting of every
file of the setup gets one entry; a field the source left to its framework's default gets an entry
only when the output does not keep that default's value (a silent change otherwise). What a
writer says about a setting (why tensor parallelism has no ds_config key; which line of the FSDP2
module holds the LR) stays attached as the explanation; the status is always the measurement.
Nothing here branches on the source or the target format.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from shardshift.document import Conversion, MappingEntry
from shardshift.plan import Unknown
from shardshift.resolve import is_default, resolve, resolve_document

if TYPE_CHECKING:
    from shardshift.document import Document
    from shardshift.plan import Plan
    from shardshift.source import Location

# a conversion's output is read back under a path in no directory, so that no reader looks around it on disk
OUTPUT_DIRECTORY = "<output>"
RANK = {"exact": 0, "approximate": 1, "unknown": 2, "dropped": 3}


@dataclass(slots=True)
class Measured:
    """What the output does with one field of the resolved source Plan."""

    field: str
    status: str
    before: Any
    after: Any
    target: str | None  # where the output holds it (its key or flag), None when it holds none
    note: str = ""  # why the source's value is not the setup's (an override)

    def clause(self) -> str:
        text = self._clause()
        return f"{self.note}: {text}" if self.note else text

    def _clause(self) -> str:
        name = self.field.replace("global_", "global")
        if self.status == "exact":
            return f"{name} = {_show(self.before)} kept"
        if self.status == "approximate":
            return f"{name} = {_show(self.before)} in the source, {_show(self.after)} in the output (read back)"
        if self.status == "unknown":
            reason = self.before.reason if isinstance(self.before, Unknown) else "the output could not be read back"
            return f"{name} is not known before the job runs ({reason}); the output states the target's default"
        return f"{name} = {_show(self.before)} is not in the output: the target framework's default (or launcher) decides"


def _show(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return repr(value) if isinstance(value, str) else str(value)


def read_back(text: str, to: str) -> Plan | None:
    """The output of a conversion to `to`, read by the target's own reader and resolved with the
    target's defaults; None when the target has no reader or the output does not read as a setup."""
    from shardshift import formats

    if to not in formats.OUTPUTS:
        return None
    reader_name, file_name = formats.OUTPUTS[to]
    path = f"{OUTPUT_DIRECTORY}/{file_name}"
    try:
        document = formats.reader(reader_name).read(text, path)
        plan = document.plan
    except Exception:  # noqa: BLE001 - a reader bug must not break a conversion: the report says unknown
        return None
    if plan is None or document.syntax is not None:
        return None
    return resolve(plan, reader_name, path, _newest(reader_name))


def _newest(reader_name: str):
    """The target's release (an output has no dependency files): the one its defaults table answers for."""
    from shardshift.resolve import defaults_table, table_release

    table = defaults_table(reader_name)
    return table_release(table.FRAMEWORK, tuple(getattr(table, "CHECKED_RELEASES", ()))) if table else None


def same(before: Any, after: Any) -> bool:
    """Whether the output holds the source's value: numbers to 1e-9, a switch only as a switch, a
    free-form params dict when the output holds each of the source's params."""
    if isinstance(before, bool) or isinstance(after, bool):
        return type(before) is type(after) and before == after
    if isinstance(before, float) and isinstance(after, (int, float)) and not isinstance(after, bool):
        return math.isclose(before, after, rel_tol=1e-9, abs_tol=0.0)
    if isinstance(before, int) and not isinstance(before, bool) and isinstance(after, float):
        return math.isclose(before, after, rel_tol=1e-9, abs_tol=0.0)
    if isinstance(before, (list, tuple)) and isinstance(after, (list, tuple)):
        return len(before) == len(after) and all(same(a, b) for a, b in zip(before, after))
    if isinstance(before, dict) and isinstance(after, dict):  # free-form params: the source's are kept
        return all(k in after and same(before[k], after[k]) for k in before)
    return before == after


def measure(source: Plan, back: Plan | None) -> dict[str, Measured]:
    """Every set field of the resolved source Plan, measured against the resolved output Plan."""
    out: dict[str, Measured] = {}
    for dotted, before in source.leaves():
        if isinstance(before, Unknown):
            out[dotted] = Measured(dotted, "unknown", before, None, None)
            continue
        if back is None:
            out[dotted] = Measured(dotted, "unknown", before, None, None)
            continue
        after = back.get(dotted)
        target = _held_at(back, dotted) if after is not None else None
        if isinstance(after, Unknown):
            out[dotted] = Measured(dotted, "dropped", before, None, target)
        elif after is None:
            out[dotted] = Measured(dotted, "dropped", before, None, None)
        elif same(before, after):
            out[dotted] = Measured(dotted, "exact", before, after, target)
        else:
            out[dotted] = Measured(dotted, "approximate", before, after, target)
    return out


def _held_at(back: Plan, dotted: str) -> str | None:
    """Where the output holds `dotted` (its key, or the line of a module), None where the target
    framework's default gives it."""
    where = back.origin(dotted)
    return None if where is None or is_default(where) else (where.pointer or f"line {where.line}")


def source_settings(document: Document) -> list[tuple[str, int, int]]:
    """Every setting a file writes, as (pointer or flag, line, column)."""
    given = getattr(document.data, "given", None)
    if given is not None:  # an argument list: every flag as spelled
        return [(g.spelling, g.line, g.column) for g in given]
    if isinstance(document.data, dict):
        return document.settings()
    launch = getattr(document.data, "launch", None)
    if launch is not None:  # a launch script: the flags given to the entry
        return [(arg.flag, arg.line, arg.column) for arg in launch.args if arg.flag]
    return []


def own_pointer(dotted: str) -> str:
    """The pointer a field has in a Plan YAML or an FSDP2 file's settings ("/batch/global")."""
    return "/" + "/".join("global" if part == "global_" else part for part in dotted.split("."))


def _matches(dotted: str, where: Location, file: str, pointer: str, line: int, column: int,
             pointers: set[str], places: frozenset = frozenset()) -> bool:
    if where.file != file:
        return False
    if where.pointer:
        # a flag given twice: the one at the place the Plan records (the one that wins)
        return where.pointer == pointer and (where.line == line or (pointer, where.line) not in places)
    # a place with no key (a call in Python code): the setting of the field's own name there, else any
    if (where.line, where.column) != (line, column):
        return False
    return pointer == own_pointer(dotted) or own_pointer(dotted) not in pointers


def migrate(document: Document, plan: Plan, to: str, others: list[Document] = ()) -> Conversion:
    """Convert `document` (whose setup's merged Plan is `plan`; `others`: the setup's other files)
    to `to`, with a measured report of every setting of every file."""
    from shardshift import formats

    resolved = resolve_document(document, plan)
    writer = formats.writer(to)
    original = document.plan
    document.plan = resolved
    try:
        written = writer.convert(document)
    finally:
        document.plan = original
    explanations = list(written.entries)
    for other in others:
        if other.plan is None:
            continue
        try:
            extra = writer.convert(other).entries
        except ValueError:
            continue
        for entry in extra:
            if entry.source:  # a note about the whole target belongs to the referrer's report
                entry.file = other.path
                explanations.append(entry)
    back = read_back(written.text, to)
    measured = measure(resolved, back)
    entries = _entries(document, [document, *others], resolved, measured, explanations, to, back)
    return Conversion(written.text, entries)


def _entries(document: Document, files: list[Document], resolved: Plan, measured: dict[str, Measured],
             explanations: list[MappingEntry], to: str, back: Plan | None) -> list[MappingEntry]:
    main = document.path
    # the explanations of each setting: (file or None, source) -> entries
    explained: dict[tuple[str | None, str], list[MappingEntry]] = {}
    for entry in explanations:
        explained.setdefault((None if entry.file in (None, main) else entry.file, entry.source), []).append(entry)
    placed: dict[str, Location] = {}
    defaults: list[str] = []
    for dotted in measured:
        where = resolved.origin(dotted)
        if where is None:
            continue
        if is_default(where):
            defaults.append(dotted)
        else:
            placed[dotted] = where
    entries: list[MappingEntry] = []
    claimed: set[str] = set()
    used: set[int] = set()
    for file_document in files:
        settings = source_settings(file_document)
        pointers = {pointer for pointer, _, _ in settings}
        places = frozenset((pointer, line) for pointer, line, _ in settings)
        whole = {where.pointer for dotted, where in placed.items() if isinstance(resolved.get(dotted), Unknown)
                 and where.file == file_document.path and where.pointer and where.pointer.startswith("/")}
        for pointer, line, column in settings:
            if any(pointer.startswith(p + "/") for p in whole):
                # a part of a value a field takes whole (`{unknown: why}` in a Plan YAML): that field's entry
                part_of = None if file_document.path == main else file_document.path
                used.update(id(e) for e in explained.get((part_of, pointer), []))
                continue
            fields = [d for d, where in placed.items() if d not in claimed
                      and _matches(d, where, file_document.path, pointer, line, column, pointers, places)]
            claimed.update(fields)
            file = None if file_document.path == main else file_document.path
            hand = explained.get((file, pointer), [])
            used.update(id(e) for e in hand)
            again = [where.line for where in placed.values() if where.file == file_document.path
                     and where.pointer == pointer and where.line != line] if not fields else []
            if again:  # given twice: the framework takes the other one, this value goes nowhere
                entries.append(MappingEntry(pointer, line, column, "dropped", None,
                                            f"{pointer} is given again at line {again[0]}, whose value the setup "
                                            "takes: this one is not used", file))
                continue
            found = [measured[d] for d in fields] or _overridden(file_document, pointer, line, column, pointers,
                                                                  resolved, back) or \
                _part_of(file_document.path, pointer, line, column, resolved, measured)
            entries.append(_entry(pointer, line, column, file, found, hand, back, file_document, to))
    # fields set at a place no listed setting covers (a launch script's flag, a call in FSDP2 code)
    by_place: dict[tuple, list[str]] = {}
    for dotted, where in placed.items():
        if dotted not in claimed:
            by_place.setdefault((where.file, where.pointer, where.line, where.column), []).append(dotted)
    for (file, pointer, line, column), fields in by_place.items():
        shown_file = None if file == main else file
        source = pointer or f"line {line}"
        hand = explained.get((shown_file, source), [])
        used.update(id(e) for e in hand)
        entries.append(_entry(source, line, column, shown_file, [measured[d] for d in fields], hand, back,
                              None, to))
    # a default of the source framework: an entry when the output does not keep it (a silent change
    # otherwise) or when the writer explains it (the writer names such an entry by the field)
    for dotted in defaults:
        m = measured[dotted]
        hand = explained.get((None, dotted), [])
        used.update(id(e) for e in hand)
        why = "; ".join(dict.fromkeys(e.reason for e in hand if e.reason))
        target = next((e.target for e in hand if e.target), None) or m.target
        if m.status == "exact":
            if hand:
                entries.append(MappingEntry(dotted, 1, 1, "exact", target, why))
            continue
        if not hand and not _worth_saying(dotted, m):
            continue
        label = resolved.origin(dotted).pointer  # "default of torchtitan 0.2.2"
        reason = f"measured: {m.clause()} ({why})" if why else f"not in the source: the {label}; {m.clause()}"
        entries.append(MappingEntry(dotted, 1, 1, m.status, None if m.status == "dropped" else target, reason))
    # a run-deciding field the source does not state, which the output does (plain data parallel
    # becoming fully sharded, a precision the writer fills in): a change the user must see
    for dotted, after, target in _stated_by_output(resolved, back):
        hand = explained.get((None, dotted), [])
        used.update(id(e) for e in hand)
        why = "; ".join(dict.fromkeys(e.reason for e in hand if e.reason))
        held = f"the output states {_show(after)}" if target else \
            f"in the output the target framework's default, {_show(after)}, applies"
        reason = (f"not in the source, which leaves {dotted.replace('global_', 'global')} to its framework or launcher "
                  f"(a value shardshift does not know); {held}: check that this is the run you want") + \
            (f" ({why})" if why else "")
        entries.append(MappingEntry(dotted, 1, 1, "unknown", target, reason))
    # what the writer says about the target as a whole (placeholders, notes), and about settings it lists itself
    for entry in explanations:
        if id(entry) not in used:
            entries.append(entry)
    return entries


# the fields whose default, when an output does not keep it, changes what a run trains
DECIDING = ("world.", "parallelism.", "batch.", "precision.param_dtype", "sharding.stage", "optimizer.lr",
            "optimizer.name", "scheduler.name", "scheduler.warmup_steps", "scheduler.total_steps", "scheduler.min_lr",
            "gradient_clipping")


# fields whose value, stated by an output where the source states none, changes what a run is
STATED = ("world.world_size", "parallelism.tensor", "parallelism.pipeline", "parallelism.context",
          "parallelism.expert", "parallelism.data_parallel_shard", "parallelism.data_parallel_replicate",
          "precision.param_dtype", "sharding.stage")
# an axis the source does not set is not used: a degree of 1 in the output is the same run
UNUSED_AXIS = ("parallelism.tensor", "parallelism.pipeline", "parallelism.context", "parallelism.expert",
               "parallelism.data_parallel_replicate")


def _stated_by_output(resolved: Plan, back: Plan | None) -> list[tuple[str, Any, str | None]]:
    """(field, value, where the output holds it) for each STATED field unset in the resolved source
    that the output, read back, sets to a known value (an unused axis at 1 excepted)."""
    if back is None:
        return []
    found = []
    for dotted in STATED:
        after = back.get(dotted)
        if resolved.get(dotted) is not None or after is None or isinstance(after, Unknown) or \
                (dotted in UNUSED_AXIS and after == 1):
            continue
        found.append((dotted, after, _held_at(back, dotted)))
    return found


def _worth_saying(dotted: str, m: Measured) -> bool:
    """Whether a source default the output does not hold needs an entry: a value the output changes
    always; one it leaves out only when it decides the run, and not a switch that is merely off."""
    if m.status != "dropped":
        return True
    if m.before is False or m.before == 0 and dotted.startswith("parallelism."):
        return False  # a feature off, in a target without it: the same run
    return dotted.startswith(DECIDING)


def _overridden(file_document: Document, pointer: str, line: int, column: int, pointers: set[str],
                resolved: Plan, back: Plan | None) -> list[Measured]:
    """A setting that sets a field in its own file, which the setup takes from elsewhere (a command-line
    override, a precedence between files): measured against the output like any other, with the
    place the setup's value comes from named."""
    own = file_document.plan
    if own is None:
        return []
    found = []
    for dotted, where in own.provenance.items():
        if is_default(where) or not _matches(dotted, where, file_document.path, pointer, line, column, pointers):
            continue
        before = own.get(dotted)
        if before is None or isinstance(before, Unknown):
            continue
        winner = resolved.origin(dotted)
        after = back.get(dotted) if back is not None else None
        status = "unknown" if back is None else "exact" if same(before, after) else \
            "dropped" if after is None or isinstance(after, Unknown) else "approximate"
        m = Measured(dotted, status, before, after, None)
        elsewhere = winner is not None and (winner.file, winner.line, winner.column, winner.pointer) != \
            (where.file, where.line, where.column, where.pointer)
        m.note = (f"the setup takes {dotted.replace('global_', 'global')} = {_show(resolved.get(dotted))} from "
                  f"{_place(winner)}, not from this setting") if elsewhere else ""
        found.append(m)
    return found


def _part_of(file: str, pointer: str, line: int, column: int, resolved: Plan,
             measured: dict[str, Measured]) -> list[Measured]:
    """The measurement of the field a setting went into together with others (`/optimizer/beta2`
    into optimizer.betas, recorded at beta1): the setting is carried or changed with that field."""
    return [measured[dotted] for dotted, places in resolved.parts.items() if dotted in measured and any(
        where.file == file and (where.pointer == pointer if where.pointer else (where.line, where.column) == (line, column))
        for where in places)]


def _place(where: Location) -> str:
    import os

    if is_default(where):
        return f"the {where.pointer}"
    return f"{os.path.basename(where.file)}:{where.line} {where.pointer or ''}".rstrip()


def _entry(pointer: str, line: int, column: int, file: str | None, fields: list[Measured], hand: list[MappingEntry],
           back: Plan | None, file_document: Document | None, to: str) -> MappingEntry:
    why = "; ".join(dict.fromkeys(e.reason for e in hand if e.reason))
    hand_target = next((e.target for e in hand if e.target), None)
    if fields:
        statuses = {m.status for m in fields}
        if "unknown" in statuses:
            status = "unknown"
        elif len(statuses) == 1:
            status = statuses.pop()
        else:
            status = "approximate"
        measured_text = "; ".join(m.clause() for m in fields)
        target = hand_target or ", ".join(dict.fromkeys(m.target for m in fields if m.target)) or None
        if status in ("approximate", "dropped") and any(e.status == "unknown" for e in hand):
            status = "unknown"  # the output holds a placeholder in its place (the writer says what to fill in)
        if status == "exact" and why and not any(m.note for m in fields):
            reason = why  # the writer's own wording, confirmed by the measurement
        else:
            reason = f"measured: {measured_text}" + (f" ({why})" if why else "")
        if status == "dropped":
            target = None
        return MappingEntry(pointer, line, column, status, target, reason, file)
    if hand:  # no field of the Plan: the writer's word is all there is
        first = hand[0]
        return MappingEntry(pointer, line, column, first.status, first.target, why or first.reason, file)
    unread = getattr(getattr(file_document, "data", None), "unknown_meaning", None)
    why = unread(line, column) if unread is not None else None
    if why:  # what the setting sets depends on a program shardshift could not read
        return MappingEntry(pointer, line, column, "unknown", None, f"what {pointer} sets is not known: {why}; the "
                            "output does not carry it", file)
    if _passthrough_kept(back, file_document, pointer):
        return MappingEntry(pointer, line, column, "exact", pointer, "carried as written (a setting of the same "
                            "framework the output is read back as)", file)
    return MappingEntry(pointer, line, column, "dropped", None,
                        f"{pointer} sets nothing shardshift's Plan holds for {to}, so the output does not "
                        "carry it" if back is not None else "the output could not be read back to measure it", file)


def _passthrough_kept(back: Plan | None, file_document: Document | None, pointer: str) -> bool:
    """Whether a setting with no Plan field reaches the output unchanged (an output read back as the
    same framework keeps such settings as passthrough)."""
    if back is None or file_document is None or file_document.plan is None:
        return False
    mine = file_document.plan.passthrough.get(file_document.format, {})
    theirs = back.passthrough.get(file_document.format, {})
    return pointer in mine and pointer in theirs and same(mine[pointer], theirs[pointer])
