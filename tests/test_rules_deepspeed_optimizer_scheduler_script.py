"""Issue 3, part B: optimizer and scheduler rules (DS40x, DS41x), "auto" left unfilled (DS42x) and
mismatches between a training script and its ds_config (DS43x).

Rule cases are data, run through the real CLI (`check --format json`): every DS4xx fixture
directory is checked in one run (with `--world-size 8`, and once more with `--deepspeed-version
0.19.5` for the rule that only older DeepSpeed versions reach), then each row finds its finding
by file and code. Expected positions are looked up in the fixture text (a marker and its
occurrence), never written down. The signature tables and the rules' verdicts are compared with
the installed DeepSpeed 0.19.8 and torch (skipped when they are not installed).
"""

from __future__ import annotations

import inspect
import json
import os
from pathlib import Path

import pytest

from conftest import FIXTURES, check_json
from rule_cases import findings_with_code, marker_position
from test_rules_deepspeed_catalog import PART_C

RULES = FIXTURES / "deepspeed" / "rules"
# part C and the TrainingArguments rules (DS435-DS439, test_training_arguments.py) have their own files
OWN_FILES = PART_C | {"DS435", "DS436", "DS437", "DS438", "DS439", "DS440", "DS441", "DS442", "DS443",
                      "DS444", "DS445", "DS446", "DS447", "DS423",  # DS423: test_rules_deepspeed_pipeline.py
                      "DS449", "DS450",  # DS449, DS450: test_training_arguments.py
                      "DS452",  # DS452 (structure.py): DeepSpeed reaches each bad fixture, test_coverage_map.py
                      "DS453",  # DS453: test_rules_deepspeed_data_efficiency.py
                      "DS454",  # DS454: test_rules_deepspeed_tensor_parallel.py
                      "DS455",  # DS455: test_rules_deepspeed_data_efficiency.py
                      "DS456"}  # DS456: test_rules_deepspeed_optimizer_values.py
DIRECTORIES = sorted(p for p in RULES.glob("DS4*") if p.is_dir() and p.name not in OWN_FILES)

# (fixture, run, code, severity, marker, occurrence, pointer, fix, fix_kind); pointer None for
# Python findings; run "newest" or "0.19.5" (--deepspeed-version).
BAD_CASES = [
    ("DS401/bad.json", "newest", "DS401", "error", '"sgd"', 1, "/optimizer/type", '"SGD"', "replace-value"),
    ("DS401/bad_removed.json", "newest", "DS401", "error", '"OneBitAdam"', 1, "/optimizer/type", '"Adam"', None),
    ("DS401/bad_no_type.json", "newest", "DS401", "error", '"optimizer"', 1, "/optimizer", None, None),
    ("DS402/bad.json", "newest", "DS402", "error", '"weight_decy"', 1, "/optimizer/params/weight_decy", "weight_decay",
     "rename-key"),
    ("DS402/bad_offload.json", "newest", "DS402", "error", '"set_grad_none"', 1, "/optimizer/params/set_grad_none",
     None, None),
    ("DS403/bad.json", "newest", "DS403", "error", '"0.9,0.95"', 1, "/optimizer/params/betas", "[0.9, 0.95]",
     "replace-value"),
    ("DS403/bad_length.json", "newest", "DS403", "error", "[0.9, 0.95, 0.999]", 1, "/optimizer/params/betas",
     "[0.9, 0.95]", None),
    ("DS404/bad.json", "newest", "DS404", "error", '"max_grad_norm"', 1, "/optimizer/params/max_grad_norm", None, None),
    ("DS405/bad.json", "0.19.5", "DS405", "error", '"OneBitAdam"', 1, "/optimizer/type", None, None),
    ("DS406/bad.json", "newest", "DS406", "warning", '"Adam"', 1, "/optimizer/type", '"AdamW"', "replace-value"),
    ("DS407/bad.json", "newest", "DS407", "error", '"SGD"', 1, "/optimizer/type", None, None),
    ("DS410/bad.json", "newest", "DS410", "error", '"WarmUpLR"', 1, "/scheduler/type", '"WarmupLR"', "replace-value"),
    ("DS410/bad_no_type.json", "newest", "DS410", "error", '"scheduler"', 1, "/scheduler", None, None),
    ("DS451/bad.json", "newest", "DS451", "error", '"StepLR"', 1, "/scheduler/type", None, None),
    ("DS451/bad_bf16.json", "newest", "DS451", "error", '"CosineAnnealingLR"', 1, "/scheduler/type", None, None),
    ("DS411/bad.json", "newest", "DS411", "error", '"warmup_steps"', 1, "/scheduler/params/warmup_steps",
     "warmup_num_steps", None),
    ("DS412/bad.json", "newest", "DS412", "error", '"params"', 2, "/scheduler/params", None, None),
    ("DS413/bad.json", "newest", "DS413", "warning", "2000", 1, "/scheduler/params/warmup_num_steps", None, None),
    ("DS414/bad.json", "newest", "DS414", "error", '"WarmupDecayLR"', 1, "/scheduler/type", None, None),
    ("DS414/bad_no_lr.json", "newest", "DS414", "warning", '"WarmupDecayLR"', 1, "/scheduler/type", None, None),
    ("DS415/bad.json", "newest", "DS415", "warning", "1e3", 1, "/scheduler/params/warmup_num_steps", "1000",
     "replace-value"),
    ("DS415/bad_string.json", "newest", "DS415", "error", '"200"', 1, "/scheduler/params/lr_range_test_step_size",
     "200", "replace-value"),
    ("DS415/bad_trainer.json", "newest", "DS415", "error", "5e2", 1, "/scheduler/params/warmup_num_steps", "500",
     "replace-value"),
    ("DS416/bad.json", "newest", "DS416", "error", '"OneCycle"', 1, "/scheduler/type", None, None),
    ("DS416/bad_default_betas.json", "newest", "DS416", "warning", '"OneCycle"', 1, "/scheduler/type", None, None),
    ("DS417/bad.json", "newest", "DS417", "error", '"Linear"', 1, "/scheduler/params/warmup_type", '"linear"',
     "replace-value"),
    ("DS420/bad.json", "newest", "DS420", "info", '"auto"', 1, "/gradient_clipping", None, None),
    ("DS421/bad.json", "newest", "DS421", "error", '"auto"', 4, "/zero_optimization/sub_group_size", None, None),
    ("DS421/bad_plain.json", "newest", "DS421", "error", '"auto"', 1, "/zero_optimization/stage", None, None),
    ("DS421/bad_bf16.json", "newest", "DS421", "error", '"auto"', 3, "/bfloat16/enabled", None, None),
    ("DS430/bad.py", "newest", "DS430", "error", "optimizer=optimizer", 1, None, None, None),
    ("DS431/bad.py", "newest", "DS431", "error", "AdamW(model", 1, None, None, None),
    ("DS432/bad.py", "newest", "DS432", "warning", "optimizer=optimizer", 1, None, None, None),
    # optimizers passed as callables or built by a helper of the same file (issue 11)
    ("DS430/bad_callable.py", "newest", "DS430", "error", "optimizer=make_optimizer", 1, None, None, None),
    ("DS431/bad_callable.py", "newest", "DS431", "error", "optimizer=lambda", 1, None, None, None),
    ("DS431/bad_helper.py", "newest", "DS431", "error", "optimizer=optimizer", 1, None, None, None),
    ("DS432/bad_helper.py", "newest", "DS432", "warning", "optimizer=optimizer", 1, None, None, None),
    ("DS433/bad.py", "newest", "DS433", "error", "lr_scheduler=scheduler", 1, None, None, None),
    ("DS434/bad.py", "newest", "DS434", "error", "deepspeed.initialize(", 1, None, None, None),
    ("DS448/bad.py", "newest", "DS448", "error", "deepspeed.initialize(", 1, None, None, None),
]

