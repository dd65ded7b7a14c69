"""Megatron-LM launch scripts and argument files: reader.

A launch script is read with the bash-subset grammar (shell.py, never run); the launcher line that
starts a Megatron entry script (`pretrain_gpt.py`, ...) gives the arguments, and the launcher's own
options give the world size. An argument file (`*.args`, or any file named on the command line whose
content is an argument list, `is_argument_list`) is the arguments alone. Each argument is
then paired with its value the way Megatron's argparse parser pairs it (flags.json: a switch takes
no value, `--flag=value` is one argument, `nargs` decides how many values follow), and converted to
the value argparse stores; what argparse would reject is kept with the reason, for the rules.

Lifted into the Plan, each at the flag as written (keys.py): the parallel degrees, batch sizes,
precision (`--bf16` / `--fp16` / `--fp8-format`), optimizer and LR schedule, distributed optimizer
and FSDP (ZeRO stage), recomputation, optimizer offload and model shape. `--num-query-groups`
counts only with `--group-query-attention` (Megatron ignores it otherwise). The world size comes
from torchrun's `--nnodes` × `--nproc_per_node`, the deepspeed launcher's `--num_nodes` ×
`--num_gpus`, srun's task count, or a plain `python` (one process); a value that depends on the
environment or on the machine is Unknown with the reason. `--deepspeed_config` is a Reference to
the ds_config (Megatron-DeepSpeed), so the two files form one setup. Every other flag stays as
written in `plan.passthrough["megatron"]`.
"""

from __future__ import annotations

import os
import re
from typing import Any, Callable, NamedTuple

from shardshift.document import Document, Reference, SyntaxProblem, resolve_reference
from shardshift.plan import Unknown
from shardshift.source import Location

FORMAT = "megatron"

# An unparseable file is reported only when it has one of these.
MARKER_KEYS = ("--micro-batch-size", "--tensor-model-parallel-size", "--num-layers", "--pipeline-model-parallel-size")
_FLAG = re.compile(r"--(?:tensor|pipeline)[-_]model[-_]parallel[-_]size\b|--micro[-_]batch[-_]size\b"
                   r"|--num[-_]layers\b|--num[-_]attention[-_]heads\b|--global[-_]batch[-_]size\b")
_ENTRY = re.compile(r"(?:^|[\s/\"'=])(?:pretrain_\w+|finetune\w*|train\w*|main)\.py\b")
_SCRIPT_SUFFIXES = (".sh", ".bash", ".slurm", ".sbatch")
# Megatron-LM's own entry scripts: their parsers add no flags of their own (pretrain_gpt.py's
# ModelOpt flags aside), so a flag missing from the table is an argparse error there.
MEGATRON_ENTRIES = re.compile(r"pretrain_(?:gpt|bert|t5|mamba|hybrid|vlm|retro|ict|vision_\w+)\.py")
DEEPSPEED_CONFIG_FLAGS = ("--deepspeed_config", "--deepspeed-config")


class Given(NamedTuple):
    """One flag as written, paired with its values as Megatron's argparse pairs them.

    `flag` is the table entry (None: not a flag of Megatron-LM's parser); `value` the value argparse
    stores (a switch's bool, a list for nargs, an Unknown when the script decides it at run time, None
    when argparse rejects it); `problem` argparse's rejection of the values ("expected one
    argument"); `stray` the values argparse would not take (reported as unrecognized arguments)."""

    spelling: str
    flag: Any
    value: Any
    line: int
    column: int
    text: str
    problem: str | None = None
    stray: tuple = ()
    argv: tuple = ()  # the words the launcher passes for it, as the shell splits them (str or Unknown)
    # the script defaults the value stands on: ((variable, value, line, column), ...) (shell.Arg.assumed)
    assumed: tuple = ()

    def location(self, path: str) -> Location:
        return Location(path, self.line, self.column, self.spelling)


