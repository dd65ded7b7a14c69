"""Accelerate config YAML: the keys with a neutral meaning, and what Accelerate does when the YAML
and its `deepspeed_config_file` both set one (../shared/reference/accelerate.md §2, §5)."""

from __future__ import annotations

from shardshift.setup import Precedence

# mixed_precision as written -> the Plan's dtype ('no' quoted is fp32; unquoted `no` is False)
MIXED_PRECISION = {"no": "fp32", "fp16": "fp16", "bf16": "bf16", "fp8": "fp8"}

# deepspeed_config key -> (Plan field, kind): read only when distributed_type is DEEPSPEED
DEEPSPEED_KEYS: dict[str, tuple[str, str]] = {
    "zero_stage": ("sharding.stage", "int"),
    "gradient_accumulation_steps": ("batch.accumulation", "int"),
    "gradient_clipping": ("gradient_clipping", "float"),
    "offload_optimizer_device": ("offload.optimizer.device", "str"),
    "offload_param_device": ("offload.params.device", "str"),
    "offload_optimizer_nvme_path": ("offload.optimizer.nvme_path", "str"),
    "offload_param_nvme_path": ("offload.params.nvme_path", "str"),
}

# DeepSpeedPlugin._deepspeed_config_checks: these YAML settings next to deepspeed_config_file
# are a ValueError at launch whatever their values (zero3_save_16bit_model too; it has no Plan field).
_REFUSES = ('Accelerate raises a ValueError at launch ("When using `deepspeed_config_file`, the following '
            'accelerate config variables will be ignored: [...]") when deepspeed_config_file is set together with it')

PRECEDENCE: dict[str, Precedence] = {
    field: Precedence("refuses", _REFUSES)
    for field in (
        "batch.accumulation",           # gradient_accumulation_steps
        "gradient_clipping",            # gradient_clipping
        "sharding.stage",               # zero_stage
        "offload.optimizer.device",     # offload_optimizer_device
        "offload.params.device",        # offload_param_device
        "offload.optimizer.nvme_path",  # offload_optimizer_nvme_path
        "offload.params.nvme_path",     # offload_param_nvme_path
        "precision.param_dtype",        # mixed_precision from the YAML, even 'no'
    )
}


# --- the keys Accelerate 1.15 knows (commands/config/config_args.py, commands/launch.py) -------

BASE_KEYS = ("compute_environment", "distributed_type", "mixed_precision", "use_cpu", "debug")
CLUSTER_KEYS = BASE_KEYS + (
    "num_processes", "machine_rank", "num_machines", "gpu_ids", "main_process_ip", "main_process_port",
    "rdzv_backend", "same_network", "main_training_function", "enable_cpu_affinity", "fp8_config",
    "deepspeed_config", "fsdp_config", "parallelism_config", "megatron_lm_config", "mpirun_config",
    "downcast_bf16", "tpu_name", "tpu_zone", "tpu_use_cluster", "tpu_use_sudo", "command_file", "commands",
    "tpu_vm", "tpu_env", "dynamo_config")
SAGEMAKER_KEYS = BASE_KEYS + (
    "ec2_instance_type", "iam_role_name", "image_uri", "profile", "region", "num_machines", "gpu_ids",
    "base_job_name", "pytorch_version", "transformers_version", "py_version", "sagemaker_inputs_file",
    "sagemaker_metrics_file", "additional_args", "dynamo_config", "enable_cpu_affinity")
# keys process_config removes or rewrites before the unknown-key check
LEGACY_TOP = ("fp16", "dynamo_backend")

DISTRIBUTED_TYPES = ("NO", "MULTI_CPU", "MULTI_GPU", "MULTI_NPU", "MULTI_MLU", "MULTI_SDAA", "MULTI_MUSA",
                     "MULTI_XPU", "MULTI_HPU", "MULTI_NEURON", "DEEPSPEED", "FSDP", "XLA", "MEGATRON_LM")
SAGEMAKER_TYPES = ("NO", "DATA_PARALLEL", "MODEL_PARALLEL")
COMPUTE_ENVIRONMENTS = ("LOCAL_MACHINE", "AMAZON_SAGEMAKER")
MIXED_PRECISIONS = ("no", "fp16", "bf16", "fp8")
# utils/dataclasses.py DynamoBackend (the launchers compare the value upper-cased)
DYNAMO_BACKENDS = ("NO", "EAGER", "AOT_EAGER", "INDUCTOR", "AOT_TS_NVFUSER", "NVPRIMS_NVFUSER", "CUDAGRAPHS", "OFI",
                   "FX2TRT", "ONNXRT", "TENSORRT", "AOT_TORCHXLA_TRACE_ONCE", "TORCHXLA_TRACE_ONCE", "TVM",
                   "HPU_BACKEND", "NEURON")

# fsdp_config: the launcher's argument names (a key without the `fsdp_` prefix gets it added).
FSDP_KEYS = ("fsdp_version", "fsdp_reshard_after_forward", "fsdp_sharding_strategy", "fsdp_offload_params",
             "fsdp_auto_wrap_policy", "fsdp_transformer_layer_cls_to_wrap", "fsdp_min_num_params",
             "fsdp_backward_prefetch", "fsdp_forward_prefetch", "fsdp_state_dict_type", "fsdp_use_orig_params",
             "fsdp_cpu_ram_efficient_loading", "fsdp_sync_module_states", "fsdp_activation_checkpointing",
             "fsdp_activation_checkpointing_offload", "fsdp_ignored_modules")
