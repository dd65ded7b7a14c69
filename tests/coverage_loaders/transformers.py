"""transformers 5.24.0's DeepSpeed glue on a fixture, for the coverage map (tests/test_coverage_map.py).

The path the Hugging Face Trainer takes with a ds_config, with transformers' own code, as
tests/oracles.py's `trainer_handoff_outcomes` does (test_messages_oracle's "handoff"):
`TrainingArguments(deepspeed=<the ds_config, json.load-ed>, use_cpu=True, ...)` (its
__post_init__ builds `HfTrainerDeepSpeedConfig` and runs `trainer_config_process`), then
`propagate_args_to_deepspeed` and `deepspeed_init(trainer, num_training_steps=10)`, which runs
`trainer_config_finalize` (where mismatches with TrainingArguments raise) and
`deepspeed_optim_sched`. The Trainer is a stand-in carrying the model (a Linear layer with a
config.hidden_size of 16), the arguments and the Accelerator state; `deepspeed.initialize` is
not run (DeepSpeed's own checks are the `deepspeed` map).

The TrainingArguments come from the fixture:
- a Python script (`.py`): the literal keyword arguments of its `TrainingArguments(...)` call,
  read with `ast` (the script is never run), whose `deepspeed=` names the ds_config beside it (without
  one, building `TrainingArguments` is all the loader does: its own checks, `_validate_args`);
- an Axolotl YAML (`.yaml`/`.yml`): its `deepspeed:` file and the arguments Axolotl derives
  (tests/oracles.py's `axolotl_training_arguments`).

stage=arguments builds each TrainingArguments call of a script from its literal keywords as written
(`output_dir` too) and nothing more (tests/test_coverage_implicit.py's implicit sites).
"""

from __future__ import annotations

import ast
import json
import os
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

TESTS = Path(__file__).resolve().parents[1]
_state: dict = {}


def prepare() -> None:
    os.environ.setdefault("DS_ACCELERATOR", "cpu")
    os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_VERBOSITY="error", TOKENIZERS_PARALLELISM="false")
    for name in [n for n in os.environ if n.startswith("ACCELERATE_")]:
        del os.environ[name]
    if str(TESTS) not in sys.path:
        sys.path.insert(0, str(TESTS))
    import warnings

    warnings.filterwarnings("ignore")
    import torch
    from transformers import TrainingArguments
    from transformers.integrations import deepspeed as integration

    import oracles

    _state.update(oracles=oracles, torch=torch, TrainingArguments=TrainingArguments, integration=integration)


def _calls(path: Path) -> list[ast.Call]:
    """The script's TrainingArguments calls, in source order."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return sorted((node for node in ast.walk(tree) if isinstance(node, ast.Call)
                   and getattr(node.func, "id", getattr(node.func, "attr", None)) == "TrainingArguments"),
                  key=lambda node: (node.lineno, node.col_offset))


def literal_keywords(call: ast.Call) -> dict:
    """The call's keywords whose values are literals, as written (`output_dir` and `deepspeed` included)."""
    kwargs = {}
    for keyword in call.keywords:
        if keyword.arg is None:
            continue
        try:
            kwargs[keyword.arg] = ast.literal_eval(keyword.value)
        except ValueError:
            continue
    return kwargs


def _script_arguments(path: Path, call: ast.Call | None = None) -> tuple[dict, dict]:
    """(ds_config, literal TrainingArguments keywords) of the script's (first) TrainingArguments call."""
    call = call if call is not None else _calls(path)[0]
    kwargs = literal_keywords(call)
    kwargs.pop("output_dir", None)
    ds_file = kwargs.pop("deepspeed", None)
    if ds_file is None:
        return None, kwargs
    config = ds_file if isinstance(ds_file, dict) else json.loads((path.parent / ds_file).read_text(encoding="utf-8"))
    return config, kwargs


def _yaml_arguments(path: Path) -> tuple[dict, dict]:
    import yaml

    yaml_config = yaml.safe_load(path.read_text(encoding="utf-8"))
    config = json.loads((path.parent / yaml_config["deepspeed"]).read_text(encoding="utf-8"))
    return config, _state["oracles"].axolotl_training_arguments(yaml_config)


