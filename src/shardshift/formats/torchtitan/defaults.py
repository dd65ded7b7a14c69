"""torchtitan's defaults table: what `JobConfig` (torchtitan 0.2.2, config/job_config.py) and the
trainer do with a TOML that leaves a setting out (shardshift.resolve). A TOML holds no world size:
the shard degree -1 ("the ranks left over") and the global batch stay open until the launcher's
world is known."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from shardshift.formats.defaults_util import data_parallel, degree, exact_div, integer, is_set, product, unknown
from shardshift.plan import Alternative, Plan, Unknown

FRAMEWORK = "torchtitan"
# The releases whose source was read and found to give this table's values (tests/test_defaults_releases.py);
# a pinned release outside their range resolves to Unknown (shardshift.resolve), never to these values.
CHECKED_RELEASES = ((0, 2, 0), (0, 2, 2))

SHARD_REST = ("torchtitan's default data_parallel_shard_degree -1 gives the shard degree the ranks left over, "
              "world size // (replicate × context × tensor × pipeline), and this file does not give the world size")
FSDP_OPEN = ("with tensor or pipeline parallelism torchtitan trains bf16 only under FSDP (dp_shard > 1 or "
             "context > 1, ParallelDims.fsdp_enabled), and the shard degree depends on the world size")
REST = "-1:"  # the reader's Unknown for a written -1 starts so


def defaults(plan: Plan, version: tuple[int, ...] | None) -> Iterator[tuple[str, Any]]:
    # config/job_config.py: Parallelism.*_degree = 1, data_parallel_shard_degree = -1
    for axis in ("data_parallel_replicate", "tensor", "pipeline", "context", "expert"):
        yield f"parallelism.{axis}", 1
    yield "parallelism.data_parallel_shard", _shard(plan)

    # distributed/parallel_dims.py: fsdp_enabled = dp_shard > 1 or cp > 1. A shard degree left to the world
    # ("the rest") shards over every data-parallel rank there is: ZeRO-3 semantics at any world size (with one
    # such rank torchtitan applies no FSDP, and nothing is sharded either way).
    fsdp = _fsdp(plan)
    pipeline = degree(plan, "parallelism.pipeline")
    tensor = degree(plan, "parallelism.tensor")
    if fsdp is not False:
        # models/llama3/infra/parallelize.py apply_fsdp: fsdp_reshard_after_forward "default" = not pp_enabled
        if pipeline is not None:
            yield "sharding.reshard_after_forward", pipeline <= 1
        reshard = plan.sharding.reshard_after_forward
        # fully_shard shards the parameters: ZeRO-3 when resharded after forward, 2 when kept gathered
        yield "sharding.stage", 2 if reshard is False else 3 if reshard is True else None
        yield "precision.reduce_dtype", "fp32"  # Training.mixed_precision_reduce = "float32"
    else:
        yield "sharding.stage", 0  # DDP or one device: nothing sharded

    # config/job_config.py: Training.mixed_precision_param = "bfloat16"; distributed/utils.py maybe_enable_amp:
    # under FSDP fully_shard's MixedPrecisionPolicy uses it; without FSDP, autocast to it for DDP / one device,
    # and no mixed precision with TP or PP (Training.dtype = "float32")
    model_parallel = None if tensor is None or pipeline is None else (tensor > 1 or pipeline > 1)
    if fsdp is True or model_parallel is False:
        yield "precision.param_dtype", "bf16"
    elif fsdp is False and model_parallel is True:
        yield "precision.param_dtype", _training_dtype(plan)
    else:
        yield "precision.param_dtype", Unknown(FSDP_OPEN, None, (
            Alternative("bf16", "FSDP applies: the world has more ranks than replicate × context × tensor × "
                                "pipeline"),
            Alternative("fp32", "no FSDP: the world has exactly replicate × context × tensor × pipeline ranks "
                                "(mixed precision is off with tensor or pipeline parallelism)")))

    # config/job_config.py: Training.local_batch_size = 8, global_batch_size = -1 (= local × data-parallel
    # degree: one accumulation step); train.py: accumulation = global // (local × dp_replicate × dp_shard)
    yield "batch.micro", 8
    yield "batch.sequence_length", 2048  # Training.seq_len = 2048
    dp = product(degree(plan, "parallelism.data_parallel_replicate"), shard_degree(plan))
    micro = integer(plan, "batch.micro")
    if not is_set(plan, "batch.global_"):
        yield "batch.accumulation", 1
        yield "batch.global_", product(micro, dp)
    else:
        yield "batch.accumulation", exact_div(integer(plan, "batch.global_"), product(micro, dp))

    # config/job_config.py: Optimizer name "AdamW", lr 8e-4, beta1 0.9, beta2 0.95, eps 1e-8, weight_decay 0.1
    yield "optimizer.name", "AdamW"
    yield "optimizer.lr", 8e-4
    yield "optimizer.betas", [0.9, 0.95]
    yield "optimizer.eps", 1e-8
    yield "optimizer.weight_decay", 0.1
    # Training.max_norm = 1.0
    yield "gradient_clipping", 1.0
    # config/job_config.py: LRScheduler warmup_steps 200, decay_type "linear", decay_ratio None (decay over all
    # steps after warm-up), min_lr_factor 0.0; components/lr_scheduler.py: total_steps None -> training.steps
    # (Training.steps = 10000)
    yield "scheduler.name", "linear"
    yield "scheduler.warmup_steps", 200
    yield "scheduler.total_steps", _training_steps(plan)
    factor = (plan.scheduler.params.get("min_lr_factor", 0.0) if plan.scheduler is not None else 0.0)
    lr = integer_or_float(plan.get("optimizer.lr"))
    if isinstance(factor, (int, float)) and not isinstance(factor, bool) and lr is not None:
        yield "scheduler.min_lr", lr * factor


def integer_or_float(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _training_dtype(plan: Plan) -> Any:
    """Training.dtype (default "float32"): the dtype of the parameters when no mixed precision applies."""
    training = plan.passthrough.get("torchtitan", {}).get("training", {})
    value = training.get("dtype", "float32") if isinstance(training, dict) else "float32"
    return {"float32": "fp32", "bfloat16": "bf16"}.get(value) if isinstance(value, str) else None


def _training_steps(plan: Plan) -> int | None:
    steps = plan.passthrough.get("torchtitan", {}).get("training", {})
    if not isinstance(steps, dict) or "steps" not in steps:
        return 10000
    value = steps["steps"]
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _shard(plan: Plan) -> Any:
    """-1: world // (replicate × context × tensor × pipeline) when the world is known."""
    rest = data_parallel(plan, ("data_parallel_replicate", "context", "tensor", "pipeline"))
    return rest if rest is not None else unknown(SHARD_REST)


def shard_degree(plan: Plan) -> int | None:
    """The shard degree: as written, or, for -1 (the default or written), the ranks left over once the
    world size is known (distributed/parallel_dims.py _validate); None when not known."""
    value = plan.parallelism.data_parallel_shard
    if isinstance(value, Unknown) and (value.reason.startswith(REST) or value.reason == SHARD_REST):
        return data_parallel(plan, ("data_parallel_replicate", "context", "tensor", "pipeline"))
    return integer(plan, "parallelism.data_parallel_shard")


def _fsdp(plan: Plan) -> bool | None:
    shard = shard_degree(plan)
    context = degree(plan, "parallelism.context")
    if (shard is not None and shard > 1) or (context is not None and context > 1):
        return True
    if shard is not None and context is not None:
        return False
    return None
