"""MG301 rows: the DDP config, the optimizer config and its construction, the grad scaler, the learning-rate and weight-decay scheduler, the microbatch calculator's step schedule, the random seed."""

from shardshift.rules.megatron.refusals.base import Refusal  # noqa: F401

ROWS: list = []
