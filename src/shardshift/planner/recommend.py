"""Which framework fits the job, and the smallest change to this setup that makes it fit.

    recommend(layout, model, machine, estimate_fn) -> Recommendation
        estimate_fn(layout) -> MemoryEstimate   (planner.memory.estimate bound to the model and machine)

The choice, tried in this order and the first whose memory per GPU fits (each with the setup's own
activation recomputation and micro-batch first, then with full activation checkpointing, then also
micro-batch 1 at the same global batch):

1. `ddp`: plain DDP, every GPU holds a whole replica (the model and its optimizer fit one GPU);
2. `fsdp2-full-shard` on one node; on several nodes `fsdp2-hybrid`: fully_shard within each node and
   replicate across nodes (HSDP), so only the gradient all-reduce crosses nodes;
3. `fsdp2-full-shard` over every GPU, on a few nodes (at most FEW_NODES): ZeRO-3's all-gathers of the
   whole model cross the inter-node link at every micro-batch;
4. `3d`: Megatron-style tensor parallelism within the node (TP up to the node, at most 8, dividing the
   heads), pipeline parallelism across nodes (the fewest stages that fit) and data parallelism over
   the rest with the distributed optimizer and sequence parallelism;
5. when none of these fits on the GPUs alone, the optimizer states go to the CPU, fully sharded:
   `fsdp2-full-shard+cpu-offload` (CPUOffloadPolicy) on a few nodes, else `3d+cpu-offload` (Megatron's
   --optimizer-cpu-offload); hybrid sharding is skipped there, as it keeps a whole optimizer copy per
   node. CPU memory is reported (the estimate's cpu_* parts) but not checked: the Machine has no CPU
   size. If even that does not fit, the choice stays `3d` and the reason says more GPUs are needed.

The smallest change to the given setup (when it does not fit), in order of disruption: raise the
ZeRO stage (DDP: FSDP2; Megatron: the distributed optimizer), activation checkpointing, a smaller
micro-batch with more accumulation (same global batch), optimizer offload to the CPU, tensor
parallelism within the node, pipeline parallelism. Each is tried alone, then cumulatively; the first
that fits is reported with the setup's figure and its own ("ZeRO-2 on 8 × 80 GB: 131 GB per GPU;
stage 3 needs 19 GB").

Sizes in the messages are decimal GB (10^9 bytes), as `--gpu-memory 80GB` reads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from shardshift.planner import communication
from shardshift.planner.types import Layout, Machine, MemoryEstimate, Model, Recommendation

EstimateFn = Callable[[Layout], MemoryEstimate]

FEW_NODES = 4  # full sharding across at most this many nodes before tensor/pipeline parallelism
MAX_TP = 8  # tensor parallelism stays within one NVLink domain of up to 8 GPUs


def gb(value: float) -> str:
    """Decimal GB as the messages print them: 131 GB, 7.5 GB, 0.4 GB."""
    v = value / 1e9
    return f"{v:.0f} GB" if v >= 10 else f"{v:.1f} GB"


def machine_text(machine: Machine) -> str:
    memory = f" × {gb(machine.gpu_memory)}" if machine.gpu_memory else ""
    if machine.nodes > 1:
        return f"{machine.nodes} × {machine.gpus_per_node}{memory}"
    return f"{machine.gpus_per_node}{memory}"


def describe(layout: Layout) -> str:
    """The setup in a few words: DDP, ZeRO-2, FSDP2 full shard, Megatron TP 8 PP 2 ..."""
    engine = layout.engine or ""
    if engine == "deepspeed":
        text = f"ZeRO-{layout.stage}"
    elif engine == "fsdp2":
        if layout.data_parallel_replicate > 1 and layout.stage >= 2:
            text = f"FSDP2 hybrid shard ({layout.data_parallel_shard}-way)"
        else:
            text = "FSDP2 full shard" if layout.stage >= 3 else "FSDP2 reshard_after_forward=False"
    elif engine == "megatron":
        text = "Megatron" + (" distributed optimizer" if layout.distributed_optimizer else "")
    elif engine == "ddp" or layout.stage == 0:
        text = "DDP"
    else:
        text = f"ZeRO-{layout.stage}"
    degrees = [f"{name} {size}" for name, size in (("TP", layout.tensor), ("PP", layout.pipeline),
                                                     ("CP", layout.context), ("EP", layout.expert)) if size > 1]
    if degrees:
        text += " " + " ".join(degrees)
    return text


# --- layouts --------------------------------------------------------------------------------------

def _engine_bytes(layout: Layout, engine: str) -> dict:
    """The per-parameter bytes each engine keeps (as planner/layout.py resolves them)."""
    mixed = layout.compute_bytes < 4
    c = layout.compute_bytes
    if engine == "fsdp2":
        return dict(param_bytes=4, grad_bytes=4, master_weights=False, fp32_grad_copy=False)
    if engine == "megatron":
        return dict(param_bytes=c, grad_bytes=4, master_weights=mixed, fp32_grad_copy=False)
    if engine == "deepspeed":
        return dict(param_bytes=c, grad_bytes=c, master_weights=mixed, fp32_grad_copy=mixed)
    return dict(param_bytes=4, grad_bytes=4, master_weights=False, fp32_grad_copy=False)


def _regrid(layout: Layout, *, tensor: int | None = None, pipeline: int | None = None,
            hybrid_shard: int | None = None) -> Layout:
    """The layout with new TP/PP degrees, data parallelism taking the rest of the world."""
    t = tensor if tensor is not None else layout.tensor
    p = pipeline if pipeline is not None else layout.pipeline
    dp = max(1, layout.world_size // (t * p * max(1, layout.context)))
    shard, replicate = dp, 1
    group = hybrid_shard if hybrid_shard is not None else (
        layout.data_parallel_shard if layout.data_parallel_replicate > 1 else None)
    if group and group < dp and dp % group == 0:
        shard, replicate = group, dp // group
    return replace(layout, tensor=t, pipeline=p, data_parallel_shard=shard, data_parallel_replicate=replicate,
                   sequence_parallel=layout.sequence_parallel or (t > 1 and layout.engine == "megatron"),
                   virtual_pipeline=layout.virtual_pipeline if p > 1 else None)


def _as_engine(layout: Layout, engine: str, stage: int, **changes) -> Layout:
    out = replace(layout, engine=engine, framework=engine, stage=stage, **_engine_bytes(layout, engine),
                  distributed_optimizer=(engine == "megatron" and stage >= 1), fixed_buffers={},
                  assumptions=[], **changes)
    return out


def _micro(layout: Layout, micro: int) -> Layout:
    factor = layout.micro_batch // micro
    return replace(layout, micro_batch=micro, accumulation=layout.accumulation * factor,
                   num_microbatches=(layout.num_microbatches or layout.accumulation) * factor)


def _tp_size(layout: Layout, model: Model, per_node: int) -> int:
    """The largest power of two up to the node (and MAX_TP) dividing the heads (and KV heads)."""
    t = 1
    while t * 2 <= min(per_node, MAX_TP):
        nxt = t * 2
        if model.heads and model.heads % nxt:
            break
        if model.kv_heads and model.kv_heads % nxt:
            break
        if layout.world_size % (nxt * layout.pipeline * max(1, layout.context)):
            break
        t = nxt
    return t


# --- the choice -----------------------------------------------------------------------------------

def _variants(layout: Layout) -> list[tuple[Layout, str]]:
    """The candidate as given, then with full recomputation, then also micro-batch 1."""
    out = [(layout, "")]
    if layout.recompute != "full":
        out.append((replace(layout, recompute="full"), "with activation checkpointing"))
    if layout.micro_batch > 1:
        full = replace(layout, recompute="full")
        out.append((_micro(full, 1), f"with activation checkpointing and micro-batch 1 "
                                     f"(accumulation ×{layout.micro_batch})"))
    return out


def _first_fit(candidate: Layout, estimate_fn: EstimateFn) -> tuple[Layout, MemoryEstimate, str] | None:
    for variant, how in _variants(candidate):
        estimate = estimate_fn(variant)
        if estimate.fits:
            return variant, estimate, how
    return None


def _model_states(estimate: MemoryEstimate) -> float:
    return sum(f.value for name, f in estimate.parts.items()
               if not name.startswith("cpu_") and name not in ("activations", "buffers"))


def _candidates(layout: Layout, model: Model, machine: Machine) -> list[tuple[str, Layout, str]]:
    world, nodes, per_node = machine.world_size, machine.nodes, machine.gpus_per_node
    base = replace(layout, world_size=world, nodes=nodes, gpus_per_node=per_node, tensor=1, pipeline=1,
                   virtual_pipeline=None, sequence_parallel=False, offload_optimizer="none", offload_params="none")
    cp = max(1, layout.context)
    dp = max(1, world // cp)
    out = [("ddp", _as_engine(base, "ddp", 0, data_parallel_shard=dp, data_parallel_replicate=1),
            f"plain DDP on {world} GPUs: every GPU holds a whole replica")]
    if nodes == 1:
        out.append(("fsdp2-full-shard", _as_engine(base, "fsdp2", 3, data_parallel_shard=dp, data_parallel_replicate=1),
                    f"FSDP2 full shard over the node's {world} GPUs"))
    else:
        shard = max(1, per_node // cp)
        out.append(("fsdp2-hybrid", _as_engine(base, "fsdp2", 3, data_parallel_shard=shard,
                                               data_parallel_replicate=max(1, dp // shard)),
                    f"FSDP2 hybrid sharding: full shard within each node ({shard} GPUs), replicated across "
                    f"the {nodes} nodes"))
        if nodes <= FEW_NODES:
            out.append(("fsdp2-full-shard", _as_engine(base, "fsdp2", 3, data_parallel_shard=dp,
                                                       data_parallel_replicate=1),
                        f"FSDP2 full shard over all {world} GPUs of the {nodes} nodes"))
    return out


def _three_d(layout: Layout, model: Model, machine: Machine, estimate_fn: EstimateFn, offload: bool = False
             ) -> tuple[Layout, MemoryEstimate, str, bool]:
    """Megatron-style 3-D: TP within the node, the fewest pipeline stages that fit (with `offload`, the
    optimizer states on the CPU: Megatron's --optimizer-cpu-offload)."""
    world, per_node = machine.world_size, machine.gpus_per_node
    base = replace(layout, world_size=world, nodes=machine.nodes, gpus_per_node=per_node, tensor=1, pipeline=1,
                   virtual_pipeline=None, offload_optimizer="cpu" if offload else "none", offload_params="none")
    base = _as_engine(base, "megatron", 1)
    t = _tp_size(base, model, per_node)
    last = None
    p = 1
    while t * p * max(1, base.context) <= world:
        if world % (t * p * max(1, base.context)) == 0 and (not model.layers or p <= model.layers):
            candidate = _regrid(base, tensor=t, pipeline=p)
            candidate.sequence_parallel = t > 1
            found = _first_fit(candidate, estimate_fn)
            if found:
                chosen, estimate, how = found
                return chosen, estimate, how, True
            last = candidate
        p *= 2
    if last is None:
        last = _regrid(base, tensor=t, pipeline=1)
    variants = _variants(last)
    chosen = variants[-1][0]
    return chosen, estimate_fn(chosen), variants[-1][1], False


def _degrees(layout: Layout) -> str:
    return f"TP {layout.tensor} × PP {layout.pipeline} × DP {layout.data_parallel}"


def _cpu_text(estimate: MemoryEstimate) -> str:
    cpu = sum(f.value for name, f in estimate.parts.items() if name.startswith("cpu_"))
    return f", {gb(cpu)} of CPU memory per node" if cpu else ""


def _fits_text(what: str, how: str, estimate: MemoryEstimate, memory: int) -> str:
    return (f"{what}{' ' + how if how else ''}: {gb(estimate.per_gpu_bytes)} per GPU (model states "
            f"{gb(_model_states(estimate))}{_cpu_text(estimate)}) fits {gb(memory)}")


def recommend(layout: Layout, model: Model, machine: Machine, estimate_fn: EstimateFn) -> Recommendation:
    """The framework that fits this model on this machine (and why, from the numbers), and the
    smallest change to `layout` that makes it fit (None when it fits already)."""
    notes = [f"choice ladder: DDP, then FSDP2 full shard in a node (hybrid across nodes), then full shard "
             f"across at most {FEW_NODES} nodes, then Megatron-style TP (within the node, at most {MAX_TP}) x PP x DP; "
             f"each first as set up, then with full activation checkpointing, then also micro-batch 1",
             "when nothing fits on the GPUs alone: the optimizer states on the CPU, fully sharded (hybrid sharding "
             "would keep a whole optimizer copy per node); CPU memory is not checked against the machine",
             "memory figures from the planner's estimate (model states + activations + buffers)"]
    if not machine.gpu_memory:
        return Recommendation(choice="unknown", why="GPU memory not given (--gpu-memory): whether anything fits is "
                                                    "not judged", smallest_change=None, assumptions=notes)
    memory = machine.gpu_memory
    tried: list[str] = []
    choice = why = None
    for name, candidate, what in _candidates(layout, model, machine):
        found = _first_fit(candidate, estimate_fn)
        if found:
            _, estimate, how = found
            choice, why = name, _fits_text(what, how, estimate, memory)
            break
        estimate = estimate_fn(candidate)
        tried.append(f"{what}: {gb(estimate.per_gpu_bytes)} per GPU (model states {gb(_model_states(estimate))})")
    if choice is None:
        full_shard = _full_shard(layout, machine)
        if machine.nodes > FEW_NODES:
            tried.append(f"full sharding across {machine.nodes} nodes (more than {FEW_NODES}) would all-gather the "
                         f"whole model over the inter-node link at every micro-batch")
        chosen, estimate, how, fits = _three_d(layout, model, machine, estimate_fn)
        what = (f"Megatron-style 3-D, {_degrees(chosen)} with the distributed optimizer and sequence "
                f"parallelism")
        if fits:
            choice, why = "3d", _fits_text(what, how, estimate, memory)
        else:
            tried.append(f"{what}{' ' + how if how else ''}: {gb(estimate.per_gpu_bytes)} per GPU (model states "
                         f"{gb(_model_states(estimate))}): nothing fits on the GPUs alone")
            choice, why, chosen = _offloaded(layout, model, machine, estimate_fn)
        if choice.startswith("3d") and machine.nodes > 1:
            # the reason in communication: what full sharding would send against what 3-D sends
            full = replace(full_shard, recompute=chosen.recompute, micro_batch=chosen.micro_batch,
                           accumulation=chosen.accumulation, num_microbatches=chosen.num_microbatches)
            why += (f"; communication per step: FSDP2 full shard over {machine.world_size} GPUs "
                    f"{_comm_text(full, model, machine)}, 3-D {_comm_text(chosen, model, machine)}")
    if tried:
        why = "; ".join(tried) + "; " + why
    why = f"on {machine_text(machine)}: {why}"
    return Recommendation(choice=choice, why=why, smallest_change=smallest_change(layout, model, machine, estimate_fn),
                          assumptions=notes)


def _full_shard(layout: Layout, machine: Machine) -> Layout:
    """FSDP2 full shard over every GPU of the machine."""
    base = replace(layout, world_size=machine.world_size, nodes=machine.nodes, gpus_per_node=machine.gpus_per_node,
                   tensor=1, pipeline=1, virtual_pipeline=None, sequence_parallel=False, offload_optimizer="none",
                   offload_params="none")
    dp = max(1, machine.world_size // max(1, layout.context))
    return _as_engine(base, "fsdp2", 3, data_parallel_shard=dp, data_parallel_replicate=1)


def _comm_text(layout: Layout, model: Model, machine: Machine) -> str:
    """'2392 GB per GPU (at least 96 s)': what one GPU sends per step, and the time it bounds."""
    traffic = communication.per_step(layout, model, machine)
    sent = sum(t.bytes for t in traffic)
    text = f"{gb(sent)} per GPU"
    if traffic and all(t.seconds is not None for t in traffic):
        text += f" (at least {communication.step_time_lower_bound(traffic).value:.3g} s)"
    missing = communication.not_estimated(layout, model)
    if missing:
        text += " (" + "; ".join(missing) + ")"
    return text


def _offloaded(layout: Layout, model: Model, machine: Machine, estimate_fn: EstimateFn
               ) -> tuple[str, str, Layout]:
    """(choice, why, layout) with the optimizer states on the CPU, when nothing fits on the GPUs alone."""
    memory = machine.gpu_memory
    if machine.nodes <= FEW_NODES:
        for name, candidate, what in _candidates(layout, model, machine):
            if name == "fsdp2-full-shard":
                candidate = replace(candidate, offload_optimizer="cpu", offload_params="cpu")
                found = _first_fit(candidate, estimate_fn)
                if found:
                    chosen, estimate, how = found
                    return "fsdp2-full-shard+cpu-offload", _fits_text(
                        f"{what} with CPUOffloadPolicy", how, estimate, memory), chosen
    chosen, estimate, how, fits = _three_d(layout, model, machine, estimate_fn, offload=True)
    what = (f"Megatron-style 3-D, {_degrees(chosen)} with the distributed optimizer, sequence parallelism and "
            f"--optimizer-cpu-offload")
    if fits:
        return "3d+cpu-offload", _fits_text(what, how, estimate, memory), chosen
    return "3d", (f"{what}{' ' + how if how else ''}: {gb(estimate.per_gpu_bytes)} per GPU still does not fit "
                  f"{gb(memory)}: more GPUs, or GPUs with more memory"), chosen


# --- the smallest change --------------------------------------------------------------------------

def _raise_stage(layout: Layout) -> list[tuple[Layout, str]]:
    engine = layout.engine or ("ddp" if layout.stage == 0 else "deepspeed")
    dp = layout.data_parallel
    sharded = dict(data_parallel_shard=layout.data_parallel_shard if layout.data_parallel_shard > 1 else dp,
                   data_parallel_replicate=layout.data_parallel_replicate if layout.data_parallel_shard > 1 else 1)
    if engine == "deepspeed":
        return [(replace(layout, stage=s, **sharded), f"stage {s}") for s in range(layout.stage + 1, 4)]
    if engine == "megatron":
        if layout.distributed_optimizer:
            return []
        return [(replace(layout, stage=1, distributed_optimizer=True), "--use-distributed-optimizer")]
    if engine == "fsdp2":
        if layout.stage >= 3:
            return []
        return [(replace(layout, stage=3, **sharded), "reshard_after_forward=True (full shard)")]
    # plain DDP: FSDP2
    return [(_as_engine(layout, "fsdp2", s, **sharded), label) for s, label in
            ((2, "FSDP2 with reshard_after_forward=False"), (3, "FSDP2 full shard"))]


def _checkpointing(layout: Layout) -> list[tuple[Layout, str]]:
    if layout.recompute == "full":
        return []
    return [(replace(layout, recompute="full"), "activation checkpointing (full recomputation)")]


def _smaller_micro(layout: Layout) -> list[tuple[Layout, str]]:
    out = []
    micro = layout.micro_batch // 2
    while micro >= 1:
        if layout.micro_batch % micro == 0:
            changed = _micro(layout, micro)
            out.append((changed, f"micro-batch {micro} (gradient accumulation {changed.accumulation}, same global "
                                 f"batch)"))
        micro //= 2
    return out


def _offload(layout: Layout) -> list[tuple[Layout, str]]:
    engine = layout.engine
    if layout.offload_optimizer != "none":
        return []
    if engine == "deepspeed":
        stage = max(1, layout.stage)
        changed = replace(layout, offload_optimizer="cpu", stage=stage,
                          data_parallel_shard=layout.data_parallel_shard if layout.data_parallel_shard > 1
                          else layout.data_parallel, data_parallel_replicate=1 if layout.data_parallel_shard <= 1
                          else layout.data_parallel_replicate)
        label = "offload_optimizer to the CPU" + (" (with ZeRO-1, which it needs)" if layout.stage == 0 else "")
        return [(changed, label)]
    if engine == "fsdp2":
        return [(replace(layout, offload_optimizer="cpu", offload_params="cpu"),
                 "CPUOffloadPolicy (parameters, gradients and the optimizer step on the CPU)")]
    if engine == "megatron":
        return [(replace(layout, offload_optimizer="cpu", stage=1, distributed_optimizer=True),
                 "--optimizer-cpu-offload (with the distributed optimizer)")]
    return []


def _tensor_parallel(layout: Layout, model: Model) -> list[tuple[Layout, str]]:
    if layout.tensor > 1:
        return []
    t = _tp_size(layout, model, max(1, layout.gpus_per_node))
    if t <= 1:
        return []
    changed = _regrid(layout, tensor=t)
    changed.sequence_parallel = True
    return [(changed, f"TP {t} within the node (with sequence parallelism)")]


def _pipeline_parallel(layout: Layout, model: Model) -> list[tuple[Layout, str]]:
    out = []
    p = layout.pipeline * 2
    while layout.tensor * p * max(1, layout.context) <= layout.world_size and (not model.layers or p <= model.layers):
        if layout.world_size % (layout.tensor * p * max(1, layout.context)) == 0:
            changed, label = _regrid(layout, pipeline=p), f"PP {p}"
            if layout.engine == "deepspeed" and layout.stage >= 2:
                # "ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism" (runtime/pipe/engine.py)
                changed, label = replace(changed, stage=1), f"PP {p} with ZeRO-1 (DeepSpeed's pipeline engine's most)"
            out.append((changed, label))
        p *= 2
    return out


def smallest_change(layout: Layout, model: Model, machine: Machine, estimate_fn: EstimateFn) -> str | None:
    """The least disruptive change that makes `layout` fit, as a sentence; None when it fits already
    (or the GPU memory is not known)."""
    current = estimate_fn(layout)
    if current.fits is not False:
        return None
    head = f"{describe(layout)} on {machine_text(machine)}: {gb(current.per_gpu_bytes)} per GPU"
    steps = [_raise_stage, _checkpointing, _smaller_micro, _offload,
             lambda lay: _tensor_parallel(lay, model), lambda lay: _pipeline_parallel(lay, model)]
    # one change alone, in order of disruption
    for step in steps:
        for changed, label in step(layout):
            estimate = estimate_fn(changed)
            if estimate.fits:
                return f"{head}; {label} needs {gb(estimate.per_gpu_bytes)}"
    # then cumulatively: each step's strongest form on top of the ones before
    labels: list[str] = []
    cumulative = layout
    best = current
    for step in steps:
        options = step(cumulative)
        if not options:
            continue
        for changed, label in options:
            estimate = estimate_fn(changed)
            if estimate.fits:
                return f"{head}; {' + '.join(labels + [label])} needs {gb(estimate.per_gpu_bytes)}"
        strongest, label = options[-1]
        estimate = estimate_fn(strongest)
        if estimate.per_gpu_bytes < best.per_gpu_bytes:  # a step that saves nothing is not proposed
            cumulative, best = strongest, estimate
            labels.append(label)
    return (f"{head}; nothing within reach fits: {' + '.join(labels) or 'no change applies'} still needs "
            f"{gb(best.per_gpu_bytes)} per GPU (more GPUs, or GPUs with more memory)")
