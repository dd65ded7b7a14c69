"""A page per rule (`rules/<CODE>.md`) and the rules index (`rules/index.md`).

Each page is the rule's own documentation (its docstring), then what the code knows of it: the
severity and formats, whether a finding can carry a safe `--fix`, the releases it is written
against and those it distinguishes, the bad and good cases of its fixtures, and the framework
checks it mirrors (the coverage map, data/coverage/<framework>.tsv).
"""

from __future__ import annotations

import inspect
import re
from functools import lru_cache
from pathlib import Path

from shardshift.docs.markdown import cell, fence

MAX_LINES = 60  # a longer fixture is cut here (the page says so)
LANGUAGES = {".json": "json", ".jsonc": "json", ".hjson": "json", ".yaml": "yaml", ".yml": "yaml", ".toml": "toml",
             ".py": "python", ".sh": "bash", ".bash": "bash", ".slurm": "bash", ".args": "text", ".txt": "text"}
PREFIXES = {"SS": "General (every format)", "DS": "DeepSpeed", "FS": "FSDP2", "MG": "Megatron-LM", "AC": "Accelerate",
            "AX": "Axolotl", "TT": "torchtitan",
            "TA": "Hugging Face TrainingArguments", "PL": "Plan (semantic, every format)"}
# How a rule's code reads the release that judges a file (shardshift.context.releases).
READS_RELEASE = re.compile(r"context\.release\(|deepspeed_version|key_read_by|removed_by|strict_from|releases\.|"
                           r"Gate\b|gate\(")
NAMED_RELEASE = re.compile(r"\b(DeepSpeed|Accelerate|[Aa]xolotl|torchtitan|PyTorch|torch|Megatron(?:[- ]Core|-LM)?|"
                           r"core_v|[Tt]ransformers|Transformer Engine)[ v]*(\d+\.\d+(?:\.\d+)?)")


COVERAGE_FRAMEWORK = {"fsdp2": "torch", "megatron": "megatron-core"}  # coverage map name -> the framework whose release it is


def pages(root: Path) -> dict[str, str]:
    from shardshift.rules import all_rules

    rules = all_rules()
    found = {f"rules/{rule.code}.md": page(rule, root) for rule in rules}
    found["rules/index.md"] = index(rules)
    return found


def index(rules) -> str:
    lines = ["# Rules", "",
             f"{len(rules)} rules, listed by `shardshift rules`; `shardshift explain CODE` prints one rule's "
             "documentation and the link to its page here. Codes are stable: never renamed, never reused.", ""]
    groups: dict[str, list] = {}
    for rule in rules:
        groups.setdefault(rule.code[:2], []).append(rule)
    for prefix, members in groups.items():
        lines += [f"## {prefix}: {PREFIXES.get(prefix, prefix)}", "",
                  "| Code | Name | Severity | Formats | Summary |", "|---|---|---|---|---|"]
        for rule in members:
            lines.append(f"| [{rule.code}]({rule.code}.md) | `{rule.name}` | {rule.severity} | "
                         f"{cell(', '.join(rule.formats) or 'all')} | {cell(rule.summary())} |")
        lines.append("")
    return "\n".join(lines)


