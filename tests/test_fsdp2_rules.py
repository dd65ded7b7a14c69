"""FS rules through the real command line. One `check --format json` run over the rule fixtures
(a CLI run costs about a second): each bad fixture gives exactly the findings marked
`# expect: CODE` in it (code, severity, line; pointer null), each good fixture gives none."""

from __future__ import annotations

import re

import pytest

from conftest import FIXTURES, check_json

RULES = FIXTURES / "fsdp2" / "rules"
MARKER = re.compile(r"#\s*expect:\s*(FS\d{3})")
WORLD = ("--world-size", "32")  # FS019 needs a world size; every literal mesh in the fixtures is 32 ranks but one
SEVERITY = {"FS001": "error", "FS002": "error", "FS003": "error", "FS004": "warning", "FS005": "warning",
            "FS006": "error", "FS007": "warning", "FS008": "error", "FS009": "warning", "FS010": "error",
            "FS011": "error", "FS012": "info", "FS013": "warning", "FS014": "warning", "FS015": "error",
            "FS016": "warning", "FS017": "warning", "FS018": "error", "FS019": "error", "FS020": "warning"}


def expected(path):
    """(code, line) of every `# expect: CODE` marker."""
    found = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        found.extend((code, number) for code in MARKER.findall(line))
    return found


@pytest.fixture(scope="module")
def checked():
    rc, out = check_json(str(RULES), "--select", "FS", *WORLD)
    by_file: dict[str, list[dict]] = {}
    for finding in out["findings"]:
        by_file.setdefault("/".join(finding["file"].rsplit("/", 2)[-2:]), []).append(finding)
    return rc, out, by_file


@pytest.mark.parametrize("code", sorted(SEVERITY))
def test_bad_fixture_reports_the_rule(code, checked):
    path = RULES / code / "bad.py"
    marks = expected(path)
    assert marks and {c for c, _ in marks} == {code}, f"{path.name} needs `# expect: {code}` markers"
    findings = checked[2].get(f"{code}/bad.py", [])
    assert sorted((f["code"], f["line"]) for f in findings) == sorted(marks)
    for finding in findings:
        assert finding["severity"] == SEVERITY[code]
        assert finding["pointer"] is None
        assert finding["column"] >= 1 and finding["message"] and finding["fix"]
        assert finding["file"] == str(path)


@pytest.mark.parametrize("code", sorted(SEVERITY))
def test_good_fixture_is_clean(code, checked):
    assert checked[2].get(f"{code}/good.py", []) == []


def test_the_run_reads_every_fixture_as_fsdp2_and_fails_on_errors(checked):
    rc, out, _ = checked
    assert sorted(f["path"] for f in out["files"]) == sorted(str(p) for p in RULES.rglob("*.py"))
    assert {f["format"] for f in out["files"]} == {"fsdp2"}
    assert rc == 1


def test_every_fs_rule_has_documentation_and_fixtures():
    from shardshift.rules import all_rules

    rules = [rule for rule in all_rules() if rule.code.startswith("FS")]
    assert {rule.code for rule in rules} == set(SEVERITY)
    for rule in rules:
        doc = rule.documentation()
        for section in ("## What it does", "## Why is this bad", "## Example", "## Use instead"):
            assert section in doc, (rule.code, section)
        assert rule.severity == SEVERITY[rule.code]
        assert rule.formats == ("fsdp2",)
        assert (RULES / rule.code / "bad.py").is_file() and (RULES / rule.code / "good.py").is_file()


def test_syntax_errors_and_ordinary_python(tmp_path):
    broken = tmp_path / "shard.py"
    broken.write_text("from torch.distributed.fsdp import fully_shard\n\nfor layer in model.layers\n    fully_shard(layer)\n")
    (tmp_path / "train.py").write_text("import torch\nmodel = torch.nn.Linear(2, 2)\n")
    (tmp_path / "notes.txt").write_text("fully_shard(model)\n")
    rc, out = check_json(str(tmp_path))
    assert out["files"] == [{"path": str(broken), "format": "fsdp2"}]
    assert [(f["code"], f["line"], f["severity"]) for f in out["findings"]] == [("SS001", 3, "error")]
    assert "invalid Python" in out["findings"][0]["message"]
    assert rc == 1
