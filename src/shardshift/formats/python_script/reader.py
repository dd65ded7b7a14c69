"""Python training scripts, read with `ast` (never imported, never executed).

The reader looks for what ties a script to a ds_config: `deepspeed.initialize(...)` calls (also
`from deepspeed import initialize`, aliases, positional arguments) with the config, optimizer and
LR scheduler they pass, and the places that hand a ds_config to the Hugging Face integration
(`TrainingArguments(deepspeed=...)` and the TRL `*Config` classes, `HfDeepSpeedConfig(...)`,
Accelerate's `DeepSpeedPlugin(hf_ds_config=...)`, an argparse `--deepspeed` default). A value is
followed through simple assignments (`cfg = "ds.json"`, `with open(p) as f: json.load(f)`,
`os.path.join("a", "b")`); anything else is "unknown" and the rules stay quiet about it.

Only files that mention deepspeed or torch.distributed are read at all, so a pre-commit run over
ordinary Python stays cheap. A file that does not parse is reported only when it clearly is a
training script (it calls `deepspeed.initialize` or builds `TrainingArguments`).
"""

from __future__ import annotations

import ast
import os
import warnings
from dataclasses import dataclass, field
from typing import Any

from shardshift.document import Document, Reference, SyntaxProblem, resolve_reference
from shardshift.source import Location
from shardshift.user_code import Visitor
from shardshift.user_code import parse as parse_user_code
from shardshift.user_code import walk as walk_nodes

FORMAT = "python"

# An unparseable .py file is worth reporting only when it contains one of these.
MARKER_KEYS = ("deepspeed.initialize(", "TrainingArguments(", "HfDeepSpeedConfig(", "from deepspeed import initialize")

# deepspeed.initialize's parameters in positional order (DeepSpeed 0.19.8 deepspeed/__init__.py).
INITIALIZE_PARAMETERS = ("args", "model", "optimizer", "model_parameters", "training_data", "lr_scheduler",
                         "distributed_port", "mpu", "dist_init_required", "collate_fn", "config", "mesh_param",
                         "config_params")

# argparse flags whose default is a ds_config path, and who reads it.
ARGPARSE_FLAGS = {"--deepspeed": "trainer", "--deepspeed_config": "deepspeed", "--deepscale_config": "deepspeed",
                  "--deepspeed_config_file": "accelerate"}
# dataclass fields (HfArgumentParser) whose default is a ds_config path.
DATACLASS_FIELDS = {"deepspeed": "trainer"}

# Loaders that turn a path into the dict a script passes on.
JSON_LOADERS = {"json.load": "json", "hjson.load": "hjson", "json.loads": "json", "hjson.loads": "hjson"}


class _Unknown:
    """A value the reader cannot know without running the script."""

    def __repr__(self) -> str:
        return "<unknown>"


UNKNOWN: Any = _Unknown()


@dataclass(slots=True)
class Expr:
    """What an argument is, as far as reading the source can tell.

    kind: "str" (value: the string, e.g. a path), "dict" (value: a dict whose unknowable leaves
    are UNKNOWN), "none", "call" (value: the dotted callee, e.g. "torch.optim.AdamW";
    `keywords`: its literal keyword arguments), "callable" (a lambda or function; value: the
    callee of its body when that is a call), "unknown". `certain` is False when a name has
    several possible values in its scope. `loader` is "json" when a path is read with
    `json.load` in the script (so `1e3` stays a float)."""

    kind: str
    text: str
    line: int
    column: int
    value: Any = None
    certain: bool = True
    loader: str | None = None
    keywords: dict[str, Any] = field(default_factory=dict)
    bound_at: int = 0  # for a name: the line of the assignment its value comes from


@dataclass(slots=True)
class InitializeCall:
    """One `deepspeed.initialize(...)` call with its arguments by parameter name; `line` and
    `column` of each argument are in `positions` (keyword or positional argument start)."""

    line: int
    column: int
    arguments: dict[str, Expr]
    positions: dict[str, tuple[int, int]]
    star_kwargs: bool = False

    @property
    def config(self) -> Expr | None:
        return self.arguments.get("config") or self.arguments.get("config_params")

    def passes(self, name: str) -> bool | None:
        """True when the call certainly passes a non-None `name`, False when it certainly does
        not, None when the source cannot tell."""
        value = self.arguments.get(name)
        if value is None:
            return None if self.star_kwargs else False
        if value.kind == "none":
            return False if value.certain else None
        if value.kind in ("call", "callable", "dict", "str") and value.certain:
            return True
        return None


@dataclass(slots=True)
class ConfigReference:
    """A place that hands a ds_config to a consumer: "trainer" (TrainingArguments and the
    classes built on it, or an argparse `--deepspeed` default), "hf" (HfDeepSpeedConfig),
    "accelerate" (DeepSpeedPlugin), "deepspeed" (deepspeed.initialize or `--deepspeed_config`)."""

    consumer: str
    callee: str
    expr: Expr
    runtime: bool = False  # an unknown path given at run time (`args.deepspeed`, os.environ, sys.argv)
    call: ArgumentsCall | None = None  # the TrainingArguments-like call that names it, when it is one


