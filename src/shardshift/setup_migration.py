"""`shardshift migrate`: a whole setup moved to another framework, as a patch (issue 34).

`convert` translates one file. A real DeepSpeed setup is a launch script that runs a Hugging Face
Trainer script (`deepspeed --num_gpus=4 train.py --deepspeed ds.json --learning_rate 2e-5 ...`)
with the ds_config it names. Target `trainer-fsdp2` moves it to the Trainer's own FSDP2:

- the launch: the deepspeed launcher becomes torchrun with the same processes per node
  (`--num_gpus N` -> `--nproc_per_node=N`; every GPU of the node -> `gpu`; `--include
  localhost:1` -> `env CUDA_VISIBLE_DEVICES=1 torchrun --nproc_per_node=1`), `--master_port`,
  `--master_addr` and `--module` carry over; torchrun and `python -m torch.distributed.run` stay;
- `--deepspeed X` becomes `--fsdp "full_shard auto_wrap"` (`shard_grad_op` below ZeRO-3) and
  `--fsdp_config Y`, a new JSON beside X that transformers' TrainingArguments (5.0 and later: the
  release is checked) turns into Accelerate's FSDP2 plugin;
- what the ds_config decided and the Trainer's own flags decide without it: a literal batch size,
  clipping, learning rate or precision becomes the Trainer flag of the same meaning (under DeepSpeed
  the Trainer requires the two to agree, so the value is the run's); its `optimizer` and
  `scheduler` blocks, which replace `--optim` and `--lr_scheduler_type` under DeepSpeed, become
  those flags; an "auto" value was filled from the Trainer's own flag, which still applies;
- every other flag of the script stays, and the report says so.

Target `accelerate-fsdp2` moves it to `accelerate launch --config_file X --num_processes N` with X,
Accelerate's FSDP2 config, written beside the ds_config (the accelerate-fsdp2 writer's conversion of it,
with the launch's processes); `--deepspeed X` leaves the script, and the ds_config's decisions become the
same Trainer flags as above (the Trainer builds its Accelerator from the environment the launcher exports).

The result is a list of file changes shown as a unified diff, and a report with an entry per
setting of every file. Nothing is written unless asked (`apply`), and then never over a file that
exists with other content than the patch expects. Nothing of the user's is imported or run: the
script is read with the launch-script grammar, the entry script's text is only searched."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from shardshift.document import MAPPING_STATUSES, Document, MappingEntry
from shardshift.options import ShardshiftError

TARGETS = ("trainer-fsdp2", "accelerate-fsdp2", "fsdp2", "torchtitan")
# the targets that replace DeepSpeed in a script's own training loop (a DeepSpeed script given
# --deepspeed_config), or take the ds_config alone: the emitted FSDP2 module, torchtitan's trainer and TOML
OWN_LOOP_TARGETS = ("fsdp2", "torchtitan")
FSDP2_MODULE = "fsdp2_setup.py"  # the name the module's own docstring imports it by
TORCHTITAN_SUFFIX = "_torchtitan.toml"
# the flags deepspeed.add_config_arguments gives a DeepSpeed script: DeepSpeed's alone
_DEEPSPEED_SCRIPT_FLAGS = ("--deepspeed", "--deepspeed_config", "--deepspeed-config", "--deepscale",
                           "--deepscale_config")
# transformers reads `fsdp_config["version"] == 2` (Accelerate's FSDP2 plugin) from 5.0.0 on; before,
# its TrainingArguments builds FSDP1 from `--fsdp` (training_args.py of each release, read from the wheels)
FIRST_TRAINER_FSDP2 = (5, 0, 0)
FSDP_CONFIG_SUFFIX = "_fsdp2.json"
ACCELERATE_CONFIG_SUFFIX = "_accelerate_fsdp2.yaml"

# ds_config values the Trainer fills from (or, given literally, requires to equal) its own arguments
# (transformers integrations/deepspeed.py HfTrainerDeepSpeedConfig.trainer_config_process): the flag
# that sets the same value without DeepSpeed
_TRAINER_FLAGS = {
    "/train_micro_batch_size_per_gpu": "--per_device_train_batch_size",
    "/gradient_accumulation_steps": "--gradient_accumulation_steps",
    "/gradient_clipping": "--max_grad_norm",
    "/optimizer/params/lr": "--learning_rate",
    "/optimizer/params/weight_decay": "--weight_decay",
    "/optimizer/params/eps": "--adam_epsilon",
    "/scheduler/params/warmup_max_lr": "--learning_rate",
    "/scheduler/params/warmup_num_steps": "--warmup_steps",
    "/bf16/enabled": "--bf16",
    "/fp16/enabled": "--fp16",
}
# filled from the Trainer's arguments too, with no flag of their own to write
_DERIVED = {
    "/train_batch_size": "the Trainer's per-device batch × gradient accumulation × processes",
    "/optimizer/params/betas": "--adam_beta1 and --adam_beta2",
    "/scheduler/params/total_num_steps": "the Trainer's number of training steps (--max_steps or the epochs)",
    "/scheduler/params/warmup_min_lr": "0, where the Trainer's warm-up starts",
}
# DeepSpeed's optimizer types (lower case; Adam is AdamW by default: adam_w_mode) -> the Trainer's --optim
_OPTIMIZERS = {"adamw": "adamw_torch", "adam": "adamw_torch", "adagrad": "adagrad"}
_LAUNCHER_KEPT = ("torchrun", "python -m torch.distributed.run", "python -m torch.distributed.launch")


@dataclass(slots=True)
class FileChange:
    """One file the migration writes: `before` is its text now (None: a new file)."""

    path: str
    before: str | None
    after: str

    def diff(self, root: str) -> str:
        """The change as a unified diff, its paths relative to `root` (the repository: `git apply` there)."""
        import difflib

        shown = os.path.relpath(os.path.abspath(self.path), os.path.abspath(root)).replace(os.sep, "/")
        lines = difflib.unified_diff((self.before or "").splitlines(keepends=True), self.after.splitlines(keepends=True),
                                     "/dev/null" if self.before is None else f"a/{shown}", f"b/{shown}")
        return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


@dataclass(slots=True)
class SetupMigration:
    """A setup migrated: the launch script it starts from, the file changes, and an entry per setting."""

    source: str
    target: str
    root: str  # the repository the patch applies to: its paths are relative to it
    changes: list[FileChange] = field(default_factory=list)
    entries: list[MappingEntry] = field(default_factory=list)

    def diff(self) -> str:
        return "".join(change.diff(self.root) for change in self.changes)

    @property
    def summary(self) -> dict[str, int]:
        return {s: sum(e.status == s for e in self.entries) for s in MAPPING_STATUSES}

    def to_json(self) -> dict:
        return {"source": self.source, "target_format": self.target, "root": self.root,
                "files": [{"path": c.path, "new": c.before is None} for c in self.changes],
                "entries": [e.to_json() for e in self.entries], "summary": self.summary}


def migrate(path: str, to: str, env: Mapping[str, str] | Iterable[str] | None = None, *,
            transformers_version: str | None = None) -> list[SetupMigration]:
    """Migrate the setup a launch script starts (or each one under a folder) to `to`.
    `transformers_version`: the release the migrated run will use, when it is not the one the
    repository pins (the Trainer's FSDP2 needs 5.0 or later: a migration is also an upgrade)."""
    from shardshift.context.environment import given
    from shardshift.options import environment

    if to not in TARGETS:
        raise ShardshiftError(f"unknown migration target {to!r}; choose from {', '.join(TARGETS)} "
                              "(`shardshift convert` translates single files to the other formats)", usage=True)
    if not os.path.exists(path):
        raise ShardshiftError(f"no such file or directory: {path}", usage=True)
    release = None
    if transformers_version is not None:
        from shardshift.context import Release

        try:
            version = tuple(int(part) for part in transformers_version.split("."))
        except ValueError:
            raise ShardshiftError(f"{transformers_version!r} is not a version like 5.24.0", usage=True) from None
        release = Release("transformers", version, "--transformers-version", transformers_version)
    with given(environment(env)):
        if to in OWN_LOOP_TARGETS:
            if os.path.isdir(path):
                scripts = _launches(path, _deepspeed_config_arg)
                if not scripts:
                    raise ShardshiftError(f"{path}: no launch script here passes --deepspeed_config to a DeepSpeed "
                                          "script (give a ds_config to migrate the config alone)")
                return [_own_loop(script, to) for script in scripts]
            return [_own_loop(path, to)]
        if os.path.isdir(path):
            scripts = _launches(path)
            if not scripts:
                raise ShardshiftError(f"{path}: no launch script here passes --deepspeed with a ds_config to a "
                                      "training script")
            return [_trainer_fsdp2(script, release, to) for script in scripts]
        return [_trainer_fsdp2(path, release, to)]


def apply(migration: SetupMigration) -> list[str]:
    """Write the changes (each file first to a temporary beside it, then renamed over it, keeping
    its mode). Refuses, writing nothing, when a file's content is no longer what the patch was
    made from, or a new file already exists with other content. The paths written."""
    for change in migration.changes:
        now = _read(change.path)
        if change.before is None and now is not None and now != change.after:
            raise ShardshiftError(f"{change.path} exists already with other content: not written over")
        if change.before is not None and now != change.before:
            raise ShardshiftError(f"{change.path} changed since it was read: nothing written")
    written = []
    for change in migration.changes:
        mode = os.stat(change.path).st_mode & 0o7777 if os.path.exists(change.path) else None
        temporary = f"{change.path}.shardshift-{os.getpid()}"
        with open(temporary, "w", encoding="utf-8", newline="") as handle:
            handle.write(change.after)
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, change.path)
        written.append(change.path)
    return written


