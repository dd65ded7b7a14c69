"""Rules about the `scheduler` block of a ds_config. DeepSpeed looks the type up case-sensitively
in `deepspeed.runtime.lr_schedules`, then in `torch.optim.lr_scheduler`, and calls it as
`Scheduler(optimizer, **params)` (engine.py `_scheduler_from_config`). The signatures live in
formats/deepspeed/optimizers.py; the schedules' formulas in ../shared/reference/deepspeed.md §5.3."""

from __future__ import annotations

import json
from typing import Any, Iterable

from shardshift.document import Document
from shardshift.formats.deepspeed.optimizers import (
    DEEPSPEED_SCHEDULERS,
    INT_STEP_PARAMS,
    STEP_COUNT_INT_CHECK_SINCE,
    TORCH_SCHEDULERS,
    WARMUP_LR_MAX_FOLLOWS_OPTIMIZER_SINCE,
    WARMUP_TYPES,
    built_optimizer,
    resolve_optimizer,
    scheduler_signature,
)
from shardshift.rules.base import Context, Finding, Rule, clear_match, did_you_mean
from shardshift.rules.deepspeed.optimizer import is_number, optimizer_block, optimizer_offload, params_of

P = "/scheduler/params"


def scheduler_block(document: Document) -> tuple[dict, str] | None:
    """The scheduler block and its type when the type is a plain string (not "auto")."""
    data = document.data
    if not isinstance(data, dict):
        return None
    block = data.get("scheduler")
    if not isinstance(block, dict) or not isinstance(block.get("type"), str) or block["type"] == "auto":
        return None
    return block, block["type"]


def _version(version: tuple[int, ...] | None, since: tuple[int, ...]) -> bool:
    """Whether DeepSpeed `version` (None: the newest) has the behaviour introduced in `since`."""
    return version is None or tuple(version) >= since


def _raw(document: Document, pointer: str) -> str:
    node = document.root
    for token in pointer.split("/")[1:]:
        node = node.get(token) if node is not None and node.kind == "object" else None
    if node is None:
        return "?"
    return node.raw if node.kind not in ("object", "array") else json.dumps(node.to_python())


class UnknownSchedulerType(Rule):
    """The scheduler type is not one DeepSpeed can build (the name is case-sensitive).

    ## What it does
    Checks `scheduler.type` the way `deepspeed.initialize` does: one of DeepSpeed's schedules
    (`WarmupLR`, `WarmupDecayLR`, `WarmupCosineLR`, `OneCycle`, `LRRangeTest`) or a class of
    `torch.optim.lr_scheduler` (`CosineAnnealingLR`, `StepLR`, ...), spelled exactly. Suggests the
    closest name. A `scheduler` block without `type` is reported too: DeepSpeed ignores it.

    ## Why is this bad
    Unlike the optimizer type, the scheduler type is not lower-cased: `warmuplr` or
    `WarmUpLR` stops `deepspeed.initialize` with "DeepSpeed does not recognize LR scheduler".

    ## Example
    ```json
    {"scheduler": {"type": "WarmUpLR", "params": {"warmup_num_steps": 100}}}
    ```

    ## Use instead
    ```json
    {"scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 100}}}
    ```
    """

    code = "DS410"
    name = "unknown-scheduler-type"
    severity = "error"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        if not isinstance(data, dict) or not isinstance(data.get("scheduler"), dict):
            return
        if "type" not in data["scheduler"]:
            yield self.finding(document, "/scheduler", "the scheduler block has no \"type\", so DeepSpeed ignores the "
                               "whole block (no scheduler is built from it); add \"type\", e.g. \"WarmupLR\"", key=True)
            return
        found = scheduler_block(document)
        if found is None:
            return
        _, type_name = found
        if scheduler_signature(type_name) is not None:
            return
        suggestion = did_you_mean(type_name, [*DEEPSPEED_SCHEDULERS, *TORCH_SCHEDULERS])
        message = (f"scheduler type {type_name!r} is neither a DeepSpeed schedule nor a torch.optim.lr_scheduler "
                   "class (the name is case-sensitive): deepspeed.initialize stops with \"DeepSpeed does not "
                   f"recognize LR scheduler {type_name}\"")
        message += f"; did you mean {suggestion!r}?" if suggestion else \
            "; use WarmupLR, WarmupDecayLR, WarmupCosineLR, OneCycle, LRRangeTest or a torch scheduler class name"
        known = [*DEEPSPEED_SCHEDULERS, *TORCH_SCHEDULERS]
        safe = suggestion is not None and clear_match(type_name, known) == suggestion
        yield self.finding(document, "/scheduler/type", message, fix=json.dumps(suggestion) if suggestion else None,
                           fix_kind="replace-value" if safe else None)


