"""The check sites reachable from the entry a user runs, found by call graph (issue 33's denominator).

The coverage map (sites.py, src/shardshift/data/coverage/) counts the sites of files and functions
chosen by hand for each framework. This script finds the denominator another way: from the
functions a run enters (ENTRIES below, up to the first optimizer step), it follows calls through
the framework's source, read with `ast` and never imported, and lists every `raise` and `assert`
in the functions it reaches. It then says how many of them the map holds.

How calls are resolved, by name (an over-approximation where a name is ambiguous, and blind to
calls through variables, decorators and getattr):

- `f(...)`: a function `f` of the same module, or the one the module imports as `f`;
- `C(...)`: the class's `__init__` and `__post_init__` (its own or its bases' by name);
- `self.m(...)` / `cls.m(...)`: method `m` of the class or of a base class (by name, in the package);
- `x.m(...)`: every method `m` in the package when at most MAX_CANDIDATES classes define it
  (a more common name, `get` or `update`, is counted as unresolved rather than followed);
- a name no import resolves (a lazy re-export): the package's one module-level function of that name;
- a pydantic model built (`C(...)`, `C.model_validate(...)`, or handed to a call: `make(C, data)`):
  its and its bases' validators;
- a method handed to a call (`run(self._loop)`): called there.

Sites in functions the map's scope left out are "not in the map": undecided, not uncovered.

    python scripts/coverage/callgraph.py                 # the table, every framework with an entry
    python scripts/coverage/callgraph.py accelerate -v   # and the reachable sites the map lacks
    python scripts/coverage/callgraph.py --write         # the record `shardshift rules --coverage` prints
"""

from __future__ import annotations

import ast
import sys
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from sites import Site, root_of, scope, sites_in  # noqa: E402

MAX_CANDIDATES = 3
# folders not indexed: the model zoo (a model's own code runs on the model, not on the configuration),
# torchtitan's experiments (no part of the release's supported surface; their `Trainer` methods
# were reached only because calls resolve by name), and Megatron's inference engine and legacy models
# (text generation and the pre-core models: `pretrain` runs neither, they were reached by name only)
SKIPPED = ("transformers/models/", "torchtitan/experiments/", "megatron/core/inference/", "megatron/legacy/")
MAX_DEPTH = 8

# framework -> (package folder inside the distribution, the functions a run enters: file, qualname)
ENTRIES: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {
    # accelerate launch --config_file FILE train.py, then Accelerator(...) and prepare in each process
    "accelerate": ("accelerate", (("accelerate/commands/launch.py", "launch_command"),
                                  ("accelerate/accelerator.py", "Accelerator.__init__"),
                                  ("accelerate/accelerator.py", "Accelerator.prepare"))),
    # deepspeed.initialize, then the engine's forward, backward and step
    "deepspeed": ("deepspeed", (("deepspeed/__init__.py", "initialize"),
                                ("deepspeed/runtime/engine.py", "DeepSpeedEngine.forward"),
                                ("deepspeed/runtime/engine.py", "DeepSpeedEngine.backward"),
                                ("deepspeed/runtime/engine.py", "DeepSpeedEngine.step"))),
    # the Trainer's arguments, the Trainer and its train() set-up (the integrations it calls)
    "transformers": ("transformers", (("transformers/training_args.py", "TrainingArguments.__post_init__"),
                                      ("transformers/trainer.py", "Trainer.__init__"),
                                      ("transformers/trainer.py", "Trainer.train"))),
    # `axolotl train X.yaml`: the config loaded and validated, then training
    "axolotl": ("axolotl", (("axolotl/cli/config.py", "load_cfg"), ("axolotl/cli/train.py", "do_cli"),
                            ("axolotl/cli/train.py", "do_train"))),
    # torchtitan's Trainer (the config manager's result) and its first train_step
    "torchtitan": ("torchtitan", (("torchtitan/train.py", "Trainer.__init__"), ("torchtitan/train.py", "Trainer.train"),
                                  ("torchtitan/train.py", "Trainer.train_step"))),
    # the mesh, fully_shard (and the `contract` decorator's wrapper around it), then the first
    # forward and backward (the hooks the state registers)
    "fsdp2": ("torch/distributed", (
        ("torch/distributed/device_mesh.py", "init_device_mesh"),
        ("torch/distributed/_composable/contract.py", "contract.inner.wrapper"),
        ("torch/distributed/fsdp/_fully_shard/_fully_shard.py", "fully_shard"),
        ("torch/distributed/fsdp/_fully_shard/_fsdp_state.py", "FSDPState._pre_forward"),
        ("torch/distributed/fsdp/_fully_shard/_fsdp_state.py", "FSDPState._post_forward"),
        ("torch/distributed/fsdp/_fully_shard/_fsdp_state.py", "FSDPState._pre_backward"),
        ("torch/distributed/fsdp/_fully_shard/_fsdp_state.py", "FSDPState._root_post_backward_final_callback"))),
    # pretrain_gpt.py's `pretrain`: arguments, the process groups, model, optimizer and data, then training; and
    # what it reaches through names the call graph does not follow: `mpu.initialize_model_parallel` (a module
    # alias, in `_initialize_distributed`) and `set_global_variables` (the microbatch calculator, after the
    # arguments are validated)
    "megatron": ("megatron", (("megatron/training/training.py", "pretrain"),
                              ("megatron/core/parallel_state.py", "initialize_model_parallel"),
                              ("megatron/training/global_vars.py", "set_global_variables"))),
}


