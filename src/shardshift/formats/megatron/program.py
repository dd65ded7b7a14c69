"""The program that receives a launch's Megatron flags, and the flags it defines.

A Megatron launch runs an entry script (`pretrain_gpt.py`, `pretrain_yuan.py`, ...). Its parser is
Megatron's `parse_args` (the `megatron/training/arguments.py` or `megatron/arguments.py` the entry
script imports: a vendored fork in the repository wins, as Python puts the script's folder first
on `sys.path`) plus the `extra_args_provider=` the script passes to `pretrain(...)` /
`initialize_megatron(...)`. Both are read here with `ast` (never imported or run) into a
`FlagTable` like the one dumped from upstream Megatron-LM, so that pairing and the flag rules judge
the flags against the program's own parser.

The entry script is looked for next to the launch script, then in each folder above it up to the
top of the checked tree (the folder holding `.git`, else the current directory): the highest
folder in which the path as written exists wins (launch scripts in `examples/` are run from the
repository root). What cannot be found (the entry script, a provider imported from outside the
repository, Megatron-DeepSpeed's arguments.py, a container launch) is an `UnknownContext` of kind
"program": the flag findings that depend on it become infos. Nothing is guessed.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from shardshift.context import UnknownContext
from shardshift.formats.megatron.flags import FlagTable, table
from shardshift.user_code import parse as parse_user_code
from shardshift.user_code import walk as walk_nodes

# Megatron's own argument modules, as a package next to the entry script (newest layout first).
ARGUMENT_MODULES = ("megatron/training/arguments.py", "megatron/arguments.py")
# The functions that build Megatron's parser and take the provider.
ENTRY_CALLS = ("pretrain", "initialize_megatron", "parse_args")
# deepspeed.add_config_arguments (deepspeed/__init__.py _add_core_arguments, 0.19.8)
DEEPSPEED_FLAGS = (
    {"spellings": ["--deepspeed"], "action": "store_true", "type": "bool-flag", "default": False, "nargs": 0},
    {"spellings": ["--deepspeed_config"], "action": "store", "type": "str", "default": None, "nargs": None},
    {"spellings": ["--deepscale"], "action": "store_true", "type": "bool-flag", "default": False, "nargs": 0},
    {"spellings": ["--deepscale_config"], "action": "store", "type": "str", "default": None, "nargs": None},
)
# Calls that may receive the parser without adding flags to it.
_HARMLESS = {"print", "len", "isinstance", "getattr", "hasattr", "setattr", "vars", "id", "type", "str", "repr"}
_SWITCHES = {"store_true": ("bool-flag", 0), "store_false": ("bool-flag", 0), "store_const": ("custom", 0),
             "count": ("int", 0), "help": ("help", 0), "version": ("help", 0)}
HOW = "check the repository that holds {entry} together with this script"


@dataclass
class Program:
    """The program a launch runs and the parser that reads its flags.

    `table` is the parser's flag table; `parser` names it in messages ("Megatron-LM 0.20.0
    (d98e8a64)'s parser", "pretrain_yuan.py's parser (megatron/arguments.py of the repository)");
    `upstream` is True when the table is upstream Megatron-LM's; `unknown` says what could not be
    found (then flag findings are infos)."""

    entry: str
    path: str | None = None
    table: FlagTable = field(default_factory=table)
    parser: str = ""
    upstream: bool = True
    fork: str | None = None
    provider: str | None = None
    unknown: UnknownContext | None = None
    own_parser: bool = False  # the entry parses its own command line: no Megatron, no validate_args

    def __post_init__(self) -> None:
        if not self.parser:
            self.parser = f"{self.table.described}'s parser"


def _unknown(entry: str, what: str, **known: Any) -> Program:
    how = HOW.format(entry=entry or "the entry script")
    return Program(entry, unknown=UnknownContext("program", what, how), **known)


# --- reading Python files ------------------------------------------------------------------------


@lru_cache(maxsize=256)
def _module(path: str, stamp: float) -> ast.Module | None:
    from shardshift.files import read_text

    text = read_text(path, bom=False)  # an entry script of 2 GB is no entry script: not read
    if text is None:
        return None
    try:
        return parse_user_code(text, path)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def module(path: str) -> ast.Module | None:
    """The parsed file (once per run: cached by path and modification time)."""
    try:
        stamp = os.stat(path).st_mtime
    except OSError:
        return None
    return _module(os.path.abspath(path), stamp)


def _functions(tree: ast.Module) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    return {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


_IMPORTS: dict[int, tuple[ast.Module, dict]] = {}


def _imports(tree: ast.Module) -> dict[str, tuple[str, int, str]]:
    """name -> (module, level, original name) for `from module import name` (once per tree)."""
    cached = _IMPORTS.get(id(tree))
    if cached is not None and cached[0] is tree:
        return cached[1]
    out: dict[str, tuple[str, int, str]] = {}
    _IMPORTS[id(tree)] = (tree, out)
    for node in walk_nodes(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                out[alias.asname or alias.name] = (node.module or "", node.level, alias.name)
    return out


def _module_file(name: str, level: int, importer: str, roots: tuple[str, ...]) -> str | None:
    """The file of module `name` imported from `importer`, inside the repository (None: outside)."""
    if level:
        base = os.path.dirname(importer)
        for _ in range(level - 1):
            base = os.path.dirname(base)
        bases = (base,)
    else:
        bases = roots
    rel = name.replace(".", "/")
    for base in bases:
        for candidate in (os.path.join(base, rel + ".py"), os.path.join(base, rel, "__init__.py")):
            if rel and os.path.isfile(candidate):
                return candidate
    return None


class _Reader:
    """The add_argument calls a parser-building function reaches, read statically."""

    def __init__(self, roots: tuple[str, ...]) -> None:
        self.roots = roots
        self.flags: list[dict] = []
        self.missing: list[str] = []  # what could not be read ("add_args from other_pkg")
        self.seen: set[tuple[str, str]] = set()

    def function(self, path: str, name: str, skip: tuple[str, ...] = ()) -> bool:
        """Read function `name` of the file at `path`; False when it is not there."""
        tree = module(path)
        if tree is None:
            return False
        functions = _functions(tree)
        if name in functions:
            if (path, name) not in self.seen:
                self.seen.add((path, name))
                self.body(path, tree, functions[name], skip)
            return True
        imported = _imports(tree).get(name)
        if imported is not None:
            return self.imported(path, imported, name)
        return False

    def imported(self, path: str, imported: tuple[str, int, str], shown: str) -> bool:
        module_name, level, original = imported
        target = _module_file(module_name, level, path, self.roots)
        if target is None:
            self.missing.append(f"{shown} (imported from {'.' * level}{module_name}, which is not in the checked tree)")
            return True
        if not self.function(target, original):
            self.missing.append(f"{shown} (not found in {os.path.basename(target)})")
        return True

    def callable(self, path: str, tree: ast.Module, node: ast.expr, skip: tuple[str, ...] = ()) -> None:
        """A provider as written: a name, a lambda, functools.partial(f, ...), `f if c else None`."""
        if isinstance(node, ast.Constant) and node.value is None:
            return
        if isinstance(node, ast.Name):
            if not self.function(path, node.id):
                self.missing.append(f"{node.id} (not defined in {os.path.basename(path)})")
            return
        if isinstance(node, ast.Lambda):
            self.calls(path, tree, node.body, {a.arg for a in node.args.args}, skip)
            return
        if isinstance(node, ast.Call) and _name(node.func) in ("partial", "functools.partial") and node.args:
            self.callable(path, tree, node.args[0], skip)
            return
        if isinstance(node, ast.IfExp):  # both branches: the flags of either may be accepted
            self.callable(path, tree, node.body, skip)
            self.callable(path, tree, node.orelse, skip)
            return
        self.missing.append(f"{ast.unparse(node)} (not a function shardshift can follow)")

    def body(self, path: str, tree: ast.Module, function: ast.AST, skip: tuple[str, ...]) -> None:
        params = {a.arg for a in function.args.args} if hasattr(function, "args") else set()
        self.calls(path, tree, function, params, skip)

    def calls(self, path: str, tree: ast.Module, node: ast.AST, parsers: set[str], skip: tuple[str, ...]) -> None:
        nodes = [sub for sub in walk_nodes(node) if isinstance(sub, (ast.Call, ast.Assign))]
        parsers = set(parsers) | _parser_names(nodes)
        functions = _functions(tree)
        for sub in nodes:
            if not isinstance(sub, ast.Call):
                continue
            name = _name(sub.func)
            if name.endswith(".add_argument"):
                self.add_argument(sub, path)
                continue
            if name.endswith("add_config_arguments") and name.startswith("deepspeed"):
                self.flags.extend(_entry(dict(d)) for d in DEEPSPEED_FLAGS)
                continue
            passes_parser = any(isinstance(a, ast.Name) and a.id in parsers
                                 for a in [*sub.args, *(k.value for k in sub.keywords)])
            if not passes_parser or name in _HARMLESS or name in skip:
                continue
            if "." in name or not name:
                # a method or module function handed the parser (`factory.build_group(parser)`, which adds a
                # dataclass's fields as flags; `other_module.add_args(parser)`): not followed, so the flags it
                # adds are unknown. A method of the parser itself is not handed it.
                if name.split(".", 1)[0] not in parsers:
                    self.missing.append(f"{ast.unparse(sub.func)[:60]} (called with the parser at "
                                        f"{os.path.basename(path)}:{sub.lineno}; shardshift does not follow it)")
                continue
            if name in functions:
                if (path, name) not in self.seen:
                    self.seen.add((path, name))
                    self.body(path, tree, functions[name], skip)
                continue
            imported = _imports(tree).get(name)
            if imported is not None:
                self.imported(path, imported, name)
            elif name not in parsers:
                self.missing.append(f"{name} (called with the parser, not defined in {os.path.basename(path)})")

    def add_argument(self, call: ast.Call, path: str) -> None:
        spellings = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        if not spellings or len(spellings) != len(call.args) or any(k.arg is None for k in call.keywords):
            self.missing.append(f"an add_argument call at {os.path.basename(path)}:{call.lineno} "
                                f"({ast.unparse(call)[:60]})")
            if not spellings:
                return
        keywords = {k.arg: k.value for k in call.keywords if k.arg}
        raw = {"spellings": spellings}
        for key in ("default", "choices", "nargs", "const", "dest", "help"):
            if key in keywords:
                try:
                    raw[key] = ast.literal_eval(keywords[key])
                except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                    raw[key] = _OPAQUE
        action = keywords.get("action")
        if action is None:
            raw["action"] = "store"
        elif isinstance(action, ast.Constant) and isinstance(action.value, str):
            raw["action"] = action.value
        elif _name(action).endswith("BooleanOptionalAction"):
            raw["action"] = "boolean_optional"
        else:
            raw["action"] = "custom"
        kind = keywords.get("type")
        raw["type"] = "str" if kind is None else _name(kind) if _name(kind) in ("int", "float", "str") else "custom"
        self.flags.append(_entry(raw))


_OPAQUE = object()


def _parser_names(nodes: list) -> set[str]:
    """Names bound to a parser or an argument group by the assignments among `nodes`."""
    names = set()
    for sub in nodes:
        if isinstance(sub, ast.Assign) and isinstance(sub.value, ast.Call) and \
                _name(sub.value.func).endswith(("add_argument_group", "ArgumentParser", "add_mutually_exclusive_group")):
            names.update(t.id for t in sub.targets if isinstance(t, ast.Name))
    return names


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _name(node.value)
        return f"{base}.{node.attr}" if base else node.attr
    return ""


def _entry(raw: dict) -> dict:
    """A flags.json-shaped entry from what an add_argument call says."""
    spellings = list(raw["spellings"])
    action = raw.get("action", "store")
    kind, nargs = _SWITCHES.get(action, (raw.get("type", "str"), raw.get("nargs")))
    if action == "boolean_optional":
        kind, nargs = "bool-flag", 0
        spellings += ["--no-" + s[2:] for s in spellings if s.startswith("--")]
    if nargs is _OPAQUE:
        nargs = "*"  # any count: the words are not judged
    choices = raw.get("choices")
    if choices is _OPAQUE or not isinstance(choices, (list, tuple, set, frozenset, type(None))):
        choices = None
    if action in ("custom", "append") and kind not in ("int", "float"):
        kind = "custom" if action == "custom" else kind
    dest = raw.get("dest")
    if not isinstance(dest, str):
        long = next((s for s in spellings if s.startswith("--")), spellings[0])
        dest = long.lstrip("-").replace("-", "_")
    default = raw.get("default")
    return {"spellings": spellings, "dest": dest, "action": action, "type": kind,
            "default": None if default is _OPAQUE else default,
            "const": None if raw.get("const") is _OPAQUE else raw.get("const"),
            "choices": list(choices) if choices is not None else None, "nargs": nargs,
            "deprecated": False, "deprecation": [], "help": raw.get("help") if isinstance(raw.get("help"), str) else "",
            "group": ""}


@lru_cache(maxsize=64)
def _fork(path: str, stamp: float) -> tuple[tuple[dict, ...], tuple[str, ...]]:
    """The flags a vendored Megatron arguments module's parse_args defines, and what it could not read."""
    roots = (os.path.dirname(os.path.dirname(os.path.dirname(path))),
             os.path.dirname(os.path.dirname(path)))
    reader = _Reader(roots)
    if not reader.function(path, "parse_args", skip=("extra_args_provider",)):
        return (), ("parse_args (not defined in it)",)
    return tuple(reader.flags), tuple(reader.missing)


