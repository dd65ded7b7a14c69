"""Issue 11: `TrainingArguments(optim=..., fp16=..., bf16=..., *_full_eval=...)` literals and
`Trainer(optimizers=...)` against the ds_config they name (DS435-DS439), and what transformers 5.x
does with each.

The rule cases run through the real CLI (`check --format json`) over the DS435-DS439 fixture
folders. The oracle runs every bad and good fixture through the real Hugging Face Trainer on the
CPU (one child process for the module: a tiny model, `use_cpu=True`, `max_steps=1`, the
fixture's TrainingArguments keywords read with `ast` and its ds_config): what it raises, and where it
runs, the optimizer DeepSpeed steps and the precision it trains in, must be what the message says.
DS439's swap (Accelerate's `map_pytorch_optim_to_deepspeed`) is run with DeepSpeedCPUAdam replaced
by a recorder, since building the real one compiles a C++ extension for minutes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import oracles
from conftest import FIXTURES, check_json
from rule_cases import marker_position

RULES = FIXTURES / "deepspeed" / "rules"
CODES = ("DS435", "DS436", "DS437", "DS438", "DS439", "DS449", "DS450")

# (fixture, code, severity, marker, occurrence)
BAD_CASES = [
    ("DS435/bad.py", "DS435", "warning", 'optim="adafactor"', 1),
    ("DS436/bad.py", "DS436", "error", "TrainingArguments(", 1),
    ("DS436/bad_other.py", "DS436", "error", "fp16=True", 1),
    ("DS437/bad.py", "DS437", "warning", "bf16_full_eval=True", 1),
    ("DS438/bad.py", "DS438", "warning", "optimizers=(optimizer", 1),
    ("DS439/bad.py", "DS439", "warning", 'optim="sgd"', 1),
    ("DS449/bad.py", "DS449", "warning", 'lr_scheduler_type="cosine"', 1),
    ("DS450/bad.py", "DS450", "warning", "def create_optimizer", 1),
]
GOOD_FIXTURES = sorted(p for code in CODES for p in (RULES / code).glob("good*.py"))


@pytest.fixture(scope="module")
def findings() -> dict[str, list[dict]]:
    status, output = check_json(*(str(RULES / code) for code in CODES))
    by_file: dict[str, list[dict]] = {}
    for finding in output["findings"]:
        by_file.setdefault(os.path.relpath(finding["file"], RULES), []).append(finding)
    return by_file


def test_every_rule_has_bad_and_good_fixtures_and_documentation():
    from shardshift.rules import all_rules

    rules = {r.code: r for r in all_rules() if r.code in CODES}
    assert set(rules) == set(CODES) == {c[1] for c in BAD_CASES} == {p.parent.name for p in GOOD_FIXTURES}
    for rule in rules.values():
        assert rule.__module__ == "shardshift.rules.deepspeed.script"
        for section in ("## What it does", "## Why is this bad", "## Example", "## Use instead"):
            assert section in rule.documentation(), (rule.code, section)


@pytest.mark.parametrize("fixture,code,severity,marker,occurrence", BAD_CASES, ids=[c[0] for c in BAD_CASES])
def test_bad_fixture(findings, fixture, code, severity, marker, occurrence):
    found = [f for f in findings.get(fixture, []) if f["code"] == code]
    assert len(found) == 1, findings.get(fixture)
    finding = found[0]
    assert (finding["severity"], finding["pointer"], finding["fix"]) == (severity, None, None)
    assert (finding["line"], finding["column"]) == marker_position(RULES / fixture, marker, occurrence)
    config = [r for r in finding.get("related", []) if r["file"].endswith(".json")]
    assert len(config) == 1  # the ds_config (key) involved, as a related location


@pytest.mark.parametrize("path", GOOD_FIXTURES, ids=[f"{p.parent.name}/{p.name}" for p in GOOD_FIXTURES])
def test_good_fixture(findings, path):
    found = findings.get(os.path.relpath(path, RULES), [])
    assert [f for f in found if f["code"] in CODES or f["severity"] == "error"] == []


# --- reading the calls ----------------------------------------------------------------------

READ_CASES = [
    # a name bound once to a literal counts; **kwargs makes an absent keyword unknown
    ('from transformers import TrainingArguments\nOPT = "sgd"\n'
     'a = TrainingArguments(output_dir="o", optim=OPT, bf16=True, deepspeed="d.json")\n',
     {"optim": "sgd", "bf16": True}, False),
    ('from transformers import TrainingArguments\n'
     'a = TrainingArguments(output_dir="o", deepspeed="d.json", **extra)\n', {}, True),
    ('from trl import SFTConfig\nimport sys\n'
     'a = SFTConfig(output_dir="o", fp16=sys.argv[1] == "1", deepspeed="d.json")\n', {"fp16": "unknown"}, False),
]


@pytest.mark.parametrize("script,keywords,star", READ_CASES, ids=range(len(READ_CASES)))
def test_arguments_calls_are_read_as_literals(script, keywords, star):
    from shardshift.formats import python_script

    (reference,) = [r for r in python_script.read(script, "t.py").data.references if r.call is not None]
    call = reference.call
    assert call.star_kwargs is star
    for name, value in keywords.items():
        shown = "unknown" if call.keywords[name] is python_script.UNKNOWN else call.keywords[name]
        assert shown == value
    assert (call.value("fp16", False) is python_script.UNKNOWN) is (star or "fp16" in keywords and
                                                                   keywords["fp16"] == "unknown")


def test_runtime_values_give_no_finding(tmp_path):
    (tmp_path / "ds.json").write_text(json.dumps({"bf16": {"enabled": True}, "zero_optimization": {"stage": 2},
                                                  "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}}))
    (tmp_path / "train.py").write_text(
        "import sys\nfrom transformers import TrainingArguments\n"
        "a = TrainingArguments(output_dir='o', optim=sys.argv[2], bf16=sys.argv[1] == 'bf16', deepspeed='ds.json')\n"
        "b = TrainingArguments(output_dir='o', deepspeed='ds.json', **vars(args))\n")
    status, output = check_json(str(tmp_path))
    assert [f for f in output["findings"] if f["code"] in CODES] == []



@pytest.mark.parametrize("arguments", ["SFTConfig", "HfArgumentParser"])
def test_a_class_with_defaults_of_its_own_leaves_unset_fields_unknown(tmp_path, arguments):
    """TRL's SFTConfig turns bf16 on where fp16 is unset (its own __post_init__), so a bf16 ds_config
    with bf16 left out is no mismatch shardshift can show: DS436 stays silent. The same call with
    transformers' own class (bf16 False by default) is the mismatch the Trainer raises on."""
    (tmp_path / "ds.json").write_text(json.dumps({"bf16": {"enabled": True}, "zero_optimization": {"stage": 2}}))
    if arguments == "SFTConfig":
        script = ("from trl import SFTConfig, SFTTrainer\nfrom transformers import TrainingArguments\n"
                  "a = SFTConfig(output_dir='o', deepspeed='ds.json')\nSFTTrainer(model=None, args=a).train()\n")
    else:
        script = ("from transformers import HfArgumentParser, TrainingArguments\nfrom trl import SFTConfig, SFTTrainer\n"
                  "(a,) = HfArgumentParser(SFTConfig).parse_args_into_dataclasses()\n"
                  "SFTTrainer(model=None, args=a).train()\n")
        (tmp_path / "run.sh").write_text("deepspeed --num_gpus 2 train.py --deepspeed ds.json --output_dir o\n")
    (tmp_path / "train.py").write_text(script)
    _, output = check_json(str(tmp_path))
    assert [f for f in output["findings"] if f["code"] == "DS436"] == []
    (tmp_path / "train.py").write_text(script.replace("SFTConfig)", "TrainingArguments)")
                                       .replace("SFTConfig(", "TrainingArguments("))
    _, output = check_json(str(tmp_path))
    assert [f["severity"] for f in output["findings"] if f["code"] == "DS436"] == ["error"]

