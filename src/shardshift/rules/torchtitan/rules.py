"""torchtitan rules (TT001-TT099 for keys and values, TT101- for the setup they form).

Each rule restates what torchtitan v0.2.2 (the last release that reads a TOML config) does with the
file: `ConfigManager` (torchtitan/config/manager.py) builds `JobConfig` from the TOML with
`_dict_to_dataclass`, which raises `ValueError: Invalid field names in <class> data: {...}` for a
key the section's dataclass does not have, and passes every value through unchecked (tyro only
warns when a value does not match its annotation); `ParallelDims` (torchtitan/distributed/
parallel_dims.py) resolves a shard degree of -1 and asserts the product of the degrees;
`maybe_enable_amp` (torchtitan/distributed/utils.py) decides where mixed precision happens.
tests/test_torchtitan_oracle.py confirms the config manager's behaviour with torchtitan 0.2.2.

A file that names `job.custom_config_module` (or the older `experimental.custom_args_module`)
extends the schema with user code, and a repository that holds its own torchtitan copy runs that
copy: formats/torchtitan/extension.py reads the module's or the copy's dataclasses statically and
the key rules judge the file with that table; a module or copy that is not in the checked tree
turns their findings into infos with an UnknownContext.
"""

from __future__ import annotations

import os
from typing import Any, Iterable

from shardshift.formats.torchtitan.keys import CLASSES, SCHEMA
from shardshift.plan import known
from shardshift.rules.base import Context, Finding, Rule, clear_match, did_you_mean
from shardshift.source import join_pointer

# (section, key as written) -> (where it lives in v0.2.2 or None when removed, what happened)
RENAMED: dict[tuple[str, str], tuple[str | None, str]] = {
    ("training", "batch_size"): ("training.local_batch_size", "renamed in 2025-06 (PR #1238)"),
    ("training", "data_parallel_degree"): ("parallelism.data_parallel_shard_degree",
                                           "split into replicate and shard degrees, then moved to [parallelism]"),
    ("training", "data_parallel_shard_degree"): ("parallelism.data_parallel_shard_degree",
                                                 "moved to [parallelism] in 2025-04 (PR #767)"),
    ("training", "data_parallel_replicate_degree"): ("parallelism.data_parallel_replicate_degree",
                                                     "moved to [parallelism] in 2025-04 (PR #767)"),
    ("training", "tensor_parallel_degree"): ("parallelism.tensor_parallel_degree",
                                             "moved to [parallelism] in 2025-04 (PR #767)"),
    ("training", "pipeline_parallel_degree"): ("parallelism.pipeline_parallel_degree",
                                               "moved to [parallelism] in 2025-04 (PR #767)"),
    ("training", "enable_async_tensor_parallel"): ("parallelism.enable_async_tensor_parallel",
                                                   "moved to [parallelism] in 2025-04 (PR #767)"),
    ("experimental", "pipeline_parallel_degree"): ("parallelism.pipeline_parallel_degree",
                                                   "moved to [parallelism] in 2025-04 (PR #767)"),
    ("experimental", "context_parallel_degree"): ("parallelism.context_parallel_degree",
                                                  "moved to [parallelism] in 2025-04 (PR #767)"),
    ("experimental", "enable_async_tensor_parallel"): ("parallelism.enable_async_tensor_parallel",
                                                       "moved to [parallelism] in 2025-04 (PR #767)"),
    ("training", "warmup_steps"): ("lr_scheduler.warmup_steps", "moved to [lr_scheduler]"),
    ("training", "compile"): ("compile.enable", "became the [compile] section in v0.2"),
    ("training", "fp8_linear"): ("model.converters", 'float8 is a model converter: converters = ["quantize.linear.float8"]'),
    ("checkpoint", "enable_checkpoint"): ("checkpoint.enable", "renamed in v0.2"),
    ("checkpoint", "model_weights_only"): ("checkpoint.last_save_model_only", "replaced in v0.1"),
    ("lr_scheduler", "lr_min"): ("lr_scheduler.min_lr_factor", "renamed after v0.1 (a factor of lr)"),
    ("", "float8"): ("quantize.linear.float8", 'became [quantize.linear.float8], activated by '
                     'model.converters = ["quantize.linear.float8"]'),
    ("model", "norm_type"): (None, "removed: the norm is part of the model flavor"),
    ("checkpoint", "interval_type"): (None, "removed: checkpoint.interval counts steps"),
}
# Accepted by v0.2.2 with a warning, then copied to the new key (ConfigManager._validate_config).
DEPRECATED: dict[tuple[str, str], str] = {
    ("model", "tokenizer_path"): "model.hf_assets_path",
    ("experimental", "custom_args_module"): "job.custom_config_module",
}
FLOAT8_V01 = "float8"
CONVERTERS_V02 = ("quantize.linear.float8", "quantize.grouped_mm.float8", "quantize.linear.mx", "quantize.grouped_mm.mx")


