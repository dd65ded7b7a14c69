"""Launch scripts of every framework: reader.

A shell script (`.sh`, `.bash`, `.slurm`, `.sbatch`, `.job`, or a shell shebang) with a launcher
line is read with the launch-script grammar (formats/megatron/shell.py, nothing is run). Megatron
launch scripts stay the megatron format (that reader comes first); this one takes the others.

For the launch that starts the training (the one that links a configuration, else the first
whose entry is known), it decides:

- the **entry**: torchtitan (`-m torchtitan.train`, `--job.config_file`), axolotl (`axolotl train
  X.yaml`, `-m axolotl.cli.train X.yaml`), torchtune (`tune run`), LLaMA-Factory
  (`llamafactory-cli train`), Megatron (`pretrain_*.py`), a Hugging Face script (`--deepspeed
  ds.json` or TrainingArguments flags, formats/launch/training_flags.py), a script started by
  `accelerate launch`, or another script;
- the **world** (formats/launch/world.py): nodes, processes per node and world size at the
  launcher's name;
- the **linked files**, as `Document.references` with a role: `--config_file` of accelerate launch
  ("accelerate_config"), `--deepspeed` / `--deepspeed_config` / accelerate's
  `--deepspeed_config_file` ("deepspeed_config"), `--job.config_file` ("torchtitan_config"), the
  YAML of axolotl ("axolotl_config");
- the **overrides**: values the command line sets over the linked file, with the script as their
  place: torchtitan's `--section.key value` (torchtitan's ConfigManager loads the TOML, then
  `tyro.cli` applies the command line over it), accelerate launch's own options (a flag given
  wins over the config file: `_validate_launch_command` copies a config value only where the
  flag is None / not given), axolotl's `--key value` (axolotl/cli/config.py `load_cfg` writes
  each CLI kwarg over the YAML's value). `precedence(reference)` says so to setup.py: the
  referring script's value wins ("override"), without a finding.

A script that links no configuration shardshift reads and sets no training value is not a
configuration (`is_config`): named on the command line it is SS005 with what it is; found in a
folder walk it is skipped.
"""

from __future__ import annotations

import re
from typing import Any

from shardshift.document import Document, Reference, SyntaxProblem, resolve_reference
from shardshift.formats.launch import markdown
from shardshift.plan import Unknown
from shardshift.source import Location

FORMAT = "launch"

_SUFFIXES = (".sh", ".bash", ".slurm", ".sbatch", ".job")
_SHEBANG = re.compile(r"#![^\n]*\b(?:ba|da|z|k)?sh\b")
# a launcher at the start of a command (after a separator, a quote, `/` or `=`)
_LAUNCHER = re.compile(r"(?:^|[\s;&|(`'\"/=])(?:torchrun|deepspeed|accelerate\s+launch|srun|mpirun|mpiexec|sbatch"
                       r"|axolotl\s+(?:train|fit)|tune\s+run|llamafactory-cli\s+(?:train|sft)"
                       r"|python[0-9.]*\s(?:[^\n]*?\s)?(?:-m\s+[\w.]+|\S+\.py))(?=[\s;&|)'\"`]|$)", re.MULTILINE)

# the roles of the linked files shardshift reads (a reference of another role links nothing)
READ_ROLES = ("deepspeed_config", "accelerate_config", "torchtitan_config", "axolotl_config")
_TITAN_CONFIG = ("--job.config_file", "--job.config-file")
_DEEPSPEED_FLAGS = ("--deepspeed", "--deepspeed_config", "--deepspeed-config", "--deepscale_config")
_MODULE_FRAMEWORKS = (("torchtitan.", "torchtitan"), ("axolotl.", "axolotl"), ("llamafactory.", "llamafactory"),
                      ("torchtune.", "torchtune"))
# what each framework is called in messages
FRAMEWORK_NAMES = {"torchtitan": "torchtitan", "axolotl": "Axolotl", "torchtune": "torchtune",
                   "llamafactory": "LLaMA-Factory", "megatron": "Megatron-LM", "hf": "a Hugging Face training script",
                   "accelerate": "a script started by accelerate launch", "deepspeed": "a DeepSpeed script",
                   "script": "a training script", "job": "a Slurm job script"}


