"""Launch scripts and argument files, read without running them.

How: a hand-written tokenizer feeds the LALR grammar `grammars/launch.lark` (compiled ahead of time
to `shardshift._parsers.launch`, so reading does not import lark). Bash decides what a character
means by where it stands — inside quotes, `${...}`, `$((...))`, a heredoc body, a keyword only in
command position, `NAME=(` opening an array — so no context-free lexer can cut it into tokens. The
tokenizer does that part, keeping every piece's line and column, and hands the structure (commands,
arrays, `&&`, `if`/`for`/`while`/`case`, groups, functions) to the grammar. The tree is then walked
once in order, keeping the variables: a value set only inside a block that may not run is Unknown,
environment-only values are Unknown with the variable's name, command substitutions are never run.
"""

from __future__ import annotations

import bisect
import re
from typing import Any, NamedTuple

from shardshift._parsers import launch as _generated
from shardshift.plan import Unknown

__all__ = ["Arg", "Launch", "Heredoc", "LaunchScript", "read_launch_script", "read_argument_file"]


class Arg(NamedTuple):
    """One argument: `flag` (None for a positional or an unresolved splice) and its value: a string,
    a tuple for several values, None for a switch, or Unknown. Line and column are the flag's own."""

    flag: str | None
    value: Any
    line: int
    column: int
    text: str


class Launch(NamedTuple):
    """One launcher line: `launcher` (torchrun, deepspeed, srun, python), its own `options`, the entry
    `script`, its `args`, the wrappers around it (srun's options) and the variables at that line."""

    launcher: str
    options: dict
    script: Any
    args: list
    line: int
    column: int
    via: tuple
    variables: dict


class Heredoc(NamedTuple):
    target: Any
    text: str
    line: int


class LaunchScript(NamedTuple):
    path: str
    variables: dict
    launches: list
    heredocs: list
    problems: list


class _Piece(NamedTuple):
    """Characters copied verbatim from the source at `line`:`column` (`text` may span lines)."""

    text: str
    line: int
    column: int


class _Text(NamedTuple):
    """A string value: its pieces (with positions) and the text it was written as."""

    pieces: tuple
    raw: str

    @property
    def value(self) -> str:
        return "".join(p.text for p in self.pieces)


class _Word(NamedTuple):
    parts: list  # ("lit", _Piece, quoted) | ("var", name, op, arg parts, index, quoted) | ("unknown", reason, q)
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
    body: list  # filled when the body is read: [text, body line]


_KEYWORDS = {"if": "IF", "then": "THEN", "elif": "ELIF", "else": "ELSE", "fi": "FI", "for": "FOR", "do": "DO",
             "done": "DONE", "while": "WHILE", "until": "UNTIL", "case": "CASE", "esac": "ESAC",
             "function": "FUNCTION", "{": "LBRACE", "}": "RBRACE", "!": "BANG", "select": "FOR"}
_OPENS = {"IF": "FI", "DO": "DONE", "CASE": "ESAC", "LBRACE": "RBRACE"}
_DECLARERS = {"export", "declare", "local", "readonly", "typeset"}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?(\+?)=")
_META = set(" \t\n;&|()<>")
_SPECIAL = set("@*#?$!-0123456789")


class _Problem(Exception):
    def __init__(self, message: str, pos: int) -> None:
        super().__init__(message)
        self.message, self.pos = message, pos