class UnknownSchedulerParam(Rule):
    """A scheduler parameter the scheduler's constructor does not take.

    ## What it does
    `scheduler.params` become keyword arguments of the scheduler class. This rule reports every
    parameter the class does not take, with the closest name it does take (`warmup_steps` for
    `warmup_num_steps`, `total_steps` for `total_num_steps`).

    ## Why is this bad
    `deepspeed.initialize` fails with `TypeError: __init__() got an unexpected keyword argument`
    after the job has started.

    ## Example
    ```json
    {"scheduler": {"type": "WarmupLR", "params": {"warmup_max_lr": 1e-4, "warmup_steps": 100}}}
    ```

    ## Use instead
    ```json
    {"scheduler": {"type": "WarmupLR", "params": {"warmup_max_lr": 1e-4, "warmup_num_steps": 100}}}
    ```
    """

    code = "DS411"
    name = "unknown-scheduler-param"
    severity = "error"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        found = scheduler_block(document)
        if found is None:
            return
        block, type_name = found
        signature = scheduler_signature(type_name)
        if signature is None:
            return
        for name in params_of(block):
            if name in signature.names:
                continue
            suggestion = did_you_mean(name, signature.names)
            message = (f"{type_name} takes no parameter {name!r}: deepspeed.initialize fails with TypeError "
                       f"(unexpected keyword argument {name!r})")
            message += f"; did you mean {suggestion!r}?" if suggestion else \
                f"; remove it ({type_name} takes {', '.join(signature.names)})"
            safe = suggestion is not None and clear_match(name, signature.names) == suggestion
            yield self.finding(document, f"{P}/{name}", message, fix=suggestion, key=True,
                               fix_kind="rename-key" if safe else None)


class SchedulerRequiredParamMissing(Rule):
    """A scheduler parameter without a default is missing (such as `total_num_steps`).

    ## What it does
    Reports the required parameters of the scheduler class that `scheduler.params` does not
    give: `total_num_steps` for `WarmupDecayLR` and `WarmupCosineLR`, `cycle_min_lr` and
    `cycle_max_lr` for `OneCycle`, `T_max` for `CosineAnnealingLR`, and so on.

    ## Why is this bad
    `deepspeed.initialize` fails with `TypeError: __init__() missing 1 required positional
    argument: 'total_num_steps'`. The Hugging Face Trainer fills `total_num_steps` only when the
    key is present with the value `"auto"`; a missing key stays missing.

    ## Example
    ```json
    {"scheduler": {"type": "WarmupDecayLR", "params": {"warmup_max_lr": 1e-4, "warmup_num_steps": 100}}}
    ```

    ## Use instead
    ```json
    {"scheduler": {"type": "WarmupDecayLR",
                   "params": {"warmup_max_lr": 1e-4, "warmup_num_steps": 100, "total_num_steps": 10000}}}
    ```
    (or `"total_num_steps": "auto"` under the Hugging Face Trainer)
    """

    code = "DS412"
    name = "scheduler-required-param-missing"
    severity = "error"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        found = scheduler_block(document)
        if found is None:
            return
        block, type_name = found
        signature = scheduler_signature(type_name)
        if signature is None:
            return
        params = params_of(block)
        missing = [name for name in signature.required if name not in params]
        if not missing:
            return
        pointer = P if isinstance(block.get("params"), dict) else "/scheduler/type"
        names = ", ".join(missing)
        hint = " (\"auto\" under the Hugging Face Trainer)" if missing == ["total_num_steps"] else ""
        yield self.finding(document, pointer,
                           f"{type_name} needs {names}, which scheduler.params does not give: deepspeed.initialize "
                           f"fails with TypeError (missing required argument {missing[0]!r}); add {names}{hint}",
                           key=pointer == P)


