"""Megatron-LM's defaults table: what `parse_args` + `validate_args` (megatron/training/arguments.py,
config/training_config.py; ../shared/oracles/megatron-lm, core_v0.19) give an argument list that
leaves a flag out (shardshift.resolve). The world size comes only from the launcher the reader saw;
the global batch and the accumulation need it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from shardshift.formats.defaults_util import data_parallel, exact_div, integer, product
from shardshift.plan import Plan

FRAMEWORK = "megatron-core"
# The releases whose source was read and found to give this table's values; a pinned release outside
# them resolves to Unknown (shardshift.resolve), never to these values.
CHECKED_RELEASES = ((0, 20, 0),)
WHY_ONE_RELEASE = ("Megatron-LM's training arguments (arguments.py, where these defaults live) are published with no release on the package index: the megatron-core wheels hold megatron/core only. The one release read is the Megatron-LM source of ../shared/oracles/megatron-lm (megatron-core 0.20.0).")

# arguments.py _add_mixed_precision_args: --initial-loss-scale 2**32, --min-loss-scale 1.0,
# --loss-scale-window 1000, --hysteresis 2; --loss-scale None = dynamic scaling
FP16_DEFAULTS = (("precision.loss_scale", 0.0), ("precision.initial_scale_power", 32),
                 ("precision.loss_scale_window", 1000), ("precision.hysteresis", 2),
                 ("precision.min_loss_scale", 1.0))


def defaults(plan: Plan, version: tuple[int, ...] | None) -> Iterator[tuple[str, Any]]:
    # arguments.py: --tensor-model-parallel-size 1, --pipeline-model-parallel-size 1, --context-parallel-size 1,
    # --expert-model-parallel-size 1, --sequence-parallel off (ModelParallelConfig)
    for axis in ("tensor", "pipeline", "context", "expert"):
        yield f"parallelism.{axis}", 1
    yield "parallelism.sequence_parallel", False
    # no --fp16 / --bf16: params_dtype = torch.float (validate_args)
    yield "precision.param_dtype", "fp32"
    if plan.precision.param_dtype == "fp16":
        yield from FP16_DEFAULTS
    # no --use-distributed-optimizer / --use-torch-fsdp2 / --use-megatron-fsdp: plain DDP, nothing sharded
    yield "sharding.stage", 0
    yield from batch(plan)
    # arguments.py _add_regularization_args: --weight-decay 0.01, --clip-grad 1.0, --adam-beta1 0.9,
    # --adam-beta2 0.999, --adam-eps 1e-08; --optimizer "adam" (AdamW: decoupled weight decay,
    # megatron/core/optimizer/__init__.py). --lr has no default.
    yield "optimizer.name", "AdamW"
    if plan.optimizer is not None and plan.optimizer.name in ("AdamW", "adam"):
        yield "optimizer.decoupled_weight_decay", True
        yield "optimizer.betas", [0.9, 0.999]
        yield "optimizer.eps", 1e-8
    yield "optimizer.weight_decay", 0.01
    yield "gradient_clipping", 1.0
    # config/training_config.py SchedulerConfig: lr_decay_style "linear", lr_warmup_iters 0;
    # arguments.py --min-lr 0.0; lr_decay_iters None -> train_iters (the reader's total_steps)
    yield "scheduler.name", "linear"
    yield "scheduler.warmup_steps", 0
    yield "scheduler.min_lr", 0.0
    # training/training.py get_optimizer_param_scheduler: OptimizerParamScheduler(max_lr=args.lr, ...):
    # the schedule peaks at --lr
    lr = plan.optimizer.lr if plan.optimizer is not None else None
    if isinstance(lr, float):
        yield "scheduler.max_lr", lr


def batch(plan: Plan) -> Iterator[tuple[str, Any]]:
    """arguments.py validate_args: data_parallel_size = world // (TP × PP × CP); no --global-batch-size:
    global = micro × data_parallel_size; microbatches (accumulation) = global // (micro × DP)
    (megatron/core/num_microbatches_calculator.py). --micro-batch-size has no default."""
    dp = data_parallel(plan)
    micro = integer(plan, "batch.micro")
    if plan.batch.global_ is None:
        yield "batch.global_", product(micro, dp)
        # global = micro × DP whatever the world: one micro-batch per step, known without the world
        yield "batch.accumulation", 1
    yield "batch.accumulation", exact_div(integer(plan, "batch.global_"), product(micro, dp))


class _ForkTable:
    """The defaults of a script that Megatron-DeepSpeed runs (`--deepspeed`, `--deepspeed_config`,
    or the deepspeed launcher): not megatron-core's. That fork parses its own arguments (an older
    Megatron's, with its own defaults), and DeepSpeed's engine takes ZeRO, precision, clipping and,
    when the ds_config has them, the optimizer and schedule from the ds_config. shardshift has no
    table of the fork's defaults: every field the script leaves out is unknown (a setup that reads
    the ds_config fills what the ds_config sets first)."""

    FRAMEWORK = FRAMEWORK
    CHECKED_RELEASES = CHECKED_RELEASES
    PROGRAM = "Megatron-DeepSpeed"
    UNKNOWN_BECAUSE = ("not megatron-core's default: Megatron-DeepSpeed runs this script (--deepspeed, "
                       "--deepspeed_config or the deepspeed launcher), and that fork's own defaults and its ds_config "
                       "decide; shardshift has no table of them")

    @staticmethod
    def defaults(plan: Plan, version: tuple[int, ...] | None) -> Iterator[tuple[str, Any]]:
        return defaults(plan, version)


def entry(document: Any) -> str | None:
    """Which program runs the argument list (`resolve(..., entry=...)`): "megatron-deepspeed" for the
    fork, else "megatron-lm"."""
    return getattr(getattr(document, "data", None), "dialect", None)


def table_for(entry: str | None) -> Any:
    """megatron-core's table, or for the Megatron-DeepSpeed fork one whose every value is unknown."""
    import sys

    return _ForkTable if entry == "megatron-deepspeed" else sys.modules[__name__]
