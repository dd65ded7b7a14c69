"""Rules for FSDP2 wrapper code (fsdp2.md §9-10), judged from the reader's events.

Every finding points at the call it is about (line and column; the pointer is null, as Python
has no JSON pointer). The reader follows helper functions, loops and reused policies, so a rule
sees `fully_shard` calls in the order they run.
"""

from __future__ import annotations

import ast
import math
import re
from typing import TYPE_CHECKING, Iterable

from shardshift.document import Document
from shardshift.rules.base import Context, Finding, Rule
from shardshift.user_code import walk as walk_nodes

if TYPE_CHECKING:
    from shardshift.formats.fsdp2 import reader as _reader


class _Reader:
    """The FSDP2 reader, imported when a rule first looks at FSDP2 code: checking a ds_config
    does not pay for it (a pre-commit hook runs on every commit)."""

    def __getattr__(self, name: str):
        from shardshift.formats.fsdp2 import reader

        return getattr(reader, name)


R: _reader = _Reader()  # type: ignore[assignment]

LOW_PRECISION = {"bf16": "torch.bfloat16", "fp16": "torch.float16"}
ACCUMULATION_THRESHOLD = 4
ACCUMULATION_NAMES = re.compile(
    r"^(gradient_accumulation_steps|grad(ient)?_acc(um(ulation)?)?(_steps)?|accum(ulation)?_steps)$", re.I)


