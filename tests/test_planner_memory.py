"""Model-state memory against DeepSpeed 0.19.8's own estimators, and the Layout/estimate basics.

The oracle: `deepspeed.runtime.zero.stage_1_and_2.estimate_zero2_model_states_mem_needs` (+ `_all_cold`,
which prints the table for both offload settings) and `deepspeed.runtime.zero.stage3.
estimate_zero3_model_states_mem_needs` (+ `_all_cold`). They run on the CPU; DeepSpeed is imported
once for the module. Each case is a Plan read through `layout_of` (so the Plan -> Layout resolution is
part of what is checked) and `model_states`; the GPU parts must sum to DeepSpeed's per-GPU figure and
the "cpu_" parts to its per-CPU figure, within 1%.

One difference is by design: for ZeRO-2 with optimizer offload DeepSpeed's estimator counts every
node's CPU memory together (total_params x max(4 x all GPUs, 16) x factor); shardshift reports per
node, so its figure times the node count must equal DeepSpeed's (checked as such).

What our total adds beyond DeepSpeed's model states (activations, buckets) is checked in
`test_estimate_adds_activations_and_buffers`.
"""

from __future__ import annotations

import contextlib
import io
import re

import pytest

from shardshift.plan import Plan, Unknown
from shardshift.planner.layout import layout_of
from shardshift.planner.memory import estimate, model_states
from shardshift.planner.types import Machine, Model

import oracles

# (name, parameters, hidden): OPT/GPT-3 family sizes; largest layer = the (padded) embedding, 50272 x h
SIZES = [("125M", 125_000_000, 768), ("350M", 350_000_000, 1024), ("1.3B", 1_300_000_000, 2048),
         ("6.7B", 6_700_000_000, 4096), ("13B", 13_000_000_000, 5120), ("30B", 30_000_000_000, 7168),
         ("66B", 66_000_000_000, 9216), ("175B", 175_000_000_000, 12288)]
MACHINES = [(1, 1), (1, 8), (2, 8), (8, 8)]  # (nodes, GPUs per node): 1, 8, 16, 64 GPUs
VOCAB = 50272


@pytest.fixture(scope="module")
def zero():
    pytest.importorskip("deepspeed")
    oracles.deepspeed_module()
    from deepspeed.runtime.zero import stage3, stage_1_and_2
    return stage_1_and_2, stage3


def _plan(stage: int, offload_optimizer: bool = False, offload_params: bool = False) -> Plan:
    plan = Plan()
    plan.set("sharding.stage", stage)
    plan.set("precision.param_dtype", "bf16")
    plan.set("optimizer.name", "AdamW")
    if offload_optimizer:
        plan.set("offload.optimizer.device", "cpu")
    if offload_params:
        plan.set("offload.params.device", "cpu")
    return plan


def _sums(parts) -> tuple[float, float]:
    gpu = sum(f.value for name, f in parts.items() if not name.startswith("cpu_"))
    cpu = sum(f.value for name, f in parts.items() if name.startswith("cpu_"))
    return gpu, cpu


def _close(ours: float, theirs: float, what: str) -> None:
    assert ours == pytest.approx(theirs, rel=0.01), f"{what}: shardshift {ours:,.0f} vs DeepSpeed {theirs:,.0f}"


def _zero2_cases():
    for name, params, _ in SIZES:
        for nodes, per_node in MACHINES:
            for offload in (False, True):
                for factor in (1.5, 1.0):
                    yield pytest.param(params, nodes, per_node, offload, factor,
                                       id=f"{name}-{nodes}x{per_node}-{'off' if offload else 'gpu'}-f{factor}")


