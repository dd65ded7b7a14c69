"""Communication per optimizer step, per GPU, on each parallel axis, and the step time it bounds.

    per_step(layout, model, machine) -> [Traffic]     bytes one GPU sends on each axis per step
    step_time_lower_bound(traffic, overlapped=False) -> Figure
    not_estimated(layout, model) -> [str]             axes left out, and why

Cost models (bandwidth terms only; the latency (alpha) term of each collective is ignored, which
under-counts many small collectives: a lower bound). For N bytes over a group of n ranks, the bytes
each rank sends (ring algorithms; Thakur, Rabenseifner and Gropp, "Optimization of Collective
Communication Operations in MPICH", 2005; NCCL's "algorithm bandwidth" vs "bus bandwidth"):

    all-reduce        2 (n-1)/n * N
    reduce-scatter      (n-1)/n * N      (N: the whole unsharded tensor)
    all-gather          (n-1)/n * N      (N: the whole gathered tensor)
    all-to-all          (n-1)/n * N      (N: what the rank holds; 1/n of it stays local)
    point-to-point      N

Time = bytes / bandwidth, where the bandwidth is the intra-node one (NVLink) when the whole group
sits inside one node, else the inter-node one (per GPU). Ranks are taken in Megatron's and
torchtitan's order, innermost first: tensor, context, data-parallel shard, data-parallel replicate,
pipeline (experts: expert-tensor = tensor, expert, expert-data-parallel); a group fits in a node
when the ranks it spans (its size x the sizes of the axes inside it) divide the GPUs of a node.

What each framework sends per optimizer step of m micro-batches (P: the parameters one GPU holds
after tensor/pipeline/expert splits; G and C: bytes per gradient element on the wire and per
gathered parameter element):

- DDP (torch DistributedDataParallel): gradient all-reduce at every backward, unless the loop uses
  `no_sync()` on all but the last micro-batch (Accelerate's `accumulate` does: accelerator.py
  `accumulate`/`no_sync`; the Hugging Face Trainer goes through it).
- DeepSpeed ZeRO-0/1: gradients reduced only at the accumulation boundary (engine.py
  `allreduce_gradients`: "Communicate only at gradient accumulation boundaries"; stage_1_and_2.py
  `reduce_ready_partitions_and_remove_grads` reduces before the boundary only when
  `partition_gradients`); ZeRO-2: at every micro-batch ("ZeRO stage >= 2 communicates during non
  gradient accumulation boundaries as well"; `DeepSpeedEngine.no_sync` asserts against stage 2/3).
  The ZeRO-1/2 reduction is an all-reduce of each gradient bucket, each rank keeping its partition
  (`use_multi_rank_bucket_allreduce`, true by default: stage_1_and_2.py `average_tensor`); ZeRO-1/2
  then all-gather the updated 16-bit partitions once per step. ZeRO-3: every micro-batch
  all-gathers the parameters in forward and again in backward and reduce-scatters the gradients; a
  parameter used again within `stage3_max_reuse_distance` elements (1e9 by default) of the module
  trace is not released (partitioned_param_coordinator.py `__params_to_release`), which at the
  forward/backward turn spares the backward gather of about the last half of that distance.
- FSDP2 (`fully_shard`): every micro-batch all-gathers in forward, again in backward when
  `reshard_after_forward=True` (stage 3; False = stage 2 keeps them), and reduce-scatters at every
  backward unless `set_requires_gradient_sync(False)` (Accelerate calls it on non-final micro-batches;
  its `reshard_after_backward` stays True, so the all-gathers still repeat). HSDP adds an all-reduce of
  the gradient shard across replicas at each reduction (torch 2.13 `_fsdp_collectives.py`).
- Megatron-LM: all but the last micro-batch run under `config.no_sync_func` (core/pipeline_parallel/
  schedules.py), so gradients are all-reduced once per step, or, with `--use-distributed-optimizer`,
  reduce-scattered once and the parameters all-gathered once (core/distributed/param_and_grad_buffer.py). Tensor parallelism: 2 all-reduces of
  the s*b*h layer output in forward and 2 in backward per layer (Shoeybi et al. 2019, section 3);
  with sequence parallelism each becomes an all-gather + reduce-scatter of the same volume
  (Korthikanti et al. 2022, section 4.2.2); full recomputation repeats the forward's 2. Pipeline:
  one (s/CP [/TP with sequence parallelism]) x b x h tensor per boundary per micro-batch, forward and
  backward (schedules.py `get_tensor_shapes`).

Gradient element size on the wire (`Layout.grad_reduce_bytes`, else the engine's default):
DeepSpeed `communication_data_type` defaults to the training dtype (engine.py); FSDP2's
`reduce_dtype=None` reduces in `param_dtype` (torch 2.13 `_fsdp_param.py`: a reduce dtype equal to
the param dtype, or None, means no cast); Megatron reduces its main-gradient buffer (fp32 with bf16:
`--accumulate-allreduce-grads-in-fp32` is switched on unless `--grad-reduce-in-bf16`); DDP reduces in
the gradients' own dtype. Gathered parameters travel in the compute dtype (`Layout.compute_bytes`).
Offloaded optimizer states or parameters move over PCIe, which is not counted here.

Confirmed on the CPU (tests/test_planner_communication.py, oracle tests): fully_shard's and DDP's
collectives counted on 2 gloo ranks equal per_step's bytes (reshard True/False, the sync skipped on
all but the last micro-batch, fp32 reduce_dtype, HSDP); so do DeepSpeed's on 2 gloo ranks (ZeRO-0..3:
gradients reduced only at the boundary at ZeRO-0/1, at every micro-batch at ZeRO-2/3, the ZeRO-1/2
all-reduce and post-step all-gather, ZeRO-3's forward gather); Megatron's validate_args switches the fp32
reduction on with --bf16 unless --grad-reduce-in-bf16; Accelerate's accumulate skips the sync.
"""

