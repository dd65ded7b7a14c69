"""`--format github` (workflow-command annotations) and `--format auto`."""

from __future__ import annotations

import os
import subprocess
import sys

from shardshift.check import CheckResult
from shardshift.report import github
from shardshift.rules.base import Finding, Related

from conftest import FIXTURES, ROOT, check_json, run_cli

BAD = FIXTURES / "deepspeed" / "rules" / "DS101" / "bad.json"


def test_every_finding_is_one_annotation_at_its_place():
    done = run_cli("check", "--format", "github", str(BAD.relative_to(ROOT)))
    _, as_json = check_json(str(BAD.relative_to(ROOT)))
    assert done.returncode == 1
    annotations = [line for line in done.stdout.splitlines() if line.startswith("::")]
    assert len(annotations) == len(as_json["findings"]) > 0
    for line, finding in zip(annotations, as_json["findings"]):
        level = {"error": "error", "warning": "warning", "info": "notice"}[finding["severity"]]
        assert line.startswith(f"::{level} file=fixtures/deepspeed/rules/DS101/bad.json,line={finding['line']},"
                               f"col={finding['column']},title={finding['code']} ")
        assert "::" + finding["message"].split(":")[0] in line


def test_messages_and_properties_are_escaped():
    finding = Finding("DS101", "warning", "a,b:c.json", 2, 3, "/x", "100% bad: a\nb", "y", "unknown-key",
                      related=[Related("other.json", 1, 1, None, "see here")])
    out = github.render(CheckResult(findings=[finding]))
    first = out.splitlines()[0]
    # a newline inside a message is shown escaped: only shardshift's own parts are separate lines
    assert first.startswith("::warning file=a%2Cb%3Ac.json,line=2,col=3,title=DS101 unknown-key::100%25 bad: a\\nb")
    assert "%0Afix: y%0Asee other.json:1:1: see here" in first
    assert len(out.splitlines()) == 2  # one annotation, one summary line


def test_paths_are_made_relative_to_the_workspace(monkeypatch, tmp_path):
    monkeypatch.setenv("GITHUB_WORKSPACE", str(tmp_path))
    finding = Finding("SS001", "error", str(tmp_path / "cfg" / "ds.json"), 1, 1, None, "m", None, "unparseable-file")
    assert github.render(CheckResult(findings=[finding])).startswith("::error file=cfg/ds.json,")


def _auto(env_value: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_ACTIONS"}
    if env_value is not None:
        env["GITHUB_ACTIONS"] = env_value
    return subprocess.run([sys.executable, "-m", "shardshift", "check", "--format", "auto", str(BAD)], cwd=ROOT,
                          capture_output=True, text=True, env=env).stdout


def test_auto_is_github_inside_actions_and_text_elsewhere():
    assert _auto("true").startswith("::error file=")
    text = _auto(None)
    # BAD is absolute and under the current directory: shown relative to it, as every location is
    assert text.startswith(f"{BAD.relative_to(ROOT)}:") and "::error" not in text