class _Lexer:
    """Cuts the script into tokens for the grammar; see the module docstring."""

    def __init__(self, text: str, words_only: bool = False) -> None:
        self.text, self.n, self.i = text, len(text), 0
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.tokens: list = []   # (type, value, pos)
        self.payload: dict = {}  # token index -> _Word / _Assign / _Heredoc
        self.problems: list = []
        self.pending: list = []  # heredocs whose body starts at the next newline
        self.words_only = words_only
        self.cmd, self.assign_ok, self.array = True, True, 0
        self.expect: str | None = None  # "for-name", "in", "case-word"
        self.cases: list = []  # per open `case`: True while reading patterns
        self.depth = 0

    def pos(self, i: int) -> tuple[int, int]:
        line = bisect.bisect_right(self.starts, i)
        return line, i - self.starts[line - 1] + 1

    def emit(self, kind: str, value: str, pos: int, payload: Any = None) -> None:
        if payload is not None:
            self.payload[pos] = payload
        self.tokens.append((kind, value, pos))

    def run(self) -> None:
        t = self.text
        while self.i < self.n:
            c = t[self.i]
            if c in " \t\r":
                self.i += 1
            elif c == "\\" and t.startswith("\n", self.i + 1):
                self.i += 2
            elif c == "#":
                end = t.find("\n", self.i)
                self.i = self.n if end < 0 else end
            elif c == "\n":
                self.emit("NEWLINE", "\n", self.i)
                self.i += 1
                self.heredoc_bodies()
                if not self.array:
                    self.cmd, self.assign_ok = True, True
            elif self.words_only:
                self.word(self.i)
            else:
                try:
                    self.operator_or_word()
                except _Problem as problem:
                    self.problems.append((problem.message, *self.pos(problem.pos)))
                    self.i = self.n
        if self.pending:
            self.problems.append((f"heredoc `<<{self.pending[0].delimiter}` has no end line",
                                  *self.pos(self.n)))

    def operator_or_word(self) -> None:
        t, i = self.text, self.i
        cases = self.cases
        for op, kind in ((";;&", "DSEMI"), (";;", "DSEMI"), (";&", "DSEMI"), ("&&", "AND_IF"), ("||", "OR_IF"),
                         ("&>>", "REDIR"), ("&>", "REDIR"), (";", "SEMI"), ("&", "AMP"), ("|&", "PIPE"),
                         ("|", "PIPE")):
            if t.startswith(op, i):
                self.i += len(op)
                self.emit(kind, op, i)
                self.cmd, self.assign_ok, self.expect = kind != "REDIR", kind != "REDIR", None
                if kind == "DSEMI" and cases:
                    cases[-1] = True
                return
        if t[i] in "<>" and t.startswith("(", i + 1):
            end = self.matching(i + 2, "(", ")")
            self.emit("WORD", t[i:end], i, _Word([("unknown", "process substitution", False)], t[i:end], *self.pos(i)))
            self.i, self.cmd = end, False
            return
        if c := re.match(r"[0-9]*(<<-?|<<<|>>|>&|>\||<&|<>|>|<)", t[i:i + 8]):
            op = c.group(0)
            self.i += len(op)
            if op.endswith(("<<", "<<-")) and not op.endswith("<<<"):
                self.heredoc(i, op.endswith("-"))
            else:
                self.emit("REDIR", op, i)
            return
        if t[i] == "(":
            if self.cmd and t.startswith("((", i):
                end = self.matching(i + 1, "(", ")")
                self.emit("WORD", t[i:end], i, _Word([("unknown", "arithmetic command", False)], t[i:end], *self.pos(i)))
                self.i, self.cmd = end, False
                return
            self.i += 1
            self.emit("LPAREN", "(", i)
            self.cmd = self.assign_ok = True
            return
        if t[i] == ")":
            self.i += 1
            if self.array:
                self.array -= 1
            self.emit("RPAREN", ")", i)
            if cases and cases[-1]:
                cases[-1] = False
            self.cmd = self.assign_ok = True
            return
        self.word(i)

    def heredoc(self, start: int, strip: bool) -> None:
        t = self.text
        while self.i < self.n and t[self.i] in " \t":
            self.i += 1
        m = re.match(r"""'([^']*)'|"([^"]*)"|\\?([^\s;&|<>()]+)""", t[self.i:])
        if not m:
            raise _Problem("heredoc `<<` without a delimiter word", start)
        self.i += m.end()
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
        """Index just after the `closer` that closes an `opener` ending before i (quotes skipped)."""
        t, depth = self.text, 1
        while i < self.n:
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
                i = self.n if end < 0 else end + 1
            elif c == '"' and closer != '"':
                i = self.dquote_end(i + 1)
            else:
                i += 1
        raise _Problem(f"`{opener}` is never closed by `{closer}`", i)

    def dquote_end(self, i: int) -> int:
        t = self.text
        while i < self.n:
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
        raise _Problem("double quote is never closed", i)

    def word(self, start: int) -> None:
        parts = self.parts(start, self.n, stop=_META)
        if self.i == start:  # an operator character where only words are read
            self.i = start + 1
            parts = [("lit", _Piece(self.text[start], *self.pos(start)), False)]
        end, raw = self.i, self.text[start:self.i]
        word = _Word(parts, raw, *self.pos(start))
        plain = all(p[0] == "lit" and not p[2] for p in parts)
        text = word_text(word) if plain else None
        cases = self.cases
        if self.words_only:
            self.emit("WORD", raw, start, word)
            return
        if text == "in" and self.expect == "in":
            self.emit("IN", raw, start)
            self.expect = None
            if cases and cases[-1] is None:
                cases[-1] = True
            return
        if self.expect in ("for-name", "case-word"):
            self.emit("WORD", raw, start, word)
            self.expect = "in"
            return
        if cases and cases[-1] and text != "esac":
            self.emit("WORD", raw, start, word)
            return
        if self.cmd and text in _KEYWORDS and not self.array:
            kind = _KEYWORDS[text]
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
        m = _ASSIGN.match(raw) if (self.assign_ok or self.array) and not self.array else None
        if m and parts and parts[0][0] == "lit" and not parts[0][2]:
            name, append = m.group(1), bool(m.group(3))
            if end < self.n and self.text[end] == "(" and m.end() == len(raw):
                self.i = end + 1
                self.emit("ARRAY_OPEN", raw + "(", start, _Assign(name, append, None, *self.pos(start)))
                self.array += 1
                return
            value = self.parts(start + m.end(), end, stop=set()) if m.end() < len(raw) else []
            self.i = end
            self.emit("ASSIGN", raw, start, _Assign(name, append, _Word(value, raw[m.end():],
                                                                           *self.pos(start + m.end())),
                                                    *self.pos(start)))
            return
        self.emit("WORD", raw, start, word)
        if not self.array:
            self.assign_ok = self.cmd and text in _DECLARERS or (self.assign_ok and not self.cmd and
                                                                 (text or "").startswith("-"))
            self.cmd = False

    def parts(self, i: int, end: int, stop: set, quoted: bool = False) -> list:
        """The parts of one word from i (stopping at an unquoted character in `stop`); sets self.i."""
        t, parts, lit = self.text, [], i

        def flush(j: int) -> None:
            if j > lit:
                parts.append(("lit", _Piece(t[lit:j], *self.pos(lit)), quoted))

        while i < end:
            c = t[i]
            if c in stop:
                break
            if c == "\\":
                flush(i)
                if t.startswith("\n", i + 1):
                    i += 2
                elif quoted and i + 1 < end and t[i + 1] not in '$`"\\':
                    lit = i
                    i += 2
                    continue
                else:
                    if i + 1 < end:
                        parts.append(("lit", _Piece(t[i + 1], *self.pos(i + 1)), True))
                    i += 2
                lit = i
            elif c == "'" and not quoted:
                flush(i)
                close = t.find("'", i + 1)
                if close < 0:
                    raise _Problem("single quote is never closed", i)
                parts.append(("lit", _Piece(t[i + 1:close], *self.pos(i + 1)), True))
                i = lit = close + 1
            elif c == '"' and not quoted:
                flush(i)
                inner = self.parts(i + 1, end, stop={'"'}, quoted=True)
                if self.i >= end or t[self.i] != '"':
                    raise _Problem("double quote is never closed", i)
                parts.extend(inner or [("lit", _Piece("", *self.pos(i)), True)])
                i = lit = self.i + 1
            elif c == "$" and i + 1 < end:
                flush(i)
                i = lit = self.dollar(i, parts, quoted)
            elif c == "`":
                flush(i)
                close = t.find("`", i + 1)
                if close < 0:
                    raise _Problem("backquote is never closed", i)
                parts.append(("unknown", f"output of `{t[i + 1:close].strip()}`", quoted))
                i = lit = close + 1
            else:
                i += 1
        flush(i)
        self.i = i
        return parts

    def dollar(self, i: int, parts: list, quoted: bool) -> int:
        t = self.text
        nxt = t[i + 1]
        if t.startswith("$((", i):
            end = self.matching(i + 2, "(", ")")
            parts.append(("arith", t[i + 3:end - 2], i + 3, quoted))
            return end
        if nxt == "(":
            end = self.matching(i + 2, "(", ")")
            parts.append(("unknown", f"output of `{t[i + 2:end - 1].strip()}`", quoted))
            return end
        if nxt == "{":
            end = self.matching(i + 2, "{", "}")
            parts.append(self.parameter(i + 2, end - 1, quoted))
            return end
        if nxt == "'" and not quoted:
            close = t.find("'", i + 2)
            if close < 0:
                raise _Problem("single quote is never closed", i)
            parts.append(("lit", _Piece(t[i + 2:close].replace("\\n", "\n"), *self.pos(i + 2)), True))
            return close + 1
        m = _NAME.match(t, i + 1)
        if m:
            parts.append(("var", m.group(0), "", None, None, quoted))
            return m.end()
        if nxt in _SPECIAL:
            parts.append(("var", nxt, "", None, None, quoted))
            return i + 2
        parts.append(("lit", _Piece("$", *self.pos(i)), quoted))
        return i + 1

    def parameter(self, i: int, end: int, quoted: bool) -> tuple:
        t = self.text
        body = t[i:end]
        if body.startswith("#") and _NAME.fullmatch(body[1:]):
            return ("var", body[1:], "#len", None, None, quoted)
        m = re.match(r"([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])(\[([^\]]*)\])?", body)
        if not m or body.startswith("!"):
            return ("unknown", f"`${{{body}}}` (not evaluated)", quoted)
        name, index = m.group(1), m.group(3)
        rest = body[m.end():]
        op = re.match(r":?[-=+?]|##?|%%?|//?|:|\^\^?|,,?", rest)
        if not rest:
            return ("var", name, "", None, index, quoted)
        if not op:
            return ("unknown", f"`${{{body}}}` (not evaluated)", quoted)
        start = i + m.end() + op.end()
        save = self.i
        arg = self.parts(start, end, stop=set(), quoted=quoted)
        self.i = save
        return ("var", name, op.group(0), (arg, t[start:end]), index, quoted)