from __future__ import annotations

from shardshift.planner.types import Figure, Layout, Machine, Model, Traffic

GB = 1e9

AXES = ("data-parallel", "hybrid-cross-node", "expert-data-parallel", "tensor", "context", "expert", "pipeline")

DEFAULT_TOPK = 2  # Megatron's --moe-router-topk default (../shared/reference/megatron.md)
DS_MAX_REUSE_DISTANCE = 1_000_000_000  # zero_optimization.stage3_max_reuse_distance default (zero/config.py)


# --- collectives: bytes one rank sends --------------------------------------------------------------

def all_reduce(nbytes: float, n: int) -> float:
    return 2 * (n - 1) / n * nbytes if n > 1 else 0.0


def reduce_scatter(nbytes: float, n: int) -> float:
    return (n - 1) / n * nbytes if n > 1 else 0.0


def all_gather(nbytes: float, n: int) -> float:
    return (n - 1) / n * nbytes if n > 1 else 0.0


def all_to_all(nbytes: float, n: int) -> float:
    return (n - 1) / n * nbytes if n > 1 else 0.0


# --- what the layout says -------------------------------------------------------------------------

def engine_of(layout: Layout) -> str:
    """deepspeed, megatron, fsdp2 or ddp: whose communication pattern applies."""
    if layout.engine:
        return layout.engine
    name = layout.framework
    if name in ("megatron", "deepspeed"):
        return name
    if name in ("fsdp2", "torchtitan"):
        return "fsdp2"
    return "fsdp2" if layout.stage >= 2 else ("deepspeed" if layout.stage == 1 else "ddp")


def _micro_batches(layout: Layout) -> int:
    return max(1, layout.num_microbatches or layout.accumulation or 1)


def grad_wire_bytes(layout: Layout) -> tuple[int, str]:
    """Bytes per gradient element as reduced, and why."""
    if layout.grad_reduce_bytes:
        size = layout.grad_reduce_bytes
        return size, f"gradients reduced in {size}-byte elements (the setup's reduce dtype)"
    engine = engine_of(layout)
    if engine == "deepspeed":
        return layout.compute_bytes, (f"gradients reduced in {layout.compute_bytes}-byte elements: DeepSpeed's "
                                      f"communication_data_type not set, the training dtype (engine.py)")
    if engine == "fsdp2":
        return layout.compute_bytes, (f"gradients reduced in {layout.compute_bytes}-byte elements: FSDP2 reduce_dtype "
                                      f"not set, param_dtype (torch 2.13 _fsdp_param.py)")
    if engine == "megatron":
        return layout.grad_bytes, (f"gradients reduced in {layout.grad_bytes}-byte elements: Megatron reduces its "
                                   f"main-gradient buffer (fp32 with bf16 unless --grad-reduce-in-bf16)")
    return layout.grad_bytes, f"gradients reduced in {layout.grad_bytes}-byte elements (DDP: the gradients' dtype)"