def _tables() -> set[str]:
    """Every dotted section name that is a table in the schema (with its parents: quantize, quantize.linear)."""
    names = set(SCHEMA)
    for name in SCHEMA:
        parts = name.split(".")
        names.update(".".join(parts[:i]) for i in range(1, len(parts)))
    return names


TABLES = _tables()


def _pointer(section: str, key: str) -> str:
    pointer = ""
    for part in [*(section.split(".") if section else []), key]:
        pointer = join_pointer(pointer, part)
    return pointer


def _table(document, context: Context):
    """The key table that judges this file: torchtitan v0.2.2's, a vendored copy's, plus a custom
    config module's (formats/torchtitan/extension.py)."""
    from shardshift.formats.torchtitan.extension import table_for

    return table_for(document.path, document.data, "torchtitan" in context.release_overrides)


def _walk(data: dict, section: str = "", tables: set[str] | None = None) -> Iterable[tuple[str, str, Any]]:
    """(section, key, value) of every key, descending into the tables the schema has."""
    tables = TABLES if tables is None else tables
    for key, value in data.items():
        dotted = f"{section}.{key}" if section else key
        if isinstance(value, dict) and dotted in tables:
            yield from _walk(value, dotted, tables)
        else:
            yield section, key, value


class _TitanRule(Rule):
    formats = ("torchtitan",)


class UnknownKey(_TitanRule):
    """A key or section torchtitan does not have.

    ## What it does
    Checks every section and key against torchtitan v0.2.2's `JobConfig` (the last release that
    reads a TOML), and names the key you probably meant. Keys that moved or were removed in an
    earlier release are TT003 instead. A custom config module (`job.custom_config_module`)
    found in the repository adds its `JobConfig` dataclass's sections and keys; a repository
    that holds its own torchtitan copy (`torchtitan/config/job_config.py`, or the older
    `torchtitan/config_manager.py`) is judged by that copy's dataclasses (a copy whose config
    manager drops unknown keys silently gets a warning). A module or copy that is not in the
    checked tree makes the findings infos that say so.

    ## Why is this bad
    torchtitan's `ConfigManager` refuses the whole file at start-up:
    `ValueError: Invalid field names in <class 'torchtitan.config.job_config.Parallelism'> data:
    {'tensor_paralel_degree'}`.

    ## Example
    ```toml
    [parallelism]
    tensor_paralel_degree = 8
    ```

    ## Use instead
    ```toml
    [parallelism]
    tensor_parallel_degree = 8
    ```
    """

    code = "TT001"
    name = "unknown-key"
    severity = "error"

    def check(self, document, context: Context) -> Iterable[Finding]:
        data = document.data
        if not isinstance(data, dict):
            return
        table = _table(document, context)
        if table.unknown_keys == "open":
            return  # an argparse-era copy reads the TOML as a plain dict: the program decides which keys it reads
        tables = table.tables
        for section, key, _ in _walk(data, "", tables):
            if table.upstream and ((section, key) in RENAMED or (section, key) in DEPRECATED):
                continue
            pointer = _pointer(section, key)
            known_keys = _known_keys(section, table)
            if key in known_keys:
                continue
            where = f"[{section}]" if section else "the top level"
            kind = "key" if section else "section"
            cls = _class_name(section, table)
            guess = did_you_mean(key, known_keys)
            severity = None
            if table.missing is not None:
                unless = (f"unless the custom module {table.custom} adds it" if table.missing.kind == "extension"
                          else "unless the vendored copy this file belongs to has it")
                message = (f"{kind} {key!r} in {where} is not in torchtitan v0.2.2's schema; {unless}, torchtitan's "
                           f"ConfigManager refuses the file at start-up (ValueError: Invalid field names in {cls} "
                           f"data: {{{key!r}}})")
            elif table.upstream or table.unknown_keys == "refuse":
                who = "torchtitan's ConfigManager" if table.upstream else f"the vendored torchtitan copy ({_shown_path(table.copy)})"
                message = (f"unknown {kind} {key!r} in {where}: {who} refuses the file at start-up "
                           f"(ValueError: Invalid field names in {cls} data: {{{key!r}}})")
            elif table.unknown_keys == "drop":
                severity = "warning"
                message = (f"unknown {kind} {key!r} in {where}: the vendored torchtitan copy "
                           f"({_shown_path(table.copy)}) has no such field in {cls} and its ConfigManager drops the "
                           "key silently, so the setting never takes effect")
            else:
                severity = "warning"
                message = (f"unknown {kind} {key!r} in {where}: the vendored torchtitan copy "
                           f"({_shown_path(table.copy)}) has no such field in {cls} (its config manager is not in the "
                           "checked tree: it refuses the file or drops the key)")
            fix = clear_match(key, known_keys)
            if guess:
                message += f"; did you mean {guess!r}?"
            yield self.finding(document, pointer, message, key=True, fix=fix, severity=severity,
                               fix_kind="rename-key" if fix else None, unknown_context=table.missing)