@pytest.mark.oracle
@pytest.mark.parametrize("params,nodes,per_node,offload,factor", list(_zero2_cases()))
def test_zero2_matches_deepspeed(zero, params, nodes, per_node, offload, factor):
    stage_1_and_2, _ = zero
    layout = layout_of(_plan(2, offload), Machine(nodes, per_node), framework="deepspeed")
    layout.additional_buffer_factor = factor
    gpu, cpu = _sums(model_states(layout, Model(params)))
    cpu_mem, gpu_mem = stage_1_and_2.estimate_zero2_model_states_mem_needs(
        total_params=params, num_gpus_per_node=per_node, num_nodes=nodes, cpu_offload=offload,
        additional_buffer_factor=factor)
    _close(gpu, gpu_mem, "per GPU")
    # DeepSpeed's offload figure is every node's CPU memory together; ours is per node
    _close(cpu * (nodes if offload else 1), cpu_mem, "per CPU")


def _zero3_cases():
    for name, params, hidden in SIZES:
        for nodes, per_node in MACHINES:
            for offload, offload_params in ((False, False), (True, False), (True, True)):
                for zero_init in (True, False):
                    yield pytest.param(params, VOCAB * hidden, nodes, per_node, offload, offload_params, zero_init,
                                       id=f"{name}-{nodes}x{per_node}-opt{int(offload)}-par{int(offload_params)}"
                                          f"-init{int(zero_init)}")


@pytest.mark.oracle
@pytest.mark.parametrize("params,largest,nodes,per_node,offload,offload_params,zero_init", list(_zero3_cases()))
def test_zero3_matches_deepspeed(zero, params, largest, nodes, per_node, offload, offload_params, zero_init):
    _, stage3 = zero
    layout = layout_of(_plan(3, offload, offload_params), Machine(nodes, per_node), framework="deepspeed")
    layout.zero_init = zero_init
    gpu, cpu = _sums(model_states(layout, Model(params, largest_layer_parameters=largest)))
    cpu_mem, gpu_mem, _ = stage3.estimate_zero3_model_states_mem_needs(
        total_params=params, largest_layer_params=largest, num_gpus_per_node=per_node, num_nodes=nodes,
        cpu_offload=offload, cpu_offload_params=offload_params, zero_init=zero_init, additional_buffer_factor=1.5)
    _close(gpu, gpu_mem, "per GPU")
    _close(cpu, cpu_mem, "per CPU")


_ROW = re.compile(r"^\s*([\d.]+)GB \|\s*([\d.]+)GB \| (.*)$")


