"""The files of a repository, listed once per run, and what each says that the context searches
look for (its *facts*: the config file names it mentions, and which of a fixed set of hints it
holds), so that a search reads only the few files that can answer it.

In a git checkout the listing is git's own (tracked files, and untracked ones that `.gitignore`
does not exclude) and the facts of the committed files are kept between runs in shardshift's
cache, keyed by the commit's tree: a later run asks git which files differ from it (`git status`)
and reads only those, so its cost does not grow with the repository (ruff and pre-commit cache the
same way). Under pre-commit the index is the repository (see `_STAGED`). A checked-out submodule,
or a repository cloned inside another, is a tree of its own.
Elsewhere (no git, or git refuses the folder) the folder is walked, bounded by `MAX_WALK_FILES`;
a search of a walk that stopped says where (`Tree.stopped`).

Never runs the repository's code: git runs with its file-system monitor hook switched off."""

from __future__ import annotations

import bisect
import marshal
import os
import re
from dataclasses import dataclass, field

# Folders that are no repository's own source (as check's directory walk skips them).
SKIP_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache",
                       ".pytest_cache", "build", "dist", ".eggs", "site-packages"})
MAX_WALK_FILES = 200_000  # files listed by a walk outside git before it stops (and says so)
MAX_BYTES = 1_000_000  # larger files are generated or data, not code or scripts that name a config
MAX_NESTED = 3  # repositories inside repositories followed

# Files whose facts are kept: code, launch scripts, READMEs and configs that may name a config or
# run a program, and files without a suffix (scripts).
FACT_SUFFIXES = (".py", ".sh", ".bash", ".zsh", ".slurm", ".sbatch", ".job", ".yaml", ".yml", ".args", ".cmd",
                 ".json", ".jsonc", ".hjson", ".md", ".toml", ".cfg", ".txt")
# The name of a config or a script as code and scripts write it (the part after the last `/`).
NAME_SUFFIXES = ("json", "jsonc", "hjson", "yaml", "yml", "toml", "args", "cfg", "txt", "sh", "bash", "zsh", "slurm",
                 "sbatch", "job", "cmd", "py")
CONFIG_NAME = re.compile(r"[\w.-]+\.(?:" + "|".join(NAME_SUFFIXES) + r")\b")
# The hints a search may ask for: a literal that the file holds, or a pattern that matches in it.
# A search that needs another hint adds it here (the cache's version follows this table).
HINTS: dict[str, str | re.Pattern] = {
    # `deepspeed=` given something other than a string literal (TrainingArguments(deepspeed=args.ds))
    "deepspeed-runtime": re.compile(r"\bdeepspeed\s*=\s*(?![\s\"'=]|None\b|True\b|False\b)"),
    # a launcher flag whose value is a variable: a script that may pass any ds_config
    "deepspeed-flag-runtime": re.compile(r"--(?:deepspeed_config_file|deepspeed_config|deepscale_config|deepspeed)"
                                         r"(?:\s*=\s*|\s+)[\"']?[^\s\"']*[$`]"),
    "toml-load": re.compile(r"\b(?:tomllib|tomli|toml)\.loads?\("),
    ".toml": ".toml",
    "register_train_spec": "register_train_spec",
    "sys.modules": "sys.modules",
    "_supported_models": "_supported_models",
    "\"torchtitan.": "\"torchtitan.",
    "'torchtitan.": "'torchtitan.",
}
_BITS = {name: 1 << i for i, name in enumerate(HINTS)}


def _version() -> str:
    """The cache's version: what the facts are made of (a change to the table makes new entries)."""
    import hashlib

    return hashlib.sha1(repr((CONFIG_NAME.pattern, FACT_SUFFIXES, MAX_BYTES, sorted(SKIP_DIRS),
                              [(k, getattr(v, "pattern", v)) for k, v in HINTS.items()])).encode()).hexdigest()[:12]

Facts = tuple  # (config names mentioned, as a tuple; hint bits)
NO_FACTS: Facts = ((), 0)


