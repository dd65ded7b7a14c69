"""Hugging Face `TrainingArguments` given as command-line flags of a launch
(`torchrun train.py --per_device_train_batch_size 4 --bf16 true --deepspeed ds.json`), read the way
`HfArgumentParser` reads them, so that they meet the same rules as `TrainingArguments(...)` in Python."""

from __future__ import annotations

from typing import Any


def arguments_call(launch: Any, path: str) -> Any:
    """The `ArgumentsCall` (formats/python_script) that the flags of `launch` (a shell_launch.Launch
    in the script at `path`) amount to, or None when they are not TrainingArguments flags."""
    return None
