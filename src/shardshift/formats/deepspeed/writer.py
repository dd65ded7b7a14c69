"""DeepSpeed ds_config.json writer: Plan -> text, and the migration report of a same-format write."""

from __future__ import annotations

import copy
import json
import re
from typing import TYPE_CHECKING, Any

from shardshift.document import Conversion, Document, MappingEntry
from shardshift.formats.deepspeed.keys import KEYS, Key, key_index
from shardshift.formats.deepspeed.reader import (
    FORMAT,
    OPTIMIZER_FIELDS,
    SCHEDULER_FIELDS,
    SIMPLE_KEYS,
    _set,
)
from shardshift.source import join_pointer

if TYPE_CHECKING:
    from shardshift.plan import Optimizer, Plan, Scheduler

def write_dict(plan: Plan) -> dict:
    """The ds_config (as a dict, in stable key order) that expresses `plan`. A value not known
    before the job runs is not written (DeepSpeed's default applies); `convert` reports it."""
    from shardshift.plan import without_unknowns

    plan = without_unknowns(plan)
    out: dict = copy.deepcopy(plan.passthrough.get(FORMAT, {}))
    for key in SIMPLE_KEYS:
        value = plan.get(key.field)  # type: ignore[arg-type]
        if value is not None:
            _set(out, key.path, value)
    dtype = plan.precision.param_dtype
    if dtype == "fp16":
        _set(out, "/fp16/enabled", True)
    elif dtype == "bf16":
        _set(out, "/bf16/enabled", True)
    elif dtype == "fp32":
        _set(out, "/fp16/enabled", False)
        if isinstance(out.get("bf16"), dict):
            _set(out, "/bf16/enabled", False)
    if plan.optimizer is not None:
        _write_optimizer(plan.optimizer, out)
    if plan.scheduler is not None:
        _write_scheduler(plan.scheduler, out)
    return _ordered(out, "")


def _write_optimizer(optimizer: Optimizer, out: dict) -> None:
    block = out.setdefault("optimizer", {})
    if optimizer.name is not None:
        block["type"] = optimizer.name
    params = dict(optimizer.params)
    for name in OPTIMIZER_FIELDS:
        value = getattr(optimizer, name)
        if value is not None:
            params[name] = value
    if (optimizer.name or "").lower() == "adam" and optimizer.decoupled_weight_decay is False:
        params.setdefault("adam_w_mode", False)
    _merge_params(block, params)


def _merge_params(block: dict, params: dict, *, required: bool = False) -> None:
    """Add `params` to the block's params; a non-object params kept in the passthrough stays as
    written. `required`: write an empty params too (DeepSpeed calls the scheduler with **params)."""
    existing = block.get("params")
    if params:
        block["params"] = {**(existing if isinstance(existing, dict) else {}), **params}
    elif required and existing is None:
        block["params"] = {}


def _write_scheduler(scheduler: Scheduler, out: dict) -> None:
    block = out.setdefault("scheduler", {})
    if scheduler.name is not None:
        block["type"] = scheduler.name
    params = dict(scheduler.params)
    for source, target in SCHEDULER_FIELDS.get(scheduler.name or "", {}).items():
        value = getattr(scheduler, target)
        if value is not None:
            params[source] = value
    _merge_params(block, params, required=True)


_ORDER = {key.path: index for index, key in enumerate(KEYS)}


def _ordered(value: Any, pointer: str) -> Any:
    """Known keys in the key table's order, then unknown keys as they came."""
    if not isinstance(value, dict):
        return value
    big = len(_ORDER)
    items = sorted(value.items(), key=lambda kv: _ORDER.get(join_pointer(pointer, kv[0]), big))
    return {k: _ordered(v, join_pointer(pointer, k)) for k, v in items}


def write(plan: Plan) -> str:
    """ds_config.json text for `plan`: stable key order, 2-space indent, trailing newline."""
    return _text(write_dict(plan))


_SURROGATE = re.compile("[\ud800-\udfff]")