def word_text(word: _Word) -> str:
    return "".join(p[1].text for p in word.parts if p[0] == "lit")


_PARSER = None


def _parse(lexer: _Lexer) -> tuple[Any, list]:
    """The tree of the token stream and the syntax problems; a line the grammar rejects is
    reported and left out, so the rest of the script is still read."""
    global _PARSER
    if _PARSER is None:
        _PARSER = _generated.Lark_StandAlone()
    Token = _generated.Token
    tokens = list(range(len(lexer.tokens)))
    problems: list = []
    for _ in range(50):
        ip = _PARSER.parse_interactive("")
        bad = None
        for k in tokens:
            kind, value, pos = lexer.tokens[k]
            line, column = lexer.pos(pos)
            token = Token(kind, value, pos, line, column, line, column + len(value), pos + len(value))
            try:
                ip.feed_token(token)
            except _generated.UnexpectedInput:
                bad = k
                break
        if bad is None:
            try:
                return ip.feed_eof(), problems
            except _generated.UnexpectedInput:
                if not tokens:
                    return None, problems
                bad = tokens[-1]
                message = "the script ends inside an unfinished block"
                opener = _unclosed(lexer, tokens)
                if opener is not None:
                    kind, value, pos = lexer.tokens[opener]
                    problems.append((f"`{value}` is never closed", *lexer.pos(pos)))
                    tokens = tokens[:tokens.index(opener)]
                    continue
                problems.append((message, *lexer.pos(lexer.tokens[bad][2])))
                return None, problems
        kind, value, pos = lexer.tokens[bad]
        shown = "end of line" if kind == "NEWLINE" else f"`{value}`"
        problems.append((f"syntax error near unexpected {shown}", *lexer.pos(pos)))
        line = lexer.pos(pos)[0]
        tokens = [k for k in tokens if lexer.pos(lexer.tokens[k][2])[0] != line]
    return None, problems


