"""Issue 3, part C: the rules that close the catalog of silent misconfigurations
(../shared/reference/deepspeed.md §4, see test_catalog_coverage.py) and the rejections of DeepSpeed
0.19.8 an oracle probe found unreported.

Rule cases are data, run through the real CLI (`check --format json`): one run per set of
arguments over every fixture folder of these rules, then each row finds its finding by file and
code. Expected positions come from the fixture text (a marker; `|` inside it is the exact column),
never written down. The additions to older rules (DS102 booleans and "auto", DS306 rows) are cases
on generated files. The verdicts are compared with the installed DeepSpeed 0.19.8: its config
parser for what it rejects while parsing, `deepspeed.initialize` on the CPU for what it rejects
when it builds the engine (skipped when DeepSpeed is not installed).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest

from conftest import FIXTURES, check_json
from rule_cases import marker_position

# The codes whose cases live in this file (test_rules_deepspeed_stage_precision_buckets and _optimizer_scheduler_script leave them to it).
PART_C = frozenset({"DS103", "DS202", "DS314", "DS315", "DS316", "DS332", "DS340", "DS341", "DS342", "DS408",
                    "DS418", "DS422"})

RULES = FIXTURES / "deepspeed" / "rules"
RUNS = {"plain": (), "world": ("--world-size", "8"), "nodes": ("--nodes", "2", "--gpus-per-node", "8"),
        "hidden": ("--hidden-size", "4096"), "old": ("--deepspeed-version", "0.19.2")}


@lru_cache(maxsize=None)
def findings_by_file(run: str) -> dict[str, list[dict]]:
    """Every finding of one CLI run over all fixture folders of these rules, by path below RULES."""
    folders = sorted(str(RULES / code) for code in PART_C)
    _, output = check_json(*RUNS[run], *folders)
    found: dict[str, list[dict]] = {}
    for finding in output["findings"]:
        found.setdefault(os.path.relpath(finding["file"], RULES), []).append(finding)
    return found


def position(path: Path, marker: str, occurrence: int = 1) -> tuple[int, int]:
    line, column = marker_position(path, marker.replace("|", ""), occurrence)
    return line, column + max(marker.find("|"), 0)


# (fixture, run, code, severity, pointer, marker, occurrence, fix, text the message must contain)
BAD_CASES = [
    ("DS103/bad.json", "plain", "DS103", "error", "/compile/passes/1", '"z2"', 1, None, '"z2", not one of'),
    ("DS103/bad_case.json", "plain", "DS103", "error", "/compile/passes/0", '"Z3"', 1, '"z3"', 'did you mean "z3"'),
    ("DS202/bad.json", "plain", "DS202", "warning", "/data_parallel_size", '"data_parallel_size"', 1, None,
     "only with sequence_parallel_size"),
    ("DS202/bad.json", "world", "DS202", "warning", "/data_parallel_size", '"data_parallel_size"', 1, None,
     "the whole world size (8)"),
    ("DS202/bad_mesh.json", "world", "DS202", "error", "/data_parallel_size", '"data_parallel_size": |4', 1, "2",
     "4 × sequence_parallel_size 4 = 16, but the world size is 8"),
    ("DS314/bad.json", "plain", "DS314", "error", "/fp16/loss_scale_window", '"loss_scale_window": |0', 1, "1000",
     "loss_scale_window must be > 0"),
    ("DS314/bad_min.json", "plain", "DS314", "error", "/fp16/min_loss_scale", '"min_loss_scale": |0', 1, "1",
     "min_loss_scale must be > 0"),
    ("DS315/bad.json", "plain", "DS315", "info", "/communication_data_type", '"enabled": |true', 1, None,
     "reduces gradients in bf16"),
    ("DS315/bad.json", "world", "DS315", "info", "/communication_data_type", '"enabled": |true', 1, None,
     "over 8 data-parallel ranks"),
    ("DS316/bad.json", "plain", "DS316", "info", "/bf16/check_grad_overflow", '"enabled": |true', 1, "true",
     "uses true: steps with inf/nan gradients skipped"),
    ("DS316/bad.json", "old", "DS316", "info", "/bf16/check_grad_overflow", '"enabled": |true', 1, "false",
     "DeepSpeed 0.19.2 uses false"),
    ("DS332/bad.json", "plain", "DS332", "warning", "/zero_optimization/stage3_max_live_parameters",
     '"stage3_max_live_parameters": |0', 1, "1000000000", "prefetches (almost) nothing"),
    ("DS332/bad_hidden.json", "hidden", "DS332", "warning", "/zero_optimization/stage3_max_reuse_distance",
     '"stage3_max_reuse_distance": |10000000', 1, "1000000000", "one 4096×4096 weight matrix"),
    ("DS332/bad_sub_group.json", "plain", "DS332", "warning", "/zero_optimization/sub_group_size",
     '"sub_group_size": |1000', 1, "1000000000", "sub-groups of that many elements"),
    ("DS340/bad.json", "plain", "DS340", "error", "/managed_gradient_accumulation",
     '"managed_gradient_accumulation": |false', 1, None, "overlap_comm only with ZeRO stage 2"),
    ("DS340/bad_grad_norm.json", "plain", "DS340", "error", "/zero_optimization/compute_grad_norm",
     '"compute_grad_norm": |false', 1, None, "1.0 by default in DeepSpeed 0.19.3 and later"),
    ("DS340/bad_allreduce_sum.json", "plain", "DS340", "error", "/gradient_allreduce_op",
     '"gradient_allreduce_op": |"sum"', 1, None, "not supported with ZenFlow"),
    ("DS340/bad_bf16_states.json", "plain", "DS340", "error", "/bf16/bf16_optimizer_states",
     '"bf16_optimizer_states": |true', 1, None, "requires bf16_master_weights_and_grads"),
    ("DS340/bad_lamb.json", "plain", "DS340", "error", "/fp16/loss_scale", '"loss_scale": |128', 1, None,
     "lamb optimizer requires dynamic loss scaling"),
    ("DS340/bad_legacy_stage1.json", "plain", "DS340", "error", "/zero_optimization/legacy_stage1",
     '"legacy_stage1": |true', 1, None, "The deprecated version of ZeRO Stage 1 is not supported"),
    ("DS341/bad.json", "plain", "DS341", "warning", "/zero_optimization/round_robin_gradients",
     '"round_robin_gradients": |true', 1, "false", "without optimizer offload"),
    ("DS342/bad.json", "world", "DS342", "error", "/zero_optimization/zero_hpz_partition_size",
     '"zero_hpz_partition_size": |3', 1, None, '"8 is not divisible by 3"'),
    ("DS342/bad_nodes.json", "nodes", "DS342", "warning", "/zero_optimization/zero_hpz_partition_size",
     '"zero_hpz_partition_size": |16', 1, "8", "each group spans 2 nodes of 8 GPUs"),
    ("DS408/bad.json", "plain", "DS408", "info", "/optimizer/params/weight_decay", '"params"', 1, "0.0",
     "FusedAdam, whose default is 0"),
    ("DS418/bad.json", "plain", "DS418", "info", "/scheduler/params/warmup_type", '"params"', 2, '"log"',
     "first two optimizer steps run at learning rate 0"),
    ("DS422/bad.json", "plain", "DS422", "warning", "/activation_checkpointing", '"activation_checkpointing"', 1,
     None, "the Hugging Face Trainer (fixtures/deepspeed/rules/DS422/trainer.py:4)"),
]


@pytest.mark.parametrize("fixture,run,code,severity,pointer,marker,occurrence,fix,text", BAD_CASES,
                         ids=[f"{c[0]}-{c[1]}" for c in BAD_CASES])
def test_bad_fixture_is_reported_at_the_right_place(fixture, run, code, severity, pointer, marker, occurrence, fix,
                                                    text):
    findings = findings_by_file(run).get(fixture, [])
    found = [f for f in findings if f["code"] == code]
    assert len(found) == 1, findings  # this rule, once
    allowed = {"DS201"} if code == "DS202" else set()  # the batch arithmetic data_parallel_size was meant to fix
    assert [f["code"] for f in findings if f["code"] not in PART_C | allowed and f["severity"] == "error"] == [], \
        findings
    (finding,) = found
    assert (finding["severity"], finding["pointer"]) == (severity, pointer)
    assert (finding["line"], finding["column"]) == position(RULES / fixture, marker, occurrence)
    assert finding["fix"] == fix
    assert text in finding["message"], finding["message"]


# Findings that depend on what the run knows: without it (or with another version) they vanish.
# (fixture, run, code)
NOT_REPORTED = [
    ("DS202/bad_mesh.json", "plain", "DS202"),  # the world size is not known
    ("DS332/bad_hidden.json", "plain", "DS332"),  # 1e7 is more than 1e5, less than h² only for h = 4096
    ("DS340/bad_grad_norm.json", "old", "DS340"),  # no clipping by default before 0.19.3
    ("DS342/bad.json", "plain", "DS342"),
    ("DS342/bad_nodes.json", "world", "DS342"),  # 16 > 8: DeepSpeed caps the group at the world, one node
    ("DS342/good.json", "nodes", "DS342"),
    ("DS315/bad.json", "old", "DS316"),  # bf16 check_grad_overflow is written there
    ("DS422/good.json", "plain", "DS422"),  # read by deepspeed.initialize: the model may call deepspeed.checkpointing
]


@pytest.mark.parametrize("fixture,run,code", NOT_REPORTED, ids=[f"{c[0]}-{c[1]}" for c in NOT_REPORTED])
def test_finding_depends_on_what_the_run_knows(fixture, run, code):
    assert fixture.split("/")[0] in PART_C and (RULES / fixture).is_file()
    assert [f for f in findings_by_file(run).get(fixture, []) if f["code"] == code] == []


GOOD = sorted(p for code in PART_C for p in (RULES / code).glob("good*.json"))


@pytest.mark.parametrize("run", ["plain", "world", "hidden"])
def test_good_fixtures_are_clean(run):
    """No finding of the folder's own rule, and no error of any rule, in any good fixture."""
    found = findings_by_file(run)
    dirty = {}
    for path in GOOD:
        name = os.path.relpath(path, RULES)
        bad = [f for f in found.get(name, []) if f["code"] == path.parent.name or f["severity"] == "error"]
        if bad:
            dirty[name] = bad
    assert dirty == {}


