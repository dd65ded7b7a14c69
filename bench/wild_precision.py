"""Precision of shardshift's errors and warnings on ../shared/corpus/wild (45 real setups), per format
and per severity, from the verdicts in tests/wild_verdicts.tsv and a fresh in-process run of the tool
(one run per setup folder, as tests/test_wild.py does). Prints the table and writes bench/WILD.md:
a short explanation, the table, and every finding judged false with its reason.

  python bench/wild_precision.py            # print and write bench/WILD.md
  python bench/wild_precision.py --no-write # print only

A finding is right when its claim holds for the program and the framework release the repository
actually runs (judged against the framework's own code). The format of a finding is that of its
file, as the JSON `files` list gives it."""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "src"))

from wild_harness import JUDGED_SEVERITIES, WILD, Reported, Verdict, load_verdicts, run_wild  # noqa: E402

TARGET = {"error": 0.95, "warning": 0.85}


def _share(right: int, judged: int) -> str:
    return f"{right / judged:.1%}" if judged else "-"


def table(verdicts: dict, reported: list[Reported]) -> list[list[str]]:
    """Rows: format, severity, reported, judged true, judged false, unjudged, precision."""
    counts: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for r in reported:
        if r.severity not in JUDGED_SEVERITIES:
            continue
        for fmt in (r.format, "all"):
            cell = counts[(fmt, r.severity)]
            cell[0] += 1
            verdict = verdicts.get(r.key)
            cell[1 if verdict is not None and verdict.verdict else 2 if verdict is not None else 3] += 1
    rows = []
    formats = sorted({fmt for fmt, _ in counts if fmt != "all"}) + ["all"]
    for fmt in formats:
        for severity in JUDGED_SEVERITIES:
            if (fmt, severity) not in counts:
                continue
            total, right, wrong, unjudged = counts[(fmt, severity)]
            rows.append([fmt, severity, str(total), str(right), str(wrong), str(unjudged),
                         _share(right, right + wrong)])
    return rows


def render(rows: list[list[str]]) -> str:
    header = ["format", "severity", "reported", "true", "false", "unjudged", "precision"]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(f"**{c}**" if row[0] == "all" else c for c in row) + " |" for row in rows]
    return "\n".join(lines)


def false_findings(verdicts: dict, reported: list[Reported]) -> list[tuple[Reported, Verdict]]:
    return sorted(((r, verdicts[r.key]) for r in reported
                   if r.severity in JUDGED_SEVERITIES and r.key in verdicts and not verdicts[r.key].verdict),
                  key=lambda rv: (rv[0].code, rv[1].reason, rv[0].file, rv[0].line))


CAUSES = (  # (what a reason says, the cause it names), first match wins
    ("cause 1", "program: the Megatron flags' receiving program (fork, extra_args_provider) not found"),
    ("cause 2", "consumer: who reads the ds_config not found"),
    ("cause 3", "extension: vendored/forked framework copy, custom args module or plugin not found"),
    ("right only from", "release: right only from a newer release than the repository pins"),
    ("not a ds_config", "file kind: another program's JSON taken for a ds_config"),
)


def cause(reason: str) -> str:
    """The issue 19 cause a false finding's reason names, or "rule" (the rule itself is wrong)."""
    return next((name for marker, name in CAUSES if marker in reason), "rule: the rule or parser itself is wrong")


def causes_table(false: list[tuple[Reported, Verdict]]) -> str:
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r, v in false:
        counts[cause(v.reason)][JUDGED_SEVERITIES.index(r.severity)] += 1
    lines = ["| cause of the false finding | errors | warnings |", "|---|---|---|"]
    for name, (errors, warnings) in sorted(counts.items(), key=lambda item: -sum(item[1])):
        lines.append(f"| {name} | {errors} | {warnings} |")
    return "\n".join(lines)


def history(verdicts: dict, reported: list[Reported]) -> list[str]:
    """Every finding judged false in the table (what the tool once reported as an error or a
    warning, before issue 19's context), by cause, and what it is now: an info or not reported."""
    now = {r.key: r.severity for r in reported}
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for v in verdicts.values():
        if v.verdict:
            continue
        state = now.get(v.key)
        counts[cause(v.reason)][0 if state is None else 1 if state == "info" else 2] += 1
    lines = ["| cause | now not reported | now an info | still an error or warning |", "|---|---|---|---|"]
    for name, (gone, info, still) in sorted(counts.items()):
        lines.append(f"| {name} | {gone} | {info} | {still} |")
    return lines


