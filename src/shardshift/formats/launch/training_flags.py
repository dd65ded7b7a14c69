"""Hugging Face `TrainingArguments` given as command-line flags of a launch
(`torchrun train.py --per_device_train_batch_size 4 --bf16 true --deepspeed ds.json`), read the way
`HfArgumentParser` reads them, so that they meet the same rules as `TrainingArguments(...)` in Python.

The options, their types and defaults are transformers' own (training_fields.py, generated from the
installed `HfArgumentParser(TrainingArguments)` by scripts/gen_training_arguments_flags.py):

- `--field value` and `--field=value`, also spelled with hyphens (`--per-device-train-batch-size`);
  the last one given wins (argparse);
- a bool field takes `string_to_bool` (yes/no, true/false, t/f, y/n, 1/0, any case): `--bf16` alone
  is True; `--no_<field>` sets a default-True bool to False;
- int and float fields are converted; a choice field (`--optim`, `--lr_scheduler_type`) keeps the
  word; a list field (nargs "+") takes all the words; a scalar field takes the first word;
- a value argparse would refuse (`--per_device_train_batch_size four`, `--bf16 maybe`, an `--optim`
  that is no choice) is kept as the word written, and a value the script decides at run time is
  UNKNOWN; an unknown splice among the flags (`$EXTRA_ARGS`) may set any field (`star_kwargs`).
Abbreviated options (argparse's prefix matching) are not resolved: which prefix is unique depends
on the other dataclasses the program's parser holds.

The flags are TrainingArguments flags only when the entry script says so: it builds an
`HfArgumentParser` whose dataclasses include `TrainingArguments`, a class built on it or a TRL
`*Config`, or `--deepspeed` is among the flags and the script uses the Hugging Face Trainer (read
with `ast`, never run; the entry script and the local modules it imports from its own folder). A
`TrainingArguments` subclass defined there gives its own field defaults. When the entry script is not
in the checked tree, flags that only TrainingArguments has (`--per_device_train_batch_size`,
`--output_dir`, ...) still make a call, with `program` saying what is unknown: the rules' findings on
it are infos.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from typing import Any

from shardshift.formats.python_script.arguments_plan import fill_call, plan_fields  # noqa: F401 - the launch's Plan
from shardshift.formats.python_script.reader import UNKNOWN, ArgumentsCall
from shardshift.user_code import walk as walk_nodes

# Entry points that are not Hugging Face programs even when they share a flag name.
_OTHER_ENTRIES = ("pretrain_", "torchtitan", "axolotl", "llamafactory", "tune")
# TrainingArguments fields whose flags name the HF Trainer when the entry script cannot be read
HF_SPECIFIC = frozenset({
    "per_device_train_batch_size", "per_device_eval_batch_size", "lr_scheduler_type", "warmup_ratio",
    "save_strategy", "eval_strategy", "logging_strategy", "save_total_limit", "report_to", "load_best_model_at_end",
    "optim", "fp16_full_eval", "bf16_full_eval", "remove_unused_columns", "logging_first_step", "ddp_timeout",
    "dataloader_num_workers", "metric_for_best_model", "push_to_hub", "hub_model_id", "torch_compile",
    "gradient_checkpointing_kwargs", "group_by_length", "label_names", "save_only_model", "auto_find_batch_size",
})
_TRUE = ("yes", "true", "t", "y", "1")
_FALSE = ("no", "false", "f", "n", "0")
# TRL's argument classes built on TrainingArguments (trl/trainer/*_config.py)
_TRL_CONFIGS = ("SFTConfig", "DPOConfig", "GRPOConfig", "KTOConfig", "ORPOConfig", "CPOConfig", "PPOConfig",
                "RewardConfig", "RLOOConfig", "OnlineDPOConfig", "BCOConfig", "GKDConfig", "NashMDConfig",
                "XPOConfig", "PRMConfig", "AlignPropConfig", "DDPOConfig", "IterativeSFTConfig")


@dataclass(slots=True)
class TrainingFlags(ArgumentsCall):
    """An ArgumentsCall read from command-line flags: `written` is each field as the script gives
    it (`--bf16 true`, or `bf16=True (the default of MyArguments in train.py)`), `script` the launch
    script, `entry` the entry script's path when found, and `program` what could not be found (the
    entry script), which makes findings on these flags infos."""

    written: dict[str, str] = field(default_factory=dict)
    script: str = ""
    entry: str | None = None
    program: Any = None  # UnknownContext | None
    # the class HfArgumentParser fills, when the entry script names it: a TRL config or a subclass has
    # defaults of its own (a subclass's literal ones are in `keywords` already)
    arguments_class: str | None = None
    # that class (a subclass in the repository) runs a __post_init__ of its own, which may change the
    # values before TrainingArguments checks them
    own_post_init: bool = False
    # the entry script (or a module of it) builds or imports a Trainer: the evidence that the checks
    # Trainer makes at start-up are run
    trainer: bool = False
    # the parser's dataclasses, when all are known (None otherwise): transformers' own class that takes the
    # TrainingArguments fields ("TrainingArguments" / "Seq2SeqTrainingArguments", judged per release) and the
    # fields of the repository's dataclasses; with `flags`, every flag of the launch and where it is written.
    # HfArgumentParser refuses a flag none of them defines (parse_args_into_dataclasses, without
    # return_remaining_strings), which TA010 reports.
    parser_fields: tuple[str, frozenset] | None = None
    flags: tuple = ()
    # the launch runs the entry as one plain process: `python train.py` with no launcher or wrapper (srun,
    # mpirun) around it, no process-group variable (LOCAL_RANK, WORLD_SIZE, ...) set in the script, and an
    # entry script that neither sets those itself nor spawns processes; then the Trainer is not distributed
    one_process: bool = False

    def own_defaults(self) -> bool:
        # a repository subclass's literal defaults are in `keywords` already; a TRL config has its own
        return self.arguments_class is None or not self.arguments_class.endswith("Config")


def _tables() -> tuple[dict, dict, dict]:
    from shardshift.formats.launch.training_fields import CHOICES, FIELDS, OPTIONS

    return FIELDS, CHOICES, OPTIONS


def _words(value: Any) -> tuple | None:
    """The words of a flag's value: () for a bare switch, None when any is decided at run time."""
    if value is None:
        return ()
    words = value if isinstance(value, tuple) else (value,)
    return words if all(isinstance(w, str) for w in words) else None


