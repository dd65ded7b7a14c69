"""Rules about the `optimizer` block of a ds_config: the type, the constructor parameters, and
combinations DeepSpeed rejects at `deepspeed.initialize` (engine.py `_configure_basic_optimizer`,
`_do_optimizer_sanity_check`). The signatures live in formats/deepspeed/optimizers.py."""

from __future__ import annotations

import json
from typing import Any, Iterable

from shardshift.document import Document
from shardshift.formats.deepspeed.optimizers import (  # noqa: F401 - optimizer_offload: the rules' name too
    ONE_BIT_REMOVED_IN,
    BuiltOptimizer,
    ResolvedOptimizer,
    built_optimizer,
    optimizer_offload,
    resolve_optimizer,
)
from shardshift.rules.base import Context, Finding, Rule, clear_match, did_you_mean
from shardshift.rules.deepspeed.facts import zero_stage

P = "/optimizer/params"


# --- what the file says, the way DeepSpeed reads it ----------------------------------------------


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def optimizer_block(document: Document) -> tuple[dict, str] | None:
    """The optimizer block and its type when the type is a plain string (not "auto")."""
    data = document.data
    if not isinstance(data, dict):
        return None
    block = data.get("optimizer")
    if not isinstance(block, dict) or not isinstance(block.get("type"), str) or block["type"] == "auto":
        return None
    return block, block["type"]


def params_of(block: dict) -> dict:
    params = block.get("params")
    return params if isinstance(params, dict) else {}


def _flag(value: Any) -> bool | None:
    """Python truthiness of a param DeepSpeed pops and tests (`torch_adam`, `adam_w_mode`);
    None for "auto"."""
    if value == "auto":
        return None
    return bool(value)


def built_for(document: Document, resolved: ResolvedOptimizer) -> list[BuiltOptimizer]:
    """Every constructor DeepSpeed may call for this file: one when the file settles offload and
    the torch_adam/adam_w_mode switches, several when it leaves them open."""
    data = document.data
    params = params_of(data["optimizer"])
    offloads = [optimizer_offload(data)]
    torch_adams = [_flag(params.get("torch_adam", False))]
    modes = [_flag(params.get("adam_w_mode", True))]
    choices = []
    for offload in ([True, False] if offloads[0] is None else offloads):
        for torch_adam in ([True, False] if torch_adams[0] is None else torch_adams):
            for mode in ([True, False] if modes[0] is None else modes):
                choices.append(built_optimizer(resolved, offload=offload, torch_adam=torch_adam, adam_w_mode=mode))
    return choices


def _names(values: Iterable[str]) -> str:
    return ", ".join(values)


# --- rules -------------------------------------------------------------------------------------