GOOD_FIXTURES = sorted(p for d in DIRECTORIES for p in d.glob("good*") if p.suffix in (".json", ".py"))


def _run(*args: str) -> dict[str, list[dict]]:
    status, output = check_json("--world-size", "8", *args, *map(str, DIRECTORIES))
    by_file: dict[str, list[dict]] = {}
    for finding in output["findings"]:
        by_file.setdefault(os.path.relpath(finding["file"], RULES), []).append(finding)
    return by_file


@pytest.fixture(scope="module")
def runs() -> dict[str, dict[str, list[dict]]]:
    """The CLI over every DS4xx fixture directory: newest DeepSpeed, and DeepSpeed 0.19.5."""
    return {"newest": _run(), "0.19.5": _run("--deepspeed-version", "0.19.5")}


def test_every_rule_of_part_b_has_a_bad_and_a_good_fixture():
    from shardshift.rules import all_rules

    codes = {rule.code for rule in all_rules() if rule.__module__.removeprefix("shardshift.rules.") in (
        "deepspeed.optimizer", "deepspeed.scheduler", "deepspeed.auto", "deepspeed.script")} - OWN_FILES
    assert codes == {case[2] for case in BAD_CASES}
    assert codes == {p.parent.name for p in GOOD_FIXTURES}
    for code in codes:
        rule = next(r for r in all_rules() if r.code == code)
        doc = rule.documentation()
        for section in ("## What it does", "## Why is this bad", "## Example", "## Use instead"):
            assert section in doc, (code, section)


@pytest.mark.parametrize("fixture,run,code,severity,marker,occurrence,pointer,fix,fix_kind", BAD_CASES,
                         ids=[f"{c[2]}-{c[0]}" for c in BAD_CASES])
def test_bad_fixture_is_reported_at_the_right_place(runs, fixture, run, code, severity, marker, occurrence, pointer,
                                                    fix, fix_kind):
    found = [f for f in runs[run].get(fixture, []) if f["code"] == code]
    assert len(found) == 1, runs[run].get(fixture)
    finding = found[0]
    line, column = marker_position(RULES / fixture, marker, occurrence)
    assert (finding["severity"], finding["pointer"], finding["line"], finding["column"]) == (
        severity, pointer, line, column)
    assert finding["fix"] == fix
    assert finding.get("fix_kind") == fix_kind


@pytest.mark.parametrize("path", GOOD_FIXTURES, ids=[f"{p.parent.name}/{p.name}" for p in GOOD_FIXTURES])
def test_good_fixture_has_no_finding_of_its_rule_and_no_error(runs, path):
    findings = runs["newest"].get(os.path.relpath(path, RULES), [])
    assert [f for f in findings if f["code"] == path.parent.name] == []
    assert [f for f in findings if f["severity"] == "error"] == []


def test_bad_fixture_alone_gives_the_same_verdict_as_in_the_directory_run(runs):
    """Checking one file alone (as pre-commit does) finds its consumers the same way."""
    for fixture, code, severity in (("DS420/bad.json", "DS420", "info"), ("DS421/bad_bf16.json", "DS421", "error"),
                                    ("DS415/bad_trainer.json", "DS415", "error"), ("DS430/bad.py", "DS430", "error")):
        status, output = check_json(str(RULES / fixture))
        assert [f["severity"] for f in findings_with_code(output, code)] == [severity], output["findings"]


