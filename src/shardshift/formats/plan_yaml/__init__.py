"""The Plan itself as YAML: written by `convert --to plan` (writer.py), read back with positions
(reader.py) for neutral setups and the semantic rules' fixtures."""

from shardshift.formats.plan_yaml.reader import FORMAT, MARKER_KEYS, looks_like, read  # noqa: F401
from shardshift.formats.plan_yaml.writer import *  # noqa: F401,F403
