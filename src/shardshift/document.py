"""What a reader hands to the rules, and what a writer hands back."""

from __future__ import annotations

from dataclasses import InitVar, dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Literal

from shardshift.source import Assumption, Location, Node, find_member, find_node, join_pointer

if TYPE_CHECKING:
    from shardshift.plan import Plan

# unknown: the source sets it to a value not known before the job runs; the target states the default
MappingStatus = Literal["exact", "approximate", "dropped", "unknown"]
MAPPING_STATUSES: tuple[str, ...] = ("exact", "approximate", "dropped", "unknown")


@dataclass(slots=True)
class SyntaxProblem:
    """The file could not be parsed at all."""

    message: str
    line: int
    column: int

    @property
    def bound(self) -> bool:
        """shardshift's own bound refused the file (nesting, size of a number or key), not a rule
        of the format: the framework may read it. Readers say so with TOOL_BOUND in the message."""
        return TOOL_BOUND in self.message


# The words that end a refusal by one of shardshift's own bounds (see SyntaxProblem.bound).
TOOL_BOUND = "past the bounds of what shardshift reads"


@dataclass(frozen=True, slots=True)
class Reference:
    """A file this document refers to as part of the same training run (a training script's
    ds_config, an Accelerate YAML's `deepspeed_config_file`, a launch script's
    `--deepspeed_config`). `target` is the path as written; `resolved` is that path resolved from
    the referring file's folder (None when it is not a literal: the reason is in `unknown`).
    `role` names what the target is to the referrer ("deepspeed_config")."""

    target: str
    resolved: str | None
    where: Location
    role: str = "deepspeed_config"
    unknown: str | None = None
    # how `resolved` was found when not by the path as written ("resolved /home/x/ds.json to
    # configs/ds.json by its path suffix")
    note: str | None = None


def resolve_reference(referrer: str, target: str) -> tuple[str | None, str | None]:
    """Where a path named in `referrer` points: (resolved path, None), or (None, why not).

    The frameworks open such a path relative to the working directory of the job (Accelerate,
    Axolotl, a script's `open`), which no file states; the referring file's folder is tried first,
    then the current directory (where jobs are usually launched from the repository's root)."""
    import os

    candidates = [target] if os.path.isabs(target) else [os.path.join(os.path.dirname(referrer), target), target]
    for candidate in map(os.path.normpath, candidates):  # `a/b/../c` names `a/c` even where `a/b` is missing
        if os.path.isfile(candidate):
            return candidate, None
    return None, f"{target!r} is neither next to {os.path.basename(referrer)} nor in the current directory"


@dataclass(slots=True)
class Document:
    """One configuration file as read: its text, positioned tree, Plan and format-level data.

    `data` is the plain value the framework's own loader would see (json.load semantics);
    `root` is the positioned tree of the same text; `plan` is None when the file did not parse.
    A reader may build the Plan on first use (`defer_plan`), so that a check whose rules never
    look at it does not import pydantic; `document.plan` reads and assigns as a plain attribute.
    """

    path: str
    format: str
    text: str
    root: Node | None = None
    data: Any = None
    plan: InitVar[Plan | None] = None
    syntax: SyntaxProblem | None = None
    # pointer in the normalised data -> pointer as written (legacy spellings renamed by the reader)
    renamed: dict[str, str] = field(default_factory=dict)
    # other files of the same training run this one refers to (see setup.py)
    references: list[Reference] = field(default_factory=list)
    # values a launch script takes from its own defaults (`${TP:-8}`) or from --env (source.Assumption)
    assumptions: list[Assumption] = field(default_factory=list)
    # the configurations undecided branches of the file choose between (a launch script's
    # `if [ "$MODEL" = 7B ]` ... `elif` ...): (label, a Document of that configuration alone), the
    # label naming the branch chosen at each block ("when `[ "$MODEL" = 7B ]`, line 3", ...). The
    # rules judge each (check.py); everything else (plan, convert) reads this document.
    variants: list[tuple[tuple[str, ...], Document]] = field(default_factory=list)
    _plan: Plan | None = field(default=None, init=False, repr=False, compare=False)
    _plan_builder: Callable[[], Plan | None] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self, plan: Plan | None) -> None:
        self._plan = plan

    def defer_plan(self, build: Callable[[], Plan | None]) -> None:
        """Build the Plan with `build()` when `plan` is first read."""
        self._plan, self._plan_builder = None, build

    def assume(self, assumed: tuple, line: int, column: int) -> None:
        """Records that the setting at `line`:`column` uses script defaults (shell `assumed` tuples:
        (variable, value, line, column) each)."""
        for variable, value, at_line, at_column in assumed:
            entry = Assumption(variable, value, at_line, at_column, line, column)
            if entry not in self.assumptions:
                self.assumptions.append(entry)

    def settings(self) -> list[tuple[str, int, int]]:
        """Every leaf setting as written: (pointer, line, column of its key)."""
        found: list[tuple[str, int, int]] = []

        def visit(value: Any, pointer: str) -> None:
            if isinstance(value, dict) and value:
                for key, child in value.items():
                    visit(child, join_pointer(pointer, key))
            elif pointer:
                found.append((pointer, *self.position(pointer, key=True)))

        visit(self.data, "")
        return found

    def position(self, pointer: str, *, key: bool = False) -> tuple[int, int]:
        """Line and column of the value at `pointer` (or of its key), falling back to the
        nearest existing parent, then to the start of the file."""
        if self.root is None:
            return 1, 1
        pointer = self.renamed.get(pointer, pointer)
        probe = pointer
        while True:
            if key and probe == pointer:
                member = find_member(self.root, probe)
                if member is not None:
                    return member.line, member.column
            node = find_node(self.root, probe)
            if node is not None:
                return node.line, node.column
            if not probe:
                return 1, 1
            probe = probe.rsplit("/", 1)[0]


