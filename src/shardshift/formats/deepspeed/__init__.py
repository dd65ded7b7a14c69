"""DeepSpeed ds_config.json: reader (reader.py), writer (writer.py), key table (keys.py) and the
optimizer/scheduler tables (optimizers.py)."""

from shardshift.formats.deepspeed.reader import (  # noqa: F401 - the format's public surface
    FORMAT,
    MARKER_KEYS,
    NAME_PATTERN,
    OPTIMIZER_FIELDS,
    SCHEDULER_FIELDS,
    SIMPLE_KEYS,
    _assign,
    _normalise,
    is_config,
    looks_like,
    not_config_reason,
    plan_from_dict,
    read,
)
from shardshift.formats.deepspeed.writer import convert, key_for, write, write_dict  # noqa: F401
