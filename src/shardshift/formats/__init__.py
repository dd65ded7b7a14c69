"""The format registry. A new format is one module plus one line in READERS / WRITERS.

A reader module provides `FORMAT`, `looks_like(path, text) -> bool` and
`read(text, path) -> Document`. A writer module provides `write(plan) -> str` and
`convert(document) -> Conversion` (the text plus what happened to every source setting), and
`OUTPUTS` says how its output is read back. A format package may hold a `defaults` module (the
framework's defaults, see shardshift.resolve).
Modules are imported only when a file of theirs is at hand.
"""

from __future__ import annotations

import importlib
from types import ModuleType

READERS: dict[str, str] = {
    "deepspeed": "shardshift.formats.deepspeed",
    "fsdp2": "shardshift.formats.fsdp2",  # before "python": a file that calls fully_shard is FSDP2 code
    "python": "shardshift.formats.python_script",
    "plan": "shardshift.formats.plan_yaml",  # *.plan.yaml: the Plan itself
    "accelerate": "shardshift.formats.accelerate",
    "axolotl": "shardshift.formats.axolotl",
    "megatron": "shardshift.formats.megatron",
    "launch": "shardshift.formats.launch",  # after "megatron": Megatron launch scripts stay the megatron format
    "torchtitan": "shardshift.formats.torchtitan",
}

WRITERS: dict[str, str] = {
    "deepspeed": "shardshift.formats.deepspeed",
    "fsdp2": "shardshift.formats.fsdp2",
    "plan": "shardshift.formats.plan_yaml",
    "megatron": "shardshift.formats.megatron.writer",
    "megatron-args": "shardshift.formats.megatron.arguments",
    "accelerate": "shardshift.formats.accelerate.writer",
    "accelerate-fsdp2": "shardshift.formats.accelerate.fsdp2_target",
    "torchtitan": "shardshift.formats.torchtitan.writer",
    "axolotl": "shardshift.formats.axolotl.writer",
}

# What each target's output is read back as (the reader's format and a file name it recognises), so
# that a conversion report measures what the output holds (shardshift.migration).
OUTPUTS: dict[str, tuple[str, str]] = {
    "deepspeed": ("deepspeed", "ds_config.json"),
    "fsdp2": ("fsdp2", "fsdp2_setup.py"),
    "plan": ("plan", "out.plan.yaml"),
    "megatron": ("megatron", "train.sh"),
    "megatron-args": ("megatron", "out.args"),
    "accelerate": ("accelerate", "accelerate_config.yaml"),
    "accelerate-fsdp2": ("accelerate", "accelerate_config.yaml"),
    "torchtitan": ("torchtitan", "train.toml"),
    "axolotl": ("axolotl", "axolotl.yaml"),
}


def reader(name: str) -> ModuleType:
    return importlib.import_module(READERS[name])


def writer(name: str) -> ModuleType:
    return importlib.import_module(WRITERS[name])


def explain(document, target: str) -> list | None:
    """The source format's own reasons for how its settings carry over into `target` (its package's
    `explain(document, target)`), or None when the format leaves that to the writer. Writers ask here
    instead of importing another format's mapping."""
    if document.format not in READERS:
        return None
    hook = getattr(reader(document.format), "explain", None)
    return hook(document, target) if hook is not None else None


def detect(path: str, text: str) -> str | None:
    """The format of a file, judged by its name and content, or None for other files."""
    for name in READERS:
        if reader(name).looks_like(path, text):
            return name
    return None
