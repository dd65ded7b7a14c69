"""The Plan itself: typed fields that hold a value, "auto", None or an Unknown; provenance."""

from __future__ import annotations

import copy
import json

from hypothesis import given
from hypothesis import strategies as st

from shardshift.plan import (
    Alternative,
    Batch,
    Plan,
    Unknown,
    _accepted,
    accepts,
    field_types,
    known,
    plan_json_schema,
    section_class,
    without_unknowns,
)
from shardshift.source import Location

from strategies import deepspeed_plans


def _sections(cls: type) -> list[type]:
    found = [cls]
    for name in cls.FIELDS:
        try:
            found += _sections(section_class(cls, name))
        except TypeError:  # a leaf field
            pass
    return found


SECTIONS = _sections(Plan)
FIELDS = [(cls, name) for cls in SECTIONS for name in cls.FIELDS if name not in cls.HIDDEN]
VALUES = st.one_of(st.none(), st.booleans(), st.integers(-3, 2**40), st.floats(allow_nan=False), st.just("auto"),
                   st.sampled_from(["fp16", "bf16", "fp32", "fp8", "cpu", "none", "nvme", "x", ""]),
                   st.lists(st.one_of(st.floats(allow_nan=False), st.integers(), st.just("auto")), max_size=3),
                   st.dictionaries(st.text(max_size=3), st.integers(), max_size=2), st.sampled_from([0, 1, 2, 3]))


@given(field=st.sampled_from(FIELDS), value=VALUES)
def test_the_fast_field_check_agrees_with_the_annotations(field, value):
    cls, name = field
    assert _accepted(cls, name, value) == accepts(field_types(cls)[name], value)


def test_set_checks_the_type_records_where_and_never_takes_a_bool_for_a_number():
    plan = Plan()
    here = Location("a.yaml", 3, 5, "/micro_batch_size")
    assert plan.set("batch.micro", 4, here) and plan.batch.micro == 4 and plan.origin("batch.micro") == here
    assert not plan.set("batch.micro", True) and not plan.set("sharding.stage", True)
    assert not plan.set("world.world_size", 0) and plan.world.world_size is None
    assert plan.set("optimizer.lr", 1) and plan.optimizer.lr == 1.0 and isinstance(plan.optimizer.lr, float)
    assert plan.set("optimizer.betas", [0, 1]) and plan.optimizer.betas == [0.0, 1.0]
    assert plan.origin("batch.micro.x") == here and plan.origin("optimizer.lr") is None


def test_unknown_is_neither_none_nor_auto_and_survives_copies():
    why = Unknown("undecided branch `if args.offload:` at line 12", Location("t.py", 12, 5),
                  (Alternative("cpu", "args.offload"), Alternative("none", "not args.offload")))
    plan = Plan()
    assert plan.set("offload.params.device", why)
    assert known(plan.offload.params.device) is None and plan.unknowns() == [("offload.params.device", why)]
    assert copy.deepcopy(plan) == plan and copy.deepcopy(why) == why and hash(copy.deepcopy(why)) == hash(why)
    data = plan.to_data()["offload"]["params"]["device"]
    assert data["unknown"].startswith("undecided branch") and [a["value"] for a in data["alternatives"]] == ["cpu",
                                                                                                            "none"]
    assert without_unknowns(plan).offload.params.device is None and plan.offload.params.device == why


def test_the_schema_describes_unknowns_and_the_data_of_a_plan_with_them():
    import jsonschema

    plan = Plan(batch=Batch(micro=Unknown("run-time argument args.mbs"), global_=64))
    plan.set("optimizer.lr", Unknown("environment variable LR", Location("run.sh", 2, 1, "LR")))
    jsonschema.Draft202012Validator(plan_json_schema()).validate(json.loads(json.dumps(plan.to_data())))
    assert plan.to_data()["batch"]["global"] == 64


def test_provenance_is_not_part_of_the_value():
    a, b = Plan(), Plan()
    a.set("batch.micro", 2, Location("a.json", 1, 1, "/train_micro_batch_size_per_gpu"))
    b.set("batch.micro", 2, Location("b.yaml", 9, 9, "/micro_batch_size"))
    assert a == b and "provenance" not in a.to_data()


PLAN_TEXT = st.one_of(
    st.text(max_size=200),
    st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=5)),
                 lambda inner: st.dictionaries(st.sampled_from(["batch", "micro", "global", "parallelism", "tensor",
                                                                "unknown", "world", "world_size", "optimizer", "lr",
                                                                "params", "passthrough", "x"]), inner, max_size=4),
                 max_leaves=12).map(lambda data: json.dumps(data)),  # JSON is YAML
)


@given(PLAN_TEXT)
def test_the_plan_yaml_reader_never_raises_and_reads_only_valid_plans(text):
    from shardshift.formats import plan_yaml

    document = plan_yaml.read(text, "x.plan.yaml")
    assert (document.syntax is None) == (document.plan is not None)
    if document.plan is not None:  # what it read is a Plan the schema accepts, with a place for every field
        import jsonschema

        jsonschema.Draft202012Validator(plan_json_schema()).validate(json.loads(json.dumps(document.plan.to_data())))
        assert all(dotted in document.plan.provenance for dotted, _ in document.plan.leaves())


@given(deepspeed_plans())
def test_a_plan_written_as_yaml_reads_back_the_same(plan):
    from shardshift.formats import plan_yaml

    text = plan_yaml.write(plan)
    document = plan_yaml.read(text, "round.plan.yaml")
    assert document.syntax is None, (document.syntax, text)
    assert document.plan == plan, text
