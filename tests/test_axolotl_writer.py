"""The Axolotl writer: same-format round trips keep the text (comments included) and the Plan;
edits touch only their key; a ds_config becomes an Axolotl FSDP2 config with a report for every
setting."""

from __future__ import annotations

import re

import pytest
from deepdiff import DeepDiff
from hypothesis import given, settings
from hypothesis import strategies as st

from shardshift.formats import axolotl, deepspeed
from shardshift.formats.axolotl import writer

from conftest import FIXTURES, corpus_files, needs_corpus

DS_FIXTURES = sorted((FIXTURES / "deepspeed").glob("*.json"))
LORA = FIXTURES / "axolotl" / "lora.yaml"


def _round_trip(path):
    text = path.read_text(encoding="utf-8-sig")
    document = axolotl.read(text, str(path))
    conversion = writer.convert(document)
    return text, document, conversion


@needs_corpus
def test_corpus_round_trip_changes_nothing():
    files = corpus_files("axolotl")
    assert len(files) == 83
    for path in files:
        text, document, conversion = _round_trip(path)
        assert conversion.text == text, path
        again = axolotl.read(conversion.text, str(path))
        assert DeepDiff(document.plan.to_data(), again.plan.to_data()) == {}, path
        assert {e.status for e in conversion.entries} <= {"exact", "unknown"}


def test_fixture_round_trip_keeps_comments():
    text, document, conversion = _round_trip(LORA)
    assert conversion.text == text


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=1, max_value=4096), st.sampled_from([1e-5, 3e-4, 0.1]))
def test_an_edit_changes_only_its_key(micro, lr):
    text = LORA.read_text()
    document = axolotl.read(text, str(LORA))
    document.plan.set("batch.micro", micro)
    document.plan.set("optimizer.lr", lr)
    out = writer.convert(document).text
    again = axolotl.read(out, "x.yaml").plan
    assert (again.batch.micro, again.get("optimizer.lr")) == (micro, lr)
    changed = [(a, b) for a, b in zip(text.splitlines(), out.splitlines()) if a != b]
    assert len(out.splitlines()) == len(text.splitlines())
    assert all(a.split(":")[0] in ("micro_batch_size", "learning_rate") for a, _ in changed)
    assert [line for line in out.splitlines() if line.lstrip().startswith("#")] == \
        [line for line in text.splitlines() if line.lstrip().startswith("#")]


@pytest.mark.parametrize("path", DS_FIXTURES, ids=[p.name for p in DS_FIXTURES])
def test_ds_config_becomes_an_fsdp2_axolotl_config(path):
    document = deepspeed.read(path.read_text(), str(path))
    conversion = writer.convert(document)
    out = axolotl.read(conversion.text, "out.yaml")
    assert out.syntax is None
    data = out.data
    assert data["fsdp_version"] == 2 and "fsdp" not in data and "deepspeed" not in data
    source = document.plan
    stage = source.sharding.stage
    if stage in (0, 1, 2, 3):
        assert data["fsdp_config"]["reshard_after_forward"] is (stage == 3)
    plan = out.plan
    for dotted in ("batch.micro", "batch.accumulation", "optimizer.lr", "optimizer.betas", "optimizer.eps",
                   "optimizer.weight_decay", "gradient_clipping", "scheduler.warmup_steps"):
        value = source.get(dotted)
        if value is not None and value != "auto":
            assert plan.get(dotted) == value, dotted
    if source.precision.param_dtype in ("bf16", "fp16"):
        assert plan.precision.param_dtype == source.precision.param_dtype
    # every setting of the source is in the report, once
    pointers = [pointer for pointer, _, _ in document.settings()]
    reported = [e.source for e in conversion.entries if e.source.startswith("/")]
    assert sorted(reported) == sorted(pointers)
    assert all(e.reason for e in conversion.entries)
    assert {e.status for e in conversion.entries} <= {"exact", "approximate", "dropped", "unknown"}