# --- finding the program -------------------------------------------------------------------------


def _top(start: str) -> str:
    """The top of the checked tree above `start`: the folder holding `.git`, else the current
    directory when `start` is inside it, else the filesystem root."""
    cwd = os.path.abspath(os.getcwd())
    folder = start
    while True:
        if os.path.exists(os.path.join(folder, ".git")) or folder == cwd:
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return folder
        folder = parent


def locate(script_path: str, entry: str) -> str | None:
    """The entry script as the launch names it, looked for from the highest folder of the checked
    tree down to the launch script's own folder."""
    here = os.path.dirname(os.path.abspath(script_path))
    top = _top(here)
    if os.path.isabs(entry):  # a file outside the checked tree is not read (issue 31): not in the tree
        from shardshift.files import inside

        return entry if inside(entry, (top,)) and os.path.isfile(entry) else None
    folders = [here]
    while folders[-1] != top and os.path.dirname(folders[-1]) != folders[-1]:
        folders.append(os.path.dirname(folders[-1]))
    for folder in reversed(folders):
        candidate = os.path.normpath(os.path.join(folder, entry))
        if os.path.isfile(candidate):
            return candidate
    return None


def _shown(path: str, base: str) -> str:
    try:
        return os.path.relpath(path, base)
    except ValueError:
        return path


