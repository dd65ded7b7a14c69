"""Range checks on the parameters of DeepSpeed's own LR schedules (deepspeed/runtime/lr_schedules.py,
0.19.8): what their constructors refuse (DS440) and what they accept without a check although it
cannot be meant (DS441-DS443). Step counts that are not positive ints are DS415 (scheduler.py)."""

from __future__ import annotations

import json
from typing import Any, Iterable

from shardshift.document import Document
from shardshift.rules.base import Context, Finding, Rule
from shardshift.rules.deepspeed.optimizer import is_number, params_of

P = "/scheduler/params"


# (Small copies of scheduler.py's helpers: scheduler.py imports this module, so this one does not
# import it back.)
def scheduler_block(document: Document) -> tuple[dict, str] | None:
    """The scheduler block and its type when the type is a plain string (not "auto")."""
    data = document.data
    block = data.get("scheduler") if isinstance(data, dict) else None
    if not isinstance(block, dict) or not isinstance(block.get("type"), str) or block["type"] == "auto":
        return None
    return block, block["type"]


def _raw(document: Document, pointer: str) -> str:
    node = document.root
    for token in pointer.split("/")[1:]:
        node = node.get(token) if node is not None and node.kind == "object" else None
    if node is None:
        return "?"
    return node.raw if node.kind not in ("object", "array") else json.dumps(node.to_python())


