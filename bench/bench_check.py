"""Start-up and throughput of `shardshift check` beside DeepSpeed's own config parser and a
JSON Schema validator, in fresh processes (what a pre-commit hook pays on every commit).

Each row is the median of N cold processes: wall time and CPU time (user + system of the child;
steadier than wall time on a shared machine). Bytecode is cached in a temporary directory
(PYTHONPYCACHEPREFIX) after a warm-up run, as it is for an installed package, even when the
environment sets PYTHONDONTWRITEBYTECODE.

  python -c pass                       the interpreter (site packages included)
  shardshift check FILE                one ds_config, every rule
  DeepSpeedConfig(FILE)                `import deepspeed` + DeepSpeed's own parse (needs deepspeed)
  jsonschema FILE                      `import jsonschema` + validate against schemas/ds_config.schema.json
  ... over the corpus                  every corpus ds_config in one process, each tool

Also reports whether `check` imported pydantic (it should not: the Plan is built only when a
rule reads it). Usage: python bench/bench_check.py [--runs N] [--file PATH] [--corpus DIR]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

DEEPSPEED_ONE = """
import os, sys, logging
os.environ.setdefault("DS_ACCELERATOR", "cpu")
import deepspeed
from deepspeed.utils import logger
logger.setLevel(logging.ERROR)
from deepspeed.runtime.config import DeepSpeedConfig
for path in sys.argv[1:]:
    try:
        DeepSpeedConfig(path)
    except Exception:
        pass
"""

JSONSCHEMA_ONE = """
import json, sys
import jsonschema
validator = jsonschema.Draft202012Validator(json.load(open(sys.argv[1])))
for path in sys.argv[2:]:
    try:
        data = json.load(open(path, encoding="utf-8-sig"))
    except ValueError:
        continue
    list(validator.iter_errors(data))
"""

CHECK_IMPORTS = """
import sys, io, contextlib
from shardshift import cli
with contextlib.redirect_stdout(io.StringIO()):
    cli.main(["check", "--isolated", sys.argv[1]])
print(",".join(m for m in ("pydantic", "shardshift.plan", "lark", "ruamel.yaml", "jsonschema", "deepdiff", "tomllib")
               if m in sys.modules))
"""


def measure(command: list[str], runs: int, env: dict[str, str]) -> tuple[float, float]:
    """Median wall and CPU seconds of `runs` fresh processes (after one warm-up run)."""
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT, env=env)
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT, env=env)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def row(name: str, result: tuple[float, float], base: tuple[float, float] | None = None) -> str:
    wall, cpu = result
    extra = f"   (+{(wall - base[0]) * 1000:6.1f} / +{(cpu - base[1]) * 1000:6.1f} over python)" if base else ""
    return f"{name:38s} wall {wall * 1000:8.1f} ms   cpu {cpu * 1000:8.1f} ms{extra}"


def has_deepspeed(env: dict[str, str]) -> bool:
    return subprocess.run([sys.executable, "-c", "import importlib.util, sys; "
                           "sys.exit(importlib.util.find_spec('deepspeed') is None)"], env=env).returncode == 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--file", default=str(ROOT / "fixtures" / "deepspeed" / "zero2_bf16_adamw.json"))
    parser.add_argument("--corpus", default=str(ROOT.parent / "shared" / "corpus" / "deepspeed"))
    args = parser.parse_args()

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(prefix="shardshift-bench-pycache-")
    env["DS_ACCELERATOR"] = "cpu"
    env.pop("GITHUB_ACTIONS", None)
    python = sys.executable
    schema = str(ROOT / "schemas" / "ds_config.schema.json")

    base = measure([python, "-c", "pass"], args.runs, env)
    print(row("python -c pass", base))
    print(row("shardshift check FILE", measure([python, "-m", "shardshift", "check", "--isolated", args.file],
                                               args.runs, env), base))
    print(row("jsonschema FILE (ds_config schema)", measure([python, "-c", JSONSCHEMA_ONE, schema, args.file],
                                                            args.runs, env), base))
    deepspeed = has_deepspeed(env)
    if deepspeed:
        print(row("DeepSpeedConfig(FILE) incl. import", measure([python, "-c", DEEPSPEED_ONE, args.file],
                                                                max(1, args.runs // 2), env), base))
    imported = subprocess.run([python, "-c", CHECK_IMPORTS, args.file], capture_output=True, text=True, cwd=ROOT,
                              env=env).stdout.strip()
    print(f"heavy modules imported by `check FILE`: {imported or 'none'}")

    corpus = Path(args.corpus)
    if corpus.is_dir():
        files = sorted(str(p) for p in corpus.iterdir() if p.is_file())
        runs = max(1, args.runs // 3)
        print(f"\nover {len(files)} corpus files, one process each tool (median of {runs}):")
        print(row("shardshift check CORPUS", measure([python, "-m", "shardshift", "check", "--isolated", *files],
                                                     runs, env)))
        print(row("jsonschema CORPUS", measure([python, "-c", JSONSCHEMA_ONE, schema, *files], runs, env)))
        if deepspeed:
            print(row("DeepSpeedConfig CORPUS incl. import", measure([python, "-c", DEEPSPEED_ONE, *files], runs,
                                                                     env)))


if __name__ == "__main__":
    main()