def test_script_findings_name_the_config_file_and_key(runs):
    (finding,) = [f for f in runs["newest"]["DS430/bad.py"] if f["code"] == "DS430"]
    assert "ds_config.json" in finding["message"] and '"optimizer" block' in finding["message"]
    (related,) = finding["related"]
    assert related["file"].endswith("DS430/ds_config.json") and related["pointer"] == "/optimizer"
    assert related["line"] == marker_position(RULES / "DS430/ds_config.json", '"optimizer"')[0]


def test_offload_dependent_param_names_the_class_that_takes_it(runs):
    (finding,) = [f for f in runs["newest"]["DS402/bad_offload.json"] if f["code"] == "DS402"]
    assert "DeepSpeedCPUAdam" in finding["message"] and "FusedAdam" in finding["message"]


def test_one_bit_optimizers_are_unknown_on_the_newest_deepspeed_and_accepted_before(runs):
    assert [f["code"] for f in runs["newest"]["DS405/bad.json"] if f["code"].startswith("DS40")] == ["DS401"]
    assert [f["code"] for f in runs["0.19.5"]["DS405/bad.json"] if f["code"].startswith("DS40")] == ["DS405"]
    assert [f["code"] for f in runs["0.19.5"].get("DS401/bad_removed.json", []) if f["code"] == "DS401"] == []


# --- consumers of a ds_config ("auto") -------------------------------------------------------

HF_CONFIG = {"train_micro_batch_size_per_gpu": "auto", "gradient_clipping": "auto",
             "zero_optimization": {"stage": 2, "reduce_bucket_size": "auto", "sub_group_size": "auto"},
             "steps_per_print": "auto"}
UNFILLED = "/zero_optimization/sub_group_size"

# (files to write besides configs/ds_config.json, expected DS420 count, expected DS421 pointers)
CONSUMER_CASES = [
    ({}, 1, []),
    ({"scripts/train.py": 'from transformers import TrainingArguments\n'
                          'args = TrainingArguments(output_dir="o", deepspeed="configs/ds_config.json")\n'},
     0, [UNFILLED]),
    ({"train.py": 'import os\nfrom transformers.integrations import HfDeepSpeedConfig\n'
                  'dschf = HfDeepSpeedConfig(os.path.join("configs", "ds_config.json"))\n'}, 0,
     [UNFILLED, "/steps_per_print"]),
    ({"accelerate.yaml": "distributed_type: DEEPSPEED\ndeepspeed_config:\n"
                         "  deepspeed_config_file: configs/ds_config.json\n"}, 0, [UNFILLED]),
    ({"axolotl.yml": "base_model: x\ndeepspeed: ./configs/ds_config.json\n"}, 0, [UNFILLED]),
    ({"run.sh": 'torchrun --nproc_per_node 8 train.py \\\n  --deepspeed "$ROOT/configs/ds_config.json" --bf16\n'},
     0, [UNFILLED]),
    ({"run.sh": "deepspeed train.py --deepspeed --deepspeed_config configs/ds_config.json\n"}, 0,
     ["/train_micro_batch_size_per_gpu", "/gradient_clipping", "/zero_optimization/reduce_bucket_size", UNFILLED,
      "/steps_per_print"]),
    # a file of the same name elsewhere is not this one
    ({"other/train.py": 'from transformers import TrainingArguments\n'
                        'args = TrainingArguments(output_dir="o", deepspeed="ds_config.json")\n'}, 1, []),
    # a mention that hands the file to nobody
    ({"README.sh": "# see configs/ds_config.json\n"}, 1, []),
]


@pytest.mark.parametrize("files,warnings,errors", CONSUMER_CASES, ids=[
    "alone", "trainer-in-subdir", "hf-deepspeed-config", "accelerate-yaml", "axolotl-yaml", "shell-hf-flag",
    "shell-plain-deepspeed", "same-name-elsewhere", "mention-only"])
def test_auto_is_judged_by_the_consumers_found_in_the_repository(tmp_path, files, warnings, errors):
    (tmp_path / ".git").mkdir()
    config = tmp_path / "configs" / "ds_config.json"
    config.parent.mkdir()
    config.write_text(json.dumps(HF_CONFIG, indent=2))
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    status, output = check_json(str(config))
    assert len(findings_with_code(output, "DS420")) == warnings, output["findings"]
    assert [f["pointer"] for f in findings_with_code(output, "DS421")] == errors, output["findings"]


def plugin_fill(config: dict) -> dict:
    """Run in a child (oracles.run_in_child): Accelerate's DeepSpeedPlugin on `config`, then its
    fill of "auto" with every key the Hugging Face integration fills given a value; what is left
    "auto" is refused (fill_match's ValueError)."""
    from accelerate.utils import DeepSpeedPlugin

    from shardshift.rules.deepspeed.auto import HF_FILLED

    plugin = DeepSpeedPlugin(hf_ds_config=config)
    steps_per_print = plugin.deepspeed_config.get("steps_per_print")
    filled = {pointer.strip("/").replace("/", "."): 1 for pointer in HF_FILLED}
    try:
        plugin.deepspeed_config_process(must_match=False, **filled)
        refused = None
    except ValueError as error:
        refused = str(error)
    return {"steps_per_print": repr(steps_per_print), "refused": refused}