def _flat(what: str) -> str:
    """`renamed in 2025-06 (PR #1238)` -> `renamed in 2025-06, PR #1238` (to sit inside parentheses)."""
    return what.replace(" (PR #", ", PR #")[:-1] if " (PR #" in what and what.endswith(")") else what


def _shown_path(path: str | None) -> str:
    """The copy's config module as a repository path (torchtitan/config/job_config.py)."""
    if not path:
        return "?"
    parts = path.split("/")
    index = max((i for i, p in enumerate(parts) if p == "torchtitan"), default=len(parts) - 1)
    return "/".join(parts[index:])


def _known_keys(section: str, table=None) -> list[str]:
    """The keys and sub-tables the dataclass of `section` has."""
    schema, all_tables = (SCHEMA, TABLES) if table is None else (table.schema, table.tables)
    prefix = f"{section}." if section else ""
    tables = [t[len(prefix):] for t in all_tables if t.startswith(prefix) and "." not in t[len(prefix):]]
    return [*schema.get(section, {}), *tables]


def _class_name(section: str, table=None) -> str:
    if table is not None:
        return f"<class '{table.classes.get(section, '?')}'>"
    return f"<class 'torchtitan.config.job_config.{CLASSES.get(section, '?')}'>"


class WrongValue(_TitanRule):
    """A value of the wrong type, or not one of the choices torchtitan has.

    ## What it does
    Checks every value against the annotation of its field in torchtitan v0.2.2's `JobConfig`:
    ints where an int goes (a float such as `2.0` is not one), numbers for floats, booleans, strings,
    lists, and the choices of a `Literal` field (`activation_checkpoint.mode`, `training.dtype`,
    `parallelism.fsdp_reshard_after_forward`, ...).

    ## Why is this bad
    torchtitan's `ConfigManager` does not check or convert TOML values: the value reaches the
    training code as written (tyro only prints a UserWarning), and fails or misbehaves there,
    after the job has started — a string degree `"2"` breaks the mesh arithmetic, a mode
    `"partial"` is neither full nor selective.

    ## Example
    ```toml
    [activation_checkpoint]
    mode = "partial"
    ```

    ## Use instead
    ```toml
    [activation_checkpoint]
    mode = "selective"
    ```
    """

    code = "TT002"
    name = "wrong-value-type"
    severity = "error"

    def check(self, document, context: Context) -> Iterable[Finding]:
        data = document.data
        if not isinstance(data, dict):
            return
        table = _table(document, context)
        for section, key, value in _walk(data, "", table.tables):
            annotation = table.schema.get(section, {}).get(key, (None,))[0]
            if annotation is None:
                continue
            problem = _type_problem(annotation, value)
            if problem:
                yield self.finding(document, _pointer(section, key),
                                   f"{section}.{key} = {_shown(value)} {problem}; torchtitan's ConfigManager passes "
                                   f"TOML values through unchecked, so this fails or misbehaves only once training runs")


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return repr(value)


def _type_problem(annotation: str, value: Any) -> str | None:
    """Why `value` does not fit `annotation` (as keys.py spells it), or None."""
    options = [a.strip() for a in annotation.split("|")] if not annotation.startswith(("Literal", "Optional")) else [annotation]
    if annotation.startswith("Optional["):
        options = [annotation[len("Optional["):-1], "None"]
    problems = []
    for option in options:
        if option.startswith("Literal["):
            choices = [c.strip().strip("'") for c in option[len("Literal["):-1].split(",")]
            if isinstance(value, str) and value in choices:
                return None
            problems.append("is not one of " + ", ".join(f'"{c}"' for c in choices))
            continue
        if option == "None":
            continue  # TOML has no null
        check = {
            "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
            "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
            "bool": lambda v: isinstance(v, bool),
            "str": lambda v: isinstance(v, str),
            "list[str]": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
            "list[list[str]]": lambda v: isinstance(v, list) and all(
                isinstance(x, list) and all(isinstance(y, str) for y in x) for x in v),
        }.get(option)
        if check is None or check(value):
            return None
        problems.append(f"is not {'an' if option[0] in 'aeiou' else 'a'} {option}")
    return " and ".join(problems[:1]) if len(problems) == 1 else f"is not {annotation}"


