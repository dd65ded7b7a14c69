"""`--format sarif`: valid SARIF 2.1.0 (the OASIS schema in ../shared/schemas), with rule help,
physical and logical locations, and related locations for findings that involve another file."""

from __future__ import annotations

import json

import jsonschema
import pytest

from shardshift.check import CheckedFile, CheckResult
from shardshift.docs_url import rule_url
from shardshift.report import sarif
from shardshift.rules import all_rules
from shardshift.rules.base import Finding, Related

from conftest import FIXTURES, SHARED, check_json, run_cli

SARIF_SCHEMA = SHARED / "schemas" / "sarif-schema-2.1.0.json"
needs_schema = pytest.mark.skipif(not SARIF_SCHEMA.is_file(), reason="../shared/schemas is not present")
RULES = FIXTURES / "deepspeed" / "rules"


def _validate(log: dict) -> None:
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    errors = sorted(jsonschema.Draft4Validator(schema).iter_errors(log), key=lambda e: list(e.path))
    assert not errors, [f"{'/'.join(map(str, e.path))}: {e.message}" for e in errors[:5]]


def _sarif(*args: str, cwd=None) -> tuple[int, dict]:
    done = run_cli("check", "--format", "sarif", *args, cwd=cwd)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


@needs_schema
def test_single_file_findings_are_valid_sarif_with_the_same_places_as_json():
    bad = str(RULES / "DS101" / "bad.json")
    status, log = _sarif(bad)
    _validate(log)
    _, as_json = check_json(bad)
    assert status == 1
    run = log["runs"][0]
    results = run["results"]
    assert len(results) == len(as_json["findings"]) > 0
    rules = run["tool"]["driver"]["rules"]
    for result, finding in zip(results, as_json["findings"]):
        region = result["locations"][0]["physicalLocation"]["region"]
        assert (result["ruleId"], region["startLine"], region["startColumn"]) == (
            finding["code"], finding["line"], finding["column"])
        assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].endswith("DS101/bad.json")
        assert rules[result["ruleIndex"]]["id"] == finding["code"]
        if finding["pointer"]:
            assert result["locations"][0]["logicalLocations"][0]["fullyQualifiedName"] == finding["pointer"]
        assert result["level"] == {"error": "error", "warning": "warning", "info": "note"}[finding["severity"]]


@needs_schema
def test_rules_carry_their_documentation_and_a_help_uri():
    _, log = _sarif(str(FIXTURES / "deepspeed" / "zero2_bf16_adamw.json"))
    _validate(log)
    driver = log["runs"][0]["tool"]["driver"]
    assert [r["id"] for r in driver["rules"]] == [r.code for r in all_rules()]
    for descriptor, rule in zip(driver["rules"], all_rules()):
        assert descriptor["help"]["markdown"] == rule.documentation()
        assert descriptor["shortDescription"]["text"] == rule.summary()
        assert descriptor["helpUri"] == rule_url(rule.code)  # the rule's page of the documentation site
        assert descriptor["helpUri"].endswith(f"/rules/{rule.code}/")
        assert descriptor["fullDescription"]["text"] and "##" not in descriptor["fullDescription"]["text"]


@needs_schema
def test_cross_file_findings_from_the_fixtures_have_related_locations_in_the_other_file():
    # the fixture folders of setups across files (the whole of fixtures/ gives the same, ten times slower)
    folders = [str(FIXTURES / "setups"), str(FIXTURES / "launch")]
    status, log = _sarif(*folders)
    _validate(log)
    _, as_json = check_json(*folders)
    crossing = [f for f in as_json["findings"] if any(r["file"] != f["file"] for r in f.get("related", []))]
    assert crossing, "no cross-file finding among the fixtures"
    results = log["runs"][0]["results"]
    assert len(results) == len(as_json["findings"])
    for result, finding in zip(results, as_json["findings"]):
        related = result.get("relatedLocations", [])
        assert len(related) == len(finding.get("related", []))
        for location, expected in zip(related, finding.get("related", [])):
            physical = location["physicalLocation"]
            assert physical["artifactLocation"]["uri"].endswith(expected["file"].split("/")[-1])
            assert physical["region"]["startLine"] == expected["line"]
            assert location["message"]["text"] == expected["message"]


@needs_schema
def test_constructed_cross_file_finding_renders_valid_sarif(tmp_path, monkeypatch):
    # %SRCROOT% is the checkout holding the working directory (README): make tmp_path that checkout,
    # so that the URIs do not depend on where the machine keeps its temporary files (inside another
    # checkout they would start with that checkout's path to tmp_path).
    (tmp_path / ".git").mkdir()
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)
    monkeypatch.chdir(tmp_path)
    finding = Finding("DS201", "error", "configs/ds config.json", 3, 5, "/train_batch_size", "50% off: a message",
                      "256", "batch-arithmetic",
                      related=[Related("train.py", 12, 9, None, "deepspeed.initialize loads the config here"),
                               Related("/elsewhere/accelerate.yaml", 4, 1, "/num_processes", "the world size")])
    plain = Finding("SS003", "info", "configs/ds config.json", 1, 1, None, "note", None, "unused-suppression")
    result = CheckResult(findings=[finding, plain], files=[CheckedFile("configs/ds config.json", "deepspeed")])
    log = json.loads(sarif.render(result))
    _validate(log)
    first, second = log["runs"][0]["results"]
    assert first["locations"][0]["physicalLocation"]["artifactLocation"] == {
        "uri": "configs/ds%20config.json", "uriBaseId": "%SRCROOT%"}
    related = first["relatedLocations"]
    assert [r["id"] for r in related] == [1, 2]
    assert related[0]["physicalLocation"]["artifactLocation"]["uri"] == "train.py"
    assert related[1]["physicalLocation"]["artifactLocation"]["uri"] == "file:///elsewhere/accelerate.yaml"
    assert related[1]["logicalLocations"][0]["fullyQualifiedName"] == "/num_processes"
    assert "[train.py:12](1)" in first["message"]["text"]
    assert first["properties"]["fix"] == "256"
    assert second["level"] == "note" and "relatedLocations" not in second
    assert log["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.resolve().as_uri() + "/"


def test_clean_run_is_valid_and_empty(tmp_path):
    (tmp_path / "notes.txt").write_text("nothing here")
    status, log = _sarif(str(tmp_path))
    assert status == 0 and log["runs"][0]["results"] == [] and log["version"] == "2.1.0"


@pytest.mark.parametrize("output", ["sarif", "github"])
def test_lone_surrogate_in_a_key_is_printed_escaped(tmp_path, output):
    path = tmp_path / "ds_config.json"
    path.write_text('{"train_micro_batch_size_per_gpu": 8, "x\\ud800": 1}', encoding="utf-8")
    done = run_cli("check", "--format", output, str(path))
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr
    assert "\\ud800" in done.stdout
    if output == "sarif":
        _validate(json.loads(done.stdout))
