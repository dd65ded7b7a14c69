"""What an FSDP2 run of a Plan is: `settings_from_plan` turns a resolved Plan (resolve.py: the source
framework's defaults filled in) into `Fsdp2Settings`, every value explicit and taken from the Plan's
fields, whatever the source format. The FSDP2 module writer renders them (formats/fsdp2/writer.py), the
accelerate-fsdp2 writer takes its sharding choices from them (formats/accelerate/writer.py), and DeepSpeed's
keys are explained against them (formats/deepspeed/fsdp2_explained.py): one set of decisions, no writer
importing another's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from shardshift.formats.deepspeed.meaning import deepspeed_schedule
from shardshift.formats.fsdp2.reader import STATIC_GROWTH_INTERVAL

if TYPE_CHECKING:
    from shardshift.plan import Plan

AUTO = "auto"
REQUIRED = "FILL_IN"  # resolve.PLACEHOLDER: a value the module needs and the source does not give

TORCH_DTYPES = {"fp32": "torch.float32", "bf16": "torch.bfloat16", "fp16": "torch.float16"}

# torch.optim constructor defaults (torch 2.13), so the module states every hyper-parameter.
TORCH_OPTIMIZER_DEFAULTS: dict[str, dict[str, Any]] = {
    "AdamW": {"lr": 0.001, "betas": (0.9, 0.999), "eps": 1e-08, "weight_decay": 0.01},
    "Adam": {"lr": 0.001, "betas": (0.9, 0.999), "eps": 1e-08, "weight_decay": 0.0},
    "Adagrad": {"lr": 0.01, "lr_decay": 0.0, "weight_decay": 0.0, "initial_accumulator_value": 0.0, "eps": 1e-10},
    "SGD": {"lr": 0.001, "momentum": 0.0, "dampening": 0.0, "weight_decay": 0.0, "nesterov": False},
    "RMSprop": {"lr": 0.01, "alpha": 0.99, "eps": 1e-08, "weight_decay": 0.0, "momentum": 0.0, "centered": False},
    "Adamax": {"lr": 0.002, "betas": (0.9, 0.999), "eps": 1e-08, "weight_decay": 0.0},
    "NAdam": {"lr": 0.002, "betas": (0.9, 0.999), "eps": 1e-08, "weight_decay": 0.0, "momentum_decay": 0.004},
    "RAdam": {"lr": 0.001, "betas": (0.9, 0.999), "eps": 1e-08, "weight_decay": 0.0},
    "Adadelta": {"lr": 1.0, "rho": 0.9, "eps": 1e-06, "weight_decay": 0.0},
    "ASGD": {"lr": 0.01, "lambd": 0.0001, "alpha": 0.75, "t0": 1000000.0, "weight_decay": 0.0},
    "Rprop": {"lr": 0.01, "etas": (0.5, 1.2), "step_sizes": (1e-06, 50)},
    "Adafactor": {"lr": 0.01, "beta2_decay": -0.8, "d": 1.0, "weight_decay": 0.0},
    "Muon": {"lr": 0.001, "weight_decay": 0.1, "momentum": 0.95, "nesterov": True},
    "SparseAdam": {"lr": 0.001, "betas": (0.9, 0.999), "eps": 1e-08},
    "LBFGS": {"lr": 1, "max_iter": 20},
}
# Every keyword each torch optimizer accepts (beyond params), to tell a typo from a setting.
TORCH_OPTIMIZER_ARGUMENTS: dict[str, frozenset[str]] = {
    name: frozenset(defaults) | frozenset({"foreach", "maximize", "capturable", "differentiable", "fused"})
    for name, defaults in TORCH_OPTIMIZER_DEFAULTS.items()
}
TORCH_OPTIMIZER_ARGUMENTS = {
    **TORCH_OPTIMIZER_ARGUMENTS,
    "Adam": TORCH_OPTIMIZER_ARGUMENTS["Adam"] | {"amsgrad", "decoupled_weight_decay"},
    "AdamW": TORCH_OPTIMIZER_ARGUMENTS["AdamW"] | {"amsgrad"},
    "NAdam": TORCH_OPTIMIZER_ARGUMENTS["NAdam"] | {"decoupled_weight_decay"},
    "RAdam": TORCH_OPTIMIZER_ARGUMENTS["RAdam"] | {"decoupled_weight_decay"},
    "Adafactor": TORCH_OPTIMIZER_ARGUMENTS["Adafactor"] | {"eps"},
    "Muon": TORCH_OPTIMIZER_ARGUMENTS["Muon"] | {"ns_coefficients", "eps", "ns_steps", "adjust_lr_fn"},
    "LBFGS": frozenset({"lr", "max_iter", "max_eval", "tolerance_grad", "tolerance_change", "history_size",
                        "line_search_fn"}),
}
OPTIMIZERS_WITH_BETAS = frozenset({"Adam", "AdamW", "Adamax", "NAdam", "RAdam", "SparseAdam"})

TORCH_SCHEDULERS = frozenset({
    "ConstantLR", "CosineAnnealingLR", "CosineAnnealingWarmRestarts", "CyclicLR", "ExponentialLR", "LinearLR",
    "MultiStepLR", "OneCycleLR", "PolynomialLR", "StepLR",
})

# DeepSpeed's own optimizers: the torch class the module builds, how faithful that is, and the
# constructor defaults DeepSpeed's class would have used (deepspeed.md §1.3, §5.2).
FUSED_ADAM_DEFAULTS = {"lr": 0.001, "betas": (0.9, 0.999), "eps": 1e-08, "weight_decay": 0.0}
DEEPSPEED_OPTIMIZERS: dict[str, tuple[str, str, str, dict[str, Any]]] = {
    # lower-cased DeepSpeed name: (torch class, status, note, defaults)
    "adagrad": ("Adagrad", "exact", "DeepSpeed builds torch.optim.Adagrad (DeepSpeedCPUAdagrad when offloaded)",
                TORCH_OPTIMIZER_DEFAULTS["Adagrad"]),
    "onebitadam": ("AdamW", "approximate", "1-bit Adam without its compressed communication: the same update "
                   "as AdamW; freeze_step and the communication settings have no equivalent (DeepSpeed 0.19.7 removed "
                   "the 1-bit optimizers)", FUSED_ADAM_DEFAULTS),
    "zerooneadam": ("AdamW", "approximate", "0/1 Adam without its compressed communication and variance freezing: "
                    "plain AdamW (DeepSpeed 0.19.7 removed the 1-bit optimizers)", FUSED_ADAM_DEFAULTS),
    "onebitlamb": ("AdamW", "dropped", "1-bit LAMB: torch has no LAMB; the module builds AdamW with the same lr, "
                   "betas, eps and weight_decay as a stand-in: replace it with a LAMB implementation",
                   FUSED_ADAM_DEFAULTS),
    "lamb": ("AdamW", "dropped", "torch has no LAMB; the module builds AdamW with the same lr, betas, eps and "
             "weight_decay as a stand-in: replace it with a LAMB implementation", FUSED_ADAM_DEFAULTS),
    "lion": ("AdamW", "dropped", "torch has no Lion; the module builds AdamW with the same lr, betas and "
             "weight_decay as a stand-in: replace it with a Lion implementation", FUSED_ADAM_DEFAULTS),
    "muon": ("AdamW", "dropped", "DeepSpeed's Muon (Muon for 2-D weights, Adam for the rest) is not emitted; the "
             "module builds AdamW as a stand-in: split the parameters into torch.optim.Muon and AdamW groups",
             FUSED_ADAM_DEFAULTS),
    "muadam": ("Adam", "dropped", "MuAdam comes from the mup package; the module builds torch.optim.Adam as a "
               "stand-in: use mup.MuAdam", TORCH_OPTIMIZER_DEFAULTS["Adam"]),
    "muadamw": ("AdamW", "dropped", "MuAdamW comes from the mup package; the module builds torch.optim.AdamW as "
                "a stand-in: use mup.MuAdamW", TORCH_OPTIMIZER_DEFAULTS["AdamW"]),
    "musgd": ("SGD", "dropped", "MuSGD comes from the mup package; the module builds torch.optim.SGD as a "
              "stand-in: use mup.MuSGD", TORCH_OPTIMIZER_DEFAULTS["SGD"]),
}
# Optimizer params DeepSpeed consumes itself or that only its own classes know.
DEEPSPEED_ONLY_OPTIMIZER_PARAMS = frozenset({
    "torch_adam", "adam_w_mode", "fp32_optimizer_states", "bias_correction", "set_grad_none", "max_grad_norm",
    "freeze_step", "cuda_aware", "comm_backend_name", "var_freeze_step", "var_update_scaler", "local_step_scaler",
    "local_step_clipper", "max_coeff", "min_coeff", "coeff_beta", "factor_max", "factor_min", "factor_threshold",
    "eps_inside_sqrt", "muon_lr", "adam_lr", "ns_method", "momentum_lr",
})

# DeepSpeed's schedulers: constructor defaults (None: required), in the order the module lists them.
DEEPSPEED_SCHEDULERS: dict[str, dict[str, Any]] = {
    "WarmupLR": {"warmup_min_lr": 0.0, "warmup_max_lr": None, "warmup_num_steps": 1000, "warmup_type": "log"},
    "WarmupDecayLR": {"warmup_min_lr": 0.0, "warmup_max_lr": 0.001, "warmup_num_steps": 1000,
                      "total_num_steps": None, "warmup_type": "log"},
    "WarmupCosineLR": {"warmup_min_ratio": 0.0, "warmup_num_steps": 1000, "total_num_steps": None,
                       "cos_min_ratio": 0.0001, "warmup_type": "log"},
    "OneCycle": {"cycle_min_lr": None, "cycle_max_lr": None, "decay_lr_rate": 0.0, "cycle_first_step_size": 2000,
                 "cycle_second_step_size": None, "cycle_first_stair_count": 0, "cycle_second_stair_count": None,
                 "decay_step_size": 0, "cycle_momentum": True, "cycle_min_mom": 0.8, "cycle_max_mom": 0.9,
                 "decay_mom_rate": 0.0},
    "LRRangeTest": {"lr_range_test_min_lr": 0.001, "lr_range_test_step_size": 2000, "lr_range_test_step_rate": 1.0,
                    "lr_range_test_staircase": False},
}
# The helper each DeepSpeed schedule becomes in the module (the reader maps them back).
SCHEDULE_FUNCTIONS = {"WarmupLR": "warmup_lr", "WarmupDecayLR": "warmup_decay_lr",
                      "WarmupCosineLR": "warmup_cosine_lr_ratio", "OneCycle": "one_cycle_lr",
                      "LRRangeTest": "lr_range_test_lr"}


@dataclass
class Fsdp2Settings:
    """Everything the emitted module states, resolved and explicit. "auto" marks a value the HF
    Trainer or Accelerate would fill in; "FILL_IN" a value the module needs and the source does not give."""

    source_name: str = "the Plan"
    source_format: str | None = None  # the source file's format: the module's wording only
    world_size: int | None = None
    world_implied: bool = False
    nodes: int | None = None
    gpus_per_node: int | None = None
    train_batch_size: Any = None
    micro_batch_size: Any = None
    accumulation_steps: Any = None
    stage: Any = 3
    reshard_after_forward: Any = True
    hybrid: bool = False
    hybrid_shard_size: int | None = None
    cpu_offload: bool = False
    pin_memory: Any = True
    param_dtype: str = "fp32"
    reduce_dtype: str = "fp32"
    loss_scaler: dict[str, Any] | None = None
    skip_nonfinite: bool = False
    gradient_clipping: Any = 0.0
    sync_every_micro_step: bool = False
    activation_checkpointing: bool = False
    drop_last: bool | None = None
    optimizer_class: str = "AdamW"
    optimizer_kwargs: dict[str, Any] = field(default_factory=dict)
    optimizer_status: str = "exact"
    optimizer_note: str | None = None
    scheduler: str | None = None  # a DeepSpeed name, or "torch:<class>"
    scheduler_kwargs: dict[str, Any] = field(default_factory=dict)
    scheduler_note: str | None = None
    notes: list[str] = field(default_factory=list)
    invalid: dict[str, Any] = field(default_factory=dict)  # source values of the wrong type, replaced by defaults

    @property
    def cycle_momentum(self) -> bool:
        return (self.scheduler == "OneCycle" and self.scheduler_kwargs.get("cycle_momentum") is True
                and self.optimizer_class in OPTIMIZERS_WITH_BETAS)


def _passthrough(plan: Plan, pointer: str, default: Any = None) -> Any:
    data: Any = plan.passthrough.get("deepspeed", {})
    for token in pointer.strip("/").split("/"):
        if not isinstance(data, dict) or token not in data:
            return default
        data = data[token]
    return data


def _positive_int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value) if value == int(value) and value > 0 else None


def settings_from_plan(plan: Plan, *, deepspeed: bool | None = None, source_name: str | None = None,
                       source_format: str | None = None) -> Fsdp2Settings:
    """The settings the module states for a resolved `plan` (resolve.py): every value (world,
    batch, sharding stage, precision, clipping, optimizer, schedule) comes from a Plan field; a
    field still None gets the module's own default (full sharding, fp32, no clipping).

    `deepspeed`: the run being reproduced is DeepSpeed's engine, whose behaviour is no Plan field:
    it skips non-finite steps, its "Adam" is AdamW with FusedAdam defaults, and ds_config keys the
    Plan has no field for (dataloader_drop_last, hpZ, MiCS) sit in plan.passthrough["deepspeed"].
    An unresolved Plan is resolved with DeepSpeed's defaults first (a no-op on a resolved one).
    Default: when the Plan carries DeepSpeed passthrough settings or DeepSpeed's defaults.
    `source_format`: the source file's format, for the module's wording only."""
    if deepspeed is None:
        deepspeed = "deepspeed" in plan.passthrough or _resolved_by(plan, "deepspeed")
    plan = without_unknowns(plan)
    if deepspeed:
        plan = _with_deepspeed_defaults(plan)
        source_format = source_format or "deepspeed"
    s = Fsdp2Settings(source_name=source_name or ("ds_config.json" if deepspeed else "the Plan"),
                      source_format=source_format)
    _resolve_world_and_batch(plan, s)
    _resolve_sharding(plan, s, deepspeed)
    _resolve_precision(plan, s, deepspeed)
    _resolve_optimizer(plan, s, deepspeed)
    _resolve_scheduler(plan, s, deepspeed)
    ac = plan.activation_checkpointing
    if deepspeed:  # a ds_config section means the model checkpoints its activations
        s.activation_checkpointing = ac is not None or "activation_checkpointing" in plan.passthrough.get("deepspeed", {})
    else:
        s.activation_checkpointing = bool(ac is not None and ac.enabled)
    drop_last = _passthrough(plan, "/dataloader_drop_last")
    s.drop_last = drop_last if isinstance(drop_last, bool) else None
    return s


def _resolved_by(plan: Plan, framework: str) -> bool:
    """Whether resolution filled some field of `plan` with `framework`'s defaults."""
    from shardshift.resolve import DEFAULT_MARK, is_default

    mark = f"{DEFAULT_MARK}{framework} "
    return any(is_default(where) and (where.pointer or "").startswith(mark) for where in plan.provenance.values())


