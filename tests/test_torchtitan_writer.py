"""torchtitan TOML writer: same-format round trips keep the text; conversions report every setting."""

from __future__ import annotations

import glob
import os

import pytest
import tomllib
from deepdiff import DeepDiff
from hypothesis import given, settings
from hypothesis import strategies as st

from shardshift.document import MAPPING_STATUSES
from shardshift.formats.torchtitan import read
from shardshift.formats.torchtitan.writer import convert, dumps, write
from shardshift.plan import Plan

from conftest import FIXTURES

CORPUS = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "corpus", "torchtitan")
FILES = sorted(glob.glob(os.path.join(CORPUS, "*.toml")))
DS_FIXTURES = sorted((FIXTURES / "deepspeed").glob("*.json"))


def _corpus():
    if not FILES:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the torchtitan corpus is missing at {CORPUS}")
        pytest.skip("the torchtitan corpus is not here")
    return FILES


def _plain(data):
    """Plan data without the places Unknowns record (two reads of one setting in two files)."""
    if isinstance(data, dict):
        return {k: _plain(v) for k, v in data.items() if k != "where"}
    if isinstance(data, list):
        return [_plain(v) for v in data]
    return data


def test_corpus_round_trip_keeps_the_text_and_the_plan():
    for path in _corpus():
        text = open(path, encoding="utf-8").read()
        document = read(text, path)
        conversion = convert(document)
        assert conversion.text == text, path
        assert {e.status for e in conversion.entries} == {"exact"}
        written = write(document.plan)
        assert tomllib.loads(written) == document.data, path
        again = read(written, "again.toml")
        assert DeepDiff(_plain(document.plan.to_data()), _plain(again.plan.to_data())) == {}, path


SOURCE = """# my run
[training]
local_batch_size = 2  # per GPU
seq_len = 2048

[parallelism]
tensor_parallel_degree = 2  # within a node
"""


def test_a_changed_value_is_edited_in_place_and_comments_stay():
    document = read(SOURCE, "t.toml")
    document.plan.parallelism.tensor = 4
    document.plan.batch.global_ = 64
    document.plan.set("optimizer.lr", 1e-4)
    text = convert(document).text
    assert text == ("# my run\n[training]\nlocal_batch_size = 2  # per GPU\nseq_len = 2048\nglobal_batch_size = 64\n\n"
                    "[parallelism]\ntensor_parallel_degree = 4  # within a node\n\n[optimizer]\nlr = 0.0001\n")
    plan = read(text, "t.toml").plan
    assert (plan.parallelism.tensor, plan.batch.global_, plan.optimizer.lr) == (4, 64, 1e-4)


def test_the_legacy_layout_is_edited_at_its_own_keys():
    text = "[training]\nbatch_size = 8\ntensor_parallel_degree = 8  # TP\n"
    document = read(text, "old.toml")
    document.plan.parallelism.tensor = 4
    assert convert(document).text == "[training]\nbatch_size = 8\ntensor_parallel_degree = 4  # TP\n"


@pytest.mark.parametrize("path", DS_FIXTURES, ids=[p.name for p in DS_FIXTURES])
def test_ds_config_conversion_reports_every_setting_and_reads_back(path):
    from shardshift.formats.deepspeed import read as read_ds

    source = read_ds(path.read_text(), str(path))
    conversion = convert(source)
    conversion.mark_unknowns(source.plan)
    settings_ = {pointer for pointer, _, _ in source.settings()}
    assert settings_ <= {e.source for e in conversion.entries}
    assert all(e.status in MAPPING_STATUSES and e.reason for e in conversion.entries)
    assert all(e.target is None for e in conversion.entries if e.status == "dropped")
    target = read(conversion.text, "out.toml")
    assert target.syntax is None
    plan, out = source.plan, target.plan
    for dotted in ("batch.micro", "batch.global_", "gradient_clipping", "optimizer.lr", "optimizer.eps",
                   "optimizer.weight_decay", "optimizer.betas"):
        value = plan.get(dotted)
        if dotted.startswith("optimizer.") and str(plan.optimizer.name).lower() not in ("adam", "adamw"):
            continue  # torchtitan builds only Adam and AdamW: the optimizer is dropped (tested below)
        if isinstance(value, (int, float, list)) and not isinstance(value, bool):
            assert out.get(dotted) == value, dotted
    for entry in conversion.entries:
        if entry.status in ("exact", "approximate") and entry.target:
            for key in entry.target.split(", "):
                section, _, name = key.rpartition(".")
                assert name in tomllib.loads(conversion.text).get(section.split(".")[0], {}) or "." in section, key