def test_every_rule_has_a_bad_and_a_good_fixture_a_case_and_a_doc():
    from shardshift.rules import all_rules

    registered = {rule.code: rule for rule in all_rules()}
    assert PART_C <= registered.keys()
    assert {case[2] for case in BAD_CASES} == PART_C
    for code in PART_C:
        folder = RULES / code
        assert list(folder.glob("bad*.json")) and list(folder.glob("good*.json")), code
        doc = registered[code].documentation()
        for section in ("## What it does", "## Why is this bad", "## Example", "## Use instead"):
            assert section in doc, (code, section)
        assert doc.count("```") >= 4, code


# --- additions to older rules, on generated files ---------------------------------------------

BASE = {"train_micro_batch_size_per_gpu": 4, "gradient_clipping": 1.0}
Z3 = {"stage": 3, "stage3_gather_16bit_weights_on_model_save": True}

# (name, settings beyond BASE, code, severity, pointer, marker) - severity None: that code must
# not report anything in the file.
EXTENSION_CASES = [
    ("allreduce_sum_stage_3", {"gradient_allreduce_op": "sum", "zero_optimization": Z3}, "DS306", "error",
     "/gradient_allreduce_op", '"gradient_allreduce_op": |"sum"'),
    ("allreduce_sum_case", {"gradient_allreduce_op": "SUM", "zero_optimization": Z3}, "DS306", "error",
     "/gradient_allreduce_op", '"gradient_allreduce_op": |"SUM"'),
    ("allreduce_sum_stage_2", {"gradient_allreduce_op": "sum", "zero_optimization": {"stage": 2}}, "DS306", None,
     None, None),
    ("fp16_master_stage_0", {"fp16": {"enabled": True, "fp16_master_weights_and_grads": True}}, "DS306", "error",
     "/fp16/fp16_master_weights_and_grads", '"fp16_master_weights_and_grads": |true'),
    ("fp16_master_off_stage_0", {"fp16": {"enabled": False, "fp16_master_weights_and_grads": True}}, "DS306",
     "error", "/fp16/fp16_master_weights_and_grads", '"fp16_master_weights_and_grads": |true'),
    ("bf16_master_stage_0", {"bf16": {"enabled": True, "bf16_master_weights_and_grads": True}}, "DS306", "error",
     "/bf16/bf16_master_weights_and_grads", '"bf16_master_weights_and_grads": |true'),
    ("bfloat16_master_stage_0", {"bfloat16": {"enabled": True, "bf16_master_weights_and_grads": True}}, "DS306",
     "error", "/bfloat16/bf16_master_weights_and_grads", '"bf16_master_weights_and_grads": |true'),
    ("bf16_master_stage_1", {"bf16": {"enabled": True, "bf16_master_weights_and_grads": True},
                             "zero_optimization": {"stage": 1}}, "DS306", None, None, None),
    ("bfloat16_shadowed_by_bf16", {"bf16": {"enabled": True},
                                   "bfloat16": {"enabled": True, "bf16_master_weights_and_grads": True}},
     "DS306", None, None, None),
    ("loss_scale_bool", {"fp16": {"enabled": True, "loss_scale": True}}, "DS102", "error", "/fp16/loss_scale",
     '"loss_scale": |true'),
    ("loss_scale_window_bool", {"fp16": {"enabled": False, "loss_scale_window": True}}, "DS102", "error",
     "/fp16/loss_scale_window", '"loss_scale_window": |true'),
    ("min_loss_scale_bool", {"fp16": {"enabled": True, "min_loss_scale": False}}, "DS102", "error",
     "/fp16/min_loss_scale", '"min_loss_scale": |false'),
    ("hysteresis_bool", {"fp16": {"enabled": True, "hysteresis": True}}, "DS102", "warning", "/fp16/hysteresis",
     '"hysteresis": |true'),  # pydantic reads it as 1; DeepSpeed accepts it
    ("communication_auto", {"communication_data_type": "auto"}, "DS102", "error", "/communication_data_type",
     '"communication_data_type": |"auto"'),
    ("seq_communication_auto", {"seq_parallel_communication_data_type": "auto"}, "DS102", "error",
     "/seq_parallel_communication_data_type", '"seq_parallel_communication_data_type": |"auto"'),
    ("allreduce_auto", {"gradient_allreduce_op": "auto"}, "DS102", "error", "/gradient_allreduce_op",
     '"gradient_allreduce_op": |"auto"'),
    ("passes_not_strings", {"compile": {"passes": [3]}}, "DS103", "error", "/compile/passes/0", "      |3"),
    ("passes_all", {"compile": {"passes": ["z1", "z3", "autosp", "autotp"]}}, "DS103", None, None, None),
    ("compute_grad_norm_offload", {"gradient_clipping": 0, "zero_force_ds_cpu_optimizer": False, "zero_optimization": {
        "stage": 2, "compute_grad_norm": False, "offload_optimizer": {"device": "cpu", "pin_memory": True}}},
     "DS340", "error", "/zero_optimization/compute_grad_norm", '"compute_grad_norm": |false'),
    ("compute_grad_norm_bf16_stage_1", {"gradient_clipping": 0, "bf16": {"enabled": True},
                                        "data_types": {"grad_accum_dtype": "fp32"},
                                        "zero_optimization": {"stage": 1, "compute_grad_norm": False}},
     "DS340", "error", "/zero_optimization/compute_grad_norm", '"compute_grad_norm": |false'),
    ("managed_deepcompile", {"managed_gradient_accumulation": False, "compile": {"deepcompile": True},
                             "zero_optimization": {"stage": 2}}, "DS340", "error", "/managed_gradient_accumulation",
     '"managed_gradient_accumulation": |false'),
    ("allreduce_sum_deepcompile", {"gradient_allreduce_op": "sum", "compile": {"deepcompile": True},
                                   "zero_optimization": {"stage": 1}}, "DS340", "error", "/gradient_allreduce_op",
     '"gradient_allreduce_op": |"sum"'),
    # issue 22: DeepSpeed 0.19.8 check sites (src/shardshift/data/coverage/deepspeed.tsv)
    ("legacy_stage1", {"zero_optimization": {"stage": 2, "legacy_stage1": True}}, "DS340", "error",
     "/zero_optimization/legacy_stage1", '"legacy_stage1": |true'),
    ("legacy_stage1_zero_off", {"zero_optimization": {"stage": 0, "legacy_stage1": True}}, "DS340", None, None,
     None),  # never read without ZeRO (DS303's business)
    ("legacy_stage1_false", {"zero_optimization": {"stage": 1, "legacy_stage1": False}}, "DS340", None, None, None),
    ("pipeline_stage_string", {"checkpoint": {"parallel_write": {"pipeline_stage": "false"}}}, "DS102", "error",
     "/checkpoint/parallel_write/pipeline_stage", '"pipeline_stage": |"false"'),  # raises, not a truth test
    ("pipeline_stage_one", {"checkpoint": {"parallel_write": {"pipeline_stage": 1}}}, "DS102", "warning",
     "/checkpoint/parallel_write/pipeline_stage", '"pipeline_stage": |1'),  # 1 == True passes DeepSpeed's check
    ("round_robin_legacy_offload", {"zero_optimization": {"stage": 2, "round_robin_gradients": True,
                                                          "cpu_offload": True}}, "DS341", None, None, None),
    ("weight_decay_torch_adam", {"optimizer": {"type": "AdamW", "params": {"lr": 1e-4, "torch_adam": True}}},
     "DS408", None, None, None),
    ("warmup_cosine_ratio", {"scheduler": {"type": "WarmupCosineLR", "params": {
        "total_num_steps": 1000, "warmup_num_steps": 10, "warmup_min_ratio": 0.1}}}, "DS418", "info",
     "/scheduler/params/warmup_type", '"params"'),
]