class WarmupLongerThanTotal(Rule):
    """`warmup_num_steps` is larger than `total_num_steps`.

    ## What it does
    For `WarmupDecayLR` and `WarmupCosineLR`, compares the two numbers.

    ## Why is this bad
    The run ends before the warmup does: the learning rate never reaches its peak and the decay
    never starts. DeepSpeed only logs "total_num_steps ... is less than warmup_num_steps". Often
    the two were computed in different units (samples vs. optimizer steps, or before dividing by
    gradient accumulation).

    ## Example
    ```json
    {"scheduler": {"type": "WarmupDecayLR", "params": {"total_num_steps": 1000, "warmup_num_steps": 2000}}}
    ```

    ## Use instead
    ```json
    {"scheduler": {"type": "WarmupDecayLR", "params": {"total_num_steps": 1000, "warmup_num_steps": 100}}}
    ```
    """

    code = "DS413"
    name = "warmup-longer-than-total"
    severity = "warning"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        found = scheduler_block(document)
        if found is None or found[1] not in ("WarmupDecayLR", "WarmupCosineLR"):
            return
        params = params_of(found[0])
        warmup = params.get("warmup_num_steps", 1000)
        total = params.get("total_num_steps")
        if not (is_number(warmup) and is_number(total)) or warmup <= total:
            return
        pointer = f"{P}/warmup_num_steps" if "warmup_num_steps" in params else f"{P}/total_num_steps"
        yield self.finding(document, pointer,
                           f"warmup_num_steps {_number(warmup)} is larger than total_num_steps {_number(total)}: "
                           f"{found[1]} never reaches its peak learning rate and never decays; make the warmup "
                           "shorter than the run (both count optimizer steps)")


def _number(value: Any) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else json.dumps(value)


class WarmupDecayDefaultPeak(Rule):
    """WarmupDecayLR without `warmup_max_lr` peaks at 0.001, whatever the optimizer's lr.

    ## What it does
    Reports `WarmupDecayLR` (and `WarmupLR` for DeepSpeed before 0.17.2) without
    `warmup_max_lr`. It is an error when the config's optimizer sets another `lr` (that lr is then
    never used), a warning when the lr is not in the file.

    ## Why is this bad
    `WarmupDecayLR`'s `warmup_max_lr` defaults to the constant 0.001, not to the optimizer's lr
    (`WarmupLR` changed to the optimizer's lr in 0.17.2, `WarmupDecayLR` did not). A fine-tuning
    config with `"lr": 2e-5` silently trains at up to 1e-3, fifty times higher.

    ## Example
    ```json
    {"optimizer": {"type": "AdamW", "params": {"lr": 2e-5}},
     "scheduler": {"type": "WarmupDecayLR", "params": {"total_num_steps": 10000, "warmup_num_steps": 500}}}
    ```

    ## Use instead
    ```json
    {"optimizer": {"type": "AdamW", "params": {"lr": 2e-5}},
     "scheduler": {"type": "WarmupDecayLR",
                   "params": {"total_num_steps": 10000, "warmup_num_steps": 500, "warmup_max_lr": 2e-5}}}
    ```
    """

    code = "DS414"
    name = "warmup-decay-default-peak-lr"
    severity = "error"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        found = scheduler_block(document)
        if found is None:
            return
        block, type_name = found
        affected = ("WarmupDecayLR",) if _version(context.deepspeed_version, WARMUP_LR_MAX_FOLLOWS_OPTIMIZER_SINCE) \
            else ("WarmupDecayLR", "WarmupLR")
        if type_name not in affected or "warmup_max_lr" in params_of(block):
            return
        optimizer = optimizer_block(document)
        lr = params_of(optimizer[0]).get("lr") if optimizer else None
        if is_number(lr) and lr == 0.001:
            return
        if is_number(lr):
            severity, about = "error", f"the optimizer's lr {_number(lr)} is never used"
            fix_text = f"add \"warmup_max_lr\": {_number(lr)}"
        else:
            severity = "warning"
            about = "not the optimizer's lr" + (" (\"auto\")" if lr == "auto" else "")
            fix_text = "add \"warmup_max_lr\" (\"auto\" takes the Trainer's learning_rate)"
        pointer = "/scheduler/type"
        yield self.finding(document, pointer,
                           f"{type_name} has no warmup_max_lr, so it warms up to DeepSpeed's default 0.001 and "
                           f"decays from there: {about}; {fix_text}", severity=severity)