def has_facts(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return name.endswith(FACT_SUFFIXES) or "." not in name


def facts_of(text: str) -> Facts:
    names = tuple(sorted(set(CONFIG_NAME.findall(text))))
    bits = 0
    for name, hint in HINTS.items():
        if (hint in text) if isinstance(hint, str) else (hint.search(text) is not None):
            bits |= _BITS[name]
    return names, bits


def _own(rel: str) -> bool:
    """Whether a path is the repository's own source: no folder on it is skipped or hidden."""
    return not any(part in SKIP_DIRS or part.startswith(".") for part in rel.split("/")[:-1])


@dataclass
class Tree:
    root: str  # absolute
    paths: list[str] = field(default_factory=list)  # relative, "/"-separated, sorted
    facts: dict[str, Facts] = field(default_factory=dict)  # rel -> facts; absent: none (or not read yet)
    git: bool = False
    stopped: str | None = None  # where a bounded walk stopped (relative folder), else None
    _read_all: bool = True  # every fact of `paths` is in `facts` (a walk reads them on first use)
    _found: dict[str, list[str]] = field(default_factory=dict)
    _set: set[str] | None = None
    _joined: str | None = None
    _by_base: dict[str, list[str]] | None = None

    def full(self, rel: str) -> str:
        return self.root + "/" + rel if os.sep == "/" else os.path.join(self.root, *rel.split("/"))

    def find(self, wanted: str) -> list[str]:
        """Files whose path is `wanted` ("pkg/train.py") or ends with "/" + `wanted`, absolute."""
        found = self._found.get(wanted)
        if found is None and len(self._found) >= 16:  # many look-ups (a code search following imports): an index
            if self._by_base is None:
                self._by_base = {}
                for rel in self.paths:
                    self._by_base.setdefault(rel.rpartition("/")[2], []).append(rel)
            tail = "/" + wanted
            found = self._found[wanted] = [self.full(rel) for rel in self._by_base.get(wanted.rpartition("/")[2], ())
                                           if rel == wanted or rel.endswith(tail)]
        if found is None:
            if self._joined is None:
                self._joined = "\0" + "\0".join(self.paths) + "\0"
            # one scan of the listing as one string (a loop over 100k paths costs more than the check)
            pattern = "\0((?:[^\0]*/)?" + re.escape(wanted) + ")(?=\0)"
            found = self._found[wanted] = [self.full(rel) for rel in re.findall(pattern, self._joined)]
        return found

    def has(self, path: str) -> bool:
        """Whether the absolute `path` is a listed file."""
        if self._set is None:
            self._set = set(self.paths)
        rel = os.path.relpath(path, self.root).replace(os.sep, "/")
        return rel in self._set

    def _ensure_facts(self) -> None:
        if self._read_all:
            return
        self._read_all = True
        for rel in self.paths:
            if has_facts(rel) and not os.path.islink(self.full(rel)):
                text = _read(self.full(rel))
                found = facts_of(text) if text else NO_FACTS
                if found != NO_FACTS:
                    self.facts[rel] = found

    def naming(self, name: str, exact: bool = False) -> list[str]:
        """Files that mention the config file name `name` (as the end of a name they mention, or the
        whole name when `exact`), absolute, in listing order."""
        if not CONFIG_NAME.fullmatch(name):  # a name no fact records (no such suffix): the texts answer
            return [] if exact else [self.full(rel) for rel in self.paths if has_facts(rel)
                                     and name in (_read(self.full(rel)) or "")]
        self._ensure_facts()
        out = [rel for rel, (names, _) in self.facts.items()
               if ((name in names) if exact else any(n.endswith(name) for n in names))]
        return [self.full(rel) for rel in sorted(out)]

    def hinted(self, hint: str) -> list[str]:
        """Files that hold the hint `hint` (a key of HINTS), absolute, in listing order."""
        bit = _BITS[hint]
        self._ensure_facts()
        return [self.full(rel) for rel in sorted(rel for rel, (_, bits) in self.facts.items() if bits & bit)]

    def refresh(self, path: str, text: str | None = None) -> None:
        """Bring one file up to date: its facts from `text` (an editor's unsaved buffer) or from
        the file on disk; a file that no longer exists leaves the listing, a new one joins it
        (unless git ignores it)."""
        rel = os.path.relpath(os.path.abspath(path), self.root).replace(os.sep, "/")
        if rel.startswith("../") or rel in (".", "..") or not _own(rel):
            return
        full = self.full(rel)
        exists = text is not None or os.path.isfile(full)
        listed = self._set if self._set is not None else set(self.paths)
        self._set, self._joined, self._found, self._by_base = listed, None, {}, None
        if not exists:
            if rel in listed:
                listed.discard(rel)
                self.paths.remove(rel)
            self.facts.pop(rel, None)
            return
        if rel not in listed:
            if self.git and _git(self.root, "check-ignore", "-q", "--", rel) is not None:
                return  # git ignores it (check-ignore answers 0 for an ignored path)
            listed.add(rel)
            bisect.insort(self.paths, rel)
        if has_facts(rel) and (text is not None or not os.path.islink(full)):
            if text is None:
                text = _read(full)
            found = facts_of(text) if text else NO_FACTS
            if found != NO_FACTS:
                self.facts[rel] = found
            else:
                self.facts.pop(rel, None)
        else:
            self.facts.pop(rel, None)

    def files(self, suffixes: tuple[str, ...] | None = None) -> list[str]:
        return [self.full(rel) for rel in self.paths if suffixes is None or rel.endswith(suffixes)]


_TREES: dict[str, Tree] = {}
# Listings kept across runs by a long-lived process that hears of every change (the language server,
# from the editor's events): root -> its listing, brought up to date file by file (`Tree.refresh`).
_PINNED: dict[str, Tree] = {}


def tree_of(root: str) -> Tree:
    """The run's listing of the repository at `root` (one per root per run, or the pinned one)."""
    root = os.path.abspath(root)
    found = _PINNED.get(root) or _TREES.get(root)
    if found is None:
        found = _TREES[root] = _build(root, 0)
    return found


def pin(root: str) -> Tree:
    """Keep the listing of `root` across runs (the caller refreshes it on every change it hears of)."""
    root = os.path.abspath(root)
    found = _PINNED.get(root)
    if found is None:
        found = _PINNED[root] = _TREES.get(root) or _build(root, 0)
        found._ensure_facts()
    return found


def unpin(root: str) -> None:
    """Stop keeping the listing of `root` (the next run lists it again)."""
    _PINNED.pop(os.path.abspath(root), None)


def reset() -> None:
    """Forget the listings (a new run sees the files as they are now). git's answers started for
    this run (`prefetch`) are kept for it; older ones are dropped."""
    _TREES.clear()
    forget_texts()
    for root, (started, fresh) in list(_PENDING.items()):
        if fresh:
            _PENDING[root] = (started, False)
        else:
            _drop(root)


_TEXTS: dict[str, str | None] = {}  # path -> its text, read once per run (reset)
_TEXTS_HELD = [0]  # characters held in _TEXTS
TEXTS_MAX_CHARS = 64_000_000  # past this, texts are read again rather than held (a first run reads all)


def read_text(path: str) -> str | None:
    """A regular file's text (at most MAX_BYTES), read once per run by every context search: the
    facts, the consumer search, the readers' and builders' searches. None: not regular, larger,
    unreadable."""
    if path in _TEXTS:
        return _TEXTS[path]
    from shardshift import files

    text = files.read_text(path, MAX_BYTES, bom=False)
    if _TEXTS_HELD[0] < TEXTS_MAX_CHARS:
        _TEXTS[path] = text
        _TEXTS_HELD[0] += len(text or "")
    return text


def forget_texts() -> None:
    """Drop the run's texts (a long-lived process, the language server, holds none between runs)."""
    _TEXTS.clear()
    _TEXTS_HELD[0] = 0


def _read(path: str) -> str | None:
    """A file's text for its facts, or None (as `read_text`, or binary: a NUL byte where git looks
    for one, in its first 8,000 bytes)."""
    text = read_text(path)
    return None if text is None or "\0" in text[:8000] else text


def _build(root: str, depth: int) -> Tree:
    if os.path.exists(os.path.join(root, ".git")) and os.environ.get("SHARDSHIFT_NO_GIT") != "1":
        tree = _from_git(root, depth)
        if tree is not None:
            return tree
    return _walk(root)


def _walk(root: str) -> Tree:
    tree = Tree(root, _read_all=False)
    for directory, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
        base = os.path.relpath(directory, root).replace(os.sep, "/")
        prefix = "" if base == "." else base + "/"
        for name in sorted(names):
            if len(tree.paths) >= MAX_WALK_FILES:
                tree.stopped = base
                return tree
            tree.paths.append(prefix + name)
    return tree


# --- git -------------------------------------------------------------------------------------------

def _git(root: str, *args: str) -> bytes | None:
    done = _git_run(root, *args)
    return done[1] if done is not None and done[0] == 0 else None


def _git_run(root: str, *args: str) -> tuple[int, bytes] | None:
    """git's exit status and output, or None when git cannot be run."""
    import subprocess

    command, env = _git_command(root, args)
    try:
        done = subprocess.run(command, capture_output=True, env=env, timeout=120, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.returncode, done.stdout


_STATUS = ("status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", "--ignore-submodules=all")
# Under pre-commit the repository judged is the commit being made: the index. pre-commit stashes
# the unstaged edits of tracked files before a hook runs, so each tracked file's working copy is
# what the index holds, and an untracked file is no part of the commit. git then compares the
# index with HEAD (no file is statted: 10 ms at 100k files, against 150 ms of CPU for `status`).
_STAGED = ("diff-index", "--cached", "--name-only", "-z", "--no-renames", "--ignore-submodules=all", "HEAD")


def _status_args() -> tuple[str, ...]:
    return _STAGED if os.environ.get("PRE_COMMIT") == "1" else _STATUS


_HEAD = ("rev-parse", "-q", "--verify", "HEAD^{tree}")
PREFETCH_INDEX_BYTES = 1_000_000  # a git index this large (about 10k files): ask git early
_PENDING: dict[str, tuple[list, bool]] = {}  # root -> (git's answers under way, fresh)


def _git_command(root: str, args: tuple[str, ...]) -> tuple[list[str], dict[str, str]]:
    env = dict(os.environ, GIT_OPTIONAL_LOCKS="0", LC_ALL="C")  # a read never takes the index lock
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):  # pre-commit sets some for its own calls
        env.pop(name, None)
    return ["git", "-c", "core.fsmonitor=false", "-c", "core.quotePath=false", "-C", root, *args], env


def prefetch(paths: list[str]) -> None:
    """Start git's answers for the large repositories that hold `paths`, so that they run while
    the files are parsed and checked (`git status` stats every file: in a repository of 100k files
    it takes longer than the check). A timing aid only: a check that needs no listing never reads
    them, and `_from_git` asks git again when none is under way."""
    from shardshift.files import repository_root

    roots = {repository_root(path) for path in paths[:64]}
    for root in sorted(roots)[:4]:
        try:
            if os.path.getsize(os.path.join(root, ".git", "index")) < PREFETCH_INDEX_BYTES:
                continue
        except OSError:
            continue
        import subprocess

        started = []
        for args in (_status_args(), _HEAD):
            command, env = _git_command(root, args)
            try:
                started.append(subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                                stdin=subprocess.DEVNULL, env=env))
            except OSError:
                break
        if len(started) == 2:
            _drop(root)
            _PENDING[root] = (started, True)