def convert(document: Document) -> Conversion:
    """Write `document`'s Plan as a ds_config, with a report: every key of a ds_config source;
    for another source, what needs explaining (placeholders, and the source format's own reasons,
    `formats.explain`: a Megatron document's flag by flag); the statuses of the other settings are
    measured on the output read back (migration.py)."""
    if document.plan is None:
        raise ValueError(f"{document.path} has no Plan to write")
    if document.format != FORMAT:
        from shardshift import formats

        config, entries = write_meaning(document.plan)
        explained = formats.explain(document, "deepspeed")  # a Megatron document's flag-by-flag reasons
        entries = (explained if explained is not None else _left_out(document)) + entries
        return Conversion(_text(config), entries)  # unknowns: Conversion.mark_unknowns
    renamed_from = {old: new for new, old in document.renamed.items()}
    entries = []
    for pointer, line, column in document.settings():
        new = renamed_from.get(pointer)
        if new is not None and new != pointer:
            entries.append(MappingEntry(pointer, line, column, "exact", new, f"legacy spelling written as {new}"))
        else:
            entries.append(MappingEntry(pointer, line, column, "exact", pointer, "same key"))
    return Conversion(write(document.plan), entries)


# --- a ds_config that means what another framework's (resolved) Plan means ---------------------

# The fields `to_deepspeed` leaves out of a ds_config whose reason holds for any source framework
# (its scheduler and bucket reasons speak of Megatron's flags: for a Megatron source they come with
# the Megatron package's own entries, formats.explain).
_LEFT_OUT = ("parallelism.tensor", "parallelism.pipeline", "parallelism.virtual_pipeline", "parallelism.expert",
             "world.nodes", "world.gpus_per_node", "world.world_size", "model.layers", "model.hidden", "model.heads",
             "model.kv_heads", "model.vocab", "batch.sequence_length", "activation_checkpointing")


def _left_out(document: Document) -> list[MappingEntry]:
    """An entry, at the source setting, for each value the source file states that a ds_config
    cannot hold (a tensor-parallel degree, the process count, the model shape), with the reason."""
    from shardshift.formats.deepspeed.meaning import to_deepspeed
    from shardshift.resolve import is_default

    plan = document.plan
    _, status = to_deepspeed(plan)
    entries = []
    for dotted in _LEFT_OUT:
        state, reason = status.get(dotted, ("exact", ""))
        where = plan.provenance.get(dotted)
        if state == "exact" or where is None or is_default(where) or where.line < 1:
            continue
        entries.append(MappingEntry(where.pointer or dotted, where.line, where.column, state, None, reason,
                                    file=None if where.file == document.path else where.file))
    return entries


# DeepSpeed's schedules that need the run's length (their constructors have no default for it)
_NEEDS_TOTAL = ("WarmupDecayLR", "WarmupCosineLR")
# torch.optim.lr_scheduler classes DeepSpeed builds by name when the type is none of its own
_TORCH_SCHEDULERS = frozenset({"ConstantLR", "CosineAnnealingLR", "CosineAnnealingWarmRestarts", "CyclicLR",
                               "ExponentialLR", "LinearLR", "MultiStepLR", "OneCycleLR", "PolynomialLR", "StepLR"})


def write_meaning(plan: Plan) -> tuple[dict, list[MappingEntry]]:
    """The ds_config for a Plan read from another format (resolved: its framework's defaults
    filled in), and the entries that explain it. What a ds_config cannot hold leaves (TP, PP,
    context and expert degrees, the world, the model shape: meaning.py `to_deepspeed`); a
    decay shape becomes the DeepSpeed schedule of that shape; the batch is written so DeepSpeed
    trains the same samples per step; what DeepSpeed requires and the Plan cannot give is the
    placeholder resolve.PLACEHOLDER, with an `unknown` entry saying what to fill in."""
    from shardshift.formats.deepspeed.meaning import deepspeed_schedule, to_deepspeed
    from shardshift.plan import without_unknowns
    from shardshift.resolve import PLACEHOLDER, placeholder_reason

    plan = without_unknowns(plan)
    schedule = deepspeed_schedule(plan)
    translated, _ = to_deepspeed(plan)
    if schedule is not None and schedule.name not in SCHEDULER_FIELDS and schedule.name not in _TORCH_SCHEDULERS:
        schedule = None  # a shape DeepSpeed has no schedule like: not invented (the LR stays constant)
    translated.scheduler = copy.deepcopy(schedule)
    entries: list[MappingEntry] = []
    entries += _batch(plan, translated)
    config = write_dict(translated)
    batch_keys = ("train_batch_size", "train_micro_batch_size_per_gpu")
    if not any(key in config for key in batch_keys):
        config["train_micro_batch_size_per_gpu"] = PLACEHOLDER
        entries.append(MappingEntry("", 1, 1, "unknown", "/train_micro_batch_size_per_gpu", placeholder_reason(
            "the micro batch size per GPU: DeepSpeed refuses a config with no batch size, and the source "
            "states none")))
    entries += _buildable(config)
    entries += _no_warmup(config)
    block = config.get("scheduler")
    if isinstance(block, dict) and block.get("type") in _NEEDS_TOTAL:
        params = block.setdefault("params", {})
        if isinstance(params, dict) and params.get("total_num_steps") is None:
            params["total_num_steps"] = PLACEHOLDER
            entries.append(MappingEntry("", 1, 1, "unknown", "/scheduler/params/total_num_steps", placeholder_reason(
                f"the number of optimizer steps the LR decays over: DeepSpeed's {block['type']} requires it, "
                "and the Plan of the source holds none")))
    return _ordered(config, ""), entries


