"""What shardshift's own key tables say about one key or flag, per format family, judged against
the framework release in use. Reads the tables the readers and rules use (no new tables):

- DeepSpeed: formats/deepspeed/keys.py and versions.py (defaults, key and strictness changes);
- Accelerate: schemas.py (ACCELERATE_TOP / ACCELERATE_SECTIONS) and formats/accelerate/keys.py;
- Axolotl: formats/axolotl/schema_keys.py, keys.py, plugin_keys.py and rules/axolotl (releases,
  deprecated and removed options);
- torchtitan: formats/torchtitan/keys.py and rules/torchtitan (renamed, deprecated, releases);
- Megatron-LM: formats/megatron/flags.json (or the flag table of the program that receives them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

Version = tuple[int, ...]


@dataclass
class Entry:
    """One key or flag: the facts shown on hover and in a completion item."""

    name: str
    path: tuple[str, ...]
    kind: str = "key"  # "key" | "flag"
    rows: list[tuple[str, str]] = field(default_factory=list)  # label, value (a short table)
    doc: str = ""
    notes: list[str] = field(default_factory=list)  # strictness, stages, renames, removal, release
    rules: tuple[str, ...] = ()
    choices: tuple[Any, ...] = ()
    deprecated: bool = False
    removed: bool = False  # rejected or not read by the release in use
    known: bool = True  # False: the key is not in the table (the entry says what the framework does)
    detail: str = ""  # one line for a completion item

    def summary(self) -> str:
        if self.detail:
            return self.detail
        return ", ".join(v for k, v in self.rows if k in ("Type", "Default"))


def vtext(version: Version | None) -> str:
    return ".".join(map(str, version)) if version else "?"


def shown(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return repr(value) if isinstance(value, float) else str(value)


def _choices_text(choices) -> str:
    items = [shown(c) for c in choices]
    return ", ".join(items[:12]) + (f", … ({len(items)} in all)" if len(items) > 12 else "")


# ==============================================================================================
# DeepSpeed
# ==============================================================================================


def _ds_pointer(path: tuple[str, ...]) -> str:
    return "".join("/" + p for p in path)


def ds_entry(path: tuple[str, ...], version: Version | None, release: str) -> Entry | None:
    from shardshift import versions
    from shardshift.formats.deepspeed.keys import children_of, lookup

    pointer = _ds_pointer(path)
    if not path:
        return None
    row = lookup(pointer)
    parent_pointer = _ds_pointer(path[:-1])
    parent = lookup(parent_pointer) if path[:-1] else None
    name = path[-1]
    if row is None:
        if parent is not None and parent.open:
            return None  # a free-form section (kwargs): nothing to say about its keys
        where = f"in `{'.'.join(path[:-1])}`" if path[:-1] else "at the top level"
        strict_since = versions.strict_from(parent_pointer)
        strict = parent is not None and parent.strict and (
            strict_since is None or versions.at_least(version, strict_since))
        what = ("DeepSpeed rejects unknown keys in this section: the run stops at launch" if strict else
                "DeepSpeed ignores unknown keys here: the setting has no effect")
        entry = Entry(name, path, known=False, rules=("DS101",),
                      notes=[f"Not a key {release} knows {where}. {what}."])
        from shardshift.rules.base import did_you_mean

        guess = did_you_mean(name, list(children_of(parent_pointer)))
        if guess:
            entry.notes.append(f"Did you mean `{guess}`?")
        return entry
    entry = Entry(name, path, doc=row.doc)
    kind = row.type if not row.nullable else f"{row.type} or null"
    entry.rows.append(("Type", kind))
    if row.type != "object":
        default = versions.deepspeed_default(pointer, version)
        entry.rows.append(("Default", shown(default)))
        change = versions.default_change(pointer)
        if change is not None:
            entry.notes.append(f"Default {shown(change.before)} before {vtext(change.since)} ({change.meaning_before}), "
                               f"{shown(change.after)} since ({change.meaning_after}).")
    if row.type == "bool":
        entry.choices = (True, False)
    if row.choices:
        entry.choices = tuple(row.choices)
        entry.rows.append(("Choices", _choices_text(row.choices) + (" (any case)" if row.case_insensitive else "")))
    bounds = []
    if row.minimum is not None:
        bounds.append(f"≥ {shown(row.minimum)}")
    if row.exclusive_minimum is not None:
        bounds.append(f"> {shown(row.exclusive_minimum)}")
    if row.maximum is not None:
        bounds.append(f"≤ {shown(row.maximum)}")
    if row.exclusive_maximum is not None:
        bounds.append(f"< {shown(row.exclusive_maximum)}")
    if bounds:
        entry.rows.append(("Range", ", ".join(bounds) + (", even" if row.even else "")))
    if row.stages:
        stages = ", ".join(map(str, row.stages))
        entry.rows.append(("ZeRO stages", stages))
        others = [s for s in range(4) if s not in row.stages]
        entry.notes.append(f"Read at ZeRO stage {stages} only: inert at stage {', '.join(map(str, others))}.")
        entry.rules += ("DS303",)
    if row.field:
        entry.rows.append(("Plan field", f"`{row.field}`"))
    if row.type == "object" and not row.foreign:
        since = versions.strict_from(pointer)
        if row.strict and since is not None and not versions.at_least(version, since):
            entry.notes.append(f"{release} ignores unknown keys in this section (DeepSpeed rejects them from "
                               f"{vtext(since)}).")
        elif row.strict:
            entry.notes.append("DeepSpeed rejects unknown keys in this section (a strict pydantic model): a typo stops "
                               "the run at launch.")
        elif row.open:
            entry.notes.append("A free-form section: DeepSpeed passes its keys on; they are not checked.")
        else:
            entry.notes.append("DeepSpeed ignores unknown keys in this section (read with dict.get).")
        entry.rules += ("DS101",)
    elif parent is not None and parent.strict:
        since = versions.strict_from(parent_pointer)
        if since is None or versions.at_least(version, since):
            entry.notes.append(f"In `{'.'.join(path[:-1])}`, a strict section: DeepSpeed rejects unknown keys there "
                               "(a misspelling stops the run at launch).")
            entry.rules += ("DS101",)
    if row.foreign:
        entry.known = False
        entry.notes.append(f"Not a DeepSpeed key: {row.foreign}.")
        entry.rules += ("DS101",)
    if row.renamed_to:
        entry.deprecated = True
        modern = row.renamed_to[1:].replace("/", ".")
        ignored = versions.key_change(pointer)
        if row.inert and ignored is not None and ignored.ignored_since and versions.key_read_by(pointer, version):
            entry.notes.append(f"Read by {release}; DeepSpeed {vtext(ignored.ignored_since)} and later accept it but "
                               f"ignore it and read `{modern}` instead.")
        elif row.inert:
            entry.notes.append(f"Legacy spelling, inert: DeepSpeed accepts it but reads `{modern}` instead.")
        else:
            entry.notes.append(f"Legacy spelling of `{modern}` (DeepSpeed still reads it); write `{modern}`.")
        entry.rules += ("DS320", "DS321")
    elif row.inert:
        entry.notes.append("DeepSpeed accepts this key but it has no effect.")
    if row.removed:
        if versions.removed_by(row, version):
            entry.removed = True
            text = row.removed
            if row.removed_in is not None and version is not None:
                text = text.replace("(0.19.8 rejects", f"in {vtext(row.removed_in)} ({vtext(version)} rejects")
            entry.notes.append(f"Removed: {text}.")
        else:
            entry.deprecated = True
            entry.notes.append(f"Read by {release}, but DeepSpeed {vtext(row.removed_in)} removed it and rejects the "
                               "file: drop it before upgrading.")
        entry.rules += ("DS101",)
    change = versions.key_change(pointer)
    if change is not None:
        if change.introduced is not None:
            if versions.key_read_by(pointer, version):
                entry.notes.append(f"Added in DeepSpeed {vtext(change.introduced)} ({change.evidence}).")
            else:
                strict = parent is not None and parent.strict
                entry.removed = True
                entry.notes.append(f"Added in DeepSpeed {vtext(change.introduced)}: {release} "
                                   f"{'rejects' if strict else 'ignores'} it.")
        if change.ignored_since is not None and not versions.key_read_by(pointer, version) and not row.renamed_to:
            entry.deprecated = True
            entry.notes.append(f"Ignored since DeepSpeed {vtext(change.ignored_since)}: "
                               f"write `{(change.replaced_by or '')[1:].replace('/', '.')}`.")
        entry.rules += ("DS322",)
    return entry


def ds_children(parent: tuple[str, ...], version: Version | None, release: str) -> list[Entry]:
    from shardshift.formats.deepspeed.keys import KEYS, lookup

    pointer = _ds_pointer(parent)
    if parent and lookup(pointer) is None:
        return []
    depth = pointer.count("/") + 1
    out = []
    for row in KEYS:
        if not row.path.startswith(pointer + "/") or row.path.count("/") != depth or row.foreign:
            continue
        entry = ds_entry(tuple(row.path[1:].split("/")), version, release)
        if entry is None or entry.removed:
            continue
        entry.detail = (f"{row.type}" + (f" = {entry_default(entry)}" if row.type != "object" else "")
                        + (f" — deprecated: use {row.renamed_to[1:].replace('/', '.')}" if row.renamed_to else "")
                        + (" — removed in the next releases" if entry.deprecated and row.removed else ""))
        out.append(entry)
    return out


def entry_default(entry: Entry) -> str:
    return next((value for label, value in entry.rows if label == "Default"), "")


# ==============================================================================================
# Accelerate
# ==============================================================================================


def _accelerate_spec(path: tuple[str, ...]) -> tuple | None:
    from shardshift.schemas import ACCELERATE_SECTIONS, ACCELERATE_TOP

    if len(path) == 1:
        return ACCELERATE_TOP.get(path[0])
    if len(path) == 2 and path[0] in ACCELERATE_SECTIONS:
        section = ACCELERATE_SECTIONS[path[0]]
        spec = section.get(path[1])
        if spec is None and path[0] == "fsdp_config":
            spec = section.get("fsdp_" + path[1])
        return spec
    return None


def _accelerate_known(path: tuple[str, ...]) -> bool:
    from shardshift.formats.accelerate import keys

    if len(path) == 1:
        return path[0] in keys.CLUSTER_KEYS or path[0] in keys.SAGEMAKER_KEYS or path[0] in keys.LEGACY_TOP
    if len(path) == 2 and path[0] in keys.NESTED:
        name = keys.fsdp_name(path[1]) if path[0] == "fsdp_config" else path[1]
        return name in keys.NESTED[path[0]]
    return False


def accelerate_entry(path: tuple[str, ...], version: Version | None, release: str) -> Entry | None:
    from shardshift.formats.accelerate import keys
    from shardshift.schemas import ACCELERATE_SECTIONS

    if not path or len(path) > 2:
        return None
    name = path[-1]
    spec = _accelerate_spec(path)
    known = _accelerate_known(path) or spec is not None
    if not known:
        if len(path) == 1:
            return Entry(name, path, known=False, rules=("AC001",),
                         notes=[f"Not a key {release} knows: Accelerate rejects unknown top-level keys "
                                "(`accelerate launch` stops with a ValueError)."])
        if path[0] in keys.NESTED:
            return Entry(name, path, known=False, rules=("AC002",),
                         notes=[f"Not a key of `{path[0]}`: Accelerate never checks the keys inside this block, so a "
                                "typo is silently ignored and the setting keeps its default."])
        return None
    entry = Entry(name, path)
    if spec is not None:
        types, default, description, *choices = spec
        entry.doc = description.lstrip("! ")
        entry.rows.append(("Type", " or ".join("null" if t == "null" else t for t in types)))
        entry.rows.append(("Default", shown(default)))
        if choices:
            entry.choices = tuple(c for c in choices[0] if c is not None)
            entry.rows.append(("Choices", _choices_text(entry.choices)))
        if description.startswith("!"):
            entry.deprecated = True
            entry.notes.append("Legacy key: Accelerate still converts it.")
    field_ = None
    if path == ("mixed_precision",):
        field_ = "precision.param_dtype"
    elif len(path) == 2 and path[0] == "deepspeed_config" and name in keys.DEEPSPEED_KEYS:
        field_ = keys.DEEPSPEED_KEYS[name][0]
    elif len(path) == 2 and path[0] == "megatron_lm_config" and name in keys.MEGATRON_FIELDS:
        field_ = keys.MEGATRON_FIELDS[name][0]
    elif len(path) == 2 and path[0] == "parallelism_config" and name in keys.PARALLELISM_FIELDS:
        field_ = keys.PARALLELISM_FIELDS[name]
    if field_:
        entry.rows.append(("Plan field", f"`{field_}`"))
    if len(path) == 1:
        if path[0] in ACCELERATE_SECTIONS:
            entry.notes.append("Accelerate never checks the keys inside this block: a misspelt one is silently "
                               "ignored (shardshift reports it).")
            entry.rules = ("AC002",)
        else:
            entry.notes.append("Top-level key: Accelerate rejects unknown top-level keys.")
            entry.rules = ("AC001",)
    else:
        entry.rules = ("AC002",)
        if path[0] == "fsdp_config":
            full = keys.fsdp_name(name)
            if full != name:
                entry.notes.append(f"The launcher adds the `fsdp_` prefix: read as `{full}`.")
            if full in keys.FSDP1_ONLY:
                entry.notes.append(f"FSDP1 only: with `fsdp_version: 2`, {keys.FSDP1_ONLY[full]}.")
        if path[0] == "deepspeed_config" and name in keys.DEEPSPEED_KEYS:
            entry.notes.append("Must not be set together with `deepspeed_config_file` (Accelerate raises a "
                               "ValueError at launch).")
    return entry


def accelerate_children(parent: tuple[str, ...], version: Version | None, release: str) -> list[Entry]:
    from shardshift.formats.accelerate import keys
    from shardshift.schemas import ACCELERATE_SECTIONS, ACCELERATE_TOP

    if not parent:
        names = list(ACCELERATE_TOP)
    elif len(parent) == 1 and parent[0] in ACCELERATE_SECTIONS:
        names = list(ACCELERATE_SECTIONS[parent[0]])
        names += [k for k in keys.NESTED.get(parent[0], ()) if k not in names]
    elif len(parent) == 1 and parent[0] in keys.NESTED:
        names = list(keys.NESTED[parent[0]])
    else:
        return []
    out = []
    for name in names:
        entry = accelerate_entry(parent + (name,), version, release)
        if entry is not None:
            entry.detail = entry.summary() + (" — legacy" if entry.deprecated else "")
            out.append(entry)
    return out


# ==============================================================================================
# Axolotl
# ==============================================================================================


def axolotl_entry(path: tuple[str, ...], version: Version | None, release: str) -> Entry | None:
    from shardshift.formats.axolotl import keys
    from shardshift.formats.axolotl.plugin_keys import PLUGINS
    from shardshift.formats.axolotl.schema_keys import SCHEMA_KEYS, STRING_KEYS
    from shardshift.rules.axolotl import releases
    from shardshift.rules.axolotl.rules import DEPRECATED, REMOVED

    if not path:
        return None
    name = path[-1]
    if len(path) == 2 and path[0] == "fsdp_config":
        entry = Entry(name, path)
        if name in keys.FSDP_CONFIG_FIELDS or name in keys.FSDP_CONFIG_ALIASES:
            entry.notes.append("A field of Axolotl's FSDPConfig" + (" (alias of `fsdp_version`)" if name == "version"
                                                                     else "") + ".")
        elif name in keys.FSDP1_ONLY_REJECTED:
            instead = keys.FSDP1_ONLY_REJECTED[name]
            entry.removed = True
            entry.notes.append("FSDP1 only: Axolotl's schema rejects it" + (f"; write `{instead}`" if instead else "")
                               + ".")
            entry.rules = ("AX003",)
        elif name in keys.FSDP1_ONLY_IGNORED:
            entry.deprecated = True
            entry.notes.append("FSDP1 only: Axolotl drops it with a warning.")
            entry.rules = ("AX003",)
        else:
            entry.known = False
            entry.notes.append("Not a field of Axolotl's FSDPConfig: dropped silently (pydantic extra=\"ignore\").")
            entry.rules = ("AX005",)
        return entry
    if len(path) != 1:
        return None
    plugin = next((cls for cls, (_, names) in PLUGINS.items() if name in names), None)
    known_now = name in SCHEMA_KEYS or plugin is not None
    entry = Entry(name, path)
    if name in keys.KEYS:
        field_, kind = keys.KEYS[name]
        entry.rows.append(("Type", kind))
        entry.rows.append(("Plan field", f"`{field_}`"))
    elif name in STRING_KEYS:
        entry.rows.append(("Type", "str"))
    if plugin is not None and name not in SCHEMA_KEYS:
        entry.rows.append(("Plugin", f"`{plugin}` ({PLUGINS[plugin][0]})"))
        entry.notes.append(f"Added to the schema by the {plugin} plugin: listed under `plugins:` (or built in).")
    if version is not None and releases.OLDEST <= tuple(version) <= releases.NEWEST:
        known_then = releases.known_key(name, version)
        if known_then is False:
            entry.removed = True
            if name in releases.ADDED_IN:
                entry.notes.append(f"Added in Axolotl {vtext(releases.ADDED_IN[name])}: {release} does not know it.")
            elif name in releases.REMOVED:
                entry.notes.append(f"Known to Axolotl {vtext(releases.REMOVED[name][0])}–"
                                   f"{vtext(releases.REMOVED[name][1])} only: {release} does not know it.")
        elif known_then is True and name in releases.REMOVED:
            entry.deprecated = True
            entry.notes.append(f"Known to {release}; removed after Axolotl {vtext(releases.REMOVED[name][1])}.")
    elif name in releases.REMOVED:
        entry.removed = True
        first, last = releases.REMOVED[name]
        entry.notes.append(f"Removed: Axolotl {vtext(first)}–{vtext(last)} knew it; {release} does not.")
    if name in DEPRECATED:
        what, instead = DEPRECATED[name]
        entry.deprecated = True
        entry.notes.append(f"Deprecated: {what}" + (f"; write `{instead}`" if instead else "") + ".")
        entry.rules += ("AX007",)
    if name in REMOVED:
        when, message = REMOVED[name]
        entry.removed = True
        entry.notes.append(f"No longer supported: Axolotl stops when it is {'set' if when == 'set' else 'true'} "
                           f"({message.replace('`', '')}).")
    if known_now and not entry.removed:
        entry.notes.append("Axolotl's schema ignores unknown keys (pydantic extra=\"ignore\"): a misspelling of it "
                           "has no effect and no error.")
    if not known_now and name not in releases.REMOVED:
        entry.known = False
        entry.notes.append(f"Not a key {release} knows: Axolotl's schema drops unknown keys with a warning, so the "
                           "setting has no effect.")
    entry.rules += ("AX001",)
    return entry


def axolotl_children(parent: tuple[str, ...], version: Version | None, release: str) -> list[Entry]:
    from shardshift.formats.axolotl import keys
    from shardshift.formats.axolotl.schema_keys import SCHEMA_KEYS

    if parent == ("fsdp_config",):
        names = list(keys.FSDP_CONFIG_FIELDS)
    elif not parent:
        names = sorted(SCHEMA_KEYS)
    else:
        return []
    out = []
    for name in names:
        entry = axolotl_entry(parent + (name,), version, release)
        if entry is not None and not entry.removed:
            entry.detail = entry.summary() + (" — deprecated" if entry.deprecated else "")
            out.append(entry)
    return out


# ==============================================================================================
# torchtitan
# ==============================================================================================


def _literal(kind: str) -> tuple[str, ...]:
    m = re.match(r"Literal\[(.*)\]", kind)
    return tuple(re.findall(r"'([^']*)'", m.group(1))) if m else ()


def torchtitan_entry(path: tuple[str, ...], version: Version | None, release: str) -> Entry | None:
    from shardshift.formats.torchtitan.keys import CLASSES, SCHEMA
    from shardshift.rules.torchtitan import releases
    from shardshift.rules.torchtitan.rules import DEPRECATED, RENAMED, TABLES

    if not path:
        return None
    section, name = ".".join(path[:-1]), path[-1]
    dotted = ".".join(path)
    strict = version is None or tuple(version) >= releases.STRICT_FROM
    if dotted in TABLES and dotted not in SCHEMA.get(section, {}):
        entry = Entry(dotted, path, rows=[("Type", f"section ({CLASSES.get(dotted, 'table')})")])
        entry.notes.append(
            f"{release} rejects unknown keys in `[{dotted}]` (ValueError: Invalid field names in "
            f"{CLASSES.get(dotted, dotted)})." if strict else
            f"{release} drops unknown keys in `[{dotted}]` silently (strict from torchtitan "
            f"{vtext(releases.STRICT_FROM)}).")
        entry.rules = ("TT001",)
        return entry
    rename = RENAMED.get((section, name))
    spec = SCHEMA.get(section, {}).get(name)
    entry = Entry(name, path)
    if spec is not None:
        kind, default = spec
        entry.rows.append(("Type", f"`{kind}`"))
        entry.rows.append(("Default", shown(default)))
        entry.choices = _literal(kind) or (("true", "false") if kind == "bool" else ())
        if _literal(kind):
            entry.rows.append(("Choices", _choices_text(_literal(kind))))
        entry.rows.append(("Dataclass", f"`{CLASSES.get(section, section)}.{name}`"))
        from shardshift.formats.torchtitan.reader import DEGREES, SCALARS

        pointer = "/" + "/".join(path)
        field_ = next((f for f, ps in DEGREES.items() if pointer in ps), None) or \
            next((f for f, (ps, _) in SCALARS.items() if pointer in ps), None)
        if field_:
            entry.rows.append(("Plan field", f"`{field_}`"))
        entry.notes.append(f"In `[{section}]`: {release} rejects unknown keys there (a misspelling stops the run)."
                           if strict and section else f"In `[{section}]`." if section else "Top-level key.")
        entry.rules += ("TT001",)
    if (section, name) in DEPRECATED:
        entry.deprecated = True
        entry.notes.append(f"Deprecated: torchtitan warns and copies it to `{DEPRECATED[(section, name)]}`.")
        entry.rules += ("TT003",)
    if rename is not None:
        where, what = rename
        entry.removed = True
        key_release = releases.KEYS.get((section, name))
        read = key_release is not None and key_release.read_until is not None and version is not None and \
            tuple(version) <= tuple(key_release.read_until)
        if read:
            entry.removed = False
            entry.deprecated = True
            entry.notes.append(f"Read by {release}; torchtitan {vtext(key_release.gone_in)} no longer reads it: "
                               + (f"write `{where}`" if where else "drop it") + f" ({what}).")
        else:
            entry.notes.append(f"Not read by {release}: {what}" + (f"; write `{where}`" if where else "") + ".")
        entry.rules += ("TT003",)
    if spec is None and rename is None and (section, name) not in DEPRECATED:
        if section not in SCHEMA and section not in TABLES:
            return Entry(name, path, known=False, rules=("TT001",),
                         notes=[f"`[{section}]` is not a section torchtitan knows" + (
                             " (ValueError: Invalid field names in JobConfig)." if strict else ".")])
        entry.known = False
        entry.notes.append(f"Not a key of `[{section}]` in {release}: " + (
            f"torchtitan stops with ValueError: Invalid field names in {CLASSES.get(section, section)}." if strict
            else "torchtitan drops it silently."))
        entry.rules += ("TT001",)
    return entry


def torchtitan_children(parent: tuple[str, ...], version: Version | None, release: str) -> list[Entry]:
    from shardshift.formats.torchtitan.keys import CLASSES, SCHEMA

    if parent == ("[",):
        return [Entry(name, (name,), rows=[("Type", f"section ({CLASSES.get(name, 'table')})")],
                      detail=f"[{name}] — {CLASSES.get(name, '')}") for name in SCHEMA if name]
    section = ".".join(parent)
    out = []
    for name in SCHEMA.get(section, {}):
        entry = torchtitan_entry(parent + (name,), version, release)
        if entry is not None and not entry.removed:
            entry.detail = entry.summary().replace("`", "") + (" — deprecated" if entry.deprecated else "")
            out.append(entry)
    return out


# ==============================================================================================
# Megatron-LM flags
# ==============================================================================================


def flag_entry(spelling: str, table: Any, parser: str, upstream_note: str = "") -> Entry | None:
    flag = table.get(spelling)
    if flag is None:
        if not spelling.startswith("--"):
            return None
        entry = Entry(spelling, (spelling,), kind="flag", known=False, rules=("MG001",),
                      notes=[f"Not a flag of {parser}: argparse stops with \"unrecognized arguments\"."])
        guess = table.close_to(spelling)
        if guess:
            entry.notes.append(f"Did you mean `{guess}`?")
        if upstream_note:
            entry.notes.append(upstream_note)
        return entry
    entry = Entry(spelling, (spelling,), kind="flag", doc=flag.help.strip())
    switch = flag.action in ("store_true", "store_false", "boolean_optional")
    entry.rows.append(("Type", "switch (no value)" if switch else flag.type))
    entry.rows.append(("Default", shown(flag.default)))
    if flag.choices:
        entry.choices = tuple(flag.choices)
        entry.rows.append(("Choices", _choices_text(flag.choices)))
    if flag.nargs not in (None, 0):
        entry.rows.append(("Values", str(flag.nargs)))
    entry.rows.append(("dest", f"`{flag.dest}`"))
    others = [s for s in flag.spellings if s != spelling]
    if others:
        entry.rows.append(("Also", ", ".join(f"`{s}`" for s in others)))
    if flag.group:
        entry.rows.append(("Group", flag.group))
    field_ = _megatron_field(flag.dest)
    if field_:
        entry.rows.append(("Plan field", f"`{field_}`"))
    if flag.deprecated:
        entry.deprecated = True
        instead = flag.replacement()
        why = flag.why_deprecated().rstrip(".")
        entry.notes.append(f"Deprecated: {why}" + (f" (use `{instead}`)" if instead and instead not in why else "") + ".")
        entry.rules += ("MG003",)
    if upstream_note:
        entry.notes.append(upstream_note)
    entry.rules += ("MG001", "MG004")
    return entry


def _megatron_field(dest: str) -> str | None:
    from shardshift.formats.megatron.keys import FIELDS

    return FIELDS.get(dest)


def flag_children(table: Any) -> list[Entry]:
    out = []
    for flag in table.flags:
        switch = flag.action in ("store_true", "store_false", "boolean_optional")
        for spelling in flag.spellings:
            if not spelling.startswith("--"):
                continue
            entry = Entry(spelling, (spelling,), kind="flag", doc=flag.help.strip(), deprecated=flag.deprecated,
                          choices=tuple(flag.choices or ()))
            entry.detail = ("switch" if switch else f"{flag.type} = {shown(flag.default)}") + \
                (" — deprecated" if flag.deprecated else "")
            out.append(entry)
    return out


# ==============================================================================================
# Hugging Face TrainingArguments flags of a launch (`torchrun train.py --per_device_train_batch_size 4`)
# ==============================================================================================


def trainer_entry(spelling: str) -> Entry | None:
    from shardshift.formats.launch.training_fields import CHOICES, FIELDS, OPTIONS, TRANSFORMERS

    field_ = OPTIONS.get(spelling)
    if field_ is None:
        return None  # a word of another command (the launcher's, the script's own parser)
    negated = field_.startswith("!")
    name = field_.lstrip("!")
    kind, default = FIELDS.get(name, ("other", None))
    entry = Entry(spelling, (spelling,), kind="flag")
    entry.rows.append(("Type", "switch: sets it to false" if negated else
                       {"bool": "bool (`--flag` alone is true; yes/no, true/false, 1/0)",
                        "bool-value": "bool or none"}.get(kind, kind)))
    entry.rows.append(("Default", shown(default)))
    if name in CHOICES:
        entry.choices = CHOICES[name]
        entry.rows.append(("Choices", _choices_text(CHOICES[name])))
    elif kind in ("bool", "bool-value") and not negated:
        entry.choices = ("true", "false")
    entry.rows.append(("Field", f"`TrainingArguments.{name}`"))
    others = sorted(s for s, f in OPTIONS.items() if f == field_ and s != spelling)
    if others:
        entry.rows.append(("Also", ", ".join(f"`{s}`" for s in others)))
    entry.notes.append(f"A flag of transformers {TRANSFORMERS}'s `HfArgumentParser(TrainingArguments)`: read only "
                       "when the entry script parses its arguments with it (shardshift checks that when it reads "
                       "the launch).")
    return entry


def trainer_children() -> list[Entry]:
    from shardshift.formats.launch.training_fields import OPTIONS

    out = []
    for spelling in OPTIONS:
        entry = trainer_entry(spelling)
        if entry is not None:
            entry.detail = entry.summary().replace("`", "")
            out.append(entry)
    return out
