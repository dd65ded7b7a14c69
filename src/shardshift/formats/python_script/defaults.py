"""The defaults of a Python training script's Plan (the script merged with the ds_config it names):
those of the framework that consumes the ds_config (shardshift.resolve). A script is no framework of
its own: `table_for(entry)` gives the table for `entry(document)`, which `resolve(..., entry=...)`
uses.

- A script that calls `deepspeed.initialize` and certainly passes no `lr_scheduler`: DeepSpeed's
  table (what DeepSpeed does with what the ds_config leaves out).
- A script that hands the ds_config to the Hugging Face Trainer: no table yet. The reader does not
  lift the TrainingArguments keywords into the Plan, so transformers' defaults
  (trainer_defaults.py) would stand in for values the script does set.
- Anything else (a client LR scheduler, a script that is neither): not known, no defaults.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any


def table_for(entry: str | None) -> ModuleType | None:
    from shardshift.resolve import defaults_table

    return defaults_table("deepspeed") if entry == "deepspeed" else None


def entry(document: Any) -> str | None:
    facts = getattr(document, "data", None)
    calls = list(getattr(facts, "initialize_calls", None) or [])
    consumers = {getattr(r, "consumer", None) for r in getattr(facts, "references", None) or []}
    if not calls or consumers - {"deepspeed"} or getattr(facts, "trainers", None):
        return None
    if all(call.passes("lr_scheduler") is False for call in calls):
        return "deepspeed"
    return None
