"""Issue 11: messages the frameworks confirm.

Every message of a DeepSpeed (DS...), plan (PL...) or general (SS...) rule that says what a
framework does ("rejects", "raises", "ignores", "uses the default", "sets the lr to") is run
through that framework: each bad fixture goes through `shardshift check --format json`, its
finding's message must state the behaviour written in CLAIMS (`says`), and the oracle must do it:

- "load": DeepSpeed's own file loader (hjson, duplicate keys rejected) refuses the text;
- "parse": `DeepSpeedConfig` refuses the config (at `world` ranks), with `error` in its message;
- "accepts": `DeepSpeedConfig` accepts it, and `parsed(config object)` holds;
- "initialize": `DeepSpeedConfig` accepts it but `deepspeed.initialize` raises `error`;
- "step": the engine is built and the first training step raises `error`;
- "runs": the engine is built and trains, and `engine(facts)` holds (optimizer class, param
  groups, lr at scheduler steps, batch, ZeRO stage, precision: tests/deepspeed_initialize_oracle);
- "handoff": what Accelerate's DeepSpeedPlugin and the Hugging Face Trainer's DeepSpeed config
  make of the file (`handoffs`), and `engine(result)` holds.

`deepspeed.initialize` runs on the CPU, one rank (gloo), in one child process for all cases. To
build an engine from a fixture that only shows a config mistake, the config is first made
runnable on one CPU rank (`runnable`): a fixture without an optimizer block gets AdamW (ZeRO
needs an optimizer), the batch is fitted to one rank, and fp16 (which fails on the CPU only,
oracles.md) is turned off unless the claim is about fp16. Claims whose fixture needs a changed
value (a default-valued key cannot show being ignored) say so in `variant`.

A guard test scans every registered rule's docstring and source for behaviour verbs: a rule that
states a framework behaviour is in CLAIMS, or in EXEMPT with the test that confirms it (Megatron,
Accelerate, Axolotl, torchtitan oracles) or the reason it states no behaviour, or in UNCONFIRMED
(printed: claims no test confirms yet).
"""

from __future__ import annotations

import copy
import inspect
import json
import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import oracles
from conftest import FIXTURES, ROOT, check_json
from rule_cases import marker_position

pytestmark = pytest.mark.oracle

RULES = FIXTURES / "deepspeed" / "rules"
PLAN = FIXTURES / "plan"
OPT = {"type": "AdamW", "params": {"lr": 1e-4}}
PROBE = [0, 1, 2, 10, 50, 99, 100, 500, 1000, 2000, 10000]


@dataclass(frozen=True)
class Claim:
    stage: str  # load | parse | accepts | initialize | step | runs | handoff
    says: str  # the behaviour as the message states it (a substring of the message)
    error: str | None = None  # a substring of the framework's error (load/parse/initialize/step)
    engine: Callable[[dict, dict], bool] | None = None  # (engine facts, config) -> holds
    parsed: Callable[[Any, dict], bool] | None = None  # (DeepSpeedConfig, config) -> holds
    args: tuple[str, ...] = ()  # CLI arguments of the check run
    worlds: tuple[int, ...] = (1,)  # parse: refused at every one of these world sizes
    fill: bool = False  # fill "auto" the way the Hugging Face Trainer does first
    json_load: bool = False  # the config as json.load reads it (Trainer, Accelerate)
    variant: Callable[[dict], dict] | None = None  # a changed copy of the fixture (see the module doc)
    add_optimizer: bool = True  # runnable: add AdamW when the fixture has no optimizer block
    steps: int = 1
    extra: dict = field(default_factory=dict)  # more of the child's case (save_16bit, pipeline)
    code: str | None = None  # the finding's code when it is not the fixture folder's


def P(error: str, says: str, **kw: Any) -> Claim:
    return Claim("parse", says, error=error, **kw)


def I(error: str, says: str, **kw: Any) -> Claim:  # noqa: E743 - short table constructor
    return Claim("initialize", says, error=error, **kw)


def R(says: str, engine: Callable[[dict, dict], bool], **kw: Any) -> Claim:
    return Claim("runs", says, engine=engine, **kw)


def A(says: str, parsed: Callable[[Any, dict], bool], **kw: Any) -> Claim:
    return Claim("accepts", says, parsed=parsed, **kw)


def _params(config: dict) -> dict:
    return config.get("scheduler", {}).get("params", {})


def _lr(facts: dict, step: int) -> float:
    return facts["lrs"][str(step)]


def _set(path: str, value: Any) -> Callable[[dict], dict]:
    def change(config: dict) -> dict:
        config = copy.deepcopy(config)
        *parents, key = path.split("/")
        node = config
        for part in parents:
            node = node.setdefault(part, {})
        node[key] = value
        return config
    return change


def _log_warmup(facts: dict, config: dict, step: int) -> bool:
    params = _params(config)
    peak, start, steps = params.get("warmup_max_lr", OPT["params"]["lr"]), params.get("warmup_min_lr", 0.0), \
        max(2, params.get("warmup_num_steps", 1000))
    return math.isclose(_lr(facts, step), start + (peak - start) * math.log(step + 1) / math.log(steps), rel_tol=1e-6)


def _torch_adamw_weight_decay() -> float:
    import torch

    return inspect.signature(torch.optim.AdamW).parameters["weight_decay"].default


def _static_scale_stays(config: dict) -> bool:
    """DeepSpeed's static LossScaler keeps its scale on an overflow (the fp16 optimizer then
    skips the step): `update_scale(True)` leaves `cur_scale` as written."""
    from deepspeed.runtime.fp16.loss_scaler import LossScaler

    scaler = LossScaler(scale=config["fp16"]["loss_scale"])
    scaler.update_scale(True)
    return scaler.cur_scale == config["fp16"]["loss_scale"]


ZERO_1_2 = "DeepSpeedZeroOptimizer"
ZERO_3 = "DeepSpeedZeroOptimizer_Stage3"

