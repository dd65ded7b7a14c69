"""JSON files of Hugging Face training arguments (read by `HfArgumentParser.parse_json_file`,
as Firefly's `train_args/*.json` are): not ds_configs, although they hold `fp16`, `bf16` and
`gradient_accumulation_steps`. Such a file names its ds_config with `"deepspeed"`, and the
Trainer built from it fills the ds_config's `"auto"` values."""

from __future__ import annotations

from typing import Any

# Fields of transformers.TrainingArguments (4.x and 5.x) that are no top-level ds_config key.
TRAINING_ARGUMENT_KEYS = frozenset({
    "output_dir", "overwrite_output_dir", "do_train", "do_eval", "do_predict", "eval_strategy", "evaluation_strategy",
    "per_device_train_batch_size", "per_device_eval_batch_size", "per_gpu_train_batch_size", "eval_accumulation_steps",
    "learning_rate", "weight_decay", "adam_beta1", "adam_beta2", "adam_epsilon", "max_grad_norm", "num_train_epochs",
    "max_steps", "lr_scheduler_type", "lr_scheduler_kwargs", "warmup_ratio", "warmup_steps", "log_level",
    "logging_dir", "logging_strategy", "logging_first_step", "logging_steps", "save_strategy", "save_steps",
    "save_total_limit", "save_only_model", "seed", "data_seed", "bf16_full_eval", "fp16_full_eval", "fp16_opt_level",
    "tf32", "local_rank", "ddp_backend", "dataloader_drop_last", "eval_steps", "dataloader_num_workers", "run_name",
    "disable_tqdm", "remove_unused_columns", "label_names", "load_best_model_at_end", "metric_for_best_model",
    "greater_is_better", "ignore_data_skip", "fsdp", "fsdp_config", "deepspeed", "label_smoothing_factor", "optim",
    "optim_args", "group_by_length", "report_to", "ddp_find_unused_parameters", "dataloader_pin_memory",
    "skip_memory_metrics", "push_to_hub", "resume_from_checkpoint", "hub_model_id", "gradient_checkpointing",
    "gradient_checkpointing_kwargs", "torch_compile", "neftune_noise_alpha", "use_liger_kernel", "auto_find_batch_size",
    "ddp_timeout", "max_seq_length", "model_name_or_path",
})


def is_training_arguments(data: Any) -> bool:
    """Whether a JSON object is a file of training arguments rather than a ds_config: at least
    three top-level keys that are TrainingArguments fields and no ds_config key, `output_dir` or a
    per-device batch size among them, and more of them than keys a ds_config has."""
    if not isinstance(data, dict):
        return False
    keys = {k for k in data if isinstance(k, str)}
    ours = keys & TRAINING_ARGUMENT_KEYS
    if len(ours) < 3 or not ours & {"output_dir", "per_device_train_batch_size", "num_train_epochs"}:
        return False
    from shardshift.formats.deepspeed.keys import key_index

    rows = key_index()
    deepspeed = {k for k in keys - ours if (row := rows.get("/" + k)) is not None and not row.foreign}
    return len(ours) > len(deepspeed)
