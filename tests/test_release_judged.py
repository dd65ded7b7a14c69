"""Issue 19, cause 4: sections DeepSpeed validated leniently before some release (DS101), and an
old Accelerate key that older releases still read (AC002), judged by the release the repository pins."""

from __future__ import annotations

import json

import pytest

from conftest import check_json

DS_CONFIG = {"train_micro_batch_size_per_gpu": 4,
             "fp16": {"enabled": True, "fp16_opt_level": "O2"},
             "zero_optimization": {"stage": 3, "stage3_param_persitence_threshold": 10000}}


def _setup(tmp_path, pin: str | None, name: str, text: str):
    if pin is not None:
        (tmp_path / "requirements.txt").write_text(pin + "\n", encoding="utf-8")
    (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def _found(tmp_path, code: str) -> dict[str, dict]:
    _, output = check_json(str(tmp_path), "--isolated", cwd=tmp_path)
    return {f["pointer"]: f for f in output["findings"] if f["code"] == code}


def test_unknown_keys_in_lenient_sections_are_ignored_not_refused_by_an_old_pinned_deepspeed(tmp_path):
    found = _found(_setup(tmp_path, "deepspeed==0.10.0", "ds_config.json", json.dumps(DS_CONFIG)), "DS101")
    opt_level = found["/fp16/fp16_opt_level"]
    assert opt_level["severity"] == "warning"
    assert "DeepSpeed 0.10.0" in opt_level["message"] and "ignores it" in opt_level["message"]
    assert "rejects it from 0.17.1" in opt_level["message"]
    # zero_optimization has been strict since 0.7.0, so 0.10.0 refuses the misspelt key
    assert "rejects it at launch" in found["/zero_optimization/stage3_param_persitence_threshold"]["message"]


def test_a_misspelt_zero_key_is_silently_ignored_before_0_7(tmp_path):
    found = _found(_setup(tmp_path, "deepspeed==0.6.5", "ds_config.json", json.dumps(DS_CONFIG)), "DS101")
    typo = found["/zero_optimization/stage3_param_persitence_threshold"]
    assert typo["severity"] == "error" and "DeepSpeed 0.6.5" in typo["message"]
    assert "silently ignores it" in typo["message"] and "rejects it from 0.7.0" in typo["message"]
    assert typo["fix"] == "stage3_param_persistence_threshold"


@pytest.mark.parametrize("pin", ["deepspeed==0.19.8", "deepspeed==0.17.1"])
def test_from_the_strict_release_on_they_are_refused(tmp_path, pin):
    found = _found(_setup(tmp_path, pin, "ds_config.json", json.dumps(DS_CONFIG)), "DS101")
    assert found["/fp16/fp16_opt_level"]["severity"] == "error"
    assert "rejects it at launch" in found["/fp16/fp16_opt_level"]["message"]


def test_with_no_pin_a_key_the_releases_judge_differently_is_an_info_naming_the_release(tmp_path):
    # refused from 0.17.1, ignored before: with no release known the verdict is not known either
    found = _found(_setup(tmp_path, None, "ds_config.json", json.dumps(DS_CONFIG)), "DS101")
    opt_level = found["/fp16/fp16_opt_level"]
    assert opt_level["severity"] == "info"
    [release] = [p for p in opt_level["evidence"] if p["premise"] == "release"]
    assert release["state"] == "unknown" and "differs" in release["what"]
    # a near miss is a mistake in every release (refused, or silently ignored): an error with no pin
    assert found["/zero_optimization/stage3_param_persitence_threshold"]["severity"] == "error"


ACCELERATE = """compute_environment: LOCAL_MACHINE
distributed_type: FSDP
num_machines: 1
num_processes: 8
fsdp_config:
  fsdp_backward_prefetch_policy: BACKWARD_PRE
  fsdp_sharding_strategy: FULL_SHARD
"""
POINTER = "/fsdp_config/fsdp_backward_prefetch_policy"


def test_an_old_accelerate_that_still_reads_the_old_key_is_clean(tmp_path):
    assert POINTER not in _found(_setup(tmp_path, "accelerate==0.31.0", "accelerate.yaml", ACCELERATE), "AC002")


def test_the_newest_accelerate_ignores_the_old_key_with_a_fix(tmp_path):
    finding = _found(_setup(tmp_path, None, "accelerate.yaml", ACCELERATE), "AC002")[POINTER]
    assert finding["severity"] == "warning" and finding["fix"] == "fsdp_backward_prefetch"
    assert "accelerate 0.31.0 still read it" in finding["message"]


def test_a_release_the_table_does_not_cover_is_unknown_context(tmp_path):
    finding = _found(_setup(tmp_path, "accelerate==1.0.0", "accelerate.yaml", ACCELERATE), "AC002")[POINTER]
    assert finding["severity"] == "info" and finding["unknown_context"]["kind"] == "release"
    assert "accelerate 1.0.0" in finding["unknown_context"]["what"]