@dataclass(slots=True)
class ArgumentsCall:
    """A `TrainingArguments(...)`-like call (the class, TRL's `*Config` classes built on it):
    its keyword arguments as literals (UNKNOWN where the source is not a literal), where each is
    written, and whether `**kwargs` may set more."""

    callee: str
    line: int
    column: int
    keywords: dict[str, Any]
    positions: dict[str, tuple[int, int]]
    star_kwargs: bool = False
    # a dataclass built on TrainingArguments that HfArgumentParser fills: `keywords` are its
    # fields' defaults (the command line may change them)
    defaults: bool = False

    def value(self, name: str, default: Any) -> Any:
        """The keyword's literal value; `default` (transformers' TrainingArguments default) when the
        call certainly does not pass it and the class takes transformers' defaults; UNKNOWN when the
        source cannot tell, or the class is another (TRL's SFTConfig turns bf16 on by default)."""
        if name in self.keywords:
            return self.keywords[name]
        return UNKNOWN if self.star_kwargs or not self.own_defaults() else default

    def own_defaults(self) -> bool:
        """Whether a field the call leaves out takes transformers' TrainingArguments default."""
        return self.callee in TRAINING_ARGUMENTS_CLASSES


@dataclass(slots=True)
class TrainerCall:
    """A `Trainer(...)`-like call that passes `optimizers=(optimizer, scheduler)`: the optimizer
    argument as far as the source tells, where `optimizers=` is written, and the position of the
    `TrainingArguments(...)` call its `args=` is bound to (None when the source does not say)."""

    callee: str
    line: int
    column: int
    optimizer: Expr
    position: tuple[int, int]
    arguments_at: tuple[int, int] | None


@dataclass(slots=True)
class TrainerOverride:
    """A method of a Trainer subclass defined in the file that the Trainer calls only when the
    ds_config leaves the choice to it (`create_optimizer`, `create_scheduler`)."""

    cls: str
    method: str
    line: int
    column: int
    # builds only while the Trainer's attribute is still None (`if self.optimizer is None:`, or
    # through `super().create_optimizer()`), as transformers' own method does
    guarded: bool = False


@dataclass(slots=True)
class TrainerBuilt:
    """A call that builds a class defined in the file with Trainer overrides: the class, where the
    call is, and the position of the `TrainingArguments(...)` call its `args=` is bound to."""

    cls: str
    line: int
    column: int
    arguments_at: tuple[int, int] | None


@dataclass(slots=True)
class ScriptFacts:
    initialize_calls: list[InitializeCall] = field(default_factory=list)
    references: list[ConfigReference] = field(default_factory=list)
    trainers: list[TrainerCall] = field(default_factory=list)
    overrides: list[TrainerOverride] = field(default_factory=list)
    built: list[TrainerBuilt] = field(default_factory=list)
    # every `TrainingArguments(...)` / `Seq2SeqTrainingArguments(...)` call, with or without a ds_config
    arguments: list[ArgumentsCall] = field(default_factory=list)
    # (class, line) of every call that builds a Trainer (`Trainer(...)`, TRL's `SFTTrainer(...)`, a
    # repository's `MyTrainer(...)`): the evidence that the checks Trainer makes at start-up are run
    trainers_built: list[tuple[str, int]] = field(default_factory=list)


# the classes whose defaults are transformers' own (TRL's configs and a repository's subclasses change some)
TRAINING_ARGUMENTS_CLASSES = ("TrainingArguments", "Seq2SeqTrainingArguments")


def looks_like(path: str, text: str) -> bool:
    """A Python file that mentions deepspeed or torch.distributed, or builds TrainingArguments."""
    if not path.endswith(".py"):
        return False
    return "deepspeed" in text or "torch.distributed" in text or "TrainingArguments(" in text


def _may_hold_facts(text: str) -> bool:
    """Whether the file can hold a fact (or a syntax problem worth reporting): every fact needs
    DeepSpeed named (`deepspeed.initialize`, a `deepspeed=` keyword or field, `--deepspeed`,
    `HfDeepSpeedConfig`, `DeepSpeedPlugin`) or a Trainer's `optimizers=`; the parse is skipped
    for the rest (most of a large tree's code that uses torch.distributed)."""
    return "deepspeed" in text.lower() or "optimizers" in text or "def create_" in text or \
        any(marker in text for marker in MARKER_KEYS)


def read(text: str, path: str = "<string>") -> Document:
    """The facts of a script. Never raises: a file that does not parse gives no facts, and a
    syntax problem only when it is clearly a training script."""
    document = Document(path=path, format=FORMAT, text=text, data=ScriptFacts())
    if not _may_hold_facts(text):
        return document  # code that uses torch.distributed and nothing this reader looks for
    try:
        with warnings.catch_warnings():  # the user's invalid escapes are not our warnings to print
            warnings.simplefilter("ignore")
            tree = parse_user_code(text, path)
    except SyntaxError as error:
        if any(marker in text for marker in MARKER_KEYS):
            document.syntax = SyntaxProblem(f"{error.msg}", error.lineno or 1, error.offset or 1)
        return document
    except (ValueError, RecursionError, MemoryError) as error:  # null bytes, absurd nesting
        if any(marker in text for marker in MARKER_KEYS):
            document.syntax = SyntaxProblem(f"cannot be parsed as Python: {error}", 1, 1)
        return document
    except (ValueError, RecursionError, MemoryError):
        return document
    try:
        document.data = _Reader(text, tree).facts()
    except Exception:  # noqa: BLE001 - a script we cannot follow gives no facts, never a traceback
        document.data = ScriptFacts()
    document.references = references(document)
    document.plan = _trainer_plan(document)
    return document


