"""DS453 curriculum-schedule-refused: what DeepSpeed's curriculum sampler refuses, at the severity its
premise earns (the program hands DeepSpeed the training data). DeepSpeed itself reaches each bad
fixture's site with `training_data` passed: tests/test_coverage_map.py (`stage=initialize data=1`)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import FIXTURES, check_json

RULES = FIXTURES / "deepspeed" / "rules" / "DS453"
BAD = sorted(RULES.glob("bad*.json"))


def _findings(*paths: str) -> dict[str, list[dict]]:
    _, output = check_json("--select", "DS453", *paths)
    found: dict[str, list[dict]] = {}
    for finding in output["findings"]:
        found.setdefault(Path(finding["file"]).name, []).append(finding)
    return found


def test_each_bad_fixture_is_reported_and_the_good_one_is_clean():
    found = _findings(str(RULES))
    assert sorted(found) == sorted(p.name for p in BAD)
    # train.py hands DeepSpeed the training data with bad.json (its argparse default): an error that shows
    # where; no script is shown to read the others: infos on the consumer premise
    (error,) = found["bad.json"]
    assert error["severity"] == "error" and "difficulty_step" in error["message"]
    assert error["related"][0]["file"].endswith("train.py") and error["related"][0]["line"] == 13
    for name, findings in found.items():
        if name != "bad.json":
            assert {f["severity"] for f in findings} == {"info"}, name
            assert all(f["unknown_context"]["kind"] == "consumer" for f in findings)


def test_the_premise_decides_the_severity(tmp_path):
    """No consumer: an info on the consumer; a Trainer (which passes no training data): nothing; a script
    passing training_data=None: nothing; deepspeed_io on the engine: an error."""
    config = json.loads((RULES / "bad.json").read_text())
    cases = {
        "alone": None,
        "trainer": "from transformers import TrainingArguments\nTrainingArguments('out', deepspeed='ds.json')\n",
        "no_data": "import deepspeed\ndeepspeed.initialize(model=m, config='ds.json', training_data=None)\n",
        "io": "import deepspeed\nengine, *_ = deepspeed.initialize(model=m, config='ds.json')\n"
              "loader = engine.deepspeed_io(dataset)\n",
    }
    for name, script in cases.items():
        folder = tmp_path / name
        folder.mkdir()
        (folder / "ds.json").write_text(json.dumps(config))
        if script:
            (folder / "train.py").write_text(script)
    found = {name: _findings(str(tmp_path / name)).get("ds.json", []) for name in cases}
    assert [f["severity"] for f in found["alone"]] == ["info"]
    assert found["alone"][0]["unknown_context"]["kind"] == "consumer"
    assert found["trainer"] == [] and found["no_data"] == []
    assert [(f["severity"], f["related"][0]["line"]) for f in found["io"]] == [("error", 3)]


def test_disabled_or_stringly_enabled_curriculum(tmp_path):
    """DeepSpeed tests Python's truth of `enabled`: "false" enables the sampler, false does not."""
    config = json.loads((RULES / "bad.json").read_text())
    shutil.copy(RULES / "train.py", tmp_path / "train.py")
    for value, expected in ((False, []), ("false", ["error"])):
        config["data_efficiency"]["data_sampling"]["curriculum_learning"]["enabled"] = value
        (tmp_path / "bad.json").write_text(json.dumps(config))
        assert [f["severity"] for f in _findings(str(tmp_path)).get("bad.json", [])] == expected


LTD = FIXTURES / "deepspeed" / "rules" / "DS455"


def test_random_ltd_refusals_are_errors_at_their_keys(tmp_path):
    """Every program that trains through the engine builds the scheduler: no consumer premise. Off, or a
    min_value that is already the max_value (get_value is never asked), nothing is reported."""
    _, output = check_json("--select", "DS455", "--isolated", str(LTD))
    found = {Path(f["file"]).name: f for f in output["findings"]}
    assert sorted(found) == sorted(p.name for p in LTD.glob("bad*.json"))
    assert {f["severity"] for f in found.values()} == {"error"}
    assert found["bad_schedule_type.json"]["fix"] == '"fixed_linear"'
    config = json.loads((LTD / "bad_schedule_type.json").read_text())
    block = config["data_efficiency"]["data_routing"]["random_ltd"]
    for change, expected in (({"enabled": False}, 0), ({"enabled": "false"}, 1)):
        block.update(change)
        (tmp_path / "ds.json").write_text(json.dumps(config))
        _, output = check_json("--select", "DS455", "--isolated", str(tmp_path / "ds.json"))
        assert len(output["findings"]) == expected
    block["enabled"] = True
    block["random_ltd_schedule"]["min_value"] = block["random_ltd_schedule"]["max_value"]
    (tmp_path / "ds.json").write_text(json.dumps(config))
    _, output = check_json("--select", "DS455", "--isolated", str(tmp_path / "ds.json"))
    assert output["findings"] == []
