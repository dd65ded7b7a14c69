"""What the YAML readers (Accelerate, Axolotl, the Plan as YAML) share: a Document from YAML text, and a Plan
built field by field with the position of every lifted value; the rest stays in the passthrough
as written."""

from __future__ import annotations

import copy
import re
from typing import Any

from shardshift.document import Document, Reference, SyntaxProblem, resolve_reference
from shardshift.source import MISSING, Location, find_node, split_pointer, value_at

# a path that is only known when the job runs: $VAR, ${VAR}, %VAR%, {{ template }}, ~user
NOT_LITERAL = re.compile(r"\$|%[A-Za-z_]+%|\{\{|^~")


def read_yaml(text: str, path: str, format: str) -> Document:
    """Parse YAML the way PyYAML's safe_load does; a problem becomes `document.syntax`."""
    from shardshift.yaml11 import YamlProblem, load

    document = Document(path=path, format=format, text=text)
    try:
        root = load(text)
    except YamlProblem as problem:
        document.syntax = SyntaxProblem(problem.message, problem.line, problem.column)
        return document
    if root is None or root.kind != "object":
        kind = "an empty file" if root is None else f"a {root.kind}"
        line, column = (1, 1) if root is None else (root.line, root.column)
        document.syntax = SyntaxProblem(f"a {format} config is a YAML mapping, not {kind}", line, column)
        return document
    document.root = root
    document.data = root.to_python()
    return document


class Lifter:
    """Sets Plan fields from a document's data and remembers what was lifted, so that the
    passthrough keeps exactly the rest."""

    def __init__(self, document: Document) -> None:
        from shardshift.plan import Plan

        self.document = document
        self.plan = Plan()
        self.lifted: list[str] = []

    def value(self, pointer: str) -> Any:
        return value_at(self.document.data, pointer)

    def where(self, pointer: str) -> Location:
        node = find_node(self.document.root, pointer) if self.document.root is not None else None
        line, column = (node.line, node.column) if node is not None else self.document.position(pointer)
        return Location(self.document.path, line, column, pointer)

    def set(self, dotted: str, value: Any, pointer: str, *, consumed: tuple[str, ...] | None = None) -> bool:
        """Set `dotted` to `value`, located at `pointer`; on success the pointers in `consumed`
        (default: `pointer`) leave the passthrough. False when the field's type rejects it."""
        if value is MISSING or not self.plan.set(dotted, value, self.where(pointer)):
            return False
        self.lifted.extend(consumed if consumed is not None else (pointer,))
        others = [self.where(p) for p in consumed or () if p != pointer and value_at(self.document.data, p) is not MISSING]
        if others:
            self.plan.parts[dotted] = others
        return True

    def finish(self, format: str) -> Document:
        rest = copy.deepcopy(self.document.data)
        for pointer in self.lifted:
            _delete(rest, pointer)
        if rest:
            self.plan.passthrough[format] = rest
        self.document.plan = self.plan
        return self.document

    def reference(self, pointer: str, role: str = "deepspeed_config") -> None:
        """Record the file named by the string at `pointer` as a linked file, resolved from the
        folder of the referring file (None with the reason when it is not a literal path)."""
        target = self.value(pointer)
        if not isinstance(target, str) or not target.strip():
            return
        where = self.where(pointer)
        if NOT_LITERAL.search(target):
            self.document.references.append(Reference(
                target, None, where, role, unknown=f"{target!r} is only known when the job runs"))
            return
        resolved, unknown = resolve_reference(self.document.path, target)
        self.document.references.append(Reference(target, resolved, where, role, unknown=unknown))


def number(value: Any, kind: type) -> Any:
    """A YAML value as the framework's loader turns it into `kind` (int or float): numbers as
    they are, numeric strings converted (PyYAML leaves `2e-5` a string; pydantic's lax mode and
    Accelerate's environment variables both turn it into a number), "auto" kept; MISSING else."""
    if value == "auto":
        return value
    if isinstance(value, bool):
        return MISSING
    if isinstance(value, str):
        try:
            value = float(value.strip()) if kind is float else int(value.strip())
        except ValueError:
            return MISSING
    if kind is int and isinstance(value, float):
        return MISSING
    if isinstance(value, (int, float)):
        return value
    return MISSING


def _delete(data: Any, pointer: str) -> None:
    """Remove the value at `pointer` and the parents this leaves empty."""
    tokens = split_pointer(pointer)
    chain = [data]
    for token in tokens[:-1]:
        if not isinstance(chain[-1], dict) or token not in chain[-1]:
            return
        chain.append(chain[-1][token])
    if not isinstance(chain[-1], dict) or tokens[-1] not in chain[-1]:
        return
    del chain[-1][tokens[-1]]
    for depth in range(len(tokens) - 1, 0, -1):
        if chain[depth] == {}:
            del chain[depth - 1][tokens[depth - 1]]
        else:
            break
