"""`deepspeed.initialize` (CPU, one rank; tests/deepspeed_initialize_oracle.py) on ds_configs the
DeepSpeed writer wrote from other frameworks' Plans: DeepSpeed builds the engine the Plan means
(ZeRO stage, bf16, the schedule of the same shape, the batch), and a config it refuses is refused
only for the FILL_IN placeholders its report names as `unknown` (filled in, DeepSpeed accepts it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shardshift.check import load
from shardshift.formats.deepspeed import writer
from shardshift.resolve import PLACEHOLDER

import oracles

pytestmark = pytest.mark.oracle

TORCHTITAN = ('[training]\nlocal_batch_size = 2\nsteps = 100\nmax_norm = 1.0\n[optimizer]\nname = "AdamW"\n'
              'lr = 8e-4\n[lr_scheduler]\nwarmup_steps = 10\ndecay_type = "cosine"\n')
MEGATRON = ("torchrun --nproc_per_node 1 pretrain_gpt.py --micro-batch-size 2 --global-batch-size 8 --lr 1e-3 "
            "--min-lr 1e-4 --train-iters 100 --lr-warmup-iters 10 --lr-decay-style linear --num-layers 2\n")
ACCELERATE = "distributed_type: FSDP\nmixed_precision: bf16\nnum_processes: 1\n"


def _conversion(tmp_path: Path, name: str, text: str, **fields):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    document = load(str(path), explicit=True)
    for dotted, value in fields.items():  # as resolution fills them (the source framework's defaults)
        document.plan.set(dotted.replace("__", "."), value)
    return writer.convert(document)


def _filled(config: dict) -> dict:
    """The config with every placeholder filled in with a value DeepSpeed takes."""
    text = json.dumps(config).replace(f'"{PLACEHOLDER}"', "2")
    return json.loads(text)


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    oracles.require_installed("deepspeed", "torch")
    import deepspeed_initialize_oracle

    tmp_path = tmp_path_factory.mktemp("meaning")
    conversions = {
        "torchtitan": _conversion(tmp_path, "train.toml", TORCHTITAN, precision__param_dtype="bf16",
                                  sharding__stage=3, batch__accumulation=1, scheduler__total_steps=100),
        "megatron": _conversion(tmp_path, "run.sh", MEGATRON),
        "accelerate": _conversion(tmp_path, "accelerate_config.yaml", ACCELERATE, sharding__stage=3),
    }
    cases = {}
    for name, conversion in conversions.items():
        config = json.loads(conversion.text)
        # a config with no optimizer trains the one the script passes (Accelerate's case)
        client = "optimizer" not in config
        cases[name] = {"config": config, "steps": 2, "probe": [0, 50, 99], "client_optimizer": client}
        cases[name + "-filled"] = {"config": _filled(config), "steps": 2, "client_optimizer": client}
    return conversions, deepspeed_initialize_oracle.engine_outcomes(cases)


def test_a_torchtitan_plan_becomes_the_engine_it_means(outcomes):
    _, results = outcomes
    engine = results["torchtitan"]
    assert engine["error"] is None, engine["error"]
    assert (engine["zero_stage"], engine["bf16"], engine["gradient_clipping"]) == (3, True, 1.0)
    assert engine["scheduler"] == "WarmupCosineLR" and engine["micro_batch"] == 2
    assert engine["lrs"]["99"] < engine["lrs"]["50"] < 8e-4  # cosine decay over the run's 100 steps


def test_a_megatron_linear_decay_becomes_warmup_decay_lr(outcomes):
    _, results = outcomes
    engine = results["megatron"]
    assert engine["error"] is None, engine["error"]
    assert engine["scheduler"] == "WarmupDecayLR"
    assert (engine["train_batch_size"], engine["micro_batch"], engine["gradient_accumulation_steps"]) == (8, 2, 4)
    assert engine["lrs"]["99"] < engine["lrs"]["50"] <= 1e-3


def test_a_refused_config_is_refused_only_for_its_named_placeholders(outcomes):
    conversions, results = outcomes
    for name, conversion in conversions.items():
        placeholders = [e for e in conversion.entries if e.status == "unknown" and PLACEHOLDER in e.reason]
        if results[name]["error"] is not None:
            assert placeholders, (name, results[name]["error"])
        assert results[name + "-filled"]["error"] is None, (name, results[name + "-filled"]["error"])
    assert results["accelerate"]["error"] is not None  # no batch size: DeepSpeed refuses FILL_IN
    assert [e.target for e in conversions["accelerate"].entries if e.status == "unknown"] == [
        "/train_micro_batch_size_per_gpu"]
