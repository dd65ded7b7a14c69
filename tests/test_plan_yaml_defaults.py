"""`convert --to plan` of a resolved Plan (issue 21): a value a framework's default set is written with the comment
`# default of <framework> <release>`, so that the output tells what the source wrote from what its framework chose;
the Plan YAML reader reads the file back to the same Plan."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from shardshift.formats import plan_yaml
from shardshift.plan import Plan
from shardshift.resolve import default_location, is_default
from shardshift.source import Location

from strategies import deepspeed_plans

TORCHTITAN = default_location("train.toml", "torchtitan", (0, 2, 2))


def _resolved() -> Plan:
    plan = Plan()
    plan.set("batch.micro", 4, Location("train.toml", 12, 1, "/training/local_batch_size"))
    plan.set("optimizer.lr", 3e-4, Location("train.toml", 20, 1, "/optimizer/lr"))
    plan.set("precision.param_dtype", "bf16", TORCHTITAN)
    plan.set("sharding.stage", 3, TORCHTITAN)
    plan.set("scheduler.name", "linear", TORCHTITAN)
    plan.set("scheduler.warmup_steps", 200, default_location("train.toml", "torchtitan", None))
    plan.set("optimizer.betas", [0.9, 0.95], TORCHTITAN)
    return plan


def _commented(text: str) -> dict[str, str]:
    """key -> comment, for every line with one."""
    return {m.group(1): m.group(2) for m in re.finditer(r"(?m)^\s*(\w+):.*?  # (.*)$", text)}


def test_defaulted_values_carry_the_framework_and_release_and_written_ones_do_not():
    text = plan_yaml.write(_resolved())
    assert _commented(text) == {"stage": "default of torchtitan 0.2.2", "param_dtype": "default of torchtitan 0.2.2",
                                "betas": "default of torchtitan 0.2.2", "name": "default of torchtitan 0.2.2",
                                "warmup_steps": "default of torchtitan 0.2.2"}
    assert "micro: 4\n" in text and "lr: 0.0003\n" in text  # what the file wrote: no comment


def test_the_commented_plan_reads_back_unchanged():
    plan = _resolved()
    text = plan_yaml.write(plan)
    document = plan_yaml.read(text, "out.plan.yaml")
    assert document.syntax is None, document.syntax
    assert document.plan == plan
    # read back, the values are the file's own (no provenance says default any more): the comments go
    assert not any(is_default(w) for w in document.plan.provenance.values())
    assert plan_yaml.write(document.plan) == re.sub(r"  # default of .*", "", text)


def test_a_plan_with_no_defaults_is_written_as_before():
    plan = Plan()
    plan.set("batch.micro", 4, Location("ds.json", 2, 3, "/train_micro_batch_size_per_gpu"))
    assert plan_yaml.write(plan) == "batch:\n  micro: 4\n"


@settings(max_examples=60, deadline=None)
@given(deepspeed_plans(), st.data())
def test_any_plan_with_some_fields_defaulted_reads_back_the_same(plan, data):
    fields = sorted(d for d in _leaves(plan))
    chosen = data.draw(st.sets(st.sampled_from(fields)) if fields else st.just(set()))
    for dotted in chosen:
        plan.provenance[dotted] = default_location("ds_config.json", "deepspeed", (0, 19, 8))
    text = plan_yaml.write(plan)
    assert text.count("# default of deepspeed 0.19.8") == len(chosen)
    document = plan_yaml.read(text, "round.plan.yaml")
    assert document.syntax is None, (document.syntax, text)
    assert document.plan == plan, text


def _leaves(plan: Plan) -> list[str]:
    out = []
    for section in ("world", "parallelism", "sharding", "precision", "batch", "communication", "optimizer",
                    "scheduler"):
        value = getattr(plan, section)
        if value is None:
            continue
        for name in value.FIELDS:
            if getattr(value, name) is not None and not isinstance(getattr(value, name), dict):
                out.append(f"{section}.{name}")
    return out