def _config_text(settings: dict) -> str:
    return json.dumps({**BASE, **settings}, indent=2) + "\n"


@pytest.fixture(scope="module")
def extension_run(tmp_path_factory) -> tuple[Path, dict[str, list[dict]]]:
    folder = tmp_path_factory.mktemp("part_c")
    for name, settings, *_ in EXTENSION_CASES:
        (folder / f"{name}.json").write_text(_config_text(settings))
    _, output = check_json(str(folder))
    found: dict[str, list[dict]] = {}
    for finding in output["findings"]:
        found.setdefault(Path(finding["file"]).stem, []).append(finding)
    return folder, found


@pytest.mark.parametrize("name,settings,code,severity,pointer,marker", EXTENSION_CASES,
                         ids=[c[0] for c in EXTENSION_CASES])
def test_additions_to_older_rules(extension_run, name, settings, code, severity, pointer, marker):
    folder, found = extension_run
    ours = [f for f in found.get(name, []) if f["code"] == code]
    if severity is None:
        assert ours == [], ours
        return
    assert len(ours) == 1, found.get(name)
    (finding,) = ours
    assert (finding["severity"], finding["pointer"]) == (severity, pointer)
    assert (finding["line"], finding["column"]) == position(folder / f"{name}.json", marker)


def test_allreduce_op_is_not_judged_for_a_version_that_ignores_it(tmp_path):
    path = tmp_path / "ds_config.json"
    path.write_text(_config_text({"gradient_allreduce_op": "sum", "zero_optimization": Z3}))
    _, output = check_json("--deepspeed-version", "0.19.5", str(path))
    assert {f["code"] for f in output["findings"] if f["severity"] == "error"} == {"DS322"}