def find(script_path: str | None, launch: Any, dialect: str, megatron_entry: bool) -> Program:
    """The program that `launch` (a shell_launch.Launch) of the script at `script_path` runs."""
    from shardshift.plan import Unknown

    written = launch.script if isinstance(launch.script, str) else None
    entry = written or (launch.script_name if isinstance(launch.script_name, str) else "")
    name = os.path.basename(entry)
    if not name.endswith(".py"):
        what = (f"this launch runs {name!r}, not a Python entry script, so the program that reads the flags "
                f"(and its parser) is not known" if name else
                "the entry script of this launch is decided at run time, so its parser is not known")
        how = ("check the entry script's repository with a launch that names it (torchrun / python ... "
               "pretrain_*.py), or with the flags in an argument file (*.args)")
        return Program(name or "the entry script", unknown=UnknownContext("program", what, how))
    path = locate(script_path, written) if written and script_path else None
    if path is None and script_path and isinstance(launch.script, Unknown):
        path = locate(script_path, name)  # the folder is decided at run time: the name alone
        tail = getattr(launch, "script_tail", None)
        if path is None and tail:
            path = _by_tail(script_path, tail)
    deepspeed = dialect != "megatron-lm"
    if path is None:
        # a name is not evidence: Megatron-LM's own `pretrain_gpt.py` absent from the tree may be a
        # fork's (a submodule not checked out, a clone by an install script)
        what = f"{name} is not in the checked tree, so the flags its parser defines are unknown"
        if megatron_entry and not deepspeed:
            what = (f"{entry} is not in the checked tree: the program that reads the flags may be upstream "
                    "Megatron-LM's or a fork's, so its parser is unknown")
        elsewhere = _where_from(script_path, written or name)
        if elsewhere:
            what += f" ({elsewhere})"
        if deepspeed:
            what = (f"{name} (Megatron-DeepSpeed: --deepspeed / the deepspeed launcher) is not in the checked tree, "
                    "so its parser (Megatron-DeepSpeed's megatron/arguments.py) is unknown")
        return _unknown(name, what)
    return _read_program(script_path, name, path, launch, deepspeed)


