"""Megatron-LM: the Plan written as a launch script (flags in bash arrays grouped by topic, started
by torchrun) or as a plain argument list, with a report of what carried over.

What each Plan field becomes (../shared/reference/megatron.md §4):

- degrees, batch, model shape, learning rate and schedule, clipping, loss scaling: the flag of the
  same meaning (exact);
- ZeRO stage 1 -> `--use-distributed-optimizer` (exact: optimizer state sharded over the data-
  parallel ranks); stage 2 / 3 -> `--use-distributed-optimizer` too (approximate: Megatron's
  distributed optimizer shards optimizer state and reduce-scatters gradients but keeps the full
  parameters and gradient buffer on every rank; Megatron-FSDP or `--use-torch-fsdp2` shard more,
  with requirements of their own);
- gradient accumulation: Megatron derives it (global / (micro × data-parallel size)), so it is
  written as `--global-batch-size` when the world size is known (exact) and dropped otherwise;
- activation checkpointing -> full recomputation of every layer (approximate: DeepSpeed's
  checkpointing is per the model code's calls);
- an LR schedule -> the `--lr-decay-style` of the same shape (DeepSpeed's WarmupLR / WarmupDecayLR /
  WarmupCosineLR, Hugging Face's names, torchtitan's decay types; `_STYLES`), with its warmup, decay
  length and end LR;
- what Megatron has no flag for (offload to NVMe, bucket sizes other than the reduce bucket,
  DeepSpeed's own optimizers, a schedule of another shape) is dropped, with the reason.

The Plan handed over for a translation is the source's resolved Plan (resolve.py: the source
framework's defaults filled in), so the writer writes what Megatron needs to reproduce it: bf16 or
fp16 explicitly, the LR schedule of the same shape (`--lr-decay-style`, `_STYLES`; a run with no
schedule keeps its LR constant, which is not Megatron's default linear decay), the global batch from
the batch triple. What an argument list cannot hold (the world size: it has no launcher) is not
invented. What Megatron's validate_args requires and the Plan cannot supply (the model shape, the
sequence length, the micro batch) is written as the placeholder `FILL_IN` (resolve.PLACEHOLDER,
with a `# shardshift: fill in ...` line in a launch script), and the report says `unknown` with what
to fill in: Megatron refuses the output until it is filled, never runs a guess. A same-format round
trip (a Megatron source) writes the source's own flags back and invents nothing.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from shardshift.document import Conversion, MappingEntry
from shardshift.plan import Unknown, known, without_unknowns
from shardshift.resolve import PLACEHOLDER, placeholder_reason

if TYPE_CHECKING:
    from shardshift.document import Document
    from shardshift.plan import Plan

FORMAT = "megatron"
TOPICS = ("parallel", "model", "batch", "precision", "optimizer", "schedule", "memory", "other")
# Flags Megatron's validate_args requires that only the user can supply (no other format holds them).
REQUIRED = ("--num-layers", "--hidden-size", "--num-attention-heads", "--seq-length", "--max-position-embeddings",
            "--micro-batch-size", "--train-iters")


class Emitted:
    """One flag to write: its topic, words, the Plan field it comes from, and how exactly."""

    __slots__ = ("topic", "flag", "values", "field", "status", "reason", "fill")

    def __init__(self, topic: str, flag: str, values: tuple = (), field: str | None = None, status: str = "exact",
                 reason: str = "", fill: str | None = None) -> None:
        self.topic, self.flag, self.values, self.field, self.status, self.reason = \
            topic, flag, values, field, status, reason
        self.fill = fill  # a placeholder: what to fill in

    def words(self) -> list[str]:
        return [self.flag, *(_word(v) for v in self.values)]


class Dropped:
    __slots__ = ("field", "reason")

    def __init__(self, field: str, reason: str) -> None:
        self.field, self.reason = field, reason


def _word(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e6:
        return str(int(value))  # `--clip-grad 1`: argparse's float() reads it back as 1.0
    return repr(value) if isinstance(value, float) else str(value)


def emit(plan: Plan, *, translate: bool = False) -> tuple[list[Emitted], list[Dropped]]:
    """Every flag the Plan gives, and every set field that has no flag (with the reason).
    `translate`: the Plan is another framework's resolved Plan (not a Megatron source written back),
    so a Megatron default that differs from it is overridden explicitly (a run with no LR schedule
    gets `--lr-decay-style constant`) and what validate_args requires that the Plan cannot supply is
    a placeholder (`_placeholders`)."""
    from shardshift.formats.megatron.flags import table
    from shardshift.formats.megatron.keys import FIELDS, OPTIMIZERS

    flags = table()
    out: list[Emitted] = []
    dropped: list[Dropped] = []
    original, plan = plan, without_unknowns(plan)
    spelled = {dotted: flags.by_dest[dest][0].name for dest, dotted in FIELDS.items() if dest in flags.by_dest}
    topic_of = {"parallelism": "parallel", "model": "model", "batch": "batch", "precision": "precision",
                "optimizer": "optimizer", "scheduler": "schedule", "gradient_clipping": "optimizer",
                "communication": "memory"}

    def value_flag(dotted: str, status: str = "exact", reason: str = "") -> bool:
        value = known(plan.get(dotted))
        if value is None:
            return False
        topic = topic_of.get(dotted.split(".")[0], "other")
        if isinstance(value, bool):
            if value:
                out.append(Emitted(topic, spelled[dotted], (), dotted, status, reason))
            return True
        out.append(Emitted(topic, spelled[dotted], (value,), dotted, status, reason))
        return True

    for dotted in ("parallelism.tensor", "parallelism.pipeline", "parallelism.virtual_pipeline",
                   "parallelism.context", "parallelism.expert", "parallelism.sequence_parallel"):
        value_flag(dotted)

    for dotted in ("model.layers", "model.hidden", "model.heads", "model.vocab"):
        value_flag(dotted)
    kv, heads = known(plan.model.kv_heads), known(plan.model.heads)
    if kv is not None:
        if kv != heads:
            out.append(Emitted("model", "--group-query-attention", (), "model.kv_heads"))
            out.append(Emitted("model", "--num-query-groups", (kv,), "model.kv_heads"))
        else:
            out.append(Emitted("model", "", (), "model.kv_heads", "exact",
                               "as many key-value heads as heads: Megatron's default multi-head attention"))

    value_flag("batch.micro")
    value_flag("batch.sequence_length")
    total, micro, accumulation = known(plan.batch.global_), known(plan.batch.micro), known(plan.batch.accumulation)
    world = known(plan.world.world_size)
    if total is not None:
        value_flag("batch.global_")
        if accumulation is not None:
            dropped.append(Dropped("batch.accumulation", "Megatron derives the accumulation steps from "
                                                         "--global-batch-size / (micro × data-parallel size)"))
    elif accumulation is not None and micro is not None:
        split = 1
        for dotted in ("parallelism.tensor", "parallelism.pipeline", "parallelism.context"):
            split *= known(plan.get(dotted)) or 1
        if isinstance(world, int) and world % split == 0:
            out.append(Emitted("batch", "--global-batch-size", (micro * accumulation * (world // split),),
                               "batch.accumulation", "exact",
                               f"micro {micro} × accumulation {accumulation} × {world // split} data-parallel ranks"))
        elif accumulation == 1:
            out.append(Emitted("batch", "", (), "batch.accumulation", "exact",
                               "no accumulation: Megatron's default --global-batch-size is micro × data-parallel "
                               "size"))
        elif translate:
            out.append(Emitted("batch", "--global-batch-size", (PLACEHOLDER,), "batch.accumulation", "unknown",
                               fill=f"the global batch size: micro {micro} × accumulation {accumulation} × the "
                                    "data-parallel size (the world size is not known); without it Megatron "
                                    "trains micro × data-parallel size samples a step"))
        else:
            dropped.append(Dropped("batch.accumulation", "Megatron takes --global-batch-size, not accumulation "
                                                         "steps, and the world size is not known to compute it"))

    dtype = known(plan.precision.param_dtype)
    if dtype in ("bf16", "fp16"):
        out.append(Emitted("precision", f"--{dtype}", (), "precision.param_dtype"))
    elif dtype == "fp32":
        out.append(Emitted("precision", "", (), "precision.param_dtype", "exact",
                           "fp32 is Megatron's default without --bf16 / --fp16"))
    if known(plan.precision.fp8):
        out.append(Emitted("precision", "--fp8-format", ("hybrid",), "precision.fp8", "approximate",
                           "Megatron's FP8 runs through Transformer Engine; the hybrid format (E4M3 forward, E5M2 "
                           "backward) is chosen"))
    scale = known(plan.precision.loss_scale)
    if scale is not None and dtype == "fp16":
        if scale:
            value_flag("precision.loss_scale")
        else:
            dropped.append(Dropped("precision.loss_scale", "0 (dynamic scaling) is Megatron's default without "
                                                           "--loss-scale"))
    power = known(plan.precision.initial_scale_power)
    if power is not None and dtype == "fp16":
        if isinstance(power, (int, float)) and not isinstance(power, bool) and abs(power) <= 1023:
            out.append(Emitted("precision", "--initial-loss-scale", (2 ** power,), "precision.initial_scale_power"))
        else:  # 2 ** 10**40 is no number a float (or the writer) can hold
            dropped.append(Dropped("precision.initial_scale_power", f"2 ** {power} is no loss scale "
                                                                    "--initial-loss-scale (a float) can hold"))
    for dotted, flag in (("precision.min_loss_scale", "--min-loss-scale"),
                         ("precision.loss_scale_window", "--loss-scale-window"),
                         ("precision.hysteresis", "--hysteresis")):
        value = known(plan.get(dotted))
        if value is not None and dtype == "fp16":
            out.append(Emitted("precision", flag, (value,), dotted))

    optimizer = plan.optimizer
    if optimizer is not None:
        name = known(optimizer.name)
        if name is not None:
            megatron = {v.lower(): k for k, v in OPTIMIZERS.items()}.get(name.lower())
            if megatron is None and name.lower() in ("adam", "fusedadam", "cpuadam", "deepspeedcpuadam"):
                decoupled = known(optimizer.decoupled_weight_decay)
                if decoupled is True or (known(optimizer.weight_decay) or 0) == 0:
                    megatron = "adam"
                    out.append(Emitted("optimizer", "--optimizer", ("adam",), "optimizer.name", "exact",
                                       "Megatron's adam is AdamW; the same update with this weight decay"))
                else:
                    out.append(Emitted("optimizer", "--optimizer", ("adam",), "optimizer.name", "approximate",
                                       f"{name} with L2 weight decay becomes AdamW (decoupled weight decay): "
                                       "Megatron's adam has no coupled mode"))
            elif megatron is not None:
                out.append(Emitted("optimizer", "--optimizer", (megatron,), "optimizer.name"))
            elif name.lower() in ("muon", "lion", "soap"):
                out.append(Emitted("optimizer", "--optimizer", (name.lower(),), "optimizer.name"))
            else:
                dropped.append(Dropped("optimizer.name", f"Megatron builds adam (AdamW), sgd, muon, lion or soap; "
                                                         f"it has no {name}"))
        if _peak(plan) is None:
            value_flag("optimizer.lr")
        betas = known(optimizer.betas)
        if isinstance(betas, list) and len(betas) == 2 and all(isinstance(b, (int, float)) for b in betas):
            out.append(Emitted("optimizer", "--adam-beta1", (float(betas[0]),), "optimizer.betas"))
            out.append(Emitted("optimizer", "--adam-beta2", (float(betas[1]),), "optimizer.betas"))
        value_flag("optimizer.eps")
        value_flag("optimizer.weight_decay")
        if optimizer.params:
            dropped.append(Dropped("optimizer.params", "Megatron's optimizers take no other parameters from the "
                                                       "command line"))
    value_flag("gradient_clipping")

    _schedule(plan, out, dropped, translate)

    stage = known(plan.sharding.stage)
    modes = {"--use-torch-fsdp2", "--use-megatron-fsdp"} & set(plan.passthrough.get(FORMAT, {}))
    if modes and stage is not None:
        out.append(Emitted("memory", "", (), "sharding.stage", "exact", f"{sorted(modes)[0]}, as in the source"))
    elif stage == 0:
        out.append(Emitted("memory", "", (), "sharding.stage", "exact",
                           "ZeRO-0: Megatron's default data parallelism (every rank holds the full optimizer "
                           "state; no --use-distributed-optimizer)"))
    elif stage == 1:
        out.append(Emitted("memory", "--use-distributed-optimizer", (), "sharding.stage", "exact",
                           "ZeRO-1: optimizer state sharded over the data-parallel ranks"))
    elif stage in (2, 3):
        out.append(Emitted("memory", "--use-distributed-optimizer", (), "sharding.stage", "approximate",
                           f"ZeRO-{stage}: Megatron's distributed optimizer shards the optimizer state and "
                           "reduce-scatters gradients, but every rank keeps the full parameters"
                           + (" (ZeRO-3 shards them: --use-megatron-fsdp or --use-torch-fsdp2, with requirements of "
                              "their own)" if stage == 3 else "")))
    if known(plan.sharding.hybrid):
        dropped.append(Dropped("sharding.hybrid", "hybrid sharding: use --num-distributed-optimizer-instances, "
                                                  "which shards within groups of the data-parallel ranks"))
    if known(plan.communication.overlap) is True:
        value_flag("communication.overlap")
    if known(plan.communication.reduce_bucket_elements) is not None:
        value_flag("communication.reduce_bucket_elements", "approximate",
                   "Megatron's bucket size counts parameters per bucket and is used only with --overlap-grad-reduce")
    source = set(plan.passthrough.get(FORMAT, {}))  # a Megatron source's own flags, written back as they are
    if {"--recompute-granularity", "--recompute-activations"} & source:
        out.append(Emitted("memory", "", (), "activation_checkpointing", "exact", "the source's recompute flags"))
    elif plan.activation_checkpointing is not None and known(plan.activation_checkpointing.enabled) is not False \
            and not plan.activation_checkpointing.is_empty():
        out.append(Emitted("memory", "--recompute-granularity", ("full",), "activation_checkpointing",
                           "approximate", "full recomputation of every layer (uniform, one layer per checkpoint); "
                                          "the source's checkpointing may cover other parts of the model"))
        out.append(Emitted("memory", "--recompute-method", ("uniform",), "activation_checkpointing", "approximate"))
        out.append(Emitted("memory", "--recompute-num-layers", (1,), "activation_checkpointing", "approximate"))
    offload = plan.offload.optimizer
    if "--optimizer-cpu-offload" in source:
        out.append(Emitted("memory", "", (), "offload.optimizer", "exact", "the source's offload flags"))
    elif offload is not None and known(offload.device) in ("cpu", "nvme"):
        dropped.append(Dropped("offload.optimizer", "Megatron's --optimizer-cpu-offload needs its precision-aware "
                                                    "optimizer (Transformer Engine) and has no NVMe tier"))
    if plan.offload.params is not None and known(plan.offload.params.device) in ("cpu", "nvme"):
        dropped.append(Dropped("offload.params", "Megatron does not offload parameters"))
    if translate:
        out += _placeholders(original, out)
    return out, dropped


# Megatron's --lr-decay-style for a schedule of the same shape, by the schedule's name in the Plan
# (Megatron's own styles; DeepSpeed's schedulers; Hugging Face / Axolotl `lr_scheduler`; torchtitan's
# `decay_type`; torch's CosineAnnealingLR): (style, the WSD annealing style or None, why).
# Megatron's schedule (megatron/core/optimizer_param_scheduler.py): a linear warmup from
# --lr-warmup-init to --lr over --lr-warmup-iters, then the decay from --lr to --min-lr, ending at
# --lr-decay-iters (counted from step 0, the warmup inside it).
_STYLES: dict[str, tuple[str, str | None, str]] = {
    "constant": ("constant", None, ""),
    "linear": ("linear", None, ""),
    "cosine": ("cosine", None, ""),
    "inverse-square-root": ("inverse-square-root", None, ""),
    "WSD": ("WSD", None, ""),
    "WarmupLR": ("constant", None, "DeepSpeed's WarmupLR warms up from warmup_min_lr to warmup_max_lr, then keeps "
                                   "it: Megatron's constant style after --lr-warmup-iters"),
    "WarmupDecayLR": ("linear", None, "DeepSpeed's WarmupDecayLR warms up to warmup_max_lr, then decays linearly to "
                                      "warmup_min_lr at total_num_steps: Megatron's linear style, decaying to "
                                      "--min-lr at --lr-decay-iters"),
    "WarmupCosineLR": ("cosine", None, "DeepSpeed's WarmupCosineLR warms up to the optimizer's lr, then decays on a "
                                       "cosine to cos_min_ratio × lr at total_num_steps: Megatron's cosine style, "
                                       "decaying to --min-lr at --lr-decay-iters"),
    "constant_with_warmup": ("constant", None, "a warmup, then a constant LR: Megatron's constant style"),
    "sqrt": ("WSD", "minus_sqrt", "torchtitan's sqrt decay (1 - sqrt(progress)) is Megatron's WSD style with "
                                  "--lr-wsd-decay-style minus_sqrt"),
    "CosineAnnealingLR": ("cosine", None, "torch's CosineAnnealingLR: a cosine from lr to eta_min over T_max steps, "
                                          "with no warmup"),
}
# DeepSpeed's schedulers (deepspeed/runtime/lr_schedules.py): their warmup is logarithmic unless
# warmup_type is "linear"; WarmupCosineLR ends at cos_min_ratio × lr (default 0.0001).
_DEEPSPEED_SCHEDULES = ("WarmupLR", "WarmupDecayLR", "WarmupCosineLR")
_COS_MIN_RATIO = 0.0001


def _peak(plan: Plan) -> float | None:
    """The peak LR a schedule sets itself, whatever the optimizer's lr: DeepSpeed's WarmupLR and
    WarmupDecayLR end their warmup at warmup_max_lr."""
    scheduler = plan.scheduler
    if scheduler is None or known(scheduler.name) not in ("WarmupLR", "WarmupDecayLR"):
        return None
    peak = known(scheduler.max_lr)
    return peak if isinstance(peak, (int, float)) and not isinstance(peak, bool) else None


def _schedule(plan: Plan, out: list[Emitted], dropped: list[Dropped], translate: bool) -> None:
    """The LR schedule as Megatron's flags: the decay style of the same shape, the warmup and decay
    lengths, the start and end LR."""
    scheduler = plan.scheduler
    optimizer_lr = known(plan.optimizer.lr) if plan.optimizer is not None else None
    if scheduler is None:
        # a source that states its optimizer's LR and no schedule keeps that LR (a ds_config without a
        # scheduler); one that states neither (an Accelerate config) leaves both to the training code
        if translate and optimizer_lr is not None:
            out.append(Emitted("schedule", "--lr-decay-style", ("constant",), "scheduler", "exact",
                               "the source has no LR schedule (the LR stays constant); Megatron's default "
                               "--lr-decay-style is linear"))
        return
    name = known(scheduler.name)
    params = scheduler.params or {}
    lr = optimizer_lr if isinstance(optimizer_lr, (int, float)) and not isinstance(optimizer_lr, bool) else None
    peak = _peak(plan)
    if peak is not None:
        reason = f"{name} ends its warmup at warmup_max_lr {peak!r}, the peak LR"
        if lr is not None and lr != peak:
            reason += f", not at the optimizer's lr {lr!r}, which the schedule overrides"
        out.append(Emitted("optimizer", "--lr", (peak,), "scheduler.max_lr", "exact", reason))
        lr = peak
    elif known(scheduler.max_lr) is not None and lr is None:
        out.append(Emitted("optimizer", "--lr", (known(scheduler.max_lr),), "scheduler.max_lr", "exact",
                           "the peak learning rate"))
    style = _STYLES.get(name) if isinstance(name, str) else None
    decay_ratio = params.get("decay_ratio")
    if style is not None and name in ("linear", "cosine", "sqrt") and isinstance(decay_ratio, (int, float)):
        # torchtitan: warmup, a stable LR, then the decay over the last decay_ratio of the steps
        style = ("WSD", {"linear": "linear", "cosine": "cosine", "sqrt": "minus_sqrt"}[name],
                 f"torchtitan's {name} decay over the last {decay_ratio} of the steps after a stable LR is Megatron's "
                 "WSD style")
    if style is None:
        if name is not None:
            dropped.append(Dropped("scheduler.name", "Megatron's --lr-decay-style is one of constant, linear, cosine, "
                                                     f"inverse-square-root, WSD; {name} has no schedule of that "
                                                     "shape among them"))
    else:
        decay, wsd, reason = style
        warmup_type = known(scheduler.warmup_type)
        warmup = known(scheduler.warmup_steps)
        # another framework's schedule of the same shape: its steps and warmup are counted its own way
        status = "exact" if decay == name else "approximate"
        if name in _DEEPSPEED_SCHEDULES and warmup_type != "linear" and warmup not in (None, 0):
            status = "approximate"
            reason += ("; DeepSpeed warms up logarithmically (warmup_type log, its default), Megatron linearly"
                       if warmup_type in (None, "log") else f"; DeepSpeed's warmup_type {warmup_type}, Megatron's "
                                                             "warmup is linear")
        out.append(Emitted("schedule", "--lr-decay-style", (decay,), "scheduler.name", status, reason))
        if wsd is not None:
            out.append(Emitted("schedule", "--lr-wsd-decay-style", (wsd,), "scheduler.name", status, reason))
            total = known(scheduler.total_steps)
            if isinstance(total, int) and not isinstance(total, bool):
                steps = total - (known(scheduler.warmup_steps) or 0) if decay_ratio is None \
                    else round(total * decay_ratio)
                out.append(Emitted("schedule", "--lr-wsd-decay-iters", (steps,), "scheduler.params", "exact",
                                   "the annealing steps"))
            else:  # Megatron's WSD schedule asserts it has its annealing length (OptimizerParamScheduler)
                share = f"{decay_ratio} × " if decay_ratio is not None else "all but the warmup of "
                out.append(Emitted("schedule", "--lr-wsd-decay-iters", (PLACEHOLDER,), "scheduler.params", "unknown",
                                   fill=f"the annealing iterations of the WSD schedule: {share}the training "
                                        "iterations, which the source does not state"))
    given = plan.passthrough.get(FORMAT, {})
    # sample-based training (a source's --train-samples, written back): validate_args refuses iteration
    # counts for the schedule, so its spans go back in samples, steps x the fixed global batch (the reader's
    # inverse: training.py steps the scheduler by the global batch each iteration)
    batch = known(plan.batch.global_) if "--train-samples" in given else None
    unit, scale = ("samples", batch) if isinstance(batch, int) and not isinstance(batch, bool) and batch > 0 else \
        ("iters", 1)
    if known(scheduler.warmup_steps) is not None and "--lr-warmup-fraction" not in given:
        # (a Megatron source's --lr-warmup-fraction is written back as given: validate_args refuses both)
        out.append(Emitted("schedule", f"--lr-warmup-{unit}", (known(scheduler.warmup_steps) * scale,),
                           "scheduler.warmup_steps"))
    span = plan.provenance.get("scheduler.total_steps")
    spans_training = unit == "samples" and span is not None and span.pointer == "--train-samples"
    if known(scheduler.total_steps) is not None and name != "WarmupLR" and not spans_training:
        # (a decay over the whole --train-samples is Megatron's default span: not written twice)
        out.append(Emitted("schedule", f"--lr-decay-{unit}", (known(scheduler.total_steps) * scale,),
                           "scheduler.total_steps"))
    # the LR at the end of the decay, and where the warmup starts
    low = known(scheduler.min_lr)
    low = low if isinstance(low, (int, float)) and not isinstance(low, bool) else None
    end = start = None
    if name == "WarmupLR":
        start = low
    elif name == "WarmupDecayLR":
        start = end = low
    elif name == "WarmupCosineLR":
        ratio = params.get("cos_min_ratio", _COS_MIN_RATIO)
        if lr is not None and isinstance(ratio, (int, float)):
            end = ratio * lr
        warm = params.get("warmup_min_ratio")
        if lr is not None and isinstance(warm, (int, float)) and warm:
            start = warm * lr
    elif isinstance(params.get("min_lr_factor"), (int, float)) and lr is not None:
        end = params["min_lr_factor"] * lr
    else:
        end = low
    if end is not None:
        out.append(Emitted("schedule", "--min-lr", (end,), "scheduler.min_lr", "exact",
                           "" if end == low else "the LR the decay ends at"))
    if start:
        out.append(Emitted("schedule", "--lr-warmup-init", (start,), "scheduler.min_lr", "exact",
                           "the LR the warmup starts from"))
    other = {k: v for k, v in params.items() if k not in ("decay_ratio", "cos_min_ratio", "warmup_min_ratio",
                                                          "min_lr_factor")}
    if other:
        dropped.append(Dropped("scheduler.params", "Megatron's schedule takes no other parameters"))


# What to fill in for each flag validate_args requires (VALIDATE_REQUIRED), and the Plan field it comes from.
_FILL = {"--num-layers": ("model", "model.layers", "the number of transformer layers of the model"),
         "--hidden-size": ("model", "model.hidden", "the model's hidden size"),
         "--num-attention-heads": ("model", "model.heads", "the model's number of attention heads"),
         "--seq-length": ("batch", "batch.sequence_length", "the training sequence length in tokens"),
         "--max-position-embeddings": ("model", None, "the model's maximum number of positions (at least the "
                                                      "sequence length)"),
         "--micro-batch-size": ("batch", "batch.micro", "the micro batch size (samples per GPU per step)")}


def _placeholders(plan: Plan, emitted: list[Emitted]) -> list[Emitted]:
    """A `FILL_IN` for each flag Megatron's validate_args requires that neither the Plan nor the
    source's own Megatron flags supply (Megatron then refuses the output until it is filled in)."""
    written = {item.flag for item in emitted} | set(plan.passthrough.get(FORMAT, {}))
    out = []
    for flag, instead in VALIDATE_REQUIRED.items():
        if flag in written or any(f in written for f in instead):
            continue
        topic, dotted, what = _FILL[flag]
        value = plan.get(dotted) if dotted else None
        if isinstance(value, Unknown):
            what += f" (the source's value is not known before the job runs: {value.reason})"
        sequence = known(plan.batch.sequence_length)
        if flag == "--max-position-embeddings" and isinstance(sequence, int) and not isinstance(sequence, bool):
            what = what[:-1] + f" {sequence})"
        out.append(Emitted(topic, flag, (PLACEHOLDER,), dotted, "unknown", fill=what))
    # validate_args: "num_experts must be non None to use expert model parallelism" (the Plan holds no
    # number of experts: the model's)
    expert = known(plan.parallelism.expert)
    if isinstance(expert, int) and expert > 1 and "--expert-model-parallel-size" in written \
            and "--num-experts" not in written:
        out.append(Emitted("model", "--num-experts", (PLACEHOLDER,), None, "unknown",
                           fill=f"the model's number of experts (a multiple of the expert-parallel size {expert})"))
    return out


