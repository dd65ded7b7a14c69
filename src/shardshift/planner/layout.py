"""Resolve a setup's merged Plan into a Layout: every number the estimates use, each default named.

    layout_of(plan, machine, micro_batch=None) -> Layout

A value the Plan does not give, or gives as "auto" or Unknown, becomes the framework's default and
`Layout.assumptions` says so ("ZeRO stage not set: 0, DeepSpeed's default"). Which framework's
defaults apply follows the formats the setup was read from (`plan.passthrough`), or the `framework`
argument: DeepSpeed (ZeRO accounting), Megatron-LM (its DDP and distributed optimizer), FSDP2
(torch `fully_shard`, also torchtitan and Accelerate/Axolotl FSDP), or plain DDP.

Degrees: data-parallel size = world / (TP x PP x CP) (Megatron's rule, `initialize_model_parallel`);
EP divides within data parallel for the experts only. Hybrid sharding shards over `hybrid_shard_size`
(default: one node) and replicates across the groups.
"""

from __future__ import annotations

from typing import Any

from shardshift.plan import Plan, Unknown, known
from shardshift.planner.types import Figure, Layout, Machine

# Bytes per element of each dtype as the Plan names it.
DTYPE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}

# Optimizer state bytes per parameter (beside the master copy), by the Plan's optimizer name
# (lower-cased): (bytes, exact?) -- exact False means the figure is an approximation.
OPTIMIZER_STATE_BYTES: dict[str, tuple[float, bool, str]] = {
    "adam": (8, True, "Adam: two fp32 moments, 8 bytes/parameter"),
    "adamw": (8, True, "AdamW: two fp32 moments, 8 bytes/parameter"),
    "fusedadam": (8, True, "FusedAdam: two fp32 moments, 8 bytes/parameter"),
    "cpuadam": (8, True, "DeepSpeedCPUAdam: two fp32 moments, 8 bytes/parameter"),
    "deepspeedcpuadam": (8, True, "DeepSpeedCPUAdam: two fp32 moments, 8 bytes/parameter"),
    "adamw_torch": (8, True, "AdamW: two fp32 moments, 8 bytes/parameter"),
    "adamw_torch_fused": (8, True, "AdamW: two fp32 moments, 8 bytes/parameter"),
    "adamw_hf": (8, True, "AdamW: two fp32 moments, 8 bytes/parameter"),
    "lamb": (8, True, "LAMB: two fp32 moments, 8 bytes/parameter"),
    "fusedlamb": (8, True, "LAMB: two fp32 moments, 8 bytes/parameter"),
    "lion": (4, True, "Lion: one fp32 momentum, 4 bytes/parameter"),
    "sgd": (4, True, "SGD with momentum: one fp32 buffer, 4 bytes/parameter"),
    "adagrad": (4, True, "Adagrad: one fp32 sum of squares, 4 bytes/parameter"),
    "rmsprop": (4, True, "RMSprop: one fp32 square average, 4 bytes/parameter"),
    "onebitadam": (8, False, "1-bit Adam: two fp32 moments plus error-feedback buffers (approximate)"),
    "zerooneadam": (8, False, "0/1 Adam: two fp32 moments plus error-feedback buffers (approximate)"),
    "onebitlamb": (8, False, "1-bit LAMB: two fp32 moments plus buffers (approximate)"),
    "adafactor": (4, False, "Adafactor: factored second moment, about 4 bytes/parameter with momentum, "
                            "nearly 0 without (approximate)"),
    "adamw_8bit": (2, False, "8-bit AdamW: two 8-bit moments, about 2 bytes/parameter (approximate)"),
    "adamw_bnb_8bit": (2, False, "8-bit AdamW: two 8-bit moments, about 2 bytes/parameter (approximate)"),
    "paged_adamw_8bit": (2, False, "8-bit AdamW: two 8-bit moments, about 2 bytes/parameter (approximate)"),
    "adam8bit": (2, False, "8-bit Adam: two 8-bit moments, about 2 bytes/parameter (approximate)"),
}

