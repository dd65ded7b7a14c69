"""Reading time of Megatron launch scripts (shardshift's shell reader), in this process: every
script of ../shared/corpus/megatron-scripts and a long generated script of defaults and
arithmetic. Each row is the best of --runs reads (CPU time), after one warm-up read.

These were wall-clock asserts in tests/test_megatron_shell.py (a corpus script in under 0.25 s,
the generated one in under 0.5 s); a bound on a loaded machine fails for the machine, not for the
reader, so the measure lives here. Usage: python bench/bench_shell.py [--runs N] [--corpus DIR]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from shardshift.formats.megatron.shell import read_launch_script

ROOT = Path(__file__).resolve().parents[1]


def _best(text: str, path: str, runs: int) -> float:
    read_launch_script(text, path)
    times = []
    for _ in range(runs):
        start = time.process_time()
        read_launch_script(text, path)
        times.append(time.process_time() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--corpus", default=str(ROOT.parent / "shared" / "corpus" / "megatron-scripts"))
    args = parser.parse_args()
    generated = "".join(f"A{i}=${{X{i}:-{i}}}\nB{i}=$((A{i} * 2))\n" for i in range(60))
    generated += "ARGS=(\n" + "".join(f"  --flag-{i} $B{i}\n" for i in range(70)) + ")\ntorchrun t.py ${ARGS[@]}\n"
    print(f"{'generated script (60 defaults, 60 arithmetic, 70 flags)':58} {_best(generated, 't.sh', args.runs) * 1000:8.2f} ms")
    scripts = sorted(p for p in Path(args.corpus).glob("*") if p.is_file())
    if not scripts:
        print(f"no scripts in {args.corpus}")
        return
    times = {p.name: _best(p.read_text(errors="replace"), str(p), args.runs) for p in scripts}
    worst = max(times, key=times.get)
    print(f"{f'corpus: {len(times)} scripts, median':58} {statistics.median(times.values()) * 1000:8.2f} ms")
    print(f"{'corpus: worst':58} {times[worst] * 1000:8.2f} ms   ({worst})")


if __name__ == "__main__":
    main()
