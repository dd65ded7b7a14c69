"""Loading -> checking -> a result. Finds the configuration files under the given paths, reads
each with its format's reader, runs the selected rules and collects every finding."""

from __future__ import annotations

import os
import re
import sys
import types
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterable, Iterator

from shardshift.context import Release
from shardshift.context.tree import SKIP_DIRS  # one list of the folders that are no repository's own source
from shardshift.document import Document, SyntaxProblem
from shardshift.rules.base import SEVERITY_RANK, Context, Finding

if TYPE_CHECKING:
    from shardshift.options import CheckOptions

MAX_BYTES = 5_000_000
# Unsaved editor text (`shardshift lsp`): real path -> the text an editor holds for that file,
# read by `load` instead of the file on disk. Empty (and then never consulted) outside the server.
OVERLAY: dict[str, str] = {}


@dataclass(slots=True)
class CheckedFile:
    path: str
    format: str
    release: Release | None = None  # the release of the framework that judges the format (FORMAT_FRAMEWORK)

    def to_json(self) -> dict:
        out = {"path": self.path, "format": self.format}
        if self.release is not None:
            out["release"] = self.release.to_json()
        return out


@dataclass(frozen=True, slots=True)
class UnknownValue:
    """A setting a file gives but whose value is known only when the job runs: no rule judged it."""

    file: str
    line: int
    column: int
    pointer: str | None
    field: str
    reason: str

    def to_json(self) -> dict:
        return {"file": self.file, "line": self.line, "column": self.column, "pointer": self.pointer,
                "field": self.field, "reason": self.reason}


@dataclass(slots=True)
class CheckResult:
    findings: list[Finding] = field(default_factory=list)
    files: list[CheckedFile] = field(default_factory=list)
    documents: list[Document] = field(default_factory=list, repr=False)
    fixed: list[Finding] | None = None  # with --fix: what was fixed (the findings are what remains)
    unknowns: list[UnknownValue] = field(default_factory=list)
    hidden: list[Finding] = field(default_factory=list)  # below the lowest severity shown: counted only
    docs_url: str | None = None  # the documentation's base URL the run was configured with (docs-url)

    def worst(self) -> int:
        """The worst severity found, shown or hidden (the exit status does not depend on what is shown)."""
        return max((SEVERITY_RANK[f.severity] for f in (*self.findings, *self.hidden)), default=-1)

    def hidden_counts(self) -> dict[str, int]:
        counts = {"error": 0, "warning": 0, "info": 0}
        for finding in self.hidden:
            counts[finding.severity] += 1
        return counts

    def counts(self) -> dict[str, int]:
        counts = {"error": 0, "warning": 0, "info": 0}
        for finding in self.findings:
            counts[finding.severity] += 1
        return counts

    def unknown_context_count(self) -> int:
        """Findings, shown or hidden, that rest on context shardshift could not find."""
        return sum(1 for f in (*self.findings, *self.hidden) if f.unknown_context is not None)

    def to_json(self) -> dict:
        counts = self.counts()
        out = {
            "findings": [f.to_json() for f in self.findings],
            "files": [f.to_json() for f in self.files],
            "summary": {"files": len(self.files), "findings": len(self.findings), "errors": counts["error"],
                        "warnings": counts["warning"], "infos": counts["info"], "unknowns": len(self.unknowns),
                        "hidden": len(self.hidden), "unknown_context": self.unknown_context_count()},
            "unknowns": [u.to_json() for u in self.unknowns],
        }
        if self.fixed is not None:
            out["fixed"] = [f.to_json() for f in self.fixed]
            out["summary"]["fixed"] = len(self.fixed)
        return out


def discover(paths: list[str]) -> list[tuple[str, bool]]:
    """Files to consider: (path, given explicitly). Directories are walked in sorted order."""
    found: list[tuple[str, bool]] = []
    for path in paths:
        if os.path.isdir(path):
            for directory, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
                for name in sorted(files):
                    found.append((os.path.join(directory, name), False))
        else:
            found.append((path, True))
    return found


UNRECOGNISED = "unrecognised"  # the format of a file named on the command line that is no config shardshift reads


def unrecognised(path: str, text: str, why: str) -> Document:
    """A file named on the command line that shardshift does not read: reported (SS005), never
    skipped in silence (a CI step that names a file must not pass without checking it)."""
    document = Document(path=path, format=UNRECOGNISED, text=text)
    document.data = why
    return document


