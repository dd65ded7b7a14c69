"""Implicit failure sites of DeepSpeed's config parser (issue 33): where DeepSpeed fails on a config value with
no `raise` or `assert` written for it (TypeError, ZeroDivisionError, AttributeError, KeyError: the parser
computing with the value). A site is the exception's type and the innermost line of DeepSpeed that raised it.

Used in a child process (it imports DeepSpeed): tests/test_coverage_implicit.py and bench/mutation_deepspeed.py.
"""

from __future__ import annotations

import copy
import json
import os
import traceback

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


def mutated_sites(sources: list[tuple[dict, object]], site, write, added: dict | None = None) -> dict[str, int]:
    """The implicit sites `site(path)` names (None: accepted; "explicit": refused on purpose) over the mutants of
    `sources`, (config, its own path) pairs whose file the framework accepts, each mutant written by
    `write(config) -> path` (None: a mutant the format cannot write); with how many mutants reach each.
    `added`: top-level keys with a value the framework takes, each one a source lacks given it (where the
    framework accepts that) and swapped for its neighbours too."""
    found: dict[str, int] = {}

    def record(mutant):
        written = write(mutant)
        where = site(written) if written is not None else None
        if where not in (None, "explicit"):
            found[where] = found.get(where, 0) + 1

    for config, path in sources:
        if not isinstance(config, dict) or site(path) is not None:
            continue
        for pointer, value in leaves(config, lists=False):
            for mutant in neighbours(value):
                record(put(config, pointer, mutant))
        for key, value in (added or {}).items():
            written = None if key in config else write({**config, key: value})
            if written is None or site(written) is not None:
                continue
            for mutant in neighbours(value):
                record({**config, key: mutant})
    return found
