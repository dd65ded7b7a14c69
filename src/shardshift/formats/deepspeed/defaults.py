"""DeepSpeed's defaults table: what `deepspeed.initialize` does with a ds_config that leaves a
setting out (shardshift.resolve). Never a world size: a ds_config does not hold one."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from shardshift.formats.defaults_util import data_parallel, exact_div, has_auto, integer, is_set, product, unknown
from shardshift.plan import Plan

FRAMEWORK = "deepspeed"
# The releases whose source was read and found to give this table's values (tests/test_defaults_releases.py);
# a pinned release outside their range resolves to Unknown (shardshift.resolve), never to these values.
CHECKED_RELEASES = ((0, 16, 0), (0, 18, 0), (0, 19, 2), (0, 19, 8))

# deepspeed/runtime/constants.py: GRADIENT_CLIPPING_DEFAULT = 1.0 from 0.19.3 (0.0, no clipping, before)
CLIPPING_CHANGED = (0, 19, 3)

# deepspeed/runtime/constants.py: FP16_LOSS_SCALE_DEFAULT = 0 (dynamic), FP16_INITIAL_SCALE_POWER_DEFAULT = 16,
# FP16_LOSS_SCALE_WINDOW_DEFAULT = 1000, FP16_HYSTERESIS_DEFAULT = 2, FP16_CONSECUTIVE_HYSTERESIS_DEFAULT = False,
# FP16_MIN_LOSS_SCALE_DEFAULT = 1
FP16_DEFAULTS = (("precision.loss_scale", 0.0), ("precision.initial_scale_power", 16),
                 ("precision.loss_scale_window", 1000), ("precision.hysteresis", 2),
                 ("precision.consecutive_hysteresis", False), ("precision.min_loss_scale", 1.0))

# What DeepSpeed does with no `scheduler` block (engine._configure_lr_scheduler: the client's
# lr_scheduler if deepspeed.initialize got one, else none from the config): the LR stays constant.
CONSTANT = "constant"
HF_PRECISION = ('fp16 / bf16 "enabled": "auto" is filled by the Hugging Face Trainer from its own fp16 / bf16 '
                'arguments, which this file does not show')
HF_SCHEDULER = ("the ds_config holds \"auto\" values, so the Hugging Face Trainer reads it; with no `scheduler` "
                "block the Trainer builds its own (TrainingArguments.lr_scheduler_type, linear by default) in the "
                "program, which this file does not show")


def defaults(plan: Plan, version: tuple[int, ...] | None) -> Iterator[tuple[str, Any]]:
    # runtime/config.py: get_fp16_enabled / get_bfloat16_enabled default False: fp32 training. An "auto"
    # (or any other non-bool) `enabled` is left to the consumer: the reader keeps it in the passthrough
    passed = plan.passthrough.get("deepspeed", {})
    written = [block.get("enabled") for block in (passed.get("fp16"), passed.get("bf16"))
               if isinstance(block, dict) and block.get("enabled") is not None]
    if any(value == "auto" for value in written):
        yield "precision.param_dtype", unknown(HF_PRECISION)
    elif not written or all(isinstance(value, bool) for value in written):
        yield "precision.param_dtype", "fp32"
    if plan.precision.param_dtype == "fp16":
        yield from FP16_DEFAULTS
    # engine.communication_data_type: communication_data_type when given, else fp16 / bf16 when
    # enabled, else fp32: gradients are reduced in the training dtype
    if plan.precision.reduce_dtype is None:
        given = plan.communication.dtype
        if given is not None:
            yield "precision.reduce_dtype", given
        elif any(value == "auto" for value in written):
            yield "precision.reduce_dtype", unknown(HF_PRECISION)
        elif isinstance(plan.precision.param_dtype, str) and plan.precision.param_dtype in ("fp16", "bf16", "fp32"):
            yield "precision.reduce_dtype", plan.precision.param_dtype
        elif not written or all(isinstance(value, bool) for value in written):
            yield "precision.reduce_dtype", "fp32"
    # runtime/zero/config.py: DeepSpeedZeroConfig.stage = 0 (ZeRO off without zero_optimization)
    yield "sharding.stage", 0
    # runtime/constants.py: GRADIENT_CLIPPING_DEFAULT
    yield "gradient_clipping", 1.0 if version is None or tuple(version) >= CLIPPING_CHANGED else 0.0
    yield from batch(plan)
    # engine._configure_lr_scheduler: no scheduler block (or one without a type) -> no scheduler
    if plan.scheduler is None or plan.scheduler.name is None:
        hf = has_auto(plan.to_data()) or has_auto(plan.passthrough.get("deepspeed"))
        yield "scheduler.name", unknown(HF_SCHEDULER) if hf else CONSTANT
    # no optimizer block: the client's optimizer (deepspeed.initialize(optimizer=...)); no default here


def batch(plan: Plan) -> Iterator[tuple[str, Any]]:
    """runtime/config.py: DeepSpeedConfig._set_batch_related_parameters. The data-parallel size is
    world // (tensor × pipeline × sequence-parallel), so a value that needs it is given only when
    the world is known; a value DeepSpeed would compute from an "auto" or Unknown one is not given."""
    has_global, has_micro, has_acc = (is_set(plan, f"batch.{f}") for f in ("global_", "micro", "accumulation"))
    global_, micro, acc = (integer(plan, f"batch.{f}") for f in ("global_", "micro", "accumulation"))
    dp = data_parallel(plan)
    if has_global and has_micro and has_acc:
        return
    if has_global and has_micro:  # grad_acc = train_batch // micro // world_size
        yield "batch.accumulation", exact_div(exact_div(global_, micro), dp)
    elif has_global and has_acc:  # micro = train_batch // world_size // grad_acc
        yield "batch.micro", exact_div(exact_div(global_, dp), acc)
    elif has_micro and has_acc:  # train_batch = micro * grad_acc * world_size
        yield "batch.global_", product(micro, acc, dp)
    elif has_global:  # grad_acc = 1, micro = train_batch // world_size
        yield "batch.accumulation", 1
        yield "batch.micro", exact_div(global_, dp)
    elif has_micro:  # train_batch = micro * world_size, grad_acc = 1
        yield "batch.accumulation", 1
        yield "batch.global_", product(micro, dp)
    # neither batch size: DeepSpeed refuses the config (an assertion), there is no default
