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
    # 8 GPUs one node, 1e9 parameters, bf16, 4 micro-batches. DeepSpeed all-reduces each gradient bucket
    # (use_multi_rank_bucket_allreduce): 2 x 7/8 x 2e9 B = 3.5e9 B; all-gather of the updated bf16 partitions
    # once per step: 7/8 x 2e9 = 1.75e9 B.
    # ZeRO-2 reduces at every micro-batch: 4 x 3.5e9 + 1.75e9 = 15.75e9 B.
    # ZeRO-1 only at the boundary: 3.5e9 + 1.75e9 = 5.25e9 B.
    common = dict(world_size=8, data_parallel_shard=8, engine="deepspeed", param_bytes=2, grad_bytes=2,
                  compute_bytes=2, accumulation=4, num_microbatches=4)
    model = Model(parameters=10**9)
    zero2 = by_axis(per_step(Layout(stage=2, **common), model, machine(1, 8)))
    zero1 = by_axis(per_step(Layout(stage=1, **common), model, machine(1, 8)))
    assert zero2["data-parallel"].bytes == pytest.approx(15.75e9)
    assert zero1["data-parallel"].bytes == pytest.approx(5.25e9)


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


# --- oracles: what the frameworks send, counted on the CPU -------------------------------------------
#
# The cadence and dtype claims per_step rests on, checked against the frameworks themselves: FSDP2 and
# DDP on 2 gloo ranks (every collective wrapped and counted), DeepSpeed's engine on one CPU rank (its
# gradient reductions per micro-batch), Megatron's validate_args (the fp32 reduction with bf16) and
# schedules.py, and Accelerate's accumulate.

TORCH_CHILD = r'''
import json, os, sys, warnings
warnings.simplefilter("ignore")
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn


def worker(rank, port, out_path):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=2)
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from torch.nn.parallel import DistributedDataParallel
    mesh = init_device_mesh("cpu", (2,))
    calls = []
    originals = {}
    for name in ("all_gather_single", "reduce_scatter_single", "all_reduce", "all_gather_into_tensor",
                 "reduce_scatter_tensor"):
        if hasattr(dist, name):
            originals[name] = getattr(dist, name)
            def counted(*a, _name=name, **k):
                tensors = [x for x in list(a) + list(k.values()) if isinstance(x, torch.Tensor)]
                calls.append([_name, max(t.numel() for t in tensors), str(tensors[0].dtype).split(".")[-1]])
                return originals[_name](*a, **k)
            setattr(dist, name, counted)

    def model():
        torch.manual_seed(0)
        return nn.Sequential(nn.Linear(64, 64), nn.Linear(64, 64))  # 2 x 4160 parameters

    def fsdp2(micro=2, sync_last_only=False, mesh=mesh, **kw):
        net = model()
        for block in net:
            fully_shard(block, mesh=mesh, **kw)
        fully_shard(net, mesh=mesh, **kw)
        x = torch.ones(2, 64)
        net(x).sum().backward()  # lazy initialisation, not counted
        calls.clear()
        for i in range(micro):
            if sync_last_only:
                net.set_requires_gradient_sync(i == micro - 1)
            net(x).float().sum().backward()
        out = list(calls)
        calls.clear()
        return out

    def ddp(micro=2, no_sync=False):
        net = DistributedDataParallel(model())
        def hook(state, bucket):
            calls.append(["ddp_all_reduce", bucket.buffer().numel(), str(bucket.buffer().dtype).split(".")[-1]])
            return default_hooks.allreduce_hook(None, bucket)
        net.register_comm_hook(None, hook)
        x = torch.ones(2, 64)
        net(x).sum().backward()
        calls.clear()
        for i in range(micro):
            if no_sync and i < micro - 1:
                with net.no_sync():
                    net(x).sum().backward()
            else:
                net(x).sum().backward()
        out = [c for c in calls if c[0] == "ddp_all_reduce"]
        calls.clear()
        return out

    bf16 = MixedPrecisionPolicy(param_dtype=torch.bfloat16)
    hsdp_mesh = init_device_mesh("cpu", (2, 1), mesh_dim_names=("replicate", "shard"))
    result = {
        "hsdp-2x1": fsdp2(mp_policy=bf16, mesh=hsdp_mesh),
        "fsdp2-default": fsdp2(mp_policy=bf16),
        "fsdp2-reshard-false": fsdp2(mp_policy=bf16, reshard_after_forward=False),
        "fsdp2-sync-last": fsdp2(mp_policy=bf16, sync_last_only=True),
        "fsdp2-fp32-reduce": fsdp2(mp_policy=MixedPrecisionPolicy(param_dtype=torch.bfloat16,
                                                                  reduce_dtype=torch.float32)),
        "ddp": ddp(),
        "ddp-no-sync": ddp(no_sync=True),
        "torch": torch.__version__,
    }
    if rank == 0:
        with open(out_path, "w") as handle:
            json.dump(result, handle)
    dist.barrier()
    dist.destroy_process_group()
    # Leave without interpreter finalization: a gloo worker thread that still holds a tensor takes the GIL
    # there and aborts the rank ("terminate called without an active exception", seen once in CI).
    os._exit(0)


if __name__ == "__main__":
    mp.spawn(worker, args=(int(sys.argv[2]), sys.argv[1]), nprocs=2)
'''

