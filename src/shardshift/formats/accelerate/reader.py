"""Accelerate config YAML (`accelerate config` / `--config_file`): reader.

Read as Accelerate reads it, with PyYAML's YAML 1.1 (`yaml.safe_load`): an unquoted
`mixed_precision: no` is the boolean False, not 'no'. Lifted into the Plan, each with its
position:

- `num_machines` -> world.nodes; `num_processes` -> world.world_size (Accelerate's
  num_processes is the total over all machines; with `distributed_type: NO` Accelerate forces it
  to 1, so it is not lifted then);
- `mixed_precision` -> precision.param_dtype ('no' -> fp32; an unquoted `no` is an Unknown,
  since Accelerate receives False there);
- under `distributed_type: DEEPSPEED` only (Accelerate ignores `deepspeed_config` otherwise):
  `deepspeed_config.{zero_stage, gradient_accumulation_steps, gradient_clipping,
  offload_optimizer_device, offload_param_device, offload_*_nvme_path}` (see keys.py), and
  `deepspeed_config.deepspeed_config_file` (a path other than "none") becomes a Reference to the
  ds_config, resolved from this file's folder.

- under `distributed_type: FSDP`: `fsdp_config` as the launcher reads it (a key without the
  `fsdp_` prefix gets it; of two spellings of one key the later wins, as in the launcher):
  version 1: `fsdp_sharding_strategy` -> sharding.stage (FULL_SHARD 3, SHARD_GRAD_OP 2,
  NO_SHARD 0, HYBRID_* 3/2 with sharding.hybrid); version 2: `fsdp_reshard_after_forward`
  (str_to_bool) -> sharding.stage 3 / 2; `fsdp_offload_params` -> offload.{params,optimizer}.device
  "cpu" (FSDP's CPU offload moves both); `fsdp_activation_checkpointing` ->
  activation_checkpointing.enabled; with `mixed_precision` bf16/fp16 the plugin's policy casts
  parameters and reduces gradients in that dtype -> precision.reduce_dtype. The
  `parallelism_config_*_size` degrees -> parallelism.*;
- under `distributed_type: MEGATRON_LM`: tp/pp degrees, sequence parallelism, expert parallel size,
  gradient clipping.

Everything else, `distributed_type` and `fsdp_version` included, stays as written in
`plan.passthrough["accelerate"]`. JSON Accelerate configs (`*.json`) are not read here.
"""

from __future__ import annotations

import re

from shardshift.document import Document
from shardshift.formats.accelerate.keys import (
    DEEPSPEED_KEYS,
    MEGATRON_FIELDS,
    MIXED_PRECISION,
    PARALLELISM_FIELDS,
    SHARDING_STRATEGIES,
    fsdp_name,
    truthy,
)
from shardshift.formats.yaml_lift import number
from shardshift.source import MISSING

FORMAT = "accelerate"

# The top-level keys that mark an Accelerate config (an unparseable file is reported only with one).
MARKER_KEYS = ("compute_environment:", "distributed_type:")
_MARKER = re.compile(r"^(?:compute_environment|distributed_type)[ \t]*:", re.MULTILINE)


# `accelerate config --config_file x.json` writes the same config as JSON (load_config_from_file
# reads a .json file with json.load: BaseConfig.from_json_file); the ds_config reader defers to it
JSON_MARKER = re.compile(r'^[ \t]*"(?:compute_environment|distributed_type)"[ \t]*:', re.MULTILINE)


def looks_like(path: str, text: str) -> bool:
    """A .yaml / .yml file with `compute_environment:` or `distributed_type:` at the top level, or
    a .json file with one of those keys on a line of its own (a ds_config is claimed before)."""
    lowered = path.lower()
    if "distributed_type" not in text and "compute_environment" not in text:
        return False  # a plain search first: the patterns scan every line of large data files
    if lowered.endswith((".yaml", ".yml")):
        return _MARKER.search(text) is not None
    return lowered.endswith(".json") and JSON_MARKER.search(text) is not None


def is_config(document: Document) -> bool:
    """The parsed mapping really has one of the marker keys at its top level."""
    data = document.data
    return isinstance(data, dict) and ("distributed_type" in data or "compute_environment" in data)


def read(text: str, path: str = "<string>") -> Document:
    """Parse an Accelerate config and build its Plan. Never raises for bad input."""
    from shardshift.formats.yaml_lift import Lifter, read_yaml

    document = read_yaml(text, path, FORMAT)
    if document.syntax is not None:
        return document
    lift = Lifter(document)
    distributed = lift.value("/distributed_type")

    lift.set("world.nodes", number(lift.value("/num_machines"), int), "/num_machines")
    if distributed != "NO":
        lift.set("world.world_size", number(lift.value("/num_processes"), int), "/num_processes")
    _mixed_precision(lift)

    _world(lift, distributed)
    if distributed == "FSDP" and isinstance(lift.value("/fsdp_config"), dict):
        _fsdp(lift)
    if distributed == "FSDP" and isinstance(lift.value("/parallelism_config"), dict):
        _parallelism(lift)
    if distributed == "MEGATRON_LM" and isinstance(lift.value("/megatron_lm_config"), dict):
        _megatron(lift)
    if distributed == "DEEPSPEED" and isinstance(lift.value("/deepspeed_config"), dict):
        for key, (dotted, kind) in DEEPSPEED_KEYS.items():
            pointer = f"/deepspeed_config/{key}"
            value = lift.value(pointer)
            if kind == "str":
                value = value if isinstance(value, str) else MISSING
            else:
                value = number(value, int if kind == "int" else float)
            lift.set(dotted, value, pointer)
        file = lift.value("/deepspeed_config/deepspeed_config_file")
        if isinstance(file, str) and file.strip().lower() != "none":
            lift.reference("/deepspeed_config/deepspeed_config_file")
    return lift.finish(FORMAT)


