"""The tokenizer of the launch-script reader (shell.py): cuts bash text into the tokens that the
grammar (`grammars/launch.lark`) takes, each WORD carrying its parts.

Bash decides what a character means by where it stands — inside quotes, `${...}`, `$((...))`, a
heredoc body, a keyword only in command position, `NAME=(` opening an array — so no context-free
lexer can cut it into tokens; this one keeps that state. A token is a `(type, text, offset)` tuple;
WORD, ASSIGN, ARRAY_OPEN and HEREDOC tokens have a payload (`_Word`, `_Assign`, `_Heredoc`) under
their offset in `payload`.

A word's parts, each with whether it stood inside double quotes:

- `("lit", quoted, _Piece)`: characters taken as they are;
- `("var", quoted, (line, column), name, op, arg, index)`: `$name`, `${name[index] op arg}`;
- `("arith", quoted, (line, column), expression)`: `$((...))`;
- `("unknown", quoted, (line, column), reason)`: what is never evaluated (`$(...)`, backquotes);
- `("hole", quoted, _Hole)`: a value the reader does not know, spliced into text that is read
  again (`eval`, `bash -c`, a heredoc given to `sbatch`). The text holds a marker per hole in its
  place (`\x01<n>\x02`, control characters that scripts do not hold), so the hole keeps its own
  words apart from the known ones.

Text that is read again keeps the positions of the file: `origin` maps each offset of the text
back to the piece (or hole) it was copied from.
"""

from __future__ import annotations

import bisect
import re
from typing import Any, NamedTuple

from shardshift.document import TOOL_BOUND
from shardshift.plan import Unknown


class _Piece(NamedTuple):
    """Characters copied verbatim from the source at `line`:`column` (`text` may span lines).

    `assumed`: the script defaults this text stands on, `((variable, value, line, column), ...)`:
    the text is (or was computed from) the default `value` of `${variable:-value}` written at
    `line`:`column`, which the job's environment may override; line 0 when the value was given
    with `--env`. Empty for text the script itself decides."""

    text: str
    line: int
    column: int
    assumed: tuple = ()


class _Hole(NamedTuple):
    """A stretch of a string the reader does not know, where it stands in the source. `alts` are
    the contents it may have, `((atoms, condition), ...)`, when it stands for the part in which the
    branches of an undecided `if`/`case` differ; otherwise (). `items`: it stands for the unknown
    items that follow the known ones of an array (words of their own, never a flag's value)."""

    unknown: Unknown
    line: int
    column: int
    alts: tuple = ()
    items: bool = False


class _Word(NamedTuple):
    parts: list
    raw: str
    line: int
    column: int


class _Assign(NamedTuple):
    name: str
    append: bool
    word: _Word | None
    line: int
    column: int


class _Heredoc(NamedTuple):
    delimiter: str
    expand: bool
    line: int
    body: list  # filled when the body is read: [text, body line, body offset]


MAX_NESTING = 64  # quotes and expansions inside one another; real scripts nest a few


class _Problem(Exception):
    def __init__(self, message: str, pos: int) -> None:
        super().__init__(message)
        self.message, self.pos = message, pos


KEYWORDS = {"if": "IF", "then": "THEN", "elif": "ELIF", "else": "ELSE", "fi": "FI", "for": "FOR", "do": "DO",
            "done": "DONE", "while": "WHILE", "until": "UNTIL", "case": "CASE", "esac": "ESAC",
            "function": "FUNCTION", "{": "LBRACE", "}": "RBRACE", "!": "BANG", "select": "FOR"}
OPENS = {"IF": "FI", "DO": "DONE", "CASE": "ESAC", "LBRACE": "RBRACE"}
DECLARERS = {"export", "declare", "local", "readonly", "typeset"}
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?(\+?)=")
_META = frozenset(" \t\n;&|()<>")
SPECIAL = frozenset("@*#?$!-0123456789")
HOLE = re.compile("\x01([0-9]+)\x02")  # where hole n stands in text read again


def hole_marker(n: int) -> str:
    return f"\x01{n}\x02"

_OPERATORS = {";;&": "DSEMI", ";;": "DSEMI", ";&": "DSEMI", "&&": "AND_IF", "||": "OR_IF", "&>>": "REDIR",
              "&>": "REDIR", ";": "SEMI", "&": "AMP", "|&": "PIPE", "|": "PIPE"}
