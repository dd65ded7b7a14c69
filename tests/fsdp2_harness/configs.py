"""ds_configs for the FSDP2 migration tests: where they come from, how "auto" is filled, how a
config is fitted to the 2 CPU ranks of the test, and DeepSpeed's own answers (its config parser
and its LR scheduler classes) as the oracle. DeepSpeed is imported only inside functions."""

from __future__ import annotations

import copy
import inspect
import json
import math
import os
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
CORPUS = ROOT.parent / "shared" / "corpus"
WORLD = 2

# Plausible numbers for Hugging Face "auto" values, by key name (deepspeed.md §2: what HF fills).
AUTO_VALUES: dict[str, Any] = {
    "lr": 3e-4, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0.01, "warmup_min_lr": 0.0,
    "warmup_max_lr": 3e-4, "warmup_num_steps": 10, "total_num_steps": 100, "train_micro_batch_size_per_gpu": 2,
    "gradient_accumulation_steps": 2, "gradient_clipping": 1.0, "enabled": False, "stage": 2,
    "reduce_bucket_size": 256, "stage3_prefetch_bucket_size": 230, "stage3_param_persistence_threshold": 160,
    "allgather_bucket_size": 256, "sub_group_size": 1000000000, "stage3_max_live_parameters": 1000000000,
    "stage3_max_reuse_distance": 1000000000, "cycle_min_lr": 1e-5, "cycle_max_lr": 3e-4,
}
ONE_BIT = {"onebitadam", "zerooneadam", "onebitlamb"}


def fill_auto(value: Any, key: str = "") -> Any:
    """`value` with every "auto" replaced by a plausible number (train_batch_size is dropped, to be
    derived from micro x accumulation x world as DeepSpeed does)."""
    if isinstance(value, dict):
        return {k: fill_auto(v, k) for k, v in value.items() if not (k == "train_batch_size" and v == "auto")}
    if isinstance(value, list):
        return [fill_auto(v, key) for v in value]
    if value == "auto":
        return AUTO_VALUES.get(key, 1)
    return value


