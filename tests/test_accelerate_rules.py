"""Case tables for the Accelerate config rules (AC001-AC103), run through the real CLI
(`check --format json`): code, severity, file, line, column, pointer, fix and related places.
tests/test_accelerate_oracle.py confirms with Accelerate's own code what each message says."""

from __future__ import annotations

import os

import pytest

from conftest import FIXTURES, check_json, shown
from rule_cases import findings_with_code, marker_position

RULES = FIXTURES / "accelerate" / "rules"

# (fixture, code, severity, pointer, marker, occurrence, fix, related markers)
BAD_CASES = [
    ("AC001/bad.yaml", "AC001", "error", "/num_process", "num_process:", 1, "num_processes", []),
    ("AC002/bad.yaml", "AC002", "warning", "/fsdp_config/fsdp_ofload_params", "fsdp_ofload_params", 1,
     "fsdp_offload_params", []),
    ("AC002/bad_deepspeed.yaml", "AC002", "warning", "/deepspeed_config/train_micro_batch_size_per_gpu",
     "train_micro_batch_size_per_gpu", 1, None, []),
    ("AC003/bad.yaml", "AC003", "warning", "/fsdp_config/fsdp_sharding_strategy", "fsdp_sharding_strategy", 1,
     "fsdp_reshard_after_forward", []),
    ("AC004/bad.yaml", "AC004", "warning", "/fsdp_config/fsdp_reshard_after_forward", "fsdp_reshard_after_forward",
     1, "fsdp_sharding_strategy", []),
    ("AC005/bad.yaml", "AC005", "warning", "/fsdp_config/offload_params", "offload_params", 2, None,
     [("/fsdp_config/fsdp_offload_params", "fsdp_offload_params", 1)]),
    ("AC006/bad.yaml", "AC006", "error", "/fsdp_config/fsdp_reshard_after_forward", "FULL_SHARD", 1, "true", []),
    ("AC006/bad_type.yaml", "AC006", "error", "/distributed_type", "MULTI_GPUS", 1, None, []),
    ("AC006/bad_state_dict.yaml", "AC006", "error", "/fsdp_config/fsdp_state_dict_type", "LOCAL_STATE_DICT", 1,
     "SHARDED_STATE_DICT", []),
    ("AC006/bad_wrap.yaml", "AC006", "error", "/fsdp_config/fsdp_auto_wrap_policy", "TRANSFORMER_WRAP", 1, None, []),
    ("AC006/bad_ac_offload.yaml", "AC006", "error", "/fsdp_config/fsdp_activation_checkpointing_offload", "true", 2,
     None, []),
    ("AC006/bad_precision.yaml", "AC006", "error", "/mixed_precision", "bf32", 1, None, []),
    ("AC007/bad.yaml", "AC007", "info", "/fp16", "fp16:", 1, None, []),
    ("AC008/bad.yaml", "AC008", "error", "/mixed_precision", "no", 1, "'no'", []),
    ("AC009/bad.yaml", "AC009", "error", "/fsdp_config/fsdp_transformer_layer_cls_to_wrap", "LlamaDecoderLayer, ",
     1, "LlamaDecoderLayer,LlamaMLP", []),
    ("AC009/bad_fsdp1_list.yaml", "AC009", "error", "/fsdp_config/fsdp_transformer_layer_cls_to_wrap",
     "[LlamaDecoderLayer", 1, None, []),
    ("AC101/bad.yaml", "AC101", "warning", "/num_processes", "9", 2, None, [("/num_machines", "2", 2)]),
    ("AC102/bad.yaml", "AC102", "warning", "/fsdp_config", "fsdp_config", 1, None,
     [("/distributed_type", "DEEPSPEED", 1)]),
    ("AC013/bad.yaml", "AC013", "warning", "/num_processes", "010", 1, None, []),
    ("AC013/bad_nested.yaml", "AC013", "warning", "/fsdp_config/fsdp_min_num_params", "1:00", 1, None, []),
    ("AC012/bad_machines_string.yaml", "AC012", "info", "/num_machines", '"1"', 1, None, []),
    ("AC012/bad_processes_float.yaml", "AC012", "info", "/num_processes", "4.0", 1, None, []),
    ("AC012/bad_port_string.yaml", "AC012", "info", "/main_process_port", '"29500"', 1, None, []),
    ("AC012/bad_offload_null.yaml", "AC012", "info", "/fsdp_config/fsdp_offload_params", "null", 1, None, []),
    ("AC012/bad_prefetch_no.yaml", "AC012", "info", "/fsdp_config/fsdp_backward_prefetch", "no", 1, None, []),
    ("AC012/bad_zero_stage_float.yaml", "AC012", "info", "/deepspeed_config/zero_stage", "2.0", 1, None, []),
    ("AC012/bad_init_flag.yaml", "AC012", "info", "/deepspeed_config/zero3_init_flag", "sometimes", 1, None, []),
    ("AC012/bad_processes_float_deepspeed.yaml", "AC012", "info", "/num_processes", "2.0", 1, None, []),
    ("AC012/bad_processes_string.yaml", "AC012", "info", "/num_processes", "'4'", 1, None, []),
    ("AC012/bad_use_cpu_word.yaml", "AC012", "info", "/use_cpu", "sometimes", 1, None, []),
    ("AC012/bad_size_float.yaml", "AC012", "info", "/parallelism_config/parallelism_config_dp_shard_size", "2.5", 1,
     None, []),
    ("AC012/bad_cp_size_string.yaml", "AC012", "info", "/parallelism_config/parallelism_config_cp_size", '"2"', 1,
     None, []),
    ("AC012/bad_processes_string_nodes.yaml", "AC012", "info", "/num_processes", '"16"', 1, None, []),
    ("AC012/bad_machine_rank_null.yaml", "AC012", "info", "/machine_rank", "null", 1, None, []),
    ("AC012/bad_port_string_deepspeed.yaml", "AC012", "info", "/main_process_port", '"29500"', 1, None, []),
    ("AC012/bad_main_process_ip_number.yaml", "AC012", "info", "/main_process_ip", "10", 1, None, []),
    ("AC012/bad_min_num_params_float.yaml", "AC012", "info", "/fsdp_config/fsdp_min_num_params", "1.0e8", 1, None, []),
    ("AC107/bad.yaml", "AC107", "warning", "/distributed_type", "no", 1, None,
     [("/num_processes", "num_processes", 1), ("/fsdp_config", "fsdp_config", 1)]),
    ("AC107/bad_multi_gpu.yaml", "AC107", "warning", "/fsdp_config", "fsdp_config", 1, None,
     [("/distributed_type", "MULTI_GPU", 1)]),
    ("AC107/bad_processes.yaml", "AC107", "info", "/distributed_type", "'NO'", 1, None,
     [("/num_processes", "num_processes", 1)]),
    ("AC108/bad.sh", "AC108", "warning", None, "accelerate launch", 1, None,
     [(None, '"no"', 1, "AC108/train_no.py"), ("/mixed_precision", "bf16", 1, "AC108/config.yaml")]),
    ("AC109/bad.yaml", "AC109", "info", "/deepspeed_config/deepspeed_config_file", "configs/ds_confg.json", 1,
     "configs/ds_config.json", []),
    ("AC103/bad.yaml", "AC103", "error", "/fsdp_config/fsdp_sync_module_states", "false", 1, "true", []),
    ("AC001/bad_json.json", "AC001", "error", "/num_process", '"num_process"', 1, "num_processes", []),
    ("AC006/bad_dynamo.yaml", "AC006", "error", "/dynamo_config/dynamo_backend", "INDUCTR", 1, "INDUCTOR", []),
    # checked alone, no launch says whether the command line gives --gpu_ids (an info; see below)
    ("AC006/bad_gpu_ids.yaml", "AC006", "info", "/gpu_ids", "0", 2, "'0'", []),
    ("AC006/bad_gpu_ids_no.yaml", "AC006", "info", "/gpu_ids", "no", 1, "'no'", []),
    ("AC010/bad_total.yaml", "AC010", "error", "/parallelism_config", "parallelism_config:", 1, None,
     [("/num_processes", "8", 1)]),
    ("AC010/bad_cp_backend.yaml", "AC010", "error", "/parallelism_config/parallelism_config_cp_backend", "ring", 1,
     "torch", []),
    ("AC010/bad_fsdp1.yaml", "AC010", "error", "/parallelism_config", "parallelism_config:", 1, None, []),
    ("AC011/bad.yaml", "AC011", "error", "/fp8_config/fp8_format", "E4M5", 1, None, []),
    ("AC011/bad_msamp_zero3.yaml", "AC011", "error", "/deepspeed_config/zero_stage", "3", 1, None,
     [("/fp8_config/backend", "MSAMP", 1)]),
    ("AC011/bad_mxfp8_amax_algo.yaml", "AC011", "error", "/fp8_config/amax_compute_algo", "max", 2, None,
     [("/fp8_config/use_mxfp8_block_scaling", "true", 1)]),
    ("AC011/bad_mxfp8_amax_history.yaml", "AC011", "error", "/fp8_config/amax_history_len", "16", 1, None,
     [("/fp8_config/use_mxfp8_block_scaling", "true", 1)]),
    ("AC010/bad_cp_standalone.yaml", "AC010", "error", "/parallelism_config/parallelism_config_cp_size", "2", 2,
     None, []),
    ("AC104/bad.yaml", "AC104", "error", "/gpu_ids", "'0'", 1, None, []),
    # checked alone, no launch runs it: an info (with the launch scripts of its folder, an error)
    ("AC105/bad.yaml", "AC105", "info", "/num_machines", "num_machines", 1, None, []),
    ("AC105/bad_port.yaml", "AC105", "info", "/num_machines", "num_machines", 1, None, []),
    ("AC105/bad_float.yaml", "AC105", "info", "/num_machines", "num_machines", 1, None, []),
    ("AC106/bad.yaml", "AC106", "error", "/deepspeed_config/deepspeed_config_file", "ds_config_no_zero.json", 1, None,
     [("", "{", 1, "AC106/ds_config_no_zero.json")]),
]