def _where_from(script_path: str | None, entry: str) -> str:
    """Where an absent entry script comes from, as the repository says: a git submodule that is not
    checked out (the nearest `.gitmodules`). (A fork an install script clones is the release's
    premise: context/releases.py.)"""
    if not script_path:
        return ""
    folder = os.path.dirname(os.path.abspath(script_path))
    top = _top(folder)
    text = ""
    while True:  # the nearest .gitmodules from the script's folder up to the top of the tree
        try:
            with open(os.path.join(folder, ".gitmodules"), encoding="utf-8", errors="replace") as handle:
                text = handle.read(200_000)
            break
        except OSError:
            pass
        if folder == top or os.path.dirname(folder) == folder:
            break
        folder = os.path.dirname(folder)
    parts = [p for p in entry.replace("\\", "/").split("/") if p not in ("", ".", "..")]
    block_path = block_url = None
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("[submodule"):
            block_path = block_url = None
        elif stripped.startswith("path") and "=" in stripped:
            block_path = (stripped.split("=", 1)[1].strip().strip("/"), number)
        elif stripped.startswith("url") and "=" in stripped:
            block_url = stripped.split("=", 1)[1].strip()
        if block_path and block_url:
            sub = block_path[0].split("/")
            if parts[:len(sub)] == sub or (len(parts) == 1 and "megatron" in block_path[0].lower()):
                return f"the git submodule {block_path[0]} (.gitmodules:{block_path[1]}, {block_url}) is not checked out"
            block_path = block_url = None
    return ""