# What DeepSpeed (0.19.8) does with a ds_config that leaves these out (its defaults table,
# formats/deepspeed/defaults.py, states the same): filled only into a Plan that was not resolved;
# a resolved Plan has every one of them set already.
_DEEPSPEED_UNSET = (("sharding.stage", 0), ("precision.param_dtype", "fp32"), ("gradient_clipping", 1.0))


def _with_deepspeed_defaults(plan: Plan) -> Plan:
    """`plan` with DeepSpeed's defaults in the fields it leaves None (as resolve.py fills them,
    without the provenance: the settings never show it)."""
    import copy

    if all(plan.get(dotted) is not None for dotted, _ in _DEEPSPEED_UNSET):
        return plan
    plan = copy.deepcopy(plan)
    fp16, bf16 = _passthrough(plan, "/fp16/enabled"), _passthrough(plan, "/bf16/enabled")
    if plan.precision.param_dtype is None and plan.precision.compute_dtype is None and AUTO in (fp16, bf16):
        plan.precision.param_dtype = AUTO  # "auto": the HF Trainer decides
    for dotted, value in _DEEPSPEED_UNSET:
        if plan.get(dotted) is None and not (dotted == "precision.param_dtype" and plan.precision.compute_dtype):
            plan.set(dotted, value)
    return plan


