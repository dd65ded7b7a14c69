"""FSDP2 reader: Python wrapper code -> Plan, read with `ast` (the file is never imported or run).

A small abstract interpreter walks the module: it follows assignments (policies built once and
reused, dicts of keyword arguments, meshes sliced by name), inlines calls to the file's own
functions and methods with their arguments bound, runs loop bodies once with the loop variable
standing for "each element", and takes both branches of an `if` it cannot decide. Every call
it recognises (`fully_shard`, `FullyShardedDataParallel`, `init_device_mesh`, the policies,
optimizers, schedulers, `GradScaler`, activation checkpointing, ...) becomes an `Event` with its
position, resolved arguments and its order in the flow it ran in. The Plan is read from the
events; the FSDP2 rules (rules/fsdp2/rules.py) judge the events.

Module objects are tracked as paths ("model", "model.layers[*]", "self.model"), which is what
the rules need to tell the root from its blocks.
"""

from __future__ import annotations

import ast
import math
import os
import re
import warnings
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Iterator, NamedTuple

from shardshift.document import Document, SyntaxProblem
from shardshift.source import Member, Node, join_pointer
from shardshift.user_code import parse as parse_user_code
from shardshift.user_code import walk as walk_nodes

if TYPE_CHECKING:  # pydantic is imported when a Plan is built, not when the rules are loaded
    from shardshift.plan import Plan

FORMAT = "fsdp2"
MARKER_KEYS = ("fully_shard", "FullyShardedDataParallel")
# `from pkg.parallelize import apply_fsdp`: a file that hands its model to a project's FSDP helper
# (patterns compiled on first use, by `re`'s cache: most files never get that far)
_FROM_IMPORT = r"(?m)^[ \t]*from[ \t]+([.\w]+)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)"
_IMPORT = r"(?m)^[ \t]*import[ \t]+([\w.]+)(?:[ \t]+as[ \t]+(\w+))?"


def looks_like(path: str, text: str) -> bool:
    """A Python file that mentions fully_shard or FullyShardedDataParallel, or (not being a
    DeepSpeed script) calls an FSDP helper of its project: a name with `fsdp` in it imported from
    a module other than torch's (`from .parallelize import apply_fsdp`), or called on an imported
    module (`import pkg.parallelize as p; p.apply_fsdp(model)`)."""
    if not path.lower().endswith(".py"):
        return False
    if any(marker in text for marker in MARKER_KEYS):
        return True
    if "fsdp" not in text.lower() or "deepspeed" in text:
        return False
    modules = set()
    for match in re.finditer(_FROM_IMPORT, text):
        if match.group(1).split(".")[0] == "torch":
            continue
        if "fsdp" in match.group(2).lower():
            return True
        modules.update(re.findall(r"(?:\bas[ \t]+)?\b(\w+)[ \t]*(?:,|\)|$)", match.group(2), re.M))
    for match in re.finditer(_IMPORT, text):
        if match.group(1).split(".")[0] != "torch":
            modules.add(match.group(2) or match.group(1))
    # one pass for every module: the heads of `head.…fsdp…(` calls, as the imported names (any case)
    heads = {m.lower() for m in re.findall(r"(?<![\w.])(\w+(?:\.\w+)*)\.\w*fsdp\w*\s*\(", text, re.I)}
    return any(name.lower() in heads for name in modules)


# --- abstract values ------------------------------------------------------------------------


class _Unknown:
    def __repr__(self) -> str:
        return "?"


UNKNOWN = _Unknown()
NOT_KNOWN = _Unknown()  # what _known returns for a call it does not recognise
MISSING = _Unknown()  # a name or key that one branch does not set


@dataclass(frozen=True)
class Cond:
    """A condition the reader cannot decide: the `if` test as written, where, and which branch."""

    text: str
    line: int
    key: int  # id of the statement, so that two branches of one `if` can be told apart
    positive: bool = True
    file: str = ""  # another file's path, when the condition sits in a helper followed into it

    def negated(self) -> Cond:
        return Cond(self.text, self.line, self.key, not self.positive, self.file)

    def describe(self) -> str:
        line = f"{os.path.basename(self.file)} line {self.line}" if self.file else f"line {self.line}"
        return f"`{self.text}` ({line})" if self.positive else f"not `{self.text}` ({line})"


def describe(conds: tuple[Cond, ...]) -> str:
    return " and ".join(c.describe() for c in conds) if conds else "otherwise"


@dataclass(eq=False)
class Choice:
    """A value an undecided branch chooses: (conditions, value) per option. Empty conditions mean
    "otherwise" (the value before the branch); MISSING means the branch leaves it unset."""

    options: tuple[tuple[tuple[Cond, ...], Any], ...]


@dataclass(frozen=True)
class RunTime:
    """A value known only when the job runs: an environment variable, a command-line argument."""

    text: str


@dataclass(frozen=True)
class Const:
    value: Any


@dataclass(frozen=True)
class Dtype:
    name: str  # fp32, bf16, fp16, fp64, ...


@dataclass(frozen=True)
class Qual:
    """A name from an import: torch.distributed.fsdp.fully_shard, torch.optim, ..."""

    name: str

    @property
    def last(self) -> str:
        return self.name.rsplit(".", 1)[-1]


@dataclass(frozen=True)
class Path:
    """A module object (or another object the code only passes around) by how it was reached."""

    path: str


@dataclass
class Mesh:
    dims: tuple[tuple[str | None, int | None], ...]
    device: str | None
    line: int
    column: int
    names_given: bool = True
    shape_text: str = ""  # the mesh_shape argument as written
    file: str = ""  # see Event.file
    site: tuple[int, int] | None = None
    root: bool = True  # made by init_device_mesh (False: a slice or a flattened mesh)
    # each dim's (size, stride) pairs over the root's ranks (a flattened dim has several), where every size
    # of the root is a literal; and the root mesh a slice or flattened mesh was taken from
    axes: tuple[tuple[tuple[int, int], ...], ...] | None = field(default=None, compare=False, repr=False)
    origin: Mesh | None = field(default=None, compare=False, repr=False)

    @property
    def size(self) -> int | None:
        sizes = [s for _, s in self.dims]
        return math.prod(sizes) if all(s is not None for s in sizes) else None


@dataclass
class Policy:
    kind: str  # mp, offload, cpu_offload, fsdp1_mp, fsdp1_offload
    kwargs: dict[str, Any]
    line: int
    column: int
    texts: dict[str, str] = field(default_factory=dict)
    conds: tuple[Cond, ...] = ()
    file: str = ""  # see Event.file
    site: tuple[int, int] | None = None


@dataclass
class DictVal:
    items: dict[str, Any]
    depth: int = 0  # undecided conditions holding when it was built
    texts: dict[str, str] = field(default_factory=dict)  # key -> the value's source text


@dataclass
class ListVal:
    items: list[Any]


@dataclass(frozen=True)
class ParamsOf:
    """model.parameters(): the parameters of a module path. `copied`: (flow, seq, line) where
    `list(...)` / `tuple(...)` took them into a container (the parameters of that moment; a
    generator reads the module's parameters only when it is consumed)."""

    path: str
    copied: tuple[int, int, int] | None = None


@dataclass
class Func:
    node: Any  # ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
    env: "Env"
    bound_self: Any = None


@dataclass
class Ref:
    """The object an event created (an optimizer, a scheduler, a scaler)."""

    event: "Event"


class Module:
    """A module of another file given to `check`, imported as an object (`from . import parallelize`)."""

    def __init__(self, name: str, env: Env) -> None:
        self.name, self.env = name, env


# --- events -------------------------------------------------------------------------------


@dataclass
class Event:
    kind: str
    line: int
    column: int
    flow: int
    seq: int
    in_loop: bool
    name: str = ""
    targets: list[str] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)
    given: frozenset[str] = frozenset()  # argument names written explicitly
    conds: tuple[Cond, ...] = ()  # undecided conditions under which the call runs
    texts: dict[str, str] = field(default_factory=dict)  # argument name -> its source text
    # In a helper of another file followed into (see link): that file's path (line and column are
    # in it), and where the outermost call into it sits in the file being read. "" for the file itself.
    file: str = ""
    site: tuple[int, int] | None = None
    qualified: str = ""  # the callee as imported (apex.optimizers.FusedAdam), where a rule needs it
    # the call of a function whose own local variable the first target is rooted at (0: a module-level
    # name, a parameter, an attribute of self): the same name in two calls of a builder is two objects
    owner: int = 0

    def value(self, name: str, default: Any = None) -> Any:
        """A resolved plain argument value (Const unwrapped), or `default`."""
        found = self.kwargs.get(name, UNKNOWN)
        if isinstance(found, Const):
            return found.value
        return default


@dataclass
class Analysis:
    events: list[Event] = field(default_factory=list)
    constants: dict[str, tuple[Any, int, int]] = field(default_factory=dict)
    text: str = ""

    def of(self, *kinds: str) -> list[Event]:
        return [e for e in self.events if e.kind in kinds]

    def flows(self) -> Iterator[list[Event]]:
        """The events of each flow (module level, or one entry function), in order."""
        by_flow: dict[int, list[Event]] = {}
        for event in self.events:
            by_flow.setdefault(event.flow, []).append(event)
        for flow in sorted(by_flow):
            yield sorted(by_flow[flow], key=lambda e: e.seq)


# --- what calls mean ----------------------------------------------------------------------

TORCH_FULLY_SHARD = frozenset({"torch.distributed.fsdp.fully_shard", "torch.distributed._composable.fsdp.fully_shard",
                               "torch.distributed._composable.fsdp.fully_shard.fully_shard",
                               "torch.distributed.fsdp._fully_shard.fully_shard",
                               "torch.distributed.fsdp._fully_shard._fully_shard.fully_shard"})
OPTIMIZER_MODULES = ("bitsandbytes.optim.", "bitsandbytes.", "apex.optimizers.", "deepspeed.ops.adam.",
                     "deepspeed.ops.lamb.", "deepspeed.ops.lion.", "deepspeed.ops.adagrad.", "torchao.optim.",
                     "torchao.prototype.low_bit_optim.", "transformers.optimization.", "timm.optim.",
                     "lion_pytorch.", "schedulefree.", "came_pytorch.", "galore_torch.", "heavyball.")
OPTIMIZER_CLASSES = frozenset({"transformers.Adafactor", "transformers.AdamW", "apex.optimizers.FusedAdam"})
NOT_OPTIMIZERS = frozenset({"Optimizer", "Parameter", "GatheredParameters", "OptimizerParamScheduler"})
DTYPES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32", "float": "fp32",
          "float64": "fp64", "double": "fp64", "float8_e4m3fn": "fp8", "float8_e5m2": "fp8"}
TORCH_OPTIMIZERS = frozenset({"ASGD", "Adadelta", "Adafactor", "Adagrad", "Adam", "AdamW", "Adamax", "LBFGS", "Muon",
                              "NAdam", "RAdam", "RMSprop", "Rprop", "SGD", "SparseAdam"})
