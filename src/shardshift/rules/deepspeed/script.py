"""Rules about a training script's `deepspeed.initialize(...)` call against the ds_config it loads.

The script is read with `ast` (formats/python_script/reader.py). A call's config is known when it is a
path literal (or a name bound to one, `json.load(open(path))`, `os.path.join` of literals) or a
dict literal; `args.deepspeed_config` and other runtime values are unknown, and then these rules
say nothing. A path is looked up next to the script, in its parent directories and in the current
directory. Findings point at the Python line (no JSON pointer) and name the config file and key.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Iterable

from shardshift.document import Document
from shardshift.formats.deepspeed.optimizers import TORCH_OPTIMIZERS, WARMUP_LR_MAX_FOLLOWS_OPTIMIZER_SINCE
from shardshift.formats.python_script import UNKNOWN, Expr, InitializeCall, ScriptFacts
from shardshift.rules.base import Context, Finding, Rule
from shardshift.rules.deepspeed.facts import zero_stage
from shardshift.rules.deepspeed.optimizer import is_number, optimizer_offload

# Client optimizers DeepSpeed accepts together with ZeRO-Offload (engine.py `_configure_optimizer`).
CPU_OPTIMIZERS = ("DeepSpeedCPUAdam", "DeepSpeedCPULion")
# Names that make a callee recognisably an optimizer class (not a factory function).
OPTIMIZER_WORDS = ("Adam", "SGD", "Lion", "Lamb", "LAMB", "Adafactor", "Adagrad", "RMSprop", "Muon", "Sophia",
                   "Shampoo", "Prodigy", "Optimizer")


@dataclass(slots=True)
class LoadedConfig:
    """The ds_config a call loads: its data (dict literal leaves may be UNKNOWN) and how to name it."""

    data: dict
    name: str
    document: Document | None = None  # the ds_config file, when the call names one


def _read_config(path: str, context: Context) -> Document | None:
    real = os.path.realpath(path)
    for document in context.documents:
        if document.format == "deepspeed" and os.path.realpath(document.path) == real:
            return document if isinstance(document.data, dict) and document.syntax is None else None
    try:
        if os.path.getsize(path) > 5_000_000:
            return None
        with open(path, encoding="utf-8-sig") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError):
        return None
    from shardshift.formats import deepspeed

    document = deepspeed.read(text, path)
    return document if isinstance(document.data, dict) and document.syntax is None else None


def loaded_config(call: InitializeCall, script: Document, context: Context) -> LoadedConfig | None:
    """The config a call loads, when the source says which."""
    expr = call.config
    if expr is None or not expr.certain:
        return None
    if expr.kind == "dict" and isinstance(expr.value, dict):
        where = f"{expr.text} (line {expr.bound_at})" if expr.bound_at else f"at line {expr.line}"
        return LoadedConfig(expr.value, f"the config dict {where}")
    if expr.kind != "str" or not expr.value:
        return None
    written = expr.value
    anchors: list[str] = []
    probe = os.path.dirname(os.path.abspath(script.path))
    for _ in range(8):
        anchors.append(probe)
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    anchors.append(os.getcwd())
    candidates = [written] if os.path.isabs(written) else [os.path.join(a, written) for a in anchors]
    for candidate in candidates:
        if os.path.isfile(candidate):
            document = _read_config(candidate, context)
            return LoadedConfig(document.data, written, document) if document is not None else None
    return None


def _known(value: Any) -> bool:
    return value is not UNKNOWN


def _callee(expr: Expr) -> str | None:
    """The class or function that builds the client optimizer, when the source shows it."""
    if expr.kind in ("call", "callable") and isinstance(expr.value, str):
        return expr.value
    return None


def _is_optimizer_class(callee: str | None) -> bool:
    if not callee:
        return False
    last = callee.rsplit(".", 1)[-1]
    return last in TORCH_OPTIMIZERS or (last[:1].isupper() and any(word in last for word in OPTIMIZER_WORDS))


def _shown(expr: Expr, *notes: str) -> str:
    """The argument as written, with what it is built from (and `notes`) in parentheses."""
    callee = _callee(expr)
    shown = [callee] if callee and callee != expr.text.split("(", 1)[0] else []
    shown += [n for n in notes if n]
    return f"{expr.text} ({', '.join(shown)})" if shown else expr.text


def _calls(document: Document) -> list[InitializeCall]:
    facts = document.data
    return facts.initialize_calls if isinstance(facts, ScriptFacts) else []


class ScriptRule(Rule):
    formats = ("python",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        for call in _calls(document):
            config = loaded_config(call, document, context)
            if config is not None:
                yield from self.check_call(document, call, config, context)

    def check_call(self, document: Document, call: InitializeCall, config: LoadedConfig,
                   context: Context) -> Iterable[Finding]:
        raise NotImplementedError

    def at(self, document: Document, call: InitializeCall, argument: str, message: str, *,
           config: LoadedConfig | None = None, pointer: str = "", about: str = "") -> Finding:
        """A finding on the call's `argument` (or the call), related to `pointer` of the config file."""
        position = call.positions.get(argument, (call.line, call.column))
        related = []
        if config is not None and config.document is not None:
            related.append(self.related(config.document, pointer, about, key=bool(pointer)))
        return self.finding(document, None, message, position=position, related=related)