class _Fsdp2Rule(Rule):
    formats = ("fsdp2",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        analysis = R.analysis_of(document)
        if analysis is None:
            return
        seen: set[tuple[int, int]] = set()
        for event, message, fix, *extra in self.judge(analysis, context):
            if (event.line, event.column) in seen:
                continue
            seen.add((event.line, event.column))
            severity = next((x for x in extra if isinstance(x, str)), None)
            unknown = next((x for x in extra if x is not None and not isinstance(x, str)), None)
            yield self.finding(document, None, message, fix=fix, position=(event.line, event.column),
                               severity=severity, unknown_context=unknown)

    def judge(self, analysis: _reader.Analysis, context: Context) -> Iterable[tuple]:
        raise NotImplementedError


def _target(event: _reader.Event) -> str:
    return ", ".join(event.targets) if event.targets else "a module"


def _show(path: str) -> str:
    return path.replace(".<child>", "").replace("[*]", "[i]")


def _related(a: str, b: str) -> bool:
    return a == b or R.is_below(a, b) or R.is_below(b, a)


def _dtype(value) -> str | None:
    return value.name if isinstance(value, R.Dtype) else None


def _accumulation(analysis: _reader.Analysis) -> tuple[int, int] | None:
    """(steps, line) of a gradient-accumulation constant or command-line default."""
    for name, (value, line, _) in analysis.constants.items():
        if ACCUMULATION_NAMES.match(name) and isinstance(value, (int, float)) \
                and math.isfinite(value) and value == int(value):
            return int(value), line
    return None


class OptimizerBeforeFullyShard(_Fsdp2Rule):
    """The optimizer is built before `fully_shard` runs on the parameters it holds.

    ## What it does
    Reports an optimizer constructed (over `model.parameters()`, or over parameters the reader
    cannot trace) before a later `fully_shard` call on the same model or one of its submodules,
    in the same flow of the script (helper functions are followed); and an optimizer built after
    it over `list(model.parameters())` (or `tuple(...)`) taken before it. A generator
    (`params = model.parameters()`) is read only when the optimizer consumes it, and is left alone.

    ## Why is this bad
    `fully_shard` replaces every parameter with a sharded `DTensor`. An optimizer built earlier
    still holds the original tensors: it steps tensors the model no longer uses, so training
    silently makes no progress (Accelerate has to patch the parameter groups for this).

    ## Example
    ```python
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    for layer in model.layers:
        fully_shard(layer)
    fully_shard(model)
    ```

    ## Use instead
    ```python
    for layer in model.layers:
        fully_shard(layer)
    fully_shard(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    ```
    """

    code = "FS001"
    name = "optimizer-before-fully-shard"
    severity = "error"

    def judge(self, analysis, context):
        for flow in analysis.flows():
            for index, event in enumerate(flow):
                if event.kind != "optimizer":
                    continue
                later = [e for e in flow[index + 1:] if e.kind == "fully_shard" and e.owner == event.owner
                         and (not event.targets or any(_related(t, p) for t in e.targets for p in event.targets))]
                # (e.owner: the same local name in two calls of one builder is two objects)
                if later:
                    shard = later[-1]
                    yield (event, f"the {event.name} optimizer is built at line {event.line}, before "
                           f"fully_shard({_show(_target(shard))}) at line {shard.line}: it keeps the original "
                           "parameters, not the sharded DTensors, so its steps never reach the model",
                           "build the optimizer after the last fully_shard call, over model.parameters()")
                    continue
                # the parameters copied into a list before sharding: the list keeps the originals
                params = event.kwargs.get("params")
                copied = params.copied if isinstance(params, R.ParamsOf) else None
                if copied is None or copied[0] != event.flow:
                    continue
                between = [e for e in flow[:index] if e.kind == "fully_shard" and e.seq > copied[1]
                           and e.owner == event.owner and any(_related(t, params.path) for t in e.targets)]
                if between:
                    shard = between[-1]
                    yield (event, f"the {event.name} optimizer gets the parameters copied into a list at line "
                           f"{copied[2]}, before fully_shard({_show(_target(shard))}) at line {shard.line} replaced "
                           "them: the list keeps the original parameters, not the sharded DTensors, so its steps "
                           "never reach the model",
                           "pass model.parameters() (or list it) after the last fully_shard call")


def _base(path: str) -> str | None:
    """The module a path hangs off: model for model.layers[i], self.model for self.model.h[i]."""
    head = path.split("[", 1)[0]
    if "." not in head:
        return None
    parts = head.split(".")
    return ".".join(parts[:2]) if parts[0] == "self" and len(parts) > 2 else parts[0]


# torch.nn modules that hold no parameters (activations, dropout, pooling, reshaping)
PARAMETER_FREE = frozenset({
    "ReLU", "ReLU6", "GELU", "SiLU", "Mish", "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "LeakyReLU", "ELU", "SELU",
    "CELU", "Hardtanh", "Hardswish", "Hardsigmoid", "Softplus", "Softsign", "Tanhshrink", "GLU", "Dropout", "Dropout1d",
    "Dropout2d", "Dropout3d", "AlphaDropout", "Identity", "Flatten", "Unflatten", "MaxPool1d", "MaxPool2d",
    "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d", "Upsample", "PixelShuffle", "CrossEntropyLoss", "MSELoss", "NLLLoss"})
MODULE_BASES = frozenset({"nn.Module", "torch.nn.Module", "Module"})


def torch_nn(func: ast.expr, names) -> str | None:
    """The class name X of a call's function written `nn.X`, `torch.nn.X` or `X`, when X is one of `names`."""
    head, _, last = ast.unparse(func).rpartition(".")
    return last if last in names and head in ("", "nn", "torch.nn") else None


def self_attributes(cls: ast.ClassDef) -> dict[str, list[ast.expr]] | None:
    """The values a class defined on nn.Module binds to `self.<attr>` anywhere in its code, by attribute; None for a
    class on another base (which may bind more), or one that binds attributes in ways not read here
    (register_parameter, add_module, register_module, setattr)."""
    if not cls.bases or any(ast.unparse(b) not in MODULE_BASES for b in cls.bases):
        return None
    attributes: dict[str, list[ast.expr]] = {}
    for node in walk_nodes(cls):
        if isinstance(node, ast.Call) and (
                (isinstance(node.func, ast.Attribute)
                 and node.func.attr in ("register_parameter", "add_module", "register_module"))
                or (isinstance(node.func, ast.Name) and node.func.id == "setattr")):
            return None
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                    attributes.setdefault(target.attr, []).append(node.value)
    return attributes


PLAIN_ANNOTATIONS = frozenset({"int", "float", "bool", "str"})


def _plain_arguments(cls: ast.ClassDef) -> set[str]:
    """The parameters of the class's methods that are plain values by their annotation or default (`width: int`,
    `dropout=0.1`): an attribute bound to one holds no parameters."""
    plain: set[str] = set()
    for function in (n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        arguments = function.args
        positional = [*arguments.posonlyargs, *arguments.args]
        defaults = dict(zip([a.arg for a in positional][len(positional) - len(arguments.defaults):], arguments.defaults))
        defaults.update({a.arg: d for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d is not None})
        for argument in [*positional, *arguments.kwonlyargs]:
            annotation = ast.unparse(argument.annotation) if argument.annotation is not None else None
            default = defaults.get(argument.arg)
            if annotation in PLAIN_ANNOTATIONS or (annotation is None and isinstance(default, ast.Constant)
                                                   and default.value is not None):
                plain.add(argument.arg)
    return plain


def _only_block_parameters(text: str, base: str, target: str, line: int = 0) -> bool:
    """Whether the module `base` holds parameters only in the blocks `target` names (`model.layers[i]`): `base` is
    built in the file from one class the file defines on nn.Module (or is `self` in a method of such a class, around
    `line`), and every other attribute that class sets on itself is a torch module without parameters (an
    activation, dropout), a constant or a plain value it is given (`width: int`). Anything else (a module with
    parameters, nn.Parameter, another value handed in, register_parameter / add_module / setattr) may hold some."""
    head = target.split("[", 1)[0]
    if head.count(".") != 1 or not head.startswith(base + "."):
        return False
    block = head.split(".", 1)[1]
    tree = R._parse(text)
    if not isinstance(tree, ast.Module):
        return False
    classes = {n.name: n for n in walk_nodes(tree) if isinstance(n, ast.ClassDef)}
    if base == "self":  # the class whose method shards its own blocks
        around = [c for c in classes.values() if c.lineno <= line <= (c.end_lineno or c.lineno)]
        if not around:
            return False
        cls = max(around, key=lambda c: c.lineno)
    else:
        built = {ast.unparse(n.value.func) for n in walk_nodes(tree) if isinstance(n, ast.Assign)
                 and isinstance(n.value, ast.Call) and any(isinstance(t, ast.Name) and t.id == base
                                                           for t in n.targets)}
        if len(built) != 1 or next(iter(built)) not in classes:
            return False
        cls = classes[next(iter(built))]
    attributes = self_attributes(cls)
    if attributes is None:
        return False
    plain = _plain_arguments(cls)
    for attr, values in attributes.items():
        if attr == block:
            continue
        for value in values:
            if isinstance(value, ast.Constant) or (isinstance(value, ast.Tuple)
                                                   and all(isinstance(e, ast.Constant) for e in value.elts)):
                continue
            if isinstance(value, ast.Name) and value.id in plain:
                continue
            if isinstance(value, ast.Call) and torch_nn(value.func, PARAMETER_FREE):
                continue
            return False
    return True


class RootNotSharded(_Fsdp2Rule):
    """`fully_shard` is applied to blocks of a model but never to the model itself.

    ## What it does
    Reports `fully_shard` applied block by block (in a loop over `model.layers`, `model.modules()`,
    ...) when no call in the file shards the module the blocks belong to. Code that checks
    `isinstance(..., FSDPModule)` is left alone: it re-shards parts of a model sharded elsewhere.
    So is a model whose class, defined in the file, holds parameters only in those blocks (its
    other attributes are activations, dropout, constants or plain values it is given): nothing is
    left outside them. Where a `fully_shard` call's module is one the reader cannot name (a call's
    result, a model bound under an `if` it cannot decide), that call may be the root's: nothing
    is reported.

    ## Why is this bad
    Parameters outside every FSDP group (embeddings, the final norm, the output head) stay plain
    tensors replicated on every rank. FSDP does not reduce their gradients, so the ranks' copies
    drift apart silently.

    ## Example
    ```python
    for layer in model.layers:
        fully_shard(layer)
    optimizer = torch.optim.AdamW(model.parameters())
    ```

    ## Use instead
    ```python
    for layer in model.layers:
        fully_shard(layer)
    fully_shard(model)  # the root takes everything the blocks did not
    optimizer = torch.optim.AdamW(model.parameters())
    ```
    """

    code = "FS002"
    name = "root-not-sharded"
    severity = "warning"  # the run goes on: the unsharded parameters silently drift apart

    def judge(self, analysis, context):
        calls = analysis.of("fully_shard")
        roots, blocks = R.split_root(analysis.events)
        if not calls or roots or "FSDPModule" in analysis.text:
            return
        sharded = {t for e in calls for t in e.targets}
        if any(not e.targets or any(t.startswith("?") for t in e.targets) for e in calls):
            return  # a call on a module the reader cannot name may be the root's: "never" is not established
        for event in (e for e in calls if e.in_loop):
            for target in event.targets:
                base = _base(target)
                if base is None or base in sharded or any(a in sharded for a in R.ancestors(base)):
                    continue
                if _only_block_parameters(analysis.text, base, target, event.line):
                    continue  # the class in the file holds no parameters outside the blocks
                yield (event, f"fully_shard is applied to {_show(target)} but never to {base}: parameters outside "
                       "the blocks (embeddings, final norm, head) stay unsharded and their gradients are never "
                       "reduced across ranks",
                       f"call fully_shard({base}) after the blocks")
                return


class BlockShardedAfterRoot(_Fsdp2Rule):
    """A block is passed to `fully_shard` after its parent was.

    ## What it does
    Reports a `fully_shard` call on a submodule that runs after a `fully_shard` call on a module
    containing it, in the same flow of the script.

    ## Why is this bad
    `fully_shard` groups every parameter under the module that no earlier call claimed. Sharding
    the root first puts all parameters into one group; the later block-level call then finds
    parameters that are already sharded DTensors, and torch 2.13 raises: a `TypeError` at that
    call when the mesh has no dim names, otherwise a `RuntimeError` (mixed Tensor and DTensor)
    at the first forward. It must run bottom-up: blocks first, root last.

    ## Example
    ```python
    fully_shard(model)
    for layer in model.layers:
        fully_shard(layer)
    ```

    ## Use instead
    ```python
    for layer in model.layers:
        fully_shard(layer)
    fully_shard(model)
    ```
    """

    code = "FS003"
    name = "block-sharded-after-root"
    severity = "error"

    def judge(self, analysis, context):
        for flow in analysis.flows():
            done: dict[str, list[_reader.Event]] = {}  # target -> the calls on it so far (looked up by ancestor)
            for event in flow:
                if event.kind != "fully_shard":
                    continue
                # ordered only when both calls can run in one execution (not opposite branches) and name
                # the same object (not the locals of two calls of one builder)
                # a module the reader cannot name ("?": a call's result, an element of a list built at run
                # time) is no known object: two of them are not parent and child
                parent = next((d for t in event.targets if not t.startswith("?") for a in R.ancestors(t)
                               for d in done.get(a, ()) if d.owner == event.owner and not _alternatives(d, event)),
                              None)
                if parent is not None:
                    yield (event, f"fully_shard({_show(_target(event))}) runs after fully_shard({_show(_target(parent))}) "
                           f"at line {parent.line}, which already took these parameters into its group",
                           "apply fully_shard bottom-up: every block first, the root last")
                for target in event.targets:
                    done.setdefault(target, []).append(event)


class ReduceDtypeUnset(_Fsdp2Rule):
    """`MixedPrecisionPolicy` lowers `param_dtype` but does not set `reduce_dtype`.

    ## What it does
    Reports a `MixedPrecisionPolicy` with `param_dtype` bf16 or fp16 and no `reduce_dtype` (or
    `reduce_dtype=None`).

    ## Why is this bad
    Up to torch 2.14, an unset `reduce_dtype` falls back to `param_dtype`: gradients are
    reduce-scattered (and accumulated between syncs) in bf16, which loses precision at large
    data-parallel sizes and over accumulation steps. Newer torch follows the gradient's dtype
    instead, so the same code changes numerics between versions. torchtitan reduces in fp32.

    ## Example
    ```python
    mp_policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16)
    ```

    ## Use instead
    ```python
    mp_policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    ```
    """

    code = "FS004"
    name = "reduce-dtype-unset"
    severity = "warning"

    def judge(self, analysis, context):
        accumulation = _accumulation(analysis)
        for event in analysis.of("policy"):
            if event.name != "mp":
                continue
            dtype = _dtype(event.kwargs.get("param_dtype"))
            reduce = event.kwargs.get("reduce_dtype")
            if dtype in LOW_PRECISION and (reduce is None or reduce == R.Const(None)):
                extra = (f", and over {accumulation[0]} accumulation steps" if accumulation
                         and accumulation[0] > 1 else "")
                yield (event, f"MixedPrecisionPolicy has param_dtype={LOW_PRECISION[dtype]} but no reduce_dtype: "
                       f"torch up to 2.14 then reduces gradients in {dtype} across ranks{extra}, newer torch in the "
                       "gradient's dtype",
                       "pass reduce_dtype=torch.float32 explicitly")


class LowPrecisionGradientAccumulation(_Fsdp2Rule):
    """Gradients are reduced in bf16/fp16 while many micro-batches are accumulated.

    ## What it does
    Reports a `MixedPrecisionPolicy` whose `reduce_dtype` is bf16 or fp16 in a script that
    accumulates gradients over 4 or more micro-batches (a gradient-accumulation constant or
    command-line default).

    ## Why is this bad
    With `set_requires_gradient_sync(False)` on the non-final micro-batches, FSDP2 sums the
    unsharded gradients in `reduce_dtype`; every addition in bf16 keeps only 8 significant bits,
    so small contributions vanish as the sum grows. Without it, each micro-batch is still
    reduce-scattered in bf16.

    ## Example
    ```python
    gradient_accumulation_steps = 16
    mp_policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.bfloat16)
    ```

    ## Use instead
    ```python
    gradient_accumulation_steps = 16
    mp_policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    ```
    """

    code = "FS005"
    name = "low-precision-gradient-accumulation"
    severity = "warning"

    def judge(self, analysis, context):
        accumulation = _accumulation(analysis)
        if accumulation is None or accumulation[0] < ACCUMULATION_THRESHOLD:
            return
        for event in analysis.of("policy"):
            reduce = _dtype(event.kwargs.get("reduce_dtype"))
            if event.name == "mp" and reduce in LOW_PRECISION:
                yield (event, f"reduce_dtype is {LOW_PRECISION[reduce]} while gradients accumulate over "
                       f"{accumulation[0]} micro-batches (line {accumulation[1]}): the sum keeps only {reduce} "
                       "precision, expected torch.float32",
                       "pass reduce_dtype=torch.float32")


def _shard_size(event: _reader.Event, context: Context) -> int | None:
    mesh = event.kwargs.get("mesh")
    if isinstance(mesh, R.Mesh) and mesh.dims:
        return mesh.dims[-1][1]
    if mesh is None:
        return context.world_size
    return None


class ReshardAfterForwardNotDivisor(_Fsdp2Rule):
    """An integer `reshard_after_forward` does not divide the shard group.

    ## What it does
    Reports `fully_shard(..., reshard_after_forward=N)` with an integer N when the shard group
    size S is known (the last dim of the mesh, or `--world-size` for the default mesh) and N is
    not a divisor of S. N equal to 1 or to S is reported as a note: torch treats them as False
    and True.

    ## Why is this bad
    After forward, FSDP2 reshards the parameters to groups of N ranks (like ZeRO++ hpZ). N must
    divide S: otherwise `fully_shard` raises `ValueError: If passing reshard_after_forward as an
    int, it should be a factor of S`.

    ## Example
    ```python
    mesh = init_device_mesh("cuda", (16,), mesh_dim_names=("shard",))
    fully_shard(layer, mesh=mesh, reshard_after_forward=6)
    ```

    ## Use instead
    ```python
    mesh = init_device_mesh("cuda", (16,), mesh_dim_names=("shard",))
    fully_shard(layer, mesh=mesh, reshard_after_forward=8)  # GPUs per node
    ```
    """

    code = "FS006"
    name = "reshard-after-forward-not-divisor"
    severity = "error"

    def judge(self, analysis, context):
        for event in analysis.of("fully_shard"):
            value = event.value("reshard_after_forward")
            if not isinstance(value, int) or isinstance(value, bool):
                continue
            size = _shard_size(event, context)
            if value < 1 or (size is not None and (value > size or size % value)):
                divisors = [d for d in range(2, min(size, 100_000)) if size % d == 0] if size else []
                within = f"a factor of the {size} ranks of the shard group" if size else "at least 1"
                yield (event, f"reshard_after_forward is {value} but must be {within}: fully_shard raises "
                       "ValueError", f"use one of {divisors}" if divisors else "use True or False")
            elif value == 1:
                yield (event, "reshard_after_forward=1 is treated as False: parameters stay gathered after forward",
                       "write reshard_after_forward=False", "info")
            elif size is not None and value == size:
                yield (event, f"reshard_after_forward={value} is the whole shard group, which torch treats as True",
                       "write reshard_after_forward=True", "info")


FSDP1_ARGUMENTS = {
    "sharding_strategy": "the mesh and reshard_after_forward (FULL_SHARD: True, SHARD_GRAD_OP: False, HYBRID_SHARD: "
                         "a 2-D (replicate, shard) mesh)",
    "mixed_precision": "mp_policy=MixedPrecisionPolicy(param_dtype=..., reduce_dtype=...)",
    "cpu_offload": "offload_policy=CPUOffloadPolicy()",
    "auto_wrap_policy": "call fully_shard on each block, then on the root",
    "device_id": "nothing: the mesh's device is used",
    "sync_module_states": "set_model_state_dict(..., StateDictOptions(full_state_dict=True, broadcast_from_rank0=True))",
    "process_group": "mesh=init_device_mesh(...)",
    "device_mesh": "mesh=",
    "use_orig_params": "nothing: FSDP2 always keeps the original parameters",
    "limit_all_gathers": "nothing",
    "forward_prefetch": "set_modules_to_forward_prefetch([...])",
    "backward_prefetch": "nothing (or set_modules_to_backward_prefetch([...]))",
    "ignored_modules": "ignored_params={...}",
}


class Fsdp1Wrapper(_Fsdp2Rule):
    """`FullyShardedDataParallel` (FSDP1) is used.

    ## What it does
    Reports every `FullyShardedDataParallel(...)` call and lists where each of its arguments goes
    in FSDP2. A call in the other branch of an `if` from a `fully_shard` call (a switch), or inside
    a function the file marks `@deprecated`, is not reported; in a file that also calls
    `fully_shard` in another function (a library offering both, picked by the run's config) the
    finding is an info that says which wrapper a run uses is decided elsewhere.

    ## Why is this bad
    FSDP1 is deprecated in the PyTorch documentation since mid-2025 (PyTorch about 2.7-2.8),
    though still shipped in 2.14. FSDP2 (`fully_shard`) shards per parameter (DTensor), mixes
    frozen and trainable parameters, needs no flat-parameter state dict handling and is where
    development happens.

    ## Example
    ```python
    model = FSDP(model, sharding_strategy=ShardingStrategy.FULL_SHARD,
                 auto_wrap_policy=transformer_auto_wrap_policy)
    ```

    ## Use instead
    ```python
    for layer in model.layers:
        fully_shard(layer)
    fully_shard(model)
    ```
    """

    code = "FS007"
    name = "fsdp1-wrapper"
    severity = "warning"

    def judge(self, analysis, context):
        shards = analysis.of("fully_shard")
        deprecated = _deprecated_spans(analysis.text)
        for event in analysis.of("fsdp1"):
            if any(_alternatives(event, other) for other in shards):
                continue  # `if fsdp_version == 1: FSDP(...) else: fully_shard(...)`: a switch, not a leftover
            if not event.file and any(start <= event.line <= end for start, end in deprecated):
                continue  # the file's own @deprecated already says the FSDP1 path is on its way out
            moves = [f"{name} -> {FSDP1_ARGUMENTS[name]}" for name in event.given if name in FSDP1_ARGUMENTS]
            mapping = ("; ".join(sorted(moves))) if moves else "call fully_shard on each block, then on the root"
            message = ("FullyShardedDataParallel is FSDP1, deprecated in the PyTorch docs since mid-2025 "
                       "(about 2.7-2.8) and still shipped in 2.14")
            other, unknown = offers_both(event, shards)
            if other is not None:  # the file offers both wrappers: the run's own config picks one
                yield (event, f"{message}; this file also calls fully_shard (line {other.line}) in another "
                       "function", f"use fully_shard (torch.distributed.fsdp): {mapping}", unknown)
                continue
            yield (event, message, f"use fully_shard (torch.distributed.fsdp): {mapping}")


def offers_both(event, shards) -> tuple:
    """(the fully_shard call, the unknown premise) where the file calls fully_shard in another function than
    the FSDP1 wrapper `event`: the file offers both, and which one a run uses is chosen outside it; else
    (None, None)."""
    other = next((s for s in shards if s.flow != event.flow and not s.file), None)
    if other is None:
        return None, None
    from shardshift.context import UnknownContext

    return other, UnknownContext("program", "the file offers both FSDP1 and fully_shard; which one a run uses is "
                                 "chosen by code or configuration outside it", "check this file together with the "
                                 "entry script and the config that pick the wrapper")


def _deprecated_spans(text: str) -> list[tuple[int, int]]:
    """Line spans of the functions and classes the file marks `@deprecated(...)` (typing_extensions,
    warnings (3.13), the `deprecated` package)."""
    import ast

    from shardshift.formats.fsdp2.reader import _parse

    tree = _parse(text)  # the reader's shared tree (parsed once per text)
    if not isinstance(tree, ast.Module):
        return []
    spans = []
    for node in walk_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for decorator in node.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
                if name == "deprecated":
                    spans.append((node.lineno, node.end_lineno or node.lineno))
    return spans


def _alternatives(a: _reader.Event, b: _reader.Event) -> bool:
    """The two calls sit in opposite branches of one undecided `if`."""
    return any(x.key == y.key and x.positive != y.positive for x in a.conds for y in b.conds)


def _cpu_only(analysis: _reader.Analysis) -> _reader.Event | None:
    """The event that makes the script CPU-only, when nothing in it mentions an accelerator."""
    if re.search(r"cuda|nccl|accelerator|xpu|hpu|mps|npu|LOCAL_RANK", analysis.text):
        return None
    for event in analysis.of("mesh", "process_group"):
        device = event.value("device_type") if event.kind == "mesh" else event.value("backend")
        if device in ("cpu", "gloo"):
            return event
    return None


class CpuOffloadPinnedWithoutAccelerator(_Fsdp2Rule):
    """`CPUOffloadPolicy()` pins memory in code that runs without an accelerator.

    ## What it does
    Reports `CPUOffloadPolicy()` with the default `pin_memory=True` (or an explicit True) in a
    script whose mesh is on "cpu" or whose process group is gloo, and that mentions no
    accelerator at all.

    ## Why is this bad
    Pinned memory needs an accelerator: on a CPU-only machine the first use fails with
    "Cannot access accelerator device when none is available".

    ## Example
    ```python
    mesh = init_device_mesh("cpu", (2,))
    fully_shard(model, mesh=mesh, offload_policy=CPUOffloadPolicy())
    ```

    ## Use instead
    ```python
    mesh = init_device_mesh("cpu", (2,))
    fully_shard(model, mesh=mesh, offload_policy=CPUOffloadPolicy(pin_memory=False))
    ```
    """

    code = "FS008"
    name = "cpu-offload-pinned-without-accelerator"
    severity = "error"

    def judge(self, analysis, context):
        cpu = _cpu_only(analysis)
        if cpu is None:
            return
        for event in analysis.of("policy"):
            if event.name == "cpu_offload" and event.value("pin_memory", True) is True:
                what = "init_device_mesh on \"cpu\"" if cpu.kind == "mesh" else "a gloo process group"
                yield (event, f"CPUOffloadPolicy pins host memory (pin_memory=True), but this code runs without an "
                       f"accelerator ({what}, line {cpu.line}): it fails with \"Cannot access accelerator device "
                       "when none is available\"",
                       "pass CPUOffloadPolicy(pin_memory=False), or pin_memory=torch.accelerator.is_available()")


def _mesh_of(event: _reader.Event) -> _reader.Mesh | None:
    mesh = event.kwargs.get("mesh")
    return mesh if isinstance(mesh, R.Mesh) else None


def _meshes_passed(analysis: _reader.Analysis) -> Iterable[tuple[_reader.Event, _reader.Mesh]]:
    """Each distinct mesh given to fully_shard, with the first call that gets it."""
    seen: set[tuple] = set()
    for event in analysis.of("fully_shard"):
        mesh = _mesh_of(event)
        if mesh is not None and (mesh.line, mesh.column, mesh.dims) not in seen:
            seen.add((mesh.line, mesh.column, mesh.dims))
            yield event, mesh


class HsdpMeshDimsSwapped(_Fsdp2Rule):
    """The 2-D mesh passed to `fully_shard` names its dims in the wrong order.

    ## What it does
    Reports `fully_shard` with a 2-D mesh whose first dim is named like a shard dim or whose
    second dim is named like a replicate dim.

    ## Why is this bad
    `fully_shard` picks the roles of a 2-D mesh by position: dim 0 replicates, dim 1 shards. The
    names are not used. A `("shard", "replicate")` mesh therefore shards across what the code
    calls replicas (usually across nodes) and replicates within a node: slower and more memory
    than intended, with no error.

    ## Example
    ```python
    mesh = init_device_mesh("cuda", (8, 4), mesh_dim_names=("shard", "replicate"))
    fully_shard(model, mesh=mesh)
    ```

    ## Use instead
    ```python
    mesh = init_device_mesh("cuda", (4, 8), mesh_dim_names=("replicate", "shard"))
    fully_shard(model, mesh=mesh)
    ```
    """

    code = "FS009"
    name = "hsdp-mesh-dims-swapped"
    severity = "warning"

    def judge(self, analysis, context):
        for event, mesh in _meshes_passed(analysis):
            if len(mesh.dims) != 2 or "dp_mesh_dims" in event.given:  # with dp_mesh_dims the names pick the roles
                continue
            first, second = ((name or "").lower() for name, _ in mesh.dims)
            if ("shard" in first and "replicate" not in first) or "replicate" in second:
                names = tuple(name for name, _ in mesh.dims)
                yield (event, f"the 2-D mesh passed to fully_shard has dims {names}: fully_shard replicates over "
                       "dim 0 and shards over dim 1 by position, whatever their names",
                       "create the mesh with its dims in the order (replicate, shard); a slice such as "
                       "mesh[\"replicate\", \"shard\"] cannot reorder them (torch raises KeyError)")


class MeshTooManyDims(_Fsdp2Rule):
    """`fully_shard` gets a mesh with three or more dims.

    ## What it does
    Reports `fully_shard` called with a mesh of 3+ dims (for example the whole
    `("dp", "cp", "tp")` mesh) and without `dp_mesh_dims`.

    ## Why is this bad
    `fully_shard` accepts a 1-D mesh (FSDP) or a 2-D mesh (HSDP) and raises `ValueError:
    fully_shard expects a 1D or 2D DeviceMesh` for anything else.

    ## Example
    ```python
    mesh = init_device_mesh("cuda", (2, 2, 2), mesh_dim_names=("dp", "cp", "tp"))
    fully_shard(model, mesh=mesh)
    ```

    ## Use instead
    ```python
    mesh = init_device_mesh("cuda", (2, 2, 2), mesh_dim_names=("dp", "cp", "tp"))
    fully_shard(model, mesh=mesh["dp"])
    ```
    """

    code = "FS010"
    name = "mesh-too-many-dims"
    severity = "error"

    def judge(self, analysis, context):
        for event, mesh in _meshes_passed(analysis):
            if len(mesh.dims) >= 3 and "dp_mesh_dims" not in event.given:
                names = tuple(name for name, _ in mesh.dims)
                yield (event, f"fully_shard gets a {len(mesh.dims)}-D mesh {names}, but it takes a 1-D or 2-D mesh "
                       "and raises ValueError",
                       "pass the data-parallel sub-mesh, e.g. mesh[\"dp\"] (or dp_mesh_dims= on torch 2.14+)")


class HsdpMeshWithoutNames(_Fsdp2Rule):
    """A 2-D mesh without `mesh_dim_names` is passed to `fully_shard`.

    ## What it does
    Reports `fully_shard` with a 2-D mesh created by `init_device_mesh` without
    `mesh_dim_names`.

    ## Why is this bad
    `fully_shard` requires named dims for hybrid sharding and fails with `AssertionError: Please
    init the 2D mesh for HSDP with mesh_dim_names specified`.

    ## Example
    ```python
    mesh = init_device_mesh("cuda", (2, 8))
    fully_shard(model, mesh=mesh)
    ```

    ## Use instead
    ```python
    mesh = init_device_mesh("cuda", (2, 8), mesh_dim_names=("replicate", "shard"))
    fully_shard(model, mesh=mesh)
    ```
    """

    code = "FS011"
    name = "hsdp-mesh-without-names"
    severity = "error"

    def judge(self, analysis, context):
        for event, mesh in _meshes_passed(analysis):
            if len(mesh.dims) == 2 and not mesh.names_given:
                yield (event, f"the 2-D mesh from line {mesh.line} has no mesh_dim_names, which fully_shard requires "
                       "for hybrid sharding (AssertionError)",
                       "create it with mesh_dim_names=(\"replicate\", \"shard\")")


class ReshardAfterForwardTrueOnRoot(_Fsdp2Rule):
    """The root is sharded with an explicit `reshard_after_forward=True`.

    ## What it does
    Reports the root module's `fully_shard` call when it passes `reshard_after_forward=True`; when
    the setup pins torch 2.7 or older (`requirements.txt`, `--torch-version`), any explicit value on
    the root, which those releases ignore.

    ## Why is this bad
    Since torch 2.8 the root's default (None) keeps its parameters after forward, because
    backward needs them first. An explicit True frees them and gathers them again at the very
    start of backward: one all-gather more per step for nothing. Up to torch 2.7 the value was
    ignored on the root.

    ## Example
    ```python
    for layer in model.layers:
        fully_shard(layer, reshard_after_forward=True)
    fully_shard(model, reshard_after_forward=True)
    ```

    ## Use instead
    ```python
    for layer in model.layers:
        fully_shard(layer, reshard_after_forward=True)
    fully_shard(model)
    ```
    """

    code = "FS012"
    name = "reshard-after-forward-true-on-root"
    severity = "info"

    def check(self, document, context):
        self._release = context.release("torch", document.path)  # the torch the setup pins, if any
        yield from super().check(document, context)

    def judge(self, analysis, context):
        roots, blocks = R.split_root(analysis.events)
        if not blocks:
            return
        release = getattr(self, "_release", None)
        if release is not None and release.version is not None and tuple(release.version[:2]) < (2, 8):
            for event in roots:  # up to 2.7 the root's value was overridden at the first forward
                value = event.value("reshard_after_forward")
                if isinstance(value, bool):
                    yield (event, f"fully_shard({_show(_target(event))}) on the root passes reshard_after_forward="
                           f"{value}, which {release.text()} ignores: up to torch 2.7 the root keeps its parameters "
                           "after forward whatever the value (2.8 made an explicit value count)",
                           "leave reshard_after_forward at its default on the root")
            return
        for event in roots:
            if event.value("reshard_after_forward") is True:
                yield (event, f"fully_shard({_show(_target(event))}) on the root passes reshard_after_forward=True: "
                       "torch 2.8+ then gathers the root's parameters again at the start of backward",
                       "leave reshard_after_forward at its default on the root")


class ShardedGradScalerWithFullyShard(_Fsdp2Rule):
    """`ShardedGradScaler` (for FSDP1) is used with `fully_shard`.

    ## What it does
    Reports `ShardedGradScaler(...)` in a file that calls `fully_shard`.

    ## Why is this bad
    Nothing fails: `ShardedGradScaler` was written for FSDP1 (it all-reduces the inf check over
    its own process group, and handles CPU-offloaded gradients), and it works on FSDP2's DTensor
    gradients too. But `torch.amp.GradScaler` handles DTensor gradients directly, as torch's own
    FSDP2 tests, torchtitan and Accelerate use it, so this is an info: the FSDP1-era class in
    FSDP2 code.

    ## Example
    ```python
    scaler = ShardedGradScaler()
    ```

    ## Use instead
    ```python
    scaler = torch.amp.GradScaler("cuda")
    ```
    """

    code = "FS013"
    name = "sharded-grad-scaler-with-fully-shard"
    severity = "info"  # it works on DTensor gradients: unusual, not wrong

    def judge(self, analysis, context):
        if not analysis.of("fully_shard"):
            return
        for event in analysis.of("sharded_grad_scaler"):
            yield (event, "ShardedGradScaler is FSDP1's loss scaler; it works on fully_shard's DTensor gradients, but "
                   "torch.amp.GradScaler handles them directly (as torch's own FSDP2 tests use it)",
                   "use torch.amp.GradScaler(device_type)")


class Fp16WithoutGradScaler(_Fsdp2Rule):
    """fp16 compute without a loss scaler.

    ## What it does
    Reports a `MixedPrecisionPolicy(param_dtype=torch.float16)` in a file that creates no
    `GradScaler`.

    ## Why is this bad
    fp16 has a narrow exponent range: without loss scaling, small gradients underflow to zero
    and training stalls or diverges without an error. (bf16 needs no scaler.)

    ## Example
    ```python
    fully_shard(model, mp_policy=MixedPrecisionPolicy(param_dtype=torch.float16, reduce_dtype=torch.float32))
    ```

    ## Use instead
    ```python
    fully_shard(model, mp_policy=MixedPrecisionPolicy(param_dtype=torch.float16, reduce_dtype=torch.float32))
    scaler = torch.amp.GradScaler("cuda")  # scaler.scale(loss).backward(); scaler.step(opt); scaler.update()
    ```
    """

    code = "FS014"
    name = "fp16-without-grad-scaler"
    severity = "warning"

    def judge(self, analysis, context):
        if analysis.of("grad_scaler", "sharded_grad_scaler"):
            return
        for event in analysis.of("policy"):
            if event.name == "mp" and _dtype(event.kwargs.get("param_dtype")) == "fp16":
                yield (event, "param_dtype is torch.float16 but no GradScaler is created: small gradients underflow "
                       "to zero in fp16",
                       "scale the loss with torch.amp.GradScaler, or use torch.bfloat16")


class ForwardBeforeOptimizer(_Fsdp2Rule):
    """The sharded model runs forward before the optimizer is built.

    ## What it does
    Reports a call of a `fully_shard`-ed module (`model(x)`) between the `fully_shard` call and
    the construction of the optimizer over its parameters, in the same flow.

    ## Why is this bad
    After the first forward the root module keeps its unsharded parameters registered. An
    optimizer built then captures those tensors instead of the sharded DTensors, and some
    parameters silently stop updating (pytorch #149205, #131965).

    ## Example
    ```python
    fully_shard(model)
    model(warmup_batch)
    optimizer = torch.optim.AdamW(model.parameters())
    ```

    ## Use instead
    ```python
    fully_shard(model)
    optimizer = torch.optim.AdamW(model.parameters())
    model(warmup_batch)
    ```
    """

    code = "FS015"
    name = "forward-before-optimizer"
    severity = "error"

    def judge(self, analysis, context):
        for flow in analysis.flows():
            sharded: list[str] = []
            pending: list[_reader.Event] = []
            for event in flow:
                if event.kind == "fully_shard":
                    sharded.extend(event.targets)
                elif event.kind == "call" and any(t in sharded for t in event.targets):
                    pending.append(event)
                elif event.kind == "optimizer" and pending:
                    for call in pending:
                        if not event.targets or any(_related(t, p) for t in call.targets for p in event.targets):
                            yield (call, f"{_show(call.targets[0])}(...) runs forward at line {call.line}, after "
                                   f"fully_shard and before the {event.name} optimizer is built at line {event.line}: "
                                   "the optimizer then captures unsharded parameters and some stop updating",
                                   "build the optimizer right after fully_shard, before any forward")
                    pending = []


class ForwardMethodCalledDirectly(_Fsdp2Rule):
    """`.forward()` or `.generate()` is called on a sharded module.

    ## What it does
    Reports `model.forward(...)` on a module passed to `fully_shard` (or one of its blocks), and
    `model.generate(...)` when `register_fsdp_forward_method(model, "generate")` is not called.

    ## Why is this bad
    FSDP2 gathers parameters in hooks that run around `module.__call__`. Calling `forward` or
    another method directly skips them: the computation sees sharded DTensors and fails, or
    hangs waiting for other ranks.

    ## Example
    ```python
    fully_shard(model)
    out = model.forward(batch)
    ```

    ## Use instead
    ```python
    fully_shard(model)
    out = model(batch)
    # for generate: register_fsdp_forward_method(model, "generate") after fully_shard
    ```
    """

    code = "FS016"
    name = "forward-method-called-directly"
    severity = "warning"

    def judge(self, analysis, context):
        sharded = {t for e in analysis.of("fully_shard") for t in e.targets}
        registered = {(t, e.value("method_name")) for e in analysis.of("register_forward_method") for t in e.targets}
        for event in analysis.of("direct_forward"):
            target = event.targets[0] if event.targets else "?"
            if target not in sharded:
                continue
            if event.name == "generate" and (target, "generate") in registered:
                continue
            fix = (f"call register_fsdp_forward_method({_show(target)}, \"generate\") after fully_shard"
                   if event.name == "generate" else f"call {_show(target)}(...) instead of .forward(...)")
            yield (event, f"{_show(target)}.{event.name}(...) skips the FSDP hooks that gather the parameters of "
                   "this sharded module", fix)


class CheckpointingAfterFullyShard(_Fsdp2Rule):
    """Activation checkpointing is applied after `fully_shard`.

    ## What it does
    Reports `checkpoint_wrapper` / `apply_activation_checkpointing` on a module that an earlier
    `fully_shard` call (in the same flow) already sharded, or whose parent it sharded.

    ## Why is this bad
    Checkpointing belongs inside the FSDP unit: wrap each block first, then `fully_shard` it, so
    that the recomputation in backward reuses the one all-gather. Applied afterwards, the
    checkpoint region straddles the FSDP hooks and parameters are gathered again (redundant
    all-gathers, pytorch #175406).

    ## Example
    ```python
    for layer in model.layers:
        fully_shard(layer)
    apply_activation_checkpointing(model)
    ```

    ## Use instead
    ```python
    apply_activation_checkpointing(model)
    for layer in model.layers:
        fully_shard(layer)
    ```
    """

    code = "FS017"
    name = "checkpointing-after-fully-shard"
    severity = "warning"

    def judge(self, analysis, context):
        for flow in analysis.flows():
            sharded: list[_reader.Event] = []
            for event in flow:
                if event.kind == "fully_shard":
                    sharded.append(event)
                elif event.kind == "checkpoint" and sharded:
                    done = next((s for s in sharded for t in event.targets for p in s.targets if _related(t, p)), None)
                    if done is not None:
                        yield (event, f"{event.name}({_show(_target(event))}) runs after fully_shard("
                               f"{_show(_target(done))}) at line {done.line}: recomputation then gathers the "
                               "parameters again",
                               "apply activation checkpointing to the blocks before fully_shard")


class SetReshardAfterForwardNotBool(_Fsdp2Rule):
    """`set_reshard_after_forward` is given a number.

    ## What it does
    Reports `module.set_reshard_after_forward(N)` with an integer (or any non-bool constant).

    ## Why is this bad
    Unlike `fully_shard(reshard_after_forward=...)`, the runtime setter accepts only a bool and
    raises `ValueError` for an int.

    ## Example
    ```python
    model.set_reshard_after_forward(8)
    ```

    ## Use instead
    ```python
    fully_shard(layer, reshard_after_forward=8)  # the int form, at wrapping time
    model.set_reshard_after_forward(True)
    ```
    """

    code = "FS018"
    name = "set-reshard-after-forward-not-bool"
    severity = "error"

    def judge(self, analysis, context):
        for event in analysis.of("set_reshard_after_forward"):
            value = event.kwargs.get("value")
            if isinstance(value, R.Const) and not isinstance(value.value, bool):
                yield (event, f"set_reshard_after_forward({value.value!r}) raises ValueError: it accepts only True or "
                       "False", "pass a bool; an int group size goes to fully_shard(reshard_after_forward=N)")


class MeshSizeMismatch(_Fsdp2Rule):
    """The device mesh does not cover the world size given on the command line.

    ## What it does
    With `--world-size` (or `--nodes` and `--gpus-per-node`), reports an `init_device_mesh`
    whose literal shape multiplies to more processes than the job has; and one that multiplies to
    fewer, where `fully_shard` gets that mesh (or a slice of it): an error when both calls run on
    every rank, an info when either is under a condition the reader cannot decide (a script may
    shard only on the ranks in the mesh). A smaller mesh used for nothing else is left alone.

    ## Why is this bad
    `DeviceMesh` refuses a mesh bigger than the default process group: torch 2.13 raises
    `RuntimeError: Mesh should not be bigger than default world size 32, but found 64 ranks!`
    in `init_device_mesh`, on every rank, at start-up on the real cluster. A smaller mesh is
    built on every rank from ranks 0 to its size minus one; on a rank outside it `fully_shard`
    finds no process group for the mesh dim and raises `IndexError: list index out of range`
    (`DeviceMesh.get_group`, confirmed with gloo on four CPU processes).

    ## Example
    ```python
    mesh = init_device_mesh("cuda", (8, 8), mesh_dim_names=("replicate", "shard"))  # run with 32 GPUs
    ```

    ## Use instead
    ```python
    mesh = init_device_mesh("cuda", (4, 8), mesh_dim_names=("replicate", "shard"))
    ```
    """

    code = "FS019"
    name = "mesh-size-mismatch"
    severity = "error"

    def judge(self, analysis, context):
        if context.world_size is None:
            return
        for event in analysis.of("mesh"):
            mesh = event.kwargs.get("mesh")
            if isinstance(mesh, R.Mesh) and mesh.size is not None and min(size for _, size in mesh.dims) <= 0:
                continue  # a dim of size 0 or less: torch fails laying the mesh out, before any size check (FS029)
            if isinstance(mesh, R.Mesh) and mesh.root and mesh.size is not None and mesh.size < context.world_size:
                yield from self._smaller(analysis, event, mesh, context.world_size)
            if isinstance(mesh, R.Mesh) and mesh.size is not None and mesh.size > context.world_size:
                shape = tuple(size for _, size in mesh.dims)
                yield (event, f"init_device_mesh shape {shape} covers {mesh.size} processes but the job has "
                       f"{context.world_size}: torch raises RuntimeError (Mesh should not be bigger than default "
                       f"world size {context.world_size}, but found {mesh.size} ranks!)",
                       f"make the shape multiply to at most {context.world_size} (to {context.world_size} to use every "
                       "process), or compute it from dist.get_world_size()")


    @staticmethod
    def _smaller(analysis, event, mesh, world: int) -> Iterable[tuple]:
        """A mesh of fewer ranks than the world that fully_shard gets: ranks mesh.size .. world - 1 are outside."""
        from shardshift.context import UnknownContext

        sharded = [e for e in analysis.of("fully_shard") if isinstance(m := e.kwargs.get("mesh"), R.Mesh)
                   and (m is mesh or m.origin is mesh)]
        if not sharded:
            return
        shape = tuple(size for _, size in mesh.dims)
        conds = event.conds or sharded[0].conds
        unknown = UnknownContext("program", "whether every rank runs init_device_mesh and fully_shard here: a "
                                 "condition the reader cannot decide is around them (a script may shard only on the "
                                 "ranks of the mesh)", "check that the ranks outside the mesh never reach fully_shard"
                                 ) if conds else None
        yield (event, f"init_device_mesh shape {shape} covers {mesh.size} processes but the job has {world}, and "
               f"fully_shard (line {sharded[0].line}) gets this mesh: ranks {mesh.size} to {world - 1} are not in it, "
               "and on each of them fully_shard raises IndexError (DeviceMesh.get_group finds no process group for "
               "the mesh dim)", f"make the shape multiply to {world}, or compute it from dist.get_world_size()",
               unknown)


class DoubleActivationCheckpointing(_Fsdp2Rule):
    """Hugging Face gradient checkpointing and checkpoint wrappers are both on.

    ## What it does
    Reports `model.gradient_checkpointing_enable()` in a file that also wraps modules with
    `checkpoint_wrapper` / `apply_activation_checkpointing`.

    ## Why is this bad
    Each block is then checkpointed twice (nested regions): activations are recomputed more
    than once, and the inner regions straddle FSDP units, adding all-gathers. The Transformers
    Trainer refuses this combination.

    ## Example
    ```python
    model.gradient_checkpointing_enable()
    apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, LlamaDecoderLayer))
    ```

    ## Use instead
    ```python
    apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, LlamaDecoderLayer))
    ```
    """

    code = "FS020"
    name = "double-activation-checkpointing"
    severity = "warning"

    def judge(self, analysis, context):
        wrappers = analysis.of("checkpoint")
        if not wrappers:
            return
        for event in analysis.of("hf_checkpointing"):
            yield (event, f"gradient_checkpointing_enable() and {wrappers[0].name} (line {wrappers[0].line}) both "
                   "checkpoint the blocks: activations are recomputed twice",
                   "keep one of them, preferably the wrapper applied before fully_shard")
