"""Inline suppressions (`shardshift: ignore[CODE]`) in every comment syntax, per-file ignores for
strict JSON, and SS003 for suppressions that suppressed nothing."""

from __future__ import annotations

import shutil

import pytest

from shardshift import suppress
from shardshift.rules.base import Finding

from conftest import FIXTURES, check_json

RULES = FIXTURES / "deepspeed" / "rules"


def _finding(path: str, line: int, code: str = "DS101") -> Finding:
    return Finding(code, "error", path, line, 1, None, "m")


# --- the comment forms, per syntax (scan + apply on synthetic findings) --------------------------

# (file name, text, line of the finding, code, suppressed?)
FORMS = [
    ("a.yaml", "zero_stage: 3  # shardshift: ignore[DS101]\n", 1, "DS101", True),
    ("a.yaml", "# shardshift: ignore[DS101]\nzero_stage: 3\n", 2, "DS101", True),
    ("a.yaml", "# shardshift: ignore[DS101]\n\n# why: legacy launcher\nzero_stage: 3\n", 4, "DS101", True),
    ("a.yaml", "# shardshift: ignore[DS101]\nzero_stage: 3\nother: 1\n", 3, "DS101", False),  # only the next line
    ("a.yaml", "zero_stage: 3  # shardshift: ignore[DS101]\nother: 1\n", 2, "DS101", False),  # trailing: own line
    ("a.yaml", "zero_stage: 3  # shardshift: ignore[DS102]\n", 1, "DS101", False),  # another code
    ("a.yml", "x: 1  # shardshift: ignore[DS102, DS101]\n", 1, "DS101", True),
    ("a.yml", "x: 1  # shardshift: ignore\n", 1, "AX999", True),  # bare: every code
    ("a.yml", "x: 1  # SHARDSHIFT: IGNORE[ds101]\n", 1, "DS101", True),
    ("a.yml", "x: '# shardshift: ignore[DS101]'\n", 1, "DS101", False),  # inside a string
    ("a.yml", "x: a#shardshift: ignore[DS101]\n", 1, "DS101", False),  # `#` not after a space: not a comment
    ("a.toml", "[training]\nsteps = 3  # shardshift: ignore[TT101]\n", 2, "TT101", True),
    ("train.py", "x = 1  # shardshift: ignore[DS430]\n", 1, "DS430", True),
    ("train.py", "def f():\n    # shardshift: ignore[DS430]\n    return g(x)\n", 3, "DS430", True),
    ("train.py", "s = '# shardshift: ignore[DS430]'\n", 1, "DS430", False),  # a string, not a comment
    ("train.py", 's = """\n# shardshift: ignore[DS430]\n"""\nx = 1\n', 4, "DS430", False),
    ("run.sh", "torchrun train.py \\\n  --tp 2  # shardshift: ignore[MG101]\n", 2, "MG101", True),
    ("run.sh", "# shardshift: ignore[MG101]\npython train.py --tp 2\n", 2, "MG101", True),
    ("run.sh", "echo \"# shardshift: ignore[MG101]\"\n", 1, "MG101", False),
    ("ds.json", '{\n  "a": 1, // shardshift: ignore[DS101]\n  "b": 2\n}\n', 2, "DS101", True),
    ("ds.json", '{\n  // shardshift: ignore[DS101]\n  "a": 1\n}\n', 3, "DS101", True),
    ("ds.json", '{\n  "a": 1 /* shardshift: ignore[DS101] */, "b": 2\n}\n', 2, "DS101", True),
    ("ds.json", '{\n  "a": 1  # shardshift: ignore[DS101]\n}\n', 2, "DS101", True),  # hjson allows #
    ("ds.json", '{\n  "a": "// shardshift: ignore[DS101]"\n}\n', 2, "DS101", False),
    ("ds.jsonc", '{"a": "x\\" // shardshift: ignore[DS101]"}\n', 1, "DS101", False),  # escaped quote
    ("ds.json", '// shardshift: ignore[DS201]\n{"train_batch_size": 60}\n', 1, "DS201", True),  # a file-start finding
    ("crlf.yaml", "# shardshift: ignore[DS101]\r\nzero_stage: 3\r\n", 2, "DS101", True),
]


@pytest.mark.parametrize("name,text,line,code,suppressed", FORMS, ids=[f"{n}:{t[:40]!r}" for n, t, *_ in FORMS])
def test_comment_forms(name, text, line, code, suppressed):
    suppressions = {name: suppress.scan(name, text)}
    kept = suppress.apply([_finding(name, line, code)], suppressions)
    assert (kept == []) == suppressed


MALFORMED = [
    "x: 1  # shardshift: ignore DS101\n",
    "x: 1  # shardshift: ignore[]\n",
]


@pytest.mark.parametrize("text", MALFORMED)
def test_malformed_directives_suppress_nothing_and_are_reported(text):
    found = suppress.scan("a.yaml", text)
    assert suppress.apply([_finding("a.yaml", 1)], {"a.yaml": found}) != []
    (unused,) = suppress.unused(found, {"DS101", "SS003"}, {"DS101", "SS003"}, "unused-suppression")
    assert unused.code == "SS003" and "malformed" in unused.message


def test_bare_ignore_followed_by_prose_is_still_bare():
    (found,) = suppress.scan("a.yaml", "x: 1  # shardshift: ignore -- the launcher fills it in\n")
    assert found.codes is None and found.malformed is None


# --- end to end through the CLI on ds_config files ----------------------------------------------