class LaunchData:
    """What a launch document holds: the script as read (shell_launch.LaunchScript), the launch
    that starts the training (None when the script has none), every launch, the framework of the
    entry (a key of FRAMEWORK_NAMES), the entry as written, and the TrainingArguments calls the
    launches' flags amount to (formats/launch/training_flags.py: DS435-DS439 read them)."""

    __slots__ = ("script", "launch", "launches", "framework", "entry", "training_arguments")

    def __init__(self, script: Any, launch: Any, framework: str | None, entry: str | None) -> None:
        self.script, self.launch = script, launch
        self.launches: list = list(script.launches) if script is not None else []
        self.framework, self.entry = framework, entry
        self.training_arguments: list = []

    def unknown_meaning(self, line: int, column: int) -> str | None:
        """Why what the flag at (line, column) sets is not known (its entry script is not in the
        checked tree, so whether it reads the flag as a TrainingArguments field is unknown), or None."""
        for call in self.training_arguments:
            program = getattr(call, "program", None)
            if program is not None and (line, column) in set(getattr(call, "positions", {}).values()):
                return program.what
        return None


def looks_like(path: str, text: str) -> bool:
    """A shell script (by its suffix, a shell shebang, or no suffix at all) with a launcher line, or
    a README whose code blocks may hold one (formats/launch/markdown.py)."""
    lower = path.lower()
    name = lower.rsplit("/", 1)[-1]
    if lower.endswith(markdown.SUFFIXES):
        return markdown.is_readme(path) and markdown.may_quote_commands(text) and _LAUNCHER.search(text) is not None
    if not (lower.endswith(_SUFFIXES) or _SHEBANG.match(text) is not None or "." not in name):
        return False
    return _LAUNCHER.search(text) is not None


def is_config(document: Document) -> bool:
    """A launch that links a configuration shardshift reads, or that sets training values (its
    TrainingArguments flags, its command-line overrides)."""
    data = document.data
    if not isinstance(data, LaunchData) or data.launch is None:
        return False
    if document.path.lower().endswith(markdown.SUFFIXES):
        # a README quotes commands of other setups too (a tool's usage, a config to write first):
        # it launches this repository's training only when it names a file that is here
        return any(r.role in READ_ROLES and r.resolved for r in document.references) or (
            bool(data.training_arguments) and isinstance(data.launch.script, str) and
            resolve_reference(document.path, data.launch.script)[0] is not None)
    if any(r.role in READ_ROLES for r in document.references):
        return True
    return bool(data.training_arguments)


def not_config_reason(document: Document) -> str | None:
    """Why a launch script named on the command line is not checked: what it launches."""
    data = document.data
    if not isinstance(data, LaunchData):
        return None
    if document.path.lower().endswith(markdown.SUFFIXES):
        if data.launch is not None:
            return (f"it is a README whose command `{data.launch.launcher} {data.entry}` names no configuration or "
                    "entry script that is in the repository (an example of another setup)")
        return ("it is a README, and none of its shell code blocks that read as a script starts a training "
                "(a block with placeholders such as <path> is not read)")
    if data.launch is None:
        return "it is a shell script, but no launcher line starting a training was found in it"
    shown = f"`{data.launch.launcher} {data.entry}`" if data.entry else f"`{data.launch.launcher}`"
    if data.framework == "torchtune":
        return f"it is a launch script of torchtune ({shown}), whose recipe configs shardshift does not read"
    if data.framework == "llamafactory":
        return f"it is a launch script of LLaMA-Factory ({shown}), whose YAML shardshift does not read"
    if data.framework == "job":
        return (f"it submits the job script {data.entry} to Slurm (`sbatch`), and names no configuration itself; "
                "name the job script to check what it launches")
    return (f"it is a launch script ({shown}, {FRAMEWORK_NAMES.get(data.framework or 'script', 'a script')}) that "
            "names no configuration file shardshift reads and sets no training value it judges")


