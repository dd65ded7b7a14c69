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
from shardshift.formats.python_script import UNKNOWN, ArgumentsCall, Expr, InitializeCall, ScriptFacts
from shardshift.rules.base import Context, Finding, Related, Rule
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
    from shardshift.files import read_text

    text = read_text(path, errors="strict")
    if text is None:
        return None
    from shardshift.formats import deepspeed

    document = deepspeed.read(text, path)
    return document if isinstance(document.data, dict) and document.syntax is None else None


def loaded_config(call: InitializeCall, script: Document, context: Context) -> LoadedConfig | None:
    """The config a call loads, when the source says which."""
    return config_of(call.config, script, context)


def config_of(expr: Expr | None, script: Document, context: Context) -> LoadedConfig | None:
    """The ds_config an argument names (a path or a dict literal), when the source says which."""
    if expr is None or not expr.certain:
        return None
    if expr.kind == "dict" and isinstance(expr.value, dict):
        where = f"{expr.text} (line {expr.bound_at})" if expr.bound_at else f"at line {expr.line}"
        return LoadedConfig(expr.value, f"the config dict {where}")
    if expr.kind != "str" or not expr.value:
        return None
    written = expr.value
    from shardshift.context.paths import anchors as lookup_anchors

    anchors = lookup_anchors(os.path.dirname(os.path.abspath(script.path)))
    candidates = [written] if os.path.isabs(written) else [os.path.join(a, written) for a in anchors]
    for candidate in candidates:
        if os.path.isfile(candidate):
            document = _read_config(candidate, context)
            return LoadedConfig(document.data, written, document) if document is not None else None
    if os.path.isabs(written):  # a path from the author's machine: the checked ds_config it ends in
        from shardshift.context.paths import by_suffix, suffix_note

        found = by_suffix(written, [d.path for d in context.documents if d.format == "deepspeed"])
        document = _read_config(found, context) if found is not None else None
        if document is not None:
            return LoadedConfig(document.data, f"{written} ({suffix_note(written, found, short=True)})", document)
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



class InitializeWithoutConfig(ScriptRule):
    """`deepspeed.initialize` called with no ds_config: neither `config=` nor `args=`.

    ## What it does
    Reports a `deepspeed.initialize` call that certainly passes none of `config`,
    `config_params` and `args` (no `**kwargs` either). With `args=` the config may come from the
    command line (`--deepspeed_config`), which the script does not show, so such calls are left
    alone.

    ## Why is this bad
    DeepSpeed has no configuration to build the engine from: `deepspeed.initialize` asserts
    "DeepSpeed requires --deepspeed_config to specify configuration file" (deepspeed/__init__.py),
    on the cluster, after the job got its GPUs.

    ## Example
    ```python
    engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters())
    ```

    ## Use instead
    ```python
    engine, *_ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config="ds_config.json")
    ```
    """

    code = "DS448"
    name = "initialize-without-config"
    severity = "error"

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        for call in _calls(document):
            if all(call.passes(name) is False for name in ("config", "config_params", "args")):
                yield self.at(document, call, "", "deepspeed.initialize gets no ds_config (neither config= nor "
                              "args=): DeepSpeed asserts \"DeepSpeed requires --deepspeed_config to specify "
                              "configuration file\"; pass config=\"ds_config.json\" (or a dict), or args= parsed "
                              "with --deepspeed_config")

    def check_call(self, document, call, config, context):  # pragma: no cover - check() is overridden
        return ()

# --- TrainingArguments(...) against the ds_config it names (transformers 5.x) ------------------
#
# What transformers does with these arguments (checked by tests/test_training_arguments.py with the
# real Trainer on the CPU):
# - `TrainingArguments.__post_init__` raises "At most one of fp16 and bf16 can be True";
# - `HfTrainerDeepSpeedConfig.trainer_config_process` fills "auto" in fp16.enabled with
#   `fp16 or fp16_full_eval` (bf16.enabled with `bf16 or bf16_full_eval`), and records a mismatch
#   for a real value that differs; `trainer_config_finalize` (in `deepspeed_init`, when train()
#   starts) raises ValueError listing the mismatches. With the other precision enabled in the
#   ds_config, Accelerate's `DeepSpeedPlugin.set_mixed_precision` raises first, when the Trainer
#   is built;
# - `deepspeed_optim_sched`: with an "optimizer" block the Trainer hands DeepSpeed a DummyOptim and
#   DeepSpeed builds the block's optimizer: `optim` is not used, and nothing says so. Without the
#   block the Trainer builds `optim`, and with ZeRO-Offload of the optimizer Accelerate swaps it
#   for DeepSpeedCPUAdam (`map_pytorch_optim_to_deepspeed`), in AdamW mode only for torch AdamW.

