"""Run many emitted FSDP2 modules in one torchrun launch (a launch costs 10-20 s).

    torchrun --standalone --nproc-per-node=2 driver.py JOBS.json RESULTS.json

JOBS.json: [{"name": ..., "module": path to the emitted .py, "optimizer_steps": N}, ...]
RESULTS.json (written by rank 0): {name: {"losses": [...], "lrs": [...], "applied": [...],
"accumulation": N, "error": str | null}}. A module that raises is recorded and the driver goes
on with the next one (the exception is deterministic, so every rank raises at the same place).
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import sys
import time
import traceback
import warnings
from pathlib import Path

import torch
import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parent))
from model import TinyTransformer, batch  # noqa: E402


def _grad_norm(model: torch.nn.Module) -> float:
    squares = torch.zeros((), dtype=torch.float64)
    for parameter in model.parameters():
        grad = parameter.grad
        if grad is None:
            continue
        if hasattr(grad, "full_tensor"):
            grad = grad.full_tensor()
        squares += grad.detach().double().pow(2).sum()
    return float(squares.sqrt())


def run_one(job: dict) -> dict:
    started = time.perf_counter()
    spec = importlib.util.spec_from_file_location(f"emitted_{job['name']}", job["module"])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch.manual_seed(0)
    model = TinyTransformer()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        engine = module.setup(model)
    rank = dist.get_rank()
    accumulation = engine.gradient_accumulation_steps
    losses, lrs, applied, betas, norms = [], [], [], [], []
    micro = 0
    for _ in range(job["optimizer_steps"]):
        total = 0.0
        for index in range(accumulation):
            loss = engine(batch(rank, micro))
            engine.backward(loss)
            if index == accumulation - 1:  # the whole gradient, before clipping: DeepSpeed's global norm
                norms.append(_grad_norm(engine.model))
            engine.step()
            total += float(loss.detach())
            micro += 1
        losses.append(total / accumulation)
        group = engine.optimizer.param_groups[0]
        lrs.append(float(group["lr"]))
        betas.append([float(b) for b in group["betas"]] if "betas" in group else None)
        applied.append(engine.global_steps - engine.skipped_steps)
    finite = all(math.isfinite(x) for x in losses)
    return {"losses": losses, "lrs": lrs, "betas": betas, "applied": applied, "norms": norms,
            "accumulation": accumulation, "world": dist.get_world_size(),
            "finite": finite, "error": None, "seconds": round(time.perf_counter() - started, 3)}


def main() -> None:
    jobs = json.loads(Path(sys.argv[1]).read_text())
    results = {}
    for job in jobs:
        try:
            results[job["name"]] = run_one(job)
        except Exception:  # recorded, then the next module runs
            results[job["name"]] = {"error": traceback.format_exc(limit=6)}
        dist.barrier() if dist.is_initialized() else None
    if not dist.is_initialized() or dist.get_rank() == 0:
        Path(sys.argv[2]).write_text(json.dumps(results, indent=1))
    if dist.is_initialized():
        dist.destroy_process_group()
    # No interpreter finalization: a gloo worker thread still holding a tensor takes the GIL there and
    # aborts the rank ("terminate called without an active exception").
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
