"""The command line as users and scripts see it: exit codes, JSON shape, walking, convert."""

from __future__ import annotations

import json
import os
import re
import shutil

import pytest

from shardshift.rules import all_rules

from conftest import FIXTURES, ROOT, check_json, run_cli

DS = FIXTURES / "deepspeed"


def test_clean_file_exits_zero_and_json_has_the_contract_shape():
    status, output = check_json(str(DS / "zero2_bf16_adamw.json"))
    assert status == 0
    # the contract only grows: these keys stay; "unknowns" was added for values known only at run time
    assert set(output) == {"findings", "files", "summary", "unknowns"} and output["unknowns"] == []
    # an absolute path under the current directory is shown relative to it, as every location is
    # each file says the release of the framework that judges it (here the pin in shardshift's own pyproject.toml)
    assert output["files"] == [{"path": str((DS / "zero2_bf16_adamw.json").relative_to(ROOT)), "format": "deepspeed",
                                "release": {"framework": "deepspeed", "version": "0.19.8", "source": "pyproject.toml:27",
                                            "detail": "deepspeed==0.19.8"}}]
    assert output["summary"]["files"] == 1 and output["summary"]["errors"] == 0


def test_finding_has_every_contract_field():
    status, output = check_json(str(DS / "rules" / "DS101" / "bad.json"))
    assert status == 1
    for finding in output["findings"]:
        assert set(finding) >= {"code", "severity", "file", "line", "column", "pointer", "message", "fix"}
        assert finding["severity"] in ("error", "warning", "info")
        assert finding["line"] >= 1 and finding["column"] >= 1


def test_directory_walk_finds_configs_and_skips_other_files(tmp_path):
    (tmp_path / "configs").mkdir()
    shutil.copy(DS / "rules" / "DS101" / "bad.json", tmp_path / "configs" / "ds_config.json")
    (tmp_path / "package.json").write_text('{"name": "web", "version": "1.0.0"}')
    (tmp_path / "broken.json").write_text("{not json")  # not a training config: skipped, not an error
    (tmp_path / "notes.txt").write_text("train_batch_size")
    status, output = check_json(".", cwd=tmp_path)
    assert [f["path"] for f in output["files"]] == ["configs/ds_config.json"]
    assert {f["file"] for f in output["findings"]} == {"configs/ds_config.json"}
    assert status == 1


def test_unparseable_config_found_by_a_walk_is_an_error_not_a_traceback(tmp_path):
    (tmp_path / "ds_config.json").write_text('{"train_batch_size": ${BATCH}, "zero_optimization": {"stage": 2}}')
    done = run_cli("check", str(tmp_path), process=True)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "SS001" in done.stdout


def test_missing_path_and_bad_options_are_usage_errors():
    # the exit status of a real process (`python -m shardshift`), as scripts see it
    assert run_cli("check", "no/such/file.json", process=True).returncode == 2
    assert run_cli("check", "--world-size", "0", str(DS), process=True).returncode == 2
    assert run_cli("check", "--nodes", "2", str(DS)).returncode == 2
    assert run_cli("check", "--world-size", "4", "--nodes", "2", "--gpus-per-node", "4", str(DS)).returncode == 2
    assert run_cli("check", "--select", "XX999", str(DS)).returncode == 2
    assert run_cli("convert", str(DS / "zero2_bf16_adamw.json"), "--to", "nope").returncode == 2


def test_select_and_ignore_filter_by_code_prefix():
    bad = str(DS / "rules" / "DS101" / "bad.json")
    status, output = check_json("--ignore", "DS101", bad)
    assert status == 0 and output["findings"] == []
    status, output = check_json("--select", "DS2", bad)
    assert status == 0 and output["findings"] == []
    status, output = check_json("--select", "DS1", bad)
    assert status == 1 and {f["code"] for f in output["findings"]} == {"DS101"}


def test_fail_on_warning_turns_warnings_into_exit_one(tmp_path):
    path = tmp_path / "ds_config.json"
    # an unknown top-level key with no near match is a warning
    path.write_text('{"train_micro_batch_size_per_gpu": 4, "gradient_clipping": 1.0, "my_own_setting": 1}')
    status, output = check_json(str(path))
    assert status == 0 and [f["severity"] for f in output["findings"]] == ["warning"]
    assert check_json("--fail-on", "warning", str(path))[0] == 1


