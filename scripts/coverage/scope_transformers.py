"""transformers 5.24.0: the DeepSpeed glue of the Hugging Face Trainer (`integrations/deepspeed.py`).

Included: what the Trainer does with a ds_config and TrainingArguments before DeepSpeed sees
them: `HfDeepSpeedConfig` / `HfTrainerDeepSpeedConfig` (filling "auto" and refusing values that
mismatch TrainingArguments, `trainer_config_process` / `trainer_config_finalize`),
`propagate_args_to_deepspeed`, `deepspeed_optim_sched` (which optimizer and scheduler are built)
and `deepspeed_init` (where the Trainer hands the config to `deepspeed.initialize`), plus the
module-level accessors of the global config.

Left out: checkpoint loading (`deepspeed_load_checkpoint`), ZeRO-3 weight loading and weight
conversion (`_load_state_dict_into_zero3_model`, `_apply_weight_conversions_to_state_dict`,
`initialize_weights_zero3`: checkpoints on disk and the model's modules) and the sequence-parallel
loss (`deepspeed_sp_compute_loss`: a training step's process groups), which check no
configuration. What DeepSpeed itself then checks is the `deepspeed` map.
"""

DISTRIBUTION = "transformers"

FILES = {
    "transformers/integrations/deepspeed.py": [
        "HfDeepSpeedConfig", "HfTrainerDeepSpeedConfig", "set_hf_deepspeed_config", "unset_hf_deepspeed_config",
        "is_deepspeed_zero3_enabled", "deepspeed_config", "deepspeed_optim_sched", "deepspeed_init",
        "propagate_args_to_deepspeed",
    ],
}