def fit_to_world(config: dict, world: int = WORLD) -> dict:
    """The config as it would be written for `world` ranks: a consistent batch, at most 4
    accumulation steps (the test runs a few optimizer steps), and hybrid/hpZ groups that divide
    `world`. Everything else is untouched."""
    config = copy.deepcopy(config)
    micro = config.get("train_micro_batch_size_per_gpu")
    steps = config.get("gradient_accumulation_steps")
    train = config.get("train_batch_size")
    if not isinstance(micro, int) or isinstance(micro, bool) or micro < 1:
        micro = max(1, train // world // (steps if isinstance(steps, int) and steps > 0 else 1)) if isinstance(
            train, int) and train >= world else 2
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
        steps = max(1, train // micro // world) if isinstance(train, int) and train else 1
    steps = min(steps, 4)
    config["train_micro_batch_size_per_gpu"] = micro
    config["gradient_accumulation_steps"] = steps
    config["train_batch_size"] = micro * steps * world
    zero = config.get("zero_optimization")
    if isinstance(zero, dict):
        if isinstance(zero.get("mics_shard_size"), int) and zero["mics_shard_size"] > 0:
            zero["mics_shard_size"] = world
        if isinstance(zero.get("zero_hpz_partition_size"), int) and zero["zero_hpz_partition_size"] > 1:
            zero["zero_hpz_partition_size"] = world
    return config


def load(path: Path) -> dict | None:
    """A ds_config as DeepSpeed loads a file (hjson, duplicate keys rejected), or None."""
    import hjson

    try:
        with open(path, encoding="utf-8") as handle:
            data = hjson.load(handle, object_pairs_hook=_no_duplicates)
    except Exception:  # noqa: BLE001 - not a config DeepSpeed would load
        return None
    return json.loads(json.dumps(data)) if isinstance(data, dict) else None


def _no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ValueError("duplicate keys")
    return dict(pairs)


def deepspeed_rejects(config: dict, world: int = WORLD) -> str | None:
    """Why DeepSpeed would refuse `config` at parse or initialize time (its config parser, its
    scheduler class, the optimizer's constructor arguments), or None."""
    os.environ.setdefault("DS_ACCELERATOR", "cpu")
    import torch
    from deepspeed.runtime import config as ds_config

    original = ds_config.dist.get_world_size, ds_config.dist.get_rank
    ds_config.dist.get_world_size, ds_config.dist.get_rank = (lambda *a, **k: world), (lambda *a, **k: 0)
    try:
        ds_config.DeepSpeedConfig(copy.deepcopy(config))
    except Exception as error:  # noqa: BLE001 - DeepSpeed's own verdict
        return f"DeepSpeedConfig: {type(error).__name__}: {str(error)[:120]}"
    finally:
        ds_config.dist.get_world_size, ds_config.dist.get_rank = original
    optimizer = config.get("optimizer")
    params = dict(optimizer.get("params") or {}) if isinstance(optimizer, dict) else {}
    name = optimizer.get("type") if isinstance(optimizer, dict) else None
    if "max_grad_norm" in params:
        return "optimizer params: max_grad_norm (ValueError at initialize)"
    if isinstance(name, str) and name.lower() in ("adam", "adamw"):
        from deepspeed.ops.adam import FusedAdam

        accepted = set(inspect.signature(FusedAdam.__init__).parameters) | {"torch_adam", "adam_w_mode",
                                                                          "fp32_optimizer_states"}
        unknown = set(params) - accepted
        if unknown:
            return f"optimizer params {sorted(unknown)} (TypeError at initialize)"
        if params.get("amsgrad") and not params.get("torch_adam"):
            return "FusedAdam raises for amsgrad"
        values = {k: v for k, v in params.items() if k in ("lr", "betas", "eps", "weight_decay")}
        try:  # the values FusedAdam would fail on at its first step; torch checks the same
            torch.optim.AdamW([torch.nn.Parameter(torch.zeros(2))], **values)
        except Exception as error:  # noqa: BLE001
            return f"optimizer params: {error}"
    elif isinstance(name, str) and hasattr(torch.optim, name):
        try:
            getattr(torch.optim, name)([torch.nn.Parameter(torch.zeros(2))], **params)
        except Exception as error:  # noqa: BLE001
            return f"torch.optim.{name}: {error}"
    scheduler = config.get("scheduler")
    if isinstance(scheduler, dict):
        try:
            deepspeed_lrs(config, 1)
        except Exception as error:  # noqa: BLE001
            return f"scheduler {scheduler.get('type')}: {type(error).__name__}: {error}"
    return None


def inexpressible(config: dict) -> str | None:
    """Why FSDP2 (as the emitted module) cannot express `config`, or None."""
    optimizer = config.get("optimizer") if isinstance(config.get("optimizer"), dict) else {}
    name = str(optimizer.get("type", "")).lower()
    if name in ONE_BIT:
        return f"1-bit optimizer {optimizer['type']} (compressed communication)"
    if name in ("lamb", "lion", "muon", "muadam", "muadamw", "musgd"):
        return f"optimizer {optimizer['type']} has no torch built-in"
    zero = config.get("zero_optimization") if isinstance(config.get("zero_optimization"), dict) else {}
    for block in ("offload_param", "offload_optimizer"):
        if isinstance(zero.get(block), dict) and zero[block].get("device") == "nvme":
            return "NVMe offload"
    if zero.get("zero_quantized_weights") or zero.get("zero_quantized_gradients"):
        return "ZeRO++ quantized collectives"
    if isinstance(config.get("pipeline"), dict) and config["pipeline"]:
        return "pipeline parallelism"
    for key in ("sequence_parallel_size",):
        if isinstance(config.get(key), int) and config[key] > 1:
            return "Ulysses sequence parallelism"
    tp = config.get("tensor_parallel")
    if isinstance(tp, dict) and isinstance(tp.get("autotp_size"), int) and tp["autotp_size"] > 1:
        return "tensor parallelism"
    sampling = (config.get("data_efficiency") or {}).get("data_sampling") if isinstance(
        config.get("data_efficiency"), dict) else None
    if isinstance(sampling, dict) and isinstance(sampling.get("curriculum_learning"), dict) \
            and sampling["curriculum_learning"].get("enabled"):
        return "curriculum learning (DeepSpeed's data sampler, which FSDP2 has no counterpart of)"
    routing = (config.get("data_efficiency") or {}).get("data_routing") if isinstance(
        config.get("data_efficiency"), dict) else None
    if isinstance(routing, dict) and isinstance(routing.get("random_ltd"), dict) and routing["random_ltd"].get("enabled"):
        return "random layer-token drop (DeepSpeed's data routing, which FSDP2 has no counterpart of)"
    return None


def combination(config: dict) -> tuple:
    """(ZeRO stage, precision, offload, optimizer, scheduler) of a config, DeepSpeed's defaults applied."""
    zero = config.get("zero_optimization") if isinstance(config.get("zero_optimization"), dict) else {}
    stage = zero.get("stage", 0) if isinstance(zero.get("stage", 0), int) else 0
    fp16 = (config.get("fp16") or {}).get("enabled") is True
    bf16 = (config.get("bf16") or config.get("bfloat16") or {}).get("enabled") is True
    devices = tuple(str((zero.get(b) or {}).get("device", "none")) for b in ("offload_param", "offload_optimizer"))
    optimizer = (config.get("optimizer") or {}).get("type")
    scheduler = (config.get("scheduler") or {}).get("type")
    return (stage, "fp16" if fp16 else "bf16" if bf16 else "fp32", devices,
            str(optimizer).lower() if optimizer else None, scheduler)


def deepspeed_lrs(config: dict, steps: int) -> tuple[list[float], list[Any]]:
    """The learning rate (and Adam betas) DeepSpeed's own scheduler gives before the first optimizer
    step and after each of `steps` scheduler steps, run on a torch optimizer on the CPU. The
    optimizer's lr is the config's (FusedAdam's default 1e-3 when absent), as DeepSpeed builds it."""
    os.environ.setdefault("DS_ACCELERATOR", "cpu")
    import torch
    from deepspeed.runtime import lr_schedules

    optimizer_block = config.get("optimizer") if isinstance(config.get("optimizer"), dict) else {}
    params = optimizer_block.get("params") or {}
    name = optimizer_block.get("type") or "AdamW"
    parameter = torch.nn.Parameter(torch.zeros(2))
    if hasattr(torch.optim, name) and name not in ("Adam", "AdamW"):  # a torch optimizer, torch's defaults
        optimizer = getattr(torch.optim, name)([parameter], **{k: v for k, v in params.items() if k == "lr"})
    else:  # DeepSpeed's Adam family: FusedAdam's default lr 1e-3
        optimizer = torch.optim.AdamW([parameter], lr=params.get("lr", 1e-3),
                                      betas=tuple(params.get("betas", (0.9, 0.999))))
    scheduler_block = config.get("scheduler") or {}
    kind = scheduler_block.get("type")
    lrs, betas = [optimizer.param_groups[0]["lr"]], [optimizer.param_groups[0].get("betas")]
    if kind is None:
        return lrs * (steps + 1), betas * (steps + 1)
    scheduler_class = getattr(lr_schedules, kind, None) or getattr(torch.optim.lr_scheduler, kind)
    scheduler = scheduler_class(optimizer, **(scheduler_block.get("params") or {}))
    lrs, betas = [float(optimizer.param_groups[0]["lr"])], [optimizer.param_groups[0].get("betas")]
    for _ in range(steps):
        optimizer.step()
        scheduler.step()
        lrs.append(float(optimizer.param_groups[0]["lr"]))
        betas.append(optimizer.param_groups[0].get("betas"))
    return lrs, betas


def close(a: float, b: float, rel: float = 1e-12) -> bool:
    return a == b or math.isclose(a, b, rel_tol=rel, abs_tol=1e-300)


def ds_config_sources(corpus: bool = True) -> list[Path]:
    """Every ds_config fixture, the FSDP2 migration samples, then (if present) the corpus."""
    paths = sorted((FIXTURES / "deepspeed").rglob("*.json")) + sorted((FIXTURES / "fsdp2" / "migrate").glob("*.json"))
    if corpus and (CORPUS / "deepspeed").is_dir():
        paths += sorted(p for p in (CORPUS / "deepspeed").iterdir() if p.is_file())
    return paths


def migration_cases(corpus_one_per_combination: bool = True) -> tuple[list[tuple[str, dict]], list[tuple[str, str]]]:
    """(name, fitted config) for every fixture that DeepSpeed accepts and FSDP2 can express, and
    one corpus file per distinct combination; plus (name, reason) for the ones left out."""
    cases: list[tuple[str, dict]] = []
    skipped: list[tuple[str, str]] = []
    seen: set[tuple] = set()
    for path in ds_config_sources():
        in_corpus = CORPUS in path.parents
        name = (("corpus/" if in_corpus else "") + str(path.relative_to(CORPUS if in_corpus else FIXTURES)))
        raw = load(path)
        if raw is None:
            skipped.append((name, "DeepSpeed cannot load the file"))
            continue
        config = fit_to_world(fill_auto(raw))
        reason = inexpressible(config) or deepspeed_rejects(config)
        if reason:
            skipped.append((name, reason))
            continue
        if in_corpus and corpus_one_per_combination:
            key = combination(config)
            if key in seen:
                continue
            seen.add(key)
        cases.append((name, config))
    return cases, skipped