def _passthrough(plan: Plan) -> list[Emitted]:
    """The source's own Megatron flags that no Plan field holds, as written (a same-format round trip)."""
    out = []
    for flag, value in plan.passthrough.get(FORMAT, {}).items():
        if isinstance(value, dict) and "unknown" in value:
            continue  # known only at run time: not written (the report says so)
        if value is True:
            out.append(Emitted("other", flag))
        elif isinstance(value, list):
            if any(isinstance(v, dict) for v in value):
                continue
            out.append(Emitted("other", flag, tuple(value)))
        elif value is not None and value is not False:
            out.append(Emitted("other", flag, (value,)))
        elif value is False:
            out.append(Emitted("other", flag))  # a store_false switch: given means False
    return out


def arguments(plan: Plan, *, translate: bool = False) -> list[str]:
    """The argument list (argv words after the entry script)."""
    emitted, _ = emit(plan, translate=translate)
    words: list[str] = []
    for item in _ordered(emitted + _passthrough(plan)):
        words.extend(item.words())
    return words


def _ordered(items: list[Emitted]) -> list[Emitted]:
    seen: set[str] = set()
    out = []
    for topic in TOPICS:
        for item in items:
            if item.topic == topic and item.flag and item.flag not in seen:
                seen.add(item.flag)
                out.append(item)
    return out


