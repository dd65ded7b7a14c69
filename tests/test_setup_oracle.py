"""Accelerate and transformers as the oracles for PL001 (a setting given in a YAML and in the
ds_config it names) and the claims of the PRECEDENCE tables behind it
(src/shardshift/formats/accelerate/keys.py, src/shardshift/formats/axolotl/keys.py).

Accelerate (1.15.0): each Accelerate config is taken through `accelerate launch`'s own code up
to `DeepSpeedPlugin()` in the training processes' environment (oracles.accelerate_launch_outcomes).
Where shardshift reports PL001 "refuses", Accelerate must raise the ValueError whose start the
finding quotes; where Accelerate raises it, shardshift must report it (else KNOWN_MISSES). Beside
the fixtures, one generated config per accelerate-level DeepSpeed field (nine, `mixed_precision:
'no'` included) checks that each is refused next to deepspeed_config_file.

transformers (5.24.0, the newest that installs beside torch 2.13 and accelerate 1.15: 5.25.0
needs `kernels>=0.19.1`, which has no release): each Axolotl YAML becomes the TrainingArguments
Axolotl builds from it, with the ds_config passed as `deepspeed=`, and goes through the
Trainer's DeepSpeed handoff (oracles.trainer_handoff_outcomes). Where shardshift reports PL001
"mismatch" naming a ds_config key, transformers must raise "... mismatch TrainingArguments
values" naming that key; a clean setup must pass with every "auto" filled from the YAML; where
shardshift says a ds_config block wins silently ("referenced"), transformers must hand the
optimizer (scheduler) to DeepSpeed without building the Trainer's own and without an error.

Each framework runs in one child process per module, with a timeout. Under CI (CI=true) a
missing oracle package fails these tests instead of skipping them.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from shardshift.formats.accelerate.keys import PRECEDENCE as ACCELERATE_PRECEDENCE
from shardshift.formats.axolotl.keys import PRECEDENCE as AXOLOTL_PRECEDENCE

import oracles
from conftest import FIXTURES, ROOT, check_json

pytestmark = pytest.mark.oracle

SETUPS = FIXTURES / "setups"
PL001 = FIXTURES / "plan" / "PL001"

# --- the cases ------------------------------------------------------------------------------

# Accelerate fixtures: whether Accelerate must refuse them (so that a silent oracle cannot pass).
ACCELERATE_FIXTURES = {
    "setups/accelerate_refuses": (SETUPS / "accelerate_refuses" / "accelerate_config.yaml", True),
    "setups/accelerate_clean": (SETUPS / "accelerate_clean" / "accelerate_config.yaml", False),
    "PL001/bad_accelerate": (PL001 / "bad_accelerate.yaml", True),
    "PL001/good_accelerate": (PL001 / "good_accelerate.yaml", False),
}
# Generated: accelerate_clean plus one accelerate-level DeepSpeed field (the nine of
# DeepSpeedPlugin._deepspeed_config_checks), each of which Accelerate must refuse. The ds_config
# is accelerate_clean's (accumulation 8, clipping 1.0, stage 3, bf16, no offload), less the keys
# named in the third element.
ACCELERATE_FIELDS = {
    "gradient_accumulation_steps": ("deepspeed_config", "gradient_accumulation_steps: 8", ()),
    "gradient_clipping": ("deepspeed_config", "gradient_clipping: 1.0", ()),
    "gradient_clipping_only_in_yaml": ("deepspeed_config", "gradient_clipping: 1.0", ("gradient_clipping",)),
    "zero_stage": ("deepspeed_config", "zero_stage: 3", ()),
    "offload_optimizer_device": ("deepspeed_config", "offload_optimizer_device: cpu", ()),
    "offload_param_device": ("deepspeed_config", "offload_param_device: cpu", ()),
    "offload_optimizer_nvme_path": ("deepspeed_config", "offload_optimizer_nvme_path: /local_nvme", ()),
    "offload_param_nvme_path": ("deepspeed_config", "offload_param_nvme_path: /local_nvme", ()),
    "zero3_save_16bit_model": ("deepspeed_config", "zero3_save_16bit_model: true", ()),
    "mixed_precision_no": ("top", "mixed_precision: 'no'", ()),
    "mixed_precision_bf16": ("top", "mixed_precision: bf16", ()),
}

# Axolotl fixtures: the ds_config keys transformers must call a mismatch (empty: must pass).
AXOLOTL_FIXTURES = {
    "setups/axolotl_mismatch": (SETUPS / "axolotl_mismatch" / "axolotl.yaml", {"train_micro_batch_size_per_gpu"}),
    "setups/axolotl_auto": (SETUPS / "axolotl_auto" / "axolotl.yaml", set()),
    "setups/axolotl_optimizer_ignored": (SETUPS / "axolotl_optimizer_ignored" / "axolotl.yaml", set()),
    "PL001/bad_axolotl": (PL001 / "bad_axolotl.yaml", {"train_micro_batch_size_per_gpu"}),
    "PL001/good_axolotl": (PL001 / "good_axolotl.yaml", set()),
}
# Generated: a YAML and a ds_config with literal values that agree, then one setting changed on
# one side: (YAML changes, ds_config changes by dotted key, ds keys transformers must name).
AXOLOTL_YAML = {
    "base_model": "meta-llama/Llama-3.1-8B",
    "datasets": [{"path": "tatsu-lab/alpaca", "type": "alpaca"}],
    "micro_batch_size": 2,
    "gradient_accumulation_steps": 4,
    "learning_rate": 2e-5,
    "bf16": True,
    "deepspeed": "ds_config.json",
}
AXOLOTL_DS = {
    "train_micro_batch_size_per_gpu": 2,
    "gradient_accumulation_steps": 4,
    "gradient_clipping": 1.0,
    "bf16": {"enabled": True},
    "optimizer": {"type": "AdamW", "params": {"lr": 2e-5, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.0}},
    "zero_optimization": {"stage": 2},
}
AXOLOTL_VARIANTS = {
    "equal": ({}, {}, set()),
    "micro": ({}, {"train_micro_batch_size_per_gpu": 4}, {"train_micro_batch_size_per_gpu"}),
    "accumulation": ({}, {"gradient_accumulation_steps": 8}, {"gradient_accumulation_steps"}),
    "clipping": ({"max_grad_norm": 0.5}, {}, {"gradient_clipping"}),
    "clipping_default": ({}, {"gradient_clipping": 0.5}, {"gradient_clipping"}),  # HF's max_grad_norm 1.0
    "lr": ({"learning_rate": 1e-4}, {}, {"optimizer.params.lr"}),
    "betas": ({"adam_beta1": 0.9, "adam_beta2": 0.95}, {}, {"optimizer.params.betas"}),
    "eps": ({"adam_epsilon": 1e-6}, {}, {"optimizer.params.eps"}),
    "weight_decay": ({"weight_decay": 0.1}, {}, {"optimizer.params.weight_decay"}),
    "weight_decay_default": ({}, {"optimizer.params.weight_decay": 0.1}, {"optimizer.params.weight_decay"}),
    "bf16_off": ({"bf16": False}, {}, {"bf16.enabled"}),
    "fp16": ({"bf16": False, "fp16": True}, {"fp16": {"enabled": False}}, {"bf16.enabled", "fp16.enabled"}),
    "optimizer_adafactor": ({"optimizer": "adafactor"}, {}, set()),
    "scheduler_block": ({"lr_scheduler": "cosine"},
                        {"scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": "auto", "warmup_max_lr": "auto",
                                                                      "warmup_num_steps": "auto"}}}, set()),
}

# Cases where the framework refuses but shardshift reports nothing, by case id, with the cause:
# strict xfails, so closing a gap makes the test XPASS and fail until the entry is removed.
ACCELERATE_MISSES = {
    "zero3_save_16bit_model": "no Plan field (keys.py says so); Accelerate refuses it",
}
AXOLOTL_MISSES: dict[str, str] = {}

ACCELERATE_CASES = [*ACCELERATE_FIXTURES, *ACCELERATE_FIELDS]
AXOLOTL_CASES = [*AXOLOTL_FIXTURES, *AXOLOTL_VARIANTS]


def _params(cases: list[str], misses: dict[str, str]) -> list:
    return [pytest.param(case, id=case, marks=[pytest.mark.xfail(strict=True, reason=misses[case])]
                         if case in misses else []) for case in cases]


def _set(config: dict, dotted: str, value) -> None:
    *parents, key = dotted.split(".")
    for part in parents:
        config = config.setdefault(part, {})
    config[key] = value


def _yaml():
    """PyYAML (Axolotl's and Accelerate's YAML loader; installed with the oracles)."""
    oracles.require_installed("yaml")
    import yaml

    return yaml


def _get(config, dotted: str):
    for part in dotted.split("."):
        if not isinstance(config, dict) or part not in config:
            return None
        config = config[part]
    return config


# --- materialise the generated cases, run shardshift and the oracles once per module ---------


@pytest.fixture(scope="module")
def case_files(tmp_path_factory) -> dict[str, Path]:
    """Case id -> the YAML to check (fixtures in place, generated ones in a temporary folder,
    each with its own ds_config.json beside it)."""
    yaml = _yaml()
    files = {case: path for case, (path, _) in {**ACCELERATE_FIXTURES, **AXOLOTL_FIXTURES}.items()}
    base = tmp_path_factory.mktemp("setups")
    clean = SETUPS / "accelerate_clean"
    clean_yaml = (clean / "accelerate_config.yaml").read_text(encoding="utf-8")
    clean_ds = json.loads((clean / "ds_config.json").read_text(encoding="utf-8"))
    anchor = "  deepspeed_config_file: ds_config.json\n"
    assert anchor in clean_yaml
    for case, (where, line, dropped) in ACCELERATE_FIELDS.items():
        folder = base / f"accelerate_{case}"
        folder.mkdir()
        text = clean_yaml.replace(anchor, anchor + f"  {line}\n") if where == "deepspeed_config" else \
            clean_yaml + f"{line}\n"
        (folder / "accelerate_config.yaml").write_text(text, encoding="utf-8")
        ds = {key: value for key, value in clean_ds.items() if key not in dropped}
        (folder / "ds_config.json").write_text(json.dumps(ds, indent=2), encoding="utf-8")
        files[case] = folder / "accelerate_config.yaml"
    for case, (yaml_changes, ds_changes, _) in AXOLOTL_VARIANTS.items():
        folder = base / f"axolotl_{case}"
        folder.mkdir()
        document = {**AXOLOTL_YAML, **yaml_changes}
        ds = copy.deepcopy(AXOLOTL_DS)
        for dotted, value in ds_changes.items():
            _set(ds, dotted, value)
        (folder / "axolotl.yaml").write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
        (folder / "ds_config.json").write_text(json.dumps(ds, indent=2), encoding="utf-8")
        files[case] = folder / "axolotl.yaml"
    return files


@pytest.fixture(scope="module")
def pl001(case_files) -> dict[str, list[dict]]:
    """Case id -> shardshift's PL001 findings on its YAML (one `shardshift check` for all)."""
    by_file: dict[Path, str] = {path.resolve(): case for case, path in case_files.items()}
    _, output = check_json(*(str(path) for path in case_files.values()), "--select", "PL001")
    found: dict[str, list[dict]] = {case: [] for case in case_files}
    for finding in output["findings"]:  # on the YAML, or on its ds_config with the YAML as related place
        places = [finding["file"], *(r["file"] for r in finding.get("related", []))]
        case = next(by_file[(ROOT / place).resolve()] for place in places if (ROOT / place).resolve() in by_file)
        found[case].append(finding)
    return found


