"""Cold-start and throughput of `shardshift check`.

Measures, in fresh processes (median of N runs):
  * `python -c pass` (the interpreter's own start-up on this machine),
  * `shardshift check` on one ds_config,
  * `shardshift check` over the whole shared corpus (one process, every file).

Usage: python bench/bench_check.py [--runs N] [--file PATH] [--corpus DIR]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed(command: list[str], runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--file", default=str(ROOT / "fixtures" / "deepspeed" / "zero2_bf16_adamw.json"))
    parser.add_argument("--corpus", default=str(ROOT.parent / "shared" / "corpus"))
    args = parser.parse_args()

    python = timed([sys.executable, "-c", "pass"], args.runs)
    one = timed([sys.executable, "-m", "shardshift", "check", args.file], args.runs)
    print(f"python -c pass                     {python * 1000:8.1f} ms (median of {args.runs})")
    print(f"shardshift check <one ds_config>   {one * 1000:8.1f} ms (median of {args.runs}; "
          f"{(one - python) * 1000:.1f} ms over the interpreter)")
    corpus = Path(args.corpus)
    if corpus.is_dir():
        files = sum(1 for p in corpus.rglob("*") if p.is_file())
        whole = timed([sys.executable, "-m", "shardshift", "check", str(corpus)], max(1, args.runs // 3))
        print(f"shardshift check <corpus>          {whole * 1000:8.1f} ms for {files} files "
              f"({whole / files * 1000:.2f} ms a file)")


if __name__ == "__main__":
    main()