def gradient_reductions(layout: Layout) -> tuple[int, str]:
    """How many times per optimizer step the gradients are reduced, and why."""
    m = _micro_batches(layout)
    if m == 1:
        return 1, "one micro-batch per step"
    if layout.gradient_sync == "every-micro-batch":
        return m, f"gradients reduced at each of the {m} micro-batches (as the setup says)"
    if layout.gradient_sync == "last-micro-batch":
        return 1, f"gradients reduced once per step of {m} micro-batches (as the setup says)"
    engine = engine_of(layout)
    via_accelerate = layout.framework in ("accelerate", "axolotl")
    if engine == "megatron":
        return 1, (f"gradients reduced once per step of {m} micro-batches (Megatron runs all but the last "
                   f"under no_sync_func, schedules.py)")
    if engine == "deepspeed":
        if layout.stage >= 2:
            return m, (f"gradients reduced at each of the {m} micro-batches (DeepSpeed ZeRO-{layout.stage} "
                       f"communicates before the accumulation boundary too, engine.py allreduce_gradients)")
        return 1, (f"gradients reduced once per step of {m} micro-batches (DeepSpeed ZeRO-{layout.stage} reduces "
                   f"only at the accumulation boundary, engine.py allreduce_gradients)")
    if via_accelerate:
        return 1, (f"gradients reduced once per step of {m} micro-batches (Accelerate's accumulate skips the "
                   f"sync on the others: no_sync / set_requires_gradient_sync(False))")
    if engine == "fsdp2":
        return m, (f"gradients reduce-scattered at each of the {m} micro-batches (fully_shard's default; "
                   f"set_requires_gradient_sync(False) on the others would reduce once)")
    return m, (f"gradients all-reduced at each of the {m} micro-batches (DDP's default outside no_sync())")


def split_parameters(layout: Layout, model: Model) -> tuple[float, float, str]:
    """(dense parameters one GPU holds before data-parallel sharding, routed-expert parameters it
    holds, how): dense split over TP x PP, experts over EP x TP (expert-tensor = TP) x PP, evenly."""
    t, p, e = max(1, layout.tensor), max(1, layout.pipeline), max(1, layout.expert)
    experts = model.expert_parameters or 0
    if e > 1 and not experts:
        how = "the experts' share of the parameters is not known: all reduced like dense ones"
        return model.parameters / (t * p), 0.0, how
    dense = (model.parameters - experts) / (t * p)
    expert = experts / (e * t * p)
    how = f"parameters split evenly over TP {t} x PP {p}" if t * p > 1 else "no tensor or pipeline split"
    if experts:
        how += f"; routed experts ({experts:,}) over EP {e} x TP {t} x PP {p}"
    return dense, expert, how


def _gpus_per_node(layout: Layout, machine: Machine | None) -> int:
    if machine is not None:
        return max(1, machine.gpus_per_node)
    return max(1, layout.gpus_per_node)


def _link(span: int, layout: Layout, machine: Machine | None) -> tuple[float | None, str]:
    """(bandwidth, which) for a group whose ranks span `span` consecutive ranks."""
    per_node = _gpus_per_node(layout, machine)
    intra = span <= per_node and per_node % span == 0
    if intra:
        bw = machine.intra_node_bandwidth if machine else None
        where = f"within one node ({span} of {per_node} GPUs)"
        if bw is None:
            return None, f"{where}: intra-node bandwidth not given"
        return bw, f"{where}: intra-node bandwidth {bw / GB:g} GB/s"
    bw = machine.bandwidth if machine else None
    where = f"across nodes (spans {span} ranks, {per_node} GPUs a node)"
    if bw is None:
        return None, f"{where}: inter-node bandwidth not given"
    return bw, f"{where}: inter-node bandwidth {bw / GB:g} GB/s per GPU"


def _traffic(axis: str, nbytes: float, span: int, layout: Layout, machine: Machine | None, how: str) -> Traffic:
    bw, link = _link(span, layout, machine)
    return Traffic(axis=axis, bytes=float(nbytes), seconds=(nbytes / bw if bw else None),
                   assumption=f"{how}; {link}")