def _trainer_plan(document: Document):
    """The Plan fields of the script's one `TrainingArguments(...)` call that names a ds_config with a literal
    path (its literal keywords, as a launch's flags give them: formats/launch/training_flags.py), when that
    ds_config is all the script names and the script builds a Trainer, which meets the two when training starts
    (its PRECEDENCE). None otherwise."""
    facts: ScriptFacts = document.data
    calls = [c for c in facts.arguments if isinstance(c.keywords.get("deepspeed"), str) and c.keywords["deepspeed"]
             and not c.defaults]
    if len(calls) != 1 or facts.initialize_calls or not facts.trainers_built or \
            {r.target for r in document.references} != {calls[0].keywords["deepspeed"]}:
        return None
    from shardshift.formats.python_script.arguments_plan import fill_call
    from shardshift.plan import Plan

    plan = Plan()
    fill_call(plan, calls[0], document.path)
    return plan if dict(plan.leaves()) else None


def references(document: Document) -> list[Reference]:
    """The ds_configs the script names with a literal path (deepspeed.initialize's config, or a
    place that hands one to the Hugging Face integration), resolved by `resolve_reference`."""
    facts: ScriptFacts = document.data
    exprs = [call.config for call in facts.initialize_calls] + [ref.expr for ref in facts.references]
    found: list[Reference] = []
    seen: set[str] = set()
    for expr in exprs:
        if expr is None or expr.kind != "str" or not expr.certain or not isinstance(expr.value, str) or not expr.value:
            continue
        if expr.value in seen:
            continue
        seen.add(expr.value)
        resolved, unknown = resolve_reference(document.path, expr.value)
        found.append(Reference(expr.value, resolved, Location(document.path, expr.line, expr.column, None),
                               unknown=unknown))
    return found


# --- the reader -------------------------------------------------------------------------------


# Trainer methods whose work DeepSpeed's block takes over: with the block, `deepspeed_init` sets the
# Trainer's attribute to a placeholder (DummyOptim, DummyScheduler) before the Trainer calls the
# method, so a method that builds only while the attribute is None builds nothing. The block's name
# and the attribute for each.
OVERRIDDEN_BY_BLOCK = {"create_optimizer": "optimizer", "create_scheduler": "scheduler"}
OVERRIDE_ATTRIBUTE = {"create_optimizer": "optimizer", "create_scheduler": "lr_scheduler"}


def _tests_unset(test: ast.AST, attribute: str) -> bool:
    """`self.<attribute> is None` or `not self.<attribute>` (also inside `and` / `or`)."""
    if isinstance(test, ast.BoolOp):
        return any(_tests_unset(value, attribute) for value in test.values)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return dotted(test.operand) == f"self.{attribute}"
    return isinstance(test, ast.Compare) and dotted(test.left) == f"self.{attribute}" and \
        isinstance(test.ops[0], ast.Is) and isinstance(test.comparators[0], ast.Constant) and \
        test.comparators[0].value is None


