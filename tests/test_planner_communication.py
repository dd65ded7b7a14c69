"""Communication per step: the standard cost models, worked by hand here (not by calling the module).

Ring collectives over n ranks, per rank sent: all-reduce 2(n-1)/n N, reduce-scatter and all-gather
(n-1)/n N, all-to-all (n-1)/n N. Bandwidths: intra-node 900 GB/s (NVLink), inter-node 200 Gbps =
25e9 bytes/s per GPU.
"""

from __future__ import annotations

import pytest

from shardshift.planner.communication import not_estimated, per_step, step_time_lower_bound
from shardshift.planner.types import Layout, Machine, Model, Traffic

INTRA = 900e9
INTER = 25e9


def machine(nodes: int, per_node: int) -> Machine:
    return Machine(nodes=nodes, gpus_per_node=per_node, gpu_memory=80 * 10**9, bandwidth=INTER,
                   intra_node_bandwidth=INTRA)


def by_axis(traffic: list[Traffic]) -> dict[str, Traffic]:
    axes = [t.axis for t in traffic]
    assert len(axes) == len(set(axes)), axes
    return {t.axis: t for t in traffic}


def test_ddp_8_gpus_one_node():
    # 1B parameters, fp32 gradients (DDP with autocast), 8 GPUs in one node, one micro-batch:
    # all-reduce of 1e9 x 4 B = 4e9 B over 8 ranks: 2 x 7/8 x 4e9 = 7e9 B; 7e9 / 900e9 = 7.777...e-3 s
    layout = Layout(world_size=8, data_parallel_shard=8, stage=0, engine="ddp", param_bytes=4, grad_bytes=4,
                    compute_bytes=2, nodes=1, gpus_per_node=8)
    traffic = by_axis(per_step(layout, Model(parameters=10**9), machine(1, 8)))
    assert set(traffic) == {"data-parallel"}
    assert traffic["data-parallel"].bytes == pytest.approx(7e9)
    assert traffic["data-parallel"].seconds == pytest.approx(7e9 / 900e9)
    assert "intra-node" in traffic["data-parallel"].assumption


def test_ddp_accumulation_every_micro_batch_unless_no_sync():
    # 4 micro-batches: plain DDP all-reduces at every backward: 4 x 7e9 = 28e9 B;
    # through Accelerate (no_sync on the first 3): 7e9 B.
    plain = Layout(world_size=8, data_parallel_shard=8, engine="ddp", grad_bytes=4, accumulation=4,
                   num_microbatches=4)
    sent = by_axis(per_step(plain, Model(parameters=10**9), machine(1, 8)))["data-parallel"].bytes
    assert sent == pytest.approx(28e9)
    accelerate = Layout(world_size=8, data_parallel_shard=8, engine="ddp", grad_bytes=4, accumulation=4,
                        num_microbatches=4, framework="accelerate")
    sent = by_axis(per_step(accelerate, Model(parameters=10**9), machine(1, 8)))["data-parallel"].bytes
    assert sent == pytest.approx(7e9)


def test_zero3_16_gpus_two_nodes():
    # DeepSpeed ZeRO-3, 8e9 parameters, bf16 (communication_data_type default = bf16), 2 x 8 GPUs,
    # 2 micro-batches. Per micro-batch: all-gather forward of 8e9 x 2 B = 16e9 B: 15/16 x 16e9 = 15e9 B;
    # all-gather backward of all but the last 0.5e9 parameters (stage3_max_reuse_distance 1e9 / 2):
    # 7.5e9 x 2 B x 15/16 = 14.0625e9 B; reduce-scatter of 16e9 B of gradients: 15e9 B. 44.0625e9 B.
    # x 2 micro-batches = 88.125e9 B. The group spans 16 ranks > 8 a node: inter-node, 88.125e9 / 25e9 = 3.525 s.
    layout = Layout(world_size=16, data_parallel_shard=16, stage=3, engine="deepspeed", param_bytes=2, grad_bytes=2,
                    compute_bytes=2, accumulation=2, num_microbatches=2, nodes=2, gpus_per_node=8)
    traffic = by_axis(per_step(layout, Model(parameters=8 * 10**9), machine(2, 8)))
    assert set(traffic) == {"data-parallel"}
    assert traffic["data-parallel"].bytes == pytest.approx(88.125e9)
    assert traffic["data-parallel"].seconds == pytest.approx(3.525)
    assert "inter-node" in traffic["data-parallel"].assumption


