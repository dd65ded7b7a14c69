"""FSDP2 rules read from the order of statements in one function body: what `fully_shard` and its
first forward refuse after how the script built, sharded and moved one module object.

A body is read in source order (nested functions and classes are bodies of their own). A statement
under an `if` (or an `except`, a `match` case) the reader cannot decide is on a path of its own:
two statements on the two sides of one `if` never meet, and a step that runs only under a
condition the rest does not share makes the finding an info that names the condition. A name
bound again between two steps is another object; a module handed to code the rule does not know
(`init_model(model)`, `model.setup()`) may have been changed there, which also makes an info.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Iterator

from shardshift.rules.fsdp2 import catalog as _catalog
from shardshift.rules.fsdp2 import rules as _base
from shardshift.user_code import walk as walk_nodes

R = _base.R
_head = _catalog._head
_name = _catalog._name


@dataclass(frozen=True)
class _Cond:
    """One side of an undecided branch: the test as written (two `if`s with the same test are one
    decision: `if args.meta:` around the build and again around `to_empty`), the side, and where."""

    key: str
    positive: bool
    text: str
    line: int = field(compare=False)

    def describe(self) -> str:
        return f"`{self.text}` (line {self.line})" if self.positive else f"not `{self.text}` (line {self.line})"


@dataclass(frozen=True)
class _Step:
    node: ast.AST
    conds: tuple[_Cond, ...]

    @property
    def line(self) -> int:
        return getattr(self.node, "lineno", 0)

    @property
    def column(self) -> int:
        return getattr(self.node, "col_offset", 0) + 1


def _main_guard(test: ast.expr) -> bool:
    """`if __name__ == "__main__":`: a script runs as the main module."""
    return isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__" \
        and len(test.comparators) == 1 and isinstance(test.comparators[0], ast.Constant) \
        and test.comparators[0].value == "__main__"


def _nodes(expressions: list, conds: tuple[_Cond, ...]) -> Iterator[_Step]:
    for expression in expressions:
        if expression is not None:
            yield from (_Step(n, conds) for n in walk_nodes(expression))


def _steps(body: list[ast.stmt], conds: tuple[_Cond, ...] = (), loop: frozenset[str] = frozenset()) -> Iterator[_Step]:
    """Every node of `body` with the undecided conditions it runs under (not in nested functions,
    classes or lambdas' bodies). Loop bodies count as running (a training loop runs), and an `if` on
    a loop's element picks elements (`if isinstance(layer, Block):`): it is no switch."""
    for statement in body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(statement, ast.If):
            yield from _nodes([statement.test], conds)
            if _main_guard(statement.test) or {n.id for n in walk_nodes(statement.test) if isinstance(n, ast.Name)} & loop:
                yield from _steps(statement.body, conds, loop)
                yield from _steps(statement.orelse, conds, loop)
                continue
            text = ast.unparse(statement.test)
            yield from _steps(statement.body, (*conds, _Cond(text, True, text, statement.lineno)), loop)
            yield from _steps(statement.orelse, (*conds, _Cond(text, False, text, statement.lineno)), loop)
        elif isinstance(statement, (ast.For, ast.AsyncFor)):
            yield _Step(statement, conds)
            yield from _nodes([statement.target, statement.iter], conds)
            bound = loop | {n.id for n in walk_nodes(statement.target) if isinstance(n, ast.Name)}
            yield from _steps(statement.body, conds, bound)
            yield from _steps(statement.orelse, conds, loop)
        elif isinstance(statement, ast.While):
            yield from _nodes([statement.test], conds)
            yield from _steps(statement.body, conds, loop)
            yield from _steps(statement.orelse, conds, loop)
        elif isinstance(statement, (ast.With, ast.AsyncWith)):
            yield _Step(statement, conds)
            yield from _nodes([n for item in statement.items for n in (item.context_expr, item.optional_vars)], conds)
            yield from _steps(statement.body, conds, loop)
        elif isinstance(statement, ast.Try) or type(statement).__name__ == "TryStar":
            yield from _steps(statement.body, conds, loop)
            for handler in statement.handlers:
                text = "except " + ast.unparse(handler.type) if handler.type is not None else "except"
                yield from _steps(handler.body, (*conds, _Cond(f"{text} (line {handler.lineno})", True, text, handler.lineno)), loop)
            yield from _steps(statement.orelse, conds, loop)
            yield from _steps(statement.finalbody, conds, loop)
        elif isinstance(statement, ast.Match):
            yield from _nodes([statement.subject], conds)
            for case in statement.cases:
                text = f"{ast.unparse(statement.subject)} matches {ast.unparse(case.pattern)}"
                yield from _steps(case.body, (*conds, _Cond(text, True, text, case.pattern.lineno)), loop)
        else:
            yield from (_Step(n, conds) for n in walk_nodes(statement) if not _in_lambda(n, statement))


def _in_lambda(node: ast.AST, statement: ast.stmt) -> bool:
    lambdas = statement.__dict__.get("_shardshift_lambdas")
    if lambdas is None:
        lambdas = {id(inner) for n in walk_nodes(statement) if isinstance(n, ast.Lambda)
                   for inner in walk_nodes(n.body)}
        statement._shardshift_lambdas = lambdas
    return id(node) in lambdas


def _ordered(body: list[ast.stmt]) -> list[_Step]:
    return sorted(_steps(body), key=lambda s: (s.line, s.column))


def _bodies(tree: ast.Module) -> list[list[ast.stmt]]:
    return [tree.body, *(n.body for n in walk_nodes(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))]


def _exclusive(a: tuple[_Cond, ...], b: tuple[_Cond, ...]) -> bool:
    """The two never run in one execution: they sit on the two sides of one branch."""
    sides = {c.key: c.positive for c in a}
    return any(c.key in sides and sides[c.key] != c.positive for c in b)


def _extra(step: _Step, base: tuple[_Cond, ...]) -> tuple[_Cond, ...]:
    """The conditions `step` runs under that `base` does not hold."""
    return tuple(c for c in step.conds if c not in base)


# calls that return the module they are given (`model = fully_shard(model)`), or a wrapper whose forward
# runs it (`model = torch.compile(model)`)
SAME_MODULE = frozenset({"fully_shard", "replicate"})
RUNS_MODULE = SAME_MODULE | {"compile"}


def _rebinds(node: ast.AST, name: str, keeps: frozenset[str] = SAME_MODULE) -> bool:
    """An assignment (or a loop, a `with ... as`) that binds `name` to another object; `name = f(name)`
    with f in `keeps` is the same module."""
    value = getattr(node, "value", None)
    if isinstance(value, ast.Call) and _name(value.func) in keeps and value.args \
            and isinstance(value.args[0], ast.Name) and value.args[0].id == name:
        return False
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    elif isinstance(node, (ast.For, ast.AsyncFor)):
        targets = [node.target]
    elif isinstance(node, (ast.With, ast.AsyncWith)):
        targets = [item.optional_vars for item in node.items if item.optional_vars is not None]
    else:
        return False
    return any(isinstance(n, ast.Name) and n.id == name for t in targets for n in walk_nodes(t))


def _arguments(call: ast.Call) -> list[ast.expr]:
    return [*call.args, *(k.value for k in call.keywords)]


def _torch_tree(text: str) -> ast.Module | None:
    """The file's tree for these rules, which state what torch's fully_shard does: None where it does not parse, or
    where `fully_shard` in it is another function (`_foreign_fully_shard`)."""
    tree = R._parse(text)
    return tree if isinstance(tree, ast.Module) and not _foreign_fully_shard(tree) else None


def _foreign_fully_shard(tree: ast.Module) -> bool:
    """Whether the file binds the name `fully_shard` to another function than torch's: one it imports from a module
    outside torch (a repository's or a library's function of that name, which may do anything first) or defines
    itself. Its calls are then not torch's fully_shard, whose behaviour these rules state."""
    for node in walk_nodes(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 0 and (node.module or "").split(".")[0] == "torch":
                continue
            if any((alias.asname or alias.name) == "fully_shard" for alias in node.names):
                return True
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "fully_shard":
            return True
    return False


def _shards(call: ast.Call, name: str, aliases: set[str]) -> bool:
    """`fully_shard(name...)`, of the module, a submodule, a list of them, or a loop variable over them."""
    if _name(call.func) != "fully_shard" or not call.args and not call.keywords:
        return False
    module = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "module"), None)
    items = module.elts if isinstance(module, (ast.List, ast.Tuple)) else [module]
    return any(item is not None and (_head(item) == name or _head(item) in aliases) for item in items)