# --- the oracle: the real Trainer on the CPU --------------------------------------------------

PROBE = r'''
import ast, json, os, sys, tempfile, traceback
import torch
from transformers import PretrainedConfig, PreTrainedModel, Trainer, TrainingArguments


class TinyConfig(PretrainedConfig):
    model_type = "shardshift-tiny"

    def __init__(self, hidden_size=16, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size


class Tiny(PreTrainedModel):
    config_class = TinyConfig

    def __init__(self, config):
        super().__init__(config)
        self.linear = torch.nn.Linear(4, 4)
        self.post_init()

    def forward(self, x=None, labels=None):
        return {"loss": self.linear(x.to(self.linear.weight.dtype)).float().pow(2).mean()}


class Recording(Trainer):
    """A Trainer subclass that overrides create_optimizer and create_scheduler (DS450): which of
    them the Trainer calls under DeepSpeed."""

    called = []

    def create_optimizer(self, *args, **kwargs):  # as DS450's fixtures write it
        Recording.called.append("create_optimizer")
        if self.optimizer is None:
            self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.5)
        return self.optimizer

    def create_scheduler(self, *args, **kwargs):
        Recording.called.append("create_scheduler")
        return super().create_scheduler(*args, **kwargs)


def arguments(path):
    for node in ast.walk(ast.parse(open(path).read())):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "TrainingArguments":
            return {k.arg: ast.literal_eval(k.value) for k in node.keywords}


results = {}
for path in json.load(sys.stdin):
    keywords = arguments(path)
    config = json.load(open(os.path.join(os.path.dirname(path), keywords.pop("deepspeed"))))
    keywords.pop("output_dir", None)
    result = {"stage": None, "error": None}
    results[path] = result
    with tempfile.TemporaryDirectory() as out:
        stage = "arguments"
        try:
            args = TrainingArguments(output_dir=out, use_cpu=True, report_to="none", max_steps=1, save_strategy="no",
                                     deepspeed=config, **keywords)
            stage = "trainer"
            model = Tiny(TinyConfig())
            source = open(path).read()
            custom = (torch.optim.SGD(model.parameters(), lr=0.5), None) if "optimizers=" in source else (None, None)
            Recording.called = []
            kind = Recording if "def create_" in source else Trainer
            trainer = kind(model=model, args=args, train_dataset=[{"x": torch.ones(4)}] * 4, optimizers=custom)
            stage = "train"
            trainer.train()
        except Exception as error:
            result.update(stage=stage, error=f"{type(error).__name__}: {error}"[:500])
            continue
        engine = trainer.model_wrapped
        scheduler = engine.lr_scheduler if engine.lr_scheduler is not None else trainer.lr_scheduler
        result.update(overrides_called=sorted(set(Recording.called)),
                      scheduler=type(scheduler).__name__ if scheduler is not None else None,
                      optimizer=type(engine.basic_optimizer).__name__, bf16=bool(engine.bfloat16_enabled()),
                      fp16=bool(engine.fp16_enabled()), dtype=str(next(engine.module.parameters()).dtype),
                      optim_class=Trainer.get_optimizer_cls_and_kwargs(args)[0].__name__)

# DS439: what Accelerate swaps the Trainer's optimizer for under ZeRO-Offload, with DeepSpeedCPUAdam
# replaced by a recorder (the real one compiles a C++ extension).
import deepspeed.ops.adam
from accelerate.utils import deepspeed as accelerate_deepspeed


class Recorder:
    def __init__(self, params, **kwargs):
        self.kwargs = kwargs


deepspeed.ops.adam.DeepSpeedCPUAdam = Recorder
swaps = {}
for optim in ("sgd", "adafactor", "rmsprop", "adamw_torch"):
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(output_dir=out, use_cpu=True, report_to="none", optim=optim)
    cls, kwargs = Trainer.get_optimizer_cls_and_kwargs(args)
    built = cls(torch.nn.Linear(2, 2).parameters(), **kwargs)
    swapped = accelerate_deepspeed.map_pytorch_optim_to_deepspeed(built)
    swaps[optim] = {"built": type(built).__name__, "swapped": type(swapped).__name__,
                    "kwargs": sorted(getattr(swapped, "kwargs", {})),
                    "adamw_mode": getattr(swapped, "kwargs", {}).get("adamw_mode")}
print("RESULT " + json.dumps({"runs": results, "swaps": swaps}))
'''