def test_zero3_backward_gather_spares_the_reuse_window():
    # 0.8e9 parameters; DeepSpeed keeps the last stage3_max_reuse_distance / 2 = 0.5e9 of the forward, so the
    # backward gathers 0.3e9 parameters. 8 GPUs, bf16, one micro-batch: forward 7/8 x 1.6e9 = 1.4e9 B;
    # backward 7/8 x 0.6e9 = 0.525e9 B; reduce-scatter 7/8 x 1.6e9 = 1.4e9 B: 3.325e9 B.
    layout = Layout(world_size=8, data_parallel_shard=8, stage=3, engine="deepspeed", param_bytes=2, grad_bytes=2,
                    compute_bytes=2)
    traffic = by_axis(per_step(layout, Model(parameters=8 * 10**8), machine(1, 8)))
    assert traffic["data-parallel"].bytes == pytest.approx(3.325e9)
    # FSDP2 full shard gathers everything again in backward: 3 x 1.4e9 = 4.2e9 B
    fsdp2 = Layout(world_size=8, data_parallel_shard=8, stage=3, engine="fsdp2", param_bytes=4, grad_bytes=4,
                   compute_bytes=2)
    assert by_axis(per_step(fsdp2, Model(parameters=8 * 10**8), machine(1, 8)))["data-parallel"].bytes == \
        pytest.approx(4.2e9)


def test_fsdp2_accumulation_through_accelerate():
    # FSDP2 full shard through Accelerate, 8 GPUs, 1e9 parameters, bf16 param and reduce dtype, 4 micro-batches:
    # all-gathers repeat every micro-batch (forward + backward): 8 x 7/8 x 2e9 = 14e9 B; the reduce-scatter
    # runs once (set_requires_gradient_sync(False) on the first 3): 7/8 x 2e9 = 1.75e9 B. 15.75e9 B.
    # Without Accelerate (fully_shard's default, sync every micro-batch): 14e9 + 4 x 1.75e9 = 21e9 B.
    common = dict(world_size=8, data_parallel_shard=8, stage=3, engine="fsdp2", param_bytes=4, grad_bytes=4,
                  compute_bytes=2, accumulation=4, num_microbatches=4)
    model = Model(parameters=10**9)
    accelerate = by_axis(per_step(Layout(framework="accelerate", **common), model, machine(1, 8)))
    plain = by_axis(per_step(Layout(framework="fsdp2", **common), model, machine(1, 8)))
    assert accelerate["data-parallel"].bytes == pytest.approx(15.75e9)
    assert plain["data-parallel"].bytes == pytest.approx(21e9)


def test_interleaved_pipeline():
    # Megatron PP 4 with 2 virtual stages, 8 micro-batches, s 4096, b 1, h 4096, bf16, no TP:
    # x = 4096 x 4096 x 2 = 33,554,432 B; a middle rank sends 2 x 2 = 4 tensors a micro-batch:
    # 4 x 8 x 33,554,432 = 1,073,741,824 B.
    layout = Layout(world_size=4, data_parallel_shard=1, pipeline=4, virtual_pipeline=2, engine="megatron",
                    compute_bytes=2, sequence_length=4096, micro_batch=1, accumulation=8, num_microbatches=8)
    axes = by_axis(per_step(layout, Model(parameters=10**9, layers=32, hidden=4096, heads=32), machine(1, 8)))
    assert axes["pipeline"].bytes == pytest.approx(1_073_741_824)


def test_zero2_and_zero1_under_accumulation():
    # 8 GPUs one node, 1e9 parameters, bf16, 4 micro-batches. Reduce-scatter 2e9 B -> 7/8 x 2e9 = 1.75e9 B;
    # all-gather of the updated bf16 partitions once per step: 1.75e9 B.
    # ZeRO-2 reduce-scatters at every micro-batch: 4 x 1.75e9 + 1.75e9 = 8.75e9 B.
    # ZeRO-1 only at the boundary: 1.75e9 + 1.75e9 = 3.5e9 B.
    common = dict(world_size=8, data_parallel_shard=8, engine="deepspeed", param_bytes=2, grad_bytes=2,
                  compute_bytes=2, accumulation=4, num_microbatches=4)
    model = Model(parameters=10**9)
    zero2 = by_axis(per_step(Layout(stage=2, **common), model, machine(1, 8)))
    zero1 = by_axis(per_step(Layout(stage=1, **common), model, machine(1, 8)))
    assert zero2["data-parallel"].bytes == pytest.approx(8.75e9)
    assert zero1["data-parallel"].bytes == pytest.approx(3.5e9)