def load(path: str, explicit: bool) -> Document | None:
    """Read one file into a Document, or None when it is not a training config (found by a
    walk; a file named explicitly becomes an `unrecognised` Document instead)."""
    from shardshift import formats

    unsaved = OVERLAY.get(os.path.realpath(path)) if OVERLAY else None
    try:
        # Only regular files: reading a FIFO or a device found in a walk would block the hook.
        if unsaved is not None:
            raw = unsaved.encode("utf-8", "replace")
        elif not os.path.isfile(path):
            return unrecognised(path, "", "it is not a regular file") if explicit else None
        elif os.path.getsize(path) > MAX_BYTES:
            return unrecognised(path, "", f"it is larger than {MAX_BYTES:,} bytes, the most shardshift reads "
                                          "(no training configuration is that large)") if explicit else None
        else:
            with open(path, "rb") as handle:
                raw = handle.read()
    except OSError as error:
        if not explicit:
            return None
        return Document(path=path, format="unknown", text="", syntax=SyntaxProblem(f"cannot read: {error.strerror}", 1, 1))
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        if not explicit:
            return None
        return _undecodable(path, raw, error) or unrecognised(
            path, "", f"it is not UTF-8 text (byte 0x{raw[error.start]:02x} at offset {error.start})")
    name = formats.detect(path, text)
    if name is None and explicit:
        name = _detect_named(path, text)
    if name is None:
        return unrecognised(path, text, "neither its name nor its content is that of a training configuration "
                                        "shardshift reads") if explicit else None
    module = formats.reader(name)
    document = module.read(text, path)
    if document.syntax is not None and not _worth_reporting(name, path, text, explicit):
        return None
    # A reader may confirm from the parsed content what the text search only guessed
    # (a JSON Schema mentions "zero_optimization" too, but is no ds_config).
    confirm = getattr(module, "is_config", None)
    if document.syntax is None and confirm is not None and not confirm(document):
        if not explicit:
            return None
        # a file the name-based test gave to one reader may be another's by its content (a Megatron
        # launch with no suffix looks like any launch script)
        other = _detect_named(path, text)
        if other is not None and other != name:
            named = formats.reader(other)
            again = named.read(text, path)
            check_again = getattr(named, "is_config", None)
            if again.syntax is not None or check_again is None or check_again(again):
                return again
        reason = getattr(module, "not_config_reason", lambda _: None)(document)
        return unrecognised(path, text, reason or f"its name suggests a {name} file, but its content is not one "
                                                  "(no setting of that format)")
    return document


def _detect_named(path: str, text: str) -> str | None:
    """The format of a file named on the command line that no reader recognised by its name: judged
    by its content alone (a reader's `looks_like_named`; a Megatron argument list saved as `args.txt`,
    a launch script with no suffix). Never used in a folder walk."""
    from shardshift import formats

    for name in formats.READERS:
        judge = getattr(formats.reader(name), "looks_like_named", None)
        if judge is not None and judge(path, text):
            return name
    return None


def _undecodable(path: str, raw: bytes, error: UnicodeDecodeError) -> Document | None:
    """A file named on the command line that is not UTF-8: reported (SS001) when its name or
    content says it is a config, so that an unreadable config never passes as clean."""
    from shardshift import formats

    text = raw.decode("utf-8-sig", errors="replace")
    name = formats.detect(path, text)
    if name is None:
        return None
    before = raw[:error.start]
    line = before.count(b"\n") + 1
    column = len(before[before.rfind(b"\n") + 1:].decode("utf-8-sig", errors="replace")) + 1
    problem = SyntaxProblem(f"not UTF-8 text: byte 0x{raw[error.start]:02x} cannot be decoded", line, column)
    return Document(path=path, format=name, text=text, syntax=problem)


def _worth_reporting(name: str, path: str, text: str, explicit: bool) -> bool:
    """An unparseable file is reported when its content says it is a config of this format;
    a file matched by name only (say, some other `ds_*.json`) is skipped when found by a walk."""
    from shardshift import formats

    module = formats.reader(name)
    markers = getattr(module, "MARKER_KEYS", ())
    return explicit or any(marker in text for marker in markers)