def _handed_on(call: ast.Call, name: str, known: frozenset[str]) -> bool:
    """The module goes to code whose effect the rule does not know: a function it is passed to, or a
    method of its own."""
    called = _name(call.func)
    if called in known:
        return False
    if isinstance(call.func, ast.Attribute) and _head(call.func.value) == name:
        return True
    return any(not isinstance(a, ast.Call) and _head(a) == name for a in _arguments(call))


def _forward(call: ast.Call, name: str) -> bool:
    return isinstance(call.func, ast.Name) and call.func.id == name


def _unknown(what: str, code: str):
    from shardshift.context import UnknownContext

    return UnknownContext("value", what, "shardshift reads the code without running it: where it is so, fix the "
                          f"order; where it is not, add `# shardshift: ignore[{code}]` on the line")


# calls that take the module and leave its parameters where they are
KEEPS_PARAMETERS = _catalog.HARMLESS | {"fully_shard", "replicate", "set_modules_to_forward_prefetch",
                                        "set_modules_to_backward_prefetch", "info", "debug", "warning", "log",
                                        "named_parameters", "get_num_params", "sum", "format"}


def _meta_bindings(steps: list[_Step]) -> list[tuple[str, _Step]]:
    """(name, the assignment) for each module built on the meta device: assigned inside `with
    torch.device("meta"):` (or Accelerate's `init_empty_weights()`), or by a call given `device="meta"`."""
    at = {id(s.node): s for s in steps}
    found = []
    for step in steps:
        node = step.node
        if isinstance(node, (ast.With, ast.AsyncWith)) and any(_catalog._meta_context(i) for i in node.items):
            assignments = [n for s in node.body for n in walk_nodes(s) if isinstance(n, ast.Assign)
                           and isinstance(n.value, ast.Call) and id(n) in at]
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and any(
                k.arg == "device" and isinstance(k.value, ast.Constant) and k.value.value == "meta"
                for k in node.value.keywords):
            assignments = [node]
        else:
            continue
        found.extend((t.id, at[id(a)]) for a in assignments for t in a.targets if isinstance(t, ast.Name))
    return found