# optim values whose optimizer Accelerate replaces with DeepSpeedCPUAdam in Adam (L2) mode under
# ZeRO-Offload: the torch classes the Trainer builds for them are not AdamW or Adagrad.
OFFLOAD_SWAPPED_OPTIM = {"sgd": "torch.optim.SGD", "adafactor": "transformers' Adafactor",
                         "rmsprop": "torch.optim.RMSprop"}


def _arguments_calls(document: Document):
    facts = document.data
    if not isinstance(facts, ScriptFacts):
        return
    for reference in facts.references:
        if reference.consumer == "trainer" and reference.call is not None:
            yield reference


def _flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _flag_calls(document: Document) -> list[ArgumentsCall]:
    """The TrainingArguments flags of a launch document's launches (formats/launch/training_flags.py)."""
    calls = getattr(document.data, "training_arguments", None)
    return [c for c in calls if isinstance(c, ArgumentsCall)] if isinstance(calls, list) else []


def _given(call: ArgumentsCall, python: str, *names: str) -> str:
    """How the call gives `names`: `python` (`TrainingArguments(optim="sgd")`) for a Python call, the
    flags as written (`--optim sgd (train.py's TrainingArguments flags)`) for command-line flags."""
    written = getattr(call, "written", None)
    if written is None:
        return python
    shown = [written[n] for n in names if n in written]
    return f"{', '.join(shown)} ({call.callee})" if shown else call.callee


def _option(call: ArgumentsCall, name: str, value: str = "") -> str:
    """`name=value` for a Python call, `--name value` for command-line flags."""
    if getattr(call, "written", None) is None:
        return f"{name}={value}" if value else f"{name}="
    return f"--{name} {value}" if value else f"--{name}"


class TrainingArgumentsRule(Rule):
    """Judges `TrainingArguments(...)` calls of Python scripts and the TrainingArguments flags of
    launch scripts (`--deepspeed ds.json --bf16 true`), each against the ds_config it names."""

    formats = ("python", "launch")

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        if document.format == "launch":
            for call in _flag_calls(document):
                path = call.keywords.get("deepspeed")
                if not isinstance(path, str) or not path or "deepspeed" not in call.positions:
                    continue
                line, column = call.positions["deepspeed"]
                expr = Expr("str", call.written.get("deepspeed", path), line, column, path)
                config = config_of(expr, document, context)
                if config is not None:
                    yield from self.check_arguments(document, call, config, context)
            return
        for reference in _arguments_calls(document):
            expr = reference.expr
            if reference.call.defaults and expr.kind == "str" and not expr.certain:
                import copy

                expr = copy.copy(expr)  # a dataclass default: the path used unless the command line gives another
                expr.certain = True
            config = config_of(expr, document, context)
            if config is not None:
                yield from self.check_arguments(document, reference.call, config, context)

    def check_arguments(self, document: Document, call: ArgumentsCall, config: LoadedConfig,
                        context: Context) -> Iterable[Finding]:
        raise NotImplementedError

    def at(self, document: Document, call: ArgumentsCall, keyword: str, message: str, *,
           config: LoadedConfig | None = None, pointer: str = "", about: str = "", key: bool = True) -> Finding:
        position = call.positions.get(keyword, (call.line, call.column))
        related = []
        if config is not None and config.document is not None:
            related.append(self.related(config.document, pointer, about, key=key))
        return self.finding(document, None, message, position=position, related=related,
                            unknown_context=getattr(call, "program", None))