def _unclosed(lexer: _Lexer, tokens: list) -> int | None:
    stack: list = []
    for k in tokens:
        kind = lexer.tokens[k][0]
        if kind in _OPENS or kind in ("LPAREN", "ARRAY_OPEN", "WHILE", "UNTIL", "FOR"):
            if kind not in ("WHILE", "UNTIL", "FOR"):
                stack.append(k)
        elif stack and kind in ("FI", "DONE", "ESAC", "RBRACE", "RPAREN"):
            stack.pop()
    return stack[-1] if stack else None



_MISSING = object()


def _key(value: Any) -> Any:
    if isinstance(value, _Text):
        return value.value
    if isinstance(value, list):
        return tuple(_key(v) for v in value)
    return value


def _public(value: Any) -> Any:
    if isinstance(value, _Text):
        return value.value
    if isinstance(value, list):
        return [v if isinstance(v, Unknown) else v.value for v in value]
    return value


def _at(piece: _Piece, offset: int) -> tuple[int, int]:
    before = piece.text[:offset]
    newlines = before.count("\n")
    if not newlines:
        return piece.line, piece.column + offset
    return piece.line + newlines, offset - before.rfind("\n")


class _Walker:
    """Walks the tree in order, keeping the variables as the script leaves them."""

    def __init__(self, lexer: _Lexer) -> None:
        self.lexer = lexer
        self.env: dict = {}
        self.launches: list = []
        self.heredocs: list = []

    # -- structure -------------------------------------------------------------------------
    def walk(self, node: Any) -> None:
        if isinstance(node, _generated.Token):
            return
        handler = getattr(self, "_" + node.data, None)
        if handler is not None:
            handler(node)
        else:
            for child in node.children:
                self.walk(child)

    def _line_text(self, token: Any) -> str:
        start = self.lexer.starts[token.line - 1]
        end = self.lexer.text.find("\n", start)
        line = self.lexer.text[start:end if end >= 0 else None].strip()
        for end in ("; then", ";then", "; do", ";do"):
            if end in line:
                line = line[:line.index(end)]
        return line if len(line) <= 60 else line[:57] + "..."

    def scoped(self, bodies: list, desc: str, keep_outer: bool = True, discard: bool = False) -> None:
        """Walks each body on a copy of the variables, then joins: a name the bodies leave at one
        value keeps it; otherwise it is Unknown, since which body runs is decided at run time."""
        outer = self.env
        results = []
        for body in bodies:
            self.env = dict(outer)
            for node in body:
                self.walk(node)
            results.append(self.env)
        self.env = outer
        if discard:
            return
        names = {n for r in results for n, v in r.items() if n not in outer or _key(outer[n]) != _key(v)}
        for name in names:
            values = [r.get(name, _MISSING) for r in results] + ([outer.get(name, _MISSING)] if keep_outer else [])
            keys = {_key(v) if v is not _MISSING else _MISSING for v in values}
            if len(keys) == 1 and _MISSING not in keys and not isinstance(values[0], Unknown):
                outer[name] = values[0]
            elif name in outer:
                outer[name] = Unknown(f"set before and changed inside {desc}")
            else:
                outer[name] = Unknown(f"set only inside {desc}")

    def _and_or(self, node: Any) -> None:
        first = node.children[0]
        self.walk(first)
        rest = [c for c in node.children[1:] if not isinstance(c, _generated.Token) or c.type not in
                ("AND_IF", "OR_IF", "NEWLINE")]
        token = _first_token(node)
        self.scoped([[r] for r in rest], f"`{self._line_text(token)}` at line {token.line}")

    def _pipeline(self, node: Any) -> None:
        commands = [c for c in node.children if not isinstance(c, _generated.Token)]
        if len(commands) == 1:
            self.walk(commands[0])
        else:
            self.scoped([[c] for c in commands], "a pipeline", discard=True)

    def _subshell(self, node: Any) -> None:
        self.scoped([node.children], "a subshell", discard=True)

    def _if_block(self, node: Any) -> None:
        token = node.children[0]
        desc = f"`{self._line_text(token)}` at line {token.line}"
        bodies = [c for c in node.children if getattr(c, "data", None) == "body"]
        self.walk(bodies[0])
        branches, has_else = [[bodies[1]]], False
        for part in node.children:
            if getattr(part, "data", None) == "elif_part":
                self.walk(part.children[1])
                branches.append([part.children[3]])
            elif getattr(part, "data", None) == "else_part":
                branches.append([part.children[1]])
                has_else = True
        self.scoped(branches, desc, keep_outer=not has_else)

    def _loop(self, node: Any) -> None:
        token = node.children[0]
        desc = f"`{self._line_text(token)}` at line {token.line}"
        body = [c for c in node.children if getattr(c, "data", None) == "body"]
        if token.type == "FOR":
            name = word_text(self.lexer.payload[node.children[1].start_pos])
            self.env[name] = Unknown(f"loop variable of {desc}")
        self.scoped([body], desc)

    _for_block = _while_block = _loop

    def _case_block(self, node: Any) -> None:
        token = node.children[0]
        desc = f"`{self._line_text(token)}` at line {token.line}"
        items = [[c.children[-1] if getattr(c.children[-1], "data", None) == "body" else
                  next(x for x in c.children if getattr(x, "data", None) == "body")]
                 for c in node.children if getattr(c, "data", None) == "case_item"]
        self.scoped(items, desc)

    def _funcdef(self, node: Any) -> None:
        token = node.children[1] if node.children[0].type == "FUNCTION" else node.children[0]
        name = word_text(self.lexer.payload[token.start_pos])
        self.scoped([[node.children[-1]]], f"function `{name}` at line {token.line}")

    # -- commands ----------------------------------------------------------------------------
    def _simple(self, node: Any) -> None:
        payload = self.lexer.payload
        fields: list = []
        temporary: dict = {}
        heredocs, target = [], None
        for child in node.children:
            if isinstance(child, _generated.Token):
                if child.type == "ASSIGN":
                    assign = payload[child.start_pos]
                    if not fields:
                        temporary.setdefault(assign.name, self.env.get(assign.name, _MISSING))
                    self.assign(assign, self.text_of(assign.word))
                elif child.type == "WORD":
                    fields.extend(self.expand(payload[child.start_pos], split=True))
            elif child.data == "array":
                assign = payload[child.children[0].start_pos]
                items: list = []
                for c in child.children[1:]:
                    if isinstance(c, _generated.Token) and c.type == "WORD":
                        items.extend(self.expand(payload[c.start_pos], split=True))
                value = [f.value if isinstance(f.value, Unknown) else _Text(f.pieces, f.raw) for f in items]
                self.assign(assign, value)
            elif child.data == "redirect":
                first = child.children[0]
                if first.type == "HEREDOC":
                    heredocs.append(payload[first.start_pos])
                elif first.value.lstrip("0123456789") in (">", ">>", ">|"):
                    target = self.field_value(self.expand(payload[child.children[1].start_pos], split=False))
        command = fields[0].value if fields and isinstance(fields[0].value, str) else None
        if fields and command not in _DECLARERS:
            for name, old in temporary.items():
                if old is _MISSING:
                    self.env.pop(name, None)
                else:
                    self.env[name] = old
        for doc in heredocs:
            text, _, _ = (doc.body + ["", 0, 0])[:3]
            self.heredocs.append(Heredoc(target, self.heredoc_text(doc), doc.line))
        if command == "unset":
            for f in fields[1:]:
                if isinstance(f.value, str):
                    self.env.pop(f.value, None)
        elif command == "read":
            for f in fields[1:]:
                if isinstance(f.value, str) and _NAME.fullmatch(f.value):
                    self.env[f.value] = Unknown(f"read from input by `read` at line {fields[0].line}")
        elif command in ("eval", "exec", "nohup", "time", "env") or (command and fields):
            launch = _detect(_resplit(fields) if command == "eval" else fields, self)
            if launch is not None:
                self.launches.append(launch)

    def heredoc_text(self, doc: _Heredoc) -> str:
        text = doc.body[0] if doc.body else ""
        if not doc.expand or "$" not in text:
            return text
        lexer = _Lexer(text)
        try:
            parts = lexer.parts(0, len(text), stop=set(), quoted=True)
        except _Problem:
            return text
        out = []
        for part in parts:
            if part[0] == "lit":
                out.append(part[1].text)
            else:
                value = self.field_value(self.expand(_Word([part], "", doc.line, 1), split=False))
                out.append(value if isinstance(value, str) else "$" + (part[1] if part[0] == "var" else "?"))
        return "".join(out)

    def field_value(self, fields: list) -> Any:
        return fields[0].value if fields else ""

    def text_of(self, word: _Word | None) -> Any:
        if word is None or not word.parts:
            return _Text((), "")
        fields = self.expand(word, split=False)
        if not fields:
            return _Text((), word.raw)
        f = fields[0]
        return f.value if isinstance(f.value, Unknown) else _Text(f.pieces, word.raw)

    def assign(self, assign: _Assign, value: Any) -> None:
        old = self.env.get(assign.name, _MISSING)
        if assign.append and old is not _MISSING:
            if isinstance(old, Unknown):
                value = old
            elif isinstance(value, list):
                value = (old if isinstance(old, list) else [old]) + value
            elif isinstance(value, Unknown):
                pass
            elif isinstance(old, list):
                value = old + [value]
            else:
                value = _Text(old.pieces + value.pieces, old.raw + value.raw)
        self.env[assign.name] = value

    # -- expansion ---------------------------------------------------------------------------
    def expand(self, word: _Word, split: bool) -> list:
        """The fields a word expands to: values with positions; an unknown part makes its field Unknown."""
        fields: list = []
        state = {"pieces": [], "unknown": None, "raw": None, "open": False}

        def close() -> None:
            if state["open"]:
                pieces = state["pieces"]
                line, column = (pieces[0].line, pieces[0].column) if pieces else (word.line, word.column)
                value = state["unknown"] or "".join(p.text for p in pieces)
                fields.append(_FieldP(value, line, column, state["raw"] or word.raw, tuple(pieces)))
            state.update(pieces=[], unknown=None, raw=None, open=False)

        def add(pieces: tuple, quoted: bool, raw: str | None = None) -> None:
            if quoted or not split:
                state["pieces"].extend(pieces)
                state["open"] = True
                state["raw"] = state["raw"] or raw
                return
            for piece in pieces:
                for m in re.finditer(r"\S+|\s+", piece.text):
                    if m.group(0).isspace():
                        close()
                    else:
                        state["pieces"].append(_Piece(m.group(0), *_at(piece, m.start())))
                        state["open"] = True
                        state["raw"] = state["raw"] or (raw if raw and m.group(0) == piece.text else m.group(0))

        for part in word.parts:
            kind = part[0]
            if kind == "lit":
                add((part[1],), part[2] or True, word.raw)
                continue
            quoted = part[-1]
            value = self.lookup(part) if kind == "var" else (
                self.arith(part[1], part[2]) if kind == "arith" else Unknown(part[1]))
            if isinstance(value, Unknown):
                state["unknown"] = state["unknown"] or value
                state["open"] = True
            elif isinstance(value, list):
                for n, element in enumerate(value):
                    if n:
                        close()
                    if isinstance(element, Unknown):
                        state["unknown"] = state["unknown"] or element
                        state["open"] = True
                    else:
                        add(element.pieces, quoted, element.raw)
                        state["open"] = state["open"] or quoted
            else:
                add(value.pieces, quoted, value.raw)
                state["open"] = state["open"] or quoted
        close()
        return fields

    def lookup(self, part: tuple) -> Any:
        _, name, op, arg, index, quoted = part
        if name in _SPECIAL or name.isdigit():
            return Unknown(f"script argument ${name}" if name.isdigit() and name != "0" else
                           f"`${name}` at run time")
        value = self.env.get(name, _MISSING)
        if index is not None:
            if value is _MISSING:
                return Unknown(f"environment variable {name}")
            if isinstance(value, Unknown):
                return value
            elements = value if isinstance(value, list) else [value]
            if index in ("@", "*"):
                if op == "#len":
                    return _Text((_Piece(str(len(elements)), 0, 0),), "")
                return elements
            if index.isdigit():
                return elements[int(index)] if int(index) < len(elements) else _Text((), "")
            return Unknown(f"`${{{name}[{index}]}}` (not evaluated)")
        if isinstance(value, list):
            value = value[0] if value else _Text((), "")
        default = None
        if arg is not None:
            d = self.field_value(self.expand(_Word(arg[0], arg[1], 0, 0), split=False))
            default = d if isinstance(d, Unknown) else _Text(tuple(self.expand(_Word(arg[0], arg[1], 0, 0),
                                                                              split=False)[0].pieces)
                                                             if arg[0] else (), arg[1])
        shown = arg[1] if arg else ""
        if op == "":
            return Unknown(f"environment variable {name}") if value is _MISSING else value
        if op == "#len":
            if value is _MISSING or isinstance(value, Unknown):
                return Unknown(f"length of environment variable {name}")
            return _Text((_Piece(str(len(value.value)), 0, 0),), "")
        empty = value is not _MISSING and isinstance(value, _Text) and not value.value
        if op in (":-", "-", ":=", "="):
            if value is _MISSING:
                unknown = Unknown(f"environment variable {name} (default {shown} when unset)")
                if op in (":=", "="):
                    self.env[name] = unknown
                return unknown
            if empty and op.startswith(":"):
                if op == ":=":
                    self.env[name] = default
                return default
            return value
        if op in (":+", "+"):
            if value is _MISSING or isinstance(value, Unknown):
                return Unknown(f"environment variable {name} (`{shown}` when set)")
            return _Text((), "") if empty and op == ":+" else default
        if op in (":?", "?"):
            return Unknown(f"environment variable {name} (required)") if value is _MISSING else value
        if isinstance(value, Unknown):
            return value
        return Unknown(f"`${{{name}{op}{shown}}}` (not evaluated)")

    def arith(self, expr: str, pos: int) -> Any:
        reasons: list = []

        def name(m: re.Match) -> str:
            ident = m.group(1) or m.group(2) or m.group(3)
            value = self.env.get(ident, _MISSING)
            if isinstance(value, list):
                value = value[0] if value else _MISSING
            if value is _MISSING:
                reasons.append(f"environment variable {ident}")
                return "0"
            if isinstance(value, Unknown):
                reasons.append(value.reason)
                return "0"
            text = value.value.strip()
            if not re.fullmatch(r"-?[0-9]+", text):
                reasons.append(f"{ident} is not a number ({text!r})")
                return "0"
            return text

        source = re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)|([A-Za-z_][A-Za-z0-9_]*)", name, expr)
        if reasons:
            return Unknown(f"`$(({expr.strip()}))` with {reasons[0]}")
        try:
            result = _arith(source)
        except (ValueError, ZeroDivisionError, SyntaxError, RecursionError, OverflowError, TypeError):
            return Unknown(f"`$(({expr.strip()}))` (not evaluated)")
        return _Text((_Piece(str(result), *self.lexer.pos(pos)),), str(result))