def _materialises(call: ast.Call, name: str) -> bool:
    """`name.to_empty(...)` or `name.load_state_dict(..., assign=True)` (of the module or a submodule)."""
    if not isinstance(call.func, ast.Attribute) or _head(call.func.value) != name:
        return False
    return call.func.attr == "to_empty" or (call.func.attr == "load_state_dict" and any(
        k.arg == "assign" and not (isinstance(k.value, ast.Constant) and k.value.value is False)
        for k in call.keywords))


class MetaModuleRunBeforeMaterialised(_base._Fsdp2Rule):
    """A module built on the meta device is sharded and run forward while still on the meta device.

    ## What it does
    Reports the first forward (`model(...)`) of a module built inside `with torch.device("meta"):`
    (or Accelerate's `init_empty_weights()`, or with `device="meta"`) and sharded by `fully_shard`
    (the module, a submodule or a loop variable over them) in the same function, when no
    `to_empty(...)` or `load_state_dict(..., assign=True)` on it comes between. A step under an
    `if` the reader cannot decide, or the module handed to other code in between
    (`init_model(model)`, `model.setup()`), makes it an info.

    ## Why is this bad
    Building on the meta device allocates no memory, and `fully_shard` keeps the parameters
    there. The first forward's lazy initialisation refuses them: torch raises `RuntimeError: FSDP
    parameters should be materialized from meta device before training, but the following were
    still on meta device: [...]` (`FSDPParamGroup._validate_no_meta_params`).

    ## Example
    ```python
    with torch.device("meta"):
        model = Transformer(args)
    for layer in model.layers:
        fully_shard(layer)
    fully_shard(model)
    loss = model(tokens).sum()
    ```

    ## Use instead
    ```python
    with torch.device("meta"):
        model = Transformer(args)
    for layer in model.layers:
        fully_shard(layer)
    fully_shard(model)
    model.to_empty(device="cuda")
    model.init_weights()
    loss = model(tokens).sum()
    ```
    """

    code = "FS042"
    name = "meta-module-run-before-materialised"
    severity = "error"

    def judge(self, analysis, context):
        text = analysis.text
        if "fully_shard" not in text or ('"meta"' not in text and "'meta'" not in text
                                         and "init_empty_weights" not in text):
            return
        tree = _torch_tree(text)
        if tree is None:
            return
        for body in _bodies(tree):
            steps = _ordered(body)
            for name, bound in _meta_bindings(steps):
                found = self._scan(name, bound, [s for s in steps if s.line > bound.line])
                if found is not None:
                    yield found

    def _scan(self, name: str, bound: _Step, later: list[_Step]):
        base = bound.conds
        aliases: set[str] = set()
        shard: _Step | None = None
        doubts: list[str] = []
        sides: dict[str, set[bool]] = {}  # an undecided if -> its sides that materialise (or load) the module
        for step in later:
            if _exclusive(base, step.conds):
                continue
            node, extra = step.node, _extra(step, base)
            if isinstance(node, (ast.For, ast.AsyncFor)) and _head(node.iter) == name:
                aliases |= {n.id for n in walk_nodes(node.target) if isinstance(n, ast.Name)}
                continue
            if _rebinds(node, name, RUNS_MODULE):
                if not extra:
                    return None  # another object from here on
                doubts.append(f"whether {name} is bound again at line {step.line} (under {extra[0].describe()})")
                continue
            if not isinstance(node, ast.Call):
                continue
            if _materialises(node, name) or (isinstance(node.func, ast.Attribute) and _head(node.func.value) == name
                                             and _catalog._moves_off_meta(node)) or \
                    (isinstance(node.func, ast.Attribute) and node.func.attr == "cuda" and _head(node.func.value) == name):
                if not extra:
                    return None  # materialised (or moved: FS036 reports .to / .cpu on a meta module)
                sides.setdefault(extra[0].key, set()).add(extra[0].positive)
                if len(sides[extra[0].key]) == 2:
                    return None  # on both sides of one if
                doubts.append(f"whether {ast.unparse(node.func)}(...) at line {step.line} runs (under "
                              f"{extra[0].describe()})")
                continue
            if _shards(node, name, aliases):
                if shard is None or (_extra(shard, base) and not extra):
                    shard = step  # the first one that surely runs, else the first one
                continue
            if shard is not None and _forward(node, name):
                if _extra(shard, base):
                    doubts.append(f"whether fully_shard at line {shard.line} runs (under "
                                  f"{_extra(shard, base)[0].describe()})")
                if extra:
                    doubts.append(f"whether the forward at line {step.line} runs (under {extra[0].describe()})")
                unknown = _unknown(doubts[0], self.code) if doubts else None
                return (step, f"{name}(...) is the first forward of a module built on the meta device (line "
                        f"{bound.line}) and sharded by fully_shard at line {shard.line}, with no to_empty or "
                        "load_state_dict(..., assign=True) in between: torch raises RuntimeError at the forward (FSDP "
                        "parameters should be materialized from meta device before training)",
                        f"after fully_shard, call {name}.to_empty(device=...) and initialise the weights "
                        f"({name}.init_weights() / reset_parameters()) or load them, before the first forward",
                        unknown)
            if _handed_on(node, name, KEEPS_PARAMETERS):
                if extra and _catalog.INITIALISING.search(_name(node.func)):  # checkpointer.load_model(model)
                    sides.setdefault(extra[0].key, set()).add(extra[0].positive)
                    if len(sides[extra[0].key]) == 2:
                        return None
                doubts.append(f"what {ast.unparse(node.func)}(...) at line {step.line} does to {name}'s parameters "
                              "(it may materialise them)")
        return None