def page(rule, root: Path) -> str:
    from shardshift.context import FORMAT_FRAMEWORK
    from shardshift.context.releases import known_releases, newest

    doc = rule.documentation()
    summary, _, body = doc.partition("\n")
    source = _source(rule)
    fixable = "yes: some of its findings carry a safe fix that `shardshift check --fix` applies" \
        if re.search(r"fix_kind=(?!None)", source) else "no (a finding may still suggest one in its message)"
    frameworks = sorted({FORMAT_FRAMEWORK[f] for f in rule.formats if f in FORMAT_FRAMEWORK}
                        | {COVERAGE_FRAMEWORK.get(f, f) for f, _ in _coverage().get(rule.code, [])})
    lines = [f"# {rule.code} {rule.name}", "", f"*{summary.strip()}*", "",
             "| | |", "|---|---|",
             f"| Severity | {rule.severity} (default) |",
             f"| Formats | {cell(', '.join(rule.formats) or 'every format (the setup’s merged Plan)')} |",
             f"| Safe `--fix` | {fixable} |", ""]
    lines += ["## Releases", ""]
    if not rule.formats:
        lines.append("- Every format alike: each file is read with its own framework's release.")
    for framework in frameworks:
        oldest = ".".join(map(str, known_releases(framework)[0]))
        lines.append(f"- {framework}: written against **{'.'.join(map(str, newest(framework)))}** (the newest release "
                     f"shardshift knows; it knows {len(known_releases(framework))} releases from {oldest} on)")
    if READS_RELEASE.search(source):
        lines.append("- The rule reads the release that judges the file (the pin found in the repository's "
                     "dependency files, or `--<framework>-version`): what it reports depends on it.")
    else:
        lines.append("- No release check in the rule's code: it judges a file the same way whatever release is "
                     "pinned.")
    if "megatron" in rule.formats:
        from shardshift.formats.megatron.flags import table

        lines.append(f"- Megatron's flags are those of {table().described} (its own parser's table).")
    gated = gates(rule.code, source)
    if gated:
        lines += ["- The version tables its code consults:", *("    " + line for line in gated)]
    named = {f"{m.group(1)} {m.group(2)}".lower(): f"{m.group(1)} {m.group(2)}" for m in NAMED_RELEASE.finditer(doc)}
    named = sorted(named.values(), key=str.lower)
    if named:
        lines.append(f"- Releases its documentation names: {', '.join(named)}.")
    lines += ["", body.strip(), ""]
    lines += _fixtures(rule.code, root)
    lines += _mirrors(rule.code)
    return "\n".join(lines)


def _source(rule) -> str:
    """The rule class's source and that of the module-level functions it calls (one level): what
    the rule's code reads (releases, fix kinds)."""
    try:
        text = inspect.getsource(rule)
    except (OSError, TypeError):
        return ""
    module = inspect.getmodule(rule)
    for name in sorted(set(re.findall(r"\b([A-Za-z_]\w*)\(", text))):
        helper = getattr(module, name, None)
        if inspect.isfunction(helper) and helper.__module__ == getattr(module, "__name__", None):
            try:
                text += "\n" + inspect.getsource(helper)
            except (OSError, TypeError):
                pass
    return text


def _v(version) -> str:
    return ".".join(map(str, version))


def gates(code: str, source: str) -> list[str]:
    """The release gates the rule's code reads, as bullet lines: the DeepSpeed version tables
    (shardshift.versions, the key table's removed_in), Axolotl's per-check releases and the release
    ranges the Axolotl and torchtitan tables cover."""
    from shardshift import versions

    lines: list[str] = []
    if re.search(r"removed_by|removed_in", source):
        from shardshift.formats.deepspeed.keys import KEYS

        by_release: dict[tuple, list[str]] = {}
        for key in KEYS:
            if key.removed_in:
                by_release.setdefault(key.removed_in, []).append(f"`{key.path}`")
        lines += [f"- DeepSpeed {_v(r)} and later reject {', '.join(keys)}; earlier releases read them."
                  for r, keys in sorted(by_release.items())]
    if "strict_from" in source:
        lines += [f"- DeepSpeed validates `{section}` strictly (unknown keys rejected) from {_v(since)} on."
                  for section, since in versions.STRICT_SECTIONS.items()]
    if re.search(r"default_change|deepspeed_default", source):
        lines += [f"- `{c.pointer}`: default {c.before!r} ({c.meaning_before}) before DeepSpeed {_v(c.since)}, "
                  f"{c.after!r} ({c.meaning_after}) from it ({c.evidence})." for c in versions.DEFAULT_CHANGES]
    if re.search(r"key_read_by|KEY_CHANGES|key_change", source):
        for change in versions.KEY_CHANGES:
            if change.introduced:
                lines.append(f"- `{change.pointer}` is read from DeepSpeed {_v(change.introduced)} on ({change.evidence}).")
            if change.ignored_since:
                instead = f"; `{change.replaced_by}` instead" if change.replaced_by else ""
                lines.append(f"- `{change.pointer}` is ignored from DeepSpeed {_v(change.ignored_since)} on{instead} "
                             f"({change.evidence}).")
    if code.startswith("AX"):
        from shardshift.rules.axolotl import releases as axolotl

        for key, since in axolotl.CHECKS.items():
            if key == code or key.startswith(code + ":"):
                what = f" for `{key.split(':', 1)[1]}`" if ":" in key else ""
                lines.append(f"- Holds{what} from axolotl {_v(since.version)} on ({since.source}).")
        if READS_RELEASE.search(source):
            lines.append(f"- Axolotl's release tables cover {_v(axolotl.OLDEST)} to {_v(axolotl.NEWEST)}; a pin "
                         "outside them is reported as an unknown release (an info), never guessed.")
    if code.startswith("TT") and READS_RELEASE.search(source):
        from shardshift.rules.torchtitan import releases as torchtitan

        lines.append(f"- torchtitan's key table covers {_v(torchtitan.OLDEST)} to {_v(torchtitan.NEWEST)}; unknown "
                     f"keys are refused from {_v(torchtitan.STRICT_FROM)} on (earlier releases drop them).")
    return lines


