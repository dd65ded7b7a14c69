"""DS201 on a Megatron-LM launch with --decrease-batch-size-if-needed: what the finding says Megatron does with a
global batch that does not divide over the data-parallel ranks, checked with Megatron-LM's own code
(../shared/oracles/megatron-lm, through tests/coverage_loaders/megatron.py in a child process)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import ROOT, check_json

LAUNCH = """#!/bin/bash
torchrun --nproc_per_node 8 pretrain_gpt.py \\
    --num-layers 4 --hidden-size 256 --num-attention-heads 8 \\
    --seq-length 512 --max-position-embeddings 512 \\
    --micro-batch-size 2 --global-batch-size 20 {extra}\\
    --lr 1e-4 --train-iters 10 --mock-data --tokenizer-type NullTokenizer --vocab-size 1024 --bf16
"""
CASES = {"refused.sh": "", "rounded.sh": "--decrease-batch-size-if-needed --eval-global-batch-size 16 ",
         "eval_refused.sh": "--decrease-batch-size-if-needed "}

CHILD = r"""
import importlib.util, json, sys
from pathlib import Path
tests = Path(sys.argv[1])
sys.path.insert(0, str(tests))
spec = importlib.util.spec_from_file_location("megatron_loader", tests / "coverage_loaders" / "megatron.py")
loader = importlib.util.module_from_spec(spec)
spec.loader.exec_module(loader)
loader.prepare()
from megatron.core import num_microbatches_calculator as calculator
judge = loader._state["judge"]
out = {}
for path in sys.argv[2:]:
    try:
        loader.load(Path(path))
    except RuntimeError as error:
        out[Path(path).name] = {"refused": str(error)}
        continue
    args = judge.last_args  # the microbatch calculator set_global_variables builds from them
    calculator.init_num_microbatches_calculator(
        rank=0, global_batch_size=args.global_batch_size, micro_batch_size=args.micro_batch_size,
        data_parallel_size=args.data_parallel_size * args.gtp_weight_remat_size,
        decrease_batch_size_if_needed=args.decrease_batch_size_if_needed,
        step_batch_size_schedule=args.step_batch_size_schedule, seq_length=args.seq_length)
    out[Path(path).name] = {"running": calculator.get_current_running_global_batch_size()}
    calculator.destroy_num_microbatches_calculator()
print(json.dumps(out))
"""


@pytest.mark.oracle
def test_ds201_says_what_megatron_does_with_a_batch_that_does_not_divide(tmp_path):
    for name, extra in CASES.items():
        (tmp_path / name).write_text(LAUNCH.format(extra=extra), encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", CHILD, str(ROOT / "tests"), *(str(tmp_path / n) for n in CASES)],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    megatron = json.loads(done.stdout.strip().splitlines()[-1])
    _, out = check_json("--isolated", *(str(tmp_path / n) for n in CASES))
    found = {name: [f for f in out["findings"] if f["file"].rsplit("/", 1)[-1] == name and f["code"] == "DS201"]
             for name in CASES}

    # without the flag Megatron refuses the batch (validate_args' check of the eval batch, which defaults to it, comes
    # first in this release; the microbatch calculator's own check after it): an error
    assert "must be divisible" in megatron["refused.sh"]["refused"]
    assert [f["severity"] for f in found["refused.sh"]] == ["error"]
    # with it (and an eval batch that divides) Megatron trains on the batch rounded down: a warning that says so
    assert megatron["rounded.sh"] == {"running": 16}
    [rounded] = found["rounded.sh"]
    assert rounded["severity"] == "warning" and "rounds it down to 16" in rounded["message"]
    # with it but no eval batch of its own, validate_args refuses the eval batch, which defaults to the global one
    assert "eval_global_batch_size (20) must be divisible" in megatron["eval_refused.sh"]["refused"]
    [eval_refused] = found["eval_refused.sh"]
    assert eval_refused["severity"] == "error" and "eval global batch" in eval_refused["message"]