def test_offload_is_approximate_with_why():
    path = FIXTURES / "deepspeed" / "zero3_offload_fp16.jsonc.json"
    conversion = writer.convert(deepspeed.read(path.read_text(), str(path)))
    entry = next(e for e in conversion.entries if e.source == "/zero_optimization/offload_optimizer/device")
    assert entry.status == "approximate" and entry.target == "fsdp_config.offload_params"
    assert "cannot offload only the optimizer state" in entry.reason
    assert "offload_params: true" in conversion.text


def test_fp32_ds_config_pins_bf16_off():
    """DeepSpeed trains fp32 without an fp16/bf16 block: the resolved Plan says so (a default), and
    Axolotl, whose own default bf16: auto would train bf16, gets bf16: false written."""
    from shardshift.resolve import default_location

    path = FIXTURES / "deepspeed" / "zero1_fp32_sgd.json"
    document = deepspeed.read(path.read_text(), str(path))
    document.plan.set("precision.param_dtype", "fp32", default_location(str(path), "deepspeed", (0, 19, 8)))
    conversion = writer.convert(document)
    back = axolotl.read(conversion.text, "x.yaml")
    assert back.data["bf16"] is False and back.plan.precision.param_dtype == "fp32"
    (entry,) = [e for e in conversion.entries if e.source == "precision.param_dtype"]
    assert entry.target == "bf16" and "default of deepspeed 0.19.8" in entry.reason


def test_write_from_a_plan():
    path = FIXTURES / "deepspeed" / "zero2_bf16_adamw.json"
    text = writer.write(deepspeed.read(path.read_text(), str(path)).plan)
    data = axolotl.read(text, "x.yaml").data
    assert data["optimizer"] == "adamw_torch_fused" and data["bf16"] is True and data["lr_scheduler"] == "cosine"


@pytest.mark.parametrize("dotted, value", [
    ("sharding.reshard_after_forward", False), ("activation_checkpointing.enabled", False),
    ("offload.params.device", "none"), ("precision.param_dtype", "fp16"), ("optimizer.betas", [0.8, 0.9]),
    ("parallelism.tensor", 2),
])
def test_edits_of_distributed_fields_land_in_their_keys(dotted, value):
    text = ("# header\nbase_model: m\nmicro_batch_size: 1\ngradient_checkpointing: true  # on\nbf16: true\n"
            "fsdp_version: 2\nfsdp_config:\n  fsdp_offload_params: true\n  reshard_after_forward: true\n")
    document = axolotl.read(text, "x.yaml")
    assert document.plan.set(dotted, value)
    out = writer.convert(document).text
    plan = axolotl.read(out, "x.yaml").plan
    expected = None if dotted == "offload.params.device" else value
    assert plan.get(dotted) == expected
    assert out.startswith("# header\n") and "# on" in out


def test_converted_config_says_how_to_launch_it():
    path = FIXTURES / "deepspeed" / "zero2_bf16_adamw.json"
    text = writer.convert(deepspeed.read(path.read_text(), str(path))).text
    assert text.startswith("# Axolotl config written by shardshift from zero2_bf16_adamw.json (deepspeed).\n")
    assert "axolotl train" in text.splitlines()[1]


# --- writing the meaning of a resolved Plan (issue 21) ------------------------------------------------


def _plan(values: dict, default: dict | None = None, fmt: str = "megatron"):
    """A Plan as resolution leaves it: `values` set at a flag of a file, `default` filled as a framework's default."""
    from shardshift.plan import Plan
    from shardshift.resolve import default_location
    from shardshift.source import Location

    plan = Plan()
    for line, (dotted, value) in enumerate(values.items(), 1):
        assert plan.set(dotted, value, Location("train.sh", line, 1, "--" + dotted.rsplit(".", 1)[-1]))
    for dotted, value in (default or {}).items():
        assert plan.set(dotted, value, default_location("train.sh", fmt, None))
    return plan


def _convert(plan, fmt: str = "megatron"):
    from shardshift.document import Document

    return writer.convert(Document(path="train.sh", format=fmt, text="", data=None, plan=plan))