# --- the verdicts against DeepSpeed 0.19.8 ----------------------------------------------------


@pytest.fixture(scope="module")
def deepspeed():
    pytest.importorskip("torch")
    import oracles

    try:
        return oracles.deepspeed_module()
    except ImportError:
        pytest.skip("deepspeed is not installed")


def _parse_cases() -> list[tuple[str, dict, str, bool]]:
    """(name, config, the code judged, whether it reports an error) for every case DeepSpeed decides
    while parsing: the generated files above and the fixtures of the parse-time rules."""
    cases = []
    for name, settings, code, severity, *_ in EXTENSION_CASES:
        if name in INITIALIZE_TIME:
            continue  # refused in deepspeed.initialize, not while parsing (see the next test)
        cases.append((name, {**BASE, **settings}, code, severity == "error"))
    for fixture in ("DS103/bad.json", "DS103/bad_case.json", "DS103/good.json", "DS314/bad.json", "DS314/bad_min.json",
                    "DS314/good.json", "DS314/good_static.json", "DS340/bad_allreduce_sum.json",
                    "DS340/bad_bf16_states.json", "DS202/good.json", "DS332/bad.json", "DS341/bad.json",
                    "DS315/bad.json", "DS316/bad.json", "DS408/bad.json", "DS418/bad.json"):
        code, name = fixture.split("/")
        cases.append((fixture, json.loads((RULES / fixture).read_text()), code, name.startswith("bad") and any(
            case[0] == fixture and case[3] == "error" for case in BAD_CASES)))
    return cases


