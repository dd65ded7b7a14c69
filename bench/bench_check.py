"""Start-up and throughput of `shardshift check` beside DeepSpeed's own config parser and a
JSON Schema validator, in fresh processes (what a pre-commit hook pays on every commit).

Each row is the median of N cold processes: wall time and CPU time (user + system of the child;
steadier than wall time on a shared machine). Bytecode is cached in a temporary directory
(PYTHONPYCACHEPREFIX) after a warm-up run, as it is for an installed package, even when the
environment sets PYTHONDONTWRITEBYTECODE.

  python -c pass                       the interpreter (site packages included)
  shardshift check FILE                one ds_config, every rule
  shardshift check LAUNCH              one Megatron launch script, every rule (alternating with FILE,
                                       with the ratio: issue 9 asks for at most 2x)
  DeepSpeedConfig(FILE)                `import deepspeed` + DeepSpeed's own parse (needs deepspeed)
  jsonschema FILE                      `import jsonschema` + validate against schemas/ds_config.schema.json
  ... over the corpus                  every corpus ds_config in one process, each tool

Also reports which heavy libraries `check` imported (none should be: the Plan is plain
classes, lark's parser is compiled ahead of time, YAML is read only for YAML files). Usage: python bench/bench_check.py [--runs N] [--file PATH] [--corpus DIR] [--baseline REF]

--baseline REF (a git commit) also times the `check` rows with REF's code: `git archive REF src`
is unpacked into a temporary directory and put on PYTHONPATH (this tree's src/ is on PYTHONPATH
for the other rows), the same interpreter runs both, and the two alternate run by run (A B, B A,
...) so that machine noise hits both alike; the ratio after/before follows each pair. The code
before the Plan refactor is 26aa8af:

  python bench/bench_check.py --baseline 26aa8af --runs 15
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
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
print(",".join(m for m in ("pydantic", "lark", "ruamel.yaml", "jsonschema", "deepdiff", "tomllib")
               if m in sys.modules))
"""


def measure(command: list[str], runs: int, env: dict[str, str]) -> tuple[float, float]:
    """Median wall and CPU seconds of `runs` fresh processes (after one warm-up run)."""
    return measure_alternating([(command, env)], runs)[0]


def measure_alternating(variants: list[tuple[list[str], dict[str, str]]], runs: int) -> list[tuple[float, float]]:
    """`measure` for each (command, env), one warm-up each, then the variants alternate run by run."""
    for command, env in variants:
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT, env=env)
    walls: list[list[float]] = [[] for _ in variants]
    cpus: list[list[float]] = [[] for _ in variants]
    for repetition in range(runs):
        order = range(len(variants)) if repetition % 2 == 0 else reversed(range(len(variants)))
        for index in order:
            command, env = variants[index]
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT, env=env)
            walls[index].append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus[index].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return [(statistics.median(w), statistics.median(c)) for w, c in zip(walls, cpus)]


def ratio(after: tuple[float, float], before: tuple[float, float]) -> str:
    return f"{'':38s} after/before: wall {after[0] / before[0]:.3f}   cpu {after[1] / before[1]:.3f}"


def with_src(env: dict[str, str], src: Path) -> dict[str, str]:
    """`env` with `src` on PYTHONPATH, after checking that the child imports shardshift from there."""
    env = dict(env, PYTHONPATH=str(src))
    where = subprocess.run([sys.executable, "-c", "import shardshift; print(shardshift.__file__)"], cwd=ROOT,
                           env=env, capture_output=True, text=True, check=True).stdout.strip()
    if not Path(where).is_relative_to(src):
        sys.exit(f"shardshift imports from {where}, not from {src}")
    print(f"# {src}: shardshift from {where}")
    return env


