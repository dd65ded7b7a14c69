"""The Plan itself as YAML: what `convert --to plan` writes."""

from __future__ import annotations

import io

from shardshift.document import Conversion, Document, MappingEntry
from shardshift.plan import Plan


def _prune(value):
    if isinstance(value, dict):
        pruned = {k: _prune(v) for k, v in value.items()}
        return {k: v for k, v in pruned.items() if v not in (None, {}, [])}
    return value


def write(plan: Plan) -> str:
    from ruamel.yaml import YAML

    yaml = YAML()
    yaml.default_flow_style = False
    stream = io.StringIO()
    yaml.dump(_prune(plan.to_data()), stream)
    return stream.getvalue()


def convert(document: Document) -> Conversion:
    if document.plan is None:
        raise ValueError(f"{document.path} has no Plan to write")
    entries = [MappingEntry(pointer, line, column, "exact", "plan",
                            "held by the Plan (a typed field or the format's passthrough)")
               for pointer, line, column in document.settings()]
    return Conversion(write(document.plan), entries)