# fixture (below fixtures/) -> the behaviour its message states, as the oracle must show it.
CLAIMS: dict[str, Claim | tuple[Claim, ...]] = {
    # --- structure
    "deepspeed/rules/DS101/bad.json": R("DeepSpeed silently ignores it", lambda e, c: e["zero_stage"] == 0),
    "deepspeed/rules/DS101/bad_strict.json": P("Extra inputs are not permitted", "DeepSpeed rejects it at launch"),
    "deepspeed/rules/DS102/bad.json": P("unable to parse string as an integer",
                                        "DeepSpeed's strict parser rejects a string in scientific notation"),
    "deepspeed/rules/DS102/bad_batch.json": P("has to be greater than 0", "must be greater than 0"),
    "deepspeed/rules/DS102/bad_stage.json": P("Input should be 0, 1, 2, 3", "above the maximum 3"),
    "deepspeed/rules/DS102/bad_fraction.json": R(
        "DeepSpeed accepts it without a check and computes with the fraction",
        # micro 2 × 2.5 on one rank; 10 micro-steps, the optimizer steps at the 5th and the 10th
        lambda e, c: e["train_batch_size"] == 5.0 and e["global_steps"] == 2, steps=10),
    "deepspeed/rules/DS102/bad_fraction_strict.json": P("a number with a fractional part",
                                                        "DeepSpeed's config parser rejects it"),
    "deepspeed/rules/DS103/bad.json": P("Input should be 'z1', 'z3', 'autosp' or 'autotp'",
                                        "DeepSpeed rejects the config at launch"),
    "deepspeed/rules/DS103/bad_case.json": P("Input should be 'z1', 'z3', 'autosp' or 'autotp'",
                                             "DeepSpeed rejects the config at launch"),
    # --- batch
    "deepspeed/rules/DS201/bad.json": P("60 != 4 * 8 * 8", "micro 4 × accumulation 8 × 8 data-parallel ranks = 256",
                                        args=("--world-size", "8"), worlds=(8,)),
    "deepspeed/rules/DS201/bad_world.json": P("64 != 4 * 8 * 8", "micro 4 × accumulation 8 × 8 data-parallel ranks = 256",
                                              args=("--nodes", "2", "--gpus-per-node", "4"), worlds=(8,)),
    "deepspeed/rules/DS202/bad.json": P("64 != 4 * 4 * 8", "uses the whole world size (8) as the data-parallel size",
                                        args=("--world-size", "8"), worlds=(8,)),
    "deepspeed/rules/DS202/bad_mesh.json": I("Mesh should not be bigger than default world size",
                                             "but the world size is 8", args=("--world-size", "8")),
    # --- stage
    "deepspeed/rules/DS301/bad.json": R("DeepSpeed ignores parameter offload below stage 3",
                                        lambda e, c: e["zero_stage"] == 2 and e["wrapper"] == ZERO_1_2),
    "deepspeed/rules/DS301/bad_legacy.json": R("DeepSpeed ignores parameter offload below stage 3",
                                               lambda e, c: e["zero_stage"] == 1 and e["wrapper"] == ZERO_1_2),
    "deepspeed/rules/DS302/bad.json": R("stages 1 and 2 treat any device as CPU offload and ignore nvme_path",
                                        lambda e, c: e["wrapper"] == ZERO_1_2 and e["wrapper_offload"] is True),
    "deepspeed/rules/DS303/bad.json": R("at stage 2 DeepSpeed ignores it",
                                        lambda e, c: e["zero_stage"] == 2 and e["wrapper"] == ZERO_1_2),
    "deepspeed/rules/DS303/bad_feature.json": R("DeepSpeed ignores it",
                                                lambda e, c: e["zero_stage"] == 2 and e["wrapper"] == ZERO_1_2),
    "deepspeed/rules/DS303/bad_no_stage.json": R("DeepSpeed runs stage 0 (ZeRO off)",
                                                 lambda e, c: e["zero_stage"] == 0 and e["wrapper"] != ZERO_1_2),
    "deepspeed/rules/DS303/bad_stage_0.json": R("ZeRO is off (stage 0), so DeepSpeed ignores",
                                                lambda e, c: e["zero_stage"] == 0 and e["wrapper"] != ZERO_1_2),
    "deepspeed/rules/DS303/bad_stage_3.json": R("at stage 3 DeepSpeed ignores it",
                                                lambda e, c: e["zero_stage"] == 3 and e["wrapper"] == ZERO_3),
    "deepspeed/rules/DS304/bad.json": R("so nothing is offloaded",
                                        lambda e, c: e["wrapper"] == ZERO_3 and e["wrapper_offload"] is False),
    "deepspeed/rules/DS305/bad.json": I('"nvme_path" in DeepSpeed Config cannot be None',
                                        "deepspeed.initialize fails when ZeRO-3 sets up the NVMe swap space"),
    "deepspeed/rules/DS305/bad_optimizer.json": I("expected str, bytes or os.PathLike object, not NoneType",
                                                  "deepspeed.initialize fails when ZeRO-3 sets up the NVMe swap space"),
    "deepspeed/rules/DS306/bad.json": P("Partial offloading only supported for ZeRO Stage 3",
                                        "DeepSpeed rejects the config at launch"),
    "deepspeed/rules/DS306/bad_grad_norm.json": P("compute_grad_norm=false is supported only with ZeRO Stage 1 or 2",
                                                  "DeepSpeed rejects the config at launch"),
    "deepspeed/rules/DS307/bad.json": (
        I("ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism",
          "DeepSpeed's pipeline engine asserts stage < 2 at start-up", extra={"pipeline": True}, steps=0),
        R("without a PipelineModule the pipeline section is not read at all",
          lambda e, c: e["zero_stage"] == 2 and e["wrapper"] == ZERO_1_2)),
    # Megatron-DeepSpeed's entry builds a PipelineModule without --no-pipeline-parallel: checked with its launch
    "deepspeed/rules/DS307/megatron_deepspeed/bad/ds_config.json": I(
        "ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism",
        'pipeline engine asserts "ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism" at start-up',
        extra={"pipeline": True}, steps=0,
        args=(str(FIXTURES / "deepspeed/rules/DS307/megatron_deepspeed/bad/run.sh"),), code="DS307"),
    "deepspeed/rules/DS308/bad.json": R(
        "save_16bit_model and the Hugging Face save_model write no usable weights",
        lambda e, c: e["save_16bit"]["returned"] is False and e["save_16bit"]["files"] == [],
        extra={"save_16bit": True}),
    "deepspeed/rules/DS309/bad.json": A("the newest DeepSpeed (pass --deepspeed-version to pin it) uses pin_memory true",
                                        lambda d, c: d.zero_config.offload_optimizer.pin_memory is True),
    # --- precision
    "deepspeed/rules/DS310/bad.json": P("cannot be simultaneously enabled", "DeepSpeed rejects the config at launch"),
    "deepspeed/rules/DS311/bad.json": R("DeepSpeed accumulates gradients in bf16",
                                        lambda e, c: e["grad_accum_dtype"] == "bfloat16"),
    "deepspeed/rules/DS311/bad_derived.json": R("DeepSpeed accumulates gradients in bf16",
                                                lambda e, c: e["grad_accum_dtype"] == "bfloat16",
                                                args=("--world-size", "2")),
    "deepspeed/rules/DS312/bad.json": A(
        "after an overflow DeepSpeed skips the step without lowering the scale",
        lambda d, c: d.float16_config.loss_scale == 128 and _static_scale_stays(c)),
    "deepspeed/rules/DS313/bad.json": R("clips the global gradient norm at 1.0",
                                        lambda e, c: e["gradient_clipping"] == 1.0),
    "deepspeed/rules/DS313/bad_auto.json": A("clips the global gradient norm at 1.0",
                                             lambda d, c: d.gradient_clipping == 1.0, fill=True),
    "deepspeed/rules/DS314/bad.json": P("loss_scale_window must be > 0", "DeepSpeed rejects the config at launch"),
    "deepspeed/rules/DS314/bad_min.json": P("min_loss_scale must be > 0", "DeepSpeed rejects the config at launch"),
    "deepspeed/rules/DS315/bad.json": R("DeepSpeed reduces gradients in bf16",
                                        lambda e, c: e["communication_data_type"] == "torch.bfloat16"),
    "deepspeed/rules/DS316/bad.json": A("uses true: steps with inf/nan gradients skipped",
                                        lambda d, c: d.bfloat16_config.check_grad_overflow is True),
    # --- legacy
    "deepspeed/rules/DS320/bad.json": A("DeepSpeed still copies it",
                                        lambda d, c: d.zero_config.gather_16bit_weights_on_model_save is True),
    "deepspeed/rules/DS320/bad_aio.json": A("DeepSpeed ignores it since 0.16.4",
                                            lambda d, c: "thread_count" not in d.aio_config
                                            and d.aio_config["intra_op_parallelism"] == 1),
    "deepspeed/rules/DS320/bad_allgather_size.json": A(
        "ignores it here", lambda d, c: d.zero_config.allgather_bucket_size == 500_000_000,
        variant=_set("allgather_size", 1234)),  # the fixture writes the default: show a changed value ignored
    "deepspeed/rules/DS320/bad_bfloat16.json": (
        A("DeepSpeed reads it", lambda d, c: d.bfloat16_config.enabled is True),
        Claim("handoff", "Accelerate and the Hugging Face Trainer fill and check only bf16 (Accelerate even adds a bf16 "
              "block of its own, which then wins over bfloat16)",
              engine=lambda h, c: h["trainer"]["bfloat16"]["enabled"] == "auto"
              and h["accelerate"]["bf16"] == {"enabled": True}
              and _parse(h["accelerate"], 1)[0].bfloat16_config.enabled is True,
              extra={"trainer": _set("bfloat16/enabled", "auto"), "accelerate": _set("bfloat16/enabled", False)})),
    "deepspeed/rules/DS320/bad_cpu_offload.json": A(
        "DeepSpeed still converts it to offload_optimizer",
        lambda d, c: getattr(d.zero_config.offload_optimizer.device, "value", d.zero_config.offload_optimizer.device)
        == "cpu"),
    "deepspeed/rules/DS320/bad_pin_memory.json": A(
        "DeepSpeed ignores it (it only logs a deprecation warning)",
        lambda d, c: d.zero_config.offload_optimizer.pin_memory is True,
        variant=_set("zero_optimization/cpu_offload_use_pin_memory", False)),  # true is the default already
    "deepspeed/rules/DS321/bad.json": P("prefetch_bucket_size\n  Extra inputs are not permitted",
                                        "DeepSpeed's validator rejects the pair at launch"),
    "deepspeed/rules/DS321/bad_bf16.json": A("DeepSpeed reads only bf16 and ignores bfloat16",
                                             lambda d, c: d.bfloat16_config.enabled is True),
    "deepspeed/rules/DS321/bad_bf16_same.json": A("DeepSpeed reads only bf16 and ignores bfloat16",
                                                  lambda d, c: d.bfloat16_config.enabled is True,
                                                  variant=_set("bfloat16/enabled", False)),
    "deepspeed/rules/DS321/bad_deprecated.json": P("Cannot provide deprecated parameter 'cpu_offload' and replacing "
                                                   "parameter 'offload_optimizer' together",
                                                   "Cannot provide deprecated parameter ... together"),
    # --- combinations
    "deepspeed/rules/DS340/bad.json": I("managed_gradient_accumulation=False supports ZeRO overlap_comm only with "
                                        "ZeRO stage 2", "DeepSpeed refuses this combination in deepspeed.initialize"),
    "deepspeed/rules/DS340/bad_allreduce_sum.json": P("gradient_allreduce_op='sum' is not supported with ZenFlow",
                                                      "DeepSpeed refuses this combination while parsing the config"),
    "deepspeed/rules/DS340/bad_bf16_states.json": P("bf16_optimizer_states requires bf16_master_weights_and_grads",
                                                    "DeepSpeed refuses this combination while parsing the config"),
    "deepspeed/rules/DS340/bad_grad_norm.json": I("compute_grad_norm=false requires gradient_clipping=0",
                                                  "DeepSpeed refuses this combination in deepspeed.initialize"),
    "deepspeed/rules/DS340/bad_lamb.json": I("DeepSpeed lamb optimizer requires dynamic loss scaling",
                                             "DeepSpeed refuses this combination in deepspeed.initialize"),
    # --- optimizer
    "deepspeed/rules/DS401/bad.json": I("sgd is not a supported DeepSpeed Optimizer",
                                        'deepspeed.initialize stops with "sgd is not a supported DeepSpeed Optimizer"'),
    "deepspeed/rules/DS401/bad_no_type.json": R("DeepSpeed ignores the whole block (no optimizer is built from it)",
                                                lambda e, c: e["optimizer"] is None and e["wrapper"] is None,
                                                add_optimizer=False, steps=0),
    "deepspeed/rules/DS401/bad_removed.json": I("OneBitAdam is not a supported DeepSpeed Optimizer",
                                                'deepspeed.initialize stops with "OneBitAdam is not a supported'),
    "deepspeed/rules/DS402/bad.json": I("unexpected keyword argument 'weight_decy'",
                                        "deepspeed.initialize fails with TypeError"),
    "deepspeed/rules/DS402/bad_offload.json": I("unexpected keyword argument 'set_grad_none'",
                                                "deepspeed.initialize fails with TypeError"),
    "deepspeed/rules/DS403/bad.json": Claim("step", "at the first optimizer step for DeepSpeed's fused ones",
                                            error="too many values to unpack (expected 2)"),
    "deepspeed/rules/DS404/bad.json": I("'max_grad_norm' is not supported as an optimizer parameter",
                                        "deepspeed.initialize raises ValueError"),
    "deepspeed/rules/DS406/bad.json": R("runs decoupled weight decay (AdamW), because DeepSpeed's adam_w_mode defaults "
                                        "to true", lambda e, c: e["optimizer"] == "FusedAdam" and e["adam_w_mode"] == 1),
    "deepspeed/rules/DS407/bad.json": I("You are using an untested ZeRO Optimizer",
                                        'deepspeed.initialize asserts "You are using an untested ZeRO Optimizer"'),
    "deepspeed/rules/DS408/bad.json": (
        R("DeepSpeed builds FusedAdam, whose default is 0 (no weight decay), while torch.optim.AdamW defaults to 0.01",
          lambda e, c: e["optimizer"] == "FusedAdam" and e["group"]["weight_decay"] == 0
          and _torch_adamw_weight_decay() == 0.01),
        Claim("handoff", "the Hugging Face Trainer's --weight_decay is used only with \"weight_decay\": \"auto\"",
              engine=lambda h, c: "weight_decay" not in h["trainer"]["optimizer"]["params"],
              extra={"trainer": lambda c: c}),
        Claim("handoff", "the Hugging Face Trainer's --weight_decay is used only with \"weight_decay\": \"auto\"",
              engine=lambda h, c: h["trainer"]["optimizer"]["params"]["weight_decay"] == 0.05,
              extra={"trainer": _set("optimizer/params/weight_decay", "auto")})),
    # --- scheduler
    "deepspeed/rules/DS410/bad.json": I("DeepSpeed does not recognize LR scheduler WarmUpLR",
                                        'deepspeed.initialize stops with "DeepSpeed does not recognize LR scheduler'),
    "deepspeed/rules/DS410/bad_no_type.json": R("DeepSpeed ignores the whole block (no scheduler is built from it)",
                                                lambda e, c: e["scheduler"] is None),
    "deepspeed/rules/DS451/bad.json": I("DeepSpeedZeroOptimizer is not an Optimizer",
                                        "deepspeed.initialize fails with TypeError"),
    "deepspeed/rules/DS451/bad_bf16.json": I("is not an Optimizer", "deepspeed.initialize fails with TypeError"),
    "deepspeed/rules/DS411/bad.json": I("unexpected keyword argument 'warmup_steps'",
                                        "deepspeed.initialize fails with TypeError"),
    "deepspeed/rules/DS412/bad.json": I("missing 1 required positional argument: 'total_num_steps'",
                                        "deepspeed.initialize fails with TypeError"),
    "deepspeed/rules/DS413/bad.json": R(
        "never reaches its peak learning rate and never decays",
        lambda e, c: all(_lr(e, s) < _params(c)["warmup_max_lr"] for s in PROBE if s <= 1000)
        and _lr(e, 1000) > _lr(e, 500) > _lr(e, 100)),
    "deepspeed/rules/DS414/bad.json": R("it warms up to DeepSpeed's default 0.001",
                                        lambda e, c: math.isclose(_lr(e, 500), 0.001)),
    "deepspeed/rules/DS414/bad_no_lr.json": R("it warms up to DeepSpeed's default 0.001",
                                              lambda e, c: math.isclose(_lr(e, 500), 0.001)),
    "deepspeed/rules/DS415/bad.json": I("warmup_num_steps must be a positive integer, got 1000.0",
                                        "deepspeed.initialize raises ValueError", json_load=True),
    "deepspeed/rules/DS415/bad_string.json": I("lr_range_test_step_size must be a positive integer",
                                               "deepspeed.initialize raises ValueError"),
    "deepspeed/rules/DS415/bad_trainer.json": I("warmup_num_steps must be a positive integer, got 500.0",
                                                "deepspeed.initialize raises ValueError", fill=True, json_load=True),
    "deepspeed/rules/DS415/bad_null.json": I("warmup_num_steps must be a positive integer, got None",
                                             "deepspeed.initialize raises ValueError"),
    "deepspeed/rules/DS415/bad_total.json": I("'<' not supported between instances of 'str' and 'int'",
                                              "deepspeed.initialize raises TypeError"),
    "deepspeed/rules/DS416/bad.json": R(
        "sets the optimizer's betas to (0.8, 0.99) and cycles beta1 between 0.8 and 0.9",
        lambda e, c: e["group"]["betas"] == [0.8, 0.99]
        and all(0.8 <= b[0] <= 0.9 and b[1] == 0.99 for b in e["betas"].values())),
    "deepspeed/rules/DS416/bad_default_betas.json": R(
        "sets the optimizer's betas to (0.8, 0.99)", lambda e, c: e["group"]["betas"] == [0.8, 0.99]),
    "deepspeed/rules/DS417/bad.json": R("it logs a warning and warms up logarithmically",
                                        lambda e, c: _log_warmup(e, c, 2) and _log_warmup(e, c, 10)),
    "deepspeed/rules/DS418/bad.json": R("its first two optimizer steps run at learning rate 0",
                                        lambda e, c: e["lrs_used"][:2] == [0.0, 0.0] and e["lrs_used"][2] > 0
                                        and _log_warmup(e, c, 10), steps=3),
    "deepspeed/rules/DS440/bad.json": I("cycle_first_step_size must be positive, got 0.0",
                                        "deepspeed.initialize raises ValueError (cycle_first_step_size must be "
                                        "positive)"),
    "deepspeed/rules/DS440/bad_second.json": I("cycle_second_step_size must be non-negative, got -500.0",
                                               "deepspeed.initialize raises ValueError (cycle_second_step_size must "
                                               "be non-negative)"),
    "deepspeed/rules/DS440/bad_null.json": I("float() argument must be a string or a real number",
                                             "deepspeed.initialize raises TypeError when OneCycle converts it"),
    "deepspeed/rules/DS441/bad.json": R("accepts it without a check and sets the optimizer's learning rate negative",
                                        lambda e, c: _lr(e, 0) == -1e-5 and e["lrs_used"][0] < 0),
    "deepspeed/rules/DS441/bad_range.json": R("which falls to 0 and then below",
                                              lambda e, c: _lr(e, 10) > 0 > _lr(e, 50)),
    "deepspeed/rules/DS442/bad.json": R("the warmup lowers the learning rate instead of raising it",
                                        lambda e, c: _lr(e, 0) > _lr(e, 50) > _lr(e, 100) and math.isclose(_lr(e, 100), 1e-4)),
    "deepspeed/rules/DS442/bad_cycle.json": R(
        "the learning rate falls during the first half of the cycle and rises during the second",
        lambda e, c: _lr(e, 0) > _lr(e, 500) > _lr(e, 1000) and _lr(e, 1000) < _lr(e, 2000) - 1e-5),
    "deepspeed/rules/DS443/bad.json": R("the decay ends above the peak learning rate",
                                        lambda e, c: _lr(e, 10000) > _lr(e, 100) == pytest.approx(1e-4)),
    "deepspeed/rules/DS443/bad_momentum.json": R("so Adam runs with beta1 1.5",
                                                 lambda e, c: max(b[0] for b in e["betas"].values()) > 1),
    # --- "auto" (auto.py's rules)
    "deepspeed/rules/DS420/bad.json": Claim("step", "plain DeepSpeed keeps the string and fails with TypeError at the "
                                            "first optimizer step", error="TypeError"),
    "deepspeed/rules/DS421/bad_plain.json": R("DeepSpeed drops the key (strict section) and silently uses the default 0",
                                              lambda e, c: e["zero_stage"] == 0),
    # --- general
    "deepspeed/rules/SS002/bad.json": Claim("load", "DeepSpeed rejects the file", error="Duplicate keys"),
}