OPTIMIZER_POSITIONAL = {
    "Adam": ("lr", "betas", "eps", "weight_decay", "amsgrad"), "AdamW": ("lr", "betas", "eps", "weight_decay", "amsgrad"),
    "SGD": ("lr", "momentum", "dampening", "weight_decay", "nesterov"),
    "Adagrad": ("lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps"),
    "RMSprop": ("lr", "alpha", "eps", "weight_decay", "momentum", "centered"),
}
SCHEDULER_POSITIONAL = {
    "LambdaLR": ("lr_lambda",), "CosineAnnealingLR": ("T_max", "eta_min"), "StepLR": ("step_size", "gamma"),
    "LinearLR": ("start_factor", "end_factor", "total_iters"), "ExponentialLR": ("gamma",),
    "MultiStepLR": ("milestones", "gamma"), "OneCycleLR": ("max_lr", "total_steps"),
    "PolynomialLR": ("total_iters", "power"), "ConstantLR": ("factor", "total_iters"),
    "CosineAnnealingWarmRestarts": ("T_0", "T_mult", "eta_min"), "CyclicLR": ("base_lr", "max_lr", "step_size_up"),
    "SequentialLR": ("schedulers", "milestones"),
}
TORCH_SCHEDULERS = frozenset(SCHEDULER_POSITIONAL) | {"MultiplicativeLR", "ChainedScheduler", "ReduceLROnPlateau"}
HF_SCHEDULE = re.compile(r"^get_\w*schedule\w*$")
POSITIONAL = {
    "fully_shard": ("module",),
    "FullyShardedDataParallel": ("module", "process_group", "sharding_strategy", "cpu_offload", "auto_wrap_policy"),
    "init_device_mesh": ("device_type", "mesh_shape", "mesh_dim_names"),
    "MixedPrecisionPolicy": ("param_dtype", "reduce_dtype", "output_dtype", "cast_forward_inputs"),
    "CPUOffloadPolicy": ("pin_memory",),
    "MixedPrecision": ("param_dtype", "reduce_dtype", "buffer_dtype"),
    "CPUOffload": ("offload_params",),
    "GradScaler": ("device", "init_scale", "growth_factor", "backoff_factor", "growth_interval", "enabled"),
    "ShardedGradScaler": ("device", "init_scale", "growth_factor", "backoff_factor", "growth_interval", "enabled"),
    "clip_grad_norm_": ("parameters", "max_norm"),
    "init_process_group": ("backend", "init_method", "timeout", "world_size", "rank", "store", "group_name",
                           "pg_options", "device_id"),
    "DataLoader": ("dataset", "batch_size"),
    "checkpoint_wrapper": ("module",),
    "apply_activation_checkpointing": ("model",),
    "register_fsdp_forward_method": ("module", "method_name"),
    "DataParallelMeshDims": ("shard", "replicate"),
    "DeviceMesh": ("device_type", "mesh"),
    "parallelize_module": ("module", "device_mesh", "parallelize_plan"),
    "distribute_module": ("module", "device_mesh", "partition_fn", "input_fn", "output_fn"),
    "distribute_tensor": ("tensor", "device_mesh", "placements"),
}
# torch's calls that make parameters DTensors over a mesh (tensor or expert parallelism, or the full SPMD
# mesh dp_mesh_dims expects): recorded as `dtensor` events, the module (or tensor) first in targets
DTENSOR_CALLS = frozenset({"parallelize_module", "distribute_module", "distribute_tensor"})
POLICIES = {"MixedPrecisionPolicy": "mp", "OffloadPolicy": "offload", "CPUOffloadPolicy": "cpu_offload",
            "MixedPrecision": "fsdp1_mp", "CPUOffload": "fsdp1_offload", "DataParallelMeshDims": "dp_mesh_dims"}
# methods of DDP and FSDP1's wrappers that an FSDP2 module (`FSDP<Class>`) does not have (FS035)
WRAPPER_METHODS = ("no_sync", "clip_grad_norm_")
# FSDPModule methods whose arguments torch checks (FS031): recorded as `fsdp_method` events
FSDP_METHODS = {"set_reduce_scatter_max_input_buffers": ("max_input_buffers",), "set_all_reduce_hook": ("hook",),
                "set_modules_to_forward_prefetch": ("modules",), "set_modules_to_backward_prefetch": ("modules",),
                "set_force_sum_reduction_for_comms": ("enable",), "set_symm_mem_for_comm": ("backend",)}
CHECKPOINT_CALLS = frozenset({"checkpoint_wrapper", "apply_activation_checkpointing", "offload_wrapper"})
# Names (of constants or command-line flags) whose value is a Plan setting.
NAMED_SETTINGS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^(gradient_accumulation_steps|grad(ient)?_acc(um(ulation)?)?(_steps)?|accum(ulation)?_steps)$", re.I),
     "batch.accumulation"),
    (re.compile(r"^(micro_batch_size|train_micro_batch_size_per_gpu|per_device_(train_)?batch_size|"
                r"batch_size_per_(gpu|device|rank)|local_batch_size)$", re.I), "batch.micro"),
    (re.compile(r"^(train_batch_size|global_batch_size)$", re.I), "batch.global_"),
    (re.compile(r"^world_size$", re.I), "world.world_size"),
    (re.compile(r"^(gradient_clipping|max_grad_norm|grad_clip(ping)?|clip_grad(_norm)?)$", re.I), "gradient_clipping"),
)
DS_SCHEDULE_FUNCTIONS = {"warmup_lr": "WarmupLR", "warmup_decay_lr": "WarmupDecayLR",
                         "warmup_cosine_lr_ratio": "WarmupCosineLR", "one_cycle_lr": "OneCycle",
                         "lr_range_test_lr": "LRRangeTest"}
TIED_ATTRIBUTES = frozenset({"weight", "bias"})  # `lm_head.weight = embed.weight` ties the two modules
PIPELINING = "torch.distributed.pipelining."
MAX_INLINE_DEPTH = 8
MAX_STATEMENTS = 100_000  # inlining stops beyond this many statements run: helpers calling helpers stay linear


class Env:
    def __init__(self, parent: Env | None = None, depth: int = 0, file: str = "") -> None:
        self.vars: dict[str, Any] = {}
        self.parent = parent
        self.depth = depth  # how many undecided conditions held when this scope was entered
        self.file = parent.file if parent is not None else file  # the module's file ("": the one being read)

    def lookup(self, name: str) -> Any:
        env: Env | None = self
        while env is not None:
            if name in env.vars:
                return env.vars[name]
            env = env.parent
        return None

    def set(self, name: str, value: Any) -> None:
        self.vars[name] = value


class _Frame:
    def __init__(self, depth: int = 0) -> None:
        self.returns: list[tuple[tuple[Cond, ...], Any]] = []
        self.depth = depth


# method or helper names with shard/fsdp in them that do not shard a module
NOT_SHARDING = frozenset({"shard", "unshard", "reshard", "fsdpmodule", "shardedgradscaler", "shard_tensor", "fsdp_version",
                          "mixedprecisionpolicy", "cpuoffloadpolicy", "offloadpolicy", "shardingstrategy"})


# helper names that say they shard a model: apply_fsdp, wrap_fsdp, shard_model, apply_fully_shard
SHARDING_HELPER = re.compile(r"^(?:(?:apply|wrap)_\w*(?:fsdp|shard)|shard_\w+|fsdp_wrap\w*)")