# --- which scripts -----------------------------------------------------------------------------------


def _launches(folder: str, argument=None) -> list[str]:
    """The launch scripts under `folder` whose launch `argument` finds (default: a Trainer's --deepspeed X)."""
    from shardshift.check import discover, load

    argument = argument or _deepspeed_arg
    found = []
    for path, _ in discover([folder]):
        document = load(path, explicit=False)
        if document is not None and document.format == "launch" and argument(document) is not None:
            found.append(path)
    return found


def _deepspeed_arg(document: Document) -> Any:
    from shardshift.formats.launch.markdown import SUFFIXES

    if document.path.lower().endswith(SUFFIXES):
        return None  # a README's command documents a launch script; that script is what is migrated
    data = document.data
    launch = getattr(data, "launch", None)
    if launch is None or getattr(data, "framework", None) != "hf":
        return None
    return next((a for a in launch.args if a.flag == "--deepspeed" and isinstance(a.value, str)), None)


def _deepspeed_config_arg(document: Document) -> Any:
    """The `--deepspeed_config X` of a launch that runs a DeepSpeed script (its own loop, not a Trainer)."""
    from shardshift.formats.launch.markdown import SUFFIXES

    data = document.data
    launch = getattr(data, "launch", None)
    if document.path.lower().endswith(SUFFIXES) or launch is None or getattr(data, "framework", None) != "deepspeed":
        return None
    return next((a for a in launch.args if a.flag in _DEEPSPEED_SCRIPT_FLAGS and isinstance(a.value, str)), None)


# --- a script's own loop: the emitted FSDP2 module, or torchtitan's trainer ------------------------------


def _own_loop(path: str, to: str) -> SetupMigration:
    """The ds_config (named by the launch at `path`, or `path` itself) converted by the `to` writer into a new
    file; the launch's deepspeed launcher becomes torchrun with the same processes. Under `fsdp2` DeepSpeed's
    own flags leave the launch and the script keeps its loop: the report names the deepspeed.initialize call to
    replace with the module's setup(). Under `torchtitan` torchtitan's trainer takes the script's place."""
    from shardshift import api
    from shardshift.files import repository_root

    try:
        setup = api.load(path)
    except ShardshiftError as error:
        raise ShardshiftError(f"{path}: neither a ds_config nor a launch of a DeepSpeed script ({error.message})") \
            from None
    first = setup.documents[0]
    script, flag = None, None
    if first.format == "deepspeed":
        ds = first
    elif first.format == "launch":
        if getattr(first.data, "framework", None) == "hf":
            raise ShardshiftError(f"{path}: the launch runs a Hugging Face Trainer script, whose FSDP2 is the "
                                  "Trainer's own: migrate it with --to trainer-fsdp2 or --to accelerate-fsdp2")
        flag = _deepspeed_config_arg(first)
        if flag is None:
            raise ShardshiftError(f"{path}: no launch in it passes --deepspeed_config to a DeepSpeed script (give the "
                                  "launch script, or the ds_config alone)")
        configs = setup.of_format("deepspeed")
        if not configs:
            raise ShardshiftError(f"{path}:{flag.line}:{flag.column}: the ds_config {flag.value!r} is not found")
        script, ds = first, configs[0]
    else:
        raise ShardshiftError(f"{path}: neither a ds_config nor a launch of a DeepSpeed script (it reads as "
                              f"{first.format})")
    if not isinstance(ds.data, dict) or ds.syntax is not None:
        raise ShardshiftError(f"{ds.path}: the ds_config cannot be read; `shardshift check {ds.path}` says why")
    root = os.path.abspath(repository_root(path))
    migration = SetupMigration(path, to, root)
    rewrite = _ScriptRewrite(script, flag, target=to) if script is not None else None
    entry = _entry_path(script, root) if script is not None else None
    if to == "fsdp2":
        output = os.path.join(os.path.dirname(entry or os.path.abspath(ds.path)), FSDP2_MODULE)
    else:
        output = os.path.abspath(_config_path(ds.path, TORCHTITAN_SUFFIX))
    text, entries = _converted(ds, to, rewrite.processes() if rewrite is not None else None)
    notes: list[MappingEntry] = []
    if rewrite is not None:
        rewrite.finish_own_loop(output)
        migration.changes.append(FileChange(os.path.abspath(script.path), script.text, rewrite.text))
        notes = rewrite.entries
        if to == "fsdp2":
            notes += _initialize_note(script, entry)
    migration.changes.append(FileChange(output, None, text))
    if os.path.exists(output) and _read(output) != text:
        raise ShardshiftError(f"{output} exists already: the migration would write its {to} output there (move "
                              "that file)")
    if to == "fsdp2" and script is None:
        notes.append(MappingEntry("", 1, 1, "unknown", None, f"the ds_config alone was given: call "
                                  f"{FSDP2_MODULE[:-3]}.setup(model) where the script called deepspeed.initialize, "
                                  "and start it with torchrun (the module's docstring shows both)"))
    migration.entries = notes + entries
    return migration