def fixture_dirs(code: str, root: Path) -> list[Path]:
    """The fixture directories of rule `code`: fixtures/<format>/rules/<CODE>/ and fixtures/plan/<CODE>/."""
    fixtures = root / "fixtures"
    return sorted(p for p in (*fixtures.glob(f"*/rules/{code}"), *fixtures.glob(f"*/{code}")) if p.is_dir())


def examples(code: str, root: Path) -> list[tuple[str, Path]]:
    """("bad" | "good", file) for every bad* and good* file of the rule's fixtures, bad first (a folder's own
    files, then those of its sub-folders: a table rule keeps a folder of cases per part of its table)."""
    found = []
    for kind in ("bad", "good"):
        for directory in fixture_dirs(code, root):
            files = [f for f in directory.rglob(kind + "*") if f.is_file()]
            found += [(kind, f) for f in sorted(files, key=lambda f: (len(f.relative_to(directory).parts), f))]
    return found


def _fixtures(code: str, root: Path) -> list[str]:
    cases = examples(code, root)
    if not cases:
        return []
    lines = ["## Cases from the test fixtures", "",
             "The files the rule's tests use: a *bad* file shows what it reports, a *good* file what it accepts.", ""]
    for kind, path in cases:
        relative = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8", errors="replace")
        shown = text.splitlines()
        note = ""
        if len(shown) > MAX_LINES:
            note = f" (first {MAX_LINES} of {len(shown)} lines)"
            text = "\n".join(shown[:MAX_LINES])
        lines += [f"**{kind}** `{relative}`{note}", "", fence(text, LANGUAGES.get(path.suffix, "text"))]
    others = sorted({f.relative_to(root).as_posix() for d in fixture_dirs(code, root) for f in d.rglob("*")
                     if f.is_file() and not f.name.startswith(("bad", "good"))})
    if others:
        lines += ["The cases also use " + ", ".join(f"`{o}`" for o in others) + ".", ""]
    return lines


@lru_cache(maxsize=1)
def _coverage() -> dict[str, list[tuple[str, object]]]:
    from shardshift import coverage

    by_code: dict[str, list[tuple[str, object]]] = {}
    for framework in coverage.FRAMEWORKS:
        for verdict in coverage.load(framework).values():
            for code in verdict.codes:
                by_code.setdefault(code, []).append((framework, verdict))
    return by_code


def _mirrors(code: str) -> list[str]:
    from shardshift.coverage import RELEASES

    sites = _coverage().get(code, [])
    if not sites:
        return []
    lines = ["## The framework checks it mirrors", "",
             "Check sites of the framework's own configuration code (a `raise` or `assert` at the pinned release) "
             "that reject what this rule reports (`shardshift rules --coverage`).", "",
             "| Release | File | Function | Line | Check |", "|---|---|---|---|---|"]
    for framework, verdict in sites:
        file, _, rest = verdict.site.partition(":")
        function = rest.rsplit(":", 1)[0]
        check = verdict.check if len(verdict.check) <= 120 else verdict.check[:117] + "..."
        lines.append(f"| {cell(RELEASES[framework])} | `{file}` | `{function}` | {verdict.line} | `{cell(check)}` |")
    return lines + [""]