@pytest.fixture(scope="module")
def accelerate(case_files) -> dict[str, dict]:
    """Case id -> what Accelerate's launcher does with it (one child process for all)."""
    oracles.require_installed("accelerate", "deepspeed", "torch")
    paths = {case: str(case_files[case].resolve()) for case in ACCELERATE_CASES}
    outcomes = oracles.run_in_child("accelerate_launch_outcomes", list(paths.values()))
    return {case: outcomes[path] for case, path in paths.items()}


@pytest.fixture(scope="module")
def trainer(case_files) -> dict[str, dict]:
    """Case id -> what the HF Trainer's DeepSpeed handoff does with it (one child for all)."""
    oracles.require_installed("transformers", "accelerate", "deepspeed", "torch", "yaml")
    paths = {case: str(case_files[case].resolve()) for case in AXOLOTL_CASES}
    outcomes = oracles.run_in_child("trainer_handoff_outcomes", list(paths.values()))
    return {case: outcomes[path] for case, path in paths.items()}


def _says(table, outcome: str) -> set[str]:
    return {rule.says for rule in table.values() if rule.outcome == outcome}


def _quoted(says: str) -> str:
    """The framework message a `says` text quotes, up to its "[...]" or closing quote."""
    match = re.search(r'\("(.+?)(?:\[\.\.\.\])?"\)', says)
    assert match, f"no quoted message in {says!r}"
    return match.group(1).rstrip(": ")