def _gb(value: float) -> str:
    return f"{value / GB:.3g} GB"


# --- data parallel --------------------------------------------------------------------------------

def _data_parallel_group(axis: str, params: float, shard: int, replicate: int, stride: int,
                         layout: Layout, machine: Machine | None, split_how: str) -> list[Traffic]:
    """The collectives of one data-parallel group (dense, or the experts' own group)."""
    if params <= 0 or shard * replicate <= 1:
        return []
    engine = engine_of(layout)
    stage = layout.stage
    m = _micro_batches(layout)
    g_bytes, g_why = grad_wire_bytes(layout)
    c = layout.compute_bytes
    k, k_why = gradient_reductions(layout)
    grads, weights = params * g_bytes, params * c
    offload = ""
    if layout.offload_optimizer != "none" or layout.offload_params != "none":
        offload = "; offloaded states move over PCIe, not counted"
    n = shard * replicate
    if stage == 0 or engine == "ddp" or (engine == "megatron" and not layout.distributed_optimizer):
        sent = k * all_reduce(grads, n)
        how = (f"{k} x ring all-reduce of {params:,.0f} gradients x {g_bytes} B over {n} ranks "
               f"(2(n-1)/n x {_gb(grads)}); {g_why}; {k_why}; {split_how}{offload}")
        return [_traffic(axis, sent, stride * n, layout, machine, how)]

    # sharded: collectives within the shard group, and an all-reduce of the shard across replicas
    s = shard
    parts: list[str] = []
    sent = 0.0
    if stage == 3 or (engine == "fsdp2" and stage >= 2):
        sent += m * all_gather(weights, s)
        parts.append(f"{m} x all-gather of {params:,.0f} parameters x {c} B over {s} ranks in forward (every "
                     f"micro-batch; (n-1)/n of each collective)")
        if stage == 3 and engine == "deepspeed":
            kept = min(params, DS_MAX_REUSE_DISTANCE / 2)
            sent += m * all_gather((params - kept) * c, s)
            parts.append(f"{m} x all-gather in backward of all but the last ~{kept:,.0f} parameters of the forward "
                         f"(DeepSpeed keeps a parameter used again within stage3_max_reuse_distance, "
                         f"{DS_MAX_REUSE_DISTANCE:,} elements by default, partitioned_param_coordinator.py; "
                         f"about half of it at the forward/backward turn)")
        elif stage == 3:
            sent += m * all_gather(weights, s)
            parts.append(f"{m} x all-gather in backward (reshard_after_forward=True; the root module, left at its "
                         f"default, is not resharded after forward: its parameters, often few, are counted anyway)")
        else:
            parts.append("no backward all-gather (reshard_after_forward=False)")
        sent += k * reduce_scatter(grads, s)
        parts.append(f"{k} x reduce-scatter of the gradients x {g_bytes} B: {k_why}")
    elif engine == "megatron":  # the distributed optimizer (param_and_grad_buffer.py)
        sent += k * reduce_scatter(grads, s)
        parts.append(f"{k} x reduce-scatter of {params:,.0f} gradients x {g_bytes} B over {s} ranks ((n-1)/n): "
                     f"{k_why}")
        sent += all_gather(weights, s)
        parts.append(f"1 x all-gather of the updated parameters x {c} B after the step ((n-1)/n)")
    else:  # DeepSpeed ZeRO-1/2
        sent += k * all_reduce(grads, s)
        parts.append(f"{k} x all-reduce of {params:,.0f} gradients x {g_bytes} B over {s} ranks (2(n-1)/n; "
                     f"DeepSpeed's default use_multi_rank_bucket_allreduce all-reduces each bucket and keeps its "
                     f"partition, stage_1_and_2.py average_tensor): {k_why}")
        sent += all_gather(weights, s)
        parts.append(f"1 x all-gather of the updated 16-bit partitions x {c} B after the step ((n-1)/n)")
    how = "; ".join(parts) + f"; {g_why}; {split_how}{offload}"
    out = [_traffic(axis, sent, stride * s, layout, machine, how)] if s > 1 else []
    if replicate > 1:
        shard_grads = grads / s
        cross = k * all_reduce(shard_grads, replicate)
        name = "hybrid-cross-node" if axis == "data-parallel" else axis
        how = (f"{k} x ring all-reduce of the {s}-way gradient shard ({_gb(shard_grads)}) across {replicate} "
               f"replicas (2(r-1)/r); {k_why}")
        out.append(_traffic(name, cross, stride * s * replicate, layout, machine, how))
    return out


