"""The recommendation: worked cases with a simple memory model written here (the fake below), so that
every figure in an assertion can be checked by hand; one case runs against planner.memory.estimate.

The fake, per GPU (GB = 1e9 bytes), for P parameters split over TP t x PP p:
  model states  DDP 16 B/parameter; DeepSpeed 2 (weights, sharded at stage 3) + 2 (gradients, sharded
                from stage 2) + 12 (master + Adam, sharded from stage 1, dropped when offloaded);
                FSDP2 16 / shard group (+ 2 B/parameter gathered with reshard_after_forward=False; 0
                with CPUOffloadPolicy); Megatron 6 + 12 / DP with the distributed optimizer (6 with
                optimizer offload), 18 without
  activations   L x s x b x h x 34 bytes (2 with full recomputation) / t   (the first stage holds L
                layers' worth under 1F1B; sequence parallel with TP)
"""

from __future__ import annotations

import pytest

from shardshift.planner.recommend import describe, gb, recommend
from shardshift.planner.types import Figure, Layout, Machine, MemoryEstimate, Model


def fake_estimate(model: Model, machine: Machine):
    def estimate(layout: Layout) -> MemoryEstimate:
        t, p = layout.tensor, layout.pipeline
        local = model.parameters / (t * p)
        shard, stage = layout.data_parallel_shard, layout.stage
        offload = layout.offload_optimizer != "none"
        if layout.engine == "ddp":
            states = 16 * local
        elif layout.engine == "deepspeed":
            states = (2 * local / (shard if stage >= 3 else 1) + 2 * local / (shard if stage >= 2 else 1)
                      + (0 if offload else 12 * local / (shard if stage >= 1 else 1)))
        elif layout.engine == "fsdp2":
            states = 0.0 if layout.offload_params != "none" else 16 * local / shard
            if stage == 2:
                states += 2 * local
        elif layout.engine == "megatron":
            dp = layout.data_parallel
            states = 6 * local + (0 if offload else 12 * local / (dp if layout.distributed_optimizer else 1))
        else:
            raise AssertionError(layout.engine)
        per_layer = 2 if layout.recompute == "full" else 34
        activations = (model.layers * layout.sequence_length * layout.micro_batch * model.hidden * per_layer / t)
        total = states + activations
        parts = {"model_states": Figure(states, "fake"), "activations": Figure(activations, "fake")}
        return MemoryEstimate(parts=parts, per_gpu_bytes=total, fits=total <= machine.gpu_memory,
                              largest_micro_batch=None)
    return estimate


def machine(nodes: int, per_node: int, memory_gb: int) -> Machine:
    return Machine(nodes=nodes, gpus_per_node=per_node, gpu_memory=memory_gb * 10**9, bandwidth=25e9,
                   intra_node_bandwidth=900e9)


def test_1b_on_8_gpus_is_ddp():
    # DDP: 16 x 1e9 = 16 GB of model states; activations 16 x 2048 x 4 x 2048 x 34 = 9,126,805,504 B:
    # 25.1 GB per GPU, fits 80 GB. The setup (DDP) fits: no change.
    model = Model(parameters=10**9, layers=16, hidden=2048, heads=16)
    m = machine(1, 8, 80)
    layout = Layout(world_size=8, data_parallel_shard=8, engine="ddp", param_bytes=4, grad_bytes=4,
                    master_weights=False, sequence_length=2048, micro_batch=4, nodes=1, gpus_per_node=8)
    rec = recommend(layout, model, m, fake_estimate(model, m))
    assert rec.choice == "ddp"
    assert rec.why == ("on 8 × 80 GB: plain DDP on 8 GPUs: every GPU holds a whole replica: 25 GB per GPU "
                       "(model states 16 GB) fits 80 GB")
    assert rec.smallest_change is None


def test_8b_on_one_node_is_fsdp2_full_shard():
    # Activations a sample: 32 x 4096 x 1 x 4096 x 34 = 18,253,611,008 B; the setup's micro-batch 8: 146.03 GB
    # (full recomputation: 32 x 4096 x 8 x 4096 x 2 = 8,589,934,592 B).
    # DDP: 128 GB of states + 146 GB = 274 GB (137 GB with checkpointing, 129 GB at micro-batch 1): no.
    # FSDP2 full shard over 8: 16 + 146 = 162 GB: no; with checkpointing 16 + 8.6 = 24.6 GB: fits.
    # The setup: ZeRO-1, micro-batch 8: 2 x 8 + 2 x 8 + 12 = 44 GB of states + 146.03 GB = 190 GB.
    # Stage 2: 30 + 146 = 176 GB; stage 3: 16 + 146 = 162 GB: no. Full recomputation:
    # 44 + 32 x 4096 x 8 x 4096 x 2 = 8,589,934,592 B -> 52.6 GB: fits.
    model = Model(parameters=8 * 10**9, layers=32, hidden=4096, heads=32, kv_heads=8)
    m = machine(1, 8, 80)
    layout = Layout(world_size=8, data_parallel_shard=8, stage=1, engine="deepspeed", sequence_length=4096,
                    micro_batch=8, nodes=1, gpus_per_node=8)
    rec = recommend(layout, model, m, fake_estimate(model, m))
    assert rec.choice == "fsdp2-full-shard"
    assert rec.why == ("on 8 × 80 GB: plain DDP on 8 GPUs: every GPU holds a whole replica: 274 GB per GPU "
                       "(model states 128 GB); FSDP2 full shard over the node's 8 GPUs with activation "
                       "checkpointing: 25 GB per GPU (model states 16 GB) fits 80 GB")
    assert rec.smallest_change == ("ZeRO-1 on 8 × 80 GB: 190 GB per GPU; activation checkpointing (full "
                                   "recomputation) needs 53 GB")