class UnknownOptimizerType(Rule):
    """The optimizer type is not one DeepSpeed can build.

    ## What it does
    Checks `optimizer.type` the way `deepspeed.initialize` does: a DeepSpeed name (`Adam`,
    `AdamW`, `Lamb`, `Lion`, `Adagrad`, `Muon`, `MuAdam`, `MuAdamW`, `MuSGD`; any case) or the
    exact, case-sensitive name of a `torch.optim` class (`SGD`, `RMSprop`, ...). Suggests the
    closest valid spelling. The 1-bit optimizers (`OneBitAdam`, `ZeroOneAdam`, `OneBitLamb`) were
    removed in DeepSpeed 0.19.7; pass `--deepspeed-version` to judge an older DeepSpeed. An
    `optimizer` block without `type` is reported too: DeepSpeed ignores the whole block.

    ## Why is this bad
    The file parses, the job is scheduled, and `deepspeed.initialize` then stops with
    "sgd is not a supported DeepSpeed Optimizer" (`torch.optim` has `SGD`, not `sgd`). Class names
    such as `FusedAdam` or `DeepSpeedCPUAdam` are not types either: DeepSpeed picks those classes
    itself from `Adam` and the offload settings.

    ## Example
    ```json
    {"optimizer": {"type": "sgd", "params": {"lr": 0.1}}}
    ```

    ## Use instead
    ```json
    {"optimizer": {"type": "SGD", "params": {"lr": 0.1}}}
    ```
    """

    code = "DS401"
    premises = ("release", "role", "consumer")  # DeepSpeed builds the block (no client optimizer)
    name = "unknown-optimizer-type"
    severity = "error"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        if not isinstance(data, dict) or not isinstance(data.get("optimizer"), dict):
            return
        block = data["optimizer"]
        if "type" not in block:
            yield self.finding(document, "/optimizer", "the optimizer block has no \"type\", so DeepSpeed ignores "
                               "the whole block (no optimizer is built from it); add \"type\", e.g. \"AdamW\"",
                               key=True)
            return
        found = optimizer_block(document)
        if found is None:
            return
        _, type_name = found
        resolved = resolve_optimizer(type_name, context.deepspeed_version)
        if resolved.known:
            return
        message = (f"optimizer type {type_name!r} is not accepted by {context.deepspeed_version_text}: "
                   f"{resolved.problem}; deepspeed.initialize stops with \"{type_name} is not a supported "
                   "DeepSpeed Optimizer\"")
        if resolved.deepspeed is None and "removed" in (resolved.problem or ""):
            older = ".".join(map(str, ONE_BIT_REMOVED_IN[:2])) + "." + str(ONE_BIT_REMOVED_IN[2] - 1)
            message += f"; use {resolved.suggestion} (without 1-bit compression)"
            stage = zero_stage(data)
            if stage:
                message += f" (older versions rejected it with ZeRO stage {stage} too)"
            else:
                message += f", or pass --deepspeed-version {older} if you run an older DeepSpeed"
        elif resolved.suggestion:
            message += f"; did you mean {resolved.suggestion!r}?"
        else:
            message += "; use a DeepSpeed name (Adam, AdamW, Lamb, Lion, Adagrad, Muon) or a torch.optim class name"
        fix = json.dumps(resolved.suggestion) if resolved.suggestion else None
        safe = resolved.suggestion is not None and resolved.problem is not None and "removed" not in resolved.problem \
            and clear_match(type_name, [resolved.suggestion]) == resolved.suggestion
        yield self.finding(document, "/optimizer/type", message, fix=fix, fix_kind="replace-value" if safe else None)


class UnknownOptimizerParam(Rule):
    """An optimizer parameter the optimizer's constructor does not take.

    ## What it does
    `optimizer.params` become keyword arguments of the class DeepSpeed builds: `FusedAdam` for
    `Adam`/`AdamW`, `DeepSpeedCPUAdam` with optimizer offload, `torch.optim.AdamW` with
    `torch_adam: true`, `FusedLamb`, `FusedLion`/`DeepSpeedCPULion`, `torch.optim.Adagrad`/
    `DeepSpeedCPUAdagrad`, or the `torch.optim` class named by the type. This rule reports every
    parameter that class does not take, with the closest name it does take.

    ## Why is this bad
    A typo such as `weight_decy` passes every config check and then stops
    `deepspeed.initialize` with `TypeError: __init__() got an unexpected keyword argument`. The
    accepted names also change with offload: `set_grad_none` works for `FusedAdam` but not for
    `DeepSpeedCPUAdam`. For `Muon`, DeepSpeed drops unknown parameters silently instead, so the
    setting never takes effect.

    ## Example
    ```json
    {"optimizer": {"type": "AdamW", "params": {"lr": 1e-4, "weight_decy": 0.1}}}
    ```

    ## Use instead
    ```json
    {"optimizer": {"type": "AdamW", "params": {"lr": 1e-4, "weight_decay": 0.1}}}
    ```
    """

    code = "DS402"
    premises = ("release", "role", "consumer")  # DeepSpeed builds the block (no client optimizer)
    name = "unknown-optimizer-param"
    severity = "error"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        found = optimizer_block(document)
        if found is None:
            return
        block, type_name = found
        resolved = resolve_optimizer(type_name, context.deepspeed_version)
        if not resolved.known:
            return
        choices = [b for b in built_for(document, resolved) if b.signature is not None]
        if not choices:
            return
        offload = optimizer_offload(document.data)
        for name in params_of(block):
            if name == "max_grad_norm":
                continue  # max-grad-norm-in-optimizer-params
            if any(name in b.signature.names or name in b.consumed for b in choices):
                continue  # taken by (one of) the classes this file may end up with
            built = choices[0]
            cls = built.signature.cls.rsplit(".", 1)[-1]
            accepted = list(built.signature.names)
            where = f" {built.where}" if built.where else ""
            hint = ""
            if offload is not None and not built.where.startswith("with torch_adam"):
                other = built_optimizer(resolved, offload=not offload, torch_adam=False, adam_w_mode=True)
                if other.signature is not None and name in other.signature.names:
                    hint = (f" ({other.signature.cls.rsplit('.', 1)[-1]}, built "
                            f"{other.where or 'without optimizer offload'}, does)")
            effect = ("DeepSpeed silently ignores it" if built.drops_unknown else
                      f"deepspeed.initialize fails with TypeError: unexpected keyword argument {name!r}")
            message = f"{type_name} is built as {cls}{where}, which takes no parameter {name!r}{hint}: {effect}"
            suggestion = did_you_mean(name, accepted)
            if suggestion:
                message += f"; did you mean {suggestion!r}?"
            else:
                message += f"; remove it ({cls} takes {_names(accepted)})"
            safe = suggestion is not None and clear_match(name, accepted) == suggestion
            yield self.finding(document, f"{P}/{name}", message, fix=suggestion, key=True,
                               fix_kind="rename-key" if safe else None)