_OPERATOR = re.compile(r";;&|;;|;&|&&|\|\||&>>|&>|;|&|\|&|\|")  # longest first
_BRACED = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_REDIRECT = re.compile(r"[0-9]*(<<-?|<<<|>>|>&|>\||<&|<>|>|<)")
_HEREDOC_WORD = re.compile(r"""'([^']*)'|"([^"]*)"|\\?([^\s;&|<>()]+)""")
_PARAMETER = re.compile(r"([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])(\[([^\]]*)\])?")
_PARAMETER_OP = re.compile(r":?[-=+?]|##?|%%?|//?|:|\^\^?|,,?")
_PLACEHOLDER = re.compile(r"<[A-Za-z][^<>\n'\"$`;&|()]*[^\s<>]>")  # a template's `<PATH TO DATA>`
# blanks and line continuations, then a newline, a comment, or a word with nothing to interpret
# (no quotes, expansions, `=`, holes) followed by a blank or an operator other than a redirection
_STEP = re.compile(r"(?:[ \t\r]|\\\n)*(?:(\n)|(#[^\n]*)|([^\s;&|()<>'\"\\$`#=\x01]"
                   r"[^\s;&|()<>'\"\\$`=\x01]*)(?=[\s;&|()]|\Z))?")


_SCANNERS: dict = {}
# what `matching` must look at inside `${`, `$(`, `((`: nesting, escapes and quotes
_MATCHING = {"{": re.compile(r"[{}$\\'\"]"), "(": re.compile(r"[()$\\'\"]"), "((": re.compile(r"[()$\\'\"]")}
_DQUOTE_SCAN = re.compile(r"[\\\"$`]")


def _scanner(stop: frozenset, quoted: bool) -> re.Pattern:
    """A regex for the next character `parts` must look at, given what stops the word."""
    chars = set("\\$`") | set(stop) | (set() if quoted else set("'\""))
    _SCANNERS[(stop, quoted)] = scan = re.compile("[" + "".join(re.escape(c) for c in sorted(chars)) + "]")
    return scan


def at(piece: _Piece, offset: int) -> tuple[int, int]:
    """The line and column of `offset` characters into a piece."""
    text = piece.text
    newlines = text.count("\n", 0, offset)
    if not newlines:
        return piece.line, piece.column + offset
    return piece.line + newlines, offset - text.rfind("\n", 0, offset)


def word_text(word: _Word) -> str:
    return "".join(p[2].text for p in word.parts if p[0] == "lit")