def test_gpu_ids_number_in_a_json_config_is_told_to_be_a_string(tmp_path):
    """json.load gives a number too (the same failure), but a JSON file is not fixed by YAML quoting."""
    import json

    config = json.loads((RULES / "AC001" / "good_json.json").read_text())
    config.update(gpu_ids=0, distributed_type="MULTI_GPU", num_processes=2)
    path = tmp_path / "default_config.json"
    path.write_text(json.dumps(config, indent=2))
    status, output = check_json(str(path))
    (finding,) = findings_with_code(output, "AC006")
    assert "JSON number 0" in finding["message"] and "'int' object has no attribute 'split'" in finding["message"]
    assert finding["fix"] is None and finding["pointer"] == "/gpu_ids"


def test_ac012_rests_on_the_launches_that_run_the_file():
    """A flag on the command line wins over the file's value: with the launch scripts beside them,
    each bad fixture is an error that names the launch leaving the value to it, and a launch that
    gives the flag (run_given.sh: --num_machines) leaves nothing to report."""
    folder = RULES / "AC012"
    status, output = check_json(str(folder))
    found = {os.path.basename(f["file"]): f for f in output["findings"] if f["code"] == "AC012"}
    bad = {p.name for p in folder.glob("bad*.yaml")}
    assert set(found) == bad
    for name, finding in found.items():
        assert finding["severity"] == "error", finding
        launch = name.replace("bad_", "run_").replace(".yaml", ".sh")
        assert [r["file"] for r in finding["related"]] == [shown(folder / launch)]
    assert status == 1