INITIALIZE_TIME = {"compute_grad_norm_offload", "compute_grad_norm_bf16_stage_1", "managed_deepcompile",
                   "legacy_stage1"}
PARSE_CASES = _parse_cases()


@pytest.mark.oracle
def test_parse_time_verdicts_agree_with_deepspeed_config(deepspeed, tmp_path):
    """What DeepSpeedConfig refuses, shardshift reports as an error of the rule in question; where
    DeepSpeed accepts the file, that rule reports no error (its warnings and notes are about what
    the accepted file does)."""
    import oracles

    for index, (name, config, _, _) in enumerate(PARSE_CASES):
        (tmp_path / f"case_{index}.json").write_text(json.dumps(config, indent=2))
    _, output = check_json(str(tmp_path))
    errors: dict[str, set[str]] = {}
    for finding in output["findings"]:
        if finding["severity"] == "error":
            errors.setdefault(Path(finding["file"]).stem, set()).add(finding["code"])
    refused = [name for name, _, _, rejected in PARSE_CASES if rejected]
    assert refused and len(refused) < len(PARSE_CASES)  # both verdicts are exercised
    for index, (name, config, code, rejected) in enumerate(PARSE_CASES):
        accepted, error, _ = oracles.deepspeed_accepts(config, 1)
        assert accepted is not rejected, f"{name}: DeepSpeed {'accepts' if accepted else 'refuses'}: {error}"
        assert (code in errors.get(f"case_{index}", set())) is rejected, f"{name}: {errors.get(f'case_{index}')}"