def _converted(ds: Document, to: str, processes: int | None) -> tuple[str, list[MappingEntry]]:
    """The `to` writer's conversion of the ds_config (with the launch's processes on one node, when known) and
    its measured report, as `shardshift convert` gives them."""
    import copy

    from shardshift.migration import migrate as convert

    document = copy.copy(ds)
    plan = copy.deepcopy(ds.plan)
    if processes is not None:
        plan.world.nodes, plan.world.gpus_per_node, plan.world.world_size = 1, processes, processes
    document.plan = plan
    conversion = convert(document, plan, to)
    for found in conversion.entries:
        if found.file is None:
            found.file = ds.path
    return conversion.text, conversion.entries


def _initialize_note(script: Document, entry: str | None) -> list[MappingEntry]:
    """Where the entry script calls deepspeed.initialize: the one change the migration leaves to the user (the
    script's text is searched, never rewritten or run)."""
    module = FSDP2_MODULE[:-3]
    how = (f"replace it with `engine = {module}.setup(model)` and the engine's calls as {FSDP2_MODULE}'s docstring "
           "shows (backward and step keep their names); the script is not rewritten")
    text = _read(entry) if entry is not None else None
    if text is None:
        launch = script.data.launch
        return [MappingEntry("deepspeed.initialize", launch.line, launch.column, "unknown", None,
                             f"the entry script is not in the repository: where it calls deepspeed.initialize, {how}")]
    found = [m for m in re.finditer(r"\bdeepspeed\.initialize\s*\(|(?<![.\w])initialize\s*\(", text)
             if "deepspeed" in text[:m.start()] or m.group(0).startswith("deepspeed")]
    if not found:
        return [MappingEntry("deepspeed.initialize", 1, 1, "unknown", None,
                             f"{os.path.basename(entry)} calls no deepspeed.initialize that shardshift found (searched "
                             f"its text): where the engine is built, {how}", entry)]
    return [MappingEntry("deepspeed.initialize", text.count("\n", 0, m.start()) + 1,
                         m.start() - text.rfind("\n", 0, m.start()), "unknown", f"{module}.setup(model)", how, entry)
            for m in found]


# --- the Trainer's FSDP2 ------------------------------------------------------------------------------


def _trainer_fsdp2(path: str, chosen=None, to: str = "trainer-fsdp2") -> SetupMigration:
    from shardshift import api
    from shardshift.context.releases import detect

    try:
        setup = api.load(path)
    except ShardshiftError as error:
        raise ShardshiftError(f"{path}: no launch in it passes --deepspeed with a ds_config to a training script "
                              f"({error.message})") from None
    script = setup.documents[0]
    flag = _deepspeed_arg(script) if script.format == "launch" else None
    if flag is None:
        from shardshift.formats.launch.markdown import SUFFIXES

        if path.lower().endswith(SUFFIXES):
            raise ShardshiftError(f"{path}: a README's commands are not migrated: give the launch script they run "
                                  "(or rewrite the README's command as the migrated script's)")
        raise ShardshiftError(f"{path}: no launch in it passes --deepspeed with a ds_config to a training script "
                              "(give the launch script of a Hugging Face Trainer run)")
    configs = setup.of_format("deepspeed")
    if not configs:
        raise ShardshiftError(f"{path}:{flag.line}:{flag.column}: the ds_config {flag.value!r} is not found")
    ds = configs[0]
    if not isinstance(ds.data, dict) or ds.syntax is not None:
        raise ShardshiftError(f"{ds.path}: the ds_config cannot be read; `shardshift check {ds.path}` says why")
    from shardshift.files import repository_root

    if to == "accelerate-fsdp2":
        return _accelerate_fsdp2(path, script, flag, ds, os.path.abspath(repository_root(path)))
    pinned = detect("transformers", path)
    release = chosen or pinned
    if release.version is not None and tuple(release.version) < FIRST_TRAINER_FSDP2:
        raise ShardshiftError(f"transformers {'.'.join(map(str, release.version))} ({release.source}) builds FSDP1 "
                              "from --fsdp: its TrainingArguments reads FSDP2 (fsdp_config version 2) from 5.0.0 on. "
                              "Upgrade transformers and say so with --transformers-version 5.x, or convert the "
                              "ds_config with `shardshift convert --to accelerate-fsdp2` and start the script with "
                              "accelerate launch")
    root = os.path.abspath(repository_root(path))
    entry_notes = _entry_note(script, root)
    migration = SetupMigration(path, "trainer-fsdp2", root)
    rewrite = _ScriptRewrite(script, flag)
    config, config_entries = _fsdp_config(ds, rewrite)
    config_path = os.path.abspath(_config_path(ds.path))
    rewrite.entries.extend(config_entries)
    rewrite.finish(config_path)
    migration.changes.append(FileChange(os.path.abspath(path), script.text, rewrite.text))
    migration.changes.append(FileChange(config_path, None, json.dumps(config, indent=2) + "\n"))
    if os.path.exists(config_path) and _read(config_path) != migration.changes[-1].after:
        raise ShardshiftError(f"{config_path} exists already: the migration would write its fsdp_config there "
                              "(move that file, or the ds_config)")
    migration.entries = rewrite.entries + _release_note(release, pinned) + entry_notes
    return migration


def _config_path(ds_path: str, suffix: str = FSDP_CONFIG_SUFFIX) -> str:
    stem = re.sub(r"\.(?:jsonc?|hjson)$", "", os.path.basename(ds_path))
    return os.path.join(os.path.dirname(ds_path), stem + suffix)


def _accelerate_fsdp2(path: str, script: Document, flag, ds: Document, root: str) -> SetupMigration:
    """The Trainer started by `accelerate launch --config_file X` with Accelerate's FSDP2 config X (the
    ds_config converted by the accelerate-fsdp2 writer, with the launch's processes): the Trainer builds
    its Accelerator from the environment the launcher exports, so its own flags still apply."""
    entry_notes = _entry_note(script, root)
    migration = SetupMigration(path, "accelerate-fsdp2", root)
    rewrite = _ScriptRewrite(script, flag, target="accelerate-fsdp2")
    config_path = os.path.abspath(_config_path(ds.path, ACCELERATE_CONFIG_SUFFIX))
    text, config_entries = _accelerate_config(ds, rewrite)
    rewrite.entries.extend(config_entries)
    rewrite.finish(config_path)
    migration.changes.append(FileChange(os.path.abspath(path), script.text, rewrite.text))
    migration.changes.append(FileChange(config_path, None, text))
    if os.path.exists(config_path) and _read(config_path) != text:
        raise ShardshiftError(f"{config_path} exists already: the migration would write its Accelerate config there "
                              "(move that file, or the ds_config)")
    migration.entries = rewrite.entries + entry_notes
    return migration


class _Report:
    """The entries for a ds_config's settings as a migration decides them: `add` one (the pointer is
    then handled), and `the_rest` gives every setting left DeepSpeed's own reason (its FSDP2 mapping's)."""

    def __init__(self, ds: Document) -> None:
        self.ds = ds
        self.entries: list[MappingEntry] = []
        self.handled: set[str] = set()
        self.where = {pointer: (line, column) for pointer, line, column in ds.settings()}

    def add(self, pointer: str, status: str, target: str | None, reason: str) -> None:
        self.handled.add(pointer)
        line, column = self.where.get(pointer, (1, 1))
        self.entries.append(MappingEntry(pointer, line, column, status, target, reason, self.ds.path))

    def the_rest(self) -> None:
        for pointer, line, column in self.ds.settings():
            if pointer not in self.handled and not any(pointer.startswith(p + "/") for p in self.handled):
                self.entries.append(MappingEntry(pointer, line, column,
                                                 *_deepspeed_only(pointer, _value(self.ds.data, pointer)),
                                                 self.ds.path))