def without_unknowns(plan: Plan) -> Plan:
    """A copy of `plan` with every Unknown field unset: the module never states a value that is
    not known (it uses the default, and the migration report lists the field as unknown)."""
    unknowns = plan.unknowns()
    if not unknowns:
        return plan
    import copy

    from shardshift.plan import assign

    plan = copy.deepcopy(plan)
    for dotted, _ in unknowns:
        assign(plan, dotted, None)
    return plan


def _resolve_world_and_batch(plan: Plan, s: Fsdp2Settings) -> None:
    from shardshift.resolve import is_default

    world = plan.world
    s.nodes, s.gpus_per_node = world.nodes, world.gpus_per_node
    s.world_size = world.world_size or (world.nodes * world.gpus_per_node if world.nodes and world.gpus_per_node
                                        else None)
    batch = plan.batch
    s.train_batch_size, s.micro_batch_size, s.accumulation_steps = batch.global_, batch.micro, batch.accumulation
    if s.world_size is None:
        # Only a full batch triple fixes the data-parallel size (DeepSpeed refuses any other);
        # with the accumulation unset, the run derives it from the world it meets, so setup()
        # reads the world at run time instead of the module guessing one.
        train, micro = _positive_int(batch.global_), _positive_int(batch.micro)
        steps = _positive_int(batch.accumulation)
        stated = not any(is_default(plan.provenance.get(f"batch.{name}")) for name in ("global_", "micro",
                                                                                       "accumulation"))
        if train and micro and steps and stated and train % (micro * steps) == 0:
            s.world_size, s.world_implied = train // (micro * steps), True