def _number(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else json.dumps(value)

LR_BOUNDS = {"WarmupLR": ("warmup_min_lr", "warmup_max_lr"), "WarmupDecayLR": ("warmup_min_lr", "warmup_max_lr"),
             "OneCycle": ("cycle_min_lr", "cycle_max_lr"), "LRRangeTest": ("lr_range_test_min_lr",)}
RATIOS = {"WarmupCosineLR": ("warmup_min_ratio", "cos_min_ratio")}
MOMENTA = ("cycle_min_mom", "cycle_max_mom")
ONE_CYCLE_DEFAULTS = {"cycle_min_mom": 0.8, "cycle_max_mom": 0.9}


def _own_schedule(document: Document, names: Iterable[str]) -> tuple[dict, str] | None:
    found = scheduler_block(document)
    if found is None or found[1] not in names:
        return None
    return params_of(found[0]), found[1]


class OneCycleStepSizeInvalid(Rule):
    """A OneCycle step size DeepSpeed refuses: the first half not positive, the second negative.

    ## What it does
    Checks `cycle_first_step_size` (default 2000) and `cycle_second_step_size` (default: the
    first) of `OneCycle`, the numbers of optimizer steps of the rising and the falling half of the
    cycle. DeepSpeed converts both with `float()`, then requires the first to be positive and the
    second not negative (`OneCycle._initialize_cycle`).

    ## Why is this bad
    `deepspeed.initialize` raises `ValueError: cycle_first_step_size must be positive, got 0.0`
    (or `cycle_second_step_size must be non-negative`) when it builds the scheduler; a `null`
    first step size or a word raises TypeError or ValueError from `float()`. (`null` for the
    second step size is allowed: it means "the same as the first".)

    ## Example
    ```json
    {"scheduler": {"type": "OneCycle", "params": {"cycle_min_lr": 1e-5, "cycle_max_lr": 1e-4,
                                                  "cycle_first_step_size": 0}}}
    ```

    ## Use instead
    ```json
    {"scheduler": {"type": "OneCycle", "params": {"cycle_min_lr": 1e-5, "cycle_max_lr": 1e-4,
                                                  "cycle_first_step_size": 1000}}}
    ```
    """

    code = "DS440"
    name = "one-cycle-step-size-invalid"
    severity = "error"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        found = _own_schedule(document, ("OneCycle",))
        if found is None:
            return
        params, _ = found
        for name, lowest in (("cycle_first_step_size", "positive"), ("cycle_second_step_size", "non-negative")):
            if name not in params or params[name] == "auto":
                continue
            value, pointer = params[name], f"{P}/{name}"
            raw = _raw(document, pointer)
            if value is None:
                if name == "cycle_second_step_size":
                    continue  # null: the same as the first half
                yield self.finding(document, pointer, f"{name} is null: deepspeed.initialize raises TypeError when "
                                   "OneCycle converts it with float(); write the number of optimizer steps of the "
                                   "rising half, e.g. 2000 (the default)", fix="2000")
                continue
            number = _as_float(value)
            if number is None:
                yield self.finding(document, pointer, f"{name} is {raw}, not a number: deepspeed.initialize raises "
                                   "when OneCycle converts it with float(); write a number of optimizer steps")
                continue
            if (number <= 0) if lowest == "positive" else (number < 0):
                yield self.finding(document, pointer, f"{name} is {raw}: deepspeed.initialize raises ValueError "
                                   f"({name} must be {lowest}) when it builds OneCycle; write a "
                                   f"{'positive' if lowest == 'positive' else 'non-negative'} number of optimizer "
                                   "steps")


def _as_float(value: Any) -> float | None:
    """`float(value)` as OneCycle does it (booleans and numeric strings convert); None when it raises."""
    if isinstance(value, (dict, list)) or value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


class SchedulerNegativeLr(Rule):
    """A negative learning rate bound in a DeepSpeed schedule, which DeepSpeed accepts.

    ## What it does
    Checks `warmup_min_lr` and `warmup_max_lr` (WarmupLR, WarmupDecayLR), `cycle_min_lr` and
    `cycle_max_lr` (OneCycle) and `lr_range_test_min_lr` (LRRangeTest), and a negative
    `lr_range_test_step_rate`, which drives the range test's lr below zero.

    ## Why is this bad
    DeepSpeed's schedules never check their bounds: they write the value into every param
    group's `lr`, and the optimizer then steps with a negative learning rate, i.e. it climbs the
    loss instead of descending it. Nothing fails; the loss grows. (torch.optim's own optimizers
    check `lr >= 0` only at construction, before the schedule sets it.)

    ## Example
    ```json
    {"scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": -1e-5, "warmup_max_lr": 1e-4}}}
    ```

    ## Use instead
    ```json
    {"scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 0, "warmup_max_lr": 1e-4}}}
    ```
    """

    code = "DS441"
    name = "scheduler-negative-lr"
    severity = "error"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        found = _own_schedule(document, LR_BOUNDS)
        if found is None:
            return
        params, type_name = found
        for name in LR_BOUNDS[type_name]:
            value = params.get(name)
            if is_number(value) and value < 0:
                yield self.finding(document, f"{P}/{name}", f"{name} is {_raw(document, f'{P}/{name}')}: DeepSpeed's "
                                   f"{type_name} accepts it without a check and sets the optimizer's learning rate "
                                   "negative, so training climbs the loss; use 0 or a positive learning rate", fix="0")
        rate = params.get("lr_range_test_step_rate")
        if type_name == "LRRangeTest" and is_number(rate) and rate < 0:
            pointer = f"{P}/lr_range_test_step_rate"
            yield self.finding(document, pointer, f"lr_range_test_step_rate is {_raw(document, pointer)}: DeepSpeed's "
                               "LRRangeTest accepts it and multiplies its start lr by (1 + rate × steps/step_size), "
                               "which falls to 0 and then below, so the range test trains with a negative learning "
                               "rate; use a positive rate (1.0 is the default)", fix="1.0")


class SchedulerMinAboveMax(Rule):
    """A schedule's lower bound is above its upper bound (lr or momentum), which DeepSpeed accepts.

    ## What it does
    Compares `warmup_min_lr` with `warmup_max_lr` (WarmupLR, WarmupDecayLR), `cycle_min_lr` with
    `cycle_max_lr` and `cycle_min_mom` with `cycle_max_mom` (OneCycle, defaults 0.8 and 0.9).

    ## Why is this bad
    DeepSpeed interpolates between the two values without checking their order: a warmup with
    min above max lowers the learning rate during the warmup; a OneCycle with min above max runs
    the cycle upside down (it starts at the "min", falls to the "max" mid-cycle). The names were
    most likely swapped.

    ## Example
    ```json
    {"scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 1e-3, "warmup_max_lr": 1e-4}}}
    ```

    ## Use instead
    ```json
    {"scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": 1e-4, "warmup_max_lr": 1e-3}}}
    ```
    """

    code = "DS442"
    name = "scheduler-min-above-max"
    severity = "warning"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        found = _own_schedule(document, ("WarmupLR", "WarmupDecayLR", "OneCycle"))
        if found is None:
            return
        params, type_name = found
        pairs = [LR_BOUNDS[type_name]]
        if type_name == "OneCycle" and params.get("cycle_momentum", True) is not False:
            pairs.append(MOMENTA)
        for low_name, high_name in pairs:
            low = params.get(low_name, ONE_CYCLE_DEFAULTS.get(low_name, 0.0 if low_name == "warmup_min_lr" else None))
            high = params.get(high_name, ONE_CYCLE_DEFAULTS.get(high_name))
            if not (is_number(low) and is_number(high)) or low <= high:
                continue
            if low_name not in params and high_name not in params:
                continue
            pointer = f"{P}/{low_name}" if low_name in params else f"{P}/{high_name}"
            what = "learning rate" if low_name.endswith("lr") else "beta1 (momentum)"
            effect = ("so the warmup lowers the learning rate instead of raising it" if low_name == "warmup_min_lr"
                      else f"so the {what} falls during the first half of the cycle and rises during the second, "
                      "the opposite of a one-cycle schedule")
            yield self.finding(document, pointer,
                               f"{low_name} {_number(low)} is above {high_name} {_number(high)}: DeepSpeed's "
                               f"{type_name} interpolates the {what} between them without checking their order, "
                               f"{effect}; swap the two values")


class SchedulerRatioOutOfRange(Rule):
    """A ratio or momentum of a DeepSpeed schedule outside its range, which DeepSpeed accepts.

    ## What it does
    Checks `warmup_min_ratio` and `cos_min_ratio` of `WarmupCosineLR` (fractions of the
    optimizer's lr, in [0, 1]) and `cycle_min_mom` / `cycle_max_mom` of `OneCycle` with
    `cycle_momentum` on (Adam's beta1, in [0, 1)).

    ## Why is this bad
    DeepSpeed uses them as written: a `cos_min_ratio` above 1 makes the "decay" raise the
    learning rate above the peak, a negative one reaches lr 0 before the end of the run (the lr
    is clamped at 0); a `warmup_min_ratio` above 1 starts above the peak, a negative one starts
    with a negative lr. A momentum of 1 or more is an Adam beta1 that never forgets (the update
    stops following the gradient); torch checks betas only when the optimizer is built, not when
    OneCycle writes them later.

    ## Example
    ```json
    {"scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 10000, "cos_min_ratio": 10}}}
    ```

    ## Use instead
    ```json
    {"scheduler": {"type": "WarmupCosineLR", "params": {"total_num_steps": 10000, "cos_min_ratio": 0.1}}}
    ```
    """

    code = "DS443"
    name = "scheduler-ratio-out-of-range"
    severity = "warning"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        found = _own_schedule(document, ("WarmupCosineLR", "OneCycle"))
        if found is None:
            return
        params, type_name = found
        if type_name == "WarmupCosineLR":
            for name in RATIOS[type_name]:
                value = params.get(name)
                if not is_number(value) or 0 <= value <= 1:
                    continue
                pointer = f"{P}/{name}"
                if name == "cos_min_ratio":
                    effect = ("the decay ends above the peak learning rate (it rises after the warmup)" if value > 1
                              else "the learning rate reaches 0 before the end of the run and stays there")
                else:
                    effect = ("the warmup starts above the peak learning rate" if value > 1
                              else "the first steps run with a negative learning rate")
                yield self.finding(document, pointer, f"{name} is {_raw(document, pointer)}, outside [0, 1]: DeepSpeed's "
                                   f"WarmupCosineLR multiplies the optimizer's lr by it without a check, so {effect}; "
                                   "use a fraction between 0 and 1")
            return
        if params.get("cycle_momentum", True) is False:
            return
        for name in MOMENTA:
            value = params.get(name)
            if not is_number(value) or 0 <= value < 1:
                continue
            pointer = f"{P}/{name}"
            yield self.finding(document, pointer, f"{name} is {_raw(document, pointer)}, outside [0, 1): DeepSpeed's "
                               "OneCycle writes it as the optimizer's beta1 without a check (torch checks betas only "
                               f"when the optimizer is built), so Adam runs with beta1 {_number(value)}; use a value "
                               f"such as {ONE_CYCLE_DEFAULTS[name]} (the default)", severity="error",
                               fix=str(ONE_CYCLE_DEFAULTS[name]))