def test_zero3_offload_becomes_fsdp_with_cpu_offload():
    from shardshift.formats.deepspeed import read as read_ds

    path = FIXTURES / "deepspeed" / "zero3_offload_fp16.jsonc.json"
    conversion = convert(read_ds(path.read_text(), str(path)))
    data = tomllib.loads(conversion.text)
    assert data["parallelism"]["data_parallel_shard_degree"] == -1
    assert data["training"]["enable_cpu_offload"] is True
    fp16 = next(e for e in conversion.entries if e.source == "/fp16/enabled")
    assert fp16.status == "dropped" and "bfloat16 or float32" in fp16.reason


def test_unsupported_optimizer_is_dropped_with_the_reason():
    plan = Plan()
    plan.set("optimizer.name", "SGD")
    plan.set("optimizer.lr", 0.1)
    assert "optimizer" not in tomllib.loads(write(plan))


@settings(max_examples=60, deadline=None)
@given(
    degrees=st.fixed_dictionaries({}, optional={
        name: st.integers(1, 64) for name in ("data_parallel_replicate", "data_parallel_shard", "tensor", "pipeline",
                                              "context", "expert")}),
    micro=st.none() | st.integers(1, 512), seq=st.none() | st.integers(1, 1 << 17),
    lr=st.none() | st.floats(1e-8, 1.0), clip=st.none() | st.floats(0.0, 100.0),
    dtype=st.none() | st.sampled_from(["bf16", "fp32"]), ac=st.none() | st.booleans(),
    reshard=st.none() | st.booleans(), comment=st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=20),
)
def test_written_plans_read_back(degrees, micro, seq, lr, clip, dtype, ac, reshard, comment):
    plan = Plan()
    for name, value in degrees.items():
        plan.set(f"parallelism.{name}", value)
    for dotted, value in (("batch.micro", micro), ("batch.sequence_length", seq), ("optimizer.lr", lr),
                          ("gradient_clipping", clip), ("precision.param_dtype", dtype),
                          ("activation_checkpointing.enabled", ac), ("sharding.reshard_after_forward", reshard)):
        if value is not None:
            plan.set(dotted, value)
    plan.passthrough["torchtitan"] = {"job": {"description": comment}}
    text = write(plan)
    back = read(text, "w.toml").plan
    for dotted, value in plan.leaves():
        if dotted == "sharding.reshard_after_forward":
            continue  # "always"/"never" read back as written
        assert back.get(dotted) == value, (dotted, text)
    assert back.passthrough["torchtitan"]["job"]["description"] == comment


def test_dumps_quotes_what_needs_quoting():
    data = {"a b": {"x": "é\"\\\n", "y": [1, 2.0, True], "z": {"w": 1}}, "t": {}}
    assert tomllib.loads(dumps(data)) == data