def read(text: str, path: str = "<string>") -> Document:
    """Read a launch script: its launches, the linked files and the Plan. Never raises for bad input."""
    from shardshift.formats.megatron import shell

    document = Document(path=path, format=FORMAT, text=text)
    quoted = path.lower().endswith(markdown.SUFFIXES)
    script = shell.read_launch_script(_readme_script(text, path) if quoted else text, path)
    candidates = [(launch, *classify(launch)) for launch in script.launches]
    chosen = _choose(candidates, path)
    if chosen is None:
        if script.problems and not script.launches and not quoted:  # a README is no script of its own
            message, line, column = script.problems[0]
            document.syntax = SyntaxProblem(message, line, column)
        document.data = LaunchData(script, None, None, None)
        return document
    launch, framework, entry = chosen
    data = LaunchData(script, launch, framework, entry)
    document.data = data
    document.references = references(launch, framework, path, script)
    data.training_arguments = _training_arguments(script.launches, path)
    _assumptions(document, launch)
    document.defer_plan(lambda: build_plan(data, document.references, path))
    return document


def _readme_script(text: str, path: str) -> str:
    """The README's shell blocks that read as a script on their own, as one script at the README's
    own lines and columns (a block of prose or placeholders is left out)."""
    from shardshift.formats.megatron import shell

    blocks = markdown.shell_blocks(text)
    kept = [block for block in blocks
            if not shell.read_launch_script(markdown.script_text(text, [block]), path).problems]
    return markdown.script_text(text, kept)


def _assumptions(document: Document, launch: Any) -> None:
    """The script defaults (`NGPU=${NGPU:-8}`) the launcher's options and the arguments stand on,
    at the launcher and at each argument, for the findings' notes (Document.assume, where the
    shell reader records them)."""
    assume = getattr(document, "assume", None)
    if assume is None:
        return
    for assumed in (getattr(launch, "assumed", None) or {}).values():
        if assumed:
            assume(assumed, launch.line, launch.column)
    for arg in launch.args:
        if getattr(arg, "assumed", ()):
            assume(arg.assumed, arg.line, arg.column)


def _training_arguments(launches: list, path: str) -> list:
    from shardshift.formats.launch import training_flags

    found = []
    for launch in launches:
        try:
            call = training_flags.arguments_call(launch, path)
        except Exception:  # noqa: BLE001  # a bad flag must not stop the read
            call = None
        if call is not None:
            found.append(call)
    return found


def _choose(candidates: list, path: str) -> tuple | None:
    """The launch that starts the training: the first that links a file shardshift reads, else
    the first with a known framework, else the first."""
    if not candidates:
        return None
    for launch, framework, entry in candidates:
        if any(r.role in READ_ROLES for r in references(launch, framework, path, None)):
            return launch, framework, entry
    for launch, framework, entry in candidates:
        if framework not in ("script", "job"):
            return launch, framework, entry
    return candidates[0]


def _module(launch: Any) -> str | None:
    """The module a launch runs (`-m pkg.mod`), or None for a script."""
    if launch.launcher == "python" and isinstance(launch.options.get("m"), str):
        return launch.options["m"]
    if (launch.options.get("m") is True or launch.options.get("module") is True) and isinstance(launch.script, str):
        return launch.script
    return None


def entry_text(launch: Any) -> str:
    """The entry as written: the script's path, the module, the recipe or the YAML."""
    if isinstance(launch.script, str):
        return launch.script
    name = getattr(launch, "script_name", None)
    return name if isinstance(name, str) else "an entry not known before the script runs"