def _by_tail(script_path: str, tail: str) -> str | None:
    """The one Python file of the repository whose path ends with `tail` (folders and file name,
    `pkg/train/pretrain.py` of `${ROOT}/pkg/train/pretrain.py`, the start known only at run time)."""
    from shardshift.context.repository import _index

    found = [f for f in _index(script_path, ()).find(tail.replace("\\", "/").lstrip("./")) if f.endswith(".py")]
    return found[0] if len(found) == 1 else None


def _vendored_arguments(folder: str) -> str | None:
    """The arguments module of a vendored Megatron beside the entry script, or in a folder above it
    up to the top of the tree (`tasks/main.py` and `tools/x/main.py` put the repository's root on
    `sys.path` and import the `megatron` package kept there)."""
    top = _top(folder)
    while True:
        for module in ARGUMENT_MODULES:
            candidate = os.path.join(folder, module)
            if os.path.isfile(candidate):
                return candidate
        if folder == top or os.path.dirname(folder) == folder:
            return None
        folder = os.path.dirname(folder)


_ARGUMENT_MODULE = re.compile(r"^megatron(\.training)?\.arguments(\.|$)")
_ARGUMENT_ATTRIBUTE = re.compile(r"^megatron(\.training)?\.arguments\.\w")  # a name inside it, as a patch names it
MAX_PATCH_MODULES = 200  # repository modules searched for patches of Megatron's argument code, per entry