def _with(findings: list[dict], texts: set[str]) -> list[dict]:
    return [f for f in findings if any(text in f["message"] for text in texts)]


# --- Accelerate -----------------------------------------------------------------------------


def test_refusal_quotes_accelerate():
    """The message every "refuses" entry quotes is the start of Accelerate's own ValueError."""
    for says in _says(ACCELERATE_PRECEDENCE, "refuses"):
        assert oracles.ACCELERATE_REFUSAL.startswith(_quoted(says)), says


@pytest.mark.parametrize("case", _params(ACCELERATE_CASES, ACCELERATE_MISSES))
def test_accelerate_refusal(case, accelerate, pl001):
    outcome = accelerate[case]
    error = outcome["error"] or ""
    refused = error.startswith(f"ValueError: {oracles.ACCELERATE_REFUSAL}")
    expected = ACCELERATE_FIXTURES[case][1] if case in ACCELERATE_FIXTURES else True
    # the oracle itself: the fixtures as labelled, each of the nine fields refused
    assert refused == expected, f"Accelerate: {outcome}"
    # any other failure would be a CPU-only one (oracles.md); none is expected on these configs
    assert refused or outcome["error"] is None, f"Accelerate failed otherwise: {outcome}"
    findings = pl001[case]
    says_refuses = _with(findings, _says(ACCELERATE_PRECEDENCE, "refuses"))
    assert len(findings) == len(says_refuses), f"PL001 findings that are not refusals: {findings}"
    if says_refuses:
        assert refused, f"shardshift says Accelerate refuses, Accelerate did not: {outcome}"
    if refused:
        assert says_refuses, f"Accelerate refuses ({case}), shardshift reports no PL001"


