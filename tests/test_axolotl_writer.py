"""The Axolotl writer: same-format round trips keep the text (comments included) and the Plan;
edits touch only their key; a ds_config becomes an Axolotl FSDP2 config with a report for every
setting."""

from __future__ import annotations

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
    path = FIXTURES / "deepspeed" / "zero1_fp32_sgd.json"
    conversion = writer.convert(deepspeed.read(path.read_text(), str(path)))
    assert axolotl.read(conversion.text, "x.yaml").data["bf16"] is False


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