class Arguments:
    """What a Megatron document holds: the arguments in order, the launch that passes them (None
    for an argument file), the entry script, the extra (positional or unresolved) arguments, and
    which program reads them ("megatron-lm", or "megatron-deepspeed" for a launch that passes
    `--deepspeed` / `--deepspeed_config` or uses the deepspeed launcher)."""

    __slots__ = ("given", "launch", "entry", "extra", "dialect", "script", "launches", "argv", "program")

    def __init__(self, given: list[Given], launch: Any = None, entry: Any = None, extra: list | None = None,
                 script: Any = None, launches: int = 0) -> None:
        self.given, self.launch, self.entry = given, launch, entry
        self.extra = extra if extra is not None else []
        self.script, self.launches = script, launches
        self.argv: list = []  # every word after the entry script, in order, as the launcher passes them
        # the program that parses the arguments (program.Program), None for an argument file
        self.program: Any = None
        spellings = {g.spelling for g in given}
        deepspeed = (launch is not None and launch.launcher == "deepspeed") or "--deepspeed" in spellings or \
            any(s in spellings for s in DEEPSPEED_CONFIG_FLAGS)
        self.dialect = "megatron-deepspeed" if deepspeed else "megatron-lm"

    def last(self) -> dict[str, Given]:
        """dest -> the Given that argparse keeps (the last one)."""
        out: dict[str, Given] = {}
        for item in self.given:
            if item.flag is not None:
                out[item.flag.dest] = item
        return out

    def value(self, dest: str, default: Any = None) -> Any:
        item = self.last().get(dest)
        return default if item is None or item.problem else item.value

    @property
    def megatron_entry(self) -> bool:
        return isinstance(self.entry, str) and MEGATRON_ENTRIES.search(self.entry) is not None


def looks_like(path: str, text: str) -> bool:
    """An `*.args` file, or a shell script that starts a Megatron entry script with Megatron flags
    (judged by its name or its `#!` line: this is what a folder walk picks up)."""
    lower = path.lower()
    if lower.endswith(".args"):
        return True
    if not (lower.endswith(_SCRIPT_SUFFIXES) or (text.startswith("#!") and "sh" in text[:text.find("\n")])):
        return False
    return _FLAG.search(text) is not None and _ENTRY.search(text) is not None


# Files of other kinds (documentation, code, data) that may quote a Megatron command line: never
# read as a launch script by content.
_NOT_SCRIPT_SUFFIXES = (".md", ".rst", ".html", ".htm", ".ipynb", ".py", ".json", ".yaml", ".yml", ".toml",
                        ".cfg", ".ini", ".csv", ".tsv", ".tex", ".xml")
# A line that is a shell command or assignment, not part of an argument list.
_SHELL_LINE = re.compile(r"[A-Za-z_]\w*(?:\[[^]]*\])?\+?=|(?:export|cd|echo|if|then|fi|for|do|done|source|set|"
                         r"while|case|esac|function|local|declare|unset|exit|torchrun|deepspeed|srun|sbatch|"
                         r"mpirun|bash|sh|python\d*(?:\.\d+)?)(?:\s|$)")


def looks_like_named(path: str, text: str) -> bool:
    """For a file named on the command line that no reader recognised by name: a Megatron argument
    list (mostly `--flag value` words, Megatron flags, no shell command) or a shell script that starts
    a Megatron entry script with Megatron flags, whatever its name (`args.txt`, `train`, `run.job`).
    Never used in a folder walk, which goes by names."""
    if is_argument_list(text):
        return True
    if path.lower().endswith(_NOT_SCRIPT_SUFFIXES):
        return False
    return _FLAG.search(text) is not None and _ENTRY.search(text) is not None


def is_argument_list(text: str) -> bool:
    """Whether `text` is a Megatron argument list by its content: every line (comments aside) starts
    with a flag or continues the values of the line before, no line is a shell command or assignment,
    at least one of the flags sets the model, parallelism or batch (`--num-layers`,
    `--tensor-model-parallel-size`, ...), and the flags are Megatron-LM's (all of them, or at least
    two and at least half). Cheap on other text: it stops at the first line that does not fit."""
    from shardshift.formats.megatron.flags import table

    lines = 0
    flags: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            line = line[:-1].rstrip()
        if not line:
            continue
        lines += 1
        if _SHELL_LINE.match(line) or any(c in line for c in ("$(", "`", "|", ";", "&&", ">", "<")):
            return False
        words = line.split()
        if not words[0].startswith("-") and not flags:
            return False  # the first line must start with a flag
        flags += [w.split("=", 1)[0] for w in words if w.startswith("--") and len(w) > 2]
    if not lines or not flags or not any(_FLAG.fullmatch(f) or f == "--hidden-size" for f in flags):
        return False
    known = table()
    count = sum(1 for f in flags if known.get(f) is not None)
    return count == len(flags) or (count >= 2 and 2 * count >= len(flags))


