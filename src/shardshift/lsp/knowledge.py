"""What shardshift knows of a key or flag, for the language server's hover and completion.

`hover(path, text, line, character)` describes the key or flag under the cursor: its place in the
file, its type, default, choices or range, what the framework does with it in the release in use
(strict sections, inert stages, renames and removals), the Plan field it maps to and the rules
that judge it. `complete(path, text, line, character)` lists the keys valid in the block at the
cursor (not already present), Megatron flags after `--`, or the choices of an enum value.

Pure and fast: no pygls, no framework imports; the key tables are shardshift's own (read once);
the text may be unsaved and broken (the normal case in an editor): both functions locate the
cursor with forgiving scanners (lsp/_scan.py) and never raise. Positions are 0-based lines and
code-point columns; the server converts them to UTF-16.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from shardshift.lsp import _scan, _tables
from shardshift.lsp._tables import Entry


@dataclass(frozen=True)
class Span:
    line: int
    character: int
    end_line: int
    end_character: int


@dataclass(frozen=True)
class HoverInfo:
    markdown: str
    span: Span


@dataclass(frozen=True)
class CompletionItem:
    label: str
    detail: str
    documentation: str
    insert_text: str
    kind: str  # "key" | "flag" | "value"


# format family -> (the framework whose release judges it, its display name)
FRAMEWORKS = {"deepspeed": ("deepspeed", "DeepSpeed"), "accelerate": ("accelerate", "Accelerate"),
              "axolotl": ("axolotl", "Axolotl"), "torchtitan": ("torchtitan", "torchtitan"),
              "megatron": ("megatron-core", "Megatron Core"), "trainer": ("transformers", "transformers")}
SYNTAX = {"deepspeed": "json", "accelerate": "yaml", "axolotl": "yaml", "torchtitan": "toml", "megatron": "shell",
          "trainer": "shell"}
# families whose key tables describe one release only, the newest shardshift knows (DeepSpeed, Axolotl and torchtitan record
# what changed across releases): a pin to another release is said next to the hover
ONE_RELEASE = frozenset({"accelerate", "trainer"})
MAX_DOC = 700  # characters of a key's doc shown on hover

_JSON_SUFFIXES = (".json", ".jsonc", ".hjson", ".json5", ".conf")
_YAML_SUFFIXES = (".yaml", ".yml")
_SHELL_SUFFIXES = (".sh", ".bash", ".zsh", ".slurm", ".sbatch", ".args", ".job")
_ACCELERATE_TOP = re.compile(r"^(?:compute_environment|distributed_type)[ \t]*:", re.MULTILINE)
_ACCELERATE_JSON = re.compile(r'^[ \t]*"(?:compute_environment|distributed_type)"[ \t]*:', re.MULTILINE)
_ACCELERATE_BLOCK = re.compile(r"^(?:fsdp_config|deepspeed_config|megatron_lm_config|parallelism_config)[ \t]*:",
                               re.MULTILINE)
_AXOLOTL_TOP = re.compile(r"^(?:base_model|datasets|micro_batch_size|sequence_len|adapter|lora_r|num_epochs)[ \t]*:",
                          re.MULTILINE)


# --- the interface ------------------------------------------------------------------------------


def hover(path: str, text: str, line: int, character: int) -> HoverInfo | None:
    """The key or flag under the cursor, described; None when there is none (never raises)."""
    try:
        return _hover(path, text, line, character)
    except Exception:  # an editor's half-typed text must never break the server
        return None


def complete(path: str, text: str, line: int, character: int) -> list[CompletionItem]:
    """Completions at the cursor, most relevant first; [] when there are none (never raises)."""
    try:
        return _complete(path, text, line, character)
    except Exception:
        return []


def _position(text: str, line: int, character: int) -> tuple[int, int] | None:
    """The position inside the text (a character past the end of its line is the end, as LSP
    says), or None for a line that is not there or a negative column."""
    if line < 0 or character < 0:
        return None
    rows = text.split("\n")
    if line >= len(rows):
        return None
    return line, min(character, len(rows[line]))


def completion_span(path: str, text: str, line: int, character: int) -> Span | None:
    """The part of the line a completion at the cursor replaces: what is typed of the key, flag or
    value so far (after an opening quote), so that a client whose idea of a word differs (`-` is no
    word character in VS Code) does not keep half of it. None where `complete` offers nothing."""
    try:
        family = format_of(path, text)
        where = _position(text, line, character)
        if family is None or where is None:
            return None
        line, character = where
        place = {"json": _scan.json_place, "yaml": _scan.yaml_place, "toml": _scan.toml_place,
                 "shell": _scan.flag_place}[syntax_of(family, path)](text, line, character)
        if place is None:
            return None
        return Span(line, max(character - len(place.prefix), 0), line, character)
    except Exception:
        return None


# --- format and release ---------------------------------------------------------------------------


def format_of(path: str, text: str) -> str | None:
    """The format family of a file for hover and completion, judged forgivingly (a half-written
    file counts) but never claiming an unrelated file: a JSON file the ds_config reader would not
    take, a TOML without a torchtitan section, a shell script without Megatron flags give None."""
    lower = path.lower().replace("\\", "/")
    name = lower.rsplit("/", 1)[-1]
    if name.endswith(_JSON_SUFFIXES):
        if _ACCELERATE_JSON.search(text) and "zero_optimization" not in text:
            return "accelerate"
        from shardshift.formats.deepspeed.reader import looks_like

        return "deepspeed" if looks_like(path, text) else None
    if name.endswith(_YAML_SUFFIXES):
        if name.endswith(".plan.yaml"):
            return None
        if _ACCELERATE_TOP.search(text):
            return "accelerate"
        if _AXOLOTL_TOP.search(text):
            return "axolotl"
        if _ACCELERATE_BLOCK.search(text) or "accelerate" in name:
            return "accelerate"
        return "axolotl" if "axolotl" in lower else None
    if name.endswith(".toml"):
        return "torchtitan" if _torchtitan_header(text) else None
    if name.endswith(".args"):
        return "megatron"
    shell = name.endswith(_SHELL_SUFFIXES) or (text.startswith("#!") and "sh" in text.split("\n", 1)[0])
    if shell and (_MEGATRON_FLAG.search(text) or "pretrain_" in text or "megatron" in text.lower()):
        return "megatron"
    if shell and _TRAINER_FLAG.search(text):
        return "trainer"
    return None


# flags only Hugging Face TrainingArguments has (formats/launch/training_flags.py HF_SPECIFIC, a few)
_TRAINER_FLAG = re.compile(r"--(?:per[-_]device[-_](?:train|eval)[-_]batch[-_]size|lr[-_]scheduler[-_]type|"
                           r"output[-_]dir|save[-_]strategy|eval[-_]strategy|logging[-_]steps|warmup[-_]ratio)\b")


_MEGATRON_FLAG = re.compile(r"--(?:tensor|pipeline)[-_]model[-_]parallel[-_]size\b|--micro[-_]batch[-_]size\b"
                            r"|--num[-_]layers\b|--num[-_]attention[-_]heads\b|--global[-_]batch[-_]size\b"
                            r"|--hidden[-_]size\b|--seq[-_]length\b")


def _torchtitan_header(text: str) -> bool:
    from shardshift.formats.torchtitan.keys import SCHEMA

    for match in re.finditer(r"^[ \t]*\[\[?[ \t]*([A-Za-z_][\w.]*)", text, re.MULTILINE):
        if match.group(1).split(".", 1)[0] in SCHEMA:
            return True
    return False


_RELEASE_TTL = 2.0  # seconds: detect() lists directories; an editor asks on every keystroke
_release_cache: dict[tuple[str, str], tuple[float, Any]] = {}


def release_of(family: str, path: str) -> tuple[Any, str, str]:
    """(version or None, "DeepSpeed 0.16.0", the sentence that says where it comes from)."""
    framework, shown = FRAMEWORKS[family]
    key = (framework, os.path.dirname(os.path.abspath(path)) if path else "")
    now = time.monotonic()
    cached = _release_cache.get(key)
    if cached is not None and now - cached[0] < _RELEASE_TTL:
        release = cached[1]
    else:
        release = None
        if path and os.path.isabs(path) or os.path.exists(path or ""):
            try:
                from shardshift.context.releases import detect

                release = detect(framework, path)
            except Exception:
                release = None
        if len(_release_cache) > 64:
            _release_cache.clear()
        _release_cache[key] = (now, release)
    from shardshift.context.releases import newest

    newest_text = _tables.vtext(newest(framework))
    if release is None or release.version is None:
        where = "no pin found" if release is None or release.source == "no pin found" else \
            f"{release.source}: {release.detail}"
        return None, f"{shown} {newest_text}", f"the newest {shown} shardshift knows ({newest_text}); {where}"
    version = tuple(release.version)
    name = f"{shown} {_tables.vtext(version)}"
    return version, name, f"{name} (pinned in {release.source})"


# --- hover ------------------------------------------------------------------------------------------


def syntax_of(family: str, path: str) -> str:
    """The scanner a file needs: an Accelerate config may be JSON."""
    if family == "accelerate" and path.lower().endswith(_JSON_SUFFIXES):
        return "json"
    return SYNTAX[family]


def _hover(path: str, text: str, line: int, character: int) -> HoverInfo | None:
    family = format_of(path, text)
    where = _position(text, line, character)
    if family is None or where is None:
        return None
    line, character = where
    syntax = syntax_of(family, path)
    token = {"json": _scan.json_token, "yaml": _scan.yaml_token, "toml": _scan.toml_token,
             "shell": _scan.flag_token}[syntax](text, line, character)
    if token is None or not token.path:
        return None
    version, name, release = release_of(family, path)
    judged = f"Judged by {release}"
    if family == "megatron":
        table, parser, note = _megatron_table(path, text)
        entry = _tables.flag_entry(token.path[-1], table, parser, note)
        if entry is not None and not entry.known and not path.lower().endswith(".args"):
            # in a script a word such as `--nproc_per_node` may be any command's (the launcher's, echo's):
            # only an argument file is the program's arguments and nothing else
            entry = None
        judged = f"Flags of {parser}. Release in use: {release}"
    elif family == "trainer":
        entry = _tables.trainer_entry(token.path[-1])
    else:
        entry = _entry(family, token.path, version, name)
    if family != "megatron":
        if entry is not None and version is not None and family in ONE_RELEASE:
            from shardshift.context.releases import newest

            described = newest(FRAMEWORKS[family][0])
            if tuple(version) != tuple(described):
                shown = FRAMEWORKS[family][1]
                judged += f"; shardshift's {shown} tables describe {shown} {_tables.vtext(described)}"
    if entry is None:
        return None
    markdown = _markdown(family, entry, token, judged, os.path.dirname(os.path.abspath(path)) if path else None)
    return HoverInfo(markdown, Span(token.line, token.start, token.line, token.end))


def _entry(family: str, path: tuple[str, ...], version, name: str) -> Entry | None:
    path = tuple(p for p in path if p != "?")
    if family == "deepspeed":
        return _tables.ds_entry(path, version, name)
    if family == "accelerate":
        return _tables.accelerate_entry(path, version, name)
    if family == "axolotl":
        return _tables.axolotl_entry(path, version, name)
    if family == "torchtitan":
        return _tables.torchtitan_entry(path, version, name)
    return None


@lru_cache(maxsize=256)
def rule_url(code: str, start: str | None = None) -> str:
    """The rule's page under the `docs-url` of the project around `start` (the file's folder)."""
    from shardshift.config import ConfigError
    from shardshift.docs_url import fallback_url
    from shardshift.docs_url import rule_url as url

    try:
        return url(code, start)
    except ConfigError:  # a bad docs-url (or configuration) is check's to report; link the package's site
        return url(code, base=fallback_url())


_KIND = {"deepspeed": "DeepSpeed key", "accelerate": "Accelerate config key", "axolotl": "Axolotl config key",
         "torchtitan": "torchtitan config key", "megatron": "Megatron-LM flag",
         "trainer": "Hugging Face TrainingArguments flag"}


def _markdown(family: str, entry: Entry, token: _scan.Token, judged: str, folder: str | None = None) -> str:
    shown = ".".join(entry.path) if entry.kind == "key" else entry.name
    if family == "torchtitan" and entry.kind == "key":
        shown = f"[{'.'.join(entry.path[:-1])}] {entry.path[-1]}" if len(entry.path) > 1 else shown
    lines = [f"### `{shown}`"]
    where = f"line {token.line + 1}"
    if entry.kind == "key" and len(entry.path) > 1 and family != "torchtitan":
        where += f", in the `{'.'.join(entry.path[:-1])}` block"
    lines.append(f"{_KIND[family]}{'' if entry.known else ' (unknown)'} at {where}{' (its value)' if token.value else ''}.")
    lines.append("")
    for label, value in entry.rows:
        lines.append(f"- **{label}**: {value}")
    for note in entry.notes[:6]:
        lines.append(f"- {note}")
    doc = " ".join(entry.doc.split())
    if doc:
        if len(doc) > MAX_DOC:
            doc = doc[:MAX_DOC].rsplit(" ", 1)[0] + " …"
        lines += ["", doc]
    lines += ["", f"_{judged}._"]
    if entry.rules:
        codes = list(dict.fromkeys(entry.rules))
        lines.append("Rules: " + " · ".join(f"[{c}]({rule_url(c, folder)})" for c in codes))
    return "\n".join(lines)


# --- Megatron: the table of the program that receives the flags --------------------------------------


def _megatron_table(path: str, text: str) -> tuple[Any, str, str]:
    """(flag table, the parser it is, a note when the program is not known)."""
    from shardshift.formats.megatron.flags import table

    base = table()
    upstream = f"{base.described}'s parser"
    if not path or path.lower().endswith(".args") or not os.path.isfile(path):
        return base, upstream, ("The program that receives these flags is not known here: this is upstream "
                                "Megatron-LM's flag.")
    entries = tuple(sorted(set(re.findall(r"[\w./${}-]+\.py\b", text))))
    program = _program(os.path.abspath(path), entries, "deepspeed" in text, text)
    if program is None:
        return base, upstream, "The program that receives these flags is not known: this is upstream Megatron-LM's flag."
    if program.unknown is not None and program.upstream:
        return base, upstream, f"The program is not known ({program.unknown.what}): this is upstream Megatron-LM's flag."
    return program.table, program.parser, ""


@lru_cache(maxsize=16)
def _program_cached(path: str, entries: tuple[str, ...], deepspeed: bool, stamp: float, text: str) -> Any:
    from shardshift.formats.megatron import reader, shell

    script = shell.read_launch_script(text, path)
    launch = reader.choose_launch(script.launches)
    if launch is None:
        return None
    return reader.find_program(path, launch)


_program_text: dict[tuple, str] = {}


def _program(path: str, entries: tuple[str, ...], deepspeed: bool, text: str) -> Any:
    """The launch's program, read once per (script, entry scripts named in it): the text that was
    first read for that key is reused, so typing a flag does not re-read the script."""
    try:
        stamp = os.stat(path).st_mtime
    except OSError:
        stamp = 0.0
    key = (path, entries, deepspeed, stamp)
    first = _program_text.setdefault(key, text)
    if len(_program_text) > 64:
        _program_text.clear()
    try:
        return _program_cached(path, entries, deepspeed, stamp, first)
    except Exception:
        return None


# --- completion ---------------------------------------------------------------------------------------


def _complete(path: str, text: str, line: int, character: int) -> list[CompletionItem]:
    family = format_of(path, text)
    where = _position(text, line, character)
    if family is None or where is None:
        return []
    line, character = where
    syntax = syntax_of(family, path)
    place = {"json": _scan.json_place, "yaml": _scan.yaml_place, "toml": _scan.toml_place,
             "shell": _scan.flag_place}[syntax](text, line, character)
    if place is None:
        return []
    version, name, _ = release_of(family, path)
    if family == "megatron":
        table, parser, _ = _megatron_table(path, text)
        if place.at_value:
            entry = _tables.flag_entry(place.key, table, parser)
            return _values(entry, place, syntax) if entry is not None else []
        if not place.prefix.startswith("-"):
            return []
        entries = _flag_children(table)
        return _rank([(e, e.name) for e in entries], place, "flag")
    if family == "trainer":
        if place.at_value:
            entry = _tables.trainer_entry(place.key)
            return _values(entry, place, syntax) if entry is not None else []
        if not place.prefix.startswith("-"):
            return []
        return _rank([(e, e.name) for e in _trainer_children()], place, "flag")
    parent = tuple(p for p in place.parent if p != "?")
    if place.at_value:
        entry = _entry(family, parent + (place.key,), version, name)
        return _values(entry, place, syntax) if entry is not None else []
    entries = _children(family, parent, version, name)
    out = []
    for entry in entries:
        if entry.name in place.present:
            continue
        out.append((entry, _insert(syntax, entry, place)))
    return _rank(out, place, "key")


@lru_cache(maxsize=64)
def _children_cached(family: str, parent: tuple[str, ...], version, name: str) -> tuple[Entry, ...]:
    function = {"deepspeed": _tables.ds_children, "accelerate": _tables.accelerate_children,
                "axolotl": _tables.axolotl_children, "torchtitan": _tables.torchtitan_children}[family]
    return tuple(function(parent, version, name))


def _children(family: str, parent: tuple[str, ...], version, name: str) -> tuple[Entry, ...]:
    return _children_cached(family, parent, version, name)


@lru_cache(maxsize=1)
def _trainer_children() -> tuple[Entry, ...]:
    return tuple(_tables.trainer_children())


_flag_cache: dict[int, tuple[Any, tuple[Entry, ...]]] = {}


def _flag_children(table: Any) -> tuple[Entry, ...]:
    cached = _flag_cache.get(id(table))
    if cached is None or cached[0] is not table:
        if len(_flag_cache) > 8:
            _flag_cache.clear()
        cached = (table, tuple(_tables.flag_children(table)))
        _flag_cache[id(table)] = cached
    return cached[1]


def _insert(syntax: str, entry: Entry, place: _scan.Place) -> str:
    if syntax == "json":
        if not place.quote:
            return f'"{entry.name}": '
        return entry.name if place.closed else f'{entry.name}{place.quote}: '
    if syntax == "yaml":
        return f"{entry.name}: "
    if syntax == "toml":
        if place.parent == ("[",):
            return entry.name + "]"
        return f"{entry.name} = "
    return entry.name


def _values(entry: Entry, place: _scan.Place, syntax: str) -> list[CompletionItem]:
    out = []
    for choice in entry.choices:
        if choice is None:
            continue
        label = _tables.shown(choice).strip('"') if not isinstance(choice, bool) else _tables.shown(choice)
        if syntax == "json":
            if isinstance(choice, str):
                insert = label if place.closed else (f"{label}{place.quote}" if place.quote else f'"{label}"')
            else:
                insert = label
        elif syntax == "yaml":
            quote = place.quote
            needs = isinstance(choice, str) and label.lower() in ("no", "yes", "on", "off", "y", "n", "true",
                                                                  "false", "null", "~")
            insert = (f"{label}{quote}" if quote else (f"'{label}'" if needs else label))
        elif syntax == "toml":
            bare = choice in ("true", "false") or not isinstance(choice, str)
            insert = label if bare else (f"{label}{place.quote}" if place.quote else f'"{label}"')
        else:
            insert = label
        out.append((Entry(label, entry.path, detail=f"{'.'.join(entry.path)} value"), insert))
    return _rank(out, place, "value")


def _rank(items: list[tuple[Entry, str]], place: _scan.Place, kind: str) -> list[CompletionItem]:
    """Prefix matches first, then other matches of what is typed; deprecated ones after the others."""
    typed = place.prefix.lower()
    bare = typed.lstrip("-")
    scored = []
    for entry, insert in items:
        label = entry.name.lower()
        if not typed or label.startswith(typed) or (bare and label.lstrip("-").startswith(bare)):
            group = 0
        elif bare and bare in label:
            group = 1
        elif bare and _subsequence(bare.replace("-", "").replace("_", ""), label):
            group = 2
        else:
            continue
        scored.append(((group, entry.deprecated, label), entry, insert))
    scored.sort(key=lambda s: s[0])
    out = []
    for _, entry, insert in scored[:500]:
        doc = " ".join(entry.doc.split())
        if len(doc) > MAX_DOC:
            doc = doc[:MAX_DOC].rsplit(" ", 1)[0] + " …"
        notes = [n for n in entry.notes if not n.startswith("From ")][:3]
        documentation = "\n\n".join(x for x in (doc, " ".join(notes)) if x)
        out.append(CompletionItem(entry.name, entry.detail or entry.summary(), documentation, insert, kind))
    return out


def _subsequence(needle: str, haystack: str) -> bool:
    it = iter(haystack)
    return all(c in it for c in needle)
