"""MG301 rows: `TransformerConfig.__post_init__` (megatron/core/transformer/transformer_config.py), its sites 1-115."""

from shardshift.rules.megatron.refused import Refusal  # noqa: F401

ROWS: list = []
