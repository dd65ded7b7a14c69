"""Latency of hover + completion (shardshift.lsp.knowledge), which an editor asks for on every
keystroke: one hover and one completion per keystroke, each keystroke a new text (no cache hit on
the text), median and worst of N keystrokes after a first (cold) call, in this process.

  fixture ds_config      fixtures/deepspeed/zero3_offload_fp16.jsonc.json (a usual config)
  large ds_config        a generated ds_config of ~2,300 lines (1,500 optimizer params, 200 scheduler lists)
  long launch script     a generated Megatron launch script of ~450 lines (600 flags in two arrays)
  cold                   the first hover of a fresh interpreter: imports and tables loaded once

Usage: PYTHONPATH=src python bench/bench_knowledge.py [--keystrokes N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def per_keystroke(knowledge, path: str, text: str, hover_at: tuple[int, int], complete_at: tuple[int, int],
                  keystrokes: int) -> tuple[float, float]:
    knowledge.hover(path, text, *hover_at)
    knowledge.complete(path, text, *complete_at)
    times = []
    for n in range(keystrokes):
        typed = text + " " * (n + 1)
        start = time.perf_counter()
        knowledge.hover(path, typed, *hover_at)
        knowledge.complete(path, typed, *complete_at)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), max(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keystrokes", type=int, default=40)
    args = parser.parse_args()
    from shardshift.formats.megatron.flags import table
    from shardshift.lsp import knowledge

    tmp = tempfile.mkdtemp()
    os.mkdir(os.path.join(tmp, ".git"))  # a repository of its own: no pin found
    rows = []
    fixture = ROOT / "fixtures" / "deepspeed" / "zero3_offload_fp16.jsonc.json"
    text = fixture.read_text(encoding="utf-8")
    lines = text.split("\n")
    i = next(n for n, row in enumerate(lines) if '"stage"' in row)
    at = (i, lines[i].index('"stage"') + 2)
    rows.append(("fixture ds_config", len(lines), per_keystroke(knowledge, str(fixture), text, at, at, args.keystrokes)))

    data = {"optimizer": {"type": "AdamW", "params": {f"p{n}": n for n in range(1500)}},
            "zero_optimization": {"stage": 3}, "bf16": {"enabled": True},
            "scheduler": {"type": "WarmupLR", "params": {f"s{n}": [n, n + 1] for n in range(200)}}}
    lines = json.dumps(data, indent=2).split("\n")
    i = next(n for n, row in enumerate(lines) if '"stage"' in row)
    text = "\n".join(lines[:i + 1] + ['    "o'] + lines[i + 1:])
    path = os.path.join(tmp, "ds_config.json")
    Path(path).write_text(text, encoding="utf-8")
    rows.append(("large ds_config", len(lines), per_keystroke(knowledge, path, text, (i, 7), (i + 1, 6),
                                                              args.keystrokes)))

    flags = [f for f in table().flags if f.action == "store" and f.type == "int"][:300]
    block = "ARGS=(\n" + "".join(f"    {f.spellings[0]} 1\n" for f in flags) + ")\n"
    text = ("#!/bin/bash\nset -e\n" + block * 2 + 'torchrun --nproc_per_node 8 pretrain_gpt.py "${ARGS[@]}" \\\n'
            "    --num-layers 2 \\\n    --tensor-m\n")
    path = os.path.join(tmp, "train.sh")
    Path(path).write_text(text, encoding="utf-8")
    lines = text.split("\n")
    last = len(lines) - 2
    rows.append(("long launch script", len(lines), per_keystroke(knowledge, path, text, (last - 1, 8), (last, 14),
                                                                 args.keystrokes)))
    for name, count, (median, worst) in rows:
        print(f"{name:<20} {count:>6} lines   hover+complete per keystroke: median {median:6.2f} ms, max {worst:6.2f} ms")

    cold = ("import time; t = time.perf_counter(); from shardshift.lsp import knowledge; "
            f"knowledge.hover({str(fixture)!r}, open({str(fixture)!r}).read(), 3, 6); "
            "print((time.perf_counter() - t) * 1000)")
    out = subprocess.run([sys.executable, "-c", cold], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    print(f"{'cold':<20} first hover of a fresh interpreter (imports and tables): {float(out.stdout):.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