def classify(launch: Any) -> tuple[str, str]:
    """(framework, entry as written) of one launch."""
    entry = entry_text(launch)
    module = _module(launch)
    flags = {a.flag for a in launch.args if a.flag is not None}
    if launch.launcher == "axolotl train":
        return "axolotl", entry
    if launch.launcher == "tune run":
        return "torchtune", entry
    if launch.launcher == "llamafactory-cli train":
        return "llamafactory", entry
    if launch.launcher == "sbatch":
        return "job", entry
    if module is not None:
        for prefix, framework in _MODULE_FRAMEWORKS:
            if module.startswith(prefix) or module == prefix[:-1]:
                return framework, module
    if flags & set(_TITAN_CONFIG):
        return "torchtitan", entry
    name = entry.rsplit("/", 1)[-1]
    from shardshift.formats.megatron.reader import MEGATRON_ENTRIES

    if MEGATRON_ENTRIES.fullmatch(name):
        return "megatron", entry
    # `--deepspeed` beside `--deepspeed_config` is the switch deepspeed.add_config_arguments gives a DeepSpeed
    # script; the Trainer's `--deepspeed` takes the ds_config itself
    own_config = flags & {"--deepspeed_config", "--deepspeed-config", "--deepscale_config"}
    switch = all(not isinstance(a.value, str) for a in launch.args if a.flag == "--deepspeed")
    if own_config and switch and not any(f.startswith("--per_device_train_batch_size") for f in flags):
        return "deepspeed", entry
    if "--deepspeed" in flags or any(f.startswith("--per_device_train_batch_size") for f in flags):
        return "hf", entry
    if own_config:
        return "deepspeed", entry
    if launch.launcher == "accelerate launch":
        return "accelerate", entry
    return "script", entry


def _first_positional(launch: Any) -> Any:
    for arg in launch.args:
        if arg.flag is None:
            return arg
        if arg.value is not None:
            return None  # a flag with a value comes first: no positional config
    return None


def references(launch: Any, framework: str, path: str, script: Any) -> list[Reference]:
    """The configuration files one launch names, each with its role."""
    refs: list[Reference] = []

    def add(value: Any, line: int, column: int, shown: str, role: str) -> None:
        where = Location(path, line, column, shown)
        if isinstance(value, tuple):
            value = value[0] if value else None
        if isinstance(value, Unknown):
            refs.append(Reference(shown, None, where, role, unknown=value.reason))
            return
        if not isinstance(value, str) or not value:
            return
        if script is not None:
            written = next((h.line for h in script.heredocs if h.target == value), None)
            if written is not None:
                refs.append(Reference(value, None, where, role, unknown=f"written by this script at line {written}"))
                return
        resolved, why = resolve_reference(path, value)
        note = None
        if resolved is None:
            resolved, note = _from_parent(path, value)
            why = why if resolved is None else None
        refs.append(Reference(value, resolved, where, role, unknown=why, note=note))

    if launch.launcher == "accelerate launch":
        for option, role in (("config_file", "accelerate_config"), ("deepspeed_config_file", "deepspeed_config")):
            if option in launch.options:
                add(launch.options[option], launch.line, launch.column, f"--{option}", role)
    if framework == "axolotl":
        if launch.launcher == "axolotl train":
            add(launch.script, launch.line, launch.column, "the Axolotl config", "axolotl_config")
        else:
            positional = _first_positional(launch)
            if positional is not None:
                add(positional.value, positional.line, positional.column, "the Axolotl config", "axolotl_config")
    for arg in launch.args:
        if arg.flag in _TITAN_CONFIG:
            add(arg.value, arg.line, arg.column, arg.flag, "torchtitan_config")
        elif arg.flag in _DEEPSPEED_FLAGS and framework not in ("axolotl",):
            if arg.flag == "--deepspeed" and (arg.value is None or arg.value in ("true", "True")):
                continue  # a switch (Megatron-DeepSpeed's --deepspeed)
            add(arg.value, arg.line, arg.column, arg.flag, "deepspeed_config")
    return refs


def _from_parent(path: str, target: str) -> tuple[str | None, str | None]:
    """A relative path the script names from the folder it is started in: a launch script kept in
    `scripts/` names `configs/ds.json` of the repository's root, where the job is launched from.
    The script's parent folders are tried, nearest first (at most three levels)."""
    import os

    if os.path.isabs(target) or "$" in target or not os.path.isfile(path):
        return None, None
    folder = os.path.dirname(os.path.abspath(path))
    for _ in range(3):
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
        candidate = os.path.normpath(os.path.join(folder, target))
        if os.path.isfile(candidate):
            shown = os.path.relpath(candidate) if not os.path.isabs(path) else candidate
            return shown, f"resolved {target} from {os.path.relpath(folder) if not os.path.isabs(path) else folder}, " \
                          "a parent folder of the script (where the job is launched from)"
    return None, None


