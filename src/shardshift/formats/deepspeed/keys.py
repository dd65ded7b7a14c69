"""Every DeepSpeed ds_config key, as data (../shared/reference/deepspeed.md §1).

One row per key: its JSON pointer (``*`` stands for any key, for free-form sections), the value
type DeepSpeed accepts, the default, a one-line description, the ZeRO stages that read it, and
the Plan field it maps to. The reader, the writer, the structural rules and the generated JSON
Schema (schemas/ds_config.schema.json) all read this table.

Types: ``int`` (whole numbers; JSON 5e8 is accepted as an int), ``number``, ``bool``, ``str``,
``enum`` (see ``choices``), ``object``, ``array``, ``any``.

A *strict* section is parsed by a pydantic model with ``extra="forbid"``: DeepSpeed rejects an
unknown key there. Anywhere else DeepSpeed reads with ``dict.get`` and ignores unknown keys.
An *open* section has keys we do not enumerate (kwargs, nested experiment blocks): no
unknown-key checks below it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any


@dataclass(frozen=True, slots=True)
class Key:
    path: str
    type: str
    default: Any = None
    doc: str = ""
    field: str | None = None
    choices: tuple[Any, ...] | None = None
    minimum: float | None = None
    exclusive_minimum: float | None = None
    maximum: float | None = None
    exclusive_maximum: float | None = None
    stages: tuple[int, ...] | None = None
    strict: bool = False  # for object rows: the section rejects unknown keys
    open: bool = False  # for object rows: keys below are not enumerated
    renamed_to: str | None = None  # legacy or alias spelling: the modern pointer
    removed: str | None = None  # no longer a key: why
    removed_in: tuple[int, ...] | None = None  # the DeepSpeed release that rejects it (None: every release)
    nullable: bool = False  # DeepSpeed takes null (the default) here: an Optional field or a .get(..., None)
    str_to_list: bool = False  # a list field whose validator turns a single string into a one-item list
    items: str | None = None  # for array rows: the type every item must have ("str")
    foreign: str | None = None  # not a DeepSpeed key at all: whose it is
    case_insensitive: bool = False
    even: bool = False
    inert: bool = False  # DeepSpeed accepts the key but it has no effect
    rejects_bool: bool = False  # a number field whose validator refuses true/false (no coercion to 1/0)
    rejects_auto: bool = False  # "auto" is not filled by anyone and DeepSpeed raises when it parses it
    bool_only: bool = False  # a bool DeepSpeed raises on unless the value == true or false (1 and 0 pass)
    # typed int by DeepSpeed's validator, but a quantity, not a count: where a release reads the key as written
    # (before its section was validated), a fraction is used as meant
    fraction_meant: bool = False


def _k(path, type_, default=None, doc="", **kw) -> Key:
    return Key(path, type_, default, doc, **kw)


Z = "/zero_optimization"
OP = Z + "/offload_param"
OO = Z + "/offload_optimizer"
S3 = (3,)
S123 = (1, 2, 3)
S12 = (1, 2)
DTYPES = ("fp32", "fp16", "bf16")
# DeepSpeed's DtypeEnum (runtime/config.py): every spelling it converts to a torch dtype, case-sensitive.
# Anything else raises ValueError ("'BF16' is not a valid DtypeEnum") where DeepSpeed converts it.
DTYPE_ENUM: dict[str, tuple[str, ...]] = {
    "fp16": ("fp16", "torch.float16", "float16", "half"),
    "fp32": ("fp32", "torch.float32", "float32", "float"),
    "int8": ("int8", "torch.int8"),
    "bf16": ("bf16", "torch.bfloat16", "bfloat16"),
}
FLOAT_DTYPE_SPELLINGS = DTYPE_ENUM["fp32"] + DTYPE_ENUM["fp16"] + DTYPE_ENUM["bf16"]
# The releases that started rejecting removed sections (DeepSpeedConfigError "... has been removed ...
# See https://github.com/deepspeedai/DeepSpeed/issues/8489", runtime/config.py
# _REMOVED_TOP_LEVEL_CONFIG_KEYS / _REMOVED_ZERO_CONFIG_KEYS, checked by _reject_removed_config_keys).
# Read from the released sources on PyPI: 0.19.6 has no such table and reads every one of these keys;
# 0.19.7 rejects nebula, compression_training, quantize_training, sparse_attention, mics_shard_size and
# mics_hierarchical_params_gather; 0.19.8 adds amp, sparse_gradients, eigenvalue, elasticity,
# graph_harvesting, curriculum_learning, progressive_layer_drop and zeropp_loco_param (for example PR #8562
# "Remove Progressive Layer Dropping (PLD) support", PR #8563 "Remove elastic training"; tracking issue #8489).
# tests/test_deepspeed_agreement.py asserts these rows are exactly the installed 0.19.8's two tables.
R7 = (0, 19, 7)
R8 = (0, 19, 8)

KEYS: tuple[Key, ...] = (
    # --- top level: batch ---------------------------------------------------------------
    _k("/train_batch_size", "int", None, "Global batch size in samples: micro x accumulation x data-parallel size.",
       field="batch.global_", exclusive_minimum=0),
    _k("/train_micro_batch_size_per_gpu", "int", None, "Samples per GPU per forward/backward.",
       field="batch.micro", exclusive_minimum=0),
    _k("/gradient_accumulation_steps", "int", None, "Micro-batches accumulated before each optimizer step.",
       field="batch.accumulation", exclusive_minimum=0),
    _k("/managed_gradient_accumulation", "bool", True, "False: the caller steps at the accumulation boundary (0.19.4+)."),
    # --- top level: logging -------------------------------------------------------------
    _k("/steps_per_print", "int", None, "Print progress every N steps (None: no periodic print)."),
    _k("/wall_clock_breakdown", "bool", False, "Time forward/backward/step (adds device syncs)."),
    _k("/memory_breakdown", "bool", False, "Print memory use."),
    _k("/dump_state", "bool", False, "Print the engine state after initialisation."),
    _k("/disable_python_gc", "bool", False, "Disable Python's garbage collector during training."),
    _k("/log_level", "str", None, "DeepSpeed log level (0.19.3+)."),
    # --- top level: gradients and communication ----------------------------------------
    _k("/gradient_clipping", "number", 1.0, "Clip the global gradient norm to this value; 0 disables (default 1.0 since 0.19.3, 0 before).",
       field="gradient_clipping", minimum=0),
    _k("/communication_data_type", "enum", None, "dtype of gradient all-reduce / reduce-scatter (default: the training dtype).",
       field="communication.dtype", choices=DTYPES, case_insensitive=True, rejects_auto=True),
    _k("/seq_parallel_communication_data_type", "enum", "fp32", "dtype of Ulysses sequence-parallel communication.",
       choices=DTYPES, case_insensitive=True, rejects_auto=True),
    _k("/prescale_gradients", "bool", False, "Divide gradients before the all-reduce instead of after."),
    _k("/gradient_predivide_factor", "number", 1.0, "Partial pre-division factor for gradient averaging."),
    _k("/gradient_allreduce_op", "enum", "mean", "Reduce op for gradients (DeepSpeed HEAD only).",
       choices=("mean", "sum"), case_insensitive=True, rejects_auto=True),
    _k("/sparse_gradients", "bool", False, "Sparse gradients for embeddings (essentially deprecated).",
       removed_in=R8, removed="removed from DeepSpeed (0.19.8 rejects the file; an nn.Embedding(sparse=True) is still reduced sparsely without it)"),
    _k("/disable_allgather", "bool", False, "Disable all-gather (legacy)."),
    _k("/graph_harvesting", "bool", False, "Capture CUDA graphs.", removed_in=R8, removed="removed from DeepSpeed (0.19.8 rejects the file)"),
    _k("/zero_allow_untested_optimizer", "bool", False, "Allow ZeRO with optimizers outside DeepSpeed's tested list."),
    _k("/zero_force_ds_cpu_optimizer", "bool", True, "With ZeRO-Offload, require a DeepSpeed CPU optimizer."),
    _k("/dataloader_drop_last", "bool", False, "Drop the last incomplete batch of deepspeed_io loaders."),
    _k("/vocabulary_size", "int", None, "Vocabulary size (only a warning if not a multiple of 8).", field="model.vocab"),
    _k("/use_data_before_expert_parallelism", "bool", False, "MoE topology ordering."),
    _k("/sequence_parallel_size", "int", None, "Ulysses sequence-parallel degree; the data-parallel size is world / this.",
       field="parallelism.context", exclusive_minimum=0),
    _k("/data_parallel_size", "int", None, "Data-parallel size for a device mesh.", exclusive_minimum=0),
    _k("/allgather_size", "int", 500000000, "Legacy all-gather size for `zero_optimization: true`."),
    # --- precision ----------------------------------------------------------------------
    _k("/fp16", "object", None, "fp16 mixed precision with loss scaling.", strict=True),
    _k("/fp16/enabled", "bool", False, "Train in fp16.", field="precision.param_dtype"),
    _k("/fp16/auto_cast", "bool", False, "Cast forward inputs to fp16."),
    _k("/fp16/loss_scale", "number", 0, "0: dynamic loss scaling; > 0: a static scale.", field="precision.loss_scale", minimum=0,
       rejects_bool=True),
    _k("/fp16/initial_scale_power", "int", 16, "Dynamic loss scale starts at 2**power.", field="precision.initial_scale_power"),
    _k("/fp16/loss_scale_window", "int", 1000, "Steps without overflow before the scale doubles.",
       field="precision.loss_scale_window", rejects_bool=True),
    _k("/fp16/hysteresis", "int", 2, "Overflows tolerated before the scale halves.", field="precision.hysteresis"),
    _k("/fp16/consecutive_hysteresis", "bool", False, "Refill hysteresis on good steps.", field="precision.consecutive_hysteresis"),
    _k("/fp16/min_loss_scale", "int", 1, "Lowest dynamic loss scale.", field="precision.min_loss_scale",
       rejects_bool=True, fraction_meant=True),
    _k("/fp16/fp16_master_weights_and_grads", "bool", False, "Keep master weights and gradients in fp16 (ZeRO 1-3)."),
    _k("/bf16", "object", None, "bf16 mixed precision.", strict=True),
    _k("/bf16/enabled", "bool", False, "Train in bf16.", field="precision.param_dtype"),
    _k("/bf16/immediate_grad_update", "bool", False, "BF16_Optimizer: apply gradients immediately."),
    _k("/bf16/check_grad_overflow", "bool", True, "Skip steps with inf/nan gradients (default True since 0.19.3)."),
    _k("/bf16/bf16_master_weights_and_grads", "bool", False, "Keep master weights and gradients in bf16 (ZeRO 1-3)."),
    _k("/bf16/bf16_optimizer_states", "bool", False, "Keep optimizer states in bf16."),
    _k("/bfloat16", "object", None, "Legacy spelling of `bf16`.", strict=True, renamed_to="/bf16"),
    _k("/bfloat16/enabled", "bool", False, "Train in bf16.", renamed_to="/bf16/enabled"),
    _k("/bfloat16/immediate_grad_update", "bool", False, "", renamed_to="/bf16/immediate_grad_update"),
    _k("/bfloat16/check_grad_overflow", "bool", True, "", renamed_to="/bf16/check_grad_overflow"),
    _k("/bfloat16/bf16_master_weights_and_grads", "bool", False, "", renamed_to="/bf16/bf16_master_weights_and_grads"),
    _k("/bfloat16/bf16_optimizer_states", "bool", False, "", renamed_to="/bf16/bf16_optimizer_states"),
    _k("/amp", "object", None, "NVIDIA apex AMP; any apex `amp.initialize` argument is passed through.", open=True,
       removed_in=R8, removed="removed from DeepSpeed (0.19.8 rejects the file: Apex AMP is gone; use fp16, bf16 or torch_autocast)"),
    _k("/amp/enabled", "bool", False, "Use apex AMP (incompatible with ZeRO and fp16/bf16)."),
    _k("/torch_autocast", "object", None, "torch.autocast around forward.", strict=False),
    _k("/torch_autocast/enabled", "bool", False, "Enable torch.autocast."),
    _k("/torch_autocast/dtype", "enum", None, "Autocast dtype (a DtypeEnum spelling; checked even when disabled).",
       choices=sum(DTYPE_ENUM.values(), ())),
    _k("/torch_autocast/lower_precision_safe_modules", "array", None, "Module class names safe in lower precision.",
       items="str"),
    _k("/data_types", "object", None, "Dtypes of accumulation, params and buffers."),
    _k("/data_types/grad_accum_dtype", "enum", None, "dtype gradients accumulate in (default: the model dtype).",
       field="precision.grad_accum_dtype", choices=FLOAT_DTYPE_SPELLINGS),
    _k("/data_types/param_dtype", "str", None, "Parameter dtype (must match fp16/bf16 mode)."),
    _k("/data_types/buffer_dtype", "str", None, "Buffer dtype."),
    _k("/data_types/keep_in_fp32_modules", "array", "auto", "\"auto\" or a list of module-name patterns kept in fp32.",
       items="str"),
    # --- optimizer and scheduler --------------------------------------------------------
    _k("/optimizer", "object", None, "The optimizer DeepSpeed builds (a client optimizer passed to initialize wins)."),
    _k("/optimizer/type", "str", None, "DeepSpeed name (Adam, AdamW, Lamb, OneBitAdam, ...) or a torch.optim class name.",
       field="optimizer.name"),
    _k("/optimizer/params", "object", None, "Constructor arguments of the optimizer.", open=True),
    _k("/optimizer/legacy_fusion", "bool", False, "Legacy fused optimizer path."),
    _k("/scheduler", "object", None, "The LR scheduler DeepSpeed builds, stepped once per optimizer step."),
    _k("/scheduler/type", "str", None, "WarmupLR, WarmupDecayLR, WarmupCosineLR, OneCycle, LRRangeTest or a torch scheduler.",
       field="scheduler.name"),
    _k("/scheduler/params", "object", None, "Constructor arguments of the scheduler.", open=True),
    # --- zero_optimization --------------------------------------------------------------
    _k(Z, "object", None, "ZeRO sharding (stage 0-3), buckets and offload.", strict=True),
    _k(Z + "/stage", "int", 0, "0: off; 1: optimizer state; 2: + gradients; 3: + parameters sharded.",
       field="sharding.stage", minimum=0, maximum=3),
    _k(Z + "/contiguous_gradients", "bool", True, "Copy gradients into a contiguous buffer.", stages=S123,
       field="communication.contiguous_gradients"),
    _k(Z + "/reduce_scatter", "bool", True, "Reduce-scatter instead of all-reduce for gradients.", stages=S123,
       field="communication.reduce_scatter"),
    _k(Z + "/reduce_bucket_size", "int", 500000000, "Elements reduced at a time.", stages=S123,
       field="communication.reduce_bucket_elements", exclusive_minimum=0),
    _k(Z + "/use_multi_rank_bucket_allreduce", "bool", True, "Multi-rank bucket all-reduce.", stages=S12),
    _k(Z + "/allgather_partitions", "bool", True, "All-gather updated partitions at step end.", stages=S12,
       field="communication.allgather_partitions"),
    _k(Z + "/allgather_bucket_size", "int", 500000000, "Elements all-gathered at a time (even; ignored by ZeRO-3).",
       stages=S12, field="communication.allgather_bucket_elements", minimum=0, even=True),
    _k(Z + "/overlap_comm", "bool", None, "Overlap gradient reduction with backward (default: True only at stage 3).",
       stages=S123, field="communication.overlap"),
    _k(Z + "/load_from_fp32_weights", "bool", True, "Initialise fp32 master weights from the checkpoint's fp32 copy."),
    _k(Z + "/elastic_checkpoint", "bool", False, "Elastic checkpoint (unsupported at stage 3)."),
    _k(Z + "/zenflow", "object", None, "ZenFlow configuration.", strict=True),
    _k(Z + "/zenflow/topk_ratio", "number", 0.1, "Share of gradients updated on the GPU (0 < ratio < 1).",
       exclusive_minimum=0, exclusive_maximum=1),
    _k(Z + "/zenflow/select_strategy", "enum", "auto", "", choices=("auto", "step", "epoch")),
    _k(Z + "/zenflow/select_interval", "int", "auto", "\"auto\" or an int."),
    _k(Z + "/zenflow/update_interval", "int", "auto", "\"auto\" or an int (at least 1).", minimum=1),
    _k(Z + "/zenflow/overlap_step", "bool", False, ""),
    _k(Z + "/zenflow/offload", "bool", False, ""),
    _k(Z + "/zenflow/auto_ratio", "number", 0.99, "", minimum=0, maximum=1),
    _k(Z + "/zenflow/full_warm_up_rounds", "int", 0, ""),
    _k(Z + "/zenflow/pt_reserved_cores_perc", "number", 0.5, "", minimum=0, maximum=1),
    _k(Z + "/zenflow/steps_per_epoch", "int", None, "Set by DeepSpeed at run time, not by users."),
    _k(Z + "/sub_group_size", "int", 1000000000, "Optimizer-step tiling in elements.", stages=S3, minimum=0),
    _k(Z + "/prefetch_bucket_size", "int", 50000000, "Elements prefetched ahead (ZeRO-3).", stages=S3,
       renamed_to=Z + "/stage3_prefetch_bucket_size", minimum=0),
    _k(Z + "/stage3_prefetch_bucket_size", "int", 50000000, "Elements of parameters prefetched ahead.", stages=S3,
       field="communication.prefetch_bucket_elements", minimum=0),
    _k(Z + "/param_persistence_threshold", "int", 100000, "", stages=S3,
       renamed_to=Z + "/stage3_param_persistence_threshold", minimum=0),
    _k(Z + "/stage3_param_persistence_threshold", "int", 100000, "Parameters with fewer elements stay unpartitioned.",
       stages=S3, field="communication.param_persistence_threshold", minimum=0),
    _k(Z + "/model_persistence_threshold", "int", None, "", stages=S3,
       renamed_to=Z + "/stage3_model_persistence_threshold", minimum=0),
    _k(Z + "/stage3_model_persistence_threshold", "int", None, "Cap on total persistent elements (default sys.maxsize).",
       stages=S3, minimum=0),
    _k(Z + "/max_live_parameters", "int", 1000000000, "", stages=S3, renamed_to=Z + "/stage3_max_live_parameters",
       minimum=0),
    _k(Z + "/stage3_max_live_parameters", "int", 1000000000, "Elements of gathered parameters kept live.", stages=S3,
       minimum=0),
    _k(Z + "/max_reuse_distance", "int", 1000000000, "", stages=S3, renamed_to=Z + "/stage3_max_reuse_distance",
       minimum=0),
    _k(Z + "/stage3_max_reuse_distance", "int", 1000000000, "Do not release a parameter reused within this many elements.",
       stages=S3, minimum=0),
    _k(Z + "/gather_16bit_weights_on_model_save", "bool", False, "", stages=S3,
       renamed_to=Z + "/stage3_gather_16bit_weights_on_model_save"),
    _k(Z + "/stage3_gather_16bit_weights_on_model_save", "bool", False,
       "Gather full 16-bit weights in save_16bit_model (else it saves nothing).", stages=S3),
    _k(Z + "/stage3_gather_fp16_weights_on_model_save", "bool", False, "Deprecated spelling.", stages=S3,
       renamed_to=Z + "/stage3_gather_16bit_weights_on_model_save"),
    # No minimum: DeepSpeed has none (a value <= 0 groups nothing; deepspeed.initialize takes -5).
    _k(Z + "/module_granularity_threshold", "int", 0, "", stages=S3,
       renamed_to=Z + "/stage3_module_granularity_threshold"),
    _k(Z + "/stage3_module_granularity_threshold", "int", 0, "Group small modules into one fetch unit.", stages=S3),
    _k(Z + "/use_all_reduce_for_fetch_params", "bool", False, "", stages=S3,
       renamed_to=Z + "/stage3_use_all_reduce_for_fetch_params"),
    _k(Z + "/stage3_use_all_reduce_for_fetch_params", "bool", False, "Fetch parameters with all-reduce.", stages=S3),
    _k(Z + "/allgather_sequential", "bool", False, "", stages=S3, renamed_to=Z + "/stage3_allgather_sequential"),
    _k(Z + "/stage3_allgather_sequential", "bool", False, "Gather parameters one at a time (0.18.5+).", stages=S3),
    _k(Z + "/ignore_unused_parameters", "bool", True, "Tolerate parameters without gradients.", stages=(2,)),
    _k(Z + "/legacy_stage1", "bool", False, "Legacy stage 1 (raises at init when true)."),
    _k(Z + "/round_robin_gradients", "bool", False, "Round-robin gradient ownership (for CPU offload).", stages=S12),
    _k(Z + "/compute_grad_norm", "bool", True, "Compute the global gradient norm (false only at stage 1/2, without clipping).",
       stages=S12),
    _k(Z + "/parameter_alignment", "bool", False, "Pad flat buffers so each parameter is 16-byte aligned.", stages=S12),
    _k(Z + "/zero_hpz_partition_size", "int", 1, "ZeRO++ hpZ secondary partition size.", stages=S3, minimum=0),
    _k(Z + "/zero_quantized_weights", "bool", False, "ZeRO++ qwZ quantized weight all-gather.", stages=S3),
    _k(Z + "/zero_quantized_nontrainable_weights", "bool", False, "Quantize frozen weights (LoRA).", stages=S3),
    _k(Z + "/zero_quantized_gradients", "bool", False, "ZeRO++ qgZ quantized gradient reduce.", stages=S3),
    _k(Z + "/zeropp_loco_param", "object", None, "ZeRO++ LoCo error feedback.", open=True, removed_in=R8, removed="removed from DeepSpeed (0.19.8 rejects the file)"),
    _k(Z + "/mics_shard_size", "int", -1, "MiCS shard group size.", stages=S3, removed_in=R7, removed="removed from DeepSpeed (0.19.8 rejects the file: MiCS is gone)"),
    _k(Z + "/mics_hierarchical_params_gather", "bool", False, "MiCS hierarchical all-gather.", stages=S3,
       removed_in=R7, removed="removed from DeepSpeed (0.19.8 rejects the file: MiCS is gone)"),
    _k(Z + "/memory_efficient_linear", "bool", True, "Memory-efficient linear in ZeRO-3.", stages=S3),
    _k(Z + "/pipeline_loading_checkpoint", "bool", False, "Pipeline checkpoint loading.", stages=S3),
    _k(Z + "/override_module_apply", "bool", True, "Override nn.Module.apply under zero.Init.", stages=S3),
    _k(Z + "/log_trace_cache_warnings", "bool", False, "Log trace-cache warnings.", stages=S3),
    _k(Z + "/enable_sanity_checks", "bool", False, "Extra ZeRO sanity checks."),
    _k(Z + "/save_muon_momentum_buffer_in_memory", "bool", False, "Keep Muon momentum in memory (stage 3 + NVMe).", stages=S3),
    _k(Z + "/leaf_module", "object", None, "Modules ZeRO-3 treats as one leaf (MoE blocks).", strict=True, stages=S3),
    _k(Z + "/leaf_module/classes", "array", None, "Class names."),
    _k(Z + "/leaf_module/names", "array", None, "Module names."),
    _k(Z + "/leaf_module/name_suffixes", "array", None, "Module name suffixes."),
    _k(Z + "/cpu_offload", "bool", None, "Deprecated: use offload_optimizer {\"device\": \"cpu\"}.",
       renamed_to=OO + "/device"),
    _k(Z + "/cpu_offload_param", "bool", None, "Deprecated: use offload_param {\"device\": \"cpu\"}.",
       renamed_to=OP + "/device"),
    _k(Z + "/cpu_offload_use_pin_memory", "bool", None, "Deprecated and without effect: use offload_*.pin_memory.",
       renamed_to=OO + "/pin_memory", inert=True),
    # --- offload ------------------------------------------------------------------------
    _k(OP, "object", None, "Parameter offload (stage 3 only).", strict=True, stages=S3),
    _k(OP + "/device", "enum", "none", "none, cpu or nvme (a block without device offloads nothing).",
       field="offload.params.device", choices=("none", "cpu", "nvme")),
    _k(OP + "/nvme_path", "str", None, "NVMe directory (required for nvme).", field="offload.params.nvme_path"),
    _k(OP + "/pin_memory", "bool", True, "Pinned host memory (default True since 0.19.5).", field="offload.params.pin_memory"),
    _k(OP + "/buffer_count", "int", 5, "NVMe parameter buffers.", minimum=0),
    _k(OP + "/buffer_size", "int", 100000000, "Elements per NVMe parameter buffer (>= the largest parameter).", minimum=0),
    _k(OP + "/max_in_cpu", "int", 1000000000, "Elements of parameters kept in CPU memory with NVMe.", minimum=0),
    _k(OO, "object", None, "Optimizer state offload (stages 1-3).", strict=True, stages=S123),
    _k(OO + "/device", "enum", "none", "none, cpu or nvme (nvme only at stage 3; a block without device offloads nothing).",
       field="offload.optimizer.device", choices=("none", "cpu", "nvme")),
    _k(OO + "/nvme_path", "str", None, "NVMe directory (required for nvme).", field="offload.optimizer.nvme_path"),
    _k(OO + "/pin_memory", "bool", True, "Pinned host memory (default True since 0.19.5).",
       field="offload.optimizer.pin_memory"),
    _k(OO + "/buffer_count", "int", 4, "NVMe optimizer buffers (>= states per parameter).", minimum=0),
    _k(OO + "/pipeline_read", "bool", False, "Overlap NVMe reads."),
    _k(OO + "/pipeline_write", "bool", False, "Overlap NVMe writes."),
    _k(OO + "/fast_init", "bool", False, "Fast NVMe initialisation."),
    _k(OO + "/ratio", "number", 1.0, "Fraction of optimizer state offloaded (< 1 needs stage 3).",
       field="offload.optimizer.ratio", minimum=0, maximum=1),
    _k(OO + "/super_offload", "bool", False, "SuperOffload for superchips (stage 3).", stages=S3),
    _k(OO + "/cpuadam_cores_perc", "number", 0.8, "Share of CPU cores for CPU Adam.", minimum=0, maximum=1),
    # --- activation checkpointing (permissive) ------------------------------------------
    _k("/activation_checkpointing", "object", None,
       "DeepSpeed activation checkpointing (only for models that call deepspeed.checkpointing)."),
    _k("/activation_checkpointing/partition_activations", "bool", False, "Partition checkpoints across model-parallel ranks.",
       field="activation_checkpointing.partition_activations"),
    _k("/activation_checkpointing/contiguous_memory_optimization", "bool", False, "Copy checkpoints into a contiguous buffer.",
       field="activation_checkpointing.contiguous_memory_optimization"),
    _k("/activation_checkpointing/cpu_checkpointing", "bool", False, "Offload checkpoints to CPU.",
       field="activation_checkpointing.cpu_checkpointing"),
    _k("/activation_checkpointing/number_checkpoints", "int", None, "Number of checkpoints.",
       field="activation_checkpointing.number_checkpoints"),
    _k("/activation_checkpointing/synchronize_checkpoint_boundary", "bool", False, "Synchronise at checkpoint boundaries.",
       field="activation_checkpointing.synchronize_checkpoint_boundary"),
    _k("/activation_checkpointing/profile", "bool", False, "Profile checkpointing.", field="activation_checkpointing.profile"),
    # --- monitoring ---------------------------------------------------------------------
    _k("/flops_profiler", "object", None, "FLOPs profiler."),
    _k("/flops_profiler/enabled", "bool", False, ""),
    _k("/flops_profiler/recompute_fwd_factor", "number", 0.0, ""),
    _k("/flops_profiler/profile_step", "int", 1, ""),
    _k("/flops_profiler/module_depth", "int", -1, ""),
    _k("/flops_profiler/top_modules", "int", 1, ""),
    _k("/flops_profiler/detailed", "bool", True, ""),
    _k("/flops_profiler/output_file", "str", None, ""),
    _k("/tensorboard", "object", None, "TensorBoard monitor.", strict=True),
    _k("/tensorboard/enabled", "bool", False, ""),
    _k("/tensorboard/output_path", "str", "", ""),
    _k("/tensorboard/job_name", "str", "DeepSpeedJobName", ""),
    _k("/csv_monitor", "object", None, "CSV monitor.", strict=True),
    _k("/csv_monitor/enabled", "bool", False, ""),
    _k("/csv_monitor/output_path", "str", "", ""),
    _k("/csv_monitor/job_name", "str", "DeepSpeedJobName", ""),
    _k("/wandb", "object", None, "Weights & Biases monitor.", strict=True),
    _k("/wandb/enabled", "bool", False, ""),
    _k("/wandb/group", "str", None, ""),
    _k("/wandb/team", "str", None, ""),
    _k("/wandb/project", "str", "deepspeed", ""),
    _k("/comet", "object", None, "Comet monitor.", strict=True),
    *(_k("/comet/" + name, t, None, "") for name, t in (
        ("enabled", "bool"), ("samples_log_interval", "int"), ("project", "str"), ("workspace", "str"),
        ("api_key", "str"), ("experiment_name", "str"), ("experiment_key", "str"), ("online", "bool"), ("mode", "str"))),
    _k("/comms_logger", "object", None, "Communication logger.", strict=True),
    _k("/comms_logger/enabled", "bool", False, ""),
    _k("/comms_logger/prof_all", "bool", True, ""),
    _k("/comms_logger/prof_ops", "array", None, ""),
    _k("/comms_logger/verbose", "bool", False, ""),
    _k("/comms_logger/debug", "bool", False, ""),
    _k("/timers", "object", None, "Engine timers."),
    _k("/timers/throughput", "object", None, "Throughput timer.", strict=True),
    _k("/timers/throughput/enabled", "bool", True, ""),
    _k("/timers/throughput/synchronized", "bool", True, ""),
    # --- parallelism and engine variants ------------------------------------------------
    _k("/pipeline", "object", None, "Pipeline engine settings (stages/partition/seed_layers are never read).", open=True),
    _k("/pipeline/stages", "any", "auto", "Never read: PipelineModule(num_stages=...) decides."),
    _k("/pipeline/partition", "str", "best", "Never read: PipelineModule(partition_method=...) decides."),
    _k("/pipeline/seed_layers", "bool", False, "Never read."),
    _k("/pipeline/activation_checkpoint_interval", "int", 0, ""),
    _k("/pipeline/pipe_partitioned", "bool", True, ""),
    _k("/pipeline/grad_partitioned", "bool", True, ""),
    _k("/pipeline/use_reentrant", "bool", True, ""),
    _k("/tensor_parallel", "object", None, "AutoTP tensor parallelism.", strict=True),
    # No minimum: TPTrainingConfig has none and deepspeed.initialize trains with -1 (AutoTP off).
    _k("/tensor_parallel/autotp_size", "int", 0, "AutoTP degree.", field="parallelism.tensor"),
    _k("/tensor_parallel/dtype", "any", None, "",
       removed="not settable from JSON: DeepSpeed expects a torch.dtype object there and rejects any JSON value"),
    _k("/tensor_parallel/tp_overlap_comm", "bool", False, "Overlap the AutoTP all-reduce with compute."),
    _k("/tensor_parallel/vocab_parallel_lm_head", "bool", None, "Shard the vocabulary of the LM head."),
    _k("/tensor_parallel/vocab_parallel_ce_backend", "enum", "torch", "Vocabulary-parallel cross-entropy backend.",
       choices=("torch", "liger")),
    *(_k(f"/tensor_parallel/{section}", "object", None, "Tensor-parallel group settings.", strict=True)
      for section in ("tensor_parallel", "tp")),
    *(_k(f"/tensor_parallel/{section}/{name}", t, d, "") for section in ("tensor_parallel", "tp") for name, t, d in (
        ("tp_size", "int", 1), ("tp_grain_size", "int", 1), ("mpu", "any", None), ("tp_group", "any", None))),
    _k("/tensor_parallel/injection_policy_tuple", "array", None, "AutoTP injection policy."),
    _k("/tensor_parallel/partition_config", "object", None, "Configurable AutoTP layer partitioning.", open=True),
    _k("/tensor_parallel/preset_model", "str", None, "Built-in AutoTP preset (llama, qwen2, ...)."),
    _k("/tensor_parallel/keep_module_on_host", "bool", False, "Keep checkpoint tensors on the host while loading."),
    _k("/tensor_parallel/replace_with_kernel_inject", "bool", False, "Inject inference kernels."),
    _k("/tensor_parallel/kernel_inject", "bool", False, "Alias of replace_with_kernel_inject."),
    _k("/expert_parallel", "object", None, "AutoEP expert parallelism.", open=True),
    _k("/expert_parallel/autoep_size", "int", 1, "Expert-parallel degree.", field="parallelism.expert"),
    _k("/hybrid_engine", "object", None, "Hybrid engine (RLHF).", strict=True),
    *(_k("/hybrid_engine/" + name, t, d, "") for name, t, d in (
        ("enabled", "bool", False), ("inference_tp_size", "int", 1),
        ("release_inference_cache", "bool", False), ("pin_parameters", "bool", True),
        ("tp_gather_partition_size", "int", 8), ("enable_cuda_graph", "bool", False))),
    _k("/hybrid_engine/max_out_tokens", "int", 512, "", exclusive_minimum=0),
    _k("/compile", "object", None, "DeepCompile (torch.compile itself is engine.compile(), not this block).", strict=True),
    *(_k("/compile/" + name, t, d, "") for name, t, d in (
        ("deepcompile", "bool", False), ("autoep_non_moe", "bool", False), ("free_activation", "bool", False),
        ("free_activation_threshold", "int", 10 * 1024 * 1024), ("offload_activation", "bool", False),
        ("offload_activation_pin_memory", "bool", True), ("offload_opt_states", "bool", False),
        ("double_buffer", "bool", True), ("symmetric_memory", "bool", False), ("debug_log", "bool", False),
        ("offload_parameters", "bool", False), ("sync_before_reduce", "bool", False), ("sync_after_reduce", "bool", False),
        ("sync_before_allgather", "bool", False), ("sync_after_allgather", "bool", False),
        ("keep_int_input_tensors", "bool", True), ("keep_all_input_tensors", "bool", False), ("passes", "array", None))),
    _k("/elasticity", "object", None, "Elastic training (computes the batch sizes itself).", open=True,
       removed_in=R8, removed="removed from DeepSpeed (0.19.8 rejects the file: elastic training is gone; set the batch keys directly)"),
    _k("/elasticity/enabled", "bool", False, ""),
    _k("/checkpoint", "object", None, "Checkpoint options."),
    _k("/checkpoint/checkpoint_serialization", "bool", True, "torch.save serialization of checkpoints."),
    _k("/checkpoint/parallel_write", "object", None, "Parallel checkpoint writing."),
    _k("/checkpoint/parallel_write/pipeline_stage", "bool", False, "Write pipeline stages in parallel.",
       bool_only=True),
    _k("/checkpoint/writer", "object", None, "Checkpoint writer (FastPersist)."),
    _k("/checkpoint/writer/type", "enum", "fast", "mock, python or fast.", choices=("mock", "python", "fast"),
       case_insensitive=True),
    _k("/checkpoint/writer/io_buffer_size", "int", 64 * 1024 ** 2, "Bytes."),
    _k("/checkpoint/writer/io_buffer_double", "bool", True, ""),
    _k("/checkpoint/writer/show_statistics", "bool", False, ""),
    _k("/checkpoint/writer/data_parallel", "enum", None, "replica, socket or machine.",
       choices=("replica", "socket", "machine"), case_insensitive=True),
    _k("/checkpoint/writer/decoupled", "bool", False, ""),
    _k("/checkpoint/writer/io_multiplier", "int", 1, ""),
    _k("/checkpoint/tag_validation", "enum", "Warn", "Warn, Ignore or Fail.", choices=("warn", "ignore", "fail"),
       case_insensitive=True),
    _k("/checkpoint/load_universal", "bool", False, ""),
    _k("/checkpoint/use_node_local_storage", "bool", False, ""),
    _k("/aio", "object", None, "Async I/O for NVMe offload."),
    _k("/aio/block_size", "int", 1048576, ""),
    _k("/aio/queue_depth", "int", 8, ""),
    _k("/aio/intra_op_parallelism", "int", 1, ""),
    _k("/aio/thread_count", "int", 1, "Ignored since 0.16.4: renamed intra_op_parallelism.",
       renamed_to="/aio/intra_op_parallelism", inert=True),
    _k("/aio/single_submit", "bool", False, ""),
    _k("/aio/overlap_events", "bool", True, ""),
    _k("/aio/use_gds", "bool", False, ""),
    _k("/nebula", "object", None, "Nebula checkpointing.", open=True, removed_in=R7, removed="removed from DeepSpeed (0.19.8 rejects the file)"),
    _k("/datastates_ckpt", "any", None, "DataStates checkpointing."),
    _k("/autotuning", "object", None, "Autotuner.", open=True),
    _k("/data_efficiency", "object", None, "Data efficiency library.", open=True),
    _k("/curriculum_learning", "object", None, "Legacy curriculum learning.", open=True,
       removed_in=R8, removed="removed from DeepSpeed (0.19.8 rejects the file; use data_efficiency.data_sampling.curriculum_learning)"),
    _k("/compression_training", "object", None, "Compression training.", open=True, removed_in=R7, removed="removed from DeepSpeed (0.19.8 rejects the file: the compression library is gone)"),
    _k("/quantize_training", "object", None, "MoQ quantize training.", open=True, removed_in=R7, removed="removed from DeepSpeed (0.19.8 rejects the file: MoQ is gone)"),
    _k("/weight_quantization", "object", None, "Inference weight quantization.", strict=True),
    _k("/weight_quantization/enabled", "bool", True, ""),
    _k("/weight_quantization/num_bits", "int", 8, ""),
    _k("/weight_quantization/q_type", "enum", "symmetric", "", choices=("symmetric", "asymmetric")),
    _k("/weight_quantization/q_groups", "int", 1, ""),
    _k("/weight_quantization/quantized_initialization", "object", None, "", open=True),
    _k("/weight_quantization/post_init_quant", "object", None, "", open=True),
    _k("/sparse_attention", "object", None, "Sparse attention.", open=True, removed_in=R7, removed="removed from DeepSpeed (0.19.8 rejects the file)"),
    _k("/progressive_layer_drop", "object", None, "Progressive layer drop.", open=True, removed_in=R8, removed="removed from DeepSpeed (0.19.8 rejects the file)"),
    _k("/eigenvalue", "object", None, "Eigenvalue computation for MoQ.", open=True, removed_in=R8, removed="removed from DeepSpeed (0.19.8 rejects the file: MoQ is gone)"),
    # --- not DeepSpeed keys -------------------------------------------------------------
    _k("/msamp", "any", None, "", foreign="injected by Accelerate for MS-AMP; plain DeepSpeed ignores it"),
    _k("/zero3_init_flag", "any", None, "",
       foreign="an Accelerate plugin option (deepspeed_config.zero3_init_flag in the Accelerate YAML), not a ds_config key"),
    _k("/zero3_save_16bit_model", "any", None, "",
       foreign="an Accelerate plugin option; in ds_config write zero_optimization.stage3_gather_16bit_weights_on_model_save"),
    _k("/zero_optimization/grad_hooks", "any", None, "",
       removed="documented in config-json.md but not a field: DeepSpeed rejects it"),
)


# Values DeepSpeed 0.19.8 takes although they are not of the row's type. Facts read from DeepSpeed,
# not written by hand: tests/test_deepspeed_agreement.py validates each pydantic section model with
# every field set to null (and every list field set to a string) and asserts that these sets are
# exactly the fields it accepts. null: an Optional[...] annotation, or a "before" validator that maps
# None to the defaults (leaf_module); for data_types DeepSpeedConfig reads `.get(key, None)` and None
# is the default (runtime/config.py; the oracle test parses each).
NULLABLE: frozenset[str] = frozenset({
    Z + "/overlap_comm", OP, OO, Z + "/zenflow", Z + "/leaf_module",
    Z + "/cpu_offload", Z + "/cpu_offload_param", Z + "/cpu_offload_use_pin_memory",
    OP + "/nvme_path", OO + "/nvme_path", Z + "/zenflow/steps_per_epoch",
    "/wandb/group", "/wandb/team",
    *("/comet/" + name for name in ("project", "workspace", "api_key", "experiment_name", "experiment_key",
                                    "online", "mode")),
    "/compile/passes",
    "/tensor_parallel/vocab_parallel_lm_head", "/tensor_parallel/injection_policy_tuple",
    "/tensor_parallel/partition_config", "/tensor_parallel/preset_model",
    *(f"/tensor_parallel/{section}/{name}" for section in ("tensor_parallel", "tp") for name in ("mpu", "tp_group")),
    "/data_types/grad_accum_dtype", "/data_types/param_dtype", "/data_types/buffer_dtype",
    # Read with dict.get / get_scalar_param and None as the default, and confirmed through
    # deepspeed.initialize and two training steps (tests/test_deepspeed_agreement.py); not
    # gradient_clipping (null fails at the first step) nor the sections DeepSpeed hands to `**`.
    "/bf16", "/aio", "/expert_parallel", "/communication_data_type", "/steps_per_print",
    # None is DeepSpeed's own default, read with get_scalar_param: profiling/constants.py
    # FLOPS_PROFILER_OUTPUT_FILE_DEFAULT, activation_checkpointing/config.py ACT_CHKPT_NUMBER_CHECKPOINTS_DEFAULT
    "/flops_profiler/output_file", "/activation_checkpointing/number_checkpoints",
    # runtime/config.py get_train_batch_size, get_train_micro_batch_size_per_gpu and
    # get_gradient_accumulation_steps: get_scalar_param with a None default, and
    # _set_batch_related_parameters derives a None batch size from the other two (null is unset)
    "/train_batch_size", "/train_micro_batch_size_per_gpu", "/gradient_accumulation_steps",
})
# DeepSpeedZeroLeafModuleConfig._coerce_container_types: a string becomes a one-item list.
STR_TO_LIST: frozenset[str] = frozenset(Z + "/leaf_module/" + name for name in ("classes", "names", "name_suffixes"))
KEYS = tuple(replace(key, nullable=key.path in NULLABLE, str_to_list=key.path in STR_TO_LIST) for key in KEYS)


def key_index() -> dict[str, Key]:
    """Rows by pointer (built once: never modify the dict)."""
    return _KEY_INDEX


_KEY_INDEX: dict[str, Key] = {key.path: key for key in KEYS}


@lru_cache(maxsize=None)
def children_of(section: str) -> tuple[str, ...]:
    """Known key names directly below `section` ("" for the top level)."""
    depth = section.count("/") + 1
    return tuple(
        k.path.rsplit("/", 1)[1]
        for k in KEYS
        if k.path.startswith(section + "/") and k.path.count("/") == depth and not k.foreign and not k.removed
    )


def lookup(pointer: str) -> Key | None:
    """The row for a concrete pointer (array indices match any row)."""
    return key_index().get(pointer)