class RenamedKey(_TitanRule):
    """A key from an older torchtitan that moved, was renamed or was removed.

    ## What it does
    Reports the keys of the layouts before v0.2 (degrees under `[training]` and `[experimental]`,
    `batch_size`, `[float8]`, `checkpoint.enable_checkpoint`, ...) with their v0.2.2 place, the
    deprecated `model.tokenizer_path` and `experimental.custom_args_module`, and the converter name
    `"float8"` in a v0.2 file.

    The release that runs the file judges (`--torchtitan-version`, else the repository's pin,
    else the newest): a key that release still reads is not reported, torchtitan 0.1.0 drops an
    unread key silently (a warning), and from 0.2.0 an unread key is refused (an error); a pin
    older or newer than the releases of the table (rules/torchtitan/releases.py, 0.1.0 to 0.2.2)
    is an info that says so.

    ## Why is this bad
    torchtitan v0.2.2 refuses a moved or removed key at start-up (`ValueError: Invalid field
    names`). The deprecated keys still work with a warning. `"float8"` is not a registered
    converter in v0.2 (the registered names are "quantize.linear.float8",
    "quantize.grouped_mm.float8", "quantize.linear.mx", "quantize.grouped_mm.mx"): the config
    loads, and the job fails after start-up when `ModelConvertersContainer` looks the name up in
    its registry (`KeyError: 'float8'`, torchtitan/protocols/model_converter.py).

    ## Example
    ```toml
    [training]
    tensor_parallel_degree = 8
    ```

    ## Use instead
    ```toml
    [parallelism]
    tensor_parallel_degree = 8
    ```
    """

    code = "TT003"
    # deprecated, renamed or removed: what an older release reads, a newer one refuses
    release_agreement = False
    name = "renamed-or-removed-key"
    severity = "error"

    def check(self, document, context: Context) -> Iterable[Finding]:
        from shardshift.rules.torchtitan import releases

        data = document.data
        if not isinstance(data, dict):
            return
        table = _table(document, context)
        if not table.upstream:
            return  # a vendored copy judges the file (TT001 with its own table), not torchtitan's history
        release = context.release("torchtitan", document.path)
        version = releases.used(release)
        judge = releases.judged_by(release)
        for section, key, _ in _walk(data, "", table.tables):
            pointer = _pointer(section, key)
            name = f"{section}.{key}" if section else f"[{key}]"
            if (section, key) in table.custom_keys:
                continue  # the custom config module defines it
            if (section, key) in RENAMED and table.missing is not None:
                target, what = RENAMED[(section, key)]
                unless = (f"unless the custom module {table.custom} defines it" if table.missing.kind == "extension"
                          else "unless the vendored copy this file belongs to still has it")
                yield self.finding(document, pointer, f"{name} is not a key of torchtitan v0.2.2 "
                                   f"({'now ' + target + ', ' if target else ''}{_flat(what)}); {unless}, torchtitan refuses "
                                   "it at start-up (Invalid field names)", key=True, unknown_context=table.missing)
            elif (section, key) in RENAMED:
                yield from self._renamed(document, pointer, name, RENAMED[(section, key)],
                                         releases.KEYS.get((section, key)), release, version, judge)
            elif (section, key) in DEPRECATED:
                since, _source = releases.DEPRECATED_FROM.get((section, key), (releases.OLDEST, ""))
                if releases.covered(release) and version < since:
                    continue  # before `since` it is the key itself
                to = DEPRECATED[(section, key)]
                said = (f"{judge} warns and copies it to {to}" if release.pinned else
                        f"from torchtitan {releases.text(since)} torchtitan warns and copies it to {to} (judged by {judge})")
                missing = table.missing if table.missing is not None and table.missing.kind == "release" else None
                if missing is None and not releases.covered(release):
                    missing = releases.uncovered(release)
                yield self.finding(document, pointer, f"{name} is deprecated: {said}; use that key", key=True,
                                   severity="warning", unknown_context=missing)
        if releases.covered(release) and version < releases.CONVERTER_RENAMED_IN:
            return  # "float8" is the registered converter name before 0.2.0
        converters = data.get("model", {}).get("converters") if isinstance(data.get("model"), dict) else None
        if isinstance(converters, list) and (isinstance(data.get("quantize"), dict) or isinstance(data.get("compile"), dict)):
            for index, name in enumerate(converters):
                if name == FLOAT8_V01:
                    yield self.finding(document, f"/model/converters/{index}",
                                       'converter "float8" is the v0.1 name; this file has the v0.2 layout ([quantize] / '
                                       '[compile]), whose registered converters are ' + ", ".join(CONVERTERS_V02)
                                       + ": the config loads, then building the model converters fails with "
                                       "KeyError: 'float8'; use \"quantize.linear.float8\"",
                                       fix='"quantize.linear.float8"', unknown_context=table.missing
                                       if table.missing is not None and table.missing.kind == "release" else None)

    def _renamed(self, document, pointer, name, renamed, row, release, version, judge) -> Iterable[Finding]:
        """A key of an older layout, judged by the release that runs the file (rules/torchtitan/releases.py)."""
        from shardshift.rules.torchtitan import releases

        target, what = renamed
        what = what.replace(" (PR #", ", PR #").rstrip(")") if "(PR #" in what else what
        gone = f"; not read from torchtitan {releases.text(row.gone_in)}" if row is not None else ""
        said = f"{name} was {what}{gone}" if target is None else f"{name} is now {target} ({what}{gone})"
        if not releases.covered(release):
            yield self.finding(document, pointer, f"{said}; whether {release.text()} reads it is not known",
                               key=True, unknown_context=releases.uncovered(release))
            return
        if row is not None and row.read_until is not None and version <= row.read_until:
            return  # the release that runs the file reads the key
        if version < releases.STRICT_FROM:
            instead = f"write {row.then or target}" if row is not None and (row.then or target) else "remove it"
            yield self.finding(document, pointer, f"{name} is not a key of {judge}: its ConfigManager drops keys its "
                               f"dataclasses lack without a word, so the setting has no effect; {instead}",
                               key=True, severity="warning")
            return
        if release.pinned:
            refuses = f"{judge} refuses {name} at start-up (Invalid field names)"
        else:
            refuses = (f"from torchtitan {releases.text(releases.STRICT_FROM)} ConfigManager refuses {name} at "
                       f"start-up (Invalid field names; judged by {judge})")
        yield self.finding(document, pointer, f"{said}; {refuses}", key=True)