class OptimizerBetasNotAPair(Rule):
    """`betas` is not a list of two numbers between 0 and 1.

    ## What it does
    Checks `optimizer.params.betas` of optimizers that take it (the Adam family, Lamb, Lion,
    Muon's Adam half, torch's Adam-like classes): it must be a JSON list of exactly two numbers,
    each at least 0 and below 1, such as `[0.9, 0.999]`.

    ## Why is this bad
    The optimizer unpacks `beta1, beta2 = betas`. A string (`"0.9,0.999"`), a single number or a
    list of three fails in `deepspeed.initialize` or at the first step; torch's classes reject a
    beta of 1 or more with `ValueError: Invalid beta parameter`, and DeepSpeed's fused kernels
    run it and diverge.

    ## Example
    ```json
    {"optimizer": {"type": "AdamW", "params": {"lr": 1e-4, "betas": "0.9,0.95"}}}
    ```

    ## Use instead
    ```json
    {"optimizer": {"type": "AdamW", "params": {"lr": 1e-4, "betas": [0.9, 0.95]}}}
    ```
    """

    code = "DS403"
    premises = ("release", "role", "consumer")  # DeepSpeed builds the block (no client optimizer)
    name = "optimizer-betas-not-a-pair"
    severity = "error"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        found = optimizer_block(document)
        if found is None:
            return
        block, type_name = found
        params = params_of(block)
        if "betas" not in params or params["betas"] == "auto":
            return
        resolved = resolve_optimizer(type_name, context.deepspeed_version)
        choices = [b for b in built_for(document, resolved) if b.signature is not None] if resolved.known else []
        if choices and all("betas" not in b.signature.names for b in choices):
            return  # unknown-optimizer-param reports it
        betas = params["betas"]
        problem, fix = _betas_problem(betas)
        if problem is None:
            return
        node = document.root.get("optimizer").get("params").get("betas") if document.root else None
        shown = node.raw if node is not None and node.kind not in ("array", "object") else json.dumps(betas)
        if problem.startswith("each beta"):
            effect = "DeepSpeed's fused optimizers take it without a check"
        else:
            effect = ("DeepSpeed passes it to the optimizer as is, which unpacks it as (beta1, beta2) and fails (in "
                      "deepspeed.initialize for torch's classes, at the first optimizer step for DeepSpeed's fused "
                      "ones)")
        yield self.finding(document, f"{P}/betas", f"betas is {shown}: {problem}; {effect}; write two numbers in "
                           "[0, 1) such as [0.9, 0.999]", fix=fix,
                           fix_kind="replace-value" if isinstance(betas, str) else None)