class SchedulerStepCountNotInt(Rule):
    """A scheduler step count that is not a positive whole number as DeepSpeed receives it.

    ## What it does
    Checks `warmup_num_steps` (WarmupLR, WarmupDecayLR, WarmupCosineLR) and
    `lr_range_test_step_size` (LRRangeTest). Since DeepSpeed 0.19.3 they must be a positive
    Python `int` (`null` included: it is not the default, it is refused). `total_num_steps`
    (WarmupDecayLR, WarmupCosineLR) may be a float, but `null` or a string makes the constructor's
    comparison with `warmup_num_steps` raise TypeError. A value written with an exponent or a decimal point (`1e3`, `1000.0`) is an int
    when DeepSpeed reads the file itself (hjson) but a float when the Hugging Face Trainer,
    Accelerate or a script's `json.load` reads it: an error when such a reader is found, a warning
    when the file is checked alone. Strings, fractions and values below 1 are always errors.

    ## Why is this bad
    `deepspeed.initialize` raises `ValueError: warmup_num_steps must be a positive integer, got
    1000.0`; the same file worked with plain `deepspeed --deepspeed_config`, and with DeepSpeed
    before 0.19.3.

    ## Example
    ```json
    {"scheduler": {"type": "WarmupLR", "params": {"warmup_max_lr": 1e-4, "warmup_num_steps": 1e3}}}
    ```

    ## Use instead
    ```json
    {"scheduler": {"type": "WarmupLR", "params": {"warmup_max_lr": 1e-4, "warmup_num_steps": 1000}}}
    ```
    """

    code = "DS415"
    name = "scheduler-step-count-not-int"
    severity = "error"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        found = scheduler_block(document)
        if found is None or not _version(context.deepspeed_version, STEP_COUNT_INT_CHECK_SINCE):
            return
        block, type_name = found
        params = params_of(block)
        for name in INT_STEP_PARAMS.get(type_name, ()):
            if name not in params:
                continue
            value, pointer = params[name], f"{P}/{name}"
            raw = _raw(document, pointer)
            refusal = f"deepspeed.initialize raises ValueError ({name} must be a positive integer)"
            if value == "auto" or isinstance(value, bool):
                continue
            if value is None:
                yield self.finding(document, pointer, f"{name} is null: {refusal.replace('integer)', 'integer, got None)')}; "
                                   "write a whole number of optimizer steps, or remove the key for the default 1000"
                                   if name == "warmup_num_steps" else
                                   f"{name} is null: {refusal.replace('integer)', 'integer, got None)')}; write a "
                                   "whole number of optimizer steps, or remove the key for the default 2000")
                continue
            if isinstance(value, str):
                fix = _whole_text(value)
                yield self.finding(document, pointer, f"{name} is the string {raw}: {refusal}; write a number",
                                   fix=fix, fix_kind="replace-value")
            elif isinstance(value, float) and not value.is_integer():
                yield self.finding(document, pointer, f"{name} is {raw}, not a whole number: {refusal}; write a "
                                   "whole number of optimizer steps", fix=str(max(1, round(value))))
            elif is_number(value) and value < 1:
                yield self.finding(document, pointer, f"{name} is {raw}: {refusal}; use at least 1", fix="1")
            elif isinstance(value, float):
                yield from self._float(document, context, name, pointer, raw, int(value), refusal)
        if type_name in ("WarmupDecayLR", "WarmupCosineLR") and "total_num_steps" in params:
            total, pointer = params["total_num_steps"], f"{P}/total_num_steps"
            if total is None or (isinstance(total, str) and total != "auto"):
                shown = "null" if total is None else f"the string {_raw(document, pointer)}"
                yield self.finding(document, pointer, f"total_num_steps is {shown}: {type_name} compares it with "
                                   "warmup_num_steps when it is built, so deepspeed.initialize raises TypeError; write "
                                   "the number of optimizer steps of the run (\"auto\" under the Hugging Face Trainer)",
                                   fix=_whole_text(total) if isinstance(total, str) else None)

    def _float(self, document, context, name, pointer, raw, whole, refusal) -> Iterable[Finding]:
        from shardshift.rules.deepspeed.auto import consumers_of

        consumers = consumers_of(document, context)
        json_readers = [c for c in consumers if c.loader == "json"]
        if consumers and not json_readers:
            return  # read only by DeepSpeed itself (hjson), which turns 1e3 into 1000
        what = f"{name} is written {raw}, which json.load reads as the float {float(whole)!r}"
        if json_readers:
            yield self.finding(document, pointer, f"{what}, and this file is read with json.load by "
                               f"{json_readers[0].describe()}: {refusal}; write {whole}", fix=str(whole),
                               fix_kind="replace-value")
        else:
            yield self.finding(document, pointer, f"{what} (the Hugging Face Trainer and Accelerate use json.load; "
                               f"DeepSpeed's own loader makes it {whole}): then {refusal}; write {whole}",
                               fix=str(whole), severity="warning", fix_kind="replace-value")