# --- the setup -------------------------------------------------------------------------------------


def _legacy(plan) -> bool:
    """Degrees taken from the layout before v0.2 ([training] / [experimental]): TT003 reports those;
    how the older releases resolved them is not judged here."""
    return any(w.pointer and not w.pointer.startswith("/parallelism/")
               for d, w in plan.provenance.items() if d.startswith("parallelism."))


def _current_layout(document):
    """(Plan, the `[training]` table) of a TOML in the v0.2 layout, or None (unreadable, or older: TT003's)."""
    plan, data = document.plan, document.data
    if plan is None or not isinstance(data, dict) or _legacy(plan):
        return None
    return plan, data.get("training") if isinstance(data.get("training"), dict) else {}


def _degree(plan, dotted: str) -> int | None:
    value = known(plan.get(dotted))
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def launched(document, context: Context):
    """The setup of a launch script that names this TOML (`--job.config_file`) and starts a known
    number of processes: (its merged Plan, with the command line's overrides, the world size, and
    where the script sets it), or None."""
    for setup in getattr(context, "setups", None) or ():
        referrer = setup.documents[0]
        if referrer is document or referrer.format != "launch" or document not in setup.documents[1:]:
            continue
        world = known(setup.plan.get("world.world_size"))
        if isinstance(world, int) and not isinstance(world, bool) and world > 0:
            return setup.plan, world, setup.plan.provenance.get("world.world_size")
    return None


def _place(rule, document, where, message: str):
    """A related place: in this TOML by its pointer, else (a command-line override) where it is."""
    from shardshift.rules.base import Related

    if where.file != document.path:
        return Related(where.file, where.line, where.column, where.pointer, message)
    return rule.related(document, where.pointer, message)