def _resolve_sharding(plan: Plan, s: Fsdp2Settings, deepspeed: bool) -> None:
    sharding = plan.sharding
    stage = sharding.stage if sharding.stage is not None else 3  # the Plan's, else FSDP2's full sharding
    s.stage = stage
    if sharding.reshard_after_forward is not None:
        s.reshard_after_forward = sharding.reshard_after_forward
    elif stage == AUTO:
        s.reshard_after_forward = AUTO
    else:
        s.reshard_after_forward = stage == 3
    hpz = _positive_int(_passthrough(plan, "/zero_optimization/zero_hpz_partition_size"))
    if deepspeed and hpz and hpz > 1 and stage == 3 and sharding.reshard_after_forward is None:
        s.reshard_after_forward = hpz
    replicate = _positive_int(plan.parallelism.data_parallel_replicate)
    shard = _positive_int(plan.parallelism.data_parallel_shard)
    mics = _positive_int(_passthrough(plan, "/zero_optimization/mics_shard_size"))
    if sharding.hybrid or (replicate and replicate > 1):
        s.hybrid, s.hybrid_shard_size = True, sharding.hybrid_shard_size or shard
    elif deepspeed and mics and stage == 3:
        s.hybrid, s.hybrid_shard_size = True, mics
    if s.hybrid and s.hybrid_shard_size is None:
        s.hybrid_shard_size = s.gpus_per_node
    targets = [t for t in (plan.offload.params, plan.offload.optimizer) if t is not None]
    offloaded = [t for t in targets if t.device in ("cpu", "nvme")]
    s.cpu_offload = bool(offloaded)
    pins = [t.pin_memory for t in offloaded if t.pin_memory is not None]
    s.pin_memory = pins[0] if pins else True


