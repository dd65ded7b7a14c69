"""Python training scripts (read with ast): what ties a script to a ds_config."""

from shardshift.formats.python_script.reader import *  # noqa: F401,F403
from shardshift.formats.python_script.reader import FORMAT, MARKER_KEYS, looks_like, read  # noqa: F401
