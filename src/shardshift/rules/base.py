"""What a rule is, what it yields, and what it may know about the run.

A rule is a class with a stable `code`, a kebab-case `name` that describes the pattern it flags,
a default `severity`, the `formats` it applies to, and a docstring that is its user
documentation: a first line (the summary), then the sections "What it does", "Why is this bad",
"Example" and "Use instead" (printed by `shardshift explain CODE`). `check` yields `Finding`s.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, ClassVar, Iterable, Literal

if TYPE_CHECKING:
    from shardshift.context import Release, UnknownContext
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
    # Set when the verdict rests on context shardshift could not find (the program, the consumer,
    # the release): the finding is then an info that says what is unknown and how to tell the tool.
    unknown_context: UnknownContext | None = None
    # the script defaults (`${TP:-8}`) or --env values the judged values stand on (source.Assumption)
    assumed: list = field(default_factory=list)
    # the premises the verdict rests on, each with its evidence (premises.Premise), set by the driver
    evidence: list = field(default_factory=list)
    # set by a rule when its verdict on this finding differs between the releases its tables cover
    # (a key removed in a later release): with no pin found, the finding is then only an info
    release_dependent: bool = False

    def to_json(self) -> dict:
        out = {"code": self.code, "severity": self.severity, "file": self.file, "line": self.line,
               "column": self.column, "pointer": self.pointer, "message": self.message, "fix": self.fix}
        if self.fix_kind is not None:
            out["fix_kind"] = self.fix_kind
        if self.unknown_context is not None:
            out["unknown_context"] = self.unknown_context.to_json()
        if self.related:
            out["related"] = [r.to_json() for r in self.related]
        if self.assumed:
            out["assumed"] = [a.to_json() for a in self.assumed]
        if self.evidence:
            out["evidence"] = [p.to_json() for p in self.evidence]
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
    # framework -> the release given on the command line or in [tool.shardshift] (wins over detection)
    release_overrides: dict[str, Release] = field(default_factory=dict)
    # the directories given to check (real paths): a walk for dependency files stops at their top,
    # and a ds_config's consumer is looked for in them when the file is in no git repository
    roots: tuple[str, ...] = ()
    # the checked tree (real paths): the folders given, and the repository of each file given. A
    # file outside it that a checked file names is not read unless `follow_outside` (SS006)
    tree: tuple[str, ...] = ()
    follow_outside: bool = False
    # the DeepSpeed release `deepspeed_version` comes from while a document's rules run (the pin
    # found for that file; None when none was found or the version was given)
    deepspeed_release: Release | None = None
    _releases: dict[tuple[str, str], Release] = field(default_factory=dict, repr=False)

    def release(self, framework: str, path: str) -> Release:
        """The release of `framework` that judges the file at `path`: the one given, else the pin
        found in the dependency files of the repository around `path`, else the newest."""
        given = self.release_overrides.get(framework)
        if given is not None:
            return given
        import os

        key = (framework, os.path.dirname(os.path.abspath(path)))
        found = self._releases.get(key)
        if found is None:
            from shardshift.context.releases import detect

            found = self._releases[key] = detect(framework, path, self.roots)
        return found

    def judge_with_deepspeed_of(self, path: str) -> None:
        """Set `deepspeed_version` to the DeepSpeed release that judges the file at `path`: the one
        given (--deepspeed-version, [tool.shardshift]), else the pin found around the file."""
        if "deepspeed" in self.release_overrides:
            return
        release = self.release("deepspeed", path)
        from shardshift.context.releases import newest

        if release.version is not None and release.version >= newest("deepspeed"):
            # a pin of the newest release shardshift knows judges as the newest does (same messages)
            self.deepspeed_version, self.deepspeed_release = None, None
            return
        self.deepspeed_release = release if release.source != "no pin found" and not release.basis else None
        self.deepspeed_version = release.version

    @property
    def deepspeed_version_text(self) -> str:
        found = self.deepspeed_release
        if self.deepspeed_version is None:
            if found is not None:  # a pin that allows no release shardshift knows
                return f"the newest DeepSpeed ({found.source} says {found.detail}; pass --deepspeed-version to pin it)"
            return "the newest DeepSpeed (pass --deepspeed-version to pin it)"
        text = "DeepSpeed " + ".".join(map(str, self.deepspeed_version))
        return f"{text} ({found.source})" if found is not None else text


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    severity: ClassVar[Severity]
    formats: ClassVar[tuple[str, ...]] = ()
    # True for a rule that reports a setting missing from the file: where the file chooses between
    # configurations (Document.variants), it is reported only when no configuration sets it.
    reports_missing: ClassVar[bool] = False
    # What the verdict rests on beyond the file (premises.PremiseKind); None: the format's defaults
    # (premises.DEFAULT_PREMISES). The driver establishes each from evidence in the repository.
    premises: ClassVar[tuple[str, ...] | None] = None
    # True when the verdict is the same in every release of the framework that the rule's tables
    # cover, so that no pin is needed for it to be an error or a warning; False makes a finding
    # found with no pin an info.
    release_agreement: ClassVar[bool] = True

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
                related: Iterable[Related] = (), unknown_context: UnknownContext | None = None) -> Finding:
        """A finding at `pointer` (the key's own position when `key`), or at `position`.
        `fix_kind` marks `fix` as safe for `--fix`; `related` lists other places involved;
        `unknown_context` makes it an info that rests on context shardshift could not find."""
        line, column = position or document.position(pointer or "", key=key)
        shown = document.renamed.get(pointer, pointer) if pointer is not None else None
        if unknown_context is not None:
            severity = "info"
        return Finding(self.code, severity or self.severity, document.path, line, column, shown, message, fix,
                       self.name, list(related), fix_kind if fix is not None else None, unknown_context)

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

    # Batch and layout arithmetic is the same for every program that reads these settings (a
    # Megatron fork divides the world as upstream does), so the program is no premise; what the file
    # is (a template, another program's JSON) still is.
    premises: ClassVar[tuple[str, ...] | None] = ("release", "role")
    # the verdict compares settings with the world size (a branch chosen by a count of machines the
    # script does not set cannot be paired with a world taken from elsewhere: check._judge_variants)
    judges_world: ClassVar[bool] = False

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        return ()

    def check_setup(self, setup: Setup, context: Context) -> Iterable[Finding]:
        raise NotImplementedError

    def finding_at(self, where: Location, message: str, *, fix: str | None = None,
                   severity: Severity | None = None, related: Iterable[Related] = (),
                   unknown_context: UnknownContext | None = None) -> Finding:
        if unknown_context is not None:
            severity = "info"
        return Finding(self.code, severity or self.severity, where.file, where.line, where.column, where.pointer,
                       message, fix, self.name, list(related), None, unknown_context)

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


# "Did you mean": at most this many fuzzy look-ups per file (see `Suggestions`), so that a file
# with 200,000 unknown keys costs a dictionary look-up per key, not 200,000 fuzzy searches.
SUGGESTION_LIMIT = 50
# How many candidates were compared with a word (edit distance or difflib ratio): tests assert
# that the work is bounded by reading this counter, never the clock.
COMPARISONS = [0]


class _Candidates:
    """A candidate list prepared once: its exact-match maps and its words bucketed by length."""

    __slots__ = ("normal", "lowered", "normalised", "by_length", "lowered_by_length")

    def __init__(self, candidates: tuple[str, ...]):
        self.normal: dict[str, str] = {}
        for c in candidates:  # clear_match: the first candidate with the same normal form
            self.normal.setdefault(c.replace("-", "_").lower(), c)
        self.lowered = {c.lower(): c for c in candidates}  # did_you_mean: the last one wins
        self.normalised = {c.replace("-", "_").lower(): c for c in candidates}
        self.by_length: dict[int, list[tuple[str, str]]] = {}
        for c in candidates:
            self.by_length.setdefault(len(c), []).append((c, c.replace("-", "_").lower()))
        self.lowered_by_length: dict[int, list[str]] = {}
        for low in self.lowered:
            self.lowered_by_length.setdefault(len(low), []).append(low)


@lru_cache(maxsize=512)
def _prepared(candidates: tuple[str, ...]) -> _Candidates:
    return _Candidates(candidates)


_LAST: list = [None, None]  # the last candidate collection and its table (callers pass the same list again and again)


def _candidates(candidates: Iterable[str]) -> _Candidates:
    if candidates is _LAST[0] and isinstance(candidates, (tuple, frozenset)):
        return _LAST[1]
    table = _prepared(candidates if isinstance(candidates, tuple) else tuple(candidates))
    if isinstance(candidates, (tuple, frozenset)):  # immutable: safe to recognise by identity
        _LAST[0], _LAST[1] = candidates, table
    return table


def clear_match(word: str, candidates: Iterable[str]) -> str | None:
    """The one candidate `word` is an unmistakable misspelling of (safe for --fix), or None:
    the same but for case or `-`/`_`, or the only candidate within two edits (one edit for
    words shorter than eight characters)."""
    return _clear_match(word, _candidates(candidates))


def _clear_match(word: str, table: _Candidates) -> str | None:
    normal = word.replace("-", "_").lower()
    found = table.normal.get(normal)
    if found is not None:
        return found
    limit = min(2, len(word) // 4)
    if limit == 0:
        return None
    close = []
    for length in range(len(normal) - limit, len(normal) + limit + 1):  # an edit changes the length by one at most
        for candidate, candidate_normal in table.by_length.get(length, ()):
            if _edit_distance(normal, candidate_normal, limit) <= limit:
                close.append(candidate)
    if len(close) != 1:
        return None
    return close[0]


def _edit_distance(a: str, b: str, limit: int | None = None) -> int:
    """Levenshtein distance; with `limit`, any value above it may be returned as soon as the
    distance is known to exceed it."""
    COMPARISONS[0] += 1
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y)))
        if limit is not None and min(current) > limit:
            return limit + 1
        previous = current
    return previous[-1]


def did_you_mean(word: str, candidates: Iterable[str]) -> str | None:
    """The closest candidate to a misspelled key, or None when nothing is close."""
    return _did_you_mean(word, _candidates(candidates))


def _did_you_mean(word: str, table: _Candidates) -> str | None:
    low = word.lower()
    if low in table.lowered:
        return table.lowered[low]
    found = table.normalised.get(word.replace("-", "_").lower())
    if found is not None:
        return found
    # difflib's ratio is 2*matches/(len(a)+len(b)) <= 2*min/(len(a)+len(b)): a ratio of 0.8 needs
    # the lengths within a factor of 1.5 (the same filter as difflib's real_quick_ratio, by bucket).
    size = len(low)
    possible = [c for length in range(math.ceil(size * 2 / 3) - 1, math.floor(size * 3 / 2) + 2)
                for c in table.lowered_by_length.get(length, ())]
    if not possible:
        return None
    COMPARISONS[0] += len(possible)
    matches = difflib.get_close_matches(low, possible, n=1, cutoff=0.8)
    return table.lowered[matches[0]] if matches else None


class Suggestions:
    """"Did you mean" for the unknown keys of one file, bounded: exact matches (case, `-`/`_`)
    always, fuzzy ones for the first `limit` keys only. `skipped` says whether the last look-up
    was left out (say so in the message); `left_out` counts them."""

    def __init__(self, limit: int = SUGGESTION_LIMIT):
        self.limit = limit
        self.used = 0
        self.skipped = False
        self.left_out = 0

    def lookup(self, word: str, candidates: Iterable[str]) -> tuple[str | None, str | None]:
        """(clear_match, clear_match or did_you_mean) of `word`, as the functions give them."""
        table = _candidates(candidates)
        self.skipped = False
        exact = table.normal.get(word.replace("-", "_").lower())
        if exact is not None:
            return exact, exact
        if self.used >= self.limit:
            self.skipped = True
            self.left_out += 1
            return None, None
        self.used += 1
        clear = _clear_match(word, table)
        return clear, clear or _did_you_mean(word, table)

    def note(self) -> str:
        """The words a message ends with when the look-up was left out."""
        return f"no spelling suggestion computed (only the first {self.limit} unknown keys of a file get one)"