def _accelerate_config(ds: Document, rewrite: _ScriptRewrite) -> tuple[str, list[MappingEntry]]:
    """The Accelerate FSDP2 config for the ds_config (the accelerate-fsdp2 writer's, with the launch's
    process count), its entries for the sharding settings, and the Trainer flags the ds_config decided."""
    import copy

    from shardshift import formats

    document = copy.copy(ds)
    plan = copy.deepcopy(ds.plan)
    processes = rewrite.processes()
    if processes is not None:
        plan.world.nodes, plan.world.gpus_per_node, plan.world.world_size = 1, processes, processes
    document.plan = plan
    conversion = formats.writer("accelerate-fsdp2").convert(document)
    report = _Report(ds)
    for found in conversion.entries:  # ZeRO's stage, offload and saving: what the config now says
        if found.source.startswith("/zero_optimization"):
            found.file = ds.path
            report.entries.append(found)
            report.handled.add(found.source)
    _trainer_flags(ds.data, rewrite, report)
    report.the_rest()
    return conversion.text, report.entries


def _release_note(release, pinned) -> list[MappingEntry]:
    if release is not pinned and pinned.version is not None and tuple(pinned.version) < FIRST_TRAINER_FSDP2:
        place, _, line = pinned.source.rpartition(":")
        return [MappingEntry("transformers", int(line) if line.isdigit() else 1, 1, "unknown", None,
                             f"{pinned.source} pins transformers {'.'.join(map(str, pinned.version))}, whose Trainer "
                             f"builds FSDP1 from these flags: the patch is for {release.detail or release.source} "
                             "(--transformers-version); raise the pin", place if line.isdigit() else None)]
    if release.version is not None:
        return []
    return [MappingEntry("", 1, 1, "unknown", None,
                         "no transformers pin found for this script: the flags and the fsdp_config are those of "
                         "transformers 5.0 and later (checked with TrainingArguments of 5.24); a 4.x release "
                         "builds FSDP1 from them instead")]


def _entry_path(script: Document, root: str) -> str | None:
    """The entry script's file, looked for beside the launch script, at the repository's root and in the
    current directory (a `-m` module as its file or package); None when it is not found."""
    launch = script.data.launch
    entry = launch.script if isinstance(launch.script, str) else None
    if entry is None:
        return None
    if launch.options.get("module") is True or launch.options.get("m"):
        candidates = [entry.replace(".", os.sep) + ".py", os.path.join(entry.replace(".", os.sep), "__main__.py")]
    else:
        candidates = [entry]
    base = os.path.dirname(os.path.abspath(script.path))
    for candidate in candidates:
        for folder in (base, root, os.getcwd()):
            if os.path.isfile(os.path.join(folder, candidate)):
                return os.path.abspath(os.path.join(folder, candidate))
    return None


def _entry_note(script: Document, root: str) -> list[MappingEntry]:
    """Whether the entry script reads --fsdp into TrainingArguments: its text is searched, never run."""
    launch = script.data.launch
    entry = launch.script if isinstance(launch.script, str) else None
    if entry is None:
        return [MappingEntry("", launch.line, launch.column, "unknown", None,
                             "the entry script is known only when the job runs: that it reads --fsdp and "
                             "--fsdp_config into TrainingArguments is not shown")]
    found = _entry_path(script, root)
    text = _read(found) if found is not None else None
    if text is None:
        return [MappingEntry("", launch.line, launch.column, "unknown", None,
                             f"the entry {entry} is not in the repository: that it reads --fsdp and --fsdp_config "
                             "into TrainingArguments is not shown")]
    if not re.search(r"\b(?:Seq2Seq)?TrainingArguments\b|\bHfArgumentParser\b|\bTrainer\b|\bSFTConfig\b", text):
        raise ShardshiftError(f"{entry}: the entry builds no TrainingArguments (searched its text): it would not "
                              "read --fsdp; this target is for Hugging Face Trainer scripts")
    return []


# --- the ds_config as fsdp_config and Trainer flags ----------------------------------------------


def _fsdp_config(ds: Document, rewrite: _ScriptRewrite) -> tuple[dict, list[MappingEntry]]:
    data: dict = ds.data
    zero = data.get("zero_optimization") if isinstance(data.get("zero_optimization"), dict) else {}
    stage = zero.get("stage", 0)
    report = _Report(ds)
    entries, where, entry = report.entries, report.where, report.add

    config_name = os.path.basename(_config_path(ds.path))
    if not isinstance(stage, int) or isinstance(stage, bool) or stage not in (0, 1, 2, 3):
        raise ShardshiftError(f"{ds.path}: zero_optimization.stage {stage!r} is no ZeRO stage "
                              "(`shardshift check` reports it)")
    full = stage == 3
    rewrite.fsdp = "full_shard auto_wrap" if full else "shard_grad_op auto_wrap"
    config: dict[str, Any] = {"fsdp_version": 2, "reshard_after_forward": full,
                              "auto_wrap_policy": "TRANSFORMER_BASED_WRAP"}
    stage_reason = {3: "parameters, gradients and optimizer state sharded, parameters freed after forward: "
                       "FSDP2 with reshard_after_forward",
                    2: "gradients and optimizer state sharded, parameters kept after forward: FSDP2 without "
                       "reshard_after_forward also shards the parameters between steps (same math, less memory)",
                    1: "optimizer state sharded: FSDP2 without reshard_after_forward also shards gradients and "
                       "parameters (same math, less memory)",
                    0: "no sharding: FSDP2 without reshard_after_forward shards parameters, gradients and optimizer "
                       "state (same math, less memory)"}[stage]
    entry("/zero_optimization/stage", "exact" if full else "approximate",
          f"--fsdp \"{rewrite.fsdp}\", {config_name}: reshard_after_forward", stage_reason)
    if "/zero_optimization/stage" not in where:
        entries[-1].line = entries[-1].column = 1
    devices = {name: (zero.get(name) or {}).get("device") for name in ("offload_optimizer", "offload_param")
               if isinstance(zero.get(name), dict)}
    offloaded = {name: device for name, device in devices.items() if device not in (None, "none")}
    for name, device in devices.items():
        pointer = f"/zero_optimization/{name}/device"
        if device == "cpu":
            config["cpu_offload"] = True
            entry(pointer, "exact" if set(offloaded) == {"offload_optimizer", "offload_param"} else "approximate",
                  f"{config_name}: cpu_offload",
                  "FSDP2's CPUOffloadPolicy keeps parameters, gradients and the optimizer step on the CPU"
                  + ("" if set(offloaded) == {"offload_optimizer", "offload_param"}
                     else f"; the ds_config offloads only {name.split('_', 1)[1]}s"))
        elif device in (None, "none"):
            entry(pointer, "exact", f"{config_name}: cpu_offload", "no offload in either")
        else:
            entry(pointer, "dropped", None, f"FSDP2 offloads to the CPU only, not to {device!r}")
    gather = any(zero.get(k) is True for k in ("stage3_gather_16bit_weights_on_model_save",
                                                "gather_16bit_weights_on_model_save"))
    config["state_dict_type"] = "SHARDED_STATE_DICT" if full and not gather else "FULL_STATE_DICT"
    for key in ("stage3_gather_16bit_weights_on_model_save", "gather_16bit_weights_on_model_save"):
        if f"/zero_optimization/{key}" in where:
            entry(f"/zero_optimization/{key}", "approximate", f"{config_name}: state_dict_type",
                  "the Trainer saves the whole model (FULL_STATE_DICT, in the parameters' dtype)" if gather else
                  "the Trainer saves each rank's shard (SHARDED_STATE_DICT), as ZeRO-3 saves no whole model "
                  "without this setting")
    if full:
        # ZeRO-3 builds the Trainer's model already partitioned (zero.Init in from_pretrained); with this,
        # rank 0 reads the checkpoint and the others receive their shards instead of each reading it whole
        config["cpu_ram_efficient_loading"] = True
        entries[0].reason += ("; cpu_ram_efficient_loading: rank 0 reads the checkpoint and sends the shards, where "
                              "ZeRO-3 built the model partitioned (zero.Init)")
    _trainer_flags(data, rewrite, report)
    # everything else DeepSpeed's own: the reason the FSDP2 mapping gives for it
    report.the_rest()
    return config, entries


