"""Python training scripts (read with ast): what ties a script to a ds_config."""

from shardshift.formats.python_script.reader import *  # noqa: F401,F403
from shardshift.formats.python_script.reader import FORMAT, MARKER_KEYS, looks_like, read  # noqa: F401


def precedence(reference):
    """What the Hugging Face Trainer does when the script's TrainingArguments and the ds_config its
    `deepspeed=` names set one field (formats/launch/training_flags.py's table)."""
    from shardshift.formats.launch import training_flags

    return getattr(training_flags, "PRECEDENCE", {})
