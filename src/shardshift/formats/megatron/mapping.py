"""Megatron-LM -> a ds_config or an FSDP2 module: why each flag carries over as it does (megatron.md §4).

`explain(document, target)` gives, for each flag of a Megatron document whose fate needs saying,
the entry with its reason: why tensor and pipeline parallelism have no ds_config counterpart, which
DeepSpeed schedule has the shape of Megatron's decay style, what becomes of the model shape, the
world and the distributed optimizer (the reasons of formats/deepspeed/meaning.py `to_deepspeed`).
The writers write the resolved Plan themselves and reach these explanations through
`formats.explain` (the Megatron package's `explain`), never by importing this module; a report's
status comes from reading their output back (migration), and these reasons explain it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shardshift.document import MappingEntry
from shardshift.formats.deepspeed.meaning import _PARALLEL, to_deepspeed
from shardshift.formats.deepspeed.meaning import SCHEDULES as _SCHEDULES  # noqa: F401 - the reasons tests quote
from shardshift.plan import Unknown, known

if TYPE_CHECKING:
    from shardshift.document import Document
    from shardshift.plan import Plan

def _pointers(plan: Plan) -> dict[str, str]:
    """Plan field -> the ds_config key that holds it."""
    from shardshift.formats.deepspeed.keys import KEYS

    pointer_of = {key.field: key.path for key in KEYS if key.field and not key.renamed_to and not key.removed}
    pointer_of.update({"precision.param_dtype": "/bf16/enabled" if known(plan.precision.param_dtype) == "bf16"
                       else "/fp16/enabled", "optimizer.name": "/optimizer/type", "optimizer.lr": "/optimizer/params/lr",
                       "optimizer.betas": "/optimizer/params/betas", "optimizer.eps": "/optimizer/params/eps",
                       "optimizer.weight_decay": "/optimizer/params/weight_decay", "scheduler.name": "/scheduler/type",
                       "scheduler.warmup_steps": "/scheduler/params/warmup_num_steps",
                       "scheduler.total_steps": "/scheduler/params/total_num_steps",
                       "scheduler.min_lr": "/scheduler/params/cos_min_ratio"})
    return pointer_of


def explain(document: Document, target: str) -> list[MappingEntry]:
    """For each flag of a Megatron `document` whose fate in a `target` ("deepspeed" or "fsdp2") needs
    a reason, the entry with that reason: a parallel degree the target cannot hold, the schedule of
    the same shape, the model shape and world left out, the distributed optimizer as ZeRO-1, a value
    known only when the job runs. A flag that becomes the key of the same meaning gets no entry (the
    measured report says so), nor does a flag with nothing to explain."""
    plan = document.plan
    if plan is None or not hasattr(document.data, "given"):
        return []
    _, status = to_deepspeed(plan)
    pointer_of = _pointers(plan)
    entries = []
    for item in document.data.given:
        fields = [d for d, w in plan.provenance.items() if w.pointer == item.spelling and w.file == document.path]
        explained = _explained(item, fields, status, pointer_of, plan)
        if explained is not None:
            entries.append(explained)
    return entries


def _explained(item, fields: list[str], status: dict, pointer_of: dict, plan: Plan) -> MappingEntry | None:
    for dotted in fields:
        value = plan.get(dotted)
        if isinstance(value, Unknown):
            return MappingEntry(item.spelling, item.line, item.column, "unknown", None, value.reason)
        for prefix in _prefixes(dotted):
            if prefix in status:
                state, reason = status[prefix]
                written = state != "dropped" and prefix not in _PARALLEL
                return MappingEntry(item.spelling, item.line, item.column, state,
                                    pointer_of.get(dotted) if written else None, reason)
    return None


def _prefixes(dotted: str) -> list[str]:
    parts = dotted.split(".")
    return [".".join(parts[:i]) for i in range(len(parts), 0, -1)]