def not_config_reason(document: Document) -> str | None:
    """Why a file named on the command line and read as a Megatron script is no configuration."""
    data = document.data
    if isinstance(data, Arguments) and data.script is not None and data.launch is None:
        return ("it mentions Megatron flags, but no command in it launches a Megatron entry script with them "
                "(torchrun/deepspeed/srun/python ... pretrain_gpt.py --flags)")
    return None


def is_config(document: Document) -> bool:
    """An argument file, or a script in which a launch with Megatron flags was found."""
    data = document.data
    return isinstance(data, Arguments) and (data.launch is not None or data.script is None) and \
        any(g.flag is not None for g in data.given)


def read(text: str, path: str = "<string>") -> Document:
    """Read a launch script or an argument file and build its Plan. Never raises for bad input."""
    from shardshift.formats.megatron import shell

    document = Document(path=path, format=FORMAT, text=text)
    lower = path.lower()
    if lower.endswith(".args") or (not lower.endswith(_SCRIPT_SUFFIXES) and is_argument_list(text)):
        args = shell.read_argument_file(text, path)
        arguments = Arguments(pair(args), extra=[a for a in args if a.flag is None])
        arguments.argv = argv_of(args)
    else:
        script = shell.read_launch_script(text, path)
        launch = choose_launch(script.launches)
        if launch is None:
            if script.problems:
                message, line, column = script.problems[0]
                document.syntax = SyntaxProblem(message, line, column)
            document.data = Arguments([], script=script)
            return document
        program = find_program(path, launch)
        arguments = Arguments(pair(launch.args, program.table), launch, entry_name(launch) or launch.script,
                              [a for a in launch.args if a.flag is None], script, len(script.launches))
        arguments.program = program
        arguments.argv = argv_of(launch.args)
    document.data = arguments
    document.references = _references(arguments, path)
    _assumptions(document, arguments)
    document.defer_plan(lambda: build_plan(arguments, path))
    if arguments.launch is not None:
        document.variants = variants(text, path, arguments)
    return document


def _assumptions(document: Document, arguments: Arguments) -> None:
    """The script defaults each flag's value stands on, at the flag; the launcher's counts', at
    the launcher (where the world size is given)."""
    for item in arguments.given:
        if item.assumed:
            document.assume(item.assumed, item.line, item.column)
    launch = arguments.launch
    if launch is not None:
        for name, assumed in getattr(launch, "assumed", {}).items():
            if name in _COUNT_OPTIONS:
                document.assume(assumed, launch.line, launch.column)


_COUNT_OPTIONS = {"nnodes", "nproc_per_node", "num_gpus", "num_nodes", "ntasks", "nodes", "ntasks-per-node",
                  "N", "n", "gpus-per-node"}


def variants(text: str, path: str, arguments: Arguments) -> list[tuple[tuple[str, ...], Document]]:
    """One Document per configuration an undecided `if`/`case` of the script chooses (model sizes
    set in each branch), when the launch's arguments depend on it (shell.launch_variants)."""
    from shardshift.formats.megatron import shell

    out: list[tuple[tuple[str, ...], Document]] = []
    for label, launch in shell.launch_variants(text, arguments.script, arguments.launch):
        same = entry_name(launch) == entry_name(arguments.launch) and _deepspeed(launch) == _deepspeed(arguments.launch) \
            and launch.variables.get("PYTHONPATH") == arguments.launch.variables.get("PYTHONPATH")
        program = arguments.program if same else find_program(path, launch)
        own = Arguments(pair(launch.args, program.table), launch, entry_name(launch) or launch.script,
                        [a for a in launch.args if a.flag is None], arguments.script, arguments.launches)
        own.program = program
        own.argv = argv_of(launch.args)
        document = Document(path=path, format=FORMAT, text=text)
        document.data = own
        document.references = _references(own, path)
        _assumptions(document, own)
        document.defer_plan(lambda own=own: build_plan(own, path))
        out.append((label, document))
    return out


def _deepspeed(launch: Any) -> bool:
    spellings = {a.flag for a in launch.args if a.flag is not None}
    return launch.launcher == "deepspeed" or "--deepspeed" in spellings or any(s in spellings for s in DEEPSPEED_CONFIG_FLAGS)