def _betas_problem(betas: Any) -> tuple[str | None, str | None]:
    if isinstance(betas, str):
        parts = [p.strip() for p in betas.strip("[]() ").split(",")]
        try:
            numbers = [float(p) for p in parts]
        except ValueError:
            return "a string, not a list", None
        fix = json.dumps(numbers) if len(numbers) == 2 and all(0 <= n < 1 for n in numbers) else None
        return "a string, not a list of numbers", fix
    if not isinstance(betas, list):
        return "not a list", None
    if len(betas) != 2:
        fix = json.dumps(betas[:2]) if len(betas) > 2 and all(map(is_number, betas[:2])) else None
        return f"a list of {len(betas)}, not 2", fix
    if not all(map(is_number, betas)):
        return "not a list of numbers", None
    if not all(0 <= b < 1 for b in betas):
        return "each beta must be at least 0 and below 1 (torch raises ValueError: Invalid beta parameter)", None
    return None, None


class MaxGradNormInOptimizerParams(Rule):
    """`max_grad_norm` inside `optimizer.params`; DeepSpeed refuses it.

    ## What it does
    Reports `optimizer.params.max_grad_norm`, for any optimizer type.

    ## Why is this bad
    DeepSpeed clips gradients itself, from the top-level `gradient_clipping`. When it builds the
    optimizer from the config it raises `ValueError: 'max_grad_norm' is not supported as an
    optimizer parameter` (engine.py `_configure_basic_optimizer`), even for Lamb, whose class has
    such a parameter. Older configs copied from apex examples still carry it.

    ## Example
    ```json
    {"optimizer": {"type": "Adam", "params": {"lr": 1e-4, "max_grad_norm": 1.0}}}
    ```

    ## Use instead
    ```json
    {"gradient_clipping": 1.0, "optimizer": {"type": "Adam", "params": {"lr": 1e-4}}}
    ```
    """

    code = "DS404"
    premises = ("release", "role", "consumer")  # DeepSpeed builds the block (no client optimizer)
    name = "max-grad-norm-in-optimizer-params"
    severity = "error"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        if not isinstance(data, dict) or not isinstance(data.get("optimizer"), dict):
            return
        params = params_of(data["optimizer"])
        if "max_grad_norm" not in params:
            return
        value = json.dumps(params["max_grad_norm"])
        clipping = data.get("gradient_clipping")
        if clipping is None:
            instead = f"move it to the top level as \"gradient_clipping\": {value}"
        elif clipping == params["max_grad_norm"]:
            instead = f"remove it (the top-level \"gradient_clipping\" is already {json.dumps(clipping)})"
        else:
            instead = (f"remove it and decide the clipping in the top-level \"gradient_clipping\" (now "
                       f"{json.dumps(clipping)}, not {value})")
        yield self.finding(document, f"{P}/max_grad_norm",
                           f"optimizer.params.max_grad_norm is {value}: when DeepSpeed builds this optimizer, "
                           "deepspeed.initialize raises ValueError ('max_grad_norm' is not supported as an optimizer "
                           "parameter); " + instead, key=True)


