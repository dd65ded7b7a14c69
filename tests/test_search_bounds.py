"""Issue 32, no silent limits: where the search for a ds_config's consumers stops at its bound, the
findings that rest on finding none say so (and where) and never claim that nothing reads the file."""

from __future__ import annotations

import json

from conftest import run_cli

AUTO = '{"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 3}}'


def test_a_bounded_consumer_search_says_where_it_stopped(tmp_path, monkeypatch):
    monkeypatch.setattr("shardshift.context.tree.MAX_WALK_FILES", 50)
    (tmp_path / ".git").mkdir()
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "ds_config.json").write_text(AUTO, encoding="utf-8")
    data = tmp_path / "aaa_data"
    data.mkdir()
    for index in range(200):  # walked first (sorted), past the bound
        (data / f"part_{index:03d}.txt").write_text("x", encoding="utf-8")
    (tmp_path / "zz").mkdir()  # a folder the walk reaches after the data
    (tmp_path / "zz" / "train.sh").write_text("torchrun train.py --deepspeed configs/ds_config.json\n",
                                              encoding="utf-8")
    # the ds_config checked alone (as pre-commit does): its consumers are searched in the repository
    done = run_cli("check", "--isolated", "--format", "json", "--min-severity", "info", "configs", cwd=tmp_path)
    findings = [f for f in json.loads(done.stdout)["findings"] if f["code"] in ("DS420", "DS308")]
    assert findings
    for finding in findings:
        said = finding["message"] + finding["unknown_context"]["what"]
        assert "stopped after 50 files" in said and "aaa_data" in said, finding
        assert "nothing found" not in said and "no file in the checked tree" not in said
    # within the bound the script is found: no DS420, and DS308 judged by the consumer
    monkeypatch.setattr("shardshift.context.tree.MAX_WALK_FILES", 200_000)
    done = run_cli("check", "--isolated", "--format", "json", "--min-severity", "info", "configs", cwd=tmp_path)
    assert not [f for f in json.loads(done.stdout)["findings"] if f["code"] == "DS420"]
