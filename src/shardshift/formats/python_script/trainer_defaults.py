"""transformers' defaults table: what the Hugging Face Trainer does with `TrainingArguments` that leave a
field out (transformers 5.24.0, training_args.py; formats/launch/training_fields.py holds the same
defaults from the parser), with DeepSpeed's own defaults for what a ds_config it is given leaves out
(shardshift.resolve). Used for a launch whose entry is known to read TrainingArguments
(formats/launch/defaults.py: the launch reader lifts the TrainingArguments flags into the Plan, so
what the command line sets is never replaced). Never a world size."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from shardshift.formats.defaults_util import data_parallel, integer, product
from shardshift.plan import Plan

FRAMEWORK = "transformers"


def defaults(plan: Plan, version: tuple[int, ...] | None) -> Iterator[tuple[str, Any]]:
    # TrainingArguments: bf16 = False, fp16 = False -> fp32 (a ds_config's "auto" precision follows them)
    yield "precision.param_dtype", "fp32"
    # no `fsdp`: DDP; a ds_config without zero_optimization: DeepSpeedZeroConfig.stage = 0
    yield "sharding.stage", 0
    # per_device_train_batch_size = 8, gradient_accumulation_steps = 1; the Trainer's total batch is
    # per-device × accumulation × world size (with a ds_config it fills DeepSpeed's "auto" triple that way)
    yield "batch.micro", 8
    yield "batch.accumulation", 1
    yield "batch.global_", product(integer(plan, "batch.micro"), integer(plan, "batch.accumulation"),
                                   data_parallel(plan))
    # optim = "adamw_torch_fused", learning_rate = 5e-5, adam_beta1 = 0.9, adam_beta2 = 0.999, adam_epsilon = 1e-8,
    # weight_decay = 0.0 -- for the Trainer's own optimizer; a ds_config `optimizer` block's class keeps its own
    if plan.optimizer is None or plan.optimizer.name is None:
        yield "optimizer.name", "adamw_torch_fused"
        yield "optimizer.lr", 5e-5
        yield "optimizer.betas", [0.9, 0.999]
        yield "optimizer.eps", 1e-8
        yield "optimizer.weight_decay", 0.0
    # max_grad_norm = 1.0 (with a ds_config, DeepSpeed's gradient_clipping, 1.0 since 0.19.3, "auto" = this)
    yield "gradient_clipping", 1.0
    # lr_scheduler_type = "linear" (warm-up, then linear decay to 0), warmup_steps = 0 -- the Trainer's own
    # scheduler, also under a ds_config without a `scheduler` block
    if plan.scheduler is None or plan.scheduler.name is None:
        yield "scheduler.name", "linear"
        yield "scheduler.warmup_steps", 0
        yield "scheduler.min_lr", 0.0
