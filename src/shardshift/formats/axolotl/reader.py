"""Axolotl training YAML: reader.

Read as Axolotl reads it, with PyYAML's YAML 1.1 (`learning_rate: 2e-5` is a string there, which
Axolotl's schema then converts to a float, as this reader does). Lifted into the Plan, each with
its position (see keys.py for the table):

- micro_batch_size, gradient_accumulation_steps, sequence_len -> batch.*;
- learning_rate, optimizer, weight_decay, adam_epsilon -> optimizer.*; max_grad_norm ->
  gradient_clipping; lr_scheduler, warmup_steps -> scheduler.* (`warmup_steps: 1` is 2, as
  Axolotl silently bumps it);
- adam_beta1 / adam_beta2 -> optimizer.betas. Both given: as written. One given: paired with the
  transformers TrainingArguments default of the other (0.9, 0.999), which is what the HF
  optimizers receive and what transformers compares with a ds_config's betas; but not for
  Axolotl's own optimizers (keys.CUSTOM_OPTIMIZERS), which get betas only when both are set, so a
  lone beta stays in the passthrough there;
- precision.param_dtype from fp8 / bf16 / fp16 in the order Axolotl exports
  ACCELERATE_MIXED_PRECISION: fp8: true -> fp8; bf16: true -> bf16; fp16: true -> fp16;
  `bf16: auto` (also Axolotl's default) without fp16: true -> Unknown, as `resolve_dtype` picks
  bf16 or fp16 by the GPU; bf16: false without fp16 -> fp32. When neither bf16 nor fp16 is
  written the field stays unset (the default `auto` applies, and nothing in the file says so).

- tensor_parallel_size, context_parallel_size (or the deprecated sequence_parallel_degree, which
  Axolotl copies into it when context_parallel_size is unset), dp_shard_size, dp_replicate_size,
  expert_parallel_size -> parallelism.*;
- gradient_checkpointing -> activation_checkpointing.enabled (`offload` / `offload_disk` are true:
  Axolotl rewrites them to true plus activation_offloading); else fsdp_config's
  activation_checkpointing;
- fsdp_config as Axolotl's schema reads it (`fsdp_` prefixes stripped, the later of a prefixed
  and an unprefixed spelling wins; `version` is fsdp_version): reshard_after_forward ->
  sharding.reshard_after_forward; offload_params: true -> offload.params.device cpu (FSDP2's
  CPUOffloadPolicy, which also keeps the optimizer step on the CPU), cpu_offload_pin_memory ->
  its pin_memory.

`deepspeed:` given as a string is a Reference to the ds_config (resolved from this file's
folder); an inline mapping `deepspeed: {...}` is no reference and stays in the passthrough.
Everything else stays as written in `plan.passthrough["axolotl"]`.
"""

from __future__ import annotations

import re

from shardshift.document import Document
from shardshift.formats.axolotl.keys import CUSTOM_OPTIMIZERS, HF_BETAS, KEYS
from shardshift.source import MISSING

FORMAT = "axolotl"

# An unparseable file is reported only when it has one of these.
MARKER_KEYS = ("base_model:",)
_BASE = re.compile(r"^base_model[ \t]*:", re.MULTILINE)
_TYPICAL = re.compile(r"^(?:micro_batch_size|datasets|sequence_len|gradient_accumulation_steps|num_epochs"
                      r"|learning_rate|deepspeed|adapter|output_dir)[ \t]*:", re.MULTILINE)


def looks_like(path: str, text: str) -> bool:
    """A .yaml / .yml file with `base_model:` and another typical Axolotl key at the top level."""
    return (path.lower().endswith((".yaml", ".yml")) and _BASE.search(text) is not None
            and _TYPICAL.search(text) is not None)


def is_config(document: Document) -> bool:
    """The parsed mapping really has `base_model` at its top level."""
    return isinstance(document.data, dict) and "base_model" in document.data


