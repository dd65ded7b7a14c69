"""Project configuration: [tool.shardshift] in pyproject.toml or shardshift.toml, found by walking
up from the current directory; every option, strictness, precedence."""

from __future__ import annotations

import shutil

import pytest

from shardshift import cli
from shardshift.config import OPTIONS

from conftest import FIXTURES, check_json, run_cli

RULES = FIXTURES / "deepspeed" / "rules"
TYPO = RULES / "DS101" / "bad.json"  # DS101 error on line 4
BATCH = RULES / "DS201" / "bad.json"  # 60 = 4 × 8 × ? : DS201 without or with a world size
WARNING_ONLY = '{"train_micro_batch_size_per_gpu": 4, "gradient_clipping": 1.0, "my_own_setting": 1}\n'


def _project(tmp_path, config: str, *, name: str = "pyproject.toml") -> None:
    text = f"[tool.shardshift]\n{config}\n" if name == "pyproject.toml" else config + "\n"
    (tmp_path / name).write_text(text)
    (tmp_path / "configs").mkdir(exist_ok=True)
    shutil.copy(TYPO, tmp_path / "configs" / "ds_config.json")
    shutil.copy(BATCH, tmp_path / "configs" / "ds_batch.json")


def _codes(output: dict) -> set[str]:
    return {f["code"] for f in output["findings"]}


def test_select_and_ignore(tmp_path):
    _project(tmp_path, 'select = ["DS1"]')
    assert _codes(check_json("configs", cwd=tmp_path)[1]) == {"DS101"}
    _project(tmp_path, 'ignore = ["DS101", "DS2"]')
    codes = _codes(check_json("configs", cwd=tmp_path)[1])
    assert "DS101" not in codes and "DS201" not in codes


def test_command_line_wins_over_the_file(tmp_path):
    _project(tmp_path, 'select = ["DS1"]\nfail-on = "warning"')
    assert _codes(check_json("--select", "DS2", "configs", cwd=tmp_path)[1]) == {"DS201"}
    (tmp_path / "configs" / "ds_config.json").write_text(WARNING_ONLY)
    (tmp_path / "configs" / "ds_batch.json").unlink()
    assert check_json("configs", cwd=tmp_path)[0] == 1  # fail-on = warning from the file
    assert check_json("--fail-on", "error", "configs", cwd=tmp_path)[0] == 0


def test_per_file_ignores_match_globs_relative_to_the_config_file(tmp_path):
    _project(tmp_path, '[tool.shardshift.per-file-ignores]\n"configs/ds_config.json" = ["DS101"]\n'
                       '"*_batch.json" = ["DS2"]')
    findings = check_json("configs", cwd=tmp_path)[1]["findings"]
    assert not [f for f in findings if f["code"] == "DS101"]
    assert not [f for f in findings if f["code"].startswith("DS2")]
    # from a subdirectory the patterns still mean the same files
    findings = check_json(".", cwd=tmp_path / "configs")[1]["findings"]
    assert not [f for f in findings if f["code"] in ("DS101", "DS201")]
    # a pattern that matches nothing changes nothing
    _project(tmp_path, '[tool.shardshift.per-file-ignores]\n"other/*.json" = ["DS101"]')
    assert "DS101" in _codes(check_json("configs", cwd=tmp_path)[1])


def test_world_size_and_nodes_feed_the_batch_rule(tmp_path):
    _project(tmp_path, "world-size = 8")
    (finding,) = [f for f in check_json("configs", cwd=tmp_path)[1]["findings"] if f["code"] == "DS201"]
    assert finding["fix"] == "256" and "8 data-parallel ranks" in finding["message"]
    _project(tmp_path, "nodes = 2\ngpus-per-node = 2")
    (finding,) = [f for f in check_json("configs", cwd=tmp_path)[1]["findings"] if f["code"] == "DS201"]
    assert finding["fix"] == "128"
    # the command line's world replaces the file's, whichever way it is given
    (finding,) = [f for f in check_json("--world-size", "1", "configs", cwd=tmp_path)[1]["findings"]
                  if f["code"] == "DS201"]
    assert finding["fix"] == "32"


