"""Accelerate 1.15.0: the code that checks an Accelerate config file (issue 22's coverage map).

What `accelerate launch --config_file FILE train.py` runs on the file, in order, and what each
training process then builds from the environment the launcher exports:

- commands/config/config_args.py (every function): `load_config_from_file`, `BaseConfig.
  process_config` / `from_yaml_file` / `from_json_file` (the missing `distributed_type`, the
  unknown top-level keys) and the enum conversion in `__post_init__`.
- commands/launch.py: `_validate_launch_command` (the sanity checks on the mode, the processes,
  the GPU ids, `num_processes: -1`), `launch_command` and the launchers it dispatches to
  (`simple_launcher`, `multi_gpu_launcher`, `deepspeed_launcher`, `tpu_launcher`,
  `tpu_pod_launcher`, `sagemaker_launcher`). Left out: the argument parser and its help formatter
  (they raise nothing about a file).
- utils/launch.py: the `prepare_*` functions that turn the arguments into the training
  processes' environment (`prepare_simple_launcher_cmd_env`, `prepare_multi_gpu_env`,
  `prepare_extend_env_parallelism_config`, `prepare_deepspeed_cmd_env`, `prepare_tpu`,
  `prepare_sagemager_args_inputs`). Left out: `_filter_args`, `setup_fp8_env`, `env_var_path_add`
  and `PrepareForLaunch` (command-line plumbing with no check on the file); `_get_mpirun_args`
  and `_convert_nargs_to_dict` are in, reached by call graph (below).
- utils/environment.py: `str_to_bool`, the only check of the boolean settings the launcher
  exports (`FSDP_RESHARD_AFTER_FORWARD`, `FSDP_OFFLOAD_PARAMS`, the MEGATRON_LM_* flags): an
  unreadable bool in the file is refused there, not in the plugin.
- utils/dataclasses.py: the plugins and configs the training process builds from that
  environment: `DeepSpeedPlugin` (`__post_init__`, `_deepspeed_config_checks`,
  `set_mixed_precision`, `fill_match`, `deepspeed_config_process`, `set_deepspeed_weakref`,
  `set_moe_leaf_modules`), `FullyShardedDataParallelPlugin` (every method: `__post_init__` and
  the helpers it and `Accelerator.prepare` call: state dict, wrap policy, mixed precision, CPU
  offload), `MegatronLMPlugin.__post_init__` and `set_network_size_args`, `TorchDynamoPlugin.
  __post_init__`, `TorchContextParallelConfig`, `DeepSpeedSequenceParallelConfig`,
  `TorchTensorParallelConfig` (built by ParallelismConfig from PARALLELISM_CONFIG_*), and the FP8
  recipes built from `fp8_config` (`AORecipeKwargs`, `TERecipeKwargs`, `MSAMPRecipeKwargs`,
  `FP8RecipeKwargs` `__post_init__`). Left out: the kwargs handlers a program passes in code
  (`InitProcessGroupKwargs`, `ProfileKwargs`, `DataLoaderConfiguration`, `ProjectConfiguration`,
  `BnbQuantizationConfig`, ...: no key of the file reaches them) and `DeepSpeedPlugin.selected`
  (`select` is in, reached by call graph from AcceleratorState, below).
- parallelism_config.py: `ParallelismConfig.__post_init__`, `_set_size` and
  `_validate_accelerator` (the sizes against the number of processes and the mode).

Added from the call graph (scripts/coverage/callgraph.py accelerate -v): every function holding a
check site reached by call graph from the entries a run takes (`launch_command`,
`Accelerator.__init__`, `Accelerator.prepare`), so that the map judges each reachable site:

- accelerator.py: `Accelerator.__init__` (the arguments the program passes, the installed
  DeepSpeed / PyTorch / Megatron-LM, the FP8 backend against the mode), `prepare`,
  `prepare_model`, `_prepare_fsdp2`, `_prepare_deepspeed`, `_prepare_megatron_lm`, and the FP8
  steps `_prepare_ao`, `_prepare_te`, `_prepare_msamp` (mostly the objects the program passes);
- state.py: `PartialState.__init__` / `set_device` and `AcceleratorState.__init__` /
  `_check_initialized` (the process group, the device, context parallelism against the FSDP
  plugin: the loader runs the real AcceleratorState for FSDP and multi-GPU launches);
- what those call: `ParallelismConfig.build_device_mesh` / `get_device_mesh`,
  `DeepSpeedPlugin.select`, `MegatronLMPlugin.set_optimizer_type`, `HfDeepSpeedConfig.__init__`
  (utils/deepspeed.py: the ds_config path the plugin opens), the FSDP2 helpers of
  utils/fsdp_utils.py (`fsdp2_prepare_auto_wrap_policy`, the FSDP2 counterpart of
  `set_auto_wrap_policy`, and the state-dict / optimizer switches), data_loader.py (the sharding
  and dispatch checks of `prepare_data_loader`), tracking.py `filter_trackers`, big_modeling.py
  (the sequence- and context-parallel model checks), utils/transformer_engine.py (the FP8 autowrap
  and its MXFP8 recipe), utils/modeling.py (`set_module_tensor_to_device`, `get_grad_scaler`),
  utils/operations.py `send_to_device`, utils/megatron_lm.py `MegatronEngine.__init__`,
  utils/launch.py `_get_mpirun_args` / `_convert_nargs_to_dict`, utils/environment.py
  `override_numa_affinity`, and the guards `is_torch_xla_available` and `compare_versions`.

Most of these decide on what the program passes or the machine has (runtime, environment, model
in the map); the few the files decide are rules or todos there.
"""