@dataclass
class Function:
    file: str
    qualname: str
    node: ast.AST
    cls: str | None  # the class it is a method of
    imports: dict[str, str] = field(default_factory=dict)  # local name -> module path of the file it comes from


class Package:
    """Every function and class of a package's source, by file and name."""

    def __init__(self, root: Path, package: str) -> None:
        self.root = root
        self.functions: dict[tuple[str, str], Function] = {}
        self.by_name: dict[str, list[Function]] = {}  # a function's own name -> its definitions
        self.bases: dict[str, list[str]] = {}  # class name -> base class names
        self.file_imports: dict[str, dict[str, str]] = {}
        self.validating: dict[str, list[Function]] = {}  # class name -> its pydantic validators
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            if any(relative.startswith(skipped) for skipped in SKIPPED):
                continue
            try:
                tree = ast.parse(path.read_text(encoding="utf-8"))
            except (SyntaxError, UnicodeDecodeError):
                continue
            imports = _imports(tree, relative)
            self.file_imports[relative] = imports
            self._collect(tree.body, relative, [], None, imports)

    def _collect(self, body, relative: str, stack: list[str], cls: str | None, imports: dict[str, str]) -> None:
        for node in body:
            if isinstance(node, (ast.If, ast.Try)):  # definitions under `if TYPE_CHECKING` / `try: ... except`
                blocks = [node.body, node.orelse, *(getattr(node, "finalbody", []),),
                          *(h.body for h in getattr(node, "handlers", []))]
                for block in blocks:
                    self._collect(block, relative, stack, cls, imports)
            elif isinstance(node, ast.ClassDef):
                self.bases.setdefault(node.name, [_last(b) for b in node.bases])
                self._collect(node.body, relative, [*stack, node.name], node.name, imports)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                qualname = ".".join([*stack, node.name])
                function = Function(relative, qualname, node, cls, imports)
                self.functions[(relative, qualname)] = function
                if cls is not None and any(_last(d.func if isinstance(d, ast.Call) else d).endswith("validator")
                                           for d in node.decorator_list):
                    self.validating.setdefault(cls, []).append(function)
                self.by_name.setdefault(node.name, []).append(function)
                self._collect(node.body, relative, [*stack, node.name], None, imports)

    def imported(self, name: str, module: str, depth: int = 0) -> list[Function]:
        """The function `name` that `from <module> import name` gives: defined in the module (a file or a
        package's __init__), or re-exported by it from another module (followed a few steps)."""
        for file in (module, module[:-len(".py")] + "/__init__.py"):
            own = [f for f in self.by_name.get(name, []) if f.file == file and f.cls is None]
            if own:
                return own
            again = self.file_imports.get(file, {}).get(name)
            if again is not None and depth < 4:
                return self.imported(name, again, depth + 1)
        return []

    def validators(self, cls: str, seen: set[str] | None = None) -> list[Function]:
        """The methods pydantic calls when the class is built (`@model_validator`, `@field_validator`,
        `@validator`, `@root_validator`), the class's own and its bases' (by name)."""
        seen = seen if seen is not None else set()
        if cls in seen:
            return []
        seen.add(cls)
        own = [f for f in self.validating.get(cls, [])]
        return own + [v for base in self.bases.get(cls, []) for v in self.validators(base, seen)]

    def methods(self, cls: str, name: str, seen: set[str] | None = None) -> list[Function]:
        """Method `name` of class `cls` or of its bases (by name)."""
        seen = seen if seen is not None else set()
        if cls in seen:
            return []
        seen.add(cls)
        own = [f for f in self.by_name.get(name, []) if f.cls == cls]
        if own:
            return own
        return [m for base in self.bases.get(cls, []) for m in self.methods(base, name, seen)]

    def callees(self, function: Function) -> tuple[list[Function], int]:
        """The functions a function calls, and how many calls could not be resolved."""
        found: list[Function] = []
        unresolved = 0
        for node in ast.walk(function.node):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            targets: list[Function] = []
            if isinstance(func, ast.Name):
                name = func.id
                same = [f for f in self.by_name.get(name, []) if f.file == function.file and f.cls is None]
                imported = function.imports.get(name)
                if same:
                    targets = same
                elif imported is not None:
                    targets = self.imported(name, imported)
                if not targets and name not in self.bases:  # a lazy re-export (`_LazyModule`): the one definition
                    only = [f for f in self.by_name.get(name, []) if f.cls is None]
                    targets = only if len(only) == 1 else []
                if name in self.bases:  # a class built: its initialisers and validators
                    targets += self.methods(name, "__init__") + self.methods(name, "__post_init__") + \
                        self.validators(name)
            elif isinstance(func, ast.Attribute):
                name = func.attr
                receiver = func.value
                if isinstance(receiver, ast.Name) and receiver.id in ("self", "cls") and function.cls:
                    targets = self.methods(function.cls, name)
                elif isinstance(receiver, ast.Name) and receiver.id in self.bases:
                    targets = self.methods(receiver.id, name)
                    if name.startswith("model_validate") or name == "parse_obj":  # pydantic runs the validators
                        targets += self.validators(receiver.id)
                if not targets:
                    candidates = [f for f in self.by_name.get(name, []) if f.cls is not None]
                    if 0 < len({f.cls for f in candidates}) <= MAX_CANDIDATES:
                        targets = candidates
                    elif candidates:
                        unresolved += 1
            for argument in node.args:  # a class handed to a factory (`build(Model, data)`) is built there
                if isinstance(argument, ast.Name) and argument.id in self.validating:
                    targets += self.methods(argument.id, "__init__") + self.validators(argument.id)
                # a method handed on (`find_executable_batch_size(self._inner_training_loop)`) is called there
                if isinstance(argument, ast.Attribute) and isinstance(argument.value, ast.Name) and \
                        argument.value.id == "self" and function.cls:
                    targets += self.methods(function.cls, argument.attr)
            found.extend(targets)
        return found, unresolved