# what `replicate` is, by the module it is imported from
REPLICATES = {"torch.distributed._composable.replicate_with_fsdp": "fsdp",
              "torch.distributed._composable.replicate": "ddp", "torch.distributed._composable": "ddp"}


def _replicate_names(tree: ast.Module) -> dict[str, str]:
    """Local name -> "fsdp" (replicate_with_fsdp's replicate, an FSDPState of its own) or "ddp" (the
    DDP-based composable replicate), for `from torch.distributed._composable... import replicate`."""
    found = {}
    for node in walk_nodes(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module in REPLICATES:
            found.update({a.asname or a.name: REPLICATES[node.module] for a in node.names if a.name == "replicate"})
    return found


def _targets(call: ast.Call) -> list[ast.expr]:
    """The modules a composable call is applied to: its first argument, or the items of a list of them."""
    module = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "module"), None)
    items = module.elts if isinstance(module, (ast.List, ast.Tuple)) else [module]
    return [i for i in items if isinstance(i, (ast.Name, ast.Attribute, ast.Subscript)) and _head(i)]


def _free_names(node: ast.expr) -> set[str]:
    return {n.id for n in walk_nodes(node) if isinstance(n, ast.Name)}


class ReplicateAndFullyShardOnOneModule(_base._Fsdp2Rule):
    """`replicate` and `fully_shard` are both applied to the same module.

    ## What it does
    Reports `replicate(m)` (torch's composable `replicate`, from `torch.distributed._composable` or
    its `replicate_with_fsdp` module) and `fully_shard(m)` on the same module object in one
    function, in either order: the same expression, with none of its names bound again in between
    (a loop variable stands for each element of what it iterates). A call under an `if` the reader
    cannot decide, which the other does not share, makes it an info.

    ## Why is this bad
    Each API refuses a module the other manages. `fully_shard` after `replicate_with_fsdp`'s
    `replicate` raises `AssertionError: Inserting ... more than once` (both register an FSDP state
    for the module; the two contracts have their own names, so `contract` lets the second
    through); `replicate` after `fully_shard` raises `RuntimeError: Cannot apply replicate() on a
    Module already managed by fully_shard`; `fully_shard` after the DDP-based `replicate` makes
    the parameters DTensors, and the first forward raises RuntimeError in replicate's
    DistributedDataParallel. Replicate and shard at once with `fully_shard` over a 2-D mesh
    (HSDP), or apply each API to different modules.

    ## Example
    ```python
    replicate(model, mesh=mesh)
    fully_shard(model, mesh=mesh)
    ```

    ## Use instead
    ```python
    mesh = init_device_mesh("cuda", (2, 8), mesh_dim_names=("replicate", "shard"))
    fully_shard(model, mesh=mesh)  # HSDP: replicated over dim 0, sharded over dim 1
    ```
    """

    code = "FS043"
    name = "replicate-and-fully-shard-one-module"
    severity = "error"

    def judge(self, analysis, context):
        text = analysis.text
        if "replicate" not in text or "fully_shard" not in text or "_composable" not in text:
            return
        tree = _torch_tree(text)
        if tree is None:
            return
        replicates = _replicate_names(tree)
        if not replicates:
            return
        for body in _bodies(tree):
            yield from self._body(_ordered(body), replicates)

    def _body(self, steps: list[_Step], replicates: dict[str, str]):
        calls = []  # (index, step, api, the module as written with loop variables resolved, its names)
        loops: dict[str, ast.expr] = {}  # loop variable -> what its loop iterates
        for index, step in enumerate(steps):
            node = step.node
            if isinstance(node, (ast.For, ast.AsyncFor)):
                if isinstance(node.target, ast.Name):
                    loops[node.target.id] = node.iter
                continue
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    for name in _free_names(target):
                        loops.pop(name, None)
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
                continue
            api = "fully_shard" if node.func.id == "fully_shard" else replicates.get(node.func.id)
            if api is None:
                continue
            for target in _targets(node):
                shown, names = ast.unparse(target), _free_names(target)
                head = _head(target)
                if head in loops:  # each element of the loop's iterable
                    shown = ast.unparse(loops[head]) + "[*]" + shown[len(head):]
                    names = (names - {head}) | _free_names(loops[head])
                calls.append((index, step, api, shown, names))
        for position, (index, step, api, shown, names) in enumerate(calls):
            for earlier_index, earlier, other, other_shown, _ in calls[:position]:
                if other_shown != shown or (api == "fully_shard") == (other == "fully_shard"):
                    continue
                if _exclusive(step.conds, earlier.conds):
                    continue
                if any(_rebinds(s.node, n) for s in steps[earlier_index + 1:index] for n in names):
                    continue
                extra = _extra(step, earlier.conds) or _extra(earlier, step.conds)
                unknown = None
                if extra:
                    unknown = _unknown(f"whether both calls run ({extra[0].describe()} holds for only one of them)",
                                       self.code)
                yield (step, *self._message(api, other, shown, earlier.line), unknown)
                break

    @staticmethod
    def _message(api: str, earlier: str, module: str, line: int) -> tuple[str, str]:
        shown = _base._show(module.replace("[*]", "[i]"))
        fix = ("use one API per module: fully_shard over a 2-D mesh (replicate, shard) for replicated shards "
               "(HSDP), or replicate and fully_shard on different modules")
        if api != "fully_shard":
            return (f"replicate({shown}) on a module fully_shard already manages (line {line}): torch raises "
                    "RuntimeError (Cannot apply `replicate()` on a Module already managed by `fully_shard`)", fix)
        if earlier == "fsdp":
            return (f"fully_shard({shown}) on a module replicate already manages (line {line}): torch raises "
                    "AssertionError in fully_shard (Inserting ... more than once: both APIs register an FSDP state "
                    "for the module)", fix)
        return (f"fully_shard({shown}) on a module the DDP-based replicate already manages (line {line}): fully_shard "
                "makes its parameters DTensors, and the first forward raises RuntimeError in replicate's "
                "DistributedDataParallel", fix)