class TrainingArgumentsOptimIgnored(TrainingArgumentsRule):
    """`TrainingArguments(optim=...)` with a ds_config that has an `optimizer` block.

    ## What it does
    Reports a `TrainingArguments(...)` call (or a class built on it, such as TRL's `SFTConfig`)
    that sets `optim` literally and names a ds_config with an `optimizer` block; also the same
    TrainingArguments given as flags of a launch script (`--optim sgd --deepspeed ds.json`).

    ## Why is this bad
    With an `optimizer` block the Hugging Face Trainer does not build an optimizer at all: it
    hands DeepSpeed a placeholder (`DummyOptim`, in `deepspeed_optim_sched`) and DeepSpeed builds
    the block's optimizer. `optim="adamw_bnb_8bit"`, `"sgd"` or `"adafactor"` is not used, and
    nothing says so: the run trains with the block's optimizer and memory.

    ## Example
    ```python
    args = TrainingArguments(output_dir="out", optim="sgd", deepspeed="ds_config.json")
    ```
    with `"optimizer": {"type": "AdamW", "params": {"lr": "auto"}}` in ds_config.json

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="out", optim="sgd", deepspeed="ds_config.json")
    ```
    with no `"optimizer"` block in ds_config.json (or drop `optim=` and keep the block)
    """

    code = "DS435"
    name = "training-arguments-optim-ignored"
    severity = "warning"

    def check_arguments(self, document, call, config, context):
        optim = call.keywords.get("optim")
        block = config.data.get("optimizer")
        if not isinstance(optim, str) or not isinstance(block, dict):
            return
        kind = f" ({block['type']})" if isinstance(block.get("type"), str) else ""
        yield self.at(document, call, "optim",
                      f"{_given(call, f'{call.callee}(optim={json.dumps(optim)})', 'optim')} is ignored: "
                      f"{config.name} has an \"optimizer\" block{kind}, so the Trainer hands DeepSpeed a DummyOptim "
                      f"and DeepSpeed builds the block's optimizer without a word; remove the \"optimizer\" block to "
                      f"train with optim, or drop {_option(call, 'optim')}",
                      config=config, pointer="/optimizer", about="the optimizer DeepSpeed builds instead")


PRECISION = (("fp16", "fp16_full_eval", "bf16"), ("bf16", "bf16_full_eval", "fp16"))


class TrainingArgumentsPrecisionMismatch(TrainingArgumentsRule):
    """`fp16`/`bf16` in `TrainingArguments` that differ from the ds_config's `enabled`.

    ## What it does
    Reports a `TrainingArguments(...)` call whose `fp16 or fp16_full_eval` (`bf16 or
    bf16_full_eval`), as literals or their default `False`, differs from a `true`/`false`
    `fp16.enabled` (`bf16.enabled`) in the ds_config it names. Not reported when `**kwargs` may
    set them or the ds_config says `"auto"`. The same for TrainingArguments given as flags of a
    launch script (`--bf16 true --deepspeed ds.json`; not when an unknown `$EXTRA_ARGS` may set
    them).

    ## Why is this bad
    The Trainer compares the two (`HfTrainerDeepSpeedConfig.trainer_config_process`) and raises
    `ValueError: Please correct the following DeepSpeed config values that mismatch
    TrainingArguments values: - ds bf16.enabled=True vs hf bf16|bf16_full_eval=False` when
    `train()` starts, after the model is loaded. When the arguments ask for the other precision
    (`fp16=True` with `bf16.enabled: true`), Accelerate raises already when the Trainer is built
    (`--mixed_precision arg cannot be set to fp16 when bf16 is set in the DeepSpeed config file`).

    ## Example
    ```python
    args = TrainingArguments(output_dir="out", deepspeed="ds_config.json")
    ```
    with `"bf16": {"enabled": true}` in ds_config.json

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="out", bf16=True, deepspeed="ds_config.json")
    ```
    (or `"bf16": {"enabled": "auto"}`, filled from the arguments)
    """

    code = "DS436"
    name = "training-arguments-precision-mismatch"
    severity = "error"

    def check_arguments(self, document, call, config, context):
        for section, full_eval, other in PRECISION:
            block = config.data.get(section)
            enabled = _flag(block.get("enabled")) if isinstance(block, dict) else None
            if enabled is None:
                continue
            train, evaluate = (_flag(call.value(section, False)), _flag(call.value(full_eval, False)))
            if train is None or evaluate is None or (train or evaluate) == enabled:
                continue
            asked = _flag(call.value(other, False))
            keyword = next((k for k in (section, full_eval) if k in call.keywords),
                           other if enabled and asked and other in call.keywords else "")
            flags = getattr(call, "written", None) is not None
            given = [k for k in (section, full_eval) if k in call.keywords]
            written = ", ".join(f"{k}={call.keywords[k]}" for k in given) or f"{section} not set (False)"
            if enabled and asked:
                given = [other, *given]
            if flags:
                written = (f"{', '.join(call.written[k] for k in given if k in call.written)} ({call.callee})"
                           if given else f"{call.callee} without --{section} (False)")
            if enabled and asked:
                if not flags:
                    written = f"{other}=True" + (f", {written}" if len(given) > 1 else "")
                what = (f"Accelerate raises ValueError when the Trainer is built (\"`--mixed_precision` arg cannot "
                        f"be set to `{other}` when `{section}` is set in the DeepSpeed config file.\")")
            else:
                what = (f"the Trainer raises ValueError when train() starts (\"Please correct the following "
                        f"DeepSpeed config values that mismatch TrainingArguments values: - ds {section}.enabled="
                        f"{enabled} vs hf {section}|{full_eval}={train or evaluate}\")")
            yield self.at(document, call, keyword,
                          f"{written if flags else f'{call.callee}({written})'} but {config.name} has "
                          f"{section}.enabled {json.dumps(enabled)}: "
                          f"{what}; make them agree, or set \"{section}\": {{\"enabled\": \"auto\"}}",
                          config=config, pointer=f"/{section}/enabled", about=f"{section}.enabled", key=False)