def _write(tmp_path, text: str, name: str = "ds_config.json"):
    path = tmp_path / name
    path.write_text(text)
    return path


TYPO = '"zero_optimisation": {"stage": 2}'
BASE = '"train_micro_batch_size_per_gpu": 4,\n  "gradient_clipping": 1.0,\n'


def test_jsonc_suppression_on_the_line_and_the_line_before(tmp_path):
    path = _write(tmp_path, "{\n  " + BASE + "  " + TYPO + "\n}\n")
    assert [f["code"] for f in check_json(str(path))[1]["findings"]] == ["DS101"]
    _write(tmp_path, "{\n  " + BASE + "  " + TYPO + "  // shardshift: ignore[DS101]\n}\n")
    status, output = check_json(str(path))
    assert status == 0 and output["findings"] == []
    _write(tmp_path, "{\n  " + BASE + "  // shardshift: ignore[DS101]\n  " + TYPO + "\n}\n")
    assert check_json(str(path)) == (0, {**output, "findings": []})


def test_unused_suppression_is_reported_where_the_comment_is(tmp_path):
    path = RULES / "SS003" / "bad.json"
    status, output = check_json(str(path))
    (finding,) = output["findings"]
    assert (finding["code"], finding["severity"], finding["line"], finding["pointer"]) == ("SS003", "warning", 3, None)
    assert finding["column"] == path.read_text().splitlines()[2].index("//") + 1
    assert "DS101" in finding["message"] and status == 0
    assert check_json("--fail-on", "warning", str(path))[0] == 1


def test_only_the_unused_codes_of_a_suppression_are_reported(tmp_path):
    path = _write(tmp_path, "{\n  " + BASE + "  " + TYPO + "  // shardshift: ignore[DS101,DS102]\n}\n")
    (finding,) = check_json(str(path))[1]["findings"]
    assert finding["code"] == "SS003" and "no DS102 finding on line 4" in finding["message"]


def test_unknown_codes_and_unused_bare_suppressions_are_reported(tmp_path):
    path = _write(tmp_path, "{\n  " + BASE + '  "zero_optimization": {"stage": 2}  // shardshift: ignore[DS1O1]\n}\n')
    (finding,) = check_json(str(path))[1]["findings"]
    assert finding["code"] == "SS003" and "unknown rule code DS1O1" in finding["message"]
    _write(tmp_path, "{\n  " + BASE + '  "zero_optimization": {"stage": 2}  // shardshift: ignore\n}\n')
    (finding,) = check_json(str(path))[1]["findings"]
    assert finding["code"] == "SS003" and "suppressed nothing" in finding["message"]


def test_codes_that_did_not_run_are_not_called_unused(tmp_path):
    path = _write(tmp_path, "{\n  " + BASE + '  "zero_optimization": {"stage": 2}  // shardshift: ignore[DS201]\n}\n')
    assert check_json(str(path))[1]["findings"][0]["code"] == "SS003"
    assert check_json("--select", "DS1,SS", str(path))[1]["findings"] == []
    assert check_json("--ignore", "DS201", str(path))[1]["findings"] == []
    assert check_json("--ignore", "SS003", str(path))[1]["findings"] == []


def test_unparseable_file_does_not_report_its_suppressions_as_unused(tmp_path):
    # {BATCH} is no value even to hjson, DeepSpeed's loader (a bare BATCH would be the string "BATCH,")
    path = _write(tmp_path, '{\n  "train_batch_size": {BATCH},  // shardshift: ignore[DS201]\n}\n')
    assert [f["code"] for f in check_json(str(path))[1]["findings"]] == ["SS001"]
    _write(tmp_path, '{\n  "train_batch_size": {BATCH}  // shardshift: ignore[SS001]\n}\n')
    assert check_json(str(path)) [1]["findings"] == []


def test_per_file_ignores_cover_strict_json(tmp_path):
    shutil.copy(RULES / "DS101" / "bad.json", tmp_path / "ds_config.json")
    (tmp_path / "pyproject.toml").write_text('[tool.shardshift.per-file-ignores]\n"ds_*.json" = ["DS101"]\n')
    assert check_json("ds_config.json", cwd=tmp_path) [1]["findings"] == []
    # a suppression of a code that per-file-ignores switch off is not "unused"
    (tmp_path / "ds_config.json").write_text("{\n  " + BASE + '  "zero_optimization": {"stage": 2}  '
                                             "// shardshift: ignore[DS101]\n}\n")
    assert check_json("ds_config.json", cwd=tmp_path)[1]["findings"] == []


def test_python_script_suppression_end_to_end(tmp_path):
    """A finding on a training script (read with ast) is suppressed by a `#` comment on its line."""
    source = RULES / "DS430"
    for name in ("bad.py", "ds_config.json"):
        shutil.copy(source / name, tmp_path / name)
    script = tmp_path / "bad.py"
    findings = [f for f in check_json(str(script))[1]["findings"] if f["file"] == str(script)]
    assert findings, "the DS430 fixture no longer has a finding on the script"
    first = findings[0]
    lines = script.read_text().splitlines()
    lines[first["line"] - 1] += f"  # shardshift: ignore[{first['code']}]"
    script.write_text("\n".join(lines) + "\n")
    after = [f for f in check_json(str(script))[1]["findings"] if f["file"] == str(script)]
    assert first["code"] not in [f["code"] for f in after if f["line"] == first["line"]]
    assert not [f for f in after if f["code"] == "SS003"]