def _drop(root: str) -> None:
    pending = _PENDING.pop(root, None)
    for process in pending[0] if pending else ():
        process.kill()
        process.communicate()


def _answer(root: str, args: tuple[str, ...]) -> bytes | None:
    """git's answer to `args`: the one started by `prefetch` for this run, else a new one."""
    pending = _PENDING.get(root)
    if pending is not None:
        import subprocess

        process = pending[0][1 if args == _HEAD else 0]
        try:
            out, _ = process.communicate(timeout=60)
        except subprocess.SubprocessError:
            process.kill()
            out = None
        if out is not None and process.returncode == 0:
            return out
        return None
    return _git(root, *args)


def _status(root: str) -> tuple[set[str], list[str]] | None:
    """The paths whose working copy differs from HEAD (changed, added, removed, untracked and not
    ignored), and the folders git lists as untracked repositories of their own. Under pre-commit:
    the paths whose index entry differs from HEAD, and no untracked folder."""
    args = _status_args()
    out = _answer(root, args)
    if out is None and args is _STAGED:  # no HEAD yet (the first commit): the working copy
        out = _git(root, *_STATUS)
    elif args is _STAGED:
        return set(out.decode("utf-8", "surrogateescape").split("\0")) - {""}, []
    if out is None:
        return None
    changed, nested = set(), []
    for entry in out.decode("utf-8", "surrogateescape").split("\0"):
        if len(entry) < 4:
            continue
        path = entry[3:]
        if path.endswith("/"):
            nested.append(path.rstrip("/"))  # an untracked folder with a .git: a repository inside
        else:
            changed.add(path)
    return changed, nested