# --- transformers (the Axolotl handoff) -----------------------------------------------------

# ds_config keys of one Plan setting (one PL001 finding covers both precision flags)
SETTING = {"fp16.enabled": "precision", "bf16.enabled": "precision", "fp16": "precision", "bf16": "precision"}


def _mismatched(error: str | None) -> set[str]:
    """The ds_config keys of transformers' mismatch error ("- ds KEY=VALUE vs hf ...")."""
    return set(re.findall(r"^- ds ([\w.]+)=", error or "", flags=re.M))


def _settings(keys) -> set[str]:
    return {SETTING.get(key, key) for key in keys}


def test_mismatch_quote_transformers():
    """The message every "mismatch" entry quotes is the start of transformers' ValueError."""
    for says in _says(AXOLOTL_PRECEDENCE, "mismatch"):
        assert oracles.TRAINER_MISMATCH.startswith(_quoted(says)), says


@pytest.mark.parametrize("case", _params(AXOLOTL_CASES, AXOLOTL_MISSES))
def test_trainer_mismatch(case, trainer, pl001):
    outcome = trainer[case]
    expected = AXOLOTL_FIXTURES[case][1] if case in AXOLOTL_FIXTURES else AXOLOTL_VARIANTS[case][2]
    raised = _mismatched(outcome["error"])
    # the oracle itself: it raises (in deepspeed_init) exactly for the expected keys, else not at all
    if expected:
        assert outcome["stage"] == "deepspeed_init" and outcome["error"].startswith(
            f"ValueError: {oracles.TRAINER_MISMATCH}"), outcome["error"]
    else:
        assert outcome["error"] is None, outcome["error"]
    assert raised == expected, outcome["error"]
    mismatch = _with(pl001[case], _says(AXOLOTL_PRECEDENCE, "mismatch"))
    # the ds_config key a finding names: its own place (a value compared with the default), or a related one
    named = {place["pointer"].strip("/").replace("/", ".") for f in mismatch for place in [f, *f["related"]]
             if place["file"].endswith(".json")}
    # shardshift's claim: each key it names is one transformers calls a mismatch ...
    assert _settings(named) <= _settings(raised), f"shardshift names {named}, transformers {raised}"
    # ... and each mismatch transformers raises has a PL001 finding
    assert _settings(raised) <= _settings(named), f"transformers raises for {raised}, PL001 names {named}"


@pytest.mark.parametrize("case", ["setups/axolotl_auto", "setups/axolotl_optimizer_ignored", "PL001/good_axolotl",
                                  "equal", "scheduler_block"])