def check_rows(name: str, arguments: list[str], runs: int, env: dict[str, str], base_env: dict[str, str] | None,
               ref: str | None, overhead: tuple[float, float] | None = None) -> None:
    """The `check` row for this tree and, with --baseline, the same row for REF, alternating."""
    command = [sys.executable, "-m", "shardshift", "check", "--isolated", *arguments]
    if base_env is None:
        print(row(name, measure(command, runs, env), overhead))
        return
    after, before = measure_alternating([(command, env), (command, base_env)], runs)
    print(row(name, after, overhead))
    print(row(f"{name} ({ref})", before, overhead))
    print(ratio(after, before))


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
    parser.add_argument("--launch", default=str(ROOT / "fixtures" / "megatron" / "llama_8b_tp2_pp2.sh"),
                        help="a Megatron launch script for the LAUNCH row")
    parser.add_argument("--corpus", default=str(ROOT.parent / "shared" / "corpus" / "deepspeed"))
    parser.add_argument("--baseline", metavar="REF", help="also time `check` with the src/ of this git commit")
    args = parser.parse_args()

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(prefix="shardshift-bench-pycache-")
    env["DS_ACCELERATOR"] = "cpu"
    env.pop("GITHUB_ACTIONS", None)
    schema = str(ROOT / "schemas" / "ds_config.schema.json")
    checkout = None
    try:
        check_env, base_env = with_src(env, ROOT / "src"), None
        if args.baseline:
            checkout = Path(tempfile.mkdtemp(prefix="shardshift-bench-baseline-"))
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.baseline, "src"], check=True,
                                     capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", str(checkout)], input=archive, check=True)
            base_env = with_src(env, checkout / "src")
        run_all(args, env, check_env, base_env, schema)
    finally:
        if checkout is not None:
            shutil.rmtree(checkout)


def run_all(args, env: dict[str, str], check_env: dict[str, str], base_env: dict[str, str] | None,
            schema: str) -> None:
    python = sys.executable
    base = measure([python, "-c", "pass"], args.runs, env)
    print(row("python -c pass", base))
    check_rows("shardshift check FILE", [args.file], args.runs, check_env, base_env, args.baseline, base)
    if args.launch and Path(args.launch).is_file():
        command = [python, "-m", "shardshift", "check", "--isolated"]
        launch, single = measure_alternating([([*command, args.launch], check_env), ([*command, args.file], check_env)],
                                             args.runs)
        print(row("shardshift check LAUNCH", launch, base))
        print(f"{'':38s} LAUNCH/FILE: wall {launch[0] / single[0]:.3f}   cpu {launch[1] / single[1]:.3f}")
    print(row("jsonschema FILE (ds_config schema)", measure([python, "-c", JSONSCHEMA_ONE, schema, args.file],
                                                            args.runs, env), base))
    deepspeed = has_deepspeed(env)
    if deepspeed:
        print(row("DeepSpeedConfig(FILE) incl. import", measure([python, "-c", DEEPSPEED_ONE, args.file],
                                                                max(1, args.runs // 2), env), base))
    for label, tree_env in (("", check_env), (f" ({args.baseline})", base_env)):
        if tree_env is not None:
            imported = subprocess.run([python, "-c", CHECK_IMPORTS, args.file], capture_output=True, text=True,
                                      cwd=ROOT, env=tree_env).stdout.strip()
            print(f"heavy modules imported by `check FILE`{label}: {imported or 'none'}")

    corpus = Path(args.corpus)
    if corpus.is_dir():
        files = sorted(str(p) for p in corpus.iterdir() if p.is_file())
        runs = max(1, args.runs // 3)
        print(f"\nover {len(files)} corpus files, one process each tool (median of {runs}):")
        check_rows("shardshift check CORPUS", files, runs, check_env, base_env, args.baseline)
        print(row("jsonschema CORPUS", measure([python, "-c", JSONSCHEMA_ONE, schema, *files], runs, env)))
        if deepspeed:
            print(row("DeepSpeedConfig CORPUS incl. import", measure([python, "-c", DEEPSPEED_ONE, *files], runs,
                                                                     env)))


if __name__ == "__main__":
    main()