def _cache_file(root: str) -> str | None:
    import hashlib

    from shardshift.context.cache import cache_dir

    folder = cache_dir()
    if folder is None:
        return None
    key = hashlib.sha1(os.path.realpath(root).encode("utf-8", "surrogateescape")).hexdigest()[:20]
    return os.path.join(folder, f"tree-{key}.marshal")


def _load(path: str | None) -> dict | None:
    if path is None:
        return None
    try:
        with open(path, "rb") as handle:
            state = marshal.load(handle)
    except (OSError, EOFError, ValueError, TypeError):
        return None
    shape = {"version": str, "tree": str, "paths": str, "facts": dict, "modules": list}
    if not isinstance(state, dict) or any(not isinstance(state.get(k), t) for k, t in shape.items()):
        return None
    return state if state["version"] == _version() else None


def _save(path: str | None, state: dict) -> None:
    from shardshift.context.cache import write

    if path is not None:
        write(path, marshal.dumps(state))


def _committed(root: str, head: str, state: dict | None, changed: set[str]) -> dict | None:
    """The listing and facts of the commit's tree `head`: the cached ones, brought up to `head` by
    git's diff of the two trees, or read whole on the first run."""
    if state is not None and state["tree"] == head:
        return state
    paths: dict[str, None]
    facts: dict[str, Facts]
    entries: list[tuple[str, str, str]] = []  # (status, path, blob)
    if state is not None:
        out = _git(root, "diff-tree", "-r", "-z", "--no-renames", state["tree"], head)
        if out is None:
            state = None
        else:
            fields = out.decode("utf-8", "surrogateescape").split("\0")
            for meta, path in zip(fields[0::2], fields[1::2]):
                parts = meta.split()
                if len(parts) == 5:
                    entries.append(("D" if parts[4] == "D" else "L" if parts[1] == "160000" else
                                    "S" if parts[1] == "120000" else "M", path, parts[3]))
            paths = dict.fromkeys(state["paths"].split("\0") if state["paths"] else ())
            facts = dict(state["facts"])
            modules = set(state["modules"])
    if state is None:
        out = _git(root, "ls-tree", "-r", "-z", "--full-tree", head)
        if out is None:
            return None
        paths, facts, modules = {}, {}, set()
        for entry in out.decode("utf-8", "surrogateescape").split("\0"):
            meta, _, path = entry.partition("\t")
            parts = meta.split()
            if len(parts) == 3:
                entries.append(("L" if parts[1] == "commit" else "S" if parts[0] == "120000" else "M", path, parts[2]))
    # the first run: git's own search says which committed files can hold a fact (C, threaded),
    # and only those are read
    candidates = _grep_candidates(root) if state is None and len(entries) > GREP_FROM_FILES else None
    for kind, path, blob in entries:
        if kind == "D":
            paths.pop(path, None)
            facts.pop(path, None)
            modules.discard(path)
            continue
        if kind == "L":  # a submodule (or a file that became one)
            paths.pop(path, None)
            facts.pop(path, None)
            modules.add(path)
            continue
        modules.discard(path)
        if not _own(path):
            continue
        paths[path] = None
        facts.pop(path, None)
        if kind == "M" and has_facts(path) and (candidates is None or path in candidates or path in changed):
            text = _blob(root, path, blob, changed)
            found = facts_of(text) if text else NO_FACTS
            if found != NO_FACTS:
                facts[path] = found
    return {"version": _version(), "tree": head, "paths": "\0".join(sorted(paths)), "facts": facts,
            "modules": sorted(modules)}