def test_every_option_reaches_the_run(tmp_path, monkeypatch):
    """The Context, selection and fail level a run gets from the file (checked in-process)."""
    seen = {}

    def fake_run_check(paths, context, select, ignore, per_file=None, **keywords):
        from shardshift.check import CheckResult

        seen.update(context=context, select=select, ignore=ignore, per_file=per_file)
        return CheckResult()

    monkeypatch.setattr("shardshift.check.run_check", fake_run_check)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "shardshift.toml").write_text(
        'select = ["DS", "SS"]\nignore = ["DS3"]\nfail-on = "warning"\nnodes = 4\ngpus-per-node = 8\n'
        'deepspeed-version = "0.18.5"\nhidden-size = 4096\naxolotl-version = "0.12.2"\nfollow-outside = true\n'
        '[per-file-ignores]\n"legacy/*.json" = ["DS102"]\n')
    assert cli.main(["check", "."]) == 0
    context = seen["context"]
    assert (context.world_size, context.deepspeed_version, context.hidden_size) == (32, (0, 18, 5), 4096)
    assert context.follow_outside is True
    # a framework version from the file wins over any pin found, and says where it came from
    assert {k: r.text() for k, r in context.release_overrides.items()} == {
        "deepspeed": "deepspeed 0.18.5 (shardshift.toml deepspeed-version)",
        "axolotl": "axolotl 0.12.2 (shardshift.toml axolotl-version)"}
    assert seen["select"] == {"DS", "SS"} and seen["ignore"] == {"DS3"}
    assert seen["per_file"](str(tmp_path / "legacy" / "a.json")) == {"DS102"}
    assert seen["per_file"](str(tmp_path / "a.json")) == set()
    # command-line values win one by one
    cli.main(["check", "--deepspeed-version", "0.19.8", "--hidden-size", "1024", "--world-size", "2", "."])
    assert (seen["context"].world_size, seen["context"].deepspeed_version, seen["context"].hidden_size) == (
        2, (0, 19, 8), 1024)
    cli.main(["check", "--torchtitan-version", "0.1.0", "--axolotl-version", "0.9.0", "."])
    assert {k: r.text() for k, r in seen["context"].release_overrides.items()} == {
        "deepspeed": "deepspeed 0.18.5 (shardshift.toml deepspeed-version)",
        "axolotl": "axolotl 0.9.0 (--axolotl-version)", "torchtitan": "torchtitan 0.1.0 (--torchtitan-version)"}
    assert set(OPTIONS) == {"select", "ignore", "per-file-ignores", "fail-on", "world-size", "nodes",
                            "gpus-per-node", "deepspeed-version", "hidden-size", "min-severity", "gpu-memory",
                            "model-params", "model-config", "megatron-core-version", "accelerate-version",
                            "transformers-version", "axolotl-version", "torchtitan-version", "torch-version",
                            "env", "docs-url", "follow-outside"}


def test_shardshift_toml_wins_over_pyproject_and_files_are_found_walking_up(tmp_path):
    _project(tmp_path, 'select = ["DS2"]')
    _project(tmp_path, 'select = ["DS1"]', name="shardshift.toml")
    assert _codes(check_json(".", cwd=tmp_path / "configs")[1]) == {"DS101"}
    (tmp_path / "shardshift.toml").unlink()
    assert _codes(check_json(".", cwd=tmp_path / "configs")[1]) == {"DS201"}
    # a pyproject.toml without the table does not stop the walk
    (tmp_path / "configs" / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert _codes(check_json(".", cwd=tmp_path / "configs")[1]) == {"DS201"}


def test_explicit_config_and_isolated(tmp_path):
    _project(tmp_path, 'select = ["DS2"]')
    other = tmp_path / "strict.toml"
    other.write_text('select = ["DS1"]\n')
    assert _codes(check_json("--config", str(other), "configs", cwd=tmp_path)[1]) == {"DS101"}
    assert {"DS101", "DS201"} <= _codes(check_json("--isolated", "configs", cwd=tmp_path)[1])
    assert run_cli("check", "--config", str(tmp_path / "missing.toml"), "configs", cwd=tmp_path).returncode == 2


BAD_CONFIGS = [  # (file content, words the message must contain)
    ('selct = ["DS1"]', ["unknown option 'selct'", "did you mean 'select'"]),
    ('per_file_ignores = {}', ["unknown option 'per_file_ignores'", "did you mean 'per-file-ignores'"]),
    ('colour = "red"', ["unknown option 'colour'", "known options"]),
    ('select = "DS1"', ["select must be a list"]),
    ('select = ["XX9"]', ["unknown rule code 'XX9'"]),
    ('[per-file-ignores]\n"*.json" = ["NOPE1"]', ["unknown rule code 'NOPE1'", "per-file-ignores"]),
    ('per-file-ignores = ["a"]', ["per-file-ignores must be a table"]),
    ('fail-on = "info"', ["fail-on must be"]),
    ("world-size = 0", ["world-size must be a whole number of at least 1"]),
    ("world-size = true", ["world-size must be a whole number"]),
    ("hidden-size = 1.5", ["hidden-size must be a whole number"]),
    ("nodes = 2", ["nodes and gpus-per-node go together"]),
    ("world-size = 8\nnodes = 2\ngpus-per-node = 2", ["disagrees"]),
    ('deepspeed-version = "latest"', ["deepspeed-version must be a version"]),
    ("select = [", ["not valid TOML"]),
    ('docs-url = "ftp://example.com"', ["docs-url must be an http(s) URL"]),
]


@pytest.mark.parametrize("content,words", BAD_CONFIGS, ids=[c for c, _ in BAD_CONFIGS])
def test_bad_configuration_is_a_usage_error_with_a_clear_message(tmp_path, content, words):
    _project(tmp_path, content, name="shardshift.toml")
    done = run_cli("check", "configs", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "shardshift.toml" in done.stderr
    for word in words:
        assert word in done.stderr
    assert done.stdout == ""


def test_bad_pyproject_table_names_the_section(tmp_path):
    _project(tmp_path, "ignroe = []")
    done = run_cli("check", "configs", cwd=tmp_path)
    assert done.returncode == 2 and "[tool.shardshift]" in done.stderr and "did you mean 'ignore'" in done.stderr


def test_a_tool_table_with_dotted_keys_counts_and_a_mere_mention_does_not(tmp_path):
    (tmp_path / "configs").mkdir()
    shutil.copy(TYPO, tmp_path / "configs" / "ds_config.json")
    shutil.copy(BATCH, tmp_path / "configs" / "ds_batch.json")
    (tmp_path / "pyproject.toml").write_text('[tool]\nshardshift.select = ["DS2"]\n')
    assert _codes(check_json("configs", cwd=tmp_path)[1]) == {"DS201"}
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "uses-shardshift"\ndependencies = ["shardshift"]\n')
    assert {"DS101", "DS201"} <= _codes(check_json("configs", cwd=tmp_path)[1])
