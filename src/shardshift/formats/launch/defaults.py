"""The defaults of a launch script's Plan (merged with the configs it names): those of the framework
its entry runs (shardshift.resolve). A launch script is no framework of its own: `table_for(entry)`
gives the table of the entry the launch reader classified (`LaunchData.framework`, see `entry`), and
`resolve(..., entry=...)` uses it; an entry whose defaults shardshift does not know (torchtune,
LLaMA-Factory, an unknown script, a Slurm job) resolves to itself, with the launcher's world only."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

# LaunchData.framework -> the format whose table applies
TABLES = {
    "torchtitan": "torchtitan",
    "axolotl": "axolotl",
    "megatron": "megatron",
    "hf": "python",            # a script known to read TrainingArguments: python_script/trainer_defaults.py
    "deepspeed": "deepspeed",  # a DeepSpeed script given --deepspeed_config
    "accelerate": "accelerate",  # a script started by accelerate launch: the Accelerate config's
}


def table_for(entry: str | None) -> ModuleType | None:
    """The defaults table of a launch's entry (a key of TABLES), or None."""
    from shardshift.resolve import defaults_table

    if entry == "hf":
        return importlib.import_module("shardshift.formats.python_script.trainer_defaults")
    name = TABLES.get(entry or "")
    return defaults_table(name) if name is not None else None


def entry(document: Any) -> str | None:
    """The entry of a launch document for `resolve(..., entry=...)`: the reader's classification,
    except that an HF-looking entry ("hf": `--deepspeed` or TrainingArguments flags) counts only when
    the entry script was found and reads TrainingArguments with transformers' own defaults (no
    subclass defaults, no `--fsdp`): otherwise which defaults apply is not known (None)."""
    data = getattr(document, "data", None)
    framework = getattr(data, "framework", None)
    if framework != "hf":
        return framework
    launch = getattr(data, "launch", None)
    calls = [c for c in getattr(data, "training_arguments", None) or []
             if launch is None or (c.line, c.column) == (launch.line, launch.column)]
    if len(calls) != 1:
        return None
    call = calls[0]
    if getattr(call, "program", None) is not None or getattr(call, "entry", None) is None:
        return None  # the entry script is not in the checked tree: whether it reads TrainingArguments is unknown
    written = getattr(call, "written", {}) or {}
    if any("(the default of " in str(text) for text in written.values()):
        return None  # a TrainingArguments subclass with its own defaults
    if call.keywords.get("fsdp") not in (None, "", [], False):
        return None  # FSDP through the Trainer: its sharding is not in this table
    return framework
