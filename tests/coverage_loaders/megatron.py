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

With `stage=startup` it goes on, with the validated arguments, as `pretrain` does before it builds
the model: `set_global_variables(args, build_tokenizer=False)` (megatron/training/global_vars.py: the
microbatch calculator, global batch against micro batch × data-parallel size, and the writers the
flags ask for; the tokenizer needs its files), then the process groups: a `fake` process group of
the world size on rank 0 (torch's FakeStore, which Megatron's own `--fake-process-group` uses) and
`initialize_model_parallel(...)` called with the keyword arguments `_initialize_distributed`
passes it, compiled from megatron/training/initialize.py itself (Megatron calls it only when it sees
a GPU), with `use_gloo_process_groups` off (a fake group cannot build gloo groups beside it).

Another `stage=NAME` runs tests/coverage_loaders/megatron_stages/NAME.py's `run(args, world)` after the
arguments are validated (each module's docstring says which of Megatron's own code it runs, and how).
"""

from __future__ import annotations

import contextlib
import sys
import types
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
        if given.problem:  # a value argparse refuses: the words as written, for Megatron's parser to refuse
            words += [str(w) for w in given.argv]
            continue
        words.append(given.spelling)
        if isinstance(given.value, bool) and not given.flag.takes_value(given.spelling):
            continue
        values = given.value if isinstance(given.value, list) else [given.value]
        words += [str(v) for v in values]
    return words


def _model_parallel_call():
    """`mpu.initialize_model_parallel(...)` as `_initialize_distributed` writes it, compiled from its file."""
    if "model_parallel" not in _state:
        import ast

        import megatron.training.initialize as initialize

        source = Path(initialize.__file__).read_text(encoding="utf-8")
        call = next(node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Call)
                    and ast.unparse(node.func) == "mpu.initialize_model_parallel")
        _state["model_parallel"] = compile(ast.Expression(call), initialize.__file__, "eval")
    return _state["model_parallel"]


@contextlib.contextmanager
def started(args, world: int):
    """Megatron's start-up as `pretrain` does it before it builds anything (the module docstring's stage=startup),
    undone on leaving: the process groups destroyed and the global variables reset, so that each case starts clean.
    The later stages (megatron_stages/) run inside it."""
    import torch
    from megatron.core import parallel_state as mpu
    from megatron.training import global_vars
    from torch.testing._internal.distributed.fake_pg import FakeStore

    judge = _state["judge"]
    try:
        global_vars.set_global_variables(args, build_tokenizer=False)
        torch.distributed.init_process_group(backend="fake", store=FakeStore(), rank=0, world_size=world)
        # without the gloo side groups: a fake group cannot build them (their checks are not reached)
        flags = types.SimpleNamespace(**{**vars(args), "use_gloo_process_groups": False})
        eval(_model_parallel_call(), {"mpu": mpu, "args": flags, "get_embedding_ranks": None,
                                      "get_position_embedding_ranks": None})
        yield
    finally:
        mpu.destroy_model_parallel()
        if torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()
        judge._reset_globals()


def load(path: Path, **options: str) -> None:
    from shardshift.formats.megatron import read

    document = read(path.read_text(encoding="utf-8"), str(path))
    world = options.get("world") or document.plan.world.world_size
    if isinstance(world, bool) or not isinstance(world, (int, str)) or not str(world).isdigit():
        raise ValueError(f"{path}: the launch states no world size; give the case `world=N`")
    judge = _state["judge"]
    verdict = judge(_words(document), int(world))
    if not verdict["ok"]:
        raise RuntimeError(f"Megatron refuses at {verdict['stage']}: {verdict['exception']}: {verdict['error']}")
    stage = options.get("stage")
    if stage == "startup":
        with started(judge.last_args, int(world)):
            pass
    elif stage is not None:  # a later stage: tests/coverage_loaders/megatron_stages/<stage>.py, run(args, world)
        _stage(stage).run(judge.last_args, int(world))


def _stage(name: str):
    import importlib.util

    if name not in _state.setdefault("stages", {}):
        path = Path(__file__).resolve().with_name("megatron_stages") / f"{name}.py"
        spec = importlib.util.spec_from_file_location(f"megatron_stage_{name}", path)
        module = importlib.util.module_from_spec(spec)
        module.LOADER = globals()  # what a stage reuses of this loader: _state (the judge), started
        spec.loader.exec_module(module)
        _state["stages"][name] = module
    return _state["stages"][name]
