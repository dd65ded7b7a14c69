"""`shardshift diff A B` through the real command line: a ds_config against what `convert --to
fsdp2` and `--to accelerate` write from it (across formats, on the merged Plans), the JSON
contract, memory and traffic with a model and a machine, and usage errors."""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES, run_cli

DS = FIXTURES / "deepspeed"
ZERO2 = DS / "zero2_bf16_adamw.json"
ZERO3 = DS / "zero3_offload_fp16.jsonc.json"


def diff_json(*args) -> dict:
    done = run_cli("diff", "--format", "json", *map(str, args))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """zero2_bf16_adamw.json written as FSDP2 code and as an Accelerate config by `convert`."""
    folder = tmp_path_factory.mktemp("converted")
    out = {}
    for target, name in (("fsdp2", "fsdp2_setup.py"), ("accelerate", "accelerate_config.yaml")):
        done = run_cli("convert", ZERO2, "--to", target)
        assert done.returncode == 0, done.stderr
        (folder / name).write_text(done.stdout)
        out[target] = folder / name
    return out


def by_field(result: dict) -> dict[str, dict]:
    return {c["field"]: c for c in result["changes"]}


def test_the_json_contract(converted):
    result = diff_json(ZERO2, converted["fsdp2"])
    assert {"from", "to", "changes", "kept", "passthrough", "memory", "traffic", "summary"} <= set(result)
    assert result["from"] == {"files": ["fixtures/deepspeed/zero2_bf16_adamw.json"], "formats": ["deepspeed"]}
    assert result["to"]["formats"] == ["fsdp2"]
    for change in result["changes"]:
        assert set(change) == {"field", "label", "kind", "from", "to"}
        assert change["kind"] in ("changed", "added", "dropped")
        assert (change["from"] is None) == (change["kind"] == "added")
        assert (change["to"] is None) == (change["kind"] == "dropped")
    assert result["memory"] is None and result["traffic"] is None  # no model, no machine
    assert result["resolved"] == []
    assert isinstance(result["summary"], str)


def test_ds_config_to_fsdp2(converted):
    """ZeRO-2 becomes fully_shard without resharding after forward: the stage stays 2; DeepSpeed's
    buckets have no FSDP2 equivalent (dropped); the dtype stays bf16."""
    result = diff_json(ZERO2, converted["fsdp2"])
    changes = by_field(result)
    assert "sharding.stage" not in changes
    assert {"field": "sharding.stage", "label": "sharding stage", "value": 2} in result["kept"]
    assert {"field": "precision.param_dtype", "label": "parameter dtype", "value": "bf16"} in result["kept"]
    for bucket in ("communication.reduce_bucket_elements", "communication.allgather_bucket_elements"):
        assert changes[bucket]["kind"] == "dropped" and changes[bucket]["from"] == 50_000_000
    assert result["summary"].startswith("fixtures/deepspeed/zero2_bf16_adamw.json → ")
    assert ": sharding stage 2 → 2, " in result["summary"] and "buckets dropped" in result["summary"]
    assert not result["passthrough"]["compared"]  # two formats: their own settings are not comparable


def test_ds_config_to_accelerate(converted):
    """An Accelerate FSDP config has no place for the batch, the optimizer or the schedule."""
    result = diff_json(ZERO2, converted["accelerate"])
    changes = by_field(result)
    for dropped in ("batch.micro", "batch.accumulation", "optimizer.name", "scheduler.name", "gradient_clipping"):
        assert changes[dropped]["kind"] == "dropped", dropped
    assert changes["optimizer.name"]["from"] == "AdamW"
    assert {"field": "sharding.stage", "label": "sharding stage", "value": 2} in result["kept"]
    assert "optimizer dropped (6 settings)" in result["summary"]


def test_two_ds_configs():
    result = diff_json(ZERO2, ZERO3)
    changes = by_field(result)
    assert changes["sharding.stage"] == {"field": "sharding.stage", "label": "sharding stage", "kind": "changed",
                                         "from": 2, "to": 3}
    assert changes["precision.param_dtype"]["from"] == "bf16" and changes["precision.param_dtype"]["to"] == "fp16"
    assert changes["offload.optimizer.device"] == {"field": "offload.optimizer.device", "label": "optimizer offload",
                                                   "kind": "added", "from": None, "to": "cpu"}
    assert changes["communication.reduce_bucket_elements"]["to"] == 16_777_216
    assert "sharding stage 2 → 3" in result["summary"] and "parameter dtype bf16 → fp16" in result["summary"]
    assert result["passthrough"]["compared"] and result["passthrough"]["formats"] == ["deepspeed"]


