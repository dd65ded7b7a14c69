"""Precision and gradients: fp16 with bf16, bf16 gradient accumulation under ZeRO, a static fp16
loss scale, and the version-dependent default of gradient clipping (DS310-DS313); dynamic loss
scaling settings DeepSpeed refuses, bf16 gradient reductions, the bf16 overflow check (DS314-DS316)."""

from __future__ import annotations

import json
from typing import Iterable

from shardshift.document import Document
from shardshift.rules.base import Context, Finding, Rule
from shardshift.rules.deepspeed.facts import (
    MISSING,
    accumulation,
    bf16_block,
    enabled,
    get,
    number,
    precision,
    truth,
    uses_auto,
    zero_stage,
)
from shardshift.versions import at_least, default_change, version_text


class Fp16AndBf16Enabled(Rule):
    """fp16 and bf16 both enabled, which DeepSpeed rejects when it parses the config.

    ## What it does
    Reports `fp16.enabled` and `bf16.enabled` (or the legacy `bfloat16.enabled`) both true.
    DeepSpeed asserts "bfloat16 and fp16 modes cannot be simultaneously enabled".

    ## Why is this bad
    The run stops at `deepspeed.initialize`; with Accelerate, `--mixed_precision` conflicting
    with the file raises a ValueError instead. Only one 16-bit format can be the training dtype.

    ## Example
    ```json
    {"fp16": {"enabled": true}, "bf16": {"enabled": true}}
    ```

    ## Use instead
    ```json
    {"fp16": {"enabled": false}, "bf16": {"enabled": true}}
    ```
    (bf16 on GPUs that support it: Ampere and newer; fp16 with loss scaling otherwise.)
    """

    code = "DS310"
    name = "fp16-and-bf16-enabled"
    severity = "error"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        block = bf16_block(data)
        if enabled(data, "/fp16") is True and enabled(data, block) is True:
            yield self.finding(
                document, f"{block}/enabled",
                f"fp16.enabled and {block[1:]}.enabled are both true: DeepSpeed rejects the config at launch (one "
                "training dtype only); set one of them to false (bf16 on Ampere or newer GPUs)")


class Bf16GradientAccumulation(Rule):
    """bf16 with ZeRO and gradient accumulation, accumulating gradients in bf16.

    ## What it does
    Reports bf16 training with ZeRO stage 1-3 and more than one accumulation step when
    `data_types.grad_accum_dtype` is not set. Its default is the model dtype, so every
    micro-batch's gradient is added into a bf16 buffer (8 bits of mantissa).

    ## Why is this bad
    Small gradient contributions are rounded away, and the error grows with the number of
    accumulation steps; the loss curve drifts from an fp32-accumulated run without any message.
    `grad_accum_dtype: "fp32"` accumulates in fp32 (stage 1 switches to DeepSpeed's bf16
    optimizer, stages 2-3 keep fp32 gradient partitions), at the cost of that memory.

    ## Example
    ```json
    {"bf16": {"enabled": true}, "zero_optimization": {"stage": 2}, "gradient_accumulation_steps": 8}
    ```

    ## Use instead
    ```json
    {"bf16": {"enabled": true}, "zero_optimization": {"stage": 2}, "gradient_accumulation_steps": 8,
     "data_types": {"grad_accum_dtype": "fp32"}}
    ```
    """

    code = "DS311"
    name = "bf16-grad-accumulation-in-bf16"
    severity = "warning"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        stage, steps = zero_stage(data), accumulation(data, context.world_size)
        if precision(data) != "bf16" or stage not in (1, 2, 3) or steps is None or steps < 2:
            return
        if get(data, "/data_types/grad_accum_dtype") not in (MISSING, None):
            return
        block = bf16_block(data)
        if truth(get(data, f"{block}/bf16_master_weights_and_grads")) is True:
            return  # bf16 gradients on purpose
        where = "/gradient_accumulation_steps" if "gradient_accumulation_steps" in data else f"{block}/enabled"
        yield self.finding(
            document, "/data_types/grad_accum_dtype",
            f"bf16 with ZeRO stage {stage} and {steps} accumulation steps, and no data_types.grad_accum_dtype: "
            "DeepSpeed accumulates gradients in bf16 (the model dtype), losing precision with every micro-batch; "
            "add \"data_types\": {\"grad_accum_dtype\": \"fp32\"}", fix='"fp32"', position=document.position(where))