def test_text_output_names_file_line_column_code_and_fix():
    done = run_cli("check", str(DS / "rules" / "DS101" / "bad.json"), process=True)
    assert done.returncode == 1
    assert re.search(r"bad\.json:4:3: DS101 error: .*did you mean 'zero_optimization'", done.stdout)
    assert "fix: zero_optimization" in done.stdout


def test_rules_lists_every_rule_and_explain_prints_each_doc():
    listed = run_cli("rules").stdout
    for rule in all_rules():
        assert rule.code in listed and rule.name in listed
    done = run_cli("explain", "DS201")
    assert done.returncode == 0 and "## Example" in done.stdout and "## Use instead" in done.stdout
    assert run_cli("explain", "DS999").returncode == 2


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_every_rule_has_a_complete_doc_and_fixtures(rule):
    doc = rule.documentation()
    for section in ("## What it does", "## Why is this bad", "## Example", "## Use instead"):
        assert section in doc, f"{rule.code} doc lacks {section}"
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", rule.name)
    fixtures = [p for p in FIXTURES.rglob("*") if p.is_file() and rule.code in p.parts]
    assert any(p.name.startswith("bad") for p in fixtures), f"{rule.code} has no bad fixture"
    assert any(p.name.startswith("good") for p in fixtures), f"{rule.code} has no good fixture"


def test_convert_to_deepspeed_writes_stdout_and_reports_every_setting(tmp_path):
    source = DS / "zero3_offload_fp16.jsonc.json"
    report = tmp_path / "report.json"
    done = run_cli("convert", str(source), "--to", "deepspeed", "--report", str(report))
    assert done.returncode == 0
    written = json.loads(done.stdout)
    assert written["zero_optimization"]["offload_param"] == {"device": "cpu", "pin_memory": True}
    data = json.loads(report.read_text())
    pointers = {e["source"] for e in data["entries"]}
    assert "/zero_optimization/offload_param/device" in pointers and "/fp16/hysteresis" in pointers
    assert all(e["status"] in ("exact", "approximate", "dropped") for e in data["entries"])
    assert "exact" in done.stderr


def test_convert_renames_legacy_spellings_and_says_so(tmp_path):
    source = tmp_path / "ds_config.json"
    source.write_text('{"train_micro_batch_size_per_gpu": 1, "zero_optimization": {"stage": 2, "cpu_offload": true}}')
    done = run_cli("convert", str(source), "--to", "deepspeed")
    assert json.loads(done.stdout)["zero_optimization"]["offload_optimizer"] == {"device": "cpu"}
    assert "/zero_optimization/cpu_offload -> /zero_optimization/offload_optimizer/device" in done.stderr


def test_convert_to_plan_and_output_file(tmp_path):
    out = tmp_path / "plan.yaml"
    done = run_cli("convert", str(DS / "zero2_bf16_adamw.json"), "--to", "plan", "-o", str(out))
    assert done.returncode == 0 and done.stdout == ""
    text = out.read_text()
    assert "stage: 2" in text and "param_dtype: bf16" in text


def test_convert_refuses_to_overwrite_its_source(tmp_path):
    source = tmp_path / "ds_config.json"
    shutil.copy(DS / "zero2_bf16_adamw.json", source)
    before = source.read_bytes()
    done = run_cli("convert", str(source), "--to", "deepspeed", "-o", str(source))
    assert done.returncode == 2 and source.read_bytes() == before


def test_convert_of_an_unparseable_file_is_a_clear_error(tmp_path):
    done = run_cli("convert", str(DS / "rules" / "SS001" / "bad.json"), "--to", "deepspeed")
    assert done.returncode == 1 and "cannot parse" in done.stderr and "Traceback" not in done.stderr


def test_readme_commands_are_the_ones_ci_runs():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "shardshift check fixtures/" in readme
    test_command = re.search(r"```sh\n([^\n]*python -m pytest[^\n]*)\n", readme).group(1)
    assert test_command in ci.splitlines()


def test_a_json_schema_that_mentions_deepspeed_keys_is_not_taken_for_a_config(tmp_path):
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema",
              "properties": {"zero_optimization": {"type": "object"}, "train_batch_size": {"type": "integer"}}}
    (tmp_path / "ds_config.schema.json").write_text(json.dumps(schema))
    status, output = check_json(str(tmp_path))
    assert (status, output["files"], output["findings"]) == (0, [], [])