def write_arguments(plan: Plan, *, translate: bool = False) -> str:
    """A plain argument file: one flag and its values per line (a placeholder as `--flag FILL_IN`)."""
    emitted, _ = emit(plan, translate=translate)
    lines = [" ".join(shlex.quote(w) for w in item.words()) for item in _ordered(emitted + _passthrough(plan))]
    return "\n".join(lines) + ("\n" if lines else "")


def write(plan: Plan, entry: str = "pretrain_gpt.py", *, translate: bool = False) -> str:
    """A launch script: the flags in one bash array per topic, started by torchrun (a placeholder as
    `--flag FILL_IN` after a `# shardshift: fill in ...` line)."""
    emitted, _ = emit(plan, translate=translate)
    items = _ordered(emitted + _passthrough(plan))
    nodes, per_node = known(plan.world.nodes), known(plan.world.gpus_per_node)
    world = known(plan.world.world_size)
    if per_node is None and world is not None and nodes in (None, 1):
        nodes, per_node = 1, world
    given = {item.flag for item in items}
    missing = [flag for flag in REQUIRED if flag not in given
               and not (flag == "--train-iters" and "--train-samples" in given)]  # sample-based training
    lines = ["#!/bin/bash", "# Megatron-LM launch script written by shardshift.", "set -euo pipefail", ""]
    if missing:
        lines.append("# Megatron requires these, which the source does not give: " + " ".join(missing))
        lines.append("")
    lines.append(f"NNODES={nodes if nodes is not None else 1}")
    if per_node is None:
        lines.append("GPUS_PER_NODE=${GPUS_PER_NODE:?set the number of GPUs per node}")
    else:
        lines.append(f"GPUS_PER_NODE={per_node}")
    lines.append("")
    names = []
    for topic in TOPICS:
        group = [item for item in items if item.topic == topic]
        if not group:
            continue
        name = topic.upper() + "_ARGS"
        names.append(name)
        lines.append(f"{name}=(")
        for item in group:
            if item.fill is not None:
                lines.append(f"    # shardshift: fill in {item.fill}")
            lines.append("    " + " ".join(shlex.quote(w) for w in item.words()))
        lines.append(")")
        lines.append("")
    launch = ["torchrun --nnodes \"$NNODES\" --nproc_per_node \"$GPUS_PER_NODE\" " + shlex.quote(entry)]
    launch += [f'"${{{name}[@]}}"' for name in names]
    lines.append(" \\\n    ".join(launch))
    return "\n".join(lines) + "\n"