def test_ac105_rests_on_the_launches_that_run_the_file(tmp_path):
    """With the launch scripts beside them, each AC105 bad fixture is an error naming the launch;
    a launch that gives --main_process_ip leaves nothing to report for the missing IP."""
    folder = RULES / "AC105"
    status, output = check_json(str(folder))
    found = {os.path.basename(f["file"]): f for f in output["findings"] if f["code"] == "AC105"}
    assert set(found) == {p.name for p in folder.glob("bad*.yaml")}
    for name, finding in found.items():
        assert finding["severity"] == "error", finding
        assert [r["file"] for r in finding["related"]] == [shown(folder / f"run_{name[:-5]}.sh")]
    assert status == 1
    (tmp_path / "bad.yaml").write_text((folder / "bad.yaml").read_text())
    (tmp_path / "run.sh").write_text("accelerate launch --config_file bad.yaml --main_process_ip 10.0.0.1 train.py\n")
    _, given = check_json(str(tmp_path))
    assert [f for f in given["findings"] if f["code"] == "AC105"] == []


def _skip_header(path, marker, occurrence):
    return marker_position(path, marker, occurrence, skip_comments=True)


@pytest.mark.parametrize("fixture,code,severity,pointer,marker,occurrence,fix,related", BAD_CASES,
                         ids=[c[0] for c in BAD_CASES])