def _buildable(config: dict) -> list[MappingEntry]:
    """What DeepSpeed can build, and only that: another framework's optimizer name DeepSpeed has no
    class for (`adamw_8bit`) would stop deepspeed.initialize, so the block is not written; a param
    the class DeepSpeed builds does not take (torch's `foreach` for FusedAdam, torchtitan's
    `decay_ratio` for WarmupDecayLR) would raise TypeError there, so it is left out. Each with
    an entry saying so (the same classes and signatures as DS401, DS402 and DS411)."""
    from shardshift.formats.deepspeed.optimizers import (
        DEEPSPEED_SCHEDULERS,
        TORCH_SCHEDULERS,
        built_optimizer,
        optimizer_offload,
        resolve_optimizer,
    )

    entries: list[MappingEntry] = []
    block = config.get("optimizer")
    if isinstance(block, dict) and isinstance(block.get("type"), str):
        resolved = resolve_optimizer(block["type"])
        params = block.get("params") if isinstance(block.get("params"), dict) else {}
        if not resolved.known:
            del config["optimizer"]
            entries.append(MappingEntry("", 1, 1, "dropped", None, (
                f"no optimizer block: DeepSpeed has no optimizer {block['type']!r} ({resolved.problem}), and "
                "deepspeed.initialize would stop on it; build that optimizer in the code and pass it to "
                "deepspeed.initialize, or write a DeepSpeed optimizer (Adam, AdamW, Lamb, Lion, Adagrad)")))
        else:
            built = built_optimizer(resolved, offload=optimizer_offload(config) is True,
                                    torch_adam=params.get("torch_adam") is True,
                                    adam_w_mode=params.get("adam_w_mode", True) is not False)
            if built.signature is not None and not built.drops_unknown:
                entries += _left_out_params(block, params, set(built.signature.names) | set(built.consumed),
                                            built.signature.cls, "/optimizer/params/")
    block = config.get("scheduler")
    if isinstance(block, dict) and isinstance(block.get("type"), str) and isinstance(block.get("params"), dict):
        signature = DEEPSPEED_SCHEDULERS.get(block["type"]) or TORCH_SCHEDULERS.get(block["type"])
        if signature is not None:
            entries += _left_out_params(block, block["params"], set(signature.names), signature.cls,
                                        "/scheduler/params/")
    return entries


def _no_warmup(config: dict) -> list[MappingEntry]:
    """A schedule without warm-up: DeepSpeed's WarmupLR, WarmupDecayLR and WarmupCosineLR refuse
    `warmup_num_steps` 0 (ValueError: "must be a positive integer") and warm up over at least 2
    steps (max(2, n)). The closest each comes to no warm-up (measured with lr_schedules.py):
    WarmupLR starting at its peak (warmup_min_lr = warmup_max_lr); WarmupCosineLR starting at its
    peak (warmup_min_ratio 1.0) after its first step, which runs at 0 whatever the warm-up;
    WarmupDecayLR decays to warmup_min_lr, which must stay, so it keeps its 2-step warm-up."""
    block = config.get("scheduler")
    params = block.get("params") if isinstance(block, dict) else None
    kind = block.get("type") if isinstance(block, dict) else None
    if not (isinstance(params, dict) and kind in _NO_WARMUP and params.get("warmup_num_steps") == 0):
        return []
    params["warmup_num_steps"] = 1
    peak = params.get("warmup_max_lr")
    if kind == "WarmupCosineLR":
        params["warmup_min_ratio"] = 1.0
    elif kind == "WarmupLR" and isinstance(peak, (int, float)) and not isinstance(peak, bool):
        params["warmup_min_lr"] = peak
    else:
        kind = "WarmupDecayLR" if kind == "WarmupDecayLR" else "WarmupLR without warmup_max_lr"
    how = _NO_WARMUP[kind]
    if params.get("warmup_type") != "linear":  # "log", the default (and any other word): the peak at step 3
        how = how.replace("step 3 halfway, step 4 at the peak", "step 3 at the peak")
    return [MappingEntry("", 1, 1, "approximate", "/scheduler/params/warmup_num_steps", (
        f"no warm-up: DeepSpeed's {kind.split()[0]} refuses warmup_num_steps 0 and warms up over at least 2 steps; "
        f"warmup_num_steps 1 stands in, {how}"))]