class ClientOptimizerOverridesConfig(ScriptRule):
    """`deepspeed.initialize(optimizer=...)` while the ds_config has an `optimizer` block.

    ## What it does
    Reports a `deepspeed.initialize` call that passes an optimizer (an object or a callable) when
    the ds_config it loads also has an `optimizer` block. The finding is on the Python line.

    ## Why is this bad
    The optimizer passed in code wins: DeepSpeed ignores the config's type, lr, betas and
    weight decay, and only logs "Using client Optimizer as basic optimizer" at INFO level. Whoever
    tunes the learning rate in the ds_config changes nothing.

    ## Example
    ```python
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    engine, optimizer, _, _ = deepspeed.initialize(model=model, optimizer=optimizer, config="ds_config.json")
    ```
    with `"optimizer": {"type": "AdamW", "params": {"lr": 3e-4}}` in ds_config.json

    ## Use instead
    ```python
    engine, optimizer, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(),
                                                   config="ds_config.json")
    ```
    (or keep the code's optimizer and delete the `optimizer` block)
    """

    code = "DS430"
    name = "client-optimizer-overrides-config"
    severity = "error"

    def check_call(self, document, call, config, context):
        block = config.data.get("optimizer")
        if not isinstance(block, dict) or call.passes("optimizer") is not True:
            return
        expr = call.arguments["optimizer"]
        params = block.get("params") if isinstance(block.get("params"), dict) else {}
        details = [f"type {block['type']}" for _ in [0] if isinstance(block.get("type"), str)]
        details += [f"{k} {json.dumps(params[k])}" for k in ("lr", "weight_decay") if k in params and _known(params[k])]
        summary = f" ({', '.join(details)})" if details else ""
        yield self.at(document, call, "optimizer",
                      f"deepspeed.initialize gets optimizer={_shown(expr)}, so the \"optimizer\" block of "
                      f"{config.name}{summary} is ignored (DeepSpeed uses the client optimizer and only logs it); "
                      f"remove the block from {config.name}, or drop optimizer= and pass model_parameters= so "
                      "DeepSpeed builds the optimizer from the config",
                      config=config, pointer="/optimizer", about="the optimizer block that is ignored")