@pytest.fixture(scope="module")
def trainer_runs() -> dict:
    oracles.require_installed("transformers", "accelerate", "deepspeed", "torch")
    import socket

    # not DS439's: ZeRO-Offload builds DeepSpeedCPUAdam, a C++ extension compiled for minutes
    paths = [str(p) for p in [*(RULES / c[0] for c in BAD_CASES), *GOOD_FIXTURES] if p.parent.name != "DS439"]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {name: value for name, value in os.environ.items() if not name.startswith("ACCELERATE_")}
    env.update(DS_ACCELERATOR="cpu", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK="0", LOCAL_RANK="0",
               WORLD_SIZE="1", HF_HUB_OFFLINE="1", TRANSFORMERS_VERBOSITY="error", PYTHONWARNINGS="ignore")
    done = subprocess.run([sys.executable, "-c", PROBE], input=json.dumps(paths), capture_output=True, text=True,
                          env=env, timeout=900)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT "):])


def _run(trainer_runs, fixture: str) -> dict:
    return trainer_runs["runs"][str(RULES / fixture)]


def _message(findings, fixture: str, code: str) -> str:
    (finding,) = [f for f in findings[fixture] if f["code"] == code]
    return finding["message"]


@pytest.mark.oracle
def test_optim_is_ignored_with_an_optimizer_block(trainer_runs, findings):
    bad, good = _run(trainer_runs, "DS435/bad.py"), _run(trainer_runs, "DS435/good.py")
    assert bad["error"] is None and good["error"] is None, (bad, good)
    assert bad["optim_class"] == good["optim_class"] == "Adafactor"
    assert bad["optimizer"] == "AdamW"  # the block's optimizer, not optim's
    assert good["optimizer"] == "Adafactor"  # without the block, optim is used
    assert "ignored" in _message(findings, "DS435/bad.py", "DS435")