def convert(document: Document, *, style: str = "script") -> Conversion:
    """`document`'s Plan as a Megatron launch script (or argument list), with what happened to the
    source's settings: the field's flag (exact / approximate, with why) or dropped (with why); a
    placeholder entry (`unknown`, what to fill in) for each FILL_IN. A Megatron source is written
    back flag by flag (every flag gets an entry); another format's Plan is translated
    (`emit(translate=True)`), and only entries that explain something are given: a setting whose
    field no flag holds and no reason covers gets none (the measured report judges it)."""
    if document.plan is None:
        raise ValueError(f"{document.path} has no Plan to write")
    plan = document.plan
    translate = document.format != FORMAT
    emitted, dropped = emit(plan, translate=translate)
    entry = "pretrain_gpt.py"
    data = document.data
    if not translate and isinstance(getattr(data, "entry", None), str):
        entry = data.entry
    text = write_arguments(plan, translate=translate) if style == "arguments" \
        else write(plan, entry, translate=translate)
    by_field: dict[str, list[Emitted]] = {}
    for item in emitted:
        if item.field and item.fill is None:
            by_field.setdefault(item.field, []).append(item)
    for item in emitted:  # a source setting whose value needs a placeholder: it says so too
        if item.field and item.fill is not None and item.field not in by_field:
            by_field[item.field] = [Emitted(item.topic, item.flag, (), item.field, "unknown",
                                            f"written as the placeholder {item.flag} {PLACEHOLDER}: fill in "
                                            f"{item.fill}")]
    reasons = {d.field: d.reason for d in dropped}
    passthrough = plan.passthrough.get(FORMAT, {})
    entries: list[MappingEntry] = []
    for pointer, line, column in source_settings(document):
        fields = [dotted for dotted, where in plan.provenance.items() if where.pointer == pointer
                  and where.file == document.path]
        if not translate and not fields:
            why = _unknown_reason(passthrough.get(pointer))
            if why is not None:  # known only at run time: _passthrough() does not write it
                entries.append(MappingEntry(pointer, line, column, "unknown", None,
                                            f"not known before the job runs: {why}; not written"))
                continue
            entries.append(MappingEntry(pointer, line, column, "exact", pointer, "the same flag"))
            continue
        found = _entry(pointer, line, column, fields, by_field, reasons, plan, style, translate)
        if found is not None:
            entries.append(found)
    entries += [MappingEntry("", 1, 1, "unknown", item.flag, placeholder_reason(item.fill))
                for item in _ordered(emitted) if item.fill is not None]
    entries += _refused(document, emitted, plan)
    return Conversion(text, entries)


