"""MG301 rows: the training loop and what it calls: checkpoint saving, evaluation, data loaders and samplers, the fault injector, the logits saver, timers, the vocabulary padding."""

from shardshift.rules.megatron.refusals.base import Refusal  # noqa: F401

ROWS: list = []