class ClientOptimizerWithOffload(ScriptRule):
    """A torch optimizer passed to `deepspeed.initialize` with ZeRO-Offload of the optimizer.

    ## What it does
    Reports a `deepspeed.initialize` call that passes an optimizer built from a class other than
    `DeepSpeedCPUAdam` / `DeepSpeedCPULion` (a `torch.optim` class, `FusedAdam`, a bitsandbytes
    optimizer) when the ds_config offloads the optimizer (`offload_optimizer.device` cpu or nvme)
    and does not set `"zero_force_ds_cpu_optimizer": false`.

    ## Why is this bad
    `deepspeed.initialize` raises `ZeRORuntimeException: You are using ZeRO-Offload with a client
    provided optimizer ...`. With `zero_force_ds_cpu_optimizer: false` it runs, with a much slower
    torch optimizer step on the CPU. (Under Accelerate or the Trainer the optimizer is instead
    replaced by DeepSpeedCPUAdam without a word.)

    ## Example
    ```python
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    engine, *_ = deepspeed.initialize(model=model, optimizer=optimizer, config="ds_offload.json")
    ```

    ## Use instead
    ```python
    from deepspeed.ops.adam import DeepSpeedCPUAdam
    optimizer = DeepSpeedCPUAdam(model.parameters(), lr=1e-4)
    engine, *_ = deepspeed.initialize(model=model, optimizer=optimizer, config="ds_offload.json")
    ```
    """

    code = "DS431"
    name = "client-optimizer-with-offload"
    severity = "error"

    def check_call(self, document, call, config, context):
        if call.passes("optimizer") is not True or optimizer_offload(config.data) is not True:
            return
        if config.data.get("zero_force_ds_cpu_optimizer", True) is False:
            return
        expr = call.arguments["optimizer"]
        callee = _callee(expr)
        if not _is_optimizer_class(callee) or callee.rsplit(".", 1)[-1] in CPU_OPTIMIZERS:
            return
        zero = config.data.get("zero_optimization", {})
        device = zero.get("offload_optimizer", {}).get("device", "cpu") if isinstance(zero, dict) and \
            isinstance(zero.get("offload_optimizer"), dict) else "cpu"
        yield self.at(document, call, "optimizer",
                      f"deepspeed.initialize gets optimizer={_shown(expr)} while {config.name} offloads the optimizer "
                      f"(zero_optimization.offload_optimizer.device {json.dumps(device)}): DeepSpeed raises "
                      "ZeRORuntimeException at initialize for any client optimizer but DeepSpeedCPUAdam or "
                      "DeepSpeedCPULion; build deepspeed.ops.adam.DeepSpeedCPUAdam, let DeepSpeed build the "
                      "optimizer from an \"optimizer\" block, or set \"zero_force_ds_cpu_optimizer\": false "
                      "(a slow torch step on the CPU)",
                      config=config, pointer="/zero_optimization/offload_optimizer", about="the optimizer offload")


def _peak(block: dict, version: tuple[int, ...] | None) -> tuple[str, Any] | None:
    """(what, value) of the absolute learning rate a DeepSpeed schedule imposes, or None when it
    follows the optimizer's own lr (or is not known)."""
    params = block.get("params") if isinstance(block.get("params"), dict) else {}
    kind = block.get("type")
    if kind == "WarmupLR":
        if "warmup_max_lr" in params:
            return "warmup_max_lr", params["warmup_max_lr"]
        if version is not None and tuple(version) < WARMUP_LR_MAX_FOLLOWS_OPTIMIZER_SINCE:
            return "the default warmup_max_lr", 0.001
        return None
    if kind == "WarmupDecayLR":
        return ("warmup_max_lr", params["warmup_max_lr"]) if "warmup_max_lr" in params else \
            ("the default warmup_max_lr", 0.001)
    if kind == "OneCycle" and "cycle_max_lr" in params:
        return "cycle_max_lr", params["cycle_max_lr"]
    if kind == "LRRangeTest":
        return ("lr_range_test_min_lr", params["lr_range_test_min_lr"]) if "lr_range_test_min_lr" in params else \
            ("the default lr_range_test_min_lr", 0.001)
    return None


class ConfigSchedulerOnClientOptimizer(ScriptRule):
    """The ds_config's scheduler drives the learning rate of an optimizer built in code.

    ## What it does
    Reports a `deepspeed.initialize` call that passes an optimizer but no `lr_scheduler` when the
    ds_config has a DeepSpeed `scheduler` that sets absolute learning rates (`WarmupLR` with
    `warmup_max_lr`, `WarmupDecayLR`, `OneCycle`, `LRRangeTest`) different from the optimizer's
    `lr` (when the code shows it).

    ## Why is this bad
    DeepSpeed builds the config's scheduler on the client optimizer, and the schedule overwrites
    the `lr` the optimizer was built with at the first step: the code says `lr=1e-4`, the run uses
    the config's `warmup_max_lr` (or WarmupDecayLR's default 0.001). Only an INFO log says which
    scheduler was built.

    ## Example
    ```python
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    engine, *_ = deepspeed.initialize(model=model, optimizer=optimizer, config="ds_config.json")
    ```
    with `"scheduler": {"type": "WarmupDecayLR", "params": {"total_num_steps": 1000}}`

    ## Use instead
    ```python
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup)
    engine, *_ = deepspeed.initialize(model=model, optimizer=optimizer, lr_scheduler=scheduler,
                                      config="ds_config.json")  # and no "scheduler" block
    ```
    """

    code = "DS432"
    name = "config-scheduler-on-client-optimizer"
    severity = "warning"

    def check_call(self, document, call, config, context):
        block = config.data.get("scheduler")
        if not isinstance(block, dict) or call.passes("optimizer") is not True:
            return
        if call.passes("lr_scheduler") is not False:
            return
        peak = _peak(block, context.deepspeed_version)
        if peak is None or not is_number(peak[1]):
            return
        expr = call.arguments["optimizer"]
        lr = expr.keywords.get("lr") if expr.kind == "call" else None
        if is_number(lr) and lr == peak[1]:
            return
        code_lr = f"lr={lr}" if is_number(lr) else ""
        yield self.at(document, call, "optimizer",
                      f"deepspeed.initialize gets optimizer={_shown(expr, code_lr)} and no lr_scheduler, so DeepSpeed "
                      f"builds the {block['type']} scheduler of {config.name} on it, which sets the learning rate "
                      f"from {peak[0]} {json.dumps(peak[1])} instead of the optimizer's lr; pass lr_scheduler=, "
                      f"remove the \"scheduler\" block, or make {config.name} agree with the code",
                      config=config, pointer="/scheduler", about="the scheduler built on the client optimizer")