class LeftoverShardDegree(_TitanRule):
    """A shard degree of -1 that cannot take the ranks left over.

    ## What it does
    With the world size known (`--world-size`, `--nodes` × `--gpus-per-node`, or the processes
    a launch script that names this TOML starts: `torchrun --nproc_per_node=$NGPU -m
    torchtitan.train --job.config_file x.toml`, with its command-line overrides of the degrees),
    resolves `data_parallel_shard_degree = -1` (written, or torchtitan's default) the way
    torchtitan's `ParallelDims` does:
    world // (replicate × context × tensor × pipeline), floor division, then checks the product
    of all degrees against the world size. (Degrees that are all explicit are PL101's.)

    ## Why is this bad
    `ParallelDims` asserts `dp_replicate * dp_shard * cp * tp * pp == WORLD_SIZE` once the processes
    have started ("Invalid parallel dims"); when the other degrees do not divide the world size,
    no shard degree fits.

    ## Example
    ```toml
    [parallelism]
    data_parallel_shard_degree = -1
    tensor_parallel_degree = 3
    ```
    on 8 GPUs: 8 // 3 = 2, and 2 × 3 = 6 ≠ 8.

    ## Use instead
    Degrees whose product divides the world size (tensor 2 or 4 on 8 GPUs).
    """

    code = "TT101"
    name = "shard-degree-leftover-does-not-fit"
    severity = "error"

    def check(self, document, context: Context) -> Iterable[Finding]:
        plan = document.plan
        world = context.world_size
        if plan is None or _legacy(plan):
            return
        script = None  # where a launch script that names this TOML sets the world size
        setup = launched(document, context) if world is None else None
        if setup is not None:
            plan, world, script = setup
        if world is None:
            return
        where = plan.provenance.get("parallelism.data_parallel_shard")
        raw = document.data
        if known(plan.parallelism.data_parallel_shard) is not None:
            return
        from shardshift.source import value_at

        if where is None:
            if script is None:
                return
            # torchtitan's default shard degree is -1 (ParallelismConfig): judged at [parallelism]
            shard_pointer = "/parallelism"
        elif where.file != document.path or value_at(raw, where.pointer) != -1:
            return
        else:
            shard_pointer = where.pointer
        others = {}
        for dotted, name in (("parallelism.data_parallel_replicate", "data_parallel_replicate_degree"),
                             ("parallelism.context", "context_parallel_degree"),
                             ("parallelism.tensor", "tensor_parallel_degree"),
                             ("parallelism.pipeline", "pipeline_parallel_degree")):
            if plan.get(dotted) is not None:
                value = _degree(plan, dotted)
                if value is None or value < 1:
                    return
                others[name] = value
        product = 1
        for value in others.values():
            product *= value
        shard = world // product
        if shard * product == world:
            return
        spelled = " × ".join(f"{k} {v}" for k, v in others.items()) or "1"
        if shard == 0:
            message = (f"data_parallel_shard_degree -1 takes the ranks left over, but there are none: torchtitan's "
                       f"ParallelDims computes {world} // ({spelled}) = 0 and stops at `assert dp_shard >= 1`; the "
                       f"other degrees need {product} GPUs, the world size is {world}")
        else:
            message = (f"data_parallel_shard_degree -1 takes the ranks left over: torchtitan's ParallelDims computes "
                       f"{world} // ({spelled}) = {shard}, then asserts {shard} × {product} = {shard * product} == "
                       f"WORLD_SIZE {world} and stops (Invalid parallel dims); choose degrees whose product divides "
                       f"{world}")
        if where is None:
            message = message.replace("data_parallel_shard_degree -1", "data_parallel_shard_degree -1 (the default)", 1)
        if script is not None:
            message += f"; the world size {world} is the number of processes {os.path.basename(script.file)} starts"
        related = [_place(self, document, plan.provenance[d], f"{n} is set here")
                   for d, n in (("parallelism.tensor", "tensor_parallel_degree"),
                                ("parallelism.pipeline", "pipeline_parallel_degree"),
                                ("parallelism.context", "context_parallel_degree"),
                                ("parallelism.data_parallel_replicate", "data_parallel_replicate_degree"))
                   if d in plan.provenance and (_degree(plan, d) or 1) > 1]
        if script is not None:
            related.append(_place(self, document, script, f"the launch script starts {world} processes here"))
        yield self.finding(document, shard_pointer, message, related=related)


DEGREE_KEYS = ("data_parallel_replicate_degree", "data_parallel_shard_degree", "tensor_parallel_degree",
               "pipeline_parallel_degree", "context_parallel_degree", "expert_parallel_degree",
               "expert_tensor_parallel_degree")


class InvalidParallelDegree(_TitanRule):
    """A parallel degree torchtitan refuses whatever the world size.

    ## What it does
    Checks the `[parallelism]` degrees the way torchtitan v0.2.2's `ParallelDims._validate` does
    before it looks at the world size: every degree is an int ≥ 1, except
    `data_parallel_shard_degree`, which may also be -1; and with expert parallelism
    (`expert_parallel_degree` > 1) `expert_tensor_parallel_degree` is 1 or equal to
    `tensor_parallel_degree`. (Degrees of the wrong type are TT002.)

    ## Why is this bad
    `ParallelDims` stops the job at start-up with an AssertionError: "Parallelism degree should
    be >= 1, except for dp_shard", "dp_shard must -1 or >=1.", or "Currently we only support
    ETP=TP or ETP=1".

    ## Example
    ```toml
    [parallelism]
    tensor_parallel_degree = 0
    ```

    ## Use instead
    ```toml
    [parallelism]
    tensor_parallel_degree = 1
    ```
    """

    code = "TT103"
    name = "invalid-parallel-degree"
    severity = "error"

    def check(self, document, context: Context) -> Iterable[Finding]:
        data = document.data
        section = data.get("parallelism") if isinstance(data, dict) else None
        if not isinstance(section, dict):
            return
        for key in DEGREE_KEYS:
            value = section.get(key)
            if not isinstance(value, int) or isinstance(value, bool):
                continue
            if key == "data_parallel_shard_degree" and not (value == -1 or value >= 1):
                yield self.finding(document, f"/parallelism/{key}", f"{key} = {value}: torchtitan's ParallelDims accepts "
                                   "-1 (the ranks left over) or a degree >= 1 and stops at start-up "
                                   "(AssertionError: dp_shard must -1 or >=1.)")
            elif key != "data_parallel_shard_degree" and value < 1:
                yield self.finding(document, f"/parallelism/{key}", f"{key} = {value}: torchtitan's ParallelDims stops "
                                   "at start-up (AssertionError: Parallelism degree should be >= 1, except for "
                                   "dp_shard); 1 turns this axis off")
        ep, etp, tp = (section.get(k, 1) for k in ("expert_parallel_degree", "expert_tensor_parallel_degree",
                                                  "tensor_parallel_degree"))
        if all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in (ep, etp, tp)) and ep > 1 \
                and etp not in (1, tp) and "expert_tensor_parallel_degree" in section:
            yield self.finding(document, "/parallelism/expert_tensor_parallel_degree",
                               f"expert_tensor_parallel_degree = {etp} with expert parallelism {ep}: torchtitan "
                               f"supports 1 or the tensor-parallel degree {tp} only and stops at start-up "
                               "(AssertionError: Currently we only support ETP=TP or ETP=1)",
                               related=[self.related(document, "/parallelism/expert_parallel_degree",
                                                     "expert_parallel_degree is set here")])