class OneBitOptimizerWithZero(Rule):
    """A 1-bit optimizer (OneBitAdam, ZeroOneAdam, OneBitLamb) together with ZeRO.

    ## What it does
    For DeepSpeed before 0.19.7 (pass `--deepspeed-version`), reports `OneBitAdam`,
    `ZeroOneAdam` and `OneBitLamb` with `zero_optimization.stage` 1, 2 or 3. (From 0.19.7 on
    these optimizers no longer exist: unknown-optimizer-type reports them.)

    ## Why is this bad
    The 1-bit optimizers compress the gradient all-reduce themselves and cannot run on ZeRO's
    partitioned gradients: `deepspeed.initialize` asserts "1bit-Adam is not compatible with ZeRO"
    (engine.py `_configure_basic_optimizer`), after the job has started.

    ## Example
    ```json
    {"optimizer": {"type": "OneBitAdam", "params": {"lr": 1e-4, "freeze_step": 400}},
     "zero_optimization": {"stage": 2}}
    ```

    ## Use instead
    ```json
    {"optimizer": {"type": "OneBitAdam", "params": {"lr": 1e-4, "freeze_step": 400}},
     "zero_optimization": {"stage": 0}}
    ```
    or keep ZeRO and use `Adam`.
    """

    code = "DS405"
    premises = ("release", "role", "consumer")  # DeepSpeed builds the block (no client optimizer)
    name = "one-bit-optimizer-with-zero"
    severity = "error"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        found = optimizer_block(document)
        if found is None:
            return
        _, type_name = found
        resolved = resolve_optimizer(type_name, context.deepspeed_version)
        if resolved.deepspeed is None or not resolved.deepspeed.one_bit:
            return
        stage = zero_stage(document.data)
        if not stage:
            return
        yield self.finding(document, "/optimizer/type",
                           f"{type_name} with ZeRO stage {stage}: deepspeed.initialize asserts that "
                           f"{resolved.deepspeed.name} is not compatible with ZeRO; set zero_optimization.stage to "
                           "0, or keep ZeRO and use \"Adam\"")


class AdamTypeRunsAdamW(Rule):
    """`"type": "Adam"` with weight decay runs AdamW, not Adam.

    ## What it does
    Reports an optimizer of type `Adam` with a non-zero (or `"auto"`) `weight_decay` and no
    `adam_w_mode`. DeepSpeed's `adam_w_mode` defaults to true, so `Adam` builds the same
    optimizer as `AdamW`: decoupled weight decay (engine.py `_configure_basic_optimizer`); with
    `torch_adam: true` it builds `torch.optim.AdamW`.

    ## Why is this bad
    Someone who writes `Adam` with `weight_decay` 0.01 usually expects Adam's L2 penalty (as in
    `torch.optim.Adam`), and a migration that maps `Adam` to `torch.optim.Adam` changes the
    training. Without weight decay the two are the same and nothing is reported; with
    `"weight_decay": "auto"` the value comes from the Hugging Face Trainer's `weight_decay`
    (default 0), so the finding is an info that says the value is not known here.

    ## Example
    ```json
    {"optimizer": {"type": "Adam", "params": {"lr": 1e-4, "weight_decay": 0.01}}}
    ```

    ## Use instead
    ```json
    {"optimizer": {"type": "AdamW", "params": {"lr": 1e-4, "weight_decay": 0.01}}}
    ```
    or `"adam_w_mode": false` in `params` for Adam with L2 regularisation.
    """

    code = "DS406"
    premises = ("release", "role", "consumer")  # DeepSpeed builds the block (no client optimizer)
    name = "adam-type-runs-adamw"
    severity = "warning"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        found = optimizer_block(document)
        if found is None:
            return
        block, type_name = found
        params = params_of(block)
        if type_name.lower() != "adam" or "adam_w_mode" in params:
            return
        decay = params.get("weight_decay", 0)
        if not (decay == "auto" or (is_number(decay) and decay != 0)):
            return
        built = "torch.optim.AdamW" if _flag(params.get("torch_adam", False)) else "decoupled weight decay (AdamW)"
        unknown = None
        if decay == "auto":  # the Trainer's weight_decay (default 0) fills it: with 0, Adam and AdamW are one
            from shardshift.context import UnknownContext

            unknown = UnknownContext("consumer", "weight_decay is \"auto\": the value the Hugging Face integration "
                                     "fills in (the Trainer's weight_decay, default 0, where Adam and AdamW are the "
                                     "same) is not known here",
                                     "check the ds_config with the training arguments that set weight_decay")
        yield self.finding(document, "/optimizer/type",
                           f"optimizer type \"{type_name}\" with weight_decay {json.dumps(decay)} runs {built}, "
                           "because DeepSpeed's adam_w_mode defaults to true; write \"AdamW\" to say so, or add "
                           "\"adam_w_mode\": false to params for Adam with L2 weight decay", fix='"AdamW"',
                           fix_kind="replace-value", unknown_context=unknown)


