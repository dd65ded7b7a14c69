"""A page per registered format (`formats/<name>.md`, shardshift.formats.READERS) and the formats
index: what the reader reads and how it recognises a file, its key tables, what it writes, and
the rules that look at it."""

from __future__ import annotations

import importlib
import inspect

from shardshift.docs.markdown import cell, code

TITLES = {"deepspeed": "DeepSpeed ds_config", "fsdp2": "FSDP2 code", "python": "Python training scripts",
          "plan": "Plan YAML", "accelerate": "Accelerate config YAML", "axolotl": "Axolotl YAML",
          "megatron": "Megatron-LM launch scripts and argument files", "launch": "Launch scripts",
          "torchtitan": "torchtitan TOML"}


def pages() -> dict[str, str]:
    from shardshift.formats import READERS

    found = {f"formats/{name}.md": page(name) for name in READERS}
    lines = ["# Formats", "", "Every file is read by the first reader, in this order, that recognises it by name "
             "and content; a file no reader recognises is skipped in a directory and an error (SS005) when named.",
             "", "| Format | Reads | Writes (`convert --to`) |", "|---|---|---|"]
    from shardshift.formats import WRITERS

    for name in READERS:
        writes = ", ".join(f"`{w}`" for w in WRITERS if w == name or w.startswith(name + "-")) or "-"
        lines.append(f"| [{name}]({name}.md) | {cell(TITLES.get(name, name))} | {writes} |")
    found["formats/index.md"] = "\n".join(lines) + "\n"
    return found


def _doc(module_name: str) -> str:
    try:
        return inspect.cleandoc(importlib.import_module(module_name).__doc__ or "")
    except ImportError:
        return ""


def page(name: str) -> str:
    from shardshift.formats import READERS, WRITERS, reader
    from shardshift.rules import all_rules

    package = READERS[name]
    module = reader(name)
    lines = [f"# {TITLES.get(name, name)} (`{name}`)", "", _doc(package), ""]
    reader_module = f"{package}.reader"
    if reader_module != package and _doc(reader_module):
        lines += ["## What is read", "", _doc(reader_module), ""]
    lines += ["## Which files are recognised", ""]
    recognise = inspect.getdoc(getattr(module, "looks_like", None))
    if recognise:
        lines += [recognise, ""]
    markers = getattr(module, "MARKER_KEYS", None)
    if markers:
        lines += ["Marker keys (content that identifies the format): " + ", ".join(f"`{m}`" for m in sorted(markers)),
                  ""]
    pattern = getattr(module, "NAME_PATTERN", None)
    if pattern is not None:
        lines += [f"File names matching `{pattern.pattern}` (ignoring case) are read as this format.", ""]
    lines += TABLES.get(name, list)()
    writers = [w for w in WRITERS if w == name or w.startswith(name + "-")]
    if writers:
        lines += ["## Written by", ""]
        for target in writers:
            lines += [f"- `shardshift convert --to {target}`: " + (_doc(WRITERS[target]).split("\n\n")[0] or target)]
        lines.append("")
    rules = [r for r in all_rules() if name in r.formats]
    if rules:
        lines += ["## Rules", "", "| Code | Name | Summary |", "|---|---|---|"]
        lines += [f"| [{r.code}](../rules/{r.code}.md) | `{r.name}` | {cell(r.summary())} |" for r in rules]
        lines.append("")
    return "\n".join(lines)


def _precedence(table: dict, title: str) -> list[str]:
    if not table:
        return []
    lines = [f"## {title}", "", "| Plan field | Outcome | What the framework does |", "|---|---|---|"]
    lines += [f"| `{field}` | {rule.outcome} | {cell(rule.says)} |" for field, rule in table.items()]
    return lines + [""]


def _deepspeed() -> list[str]:
    from shardshift.formats.deepspeed.keys import KEYS

    lines = ["## Keys", "", f"Every ds_config key shardshift knows ({len(KEYS)} rows of "
             "`shardshift.formats.deepspeed.keys.KEYS`; the JSON Schema `shardshift schema deepspeed` is generated "
             "from the same table). `*` stands for any key.", "",
             "| Key | Type | Default | ZeRO stages | Plan field | Description |", "|---|---|---|---|---|---|"]
    for key in KEYS:
        doc = key.doc
        if key.removed:
            doc = f"**Removed**: {key.removed}. {doc}"
        elif key.renamed_to:
            doc = f"Old spelling of `{key.renamed_to}`. {doc}"
        elif key.inert:
            doc = f"Accepted but without effect. {doc}"
        if key.choices:
            doc += " One of " + ", ".join(f"`{c}`" for c in key.choices) + "."
        stages = ", ".join(map(str, key.stages)) if key.stages else ""
        lines.append(f"| `{key.path}` | {key.type} | {code(key.default) if key.default is not None else ''} | "
                     f"{stages} | {code(key.field) if key.field else ''} | {cell(doc)} |")
    return lines + [""]