def test_the_same_setup_has_no_changes():
    result = diff_json(ZERO2, ZERO2)
    assert result["changes"] == [] and result["passthrough"]["changes"] == []
    assert result["summary"].endswith(": sharding stage 2 → 2")


def test_memory_and_traffic_with_a_model_and_a_machine():
    result = diff_json(ZERO2, ZERO3, "--model-params", "8B", "--nodes", "2", "--gpus-per-node", "8")
    memory, traffic = result["memory"], result["traffic"]
    assert memory["from_per_gpu_bytes"] > memory["to_per_gpu_bytes"] > 0  # stage 3 with offload holds less
    assert memory["change"].startswith("-") and memory["change"].endswith("%")
    assert traffic["from_bytes"] > 0 and traffic["to_bytes"] > 0 and traffic["change"].endswith("%")
    assert f"memory per GPU {memory['from_per_gpu_bytes'] / 1e9:.1f} → " in result["summary"]
    assert f"traffic per step {traffic['change']}" in result["summary"]


def test_the_text_output(converted):
    done = run_cli("diff", ZERO2, converted["fsdp2"], "--model-params", "8B", "--world-size", "8")
    assert done.returncode == 0, done.stderr
    first, *rest = done.stdout.splitlines()
    assert first.startswith("fixtures/deepspeed/zero2_bf16_adamw.json → ") and "sharding stage 2 → 2" in first
    text = "\n".join(rest)
    assert "from: fixtures/deepspeed/zero2_bf16_adamw.json (deepspeed)" in text
    assert "reduce bucket" in text and "50,000,000 → not set" in text
    assert "memory per GPU" in text and "traffic per step" in text


@pytest.mark.parametrize("args", [
    (ZERO2, ZERO3, "--model-params", "8B"),  # a model without a machine
    (ZERO2, ZERO3, "--world-size", "8"),  # a machine without a model
    (ZERO2, "no/such.json"),
    (ZERO2, ZERO3, "--model-params", "8 parsecs", "--world-size", "8"),
], ids=["model-only", "machine-only", "missing-file", "bad-unit"])
def test_usage_errors_exit_2(args):
    done = run_cli("diff", *map(str, args))
    assert done.returncode == 2 and done.stdout == "" and done.stderr.startswith("shardshift: ")


def test_resolved_settings_with_a_model_and_a_machine(converted):
    """With a model and a machine the Layouts are compared too: ZeRO-2 keeps 16-bit parameters and
    gradients beside an fp32 master copy; fully_shard keeps the sharded parameters and gradients in
    the model's dtype (fp32) and casts only what it gathers."""
    result = diff_json(ZERO2, converted["fsdp2"], "--model-params", "8B", "--world-size", "16")
    resolved = {r["field"]: (r["from"], r["to"]) for r in result["resolved"]}
    assert resolved["engine"] == ("deepspeed", "fsdp2")
    assert resolved["param_bytes"] == (2, 4) and resolved["master_weights"] == (True, False)
    assert "stage" not in resolved
    done = run_cli("diff", ZERO2, converted["fsdp2"], "--model-params", "8B", "--world-size", "16")
    assert "as the planner resolves them" in done.stdout and "engine: deepspeed → fsdp2" in done.stdout


def test_across_formats_each_side_means_its_frameworks_defaults(tmp_path):
    """A torchtitan TOML that says nothing about precision trains bf16 (torchtitan's default under FSDP);
    a ds_config that says nothing trains fp32: the diff says so, naming both defaults."""
    toml = tmp_path / "train.toml"
    toml.write_text("[parallelism]\ndata_parallel_shard_degree = -1\n[training]\nlocal_batch_size = 2\n")
    ds = tmp_path / "ds_config.json"
    ds.write_text('{"train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 3}}')
    changes = by_field(diff_json(toml, ds))
    dtype = changes["precision.param_dtype"]
    assert (dtype["kind"], dtype["from"], dtype["to"]) == ("changed", "bf16", "fp32")
    assert dtype["from_default"].startswith("default of torchtitan ") and dtype["to_default"].startswith("default of deepspeed ")
    assert "sharding.stage" not in changes and "batch.micro" not in changes  # both say it: kept
    # two files of one format compare as written: nothing is filled in
    assert not any("from_default" in c or "to_default" in c for c in diff_json(ds, ds)["changes"])
    text = run_cli("diff", str(toml), str(ds)).stdout
    assert "bf16 (default) → fp32 (default)" in text