class OptimizerUntestedWithZero(Rule):
    """ZeRO with an optimizer outside DeepSpeed's tested list, without permission.

    ## What it does
    With `zero_optimization.stage` 1-3, DeepSpeed accepts the optimizer it builds only if its
    class is in ZeRO's tested list (Adam/AdamW in any form, Adagrad, Lion, Muon) or the config sets
    `"zero_allow_untested_optimizer": true`. This rule reports the other types (`Lamb`, `SGD`,
    `RMSprop`, the mup optimizers, ...) without that key.

    ## Why is this bad
    `deepspeed.initialize` asserts "You are using an untested ZeRO Optimizer. Please add
    <"zero_allow_untested_optimizer": true> in the configuration file to use it." The Hugging
    Face Trainer sets the key only when it builds the optimizer itself, not for a config
    `optimizer` block.

    ## Example
    ```json
    {"optimizer": {"type": "SGD", "params": {"lr": 0.1}}, "zero_optimization": {"stage": 1}}
    ```

    ## Use instead
    ```json
    {"optimizer": {"type": "SGD", "params": {"lr": 0.1}}, "zero_optimization": {"stage": 1},
     "zero_allow_untested_optimizer": true}
    ```
    """

    code = "DS407"
    premises = ("release", "role", "consumer")  # DeepSpeed builds the block (no client optimizer)
    name = "untested-optimizer-with-zero"
    severity = "error"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        found = optimizer_block(document)
        if found is None:
            return
        _, type_name = found
        data = document.data
        if data.get("zero_allow_untested_optimizer") not in (None, False):
            return
        resolved = resolve_optimizer(type_name, context.deepspeed_version)
        if resolved.deepspeed is not None and (resolved.deepspeed.zero_tested or resolved.deepspeed.one_bit):
            return
        if not resolved.known:
            return
        stage = zero_stage(data)
        if not stage:
            return
        built = built_optimizer(resolved, offload=False, torch_adam=False, adam_w_mode=True)
        cls = built.signature.cls if built.signature else type_name
        yield self.finding(document, "/optimizer/type",
                           f"ZeRO stage {stage} with optimizer {type_name} ({cls}), which is not in ZeRO's tested "
                           "list: deepspeed.initialize asserts \"You are using an untested ZeRO Optimizer\"; add "
                           "\"zero_allow_untested_optimizer\": true at the top level")


class OptimizerWeightDecayDefault(Rule):
    """An Adam or AdamW optimizer block without `weight_decay`: DeepSpeed's default is 0, torch's AdamW 0.01.

    ## What it does
    Reports `"type": "Adam"` or `"AdamW"` (DeepSpeed's FusedAdam, or DeepSpeedCPUAdam under
    optimizer offload) whose `params` leave out `weight_decay`. Those classes default to 0, while
    `torch.optim.AdamW` (what `torch_adam: true` builds, and what a migration usually picks)
    defaults to 0.01. Not reported with `torch_adam: true`, where torch's default applies.

    ## Why is this bad
    The same config trains with or without weight decay depending on an unrelated switch, and a
    migration that writes `torch.optim.AdamW(params, lr=...)` adds decay the DeepSpeed run never
    had. With the Hugging Face Trainer, `--weight_decay` reaches DeepSpeed only through
    `"weight_decay": "auto"`; without the key it is silently not used. This is a note: write
    the value you mean.

    ## Example
    ```json
    {"optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}}
    ```

    ## Use instead
    ```json
    {"optimizer": {"type": "AdamW", "params": {"lr": 1e-4, "weight_decay": 0.0}}}
    ```
    (`"auto"` with the Hugging Face Trainer or Accelerate.)
    """

    code = "DS408"
    premises = ("release", "role", "consumer")  # DeepSpeed builds the block (no client optimizer)
    name = "optimizer-weight-decay-default"
    severity = "info"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        found = optimizer_block(document)
        if found is None:
            return
        block, type_name = found
        params = params_of(block)
        if type_name.lower() not in ("adam", "adamw") or "weight_decay" in params:
            return
        if _flag(params.get("torch_adam", False)) is not False:
            return  # torch.optim.Adam/AdamW: torch's defaults (or unknown)
        cls = "DeepSpeedCPUAdam" if optimizer_offload(document.data) else "FusedAdam"
        where = "/optimizer/params" if isinstance(block.get("params"), dict) else "/optimizer"
        yield self.finding(
            document, "/optimizer/params/weight_decay",
            f"optimizer {type_name} has no weight_decay: DeepSpeed builds {cls}, whose default is 0 (no weight "
            "decay), while torch.optim.AdamW defaults to 0.01 and the Hugging Face Trainer's --weight_decay is "
            "used only with \"weight_decay\": \"auto\"; write the value you mean (0.0 keeps this behaviour)",
            fix="0.0", position=document.position(where, key=True))