class _Tiny:
    """A model for the Trainer: one Linear layer whose forward returns a loss."""

    @staticmethod
    def build():
        torch = _state["torch"]

        class Tiny(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.linear = torch.nn.Linear(4, 4)

            def forward(self, x=None, labels=None):
                return {"loss": self.linear(x).sum()}

        return Tiny()


def _reset_accelerate() -> None:
    """Accelerate's state is a singleton, and TrainingArguments(deepspeed=...) sets ACCELERATE_USE_DEEPSPEED:
    each Trainer starts from none of the previous one's."""
    from accelerate.state import AcceleratorState, GradientState, PartialState

    AcceleratorState._reset_state(True)
    GradientState._reset_state()
    PartialState._reset_state()
    for name in [n for n in os.environ if n.startswith(("ACCELERATE_", "FSDP_"))]:
        del os.environ[name]


def _fsdp_on_cpu():
    """Accelerate enables its FSDP plugin only on accelerators (AcceleratorState keeps `fsdp_plugin` for
    MULTI_GPU and the like, never on the CPU). The stand-in Accelerator builds the real one, then hands its
    state the FSDP plugin transformers built from the arguments, as a GPU launch would: the Trainer's
    FSDP checks then read the real plugin."""
    from accelerate import Accelerator

    class FsdpOnCpu(Accelerator):
        def __init__(self, *args, fsdp_plugin=None, **kwargs):
            super().__init__(*args, **kwargs)
            self.state.fsdp_plugin = fsdp_plugin

    return FsdpOnCpu


def _build_from_launch(path: Path) -> None:
    """stage=trainer on a launch script: its `python train.py ...` line as that one plain process runs it, the
    flags read by transformers' own HfArgumentParser(TrainingArguments), then a Trainer built from them (no
    process-group variables: no launcher set any)."""
    import shlex
    from unittest import mock

    import transformers.trainer
    from transformers import HfArgumentParser, Trainer

    line = next(line for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("python"))
    words = shlex.split(line, comments=True)
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"):
        os.environ.pop(name, None)
    _reset_accelerate()
    with tempfile.TemporaryDirectory() as output_dir:
        args, = HfArgumentParser(_state["TrainingArguments"]).parse_args_into_dataclasses(
            args=[*words[2:], "--output_dir", output_dir, "--use_cpu", "--report_to", "none"])
        accelerator = _fsdp_on_cpu() if args.fsdp else transformers.trainer.Accelerator
        with mock.patch.object(transformers.trainer, "Accelerator", accelerator):
            Trainer(model=_Tiny.build(), args=args, eval_dataset=[{"x": _state["torch"].zeros(4)}])


def _build_trainers(path: Path) -> None:
    """stage=trainer: each TrainingArguments call of the script, built, then a Trainer built from it (its
    `__init__`, `_validate_args` and `create_accelerator_and_postprocess` checks), one process of a
    one-process launch (RANK 0, WORLD_SIZE 1, gloo). Under FSDP the Accelerator is `_fsdp_on_cpu`'s. The
    process-group variables stay set: run it in a process of its own (tests/coverage_child.py)."""
    from unittest import mock

    import transformers.trainer
    from transformers import Trainer

    if path.suffix == ".sh":
        _build_from_launch(path)
        return
    if "MASTER_PORT" not in os.environ:  # a free port: another process of the run may hold a fixed one
        import socket

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            os.environ["MASTER_PORT"] = str(probe.getsockname()[1])
    os.environ.update(MASTER_ADDR="127.0.0.1", RANK="0", WORLD_SIZE="1", LOCAL_RANK="0")
    for call in _calls(path):
        config, kwargs = _script_arguments(path, call)
        _reset_accelerate()
        with tempfile.TemporaryDirectory() as output_dir:
            if config is not None:
                kwargs["deepspeed"] = config
            args = _state["TrainingArguments"](output_dir=output_dir, use_cpu=True, **{"report_to": "none", **kwargs})
            accelerator = _fsdp_on_cpu() if args.fsdp else transformers.trainer.Accelerator
            with mock.patch.object(transformers.trainer, "Accelerator", accelerator):
                Trainer(model=_Tiny.build(), args=args, eval_dataset=[{"x": _state["torch"].zeros(4)}])


def _build_arguments(path: Path) -> None:
    """stage=arguments: each TrainingArguments call of the script built from its literal keywords as written
    (`output_dir` too; a `deepspeed` file named beside the script), on the CPU with no report, and nothing more:
    `__post_init__` with `_validate_args` (tests/test_coverage_implicit.py's implicit sites)."""
    for call in _calls(path):
        kwargs = literal_keywords(call)
        if isinstance(kwargs.get("deepspeed"), str) and kwargs["deepspeed"]:
            kwargs["deepspeed"] = str(path.parent / kwargs["deepspeed"])
        _reset_accelerate()
        _state["TrainingArguments"](**{"output_dir": "out", "use_cpu": True, "report_to": "none", **kwargs})


def load(path: Path, **options: str) -> None:
    torch, integration = _state["torch"], _state["integration"]
    if options.get("stage") == "trainer":
        _build_trainers(path)
        return
    if options.get("stage") == "arguments":
        _build_arguments(path)
        return
    if path.suffix == ".py":
        config, kwargs = _script_arguments(path)
    elif path.suffix in (".yaml", ".yml"):
        config, kwargs = _yaml_arguments(path)
    else:
        config, kwargs = json.loads(path.read_text(encoding="utf-8")), {}
    with tempfile.TemporaryDirectory() as output_dir:
        if config is None:  # no ds_config: TrainingArguments' own checks, when it is built, are all there is
            _state["TrainingArguments"](output_dir=output_dir, use_cpu=True, report_to="none", **kwargs)
            return
        args = _state["TrainingArguments"](output_dir=output_dir, use_cpu=True, report_to="none", deepspeed=config,
                                           **kwargs)
        model = torch.nn.Linear(4, 4)
        model.config = SimpleNamespace(hidden_size=16)

        def create_optimizer():
            return torch.optim.SGD(model.parameters(), lr=0.1)

        def create_scheduler(num_training_steps, optimizer=None):
            return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)

        accelerator = SimpleNamespace(state=SimpleNamespace(deepspeed_plugin=args.deepspeed_plugin))
        trainer = SimpleNamespace(model=model, args=args, accelerator=accelerator, optimizer=None, lr_scheduler=None,
                                  create_optimizer=create_optimizer, create_scheduler=create_scheduler)
        integration.propagate_args_to_deepspeed(accelerator, args)
        integration.deepspeed_init(trainer, num_training_steps=int(options.get("steps", "10")))