def _power_of_two(power: Any) -> float:
    """2 ** initial_scale_power, inf past a float's range (a power such as 10**40)."""
    try:
        return 2.0 ** power
    except OverflowError:
        return math.inf


def _resolve_precision(plan: Plan, s: Fsdp2Settings, deepspeed: bool) -> None:
    precision = plan.precision
    dtype = precision.param_dtype or precision.compute_dtype
    s.param_dtype = dtype if dtype in (*TORCH_DTYPES, AUTO) else "fp32"
    reduce = precision.reduce_dtype or plan.communication.dtype
    s.reduce_dtype = reduce if reduce in (*TORCH_DTYPES, AUTO) else "fp32"
    if s.param_dtype == "fp16":
        static = precision.loss_scale not in (None, 0, AUTO) and precision.loss_scale > 0
        power = precision.initial_scale_power if precision.initial_scale_power is not None else 16
        s.loss_scaler = {
            "init_scale": float(precision.loss_scale) if static else _power_of_two(power),
            "growth_interval": STATIC_GROWTH_INTERVAL if static else (precision.loss_scale_window or 1000),
            "static": static,
        }
    if deepspeed:
        if s.param_dtype == "bf16" and s.stage == 3:
            s.skip_nonfinite = False  # ZeRO-3 checks fp16 gradients only (mapping.ZERO3_BF16_OVERFLOW)
        elif s.param_dtype == "bf16":
            check = _passthrough(plan, "/bf16/check_grad_overflow", True)
            s.skip_nonfinite = check is not False
        else:
            s.skip_nonfinite = s.stage not in (0, AUTO) or s.param_dtype == "fp16"
    s.gradient_clipping = 0.0 if plan.gradient_clipping is None else plan.gradient_clipping


