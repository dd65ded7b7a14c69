"""Axolotl training YAML: reader and the precedence against a linked ds_config."""

from shardshift.formats.axolotl.keys import PRECEDENCE  # noqa: F401
from shardshift.formats.axolotl.reader import FORMAT, MARKER_KEYS, is_config, looks_like, read  # noqa: F401