def test_accumulation_comes_from_the_resolved_batch_triple():
    # Megatron: global 128, micro 1 on 8 GPUs with TP 2 x PP 2: 2 data-parallel ranks, 64 micro-batches a step
    plan = _plan({"world.world_size": 8, "parallelism.tensor": 2, "parallelism.pipeline": 2, "batch.global_": 128,
                  "batch.micro": 1, "optimizer.lr": 3e-4})
    conversion = _convert(plan)
    back = axolotl.read(conversion.text, "a.yaml").plan
    assert (back.batch.micro, back.batch.accumulation) == (1, 64)
    pipeline = next(e for e in conversion.entries if e.source == "--pipeline")
    assert pipeline.status == "dropped" and "global batch grows" in pipeline.reason


def test_accumulation_without_the_world_is_unknown_not_guessed():
    conversion = _convert(_plan({"batch.global_": 128, "batch.micro": 2, "optimizer.lr": 1e-4}))
    assert "gradient_accumulation_steps" not in axolotl.read(conversion.text, "a.yaml").data
    entry = next(e for e in conversion.entries if e.source == "--global_")
    assert entry.status == "unknown" and "128 / (micro batch 2 x the data-parallel ranks)" in entry.reason


def test_a_defaulted_bf16_is_written_and_reads_back():
    conversion = _convert(_plan({"optimizer.lr": 1e-4}, {"precision.param_dtype": "bf16"}, "torchtitan"), "torchtitan")
    back = axolotl.read(conversion.text, "a.yaml")
    assert back.data["bf16"] is True and back.plan.precision.param_dtype == "bf16"


def test_required_settings_the_plan_cannot_supply_are_placeholders():
    from shardshift.resolve import PLACEHOLDER

    conversion = _convert(_plan({"batch.micro": 4}))
    text = conversion.text
    lines = {line.split(":")[0].strip("- "): line for line in text.splitlines()}
    for key, comment in (("base_model", "the model to train"), ("learning_rate", "the peak learning rate"),
                         ("path", "your dataset")):
        assert re.fullmatch(rf"-? ?{key}: {PLACEHOLDER} +# shardshift: {comment}.*", lines[key]), lines[key]
    placeholders = {e.target: e for e in conversion.entries if e.reason.startswith(f"placeholder {PLACEHOLDER}")}
    assert set(placeholders) == {"base_model", "datasets", "learning_rate"}
    assert all(e.status == "unknown" for e in placeholders.values())
    assert axolotl.read(text, "a.yaml").plan.optimizer is None  # no learning rate invented


def test_the_source_lr_and_schedule_are_written():
    plan = _plan({"optimizer.lr": 3e-4, "scheduler.name": "linear", "scheduler.warmup_steps": 100,
                  "batch.micro": 2})
    conversion = _convert(plan)
    back = axolotl.read(conversion.text, "a.yaml").plan
    assert (back.optimizer.lr, back.scheduler.name, back.scheduler.warmup_steps) == (3e-4, "linear", 100)
    assert "learning_rate" not in {e.target for e in conversion.entries if e.status == "unknown"}


def test_an_auto_micro_batch_is_not_written():
    conversion = _convert(_plan({"batch.micro": "auto", "optimizer.lr": 1e-4}))
    assert "micro_batch_size" not in axolotl.read(conversion.text, "a.yaml").data
    assert next(e for e in conversion.entries if e.source == "--micro").status == "unknown"


@needs_corpus
def test_no_blanket_entries_for_any_source():
    from shardshift import api

    from conftest import CORPUS

    for folder, suffix in (("torchtitan", ".toml"), ("accelerate", ".yaml"), ("megatron-scripts", ".sh"),
                           ("fsdp2", ".py")):
        for path in sorted((CORPUS / folder).glob("*" + suffix))[:4]:
            migration = api.convert(str(path), "axolotl")
            blanket = [e for e in migration.entries if "mapping for it" in e.reason or "carried in the Plan" in
                       e.reason or "key table" in e.reason]
            assert blanket == [], (path.name, blanket[:1])