def run_check(paths: list[str], context: Context, select: set[str] | None = None,
              ignore: set[str] | None = None, per_file_ignores: Callable[[str], set[str]] | None = None, *,
              skip_unrecognised: bool = False) -> CheckResult:
    """Check every config under `paths` with the rules chosen by `select` / `ignore` (code
    prefixes, as in ruff: "DS" selects every DS rule) and `per_file_ignores` (a file's path ->
    the codes or prefixes switched off for it). Inline suppressions are applied last. A file
    named in `paths` that is no configuration is reported (SS005) unless `skip_unrecognised`
    (what a pre-commit hook, which names every changed file, asks for)."""
    result = CheckResult()
    # the trees checked (a caller that checks files of a tree it names, the language server, sets them)
    context.roots = tuple(os.path.realpath(p) for p in paths if os.path.isdir(p)) or context.roots
    context.tree = checked_tree(paths) or context.tree
    for path, explicit in discover(paths):
        document = load(path, explicit)
        if document is not None and skip_unrecognised and document.format == UNRECOGNISED:
            continue
        if document is not None:
            result.documents.append(document)
            result.files.append(CheckedFile(path, document.format))
    link(result.documents)
    result.findings = check_documents(result.documents, context, select, ignore, per_file_ignores)
    result.unknowns = unknown_values(context)
    judged_by(result, context)
    listing = sys.modules.get("shardshift.context.tree")
    if listing is not None:
        listing.forget_texts()  # the run's one read of each context file is over
    return result


def checked_tree(paths: list[str]) -> tuple[str, ...]:
    """The checked tree: each folder given, and for each file given its repository (the folder
    holding `.git` above it, else the current directory when it is under it, else its folder)."""
    from shardshift.context.releases import repository_root

    tree = []
    for path in paths:
        top = os.path.realpath(path) if os.path.isdir(path) else os.path.realpath(repository_root(path))
        if top not in tree:
            tree.append(top)
    return tuple(tree)


def inside_tree(path: str, context: Context) -> bool:
    """`path` lies in the checked tree (always, when no tree is known: a library caller)."""
    from shardshift.files import inside

    return not context.tree or inside(path, context.tree)


def judged_by(result: CheckResult, context: Context) -> None:
    """Each file's release of the framework that judges its format (the one given, the pin found,
    or the newest), for the report."""
    from shardshift.context import FORMAT_FRAMEWORK

    for checked, document in zip(result.files, result.documents):
        framework = FORMAT_FRAMEWORK.get(checked.format)
        if framework is not None and document.syntax is None:
            checked.release = context.release(framework, checked.path)


def link(documents: list[Document]) -> None:
    """Let each format read its documents again knowing the others of the run (FSDP2 code that
    calls a helper defined in another file given to `check`): a reader module may define
    `link(documents)`, called with the documents of its format."""
    from shardshift import formats

    for name in sorted({d.format for d in documents}):
        if name not in formats.READERS:
            continue
        hook = getattr(formats.reader(name), "link", None)
        if hook is not None:
            hook([d for d in documents if d.format == name])


def unknown_values(context: Context) -> list[UnknownValue]:
    """Every setting of the run's setups whose value is known only when the job runs, at the place
    that sets it, once."""
    found: dict[tuple, UnknownValue] = {}
    read: dict | None = None  # documents by real path, built only when a file has configurations
    for setup in context.setups:
        # a file that chooses between configurations: what one of them leaves unknown
        plans = [setup.plan]
        if setup.documents[0].variants:
            if read is None:
                read = {os.path.realpath(d.path): d for d in context.documents}
            plans = [one.plan for _, one in _variant_setups(setup, read)] or plans
        for plan, dotted, value in ((plan, *u) for plan in plans for u in plan.unknowns()):
            where = plan.provenance.get(dotted) or value.where
            if where is None:
                continue
            item = UnknownValue(where.file, where.line, where.column, where.pointer, dotted, value.reason)
            found.setdefault((item.file, item.line, item.column, item.field), item)
    return sorted(found.values(), key=lambda u: (u.file, u.line, u.column, u.field))


