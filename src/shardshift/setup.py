"""Setups: the files that describe one training run, linked by their references and merged into
one Plan with each framework's precedence.

A reader records the files a document refers to (`Document.references`: a training script's
ds_config, an Accelerate YAML's `deepspeed_config_file`, an Axolotl YAML's `deepspeed:`). A
format module says, in its `PRECEDENCE` table, what its framework does when the referring file
and the referred-to ds_config both set the same Plan field:

- "refuses": the framework stops at launch whenever the referring file sets it next to the
  reference, whatever the values and whether or not the ds_config sets it too;
- "mismatch": the framework stops at launch when both hold real values that differ; an `"auto"`
  in the ds_config is filled from the referring file; where the framework compares with its own
  default when the referring file is silent, `default` holds that value (and `key` the referring
  format's name for the setting);
- "referrer" / "referenced": one side silently wins (the referring file, or the ds_config);
- "override": the referring file's value wins by design (a launch script's command-line override
  of the config file it names, `--training.steps 10`): no conflict is recorded.

A format module may instead give the table per reference, `precedence(reference) -> table` (a
launch script: the command line wins over the framework's own config file, while a ds_config it
names follows another table).

A file that no other file refers to is a setup of its own.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Callable, Literal

if TYPE_CHECKING:
    from shardshift.document import Document
    from shardshift.plan import Plan
    from shardshift.source import Location

Outcome = Literal["refuses", "mismatch", "referrer", "referenced", "override"]


class Precedence:
    """What a framework does when a referring file and its ds_config both set one Plan field.
    `says` is that behaviour in words for the finding, checked against the framework's code
    (e.g. "Accelerate raises a ValueError at launch when deepspeed_config_file is set").
    `default` ("mismatch"): the value compared when the referring file does not set the field,
    `key` the referring format's name for it (for messages); `unless`: referring values for
    which `says` does not hold (no finding). Plain classes here, not dataclasses: no code is
    generated at import (a pre-commit hook imports this on every commit)."""

    __slots__ = ("outcome", "says", "default", "key", "unless")

    def __init__(self, outcome: Outcome, says: str, default: Any = None, key: str | None = None,
                 unless: frozenset = frozenset()) -> None:
        self.outcome, self.says, self.default, self.key, self.unless = outcome, says, default, key, unless

    def __repr__(self) -> str:
        return f"Precedence({self.outcome!r}, {self.says!r})"


class Conflict:
    """One Plan field set by a referring file and by the ds_config it names. A value that side
    does not set is None (a refused setting alone in the referring file; a ds_config value
    compared with the framework's default). `precedence` None: shardshift does not know which
    one the framework uses; `via`: where the referring file names the ds_config."""

    __slots__ = ("field", "referrer", "referenced", "referrer_value", "referenced_value", "precedence", "via")

    def __init__(self, field: str, referrer: Document, referenced: Document, referrer_value: Any,
                 referenced_value: Any, precedence: Precedence | None, via: Location | None = None) -> None:
        self.field, self.referrer, self.referenced = field, referrer, referenced
        self.referrer_value, self.referenced_value = referrer_value, referenced_value
        self.precedence, self.via = precedence, via


class Setup:
    """The files of one training run, the first being the one that refers to the others (or
    the only file), their merged Plan, and the fields they disagree on."""

    __slots__ = ("documents", "plan", "conflicts")

    def __init__(self, documents: list[Document], plan: Plan, conflicts: list[Conflict] | None = None) -> None:
        self.documents, self.plan, self.conflicts = documents, plan, conflicts if conflicts is not None else []

    @property
    def referrer(self) -> Document | None:
        """The referring file, when this setup links several."""
        return self.documents[0] if len(self.documents) > 1 else None

    def of_format(self, name: str) -> list[Document]:
        return [d for d in self.documents if d.format == name]


def launches_of(document: Document, setups: list[Setup], format_name: str = "launch") -> list[Document]:
    """The referring files of the setups, of `format_name` (launch scripts; "megatron" for Megatron
    launch scripts), that link `document` (by real path)."""
    import os

    real = os.path.realpath(document.path)
    return [setup.documents[0] for setup in setups if setup.documents[0].format == format_name
            and any(os.path.realpath(d.path) == real for d in setup.documents[1:])]


def build_setups(documents: list[Document], load: Callable[[str], Document | None]) -> list[Setup]:
    """One setup per referring file (with the files it refers to, loaded with `load` when they
    were not given), and one per remaining file. Files without a Plan take part only as links."""
    by_path = {os.path.realpath(d.path): d for d in documents}
    referred: set[int] = set()
    setups: list[Setup] = []
    configs = [d.path for d in documents if d.format == "deepspeed"]
    for document in documents:
        targets = []
        if configs:
            document.references = [_by_suffix(r, configs) for r in document.references]
        for reference in document.references:
            if reference.resolved is None:
                continue
            real = os.path.realpath(reference.resolved)
            if real not in by_path:
                by_path[real] = load(reference.resolved)  # type: ignore[assignment]
            target = by_path[real]
            if target is not None and target is not document and target.syntax is None:
                targets.append(target)
                referred.add(id(target))
        if targets and document.format == "launch":
            setups.append(_launched(document, targets, by_path, load, referred))
        elif targets:
            setups.append(merge(document, targets))
    for document in documents:
        if id(document) not in referred and not any(s.documents[0] is document for s in setups):
            plan = document.plan if document.syntax is None else None
            if plan is not None:
                setups.append(Setup([document], plan))
    return setups


def _launched(script: Document, targets: list[Document], by_path: dict, load: Callable[[str], Document | None],
              referred: set[int]) -> Setup:
    """A launch script's setup. A file the command line overrides (the framework's own config:
    precedence "override") takes the script's values first; each file is then merged with the
    files it names (an Accelerate or Axolotl YAML and its ds_config, with that format's
    precedence, so that a command-line value the framework compares with the ds_config is
    compared), and the script over them all."""
    import copy

    from shardshift import formats

    per_reference = getattr(formats.reader(script.format), "precedence", None)
    own = script.plan
    inner_documents: list[Document] = []
    inner_conflicts: list[Conflict] = []
    merged_targets: list[Document] = []
    for target in targets:
        nested = []
        for reference in target.references:
            if reference.resolved is None:
                continue
            real = os.path.realpath(reference.resolved)
            if real not in by_path:
                by_path[real] = load(reference.resolved)  # type: ignore[assignment]
            other = by_path[real]
            if other is not None and other is not target and other is not script and other.syntax is None \
                    and other not in targets and other not in nested:
                nested.append(other)
                referred.add(id(other))
        if target.plan is None:
            merged_targets.append(target)
            continue
        reference = next((r for r in script.references if r.resolved is not None
                          and os.path.realpath(r.resolved) == os.path.realpath(target.path)), None)
        table = per_reference(reference) if per_reference is not None and reference is not None else {}
        stand_in = target
        if own is not None and any(rule is not None and rule.outcome == "override"
                                   for rule in (table.get(d) for d, _ in own.leaves())):
            stand_in = copy.copy(target)
            plan = copy.deepcopy(target.plan)
            for dotted, value in own.leaves():
                rule = table.get(dotted)
                if rule is not None and rule.outcome == "override":
                    _put(plan, dotted, value, own.provenance.get(dotted))
            stand_in.plan = plan
        if nested:
            inner = merge(stand_in, nested)
            stand_in = copy.copy(stand_in)
            stand_in.plan = inner.plan
            inner_documents.extend(nested)
            inner_conflicts.extend(inner.conflicts)
        merged_targets.append(stand_in)
    setup = merge(script, merged_targets)
    setup.documents = [script, *targets, *inner_documents]
    setup.conflicts = inner_conflicts + setup.conflicts
    return setup


def _by_suffix(reference, configs: list[str]):
    """An unresolved absolute path from the author's machine (`/home/x/proj/configs/ds.json`)
    resolved to the checked ds_config with the longest path suffix in common, when only one has
    it; the reference's `note` then says so."""
    if reference.resolved is not None or not os.path.isabs(reference.target) or "$" in reference.target:
        return reference
    import dataclasses

    from shardshift.context.paths import by_suffix, suffix_note

    found = by_suffix(reference.target, configs)
    if found is None:
        return reference
    return dataclasses.replace(reference, resolved=found, unknown=None, note=suffix_note(reference.target, found))