# --- model parallel axes --------------------------------------------------------------------------

def _shape_missing(model: Model, layout: Layout, *fields: str) -> list[str]:
    need = [f for f in fields if getattr(model, f) is None]
    if layout.sequence_length is None:
        need.append("sequence length")
    return need


def _layers_here(layout: Layout, model: Model) -> float:
    return model.layers / max(1, layout.pipeline)


def _tensor(layout: Layout, model: Model, machine: Machine | None) -> Traffic | None:
    t = layout.tensor
    if t <= 1 or _shape_missing(model, layout, "layers", "hidden"):
        return None
    m = _micro_batches(layout)
    s = layout.sequence_length / max(1, layout.context)
    x = s * layout.micro_batch * model.hidden * layout.compute_bytes
    per_layer = 4 + (2 if layout.recompute == "full" else 0)
    layers = _layers_here(layout, model)
    sent = m * layers * per_layer * all_reduce(x, t)
    kind = ("all-gather + reduce-scatter pairs (sequence parallel, same volume as all-reduce)"
            if layout.sequence_parallel else "all-reduces")
    recompute = " + 2 recomputed in backward (full recomputation)" if layout.recompute == "full" else ""
    how = (f"Megatron TP: {per_layer} {kind} per layer (2 forward + 2 backward{recompute}) of s x b x h = "
           f"{s:g} x {layout.micro_batch} x {model.hidden} x {layout.compute_bytes} B ({_gb(x)}), 2(t-1)/t each, "
           f"x {layers:g} layers x {m} micro-batches; embedding and loss collectives not counted")
    return _traffic("tensor", sent, t, layout, machine, how)


def _pipeline(layout: Layout, model: Model, machine: Machine | None) -> Traffic | None:
    p = layout.pipeline
    if p <= 1 or _shape_missing(model, layout, "hidden"):
        return None
    m = _micro_batches(layout)
    v = max(1, layout.virtual_pipeline or 1)
    s = layout.sequence_length / max(1, layout.context)
    divided = ""
    if layout.sequence_parallel and layout.tensor > 1:
        s /= layout.tensor
        divided = " (sequence parallel: /TP)"
    x = s * layout.micro_batch * model.hidden * layout.compute_bytes
    sends = 2 * v - (1 if p == 2 else 0)
    how = (f"pipeline point-to-point: an activation forward and its gradient backward per boundary per "
           f"micro-batch, s x b x h = {s:g}{divided} x {layout.micro_batch} x {model.hidden} x "
           f"{layout.compute_bytes} B ({_gb(x)}); the busiest stage sends {sends} a micro-batch"
           f"{f' ({v} virtual stages)' if v > 1 else ''} x {m} micro-batches")
    return _traffic("pipeline", m * sends * x, layout.world_size, layout, machine, how)


def _context(layout: Layout, model: Model, machine: Machine | None) -> Traffic | None:
    cp = layout.context
    if cp <= 1 or _shape_missing(model, layout, "layers", "hidden", "heads"):
        return None
    m = _micro_batches(layout)
    t = max(1, layout.tensor)
    head_dim = model.hidden / model.heads
    kv_heads = model.kv_heads or model.heads
    kv_here = max(1.0, kv_heads / t)
    s = layout.sequence_length / cp
    kv = 2 * s * layout.micro_batch * kv_here * head_dim * layout.compute_bytes
    per_layer = 3 * (cp - 1) + ((cp - 1) if layout.recompute == "full" else 0)
    layers = _layers_here(layout, model)
    how = (f"ring attention (Megatron --cp-comm-type p2p, the default): K and V of the local chunk "
           f"(2 x {s:g} x {layout.micro_batch} x {kv_here:g} heads x {head_dim:g} x {layout.compute_bytes} B = "
           f"{_gb(kv)}) passed cp-1 times in forward, K/V and dK/dV cp-1 times each in backward (assumed) "
           f"= {per_layer} sends per layer x {layers:g} layers x {m} micro-batches")
    return _traffic("context", m * layers * per_layer * kv, t * cp, layout, machine, how)