# DeepSpeed's ZeRO defaults (deepspeed/runtime/zero/config.py; ../shared/reference/deepspeed.md 4.1).
DS_REDUCE_BUCKET = 500_000_000
DS_ALLGATHER_BUCKET = 500_000_000
DS_PREFETCH_BUCKET = 50_000_000
DS_PERSISTENCE_THRESHOLD = 100_000

FRAMEWORK_NAMES = {"deepspeed": "DeepSpeed", "megatron": "Megatron-LM", "fsdp2": "FSDP2", "ddp": "DDP"}


# where a ds_config's settings come from (JSON pointers), and Accelerate's DeepSpeed block
_DEEPSPEED_POINTERS = ("/zero_optimization", "/train_micro_batch_size_per_gpu", "/train_batch_size",
                       "/deepspeed_config/", "/zero_allow_untested_optimizer")


def _engine(plan: Plan, framework: str | None) -> tuple[str, str]:
    """(the accounting used: deepspeed, megatron, fsdp2, ddp; the framework name for the Layout)."""
    formats = set(plan.passthrough)
    accelerate = plan.passthrough.get("accelerate")
    if isinstance(accelerate, dict) and str(accelerate.get("distributed_type", "")).upper() == "DEEPSPEED":
        formats.add("deepspeed")
    if any(where is not None and isinstance(where.pointer, str) and where.pointer.startswith(_DEEPSPEED_POINTERS)
           for where in plan.provenance.values()):
        formats.add("deepspeed")  # a ds_config whose every setting was lifted leaves no passthrough
    name = framework or next((f for f in ("megatron", "torchtitan", "axolotl", "accelerate", "deepspeed", "fsdp2")
                              if f in formats), "")
    if name in ("megatron",):
        return "megatron", name
    if name == "deepspeed" or (name in ("accelerate", "axolotl") and "deepspeed" in formats):
        return "deepspeed", name
    if name in ("fsdp2", "torchtitan"):
        return "fsdp2", name
    stage = known(plan.sharding.stage)
    if name in ("accelerate", "axolotl"):
        return ("fsdp2" if stage else "ddp"), name
    if stage:
        return "fsdp2", name
    return "ddp", name


def _int(value: Any) -> int | None:
    value = known(value)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _why(value: Any) -> str:
    """How a value was not usable: 'not set', 'auto', or the Unknown's reason."""
    if isinstance(value, Unknown):
        return f"not known before the run ({value.reason})"
    if value == "auto":
        return '"auto"'
    return "not set"