class MixedPrecisionWithoutFsdp(_TitanRule):
    """Mixed precision that torchtitan turns off: tensor or pipeline parallel without FSDP.

    ## What it does
    Reports a run with tensor or pipeline parallelism (degree > 1) whose data-parallel shard
    degree is 1 and context-parallel degree is 1 (explicit, or -1 resolved with `--world-size`),
    while `training.dtype` is float32 (the default).

    ## Why is this bad
    torchtitan v0.2.2 applies `mixed_precision_param` / `mixed_precision_reduce` only through
    FSDP's `MixedPrecisionPolicy` (FSDP runs when dp_shard > 1 or cp > 1) or, for DDP and
    single-device runs, through `torch.autocast`. With TP or PP and no FSDP,
    `maybe_enable_amp` logs "Mixed precision training with TP or PP is only supported when
    FSDP/HSDP/CP is enabled" and "Mixed precision training is disabled": the run trains in
    fp32 (`training.dtype`), slower and with more memory than the bfloat16 the file asks for
    (pytorch/torchtitan#630).

    ## Example
    ```toml
    [training]
    mixed_precision_param = "bfloat16"
    [parallelism]
    data_parallel_shard_degree = 1
    tensor_parallel_degree = 8
    ```

    ## Use instead
    Shard over the data-parallel ranks (`data_parallel_shard_degree` > 1 or -1 with ranks left
    over), or set `training.dtype = "bfloat16"` to train in bf16 throughout.
    """

    code = "TT102"
    name = "mixed-precision-without-fsdp"
    severity = "warning"

    def check(self, document, context: Context) -> Iterable[Finding]:
        read = _current_layout(document)
        if read is None:
            return
        plan, training = read
        if training.get("dtype", "float32") != "float32" or training.get("mixed_precision_param", "bfloat16") != "bfloat16":
            return
        tp = _degree(plan, "parallelism.tensor") if plan.parallelism.tensor is not None else 1
        pp = _degree(plan, "parallelism.pipeline") if plan.parallelism.pipeline is not None else 1
        cp = _degree(plan, "parallelism.context") if plan.parallelism.context is not None else 1
        replicate = _degree(plan, "parallelism.data_parallel_replicate") if (
            plan.parallelism.data_parallel_replicate is not None) else 1
        if None in (tp, pp, cp, replicate) or (tp <= 1 and pp <= 1) or cp > 1:
            return
        shard_where = plan.provenance.get("parallelism.data_parallel_shard")
        shard = _degree(plan, "parallelism.data_parallel_shard")
        if shard_where is None:  # the default -1
            shard = None
        shown = "is 1"
        if shard is None:
            world = context.world_size
            if world is None:
                setup = launched(document, context)  # the world of a launch script that names this TOML
                world = setup[1] if setup is not None else None
            if world is None:
                return
            shard = world // (replicate * cp * tp * pp)
            shown = (f"-1 leaves {world} // ({replicate * cp * tp * pp}) = {shard} rank"
                     if shard_where is not None else
                     f"-1 (the default) leaves {world} // ({replicate * cp * tp * pp}) = {shard} rank")
        if shard != 1:
            return
        axes = " and ".join(f"{n} {v}" for n, v in (("tensor parallel", tp), ("pipeline parallel", pp)) if v > 1)
        message = (f"data_parallel_shard_degree {shown}, so with {axes} torchtitan runs no FSDP and turns mixed precision "
                   f"off (\"Mixed precision training with TP or PP is only supported when FSDP/HSDP/CP is enabled\"): "
                   f"the run trains in training.dtype float32, not bfloat16; shard over the data-parallel ranks or "
                   f'set training.dtype = "bfloat16"')
        axis = plan.provenance.get("parallelism.tensor" if tp > 1 else "parallelism.pipeline")
        pointer = "/training/mixed_precision_param" if "mixed_precision_param" in training else (
            shard_where.pointer if shard_where is not None else axis.pointer if axis is not None else None)
        related = []
        if shard_where is not None and pointer != shard_where.pointer:
            related.append(self.related(document, shard_where.pointer, "data_parallel_shard_degree is set here"))
        yield self.finding(document, pointer, message, related=related)


