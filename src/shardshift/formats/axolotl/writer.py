"""Axolotl writer: a Plan -> an Axolotl training YAML that uses FSDP2, with a migration report.

- `convert(document)` of an Axolotl config edits its own text (shardshift.formats.yaml_write):
  only the keys whose Plan value changed are rewritten; comments, key order and quoting stay,
  so a plain round trip returns the text unchanged.
- From any other Plan (above all a ds_config) it writes a new config: `fsdp_version: 2` and an
  `fsdp_config` (reshard_after_forward from the ZeRO stage, offload_params from the offload
  blocks), precision (bf16 / fp16), batch (micro_batch_size, gradient_accumulation_steps),
  optimizer and lr_scheduler under Axolotl's names where the behaviour is the same, and every
  source setting in the report as exact / approximate / dropped / unknown with the reason.
  What Axolotl requires and the source cannot say (`base_model`, `datasets`, a `learning_rate`
  the Plan does not have) is written as the placeholder `FILL_IN` (shardshift.resolve.PLACEHOLDER)
  with a comment, and reported as unknown.

The Plan is a resolved one (shardshift.resolve): every value comes from a Plan field, whatever the
source format; a value the source framework chose by default is written explicitly wherever
Axolotl's own default differs (an fp32 run gets `bf16: false`, since Axolotl's default `bf16: auto`
trains bf16 where the GPU supports it).

Statuses and reasons for the ZeRO settings follow the DeepSpeed -> FSDP2 table
(shardshift.formats.deepspeed.fsdp2_explained): Axolotl runs FSDP2 through Accelerate's fully_shard, the same
engine the FSDP2 module uses.
"""

from __future__ import annotations

import copy
import os
from typing import Any

from shardshift.document import Conversion, Document, MappingEntry
from shardshift.formats.axolotl.keys import KEYS
from shardshift.resolve import PLACEHOLDER, is_default, placeholder_reason

BASE_MODEL = PLACEHOLDER
DATASETS = [{"path": PLACEHOLDER, "type": PLACEHOLDER}]
# key -> (the comment at the placeholder, what the report says to fill in)
PLACEHOLDERS = {
    "base_model": ("shardshift: the model to train (a Hugging Face model id or a local path)",
                   "base_model: the model to train (a Hugging Face model id or a local path); Axolotl's schema "
                   "requires it"),
    "datasets": ("shardshift: your dataset (path) and its prompt format (type, e.g. alpaca, chat_template)",
                 "datasets: the dataset path and its prompt format (type); Axolotl requires datasets or "
                 "pretraining_dataset"),
    "learning_rate": ("shardshift: the peak learning rate (the source does not say it)",
                      "learning_rate: the peak learning rate, which the source does not say (its optimizer is "
                      "built elsewhere); Axolotl's schema requires it"),
}
E, A, X, U = "exact", "approximate", "dropped", "unknown"

# Plan field -> Axolotl top-level key, for fields written as they are (KEYS, inverted)
FIELD_KEYS = {dotted: key for key, (dotted, _) in KEYS.items()}