# under fsdp_version 2 these never reach the plugin from a YAML (accelerate.md §3, to_fsdp2.py)
FSDP1_ONLY = {
    "fsdp_sharding_strategy": "FSDP2 reads only fsdp_reshard_after_forward (true = FULL_SHARD, false = "
                              "SHARD_GRAD_OP); FSDP_SHARDING_STRATEGY is read for version 1 only",
    "fsdp_backward_prefetch": "FSDP2 has no backward prefetch setting (the plugin warns and drops it)",
    "fsdp_forward_prefetch": "FSDP2 does not implement forward prefetch; from a YAML it is ignored",
    "fsdp_use_orig_params": "FSDP2 always keeps the original parameters; from a YAML it is ignored",
    "fsdp_sync_module_states": "FSDP2 ignores it (cpu_ram_efficient_loading broadcasts from rank 0)",
}
SHARDING_STRATEGIES = ("FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD", "HYBRID_SHARD_ZERO2")
# to_fsdp2.py's value map (accelerate.md §7)
TO_FSDP2 = {"FULL_SHARD": True, "SHARD_GRAD_OP": False, "NO_SHARD": False, "HYBRID_SHARD": True,
            "HYBRID_SHARD_ZERO2": False}
AUTO_WRAP_POLICIES = ("TRANSFORMER_BASED_WRAP", "SIZE_BASED_WRAP", "NO_WRAP")
BACKWARD_PREFETCH = ("BACKWARD_PRE", "BACKWARD_POST", "NO_PREFETCH")
STATE_DICT_TYPES = ("FULL_STATE_DICT", "LOCAL_STATE_DICT", "SHARDED_STATE_DICT")
FSDP_BOOLS = ("fsdp_offload_params", "fsdp_forward_prefetch", "fsdp_use_orig_params",
              "fsdp_cpu_ram_efficient_loading", "fsdp_sync_module_states", "fsdp_activation_checkpointing",
              "fsdp_activation_checkpointing_offload")

DEEPSPEED_CONFIG_KEYS = ("deepspeed_config_file", "zero_stage", "offload_optimizer_device", "offload_param_device",
                         "offload_optimizer_nvme_path", "offload_param_nvme_path", "gradient_accumulation_steps",
                         "gradient_clipping", "zero3_init_flag", "zero3_save_16bit_model", "deepspeed_hostfile",
                         "deepspeed_exclusion_filter", "deepspeed_inclusion_filter", "deepspeed_multinode_launcher",
                         "deepspeed_moe_layer_cls_names")
MEGATRON_KEYS = tuple("megatron_lm_" + k for k in (
    "attention_backend", "attention_dropout", "attention_softmax_in_fp32", "calculate_per_token_loss",
    "context_parallel_size", "decoder_last_pipeline_num_layers", "eod_mask_loss", "expert_model_parallel_size",
    "expert_tensor_parallel_size", "gradient_clipping", "hidden_dropout", "no_load_optim", "no_save_optim",
    "num_micro_batches", "optimizer_cpu_offload", "overlap_cpu_optimizer_d2h_h2d", "pp_degree",
    "recompute_activations", "recompute_granularity", "recompute_method", "recompute_num_layers",
    "sequence_parallelism", "tp_degree", "use_custom_fsdp", "use_distributed_optimizer",
    "use_precision_aware_optimizer", "use_rotary_position_embeddings"))
PARALLELISM_KEYS = tuple("parallelism_config_" + k for k in (
    "dp_replicate_size", "dp_shard_size", "tp_size", "cp_size", "cp_comm_strategy", "cp_backend", "sp_size",
    "sp_backend", "sp_seq_length", "sp_seq_length_is_variable", "sp_attn_implementation"))
# parallelism_config degree -> Plan field
PARALLELISM_FIELDS = {"parallelism_config_dp_replicate_size": "parallelism.data_parallel_replicate",
                      "parallelism_config_dp_shard_size": "parallelism.data_parallel_shard",
                      "parallelism_config_tp_size": "parallelism.tensor",
                      "parallelism_config_cp_size": "parallelism.context"}
MEGATRON_FIELDS = {"megatron_lm_tp_degree": ("parallelism.tensor", "int"),
                   "megatron_lm_pp_degree": ("parallelism.pipeline", "int"),
                   "megatron_lm_sequence_parallelism": ("parallelism.sequence_parallel", "bool"),
                   "megatron_lm_gradient_clipping": ("gradient_clipping", "float"),
                   "megatron_lm_expert_model_parallel_size": ("parallelism.expert", "int")}
# the nested blocks Accelerate never checks, with their known keys
NESTED = {"fsdp_config": FSDP_KEYS, "deepspeed_config": DEEPSPEED_CONFIG_KEYS, "megatron_lm_config": MEGATRON_KEYS,
          "parallelism_config": PARALLELISM_KEYS}


def fsdp_name(key: str) -> str:
    """The launcher argument a `fsdp_config` key becomes (`sharding_strategy` -> `fsdp_sharding_strategy`)."""
    return key if key.startswith("fsdp") else "fsdp_" + key


def truthy(value) -> bool | None:
    """Accelerate's `str_to_bool` of a value it exports as an environment variable (None: raises)."""
    text = str(value).lower()
    if text in ("y", "yes", "t", "true", "on", "1"):
        return True
    if text in ("n", "no", "f", "false", "off", "0"):
        return False
    return None