def _whole_text(value: str) -> str | None:
    try:
        number = float(value)
    except ValueError:
        return None
    return str(int(number)) if number.is_integer() and number >= 1 else None


class OneCycleOverridesBetas(Rule):
    """OneCycle rewrites the optimizer's betas: beta1 cycles, beta2 becomes 0.99.

    ## What it does
    Reports a `OneCycle` scheduler whose `cycle_momentum` is not `false`, with an optimizer that
    has betas (the Adam family, Lamb, Lion). It is an error when the config sets `betas` itself
    with a beta2 other than 0.99 (it is overwritten), a warning otherwise.

    ## Why is this bad
    With `cycle_momentum` (default true) DeepSpeed's OneCycle sets every param group's betas to
    `(cycle_min_mom, 0.99)` at construction and then cycles beta1 between `cycle_min_mom` (0.8)
    and `cycle_max_mom` (0.9) (`lr_schedules.py` `_initialize_momentum`). An Adam beta2 of 0.95
    or 0.999 silently becomes 0.99 for the whole run.

    ## Example
    ```json
    {"optimizer": {"type": "AdamW", "params": {"lr": 1e-4, "betas": [0.9, 0.95]}},
     "scheduler": {"type": "OneCycle", "params": {"cycle_min_lr": 1e-5, "cycle_max_lr": 1e-4}}}
    ```

    ## Use instead
    ```json
    {"optimizer": {"type": "AdamW", "params": {"lr": 1e-4, "betas": [0.9, 0.95]}},
     "scheduler": {"type": "OneCycle",
                   "params": {"cycle_min_lr": 1e-5, "cycle_max_lr": 1e-4, "cycle_momentum": false}}}
    ```
    """

    code = "DS416"
    name = "one-cycle-overrides-betas"
    severity = "warning"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        found = scheduler_block(document)
        if found is None or found[1] != "OneCycle":
            return
        params = params_of(found[0])
        if params.get("cycle_momentum", True) is False:
            return
        optimizer = optimizer_block(document)
        if optimizer is None:
            return
        resolved = resolve_optimizer(optimizer[1], context.deepspeed_version)
        if not resolved.known:
            return
        built = built_optimizer(resolved, offload=bool(optimizer_offload(document.data)),
                                torch_adam=bool(params_of(optimizer[0]).get("torch_adam", False)), adam_w_mode=True)
        if built.signature is None or "betas" not in built.signature.names:
            return
        low, high = params.get("cycle_min_mom", 0.8), params.get("cycle_max_mom", 0.9)
        betas = params_of(optimizer[0]).get("betas")
        explicit = isinstance(betas, list) and len(betas) == 2 and all(map(is_number, betas))
        effect = (f"OneCycle with cycle_momentum on (the default) sets the optimizer's betas to ({_number(low)}, 0.99) "
                  f"and cycles beta1 between {_number(low)} and {_number(high)}")
        if explicit and betas[1] != 0.99:
            yield self.finding(document, "/scheduler/type", f"{effect}, so optimizer.params.betas {json.dumps(betas)} "
                               "is never used; add \"cycle_momentum\": false to scheduler.params to keep it",
                               severity="error")
        else:
            yield self.finding(document, "/scheduler/type", f"{effect}, so beta2 is 0.99 for the whole run; add "
                               "\"cycle_momentum\": false to scheduler.params to keep the optimizer's betas")


