"""Memory per GPU: model states (parameters, gradients, optimizer states, master weights) by ZeRO stage /
FSDP2 sharding, hybrid shard groups, TP/PP/EP splits and offload; activations; fixed buffers.

    model_states(layout, model) -> {part: Figure}     GPU parts; CPU parts (per node) as "cpu_*", NVMe as "nvme_*"
    estimate(layout, model, machine) -> MemoryEstimate

Model-state accounting follows the frameworks' own estimators where they model the same thing:

- DeepSpeed (`deepspeed/runtime/zero/stage_1_and_2.py: estimate_zero2_model_states_mem_needs`,
  `stage3.py: estimate_zero3_model_states_mem_needs`): 16-bit parameters (2), 16-bit gradients (2), an
  fp32 gradient partition (4), fp32 master weights (4) and Adam's moments (8). ZeRO-2: 2P + 18P/N per
  GPU. ZeRO-3: 18P/N (the 16-bit gradients are not held as a partition of their own) plus the largest
  layer gathered with its gradient, 4 x largest_layer. Optimizer offload moves the fp32 states (and
  the gradients, streamed out through the buckets) to the CPU; parameter offload moves the
  parameters too. CPU memory is per node, times `additional_buffer_factor` (1.5), and at least the
  model-loading peak: each process of a node loads the model in fp32 (4 bytes x GPUs per node x P;
  with zero.Init at ZeRO-3 only the largest layer, or nothing when offloading). DeepSpeed's ZeRO-2
  offload estimator counts every node's CPU memory together (P x max(4 x all GPUs, 16)); here it is
  per node, and equals DeepSpeed's figure divided by the node count.
- Megatron-LM (`megatron/training/theoretical_memory_usage.py: compute_weight_and_optimizer_memory`):
  18 bytes per parameter (16-bit weights 2, fp32 main gradients 4, fp32 main parameters 4, Adam 8),
  6 + 12/DP with the distributed optimizer; the most loaded shard is the first pipeline stage, which
  holds the embedding beside its L/p layers (both embeddings when p = 1 and they are untied);
  routed-expert parameters are split by EP x TP x PP and sharded over the expert data-parallel group.
- FSDP2 (`fully_shard`): sharded fp32 parameters, fp32 gradients and the optimizer state, 16 bytes per
  parameter over the shard group for Adam; one unit (a layer) gathered in the compute dtype with its
  unsharded gradient, and the next unit prefetched; with reshard_after_forward=False (stage 2) the
  whole model stays gathered between forward and backward.

What the total adds to these: activations (activations.py), the configured buffers (buckets,
prefetch; `Layout.fixed_buffers`). Not counted: the CUDA context and allocator fragmentation (often
1-3 GB), temporary buffers of the collectives, persistent small parameters under ZeRO-3.
"""

from __future__ import annotations

from shardshift.planner.activations import activation_bytes, largest_fitting, per_sample_bytes
from shardshift.planner.types import Figure, Layout, Machine, MemoryEstimate, Model

GiB = 2**30
# parts that are not GPU memory: host memory per node ("cpu_"), NVMe per node ("nvme_")
HOST_PREFIXES = ("cpu_", "nvme_")


def _gb(value: float) -> str:
    return f"{value / GiB:.2f} GiB"


def parameter_split(layout: Layout, model: Model) -> tuple[float, float, str]:
    """(dense parameters on the most loaded GPU before data-parallel sharding, routed-expert parameters
    on it, how they were split)."""
    tp, pp, ep = max(1, layout.tensor), max(1, layout.pipeline), max(1, layout.expert)
    experts = model.expert_parameters or 0
    dense = model.parameters - experts
    how = []
    if model.experts and not model.expert_parameters and ep > 1:
        how.append("the experts' share of the parameters is not known: all split like dense ones")
    if pp > 1 and model.hidden and model.vocab and model.layers:
        embedding = model.vocab * model.hidden
        copies = 2 if model.tied_embeddings is False else 1
        body = max(0.0, dense - copies * embedding)
        on_first = body / pp + embedding
        how.append(f"first pipeline stage: {model.layers}/{pp} layers + the embedding ({embedding:,} parameters)")
    else:
        on_first = dense
        if pp > 1:
            how.append(f"parameters split evenly over {pp} pipeline stages (embedding size not known)")
    dense_share = on_first / tp
    expert_share = experts / (pp * ep * tp)
    if tp > 1:
        how.append(f"split over TP {tp}")
    if experts and ep > 1:
        how.append(f"routed experts ({experts:,}) split over EP {ep} x TP {tp} x PP {pp}")
    return dense_share, expert_share, "; ".join(how)


