"""What a ds_config means once DeepSpeed has read it: the ZeRO stage, the training dtype, the
offload devices, the accumulation steps. Shared by the DeepSpeed semantic rules (DS3xx).

Every helper reads `Document.data` (the values as written, json.load semantics) and answers the
way DeepSpeed's own parser would, or None when the file does not say (an `"auto"` value filled in
by the Hugging Face integration, a value of the wrong type that DS102 reports).
"""

from __future__ import annotations

import math
from typing import Any

from shardshift.source import MISSING, value_at

TRUTHY = {"true", "yes", "on", "1"}
FALSY = {"false", "no", "off", "0"}
Z = "/zero_optimization"
OP = Z + "/offload_param"
OO = Z + "/offload_optimizer"
BYTES = {"fp16": 2, "bf16": 2, "fp32": 4}


get = value_at  # the value at a pointer, or MISSING


def whole(value: Any) -> int | None:
    """A JSON number that is a whole number, as an int (None for anything else, booleans included)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return None
    return int(value)


def number(value: Any) -> float | None:
    """A JSON number or a numeric string, as DeepSpeed's lax parser would read it."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def truth(value: Any) -> bool | None:
    """A boolean as DeepSpeed's strict sections read it; None for "auto" or a value they reject."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        if value.lower() in TRUTHY:
            return True
        if value.lower() in FALSY:
            return False
    return None


def zero_stage(data: dict) -> int | None:
    """The ZeRO stage DeepSpeed runs (0 when zero_optimization is absent), or None when it is not
    known from the file ("auto", or a value DeepSpeed rejects)."""
    zero = data.get("zero_optimization", MISSING)
    if zero is MISSING or zero is None:
        return 0
    if isinstance(zero, bool):  # legacy `zero_optimization: true` means stage 1
        return int(zero)
    if not isinstance(zero, dict):
        return None
    stage = zero.get("stage", 0)
    if isinstance(stage, bool):
        return int(stage)
    if isinstance(stage, str) and stage.strip().isdigit():
        stage = int(stage)
    stage = whole(stage)
    return stage if stage in (0, 1, 2, 3) else None


def stage_pointer(data: dict) -> str:
    """Where the stage is written (the zero_optimization block, or the top level)."""
    zero = data.get("zero_optimization", MISSING)
    if isinstance(zero, dict):
        return Z + "/stage" if "stage" in zero else Z
    return Z if zero is not MISSING else ""


def bf16_block(data: dict) -> str | None:
    """The pointer of the bf16 block DeepSpeed reads: `bf16`, else the legacy `bfloat16`."""
    if data.get("bf16") is not None:
        return "/bf16"
    if "bfloat16" in data:
        return "/bfloat16"
    return None


def enabled(data: dict, block: str | None) -> bool | None:
    """Whether the precision block at `block` is enabled (None: "auto" or unreadable)."""
    if block is None:
        return False
    section = get(data, block)
    if not isinstance(section, dict):
        return False if section is MISSING or section is None else None
    return truth(section.get("enabled", False))


def precision(data: dict) -> str | None:
    """The training dtype: fp16, bf16 or fp32; None when it is left to the integration ("auto")."""
    fp16, bf16 = enabled(data, "/fp16"), enabled(data, bf16_block(data))
    if fp16 is True:
        return "fp16"
    if bf16 is True:
        return "bf16"
    if fp16 is None or bf16 is None:
        return None
    return "fp32"


def offload_device(data: dict, block: str) -> tuple[str | None, str] | None:
    """The device an offload block asks for and the pointer where that is written, or None when
    there is no such block. The device is None when the block leaves it out (DeepSpeed's default
    "none"); legacy `cpu_offload` / `cpu_offload_param: true` count as "cpu"."""
    value = get(data, block)
    if isinstance(value, dict):
        device = value.get("device")
        if "device" in value:
            return (device if isinstance(device, str) else None), block + "/device"
        return None, block
    legacy = Z + ("/cpu_offload_param" if block == OP else "/cpu_offload")
    if get(data, legacy) is True and value is MISSING:
        return "cpu", legacy
    return None


def offloading(data: dict, block: str) -> bool:
    """Whether the block asks for cpu or nvme offload."""
    found = offload_device(data, block)
    return found is not None and found[0] in ("cpu", "nvme")


def accumulation(data: dict, world_size: int | None) -> int | None:
    """The gradient accumulation steps: written, or derived the way DeepSpeed does when the world
    size is known; None when unknown."""
    written = data.get("gradient_accumulation_steps", MISSING)
    if written is not MISSING:
        return whole(written)
    total, micro = whole(data.get("train_batch_size")), whole(data.get("train_micro_batch_size_per_gpu"))
    if world_size is None or total is None:
        return None
    sp = whole(data.get("sequence_parallel_size")) or 1
    dp = max(world_size // sp, 1)
    if micro is None:
        return 1
    return total // micro // dp if micro > 0 else None


def uses_auto(data: Any) -> bool:
    """Whether any value is "auto": the file is meant for the Hugging Face / Accelerate integration."""
    if isinstance(data, dict):
        return any(uses_auto(v) for v in data.values())
    if isinstance(data, list):
        return any(uses_auto(v) for v in data)
    return data == "auto"


def elements_text(count: int) -> str:
    """An element count the way people write it: 5e8, 1.5e7, or 16,777,216."""
    if count >= 10**300:  # past the float range (json.load keeps such a number as an int)
        digits = str(count)
        return f"{digits[0]}.{digits[1:3]}e{len(digits) - 1}"
    if count >= 10_000:
        mantissa, exponent = f"{count:e}".split("e")
        mantissa = mantissa.rstrip("0").rstrip(".")
        if len(mantissa.replace(".", "")) <= 3:
            return f"{mantissa}e{int(exponent)}"
    return f"{count:,}"


def bytes_text(count: float) -> str:
    """A byte count in decimal units: 1.0 GB, 34 MB, 200 kB."""
    if count >= 10**300:
        return f"{elements_text(int(count) // 10**9)} GB"
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= size:
            value = count / size
            return f"{value:.1f} {unit}" if value < 10 else f"{value:.0f} {unit}"
    return f"{int(count)} B"


def size_text(count: int, dtype: str | None) -> str:
    """'5e8 elements = 1.0 GB in bf16' (2 bytes per element assumed when the dtype is not known)."""
    per = BYTES.get(dtype or "", 2)
    shown = dtype if dtype else "16-bit"
    return f"{elements_text(count)} elements = {bytes_text(count * per)} in {shown}"