class _FieldP(NamedTuple):
    value: Any
    line: int
    column: int
    raw: str
    pieces: tuple


def _first_token(node: Any) -> Any:
    while not isinstance(node, _generated.Token):
        node = node.children[0]
    return node


_ARITH_TOKEN = re.compile(r"\s*(?:(\d+)|(\*\*|<<|>>|[-+*/%()]))")


def _arith(source: str) -> int:
    """Integer arithmetic as bash does it (+ - * / % ** and parentheses); ValueError otherwise."""
    tokens, i = [], 0
    source = source.strip()
    while i < len(source):
        m = _ARITH_TOKEN.match(source, i)
        if not m:
            raise ValueError(source)
        tokens.append(int(m.group(1)) if m.group(1) else m.group(2))
        i = m.end()
        while i < len(source) and source[i].isspace():
            i += 1
    pos = [0]

    def peek() -> Any:
        return tokens[pos[0]] if pos[0] < len(tokens) else None

    def take() -> Any:
        pos[0] += 1
        return tokens[pos[0] - 1]

    def atom() -> int:
        t = take() if peek() is not None else None
        if t == "(":
            v = expr()
            if take() != ")":
                raise ValueError(source)
            return v
        if t == "-":
            return -atom()
        if t == "+":
            return atom()
        if isinstance(t, int):
            return t
        raise ValueError(source)

    def power() -> int:
        base = atom()
        if peek() == "**":
            take()
            exponent = power()
            if exponent > 64:
                raise ValueError(source)
            return base ** exponent
        return base

    def term() -> int:
        v = power()
        while peek() in ("*", "/", "%"):
            op, rhs = take(), power()
            if op == "*":
                v *= rhs
            else:
                q = abs(v) // abs(rhs)
                q = q if (v >= 0) == (rhs >= 0) else -q
                v = q if op == "/" else v - q * rhs
        return v

    def expr() -> int:
        v = term()
        while peek() in ("+", "-"):
            v = v + term() if take() == "+" else v - term()
        return v

    result = expr()
    if peek() is not None:
        raise ValueError(source)
    return result