def _accelerate() -> list[str]:
    from shardshift.formats.accelerate import keys

    lines = ["## Keys", "", "`deepspeed_config` keys read when `distributed_type` is DEEPSPEED:", "",
             "| Key | Plan field | Kind |", "|---|---|---|"]
    lines += [f"| `{k}` | `{field}` | {kind} |" for k, (field, kind) in keys.DEEPSPEED_KEYS.items()]
    lines += ["", "Top-level keys of a local machine: " + ", ".join(f"`{k}`" for k in keys.CLUSTER_KEYS), "",
              "`fsdp_config` keys: " + ", ".join(f"`{k}`" for k in keys.FSDP_KEYS), ""]
    return lines + _precedence(keys.PRECEDENCE, "When the YAML and its ds_config both set a value")


def _axolotl() -> list[str]:
    from shardshift.formats.axolotl import keys
    from shardshift.formats.axolotl.schema_keys import SCHEMA_KEYS

    lines = ["## Keys", "", "| Key | Plan field | Kind |", "|---|---|---|"]
    lines += [f"| `{k}` | `{field}` | {kind} |" for k, (field, kind) in keys.KEYS.items()]
    lines += ["", f"Axolotl's schema knows {len(SCHEMA_KEYS)} top-level keys (axolotl 0.21.0):", "",
              ", ".join(f"`{k}`" for k in sorted(SCHEMA_KEYS)), ""]
    return lines + _precedence(keys.PRECEDENCE, "When the YAML and its ds_config both set a value")


def _torchtitan() -> list[str]:
    from shardshift.formats.torchtitan.keys import SCHEMA

    lines = ["## Keys", "", f"{sum(map(len, SCHEMA.values()))} keys in {len(SCHEMA)} sections "
             "(torchtitan 0.2.2, the last release that reads TOML train configs).", ""]
    for section, keys in SCHEMA.items():
        lines += [f"### `[{section}]`", "", "| Key | Type | Default |", "|---|---|---|"]
        lines += [f"| `{k}` | {code(t)} | {code(d)} |" for k, (t, d) in keys.items()]
        lines.append("")
    return lines


def _megatron() -> list[str]:
    from shardshift.formats.megatron import keys
    from shardshift.formats.megatron.flags import table

    flags = table()
    groups: dict[str, list] = {}
    for flag in flags.flags:
        groups.setdefault(flag.group or "other", []).append(flag)
    lines = ["## Flags", "", f"{len(flags.flags)} flags of {flags.described}, dumped from Megatron's own argument "
             f"parser; {sum(f.deprecated for f in flags.flags)} are deprecated.", "",
             "| Group | Flags | Deprecated |", "|---|---|---|"]
    lines += [f"| [{cell(g)}](#{_anchor(g)}) | {len(fs)} | {sum(f.deprecated for f in fs)} |"
              for g, fs in sorted(groups.items(), key=lambda item: -len(item[1]))]
    lines += ["", "Flags with a neutral meaning (the Plan field each sets):", "", "| Flag (dest) | Plan field |",
              "|---|---|"]
    lines += [f"| `{dest}` | `{field}` |" for dest, field in keys.FIELDS.items()]
    lines.append("")
    for group, members in sorted(groups.items(), key=lambda item: -len(item[1])):
        lines += [f"### {group} {{#{_anchor(group)}}}", "", "| Flag | Type | Default | Help |", "|---|---|---|---|"]
        for flag in members:
            help_text = ("**Deprecated.** " if flag.deprecated else "") + flag.help
            if len(help_text) > 200:
                help_text = help_text[:197] + "..."
            kind = flag.type if flag.action not in ("store_true", "store_false") else "switch"
            lines.append(f"| {', '.join(f'`{s}`' for s in flag.spellings)} | {cell(kind)} | "
                         f"{code(flag.default) if flag.default is not None else ''} | {cell(help_text)} |")
        lines.append("")
    return lines


def _fsdp2() -> list[str]:
    from shardshift.formats.deepspeed import fsdp2_explained as mapping

    lines = ["## From a ds_config (`convert --to fsdp2`)", "", _doc(mapping.__name__), "",
             "| ds_config key | Status | In the FSDP2 module | Why |", "|---|---|---|---|"]
    lines += [f"| `{row.pattern}` | {row.status} | {code(row.target) if row.target else ''} | {cell(row.reason)} |"
              for row in mapping.ROWS]
    return lines + [""]


def _launch() -> list[str]:
    return ["## Launchers", "", _doc("shardshift.formats.launch.launchers"), ""]


def _anchor(text: str) -> str:
    return "group-" + "-".join("".join(c if c.isalnum() else " " for c in text.lower()).split())


TABLES = {"deepspeed": _deepspeed, "accelerate": _accelerate, "axolotl": _axolotl, "torchtitan": _torchtitan,
          "megatron": _megatron, "fsdp2": _fsdp2, "launch": _launch}