# --- the Plan ---------------------------------------------------------------------------------------


def build_plan(data: LaunchData, refs: list[Reference], path: str):
    from shardshift.formats.launch.world import set_world
    from shardshift.plan import Plan

    plan = Plan()
    launch = data.launch
    set_world(plan, launch, path)
    roles = {r.role for r in refs}
    if data.framework == "torchtitan":
        _titan_overrides(plan, launch, path)
    if launch.launcher == "accelerate launch" and "accelerate_config" in roles:
        _accelerate_overrides(plan, launch, path)
    if data.framework == "axolotl":
        _axolotl_overrides(plan, launch, path)
    from shardshift.formats.launch import training_flags

    fill = getattr(training_flags, "fill_plan", None)  # the TrainingArguments flags' Plan fields (h4)
    if fill is not None:
        fill(plan, data, path)
    return plan


def _scalar(value: Any) -> Any:
    """A command-line word as the receiving parser converts it: int, float, bool, else the text;
    a switch (no value) is True; Unknown stays."""
    if value is None:
        return True
    if isinstance(value, Unknown) or not isinstance(value, str):
        return value
    if re.fullmatch(r"-?[0-9]+", value):
        return int(value)
    if re.fullmatch(r"-?(?:[0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)(?:[eE][-+]?[0-9]+)?", value):
        return float(value)
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    return value


def _lift(plan, module: Any, text: str, path: str, places: dict, unknown: dict, pointer_fields: dict) -> None:
    """Read `text` (the overrides written as the linked file's format) with that format's reader
    and put each Plan field it gives into `plan` at the override's place in the script; an
    override whose value is not known before the job runs is Unknown in the field it sets."""
    document = module.read(text, path)
    other = document.plan if document.syntax is None else None
    if other is not None:
        for dotted, value in other.leaves():
            where = other.provenance.get(dotted)
            pointer = where.pointer if where is not None else None
            if pointer in places:
                plan.set(dotted, value, places[pointer])
    for pointer, value in unknown.items():
        dotted = pointer_fields.get(pointer)
        if dotted is not None:
            plan.set(dotted, Unknown(value.reason, places[pointer]), places[pointer])


def _titan_overrides(plan, launch: Any, path: str) -> None:
    """torchtitan's `--section.key value` over the TOML (ConfigManager.parse_args: the TOML
    first, then tyro.cli over it)."""
    import json

    from shardshift.formats.torchtitan import reader as titan

    sections: dict = {}
    places: dict = {}
    unknown: dict = {}
    for arg in launch.args:
        flag = arg.flag
        if flag is None or not flag.startswith("--") or flag in _TITAN_CONFIG or flag.count(".") != 1:
            continue
        section, key = (part.replace("-", "_") for part in flag[2:].split("."))
        if not section.isidentifier() or not key.isidentifier() or isinstance(arg.value, tuple):
            continue
        value = _scalar(arg.value)
        pointer = f"/{section}/{key}"
        places[pointer] = Location(path, arg.line, arg.column, flag)
        if isinstance(value, Unknown):
            unknown[pointer] = value
            continue
        sections.setdefault(section, {})[key] = value
    if not places:
        return
    lines = []
    for section, keys in sections.items():
        lines.append(f"[{section}]")
        for key, value in keys.items():
            shown = ("true" if value else "false") if isinstance(value, bool) else \
                json.dumps(value) if isinstance(value, str) else repr(value)
            lines.append(f"{key} = {shown}")
    fields = {pointer: dotted for dotted, pointers in titan.DEGREES.items() for pointer in pointers}
    fields.update({pointer: dotted for dotted, (pointers, _) in titan.SCALARS.items() for pointer in pointers})
    _lift(plan, titan, "\n".join(lines) + "\n", path, places, unknown, fields)