# Issue 22: bad fixtures of DeepSpeed check sites that existing rules mirror (the coverage map,
# src/shardshift/data/coverage/deepspeed.tsv, whose oracle also asserts the exact site is reached).
D = "deepspeed/rules/"
CLAIMS.update({
    D + "DS101/bad_removed.json": P("Progressive Layer Dropping has been removed", "0.19.8 rejects the file"),
    D + "DS101/bad_removed_zero.json": P("MiCS ZeRO-3 sharding has been removed", "0.19.8 rejects the file"),
    D + "DS102/bad_autocast_modules.json": P("Invalid module names for torch autocast",
                                             "DeepSpeed takes a list of strings here and rejects the config"),
    D + "DS102/bad_communication_data_type.json": P("Invalid communication_data_type", 'is not one of "fp32"'),
    D + "DS102/bad_allreduce_op.json": P("Invalid gradient_allreduce_op", 'is not one of "mean", "sum"'),
    D + "DS102/bad_tag_validation.json": P("invalid tag_validation value of ALWAYS", 'is not one of "warn"'),
    D + "DS102/bad_parallel_write.json": P("value of 'yes' is invalid, expecting: true or false",
                                           "DeepSpeed raises DeepSpeedConfigError while parsing the config"),
    D + "DS102/bad_checkpoint_writer.json": P("writer contains invalid value SLOW", 'is not one of "mock"'),
    D + "DS102/bad_keep_in_fp32.json": P("keep_in_fp32_modules must be \"auto\" or a list", "expected a list"),
    D + "DS102/bad_micro.json": P("Micro batch size per gpu: 0 has to be greater than 0", "must be greater than 0"),
    D + "DS102/bad_accumulation.json": P("Gradient accumulation steps: 0 has to be greater than 0",
                                         "must be greater than 0"),
    D + "DS102/bad_loss_scale_bool.json": P("fp16.loss_scale must be a number, not bool",
                                            "DeepSpeed's validator refuses booleans here"),
    D + "DS102/bad_loss_scale_string.json": P("fp16.loss_scale must be a number", "is not a number"),
    D + "DS102/bad_loss_scale_inf.json": P("fp16.loss_scale must be a finite number", "is not a finite number"),
    D + "DS102/bad_loss_scale_negative.json": P("fp16.loss_scale must be >= 0", "is below the minimum 0"),
    D + "DS102/bad_scale_window_bool.json": P("fp16.loss_scale_window must be an integer, not bool",
                                              "DeepSpeed's validator refuses booleans here"),
    D + "DS102/bad_scale_window_string.json": P("fp16.loss_scale_window must be an integer", "is not a number"),
    D + "DS102/bad_min_scale_infinity.json": P("fp16.min_loss_scale must be a finite number", "is not a finite number",
                                               json_load=True),
    D + "DS201/bad_no_batch.json": P("Either train_batch_size or train_micro_batch_size_per_gpu needs to be provided",
                                     "DeepSpeed asserts one of them at launch"),
    # issue 33's mutation measure: a batch size written null is unset to DeepSpeed (config.get gives None)
    D + "DS201/bad_null_batch.json": P("Either train_batch_size or train_micro_batch_size_per_gpu needs to be provided",
                                       "null, which DeepSpeed reads as unset"),
    D + "DS306/bad_allreduce_sum.json": P("gradient_allreduce_op='sum' is not supported with ZeRO stage 3",
                                          "DeepSpeed rejects the config at launch"),
    D + "DS306/bad_fp16_master.json": P("Fp16_master_weights_and_grads is only supported with ZeRO Stage 1, 2, or 3",
                                        "DeepSpeed rejects the config at launch"),
    D + "DS306/bad_bf16_master.json": P("Bf16_master_weights_and_grads is only supported with ZeRO Stage 1, 2, or 3",
                                        "DeepSpeed rejects the config at launch"),
    D + "DS306/bad_bf16_states.json": P("bf16_optimizer_states is only supported with ZeRO Stage 1, 2, or 3",
                                        "DeepSpeed rejects the config at launch"),
    D + "DS340/bad_allreduce_deepcompile.json": P("gradient_allreduce_op='sum' is not supported with DeepCompile",
                                                  "DeepSpeed refuses this combination while parsing the config"),
    D + "DS340/bad_managed_deepcompile.json": I("managed_gradient_accumulation=False is not supported with DeepCompile",
                                                "DeepSpeed refuses this combination in deepspeed.initialize"),
    D + "DS340/bad_grad_norm_stage1.json": I("compute_grad_norm=false does not support ZeRO Stage 1 with BF16",
                                             "DeepSpeed refuses this combination in deepspeed.initialize"),
    D + "DS340/bad_legacy_stage1.json": I("The deprecated version of ZeRO Stage 1 is not supported",
                                          "DeepSpeed refuses this combination in deepspeed.initialize"),
    D + "DS340/bad_autocast_quantized.json": I("Cannot enable both torch autocast and zero quantized weights",
                                               "DeepSpeed refuses this combination in deepspeed.initialize"),
    D + "DS340/bad_zenflow_no_offload.json": I("Zenflow must be used with cpu offload",
                                               "DeepSpeed refuses this combination in deepspeed.initialize"),
    D + "DS340/bad_zenflow_auto_interval.json": I("If use auto select strategy",
                                                  "DeepSpeed refuses this combination in deepspeed.initialize"),
    D + "DS340/bad_zenflow_step_auto.json": I("If don't use auto select strategy, select_interval must be a number",
                                              "DeepSpeed refuses this combination in deepspeed.initialize"),
    D + "DS340/bad_zenflow_step_short.json": I("Select interval must be greater or equal to update interval",
                                               "DeepSpeed refuses this combination in deepspeed.initialize"),
    D + "DS452/bad_results_dir.json": P("results_dir cannot be empty",
                                        "DeepSpeed asserts it is not empty while it reads the config"),
    D + "DS452/bad_exps_dir.json": P("exps_dir cannot be empty",
                                     "DeepSpeed asserts it is not empty while it reads the config"),
    D + "DS452/bad_curriculum.json": P("curriculum_metrics must be specified",
                                       "DeepSpeed asserts while it reads the config"),
    D + "DS452/bad_dynamic_batching.json": P("max_tokens must be specified",
                                             "DeepSpeed asserts while it reads the config"),
    D + "DS452/bad_log_level.json": I("is not one of the valid logging levels", "deepspeed.initialize raises ValueError"),
    D + "DS452/bad_muon_ns.json": I("ns_method must be one of",
                                    "deepspeed.initialize fails when it builds the Muon optimizer"),
    D + "DS452/bad_autocast_module.json": I("Failed to import lower precision safe module",
                                            "deepspeed.initialize raises ValueError"),
    D + "DS415/bad_cosine.json": I("warmup_num_steps must be a positive integer, got 0",
                                   "deepspeed.initialize raises ValueError"),
})

