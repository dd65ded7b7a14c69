"""`convert --to accelerate-fsdp2`: an Accelerate config that uses FSDP2 — the migration most DeepSpeed
users of Accelerate do.

- An Accelerate FSDP1 config is migrated in place (`writer.to_fsdp2`: what `accelerate to-fsdp2`
  does, comments kept, with the report).
- An Accelerate DeepSpeed config (`distributed_type: DEEPSPEED`) becomes an FSDP2 config from the
  setup's merged Plan (its `deepspeed_config` block, or the ds_config its `deepspeed_config_file`
  names, which `convert` merges in and reports setting by setting): the machine settings stay as
  written, the DeepSpeed plugin gives way to `fsdp_config` (ZeRO-3 -> reshard after forward, ...).
- Any other source is written as `convert --to accelerate` writes it (FSDP2 already).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shardshift.formats.accelerate.writer import write  # noqa: F401 - a Plan from elsewhere is written as FSDP2

if TYPE_CHECKING:
    from shardshift.document import Conversion, Document

# Top-level keys of a DeepSpeed Accelerate config that hold the DeepSpeed plugin, not the machines.
PLUGIN_KEYS = ("distributed_type", "deepspeed_config", "fsdp_config", "mixed_precision", "downcast_bf16")


def convert(document: Document) -> Conversion:
    from shardshift.formats.accelerate import writer

    if document.format != writer.FORMAT:
        return writer.convert(document)
    data = document.data if isinstance(document.data, dict) else {}
    if str(data.get("distributed_type", "")).upper() == "DEEPSPEED":
        return _from_deepspeed_plugin(document)
    return writer.to_fsdp2(document)


def _from_deepspeed_plugin(document: Document) -> Conversion:
    from shardshift.document import Conversion, MappingEntry
    from shardshift.formats import yaml_write
    from shardshift.formats.accelerate.writer import deepspeed_fsdp2_config, placeholders

    config, _ = deepspeed_fsdp2_config(document.plan, document.path)
    edit = yaml_write.load(document.text)
    for key in PLUGIN_KEYS:
        if edit.has((key,)):
            edit.delete((key,))
    for key, value in config.items():
        if key in PLUGIN_KEYS or not edit.has((key,)):  # the file's own machine settings stay as written
            edit.set((key,), value)
    entries = []
    for pointer, line, column in document.settings():
        if pointer == "/distributed_type":
            entries.append(MappingEntry(pointer, line, column, "exact", "/distributed_type",
                                        "DEEPSPEED -> FSDP with fsdp_version: 2"))
        elif pointer.startswith("/deepspeed_config/"):
            entries.append(MappingEntry(pointer, line, column, "approximate", "/fsdp_config",
                                        "the DeepSpeed plugin gives way to FSDP2: its ZeRO stage, offload and "
                                        "precision are carried by fsdp_config and mixed_precision (see the ds_config "
                                        "settings in this report); DeepSpeed-only options have no FSDP2 counterpart"))
        elif pointer.lstrip("/").split("/")[0] in PLUGIN_KEYS:
            entries.append(MappingEntry(pointer, line, column, "approximate", pointer.split("/")[1],
                                        "rewritten for FSDP2 from the setup's merged settings"))
        else:
            entries.append(MappingEntry(pointer, line, column, "exact", pointer, "kept as written"))
    entries += placeholders(edit)  # a num_processes the file and its ds_config do not say
    return Conversion(edit.dump(), entries)
