"""DeepSpeed -> FSDP2 and any Plan -> FSDP2: the FSDP2 module with its report. A ds_config's keys are
explained by DeepSpeed's own table (formats/deepspeed/fsdp2_explained.py); other sources by their format's
reasons (`formats.explain`) or by what the module does not emit.
"""

from __future__ import annotations

import copy
import os

from shardshift.document import Conversion, Document, MappingEntry
from shardshift.formats.deepspeed.fsdp2_explained import (  # noqa: F401 - the table, imported from here by tests
    ROWS,
    Row,
    outcome,
    report,
    row_for,
)
from shardshift.formats.fsdp2.writer import render
from shardshift.fsdp2_settings import settings_from_plan

E, A, X, U = "exact", "approximate", "dropped", "unknown"


def convert(document: Document) -> Conversion:
    """The FSDP2 module for `document` and what happened to every source setting.

    The module is written from the (resolved) Plan alone, whatever the source format. The entries
    explain: every ds_config key for a ds_config (the table above), the source format's own reasons
    (`formats.explain`: a Megatron document's flag by flag); for other sources only what needs saying (the
    report's statuses are measured on the module read back, migration.py)."""
    if document.plan is None:
        raise ValueError(f"{document.path} has no Plan to write")
    name = os.path.basename(document.path) or document.path
    plan = copy.deepcopy(document.plan)
    deepspeed = document.format == "deepspeed" or None  # None: as the Plan's passthrough and defaults say
    settings = settings_from_plan(plan, deepspeed=deepspeed, source_name=name, source_format=document.format)
    from shardshift import formats

    explained = formats.explain(document, "fsdp2") if document.format != "deepspeed" else None
    if document.format == "deepspeed":
        entries = report(document, settings)
    elif explained is not None:  # the source format's own reasons (a Megatron document's flag by flag)
        entries = explained
    else:
        entries = _not_emitted(document) + [MappingEntry("", 1, 1, A, None, note) for note in settings.notes]
    entries += _placeholders(settings)
    conversion = Conversion(render(settings), entries)
    conversion.mark_unknowns(plan)  # Unknown fields: status `unknown`, the module states the default
    return conversion


def _placeholders(settings) -> list[MappingEntry]:
    """An `unknown` entry for each FILL_IN the module holds (a schedule's length the source does not give)."""
    from shardshift.formats.fsdp2.writer import REQUIRED
    from shardshift.resolve import placeholder_reason

    return [MappingEntry("", 1, 1, "unknown", f"LR_SCHEDULE[{key!r}]", placeholder_reason(
        f"{key} of the {settings.scheduler} schedule: the source does not give it, and setup() refuses to run "
        "without it")) for key, value in settings.scheduler_kwargs.items() if value == REQUIRED]


_DEGREES = {
    "parallelism.tensor": "tensor parallelism is not emitted: the module shards data-parallel only (FSDP2 composes "
                          "with torch.distributed.tensor.parallel on a 2-D mesh, which you add)",
    "parallelism.pipeline": "pipeline parallelism is not emitted: the module shards data-parallel only "
                            "(torch.distributed.pipelining, which you add)",
    "parallelism.context": "context parallelism is not emitted: the module shards data-parallel only",
    "parallelism.expert": "expert parallelism is not emitted: the module shards data-parallel only",
}


def _not_emitted(document: Document) -> list[MappingEntry]:
    """An entry, at the source setting, for each parallel degree above 1 the module does not do."""
    from shardshift.plan import known
    from shardshift.resolve import is_default

    plan = document.plan
    entries = []
    for dotted, reason in _DEGREES.items():
        value = known(plan.get(dotted))
        where = plan.provenance.get(dotted)
        if not isinstance(value, int) or value <= 1 or where is None or is_default(where) or where.line < 1:
            continue
        entries.append(MappingEntry(where.pointer or dotted, where.line, where.column, X, None, reason,
                                    file=None if where.file == document.path else where.file))
    return entries
