"""What DeepSpeed builds from the `optimizer` and `scheduler` blocks of a ds_config, as data.

`optimizer.params` and `scheduler.params` become keyword arguments of a constructor
(`runtime/engine.py` `_configure_basic_optimizer`, `_scheduler_from_config`), so a key the
constructor does not take is a TypeError inside `deepspeed.initialize`. This module records,
for every optimizer and scheduler type DeepSpeed accepts, the class it builds and the parameters
that class takes, with their defaults. Read from the DeepSpeed 0.19.8 and torch 2.13 sources
(`deepspeed/ops/{adam,lamb,lion,adagrad}`, `deepspeed/runtime/lr_schedules.py`,
`torch/optim`); tests/test_rules_deepspeed_optimizer_scheduler_script.py compares every row with the installed packages.

Optimizer types: a DeepSpeed name (matched case-insensitively: DeepSpeed lower-cases it) or the
exact name of a `torch.optim` class. Scheduler types: case-sensitive, a DeepSpeed schedule or a
`torch.optim.lr_scheduler` class.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()

# DeepSpeed removed 1-bit Adam, 0/1 Adam and 1-bit Lamb (PR #8490, tracking issue #8489).
ONE_BIT_REMOVED_IN = (0, 19, 7)
# warmup_num_steps / lr_range_test_step_size must be a positive int (PR #8126).
STEP_COUNT_INT_CHECK_SINCE = (0, 19, 3)
# WarmupLR without warmup_max_lr peaks at the optimizer's lr (0.001 before; PR #7360).
WARMUP_LR_MAX_FOLLOWS_OPTIMIZER_SINCE = (0, 17, 2)


@dataclass(frozen=True, slots=True)
class Signature:
    """A constructor: the class DeepSpeed builds and the keyword parameters it takes, in order
    (name, default), `REQUIRED` for parameters without a default."""

    cls: str
    params: tuple[tuple[str, Any], ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.params)

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(name for name, default in self.params if default is REQUIRED)

    def default(self, name: str) -> Any:
        return dict(self.params).get(name)


def _sig(cls: str, *params: tuple[str, Any]) -> Signature:
    return Signature(cls, tuple(params))


# --- optimizers -------------------------------------------------------------------------------

# torch.optim classes (torch 2.13), without the first argument (the parameters).
TORCH_OPTIMIZERS: dict[str, Signature] = {
    "ASGD": _sig("torch.optim.ASGD", ("lr", 0.01), ("lambd", 0.0001), ("alpha", 0.75), ("t0", 1000000.0),
                 ("weight_decay", 0), ("foreach", None), ("maximize", False), ("differentiable", False),
                 ("capturable", False)),
    "Adadelta": _sig("torch.optim.Adadelta", ("lr", 1.0), ("rho", 0.9), ("eps", 1e-06), ("weight_decay", 0),
                     ("foreach", None), ("capturable", False), ("maximize", False), ("differentiable", False)),
    "Adafactor": _sig("torch.optim.Adafactor", ("lr", 0.01), ("beta2_decay", -0.8), ("eps", (None, 0.001)), ("d", 1.0),
                      ("weight_decay", 0.0), ("foreach", None), ("maximize", False)),
    "Adagrad": _sig("torch.optim.Adagrad", ("lr", 0.01), ("lr_decay", 0), ("weight_decay", 0),
                    ("initial_accumulator_value", 0), ("eps", 1e-10), ("foreach", None), ("maximize", False),
                    ("differentiable", False), ("fused", None)),
    "Adam": _sig("torch.optim.Adam", ("lr", 0.001), ("betas", (0.9, 0.999)), ("eps", 1e-08), ("weight_decay", 0),
                 ("amsgrad", False), ("foreach", None), ("maximize", False), ("capturable", False),
                 ("differentiable", False), ("fused", None), ("decoupled_weight_decay", False)),
    "AdamW": _sig("torch.optim.AdamW", ("lr", 0.001), ("betas", (0.9, 0.999)), ("eps", 1e-08), ("weight_decay", 0.01),
                  ("amsgrad", False), ("maximize", False), ("foreach", None), ("capturable", False),
                  ("differentiable", False), ("fused", None)),
    "Adamax": _sig("torch.optim.Adamax", ("lr", 0.002), ("betas", (0.9, 0.999)), ("eps", 1e-08), ("weight_decay", 0),
                   ("foreach", None), ("maximize", False), ("differentiable", False), ("capturable", False)),
    "LBFGS": _sig("torch.optim.LBFGS", ("lr", 1), ("max_iter", 20), ("max_eval", None), ("tolerance_grad", 1e-07),
                  ("tolerance_change", 1e-09), ("history_size", 100), ("line_search_fn", None)),
    "Muon": _sig("torch.optim.Muon", ("lr", 0.001), ("weight_decay", 0.1), ("momentum", 0.95), ("nesterov", True),
                 ("ns_coefficients", (3.4445, -4.775, 2.0315)), ("eps", 1e-07), ("ns_steps", 5),
                 ("adjust_lr_fn", None)),
    "NAdam": _sig("torch.optim.NAdam", ("lr", 0.002), ("betas", (0.9, 0.999)), ("eps", 1e-08), ("weight_decay", 0),
                  ("momentum_decay", 0.004), ("decoupled_weight_decay", False), ("foreach", None), ("maximize", False),
                  ("capturable", False), ("differentiable", False)),
    "RAdam": _sig("torch.optim.RAdam", ("lr", 0.001), ("betas", (0.9, 0.999)), ("eps", 1e-08), ("weight_decay", 0),
                  ("decoupled_weight_decay", False), ("foreach", None), ("maximize", False), ("capturable", False),
                  ("differentiable", False)),
    "RMSprop": _sig("torch.optim.RMSprop", ("lr", 0.01), ("alpha", 0.99), ("eps", 1e-08), ("weight_decay", 0),
                    ("momentum", 0), ("centered", False), ("capturable", False), ("foreach", None), ("maximize", False),
                    ("differentiable", False)),
    "Rprop": _sig("torch.optim.Rprop", ("lr", 0.01), ("etas", (0.5, 1.2)), ("step_sizes", (1e-06, 50)),
                  ("capturable", False), ("foreach", None), ("maximize", False), ("differentiable", False)),
    "SGD": _sig("torch.optim.SGD", ("lr", 0.001), ("momentum", 0), ("dampening", 0), ("weight_decay", 0),
                ("nesterov", False), ("maximize", False), ("foreach", None), ("differentiable", False),
                ("fused", None)),
    "SparseAdam": _sig("torch.optim.SparseAdam", ("lr", 0.001), ("betas", (0.9, 0.999)), ("eps", 1e-08),
                       ("maximize", False)),
}

FUSED_ADAM = _sig("deepspeed.ops.adam.FusedAdam", ("lr", 1e-3), ("bias_correction", True), ("betas", (0.9, 0.999)),
                  ("eps", 1e-8), ("weight_decay", 0.0), ("amsgrad", False), ("set_grad_none", True))
# adamw_mode and fp32_optimizer_states are set by DeepSpeed itself.
CPU_ADAM = _sig("deepspeed.ops.adam.DeepSpeedCPUAdam", ("lr", 1e-3), ("bias_correction", True),
                ("betas", (0.9, 0.999)), ("eps", 1e-8), ("weight_decay", 0), ("amsgrad", False))
FUSED_LAMB = _sig("deepspeed.ops.lamb.FusedLamb", ("lr", 1e-3), ("bias_correction", True), ("betas", (0.9, 0.999)),
                  ("eps", 1e-8), ("eps_inside_sqrt", False), ("weight_decay", 0.0), ("max_grad_norm", 0.0),
                  ("max_coeff", 10.0), ("min_coeff", 0.01), ("amsgrad", False))
FUSED_LION = _sig("deepspeed.ops.lion.FusedLion", ("lr", 1e-3), ("betas", (0.9, 0.999)), ("weight_decay", 0.0),
                  ("set_grad_none", True))
CPU_LION = _sig("deepspeed.ops.lion.DeepSpeedCPULion", ("lr", 1e-3), ("betas", (0.9, 0.999)), ("weight_decay", 0),
                ("fp32_optimizer_states", True))
CPU_ADAGRAD = _sig("deepspeed.ops.adagrad.DeepSpeedCPUAdagrad", ("lr", 1e-2), ("eps", 1e-10), ("weight_decay", 0),
                   ("amsgrad", False), ("fp32_optimizer_states", True))
# Muon: DeepSpeed reads these keys and silently drops any other (engine.py _MUON_HALF_KEYS,
# _ADAM_HALF_KEYS, muon_lr / adam_lr).
MUON = _sig("deepspeed.runtime.zero.muon.muon_optimizer.MuonWithAuxAdam", ("lr", None), ("momentum", None),
            ("weight_decay", None), ("ns_method", None), ("betas", None), ("eps", None), ("muon_lr", None),
            ("adam_lr", None))
# 1-bit optimizers (DeepSpeed < 0.19.7, `runtime/fp16/onebit/`); `deepspeed` is passed by the engine.
ONEBIT_ADAM = _sig("deepspeed.runtime.fp16.onebit.adam.OnebitAdam", ("lr", 1e-3), ("freeze_step", 100000),
                   ("bias_correction", True), ("betas", (0.9, 0.999)), ("eps", 1e-8), ("eps_inside_sqrt", False),
                   ("weight_decay", 0.0), ("max_grad_norm", 0.0), ("amsgrad", False), ("cuda_aware", False),
                   ("comm_backend_name", "nccl"))
ZERO_ONE_ADAM = _sig("deepspeed.runtime.fp16.onebit.zoadam.ZeroOneAdam", ("lr", 1e-3), ("bias_correction", True),
                     ("betas", (0.9, 0.999)), ("eps", 1e-8), ("eps_inside_sqrt", False), ("weight_decay", 0.0),
                     ("max_grad_norm", 0.0), ("var_freeze_step", 100000), ("var_update_scaler", 16),
                     ("local_step_scaler", 32678), ("local_step_clipper", 16), ("amsgrad", False),
                     ("cuda_aware", False), ("comm_backend_name", "nccl"))
ONEBIT_LAMB = _sig("deepspeed.runtime.fp16.onebit.lamb.OnebitLamb", ("lr", 1e-3), ("freeze_step", 100000),
                   ("bias_correction", True), ("betas", (0.9, 0.999)), ("eps", 1e-8), ("eps_inside_sqrt", False),
                   ("weight_decay", 0.0), ("max_grad_norm", 0.0), ("max_coeff", 10.0), ("min_coeff", 0.01),
                   ("amsgrad", False), ("cuda_aware", False), ("comm_backend_name", "nccl"), ("coeff_beta", 0.9),
                   ("factor_max", 4.0), ("factor_min", 0.5), ("factor_threshold", 0.1))

ADAM_CONSUMED = ("adam_w_mode", "torch_adam", "fp32_optimizer_states")


@dataclass(frozen=True, slots=True)
class OptimizerType:
    """A DeepSpeed optimizer name and what DeepSpeed builds for it.

    `gpu` is built without optimizer offload, `cpu` with `offload_optimizer.device` cpu/nvme,
    `torch` with `params.torch_adam: true` (Adam family). `consumed` are params DeepSpeed pops
    before calling the constructor. `zero_tested`: the built class is in ZeRO's tested list
    (`runtime/zero/utils.py` ZERO_SUPPORTED_OPTIMIZERS), so ZeRO needs no
    `zero_allow_untested_optimizer`. `checked`: False when the class comes from another package
    (mup) whose signature we do not track. `drops_unknown`: unknown params are ignored, not a
    TypeError (Muon)."""

    name: str
    gpu: Signature | None
    cpu: Signature | None = None
    torch: Signature | None = None
    consumed: tuple[str, ...] = ()
    zero_tested: bool = True
    checked: bool = True
    drops_unknown: bool = False
    one_bit: bool = False


DEEPSPEED_OPTIMIZERS: dict[str, OptimizerType] = {t.name.lower(): t for t in (
    OptimizerType("Adam", FUSED_ADAM, CPU_ADAM, TORCH_OPTIMIZERS["Adam"], ADAM_CONSUMED),
    OptimizerType("AdamW", FUSED_ADAM, CPU_ADAM, TORCH_OPTIMIZERS["AdamW"], ADAM_CONSUMED),
    OptimizerType("Lamb", FUSED_LAMB, FUSED_LAMB, zero_tested=False),
    OptimizerType("Adagrad", TORCH_OPTIMIZERS["Adagrad"], CPU_ADAGRAD),
    OptimizerType("Lion", FUSED_LION, CPU_LION),
    OptimizerType("Muon", MUON, MUON, MUON, ADAM_CONSUMED + ("foreach",), drops_unknown=True),
    OptimizerType("MuAdam", None, zero_tested=False, checked=False),
    OptimizerType("MuAdamW", None, zero_tested=False, checked=False),
    OptimizerType("MuSGD", None, zero_tested=False, checked=False),
    OptimizerType("OneBitAdam", ONEBIT_ADAM, ONEBIT_ADAM, zero_tested=False, one_bit=True),
    OptimizerType("ZeroOneAdam", ZERO_ONE_ADAM, ZERO_ONE_ADAM, zero_tested=False, one_bit=True),
    OptimizerType("OneBitLamb", ONEBIT_LAMB, ONEBIT_LAMB, zero_tested=False, one_bit=True),
)}

# Classes people write as the type that DeepSpeed does not accept, and the name that builds them.
OPTIMIZER_ALIASES = {
    "fusedadam": "Adam", "deepspeedcpuadam": "Adam", "cpuadam": "Adam", "fusedadamw": "AdamW", "adamw_torch": "AdamW",
    "fusedlamb": "Lamb", "fusedlion": "Lion", "deepspeedcpulion": "Lion", "deepspeedcpuadagrad": "Adagrad",
}


@dataclass(frozen=True, slots=True)
class ResolvedOptimizer:
    """What a `type` string means: a DeepSpeed type, a torch class, or nothing (`problem` says
    why, `suggestion` is the closest valid spelling)."""

    deepspeed: OptimizerType | None = None
    torch: str | None = None
    problem: str | None = None
    suggestion: str | None = None

    @property
    def known(self) -> bool:
        return self.deepspeed is not None or self.torch is not None


def _older(version: tuple[int, ...] | None, than: tuple[int, ...]) -> bool:
    return version is not None and tuple(version) < than


def resolve_optimizer(type_name: str, version: tuple[int, ...] | None = None) -> ResolvedOptimizer:
    """How DeepSpeed `version` (None: the newest) reads `optimizer.type`."""
    from shardshift.rules.base import did_you_mean

    ds = DEEPSPEED_OPTIMIZERS.get(type_name.lower())
    if ds is not None and ds.one_bit and not _older(version, ONE_BIT_REMOVED_IN):
        removed = ".".join(map(str, ONE_BIT_REMOVED_IN))
        return ResolvedOptimizer(problem=f"{ds.name} was removed in DeepSpeed {removed}", suggestion="Adam")
    if ds is not None:
        return ResolvedOptimizer(deepspeed=ds)
    if type_name in TORCH_OPTIMIZERS:
        return ResolvedOptimizer(torch=type_name)
    candidates = [t.name for t in DEEPSPEED_OPTIMIZERS.values() if not t.one_bit or _older(version, ONE_BIT_REMOVED_IN)]
    candidates += [n for n in TORCH_OPTIMIZERS if n.lower() not in DEEPSPEED_OPTIMIZERS]
    suggestion = OPTIMIZER_ALIASES.get(type_name.lower().replace("-", "").replace(".", "")) or \
        did_you_mean(type_name, candidates)
    return ResolvedOptimizer(problem="it is neither a DeepSpeed optimizer nor a torch.optim class",
                             suggestion=suggestion)


def optimizer_offload(data: dict) -> bool | None:
    """Whether DeepSpeed steps the optimizer on the CPU (`offload_optimizer.device` cpu/nvme, or
    the legacy `cpu_offload: true`); None when the file leaves it open."""
    zero = data.get("zero_optimization")
    if not isinstance(zero, dict):
        return False
    block = zero.get("offload_optimizer")
    if isinstance(block, dict):
        device = block.get("device", "none")
        if device in ("cpu", "nvme"):
            return True
        return False if device in ("none", None) else None
    if zero.get("cpu_offload") is True:
        return True
    return False if block is None else None


@dataclass(frozen=True, slots=True)
class BuiltOptimizer:
    """The constructor DeepSpeed calls for one config, and the params it consumes first."""

    signature: Signature | None
    consumed: tuple[str, ...] = ()
    drops_unknown: bool = False
    where: str = ""  # why this class, e.g. "with optimizer offload"


def built_optimizer(resolved: ResolvedOptimizer, *, offload: bool, torch_adam: bool,
                    adam_w_mode: bool) -> BuiltOptimizer:
    """The class DeepSpeed builds for a resolved type (engine.py `_configure_basic_optimizer`)."""
    if resolved.torch is not None:
        return BuiltOptimizer(TORCH_OPTIMIZERS[resolved.torch])
    kind = resolved.deepspeed
    if kind is None or not kind.checked:
        return BuiltOptimizer(None)
    if kind.torch is not None and torch_adam:
        signature = kind.torch
        if kind.name in ("Adam", "AdamW"):
            signature = TORCH_OPTIMIZERS["AdamW" if kind.name == "AdamW" or adam_w_mode else "Adam"]
        return BuiltOptimizer(signature, kind.consumed + ("foreach",), kind.drops_unknown, "with torch_adam: true")
    if offload and kind.cpu is not None:
        return BuiltOptimizer(kind.cpu, kind.consumed, kind.drops_unknown, "with optimizer offload")
    return BuiltOptimizer(kind.gpu, kind.consumed, kind.drops_unknown, "")


# --- schedulers -------------------------------------------------------------------------------

# deepspeed/runtime/lr_schedules.py, without the first argument (the optimizer).
DEEPSPEED_SCHEDULERS: dict[str, Signature] = {
    "LRRangeTest": _sig("deepspeed.runtime.lr_schedules.LRRangeTest", ("lr_range_test_min_lr", 1e-3),
                        ("lr_range_test_step_size", 2000), ("lr_range_test_step_rate", 1.0),
                        ("lr_range_test_staircase", False), ("last_batch_iteration", -1)),
    "OneCycle": _sig("deepspeed.runtime.lr_schedules.OneCycle", ("cycle_min_lr", REQUIRED), ("cycle_max_lr", REQUIRED),
                     ("decay_lr_rate", 0.0), ("cycle_first_step_size", 2000), ("cycle_second_step_size", None),
                     ("cycle_first_stair_count", 0), ("cycle_second_stair_count", None), ("decay_step_size", 0),
                     ("cycle_momentum", True), ("cycle_min_mom", 0.8), ("cycle_max_mom", 0.9), ("decay_mom_rate", 0.0),
                     ("last_batch_iteration", -1)),
    "WarmupLR": _sig("deepspeed.runtime.lr_schedules.WarmupLR", ("warmup_min_lr", 0.0), ("warmup_max_lr", None),
                     ("warmup_num_steps", 1000), ("warmup_type", "log"), ("last_batch_iteration", -1)),
    "WarmupDecayLR": _sig("deepspeed.runtime.lr_schedules.WarmupDecayLR", ("total_num_steps", REQUIRED),
                          ("warmup_min_lr", 0.0), ("warmup_max_lr", 0.001), ("warmup_num_steps", 1000),
                          ("warmup_type", "log"), ("last_batch_iteration", -1)),
    "WarmupCosineLR": _sig("deepspeed.runtime.lr_schedules.WarmupCosineLR", ("total_num_steps", REQUIRED),
                           ("warmup_min_ratio", 0.0), ("warmup_num_steps", 1000), ("cos_min_ratio", 0.0001),
                           ("warmup_type", "log"), ("last_batch_iteration", -1)),
}

# torch.optim.lr_scheduler classes (torch 2.13) that DeepSpeed can build as `scheduler(optimizer,
# **params)` (ChainedScheduler takes no optimizer first and is left out).
TORCH_SCHEDULERS: dict[str, Signature] = {
    "ConstantLR": _sig("torch.optim.lr_scheduler.ConstantLR", ("factor", 0.3333333333333333), ("total_iters", 5),
                       ("last_epoch", -1)),
    "CosineAnnealingLR": _sig("torch.optim.lr_scheduler.CosineAnnealingLR", ("T_max", REQUIRED), ("eta_min", 0.0),
                              ("last_epoch", -1)),
    "CosineAnnealingWarmRestarts": _sig("torch.optim.lr_scheduler.CosineAnnealingWarmRestarts", ("T_0", REQUIRED),
                                        ("T_mult", 1), ("eta_min", 0.0), ("last_epoch", -1)),
    "CyclicLR": _sig("torch.optim.lr_scheduler.CyclicLR", ("base_lr", REQUIRED), ("max_lr", REQUIRED),
                     ("step_size_up", 2000), ("step_size_down", None), ("mode", "triangular"), ("gamma", 1.0),
                     ("scale_fn", None), ("scale_mode", "cycle"), ("cycle_momentum", True), ("base_momentum", 0.8),
                     ("max_momentum", 0.9), ("last_epoch", -1)),
    "ExponentialLR": _sig("torch.optim.lr_scheduler.ExponentialLR", ("gamma", REQUIRED), ("last_epoch", -1)),
    "LambdaLR": _sig("torch.optim.lr_scheduler.LambdaLR", ("lr_lambda", REQUIRED), ("last_epoch", -1)),
    "LinearLR": _sig("torch.optim.lr_scheduler.LinearLR", ("start_factor", 0.3333333333333333), ("end_factor", 1.0),
                     ("total_iters", 5), ("last_epoch", -1)),
    "MultiStepLR": _sig("torch.optim.lr_scheduler.MultiStepLR", ("milestones", REQUIRED), ("gamma", 0.1),
                        ("last_epoch", -1)),
    "MultiplicativeLR": _sig("torch.optim.lr_scheduler.MultiplicativeLR", ("lr_lambda", REQUIRED), ("last_epoch", -1)),
    "OneCycleLR": _sig("torch.optim.lr_scheduler.OneCycleLR", ("max_lr", REQUIRED), ("total_steps", None),
                       ("epochs", None), ("steps_per_epoch", None), ("pct_start", 0.3), ("anneal_strategy", "cos"),
                       ("cycle_momentum", True), ("base_momentum", 0.85), ("max_momentum", 0.95), ("div_factor", 25.0),
                       ("final_div_factor", 10000.0), ("three_phase", False), ("last_epoch", -1)),
    "PolynomialLR": _sig("torch.optim.lr_scheduler.PolynomialLR", ("total_iters", 5), ("power", 1.0),
                         ("last_epoch", -1)),
    "ReduceLROnPlateau": _sig("torch.optim.lr_scheduler.ReduceLROnPlateau", ("mode", "min"), ("factor", 0.1),
                              ("patience", 10), ("threshold", 0.0001), ("threshold_mode", "rel"), ("cooldown", 0),
                              ("min_lr", 0), ("eps", 1e-08)),
    "SequentialLR": _sig("torch.optim.lr_scheduler.SequentialLR", ("schedulers", REQUIRED), ("milestones", REQUIRED),
                         ("last_epoch", -1)),
    "StepLR": _sig("torch.optim.lr_scheduler.StepLR", ("step_size", REQUIRED), ("gamma", 0.1), ("last_epoch", -1)),
}

# Scheduler params that must be positive whole numbers (ValueError at initialize since 0.19.3).
INT_STEP_PARAMS = {"WarmupLR": ("warmup_num_steps",), "WarmupDecayLR": ("warmup_num_steps",),
                   "WarmupCosineLR": ("warmup_num_steps",), "LRRangeTest": ("lr_range_test_step_size",)}
WARMUP_TYPES = ("log", "linear")


def scheduler_signature(type_name: str) -> Signature | None:
    """The constructor DeepSpeed builds for `scheduler.type` (case-sensitive), or None."""
    return DEEPSPEED_SCHEDULERS.get(type_name) or TORCH_SCHEDULERS.get(type_name)
