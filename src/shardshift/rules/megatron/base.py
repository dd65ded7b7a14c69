"""What every Megatron rule needs: the arguments argparse keeps, their places, and the world size.

Rules read `document.data` (formats/megatron/reader.py `Arguments`). A value that is Unknown (the
script decides it at run time) or that argparse rejects is never judged: `Flags.get` returns None
for it, and `Flags.known` tells the two cases apart from "not given" where a rule needs to."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

from shardshift.plan import Unknown, known
from shardshift.rules.base import Context, Finding, Related, Rule, Severity

if TYPE_CHECKING:
    from shardshift.document import Document
    from shardshift.formats.megatron.reader import Given

_NOT_GIVEN = object()


class Flags:
    """The arguments of one Megatron document as argparse keeps them (the last of each dest)."""

    def __init__(self, document: Document) -> None:
        self.document = document
        self.arguments = document.data
        self.last: dict[str, Given] = self.arguments.last()
        # Unresolved splices (`$EXTRA_ARGS`, `"$@"`) among the arguments, which may hold any flag, as
        # (line, column, after): after=1 when the splice follows a flag's own words (its place is
        # the flag's), 0 for a splice of its own.
        splices = [(a.line, a.column, 0) for a in self.arguments.extra if isinstance(a.value, Unknown)]
        for item in self.arguments.given:
            takes_value = item.flag is not None and item.flag.takes_value(item.spelling)
            if any(isinstance(w, Unknown) for w in item.stray) or (
                    isinstance(item.value, Unknown) and not takes_value) or (
                    isinstance(item.value, tuple) and any(isinstance(w, Unknown) for w in item.value)):
                splices.append((item.line, item.column, 1))
        self.last_splice: tuple[int, int, int] | None = max(splices) if splices else None

    @property
    def program(self):
        """The program that parses the arguments (formats/megatron/program.py), None for an argument file."""
        return getattr(self.arguments, "program", None)

    @property
    def table(self):
        """The flag table of the program's parser (upstream Megatron-LM's when no other was found)."""
        program = self.program
        if program is not None:
            return program.table
        from shardshift.formats.megatron.flags import table

        return table()

    @property
    def unknown_program(self):
        """The UnknownContext when the program or part of its parser could not be found."""
        program = self.program
        return program.unknown if program is not None else None

    @property
    def spliced(self) -> bool:
        """True when an unresolved splice is among the arguments: it may give any flag."""
        return self.last_splice is not None

    def given(self, dest: str) -> bool:
        return dest in self.last

    def undecided(self, *dests: str) -> bool:
        """True when one of `dests` is given but its value is not known (Unknown, or rejected)."""
        for dest in dests:
            item = self.last.get(dest)
            if item is not None and (item.problem or isinstance(item.value, Unknown)):
                return True
        return False

    def get(self, dest: str, default: Any = None) -> Any:
        """The value argparse stores for `dest`; `default` when not given; None when not known."""
        item = self.last.get(dest)
        if item is None:
            return default
        if item.problem or isinstance(item.value, Unknown):
            return None
        return item.value

    def default(self, dest: str) -> Any:
        """The program's own default for `dest` (its parser's table: upstream's flags.json or a fork's)."""
        flags = self.table.by_dest.get(dest)
        return flags[0].default if flags else None

    def value(self, dest: str) -> Any:
        """The value Megatron uses: as given, else its default; None when not known."""
        return self.get(dest, self.default(dest))

    def item(self, dest: str) -> Given | None:
        return self.last.get(dest)

    def place(self, dest: str) -> tuple[int, int] | None:
        item = self.last.get(dest)
        return (item.line, item.column) if item is not None else None

    def spelled(self, dest: str) -> str:
        """The flag as written, or its long spelling when not given."""
        item = self.last.get(dest)
        if item is not None:
            return item.spelling
        flags = self.table.by_dest.get(dest)
        return flags[0].name if flags else "--" + dest.replace("_", "-")

    def world_size(self, context: Context) -> int | None:
        """--world-size (or --nodes × --gpus-per-node) of the run, else the launcher's, when known."""
        if context.world_size:
            return context.world_size
        plan = self.document.plan
        value = known(plan.world.world_size) if plan is not None else None
        return value if isinstance(value, int) and value > 0 else None


_RECENT_FLAGS: list[tuple[Document, Flags]] = []  # the last few documents' Flags: every rule reads them


def _flags_of(document: Document) -> Flags:
    """Flags(document), built once for all the rules that judge the document (and its variants)."""
    for seen, flags in _RECENT_FLAGS:
        if seen is document:
            return flags
    flags = Flags(document)
    _RECENT_FLAGS.insert(0, (document, flags))
    del _RECENT_FLAGS[8:]
    return flags


class MegatronRule(Rule):
    """A rule over one Megatron document's arguments."""

    formats = ("megatron",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        if document.data is None or not hasattr(document.data, "given"):
            return ()
        flags = _flags_of(document)
        found = self.check_flags(flags, context)
        program = flags.program
        if program is not None and program.own_parser and not self.code.startswith("MG00"):
            return ()  # the entry's own parser reads the flags: Megatron's validate_args never runs
        if program is not None and program.fork is not None and program.unknown is None and \
                not self.code.startswith("MG00"):
            return self._in_fork(found, program)
        return found

    @staticmethod
    def _in_fork(found: Iterable[Finding], program) -> Iterable[Finding]:
        """A check restated from Megatron-LM's validate_args, on a launch of a vendored fork: the
        fork's own checks are not read, so the finding is an info that says so."""
        from shardshift.formats.megatron.program import fork_checks

        unknown = fork_checks(program)
        for finding in found:
            pointer = finding.pointer
            if isinstance(pointer, str) and pointer.startswith("-") and program.table.get(pointer) is None:
                continue  # about a flag the fork does not have: upstream's check does not apply
            if finding.unknown_context is None:
                finding.severity, finding.unknown_context = "info", unknown
            yield finding

    def check_flags(self, flags: Flags, context: Context) -> Iterable[Finding]:
        raise NotImplementedError

    def at(self, flags: Flags, dest_or_item: Any, message: str, *, fix: str | None = None,
           severity: Severity | None = None, related: Iterable[Related] = (), fix_kind=None,
           unknown_context=None) -> Finding:
        """A finding at a flag as written (its line and column; `pointer` is the flag). A dest that
        was not given points at the launch line (or the top of an argument file)."""
        item = flags.item(dest_or_item) if isinstance(dest_or_item, str) else dest_or_item
        document = flags.document
        if item is not None:
            position, pointer = (item.line, item.column), item.spelling
        else:
            launch = flags.arguments.launch
            position = (launch.line, launch.column) if launch is not None else (1, 1)
            pointer = flags.spelled(dest_or_item) if isinstance(dest_or_item, str) else None
        finding = self.finding(document, None, message, fix=fix, severity=severity, position=position,
                               related=related, fix_kind=fix_kind, unknown_context=unknown_context)
        finding.pointer = pointer
        return finding

    def also(self, flags: Flags, dest: str, message: str | None = None) -> list[Related]:
        """The place of another flag involved, as a related location (none when not given)."""
        item = flags.item(dest)
        if item is None:
            return []
        return [Related(flags.document.path, item.line, item.column, item.spelling,
                        message or f"{item.spelling} is set here")]
