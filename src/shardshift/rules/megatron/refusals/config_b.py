"""MG301 rows: `TransformerConfig.__post_init__`, its sites 116-228, `MLATransformerConfig.__post_init__` and core/model_parallel_config.py."""

from shardshift.rules.megatron.refused import Refusal  # noqa: F401

ROWS: list = []
