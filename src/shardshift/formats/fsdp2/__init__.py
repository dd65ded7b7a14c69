"""PyTorch FSDP2 (`torch.distributed.fsdp.fully_shard`) wrapper code.

Reader: reader.py (ast, never imports the file). Writer: writer.py (a Plan -> one self-contained setup
module, from the settings of shardshift/fsdp2_settings.py). The migration report: mapping.py, which
explains a ds_config's keys with DeepSpeed's own table (formats/deepspeed/fsdp2_explained.py).
"""

from __future__ import annotations

from shardshift.formats.fsdp2.reader import FORMAT, MARKER_KEYS, analysis_of, link, looks_like, read


def write(plan) -> str:
    """The FSDP2 setup module for `plan`."""
    from shardshift.formats.fsdp2.writer import write as write_module

    return write_module(plan)


def settings_from_plan(plan, **options):
    from shardshift.formats.fsdp2.writer import settings_from_plan as resolve

    return resolve(plan, **options)


def convert(document):
    """The FSDP2 setup module for `document`, with what happened to every source setting."""
    from shardshift.formats.fsdp2.mapping import convert as convert_with_report

    return convert_with_report(document)


__all__ = ["FORMAT", "MARKER_KEYS", "analysis_of", "convert", "link", "looks_like", "read", "settings_from_plan",
           "write"]