def _bool(word: str) -> bool | None:
    lowered = word.lower()
    return True if lowered in _TRUE else False if lowered in _FALSE else None


def convert(kind: str, words: tuple | None, choices: tuple | None = None) -> Any:
    """What HfArgumentParser stores for a field of `kind` given `words` (None: unknown words); the
    first word as written when argparse would refuse it; UNKNOWN when the run decides."""
    if words is None:
        return UNKNOWN
    if kind == "bool":
        if not words:
            return True
        value = _bool(words[0])
        return words[0] if value is None else value
    if not words:
        return UNKNOWN  # argparse refuses a missing value: the command line does not say one
    first = words[0]
    if kind == "bool-value":
        value = _bool(first)
        return first if value is None else value
    if kind == "int":
        try:
            return int(first)
        except ValueError:
            return first
    if kind == "float":
        try:
            return float(first)
        except ValueError:
            return first
    if kind == "list":
        return list(words)
    return first  # str, choice (kept as written also when no choice: argparse refuses it), other


# flags of fields that older releases spell otherwise -> (the old field, the field it became): the newest
# release's table lacks them, and reading them as absent would put the new field's default in their place
# (training_args.py: evaluation_strategy until 4.46, eval_strategy from 4.41)
LEGACY_OPTIONS = {"--evaluation_strategy": ("evaluation_strategy", "eval_strategy"),
                  "--evaluation-strategy": ("evaluation_strategy", "eval_strategy")}


def parse(args: list) -> tuple[dict, dict, dict, bool]:
    """(values by field, positions by field, text by field, whether an unknown splice may set
    more) for shell_launch.Arg items, as HfArgumentParser(TrainingArguments) reads them."""
    fields, choices, options = _tables()
    values: dict[str, Any] = {}
    positions: dict[str, tuple[int, int]] = {}
    written: dict[str, str] = {}
    more = False
    for arg in args:
        if arg.flag is None:
            if not isinstance(arg.value, str):
                more = True  # `$EXTRA_ARGS`, `--${NAME}`: may be any flag
            continue
        name = options.get(arg.flag)
        legacy = LEGACY_OPTIONS.get(arg.flag)
        if name is None and legacy is not None:  # an older release's spelling: kept under its own name
            old_name, name = legacy
            values[old_name] = convert(fields[name][0], _words(arg.value), choices.get(name))
            positions[old_name] = (arg.line, arg.column)
            written[old_name] = arg.text
            continue
        if name is None:
            continue
        if name.startswith("!"):
            name = name[1:]
            value = False if arg.value is None or not arg.text.startswith(arg.flag + "=") else arg.value
        else:
            kind = fields[name][0]
            value = convert(kind, _words(arg.value), choices.get(name))
        values[name] = value
        positions[name] = (arg.line, arg.column)
        written[name] = arg.text
    return values, positions, written, more


