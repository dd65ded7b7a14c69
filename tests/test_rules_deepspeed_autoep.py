"""DS446 on AutoEP's checks after it detects the model's MoE layers (fixtures/deepspeed/rules/DS446/moe/): DeepSpeed's
own detection on a one-layer Mixtral reaches each one's check in tests/test_coverage_map.py (`stage=moe`); here, the
severity each premise gives."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import FIXTURES, check_json

RULES = FIXTURES / "deepspeed" / "rules"

MOE = RULES / "DS446" / "moe"
MOE_POINTERS = {"bad_scaling_bool.json": "/expert_parallel/routed_scaling_factor",
                "bad_scaling_infinite.json": "/expert_parallel/routed_scaling_factor",
                "bad_fused_pre.json": "/expert_parallel/score_apply",
                "bad_zero3_quantized.json": "/zero_optimization/zero_quantized_gradients",
                "bad_zero3_hpz.json": "/zero_optimization/zero_hpz_partition_size"}


def test_checks_after_moe_detection_are_errors_only_where_the_preset_makes_detection_certain(tmp_path):
    """With preset_model (or moe_layer_pattern) AutoEP refuses a model without the layers as well, so the check's
    failure is certain; without, a model with no MoE layers AutoEP detects only gets a warning: an info."""
    _, output = check_json("--select", "DS446", "--isolated", str(MOE))
    found = {Path(f["file"]).name: f for f in output["findings"]}
    assert sorted(found) == sorted(MOE_POINTERS)
    for name, finding in found.items():
        assert finding["pointer"] == MOE_POINTERS[name]
        preset = "preset_model" in json.loads((MOE / name).read_text(encoding="utf-8").replace("Infinity", "1"))[
            "expert_parallel"]
        assert finding["severity"] == ("error" if preset else "info"), name
    for name in MOE_POINTERS:
        text = (MOE / name).read_text(encoding="utf-8")
        swapped = text.replace('"preset_model": "mixtral"', '"moe_layer_pattern": "layers\\\\.\\\\d+\\\\.mlp"') \
            if "preset_model" in text else text.replace('"enabled": true,', '"enabled": true, "preset_model": "mixtral",')
        (tmp_path / name).write_text(swapped, encoding="utf-8")
    _, output = check_json("--select", "DS446", "--isolated", str(tmp_path))
    assert {Path(f["file"]).name: f["severity"] for f in output["findings"]} == dict.fromkeys(MOE_POINTERS, "error")


def test_a_bare_infinity_is_an_info_only_where_every_reader_uses_json_load_and_no_preset_is_named(tmp_path):
    text = (MOE / "bad_scaling_infinite.json").read_text(encoding="utf-8").replace('"preset_model": "mixtral",', "")
    (tmp_path / "ds_config.json").write_text(text, encoding="utf-8")
    (tmp_path / "train.py").write_text("from transformers import TrainingArguments\n"
                                       "args = TrainingArguments(output_dir='out', deepspeed='ds_config.json')\n")
    _, output = check_json("--select", "DS446", str(tmp_path))
    (finding,) = output["findings"]
    assert finding["severity"] == "info" and "MoE layers" in finding["unknown_context"]["what"]
    (tmp_path / "train.py").unlink()
    _, output = check_json("--select", "DS446", str(tmp_path))
    assert [f["severity"] for f in output["findings"]] == ["error"]  # DeepSpeed's own loader reads the string
