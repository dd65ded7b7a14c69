"""Case tables for the foundation rules, run through the real CLI (`check --format json`).

Each case: fixture, extra CLI arguments, expected code, severity, pointer, and the text that
marks where the finding must point (its line and column are looked up in the fixture)."""

from __future__ import annotations

import pytest

from conftest import FIXTURES, ROOT, check_json
from rule_cases import findings_with_code, marker_position

RULES = FIXTURES / "deepspeed" / "rules"

# (fixture, args, code, severity, pointer, marker, occurrence, fix)
BAD_CASES = [
    ("SS001/bad.json", [], "SS001", "error", None, "BATCH_SIZE", 1, None),
    ("SS002/bad.json", [], "SS002", "error", "/train_micro_batch_size_per_gpu", '"train_micro_batch_size_per_gpu"', 2,
     None),
    ("DS101/bad.json", [], "DS101", "error", "/zero_optimisation", '"zero_optimisation"', 1, "zero_optimization"),
    ("DS101/bad_strict.json", [], "DS101", "error", "/zero_optimization/reduce_bucket_sise", '"reduce_bucket_sise"', 1,
     "reduce_bucket_size"),
    ("DS102/bad.json", [], "DS102", "error", "/zero_optimization/reduce_bucket_size", '"5e8"', 1, "500000000"),
    ("DS102/bad_stage.json", [], "DS102", "error", "/zero_optimization/stage", "4", 2, None),
    ("DS102/bad_batch.json", [], "DS102", "error", "/train_micro_batch_size_per_gpu", "0,", 1, None),
    ("DS102/bad_fraction.json", [], "DS102", "error", "/gradient_accumulation_steps", "2.5", 1, "2"),
    ("DS102/bad_fraction_strict.json", [], "DS102", "error", "/zero_optimization/reduce_bucket_size", "1000.5", 1,
     "1000"),
    ("DS201/bad.json", [], "DS201", "error", "/train_batch_size", "60", 1, "32"),
    ("DS201/bad.json", ["--world-size", "8"], "DS201", "error", "/train_batch_size", "60", 1, "256"),
    ("DS201/bad_world.json", ["--nodes", "2", "--gpus-per-node", "4"], "DS201", "error", "/train_batch_size", "64", 1,
     "256"),
]


@pytest.mark.parametrize("fixture,args,code,severity,pointer,marker,occurrence,fix", BAD_CASES,
                         ids=[f"{c[2]}-{c[0]}-{' '.join(c[1])}" for c in BAD_CASES])
def test_bad_fixture_is_reported_at_the_right_place(fixture, args, code, severity, pointer, marker, occurrence, fix):
    path = RULES / fixture
    status, output = check_json(*args, str(path))
    found = findings_with_code(output, code)
    assert len(found) == 1, output["findings"]
    finding = found[0]
    line, column = marker_position(path, marker, occurrence)
    assert (finding["severity"], finding["pointer"], finding["line"], finding["column"]) == (
        severity, pointer, line, column)
    assert finding["fix"] == fix
    assert finding["file"] == str(path.relative_to(ROOT))  # relative to the current directory
    assert status == (1 if severity == "error" else 0)


GOOD_CASES = sorted(RULES.glob("*/good*.json"))


@pytest.mark.parametrize("path", GOOD_CASES, ids=[f"{p.parent.name}/{p.name}" for p in GOOD_CASES])
def test_good_fixture_has_no_finding_of_its_rule(path):
    status, output = check_json("--world-size", "8", str(path))
    assert findings_with_code(output, path.parent.name) == []


@pytest.mark.parametrize("path", GOOD_CASES, ids=[f"{p.parent.name}/{p.name}" for p in GOOD_CASES])
def test_good_fixture_has_no_errors_at_all(path):
    status, output = check_json("--world-size", "8", str(path))
    assert [f for f in output["findings"] if f["severity"] == "error"] == []
    assert status == 0


def test_batch_rule_derives_like_deepspeed_when_only_total_and_micro_are_given(tmp_path):
    # train 32, micro 3 on 4 GPUs: DeepSpeed derives accumulation 32 // 3 // 4 = 2, then 3 × 2 × 4 = 24 ≠ 32.
    path = tmp_path / "ds_config.json"
    path.write_text('{"train_batch_size": 32, "train_micro_batch_size_per_gpu": 3, "gradient_clipping": 1.0}')
    status, output = check_json("--world-size", "4", str(path))
    (finding,) = findings_with_code(output, "DS201")
    assert "24" in finding["message"] and finding["fix"] == "24"
    status, output = check_json("--world-size", "2", str(path))  # 32 // 3 // 2 = 5; 3 × 5 × 2 = 30 ≠ 32
    assert findings_with_code(output, "DS201")[0]["fix"] == "30"


def test_batch_rule_uses_the_data_parallel_size_under_sequence_parallelism(tmp_path):
    path = tmp_path / "ds_config.json"
    path.write_text('{"train_batch_size": 32, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2,'
                    ' "sequence_parallel_size": 2, "gradient_clipping": 1.0}')
    assert findings_with_code(check_json("--world-size", "8", str(path))[1], "DS201") == []  # 4 × 2 × (8/2)
    (finding,) = findings_with_code(check_json("--world-size", "16", str(path))[1], "DS201")
    assert finding["fix"] == "64"


def test_batch_rule_leaves_auto_values_to_the_hugging_face_integration(tmp_path):
    path = tmp_path / "ds_config.json"
    path.write_text('{"train_batch_size": "auto", "train_micro_batch_size_per_gpu": 3, "gradient_clipping": 1.0}')
    assert findings_with_code(check_json("--world-size", "8", str(path))[1], "DS201") == []