class UnknownWarmupType(Rule):
    """`warmup_type` is neither "log" nor "linear", so DeepSpeed uses "log".

    ## What it does
    Checks `warmup_type` of WarmupLR, WarmupDecayLR and WarmupCosineLR.

    ## Why is this bad
    DeepSpeed logs "Using unknown warmup_type" and warms up logarithmically (a fast early rise),
    so `"Linear"` or `"cosine"` is ignored. The value is case-sensitive.

    ## Example
    ```json
    {"scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 100, "warmup_type": "Linear"}}}
    ```

    ## Use instead
    ```json
    {"scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 100, "warmup_type": "linear"}}}
    ```
    """

    code = "DS417"
    name = "unknown-warmup-type"
    severity = "error"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        found = scheduler_block(document)
        if found is None or found[1] not in ("WarmupLR", "WarmupDecayLR", "WarmupCosineLR"):
            return
        params = params_of(found[0])
        if "warmup_type" not in params or params["warmup_type"] in WARMUP_TYPES:
            return
        value = params["warmup_type"]
        suggestion = did_you_mean(str(value), WARMUP_TYPES) if isinstance(value, str) else None
        message = (f"warmup_type is {json.dumps(value)}, which DeepSpeed does not know: it logs a warning and warms "
                   "up logarithmically (\"log\")")
        message += f"; did you mean {suggestion!r}?" if suggestion else "; use \"linear\" or \"log\""
        safe = suggestion is not None and clear_match(str(value), WARMUP_TYPES) == suggestion
        yield self.finding(document, f"{P}/warmup_type", message, fix=json.dumps(suggestion) if suggestion else None,
                           fix_kind="replace-value" if safe else None)


class WarmupTypeDefaultLog(Rule):
    """A DeepSpeed warmup schedule without `warmup_type`, which warms up logarithmically.

    ## What it does
    Reports `WarmupLR`, `WarmupDecayLR` and `WarmupCosineLR` without `warmup_type`. DeepSpeed's
    default is `"log"`: the learning rate rises as log(step)/log(warmup_num_steps). It also says
    when the warmup starts at 0 (`warmup_min_lr` or `warmup_min_ratio` 0, their defaults): the
    first two optimizer steps then run at learning rate 0.

    ## Why is this bad
    The Hugging Face and torch warmups are linear; a log warmup reaches half the peak after
    √warmup_num_steps steps (22 of 500), so a config ported from them (or to FSDP2) trains with
    a different schedule. DeepSpeed only logs the schedule at start-up. This is a note: write
    the shape you mean.

    ## Example
    ```json
    {"scheduler": {"type": "WarmupLR", "params": {"warmup_max_lr": 1e-4, "warmup_num_steps": 500}}}
    ```

    ## Use instead
    ```json
    {"scheduler": {"type": "WarmupLR", "params": {"warmup_max_lr": 1e-4, "warmup_num_steps": 500,
                                                  "warmup_type": "linear"}}}
    ```
    """

    code = "DS418"
    name = "warmup-type-default-log"
    severity = "info"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        found = scheduler_block(document)
        if found is None or found[1] not in ("WarmupLR", "WarmupDecayLR", "WarmupCosineLR"):
            return
        block, type_name = found
        params = params_of(block)
        if "warmup_type" in params:
            return  # written (DS417 judges the value)
        start = "warmup_min_ratio" if type_name == "WarmupCosineLR" else "warmup_min_lr"
        lowest = params.get(start, 0)
        zero = ""
        if lowest in (0, "auto") and not isinstance(lowest, bool):
            zero = (f"; from {start} 0{' (the default)' if start not in params else ''} its first two optimizer "
                    "steps run at learning rate 0")
        where = f"{P}" if isinstance(block.get("params"), dict) else "/scheduler"
        yield self.finding(
            document, f"{P}/warmup_type",
            f"{type_name} has no warmup_type: DeepSpeed warms up logarithmically (\"log\": half the peak after the "
            f"square root of warmup_num_steps steps), not linearly like the Hugging Face and torch schedules{zero}; "
            "write \"warmup_type\": \"linear\" for a linear warmup, or \"log\" to keep this", fix='"log"',
            position=document.position(where, key=True))