# DeepSpeed / torch optimizer name (the Plan's optimizer.name) -> (Axolotl optimizer, status, reason)
OPTIMIZERS: dict[str, tuple[str | None, str, str]] = {
    "adamw": ("adamw_torch_fused", E, "the same AdamW update (decoupled weight decay), with torch's fused kernel "
              "instead of DeepSpeed's FusedAdam / DeepSpeedCPUAdam"),
    "sgd": ("sgd", E, "torch.optim.SGD"),
    "adagrad": ("adagrad", E, "torch.optim.Adagrad"),
    "rmsprop": ("rmsprop", E, "torch.optim.RMSprop"),
    "lion": ("lion_32bit", A, "bitsandbytes' 32-bit Lion instead of DeepSpeed's FusedLion (same update rule)"),
    "muon": ("muon", A, "Axolotl's own Muon implementation, not DeepSpeed's (parameter grouping differs)"),
    "adafactor": ("adafactor", A, "transformers' Adafactor, whose defaults differ from torch's"),
}
SCHEDULERS: dict[str, tuple[str | None, str, str]] = {
    "WarmupLR": ("constant_with_warmup", A, "transformers' constant_with_warmup warms up linearly from 0 to "
                 "learning_rate; DeepSpeed's WarmupLR warms up from warmup_min_lr to warmup_max_lr, by default on "
                 "a log curve"),
    "WarmupDecayLR": ("linear", A, "transformers' linear schedule warms up linearly from 0 and decays to 0 at the "
                      "end of training (max_steps / num_epochs), not at DeepSpeed's total_num_steps; DeepSpeed's "
                      "warmup is log-shaped by default"),
    "WarmupCosineLR": ("cosine", A, "transformers' cosine schedule warms up linearly from 0 and decays to 0 at "
                       "the end of training; DeepSpeed's ends at cos_min_ratio x lr after total_num_steps"),
    # the neutral names other readers give (Megatron --lr-decay-style, torchtitan decay_type, HF lr_scheduler_type)
    "linear": ("linear", A, "transformers' linear schedule: linear warm-up from 0, then a linear decay to 0 at the end "
               "of training (max_steps / num_epochs), not at the source's own decay end or minimum lr"),
    "cosine": ("cosine", A, "transformers' cosine schedule: linear warm-up from 0, then a cosine decay to 0 at the end "
               "of training (max_steps / num_epochs), not at the source's own decay end or minimum lr"),
    "constant": ("constant_with_warmup", A, "transformers' constant_with_warmup: a linear warm-up from 0 (none with "
                 "warmup_steps 0), then the constant learning_rate"),
    "constant_with_warmup": ("constant_with_warmup", E, "the same schedule (transformers')"),
    "inverse-square-root": ("inverse_sqrt", A, "transformers' inverse_sqrt schedule: its time scale is the warm-up, "
                            "not Megatron's"),
    "inverse_sqrt": ("inverse_sqrt", E, "the same schedule (transformers')"),
    "cosine_with_min_lr": ("cosine_with_min_lr", E, "the same schedule (transformers')"),
    "cosine_with_restarts": ("cosine_with_restarts", E, "the same schedule (transformers')"),
    "polynomial": ("polynomial", E, "the same schedule (transformers')"),
    "WSD": ("warmup_stable_decay", A, "transformers' warmup_stable_decay: its phase lengths come from "
            "lr_scheduler_kwargs, not from the source's"),
}


def _known(value: Any) -> Any:
    from shardshift.plan import known

    return known(value)


class _Out:
    """The emitted mapping and the report entries, per Plan field."""

    def __init__(self) -> None:
        self.data: dict[str, Any] = {}
        self.fields: dict[str, tuple[str, str | None, str]] = {}  # Plan field -> (status, target, reason)

    def put(self, pointer: str, value: Any) -> None:
        node = self.data
        parts = pointer.strip("/").split("/")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value

    def say(self, dotted: str, status: str, target: str | None, reason: str) -> None:
        self.fields[dotted] = (status, target, reason)


def _from_plan(plan) -> _Out:
    out = _Out()
    rest = copy.deepcopy(plan.passthrough.get("axolotl", {}))
    out.data["base_model"] = rest.pop("base_model", BASE_MODEL)
    _batch(plan, out)
    _precision(plan, out)
    _optimizer(plan, out)
    _scheduler(plan, out)
    if _known(plan.gradient_clipping) is not None:
        out.put("/max_grad_norm", plan.gradient_clipping)
        out.say("gradient_clipping", E, "max_grad_norm", "clip_grad_norm_ on the global norm"
                if plan.gradient_clipping else "0 disables clipping in both")
    if "learning_rate" not in out.data:
        out.put("/learning_rate", PLACEHOLDER)  # required by Axolotl's schema
        lr = plan.optimizer.lr if plan.optimizer is not None else None
        if lr is not None:
            out.say("optimizer.lr", U, "learning_rate", f"{lr!r} is not known before the run: "
                    + placeholder_reason(PLACEHOLDERS["learning_rate"][1]))
    _fsdp(plan, out)
    _parallel(plan, out)
    if "datasets" not in rest:
        out.data["datasets"] = copy.deepcopy(DATASETS)
    for key, value in rest.items():
        out.data.setdefault(key, value)
    return out


