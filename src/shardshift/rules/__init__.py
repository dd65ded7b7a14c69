"""The rule registry. A new rule module is one file plus one line in RULE_MODULES.

Each module defines one or more `Rule` subclasses; every subclass with a `code` is registered.
Codes are stable: never renamed, never reused.
"""

from __future__ import annotations

import importlib
from functools import lru_cache

from shardshift.rules.base import Rule

RULE_MODULES = (
    "shardshift.rules.general.syntax",
    "shardshift.rules.general.suppression",
    "shardshift.rules.deepspeed.structure",
    "shardshift.rules.deepspeed.batch",
    "shardshift.rules.deepspeed.stage",
    "shardshift.rules.deepspeed.combinations",
    "shardshift.rules.deepspeed.precision",
    "shardshift.rules.deepspeed.legacy",
    "shardshift.rules.deepspeed.buckets",
    "shardshift.rules.deepspeed.optimizer",
    "shardshift.rules.deepspeed.scheduler",
    "shardshift.rules.deepspeed.auto",
    "shardshift.rules.deepspeed.script",
    "shardshift.rules.fsdp2.rules",
    "shardshift.rules.fsdp2.catalog",
    "shardshift.rules.megatron.flags",
    "shardshift.rules.megatron.layout",
    "shardshift.rules.megatron.training",
    "shardshift.rules.accelerate.rules",
    "shardshift.rules.axolotl.rules",
    "shardshift.rules.torchtitan.rules",
    "shardshift.rules.plan.batch",
    "shardshift.rules.plan.conflict",
    "shardshift.rules.plan.layout",
)


@lru_cache(maxsize=None)
def all_rules() -> tuple[type[Rule], ...]:
    """Every registered rule class, sorted by code."""
    found: dict[str, type[Rule]] = {}
    for module_name in RULE_MODULES:
        module = importlib.import_module(module_name)
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, Rule) and value is not Rule and "code" in vars(value):
                if value.code in found and found[value.code] is not value:
                    raise RuntimeError(f"rule code {value.code} registered twice")
                found[value.code] = value
    return tuple(sorted(found.values(), key=lambda r: r.code))


def rule_by_code(code: str) -> type[Rule] | None:
    for rule in all_rules():
        if rule.code.upper() == code.upper() or rule.name == code:
            return rule
    return None