def _argument_patch(path: str, roots: tuple[str, ...]) -> str | None:
    """Cached per entry (and its modification time): a tree's launch scripts share a few entries."""
    try:
        stamp = os.stat(path).st_mtime
    except OSError:
        return None
    return _argument_patch_of(os.path.abspath(path), roots, stamp)


@lru_cache(maxsize=256)
def _argument_patch_of(path: str, roots: tuple[str, ...], stamp: float) -> str | None:
    """`file:line` where the entry, or a repository module it imports (transitively), replaces part of Megatron's
    argument code: an assignment to an attribute of `megatron[.training].arguments` (through any name it is bound
    to), `setattr` on it, or a string naming a function or value inside it handed to a call or a subscript (a
    patch registry: `register("megatron.training.arguments.parse_args", ...)`). An adaptor package does this to add
    its own flags to `parse_args`; the flags are then not upstream's or the fork's."""
    queue, seen = [path], {os.path.abspath(path)}

    def follow(target: str | None) -> None:
        if target and os.path.abspath(target) not in seen and len(seen) < MAX_PATCH_MODULES:
            seen.add(os.path.abspath(target))
            queue.append(target)

    while queue:
        current = queue.pop(0)
        tree = module(current)
        if tree is None:
            continue
        bound: set[str] = set()  # names bound to the argument module in this file
        for node in walk_nodes(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if _ARGUMENT_MODULE.match(alias.name):
                        bound.add(alias.asname or alias.name)
                    if not alias.name.startswith("megatron"):
                        follow(_module_file(alias.name, 0, current, roots))
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                for alias in node.names:
                    if not node.level and _ARGUMENT_MODULE.match(f"{base}.{alias.name}"):
                        bound.add(alias.asname or alias.name)
                if not node.level and base.startswith("megatron"):
                    continue
                for name in (base, *(f"{base}.{a.name}" if base else a.name for a in node.names)):
                    follow(_module_file(name, node.level, current, roots))
        for node in walk_nodes(tree):
            hit = None
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Attribute):
                        dotted = _name(target.value)
                        if dotted in bound or _ARGUMENT_MODULE.match(dotted + "."):
                            hit = node
            elif isinstance(node, ast.Call) and _name(node.func) == "setattr" and node.args:
                dotted = _name(node.args[0])
                if dotted in bound or _ARGUMENT_MODULE.match(dotted + "."):
                    hit = node
            if hit is None and isinstance(node, (ast.Call, ast.Subscript)):
                values = [*node.args, *(k.value for k in node.keywords)] if isinstance(node, ast.Call) else [node.slice]
                if any(isinstance(v, ast.Constant) and isinstance(v.value, str) and _ARGUMENT_ATTRIBUTE.match(v.value)
                       for v in values):
                    hit = node
            if hit is not None:
                return f"{os.path.relpath(current, os.path.dirname(path))}:{hit.lineno}"
    return None


