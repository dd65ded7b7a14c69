"""Checks the Hugging Face `Trainer` makes on its arguments when it is built (transformers/trainer.py
`Trainer.__init__`, `_validate_args` and `create_accelerator_and_postprocess`; `report_to` in
integrations `get_reporting_integration_callbacks`), mirrored on `TrainingArguments(...)` calls and on the
TrainingArguments flags of launch scripts, as rules/transformers/arguments.py mirrors `TrainingArguments`'
own checks.

The premise these add is the program's: the checks run only where a Trainer is built from the arguments.
A script that calls a `...Trainer(...)` class (transformers' own, TRL's, a subclass), or a launch whose entry
script builds or imports one, is that evidence; without it the finding is an info saying so.

Each check names the releases read for it, as arguments.py does (the trainer.py of 31 wheels from 4.10 to
5.24, searched for each error message); the `report_to` names come from every release from 4.10.0 on
(data/defaults/transformers_report_to.json, scripts/defaults/transformers_report_to.py).

Values that only a file names (`deepspeed="ds.json"`, `fsdp_config="fsdp.json"`, an `accelerator_config`
path) are not read here: those checks judge the dicts written in the call.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from shardshift.context import UnknownContext
from shardshift.document import Document
from shardshift.formats.python_script.reader import UNKNOWN, ArgumentsCall, ScriptFacts
from shardshift.rules.base import did_you_mean
from shardshift.rules.transformers.arguments import Check, TrainingArgumentsCheck, _dotted, _number, shown, value


class TrainerCheck(TrainingArgumentsCheck):
    """A value the Trainer refuses when it is built from the arguments (a base: each subclass is one check)."""

    source = "trainer.py"

    def unknown_program(self, call: ArgumentsCall, document: Document) -> UnknownContext | None:
        if hasattr(call, "written"):  # launch flags: the entry script was read
            if getattr(call, "trainer", False):
                return None
            entry = os.path.basename(getattr(call, "entry", None) or "") or "the entry script"
            return UnknownContext("program", f"{entry} builds no Trainer that shardshift found, so whether the "
                                             "Trainer's start-up checks run on these flags is unknown",
                                  f"check that {entry} hands these arguments to a Trainer")
        facts = document.data
        if isinstance(facts, ScriptFacts) and facts.trainers_built:
            return None
        name = os.path.basename(document.path)
        return UnknownContext("program", f"{name} builds no Trainer (no `...Trainer(...)` call), so whether a Trainer "
                                         "is built from these arguments, and runs its start-up checks, is unknown",
                              "check the module that builds the Trainer")


def _on(found: Any) -> bool | None:
    """Whether an `fsdp` / `deepspeed` argument turns its engine on (None: the source does not tell)."""
    if found is UNKNOWN:
        return None
    if isinstance(found, str):
        return bool(found.strip())
    return bool(found) if isinstance(found, (bool, list, tuple, dict)) or found is None else None


def _config_key(config: Any, key: str) -> Any:
    """A key of an `fsdp_config` dict written in the call, as `TrainingArguments` reads it (an `fsdp_` prefix is
    dropped); None where the call writes no dict."""
    if not isinstance(config, dict):
        return None
    for spelled, found in config.items():
        if spelled == key or spelled == "fsdp_" + key:
            return found
    return None


def _checkpointing(call: ArgumentsCall) -> Any:
    """Whether the arguments ask for activation checkpointing: `activation_checkpointing` (5.24), else its old name
    `gradient_checkpointing`, which 5.24 reads only when the new one is not set."""
    new = call.keywords.get("activation_checkpointing")
    return new if new is not None else value(call, "gradient_checkpointing")


class TrainerRefusesArguments(TrainerCheck):
    """Arguments the Trainer refuses when it is built.

    ## What it does
    Where a script builds a Trainer, reports `TrainingArguments` that the Trainer refuses at start-up
    (each since the release named):
    - `fsdp` together with `deepspeed` (4.20);
    - `fsdp` in a launch that starts the script as one plain process (`python train.py --fsdp ...`, with no
      launcher, wrapper or process-group variable, and an entry script that starts no processes) (4.20);
    - `save_strategy="best"` with no `metric_for_best_model` (4.47; `load_best_model_at_end` and the
      `reduce_lr_on_plateau` / `greedy` schedules default it to "loss");
    - `accelerator_config`'s `gradient_accumulation_kwargs.num_steps` with `gradient_accumulation_steps`
      above 1 (4.40);
    - `save_only_model` with `load_best_model_at_end` under DeepSpeed or FSDP (4.38);
    - `auto_find_batch_size` with a ds_config written in the call at ZeRO stage 3 (4.46);
    - under FSDP, `fsdp_config`'s `activation_checkpointing` with the `activation_checkpointing` (formerly
      `gradient_checkpointing`) training argument (4.34);
    - under FSDP, `save_only_model` with `fsdp_config`'s `state_dict_type` "SHARDED_STATE_DICT" (5.10,
      where the Trainer takes the state-dict type from `fsdp_config`).

    ## Why is this bad
    `TrainingArguments` takes each of these, so the script gets past its argument parsing, loads the
    model, and then fails when the Trainer is built: `ValueError: Using --fsdp xxx together with
    --deepspeed is not possible, deactivate one of those flags.`, ``ValueError: `args.metric_for_best_model`
    must be provided when using 'best' save_strategy ...``, and so on. On a cluster that is a queued job
    lost after the model load.

    ## Example
    ```python
    args = TrainingArguments(output_dir="out", save_strategy="best")
    trainer = Trainer(model=model, args=args)
    ```

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="out", save_strategy="best", metric_for_best_model="eval_loss")
    trainer = Trainer(model=model, args=args)
    ```
    """

    code = "TA008"
    name = "trainer-refuses-arguments"
    FSDP_WITH_DEEPSPEED = Check((4, 20, 1), (4, 10, 3))
    FSDP_ONE_PROCESS = Check((4, 20, 1), (4, 10, 3))
    BEST_WITHOUT_METRIC = Check((4, 47, 1), (4, 46, 3))  # 4.46 has no "best" strategy at all
    ACCUMULATION_TWICE = Check((4, 40, 2), (4, 39, 3))
    SAVE_ONLY_MODEL_BEST = Check((4, 38, 2), (4, 37, 2))
    AUTO_BATCH_ZERO3 = Check((4, 46, 3), (4, 44, 2))  # 4.38-4.44 refuse it with any DeepSpeed or FSDP: not judged
    CHECKPOINTING_TWICE = Check((4, 34, 1), (4, 30, 2))
    SHARDED_SAVE_ONLY_MODEL = Check((5, 10, 4), (5, 6, 2))

    def refusals(self, call):
        refusal = "the Trainer raises ValueError when it is built"
        fsdp, deepspeed = _on(value(call, "fsdp")), _on(value(call, "deepspeed"))
        if fsdp and deepspeed:
            yield self.FSDP_WITH_DEEPSPEED, "fsdp", (
                f"{shown(call, 'fsdp', 'deepspeed')}: {refusal} (Using --fsdp xxx together with --deepspeed is not "
                "possible, deactivate one of those flags); keep one engine")
        elif fsdp and getattr(call, "one_process", False):
            yield self.FSDP_ONE_PROCESS, "fsdp", (
                f"{shown(call, 'fsdp')} in a launch that starts one plain process (python, no launcher): {refusal} "
                "(Using fsdp only works in distributed training); start it with torchrun --nproc-per-node N or "
                "accelerate launch")
        if value(call, "save_strategy") == "best" and value(call, "metric_for_best_model") is None and \
                value(call, "load_best_model_at_end") is False and \
                value(call, "lr_scheduler_type") not in ("reduce_lr_on_plateau", "greedy", UNKNOWN):
            yield self.BEST_WITHOUT_METRIC, "save_strategy", (
                f"{shown(call, 'save_strategy', 'metric_for_best_model')}: {refusal} (`args.metric_for_best_model` "
                "must be provided when using 'best' save_strategy or if `args.load_best_model_at_end` is set to "
                "`True`); name the metric that decides the best checkpoint, e.g. metric_for_best_model=\"eval_loss\"")
        accelerator = value(call, "accelerator_config")
        accumulation = accelerator.get("gradient_accumulation_kwargs") if isinstance(accelerator, dict) else None
        steps = _number(value(call, "gradient_accumulation_steps"))
        if isinstance(accumulation, dict) and "num_steps" in accumulation and steps is not None and steps > 1:
            yield self.ACCUMULATION_TWICE, "accelerator_config", (
                f"accelerator_config gradient_accumulation_kwargs num_steps {accumulation['num_steps']!r} with "
                f"{shown(call, 'gradient_accumulation_steps')}: {refusal} (The `AcceleratorConfig`'s `num_steps` is set "
                "but `gradient_accumulation_steps` is greater than 1 in the passed `TrainingArguments`); give the "
                "accumulation once, as gradient_accumulation_steps")
        if value(call, "save_only_model") is True and value(call, "load_best_model_at_end") is True and \
                (fsdp or deepspeed):
            wrapper = "DeepSpeed" if deepspeed else "FSDP"
            yield self.SAVE_ONLY_MODEL_BEST, "save_only_model", (
                f"{shown(call, 'save_only_model', 'load_best_model_at_end', 'deepspeed' if deepspeed else 'fsdp')}: "
                f"{refusal} ({wrapper} can't be used with `save_only_model` along with `load_best_model_at_end`); "
                "the best checkpoint must be resumable: drop save_only_model or load_best_model_at_end")
        config = value(call, "deepspeed")
        zero = config.get("zero_optimization") if isinstance(config, dict) else None
        stage = zero.get("stage") if isinstance(zero, dict) else None
        if value(call, "auto_find_batch_size") is True and stage == 3 and not isinstance(stage, bool):
            yield self.AUTO_BATCH_ZERO3, "auto_find_batch_size", (
                f"{shown(call, 'auto_find_batch_size')} with a ds_config at ZeRO stage 3: {refusal} "
                "(`auto_find_batch_size` isn't supported yet with DeepSpeed Zero-3. Please consider using Zero-2, "
                "Zero-1, or FSDP)")
        fsdp_config = value(call, "fsdp_config")
        if fsdp and _config_key(fsdp_config, "activation_checkpointing") is True and _checkpointing(call) is True:
            given = "activation_checkpointing" if call.keywords.get("activation_checkpointing") is not None \
                else "gradient_checkpointing"
            yield self.CHECKPOINTING_TWICE, given, (
                f"fsdp_config activation_checkpointing True with {shown(call, given)}: {refusal} (FSDP's own "
                "activation checkpointing and the training argument can't both be set to True); keep FSDP's: drop "
                f"{given}")
        if fsdp and value(call, "save_only_model") is True and \
                _config_key(fsdp_config, "state_dict_type") == "SHARDED_STATE_DICT":
            yield self.SHARDED_SAVE_ONLY_MODEL, "save_only_model", (
                f"{shown(call, 'save_only_model')} with fsdp_config state_dict_type 'SHARDED_STATE_DICT': {refusal} "
                "(save_only_model option is not compatible with FSDP state dict type 'SHARDED_STATE_DICT'); drop "
                "save_only_model or save FULL_STATE_DICT")


@lru_cache(maxsize=1)
def _report_to_names() -> dict[tuple[int, ...], tuple[str, ...]]:
    """Each release's `report_to` names (data/defaults/transformers_report_to.json)."""
    table = json.loads(resources.files("shardshift").joinpath("data/defaults/transformers_report_to.json")
                       .read_text("utf-8"))
    return {tuple(int(p) for p in release.split(".")): tuple(table["variants"][index])
            for release, (index, _source, _line) in table["releases"].items()}


@dataclass(frozen=True)
class NameRefused:
    """A `report_to` name and the releases whose Trainer refuses it (the releases read: 4.10.0 on)."""

    name: str

    def verdict(self, version: tuple[int, ...]) -> str:
        names = _report_to_names().get(tuple(version))
        if names is None:
            return "unknown"
        return "accepted" if self.name in names else "refused"

    def between(self, version: tuple[int, ...]) -> str:
        releases = sorted(_report_to_names())
        return (f"transformers {_dotted(version)} is not among the releases whose report_to names were read "
                f"({_dotted(releases[0])} to {_dotted(releases[-1])})")

    @property
    def agreed(self) -> bool:
        """Refused by every release read (then no pin is needed for the verdict)."""
        return all(self.name not in names for names in _report_to_names().values())


class ReportToUnknown(TrainerCheck):
    """A `report_to` name the Trainer does not know.

    ## What it does
    Where a script builds a Trainer, reports each `report_to` name (the argument, or `--report_to`)
    that is not one of the integrations of the transformers release that judges the file (`wandb`,
    `tensorboard`, `mlflow`, ...; "all" and "none" alone are special), with the closest name.

    ## Why is this bad
    `TrainingArguments` takes any string; the Trainer raises when it is built: `ValueError:
    tensorbaord is not supported, only azure_ml, comet_ml, mlflow, ... are supported.` Newer names
    (`trackio`, `swanlab`, `kubeflow`) are refused by older releases, and "none" inside a list is a
    name like any other.

    ## Example
    ```python
    args = TrainingArguments(output_dir="out", report_to=["wandb", "tensorbaord"])
    ```

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="out", report_to=["wandb", "tensorboard"])
    ```
    """

    code = "TA009"
    name = "report-to-unknown"

    def refusals(self, call):
        given = value(call, "report_to")
        if given in ("all", "none", ["all"], ["none"]):
            return
        names = [given] if isinstance(given, str) else given if isinstance(given, list) else []
        if not all(isinstance(n, str) for n in names):
            return
        table = _report_to_names()
        known = sorted({n for release in table.values() for n in release})
        for name in names:
            taking = sorted(v for v, release in table.items() if name in release)
            if len(taking) == len(table):
                continue  # every release read takes it
            refusal = (f"{shown(call, 'report_to')}: the Trainer raises ValueError when it is built ({name} is not "
                       "supported, only the release's integrations are)")
            if taking:
                hint = (f"; {name!r} is an integration of transformers {_dotted(taking[0])} and later releases read"
                        if all(v >= taking[0] for v in taking) and len(taking) == len([v for v in table if v >= taking[0]])
                        else f"; {name!r} is an integration of some releases read, from {_dotted(taking[0])}")
            elif name in ("all", "none"):
                hint = f"; {name!r} has its meaning only alone: report_to={name!r}"
            else:
                close = did_you_mean(name, known)
                hint = f"; did you mean {close!r}?" if close else f"; the names are {', '.join(known)}"
            yield NameRefused(name), "report_to", refusal + hint