GREP_FROM_FILES = 500  # a smaller tree is read about as fast as git searches it


def _grep_terms() -> list[str]:
    """Extended regular expressions (portable: no `\\b`, no `\\w`) that match wherever a fact can
    be: a file name with one of CONFIG_NAME's suffixes, and a literal each hint needs."""
    terms = [r"\.(" + "|".join(NAME_SUFFIXES) + ")"]
    needed = {"deepspeed-runtime": "deepspeed", "deepspeed-flag-runtime": "--deep", "toml-load": "toml"}
    for name, hint in HINTS.items():
        literal = needed.get(name, hint if isinstance(hint, str) else None)
        if literal is None:
            return []  # a pattern hint without its literal here: no search can stand for the reads
        terms.append(re.sub(r"([.\\[\](){}*+?|^$])", r"\\\1", literal))
    return terms


def _grep_candidates(root: str) -> set[str] | None:
    """The committed files (as in the working copy) that match a term of `_grep_terms`, or None
    when git cannot say."""
    terms = _grep_terms()
    if not terms:
        return None
    command = ["grep", "-l", "-z", "-I", "-E", "--no-color", "--full-name"]
    for term in terms:
        command += ["-e", term]
    done = _git_run(root, *command)
    if done is None or done[0] not in (0, 1):  # 1: nothing matched
        return None
    return set(done[1].decode("utf-8", "surrogateescape").split("\0")) - {""}


