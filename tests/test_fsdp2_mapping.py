"""The DeepSpeed -> FSDP2 migration report: every key of the DeepSpeed key table has a mapping row,
every leaf setting of every ds_config gets an entry, statuses follow the values, and the CLI
(`convert --to fsdp2`, `--report`, `--strict`) works end to end."""

from __future__ import annotations

import ast
import json

import pytest

from shardshift.formats import deepspeed, fsdp2
from shardshift.formats.deepspeed.keys import KEYS
from shardshift.formats.fsdp2.mapping import row_for

from conftest import FIXTURES, ROOT, run_cli
from fsdp2_harness.configs import ds_config_sources

SOURCES = [p for p in ds_config_sources() if deepspeed.read(p.read_text(errors="replace"), str(p)).plan is not None]
ALLOWED_IMPORTS = {"math", "os", "warnings", "torch"}


def test_every_deepspeed_key_has_a_mapping_row():
    missing = []
    for key in KEYS:
        pointer = key.renamed_to if key.renamed_to and not key.inert else key.path
        if (key.type == "object" and not key.open) or key.inert or key.removed:
            continue  # sections: their keys carry the entries; inert and removed keys are handled as such
        if row_for(pointer.replace("*", "x")) is None:
            missing.append(key.path)
    assert not missing


@pytest.mark.parametrize("path", SOURCES, ids=[str(p.relative_to(p.parents[1])) for p in SOURCES])
def test_every_setting_gets_an_entry(path):
    document = deepspeed.read(path.read_text(), str(path))
    conversion = fsdp2.convert(document)
    sources = [entry.source for entry in conversion.entries]
    for pointer, _, _ in document.settings():
        assert sources.count(pointer) == 1, pointer
    for entry in conversion.entries:
        assert entry.status in ("exact", "approximate", "dropped", "unknown")
        assert entry.reason and entry.line >= 1 and entry.column >= 1
    tree = ast.parse(conversion.text)
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported <= ALLOWED_IMPORTS


def test_emitted_modules_pass_the_fsdp2_rules():
    from shardshift.rules import all_rules
    from shardshift.rules.base import Context

    rules = [rule() for rule in all_rules() if rule.code.startswith("FS")]
    findings = []
    for path in SOURCES:
        module = fsdp2.read(fsdp2.convert(deepspeed.read(path.read_text(), str(path))).text, "fsdp2_setup.py")
        assert module.syntax is None
        for rule in rules:
            findings.extend((path.name, f.code, f.message) for f in rule.check(module, Context(world_size=8))
                            if f.severity == "error")
    assert not findings


def entries(config: dict) -> dict[str, tuple[str, str | None, str]]:
    document = deepspeed.read(json.dumps(config, indent=1), "ds_config.json")
    return {e.source: (e.status, e.target, e.reason) for e in fsdp2.convert(document).entries}