def _trainer_flags(data: dict, rewrite: _ScriptRewrite, report: _Report) -> None:
    """What the ds_config decided that the Trainer's own flags decide without it."""
    entry, handled, where = report.add, report.handled, report.where
    _precision(data, rewrite, entry)
    _optimizer_and_schedule(data, rewrite, entry)
    for pointer, flag_name in _TRAINER_FLAGS.items():
        if pointer in where and pointer not in handled:
            _trainer_value(pointer, _value(data, pointer), flag_name, rewrite, entry)
    for pointer, reason in _DERIVED.items():
        if pointer in where and pointer not in handled:
            value = _value(data, pointer)
            entry(pointer, "exact", None, (f'"auto": filled from {reason}, as it is without DeepSpeed'
                                           if value == "auto" else f"the Trainer sets it from {reason}, as it "
                                           "does under DeepSpeed (where it requires the two to agree)"))


def _precision(data: dict, rewrite: _ScriptRewrite, entry) -> None:
    for name in ("bf16", "fp16"):
        block = data.get(name)
        if not isinstance(block, dict) or "enabled" not in block:
            continue
        pointer, value = f"/{name}/enabled", block["enabled"]
        if value == "auto":
            entry(pointer, "exact", f"--{name}", f'"auto": filled from the script\'s --{name} (or its default), '
                  "which the Trainer applies under FSDP2 too")
        elif value is True or value == "true":
            rewrite.ensure(f"--{name}", "True", entry, pointer,
                           "Accelerate's FSDP2 mixed precision: parameters sharded in fp32, computed in "
                           f"{name}" if name == "bf16" else "fp16 autocast with a gradient scaler")
        else:
            entry(pointer, "exact", None, f"{name} off in both")


def _optimizer_and_schedule(data: dict, rewrite: _ScriptRewrite, entry) -> None:
    optimizer = data.get("optimizer")
    if isinstance(optimizer, dict):
        kind = optimizer.get("type")
        params = optimizer.get("params") if isinstance(optimizer.get("params"), dict) else {}
        lowered = kind.lower() if isinstance(kind, str) else None
        if lowered == "adam" and params.get("adam_w_mode", True) is not True:
            lowered = None  # Adam with L2 decay: no --optim of the Trainer is it
        choice = _OPTIMIZERS.get(lowered) if lowered is not None else None
        if choice is not None:
            rewrite.ensure("--optim", choice, entry, "/optimizer/type",
                           f"DeepSpeed's {kind} block replaced the Trainer's optimizer; the Trainer builds torch's "
                           f"{'AdamW' if choice == 'adamw_torch' else 'Adagrad'} instead (the same update, another "
                           "kernel)", status="approximate", replace=True)
        else:
            entry("/optimizer/type", "unknown", "--optim",
                  f"the Trainer has no optimizer like DeepSpeed's {kind!r}: choose --optim (under DeepSpeed this "
                  "block replaced it)")
        if "/optimizer/params/betas" not in rewrite.entry_sources and isinstance(params.get("betas"), list) \
                and len(params["betas"]) == 2 and all(isinstance(b, (int, float)) for b in params["betas"]):
            rewrite.ensure("--adam_beta1", repr(params["betas"][0]), None, None, "")
            rewrite.ensure("--adam_beta2", repr(params["betas"][1]), entry, "/optimizer/params/betas",
                           "the Trainer's --adam_beta1 and --adam_beta2")
    scheduler = data.get("scheduler")
    if isinstance(scheduler, dict) and scheduler.get("type") is not None:
        kind = scheduler.get("type")
        params = scheduler.get("params") if isinstance(scheduler.get("params"), dict) else {}
        # DeepSpeed's own schedule types, as transformers names the schedule of the same shape
        # (the table the Axolotl writer uses: Axolotl's lr_scheduler is the Trainer's)
        from shardshift.formats.axolotl.writer import SCHEDULERS
        from shardshift.formats.deepspeed.reader import SCHEDULER_FIELDS

        shape = SCHEDULERS[kind][0] if isinstance(kind, str) and kind in SCHEDULER_FIELDS and kind in SCHEDULERS \
            else None
        if shape is None:
            entry("/scheduler/type", "unknown", "--lr_scheduler_type",
                  f"the Trainer has no schedule like {kind!r}: choose --lr_scheduler_type (under DeepSpeed this "
                  "block replaced it)")
            return
        warm = params.get("warmup_type", "log")
        why = (f"DeepSpeed's {kind} replaced --lr_scheduler_type; the Trainer's {shape} has its shape"
               + ("" if warm == "linear" else f", with a linear warm-up where {kind}'s is {warm!r}"))
        if kind == "WarmupCosineLR" and isinstance(params.get("cos_min_ratio"), (int, float)) \
                and params["cos_min_ratio"] > 0:
            shape = "cosine_with_min_lr"
            rewrite.ensure("--lr_scheduler_kwargs", "'" + json.dumps({"min_lr_rate": params["cos_min_ratio"]}) + "'",
                           entry, "/scheduler/params/cos_min_ratio", "min_lr_rate = cos_min_ratio",
                           status="exact", replace=True)
        rewrite.ensure("--lr_scheduler_type", shape, entry, "/scheduler/type", why,
                       status="exact" if warm == "linear" and kind != "WarmupCosineLR" else "approximate",
                       replace=True)


def _trainer_value(pointer: str, value: Any, flag_name: str, rewrite: _ScriptRewrite, entry) -> None:
    if value == "auto":
        entry(pointer, "exact", flag_name, f'"auto": filled from the script\'s {flag_name} (or its default), which '
              "the Trainer applies under FSDP2 too")
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        rewrite.ensure(flag_name, _number(value), entry, pointer,
                       "the Trainer's own argument, which it reads without DeepSpeed")
    else:
        entry(pointer, "unknown", flag_name, f"{value!r} is not a value the Trainer's {flag_name} takes")


def _deepspeed_only(pointer: str, value: Any) -> tuple[str, str | None, str]:
    """A setting of DeepSpeed's own (buckets, overlap, logging, ...): FSDP2's reason (DeepSpeed's table,
    formats/deepspeed/fsdp2_explained.py)."""
    from shardshift.formats.deepspeed.fsdp2_explained import row_for
    from shardshift.formats.deepspeed.keys import key_index

    key = key_index().get(pointer)
    if key is not None and key.inert:
        return "exact", None, f"DeepSpeed ignores it ({key.doc or 'inert'}), and so does the Trainer's FSDP2"
    row = row_for(key.renamed_to if key is not None and key.renamed_to else pointer)
    if row is None:
        return "dropped", None, "not a DeepSpeed key: DeepSpeed ignores it (see DS101)"
    if value in row.off and not (isinstance(value, bool) and not any(isinstance(o, bool) for o in row.off)):
        return "exact", None, "off in both"
    return "dropped", None, row.reason or "DeepSpeed's own setting: the Trainer's FSDP2 has no counterpart"