# --- the entry script -----------------------------------------------------------------------------


def _entry_written(launch: Any) -> str:
    """The entry script as the launch names it; a module run with `-m` / `--module` as its file."""
    script = launch.script if isinstance(launch.script, str) else getattr(launch, "script_name", None)
    if not isinstance(script, str):
        return ""
    options = launch.options if isinstance(launch.options, dict) else {}
    if (options.get("m") or options.get("module")) and not script.endswith(".py") and \
            all(part.isidentifier() for part in script.split(".")):
        return script.replace(".", "/") + ".py"
    return script


def _local_modules(tree: ast.Module, folder: str) -> list[str]:
    """Files of the modules `tree` imports from its own folder (`from utils import x`, `import args`)."""
    found: list[str] = []
    for node in walk_nodes(tree):
        names = [node.module] if isinstance(node, ast.ImportFrom) and node.module and node.level in (0, 1) else \
            [a.name for a in node.names] if isinstance(node, ast.Import) else []
        for name in names:
            base = os.path.join(folder, *name.split("."))
            for candidate in (base + ".py", os.path.join(base, "__init__.py")):
                if os.path.isfile(candidate) and candidate not in found:
                    found.append(candidate)
    return found[:20]


# the variables by which a process learns it is one rank of several (torchrun's, Open MPI's, MPICH's, MVAPICH's,
# Intel MPI's), and the calls that start processes from inside a script
DISTRIBUTED_VARIABLES = ("LOCAL_RANK", "RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_SIZE",
                         "OMPI_COMM_WORLD_LOCAL_RANK", "PMI_SIZE", "PMI_RANK", "MV2_COMM_WORLD_SIZE", "MPI_LOCALRANKID")
PROCESS_STARTERS = ("spawn", "start_processes", "notebook_launcher", "debug_launcher", "init_process_group",
                    "elastic_launch", "Process")