def layout_of(plan: Plan, machine: Machine | None = None, *, micro_batch: int | None = None,
              framework: str | None = None) -> Layout:
    """The Layout of `plan` on `machine` (its world size wins over the Plan's; None: the Plan's)."""
    engine, name = _engine(plan, framework)
    who = FRAMEWORK_NAMES[engine]
    notes: list[str] = []

    # --- world -----------------------------------------------------------------------------------
    plan_world = _int(plan.world.world_size)
    if plan_world is None and _int(plan.world.nodes) and _int(plan.world.gpus_per_node):
        plan_world = plan.world.nodes * plan.world.gpus_per_node
    if machine is not None:
        world, nodes, per_node = machine.world_size, machine.nodes, machine.gpus_per_node
        if plan_world is not None and plan_world != world:
            notes.append(f"the setup launches {plan_world} processes; estimated for the machine's {world} GPUs")
    elif plan_world is not None:
        world = plan_world
        nodes = _int(plan.world.nodes) or 1
        per_node = _int(plan.world.gpus_per_node) or max(1, world // nodes)
    else:
        world, nodes, per_node = 1, 1, 1
        notes.append("world size not set: 1 GPU")

    # --- parallel degrees ------------------------------------------------------------------------
    par = plan.parallelism
    degrees = {}
    for axis in ("tensor", "pipeline", "context", "expert"):
        value = getattr(par, axis)
        degrees[axis] = _int(value) or 1
        if value is not None and _int(value) is None:
            notes.append(f"{axis}-parallel size {_why(value)}: 1")
    tp, pp, cp, ep = degrees["tensor"], degrees["pipeline"], degrees["context"], degrees["expert"]
    model_parallel = tp * pp * cp
    if world % model_parallel:
        notes.append(f"world size {world} is not a multiple of TP x PP x CP = {model_parallel}; "
                     f"data-parallel size rounded down")
    dp = max(1, world // model_parallel)
    vpp = _int(par.virtual_pipeline)
    sequence_parallel = known(par.sequence_parallel) is True and tp > 1

    # --- sharding stage --------------------------------------------------------------------------
    stage_value = plan.sharding.stage
    stage = known(stage_value)
    if not isinstance(stage, int):
        stage = {"deepspeed": 0, "megatron": 0, "fsdp2": 3, "ddp": 0}[engine]
        default_says = {"deepspeed": "0, DeepSpeed's default", "megatron": "0, Megatron's default (no distributed "
                        "optimizer)", "fsdp2": "3, fully_shard's default (reshard after forward)",
                        "ddp": "0 (plain data parallel)"}[engine]
        notes.append(f"ZeRO stage {_why(stage_value)}: {default_says}")
    distributed_optimizer = engine == "megatron" and stage == 1

    # hybrid sharding: shard within groups, replicate across them
    replicate, shard = 1, dp
    rep_value, shard_value = _int(par.data_parallel_replicate), _int(par.data_parallel_shard)
    if rep_value and shard_value and rep_value * shard_value == dp:
        replicate, shard = rep_value, shard_value
    elif known(plan.sharding.hybrid) is True and stage > 0:
        group = _int(plan.sharding.hybrid_shard_size)
        if group is None:
            group = max(1, min(dp, per_node // max(1, tp * cp)))
            notes.append(f"hybrid shard group size not set: {group} (one node)")
        if dp % group:
            notes.append(f"data-parallel size {dp} is not a multiple of the hybrid shard group {group}")
        shard, replicate = group, max(1, dp // group)
    elif shard_value and shard_value < dp and dp % shard_value == 0:
        shard, replicate = shard_value, dp // shard_value

    # --- offload ---------------------------------------------------------------------------------
    def device(target) -> str:
        value = known(target.device) if target is not None else None
        return value if value in ("cpu", "nvme") else "none"

    offload_optimizer = device(plan.offload.optimizer)
    offload_params = device(plan.offload.params)
    if offload_params != "none" and stage < 3 and engine == "deepspeed":
        notes.append("parameter offload needs ZeRO stage 3: ignored, as DeepSpeed does")
        offload_params = "none"
    if offload_optimizer != "none" and stage == 0 and engine == "deepspeed":
        notes.append("optimizer offload needs ZeRO stage 1-3: ignored")
        offload_optimizer = "none"

    fraction = 1.0
    ratio = known(plan.offload.optimizer.ratio) if plan.offload.optimizer is not None else None
    if offload_optimizer != "none" and isinstance(ratio, (int, float)) and 0 <= ratio < 1:
        fraction = float(ratio)

    # --- precision -------------------------------------------------------------------------------
    dtype_value = plan.precision.param_dtype
    dtype = known(dtype_value)
    if dtype not in DTYPE_BYTES:
        dtype = "fp32"
        notes.append(f"training dtype {_why(dtype_value)}: fp32, {who}'s default (no mixed precision)")
    compute = DTYPE_BYTES[dtype]
    if dtype == "fp8":
        compute = 2
        notes.append("fp8 compute: parameters kept in bf16 (2 bytes), as Transformer Engine does")
    mixed = compute < 4
    if engine == "fsdp2":
        # fully_shard keeps the sharded parameters in their original dtype (fp32) and casts to
        # MixedPrecisionPolicy.param_dtype only when it gathers them; the sharded gradients are fp32.
        param_bytes, grad_bytes, master, copy = 4, 4, False, False
        if mixed:
            notes.append("FSDP2 mixed precision: sharded parameters and gradients stay fp32 (4 bytes each); "
                         "16-bit copies exist only while a unit is gathered")
    elif engine == "megatron":
        # bf16/fp16 model weights, fp32 main gradients (accumulated in fp32), fp32 main params.
        param_bytes, grad_bytes, master, copy = compute, 4, mixed, False
        if mixed:
            notes.append("Megatron mixed precision: 16-bit weights, fp32 main gradients, fp32 main parameters "
                         "(theoretical_memory_usage.py counts 18 bytes/parameter)")
    elif engine == "deepspeed":
        param_bytes, grad_bytes, master, copy = compute, compute, mixed, mixed
        if mixed:
            notes.append("DeepSpeed mixed precision: 16-bit parameters and gradients, fp32 master weights and an "
                         "fp32 gradient partition for the step (DeepSpeed's estimators: 18 bytes/parameter sharded)")
    else:  # DDP with torch.autocast: fp32 parameters and gradients, no master copy
        param_bytes, grad_bytes, master, copy = 4, 4, False, False
        if mixed:
            notes.append("DDP with autocast: parameters and gradients stay fp32; 16-bit only in compute")

    # --- optimizer -------------------------------------------------------------------------------
    opt_name = known(plan.optimizer.name) if plan.optimizer is not None else None
    if not isinstance(opt_name, str):
        opt_name = "adamw"
        default = {"megatron": "adam (AdamW), Megatron's default", "deepspeed": "AdamW assumed (without an "
                   "optimizer block the training script builds it)"}.get(engine, "AdamW assumed")
        notes.append(f"optimizer {_why(plan.optimizer.name if plan.optimizer else None)}: {default} "
                     f"(8 bytes/parameter of state)")
    key = opt_name.lower().replace("-", "_")
    state_bytes, exact, says = OPTIMIZER_STATE_BYTES.get(key, OPTIMIZER_STATE_BYTES.get(key.replace("_", ""),
                                                         (8, False, f"{opt_name}: not known here, 8 bytes/parameter "
                                                                    f"(Adam's) assumed")))
    if key in ("sgd",) and plan.optimizer is not None:
        momentum = known(plan.optimizer.params.get("momentum"))
        if momentum in (0, 0.0):
            state_bytes, says = 0, "SGD without momentum: no state"
    if not exact or state_bytes != 8:
        notes.append(says)

    # --- batch -----------------------------------------------------------------------------------
    micro_value = plan.batch.micro
    if micro_batch is None:
        micro_batch = _int(micro_value)
        if micro_batch is None:
            micro_batch = 1
            notes.append(f"micro-batch size {_why(micro_value)}: 1")
    accumulation = _int(plan.batch.accumulation)
    global_ = _int(plan.batch.global_)
    if accumulation is None and global_ is not None and global_ % (micro_batch * dp) == 0:
        accumulation = global_ // (micro_batch * dp)
    if accumulation is None:
        accumulation = 1
        notes.append(f"gradient accumulation {_why(plan.batch.accumulation)}: 1")
    sequence = _int(plan.batch.sequence_length)

    # --- recomputation ---------------------------------------------------------------------------
    recompute = "none"
    ac = plan.activation_checkpointing
    enabled = known(ac.enabled) if ac is not None else None
    megatron_args = plan.passthrough.get("megatron", {})
    granularity = megatron_args.get("--recompute-granularity", megatron_args.get("--recompute_granularity"))
    if granularity in ("full", "selective"):
        recompute = granularity
    elif megatron_args.get("--recompute-activations") is True:
        recompute = "selective"
    elif enabled is True:
        recompute = "full"
        notes.append("activation checkpointing on: full recomputation per layer assumed (only layer inputs kept)")

    gated = megatron_args.get("--swiglu") is True
    method = megatron_args.get("--recompute-method")
    method = method if recompute == "full" and method in ("uniform", "block") else None
    count = megatron_args.get("--recompute-num-layers")
    count = count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else (1 if method else None)

    # --- attention kernel ------------------------------------------------------------------------
    flash = True
    notes.append("fused (flash) attention assumed: the s^2 attention scores are not stored "
                 "(Megatron's Transformer Engine default; PyTorch SDPA on GPUs)")

    # --- parameter-efficient fine-tuning (Axolotl) -----------------------------------------------
    adapter, rank, targets, base_bytes = _adapter(plan, notes)

    layout = Layout(
        world_size=world, data_parallel_replicate=replicate, data_parallel_shard=shard,
        tensor=tp, pipeline=pp, virtual_pipeline=vpp, context=cp, expert=ep,
        sequence_parallel=sequence_parallel, stage=stage, distributed_optimizer=distributed_optimizer,
        offload_optimizer=offload_optimizer, offload_params=offload_params,  # type: ignore[arg-type]
        param_bytes=param_bytes, grad_bytes=grad_bytes, master_weights=master,
        optimizer_state_bytes=int(state_bytes), micro_batch=micro_batch, accumulation=accumulation,
        sequence_length=sequence, recompute=recompute,  # type: ignore[arg-type]
        framework=name or engine, assumptions=notes, nodes=nodes, gpus_per_node=per_node,
        compute_bytes=compute, fp32_grad_copy=copy, flash_attention=flash, gated_mlp=gated,
        num_microbatches=accumulation, engine=engine,
        adapter=adapter, adapter_rank=rank, adapter_targets=targets, base_weight_bytes=base_bytes,
        offload_fraction=fraction, recompute_method=method, recompute_layers=count,
    )
    zero = plan.passthrough.get("deepspeed", {}).get("zero_optimization") if engine == "deepspeed" else None
    hpz = zero.get("zero_hpz_partition_size") if isinstance(zero, dict) else None
    if stage == 3 and isinstance(hpz, int) and not isinstance(hpz, bool) and hpz > 1:
        layout.secondary_partition = hpz
    if engine == "deepspeed" and stage == 3:
        notes.append("ZeRO-3 parameters partitioned at construction (zero.Init), as the Hugging Face "
                     "integration does")
    layout.fixed_buffers = _buffers(plan, layout, engine)
    layout.grad_reduce_bytes = _grad_reduce_bytes(plan, engine, notes)
    return layout


DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1}


def _grad_reduce_bytes(plan: Plan, engine: str, notes: list[str]) -> int | None:
    """Bytes per gradient element on the wire when the setup says so: DeepSpeed's
    communication_data_type, FSDP2's MixedPrecisionPolicy(reduce_dtype=...), Megatron's
    --grad-reduce-in-bf16. None leaves it to the engine's default (planner/communication.py)."""
    said = plan.communication.dtype if engine == "deepspeed" else plan.precision.reduce_dtype if engine == "fsdp2" \
        else None
    if engine == "megatron" and plan.passthrough.get("megatron", {}).get("grad_reduce_in_bf16") is True:
        said = "bf16"
    if isinstance(said, str) and said in DTYPE_BYTES:
        notes.append(f"gradients reduced in {said} ({DTYPE_BYTES[said]} bytes per element), as the setup says")
        return DTYPE_BYTES[said]
    return None


# PEFT's default LoRA targets for Llama-style models (peft/utils/constants.py,
# TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING["llama"])
PEFT_DEFAULT_TARGETS = ("q_proj", "v_proj")
PEFT_DEFAULT_RANK = 8  # peft.LoraConfig(r=8)


def _adapter(plan: Plan, notes: list[str]) -> tuple[str | None, int | None, tuple[str, ...], float | None]:
    """(adapter, rank, target modules, frozen base bytes/parameter) from Axolotl's settings."""
    settings = plan.passthrough.get("axolotl")
    if not isinstance(settings, dict):
        return None, None, (), None
    adapter = settings.get("adapter")
    if adapter not in ("lora", "qlora"):
        if adapter is not None:
            notes.append(f"adapter {adapter!r}: not modelled, every parameter counted as trained")
        return None, None, (), None
    rank = settings.get("lora_r")
    if not isinstance(rank, int) or isinstance(rank, bool) or rank < 1:
        rank = PEFT_DEFAULT_RANK
        notes.append(f"lora_r not set: {rank}, PEFT's default")
    modules = settings.get("lora_target_modules")
    if settings.get("lora_target_linear") is True:
        targets: tuple[str, ...] = ("all-linear",)
    elif isinstance(modules, list) and all(isinstance(m, str) for m in modules) and modules:
        targets = tuple(modules)
    elif modules == "all-linear":
        targets = ("all-linear",)
    else:
        targets = PEFT_DEFAULT_TARGETS
        notes.append("LoRA target modules not set: q_proj and v_proj, PEFT's default for Llama-style models")
    if adapter == "qlora" or settings.get("load_in_4bit") is True:
        base = 0.5
        notes.append("QLoRA: frozen base weights in 4-bit NF4, 0.5 bytes/parameter (quantization constants, "
                     "about 0.5% more, not counted)")
    elif settings.get("load_in_8bit") is True:
        base = 1.0
        notes.append("base weights loaded in 8-bit: 1 byte/parameter")
    else:
        base = None
    notes.append(f"{adapter}: only the adapter (rank {rank}) is trained: gradients and optimizer states for it "
                 f"alone; its weights fp32 (PEFT's autocast_adapter_dtype)")
    return adapter, rank, targets, base


def _buffers(plan: Plan, layout: Layout, engine: str) -> dict[str, Figure]:
    """The fixed GPU buffers the configuration sizes (bucket element counts x bytes)."""
    comm = plan.communication
    out: dict[str, Figure] = {}

    def elements(value: Any, default: int, what: str) -> int:
        count = _int(value)
        if count is None:
            layout.assumptions.append(f"{what} {_why(value)}: {default:,} elements, DeepSpeed's default")
            return default
        return count

    accum = known(plan.precision.grad_accum_dtype)
    grad_buffer_bytes = DTYPE_BYTES.get(accum, layout.grad_bytes) if isinstance(accum, str) else layout.grad_bytes
    contiguous = known(comm.contiguous_gradients) is not False  # DeepSpeed's default: True
    if engine == "deepspeed" and layout.stage in (1, 2):
        reduce = elements(comm.reduce_bucket_elements, DS_REDUCE_BUCKET, "reduce_bucket_size")
        overlap = known(comm.overlap) is True  # DeepSpeed's default for stages 1 and 2: False
        if contiguous:
            copies = 2 if overlap else 1
            out["reduce_bucket"] = Figure(copies * reduce * grad_buffer_bytes,
                                          f"{copies} x reduce_bucket_size {reduce:,} elements x {grad_buffer_bytes} "
                                          f"bytes: ZeRO-{layout.stage}'s contiguous gradient bucket"
                                          + (", double-buffered for overlap_comm" if overlap else "")
                                          + " (stage_1_and_2.py setup_buckets)")
        layout.assumptions.append("allgather_bucket_size sets how the updated partitions are gathered, straight "
                                  "into the 16-bit parameters: no buffer of its own (deepspeed/runtime/utils.py "
                                  "all_gather_dp_groups)")
    elif engine == "deepspeed" and layout.stage == 3:
        reduce = elements(comm.reduce_bucket_elements, DS_REDUCE_BUCKET, "reduce_bucket_size")
        prefetch = elements(comm.prefetch_bucket_elements, DS_PREFETCH_BUCKET, "stage3_prefetch_bucket_size")
        persist = elements(comm.param_persistence_threshold, DS_PERSISTENCE_THRESHOLD,
                           "stage3_param_persistence_threshold")
        if contiguous:
            out["reduce_bucket"] = Figure(reduce * grad_buffer_bytes,
                                          f"reduce_bucket_size {reduce:,} elements x {grad_buffer_bytes} bytes "
                                          f"(ZeRO-3's IPG gradient buffer, stage3.py)")
        out["prefetch_bucket"] = Figure(prefetch * layout.param_bytes,
                                        f"stage3_prefetch_bucket_size {prefetch:,} elements x {layout.param_bytes} "
                                        f"bytes gathered ahead of use")
        layout.assumptions.append(f"parameters under {persist:,} elements (stage3_param_persistence_threshold) "
                                  f"stay whole on every GPU: not counted (norms and biases, small)")
    elif engine == "megatron":
        layout.assumptions.append("Megatron's gradient buckets are views of the contiguous gradient buffer "
                                  "(counted with the gradients): no extra buffer")
    elif engine == "fsdp2":
        layout.assumptions.append("FSDP2 has no bucket sizes: one all-gather / reduce-scatter per fully_shard "
                                  "unit (counted as the gathered unit)")
    elif engine == "ddp":
        out["ddp_buckets"] = Figure(25 * 2**20, "DDP gradient buckets: bucket_cap_mb 25 MiB, torch's default")
    return out