def _get_plan(document: Document) -> Plan | None:
    if document._plan_builder is not None:
        build, document._plan_builder = document._plan_builder, None
        document._plan = build()
    return document._plan


def _set_plan(document: Document, plan: Plan | None) -> None:
    document._plan, document._plan_builder = plan, None


Document.plan = property(_get_plan, _set_plan, doc="The Plan (built on first use when the reader deferred it).")  # type: ignore[assignment]


@dataclass(slots=True)
class MappingEntry:
    """How one source setting carried over to the target."""

    source: str
    line: int
    column: int
    status: MappingStatus
    target: str | None
    reason: str
    file: str | None = None  # another file of the source's setup (its ds_config); None: the source itself

    def to_json(self) -> dict:
        out = {"source": self.source, "line": self.line, "column": self.column, "status": self.status,
               "target": self.target, "reason": self.reason}
        if self.file is not None:
            out["file"] = self.file
        return out


@dataclass(slots=True)
class Conversion:
    """A writer's result: the target text and what happened to every source setting."""

    text: str
    entries: list[MappingEntry] = field(default_factory=list)

    @property
    def dropped(self) -> list[MappingEntry]:
        return [e for e in self.entries if e.status == "dropped"]

    @property
    def unknown(self) -> list[MappingEntry]:
        return [e for e in self.entries if e.status == "unknown"]

    def mark_unknowns(self, plan: Plan | None, source: str | None = None) -> None:
        """Give every Unknown field of the source's Plan the status `unknown` with its reason: the
        entry of that setting (found by the place the Plan records, else by the field's own
        pointer) when there is one, else a new entry at that place. Entries for the parts of a
        value written as `{unknown: why}` (a Plan YAML) fold into it."""
        if plan is None:
            return
        for dotted, value in plan.unknowns():
            where = plan.origin(dotted) or value.where
            own = "/" + "/".join("global" if part == "global_" else part for part in dotted.split("."))
            pointer = where.pointer if where is not None and where.pointer and where.pointer.startswith("/") else own
            reason = f"not known before the job runs: {value.reason}; the target states the default"
            # `source`: the converted file; a place in another file of its setup names that file
            file = where.file if where is not None and source is not None and where.file != source else None
            self.entries = [e for e in self.entries if e.file != file or not e.source.startswith(pointer + "/")]
            entry = next((e for e in self.entries if e.file == file and e.source in (pointer, own)), None)
            if entry is not None:
                entry.status, entry.target, entry.reason = "unknown", None, reason
                continue
            self.entries.append(MappingEntry(pointer, where.line if where else 1, where.column if where else 1,
                                             "unknown", None, reason, file))
