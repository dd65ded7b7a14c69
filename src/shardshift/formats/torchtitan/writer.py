"""torchtitan train-config TOML (v0.2.2, the last release that reads one): the Plan written as a TOML,
with a report of what carried over.

A torchtitan source is written back by editing its own text: a value that changed is replaced in
place (its comment, the key order and the rest of the file stay as written), a new key goes at the
end of its section; an unchanged Plan gives the text back unchanged. From another format the TOML
is built from the Plan, section by section. What each Plan field becomes (torchtitan.md §2, §6):

- degrees -> `[parallelism]` `*_degree` (exact); `sequence_parallel` true with tensor parallelism is
  what torchtitan always does (exact), false cannot be had (dropped); virtual pipeline stages have no
  degree (dropped: torchtitan sets `pipeline_parallel_layers_per_stage`, which needs the layer count);
- batch -> `training.local_batch_size`, `global_batch_size`, `seq_len` (exact); an accumulation of
  1 is `global_batch_size = -1`; another accumulation becomes a global batch only when the world
  size is known (torchtitan derives accumulation = global / (local × replicate × shard));
- precision: bf16 / fp32 param -> `mixed_precision_param` (exact; fp16 has no counterpart),
  fp32 reduce -> `mixed_precision_reduce` (the only choice), fp8 -> the "quantize.linear.float8"
  converter (approximate: torchtitan's own recipe); loss scaling is dropped (bf16 needs none);
- optimizer: Adam / AdamW with lr, eps, weight_decay, betas (exact); other optimizers are dropped
  (torchtitan raises NotImplementedError for any other name), as are their extra params;
- schedule: warmup_steps, total_steps, decay_type (linear / sqrt / cosine), decay_ratio,
  min_lr_factor (exact from torchtitan; approximate from others: torchtitan's warm-up is linear);
  min_lr -> min_lr_factor = min_lr / lr (approximate);
- `gradient_clipping` -> `training.max_norm` (exact);
- activation checkpointing on -> `mode = "full"` (approximate: every block), off -> "none";
- ZeRO stage 3 -> FSDP over the data-parallel ranks (`data_parallel_shard_degree` -1, exact);
  stage 1 / 2 -> FSDP with `fsdp_reshard_after_forward = "never"` (approximate: parameters stay
  gathered between forward and backward like ZeRO-2, but FSDP2 still shards them at rest);
  stage 0 (plain DDP) -> `data_parallel_shard_degree = 1` with the replicate degree when the world
  size is known; reshard_after_forward -> "always" / "never" (exact);
- CPU offload of optimizer and parameters -> `training.enable_cpu_offload` (exact when both are on
  the CPU, approximate when only one is: torchtitan offloads parameters, gradients and optimizer
  state together); NVMe is dropped;
- communication tuning, the world (NGPU / torchrun decide it), the model shape (the model flavor
  decides it) and other formats' passthrough are dropped, each with the reason.
"""

from __future__ import annotations

import datetime
import json
import math
from typing import TYPE_CHECKING, Any

from shardshift.document import Conversion, MappingEntry
from shardshift.plan import known, without_unknowns
from shardshift.resolve import is_default

if TYPE_CHECKING:
    from shardshift.document import Document
    from shardshift.plan import Plan

FORMAT = "torchtitan"
ORDER = ("job", "profiling", "metrics", "model", "optimizer", "lr_scheduler", "training", "parallelism", "checkpoint",
         "activation_checkpoint", "compile", "quantize")
DTYPES = {"bf16": "bfloat16", "fp32": "float32"}
FLOAT8 = "quantize.linear.float8"
# optimizer names (lower case, no underscores) that are the AdamW update: torch's, fused or not, and the
# Hugging Face / Axolotl spellings of it (the 8-bit and paged ones keep the update, not the state's precision)
ADAMW = frozenset({"adamw", "adamwtorch", "adamwtorchfused", "fusedadamw", "adamwhf", "adamwapexfused",
                   "adamwbnb8bit", "adamw8bit", "pagedadamw", "pagedadamw8bit", "pagedadamw32bit", "adamwtorchxla"})
