"""What a finding's verdict rests on, and the evidence for it found in the repository.

A rule's verdict rests on premises beyond the file: which program or reader parses the file (upstream
Megatron-LM, a fork, the repository's own config manager), the framework release, the role of the file
(a training config, not an inference one), and the file's other readers (the repository's own code
that reads a key by name). Each rule declares its premises (`Rule.premises`, else its format's
defaults below); the check driver establishes each one from evidence found in the repository, a file
and a line, and decides the severity from them, not the rule:

- every premise **established**: the rule's own severity, the evidence carried with the finding;
- one **unknown**: an info that names what is unknown and how to tell the tool;
- one **contradicted** (the key is read by the repository's own code, the file is an inference
  config): no finding at all.

A name is not evidence: an entry script `pretrain_gpt.py` absent from the tree is an unknown program.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from shardshift.context import UnknownContext

if TYPE_CHECKING:
    from shardshift.document import Document
    from shardshift.rules.base import Context, Finding, Rule

# program: the code that parses a launch's flags (Megatron's entry script and its parser);
# reader: the code that loads a config file (torchtitan's config manager, or the repository's own);
# release: the framework release; consumer: who hands the config to the framework (the Trainer);
# extension: plugins and custom modules that add keys; readers: the file's other readers (the
# repository's own code that reads a key by name); role: what the file is for (training).
PremiseKind = Literal["program", "reader", "release", "consumer", "extension", "readers", "role", "value"]
PremiseState = Literal["established", "unknown", "contradicted"]


@dataclass(frozen=True, slots=True)
class Premise:
    """One premise of a finding and its evidence: `what` says what was found (or not), `file` and
    `line` where; `how` tells the tool what it could not find."""

    kind: PremiseKind
    state: PremiseState
    what: str
    file: str | None = None
    line: int | None = None
    how: str = ""

    def to_json(self) -> dict:
        out = {"premise": self.kind, "state": self.state, "what": self.what, "file": self.file, "line": self.line}
        if self.how:
            out["how"] = self.how
        return out

    def text(self) -> str:
        where = (f" ({self.file}:{self.line})" if self.line is not None else f" ({self.file})") if self.file else ""
        return f"{self.kind} {self.state}: {self.what}{where}"

    def unknown_context(self) -> UnknownContext:
        return UnknownContext(self.kind, self.what, self.how or "tell shardshift with the options of `shardshift check`")


# The premises of a rule that declares none, by the first format it applies to. Syntax-level rules
# (SS*) rest on nothing beyond the file.
DEFAULT_PREMISES: dict[str, tuple[str, ...]] = {
    "deepspeed": ("release", "role"),
    "megatron": ("program", "release"),
    "torchtitan": ("reader", "release"),
    "accelerate": ("release",),
    "axolotl": ("release",),
    "fsdp2": ("release",),
    "python": ("release",),
    "launch": ("release",),
}
# Rules that say a key is unknown, ignored or to be removed: the repository's own code may read it.
KEY_RULES = frozenset({"DS101", "AX001", "AX002", "AC001", "AC002", "TT001"})


def declared(rule: type[Rule], file_format: str | None = None) -> tuple[str, ...]:
    """The premises `rule` rests on: its own declaration, else its format's defaults; a rule of
    every format (a Plan rule) rests on those of the format of the file it reports at."""
    own = getattr(rule, "premises", None)
    if own is not None:
        return tuple(own)
    if rule.code.startswith("SS"):
        return ()
    fmt = rule.formats[0] if rule.formats else file_format
    base = DEFAULT_PREMISES.get(fmt or "", ("release",))
    return base + (("readers",) if rule.code in KEY_RULES else ())


# --- establishing premises -----------------------------------------------------------------------


def _pin_place(source: str) -> tuple[str | None, int | None]:
    """`requirements.txt:3` -> ("requirements.txt", 3); a command-line option -> (None, None)."""
    match = re.fullmatch(r"(.+?):(\d+)", source)
    if match is None or source.startswith(("--", "[")):
        return None, None
    return match.group(1), int(match.group(2))


class Establisher:
    """Establishes the premises of the findings of one run (each premise once per file and kind)."""

    def __init__(self, context: Context, documents: list[Document]) -> None:
        self.context = context
        self.by_path = {d.path: d for d in documents}
        self._cache: dict[tuple, Premise | None] = {}
        # files that may be merged into another config (a vendored copy's templates): what they lack is unknown
        self._fragments: set[str] = set()

    def premises(self, rule: type[Rule], finding: Finding) -> list[Premise]:
        out: list[Premise] = []
        own = finding.unknown_context
        document = self.by_path.get(finding.file)
        for kind in declared(rule, document.format if document is not None else None):
            if own is not None and (own.kind == kind or (own.kind == "program" and kind == "reader")):
                out.append(Premise(kind, "unknown", own.what, how=own.how))  # type: ignore[arg-type]
                continue
            premise = self.establish(kind, rule, finding)
            if premise is not None and kind == "role" and finding.file in self._fragments and \
                    premise.state == "established" and document is not None and _lacks(document, finding):
                premise = Premise("role", "unknown", "what this file of a vendored DeepSpeed copy lacks: the copy's "
                                                     "code may merge it into another config that has it",
                                  premise.file, premise.line, how="check the ds_config the training run uses")
            if premise is not None:
                out.append(premise)
        if own is not None and not any(p.state == "unknown" for p in out):
            out.append(Premise(own.kind, "unknown", own.what, how=own.how))
        return out

    def establish(self, kind: str, rule: type[Rule], finding: Finding) -> Premise | None:
        document = self.by_path.get(finding.file)
        if document is None:
            return None
        if kind == "readers":
            key = _key_of(finding)
            if key is None:
                return None
            cache_key = (kind, finding.file, key)
        else:
            cache_key = (kind, finding.file, getattr(rule, "release_agreement", True) and not finding.release_dependent)
        if cache_key not in self._cache:
            method = getattr(self, "_" + kind, None)
            self._cache[cache_key] = method(rule, finding, document) if method is not None else None
        return self._cache[cache_key]

    def placeholder(self, finding: Finding) -> Premise | None:
        """An unknown premise when the value a finding judges, or a value of a related place in the
        same file, is a template placeholder (`${VAR}`, `{{ var }}`; in a file whose name says it is
        a template, a stand-in such as `CONFIG_GBS`) that something fills in before the framework
        reads the file: its value is known only then. Findings on the template's literal parts stand."""
        from shardshift.source import value_at

        document = self.by_path.get(finding.file)
        if document is None or not isinstance(document.data, (dict, list)):
            return None
        pointers = [finding.pointer] + [r.pointer for r in finding.related if r.file == finding.file]
        # in a file whose name says it is a template, a stand-in (`"stage": ZERO_STAGE`) is a placeholder too
        named = "templ" in os.path.basename(document.path).lower()
        for pointer in pointers:
            if not pointer or not pointer.startswith("/"):
                continue
            value = value_at(document.data, pointer, None)
            if isinstance(value, str) and (re.search(_PLACEHOLDER, value) or (named and _stand_in(value, bare=True))):
                line, _ = document.position(pointer or "")
                shown = value.rstrip().rstrip(",").rstrip()
                return Premise("role", "unknown", f"the value {shown!r} at {pointer} is a template placeholder, filled "
                                                  "in before the framework reads the file, so it is known only then",
                               finding.file, line, how="check the file the template is rendered into")
        return None

    # release ---------------------------------------------------------------------------------
    def _release(self, rule: type[Rule], finding: Finding, document: Document) -> Premise | None:
        from shardshift.context import FORMAT_FRAMEWORK

        # a rule may judge another framework's behaviour than its format's (TrainingArguments flags in a launch)
        framework = getattr(rule, "framework", None) or FORMAT_FRAMEWORK.get(document.format)
        if framework is None:
            return None
        release = self.context.release(framework, document.path)
        file, line = _pin_place(release.source)
        if file is not None:
            from shardshift.context.releases import repository_root

            file = os.path.relpath(os.path.join(repository_root(document.path, self.context.roots), file))
        if release.basis == "fork":
            return Premise("release", "unknown", f"the repository installs a fork of {framework} ({release.detail}), "
                                                 "whose code may differ from any release", file, line,
                           how=f"check against the fork's code, or pass --{framework}-version if it follows a release")
        if release.basis == "build":
            if getattr(rule, "release_agreement", True) and not finding.release_dependent:
                return Premise("release", "established", f"{framework} from a branch build ({release.detail}); the "
                                                         f"verdict is the same in every {framework} release", file, line)
            return Premise("release", "unknown", f"the repository runs a branch build of {framework} "
                                                 f"({release.detail}), not a release: which release its code matches "
                                                 "is unknown, and the verdict differs between releases", file, line,
                           how=f"pass --{framework}-version with the release that build matches, or use a release "
                               "tag")
        if release.basis == "unpinned":
            return Premise("release", "established", f"{framework} installed without a version ({release.detail}): "
                                                     "the newest release when installed", file, line)
        if release.version is not None:
            shown = ".".join(map(str, release.version))
            what = f"{framework} {shown}" + (f" ({release.detail})" if release.detail else "") + \
                   (f", given by {release.source}" if file is None else "")
            return Premise("release", "established", what, file, line)
        if getattr(rule, "release_agreement", True) and not finding.release_dependent:
            from shardshift.context.releases import known_releases

            known = known_releases(framework)
            span = (f" ({'.'.join(map(str, known[0]))} to {'.'.join(map(str, known[-1]))})" if known else "")
            return Premise("release", "established",
                           f"no {framework} pin found ({release.source}); the verdict is the same in every "
                           f"{framework} release its tables cover{span}")
        return Premise("release", "unknown", f"no {framework} pin found, and the verdict differs "
                                             f"between {framework} releases (older ones read what newer ones refuse)",
                       how=f"pin {framework} in the repository's dependency files or pass --{framework}-version")

    # program ---------------------------------------------------------------------------------
    def _program(self, rule: type[Rule], finding: Finding, document: Document) -> Premise | None:
        program = getattr(document.data, "program", None)
        if program is None:
            return Premise("program", "established", "an argument file: its flags are judged by Megatron-LM's parser, "
                                                     "the one program that reads argument files as they are written",
                           document.path, 1)
        if program.unknown is not None:
            return Premise("program", "unknown", program.unknown.what, how=program.unknown.how)
        where = os.path.relpath(program.path) if program.path else program.entry
        if program.fork is not None:
            return Premise("program", "established", f"entry {program.entry} present, with the repository's own "
                                                     f"Megatron arguments module {os.path.relpath(program.fork)}",
                           where, 1)
        what = (f"entry {program.entry} present and parsed by {program.parser}" if program.provider else
                f"entry {program.entry} present and upstream's by its content (no vendored megatron package, "
                "no extra_args_provider)")
        return Premise("program", "established", what, where, 1)

    # extension -------------------------------------------------------------------------------
    def _extension(self, rule: type[Rule], finding: Finding, document: Document) -> Premise | None:
        """torchtitan: the model names the repository registers (`register_train_spec` called by code
        of the file's project, or a module put into `sys.modules` under torchtitan's name), which a
        module a launch imports may add before the name is looked up."""
        if document.format != "torchtitan":
            return None
        from shardshift.context.repository import (
            MODULE_GRAFT,
            MODULE_GRAFT_HINTS,
            TRAIN_SPEC_HINTS,
            TRAIN_SPEC_REGISTRATION,
            first_match,
        )

        found = first_match(document.path, TRAIN_SPEC_REGISTRATION, TRAIN_SPEC_HINTS, self.context.roots) or \
            first_match(document.path, MODULE_GRAFT, MODULE_GRAFT_HINTS, self.context.roots)
        if found is not None:
            return Premise("extension", "unknown", "the repository registers train specs of its own, which the module "
                                                   "a launch imports may add before the name is looked up", *found,
                           how="check the TOML with the launch that shows which module runs")
        return Premise("extension", "established", "no code of the repository registers a train spec of its own")

    # reader ----------------------------------------------------------------------------------
    def _reader(self, rule: type[Rule], finding: Finding, document: Document) -> Premise | None:
        if document.format != "torchtitan":
            return None
        from shardshift.context.code import own_toml_command
        from shardshift.context.repository import own_config_manager
        from shardshift.formats.torchtitan.extension import table_for

        table = table_for(document.path, document.data if isinstance(document.data, dict) else {})
        if table.copy is not None:
            return Premise("reader", "established", "the repository's own copy of torchtitan's config module, read "
                                                    "for its dataclasses", os.path.relpath(table.copy), 1)
        launch = self._launch_of(document)
        if launch is not None:
            path, entry = launch
            if re.search(_TORCHTITAN_ENTRY, entry or ""):
                return Premise("reader", "established", f"a launch in the tree runs torchtitan ({entry}) with this file",
                               path, 1)
            return Premise("reader", "unknown", f"the launch that names this file runs {entry or 'an entry not known'} "
                                                "rather than torchtitan's own trainer, and that program may read it "
                                                "with a config of its own", path, 1,
                           how="check the TOML together with the entry the launch runs")
        shape = _not_a_job_config(document.data if isinstance(document.data, dict) else {}, table)
        if shape is not None:
            return Premise("reader", "unknown", f"{shape}, and no launch in the tree runs torchtitan with it, so it may be "
                                                "another program's TOML", how="check it together with the launch script "
                                                "that passes it to torchtitan (`--job.config_file`)")
        # the project's own reader of TOML files: a command of its own run with one, or code that loads TOML
        command = own_toml_command(document.path, self.context.roots)
        own = command or own_config_manager(document.path, self.context.roots)
        if own is not None:
            file, line, name = own
            whose = (f"the project runs its own command `{name}` with TOML files" if command else
                     f"the repository has its own code that reads TOML ({name})")
            return Premise("reader", "unknown",
                           f"{whose}, and no launch in the tree shows torchtitan reading this file, so what "
                           "torchtitan's JobConfig accepts may not apply",
                           file, line, how="check the TOML together with the launch script that runs torchtitan with it "
                                           "(`--job.config_file`), or ignore TT codes for it if the repository's own "
                                           "code reads it")
        return Premise("reader", "established", "torchtitan's config manager: the repository has no code of its own "
                                                "that reads TOML")

    def _launch_of(self, document: Document) -> tuple[str, str | None] | None:
        """A launch script of the run's setups that names this file (the setup's referring file),
        with the entry it runs as written."""
        from shardshift.setup import launches_of

        for first in launches_of(document, self.context.setups):
            entry = getattr(first.data, "entry", None)
            return first.path, entry if isinstance(entry, str) else None
        return None

    # role ------------------------------------------------------------------------------------
    def _role(self, rule: type[Rule], finding: Finding, document: Document) -> Premise | None:
        if document.format != "deepspeed" or not isinstance(document.data, dict):
            return None
        from shardshift.context.roles import framework_data, inference_role

        found = inference_role(document, self.context)
        if found is not None:
            what, file, line = found
            return Premise("role", "contradicted", what, file, line)
        template = None
        if _may_be_template(document):
            from shardshift.context.repository import template_role

            template = template_role(document.path, self.context.roots)
        if template is not None:
            file, line = template
            return Premise("role", "unknown", "a template: a script of the repository fills it in with sed before "
                                              "DeepSpeed reads the result, so the values judged may not be the ones used",
                           file, line, how="check the file the script writes, or the values it substitutes")
        package = framework_data(document.path)
        if package is not None:
            folder, init = package
            from shardshift.context.repository import copy_names

            named = copy_names(document.path, folder, self.context.roots)
            if named is not None:
                # the copy's own code hands it to DeepSpeed (a test's --deepspeed_config, a template its
                # autotuner merges into a config): what a key in it does holds; what it lacks may come
                # from the config it is merged into (`premises`)
                self._fragments.add(finding.file)
                return Premise("role", "established", f"a file of the DeepSpeed copy vendored at {folder} that the "
                                                      "copy's own code hands to DeepSpeed", *named)
            return Premise("role", "unknown", f"a file of the DeepSpeed copy vendored at {folder} (its autotuning "
                                              "templates, tests or examples), not the repository's own config",
                           init, 1, how="check the ds_config the training run uses")
        return self._ds_config_role(document)

    def _ds_config_role(self, document: Document) -> Premise:
        """A training ds_config: established by the code that hands it to DeepSpeed (a consumer) or,
        without one, by its keys; unknown when most of its top-level keys are not DeepSpeed's and
        nothing hands it to DeepSpeed (another program's JSON of arguments, say)."""
        from shardshift.formats.deepspeed.keys import children_of, lookup
        from shardshift.rules.base import Suggestions

        keys = [k for k in document.data if isinstance(k, str)]
        top = children_of("")
        # a key of DeepSpeed's, or a misspelling of one, says the file is meant for DeepSpeed (the
        # fuzzy look-up bounded per file, as "did you mean" is)
        suggestions = Suggestions()
        known = sum(1 for k in keys if lookup("/" + k.replace("~", "~0").replace("/", "~1"))
                    or suggestions.lookup(k, top)[1] is not None)
        if known * 2 >= len(keys) or len(keys) - known < 4:
            return Premise("role", "established", f"a training ds_config: {known} of its {len(keys)} top-level keys are "
                                                  "DeepSpeed's, none only an inference config has, and no script "
                                                  "fills it in as a template")
        from shardshift.rules.deepspeed.auto import consumers_of

        consumers = consumers_of(document, self.context)
        if consumers:
            first = consumers[0]
            return Premise("role", "established", f"handed to DeepSpeed by {first.describe()}",
                           os.path.relpath(first.file), first.line)
        return Premise("role", "unknown", f"only {known} of its {len(keys)} top-level keys are DeepSpeed's and nothing "
                                          "in the tree hands it to DeepSpeed, so it may be another program's JSON",
                       how="check it together with the script that passes it as --deepspeed / --deepspeed_config")

    # consumer: who builds the optimizer --------------------------------------------------------
    def _consumer(self, rule: type[Rule], finding: Finding, document: Document) -> Premise | None:
        """Rules about a ds_config's `optimizer` block rest on DeepSpeed building it: a client
        optimizer passed to `deepspeed.initialize(optimizer=...)` wins over the block (engine.py,
        "Using client Optimizer as basic optimizer"), which is then never read."""
        if document.format != "deepspeed":
            return None
        from shardshift.context.code import optimizer_builder
        from shardshift.rules.deepspeed.auto import consumers_of

        kind, file, where = optimizer_builder(document.path, self.context.roots)
        if kind == "code":
            return Premise("consumer", "contradicted", "the code that loads this file passes its own optimizer to "
                                                       "deepspeed.initialize, so DeepSpeed never builds this block",
                           file, int(where))
        trainer = next((c for c in consumers_of(document, self.context) if c.hugging_face), None)
        if trainer is not None:
            return Premise("consumer", "established", f"{trainer.describe()} hands the block to DeepSpeed, which "
                                                      "builds it", os.path.relpath(trainer.file), trainer.line)
        if kind == "config":
            return Premise("consumer", "established", "deepspeed.initialize is called without an optimizer of the "
                                                      "code's own, so DeepSpeed builds this block", file, int(where))
        if kind == "unsure":
            return Premise("consumer", "unknown", "who builds the optimizer: no code in the tree that loads this file "
                                                  "was found, and code that may run with it passes its own optimizer "
                                                  "to deepspeed.initialize here, which would replace this block",
                           file, int(where), how="check the ds_config together with the script that runs it")
        if kind == "absent":
            what = (f"submodule {where} is not checked out" if file == ".gitmodules" else
                    f"{file} runs {where}, which is not in the tree")
            return Premise("consumer", "unknown", f"who builds the optimizer: {what}, and a client optimizer passed to "
                                                  "deepspeed.initialize would replace this block", file,
                           how="check the setup with its submodules checked out")
        return Premise("consumer", "established", f"no code that may run with this file calls deepspeed.initialize "
                                                  f"(the {where} Python files beside it, above it up to its project's "
                                                  "top and what they import): nothing in the tree hands DeepSpeed an "
                                                  "optimizer of its own")

    # readers ---------------------------------------------------------------------------------
    def _readers(self, rule: type[Rule], finding: Finding, document: Document) -> Premise | None:
        key = _key_of(finding)
        if key is None:
            return None
        from shardshift.context.repository import own_readers

        found, stopped = own_readers(document.path, key, self.context.roots)
        if found is not None:
            file, line = found
            return Premise("readers", "contradicted", f"the repository's own code reads {key!r} by name", file, line)
        if stopped is not None:
            from shardshift.context.tree import MAX_WALK_FILES

            return Premise("readers", "unknown", f"whether the repository's own code reads {key!r}: the search "
                                                 f"stopped after {MAX_WALK_FILES:,} files (at {stopped or '.'}), "
                                                 "so files beyond it were not looked at",
                           how="check a smaller tree, or name the code that reads the file")
        return Premise("readers", "established", f"no Python file of the repository that names this file, or "
                                                 f"that a script naming it runs, reads {key!r} by name")