class Fp16StaticLossScale(Rule):
    """A static fp16 loss scale (`loss_scale` > 0), which never backs off after an overflow.

    ## What it does
    Reports `fp16.loss_scale` greater than 0 when fp16 is (or may be) enabled. Any value other
    than 0 turns dynamic loss scaling off: DeepSpeed multiplies the loss by this constant.

    ## Why is this bad
    When the scaled gradients overflow, DeepSpeed skips the step and keeps the same scale, so a
    persistent overflow skips every step and training stalls, with only an "OVERFLOW! Skipping
    step" log line. `initial_scale_power`, `loss_scale_window`, `hysteresis` and
    `min_loss_scale` are ignored.

    ## Example
    ```json
    {"fp16": {"enabled": true, "loss_scale": 128}}
    ```

    ## Use instead
    ```json
    {"fp16": {"enabled": true, "loss_scale": 0, "initial_scale_power": 16}}
    ```
    """

    code = "DS312"
    name = "fp16-static-loss-scale"
    severity = "warning"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        if enabled(data, "/fp16") is False:
            return
        scale = number(get(data, "/fp16/loss_scale"))
        if scale is None or not scale > 0 or scale == float("inf"):
            return
        shown = json.dumps(get(data, "/fp16/loss_scale"))
        yield self.finding(
            document, "/fp16/loss_scale",
            f"fp16.loss_scale is {shown}, a static loss scale: after an overflow DeepSpeed skips the step without "
            "lowering the scale, so training can stall, and the dynamic-scaling keys are ignored; set it to 0 for "
            "dynamic loss scaling", fix="0")


class GradientClippingNotSet(Rule):
    """`gradient_clipping` not set: its default changed from no clipping to 1.0 in DeepSpeed 0.19.3.

    ## What it does
    Reports a ds_config without `gradient_clipping`, with the value the DeepSpeed version in use
    applies (`--deepspeed-version`, else the newest): 1.0 from 0.19.3, no clipping before.

    ## Why is this bad
    The same file trains differently depending on the installed DeepSpeed, and upgrading across
    0.19.3 silently adds clipping at 1.0. With the Hugging Face Trainer, `--max_grad_norm`
    reaches DeepSpeed only through `"gradient_clipping": "auto"`; without the key it is not
    used. A migration to FSDP2 has no implicit clipping at all. This is a note (info): the file
    is valid, but its meaning is not in the file.

    ## Example
    ```json
    {"train_micro_batch_size_per_gpu": 4}
    ```

    ## Use instead
    ```json
    {"train_micro_batch_size_per_gpu": 4, "gradient_clipping": 1.0}
    ```
    (`"auto"` with the Hugging Face Trainer or Accelerate; `0` for no clipping.)
    """

    code = "DS313"
    name = "gradient-clipping-not-set"
    severity = "info"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        if "gradient_clipping" in data:
            return
        change = default_change("/gradient_clipping")
        assert change is not None
        now = at_least(context.deepspeed_version, change.since)
        since = version_text(change.since)
        if now:
            what = f"{context.deepspeed_version_text} clips the global gradient norm at 1.0 (no clipping before {since})"
        else:
            what = f"{context.deepspeed_version_text} does not clip gradients (from {since} it clips at 1.0)"
        value = "auto" if uses_auto(data) else ("1.0" if now else "0")
        advice = ("\"auto\" to take the Trainer's max_grad_norm" if value == "auto" else f"{value} keeps this behaviour")
        yield self.finding(
            document, "/gradient_clipping",
            f"gradient_clipping is not set: {what}; write it explicitly ({advice})",
            fix=json.dumps(value) if value == "auto" else value)


