"""Issue 11: bounded work on hostile input. A rule lists at most MAX_FINDINGS_PER_RULE findings
in one file, the next one standing for the rest, and a rule's generator is not run past it;
suppressions are looked up by line, not scanned per finding. Asserted by counting, not by time
(bench/bench_parse.py measures the time)."""

from __future__ import annotations

import json

from shardshift import check as check_module
from shardshift.rules.base import Finding

from conftest import check_json


def test_a_rule_lists_at_most_the_limit_in_one_file_and_says_so(tmp_path):
    limit = check_module.MAX_FINDINGS_PER_RULE
    config = {f"unknown_key_{i:05d}": 1 for i in range(limit + 500)}
    config["train_batch_size"] = 8
    path = tmp_path / "ds_config.json"
    path.write_text(json.dumps(config))
    status, output = check_json(str(path), "--isolated", "--select", "DS101")
    found = output["findings"]
    assert len(found) == limit + 1 and all(f["code"] == "DS101" for f in found)
    assert f"more than {limit} DS101 findings in this file" in found[-1]["message"]
    assert "unknown_key_01000" in found[-1]["message"] and found[-1]["fix"] is None
    assert found[limit - 1]["pointer"] == "/unknown_key_00999"


def test_the_rest_of_a_rules_findings_is_not_computed():
    produced = []

    def rule_output():
        for i in range(10**6):
            produced.append(i)
            yield Finding("DS101", "warning", "f.json", 1, i + 1, None, f"m{i}")

    listed = check_module._at_most(rule_output(), 1000)
    assert len(listed) == 1001 and len(produced) == 1001


def test_suppressions_are_matched_by_line(tmp_path):
    # 3000 suppressed unknown keys, one per line: each finding meets only its own line's comment
    lines = ["{"] + [f'  "unknown_{i}": 1, // shardshift: ignore[DS101]' for i in range(3000)] + ['  "train_batch_size": 8', "}"]
    path = tmp_path / "ds_config.json"
    path.write_text("\n".join(lines) + "\n")
    status, output = check_json(str(path), "--isolated", "--select", "DS101,SS003")
    assert [f for f in output["findings"] if f["code"] == "DS101"] == []


def test_suppressions_beyond_the_limit_are_used_not_reported_as_unused(tmp_path):
    limit = check_module.MAX_FINDINGS_PER_RULE
    # suppressed findings do not count towards the limit, so every suppression meets its finding
    lines = ["{"] + [f'  "unknown_{i}": 1, // shardshift: ignore[DS101]' for i in range(limit + 200)]
    lines += [f'  "other_{i}": 1,' for i in range(limit + 5)] + ['  "train_batch_size": 8', "}"]
    path = tmp_path / "ds_config.json"
    path.write_text("\n".join(lines) + "\n")
    status, output = check_json(str(path), "--isolated", "--select", "DS101,SS003")
    codes = [f["code"] for f in output["findings"]]
    assert "SS003" not in codes and codes.count("DS101") == limit + 1
    assert all("other_" in f["message"] for f in output["findings"])