# DeepSpeed schedule names -> torchtitan's decay_type (torchtitan warms up linearly and decays to min_lr_factor)
DECAYS = {"WarmupDecayLR": "linear", "WarmupCosineLR": "cosine"}


class Emitted:
    """A TOML key the Plan gives: its dotted key, value, Plan field, and how exactly."""

    __slots__ = ("key", "value", "field", "status", "reason")

    def __init__(self, key: str, value: Any, field: str, status: str = "exact", reason: str = "") -> None:
        self.key, self.value, self.field, self.status, self.reason = key, value, field, status, reason


def emit(plan: Plan, source: str | None = None) -> tuple[list[Emitted], dict[str, str]]:
    """The keys the Plan gives and, for the set fields with no key, why (field -> reason).
    `source` is the format the Plan was read from (torchtitan: every key is exact)."""
    plan = without_unknowns(plan)
    out: list[Emitted] = []
    dropped: dict[str, str] = {}
    same = source == FORMAT
    rest = plan.passthrough.get(FORMAT, {})

    def value(dotted: str) -> Any:
        return known(plan.get(dotted))

    def add(key: str, val: Any, field: str, status: str = "exact", reason: str = "") -> None:
        out.append(Emitted(key, val, field, "exact" if same else status, "" if same else reason))

    p = plan.parallelism
    for field, key in (("data_parallel_replicate", "data_parallel_replicate_degree"),
                       ("data_parallel_shard", "data_parallel_shard_degree"), ("tensor", "tensor_parallel_degree"),
                       ("pipeline", "pipeline_parallel_degree"), ("context", "context_parallel_degree"),
                       ("expert", "expert_parallel_degree")):
        degree = known(getattr(p, field))
        if isinstance(degree, int):
            add(f"parallelism.{key}", degree, f"parallelism.{field}")
        elif getattr(p, field) == "auto":
            dropped[f"parallelism.{field}"] = '"auto" has no torchtitan counterpart: the degree is left to its default'
    if p.virtual_pipeline is not None:
        dropped["parallelism.virtual_pipeline"] = ("torchtitan sets the stages per rank with "
                                                   "pipeline_parallel_layers_per_stage and a multi-stage schedule, "
                                                   "which need the model's layer count")
    if p.sequence_parallel is not None:
        if p.sequence_parallel and (known(p.tensor) or 1) > 1:
            out.append(Emitted("", None, "parallelism.sequence_parallel", "exact",
                               "torchtitan always applies sequence parallelism with tensor parallelism"))
        elif p.sequence_parallel:
            dropped["parallelism.sequence_parallel"] = "sequence parallelism needs tensor parallelism in torchtitan"
        else:
            dropped["parallelism.sequence_parallel"] = ("torchtitan always applies sequence parallelism with tensor "
                                                        "parallelism: it cannot be turned off")
    _batch(plan, add, dropped, rest)
    _precision(plan, add, dropped, rest)
    _optimizer(plan, add, dropped)
    _scheduler(plan, add, dropped)
    clip = value("gradient_clipping")
    if clip is not None:
        add("training.max_norm", float(clip), "gradient_clipping")
    _checkpointing(plan, add, dropped, rest)
    _sharding(plan, add, dropped, rest)
    _offload(plan, add, dropped)
    for section, reason in (("communication", "torchtitan has no setting for it: FSDP2 communication is not tuned "
                                              "by bucket sizes in a torchtitan TOML"),
                            ("world", "torchtitan takes the world size from the launcher (NGPU / torchrun "
                                      "--nproc_per_node), not from the TOML"),
                            ("model", "torchtitan takes the model shape from model.name and model.flavor")):
        for dotted, _ in getattr(plan, section).to_data().items():
            if getattr(plan, section).to_data()[dotted] is not None:
                dropped[f"{section}.{dotted}"] = reason
    return out, dropped


def _source_table(rest: dict, name: str) -> dict:
    """The source's table `name` (empty when absent, or when the source wrote a value there)."""
    table = rest.get(name)
    return table if isinstance(table, dict) else {}


