"""Precision on a blind validation set (issue 30): real setups from public repositories that are in
none of ../shared's folders and none of the fixtures, kept OUT of the project and out of sight of
whoever changes the rules. This script prints only aggregates and cause classes, so that the work
that fixes the tool never reads the set's files.

The set is a folder of repository trees, one per setup (`<owner>__<repo>/`, the repository's own
layout), and a verdict table beside it (`verdicts.tsv`, tab-separated, header row):

  file  line  code  pointer  severity  verdict  cause  premises_in_tree  reason

`file` is relative to the set folder, `severity` the one the finding had when it was judged,
`verdict` true | false (a claim right only for another release than the one the repository runs is
false), `cause` a class for a false finding (program, reader, extension, release, unset-value, role,
own-reader, rule-logic, other; `-` for a true one), `premises_in_tree` yes | no: whether everything
the claim rests on is established by files in the tree (so that a true claim reported only as an
info is a loss). A finding is named by (file, line, code, pointer); the verdict of a claim does not
change with the severity it is reported at.

  python bench/blind_precision.py --set ../blind/set --verdicts ../blind/verdicts.tsv [--src DIR]
      [--unjudged OUT.tsv]   # the reported findings with no verdict yet, as rows to fill in

Each setup folder is checked as a user would check a repository (`shardshift check <setup>/`, the
working directory at the set folder), in a child process running the shardshift under `--src`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COLUMNS = ("file", "line", "code", "pointer", "severity", "verdict", "cause", "premises_in_tree", "reason")
JUDGED = ("error", "warning")


def load_verdicts(path: Path) -> dict[tuple, dict]:
    rows: dict[tuple, dict] = {}
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines or tuple(lines[0].split("\t")) != COLUMNS:
        raise SystemExit(f"{path}: the header must be {' TAB '.join(COLUMNS)}")
    for number, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        cells = line.split("\t")
        if len(cells) != len(COLUMNS):
            raise SystemExit(f"{path}:{number}: {len(cells)} cells, expected {len(COLUMNS)}")
        row = dict(zip(COLUMNS, cells))
        if row["verdict"] not in ("true", "false"):
            raise SystemExit(f"{path}:{number}: verdict {row['verdict']!r}")
        rows[(row["file"], int(row["line"]), row["code"], row["pointer"])] = row
    return rows


def run(set_dir: Path, src: Path, timeout: int) -> tuple[list[dict], list[str]]:
    """Every finding of `check <setup>/ --format json` per setup folder, and the setups that failed."""
    found, failed = [], []
    env = dict(os.environ, PYTHONPATH=str(src))
    for setup in sorted(p.name for p in set_dir.iterdir() if p.is_dir() and not p.name.startswith(".")):
        try:
            done = subprocess.run([sys.executable, "-m", "shardshift", "check", setup + "/", "--format", "json",
                                   "--min-severity", "info"], cwd=set_dir, env=env, capture_output=True,
                                  text=True, timeout=timeout)
            data = json.loads(done.stdout)
        except (subprocess.TimeoutExpired, json.JSONDecodeError):
            failed.append(setup)
            continue
        for f in data.get("findings", []):
            f["setup"] = setup
            found.append(f)
    return found, failed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", type=Path, default=ROOT.parent / "blind" / "set")
    parser.add_argument("--verdicts", type=Path, default=ROOT.parent / "blind" / "verdicts.tsv")
    parser.add_argument("--src", type=Path, default=ROOT / "src")
    parser.add_argument("--unjudged", type=Path, help="write the findings with no verdict here (rows to fill in)")
    parser.add_argument("--timeout", type=int, default=300)
    args = parser.parse_args(argv)
    verdicts = load_verdicts(args.verdicts) if args.verdicts.exists() else {}
    found, failed = run(args.set, args.src, args.timeout)

    counts: dict[str, Counter] = defaultdict(Counter)
    false_causes: Counter = Counter()
    repos_false_error: set[str] = set()
    lost: Counter = Counter()
    unjudged: list[dict] = []
    setups = {f["setup"] for f in found}
    for f in found:
        key = (f["file"], f["line"], f["code"], f.get("pointer") or "")
        verdict = verdicts.get(key)
        severity = f["severity"]
        if severity in JUDGED:
            if verdict is None:
                counts[severity]["unjudged"] += 1
                unjudged.append(f)
                continue
            if verdict["verdict"] == "true":
                counts[severity]["true"] += 1
            else:
                counts[severity]["false"] += 1
                false_causes[(severity, verdict["cause"])] += 1
                if severity == "error":
                    repos_false_error.add(f["setup"])
        elif verdict is not None and verdict["verdict"] == "true" and verdict["premises_in_tree"] == "yes":
            lost[verdict["code"][:2]] += 1  # a true claim whose premises are in the tree, reported as an info
        elif verdict is None and f.get("unknown_context"):
            counts["info"]["unjudged (unknown context)"] += 1
            unjudged.append(f)

    print(f"setups: {len(list(p for p in args.set.iterdir() if p.is_dir()))} checked, {len(setups)} with findings, "
          f"{len(failed)} failed to run (timeout or no JSON)")
    for severity in JUDGED:
        c = counts[severity]
        judged = c["true"] + c["false"]
        share = f"{c['true'] / judged:.1%}" if judged else "-"
        print(f"{severity}s: {c['true'] + c['false'] + c['unjudged']} reported, {c['true']} true, {c['false']} false, "
              f"{c['unjudged']} unjudged: {share} right")
    print(f"repositories with a false error: {len(repos_false_error)} of {len(setups | set(failed))}")
    print(f"true findings with their premises in the tree reported only as infos: {sum(lost.values())}"
          + (f" ({', '.join(f'{k} {v}' for k, v in sorted(lost.items()))})" if lost else ""))
    if counts["info"]:
        print(f"infos with unknown context and no verdict: {counts['info']['unjudged (unknown context)']}")
    if false_causes:
        print("false findings by cause: " + ", ".join(f"{s} {c}: {n}" for (s, c), n in sorted(false_causes.items())))
    if args.unjudged is not None:
        with args.unjudged.open("w", encoding="utf-8") as out:
            out.write("\t".join(COLUMNS) + "\tmessage\n")
            for f in unjudged:
                out.write("\t".join((f["file"], str(f["line"]), f["code"], f.get("pointer") or "", f["severity"],
                                     "true|false", "-", "yes|no", "", f["message"].replace("\t", " ")
                                     .replace("\n", " "))) + "\n")
        print(f"{len(unjudged)} unjudged findings written to {args.unjudged}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
