"""Issue 11: a quiet default (infos counted, not shown, in text and GitHub output; an option and a
configuration key set the lowest severity shown; JSON and SARIF keep every finding), one form for
every location in every output, and a check that imports only the rule modules it needs."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from shardshift.rules import RULE_MODULES, module_rules

from conftest import FIXTURES, ROOT, check_json, run_cli

# zero2_bf16_adamw.json has one warning and at least one info (see the assertions, not a count here)
DS_FILE = "fixtures/deepspeed/zero2_bf16_adamw.json"


def _severities(*args: str) -> tuple[dict, list[str]]:
    status, output = check_json(*args)
    return output["summary"], [f["severity"] for f in output["findings"]]


def test_json_keeps_every_finding_and_text_counts_the_hidden_infos():
    summary, severities = _severities(DS_FILE, "--isolated")
    infos = severities.count("info")
    assert infos >= 1 and "warning" in severities and summary["hidden"] == 0
    text = run_cli("check", DS_FILE, "--isolated").stdout
    assert " info: " not in text and " warning: " in text
    assert f"{infos} info{'s' if infos != 1 else ''} not shown; --min-severity info" in text
    shown = run_cli("check", DS_FILE, "--isolated", "--min-severity", "info").stdout
    assert shown.count(" info: ") == infos and "not shown" not in shown


def test_min_severity_applies_to_json_when_asked_and_the_summary_says_how_many_were_hidden():
    everything, severities = _severities(DS_FILE, "--isolated")
    summary, shown = _severities(DS_FILE, "--isolated", "--min-severity", "warning")
    assert "info" not in shown and summary["hidden"] == severities.count("info") == everything["infos"]
    summary, shown = _severities(DS_FILE, "--isolated", "--min-severity", "error")
    assert shown == [] and summary["hidden"] == len(severities)


def test_github_output_hides_infos_by_default():
    out = run_cli("check", DS_FILE, "--isolated", "--format", "github").stdout
    assert "::notice" not in out and "::warning" in out and "not shown; --min-severity info" in out
    out = run_cli("check", DS_FILE, "--isolated", "--format", "github", "--min-severity", "info").stdout
    assert "::notice" in out


def test_sarif_keeps_every_finding_by_default():
    everything, severities = _severities(DS_FILE, "--isolated")
    log = json.loads(run_cli("check", DS_FILE, "--isolated", "--format", "sarif").stdout)
    levels = [r["level"] for r in log["runs"][0]["results"]]
    assert levels.count("note") == severities.count("info") >= 1


def test_the_configuration_key_sets_the_lowest_severity_shown(tmp_path):
    shutil.copy(ROOT / DS_FILE, tmp_path / "ds_config.json")
    (tmp_path / "shardshift.toml").write_text('min-severity = "info"\n')
    text = run_cli("check", "ds_config.json", cwd=tmp_path).stdout
    assert " info: " in text and "not shown" not in text
    (tmp_path / "shardshift.toml").write_text('min-severity = "error"\n')
    text = run_cli("check", "ds_config.json", cwd=tmp_path).stdout
    assert " warning: " not in text and "warning" in text.splitlines()[-2]  # counted in the hidden line
    (tmp_path / "shardshift.toml").write_text('min-severity = "loud"\n')
    done = run_cli("check", "ds_config.json", cwd=tmp_path)
    assert done.returncode == 2 and "min-severity" in done.stderr


def test_hidden_findings_still_decide_the_exit_status(tmp_path):
    bad = FIXTURES / "deepspeed" / "rules" / "DS101" / "bad.json"
    done = run_cli("check", bad, "--isolated", "--min-severity", "error")
    assert done.returncode == 1
    warning_only = run_cli("check", DS_FILE, "--isolated", "--min-severity", "error", "--fail-on", "warning")
    assert warning_only.returncode == 1 and " warning: " not in warning_only.stdout


# --- one form for every location --------------------------------------------------------------


def _project(root: Path) -> Path:
    """A script that names its ds_config: its cross-file findings have a related location in the
    other file, which the reader resolves to an absolute path."""
    project = root / "project"
    project.mkdir()
    for name in ("bad.py", "ds_config.json"):
        shutil.copy(FIXTURES / "deepspeed" / "rules" / "DS430" / name, project / name)
    return project


def _locations(output: dict) -> list[str]:
    places = [f["file"] for f in output["findings"]]
    places += [r["file"] for f in output["findings"] for r in f.get("related", [])]
    places += [f["path"] for f in output["files"]]
    return places


def test_locations_under_the_current_directory_are_relative_to_it(tmp_path):
    project = _project(tmp_path)
    status, output = check_json(str(project), "--isolated", cwd=tmp_path)
    places = _locations(output)
    assert any(f.get("related") for f in output["findings"])
    assert places and all(p.startswith("project/") for p in places), places
    status, again = check_json(".", "--isolated", cwd=project)
    assert all(not p.startswith(("/", "./")) for p in _locations(again))
    text = run_cli("check", str(project), "--isolated", cwd=tmp_path).stdout
    assert str(tmp_path) not in text


def test_locations_outside_the_current_directory_stay_as_given(tmp_path):
    project = _project(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    status, output = check_json(str(project), "--isolated", cwd=elsewhere)
    assert all(p.startswith(str(project)) for p in _locations(output))
    status, output = check_json("../project", "--isolated", cwd=elsewhere)
    assert {f["file"] for f in output["findings"]} <= {"../project/bad.py", "../project/ds_config.json"}


def test_sarif_locations_are_relative_to_the_checkout_root(tmp_path):
    project = _project(tmp_path)
    (tmp_path / ".git").mkdir()  # the checkout root, one level above where the check runs
    log = json.loads(run_cli("check", ".", "--isolated", "--format", "sarif", cwd=project).stdout)
    run = log["runs"][0]
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.as_uri() + "/"
    uris = [loc["physicalLocation"]["artifactLocation"] for r in run["results"]
            for loc in (*r["locations"], *r.get("relatedLocations", []))]
    assert uris and all(u["uriBaseId"] == "%SRCROOT%" and u["uri"].startswith("project/") for u in uris)


# --- a check imports only the rule modules it needs ------------------------------------------


def test_rule_module_table_names_the_formats_its_rules_look_at():
    for module, formats in RULE_MODULES.items():
        declared = {rule.formats for rule in module_rules(module)}
        assert all(set(f) <= set(formats) for f in declared), module
        assert not formats or declared <= {(f,) for f in formats} | {tuple(formats)}, module
        assert formats or declared <= {()}, module


def test_checking_a_ds_config_imports_no_other_formats_rules():
    code = ("import sys; from shardshift.cli import main; main(['check', '--isolated', %r]);"
            "print('\\n'.join(m for m in sys.modules if m.startswith('shardshift.rules.')), file=sys.stderr)" % DS_FILE)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    imported = set(done.stderr.split())
    assert "shardshift.rules.deepspeed.structure" in imported
    for other in ("megatron", "accelerate", "axolotl", "torchtitan", "fsdp2"):
        assert not any(m.startswith(f"shardshift.rules.{other}") for m in imported), other


@pytest.mark.parametrize("suppressed", ["MG101", "DS101"])
def test_a_suppression_naming_another_formats_rule_is_judged_as_before(tmp_path, suppressed):
    # SS003 knows every code, not only those of the formats checked: MG101 is a real code (no typo)
    # that suppressed nothing here, exactly as an idle DS101 is.
    config = tmp_path / "ds_config.json"
    config.write_text('{\n  "train_batch_size": 8, // shardshift: ignore[%s]\n  "zero_optimization": {"stage": 1}\n}\n'
                      % suppressed)
    status, output = check_json(str(config), "--isolated")
    messages = [f["message"] for f in output["findings"] if f["code"] == "SS003"]
    assert not any("unknown rule code" in m for m in messages)
    assert len(messages) == 1 and f"no {suppressed} finding" in messages[0]
