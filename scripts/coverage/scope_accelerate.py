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
  `prepare_sagemager_args_inputs`). Left out: `_filter_args`, `_get_mpirun_args`, `setup_fp8_env`,
  `_convert_nargs_to_dict`, `env_var_path_add` and `PrepareForLaunch` (command-line plumbing
  with no check on the file).
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
  `BnbQuantizationConfig`, ...: no key of the file reaches them) and `DeepSpeedPlugin.select` /
  `selected` (the program's own calls).
- parallelism_config.py: `ParallelismConfig.__post_init__`, `_set_size` and
  `_validate_accelerator` (the sizes against the number of processes and the mode).

Not included (yet): `Accelerator.__init__` and `AcceleratorState.__init__` (accelerator.py,
state.py). Most of their checks judge the file together with the arguments the program passes to
`Accelerator(...)` (plugins, kwargs handlers, `mixed_precision=`), but a few read the launch
environment alone (state.py: `cp_size>1` under FSDP1; the FP8 auto-detection when no backend is
installed): a follow-up scope. Also left out: the model-preparation code (`utils/fsdp_utils.py`,
`utils/megatron_lm.py`, `Accelerator.prepare`), whose checks need the model, except the two
prepare steps the loader runs because the file decides them (the FSDP wrap policy's class names,
AC009; the ds_config's "auto" values Accelerate cannot fill, DS421).
"""

DISTRIBUTION = "accelerate"

FILES = {
    "accelerate/commands/config/config_args.py": None,
    "accelerate/commands/launch.py": ["_validate_launch_command", "launch_command", "simple_launcher",
                                      "multi_gpu_launcher", "deepspeed_launcher", "tpu_launcher", "tpu_pod_launcher",
                                      "sagemaker_launcher"],
    "accelerate/utils/launch.py": ["prepare_simple_launcher_cmd_env", "prepare_multi_gpu_env",
                                   "prepare_extend_env_parallelism_config", "prepare_deepspeed_cmd_env", "prepare_tpu",
                                   "prepare_sagemager_args_inputs"],
    "accelerate/utils/environment.py": ["str_to_bool"],
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
    ],
    "accelerate/parallelism_config.py": ["ParallelismConfig.__post_init__", "ParallelismConfig._set_size",
                                         "ParallelismConfig._validate_accelerator"],
}