class GlobalBatchNotMultiple(_TitanRule):
    """A global batch size of 0, or one the written data-parallel degrees do not divide into local batches.

    ## What it does
    Reports `training.global_batch_size = 0` or `training.local_batch_size = 0` (a
    ZeroDivisionError, found by mutation: no check names it), and a `global_batch_size` (not -1) that is not a
    multiple of `training.local_batch_size` × `data_parallel_replicate_degree` ×
    `data_parallel_shard_degree` when both degrees are written (torchtitan's batch degree, so no
    world size is needed). With the world size known, or a global batch that the local batch size
    does not divide, DS201 judges the batch (it also covers the other formats).

    ## Why is this bad
    torchtitan's `Trainer.__init__` (train.py, "verify batch sizes") asserts `global_batch_size > 0`
    and `global_batch_size % (local_batch_size * batch_degree) == 0` ("global batch size must be
    multiple of local batch size times data-parallel degree"), with `batch_degree` the size of its
    "batch" mesh, dp_replicate × dp_shard. It runs once the processes have started and the model
    is built: the job stops before its first step.

    ## Example
    ```toml
    [training]
    local_batch_size = 8
    global_batch_size = 48
    [parallelism]
    data_parallel_replicate_degree = 2
    data_parallel_shard_degree = 4
    ```

    ## Use instead
    A global batch that is the local batch × the batch degree × the accumulation steps you want
    (64 or 128 here), or -1 (one accumulation step).
    """

    code = "TT105"
    name = "global-batch-not-multiple"
    severity = "error"

    def check(self, document, context: Context) -> Iterable[Finding]:
        read = _current_layout(document)
        if read is None:
            return
        plan, training = read
        total, local = training.get("global_batch_size"), known(plan.batch.micro)
        written = training.get("local_batch_size")
        if written == 0 and not isinstance(written, bool):
            yield self.finding(document, "/training/local_batch_size",
                               "local_batch_size = 0: torchtitan's Trainer divides global_batch_size by local_batch_size "
                               "× the batch degree at start-up (ZeroDivisionError; with global_batch_size -1 it "
                               "asserts global_batch_size > 0 instead) and stops", fix="the per-rank batch, 1 or more")
            return
        if not isinstance(total, int) or isinstance(total, bool) or total < 0:
            return  # -1 (one accumulation step), absent, or a value TT002 reports
        pointer = "/training/global_batch_size"
        if total == 0:
            yield self.finding(document, pointer, "global_batch_size = 0: torchtitan's Trainer asserts "
                               "global_batch_size > 0 at start-up and stops",
                               fix="-1 (one accumulation step), or a multiple of local_batch_size × the "
                                   "data-parallel degree")
            return
        if "local_batch_size" not in training or not isinstance(local, int) or local < 1 or total % local:
            return  # the local size as written only; a global batch it does not divide is DS201's
        if context.world_size is not None or launched(document, context) is not None:
            return  # with the world size DS201 divides by the data-parallel size
        replicate_where = plan.provenance.get("parallelism.data_parallel_replicate")
        shard_where = plan.provenance.get("parallelism.data_parallel_shard")
        replicate = _degree(plan, "parallelism.data_parallel_replicate") if replicate_where is not None else 1
        shard = _degree(plan, "parallelism.data_parallel_shard") if shard_where is not None else None
        if replicate is None or shard is None or replicate < 1 or shard < 1:
            return  # a shard degree of -1 (written or the default) needs the world size
        degree = replicate * shard
        if total % (local * degree) == 0:
            return
        related = [self.related(document, "/training/local_batch_size", "local_batch_size is set here"),
                   _place(self, document, shard_where, "data_parallel_shard_degree is set here")]
        if replicate_where is not None:
            related.append(_place(self, document, replicate_where, "data_parallel_replicate_degree is set here"))
        yield self.finding(document, pointer,
                           f"global_batch_size {total} is not a multiple of local_batch_size {local} × the batch degree "
                           f"{degree} (data_parallel_replicate_degree {replicate} × data_parallel_shard_degree {shard}) "
                           f"= {local * degree}: torchtitan's Trainer asserts \"global batch size must be multiple of "
                           "local batch size times data-parallel degree\" at start-up and stops",
                           fix=f"a multiple of {local * degree}, or -1", related=related)