@pytest.mark.oracle
def test_precision_mismatch_raises_as_the_message_says(trainer_runs, findings):
    bad = _run(trainer_runs, "DS436/bad.py")
    assert bad["stage"] == "train" and bad["error"].startswith(
        "ValueError: Please correct the following DeepSpeed config values that mismatch TrainingArguments values")
    message = _message(findings, "DS436/bad.py", "DS436")
    assert "when train() starts" in message
    assert "- ds bf16.enabled=True vs hf bf16|bf16_full_eval=False" in message and \
        "- ds bf16.enabled=True vs hf bf16|bf16_full_eval=False" in bad["error"]
    other = _run(trainer_runs, "DS436/bad_other.py")
    assert other["stage"] == "trainer", other
    quoted = "`--mixed_precision` arg cannot be set to `fp16` when `bf16` is set in the DeepSpeed config file."
    assert quoted in other["error"] and quoted in _message(findings, "DS436/bad_other.py", "DS436")
    good = _run(trainer_runs, "DS436/good.py")
    assert good["error"] is None and good["bf16"] is True, good


@pytest.mark.oracle
def test_full_eval_with_auto_trains_in_half_precision(trainer_runs):
    bad, good = _run(trainer_runs, "DS437/bad.py"), _run(trainer_runs, "DS437/good.py")
    assert bad["error"] is None and (bad["bf16"], bad["dtype"]) == (True, "torch.bfloat16"), bad
    assert good["error"] is None and (good["bf16"], good["dtype"]) == (False, "torch.float32"), good


@pytest.mark.oracle
def test_the_trainer_drops_an_optimizer_given_in_code(trainer_runs, findings):
    bad, good = _run(trainer_runs, "DS438/bad.py"), _run(trainer_runs, "DS438/good.py")
    assert bad["error"] is None and bad["optimizer"] == "AdamW", bad  # not the SGD given to the Trainer
    assert "AdamW by default" in _message(findings, "DS438/bad.py", "DS438")
    assert good["error"] is None and good["optimizer"] == "SGD", good


@pytest.mark.oracle
def test_offload_swaps_the_trainer_optimizer_for_cpu_adam(trainer_runs, findings):
    from shardshift.rules.deepspeed.script import OFFLOAD_SWAPPED_OPTIM

    swaps = trainer_runs["swaps"]
    for optim in OFFLOAD_SWAPPED_OPTIM:
        assert swaps[optim]["swapped"] == "Recorder", swaps[optim]  # DeepSpeedCPUAdam
        assert swaps[optim]["adamw_mode"] is False and swaps[optim]["kwargs"] == ["adamw_mode", "lr", "weight_decay"]
    assert swaps["adamw_torch"]["adamw_mode"] is True  # the good fixture: AdamW stays AdamW
    assert swaps["sgd"]["built"] == "SGD"
    message = _message(findings, "DS439/bad.py", "DS439")
    assert "DeepSpeedCPUAdam in Adam mode (only lr and weight_decay kept)" in message


@pytest.mark.oracle
def test_lr_scheduler_type_is_ignored_with_a_scheduler_block(trainer_runs, findings):
    bad, good = _run(trainer_runs, "DS449/bad.py"), _run(trainer_runs, "DS449/good.py")
    assert bad["error"] is None and good["error"] is None, (bad, good)
    assert bad["scheduler"] == "WarmupLR"  # the block's scheduler, not the cosine one asked for
    assert good["scheduler"] == "LambdaLR"  # without the block, transformers' cosine schedule
    assert "is ignored" in _message(findings, "DS449/bad.py", "DS449")


@pytest.mark.oracle
def test_trainer_overrides_are_skipped_with_a_block(trainer_runs, findings):
    bad, good = _run(trainer_runs, "DS450/bad.py"), _run(trainer_runs, "DS450/good.py")
    assert bad["error"] is None and good["error"] is None, (bad, good)
    # called in both, but with the block self.optimizer is already DeepSpeed's placeholder
    assert "create_optimizer" in bad["overrides_called"] and "create_optimizer" in good["overrides_called"]
    assert bad["optimizer"] == "AdamW", bad  # the block's optimizer: the override's SGD is never built
    assert good["optimizer"] == "SGD", good
    assert "builds nothing" in _message(findings, "DS450/bad.py", "DS450")


