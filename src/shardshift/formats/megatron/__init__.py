"""Megatron-LM launch scripts and argument files: reader (reader.py over the bash-subset grammar of
shell.py and Megatron's own flag table, flags.py) and the flags with a neutral meaning (keys.py)."""

from shardshift.formats.megatron.keys import PRECEDENCE  # noqa: F401
from shardshift.formats.megatron.reader import (  # noqa: F401
    FORMAT,
    MARKER_KEYS,
    is_config,
    looks_like,
    looks_like_named,
    not_config_reason,
    read,
)


def explain(document, target: str):
    """Why each flag of a Megatron document carries over into `target` as it does (mapping.py): what a
    writer of another format shows beside its own entries (formats.explain)."""
    from shardshift.formats.megatron.mapping import explain as explain_flags

    return explain_flags(document, target)