def _value(data: dict, pointer: str) -> Any:
    from shardshift.source import MISSING, value_at

    found = value_at(data, pointer)
    return None if found is MISSING else found


def _number(value: int | float) -> str:
    return repr(value) if isinstance(value, int) else f"{value:g}" if abs(value) >= 1e-4 or value == 0 else repr(value)


# --- the script ---------------------------------------------------------------------------------------


class _ScriptRewrite:
    """The launch line of one script, rewritten word by word at the places the grammar found."""

    def __init__(self, script: Document, flag, target: str = "trainer-fsdp2") -> None:
        from shardshift.formats.megatron.shell_lexer import _Lexer

        self.target = target
        self.script, self.text = script, script.text
        self.launch = script.data.launch
        self.entries: list[MappingEntry] = []
        self.entry_sources: set[str] = set()
        self.replaced: dict[str, tuple[str, str, str | None]] = {}  # flag -> (as given, new value, ds pointer)
        self.fsdp = "full_shard auto_wrap"
        self.lexer = lexer = _Lexer(script.text)
        lexer.run()
        line, column = self.launch.line, self.launch.column
        start = lexer.starts[line - 1] + column - 1 if 1 <= line <= len(lexer.starts) else -1
        self.words = _command_words(lexer.tokens, start)
        if not self.words:
            raise ShardshiftError(f"{script.path}:{self.launch.line}:{self.launch.column}: the launch is built in a "
                                  "string or a variable at run time: its words cannot be rewritten in place")
        self.edits: list[tuple[int, int, str]] = []
        self.added: list[str] = []
        self.flag = flag

    # the Trainer flags of the launch, as words: flag -> (index of the flag word, index of its value or None)
    def _flag_words(self, name: str) -> tuple[int, int | None] | None:
        for index, (_, _, raw) in enumerate(self.words):
            if raw == name:
                following = self.words[index + 1][2] if index + 1 < len(self.words) else None
                return index, (index + 1 if following is not None and not following.startswith("--") else None)
            if raw.startswith(name + "="):
                return index, index
        return None

    def ensure(self, name: str, value: str, entry, pointer: str | None, reason: str, *, status: str = "exact",
               replace: bool = False) -> None:
        """The Trainer flag `name` set to `value`: kept when the script gives the same, its value replaced
        (`replace`: a value DeepSpeed overrode), else added after --fsdp_config."""
        found = self._flag_words(name)
        shown = f"{name} {value}"
        if found is not None:
            flag_index, value_index = found
            raw = self.words[value_index][2] if value_index is not None else ""
            # a switch given alone (`--bf16`) is True, as HfArgumentParser reads it
            given = raw.split("=", 1)[1] if value_index == flag_index else raw if value_index is not None else "True"
            if _same_value(given, value):
                if entry is not None:
                    entry(pointer, "exact" if status == "exact" else status, name,
                          f"the script's {name} {given}, kept: {reason}" if reason else f"the script's {name}, kept")
                self.entry_sources.add(pointer or "")
                return
            if replace and value_index is not None:
                start, end, _ = self.words[value_index]
                text = f"{name}={value}" if value_index == flag_index else value
                self.edits.append((start, end, text))
                self.replaced[name] = (given, value, pointer)
                if entry is not None:
                    entry(pointer, status, name, f"{reason}; the script's {name} {given} becomes {value} "
                                                 "(under DeepSpeed it was not used)")
                self.entry_sources.add(pointer or "")
                return
            if entry is not None:
                entry(pointer, "approximate", name, f"the script's {name} {given} applies; the ds_config's {value} "
                                                    "disagreed, which the Trainer refuses under DeepSpeed")
            self.entry_sources.add(pointer or "")
            return
        self.added.append(shown)
        if entry is not None:
            entry(pointer, status, name, f"{reason}: {shown} added" if reason else f"{shown} added")
        self.entry_sources.add(pointer or "")

    def processes(self) -> int | None:
        """The processes the launch starts on its one node, when its options say (the deepspeed launcher's
        --num_gpus or --include localhost:..., torchrun's --nproc_per_node); None otherwise."""
        options = self.launch.options if isinstance(self.launch.options, dict) else {}
        if self.launch.launcher == "deepspeed":
            nodes = options.get("num_nodes")
            if nodes not in (None, "1", 1) or options.get("hostfile") or options.get("H"):
                return None
            include = options.get("include") or options.get("i")
            if isinstance(include, str):
                host, _, devices = include.strip("'\"").partition(":")
                return len(devices.split(",")) if host in ("localhost", "127.0.0.1") and \
                    re.fullmatch(r"\d+(,\d+)*", devices) else None
            gpus = options.get("num_gpus") or options.get("num_gpus_per_node")
        else:
            if options.get("nnodes") not in (None, "1", 1):
                return None
            gpus = options.get("nproc_per_node") or options.get("nproc-per-node")
        return int(gpus) if isinstance(gpus, (str, int)) and str(gpus).isdigit() and int(gpus) > 0 else None

    def finish(self, config_path: str) -> None:
        launch = self.launch
        found = self._flag_words("--deepspeed")
        if found is None:
            raise ShardshiftError(f"{self.script.path}:{self.flag.line}:{self.flag.column}: --deepspeed is built at "
                                  "run time: it cannot be rewritten in place")
        flag_index, value_index = found
        raw = self.words[value_index][2] if value_index is not None else ""
        raw_value = raw.split("=", 1)[1] if value_index == flag_index else raw
        written = _config_word(raw_value, self.flag.value, config_path)
        end_index = value_index if value_index is not None else flag_index
        if self.target == "accelerate-fsdp2":
            self._accelerate_launcher(written)
            replacement = " ".join(self.added)  # --deepspeed leaves: the config goes to accelerate launch
            self.entries.insert(0, MappingEntry(self.flag.flag, self.flag.line, self.flag.column, "exact", None,
                                                f"removed: the ds_config's settings move to "
                                                f"{os.path.basename(config_path)} (accelerate launch --config_file) "
                                                "and the Trainer's flags (each reported)"))
        else:
            self._launcher()
            replacement = " ".join([f'--fsdp "{self.fsdp}"', f"--fsdp_config {written}", *self.added])
            self.entries.insert(0, MappingEntry(self.flag.flag, self.flag.line, self.flag.column, "exact",
                                                f"--fsdp_config {written}",
                                                f"the ds_config's settings move to {os.path.basename(config_path)} "
                                                "and the Trainer's flags (each reported)"))
        end = self.words[end_index][1]
        if not replacement and end_index + 1 < len(self.words):
            end = self.words[end_index + 1][0]  # nothing in its place: the words up to the next flag go too
        self.edits.append((self.words[flag_index][0], end, replacement))
        for arg in launch.args:  # every other flag the script gives the Trainer
            if not arg.flag or arg.flag == "--deepspeed":
                continue
            if arg.flag in self.replaced:
                given, value, pointer = self.replaced[arg.flag]
                self.entries.append(MappingEntry(arg.flag, arg.line, arg.column, "approximate", arg.flag,
                                                 f"{given} becomes {value}: under DeepSpeed the ds_config's {pointer} "
                                                 f"decided it, not this flag"))
            else:
                self.entries.append(MappingEntry(arg.flag, arg.line, arg.column, "exact", arg.flag,
                                                 "kept in the script: the Trainer reads it under FSDP2 as it did under "
                                                 "DeepSpeed"))
        for other in self.script.data.launches:  # another launch of the script that also runs DeepSpeed
            if other is not launch and any(a.flag in ("--deepspeed", "--deepspeed_config") for a in other.args):
                self.entries.append(MappingEntry(other.launcher, other.line, other.column, "unknown", None,
                                                 "another launch in this script also runs DeepSpeed: only the launch "
                                                 f"at line {launch.line} is migrated"))
        text = self.text
        for start, end, new in sorted(self.edits, reverse=True):
            text = text[:start] + new + text[end:]
        self.text = text

    def finish_own_loop(self, output: str) -> None:
        """The launch of a DeepSpeed script for `fsdp2` (torchrun; DeepSpeed's own flags leave, the script and
        its other flags stay) or `torchtitan` (torchrun runs torchtitan's trainer with the TOML `output`)."""
        launch = self.launch
        self._launcher()
        name = os.path.basename(output)
        if self.target == "fsdp2":
            removed: set[int] = set()
            for arg in launch.args:
                if not arg.flag:
                    continue
                if arg.flag not in _DEEPSPEED_SCRIPT_FLAGS:
                    self.entries.append(MappingEntry(arg.flag, arg.line, arg.column, "exact", arg.flag,
                                                     "kept in the script: it reads it as before"))
                    continue
                found = self._flag_words(arg.flag)
                if found is None:
                    self.entries.append(MappingEntry(arg.flag, arg.line, arg.column, "unknown", None,
                                                     "built at run time: left in the launch; remove it once the script "
                                                     "no longer calls deepspeed.add_config_arguments"))
                    continue
                flag_index, value_index = found
                last = flag_index if arg.value is True or value_index is None else value_index
                removed.update(range(flag_index, last + 1))
                self.entries.append(MappingEntry(arg.flag, arg.line, arg.column, "exact", None,
                                                 f"removed: DeepSpeed's own flag (deepspeed.add_config_arguments); the "
                                                 f"ds_config's settings move to {name}, each reported"))
            self._remove_words(removed)
        else:
            index = self._entry_index()
            if index is None:
                raise ShardshiftError(f"{self.script.path}:{launch.line}:{launch.column}: no entry script after the "
                                      f"{launch.launcher} launcher's options")
            found = self._flag_words(self.flag.flag)
            raw = self.words[found[1]][2] if found is not None and found[1] is not None else self.flag.value
            raw_value = raw.split("=", 1)[1] if found is not None and found[1] == found[0] else raw
            word = _config_word(raw_value, self.flag.value, output)
            replacement = f"-m torchtitan.train --job.config_file {word}"
            self.edits.append((self.words[index][0], self.words[-1][1], replacement))
            entry = launch.script if isinstance(launch.script, str) else "the entry script"
            self.entries.append(MappingEntry(str(entry), launch.line, launch.column, "unknown", replacement,
                                             f"{entry} and its own training loop give way to torchtitan's trainer, "
                                             "which builds its model from the TOML's [model] (fill in a model "
                                             "torchtitan knows) and its data from [training]"))
            for arg in launch.args:
                if arg.flag:
                    self.entries.append(MappingEntry(arg.flag, arg.line, arg.column, "dropped", None,
                                                     f"a flag of {entry}, which torchtitan's trainer does not run"
                                                     + (f"; the ds_config's settings move to {name}, each reported"
                                                        if arg.flag in _DEEPSPEED_SCRIPT_FLAGS else "")))
        text = self.text
        for start, end, new in sorted(self.edits, reverse=True):
            text = text[:start] + new + text[end:]
        self.text = text

    def _remove_words(self, indices: set[int]) -> None:
        """Remove the words at `indices`: each run of them with the blanks (and line continuations) up to the
        next word, or, for a run that ends the command, back to the word before it."""
        run: list[int] = []
        for index in sorted(indices) + [-1]:
            if run and index != run[-1] + 1:
                first, last = run[0], run[-1]
                if last + 1 < len(self.words):
                    self.edits.append((self.words[first][0], self.words[last + 1][0], ""))
                else:
                    self.edits.append((self.words[first - 1][1], self.words[last][1], ""))
                run = []
            run.append(index)

    def _entry_index(self) -> int | None:
        """The index of the entry script's word: the first after the launcher's options."""
        from shardshift.formats.megatron.shell_launch import DEEPSPEED_VALUED

        launch = self.launch
        start = 0
        if launch.launcher.startswith("python"):
            start = next((i for i, w in enumerate(self.words) if w[2] in ("torch.distributed.run",
                                                                           "torch.distributed.launch")), 0)
        index = start + 1
        while index < len(self.words):
            raw = self.words[index][2]
            if not raw.startswith("-"):
                return index
            name = raw.lstrip("-").split("=", 1)[0]
            if launch.launcher == "deepspeed":
                takes_value = "=" not in raw and name in DEEPSPEED_VALUED
            else:
                takes_value = "=" not in raw and name not in ("standalone", "module", "m", "no_python", "no-python",
                                                              "no_local_rank", "no-local-rank")
            index += 2 if takes_value else 1
        return None

    def _accelerate_launcher(self, config_word: str) -> None:
        """The deepspeed launcher or torchrun, with their options, becomes `accelerate launch --config_file
        X --num_processes N`: one node with the same processes; several nodes leave the machine rank and
        the first machine's address to fill in."""
        launch = self.launch
        if launch.launcher not in ("deepspeed", *_LAUNCHER_KEPT):
            self.entries.append(MappingEntry(launch.launcher, launch.line, launch.column, "unknown", None,
                                             f"the script starts the training with {launch.launcher}: start it with "
                                             f"accelerate launch --config_file {config_word} (the launch is left as "
                                             "it is)"))
            return
        # the launcher's words: up to the entry script (a `python -m torch.distributed.run` prefix included)
        start = 0
        if launch.launcher.startswith("python"):
            start = next((i for i, w in enumerate(self.words) if w[2] in ("torch.distributed.run",
                                                                           "torch.distributed.launch")), 0)
        index = start + 1
        seen: list[tuple[str, int]] = []
        while index < len(self.words):
            raw = self.words[index][2]
            if not raw.startswith("-"):
                break
            name = raw.lstrip("-").split("=", 1)[0]
            seen.append((name, index))
            takes_value = "=" not in raw and name not in ("standalone", "module", "m", "no_python", "no-python",
                                                          "no_local_rank", "bind_cores_to_rank", "autotuning")
            index += 2 if takes_value and index + 1 < len(self.words) else 1
        if index >= len(self.words):
            raise ShardshiftError(f"{self.script.path}:{launch.line}:{launch.column}: no entry script after the "
                                  f"{launch.launcher} launcher's options")
        options = launch.options if isinstance(launch.options, dict) else {}
        words = ["accelerate", "launch", "--config_file", config_word]
        processes = self.processes()
        status, why = "exact", []
        prefix = ""
        include = options.get("include") or options.get("i")
        if processes is not None:
            words += ["--num_processes", str(processes)]
            why.append(f"{processes} processes on one node, as the launch started")
            if isinstance(include, str):
                prefix = f"env CUDA_VISIBLE_DEVICES={include.strip(chr(39) + chr(34)).partition(':')[2]} "
                why.append("the same GPUs through CUDA_VISIBLE_DEVICES")
        else:
            status = "unknown"
            words += ["--num_processes", "FILL_IN"]
            why.append("the launch does not say how many processes (every GPU, or several nodes): fill in the total "
                       "number of processes; on several nodes also --num_machines, --machine_rank and "
                       "--main_process_ip, one launch per node")
        port = options.get("master_port") or options.get("master-port")
        if isinstance(port, str):
            words += ["--main_process_port", port]
        if options.get("module") or options.get("m"):
            words.append("-m")
        carried = {"num_gpus", "num_gpus_per_node", "include", "i", "master_port", "master-port", "module", "m",
                   "nproc_per_node", "nproc-per-node", "standalone", "num_nodes", "nnodes"}
        for name, at in seen:
            if name not in carried:
                line_at, column_at = self.lexer.pos(self.words[at][0])
                self.entries.append(MappingEntry(f"--{name}", line_at, column_at, "dropped", None,
                                                 f"a {launch.launcher} option with no accelerate launch counterpart"))
        self.edits.append((self.words[0][0], self.words[index - 1][1], prefix + " ".join(words)))
        self.entries.append(MappingEntry(launch.launcher, launch.line, launch.column, status,
                                         prefix + " ".join(words), "; ".join(why) + "; the Trainer builds its "
                                         "Accelerator from the environment accelerate launch exports"))

    def _launcher(self) -> None:
        from shardshift.formats.megatron.shell_launch import DEEPSPEED_VALUED

        launch = self.launch
        if launch.launcher in _LAUNCHER_KEPT:
            self.entries.append(MappingEntry(launch.launcher, launch.line, launch.column, "exact", launch.launcher,
                                             "kept: the Trainer runs FSDP2 under torchrun"))
            return
        if launch.launcher != "deepspeed":
            self.entries.append(MappingEntry(launch.launcher, launch.line, launch.column, "unknown", None,
                                             f"the script starts the training with {launch.launcher}; FSDP2 needs "
                                             "one process per GPU (torchrun): the launch is left as it is"))
            return
        options, index = {}, 1
        while index < len(self.words):
            raw = self.words[index][2]
            if not raw.startswith("-"):
                break
            name = raw.lstrip("-").split("=", 1)[0]
            if "=" in raw:
                options[name] = (raw.split("=", 1)[1], index)
                index += 1
            elif name in DEEPSPEED_VALUED and index + 1 < len(self.words):
                options[name] = (self.words[index + 1][2], index)
                index += 2
            else:
                options[name] = (True, index)
                index += 1
        if index >= len(self.words):
            raise ShardshiftError(f"{self.script.path}:{launch.line}:{launch.column}: no entry script after the "
                                  "deepspeed launcher's options")
        words = ["torchrun"]
        prefix = ""
        status, why = "exact", []
        gpus = options.pop("num_gpus", None) or options.pop("num_gpus_per_node", None)
        include = options.pop("include", None) or options.pop("i", None)
        if include is not None:
            hosts = str(include[0]).strip("'\"").split("@")
            host, _, devices = hosts[0].partition(":")
            if len(hosts) == 1 and host in ("localhost", "127.0.0.1") and re.fullmatch(r"\d+(,\d+)*", devices):
                prefix = f"env CUDA_VISIBLE_DEVICES={devices} "
                words.append(f"--nproc_per_node={len(devices.split(','))}")
                why.append(f"--include {include[0]}: the same GPUs through CUDA_VISIBLE_DEVICES")
            else:
                words.append("--nproc_per_node=FILL_IN")
                status = "unknown"
                why.append(f"--include {include[0]}: hosts or devices torchrun cannot select: fill in the processes")
        elif gpus is not None:
            words.append(f"--nproc_per_node={gpus[0]}")
            why.append(f"--num_gpus {gpus[0]} processes per node")
        else:
            words.append("--nproc_per_node=gpu")
            why.append("every GPU of the node, as the deepspeed launcher starts without --num_gpus")
        nodes = options.pop("num_nodes", None)
        hostfile = options.pop("hostfile", None) or options.pop("H", None)
        if nodes is not None and nodes[0] != "1" or hostfile is not None:
            count = nodes[0] if nodes is not None else "FILL_IN"
            words += [f"--nnodes={count}", "--node_rank=FILL_IN"]
            if "master_addr" not in options:
                words.append("--master_addr=FILL_IN")
            status = "unknown"
            why.append("several nodes: the deepspeed launcher starts the others over ssh from its hostfile, torchrun "
                       "runs once on each node: fill in each node's rank and the first node's address")
        elif nodes is not None:
            why.append("--num_nodes 1: one node")
        for name in ("master_port", "master_addr"):
            given = options.pop(name, None)
            if given is not None:
                words.append(f"--{name}={given[0]}")
        if options.pop("module", None) or options.pop("m", None):
            words.append("--module")
        for name, (value, at) in options.items():
            line_at, column_at = self.lexer.pos(self.words[at][0])
            self.entries.append(MappingEntry(f"--{name}", line_at, column_at, "dropped", None,
                                             "a deepspeed launcher option with no torchrun counterpart"))
        self.edits.append((self.words[0][0], self.words[index - 1][1] if index > 1 else self.words[0][1],
                           prefix + " ".join(words)))
        self.entries.append(MappingEntry("deepspeed", launch.line, launch.column, status, prefix + " ".join(words),
                                         "; ".join(why)))


