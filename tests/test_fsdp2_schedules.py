"""The emitted module's LR scheduler equals DeepSpeed's own scheduler class, to 1e-12 relative,
without torchrun: build_optimizer/build_scheduler of the emitted module on a CPU parameter,
against deepspeed.runtime.lr_schedules on a torch optimizer. Stepped one by one through the
first steps, then at sampled iterations up to past the end of the schedule."""

from __future__ import annotations

import importlib.util
import json
import os

import pytest

from fsdp2_harness.configs import close, deepspeed_lrs, migration_cases

pytestmark = pytest.mark.oracle
torch = pytest.importorskip("torch")
pytest.importorskip("deepspeed")

ADAMW = {"type": "AdamW", "params": {"lr": 3e-4, "weight_decay": 0.01}}
SGD = {"type": "SGD", "params": {"lr": 0.1, "momentum": 0.9}}


def case(scheduler_type: str, optimizer=ADAMW, **params):
    return {"train_micro_batch_size_per_gpu": 1, "optimizer": optimizer,
            "scheduler": {"type": scheduler_type, "params": params}}


# name -> ds_config: every schedule type, both warmup types, the edge cases of each formula.
TABLE = {
    "warmup_log_default": case("WarmupLR"),
    "warmup_linear": case("WarmupLR", warmup_min_lr=1e-5, warmup_max_lr=1e-3, warmup_num_steps=50,
                          warmup_type="linear"),
    "warmup_one_step": case("WarmupLR", warmup_num_steps=1, warmup_max_lr=2e-4),
    "warmup_unknown_type": case("WarmupLR", warmup_num_steps=20, warmup_type="Linear"),
    "warmup_max_from_optimizer": case("WarmupLR", warmup_num_steps=30),
    "decay_log": case("WarmupDecayLR", total_num_steps=400, warmup_num_steps=100),
    "decay_default_max_lr": case("WarmupDecayLR", total_num_steps=50, warmup_num_steps=10),
    "decay_linear_min": case("WarmupDecayLR", total_num_steps=300, warmup_num_steps=30, warmup_min_lr=1e-6,
                             warmup_max_lr=5e-4, warmup_type="linear"),
    "decay_total_below_warmup": case("WarmupDecayLR", total_num_steps=20, warmup_num_steps=50),
    "cosine_default": case("WarmupCosineLR", total_num_steps=2000),
    "cosine_linear": case("WarmupCosineLR", total_num_steps=300, warmup_num_steps=20, warmup_min_ratio=0.1,
                          cos_min_ratio=0.05, warmup_type="linear"),
    "cosine_total_below_warmup": case("WarmupCosineLR", total_num_steps=10, warmup_num_steps=40),
    "one_cycle_adam": case("OneCycle", cycle_min_lr=1e-4, cycle_max_lr=1e-3, cycle_first_step_size=40,
                           cycle_second_step_size=60, decay_step_size=10, decay_lr_rate=0.1, decay_mom_rate=0.05),
    "one_cycle_stairs": case("OneCycle", cycle_min_lr=1e-4, cycle_max_lr=1e-3, cycle_first_step_size=30,
                             cycle_first_stair_count=4, cycle_second_stair_count=3, cycle_second_step_size=45),
    "one_cycle_no_decay": case("OneCycle", cycle_min_lr=1e-5, cycle_max_lr=1e-4, cycle_first_step_size=25),
    "one_cycle_sgd": case("OneCycle", optimizer=SGD, cycle_min_lr=0.01, cycle_max_lr=0.1, cycle_first_step_size=20,
                          decay_step_size=5, decay_lr_rate=0.2),
    "range_continuous": case("LRRangeTest", lr_range_test_min_lr=1e-4, lr_range_test_step_size=7,
                             lr_range_test_step_rate=2.5),
    "range_staircase": case("LRRangeTest", lr_range_test_staircase=True, lr_range_test_step_size=5),
    "torch_cosine": case("CosineAnnealingLR", T_max=100, eta_min=1e-6),
    "torch_step": case("StepLR", optimizer=SGD, step_size=30, gamma=0.5),
}
FROM_CONFIGS = {name: config for name, config in migration_cases()[0] if config.get("scheduler")}