class FullEvalPrecisionTrains(TrainingArgumentsRule):
    """`fp16_full_eval`/`bf16_full_eval` with `"enabled": "auto"`: training runs in that precision too.

    ## What it does
    Reports a `TrainingArguments(...)` call with `fp16_full_eval=True` (`bf16_full_eval=True`)
    and `fp16` (`bf16`) not set, when the ds_config it names has `fp16.enabled` (`bf16.enabled`)
    `"auto"`; also the same flags of a launch script (`--bf16_full_eval --deepspeed ds.json`).

    ## Why is this bad
    `*_full_eval` asks for half precision in evaluation only. The Trainer fills the ds_config's
    `"auto"` with `fp16 or fp16_full_eval` (`trainer_config_process`), so DeepSpeed trains in
    fp16 (bf16) as well: the weights, the optimizer's master copy and the numerics of the whole run
    change, and nothing says so.

    ## Example
    ```python
    args = TrainingArguments(output_dir="out", bf16_full_eval=True, deepspeed="ds_config.json")
    ```
    with `"bf16": {"enabled": "auto"}` in ds_config.json

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="out", bf16_full_eval=True, deepspeed="ds_config.json")
    ```
    with no `"bf16"` section in ds_config.json (or `bf16=True` if training in bf16 is meant;
    `"enabled": false` makes the Trainer raise a mismatch ValueError, see
    training-arguments-precision-mismatch)
    """

    code = "DS437"
    name = "full-eval-precision-trains"
    severity = "warning"

    def check_arguments(self, document, call, config, context):
        for section, full_eval, _ in PRECISION:
            block = config.data.get(section)
            if not isinstance(block, dict) or block.get("enabled") != "auto":
                continue
            if call.keywords.get(full_eval) is not True or _flag(call.value(section, False)) is not False:
                continue
            yield self.at(document, call, full_eval,
                          f"{_given(call, f'{call.callee}({full_eval}=True)', full_eval)} asks for {section} in "
                          f"evaluation only, but {config.name} "
                          f"has {section}.enabled \"auto\", which the Trainer fills with {section} or {full_eval} "
                          f"(True): DeepSpeed trains in {section} too; remove the \"{section}\" section to train in full "
                          f"precision (\"enabled\": false makes the Trainer raise a mismatch ValueError), or set "
                          f"{_option(call, section, 'True')} if that is meant",
                          config=config, pointer=f"/{section}/enabled", about=f"{section}.enabled", key=False)