DEEPSPEED_CHILD = r'''
import json, logging, os, sys, warnings
warnings.simplefilter("ignore")
import torch
import torch.multiprocessing as mp


def worker(rank, port, out_path):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), LOCAL_RANK=str(rank),
                      WORLD_SIZE="2", DS_ACCELERATOR="cpu")
    from torch import nn
    import deepspeed
    import deepspeed.comm as comm
    logging.getLogger("DeepSpeed").setLevel(logging.ERROR)
    calls = []
    for name in ("all_reduce", "reduce", "reduce_scatter_fn", "reduce_scatter_tensor", "all_gather_into_tensor",
                 "allgather_fn", "all_gather", "all_reduce_coalesced", "reduce_scatter", "all_gather_coalesced"):
        if hasattr(comm, name):
            def counted(*a, _name=name, _original=getattr(comm, name), **k):
                tensors = [x for x in list(a) + list(k.values()) if isinstance(x, torch.Tensor)]
                if tensors:
                    calls.append([_name, max(t.numel() for t in tensors), str(tensors[0].dtype).split(".")[-1]])
                return _original(*a, **k)
            setattr(comm, name, counted)

    def run(stage, accumulation=2):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(64, 64), nn.Linear(64, 64))  # 8320 parameters
        config = {"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": accumulation,
                  "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "torch_adam": True}},
                  "zero_optimization": {"stage": stage, "stage3_param_persistence_threshold": 0},
                  "bf16": {"enabled": True}}
        engine, *_ = deepspeed.initialize(model=model, config=config, model_parameters=model.parameters())
        x = torch.ones(2, 64, dtype=torch.bfloat16)
        for _ in range(accumulation):  # one whole step first, not counted
            engine.backward(engine(x).float().sum())
            engine.step()
        micro_batches = []
        for _ in range(accumulation):
            calls.clear()
            loss = engine(x).float().sum()
            forward = list(calls)
            calls.clear()
            engine.backward(loss)
            backward = list(calls)
            calls.clear()
            engine.step()
            micro_batches.append({"forward": forward, "backward": backward, "step": list(calls)})
        return micro_batches

    result = {"stages": {stage: run(stage) for stage in (0, 1, 2, 3)}, "deepspeed": deepspeed.__version__}
    if rank == 0:
        with open(out_path, "w") as handle:
            json.dump(result, handle)
    comm.barrier()
    torch.distributed.destroy_process_group()
    os._exit(0)  # no interpreter finalization with gloo threads alive (see TORCH_CHILD)


if __name__ == "__main__":
    mp.spawn(worker, args=(int(sys.argv[2]), sys.argv[1]), nprocs=2)
'''


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _child_env() -> dict:
    import os

    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore", "CUDA_VISIBLE_DEVICES": ""}


@pytest.fixture(scope="module")
def torch_counts(tmp_path_factory):
    import json
    import subprocess
    import sys

    from oracles import require_installed

    require_installed("torch")
    directory = tmp_path_factory.mktemp("planner_comm_torch")
    script, out = directory / "child.py", directory / "out.json"
    script.write_text(TORCH_CHILD)
    done = subprocess.run([sys.executable, str(script), str(out), str(_free_port())], capture_output=True, text=True,
                          timeout=300, env=_child_env(), cwd=directory, stdin=subprocess.DEVNULL)
    assert done.returncode == 0 and out.is_file(), done.stderr[-4000:]
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def deepspeed_counts(tmp_path_factory):
    import json
    import subprocess
    import sys

    from oracles import require_installed

    require_installed("torch", "deepspeed")
    directory = tmp_path_factory.mktemp("planner_comm_deepspeed")
    script, out = directory / "child.py", directory / "out.json"
    script.write_text(DEEPSPEED_CHILD)
    done = subprocess.run([sys.executable, str(script), str(out), str(_free_port())], capture_output=True, text=True,
                          timeout=600, env=_child_env(), cwd=directory, stdin=subprocess.DEVNULL)
    assert done.returncode == 0 and out.is_file(), done.stderr[-4000:]
    return json.loads(out.read_text())


