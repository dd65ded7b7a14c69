"""The FSDP2 writer: what the emitted module states for a ds_config (tables of cases), its public
surface, and its refusal to run with "auto" or missing values."""

from __future__ import annotations

import importlib.util
import json

import pytest

from shardshift.formats import deepspeed, fsdp2
from shardshift.formats.fsdp2.writer import settings_from_plan, torchrun_line


def settings(config: dict):
    return settings_from_plan(deepspeed.read(json.dumps(config), "ds_config.json").plan, deepspeed=True)


# DeepSpeed optimizer block -> (torch class, the constructor arguments the module passes)
OPTIMIZERS = [
    ({"type": "Adam", "params": {"lr": 1e-4}}, "AdamW",
     {"lr": 1e-4, "betas": (0.9, 0.999), "eps": 1e-08, "weight_decay": 0.0}),
    ({"type": "adamw", "params": {"lr": 1e-4, "weight_decay": 0.1}}, "AdamW",
     {"lr": 1e-4, "betas": (0.9, 0.999), "eps": 1e-08, "weight_decay": 0.1}),
    ({"type": "Adam", "params": {"lr": 1e-4, "adam_w_mode": False}}, "Adam",
     {"lr": 1e-4, "betas": (0.9, 0.999), "eps": 1e-08, "weight_decay": 0.0}),
    ({"type": "AdamW", "params": {"lr": 1e-4, "torch_adam": True}}, "AdamW",
     {"lr": 1e-4, "betas": (0.9, 0.999), "eps": 1e-08, "weight_decay": 0.01}),
    ({"type": "Adagrad", "params": {"lr": 0.05}}, "Adagrad",
     {"lr": 0.05, "lr_decay": 0.0, "weight_decay": 0.0, "initial_accumulator_value": 0.0, "eps": 1e-10}),
    ({"type": "SGD", "params": {"lr": 0.1, "momentum": 0.9}}, "SGD",
     {"lr": 0.1, "momentum": 0.9, "dampening": 0.0, "weight_decay": 0.0, "nesterov": False}),
    ({"type": "OneBitAdam", "params": {"lr": 2e-4, "freeze_step": 100, "cuda_aware": False}}, "AdamW",
     {"lr": 2e-4, "betas": (0.9, 0.999), "eps": 1e-08, "weight_decay": 0.0}),
    ({"type": "Lamb", "params": {"lr": 1e-3, "max_coeff": 0.3}}, "AdamW",
     {"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-08, "weight_decay": 0.0}),
    (None, "AdamW", {"lr": 0.001, "betas": (0.9, 0.999), "eps": 1e-08, "weight_decay": 0.0}),
]


@pytest.mark.parametrize("block,cls,kwargs", OPTIMIZERS)
def test_optimizer(block, cls, kwargs):
    s = settings({"optimizer": block} if block else {"train_batch_size": 8})
    assert s.optimizer_class == cls
    assert s.optimizer_kwargs == kwargs


# ds_config -> settings the module states
SETTINGS = [
    ({"zero_optimization": {"stage": 3}}, "reshard_after_forward", True),
    ({"zero_optimization": {"stage": 2}}, "reshard_after_forward", False),
    ({"zero_optimization": {"stage": 0}}, "reshard_after_forward", False),
    ({"zero_optimization": {"stage": 3, "zero_hpz_partition_size": 8}}, "reshard_after_forward", 8),
    ({"zero_optimization": {"stage": 2, "zero_hpz_partition_size": 8}}, "reshard_after_forward", False),
    ({"zero_optimization": {"stage": 3, "mics_shard_size": 8}}, "hybrid_shard_size", 8),
    ({"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "pin_memory": False}}},
     "pin_memory", False),
    ({"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}}, "cpu_offload", True),
    ({"zero_optimization": {"stage": 3, "offload_param": {"device": "none"}}}, "cpu_offload", False),
    ({"bf16": {"enabled": True}}, "param_dtype", "bf16"),
    ({"bf16": {"enabled": True}}, "reduce_dtype", "fp32"),
    ({"bf16": {"enabled": True}, "communication_data_type": "bf16"}, "reduce_dtype", "bf16"),
    ({"bf16": {"enabled": True}}, "skip_nonfinite", True),
    ({"bf16": {"enabled": True, "check_grad_overflow": False}}, "skip_nonfinite", False),
    ({"zero_optimization": {"stage": 0}}, "skip_nonfinite", False),
    ({"fp16": {"enabled": True}}, "loss_scaler", {"init_scale": 65536.0, "growth_interval": 1000, "static": False}),
    ({"fp16": {"enabled": True, "loss_scale": 256}}, "loss_scaler",
     {"init_scale": 256.0, "growth_interval": 2**31 - 1, "static": True}),
    ({"train_batch_size": 8}, "gradient_clipping", 1.0),
    ({"gradient_clipping": 0}, "gradient_clipping", 0),
    ({"activation_checkpointing": {"partition_activations": False}}, "activation_checkpointing", True),
    ({"train_batch_size": 64, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2}, "world_size", 8),
    ({"scheduler": {"type": "WarmupLR", "params": {}}, "optimizer": {"type": "AdamW", "params": {"lr": 5e-4}}},
     "scheduler_kwargs", {"warmup_min_lr": 0.0, "warmup_max_lr": 5e-4, "warmup_num_steps": 1000, "warmup_type": "log"}),
    ({"scheduler": {"type": "WarmupDecayLR", "params": {"warmup_type": "cosine"}}}, "scheduler_kwargs",
     {"warmup_min_lr": 0.0, "warmup_max_lr": 0.001, "warmup_num_steps": 1000, "total_num_steps": "FILL_IN",
      "warmup_type": "log"}),
]


@pytest.mark.parametrize("config,name,value", SETTINGS)
def test_setting(config, name, value):
    assert getattr(settings(config), name) == value


@pytest.mark.parametrize("world,line", [
    ({"world_size": 8}, "torchrun --nnodes=1 --nproc-per-node=8 train.py"),
    ({"nodes": 4, "gpus_per_node": 8}, "torchrun --nnodes=4 --nproc-per-node=8 --rdzv-backend=c10d "
                                      "--rdzv-endpoint=$HEAD_NODE:29500 train.py"),
    ({}, "torchrun --nnodes=1 --nproc-per-node=<GPUs per node> train.py"),
])
def test_torchrun_line(world, line):
    from shardshift.plan import Plan, World

    assert torchrun_line(settings_from_plan(Plan(world=World(**world)))) == line


def load_module(text, tmp_path, name="fsdp2_setup"):
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.oracle
def test_auto_and_required_values_stop_setup(tmp_path):
    pytest.importorskip("torch")
    config = {"train_micro_batch_size_per_gpu": "auto", "optimizer": {"type": "AdamW", "params": {"lr": "auto"}},
              "scheduler": {"type": "WarmupDecayLR", "params": {"warmup_num_steps": 10}}}
    module = load_module(fsdp2.convert(deepspeed.read(json.dumps(config), "ds_config.json")).text, tmp_path)
    assert module.MICRO_BATCH_SIZE == "auto" and module.LR_SCHEDULE["total_num_steps"] == "FILL_IN"
    with pytest.raises(ValueError, match="MICRO_BATCH_SIZE, OPTIMIZER_KWARGS, LR_SCHEDULE at the top of "
                                         "fsdp2_setup.py"):
        module.setup(None)


@pytest.mark.oracle
def test_public_surface(tmp_path):
    pytest.importorskip("torch")
    module = load_module(fsdp2.write(deepspeed.read('{"train_batch_size": 8}', "ds.json").plan), tmp_path)
    for name in ("setup", "build_mesh", "find_blocks", "build_optimizer", "build_scheduler", "Engine"):
        assert callable(getattr(module, name))
    for method in ("backward", "step", "is_gradient_accumulation_boundary", "full_state_dict"):
        assert callable(getattr(module.Engine, method))
    import torch

    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ModuleList(torch.nn.Linear(4, 4) for _ in range(3)))
    assert [type(b) for b in module.find_blocks(model)] == [torch.nn.Linear] * 3
