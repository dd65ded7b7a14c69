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


def _script_arguments(path: Path) -> tuple[dict, dict]:
    """(ds_config, literal TrainingArguments keywords) of the script's TrainingArguments call."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    call = next(node for node in ast.walk(tree) if isinstance(node, ast.Call)
                and getattr(node.func, "id", getattr(node.func, "attr", None)) == "TrainingArguments")
    kwargs = {}
    for keyword in call.keywords:
        if keyword.arg is None:
            continue
        try:
            kwargs[keyword.arg] = ast.literal_eval(keyword.value)
        except ValueError:
            continue
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


def load(path: Path, **options: str) -> None:
    torch, integration = _state["torch"], _state["integration"]
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
