"""Emitted FSDP2 modules train under torchrun on the CPU (gloo, 2 ranks), and their learning rate
after every optimizer step is what DeepSpeed's own scheduler gives for the same config.

Cases: every ds_config fixture that DeepSpeed accepts and FSDP2 can express, plus one corpus file
per distinct (stage, precision, offload, optimizer, scheduler) combination; "auto" filled with
plausible numbers and the batch fitted to 2 ranks first (fsdp2_harness/configs.py). All modules
run in ONE torchrun launch (a launch costs 10-20 s): the driver imports each in turn.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT
from fsdp2_harness.configs import close, deepspeed_lrs, fill_auto, fit_to_world, load, migration_cases

pytestmark = pytest.mark.oracle
pytest.importorskip("torch")
pytest.importorskip("deepspeed")

OPTIMIZER_STEPS = 3
CASES, SKIPPED = migration_cases()
# Hybrid sharding (HSDP) comes from MiCS, which DeepSpeed 0.19.8 removed (it rejects mics_shard_size);
# configs written for older DeepSpeed still carry it, so the HSDP module runs too.
HSDP = "fsdp2/migrate/zero3_mics_hybrid.json"
CASES.append((HSDP, fit_to_world(fill_auto(load(ROOT / "fixtures" / HSDP)))))
DRIVER = ROOT / "tests" / "fsdp2_harness" / "driver.py"


def _module_name(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    from shardshift.formats import deepspeed, fsdp2

    directory = tmp_path_factory.mktemp("fsdp2_modules")
    jobs = []
    for name, config in CASES:
        document = deepspeed.read(json.dumps(config), name.rsplit("/", 1)[-1])
        path = directory / f"{_module_name(name)}.py"
        path.write_text(fsdp2.convert(document).text)
        jobs.append({"name": name, "module": str(path), "optimizer_steps": OPTIMIZER_STEPS})
    (directory / "jobs.json").write_text(json.dumps(jobs))
    torchrun = shutil.which("torchrun") or sys.executable
    prefix = [torchrun] if torchrun.endswith("torchrun") else [sys.executable, "-m", "torch.distributed.run"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    done = subprocess.run([*prefix, "--standalone", "--nproc-per-node=2", str(DRIVER), str(directory / "jobs.json"),
                           str(directory / "results.json")], capture_output=True, text=True, timeout=1500, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((directory / "results.json").read_text())


def test_cases_cover_fixtures_and_corpus_combinations():
    names = [name for name, _ in CASES]
    assert any(n.startswith("fsdp2/migrate/") for n in names)
    assert len([n for n in names if n.startswith("fsdp2/migrate/")]) == len(list((ROOT / "fixtures/fsdp2/migrate").glob("*.json")))
    skipped = dict(SKIPPED)
    for reason in skipped.values():
        assert reason  # every left-out config says why
    assert "MiCS" in skipped[HSDP]
    assert not any(name in skipped for name in names if name != HSDP)


@pytest.mark.parametrize("name,config", CASES, ids=[name for name, _ in CASES])
def test_trains_with_deepspeed_learning_rates(name, config, trained):
    result = trained[name]
    assert result.get("error") is None, result.get("error")
    assert result["finite"], result["losses"]
    assert len(result["losses"]) == OPTIMIZER_STEPS
    assert result["accumulation"] == config["gradient_accumulation_steps"]
    expected, betas = deepspeed_lrs(config, OPTIMIZER_STEPS)
    for step, (lr, applied) in enumerate(zip(result["lrs"], result["applied"])):
        # after `applied` scheduler steps (DeepSpeed skips the scheduler on overflow steps too)
        assert close(lr, expected[applied]), (step, lr, expected[: OPTIMIZER_STEPS + 1])
    if (config.get("scheduler") or {}).get("type") == "OneCycle" and result["betas"][0] is not None:
        for got, applied in zip(result["betas"], result["applied"]):
            assert all(close(a, b) for a, b in zip(got, expected_betas(betas, applied)))


def expected_betas(betas, applied):
    return list(betas[applied])