# torchtitan's own trainer: `-m torchtitan.train`, `torchtitan/train.py`, the repository's `run_train.sh`
_TORCHTITAN_ENTRY = r"(?:^|[/.])torchtitan[/.]train(?:\.py)?$|(?:^|/)run_train\.sh$"


# A value that stands for another: `CONFIG_BATCH_SIZE`, `${GBS}`, `{{ lr }}`, `<path>`, `%(lr)s`.
_STAND_IN = r"[A-Z][A-Z0-9]*_[A-Z0-9_]+|.*(?:\$\{|\{\{|%\().*|<[^<>]+>"


def _may_be_template(document: Document) -> bool:
    """Whether a ds_config may be a template some script fills in: its name says so, or a value
    is a stand-in. Only then are the repository's scripts searched for the `sed` that fills it in
    (the search reads every script: a config with none of these is judged as it is)."""
    if "templ" in os.path.basename(document.path).lower():
        return True
    stack = [document.data]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, str) and _stand_in(value):
            return True
    return False


def _stand_in(value: str, bare: bool = False) -> bool:
    """A stand-in value (`CONFIG_GBS`, `<batch>`, `${GBS}`; with `bare`, in a file named as a template, an
    upper-case word too: `GBSIZE`); hjson, DeepSpeed's loader, reads an unquoted `ZERO_STAGE,` to the end
    of the line, comma included."""
    value = value.rstrip().rstrip(",").rstrip()
    return re.fullmatch(_STAND_IN, value) is not None or (bare and re.fullmatch(r"[A-Z][A-Z0-9_]{2,}", value) is not None)