class TrainerOptimizerReplaced(TrainingArgumentsRule):
    """`Trainer(optimizers=(optimizer, ...))` with TrainingArguments that name a ds_config.

    ## What it does
    Reports a `Trainer(...)`-like call (also TRL's `SFTTrainer` and the rest) that passes an
    optimizer it builds in code through `optimizers=`, when its `args=` is a
    `TrainingArguments(...)` call in the same file that names a ds_config.

    ## Why is this bad
    Under DeepSpeed the Trainer drops that optimizer when training starts (`deepspeed_init` sets
    `trainer.optimizer = None`): with an `optimizer` block in the ds_config DeepSpeed builds the
    block's optimizer, without one the Trainer builds the `optim` of the arguments (AdamW by
    default). The optimizer, learning rate and parameter groups written in code are not used, and
    nothing says so.

    ## Example
    ```python
    args = TrainingArguments(output_dir="out", deepspeed="ds_config.json")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    Trainer(model=model, args=args, optimizers=(optimizer, None)).train()
    ```

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="out", optim="sgd", learning_rate=0.5, deepspeed="ds_config.json")
    Trainer(model=model, args=args).train()
    ```
    (or an `"optimizer"` block in the ds_config)
    """

    code = "DS438"
    name = "trainer-optimizer-replaced-under-deepspeed"
    severity = "warning"

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        facts = document.data
        if not isinstance(facts, ScriptFacts):
            return
        by_position = {(r.call.line, r.call.column): r for r in _arguments_calls(document)}
        for trainer in facts.trainers:
            reference = by_position.get(trainer.arguments_at) if trainer.arguments_at else None
            if reference is None or trainer.optimizer.kind not in ("call", "callable") or not trainer.optimizer.certain:
                continue
            config = config_of(reference.expr, document, context)
            if config is None:
                continue
            block = config.data.get("optimizer")
            if isinstance(block, dict):
                kind = f" ({block['type']})" if isinstance(block.get("type"), str) else ""
                instead = f"DeepSpeed builds the \"optimizer\" block of {config.name}{kind}"
                pointer, about = "/optimizer", "the optimizer DeepSpeed builds instead"
            else:
                optim = reference.call.value("optim", None)
                optim = f"optim={json.dumps(optim)}" if isinstance(optim, str) else \
                    "the optim of the arguments (AdamW by default)" if optim is None else "the optim of the arguments"
                instead = f"{config.name} has no \"optimizer\" block, so the Trainer builds {optim}"
                pointer, about = "", "the ds_config"
            related = [self.related(config.document, pointer, about, key=bool(pointer))] \
                if config.document is not None else []
            yield self.finding(
                document, None,
                f"{trainer.callee}(optimizers=({_shown(trainer.optimizer)}, ...)) is dropped under DeepSpeed: the "
                f"Trainer sets its optimizer to None when training starts and {instead}, without a word; give the "
                "optimizer through the arguments (optim, learning_rate, weight_decay) or the ds_config's "
                "\"optimizer\" block", position=trainer.position, related=related)


class TrainingArgumentsOptimSwappedByOffload(TrainingArgumentsRule):
    """`TrainingArguments(optim="sgd" / "adafactor" / "rmsprop")` with ZeRO-Offload of the optimizer.

    ## What it does
    Reports a `TrainingArguments(...)` call (or a launch script's `--optim` flag) with `optim`
    `"sgd"`, `"adafactor"` or `"rmsprop"` when the ds_config it names has no `optimizer` block,
    offloads the optimizer (`zero_optimization.offload_optimizer.device` cpu or nvme) and does not
    set `"zero_force_ds_cpu_optimizer": false`.

    ## Why is this bad
    The Trainer builds the `optim` optimizer, and Accelerate then replaces it with DeepSpeed's
    `DeepSpeedCPUAdam` (`map_pytorch_optim_to_deepspeed`), keeping only `lr` and `weight_decay`,
    in Adam mode (L2 weight decay; AdamW mode only for a torch AdamW). The run trains with Adam,
    not SGD, Adafactor or RMSprop, and nothing says so.

    ## Example
    ```python
    args = TrainingArguments(output_dir="out", optim="sgd", deepspeed="ds_offload.json")
    ```
    with `"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}`

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="out", optim="adamw_torch", deepspeed="ds_offload.json")
    ```
    (or no optimizer offload, or `"zero_force_ds_cpu_optimizer": false` for a slow torch step on the CPU)
    """

    code = "DS439"
    name = "training-arguments-optim-swapped-by-offload"
    severity = "warning"

    def check_arguments(self, document, call, config, context):
        optim = call.keywords.get("optim")
        if not isinstance(optim, str) or optim not in OFFLOAD_SWAPPED_OPTIM or "optimizer" in config.data:
            return
        if optimizer_offload(config.data) is not True or config.data.get("zero_force_ds_cpu_optimizer", True) is False:
            return
        yield self.at(document, call, "optim",
                      f"{_given(call, f'{call.callee}(optim={json.dumps(optim)})', 'optim')} builds "
                      f"{OFFLOAD_SWAPPED_OPTIM[optim]}, but "
                      f"{config.name} offloads the optimizer and has no \"optimizer\" block: Accelerate replaces it "
                      "with DeepSpeedCPUAdam in Adam mode (only lr and weight_decay kept) without a word; use an "
                      "AdamW optim, add an \"optimizer\" block, or set \"zero_force_ds_cpu_optimizer\": false "
                      "(a slow torch step on the CPU)",
                      config=config, pointer="/zero_optimization/offload_optimizer", about="the optimizer offload")