def test_fsdp2_hybrid_2x8():
    # FSDP2 HSDP: shard group 8 (one node), 2 replicas; 8e9 parameters, param_dtype bf16, reduce_dtype fp32.
    # Shard group (intra-node): all-gather forward + backward of 16e9 B: 2 x 7/8 x 16e9 = 28e9 B;
    #   reduce-scatter of 8e9 x 4 B = 32e9 B: 7/8 x 32e9 = 28e9 B. Total 56e9 B; 56e9 / 900e9 = 0.0622... s.
    # Across nodes: all-reduce of the 1/8 gradient shard, 32e9 / 8 = 4e9 B, over 2 replicas:
    #   2 x 1/2 x 4e9 = 4e9 B; 4e9 / 25e9 = 0.16 s.
    # Lower bound without overlap: 0.0622 + 0.16 = 0.2222 s; overlapped: 0.16 s.
    layout = Layout(world_size=16, data_parallel_shard=8, data_parallel_replicate=2, stage=3, engine="fsdp2",
                    param_bytes=4, grad_bytes=4, compute_bytes=2, grad_reduce_bytes=4, nodes=2, gpus_per_node=8)
    traffic = per_step(layout, Model(parameters=8 * 10**9), machine(2, 8))
    axes = by_axis(traffic)
    assert set(axes) == {"data-parallel", "hybrid-cross-node"}
    assert axes["data-parallel"].bytes == pytest.approx(56e9)
    assert axes["data-parallel"].seconds == pytest.approx(56e9 / 900e9)
    assert axes["hybrid-cross-node"].bytes == pytest.approx(4e9)
    assert axes["hybrid-cross-node"].seconds == pytest.approx(0.16)
    assert step_time_lower_bound(traffic).value == pytest.approx(56e9 / 900e9 + 0.16)
    assert step_time_lower_bound(traffic, overlapped=True).value == pytest.approx(0.16)


def test_megatron_tp8_pp2():
    # Megatron TP 8 x PP 2 on 2 x 8 GPUs (DP 1): 32 layers, h 4096, s 4096, b 1, 8 micro-batches, bf16, no SP.
    # Tensor: x = 4096 x 1 x 4096 x 2 B = 33,554,432 B; an all-reduce sends 2 x 7/8 x x = 58,720,256 B;
    #   4 per layer = 234,881,024 B; 16 layers a stage = 3,758,096,384 B; x 8 micro-batches = 30,064,771,072 B.
    #   TP group of 8 in one node: 30,064,771,072 / 900e9 = 0.033405... s.
    # Pipeline: 2 stages, each sends one 33,554,432 B tensor a micro-batch (stage 0 activations forward,
    #   stage 1 gradients backward): x 8 = 268,435,456 B; crosses nodes: / 25e9 = 0.010737... s.
    layout = Layout(world_size=16, data_parallel_shard=1, tensor=8, pipeline=2, stage=0, engine="megatron",
                    param_bytes=2, grad_bytes=4, compute_bytes=2, sequence_length=4096, micro_batch=1,
                    accumulation=8, num_microbatches=8, nodes=2, gpus_per_node=8)
    model = Model(parameters=7 * 10**9, layers=32, hidden=4096, heads=32)
    axes = by_axis(per_step(layout, model, machine(2, 8)))
    assert set(axes) == {"tensor", "pipeline"}
    assert axes["tensor"].bytes == pytest.approx(30_064_771_072)
    assert axes["tensor"].seconds == pytest.approx(30_064_771_072 / 900e9)
    assert axes["pipeline"].bytes == pytest.approx(268_435_456)
    assert axes["pipeline"].seconds == pytest.approx(268_435_456 / 25e9)

    # Sequence parallelism: TP volume unchanged (all-gather + reduce-scatter = one all-reduce), the
    # pipeline tensor is s/8: 268,435,456 / 8 = 33,554,432 B. Full recomputation: 6 TP collectives
    # a layer instead of 4: 30,064,771,072 x 6/4 = 45,097,156,608 B.
    sp = Layout(**{**_fields(layout), "sequence_parallel": True, "recompute": "full"})
    axes = by_axis(per_step(sp, model, machine(2, 8)))
    assert axes["tensor"].bytes == pytest.approx(45_097_156_608)
    assert axes["pipeline"].bytes == pytest.approx(33_554_432)