# Flags Megatron-LM's validate_args requires (megatron/training/arguments.py: `required_args`, the
# micro batch and sequence length asserts), each with the flags that stand in for it.
VALIDATE_REQUIRED = {"--num-layers": ("--encoder-num-layers",), "--hidden-size": (), "--num-attention-heads": (),
                     "--max-position-embeddings": (), "--micro-batch-size": (),
                     "--seq-length": ("--encoder-seq-length",)}


def _unknown_reason(value: Any) -> str | None:
    """The reason of a passthrough value known only at run time (`{"unknown": why}`, or a list holding one)."""
    if isinstance(value, dict) and "unknown" in value:
        return str(value["unknown"])
    if isinstance(value, list):
        return next((str(v["unknown"]) for v in value if isinstance(v, dict) and "unknown" in v), None)
    return None


def _refused(document: Document, emitted: list[Emitted], plan: Plan) -> list[MappingEntry]:
    """A note for each flag Megatron's validate_args requires that the source gives with a value known
    only when the job runs (an environment variable with no default in the script): the written list
    lacks it, and Megatron refuses the list until it is added. Never silent."""
    data = document.data
    if document.format != FORMAT or not hasattr(data, "last"):
        return []
    written = {item.flag for item in _ordered(emitted + _passthrough(plan))}
    last = data.last()
    notes = []
    for flag, instead in VALIDATE_REQUIRED.items():
        if flag in written or any(f in written for f in instead):
            continue
        given = next((g for g in last.values() if g.spelling in (flag, *instead)), None)
        if given is None or not isinstance(given.value, Unknown):
            continue
        notes.append(MappingEntry("", given.line, given.column, "unknown", None,
                                  f"Megatron-LM requires {flag}, and the source's value is not known before the job "
                                  f"runs ({given.value.reason}): the written list lacks it, so Megatron's "
                                  f"validate_args refuses it until {flag} is added"))
    return notes