# lr_scheduler_type values whose schedule DeepSpeed's own scheduler of the same shape gives
# (a linear decay, a cosine one): naming one of these next to the block repeats it, not overrides it
SAME_SHAPE = {("linear", "WarmupDecayLR"), ("cosine", "WarmupCosineLR"), ("constant_with_warmup", "WarmupLR")}


class TrainingArgumentsSchedulerIgnored(TrainingArgumentsRule):
    """`TrainingArguments(lr_scheduler_type=...)` with a ds_config that has a `scheduler` block.

    ## What it does
    Reports a `TrainingArguments(...)` call (or a class built on it, such as TRL's `SFTConfig`)
    that sets `lr_scheduler_type` literally and names a ds_config with a `scheduler` block; also the
    same TrainingArguments given as flags of a launch script (`--lr_scheduler_type cosine
    --deepspeed ds.json`). Not reported when the block's scheduler has the same shape (`linear`
    with `WarmupDecayLR`, `cosine` with `WarmupCosineLR`, `constant_with_warmup` with `WarmupLR`).

    ## Why is this bad
    With a `scheduler` block the Hugging Face Trainer does not build a scheduler: it hands
    DeepSpeed a placeholder (`DummyScheduler`, in `deepspeed_optim_sched`) and DeepSpeed builds the
    block's scheduler. `lr_scheduler_type="cosine"` is not used and nothing says so: a `WarmupLR`
    block, for one, keeps the learning rate constant after the warm-up, so the run never decays.

    ## Example
    ```python
    args = TrainingArguments(output_dir="out", lr_scheduler_type="cosine", deepspeed="ds_config.json")
    ```
    with `"scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": "auto"}}` in ds_config.json

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="out", lr_scheduler_type="cosine", deepspeed="ds_config.json")
    ```
    with no `"scheduler"` block in ds_config.json (or drop `lr_scheduler_type` and keep the block)
    """

    code = "DS449"
    name = "training-arguments-scheduler-ignored"
    severity = "warning"

    def check_arguments(self, document, call, config, context):
        wanted = call.keywords.get("lr_scheduler_type")
        block = config.data.get("scheduler")
        if not isinstance(wanted, str) or not isinstance(block, dict):
            return
        kind = block.get("type")
        if (wanted, kind) in SAME_SHAPE:
            return
        named = f" ({kind})" if isinstance(kind, str) else ""
        yield self.at(document, call, "lr_scheduler_type",
                      f"{_given(call, f'{call.callee}(lr_scheduler_type={json.dumps(wanted)})', 'lr_scheduler_type')}"
                      f" is ignored: {config.name} has a \"scheduler\" block{named}, so the Trainer hands DeepSpeed a "
                      f"DummyScheduler and DeepSpeed builds the block's scheduler without a word; remove the "
                      f"\"scheduler\" block to train with {wanted}, or drop {_option(call, 'lr_scheduler_type')}",
                      config=config, pointer="/scheduler", about="the scheduler DeepSpeed builds instead")