# Messages of branches no fixture shows: generated files (name -> (config, claim)), checked in one
# run like the fixtures.
B = {"train_micro_batch_size_per_gpu": 4, "gradient_clipping": 1.0, "optimizer": OPT}
GENERATED: dict[str, tuple[dict, Claim]] = {
    "string_count": ({**B, "train_micro_batch_size_per_gpu": "4"}, P(
        "'>' not supported between instances of 'str' and 'int'",
        "DeepSpeed uses it as a string and fails when it computes with it", code="DS102")),
    "string_clipping": ({**B, "gradient_clipping": "1.0"}, Claim(
        "step", "DeepSpeed uses it as a string and fails when it computes with it",
        error="'>' not supported between instances of 'str' and 'float'", code="DS102")),
    "digit_string_strict": ({**B, "zero_optimization": {"stage": 2, "reduce_bucket_size": "500000000"}}, A(
        "DeepSpeed converts it", lambda d, c: d.zero_config.reduce_bucket_size == 500_000_000, code="DS102")),
    "bool_string_strict": ({**B, "zero_optimization": {"stage": 2, "overlap_comm": "false"}}, A(
        "DeepSpeed reads it as false", lambda d, c: d.zero_config.overlap_comm is False, code="DS102")),
    "bool_string_top": ({**B, "prescale_gradients": "false"}, A(
        "DeepSpeed keeps the value as written and tests it for truth",
        lambda d, c: d.prescale_gradients == "false" and bool(d.prescale_gradients), code="DS102")),
    "legacy_zero_bool": ({**B, "zero_optimization": True}, A(
        "legacy boolean form (means stage 1)", lambda d, c: int(d.zero_optimization_stage) == 1, code="DS102")),
    "enum_auto": ({**B, "communication_data_type": "auto"}, P(
        "Invalid communication_data_type", "DeepSpeed raises ValueError while parsing the config", code="DS102")),
    "grad_norm_zenflow": ({**B, "gradient_clipping": 0, "zero_optimization": {
        "stage": 2, "compute_grad_norm": False, "zenflow": {"topk_ratio": 0.1}}}, I(
        "compute_grad_norm=false does not support ZenFlow",
        "DeepSpeed refuses this combination in deepspeed.initialize", code="DS340")),
    "no_batch": ({"gradient_clipping": 1.0, "optimizer": OPT}, P(
        "Either train_batch_size or train_micro_batch_size_per_gpu needs to be provided",
        "DeepSpeed asserts one of them at launch", code="DS201")),
}