def test_convert_of_a_file_without_a_training_setup_is_a_clear_error():
    script = FIXTURES / "deepspeed" / "rules" / "DS430" / "bad.py"
    for target in ("deepspeed", "plan", "fsdp2"):
        done = run_cli("convert", str(script), "--to", target)
        assert done.returncode == 1 and "describes no training setup" in done.stderr
        assert "Traceback" not in done.stderr and done.stdout == ""


def test_convert_to_an_unwritable_place_is_a_clear_error(tmp_path):
    done = run_cli("convert", str(DS / "zero2_bf16_adamw.json"), "--to", "deepspeed",
                   "-o", str(tmp_path / "missing" / "out.json"))
    assert done.returncode == 2 and "cannot write" in done.stderr and "Traceback" not in done.stderr


def test_convert_from_fsdp2_code_to_deepspeed_reports_what_the_output_holds(tmp_path):
    source = FIXTURES / "fsdp2" / "rules" / "FS001" / "good.py"
    report, out = tmp_path / "report.json", tmp_path / "ds_config.json"
    assert run_cli("convert", str(source), "--to", "deepspeed", "--report", str(report), "-o", str(out)).returncode == 0
    entries = {e["source"]: e for e in json.loads(report.read_text())["entries"]}
    written = json.loads(out.read_text())
    # each status is what the written ds_config holds: the lr and the full sharding are kept, at their keys
    assert entries["/optimizer/lr"]["status"] == "exact" and written["optimizer"]["params"]["lr"] == 3e-4
    assert entries["/optimizer/lr"]["target"] == "/optimizer/params/lr"
    assert entries["/sharding/stage"]["status"] == "exact" and written["zero_optimization"]["stage"] == 3


def test_a_fifo_in_the_tree_is_skipped_not_read(tmp_path):
    os.mkfifo(tmp_path / "ds_config.json")  # reading it would block forever
    shutil.copy(DS / "zero2_bf16_adamw.json", tmp_path / "zero2.json")
    status, output = check_json(str(tmp_path))
    assert status == 0 and [f["path"] for f in output["files"]] == [str(tmp_path / "zero2.json")]


# --- the tests' in-process runner (conftest.run_cli) gives what a fresh process gives ---------------
IN_PROCESS_CASES = [
    ("check", "--format", "json", "fixtures/deepspeed"),
    ("check", "fixtures/deepspeed/rules/DS101/bad.json"),
    ("check", "--format", "sarif", "fixtures/deepspeed/rules/DS201"),
    ("check", "no/such/file.json"),
    ("convert", "fixtures/deepspeed/zero2_bf16_adamw.json", "--to", "accelerate"),
    ("convert", "fixtures/deepspeed/rules/SS001/bad.json", "--to", "deepspeed"),
    ("explain", "DS201"),
    ("--version",),
    ("check", "--bogus-option"),
]


@pytest.mark.parametrize("args", IN_PROCESS_CASES, ids=" ".join)
def test_the_in_process_runner_gives_what_a_fresh_process_gives(args, monkeypatch):
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    inside, child = run_cli(*args), run_cli(*args, process=True)
    assert (inside.returncode, inside.stdout, inside.stderr) == (child.returncode, child.stdout, child.stderr)


def test_the_in_process_runner_reads_a_rewritten_file_afresh(tmp_path):
    # shardshift memoises what it read from a repository within a process (here torchtitan's custom
    # config module, by the TOML's path); each in-process run starts with nothing memoised
    shutil.copy(FIXTURES / "torchtitan" / "rules" / "TT001" / "good_custom.toml", tmp_path / "train.toml")
    shutil.copytree(FIXTURES / "torchtitan" / "rules" / "TT001" / "my_project", tmp_path / "my_project")
    module = tmp_path / "my_project" / "config.py"

    def tt001() -> list:
        return [f for f in check_json(str(tmp_path / "train.toml"))[1]["findings"] if f["code"] == "TT001"]

    assert tt001() == []
    module.write_text(module.read_text().replace("anything: int = 0", "something: int = 0"))
    assert [f["pointer"] for f in tt001()] == ["/my_section/anything"]


def test_the_in_process_runner_restores_the_working_directory_and_streams(tmp_path):
    import sys

    before = os.getcwd(), sys.stdout, sys.stderr, sys.stdin
    done = run_cli("check", ".", cwd=tmp_path)
    assert done.returncode == 0 and (os.getcwd(), sys.stdout, sys.stderr, sys.stdin) == before
