"""The framework release a repository runs, found in its dependency files (never guessed).

`detect(framework, path)` walks up from the directory of `path` to the repository root (a
directory holding `.git`, else the top of a tree given to `check`, else the current directory)
and reads, in each directory on the way: `requirements*.txt` (with `-r` includes) and
`requirements/**/*.txt`, `pyproject.toml` (PEP 621 dependencies and optional-dependencies,
poetry), `setup.py` (ast), `setup.cfg`, `uv.lock`, `poetry.lock`, `conda-lock.yml`, conda
`environment*.yml`, `Dockerfile*` (also under `docker/`), shell scripts' `pip install x==y` lines
and `X_VERSION="..."` assignments (also under `scripts/`, `setup/`, `assets/`, `docker/`), and the
version file of a vendored copy of the framework (`DeepSpeed/version.txt`,
`deepspeed/git_version_info_installed.py`, `megatron/core/package_info.py`, the
`assets/version.txt` of a torchtitan tree, the `VERSION` or `src/axolotl/__init__.py` of an Axolotl
checkout), and the framework's own container image named with its tag (`axolotlai/axolotl:0.19.0-...`:
a release; `axolotlai/axolotl:main-...`: a branch build, whose release is unknown) in those files and
in the Python files of each directory walked (a job definition's base image).

Which pin governs: the nearest directory that pins the framework; within it a lock file or a
vendored copy's version wins over an exact pin, and an exact pin over a range. A range gives the
newest release it allows among the releases shardshift knows (`known_releases`); a range that
allows none of them is said as written (the version stays unknown: the newest judges).
A package listed without a version is no pin. Every dependency file is read once per run (cached
by path, size and modification time).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from functools import lru_cache

from shardshift.context import FRAMEWORKS, Release, Version
from shardshift.files import repository_root  # noqa: F401 - callers find it here too
from shardshift.user_code import parse as parse_user_code
from shardshift.user_code import walk as walk_nodes

# The releases shardshift knows, oldest first, up to the newest one its tables describe
# (pip index versions, 2026-12; the newest is the release the rules are written against).
_RELEASES = {
    "deepspeed": "0.3.1 0.3.2 0.3.3 0.3.4 0.3.5 0.3.6 0.3.7 0.3.8 0.3.9 0.3.10 0.3.12 0.3.13 0.3.14 0.3.15 0.3.16 "
                 "0.4.0 0.4.1 0.4.2 0.4.3 0.4.4 0.4.5 0.5.0 0.5.1 0.5.2 0.5.3 0.5.4 0.5.5 0.5.6 0.5.7 0.5.8 0.5.9 "
                 "0.5.10 0.6.0 0.6.1 0.6.3 0.6.4 0.6.5 0.6.6 0.6.7 0.7.0 0.7.1 0.7.2 0.7.3 0.7.4 0.7.5 0.7.6 0.7.7 "
                 "0.8.0 0.8.1 0.8.2 0.8.3 0.9.0 0.9.1 0.9.2 0.9.3 0.9.4 0.9.5 0.10.0 0.10.1 0.10.2 0.10.3 0.11.0 "
                 "0.11.1 0.11.2 0.12.0 0.12.1 0.12.2 0.12.3 0.12.4 0.12.5 0.12.6 0.13.0 0.13.1 0.13.2 0.13.3 0.13.4 "
                 "0.13.5 0.14.0 0.14.1 0.14.2 0.14.3 0.14.4 0.14.5 0.15.0 0.15.1 0.15.2 0.15.3 0.15.4 0.16.0 0.16.1 "
                 "0.16.2 0.16.3 0.16.4 0.16.5 0.16.6 0.16.7 0.16.8 0.16.9 0.17.0 0.17.1 0.17.2 0.17.3 0.17.4 0.17.5 "
                 "0.17.6 0.18.0 0.18.1 0.18.2 0.18.3 0.18.4 0.18.5 0.18.6 0.18.7 0.18.8 0.18.9 0.19.0 0.19.1 0.19.2 "
                 "0.19.3 0.19.4 0.19.5 0.19.6 0.19.7 0.19.8",
    "megatron-core": "0.1.0 0.2.0 0.3.0 0.4.0 0.5.0 0.6.0 0.7.0 0.8.0 0.9.0 0.10.0 0.11.0 0.12.0 0.12.1 0.12.2 0.12.3 "
                     "0.13.0 0.13.1 0.14.0 0.15.0 0.15.1 0.15.2 0.15.3 0.16.0 0.16.1",
    "accelerate": "0.1.0 0.2.0 0.2.1 0.3.0 0.4.0 0.5.0 0.5.1 0.6.0 0.6.1 0.6.2 0.7.0 0.7.1 0.8.0 0.9.0 0.10.0 0.11.0 "
                  "0.12.0 0.13.0 0.13.1 0.13.2 0.14.0 0.15.0 0.16.0 0.17.0 0.17.1 0.18.0 0.19.0 0.20.0 0.20.1 0.20.2 "
                  "0.20.3 0.21.0 0.22.0 0.23.0 0.24.0 0.24.1 0.25.0 0.26.0 0.26.1 0.27.0 0.27.1 0.27.2 0.28.0 0.29.0 "
                  "0.29.1 0.29.2 0.29.3 0.30.0 0.30.1 0.31.0 0.32.0 0.32.1 0.33.0 0.34.0 0.34.1 0.34.2 1.0.0 1.0.1 "
                  "1.1.0 1.1.1 1.2.0 1.2.1 1.3.0 1.4.0 1.5.0 1.5.1 1.5.2 1.6.0 1.7.0 1.8.0 1.8.1 1.9.0 1.10.0 1.10.1 "
                  "1.11.0 1.12.0 1.13.0 1.14.0 1.15.0",
    "transformers": "4.0.0 4.0.1 4.1.0 4.1.1 4.2.0 4.2.1 4.2.2 4.3.0 4.3.1 4.3.2 4.3.3 4.4.0 4.4.1 4.4.2 4.5.0 4.5.1 "
                    "4.6.0 4.6.1 4.7.0 4.8.0 4.8.1 4.8.2 4.9.0 4.9.1 4.9.2 4.10.0 4.10.1 4.10.2 4.10.3 4.11.0 4.11.1 "
                    "4.11.2 4.11.3 4.12.0 4.12.1 4.12.2 4.12.3 4.12.4 4.12.5 4.13.0 4.14.1 4.15.0 4.16.0 4.16.1 4.16.2 "
                    "4.17.0 4.18.0 4.19.0 4.19.1 4.19.2 4.19.3 4.19.4 4.20.0 4.20.1 4.21.0 4.21.1 4.21.2 4.21.3 4.22.0 "
                    "4.22.1 4.22.2 4.23.0 4.23.1 4.24.0 4.25.1 4.26.0 4.26.1 4.27.0 4.27.1 4.27.2 4.27.3 4.27.4 4.28.0 "
                    "4.28.1 4.29.0 4.29.1 4.29.2 4.30.0 4.30.1 4.30.2 4.31.0 4.32.0 4.32.1 4.33.0 4.33.1 4.33.2 4.33.3 "
                    "4.34.0 4.34.1 4.35.0 4.35.1 4.35.2 4.36.0 4.36.1 4.36.2 4.37.0 4.37.1 4.37.2 4.38.0 4.38.1 4.38.2 "
                    "4.39.0 4.39.1 4.39.2 4.39.3 4.40.0 4.40.1 4.40.2 4.41.0 4.41.1 4.41.2 4.42.0 4.42.1 4.42.2 4.42.3 "
                    "4.42.4 4.43.0 4.43.1 4.43.2 4.43.3 4.43.4 4.44.0 4.44.1 4.44.2 4.45.0 4.45.1 4.45.2 4.46.1 4.46.2 "
                    "4.46.3 4.47.0 4.47.1 4.48.0 4.48.1 4.48.2 4.48.3 4.49.0 4.50.0 4.50.1 4.50.2 4.50.3 4.51.0 4.51.1 "
                    "4.51.2 4.51.3 4.52.1 4.52.2 4.52.3 4.52.4 4.53.0 4.53.1 4.53.2 4.53.3 4.54.0 4.54.1 4.55.0 4.55.1 "
                    "4.55.2 4.55.3 4.55.4 4.56.0 4.56.1 4.56.2 4.57.1 4.57.2 4.57.3 4.57.4 4.57.5 4.57.6 5.0.0 5.1.0 "
                    "5.2.0 5.3.0 5.4.0 5.5.0 5.5.1 5.5.2 5.5.3 5.5.4 5.6.0 5.6.1 5.6.2 5.7.0 5.8.0 5.8.1 5.9.0 5.10.1 "
                    "5.10.2 5.10.4 5.11.0 5.12.0 5.12.1 5.13.0 5.13.1 5.14.0 5.14.1 5.15.0 5.15.1 5.16.0 5.16.1 5.17.0 "
                    "5.18.0 5.19.0 5.20.0 5.20.1 5.20.2 5.21.0 5.21.1 5.22.0 5.22.1 5.22.2 5.23.0 5.24.0",
    "axolotl": "0.5.0 0.5.2 0.6.0 0.7.0 0.8.0 0.8.1 0.9.0 0.9.1 0.9.2 0.10.0 0.11.0 0.12.0 0.12.1 0.12.2 0.13.1 "
               "0.13.2 0.14.0 0.15.0 0.16.0 0.16.1 0.17.0 0.18.0 0.19.0 0.20.0 0.21.0",
    "torchtitan": "0.0.2 0.1.0 0.2.0 0.2.1 0.2.2",
    "torch": "1.13.0 1.13.1 2.0.0 2.0.1 2.1.0 2.1.1 2.1.2 2.2.0 2.2.1 2.2.2 2.3.0 2.3.1 2.4.0 2.4.1 2.5.0 2.5.1 2.6.0 "
             "2.7.0 2.7.1 2.8.0 2.9.0 2.9.1 2.10.0 2.11.0 2.12.0 2.12.1 2.13.0",
}


@lru_cache(maxsize=None)
def known_releases(framework: str) -> tuple[Version, ...]:
    """The releases of `framework` shardshift knows, oldest first."""
    return tuple(tuple(int(p) for p in v.split(".")) for v in _RELEASES.get(framework, "").split())



def newest(framework: str) -> Version:
    """The newest release of `framework` shardshift knows (the one its tables describe)."""
    return known_releases(framework)[-1]


# Package names (PEP 503-normalised) -> the framework; conda's `pytorch` is torch.
_PACKAGES = {"deepspeed": "deepspeed", "megatron-core": "megatron-core", "accelerate": "accelerate",
             "transformers": "transformers", "axolotl": "axolotl", "torchtitan": "torchtitan", "torch": "torch",
             "pytorch": "torch"}
# Shell variables that name a framework's version (torchforge's assets/versions.sh).
_VARIABLES = {"PYTORCH": "torch", "TORCH": "torch", "TORCHTITAN": "torchtitan", "DEEPSPEED": "deepspeed",
              "TRANSFORMERS": "transformers", "ACCELERATE": "accelerate", "AXOLOTL": "axolotl",
              "MEGATRON_CORE": "megatron-core", "MCORE": "megatron-core"}

# Patterns below are compiled on first use (re caches them), not when a `check` starts.
# Ranks within one directory: lower wins. UNPINNED (listed or installed without a version) and FORK
# (installed from another repository than the framework's own) are used only when no directory up to
# the repository root pins a version.
LOCKED, EXACT, RANGE, UNPINNED, FORK = 0, 1, 2, 3, 4
# The framework's own repositories (owner/name, lower case): a git install from any other is a fork.
UPSTREAM = {
    "deepspeed": {"microsoft/deepspeed", "deepspeedai/deepspeed"},
    "megatron-core": {"nvidia/megatron-lm"},
    "accelerate": {"huggingface/accelerate"},
    "transformers": {"huggingface/transformers"},
    "axolotl": {"axolotl-ai-cloud/axolotl", "openaccess-ai-collective/axolotl"},
    "torchtitan": {"pytorch/torchtitan"},
    "torch": {"pytorch/pytorch"},
}
_REPOSITORY_NAMES = {"deepspeed": "deepspeed", "megatron-lm": "megatron-core", "accelerate": "accelerate",
                     "transformers": "transformers", "axolotl": "axolotl", "torchtitan": "torchtitan",
                     "pytorch": "torch"}
# `git+https://github.com/owner/name(.git)@ref` and `git clone [-b ref] https://github.com/owner/name(.git) [-b ref]`
_GIT_URL = (r"git\+(?:https?|ssh)://(?:git@)?github\.com[/:]([\w.-]+)/([\w.-]+?)(?:\.git)?(?:@([\w./-]+))?"
             r"(?=[\s\"'#;&|)\]]|$)")
_CLONE = (r"\bgit\s+clone\b([^\n;&|]*?)(?:https?://|git@)github\.com[/:]([\w.-]+)/([\w.-]+?)(?:\.git)?"
          r"(?=[\s\"';&|)]|$)([^\n;&|]*)")
# Side folders whose dependency files count as their parent's (a repository's `requirements/`).
_SIDE_DIRS = ("requirements", "docker", "scripts", "setup", "assets", "env", "envs", "install", ".devcontainer")
_MAX_FILES_PER_DIR = 40
_MAX_BYTES = 2_000_000
# a Python file is read for the image tags it names only up to this size (a job definition is short)
_MAX_PYTHON_BYTES = 200_000
_MAX_PYTHON_FILES_PER_DIR = 20


@dataclass(frozen=True, slots=True)
class Pin:
    framework: str
    spec: str  # "==0.12.2", ">=4.31.0", "0.12.2 (locked)"
    line: int
    rank: int
    text: str  # the pin as written
    file: str = ""  # set for a pin read through `-r` (the file it is in)


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name.strip().lower())


def framework_of(name: str) -> str | None:
    return _PACKAGES.get(normalise(name))


def _version(text: str) -> Version | None:
    """`2.6.0+cu124` -> (2, 6, 0); `0.2.0rc1` -> (0, 2, 0); None when there is no number."""
    match = re.match(r"\s*v?(\d+(?:\.\d+)*)", text)
    if match is None:
        return None
    parts = match.group(1).split(".")
    # a part of more than 9 digits is no release number (and int() refuses 4,300 digits)
    return tuple(int(p) for p in parts) if all(len(p) <= 9 for p in parts) else None


def _padded(version: Version, size: int = 3) -> Version:
    return tuple(version) + (0,) * (size - len(version))


_SPEC = re.compile(r"(===|==|~=|!=|<=|>=|<|>|\^|~|=)?\s*(v?[0-9][0-9A-Za-z.*+!_-]*)")


def _satisfies(version: Version, spec: str) -> bool:
    """Whether `version` meets every clause of a PEP 440 / poetry specifier (`>=4.2,<5`, `^1.2`)."""
    spec = re.sub(r"(?<=[<>=!~^])\s+", "", spec)  # ">= 4.31.0" -> ">=4.31.0"
    for clause in re.split(r"[,\s]+", spec):
        clause = clause.strip()
        if not clause:
            continue
        match = _SPEC.fullmatch(clause)
        if match is None:
            return False
        op, raw = match.group(1) or "==", match.group(2)
        if raw.endswith(".*"):
            prefix = _version(raw[:-2]) or ()
            same = tuple(version[:len(prefix)]) == prefix
            if (op in ("==", "=") and not same) or (op == "!=" and same):
                return False
            continue
        bound = _version(raw)
        if bound is None:
            return False
        size = max(len(bound), len(version), 3)
        v, b = _padded(version, size), _padded(bound, size)
        if op in ("==", "===", "=") and v != b:
            return False
        if op == "!=" and v == b:
            return False
        if (op == ">=" and v < b) or (op == ">" and v <= b) or (op == "<=" and v > b) or (op == "<" and v >= b):
            return False
        if op == "~=":  # compatible release: >= bound, same prefix but the last part
            prefix = bound[:-1] if len(bound) > 1 else bound
            if v < b or tuple(version[:len(prefix)]) != tuple(prefix):
                return False
        if op == "^":  # poetry caret: same left-most non-zero part
            first = next((i for i, p in enumerate(bound) if p), len(bound) - 1)
            if v < b or tuple(version[:first + 1]) != tuple(bound[:first + 1]):
                return False
        if op == "~":  # poetry tilde: same major.minor (same major when only a major is given)
            keep = 2 if len(bound) >= 2 else 1
            if v < b or tuple(version[:keep]) != tuple(bound[:keep]):
                return False
    return True


def resolve(framework: str, spec: str) -> Version | None:
    """The version a specifier stands for: an exact pin's, else the newest known release it allows."""
    spec = spec.strip()
    exact = re.fullmatch(r"(?:===|==|=)?\s*v?(\d+(?:\.\d+)*)(?:[a-z]+\d*|\.post\d+|\+[\w.]+)?", spec)
    if exact:
        return _version(exact.group(1))
    allowed = [v for v in known_releases(framework) if _satisfies(v, spec)]
    return max(allowed) if allowed else None