def test_corpus_edits_change_only_the_edited_values():
    for path in _corpus():
        text = open(path, encoding="utf-8").read()
        document = read(text, path)
        plan = document.plan
        plan.set("parallelism.tensor", 4)
        plan.set("optimizer.lr", 0.001)
        plan.set("batch.sequence_length", 1234)
        plan.set("batch.global_", 64)
        edited = convert(document).text
        again = read(edited, path).plan
        assert (again.parallelism.tensor, again.optimizer.lr, again.batch.sequence_length, again.batch.global_) == (
            4, 0.001, 1234, 64), path
        comments = [line for line in text.splitlines() if line.lstrip().startswith("#")]
        assert [line for line in edited.splitlines() if line.lstrip().startswith("#")] == comments, path
        before, after = tomllib.loads(text), tomllib.loads(edited)
        for section in before:
            if section not in ("parallelism", "optimizer", "training"):
                assert after[section] == before[section], (path, section)


# --- writing the meaning of a resolved Plan (issue 21) ------------------------------------------------


def _resolved(values: dict, default: dict | None = None, framework: str = "deepspeed") -> Plan:
    from shardshift.resolve import default_location
    from shardshift.source import Location

    plan = Plan()
    for line, (dotted, value) in enumerate(values.items(), 1):
        assert plan.set(dotted, value, Location("src.json", line, 1, "/" + dotted.replace(".", "/")))
    for dotted, value in (default or {}).items():
        assert plan.set(dotted, value, default_location("src.json", framework, None))
    return plan


def _convert(plan: Plan, fmt: str = "deepspeed"):
    from shardshift.document import Document

    return convert(Document(path="src.json", format=fmt, text="", data={}, plan=plan))


def test_an_fp32_default_is_written_since_torchtitan_trains_bf16_under_fsdp():
    conversion = _convert(_resolved({"batch.micro": 2}, {"precision.param_dtype": "fp32", "sharding.stage": 0}))
    data = tomllib.loads(conversion.text)
    assert data["training"]["mixed_precision_param"] == "float32"
    assert data["parallelism"]["data_parallel_shard_degree"] == 1  # ZeRO-0: no sharding
    back = read(conversion.text, "out.toml").plan
    assert back.precision.param_dtype == "fp32"
    entry = next(e for e in conversion.entries if e.source == "precision.param_dtype")
    assert entry.target == "training.mixed_precision_param" and "default of deepspeed" in entry.reason


def test_hugging_face_adamw_names_are_torchtitans_adamw_with_the_lr():
    conversion = _convert(_resolved({"optimizer.name": "adamw_torch_fused", "optimizer.lr": 2e-5}), "axolotl")
    back = read(conversion.text, "out.toml").plan
    assert (back.optimizer.name, back.optimizer.lr) == ("AdamW", 2e-5)
    assert next(e for e in conversion.entries if e.source == "/optimizer/name").status == "approximate"


def test_deepspeed_decay_schedules_keep_their_shape():
    plan = _resolved({"scheduler.name": "WarmupCosineLR", "scheduler.warmup_steps": 10, "optimizer.name": "AdamW",
                      "optimizer.lr": 1e-4})
    data = tomllib.loads(_convert(plan).text)
    assert data["lr_scheduler"]["decay_type"] == "cosine" and data["lr_scheduler"]["warmup_steps"] == 10


def test_code_sources_are_reported_by_their_fields_not_as_uncarried():
    from shardshift.formats import fsdp2

    text = ("import torch\nfrom torch.distributed.fsdp import fully_shard, MixedPrecisionPolicy\n"
            "def build(model):\n"
            "    fully_shard(model, mp_policy=MixedPrecisionPolicy(param_dtype=torch.bfloat16), "
            "reshard_after_forward=False)\n")
    document = fsdp2.read(text, "train.py")
    conversion = convert(document)
    assert not [e for e in conversion.entries if "no neutral meaning" in e.reason or "not carried" in e.reason]
    entry = next(e for e in conversion.entries if e.source == "/precision/param_dtype")
    assert entry.target == "training.mixed_precision_param" and entry.status == "approximate"
    assert tomllib.loads(conversion.text)["training"]["mixed_precision_param"] == "bfloat16"
