"""The Megatron writers (`--to megatron`, `--to megatron-args`) translating another framework's Plan (issue 21):
they write its meaning (the LR schedule of the same shape, a constant LR when the source has no schedule, the
global batch from the batch triple), hold no world size in an argument list, write FILL_IN placeholders for what
Megatron requires and the Plan cannot supply, and give no blanket report entries. A Megatron source written back
invents nothing. (Megatron's own verdict on such lists: tests/test_megatron_writer_placeholders_oracle.py.)"""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from shardshift import api
from shardshift.formats.megatron import mapping, read
from shardshift.formats.megatron.writer import emit, write, write_arguments
from shardshift.plan import Plan
from shardshift.resolve import PLACEHOLDER, default_location
from shardshift.source import Location

from conftest import FIXTURES


def _pairs(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        words = line.split()
        if words and words[0].startswith("--"):
            out[words[0]] = " ".join(words[1:])
    return out


def _convert(tmp_path, name: str, data, to: str = "megatron-args"):
    path = tmp_path / name
    path.write_text(json.dumps(data) if isinstance(data, dict) else data)
    return api.convert(str(path), to)


def _entries(migration) -> dict[str, object]:
    return {e.source: e for e in migration.entries if e.source}


def test_warmup_decay_becomes_linear_decay_from_the_schedules_own_peak(tmp_path):
    migration = _convert(tmp_path, "ds_config.json", {
        "train_micro_batch_size_per_gpu": 2,
        "optimizer": {"type": "AdamW", "params": {"lr": 1e-3}},
        "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_min_lr": 1e-6, "warmup_max_lr": 3e-4,
                                                          "warmup_num_steps": 100, "total_num_steps": 1000}}})
    written = _pairs(migration.text)
    assert (written["--lr-decay-style"], written["--lr"], written["--lr-warmup-iters"], written["--lr-decay-iters"],
            written["--min-lr"], written["--lr-warmup-init"]) == ("linear", "0.0003", "100", "1000", "1e-06", "1e-06")
    entries = _entries(migration)
    style = entries["/scheduler/type"]
    # another framework's schedule of the same shape, and DeepSpeed's log warmup (its default) is not Megatron's
    assert style.status == "approximate" and "logarithmically" in style.reason
    peak = entries["/scheduler/params/warmup_max_lr"]
    assert peak.target == "--lr" and "not at the optimizer's lr 0.001" in peak.reason


def test_warmup_cosine_decays_to_cos_min_ratio_times_lr(tmp_path):
    migration = _convert(tmp_path, "ds_config.json", {
        "train_micro_batch_size_per_gpu": 2, "optimizer": {"type": "AdamW", "params": {"lr": 2e-4}},
        "scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 500, "warmup_num_steps": 50,
                                                           "warmup_type": "linear"}}})
    written = _pairs(migration.text)
    assert written["--lr-decay-style"] == "cosine" and written["--lr"] == "0.0002"
    assert float(written["--min-lr"]) == pytest.approx(2e-4 * 0.0001)  # DeepSpeed's default cos_min_ratio
    assert "logarithmically" not in _entries(migration)["/scheduler/type"].reason  # a linear warmup here