ACCELERATORS = ("cuda", "xpu", "npu", "hpu", "mps", "mtia")


def _offload_names(body: list[ast.stmt]) -> set[str]:
    """Names a body binds to `CPUOffloadPolicy(...)`."""
    return {t.id for s in body for n in walk_nodes(s) if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)
            and _name(n.value.func) == "CPUOffloadPolicy" for t in n.targets if isinstance(t, ast.Name)}


def _offloads(call: ast.Call, names: set[str]) -> bool:
    policy = next((k.value for k in call.keywords if k.arg == "offload_policy"), None)
    return (isinstance(policy, ast.Call) and _name(policy.func) == "CPUOffloadPolicy") or \
        (isinstance(policy, ast.Name) and policy.id in names)


def _device(node: ast.expr | None, devices: dict[str, ast.expr]) -> str | None:
    """The device type a device argument names: "cuda" for "cuda:0", torch.device("cuda", rank) or a
    name bound to one of those; "" when the rule cannot tell; None for no device (a dtype)."""
    if isinstance(node, ast.Name) and node.id in devices:
        node = devices[node.id]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.split(":")[0]
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return "cuda"  # an index of the accelerator
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant) \
            and ":" in str(node.values[0].value):  # f"cuda:{local_rank}"
        return str(node.values[0].value).split(":")[0]
    if isinstance(node, ast.Call) and _name(node.func) == "device" and node.args:
        return _device(node.args[0], {})
    if isinstance(node, ast.Attribute) and _catalog._DTYPE_WORDS.match(node.attr):
        return None
    if isinstance(node, ast.Name) and "dtype" in node.id.lower():
        return None
    return ""