def _batch(plan, add, dropped, rest) -> None:
    b = plan.batch
    if isinstance(known(b.micro), int):
        add("training.local_batch_size", b.micro, "batch.micro")
    if isinstance(known(b.sequence_length), int):
        add("training.seq_len", b.sequence_length, "batch.sequence_length")
    if isinstance(known(b.global_), int):
        add("training.global_batch_size", b.global_, "batch.global_")
    accumulation = known(b.accumulation)
    if isinstance(accumulation, int) and isinstance(known(b.global_), int):
        add("", None, "batch.accumulation", "exact", "torchtitan derives accumulation = global_batch_size / "
            "(local_batch_size × data-parallel ranks)")
    if isinstance(accumulation, int) and not isinstance(known(b.global_), int):
        if accumulation == 1:
            add("training.global_batch_size", -1, "batch.accumulation", "exact",
                "global_batch_size -1: no gradient accumulation")
            return
        micro, world = known(b.micro), known(plan.world.world_size)
        model = 1
        for axis in ("tensor", "pipeline", "context"):
            model *= known(getattr(plan.parallelism, axis)) or 1
        if isinstance(micro, int) and isinstance(world, int) and world % model == 0:
            add("training.global_batch_size", micro * accumulation * (world // model), "batch.accumulation", "exact",
                f"torchtitan derives accumulation = global / (local × data-parallel {world // model})")
        else:
            dropped["batch.accumulation"] = ("torchtitan derives accumulation from global_batch_size, which needs the "
                                             "micro batch and the world size")
    for dotted in ("batch.micro", "batch.global_", "batch.sequence_length", "batch.accumulation"):
        if plan.get(dotted) == "auto":
            dropped[dotted] = '"auto" has no torchtitan counterpart (a Hugging Face Trainer placeholder)'


def _precision(plan, add, dropped, rest) -> None:
    pr = plan.precision
    param = known(pr.param_dtype)
    if param in DTYPES:
        add("training.mixed_precision_param", DTYPES[param], "precision.param_dtype",
            "approximate" if param == "bf16" else "exact",
            "torchtitan keeps float32 parameters (training.dtype) and computes in bfloat16 through FSDP's "
            "MixedPrecisionPolicy (autocast without FSDP; off with tensor or pipeline parallelism and no FSDP)"
            if param == "bf16" else "")
    elif param is not None:
        dropped["precision.param_dtype"] = (f"torchtitan's mixed precision is bfloat16 or float32, not {param}: "
                                            "its default, bfloat16 under FSDP, applies")
    reduce = known(pr.reduce_dtype)
    if reduce == "fp32":
        add("training.mixed_precision_reduce", "float32", "precision.reduce_dtype")
    elif reduce is not None:
        dropped["precision.reduce_dtype"] = f"torchtitan reduces gradients in float32 only, not {reduce}"
    if pr.compute_dtype is not None:
        dropped["precision.compute_dtype"] = "torchtitan computes in mixed_precision_param"
    if pr.fp8 is True:
        converters = _source_table(rest, "model").get("converters", [])
        converters = list(converters) if isinstance(converters, list) else []
        if not any(c in (FLOAT8, "float8") for c in converters):
            converters.append(FLOAT8)
        add("model.converters", converters, "precision.fp8", "approximate",
            "torchtitan's float8 linear converter with its default recipe (tensorwise scaling); needs SM89+ GPUs")
    elif pr.fp8 is False:
        add("", None, "precision.fp8", "exact", "no float8 converter")
    for field in ("loss_scale", "initial_scale_power", "loss_scale_window", "hysteresis", "consecutive_hysteresis",
                  "min_loss_scale", "grad_accum_dtype"):
        if getattr(pr, field) is not None:
            dropped[f"precision.{field}"] = ("torchtitan has no loss scaling (bfloat16 needs none)" if field != "grad_accum_dtype"
                                             else "torchtitan accumulates gradients in training.dtype")


def _optimizer(plan, add, dropped) -> None:
    o = plan.optimizer
    if o is None:
        return
    name = known(o.name)
    target = None
    if isinstance(name, str):
        lowered = name.lower().replace("_", "")
        if lowered in ADAMW or (lowered in ("adam", "fusedadam") and o.decoupled_weight_decay):
            target = "AdamW"
        elif lowered in ("adam", "fusedadam"):
            target = "Adam"
    if name is not None and target is None:
        dropped["optimizer"] = (f"torchtitan builds only Adam and AdamW (another name raises NotImplementedError); "
                                f"{name} is not carried over")
        return
    if target is not None:
        status = "exact" if target.lower() == name.lower() else "approximate"
        add("optimizer.name", target, "optimizer.name", status,
            f"torch.optim.{target} ({'decoupled weight decay' if target == 'AdamW' else 'L2 weight decay'}) in "
            f"place of {name}" if status == "approximate" else "")
    for field, key in (("lr", "lr"), ("eps", "eps"), ("weight_decay", "weight_decay")):
        val = known(getattr(o, field))
        if isinstance(val, (int, float)):
            add(f"optimizer.{key}", float(val), f"optimizer.{field}")
        elif getattr(o, field) == "auto":
            dropped[f"optimizer.{field}"] = '"auto" has no torchtitan counterpart'
    betas = known(o.betas)
    if isinstance(betas, list) and len(betas) == 2 and all(isinstance(b, (int, float)) for b in betas):
        add("optimizer.beta1", float(betas[0]), "optimizer.betas")
        add("optimizer.beta2", float(betas[1]), "optimizer.betas")
    elif o.betas is not None:
        dropped["optimizer.betas"] = "torchtitan takes exactly beta1 and beta2"
    if o.decoupled_weight_decay is not None and target is not None:
        add("", None, "optimizer.decoupled_weight_decay", "exact", f"torchtitan's {target}")
    for key in o.params:
        dropped[f"optimizer.params.{key}"] = f"torchtitan's {target or 'AdamW'} has no setting {key}"


def _scheduler(plan, add, dropped) -> None:
    s = plan.scheduler
    if s is None:
        return
    for field, key in (("warmup_steps", "warmup_steps"), ("total_steps", "total_steps")):
        val = known(getattr(s, field))
        if isinstance(val, int):
            add(f"lr_scheduler.{key}", val, f"scheduler.{field}", "approximate",
                "torchtitan's warm-up is linear from about 0 to lr" if field == "warmup_steps" else
                "the step the decay ends at (torchtitan's decay shape may differ)")
        elif getattr(s, field) == "auto":
            dropped[f"scheduler.{field}"] = '"auto" has no torchtitan counterpart'
    name = known(s.name)
    if name in ("linear", "sqrt", "cosine"):
        add("lr_scheduler.decay_type", name, "scheduler.name")
    elif name in DECAYS:
        add("lr_scheduler.decay_type", DECAYS[name], "scheduler.name", "approximate",
            f"torchtitan's {DECAYS[name]} decay after a linear warm-up (DeepSpeed's {name} warms up on a log curve "
            "by default)")
    elif name is not None:
        dropped["scheduler.name"] = (f"torchtitan's schedule is warm-up, optional stable phase and a linear, sqrt or "
                                     f"cosine decay; {name} is not one of them")
    for key, val in s.params.items():
        if key in ("decay_ratio", "min_lr_factor") and isinstance(val, (int, float)) and not isinstance(val, bool):
            add(f"lr_scheduler.{key}", float(val), "scheduler.params")
        else:
            dropped[f"scheduler.params.{key}"] = f"torchtitan's lr_scheduler has no setting {key}"
    min_lr, lr = known(s.min_lr), known(plan.optimizer.lr) if plan.optimizer else None
    if isinstance(min_lr, (int, float)) and name not in (None, "linear", "sqrt", "cosine"):
        dropped["scheduler.min_lr"] = (f"the minimum lr of {name} does not carry over: torchtitan's warm-up starts at "
                                       f"about 0 and min_lr_factor is the floor the decay ends at")
    elif isinstance(min_lr, (int, float)):
        if isinstance(lr, (int, float)) and lr > 0:
            add("lr_scheduler.min_lr_factor", float(min_lr) / float(lr), "scheduler.min_lr", "approximate",
                "min_lr_factor = min_lr / lr")
        else:
            dropped["scheduler.min_lr"] = "torchtitan takes min_lr_factor (a factor of lr), and lr is not known"
    for field in ("max_lr", "warmup_type"):
        if getattr(s, field) is not None:
            dropped[f"scheduler.{field}"] = f"torchtitan's lr_scheduler has no {field}"


def _checkpointing(plan, add, dropped, rest) -> None:
    ac = plan.activation_checkpointing
    if ac is None:
        return
    mode = _source_table(rest, "activation_checkpoint").get("mode")
    if ac.enabled is True:
        if mode in ("selective", "full", "memory_budget"):
            add("activation_checkpoint.mode", mode, "activation_checkpointing.enabled")
        else:
            add("activation_checkpoint.mode", "full", "activation_checkpointing.enabled", "approximate",
                "torchtitan checkpoints every transformer block (the source's checkpointing is per its model code)")
    elif ac.enabled is False:
        add("activation_checkpoint.mode", "none", "activation_checkpointing.enabled")
    for field in ac.FIELDS:
        if field != "enabled" and getattr(ac, field) is not None:
            dropped[f"activation_checkpointing.{field}"] = f"torchtitan's activation checkpointing has no {field}"


def _sharding(plan, add, dropped, rest) -> None:
    sh = plan.sharding
    stage = known(sh.stage)
    written = _source_table(rest, "parallelism").get("fsdp_reshard_after_forward")
    reshard = sh.reshard_after_forward
    if isinstance(reshard, bool):
        pipeline = known(plan.parallelism.pipeline) or 1
        if written == "default" and reshard == (not pipeline > 1):
            add("parallelism.fsdp_reshard_after_forward", "default", "sharding.reshard_after_forward")
        else:
            add("parallelism.fsdp_reshard_after_forward", "always" if reshard else "never",
                "sharding.reshard_after_forward")
    elif reshard is not None:
        dropped["sharding.reshard_after_forward"] = "torchtitan reshards to all ranks or not at all (no partial size)"
    if stage == 3:
        if known(plan.parallelism.data_parallel_shard) is None:
            add("parallelism.data_parallel_shard_degree", -1, "sharding.stage", "exact",
                "FSDP2 over the data-parallel ranks shards parameters, gradients and optimizer state (ZeRO-3)")
    elif stage in (1, 2):
        if known(plan.parallelism.data_parallel_shard) is None:
            add("parallelism.data_parallel_shard_degree", -1, "sharding.stage", "approximate",
                f"FSDP2 shards parameters too (ZeRO-3); reshard 'never' keeps them gathered between forward and "
                f"backward like ZeRO-{stage}")
        if not isinstance(reshard, bool):
            add("parallelism.fsdp_reshard_after_forward", "never", "sharding.stage", "approximate",
                "parameters stay gathered after the forward pass")
    elif stage == 0:
        world = known(plan.world.world_size)
        model = 1
        for axis in ("tensor", "pipeline", "context"):
            model *= known(getattr(plan.parallelism, axis)) or 1
        add("parallelism.data_parallel_shard_degree", 1, "sharding.stage", "exact", "no sharding")
        if known(plan.parallelism.data_parallel_replicate) is not None:
            pass
        elif isinstance(world, int) and world % model == 0:
            add("parallelism.data_parallel_replicate_degree", world // model, "sharding.stage", "exact",
                "plain data parallelism (DDP) over the other ranks")
        else:  # the degrees must multiply to the GPUs (ParallelDims): replicate 1 would run on one GPU only
            from shardshift.resolve import PLACEHOLDER, placeholder_reason

            add("parallelism.data_parallel_replicate_degree", PLACEHOLDER, "", "unknown",
                placeholder_reason("the data-parallel replicas (plain data parallelism, DDP): torchtitan needs the "
                                   "degrees to multiply to the number of GPUs, which the source does not state "
                                   f"(the GPUs divided by {model}, the other degrees)" if model > 1 else
                                   "the data-parallel replicas (plain data parallelism, DDP): torchtitan needs the "
                                   "degrees to multiply to the number of GPUs, which the source does not state (the "
                                   "number of GPUs)"))
    elif sh.stage == "auto":
        dropped["sharding.stage"] = '"auto" has no torchtitan counterpart'
    for field in ("hybrid", "hybrid_shard_size"):
        if getattr(sh, field) is not None:
            dropped[f"sharding.{field}"] = ("torchtitan's HSDP is data_parallel_replicate_degree × "
                                            "data_parallel_shard_degree: set them from the world size")


def _offload(plan, add, dropped) -> None:
    devices = {}
    for kind in ("optimizer", "params"):
        target = getattr(plan.offload, kind)
        if target is not None:
            devices[kind] = known(target.device)
            for field in ("nvme_path", "pin_memory", "ratio"):
                if getattr(target, field) is not None:
                    dropped[f"offload.{kind}.{field}"] = f"torchtitan's CPU offload has no {field}"
    if not devices:
        return
    on_cpu = [k for k, d in devices.items() if d == "cpu"]
    for kind, device in devices.items():
        if device == "nvme":
            dropped[f"offload.{kind}.device"] = "torchtitan cannot offload to NVMe"
    if on_cpu:
        exact = len(on_cpu) == 2
        for kind in on_cpu:
            add("training.enable_cpu_offload", True, f"offload.{kind}.device", "exact" if exact else "approximate",
                "" if exact else "torchtitan offloads parameters, gradients and optimizer state together")
    elif all(d == "none" for d in devices.values()):
        for kind in devices:
            add("training.enable_cpu_offload", False, f"offload.{kind}.device")


# --- text ---------------------------------------------------------------------------------------------


def build(plan: Plan, source: str | None = None) -> tuple[dict, list[Emitted], dict[str, str]]:
    """The TOML data for `plan`: its torchtitan passthrough with the emitted keys over it."""
    import copy

    from shardshift.source import split_pointer, value_at

    data = copy.deepcopy(plan.passthrough.get(FORMAT, {}))
    emitted, dropped = emit(plan, source)
    for item in emitted:
        if not item.key:
            continue
        path = item.key.split(".")
        where = plan.provenance.get(item.field)
        if source == FORMAT and where is not None and where.pointer and where.pointer.startswith("/") and \
                value_at(data, "/" + "/".join(path)) is _ABSENT_VALUE and where.pointer in _older_places():
            path = split_pointer(where.pointer)  # a key of the older layout, read from its own place
        *sections, key = path
        target = data
        for section in sections:
            if not isinstance(target.get(section), dict):  # a section the source wrote as a value: the key wins
                target[section] = {}
            target = target[section]
        target[key] = item.value
    return data, emitted, dropped


def _older_places() -> set[str]:
    """The places the reader takes a field from in the layouts before v0.2 (not the first of each list)."""
    from shardshift.formats.torchtitan.reader import DEGREES, SCALARS

    return {p for pointers in DEGREES.values() for p in pointers[1:]} | {
        p for pointers, _ in SCALARS.values() for p in pointers[1:]}


def write(plan: Plan) -> str:
    """A torchtitan TOML for `plan` (sections in torchtitan's own order)."""
    data, _, _ = build(plan, FORMAT if FORMAT in plan.passthrough else None)
    return dumps(data)


def dumps(data: dict) -> str:
    lines: list[str] = []
    scalars = {k: v for k, v in data.items() if not isinstance(v, dict)}
    for key, value in scalars.items():
        lines.append(f"{_key(key)} = {_value(value)}")
    tables = sorted((k for k in data if isinstance(data[k], dict)),
                    key=lambda k: (ORDER.index(k) if k in ORDER else len(ORDER), list(data).index(k)))
    for key in tables:
        _table(data[key], [key], lines)
    return "\n".join(lines).lstrip("\n") + "\n"


def _table(table: dict, path: list[str], lines: list[str]) -> None:
    scalars = {k: v for k, v in table.items() if not isinstance(v, dict)}
    if scalars or not table:
        if lines:
            lines.append("")
        lines.append(f"[{'.'.join(_key(p) for p in path)}]")
        for key, value in scalars.items():
            lines.append(f"{_key(key)} = {_value(value)}")
    for key, value in table.items():
        if isinstance(value, dict):
            _table(value, [*path, key], lines)


def _key(key: str) -> str:
    if key and all(c.isalnum() and c.isascii() or c in "_-" for c in key):
        return key
    return _string(key)


def _string(text: str) -> str:
    out = json.dumps(text, ensure_ascii=False)
    return out.replace("\x7f", "\\u007f")


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        text = repr(value)
        return text if any(c in text for c in ".en") else text + ".0"
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items()) + " }" if value else "{}"
    raise TypeError(f"cannot write {type(value).__name__} to TOML")