# accelerate launch's options that a config file also gives, as the YAML's keys (the launcher
# copies `deepspeed_config` / `fsdp_config` entries to the same option names)
_ACCELERATE_TOP = ("mixed_precision",)
_ACCELERATE_DEEPSPEED = ("zero_stage", "gradient_accumulation_steps", "gradient_clipping", "offload_optimizer_device",
                         "offload_param_device", "zero3_init_flag")


def _accelerate_overrides(plan, launch: Any, path: str) -> None:
    """accelerate launch's options over its --config_file (a flag given wins)."""
    import json

    from shardshift.formats.accelerate import reader as accelerate

    options = launch.options
    data: dict = {}
    places: dict = {}
    unknown: dict = {}
    for key in _ACCELERATE_TOP:
        if key in options:
            places[f"/{key}"] = Location(path, launch.line, launch.column, f"--{key}")
            if isinstance(options[key], Unknown):
                unknown[f"/{key}"] = options[key]
            else:
                data[key] = options[key]
    block = {}
    for key in _ACCELERATE_DEEPSPEED:
        if key in options:
            pointer = f"/deepspeed_config/{key}"
            places[pointer] = Location(path, launch.line, launch.column, f"--{key}")
            if isinstance(options[key], Unknown):
                unknown[pointer] = options[key]
            else:
                block[key] = _scalar(options[key])
    if block:
        data["distributed_type"] = "DEEPSPEED"
        data["deepspeed_config"] = block
    if not places:
        return
    data.setdefault("distributed_type", "MULTI_GPU")
    fields = {"/mixed_precision": "precision.param_dtype"}
    fields.update({f"/deepspeed_config/{key}": dotted for key, (dotted, _) in accelerate.DEEPSPEED_KEYS.items()})
    _lift(plan, accelerate, json.dumps(data), path + ".yaml", places, unknown, fields)


def _axolotl_overrides(plan, launch: Any, path: str) -> None:
    """axolotl's `--key value` over the YAML (load_cfg writes each CLI kwarg over the config)."""
    import json

    from shardshift.formats.axolotl import reader as axolotl
    from shardshift.formats.launch.launchers import AXOLOTL_OWN

    data: dict = {}
    places: dict = {}
    unknown: dict = {}
    for arg in launch.args:
        flag = arg.flag
        if flag is None or not flag.startswith("--") or flag == "--" or isinstance(arg.value, tuple):
            continue
        key = flag[2:].replace("-", "_")
        if not key.isidentifier() or key in AXOLOTL_OWN:
            continue
        pointer = f"/{key}"
        places[pointer] = Location(path, arg.line, arg.column, flag)
        value = _scalar(arg.value)
        if isinstance(value, Unknown):
            unknown[pointer] = value
        else:
            data[key] = value
    if not places:
        return
    fields = {f"/{key}": dotted for key, (dotted, _) in axolotl.KEYS.items()}
    _lift(plan, axolotl, json.dumps(data), path + ".yaml", places, unknown, fields)


# --- precedence per linked file -------------------------------------------------------------------


class _Every(dict):
    """A precedence table with one rule for every field."""

    def __init__(self, rule: Any) -> None:
        super().__init__()
        self.rule = rule

    def get(self, key: Any, default: Any = None) -> Any:
        return self.rule


_OVERRIDES = {
    "torchtitan_config": "torchtitan's ConfigManager loads the TOML, then applies the command line over it",
    "accelerate_config": "accelerate launch takes a config file value only where the flag is not given",
    "axolotl_config": "axolotl writes each command-line option over the YAML's value",
}


def precedence(reference: Reference) -> dict:
    """What the framework does when the script's command line and the linked file set one field
    (setup.py): the command line wins for the framework's own config file; a ds_config named by
    `--deepspeed` follows the TrainingArguments flags' table (training_flags.PRECEDENCE) when there
    is one."""
    from shardshift.setup import Precedence

    says = _OVERRIDES.get(reference.role)
    if says is not None:
        return _Every(Precedence("override", says))
    from shardshift.formats.launch import training_flags

    return getattr(training_flags, "PRECEDENCE", {})