class TrainerOverrideSkipped(Rule):
    """A Trainer subclass's `create_optimizer` / `create_scheduler` that builds nothing under a DeepSpeed block.

    ## What it does
    Reports a `create_optimizer` (`create_scheduler`) method of a class built on a Trainer
    (`Trainer`, TRL's `SFTTrainer`, ...) that builds only while `self.optimizer`
    (`self.lr_scheduler`) is None, as transformers' own method does (an `if self.optimizer is
    None:`, or `super().create_optimizer()`), when the run trains that class with a ds_config that
    has an `optimizer` (`scheduler`) block: its `args=` is a `TrainingArguments(...)` call in the
    same file that names the ds_config, or a launch script runs the file with `--deepspeed ds.json`.

    ## Why is this bad
    With the block, `deepspeed_init` sets the Trainer's optimizer (scheduler) to a placeholder
    (`DummyOptim`, `DummyScheduler`, in `deepspeed_optim_sched`) before the Trainer calls the
    method, and DeepSpeed builds the block's optimizer or scheduler. The method's branch never
    runs: its per-module learning rates, parameter groups without weight decay or custom schedule
    are not used, and nothing says so.

    ## Example
    ```python
    class HeadTrainer(Trainer):
        def create_optimizer(self):
            if self.optimizer is None:
                self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.5)
            return self.optimizer

    args = TrainingArguments(output_dir="out", deepspeed="ds_config.json")
    HeadTrainer(model=model, args=args).train()
    ```
    with `"optimizer": {"type": "AdamW", "params": {"lr": "auto"}}` in ds_config.json

    ## Use instead
    The same code with no `"optimizer"` block in ds_config.json: the Trainer's optimizer is then
    None when it calls `create_optimizer`, and DeepSpeed steps the optimizer the method builds.
    """

    code = "DS450"
    name = "trainer-override-skipped-under-deepspeed"
    severity = "warning"
    formats = ("python", "launch")

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        if document.format == "launch":
            yield from self._launch(document, context)
            return
        facts = document.data
        if not isinstance(facts, ScriptFacts) or not facts.overrides:
            return
        by_position = {(r.call.line, r.call.column): r for r in _arguments_calls(document)}
        for built in facts.built:
            reference = by_position.get(built.arguments_at) if built.arguments_at else None
            if reference is None:
                continue
            config = config_of(reference.expr, document, context)
            if config is None:
                continue
            for override in facts.overrides:
                if override.cls == built.cls and override.guarded:
                    yield from self._report(document, override, config, (override.line, override.column), None,
                                            getattr(reference.call, "program", None))

    def _launch(self, document: Document, context: Context) -> Iterable[Finding]:
        from shardshift.context.tree import read_text
        from shardshift.formats import python_script
        from shardshift.formats.python_script import OVERRIDDEN_BY_BLOCK

        for call in _flag_calls(document):
            path = call.keywords.get("deepspeed")
            entry = getattr(call, "entry", None)
            if not isinstance(path, str) or not path or "deepspeed" not in call.positions or not entry:
                continue
            text = read_text(entry)
            if text is None or not any(f"def {m}" in text for m in OVERRIDDEN_BY_BLOCK):
                continue
            facts = python_script.read(text, entry).data
            built = {b.cls for b in facts.built}
            line, column = call.positions["deepspeed"]
            config = config_of(Expr("str", call.written.get("deepspeed", path), line, column, path), document,
                               context)
            if config is None:
                continue
            for override in facts.overrides:
                if override.cls in built and override.guarded:
                    yield from self._report(document, override, config, (line, column), entry,
                                            getattr(call, "program", None))

    def _report(self, document: Document, override, config: LoadedConfig, position: tuple[int, int],
                entry: str | None, program) -> Iterable[Finding]:
        from shardshift.formats.python_script import OVERRIDDEN_BY_BLOCK, OVERRIDE_ATTRIBUTE

        block_name = OVERRIDDEN_BY_BLOCK[override.method]
        block = config.data.get(block_name)
        if not isinstance(block, dict):
            return
        kind = f" ({block['type']})" if isinstance(block.get("type"), str) else ""
        related = []
        if entry is not None:
            related.append(Related(entry, override.line, override.column, None,
                                   f"{override.cls}.{override.method}, whose branch never runs"))
        if config.document is not None:
            related.append(self.related(config.document, f"/{block_name}",
                                        f"the {block_name} DeepSpeed builds instead"))
        where = f" in {os.path.basename(entry)}:{override.line}" if entry else ""
        article = "an" if block_name == "optimizer" else "a"
        attribute = OVERRIDE_ATTRIBUTE[override.method]
        placeholder = "DummyOptim" if block_name == "optimizer" else "DummyScheduler"
        yield self.finding(
            document, None,
            f"{override.cls}.{override.method}(){where} builds nothing under DeepSpeed: {config.name} has "
            f"{article} \"{block_name}\" block{kind}, so the Trainer has set self.{attribute} to DeepSpeed's "
            f"placeholder ({placeholder}) before it calls {override.method}, whose branch for a None "
            f"{attribute} never runs, and DeepSpeed builds the block's {block_name} without a word; remove the "
            f"\"{block_name}\" block to use {override.method}, or move what it sets into the block",
            position=position, related=related, unknown_context=program)