def _positive(value: Any) -> int | None:
    value = _known(value)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def data_parallel(plan) -> int | None:
    """The source's data-parallel size: its data-parallel degrees, else the world over the model-parallel ones."""
    replicate, shard = (_positive(plan.get(f"parallelism.data_parallel_{axis}")) for axis in ("replicate", "shard"))
    if replicate or shard:
        return (replicate or 1) * (shard or 1)
    world = _positive(plan.world.world_size)
    if world is None:
        nodes, per_node = _positive(plan.world.nodes), _positive(plan.world.gpus_per_node)
        world = nodes * per_node if nodes and per_node else None
    model = 1
    for axis in ("tensor", "pipeline", "context"):
        model *= _positive(plan.get(f"parallelism.{axis}")) or 1
    return world // model if world is not None and world % model == 0 else None


def _batch(plan, out: _Out) -> None:
    micro = plan.batch.micro
    if _known(micro) is not None:
        out.put("/micro_batch_size", micro)
        out.say("batch.micro", E, "micro_batch_size", "the same per-GPU micro batch")
    elif micro is not None:
        out.say("batch.micro", U, "micro_batch_size", f"{micro!r}: filled at run time from the Trainer's arguments; "
                "Axolotl's default micro_batch_size 1 applies: set yours")
    accumulation, total = plan.batch.accumulation, plan.batch.global_
    if _known(accumulation) is not None:
        out.put("/gradient_accumulation_steps", accumulation)
        out.say("batch.accumulation", E, "gradient_accumulation_steps", "the same number of micro-batches per "
                "optimizer step")
    elif _positive(total) and _positive(micro):
        ranks = data_parallel(plan)
        if ranks and total % (micro * ranks) == 0:
            out.put("/gradient_accumulation_steps", total // (micro * ranks))
            out.say("batch.accumulation", E, "gradient_accumulation_steps", f"global batch {total} / (micro batch "
                    f"{micro} x {ranks} data-parallel ranks)")
        else:
            out.say("batch.global_", U, "gradient_accumulation_steps", f"fill in gradient_accumulation_steps = global "
                    f"batch {total} / (micro batch {micro} x the data-parallel ranks): the source does not say how "
                    "many ranks run, and without it Axolotl accumulates 1 micro-batch per step")
    elif accumulation is not None:
        out.say("batch.accumulation", U, "gradient_accumulation_steps", f"{accumulation!r}: filled at run time; "
                "Axolotl's default gradient_accumulation_steps 1 applies: set yours")
    if total is not None and "batch.global_" not in out.fields:
        out.say("batch.global_", E if _known(total) is not None else U, None,
                "Axolotl derives the global batch: micro_batch_size x gradient_accumulation_steps x the number of "
                "GPUs (it has no key for it; batch_size next to gradient_accumulation_steps is an error)")
    if _known(plan.batch.sequence_length) is not None:
        out.put("/sequence_len", plan.batch.sequence_length)
        out.say("batch.sequence_length", E, "sequence_len", "the same sequence length")


def _precision(plan, out: _Out) -> None:
    dtype = plan.precision.param_dtype
    if dtype == "bf16":
        out.put("/bf16", True)
        out.say("precision.param_dtype", E, "bf16", "bf16 autocast with fp32 master weights "
                "(ACCELERATE_MIXED_PRECISION=bf16)")
    elif dtype == "fp16":
        out.put("/bf16", False)
        out.put("/fp16", True)
        out.say("precision.param_dtype", E, "fp16", "fp16 autocast with fp32 master weights and dynamic loss "
                "scaling (torch GradScaler)")
    elif dtype == "fp32":
        out.put("/bf16", False)
        out.say("precision.param_dtype", E, "bf16", "bf16: false (and no fp16): fp32 training; Axolotl's default "
                "bf16: auto would train bf16 on GPUs that support it")
    elif dtype is not None:
        out.say("precision.param_dtype", U if _known(dtype) is None else A, "bf16",
                f"{dtype!r}: written as Axolotl's default bf16: auto (bf16 where the GPU supports it, else fp16)")
    for name in ("loss_scale", "initial_scale_power", "loss_scale_window", "hysteresis", "min_loss_scale"):
        if plan.get(f"precision.{name}") is not None:
            out.say(f"precision.{name}", A if name != "loss_scale" or plan.get(f"precision.{name}") == 0 else X,
                    None, "Accelerate's GradScaler uses its own dynamic scaling (init 2**16, growth interval 2000); "
                    "Axolotl has no key for the scaler")
    if plan.precision.reduce_dtype is not None:
        out.say("precision.reduce_dtype", X, None, "Axolotl has no key for FSDP2's reduce_dtype (Accelerate reduces "
                "in the parameter dtype of the mixed precision policy)")


def _optimizer(plan, out: _Out) -> None:
    opt = plan.optimizer
    if opt is None:
        return
    name = _known(opt.name)  # known only at run time: marked unknown in the report, never written
    if name is not None:
        lowered = name.lower()
        if lowered in ("adam", "adamw"):
            adamw = opt.decoupled_weight_decay is not False or lowered == "adamw"
            if adamw or not opt.weight_decay:
                target, status, reason = OPTIMIZERS["adamw"]
                if not adamw:
                    reason = "Adam with no weight decay is AdamW with no weight decay; " + reason
            else:
                target, status, reason = ("adamw_torch_fused", A, "Adam with L2 weight decay (adam_w_mode: false) "
                                          "has no Axolotl name: written as AdamW (decoupled weight decay)")
        else:
            target, status, reason = OPTIMIZERS.get(lowered, (None, X, f"Axolotl has no optimizer named like "
                                                                     f"{name}: Axolotl's default adamw_torch_fused "
                                                                     f"applies"))
        if target is not None:
            out.put("/optimizer", target)
        out.say("optimizer.name", status, "optimizer" if target else None, reason)
    for dotted, key in (("optimizer.lr", "learning_rate"), ("optimizer.weight_decay", "weight_decay"),
                        ("optimizer.eps", "adam_epsilon")):
        value = plan.get(dotted)
        if value is None:
            continue
        if _known(value) is None:
            out.say(dotted, U, key, f"{value!r}: filled at run time; Axolotl's default applies")
            continue
        out.put(f"/{key}", value)
        out.say(dotted, E, key, "the same value")
    betas = opt.betas
    if betas is not None:
        if isinstance(betas, list) and len(betas) == 2 and all(_known(b) is not None for b in betas):
            out.put("/adam_beta1", betas[0])
            out.put("/adam_beta2", betas[1])
            out.say("optimizer.betas", E, "adam_beta1", "adam_beta1 and adam_beta2")
        else:
            out.say("optimizer.betas", U, "adam_beta1", f"{betas!r}: filled at run time; the defaults apply")
    for param in opt.params:
        out.say(f"optimizer.params.{param}", X, None, f"{param} is a setting of the source's optimizer class; "
                "Axolotl passes no such argument (optim_args may, for some transformers optimizers)")


def _scheduler(plan, out: _Out) -> None:
    sched = plan.scheduler
    if sched is None:
        return
    if sched.name is not None:
        target, status, reason = SCHEDULERS.get(sched.name, (None, X, f"Axolotl and transformers have no {sched.name} "
                                                                    "schedule: Axolotl's default cosine applies"))
        if target is not None:
            out.put("/lr_scheduler", target)
        out.say("scheduler.name", status, "lr_scheduler" if target else None, reason)
    if sched.warmup_steps is not None:
        if _known(sched.warmup_steps) is not None:
            out.put("/warmup_steps", sched.warmup_steps)
            out.say("scheduler.warmup_steps", E, "warmup_steps", "the same number of warmup steps"
                    + (" (Axolotl bumps 1 to 2)" if sched.warmup_steps == 1 else ""))
        else:
            out.say("scheduler.warmup_steps", U, "warmup_steps", "filled at run time: Axolotl's default warmup "
                    "(min(3% of the steps, 100)) applies")
    for dotted, why in (("scheduler.total_steps", "transformers schedules end with the training run (max_steps or "
                         "num_epochs); set max_steps to this value if that is what you want"),
                        ("scheduler.min_lr", "transformers' warmup starts from 0"),
                        ("scheduler.max_lr", "learning_rate is the peak rate"),
                        ("scheduler.warmup_type", "transformers warms up linearly")):
        if plan.get(dotted) is not None:
            out.say(dotted, A if dotted == "scheduler.max_lr" else X, None, why)
    if sched.max_lr is not None and _known(sched.max_lr) is not None and "learning_rate" not in out.data \
            and (plan.optimizer is None or _known(plan.optimizer.lr) is None):
        out.put("/learning_rate", sched.max_lr)
        out.say("scheduler.max_lr", E, "learning_rate", "the peak learning rate of the schedule")
    for param in sched.params:
        out.say(f"scheduler.params.{param}", X, None, "no Axolotl key for it")


def _fsdp(plan, out: _Out) -> None:
    stage = plan.sharding.stage
    reshard = plan.sharding.reshard_after_forward
    offload = [t for t in (plan.offload.params, plan.offload.optimizer) if t is not None and t.device not in
               (None, "none")]
    if stage in (None, "auto") and reshard is None and not offload and plan.activation_checkpointing is None:
        return
    out.put("/fsdp_version", 2)
    if isinstance(reshard, bool):
        out.put("/fsdp_config/reshard_after_forward", reshard)
        out.say("sharding.reshard_after_forward", E, "fsdp_config.reshard_after_forward", "the same setting")
    elif stage == 3:
        out.put("/fsdp_config/reshard_after_forward", True)
        out.say("sharding.stage", E, "fsdp_config.reshard_after_forward", "fully_shard on each layer: parameters, "
                "gradients and optimizer state sharded, parameters freed after forward (ZeRO-3)")
    elif stage in (0, 1, 2):
        out.put("/fsdp_config/reshard_after_forward", False)
        if stage == 2:
            why = ("gathered parameters stay from forward to backward, as in ZeRO-2, but FSDP2 still shards them "
                   "between steps (less memory, one more all-gather per step)")
        else:
            why = (f"ZeRO-{stage} has no FSDP2 equivalent: sharded like ZeRO-2 (reshard_after_forward: false), with "
                   "the same math, less memory and more communication")
        out.say("sharding.stage", A, "fsdp_config.reshard_after_forward", why)
    else:
        out.put("/fsdp_config/reshard_after_forward", True)
        out.say("sharding.stage", U if stage == "auto" else A, "fsdp_config.reshard_after_forward",
                f"stage {stage!r}: written as FSDP2's default reshard_after_forward: true")
    out.put("/fsdp_config/auto_wrap_policy", "TRANSFORMER_BASED_WRAP")
    out.put("/fsdp_config/state_dict_type", "FULL_STATE_DICT")
    for dotted, target in (("offload.params", plan.offload.params), ("offload.optimizer", plan.offload.optimizer)):
        if target is None or target.device in (None, "none"):
            continue
        if target.device == "cpu":
            out.put("/fsdp_config/offload_params", True)
            out.say(f"{dotted}.device", A, "fsdp_config.offload_params",
                    "FSDP2's CPUOffloadPolicy offloads parameters, gradients and the optimizer step together; it "
                    "cannot offload only the optimizer state" if dotted == "offload.optimizer" else
                    "FSDP2's CPUOffloadPolicy offloads parameters together with gradients and the optimizer step")
            if target.pin_memory is False:
                out.put("/fsdp_config/cpu_offload_pin_memory", False)
                out.say(f"{dotted}.pin_memory", E, "fsdp_config.cpu_offload_pin_memory", "unpinned host memory")
            elif target.pin_memory is not None:
                out.say(f"{dotted}.pin_memory", E, None, "FSDP2 pins offloaded memory by default")
        else:
            out.say(f"{dotted}.device", X, None, "NVMe offload: FSDP2 cannot offload to NVMe")
            if target.nvme_path is not None:
                out.say(f"{dotted}.nvme_path", X, None, "NVMe offload: FSDP2 cannot offload to NVMe")
    ckpt = plan.activation_checkpointing
    if ckpt is not None and ckpt.enabled:
        out.put("/fsdp_config/activation_checkpointing", True)
        out.say("activation_checkpointing.enabled", E, "fsdp_config.activation_checkpointing",
                "checkpoint_wrapper on each transformer layer (Axolotl's FSDP2 preparation)")
    if ckpt is not None:
        for name in ("partition_activations", "cpu_checkpointing", "contiguous_memory_optimization",
                     "number_checkpoints", "synchronize_checkpoint_boundary", "profile"):
            if getattr(ckpt, name) is not None:
                status = E if getattr(ckpt, name) is False else X
                out.say(f"activation_checkpointing.{name}", status, None,
                        "off in both" if status == E else "DeepSpeed's own activation checkpointing setting: "
                        "checkpoint_wrapper has no such option")


def _parallel(plan, out: _Out) -> None:
    par = plan.parallelism
    for dotted, key in (("parallelism.tensor", "tensor_parallel_size"), ("parallelism.context", "context_parallel_size"),
                        ("parallelism.data_parallel_shard", "dp_shard_size"),
                        ("parallelism.data_parallel_replicate", "dp_replicate_size")):
        value = plan.get(dotted)
        if value is None or value == 1:
            if value == 1:
                out.say(dotted, E, None, "1: off in both")
            continue
        if _known(value) is None:
            out.say(dotted, U, key, f"{value!r}: known only at run time")
            continue
        out.put(f"/{key}", value)
        out.say(dotted, A if dotted in ("parallelism.tensor", "parallelism.context") else E, key,
                "Accelerate's ParallelismConfig through Axolotl (PARALLELISM_CONFIG_*); the algorithm differs from "
                "the source's (ring attention for context parallelism, DTensor TP)" if dotted in
                ("parallelism.tensor", "parallelism.context") else "the same mesh dimension")
    if _positive(par.expert) and par.expert > 1:
        out.say("parallelism.expert", X, None, "not written: Axolotl's expert_parallel_size needs its expert-parallel "
                "integration with FSDP2, FULL_STATE_DICT checkpoints and no tensor parallelism (axolotl 0.21 "
                "validate_expert_parallel_topology), a different MoE implementation from the source's")
    if par.pipeline not in (None, 1):
        out.say("parallelism.pipeline", X, None, "Axolotl has no pipeline parallelism: on the same GPUs the pipeline "
                "ranks become data-parallel ranks, so the global batch grows by the pipeline degree unless "
                "gradient_accumulation_steps is lowered to match")


def _dump(data: dict) -> tuple[str, list[MappingEntry]]:
    """The YAML text, each placeholder with its comment, and the placeholders' report entries."""
    from shardshift.formats import yaml_write

    edit = yaml_write.new(data)
    entries = []
    for key, (comment, what) in PLACEHOLDERS.items():
        value = data.get(key)
        if value == PLACEHOLDER or (key == "datasets" and value == DATASETS):
            edit.comment(f"/{key}/0/path" if key == "datasets" else f"/{key}", comment)
            entries.append(MappingEntry("", 1, 1, U, key, placeholder_reason(what)))
    return edit.dump(), entries


def write(plan) -> str:
    """An Axolotl YAML for `plan` (FSDP2 when the Plan shards)."""
    return _dump(_from_plan(plan).data)[0]


def convert(document: Document) -> Conversion:
    """An Axolotl config for `document`, with what happened to every source setting."""
    if document.plan is None:
        raise ValueError(f"{document.path} has no Plan to write")
    if document.format == "axolotl":
        return _round_trip(document)
    plan = copy.deepcopy(document.plan)
    out = _from_plan(plan)
    text, placeholders = _dump(out.data)
    entries = _report(document, out) + placeholders
    header = (f"# Axolotl config written by shardshift from {os.path.basename(document.path)} ({document.format}).\n"
              + (f"# Fill in every {PLACEHOLDER}, then launch it with: axolotl train <this file>\n" if placeholders
                 else "# Launch it with: axolotl train <this file>\n"))
    conversion = Conversion(header + text, entries)
    conversion.mark_unknowns(plan)
    return conversion


def _report(document: Document, out: _Out) -> list[MappingEntry]:
    """The explanations of the conversion, for any source format: one entry per setting of the
    source that set a Plan field (found by the Plan's provenance), with what the writer did and
    why; for a ds_config, its other settings from the DeepSpeed -> FSDP2 table; and the values the
    source framework chose by default that are written explicitly because Axolotl's differ."""
    plan = document.plan
    by_pointer: dict[str, str] = {}
    for dotted, where in plan.provenance.items():
        if where is not None and not is_default(where):  # code (FSDP2) records no pointer: the field's own
            by_pointer.setdefault(where.pointer or field_pointer(dotted), dotted)
    entries = []
    seen: set[str] = set()
    for pointer, line, column in document.settings():
        seen.add(pointer)
        dotted = by_pointer.get(pointer)
        fact = _fact(out, dotted) if dotted else None
        if fact is None:
            fact = _fallback(document, pointer, dotted)
        if fact is not None:
            entries.append(MappingEntry(pointer, line, column, *fact))
    for dotted, where in plan.provenance.items():  # settings a file's settings() does not list (flags, code)
        if where is None or is_default(where) or where.file != document.path or plan.get(dotted) is None:
            continue
        source = where.pointer or field_pointer(dotted)
        if source in seen or any(other.startswith(source + "/") for other in seen):
            continue
        seen.add(source)
        entries.append(MappingEntry(source, where.line, where.column, *(_fact(out, dotted) or (X, None, _no_key(dotted)))))
    for dotted, where in plan.provenance.items():
        fact = out.fields.get(dotted)
        if is_default(where) and fact is not None and fact[1] is not None and fact[0] != U:
            status, target, reason = fact
            entries.append(MappingEntry(dotted, 1, 1, status, target, f"not set in {os.path.basename(document.path)}: "
                                        f"{plan.get(dotted)!r} is the {where.pointer}; {reason}"))
    return entries


def field_pointer(dotted: str) -> str:
    """The pointer of a Plan field in the Plan's own data (`batch.global_` -> /batch/global)."""
    return "/" + "/".join("global" if part == "global_" else part for part in dotted.split("."))


def _fact(out: _Out, dotted: str) -> tuple[str, str | None, str] | None:
    fact = out.fields.get(dotted)
    if fact is None and dotted.startswith("offload."):
        fact = out.fields.get(dotted.rsplit(".", 1)[0] + ".device")
    return fact


NO_KEY = {
    "world": "Axolotl has no key for the number of processes: the launcher decides it (accelerate launch / torchrun "
             "--nproc-per-node)",
    "model": "Axolotl takes the model's shape from base_model",
    "communication": "Axolotl has no key for communication tuning (FSDP2's collectives are not tuned by bucket sizes)",
    "parallelism.virtual_pipeline": "Axolotl has no pipeline parallelism",
    "parallelism.sequence_parallel": "Axolotl has no Megatron-style sequence parallelism (context_parallel_size is "
                                     "ring attention)",
}


def _no_key(dotted: str) -> str:
    return next((reason for prefix, reason in NO_KEY.items() if dotted == prefix or dotted.startswith(prefix + ".")),
                f"Axolotl has no key for {dotted}")


def _fallback(document: Document, pointer: str, dotted: str | None) -> tuple[str, str | None, str] | None:
    value = _value(document.data, pointer)
    if value == "auto":
        return U, None, ('"auto": filled at run time from the Hugging Face Trainer\'s arguments; the Axolotl config '
                         "leaves Axolotl's default in force (bf16: auto for the precision flags)")
    if document.format == "deepspeed" and pointer in ("/fp16/enabled", "/bf16/enabled") and value is False:
        return E, None, "off in both"
    if document.format == "deepspeed" and pointer.endswith("/stage3_gather_16bit_weights_on_model_save"):
        return A, "fsdp_config.state_dict_type", ("FULL_STATE_DICT: the saved model is one full state dict, in "
                                                  "the parameters' dtype rather than 16-bit")
    if document.format == "deepspeed":  # the DeepSpeed -> FSDP2 table explains the ds_config's own settings
        from shardshift.formats.deepspeed.fsdp2_explained import row_for

        row = row_for(pointer)
        if row is not None:
            if value in row.off:
                return E, None, "off in both"
            if row.target is None and row.reason:
                return row.status, None, row.reason
            if row.status == X:
                return X, None, row.reason or "not carried over"
            return X, None, ("Axolotl has no key for it" + (f" (the FSDP2 module: {row.reason})" if row.reason
                                                            else ""))
    if dotted is not None:
        return X, None, _no_key(dotted)
    return None


def _value(data: Any, pointer: str) -> Any:
    from shardshift.source import value_at

    return value_at(data, pointer)


# Plan fields the reader lifts from one scalar: where to write them when the text has no key yet
SCALAR_DEFAULTS = {
    "sharding.reshard_after_forward": "/fsdp_config/reshard_after_forward",
    "activation_checkpointing.enabled": "/gradient_checkpointing",
    "offload.params.pin_memory": "/fsdp_config/cpu_offload_pin_memory",
}


def _round_trip(document: Document) -> Conversion:
    """Edit the original text: only the keys whose Plan value differs from what the text says."""
    from shardshift.formats import yaml_write
    from shardshift.formats.axolotl.reader import read

    plan = document.plan
    original = read(document.text, document.path).plan
    edit = yaml_write.load(document.text)
    mine, theirs = dict(plan.leaves()), dict(original.leaves())
    entries: list[MappingEntry] = []

    def where(dotted: str, default: str) -> str:
        place = original.provenance.get(dotted)
        return place.pointer if place is not None and place.pointer else default

    for dotted, value in mine.items():
        if dotted.startswith(("passthrough", "provenance")) or theirs.get(dotted) == value or _known(value) is None:
            continue
        if dotted in FIELD_KEYS:
            edit.set(where(dotted, f"/{FIELD_KEYS[dotted]}"), value)
        elif dotted in SCALAR_DEFAULTS:
            edit.set(where(dotted, SCALAR_DEFAULTS[dotted]), value)
        elif dotted == "offload.params.device":
            edit.set(where(dotted, "/fsdp_config/offload_params"), value == "cpu")
        elif dotted == "optimizer.betas" and isinstance(value, list) and len(value) == 2:
            edit.set("/adam_beta1", value[0])
            edit.set("/adam_beta2", value[1])
        elif dotted == "precision.param_dtype" and value in ("bf16", "fp16", "fp32", "fp8"):
            edit.set("/bf16", value == "bf16")
            if value == "fp16" or edit.has("/fp16"):
                edit.set("/fp16", value == "fp16")
            if value == "fp8" or edit.has("/fp8"):
                edit.set("/fp8", value == "fp8")
        else:
            entries.append(MappingEntry(dotted, 1, 1, X, None, f"{dotted} changed in the Plan, but Axolotl has no "
                                        "key the writer knows for it: the text keeps its value"))
    rest = plan.passthrough.get("axolotl", {})
    for key, value in rest.items():
        if original.passthrough.get("axolotl", {}).get(key) != value:
            edit.set((key,), value)
    entries = [MappingEntry(pointer, line, column, E, pointer, "same key")
               for pointer, line, column in document.settings()] + entries
    conversion = Conversion(edit.dump(), entries)
    conversion.mark_unknowns(plan)
    return conversion