def _moved_to(call: ast.Call, name: str, devices: dict[str, ast.expr]) -> str | None:
    """The device type `name.to(...)`, `name.cuda()` or `name.to_empty(device=...)` moves the module to
    ("" when the rule cannot tell), or None for no move of it."""
    if not isinstance(call.func, ast.Attribute) or not isinstance(call.func.value, ast.Name) \
            or call.func.value.id != name:
        return None
    method = call.func.attr
    if method == "cuda":
        return "cuda"
    if method == "cpu":
        return "cpu"
    if method == "to_empty":
        return _device(next((k.value for k in call.keywords if k.arg == "device"), None), devices)
    if method == "to":
        given = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "device"), None)
        return _device(given, devices) if given is not None else None
    return None


class CpuOffloadModuleMovedToAccelerator(_base._Fsdp2Rule):
    """A module sharded with `CPUOffloadPolicy` is moved to an accelerator before its first forward.

    ## What it does
    Reports `model.to("cuda")`, `model.cuda()` or `model.to_empty(device="cuda")` (any accelerator,
    written as a string, `torch.device(...)` or a name bound to one in the same function) after
    `fully_shard(..., offload_policy=CPUOffloadPolicy())` on the module or a submodule, when the
    module then runs forward in the same function with no move back to the CPU in between. A
    device the rule cannot read (`model.to(device)` with `device` from elsewhere), or a step
    under an `if` the reader cannot decide, makes it an info.

    ## Why is this bad
    With `CPUOffloadPolicy`, FSDP2 keeps the sharded parameters on the CPU and copies them to the
    accelerator itself for each all-gather. The first forward's lazy initialisation refuses
    sharded parameters anywhere else: torch raises `RuntimeError: FSDP parameters should be
    materialized on CPU when enabling CPU offloading. For example, load a CPU state dict or call
    module.to_empty(device="cpu")` (`FSDPParamGroup._validate_cpu_offload_params`).

    ## Example
    ```python
    with torch.device("meta"):
        model = Transformer(args)
    fully_shard(model, offload_policy=CPUOffloadPolicy())
    model.to_empty(device="cuda")
    model.init_weights()
    loss = model(tokens).sum()
    ```

    ## Use instead
    ```python
    with torch.device("meta"):
        model = Transformer(args)
    fully_shard(model, offload_policy=CPUOffloadPolicy())
    model.to_empty(device="cpu")
    model.init_weights()
    loss = model(tokens.cuda()).sum()
    ```
    """

    code = "FS044"
    name = "cpu-offload-module-moved-to-accelerator"
    severity = "error"

    def judge(self, analysis, context):
        text = analysis.text
        if "CPUOffloadPolicy" not in text or "fully_shard" not in text:
            return
        tree = _torch_tree(text)
        if tree is None:
            return
        module_names = _offload_names(tree.body)
        for body in _bodies(tree):
            steps = _ordered(body)
            names = module_names | _offload_names(body)
            bound = [(t.id, n.value) for s in steps if isinstance(n := s.node, ast.Assign)
                     for t in n.targets if isinstance(t, ast.Name)]
            once = {name for name, _ in bound if sum(1 for other, _ in bound if other == name) == 1}
            devices = {name: value for name, value in bound if name in once}  # a name bound once in the function
            loops: dict[str, str] = {}
            for index, step in enumerate(steps):
                node = step.node
                if isinstance(node, (ast.For, ast.AsyncFor)) and isinstance(node.target, ast.Name):
                    loops[node.target.id] = _head(node.iter)
                if not isinstance(node, ast.Call) or _name(node.func) != "fully_shard" or not _offloads(node, names):
                    continue
                heads = {loops.get(_head(t), _head(t)) for t in _targets(node)}
                found = next((f for h in sorted(heads) if h and (f := self._scan(h, step, steps[index + 1:], devices))),
                             None)
                if found is not None:
                    yield found
                    break  # one finding per function: the first forward raises once

    def _scan(self, name: str, shard: _Step, later: list[_Step], devices: dict[str, ast.expr]):
        base = shard.conds
        move: tuple[_Step, str] | None = None
        doubts: list[str] = []
        for step in later:
            if _exclusive(base, step.conds):
                continue
            node, extra = step.node, _extra(step, base)
            if _rebinds(node, name, RUNS_MODULE):
                if not extra:
                    return None
                doubts.append(f"whether {name} is bound again at line {step.line} (under {extra[0].describe()})")
                continue
            if not isinstance(node, ast.Call):
                continue
            device = _moved_to(node, name, devices)
            if device is not None:
                if device == "cpu" or device == "meta" or (device and device not in ACCELERATORS):
                    if not extra:
                        move = None  # back on the CPU (or off the accelerator): what the policy expects
                    continue
                if move is None or (_extra(move[0], base) and not extra):
                    move = (step, device)
                continue
            if move is not None and _forward(node, name):
                moved, device = move
                if _extra(moved, base):
                    doubts.append(f"whether the move at line {moved.line} runs (under "
                                  f"{_extra(moved, base)[0].describe()})")
                if not device:
                    doubts.append(f"whether {ast.unparse(moved.node.func)}(...) at line {moved.line} names an "
                                  "accelerator (the device is not written in the function)")
                if extra:
                    doubts.append(f"whether the forward at line {step.line} runs (under {extra[0].describe()})")
                if shard.conds:
                    doubts.append(f"whether fully_shard at line {shard.line} runs (under {shard.conds[0].describe()})")
                shown = ast.unparse(moved.node)
                return (step, f"{name}(...) runs forward after {shown} (line {moved.line}) moved a module sharded "
                        f"with CPUOffloadPolicy (fully_shard at line {shard.line}) off the CPU: torch raises "
                        "RuntimeError at the first forward (FSDP parameters should be materialized on CPU when "
                        "enabling CPU offloading)",
                        f"keep {name} on the CPU ({name}.to_empty(device=\"cpu\") for a meta-device model): with "
                        "CPUOffloadPolicy, FSDP moves each group's parameters to the accelerator itself; move only "
                        "the inputs", _unknown(doubts[0], self.code) if doubts else None)
            if move is not None and _handed_on(node, name, KEEPS_PARAMETERS):
                doubts.append(f"what {ast.unparse(node.func)}(...) at line {step.line} does with {name} (it may "
                              "move it back to the CPU)")
        return None