class Interpreter:
    """Runs the module body, then every function no code in the file calls, each as one flow."""

    def __init__(self, tree: ast.Module, text: str, path: str = "", linker: Linker | None = None) -> None:
        self.tree = tree
        self.path = path
        self.linker = linker  # the other files of the run, when calls into them are followed
        self.modules: dict[str, Env | None] = {}  # path -> the module environment of another file
        self.loading: list[str] = []  # the other files whose module body is running (imports in imports)
        self.file = ""  # the file of the code running now: "" for this one, else a followed helper's
        self.site: tuple[int, int] | None = None  # where the call into that helper sits in this file
        self.quiet = 0  # > 0 while another file's module body runs: it only binds names, no events
        self.analysis = Analysis(text=text)
        self.flow = 0
        self.seq = 0
        self.loop_depth = 0
        self.stack: list[int] = []
        self.frames: list[_Frame] = []
        self.module_env = Env()
        self.module_env.set("__name__", Const("__main__"))  # a training script runs as the main module
        self.methods: dict[str, ast.FunctionDef] | None = None
        self.statements = 0
        self.ran: set[int] = set()  # ids of the function bodies that ran
        self.conds: list[Cond] = []  # the undecided conditions the statement being run sits under
        self.exit = ""  # how the last statement that left its block left it: "return" or "raise"
        self.guard: Cond | None = None
        self.loop_names: list[set[str]] = []  # the names each enclosing `for` binds
        self.refused: set[int] = set()  # ids of the functions a call could not inline
        self.invocations: list[tuple[int, frozenset[str]]] = []  # (call number, names it binds locally)
        self.calls = 0
        self.spread_texts: dict[int, dict[str, str]] = {}  # call -> source texts of its **kwargs items

    def _filters_loop(self, test: ast.expr) -> bool:
        """A condition on the element of an enclosing loop selects elements (modules to wrap)."""
        names = {n.id for n in walk_nodes(test) if isinstance(n, ast.Name)}
        return any(names & bound for bound in self.loop_names)

    # -- driving --------------------------------------------------------------------------

    def run(self) -> Analysis:
        called = _called_names(self.tree)
        self.frames.append(_Frame())
        self._block(self.tree.body, self.module_env)
        functions = list(self._functions(self.tree.body, self.module_env, None))
        for node, env, owner in functions:
            if node.name not in called:
                self.flow += 1
                self._run_function(Func(node, env, Path("self") if owner else None), [], {}, entry=True)
        pending = True
        while pending:  # functions a call could not inline (too deep, or past the budget) and that never ran
            pending = False
            for node, env, owner in functions:
                if id(node) in self.refused and id(node) not in self.ran:
                    self.flow += 1
                    self._run_function(Func(node, env, Path("self") if owner else None), [], {}, entry=True)
                    pending = True
        # a function handed to a call the reader does not follow (`fire.Fire(main)`, `typer.run(main)`,
        # `tyro.cli(main)`, `jsonargparse.CLI(main)`, `mp.spawn(main, ...)`, `partial(main, ...)()`) runs,
        # but no call in the file runs it: it is an entry of its own
        passed = _passed_names(self.tree)
        for node, env, owner in functions:
            if node.name in passed and id(node) not in self.ran:
                self.flow += 1
                self._run_function(Func(node, env, Path("self") if owner else None), [], {}, entry=True)
        return self.analysis

    def _functions(self, body: list[ast.stmt], env: Env, owner: str | None):
        for statement in body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield statement, env, owner
            elif isinstance(statement, ast.ClassDef):
                yield from self._functions(statement.body, env, statement.name)

    def _event(self, kind: str, node: ast.AST, **kw: Any) -> Event:
        self.seq += 1
        event = Event(kind, getattr(node, "lineno", 1), getattr(node, "col_offset", 0) + 1, self.flow, self.seq,
                      self.loop_depth > 0, conds=tuple(self.conds), file=self.file, site=self.site, **kw)
        if event.targets and self.invocations:
            root = re.split(r"[.\[]", event.targets[0], maxsplit=1)[0]
            event.owner = next((call for call, names in reversed(self.invocations) if root in names), 0)
        if not self.quiet:
            self.analysis.events.append(event)
        return event

    # -- statements -----------------------------------------------------------------------

    def _block(self, body: list[ast.stmt], env: Env) -> bool:
        """Run statements until one certainly leaves the block (return, raise); True if one did.
        After an undecided `if` whose one branch returns, the rest of the block runs under the
        other branch's condition."""
        depth = len(self.conds)
        try:
            for statement in body:
                self.guard = None
                if self._statement(statement, env):
                    return True
                if self.guard is not None:
                    self.conds.append(self.guard)
                    self.guard = None
            return False
        finally:
            del self.conds[depth:]

    def _set(self, env: Env, name: str, value: Any) -> None:
        """Bind `name` in `env`; under conditions `env` was not entered with, the value is a
        Choice between the new value (when they hold) and the one before (otherwise)."""
        if len(self.conds) > env.depth:
            value = _choose(tuple(self.conds[env.depth:]), value, env.vars.get(name, MISSING))
        env.vars[name] = value

    def _branches(self, cond: Cond, body: list[ast.stmt], orelse: list[ast.stmt], env: Env) -> bool:
        """Run both branches of an undecided condition, each under its side of it."""
        self.conds.append(cond)
        left = self._block(body, env)
        left_exit = self.exit
        self.conds.pop()
        self.conds.append(cond.negated())
        right = self._block(orelse, env)
        right_exit = self.exit
        self.conds.pop()
        if left and not right and left_exit == "return":
            self.guard = cond.negated()
        elif right and not left and right_exit == "return":
            self.guard = cond
        return left and right

    def _statement(self, node: ast.stmt, env: Env) -> bool:
        """Run one statement; True when it certainly leaves the enclosing function."""
        self.statements += 1
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            if node.value is None:
                return
            value = self._expr(node.value, env)
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                self._bind(target, value, env, node)
        elif isinstance(node, ast.AugAssign):
            self._expr(node.value, env)
            if isinstance(node.target, ast.Name):
                self._set(env, node.target.id, UNKNOWN)
        elif isinstance(node, ast.Expr):
            self._expr(node.value, env)
        elif isinstance(node, ast.If):
            decided = _truth(self._expr(node.test, env))
            if decided is True:
                return self._block(node.body, env)
            if decided is False:
                return self._block(node.orelse, env)
            if self._filters_loop(node.test):  # `if isinstance(layer, Block):` picks elements, it is no switch
                left = self._block(node.body, env)
                return self._block(node.orelse, env) and left
            return self._branches(Cond(_text(node.test), node.lineno, id(node), file=self.file), node.body, node.orelse, env)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            element = _element_of(self._expr(node.iter, env), node.iter)
            self._bind(node.target, element, env, node)
            self.loop_depth += 1
            self.loop_names.append({n.id for n in walk_nodes(node.target) if isinstance(n, ast.Name)})
            self._block(node.body, env)
            self.loop_names.pop()
            self.loop_depth -= 1
            self._block(node.orelse, env)
        elif isinstance(node, ast.While):
            self._expr(node.test, env)
            self.loop_depth += 1
            self._block(node.body, env)
            self.loop_depth -= 1
            self._block(node.orelse, env)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                value = self._expr(item.context_expr, env)
                if item.optional_vars is not None:
                    self._bind(item.optional_vars, value if isinstance(value, Path) else UNKNOWN, env, node)
            return self._block(node.body, env)
        elif isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            left = self._block(node.body, env)
            for handler in node.handlers:  # a handler runs only when the body fails: its bindings are alternatives
                caught = "except " + _text(handler.type) if handler.type is not None else "except"
                self.conds.append(Cond(caught, handler.lineno, id(handler), file=self.file))
                self._block(handler.body, env)
                self.conds.pop()
            if not left:
                self._block(node.orelse, env)
            self._block(node.finalbody, env)
        elif isinstance(node, ast.Match):
            self._expr(node.subject, env)
            for case in node.cases:
                self.conds.append(Cond(f"{_text(node.subject)} matches {_text(case.pattern)}", case.pattern.lineno,
                                       id(case), file=self.file))
                self._block(case.body, env)
                self.conds.pop()
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self._set(env, node.name, Func(node, env))
        elif isinstance(node, ast.ClassDef):
            bases = [self._expr(base, env) for base in node.bases]
            # a subclass of a torch scheduler or optimizer is read as that class
            known = [b for b in bases if isinstance(b, Qual) and (b.last in TORCH_SCHEDULERS or b.last in TORCH_OPTIMIZERS)]
            self._set(env, node.name, known[0] if known else Path(node.name))
        elif isinstance(node, ast.Return):
            value = self._expr(node.value, env) if node.value is not None else Const(None)
            if self.frames:
                frame = self.frames[-1]
                frame.returns.append((tuple(self.conds[frame.depth:]), value))
            self.exit = "return"
            return True
        elif isinstance(node, ast.Raise):
            if node.exc is not None:
                self._expr(node.exc, env)
            self.exit = "raise"
            return True
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self._set(env, alias.asname, Qual(alias.name))
                else:
                    head = alias.name.split(".", 1)[0]
                    self._set(env, head, Qual(head))
        elif isinstance(node, ast.ImportFrom):
            base = ("." * node.level) + (node.module or "")
            for alias in node.names:
                if alias.name != "*":
                    found = self._imported(node.module or "", node.level, alias.name) if self.linker else None
                    self._set(env, alias.asname or alias.name,
                              found if found is not None else Qual(f"{base}.{alias.name}" if base else alias.name))
        return False

    # -- other files given to `check` (see link) --------------------------------------------

    def _imported(self, module: str, level: int, name: str) -> Any:
        """What `from module import name` binds when the module is another file of the run: its
        function (or a value of its module environment), or the module itself; None otherwise."""
        importer = self.file or self.path
        target = self.linker.resolve(module, level, importer)
        if target is not None:
            found = self._module_env(target)
            value = found.vars.get(name) if found is not None else None
            if _importable(value):
                return value
        target = self.linker.resolve(f"{module}.{name}" if module else name, level, importer)
        found = self._module_env(target) if target is not None else None
        return Module(name, found) if found is not None else None

    def _foreign(self, qualified: str) -> Any:
        """The value `pkg.mod.name` stands for when `pkg.mod` (imported as a module) is another file
        of the run, or None."""
        module, _, name = qualified.rpartition(".")
        if not module or module.startswith("."):
            return None
        target = self.linker.resolve(module, 0, self.file or self.path)
        found = self._module_env(target) if target is not None else None
        value = found.vars.get(name) if found is not None else None
        return value if _importable(value) else None

    def _module_env(self, document: Document) -> Env | None:
        """The names another file binds at module level (its imports, constants and functions),
        from running its body once, quietly. A file importing back the one being read sees its
        environment as bound so far, as Python's circular imports do; nesting is bounded."""
        path = document.path
        if path == self.path:
            return self.module_env
        if path in self.modules:
            return self.modules[path]
        tree = _parse(document.text)
        if isinstance(tree, SyntaxProblem) or len(self.loading) >= MAX_INLINE_DEPTH:
            return None
        env = Env(file=path)
        env.set("__name__", Const(os.path.splitext(os.path.basename(path))[0]))  # imported: not "__main__"
        self.modules[path] = env
        saved = (self.conds, self.loop_depth, self.loop_names, self.guard, self.exit, self.file, self.site,
                 self.frames)
        self.conds, self.loop_depth, self.loop_names, self.guard = [], 0, [], None
        self.file, self.site, self.frames = path, None, [_Frame()]
        self.quiet += 1
        self.loading.append(path)
        try:
            self._block(tree.body, env)
        finally:
            self.loading.pop()
            self.quiet -= 1
            (self.conds, self.loop_depth, self.loop_names, self.guard, self.exit, self.file, self.site,
             self.frames) = saved
        return env

    def _bind(self, target: ast.expr, value: Any, env: Env, node: ast.AST) -> None:
        if isinstance(target, ast.Name):
            if (isinstance(value, _Unknown) and value is not MISSING) or (isinstance(value, Path) and value.path == "?"):
                value = Path(target.id)
            self._set(env, target.id, value)
            if isinstance(value, Const) and isinstance(value.value, (int, float)) and not isinstance(value.value, bool) \
                    and not self.file:  # a helper's constants are its own file's settings
                self.analysis.constants.setdefault(target.id, (value.value, node.lineno, node.col_offset + 1))
        elif isinstance(target, (ast.Tuple, ast.List)):
            items = value.items if isinstance(value, ListVal) else (
                [Const(v) for v in value.value] if isinstance(value, Const) and isinstance(value.value, tuple) else None)
            for index, element in enumerate(target.elts):
                inner = element.value if isinstance(element, ast.Starred) else element
                self._bind(inner, items[index] if items is not None and index < len(items) else UNKNOWN, env, node)
        elif isinstance(target, ast.Subscript):
            container = self._expr(target.value, env)
            key = self._expr(target.slice, env)
            if isinstance(container, DictVal) and isinstance(key, Const) and isinstance(key.value, str):
                if len(self.conds) > container.depth:  # set only under conditions the dict was not built under
                    value = _choose(tuple(self.conds[container.depth:]), value, container.items.get(key.value, MISSING))
                container.items[key.value] = value
        elif isinstance(target, ast.Attribute):
            dotted = _dotted(target)
            if dotted is not None:
                self._attribute_facts(target, dotted, value, node, env)
                if isinstance(value, _Unknown) or (isinstance(value, Path) and value.path == "?"):
                    value = Path(dotted)
                self._set(env, dotted, value)
                if dotted.startswith("self.") and env is not self.module_env:
                    self._set(self.module_env, dotted, value)

    def _attribute_facts(self, target: ast.Attribute, dotted: str, value: Any, node: ast.AST, env: Env) -> None:
        """What an attribute assignment says about parameters: `a.weight = b.weight` ties two
        modules' parameters (event "tie", targets [a, b]); `a.w = nn.Parameter(...)` gives module `a`
        a new parameter (event "new_parameter", targets [a], name w)."""
        plain = not any(isinstance(n, ast.Call) for n in walk_nodes(target.value))
        resolved = self._expr(target.value, env) if plain else UNKNOWN
        owner = resolved.path if isinstance(resolved, Path) and resolved.path != "?" else dotted.rpartition(".")[0]
        if not owner:
            return
        if target.attr in TIED_ATTRIBUTES and isinstance(value, Path) and value.path.endswith("." + target.attr) \
                and value.path != dotted:
            self._event("tie", node, name=target.attr, targets=[owner, value.path.rpartition(".")[0]])
        source = getattr(node, "value", None)
        if isinstance(source, ast.Call) and _text(source.func).split(".")[-1] == "Parameter":
            self._event("new_parameter", node, name=target.attr, targets=[owner])

    # -- expressions ----------------------------------------------------------------------

    def _expr(self, node: ast.expr | None, env: Env) -> Any:
        if node is None:
            return UNKNOWN
        if isinstance(node, ast.Constant):
            return Const(node.value)
        if isinstance(node, ast.Name):
            found = env.lookup(node.id)
            return found if found is not None else Path(node.id)
        if isinstance(node, ast.Attribute):
            return self._attribute(node, env)
        if isinstance(node, ast.Subscript):
            return self._subscript(node, env)
        if isinstance(node, ast.Call):
            return self._call(node, env)
        if isinstance(node, (ast.Tuple, ast.List)):
            items = []
            for element in node.elts:
                if isinstance(element, ast.Starred):
                    inner = self._expr(element.value, env)
                    items.extend(inner.items if isinstance(inner, ListVal) else [UNKNOWN])
                else:
                    items.append(self._expr(element, env))
            if isinstance(node, ast.Tuple) and all(isinstance(i, Const) for i in items):
                return Const(tuple(i.value for i in items))
            return ListVal(items)
        if isinstance(node, ast.Dict):
            out: dict[str, Any] = {}
            texts: dict[str, str] = {}
            for key, value in zip(node.keys, node.values):
                evaluated = self._expr(value, env)
                if key is None:
                    if isinstance(evaluated, DictVal):
                        out.update(evaluated.items)
                    continue
                key_value = self._expr(key, env)
                if isinstance(key_value, Const) and isinstance(key_value.value, str):
                    out[key_value.value] = evaluated
                    texts[key_value.value] = _text(value)
            return DictVal(out, len(self.conds), texts)
        if isinstance(node, ast.BinOp):
            return _binop(node.op, self._expr(node.left, env), self._expr(node.right, env))
        if isinstance(node, ast.UnaryOp):
            operand = self._expr(node.operand, env)
            if isinstance(operand, Const):
                try:
                    if isinstance(node.op, ast.Not):
                        return Const(not operand.value)
                    if isinstance(node.op, ast.USub):
                        return Const(-operand.value)
                    if isinstance(node.op, ast.UAdd):
                        return Const(+operand.value)
                except TypeError:
                    return UNKNOWN
            return UNKNOWN
        if isinstance(node, ast.BoolOp):
            return _boolop(node.op, [self._expr(v, env) for v in node.values])
        if isinstance(node, ast.Compare):
            return _compare(self._expr(node.left, env), node.ops, [self._expr(c, env) for c in node.comparators])
        if isinstance(node, ast.IfExp):
            decided = _truth(self._expr(node.test, env))
            if decided is True:
                return self._expr(node.body, env)
            if decided is False:
                return self._expr(node.orelse, env)
            cond = Cond(_text(node.test), node.lineno, id(node), file=self.file)
            self.conds.append(cond)
            body = self._expr(node.body, env)
            self.conds[-1] = cond.negated()
            orelse = self._expr(node.orelse, env)
            self.conds.pop()
            return body if _same(body, orelse) else Choice((((cond,), body), ((cond.negated(),), orelse)))
        if isinstance(node, ast.Lambda):
            return Func(node, env)
        if isinstance(node, ast.NamedExpr):
            value = self._expr(node.value, env)
            self._bind(node.target, value, env, node)
            return value
        if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            inner = Env(env, len(self.conds))
            for generator in node.generators:
                self._bind(generator.target, _element_of(self._expr(generator.iter, inner), generator.iter), inner, node)
            self.loop_depth += 1
            element = self._expr(node.elt, inner)
            self.loop_depth -= 1
            return ListVal([element]) if isinstance(element, Path) else UNKNOWN
        if isinstance(node, ast.DictComp):
            inner = Env(env, len(self.conds))
            for generator in node.generators:
                self._bind(generator.target, _element_of(self._expr(generator.iter, inner), generator.iter), inner, node)
            self.loop_depth += 1
            self._expr(node.key, inner)
            self._expr(node.value, inner)
            self.loop_depth -= 1
            return UNKNOWN
        if isinstance(node, ast.Await):
            return self._expr(node.value, env)
        return UNKNOWN

    def _attribute(self, node: ast.Attribute, env: Env) -> Any:
        dotted = _dotted(node)
        if dotted is not None:
            found = env.lookup(dotted)
            if found is not None:
                return found
        base = self._expr(node.value, env)
        if isinstance(base, Choice):
            return _map(base, lambda v: self._attribute_of(v, node.attr))
        return self._attribute_of(base, node.attr)

    def _attribute_of(self, base: Any, attr: str) -> Any:
        if isinstance(base, Qual):
            name = f"{base.name}.{attr}"
            if name.startswith("torch.") and attr in DTYPES and name.count(".") == 1:
                return Dtype(DTYPES[attr])
            return Qual(name)
        if isinstance(base, Path):
            return Path(f"{base.path}.{attr}")
        if isinstance(base, Mesh) and attr == "device_type":
            return Const(base.device) if base.device else UNKNOWN
        if isinstance(base, Module):
            found = base.env.vars.get(attr)
            return found if _importable(found) else Path(f"{base.name}.{attr}")
        return UNKNOWN

    def _subscript(self, node: ast.Subscript, env: Env) -> Any:
        base = self._expr(node.value, env)
        key = self._expr(node.slice, env)
        if isinstance(base, Qual) and base.name == "os.environ":
            return RunTime(_text(node))
        if isinstance(base, Mesh):
            self._event("mesh_slice", node, kwargs={"mesh": base, "names": key}, texts={"names": _text(node.slice)})
        if isinstance(base, Choice):
            return _map(base, lambda v: self._item(v, key))
        return self._item(base, key)

    def _item(self, base: Any, key: Any) -> Any:
        if isinstance(base, Mesh):
            names = key.value if isinstance(key, Const) else None
            names = (names,) if isinstance(names, str) else names
            if isinstance(names, tuple) and names == tuple(n for n, _ in base.dims):
                return base  # torch returns the mesh itself for a slice by all its dims
            if isinstance(names, tuple) and all(isinstance(n, str) for n in names):
                picked = [i for name in names for i, d in enumerate(base.dims) if d[0] == name]
                if len(picked) == len(names):
                    axes = tuple(base.axes[i] for i in picked) if base.axes is not None else None
                    return Mesh(tuple(base.dims[i] for i in picked), base.device, base.line, base.column, base.names_given,
                                file=base.file, site=base.site, root=False, axes=axes, origin=base.origin or base)
            return UNKNOWN
        if isinstance(base, DictVal) and isinstance(key, Const) and isinstance(key.value, str):
            return base.items.get(key.value, UNKNOWN)
        if isinstance(base, ListVal) and isinstance(key, Const) and isinstance(key.value, int):
            return base.items[key.value] if -len(base.items) <= key.value < len(base.items) else UNKNOWN
        if isinstance(base, Const) and isinstance(base.value, (tuple, list, dict, str)):
            try:
                return Const(base.value[key.value]) if isinstance(key, Const) else UNKNOWN
            except (IndexError, KeyError, TypeError):
                return UNKNOWN
        if isinstance(base, Path):
            return Path(base.path + "[*]")
        return UNKNOWN

    def _arguments(self, node: ast.Call, env: Env) -> tuple[list[Any], dict[str, Any], set[str]]:
        args: list[Any] = []
        for argument in node.args:
            if isinstance(argument, ast.Starred):
                value = self._expr(argument.value, env)
                args.extend(value.items if isinstance(value, ListVal) else [UNKNOWN])
            else:
                args.append(self._expr(argument, env))
        kwargs: dict[str, Any] = {}
        for keyword in node.keywords:
            value = self._expr(keyword.value, env)
            if keyword.arg is None:
                if isinstance(value, DictVal):
                    kwargs.update(value.items)
                    self.spread_texts[id(node)] = value.texts
                else:  # `**fsdp_kwargs` from the caller: any argument may be in it
                    self.spread_texts[id(node)] = {"**": "**" + _text(keyword.value)}
            else:
                kwargs[keyword.arg] = value
        return args, kwargs, set(kwargs)

    def _call(self, node: ast.Call, env: Env) -> Any:
        callee = self._expr(node.func, env)
        args, kwargs, _ = self._arguments(node, env)
        if isinstance(callee, Choice):  # each callable option, under its conditions
            callables = [v for _, v in callee.options if isinstance(v, (Func, Qual, Path))]
            if callables and all(_equivalent(v, callables[0]) for v in callables):
                # a version switch between two imports of one thing (or a `= None` fallback): one call
                return self._call_value(callables[0], node, args, kwargs, env)
            results = []
            for conds, option in callee.options:
                if isinstance(option, (Func, Qual, Path)):
                    self.conds.extend(conds)
                    try:
                        results.append((conds, self._call_value(option, node, args, kwargs, env)))
                    finally:
                        del self.conds[len(self.conds) - len(conds):]
            if len(results) == 1 and not results[0][0]:
                return results[0][1]
            return Choice(tuple(results)) if results else UNKNOWN
        return self._call_value(callee, node, args, kwargs, env)

    def _call_value(self, callee: Any, node: ast.Call, args: list[Any], kwargs: dict[str, Any], env: Env) -> Any:
        if isinstance(callee, Qual) and callee.name in ("os.getenv", "os.environ.get"):
            return RunTime(_text(node))
        if isinstance(callee, Path) and callee.path in ("int", "float", "str", "bool") and args \
                and isinstance(args[0], RunTime):
            return RunTime(_text(node))
        if isinstance(callee, Qual) and self.linker is not None:
            found = self._foreign(callee.name)
            if found is not None:
                callee = found
        if isinstance(callee, Func):
            return self._run_function(callee, args, kwargs, node=node)
        if isinstance(callee, Qual):
            result = self._known(callee.last, callee.name, node, args, kwargs, env)
            return UNKNOWN if result is NOT_KNOWN else result
        if isinstance(callee, Path):
            head, _, method = callee.path.rpartition(".")
            if head and not head.endswith("]"):
                result = self._method(Path(head), method, node, args, kwargs, env)
            else:
                result = self._known(callee.path, callee.path, node, args, kwargs, env, bare=True)
            if result is NOT_KNOWN:
                # calling an object: a module's forward, when the object is a module
                self._event("call", node, name=method, targets=[callee.path])
                return Path("?")
            return result
        if isinstance(callee, Mesh) or callee is UNKNOWN:
            if isinstance(node.func, ast.Attribute) and node.func.attr == "_flatten":
                base = self._expr(node.func.value, env)
                if isinstance(base, Mesh):
                    name = args[0].value if args and isinstance(args[0], Const) else None
                    if name is None and "mesh_dim_name" in kwargs:
                        name = kwargs["mesh_dim_name"].value if isinstance(kwargs["mesh_dim_name"], Const) else None
                    given = bool(args) or "mesh_dim_name" in kwargs
                    self._event("mesh_flatten", node, kwargs={"mesh": base, "name": name, "given": given})
                    axes = (tuple(pair for axis in base.axes for pair in axis),) if base.axes is not None else None
                    return Mesh(((name, base.size),), base.device, base.line, base.column, file=base.file,
                                site=base.site, root=False, axes=axes, origin=base.origin or base)
        return UNKNOWN

    def _run_function(self, func: Func, args: list[Any], kwargs: dict[str, Any], entry: bool = False,
                      node: ast.AST | None = None) -> Any:
        key = id(func.node)
        if key in self.stack or len(self.stack) >= MAX_INLINE_DEPTH or (self.statements > MAX_STATEMENTS and not entry):
            self.refused.add(key)
            return UNKNOWN
        outer = self.file, self.site
        if func.env.file != self.file:  # into another file's helper, or back into this file
            if not func.env.file:
                self.site = None
            elif not self.file:
                self.site = (getattr(node, "lineno", 1), getattr(node, "col_offset", 0) + 1)
            self.file = func.env.file
        try:
            return self._inline(func, args, kwargs, entry, key)
        finally:
            self.file, self.site = outer

    def _inline(self, func: Func, args: list[Any], kwargs: dict[str, Any], entry: bool, key: int) -> Any:
        env = Env(func.env, len(self.conds))
        parameters = func.node.args
        positional = [*parameters.posonlyargs, *parameters.args]
        defaults = [None] * (len(positional) - len(parameters.defaults)) + list(parameters.defaults)
        values = list(args)
        if func.bound_self is not None and positional:
            values = [func.bound_self, *values]
        for index, parameter in enumerate(positional):
            if index < len(values):
                value = values[index]
            elif parameter.arg in kwargs:
                value = kwargs[parameter.arg]
            elif defaults[index] is not None and not entry:
                value = self._expr(defaults[index], func.env)
            else:
                value = Path(parameter.arg)
            env.set(parameter.arg, value)
        for parameter, default in zip(parameters.kwonlyargs, parameters.kw_defaults):
            if parameter.arg in kwargs:
                env.set(parameter.arg, kwargs[parameter.arg])
            elif default is not None and not entry:
                env.set(parameter.arg, self._expr(default, func.env))
            else:
                env.set(parameter.arg, Path(parameter.arg))
        if parameters.kwarg is not None:
            rest = {k: v for k, v in kwargs.items() if k not in {p.arg for p in positional + parameters.kwonlyargs}}
            env.set(parameters.kwarg.arg, DictVal(rest, len(self.conds)))
        if parameters.vararg is not None:
            env.set(parameters.vararg.arg, ListVal(values[len(positional):]))
        self.stack.append(key)
        self.ran.add(key)
        self.frames.append(_Frame(len(self.conds)))
        self.calls += 1
        self.invocations.append((self.calls, _local_names(func.node)))
        try:
            if isinstance(func.node, ast.Lambda):
                result = self._expr(func.node.body, env)
            else:
                self._block(func.node.body, env)
                returns = [(c, r) for c, r in self.frames[-1].returns if not isinstance(r, _Unknown)]
                if len(returns) > 1 and any(c for c, _ in returns) and not all(_same(r, returns[0][1])
                                                                              for _, r in returns):
                    result = Choice(tuple(returns))
                else:
                    result = returns[0][1] if returns else UNKNOWN
        finally:
            self.frames.pop()
            self.stack.pop()
            self.invocations.pop()
        return result

    def _method(self, owner: Path, method: str, node: ast.Call, args, kwargs, env: Env) -> Any:
        if owner.path == "self" or owner.path.startswith("self."):
            local = self._find_method(method) if owner.path == "self" else None
            if local is not None:
                return self._run_function(Func(local, self.module_env, owner), args, kwargs, node=node)
        if method in ("parameters", "named_parameters"):
            return ParamsOf(owner.path)
        if method in ("children", "modules", "values", "named_children", "named_modules", "items"):
            return Path(owner.path + ".children()")
        if method == "set_requires_gradient_sync":
            self._event("gradient_sync", node, targets=[owner.path], kwargs={"value": args[0] if args else UNKNOWN})
        elif method == "set_reshard_after_forward":
            value = args[0] if args else kwargs.get("reshard_after_forward", UNKNOWN)
            self._event("set_reshard_after_forward", node, targets=[owner.path], kwargs={"value": value})
        elif method in ("forward", "generate"):
            self._event("direct_forward", node, name=method, targets=[owner.path])
        elif method == "update_parameters" and (args or "model" in kwargs):
            # an AveragedModel's update from the model it averages: targets [the averaged model, the model]
            model = args[0] if args else kwargs["model"]
            self._event("averaged_update", node, targets=[owner.path, *_paths(model)])
        elif method == "gradient_checkpointing_enable":
            self._event("hf_checkpointing", node, targets=[owner.path])
        elif method == "add_argument":
            self._argparse(node, args, kwargs)
        elif method in ("to_empty",):
            self._event("to_empty", node, targets=[owner.path], kwargs=dict(kwargs))
        elif method in WRAPPER_METHODS and not owner.path.endswith("utils"):
            self._event("wrapper_method", node, name=method, targets=[owner.path])
        elif method in FSDP_METHODS:
            named = dict(kwargs)
            for name, value in zip(FSDP_METHODS[method], args):
                named.setdefault(name, value)
            self._event("fsdp_method", node, name=method, targets=[owner.path], kwargs=named, given=frozenset(named))
        elif method == "register_parameter" and len(args) >= 1 and isinstance(args[0], Const):
            self._event("new_parameter", node, name=str(args[0].value), targets=[owner.path])
        return self._known(method, method, node, args, kwargs, env, receiver=owner)

    def _find_method(self, name: str) -> ast.FunctionDef | None:
        if self.methods is None:  # every method of every class in the file, by name (the first wins)
            self.methods = {}
            for statement in walk_nodes(self.tree):
                if isinstance(statement, ast.ClassDef):
                    for item in statement.body:
                        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                            self.methods.setdefault(item.name, item)
        return self.methods.get(name)

    def _argparse(self, node: ast.Call, args: list[Any], kwargs: dict[str, Any]) -> None:
        default = kwargs.get("default")
        if not isinstance(default, Const) or not isinstance(default.value, (int, float)) or isinstance(default.value, bool):
            return
        for flag in args:
            if self.file:
                break
            if isinstance(flag, Const) and isinstance(flag.value, str) and flag.value.startswith("--"):
                name = flag.value.lstrip("-").replace("-", "_")
                self.analysis.constants.setdefault(name, (default.value, node.lineno, node.col_offset + 1))

    # -- the calls that matter ------------------------------------------------------------

    def _known(self, last: str, qualified: str, node: ast.Call, args: list[Any], kwargs: dict[str, Any], env: Env,
               bare: bool = False, receiver: Path | None = None) -> Any:
        named = dict(kwargs)
        for name, value in zip(POSITIONAL.get(last, ()), args):
            named.setdefault(name, value)
        given = frozenset(kwargs) | frozenset(POSITIONAL.get(last, ())[:len(args)])

        def texts() -> dict[str, str]:  # the arguments' source, unparsed only for the calls that keep it
            return {**self.spread_texts.get(id(node), {}), **_argument_texts(node, POSITIONAL.get(last, ()))}

        if last == "fully_shard" and (qualified in TORCH_FULLY_SHARD or (bare and receiver is None)):
            targets = _paths(named.get("module", UNKNOWN))
            self._event("fully_shard", node, targets=targets, kwargs=named, given=given, texts=texts())
            return named.get("module", UNKNOWN)
        if last == "fully_shard":  # another library's fully_shard (or a method of that name) is not torch's
            return NOT_KNOWN
        # torch's FSDP1 wrapper: a name imported from torch (another library's class of that name, such as
        # Megatron-LM's FSDP adapter, is not it), or a bare name the file does not bind otherwise
        if last in ("FullyShardedDataParallel", "FSDP") and (
                (not bare and qualified.split(".")[0] == "torch")
                or (bare and (last == "FullyShardedDataParallel" or env.lookup(last) is not None))):
            self._event("fsdp1", node, targets=_paths(named.get("module", UNKNOWN)), kwargs=named, given=given)
            return named.get("module", UNKNOWN)
        if last == "init_device_mesh":
            return self._mesh(node, named)
        if last in DTENSOR_CALLS and qualified.startswith("torch.distributed."):
            first = POSITIONAL[last][0]
            self._event("dtensor", node, name=last, targets=_paths(named.get(first, UNKNOWN)), kwargs=named, given=given,
                        texts=texts())
            return named.get(first, UNKNOWN) if last != "distribute_tensor" else UNKNOWN
        if last == "DeviceMesh" and qualified.startswith("torch."):
            self._event("device_mesh", node, kwargs=named, given=given, texts=texts())
            return UNKNOWN
        if last == "deepcopy" and qualified == "copy.deepcopy":
            self._event("deepcopy", node, targets=_paths(args[0] if args else UNKNOWN))
            return UNKNOWN
        if last == "AveragedModel" and qualified.endswith("swa_utils.AveragedModel"):
            # torch.optim.swa_utils.AveragedModel(model): a deep copy of the module, averaged by update_parameters
            self._event("averaged_model", node, targets=_paths(named.get("model", args[0] if args else UNKNOWN)))
            return NOT_KNOWN  # bound as a module of its own (`ema.module` is its copy)
        if last == "share_comm_ctx" and qualified.startswith("torch."):
            self._event("share_comm_ctx", node, kwargs={"modules": args[0] if args else kwargs.get("modules", UNKNOWN)})
            return UNKNOWN
        if last in POLICIES:
            shown = texts()
            self._event("policy", node, name=POLICIES[last], kwargs=named, given=given, texts=shown)
            return Policy(POLICIES[last], named, node.lineno, node.col_offset + 1, shown, tuple(self.conds), self.file,
                          self.site)
        if last in ("GradScaler", "ShardedGradScaler"):
            kind = "sharded_grad_scaler" if last == "ShardedGradScaler" or "sharded_grad_scaler" in qualified else "grad_scaler"
            return Ref(self._event(kind, node, name=qualified, kwargs=named, given=given))
        if last in CHECKPOINT_CALLS or qualified.endswith("_composable.checkpoint"):
            module = named.get("module", named.get("model", args[0] if args else UNKNOWN))
            self._event("checkpoint", node, name=last, targets=_paths(module))
            return module if last != "apply_activation_checkpointing" else UNKNOWN
        if last == "clip_grad_norm_":
            if receiver is not None and not receiver.path.endswith("utils"):  # FSDP1 module.clip_grad_norm_(max_norm)
                named = {"max_norm": args[0] if args else kwargs.get("max_norm", UNKNOWN)}
            self._event("clip", node, name=qualified, kwargs=named, given=given, texts=texts())
            return UNKNOWN
        if qualified.startswith(PIPELINING) and not bare:  # a pipeline stage or schedule: the job runs PP
            self._event("pipeline", node, name=last)
            return NOT_KNOWN
        if last == "register_fsdp_forward_method":
            self._event("register_forward_method", node, targets=_paths(named.get("module", UNKNOWN)), kwargs=named)
            return UNKNOWN
        if last == "init_process_group":
            self._event("process_group", node, kwargs=named, given=given, texts=texts(), qualified=qualified)
            return UNKNOWN
        if last == "destroy_process_group":  # after it, a new default group may be initialised
            self._event("process_group_destroyed", node)
            return UNKNOWN
        if last == "DataLoader":
            self._event("dataloader", node, kwargs=named, given=given, texts=texts())
            return UNKNOWN
        if last == "getattr" and len(args) >= 2 and isinstance(args[0], Qual) and args[0].name == "torch":
            if isinstance(args[1], Const) and args[1].value in DTYPES:
                return Dtype(DTYPES[args[1].value])
            return UNKNOWN
        if last == "dict" and bare:
            return DictVal(dict(kwargs), len(self.conds))
        if last in ("list", "tuple", "reversed", "sorted") and bare and args:
            if last in ("list", "tuple") and isinstance(args[0], ParamsOf) and args[0].copied is None:
                return ParamsOf(args[0].path, (self.flow, self.seq, node.lineno))
            return args[0]
        if _is_scheduler(last, qualified, args):
            named = dict(kwargs)
            for name, value in zip(("optimizer", *SCHEDULER_POSITIONAL.get(last, ())), args):
                named.setdefault(name, value)
            functions = [v for v in [*args, *kwargs.values()] if isinstance(v, Func)]
            if functions and not isinstance(named.get("lr_lambda"), Func):
                named["lr_lambda"] = functions[0]
            return Ref(self._event("scheduler", node, name=last, kwargs=named, given=frozenset(named)))
        if not bare and receiver is None and _is_optimizer(last, qualified):
            named = dict(kwargs)
            for name, value in zip(("params", *OPTIMIZER_POSITIONAL.get(last, ())), args):
                named.setdefault(name, value)
            params = named.get("params", UNKNOWN)
            targets = [params.path] if isinstance(params, ParamsOf) else []
            return Ref(self._event("optimizer", node, name=last, qualified=qualified, targets=targets, kwargs=named,
                                   given=frozenset(named), texts=_argument_texts(
                                       node, ("params", *OPTIMIZER_POSITIONAL.get(last, ())))))
        return NOT_KNOWN

    def _mesh(self, node: ast.Call, named: dict[str, Any]) -> Mesh:
        shape = named.get("mesh_shape", UNKNOWN)
        names = named.get("mesh_dim_names", UNKNOWN)
        sizes: list[int | None]
        if isinstance(shape, Const) and isinstance(shape.value, tuple):
            sizes = [v if isinstance(v, int) and not isinstance(v, bool) else None for v in shape.value]
        elif isinstance(shape, ListVal):
            sizes = [i.value if isinstance(i, Const) and isinstance(i.value, int) else None for i in shape.items]
        elif isinstance(shape, Const) and isinstance(shape.value, int):
            sizes = [shape.value]
        else:
            sizes = [None]
        dim_names: list[str | None] = [None] * len(sizes)
        if isinstance(names, ListVal):  # mesh_dim_names=["dp", "tp"]: a list reads as the tuple does
            names = Const(tuple(i.value if isinstance(i, Const) else None for i in names.items))
        if isinstance(names, Const) and isinstance(names.value, tuple):
            dim_names = [n if isinstance(n, str) else None for n in names.value][:len(sizes)]
            dim_names += [None] * (len(sizes) - len(dim_names))
        device = named.get("device_type", UNKNOWN)
        known = [s for s in sizes if s is not None]
        axes = tuple(((size, math.prod(known[i + 1:])),) for i, size in enumerate(known)) \
            if len(known) == len(sizes) else None  # row-major over ranks 0 .. size-1
        mesh = Mesh(tuple(zip(dim_names, sizes)), device.value if isinstance(device, Const) else None, node.lineno,
                    node.col_offset + 1, names_given="mesh_dim_names" in named,
                    shape_text=_argument_texts(node, POSITIONAL["init_device_mesh"]).get("mesh_shape", ""),
                    file=self.file, site=self.site, axes=axes)
        self._event("mesh", node, kwargs={"mesh": mesh, **named}, given=frozenset(named),
                    texts=_argument_texts(node, POSITIONAL["init_device_mesh"]))
        return mesh