def largest_layer(layout: Layout, model: Model) -> tuple[float, str]:
    """Parameters of the largest gathered layer (DeepSpeed ZeRO-3's working set) on one GPU."""
    tp = max(1, layout.tensor)
    if model.largest_layer_parameters:
        return model.largest_layer_parameters / tp, f"largest layer {model.largest_layer_parameters:,} parameters"
    if model.hidden and model.vocab:
        ffn = model.ffn_hidden or 4 * model.hidden
        value = max(model.vocab * model.hidden, ffn * model.hidden)
        return value / tp, f"largest layer taken as the embedding or an MLP matrix: {value:,} parameters"
    return 0.0, "largest layer not known: not counted"


def _unit(layout: Layout, model: Model) -> tuple[float, str]:
    """Parameters of one fully_shard unit (one transformer layer) on one GPU."""
    dense, _, _ = parameter_split(layout, model)
    if model.layers:
        layers_here = model.layers / max(1, layout.pipeline)
        return dense / max(1.0, layers_here), "one transformer layer per fully_shard unit"
    return 0.0, "layer size not known: the gathered unit is not counted"


def model_states(layout: Layout, model: Model) -> dict[str, Figure]:
    """Model-state bytes per GPU (and per node on the CPU, as "cpu_*" parts)."""
    engine = layout.engine or "deepspeed"
    stage = layout.stage
    dense, expert, split_how = parameter_split(layout, model)
    tp, pp, ep = max(1, layout.tensor), max(1, layout.pipeline), max(1, layout.expert)
    # ZeRO / FSDP shard over data parallel x context parallel (Megatron's dp-cp group, torchtitan's
    # dp_shard_cp mesh): context-parallel ranks hold the same parameters
    dp = max(1, layout.data_parallel_shard) * max(1, layout.context)
    expert_dp = max(1, layout.world_size // (tp * ep * pp) // max(1, layout.data_parallel_replicate))
    groups = [(dense, dp)] + ([(expert, expert_dp)] if expert else [])
    if layout.adapter:
        return _adapter_states(layout, model, dense + expert, dp, split_how)

    def sharded(bytes_per: float, from_stage: int) -> float:
        return sum(n * bytes_per / (d if stage >= from_stage else 1) for n, d in groups)

    off_opt = layout.offload_optimizer != "none"
    off_par = layout.offload_params != "none"
    zero3_ds = engine == "deepspeed" and stage == 3
    fsdp_offload = engine == "fsdp2" and off_par  # CPUOffloadPolicy moves parameters, gradients and the step

    gpu: dict[str, float] = {}
    cpu: dict[str, float] = {}
    why: dict[str, str] = {}

    nvme: dict[str, float] = {}
    param_device = layout.offload_params if off_par else ("cpu" if fsdp_offload else "none")
    state_device = layout.offload_optimizer if off_opt else ("cpu" if fsdp_offload else "none")

    def put(name: str, value: float, on_cpu: bool, text: str) -> None:
        device = (param_device if name == "parameters" else state_device) if on_cpu else "none"
        target = nvme if device == "nvme" else cpu if on_cpu else gpu
        target[name] = target.get(name, 0.0) + value
        why[name] = text

    shard_text = lambda from_stage: (f"sharded over {dp} data-parallel ranks" if stage >= from_stage  # noqa: E731
                                     else "replicated on every data-parallel rank")
    put("parameters", sharded(layout.param_bytes, 3), off_par or fsdp_offload,
        f"{layout.param_bytes} bytes/parameter, {shard_text(3)}")
    # Megatron's optimizer offload moves the optimizer step (main params, moments) to the CPU; its
    # fp32 main-gradient buffer stays on the GPU
    grad_on_cpu = (off_opt and engine != "megatron") or fsdp_offload
    if not zero3_ds and not (engine == "deepspeed" and off_opt and layout.fp32_grad_copy):
        # (with optimizer offload DeepSpeed copies each reduced 16-bit bucket straight into the CPU's
        # fp32 gradient partition: no 16-bit partition is kept)
        put("gradients", sharded(layout.grad_bytes, 2), grad_on_cpu,
            f"{layout.grad_bytes} bytes/parameter, {shard_text(2)}")
    if layout.fp32_grad_copy:
        put("gradients", sharded(4, 1), grad_on_cpu,
            (f"{layout.grad_bytes} bytes/parameter {shard_text(2)} + " if not zero3_ds else "") +
            f"an fp32 gradient partition for the step, 4 bytes/parameter {shard_text(1)}")
    if layout.master_weights:
        put("master_weights", sharded(layout.master_bytes, 1), off_opt or fsdp_offload,
            f"fp32 master copy, {layout.master_bytes} bytes/parameter, {shard_text(1)}")
    if layout.optimizer_state_bytes:
        put("optimizer_states", sharded(layout.optimizer_state_bytes, 1), off_opt or fsdp_offload,
            f"{layout.optimizer_state_bytes} bytes/parameter, {shard_text(1)}")

    # partial optimizer offload: the rest of the offloaded states stays on the GPU
    fraction = layout.offload_fraction
    if off_opt and fraction < 1:
        for name in ("gradients", "master_weights", "optimizer_states"):
            if name in cpu:
                gpu[name] = gpu.get(name, 0.0) + cpu[name] * (1 - fraction)
                cpu[name] *= fraction
                why[name] += f"; {fraction:g} of it offloaded"

    # the gathered working set
    if zero3_ds:
        largest, how = largest_layer(layout, model)
        gpu["gathered_parameters"] = largest * (layout.param_bytes + layout.grad_bytes)
        why["gathered_parameters"] = (f"ZeRO-3: the largest layer gathered with its 16-bit gradient, "
                                      f"{layout.param_bytes + layout.grad_bytes} bytes/parameter ({how}), "
                                      f"as DeepSpeed's estimator counts")
        if layout.secondary_partition > 1 and not off_par:
            k = layout.secondary_partition
            gpu["secondary_parameters"] = sum(n for n, _ in groups) * layout.param_bytes / k
            why["secondary_parameters"] = (f"ZeRO++ hpZ: a second {layout.param_bytes}-byte copy of the parameters "
                                           f"sharded over {k} ranks (zero_hpz_partition_size; "
                                           f"partition_parameters.py)")
    elif engine == "fsdp2" and stage >= 2:
        unit, how = _unit(layout, model)
        e = layout.compute_bytes
        value = 3 * unit * e
        text = f"FSDP2: one unit gathered in {e}-byte compute dtype, its gradient, and the next unit prefetched ({how})"
        if stage == 2:
            value += dense * e
            text += "; reshard_after_forward=False keeps every unit gathered from forward to backward"
        gpu["gathered_parameters"] = value
        why["gathered_parameters"] = text

    # CPU memory, per node
    per_node = max(1, layout.gpus_per_node)
    cpu = {name: value * per_node for name, value in cpu.items()}
    if engine == "deepspeed":
        factor = layout.additional_buffer_factor
        states = sum(cpu.values())
        full = sum(n for n, _ in groups)
        if stage == 3 and layout.zero_init:
            load = 0.0 if (off_opt or off_par) else largest_layer(layout, model)[0] * 4 * per_node
        else:
            load = full * 4 * per_node
        total = max(load, states) * factor
        cpu["additional"] = total - states
        why["additional"] = (f"DeepSpeed's estimator: CPU memory = max(model loading {_gb(load)}, offloaded states "
                             f"{_gb(states)}) x additional_buffer_factor {factor:g}; model loading: each of the "
                             f"node's {per_node} processes holds the model in fp32"
                             + (" (zero.Init: only the largest layer)" if stage == 3 and layout.zero_init else ""))

    out: dict[str, Figure] = {}
    suffix = f"; {split_how}" if split_how else ""
    for name, value in gpu.items():
        out[name] = Figure(value, why[name] + suffix)
    for name, value in cpu.items():
        out[f"cpu_{name}"] = Figure(value, f"per node: {why[name]}")
    for name, value in nvme.items():
        out[f"nvme_{name}"] = Figure(value * per_node, f"per node, on NVMe (offload device nvme): {why[name]}")
    return out


# LoRA adapter size: (fan-in + fan-out) of each targeted projection of a Llama-style layer
def _projections(model: Model) -> dict[str, int] | None:
    h = model.hidden
    if not h or not model.layers:
        return None
    ffn = model.ffn_hidden or 4 * h
    kv = h * (model.kv_heads or model.heads or 1) // (model.heads or 1)
    return {"q_proj": 2 * h, "k_proj": h + kv, "v_proj": h + kv, "o_proj": 2 * h,
            "gate_proj": h + ffn, "up_proj": h + ffn, "down_proj": ffn + h}


def adapter_parameters(layout: Layout, model: Model) -> tuple[int | None, str]:
    """The LoRA adapter's parameter count (whole model) and how it was counted."""
    projections = _projections(model)
    if projections is None:
        return None, "adapter size not known (needs the model's layers and hidden size)"
    targets = list(projections) if "all-linear" in layout.adapter_targets else list(layout.adapter_targets)
    known_targets = [t for t in targets if t in projections]
    unknown = [t for t in targets if t not in projections]
    rank = layout.adapter_rank or 8
    count = rank * model.layers * sum(projections[t] for t in known_targets)
    how = f"LoRA rank {rank} on {', '.join(known_targets) or 'no known module'} of {model.layers} layers: {count:,}"
    if unknown:
        how += f" (not counted: {', '.join(unknown)}, sizes not known)"
    return count, how


def _adapter_states(layout: Layout, model: Model, frozen: float, dp: int, split_how: str) -> dict[str, Figure]:
    """Model states when only a LoRA adapter is trained: the frozen base (no gradient, no optimizer
    state) and the adapter's fp32 weights, gradients and optimizer state."""
    stage = layout.stage
    count, how = adapter_parameters(layout, model)
    adapter = (count or 0) / (max(1, layout.tensor) * max(1, layout.pipeline))
    base = layout.base_weight_bytes or layout.compute_bytes
    on_cpu = layout.offload_params != "none" and stage == 3
    suffix = f"; {split_how}" if split_how else ""
    shard = lambda from_stage: dp if stage >= from_stage else 1  # noqa: E731
    out = {
        "parameters": Figure(frozen * base / shard(3) + adapter * 4 / shard(3),
                             f"frozen base weights {base:g} bytes/parameter + the adapter's fp32 weights ({how})"
                             + (f", sharded over {dp}" if stage >= 3 else "") + suffix),
        "gradients": Figure(adapter * 4 / shard(2), f"the adapter's fp32 gradients only ({how})"),
        "optimizer_states": Figure(adapter * layout.optimizer_state_bytes / shard(1),
                                   f"the adapter's optimizer state, {layout.optimizer_state_bytes} bytes/parameter"),
    }
    if count is None:
        for name in ("gradients", "optimizer_states"):
            out[name] = Figure(0.0, f"not counted: {how}")
    if on_cpu:
        out["cpu_parameters"] = Figure(out.pop("parameters").value * max(1, layout.gpus_per_node),
                                       "per node: parameters offloaded")
    return out


def estimate(layout: Layout, model: Model, machine: Machine | None = None) -> MemoryEstimate:
    """Model states + activations + fixed buffers per GPU, against the machine's GPU memory."""
    parts = model_states(layout, model)
    activations = activation_bytes(layout, model)
    parts["activations"] = activations
    if layout.fixed_buffers:
        total_buffers = sum(f.value for f in layout.fixed_buffers.values())
        parts["buffers"] = Figure(total_buffers, "; ".join(f"{k}: {f.assumption}" for k, f in layout.fixed_buffers.items()))
    per_gpu = sum(f.value for name, f in parts.items() if not name.startswith(HOST_PREFIXES))
    memory = machine.gpu_memory if machine is not None else None
    fits = None if memory is None else per_gpu <= memory
    largest = None
    notes = list(layout.assumptions) + list(model.assumptions)
    if memory is not None and per_sample_bytes(layout, model) > 0:
        fixed = per_gpu - activations.value
        largest = largest_fitting(memory - fixed, layout, model)
    elif memory is not None:
        notes.append(f"largest micro-batch not estimated: {activations.assumption}")
    notes.append("not counted: the CUDA context and allocator fragmentation (often 1-3 GB per GPU), "
                 "collective temporaries")
    return MemoryEstimate(parts=parts, per_gpu_bytes=per_gpu, fits=fits, largest_micro_batch=largest,
                          assumptions=notes)