def _mixed_precision(lift) -> None:
    from shardshift.plan import Unknown

    value = lift.value("/mixed_precision")
    if value is MISSING or value is None:
        return
    if isinstance(value, bool):
        written = "no" if value is False else "yes"
        unknown = Unknown(f"mixed_precision: {written} unquoted is the boolean {value} to Accelerate's YAML "
                          "loader, not a precision; quote it", lift.where("/mixed_precision"))
        lift.set("precision.param_dtype", unknown, "/mixed_precision")
    elif isinstance(value, str) and value in MIXED_PRECISION:
        lift.set("precision.param_dtype", MIXED_PRECISION[value], "/mixed_precision")


def _world(lift, distributed) -> None:
    machines = number(lift.value("/num_machines"), int)
    processes = number(lift.value("/num_processes"), int)
    if distributed != "NO" and isinstance(machines, int) and isinstance(processes, int) and machines > 0 \
            and processes > 0 and processes % machines == 0:
        lift.set("world.gpus_per_node", processes // machines, "/num_processes", consumed=())


def fsdp_settings(data) -> dict[str, tuple[str, object]]:
    """The launcher's view of `fsdp_config`: {argument name: (pointer, value)}, the later of two
    spellings of one argument winning (the launcher sets them in the file's order)."""
    block = data.get("fsdp_config") if isinstance(data, dict) else None
    out: dict[str, tuple[str, object]] = {}
    if isinstance(block, dict):
        for key, value in block.items():
            if isinstance(key, str):
                out[fsdp_name(key)] = (f"/fsdp_config/{key}", value)
    return out


def fsdp_version(data) -> int | None:
    """The FSDP version the plugin uses (1 when absent), None when it is not an int."""
    pointer, value = fsdp_settings(data).get("fsdp_version", (None, 1))
    try:
        return int(str(value))
    except ValueError:
        return None


def _fsdp(lift) -> None:
    settings = fsdp_settings(lift.document.data)
    version = fsdp_version(lift.document.data)
    if version == 1 and "fsdp_sharding_strategy" in settings:
        pointer, value = settings["fsdp_sharding_strategy"]
        name = None
        if isinstance(value, str) and value.upper() in SHARDING_STRATEGIES:
            name = value.upper()
        elif (isinstance(value, int) and not isinstance(value, bool)) or (isinstance(value, str) and value.isdigit()):
            index = int(value)
            name = SHARDING_STRATEGIES[index - 1] if 1 <= index <= len(SHARDING_STRATEGIES) else None
        if name is not None:
            stage = {"FULL_SHARD": 3, "SHARD_GRAD_OP": 2, "NO_SHARD": 0, "HYBRID_SHARD": 3,
                     "HYBRID_SHARD_ZERO2": 2}[name]
            lift.set("sharding.stage", stage, pointer)
            if name.startswith("HYBRID"):
                lift.set("sharding.hybrid", True, pointer, consumed=())
    elif version == 2 and "fsdp_reshard_after_forward" in settings:
        pointer, value = settings["fsdp_reshard_after_forward"]
        flag = truthy(value)
        if flag is not None:
            lift.set("sharding.stage", 3 if flag else 2, pointer)
    if version in (1, 2) and "fsdp_offload_params" in settings:
        pointer, value = settings["fsdp_offload_params"]
        flag = truthy(value)
        if flag is not None:
            device = "cpu" if flag else "none"
            lift.set("offload.params.device", device, pointer)
            lift.set("offload.optimizer.device", device, pointer)
    if version in (1, 2) and "fsdp_activation_checkpointing" in settings:
        pointer, value = settings["fsdp_activation_checkpointing"]
        flag = truthy(value)
        if flag is not None:
            lift.set("activation_checkpointing.enabled", flag, pointer)
    precision = lift.plan.precision.param_dtype
    if version in (1, 2) and precision in ("bf16", "fp16", "fp8"):
        lift.set("precision.reduce_dtype", "fp16" if precision == "fp16" else "bf16", "/mixed_precision",
                 consumed=())


def _parallelism(lift) -> None:
    for key, dotted in PARALLELISM_FIELDS.items():
        pointer = f"/parallelism_config/{key}"
        lift.set(dotted, number(lift.value(pointer), int), pointer)


def _megatron(lift) -> None:
    for key, (dotted, kind) in MEGATRON_FIELDS.items():
        pointer = f"/megatron_lm_config/{key}"
        value = lift.value(pointer)
        if kind == "bool":
            value = value if isinstance(value, bool) else MISSING
        else:
            value = number(value, int if kind == "int" else float)
        lift.set(dotted, value, pointer)
