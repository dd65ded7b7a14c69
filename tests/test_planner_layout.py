"""The Layout carries the gradient reduce dtype a setup states (DeepSpeed communication_data_type,
FSDP2 reduce_dtype), and the communication estimate sends gradients at that size."""

from __future__ import annotations

from shardshift.formats.deepspeed import read
from shardshift.planner.communication import per_step
from shardshift.planner.layout import layout_of
from shardshift.planner.types import Machine, Model

CONFIG = '{"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1, "bf16": {"enabled": true},' \
         ' "zero_optimization": {"stage": 1}%s}'


def _data_parallel_bytes(extra: str) -> tuple[int | None, float]:
    plan = read(CONFIG % extra, "ds_config.json").plan
    machine = Machine(nodes=1, gpus_per_node=8, bandwidth=25e9, intra_node_bandwidth=300e9)
    layout = layout_of(plan, machine)
    traffic = per_step(layout, Model(parameters=10**9), machine)
    return layout.grad_reduce_bytes, sum(t.bytes for t in traffic if t.axis == "data-parallel")


def test_the_stated_reduce_dtype_reaches_the_layout_and_doubles_the_gradient_traffic():
    default_size, default_bytes = _data_parallel_bytes("")
    fp32_size, fp32_bytes = _data_parallel_bytes(', "communication_data_type": "fp32"')
    assert default_size is None and fp32_size == 4
    assert fp32_bytes > default_bytes  # the gradient part doubles; the ZeRO-1 parameter gather stays 16-bit