def _not_a_job_config(data: dict, table) -> str | None:
    """Why a TOML does not have the shape of torchtitan's JobConfig, or None: JobConfig has sections
    only (a value at the top level is none of its), and a file meant for it has mostly its sections
    (or misspellings of them; the look-up bounded per file)."""
    from shardshift.rules.base import Suggestions

    keys = [k for k in data if isinstance(k, str)]
    values = [k for k in keys if not isinstance(data[k], dict)]
    if values:
        return (f"it has values at the top level ({', '.join(values[:3])}{', ...' if len(values) > 3 else ''}), "
                "which torchtitan's JobConfig never has")
    sections = tuple(sorted(table.tables))
    suggestions = Suggestions()
    known = sum(1 for k in keys if k in table.tables or suggestions.lookup(k, sections)[1] is not None)
    if known * 2 < len(keys):
        return f"only {known} of its {len(keys)} sections are torchtitan's"
    return None


_PLACEHOLDER = r"\$\{[^}]*\}|\$[A-Z_][A-Z0-9_]*\b|\{\{[^}]*\}\}|%\([\w]+\)s"


def _lacks(document: Document, finding: Finding) -> bool:
    """The finding is about something the file does not hold (no pointer, or a key it lacks)."""
    from shardshift.source import value_at

    missing = object()
    pointer = finding.pointer
    if not pointer or not pointer.startswith("/"):
        return True
    return value_at(document.data, pointer, missing) is missing


