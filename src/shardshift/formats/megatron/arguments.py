"""Megatron-LM as a plain argument list (`convert --to megatron-args`): the writer's other style."""

from __future__ import annotations

from typing import TYPE_CHECKING

from shardshift.formats.megatron.writer import write_arguments as write  # noqa: F401

if TYPE_CHECKING:
    from shardshift.document import Conversion, Document


def convert(document: Document) -> Conversion:
    from shardshift.formats.megatron.writer import convert as convert_script

    return convert_script(document, style="arguments")