# what warmup_num_steps 1 does in each DeepSpeed schedule (lr_schedules.py, measured step by step)
_NO_WARMUP = {
    "WarmupLR": "with warmup_min_lr = warmup_max_lr: every step runs at the full rate, as without warm-up",
    "WarmupLR without warmup_max_lr": "steps 1 and 2 at warmup_min_lr, step 3 halfway, step 4 at the peak",
    "WarmupDecayLR": "steps 1 and 2 at warmup_min_lr, step 3 halfway, step 4 at the peak, then the linear decay",
    "WarmupCosineLR": "with warmup_min_ratio 1.0: step 1 at learning rate 0 (WarmupCosineLR's first step, whatever "
                      "the warm-up), steps 2 and 3 at the full rate, then the cosine",
}


def _left_out_params(block: dict, params: dict, accepted: set[str], cls: str, pointer: str) -> list[MappingEntry]:
    unaccepted = [name for name in params if name not in accepted]
    if not unaccepted:
        return []
    block["params"] = {k: v for k, v in params.items() if k in accepted}
    short = cls.rsplit(".", 1)[-1]
    return [MappingEntry("", 1, 1, "dropped", None, (
        f"{pointer}{name} = {params[name]!r} not written: DeepSpeed builds {short}, which takes no parameter "
        f"{name!r} (deepspeed.initialize would fail with TypeError)")) for name in unaccepted]


def _batch(plan: Plan, translated: Plan) -> list[MappingEntry]:
    """Keep train_batch_size in `translated` only where DeepSpeed's batch check holds: with a
    known data-parallel size, when micro x accumulation x that size gives it; with the world
    unknown, when it is the only batch stated besides the micro batch (DeepSpeed then derives the
    accumulation from the world it meets, as the source framework does)."""
    from shardshift.plan import known

    batch = translated.batch
    train, micro, steps = (_whole(known(v)) for v in (batch.global_, batch.micro, batch.accumulation))
    if train is None:
        return []
    world = _whole(known(plan.world.world_size))
    if world is None and _whole(known(plan.world.nodes)) and _whole(known(plan.world.gpus_per_node)):
        world = plan.world.nodes * plan.world.gpus_per_node
    model_parallel = 1
    for dotted in ("parallelism.tensor", "parallelism.pipeline", "parallelism.context"):
        model_parallel *= _whole(known(plan.get(dotted))) or 1
    data_parallel = world // model_parallel if world and world % model_parallel == 0 else None
    if micro is None:
        return []
    if data_parallel is None:
        if steps is None:
            return []
        why = (f"the world is not known, and DeepSpeed checks train_batch_size = micro x accumulation x world: "
               f"the micro batch {micro} and accumulation {steps} are written, the global batch follows the world")
    elif steps is None:
        if train % (micro * data_parallel) == 0:
            return []
        why = (f"{train} is not a multiple of the micro batch {micro} x {data_parallel} data-parallel "
               "processes: DeepSpeed would refuse it")
    elif train == micro * steps * data_parallel:
        return []
    else:
        why = (f"{train} is not micro batch {micro} x accumulation {steps} x {data_parallel} data-parallel "
               "processes: DeepSpeed would refuse it")
    batch.global_ = None
    return [MappingEntry("", 1, 1, "dropped", "/train_batch_size", f"train_batch_size not written: {why}")]


def _whole(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value) or value <= 0:
        return None
    return int(value)


def _text(config: dict) -> str:
    # A lone surrogate (written as a \ud800 escape in the source) cannot be encoded as UTF-8: keep it escaped.
    text = json.dumps(config, indent=2, ensure_ascii=False) + "\n"
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def key_for(pointer: str) -> Key | None:
    """The key-table row of a concrete pointer."""
    return key_index().get(pointer)