def _stage_rejections() -> dict[str, tuple[dict, Claim]]:
    """DS306: every row of STAGE_REJECTIONS at a stage it is refused at, from the rule's own table."""
    from shardshift.rules.deepspeed.stage import STAGE_REJECTIONS

    values = {"/ratio": 0.5, "/compute_grad_norm": False, "/gradient_allreduce_op": "sum"}
    cases = {}
    for row in STAGE_REJECTIONS:
        stage = next(s for s in (0, 3, 2, 1) if s not in row.stages)
        value = next((v for suffix, v in values.items() if row.pointer.endswith(suffix)), True)
        config = _set(row.pointer.lstrip("/"), value)({**B, "zero_optimization": {"stage": stage}})
        if "offload_optimizer" in row.pointer:
            config["zero_optimization"]["offload_optimizer"]["device"] = "cpu"
        name = "stage_" + row.pointer.strip("/").replace("/", "_")
        cases[name] = (config, P(row.assertion, f'DeepSpeed rejects the config at launch ("{row.assertion}")',
                                 code="DS306"))
    return cases


GENERATED.update(_stage_rejections())
for _name, (_config_dict, _claim) in GENERATED.items():
    CLAIMS[f"generated/{_name}.json"] = _claim

# Bad fixtures of codes in CLAIMS that no oracle here can run, with the reason.
FIXTURE_EXEMPT = {
    "deepspeed/rules/DS403/bad_length.json": "Lion (the fixture's optimizer) fails on the CPU only (oracles.md); the "
                                             "same unpacking is confirmed on FusedAdam by DS403/bad.json",
    "deepspeed/rules/DS421/bad.json": "Accelerate's DeepSpeed plugin refusal of an unfilled \"auto\" "
                                      "(zero_optimization.sub_group_size): the same refusal (DeepSpeedPlugin.fill_match) "
                                      "is confirmed on setups/accelerate_auto_unfilled/bad.json by the coverage map "
                                      "oracle (tests/test_coverage_map.py, accelerate)",
    "deepspeed/rules/DS421/bad_bf16.json": "Accelerate's DeepSpeed plugin refusal - UNCONFIRMED",
    "deepspeed/rules/DS421/bad_trainer.py": "the script that reads DS421/bad.json, not a fixture of its own",
    "deepspeed/rules/DS102/bad_tp_not_object.json": "tests/test_coverage_map.py (deepspeed.initialize after "
                                                    "tp_model_init refuses it while it merges the arguments: "
                                                    "tensor_parallel.tp must be a dict)",
}

# The FSDP2 rules' claims, confirmed by one torch child process in their own module.
from test_fsdp2_catalog_oracle import COVERAGE_CLAIMS as FSDP2_COVERAGE_CLAIMS  # noqa: E402
from test_fsdp2_catalog_oracle import IMPLICIT_CLAIMS as FSDP2_IMPLICIT_CLAIMS  # noqa: E402
from test_fsdp2_catalog_oracle import NO_RUNNABLE_CLAIM as FSDP2_NOT_RUNNABLE  # noqa: E402
from test_fsdp2_catalog_oracle import RULE_CLAIMS as FSDP2_CLAIMS  # noqa: E402

