"""The DeepSpeed and FSDP2 writers write the meaning of a (resolved) Plan, whatever its source format
(issue 21): the values come from Plan fields, not from switches on the source format; a ds_config
never holds a degree it cannot (TP, PP), and states a batch DeepSpeed accepts or a FILL_IN
placeholder with an `unknown` entry; the FSDP2 module never states a world the source never had;
no writer entry is a blanket "carried through the neutral Plan: no key table" one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shardshift.check import load
from shardshift.formats.deepspeed import writer as deepspeed_writer
from shardshift.formats.fsdp2 import mapping as fsdp2_mapping
from shardshift.formats.fsdp2.writer import settings_from_plan
from shardshift.plan import Scheduler
from shardshift.resolve import PLACEHOLDER

from conftest import FIXTURES, run_cli

TORCHTITAN = """\
[job]
description = "llama 8b"

[training]
local_batch_size = 8
steps = 1000
max_norm = 1.0

[optimizer]
name = "AdamW"
lr = 8e-4

[lr_scheduler]
warmup_steps = 200
decay_type = "cosine"
"""


def _document(tmp_path: Path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    document = load(str(path), explicit=True)
    assert document is not None and document.plan is not None, name
    return document


def _resolved_torchtitan(tmp_path: Path):
    """A torchtitan TOML's Plan as resolution leaves it: torchtitan trains bf16 under FSDP and
    shards fully by default (the fields are set explicitly here, as the defaults table sets them)."""
    document = _document(tmp_path, "train.toml", TORCHTITAN)
    plan = document.plan
    plan.set("precision.param_dtype", "bf16")
    plan.set("sharding.stage", 3)
    plan.set("batch.accumulation", 1)
    plan.set("scheduler.total_steps", 1000)
    return document


def _read_back(text: str, name: str, tmp_path: Path):
    out = tmp_path / "out" / name
    out.parent.mkdir(exist_ok=True)
    out.write_text(text, encoding="utf-8")
    document = load(str(out), explicit=True)
    assert document is not None and document.plan is not None
    return document.plan


# --- ds_config from another framework ---------------------------------------------------------


def test_a_bf16_fully_sharded_plan_becomes_a_bf16_zero3_ds_config(tmp_path):
    conversion = deepspeed_writer.convert(_resolved_torchtitan(tmp_path))
    config = json.loads(conversion.text)
    assert config["bf16"] == {"enabled": True}
    assert config["zero_optimization"]["stage"] == 3
    assert config["gradient_clipping"] == 1.0
    assert config["train_micro_batch_size_per_gpu"] == 8 and config["gradient_accumulation_steps"] == 1
    assert "train_batch_size" not in config  # no world: DeepSpeed computes it from the world it meets
    assert config["optimizer"] == {"type": "AdamW", "params": {"lr": 8e-4}}
    # torchtitan's cosine decay is DeepSpeed's WarmupCosineLR, over the run's steps
    assert config["scheduler"]["type"] == "WarmupCosineLR"
    assert config["scheduler"]["params"]["total_num_steps"] == 1000
    assert config["scheduler"]["params"]["warmup_num_steps"] == 200
    plan = _read_back(conversion.text, "ds_config.json", tmp_path)
    assert (plan.precision.param_dtype, plan.sharding.stage) == ("bf16", 3)


def test_no_batch_size_becomes_the_placeholder_with_an_unknown_entry(tmp_path):
    document = _document(tmp_path, "accelerate_config.yaml",
                         "compute_environment: LOCAL_MACHINE\ndistributed_type: FSDP\nmixed_precision: bf16\n"
                         "num_processes: 8\n")
    conversion = deepspeed_writer.convert(document)
    config = json.loads(conversion.text)
    assert config["train_micro_batch_size_per_gpu"] == PLACEHOLDER
    (entry,) = [e for e in conversion.entries if e.target == "/train_micro_batch_size_per_gpu"]
    assert entry.status == "unknown" and entry.reason.startswith(f"placeholder {PLACEHOLDER}: fill in")
    assert (entry.source, entry.line, entry.column) == ("", 1, 1)


def test_strict_fails_on_the_placeholder(tmp_path):
    source = tmp_path / "accelerate_config.yaml"
    source.write_text("distributed_type: FSDP\nmixed_precision: bf16\nnum_processes: 8\n", encoding="utf-8")
    done = run_cli("convert", str(source), "--to", "deepspeed", "--strict")
    assert done.returncode != 0
    assert PLACEHOLDER in done.stdout


def test_a_decay_without_a_length_is_a_placeholder_not_an_invented_length(tmp_path):
    document = _resolved_torchtitan(tmp_path)
    document.plan.scheduler.total_steps = None
    conversion = deepspeed_writer.convert(document)
    config = json.loads(conversion.text)
    assert config["scheduler"]["params"]["total_num_steps"] == PLACEHOLDER
    assert [e.status for e in conversion.entries if e.target == "/scheduler/params/total_num_steps"] == ["unknown"]


def test_a_schedule_deepspeed_has_none_like_is_not_invented(tmp_path):
    document = _resolved_torchtitan(tmp_path)
    document.plan.scheduler = Scheduler(name="sqrt", warmup_steps=200)
    config = json.loads(deepspeed_writer.convert(document).text)
    assert "scheduler" not in config


def test_tensor_and_pipeline_degrees_are_not_written_into_a_ds_config(tmp_path):
    document = _resolved_torchtitan(tmp_path)
    document.plan.set("parallelism.tensor", 2)
    document.plan.set("parallelism.pipeline", 2)
    config = json.loads(deepspeed_writer.convert(document).text)
    assert "tensor_parallel" not in config and "pipeline" not in config


@pytest.mark.parametrize(("world", "micro", "steps", "train", "written"), [
    (8, 2, 4, 64, True),      # 2 x 4 x 8 = 64: DeepSpeed's check holds
    (8, 2, 4, 32, False),     # it does not: DeepSpeed would refuse the config
    (None, 2, None, 64, True),  # no world, no accumulation: DeepSpeed derives it, the global batch stays
    (None, 2, 4, 64, False),  # no world to check the triple against
    (None, None, None, 64, True),  # the only batch stated
])
def test_train_batch_size_only_where_deepspeed_accepts_it(tmp_path, world, micro, steps, train, written):
    document = _resolved_torchtitan(tmp_path)
    plan = document.plan
    plan.batch.micro, plan.batch.accumulation, plan.batch.global_ = micro, steps, train
    plan.world.world_size = world
    conversion = deepspeed_writer.convert(document)
    config = json.loads(conversion.text)
    assert ("train_batch_size" in config) is written
    dropped = [e for e in conversion.entries if e.target == "/train_batch_size"]
    assert bool(dropped) is (not written and micro is not None)


def test_tensor_parallelism_counts_in_the_data_parallel_size(tmp_path):
    document = _resolved_torchtitan(tmp_path)
    plan = document.plan
    plan.world.world_size, plan.parallelism.tensor = 8, 2
    plan.batch.micro, plan.batch.accumulation, plan.batch.global_ = 2, 4, 32  # 2 x 4 x (8 / 2)
    assert json.loads(deepspeed_writer.convert(document).text)["train_batch_size"] == 32


# --- the FSDP2 module from another framework ---------------------------------------------------


MEGATRON_2_GPUS = ("torchrun --nproc_per_node 2 pretrain_gpt.py --micro-batch-size 4 --global-batch-size 128 "
                   "--bf16 --lr 1e-4 --min-lr 1e-5 --train-iters 1000 --lr-decay-style linear --num-layers 2\n")


def test_a_two_gpu_megatron_script_gives_a_module_for_two_processes(tmp_path):
    document = _document(tmp_path, "run.sh", MEGATRON_2_GPUS)
    conversion = fsdp2_mapping.convert(document)
    module = conversion.text
    assert "WORLD_SIZE = 2 " in module and "--nproc-per-node=2 " in module
    assert "WORLD_SIZE = 32" not in module and "nproc-per-node=32" not in module  # 128 / 4 with accumulation 1
    assert "migrated from run.sh" in module and "ds_config.json" not in module
    assert "PARAM_DTYPE = torch.bfloat16" in module
    assert "def warmup_decay_lr(" in module and '"total_num_steps": 1000' in module  # Megatron's linear decay
    # the explanations of megatron/mapping.py stay: why TP or the model shape have no FSDP2 counterpart
    entries = {e.source: e for e in conversion.entries}
    assert entries["--num-layers"].status == "dropped"
    # a flag of the same meaning needs no explanation; the measured report finds it kept
    from shardshift import api

    measured = {e.source: e for e in api.convert(document.path, "fsdp2").entries}
    assert measured["--bf16"].status == "exact" and measured["--num-layers"].status == "dropped"


def test_a_megatron_argument_list_without_a_world_states_none(tmp_path):
    document = _document(tmp_path, "train.args", "--micro-batch-size 4\n--global-batch-size 128\n--bf16\n"
                                                 "--num-layers 2\n")
    module = fsdp2_mapping.convert(document).text
    assert "WORLD_SIZE = None" in module
    assert "--nproc-per-node=<GPUs per node>" in module
    assert "train.args states no process count: setup() takes the world from torchrun" in module


def test_the_module_takes_the_world_at_run_time_when_the_plan_has_none(tmp_path):
    document = _document(tmp_path, "train.args", "--micro-batch-size 4\n--global-batch-size 128\n--num-layers 2\n")
    module = fsdp2_mapping.convert(document).text
    namespace: dict = {}
    exec(compile(module, "fsdp2_setup.py", "exec"), namespace)  # noqa: S102 - the module shardshift wrote
    assert namespace["WORLD_SIZE"] is None
    assert namespace["gradient_accumulation_steps"](2) == 16  # 128 / (4 x 2): the accumulation follows the world
    assert namespace["gradient_accumulation_steps"](8) == 4


def test_a_bf16_fully_sharded_plan_becomes_a_bf16_fully_sharded_module(tmp_path):
    conversion = fsdp2_mapping.convert(_resolved_torchtitan(tmp_path))
    module = conversion.text
    assert "PARAM_DTYPE = torch.bfloat16" in module and "RESHARD_AFTER_FORWARD = True" in module
    assert "GRADIENT_CLIPPING = 1.0" in module and "GRADIENT_ACCUMULATION_STEPS = 1 " in module
    assert "migrated from train.toml" in module and "ds_config.json" not in module
    assert "def warmup_cosine_lr_ratio(" in module
    plan = _read_back(module, "fsdp2_setup.py", tmp_path)
    assert plan.precision.param_dtype == "bf16"


def test_settings_come_from_the_plan_not_from_the_source_format(tmp_path):
    """A Plan with DeepSpeed's values (stage 0, fp32, clipping 1.0) set explicitly gives the same
    settings as the ds_config itself: the values are the Plan's, not a DeepSpeed switch's."""
    from shardshift.formats import deepspeed

    ds_plan = deepspeed.read(json.dumps({"train_micro_batch_size_per_gpu": 2}), "ds_config.json").plan
    from_ds = settings_from_plan(ds_plan, deepspeed=True)
    document = _document(tmp_path, "train.args", "--micro-batch-size 2\n--num-layers 2\n")
    plan = document.plan
    plan.set("sharding.stage", 0)
    plan.set("precision.param_dtype", "fp32")
    plan.set("gradient_clipping", 1.0)
    neutral = settings_from_plan(plan)
    for name in ("stage", "reshard_after_forward", "param_dtype", "gradient_clipping", "micro_batch_size"):
        assert getattr(neutral, name) == getattr(from_ds, name), name
    plan.set("sharding.stage", 2)
    plan.set("precision.param_dtype", "bf16")
    changed = settings_from_plan(plan)
    assert (changed.stage, changed.reshard_after_forward, changed.param_dtype) == (2, False, "bf16")


# --- no blanket entries --------------------------------------------------------------------------


def _fixture_files():
    seen: dict[str, int] = {}
    for path in sorted(FIXTURES.rglob("*")):
        if not path.is_file() or path.suffix not in (".json", ".yaml", ".yml", ".toml", ".sh", ".args", ".py"):
            continue
        document = load(str(path), explicit=False)
        if document is None or document.plan is None or document.syntax is not None:
            continue
        if seen.get(document.format, 0) >= 6 or document.format == "deepspeed":
            continue
        seen[document.format] = seen.get(document.format, 0) + 1
        yield document


@pytest.mark.parametrize("target", ["deepspeed", "fsdp2"])
def test_no_blanket_entries_over_fixtures_of_every_format(target):
    writer = deepspeed_writer if target == "deepspeed" else fsdp2_mapping
    formats = set()
    for document in _fixture_files():
        formats.add(document.format)
        conversion = writer.convert(document)
        blankets = [e for e in conversion.entries
                    if "key table" in e.reason or "carried through the neutral Plan" in e.reason]
        assert not blankets, (document.path, blankets[:2])
        for entry in conversion.entries:  # what is left explains: a placeholder, a note, a Megatron flag
            assert entry.reason, (document.path, entry)
    assert {"accelerate", "axolotl", "fsdp2", "launch", "megatron", "plan", "torchtitan"} <= formats


def test_a_degree_the_target_cannot_hold_is_explained_at_its_source_setting(tmp_path):
    document = _document(tmp_path, "run.plan.yaml", "world:\n  world_size: 16\nparallelism:\n  tensor: 2\n"
                                                    "  pipeline: 2\nbatch:\n  micro: 2\n")
    ds = {e.source: e for e in deepspeed_writer.convert(document).entries}
    assert ds["/parallelism/tensor"].status == "dropped" and "model code" in ds["/parallelism/tensor"].reason
    assert ds["/parallelism/tensor"].line == 4
    assert ds["/world/world_size"].status == "dropped" and "launcher" in ds["/world/world_size"].reason
    module = fsdp2_mapping.convert(document)
    fsdp2 = {e.source: e for e in module.entries}
    assert fsdp2["/parallelism/pipeline"].status == "dropped"
    assert "/world/world_size" not in fsdp2 and "WORLD_SIZE = 16 " in module.text  # the module holds the world


def test_a_batch_triple_implies_the_world_only_when_the_source_states_it(tmp_path):
    from shardshift.resolve import default_location

    document = _document(tmp_path, "train.args", "--micro-batch-size 4\n--global-batch-size 128\n--num-layers 2\n")
    plan = document.plan
    plan.set("batch.accumulation", 4)
    assert settings_from_plan(plan).world_size == 8  # 128 = 4 x 4 x 8: no other world trains this batch
    plan.set("batch.accumulation", 1, default_location(document.path, "megatron", None))
    assert settings_from_plan(plan).world_size is None  # a default accumulation fixes no world
