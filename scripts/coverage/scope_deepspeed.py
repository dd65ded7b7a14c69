"""DeepSpeed 0.19.8: the code that validates a ds_config, and the engine's checks during `initialize`.

Included (what a ds_config and the `deepspeed.initialize` call that hands it over decide):

- `runtime/config.py` whole: `DeepSpeedConfig` (batch arithmetic, `_do_error_check`, removed keys)
  and the `get_*` readers of single keys it calls;
- the pydantic config models DeepSpeedConfig builds: `runtime/zero/config.py`,
  `runtime/zero/offload_config.py`, `runtime/precision_config.py`, `runtime/config_utils.py`
  (deprecated-field handling, duplicate keys), `monitor/config.py`, `comm/config.py`,
  `runtime/activation_checkpointing/config.py`, `runtime/swap_tensor/aio_config.py`,
  `runtime/model_checkpointing/config.py` (the last two: the `aio` and `checkpoint` sections);
- `runtime/lr_schedules.py`: the parameter checks of the schedulers a `scheduler` block builds
  (constructors, `_initialize_cycle`, `_format_param`, `get_torch_optimizer`); `get_last_lr`'s
  "call step() first" asserts guard the scheduler's own state and are left out;
- `runtime/engine.py`: the functions `DeepSpeedEngine.__init__` runs on the config:
  `_configure_with_arguments`, `_do_args_sanity_check`, `_do_sanity_check`,
  `_assert_valid_mixed_precision_config`, `_do_optimizer_sanity_check`, `_configure_optimizer`,
  `_configure_basic_optimizer`, `_configure_zero_optimizer`, `_configure_lr_scheduler`,
  `_scheduler_from_config`, `_check_for_duplicates`;
- `__init__.py`'s `initialize` (the arguments and config it is handed).

Left out: the engine's training, checkpoint, compile, offload_states, AutoTP/AutoEP and MoE code
(asserts on tensors, checkpoints on disk, the model's modules: not the configuration); the
configs of features shardshift's ds_config reader does not model and no setup in the wild folder
uses (AutoEP `expert_parallel`, AutoTP, ZenFlow, data efficiency / curriculum, autotuning,
inference v2 ragged): a later pass can widen the scope file by file.
"""

DISTRIBUTION = "deepspeed"

ENGINE = [
    "DeepSpeedEngine._configure_with_arguments",
    "DeepSpeedEngine._do_args_sanity_check",
    "DeepSpeedEngine._do_sanity_check",
    "DeepSpeedEngine._assert_valid_mixed_precision_config",
    "DeepSpeedEngine._do_optimizer_sanity_check",
    "DeepSpeedEngine._configure_optimizer",
    "DeepSpeedEngine._configure_basic_optimizer",
    "DeepSpeedEngine._configure_zero_optimizer",
    "DeepSpeedEngine._configure_lr_scheduler",
    "DeepSpeedEngine._scheduler_from_config",
    "DeepSpeedEngine._check_for_duplicates",
]

FILES = {
    "deepspeed/runtime/config.py": None,
    "deepspeed/runtime/zero/config.py": None,
    "deepspeed/runtime/zero/offload_config.py": None,
    "deepspeed/runtime/precision_config.py": None,
    "deepspeed/runtime/config_utils.py": None,
    "deepspeed/monitor/config.py": None,
    "deepspeed/comm/config.py": None,
    "deepspeed/runtime/activation_checkpointing/config.py": None,
    "deepspeed/runtime/swap_tensor/aio_config.py": None,
    "deepspeed/runtime/model_checkpointing/config.py": None,
    "deepspeed/runtime/lr_schedules.py": ["get_torch_optimizer", "_format_param", "LRRangeTest.__init__",
                                          "OneCycle._initialize_cycle", "WarmupLR.__init__",
                                          "WarmupCosineLR.__init__"],
    "deepspeed/runtime/engine.py": ENGINE,
    "deepspeed/__init__.py": ["initialize"],
}
