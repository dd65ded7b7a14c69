"""Accelerate config YAML: reader and the precedence against a linked ds_config."""

from shardshift.formats.accelerate.keys import PRECEDENCE  # noqa: F401
from shardshift.formats.accelerate.reader import FORMAT, MARKER_KEYS, is_config, looks_like, read  # noqa: F401