def test_raising_the_stage_comes_first():
    # 8B, micro-batch 1, on 8 x 40 GB. ZeRO-1: 44 + 18.25 = 62 GB; stage 2: 30 + 18.25 = 48 GB (no);
    # stage 3: 16 + 18.25 = 34 GB (fits) -- before activation checkpointing (44 + 1.07 = 45 GB, would not fit either).
    model = Model(parameters=8 * 10**9, layers=32, hidden=4096, heads=32, kv_heads=8)
    m = machine(1, 8, 40)
    layout = Layout(world_size=8, data_parallel_shard=8, stage=1, engine="deepspeed", sequence_length=4096,
                    micro_batch=1, nodes=1, gpus_per_node=8)
    rec = recommend(layout, model, m, fake_estimate(model, m))
    assert rec.smallest_change == "ZeRO-1 on 8 × 40 GB: 62 GB per GPU; stage 3 needs 34 GB"


def test_micro_batch_keeps_the_global_batch():
    # 1B DDP on 8 x 24 GB, micro-batch 4, accumulation 2: 16 + 9.13 = 25.1 GB. FSDP2 (reshard_after_forward=False):
    # 2 + 2 + 9.13 = 13.1 GB: fits -- raising the "stage" (DDP -> FSDP2) comes first.
    model = Model(parameters=10**9, layers=16, hidden=2048, heads=16)
    m = machine(1, 8, 24)
    layout = Layout(world_size=8, data_parallel_shard=8, engine="ddp", sequence_length=2048, micro_batch=4,
                    accumulation=2, nodes=1, gpus_per_node=8)
    rec = recommend(layout, model, m, fake_estimate(model, m))
    assert rec.smallest_change == ("DDP on 8 × 24 GB: 25 GB per GPU; FSDP2 with reshard_after_forward=False "
                                   "needs 13 GB")
    # Megatron with the distributed optimizer already: DP 8, 1e9 params: 6 + 1.5 = 7.5 GB states + 9.13 GB
    # activations = 16.6 GB on 16 GB GPUs: no. Full recomputation: 7.5 + 0.54 = 8.0 GB: fits.
    m16 = machine(1, 8, 16)
    megatron = Layout(world_size=8, data_parallel_shard=8, stage=1, distributed_optimizer=True, engine="megatron",
                      sequence_length=2048, micro_batch=4, accumulation=2, nodes=1, gpus_per_node=8)
    rec = recommend(megatron, model, m16, fake_estimate(model, m16))
    assert rec.smallest_change == ("Megatron distributed optimizer on 8 × 16 GB: 17 GB per GPU; activation "
                                   "checkpointing (full recomputation) needs 8.0 GB")


def test_70b_on_2_nodes_of_8():
    # Activations: 80 x 4096 x 8192 x 34 = 91,268,055,040 B (91.3 GB); with full recomputation 5,368,709,120 B.
    # DDP: 1120 + 91.3 = 1211 GB. Hybrid (shard 8): 140 + 91.3 = 231 GB (145 GB with checkpointing): no.
    # Full shard over 16 (2 nodes <= 4): 70 + 91.3 = 161 GB; with checkpointing 70 + 5.4 = 75 GB: fits.
    # The setup, ZeRO-3 over 16 without checkpointing: 161 GB; activation checkpointing: 75 GB.
    model = Model(parameters=70 * 10**9, layers=80, hidden=8192, heads=64, kv_heads=8)
    m = machine(2, 8, 80)
    layout = Layout(world_size=16, data_parallel_shard=16, stage=3, engine="deepspeed", sequence_length=4096,
                    micro_batch=1, nodes=2, gpus_per_node=8)
    rec = recommend(layout, model, m, fake_estimate(model, m))
    assert rec.choice == "fsdp2-full-shard"
    assert rec.why == (
        "on 2 × 8 × 80 GB: plain DDP on 16 GPUs: every GPU holds a whole replica: 1211 GB per GPU (model states "
        "1120 GB); FSDP2 hybrid sharding: full shard within each node (8 GPUs), replicated across the 2 nodes: "
        "231 GB per GPU (model states 140 GB); FSDP2 full shard over all 16 GPUs of the 2 nodes with activation "
        "checkpointing: 75 GB per GPU (model states 70 GB) fits 80 GB")
    assert rec.smallest_change == ("ZeRO-3 on 2 × 8 × 80 GB: 161 GB per GPU; activation checkpointing (full "
                                   "recomputation) needs 75 GB")