def _guarded(method: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether the method builds only while the attribute is None: an `if` that tests it, or a
    `super().<method>()` call and no assignment of the attribute of its own."""
    attribute = OVERRIDE_ATTRIBUTE[method.name]
    nodes = walk_nodes(method)
    if any(isinstance(n, (ast.If, ast.IfExp)) and _tests_unset(n.test, attribute) for n in nodes):
        return True
    calls_super = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == method.name
                      and isinstance(n.func.value, ast.Call) and dotted(n.func.value.func) == "super"
                      for n in nodes)
    assigns = any(isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and
                  any(dotted(t) == f"self.{attribute}" for t in getattr(n, "targets", [getattr(n, "target", None)]))
                  for n in nodes)
    return calls_super and not assigns


def _overrides(node: ast.ClassDef) -> list[TrainerOverride]:
    """The `create_optimizer` / `create_scheduler` methods of a class whose base is named like a
    Trainer (`Trainer`, `transformers.Trainer`, TRL's `SFTTrainer`, ...)."""
    if not any((dotted(base) or "").rsplit(".", 1)[-1].endswith("Trainer") for base in node.bases):
        return []
    return [TrainerOverride(node.name, item.name, item.lineno, item.col_offset + 1, _guarded(item))
            for item in node.body
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name in OVERRIDDEN_BY_BLOCK]


def dotted(node: ast.AST) -> str | None:
    """`a.b.c` for a Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _literal(node: ast.AST) -> Any:
    """A literal value with UNKNOWN wherever the source is not a literal."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Dict):
        result = {}
        for key, value in zip(node.keys, node.values):
            if key is None:
                continue  # **spread: its keys are unknown
            key_value = _literal(key)
            if isinstance(key_value, str):
                result[key_value] = _literal(value)
        return result
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(e) for e in node.elts]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _literal(node.operand)
        return -inner if isinstance(inner, (int, float)) and not isinstance(inner, bool) else UNKNOWN
    if isinstance(node, ast.Call) and dotted(node.func) == "dict" and not node.args:
        return {k.arg: _literal(k.value) for k in node.keywords if k.arg}
    return UNKNOWN


def _always_returns(body: list[ast.stmt]) -> bool:
    """Every path through `body` ends in `return` or `raise`."""
    if not body:
        return False
    last = body[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    if isinstance(last, ast.If):
        return _always_returns(last.body) and _always_returns(last.orelse)
    if isinstance(last, (ast.With, ast.AsyncWith)):
        return _always_returns(last.body)
    return False


class _Reader(Visitor):
    def __init__(self, text: str, tree: ast.Module):
        self.text = text
        self.tree = tree
        self.scopes: list[str] = ["<module>"]
        # (scope, name) -> [(line, value node or None when unknowable)]
        self.assignments: dict[tuple[str, str], list[tuple[int, ast.AST | None]]] = {}
        self.functions: set[str] = set()
        self.deepspeed_modules: set[str] = set()
        # names and module aliases that transformers' own TrainingArguments classes are imported as
        self.transformers_names: set[str] = set()
        self.transformers_modules: set[str] = set()
        self.initialize_names: set[str] = set()
        self.calls: list[tuple[ast.Call, str]] = []
        # names whose dict value is changed in place (`cfg["optimizer"] = ...`, `cfg.update(...)`)
        self.mutated: set[str] = set()
        self.classes: list[ast.ClassDef] = []
        self.lines: list[str] | None = None
        # argparse destination -> its default (None when several add_argument calls set it)
        self.argparse_defaults: dict[str, ast.AST | None] = {}
        self.parameters: set[tuple[str, str]] = set()  # (scope, name) of function parameters

    # -- pass 1: what is bound where -------------------------------------------------------

    def _bind(self, name: str, line: int, value: ast.AST | None) -> None:
        self.assignments.setdefault((self.scopes[-1], name), []).append((line, value))

    def _bind_target(self, target: ast.AST, line: int, value: ast.AST | None) -> None:
        if isinstance(target, (ast.Subscript, ast.Attribute)):
            base = target
            while isinstance(base, (ast.Subscript, ast.Attribute)):
                base = base.value
            if isinstance(base, ast.Name):
                self.mutated.add(base.id)
        elif isinstance(target, ast.Name):
            self._bind(target.id, line, value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            values = value.elts if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts) \
                else [None] * len(target.elts)
            for element, element_value in zip(target.elts, values):
                self._bind_target(element, line, element_value)
        elif isinstance(target, ast.Starred):
            self._bind_target(target.value, line, None)

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._bind_target(target, node.lineno, node.value)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self._bind_target(node.target, node.lineno, node.value)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._bind_target(node.target, node.lineno, None)
        self.generic_visit(node)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self._bind_target(node.target, node.lineno, node.value)
        self.generic_visit(node)

    def visit_For(self, node: ast.For) -> None:
        self._bind_target(node.target, node.lineno, None)
        self.generic_visit(node)

    visit_AsyncFor = visit_For

    def visit_With(self, node: ast.With) -> None:
        for item in node.items:
            if item.optional_vars is not None:
                self._bind_target(item.optional_vars, node.lineno, item.context_expr)
        self.generic_visit(node)

    visit_AsyncWith = visit_With

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name == "deepspeed":
                self.deepspeed_modules.add(alias.asname or "deepspeed")
            elif alias.name.startswith("deepspeed.") and alias.asname is None:
                self.deepspeed_modules.add("deepspeed")
            if alias.name.split(".")[0] == "transformers":
                self.transformers_modules.add(alias.asname or "transformers")
            self._bind((alias.asname or alias.name).split(".")[0], node.lineno, None)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for alias in node.names:
            if node.module == "deepspeed" and alias.name == "initialize":
                self.initialize_names.add(alias.asname or "initialize")
            if (node.module or "").split(".")[0] == "transformers" and not node.level and \
                    alias.name in TRAINING_ARGUMENTS_CLASSES:
                self.transformers_names.add(alias.asname or alias.name)
            self._bind(alias.asname or alias.name, node.lineno, None)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        if not isinstance(node, ast.Lambda):
            if len(self.scopes) == 1:
                self.functions.add(node.name)
            self._bind(node.name, node.lineno, node)
            for decorator in node.decorator_list:
                self.visit(decorator)
        for default in [*node.args.defaults, *node.args.kw_defaults]:
            if default is not None:
                self.visit(default)
        self.scopes.append(f"{getattr(node, 'name', 'lambda')}@{node.lineno}:{node.col_offset}")
        arguments = node.args
        for arg in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg]:
            if arg is not None:
                self._bind(arg.arg, node.lineno, None)
                self.parameters.add((self.scopes[-1], arg.arg))
        body = node.body if isinstance(node.body, list) else [node.body]
        for statement in body:
            self.visit(statement)
        self.scopes.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._bind(node.name, node.lineno, None)
        self.classes.append(node)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        self.calls.append((node, self.scopes[-1]))
        if isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument":
            keywords = {k.arg: k.value for k in node.keywords if k.arg}
            flags = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            dest = keywords.get("dest")
            name = dest.value if isinstance(dest, ast.Constant) and isinstance(dest.value, str) else next(
                (f.lstrip("-").replace("-", "_") for f in flags if f.startswith("--")),
                flags[0].lstrip("-").replace("-", "_") if flags else None)
            if name and "default" in keywords:
                self.argparse_defaults[name] = keywords["default"] if name not in self.argparse_defaults else None
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in ("update", "setdefault", "pop", "clear", "__setitem__"):
            base = func.value
            while isinstance(base, (ast.Subscript, ast.Attribute)):
                base = base.value
            if isinstance(base, ast.Name):
                self.mutated.add(base.id)
        self.generic_visit(node)

    # -- pass 2: what the interesting calls pass -------------------------------------------

    def facts(self) -> ScriptFacts:
        self.visit(self.tree)
        facts = ScriptFacts()
        for call, scope in self.calls:
            if self._is_initialize(call.func):
                facts.initialize_calls.append(self._initialize(call, scope))
                found = facts.initialize_calls[-1].config
                if found is not None:
                    facts.references.append(ConfigReference("deepspeed", "deepspeed.initialize", found))
            else:
                reference = self._reference(call, scope)
                if reference is not None:
                    facts.references.append(reference)
                trainer = self._trainer(call, scope)
                if trainer is not None:
                    facts.trainers.append(trainer)
                built = (dotted(call.func) or "").rsplit(".", 1)[-1]
                if built.endswith("Trainer") and built[:1].isupper():
                    facts.trainers_built.append((built, call.lineno))
                arguments = self._training_arguments(call, scope, reference)
                if arguments is not None:
                    facts.arguments.append(arguments)
        for node in self.classes:
            facts.references.extend(self._dataclass_default(node))
            facts.overrides.extend(_overrides(node))
        overridden = {o.cls for o in facts.overrides}
        if overridden:
            for call, scope in self.calls:
                if isinstance(call.func, ast.Name) and call.func.id in overridden:
                    facts.built.append(TrainerBuilt(call.func.id, call.lineno, call.col_offset + 1,
                                                    self._arguments_at(call, scope)))
        return facts

    def _is_initialize(self, func: ast.AST) -> bool:
        if isinstance(func, ast.Name):
            return func.id in self.initialize_names
        name = dotted(func)
        if name is None or not name.endswith(".initialize"):
            return False
        return name[: -len(".initialize")] in self.deepspeed_modules

    def _initialize(self, call: ast.Call, scope: str) -> InitializeCall:
        arguments: dict[str, Expr] = {}
        positions: dict[str, tuple[int, int]] = {}
        for name, value in zip(INITIALIZE_PARAMETERS, call.args):
            if isinstance(value, ast.Starred):
                break
            arguments[name] = self.describe(value, scope, call.lineno)
            positions[name] = (value.lineno, value.col_offset + 1)
        star = any(isinstance(a, ast.Starred) for a in call.args)
        for keyword in call.keywords:
            if keyword.arg is None:
                star = True
                continue
            arguments[keyword.arg] = self.describe(keyword.value, scope, call.lineno)
            positions[keyword.arg] = (keyword.lineno, keyword.col_offset + 1)
        return InitializeCall(call.lineno, call.col_offset + 1, arguments, positions, star)

    def _spread(self, node: ast.AST, scope: str, line: int) -> list[ast.keyword] | None:
        """The keywords `**node` passes, as `ast.keyword`s at the places they are written, when
        `node` is (a name bound once, never changed, to) `dict(key=...)` or a `{"key": ...}`
        literal with string keys; None when the source cannot tell."""
        if isinstance(node, ast.Name):
            found = self._lookup(node.id, scope, line)
            if found is None or found[0] is None or not found[1] or node.id in self.mutated:
                return None
            node = found[0]
        if isinstance(node, ast.Call) and dotted(node.func) == "dict" and not node.args \
                and all(k.arg for k in node.keywords):
            return list(node.keywords)
        if isinstance(node, ast.Dict) and all(isinstance(k, ast.Constant) and isinstance(k.value, str)
                                              for k in node.keys):
            return [ast.keyword(arg=k.value, value=v, lineno=k.lineno,  # type: ignore[union-attr]
                                col_offset=k.col_offset)  # type: ignore[union-attr]
                    for k, v in zip(node.keys, node.values)]
        return None

    def _call_keywords(self, call: ast.Call, scope: str) -> tuple[list[ast.keyword], bool]:
        """The call's keywords with each `**spread` the source shows unfolded in place (a later
        keyword wins, as in Python), and whether some `**spread` is left unknown."""
        keywords: list[ast.keyword] = []
        unknown = False
        for keyword in call.keywords:
            if keyword.arg is not None:
                keywords.append(keyword)
                continue
            spread = self._spread(keyword.value, scope, call.lineno)
            if spread is None:
                unknown = True
            else:
                keywords.extend(spread)
        return keywords, unknown

    def _training_arguments(self, call: ast.Call, scope: str,
                            reference: ConfigReference | None) -> ArgumentsCall | None:
        """A `TrainingArguments(...)` call's literal keywords (the one its ds_config reference holds, when
        it names one), `**spread`s the source shows unfolded."""
        callee = dotted(call.func) or ""
        head, _, last = callee.rpartition(".")
        # transformers' own class only: PaddleNLP and repositories have classes of the same name
        if not (callee in self.transformers_names or
                (last in TRAINING_ARGUMENTS_CLASSES and head.split(".")[0] in self.transformers_modules)):
            return None
        if reference is not None and reference.call is not None:
            return reference.call
        unfolded, unknown = self._call_keywords(call, scope)
        return ArgumentsCall(last if last in TRAINING_ARGUMENTS_CLASSES else "TrainingArguments", call.lineno,
                             call.col_offset + 1,
                             {k.arg: self._keyword(k.value, scope, call.lineno) for k in unfolded if k.arg},
                             {k.arg: (k.lineno, k.col_offset + 1) for k in unfolded if k.arg},
                             unknown or bool(call.args))

    def _reference(self, call: ast.Call, scope: str) -> ConfigReference | None:
        callee = dotted(call.func) or ""
        last = callee.rsplit(".", 1)[-1]
        keywords = {k.arg: k.value for k in call.keywords if k.arg}
        if last.endswith(("Arguments", "Config")) and "deepspeed" not in keywords \
                and any(k.arg is None for k in call.keywords):
            unfolded, unknown = self._call_keywords(call, scope)
            if any(k.arg == "deepspeed" for k in unfolded):  # Seq2SeqTrainingArguments(**kwargs)
                keywords = {k.arg: k.value for k in unfolded if k.arg}
                expr = self.describe(keywords["deepspeed"], scope, call.lineno)
                literals = {k.arg: self._keyword(k.value, scope, call.lineno) for k in unfolded if k.arg}
                arguments = ArgumentsCall(last, call.lineno, call.col_offset + 1, literals,
                                          {k.arg: (k.lineno, k.col_offset + 1) for k in unfolded if k.arg},
                                          unknown or bool(call.args))
                return ConfigReference("trainer", last, expr,
                                       expr.kind == "unknown" and self._runtime(keywords["deepspeed"], scope,
                                                                                call.lineno), arguments)
        if last in ("HfDeepSpeedConfig", "HfTrainerDeepSpeedConfig"):
            value = call.args[0] if call.args else keywords.get("config_file_or_dict")
            return ConfigReference("hf", last, self.describe(value, scope, call.lineno)) if value is not None else None
        if last == "DeepSpeedPlugin" and "hf_ds_config" in keywords:
            return ConfigReference("accelerate", last, self.describe(keywords["hf_ds_config"], scope, call.lineno))
        if "deepspeed" in keywords and (last.endswith("Arguments") or last.endswith("Config")):
            expr = self.describe(keywords["deepspeed"], scope, call.lineno)
            arguments = ArgumentsCall(last, call.lineno, call.col_offset + 1,
                                      {k.arg: self._keyword(k.value, scope, call.lineno) for k in call.keywords if k.arg},
                                      {k.arg: (k.lineno, k.col_offset + 1) for k in call.keywords if k.arg},
                                      any(k.arg is None for k in call.keywords) or bool(call.args))
            return ConfigReference("trainer", last, expr,
                                   expr.kind == "unknown" and self._runtime(keywords["deepspeed"], scope, call.lineno),
                                   arguments)
        if last == "add_argument" and call.args and isinstance(call.args[0], ast.Constant) and "default" in keywords:
            flags = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            consumer = next((ARGPARSE_FLAGS[f] for f in flags if f in ARGPARSE_FLAGS), None)
            if consumer is not None:
                return ConfigReference(consumer, f"add_argument({flags[0]!r})",
                                       self.describe(keywords["default"], scope, call.lineno))
        return None

    def _returned(self, function: ast.FunctionDef | ast.AsyncFunctionDef, depth: int) -> Expr:
        """What a function of this file returns, as an Expr of kind "call" when every return is a
        call: `value` the class when all call the same one (None when they differ), its literal
        keywords when there is one return, `certain` False when a path returns something else or
        nothing (an `if` on run-time values choosing between an optimizer and None). Kind
        "unknown" when no return is a call."""
        expr = Expr("unknown", function.name, function.lineno, function.col_offset + 1)
        if depth > 6:
            return expr
        scope = f"{function.name}@{function.lineno}:{function.col_offset}"
        returns: list[ast.Return] = []

        def collect(nodes: list[ast.AST]) -> None:
            for child in nodes:
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                    continue
                if isinstance(child, ast.Return):
                    returns.append(child)
                collect(list(ast.iter_child_nodes(child)))

        collect(function.body)
        built = [self.describe(r.value, scope, r.lineno, depth + 1) if r.value is not None else None for r in returns]
        calls = [b for b in built if b is not None and b.kind == "call"]
        if not calls:
            return expr
        expr.kind = "call"
        classes = {c.value for c in calls}
        expr.value = classes.pop() if len(classes) == 1 else None
        expr.keywords = dict(calls[0].keywords) if len(built) == 1 else {}
        expr.certain = len(calls) == len(built) and all(c.certain for c in calls) and _always_returns(function.body)
        return expr

    def _trainer(self, call: ast.Call, scope: str) -> TrainerCall | None:
        callee = dotted(call.func) or ""
        if not callee.rsplit(".", 1)[-1].endswith("Trainer"):
            return None
        keywords = {k.arg: k for k in call.keywords if k.arg}
        given = keywords.get("optimizers")
        if given is None or not isinstance(given.value, (ast.Tuple, ast.List)) or not given.value.elts:
            return None
        optimizer = self.describe(given.value.elts[0], scope, call.lineno)
        return TrainerCall(callee.rsplit(".", 1)[-1], call.lineno, call.col_offset + 1, optimizer,
                           (given.lineno, given.col_offset + 1), self._arguments_at(call, scope))

    def _arguments_at(self, call: ast.Call, scope: str) -> tuple[int, int] | None:
        """Where the `TrainingArguments(...)`-like call that `args=` is bound to is (None when the
        source does not say: a runtime value, a name bound more than once or mutated)."""
        args = next((k.value for k in call.keywords if k.arg == "args"), None)
        if isinstance(args, ast.Name):
            found = self._lookup(args.id, scope, call.lineno)
            args = found[0] if found is not None and found[1] and args.id not in self.mutated else None
        return (args.lineno, args.col_offset + 1) if isinstance(args, ast.Call) else None

    def _keyword(self, node: ast.AST, scope: str, line: int) -> Any:
        """A keyword argument's literal value (a name bound once to a literal counts), else UNKNOWN."""
        value = _literal(node)
        if value is UNKNOWN and isinstance(node, ast.Name):
            found = self._lookup(node.id, scope, line)
            if found is not None and found[0] is not None and found[1] and node.id not in self.mutated:
                value = _literal(found[0])
        return value

    def _runtime(self, node: ast.AST | None, scope: str, line: int, depth: int = 0) -> bool:
        """A value given when the script runs: an attribute of the parsed arguments or a config
        object (`args.deepspeed`, `self.cfg.ds_config`), a function parameter, `os.environ[...]`,
        `os.getenv(...)`, `sys.argv[...]`, or a name bound to one of these."""
        if node is None or depth > 8:
            return False
        if isinstance(node, ast.Attribute):
            return dotted(node) is not None
        if isinstance(node, ast.Subscript):
            return dotted(node.value) in ("os.environ", "sys.argv", "environ", "argv")
        if isinstance(node, ast.Call):
            return (dotted(node.func) or "") in ("os.getenv", "os.environ.get", "getenv", "environ.get")
        if isinstance(node, ast.IfExp):
            return self._runtime(node.body, scope, line, depth + 1) or self._runtime(node.orelse, scope, line,
                                                                                     depth + 1)
        if isinstance(node, ast.Name):
            found = self._lookup(node.id, scope, line)
            if found is None:
                return False
            value, _ = found
            if value is None:
                return (scope, node.id) in self.parameters
            return self._runtime(value, scope, getattr(value, "lineno", line), depth + 1)
        return False

    def _dataclass_default(self, node: ast.ClassDef) -> list[ConfigReference]:
        """`deepspeed: str = field(default="ds.json")` (or `= "ds.json"`) in a dataclass that
        HfArgumentParser reads or that extends TrainingArguments: the default of `--deepspeed`."""
        decorated = any((dotted(d.func if isinstance(d, ast.Call) else d) or "").rsplit(".", 1)[-1] == "dataclass"
                        for d in node.decorator_list)
        extends = any((dotted(b) or "").endswith(("Arguments", "Config")) for b in node.bases)
        if not (extends or (decorated and "HfArgumentParser" in self.text)):
            return []
        found = []
        defaults: dict[str, Any] = {}
        positions: dict[str, tuple[int, int]] = {}
        for statement in node.body:
            if not (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)
                    and statement.value is not None):
                continue
            value = statement.value
            if isinstance(value, ast.Call) and (dotted(value.func) or "").rsplit(".", 1)[-1] == "field":
                value = next((k.value for k in value.keywords if k.arg == "default"), None)
            if value is None:
                continue
            defaults[statement.target.id] = _literal(value)
            positions[statement.target.id] = (value.lineno, value.col_offset + 1)
            if statement.target.id not in DATACLASS_FIELDS:
                continue
            expr = self.describe(value, "<module>", statement.lineno)
            if expr.kind == "str":
                expr.certain = False  # the command line may give another path
                found.append(ConfigReference(DATACLASS_FIELDS[statement.target.id],
                                             f"{node.name}.{statement.target.id}", expr))
        if any((dotted(b) or "").endswith("TrainingArguments") for b in node.bases):
            # the defaults are the values when the command line does not give them (optim, bf16, ...)
            call = ArgumentsCall(node.name, node.lineno, node.col_offset + 1, defaults, positions, True, True)
            for reference in found:
                if reference.consumer == "trainer":
                    reference.call = call
        return found

    # -- values ----------------------------------------------------------------------------

    def _text(self, node: ast.AST) -> str:
        """The node's source (as ast.get_source_segment, without splitting the file per call)."""
        end_line, end_column = getattr(node, "end_lineno", None), getattr(node, "end_col_offset", None)
        if end_line is None or end_column is None:
            return ""
        if self.lines is None:
            self.lines = self.text.splitlines(keepends=True)
        lines = self.lines[node.lineno - 1:end_line]
        if not lines:
            return ""
        if len(lines) == 1:
            text = lines[0].encode()[node.col_offset:end_column].decode("utf-8", "replace")
        else:
            text = (lines[0].encode()[node.col_offset:].decode("utf-8", "replace") + "".join(lines[1:-1]) +
                    lines[-1].encode()[:end_column].decode("utf-8", "replace"))
        text = " ".join(text.split())
        return text if len(text) <= 80 else text[:77] + "..."

    def _lookup(self, name: str, scope: str, line: int) -> tuple[ast.AST | None, bool] | None:
        """The value node bound to `name` for a use at `line` in `scope`: the last binding on an
        earlier line (a binding on the same line is the call's own result, as in `engine,
        optimizer, _, _ = deepspeed.initialize(optimizer=optimizer)`), else the last one; and
        whether that binding is the only candidate."""
        for where in (scope, "<module>"):
            bound = self.assignments.get((where, name))
            if bound:
                before = [b for b in bound if b[0] < line] or bound
                return before[-1][1], len(before) == 1
        return None

    def describe(self, node: ast.AST, scope: str, line: int, depth: int = 0) -> Expr:
        expr = Expr("unknown", self._text(node), node.lineno, node.col_offset + 1)
        if depth > 8:
            return expr
        if isinstance(node, ast.Constant):
            if node.value is None:
                expr.kind = "none"
            elif isinstance(node.value, str):
                expr.kind, expr.value = "str", node.value
            return expr
        if isinstance(node, ast.Dict) or (isinstance(node, ast.Call) and dotted(node.func) == "dict" and not node.args):
            expr.kind, expr.value = "dict", _literal(node)
            spread = any(k is None for k in node.keys) if isinstance(node, ast.Dict) else \
                any(k.arg is None for k in node.keywords)
            expr.certain = not spread
            return expr
        if isinstance(node, ast.Lambda):
            # DeepSpeed calls a callable optimizer with the parameters (engine.py `_configure_optimizer`)
            expr.kind = "callable"
            if isinstance(node.body, ast.Call):
                inner = self.describe(node.body, scope, line, depth + 1)
                expr.value = inner.value if inner.kind == "call" else dotted(node.body.func)
                expr.keywords = dict(inner.keywords) if inner.kind == "call" else {}
            return expr
        if isinstance(node, ast.Name):
            found = self._lookup(node.id, scope, line)
            if found is None:
                return expr
            value, only = found
            if value is None:
                return expr
            if isinstance(value, (ast.FunctionDef, ast.AsyncFunctionDef)):
                built = self._returned(value, depth)
                expr.kind, expr.value, expr.keywords = "callable", built.value, built.keywords
                return expr
            inner = self.describe(value, scope, value.lineno, depth + 1)
            inner.text, inner.line, inner.column = expr.text, expr.line, expr.column
            inner.bound_at = value.lineno
            inner.certain = inner.certain and only and not (inner.kind == "dict" and node.id in self.mutated) \
                and not (inner.loader is not None and node.id in self.mutated)
            return inner
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.attr in self.argparse_defaults:
            # `args.ds_config` with `parser.add_argument("--ds_config", default="ds.json")`: the default,
            # which the command line may replace
            default = self.argparse_defaults[node.attr]
            if default is not None:
                inner = self.describe(default, "<module>", default.lineno, depth + 1)
                if inner.kind == "str":
                    expr.kind, expr.value, expr.certain = "str", inner.value, False
            return expr
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):  # pathlib: Path("a") / "b"
            left, right = (self.describe(n, scope, line, depth + 1) for n in (node.left, node.right))
            if left.kind == right.kind == "str":
                expr.kind, expr.value = "str", os.path.join(left.value, right.value)
            return expr
        if isinstance(node, ast.Call):
            return self._describe_call(node, expr, scope, line, depth)
        return expr

    def _describe_call(self, node: ast.Call, expr: Expr, scope: str, line: int, depth: int) -> Expr:
        callee = dotted(node.func) or ""
        args = [self.describe(a, scope, line, depth + 1) for a in node.args if not isinstance(a, ast.Starred)]
        if callee in ("os.path.join", "path.join", "osp.join") and args and all(a.kind == "str" for a in args):
            expr.kind, expr.value = "str", os.path.join(*(a.value for a in args))
            return expr
        if callee.rsplit(".", 1)[-1] in ("Path", "PurePath", "str", "abspath", "expanduser", "realpath") and \
                len(args) == 1 and args[0].kind == "str":
            expr.kind, expr.value = "str", args[0].value
            return expr
        if callee in JSON_LOADERS and args:
            source = args[0]
            if source.kind == "call" and source.value in ("open", "io.open") and source.keywords.get("_path"):
                expr.kind, expr.value, expr.loader = "str", source.keywords["_path"], JSON_LOADERS[callee]
                expr.certain = source.certain
            elif source.kind == "str" and callee.endswith(".load"):
                pass  # json.load of a string is an error in the script, not ours to report
            return expr
        if isinstance(node.func, ast.Name):
            found = self._lookup(node.func.id, scope, line)
            if found is not None and isinstance(found[0], (ast.FunctionDef, ast.AsyncFunctionDef)) and found[1]:
                # a helper defined in this file: what it returns (`def build(m): return torch.optim.AdamW(...)`)
                built = self._returned(found[0], depth)
                expr.kind, expr.value, expr.keywords, expr.certain = "call", built.value, built.keywords, built.certain
                if built.kind != "call":
                    expr.kind = "unknown"
                return expr
        expr.kind, expr.value = "call", callee
        expr.keywords = {k.arg: _literal(k.value) for k in node.keywords if k.arg}
        if callee in ("open", "io.open") and args and args[0].kind == "str":
            expr.keywords["_path"] = args[0].value
        if callee.endswith(".read_text") and isinstance(node.func, ast.Attribute):
            inner = self.describe(node.func.value, scope, line, depth + 1)
            if inner.kind == "str":
                expr.keywords["_path"] = inner.value
                expr.value = "open"
        return expr
