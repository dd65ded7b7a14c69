"""DS101 / DS102 where DeepSpeed's releases judge a section differently: fp16 and bf16 are validated strictly
(pydantic) only from 0.17.1 (before, read key by key: an unknown key ignored, a value used as written), and the
config models moved to pydantic v2 in 0.15.0 (before, a fraction for a whole-number field was truncated). With
the release known, the verdict is that release's; with none, a verdict the releases disagree on is an info
naming the release as unknown, and one they agree on stays an error."""

from __future__ import annotations

import json

import pytest

from shardshift import api

FRACTION_FP16 = {"train_batch_size": 8, "fp16": {"enabled": True, "min_loss_scale": 0.5}}
FRACTION_WINDOW = {"train_batch_size": 8, "fp16": {"enabled": True, "loss_scale_window": 100.5}}
FRACTION_ZERO = {"train_batch_size": 8, "zero_optimization": {"stage": 2, "reduce_bucket_size": 500000000.5}}
UNKNOWN_FP16 = {"train_batch_size": 8, "fp16": {"enabled": True, "opt_level": "O2"}}
NEAR_MISS_FP16 = {"train_batch_size": 8, "fp16": {"enabled": True, "loss_scale_windw": 100}}
ZERO_BUCKET = {"train_batch_size": 8, "zero_optimization": {"stage": 2, "reduce_bucket_size": 0}}


@pytest.mark.parametrize(("config", "release", "code", "expected", "words"), [
    (FRACTION_FP16, "0.19.8", "DS102", "error", "config parser rejects it"),
    # a floor for the dynamic loss scale, used as meant where fp16 is read key by key: nothing fails until 0.17.1
    (FRACTION_FP16, "0.16.9", "DS102", "info", "reads fp16 key by key and uses it as written; DeepSpeed validates "
                                               "the section, and rejects a fraction here, from 0.17.1 on"),
    (FRACTION_WINDOW, "0.16.9", "DS102", "warning", "reads fp16 key by key and takes it; DeepSpeed validates the "
                                                    "section, and rejects it, from 0.17.1 on"),
    (FRACTION_FP16, None, "DS102", "info", ""),
    (FRACTION_ZERO, "0.15.0", "DS102", "error", "config parser rejects it"),
    (FRACTION_ZERO, "0.14.4", "DS102", "warning", "truncates it to 500000000 (pydantic v1); DeepSpeed rejects it "
                                                  "from 0.15.0 on"),
    (FRACTION_ZERO, None, "DS102", "info", ""),
    (UNKNOWN_FP16, "0.19.8", "DS101", "error", "rejects it at launch"),
    (UNKNOWN_FP16, "0.16.9", "DS101", "warning", "ignores it"),
    (UNKNOWN_FP16, None, "DS101", "info", ""),
    (NEAR_MISS_FP16, None, "DS101", "error", "did you mean 'loss_scale_window'"),  # refused or ignored: a mistake
    (ZERO_BUCKET, None, "DS102", "error", "must be greater than 0"),  # every release read refuses it
])
def test_the_release_decides_a_strict_sections_verdict(tmp_path, config, release, code, expected, words):
    path = tmp_path / "ds_config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    options = {"deepspeed_version": release} if release else {}
    found = [f for f in api.check([str(path)], isolated=True, **options).findings if f.code == code]
    assert [f.severity for f in found] == [expected], [(f.severity, f.message) for f in found]
    assert words in found[0].message
    if expected == "info" and release is None:
        [premise] = [p for p in found[0].evidence if p.kind == "release"]
        assert premise.state == "unknown" and "differs" in premise.what
