"""Implicit failure sites of DeepSpeed's config parser (issue 33): where DeepSpeed fails on a config value with
no `raise` or `assert` written for it (TypeError, ZeroDivisionError, AttributeError, KeyError: the parser
computing with the value). A site is the exception's type and the innermost line of DeepSpeed that raised it.

Used in a child process (it imports DeepSpeed): tests/test_coverage_implicit.py and bench/mutation_deepspeed.py.
The other frameworks' children there reuse `raising_site` and `mutated_sites`; Megatron-LM's launch scripts and
FSDP2's sharding code have their own helpers at the end (a flag's neighbours by its type, the script of a mutant,
the literal arguments of an FSDP2 call rewritten with `ast`, which failures are written refusals and which are this
machine's).
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


def coverage_loader(framework: str):
    """tests/coverage_loaders/<framework>.py, loaded by path (the folder is no package) and prepared: what each
    framework's child here runs its fixtures and mutants through."""
    import importlib.util

    path = Path(__file__).resolve().parent / "coverage_loaders" / f"{framework}.py"
    spec = importlib.util.spec_from_file_location(f"{framework}_loader", path)
    loader = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loader)
    loader.prepare()
    return loader


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


# --- FSDP2: the literal arguments of fully_shard and its policies, meshes and setters in a fixture's code ----------

# the calls whose literal arguments are mutated: fully_shard, its policies and mesh, and FSDPModule's setters
FSDP2_CALLS = ("fully_shard", "MixedPrecisionPolicy", "CPUOffloadPolicy", "OffloadPolicy", "init_device_mesh",
               "DataParallelMeshDims", "set_reshard_after_forward", "set_requires_gradient_sync",
               "set_gradient_divide_factor", "set_reduce_scatter_max_input_buffers",
               "set_force_sum_reduction_for_comms", "set_reshard_after_backward", "set_is_last_backward",
               "set_unshard_in_backward", "set_requires_all_reduce")
FSDP2_DTYPES = ("float64", "int8", "float8_e4m3fn")
# a failure of this CPU machine, not of the value, told by its message: torch built without CUDA (a tensor, stream
# or device moved to "cuda" that the loader's cpu mesh did not turn into "cpu"), a backend only a GPU build has
# (NCCL, its symmetric memory), or a device index with no accelerator behind it (device type 0: torch.device(0) is
# the current accelerator's device 0, cuda:0 on a GPU machine, "Cannot access accelerator device when none is
# available" here)
FSDP2_ENVIRONMENT_WORDS = ("not compiled with cuda", "cuda is not available", "no cuda gpus", "nccl",
                           "found no nvidia driver", "cuda driver", "cannot access accelerator device")


def _is_dtype(node: ast.expr) -> bool:
    return (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "torch"
            and node.attr[:1].isalpha() and any(word in node.attr for word in ("float", "int", "bool", "complex")))


def fsdp2_neighbours(node: ast.expr) -> list[ast.expr]:
    """The neighbours of a literal argument, as expressions: an int's 0, -1, x+0.5, its text and None; a bool's
    negation, None, "true" and 2; a string's "bogus", 0 and None; a `torch.<dtype>`'s other dtypes, None and its
    name as a string. Nothing for what is not a literal."""
    if _is_dtype(node):
        return [*(ast.Attribute(ast.Name("torch", ast.Load()), name, ast.Load()) for name in FSDP2_DTYPES
                  if name != node.attr), ast.Constant(None), ast.Constant(node.attr)]
    if not isinstance(node, ast.Constant):
        return []
    value = node.value
    if isinstance(value, bool):
        values = [not value, None, "true", 2]
    elif isinstance(value, int):
        values = [0, -1, value + 0.5, str(value), None]
    elif isinstance(value, float):
        values = [0, -1.0, str(value), None]
    elif isinstance(value, str):
        values = ["bogus", 0, None]
    else:
        values = []
    return [ast.Constant(v) for v in values]


def _callee(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def fsdp2_mutants(text: str):
    """(what was swapped, the mutant's source) for each literal argument of the FSDP2_CALLS in `text` (a
    keyword's or a positional argument's value, each entry of a tuple or list of them) and each of its
    neighbours. What was swapped: "<call>(<argument>) <old> -> <new>"."""
    tree = ast.parse(text)
    places = []  # (call name, argument name, the parent node, the field, the index in it or None)
    for call in ast.walk(tree):
        if not isinstance(call, ast.Call) or _callee(call) not in FSDP2_CALLS:
            continue
        name = _callee(call)
        slots = [(f"#{i}", call.args, i) for i in range(len(call.args))]
        slots += [(kw.arg, kw, "value") for kw in call.keywords if kw.arg is not None]
        for argument, parent, field in slots:
            node = parent[field] if isinstance(field, int) else getattr(parent, field)
            if isinstance(node, (ast.Tuple, ast.List)):
                places += [(name, f"{argument}[{i}]", node.elts, i) for i in range(len(node.elts))]
            else:
                places.append((name, argument, parent, field))
    for name, argument, parent, field in places:
        original = parent[field] if isinstance(field, int) else getattr(parent, field)
        for neighbour in fsdp2_neighbours(original):
            if isinstance(field, int):
                parent[field] = neighbour
            else:
                setattr(parent, field, neighbour)
            yield f"{name}({argument}) {ast.unparse(original)} -> {ast.unparse(neighbour)}", ast.unparse(tree)
            if isinstance(field, int):
                parent[field] = original
            else:
                setattr(parent, field, original)


def fsdp2_site(error: BaseException, torch) -> str | None:
    """The implicit site of torch's `error`, "explicit" for a refusal torch writes (its innermost torch line is a
    `raise` or an `assert`) or a failure outside torch's code (the fixture's own line), None for a failure of this
    CPU machine (FSDP2_ENVIRONMENT_WORDS in its message)."""
    message = f"{type(error).__name__}: {error}".lower()
    if any(word in message for word in FSDP2_ENVIRONMENT_WORDS):
        return None
    if written_refusal(error, torch):
        return "explicit"
    return raising_site(error, torch) or "explicit"
