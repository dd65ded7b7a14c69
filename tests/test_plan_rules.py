"""The semantic rules are written once over the Plan: a Plan built as another format's reader
would build it (provenance in a YAML file, or flags of an argument list) gets the same rules, at
those places and in that format's spelling; "auto" and Unknown values are never judged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shardshift.document import Document
from shardshift.plan import Alternative, Plan, Unknown
from shardshift.rules import all_rules
from shardshift.rules.base import Context, PlanRule
from shardshift.setup import Setup
from shardshift.source import Location

from conftest import FIXTURES, ROOT, check_json, run_cli

PLAN_RULES = [rule() for rule in all_rules() if issubclass(rule, PlanRule)]


def findings(plan: Plan, path: str, world: int | None = None, fmt: str = "axolotl") -> list:
    document = Document(path=path, format=fmt, text="", plan=plan)
    setup = Setup([document], plan)
    context = Context(world_size=world, documents=[document], setups=[setup])
    return [f for rule in PLAN_RULES for f in rule.check_setup(setup, context)]


def yaml_plan(**fields) -> Plan:
    """A Plan as a YAML reader builds it: every field at its own line of train.yaml."""
    plan = Plan()
    for line, (dotted, (key, value)) in enumerate(fields.items(), start=2):
        assert plan.set(dotted.replace("__", "."), value, Location("train.yaml", line, len(key) + 3, "/" + key))
    return plan


def test_batch_arithmetic_fires_at_the_yaml_keys_in_the_yaml_spelling():
    plan = yaml_plan(batch__global_=("global_batch_size", 64), batch__micro=("micro_batch_size", 4),
                     batch__accumulation=("gradient_accumulation_steps", 8))
    (finding,) = findings(plan, "train.yaml", world=8)
    assert (finding.code, finding.file, finding.line, finding.column, finding.pointer) == \
        ("DS201", "train.yaml", 2, 20, "/global_batch_size")
    assert finding.message.startswith("global_batch_size is 64 but micro 4 × accumulation 8 × 8 data-parallel ranks "
                                      "= 256")
    assert finding.fix == "256"


def test_the_same_plan_that_multiplies_out_is_clean():
    plan = yaml_plan(batch__global_=("global_batch_size", 256), batch__micro=("micro_batch_size", 4),
                     batch__accumulation=("gradient_accumulation_steps", 8))
    assert findings(plan, "train.yaml", world=8) == []


def test_data_parallel_size_comes_from_the_tensor_and_pipeline_flags_of_an_argument_list():
    plan = Plan()
    flags = [("parallelism.tensor", "--tensor-model-parallel-size", 2), ("parallelism.pipeline",
             "--pipeline-model-parallel-size", 2), ("batch.micro", "--micro-batch-size", 2),
             ("batch.global_", "--global-batch-size", 20)]
    for line, (dotted, flag, value) in enumerate(flags, start=10):
        plan.set(dotted, value, Location("pretrain_gpt.sh", line, 5, flag))
    (finding,) = findings(plan, "pretrain_gpt.sh", world=16, fmt="megatron")
    assert (finding.code, finding.line, finding.pointer) == ("DS201", 13, "--global-batch-size")
    assert "4 data-parallel ranks (16 GPUs / --tensor-model-parallel-size 2 / --pipeline-model-parallel-size 2)" \
        in finding.message
    assert "--global-batch-size 20 does not divide evenly" in finding.message
    assert "that gives accumulation = 20 // 2 // 4 = 2" in finding.message and "DeepSpeed" not in finding.message


def test_parallel_degrees_and_heads_are_judged_at_their_flags():
    plan = Plan()
    for line, (dotted, flag, value) in enumerate([("parallelism.tensor", "--tensor-model-parallel-size", 3),
                                                  ("parallelism.pipeline", "--pipeline-model-parallel-size", 2),
                                                  ("model.heads", "--num-attention-heads", 32),
                                                  ("parallelism.expert", "--expert-model-parallel-size", 3)], 1):
        plan.set(dotted, value, Location("run.sh", line, 3, flag))
    found = {f.code: f for f in findings(plan, "run.sh", world=16, fmt="megatron")}
    assert set(found) == {"PL101", "PL102", "PL103"}
    assert found["PL101"].pointer == "--tensor-model-parallel-size"
    assert "--tensor-model-parallel-size 3 × --pipeline-model-parallel-size 2 = 6 does not divide the world size 16" \
        in found["PL101"].message
    assert [r.pointer for r in found["PL101"].related] == ["--pipeline-model-parallel-size"]
    assert (found["PL103"].line, found["PL103"].pointer) == (3, "--num-attention-heads")
    assert found["PL103"].related[0].pointer == "--tensor-model-parallel-size"
    assert "--expert-model-parallel-size 3 does not divide the world size 16 / --pipeline-model-parallel-size 2" \
        in found["PL102"].message


def test_degrees_that_multiply_to_the_world_are_clean():
    plan = Plan()
    for dotted, value in [("parallelism.tensor", 2), ("parallelism.pipeline", 2), ("parallelism.expert", 4),
                          ("parallelism.data_parallel_shard", 4), ("model.heads", 32), ("model.kv_heads", 8)]:
        plan.set(dotted, value, Location("torchtitan.toml", 1, 1, None))
    assert findings(plan, "torchtitan.toml", world=16, fmt="torchtitan") == []
    plan.set("parallelism.data_parallel_shard", 2, Location("torchtitan.toml", 9, 1, "/parallelism/data_parallel_shard_degree"))
    (finding,) = findings(plan, "torchtitan.toml", world=16, fmt="torchtitan")
    assert finding.code == "PL101" and "= 8, but the world size is 16" in finding.message


@pytest.mark.parametrize("placeholder", ["auto", Unknown("run-time argument args.micro_batch_size"),
                                         Unknown("undecided branch", alternatives=(Alternative(4, "args.small"),
                                                                                  Alternative(8, "not args.small")))])
def test_auto_and_unknown_values_are_never_judged(placeholder):
    plan = yaml_plan(batch__global_=("global_batch_size", 64), batch__micro=("micro_batch_size", placeholder),
                     batch__accumulation=("gradient_accumulation_steps", 8))
    assert findings(plan, "train.yaml", world=8) == []
    plan = Plan()
    plan.set("parallelism.tensor", placeholder if placeholder != "auto" else Unknown("environment variable TP"),
             Location("run.sh", 1, 1, "--tensor-model-parallel-size"))
    plan.set("model.heads", 30, Location("run.sh", 2, 1, "--num-attention-heads"))
    assert findings(plan, "run.sh", world=16, fmt="megatron") == []


def test_a_world_size_the_setup_states_is_used_without_the_option():
    plan = yaml_plan(batch__global_=("global_batch_size", 64), batch__micro=("micro_batch_size", 4),
                     batch__accumulation=("gradient_accumulation_steps", 8), world__world_size=("num_processes", 8))
    (finding,) = findings(plan, "train.yaml")
    assert "× 8 data-parallel ranks = 256" in finding.message


PLAN_FIXTURES = sorted((FIXTURES / "plan").rglob("*.plan.yaml"))


@pytest.mark.parametrize("path", PLAN_FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_plan_fixtures_through_the_cli(path):
    """A bad fixture of rule X gets exactly one finding, of X, at the key its comment is about;
    a good one gets none."""
    status, output = check_json(str(path))
    codes = [f["code"] for f in output["findings"]]
    if path.name.startswith("bad"):
        assert codes == [path.parent.name] and status == 1, output["findings"]
        (finding,) = output["findings"]
        line = path.read_text().splitlines()[finding["line"] - 1]
        assert line.strip().startswith(finding["pointer"].rsplit("/", 1)[-1] + ":"), (line, finding)
    else:
        assert codes == [] and status == 0, output["findings"]


def test_a_plan_file_with_a_wrong_value_is_reported_not_read_as_the_default(tmp_path):
    path = tmp_path / "x.plan.yaml"
    path.write_text("parallelism:\n  tensor: four\n")
    status, output = check_json(str(path))
    assert status == 1 and [f["code"] for f in output["findings"]] == ["SS001"]
    assert "/parallelism/tensor" in output["findings"][0]["message"]


SETUP_CASES = [  # (referring file, severity, its pointer, the ds_config's pointer, text of the message)
    ("setups/accelerate_refuses/accelerate_config.yaml", "error", "/deepspeed_config/gradient_accumulation_steps",
     "/gradient_accumulation_steps", "Accelerate raises a ValueError at launch"),
    ("plan/PL001/bad_accelerate.yaml", "error", "/deepspeed_config/gradient_accumulation_steps",
     "/gradient_accumulation_steps", "is 8 here and in ds_config.json"),
    ("setups/axolotl_mismatch/axolotl.yaml", "error", "/micro_batch_size", "/train_micro_batch_size_per_gpu",
     "mismatch TrainingArguments values"),
    ("plan/PL001/bad_axolotl.yaml", "error", "/micro_batch_size", "/train_micro_batch_size_per_gpu",
     "micro_batch_size is 4 here and train_micro_batch_size_per_gpu is 2 in ds_config.json"),
    ("setups/axolotl_optimizer_ignored/axolotl.yaml", "warning", "/optimizer", "/optimizer/type",
     "the value in ds_config.json is used and this one does nothing"),
]


@pytest.mark.parametrize("referrer,severity,pointer,their_pointer,text", SETUP_CASES, ids=[c[0] for c in SETUP_CASES])
def test_two_linked_files_that_disagree_give_one_finding_with_both_places(referrer, severity, pointer, their_pointer,
                                                                          text):
    path = FIXTURES / referrer
    status, output = check_json(str(path))  # the ds_config is found through the reference, not named
    found = [f for f in output["findings"] if f["code"] == "PL001"]
    assert len(found) == 1, output["findings"]
    (finding,) = found
    assert (finding["file"], finding["severity"], finding["pointer"]) == (str(path.relative_to(ROOT)), severity,
                                                                          pointer)
    assert text in finding["message"]
    (related,) = finding["related"]
    assert related["file"] == str((path.parent / "ds_config.json").relative_to(ROOT))
    assert related["pointer"] == their_pointer
    config = (path.parent / "ds_config.json").read_text().splitlines()
    assert config[related["line"] - 1][related["column"] - 1:].split(",")[0].strip() != ""


@pytest.mark.parametrize("referrer", ["setups/accelerate_clean/accelerate_config.yaml", "setups/axolotl_auto/axolotl.yaml",
                                      "plan/PL001/good_accelerate.yaml", "plan/PL001/good_axolotl.yaml"])
def test_linked_files_that_agree_or_leave_auto_are_clean(referrer):
    status, output = check_json(str(FIXTURES / referrer))
    assert [f for f in output["findings"] if f["code"] == "PL001"] == []


def test_a_script_and_the_ds_config_it_loads_give_one_finding_with_both_places():
    """The script side of a setup: DS430 (a client optimizer over the config's optimizer block)."""
    folder = FIXTURES / "deepspeed" / "rules" / "DS430"
    status, output = check_json(str(folder / "bad.py"))
    (finding,) = [f for f in output["findings"] if f["code"] == "DS430"]
    assert finding["file"] == str((folder / "bad.py").relative_to(ROOT)) and finding["pointer"] is None
    (related,) = finding["related"]
    assert related["file"].endswith("DS430/ds_config.json") and related["pointer"] == "/optimizer"


def test_check_lists_the_values_known_only_at_run_time_and_judges_none_of_them(tmp_path):
    path = tmp_path / "run.plan.yaml"
    path.write_text("world:\n  world_size: 8\nbatch:\n  global: 64\n  micro: {unknown: run-time argument args.mbs}\n"
                    "  accumulation: 8\n")
    status, output = check_json(str(path))
    assert status == 0 and output["findings"] == []
    assert output["unknowns"] == [{"file": str(path), "line": 5, "column": 10, "pointer": "/batch/micro",
                                   "field": "batch.micro", "reason": "run-time argument args.mbs"}]
    assert output["summary"]["unknowns"] == 1
    text = run_cli("check", str(path)).stdout
    assert "1 setting is known only when the job runs and was not judged" in text
    path.write_text(path.read_text().replace("{unknown: run-time argument args.mbs}", "2"))
    status, output = check_json(str(path))  # the same file with the value known: 2 × 8 × 8 = 128 ≠ 64
    assert status == 1 and [f["code"] for f in output["findings"]] == ["DS201"] and output["unknowns"] == []


def test_a_refused_setting_alone_in_the_yaml_and_a_ds_config_value_against_the_default(tmp_path):
    """Accelerate refuses its DeepSpeed settings next to deepspeed_config_file even when the
    ds_config does not set them; transformers compares a ds_config value with its own default when
    the Axolotl YAML is silent (both confirmed in tests/test_setup_oracle.py)."""
    (tmp_path / "ds_config.json").write_text('{"train_micro_batch_size_per_gpu": 2, "gradient_clipping": 0.5,\n'
                                             ' "zero_optimization": {"stage": 2}}\n')
    (tmp_path / "accelerate.yaml").write_text("distributed_type: DEEPSPEED\ndeepspeed_config:\n"
                                              "  deepspeed_config_file: ds_config.json\n"
                                              "  offload_optimizer_device: cpu\nnum_processes: 2\n")
    (tmp_path / "axolotl.yaml").write_text("base_model: m\nmicro_batch_size: 2\ndatasets: []\n"
                                           "deepspeed: ds_config.json\n")
    status, output = check_json(str(tmp_path / "accelerate.yaml"), str(tmp_path / "axolotl.yaml"), "--select", "PL001")
    found = {Path(f["file"]).name + ":" + f["pointer"]: f for f in output["findings"]}
    assert set(found) == {"accelerate.yaml:/deepspeed_config/offload_optimizer_device",
                          "ds_config.json:/gradient_clipping"}, output["findings"]
    alone = found["accelerate.yaml:/deepspeed_config/offload_optimizer_device"]
    assert "while this file names ds_config.json: Accelerate raises a ValueError" in alone["message"]
    assert [(r["line"], r["pointer"]) for r in alone["related"]] == [(3, "/deepspeed_config/deepspeed_config_file")]
    default = found["ds_config.json:/gradient_clipping"]
    assert "axolotl.yaml does not set max_grad_norm, so its default 1.0 is compared" in default["message"]
    assert [Path(r["file"]).name for r in default["related"]] == ["axolotl.yaml"]


@pytest.mark.parametrize("target", ["deepspeed", "fsdp2"])
def test_convert_reports_each_unknown_once_never_writes_it_and_strict_fails(tmp_path, target):
    path = tmp_path / "run.plan.yaml"
    path.write_text("batch:\n  micro: {unknown: run-time argument args.mbs}\n  accumulation: 4\n"
                    "optimizer:\n  name: AdamW\n  lr: {unknown: environment variable LR}\n")
    done = run_cli("convert", str(path), "--to", target, "--report", str(tmp_path / "report.json"))
    assert done.returncode == 0
    report = json.loads((tmp_path / "report.json").read_text())
    # each unknown setting once; a FILL_IN placeholder the target requires in its place is an entry of the target's
    unknown = [(e["source"], e["line"]) for e in report["entries"] if e["status"] == "unknown"
               and e["source"].startswith("/")]
    placeholders = [e for e in report["entries"] if e["status"] == "unknown" and not e["source"]]
    # what the source leaves unset and the output decides (the sharding stage, the precision): named by the field
    stated = [e for e in report["entries"] if e["status"] == "unknown" and e["source"] and e["source"][0] != "/"]
    assert unknown == [("/batch/micro", 2), ("/optimizer/lr", 6)]
    assert {e["source"] for e in stated} <= {"sharding.stage", "precision.param_dtype"}
    assert all(e["reason"].startswith("not in the source, which leaves") for e in stated)
    assert report["summary"]["unknown"] == 2 + len(placeholders) + len(stated)
    assert all(e["reason"].startswith("placeholder FILL_IN") for e in placeholders)
    assert ('"train_micro_batch_size_per_gpu": "FILL_IN"' in done.stdout) is (target == "deepspeed")
    assert not any(e["source"].endswith("/unknown") for e in report["entries"])  # folded into the value's entry
    assert "args.mbs" not in done.stdout and "environment variable" not in done.stdout  # never written as a value
    assert run_cli("convert", str(path), "--to", target, "--strict").returncode == 1


@pytest.mark.parametrize("fmt,found", [("megatron", []), ("torchtitan", ["PL103"])])
def test_key_value_heads_that_divide_the_tensor_degree_are_accepted_for_megatron_only(fmt, found):
    """Megatron-LM's TransformerConfig accepts query groups that are a multiple or a divisor of the
    tensor degree (each group replicated); other frameworks split key-value heads evenly."""
    plan = Plan()
    for line, (dotted, flag, value) in enumerate([("parallelism.tensor", "--tensor-model-parallel-size", 4),
                                                  ("model.heads", "--num-attention-heads", 8),
                                                  ("model.kv_heads", "--num-query-groups", 2)], 1):
        plan.set(dotted, value, Location("run.sh", line, 3, flag))
    assert [f.code for f in findings(plan, "run.sh", fmt=fmt)] == found
    plan.set("model.kv_heads", 3, Location("run.sh", 3, 3, "--num-query-groups"))
    (finding,) = findings(plan, "run.sh", fmt=fmt)
    assert finding.code == "PL103" and finding.pointer == "--num-query-groups"
    if fmt == "megatron":
        assert "neither a multiple nor a divisor of --tensor-model-parallel-size 4" in finding.message
        assert "num_query_groups (3) must be a multiple or divisor of tensor_model_parallel_size (4)" in finding.message


@pytest.mark.parametrize("name,found", [("bad_megatron.sh", ["PL103"]), ("good_megatron.sh", [])])
def test_megatron_query_groups_against_tensor_parallel_through_the_cli(name, found):
    """The Megatron fixtures of PL103 (Megatron's own verdicts: tests/test_rules_megatron_layout.py)."""
    path = FIXTURES / "plan" / "PL103" / name
    status, output = check_json(str(path))
    assert [f["code"] for f in output["findings"]] == found, output["findings"]
    assert status == (1 if found else 0)
    if found:
        (finding,) = output["findings"]
        assert (finding["line"], finding["pointer"]) == (9, "--num-query-groups")