class _Entry:
    """What the entry script (and the local modules it imports) says about TrainingArguments."""

    def __init__(self) -> None:
        self.parser_classes: list[str] = []  # dataclasses given to HfArgumentParser
        self.parser = False
        self.trainer = False
        self.subclasses: dict[str, tuple[str, dict[str, Any]]] = {}  # name -> (file, field defaults)
        # names imported from transformers or trl, and the aliases those packages are imported as: a class
        # of the same name from elsewhere (PaddleNLP's TrainingArguments, the script's own) is not theirs
        self.library_names: set[str] = set()
        self.library_modules: set[str] = set()
        self.post_init: set[str] = set()  # subclasses with a __post_init__ of their own (or a base's)
        # it names a process-group variable or calls something that starts processes (mp.spawn, notebook_launcher)
        self.own_processes = False
        # every dataclass of the entry and its local modules: name -> (own field names, bases as written)
        self.dataclasses: dict[str, tuple[list[str], list[str]]] = {}
        # how the flags are parsed: parse_args_into_dataclasses seen; a way that keeps flags it does not know
        # (return_remaining_strings, parse_known_args, allow_extra_keys) seen
        self.strict_parse = False
        self.lenient_parse = False

    def _library(self, dotted: str) -> bool:
        """Whether `dotted` (a base or a parser's class, as written) is transformers' or trl's argument class."""
        head, _, last = dotted.rpartition(".")
        if not (last.endswith("TrainingArguments") or last in _TRL_CONFIGS):
            return False
        return dotted in self.library_names if not head else head.split(".")[0] in self.library_modules

    def read(self, path: str) -> None:
        from shardshift.formats.megatron.program import module

        tree = module(path)
        if tree is None:
            return
        nodes = list(walk_nodes(tree))
        for node in nodes:
            if (isinstance(node, ast.Constant) and node.value in DISTRIBUTED_VARIABLES) or \
                    (isinstance(node, ast.Call) and _dotted(node.func).rsplit(".", 1)[-1] in PROCESS_STARTERS):
                self.own_processes = True
            if isinstance(node, ast.ImportFrom) and node.module and not node.level and \
                    node.module.split(".")[0] in ("transformers", "trl"):
                self.library_names.update(a.asname or a.name for a in node.names)
            elif isinstance(node, ast.Import):
                self.library_modules.update(a.asname or a.name.split(".")[0] for a in node.names
                                            if a.name.split(".")[0] in ("transformers", "trl"))
        for node in nodes:
            if isinstance(node, ast.ClassDef) and any(_dotted(d.func if isinstance(d, ast.Call) else d)
                                                      .rsplit(".", 1)[-1] == "dataclass" for d in node.decorator_list):
                self.dataclasses[node.name] = ([s.target.id for s in node.body if isinstance(s, ast.AnnAssign)
                                                and isinstance(s.target, ast.Name)], [_dotted(b) for b in node.bases])
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if node.func.attr == "parse_args_into_dataclasses":
                    self.strict_parse = True
                if node.func.attr in ("parse_known_args", "parse_dict") or \
                        any(k.arg in ("return_remaining_strings", "allow_extra_keys") for k in node.keywords):
                    self.lenient_parse = True
            if isinstance(node, ast.ClassDef):
                bases = [_dotted(b) for b in node.bases]
                if any(self._library(b) or b in self.subclasses for b in bases):
                    self.subclasses[node.name] = (path, _defaults(node))
                    if any(isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == "__post_init__"
                           for s in node.body) or any(b in self.post_init for b in bases):
                        self.post_init.add(node.name)
            elif isinstance(node, ast.Call):
                callee = _dotted(node.func).rsplit(".", 1)[-1]
                if callee == "HfArgumentParser":
                    self.parser = True
                    for argument in [*node.args, *(k.value for k in node.keywords)]:
                        items = argument.elts if isinstance(argument, (ast.Tuple, ast.List)) else [argument]
                        self.parser_classes += [_dotted(i) for i in items]
                elif callee.endswith("Trainer") and callee[:1].isupper():
                    self.trainer = True
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in ("transformers",
                                                                                                   "trl"):
                if any(a.name.endswith("Trainer") for a in node.names):
                    self.trainer = True

    def parser_fields(self) -> tuple[str, frozenset] | None:
        """(transformers' class among the parser's dataclasses, the fields of the others), when every class
        given to HfArgumentParser is known and the flags are parsed with parse_args_into_dataclasses alone."""
        if not self.strict_parse or self.lenient_parse or not self.parser_classes:
            return None
        library: set[str] = set()
        others: set[str] = set()

        def resolve(name: str, depth: int = 0) -> bool:
            last = name.rpartition(".")[2]
            # a dataclass the repository defines under a bare name shadows a library class imported as that name
            # (`class TrainingArguments(transformers.TrainingArguments)` after `from transformers import ...`)
            if self._library(name) and not (name in self.dataclasses and self.dataclasses[name][1] != [name]):
                if last not in ("TrainingArguments", "Seq2SeqTrainingArguments"):
                    return False  # a TRL config: its fields are not read here
                library.add(last)
                return True
            if name not in self.dataclasses or depth > 8:
                return False
            own, bases = self.dataclasses[name]
            others.update(own)
            return all(resolve(base, depth + 1) for base in bases if base not in ("object",))

        if not all(resolve(name) for name in self.parser_classes) or len(library) != 1:
            return None
        return library.pop(), frozenset(others)

    def arguments_class(self) -> str | None:
        """The TrainingArguments-like class HfArgumentParser fills, when it has one."""
        for name in self.parser_classes:
            if name in self.subclasses or self._library(name):
                return name.rpartition(".")[2]
        return None


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    if isinstance(node, ast.Subscript):
        return _dotted(node.value)
    return ""


def _defaults(node: ast.ClassDef) -> dict[str, Any]:
    """A dataclass's own field defaults: literals, UNKNOWN where the source computes them."""
    out: dict[str, Any] = {}
    for statement in node.body:
        if not (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)):
            continue
        value = statement.value
        if isinstance(value, ast.Call) and _dotted(value.func).rsplit(".", 1)[-1] == "field":
            value = next((k.value for k in value.keywords if k.arg == "default"), None)
            if value is None:  # default_factory or no default
                continue
        if value is None:
            continue
        try:
            out[statement.target.id] = ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError, RecursionError):
            out[statement.target.id] = UNKNOWN
    return out