def _last(node: ast.AST) -> str:
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


def _imports(tree: ast.Module, relative: str) -> dict[str, str]:
    """`from a.b import c` -> {"c": "a/b.py"} (or a/b/__init__.py); relative imports resolved."""
    out: dict[str, str] = {}
    package = relative.rsplit("/", 1)[0].split("/")
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom):
            continue
        base = package[:len(package) - node.level + 1] if node.level else []
        parts = [*base, *(node.module.split(".") if node.module else [])]
        for alias in node.names:
            out[alias.asname or alias.name] = "/".join(parts) + ".py"
    return out


def reachable(framework: str) -> tuple[list[Site], dict[str, int]]:
    """The check sites of the functions reachable from the framework's entries, and the counts."""
    package, entries = ENTRIES[framework]
    root = root_of(scope(framework))
    index = Package(root, package)
    queue = deque()
    seen: set[tuple[str, str]] = set()
    for file, qualname in entries:
        if (file, qualname) in index.functions:
            queue.append((index.functions[(file, qualname)], 0))
            seen.add((file, qualname))
    unresolved = 0
    while queue:
        function, depth = queue.popleft()
        if depth >= MAX_DEPTH:
            continue
        callees, missed = index.callees(function)
        unresolved += missed
        for callee in callees:
            key = (callee.file, callee.qualname)
            if key not in seen:
                seen.add(key)
                queue.append((callee, depth + 1))
    by_file: dict[str, list[str]] = {}
    for file, qualname in seen:
        by_file.setdefault(file, []).append(qualname)
    found: list[Site] = []
    for file, functions in sorted(by_file.items()):
        found.extend(s for s in sites_in(root / file, file, functions) if s.function in functions)
    return found, {"functions": len(seen), "unresolved_calls": unresolved}


def table(frameworks: list[str], verbose: bool = False) -> str:
    sys.path.insert(0, str(HERE.parents[1] / "src"))
    from shardshift import coverage

    lines = ["framework    by hand (map)   by call graph   in the map   not in the map   functions reached"]
    for framework in frameworks:
        mapped = coverage.load(framework)
        found, counts = reachable(framework)
        inside = [s for s in found if s.id in mapped]
        lines.append(f"{framework:<12} {len(mapped):>13}   {len(found):>13}   {len(inside):>10}   "
                     f"{len(found) - len(inside):>14}   {counts['functions']:>17}")
        if verbose:
            lines.extend(f"    {s.id}  {s.line}: {s.text}" for s in found if s.id not in mapped)
    return "\n".join(lines)


RECORD = HERE.parents[1] / "src" / "shardshift" / "data" / "coverage" / "callgraph.tsv"


def rows() -> list[str]:
    """The record `rules --coverage` prints: per framework, the sites the call graph reaches, how
    many of them the map judges, the functions reached and the entries."""
    sys.path.insert(0, str(HERE.parents[1] / "src"))
    from shardshift import coverage

    out = []
    for framework, (_, entries) in ENTRIES.items():
        found, counts = reachable(framework)
        judged = sum(site.id in coverage.load(framework) for site in found)
        names = ", ".join(qualname for _, qualname in entries)
        out.append(f"{framework}\t{len(found)}\t{judged}\t{counts['functions']}\t{names}")
    return out


def main(argv: list[str]) -> int:
    if "--write" in argv:
        header = ("# Written by scripts/coverage/callgraph.py --write (tests/test_coverage_callgraph.py checks it):\n"
                  "# framework, check sites reachable by call graph from the entries, how many the map judges, "
                  "functions reached, entries\n")
        RECORD.write_text(header + "\n".join(rows()) + "\n", encoding="utf-8")
        return 0
    frameworks = [a for a in argv if not a.startswith("-")] or list(ENTRIES)
    print(table(frameworks, "-v" in argv))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