def _read_program(script_path: str, name: str, path: str, launch: Any, deepspeed: bool) -> Program:
    folder = os.path.dirname(path)
    shown = _shown(path, os.path.dirname(os.path.abspath(script_path)))
    tree = module(path)
    if tree is None:
        return _unknown(name, f"{shown} cannot be parsed as Python, so its parser is unknown")
    fork = _vendored_arguments(folder)
    missing: list[str] = []
    flags: list[dict] = []
    parser_text = ""
    if fork is None and not any(isinstance(n, ast.Call) and _name(n.func).rsplit(".", 1)[-1] in ENTRY_CALLS
                                for n in walk_nodes(tree)):
        own = _own_parser(path, tree, (folder, _top(folder)))
        if own is not None:
            return own
    if fork is None:
        pythonpath = launch.variables.get("PYTHONPATH") if isinstance(launch.variables, dict) else None
        if pythonpath is not None:
            return _unknown(name, f"no megatron package is next to {shown} and the script sets PYTHONPATH, so the "
                                  "Megatron that parses the flags is not known", path=path)
        if deepspeed:
            return _unknown(name, f"{shown} runs Megatron-DeepSpeed (--deepspeed / the deepspeed launcher), whose "
                                  "megatron/arguments.py is not next to it in the checked tree", path=path)
    else:
        fork_flags, fork_missing = _fork(os.path.abspath(fork), os.stat(fork).st_mtime)
        flags += [dict(f) for f in fork_flags]
        missing += [f"{m} in {ARGUMENT_MODULES[0] if 'training' in fork else ARGUMENT_MODULES[1]}" for m in fork_missing]
        parser_text = f"{name}'s parser ({_shown(fork, folder)} of the repository)"
    # the provider the entry script passes
    reader = _Reader((folder,))
    # the calls that build the parser, and any other call that hands it a provider
    # (parse_and_validate_args(extra_args_provider=...) in Megatron-LM's own multimodal entries)
    calls = [n for n in walk_nodes(tree) if isinstance(n, ast.Call) and (
        _name(n.func).rsplit(".", 1)[-1] in ENTRY_CALLS or any(k.arg == "extra_args_provider" for k in n.keywords))]
    provider = None
    if not calls:
        missing.append(f"the call that builds the parser ({name} calls none of pretrain(), initialize_megatron(), "
                       "parse_args())")
    for call in calls:
        node = next((k.value for k in call.keywords if k.arg == "extra_args_provider"), None)
        if node is None and _name(call.func).endswith("initialize_megatron") and call.args:
            node = call.args[0]
        if node is None and any(k.arg is None for k in call.keywords):
            missing.append(f"the keyword arguments of {_name(call.func)}() at line {call.lineno}")
        if node is not None and not (isinstance(node, ast.Constant) and node.value is None):
            provider = ast.unparse(node)
            reader.callable(path, tree, node)
    flags += reader.flags
    missing += reader.missing
    if fork is None:
        base = table()
        data = {"megatron_commit": base.commit, "megatron_core_version": base.version,
                "flags": [_as_json(f) for f in base.flags] + flags}
        upstream = not reader.flags
        parser_text = f"{base.described}'s parser" + (f" with {name}'s extra_args_provider {provider}" if provider
                                                       else "")
    else:
        data = {"flags": flags}
        upstream = False
    program = Program(name, path=path, table=FlagTable(data), parser=parser_text, upstream=upstream,
                      fork=fork, provider=provider)
    patched = _argument_patch(path, (folder, _top(folder)))
    if patched is not None:
        program.unknown = UnknownContext(
            "program", f"{patched} replaces part of Megatron's argument code, so the flags {name}'s parser accepts "
            "and the checks it makes are unknown", HOW.format(entry=name) + " (with the modules it imports)")
        return program
    if missing:
        program.unknown = UnknownContext(
            "program", f"part of {name}'s parser could not be read: " + "; ".join(missing[:3]) +
            (f" and {len(missing) - 3} more" if len(missing) > 3 else ""), HOW.format(entry=name) +
            " (with the modules it imports)")
    return program