def test_a_ds_config_without_a_scheduler_keeps_its_lr_constant_not_megatrons_linear_decay(tmp_path):
    migration = _convert(tmp_path, "ds_config.json", {"train_micro_batch_size_per_gpu": 2,
                                                      "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}})
    assert _pairs(migration.text)["--lr-decay-style"] == "constant"
    # a file that states no optimizer leaves the schedule to the training code: nothing is written
    accelerate = _convert(tmp_path, "accelerate_config.yaml", "compute_environment: LOCAL_MACHINE\n"
                          "distributed_type: MULTI_GPU\nmixed_precision: bf16\nnum_machines: 1\nnum_processes: 8\n")
    assert "--lr-decay-style" not in accelerate.text and "--bf16" in accelerate.text


def test_torchtitan_decay_shapes_become_wsd():
    plan = Plan()
    plan.set("optimizer.lr", 1e-3)
    plan.set("scheduler.name", "sqrt")
    plan.set("scheduler.warmup_steps", 10)
    plan.set("scheduler.total_steps", 110)
    written = _pairs(write_arguments(plan, translate=True))
    assert (written["--lr-decay-style"], written["--lr-wsd-decay-style"], written["--lr-wsd-decay-iters"]) == \
        ("WSD", "minus_sqrt", "100")
    plan.scheduler.params = {"decay_ratio": 0.2}
    plan.scheduler.name = "cosine"
    written = _pairs(write_arguments(plan, translate=True))
    assert (written["--lr-decay-style"], written["--lr-wsd-decay-style"], written["--lr-wsd-decay-iters"]) == \
        ("WSD", "cosine", "22")
    plan.scheduler.total_steps = None  # torchtitan's training.steps: not in the Plan, so a placeholder
    emitted, _ = emit(plan, translate=True)
    wsd = next(e for e in emitted if e.flag == "--lr-wsd-decay-iters")
    assert wsd.values == (PLACEHOLDER,) and "0.2 ×" in wsd.fill


def test_an_argument_list_holds_no_world_size_and_says_so(tmp_path):
    text = ("compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nmixed_precision: bf16\n"
            "num_machines: 2\nnum_processes: 16\n")
    migration = _convert(tmp_path, "accelerate_config.yaml", text)
    entries = _entries(migration)
    for key in ("/num_processes", "/num_machines"):
        assert entries[key].status == "dropped" and "has no launcher" in entries[key].reason
    assert not any(w in ("16", "8") for w in migration.text.split())
    script = _convert(tmp_path, "accelerate_config.yaml", text, to="megatron")
    assert "NNODES=2" in script.text and "GPUS_PER_NODE=8" in script.text
    assert _entries(script)["/num_processes"].status == "exact"


def test_the_global_batch_comes_from_the_resolved_triple():
    plan = Plan()
    plan.set("world.world_size", 16)
    plan.set("parallelism.tensor", 2)
    plan.set("batch.micro", 2)
    plan.set("batch.accumulation", 4, default_location("x", "deepspeed", (0, 19, 8)))
    assert _pairs(write_arguments(plan, translate=True))["--global-batch-size"] == str(2 * 4 * 16 // 2)
    plan.world.world_size = None  # unknown world, accumulation 1: Megatron's own default global batch is the same
    plan.batch.accumulation = 1
    assert "--global-batch-size" not in write_arguments(plan, translate=True)


def test_zero_0_is_megatrons_default_and_zero_1_the_distributed_optimizer():
    plan = Plan()
    plan.set("sharding.stage", 0, default_location("x", "deepspeed", (0, 19, 8)))
    emitted, _ = emit(plan, translate=True)
    assert not any(e.flag == "--use-distributed-optimizer" for e in emitted)
    assert any(e.field == "sharding.stage" and "ZeRO-0" in e.reason for e in emitted)
    plan.sharding.stage = 1
    assert "--use-distributed-optimizer" in write_arguments(plan, translate=True)


def test_the_launch_script_marks_each_placeholder_with_a_comment_and_is_valid_bash(tmp_path):
    migration = _convert(tmp_path, "ds_config.json", {"train_micro_batch_size_per_gpu": 2, "bf16": {"enabled": True}},
                         to="megatron")
    lines = migration.text.splitlines()
    placed = [i for i, line in enumerate(lines) if PLACEHOLDER in line and line.strip().startswith("--")]
    assert {lines[i].split()[0] for i in placed} == {"--num-layers", "--hidden-size", "--num-attention-heads",
                                                     "--seq-length", "--max-position-embeddings"}
    assert all(lines[i - 1].strip().startswith("# shardshift: fill in ") for i in placed)
    placeholders = {e.target for e in migration.entries if e.source == "" and e.status == "unknown"}
    assert placeholders == {lines[i].split()[0] for i in placed}
    if shutil.which("bash"):
        script = tmp_path / "train.sh"
        script.write_text(migration.text)
        assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0
    back = read(migration.text, str(tmp_path / "train.sh"))
    assert back.syntax is None and back.plan.precision.param_dtype == "bf16" and back.plan.batch.micro == 2


def test_no_blanket_entries_for_another_formats_settings(tmp_path):
    migration = _convert(tmp_path, "ds_config.json", {"train_micro_batch_size_per_gpu": 2, "steps_per_print": 10,
                                                      "wall_clock_breakdown": False})
    reasons = [e.reason for e in migration.entries]
    assert not any("no Megatron counterpart" in r or "carried through" in r or "has no flag for" in r
                   for r in reasons), reasons
    # every setting has an entry: the measured report's, not a writer's explanation
    steps = _entries(migration)["/steps_per_print"]
    assert steps.status == "dropped" and "sets nothing shardshift's Plan holds" in steps.reason


def test_a_megatron_source_written_back_invents_nothing(tmp_path):
    source = tmp_path / "run.sh"
    source.write_text("torchrun --nproc_per_node 8 pretrain_gpt.py --micro-batch-size 2 --lr 1e-4\n")
    migration = api.convert(str(source), "megatron-args")
    assert PLACEHOLDER not in migration.text and "--lr-decay-style" not in migration.text
    assert {e.source: e.reason for e in migration.entries}["--lr"] == "the flag of the same meaning"
    assert write_arguments(read(source.read_text(), str(source)).plan) == migration.text


def test_mapping_explains_only_what_needs_a_reason(tmp_path):
    source = tmp_path / "run.sh"
    source.write_text("torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2 --micro-batch-size 2 "
                      "--bf16 --lr 1e-4 --lr-decay-style cosine --min-lr 1e-5 --use-distributed-optimizer\n")
    document = read(source.read_text(), str(source))
    explained = {e.source: e for e in mapping.explain(document, "deepspeed")}
    assert explained["--tensor-model-parallel-size"].status == "dropped"
    assert "model code" in explained["--tensor-model-parallel-size"].reason
    assert explained["--lr-decay-style"].status == "approximate"
    assert explained["--lr-decay-style"].reason == mapping._SCHEDULES["cosine"][1]
    assert explained["--use-distributed-optimizer"].reason.endswith("ZeRO-1")
    assert "--bf16" not in explained and "--lr" not in explained  # the key of the same meaning: nothing to say
    # the conversion gives the text and an entry for every flag
    conversion = api.convert(str(source), "deepspeed")
    assert json.loads(conversion.text)["scheduler"]["type"] == "WarmupCosineLR"
    assert {g.spelling for g in document.data.given} <= {e.source for e in conversion.entries}


def test_fixture_conversions_write_bf16_or_fp16_explicitly():
    for name, flag in (("zero2_bf16_adamw.json", "--bf16"), ("zero3_offload_fp16.jsonc.json", "--fp16")):
        assert flag in _pairs(api.convert(str(FIXTURES / "deepspeed" / name), "megatron-args").text)
    assert write(Plan(), translate=True).count(PLACEHOLDER) == 6  # an empty Plan: every required flag
    plan = Plan()
    plan.set("model.layers", 4, Location("x", 1, 1, "/layers"))
    assert "--num-layers 4" in write_arguments(plan, translate=True)


def test_an_expert_parallel_run_asks_for_the_number_of_experts(tmp_path):
    """validate_args: "num_experts must be non None to use expert model parallelism"; the Plan holds no
    number of experts (the model's), so it is a placeholder the report names."""
    migration = _convert(tmp_path, "train.toml", "[parallelism]\nexpert_parallel_degree = 4\n", "megatron-args")
    written = _pairs(migration.text)
    assert written["--expert-model-parallel-size"] == "4" and written["--num-experts"] == PLACEHOLDER
    entry = next(e for e in migration.entries if e.target == "--num-experts")
    assert entry.status == "unknown" and "expert-parallel size 4" in entry.reason
    # without expert parallelism, nothing is asked
    plain = _convert(tmp_path, "plain.toml", "[parallelism]\ntensor_parallel_degree = 2\n", "megatron-args")
    assert "--num-experts" not in plain.text
