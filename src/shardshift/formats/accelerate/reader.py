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

Everything else, `distributed_type` and `fsdp_config` included, stays as written in
`plan.passthrough["accelerate"]`. JSON Accelerate configs (`*.json`) are not read here.
"""

from __future__ import annotations

import re

from shardshift.document import Document
from shardshift.formats.accelerate.keys import DEEPSPEED_KEYS, MIXED_PRECISION
from shardshift.source import MISSING

FORMAT = "accelerate"

# The top-level keys that mark an Accelerate config (an unparseable file is reported only with one).
MARKER_KEYS = ("compute_environment:", "distributed_type:")
_MARKER = re.compile(r"^(?:compute_environment|distributed_type)[ \t]*:", re.MULTILINE)


def looks_like(path: str, text: str) -> bool:
    """A .yaml / .yml file with `compute_environment:` or `distributed_type:` at the top level."""
    return path.lower().endswith((".yaml", ".yml")) and _MARKER.search(text) is not None


def is_config(document: Document) -> bool:
    """The parsed mapping really has one of the marker keys at its top level."""
    data = document.data
    return isinstance(data, dict) and ("distributed_type" in data or "compute_environment" in data)


def read(text: str, path: str = "<string>") -> Document:
    """Parse an Accelerate config and build its Plan. Never raises for bad input."""
    from shardshift.formats.yaml_lift import Lifter, number, read_yaml

    document = read_yaml(text, path, FORMAT)
    if document.syntax is not None:
        return document
    lift = Lifter(document)
    distributed = lift.value("/distributed_type")

    lift.set("world.nodes", number(lift.value("/num_machines"), int), "/num_machines")
    if distributed != "NO":
        lift.set("world.world_size", number(lift.value("/num_processes"), int), "/num_processes")
    _mixed_precision(lift)

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
