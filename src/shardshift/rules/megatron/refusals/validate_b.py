"""MG301 rows: `validate_args` (megatron/training/arguments.py), its sites 101-201, and the rest of the argument path's smaller files."""

from shardshift.rules.megatron.refused import Refusal  # noqa: F401

ROWS: list = []
