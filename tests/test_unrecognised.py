"""Issue 14: a file named on the command line is always reported on: read, or an error (SS005)
saying shardshift does not read it (exit 1), never "0 files checked ... all clean". A directory
walk over the same file skips it, and so does `--skip-unrecognised` (what the pre-commit hooks
pass, since they name every changed file)."""

from __future__ import annotations

import shutil

import pytest

from conftest import FIXTURES, ROOT, check_json, run_cli

BAD = FIXTURES / "general" / "rules" / "SS005" / "bad.json"
GOOD = FIXTURES / "general" / "rules" / "SS005" / "good.json"


def test_a_named_file_shardshift_does_not_read_is_an_error():
    status, output = check_json(str(BAD), "--isolated")
    assert status == 1
    (finding,) = output["findings"]
    assert (finding["code"], finding["severity"], finding["line"], finding["column"]) == ("SS005", "error", 1, 1)
    assert finding["file"] == str(BAD.relative_to(ROOT)) and "not a configuration shardshift reads" in finding["message"]
    assert output["files"] == [{"path": str(BAD.relative_to(ROOT)), "format": "unrecognised"}]


def test_a_named_config_is_read_not_reported():
    status, output = check_json(str(GOOD), "--isolated", "--select", "SS")
    assert status == 0 and output["findings"] == [] and output["files"][0]["format"] == "deepspeed"


def test_a_directory_walk_skips_what_it_does_not_read(tmp_path):
    shutil.copy(BAD, tmp_path / "elastic.json")
    (tmp_path / "notes.py").write_text("print('hello')\n")
    status, output = check_json(str(tmp_path), "--isolated")
    assert status == 0 and output["files"] == [] and output["findings"] == []


@pytest.mark.parametrize("name, text", [
    ("notes.py", "print('hello')\n"),
    ("latin1.json", None),  # not UTF-8, and nothing in it says config
    ("README.md", "# a readme\n"),
])
def test_every_kind_of_named_file_is_reported_and_skip_unrecognised_skips_it(tmp_path, name, text):
    path = tmp_path / name
    if text is None:
        path.write_bytes(b'{"caf\xe9": 1}')
    else:
        path.write_text(text)
    status, output = check_json(str(path), "--isolated")
    assert status == 1 and [f["code"] for f in output["findings"]] == ["SS005"]
    status, output = check_json(str(path), "--isolated", "--skip-unrecognised")
    assert status == 0 and output["findings"] == [] and output["files"] == []


def test_the_pre_commit_hooks_skip_unrecognised_files():
    hooks = (ROOT / ".pre-commit-hooks.yaml").read_text()
    entries = [line.split(":", 1)[1].strip() for line in hooks.splitlines() if line.strip().startswith("entry:")]
    assert entries and all(entry == "shardshift check --skip-unrecognised" for entry in entries)


def test_convert_of_an_unrecognised_file_says_so():
    done = run_cli("convert", str(BAD), "--to", "fsdp2")
    assert done.returncode == 1 and "not a configuration file of a known format" in done.stderr


def test_a_named_file_too_large_to_read_is_reported_not_skipped(tmp_path, monkeypatch):
    from shardshift import check as check_module
    from shardshift.rules.base import Context

    path = tmp_path / "ds_config.json"
    path.write_text('{"train_batch_size": 8, "pad": "' + "x" * 200 + '"}')
    monkeypatch.setattr(check_module, "MAX_BYTES", 100)
    result = check_module.run_check([str(path)], Context())
    assert [(f.code, f.severity) for f in result.findings] == [("SS005", "error")]
    assert "larger than 100 bytes" in result.findings[0].message
    assert check_module.run_check([str(tmp_path)], Context()).findings == []  # a walk skips it