def _called_names(tree: ast.Module) -> set[str]:
    """Names of functions and methods some code in the file calls (or passes as a callback).
    Kept on the shared tree (a file is read alone and again with the files it imports): never
    modify the set."""
    found = tree.__dict__.get("_shardshift_called")
    if found is not None:
        return found
    called: set[str] = set()
    for node in walk_nodes(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                called.add(func.id)
            elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in ("self", "cls"):
                called.add(func.attr)
            for argument in [*node.args, *(k.value for k in node.keywords)]:
                if isinstance(argument, ast.Name):
                    called.add(argument.id)
    tree._shardshift_called = called  # type: ignore[attr-defined]
    return called


def _passed_names(tree: ast.Module) -> set[str]:
    """Names passed as an argument of a call (a callback, or the entry function of a CLI wrapper).
    Kept on the shared tree, as `_called_names`: never modify the set."""
    found = tree.__dict__.get("_shardshift_passed")
    if found is None:
        found = {argument.id for node in walk_nodes(tree) if isinstance(node, ast.Call)
                 for argument in [*node.args, *(k.value for k in node.keywords)] if isinstance(argument, ast.Name)}
        tree._shardshift_passed = found  # type: ignore[attr-defined]
    return found


def _dotted(node: ast.expr) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _paths(value: Any) -> list[str]:
    if isinstance(value, Path):
        return [value.path]
    if isinstance(value, ListVal):
        return [p for item in value.items for p in _paths(item)]
    return []


def _element_of(value: Any, node: ast.expr) -> Any:
    """What a loop variable stands for: one element of `value`."""
    if isinstance(value, ListVal) and value.items:
        first = value.items[0]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "enumerate":
            return ListVal([UNKNOWN, first])
        return first
    if isinstance(value, Path):
        if value.path.endswith(".children()"):  # model.modules(), .children(), .items(), ...
            element = Path(value.path[:-len(".children()")] + ".<child>[*]")
        else:
            element = Path(value.path + "[*]")
        if isinstance(node, ast.Call) and (
                (isinstance(node.func, ast.Name) and node.func.id == "enumerate")
                or (isinstance(node.func, ast.Attribute) and node.func.attr in ("items", "named_children",
                                                                                "named_modules"))):
            return ListVal([UNKNOWN, element])
        return element
    if isinstance(value, Const) and isinstance(value.value, (tuple, list)) and value.value:
        return Const(value.value[0])
    return UNKNOWN


def _truth(value: Any) -> bool | None:
    if isinstance(value, Const):
        try:
            return bool(value.value)
        except Exception:  # noqa: BLE001 - an odd constant decides nothing
            return None
    if isinstance(value, (Dtype, Policy, Mesh, Func)):
        return True
    return None


def _binop(op: ast.operator, left: Any, right: Any) -> Any:
    if not (isinstance(left, Const) and isinstance(right, Const)):
        return UNKNOWN
    a, b = left.value, right.value
    numbers = (int, float)
    if not (isinstance(a, numbers) and isinstance(b, numbers)) or isinstance(a, bool) or isinstance(b, bool):
        return UNKNOWN
    try:
        if isinstance(op, ast.Add):
            return Const(a + b)
        if isinstance(op, ast.Sub):
            return Const(a - b)
        if isinstance(op, ast.Mult):
            return Const(a * b)
        if isinstance(op, ast.Div):
            return Const(a / b)
        if isinstance(op, ast.FloorDiv):
            return Const(a // b)
        if isinstance(op, ast.Mod):
            return Const(a % b)
        if isinstance(op, ast.Pow) and abs(b) <= 64 and abs(a) <= 2**32:
            return Const(a ** b)
    except (ZeroDivisionError, OverflowError, ValueError):
        return UNKNOWN
    return UNKNOWN


def _boolop(op: ast.boolop, values: list[Any]) -> Any:
    known = [v for v in values if isinstance(v, Const)]
    if isinstance(op, ast.And):
        if any(not v.value for v in known):
            return next(v for v in known if not v.value)
        return known[-1] if known else UNKNOWN  # `PIN_MEMORY and torch.accelerator.is_available()`: the setting
    if any(v.value for v in known):
        return next(v for v in known if v.value)
    return known[-1] if known and len(known) == len(values) else UNKNOWN


def _compare(left: Any, ops: list[ast.cmpop], rights: list[Any]) -> Any:
    if len(ops) != 1:
        return UNKNOWN
    op, right = ops[0], rights[0]
    if isinstance(op, (ast.Is, ast.IsNot)) and right == Const(None):
        if isinstance(left, Const):
            same = left.value is None
        elif isinstance(left, (Dtype, Policy, Mesh, Func, DictVal, ListVal)):
            same = False
        else:
            return UNKNOWN
        return Const(same if isinstance(op, ast.Is) else not same)
    if isinstance(left, Dtype) and isinstance(right, Dtype) and isinstance(op, (ast.Eq, ast.NotEq, ast.Is,
                                                                                  ast.IsNot)):
        same = left.name == right.name
        return Const(same if isinstance(op, (ast.Eq, ast.Is)) else not same)
    if isinstance(left, Const) and isinstance(right, Const):
        a, b = left.value, right.value
        try:
            result = {ast.Eq: lambda: a == b, ast.NotEq: lambda: a != b, ast.Lt: lambda: a < b,
                      ast.LtE: lambda: a <= b, ast.Gt: lambda: a > b, ast.GtE: lambda: a >= b,
                      ast.In: lambda: a in b, ast.NotIn: lambda: a not in b}.get(type(op))
            return Const(result()) if result is not None else UNKNOWN
        except TypeError:
            return UNKNOWN
    return UNKNOWN


def _is_scheduler(last: str, qualified: str, args: list[Any]) -> bool:
    if "lr_scheduler" in qualified and last[:1].isupper():
        return True
    if last in TORCH_SCHEDULERS and (qualified == last or "torch" in qualified):
        return True
    return bool(HF_SCHEDULE.match(last)) and bool(args) and isinstance(args[0], Ref)


def _is_optimizer(last: str, qualified: str) -> bool:
    """An optimizer class, resolved through the imports: torch.optim or a known optimizer library
    (never a bare name, `nn.Parameter`, or a context manager such as `GatheredParameters`)."""
    if not last[:1].isupper() or "lr_scheduler" in qualified or last in POLICIES or last in NOT_OPTIMIZERS:
        return False
    if qualified.startswith("torch.optim."):
        return qualified.count(".") == 2 or last in TORCH_OPTIMIZERS
    return qualified.startswith(OPTIMIZER_MODULES) or qualified in OPTIMIZER_CLASSES


def _argument_texts(node: ast.Call, positional: tuple[str, ...]) -> dict[str, str]:
    """The source text of each argument of a call, by parameter name."""
    texts = {name: _text(arg) for name, arg in zip(positional, node.args) if not isinstance(arg, ast.Starred)}
    texts.update({k.arg: _text(k.value) for k in node.keywords if k.arg is not None})
    return texts


def _text(node: ast.AST | None) -> str:
    if node is None:
        return ""
    found = node.__dict__.get("_shardshift_text")  # kept on the shared tree: a condition is met once per call followed
    if found is not None:
        return found
    try:
        text = ast.unparse(node)
    except Exception:  # noqa: BLE001 - an odd tree still reads
        text = "?"
    found = node._shardshift_text = text if len(text) <= 80 else text[:77] + "..."  # type: ignore[attr-defined]
    return found


def _equivalent(a: Any, b: Any) -> bool:
    """Two imports of the same torch name from different modules (a version switch)."""
    if _same(a, b):
        return True
    return isinstance(a, Qual) and isinstance(b, Qual) and a.last == b.last and \
        a.name.startswith("torch.") and b.name.startswith("torch.")


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if isinstance(a, (Const, Dtype, Qual, Path, RunTime)) and type(a) is type(b):
        return a == b and (not isinstance(a, Const) or type(a.value) is type(b.value))
    return False


def _choose(conds: tuple[Cond, ...], value: Any, before: Any) -> Any:
    """`value` when `conds` hold, `before` otherwise (options set under the same conditions are replaced)."""
    if _same(value, before):
        return value
    earlier = before.options if isinstance(before, Choice) else (((), before),)
    kept = tuple(o for o in earlier if o[0] != conds)
    return Choice(((conds, value), *kept))


def _map(choice: Choice, function: Any) -> Any:
    options = tuple((conds, value if value is MISSING else function(value)) for conds, value in choice.options)
    first = options[0][1]
    return first if all(_same(v, first) for _, v in options) else Choice(options)


# --- analysis and Plan ----------------------------------------------------------------------


@lru_cache(maxsize=64)
def _parse(text: str) -> ast.Module | SyntaxProblem:
    """The syntax tree of a Python file (shared, never modified), or why it cannot be read."""
    try:
        with warnings.catch_warnings():  # the user's invalid escapes are not our warnings to print
            warnings.simplefilter("ignore")
            return parse_user_code(text)
    except SyntaxError as error:
        line = error.lineno or 1
        return SyntaxProblem(f"invalid Python: {error.msg}", line, max(1, error.offset or 1))
    except (ValueError, TypeError) as error:  # null bytes and the like
        return SyntaxProblem(f"cannot read as Python: {error}", 1, 1)
    except (RecursionError, MemoryError):
        return SyntaxProblem("the code is nested too deeply to read", 1, 1)


@lru_cache(maxsize=64)
def analyse(text: str) -> Analysis | SyntaxProblem:
    """The events of a Python file on its own, or why it cannot be read."""
    return _interpret(text)


def _interpret(text: str, path: str = "", linker: Linker | None = None) -> Analysis | SyntaxProblem:
    tree = _parse(text)
    if isinstance(tree, SyntaxProblem):
        return tree
    try:
        return Interpreter(tree, text, path, linker).run()
    except RecursionError:
        return SyntaxProblem("the code is nested too deeply to analyse", 1, 1)


def analysis_of(document: Document) -> Analysis | None:
    result = analyse(document.text)
    return result if isinstance(result, Analysis) else None


def _local_names(node: ast.AST) -> frozenset[str]:
    """The names a function binds itself (assignments, loops, with): new objects in each call.
    Parameters and names declared global or nonlocal are not its own."""
    found = getattr(node, "_shardshift_locals", None)  # kept on the node: computed once per function
    if found is None:
        bound, shared = set(), set()
        for child in walk_nodes(node):
            if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
                bound.add(child.id)
            elif isinstance(child, (ast.Global, ast.Nonlocal)):
                shared.update(child.names)
        found = frozenset(bound - shared)
        node._shardshift_locals = found  # type: ignore[attr-defined]
    return found


def split_root(events: list[Event]) -> tuple[list[Event], list[Event]]:
    """The fully_shard calls on the root module, and the others (blocks). The root is a call
    outside loops on a module whose path is a prefix of the other calls' paths; failing that, the
    last call outside loops on a plain name."""
    calls = [e for e in events if e.kind == "fully_shard"]
    if not calls:
        return [], []

    def root_like(event: Event) -> bool:
        return (not event.in_loop and len(event.targets) == 1 and "[" not in event.targets[0]
                and event.targets[0] != "?")

    candidates = [e for e in calls if root_like(e)]
    # a candidate is a prefix when some call's target is below it: one set of every target's
    # ancestors, not every pair of calls (linear in the calls, 5,000 of them in generated code)
    above = {a for other in calls for t in other.targets for a in ancestors(t)}
    prefixes = [e for e in candidates if e.targets[0] in above]
    if prefixes:
        roots = [e for e in candidates if e.targets[0] == prefixes[0].targets[0]]
    else:
        plain = [e for e in candidates if "." not in e.targets[0] or e.targets[0].startswith("self.")]
        loops = [e for e in calls if not root_like(e)]
        roots = [plain[-1]] if plain and loops else ([calls[-1]] if len(calls) == 1 and plain else [])
    blocks = [e for e in calls if e not in roots]
    return roots, blocks


def is_below(path: str, root: str) -> bool:
    """`path` names a submodule of `root` (model.layers[*] is below model)."""
    return path != root and (path.startswith(root + ".") or path.startswith(root + "["))


def ancestors(path: str) -> list[str]:
    """Every `root` that `path` is below (`is_below(path, root)`): its prefixes before a `.` or `[`."""
    return [path[:i] for i, char in enumerate(path) if char in ".[" and i]


def _dtype_name(value: Any) -> str | None:
    if isinstance(value, Dtype) and value.name in ("fp32", "bf16", "fp16", "fp8"):
        return value.name
    return None


def _plain(value: Any) -> Any:
    """A JSON-able plain value, or None."""
    if isinstance(value, Const):
        inner = value.value
        if isinstance(inner, tuple):
            return list(inner)
        if isinstance(inner, (int, float, str, bool)) or inner is None:
            if isinstance(inner, float) and not math.isfinite(inner):
                return None
            return inner
    if isinstance(value, Dtype):
        return value.name
    if isinstance(value, DictVal):
        out = {k: _plain(v) for k, v in value.items.items()}
        return out if all(v is not None for v in out.values()) else None
    return None


STATIC_GROWTH_INTERVAL = 2**31 - 1  # a GradScaler that never grows: DeepSpeed's static loss scale
SIZE_FIELDS = frozenset({"world.world_size", "sharding.hybrid_shard_size", "batch.micro", "batch.accumulation",
                         "batch.global_", "parallelism.data_parallel_replicate", "parallelism.data_parallel_shard",
                         "parallelism.tensor", "parallelism.pipeline", "parallelism.context", "parallelism.expert",
                         "precision.loss_scale_window"})
SCHEDULER_FIELD_TYPES = {"warmup_steps": int, "total_steps": int, "min_lr": float, "max_lr": float, "warmup_type": str}


class At(NamedTuple):
    """Where a setting was set: line and column in `file` ("": the file being read); `site` is
    the call in the file being read that led into that other file."""

    line: int
    column: int
    file: str = ""
    site: tuple[int, int] | None = None


def _at(thing: Any) -> At:
    """The position of an event, a policy or a mesh."""
    return At(thing.line, thing.column, thing.file, thing.site)


def _fits(kind: type, value: Any) -> bool:
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, kind)


class _Facts:
    """The Plan's settings as read, as plain values by dotted field (no pydantic here), with the
    position of the call that set each."""

    def __init__(self, analysis: Analysis, path: str = "<string>") -> None:
        self.analysis = analysis
        self.path = path
        self.values: dict[str, Any] = {}
        self.positions: dict[str, tuple[int, int]] = {}  # in the file being read (for a helper's: the call)
        self.places: dict[str, tuple[int, int]] = {}  # where each was set (At when in a helper's file)

    def set(self, dotted: str, value: Any, position: tuple[int, int], conds: tuple[Cond, ...] = ()) -> None:
        """Record a field once (the first setter wins). A value set by a call that runs only under
        undecided conditions is Unknown, with those conditions as the reason."""
        if value is None:
            return
        if dotted in self.values:  # a stated value beats a run-time one read earlier (WORLD_SIZE = 8 vs the mesh)
            held = self.values[dotted]
            if not (isinstance(held, _UNKNOWN_TYPES()) and held.reason.startswith("run-time")
                    and not isinstance(value, _UNKNOWN_TYPES()) and not conds):
                return
        if isinstance(value, _UNKNOWN_TYPES()):
            pass
        elif dotted in SIZE_FIELDS and not (_fits(int, value) and value >= 1):
            return
        value = self.guard(value, conds, position)
        self.values[dotted] = value
        self.places[dotted] = position
        foreign = isinstance(position, At) and position.file
        self.positions[dotted] = (position.site or (1, 1)) if foreign else (position[0], position[1])

    def where(self, position: tuple[int, int]):
        from shardshift.source import Location

        file = position.file if isinstance(position, At) and position.file else self.path
        return Location(file, position[0], position[1], None)

    def guard(self, value: Any, conds: tuple[Cond, ...], position: tuple[int, int]) -> Any:
        if not conds:
            return value
        from shardshift.plan import Alternative, Unknown

        when = describe(conds)
        if isinstance(value, Unknown):
            return Unknown(f"{value.reason}; and set only when {when}", value.where, value.alternatives)
        return Unknown(f"set only when {when}", self.where(position), (Alternative(value, when),))

    def pick(self, raw: Any, extract: Any, position: tuple[int, int], text: str = "") -> Any:
        """A field's value from an abstract value: `extract(raw)` for a real value; for a Choice, an
        Unknown naming the conditions with the alternatives; for a run-time value, an Unknown naming
        the expression; None when not set."""
        from shardshift.plan import Alternative, Unknown

        if raw is None or raw is MISSING:
            return None
        if isinstance(raw, Choice):
            options = [(conds, self.pick(v, extract, position, text)) for conds, v in raw.options]
            values = [(c, v) for c, v in options if v is not None]
            if not values:
                return None
            first = values[0][1]
            if len(values) == len(options) and not isinstance(first, Unknown) \
                    and all(v == first and type(v) is type(first) for _, v in values):
                return first
            conditioned = [c for c, _ in values if c] or [c for c, _ in options if c]
            when = describe(conditioned[0]) if conditioned else "an undecided branch"
            if len(values) < len(options) and len(values) == 1:
                reason = f"set only when {when}"
            else:
                reason = f"depends on {when}"
            return Unknown(reason, self.where(position),
                           tuple(Alternative(v, describe(c)) for c, v in values if not isinstance(v, Unknown)))
        value = extract(raw)
        if value is not None:
            return value
        if isinstance(raw, RunTime):
            return Unknown(f"run-time value `{raw.text}`", self.where(position))
        if isinstance(raw, Path) or raw is UNKNOWN:
            shown = text or (raw.path if isinstance(raw, Path) else "")
            if shown and shown != "?":
                return Unknown(f"run-time value `{shown}`", self.where(position))
        return None

    def build(self) -> _Facts:
        events = self.analysis.events
        roots, blocks = split_root(events)
        self._sharding(roots, blocks)
        fsdp1 = self.analysis.of("fsdp1")
        if not roots and not blocks and fsdp1:
            self._fsdp1(fsdp1[0])
            self.conditional(fsdp1[0].conds)
        self._meshes(roots + blocks)
        self._optimizer()
        self._scheduler()
        self._scaler()
        for event in self.analysis.of("clip"):
            norm = event.value("max_norm")
            if isinstance(norm, (int, float)) and not isinstance(norm, bool) and math.isfinite(norm):
                self.set("gradient_clipping", float(norm), _at(event))
                break
        self._named_settings()
        checkpoints = self.analysis.of("checkpoint", "hf_checkpointing")
        for event in sorted(checkpoints, key=lambda e: bool(e.conds)):  # one that always runs first
            self.set("activation_checkpointing.enabled", True, _at(event), event.conds)
            break
        for event in self.analysis.of("dataloader"):
            size = event.value("batch_size")
            if _fits(int, size):
                self.set("batch.micro", size, _at(event))
        return self

    def _sharding(self, roots: list[Event], blocks: list[Event]) -> None:
        calls = blocks or roots
        if not calls:
            return
        # the blocks sharded in a loop decide; a single call outside it (torchtitan keeps the last
        # layer unsharded after forward, as it is used right away) is an exception, not the stage
        deciding = [e for e in calls if e.in_loop] or calls
        # the first call that always runs, else the first call (its conditions make the fields Unknown)
        first = next((e for e in deciding if not e.conds), deciding[0])
        where = _at(first)
        raf = first.kwargs.get("reshard_after_forward", UNKNOWN if "reshard_after_forward" in first.given else None)
        text = first.texts.get("reshard_after_forward", "")
        differ = self._differing_reshard(deciding)
        if differ:
            from shardshift.plan import Unknown

            self.set("sharding.stage", Unknown(f"the fully_shard calls differ in reshard_after_forward: {differ}",
                                               self.where(where)), where, first.conds)
        elif not blocks and (unfollowed := self._unfollowed_sharding()):
            # only the root's call is seen: blocks sharded by a helper shardshift cannot read would make
            # this ZeRO-3 (or keep it ZeRO-2): say so rather than guess from the root alone
            from shardshift.plan import Unknown

            name, line = unfollowed[0]
            self.set("sharding.stage", Unknown(f"only the root's fully_shard call is read: the blocks may be sharded "
                                               f"by `{name}` (line {line}), which shardshift does not follow",
                                               self.where(where)), where, first.conds)
        elif (raf is None or raf is MISSING) and "**" in first.texts:
            from shardshift.plan import Unknown

            self.set("sharding.stage", Unknown(f"run-time value `{first.texts['**']}`", self.where(where)), where,
                     first.conds)
        elif raf is None or raf is MISSING:
            stage = 3 if blocks else 2  # the default: True for blocks, False for the root (torch >= 2.8)
            self.set("sharding.stage", stage, where, first.conds)
        else:
            def stage_of(value: Any) -> Any:
                if isinstance(value, Const) and isinstance(value.value, bool):
                    return 3 if value.value else 2
                if isinstance(value, Const) and _fits(int, value.value) and value.value >= 1:
                    return 3
                return None

            def every(value: Any) -> Any:
                return value.value if isinstance(value, Const) and _fits(int, value.value) and value.value >= 1 \
                    else None

            self.set("sharding.stage", self.pick(raf, stage_of, where, text), where, first.conds)
            if not isinstance(raf, Const) or not isinstance(raf.value, bool):
                self.set("sharding.reshard_after_forward", self.pick(raf, every, where, text), where, first.conds)
        self._policy(calls, "mp_policy", "mp", (("precision.param_dtype", "param_dtype"),
                                                ("precision.reduce_dtype", "reduce_dtype")))
        self._policy(calls, "offload_policy", "cpu_offload", ())

    @staticmethod
    def _differing_reshard(calls: list[Event]) -> str:
        """When the block (or root) calls pass different reshard_after_forward values, which run
        depends on the path taken: the calls and their values, in words; else ""."""
        import os

        seen: dict[str, str] = {}
        for event in calls:
            if "reshard_after_forward" not in event.given:
                kind = f"`{event.texts['**']}`" if "**" in event.texts else "the default"
            else:
                value = event.kwargs.get("reshard_after_forward")
                kind = repr(value.value) if isinstance(value, Const) else \
                    f"`{event.texts.get('reshard_after_forward', '?')}`"
            where = f"{os.path.basename(event.file)} line {event.line}" if event.file else f"line {event.line}"
            seen.setdefault(kind, where)
        if len(seen) < 2:
            return ""
        return ", ".join(f"{kind} at {where}" for kind, where in seen.items())

    def _unfollowed_sharding(self) -> list[tuple[str, int]]:
        """Calls to functions named like a sharding helper (`fully_shard_by_dtype`, `apply_fsdp`,
        `shard_model`) that are defined in no file the reader followed: (name, line)."""
        import re

        text = self.analysis.text
        defined = set(re.findall(r"^\s*(?:async\s+)?def\s+(\w+)", text, re.M))
        assigned = set(re.findall(r"^\s*(\w+)\s*=[^=]", text, re.M))  # `sharded_model = ...; sharded_model(x)`
        found = []
        for match in re.finditer(r"(?<![\w.])(?:\w+\.)*(\w*(?:shard|fsdp)\w*)\s*\(", text, re.I):
            name = match.group(1)
            lowered = name.lower()
            if name in defined or name in assigned or lowered in NOT_SHARDING or lowered == "fully_shard":
                continue
            if "fully_shard" in lowered or SHARDING_HELPER.match(lowered):
                found.append((name, text.count("\n", 0, match.start()) + 1))
        return found

    def _policy(self, calls: list[Event], argument: str, kind: str, fields: tuple[tuple[str, str], ...]) -> None:
        """The fields a policy argument of fully_shard sets: from the first call that passes one."""
        event = next((e for e in calls if argument in e.kwargs and e.kwargs[argument] is not MISSING), None)
        spread = next((e for e in calls if "**" in e.texts), None)
        if event is None and spread is not None:  # the policy may be in a dict the code does not show
            from shardshift.plan import Unknown

            at = _at(spread)
            unknown = Unknown(f"run-time value `{spread.texts['**']}`", self.where(at))
            targets = ("offload.params.device", "offload.optimizer.device") if kind == "cpu_offload" \
                else tuple(d for d, _ in fields)
            for dotted in targets:
                self.set(dotted, unknown, at, spread.conds)
            return
        if event is None:
            return
        raw = event.kwargs[argument]
        call_at = _at(event)
        policies = [v for _, v in raw.options if isinstance(v, Policy)] if isinstance(raw, Choice) else [raw]
        policy = next((p for p in policies if isinstance(p, Policy) and p.kind == kind), None)
        at = _at(policy) if policy is not None else call_at
        text = event.texts.get(argument, "")
        if kind == "cpu_offload":
            def device(value: Any) -> Any:
                return "cpu" if isinstance(value, Policy) and value.kind == "cpu_offload" else \
                    "none" if isinstance(value, Policy) and value.kind == "offload" else \
                    "none" if value == Const(None) else None

            def pin(value: Any) -> Any:
                if not (isinstance(value, Policy) and value.kind == "cpu_offload"):
                    return None
                found = value.kwargs.get("pin_memory", Const(True))
                return self.pick(found, lambda v: v.value if isinstance(v, Const) and isinstance(v.value, bool)
                                 else None, at, value.texts.get("pin_memory", ""))

            offload = self.pick(raw, device, at, text)
            if offload == "none":
                return
            for target in ("offload.params", "offload.optimizer"):
                self.set(target + ".device", offload, at, event.conds)
                self.set(target + ".pin_memory", self.pick(raw, pin, at, text), at, event.conds)
            return
        for dotted, name in fields:
            def dtype(value: Any, name: str = name) -> Any:
                if not (isinstance(value, Policy) and value.kind == kind):
                    return None
                found = value.kwargs.get(name)
                return self.pick(found, _dtype_name, at, value.texts.get(name, ""))

            self.set(dotted, self.pick(raw, dtype, at, text), at, event.conds)

    def _fsdp1(self, event: Event) -> None:
        where = _at(event)
        strategy = event.kwargs.get("sharding_strategy")
        name = strategy.last if isinstance(strategy, Qual) else None
        stages = {"FULL_SHARD": (3, False), "SHARD_GRAD_OP": (2, False), "HYBRID_SHARD": (3, True),
                  "_HYBRID_SHARD_ZERO2": (2, True), "NO_SHARD": (0, False)}
        stage, hybrid = stages.get(name, (3, False)) if strategy is None or name else (None, None)
        self.set("sharding.stage", stage, where)
        if hybrid:
            self.set("sharding.hybrid", True, where)
        policy = event.kwargs.get("mixed_precision")
        if isinstance(policy, Policy):
            at = _at(policy)
            self.set("precision.param_dtype", _dtype_name(policy.kwargs.get("param_dtype")), at)
            self.set("precision.reduce_dtype", _dtype_name(policy.kwargs.get("reduce_dtype")), at)
        offload = event.kwargs.get("cpu_offload")
        if isinstance(offload, Policy) and offload.kwargs.get("offload_params") == Const(True):
            for target in ("offload.params", "offload.optimizer"):
                self.set(target + ".device", "cpu", _at(offload))

    def _meshes(self, calls: list[Event]) -> None:
        conds: tuple[Cond, ...] = ()
        used = None
        for event in calls:  # the mesh passed to fully_shard (one option of a branch: under its conditions)
            passed = event.kwargs.get("mesh")
            if isinstance(passed, Mesh):
                used, conds = passed, event.conds
                break
            if isinstance(passed, Choice):
                option = next(((c, v) for c, v in passed.options if isinstance(v, Mesh)), None)
                if option is not None:
                    used, conds = option[1], event.conds + option[0]
                    break
        created_events = self.analysis.of("mesh")
        created = [e.kwargs["mesh"] for e in created_events]
        if used is None and created:
            used, conds = created[0], created_events[0].conds
        if used is None:
            return
        where = _at(used)
        shape = self._runtime_shape(used)
        if len(used.dims) == 2:
            self.set("sharding.hybrid", True, where, conds)
            self.set("sharding.hybrid_shard_size", used.dims[1][1] or shape, where, conds)
            self.set("parallelism.data_parallel_replicate", used.dims[0][1] or shape, where, conds)
            self.set("parallelism.data_parallel_shard", used.dims[1][1] or shape, where, conds)
        elif len(used.dims) == 1:
            self.set("parallelism.data_parallel_shard", used.dims[0][1] or shape, where, conds)
        full = max(created, key=lambda m: len(m.dims)) if created else used
        full_conds = next((e.conds for e in created_events if e.kwargs["mesh"] is full), conds)
        at = _at(full)
        self.set("world.world_size", full.size or self._runtime_shape(full), at, full_conds)
        for name, size in full.dims:
            lowered = (name or "").lower()
            for field_name, pattern in (("parallelism.tensor", r"^tp$|tensor"), ("parallelism.pipeline", r"^pp$|pipe"),
                                        ("parallelism.context", r"^cp$|context"), ("parallelism.expert", r"^ep$|expert")):
                if re.search(pattern, lowered):
                    self.set(field_name, size or self._runtime_shape(full), at, full_conds)

    def _runtime_shape(self, mesh: Mesh) -> Any:
        if not mesh.shape_text:
            return None
        from shardshift.plan import Unknown

        return Unknown(f"run-time mesh shape `{mesh.shape_text}`", self.where(_at(mesh)))

    def _optimizer(self) -> None:
        events = self.analysis.of("optimizer")
        if not events:
            return
        event = next((e for e in events if not e.conds), events[0])
        where = _at(event)
        self.set("optimizer.name", event.name, where, event.conds)
        for name in ("lr", "eps", "weight_decay"):
            value = _plain(event.kwargs.get(name))
            if _fits(float, value):
                self.set(f"optimizer.{name}", value, where)
        betas = _plain(event.kwargs.get("betas"))
        if isinstance(betas, list) and all(_fits(float, b) for b in betas):
            self.set("optimizer.betas", betas, where)
        if event.name in ("Adam", "AdamW"):
            decoupled = event.name == "AdamW" or event.value("decoupled_weight_decay") is True
            self.set("optimizer.decoupled_weight_decay", decoupled, where)
        params = {}
        for name, value in event.kwargs.items():
            if name not in ("params", "lr", "betas", "eps", "weight_decay") and _plain(value) is not None:
                params[name] = _plain(value)
        if params:
            self.set("optimizer.params", params, where)

    def _scheduler(self) -> None:
        from shardshift.formats.deepspeed.reader import SCHEDULER_FIELDS

        events = self.analysis.of("scheduler")
        if not events:
            return
        event = events[0]
        where = _at(event)
        name, params = event.name, {k: v for k, v in event.kwargs.items() if k not in ("optimizer", "lr_lambda")}
        helper = _schedule_helper(event.kwargs.get("lr_lambda"))
        if helper is not None:
            name, params = helper
        self.set("scheduler.name", name, where)
        fields = SCHEDULER_FIELDS.get(name, {})
        if HF_SCHEDULE.match(name):
            fields = {"num_warmup_steps": "warmup_steps", "num_training_steps": "total_steps"}
        rest = {}
        for key, value in params.items():
            plain = _plain(value)
            if plain is None:
                continue
            target = fields.get(key)
            if target is not None and _fits(SCHEDULER_FIELD_TYPES[target], plain):
                self.set(f"scheduler.{target}", plain, where)
            else:
                rest[key] = plain
        if rest:
            self.set("scheduler.params", rest, where)

    def _scaler(self) -> None:
        for event in self.analysis.of("grad_scaler", "sharded_grad_scaler"):
            if event.value("enabled") is False:
                continue
            where = _at(event)
            init = event.value("init_scale", 65536.0 if "init_scale" not in event.given else None)
            interval = event.value("growth_interval", 2000 if "growth_interval" not in event.given else None)
            if _fits(int, interval) and interval >= STATIC_GROWTH_INTERVAL and _fits(float, init):
                self.set("precision.loss_scale", float(init), where)
            else:
                self.set("precision.loss_scale", 0.0, where)
                if _fits(float, init) and init > 0 and math.log2(init) == int(math.log2(init)):
                    self.set("precision.initial_scale_power", int(math.log2(init)), where)
                if _fits(int, interval):
                    self.set("precision.loss_scale_window", interval, where)
            return

    def _named_settings(self) -> None:
        for name, (value, line, column) in self.analysis.constants.items():
            for pattern, target in NAMED_SETTINGS:
                if pattern.match(name):
                    if target == "gradient_clipping":
                        value = float(value)
                    elif isinstance(value, float) and value.is_integer():
                        value = int(value)
                    self.set(target, value, (line, column))

    def conditional(self, conds: tuple[Cond, ...]) -> None:
        """Make every field read so far Unknown when the call that set them runs only under `conds`."""
        if conds:
            for dotted, value in list(self.values.items()):
                self.values[dotted] = self.guard(value, conds, self.places[dotted])

    def plan(self) -> Plan:
        """The Plan of these values, each with where it was set."""
        from shardshift.plan import Plan

        plan = Plan()
        for dotted, value in self.values.items():
            plan.set(dotted, value, where=self.where(self.places[dotted]))
        return plan

    def data(self) -> dict:
        """The values as nested plain data, keyed like the Plan's JSON ("global" for batch.global_)."""
        out: dict = {}
        for dotted, value in self.values.items():
            *parents, name = [("global" if part == "global_" else part) for part in dotted.split(".")]
            target = out
            for part in parents:
                target = target.setdefault(part, {})
            target[name] = value
        return out


def _schedule_helper(value: Any) -> tuple[str, dict[str, Any]] | None:
    """A LambdaLR whose lambda calls one of the emitted DeepSpeed schedule helpers."""
    if not isinstance(value, Func) or not isinstance(value.node, ast.Lambda):
        return None
    for node in walk_nodes(value.node.body):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in DS_SCHEDULE_FUNCTIONS:
            params: dict[str, Any] = {}
            for keyword in node.keywords:
                if keyword.arg is None and isinstance(keyword.value, ast.Name):
                    found = value.env.lookup(keyword.value.id)
                    if isinstance(found, DictVal):
                        params.update(found.items)
                elif keyword.arg is not None:
                    params[keyword.arg] = Const(keyword.value.value) if isinstance(keyword.value, ast.Constant) else UNKNOWN
            return DS_SCHEDULE_FUNCTIONS[node.func.id], params
    return None


def _UNKNOWN_TYPES() -> tuple[type, ...]:
    from shardshift.plan import Unknown

    return (Unknown,)


def plan_from_analysis(analysis: Analysis, path: str = "<string>") -> tuple[Plan, dict[str, tuple[int, int]]]:
    facts = _Facts(analysis, path).build()
    return facts.plan(), facts.positions


def _tree(value: Any, pointer: str, dotted: str, positions: dict[str, tuple[int, int]],
          fallback: tuple[int, int]) -> Node:
    line, column = positions.get(dotted, fallback)
    if isinstance(value, dict):
        node = Node("object", line, column, pointer)
        for key, child in value.items():
            child_dotted = f"{dotted}.{key}" if dotted else key
            child_node = _tree(child, join_pointer(pointer, key), child_dotted, positions, (line, column))
            node.members.append(Member(key, child_node.line, child_node.column, child_node))
        return node
    if isinstance(value, list):
        node = Node("array", line, column, pointer)
        node.elements = [_tree(v, join_pointer(pointer, i), dotted, positions, (line, column))
                         for i, v in enumerate(value)]
        return node
    kind = "bool" if isinstance(value, bool) else "number" if isinstance(value, (int, float)) else \
        "null" if value is None else "string"
    return Node(kind, line, column, pointer, value, repr(value))


def _prune(value: Any) -> Any:
    if isinstance(value, dict):
        out = {k: _prune(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, {}, [])}
    return value


def read(text: str, path: str = "<string>") -> Document:
    """Read FSDP2 wrapper code into a Document. `data` holds the Plan's settings as read, each
    positioned (line/column of the call that set it) in `root`; the Plan itself is built when
    first read. Never raises for bad input."""
    document = Document(path=path, format=FORMAT, text=text)
    _fill(document, analyse(text))
    return document


def _fill(document: Document, result: Analysis | SyntaxProblem) -> None:
    """Set the document's data, positioned tree and (deferred) Plan from an analysis of its code."""
    if isinstance(result, SyntaxProblem):
        document.syntax = result
        return
    facts = _Facts(result, document.path).build()
    positions = dict(facts.positions)
    for dotted in list(positions):
        if dotted.endswith(".global_"):
            positions[dotted[:-1]] = positions.pop(dotted)
    for dotted in list(positions):  # a section sits where its first field was set
        parts = dotted.split(".")
        for depth in range(1, len(parts)):
            parent = ".".join(parts[:depth])
            positions[parent] = min(positions.get(parent, positions[dotted]), positions[dotted])
    document.data = facts.data()
    document.root = _tree(document.data, "", "", positions, (1, 1))
    document.defer_plan(facts.plan)


# --- following calls into other files of the run ---------------------------------------------

LIBRARY_ROOTS = frozenset({"torch", "torchvision", "torchaudio", "transformers", "accelerate", "deepspeed"})


def _importable(value: Any) -> bool:
    """A module-level value another file can import by name: a function, an import, a constant."""
    return value is not None and not isinstance(value, (Path, _Unknown))


def _module_tail(path: str) -> tuple[str, ...]:
    """The dotted-module components a file's path ends with: a/b/c.py and a/b/c/__init__.py -> (..., b, c)."""
    parts = os.path.normpath(os.path.abspath(path)).split(os.sep)
    stem = os.path.splitext(parts[-1])[0]
    return tuple(parts[:-1]) if stem == "__init__" else (*parts[:-1], stem)


class Linker:
    """The FSDP2 files of one run, by the module each can be imported as."""

    def __init__(self, documents: list[Document]) -> None:
        self.documents = documents
        self.by_path = {os.path.normpath(os.path.abspath(d.path)): d for d in documents}
        self.tails = [(_module_tail(d.path), d) for d in documents]
        self.cache: dict[tuple[str, int, str], Document | None] = {}

    def resolve(self, module: str, level: int, importer: str) -> Document | None:
        key = (module, level, importer)
        if key not in self.cache:
            self.cache[key] = self._resolve(module, level, importer)
        return self.cache[key]

    def _resolve(self, module: str, level: int, importer: str) -> Document | None:
        """The file `module` names, imported from `importer`, or None when no file of the run is
        it or when two are equally likely (never a guess). A relative import names one place; an
        absolute one is looked for beside the importer (a script's folder is first on sys.path),
        then as the file whose path ends with the most of the module's components: all of them,
        or at least the package and the module (`parallelize.py` alone matches `pkg.parallelize`
        only when no other file does better, and never `other.parallelize`)."""
        parts = [p for p in module.split(".") if p]
        folder = os.path.dirname(os.path.abspath(importer))
        if level:
            for _ in range(level - 1):
                folder = os.path.dirname(folder)
            return self._exact(folder, parts, importer)
        if not parts or parts[0] in LIBRARY_ROOTS:
            return None
        beside = self._exact(folder, parts, importer)
        if beside is not None:
            return beside
        importer_path = os.path.normpath(os.path.abspath(importer))
        scores: dict[int, list[Document]] = {}
        for tail, document in self.tails:
            matched = 0
            while matched < min(len(parts), len(tail)) and parts[-1 - matched] == tail[-1 - matched]:
                matched += 1
            if matched and (matched == len(parts) or matched >= 2) and \
                    os.path.normpath(os.path.abspath(document.path)) != importer_path:
                scores.setdefault(matched, []).append(document)
        if not scores:
            return None
        best = scores[max(scores)]
        return best[0] if len(best) == 1 else None

    def _exact(self, folder: str, parts: list[str], importer: str) -> Document | None:
        base = os.path.join(folder, *parts)
        found = [self.by_path.get(os.path.normpath(candidate)) for candidate in
                 (base + ".py", os.path.join(base, "__init__.py"))]
        found = [d for d in found if d is not None and os.path.normpath(os.path.abspath(d.path))
                 != os.path.normpath(os.path.abspath(importer))]
        return found[0] if len(found) == 1 else None

    def imports_another(self, document: Document) -> bool:
        """Whether the document imports a module (or a name of one) that is another file of the run."""
        tree = _parse(document.text)
        if isinstance(tree, SyntaxProblem):
            return False
        for node in walk_nodes(tree):
            if isinstance(node, ast.Import):
                modules = [(alias.name, 0) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                module = node.module or ""
                modules = [(module, node.level)] + [(f"{module}.{a.name}" if module else a.name, node.level)
                                                     for a in node.names if a.name != "*"]
            else:
                continue
            if any(self.resolve(name, level, document.path) is not None for name, level in modules):
                return True
        return False


def link(documents: list[Document]) -> None:
    """Read again every FSDP2 document that imports from another file of the run, following its
    calls into that file's functions as into its own (analysed in that file's module environment,
    with the arguments bound). A setting found in the other file keeps that file and position as
    its provenance; in the document's positioned tree it sits at the call that led there. The
    FSDP2 rules still judge each file's own code (their findings are placed in the file judged).
    Nothing happens with a single document or without such an import."""
    readable = [d for d in documents if d.syntax is None and d.format == FORMAT]
    if len(readable) < 2:
        return
    linker = Linker(readable)
    for document in readable:
        if linker.imports_another(document):
            _fill(document, _interpret(document.text, document.path, linker))