# --- conversion -----------------------------------------------------------------------------------------


def convert(document: Document) -> Conversion:
    """`document`'s Plan as a torchtitan TOML, with what happened to every source setting."""
    if document.plan is None:
        raise ValueError(f"{document.path} has no Plan to write")
    plan = document.plan
    if document.format == FORMAT:
        data, _, _ = build(plan, FORMAT)
        text = edit(document, data)
        entries = [MappingEntry(pointer, line, column, "exact", pointer, "same key")
                   for pointer, line, column in document.settings()]
        return Conversion(text, entries)
    data, emitted, dropped = build(plan)
    if not data:  # nothing of the source has a key here: an empty [job] still reads as a torchtitan config
        data = {"job": {}}
    by_field: dict[str, list[Emitted]] = {}
    for item in emitted:
        by_field.setdefault(item.field, []).append(item)
    entries = []
    seen: set[str] = set()
    for pointer, line, column in _settings(document):
        seen.add(pointer)
        fields = [dotted for dotted, where in plan.provenance.items()
                  if where.file == document.path and not is_default(where)
                  and (where.pointer or field_pointer(dotted)) == pointer]
        entry = _entry(pointer, line, column, fields, by_field, dropped, plan, document.format)
        if entry is not None:
            entries.append(entry)
    for dotted, where in plan.provenance.items():
        if where is None or where.file != document.path or plan.get(dotted) is None:
            continue
        if is_default(where):  # a value the source framework chose, written because torchtitan's default differs
            items = [i for i in by_field.get(dotted, []) if i.key]
            if items:
                entries.append(MappingEntry(dotted, 1, 1, items[0].status, ", ".join(i.key for i in items),
                                            f"not set in the source: {plan.get(dotted)!r} is the {where.pointer}; "
                                            + (items[0].reason or "written explicitly, since torchtitan's own "
                                               "default differs")))
            continue
        source = where.pointer or field_pointer(dotted)  # settings the document does not list (code, flags)
        if source in seen or any(other.startswith(source + "/") for other in seen):
            continue
        seen.add(source)
        entries.append(_entry(source, where.line, where.column, [dotted], by_field, dropped, plan, document.format))
    # what the output holds in place of a value the source does not give (the writer says what to fill in)
    entries += [MappingEntry("", 1, 1, "unknown", "/" + item.key.replace(".", "/"), item.reason)
                for item in by_field.get("", []) if item.key and item.status == "unknown"]
    return Conversion(dumps(data), entries)  # unknowns: Conversion.mark_unknowns