def _expert(layout: Layout, model: Model, machine: Machine | None) -> Traffic | None:
    e = layout.expert
    if e <= 1 or _shape_missing(model, layout, "layers", "hidden"):
        return None
    m = _micro_batches(layout)
    k = model.experts_per_token
    k_why = f"top-{k}" if k else f"top-{DEFAULT_TOPK} (Megatron's --moe-router-topk default)"
    k = k or DEFAULT_TOPK
    tokens = layout.sequence_length / max(1, layout.context) * layout.micro_batch
    routed = tokens * k * model.hidden * layout.compute_bytes
    per_layer = 4 + (2 if layout.recompute == "full" else 0)
    layers = _layers_here(layout, model)
    sent = m * layers * per_layer * all_to_all(routed, e)
    how = (f"expert all-to-all: {tokens:g} tokens x {k_why} x h {model.hidden} x {layout.compute_bytes} B "
           f"({_gb(routed)}), (e-1)/e leaves the rank; dispatch + combine, forward + backward = {per_layer} "
           f"a layer{' (full recomputation repeats the forward 2)' if layout.recompute == 'full' else ''} x "
           f"{layers:g} layers (every layer taken as MoE) x {m} micro-batches; even routing; "
           f"expert-tensor gathers not counted")
    return _traffic("expert", sent, max(1, layout.tensor) * e, layout, machine, how)


# --- the step -------------------------------------------------------------------------------------

def per_step(layout: Layout, model: Model, machine: Machine | None) -> list[Traffic]:
    """Bytes each GPU sends per optimizer step on each axis (axes with no traffic left out), with
    the time at the machine's bandwidths (None when the bandwidth is not given)."""
    out: list[Traffic] = []
    t = max(1, layout.tensor)
    cp = max(1, layout.context)
    dense, expert, split_how = split_parameters(layout, model)
    # gradients are reduced over data parallel x context (Megatron's dp-cp group; torchtitan's
    # dp_shard_cp mesh): context ranks hold the same parameters
    out += _data_parallel_group("data-parallel", dense, layout.data_parallel_shard * cp,
                                layout.data_parallel_replicate, t, layout, machine, split_how)
    if expert > 0:
        e = max(1, layout.expert)
        group = max(1, layout.world_size // (t * e * max(1, layout.pipeline)))
        out += _data_parallel_group("expert-data-parallel", expert, group, 1, t * e, layout, machine,
                                    f"routed-expert parameters, reduced over the expert-data-parallel group "
                                    f"(world / (TP x EP x PP) = {group})")
    for axis in (_tensor, _context, _expert, _pipeline):
        traffic = axis(layout, model, machine)
        if traffic is not None:
            out.append(traffic)
    return out


def not_estimated(layout: Layout, model: Model) -> list[str]:
    """The axes per_step leaves out for want of the model's shape or the sequence length."""
    out = []
    for axis, size, fields in (("tensor", layout.tensor, ("layers", "hidden")),
                               ("context", layout.context, ("layers", "hidden", "heads")),
                               ("expert", layout.expert, ("layers", "hidden")),
                               ("pipeline", layout.pipeline, ("hidden",))):
        if size > 1:
            need = _shape_missing(model, layout, *fields)
            if need:
                out.append(f"{axis}-parallel traffic not estimated: needs {', '.join(need)}")
    return out


def step_time_lower_bound(traffic: list[Traffic], overlapped: bool = False) -> Figure:
    """The least time per step the communication alone takes: the sum over the axes (no axis
    overlaps another), or with `overlapped` the slowest axis (all axes run at once). Axes without a
    bandwidth are left out (the assumption names them); NaN when no axis has one."""
    known = [t for t in traffic if t.seconds is not None]
    unknown = sorted({t.axis for t in traffic if t.seconds is None})
    if overlapped:
        value = max((t.seconds for t in known), default=0.0)
        how = "the slowest axis (axes assumed to overlap each other)"
    else:
        value = sum(t.seconds for t in known)
        how = "the sum over the axes (no overlap between axes, nor with compute)"
    if not traffic:
        how = "no communication"
    elif not known:
        value = float("nan")  # not 0: every axis sends something, at a speed not given
    if unknown:
        how += f"; not counted for want of a bandwidth: {', '.join(unknown)}"
    return Figure(float(value), f"communication time per step: {how}; bandwidth terms only (no latency)")
