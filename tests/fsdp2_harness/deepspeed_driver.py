"""Train ds_configs under DeepSpeed itself on the CPU (gloo), for the side-by-side comparison with
their migrated FSDP2 modules (tests/test_migration_training.py, one rank;
tests/test_migration_training_two_ranks.py, two).

    python deepspeed_driver.py JOBS.json RESULTS.json                      # one rank
    torchrun --standalone --nproc-per-node=2 deepspeed_driver.py JOBS.json RESULTS.json

JOBS.json: [{"name": ..., "config": {...}, "optimizer_steps": N, "module": the migrated module}, ...]
(a config without an optimizer block gets the module's `build_optimizer` as its client optimizer,
as a script passes its own to `deepspeed.initialize`). Each job builds the same
TinyTransformer from seed 0 (model.py), trains it on the same batches as driver.py, and records per
optimizer step the mean loss over its micro-steps, the learning rate after the step, and the global
gradient norm before clipping (`engine.get_global_grad_norm()`). Each rank trains on its own
batches (`batch(rank, micro_step)`, as driver.py); rank 0 writes RESULTS.json with its own losses.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import traceback
import warnings
from pathlib import Path

warnings.filterwarnings("ignore")
os.environ.setdefault("DS_ACCELERATOR", "cpu")
for key, value in {"MASTER_ADDR": "127.0.0.1", "RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0"}.items():
    os.environ.setdefault(key, value)

sys.path.insert(0, str(Path(__file__).resolve().parent))

import deepspeed  # noqa: E402
import torch  # noqa: E402
from deepspeed.utils import logger  # noqa: E402
from model import TinyTransformer, batch  # noqa: E402


def run_one(job: dict) -> dict:
    torch.manual_seed(0)
    model = TinyTransformer()
    kwargs = {"model_parameters": model.parameters()}
    if "optimizer" not in job["config"] and job.get("module"):
        # no optimizer block: DeepSpeed takes the client's; give it the one the migrated module builds
        import importlib.util

        spec = importlib.util.spec_from_file_location(f"client_{abs(hash(job['module']))}", job["module"])
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        kwargs = {"optimizer": module.build_optimizer(model.parameters())}
        zero = job["config"].get("zero_optimization") or {}
        if any(isinstance(zero.get(k), dict) and zero[k].get("device") not in (None, "none")
               for k in ("offload_optimizer", "offload_param")):
            # DeepSpeed refuses a client optimizer with offload unless told to keep it
            job["config"]["zero_force_ds_cpu_optimizer"] = False
    try:
        engine, _, _, _ = deepspeed.initialize(model=model, config=job["config"], **kwargs)
    except Exception as error:  # noqa: BLE001 - DeepSpeed refuses the config: nothing to train
        return {"error": f"{type(error).__name__}: {error}"[:600], "stage": "initialize"}
    accumulation = engine.gradient_accumulation_steps()
    rank = int(os.environ["RANK"])
    stage = int(engine.zero_optimization_stage())
    losses, lrs, norms = [], [], []
    micro = 0
    for _ in range(job["optimizer_steps"]):
        total = 0.0
        for index in range(accumulation):
            loss = engine(batch(rank, micro))
            engine.backward(loss)
            if stage == 0 and index == accumulation - 1:  # the engine keeps no norm without ZeRO
                norms.append(_grad_norm(engine.module))
            engine.step()
            total += float(loss.detach())
            micro += 1
        losses.append(total / accumulation)
        lrs.append(float(engine.get_lr()[0]))
        if stage > 0:
            norm = engine.get_global_grad_norm()
            norms.append(float(norm) if norm is not None else None)
    return {"losses": losses, "lrs": lrs, "norms": norms, "accumulation": accumulation,
            "optimizer": type(engine.basic_optimizer).__name__, "error": None, "stage": None,
            "world": torch.distributed.get_world_size()}


def _grad_norm(model: torch.nn.Module) -> float:
    squares = torch.zeros((), dtype=torch.float64)
    for parameter in model.parameters():
        if parameter.grad is not None:
            squares += parameter.grad.detach().double().pow(2).sum()
    return float(squares.sqrt())


def _cpu_info_once() -> None:
    """DeepSpeed asks py-cpuinfo for the CPU's flags each time it loads a CPU op (FusedAdam,
    CPUAdam: once per engine here), and py-cpuinfo starts a process for it each time (about 1 s).
    The answer cannot change within the run: ask once."""
    import functools

    import cpuinfo

    cpuinfo.get_cpu_info = functools.cache(cpuinfo.get_cpu_info)


def main() -> None:
    _cpu_info_once()
    logger.setLevel(logging.ERROR)
    deepspeed.init_distributed(dist_backend="gloo")
    jobs = json.loads(Path(sys.argv[1]).read_text())
    results = {}
    for job in jobs:
        try:
            results[job["name"]] = run_one(job)
            import gc

            gc.collect()
        except Exception:  # noqa: BLE001 - recorded, then the next config runs
            results[job["name"]] = {"error": traceback.format_exc(limit=6), "stage": "train"}
    if int(os.environ["RANK"]) == 0:
        Path(sys.argv[2]).write_text(json.dumps(results, indent=1))
    import multiprocessing

    for child in multiprocessing.active_children():  # ZenFlow's optimizer-step worker, for one
        child.kill()
    sys.stdout.flush()
    os._exit(0)  # as driver.py: no interpreter finalization with gloo threads about


if __name__ == "__main__":
    main()
