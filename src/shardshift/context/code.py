"""What the repository's own code does with a config, read from its text (never run): who builds a
ds_config's optimizer (`optimizer_builder`), and which of the project's own commands take TOML files
(`own_toml_command`). Kept apart from `repository` (which every premise of a ds_config loads) since
only the rules that need them load them."""

from __future__ import annotations

import os
import re

from shardshift.context.repository import (
    _TESTS,
    _in_project,
    _Index,
    _index,
    _reader_files,
    _root,
    _script_files,
    _shown,
    project_root,
    read_text,
)

# --- who builds the optimizer: the config's block, or the code's own -----------------------------

MAX_FOLLOWED = 80  # Python files followed through imports from the code that loads a ds_config
_IMPORT = r"(?m)^[ \t]*(?:from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+([\w, \t()]+)|import[ \t]+([\w.]+))"


def _module_files(index: _Index, root: str, module: str, here: str) -> list[str]:
    """The repository's files of a module named in an import (`a.b`, relative `..a`)."""
    dots = len(module) - len(module.lstrip("."))
    name = module.lstrip(".")
    if dots:
        base = os.path.dirname(here)
        for _ in range(dots - 1):
            base = os.path.dirname(base)
        wanted = [os.path.join(base, *name.split(".")) if name else base]
        return [f for w in wanted for f in (w + ".py", os.path.join(w, "__init__.py")) if index.tree.has(f)]
    tail = name.replace(".", "/")
    return [full for candidate in (tail + ".py", tail + "/__init__.py") for full in index.find(candidate)]


def _imports(index: _Index, root: str, file: str, text: str) -> list[str]:
    out = []
    for match in re.finditer(_IMPORT, text):
        module, names, plain = match.group(1), match.group(2), match.group(3)
        if plain:
            out += _module_files(index, root, plain, file)
            continue
        out += _module_files(index, root, module, file)
        for item in re.split(r"[,\s()]+", names or ""):  # `from pkg import training`: a module too
            if item and item != "as":
                out += _module_files(index, root, f"{module}.{item}" if module.strip(".") else module + item, file)
    return out


# (file, length, hash of the text) -> its calls: by content, never stale, and holding no texts
_CALLS: dict[tuple[str, int, int], list[tuple[int, bool]]] = {}


def _initialize_calls(file: str, text: str) -> list[tuple[int, bool]]:
    """(line, passes its own optimizer) of each `deepspeed.initialize(...)` call in `text` (each
    text parsed once: the configs of one tree follow the same modules)."""
    key = (file, len(text), hash(text))
    found = _CALLS.get(key)
    if found is None:
        if len(_CALLS) > 4096:
            _CALLS.clear()
        found = _CALLS[key] = _find_initialize_calls(text)
    return found


