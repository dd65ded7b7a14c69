"""The Plan itself as YAML (what `convert --to plan` writes), read back with positions: a
neutral way to describe a setup, and the format the semantic rules' own fixtures use.

A file is read as a Plan when its name ends in `.plan.yaml` / `.plan.yml`. Every field is set
through `Plan.set`, so a value of the wrong type is a finding (SS001 names it) rather than a
silent default; `{unknown: why}` is an Unknown value; `passthrough` is kept as written."""

from __future__ import annotations

from typing import Any

from shardshift.document import Document, SyntaxProblem
from shardshift.source import Location, find_node, join_pointer

FORMAT = "plan"
MARKER_KEYS = ("parallelism:", "batch:", "sharding:", "precision:")
SUFFIXES = (".plan.yaml", ".plan.yml")


def looks_like(path: str, text: str) -> bool:
    return path.lower().endswith(SUFFIXES)


def read(text: str, path: str = "<string>") -> Document:
    from shardshift.formats.yaml_lift import read_yaml
    from shardshift.plan import Plan, Unknown, field_types, section_class

    document = read_yaml(text, path, FORMAT)
    if document.syntax is not None:
        return document
    plan = Plan()
    problems: list[tuple[str, str]] = []  # (pointer, what is wrong)

    def where(pointer: str) -> Location:
        node = find_node(document.root, pointer)
        line, column = (node.line, node.column) if node is not None else (1, 1)
        return Location(path, line, column, pointer)

    def visit(section: type, data: Any, prefix: str, pointer: str) -> None:
        types = field_types(section)
        for key, value in data.items():
            name = "global_" if key == "global" else key
            here = join_pointer(pointer, key)
            if name not in types or name == "provenance":
                problems.append((here, f"the Plan has no field {key!r}"))
                continue
            dotted = prefix + name
            try:
                child = section_class(section, name)
            except TypeError:  # a leaf field
                child = None
            if child is not None and isinstance(value, dict):
                if plan.get(dotted) is None:  # an optional section written empty is set, not absent
                    plan.set(dotted, child(), where(here))
                visit(child, value, dotted + ".", here)
                continue
            if dotted == "passthrough":  # kept as written: a format's name -> a mapping of its settings
                if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, dict)
                                                          for k, v in value.items()):
                    problems.append((here, "passthrough maps each format's name to a mapping of its settings"))
                    continue
            elif isinstance(value, dict) and set(value) <= {"unknown", "where", "alternatives"} and "unknown" in value:
                value = Unknown(str(value["unknown"]), where(here))
            if not plan.set(dotted, value, where(here)):
                problems.append((here, f"{value!r} is not a valid value for {dotted}"))

    visit(Plan, document.data, "", "")
    if problems:
        first = where(problems[0][0])
        document.syntax = SyntaxProblem("not a valid Plan: " + "; ".join(f"{p}: {m}" for p, m in problems),
                                        first.line, first.column)
        return document
    document.plan = plan
    return document
