"""Which sites of Megatron's coverage map (scripts/coverage/scope_megatron.py) Megatron-LM's own argument path
reaches on each file, and what it raises (tests/coverage_loaders/megatron.py; a tool for judging the map).

    python scripts/coverage/megatron_probe.py FILE... [--world N] [--stage NAME]   # JSON: file -> error, sites

`--stage NAME`: the loader's `stage=NAME` (`startup`: the microbatch calculator and the process groups after the
arguments; others: tests/coverage_loaders/megatron_stages/NAME.py). `--startup` is `--stage startup`.
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parents[1] / "tests"), str(HERE), str(HERE.parents[1] / "src")]


def main(argv: list[str]) -> int:
    import coverage_child
    from sites import root_of, scope, sites

    from site_oracle import hits, reached

    options = {}
    if "--world" in argv:
        at = argv.index("--world")
        options["world"] = argv[at + 1]
        del argv[at:at + 2]
    if "--startup" in argv:
        argv.remove("--startup")
        options["stage"] = "startup"
    if "--stage" in argv:
        at = argv.index("--stage")
        options["stage"] = argv[at + 1]
        del argv[at:at + 2]
    loader = coverage_child.loader("megatron")
    loader.prepare()
    root = root_of(scope("megatron"))
    listed = sites("megatron")
    out = {}
    for path in argv:
        error, found = reached(functools.partial(loader.load, Path(path), **options), root, ("megatron/",))
        out[path] = {"error": None if error is None else str(error)[:300], "sites": [s.id for s in listed if hits(s, found)]}
    sys.__stdout__.write(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