DISTRIBUTION = "accelerate"

FILES = {
    "accelerate/commands/config/config_args.py": None,
    "accelerate/commands/launch.py": ["_validate_launch_command", "launch_command", "simple_launcher",
                                      "multi_gpu_launcher", "deepspeed_launcher", "tpu_launcher", "tpu_pod_launcher",
                                      "sagemaker_launcher"],
    "accelerate/utils/launch.py": ["prepare_simple_launcher_cmd_env", "prepare_multi_gpu_env",
                                   "prepare_extend_env_parallelism_config", "prepare_deepspeed_cmd_env", "prepare_tpu",
                                   "prepare_sagemager_args_inputs", "_get_mpirun_args", "_convert_nargs_to_dict"],
    "accelerate/utils/environment.py": ["str_to_bool", "override_numa_affinity"],
    "accelerate/utils/dataclasses.py": [
        "DeepSpeedPlugin.__post_init__", "DeepSpeedPlugin._deepspeed_config_checks",
        "DeepSpeedPlugin.set_mixed_precision", "DeepSpeedPlugin.fill_match", "DeepSpeedPlugin.deepspeed_config_process",
        "DeepSpeedPlugin.set_deepspeed_weakref", "DeepSpeedPlugin.set_moe_leaf_modules",
        "FullyShardedDataParallelPlugin",
        "MegatronLMPlugin.__post_init__", "MegatronLMPlugin.set_network_size_args",
        "TorchDynamoPlugin.__post_init__",
        "TorchContextParallelConfig", "DeepSpeedSequenceParallelConfig", "TorchTensorParallelConfig",
        "AORecipeKwargs.__post_init__", "TERecipeKwargs.__post_init__", "MSAMPRecipeKwargs.__post_init__",
        "FP8RecipeKwargs.__post_init__",
        "DeepSpeedPlugin.select", "MegatronLMPlugin.set_optimizer_type",
    ],
    "accelerate/parallelism_config.py": ["ParallelismConfig.__post_init__", "ParallelismConfig._set_size",
                                         "ParallelismConfig._validate_accelerator", "ParallelismConfig.build_device_mesh",
                                         "ParallelismConfig.get_device_mesh"],
    # reached by call graph from the entries (scripts/coverage/callgraph.py: launch_command,
    # Accelerator.__init__, Accelerator.prepare)
    "accelerate/accelerator.py": ["Accelerator.__init__", "Accelerator.prepare", "Accelerator.prepare_model",
                                  "Accelerator._prepare_fsdp2", "Accelerator._prepare_ao", "Accelerator._prepare_te",
                                  "Accelerator._prepare_deepspeed", "Accelerator._prepare_megatron_lm",
                                  "Accelerator._prepare_msamp"],
    "accelerate/state.py": ["PartialState.__init__", "PartialState.set_device", "AcceleratorState.__init__",
                            "AcceleratorState._check_initialized"],
    "accelerate/big_modeling.py": ["_refuse_recurrent_layers_under_sequence_parallelism",
                                   "_attach_context_parallel_hooks"],
    "accelerate/data_loader.py": ["BatchSamplerShard.__init__", "IterableDatasetShard.__init__",
                                  "DataLoaderDispatcher.__init__", "prepare_data_loader"],
    "accelerate/tracking.py": ["filter_trackers"],
    "accelerate/utils/deepspeed.py": ["HfDeepSpeedConfig.__init__"],
    "accelerate/utils/fsdp_utils.py": ["fsdp2_load_full_state_dict", "fsdp2_switch_optimizer_parameters",
                                       "fsdp2_prepare_auto_wrap_policy"],
    "accelerate/utils/imports.py": ["is_torch_xla_available"],
    "accelerate/utils/megatron_lm.py": ["MegatronEngine.__init__"],
    "accelerate/utils/modeling.py": ["set_module_tensor_to_device", "get_grad_scaler"],
    "accelerate/utils/operations.py": ["send_to_device"],
    "accelerate/utils/transformer_engine.py": ["convert_model", "contextual_fp8_autocast", "apply_fp8_autowrap"],
    "accelerate/utils/versions.py": ["compare_versions"],
}
