"""`deepspeed.initialize` on the CPU as a test oracle: what the engine DeepSpeed builds from a
ds_config holds (optimizer class, param groups, scheduler and its learning rates, batch, ZeRO
stage, precision) or where it refuses (while building the engine, or at the first training step).

`engine_outcomes(cases)` runs every case in one child Python (`python THIS_FILE`, JSON on stdin,
JSON on the last line of stdout): `import deepspeed` costs about 3.5 s and its process group,
accelerator and logger are process-wide, so a child keeps them out of the test process. One rank,
gloo, world size 1 (MASTER_ADDR/PORT, RANK, WORLD_SIZE, LOCAL_RANK set), DS_ACCELERATOR=cpu, a
`torch.nn.Linear(4, 4)` model. DeepSpeed's CPU ops (shm comm) are compiled on the first run ever
(minutes), then cached: no short timeout.

A case is {"config": dict, "client_optimizer": bool (pass torch.optim.AdamW(lr=1e-4) as
optimizer=), "steps": training steps to run (forward, backward, engine.step), "probe": scheduler
steps at which to read the learning rate and betas (the scheduler is stepped to each with
`scheduler.step(k)`, after the training steps), "save_16bit": call `engine.save_16bit_model`,
"pipeline": build a one-stage `PipelineModule` instead of the Linear model}.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
TIMEOUT = 900  # seconds: a first run compiles DeepSpeed's CPU ops


def _number(value: Any) -> Any:
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, (list, tuple)):
        return [_number(v) for v in value]
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    return str(value)


def _group(optimizer: Any) -> dict:
    if optimizer is None or not getattr(optimizer, "param_groups", None):
        return {}
    group = optimizer.param_groups[0]
    return {key: _number(group[key]) for key in ("lr", "betas", "eps", "weight_decay", "momentum", "adam_w_mode",
                                                 "bias_correction", "amsgrad") if key in group}


def _model(deepspeed: Any, torch: Any, case: dict) -> Any:
    if not case.get("pipeline"):
        return torch.nn.Linear(4, 4)
    from deepspeed.pipe import PipelineModule

    deepspeed.init_distributed(dist_backend="gloo")
    return PipelineModule(layers=[torch.nn.Linear(4, 4)], num_stages=1, loss_fn=lambda out, label: out.sum())


def _run_case(deepspeed: Any, torch: Any, case: dict) -> dict:
    try:
        model = _model(deepspeed, torch, case)
    except BaseException as error:  # noqa: BLE001
        return {"stage": "model", "error": f"{type(error).__name__}: {error}"[:600]}
    kwargs: dict[str, Any] = {}
    if case.get("client_optimizer"):
        kwargs["optimizer"] = torch.optim.AdamW(model.parameters(), lr=1e-4)
    else:
        kwargs["model_parameters"] = model.parameters()
    out: dict[str, Any] = {"stage": None, "error": None}
    try:
        engine, optimizer, _, scheduler = deepspeed.initialize(model=model, config=case["config"], **kwargs)
    except BaseException as error:  # noqa: BLE001 - every refusal is a result here (asserts included)
        out.update(stage="initialize", error=f"{type(error).__name__}: {error}"[:600])
        return out
    basic = getattr(engine, "basic_optimizer", None)
    out.update(
        engine=type(engine).__name__,
        optimizer=type(basic).__name__ if basic is not None else None,
        wrapper=type(engine.optimizer).__name__ if engine.optimizer is not None else None,
        scheduler=type(scheduler).__name__ if scheduler is not None else None,
        group=_group(basic),
        train_batch_size=_number(engine.train_batch_size()),
        micro_batch=_number(engine.train_micro_batch_size_per_gpu()),
        gradient_accumulation_steps=_number(engine.gradient_accumulation_steps()),
        zero_stage=int(engine.zero_optimization_stage()),
        offload_optimizer=bool(engine.zero_offload_optimizer()),
        offload_param=bool(engine.zero_offload_param()),
        fp16=bool(engine.fp16_enabled()),
        bf16=bool(engine.bfloat16_enabled()),
        gradient_clipping=_number(engine.gradient_clipping()),
        communication_data_type=_number(engine.communication_data_type),
        param_dtype=str(next(engine.module.parameters()).dtype).replace("torch.", ""),
        wrapper_offload=_number(getattr(engine.optimizer, "offload_optimizer",
                                        getattr(engine.optimizer, "cpu_offload", None))),
        grad_accum_dtype=str(engine.get_data_types()[1]).replace("torch.", ""),
        adam_w_mode=_number(getattr(basic, "adam_w_mode", None)),
    )
    lrs_used: list = []
    try:
        for _ in range(int(case.get("steps", 0))):
            if basic is not None:
                lrs_used.append(_number(basic.param_groups[0]["lr"]))
            dtype = next(engine.module.parameters()).dtype
            loss = engine(torch.randn(2, 4, dtype=dtype)).float().sum()
            engine.backward(loss)
            engine.step()
    except BaseException as error:  # noqa: BLE001
        out.update(stage="step", error=f"{type(error).__name__}: {error}"[:600], lrs_used=lrs_used)
        return out
    out.update(group_after_steps=_group(basic), lrs_used=lrs_used, global_steps=int(engine.global_steps))
    if case.get("save_16bit"):
        import tempfile

        with tempfile.TemporaryDirectory() as folder:
            saved = engine.save_16bit_model(folder)
            out["save_16bit"] = {"returned": _number(saved), "files": sorted(os.listdir(folder))}
    lrs, betas = {}, {}
    if scheduler is not None and case.get("probe"):
        for step in case["probe"]:
            scheduler.step(step)
            group = basic.param_groups[0]
            lrs[str(step)] = _number(group["lr"])
            if "betas" in group:
                betas[str(step)] = _number(group["betas"])
    out.update(lrs=lrs, betas=betas)
    return out


def _child() -> None:
    import logging
    import warnings

    warnings.filterwarnings("ignore")
    os.environ.setdefault("DS_ACCELERATOR", "cpu")
    import deepspeed
    import torch
    from deepspeed.utils import logger

    logger.setLevel(logging.ERROR)
    cases = json.load(sys.stdin)
    results = {name: _run_case(deepspeed, torch, case) for name, case in cases.items()}
    sys.stdout.write("\n" + json.dumps(results) + "\n")


def _remove_stale_build_locks(older_than: float = 1800) -> None:
    """A run killed while DeepSpeed JIT-builds an op (cpu_adam, fused_adam) leaves torch's build
    `lock` file behind, and every later build waits on it forever (torch's FileBaton). A build
    takes about a minute and a half here, so a lock older than half an hour is stale."""
    import time

    root = os.environ.get("TORCH_EXTENSIONS_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "torch_extensions")
    for directory, _, files in os.walk(root):
        if "lock" in files:
            lock = os.path.join(directory, "lock")
            try:
                if time.time() - os.path.getmtime(lock) > older_than:
                    os.remove(lock)
            except OSError:
                pass


def engine_outcomes(cases: dict[str, dict], *, timeout: float = TIMEOUT) -> dict[str, dict]:
    """Run every case through `deepspeed.initialize` in one child process (see the module doc)."""
    _remove_stale_build_locks()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "DS_ACCELERATOR": "cpu", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "RANK": "0",
           "LOCAL_RANK": "0", "WORLD_SIZE": "1", "LOCAL_WORLD_SIZE": "1", "PYTHONWARNINGS": "ignore"}
    done = subprocess.run([sys.executable, str(HERE)], input=json.dumps(cases), capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=HERE.parent)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        raise AssertionError(f"deepspeed.initialize oracle failed ({done.returncode}):\n{done.stdout[-3000:]}\n"
                             f"{done.stderr[-3000:]}")
    return json.loads(lines[-1])


if __name__ == "__main__":
    _child()