def _blob(root: str, path: str, blob: str, changed: set[str]) -> str | None:
    """The committed text of `path`: the working copy when it is unchanged, else git's blob."""
    if path not in changed:
        return _read(os.path.join(root, *path.split("/")))
    out = _git(root, "cat-file", "blob", blob)
    if out is None or len(out) > MAX_BYTES or b"\0" in out[:8000]:
        return None
    return out.decode("utf-8", "replace")


def _sorted_has(paths: list[str], rel: str) -> bool:
    at = bisect.bisect_left(paths, rel)
    return at < len(paths) and paths[at] == rel


def _from_git(root: str, depth: int) -> Tree | None:
    try:
        status = _status(root)
        head = _answer(root, _HEAD) if status is not None else None
    finally:
        _drop(root)  # what prefetch started for this root is answered (or no longer wanted)
    if status is None:
        return None
    changed, nested = status
    tree = Tree(root, git=True)
    paths: list[str] = []
    if head:
        cache = _cache_file(root)
        old = _load(cache)
        state = _committed(root, head.decode().strip(), old, changed)
        if state is None:
            return None
        if state is not old:
            _save(cache, state)
        paths = state["paths"].split("\0") if state["paths"] else []
        tree.facts = dict(state["facts"])
        nested = list(state["modules"]) + nested
    # the working copy's own text for the files that differ from the commit, for this run only
    gone, added = set(), []
    for rel in sorted(changed):
        tree.facts.pop(rel, None)
        full = os.path.join(root, *rel.split("/"))
        if not _own(rel) or not os.path.isfile(full):
            gone.add(rel)
            continue
        added.append(rel)
        if has_facts(rel) and not os.path.islink(full):  # a link's target is listed itself, or is not ours
            text = _read(full)
            found = facts_of(text) if text else NO_FACTS
            if found != NO_FACTS:
                tree.facts[rel] = found
    if gone:
        paths = [rel for rel in paths if rel not in gone] if len(gone) >= 64 else paths
        for rel in gone if len(gone) < 64 else ():
            at = bisect.bisect_left(paths, rel)
            if at < len(paths) and paths[at] == rel:
                del paths[at]
    for folder in nested:  # a checked-out submodule or a repository inside: its own listing
        if depth >= MAX_NESTED or not _own(folder + "/x"):
            continue
        inner_root = os.path.join(root, *folder.split("/"))
        if not os.path.isdir(inner_root) or not os.path.exists(os.path.join(inner_root, ".git")):
            continue
        inner = _build(inner_root, depth + 1)
        inner._ensure_facts()
        added += [f"{folder}/{rel}" for rel in inner.paths]
        tree.facts.update((f"{folder}/{rel}", found) for rel, found in inner.facts.items())
        if inner.stopped is not None:
            tree.stopped = f"{folder}/{inner.stopped}"
    if added:
        fresh = [rel for rel in added if not _sorted_has(paths, rel)]
        if len(fresh) < 64:
            for rel in fresh:
                bisect.insort(paths, rel)
        else:
            paths = sorted(paths + fresh)
    tree.paths = paths
    return tree
