"""Throughput of shardshift's ds_config parser (shardshift.jsonc: DeepSpeed's hjson dialect,
positioned), beside json.loads and the hjson package, and the hostile case of issue 11 end to end.

  parse rows      generated inputs, each parsed in this process (best of N, CPU time): values/s and MB/s
                  - flat:    {"k000001abc": 1, ...}  one object of N members (the hostile shape)
                  - nested:  a realistic ds_config repeated as N objects in an array
                  - hjson:   the same data written by hjson.dumps (quoteless keys/strings, no commas)
  end to end      `shardshift check big.json` and `--format json` in a fresh process, where big.json is
                  a 3.5 MB ds_config with 200,000 unknown top-level keys (issue 11 asks for < 3 s);
                  wall and CPU time of the child, median of --runs.

  --stages        the hostile case stage by stage, in this process (CPU time): parse, read, rules,
                  present, render text, render json

Usage: python bench/bench_parse.py [--runs N] [--keys N] [--stages]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import string
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

DS_CONFIG = {
    "train_batch_size": 256, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 8,
    "gradient_clipping": 1.0, "steps_per_print": 100,
    "zero_optimization": {"stage": 3, "overlap_comm": True, "reduce_bucket_size": 5e8,
                          "stage3_prefetch_bucket_size": 5e7, "offload_optimizer": {"device": "cpu", "pin_memory": True}},
    "bf16": {"enabled": True},
    "optimizer": {"type": "AdamW", "params": {"lr": 3e-5, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.01}},
    "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_num_steps": 1000, "total_num_steps": 100000}},
}


def hostile(keys: int) -> str:
    """{"train_batch_size": 8, "k000001abc": 1, ...}: `keys` unknown top-level keys (3.5 MB at 200,000)."""
    rnd = random.Random(11)
    members = ['"train_batch_size": 8'] + [
        f'"k{i:06d}{"".join(rnd.choice(string.ascii_lowercase) for _ in range(3))}": {i % 1000}' for i in range(keys)]
    return "{" + ", ".join(members) + "}\n"


def count_values(data) -> int:
    if isinstance(data, dict):
        return 1 + sum(count_values(v) for v in data.values())
    if isinstance(data, list):
        return 1 + sum(count_values(v) for v in data)
    return 1


def best_cpu(function, text: str, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.process_time()
        function(text)
        times.append(time.process_time() - start)
    return min(times)


def child_times(args: list[str], runs: int) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "shardshift", *args], cwd=ROOT, stdout=subprocess.DEVNULL,
                       env={**os.environ, "PYTHONPATH": str(ROOT / "src")}, check=False)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def stages(path: Path) -> list[tuple[str, float]]:
    """CPU seconds of each stage of `shardshift check --format json PATH`, in this process."""
    import importlib

    from shardshift import api, check
    from shardshift.jsonc import parse_jsonc
    from shardshift.rules.base import Context

    text = path.read_text()
    times = []

    def timed(label, function):
        start = time.process_time()
        value = function()
        times.append((label, time.process_time() - start))
        return value

    timed("parse (jsonc)", lambda: parse_jsonc(text))
    documents = timed("read (parse + reader)", lambda: [check.load(str(path), True)])
    findings = timed("rules, suppressions, sort", lambda: check.check_documents(documents, Context()))
    result = check.CheckResult()
    result.documents, result.findings = documents, findings
    result.files = [check.CheckedFile(str(path), documents[0].format)]
    timed("present (api: display paths)", lambda: api.present(result, None))
    for name in ("text", "json"):
        reporter = importlib.import_module(f"shardshift.report.{name}")
        timed(f"render {name}", lambda reporter=reporter: reporter.render(result))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--keys", type=int, default=200_000)
    parser.add_argument("--stages", action="store_true", help="only the per-stage CPU time of the hostile case")
    options = parser.parse_args()
    if options.stages:
        with tempfile.TemporaryDirectory() as directory:
            big = Path(directory) / "big.json"
            big.write_text(hostile(options.keys))
            print(f"stages of `check` on {big.stat().st_size / 1e6:.1f} MB, {options.keys:,} unknown keys (CPU s):")
            for label, seconds in stages(big):
                print(f"  {label:30} {seconds:6.2f}")
        return

    from shardshift.jsonc import parse_jsonc

    try:
        import hjson
    except ImportError:
        hjson = None

    flat = hostile(options.keys)
    nested_data = [DS_CONFIG] * max(1, options.keys // 30)
    inputs = {"flat": flat, "nested": json.dumps(nested_data, indent=2)}
    if hjson is not None:
        inputs["hjson"] = hjson.dumps(nested_data)
    print(f"python {sys.version.split()[0]}; parse rows: best of {options.runs}, CPU time in this process")
    print(f"{'input':8} {'MB':>6} {'values':>9}   {'parser':14} {'seconds':>8} {'values/s':>11} {'MB/s':>7}")
    for name, text in inputs.items():
        values = count_values(parse_jsonc(text).to_python())
        size = len(text.encode()) / 1e6
        parsers = {"shardshift": parse_jsonc, "json.loads": json.loads}
        if hjson is not None:
            parsers["hjson.loads"] = hjson.loads
        for label, function in parsers.items():
            if label == "json.loads" and name == "hjson":
                continue
            seconds = best_cpu(function, text, options.runs)
            print(f"{name:8} {size:6.2f} {values:9d}   {label:14} {seconds:8.3f} {values / seconds:11,.0f} "
                  f"{size / seconds:7.2f}")

    with tempfile.TemporaryDirectory() as directory:
        big = Path(directory) / "big.json"
        big.write_text(flat)
        print(f"\nend to end: {big.stat().st_size / 1e6:.1f} MB, {options.keys:,} unknown top-level keys "
              f"(median of {options.runs} fresh processes)")
        for args in (["check", str(big)], ["check", "--format", "json", str(big)]):
            wall, cpu = child_times(args, options.runs)
            print(f"shardshift {' '.join(args[:-1]):24} wall {wall:7.2f} s   cpu {cpu:7.2f} s")


if __name__ == "__main__":
    main()
