"""`convert` of a file that names its ds_config (an Accelerate YAML, a launch script) converts the
setup the two form: the merged Plan, with the ds_config's settings in the report, each naming its
own file."""

from __future__ import annotations

import json

from conftest import FIXTURES, run_cli, shown

SETUP = FIXTURES / "setups" / "accelerate_clean"


def test_accelerate_yaml_with_its_ds_config_converts_as_one_setup(tmp_path):
    report = tmp_path / "report.json"
    done = run_cli("convert", str(SETUP / "accelerate_config.yaml"), "--to", "fsdp2", "-o", str(tmp_path / "m.py"),
                   "--report", str(report))
    assert done.returncode == 0, done.stderr
    module = (tmp_path / "m.py").read_text()
    assert "RESHARD_AFTER_FORWARD = True" in module  # the ds_config's ZeRO-3 reached the module
    entries = json.loads(report.read_text())["entries"]
    by_file = {(e.get("file"), e["source"]): e for e in entries}
    stage = by_file[(shown(SETUP / "ds_config.json"), "/zero_optimization/stage")]  # relative to the cwd
    assert stage["status"] == "exact"
    # The YAML's own settings are no longer blanket entries of the writer ("carried through the neutral
    # Plan"): the measured report (migration.py) gives each one its status; none of the writer's entries
    # for the YAML is a blanket.
    assert not [e for e in entries if "key table" in e["reason"]]
    assert f"{shown(SETUP / 'ds_config.json')}:14:5: exact" in done.stderr


def test_a_setting_the_two_files_disagree_on_is_unknown_in_the_report_at_the_ds_config(tmp_path):
    (tmp_path / "ds.json").write_text(json.dumps({"train_micro_batch_size_per_gpu": 2, "gradient_clipping": 1.0}))
    script = tmp_path / "run.sh"
    script.write_text("deepspeed --num_nodes 1 --num_gpus 8 pretrain_gpt.py --deepspeed --deepspeed_config ds.json "
                      "--micro-batch-size 4 --num-layers 2\n")
    report = tmp_path / "report.json"
    done = run_cli("convert", str(script), "--to", "deepspeed", "--report", str(report))
    assert done.returncode == 0, done.stderr
    entries = json.loads(report.read_text())["entries"]
    (micro,) = [e for e in entries if e["source"] == "/train_micro_batch_size_per_gpu"]
    assert (micro["file"], micro["status"]) == (str(tmp_path / "ds.json"), "unknown")
    assert "set to 4 in" in micro["reason"]


def test_a_round_trip_of_the_sources_own_format_does_not_merge_its_ds_config(tmp_path):
    (tmp_path / "ds.json").write_text(json.dumps({"zero_optimization": {"stage": 2}, "gradient_clipping": 1.0}))
    script = tmp_path / "run.sh"
    script.write_text("deepspeed --num_nodes 1 --num_gpus 8 pretrain_gpt.py --deepspeed --deepspeed_config ds.json "
                      "--micro-batch-size 4 --num-layers 2\n")
    done = run_cli("convert", str(script), "--to", "megatron-args")
    assert done.returncode == 0, done.stderr
    assert "--use-distributed-optimizer" not in done.stdout  # the ds_config's ZeRO stage is not a flag of the script
    assert not [line for line in done.stderr.splitlines() if line.startswith(str(tmp_path / "ds.json"))]