# the classes DeepSpeed builds whose constructor takes `amsgrad` only to refuse it (0.19.8)
REFUSE_AMSGRAD = ("FusedLamb", "FusedAdam", "DeepSpeedCPUAdam")


class OptimizerParamValueRefused(Rule):
    """An `optimizer.params` value that the optimizer DeepSpeed builds refuses in its constructor.

    ## What it does
    Reports `optimizer.params.amsgrad` set (any true value) where DeepSpeed 0.19.8 builds a class
    that takes the parameter only to refuse it: `FusedLamb` for `Lamb`, `FusedAdam` for `Adam`
    and `AdamW`, `DeepSpeedCPUAdam` for them with optimizer offload. With `torch_adam: true`
    DeepSpeed builds torch's Adam/AdamW, which have the variant: nothing is reported.

    ## Why is this bad
    `deepspeed.initialize` raises `RuntimeError: FusedLamb does not support the AMSGrad variant.`
    (or FusedAdam's, DeepSpeedCPUAdam's) when it builds the optimizer, on every rank, after the
    model is built.

    ## Example
    ```json
    {"optimizer": {"type": "Lamb", "params": {"lr": 1e-3, "amsgrad": true}}}
    ```

    ## Use instead
    ```json
    {"optimizer": {"type": "Lamb", "params": {"lr": 1e-3}}}
    ```
    """

    code = "DS456"
    premises = ("release", "role", "consumer")  # DeepSpeed builds the block (no client optimizer)
    name = "optimizer-param-value-refused"
    severity = "error"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        found = optimizer_block(document)
        if found is None or not params_of(found[0]).get("amsgrad"):
            return
        block, type_name = found
        resolved = resolve_optimizer(type_name, context.deepspeed_version)
        if resolved.deepspeed is None:
            return  # a torch.optim class: torch's own Adam/AdamW take the variant
        built = built_for(document, resolved)
        classes = [b.signature.cls.rsplit(".", 1)[-1] if b.signature is not None else None for b in built]
        if not classes or not all(cls in REFUSE_AMSGRAD for cls in classes):
            return  # torch_adam (or an offload switch left open) may build a class that has the variant
        first = built[0]
        where = f" {first.where}" if first.where else ""
        amsgrad = json.dumps(params_of(block)["amsgrad"])
        yield self.finding(document, f"{P}/amsgrad",
                           f"optimizer.params.amsgrad is {amsgrad} with optimizer type {json.dumps(type_name)}, "
                           f"which DeepSpeed builds as {classes[0]}{where}: deepspeed.initialize raises RuntimeError "
                           f"(\"{classes[0]} does not support the AMSGrad variant.\"); remove amsgrad"
                           + (", or set \"torch_adam\": true to build torch's AdamW, which has it"
                              if resolved.deepspeed.name in ("Adam", "AdamW") else ""), key=True)