def test_trainer_fills_auto_from_yaml(case, trainer, case_files):
    """A clean setup passes and every "auto" the Trainer fills holds the YAML's value (world
    size 1 on the CPU for the calculated train_batch_size)."""
    outcome = trainer[case]
    assert outcome["error"] is None, outcome["error"]
    path = case_files[case]
    document = _yaml().safe_load(path.read_text(encoding="utf-8"))
    original = json.loads((path.parent / document["deepspeed"]).read_text(encoding="utf-8"))
    args = oracles.axolotl_training_arguments(document)
    micro, accumulation = args["per_device_train_batch_size"], args["gradient_accumulation_steps"]
    wanted = {
        "train_micro_batch_size_per_gpu": micro,
        "gradient_accumulation_steps": accumulation,
        "train_batch_size": micro * accumulation,
        "gradient_clipping": args.get("max_grad_norm", 1.0),
        "bf16.enabled": args["bf16"],
        "fp16.enabled": args["fp16"],
        "optimizer.params.lr": args["learning_rate"],
        "optimizer.params.betas": [args.get("adam_beta1", 0.9), args.get("adam_beta2", 0.999)],
        "optimizer.params.eps": args.get("adam_epsilon", 1e-8),
        "optimizer.params.weight_decay": args["weight_decay"],
        "scheduler.params.warmup_max_lr": args["learning_rate"],
        "scheduler.params.warmup_min_lr": 0,
    }
    autos = [key for key in wanted if _get(original, key) == "auto"]
    if case != "equal":
        assert autos or case == "PL001/good_axolotl", "no \"auto\" to fill in this case"
    for key in autos:
        assert _get(outcome["config"], key) == wanted[key], (key, _get(outcome["config"], key))
    assert "auto" not in json.dumps(outcome["config"]), outcome["config"]


@pytest.mark.parametrize("case, block", [("setups/axolotl_optimizer_ignored", "optimizer"),
                                         ("optimizer_adafactor", "optimizer"), ("scheduler_block", "scheduler")])
def test_trainer_block_wins(case, block, trainer, pl001):
    """shardshift: the ds_config's optimizer (scheduler) block wins and the YAML's optimizer
    (lr_scheduler) does nothing, silently. transformers: with the block, `deepspeed_optim_sched`
    returns a DummyOptim (DummyScheduler without the Trainer's scheduler callable) and never
    calls the Trainer's create_optimizer (create_scheduler), so DeepSpeed builds what the block
    names; no error, no warning raised. What DeepSpeed then builds needs `deepspeed.initialize`
    (not run here; its optimizer factory is DeepSpeed's, see test_deepspeed_oracle). Without the
    block (good_axolotl, axolotl_auto) the Trainer builds its own: see test_trainer_no_block."""
    outcome = trainer[case]
    assert outcome["error"] is None, outcome["error"]
    if block == "optimizer":
        assert outcome["optimizer"] == "DummyOptim" and "create_optimizer" not in outcome["created"], outcome
    else:
        assert outcome["scheduler"] == "DummyScheduler" and not outcome["scheduler_from_trainer"], outcome
        assert "create_scheduler" not in outcome["created"], outcome
    wins = _with(pl001[case], _says(AXOLOTL_PRECEDENCE, "referenced"))
    assert wins, f"no PL001 'referenced' finding for the {block} block: {pl001[case]}"
    assert all(f["severity"] == "warning" for f in wins), wins
    key = "optimizer" if block == "optimizer" else "lr_scheduler"
    assert any(f"ignores the YAML's {key}" in f["message"] for f in wins), wins


@pytest.mark.parametrize("case", ["setups/axolotl_auto", "PL001/good_axolotl"])
def test_trainer_no_block(case, trainer):
    """The contrast: without an optimizer block the Trainer's own optimizer is built (and
    `zero_allow_untested_optimizer` set), so the YAML's optimizer is the one used."""
    outcome = trainer[case]
    assert outcome["error"] is None, outcome["error"]
    assert outcome["created"] == ["create_optimizer"] and outcome["optimizer"] != "DummyOptim", outcome
    assert outcome["config"]["zero_allow_untested_optimizer"] is True


def test_fixture_copies_are_fresh(case_files):
    """The generated cases start from the fixtures as they are now (a renamed fixture fails here,
    not silently in the oracle)."""
    assert (SETUPS / "accelerate_clean" / "ds_config.json").is_file()
    assert all(path.is_file() for path in case_files.values())