def field_pointer(dotted: str) -> str:
    """The pointer of a Plan field in the Plan's own data (`batch.global_` -> /batch/global)."""
    return "/" + "/".join("global" if part == "global_" else part for part in dotted.split("."))


def _settings(document: Document) -> list[tuple[str, int, int]]:
    data = document.data
    if hasattr(data, "given"):  # a Megatron launch
        return [(g.spelling, g.line, g.column) for g in data.given]
    return document.settings()


def _prefixes(dotted: str) -> list[str]:
    parts = dotted.split(".")
    return [".".join(parts[:i]) for i in range(len(parts), 0, -1)]


def _entry(pointer, line, column, fields, by_field, dropped, plan, source) -> MappingEntry | None:
    for dotted in fields:
        for prefix in _prefixes(dotted):
            if prefix in by_field:
                items = by_field[prefix]
                item = items[0]
                target = ", ".join(i.key for i in items if i.key) or None
                return MappingEntry(pointer, line, column, item.status, target,
                                    item.reason or "the key of the same meaning")
        matches = [f for f in by_field if f.startswith(dotted + ".")]
        if matches:
            items = [i for f in matches for i in by_field[f]]
            statuses = {i.status for i in items}
            return MappingEntry(pointer, line, column, "exact" if statuses == {"exact"} else "approximate",
                                ", ".join(sorted({i.key for i in items if i.key})) or None,
                                "; ".join(sorted({i.reason for i in items if i.reason})) or "the keys of the same meaning")
    for dotted in fields:
        for prefix in _prefixes(dotted):
            if prefix in dropped:
                return MappingEntry(pointer, line, column, "dropped", None, dropped[prefix])
    if fields:
        if plan.get(fields[0]) == "auto":
            return MappingEntry(pointer, line, column, "dropped", None, '"auto" (a Hugging Face Trainer placeholder) has '
                                'no torchtitan counterpart: torchtitan uses its default')
        return MappingEntry(pointer, line, column, "dropped", None,
                            f"torchtitan has no setting for {fields[0]} with this value")
    if source == "deepspeed":  # the DeepSpeed -> FSDP2 table explains the ds_config's own settings
        from shardshift.formats.deepspeed.fsdp2_explained import row_for

        row = row_for(pointer)
        if row is not None and row.reason:
            return MappingEntry(pointer, line, column, "dropped", None, f"torchtitan has no setting for it (under "
                                f"FSDP2: {row.reason})")
        return MappingEntry(pointer, line, column, "dropped", None, "a DeepSpeed engine setting: no torchtitan "
                            "setting carries it")
    return None  # a setting with no Plan field and nothing to explain: the measured report accounts for it


