"""Implicit failure sites of Accelerate's launcher and plugins, found by mutation (issue 33), and
how many shardshift reports: bench/mutation_deepspeed.py's measure for Accelerate config files.

Every Accelerate config the oracle accepts (the Accelerate rule fixtures and, where present,
../shared/corpus/accelerate) is mutated one value at a time (each number, bool and string leaf
becomes each of its neighbours: 0, -1, a fraction, a numeric string, null, the other bool, an
unknown word, and the YAML 1.1 words `no` / `on` written unquoted). Each mutant goes through what
`accelerate launch --config_file FILE train.py` does (tests/test_accelerate_oracle.py's child:
loader, launcher, the plugins under the exported environment) and through `shardshift check` of
its folder, with the launch script that runs it (`accelerate launch --config_file config.yaml
train.py`, no flag: the values are the file's, as in the oracle's launch).
Refused mutants are explicit when Accelerate raises ValueError / AssertionError, implicit
otherwise (AttributeError, TypeError, KeyError: code computing with the value).

    python bench/mutation_accelerate.py [--limit N] [--show 30] [--dump DIR]

`--dump DIR` writes each missed mutant (its config, Accelerate's error and shardshift's findings) to
DIR, to read why.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "src")]

from mutation_deepspeed import leaves, print_totals, put, verdict  # noqa: E402 - the same mutation and measure

EXPLICIT = ("ValueError", "AssertionError")


def neighbours(value):
    if isinstance(value, bool):
        return [not value, None, "maybe"]
    if isinstance(value, int):
        return [0, -1, value + 0.5, str(value), None]
    if isinstance(value, float):
        return [0, -1.0, None]
    if isinstance(value, str):
        return ["bogus", 0, None, "NO_WORD"]
    return []


def dump(config) -> str:
    """YAML as `accelerate config` writes it; the marker NO_WORD becomes an unquoted `no` (YAML 1.1's false)."""
    import yaml

    return yaml.safe_dump(config, sort_keys=False).replace("NO_WORD", "no")


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--show", type=int, default=25)
    parser.add_argument("--dump", type=Path, help="write each missed mutant here")
    args = parser.parse_args(argv)
    import yaml

    from shardshift import api

    from test_accelerate_oracle import run_oracle

    folders = [ROOT / "fixtures" / "accelerate" / "rules", ROOT.parent / "shared" / "corpus" / "accelerate"]
    sources = [p for folder in folders for p in sorted(folder.rglob("good*.yaml") if "fixtures" in str(folder)
                                                        else folder.glob("*.yaml"))]
    sources = sources[:args.limit] if args.limit else sources
    counts: Counter = Counter()
    missed: Counter = Counter()
    with tempfile.TemporaryDirectory() as scratch:
        base = run_oracle([str(p) for p in sources])
        mutants: list[tuple[str, str, str, str]] = []  # (file, source pointer, mutant type)
        seen = set()
        for number, path in enumerate(sources):
            if base[str(path)]["stage"] is not None:
                continue  # refused as it is
            try:
                config = yaml.safe_load(path.read_text(encoding="utf-8"))
            except yaml.YAMLError:
                continue
            if not isinstance(config, dict):
                continue
            counts["sources"] += 1
            for pointer, value in leaves(config, lists=False):
                for mutant_value in neighbours(value):
                    text = dump(put(config, pointer, mutant_value))
                    if text in seen:
                        continue
                    seen.add(text)
                    folder = Path(scratch, f"{number}-{len(mutants)}")
                    folder.mkdir()
                    target = folder / "config.yaml"
                    target.write_text(text, encoding="utf-8")
                    # the launch that runs it, leaving every value to the file (as the oracle's launch does):
                    # the premise of the findings that a command-line flag would override
                    (folder / "run.sh").write_text("accelerate launch --config_file config.yaml train.py\n",
                                                   encoding="utf-8")
                    shown = "unquoted no" if mutant_value == "NO_WORD" else type(mutant_value).__name__
                    mutants.append((str(target), pointer, shown, ""))
        counts["mutants"] = len(mutants)
        outcomes = run_oracle([m[0] for m in mutants])
        for target, pointer, shown, _ in mutants:
            outcome = outcomes[target]
            if outcome["stage"] is None:
                continue
            kind = (outcome["error"] or "").split(":", 1)[0]
            which = "explicit" if kind in EXPLICIT else "implicit"
            counts[f"refused {which}"] += 1
            result = api.check([str(Path(target).parent)], isolated=True, min_severity="info")
            reported = verdict(result.findings)
            counts[f"refused {which}, shardshift {reported}"] += 1
            if reported != "error":
                missed[(which, outcome["stage"], kind, pointer, shown)] += 1
                if args.dump:
                    kept = args.dump / f"{sum(missed.values()):03d}"
                    kept.mkdir(parents=True, exist_ok=True)
                    (kept / "config.yaml").write_text(Path(target).read_text(encoding="utf-8"), encoding="utf-8")
                    (kept / "why.txt").write_text(f"{pointer} {shown}\n{outcome['stage']}: {outcome['error']}\n\n" +
                                                  "\n".join(f"{f.code} {f.severity}: {f.message}" for f in result.findings),
                                                  encoding="utf-8")
    print_totals(counts)
    print("\nmissed (kind, stage, exception, key, mutant): count")
    for (which, stage, kind, pointer, shown), number in missed.most_common(args.show):
        print(f"  {which:<9}{stage:<8}{kind:<22}{pointer:<52}{shown:<12}{number:>4}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