def _ring_bytes(calls: list, n: int = 2) -> float:
    """What one rank sends for the counted collectives: (n-1)/n of each full tensor (all-gather output,
    reduce-scatter input), 2(n-1)/n for an all-reduce."""
    size = {"bfloat16": 2, "float16": 2, "float32": 4}
    total = 0.0
    for name, numel, dtype in calls:
        factor = 2 * (n - 1) / n if "all_reduce" in name else (n - 1) / n
        total += factor * numel * size[dtype]
    return total


@pytest.mark.oracle
def test_oracle_fsdp2_sends_what_per_step_says(torch_counts):
    """fully_shard on 2 gloo ranks, 2 blocks of 4160 parameters, bf16 param_dtype, 2 micro-batches."""
    assert torch_counts["torch"].startswith(("2.13", "2.14")), torch_counts["torch"]
    model = Model(parameters=8320)

    def planned(**changes) -> float:
        layout = Layout(**{**dict(world_size=2, data_parallel_shard=2, stage=3, engine="fsdp2", framework="fsdp2",
                                  param_bytes=4, grad_bytes=4, compute_bytes=2, accumulation=2, num_microbatches=2),
                           **changes})
        return by_axis(per_step(layout, model, machine(1, 8)))["data-parallel"].bytes

    def kinds(calls):
        return sorted({(name, dtype) for name, _, dtype in calls})

    default = torch_counts["fsdp2-default"]
    # every micro-batch: each block gathered in forward and again in backward, and reduce-scattered
    assert [c[0] for c in default].count("all_gather_single") == 8
    assert [c[0] for c in default].count("reduce_scatter_single") == 4
    assert kinds(default) == [("all_gather_single", "bfloat16"), ("reduce_scatter_single", "bfloat16")]
    assert _ring_bytes(default) == pytest.approx(planned())
    # reshard_after_forward=False: no backward gather
    assert _ring_bytes(torch_counts["fsdp2-reshard-false"]) == pytest.approx(planned(stage=2))
    assert [c[0] for c in torch_counts["fsdp2-reshard-false"]].count("all_gather_single") == 4
    # set_requires_gradient_sync(False) on the first micro-batch: one reduction, the gathers unchanged
    sync_last = torch_counts["fsdp2-sync-last"]
    assert [c[0] for c in sync_last].count("reduce_scatter_single") == 2
    assert _ring_bytes(sync_last) == pytest.approx(planned(gradient_sync="last-micro-batch"))
    assert _ring_bytes(sync_last) == pytest.approx(planned(framework="accelerate"))
    # reduce_dtype fp32: the reduce-scatter in fp32, the gathers still in param_dtype
    fp32 = torch_counts["fsdp2-fp32-reduce"]
    assert kinds(fp32) == [("all_gather_single", "bfloat16"), ("reduce_scatter_single", "float32")]
    assert _ring_bytes(fp32) == pytest.approx(planned(grad_reduce_bytes=4))


@pytest.mark.oracle
def test_oracle_hsdp_all_reduces_the_shard_across_replicas(torch_counts):
    # a (replicate 2, shard 1) mesh: nothing to gather or reduce-scatter, one all-reduce per block per micro-batch
    calls = torch_counts["hsdp-2x1"]
    assert [(name, dtype) for name, _, dtype in calls] == [("all_reduce", "bfloat16")] * 4
    layout = Layout(world_size=2, data_parallel_shard=1, data_parallel_replicate=2, stage=3, engine="fsdp2",
                    framework="fsdp2", param_bytes=4, grad_bytes=4, compute_bytes=2, accumulation=2,
                    num_microbatches=2)
    axes = by_axis(per_step(layout, Model(parameters=8320), machine(1, 8)))
    assert set(axes) == {"hybrid-cross-node"}
    assert axes["hybrid-cross-node"].bytes == pytest.approx(_ring_bytes(calls))


@pytest.mark.oracle
def test_oracle_ddp_all_reduces_every_backward_outside_no_sync(torch_counts):
    model = Model(parameters=8320)
    every, once = torch_counts["ddp"], torch_counts["ddp-no-sync"]
    assert sum(numel for _, numel, _ in every) == 2 * 8320 and sum(numel for _, numel, _ in once) == 8320
    layout = Layout(world_size=2, data_parallel_shard=2, engine="ddp", grad_bytes=4, accumulation=2,
                    num_microbatches=2)
    assert by_axis(per_step(layout, model, machine(1, 8)))["data-parallel"].bytes == pytest.approx(_ring_bytes(every))
    accelerate = Layout(world_size=2, data_parallel_shard=2, engine="ddp", grad_bytes=4, accumulation=2,
                        num_microbatches=2, framework="accelerate")
    assert by_axis(per_step(accelerate, model, machine(1, 8)))["data-parallel"].bytes == \
        pytest.approx(_ring_bytes(once))