# Rule codes whose claims another test confirms, or whose messages state no framework behaviour.
EXEMPT = {
    "DS322": "a key newer than the pinned DeepSpeed (--deepspeed-version): the installed 0.19.8 has every key; "
             "the version table is read from DeepSpeed's release history",
    "DS330": "performance advice (bucket sizes and their memory/latency cost); DeepSpeedConfig accepts these files "
             "(tests/test_deepspeed_oracle.py)",
    "DS331": "performance advice (memory of large buffers); accepted by DeepSpeedConfig (tests/test_deepspeed_oracle.py)",
    "DS332": "performance advice (prefetch and sub-group sizes); accepted by DeepSpeedConfig "
             "(tests/test_rules_deepspeed_catalog.py::test_parse_time_verdicts_agree_with_deepspeed_config)",
    "DS405": "needs DeepSpeed 0.19.5 (--deepspeed-version); with the installed 0.19.8 the same file is DS401, "
             "confirmed here",
    "DS430": "tests/test_rules_deepspeed_optimizer_scheduler_script.py::test_verdicts_match_deepspeed_initialize",
    "DS431": "tests/test_rules_deepspeed_optimizer_scheduler_script.py::test_verdicts_match_deepspeed_initialize",
    "DS432": "tests/test_rules_deepspeed_optimizer_scheduler_script.py::test_verdicts_match_deepspeed_initialize",
    "DS433": "tests/test_rules_deepspeed_optimizer_scheduler_script.py::test_verdicts_match_deepspeed_initialize",
    "DS434": "tests/test_rules_deepspeed_optimizer_scheduler_script.py::test_verdicts_match_deepspeed_initialize",
    "DS448": "tests/test_coverage_map.py (the deepspeed map's oracle makes the script's deepspeed.initialize call "
             "and asserts DeepSpeed reaches deepspeed/__init__.py's `assert config is not None`)",
    "SS001": "says only that the text cannot be parsed; what DeepSpeed's hjson loader reads is compared with the "
             "hjson package by the hjson part of issue 11",
    "SS003": "about shardshift's own suppression comments, no framework",
    "PL001": "tests/test_setup_oracle.py (Accelerate's launcher and the Trainer's DeepSpeed handoff)",
    "PL101": "states the arithmetic of the degrees, no framework reaction",
    "PL201": "a memory estimate (out of memory on the GPU), no framework reaction to a config",
    "PL102": "states the arithmetic of the expert mesh, no framework reaction",
    "PL103": "tests/test_megatron_oracle.py (Megatron's TransformerConfig for the Megatron form)",
    **{code: "tests/test_accelerate_oracle.py (Accelerate's launcher and plugins)"
       for code in ("AC001", "AC002", "AC003", "AC004", "AC005", "AC006", "AC007", "AC008", "AC009", "AC012", "AC101",
                    "AC102", "AC103")},
    **{code: "tests/test_coverage_map.py::test_framework_reaches_each_rule_site_on_its_bad_fixture_and_the_rule_"
             "reports_it[accelerate] (Accelerate's launcher and what its Accelerator builds, at each check site)"
       for code in ("AC010", "AC011", "AC104", "AC105", "AC106")},
    "AX011": "tests/test_axolotl_oracle.py::test_ax011_class_names_reach_accelerate_unstripped (Axolotl's schema, "
             "setup_fsdp_envs and Accelerate's FSDP plugin)",
    **{code: "tests/test_axolotl_oracle.py (Axolotl's validation and the Trainer handoff)"
       for code in ("AX001", "AX002", "AX003", "AX004", "AX005", "AX006", "AX007", "AX008", "AX009", "AX010",
                    "AX101", "AX102",
                    "AX103", "AX104", "AX105", "AX106", "AX107", "AX108", "AX109")},
    "AX110": "tests/test_coverage_map.py::test_framework_reaches_each_rule_site_on_its_bad_fixture_and_the_rule_"
             "reports_it[axolotl] (Axolotl's validate_config reaches each row's site on its bad fixture, not on the "
             "good ones)",
    **{code: "tests/test_torchtitan_oracle.py (torchtitan's config manager)"
       for code in ("TT001", "TT002", "TT003", "TT101", "TT102", "TT103", "TT105")},
    **{code: "tests/test_coverage_map.py::test_framework_reaches_each_rule_site_on_its_bad_fixture_and_the_rule_"
       "reports_it (torchtitan 0.2.2's start-up path: config manager, ParallelDims, train spec, converters, the "
       "profiler, the first step's context-parallel sharding and the save after the last step)"
       for code in ("TT004", "TT005", "TT006", "TT007", "TT104", "TT106", "TT107", "TT108", "TT109", "TT110",
                    "TT111", "TT112", "TT113", "TT114")},
    **{code: "tests/test_coverage_map.py::test_framework_reaches_each_rule_site_on_its_bad_fixture_and_the_rule_"
       "reports_it[transformers] (transformers 5.24.0's TrainingArguments, built from each fixture's literal "
       "arguments, raises at the row's site in _validate_args or __post_init__; not on the good ones)"
       for code in ("TA001", "TA002", "TA003", "TA004", "TA005", "TA006", "TA007")},
    **{code: "tests/test_coverage_map.py::test_framework_reaches_each_rule_site_on_its_bad_fixture_and_the_rule_"
       "reports_it[transformers] (transformers 5.24.0's Trainer, built on the CPU from each fixture's literal "
       "arguments (stage=trainer), raises at the row's site; not on the good ones)" for code in ("TA008", "TA009")},
    "TA010": "tests/test_transformers_arguments.py::test_the_field_table_is_what_the_installed_release_takes "
             "(transformers' own TrainingArguments and Seq2SeqTrainingArguments raise TypeError exactly for the names "
             "TA010 reports at the installed release)",
    **{f"MG{n:03d}": "tests/test_megatron_oracle.py / test_rules_megatron_flags.py (Megatron-LM's argument code)"
       for n in range(1, 6)},
    **{f"MG{n}": "tests/test_rules_megatron_layout.py::test_oracle_confirms_the_stage_and_cause (Megatron-LM)"
       for n in range(101, 119)},
    **{f"MG{n}": "tests/test_rules_megatron_training.py::test_megatron_rejects_a_bad_fixture_where_the_rule_says "
       "(Megatron-LM)" for n in range(201, 230)},
    "MG301": "tests/test_coverage_map.py::test_framework_reaches_each_rule_site_on_its_bad_fixture_and_the_rule_"
             "reports_it[megatron] (Megatron-LM's parse_args, validate_args and core_transformer_config_from_args "
             "fail at each row's site on its bad fixture, not on the good ones; tests/test_rules_megatron_refused.py; the "
             "rows of implicit sites: tests/test_coverage_implicit.py::test_megatron_fails_at_each_site_on_its_bad_"
             "fixture_and_mutation_finds_no_other, Megatron-LM up to its process groups)",
    **{code: "tests/test_training_arguments.py (transformers 5.24's Trainer and TrainingArguments on the CPU)"
       for code in ("DS435", "DS436", "DS437", "DS438", "DS439", "DS449", "DS450")},
    "AC107": "tests/test_accelerate_oracle.py::test_the_launcher_and_mode_distributed_type_chooses (Accelerate's "
             "launch_command: the launcher and the exported mode)",
    "AC109": "tests/test_coverage_map.py (accelerate launch on the bad fixture: the DeepSpeed plugin's "
             "HfDeepSpeedConfig refuses the path that names no file)",
    "AC108": "tests/test_accelerate_oracle.py::test_ac108_the_script_literal_wins_over_the_launch_precision (the "
             "real Accelerator under the launch's ACCELERATE_MIXED_PRECISION)",
    "AX111": "tests/test_axolotl_oracle.py::test_ax111_fp16_is_dropped_when_bf16_is_on (Axolotl's schema and "
             "resolve_dtype)",
    "AX012": "tests/test_axolotl_oracle.py::test_ax012_the_schema_receives_the_octal_number (PyYAML and Axolotl's "
             "schema)",
    "AC013": "tests/test_accelerate_oracle.py::test_ac013_accelerate_loads_the_number_the_message_says (Accelerate's "
             "load_config_from_file)",
    "SS004": "tests/test_hjson.py::test_ss004_message_is_what_the_loaders_do (DeepSpeed's loader reads it, "
             "json.load refuses it)",
    "SS005": "about the files shardshift reads, no framework",
    "DS423": "tests/test_rules_deepspeed_pipeline.py::test_deepspeed_ignores_the_section_for_a_plain_model_and_the_"
             "pipeline_engine_refuses_forward (deepspeed.initialize on the CPU)",
    **{f"DS{n}": "tests/test_deepspeed_agreement.py (DeepSpeed 0.19.8's own verdict on each case of issue 14)"
       for n in range(444, 450)},
    "DS453": "tests/test_coverage_map.py::test_framework_reaches_each_rule_site_on_its_bad_fixture_and_the_rule_reports_"
             "it[deepspeed] (deepspeed.initialize with training_data builds the curriculum sampler on each fixture)",
    "DS455": "tests/test_coverage_map.py (deepspeed.initialize builds the random-LTD scheduler on each fixture; "
             "forward=1 runs the first training forward)",
    "DS456": "tests/test_rules_deepspeed_optimizer_values.py::test_deepspeed_refuses_exactly_the_files_ds456_reports "
             "(deepspeed.initialize on the CPU builds each fixture's optimizer)",
    "DS454": "tests/test_rules_deepspeed_tensor_parallel.py::test_the_shape_checks_are_deepspeeds and the coverage "
             "map's stage=autotp (the engine's _apply_autotp_partitioning on each fixture)",
    "AX116": "tests/test_coverage_implicit.py::test_axolotl_fails_at_each_site_on_its_bad_fixture_and_mutation_finds_"
             "no_other (Axolotl's validation and normalize_config on each implicit site's fixtures)",
    "TA011": "tests/test_coverage_implicit.py::test_transformers_fails_at_each_site_on_its_bad_fixture_and_mutation_"
             "finds_no_other (transformers 5.24.0's TrainingArguments on each implicit site's fixtures) and "
             "tests/test_transformers_arguments.py::test_ta011_reports_exactly_the_calls_training_arguments_fails_on_"
             "without_a_check (TA011 against TrainingArguments' TypeError and AttributeError, value type by type)",
    "AX115": "tests/test_coverage_map.py (stage=parallel: Axolotl's own build_parallelism_config on 8 ranks' "
             "worth of world)",
    "AX114": "tests/test_coverage_map.py (stage=normalize: Axolotl's own normalize_config on each fixture, with a "
             "stand-in causal model config)",
    "AX113": "tests/test_coverage_map.py (stage=adapter: Axolotl's own check_tensor_parallel_rl_adapter_support and "
             "_validate_mixlora_lora_target_modules on each fixture)",
    "AX112": "tests/test_axolotl_oracle.py::test_ax112_refuses_exactly_the_dtype_pairs_axolotl_refuses and the coverage "
             "map's stage=qat (prepare_model_for_qat on each fixture)",
    **{code: f"tests/test_fsdp2_catalog_oracle.py::{test} (torch on the CPU)" for code, test in FSDP2_CLAIMS.items()},
    **{code: f"{test} (torch's argument checks, site by site)" for code, test in FSDP2_COVERAGE_CLAIMS.items()},
    **{code: f"{test} (torch computing with the value, implicit site by site)"
       for code, test in FSDP2_IMPLICIT_CLAIMS.items()},
}

