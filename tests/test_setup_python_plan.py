"""A Python script's `TrainingArguments(..., deepspeed="ds.json")` call is a Plan like a launch's flags: its literal
values meet the ds_config's with the Trainer's precedence (PL001 where the Trainer raises at the start of training,
transformers' fill_match), when the script builds a Trainer and names that ds_config alone."""

from __future__ import annotations

import json

import pytest

from shardshift import api

CONFIG = {"train_micro_batch_size_per_gpu": "auto", "optimizer": {"type": "AdamW", "params": {"lr": 2e-5}}}


def _codes(tmp_path, script: str) -> list[tuple[str, str, int]]:
    (tmp_path / "ds.json").write_text(json.dumps(CONFIG), encoding="utf-8")
    (tmp_path / "train.py").write_text(script, encoding="utf-8")
    return [(f.code, f.severity, f.line) for f in api.check([str(tmp_path)]).findings
            if f.code.startswith("PL") and f.file.endswith("train.py")]


ARGS = "from transformers import Trainer, TrainingArguments\nargs = TrainingArguments(output_dir='o', deepspeed='ds.json', "
BUILD = "trainer = Trainer(model=model, args=args)\n"


@pytest.mark.parametrize(("keywords", "build", "expected"), [
    ("learning_rate=1e-5)\n", BUILD, [("PL001", "error", 2)]),
    ("learning_rate=2e-5)\n", BUILD, []),  # the same value: nothing to meet
    ("learning_rate=1e-5)\n", "", []),  # no Trainer built: nothing meets the two
    ("learning_rate=lr)\n", BUILD, []),  # a value the source does not give
    ("per_device_train_batch_size=4)\n", BUILD, []),  # "auto": the Trainer fills it from the argument
])
def test_a_scripts_training_arguments_meet_its_ds_config(tmp_path, keywords, build, expected):
    assert _codes(tmp_path, ARGS + keywords + build) == expected
