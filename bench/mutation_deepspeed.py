"""Implicit failure sites of DeepSpeed's config parser, found by mutation (issue 33), and how many
shardshift reports.

Every ds_config DeepSpeed accepts (the DeepSpeed fixtures and, where present, ../shared/corpus/
deepspeed, after Trainer-style "auto" filling at the first world size that parses) is mutated one
value at a time: each number, bool and string leaf becomes each of its neighbours (0, -1, a
fraction, a numeric string, null, the other bool, an unknown word). Each mutant goes through
DeepSpeed's own parser (`DeepSpeedConfig`, tests/oracles.py, on the CPU) and through `shardshift
check` (at the same world size, judged by DeepSpeed 0.19.8). A mutant DeepSpeed refuses is a
failure site: explicit when the exception is a ValueError / AssertionError / pydantic
ValidationError the parser raises on purpose, implicit otherwise (TypeError, ZeroDivisionError,
KeyError, AttributeError: the parser computing with the value). The measure: for how many of the
refused mutants shardshift reports an error, per kind and exception type, and the missed cases
grouped by key and exception (what a rule would check).

    python bench/mutation_deepspeed.py [--limit N] [--show 30]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "src")]

from implicit_sites import EXPLICIT, leaves, neighbours, put  # noqa: E402 - the mutation, shared with the test


def verdict(findings) -> str:
    """What shardshift made of a mutant: "error", "warning only" or "info or nothing"."""
    severities = {f.severity for f in findings}
    return "error" if "error" in severities else "warning only" if "warning" in severities else "info or nothing"


def print_totals(counts) -> None:
    for name in sorted(counts):
        print(f"{name:<48}{counts[name]:>7}")
    refused = counts["refused explicit"] + counts["refused implicit"]
    caught = counts["refused explicit, shardshift error"] + counts["refused implicit, shardshift error"]
    if refused:
        print(f"{'refused mutants reported as errors':<48}{caught:>7} of {refused} ({100 * caught / refused:.1f}%)")


def sources(limit):
    folders = [ROOT / "fixtures" / "deepspeed", ROOT.parent / "shared" / "corpus" / "deepspeed"]
    found = []
    for folder in folders:
        for path in sorted(folder.glob("*.json")):
            try:
                found.append((path, json.loads(path.read_text(encoding="utf-8-sig"))))
            except (ValueError, UnicodeDecodeError):
                continue
    return found[:limit] if limit else found


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=int, default=0, help="at most this many source configs")
    parser.add_argument("--show", type=int, default=25, help="missed groups to list")
    args = parser.parse_args(argv)

    import os

    os.environ.setdefault("DS_ACCELERATOR", "cpu")
    from shardshift import api

    import oracles

    counts: Counter = Counter()
    missed: Counter = Counter()
    seen_mutants = set()
    with tempfile.TemporaryDirectory() as scratch:
        for path, config in sources(args.limit):
            if not isinstance(config, dict):
                continue
            world, filled, _ = oracles.first_acceptance(config)
            if world is None:
                continue
            counts["sources"] += 1
            for pointer, value in leaves(filled):
                for mutant_value in neighbours(value):
                    mutant = put(filled, pointer, mutant_value)
                    key = json.dumps(mutant, sort_keys=True)
                    if key in seen_mutants:
                        continue
                    seen_mutants.add(key)
                    ok, error, _ = oracles.deepspeed_accepts(mutant, world)
                    counts["mutants"] += 1
                    if ok:
                        continue
                    kind = error.split(":", 1)[0]
                    explicit = any(kind.endswith(e) for e in EXPLICIT)
                    which = "explicit" if explicit else "implicit"
                    counts[f"refused {which}"] += 1
                    target = Path(scratch, "ds_config.json")
                    target.write_text(json.dumps(mutant, indent=2), encoding="utf-8")
                    result = api.check([str(target)], world_size=world, deepspeed_version="0.19.8", isolated=True,
                                       min_severity="info")
                    reported = verdict(result.findings)
                    counts[f"refused {which}, shardshift {reported}"] += 1
                    if reported != "error":
                        generic = "/".join("N" if part.isdigit() else part for part in pointer.split("/"))
                        missed[(which, kind, generic, type(mutant_value).__name__)] += 1
    print_totals(counts)
    print("\nmissed (kind, exception, key, mutant type): count")
    for (which, kind, pointer, typename), number in missed.most_common(args.show):
        print(f"  {which:<9}{kind:<24}{pointer:<60}{typename:<6}{number:>4}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