def find_program(path: str, launch: Any):
    """The program the launch runs and its parser (program.py); read from disk only when the
    launch script is a file there."""
    from shardshift.formats.megatron import program

    spellings = {a.flag for a in launch.args if a.flag is not None}
    deepspeed = launch.launcher == "deepspeed" or "--deepspeed" in spellings or \
        any(s in spellings for s in DEEPSPEED_CONFIG_FLAGS)
    entry = entry_name(launch)
    megatron_entry = MEGATRON_ENTRIES.search(entry) is not None
    script_path = path if os.path.isfile(path) else None
    try:
        return program.find(script_path, launch, "megatron-deepspeed" if deepspeed else "megatron-lm", megatron_entry)
    except (OSError, RecursionError, ValueError):
        return program._unknown(os.path.basename(entry), f"{os.path.basename(entry) or 'the entry script'} could "
                                                         "not be read")


def argv_of(args: list) -> list:
    """The words shell.Arg items stand for, in order (str, or Unknown for what the run decides)."""
    out: list = []
    for arg in args:
        if arg.flag is None:
            out.append(arg.value)
            continue
        words = () if arg.value is None else arg.value if isinstance(arg.value, tuple) else (arg.value,)
        if words and isinstance(words[0], str) and arg.text.startswith(arg.flag + "="):
            out += [f"{arg.flag}={words[0]}", *words[1:]]
        else:
            out += [arg.flag, *words]
    return out


def choose_launch(launches: list) -> Any:
    """The launch that starts Megatron: the one passing the most Megatron flags (a script may also
    run a converter or a data preprocessor)."""
    from shardshift.formats.megatron.flags import table

    flags = table()
    best, score = None, (False, 0)
    for launch in launches:
        count = sum(1 for a in launch.args if a.flag is not None and flags.get(a.flag) is not None)
        named = _ENTRY.search(" " + entry_name(launch)) is not None
        # a helper (`python tools/x.py --split train`) or a converter shares flag names with Megatron:
        # a training entry script (pretrain_*.py, finetune*.py, train*.py) wins, then the most flags
        if (named or count >= 3) and (named, count) > score:
            best, score = launch, (named, count)
    return best


def entry_name(launch: Any) -> str:
    """The entry script's file name, also when its folder is known only at run time."""
    if isinstance(launch.script, str):
        return launch.script
    name = getattr(launch, "script_name", None)
    return name if isinstance(name, str) else ""


def pair(args: list, flags: Any = None) -> list[Given]:
    """Pair shell.Arg items (a flag and the words after it) with the table (upstream Megatron-LM's,
    or the program's own): what argparse stores."""
    from shardshift.formats.megatron.flags import convert, table

    flags = flags if flags is not None else table()
    given: list[Given] = []
    for arg in args:
        if arg.flag is None:
            continue
        words = () if arg.value is None else arg.value if isinstance(arg.value, tuple) else (arg.value,)
        argv = (arg.flag, *words)
        if words and isinstance(words[0], str) and arg.text.startswith(arg.flag + "="):
            argv = (f"{arg.flag}={words[0]}", *words[1:])
        before = len(given)
        _pair_one(arg, words, flags, convert, given)
        if len(given) > before:
            given[-1] = given[-1]._replace(argv=argv, assumed=getattr(arg, "assumed", ()))
    return given


def _pair_one(arg, words: tuple, flags, convert, given: list) -> None:
    """Append the Given for one flag and its words."""
    flag = flags.get(arg.flag)
    if flag is None:
        given.append(Given(arg.flag, None, arg.value, arg.line, arg.column, arg.text))
        return
    if not flag.takes_value(arg.flag):
        given.append(Given(arg.flag, flag, flag.switch_value(arg.flag), arg.line, arg.column, arg.text,
                           stray=tuple(words)))
        return
    nargs = flag.nargs
    if nargs is None:
        taken, stray = words[:1], words[1:]
        if not taken:
            given.append(Given(arg.flag, flag, None, arg.line, arg.column, arg.text, "expected one argument"))
            return
    elif nargs in ("+", "*"):
        taken, stray = words, ()
        if nargs == "+" and not taken:
            given.append(Given(arg.flag, flag, None, arg.line, arg.column, arg.text,
                               "expected at least one argument"))
            return
    elif isinstance(nargs, int):
        taken, stray = words[:nargs], words[nargs:]
        if len(taken) < nargs:
            given.append(Given(arg.flag, flag, None, arg.line, arg.column, arg.text,
                               f"expected {nargs} arguments"))
            return
    else:  # "?": at most one
        taken, stray = words[:1], words[1:]
    values, problem = [], None
    for word in taken:
        if isinstance(word, Unknown):
            values.append(word)
            continue
        value, problem = convert(flag, word)
        if problem:
            break
        values.append(value)
    if problem:
        given.append(Given(arg.flag, flag, None, arg.line, arg.column, arg.text, problem, tuple(stray)))
        return
    unknown = next((v for v in values if isinstance(v, Unknown)), None)
    value = unknown if unknown is not None else values[0] if nargs in (None, "?") else list(values)
    given.append(Given(arg.flag, flag, value, arg.line, arg.column, arg.text, stray=tuple(stray)))


