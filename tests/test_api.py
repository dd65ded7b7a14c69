"""Issue 11: the Python API (`shardshift.load`, `shardshift.check`, `shardshift.convert`) gives what
the command line gives, and raises `ShardshiftError` for what the caller asked wrongly."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import shardshift
from shardshift.plan import Unknown

from conftest import FIXTURES, ROOT, check_json, run_cli

DS = FIXTURES / "deepspeed"
SCRIPT = FIXTURES / "megatron" / "llama_8b_tp2_pp2.sh"


def test_import_is_lazy():
    code = "import sys, shardshift; print(sorted(m for m in sys.modules if m.startswith('shardshift')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['shardshift']"


def test_package_is_typed():
    assert (ROOT / "src" / "shardshift" / "py.typed").is_file()


def test_check_gives_what_the_command_line_gives(monkeypatch):
    monkeypatch.chdir(ROOT)
    result = shardshift.check(["fixtures/deepspeed/rules"], isolated=True, world_size=8)
    status, output = check_json("fixtures/deepspeed/rules", "--isolated", "--world-size", "8")
    assert result.to_json() == output
    assert {f.code for f in result.findings} >= {"DS101", "DS102"}


def test_check_options_select_and_hide():
    bad = str(DS / "rules" / "DS101" / "bad.json")
    assert {f.code for f in shardshift.check(bad, isolated=True, select=["DS101"]).findings} == {"DS101"}
    assert shardshift.check(bad, isolated=True, ignore="DS101").findings == [] or all(
        f.code != "DS101" for f in shardshift.check(bad, isolated=True, ignore="DS101").findings)
    quiet = shardshift.check(str(DS / "zero2_bf16_adamw.json"), isolated=True, min_severity="warning")
    assert quiet.hidden and all(f.severity == "info" for f in quiet.hidden)
    assert all(f.severity != "info" for f in quiet.findings)


@pytest.mark.parametrize("call, usage", [
    (lambda: shardshift.check("no/such/path", isolated=True), True),
    (lambda: shardshift.check(".", isolated=True, select="ZZ9"), True),
    (lambda: shardshift.check(".", isolated=True, nodes=2), True),
    (lambda: shardshift.check(".", isolated=True, min_severity="loud"), True),
    (lambda: shardshift.load(str(ROOT / "README.md")), False),
    (lambda: shardshift.load("no/such/file.json"), True),
    (lambda: shardshift.convert(str(DS / "zero2_bf16_adamw.json"), to="cobol"), True),
])
def test_errors_are_shardshift_errors(call, usage):
    with pytest.raises(shardshift.ShardshiftError) as raised:
        call()
    assert raised.value.usage is usage and raised.value.message


def test_load_gives_the_setup_and_its_plan():
    setup = shardshift.load(str(SCRIPT))
    assert setup.documents[0].path == str(SCRIPT) and setup.documents[0].format == "megatron"
    tensor = setup.plan.get("parallelism.tensor")
    assert not isinstance(tensor, Unknown) and tensor >= 1
    where = setup.plan.origin("parallelism.tensor")
    assert where.file == str(SCRIPT) and where.pointer == "--tensor-model-parallel-size"


def test_load_merges_the_files_a_script_names():
    setup = shardshift.load(str(DS / "rules" / "DS430" / "bad.py"))
    assert [d.format for d in setup.documents] == ["python", "deepspeed"]


def test_convert_gives_the_text_and_report_the_command_line_writes(tmp_path):
    source = str(DS / "zero2_bf16_adamw.json")
    migration = shardshift.convert(source, to="fsdp2")
    report = tmp_path / "report.json"
    done = run_cli("convert", source, "--to", "fsdp2", "--report", report)
    assert done.returncode == 0 and done.stdout == migration.text
    assert json.loads(report.read_text()) == migration.to_json()
    assert sum(migration.summary.values()) == len(migration.entries) > 0


def test_check_is_callable_whether_the_module_or_the_function_is_reached():
    import shardshift.check as module

    bad = str(DS / "rules" / "DS101" / "bad.json")
    assert shardshift.check is module  # importing the module sets the package attribute to it
    assert {f.code for f in shardshift.check(bad, isolated=True).findings} >= {"DS101"}


def test_a_broken_model_config_is_an_error_not_a_silent_pass(tmp_path):
    broken = tmp_path / "config.json"
    broken.write_text("{bad")
    with pytest.raises(shardshift.ShardshiftError) as raised:
        shardshift.check(str(DS / "zero2_bf16_adamw.json"), isolated=True, gpu_memory="80GB", model_config=str(broken))
    assert raised.value.usage and "cannot read the model config" in raised.value.message
    done = run_cli("check", str(DS / "zero2_bf16_adamw.json"), "--gpu-memory", "80GB", "--model-config", str(broken))
    assert done.returncode == 2 and "cannot read the model config" in done.stderr


def test_the_callers_model_wins_over_the_configuration_files(tmp_path, monkeypatch):
    shape = tmp_path / "config.json"
    shape.write_text('{"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100}')
    (tmp_path / "shardshift.toml").write_text(f'model-config = "{shape}"\ngpu-memory = "80GB"\n')
    monkeypatch.chdir(tmp_path)
    from shardshift.api import resolve_options

    options = resolve_options(model_params="8B")
    assert (options.context.model_parameters, options.context.model_config) == (8 * 10**9, None)
    options = resolve_options()
    assert (options.context.model_parameters, options.context.model_config) == (None, str(shape))
