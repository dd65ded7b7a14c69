"""Accelerate's defaults table: what `accelerate launch` (accelerate 1.15, commands/launch.py) and its
plugins (utils/dataclasses.py) do with a config YAML that leaves a key out (shardshift.resolve).

No world size: `num_processes` left out is -1 in ClusterConfig, and `accelerate launch` then refuses
the config ("You need to manually pass in `--num_processes` using this config yaml"). The batch, the
optimizer and the schedule belong to the training script, not to this file."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from shardshift.formats.defaults_util import merged_ds_config
from shardshift.plan import Plan, Unknown

FRAMEWORK = "accelerate"
# The releases whose source was read and found to give this table's values (tests/test_defaults_releases.py);
# a pinned release outside their range resolves to Unknown (shardshift.resolve), never to these values.
CHECKED_RELEASES = ((1, 2, 0), (1, 6, 0), (1, 15, 0))

DS_FILE_STAGE = ("the ZeRO stage is the one of the ds_config named by deepspeed_config_file, which is not read "
                 "here (DeepSpeed's default 0 when it has no zero_optimization)")
DS_FILE_PRECISION = ("with deepspeed_config_file the precision is the ds_config's (fp16 / bf16 blocks), which is not "
                     "read here (fp32 when it has neither)")


def defaults(plan: Plan, version: tuple[int, ...] | None) -> Iterator[tuple[str, Any]]:
    raw = plan.passthrough.get("accelerate", {})
    raw = raw if isinstance(raw, dict) else {}
    distributed = raw.get("distributed_type")
    deepspeed = raw.get("deepspeed_config") if isinstance(raw.get("deepspeed_config"), dict) else {}
    ds_file = deepspeed.get("deepspeed_config_file")
    ds_file = isinstance(ds_file, str) and ds_file.strip().lower() != "none" and distributed == "DEEPSPEED"
    merged = merged_ds_config(plan)

    # commands/launch.py _validate_launch_command: no mixed_precision in the config -> "no" (fp32)
    if ds_file and not merged:
        yield "precision.param_dtype", Unknown(DS_FILE_PRECISION)
    else:
        yield "precision.param_dtype", "fp32"

    if distributed == "FSDP":
        # utils/dataclasses.py FullyShardedDataParallelPlugin: fsdp_version from FSDP_VERSION, default 1;
        # sharding_strategy / reshard_after_forward unset -> "FULL_SHARD" (v1) or True (v2): ZeRO-3
        yield "sharding.stage", 3
        if _fsdp_version(raw) == 2:
            yield "sharding.reshard_after_forward", True
    elif distributed == "DEEPSPEED":
        if ds_file:
            yield "sharding.stage", 0 if merged else Unknown(DS_FILE_STAGE)
        else:
            # DeepSpeedPlugin.__post_init__: zero_stage from ACCELERATE_DEEPSPEED_ZERO_STAGE, default 2;
            # offload devices "none"
            yield "sharding.stage", 2
        if not ds_file or merged:
            # the ds_config Accelerate builds (or the file it merges) sets no communication_data_type unless
            # given: DeepSpeed's engine.communication_data_type then reduces gradients in the training dtype
            given = plan.communication.dtype
            dtype = given if given is not None else plan.precision.param_dtype
            if isinstance(dtype, str) and dtype in ("fp16", "bf16", "fp32"):
                yield "precision.reduce_dtype", dtype
    elif distributed == "MEGATRON_LM":
        # MegatronLMPlugin.__post_init__: tp_degree / pp_degree 1 (MEGATRON_LM_TP_DEGREE / _PP_DEGREE),
        # gradient_clipping 1.0; use_distributed_optimizer None (Megatron's plain DDP)
        yield "parallelism.tensor", 1
        yield "parallelism.pipeline", 1
        yield "gradient_clipping", 1.0
        yield "sharding.stage", 0
    elif isinstance(distributed, str):
        yield "sharding.stage", 0  # NO, MULTI_GPU, MULTI_CPU, ...: DDP or one process, nothing sharded


def _fsdp_version(raw: dict) -> int | None:
    from shardshift.formats.accelerate.reader import fsdp_version

    return fsdp_version(raw)
