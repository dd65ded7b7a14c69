"""What a ds_config can hold of a Plan read from any format, and DeepSpeed's schedule of each decay shape.

`to_deepspeed(plan)` is the Plan a ds_config would give: the model-parallel degrees leave (a ds_config
has none: tensor and pipeline parallelism live in the model code, DeepSpeed gets them from the `mpu`
passed to `initialize`; plain FSDP2 has no pipeline either), a decay shape named the Megatron /
torchtitan / HF way becomes the DeepSpeed schedule of the same shape (`SCHEDULES`), and the
distributed optimizer becomes ZeRO-1, with field -> (status, reason) for what does not carry over
exactly. `deepspeed_schedule(plan)` is the schedule alone, which the FSDP2 module also runs.
DeepSpeed's own knowledge, so it lives here; the writers of other formats and the Megatron
explanations import it (a format's reader-side module, not its writer or mapping).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from shardshift.plan import Unknown, known

if TYPE_CHECKING:
    from shardshift.plan import Plan

_PARALLEL = {
    "parallelism.tensor": "tensor parallelism is not a ds_config setting: DeepSpeed takes it from the model code "
                          "(Megatron's mpu passed to deepspeed.initialize, or AutoTP)",
    "parallelism.pipeline": "pipeline parallelism is not a ds_config setting: DeepSpeed pipelines a PipelineModule "
                            "built in the model code",
    "parallelism.virtual_pipeline": "interleaved (virtual) pipeline stages have no DeepSpeed or FSDP2 counterpart",
    "parallelism.context": "Megatron's context parallelism (ring attention over the sequence) has no ds_config "
                           "counterpart; DeepSpeed's Ulysses (sequence_parallel_size) splits differently",
    "parallelism.expert": "expert parallelism is set in the model code (deepspeed.moe ep_size), not in a ds_config",
    "parallelism.sequence_parallel": "Megatron's sequence parallelism belongs to its tensor parallelism",
}
_DEGREE_DEFAULT = {"parallelism.tensor": 1, "parallelism.pipeline": 1, "parallelism.virtual_pipeline": 1,
                   "parallelism.context": 1, "parallelism.expert": 1, "parallelism.sequence_parallel": False}

# Megatron's --lr-decay-style -> the DeepSpeed schedule of the same shape
SCHEDULES = {
    "cosine": ("WarmupCosineLR", "linear warmup from 0, then cosine decay to cos_min_ratio × lr over "
                                 "total_num_steps; Megatron decays to --min-lr over --lr-decay-iters the same way, but "
                                 "counts the warmup inside the decay span"),
    "linear": ("WarmupDecayLR", "linear warmup from 0, then linear decay to 0 over total_num_steps; Megatron decays "
                                "to --min-lr"),
    "constant": ("WarmupLR", "linear warmup to lr, then constant, as Megatron's constant style"),
}


def to_deepspeed(plan: Plan) -> tuple[Plan, dict[str, tuple[str, str]]]:
    """The Plan a ds_config would give for this Megatron Plan, and field -> (status, reason) for
    every field that does not carry over exactly."""
    out = copy.deepcopy(plan)
    out.passthrough.pop("megatron", None)
    status: dict[str, tuple[str, str]] = {}
    for dotted, reason in _PARALLEL.items():
        value = known(plan.get(dotted))
        if value is None:
            continue
        if value == _DEGREE_DEFAULT[dotted]:
            status[dotted] = ("exact", "the default: none")
        else:
            status[dotted] = ("dropped", reason)
        _clear(out, dotted)
    for dotted in ("model.layers", "model.hidden", "model.heads", "model.kv_heads", "model.vocab",
                   "batch.sequence_length"):
        if plan.get(dotted) is not None:
            status[dotted] = ("dropped", "a ds_config does not describe the model or the sequence length")
            _clear(out, dotted)
    for dotted in ("world.nodes", "world.gpus_per_node", "world.world_size"):
        if plan.get(dotted) is not None and not isinstance(plan.get(dotted), Unknown):
            status[dotted] = ("dropped", "the process count is the launcher's (deepspeed --num_nodes / --num_gpus), "
                                         "not a ds_config setting")
        _clear(out, dotted)
    if any(known(plan.get(d)) not in (None, 1) for d in ("parallelism.tensor", "parallelism.pipeline")):
        for dotted in ("batch.global_", "batch.micro"):
            if known(plan.get(dotted)) is not None:
                status[dotted] = ("approximate", "DeepSpeed divides train_batch_size by the data-parallel size of "
                                                 "the mpu given to initialize; without one, by the world size")
    if out.optimizer is not None and out.optimizer.name is None:
        out.optimizer.name = "AdamW"  # Megatron's default --optimizer adam is AdamW (keys.OPTIMIZERS)
    scheduler = out.scheduler
    if scheduler is not None:
        name = known(scheduler.name)
        lr = known(plan.optimizer.lr) if plan.optimizer is not None else None
        min_lr = known(scheduler.min_lr)
        if name == "constant" and not known(scheduler.warmup_steps) and not any("warmup" in k for k in scheduler.params):
            # no warm-up: the learning rate is constant from the first step, which is what DeepSpeed
            # does without a scheduler block (a WarmupLR would start at 0 and ramp up)
            out.scheduler = None
            status["scheduler.name"] = ("exact", "a constant learning rate: no scheduler, which DeepSpeed keeps "
                                                 "constant")
        elif name in SCHEDULES:
            target, reason = SCHEDULES[name]
            scheduler.name = target
            scheduler.warmup_type = "linear"
            scheduler.min_lr = None
            if name == "cosine" and lr and min_lr is not None:
                scheduler.params["cos_min_ratio"] = min_lr / lr
            elif name == "linear" and min_lr:
                reason += f" (here {min_lr})"
            if name in ("linear", "constant") and lr is not None:
                scheduler.max_lr = lr
            status["scheduler.name"] = ("approximate", reason)
            if min_lr is not None:
                status["scheduler.min_lr"] = ("approximate" if name == "cosine" or not min_lr else "dropped",
                                              "cos_min_ratio = min_lr / lr" if name == "cosine"
                                              else "DeepSpeed's schedule decays to 0")
        elif name is not None:
            status["scheduler.name"] = ("dropped", f"DeepSpeed has no schedule like Megatron's {name}")
            out.scheduler = None
    stage = known(plan.sharding.stage)
    if stage == 1:
        status["sharding.stage"] = ("exact", "the distributed optimizer shards optimizer state: ZeRO-1")
    if plan.activation_checkpointing is not None:
        status["activation_checkpointing"] = ("dropped", "DeepSpeed checkpoints activations where the model code "
                                                         "calls deepspeed.checkpointing; the ds_config only tunes it")
        out.activation_checkpointing = None
    if known(plan.communication.reduce_bucket_elements) is not None:
        status["communication.reduce_bucket_elements"] = ("approximate", "Megatron's --ddp-bucket-size counts "
                                                                         "parameters per bucket")
    if plan.offload.optimizer is not None:
        status["offload.optimizer"] = ("approximate", "Megatron's hybrid CPU optimizer becomes DeepSpeed's "
                                                      "optimizer offload to the CPU")
    return out, status


def _clear(plan: Plan, dotted: str) -> None:
    *parents, name = dotted.split(".")
    target: Any = plan
    for part in parents:
        target = getattr(target, part)
        if target is None:
            return
    setattr(target, name, None)
    plan.provenance.pop(dotted, None)


def deepspeed_schedule(plan: Plan):  # -> Scheduler | None
    """The Plan's scheduler, a decay shape named the Megatron / torchtitan / HF way ("linear",
    "cosine", "constant") as the DeepSpeed schedule of that shape (`to_deepspeed`); a DeepSpeed or torch schedule, or a shape DeepSpeed has none like, as it is."""
    scheduler = plan.scheduler
    if scheduler is None or not isinstance(scheduler.name, str):
        return scheduler
    from shardshift.resolve import DEFAULT_MARK, is_default

    where = plan.provenance.get("scheduler.name")
    if scheduler.name == "constant" and is_default(where) and (where.pointer or "").startswith(f"{DEFAULT_MARK}deepspeed"):
        # DeepSpeed's own default: a scheduler block without a type builds no scheduler, whatever
        # params it holds (engine._configure_lr_scheduler)
        return None
    if scheduler.name not in SCHEDULES:
        return scheduler
    from shardshift.plan import Plan as _Plan

    translated, _ = to_deepspeed(_Plan(optimizer=plan.optimizer, scheduler=scheduler))
    return translated.scheduler
