"""The cost of checking one file as a pre-commit hook does, against the size of the repository
around it: the same small project alone and with N unrelated files added (Python modules, JSON
data, Markdown, YAML, text), each a git checkout with everything committed. Side by side in one
run, alternating, in fresh processes from the repository's root (as pre-commit runs the hook).

    python bench/bench_scale.py [--files 100000] [--runs 7] [--keep DIR] [--ignored]

Rows: the first check in each tree (nothing cached), then the median of the later ones, and the
ratio with/without. Issue 32 asks for at most 1.5x at 100k files (the later runs, where the design
caches). `--keep DIR` builds the trees in DIR and keeps them (built once, reused on later runs).
`--ignored`: the unrelated files sit in a folder that .gitignore excludes (data, not source).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# A Trainer's ds_config ("auto" values: their consumer is looked for) with a misspelled key (the
# repository's own code is searched for a reader of it): both searches cover the repository.
DS_CONFIG = """{
  "train_micro_batch_size_per_gpu": "auto",
  "gradient_accumulation_steps": "auto",
  "bf16": {"enabled": "auto"},
  "zero_optimization": {"stage": 2, "overlap_comm": true, "reduce_bucket_size": "auto"},
  "optimizer": {"type": "AdamW", "params": {"lr": "auto", "weight_decay": "auto"}},
  "gradient_clipping": "auto",
  "wall_clock_breakdwon": false
}
"""
TRAIN_SH = """#!/bin/bash
deepspeed --num_gpus 8 train.py --deepspeed configs/ds_config.json --per_device_train_batch_size 4 \\
    --gradient_accumulation_steps 2 --bf16
"""
TRAIN_PY = """from transformers import Trainer, TrainingArguments, HfArgumentParser


def main():
    (args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()
    Trainer(model=None, args=args).train()


if __name__ == "__main__":
    main()
"""
REQUIREMENTS = "deepspeed==0.16.4\ntransformers==4.46.0\ntorch==2.5.1\n"

MODULE = '''"""Module {n}: nothing here reads a training config."""
import json
import os


class Thing{n}:
    def __init__(self, value):
        self.value = value
        self.table = {{"a": 1, "b": 2}}

    def run(self, path):
        with open(os.path.join(path, "data_{n}.bin"), "rb") as handle:
            return len(handle.read()) + self.table.get("a", 0)


def helper_{n}(items):
    return [json.dumps(item) for item in items if item]
'''


def unrelated(n: int) -> tuple[str, str]:
    """The path and text of the n-th unrelated file: a mix like a large monorepo's."""
    folder = f"lib/pkg{n // 1000:03d}/sub{(n // 100) % 10}"
    kind = n % 10
    if kind < 5:
        return f"{folder}/mod{n}.py", MODULE.format(n=n)
    if kind < 7:
        return f"{folder}/data{n}.json", '{"id": %d, "values": [1, 2, 3], "name": "item %d"}\n' % (n, n)
    if kind == 7:
        return f"{folder}/notes{n}.md", f"# Notes {n}\n\nSome prose about item {n}.\n"
    if kind == 8:
        return f"{folder}/conf{n}.yaml", f"name: item{n}\nsize: {n}\nenabled: true\n"
    return f"{folder}/list{n}.txt", f"item {n}\n"


def build(tree: Path, files: int, ignored: bool = False) -> None:
    if (tree / ".built").exists():
        return
    shutil.rmtree(tree, ignore_errors=True)
    (tree / "configs").mkdir(parents=True)
    (tree / "scripts").mkdir()
    (tree / "configs" / "ds_config.json").write_text(DS_CONFIG)
    (tree / "scripts" / "train.sh").write_text(TRAIN_SH)
    (tree / "train.py").write_text(TRAIN_PY)
    (tree / "requirements.txt").write_text(REQUIREMENTS)
    for n in range(files):
        path, text = unrelated(n)
        target = tree / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    if ignored:  # the unrelated files are data the repository ignores (datasets, checkpoints, node_modules)
        (tree / ".gitignore").write_text("lib/\n")
    git = ["git", "-C", str(tree), "-c", "user.name=bench", "-c", "user.email=bench@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "tree"], check=True)
    (tree / ".git" / "info" / "exclude").write_text(".built\n")
    (tree / ".built").write_text("")


def once(tree: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "shardshift", "check", "configs/ds_config.json"], cwd=tree, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--keep", help="build the trees here and keep them")
    parser.add_argument("--src", default=str(ROOT / "src"),
                        help="the shardshift sources to time (another commit's: `git archive REF src | tar -x -C DIR`)")
    parser.add_argument("--ignored", action="store_true",
                        help="the unrelated files sit in a folder .gitignore excludes (data, not source)")
    parser.add_argument("--pre-commit", action="store_true",
                        help="run as pre-commit runs a hook (PRE_COMMIT=1: the commit's tracked files are the repository)")
    args = parser.parse_args()
    where = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="shardshift-scale-"))
    try:
        small, large = where / "alone", where / f"with{args.files}{'-ignored' if args.ignored else ''}"
        build(small, 0)
        build(large, args.files, args.ignored)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPATH"] = args.src
        if args.pre_commit:
            env["PRE_COMMIT"] = "1"
        env["PYTHONPYCACHEPREFIX"] = str(where / "pycache")
        env["XDG_CACHE_HOME"] = str(where / "cache")  # shardshift's own cache starts empty
        shutil.rmtree(where / "cache", ignore_errors=True)
        subprocess.run([sys.executable, "-c", "import shardshift.cli"], env=env)  # bytecode, once
        print(f"# {sum(1 for _ in large.rglob('*') if _.is_file()) - 1:,} files in the large tree "
              f"(.git included)")
        first = [once(small, env), once(large, env)]
        times: list[list[float]] = [[], []]
        for run in range(args.runs):
            for index in ((0, 1) if run % 2 == 0 else (1, 0)):
                times[index].append(once((small, large)[index], env))
        later = [statistics.median(t) for t in times]
        print(f"{'check one ds_config':34s} {'alone':>10s} {f'+{args.files:,} files':>14s} {'ratio':>7s}")
        print(f"{'first run (nothing cached)':34s} {first[0] * 1000:8.0f} ms {first[1] * 1000:12.0f} ms "
              f"{first[1] / first[0]:6.2f}x")
        print(f"{'later runs (median of ' + str(args.runs) + ')':34s} {later[0] * 1000:8.0f} ms "
              f"{later[1] * 1000:12.0f} ms {later[1] / later[0]:6.2f}x")
    finally:
        if not args.keep:
            shutil.rmtree(where, ignore_errors=True)


if __name__ == "__main__":
    main()