def test_megatron_distributed_optimizer_once_per_step():
    # Megatron DP 8 with --use-distributed-optimizer, 1e9 parameters, fp32 main grads, bf16 params,
    # 4 micro-batches: reduce-scatter of 4e9 B once (7/8 -> 3.5e9 B) + all-gather of 2e9 B once (1.75e9 B) = 5.25e9 B.
    layout = Layout(world_size=8, data_parallel_shard=8, stage=1, distributed_optimizer=True, engine="megatron",
                    param_bytes=2, grad_bytes=4, compute_bytes=2, accumulation=4, num_microbatches=4)
    axes = by_axis(per_step(layout, Model(parameters=10**9), machine(1, 8)))
    assert axes["data-parallel"].bytes == pytest.approx(5.25e9)


def test_moe_ep8():
    # Megatron MoE on one node of 8: EP 8, DP 8 (dense), 32 layers all MoE, h 4096, s 4096, b 1, top-2, bf16,
    # 47e9 parameters of which 45e9 routed experts. One micro-batch.
    # Expert all-to-all: 4096 tokens x 2 x 4096 x 2 B = 67,108,864 B; 7/8 leaves: 58,720,256 B; dispatch +
    #   combine, forward + backward = 4 a layer: 234,881,024 B; x 32 layers = 7,516,192,768 B; / 900e9 s.
    # Dense data parallel: 2e9 parameters x 4 B (fp32 main grads) = 8e9 B, all-reduce over 8:
    #   2 x 7/8 x 8e9 = 14e9 B; / 900e9 s.
    # Expert data parallel: world / (TP x EP x PP) = 8 / 8 = 1: no traffic.
    layout = Layout(world_size=8, data_parallel_shard=8, expert=8, stage=0, engine="megatron", param_bytes=2,
                    grad_bytes=4, compute_bytes=2, sequence_length=4096, micro_batch=1, nodes=1, gpus_per_node=8)
    model = Model(parameters=47 * 10**9, layers=32, hidden=4096, heads=32, experts=8, experts_per_token=2,
                  expert_parameters=45 * 10**9)
    axes = by_axis(per_step(layout, model, machine(1, 8)))
    assert set(axes) == {"data-parallel", "expert"}
    assert axes["expert"].bytes == pytest.approx(7_516_192_768)
    assert axes["expert"].seconds == pytest.approx(7_516_192_768 / 900e9)
    assert axes["data-parallel"].bytes == pytest.approx(14e9)
    assert axes["data-parallel"].seconds == pytest.approx(14e9 / 900e9)


def test_context_parallel_ring():
    # CP 2 (one node), h 4096, 32 heads, 8 KV heads (head dim 128), s 8192 -> 4096 a rank, b 1, bf16, 32 layers.
    # K and V chunk: 2 x 4096 x 1 x 8 x 128 x 2 B = 16,777,216 B; 3 x (2 - 1) sends a layer = 50,331,648 B;
    # x 32 layers = 1,610,612,736 B. DP 1: no data-parallel traffic besides... the 2 CP ranks reduce gradients:
    # 1e9 x 2 B all-reduced over 2: 2 x 1/2 x 2e9 = 2e9 B.
    layout = Layout(world_size=2, data_parallel_shard=1, context=2, stage=0, engine="megatron", param_bytes=2,
                    grad_bytes=2, compute_bytes=2, sequence_length=8192, micro_batch=1, nodes=1, gpus_per_node=8)
    model = Model(parameters=10**9, layers=32, hidden=4096, heads=32, kv_heads=8)
    axes = by_axis(per_step(layout, model, machine(1, 8)))
    assert axes["context"].bytes == pytest.approx(1_610_612_736)
    assert axes["data-parallel"].bytes == pytest.approx(2e9)


def test_unknown_bandwidth_and_shape():
    layout = Layout(world_size=16, data_parallel_shard=2, tensor=8, stage=0, engine="megatron", grad_bytes=4)
    bare = Machine(nodes=2, gpus_per_node=8)
    traffic = per_step(layout, Model(parameters=10**9), bare)
    assert [t.axis for t in traffic] == ["data-parallel"]
    assert traffic[0].seconds is None
    bound = step_time_lower_bound(traffic)
    assert bound.value != bound.value and "data-parallel" in bound.assumption  # NaN: no time known
    assert not_estimated(layout, Model(parameters=10**9)) == [
        "tensor-parallel traffic not estimated: needs layers, hidden, sequence length"]


def test_single_gpu_sends_nothing():
    assert per_step(Layout(world_size=1), Model(parameters=10**9), machine(1, 1)) == []
    assert step_time_lower_bound([]).value == 0.0


def _fields(layout: Layout) -> dict:
    return {name: getattr(layout, name) for name in Layout.__dataclass_fields__}
