"""DeepSpeed's keys under FSDP2: what happens to every ds_config key when the run moves to FSDP2, as data
(deepspeed.md §5.1). It explains DeepSpeed's own settings, so it lives with DeepSpeed; every writer that
reports a ds_config against FSDP2 (the FSDP2 module, accelerate-fsdp2, and the reasons Axolotl's and
torchtitan's writers give for DeepSpeed keys) reads it here, and none imports another writer.

One `Row` per key pointer (``*`` matches one key): its status, where it goes in the emitted
module and why. Statuses:

- exact: the module behaves as DeepSpeed does for this setting (including "off in both");
- approximate: the intent carries over but something changes, and the reason says what;
- dropped: the module does not do what the setting asked for (NVMe, quantized collectives,
  1-bit communication, pipelining, monitors, ...); `convert --strict` fails on these.

A few rows depend on the value or on sibling keys; they name a resolver. Every leaf setting of
the source document gets an entry; a test checks that every row of the DeepSpeed key table
(deepspeed_keys.KEYS) finds a row here, so no key is forgotten.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from shardshift.document import Document, MappingEntry
from shardshift.formats.deepspeed.keys import key_index
from shardshift.fsdp2_settings import (
    AUTO,
    DEEPSPEED_ONLY_OPTIMIZER_PARAMS,
    DEEPSPEED_SCHEDULERS,
    TORCH_OPTIMIZER_ARGUMENTS,
    Fsdp2Settings,
)
from shardshift.source import split_pointer, value_at

Outcome = tuple[str, "str | None", str]  # status, target, reason
E, A, X, U = "exact", "approximate", "dropped", "unknown"


@dataclass(frozen=True, slots=True)
class Row:
    pattern: str
    status: str
    target: str | None
    reason: str
    off: tuple[Any, ...] = ()  # values that mean "feature off": exact, nothing to carry
    resolve: str | None = None  # name of a resolver in RESOLVERS for value-dependent rows


def _r(pattern, status, target, reason, off=(), resolve=None) -> Row:
    return Row(pattern, status, target, reason, tuple(off), resolve)


Z, OP, OO = "/zero_optimization", "/zero_optimization/offload_param", "/zero_optimization/offload_optimizer"
LOGGING = "logging and monitoring are not emitted: log from your training loop (torch.profiler for profiles)"
NO_KNOB = "FSDP2 has no such knob"
UNIT = ("FSDP2 communicates one fully_shard unit (a block) at a time; there is no element-count bucket, so "
        "choose the blocks to size the collectives")
NVME = "NVMe offload setting: FSDP2 cannot offload to NVMe"

ROWS: tuple[Row, ...] = (
    # --- batch ---------------------------------------------------------------------------
    _r("/train_batch_size", E, "TRAIN_BATCH_SIZE", "micro batch x accumulation x processes, checked at setup()"),
    _r("/train_micro_batch_size_per_gpu", E, "MICRO_BATCH_SIZE", "your DataLoader's batch_size on each rank"),
    _r("/gradient_accumulation_steps", E, "GRADIENT_ACCUMULATION_STEPS",
       "Engine.backward divides the loss by it; the optimizer steps every Nth Engine.step(), and gradients are "
       "reduced only on that micro-step (set_requires_gradient_sync)"),
    _r("/managed_gradient_accumulation", A, "Engine.step",
       "the Engine always counts micro-steps itself: call backward() and step() once per micro-batch", off=(True,)),
    # --- logging -------------------------------------------------------------------------
    *(_r(p, X, None, LOGGING, off=off) for p, off in (
        ("/steps_per_print", (None,)), ("/wall_clock_breakdown", (False,)), ("/memory_breakdown", (False,)),
        ("/dump_state", (False,)), ("/log_level", (None,)))),
    # --- gradients and communication -----------------------------------------------------
    _r("/gradient_clipping", E, "GRADIENT_CLIPPING", "torch.nn.utils.clip_grad_norm_ on the sharded gradients "
       "(a global norm, as DeepSpeed computes it); 0 disables"),
    _r("/communication_data_type", E, "REDUCE_DTYPE", "MixedPrecisionPolicy.reduce_dtype: the dtype of the "
       "gradient reduce-scatter (and of accumulation between syncs)"),
    _r("/seq_parallel_communication_data_type", X, None, "Ulysses sequence parallelism is not emitted",
       off=("fp32",)),
    _r("/prescale_gradients", A, None, "FSDP2 chooses its own pre- and post-division of gradients "
       "(set_gradient_divide_factor for a custom one); the average is the same", off=(False,)),
    _r("/gradient_predivide_factor", A, None, "FSDP2 chooses its own pre-division "
       "(set_gradient_divide_factor for a custom one); the average is the same", off=(1, 1.0)),
    _r("/gradient_allreduce_op", X, None, "not emitted: call engine.model.set_gradient_divide_factor(1.0) after "
       "setup() to sum instead of average", off=("mean",)),
    _r("/sparse_gradients", X, None, "FSDP2 has no sparse embedding gradients", off=(False,)),
    _r("/disable_allgather", X, None, NO_KNOB, off=(False,)),
    _r("/graph_harvesting", X, None, "CUDA graph capture is not emitted", off=(False,)),
    _r("/zero_allow_untested_optimizer", E, None, "a DeepSpeed-only guard: FSDP2 takes any torch optimizer"),
    _r("/zero_force_ds_cpu_optimizer", E, None, "a DeepSpeed-only guard: with CPUOffloadPolicy a torch "
       "optimizer steps on the CPU"),
    _r("/dataloader_drop_last", E, "DATALOADER_DROP_LAST", "pass it to your DataLoader(drop_last=...)"),
    _r("/vocabulary_size", E, None, "DeepSpeed only warns about it; nothing to carry"),
    _r("/use_data_before_expert_parallelism", X, None, "expert parallelism is not emitted", off=(False,)),
    _r("/sequence_parallel_size", X, None, "Ulysses sequence parallelism is not emitted (FSDP2 composes with "
       "context parallelism, a different algorithm)", off=(1,)),
    _r("/data_parallel_size", A, "build_mesh", "the module shards over every process (WORLD_SIZE)"),
    _r("/allgather_size", A, None, UNIT),
    _r("/disable_python_gc", X, None, "not emitted: call gc.disable() (or gc.freeze()) in your training loop",
       off=(False,)),
    # --- precision -----------------------------------------------------------------------
    _r("/fp16/enabled", E, "PARAM_DTYPE", "MixedPrecisionPolicy(param_dtype=torch.float16) with fp32 sharded "
       "parameters (the master weights) and torch.amp.GradScaler for dynamic loss scaling", resolve="precision"),
    _r("/fp16/auto_cast", A, "PARAM_DTYPE", "MixedPrecisionPolicy casts floating-point forward inputs to fp16 "
       "anyway (cast_forward_inputs=True)", off=(True,)),
    _r("/fp16/loss_scale", E, "INITIAL_LOSS_SCALE", "0: dynamic loss scaling with torch.amp.GradScaler",
       resolve="loss_scale"),
    _r("/fp16/initial_scale_power", E, "INITIAL_LOSS_SCALE", "GradScaler(init_scale=2 ** power)"),
    _r("/fp16/loss_scale_window", E, "LOSS_SCALE_WINDOW", "GradScaler(growth_interval=window)"),
    _r("/fp16/hysteresis", A, None, "GradScaler halves the scale on the first overflow; DeepSpeed tolerates "
       "hysteresis - 1 overflows first", off=(1,)),
    _r("/fp16/consecutive_hysteresis", A, None, "GradScaler has no hysteresis", off=(False,)),
    _r("/fp16/min_loss_scale", A, None, "GradScaler has no lower bound on the scale"),
    _r("/fp16/fp16_master_weights_and_grads", A, None, "the sharded parameters keep the model's dtype: load the "
       "model in fp16 to keep fp16 master weights", off=(False,)),
    _r("/bf16/enabled", E, "PARAM_DTYPE", "MixedPrecisionPolicy(param_dtype=torch.bfloat16) with fp32 sharded "
       "parameters (the master weights)", resolve="precision"),
    _r("/bf16/immediate_grad_update", A, None, "FSDP2 has no separate gradient update path", off=(False,)),
    _r("/bf16/check_grad_overflow", E, "SKIP_NONFINITE_STEPS", "skip the optimizer step when the gradient norm is "
       "inf or nan", resolve="grad_overflow"),
    _r("/bf16/bf16_master_weights_and_grads", A, None, "the sharded parameters keep the model's dtype: load the "
       "model in bf16 to keep bf16 master weights", off=(False,)),
    _r("/bf16/bf16_optimizer_states", A, None, "optimizer state follows the sharded parameters' dtype: load the "
       "model in bf16 for bf16 states", off=(False,)),
    _r("/amp/*", X, None, "apex AMP is not emitted: MixedPrecisionPolicy replaces it", off=(False,)),
    _r("/torch_autocast/*", X, None, "not emitted: wrap your forward in torch.autocast(dtype) yourself, or rely "
       "on MixedPrecisionPolicy", off=(False,)),
    _r("/data_types/grad_accum_dtype", A, "REDUCE_DTYPE", "FSDP2 accumulates unsynchronised gradients in "
       "reduce_dtype: set REDUCE_DTYPE to this dtype"),
    _r("/data_types/param_dtype", A, "PARAM_DTYPE", "MixedPrecisionPolicy.param_dtype"),
    _r("/data_types/buffer_dtype", A, None, "FSDP2 does not cast buffers: cast them yourself"),
    _r("/data_types/keep_in_fp32_modules", A, None, "give each such module its own fully_shard call with "
       "MixedPrecisionPolicy(param_dtype=torch.float32) before setup() shards the rest"),
    # --- optimizer and scheduler -----------------------------------------------------------
    _r("/optimizer/type", E, "build_optimizer", "", resolve="optimizer_type"),
    _r("/optimizer/params/*", E, "OPTIMIZER_KWARGS", "", resolve="optimizer_param"),
    _r("/optimizer/params", E, "OPTIMIZER_KWARGS", "no arguments: the optimizer's defaults, written out"),
    _r("/scheduler/params", E, "LR_SCHEDULE", "no arguments: the scheduler's defaults, written out"),
    _r("/optimizer/legacy_fusion", X, None, NO_KNOB, off=(False,)),
    _r("/scheduler/type", E, "build_scheduler", "", resolve="scheduler_type"),
    _r("/scheduler/params/*", E, "LR_SCHEDULE", "", resolve="scheduler_param"),
    # --- zero_optimization ----------------------------------------------------------------
    _r(Z + "/stage", E, "RESHARD_AFTER_FORWARD", "", resolve="stage"),
    _r(Z + "/contiguous_gradients", E, None, "FSDP2 keeps gradients in per-parameter sharded storage"),
    _r(Z + "/compute_grad_norm", E, None, "the module computes the global norm when it clips or skips non-finite "
       "steps"),
    _r(Z + "/parameter_alignment", E, None, "FSDP2 pads each shard itself"),
    _r(Z + "/reduce_scatter", E, None, "FSDP2 always reduce-scatters gradients"),
    _r(Z + "/reduce_bucket_size", A, None, UNIT),
    _r(Z + "/use_multi_rank_bucket_allreduce", A, None, UNIT),
    _r(Z + "/allgather_partitions", E, None, "FSDP2 all-gathers parameters per unit before use"),
    _r(Z + "/allgather_bucket_size", A, None, UNIT),
    _r(Z + "/overlap_comm", E, None, "FSDP2 always overlaps communication with compute (separate streams)",
       resolve="overlap"),
    _r(Z + "/load_from_fp32_weights", A, None, "checkpoints are torch.distributed.checkpoint state dicts"),
    _r(Z + "/elastic_checkpoint", A, None, "torch.distributed.checkpoint reshards on load"),
    _r(Z + "/zenflow/*", X, None, "ZenFlow is not emitted"),
    _r(Z + "/sub_group_size", A, None, "the optimizer steps over each rank's shard at once; " + NO_KNOB),
    _r(Z + "/stage3_prefetch_bucket_size", A, None, "FSDP2 prefetches the next unit (set_modules_to_forward_"
       "prefetch / set_modules_to_backward_prefetch for more); units are modules, not elements"),
    _r(Z + "/stage3_param_persistence_threshold", A, None, "small modules left to the root group (not passed "
       "in blocks) stay gathered after forward; there is no element threshold"),
    _r(Z + "/stage3_model_persistence_threshold", A, None, "there is no element threshold: small modules in the "
       "root group stay gathered"),
    _r(Z + "/stage3_max_live_parameters", A, None, "FSDP2 frees each unit after use (reshard_after_forward); "
       + NO_KNOB),
    _r(Z + "/stage3_max_reuse_distance", A, None, "FSDP2 frees each unit after use (reshard_after_forward); "
       + NO_KNOB),
    _r(Z + "/stage3_gather_16bit_weights_on_model_save", A, "Engine.full_state_dict", "save the model from "
       "engine.full_state_dict() (full fp32 state dict on rank 0) where you called save_16bit_model",
       off=(False,)),
    _r(Z + "/stage3_module_granularity_threshold", A, None, "choose the blocks instead", off=(0,)),
    _r(Z + "/stage3_use_all_reduce_for_fetch_params", A, None, "FSDP2 all-gathers parameters", off=(False,)),
    _r(Z + "/stage3_allgather_sequential", A, None, NO_KNOB, off=(False,)),
    _r(Z + "/ignore_unused_parameters", E, None, "FSDP2 tolerates parameters without gradients"),
    _r(Z + "/legacy_stage1", X, None, "legacy ZeRO-1 is not emitted", off=(False,)),
    _r(Z + "/round_robin_gradients", A, None, NO_KNOB, off=(False,)),
    _r(Z + "/zero_hpz_partition_size", A, "RESHARD_AFTER_FORWARD", "", resolve="hpz"),
    _r(Z + "/zero_quantized_weights", X, None, "ZeRO++ quantized weight all-gather (qwZ): FSDP2 has no built-in "
       "quantized collectives (only custom all-gather hooks)", off=(False,)),
    _r(Z + "/zero_quantized_nontrainable_weights", X, None, "quantized frozen weights: FSDP2 has no built-in "
       "quantized collectives", off=(False,)),
    _r(Z + "/zero_quantized_gradients", X, None, "ZeRO++ quantized gradient reduce (qgZ): FSDP2 has no built-in "
       "quantized collectives (only custom reduce-scatter hooks)", off=(False,)),
    _r(Z + "/zeropp_loco_param/*", X, None, "ZeRO++ LoCo is not emitted"),
    _r(Z + "/zeropp_loco_param", X, None, "ZeRO++ LoCo is not emitted", off=(None, {})),
    _r(Z + "/mics_shard_size", A, "HYBRID_SHARD_SIZE", "", resolve="mics"),
    _r(Z + "/mics_hierarchical_params_gather", X, None, "hierarchical all-gather is not emitted", off=(False,)),
    _r(Z + "/memory_efficient_linear", E, None, "FSDP2 needs no special linear layer"),
    _r(Z + "/pipeline_loading_checkpoint", X, None, NO_KNOB, off=(False,)),
    _r(Z + "/override_module_apply", E, None, "no zero.Init: build the model normally (or on the meta device)"),
    _r(Z + "/log_trace_cache_warnings", X, None, LOGGING, off=(False,)),
    _r(Z + "/enable_sanity_checks", X, None, NO_KNOB, off=(False,)),
    _r(Z + "/save_muon_momentum_buffer_in_memory", X, None, NO_KNOB, off=(False,)),
    _r(Z + "/leaf_module/*", A, "setup(blocks=...)", "make each such module one fully_shard unit: pass them "
       "in blocks="),
    _r(Z + "/grad_hooks", X, None, "not a DeepSpeed field (DeepSpeed rejects it)"),
    # --- offload --------------------------------------------------------------------------
    _r(OP + "/device", A, "CPUOffloadPolicy", "", resolve="offload_device"),
    _r(OO + "/device", A, "CPUOffloadPolicy", "", resolve="offload_device"),
    _r(OP + "/pin_memory", E, "PIN_MEMORY", "", resolve="pin_memory"),
    _r(OO + "/pin_memory", E, "PIN_MEMORY", "", resolve="pin_memory"),
    *(_r(p, X, None, NVME, resolve="nvme_only") for p in (
        OP + "/nvme_path", OP + "/buffer_count", OP + "/buffer_size", OP + "/max_in_cpu", OO + "/nvme_path",
        OO + "/buffer_count", OO + "/pipeline_read", OO + "/pipeline_write", OO + "/fast_init")),
    _r(OO + "/ratio", A, "CPUOffloadPolicy", "FSDP2 offloads all optimizer state or none", off=(1, 1.0)),
    _r(OO + "/super_offload", X, None, "SuperOffload is not emitted", off=(False,)),
    _r(OO + "/cpuadam_cores_perc", A, None, "the torch optimizer on the CPU uses torch's intra-op threads "
       "(torch.set_num_threads)"),
    _r(OP, E, None, "no parameter offload in either", resolve="offload_block"),
    _r(OO, E, None, "no optimizer offload in either", resolve="offload_block"),
    # --- activation checkpointing ---------------------------------------------------------
    _r("/activation_checkpointing/partition_activations", X, None, "checkpoints are not partitioned across "
       "model-parallel ranks (no tensor parallelism here)", off=(False,)),
    _r("/activation_checkpointing/contiguous_memory_optimization", X, None, NO_KNOB, off=(False,)),
    _r("/activation_checkpointing/cpu_checkpointing", X, None, "not emitted: wrap the forward in "
       "torch.autograd.graph.save_on_cpu() to keep checkpoints on the CPU", off=(False,)),
    _r("/activation_checkpointing/number_checkpoints", X, None, "checkpoint_wrapper checkpoints every block",
       off=(None,)),
    _r("/activation_checkpointing/synchronize_checkpoint_boundary", X, None, NO_KNOB, off=(False,)),
    _r("/activation_checkpointing/profile", X, None, LOGGING, off=(False,)),
    _r("/activation_checkpointing", A, "ACTIVATION_CHECKPOINTING", "checkpoint_wrapper on each block before "
       "fully_shard; remove deepspeed.checkpointing calls from the model"),
    # --- monitoring -----------------------------------------------------------------------
    *(_r(f"/{name}/*", X, None, LOGGING, resolve="monitor") for name in (
        "flops_profiler", "tensorboard", "csv_monitor", "wandb", "comet", "comms_logger")),
    _r("/timers/throughput/*", X, None, LOGGING, resolve="monitor"),
    _r("/timers/*", X, None, LOGGING),
    # --- parallelism and engine variants --------------------------------------------------
    _r("/pipeline/*", X, None, "the pipeline engine is not emitted (FSDP2 composes with "
       "torch.distributed.pipelining)"),
    _r("/tensor_parallel/autotp_size", X, None, "tensor parallelism is not emitted (parallelize_module on a "
       "(dp, tp) mesh before fully_shard)", off=(0, 1)),
    _r("/tensor_parallel/*", X, None, "tensor parallelism is not emitted"),
    _r("/expert_parallel/autoep_size", X, None, "expert parallelism is not emitted", off=(1,)),
    _r("/expert_parallel/*", X, None, "expert parallelism is not emitted"),
    _r("/hybrid_engine/*", X, None, "the hybrid (RLHF) engine is not emitted", resolve="enabled_section"),
    _r("/compile/*", X, None, "not emitted: torch.compile each block before setup()"),
    _r("/elasticity/*", X, None, "elastic training is not emitted (torchrun --nnodes=MIN:MAX restarts jobs)",
       resolve="enabled_section"),
    _r("/checkpoint/load_universal", A, None, "torch.distributed.checkpoint reshards on load", off=(False,)),
    _r("/checkpoint/*", X, None, "DeepSpeed checkpoint option: save with torch.distributed.checkpoint"),
    _r("/aio/*", X, None, NVME, resolve="aio"),
    *(_r(f"/{name}/*", X, None, f"DeepSpeed's {name} is not emitted", resolve="enabled_section") for name in (
        "nebula", "autotuning", "data_efficiency", "curriculum_learning", "compression_training",
        "quantize_training", "weight_quantization", "sparse_attention", "progressive_layer_drop", "eigenvalue")),
    _r("/datastates_ckpt", X, None, "DataStates checkpointing is not emitted (torch.distributed.checkpoint."
       "async_save)"),
    _r("/datastates_ckpt/*", X, None, "DataStates checkpointing is not emitted"),
    # --- not DeepSpeed keys ---------------------------------------------------------------
    _r("/msamp/*", X, None, "MS-AMP is not emitted (DeepSpeed ignores the key too)"),
    _r("/msamp", X, None, "MS-AMP is not emitted (DeepSpeed ignores the key too)"),
    _r("/zero3_init_flag", A, None, "an Accelerate option: with FSDP2 build the model on the meta device, then "
       "load weights after setup()"),
    _r("/zero3_save_16bit_model", A, "Engine.full_state_dict", "an Accelerate option: save from "
       "engine.full_state_dict()"),
)


def _matches(pattern: str, pointer: str) -> bool:
    p, q = split_pointer(pattern), split_pointer(pointer)
    if p and p[-1] == "*":  # the section itself, or anything below it
        return len(q) >= len(p) - 1 and all(a in ("*", b) for a, b in zip(p[:-1], q))
    return len(p) == len(q) and all(a in ("*", b) for a, b in zip(p, q))


def row_for(pointer: str) -> Row | None:
    """The row of a modern (renamed) pointer: an exact row first, then the longest pattern."""
    exact = [row for row in ROWS if row.pattern == pointer]
    if exact:
        return exact[0]
    candidates = [row for row in ROWS if _matches(row.pattern, pointer)]
    return max(candidates, key=lambda r: len(r.pattern)) if candidates else None


# --- resolvers ----------------------------------------------------------------------------


@dataclass
class _Context:
    data: dict
    settings: Fsdp2Settings

    def get(self, pointer: str, default: Any = None) -> Any:
        value: Any = self.data
        for token in split_pointer(pointer):
            if not isinstance(value, dict) or token not in value:
                return default
            value = value[token]
        return value


def _precision(value, ctx, pointer, row) -> Outcome | None:
    if value is False:
        return (E, "PARAM_DTYPE", "off in both")
    return None


def _loss_scale(value, ctx, pointer, row) -> Outcome | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return (A, "INITIAL_LOSS_SCALE", f"a static scale of {value}: GradScaler(init_scale={value}) never grows, "
                "but unlike DeepSpeed it halves the scale when a step overflows")
    return None


def _optimizer_type(value, ctx, pointer, row) -> Outcome:
    s = ctx.settings
    return (s.optimizer_status, f"build_optimizer: torch.optim.{s.optimizer_class}", s.optimizer_note or "")


OPTIMIZER_PARAM_NOTES: dict[str, Outcome] = {
    "torch_adam": (E, "build_optimizer", "chooses torch's Adam(W) implementation: the module builds it"),
    "adam_w_mode": (E, "build_optimizer", "chooses AdamW (decoupled weight decay) or Adam (L2)"),
    "fp32_optimizer_states": (E, None, "torch keeps optimizer state in the sharded parameters' dtype (fp32)"),
    "set_grad_none": (E, None, "Engine zeroes gradients with zero_grad(set_to_none=True)"),
    "max_grad_norm": (X, None, "DeepSpeed rejects it at initialize: use gradient_clipping"),
}


def _invalid(name: str, value: Any, s: Fsdp2Settings, where: dict) -> Outcome:
    return (X, None, f"{value!r} is not a valid {name}: DeepSpeed fails on it; the module uses the default "
            f"{where.get(name)!r} instead")


def _optimizer_param(value, ctx, pointer, row) -> Outcome:
    name = split_pointer(pointer)[-1]
    s = ctx.settings
    if name in s.invalid and s.invalid[name] == value:
        return _invalid(name, value, s, s.optimizer_kwargs)
    if name == "bias_correction":
        return (E, None, "torch Adam(W) always corrects the bias") if value is not False else (
            X, None, "torch Adam(W) always corrects the bias; bias_correction=false is not reproduced")
    if name == "amsgrad" and value is True and s.optimizer_class in ("Adam", "AdamW"):
        return (A, f"OPTIMIZER_KWARGS[{name!r}]", "DeepSpeed's FusedAdam raises for amsgrad; torch honours it")
    if name in OPTIMIZER_PARAM_NOTES:
        return OPTIMIZER_PARAM_NOTES[name]
    if name in DEEPSPEED_ONLY_OPTIMIZER_PARAMS:
        return (X, None, f"a setting of DeepSpeed's own optimizer class, not of torch.optim.{s.optimizer_class}")
    if name in s.optimizer_kwargs and name in TORCH_OPTIMIZER_ARGUMENTS.get(s.optimizer_class, ()):
        status = A if s.optimizer_status == "approximate" else X if s.optimizer_status == "dropped" else E
        return (status, f"OPTIMIZER_KWARGS[{name!r}]", f"torch.optim.{s.optimizer_class}({name}=...)")
    return (X, None, f"torch.optim.{s.optimizer_class} has no argument {name!r}")


def _scheduler_type(value, ctx, pointer, row) -> Outcome:
    s = ctx.settings
    if s.scheduler is None:
        return (X, None, s.scheduler_note or "not emitted")
    if s.scheduler.startswith("torch:"):
        return (E, "build_scheduler", f"torch.optim.lr_scheduler.{value}, stepped once per optimizer step")
    return (E, "build_scheduler", f"LambdaLR with DeepSpeed's {value} formula (stepped once per applied optimizer "
            "step, skipped steps included, as DeepSpeed does)" + (" and its cycle of the Adam betas" if
                                                                   s.cycle_momentum else ""))


def _scheduler_param(value, ctx, pointer, row) -> Outcome:
    s = ctx.settings
    name = split_pointer(pointer)[-1]
    if s.scheduler is None:
        return (X, None, "the scheduler is not emitted")
    if s.scheduler.startswith("torch:"):
        return (E, f"LR_SCHEDULE[{name!r}]", "passed to the torch scheduler")
    if name in s.invalid and s.invalid[name] == value:
        return _invalid(name, value, s, s.scheduler_kwargs)
    if name not in DEEPSPEED_SCHEDULERS[s.scheduler]:
        return (X, None, f"not a parameter of DeepSpeed's {s.scheduler} (DeepSpeed raises TypeError)")
    if name == "warmup_type" and value not in ("log", "linear", AUTO):
        return (A, "LR_SCHEDULE['warmup_type']", f"{value!r} is unknown: DeepSpeed warns and uses 'log', and so "
                "does the module")
    if name == "cycle_momentum" and value is True and not s.cycle_momentum:
        return (E, None, f"DeepSpeed disables it for {s.optimizer_class} (no betas), and so does the module")
    return (E, f"LR_SCHEDULE[{name!r}]", f"a parameter of DeepSpeed's {s.scheduler} formula")


def _stage(value, ctx, pointer, row) -> Outcome | None:
    if value == 3:
        return (E, "RESHARD_AFTER_FORWARD = True", "fully_shard on each block, then the root: parameters, "
                "gradients and optimizer state sharded, parameters freed after forward")
    if value == 2:
        return (A, "RESHARD_AFTER_FORWARD = False", "gathered parameters stay from forward to backward, as in "
                "ZeRO-2, but FSDP2 still shards them between steps (less memory, one more all-gather per step)")
    if value in (0, 1):
        what = "no sharding" if value == 0 else "sharded optimizer state only"
        return (A, "RESHARD_AFTER_FORWARD = False", f"ZeRO-{value} ({what}) has no FSDP2 equivalent: the module "
                "shards like ZeRO-2, with the same math, less memory and more communication (plain data parallel "
                "is DistributedDataParallel)")
    return None


def _overlap(value, ctx, pointer, row) -> Outcome | None:
    return None if value is not False else (A, None, "FSDP2 always overlaps communication with compute")


def _hpz(value, ctx, pointer, row) -> Outcome | None:
    if value in (0, 1):
        return (E, None, "off in both")
    if ctx.get(Z + "/stage") != 3:
        return (E, None, "DeepSpeed ignores hpZ below stage 3")
    return (A, f"RESHARD_AFTER_FORWARD = {value}", f"after forward, parameters stay gathered in groups of {value} "
            "ranks, so backward gathers within the group, as hpZ's secondary partition does; FSDP2 keeps no second "
            "copy of the shard, and the groups are contiguous ranks (one node only if ranks are numbered node by "
            "node)")


def _mics(value, ctx, pointer, row) -> Outcome | None:
    if not isinstance(value, int) or value <= 0:
        return (E, None, "off in both")
    if ctx.get(Z + "/stage") != 3:
        return (E, None, "DeepSpeed ignores MiCS below stage 3")
    return (A, f"HYBRID_SHARD_SIZE = {value}", "hybrid sharding (HSDP): shard within groups of this size, "
            "replicate across them; FSDP2 replicates the optimizer state too and all-reduces gradients across "
            "groups every step (DeepSpeed 0.19.8 removed MiCS and rejects this key)")


def _offload_device(value, ctx, pointer, row) -> Outcome | None:
    if value in ("none", None):
        return (E, None, "no offload in either")
    kind = "param" if pointer.startswith(OP) else "optimizer"
    other = ctx.get((OO if kind == "param" else OP) + "/device")
    if value == "nvme":
        return (X, "CPUOffloadPolicy", "FSDP2 cannot offload to NVMe; the module offloads to CPU memory instead "
                "(CPUOffloadPolicy), which needs host RAM for the sharded parameters and optimizer state")
    if value == "cpu":
        if kind == "optimizer" and other not in ("cpu", "nvme"):
            return (A, "CPUOffloadPolicy", "FSDP2 cannot offload only the optimizer: CPUOffloadPolicy moves the "
                    "sharded parameters and gradients to the CPU too and steps the torch optimizer there (less "
                    "accelerator memory, slower than DeepSpeedCPUAdam)")
        return (A, "CPUOffloadPolicy", "sharded parameters, gradients and the optimizer step live on the CPU; a "
                "torch optimizer steps there instead of DeepSpeedCPUAdam (slower)")
    return None


def _pin_memory(value, ctx, pointer, row) -> Outcome:
    if not ctx.settings.cpu_offload:
        return (E, None, "unused without offload, in both")
    return (E, "PIN_MEMORY", "CPUOffloadPolicy(pin_memory=...), False when no accelerator is present")


# runtime/zero/stage3.py _overflow_check_and_loss_scale_update: ZeRO-3 checks gradients for inf/nan only in
# fp16; check_grad_overflow reaches the ZeRO-1/2 optimizer alone (engine._configure_zero_optimizer)
ZERO3_BF16_OVERFLOW = ("under ZeRO-3 DeepSpeed never checks bf16 gradients for inf or nan (stage3.py checks fp16 "
                       "only; check_grad_overflow reaches the ZeRO-1/2 optimizer alone) and applies every step; the "
                       "module does the same (SKIP_NONFINITE_STEPS = False)")


def _grad_overflow(value, ctx, pointer, row) -> Outcome | None:
    if ctx.settings.stage == 3:
        return (E, "SKIP_NONFINITE_STEPS", f"{value!r} is not read: {ZERO3_BF16_OVERFLOW}")
    return None


def _nvme_only(value, ctx, pointer, row) -> Outcome:
    parent = pointer.rsplit("/", 1)[0]
    if ctx.get(parent + "/device") == "nvme":
        return (X, None, NVME)
    return (E, None, "used only with device nvme: DeepSpeed ignores it too")


def _offload_block(value, ctx, pointer, row) -> Outcome:
    return (E, None, "an empty offload block offloads nothing, in both")


def _aio(value, ctx, pointer, row) -> Outcome:
    if "nvme" in (ctx.get(OP + "/device"), ctx.get(OO + "/device")):
        return (X, None, NVME)
    return (E, None, "used only for NVMe offload: DeepSpeed ignores it too")


def _section_enabled(ctx: _Context, pointer: str, depth: int, default: bool = False) -> bool:
    section = "/" + "/".join(split_pointer(pointer)[:depth])
    enabled = ctx.get(section + "/enabled", default)
    return enabled is True


def _monitor(value, ctx, pointer, row) -> Outcome:
    depth = 2 if pointer.startswith("/timers/") else 1
    if not _section_enabled(ctx, pointer, depth, default=pointer.startswith("/timers/throughput")):
        return (E, None, "disabled in the source; nothing to carry")
    return (X, None, LOGGING)


def _enabled_section(value, ctx, pointer, row) -> Outcome | None:
    if ctx.get("/" + split_pointer(pointer)[0] + "/enabled") is False:
        return (E, None, "disabled in the source; nothing to carry")
    return None


RESOLVERS: dict[str, Callable[..., Outcome | None]] = {
    "precision": _precision, "loss_scale": _loss_scale, "optimizer_type": _optimizer_type,
    "optimizer_param": _optimizer_param, "scheduler_type": _scheduler_type, "scheduler_param": _scheduler_param,
    "stage": _stage, "overlap": _overlap, "hpz": _hpz, "mics": _mics, "offload_device": _offload_device,
    "pin_memory": _pin_memory, "nvme_only": _nvme_only, "offload_block": _offload_block, "aio": _aio,
    "monitor": _monitor, "enabled_section": _enabled_section, "grad_overflow": _grad_overflow,
}


def _is_off(value: Any, off: tuple[Any, ...]) -> bool:
    """`value` is one of `off`, telling True from 1 (JSON keeps them apart, Python does not)."""
    for candidate in off:
        if isinstance(candidate, bool) or isinstance(value, bool) or candidate is None:
            if value is candidate:
                return True
        elif value == candidate:
            return True
    return False


def outcome(pointer: str, value: Any, ctx: _Context) -> Outcome:
    """What happens to one (modern) pointer with its value."""
    row = row_for(pointer)
    if row is None:
        parent = key_index().get(pointer.rsplit("/", 1)[0])
        if parent is not None and parent.strict and not parent.open:
            return (X, None, "not a DeepSpeed key: DeepSpeed rejects it in this section (see DS101); the module "
                    "ignores it")
        return (X, None, "not a DeepSpeed key: DeepSpeed ignores it, and so does the module (see DS101)")
    if value == AUTO and row.status != X:  # the value is the Trainer's, at run time: not known here
        return (U, row.target, f'"auto" (the HF Trainer or Accelerate fills it in): {row.target or "the module"} '
                'holds the placeholder "auto" and setup() refuses to run until you set it')
    if _is_off(value, row.off):
        return (E, row.target, "off in both")
    if row.resolve:
        resolved = RESOLVERS[row.resolve](value, ctx, pointer, row)
        if resolved is not None:
            status, target, reason = resolved
            return status, target, reason or row.reason
        if not row.reason:  # a value-dependent row met a value DeepSpeed does not accept
            return (X, row.target, f"{value!r} is not a value DeepSpeed accepts here (see DS102); the module uses "
                    "its default")
    return row.status, row.target, row.reason


# --- the report -----------------------------------------------------------------------------


def _modern(pointer: str, renamed_from: dict[str, str]) -> str:
    if pointer in renamed_from:
        return renamed_from[pointer]
    key = key_index().get(pointer)
    if key is not None and key.renamed_to and not key.inert:
        return key.renamed_to
    return pointer


def report(document: Document, settings: Fsdp2Settings) -> list[MappingEntry]:
    """One entry per leaf setting of the ds_config, then the DeepSpeed defaults the module states."""
    renamed_from = {old: new for new, old in document.renamed.items()}
    ctx = _Context(_normalised(document), settings)
    entries: list[MappingEntry] = []
    for pointer, line, column in document.settings():
        modern = _modern(pointer, renamed_from)
        value = value_at(document.data, pointer, None)
        if modern != pointer and ctx.get(modern) is not None:
            value = ctx.get(modern)  # cpu_offload: true is offload_optimizer.device "cpu"
        key = key_index().get(pointer)
        removed = _removed(pointer)
        row = row_for(modern)
        if key is not None and key.inert:
            status, target, reason = E, None, f"DeepSpeed ignores it ({key.doc or 'inert'}), and so does the module"
        elif removed and not (row and row.resolve):
            status, target, reason = X, None, f"{removed}; not emitted"
        else:
            status, target, reason = outcome(modern, value, ctx)
        if modern != pointer:
            reason = f"legacy spelling of {modern}; {reason}"
        entries.append(MappingEntry(pointer, line, column, status, target, reason))
    entries.extend(_defaults(document, ctx, {e.source for e in entries} | {_modern(e.source, renamed_from)
                                                                          for e in entries}))
    return entries


def _removed(pointer: str) -> str | None:
    """Why DeepSpeed no longer has this key (or its section), if it was removed."""
    tokens = split_pointer(pointer)
    for depth in range(len(tokens), 0, -1):
        key = key_index().get("/" + "/".join(tokens[:depth]))
        if key is not None and key.removed:
            return key.removed
    return None


def _normalised(document: Document) -> dict:
    from shardshift.formats.deepspeed.reader import _normalise

    data = document.data if isinstance(document.data, dict) else {}
    return _normalise(data)[0]


def _defaults(document: Document, ctx: _Context, seen: set[str]) -> list[MappingEntry]:
    """Entries for settings the source leaves out but DeepSpeed fills in, which the module states."""
    s = ctx.settings
    found: list[tuple[str, str, str | None, str]] = []
    if "/gradient_clipping" not in seen:
        found.append(("/gradient_clipping", E, "GRADIENT_CLIPPING = 1.0", "not set: DeepSpeed 0.19.3+ clips the "
                      "gradient norm at 1.0 by default (0, no clipping, before); the module states 1.0"))
    if s.param_dtype in ("bf16", "fp16") and "/communication_data_type" not in seen:
        torch_name = "bfloat16" if s.param_dtype == "bf16" else "float16"
        found.append(("/communication_data_type", A, "REDUCE_DTYPE = torch.float32", f"not set: DeepSpeed reduces "
                      f"gradients in {s.param_dtype} (the training dtype); the module reduces and accumulates them in "
                      f"fp32: more accurate, twice the traffic; set REDUCE_DTYPE = torch.{torch_name} to match"))
    if s.param_dtype == "bf16" and "/bf16/check_grad_overflow" not in seen and s.stage == 3:
        found.append(("/bf16/check_grad_overflow", E, "SKIP_NONFINITE_STEPS = False", f"not set: {ZERO3_BF16_OVERFLOW}"))
    elif s.param_dtype == "bf16" and "/bf16/check_grad_overflow" not in seen:
        found.append(("/bf16/check_grad_overflow", E, "SKIP_NONFINITE_STEPS = True", "not set: DeepSpeed 0.19.3+ "
                      "skips steps whose gradients are inf or nan"))
    if "/zero_optimization/stage" not in seen and s.stage == 0:
        found.append(("/zero_optimization/stage", A, "RESHARD_AFTER_FORWARD = False", "not set: stage 0 (no "
                      "sharding) has no FSDP2 equivalent; the module shards like ZeRO-2 (same math, less memory)"))
    if "/optimizer/type" not in seen:
        found.append(("/optimizer", s.optimizer_status, f"build_optimizer: torch.optim.{s.optimizer_class}",
                      s.optimizer_note or ""))
    elif "weight_decay" in s.optimizer_kwargs and "/optimizer/params/weight_decay" not in seen:
        found.append(("/optimizer/params/weight_decay", E, "OPTIMIZER_KWARGS['weight_decay']",
                      f"not set: DeepSpeed's default {s.optimizer_kwargs['weight_decay']} is written explicitly "
                      "(torch's AdamW default is 0.01)"))
    if s.scheduler is not None and not s.scheduler.startswith("torch:"):
        for name, value in s.scheduler_kwargs.items():
            if f"/scheduler/params/{name}" not in seen:
                found.append((f"/scheduler/params/{name}", E, f"LR_SCHEDULE[{name!r}]",
                              f"not set: DeepSpeed's default {value!r} is written explicitly"))
    if s.cpu_offload and not any(p in seen for p in (OP + "/pin_memory", OO + "/pin_memory")):
        found.append((OO + "/pin_memory", E, "PIN_MEMORY = True", "not set: DeepSpeed 0.19.5+ pins host memory "
                      "(False before); the module pins it when an accelerator is present"))
    if s.activation_checkpointing and "/activation_checkpointing" not in seen:
        row = row_for("/activation_checkpointing")
        found.append(("/activation_checkpointing", A, "ACTIVATION_CHECKPOINTING = True", row.reason))
    for note in s.notes:
        found.append(("", A, None, note))
    entries = []
    for pointer, status, target, reason in found:
        line, column = document.position(pointer, key=True)
        entries.append(MappingEntry(pointer, line, column, status, target, reason))
    return entries