def _distinctive(flags: set[str]) -> bool:
    """Whether the flags include one that hardly any parser but TrainingArguments' spells so
    (`--per_device_train_batch_size`, `--lr_scheduler_type`, ...): not deepspeed's own
    `--deepspeed`, nor `--seed`, `--output_dir` or `--learning_rate`, which many scripts' argparse
    defines, nor a flag Megatron's parser has."""
    from shardshift.formats.megatron.flags import table

    _, _, options = _tables()
    megatron = table()
    return any(options.get(f, "").lstrip("!") in HF_SPECIFIC and megatron.get(f) is None for f in flags)


def arguments_call(launch: Any, path: str) -> Any:
    """The `ArgumentsCall` (formats/python_script; a TrainingFlags) that the flags of `launch` (a
    shell_launch.Launch in the script at `path`) amount to, or None when they are not
    TrainingArguments flags."""
    try:
        return _arguments_call(launch, path)
    except (OSError, ValueError, RecursionError):
        return None


def _arguments_call(launch: Any, path: str) -> TrainingFlags | None:
    from shardshift.context import UnknownContext

    written_entry = _entry_written(launch)
    name = os.path.basename(written_entry)
    if any(name.startswith(p) or written_entry.startswith(p) for p in _OTHER_ENTRIES):
        return None
    values, positions, written, more = parse(launch.args)
    if not values:
        return None
    flags = {a.flag for a in launch.args if a.flag is not None}
    entry_path = None
    if name.endswith(".py") and os.path.isfile(path):
        from shardshift.formats.megatron.program import locate

        entry_path = locate(path, written_entry) if isinstance(launch.script, str) else None
        if entry_path is None and written_entry.endswith(".py") and written_entry != launch.script:
            entry_path = locate(path, written_entry[:-3] + "/__main__.py")  # `-m package`
        if entry_path is None and not isinstance(launch.script, str):
            entry_path = locate(path, name)
    program = None
    chosen = None
    defaults: dict[str, Any] = {}
    defaults_from = ""
    if entry_path is not None:
        entry = _Entry()
        entry.read(entry_path)
        if not (entry.parser or entry.trainer) or (entry.parser and entry.arguments_class() is None):
            for module_path in _local_modules_of(entry_path):  # the parser, or its class, may be there
                entry.read(module_path)
        chosen = entry.arguments_class()
        if chosen is None and not ("--deepspeed" in flags and entry.trainer):
            return None
        if chosen is None:
            # flags taken for TrainingArguments because they pass --deepspeed to a Trainer script, with no
            # HfArgumentParser of TrainingArguments in it: the script may parse them itself and build
            # TrainingArguments from other values (bf16=True in code), so what they set there is unknown
            shown = os.path.basename(entry_path)
            program = UnknownContext("program", f"{shown} builds no HfArgumentParser of TrainingArguments that "
                                                "shardshift found, so whether these flags reach TrainingArguments as "
                                                "written is unknown",
                                     f"check {shown}'s argument parsing (or ignore these codes for this launch)")
        if chosen in entry.subclasses:
            source, own = entry.subclasses[chosen]
            fields, _, _ = _tables()
            defaults = {k: v for k, v in own.items() if k in fields}
            defaults_from = f"{chosen} in {os.path.basename(source)}"
    else:
        if not _distinctive(flags):
            return None
        shown = name or "the entry script"
        what = (f"{shown} is not in the checked tree, so whether it reads these flags as TrainingArguments is unknown"
                if name else "the entry script of this launch is decided at run time, so whether it reads these "
                "flags as TrainingArguments is unknown")
        program = UnknownContext("program", what, f"check the repository that holds {shown} together with this "
                                                  "script")
    keywords = dict(defaults)
    texts = {k: f"{k}={v!r} (the default of {defaults_from})" for k, v in defaults.items() if v is not UNKNOWN}
    keywords.update(values)
    texts.update(written)
    callee = f"{name or 'the entry script'}'s TrainingArguments flags"
    return TrainingFlags(callee, launch.line, launch.column, keywords, positions, more, False, written=texts,
                         script=path, entry=entry_path, program=program, arguments_class=chosen,
                         own_post_init=entry_path is not None and chosen in entry.post_init,
                         trainer=entry_path is not None and entry.trainer,
                         one_process=entry_path is not None and not entry.own_processes and _plain_process(launch),
                         parser_fields=entry.parser_fields() if entry_path is not None else None,
                         flags=tuple((a.flag, a.line, a.column) for a in launch.args if a.flag is not None))


