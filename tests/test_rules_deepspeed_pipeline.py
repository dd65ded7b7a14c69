"""DS423 (a `pipeline` section whose model is not a PipelineModule), and DS307 deferring to it.

Case rows run the real CLI on the fixture folder (each fixture's consumer — a Trainer script, a
script that builds its model with `from_pretrained`, a PipelineModule subclass, a model built by
an imported function, nothing — sits next to it). The oracle runs `deepspeed.initialize` (DeepSpeed
0.19.8, one CPU rank, tests/deepspeed_initialize_oracle.py) on each fixture's config: a plain model
gets a `DeepSpeedEngine` that trains with the section in place (its keys unchecked), and only a
`PipelineModule` gets the `PipelineEngine`, whose forward the Trainer's loop would call and which
refuses it, as the message says."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import FIXTURES, check_json
from rule_cases import findings_with_code, marker_position

FOLDER = FIXTURES / "deepspeed" / "rules" / "DS423"

# fixture -> (severity, unknown_context kind, words of the message, related file)
CASES = {
    "bad.json": ("warning", None, "the Hugging Face Trainer reads this file", "trainer.py"),
    "bad_script.json": ("warning", None, "built by AutoModelForCausalLM.from_pretrained, not a PipelineModule",
                        "script_plain.py"),
    "info_program.json": ("info", "program", "could not be decided", "script_undecided.py"),
    "info_consumer.json": ("info", "consumer", "no script or config that reads this file was found", None),
}


@pytest.fixture(scope="module")
def output() -> dict:
    _, found = check_json("--min-severity", "info", str(FOLDER))
    return found


@pytest.mark.parametrize("name", sorted(CASES))
def test_case(output, name):
    severity, kind, words, related = CASES[name]
    found = [f for f in findings_with_code(output, "DS423") if f["file"].endswith("/" + name)]
    assert len(found) == 1, found
    finding = found[0]
    assert (finding["severity"], finding["pointer"]) == (severity, "/pipeline")
    assert (finding["line"], finding["column"]) == marker_position(FOLDER / name, '"pipeline"')
    assert words in finding["message"]
    assert (finding.get("unknown_context") or {}).get("kind") == kind
    assert [r["file"].rsplit("/", 1)[-1] for r in finding.get("related", [])][:1] == ([related] if related else [])


def test_a_pipeline_module_reads_the_section(output):
    assert [f for f in findings_with_code(output, "DS423") if f["file"].endswith("/good.json")] == []


def test_ds307_defers_to_ds423_where_no_pipeline_engine_is_built(tmp_path):
    for name in ("bad.json", "trainer.py"):
        shutil.copy(FOLDER / name, tmp_path / name)
    config = json.loads((FOLDER / "bad.json").read_text())
    config["zero_optimization"]["stage"] = 2
    (tmp_path / "bad.json").write_text(json.dumps(config, indent=2))
    _, found = check_json(str(tmp_path))
    assert [f["code"] for f in found["findings"] if f["code"] in ("DS307", "DS423")] == ["DS423"]
    (tmp_path / "trainer.py").unlink()  # nobody found: the pipeline engine may run, DS307 stands as an info
    _, found = check_json("--min-severity", "info", str(tmp_path))
    assert sorted(f["code"] for f in found["findings"] if f["code"] in ("DS307", "DS423")) == ["DS307", "DS423"]


# --- DeepSpeed as the oracle --------------------------------------------------------------------


def _runnable(config: dict) -> dict:
    config = json.loads(json.dumps(config))
    config.update(train_micro_batch_size_per_gpu=2, gradient_accumulation_steps=1, train_batch_size=2)
    config.setdefault("optimizer", {"type": "AdamW", "params": {"lr": 1e-4}})
    config["pipeline"]["no_such_key"] = "DeepSpeed does not check the section's keys"
    return config


@pytest.mark.oracle
def test_deepspeed_ignores_the_section_for_a_plain_model_and_the_pipeline_engine_refuses_forward():
    import oracles
    from deepspeed_initialize_oracle import engine_outcomes

    oracles.require_installed("deepspeed", "torch")
    cases = {}
    for name in sorted(CASES) + ["good.json"]:
        config = _runnable(json.loads((FOLDER / name).read_text()))
        cases[f"{name}:plain"] = {"config": config, "steps": 1}
        cases[f"{name}:pipe"] = {"config": config, "steps": 1, "pipeline": True}
    outcomes = engine_outcomes(cases)
    for name in sorted(CASES) + ["good.json"]:
        plain, pipe = outcomes[f"{name}:plain"], outcomes[f"{name}:pipe"]
        # a plain model: the plain engine, which trains with the section (and its unknown key) in place
        assert (plain["stage"], plain["engine"], plain["global_steps"]) == (None, "DeepSpeedEngine", 1), plain
        # a PipelineModule: the PipelineEngine, whose forward (what the Trainer and Accelerate call) is refused
        assert pipe["engine"] == "PipelineEngine", pipe
        assert pipe["stage"] == "step" and "Only train_batch() is accessible in pipeline mode." in pipe["error"], pipe


# --- DS308 judged by who reads the file (issue 19) ------------------------------------------------

DS308 = FIXTURES / "deepspeed" / "rules" / "DS308"


def _ds308(*paths) -> list[dict]:
    _, found = check_json("--min-severity", "info", *map(str, paths))
    return [f for f in found["findings"] if f["code"] == "DS308"]


def test_ds308_is_a_warning_when_the_trainer_reads_the_file():
    found = _ds308(DS308 / "bad.json")
    assert [(f["severity"], f.get("unknown_context")) for f in found] == [("warning", None)]


def test_ds308_says_nothing_when_the_script_saves_only_sharded_checkpoints():
    assert _ds308(DS308 / "checkpoint_only") == []


def test_ds308_is_an_info_without_a_consumer_or_behind_a_launcher(tmp_path):
    config = (DS308 / "bad.json").read_text()
    (tmp_path / "alone").mkdir()
    (tmp_path / "alone" / "ds.json").write_text(config)
    found = _ds308(tmp_path / "alone")
    assert [(f["severity"], f["unknown_context"]["kind"]) for f in found] == [("info", "consumer")]
    (tmp_path / "launched").mkdir()
    (tmp_path / "launched" / "ds.json").write_text(config)
    (tmp_path / "launched" / "run.sh").write_text("deepspeed pretrain_gpt.py --deepspeed --deepspeed_config ds.json\n")
    found = _ds308(tmp_path / "launched")
    assert [(f["severity"], f["unknown_context"]["kind"]) for f in found] == [("info", "program")]


# --- DS303 on allgather_partitions (issue 19: no stage reads it) ------------------------------------


def test_ds303_says_no_stage_reads_allgather_partitions(tmp_path):
    path = tmp_path / "ds.json"
    path.write_text(json.dumps({"train_micro_batch_size_per_gpu": 1, "zero_optimization": {
        "stage": 3, "allgather_partitions": True, "allgather_bucket_size": 500000000}}))
    _, found = check_json(str(path))
    messages = {f["pointer"]: f["message"] for f in found["findings"] if f["code"] == "DS303"}
    assert messages["/zero_optimization/allgather_partitions"].startswith("allgather_partitions is read by no ZeRO "
                                                                          "stage")
    assert "only applies at ZeRO stages 1-2" in messages["/zero_optimization/allgather_bucket_size"]


@pytest.mark.oracle
def test_deepspeed_parses_allgather_partitions_and_no_code_uses_it():
    import oracles

    oracles.require_installed("deepspeed")
    import pathlib

    import deepspeed

    root = pathlib.Path(deepspeed.__file__).parent
    users = sorted(str(p.relative_to(root)) for p in root.rglob("*.py")
                   if "allgather_partitions" in p.read_text(encoding="utf-8", errors="replace"))
    # the config field, its accessor on the engine (never called), the autotuner's search space
    assert users == ["autotuning/constants.py", "runtime/engine.py", "runtime/zero/config.py"], users
    engine = (root / "runtime" / "engine.py").read_text(encoding="utf-8")
    assert "zero_allgather_partitions()" not in engine
    assert not any("zero_allgather_partitions" in p.read_text(encoding="utf-8", errors="replace")
                   for p in root.rglob("*.py") if p.name != "engine.py")


# --- DS406 with "weight_decay": "auto" (issue 19: the Trainer's default is 0) ---------------------


def test_ds406_with_auto_weight_decay_is_an_unknown_consumer_info(tmp_path):
    path = tmp_path / "ds.json"
    path.write_text(json.dumps({"train_micro_batch_size_per_gpu": "auto", "optimizer": {
        "type": "Adam", "params": {"lr": "auto", "weight_decay": "auto"}}}))
    _, found = check_json("--min-severity", "info", str(path))
    ds406 = [f for f in found["findings"] if f["code"] == "DS406"]
    assert [(f["severity"], f["unknown_context"]["kind"], f["fix"]) for f in ds406] == [("info", "consumer", '"AdamW"')]


# --- DS307 under Megatron-DeepSpeed: the entry builds a PipelineModule without --no-pipeline-parallel --

MEGATRON_DEEPSPEED = FIXTURES / "deepspeed" / "rules" / "DS307" / "megatron_deepspeed"


def _ds307(folder) -> list[dict]:
    _, found = check_json("--min-severity", "info", str(folder))
    return [f for f in found["findings"] if f["code"] == "DS307"]


def test_ds307_megatron_deepspeed_launch_without_no_pipeline_parallel():
    (finding,) = _ds307(MEGATRON_DEEPSPEED / "bad")
    assert finding["severity"] == "error" and finding["pointer"] == "/zero_optimization/stage"
    assert [(r["file"].rsplit("/", 1)[-1], r["line"]) for r in finding["related"]] == [
        ("run.sh", 4), ("pretrain_gpt.py", 10)]
    assert _ds307(MEGATRON_DEEPSPEED / "good") == []


def test_ds307_megatron_deepspeed_rests_on_the_entry_and_the_arguments(tmp_path):
    """Without the entry script in the tree (or with one that builds no pipeline model), or with
    arguments decided at run time that may hold --no-pipeline-parallel, the finding is an info."""
    missing = tmp_path / "missing"
    shutil.copytree(MEGATRON_DEEPSPEED / "bad", missing)
    (missing / "pretrain_gpt.py").unlink()
    (finding,) = _ds307(missing)
    assert finding["severity"] == "info" and finding["unknown_context"]["kind"] == "program"
    plain = tmp_path / "plain"
    shutil.copytree(MEGATRON_DEEPSPEED / "bad", plain)
    entry = plain / "pretrain_gpt.py"
    entry.write_text(entry.read_text().replace("GPTModelPipe(config", "GPTModel(config"))
    (finding,) = _ds307(plain)
    assert finding["severity"] == "info"
    spliced = tmp_path / "spliced"
    shutil.copytree(MEGATRON_DEEPSPEED / "bad", spliced)
    script = spliced / "run.sh"
    script.write_text(script.read_text().replace("--bf16 \\", "--bf16 $EXTRA_ARGS \\"))
    (finding,) = _ds307(spliced)
    assert finding["severity"] == "info" and "decided at run time" in finding["unknown_context"]["what"]


def _pipeline_setup(tmp_path, script: str | None) -> dict:
    config = {"train_micro_batch_size_per_gpu": 2, "zero_optimization": {"stage": 2},
              "pipeline": {"activation_checkpoint_interval": 1}}
    (tmp_path / "ds.json").write_text(json.dumps(config, indent=2))
    if script is not None:
        (tmp_path / "train.py").write_text(script)
    _, found = check_json("--min-severity", "info", str(tmp_path))
    return {f["code"]: f["severity"] for f in found["findings"] if f["code"] in ("DS307", "DS423")}


TRAINER = ("from transformers import Trainer, TrainingArguments\n"
           "args = TrainingArguments(output_dir='o', deepspeed='ds.json')\ntrainer = Trainer(model=model, args=args)\n")


@pytest.mark.parametrize(("script", "expected"), [
    # the pipeline engine's assertion needs a PipelineModule: only the model's code shows one
    (None, {"DS307": "info", "DS423": "info"}),
    ("import deepspeed\nfrom deepspeed.pipe import PipelineModule\nmodel = PipelineModule(layers=layers, num_stages=2)\n"
     "engine, _, _, _ = deepspeed.initialize(model=model, config='ds.json')\n", {"DS307": "error"}),
    # the Trainer's forward-and-backward loop rules a PipelineModule out: the section is ignored
    (TRAINER, {"DS423": "warning"}),
    # ... unless the script runs its own training step (train_batch on a PipelineModule): undecided
    (TRAINER.replace("trainer = ", "class PipeTrainer(Trainer):\n    def training_step(self, model, inputs):\n"
                     "        return model.train_batch(iter([inputs]))\n\ntrainer = Pipe"),
     {"DS307": "info", "DS423": "info"}),
])
def test_ds307_is_an_error_only_where_a_pipeline_module_is_shown(tmp_path, script, expected):
    assert _pipeline_setup(tmp_path, script) == expected
