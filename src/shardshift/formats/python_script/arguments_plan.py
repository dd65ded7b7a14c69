"""The Plan fields one `TrainingArguments` call gives: a launch's flags read as TrainingArguments
(formats/launch/training_flags.py), or a Python script's `TrainingArguments(...)` call (its literal
keywords). Both meet the ds_config their `deepspeed` names with the Hugging Face Trainer's precedence
(training_flags.PRECEDENCE)."""

from __future__ import annotations

import os
from typing import Any

# an ArgumentsCall (formats/python_script/reader.py, or a launch's TrainingFlags), not imported: the reader
# imports this module
ArgumentsCall = Any
_ABSENT = object()  # a keyword whose source is no literal (the reader leaves it out of `keywords`)


def _tables() -> tuple[dict, dict, dict]:
    from shardshift.formats.launch.training_fields import CHOICES, FIELDS, OPTIONS

    return FIELDS, CHOICES, OPTIONS


def fields(call: ArgumentsCall) -> list[tuple[str, Any, str]]:
    """(dotted Plan field, value, the TrainingArguments field that gives it)."""
    out: list[tuple[str, Any, str]] = []
    if getattr(call, "program", None) is not None:
        return out
    given = call.positions

    def value(name: str, kind: type | tuple) -> Any:
        if name not in given:
            return None
        found = call.keywords.get(name, _ABSENT)
        if isinstance(found, bool) and kind is not bool:
            return None
        return found if isinstance(found, kind) else None

    def put(dotted: str, found: Any, name: str) -> None:
        if found is not None:
            out.append((dotted, found, name))

    put("batch.micro", value("per_device_train_batch_size", int), "per_device_train_batch_size")
    put("batch.accumulation", value("gradient_accumulation_steps", int), "gradient_accumulation_steps")
    bf16, fp16 = value("bf16", bool), value("fp16", bool)
    if bf16 is True:
        put("precision.param_dtype", "bf16", "bf16")
    elif fp16 is True:
        put("precision.param_dtype", "fp16", "fp16")
    elif (bf16 is False or fp16 is False) and call.value("bf16", False) is False and \
            call.value("fp16", False) is False:
        put("precision.param_dtype", "fp32", "bf16" if bf16 is False else "fp16")
    put("optimizer.name", value("optim", str), "optim")
    put("optimizer.lr", value("learning_rate", (int, float)), "learning_rate")
    put("optimizer.weight_decay", value("weight_decay", (int, float)), "weight_decay")
    put("optimizer.eps", value("adam_epsilon", (int, float)), "adam_epsilon")
    beta1, beta2 = value("adam_beta1", (int, float)), value("adam_beta2", (int, float))
    if beta1 is not None or beta2 is not None:
        fields, _, _ = _tables()
        first = beta1 if beta1 is not None else call.value("adam_beta1", fields["adam_beta1"][1])
        second = beta2 if beta2 is not None else call.value("adam_beta2", fields["adam_beta2"][1])
        if isinstance(first, (int, float)) and isinstance(second, (int, float)):
            put("optimizer.betas", [float(first), float(second)], "adam_beta1" if beta1 is not None else "adam_beta2")
    put("scheduler.name", value("lr_scheduler_type", str), "lr_scheduler_type")
    warmup = value("warmup_steps", (int, float))
    if warmup is not None and warmup >= 1 and float(warmup).is_integer():  # below 1 it is a ratio (transformers 5)
        put("scheduler.warmup_steps", int(warmup), "warmup_steps")
    put("activation_checkpointing.enabled", value("gradient_checkpointing", bool), "gradient_checkpointing")
    put("gradient_clipping", value("max_grad_norm", (int, float)), "max_grad_norm")
    return out


def plan_fields(call: ArgumentsCall) -> list[tuple[str, Any, tuple[int, int]]]:
    """The Plan fields the flags set: (dotted field, value, (line, column) of the flag), for the
    fields the command line gives with a known value (defaults of TrainingArguments are not
    values the script states). UNKNOWN values are left out, and so is everything when the entry
    script was not found (`program` set): that the flags are TrainingArguments is not known."""
    return [(dotted, found, call.positions[name]) for dotted, found, name in fields(call)]


def fill_call(plan: Any, call: ArgumentsCall, path: str) -> None:
    """Sets on `plan` the fields one TrainingArguments call gives (a launch's flags, or a `TrainingArguments(...)`
    call of a Python script), each with where it is written as the provenance (the flag, or the keyword)."""
    from shardshift.source import Location

    written = getattr(call, "written", None)

    def label(name: str) -> str:
        return written.get(name, f"--{name}").split(" ", 1)[0].split("=", 1)[0] if written is not None else name

    # with an "optimizer" block the run uses the block's optimizer (the ds_config's value wins
    # in the setup) and DS435 says that --optim is ignored: no second finding from the merge
    # (and DS449 that --lr_scheduler_type is, with a "scheduler" block)
    skip = {"optimizer.name"} if _config_has(call, path, "optimizer") else set()
    if _config_has(call, path, "scheduler"):
        skip.add("scheduler.name")
    for dotted, found, name in fields(call):
        if dotted in skip:
            continue
        line, column = call.positions[name]
        plan.set(dotted, found, Location(path, line, column, label(name)))
        others = [other for other in _TOGETHER.get(dotted, ()) if other != name and other in call.positions]
        if others:  # `--bf16 true --fp16 false`: both flags make the precision
            plan.parts[dotted] = [Location(path, *call.positions[other], label(other)) for other in others]


# Plan fields that several flags make together
_TOGETHER = {"precision.param_dtype": ("bf16", "fp16"), "optimizer.betas": ("adam_beta1", "adam_beta2")}


def _config_has(call: ArgumentsCall, path: str, key: str) -> bool:
    """Whether the ds_config `--deepspeed` names (looked up as DS435 looks it up: next to the
    script, in its parent folders, in the current directory) has the top-level `key`."""
    import json

    written = call.keywords.get("deepspeed")
    if not isinstance(written, str) or not written:
        return False
    from shardshift.context.paths import anchors as lookup_anchors

    anchors = lookup_anchors(os.path.dirname(os.path.abspath(path)))
    for candidate in [written] if os.path.isabs(written) else [os.path.join(a, written) for a in anchors]:
        if os.path.isfile(candidate):
            try:
                with open(candidate, encoding="utf-8-sig") as handle:
                    data = json.loads(handle.read(5_000_001))
            except (OSError, ValueError, RecursionError):
                return False
            return isinstance(data, dict) and key in data
    return False