# The range checks of DeepSpeed's own schedules live in schedule_ranges.py; importing them here
# registers them with this module until RULE_MODULES lists that module itself.
from shardshift.rules.deepspeed.schedule_ranges import (  # noqa: E402,F401
    OneCycleStepSizeInvalid,
    SchedulerMinAboveMax,
    SchedulerNegativeLr,
    SchedulerRatioOutOfRange,
)


class TorchSchedulerOverWrappedOptimizer(Rule):
    """A torch scheduler class in the config while DeepSpeed wraps the optimizer: initialize fails.

    ## What it does
    Reports a `scheduler.type` that is a `torch.optim.lr_scheduler` class (`StepLR`,
    `CosineAnnealingLR`, ...) in a config where DeepSpeed wraps the optimizer it builds or is given:
    ZeRO stage 1, 2 or 3, or fp16 or bf16 training.

    ## Why is this bad
    DeepSpeed builds the config's scheduler over its own optimizer object
    (`_scheduler_from_config(self.optimizer)`), which under ZeRO is `DeepSpeedZeroOptimizer` (or
    `..._Stage3`) and under fp16/bf16 without ZeRO `FP16_Optimizer`. None of them is a
    `torch.optim.Optimizer`, and torch's schedulers check that: `deepspeed.initialize` fails with
    `TypeError: DeepSpeedZeroOptimizer is not an Optimizer`. DeepSpeed's own schedules take any
    optimizer-like object. Without ZeRO in fp32 the optimizer is not wrapped and a torch scheduler
    works.

    ## Example
    ```json
    {"zero_optimization": {"stage": 2}, "scheduler": {"type": "StepLR", "params": {"step_size": 100}}}
    ```

    ## Use instead
    A DeepSpeed schedule (`WarmupLR`, `WarmupDecayLR`, `WarmupCosineLR`, `OneCycle`,
    `LRRangeTest`), or no `scheduler` block and a callable passed as
    `deepspeed.initialize(lr_scheduler=lambda optimizer: torch.optim.lr_scheduler.StepLR(optimizer, 100))`
    (DeepSpeed calls it with the optimizer it wraps, a torch optimizer).
    """

    code = "DS451"
    name = "torch-scheduler-over-wrapped-optimizer"
    severity = "error"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        from shardshift.rules.deepspeed.facts import zero_stage

        found = scheduler_block(document)
        if found is None or found[1] not in TORCH_SCHEDULERS or found[1] in DEEPSPEED_SCHEDULERS:
            return
        data = document.data
        stage = zero_stage(data)
        enabled = {name: block.get("enabled") for name in ("fp16", "bf16", "bfloat16")
                   if isinstance(block := data.get(name), dict)}
        if stage is None or any(value not in (True, False, None) for value in enabled.values()):
            return  # "auto" or a value DeepSpeed rejects: the wrapper is not known from the file
        half = next((name for name, value in enabled.items() if value is True), None)
        if stage >= 1:
            wrapper, why = ("DeepSpeedZeroOptimizer_Stage3" if stage == 3 else "DeepSpeedZeroOptimizer",
                            f"ZeRO stage {stage}")
        elif half is not None:
            # FP16_Optimizer in DeepSpeed 0.19.8 on the CPU for bf16; named generically (the class may differ)
            wrapper, why = None, f"its {'bf16' if half != 'fp16' else 'fp16'} optimizer wrapper without ZeRO"
        else:
            return
        what = f"{wrapper} under {why}" if wrapper else why
        error = f"\"{wrapper} is not an Optimizer\"" if wrapper else "\"... is not an Optimizer\""
        yield self.finding(
            document, "/scheduler/type",
            f"scheduler {found[1]} is a torch.optim.lr_scheduler class, which DeepSpeed builds over its own optimizer "
            f"object ({what}), not a torch Optimizer: deepspeed.initialize fails with TypeError "
            f"({error}); use a DeepSpeed schedule (WarmupLR, WarmupDecayLR, WarmupCosineLR, "
            "OneCycle, LRRangeTest), or drop the block and pass deepspeed.initialize(lr_scheduler=...) a callable that "
            "builds the torch scheduler from the optimizer it is given")