def _key_of(finding: Finding) -> str | None:
    """The key a key finding is about: the last token of its pointer."""
    pointer = finding.pointer
    if not pointer or not pointer.startswith("/"):
        return None
    from shardshift.source import split_pointer

    tokens = split_pointer(pointer)
    return tokens[-1] if tokens and isinstance(tokens[-1], str) and tokens[-1] else None


def judge(findings: list[Finding], rules: dict[str, type[Rule]], context: Context,
          documents: list[Document]) -> list[Finding]:
    """Attach each finding's premises and decide its severity from them (see the module's doc)."""
    establisher = Establisher(context, documents)
    out = []
    for finding in findings:
        rule = rules.get(finding.code)
        if rule is None:
            out.append(finding)
            continue
        premises = establisher.premises(rule, finding)
        placeholder = establisher.placeholder(finding)
        if placeholder is not None:
            # one premise of each kind: the value's placeholder stands for the file's role unless that
            # is itself not established (a template whose sed command is named keeps that)
            role = next((p for p in premises if p.kind == "role"), None)
            if role is None or role.state == "established":
                premises = [p for p in premises if p.kind != "role"] + [placeholder]
        if any(p.state == "contradicted" for p in premises):
            continue
        unknown = next((p for p in premises if p.state == "unknown"), None)
        if unknown is not None:
            # a fix written for a premise that is not established (upstream's flag name, for a fork's
            # launch) may break the program: shown as a suggestion, never applied by --fix
            finding.fix_kind = None
            if finding.severity != "info":
                finding.severity = "info"
                if finding.unknown_context is None:
                    finding.unknown_context = unknown.unknown_context()
        finding.evidence = premises
        out.append(finding)
    return out