def _references(arguments: Arguments, path: str) -> list[Reference]:
    refs = []
    for item in arguments.given:
        if item.spelling not in DEEPSPEED_CONFIG_FLAGS:
            continue
        where = item.location(path)
        value = item.value
        if isinstance(value, tuple):
            value = value[0] if value else None
        if isinstance(value, Unknown):
            refs.append(Reference(item.text, None, where, unknown=value.reason))
            continue
        if not isinstance(value, str):
            continue
        written = _written_by(arguments, value)
        if written is not None:
            refs.append(Reference(value, None, where, unknown=f"written by this script at line {written}"))
            continue
        resolved, why = resolve_reference(path, value)
        refs.append(Reference(value, resolved, where, unknown=why))
    return refs


def _written_by(arguments: Arguments, target: str) -> int | None:
    script = arguments.script
    if script is None:
        return None
    for heredoc in script.heredocs:
        if heredoc.target == target:
            return heredoc.line
    return None


# --- the Plan -------------------------------------------------------------------------------------


def build_plan(arguments: Arguments, path: str):
    from shardshift.formats.megatron.keys import DERIVED, FIELDS, OPTIMIZERS, SHARDING_STRATEGIES
    from shardshift.plan import Plan

    plan = Plan()
    last = arguments.last()

    def at(dest: str) -> Location:
        return last[dest].location(path)

    def value(dest: str) -> Any:
        item = last.get(dest)
        return None if item is None or item.problem else item.value

    def put(dotted: str, dest: str, val: Any = None) -> None:
        if dest not in last or last[dest].problem:
            return
        final = value(dest) if val is None else val
        if final is not None:
            plan.set(dotted, final, at(dest))

    for dest, dotted in FIELDS.items():
        put(dotted, dest)

    # precision: Megatron's params dtype is fp16 with --fp16, bf16 with --bf16, else fp32
    bf16, fp16 = value("bf16"), value("fp16")
    if bf16 is True and fp16 is not True:
        put("precision.param_dtype", "bf16", "bf16")
    elif fp16 is True and bf16 is not True:
        put("precision.param_dtype", "fp16", "fp16")
    if value("fp8") is not None:
        put("precision.fp8", "fp8", True if not isinstance(value("fp8"), Unknown) else value("fp8"))
    scale = value("initial_loss_scale")
    if isinstance(scale, float) and scale >= 1 and scale.is_integer() and (int(scale) & (int(scale) - 1)) == 0:
        put("precision.initial_scale_power", "initial_loss_scale", int(scale).bit_length() - 1)
    window = value("loss_scale_window")
    if isinstance(window, float) and window.is_integer():
        put("precision.loss_scale_window", "loss_scale_window", int(window))

    # optimizer
    name = value("optimizer")
    if "optimizer" in last and isinstance(name, str):
        put("optimizer.name", "optimizer", OPTIMIZERS.get(name, name))
        if name == "adam":
            plan.set("optimizer.decoupled_weight_decay", True, at("optimizer"))
    beta1, beta2 = value("adam_beta1"), value("adam_beta2")
    if beta1 is not None or beta2 is not None:
        betas = [0.9 if beta1 is None else beta1, 0.999 if beta2 is None else beta2]
        unknown = next((b for b in betas if isinstance(b, Unknown)), None)
        put("optimizer.betas", "adam_beta1" if beta1 is not None else "adam_beta2", unknown or betas)
        if beta1 is not None and beta2 is not None and "optimizer.betas" in plan.provenance:
            plan.parts["optimizer.betas"] = [at("adam_beta2")]

    # schedule length: --lr-decay-iters, else the training length
    for dest in ("lr_decay_iters", "train_iters"):
        if value(dest) is not None:
            put("scheduler.total_steps", dest)
            break
    _warmup_in_other_units(value, put)

    # sharding: the distributed optimizer is ZeRO-1; FSDP2 and Megatron-FSDP shard more
    if value("use_torch_fsdp2") is True:
        reshard = value("torch_fsdp2_reshard_after_forward")
        put("sharding.stage", "use_torch_fsdp2", 3 if reshard is not False else 2)
        if reshard is False:
            put("sharding.reshard_after_forward", "torch_fsdp2_reshard_after_forward", False)
    elif value("use_megatron_fsdp") is True:
        strategy = value("data_parallel_sharding_strategy")
        if strategy is None:
            strategy = "optim_grads_params"  # the default since core_v0.18 (megatron.md §1.3)
        stage = SHARDING_STRATEGIES.get(strategy) if isinstance(strategy, str) else strategy
        put("sharding.stage", "data_parallel_sharding_strategy" if "data_parallel_sharding_strategy" in last
            else "use_megatron_fsdp", stage)
    elif value("use_distributed_optimizer") is not None:
        put("sharding.stage", "use_distributed_optimizer",
            1 if value("use_distributed_optimizer") is True else value("use_distributed_optimizer"))

    # recomputation (activation checkpointing)
    for dest in ("recompute_granularity", "recompute_activations"):
        if value(dest) not in (None, False):
            put("activation_checkpointing.enabled", dest, True if not isinstance(value(dest), Unknown) else value(dest))
            break

    if value("optimizer_cpu_offload") is True:
        put("offload.optimizer.device", "optimizer_cpu_offload", "cpu")
        if value("optimizer_offload_fraction") is not None:
            put("offload.optimizer.ratio", "optimizer_offload_fraction")

    # key-value heads: --num-query-groups counts only with --group-query-attention
    if value("group_query_attention") is True and value("num_query_groups") is not None:
        put("model.kv_heads", "num_query_groups")

    # interleaved pipeline given as layers per virtual stage: VPP = layers / PP / this
    per_stage = value("num_layers_per_virtual_pipeline_stage")
    layers, stages = value("num_layers"), value("pipeline_model_parallel_size") or 1
    if isinstance(per_stage, int) and per_stage > 0 and isinstance(layers, int) and isinstance(stages, int) \
            and stages > 0 and layers % stages == 0 and (layers // stages) % per_stage == 0 \
            and "num_virtual_stages_per_pipeline_rank" not in last:
        put("parallelism.virtual_pipeline", "num_layers_per_virtual_pipeline_stage", layers // stages // per_stage)

    _world(arguments, plan, path)

    rest = {}
    for item in arguments.given:
        dest = item.flag.dest if item.flag is not None else None
        if dest in FIELDS or dest in DERIVED:
            continue
        rest[item.spelling] = _plain(item)
    if rest:
        plan.passthrough[FORMAT] = rest
    return plan


def _warmup_in_other_units(value: Callable[[str], Any], put: Callable[..., None]) -> None:
    """The warm-up in optimizer steps when the flags give it as a fraction of the decay span
    (`--lr-warmup-fraction`) or in samples (`--lr-warmup-samples`): training.py
    get_optimizer_param_scheduler warms up over fraction x decay iterations in iteration-based
    training. A count that is not a whole number of iterations, a span the flags do not give, and
    sample-based training (counted in samples) leave the warm-up unknown, with why: never the
    default of no warm-up."""
    fraction, samples = value("lr_warmup_fraction"), value("lr_warmup_samples")
    iterations = value("lr_decay_iters") if value("lr_decay_iters") is not None else value("train_iters")
    sample_based = value("train_samples") is not None
    batch = _fixed_global_batch(value) if sample_based else None
    if batch is not None:
        # sample-based with a fixed global batch: the scheduler steps by that many samples per iteration
        # (training.py train_step: increment = microbatches x micro batch x data parallel = the global batch)
        span_dest = "lr_decay_samples" if value("lr_decay_samples") is not None else "train_samples"
        span = value(span_dest)
        if value("train_iters") is None and value("lr_decay_iters") is None:
            put("scheduler.total_steps", span_dest, _in_iterations(span, batch, f"--{span_dest.replace('_', '-')}"))
        if fraction is not None:
            warmup = fraction * span if _number(fraction) and _number(span) else None
            put("scheduler.warmup_steps", "lr_warmup_fraction", _in_iterations(
                warmup, batch, f"--lr-warmup-fraction {fraction} of {span} samples") if warmup is not None else
                (fraction if isinstance(fraction, Unknown) else span if isinstance(span, Unknown) else
                 Unknown(f"--lr-warmup-fraction {fraction} of {span} samples")))
        elif _number(samples) and samples > 0 or isinstance(samples, Unknown):
            put("scheduler.warmup_steps", "lr_warmup_samples", _in_iterations(samples, batch, "--lr-warmup-samples"))
        return
    if fraction is not None:
        dest = "lr_warmup_fraction"
        if isinstance(fraction, Unknown) or isinstance(iterations, Unknown):
            put("scheduler.warmup_steps", dest, fraction if isinstance(fraction, Unknown) else iterations)
            return
        if sample_based or iterations is None:
            put("scheduler.warmup_steps", dest, Unknown(
                f"--lr-warmup-fraction {fraction:g} of " + ("the training samples (sample-based training): the "
                                                            "warm-up is counted in samples" if sample_based else
                                                            "a decay span the flags do not give (no --lr-decay-iters "
                                                            "or --train-iters)")))
            return
        steps = fraction * iterations
        rounded = round(steps, 9)
        put("scheduler.warmup_steps", dest, int(rounded) if float(rounded).is_integer() else Unknown(
            f"--lr-warmup-fraction {fraction:g} x {iterations} iterations = {steps:g} iterations, not a whole number "
            "of optimizer steps (Megatron warms up per sample)"))
    elif sample_based and isinstance(samples, (int, float)) and not isinstance(samples, bool) and samples > 0:
        put("scheduler.warmup_steps", "lr_warmup_samples", Unknown(
            f"--lr-warmup-samples {samples}: sample-based training counts the warm-up in samples, not optimizer steps"))


def _number(found: Any) -> bool:
    return isinstance(found, (int, float)) and not isinstance(found, bool)


def _fixed_global_batch(value: Callable[[str], Any]) -> int | None:
    """The global batch of every iteration, when the flags fix it: `--global-batch-size` given as a
    number, with no batch-size ramp-up or schedule (which change it as training goes)."""
    batch = value("global_batch_size")
    if not (isinstance(batch, int) and not isinstance(batch, bool) and batch > 0):
        return None
    if value("rampup_batch_size") is not None or value("step_batch_size_schedule") is not None:
        return None
    return batch


def _in_iterations(samples: Any, batch: int, what: str) -> Any:
    """A count of samples in optimizer steps of `batch` samples each: a whole number, else Unknown."""
    if isinstance(samples, Unknown):
        return samples
    if not _number(samples):
        return Unknown(f"{what} {samples!r} is no number of samples")
    steps = round(samples / batch, 9)
    if float(steps).is_integer():
        return int(steps)
    return Unknown(f"{what} {samples:g} samples / {batch} per iteration (--global-batch-size) = {samples / batch:g} "
                   "iterations, not a whole number of optimizer steps (Megatron counts the schedule in samples)")


def _plain(item: Given) -> Any:
    """A passthrough value: JSON-able (a switch is True, an Unknown its reason)."""
    value = item.value
    if item.problem:  # what argparse rejects stays as written, so that writing it back keeps the problem
        words = item.text.split(None, 1)
        if "=" in words[0]:
            return words[0].split("=", 1)[1]
        return words[1] if len(words) > 1 else True
    if item.stray and all(isinstance(w, str) for w in item.argv[1:]) and "=" not in item.argv[0]:
        return list(item.argv[1:])  # with the words argparse will not take, as written
    if isinstance(value, Unknown):
        return {"unknown": value.reason}
    if isinstance(value, tuple):
        return [v if not isinstance(v, Unknown) else {"unknown": v.reason} for v in value]
    if value is None and item.flag is None:
        return True
    return value


# --- the world size from the launcher ------------------------------------------------------------


def _world(arguments: Arguments, plan, path: str) -> None:
    """The launcher's world (formats/launch/world.py, shared by every launcher)."""
    from shardshift.formats.launch.world import set_world

    set_world(plan, arguments.launch, path)