def test_bad_fixture_is_reported_at_the_right_place(fixture, code, severity, pointer, marker, occurrence, fix,
                                                     related):
    path = RULES / fixture
    status, output = check_json(str(path))
    found = findings_with_code(output, code)
    assert len(found) == 1, output["findings"]
    finding = found[0]
    line, column = _skip_header(path, marker, occurrence)
    assert (finding["severity"], finding["pointer"], finding["line"], finding["column"]) == (
        severity, pointer, line, column)
    assert finding["file"] == shown(path)
    assert finding["fix"] == fix
    # a related place is in the fixture itself, or in the file named fourth (relative to RULES)
    assert [(r["pointer"], r["line"], r["column"], r["file"]) for r in finding.get("related", [])] == [
        (p, *_skip_header(RULES / other[0] if other else path, m, o), shown(RULES / other[0] if other else path))
        for p, m, o, *other in related]
    assert status == (1 if any(f["severity"] == "error" for f in output["findings"]) else 0)


GOOD_CASES = sorted([*RULES.glob("*/good*.yaml"), *RULES.glob("*/good*.sh")])


@pytest.mark.parametrize("path", GOOD_CASES, ids=[f"{p.parent.name}/{p.name}" for p in GOOD_CASES])
def test_good_fixture_has_no_finding_of_its_rule_and_no_errors(path):
    status, output = check_json(str(path))
    assert findings_with_code(output, path.parent.name) == []
    assert [f for f in output["findings"] if f["severity"] == "error"] == []
    assert status == 0


def test_every_rule_has_bad_and_good_fixtures():
    from shardshift.rules import all_rules

    codes = {rule.code for rule in all_rules() if rule.code.startswith("AC")}
    assert codes == {p.name for p in RULES.iterdir() if p.is_dir()}
    for code in codes:
        # AC108 judges a launch script (bad*.sh, good*.sh) against its config and entry script
        assert [*(RULES / code).glob("bad*.yaml"), *(RULES / code).glob("bad*.sh")] and \
            [*(RULES / code).glob("good*.yaml"), *(RULES / code).glob("good*.sh")], code
    assert {c[1] for c in BAD_CASES} == codes


def test_rule_documentation_has_the_sections():
    from shardshift.rules import all_rules

    for rule in all_rules():
        if rule.code.startswith("AC"):
            doc = rule.documentation()
            for heading in ("## What it does", "## Why is this bad", "## Example", "## Use instead"):
                assert heading in doc, (rule.code, heading)