# -- launchers -----------------------------------------------------------------------------------
_TORCHRUN_VALUED = {"nproc_per_node", "nnodes", "node_rank", "master_addr", "master_port", "rdzv_id", "rdzv_backend",
                    "rdzv_endpoint", "rdzv_conf", "max_restarts", "monitor_interval", "start_method", "role",
                    "log_dir", "redirects", "tee", "local_addr", "local_rank", "logs_specs", "local_ranks_filter"}
_DEEPSPEED_VALUED = {"num_gpus", "num_nodes", "hostfile", "H", "include", "i", "exclude", "e", "master_port",
                     "master_addr", "launcher", "launcher_args", "node_rank", "ssh_port", "min_elastic_nodes",
                     "max_elastic_nodes", "autotuning", "comment", "venv_script", "bind_core_list"}
_SRUN_VALUED = {"N", "n", "p", "A", "t", "J", "o", "e", "c", "w", "x", "G", "nodes", "ntasks", "ntasks-per-node",
                "gpus-per-node", "gpus", "partition", "account", "time", "job-name", "output", "error",
                "cpus-per-task", "nodelist", "exclude", "jobid", "container-image", "container-mounts",
                "container-workdir", "mem", "gres", "mpi", "cpu-bind", "distribution", "qos", "reservation",
                "gpus-per-task", "ntasks-per-gpu", "dependency", "kill-on-bad-exit", "wait", "export"}
