"""Implicit failure sites of DeepSpeed's config parser (issue 33): where DeepSpeed fails on a config value with
no `raise` or `assert` written for it (TypeError, ZeroDivisionError, AttributeError, KeyError: the parser
computing with the value). A site is the exception's type and the innermost line of DeepSpeed that raised it.

Used in a child process (it imports DeepSpeed): tests/test_coverage_implicit.py and bench/mutation_deepspeed.py.
The other frameworks' children there reuse `raising_site` and `mutated_sites`; Megatron-LM's launch scripts have
their own helpers at the end (a flag's neighbours by its type, the script of a mutant, which failures are written
refusals and which are this machine's).
"""

from __future__ import annotations

import ast
import copy
import functools
import json
import os
import traceback
import types
from pathlib import Path

# what DeepSpeed's parser raises on purpose (its own checks: the call-graph map's sites)
EXPLICIT = ("ValueError", "AssertionError", "ValidationError", "DeepSpeedConfigError")


def raising_site(error: BaseException, package) -> str | None:
    """"<Exception> <package>/<file>:<qualified function>:<line>" of the innermost frame of `package` (a
    framework's imported top-level module) that `error` passed through, or None where it passed through none."""
    root = os.path.dirname(package.__file__)
    inside = [(frame, line) for frame, line in traceback.walk_tb(error.__traceback__)
              if frame.f_code.co_filename.startswith(root)]
    if not inside:
        return None
    frame, line = inside[-1]
    where = f"{package.__name__}/" + os.path.relpath(frame.f_code.co_filename, root).replace(os.sep, "/")
    return f"{type(error).__name__} {where}:{frame.f_code.co_qualname}:{line}"


def site_of(config: dict, world: int) -> str | None:
    """The implicit site DeepSpeedConfig(config) fails at on `world` ranks, None where it accepts the config or
    refuses it on purpose."""
    import oracles

    deepspeed = oracles.deepspeed_module()
    with oracles._world(world):
        try:
            deepspeed.runtime.config.DeepSpeedConfig(copy.deepcopy(config))
        except Exception as error:  # noqa: BLE001 - every failure is a result here
            if any(type(error).__name__.endswith(kind) for kind in EXPLICIT):
                return None
            if oracles.gpu_only(f"{type(error).__name__}: {error}"):
                return None
            return raising_site(error, deepspeed)
    return None


def leaves(value, pointer="", lists=True):
    """(JSON pointer, value) of every scalar; the items of lists too when `lists`."""
    if isinstance(value, dict):
        for key, child in value.items():
            yield from leaves(child, f"{pointer}/{key}", lists)
    elif isinstance(value, list):
        if lists:
            for index, child in enumerate(value):
                yield from leaves(child, f"{pointer}/{index}", lists)
    else:
        yield pointer, value


def neighbours(value):
    if isinstance(value, bool):
        return [not value, None, "true"]
    if isinstance(value, int):
        return [0, -1, value + 0.5, str(value), None]
    if isinstance(value, float):
        return [0, -1.0, str(value), None]
    if isinstance(value, str):
        return ["bogus", 0, None]
    return []


def put(config, pointer, value):
    out = copy.deepcopy(config)
    parts = pointer.strip("/").split("/")
    node = out
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node[part]
    last = parts[-1]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return out


def mutation_sites(sources: list[dict]) -> dict[str, int]:
    """Every implicit site DeepSpeed's parser fails at over the mutants of `sources` (each value of each config
    DeepSpeed accepts, "auto" filled as the Trainer fills it, swapped for its neighbours), with how many
    mutants reach it."""
    import oracles

    found: dict[str, int] = {}
    seen: set[str] = set()
    for config in sources:
        world, filled, _ = oracles.first_acceptance(config)
        if world is None:
            continue
        for pointer, value in leaves(filled):
            for mutant_value in neighbours(value):
                mutant = put(filled, pointer, mutant_value)
                key = json.dumps(mutant, sort_keys=True)
                if key in seen:
                    continue
                seen.add(key)
                site = site_of(mutant, world)
                if site is not None:
                    found[site] = found.get(site, 0) + 1
    return found


def mutated_sites(sources: list[tuple[dict, object]], site, write, added: dict | None = None,
                  near=None) -> dict[str, int]:
    """The implicit sites `site(path)` names (None: accepted; "explicit": refused on purpose) over the mutants of
    `sources`, (config, its own path) pairs whose file the framework accepts, each mutant written by
    `write(config) -> path` (None: a mutant the format cannot write); with how many mutants reach each.
    `added`: top-level keys with a value the framework takes, each one a source lacks given it (where the
    framework accepts that) and swapped for its neighbours too. `near(pointer, value)`: a value's neighbours where
    they depend on more than the value (a flag's type), else `neighbours(value)`."""
    found: dict[str, int] = {}
    near = near or (lambda pointer, value: neighbours(value))

    def record(mutant):
        written = write(mutant)
        where = site(written) if written is not None else None
        if where not in (None, "explicit"):
            found[where] = found.get(where, 0) + 1

    for config, path in sources:
        if not isinstance(config, dict) or site(path) is not None:
            continue
        for pointer, value in leaves(config, lists=False):
            for mutant in near(pointer, value):
                record(put(config, pointer, mutant))
        for key, value in (added or {}).items():
            written = None if key in config else write({**config, key: value})
            if written is None or site(written) is not None:
                continue
            for mutant in near(f"/{key}", value):
                record({**config, key: mutant})
    return found