@pytest.mark.oracle
def test_accelerates_plugin_overwrites_steps_per_print_and_refuses_the_unfilled_auto():
    """DS421 stays silent on `"steps_per_print": "auto"` under the Trainer, Accelerate and Axolotl
    (all build Accelerate's DeepSpeedPlugin) and reports the key the plugin refuses."""
    import oracles

    oracles.require_installed("accelerate")
    outcome = oracles.run_in_child("plugin_fill", HF_CONFIG, module="test_rules_deepspeed_optimizer_scheduler_script")
    assert outcome["steps_per_print"] == "inf", outcome
    assert outcome["refused"] and "`zero_optimization.sub_group_size` not found in kwargs" in outcome["refused"], outcome
    assert "steps_per_print" not in outcome["refused"]


def test_a_lone_auto_is_never_an_error(tmp_path):
    from shardshift.rules.deepspeed.auto import HF_FILLED

    data: dict = {}
    for pointer in HF_FILLED:
        *parents, name = pointer.strip("/").split("/")
        node = data
        for part in parents:
            node = node.setdefault(part, {})
        node[name] = "auto"
    data["optimizer"]["type"] = "AdamW"
    data["scheduler"]["type"] = "WarmupDecayLR"
    path = tmp_path / "ds_config.json"
    path.write_text(json.dumps(data))
    status, output = check_json(str(path))
    (finding,) = findings_with_code(output, "DS420")  # one per file, every "auto" as a related place
    assert sorted(r["pointer"] for r in finding["related"]) == sorted(HF_FILLED)
    assert [f for f in output["findings"] if f["severity"] == "error" and f["code"].startswith("DS4")] == []


# --- reading training scripts ----------------------------------------------------------------

# (script, expected: [(config kind, config value, passes optimizer, passes lr_scheduler)])
SCRIPT_CASES = [
    ('import deepspeed\nengine, opt, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=params, '
     'optimizer=opt)\n', [("none", None, None, False)]),
    ('import deepspeed as ds\nopt = torch.optim.SGD(p, lr=0.1)\n'
     'e = ds.initialize(None, model, opt, None, None, None, config="ds.json")\n', [("str", "ds.json", True, False)]),
    ('from deepspeed import initialize as init\nCFG = "a/b.json"\n'
     'def main():\n    e = init(model=m, config_params=CFG, lr_scheduler=lambda o: None)\n',
     [("str", "a/b.json", False, True)]),
    ('import deepspeed, json\nwith open("c.json") as f:\n    cfg = json.load(f)\n'
     'e = deepspeed.initialize(model=m, config=cfg, optimizer=None)\n', [("str", "c.json", False, False)]),
    ('import deepspeed\ncfg = {"zero_optimization": {"stage": 2}, **extra}\n'
     'e = deepspeed.initialize(model=m, config=cfg)\n', [("dict", None, False, False)]),
    ('import deepspeed\nopt = None\nif use_torch:\n    opt = torch.optim.AdamW(p)\n'
     'e = deepspeed.initialize(model=m, optimizer=opt, config="d.json")\n', [("str", "d.json", None, False)]),
    ('import deepspeed\ne = deepspeed.initialize(model=m, **kwargs)\n', [("none", None, None, None)]),
    ('import notdeepspeed as deepspeed_like\ne = deepspeed_like.initialize(model=m, config="x.json")\n', []),
]


@pytest.mark.parametrize("script,expected", SCRIPT_CASES, ids=range(len(SCRIPT_CASES)))
def test_script_reader_finds_initialize_calls_and_their_arguments(script, expected):
    from shardshift.formats import python_script

    facts = python_script.read(script, "train.py").data
    found = []
    for call in facts.initialize_calls:
        config = call.config
        kind = "none" if config is None else config.kind if config.certain or config.kind != "dict" else "dict"
        value = config.value if config is not None and config.kind == "str" else None
        found.append((kind, value, call.passes("optimizer"), call.passes("lr_scheduler")))
    assert found == expected


def test_dict_config_with_spread_is_not_trusted():
    from shardshift.formats import python_script

    facts = python_script.read('import deepspeed\ncfg = {"zero_optimization": {"stage": 2}, **extra}\n'
                               'e = deepspeed.initialize(model=m, config=cfg)\n', "t.py").data
    assert facts.initialize_calls[0].config.certain is False


@pytest.mark.parametrize("text,reported", [
    ("import deepspeed\nengine = deepspeed.initialize(model=model, config='ds.json'\n", True),
    ("import torch.distributed as dist\nprint 'python 2'\n", False),
    ("# uses deepspeed\ndef broken(:\n    pass\n", False),
])
def test_a_python_file_that_does_not_parse_is_reported_only_when_it_is_a_training_script(tmp_path, text, reported):
    path = tmp_path / "train.py"
    path.write_text(text)
    status, output = check_json(str(path))
    assert bool(findings_with_code(output, "SS001")) == reported, output
    assert status == (1 if reported else 0)


def test_ordinary_python_is_not_read(tmp_path):
    (tmp_path / "util.py").write_text("import os\nprint(os.getcwd())\n")
    (tmp_path / "train.py").write_text("import deepspeed\n")
    status, output = check_json(str(tmp_path))
    assert [(Path(f["path"]).name, f["format"]) for f in output["files"]] == [("train.py", "python")]