def test_ac009_fix_joins_the_class_names_with_a_bare_comma(tmp_path):
    from conftest import run_cli

    path = tmp_path / "accelerate_config.yaml"
    path.write_text((RULES / "AC009" / "bad.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    done = run_cli("check", "--fix", str(path))
    assert done.stderr == "" or "fixed" in done.stderr, done.stderr
    text = path.read_text(encoding="utf-8")
    assert "  fsdp_transformer_layer_cls_to_wrap: LlamaDecoderLayer,LlamaMLP\n" in text
    assert text.replace("LlamaDecoderLayer,LlamaMLP", "LlamaDecoderLayer, LlamaMLP") == \
        (RULES / "AC009" / "bad.yaml").read_text(encoding="utf-8")
    _, output = check_json(str(path))
    assert findings_with_code(output, "AC009") == []


def test_ac009_only_under_the_transformer_based_policy(tmp_path):
    path = tmp_path / "accelerate_config.yaml"
    path.write_text((RULES / "AC009" / "bad.yaml").read_text(encoding="utf-8").replace(
        "TRANSFORMER_BASED_WRAP", "SIZE_BASED_WRAP"), encoding="utf-8")
    _, output = check_json(str(path))
    assert findings_with_code(output, "AC009") == []


@pytest.mark.parametrize("value", ["[FSDP]", "{FSDP: 1}", "[DEEPSPEED, FSDP]"])
def test_a_distributed_type_of_another_type_is_a_finding_not_a_traceback(tmp_path, value):
    """`distributed_type: [FSDP]` crashed the both-blocks rule (a list as a dict key)."""
    path = tmp_path / "accelerate_config.yaml"
    path.write_text(f"compute_environment: LOCAL_MACHINE\ndistributed_type: {value}\nnum_processes: 8\n"
                    "fsdp_config:\n  fsdp_version: 2\n")
    status, output = check_json(str(path))
    assert status == 1
    assert [f["pointer"] for f in output["findings"] if "is not one of" in f["message"]] == ["/distributed_type"]


def test_ac006_num_processes_rests_on_the_launches_that_run_the_file():
    """num_processes -1 fails in accelerate launch in every mode unless --num_processes is given:
    an error where the launch beside the file leaves it (run_processes_default.sh), nothing where
    one gives it (run_processes_given.sh), an info where no launch runs the file."""
    folder = RULES / "AC006"
    status, output = check_json(str(folder))
    found = {os.path.basename(f["file"]): f for f in output["findings"]
             if f["code"] == "AC006" and "num_processes" in f["message"]}
    assert set(found) == {"bad_processes_default.yaml", "bad_no_processes.yaml"}
    assert found["bad_processes_default.yaml"]["severity"] == "error"
    assert [r["file"] for r in found["bad_processes_default.yaml"]["related"]] == [
        shown(folder / "run_processes_default.sh")]
    assert found["bad_no_processes.yaml"]["severity"] == "info"
    assert found["bad_no_processes.yaml"]["unknown_context"]["kind"] == "consumer"


def test_an_infinite_num_machines_is_a_finding_not_a_traceback(tmp_path):
    """YAML's `.inf` is a float PyYAML reads: the rules that compare num_machines state it, never crash."""
    (tmp_path / "config.yaml").write_text("compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\n"
                                          "num_machines: .inf\nmachine_rank: null\nnum_processes: 8\n")
    (tmp_path / "run.sh").write_text("accelerate launch --config_file config.yaml train.py\n")
    status, output = check_json(str(tmp_path))
    found = {f["pointer"] for f in output["findings"] if f["code"] == "AC012"}
    assert found == {"/num_machines", "/machine_rank"}, output["findings"]
    assert status == 1


def test_context_parallelism_without_fsdp_is_allowed_when_the_environment_says_so(tmp_path):
    # AcceleratorState lets cp_size > 1 run without FSDP when ACCELERATE_ALLOW_CP_STANDALONE is true
    from shardshift import api

    bad = FIXTURES / "accelerate" / "rules" / "AC010" / "bad_cp_standalone.yaml"
    assert [f.code for f in api.check([str(bad)]).findings] == ["AC010"]
    allowed = api.check([str(bad)], env={"ACCELERATE_ALLOW_CP_STANDALONE": "true"}).findings
    assert [f.code for f in allowed if f.severity != "info"] == []


def test_an_infinite_amax_history_with_mxfp8_raises_no_traceback(tmp_path):
    from shardshift import api

    config = tmp_path / "accelerate_config.yaml"
    config.write_text("distributed_type: MULTI_GPU\nmixed_precision: fp8\nnum_machines: 1\nnum_processes: 8\n"
                      "fp8_config:\n  backend: TE\n  use_mxfp8_block_scaling: true\n  amax_history_len: .inf\n")
    assert [f.code for f in api.check([str(config)]).findings if f.code == "AC011"] == []


@pytest.mark.parametrize("value, reported", [
    ("configs/ds_confg.json", True),
    ('\'{"zero_optimization": {"stage": 2}}\'', False),  # inline JSON: HfDeepSpeedConfig parses the string itself
    ("eyJ6ZXJvX29wdGltaXphdGlvbiI6IHsic3RhZ2UiOiAyfX0=", False),  # base64 of that JSON
    ("${DS_CONFIG}", False),  # a variable: only known when the job runs
])
def test_ac109_only_a_path_that_names_no_file(tmp_path, value, reported):
    """Accelerate's HfDeepSpeedConfig takes a path, JSON text or base64 JSON; only a path to nothing is refused."""
    text = (RULES / "AC109" / "bad.yaml").read_text(encoding="utf-8").replace("configs/ds_confg.json", value)
    (tmp_path / "accelerate_config.yaml").write_text(text, encoding="utf-8")
    _, output = check_json("--select", "AC109", str(tmp_path / "accelerate_config.yaml"))
    assert bool(findings_with_code(output, "AC109")) is reported


def test_ac109_a_path_from_a_folder_above_is_the_launch_directorys_business(tmp_path):
    """configs/accelerate.yaml naming ds/zero3.json that lies at the repository's root: a job launched there finds it."""
    (tmp_path / "configs").mkdir()
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "zero3.json").write_text('{"zero_optimization": {"stage": 3}}', encoding="utf-8")
    text = (RULES / "AC109" / "bad.yaml").read_text(encoding="utf-8").replace("configs/ds_confg.json", "ds/zero3.json")
    (tmp_path / "configs" / "accelerate_config.yaml").write_text(text, encoding="utf-8")
    _, output = check_json("--select", "AC109", str(tmp_path / "configs" / "accelerate_config.yaml"))
    assert findings_with_code(output, "AC109") == []


@pytest.mark.parametrize("value", ['"configs/ds\\0.json"', '"' + "[" * 5000 + '"', "'" + "[" * 5000 + "1" + "]" * 5000 + "'"])
def test_a_hostile_deepspeed_config_file_is_a_finding_or_nothing_never_a_traceback(tmp_path, value):
    """A NUL in the path, JSON nested past the parser's depth: AC109 and AC012 read the value without failing."""
    text = (RULES / "AC109" / "bad.yaml").read_text(encoding="utf-8").replace("configs/ds_confg.json", value)
    (tmp_path / "accelerate_config.yaml").write_text(text, encoding="utf-8")
    status, output = check_json("--select", "AC109,AC012", str(tmp_path / "accelerate_config.yaml"))
    assert status in (0, 1), output
    assert {f["code"] for f in output["findings"]} <= {"AC109", "AC012"}
