"""Case tables for the torchtitan rules, run through the real CLI (`check --format json`)."""

from __future__ import annotations

import pytest

from conftest import FIXTURES, check_json, shown
from rule_cases import findings_with_code, marker_position

RULES = FIXTURES / "torchtitan" / "rules"

# (fixture, args, code, severity, pointer, marker, occurrence, fix, related markers)
BAD_CASES = [
    ("TT001/bad.toml", [], "TT001", "error", "/parallelism/tensor_paralel_degree", "tensor_paralel_degree", 1,
     "tensor_parallel_degree", []),
    ("TT001/bad_section.toml", [], "TT001", "error", "/paralelism", "paralelism", 1, "parallelism", []),
    ("TT002/bad.toml", [], "TT002", "error", "/activation_checkpoint/mode", '"partial"', 1, None, []),
    ("TT002/bad_int.toml", [], "TT002", "error", "/training/local_batch_size", "2.0", 1, None, []),
    ("TT003/bad.toml", [], "TT003", "error", "/training/batch_size", "batch_size", 1, None, []),
    ("TT003/bad_converter.toml", [], "TT003", "error", "/model/converters/0", '"float8"', 1,
     '"quantize.linear.float8"', []),
    ("TT003/bad_deprecated.toml", [], "TT003", "warning", "/model/tokenizer_path", "tokenizer_path", 1, None, []),
    ("TT101/bad.toml", ["--world-size", "8"], "TT101", "error", "/parallelism/data_parallel_shard_degree", "-1", 1,
     None, [("/parallelism/tensor_parallel_degree", "tensor_parallel_degree = ")]),
    ("TT101/bad_zero.toml", ["--world-size", "8"], "TT101", "error", "/parallelism/data_parallel_shard_degree", "-1",
     1, None, [("/parallelism/tensor_parallel_degree", "tensor_parallel_degree = "),
      ("/parallelism/pipeline_parallel_degree", "pipeline_parallel_degree = ")]),
    ("TT103/bad.toml", [], "TT103", "error", "/parallelism/tensor_parallel_degree", "0", 1, None, []),
    ("TT103/bad_shard.toml", [], "TT103", "error", "/parallelism/data_parallel_shard_degree", "-2", 1, None, []),
    ("TT103/bad_etp.toml", [], "TT103", "error", "/parallelism/expert_tensor_parallel_degree", "4", 1, None,
     [("/parallelism/expert_parallel_degree", "expert_parallel_degree = ")]),
    ("TT102/bad.toml", ["--world-size", "8"], "TT102", "warning", "/training/mixed_precision_param", '"bfloat16"', 1,
     None, [("/parallelism/data_parallel_shard_degree", "data_parallel_shard_degree = ")]),
    ("TT102/bad.toml", [], "TT102", "warning", "/training/mixed_precision_param", '"bfloat16"', 1,
     None, [("/parallelism/data_parallel_shard_degree", "data_parallel_shard_degree = ")]),
    ("TT102/bad_leftover.toml", ["--world-size", "8"], "TT102", "warning", "/parallelism/data_parallel_shard_degree",
     "-1", 1, None, []),
    ("TT004/bad.toml", [], "TT004", "error", "/parallelism/context_parallel_load_balancer", '""', 1, None, []),
    ("TT004/bad_validation_steps.toml", [], "TT004", "error", "/validation/steps", "0", 1, None, []),
    ("TT005/bad.toml", [], "TT005", "error", "/model/name", '"llama_3"', 1, None, []),
    ("TT006/bad.toml", [], "TT006", "error", "/model/converters/1", '"quantize.grouped_mm.mx"', 1, None, []),
    ("TT006/bad_recipe_all_gather.toml", [], "TT006", "error", "/quantize/linear/float8/enable_fsdp_float8_all_gather",
     "true", 1, None, [("/quantize/linear/float8/recipe_name", "recipe_name = ")]),
    ("TT006/bad_moe_pipeline.toml", [], "TT006", "error", "/parallelism/pipeline_parallel_degree", "2", 1, None, []),
    ("TT006/bad_moe_context.toml", [], "TT006", "error", "/parallelism/context_parallel_degree", "2", 1, None, []),
    ("TT006/bad_mx_tp_compile.toml", [], "TT006", "error", "/parallelism/tensor_parallel_degree", "2", 1, None,
     [("/compile/enable", "enable = ")]),
    ("TT002/bad_seed.toml", [], "TT002", "error", "/debug/seed", "1.5", 1, None, []),
    ("TT007/bad.toml", [], "TT007", "error", "/checkpoint/create_seed_checkpoint", "true", 1, None, []),
    ("TT104/bad.toml", ["--world-size", "8"], "TT104", "error", "/checkpoint/create_seed_checkpoint", "true", 2, None,
     []),
    ("PL101/bad.toml", ["--world-size", "8"], "PL101", "error", "/parallelism/tensor_parallel_degree", "2", 2, None,
     [("/parallelism/data_parallel_shard_degree", "data_parallel_shard_degree = ")]),
]