class DynamicLossScaleSettingNotPositive(Rule):
    """`fp16.loss_scale_window` or `fp16.min_loss_scale` at 0 or below with dynamic loss scaling.

    ## What it does
    With fp16 enabled and dynamic loss scaling (`loss_scale` 0, the default), reports
    `loss_scale_window` or `min_loss_scale` that is 0 or negative. DeepSpeed's fp16 validator
    requires both to be greater than 0 then (a boolean in either is refused always: DS102).

    ## Why is this bad
    DeepSpeed rejects the config at launch ("fp16.loss_scale_window must be > 0 when dynamic loss
    scaling is enabled"). Older releases accepted it and failed later: a window of 0 is a
    division by zero at the first scale update, a floor of 0 lets the scale collapse to nothing.

    ## Example
    ```json
    {"fp16": {"enabled": true, "loss_scale": 0, "loss_scale_window": 0, "min_loss_scale": 0}}
    ```

    ## Use instead
    ```json
    {"fp16": {"enabled": true, "loss_scale": 0, "loss_scale_window": 1000, "min_loss_scale": 1}}
    ```
    """

    code = "DS314"
    name = "dynamic-loss-scale-setting-not-positive"
    severity = "error"
    formats = ("deepspeed",)

    DEFAULTS = {"loss_scale_window": ("1000", "the number of overflow-free steps before the scale grows"),
                "min_loss_scale": ("1", "the lowest loss scale")}

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        if enabled(data, "/fp16") is not True:
            return
        scale = get(data, "/fp16/loss_scale")
        if scale is not MISSING and (isinstance(scale, bool) or number(scale) != 0):
            return  # static scaling (DS312), or a bad value (DS102)
        for name, (default, meaning) in self.DEFAULTS.items():
            value = get(data, f"/fp16/{name}")
            if value is MISSING or isinstance(value, bool):
                continue
            found = number(value)
            if found is None or found > 0:
                continue
            yield self.finding(
                document, f"/fp16/{name}",
                f"fp16.{name} ({meaning}) is {json.dumps(value)} with dynamic loss scaling (fp16 on, loss_scale 0): "
                f"DeepSpeed rejects the config at launch (\"fp16.{name} must be > 0 when dynamic loss scaling is "
                f"enabled\"); use a positive value such as {default} (the default)", fix=default)


class Bf16GradientsReducedInBf16(Rule):
    """bf16 training without `communication_data_type`: gradients are reduced in bf16.

    ## What it does
    Reports a config that trains in bf16 and does not set `communication_data_type`. DeepSpeed
    then all-reduces (or reduce-scatters) gradients in the training dtype, bf16. Skipped when
    `--world-size` says there is a single data-parallel rank.

    ## Why is this bad
    The reduction adds the gradients of every rank in a format with 8 bits of mantissa, so small
    contributions are rounded away, more so with more ranks; an fp32 run or an FSDP2 migration
    with `reduce_dtype=float32` trains differently. DeepSpeed's default for this changed over its
    history, and Accelerate sets fp32 on ROCm, so the file does not say what it does. This is a
    note (info): write the dtype you want; `"fp32"` doubles the communication volume.

    ## Example
    ```json
    {"bf16": {"enabled": true}, "zero_optimization": {"stage": 2}}
    ```

    ## Use instead
    ```json
    {"bf16": {"enabled": true}, "zero_optimization": {"stage": 2}, "communication_data_type": "fp32"}
    ```
    (or `"bf16"` to keep bf16 reductions and say so).
    """

    code = "DS315"
    name = "bf16-gradients-reduced-in-bf16"
    severity = "info"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        if precision(data) != "bf16" or data.get("communication_data_type") is not None:
            return
        sp = data.get("sequence_parallel_size")
        ranks = None
        if context.world_size is not None:
            ranks = context.world_size // sp if isinstance(sp, int) and not isinstance(sp, bool) and sp > 0 \
                else context.world_size
            if ranks <= 1:
                return
        over = f"over {ranks} data-parallel ranks " if ranks else ""
        yield self.finding(
            document, "/communication_data_type",
            f"bf16 training without communication_data_type: DeepSpeed reduces gradients {over}in bf16 (the "
            "training dtype, 8 bits of mantissa); set \"communication_data_type\": \"fp32\" to reduce in fp32 "
            "(twice the traffic), or \"bf16\" to keep this and say so",
            position=document.position(f"{bf16_block(data)}/enabled"))