def check_documents(documents: list[Document], context: Context, select: set[str] | None = None,
                    ignore: set[str] | None = None,
                    per_file_ignores: Callable[[str], set[str]] | None = None) -> list[Finding]:
    """Run the chosen rules over `documents` (which are all the run sees: cross-file rules look
    at `context.documents`), then filter by per-file ignores and inline suppressions, and add an
    unused-suppression finding (SS003) for every suppression that suppressed nothing."""
    from shardshift import suppress
    from shardshift.rules import all_codes, rules_for
    from shardshift.rules.base import PlanRule
    from shardshift.setup import build_setups

    for name in ("shardshift.context.tree", "shardshift.context.repository"):  # loaded only by checks that need them
        module = sys.modules.get(name)
        if module is not None:
            module.reset()  # each run sees the repository's files as they are now (the editor checks again and again)
    context.documents = documents
    registered = rules_for(frozenset(d.format for d in documents))
    rules = [rule() for rule in registered if _chosen(rule.code, select, ignore)]
    plan_rules = [rule for rule in rules if isinstance(rule, PlanRule)]
    context.setups = build_setups([d for d in documents if d.syntax is None], lambda path: (
        load(path, explicit=False) if context.follow_outside or inside_tree(path, context) else None))
    switched_off: dict[str, set[str]] = {}

    def off(path: str) -> set[str]:
        if path not in switched_off:
            switched_off[path] = per_file_ignores(path) if per_file_ignores else set()
        return switched_off[path]

    suppressions = {d.path: suppress.scan(d.path, d.text) for d in documents}
    index = suppress.Index(suppressions)

    def reported(found: Iterable[Finding]) -> Iterator[Finding]:
        # per-file ignores and inline suppressions first, so that the per-rule limit counts
        # only what would be reported (and every suppression still sees its findings)
        for finding in found:
            if not _matches(finding.code, off(finding.file)) and not index.suppresses(finding):
                yield finding

    findings: list[Finding] = []
    capped: dict[str, set[str]] = {}  # file -> codes whose findings were not all computed
    given_deepspeed = context.deepspeed_version
    for document in documents:
        if document.format == "deepspeed" and document.syntax is None:
            context.judge_with_deepspeed_of(document.path)  # the DeepSpeed pin of this file's repository
        else:
            context.deepspeed_version, context.deepspeed_release = given_deepspeed, None
        for rule in rules:
            if rule.formats and document.format not in rule.formats:
                continue
            if document.syntax is not None and rule.code != "SS001":
                continue
            if document.variants:
                listed = _at_most(_judge_variants(
                    rule, [(label, _at_most(reported(rule.check(variant, context)), MAX_FINDINGS_PER_RULE))
                           for label, variant in document.variants]), MAX_FINDINGS_PER_RULE)
            else:
                listed = _at_most(reported(rule.check(document, context)), MAX_FINDINGS_PER_RULE)
            if len(listed) > MAX_FINDINGS_PER_RULE:
                capped.setdefault(document.path, set()).add(rule.code)
            findings.extend(listed)
    context.deepspeed_version, context.deepspeed_release = given_deepspeed, None
    if plan_rules:
        read: dict | None = None  # documents by real path, built only when a file has configurations
        for setup in context.setups:
            alternatives = []
            if setup.documents[0].variants:
                if read is None:
                    read = {os.path.realpath(d.path): d for d in documents}
                alternatives = _variant_setups(setup, read)
            for rule in plan_rules:
                if alternatives:
                    findings.extend(_judge_variants(rule, [(label, list(reported(rule.check_setup(one, context))))
                                                           for label, one in alternatives]))
                else:
                    findings.extend(reported(rule.check_setup(setup, context)))
        findings = _distinct(findings)  # a ds_config named by two files is judged in both setups

    for document in documents:
        if not suppressions[document.path] or document.syntax is not None:
            continue
        # a code of another format's rule is known, not a typo: this needs every rule module
        active = {code for code in all_codes() if _chosen(code, select, ignore) and not _matches(code, off(document.path))}
        # where a rule's findings were not all computed, a suppression it might use is not judged
        unsure = capped.get(document.path, set())
        judged = [x for x in suppressions[document.path] if not unsure or (x.codes and not unsure & set(x.codes))]
        if "SS003" in active:
            findings.extend(suppress.unused(judged, active, all_codes(), "unused-suppression"))
    from shardshift.premises import judge

    findings = judge(findings, {type(rule).code: type(rule) for rule in rules}, context, documents)
    _note_assumptions(findings, documents)
    findings.sort(key=lambda f: (f.file, f.line, f.column, f.code))
    return findings


