"""The format registry. A new format is one module plus one line in READERS / WRITERS.

A reader module provides `FORMAT`, `looks_like(path, text) -> bool` and
`read(text, path) -> Document`. A writer module provides `write(plan) -> str` and
`convert(document) -> Conversion` (the text plus what happened to every source setting).
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


def reader(name: str) -> ModuleType:
    return importlib.import_module(READERS[name])


def writer(name: str) -> ModuleType:
    return importlib.import_module(WRITERS[name])


def detect(path: str, text: str) -> str | None:
    """The format of a file, judged by its name and content, or None for other files."""
    for name in READERS:
        if reader(name).looks_like(path, text):
            return name
    return None