@pytest.mark.oracle
def test_every_good_fixture_runs(trainer_runs):
    for path in GOOD_FIXTURES:
        if path.parent.name == "DS439":
            continue  # not run: ZeRO-Offload builds DeepSpeedCPUAdam
        result = trainer_runs["runs"][str(path)]
        assert result["error"] is None, (path, result)


# --- DS449/DS450 through a launch script, and the overrides DS450 leaves alone ----------------

ENTRY = '''import torch
from transformers import HfArgumentParser, Trainer, TrainingArguments


class HeadTrainer(Trainer):
    def create_optimizer(self):
{body}


def main():
    (args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()
    HeadTrainer(model=None, args=args).train()
'''
GUARDED = "        if self.optimizer is None:\n            self.optimizer = torch.optim.SGD([], lr=0.5)\n" \
          "        return self.optimizer"
UNGUARDED = "        self.optimizer = torch.optim.SGD([], lr=0.5)\n        return self.optimizer"
SUPER = "        return super().create_optimizer()"


@pytest.mark.parametrize("body,reported", [(GUARDED, True), (SUPER, True), (UNGUARDED, False)],
                         ids=["guarded", "super", "unguarded"])
def test_launch_flags_and_the_entry_trainer(tmp_path, body, reported):
    (tmp_path / "ds.json").write_text(json.dumps({
        "train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 2},
        "optimizer": {"type": "AdamW", "params": {"lr": "auto"}},
        "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": "auto", "warmup_type": "linear"}}}))
    (tmp_path / "train.py").write_text(ENTRY.format(body=body))
    (tmp_path / "train.sh").write_text("deepspeed --num_gpus 2 train.py --deepspeed ds.json --output_dir out "
                                       "--lr_scheduler_type cosine\n")
    status, output = check_json(str(tmp_path))
    found = {(f["code"], os.path.basename(f["file"]), f["column"]) for f in output["findings"]
             if f["code"] in ("DS449", "DS450", "PL001")}
    launch = (tmp_path / "train.sh").read_text()
    expected = {("DS449", "train.sh", launch.index("--lr_scheduler_type") + 1)}
    if reported:
        expected.add(("DS450", "train.sh", launch.index("--deepspeed") + 1))
    assert found == expected  # and no PL001 for --lr_scheduler_type: DS449 says it
    if reported:
        (finding,) = [f for f in output["findings"] if f["code"] == "DS450"]
        assert finding["severity"] == "warning"
        assert any(r["file"].endswith("train.py") and r["line"] == 6 for r in finding["related"])


def test_the_defaults_table_is_the_installed_trainers(tmp_path):
    """data/defaults/transformers.json for the installed transformers release equals what its own
    TrainingArguments holds when a field is left out; a default the table leaves to the environment
    (optim from 4.55: by the torch version) is one of the table's alternatives."""
    import enum

    import transformers
    from transformers import TrainingArguments

    from shardshift.formats.python_script.trainer_defaults import release_defaults
    from shardshift.plan import Unknown

    version = tuple(int(p) for p in transformers.__version__.split(".")[:3])
    row = release_defaults(version)
    assert row is not None, f"transformers {transformers.__version__} is not in the table: regenerate it"
    arguments = TrainingArguments(output_dir=str(tmp_path))
    for name, value in row.items():
        actual = getattr(arguments, name)
        actual = actual.value if isinstance(actual, enum.Enum) else actual
        if isinstance(value, Unknown):
            assert actual in [a.value for a in value.alternatives], (name, actual, value)
        else:
            assert actual == value, (name, actual, value)


def test_the_table_row_is_what_the_generator_reads_from_the_installed_source():
    """scripts/defaults/transformers_defaults.py, run on the installed release's training_args.py,
    gives the row (values and cited lines) the checked-in table holds for it."""
    import importlib.util
    import json
    from pathlib import Path

    import transformers

    from conftest import ROOT

    spec = importlib.util.spec_from_file_location("transformers_defaults",
                                                  ROOT / "scripts" / "defaults" / "transformers_defaults.py")
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    read = generator.read_defaults((Path(transformers.__file__).parent / "training_args.py").read_text("utf-8"))
    table = json.loads((ROOT / "src" / "shardshift" / "data" / "defaults" / "transformers.json").read_text())
    index, lines = table["releases"][transformers.__version__]
    assert {name: {k: v for k, v in record.items() if k != "line"} for name, record in read.items()} == \
        table["variants"][index]
    assert {name: record["line"] for name, record in read.items()} == lines