def test_400b_on_64_gpus_is_3d():
    # 405e9 parameters, 126 layers, h 16384, s 8192: s x h = 134,217,728; activations 126 x that x 34 =
    # 574,988,746,752 B (575 GB), with full recomputation 33,822,867,456 B (33.8 GB); / 8 with TP 8.
    # On 8 x 8 x 141 GB: DDP no; hybrid (shard 8): 16 x 405 / 8 = 810 GB of states: no; 8 nodes > 4: no
    # full shard across nodes. 3-D with TP 8, the distributed optimizer (6 + 12/DP bytes a parameter):
    #   PP 1 (DP 8): 50.6e9 a GPU -> 380 GB; PP 2: 228 GB; PP 4 (DP 2): 12.66e9 x 12 = 152 GB (+4.2 = 156): no;
    #   PP 8 (DP 1): 6.33e9 x 18 = 113.9 GB + 71.9 GB = 186 GB; with checkpointing + 4.2 = 118 GB: fits.
    # The setup, FSDP2 full shard over 64: 16 x 405 / 64 = 101.25 GB + 575 GB = 676 GB; checkpointing: 135 GB.
    # Communication per step (one micro-batch; 25e9 B/s across nodes, 900e9 within):
    #   full shard over 64: 2 all-gathers + 1 reduce-scatter of 405e9 x 2 B, 63/64 each:
    #     3 x 0.984375 x 810e9 = 2,392,031,250,000 B; / 25e9 = 95.68 s.
    #   3-D: TP 8: 6 collectives a layer (full recomputation) x 2 x 7/8 x (8192 x 16384 x 2 = 268,435,456 B)
    #     = 2,818,572,288 B x 126/8 layers = 44,392,513,536 B; / 900e9 = 0.04933 s.
    #     PP 8: (8192/8) x 16384 x 2 = 33,554,432 B, 2 sends a micro-batch = 67,108,864 B; / 25e9 = 0.00268 s.
    #     44.46 GB, 0.0520 s.
    model = Model(parameters=405 * 10**9, layers=126, hidden=16384, heads=128, kv_heads=8)
    layout = Layout(world_size=64, data_parallel_shard=64, stage=3, engine="fsdp2", param_bytes=4, grad_bytes=4,
                    master_weights=False, sequence_length=8192, micro_batch=1, nodes=8, gpus_per_node=8)
    m = machine(8, 8, 141)
    rec = recommend(layout, model, m, fake_estimate(model, m))
    assert rec.choice == "3d"
    assert rec.why.endswith(
        "full sharding across 8 nodes (more than 4) would all-gather the whole model over the inter-node link at "
        "every micro-batch; Megatron-style 3-D, TP 8 × PP 8 × DP 1 with the distributed optimizer and sequence "
        "parallelism with activation checkpointing: 118 GB per GPU (model states 114 GB) fits 141 GB; "
        "communication per step: FSDP2 full shard over 64 GPUs 2392 GB per GPU (at least 95.7 s), "
        "3-D 44 GB per GPU (at least 0.052 s)")
    assert rec.smallest_change == ("FSDP2 full shard on 8 × 8 × 141 GB: 676 GB per GPU; activation checkpointing "
                                   "(full recomputation) needs 135 GB")

    # On 80 GB GPUs nothing fits on the GPUs alone (3-D at best 118 GB); with the optimizer on the CPU (Megatron
    # --optimizer-cpu-offload: 6 bytes a parameter stay), 3-D: PP 4 (DP 2) 12.66e9 x 6 = 75.9 GB + 4.2 = 80.2 GB: no;
    # PP 8: 6.33e9 x 6 = 38.0 GB + 4.2 GB = 42 GB: fits.
    # The setup fits only with checkpointing and CPU offload together (states off the GPU: 33.8 GB of activations).
    m80 = machine(8, 8, 80)
    rec = recommend(layout, model, m80, fake_estimate(model, m80))
    assert rec.choice == "3d+cpu-offload"
    assert rec.why.endswith(
        "Megatron-style 3-D, TP 8 × PP 8 × DP 1 with the distributed optimizer and sequence parallelism with "
        "activation checkpointing: 118 GB per GPU (model states 114 GB): nothing fits on the GPUs alone; "
        "Megatron-style 3-D, TP 8 × PP 8 × DP 1 with the distributed optimizer, sequence parallelism and "
        "--optimizer-cpu-offload with activation checkpointing: 42 GB per GPU (model states 38 GB) fits 80 GB; "
        "communication per step: FSDP2 full shard over 64 GPUs 2392 GB per GPU (at least 95.7 s), "
        "3-D 44 GB per GPU (at least 0.052 s)")
    assert rec.smallest_change == (
        "FSDP2 full shard on 8 × 8 × 80 GB: 676 GB per GPU; activation checkpointing (full recomputation) + "
        "CPUOffloadPolicy (parameters, gradients and the optimizer step on the CPU) needs 34 GB")