INITIALIZE_PROBE = r'''
import json, logging, os, sys
os.environ.setdefault("DS_ACCELERATOR", "cpu")
import torch, deepspeed
from deepspeed.utils import logger
logger.setLevel(logging.ERROR)
results = {}
for name, config in json.load(sys.stdin).items():
    model = torch.nn.Linear(4, 4)
    kwargs = {"model_parameters": model.parameters()} if "optimizer" in config else \
        {"optimizer": torch.optim.AdamW(model.parameters(), lr=1e-4)}
    try:
        deepspeed.initialize(model=model, config=config, **kwargs)
        results[name] = None
    except Exception as error:
        results[name] = f"{type(error).__name__}: {error}"[:300]
print(json.dumps(results))
'''

# (name, config, what shardshift reports (code) or None, DeepSpeed's refusal in initialize or None)
INITIALIZE_CASES = [
    ("grad_norm_clipping", "DS340/bad_grad_norm.json", "DS340", "requires gradient_clipping=0"),
    ("grad_norm_no_clipping", "DS340/good_grad_norm.json", None, None),
    ("managed_overlap_stage_1", "DS340/bad.json", "DS340", "overlap_comm only with ZeRO stage 2"),
    ("managed_overlap_stage_2", "DS340/good.json", None, None),
    ("lamb_static_loss_scale", "DS340/bad_lamb.json", "DS340", "requires dynamic loss scaling"),
    ("grad_norm_offload", "compute_grad_norm_offload", "DS340", "does not support optimizer offload"),
    ("grad_norm_bf16_stage_1", "compute_grad_norm_bf16_stage_1", "DS340", "FP32 gradient accumulation"),
    ("managed_deepcompile", "managed_deepcompile", "DS340", "not supported with DeepCompile"),
    ("legacy_stage1", "legacy_stage1", "DS340", "deprecated version of ZeRO Stage 1 is not supported"),
    ("legacy_stage1_false", "legacy_stage1_false", None, None),
    ("mesh_larger_than_world", {"data_parallel_size": 2, "sequence_parallel_size": 1}, "DS202",
     "bigger than default world size"),
]