@pytest.mark.oracle
def test_oracle_deepspeed_sends_what_per_step_says(deepspeed_counts):
    """DeepSpeed's engine on 2 CPU ranks (gloo), bf16, 2 micro-batches a step, 8320 parameters: the gradient
    reductions in each micro-batch's backward, and every byte, against per_step."""
    from shardshift.planner.communication import gradient_reductions

    assert deepspeed_counts["deepspeed"].startswith("0.19"), deepspeed_counts["deepspeed"]
    model = Model(parameters=8320)
    for stage, micro_batches in deepspeed_counts["stages"].items():
        stage = int(stage)
        layout = Layout(world_size=2, data_parallel_shard=2, stage=stage, engine="deepspeed", param_bytes=2,
                        grad_bytes=2, compute_bytes=2, accumulation=2, num_microbatches=2)
        # the collectives over the model (not the 1-element overflow and norm checks)
        calls = [[c for c in phase if c[1] > 1] for mb in micro_batches for phase in mb.values()]
        reductions = [sum(1 for name, numel, _ in mb["backward"] if "reduce" in name and numel == 8320)
                      for mb in micro_batches]
        assert reductions == ([0, 1] if stage < 2 else [1, 1]), (stage, micro_batches)
        assert gradient_reductions(layout)[0] == sum(reductions)
        assert {dtype for phase in calls for _, _, dtype in phase} == {"bfloat16"}, stage
        measured = _ring_bytes([c for phase in calls for c in phase])
        planned = by_axis(per_step(layout, model, machine(1, 8)))["data-parallel"].bytes
        assert measured == pytest.approx(planned), (stage, micro_batches)
    # ZeRO-1/2 all-reduce the gradients (use_multi_rank_bucket_allreduce) and gather once after the step;
    # ZeRO-3 gathers in forward (this model lies inside stage3_max_reuse_distance: no backward gather)
    zero2 = deepspeed_counts["stages"]["2"][1]
    assert [c[0] for c in zero2["backward"] if c[1] > 1] == ["all_reduce"]
    assert [c[0] for c in zero2["step"] if c[1] > 1] == ["all_gather_into_tensor"]
    zero3 = deepspeed_counts["stages"]["3"][0]
    assert [c[0] for c in zero3["forward"]] == ["allgather_fn"] and zero3["step"] == []
    assert [c[0] for c in zero3["backward"]] == ["reduce_scatter_fn"]


@pytest.mark.oracle
def test_oracle_megatron_reduces_in_fp32_with_bf16_once_per_step():
    import megatron_oracle

    reason = megatron_oracle.available()
    if reason:
        pytest.skip(f"the Megatron oracle cannot run: {reason}")
    base = ["--num-layers", "2", "--hidden-size", "64", "--num-attention-heads", "4", "--seq-length", "128",
            "--max-position-embeddings", "128", "--train-iters", "10", "--micro-batch-size", "1", "--mock-data",
            "--bf16"]
    fp32, bf16 = megatron_oracle.judge([(base, 8), (base + ["--grad-reduce-in-bf16"], 8)])
    note = "accumulate and all-reduce gradients in fp32 for bfloat16 data type."
    assert fp32.ok and note in fp32.warnings
    assert bf16.ok and note not in bf16.warnings
    # all micro-batches but the last run under no_sync_func (the forward-backward without pipelining)
    schedules = (megatron_oracle.MEGATRON / "megatron" / "core" / "pipeline_parallel" / "schedules.py").read_text()
    assert "with no_sync_func():\n            for i in range(num_microbatches - 1):" in schedules


@pytest.mark.oracle
def test_oracle_accelerate_accumulate_skips_the_sync():
    import inspect

    from oracles import require_installed

    require_installed("accelerate")
    from accelerate import Accelerator

    no_sync = inspect.getsource(Accelerator.no_sync)
    assert "model.set_requires_gradient_sync(False)" in no_sync  # FSDP2
    assert "zero_stage < 2" in no_sync  # DeepSpeed ZeRO-2/3: no no_sync, the engine reduces every micro-batch
    assert "self.no_sync(m)" in inspect.getsource(Accelerator.accumulate)
