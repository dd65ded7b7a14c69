"""Helpers shared by the per-format defaults tables (`formats/<fmt>/defaults.py`, see shardshift.resolve).

A table reads the Plan as resolved so far: these helpers give a field's value only when it is a
real number (not None, "auto" or an Unknown), and the data-parallel size only when the world and
every model-parallel degree are known. They never invent a world size.
"""

from __future__ import annotations

from typing import Any

from shardshift.plan import Plan, Unknown, known


def integer(plan: Plan, dotted: str) -> int | None:
    """The field's value when it is a known whole number, else None."""
    value = known(plan.get(dotted))
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value if isinstance(value, int) else None


def is_set(plan: Plan, dotted: str) -> bool:
    """The field holds something: a value, "auto" or an Unknown (the file said it)."""
    return plan.get(dotted) is not None


def degree(plan: Plan, dotted: str, missing: int | None = 1) -> int | None:
    """A parallel degree: its known value, `missing` when it is not set, None when it is "auto"
    or an Unknown."""
    value = plan.get(dotted)
    if value is None:
        return missing
    return integer(plan, dotted)


def data_parallel(plan: Plan, model_axes: tuple[str, ...] = ("tensor", "pipeline", "context")) -> int | None:
    """world size // (product of the model-parallel degrees), when the world size and every degree
    are known and divide it; else None (a degree not set counts as 1)."""
    world = integer(plan, "world.world_size")
    if world is None:
        return None
    product = 1
    for axis in model_axes:
        value = degree(plan, "parallelism." + axis)
        if value is None or value < 1:
            return None
        product *= value
    if world % product:
        return None
    return world // product


def exact_div(numerator: int | None, denominator: int | None) -> int | None:
    """numerator / denominator when both are known and it divides evenly to at least 1."""
    if numerator is None or denominator is None or denominator <= 0 or numerator % denominator:
        return None
    quotient = numerator // denominator
    return quotient if quotient >= 1 else None


def product(*values: int | None) -> int | None:
    out = 1
    for value in values:
        if value is None:
            return None
        out *= value
    return out


def has_auto(value: Any) -> bool:
    """Whether a value (a Plan section's data, a passthrough dict) holds the HF placeholder "auto"."""
    if isinstance(value, str):
        return value == "auto"
    if isinstance(value, dict):
        return any(has_auto(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(has_auto(v) for v in value)
    return False


def unknown(reason: str) -> Unknown:
    """A default that depends on something the file does not say (the world size)."""
    return Unknown(reason)


def merged_ds_config(plan: Plan) -> bool:
    """Whether a ds_config was merged into this Plan (setup.merge): a field read from a .json file,
    or DeepSpeed's passthrough. A YAML that names a ds_config without it merged does not know what
    the ds_config leaves to DeepSpeed's defaults."""
    return "deepspeed" in plan.passthrough or any(
        where is not None and where.line > 0 and where.file.lower().endswith((".json", ".jsonc", ".hjson"))
        for where in plan.provenance.values())
