"""What a rule is, what it yields, and what it may know about the run.

A rule is a class with a stable `code`, a kebab-case `name` that describes the pattern it flags,
a default `severity`, the `formats` it applies to, and a docstring that is its user
documentation: a first line (the summary), then the sections "What it does", "Why is this bad",
"Example" and "Use instead" (printed by `shardshift explain CODE`). `check` yields `Finding`s.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Iterable, Literal

if TYPE_CHECKING:
    from shardshift.document import Document
    from shardshift.setup import Setup
    from shardshift.source import Location

Severity = Literal["error", "warning", "info"]
SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}
# How `shardshift check --fix` applies a finding's `fix` (a rule opts in by setting one):
# "rename-key": `fix` is the new key name, same object; "replace-value": `fix` is the new value's source text.
FixKind = Literal["rename-key", "replace-value"]


@dataclass(frozen=True, slots=True)
class Related:
    """Another place a finding involves, e.g. the other file of a cross-file finding."""

    file: str
    line: int
    column: int
    pointer: str | None
    message: str

    def to_json(self) -> dict:
        return {"file": self.file, "line": self.line, "column": self.column, "pointer": self.pointer,
                "message": self.message}


@dataclass(slots=True)
class Finding:
    """One problem at one place. The JSON shape of `to_json` is a public contract."""

    code: str
    severity: Severity
    file: str
    line: int
    column: int
    pointer: str | None
    message: str
    fix: str | None = None
    rule: str = ""
    related: list[Related] = field(default_factory=list)
    fix_kind: FixKind | None = None  # set when `fix` is safe to apply automatically (--fix)

    def to_json(self) -> dict:
        out = {"code": self.code, "severity": self.severity, "file": self.file, "line": self.line,
               "column": self.column, "pointer": self.pointer, "message": self.message, "fix": self.fix}
        if self.fix_kind is not None:
            out["fix_kind"] = self.fix_kind
        if self.related:
            out["related"] = [r.to_json() for r in self.related]
        return out


@dataclass(slots=True)
class Context:
    """What the run knows beyond the file: the world, the DeepSpeed version, every document."""

    world_size: int | None = None
    deepspeed_version: tuple[int, ...] | None = None
    hidden_size: int | None = None
    documents: list[Document] = field(default_factory=list)
    gpus_per_node: int | None = None  # known with --nodes/--gpus-per-node (or nodes/gpus-per-node in the config)
    setups: list[Setup] = field(default_factory=list)  # the documents linked into training runs (setup.py)
    gpu_memory: int | None = None  # bytes per GPU (--gpu-memory): with the model, the planner judges the fit
    model_parameters: int | None = None  # --model-params
    model_config: str | None = None  # --model-config: a Hugging Face config.json

    @property
    def deepspeed_version_text(self) -> str:
        if self.deepspeed_version is None:
            return "the newest DeepSpeed (pass --deepspeed-version to pin it)"
        return "DeepSpeed " + ".".join(map(str, self.deepspeed_version))


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    severity: ClassVar[Severity]
    formats: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def summary(cls) -> str:
        return (cls.__doc__ or "").strip().splitlines()[0]

    @classmethod
    def documentation(cls) -> str:
        import inspect

        return inspect.cleandoc(cls.__doc__ or "")

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        raise NotImplementedError

    def finding(self, document: Document, pointer: str | None, message: str, *, fix: str | None = None,
                severity: Severity | None = None, key: bool = False,
                position: tuple[int, int] | None = None, fix_kind: FixKind | None = None,
                related: Iterable[Related] = ()) -> Finding:
        """A finding at `pointer` (the key's own position when `key`), or at `position`.
        `fix_kind` marks `fix` as safe for `--fix`; `related` lists other places involved."""
        line, column = position or document.position(pointer or "", key=key)
        shown = document.renamed.get(pointer, pointer) if pointer is not None else None
        return Finding(self.code, severity or self.severity, document.path, line, column, shown, message, fix,
                       self.name, list(related), fix_kind if fix is not None else None)

    @staticmethod
    def related(document: Document, pointer: str, message: str, *, key: bool = False) -> Related:
        """A related location in `document` (another file of a cross-file finding, say)."""
        line, column = document.position(pointer, key=key)
        return Related(document.path, line, column, document.renamed.get(pointer, pointer), message)


class PlanRule(Rule):
    """A semantic rule written once over the merged Plan of a setup, for every format.

    `check_setup` reads the Plan (through `plan.known`, so that "auto" and Unknown values are
    never judged as values) and reports at the places the Plan's provenance records, in the
    framework's own spelling of each field (`name_of`)."""

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        return ()

    def check_setup(self, setup: Setup, context: Context) -> Iterable[Finding]:
        raise NotImplementedError

    def finding_at(self, where: Location, message: str, *, fix: str | None = None,
                   severity: Severity | None = None, related: Iterable[Related] = ()) -> Finding:
        return Finding(self.code, severity or self.severity, where.file, where.line, where.column, where.pointer,
                       message, fix, self.name, list(related))

    @staticmethod
    def related_at(where: Location, message: str) -> Related:
        return Related(where.file, where.line, where.column, where.pointer, message)


GENERIC_KEYS = frozenset({"type", "enabled", "device", "params", "name", "stage"})


def name_of(where: Location | None, dotted: str) -> str:
    """A Plan field as its source spells it: the last token of the JSON pointer (`/zero_optimization/stage`
    -> `stage`), the flag (`--tensor-model-parallel-size`), or the dotted field when unknown."""
    if where is None or not where.pointer:
        return dotted
    if where.pointer.startswith("/"):
        from shardshift.source import split_pointer

        tokens = split_pointer(where.pointer)
        if len(tokens) > 1 and tokens[-1] in GENERIC_KEYS:
            return ".".join(tokens[-2:])  # `optimizer.type`, not `type`
        return tokens[-1] if tokens else dotted
    return where.pointer


def clear_match(word: str, candidates: Iterable[str]) -> str | None:
    """The one candidate `word` is an unmistakable misspelling of (safe for --fix), or None:
    the same but for case or `-`/`_`, or the only candidate within two edits (one edit for
    words shorter than eight characters)."""
    candidates = list(candidates)
    normal = word.replace("-", "_").lower()
    for candidate in candidates:
        if candidate.replace("-", "_").lower() == normal:
            return candidate
    limit = min(2, len(word) // 4)
    close = [c for c in candidates if _edit_distance(normal, c.replace("-", "_").lower()) <= limit]
    return close[0] if len(close) == 1 else None


def _edit_distance(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        previous = current
    return previous[-1]


def did_you_mean(word: str, candidates: Iterable[str]) -> str | None:
    """The closest candidate to a misspelled key, or None when nothing is close."""
    candidates = list(candidates)
    lowered = {c.lower(): c for c in candidates}
    if word.lower() in lowered:
        return lowered[word.lower()]
    normalised = {c.replace("-", "_").lower(): c for c in candidates}
    if word.replace("-", "_").lower() in normalised:
        return normalised[word.replace("-", "_").lower()]
    matches = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.8)
    return lowered[matches[0]] if matches else None
