"""Human-readable outputs escape what a file name, key or value holds: no line, workflow command or
terminal sequence of the input's making reaches a log or a terminal."""

from __future__ import annotations

import json

import pytest

from shardshift.report import printable

from conftest import run_cli

HOSTILE_KEY = "bad\n::error file=x::injected\x1b[31m\u202e"
TEXT = json.dumps({"train_batch_size": 8, "zero_optimization": {"stage": 2, HOSTILE_KEY: 1}})


@pytest.fixture
def hostile_tree(tmp_path):
    (tmp_path / "ds_config.json").write_text(TEXT)
    (tmp_path / "::warning file=y::\x1b[2Jds_config.json").write_text(TEXT)
    return tmp_path


@pytest.mark.parametrize("form", ["text", "github"])
def test_no_control_character_and_no_injected_command_reaches_the_output(hostile_tree, form):
    done = run_cli("check", "--isolated", "--format", form, "--min-severity", "info", ".", cwd=hostile_tree)
    assert "DS101" in done.stdout  # the key is reported ...
    assert not any(ch in done.stdout for ch in "\x1b\u202e\r")  # ... without its control characters
    commands = [line for line in done.stdout.splitlines() if line.startswith("::")]
    if form == "text":
        assert commands == []
        assert "./::warning" in done.stdout  # the odd file name is still named, as a path
    else:  # only shardshift's own annotations, one per finding, each naming the real files
        assert all(line.startswith(("::error file=", "::warning file=", "::notice file=")) for line in commands)
        assert not any("file=x" in line.split("::")[1] for line in commands)
    assert "\\x1b" in done.stdout and "\\n::error" in done.stdout


def test_json_keeps_the_key_exactly(hostile_tree):
    done = run_cli("check", "--isolated", "--format", "json", str(hostile_tree / "ds_config.json"))
    findings = json.loads(done.stdout)["findings"]
    assert any(f["pointer"] == "/zero_optimization/" + HOSTILE_KEY for f in findings)


def test_printable_escapes_every_control_and_keeps_the_rest():
    assert printable("a\tb\nc\x00\x7f\x85\u2028\u2066é✓") == "a\\tb\\nc\\x00\\x7f\\x85\\u2028\\u2066é✓"