def _initialize_config(source) -> dict:
    if isinstance(source, dict):
        return {**BASE, **source}
    if source.endswith(".json"):
        return json.loads((RULES / source).read_text())
    settings = next(case[1] for case in EXTENSION_CASES if case[0] == source)
    return {**BASE, **settings}


@pytest.mark.oracle
def test_initialize_verdicts_agree_with_deepspeed(deepspeed, tmp_path):
    """Settings DeepSpeed refuses only when it builds the engine: the real `deepspeed.initialize`
    (CPU, one rank, a torch optimizer unless the config names one) refuses exactly the cases
    shardshift reports, with the message shardshift quotes, and accepts the others."""
    configs = {name: _initialize_config(source) for name, source, _, _ in INITIALIZE_CASES}
    for name, config in configs.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(config, indent=2))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "DS_ACCELERATOR": "cpu", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "RANK": "0",
           "LOCAL_RANK": "0", "WORLD_SIZE": "1"}
    done = subprocess.run([sys.executable, "-c", INITIALIZE_PROBE], input=json.dumps(configs), capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    refused = json.loads(done.stdout.strip().splitlines()[-1])
    _, output = check_json("--world-size", "1", str(tmp_path))
    errors: dict[str, set[str]] = {}
    for finding in output["findings"]:
        if finding["severity"] == "error":
            errors.setdefault(Path(finding["file"]).stem, set()).add(finding["code"])
    for name, _, code, refusal in INITIALIZE_CASES:
        if refusal is None:
            assert refused[name] is None, f"{name}: {refused[name]}"
            assert errors.get(name, set()) == set(), name
        else:
            assert refused[name] and refusal in refused[name], f"{name}: {refused[name]}"
            assert errors.get(name, set()) == {code}, f"{name}: {errors.get(name)}"
