"""Values of the launch-script reader (shell.py): strings known in full (`_Text`), strings known in
part (`_Partial`: pieces and holes), the words a command's expansion gives (`_FieldP`), and how the
values that undecided branches leave are joined into one."""

from __future__ import annotations

import bisect
import itertools
import re
from typing import Any, NamedTuple

from shardshift.formats.megatron.shell_lexer import _Hole, _Piece, _Word, at, hole_marker
from shardshift.plan import Unknown


class _Text(NamedTuple):
    """A known string value: its pieces (with positions) and the text it was written as."""

    pieces: tuple
    raw: str

    @property
    def value(self) -> str:
        pieces = self.pieces
        return pieces[0].text if len(pieces) == 1 else "".join(p.text for p in pieces)


class _Partial(NamedTuple):
    """A string value partly known: pieces and holes (`_Hole`), and the first hole's Unknown."""

    atoms: tuple
    raw: str
    unknown: Unknown


class _FieldP(NamedTuple):
    """One word after expansion: str or Unknown, where it starts, how it was written, its atoms
    (pieces, and holes when the value is Unknown), and whether it is an unknown splice: one hole
    from an unquoted expansion (or "$@"), which may be any number of words (1), or the items an
    array may or may not have, depending on a branch (2)."""

    value: Any
    line: int
    column: int
    raw: str
    pieces: tuple
    splice: int = 0


_MISSING = object()  # not set in the script: from the environment
_UNSET = object()  # known not to be set (a function argument past the last one)
_IFS = re.compile(r"[ \t\n]")
_IFS_SPLIT = re.compile(r"[^ \t\n]+|[ \t\n]+")


def _make(atoms: Any, raw: str) -> Any:
    atoms = tuple(atoms)
    for a in atoms:
        if type(a) is _Hole:
            return _Partial(atoms, raw, a.unknown)
    return _Text(atoms, raw)


def _atoms(value: Any) -> tuple:
    return value.pieces if type(value) is _Text else value.atoms


def _key(value: Any) -> Any:
    kind = type(value)
    if kind is _Text:
        return value.value
    if kind is _Partial:  # a hole is itself (the branches share the objects they did not change)
        return ("partial", tuple(a.text if type(a) is _Piece else id(a) for a in value.atoms))
    if kind is list:
        return ("list", tuple(_key(v) for v in value))
    return value


def _public(value: Any) -> Any:
    kind = type(value)
    if kind is _Text:
        return value.value
    if kind is _Partial:
        return value.unknown
    if kind is list:
        return [_public(v) for v in value]
    return value


def _nonempty(value: Any) -> bool | None:
    kind = type(value)
    if kind is _Text:
        return bool(value.value)
    if kind is _Partial:
        return True if any(type(a) is _Piece and a.text for a in value.atoms) else None
    if kind is list:
        return bool(value) if all(type(v) is _Text for v in value) else None
    return None


def _is_items(element: Any) -> bool:
    """An array element that stands for items a branch may or may not have added."""
    return type(element) is _Partial and len(element.atoms) == 1 and element.atoms[0].items


def _slice(atoms: tuple, ends: list, start: int, end: int) -> list:
    """atoms[start:end] counting characters (a hole counts one); `ends[k]`: where atom k ends."""
    if start >= end or not atoms:
        return []
    i = bisect.bisect_right(ends, start)
    j = min(bisect.bisect_left(ends, end), len(atoms) - 1)
    out = list(atoms[i:j + 1])
    first, last = out[0], out[-1]
    if type(last) is _Piece:
        hi = end - (ends[j] - len(last.text))
        if hi < len(last.text):
            out[-1] = last = last._replace(text=last.text[:hi])
            if i == j:
                first = last
    if type(first) is _Piece:
        lo = start - (ends[i] - len(atoms[i].text))
        if lo > 0:
            out[0] = _Piece(first.text[lo:], *at(first, lo), first.assumed)
    return out


def _common(limit: int, shared: Any) -> int:
    """The largest k <= limit with shared(k), for a property that holds up to some k (bisection:
    each test is one string comparison)."""
    lo, hi = 0, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if shared(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _merge_strings(values: list, labels: list, unknown: Unknown, where: tuple) -> Any:
    """One value for the strings the branches leave: the text they share at both ends is kept and
    the rest is one hole that remembers each branch's middle."""
    codes: dict = {}

    def encode(value: Any) -> str:
        return "".join(a.text if type(a) is _Piece else codes.setdefault(id(a), chr(0xF0000 + len(codes)))
                       for a in _atoms(value))

    texts = [encode(v) for v in values]
    ends = [list(itertools.accumulate(len(a.text) if type(a) is _Piece else 1 for a in _atoms(v))) for v in values]
    first = texts[0]
    shortest = min(len(t) for t in texts)
    prefix = _common(shortest, lambda k: all(t.startswith(first[:k]) for t in texts))
    suffix = _common(shortest - prefix, lambda k: all(t.endswith(first[len(first) - k:]) for t in texts))
    middles = tuple((tuple(_slice(_atoms(v), e, prefix, len(t) - suffix)), label)
                    for v, e, t, label in zip(values, ends, texts, labels))
    hole = _Hole(unknown, *where, middles)
    atoms0, ends0, size0 = _atoms(values[0]), ends[0], len(texts[0])
    atoms = _slice(atoms0, ends0, 0, prefix) + [hole] + _slice(atoms0, ends0, size0 - suffix, size0)
    return _Partial(tuple(atoms), values[0].raw, unknown)


def _merge_lists(values: list, unknown: Unknown) -> list:
    keys = [[_key(e) for e in v] for v in values]
    shortest = min(len(k) for k in keys)
    prefix = 0
    while prefix < shortest and all(k[prefix] == keys[0][prefix] for k in keys):
        prefix += 1
    suffix = 0
    while suffix < shortest - prefix and all(k[len(k) - 1 - suffix] == keys[0][len(keys[0]) - 1 - suffix]
                                             for k in keys):
        suffix += 1
    first = values[0]
    items = _Partial((_Hole(unknown, 0, 0, (), True),), "", unknown)  # any number of items
    return first[:prefix] + [items] + first[len(first) - suffix:]


def _source_of(atoms: Any) -> tuple[str, tuple, list]:
    """Text to read again from atoms: each hole becomes its marker (shell_lexer.HOLE); with the map
    from offsets back to the atoms and the list of holes."""
    texts, offsets, segments, holes = [], [], [], []
    n = 0
    for a in atoms:
        if type(a) is _Piece:
            if not a.text:
                continue
            texts.append(a.text)
            size = len(a.text)
        else:
            texts.append(hole_marker(len(holes)))
            holes.append(a)
            size = len(texts[-1])
        offsets.append(n)
        segments.append(a)
        n += size
    return "".join(texts), (offsets, segments), holes


def _field(atoms: list, raw: str, word: _Word, splice: int) -> _FieldP:
    if not atoms:
        return _FieldP("", word.line, word.column, raw, (), 0)
    first = atoms[0]
    value = None
    for a in atoms:
        if type(a) is _Hole:
            value = a.unknown
            break
    if value is None:
        value = first.text if len(atoms) == 1 else "".join(a.text for a in atoms)
        splice = 0
    else:
        splice = splice if len(atoms) == 1 else 0
    return _FieldP(value, first.line, first.column, raw, tuple(atoms), splice)