def _plain_process(launch: Any) -> bool:
    """Whether the launch line starts the entry script as one process (`python train.py`, nothing around it)."""
    variables = launch.variables if isinstance(launch.variables, dict) else {}
    return launch.launcher == "python" and not launch.via and not launch.conditions and \
        not any(name in variables for name in DISTRIBUTED_VARIABLES)


def _local_modules_of(path: str) -> list[str]:
    from shardshift.formats.megatron.program import module

    tree = module(path)
    return _local_modules(tree, os.path.dirname(path)) if tree is not None else []


# --- Plan fields ------------------------------------------------------------------------------------

_MISMATCH = ('transformers fills an "auto" in the ds_config from the TrainingArguments flags, and raises when '
             'training starts ("Please correct the following DeepSpeed config values that mismatch '
             'TrainingArguments values") when the ds_config holds a different value')


def _precedence() -> dict:
    """What the Hugging Face Trainer does when the flags and the ds_config named by `--deepspeed`
    both set a Plan field (transformers 5.x, integrations/deepspeed.py): `trainer_config_process` /
    `trainer_config_finalize` fill "auto" and collect mismatches (`fill_match`), and
    `deepspeed_optim_sched` lets the ds_config's optimizer / scheduler block win (DummyOptim,
    DummyScheduler). No TrainingArguments default is compared when the flags are silent: the entry
    script may change it (a subclass's default, code after parsing). fp16/bf16 are judged by
    DS436 (which also knows `*_full_eval` and Accelerate's earlier error), so they are left out
    here (`unless` every dtype) rather than reported twice."""
    from shardshift.setup import Precedence

    table = {field: Precedence("mismatch", _MISMATCH) for field in (
        "batch.micro",              # train_micro_batch_size_per_gpu <- per_device_train_batch_size
        "batch.accumulation",       # gradient_accumulation_steps
        "gradient_clipping",        # gradient_clipping <- max_grad_norm
        "optimizer.lr",             # optimizer.params.lr <- learning_rate
        "optimizer.betas",          # optimizer.params.betas <- [adam_beta1, adam_beta2]
        "optimizer.eps",            # optimizer.params.eps <- adam_epsilon
        "optimizer.weight_decay",   # optimizer.params.weight_decay <- weight_decay
        "scheduler.warmup_steps",   # scheduler.params.warmup_num_steps <- warmup_steps (finalize)
    )}
    table["precision.param_dtype"] = Precedence("mismatch", _MISMATCH, unless=frozenset({"bf16", "fp16", "fp32"}))
    table["optimizer.name"] = Precedence(
        "referenced", "with an \"optimizer\" block the Trainer hands DeepSpeed a DummyOptim and DeepSpeed builds "
        "the block's optimizer, so --optim is not used")
    table["scheduler.name"] = Precedence(
        "referenced", "with a \"scheduler\" block the Trainer hands DeepSpeed a DummyScheduler and DeepSpeed builds "
        "the block's scheduler, so --lr_scheduler_type is not used")
    return table


def __getattr__(name: str) -> Any:
    if name == "PRECEDENCE":  # built on first use: setup.py is imported only when setups are merged
        table = _precedence()
        globals()["PRECEDENCE"] = table
        return table
    raise AttributeError(name)


def fill_plan(plan: Any, data: Any, path: str) -> None:
    """Sets on a launch document's Plan the fields of the TrainingArguments flags of its chosen
    launch (`data.launch`; the only call when the launch is not known), each with its flag as the
    provenance (`Location(path, line, column, "--per_device_train_batch_size")`)."""
    calls = [c for c in getattr(data, "training_arguments", None) or [] if isinstance(c, ArgumentsCall)]
    launch = getattr(data, "launch", None)
    chosen = [c for c in calls if launch is not None and (c.line, c.column) == (launch.line, launch.column)]
    if not chosen and len(calls) == 1:
        chosen = calls
    for call in chosen[:1]:
        fill_call(plan, call, path)


