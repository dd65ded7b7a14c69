"""`shardshift check .` on whole trees, beside `ruff check --no-cache .` on the same trees (issue 32
asks for at most 5x), and with another commit's code (`--baseline REF`), in fresh processes
alternating run by run. Also says whether the findings are the same with both codes.

    python bench/bench_tree.py TREE [TREE ...] [--runs 3] [--baseline REF]

The trees are checkouts fetched for the measurement (Megatron-LM, axolotl, torchtitan, DeepSpeed),
never committed here. shardshift's cache goes to a temporary folder, emptied before each tree.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, bytes]:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True)
    return time.perf_counter() - start, done.stdout


def findings(output: bytes) -> list[tuple]:
    try:
        data = json.loads(output)
    except ValueError:
        return [("no JSON",)]
    return sorted((f["file"], f["line"], f["code"], f["severity"], f["message"]) for f in data["findings"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trees", nargs="+", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--baseline", metavar="REF", help="also time the src/ of this git commit")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="shardshift-bench-tree-"))
    try:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(scratch / "pycache")
        env["SHARDSHIFT_CACHE_DIR"] = str(scratch / "cache")
        sources = {"now": ROOT / "src"}
        if args.baseline:
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.baseline, "src"], check=True,
                                     capture_output=True).stdout
            (scratch / "base").mkdir()
            subprocess.run(["tar", "-x", "-C", str(scratch / "base")], input=archive, check=True)
            sources[args.baseline] = scratch / "base" / "src"
        ruff = shutil.which("ruff")
        print(f"{'tree':14s} {'files':>6s} {'ruff':>8s} " + " ".join(f"{name:>12s}" for name in sources)
              + "   ratio to ruff   same findings")
        for tree in args.trees:
            files = len(subprocess.run(["git", "-C", str(tree), "ls-files"], capture_output=True,
                                       text=True).stdout.splitlines())
            times: dict[str, list[float]] = {name: [] for name in [*sources, "ruff"]}
            outputs: dict[str, bytes] = {}
            for _ in range(args.runs):
                if ruff:
                    times["ruff"].append(timed([ruff, "check", "--no-cache", "-q", "."], tree, env)[0])
                for name, src in sources.items():
                    shutil.rmtree(scratch / "cache", ignore_errors=True)
                    took, out = timed([sys.executable, "-m", "shardshift", "check", "--isolated", "--format", "json",
                                       "."], tree, dict(env, PYTHONPATH=str(src)))
                    times[name].append(took)
                    outputs[name] = out
            median = {name: statistics.median(t) if t else float("nan") for name, t in times.items()}
            same = len({tuple(findings(o)) for o in outputs.values()}) == 1
            print(f"{tree.name:14s} {files:6d} {median['ruff']:7.2f}s "
                  + " ".join(f"{median[name]:11.2f}s" for name in sources)
                  + f"   {median['now'] / median['ruff']:8.1f}x       {'yes' if same else 'NO'}"
                  + f" ({len(findings(outputs['now']))})")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