class _Lexer:
    """Cuts the script into tokens for the grammar; see the module docstring."""

    def __init__(self, text: str, words_only: bool = False, origin: tuple | None = None,
                 holes: list | None = None, placeholders: bool = False) -> None:
        self.text, self.n, self.i = text, len(text), 0
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.origin = origin  # (offsets, segments): text[offsets[k]:] was copied from segments[k]
        self.holes = holes or []
        self.placeholders = placeholders  # `<PATH TO DATA>` is a word, not a redirection
        self.depth = 0  # expansions and quotes open around the one being read (bounded: MAX_NESTING)
        self.tokens: list = []   # (type, value, pos)
        self.payload: dict = {}  # token offset -> _Word / _Assign / _Heredoc
        self.problems: list = []
        self.pending: list = []  # heredocs whose body starts at the next newline
        self.words_only = words_only
        self.cmd, self.assign_ok, self.array = True, True, 0
        self.expect: str | None = None  # "for-name", "in", "case-word"
        self.cases: list = []  # per open `case`: True while reading patterns

    def pos(self, i: int) -> tuple[int, int]:
        if self.origin is None:
            starts = self.starts
            line = bisect.bisect_right(starts, i)
            return line, i - starts[line - 1] + 1
        offsets, segments = self.origin  # text read again: where each offset was copied from
        k = bisect.bisect_right(offsets, i) - 1
        if k < 0:
            return 1, 1
        segment = segments[k]
        if type(segment) is _Piece:
            return at(segment, min(i - offsets[k], len(segment.text)))
        return segment.line, segment.column

    def pieces(self, t: str, a: int, b: int, base: int = 0) -> list:
        """The lit parts for t[a:b] (at offset base + a of the text). In text read again, one piece
        per stretch copied from one place, each with that place's position and script defaults
        (`_Piece.assumed`)."""
        if self.origin is None:
            return [_Piece(t[a:b], *self.pos(base + a))]
        offsets, segments = self.origin
        out = []
        k = max(bisect.bisect_right(offsets, base + a) - 1, 0)
        j = a
        while j < b:
            end = b if k + 1 >= len(offsets) else min(b, offsets[k + 1] - base)
            if end <= j:
                k += 1
                continue
            segment = segments[k]
            out.append(_Piece(t[j:end], *self.pos(base + j), segment.assumed if type(segment) is _Piece else ()))
            j = end
            k += 1
        return out

    def line_of(self, i: int) -> str:
        """The line of the text around offset i."""
        start = self.text.rfind("\n", 0, i) + 1
        end = self.text.find("\n", i)
        return self.text[start:end if end >= 0 else None]

    def shown(self, text: str) -> str:
        """Text for a message: each hole as `…`."""
        return HOLE.sub("…", text) if self.holes else text

    def emit(self, kind: str, value: str, pos: int, payload: Any = None) -> None:
        if payload is not None:
            self.payload[pos] = payload
        self.tokens.append((kind, value, pos))

    def run(self) -> None:
        t, n = self.text, self.n
        step = _STEP.match
        while self.i < n:
            m = step(t, self.i)  # blanks, then a newline, a comment or a plain word
            newline, comment, plain = m.groups()
            self.i = m.end()
            if plain is not None:
                start = m.start(3)
                where = self.pos(start)
                parts = [("lit", False, _Piece(plain, *where))] if self.origin is None else \
                    [("lit", False, p) for p in self.pieces(plain, 0, len(plain), start)]
                self.emit_word(start, plain, parts, plain, where)
            elif newline is not None:
                if not self.tokens or self.tokens[-1][0] != "NEWLINE":  # blank lines add nothing
                    self.emit("NEWLINE", "\n", self.i - 1)
                if self.pending:
                    self.heredoc_bodies()
                if not self.array:
                    self.cmd, self.assign_ok = True, True
            elif comment is None and self.i < n:
                try:
                    if self.words_only:
                        self.word(self.i)
                    else:
                        self.operator_or_word()
                except _Problem as problem:
                    if self.words_only:
                        raise
                    self.problems.append((problem.message, *self.pos(problem.pos)))
                    self.i = n
        if self.pending:
            self.problems.append((f"heredoc `<<{self.pending[0].delimiter}` has no end line",
                                  *self.pos(self.n)))

    def operator_or_word(self) -> None:
        t, i = self.text, self.i
        c = t[i]
        if c in ";&|":
            op = _OPERATOR.match(t, i).group(0)
            kind = _OPERATORS[op]
            self.i += len(op)
            self.emit(kind, op, i)
            self.cmd, self.assign_ok, self.expect = kind != "REDIR", kind != "REDIR", None
            if kind == "DSEMI" and self.cases:
                self.cases[-1] = True
            return
        if c in "<>" and t.startswith("(", i + 1):
            end = self.matching(i + 2, "(", ")")
            self.emit("WORD", t[i:end], i, _Word([("unknown", False, self.pos(i), "process substitution")], t[i:end],
                                                 *self.pos(i)))
            self.i, self.cmd = end, False
            return
        if c == "<" and self.placeholders and _PLACEHOLDER.match(t, i):
            self.word(i)
            return
        if c in "<>0123456789" and (m := _REDIRECT.match(t, i)):
            op = m.group(0)
            self.i += len(op)
            if op.endswith(("<<", "<<-")):
                self.heredoc(i, op.endswith("-"))
            else:
                self.emit("REDIR", op, i)
            return
        if c == "(":
            if self.cmd and t.startswith("((", i):
                end = self.matching(i + 1, "(", ")")
                self.emit("WORD", t[i:end], i, _Word([("unknown", False, self.pos(i), "arithmetic command")], t[i:end],
                                                     *self.pos(i)))
                self.i, self.cmd = end, False
                if self.expect == "for-name":  # `for ((i=0; i<n; i++))`: `do` may follow on the next line
                    self.expect = None
                return
            self.i += 1
            self.emit("LPAREN", "(", i)
            self.cmd = self.assign_ok = True
            return
        if c == ")":
            self.i += 1
            if self.array:
                self.array -= 1
            self.emit("RPAREN", ")", i)
            if self.cases and self.cases[-1]:
                self.cases[-1] = False
            self.cmd = self.assign_ok = True
            return
        self.word(i)

    def heredoc(self, start: int, strip: bool) -> None:
        t = self.text
        while self.i < self.n and t[self.i] in " \t":
            self.i += 1
        m = _HEREDOC_WORD.match(t, self.i)
        if not m:
            raise _Problem("heredoc `<<` without a delimiter word", start)
        self.i = m.end()
        delimiter = next(g for g in m.groups() if g is not None)
        quoted = m.group(3) is None or m.group(0).startswith("\\")
        doc = _Heredoc(delimiter.replace("'", "").replace('"', ""), not quoted, self.pos(start)[0], [])
        doc = doc._replace(delimiter=doc.delimiter if not strip else "\t" + doc.delimiter)
        self.pending.append(doc)
        self.emit("HEREDOC", t[start:self.i], start, doc)

    def heredoc_bodies(self) -> None:
        t = self.text
        for doc in self.pending:
            strip = doc.delimiter.startswith("\t")
            delimiter = doc.delimiter.lstrip("\t")
            first = self.i
            lines = []
            while self.i < self.n:
                end = t.find("\n", self.i)
                end = self.n if end < 0 else end
                line = t[self.i:end]
                self.i = min(end + 1, self.n)
                if (line.lstrip("\t") if strip else line) == delimiter:
                    break
                lines.append(line.lstrip("\t") if strip else line)
            else:
                self.problems.append((f"heredoc `<<{delimiter}` has no end line", *self.pos(first)))
            doc.body[:] = ["".join(x + "\n" for x in lines), self.pos(first)[0], first]
        self.pending = []

    def matching(self, i: int, opener: str, closer: str) -> int:
        self.enter(i)
        try:
            return self._matching(i, opener, closer)
        finally:
            self.depth -= 1

    def enter(self, i: int) -> None:
        """One level deeper into nested expansions; refused past MAX_NESTING, where the script is
        said to be unread (recursion in Python has a limit, a hostile script has none)."""
        self.depth += 1
        if self.depth > MAX_NESTING:
            self.depth -= 1
            raise _Problem(f"quotes and expansions nested more than {MAX_NESTING} deep, {TOOL_BOUND}", i)

    def _matching(self, i: int, opener: str, closer: str) -> int:
        """Index just after the `closer` that closes an `opener` ending before i (quotes skipped)."""
        t, depth, n = self.text, 1, self.n
        scan = _MATCHING[opener]
        while True:
            m = scan.search(t, i)
            if m is None:
                break
            i = m.start()
            if t.startswith(closer, i):
                depth -= 1
                i += len(closer)
                if depth == 0:
                    return i
                continue
            if t.startswith(opener, i) or (opener in "$(" and t.startswith("$(", i)):
                depth += 1
                i += len(opener) if t.startswith(opener, i) else 2
                continue
            c = t[i]
            if c == "\\":
                i += 2
            elif c == "'" and opener != "((":
                end = t.find("'", i + 1)
                i = n if end < 0 else end + 1
            elif c == '"' and closer != '"':
                i = self.dquote_end(i + 1)
            else:
                i += 1
        raise _Problem(f"`{opener}` is never closed by `{closer}`", n)

    def dquote_end(self, i: int) -> int:
        t = self.text
        while True:
            m = _DQUOTE_SCAN.search(t, i)
            if m is None:
                break
            i = m.start()
            c = t[i]
            if c == "\\":
                i += 2
            elif c == '"':
                return i + 1
            elif t.startswith("$(", i):
                i = self.matching(i + 2, "(", ")")
            elif t.startswith("${", i):
                i = self.matching(i + 2, "{", "}")
            elif c == "`":
                end = t.find("`", i + 1)
                i = self.n if end < 0 else end + 1
            else:
                i += 1
        raise _Problem("double quote is never closed", self.n)

    def word(self, start: int) -> None:
        t, n, cases = self.text, self.n, self.cases
        if self.assign_ok and not self.array and not self.words_only and \
                self.expect not in ("for-name", "case-word") and not (cases and cases[-1]):
            m = ASSIGN.match(t, start)
            if m:  # NAME=value, NAME+=value, NAME=( ... )
                name, append, middle = m.group(1), bool(m.group(3)), m.end()
                if middle < n and t[middle] == "(":
                    self.i = middle + 1
                    self.emit("ARRAY_OPEN", t[start:self.i], start, _Assign(name, append, None, *self.pos(start)))
                    self.array += 1
                    return
                if middle < n and t[middle] not in _META:
                    value = self.parts(middle, n, stop=_META)
                else:
                    value, self.i = [], middle
                self.emit("ASSIGN", t[start:self.i], start,
                          _Assign(name, append, _Word(value, t[middle:self.i], *self.pos(middle)), *self.pos(start)))
                return
        parts = self.parts(start, n, stop=_META)
        if self.i == start:  # an operator character where only words are read
            self.i = start + 1
            parts = [("lit", False, _Piece(t[start], *self.pos(start)))]
        text = parts[0][2].text if len(parts) == 1 and parts[0][0] == "lit" and not parts[0][1] else None
        self.emit_word(start, t[start:self.i], parts, text, self.pos(start))

    def emit_word(self, start: int, raw: str, parts: list, text: str | None, where: tuple) -> None:
        """Emits a word as the token it is where it stands: a keyword, `in`, a case pattern, a word."""
        word = _Word(parts, raw, *where)
        if self.words_only:
            self.emit("WORD", raw, start, word)
            return
        cases = self.cases
        expect = self.expect
        if expect is not None:
            if text == "in" and expect == "in":
                self.emit("IN", raw, start)
                self.expect = None
                if cases and cases[-1] is None:
                    cases[-1] = True
                return
            if expect in ("for-name", "case-word"):
                self.emit("WORD", raw, start, word)
                self.expect = "in"
                return
        if cases and cases[-1] and text != "esac":
            self.emit("WORD", raw, start, word)
            return
        if self.cmd and text in KEYWORDS and not self.array:
            kind = KEYWORDS[text]
            self.emit(kind, raw, start)
            self.cmd = kind not in ("FI", "DONE", "ESAC", "RBRACE")
            self.assign_ok = self.cmd
            if kind == "FOR":
                self.expect = "for-name"
            elif kind == "CASE":
                self.expect = "case-word"
                cases.append(None)
            elif kind == "ESAC" and cases:
                cases.pop()
            return
        self.emit("WORD", raw, start, word)
        if not self.array:
            self.assign_ok = self.cmd and text in DECLARERS or (self.assign_ok and not self.cmd and
                                                                (text or "").startswith("-"))
            self.cmd = False

    def lit(self, parts: list, a: int, b: int, quoted: bool, text: str | None = None) -> None:
        """Appends the characters a..b (or `text`, read there) as literal parts, holes apart."""
        t = self.text if text is None else text
        if text is not None:
            a, b, base = 0, len(text), a
        else:
            base = 0
        if self.holes and HOLE.search(t, a, b):
            j = a
            for m in HOLE.finditer(t, a, b):
                if m.start() > j:
                    parts.extend(("lit", quoted, p) for p in self.pieces(t, j, m.start(), base))
                index = int(m.group(1))
                if index < len(self.holes):
                    parts.append(("hole", quoted, self.holes[index]))
                j = m.end()
            if j < b:
                parts.extend(("lit", quoted, p) for p in self.pieces(t, j, b, base))
            return
        if b > a:
            parts.extend(("lit", quoted, p) for p in self.pieces(t, a, b, base))

    def parts(self, i: int, end: int, stop: frozenset, quoted: bool = False) -> list:
        """The parts of one word from i (stopping at an unquoted character in `stop`); sets self.i."""
        self.enter(i)
        try:
            return self._parts(i, end, stop, quoted)
        finally:
            self.depth -= 1

    def _parts(self, i: int, end: int, stop: frozenset, quoted: bool = False) -> list:
        t, parts, lit = self.text, [], i
        scan = _SCANNERS.get((stop, quoted)) or _scanner(stop, quoted)
        while i < end:
            m = scan.search(t, i, end)
            if m is None:
                i = end
                break
            i = m.start()
            c = t[i]
            if c in stop:
                if c == "<" and self.placeholders and (m := _PLACEHOLDER.match(t, i)):
                    i = m.end()
                    continue
                break
            if c == "\\":
                self.lit(parts, lit, i, quoted)
                if t.startswith("\n", i + 1):
                    i += 2
                elif quoted and i + 1 < end and t[i + 1] not in '$`"\\':
                    lit = i
                    i += 2
                    continue
                else:
                    if i + 1 < end:
                        self.lit(parts, i + 1, i + 2, True)
                    i += 2
                lit = i
            elif c == "'" and not quoted:
                self.lit(parts, lit, i, quoted)
                close = t.find("'", i + 1)
                if close < 0:
                    raise _Problem("single quote is never closed", i)
                if close > i + 1:
                    self.lit(parts, i + 1, close, True)
                else:
                    parts.append(("lit", True, _Piece("", *self.pos(i))))
                i = lit = close + 1
            elif c == '"' and not quoted:
                self.lit(parts, lit, i, quoted)
                inner = self.parts(i + 1, end, stop=frozenset('"'), quoted=True)
                if self.i >= end or t[self.i] != '"':
                    raise _Problem("double quote is never closed", i)
                parts.extend(inner or [("lit", True, _Piece("", *self.pos(i)))])
                i = lit = self.i + 1
            elif c == "$" and i + 1 < end:
                self.lit(parts, lit, i, quoted)
                i = lit = self.dollar(i, parts, quoted)
            elif c == "`":
                self.lit(parts, lit, i, quoted)
                close = t.find("`", i + 1)
                if close < 0:
                    raise _Problem("backquote is never closed", i)
                parts.append(("unknown", quoted, self.pos(i), f"output of `{self.shown(t[i + 1:close].strip())}`"))
                i = lit = close + 1
            else:
                i += 1
        self.lit(parts, lit, i, quoted)
        self.i = i
        return parts

    def dollar(self, i: int, parts: list, quoted: bool) -> int:
        t = self.text
        nxt = t[i + 1]
        if t.startswith("$((", i):
            end = self.matching(i + 2, "(", ")")
            expression = t[i + 3:end - 2]
            hole = HOLE.search(expression) if self.holes else None
            if hole and int(hole.group(1)) < len(self.holes):
                parts.append(("hole", quoted, self.holes[int(hole.group(1))]))
            else:
                parts.append(("arith", quoted, self.pos(i), expression))
            return end
        if nxt == "(":
            end = self.matching(i + 2, "(", ")")
            parts.append(("unknown", quoted, self.pos(i), f"output of `{self.shown(t[i + 2:end - 1].strip())}`"))
            return end
        if nxt == "{":
            m = _BRACED.match(t, i)
            if m:  # `${NAME}`, the common case
                parts.append(("var", quoted, self.pos(i), m.group(1), "", None, None))
                return m.end()
            end = self.matching(i + 2, "{", "}")
            parts.append(self.parameter(i, end - 1, quoted))
            return end
        if nxt == "'" and not quoted:
            close = t.find("'", i + 2)
            if close < 0:
                raise _Problem("single quote is never closed", i)
            self.lit(parts, i + 2, close, True, t[i + 2:close].replace("\\n", "\n").replace("\\t", "\t"))
            return close + 1
        m = NAME.match(t, i + 1)
        if m:
            parts.append(("var", quoted, self.pos(i), m.group(0), "", None, None))
            return m.end()
        if nxt in SPECIAL:
            parts.append(("var", quoted, self.pos(i), nxt, "", None, None))
            return i + 2
        parts.append(("lit", quoted, _Piece("$", *self.pos(i))))
        return i + 1

    def parameter(self, dollar: int, end: int, quoted: bool) -> tuple:
        t = self.text
        i = dollar + 2
        body = t[i:end]
        where = self.pos(dollar)
        if body.startswith("#") and (NAME.fullmatch(body[1:]) or body[1:] in ("@", "*", "#")):
            return ("var", quoted, where, body[1:], "#len", None, None)
        if body.startswith("#") and (m := re.fullmatch(r"#([A-Za-z_][A-Za-z0-9_]*)\[([@*])\]", body)):
            return ("var", quoted, where, m.group(1), "#len", None, m.group(2))
        m = _PARAMETER.match(body)
        if not m or body.startswith("!"):
            return ("unknown", quoted, where, f"`${{{self.shown(body)}}}` (not evaluated)")
        name, index = m.group(1), m.group(3)
        rest = body[m.end():]
        if not rest:
            return ("var", quoted, where, name, "", None, index)
        op = _PARAMETER_OP.match(rest)
        if not op:
            return ("unknown", quoted, where, f"`${{{self.shown(body)}}}` (not evaluated)")
        start = i + m.end() + op.end()
        save = self.i
        arg = self.parts(start, end, stop=frozenset(), quoted=quoted)
        self.i = save
        return ("var", quoted, where, name, op.group(0), (arg, t[start:end]), index)