def _own_parser(path: str, tree: ast.Module, roots: tuple[str, ...]) -> Program | None:
    """The program of an entry that builds its own argparse parser, in a function it calls that
    is defined in it or imported from a module of the repository (`from pkg.options import collect`),
    whatever that module is named: its flags are the ones that function adds."""
    name = os.path.basename(path)
    functions = _functions(tree)
    imports = _imports(tree)
    called = [n.func.id for n in walk_nodes(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
    for function in dict.fromkeys(called):
        if function in functions:
            where, body = path, functions[function]
        elif function in imports:
            module_name, level, original = imports[function]
            where = _module_file(module_name, level, path, roots)
            target = module(where) if where else None
            body = _functions(target).get(original) if target is not None else None
            function = original
        else:
            continue
        if body is None or not any(isinstance(n, ast.Call) and _name(n.func).endswith("ArgumentParser")
                                   for n in walk_nodes(body)):
            continue
        reader = _Reader(roots)
        reader.function(where, function)
        shown = os.path.relpath(where, os.path.dirname(path))
        program = Program(name, path=path, table=FlagTable({"flags": reader.flags}), upstream=False,
                          parser=f"the repository's own parser ({function}() in {shown})", provider=function,
                          own_parser=True)
        if reader.missing:
            program.unknown = UnknownContext(
                "program", f"part of {name}'s own parser could not be read: " + "; ".join(reader.missing[:3]),
                HOW.format(entry=name) + " (with the modules it imports)")
        return program
    return None


def _as_json(flag) -> dict:
    return {s: getattr(flag, s) for s in flag.__slots__}


def fork_checks(program: Program) -> UnknownContext:
    """Why a check restated from Megatron-LM's validate_args is only an info on a launch of a
    vendored fork: the fork's own validate_args is not read (forks clamp, skip or add checks)."""
    fork = (program.fork or "").replace("\\", "/")
    where = "megatron/training/arguments.py" if fork.endswith("megatron/training/arguments.py") else \
        "megatron/arguments.py"
    return UnknownContext(
        "program", f"{program.entry} runs a vendored Megatron ({where}) whose own checks (validate_args) "
                   "shardshift does not read; this is Megatron-LM's check",
        f"compare with validate_args in the fork's {where}")


_VALIDATE = re.compile(r"(?m)^def validate_args\b")
_WORLD_DIVIDES = re.compile(r"\bworld_size\s*%")
_RESETS_DEGREES = re.compile(r"\bargs\.(?:tensor|pipeline|context)_model_parallel_size\s*=[^=]")


def fork_checks_world(program: Program) -> tuple[str, int] | None:
    """Where the vendored fork's own validate_args tests that the world size divides by the parallel
    degrees (`world_size % ...`) as they were given, as (file, line), or None (no such test, or the
    fork sets the degrees anew before it: a fork that clamps them fails, if at all, elsewhere)."""
    from shardshift.files import read_text

    text = read_text(program.fork, 2_000_000, bom=False) if program.fork else None
    if text is None:
        return None
    start = _VALIDATE.search(text)
    if start is None:
        return None
    end = re.compile(r"(?m)^(?:def|class)\s").search(text, start.end())
    body = text[start.start():end.start() if end else len(text)]
    found = _WORLD_DIVIDES.search(body)
    if found is None:
        return None
    if _RESETS_DEGREES.search(body, 0, found.start()):
        return None  # the fork changes the degrees first (clamps them): its test is not upstream's
    return program.fork, text.count("\n", 0, start.start() + found.start()) + 1


def fork_of(documents) -> Program | None:
    """The program of the first Megatron launch among `documents` that runs a vendored fork."""
    for document in documents:
        program = getattr(document.data, "program", None) if document.format == "megatron" else None
        if program is not None and program.fork is not None and program.unknown is None:
            return program
    return None