def _table(function, **kwargs) -> list[tuple[float, float, str]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        function(**kwargs)
    return [(float(m[1]) * 2**30, float(m[2]) * 2**30, m[3]) for m in map(_ROW.match, out.getvalue().splitlines()) if m]


def _close_printed(ours: float, printed: float, what: str) -> None:
    # the table prints GiB with 2 decimals: allow that rounding beside the 1%
    assert abs(ours - printed) <= max(0.01 * printed, 0.006 * 2**30), f"{what}: {ours / 2**30:.3f} vs {printed / 2**30:.2f}"


@pytest.mark.oracle
@pytest.mark.parametrize("name,params,hidden", [SIZES[0], SIZES[3], SIZES[7]], ids=["125M", "6.7B", "175B"])
def test_all_cold_tables(zero, name, params, hidden):
    """The `_all_cold` tables DeepSpeed prints, row by row (options parsed from each row)."""
    stage_1_and_2, stage3 = zero
    nodes, per_node = 2, 8
    rows = _table(stage_1_and_2.estimate_zero2_model_states_mem_needs_all_cold, total_params=params,
                  num_gpus_per_node=per_node, num_nodes=nodes)
    assert len(rows) == 2
    for cpu_mem, gpu_mem, options in rows:
        offload = "offload_optimizer=none" not in options
        gpu, cpu = _sums(model_states(layout_of(_plan(2, offload), Machine(nodes, per_node), framework="deepspeed"),
                                      Model(params)))
        _close_printed(gpu, gpu_mem, f"ZeRO-2 {options} per GPU")
        _close_printed(cpu * (nodes if offload else 1), cpu_mem, f"ZeRO-2 {options} per CPU")
    largest = VOCAB * hidden
    rows = _table(stage3.estimate_zero3_model_states_mem_needs_all_cold, total_params=params,
                  largest_layer_params=largest, num_gpus_per_node=per_node, num_nodes=nodes)
    assert len(rows) == 6
    for cpu_mem, gpu_mem, options in rows:
        offload = "offload_optimizer=none" not in options
        offload_params = "offload_param=none" not in options
        layout = layout_of(_plan(3, offload, offload_params), Machine(nodes, per_node), framework="deepspeed")
        layout.zero_init = "zero_init=1" in options
        gpu, cpu = _sums(model_states(layout, Model(params, largest_layer_parameters=largest)))
        _close_printed(gpu, gpu_mem, f"ZeRO-3 {options} per GPU")
        _close_printed(cpu, cpu_mem, f"ZeRO-3 {options} per CPU")


# --- the Layout and the estimate (no oracle) -------------------------------------------------------


def test_layout_defaults_are_named():
    layout = layout_of(Plan(), Machine(1, 8), framework="deepspeed")
    assert layout.stage == 0 and layout.data_parallel == 8 and layout.param_bytes == 4
    text = "\n".join(layout.assumptions)
    assert "ZeRO stage not set: 0, DeepSpeed's default" in text
    assert "training dtype not set: fp32" in text
    assert "micro-batch size not set: 1" in text


def test_layout_unknown_and_auto_fall_back_with_reason():
    plan = Plan()
    plan.set("sharding.stage", "auto")
    plan.set("batch.micro", Unknown("environment variable MBS"))
    layout = layout_of(plan, Machine(2, 8), framework="deepspeed")
    assert layout.stage == 0 and layout.micro_batch == 1
    text = "\n".join(layout.assumptions)
    assert 'ZeRO stage "auto": 0' in text
    assert "micro-batch size not known before the run (environment variable MBS): 1" in text


def test_layout_degrees_and_hybrid():
    plan = Plan()
    plan.set("parallelism.tensor", 8)
    plan.set("parallelism.pipeline", 4)
    layout = layout_of(plan, Machine(8, 8), framework="megatron")
    assert layout.data_parallel == 2  # 64 / (8 x 4)
    plan = Plan()
    plan.set("sharding.stage", 3)
    plan.set("sharding.hybrid", True)
    layout = layout_of(plan, Machine(4, 8), framework="fsdp2")
    assert (layout.data_parallel_shard, layout.data_parallel_replicate) == (8, 4)
    assert any("hybrid shard group size not set: 8" in a for a in layout.assumptions)


def test_layout_buffers_deepspeed_defaults():
    plan = _plan(3)
    layout = layout_of(plan, Machine(1, 8), framework="deepspeed")
    assert layout.fixed_buffers["reduce_bucket"].value == 500_000_000 * 2
    assert layout.fixed_buffers["prefetch_bucket"].value == 50_000_000 * 2
    plan.set("communication.reduce_bucket_elements", 16_777_216)
    layout = layout_of(plan, Machine(1, 8), framework="deepspeed")
    assert layout.fixed_buffers["reduce_bucket"].value == 16_777_216 * 2


def test_layout_buffers_zero2_overlap_double_buffers():
    plan = _plan(2)
    layout = layout_of(plan, Machine(1, 8), framework="deepspeed")
    assert layout.fixed_buffers["reduce_bucket"].value == 500_000_000 * 2  # overlap_comm off at stage 2
    assert "allgather_bucket" not in layout.fixed_buffers  # gathers into the parameters themselves
    plan.set("communication.overlap", True)
    plan.set("communication.reduce_bucket_elements", 200_000_000)
    layout = layout_of(plan, Machine(1, 8), framework="deepspeed")
    assert layout.fixed_buffers["reduce_bucket"].value == 2 * 200_000_000 * 2
    plan.set("communication.contiguous_gradients", False)
    assert "reduce_bucket" not in layout_of(plan, Machine(1, 8), framework="deepspeed").fixed_buffers


def test_optimizer_state_bytes():
    for name, expected in (("AdamW", 8), ("SGD", 4), ("Lion", 4), ("adamw_8bit", 2)):
        plan = Plan()
        plan.set("optimizer.name", name)
        assert layout_of(plan, Machine(1, 1)).optimizer_state_bytes == expected, name
    plan = Plan()
    plan.set("optimizer.name", "Adafactor")
    assert any("approximate" in a for a in layout_of(plan, Machine(1, 1)).assumptions)


def test_fsdp2_full_shard_is_16_bytes_per_parameter():
    plan = Plan()
    plan.set("sharding.stage", 3)
    plan.set("precision.param_dtype", "bf16")
    layout = layout_of(plan, Machine(1, 8), framework="fsdp2")
    parts = model_states(layout, Model(8_000_000_000))
    sharded = parts["parameters"].value + parts["gradients"].value + parts["optimizer_states"].value
    assert sharded == pytest.approx(16 * 8e9 / 8)
    assert "master_weights" not in parts


def test_megatron_distributed_optimizer_is_6_plus_12_over_dp():
    plan = Plan()
    plan.set("sharding.stage", 1)
    plan.set("precision.param_dtype", "bf16")
    plan.set("parallelism.tensor", 2)
    layout = layout_of(plan, Machine(2, 8), framework="megatron")
    assert layout.distributed_optimizer and layout.data_parallel == 8
    gpu, _ = _sums(model_states(layout, Model(1_000_000_000)))
    assert gpu == pytest.approx(1e9 / 2 * (6 + 12 / 8))


def test_estimate_adds_activations_and_buffers():
    plan = _plan(3)
    plan.set("batch.micro", 2)
    plan.set("batch.sequence_length", 4096)
    model = Model(8_000_000_000, layers=32, hidden=4096, heads=32, ffn_hidden=14336, vocab=128256)
    layout = layout_of(plan, Machine(2, 8), framework="deepspeed")
    result = estimate(layout, model, Machine(2, 8, gpu_memory=80 * 10**9))
    states = sum(f.value for n, f in model_states(layout, model).items() if not n.startswith("cpu_"))
    assert result.per_gpu_bytes == pytest.approx(
        states + result.parts["activations"].value + result.parts["buffers"].value)
    assert result.parts["activations"].value > 0 and result.fits is True
    assert result.largest_micro_batch >= 2
    # one more sample than the largest does not fit
    bigger = layout_of(plan, Machine(2, 8), framework="deepspeed", micro_batch=result.largest_micro_batch + 1)
    assert estimate(bigger, model, Machine(2, 8, gpu_memory=80 * 10**9)).fits is False


def test_estimate_without_shape_says_why():
    result = estimate(layout_of(_plan(2), Machine(1, 8), framework="deepspeed"), Model(8_000_000_000),
                      Machine(1, 8, gpu_memory=80 * 10**9))
    assert result.parts["activations"].value == 0
    assert "not known" in result.parts["activations"].assumption
    assert result.largest_micro_batch is None


def test_lora_trains_only_the_adapter():
    plan = Plan()
    plan.set("precision.param_dtype", "bf16")
    plan.passthrough["axolotl"] = {"adapter": "qlora", "lora_r": 16, "lora_target_linear": True}
    layout = layout_of(plan, Machine(1, 1), framework="axolotl")
    assert (layout.adapter, layout.adapter_rank, layout.adapter_targets, layout.base_weight_bytes) == \
        ("qlora", 16, ("all-linear",), 0.5)
    h, ffn, kv, layers = 4096, 14336, 1024, 32  # Llama-3-8B: 8 KV heads of 128
    model = Model(8_030_261_248, layers=layers, hidden=h, heads=32, kv_heads=8, ffn_hidden=ffn, vocab=128256)
    parts = model_states(layout, model)
    # r x (fan-in + fan-out) over q, k, v, o, gate, up, down: 16 x 32 x (2h + 2(h+kv) + 2h + 3(h+ffn)) = 41,943,040
    adapter = 16 * layers * (2 * h + 2 * (h + kv) + 2 * h + 3 * (h + ffn))
    assert adapter == 41_943_040
    assert parts["gradients"].value == adapter * 4
    assert parts["optimizer_states"].value == adapter * 8
    assert parts["parameters"].value == pytest.approx(8_030_261_248 * 0.5 + adapter * 4)
    assert "master_weights" not in parts


def test_framework_from_a_fully_lifted_ds_config():
    plan = Plan()
    from shardshift.source import Location
    plan.set("sharding.stage", 2, Location("ds.json", 1, 1, "/zero_optimization/stage"))
    assert layout_of(plan, Machine(1, 8)).engine == "deepspeed"
    assert layout_of(Plan(), Machine(1, 8)).engine == "ddp"


def test_context_parallel_ranks_share_the_shards():
    plan = Plan()
    plan.set("sharding.stage", 3)
    plan.set("parallelism.context", 2)
    layout = layout_of(plan, Machine(1, 8), framework="fsdp2")
    assert layout.data_parallel == 4
    parts = model_states(layout, Model(8_000_000_000))
    assert parts["optimizer_states"].value == pytest.approx(8 * 8e9 / 8)  # sharded over DP 4 x CP 2


def test_nvme_offload_is_neither_gpu_nor_host_memory():
    plan = _plan(3)
    plan.set("offload.optimizer.device", "nvme")
    plan.set("offload.params.device", "nvme")
    layout = layout_of(plan, Machine(1, 8), framework="deepspeed")
    parts = model_states(layout, Model(8_000_000_000, largest_layer_parameters=500_000_000))
    assert {"nvme_parameters", "nvme_gradients", "nvme_master_weights", "nvme_optimizer_states"} <= set(parts)
    assert sum(f.value for n, f in parts.items() if n.startswith("nvme_")) == pytest.approx(18 * 8e9)
    result = estimate(layout, Model(8_000_000_000, largest_layer_parameters=500_000_000), Machine(1, 8))
    assert result.per_gpu_bytes == pytest.approx(parts["gathered_parameters"].value
                                                 + result.parts["buffers"].value)


def test_zeropp_hpz_keeps_a_secondary_partition():
    plan = _plan(3)
    plan.passthrough["deepspeed"] = {"zero_optimization": {"zero_hpz_partition_size": 8}}
    layout = layout_of(plan, Machine(4, 8), framework="deepspeed")
    assert layout.secondary_partition == 8
    parts = model_states(layout, Model(8_000_000_000, largest_layer_parameters=500_000_000))
    assert parts["secondary_parameters"].value == pytest.approx(2 * 8e9 / 8)


def test_megatron_partial_optimizer_offload():
    plan = Plan()
    plan.set("sharding.stage", 1)
    plan.set("precision.param_dtype", "bf16")
    plan.set("offload.optimizer.device", "cpu")
    plan.set("offload.optimizer.ratio", 0.5)
    layout = layout_of(plan, Machine(1, 8), framework="megatron")
    assert layout.offload_fraction == 0.5
    parts = model_states(layout, Model(1_000_000_000))
    assert parts["gradients"].value == pytest.approx(4e9)  # the fp32 main gradients stay on the GPU
    assert parts["optimizer_states"].value == pytest.approx(8e9 / 8 * 0.5)
    assert parts["cpu_optimizer_states"].value == pytest.approx(8e9 / 8 * 0.5 * 8)  # per node: 8 GPUs


def test_megatron_flags_reach_the_layout():
    from shardshift.formats.megatron import read

    text = ("--num-layers 32 --hidden-size 4096 --num-attention-heads 32 --seq-length 4096 --micro-batch-size 1 "
            "--global-batch-size 64 --bf16 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 "
            "--use-distributed-optimizer --recompute-granularity full --recompute-method uniform "
            "--recompute-num-layers 2 --swiglu\n")
    layout = layout_of(read(text, "x.args").plan, Machine(2, 8))
    assert (layout.engine, layout.distributed_optimizer, layout.data_parallel) == ("megatron", True, 4)
    assert (layout.recompute, layout.recompute_method, layout.recompute_layers) == ("full", "uniform", 2)
    assert layout.gated_mlp and layout.num_microbatches == 16 and layout.sequence_length == 4096