def test_a_runtime_config_path_gives_no_script_finding(tmp_path):
    (tmp_path / "ds_config.json").write_text(json.dumps({"train_micro_batch_size_per_gpu": 1, "gradient_clipping": 1.0,
                                                         "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}}))
    (tmp_path / "train.py").write_text("import deepspeed, torch\nopt = torch.optim.AdamW(m.parameters())\n"
                                       "e = deepspeed.initialize(args=args, model=m, optimizer=opt)\n")
    status, output = check_json(str(tmp_path))
    assert [f for f in output["findings"] if f["code"].startswith("DS43")] == []


def test_fix_renames_an_optimizer_param_typo(tmp_path):
    path = tmp_path / "ds_config.json"
    path.write_text((RULES / "DS402/bad.json").read_text())
    from conftest import run_cli

    done = run_cli("check", "--fix", str(path))
    assert '"weight_decay": 0.1' in path.read_text() and "weight_decy" not in path.read_text(), done.stdout
    assert findings_with_code(check_json(str(path))[1], "DS402") == []


# --- the tables and verdicts against the installed DeepSpeed and torch ------------------------


@pytest.fixture(scope="module")
def deepspeed():
    pytest.importorskip("torch")
    import oracles

    try:
        return oracles.deepspeed_module()
    except ImportError:
        pytest.skip("deepspeed is not installed")


def _constructor_params(cls) -> dict:
    skip = {"self", "params", "model_params", "optimizer", "deepspeed"}
    return {name: p.default for name, p in inspect.signature(cls.__init__).parameters.items()
            if name not in skip and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}


def _import(dotted: str):
    import importlib

    module, name = dotted.rsplit(".", 1)
    return getattr(importlib.import_module(module), name)


# Constructor arguments DeepSpeed passes itself (engine.py get_optimizer_configuration): not in the tables.
ENGINE_SET = {"deepspeed.ops.adam.FusedAdam": ("adam_w_mode",),
              "deepspeed.ops.adam.DeepSpeedCPUAdam": ("adamw_mode", "fp32_optimizer_states")}


@pytest.mark.oracle
def test_signature_tables_match_the_installed_classes(deepspeed):
    from shardshift.formats.deepspeed import optimizers as tables

    signatures = [tables.FUSED_ADAM, tables.CPU_ADAM, tables.FUSED_LAMB, tables.FUSED_LION, tables.CPU_LION,
                  tables.CPU_ADAGRAD, *tables.TORCH_OPTIMIZERS.values(), *tables.DEEPSPEED_SCHEDULERS.values(),
                  *tables.TORCH_SCHEDULERS.values()]
    for signature in signatures:
        real = {k: v for k, v in _constructor_params(_import(signature.cls)).items()
                if k not in ENGINE_SET.get(signature.cls, ())}
        ours = {name: (inspect.Parameter.empty if default is tables.REQUIRED else default)
                for name, default in signature.params}
        assert ours == real, signature.cls


@pytest.mark.oracle
def test_type_lists_match_the_installed_deepspeed(deepspeed):
    import torch

    from shardshift.formats.deepspeed import optimizers as tables

    config = deepspeed.runtime.config
    assert {n for n, t in tables.DEEPSPEED_OPTIMIZERS.items() if not t.one_bit} == set(config.DEEPSPEED_OPTIMIZERS)
    assert set(tables.DEEPSPEED_SCHEDULERS) == set(deepspeed.runtime.lr_schedules.VALID_LR_SCHEDULES)
    schedulers = {n for n, v in vars(torch.optim.lr_scheduler).items() if inspect.isclass(v) and
                  issubclass(v, torch.optim.lr_scheduler.LRScheduler | torch.optim.lr_scheduler.ReduceLROnPlateau)}
    assert set(tables.TORCH_SCHEDULERS) <= schedulers


@pytest.mark.parametrize("type_name", ["Adam", "ADAMW", "adamw", "Lamb", "lion", "Muon", "SGD", "sgd", "RMSprop",
                                       "rmsprop", "Adafactor", "FusedAdam", "OneBitAdam", "ZeroOneAdam", "AdaGrad",
                                       "MuSGD", "LBFGS", "adam_w"])
@pytest.mark.oracle
def test_optimizer_type_verdict_matches_deepspeed(deepspeed, type_name):
    from shardshift.formats.deepspeed.optimizers import resolve_optimizer

    parsed = deepspeed.runtime.config.DeepSpeedConfig({"train_micro_batch_size_per_gpu": 1,
                                                       "optimizer": {"type": type_name}})
    accepted = deepspeed.runtime.engine.DeepSpeedEngine._is_supported_optimizer(None, parsed.optimizer_name)
    assert resolve_optimizer(type_name).known == accepted


def _optimizer():
    import torch

    return torch.optim.AdamW(torch.nn.Linear(2, 2).parameters(), lr=1e-4)


@pytest.mark.parametrize("fixture", ["DS411/bad.json", "DS411/good.json", "DS412/bad.json", "DS412/good.json",
                                     "DS415/bad.json", "DS415/bad_string.json", "DS415/good.json", "DS410/good.json",
                                     "DS413/good.json", "DS417/good.json"])
@pytest.mark.oracle
def test_scheduler_verdict_matches_constructing_it(deepspeed, runs, fixture):
    """Build the scheduler the way DeepSpeed does, from the file as json.load reads it: the fixtures
    DeepSpeed refuses are the ones shardshift reports (an error, or a warning for a loader-dependent
    value such as 1e3)."""
    import torch

    block = json.loads((RULES / fixture).read_text())["scheduler"]
    lr_schedules = deepspeed.runtime.lr_schedules
    cls = getattr(lr_schedules, block["type"], None) or getattr(torch.optim.lr_scheduler, block["type"])
    try:
        cls(_optimizer(), **block.get("params", {}))
        refused = False
    except (TypeError, ValueError):
        refused = True
    reported = [f for f in runs["newest"].get(fixture, []) if f["code"] in ("DS411", "DS412", "DS415")]
    assert bool(reported) == refused, (fixture, reported)


@pytest.mark.parametrize("fixture,offload", [("DS402/bad.json", False), ("DS402/bad_offload.json", True),
                                             ("DS402/good.json", True), ("DS404/good.json", False)])
@pytest.mark.oracle
def test_optimizer_param_verdict_matches_the_constructor_signature(deepspeed, runs, fixture, offload):
    """DeepSpeed calls `Class(params, **optimizer.params)` minus the keys it pops: binding the
    same keywords to the real signature raises TypeError exactly for the reported files."""
    from shardshift.formats.deepspeed import optimizers as tables

    params = dict(json.loads((RULES / fixture).read_text())["optimizer"]["params"])
    for popped in tables.ADAM_CONSUMED:
        params.pop(popped, None)
    cls = _import((tables.CPU_ADAM if offload else tables.FUSED_ADAM).cls)
    extra = {"adamw_mode": True, "fp32_optimizer_states": True} if offload else {"adam_w_mode": True}
    try:
        inspect.signature(cls.__init__).bind(None, [], **params, **extra)
        refused = False
    except TypeError:
        refused = True
    reported = [f for f in runs["newest"].get(fixture, []) if f["code"] == "DS402"]
    assert bool(reported) == refused


# --- the script reader never raises ---------------------------------------------------------

try:
    from hypothesis import given, settings
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover - hypothesis is a test dependency
    given = None

FRAGMENTS = ["x = ", "cfg = ", "opt = ", "deepspeed.initialize(", "ds.initialize(", "initialize(", ")", "(", "]", "[",
             "config=", "config_params=", "optimizer=", "lr_scheduler=", "'ds.json'", '"a/b.json"', "{", "}", ":",
             ",", "\n", "    ", "lambda p: ", "json.load(open(", "os.path.join(", "Path(", "*args", "**kw", "None",
             "TrainingArguments(deepspeed=", "HfDeepSpeedConfig(", "with open('x') as f:\n", "def f(a=1):\n",
             "cfg['optimizer'] = 1\n", "torch.optim.AdamW(p, lr=1e-4)", "async def g():\n", "class C:\n", "x := 1",
             "import deepspeed as ds\n", "from deepspeed import initialize as init\n", "f'{x}'", "-", "1e3", "/"]

if given is not None:
    @given(st.lists(st.sampled_from(FRAGMENTS), max_size=14))
    @settings(max_examples=200, deadline=None)
    def test_script_reader_never_raises(parts):
        from shardshift.formats import python_script

        document = python_script.read("import deepspeed\n" + "".join(parts), "train.py")
        assert document.format == "python" and document.data is not None


# --- the verdicts against DeepSpeed's own deepspeed.initialize ------------------------------

PROBE = r'''
import json, logging, os, sys
os.environ.setdefault("DS_ACCELERATOR", "cpu")
import torch, deepspeed
from deepspeed.utils import logger
logger.setLevel(logging.ERROR)
results = {}
for case in json.load(sys.stdin):
    model = torch.nn.Linear(4, 4)
    kwargs = {}
    if case["client_optimizer"]:
        kwargs["optimizer"] = torch.optim.AdamW(model.parameters(), lr=1e-4)
    else:
        kwargs["model_parameters"] = model.parameters()
    if case["client_scheduler"]:
        kwargs["lr_scheduler"] = torch.optim.lr_scheduler.StepLR(kwargs["optimizer"], 10)
    config = case["path"] if case["loader"] == "path" else json.load(open(case["path"]))
    try:
        engine, _, _, scheduler = deepspeed.initialize(model=model, config=config, **kwargs)
    except Exception as error:
        results[case["name"]] = {"refused": f"{type(error).__name__}: {error}"[:300]}
        continue
    group = engine.basic_optimizer.param_groups[0]
    for _ in range(case["steps"]):
        scheduler.step()
    results[case["name"]] = {"refused": None, "optimizer": type(engine.basic_optimizer).__name__,
                             "scheduler": type(scheduler).__name__ if scheduler is not None else None,
                             "lr": group["lr"], "betas": list(group.get("betas") or []),
                             "stage": int(engine.zero_optimization_stage())}
print(json.dumps(results))
'''

SGD = {"type": "SGD", "params": {"lr": 0.1}}
# (name, config beyond the batch size, client optimizer, client scheduler, how the script loads the file ("path":
# deepspeed.initialize(config=path), "json": config=json.load(open(path))), scheduler steps, the code shardshift
# reports (None: no error or warning of ours), what deepspeed.initialize does: "refused" or {field: value})
INITIALIZE_CASES = [
    ("type_case", {"optimizer": {"type": "sgd", "params": {"lr": 0.1}}}, False, False, "path", 0, "DS401", "refused"),
    ("type_ok", {"optimizer": SGD}, False, False, "path", 0, None, {"optimizer": "SGD"}),
    ("param_typo", {"optimizer": {"type": "SGD", "params": {"lr": 0.1, "momentm": 0.9}}}, False, False, "path", 0,
     "DS402", "refused"),
    ("betas_string", {"optimizer": {"type": "AdamW", "params": {"lr": 1e-4, "torch_adam": True, "betas": "0.9,0.95"}}},
     False, False, "path", 0, "DS403", "refused"),
    ("max_grad_norm", {"optimizer": {"type": "SGD", "params": {"lr": 0.1, "max_grad_norm": 1.0}}}, False, False,
     "path", 0, "DS404", "refused"),
    ("adam_is_adamw", {"optimizer": {"type": "Adam", "params": {"lr": 1e-4, "weight_decay": 0.01, "torch_adam": True}}},
     False, False, "path", 0, "DS406", {"optimizer": "AdamW"}),
    ("untested_zero", {"optimizer": SGD, "zero_optimization": {"stage": 1}}, False, False, "path", 0, "DS407",
     "refused"),
    ("untested_zero_allowed", {"optimizer": SGD, "zero_optimization": {"stage": 1},
                               "zero_allow_untested_optimizer": True}, False, False, "path", 0, None, {"stage": 1}),
    ("sched_case", {"optimizer": SGD, "scheduler": {"type": "WarmUpLR", "params": {}}}, False, False, "path", 0,
     "DS410", "refused"),
    ("sched_param", {"optimizer": SGD, "scheduler": {"type": "WarmupLR", "params": {"warmup_steps": 10}}}, False, False,
     "path", 0, "DS411", "refused"),
    ("sched_required", {"optimizer": SGD, "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_num_steps": 10,
                                                                                         "warmup_max_lr": 0.1}}},
     False, False, "path", 0, "DS412", "refused"),
    ("decay_default_peak", {"optimizer": {"type": "SGD", "params": {"lr": 2e-5}},
                            "scheduler": {"type": "WarmupDecayLR", "params": {"total_num_steps": 1000,
                                                                              "warmup_num_steps": 10}}},
     False, False, "path", 11, "DS414", {"lr": 0.001}),
    ("float_steps_hjson", {"optimizer": SGD, "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 1e3}}},
     False, False, "path", 0, None, {"scheduler": "WarmupLR"}),
    ("float_steps_json", {"optimizer": SGD, "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 1e3}}},
     False, False, "json", 0, "DS415", "refused"),
    ("onecycle_betas", {"optimizer": {"type": "AdamW",
                                      "params": {"lr": 1e-4, "torch_adam": True, "betas": [0.9, 0.95]}},
                        "scheduler": {"type": "OneCycle", "params": {"cycle_min_lr": 1e-5, "cycle_max_lr": 1e-4}}},
     False, False, "path", 0, "DS416", {"betas": [0.8, 0.99]}),
    ("warmup_type", {"optimizer": SGD, "scheduler": {"type": "WarmupLR", "params": {
        "warmup_max_lr": 0.1, "warmup_num_steps": 10, "warmup_type": "Linear"}}}, False, False, "path", 2, "DS417",
     {"lr": 0.1 * 0.30103}),  # log: ln(2)/ln(10) of the way up; linear would be 0.01
    ("auto_stage", {"optimizer": SGD, "zero_optimization": {"stage": "auto"}}, False, False, "path", 0, "DS421",
     {"stage": 0}),
    ("client_wins", {"optimizer": SGD}, True, False, "path", 0, "DS430", {"optimizer": "AdamW"}),
    ("client_offload", {"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}}, True, False, "path",
     0, "DS431", "refused"),
    ("config_scheduler_on_client", {"scheduler": {"type": "WarmupDecayLR", "params": {
        "total_num_steps": 100, "warmup_num_steps": 10, "warmup_max_lr": 3e-4}}}, True, False, "path", 11, "DS432",
     {"lr": 3e-4}),
    ("client_scheduler", {"scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 10}}}, True, True, "path", 0,
     "DS433", {"scheduler": "StepLR"}),
    ("zero_without_optimizer", {"zero_optimization": {"stage": 2}}, False, False, "path", 0, "DS434", "refused"),
]

SCRIPT = '''import json

import deepspeed
import torch

model = torch.nn.Linear(4, 4)
{optimizer}
{scheduler}
engine, _, _, _ = deepspeed.initialize(model=model, {arguments}config={config})
'''


def _script(name: str, client_optimizer: bool, client_scheduler: bool, loader: str) -> str:
    optimizer = "opt = torch.optim.AdamW(model.parameters(), lr=1e-4)" if client_optimizer else ""
    scheduler = "sched = torch.optim.lr_scheduler.StepLR(opt, 10)" if client_scheduler else ""
    arguments = "optimizer=opt, " if client_optimizer else "model_parameters=model.parameters(), "
    arguments += "lr_scheduler=sched, " if client_scheduler else ""
    config = f'"{name}.json"' if loader == "path" else f'json.load(open("{name}.json"))'
    return SCRIPT.format(optimizer=optimizer, scheduler=scheduler, arguments=arguments, config=config)


@pytest.mark.oracle
def test_verdicts_match_deepspeed_initialize(deepspeed, tmp_path):
    """Each case is a ds_config plus the script that loads it. shardshift checks the pair; the
    same call runs through the real `deepspeed.initialize` (CPU, one rank, torch optimizers only
    so nothing is compiled): what DeepSpeed refuses, shardshift reports, and where DeepSpeed runs
    with a setting silently replaced, the run shows the value shardshift says it uses."""
    import socket
    import subprocess
    import sys

    (tmp_path / ".git").mkdir()
    cases = []
    for name, extra, client_optimizer, client_scheduler, loader, steps, code, effect in INITIALIZE_CASES:
        config = {"train_micro_batch_size_per_gpu": 1, "gradient_clipping": 1.0, **extra}
        (tmp_path / f"{name}.json").write_text(json.dumps(config, indent=2))
        (tmp_path / f"{name}.py").write_text(_script(name, client_optimizer, client_scheduler, loader))
        cases.append({"name": name, "path": str(tmp_path / f"{name}.json"), "client_optimizer": client_optimizer,
                      "client_scheduler": client_scheduler, "loader": loader, "steps": steps})
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "DS_ACCELERATOR": "cpu", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "RANK": "0",
           "LOCAL_RANK": "0", "WORLD_SIZE": "1"}
    done = subprocess.run([sys.executable, "-c", PROBE], input=json.dumps(cases), capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    ran = json.loads(done.stdout.strip().splitlines()[-1])
    status, output = check_json(str(tmp_path))
    ours: dict[str, set[str]] = {}
    for finding in output["findings"]:
        if finding["code"].startswith("DS4") and finding["severity"] in ("error", "warning"):
            ours.setdefault(Path(finding["file"]).stem, set()).add(finding["code"])
    for name, extra, client_optimizer, client_scheduler, loader, steps, code, effect in INITIALIZE_CASES:
        result = ran[name]
        if effect == "refused":
            assert result["refused"], f"{name}: DeepSpeed accepted it: {result}"
        else:
            assert result["refused"] is None, f"{name}: {result['refused']}"
            for field, value in effect.items():
                expected = pytest.approx(value, rel=1e-3) if isinstance(value, float) else value
                assert result[field] == expected, f"{name}: {field} {result[field]} != {value}"
        assert ours.get(name, set()) == ({code} if code else set()), f"{name}: shardshift reports {ours.get(name)}"


CALLABLE_PROBE = r'''
import json, logging, os, sys
os.environ.setdefault("DS_ACCELERATOR", "cpu")
import torch, deepspeed
from deepspeed.utils import logger
logger.setLevel(logging.ERROR)


def build_optimizer(model):
    return torch.optim.AdamW(model.parameters(), lr=1e-4)


results = {}
for case in json.load(sys.stdin):
    model = torch.nn.Linear(4, 4)
    if case["how"] == "callable":
        kwargs = {"optimizer": lambda params: torch.optim.AdamW(params, lr=1e-4), "model_parameters": model.parameters()}
    else:
        kwargs = {"optimizer": build_optimizer(model)}
    try:
        engine, _, _, _ = deepspeed.initialize(model=model, config=case["path"], **kwargs)
    except Exception as error:
        results[case["name"]] = {"refused": f"{type(error).__name__}: {error}"[:300]}
        continue
    group = engine.basic_optimizer.param_groups[0]
    results[case["name"]] = {"refused": None, "optimizer": type(engine.basic_optimizer).__name__, "lr": group["lr"]}
print(json.dumps(results))
'''

CALLABLE_SCRIPTS = {
    "callable": "import deepspeed, torch\nengine, *_ = deepspeed.initialize(model=m, model_parameters=m.parameters(), "
                "optimizer=lambda params: torch.optim.AdamW(params, lr=1e-4), config='{name}.json')\n",
    "helper": "import deepspeed, torch\ndef build_optimizer(model):\n    return torch.optim.AdamW(model.parameters(), "
              "lr=1e-4)\nopt = build_optimizer(m)\nengine, *_ = deepspeed.initialize(model=m, optimizer=opt, "
              "config='{name}.json')\n",
}
# (name, how the optimizer is given, config beyond the batch size, the code shardshift reports, what DeepSpeed does)
CALLABLE_CASES = [
    ("callable_block", "callable", {"optimizer": SGD}, "DS430", {"optimizer": "AdamW", "lr": 1e-4}),
    ("helper_block", "helper", {"optimizer": SGD}, "DS430", {"optimizer": "AdamW", "lr": 1e-4}),
    ("callable_offload", "callable", {"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}},
     "DS431", "refused"),
    ("helper_offload", "helper", {"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}},
     "DS431", "refused"),
]


@pytest.mark.oracle
def test_callable_and_helper_optimizers_match_deepspeed_initialize(deepspeed, tmp_path):
    """deepspeed.initialize calls a callable `optimizer` with the parameters (engine.py
    `_configure_optimizer`) and treats what it returns, like an optimizer built by a helper, as the
    client optimizer: the config's block is ignored and ZeRO-Offload refuses it."""
    import socket
    import subprocess
    import sys

    (tmp_path / ".git").mkdir()
    cases = []
    for name, how, extra, code, effect in CALLABLE_CASES:
        config = {"train_micro_batch_size_per_gpu": 1, "gradient_clipping": 1.0, **extra}
        (tmp_path / f"{name}.json").write_text(json.dumps(config, indent=2))
        (tmp_path / f"{name}.py").write_text(CALLABLE_SCRIPTS[how].format(name=name))
        cases.append({"name": name, "how": how, "path": str(tmp_path / f"{name}.json")})
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "DS_ACCELERATOR": "cpu", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "RANK": "0",
           "LOCAL_RANK": "0", "WORLD_SIZE": "1"}
    done = subprocess.run([sys.executable, "-c", CALLABLE_PROBE], input=json.dumps(cases), capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    ran = json.loads(done.stdout.strip().splitlines()[-1])
    status, output = check_json(str(tmp_path))
    ours: dict[str, set[str]] = {}
    for finding in output["findings"]:
        if finding["code"].startswith("DS43") and finding["severity"] in ("error", "warning"):
            ours.setdefault(Path(finding["file"]).stem, set()).add(finding["code"])
    for name, how, extra, code, effect in CALLABLE_CASES:
        result = ran[name]
        if effect == "refused":
            assert result["refused"] and "ZeRO-Offload with a client provided optimizer" in result["refused"], result
        else:
            assert result["refused"] is None, result
            assert result["optimizer"] == effect["optimizer"] and result["lr"] == pytest.approx(effect["lr"])
        assert ours.get(name, set()) == {code}, (name, ours.get(name))
