"""Megatron argument lists and launch scripts recognised by their content when named on the command
line, whatever their name (issue 20): `args.txt`, a script with no suffix, `run.job`. A folder walk
still goes by names, so it does not start reading random text files."""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES, check_json, run_cli

HERE = FIXTURES / "megatron" / "recognition"


def _codes(output: dict) -> list[tuple[str, int]]:
    return sorted((f["code"], f["line"]) for f in output["findings"])


@pytest.mark.parametrize("name", ["args.txt", "train", "run.job"])
def test_named_file_is_read_by_content(name):
    status, output = check_json(str(HERE / name))
    assert [f["format"] for f in output["files"]] == ["megatron"]
    codes = [f["code"] for f in output["findings"]]
    assert "SS005" not in codes
    # 32 heads over tensor parallel 3: the same error the same text gets as `a.args` / `train.sh`
    assert "PL103" in codes, output["findings"]
    assert status == 1


def test_args_txt_gets_the_findings_of_the_same_text_as_args(tmp_path):
    text = (HERE / "args.txt").read_text()
    (tmp_path / "a.args").write_text(text)
    (tmp_path / "args.txt").write_text(text)
    _, as_args = check_json(str(tmp_path / "a.args"))
    _, as_txt = check_json(str(tmp_path / "args.txt"))
    assert _codes(as_args) == _codes(as_txt) != []


def test_launch_script_world_from_content_named_file():
    from shardshift import load

    setup = load(str(HERE / "train"))
    assert setup.plan.get("world.world_size") == 6
    assert setup.plan.get("parallelism.tensor") == 3


@pytest.mark.parametrize("name", ["notes.txt", "tokens.txt"])
def test_text_that_is_no_argument_list_stays_ss005(name):
    status, output = check_json(str(HERE / name))
    assert [f["code"] for f in output["findings"]] == ["SS005"]
    assert status == 1


def test_walk_does_not_pick_up_text_files():
    _, output = check_json(str(HERE))
    assert output["files"] == []
    assert output["findings"] == []


def test_convert_args_txt():
    done = run_cli("convert", str(HERE / "args.txt"), "--to", "megatron-args")
    assert done.returncode == 0, done.stderr
    assert "--tensor-model-parallel-size 3" in done.stdout
    done = run_cli("convert", str(HERE / "args.txt"), "--to", "deepspeed")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["train_micro_batch_size_per_gpu"] == 2