# torch.nn modules whose attribute is a container with no forward: nn.TransformerEncoder(...).layers
TORCH_CONTAINER_ATTRIBUTES = {"TransformerEncoder": "layers", "TransformerDecoder": "layers"}
CONTAINERS = ("ModuleList", "ModuleDict")


def _containers(tree: ast.Module) -> dict[str, str]:
    """What the file binds to a plain nn.ModuleList / nn.ModuleDict, as fully_shard's argument is written: a name
    bound once in the file (`blocks = nn.ModuleList(...)`), or `x.attr` where `x` is bound once to a class the file
    defines on nn.Module whose own code binds `self.attr` once, to such a container (or to nn.TransformerEncoder /
    nn.TransformerDecoder, whose `layers` is one). A name bound twice, or a class of another base, is not read."""
    bound: dict[str, list[ast.expr]] = {}
    for node in walk_nodes(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(target, ast.Name):
                    bound.setdefault(target.id, []).append(node.value)
        # other bindings of a name (a loop variable, a `with ... as`, a function's parameter): not one object
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            for name in _free_names(node.target):
                bound.setdefault(name, []).append(node)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                for name in _free_names(item.optional_vars) if item.optional_vars is not None else ():
                    bound.setdefault(name, []).append(node)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            arguments = node.args
            for argument in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]:
                bound.setdefault(argument.arg, []).append(node)
    classes: dict[str, dict[str, str]] = {}  # class -> attribute -> container class
    for cls in (n for n in walk_nodes(tree) if isinstance(n, ast.ClassDef)):
        attributes = _base.self_attributes(cls)
        if attributes is not None:
            classes[cls.name] = {attr: kind for attr, values in attributes.items() if len(values) == 1
                                 and isinstance(values[0], ast.Call)
                                 and (kind := _base.torch_nn(values[0].func, CONTAINERS))}
    out: dict[str, str] = {}
    for name, values in bound.items():
        if len(values) != 1 or not isinstance(values[0], ast.Call):
            continue
        call = values[0]
        kind = _base.torch_nn(call.func, CONTAINERS)
        if kind:
            out[name] = kind
        elif isinstance(call.func, ast.Name) and call.func.id in classes:
            out.update({f"{name}.{attr}": kind for attr, kind in classes[call.func.id].items()})
        elif (torch_class := _base.torch_nn(call.func, TORCH_CONTAINER_ATTRIBUTES)) is not None:
            out[f"{name}.{TORCH_CONTAINER_ATTRIBUTES[torch_class]}"] = "ModuleList"
    return out