class Bf16CheckGradOverflowDefault(Rule):
    """bf16 without `check_grad_overflow`, whose default flipped from false to true in DeepSpeed 0.19.3.

    ## What it does
    Reports bf16 training whose `bf16` block does not set `check_grad_overflow`, and says which
    default the DeepSpeed version in use applies (`--deepspeed-version`, else the newest): true
    from 0.19.3 (a step with inf/nan gradients is skipped), false before (it is applied). Not under
    ZeRO-3, whose optimizer checks fp16 gradients only and never reads the setting.

    ## Why is this bad
    The same file trains differently on either side of 0.19.3. From 0.19.3 a step with an
    overflowing gradient is skipped, and the LR scheduler is not stepped for it, so persistent
    overflows stall training quietly; before, the inf/nan went into the weights. The check also
    costs a reduction and a host sync per step. This is a note: write the value you want.

    ## Example
    ```json
    {"bf16": {"enabled": true}}
    ```

    ## Use instead
    ```json
    {"bf16": {"enabled": true, "check_grad_overflow": true}}
    ```
    """

    code = "DS316"
    name = "bf16-check-grad-overflow-default"
    severity = "info"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        block = bf16_block(data)
        if block is None or enabled(data, block) is not True or "check_grad_overflow" in data[block[1:]]:
            return
        zero = data.get("zero_optimization")
        if isinstance(zero, dict) and zero.get("stage") == 3 and not isinstance(zero.get("stage"), bool):
            return  # ZeRO-3 reads no check_grad_overflow: it checks fp16 gradients only (stage3.py)
        change = default_change("/bf16/check_grad_overflow")
        assert change is not None
        now = at_least(context.deepspeed_version, change.since)
        value = change.after if now else change.before
        since = version_text(change.since)
        other = (f"before {since} the default was false ({change.meaning_before})" if now else
                 f"from {since} it is true ({change.meaning_after})")
        yield self.finding(
            document, f"{block}/check_grad_overflow",
            f"{block[1:]} does not set check_grad_overflow: {context.deepspeed_version_text} uses "
            f"{json.dumps(value)}: {change.meaning_after if now else change.meaning_before}; {other}; write "
            "check_grad_overflow explicitly", fix=json.dumps(value), position=document.position(f"{block}/enabled"))


# DeepSpeed's DtypeEnum (runtime/config.py): the spellings it takes for a dtype, and the dtype each means.
DTYPE_SPELLINGS: dict[str, str] = {
    **dict.fromkeys(("fp16", "torch.float16", "float16", "half"), "fp16"),
    **dict.fromkeys(("fp32", "torch.float32", "float32", "float"), "fp32"),
    **dict.fromkeys(("int8", "torch.int8"), "int8"),
    **dict.fromkeys(("bf16", "torch.bfloat16", "bfloat16"), "bf16"),
}