# Rules whose messages state a framework behaviour that no test confirms yet (printed by the guard).
UNCONFIRMED = {
    "DS341": "round_robin_gradients only matters under CPU offload: DeepSpeed internals (stage_1_and_2.py), not "
             "observable on one CPU rank",
    "DS342": "zero_hpz_partition_size needs 8+ ranks; on one rank deepspeed.initialize fails earlier "
             "(_set_zero_group_parallelism)",
    "DS422": "the Hugging Face models' own checkpointing: a transformers claim, no oracle",
    **{code: f"FSDP2: {why}; no oracle on one CPU rank (tests/test_fsdp2_catalog_oracle.py NO_RUNNABLE_CLAIM)"
       for code, why in FSDP2_NOT_RUNNABLE.items()},
}

BEHAVIOUR = re.compile(r"\b(rejects?|raises?|asserts?|refuses?|ignores?|ignored|silently|uses the default|"
                       r"overrides?|overwritten|turns? into|fails?|stops with|drops?|accepts?|never used)\b", re.I)


def _fixture_code(fixture: str) -> str:
    return fixture.split("/")[-2]


def _claims(fixture: str) -> tuple[Claim, ...]:
    value = CLAIMS[fixture]
    return value if isinstance(value, tuple) else (value,)


CASES = [(fixture, index, claim) for fixture in CLAIMS for index, claim in enumerate(_claims(fixture))]
CASE_IDS = [f"{fixture.removeprefix('deepspeed/rules/')}#{index}" for fixture, index, _ in CASES]


# --- shardshift's findings (one CLI run per set of arguments) ---------------------------------


def _is_generated(fixture: str) -> bool:
    return fixture.startswith("generated/")