class ClientSchedulerOverridesConfig(ScriptRule):
    """`deepspeed.initialize(lr_scheduler=...)` while the ds_config has a `scheduler` block.

    ## What it does
    Reports a `deepspeed.initialize` call that passes an LR scheduler (an object or a callable)
    when the ds_config it loads also has a `scheduler` block.

    ## Why is this bad
    The scheduler passed in code wins and the config's scheduler is never built; DeepSpeed only
    logs "DeepSpeed using client LR scheduler". Warmup steps tuned in the ds_config change nothing.

    ## Example
    ```python
    engine, *_ = deepspeed.initialize(model=model, optimizer=opt, lr_scheduler=sched, config="ds_config.json")
    ```
    with a `"scheduler"` block in ds_config.json

    ## Use instead
    ```python
    engine, *_ = deepspeed.initialize(model=model, optimizer=opt, config="ds_config.json")
    ```
    (or keep `lr_scheduler=` and delete the `scheduler` block)
    """

    code = "DS433"
    name = "client-scheduler-overrides-config"
    severity = "error"

    def check_call(self, document, call, config, context):
        block = config.data.get("scheduler")
        if not isinstance(block, dict) or call.passes("lr_scheduler") is not True:
            return
        kind = f" ({block['type']})" if isinstance(block.get("type"), str) else ""
        yield self.at(document, call, "lr_scheduler",
                      f"deepspeed.initialize gets lr_scheduler={_shown(call.arguments['lr_scheduler'])}, so the "
                      f"\"scheduler\" block of {config.name}{kind} is ignored (DeepSpeed uses the client scheduler); "
                      f"remove the block from {config.name}, or drop lr_scheduler=",
                      config=config, pointer="/scheduler", about="the scheduler block that is ignored")


class ZeroWithoutOptimizer(ScriptRule):
    """ZeRO stage 1 or 2 with no optimizer in the code or in the ds_config.

    ## What it does
    Reports a `deepspeed.initialize` call that passes no optimizer when the ds_config it loads has
    no `optimizer` block and sets `zero_optimization.stage` 1 or 2.

    ## Why is this bad
    ZeRO 1 and 2 partition optimizer state, so they need an optimizer: `deepspeed.initialize`
    asserts "zero stage 2 requires an optimizer" (engine.py `_configure_zero_optimizer`). Only
    ZeRO 3 runs without one (for inference).

    ## Example
    ```python
    engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config="ds_zero2.json")
    ```
    with no `"optimizer"` block in ds_zero2.json

    ## Use instead
    ```python
    engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config="ds_zero2.json")
    ```
    with `"optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}` in ds_zero2.json, or
    `optimizer=` in the call.
    """

    code = "DS434"
    name = "zero-without-optimizer"
    severity = "error"

    def check_call(self, document, call, config, context):
        if call.passes("optimizer") is not False or "optimizer" in config.data:
            return
        stage = zero_stage(config.data)
        if stage not in (1, 2):
            return
        yield self.at(document, call, "optimizer",
                      f"deepspeed.initialize gets no optimizer and {config.name} has no \"optimizer\" block, but "
                      f"zero_optimization.stage is {stage}: DeepSpeed asserts \"zero stage {stage} requires an "
                      f"optimizer\"; add an \"optimizer\" block to {config.name} or pass optimizer=",
                      config=config, pointer="/zero_optimization/stage", about="the ZeRO stage")