def _ids(case):
    return f"{case[2]}-{case[0]}-{' '.join(case[1])}"


@pytest.mark.parametrize("fixture,args,code,severity,pointer,marker,occurrence,fix,related", BAD_CASES,
                         ids=[_ids(c) for c in BAD_CASES])
def test_bad_fixture_is_reported_at_the_right_place(fixture, args, code, severity, pointer, marker, occurrence, fix,
                                                    related):
    path = RULES / fixture
    status, output = check_json(*args, str(path))
    found = findings_with_code(output, code)
    assert found, output["findings"]
    finding = found[0]
    line, column = marker_position(path, marker, occurrence, skip_comments=True)
    assert (finding["severity"], finding["pointer"], finding["line"], finding["column"]) == (
        severity, pointer, line, column)
    assert finding["fix"] == fix
    assert finding["file"] == shown(path)
    places = [(r["pointer"], r["line"], r["column"]) for r in finding.get("related", [])]
    for other_pointer, other_marker in related:
        other_line, other_column = marker_position(path, other_marker, 1, skip_comments=True)
        other_column += len(other_marker)  # the marker is `key = `: the value follows it
        assert (other_pointer, other_line, other_column) in places, places
    assert status == (1 if any(f["severity"] == "error" for f in output["findings"]) else 0)


def test_the_world_size_decides_the_leftover_rules():
    for fixture, code in (("TT101/bad.toml", "TT101"), ("TT102/bad_leftover.toml", "TT102")):
        _, output = check_json(str(RULES / fixture))
        assert findings_with_code(output, code) == []


def test_no_semantic_rule_on_the_legacy_layout():
    _, output = check_json("--world-size", "8", str(RULES / "TT003" / "bad.toml"))
    assert {f["code"] for f in output["findings"]} == {"TT003"}


GOOD_CASES = sorted(RULES.glob("*/good*.toml"))


@pytest.mark.parametrize("path", GOOD_CASES, ids=[f"{p.parent.name}/{p.name}" for p in GOOD_CASES])
def test_good_fixture_is_clean(path):
    status, output = check_json("--world-size", "8", str(path))
    assert findings_with_code(output, path.parent.name) == []
    assert [f for f in output["findings"] if f["severity"] == "error"] == []
    assert status == 0


def test_fix_renames_a_misspelled_key(tmp_path):
    from conftest import run_cli

    target = tmp_path / "train.toml"
    target.write_text((RULES / "TT001" / "bad.toml").read_text())
    run_cli("check", "--fix", str(target))
    text = target.read_text()
    assert "tensor_parallel_degree = 2" in text and "paralel" not in text
    assert text.startswith("# TT001")


def test_a_seed_checkpoint_launched_on_many_processes_names_the_script():
    launch = FIXTURES / "launch" / "torchtitan"
    _, report = check_json(str(launch / "seed") + "/")
    (finding,) = findings_with_code(report, "TT104")
    assert finding["file"].endswith("train.toml") and "on 8 processes" in finding["message"]
    assert "run_train.sh starts the 8 processes" in finding["message"]
    assert any(r["file"].endswith("run_train.sh") and r["line"] == 5 for r in finding["related"])
    _, report = check_json(str(launch / "seed_one") + "/")
    assert findings_with_code(report, "TT104") == []
