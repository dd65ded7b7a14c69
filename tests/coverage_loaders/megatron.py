"""Megatron-LM's argument path on a launch script or argument list, for the coverage map
(tests/test_coverage_map.py).

`load(path, world=N)` does what `pretrain_gpt.py` does with the arguments before it builds anything,
with Megatron-LM's own code (../shared/oracles/megatron-lm): `parse_args()`, `validate_args(args)`,
`core_transformer_config_from_args(args)` (TransformerConfig's and ModelParallelConfig's
`__post_init__`), through tests/megatron_oracle_child.py's `Judge`, with its environment per case
and its stand-ins for what a CPU machine lacks (an H100's device facts, a Transformer Engine
version: the child's docstring lists them).

The words Megatron receives are those shardshift's reader finds in the file (the flags as written,
each with its values), as tests/test_rules_megatron_layout.py gives them to the same oracle; the
world size is the option `world`, else the one the file's launch states (torchrun's processes).
It raises what Megatron raises (as a RuntimeError naming the stage and the message: the Judge
catches Megatron's own exception, whose site the trace has already recorded).
"""

from __future__ import annotations

import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
_state: dict = {}


def prepare() -> None:
    if str(TESTS) not in sys.path:
        sys.path.insert(0, str(TESTS))
    import megatron_oracle_child as child

    judge = child.Judge(child.DEFAULT_MEGATRON)
    patches = judge.script._patched_imports()  # validate_args imports more of Megatron lazily
    patches.__enter__()
    _state.update(judge=judge, patches=patches)


def _words(document) -> list[str]:
    words: list[str] = []
    for given in document.data.given:
        words.append(given.spelling)
        if isinstance(given.value, bool) and not given.flag.takes_value(given.spelling):
            continue
        values = given.value if isinstance(given.value, list) else [given.value]
        words += [str(v) for v in values]
    return words


def load(path: Path, **options: str) -> None:
    from shardshift.formats.megatron import read

    document = read(path.read_text(encoding="utf-8"), str(path))
    world = options.get("world") or document.plan.world.world_size
    if isinstance(world, bool) or not isinstance(world, (int, str)) or not str(world).isdigit():
        raise ValueError(f"{path}: the launch states no world size; give the case `world=N`")
    verdict = _state["judge"](_words(document), int(world))
    if not verdict["ok"]:
        raise RuntimeError(f"Megatron refuses at {verdict['stage']}: {verdict['exception']}: {verdict['error']}")