_PYTHON_VALUED = {"-X", "-W", "-c"}
_LAUNCHERS = {"bash", "sh", "srun", "torchrun", "deepspeed"}
_TORCHRUN_MODULES = {"torch.distributed.run", "torch.distributed.launch"}


def _text(field: Any) -> Any:
    return field.value


def _resplit(fields: list) -> list:
    """`eval` and `bash -c` take their words again: split every known field on blanks and stop at
    the first redirection or command separator."""
    out = []
    for f in fields[1:]:
        if isinstance(f.value, Unknown):
            out.append(f)
            continue
        for m in re.finditer(r"\S+", f.value):
            word = m.group(0).strip("'\"")
            if re.fullmatch(r"[0-9]*(&?>>?|<|\|\|?|&&|;)(&[0-9])?.*", m.group(0)) and not word.startswith("--"):
                return out
            line, column = f.line, f.column
            if f.pieces:
                line, column = _position_in(f.pieces, m.start())
            out.append(_FieldP(word, line, column, m.group(0), ()))
    return out


def _position_in(pieces: tuple, offset: int) -> tuple[int, int]:
    for piece in pieces:
        if offset < len(piece.text):
            return _at(piece, offset)
        offset -= len(piece.text)
    return pieces[-1].line, pieces[-1].column


def _basename(value: Any) -> str:
    return value.rsplit("/", 1)[-1] if isinstance(value, str) else ""


def _options(fields: list, i: int, valued: set, lenient: bool = False) -> tuple[dict, int]:
    """The launcher's own options from fields[i]: {name: value or True}, and where they stop."""
    options: dict = {}
    while i < len(fields):
        value = fields[i].value
        if isinstance(value, Unknown):
            options.setdefault("?", []).append(value)
            i += 1
            continue
        if not value.startswith("-") or value == "--":
            if value == "--":
                i += 1
            break
        name, eq, inline = value.lstrip("-").partition("=")
        key = name.replace("-", "_") if valued is not _SRUN_VALUED else name
        if eq:
            options[key] = inline
        elif key in valued or name in valued:
            options[key] = fields[i + 1].value if i + 1 < len(fields) else None
            i += 1
        else:
            options[key] = True
        i += 1
    return options, i