def _note_assumptions(findings: list[Finding], documents: list[Document]) -> None:
    """A finding at (or related to) a setting whose value is a launch script's own default says
    so: the environment may set it otherwise (`check --env`)."""
    uses: dict = {}
    world: dict = {}  # file -> the assumptions the world size of its launch stands on
    for document in documents:
        for assumption in document.assumptions:
            uses.setdefault((document.path, assumption.used_line, assumption.used_column), []).append(assumption)
        if document.assumptions and document.plan is not None:
            where = document.plan.provenance.get("world.world_size")
            if where is not None and (document.path, where.line, where.column) in uses:
                world[document.path] = uses[(document.path, where.line, where.column)]
    if not uses:
        return
    for finding in findings:
        found = list(uses.get((finding.file, finding.line, finding.column), ()))
        for related in finding.related:
            found += uses.get((related.file, related.line, related.column), ())
        if world and "world size" in finding.message:  # the world size is given at the launcher
            for path in dict.fromkeys([finding.file] + [r.file for r in finding.related]):
                found += world.get(path, ())
        found = [a for a in dict.fromkeys(found) if a not in finding.assumed]
        if not found:
            continue
        finding.assumed.extend(found)
        finding.message = finding.message.rstrip() + " " + assumption_note(found)


def assumption_note(assumed: list) -> str:
    """`(with the script's default TP=8; the environment may set TP: ...)` for the values a finding
    stands on."""
    defaults = {a.variable: a.value for a in assumed if not a.from_env}
    given = {a.variable: a.value for a in assumed if a.from_env and a.variable not in defaults}
    parts = []
    if defaults:
        shown = ", ".join(f"{name}={value}" for name, value in defaults.items())
        names = ", ".join(defaults)
        example = " ".join(f"--env {name}=..." for name in defaults)
        parts.append(f"with the script's default{'s' if len(defaults) > 1 else ''} {shown}; the environment may "
                     f"set {names}: `shardshift check {example}`")
    if given:
        parts.append("with " + ", ".join(f"{name}={value}" for name, value in given.items()) + " set by --env")
    return "(" + "; ".join(parts) + ")"


# A rule lists at most this many findings in one file; the next one says that more were not listed.
# A hostile or generated file (200,000 unknown keys) then costs what its parse costs, and a
# report stays readable; a real config is far below it.
MAX_FINDINGS_PER_RULE = 1000


def _at_most(found: Iterable[Finding], limit: int) -> list[Finding]:
    """The first `limit` findings of one rule in one file (rules yield lazily, so the rest is not
    even computed), and in place of the others one finding, at the first not listed, saying so."""
    import dataclasses
    from itertools import islice

    listed = list(islice(found, limit + 1))
    if len(listed) <= limit:
        return listed
    first_unlisted = listed[limit]
    note = (f"more than {limit} {first_unlisted.code} findings in this file: only the first {limit} are listed, and "
            f"this one stands for the rest (starting here: {first_unlisted.message})")
    return [*listed[:limit], dataclasses.replace(first_unlisted, message=note, fix=None, fix_kind=None)]


def _judge_variants(rule, judged: list[tuple[tuple[str, ...], list[Finding]]]) -> list[Finding]:
    """One rule's findings over the configurations a file chooses between (Document.variants), as
    [(label, findings)]: a finding of every configuration once, as it is; a finding of only some
    once, its message naming their branches ("... (when `[ "$MODEL" = 13B ]`, line 5)"), except
    that a setting missing (`rule.reports_missing`) is reported only when no configuration sets it."""
    import dataclasses

    def key(finding: Finding) -> tuple:
        return finding.code, finding.file, finding.line, finding.column, finding.message

    keys = [{key(f) for f in found} for _, found in judged]
    out: list[Finding] = []
    seen: set[tuple] = set()
    for _, found in judged:
        for finding in found:
            k = key(finding)
            if k in seen:
                continue
            seen.add(k)
            present = {n for n, ks in enumerate(keys) if k in ks}
            if len(present) == len(judged):
                out.append(finding)
            elif not getattr(rule, "reports_missing", False):
                named = _branches_named([label for label, _ in judged], present)
                counted = _world_guard(named) if getattr(rule, "judges_world", False) else None
                if counted is not None and finding.unknown_context is None:
                    from shardshift.context import UnknownContext

                    finding = dataclasses.replace(finding, unknown_context=UnknownContext(
                        "value", f"whether this branch runs with this world size: it is chosen by ${counted}, a count "
                                 "of machines or GPUs known only when the job runs, while the world size comes from "
                                 "another place", f"set {counted} with --env, or check the branch with the world it is meant for"))
                out.append(dataclasses.replace(finding, message=f"{finding.message} ({named})"))
    return out