def merge(referrer: Document, referenced: list[Document]) -> Setup:
    """The referring file's Plan merged with the Plans of the files it names, field by field,
    with the referring format's PRECEDENCE."""
    import copy

    from shardshift import formats
    from shardshift.plan import Plan, Unknown, known

    module = formats.reader(referrer.format)
    static: dict[str, Precedence] = getattr(module, "PRECEDENCE", {})
    per_reference = getattr(module, "precedence", None)
    own = referrer.plan
    merged = copy.deepcopy(own) if own is not None else Plan()  # provenance included
    setup = Setup([referrer, *referenced], merged)
    for target in referenced:
        other = target.plan
        if other is None:
            continue
        for name, value in other.passthrough.items():
            merged.passthrough.setdefault(name, value)
        reference = next((r for r in referrer.references if r.resolved is not None
                          and os.path.realpath(r.resolved) == os.path.realpath(target.path)), None)
        via = reference.where if reference is not None else None
        table = per_reference(reference) if per_reference is not None and reference is not None else static
        mine = dict(merged.leaves())
        theirs_set = dict(other.leaves())
        for dotted, ours in mine.items():
            rule = table.get(dotted)
            if rule is not None and rule.outcome == "refuses" and dotted not in theirs_set:
                setup.conflicts.append(Conflict(dotted, referrer, target, ours, None, rule, via))
        for dotted, theirs in theirs_set.items():
            where = other.provenance.get(dotted)
            rule = table.get(dotted)
            if dotted not in mine:
                _put(merged, dotted, theirs, where)
                if rule is not None and rule.outcome == "mismatch" and rule.default is not None \
                        and known(theirs) is not None and theirs != rule.default:
                    setup.conflicts.append(Conflict(dotted, referrer, target, None, theirs, rule, via))
                continue
            ours = mine[dotted]
            if rule is not None and rule.outcome == "override":
                continue  # the referring file's value, by design
            if rule is not None and isinstance(ours, str) and ours in rule.unless:
                continue
            if ours == theirs and (rule is None or rule.outcome != "refuses"):
                continue
            if theirs == "auto" and known(ours) is not None and rule is not None and rule.outcome != "refuses":
                continue  # the consumer fills the ds_config's "auto" from the referring file: ours stays
            if rule is None:
                if known(ours) is None or known(theirs) is None:
                    continue
                _put(merged, dotted, Unknown(f"set to {shown(ours)} in {referrer.path} and to {shown(theirs)} in "
                                             f"{target.path}; which one is used is not known to shardshift",
                                             where), where)
            elif rule.outcome in ("referenced", "refuses", "mismatch"):
                _put(merged, dotted, theirs, where)
            setup.conflicts.append(Conflict(dotted, referrer, target, ours, theirs, rule, via))
    return setup


def _put(plan: Plan, dotted: str, value: Any, where: Location | None) -> None:
    import copy

    from shardshift.plan import assign

    assign(plan, dotted, copy.deepcopy(value))
    if where is not None:
        plan.provenance[dotted] = where
    else:
        plan.provenance.pop(dotted, None)


def shown(value: Any) -> str:
    """A value as a message shows it: strings bare, other values as JSON."""
    import json

    from shardshift.plan import Unknown

    if isinstance(value, Unknown):
        return f"an unknown value ({value.reason})"
    return json.dumps(value) if not isinstance(value, str) else value