def _find_initialize_calls(text: str) -> list[tuple[int, bool]]:
    import ast

    from shardshift.user_code import walk as walk_nodes

    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    aliases = {"deepspeed"}
    direct = set()
    for node in walk_nodes(tree):
        if isinstance(node, ast.Import):
            aliases.update(a.asname for a in node.names if a.name == "deepspeed" and a.asname)
        elif isinstance(node, ast.ImportFrom) and node.module == "deepspeed":
            direct.update(a.asname or a.name for a in node.names if a.name == "initialize")
    calls = []
    for node in walk_nodes(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if not ((isinstance(func, ast.Attribute) and func.attr == "initialize" and isinstance(func.value, ast.Name)
                 and func.value.id in aliases) or (isinstance(func, ast.Name) and func.id in direct)):
            continue
        given = [k.value for k in node.keywords if k.arg == "optimizer"]
        if len(node.args) > 2:  # initialize(args, model, optimizer, ...)
            given.append(node.args[2])
        own = any(not (isinstance(v, ast.Constant) and v.value is None) for v in given)
        calls.append((node.lineno, own))
    return calls


def optimizer_builder(path: str, tops: tuple[str, ...] = ()) -> tuple[str, str, int | str]:
    """Who builds the optimizer of the ds_config at `path`, from the code that may load it
    (`_reader_files`) and the repository modules it imports, else from the whole project:

    - ("code", file, line): the code that loads the file (or a module it imports) passes its own
      optimizer to `deepspeed.initialize`, which DeepSpeed uses instead of the `optimizer` block;
    - ("config", file, line): the `deepspeed.initialize` calls found pass none, so DeepSpeed builds it;
    - ("unsure", file, line): no loader of the file was found, and some code of the project passes
      its own optimizer (the run that uses this file may be that one);
    - ("absent", where, what): the code that would decide is not in the tree (an entry a script runs
      from a submodule, a variable or another tree; a submodule that is not checked out);
    - ("none", "", files searched): no code that may run with it calls `deepspeed.initialize`."""
    root = _root(path, tops)
    index = _index(path, tops)
    queue = list(_reader_files(path, tops))
    seen = set(queue)
    builds: tuple[str, str, int | str] | None = None
    while queue and len(seen) <= MAX_FOLLOWED:
        file = queue.pop(0)
        text = read_text(file)
        if not text:
            continue
        if "initialize" in text:
            for line, own in _initialize_calls(file, text):
                if own:
                    return "code", _shown(file), line
                builds = builds or ("config", _shown(file), line)
        for imported in _imports(index, root, file, text):
            if imported not in seen:
                seen.add(imported)
                queue.append(imported)
    if builds is not None:
        return builds
    # no loader found in the tree: what a missing entry, a missing submodule or the project's other
    # calls say (a name that matches no file is no evidence that nothing passes an optimizer)
    name = os.path.basename(path)
    modules = _submodules(root)
    for script in index.script_mentions.get(name, ()):
        if re.search(_TESTS, os.path.relpath(script, root).replace(os.sep, "/")):
            continue
        for wanted in index.script_runs.get(script, ()):
            present = bool(index.find(wanted.lstrip("/")))
            if not present and any(wanted.lstrip("/").startswith(m + "/") or ("/" + m + "/") in wanted
                                   for m in modules):
                return "absent", _shown(script), wanted
    # the code that may run with the file: Python files in its folder and below, and the entries in
    # the folders above it up to its project's top, with the repository modules they import
    project = project_root(path, tops)
    here = os.path.dirname(os.path.abspath(path))
    above = set()
    folder = here
    while True:
        above.add(folder)
        if folder == project or os.path.dirname(folder) == folder or not folder.startswith(project):
            break
        folder = os.path.dirname(folder)
    queue = [f for f in index.files if (os.path.dirname(f) in above or f.startswith(here + os.sep))
             and _in_project(f, project, root) and not re.search(_TESTS, os.path.relpath(f, root).replace(os.sep, "/"))]
    seen = set(queue)
    calls = []
    while queue and len(seen) <= MAX_FOLLOWED * 4:
        file = queue.pop(0)
        text = read_text(file)
        if not text:
            continue
        if "initialize" in text and "deepspeed" in text:
            calls += [(_shown(file), line, own) for line, own in _initialize_calls(file, text)]
        for imported in _imports(index, root, file, text):
            if imported not in seen:
                seen.add(imported)
                queue.append(imported)
    own = next((c for c in calls if c[2]), None)
    if own is not None:
        return "unsure", own[0], own[1]
    missing = next((m for m in modules if not _checked_out(os.path.join(root, m))), None)
    if missing is not None:
        return "absent", ".gitmodules", missing
    if calls:
        return "config", calls[0][0], calls[0][1]
    return "none", "", len(seen)


def _submodules(root: str) -> list[str]:
    """The paths of the submodules the repository's .gitmodules lists."""
    text = read_text(os.path.join(root, ".gitmodules")) or ""
    return [m.strip().strip("/") for m in re.findall(r"(?m)^\s*path\s*=\s*(.+?)\s*$", text)]


def _checked_out(folder: str) -> bool:
    try:
        return os.path.isdir(folder) and any(True for _ in os.scandir(folder))
    except OSError:
        return False


# --- the project's own commands that take TOML files ------------------------------------------------

_SCRIPTS_TABLE = r"(?ms)^\[(?:project\.scripts|tool\.poetry\.scripts)\][ \t]*\n(.*?)(?=^\[|\Z)"
_SCRIPT_NAME = r"(?m)^[ \t]*[\"']?([A-Za-z0-9][\w.-]*)[\"']?[ \t]*="


def own_toml_command(path: str, tops: tuple[str, ...] = ()) -> tuple[str, int, str] | None:
    """A command line in the TOML's project (a script, README, YAML) that runs one of the project's
    own commands (`[project.scripts]` of its pyproject.toml, or `python -m` one of its packages) with
    a TOML file, as (file, line, command): the project reads such files with a program of its own."""
    root = _root(path, tops)
    project = project_root(path, tops)
    index = _index(path, tops)
    if project in index.toml_commands:
        return index.toml_commands[project]
    commands: list[str] = []
    text = read_text(os.path.join(project, "pyproject.toml")) or ""
    for table in re.findall(_SCRIPTS_TABLE, text):
        commands += re.findall(_SCRIPT_NAME, table)
    packages = [name for base in (project, os.path.join(project, "src")) if os.path.isdir(base)
                for name in sorted(os.listdir(base))
                if re.fullmatch(r"[A-Za-z_]\w*", name) and os.path.isfile(os.path.join(base, name, "__init__.py"))]
    found = None
    if commands or packages:
        words = "|".join(re.escape(c) for c in commands)
        modules = "|".join(re.escape(p) for p in packages)
        alternatives = [f"(?<![\\w./-])({words})(?![\\w-])"] if words else []
        alternatives += [f"-m[ \\t]+(({modules})(?:\\.\\w+)*)"] if modules else []
        command = re.compile("|".join(alternatives))
        for file in _script_files(index, root, ".toml"):
            if not _in_project(file, project, root) or file.endswith(".py"):
                continue
            body = read_text(file)
            if not body or ".toml" not in body:
                continue
            for number, line in enumerate(body.splitlines(), start=1):
                if ".toml" not in line:
                    continue
                match = command.search(line)
                if match is not None and re.search(r"[\w/.-]+\.toml\b", line[match.end():]):
                    found = (_shown(file), number, next(g for g in match.groups() if g))
                    break
            if found:
                break
    index.toml_commands[project] = found
    return found