class ParamDtypeContradictsPrecision(Rule):
    """`data_types.param_dtype` that is not the dtype the fp16/bf16 flags train in.

    ## What it does
    Reports `data_types.param_dtype` when it names another dtype than the one `fp16.enabled` /
    `bf16.enabled` select (fp32 when neither is on), or a value that is not a dtype DeepSpeed
    knows (`fp16`, `bf16`, `fp32`, `float16`, `bfloat16`, `torch.float32`, ... case-sensitive).
    `null` (the default: follow the flags) is fine.

    ## Why is this bad
    DeepSpeed derives the model, master-weight and reduction dtypes from the fp16/bf16 flags, not
    from `param_dtype`: `deepspeed.initialize` asserts that `param_dtype` agrees with them
    ("data_types.param_dtype='fp16' conflicts with the enabled precision mode") and raises
    ValueError for an unknown name, so the run stops before the first step.

    ## Example
    ```json
    {"bf16": {"enabled": true}, "data_types": {"param_dtype": "fp16"}}
    ```

    ## Use instead
    ```json
    {"bf16": {"enabled": true}, "data_types": {"param_dtype": "bf16"}}
    ```
    """

    code = "DS445"
    name = "param-dtype-contradicts-precision"
    severity = "error"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        value = get(data, "/data_types/param_dtype")
        if value is MISSING or value is None or value == "auto":
            return  # absent or null: the flags decide; "auto" is left to the integration
        pointer = "/data_types/param_dtype"
        if not isinstance(value, str) or value not in DTYPE_SPELLINGS:
            shown = json.dumps(value)
            yield self.finding(
                document, pointer,
                f"data_types.param_dtype is {shown}, not a dtype DeepSpeed knows (fp16, bf16, fp32, float16, "
                "bfloat16, float32, torch.float16, ...): deepspeed.initialize raises ValueError; remove it (the "
                "fp16/bf16 flags decide the parameter dtype)")
            return
        trained = precision(data)
        if trained is None or DTYPE_SPELLINGS[value] == trained:
            return
        flag = {"fp16": "fp16.enabled is true", "bf16": f"{(bf16_block(data) or '/bf16')[1:]}.enabled is true",
                "fp32": "neither fp16 nor bf16 is enabled"}[trained]
        yield self.finding(
            document, pointer,
            f"data_types.param_dtype is {json.dumps(value)} but the model trains in {trained} ({flag}): "
            f"deepspeed.initialize asserts \"data_types.param_dtype='{value}' conflicts with the enabled precision "
            f"mode\"; write {json.dumps(trained)} or remove param_dtype and let the fp16/bf16 flags decide",
            fix=json.dumps(trained))


TORCH_NAMES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "int8": "int8"}


class GradAccumDtypeWithoutZero(Rule):
    """`data_types.grad_accum_dtype` other than the training dtype without ZeRO.

    ## What it does
    Reports `data_types.grad_accum_dtype` that names another dtype than the one the model trains
    in (fp16/bf16 flags, fp32 when neither is on) while ZeRO is off (`stage` 0 or no
    `zero_optimization`). Only ZeRO (and, at stage 1 with bf16, DeepSpeed's BF16 optimizer)
    can accumulate gradients in another dtype.

    ## Why is this bad
    Without ZeRO, `deepspeed.initialize` raises NotImplementedError ("unsupported mix of
    model_dtype=torch.bfloat16 and grad_accum_dtype=torch.float32") when it builds the
    optimizer, so the run stops before the first step.

    ## Example
    ```json
    {"bf16": {"enabled": true}, "data_types": {"grad_accum_dtype": "fp32"}}
    ```

    ## Use instead
    ```json
    {"bf16": {"enabled": true}, "zero_optimization": {"stage": 1}, "data_types": {"grad_accum_dtype": "fp32"}}
    ```
    or remove `grad_accum_dtype` (gradients accumulate in the training dtype).
    """

    code = "DS447"
    name = "grad-accum-dtype-without-zero"
    severity = "error"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        value = get(data, "/data_types/grad_accum_dtype")
        if not isinstance(value, str) or DTYPE_SPELLINGS.get(value, "int8") == "int8" or zero_stage(data) != 0:
            return  # absent, null (the training dtype), not a choice (DS102), or ZeRO on / unknown
        trained = precision(data)
        if trained is None or DTYPE_SPELLINGS[value] == trained:
            return
        yield self.finding(
            document, "/data_types/grad_accum_dtype",
            f"data_types.grad_accum_dtype is {json.dumps(value)} but the model trains in {trained} and ZeRO is off: "
            f"deepspeed.initialize raises NotImplementedError (\"unsupported mix of model_dtype=torch.{TORCH_NAMES[trained]} "
            f"and grad_accum_dtype=torch.{TORCH_NAMES[DTYPE_SPELLINGS[value]]}\") when it builds the optimizer; enable "
            "ZeRO (stage 1 or higher) or remove grad_accum_dtype")