def _as_tuple(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _resolve_optimizer(plan: Plan, s: Fsdp2Settings, deepspeed: bool) -> None:
    optimizer = plan.optimizer
    if optimizer is None or optimizer.name is None:
        s.optimizer_class, s.optimizer_kwargs = "AdamW", dict(FUSED_ADAM_DEFAULTS if deepspeed
                                                              else TORCH_OPTIMIZER_DEFAULTS["AdamW"])
        s.optimizer_status = "approximate"
        s.optimizer_note = ("the source names no optimizer (DeepSpeed used the one passed to deepspeed.initialize): "
                            "AdamW with DeepSpeed's FusedAdam defaults stands in; edit build_optimizer" if deepspeed
                            else "the source names no optimizer (the training script builds it): AdamW with "
                            "torch's defaults stands in; edit build_optimizer")
        _lift_optimizer_fields(optimizer, s)
        return
    name = optimizer.name
    key = name.lower()
    params = dict(optimizer.params)
    if deepspeed and key in ("adam", "adamw"):
        mode = params.get("adam_w_mode", True)
        decoupled = optimizer.decoupled_weight_decay
        if decoupled is None:
            decoupled = key == "adamw" or mode is not False
        torch_adam = params.get("torch_adam") is True
        s.optimizer_class = "AdamW" if decoupled else "Adam"
        defaults = TORCH_OPTIMIZER_DEFAULTS[s.optimizer_class] if torch_adam else FUSED_ADAM_DEFAULTS
        s.optimizer_kwargs = dict(defaults)
        s.optimizer_note = (f"DeepSpeed {name!r} is torch.optim.{s.optimizer_class} "
                            f"({'decoupled' if decoupled else 'L2'} weight decay"
                            f"{', torch_adam' if torch_adam else ', FusedAdam defaults: weight_decay 0'})")
    elif deepspeed and key in DEEPSPEED_OPTIMIZERS:
        torch_class, status, note, defaults = DEEPSPEED_OPTIMIZERS[key]
        s.optimizer_class, s.optimizer_status, s.optimizer_note = torch_class, status, note
        s.optimizer_kwargs = dict(defaults)
        if key == "adagrad" and plan.offload.optimizer is not None and plan.offload.optimizer.device == "cpu":
            s.optimizer_kwargs = {"lr": 0.01, "lr_decay": 0.0, "weight_decay": 0.0, "initial_accumulator_value": 0.0,
                                  "eps": 1e-10}
    elif name in TORCH_OPTIMIZER_DEFAULTS:
        s.optimizer_class, s.optimizer_kwargs = name, dict(TORCH_OPTIMIZER_DEFAULTS[name])
        s.optimizer_note = f"torch.optim.{name}, as DeepSpeed builds it for a torch optimizer name" if deepspeed else None
        if name == "Adam" and optimizer.decoupled_weight_decay:
            params.setdefault("decoupled_weight_decay", True)
    else:
        s.optimizer_class, s.optimizer_kwargs = "AdamW", dict(FUSED_ADAM_DEFAULTS)
        s.optimizer_status = "dropped"
        s.optimizer_note = (f"optimizer {name!r} is not a torch.optim class the module can build; AdamW with the "
                            "same lr, betas, eps and weight_decay stands in: replace it")
    _lift_optimizer_fields(optimizer, s)
    accepted = TORCH_OPTIMIZER_ARGUMENTS.get(s.optimizer_class, frozenset())
    for key_name, value in params.items():
        if key_name in accepted and key_name not in DEEPSPEED_ONLY_OPTIMIZER_PARAMS:
            s.optimizer_kwargs[key_name] = _as_tuple(value)
    _check_types(s.optimizer_kwargs, s, TORCH_OPTIMIZER_DEFAULTS.get(s.optimizer_class, {}))


def _lift_optimizer_fields(optimizer: Any, s: Fsdp2Settings) -> None:
    if optimizer is None:
        return
    accepted = TORCH_OPTIMIZER_ARGUMENTS.get(s.optimizer_class, frozenset())
    for name in ("lr", "betas", "eps", "weight_decay"):
        value = getattr(optimizer, name)
        if value is not None and name in accepted:
            s.optimizer_kwargs[name] = _as_tuple(value)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _type_ok(value: Any, default: Any) -> bool:
    """Whether `value` has the type of `default` (numbers, bools, strings, pairs of numbers)."""
    if value == AUTO or default is None:
        return True
    if isinstance(default, bool):
        return isinstance(value, bool)
    if _number(default):
        return _number(value)
    if isinstance(default, str):
        return isinstance(value, str)
    if isinstance(default, tuple):
        return isinstance(value, (tuple, list)) and len(value) == len(default) and all(map(_number, value))
    return True


def _check_types(kwargs: dict[str, Any], s: Fsdp2Settings, defaults: dict[str, Any]) -> None:
    """Replace values of the wrong type (DeepSpeed fails on them) by the default, noting them."""
    for name, value in list(kwargs.items()):
        if name in defaults and not _type_ok(value, defaults[name]):
            s.invalid[name] = value
            kwargs[name] = defaults[name]


def _resolve_scheduler(plan: Plan, s: Fsdp2Settings, deepspeed: bool) -> None:
    from shardshift.formats.deepspeed.reader import SCHEDULER_FIELDS

    scheduler = deepspeed_schedule(plan)
    if scheduler is None or scheduler.name is None:
        return
    name = scheduler.name
    given = dict(scheduler.params)
    for source, target in SCHEDULER_FIELDS.get(name, {}).items():
        value = getattr(scheduler, target)
        if value is not None:
            given[source] = value
    if name in DEEPSPEED_SCHEDULERS:
        kwargs: dict[str, Any] = {}
        for key, default in DEEPSPEED_SCHEDULERS[name].items():
            kwargs[key] = given.get(key, default)
        if name == "WarmupLR" and kwargs["warmup_max_lr"] is None:
            kwargs["warmup_max_lr"] = s.optimizer_kwargs.get("lr", REQUIRED)
        if name == "OneCycle":
            if kwargs["cycle_second_step_size"] is None:
                kwargs["cycle_second_step_size"] = kwargs["cycle_first_step_size"]
            if kwargs["cycle_second_stair_count"] is None:
                kwargs["cycle_second_stair_count"] = kwargs["cycle_first_stair_count"]
        if "warmup_type" in kwargs and kwargs["warmup_type"] not in ("log", "linear", AUTO):
            s.notes.append(f"warmup_type {kwargs['warmup_type']!r} is unknown: DeepSpeed warns and uses 'log'")
            kwargs["warmup_type"] = "log"
        _check_types(kwargs, s, {k: v for k, v in DEEPSPEED_SCHEDULERS[name].items() if v is not None})
        for key, value in kwargs.items():
            if value is None:
                kwargs[key] = REQUIRED
        s.scheduler, s.scheduler_kwargs = name, kwargs
    elif name in TORCH_SCHEDULERS:
        s.scheduler, s.scheduler_kwargs = "torch:" + name, given
    else:
        s.scheduler_note = (f"scheduler {name!r} is neither a DeepSpeed schedule nor a torch scheduler the module "
                            "can build; the learning rate stays constant: edit build_scheduler")


# --- rendering --------------------------------------------------------------------------