# (config, pointer, status, a word the target or reason must contain)
CASES = [
    ({"zero_optimization": {"stage": 3}}, "/zero_optimization/stage", "exact", "True"),
    ({"zero_optimization": {"stage": 2}}, "/zero_optimization/stage", "approximate", "ZeRO-2"),
    ({"zero_optimization": {"stage": 1}}, "/zero_optimization/stage", "approximate", "ZeRO-1"),
    ({"zero_optimization": {"stage": "auto"}}, "/zero_optimization/stage", "unknown", "auto"),
    ({"train_batch_size": 8}, "/zero_optimization/stage", "approximate", "not set"),
    ({"zero_optimization": {"stage": 3, "offload_param": {"device": "nvme", "nvme_path": "/nvme"}}},
     "/zero_optimization/offload_param/device", "dropped", "NVMe"),
    ({"zero_optimization": {"stage": 3, "offload_param": {"device": "nvme", "nvme_path": "/nvme"}}},
     "/zero_optimization/offload_param/nvme_path", "dropped", "NVMe"),
    ({"zero_optimization": {"stage": 3, "offload_param": {"device": "cpu", "nvme_path": "/nvme"}}},
     "/zero_optimization/offload_param/nvme_path", "exact", "ignores"),
    ({"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}},
     "/zero_optimization/offload_optimizer/device", "approximate", "only the optimizer"),
    ({"zero_optimization": {"stage": 3, "zero_quantized_weights": True}},
     "/zero_optimization/zero_quantized_weights", "dropped", "quantized"),
    ({"zero_optimization": {"stage": 3, "zero_quantized_gradients": False}},
     "/zero_optimization/zero_quantized_gradients", "exact", "off"),
    ({"zero_optimization": {"stage": 3, "zero_hpz_partition_size": 8}},
     "/zero_optimization/zero_hpz_partition_size", "approximate", "RESHARD_AFTER_FORWARD = 8"),
    ({"zero_optimization": {"stage": 3, "mics_shard_size": 8}},
     "/zero_optimization/mics_shard_size", "approximate", "HYBRID_SHARD_SIZE = 8"),
    ({"zero_optimization": {"stage": 3, "stage3_max_live_parameters": 1e9}},
     "/zero_optimization/stage3_max_live_parameters", "approximate", "knob"),
    ({"optimizer": {"type": "OneBitAdam", "params": {"lr": 1e-4, "freeze_step": 400}}},
     "/optimizer/type", "approximate", "1-bit"),
    ({"optimizer": {"type": "OneBitAdam", "params": {"lr": 1e-4, "freeze_step": 400}}},
     "/optimizer/params/freeze_step", "dropped", "DeepSpeed's own"),
    ({"optimizer": {"type": "Lamb", "params": {"lr": 1e-4}}}, "/optimizer/type", "dropped", "LAMB"),
    ({"optimizer": {"type": "Adam", "params": {"lr": 1e-4}}}, "/optimizer/type", "exact", "AdamW"),
    ({"optimizer": {"type": "Adam", "params": {"lr": 1e-4, "adam_w_mode": False}}}, "/optimizer/type", "exact",
     "torch.optim.Adam"),
    ({"optimizer": {"type": "Adam", "params": {"lr": 1e-4}}}, "/optimizer/params/weight_decay", "exact", "0.01"),
    ({"optimizer": {"type": "AdamW", "params": {"lr": 1e-4, "bias_correction": False}}},
     "/optimizer/params/bias_correction", "dropped", "bias"),
    ({"optimizer": {"type": "AdamW", "params": {"lr": "auto"}}}, "/optimizer/params/lr", "unknown", "auto"),
    ({"optimizer": {"type": "AdamW", "params": {"betas": "0.9,0.95"}}}, "/optimizer/params/betas", "dropped",
     "(0.9, 0.999)"),
    ({"optimizer": {"type": "SGD", "params": {"lr": 0.1, "momentun": 0.9}}}, "/optimizer/params/momentun", "dropped",
     "no argument"),
    ({"scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 10}}}, "/scheduler/params/warmup_type",
     "exact", "log"),
    ({"scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 10, "warmup_typ": "linear"}}},
     "/scheduler/params/warmup_typ", "dropped", "TypeError"),
    ({"scheduler": {"type": "CosineAnnealingLR", "params": {"T_max": 10}}}, "/scheduler/type", "exact", "torch"),
    ({"scheduler": {"type": "WarmupCosine"}}, "/scheduler/type", "dropped", "constant"),
    ({"fp16": {"enabled": True, "loss_scale": 128}}, "/fp16/loss_scale", "approximate", "static"),
    ({"fp16": {"enabled": True, "loss_scale": 0}}, "/fp16/loss_scale", "exact", "dynamic"),
    ({"fp16": {"enabled": True, "hysteresis": 2}}, "/fp16/hysteresis", "approximate", "GradScaler"),
    ({"fp16": {"enabled": True, "hysteresis": 1}}, "/fp16/hysteresis", "exact", "off"),
    ({"fp16": {"enabled": True, "scale_tolerance": 1}}, "/fp16/scale_tolerance", "dropped", "rejects"),
    ({"bf16": {"enabled": True}}, "/communication_data_type", "approximate", "fp32"),
    ({"bf16": {"enabled": True}, "communication_data_type": "bf16"}, "/communication_data_type", "exact",
     "REDUCE_DTYPE"),
    ({"bfloat16": {"enabled": True}}, "/bfloat16/enabled", "exact", "legacy spelling"),
    ({"steps_per_print": 100}, "/steps_per_print", "dropped", "logging"),
    ({"wall_clock_breakdown": False}, "/wall_clock_breakdown", "exact", "off"),
    ({"tensorboard": {"enabled": True, "output_path": "runs"}}, "/tensorboard/output_path", "dropped", "logging"),
    ({"tensorboard": {"enabled": False, "output_path": "runs"}}, "/tensorboard/output_path", "exact", "disabled"),
    ({"pipeline": {"activation_checkpoint_interval": 1}}, "/pipeline/activation_checkpoint_interval", "dropped",
     "pipeline"),
    ({"activation_checkpointing": {"partition_activations": True}}, "/activation_checkpointing/partition_activations",
     "dropped", "partitioned"),
    ({"activation_checkpointing": {"partition_activations": False}}, "/activation_checkpointing", "approximate",
     "checkpoint_wrapper"),
    ({"gradient_clipping": 0.5}, "/gradient_clipping", "exact", "clip_grad_norm_"),
    ({"train_batch_size": 8}, "/gradient_clipping", "exact", "1.0"),
    ({"my_own_key": 1}, "/my_own_key", "dropped", "not a DeepSpeed key"),
    ({"zero_optimization": {"stage": 3, "cpu_offload": True}}, "/zero_optimization/cpu_offload", "approximate",
     "legacy spelling"),
]


@pytest.mark.parametrize("config,pointer,status,word", CASES)
def test_entry(config, pointer, status, word):
    found = entries(config)
    assert pointer in found, sorted(found)
    got_status, target, reason = found[pointer]
    assert got_status == status, found[pointer]
    assert word in f"{target} {reason}", found[pointer]


def test_convert_command_writes_module_and_report(tmp_path):
    source = FIXTURES / "fsdp2" / "migrate" / "zero3_bf16_warmup_cosine.json"
    out, report = tmp_path / "fsdp2_setup.py", tmp_path / "report.json"
    done = run_cli("convert", str(source), "--to", "fsdp2", "-o", str(out), "--report", str(report))
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert "def setup(model, blocks=None):" in text and "RESHARD_AFTER_FORWARD = True" in text
    data = json.loads(report.read_text())
    assert data["target_format"] == "fsdp2" and data["source_format"] == "deepspeed"
    assert {e["status"] for e in data["entries"]} <= {"exact", "approximate", "dropped"}
    assert data["summary"]["dropped"] == 0
    assert "exact" in done.stderr and done.stdout == ""
    strict = run_cli("convert", str(source), "--to", "fsdp2", "-o", str(out), "--strict")
    assert strict.returncode == 0, strict.stderr


def test_strict_fails_when_something_is_dropped(tmp_path):
    source = tmp_path / "ds_config.json"
    source.write_text(json.dumps({"train_batch_size": 8, "zero_optimization": {
        "stage": 3, "offload_param": {"device": "nvme", "nvme_path": "/local_nvme"}}}))
    out = tmp_path / "fsdp2_setup.py"
    loose = run_cli("convert", str(source), "--to", "fsdp2", "-o", str(out))
    assert loose.returncode == 0
    strict = run_cli("convert", str(source), "--to", "fsdp2", "-o", str(out), "--strict")
    assert strict.returncode == 1
    assert "dropped" in strict.stderr and "/zero_optimization/offload_param/device" in strict.stderr
    assert out.read_text().startswith('"""FSDP2 training setup')


def test_convert_fsdp2_code_back_to_fsdp2():
    source = FIXTURES / "fsdp2" / "reader" / "trainer_class_style.py"
    done = run_cli("convert", str(source), "--to", "fsdp2")
    assert done.returncode == 0, done.stderr
    assert "CPUOffloadPolicy(pin_memory=PIN_MEMORY" in done.stdout
    assert "PARAM_DTYPE = torch.bfloat16" in done.stdout
    assert str(ROOT) not in done.stdout