class ContainerPassedToFullyShard(_base._Fsdp2Rule):
    """`fully_shard` is given an `nn.ModuleList` or `nn.ModuleDict` itself.

    ## What it does
    Reports `fully_shard(x)` where `x` is a plain `nn.ModuleList` or `nn.ModuleDict`, as the file
    shows it: a name bound once to one, an attribute that a model class defined in the file sets
    to one in its own code (`self.layers = nn.ModuleList(...)`), or the `layers` of an
    `nn.TransformerEncoder` / `nn.TransformerDecoder`. A model whose class is not in the file, a
    name bound more than once, and subclasses of the containers (which may define `forward`) are
    not judged.

    ## Why is this bad
    FSDP2 runs its all-gathers in hooks around a module's `forward`, and these containers have
    none (they are never called): `fully_shard` raises `ValueError: fully_shard does not support
    containers that do not implement forward` in every torch release with FSDP2.

    ## Example
    ```python
    fully_shard(model.layers)
    fully_shard(model)
    ```

    ## Use instead
    ```python
    for layer in model.layers:
        fully_shard(layer)
    fully_shard(model)
    ```
    """

    code = "FS051"
    name = "container-passed-to-fully-shard"
    severity = "error"

    def judge(self, analysis, context):
        text = analysis.text
        if "fully_shard" not in text or ("ModuleList" not in text and "ModuleDict" not in text
                                         and "TransformerEncoder" not in text and "TransformerDecoder" not in text):
            return
        tree = _torch_tree(text)
        if tree is None:
            return
        containers = _containers(tree)
        if not containers:
            return
        for event in analysis.of("fully_shard"):
            if event.file:
                continue  # in a helper of another file
            for target in event.targets:
                kind = containers.get(target)
                if kind is not None:
                    yield (event, f"fully_shard({_base._show(target)}) is given an nn.{kind}, a container with no forward: "
                           "torch raises ValueError (fully_shard does not support containers that do not implement "
                           "forward)",
                           f"shard each module in it (for block in {_base._show(target)}{'.values()' if kind == 'ModuleDict' else ''}: "
                           "fully_shard(block)), then the model")
                    break