def write_markdown(path: Path, rows: list[list[str]], false: list[tuple[Reported, Verdict]], unjudged: int,
                   stale_true: list[Verdict], verdicts: dict | None = None,
                   reported: list[Reported] | None = None) -> None:
    out = [
        "# Precision on real repositories (`../shared/corpus/wild`)",
        "",
        "Written by `python bench/wild_precision.py`; `tests/test_wild.py` checks the same numbers.",
        "",
        "`../shared/corpus/wild/` holds 45 real setups, one folder per repository (configs, launch and entry",
        "scripts, vendored argument modules, dependency pins). Every error and warning `shardshift check`",
        "gives there was judged against the frameworks' own code (installed deepspeed 0.19.8, accelerate,",
        "transformers, torchtitan 0.2.2, axolotl 0.21.0, Megatron-LM's argument code, the repository's own",
        "forks and vendored copies, and older releases where the repository pins one). A finding is *true*",
        "when its claim holds for the program and release the repository actually runs. The verdicts, each",
        "with the code that decides it, are in `tests/wild_verdicts.tsv`.",
        "",
        f"Issue 19's target: errors at least {TARGET['error']:.0%} right, warnings at least {TARGET['warning']:.0%}.",
        "Infos are not judged (a finding that depends on context the tool could not find is an info that",
        "says what is unknown). A new error or warning makes `tests/test_wild.py` fail and print the rows to",
        "add to the table (verdict and one sentence citing the code that decides it).",
        "",
        render(rows),
        "",
    ]
    if unjudged:
        out += [f"{unjudged} error/warning finding(s) have no verdict yet (run `pytest tests/test_wild.py`).", ""]
    if stale_true:
        out += [f"{len(stale_true)} finding(s) judged true are no longer errors or warnings (known losses are "
                "marked with severity `info` in the table, with why):", ""]
        out += [f"- `{v.file}:{v.line}` {v.code} {v.pointer}" + (f": {v.reason}" if v.severity == "info" else "")
                for v in stale_true]
        out += [""]
    if verdicts is not None and reported is not None:
        out += ["## What was false, and what it is now", "",
                "Every finding of the table judged false, by the cause its reason names: how many the tool no",
                "longer reports, how many are now infos that say which context is unknown, and how many are",
                "still errors or warnings (each listed below).", "", *history(verdicts, reported), ""]
    out += ["## Why the false ones are false", "", causes_table(false), ""]
    out += [f"## Findings judged false ({len(false)})", "",
            "Grouped by rule and reason; each group lists where the finding is.", ""]
    groups: dict[tuple[str, str, str], list[Reported]] = defaultdict(list)
    for r, v in false:
        groups[(r.code, r.severity, v.reason)].append(r)
    for (code, severity, reason), where in groups.items():
        by_file: dict[str, list[str]] = defaultdict(list)
        for r in where:
            by_file[r.file].append(str(r.line))
        places = "; ".join(f"`{file}` line{'s' if len(lines) > 1 else ''} {', '.join(dict.fromkeys(lines))}"
                           for file, lines in by_file.items())
        out.append(f"- **{code}** {severity} ×{len(where)}: {reason}. At {places}.")
    path.write_text("\n".join(out) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true", help="print the table only")
    args = parser.parse_args(argv)
    if not WILD.is_dir():
        print(f"{WILD} is not present", file=sys.stderr)
        return 2
    verdicts = {v.key: v for v in load_verdicts()}
    reported = run_wild()
    rows = table(verdicts, reported)
    print(render(rows))
    false = false_findings(verdicts, reported)
    unjudged = sum(1 for r in reported if r.severity in JUDGED_SEVERITIES and r.key not in verdicts)
    still = {r.key for r in reported if r.severity in JUDGED_SEVERITIES}
    stale_true = [v for v in verdicts.values() if v.verdict and v.key not in still]
    print()
    print(causes_table(false))
    print(f"\n{len(false)} false, {unjudged} unjudged, {len(stale_true)} judged true but no longer reported")
    if not args.no_write:
        target = ROOT / "bench" / "WILD.md"
        write_markdown(target, rows, false, unjudged, stale_true, verdicts, reported)
        print(f"wrote {target.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
