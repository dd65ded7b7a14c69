"""Axolotl's defaults table: what axolotl 0.21.0's schema (utils/schemas/*.py), `normalize_config`
and the trainer builder (transformers' TrainingArguments underneath) do with a YAML that leaves a key
out (shardshift.resolve; ../shared/reference/axolotl.md §2-§7). The world size comes from the launcher."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from shardshift.formats.axolotl.keys import CUSTOM_OPTIMIZERS, HF_BETAS
from shardshift.formats.defaults_util import data_parallel, integer, merged_ds_config, product
from shardshift.plan import Alternative, Plan, Unknown

FRAMEWORK = "axolotl"
# The releases whose source was read and found to give this table's values (tests/test_defaults_releases.py);
# a pinned release outside their range resolves to Unknown (shardshift.resolve), never to these values.
CHECKED_RELEASES = ((0, 8, 0), (0, 12, 0), (0, 19, 0), (0, 21, 0))

BF16_AUTO = ("Axolotl's default bf16: auto depends on the GPU (utils/config resolve_dtype): bf16 where "
             "torch reports bf16 support, else {other}")
DS_STAGE = ("the ZeRO stage is the one of the ds_config named by `deepspeed:`, which is not read here "
            "(DeepSpeed's default 0 when it has no zero_optimization)")
# 0.21.0 utils/schemas/validation.py check_fsdp_version: FSDP1 (a `fsdp:` list, fsdp_version 1) is refused
FSDP2_ONLY = (0, 21)
# HF words of Axolotl's FSDP1 `fsdp:` list -> ZeRO stage (transformers FSDPOption; FULL_SHARD by default)
FSDP1_STAGES = {"full_shard": 3, "hybrid_shard": 3, "shard_grad_op": 2, "hybrid_shard_zero2": 2, "no_shard": 0}


def defaults(plan: Plan, version: tuple[int, ...] | None) -> Iterator[tuple[str, Any]]:
    raw = plan.passthrough.get("axolotl", {})
    raw = raw if isinstance(raw, dict) else {}
    # utils/schemas/config.py: bf16 = "auto", fp16 = None; resolve_dtype: auto -> bf16 if the GPU has it,
    # else fp16 (when fp16 and float16 are unset) or no mixed precision (fp32)
    other = "fp32" if raw.get("fp16") is False or raw.get("float16") else "fp16"
    yield "precision.param_dtype", Unknown(BF16_AUTO.format(other=other), None, (
        Alternative("bf16", "the GPU supports bf16 (Ampere or newer)"),
        Alternative(other, "the GPU does not support bf16")))

    # tensor_parallel_size / context_parallel_size: None, then 1; expert_parallel_size = 1 (expert-parallel plugin)
    for axis in ("tensor", "context", "expert"):
        yield f"parallelism.{axis}", 1

    yield "sharding.stage", _stage(plan, raw, version)

    # utils/schemas/training.py: micro_batch_size = 1, gradient_accumulation_steps = 1. normalize_config's
    # `gradient_accumulation_steps or batch_size // micro_batch_size` never reaches batch_size: the schema has
    # already filled the 1 (validate_config of micro_batch_size 2 + batch_size 16 gives accumulation 1)
    yield "batch.micro", 1
    micro = integer(plan, "batch.micro")
    yield "batch.accumulation", 1
    # global = micro × accumulation × world // (tensor × context) (reference/axolotl.md §4)
    dp = data_parallel(plan, ("tensor", "context"))
    yield "batch.global_", product(micro, integer(plan, "batch.accumulation"), dp)
    yield "batch.sequence_length", 512  # utils/schemas/config.py: sequence_len = 512

    # utils/schemas/training.py: optimizer = "adamw_torch_fused", weight_decay = 0.0; adam_beta1/2 and
    # adam_epsilon None: transformers TrainingArguments' 0.9, 0.999, 1e-8 for the HF optimizers
    yield "optimizer.name", "adamw_torch_fused"
    name = plan.optimizer.name if plan.optimizer is not None else None
    if isinstance(name, str) and name not in CUSTOM_OPTIMIZERS:
        if name.startswith(("adamw", "adam_")) or name in ("adamw_torch_fused", "adamw_torch", "adamw_hf"):
            yield "optimizer.betas", list(HF_BETAS)
            yield "optimizer.eps", 1e-8
    yield "optimizer.weight_decay", 0.0
    # max_grad_norm = None: TrainingArguments.max_grad_norm = 1.0
    yield "gradient_clipping", 1.0
    # lr_scheduler = "cosine" (transformers' cosine: decays to 0 unless cosine_min_lr_ratio); warmup with neither
    # warmup_steps nor warmup_ratio is min(3% of the total steps, 100), which needs the dataset: not given
    yield "scheduler.name", "cosine"
    scheduler = plan.scheduler.name if plan.scheduler is not None else None
    if scheduler in ("cosine", "linear") and raw.get("cosine_min_lr_ratio") is None:
        yield "scheduler.min_lr", 0.0


def _stage(plan: Plan, raw: dict, version: tuple[int, ...] | None) -> Any:
    """DeepSpeed: the ds_config's (0 when a merged one says nothing); FSDP2: 3, or 2 with
    reshard_after_forward false; FSDP1 (before 0.21): the `fsdp:` list's strategy (FULL_SHARD by
    default); neither: DDP, 0."""
    if raw.get("deepspeed") is not None:
        return 0 if merged_ds_config(plan) else Unknown(DS_STAGE)
    config = raw.get("fsdp_config")
    words = raw.get("fsdp") if isinstance(raw.get("fsdp"), list) else []
    if not isinstance(config, dict) and not words:
        return 0
    config = config if isinstance(config, dict) else {}
    fsdp_version = raw.get("fsdp_version", config.get("fsdp_version", config.get("version")))
    if str(fsdp_version) == "2" or (version is not None and tuple(version) >= FSDP2_ONLY) or version is None:
        # 0.21.0 utils/trainer.py setup_fsdp_envs: FSDP_VERSION=2, FSDP_RESHARD_AFTER_FORWARD only when true;
        # accelerate FullyShardedDataParallelPlugin: reshard_after_forward defaults to true for FSDP2
        reshard = plan.sharding.reshard_after_forward
        return 2 if reshard is False else 3
    stages = [FSDP1_STAGES[w] for w in words if isinstance(w, str) and w in FSDP1_STAGES]
    return stages[0] if stages else 3
