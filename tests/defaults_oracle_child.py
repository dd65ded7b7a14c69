"""Child-process side of tests/test_defaults_oracle.py: what each framework's own objects give for an
empty or minimal configuration. One function per framework; each runs in a fresh Python that
imports only that framework (tests/test_defaults_oracle.py `_child`), JSON in, JSON out."""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import io
import os
import tempfile
import warnings
from typing import Any


def deepspeed(cases: list[dict]) -> list[dict]:
    """DeepSpeedConfig of each {"config", "world"} at that data-parallel size (oracles.deepspeed_accepts)."""
    import oracles

    out = []
    for case in cases:
        ok, error, resolved = oracles.deepspeed_accepts(case["config"], case["world"])
        if resolved is not None:
            resolved = {k: v for k, v in resolved.items() if k not in ("zero_config", "optimizer_params",
                                                                        "scheduler_params", "offload_optimizer",
                                                                        "offload_param")}
        out.append({"ok": ok, "error": error, "resolved": resolved})
    return out


def torchtitan(payload: dict) -> dict:
    """JobConfig()'s defaults (torchtitan 0.2.2, the package __init__ skipped as in
    torchtitan_oracle_child) and, per degrees case, ParallelDims' shard degree and maybe_enable_amp's mode."""
    import torchtitan_oracle_child as child

    child._config_manager()
    from torchtitan.config.job_config import JobConfig

    config = dataclasses.asdict(JobConfig())
    keep = {section: config[section] for section in ("training", "parallelism", "optimizer", "lr_scheduler")}
    return {"config": keep, "dims": [child._dims(case) for case in payload.get("dims", [])]}


def axolotl(configs: list[dict]) -> list[dict]:
    """axolotl 0.21.0 validate_config of each minimal YAML mapping: the fields the table reads."""
    from axolotl.utils.config import validate_config
    from axolotl.utils.dict import DictDefault

    keys = ("micro_batch_size", "gradient_accumulation_steps", "batch_size", "bf16", "fp16", "optimizer",
            "lr_scheduler", "weight_decay", "max_grad_norm", "sequence_len", "adam_beta1", "adam_beta2",
            "adam_epsilon", "tensor_parallel_size", "context_parallel_size", "expert_parallel_size",
            "cosine_min_lr_ratio")
    out = []
    for config in configs:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            cfg = validate_config(DictDefault(config))
        out.append({key: cfg.get(key) for key in keys})
    return out


def accelerate(payload: dict) -> dict:
    """accelerate 1.15: the plugins built with no settings (as a launch with an empty config section
    gives the training processes), ClusterConfig's num_processes default, and what `accelerate launch`
    does with each config file of payload["files"] (the error, if it refuses it)."""
    from accelerate.commands.config.config_args import ClusterConfig, load_config_from_file
    from accelerate.utils import DeepSpeedPlugin, FullyShardedDataParallelPlugin, MegatronLMPlugin

    for name in list(os.environ):
        if name.startswith(("ACCELERATE_", "FSDP_", "MEGATRON_LM_")):
            del os.environ[name]
    out: dict[str, Any] = {}
    fsdp1 = FullyShardedDataParallelPlugin()
    out["fsdp1"] = {"version": fsdp1.fsdp_version, "sharding_strategy": str(getattr(
        fsdp1.sharding_strategy, "name", fsdp1.sharding_strategy))}
    os.environ["FSDP_VERSION"] = "2"
    fsdp2 = FullyShardedDataParallelPlugin()
    out["fsdp2"] = {"version": fsdp2.fsdp_version, "reshard_after_forward": fsdp2.reshard_after_forward}
    del os.environ["FSDP_VERSION"]
    out["deepspeed"] = {"zero_stage": DeepSpeedPlugin().zero_stage}
    megatron = MegatronLMPlugin()
    out["megatron"] = {"tp": megatron.tp_degree, "pp": megatron.pp_degree,
                       "gradient_clipping": megatron.gradient_clipping,
                       "use_distributed_optimizer": megatron.use_distributed_optimizer}
    out["num_processes"] = {f.name: f.default for f in dataclasses.fields(ClusterConfig)}["num_processes"]
    launched = {}
    from accelerate.commands import launch as accelerate_launch

    for path in payload.get("files", []):
        loaded = load_config_from_file(path)
        result = {"mixed_precision": loaded.mixed_precision, "num_processes": loaded.num_processes, "error": None}
        args = accelerate_launch.launch_command_parser().parse_args(["--config_file", path, "train.py"])
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                args, _, _ = accelerate_launch._validate_launch_command(args)
            result["launch_mixed_precision"] = args.mixed_precision
        except Exception as error:  # noqa: BLE001
            result["error"] = f"{type(error).__name__}: {error}"
        launched[path] = result
    out["files"] = launched
    return out


def transformers(_payload: Any) -> dict:
    """transformers' TrainingArguments built with no training settings (use_cpu, a scratch output_dir)."""
    from transformers import TrainingArguments

    with tempfile.TemporaryDirectory() as folder:
        args = TrainingArguments(output_dir=folder, use_cpu=True, report_to="none")
    keys = ("per_device_train_batch_size", "gradient_accumulation_steps", "learning_rate", "adam_beta1", "adam_beta2",
            "adam_epsilon", "weight_decay", "max_grad_norm", "warmup_steps", "bf16", "fp16", "fsdp")
    out = {key: getattr(args, key) for key in keys}
    out["optim"] = str(getattr(args.optim, "value", args.optim))
    out["lr_scheduler_type"] = str(getattr(args.lr_scheduler_type, "value", args.lr_scheduler_type))
    out["fsdp"] = [str(getattr(o, "value", o)) for o in (args.fsdp or [])]
    return out


def torch(_payload: Any) -> dict:
    """The constructors' defaults of torch.optim.AdamW / Adam / SGD."""
    import torch.optim

    out = {}
    for name in ("AdamW", "Adam", "SGD"):
        parameters = inspect.signature(getattr(torch.optim, name)).parameters
        out[name] = {key: (list(p.default) if isinstance(p.default, tuple) else p.default)
                     for key, p in parameters.items()
                     if key in ("lr", "betas", "eps", "weight_decay", "decoupled_weight_decay")
                     and p.default is not inspect.Parameter.empty}
        if "decoupled_weight_decay" not in out[name] and name == "AdamW":
            # AdamW(Adam) passes decoupled_weight_decay=True to Adam.__init__ (no parameter of its own)
            out[name]["decoupled_weight_decay"] = "decoupled_weight_decay=True" in inspect.getsource(
                getattr(torch.optim, name).__init__)
    return out


# Megatron's resolved arguments the defaults table is compared with, beside the harness's own RESOLVED
MEGATRON_EXTRA = ("optimizer", "adam_beta1", "adam_beta2", "adam_eps", "weight_decay", "clip_grad", "lr_decay_style",
                  "lr_warmup_iters", "min_lr", "loss_scale", "initial_loss_scale", "min_loss_scale",
                  "loss_scale_window", "hysteresis")


def megatron(payload: dict) -> list[dict]:
    """parse_args + validate_args of each (argv, world) with tests/megatron_oracle_child.Judge (its GPU
    facts and import patches), keeping the scheduler, optimizer and loss-scaling arguments too."""
    from pathlib import Path

    import megatron_oracle_child as harness

    harness.RESOLVED = tuple(harness.RESOLVED) + MEGATRON_EXTRA
    judge = harness.Judge(Path(payload["megatron"]))
    with judge.script._patched_imports():
        return [judge(argv, world) for argv, world in payload["cases"]]