def _detect(fields: list, walker: _Walker | None, via: tuple = ()) -> Launch | None:
    i = 0
    while i < len(fields) and isinstance(fields[i].value, str):
        value = fields[i].value
        if value in ("env", "nohup", "exec", "time", "eval") or _ASSIGN.fullmatch(value.split("=")[0] + "=") and "=" in value:
            i += 1
        elif value == "uv" and i + 1 < len(fields) and fields[i + 1].value == "run":
            i += 2
        else:
            break
    if i >= len(fields) or not isinstance(fields[i].value, str):
        return None
    head = fields[i]
    name = _basename(head.value)
    if name not in _LAUNCHERS and not re.fullmatch(r"python[0-9.]*", name):
        return None
    variables = {k: _public(v) for k, v in walker.env.items()} if walker else {}
    if name in ("bash", "sh") and i + 2 < len(fields) and fields[i + 1].value == "-c":
        return _detect(_resplit(fields[i + 1:]), walker, via)
    if name == "srun":
        options, j = _options(fields, i + 1, _SRUN_VALUED)
        inner = _detect(fields[j:], walker, via + (("srun", options),))
        if inner is not None and inner.launcher == "python":  # srun starts the ranks itself
            return inner._replace(launcher="srun", options=options, via=via)
        if inner is not None:
            return inner
        return _launch("srun", options, fields, j, head, via, variables)
    if name == "torchrun":
        options, j = _options(fields, i + 1, _TORCHRUN_VALUED)
        return _launch("torchrun", options, fields, j, head, via, variables)
    if name == "deepspeed":
        options, j = _options(fields, i + 1, _DEEPSPEED_VALUED)
        return _launch("deepspeed", options, fields, j, head, via, variables)
    if re.fullmatch(r"python[0-9.]*", name):
        j = i + 1
        while j < len(fields) and isinstance(fields[j].value, str) and fields[j].value.startswith("-"):
            flag = fields[j].value
            if flag == "-m" and j + 1 < len(fields):
                module = fields[j + 1].value
                if module in _TORCHRUN_MODULES:
                    options, k = _options(fields, j + 2, _TORCHRUN_VALUED)
                    return _launch(f"python -m {module}", options, fields, k, head, via, variables)
                return _launch("python", {"m": module}, fields, j + 1, head, via, variables)
            if flag == "-c":
                return None
            j += 2 if flag in _PYTHON_VALUED else 1
        return _launch("python", {}, fields, j, head, via, variables)
    return None


def _launch(launcher: str, options: dict, fields: list, j: int, head: Any, via: tuple, variables: dict) -> Launch | None:
    if j >= len(fields):
        return None
    return Launch(launcher, options, fields[j].value, _pair(fields[j + 1:]), head.line, head.column, via, variables)


_NUMBER = re.compile(r"-\.?[0-9]")


def _pair(fields: list) -> list:
    """Flags with their values: `--flag v`, `--flag=v`, `--flag v1 v2` (a tuple), `--switch` (None)."""
    args: list = []
    current = None
    values: list = []

    def finish() -> None:
        if current is not None:
            value = None if not values else values[0] if len(values) == 1 else tuple(values)
            args.append(Arg(current[0], value, current[1].line, current[1].column, current[2]))

    for f in fields:
        v = f.value
        if isinstance(v, str) and v.startswith("-") and len(v) > 1 and not _NUMBER.match(v):
            finish()
            flag, eq, inline = v.partition("=")
            if eq and flag.startswith("--"):
                current, values = (flag, f, f.raw), [inline]
            else:
                current, values = (v, f, f.raw), []
        elif current is None:
            args.append(Arg(None, v, f.line, f.column, f.raw))
        else:
            values.append(v)
            current = (current[0], current[1], current[2] + " " + f.raw)
    finish()
    return args


# -- entry points ----------------------------------------------------------------------------------
def read_launch_script(text: str, path: str = "<script>") -> LaunchScript:
    """Reads a launch script without running anything: its variables, launcher lines, heredocs and
    syntax problems (message, line, column). Never raises on any text."""
    lexer = _Lexer(text)
    lexer.run()
    tree, problems = _parse(lexer)
    walker = _Walker(lexer)
    if tree is not None:
        try:
            walker.walk(tree)
        except RecursionError:
            problems.append(("the script nests too deeply to read", 1, 1))
    problems = sorted(lexer.problems + problems, key=lambda p: (p[1], p[2]))
    variables = {k: _public(v) for k, v in walker.env.items()}
    return LaunchScript(path, variables, walker.launches, walker.heredocs, problems)


def read_argument_file(text: str, path: str = "<arguments>") -> list:
    """Reads a plain argument list (one or many flags per line, `#` comments) into Arg items.
    `${VAR}` references stay Unknown with the variable's name."""
    lexer = _Lexer(text, words_only=True)
    try:
        lexer.run()
    except _Problem:
        pass
    walker = _Walker(lexer)
    fields: list = []
    for kind, _, pos in lexer.tokens:
        if kind == "WORD":
            fields.extend(walker.expand(lexer.payload[pos], split=True))
    return _pair(fields)