def test_70b_long_sequence_on_2_nodes_offloads():
    # s 8192: activations 80 x 8192 x 8192 x 34 = 182,536,110,080 B; full recomputation 10,737,418,240 B.
    # Full shard over 16: 70 + 10.7 = 80.7 GB with checkpointing: no. 3-D TP 8 x PP 2 x DP 1: 4.375e9 x 18 =
    # 78.75 GB + 10.7 / 8 = 1.34 GB = 80.09 GB: no (PP 4 would need 32 GPUs). Two nodes (<= 4): FSDP2 full shard
    # with CPUOffloadPolicy: the states leave the GPU, 10.7 GB of activations: fits.
    model = Model(parameters=70 * 10**9, layers=80, hidden=8192, heads=64, kv_heads=8)
    m = machine(2, 8, 80)
    layout = Layout(world_size=16, data_parallel_shard=16, stage=3, engine="deepspeed", sequence_length=8192,
                    micro_batch=1, nodes=2, gpus_per_node=8)
    rec = recommend(layout, model, m, fake_estimate(model, m))
    assert rec.choice == "fsdp2-full-shard+cpu-offload"
    assert rec.why.endswith(
        "FSDP2 full shard over all 16 GPUs of the 2 nodes: 253 GB per GPU (model states 70 GB); Megatron-style 3-D, "
        "TP 8 × PP 2 × DP 1 with the distributed optimizer and sequence parallelism with activation checkpointing: "
        "80 GB per GPU (model states 79 GB): nothing fits on the GPUs alone; FSDP2 full shard over all 16 GPUs of "
        "the 2 nodes with CPUOffloadPolicy with activation checkpointing: 11 GB per GPU (model states 0.0 GB) fits "
        "80 GB")
    # the setup (ZeRO-3, 70 + 182.5 = 253 GB): checkpointing alone 80.7 GB, then offload_optimizer:
    # 2 + 2 = 4 B/parameter sharded over 16 = 17.5 GB + 182.5 GB: no -- cumulatively with checkpointing:
    # 17.5 + 10.7 = 28 GB
    assert rec.smallest_change == ("ZeRO-3 on 2 × 8 × 80 GB: 253 GB per GPU; activation checkpointing (full "
                                   "recomputation) + offload_optimizer to the CPU needs 28 GB")


def test_gpu_memory_unknown():
    model = Model(parameters=10**9)
    rec = recommend(Layout(world_size=8, data_parallel_shard=8, engine="ddp"), model,
                    Machine(nodes=1, gpus_per_node=8), lambda layout: pytest.fail("not estimated"))
    assert rec.choice == "unknown" and rec.smallest_change is None


def test_describe_and_gb():
    assert describe(Layout(world_size=16, engine="megatron", tensor=8, pipeline=2)) == "Megatron TP 8 PP 2"
    assert describe(Layout(world_size=16, engine="fsdp2", stage=3, data_parallel_shard=8,
                           data_parallel_replicate=2)) == "FSDP2 hybrid shard (8-way)"
    assert gb(131.4e9) == "131 GB" and gb(7.46e9) == "7.5 GB"


def test_with_the_planner_memory_estimate():
    """The same ladder on planner.memory.estimate: an 8B model on one node of 8 x 80 GB."""
    memory = pytest.importorskip("shardshift.planner.memory")
    model = Model(parameters=8 * 10**9, layers=32, hidden=4096, heads=32, kv_heads=8, ffn_hidden=14336,
                  vocab=128256)
    m = machine(1, 8, 80)
    layout = Layout(world_size=8, data_parallel_shard=8, engine="ddp", param_bytes=4, grad_bytes=4,
                    master_weights=False, sequence_length=4096, micro_batch=1, nodes=1, gpus_per_node=8)
    rec = recommend(layout, model, m, lambda lay: memory.estimate(lay, model, m))
    assert rec.choice == "fsdp2-full-shard"
    assert rec.smallest_change is not None and rec.smallest_change.startswith("DDP on 8 × 80 GB: ")