def _is_exact(spec: str) -> bool:
    return re.fullmatch(r"(?:===|==|=)?\s*v?\d+(?:\.\d+)*(?:[a-z]+\d*|\.post\d+|\+[\w.]+)?", spec.strip()) is not None


# --- parsing one requirement -------------------------------------------------------------------

MAX_SHOWN = 200  # characters of a pin shown in a report
_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*\(?\s*([^;#@]*)")


def requirement(text: str, line: int, rank_if_exact: int = EXACT) -> Pin | None:
    """A pin of a framework from a PEP 508 requirement (`torch==2.6.0+cu124 ; python_version>'3'`,
    `torchtitan @ git+https://github.com/pytorch/torchtitan@v0.2.1`), an UNPINNED one for a framework
    listed without a version, or None (another package)."""
    match = _REQUIREMENT.match(text)
    if match is None:
        return None
    framework = framework_of(match.group(1))
    # pip's own options after the requirement (`--hash=...`, `-i URL`) are no part of its specifier
    spec = re.split(r"\s-{1,2}[A-Za-z]", match.group(2), maxsplit=1)[0].strip().rstrip(")").strip()
    if framework is not None and "@" in text and re.search(_GIT_URL, text):
        return git_pin(text, line, framework)
    if framework is not None and not spec and re.fullmatch(r"\s*[A-Za-z0-9][A-Za-z0-9._-]*\s*(?:\[[^\]]*\])?\s*"
                                                            r"(?:;.*)?", text):
        return Pin(framework, "", line, UNPINNED, match.group(1)[:MAX_SHOWN])
    if framework is None or not spec or not re.search(r"\d", spec):
        return None
    if re.match(r"^[A-Za-z]", spec):  # "torch @ ..." was cut at "@"; "x in y" is no specifier
        return None
    # what is shown of the pin is the pin itself, never the rest of its line
    return Pin(framework, spec, line, rank_if_exact if _is_exact(spec) else RANGE,
               f"{match.group(1)}{spec}"[:MAX_SHOWN])


def git_pin(text: str, line: int, framework: str | None = None) -> Pin | None:
    """The pin a git install gives: a version tag (`@v0.2.1`) is an exact pin, the upstream default
    branch or another branch is UNPINNED (the newest when installed), another repository a FORK."""
    found = re.search(_GIT_URL, text)
    if found is None:
        return None
    owner, name, ref = found.group(1), found.group(2), found.group(3)
    return _repository_pin(owner, name, ref, line, found.group(0)[:MAX_SHOWN], framework)


def _repository_pin(owner: str, name: str, ref: str | None, line: int, text: str,
                    framework: str | None = None) -> Pin | None:
    framework = framework or _REPOSITORY_NAMES.get(name.lower())
    if framework is None or _REPOSITORY_NAMES.get(name.lower()) not in (framework, None):
        return None
    if f"{owner}/{name}".lower() not in UPSTREAM.get(framework, ()):
        return Pin(framework, "", line, FORK, f"{owner}/{name}" + (f"@{ref}" if ref else ""))
    tag = re.fullmatch(r"(?:v|core_r|release[-_/]?v?)?(\d+(?:\.\d+)+)", ref or "")
    if tag:
        return Pin(framework, tag.group(1), line, EXACT, text)
    return Pin(framework, "", line, UNPINNED, text)


def _git_installs(text: str) -> list[Pin]:
    """The frameworks a script or a config's own set-up section installs from git (pip install
    git+..., git clone)."""
    pins: list[Pin] = []
    if "github.com" not in text:
        return pins
    for number, raw in enumerate(text.splitlines(), 1):
        if "github.com" not in raw or len(raw) > 4000:  # an install line is short: no pattern runs long
            continue
        for found in re.finditer(_GIT_URL, raw):
            pin = _repository_pin(found.group(1), found.group(2), found.group(3), number, raw.strip())
            if pin is not None:
                pins.append(pin)
        for found in re.finditer(_CLONE, raw):
            branch = re.search(r"(?:-b|--branch)(?:\s+|=)(\S+)", found.group(1) + " " + found.group(4))
            pin = _repository_pin(found.group(2), found.group(3), branch.group(1) if branch else None, number,
                                  raw.strip())
            if pin is not None:
                pins.append(pin)
    return pins


# --- one file -> its pins -------------------------------------------------------------------------


def _read(path: str) -> str | None:
    from shardshift.context.tree import read_text as once
    from shardshift.files import read_text

    # the run's one read of the file, shared with the context searches (a file past their 1 MB,
    # up to this module's 2 MB, is read here alone)
    text = once(path)
    return text if text is not None else read_text(path, _MAX_BYTES, bom=False)


def file_pins(path: str) -> tuple[Pin, ...]:
    """The framework pins a dependency file gives (cached by path, size and modification time)."""
    try:
        stat = os.stat(path)
    except OSError:
        return ()
    return _file_pins(path, stat.st_size, stat.st_mtime_ns)


@lru_cache(maxsize=512)
def _file_pins(path: str, size: int, mtime: int) -> tuple[Pin, ...]:
    name = os.path.basename(path)
    lower = name.lower()
    if lower.endswith(".py") and name != "setup.py" and size > _MAX_PYTHON_BYTES:
        return ()
    text = _read(path)
    if text is None:
        return ()
    try:
        if lower.endswith(".txt") and ("requirements" in lower or os.path.basename(os.path.dirname(path)) == "requirements"):
            return tuple(_requirements_txt(path, text, set()))
        if lower == "version.txt":
            return ()  # read only as a vendored copy's version file (_vendored)
        if name == "pyproject.toml":
            return tuple(_pyproject(text))
        if name == "setup.py":
            return tuple(_setup_py(text))
        if name == "setup.cfg":
            return tuple(_setup_cfg(text))
        if name in ("uv.lock", "poetry.lock"):
            return tuple(_toml_lock(text))
        if name in ("conda-lock.yml", "conda-lock.yaml"):
            return tuple(_conda_lock(text))
        if lower.startswith("environment") and lower.endswith((".yml", ".yaml")):
            return tuple(_conda_environment(text))
        if name.startswith("Dockerfile") or lower.endswith(".dockerfile"):
            return tuple(_shell(text, docker=True))
        if lower.endswith(".sh"):
            return tuple(_shell(text, docker=False))
        if lower.endswith(".py"):
            return tuple(_python_images(text))
        if lower.endswith((".yml", ".yaml")) and ("compose" in lower or lower.startswith("docker")):
            return tuple(_shell(text, docker=False))
        if lower.startswith("readme") and lower.endswith(".md"):
            return tuple(_shell(_fenced_shell(text), docker=False)) if "install" in text or "clone" in text else ()
    except (ValueError, TypeError, RecursionError, SyntaxError):
        return ()
    return ()


def _requirements_txt(path: str, text: str, seen: set[str]) -> list[Pin]:
    seen.add(os.path.abspath(path))
    pins: list[Pin] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        include = re.match(r"^(?:-r|--requirement|-c|--constraint)\s*=?\s*(\S+)", line)
        if include:
            target = os.path.join(os.path.dirname(path), include.group(1))
            # an include that leaves the repository is another tree's file: not read
            from shardshift.files import inside

            if not inside(target, (repository_root(path),)):
                continue
            if os.path.abspath(target) not in seen and os.path.isfile(target):
                included = _read(target)
                if included is not None:
                    # an included file's pins keep their own file:line (the place is that file)
                    pins.extend(p if p.file else replace(p, file=target)
                                for p in _requirements_txt(target, included, seen))
            continue
        if line.startswith("-") and not line.startswith("-e"):
            continue
        if "github.com" in line:
            pin = git_pin(line, number)
            if pin is not None:
                pins.append(pin)
            continue
        pin = requirement(line, number)
        if pin is not None:
            pins.append(pin)
    return pins


def _line_of(text: str, needle: str, start: int = 0) -> int:
    index = text.find(needle, start)
    return text.count("\n", 0, index) + 1 if index >= 0 else 1


# A quoted PEP 508 requirement with a version specifier: `"torch>=2.9.0,<=2.13.0"`, `"axolotl[deepspeed]==0.12.2"`.
_QUOTED_REQUIREMENT = re.compile(
    r"""["']([A-Za-z0-9][A-Za-z0-9._-]*\s*(?:\[[^\]]*\])?\s*(?:===|==|~=|!=|<=|>=|<|>)\s*[0-9][^"';]*(?:;[^"']*)?)["']""")


def _pyproject(text: str) -> list[Pin]:
    """PEP 621 dependencies and optional-dependencies, dependency groups, a project's own lists
    under [tool.*] (any quoted requirement with a specifier), and poetry's dependency tables.
    Read line by line, without a TOML parser: every requirement string is on one line, and a
    start-up that reads one pyproject.toml must not pay for tomllib."""
    pins: list[Pin] = []
    section = ""
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and not line.startswith(("[\"", "['")):
            section = line.strip("[] ").lower()
            continue
        if section.startswith("tool.poetry") and section.endswith("dependencies"):
            poetry = re.match(r"""^["']?([A-Za-z0-9][\w.-]*)["']?\s*=\s*(.+)$""", line)
            if poetry and framework_of(poetry.group(1)):
                value = poetry.group(2)
                found = re.search(r"""version\s*=\s*["']([^"']+)["']""", value) if value.startswith("{") \
                    else re.match(r"""["']([^"']+)["']""", value)
                spec = found.group(1) if found else ""
                if re.search(r"\d", spec):
                    pins.append(Pin(framework_of(poetry.group(1)), spec, number, EXACT if _is_exact(spec) else RANGE,
                                    f'{poetry.group(1)} = "{spec}"'))
            continue
        for match in _QUOTED_REQUIREMENT.finditer(line):
            pin = requirement(match.group(1), number)
            if pin is not None:
                pins.append(pin)
        if "git+" in line:
            for match in re.finditer(r"""["']([A-Za-z0-9][\w.-]*\s*(?:\[[^\]]*\])?\s*@\s*git\+[^"']+)["']""", line):
                pin = requirement(match.group(1), number)
                if pin is not None:
                    pins.append(pin)
    return pins


def _setup_py(text: str) -> list[Pin]:
    """`install_requires` / `extras_require` strings of a `setup(...)` call, read with ast."""
    import ast

    tree = parse_user_code(text)
    pins: list[Pin] = []
    for node in walk_nodes(tree):
        if not isinstance(node, ast.Call):
            continue
        for keyword in node.keywords:
            if keyword.arg not in ("install_requires", "extras_require", "requires"):
                continue
            for item in walk_nodes(keyword.value):
                if isinstance(item, ast.Constant) and isinstance(item.value, str):
                    pin = requirement(item.value, item.lineno)
                    if pin is not None:
                        pins.append(pin)
    # module-level lists of requirement strings (REQUIRED = ["torch==2.1.0", ...]) passed by name
    for node in walk_nodes(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, (ast.List, ast.Tuple, ast.Dict)):
            for item in walk_nodes(node.value):
                if isinstance(item, ast.Constant) and isinstance(item.value, str):
                    pin = requirement(item.value, item.lineno)
                    if pin is not None and pin not in pins and re.search(r"[=<>~]", item.value):
                        pins.append(pin)
    return pins


def _setup_cfg(text: str) -> list[Pin]:
    pins: list[Pin] = []
    inside = False
    for number, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if stripped.startswith("["):
            inside = stripped in ("[options]", "[options.extras_require]")
            continue
        if not inside or not stripped or stripped.startswith(("#", ";")):
            continue
        value = stripped.split("=", 1)[1] if re.match(r"^[\w-]+\s*=(?!=)", stripped) else stripped
        pin = requirement(value.strip(), number)
        if pin is not None:
            pins.append(pin)
    return pins


def _newest_per_framework(pins: list[Pin]) -> list[Pin]:
    """A lock file that resolves a package twice (per platform: torch 2.2.2 on Intel macs, 2.6.0
    elsewhere) gives the newest: a GPU training run is not on the older platform."""
    best: dict[str, Pin] = {}
    for pin in pins:
        known = best.get(pin.framework)
        if known is None or (_version(pin.spec) or ()) > (_version(known.spec) or ()):
            best[pin.framework] = pin
    return list(best.values())


def _locked(text: str, pattern: str, line_offset: int) -> list[Pin]:
    """The packages a lock file lists (`pattern`'s groups: name, version), one pin per framework;
    `line_offset` is the line reported, counted from the match's first line (1)."""
    pins: list[Pin] = []
    for match in re.finditer(pattern, text):
        framework = framework_of(match.group(1))
        if framework is not None:
            line = text.count("\n", 0, match.start()) + line_offset
            pins.append(Pin(framework, match.group(2), line, LOCKED, f"{match.group(1)} {match.group(2)} (locked)"))
    return _newest_per_framework(pins)


def _toml_lock(text: str) -> list[Pin]:
    """uv.lock / poetry.lock: `[[package]] name = "torch" version = "2.6.0"`."""
    return _locked(text, r'(?m)^\[\[package\]\]\s*\nname\s*=\s*"([^"]+)"\s*\nversion\s*=\s*"([^"]+)"', 2)


def _conda_lock(text: str) -> list[Pin]:
    """conda-lock.yml: `- name: pytorch` then `version: 2.0.1`."""
    return _locked(text, r"(?m)^- name: ([\w.-]+)\s*\n\s+version: '?([\w.+-]+)'?", 1)


def _conda_environment(text: str) -> list[Pin]:
    """`- pytorch=2.2.2=py3.10...` (conda) and `- deepspeed==0.12.2` (its pip list)."""
    pins: list[Pin] = []
    for number, raw in enumerate(text.splitlines(), 1):
        match = re.match(r"^\s*-\s+([^\s#]+)", raw)
        if match is None:
            continue
        item = match.group(1).split("::")[-1]
        conda = re.fullmatch(r"([A-Za-z0-9][\w.-]*)=([0-9][\w.*+]*)(?:=[\w.*]+)?", item)
        if conda:
            framework = framework_of(conda.group(1))
            if framework is not None:
                spec = conda.group(2)
                pins.append(Pin(framework, spec, number, EXACT if _is_exact(spec) else RANGE, item))
            continue
        pin = requirement(item, number)
        if pin is not None:
            pins.append(pin)
    return pins


_FENCE = r"^(\s*)(```|~~~)\s*(bash|sh|shell|console|zsh|)\s*$"


def _fenced_shell(text: str) -> str:
    """The shell blocks of a README (```bash, ```sh, ```shell, ```console or a bare fence), other
    lines blanked so that line numbers stay those of the README: many repositories document their
    installs only there."""
    out: list[str] = []
    block: bool | None = None  # None: outside a fence; else whether the open block is shell
    for line in text.splitlines():
        if line.strip().startswith(("```", "~~~")):
            block = (re.match(_FENCE, line) is not None) if block is None else None
            out.append("")
            continue
        # only install lines can pin: the rest of a long README is not read again by _shell
        keep = block and ("install" in line or "clone" in line or "_VERSION" in line)
        out.append(line.strip().lstrip("$ ") if keep else "")
    return "\n".join(out)


def _shell(text: str, docker: bool) -> list[Pin]:
    """`pip install a==1 b>=2` lines (with `\\` continuations), `uv pip install`, `X_VERSION="1.2"`
    assignments, and the tag of a `FROM pytorch/pytorch:2.0.1-...` image."""
    pins: list[Pin] = []
    lines = text.splitlines()
    for number, raw in enumerate(lines, 1):
        line = raw.split("#", 1)[0] if not raw.lstrip().startswith("#") else ""
        if not line.strip():
            continue
        if docker:
            image = re.match(r"^\s*FROM\s+(?:--\S+\s+)*(?:docker\.io/)?pytorch/pytorch:v?(\d+\.\d+(?:\.\d+)?)", line, re.I)
            if image:
                pins.append(Pin("torch", image.group(1), number, EXACT, line.strip()))
        pins += _image_pins(line, number)
        variable = re.match(r'^\s*(?:export\s+|ARG\s+|ENV\s+)?([A-Z_]+?)_VERSION\s*=\s*["\']?v?(\d+(?:\.\d+)+)["\']?\s*$', line)
        if variable and variable.group(1) in _VARIABLES:
            pins.append(Pin(_VARIABLES[variable.group(1)], variable.group(2), number, EXACT, line.strip()))
            continue
        for command in re.finditer(r"\bpip3?\s+install\b(.*?)(?:&&|;|\|\||$)", line):
            for word in command.group(1).split():
                word = word.strip("'\"")
                if word.startswith("-") or "://" in word or "/" in word or "@" in word:
                    continue
                pin = requirement(word, number)
                if pin is not None:
                    pins.append(pin)
    pins += _git_installs(text)
    return pins


# A framework's own container image named with a release tag: `axolotlai/axolotl:0.19.0-py3.12-cu130-2.13.0`
# runs Axolotl 0.19.0 on torch 2.13.0 (the image's tag scheme: release, Python, CUDA, torch); a `main-...`
# or `latest` tag names no release.
_IMAGE = re.compile(r"(?<![\w.-])(?:docker\.io/)?(?:axolotlai|winglian)/axolotl(?:-cloud)?:"
                    r"(v?\d+\.\d+\.\d+|main|latest|nightly|dev)((?:-[A-Za-z0-9.]+)*)")
# a tag that names a branch build, not a release: moving while the branch builds, frozen at an unknown
# commit once it stops (main-py3.11-cu124-2.5.1 was last built when Axolotl left torch 2.5.1)
BUILD_TAGS = ("main", "latest", "nightly", "dev")
BUILD = 5  # rank of such a tag: a fallback like an unpinned listing (any version pin up to the root wins over it),
# preferred to one and to a fork: the image is what the job runs


def _image_pins(line: str, number: int) -> list[Pin]:
    pins: list[Pin] = []
    for image in _IMAGE.finditer(line):
        shown = image.group(0)
        tag = image.group(1)
        if tag in BUILD_TAGS:
            pins.append(Pin("axolotl", "", number, BUILD, shown))
        else:
            pins.append(Pin("axolotl", tag.lstrip("v"), number, EXACT, shown))
        parts = image.group(2).split("-")
        if len(parts) >= 3 and any(p.startswith("cu") for p in parts) and re.fullmatch(r"\d+\.\d+\.\d+", parts[-1]):
            pins.append(Pin("torch", parts[-1], number, EXACT, shown))
    return pins


def _python_images(text: str) -> list[Pin]:
    """The image tags a Python file names (a job definition: `modal.Image.from_registry("axolotlai/axolotl:0.17.0")`,
    a launcher's default image); nothing else of a Python file is read as a pin."""
    if "/axolotl" not in text:
        return []
    pins: list[Pin] = []
    for number, line in enumerate(text.splitlines(), 1):
        if "/axolotl" in line and not line.lstrip().startswith("#"):
            pins += _image_pins(line, number)
    return pins

# --- vendored copies ----------------------------------------------------------------------------


def _vendored(directory: str, framework: str) -> tuple[Pin, str] | None:
    """The version of a copy of `framework` kept in `directory` (a vendored source tree, or the
    repository being the framework itself): (pin, the version file)."""
    candidates: list[tuple[str, str]] = []  # (file, kind)
    if framework == "deepspeed":
        candidates = [(os.path.join(directory, d, "version.txt"), "txt") for d in ("DeepSpeed", "deepspeed")]
        candidates.append((os.path.join(directory, "deepspeed", "git_version_info_installed.py"), "py"))
    elif framework == "torchtitan":
        candidates = [(os.path.join(directory, "torchtitan", "assets", "version.txt"), "txt")]
        if _names_itself(directory, "torchtitan"):
            candidates.append((os.path.join(directory, "assets", "version.txt"), "txt"))
    elif framework == "megatron-core":
        candidates = [(os.path.join(directory, "megatron", "core", "package_info.py"), "megatron")]
    elif framework == "axolotl" and _names_itself(directory, "axolotl"):
        # the repository is Axolotl itself (a fork or checkout): VERSION (pyproject's dynamic version, from
        # 0.13), or src/axolotl/__init__.py's __version__ before
        candidates = [(os.path.join(directory, "VERSION"), "txt"),
                      (os.path.join(directory, "src", "axolotl", "__init__.py"), "init")]
    for path, kind in candidates:
        if not os.path.isfile(path):
            continue
        text = _read(path) or ""
        if kind == "txt":
            match = re.match(r"\s*v?(\d+(?:\.\d+)+)", text)
        elif kind == "py":
            match = re.search(r"""(?m)^version\s*=\s*['"](\d+(?:\.\d+)+)""", text)
        elif kind == "init":
            match = re.search(r"""(?m)^__version__\s*=\s*['"](\d+(?:\.\d+)+)""", text)
        else:
            parts = [re.search(rf"(?m)^{n}\s*=\s*(\d+)", text) for n in ("MAJOR", "MINOR", "PATCH")]
            match = None
            if all(parts):
                version = ".".join(p.group(1) for p in parts)  # type: ignore[union-attr]
                return Pin(framework, version, 1, LOCKED, f"{framework} {version} (vendored copy)"), path
        if match:
            version = match.group(1)
            line = text.count("\n", 0, match.start(1)) + 1
            return Pin(framework, version, line, LOCKED, f"{framework} {version} (vendored copy)"), path
    return None


def _names_itself(directory: str, package: str) -> bool:
    text = _read(os.path.join(directory, "pyproject.toml")) or ""
    return re.search(rf'(?m)^name\s*=\s*"{package}"', text) is not None


# --- the walk -----------------------------------------------------------------------------------


def _dependency_files(directory: str) -> list[str]:
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []

    def plain_python(name: str) -> bool:  # read only for the image tags it names (_python_images)
        return name.endswith(".py") and name != "setup.py"

    files = [os.path.join(directory, n) for n in names if _is_dependency_file(n) and not plain_python(n)
             and os.path.isfile(os.path.join(directory, n))]
    for side in _SIDE_DIRS:
        folder = os.path.join(directory, side)
        if not os.path.isdir(folder):
            continue
        for root, dirs, inner in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for n in sorted(inner):
                if (_is_dependency_file(n) and not plain_python(n)) or (side == "requirements" and n.endswith(".txt")):
                    files.append(os.path.join(root, n))
            if len(files) > _MAX_FILES_PER_DIR:
                break
    # the directory's own Python files last, bounded apart, so that they never crowd a requirements file out
    python = [os.path.join(directory, n) for n in names if plain_python(n)][:_MAX_PYTHON_FILES_PER_DIR]
    return files[:_MAX_FILES_PER_DIR] + [p for p in python if os.path.isfile(p)]


def _is_dependency_file(name: str) -> bool:
    if name.lower() in ("readme.md", "readme_en.md"):
        return True
    lower = name.lower()
    return ((lower.startswith("requirements") and lower.endswith(".txt"))
            or name in ("pyproject.toml", "setup.py", "setup.cfg", "uv.lock", "poetry.lock", "conda-lock.yml",
                        "conda-lock.yaml")
            or (lower.startswith("environment") and lower.endswith((".yml", ".yaml")))
            or name.startswith("Dockerfile") or lower.endswith(".dockerfile") or lower.endswith(".sh")
            or lower.endswith(".py")
            or (lower.endswith((".yml", ".yaml")) and ("compose" in lower or lower.startswith("docker"))))


def detect(framework: str, path: str, tops: tuple[str, ...] = ()) -> Release:
    """The pin of `framework` that governs the file at `path`, or the newest release when no pin
    is found. `tops` are the trees given to check (a walk stops at their top). A set-up section of
    the file itself (a runner's `pip install git+...` in the config) is read first. A listing or
    install without a version, or from a fork, counts only when nothing up to the root pins one."""
    if framework not in FRAMEWORKS:
        return Release(framework, None, "no pin found")
    root = repository_root(path, tops)
    directory = os.path.dirname(os.path.abspath(path)) if not os.path.isdir(path) else os.path.abspath(path)
    fallback: tuple[Pin, str] | None = None
    if not os.path.isdir(path):
        own = [p for p in _own_pins(path) if p.framework == framework]
        if own:
            best_own = min(own, key=lambda p: p.rank)
            if best_own.rank < UNPINNED or best_own.rank == FORK:
                return _release(framework, best_own, path, root)
            fallback = (best_own, path)
    while True:
        best: tuple[Pin, str] | None = None
        vendored = _vendored(directory, framework)
        if vendored is not None:
            best = vendored
        for file in _dependency_files(directory):
            for pin in file_pins(file):
                if pin.framework != framework:
                    continue
                where = pin.file or file
                if pin.rank >= UNPINNED:
                    if fallback is None or pin.rank > fallback[0].rank:
                        fallback = (pin, where)  # a fork wins over an unpinned listing
                    continue
                if best is None or pin.rank < best[0].rank:
                    best = (pin, where)
        if best is not None:
            return _release(framework, best[0], best[1], root)
        if directory == root:
            break
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    if fallback is not None:
        return _release(framework, fallback[0], fallback[1], root)
    return Release(framework, None, "no pin found")


def _own_pins(path: str) -> tuple[Pin, ...]:
    """Git installs a config names in its own set-up section (a runner's `pip install git+...`)."""
    if not path.endswith((".yaml", ".yml", ".toml", ".json")):
        return ()
    text = _read(path)
    return tuple(_git_installs(text)) if text else ()


def _release(framework: str, pin: Pin, file: str, root: str) -> Release:
    place = f"{os.path.relpath(file, root).replace(os.sep, '/')}:{pin.line}"
    if pin.rank == UNPINNED:
        return Release(framework, None, place, pin.text, "unpinned")
    if pin.rank == FORK:
        return Release(framework, None, place, pin.text, "fork")
    if pin.rank == BUILD:
        return Release(framework, None, place, pin.text, "build")
    version = resolve(framework, pin.spec)
    if pin.rank == RANGE and version is None:
        return Release(framework, None, place, f"{pin.text} (allows no release shardshift knows)")
    return Release(framework, version, place, pin.text)