def emitted(config: dict, tmp_path):
    from shardshift.formats import deepspeed, fsdp2

    text = fsdp2.convert(deepspeed.read(json.dumps(config), "ds_config.json")).text
    path = tmp_path / "fsdp2_setup.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(f"fsdp2_setup_{abs(hash(text))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _span(config: dict) -> int:
    params = config["scheduler"]["params"]
    numbers = [v for k, v in params.items() if isinstance(v, int) and not isinstance(v, bool) and "step" in k]
    return max([20, *numbers]) * 2 + 10


@pytest.mark.parametrize("name", sorted(TABLE) + sorted(FROM_CONFIGS))
def test_learning_rate_matches_deepspeed(name, tmp_path):
    config = TABLE.get(name) or FROM_CONFIGS[name]
    module = emitted(config, tmp_path)
    parameter = torch.nn.Parameter(torch.zeros(2))
    optimizer = module.build_optimizer([parameter])
    scheduler = module.build_scheduler(optimizer)
    steps = min(_span(config), 400)
    expected, betas = deepspeed_lrs(config, steps)
    got = [optimizer.param_groups[0]["lr"]]
    got_betas = [optimizer.param_groups[0].get("betas")]
    for _ in range(steps):
        optimizer.step()
        if scheduler is not None:  # a scheduler block without a type builds none, in both
            scheduler.step()
        got.append(optimizer.param_groups[0]["lr"])
        got_betas.append(optimizer.param_groups[0].get("betas"))
    mismatches = [(i, a, b) for i, (a, b) in enumerate(zip(got, expected)) if not close(a, b)]
    assert not mismatches, mismatches[:5]
    if config["scheduler"].get("type") == "OneCycle":
        assert all(a == b or (a and b and all(close(x, y) for x, y in zip(a, b)))
                   for a, b in zip(got_betas, betas)), (got_betas[:5], betas[:5])


@pytest.mark.parametrize("name", sorted(n for n, c in TABLE.items() if c["scheduler"]["type"] in
                                        ("WarmupLR", "WarmupDecayLR", "WarmupCosineLR", "OneCycle", "LRRangeTest")))
def test_formula_matches_deepspeed_far_into_the_schedule(name, tmp_path):
    """The formulas at sampled iterations up to well past the end (DeepSpeed's step(i) jumps there)."""
    os.environ.setdefault("DS_ACCELERATOR", "cpu")
    from deepspeed.runtime import lr_schedules

    config = TABLE[name]
    module = emitted(config, tmp_path)
    kind, params = config["scheduler"]["type"], config["scheduler"]["params"]
    function = getattr(module, {"WarmupLR": "warmup_lr", "WarmupDecayLR": "warmup_decay_lr",
                                "WarmupCosineLR": "warmup_cosine_lr_ratio", "OneCycle": "one_cycle_lr",
                                "LRRangeTest": "lr_range_test_lr"}[kind])
    base = config["optimizer"]["params"]["lr"]
    optimizer = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(2))], lr=base)
    reference = getattr(lr_schedules, kind)(optimizer, **params)
    for iteration in [*range(0, 5000, 37), 10**5, 10**6 + 3]:
        reference.step(iteration)
        value = function(iteration, **module.LR_SCHEDULE)
        if kind == "WarmupCosineLR":
            value = base * value
        assert close(value, optimizer.param_groups[0]["lr"]), (iteration, value, optimizer.param_groups[0]["lr"])


NO_SCHEDULER = {"adamw": {"train_micro_batch_size_per_gpu": 1, "optimizer": ADAMW},
                "sgd": {"train_micro_batch_size_per_gpu": 1, "optimizer": SGD},
                **{name: config for name, config in migration_cases()[0] if "scheduler" not in config}}


@pytest.mark.parametrize("name", sorted(NO_SCHEDULER))
def test_no_scheduler_block_keeps_the_learning_rate_constant(name, tmp_path):
    """Without a scheduler block DeepSpeed builds no scheduler and the learning rate stays the
    optimizer's from the first step. `shardshift convert --to fsdp2` (the source resolved with
    DeepSpeed's defaults: "constant") built a WarmupLR from 0 over 1,000 steps instead, and its
    report listed the invented warm-up values as exact (issue 34)."""
    import shardshift

    config = NO_SCHEDULER[name]
    source = tmp_path / "ds_config.json"
    source.write_text(json.dumps(config))
    migration = shardshift.convert(str(source), to="fsdp2")
    path = tmp_path / "fsdp2_setup.py"
    path.write_text(migration.text)
    spec = importlib.util.spec_from_file_location(f"fsdp2_setup_{abs(hash(migration.text))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    parameter = torch.nn.Parameter(torch.zeros(2))
    optimizer = module.build_optimizer([parameter])
    assert module.build_scheduler(optimizer) is None
    expected, _ = deepspeed_lrs(config, 30)
    got = [optimizer.param_groups[0]["lr"]]
    for _ in range(30):
        optimizer.step()
        got.append(optimizer.param_groups[0]["lr"])
    assert all(close(a, b) for a, b in zip(got, expected)), (got[:3], expected[:3])
    invented = [e for e in migration.entries if e.source.startswith("/scheduler")]
    assert invented == [], invented