# --- in-place editing of a torchtitan source -----------------------------------------------------------------


def edit(document: Document, data: dict) -> str:
    """`document`'s text with the values that differ in `data` replaced in place and new keys added at the end
    of their section (new sections at the end of the file). Comments and order stay as written."""
    from shardshift.source import find_node

    text = document.text
    root = document.root
    starts = [0]
    for index, char in enumerate(text):
        if char == "\n":
            starts.append(index + 1)
    replacements: list[tuple[int, int, str]] = []
    additions: dict[str, list[str]] = {}
    new_tables: list[tuple[list[str], dict]] = []

    def visit(new: dict, old: Any, path: list[str]) -> None:
        for key, value in new.items():
            pointer = "".join("/" + p.replace("~", "~0").replace("/", "~1") for p in [*path, key])
            before = old.get(key, _ABSENT) if isinstance(old, dict) else _ABSENT
            if isinstance(value, dict) and isinstance(before, dict):
                visit(value, before, [*path, key])
            elif before is _ABSENT:
                if isinstance(value, dict):
                    new_tables.append(([*path, key], value))
                else:
                    additions.setdefault("/".join(path), []).append(f"{_key(key)} = {_value(value)}")
            elif not _same(before, value):
                node = find_node(root, pointer)
                start = starts[node.line - 1] + node.column - 1 if node is not None else -1
                if node is not None and node.raw and text[start:start + len(node.raw)] == node.raw:
                    replacements.append((start, start + len(node.raw), _value(value)))

    visit(data, document.data, [])
    for section, lines in additions.items():
        end = _section_end(document, section, starts)
        replacements.append((end, end, "".join(line + "\n" for line in lines)))
    out = text
    for start, end, new in sorted(replacements, reverse=True):
        out = out[:start] + new + out[end:]
    if new_tables:
        lines: list[str] = []
        for path, table in new_tables:
            _table(table, path, lines)
        out = out + ("" if out.endswith("\n") or not out else "\n") + "\n" + "\n".join(lines).lstrip("\n") + "\n"
    return out


_ABSENT = object()
_ABSENT_VALUE = __import__("shardshift.source", fromlist=["MISSING"]).MISSING


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b and type(a) is type(b)
    return a == b


def _section_end(document: Document, section: str, starts: list[int]) -> int:
    """Where a new key of `section` ("a/b") goes: after the line of its last key (top level: before the first table)."""
    from shardshift.source import find_node

    node = find_node(document.root, "/" + section if section else "")
    text = document.text
    if node is None or not node.members:
        if not section:
            first = min((m.line for m in document.root.members if m.value.kind == "object"), default=None)
            return starts[first - 1] if first else len(text)
        return len(text)
    last = max(node.members, key=lambda m: (m.value.line, m.value.column))
    line = last.value.line
    for value in last.value.walk():
        line = max(line, value.line)
    line += last.value.raw.count("\n") if last.value.kind == "string" else 0
    end = starts[line] if line < len(starts) else len(text)
    if end == len(text) and not text.endswith("\n"):
        return end
    return end
