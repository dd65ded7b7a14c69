"""MG301 rows: the layer specs `pretrain`'s model builder asks for (megatron/core/models/gpt/gpt_layer_specs.py, the experimental attention variants, the MLA/DSA norm config, yarn, the fp8 recipe helpers)."""

from shardshift.rules.megatron.refusals.base import Refusal  # noqa: F401

ROWS: list = []
