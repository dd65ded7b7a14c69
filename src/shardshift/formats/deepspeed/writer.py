"""DeepSpeed ds_config.json writer: Plan -> text, and the migration report of a same-format write."""

from __future__ import annotations

import copy
import json
import re
from typing import TYPE_CHECKING, Any

from shardshift.document import Conversion, Document, MappingEntry
from shardshift.formats.deepspeed.keys import KEYS, Key, key_index
from shardshift.formats.deepspeed.reader import (
    FORMAT,
    OPTIMIZER_FIELDS,
    SCHEDULER_FIELDS,
    SIMPLE_KEYS,
    _set,
)
from shardshift.source import join_pointer

if TYPE_CHECKING:
    from shardshift.plan import Optimizer, Plan, Scheduler

def write_dict(plan: Plan) -> dict:
    """The ds_config (as a dict, in stable key order) that expresses `plan`. A value not known
    before the job runs is not written (DeepSpeed's default applies); `convert` reports it."""
    from shardshift.plan import without_unknowns

    plan = without_unknowns(plan)
    out: dict = copy.deepcopy(plan.passthrough.get(FORMAT, {}))
    for key in SIMPLE_KEYS:
        value = plan.get(key.field)  # type: ignore[arg-type]
        if value is not None:
            _set(out, key.path, value)
    dtype = plan.precision.param_dtype
    if dtype == "fp16":
        _set(out, "/fp16/enabled", True)
    elif dtype == "bf16":
        _set(out, "/bf16/enabled", True)
    elif dtype == "fp32":
        _set(out, "/fp16/enabled", False)
        if isinstance(out.get("bf16"), dict):
            _set(out, "/bf16/enabled", False)
    if plan.optimizer is not None:
        _write_optimizer(plan.optimizer, out)
    if plan.scheduler is not None:
        _write_scheduler(plan.scheduler, out)
    return _ordered(out, "")


def _write_optimizer(optimizer: Optimizer, out: dict) -> None:
    block = out.setdefault("optimizer", {})
    if optimizer.name is not None:
        block["type"] = optimizer.name
    params = dict(optimizer.params)
    for name in OPTIMIZER_FIELDS:
        value = getattr(optimizer, name)
        if value is not None:
            params[name] = value
    if (optimizer.name or "").lower() == "adam" and optimizer.decoupled_weight_decay is False:
        params.setdefault("adam_w_mode", False)
    _merge_params(block, params)


def _merge_params(block: dict, params: dict, *, required: bool = False) -> None:
    """Add `params` to the block's params; a non-object params kept in the passthrough stays as
    written. `required`: write an empty params too (DeepSpeed calls the scheduler with **params)."""
    existing = block.get("params")
    if params:
        block["params"] = {**(existing if isinstance(existing, dict) else {}), **params}
    elif required and existing is None:
        block["params"] = {}


def _write_scheduler(scheduler: Scheduler, out: dict) -> None:
    block = out.setdefault("scheduler", {})
    if scheduler.name is not None:
        block["type"] = scheduler.name
    params = dict(scheduler.params)
    for source, target in SCHEDULER_FIELDS.get(scheduler.name or "", {}).items():
        value = getattr(scheduler, target)
        if value is not None:
            params[source] = value
    _merge_params(block, params, required=True)


_ORDER = {key.path: index for index, key in enumerate(KEYS)}


def _ordered(value: Any, pointer: str) -> Any:
    """Known keys in the key table's order, then unknown keys as they came."""
    if not isinstance(value, dict):
        return value
    big = len(_ORDER)
    items = sorted(value.items(), key=lambda kv: _ORDER.get(join_pointer(pointer, kv[0]), big))
    return {k: _ordered(v, join_pointer(pointer, k)) for k, v in items}


def write(plan: Plan) -> str:
    """ds_config.json text for `plan`: stable key order, 2-space indent, trailing newline."""
    text = json.dumps(write_dict(plan), indent=2, ensure_ascii=False) + "\n"
    # A lone surrogate (written as a \ud800 escape in the source) cannot be encoded as UTF-8: keep it escaped.
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


_SURROGATE = re.compile("[\ud800-\udfff]")


def convert(document: Document) -> Conversion:
    """Write `document`'s Plan back as a ds_config, with a report of every source setting."""
    if document.plan is None:
        raise ValueError(f"{document.path} has no Plan to write")
    if document.format == "megatron":
        from shardshift.formats.megatron.mapping import convert as from_megatron

        return from_megatron(document, "deepspeed")
    if document.format != FORMAT:
        # No key table from other formats into ds_config yet: say so for every setting.
        entries = [MappingEntry(pointer, line, column, "approximate", None,
                                f"carried through the neutral Plan: shardshift has no {document.format} -> deepspeed "
                                "key table yet; check the written config")
                   for pointer, line, column in document.settings()]
        return Conversion(write(document.plan), entries)  # unknowns: Conversion.mark_unknowns
    renamed_from = {old: new for new, old in document.renamed.items()}
    entries = []
    for pointer, line, column in document.settings():
        new = renamed_from.get(pointer)
        if new is not None and new != pointer:
            entries.append(MappingEntry(pointer, line, column, "exact", new, f"legacy spelling written as {new}"))
        else:
            entries.append(MappingEntry(pointer, line, column, "exact", pointer, "same key"))
    return Conversion(write(document.plan), entries)


def key_for(pointer: str) -> Key | None:
    """The key-table row of a concrete pointer."""
    return key_index().get(pointer)