def _entry(pointer, line, column, fields, by_field, reasons, plan, style="script",
           translate=False) -> MappingEntry | None:
    for dotted in fields:
        for prefix in _prefixes(dotted):
            if prefix in by_field:
                item = by_field[prefix][0]
                target = " ".join(i.flag for i in by_field[prefix] if i.flag) or None
                return MappingEntry(pointer, line, column, item.status, target,
                                    item.reason or "the flag of the same meaning")
    for dotted in fields:
        for prefix in _prefixes(dotted):
            if prefix in reasons:
                return MappingEntry(pointer, line, column, "dropped", None, reasons[prefix])
    if fields:
        value = plan.get(fields[0])
        if isinstance(value, Unknown):
            return MappingEntry(pointer, line, column, "unknown", None, value.reason)
        if fields[0].startswith("world."):
            if style == "arguments":
                return MappingEntry(pointer, line, column, "dropped", None,
                                    "an argument list has no launcher: the number of processes is the launcher's "
                                    "(torchrun --nnodes / --nproc-per-node), given where the list is used")
            return MappingEntry(pointer, line, column, "exact", "torchrun --nnodes/--nproc_per_node",
                                "the launcher's process count")
        if translate:
            return None  # nothing to explain: the measured report says what became of it
        return MappingEntry(pointer, line, column, "dropped", None,
                            f"Megatron has no flag for {fields[0]} with this value")
    if translate:
        return None
    return MappingEntry(pointer, line, column, "dropped", None, "no Megatron counterpart: the setting is not carried "
                                                                "into the launch script")


def _prefixes(dotted: str) -> list[str]:
    parts = dotted.split(".")
    return [".".join(parts[:i]) for i in range(len(parts), 0, -1)]


def source_settings(document: Document) -> list[tuple[str, int, int]]:
    """Every setting of the source as (pointer or flag, line, column)."""
    data = document.data
    if document.format == FORMAT and hasattr(data, "given"):
        return [(g.spelling, g.line, g.column) for g in data.given]
    return document.settings()
