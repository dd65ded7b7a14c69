"""The ds_config paths a shell script passes on its command lines, read with the Megatron launch
script reader (formats/megatron/shell.py: variables, arrays, `${X:-d}`, branches; nothing is run).

Every command the script runs (a launcher, `accelerate launch`, `python`, a wrapper, a function)
is searched for `--deepspeed`, `--deepspeed_config`, `--deepscale_config` and
`--deepspeed_config_file`, as `--flag value` or `--flag=value`. A value the script cannot know
(`$1`, an environment variable, a command's output) is kept as `ShellReference.unknown` with the
reader's reason, together with the texts it may take where the source shows them: the default of
`${X:-default}` and the text each branch of an undecided `if`/`case` gives. Not followed: strings
run by `eval` / `bash -c` (the launch reader reads them, this module does not), sourced files.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from shardshift.formats.megatron.shell import _Walker
from shardshift.formats.megatron.shell_launch import _allocation, _seed
from shardshift.formats.megatron.shell_lexer import _Hole, _Lexer, _Piece
from shardshift.plan import Unknown

# flag -> who reads the file: "shell" (the Hugging Face Trainer's --deepspeed), "accelerate"
# (accelerate launch --deepspeed_config_file), "deepspeed" (plain DeepSpeed's --deepspeed_config).
FLAGS = {"--deepspeed": "shell", "--deepspeed_config_file": "accelerate", "--deepspeed_config": "deepspeed",
         "--deepscale_config": "deepspeed"}
_FLAG = re.compile(r"(--(?:deepspeed_config_file|deepspeed_config|deepscale_config|deepspeed))(?:=(.*))?", re.S)
_DEFAULT = re.compile(r"\(default (.+?) when (?:unset|empty)\)")
HOLE = "${?}"  # how an unknown stretch is written in `ShellReference.text`


class ShellReference(NamedTuple):
    """One `--deepspeed*` flag with its value. `value` is the path when the script fixes it;
    otherwise `unknown` says why it is not known, `text` is the value with each unknown stretch
    written as `${?}` (so `$ROOT/configs/ds.json` still names `configs/ds.json`), and
    `alternatives` are texts it may take (a `${X:-default}` default, an `if` branch's text)."""

    flag: str
    kind: str
    value: str | None
    text: str
    unknown: Unknown | None
    alternatives: tuple[str, ...]
    line: int
    column: int


class _Recorder(_Walker):
    """The launch reader's walker, also keeping the words of every command it meets."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands: list[list] = []

    def detect(self, fields: list, via: tuple | None = None, tries: int = 0) -> list:
        if via is None and tries == 0:
            self.commands.append(list(fields))
        return super().detect(fields, via, tries)


def _atoms_text(atoms: tuple) -> str:
    return "".join(a.text if type(a) is _Piece else HOLE for a in atoms)


def _alternatives(atoms: tuple, unknown: Unknown | None) -> tuple[str, ...]:
    """The texts an unknown value may take, where the source shows them."""
    found: list[str] = []
    for index, atom in enumerate(atoms):
        if type(atom) is _Hole:
            for alt_atoms, _ in atom.alts:
                if all(type(a) is _Piece for a in alt_atoms):
                    found.append(_atoms_text(atoms[:index]) + _atoms_text(alt_atoms) + _atoms_text(atoms[index + 1:]))
            reasons = [atom.unknown.reason]
        else:
            continue
        for reason in reasons:
            for match in _DEFAULT.finditer(reason):
                found.append(_atoms_text(atoms[:index]) + match.group(1) + _atoms_text(atoms[index + 1:]))
    if unknown is not None and not any(type(a) is _Hole for a in atoms):
        found.extend(m.group(1) for m in _DEFAULT.finditer(unknown.reason))
    return tuple(dict.fromkeys(t for t in found if t))


def _reference(flag: str, field: Any, atoms: tuple) -> ShellReference:
    value = field.value
    kind = FLAGS[flag]
    if type(value) is str:
        return ShellReference(flag, kind, value, value, None, (), field.line, field.column)
    unknown = value if isinstance(value, Unknown) else Unknown("not known before the script runs")
    text = _atoms_text(atoms) if atoms else HOLE
    return ShellReference(flag, kind, None, text, unknown, _alternatives(atoms, unknown), field.line, field.column)


def _scan(fields: list) -> list[ShellReference]:
    found: list[ShellReference] = []
    for index, field in enumerate(fields):
        pieces = field.pieces
        head = field.value if type(field.value) is str else (
            pieces[0].text if pieces and type(pieces[0]) is _Piece else None)
        if head is None:
            continue
        match = _FLAG.match(head)
        if match is None or (match.group(2) is None and match.end() != len(head)):
            continue
        flag = match.group(1)
        if match.group(2) is not None or "=" in head:
            if type(field.value) is str:
                rest = match.group(2) or ""
                if rest:
                    found.append(ShellReference(flag, FLAGS[flag], rest, rest, None, (), field.line, field.column))
                continue
            # `--flag=$X`: the known text after `=` and the holes
            first = pieces[0]
            after = first.text.split("=", 1)[1]
            atoms = ((_Piece(after, first.line, first.column, first.assumed),) if after else ()) + tuple(pieces[1:])
            found.append(_reference(flag, field, atoms)._replace(line=field.line, column=field.column))
            continue
        if type(field.value) is not str or index + 1 >= len(fields):
            continue
        following = fields[index + 1]
        if type(following.value) is str:
            if following.value.startswith("-"):
                continue  # `--deepspeed --deepspeed_config ds.json`: a switch
            found.append(ShellReference(flag, FLAGS[flag], following.value, following.value, None, (),
                                        field.line, field.column))
            continue
        first = following.pieces[0] if following.pieces else None
        if type(first) is _Piece and first.text.startswith("-"):
            continue  # `--deepspeed --distributed-backend=$X`: a switch
        found.append(_reference(flag, following, tuple(following.pieces))._replace(line=field.line,
                                                                                   column=field.column))
    return found


def deepspeed_references(text: str, path: str = "<script>") -> list[ShellReference]:
    """Every `--deepspeed*` flag with its value on the command lines of a shell script (also
    in functions it never calls). Never raises: a script the reader cannot follow gives what it
    read up to there."""
    try:
        lexer = _Lexer(text)
        lexer.run()
        from shardshift.formats.megatron.shell import _parse

        tree, _ = _parse(lexer)
        allocation = _allocation(text)
        walker = _Recorder(lexer, allocation=allocation)
        _seed(walker.env, allocation)
        if tree is not None:
            try:
                walker.top(tree)
            except RecursionError:
                pass
    except Exception:  # noqa: BLE001 - a script we cannot follow names no consumer, never a traceback
        return []
    found: list[ShellReference] = []
    seen: set[tuple] = set()
    for fields in walker.commands:
        for reference in _scan(fields):
            key = (reference.flag, reference.value, reference.text, reference.line, reference.column)
            if key not in seen:
                seen.add(key)
                found.append(reference)
    return found