def _same_value(given: str, value: str) -> bool:
    given, value = given.strip("'\""), value.strip("'\"")
    if given == value:
        return True
    try:
        return float(given) == float(value)
    except ValueError:
        return given.lower() in ("true", "1", "yes") and value.lower() in ("true", "1", "yes")


def _config_word(raw: str, expanded: str, config_path: str) -> str:
    """The --fsdp_config word, written as --deepspeed's was: the same folder and quotes, the new name."""
    quote = raw[0] if raw[:1] in ("'", '"') and raw.endswith(raw[0]) and len(raw) > 1 else ""
    inner = raw[1:-1] if quote else raw
    head, _, tail = inner.rpartition("/")
    name = os.path.basename(config_path)
    if "$" not in tail and "`" not in tail and "\\" not in tail:
        return f"{quote}{head + '/' if head or inner.startswith('/') else ''}{name}{quote}"
    # the file name comes from a variable: the path it expands to, written out
    folder = os.path.dirname(expanded)
    return _quoted(os.path.join(folder, name) if folder else name)


def _quoted(text: str) -> str:
    return text if re.fullmatch(r"[\w./@%+=:,-]+", text) else "'" + text.replace("'", "'\\''") + "'"


def _command_words(tokens: list, start: int) -> list[tuple[int, int, str]]:
    """The words of the simple command whose first word (after assignments) starts at `start`:
    (start, end, raw text), up to the first operator or newline."""
    for index, token in enumerate(tokens):
        if token[0] == "WORD" and token[2] == start:
            words = []
            for kind, raw, offset in tokens[index:]:
                if kind != "WORD":
                    break
                words.append((offset, offset + len(raw), raw))
            return words
    return []


def _read(path: str) -> str | None:
    from shardshift.files import read_text

    return read_text(path, errors="strict") if os.path.isfile(path) else None

