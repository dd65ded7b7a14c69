"""The rule registry. A new rule module is one file plus one line in RULE_MODULES.

Each module defines one or more `Rule` subclasses; every subclass with a `code` is registered.
Codes are stable: never renamed, never reused.
"""

from __future__ import annotations

import importlib
from functools import lru_cache

from shardshift.rules.base import Rule

# Module -> the formats of the documents its rules look at (empty: every format, or the setups'
# Plans). A check imports only the modules for the formats it meets, so that a pre-commit run on
# one ds_config does not pay for the Megatron rules; tests keep this table equal to the classes'.
RULE_MODULES: dict[str, tuple[str, ...]] = {
    "shardshift.rules.general.syntax": (),
    "shardshift.rules.general.suppression": (),
    "shardshift.rules.general.unrecognised": ("unrecognised",),
    "shardshift.rules.general.outside": (),
    "shardshift.rules.deepspeed.structure": ("deepspeed",),
    "shardshift.rules.deepspeed.batch": ("deepspeed",),
    "shardshift.rules.deepspeed.stage": ("deepspeed",),
    "shardshift.rules.deepspeed.combinations": ("deepspeed",),
    "shardshift.rules.deepspeed.precision": ("deepspeed",),
    "shardshift.rules.deepspeed.legacy": ("deepspeed",),
    "shardshift.rules.deepspeed.buckets": ("deepspeed",),
    "shardshift.rules.deepspeed.optimizer": ("deepspeed",),
    "shardshift.rules.deepspeed.scheduler": ("deepspeed",),
    "shardshift.rules.deepspeed.schedule_ranges": ("deepspeed",),
    "shardshift.rules.deepspeed.auto": ("deepspeed",),
    "shardshift.rules.deepspeed.pipeline": ("deepspeed",),
    "shardshift.rules.deepspeed.data_efficiency": ("deepspeed",),
    "shardshift.rules.deepspeed.tensor_parallel": ("deepspeed",),
    "shardshift.rules.deepspeed.script": ("python", "launch"),
    "shardshift.rules.transformers.arguments": ("python", "launch"),
    "shardshift.rules.transformers.trainer": ("python", "launch"),
    "shardshift.rules.fsdp2.rules": ("fsdp2",),
    "shardshift.rules.fsdp2.catalog": ("fsdp2",),
    "shardshift.rules.fsdp2.arguments": ("fsdp2",),
    "shardshift.rules.fsdp2.meshes": ("fsdp2",),
    "shardshift.rules.fsdp2.flow": ("fsdp2",),
    "shardshift.rules.fsdp2.values": ("fsdp2",),
    "shardshift.rules.megatron.flags": ("megatron",),
    "shardshift.rules.megatron.layout": ("megatron",),
    "shardshift.rules.megatron.training": ("megatron",),
    "shardshift.rules.megatron.refused": ("megatron",),
    "shardshift.rules.accelerate.rules": ("accelerate",),
    "shardshift.rules.accelerate.script": ("launch",),
    "shardshift.rules.axolotl.rules": ("axolotl",),
    "shardshift.rules.torchtitan.rules": ("torchtitan",),
    "shardshift.rules.torchtitan.startup": ("torchtitan",),
    "shardshift.rules.plan.batch": (),
    "shardshift.rules.plan.conflict": (),
    "shardshift.rules.plan.layout": (),
    "shardshift.rules.plan.memory": (),
}


@lru_cache(maxsize=None)
def module_rules(module_name: str) -> tuple[type[Rule], ...]:
    """The rule classes one module defines (every Rule subclass with its own `code`)."""
    module = importlib.import_module(module_name)
    return tuple(value for value in vars(module).values()
                 if isinstance(value, type) and issubclass(value, Rule) and value is not Rule and "code" in vars(value))


def _sorted(modules) -> tuple[type[Rule], ...]:
    found: dict[str, type[Rule]] = {}
    for module_name in modules:
        for rule in module_rules(module_name):
            if rule.code in found and found[rule.code] is not rule:
                raise RuntimeError(f"rule code {rule.code} registered twice")
            found[rule.code] = rule
    return tuple(sorted(found.values(), key=lambda r: r.code))


@lru_cache(maxsize=None)
def all_rules() -> tuple[type[Rule], ...]:
    """Every registered rule class, sorted by code (imports every rule module)."""
    return _sorted(RULE_MODULES)


@lru_cache(maxsize=None)
def rules_for(formats: frozenset[str]) -> tuple[type[Rule], ...]:
    """The rules that can fire on documents of `formats` (and every format-independent rule),
    sorted by code; only their modules are imported."""
    return _sorted(m for m, wanted in RULE_MODULES.items() if not wanted or formats.intersection(wanted))


def all_codes() -> set[str]:
    return {rule.code for rule in all_rules()}


def rule_by_code(code: str) -> type[Rule] | None:
    for rule in all_rules():
        if rule.code.upper() == code.upper() or rule.name == code:
            return rule
    return None
