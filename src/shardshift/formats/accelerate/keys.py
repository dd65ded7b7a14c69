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
