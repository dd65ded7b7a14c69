"""Axolotl YAML: the keys with a neutral meaning, and what happens when the YAML and its
`deepspeed:` ds_config both set one (../shared/reference/axolotl.md §2, §5, §6)."""

from __future__ import annotations

from shardshift.setup import Precedence

# top-level key -> (Plan field, kind); "float" and "int" values may be numeric strings, which
# Axolotl's pydantic schema converts (`learning_rate: 2e-5` is a string to PyYAML)
KEYS: dict[str, tuple[str, str]] = {
    "micro_batch_size": ("batch.micro", "int"),
    "gradient_accumulation_steps": ("batch.accumulation", "int"),
    "sequence_len": ("batch.sequence_length", "int"),
    "learning_rate": ("optimizer.lr", "float"),
    "optimizer": ("optimizer.name", "str"),
    "weight_decay": ("optimizer.weight_decay", "float"),
    "adam_epsilon": ("optimizer.eps", "float"),
    "max_grad_norm": ("gradient_clipping", "float"),
    "lr_scheduler": ("scheduler.name", "str"),
    "warmup_steps": ("scheduler.warmup_steps", "int"),
    # parallelism degrees (Axolotl exports the ones > 1 as PARALLELISM_CONFIG_* for Accelerate)
    "tensor_parallel_size": ("parallelism.tensor", "int"),
    "context_parallel_size": ("parallelism.context", "int"),
    "dp_shard_size": ("parallelism.data_parallel_shard", "int"),
    "dp_replicate_size": ("parallelism.data_parallel_replicate", "int"),
    "expert_parallel_size": ("parallelism.expert", "int"),
}

# The fields of Axolotl's FSDPConfig (axolotl 0.21.0 utils/schemas/fsdp.py); `version` is an alias of
# fsdp_version. Any other key inside fsdp_config is dropped silently (pydantic's extra="ignore").
FSDP_CONFIG_FIELDS = (
    "fsdp_version", "activation_checkpointing", "offload_params", "cpu_ram_efficient_loading",
    "cpu_offload_pin_memory", "state_dict_type", "final_state_dict_type", "auto_wrap_policy",
    "transformer_layer_cls_to_wrap", "min_num_params", "reshard_after_forward", "mixed_precision_policy",
)
FSDP_CONFIG_ALIASES = ("version",)

# FSDP1-only fsdp_config keys (axolotl 0.21.0 utils/schemas/validation.py): the first are rejected
# by the schema (value: the FSDP2 replacement, or None), the second dropped with a warning.
FSDP1_ONLY_REJECTED = {"sharding_strategy": "reshard_after_forward", "forward_prefetch": None}
FSDP1_ONLY_IGNORED = ("sync_module_states", "backward_prefetch", "backward_prefetch_policy", "limit_all_gathers",
                      "use_orig_params")

# transformers TrainingArguments defaults, which a lone adam_beta1 / adam_beta2 is paired with
HF_BETAS = (0.9, 0.999)

# Axolotl's CustomSupportedOptimizers: built by Axolotl itself, which passes betas only when both
# adam_beta1 and adam_beta2 are set (otherwise the optimizer class's own defaults apply)
CUSTOM_OPTIMIZERS = frozenset({
    "optimi_adamw", "ao_adamw_4bit", "ao_adamw_8bit", "ao_adamw_fp8", "adopt_adamw", "came_pytorch", "muon", "dion",
    "sinkgd", "flash_adamw", "flash_adam", "flash_sgd", "flash_sgdw", "flash_lion", "q_galore_adamw8bit",
})

_MISMATCH = ('transformers fills an "auto" in the ds_config from the YAML, and raises at launch ("Please correct '
             'the following DeepSpeed config values that mismatch TrainingArguments values") when the ds_config '
             'holds a different value')
_JSON_WINS = "the ds_config's {block} block wins and Axolotl silently ignores the YAML's {key}"

PRECEDENCE: dict[str, Precedence] = {
    **{field: Precedence("mismatch", _MISMATCH) for field in (
        "batch.micro",              # train_micro_batch_size_per_gpu <- micro_batch_size
        "batch.accumulation",       # gradient_accumulation_steps
        "optimizer.lr",             # optimizer.params.lr <- learning_rate
        "optimizer.betas",          # optimizer.params.betas <- [adam_beta1, adam_beta2]
        "optimizer.eps",            # optimizer.params.eps <- adam_epsilon
        "precision.param_dtype",    # fp16.enabled / bf16.enabled <- bf16 / fp16
    )},
    # Compared with the TrainingArguments default when the YAML is silent (tests/test_setup_oracle.py).
    "gradient_clipping": Precedence("mismatch", _MISMATCH, default=1.0, key="max_grad_norm"),
    "optimizer.weight_decay": Precedence("mismatch", _MISMATCH, default=0.0, key="weight_decay"),
    # Axolotl rejects Muon with DeepSpeed outright (check_muon_deepspeed_fsdp), so "the ds_config's
    # block wins" would be wrong for it: no finding here; rule AX105 reports the refusal.
    "optimizer.name": Precedence("referenced", _JSON_WINS.format(block="optimizer", key="optimizer"),
                                 unless=frozenset({"muon"})),
    "scheduler.name": Precedence("referenced", _JSON_WINS.format(block="scheduler", key="lr_scheduler")),
}