def read(text: str, path: str = "<string>") -> Document:
    """Parse an Axolotl config and build its Plan. Never raises for bad input."""
    from shardshift.formats.yaml_lift import Lifter, number, read_yaml

    document = read_yaml(text, path, FORMAT)
    if document.syntax is not None:
        return document
    lift = Lifter(document)
    for key, (dotted, kind) in KEYS.items():
        value = lift.value(f"/{key}")
        if kind == "str":
            value = value if isinstance(value, str) and value else MISSING
        else:
            value = number(value, int if kind == "int" else float)
            if key == "warmup_steps" and value == 1:
                value = 2
        lift.set(dotted, value, f"/{key}")
    if lift.value("/context_parallel_size") in (MISSING, None, 0):
        degree = number(lift.value("/sequence_parallel_degree"), int)
        if degree not in (MISSING, 0):
            lift.set("parallelism.context", degree, "/sequence_parallel_degree")
    _betas(lift)
    _precision(lift)
    _checkpointing_and_fsdp(lift)
    if isinstance(lift.value("/deepspeed"), str):
        lift.reference("/deepspeed")
    return lift.finish(FORMAT)


def fsdp_config_keys(data: object) -> dict[str, str]:
    """fsdp_config as Axolotl's schema sees it: each field name (prefix stripped, `version` ->
    fsdp_version) -> the key written for it that wins (the later one, as Axolotl rebuilds the
    mapping in order)."""
    block = data.get("fsdp_config") if isinstance(data, dict) else None
    if not isinstance(block, dict):
        return {}
    out: dict[str, str] = {}
    for key in block:
        if not isinstance(key, str):
            continue
        name = key[5:] if key.startswith("fsdp_") and key != "fsdp_version" else key
        out["fsdp_version" if name == "version" else name] = key
    return out


def _checkpointing_and_fsdp(lift) -> None:
    fsdp = fsdp_config_keys(lift.document.data)
    written = lift.value("/gradient_checkpointing")
    if isinstance(written, bool) or written in ("offload", "offload_disk"):
        lift.set("activation_checkpointing.enabled", written is not False, "/gradient_checkpointing")
    elif "activation_checkpointing" in fsdp:
        pointer = "/fsdp_config/" + fsdp["activation_checkpointing"]
        if isinstance(lift.value(pointer), bool):
            lift.set("activation_checkpointing.enabled", lift.value(pointer), pointer)
    if "reshard_after_forward" in fsdp:
        pointer = "/fsdp_config/" + fsdp["reshard_after_forward"]
        if isinstance(lift.value(pointer), bool):
            lift.set("sharding.reshard_after_forward", lift.value(pointer), pointer)
    if "offload_params" in fsdp:
        pointer = "/fsdp_config/" + fsdp["offload_params"]
        if lift.value(pointer) is True:
            lift.set("offload.params.device", "cpu", pointer)
            if "cpu_offload_pin_memory" in fsdp:
                pin = "/fsdp_config/" + fsdp["cpu_offload_pin_memory"]
                if isinstance(lift.value(pin), bool):
                    lift.set("offload.params.pin_memory", lift.value(pin), pin)


def _betas(lift) -> None:
    from shardshift.formats.yaml_lift import number

    beta1 = number(lift.value("/adam_beta1"), float)
    beta2 = number(lift.value("/adam_beta2"), float)
    if beta1 is MISSING and beta2 is MISSING:
        return
    if beta1 is not MISSING and beta2 is not MISSING:
        lift.set("optimizer.betas", [beta1, beta2], "/adam_beta1", consumed=("/adam_beta1", "/adam_beta2"))
        return
    if lift.value("/optimizer") in CUSTOM_OPTIMIZERS:
        return
    if beta1 is not MISSING:
        lift.set("optimizer.betas", [beta1, HF_BETAS[1]], "/adam_beta1")
    else:
        lift.set("optimizer.betas", [HF_BETAS[0], beta2], "/adam_beta2")


def _precision(lift) -> None:
    from shardshift.plan import Unknown

    bf16, fp16, fp8 = (lift.value(f"/{key}") for key in ("bf16", "fp16", "fp8"))
    if fp8 is True:
        lift.set("precision.param_dtype", "fp8", "/fp8")
    elif bf16 is True:
        lift.set("precision.param_dtype", "bf16", "/bf16")
    elif fp16 is True:
        lift.set("precision.param_dtype", "fp16", "/fp16")
    elif bf16 == "auto":
        lift.set("precision.param_dtype", Unknown(
            "bf16: auto depends on the GPU: Axolotl uses bf16 where the GPU supports it, else fp16",
            lift.where("/bf16")), "/bf16")
    elif bf16 is False and fp16 in (False, None, MISSING):
        lift.set("precision.param_dtype", "fp32", "/bf16")