@pytest.fixture(scope="module")
def findings(tmp_path_factory) -> dict[str, list[dict]]:
    """fixture (below fixtures/) -> its findings, each fixture checked with its claim's arguments;
    the generated files in a folder of their own (with a .git: no consumer search beyond it)."""
    folder = tmp_path_factory.mktemp("generated")
    (folder / ".git").mkdir()
    for name, (config, _) in GENERATED.items():
        (folder / f"{name}.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    runs: dict[tuple[str, ...], list[str]] = {}
    for fixture, _, claim in CASES:
        runs.setdefault(claim.args, [])
        if fixture not in runs[claim.args]:
            runs[claim.args].append(fixture)
    found: dict[str, list[dict]] = {}
    for args, fixtures in runs.items():
        paths = {((folder / f.removeprefix("generated/")) if _is_generated(f) else FIXTURES / f).resolve(): f
                 for f in fixtures}
        _, output = check_json(*args, *map(str, paths))
        for finding in output["findings"]:
            name = paths.get((ROOT / finding["file"]).resolve())
            if name is not None:
                found.setdefault(name, []).append(finding)
    return found


def _finding(findings: dict, fixture: str, claim: Claim) -> dict:
    code = claim.code or _fixture_code(fixture)
    ours = [f for f in findings.get(fixture, []) if f["code"] == code]
    if len(ours) > 1 and claim.error:  # one rule, two refusals in one file: the claim's is the one quoting it
        ours = [f for f in ours if claim.error in f["message"]]
    assert len(ours) == 1, f"{fixture}: expected one {code} finding, got {findings.get(fixture)}"
    return ours[0]


@pytest.mark.parametrize("fixture,index,claim", CASES, ids=CASE_IDS)
def test_message_states_the_claim(findings, fixture, index, claim):
    message = _finding(findings, fixture, claim)["message"]
    assert claim.says in message, f"{fixture}: the message no longer says {claim.says!r}: {message}"


# --- the oracles --------------------------------------------------------------------------------


def _config(fixture: str, claim: Claim) -> dict:
    if _is_generated(fixture):
        return copy.deepcopy(GENERATED[fixture.removeprefix("generated/").removesuffix(".json")][0])
    path = FIXTURES / fixture
    config = json.loads(path.read_text(encoding="utf-8")) if claim.json_load else oracles.load_file(path)
    if claim.fill:
        config = oracles.fill_auto_like_trainer(config, 1)
    if claim.variant is not None:
        config = claim.variant(config)
    return config


def runnable(config: dict, claim: Claim) -> dict:
    """The config made runnable on one CPU rank (see the module doc)."""
    config = copy.deepcopy(config)
    if claim.add_optimizer and "optimizer" not in config:
        config["optimizer"] = copy.deepcopy(OPT)
        zero = config.get("zero_optimization")
        if isinstance(zero, dict) and ("offload_optimizer" in zero or zero.get("cpu_offload")):
            config["zero_force_ds_cpu_optimizer"] = False  # torch AdamW on the host: no CPU-Adam build
    if isinstance(config.get("fp16"), dict) and config["fp16"].get("enabled") is True and "fp16" not in claim.says:
        config["fp16"]["enabled"] = False  # fp16 fails on the CPU only (oracles.md)
    if isinstance(config.get("train_batch_size"), (int, float)):
        ok, error, _ = oracles.deepspeed_accepts({k: v for k, v in config.items() if k != "optimizer"}, 1)
        if not ok and "Check batch related parameters" in (error or ""):
            del config["train_batch_size"]
    return config


def _parse(config: dict, world: int) -> tuple[Any, str | None]:
    """`DeepSpeedConfig(config)` at `world` ranks: (the object, None) or (None, "Type: message")."""
    deepspeed = oracles.deepspeed_module()
    dist = deepspeed.runtime.config.dist
    saved = dist.get_world_size, dist.get_rank
    dist.get_world_size, dist.get_rank = (lambda *a, **k: world), (lambda *a, **k: 0)
    try:
        return deepspeed.runtime.config.DeepSpeedConfig(copy.deepcopy(config)), None
    except Exception as error:  # noqa: BLE001 - every refusal is a result here
        return None, f"{type(error).__name__}: {error}"
    finally:
        dist.get_world_size, dist.get_rank = saved


ENGINE_STAGES = ("initialize", "step", "runs")

HANDOFF = r'''
import json, os, sys, tempfile
os.environ["DS_ACCELERATOR"] = "cpu"
from accelerate.utils import DeepSpeedPlugin
from transformers import TrainingArguments
from transformers.integrations.deepspeed import HfTrainerDeepSpeedConfig
results = {}
for name, case in json.load(sys.stdin).items():
    result = results[name] = {}
    if case.get("accelerate") is not None:
        plugin = DeepSpeedPlugin(hf_ds_config=case["accelerate"])
        plugin.set_mixed_precision("bf16")
        result["accelerate"] = plugin.deepspeed_config
    if case.get("trainer") is not None:
        with tempfile.TemporaryDirectory() as folder:
            args = TrainingArguments(output_dir=folder, bf16=True, weight_decay=0.05, use_cpu=True, report_to="none")
            trainer = HfTrainerDeepSpeedConfig(case["trainer"])
            trainer.trainer_config_process(args)
        result["trainer"] = trainer.config
print(json.dumps(results, default=str))
'''


@pytest.fixture(scope="module")
def handoffs() -> dict[str, dict]:
    """What Accelerate's DeepSpeedPlugin (`set_mixed_precision("bf16")`) and transformers'
    HfTrainerDeepSpeedConfig (`trainer_config_process` with bf16=True, weight_decay=0.05) make of
    each "handoff" case's configs (`claim.extra["accelerate"]` / `["trainer"]`: the fixture changed
    as the claim needs), in one child process."""
    import subprocess
    import sys

    oracles.require_installed("accelerate", "transformers")
    cases = {}
    for (fixture, _, claim), name in zip(CASES, CASE_IDS):
        if claim.stage == "handoff":
            config = _config(fixture, claim)
            config.setdefault("zero_optimization", {"stage": 2})  # Accelerate's plugin requires the section
            cases[name] = {role: change(config) for role, change in claim.extra.items()}
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("ACCELERATE_")}, "DS_ACCELERATOR": "cpu",
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_VERBOSITY": "error", "PYTHONWARNINGS": "ignore"}
    done = subprocess.run([sys.executable, "-c", HANDOFF], input=json.dumps(cases), capture_output=True, text=True,
                          env=env, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def engines() -> dict[str, dict]:
    """Every engine case through `deepspeed.initialize`, in one child process."""
    oracles.require_installed("deepspeed", "torch")
    import deepspeed_initialize_oracle

    cases = {}
    for (fixture, index, claim), name in zip(CASES, CASE_IDS):
        if claim.stage in ENGINE_STAGES:
            cases[name] = {"config": runnable(_config(fixture, claim), claim), "steps": claim.steps, "probe": PROBE,
                           **claim.extra}
    for code in RANGE_CODES:
        for path in sorted((RULES / code).glob("good*.json")):
            cases[f"good:{code}/{path.name}"] = {"config": oracles.load_file(path), "steps": 2, "probe": PROBE}
    return deepspeed_initialize_oracle.engine_outcomes(cases)


@pytest.mark.parametrize("fixture,index,claim", CASES, ids=CASE_IDS)
def test_the_framework_does_what_the_message_says(engines, handoffs, fixture, index, claim):
    name = CASE_IDS[CASES.index((fixture, index, claim))]
    if claim.stage == "handoff":
        assert claim.engine(handoffs[name], _config(fixture, claim)), f"{fixture}: {handoffs[name]}"
        return
    if claim.stage == "load":
        with pytest.raises(ValueError, match=claim.error):
            oracles.load_file(FIXTURES / fixture)
        return
    config = _config(fixture, claim)
    if claim.stage == "parse":
        for world in claim.worlds:
            parsed, error = _parse(config, world)
            assert parsed is None, f"{fixture}: DeepSpeedConfig accepts it at {world} rank(s)"
            assert claim.error in error, f"{fixture} at {world} rank(s): {error}"
        return
    parsed, error = _parse(config if claim.stage == "accepts" else runnable(config, claim), 1)
    if claim.stage == "accepts":
        assert parsed is not None, f"{fixture}: DeepSpeedConfig refuses it: {error}"
        assert claim.parsed(parsed, config), f"{fixture}: DeepSpeed does not do what the message says"
        return
    outcome = engines[name]
    if claim.stage in ("initialize", "step"):
        assert outcome["stage"] == claim.stage, f"{fixture}: expected a refusal at {claim.stage}, got {outcome}"
        assert claim.error in outcome["error"], f"{fixture}: {outcome['error']}"
        if claim.stage == "initialize" and claim.error not in (error or ""):
            assert parsed is not None, f"{fixture}: refused while parsing already: {error}"
        return
    assert outcome["stage"] is None, f"{fixture}: DeepSpeed refuses the runnable config: {outcome['error']}"
    assert claim.engine(outcome, config), f"{fixture}: the engine does not do what the message says: {outcome}"


# --- the guard: every behaviour a rule states is confirmed somewhere ------------------------------


def _bad_fixtures() -> list[str]:
    found = []
    for folder in (RULES, PLAN):
        for path in sorted(folder.rglob("bad*")):
            if path.is_file():
                found.append(path.relative_to(FIXTURES).as_posix())
    return found


def test_every_bad_fixture_of_a_claimed_rule_is_confirmed_or_exempt():
    codes = {_fixture_code(fixture) for fixture in CLAIMS}
    missing = [fixture for fixture in _bad_fixtures() if _fixture_code(fixture) in codes
               and fixture not in CLAIMS and fixture not in FIXTURE_EXEMPT]
    assert missing == [], f"bad fixtures of rules in CLAIMS without a claim: {missing}"
    unknown = [fixture for fixture in (*CLAIMS, *FIXTURE_EXEMPT)
               if not _is_generated(fixture) and not (FIXTURES / fixture).is_file()]
    assert unknown == []


def test_every_rule_that_states_a_behaviour_has_a_claim_or_an_exemption():
    from shardshift.rules import all_rules

    claimed = {claim.code or _fixture_code(fixture) for fixture, _, claim in CASES}
    stating, unaccounted = [], []
    for rule in all_rules():
        text = inspect.getsource(rule)
        if not BEHAVIOUR.search(text):
            continue
        stating.append(rule.code)
        if rule.code not in claimed and rule.code not in EXEMPT and rule.code not in UNCONFIRMED:
            unaccounted.append(rule.code)
    assert unaccounted == [], (f"rules stating a framework behaviour without a claim in CLAIMS, an EXEMPT entry or "
                               f"an UNCONFIRMED entry: {unaccounted}")
    assert len(stating) > 100
    overlap = claimed & (EXEMPT.keys() | UNCONFIRMED.keys())
    assert overlap == set(), f"in CLAIMS and exempt at once: {overlap}"
    print("\nrule messages no test confirms yet:")
    for code, reason in sorted(UNCONFIRMED.items()):
        print(f"  {code}: {reason}")


# --- the range checks of DeepSpeed's schedules: CLI cases -------------------------------------------

# (fixture below RULES, code, severity, pointer, marker in the file, fix)
RANGE_CASES = [
    ("DS415/bad_null.json", "DS415", "error", "/scheduler/params/warmup_num_steps", '"warmup_num_steps": |null', None),
    ("DS415/bad_total.json", "DS415", "error", "/scheduler/params/total_num_steps", '"total_num_steps": |"10000"',
     "10000"),
    ("DS440/bad.json", "DS440", "error", "/scheduler/params/cycle_first_step_size", '"cycle_first_step_size": |0',
     None),
    ("DS440/bad_second.json", "DS440", "error", "/scheduler/params/cycle_second_step_size",
     '"cycle_second_step_size": |-500', None),
    ("DS440/bad_null.json", "DS440", "error", "/scheduler/params/cycle_first_step_size",
     '"cycle_first_step_size": |null', "2000"),
    ("DS441/bad.json", "DS441", "error", "/scheduler/params/warmup_min_lr", '"warmup_min_lr": |-1e-5', "0"),
    ("DS441/bad_range.json", "DS441", "error", "/scheduler/params/lr_range_test_step_rate",
     '"lr_range_test_step_rate": |-0.5', "1.0"),
    ("DS442/bad.json", "DS442", "warning", "/scheduler/params/warmup_min_lr", '"warmup_min_lr": |1e-3', None),
    ("DS442/bad_cycle.json", "DS442", "warning", "/scheduler/params/cycle_min_lr", '"cycle_min_lr": |1e-4', None),
    ("DS443/bad.json", "DS443", "warning", "/scheduler/params/cos_min_ratio", '"cos_min_ratio": |10', None),
    ("DS443/bad_momentum.json", "DS443", "error", "/scheduler/params/cycle_max_mom", '"cycle_max_mom": |1.5', "0.9"),
]
RANGE_CODES = ("DS440", "DS441", "DS442", "DS443")


@pytest.fixture(scope="module")
def range_run() -> dict[str, list[dict]]:
    folders = [str(RULES / code) for code in (*RANGE_CODES, "DS415")]
    _, output = check_json(*folders)
    found: dict[str, list[dict]] = {}
    for finding in output["findings"]:
        found.setdefault(Path(os.path.relpath((ROOT / finding["file"]).resolve(), RULES)).as_posix(), []).append(finding)
    return found


def _position(path: Path, marker: str) -> tuple[int, int]:
    """1-based line and column of `marker` in the file; `|` inside it marks the exact column."""
    line, column = marker_position(path, marker.replace("|", ""))
    return line, column + max(marker.find("|"), 0)


@pytest.mark.parametrize("fixture,code,severity,pointer,marker,fix", RANGE_CASES, ids=[c[0] for c in RANGE_CASES])
def test_range_rule_reports_at_the_value(range_run, fixture, code, severity, pointer, marker, fix):
    ours = [f for f in range_run.get(fixture, []) if f["code"] == code]
    assert len(ours) == 1, range_run.get(fixture)
    (finding,) = ours
    assert (ROOT / finding["file"]).resolve() == (RULES / fixture).resolve()
    assert (finding["severity"], finding["pointer"], finding["fix"]) == (severity, pointer, fix)
    assert (finding["line"], finding["column"]) == _position(RULES / fixture, marker)
    errors = [f for f in range_run.get(fixture, []) if f["severity"] == "error" and f["code"] != code]
    assert errors == [], errors


@pytest.mark.parametrize("code", [*RANGE_CODES, "DS415"])
def test_range_rule_good_fixture_is_clean(range_run, code):
    for path in sorted((RULES / code).glob("good*.json")):
        findings = range_run.get(f"{code}/{path.name}", [])
        assert [f for f in findings if f["code"] == code or f["severity"] == "error"] == [], findings


def test_range_rules_are_documented():
    from shardshift.rules import all_rules

    registered = {rule.code: rule for rule in all_rules()}
    for code in RANGE_CODES:
        assert code in registered, f"{code} is not registered"
        doc = registered[code].documentation()
        for section in ("## What it does", "## Why is this bad", "## Example", "## Use instead"):
            assert section in doc, (code, section)
        assert list((RULES / code).glob("bad*.json")) and list((RULES / code).glob("good*.json"))


def test_good_range_fixtures_run_in_deepspeed(engines):
    """DeepSpeed builds and steps the schedules of the range rules' good fixtures."""
    goods = {name: outcome for name, outcome in engines.items() if name.startswith("good:")}
    assert len(goods) == len(RANGE_CODES)
    for name, outcome in goods.items():
        assert outcome["stage"] is None, f"{name}: {outcome['error']}"
        assert all(lr >= 0 for lr in outcome["lrs"].values()), (name, outcome["lrs"])