# A variable whose name says it counts the machines or processes of the run.
_WORLD_NAME = r"\$\{?([A-Za-z_]*(?:NODE|GPU|WORLD|NPROC|WORKER|HOST|DEVICE)[A-Za-z_0-9]*)"


def _world_guard(named: str) -> str | None:
    """The variable, named like a count of machines, that the undecided branches `named` test."""
    match = re.search(_WORLD_NAME, named, re.IGNORECASE)
    return match.group(1) if match else None


def _branches_named(labels: list[tuple[str, ...]], present: set[int]) -> str:
    """The fewest branches that name the configurations `present` (indices into `labels`, each a
    configuration's branches, one per block): "when A" when every configuration with A (and only
    those) has the finding, "when A; when B" for either, else each configuration in full."""
    holds: dict[str, set[int]] = {}
    for n, label in enumerate(labels):
        for part in label:
            holds.setdefault(part, set()).add(n)
    inside = sorted((p for p, ns in holds.items() if ns <= present), key=lambda p: -len(holds[p]))
    chosen, covered = [], set()
    for part in inside:
        if not holds[part] <= covered:
            chosen.append(part)
            covered |= holds[part]
    if covered == present:
        return "; ".join(chosen)
    return "; ".join(" and ".join(labels[n]) for n in sorted(present))


def _variant_setups(setup, known: dict | None = None) -> list:
    """The setup once per configuration of its referring (or only) file when that file chooses
    between several (Document.variants): [(label, Setup)], each linking the files that
    configuration names (a branch may choose its own ds_config); empty when it does not choose.
    `known`: documents already read, by real path."""
    from shardshift.setup import build_setups

    document = setup.documents[0]
    if not document.variants:
        return []
    known = {} if known is None else known
    for other in setup.documents[1:]:
        known.setdefault(os.path.realpath(other.path), other)

    def loaded(path: str) -> Document | None:
        real = os.path.realpath(path)
        if real not in known:
            known[real] = load(path, explicit=False)
        return known[real]

    out = []
    for label, variant in document.variants:
        if variant.syntax is not None:
            continue
        own = next((s for s in build_setups([variant], loaded) if s.documents[0] is variant), None)
        if own is not None:
            out.append((label, own))
    return out


def _distinct(findings: list[Finding]) -> list[Finding]:
    seen: set[tuple] = set()
    out = []
    for finding in findings:
        key = (finding.code, finding.file, finding.line, finding.column, finding.message)
        if key not in seen:
            seen.add(key)
            out.append(finding)
    return out


def _matches(code: str, prefixes: set[str] | None) -> bool:
    return bool(prefixes) and any(code.startswith(prefix) for prefix in prefixes)


def _chosen(code: str, select: set[str] | None, ignore: set[str] | None) -> bool:
    if select and not _matches(code, select):
        return False
    return not _matches(code, ignore)


def run(paths: Iterable[str], options: CheckOptions) -> CheckResult:
    """Check `paths` with resolved options; every finding, paths as the readers saw them."""
    from shardshift.options import ShardshiftError

    paths = list(paths)
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        raise ShardshiftError(f"no such file or directory: {', '.join(missing)}", usage=True)
    from shardshift.context.environment import given

    with given(options.env):
        result = run_check(paths, options.context, options.select, options.ignore, options.per_file_ignores,
                           skip_unrecognised=options.skip_unrecognised)
    result.docs_url = options.docs_url
    return result


class _CallableModule(types.ModuleType):
    """`shardshift.check(paths, **options)` is the API's check (shardshift.api.check). Importing this
    module sets the package's attribute `check` to the module, so the module is callable as that
    function: whichever of the two a caller reaches, the call does the same."""

    def __call__(self, paths, **options):
        from shardshift.options import present, resolve_options

        resolved = resolve_options(**options)
        return present(run([paths] if isinstance(paths, str) else paths, resolved), resolved.min_severity)


sys.modules[__name__].__class__ = _CallableModule