# --- Megatron-LM: the flags of a launch script (tests/coverage_loaders/megatron.py runs them) ---------------------

# a failure of this CPU machine, not of the flags: a module it lacks, no GPU (megatron_oracle_child's stand-ins
# cover the device facts and Transformer Engine's version Megatron asks for; what else asks for them fails here)
MEGATRON_ENVIRONMENT = ("ImportError", "ModuleNotFoundError")
MEGATRON_ENVIRONMENT_WORDS = ("cuda", "transformer engine", "transformer_engine", "nccl", "nvidia")
SWITCH = "<given>"  # a flag that takes no value, given


@functools.lru_cache(maxsize=None)
def _statements(filename: str) -> list[ast.stmt]:
    tree = ast.parse(Path(filename).read_text(encoding="utf-8"))
    return [node for node in ast.walk(tree) if isinstance(node, ast.stmt)]


def written_refusal(error: BaseException, package) -> bool:
    """Whether the innermost frame of `package` that `error` passed through is a `raise` or `assert` statement (a
    refusal written for the value), not an operation that failed on it."""
    root = os.path.dirname(package.__file__)
    inside = [(frame, line) for frame, line in traceback.walk_tb(error.__traceback__)
              if frame.f_code.co_filename.startswith(root)]
    if not inside:
        return False
    frame, line = inside[-1]
    around = [node for node in _statements(frame.f_code.co_filename)
              if node.lineno <= line <= (node.end_lineno or node.lineno)]
    innermost = min(around, key=lambda node: (node.end_lineno or node.lineno) - node.lineno, default=None)
    return isinstance(innermost, (ast.Raise, ast.Assert))


def megatron_site(error: BaseException, megatron) -> str | None:
    """The implicit site of Megatron's `error` (the `megatron` package), "explicit" for a refusal Megatron writes
    (argparse's exit, a `raise`, an `assert`, or a failure outside Megatron's code), None for a failure of this
    machine (a module or a GPU it lacks)."""
    if megatron.__file__ is None:  # a namespace package (Megatron's `megatron` has no __init__.py)
        megatron = types.SimpleNamespace(__name__=megatron.__name__,
                                         __file__=os.path.join(list(megatron.__path__)[0], "__init__.py"))
    message = f"{type(error).__name__}: {error}".lower()
    if type(error).__name__ in MEGATRON_ENVIRONMENT or any(word in message for word in MEGATRON_ENVIRONMENT_WORDS):
        return None
    if isinstance(error, SystemExit) or written_refusal(error, megatron):
        return "explicit"
    return raising_site(error, megatron) or "explicit"


def megatron_flags(path) -> tuple[dict | None, dict]:
    """({"nproc_per_node": world, spelling: value, ...}, {spelling: the flag shardshift's table has}) of a launch
    script (a flag's several values as a tuple, mutated as one; a switch given as SWITCH), (None, {}) where its
    world size is not stated."""
    from shardshift.formats.megatron import read

    document = read(Path(path).read_text(encoding="utf-8"), str(path))
    world = document.plan.world.world_size
    if isinstance(world, bool) or not isinstance(world, int):
        return None, {}
    config: dict = {"nproc_per_node": world}
    flags = {}
    for given in document.data.given:
        value = given.value
        if isinstance(value, bool) and not given.flag.takes_value(given.spelling):
            value = SWITCH
        config[given.spelling] = tuple(value) if isinstance(value, list) else value
        flags[given.spelling] = given.flag
    return config, flags


def megatron_script(config: dict) -> str:
    """The launch script of `config` (megatron_flags' form; a None value: the flag left out)."""
    import shlex

    words = ["torchrun", "--nproc_per_node", str(config["nproc_per_node"]), "pretrain_gpt.py"]
    for spelling, value in config.items():
        if spelling == "nproc_per_node" or value is None:
            continue
        words.append(spelling)
        if value == SWITCH:
            continue
        words += [str(v) for v in value] if isinstance(value, tuple) else [str(value)]
    return "#!/bin/bash\n" + shlex.join(words) + "\n"


def megatron_neighbours(flag, value) -> list:
    """Values of `flag` argparse takes, beside `value` (a float where an int goes is argparse's refusal, MG004): 0, a
    negative, the next number (an int) and a huge one for a number; the other choices (four); the flag left out
    (None) for a switch; no value and one value for several."""
    if flag is None:
        return []
    if isinstance(value, tuple):
        return [(), value[:1]] if len(value) > 1 else [()]
    if value == SWITCH:
        return [None]
    if isinstance(value, bool):
        return [not value]
    if flag.choices:
        return [choice for choice in flag.choices if choice != value][:4]
    if isinstance(value, int):
        return [v for v in (0, -1, value + 1, 2**40) if v != value]
    if isinstance(value, float):
        return [v for v in (0.0, -1.0, 1e30) if v != value]
    if isinstance(value, str):
        return ["", "0"]
    return []


def megatron_near(flags: dict, per_neighbour: int):
    """`mutated_sites`' `near` for launch scripts: each flag's neighbours (megatron_neighbours), each (flag, value)
    pair tried on at most `per_neighbour` sources (the sources repeat the same model flags)."""
    tried: dict = {}

    def near(pointer, value):
        spelling = pointer.strip("/")
        out = []
        for mutant in megatron_neighbours(flags.get(spelling), value):
            tried[spelling, mutant] = tried.get((spelling, mutant), 0) + 1
            if tried[spelling, mutant] <= per_neighbour:
                out.append(mutant)
        return out

    return near
