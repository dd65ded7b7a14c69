"""Evidence about a file's other readers, found in the Python code of its repository: the keys the
repository's own code reads by name, its own config manager, and code that loads a ds_config for
inference. Read with regular expressions and never imported. The files come from the run's listing
of the repository (`context.tree`), whose facts say which few files a search needs to read; each of
those is read once per run."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from shardshift.context.tree import HINTS, Tree
from shardshift.files import shown as _shown

# A key read by name: `cfg["key"]` (not an assignment to it), `.get("key"`, `.pop("key"`,
# `getattr(cfg, "key"`, `hasattr(cfg, "key"`, `"key" in cfg`.
_READ = (
    r"""(?:\[\s*(['"])([A-Za-z_][\w.\-]*)\1\s*\](?!\s*=[^=])"""
    r"""|(?:\.get|\.pop|\.setdefault|\bgetattr|\bhasattr)\(\s*(?:[^,()'"]+,\s*)?(['"])([A-Za-z_][\w.\-]*)\3"""
    r"""|(['"])([A-Za-z_][\w.\-]*)\5\s+(?:not\s+)?in\s+[A-Za-z_])""")
_CLASS = r"(?m)^class\s+(JobConfig|ConfigManager)\b"


class _Lazy(dict):
    """A map whose entries are computed on first look-up (from the run's listing of the repository)."""

    def __init__(self, compute):
        super().__init__()
        self._compute = compute

    def get(self, key, default=None):
        if key not in self:
            self[key] = self._compute(key)
        return dict.get(self, key, default)


@dataclass
class _Index:
    tree: Tree
    root: str
    # config (real path) -> key -> the first (file, line) of its possible readers that reads it by name
    reads: dict[str, dict[str, tuple[str, int]]] = field(default_factory=dict)
    managers: list[tuple[str, int, str]] | None = None
    toml_commands: dict[str, tuple[str, int, str] | None] = field(default_factory=dict)  # project -> own_toml_command
    _files: list[str] | None = None

    def __post_init__(self) -> None:
        # config file name -> the Python files / scripts (launch scripts, READMEs, configs) that mention it
        self.py_mentions = _Lazy(lambda name: [f for f in self.tree.naming(name, exact=True) if f.endswith(".py")])
        self.script_mentions = _Lazy(lambda name: [f for f in self.tree.naming(name, exact=True)
                                                   if _is_script(f)])
        self.script_runs = _Lazy(_runs)  # script -> the .py paths it runs
        self.sed_scripts = _Lazy(_runs_sed)  # script -> whether it runs sed

    @property
    def files(self) -> list[str]:
        """The Python files, sorted."""
        if self._files is None:
            self._files = self.tree.files((".py",))
        return self._files

    def find(self, wanted: str) -> list[str]:
        """The Python files whose path is `wanted` or ends with "/" + `wanted`."""
        return self.tree.find(wanted)


def _is_script(file: str) -> bool:
    name = os.path.basename(file)
    return not name.endswith(".py") and (name.endswith(_SCRIPTS) or "." not in name)


def _runs(script: str) -> list[str]:
    text = read_text(script) or ""
    return [(m.group(1).replace(".", "/") + ".py") if m.group(1) else m.group(2).lstrip("./")
            for m in re.finditer(_PY_WORD, text)]


def _runs_sed(script: str) -> bool:
    return not script.endswith((".json", ".yaml", ".yml", ".toml")) and "sed" in (read_text(script) or "")


_INDEX: dict[str, _Index] = {}


def _root(path: str, tops: tuple[str, ...]) -> str:
    from shardshift.context.releases import repository_root

    return repository_root(path, tops)


# Files that make a folder a project of its own (a monorepo's package, a sample project in a tree).
PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt")


def project_root(path: str, tops: tuple[str, ...] = ()) -> str:
    """The project the file at `path` belongs to: the nearest folder above it, up to the repository
    root, that holds a project file (`PROJECT_MARKERS`), else the repository root. Code of another
    project kept in the same repository is no reader of this file."""
    return _project_of(os.path.dirname(os.path.abspath(path)), _root(path, tops))


_PROJECTS: dict[tuple[str, str], str] = {}


def _project_of(folder: str, root: str) -> str:
    walked = []
    while (folder, root) not in _PROJECTS:
        walked.append(folder)
        parent = os.path.dirname(folder)
        if folder == root or any(os.path.isfile(os.path.join(folder, m)) for m in PROJECT_MARKERS):
            found = folder
            break
        if parent == folder or not folder.startswith(root):
            found = root
            break
        folder = parent
    else:
        found = _PROJECTS[(folder, root)]
    for done in walked:  # a folder below a project's top belongs to it, unless it is a top itself
        _PROJECTS[(done, root)] = done if done == found else found
    return found


def _in_project(file: str, project: str, root: str) -> bool:
    """Whether `file` belongs to `project` itself, not to a project nested in it."""
    return _project_of(os.path.dirname(os.path.abspath(file)), root) == project


def _index(path: str, tops: tuple[str, ...]) -> _Index:
    from shardshift.context.tree import tree_of

    root = _root(path, tops)
    found = _INDEX.get(root)
    if found is None:
        found = _INDEX[root] = _Index(tree_of(root), root)
    return found


def reset() -> None:
    """Forget the indexes (a new run sees the files as they are now)."""
    from shardshift.context import tree

    tree.reset()
    _INDEX.clear()
    _PROJECTS.clear()


def read_text(path: str) -> str | None:
    """A regular file's text, or None (not regular, larger than tree.MAX_BYTES, unreadable); each file
    read once per run (`tree.read_text`)."""
    from shardshift.context.tree import read_text as once

    return once(path)


_TESTS = r"(?:^|/)(?:tests?|testing)/|(?:^|/)(?:test_[^/]*|[^/]*_test|conftest)\.py$"
_SCRIPTS = (".sh", ".bash", ".slurm", ".sbatch", ".md", ".yaml", ".yml", ".toml", ".json", ".cfg", ".txt")
_PY_WORD = r"(?:-m\s+([A-Za-z_][\w.]*)|([\w./-]+\.py))\b"


def _reader_files(path: str, tops: tuple[str, ...]) -> list[str]:
    """The Python files that may load the config at `path`: those that name it (its file name),
    and those a launch script, README or config that names it also names (`python train.py
    --config x.yaml`, `-m pkg.train`). Tests are no readers of a training run's config."""
    root = _root(path, tops)
    index = _index(path, tops)
    name = os.path.basename(path)
    out = [f for f in index.py_mentions.get(name, ())
           if not re.search(_TESTS, os.path.relpath(f, root).replace(os.sep, "/"))]
    for script in index.script_mentions.get(name, ()):
        if re.search(_TESTS, os.path.relpath(script, root).replace(os.sep, "/")):
            continue  # a test's data (a recorded output that lists paths) runs nothing
        for wanted in index.script_runs.get(script, ()):
            for full in index.find(wanted):
                if full.endswith(".py") and full not in out:
                    out.append(full)
    return out


def _script_files(index: _Index, root: str, hint: str | None = None) -> list[str]:
    """The launch scripts, READMEs and configs of the repository (those holding `hint`)."""
    files = index.tree.hinted(hint) if hint else index.tree.files()
    return [f for f in files if _is_script(f)]


def own_readers(path: str, key: str, tops: tuple[str, ...] = ()) -> tuple[tuple[str, int] | None, str | None]:
    """Where the repository's own Python code that may load the config at `path` (`_reader_files`)
    reads `key` by name (file, line), or None; and where the
    listing of the repository stopped (a bounded walk outside git), or None when it is whole."""
    index = _index(path, tops)
    real = os.path.realpath(path)
    reads = index.reads.get(real)
    if reads is None:
        reads = {}
        files = _reader_files(path, tops)
        for file in files:
            text = read_text(file)
            if not text:
                continue
            for match in re.finditer(_READ, text):
                name = match.group(2) or match.group(4) or match.group(6)
                if name not in reads:
                    reads[name] = (_shown(file), text.count("\n", 0, match.start()) + 1)
        index.reads[real] = reads
    return reads.get(key), index.tree.stopped


def own_config_manager(path: str, tops: tuple[str, ...] = ()) -> tuple[str, int, str] | None:
    """Code of the repository's own that may read the TOML at `path`, as (file, line, what): a
    config manager (`class JobConfig` / `class ConfigManager` in a file that loads TOML), else any
    other code that loads TOML (a command line of the repository's own that takes the file's path),
    in the TOML's project (`project_root`); else a TOML loader among the files that name it or that a
    script naming it runs (`_reader_files`). Code that reads only
    `pyproject.toml`, and tests, do not count."""
    index = _index(path, tops)
    root = _root(path, tops)
    if index.managers is None:
        managers, loaders = [], []
        for file in index.tree.hinted("toml-load"):
            if not file.endswith(".py"):
                continue
            if re.search(_TESTS, os.path.relpath(file, root).replace(os.sep, "/")):
                continue
            text = read_text(file)
            load = HINTS["toml-load"].search(text) if text and "tom" in text else None
            if load is None:
                continue
            match = re.search(_CLASS, text)
            if match is not None:
                managers.append((_shown(file), text.count("\n", 0, match.start()) + 1, f"class {match.group(1)}"))
            elif "pyproject" not in text:
                loaders.append((_shown(file), text.count("\n", 0, load.start()) + 1, "a TOML loader"))
        index.managers = managers + loaders
    project = project_root(path, tops)
    for file, line, what in index.managers:
        if _in_project(file, project, root):
            return file, line, what
    for file in _reader_files(path, tops):
        text = read_text(file)
        load = HINTS["toml-load"].search(text) if text else None
        if load is not None and "pyproject" not in text:
            return _shown(file), text.count("\n", 0, load.start()) + 1, "a TOML loader"
    return None


def first_match(path: str, pattern: str, hints: tuple[str, ...],
                tops: tuple[str, ...] = ()) -> tuple[str, int] | None:
    """The first Python file of the file's project (tests aside) where `pattern` matches (files
    holding none of `hints` are not searched), with the line of the match."""
    index = _index(path, tops)
    root = _root(path, tops)
    project = project_root(path, tops)
    candidates = sorted({f for hint in hints for f in index.tree.hinted(hint) if f.endswith(".py")})
    for file in candidates:
        if not _in_project(file, project, root) or re.search(_TESTS, os.path.relpath(file, root).replace(os.sep, "/")):
            continue
        text = read_text(file)
        if text and any(hint in text for hint in hints):
            found = re.search(pattern, text)
            if found is not None:
                return _shown(file), text.count("\n", 0, found.start()) + 1
    return None


# torchtitan's registry of models changed by the project's own code: a `register_train_spec(...)`
# statement, a change to its table of model names (`_supported_models`), or a module put into
# `sys.modules` under torchtitan's name (as a literal key, or through a variable in a file that
# names a `"torchtitan.…"` module as a string)
TRAIN_SPEC_REGISTRATION = (r"(?m)^[ \t]*(?:[A-Za-z_]\w*\.)*register_train_spec\(|"
                           r"\b_supported_models\b(?=[^\n]*(?:=|\.(?:add|update|append)\())|"
                           r"\bsys\.modules\[\s*(?:f?[\"'])torchtitan\.")
TRAIN_SPEC_HINTS = ("register_train_spec", "sys.modules", "_supported_models")
# ... through a variable: searched only in files that name a torchtitan module as a string
MODULE_GRAFT = r"\bsys\.modules\[[^\]\n]*\]\s*="
MODULE_GRAFT_HINTS = ("\"torchtitan.", "'torchtitan.")


def _sed_writes(command: str) -> bool:
    """A command that runs sed and writes its result (`> out`, `-i`): two linear searches."""
    return re.search(r"\bsed\b", command) is not None and re.search(r"\s-i\b|\s--in-place\b|>", command) is not None


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, text) of each command line, backslash continuations joined."""
    out: list[tuple[int, str]] = []
    pending: list[str] = []
    start = 1
    for number, line in enumerate(text.splitlines(), 1):
        if not pending:
            start = number
        if line.endswith("\\"):
            pending.append(line[:-1])
            continue
        out.append((start, " ".join(pending + [line])))
        pending = []
    if pending:
        out.append((start, " ".join(pending)))
    return out


def template_role(path: str, tops: tuple[str, ...] = ()) -> tuple[str, int] | None:
    """A script of the repository that names the file at `path` and fills it in with `sed` before
    use (`sed "s/CONFIG_GBS/$GBS/" ds_TEMPLATE.json > ds.json`, a pipeline of seds continued over
    lines, or the file's name in a variable that the command reads): it is a template. (file, line
    of the sed command), or None."""
    index = _index(path, tops)
    name = os.path.basename(path)
    real = os.path.realpath(path)
    for file in index.script_mentions.get(name, ()):
        if not index.sed_scripts.get(file) or os.path.realpath(file) == real:
            continue
        named = False
        for number, command in _logical_lines(read_text(file) or ""):
            if name in command and not _sed_writes(command):
                named = True  # `template=ds_TEMPLATE.json`: the name given to a variable first
                continue
            if _sed_writes(command) and (name in command or (named and "$" in command)):
                return _shown(file), number
    return None


def copy_names(path: str, folder: str, tops: tuple[str, ...] = ()) -> tuple[str, int] | None:
    """Where the Python code of the vendored copy at `folder` names the file at `path` (its file
    name, in a string), as (file, line), or None."""
    index = _index(path, tops)
    name = os.path.basename(path)
    top = os.path.abspath(folder)
    for file in index.py_mentions.get(name, ()):
        if not os.path.abspath(file).startswith(top + os.sep):
            continue
        text = read_text(file) or ""
        found = re.search(r"[\"'/]" + re.escape(name) + r"[\"']", text)
        if found is not None:
            return _shown(file), text.count("\n", 0, found.start()) + 1
    return None

