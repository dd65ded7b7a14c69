"""Launch scripts and argument files, read without running them.

How: a hand-written tokenizer (shell_lexer.py) feeds the LALR grammar `grammars/launch.lark`
(compiled ahead of time to `shardshift._parsers.launch` by shell_grammar.py, so reading imports no
parser library). The tree is then walked once in order (here), keeping the variables (values in
shell_values.py; tests and arithmetic decided in shell_eval.py; launcher lines read and the result
types in shell_launch.py):

- a value the script cannot know is Unknown with the reason: an environment variable (by name),
  a script argument, a command's output (never run), a value set only inside a branch that is not
  decided. A string only partly known keeps its known text: the unknown stretches are holes, so
  `"--lr $LR --fp16"` still gives `--lr`, an Unknown value and `--fp16`;
- `if`/`elif`, `[ ]`, `[[ ]]`, `test`, `&&`/`||` and `case` are decided when their operands are
  known (string and integer comparisons, `-z`/`-n`, glob patterns): only the branch that runs is
  read. Otherwise every branch is read on its own copy of the variables and a name they leave
  different is Unknown; where the branches differ only in part, the common text stays known and
  the hole remembers each branch's text, which is tried when the hole is the program or the
  entry script of a command;
- an undecided `if`/`elif`/`else` or `case` whose branches (two or more that run to their end and
  set variables: a missing `else` is no configuration) choose values a launch passes (a model
  size) is a choice between configurations: `launch_variants` reads the script again once per
  choice (the chosen branch taken as the one that runs; at most 8 configurations), so each
  configuration's launch has its own values;
- functions run where they are called (a function never called is still searched for launches);
  `exit` ends a branch;
- `eval STRING`, `bash -c STRING` and a heredoc given to `sbatch` are read again as scripts (eval
  in the current variables, the others on a copy), holes and all, so a launcher inside is found;
- `#SBATCH` lines at the top of a script, or of a heredoc given to sbatch, give the allocation:
  an srun launch takes from it the counts (`nodes`, `ntasks`, `ntasks-per-node`,
  `gpus-per-node`) it does not set itself, and SLURM_NNODES / SLURM_NTASKS_PER_NODE / ... are
  known in that script when the header gives them as numbers.

Not modelled: which variables are exported (a child shell sees all of them), loops run once,
files that are sourced are not read, globbing and `IFS` changes.
"""

from __future__ import annotations

import re
from typing import Any

from shardshift._parsers import launch as _generated
from shardshift.formats.megatron import shell_eval
from shardshift.formats.megatron.shell_launch import (
    _COUNTS,
    _DEEPSPEED_VALUED,
    _NOT_WRAPPERS,
    _OTHER_LAUNCHERS,
    _PYTHON,
    _PYTHON_VALUED,
    _SHELLS,
    _SRUN_VALUED,
    _TORCHRUN_MODULES,
    _TORCHRUN_VALUED,
    Arg,
    Branches,
    Heredoc,
    Launch,
    LaunchScript,
    _allocation,
    _dash_c,
    _inherit,
    _is_launcher,
    _name_of,
    _options,
    _pair,
    _seed,
    _skip_wrappers,
    _srun_starts_python,
    assumed_of,
    tail_of,
)
from shardshift.formats.megatron.shell_lexer import (
    DECLARERS,
    NAME,
    OPENS,
    SPECIAL,
    _Assign,
    _Heredoc,
    _Hole,
    _Lexer,
    _Piece,
    _Problem,
    _Word,
    at,
    word_text,
)
from shardshift.formats.megatron.shell_values import (
    _IFS,
    _IFS_SPLIT,
    _MISSING,
    _UNSET,
    _atoms,
    _field,
    _FieldP,
    _is_items,
    _key,
    _make,
    _merge_lists,
    _merge_strings,
    _nonempty,
    _Partial,
    _public,
    _source_of,
    _Text,
)
from shardshift.plan import Unknown

__all__ = ["Arg", "Launch", "Heredoc", "LaunchScript", "read_launch_script", "read_argument_file"]


# -- parsing ------------------------------------------------------------------------------------------
def _parse(lexer: _Lexer) -> tuple[Any, list]:
    """The tree of the token stream and the syntax problems; a line the grammar rejects is
    reported and left out, so the rest of the script is still read."""
    tokens = lexer.tokens
    keep = list(range(len(tokens)))
    problems: list = []
    for _ in range(50):
        tree, bad = _generated.parse(tokens if len(keep) == len(tokens) else [tokens[k] for k in keep])
        if tree is not None:
            return tree, problems
        if bad >= len(keep):
            if not keep:
                return None, problems
            opener = _unclosed(lexer, keep)
            if opener is not None:
                kind, value, pos = tokens[opener]
                problems.append((f"`{value}` is never closed", *lexer.pos(pos)))
                keep = keep[:keep.index(opener)]
                continue
            problems.append(("the script ends inside an unfinished block", *lexer.pos(tokens[keep[-1]][2])))
            return None, problems
        kind, value, pos = tokens[keep[bad]]
        shown = "end of line" if kind == "NEWLINE" else f"`{value}`"
        problems.append((f"syntax error near unexpected {shown}", *lexer.pos(pos)))
        line = lexer.pos(pos)[0]
        keep = [k for k in keep if lexer.pos(tokens[k][2])[0] != line]
    return None, problems


def _unclosed(lexer: _Lexer, keep: list) -> int | None:
    stack: list = []
    for k in keep:
        kind = lexer.tokens[k][0]
        if kind in OPENS or kind in ("LPAREN", "ARRAY_OPEN"):
            stack.append(k)
        elif stack and kind in ("FI", "DONE", "ESAC", "RBRACE", "RPAREN"):
            stack.pop()
    return stack[-1] if stack else None


class _Exit(Exception):
    """`exit` (or `return`, `kind` says which): the rest of this path does not run."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


def _first_token(node: Any) -> Any:
    while type(node) is not tuple:
        node = node.children[0]
    return node


def _last_token(node: Any) -> Any:
    while type(node) is not tuple:
        node = node.children[-1]
    return node


def _status_and(a: bool | None, b: bool | None) -> bool | None:
    if a is False or b is False:
        return False
    return None if a is None or b is None else True


def _status_or(a: bool | None, b: bool | None) -> bool | None:
    if a is True or b is True:
        return True
    return None if a is None or b is None else False


class _Walker:
    """Walks the tree in order, keeping the variables as the script leaves them."""

    def __init__(self, lexer: _Lexer, env: dict | None = None, via: tuple = (), conditions: tuple = (),
                 allocation: dict | None = None, depth: int = 0) -> None:
        self.lexer = lexer
        if env is None:  # a script read from the top: the environment the user gave (--env)
            from shardshift.context.environment import current

            env = {name: _Text((_Piece(value, 0, 0, ((name, value, 0, 0),)),), value)
                   for name, value in current().items()}
        self.env: dict = env
        self.written: set = set()  # the names set or unset since the innermost branch began
        self.launches: list = []
        self.heredocs: list = []
        self.via = via
        self.conditions = conditions
        self.allocation = allocation or {}
        self.depth = depth
        self.functions: dict = {}  # name -> (body, lexer)
        self.called: set = set()
        self.active: set = set()  # the functions being run
        self.args: Any = None  # the positional parameters inside a function call: (values, exact)
        self.sourced = False  # a file was sourced: its functions are not known
        # the undecided if/case blocks that choose between configurations (see launch_variants), and
        # the branch to take at some of them: (line, column) -> label
        self.branches: dict = {}
        self.force: dict = {}
        self.root = lexer
        # the script defaults that decided the `if`/`case` branches being walked, each with the
        # lines of its branch: ((assumptions, first line, last line), ...)
        self.deciding: tuple = ()
        self.consulted: list | None = None  # collects the defaults the words expanded stand on
        self.handlers = {"simple": self._simple, "and_or": self._and_or, "pipeline": self._pipeline,
                         "subshell": self._subshell, "if_block": self._if_block, "for_block": self._loop,
                         "while_block": self._loop, "case_block": self._case_block, "funcdef": self._funcdef}

    def set_var(self, name: str, value: Any) -> None:
        self.env[name] = value
        self.written.add(name)

    def unset_var(self, name: str) -> None:
        self.env.pop(name, None)
        self.written.add(name)

    # -- structure -------------------------------------------------------------------------
    def walk(self, node: Any) -> None:
        if type(node) is tuple:
            return
        handler = self.handlers.get(node.data)
        if handler is not None:
            handler(node)
        else:
            for child in node.children:
                if type(child) is not tuple:
                    self.walk(child)

    def top(self, tree: Any) -> None:
        """Walks a whole script; then searches the functions it never calls for launches."""
        try:
            self.walk(tree)
        except _Exit:
            pass
        for name, (body, lexer) in list(self.functions.items()):
            if name in self.called:
                continue
            saved = self.lexer
            self.lexer = lexer
            try:
                self.scoped([[body]], f"function `{name}`", [f"function `{name}`, which the script does not call"],
                            discard=True)
            finally:
                self.lexer = saved

    def desc(self, token: tuple) -> str:
        line = self.lexer.line_of(token[2]).strip()
        for end in ("; then", ";then", "; do", ";do"):
            if end in line:
                line = line[:line.index(end)]
        line = self.lexer.shown(line)
        return f"`{line if len(line) <= 60 else line[:57] + '...'}` at line {self.lexer.pos(token[2])[0]}"

    def scoped(self, bodies: list, desc: str, labels: list | None = None, keep_outer: bool = True,
               discard: bool = False, where: tuple = (0, 0), choice: Any = None) -> None:
        """Walks each body on a copy of the variables, then joins: a name the bodies leave at one
        value keeps it; otherwise it is Unknown (or a partial string whose differing middle is a
        hole with each branch's text), since which body runs is decided at run time. `choice`
        (an `if`/`case`: its key and each body's short label) records the block in `branches`
        when two or more bodies run to their end and set variables."""
        outer, conditions, written = self.env, self.conditions, self.written
        results, alive_labels, ended, names = [], [], None, set()
        setting: list = []  # (label, short label) of the bodies that end and set a variable
        for k, body in enumerate(bodies):
            self.env, self.written = dict(outer), set()
            label = labels[k] if labels else None
            if label is not None:
                self.conditions = conditions + (label,)
            try:
                for node in body:
                    self.walk(node)
            except _Exit as end:
                ended = end
            else:
                results.append(self.env)
                alive_labels.append(label or desc)
                names |= self.written
                if choice is not None and self.written:
                    setting.append((label, choice[1][k]))
            finally:
                self.conditions = conditions
        self.env, self.written = outer, written
        if discard:
            return
        if len(setting) >= 2 and choice[0] is not None:
            self.branches.setdefault(choice[0], Branches(desc, tuple(setting)))
        written |= names
        if keep_outer:
            results.append(outer)
            alive_labels.append(f"{desc}: no branch runs")
        if not results:
            raise ended if ended is not None else _Exit("exit")
        if len(results) == 1:
            if results[0] is not outer:
                self.env = results[0]
            return
        for name in names:
            values = [r.get(name, _MISSING) for r in results]
            keys = {_key(v) if v is not _MISSING else _MISSING for v in values}
            if len(keys) == 1:
                if values[0] is _MISSING:
                    outer.pop(name, None)
                else:
                    outer[name] = values[0]
                continue
            unknown = Unknown(f"set before and changed inside {desc}" if name in outer else
                              f"set only inside {desc}" if _MISSING in keys else
                              f"set differently by the branches of {desc}")
            kinds = {type(v) for v in values}
            if kinds <= {_Text, _Partial}:
                outer[name] = _merge_strings(values, alive_labels, unknown, where)
            elif kinds == {list}:
                outer[name] = _merge_lists(values, unknown)
            else:
                outer[name] = unknown

    def _and_or(self, node: Any) -> None:
        kids = [c for c in node.children if type(c) is not tuple or c[0] != "NEWLINE"]
        self.walk(kids[0])
        status = self.status(kids[0])
        k = 1
        while k + 1 < len(kids):
            op, pipeline = kids[k][0], kids[k + 1]
            if (op == "AND_IF" and status is False) or (op == "OR_IF" and status is True):
                k += 2
                continue
            if status is None:
                token = _first_token(node)
                desc = self.desc(token)
                rest = kids[k + 1::2]
                self.scoped([[r] for r in rest], desc, [f"{desc}: `{self.lexer.shown(kids[j][1])}` part runs"
                                                        for j in range(k, len(kids), 2)],
                            where=self.lexer.pos(token[2]))
                return
            self.walk(pipeline)
            status = self.status(pipeline)
            k += 2

    def _pipeline(self, node: Any) -> None:
        commands = [c for c in node.children if type(c) is not tuple]
        if len(commands) == 1:
            self.walk(commands[0])
        else:
            self.scoped([[c] for c in commands], "a pipeline", discard=True)

    def _subshell(self, node: Any) -> None:
        self.scoped([node.children], "a subshell", discard=True)

    def _if_block(self, node: Any) -> None:
        children = node.children
        desc = self.desc(children[0])
        where = self.lexer.pos(children[0][2])
        chain = [(children[1], children[3], f"{desc}: then", self.when(children[0]))]
        otherwise = None
        for part in children[4:]:
            if type(part) is tuple:
                continue
            if part.data == "elif_part":
                chain.append((part.children[1], part.children[3], f"{self.desc(part.children[0])}: then",
                              self.when(part.children[0])))
            elif part.data == "else_part":
                otherwise = part.children[1]
        candidates, labels, shorts, exhaustive = [], [], [], False
        used: list = []
        for condition, body, label, short in chain:
            self.walk(condition)
            self.consulted = used
            try:
                status = self.status(condition)
            finally:
                self.consulted = None
            if status is False:
                continue
            candidates.append(body)
            labels.append(label)
            shorts.append(short)
            if status is True:
                exhaustive = True
                break
        if not exhaustive and otherwise is not None:
            candidates.append(otherwise)
            labels.append(f"{desc}: else")
            shorts.append(f"when no condition of the `if` at line {where[0]} holds" if len(chain) > 1 else
                          f"when not {chain[0][3][5:]}")
            exhaustive = True
        self.choose(candidates, labels, shorts, exhaustive, desc, where, used)

    def when(self, token: tuple) -> str:
        """How a message names the branch of an `if`/`elif`: "when `[ "$M" = 7B ]`, line 3"."""
        line = self.lexer.line_of(token[2]).strip()
        for end in ("; then", ";then"):
            if end in line:
                line = line[:line.index(end)]
        line = self.lexer.shown(line)
        for start in ("elif ", "if "):
            if line.startswith(start):
                line = line[len(start):].strip()
                break
        return f"when `{line if len(line) <= 60 else line[:57] + '...'}`, line {self.lexer.pos(token[2])[0]}"

    def choose(self, candidates: list, labels: list, shorts: list, exhaustive: bool, desc: str,
               where: tuple, used: list) -> None:
        """Walks the branches of an `if`/`case` that may run: the one that runs when known (or the
        one `force` chooses), else each on its own (scoped)."""
        key = where if self.lexer is self.root else None
        forced = self.force.get(key) if key is not None else None
        if forced is not None and forced in labels:
            self.walk(candidates[labels.index(forced)])
        elif len(candidates) == 1 and exhaustive:
            self.walk_decided(candidates[0], used)
        elif candidates:
            self.scoped([[b] for b in candidates], desc, labels, keep_outer=not exhaustive, where=where,
                        choice=(key, shorts))

    def _loop(self, node: Any) -> None:
        token = node.children[0]
        desc = self.desc(token)
        bodies = [c for c in node.children if type(c) is not tuple and c.data == "body"]
        if token[0] == "FOR":
            name = word_text(self.lexer.payload[node.children[1][2]])
            self.set_var(name, Unknown(f"loop variable of {desc}"))
        elif bodies:
            self.walk(bodies[0])
            status = self.status(bodies[0])
            if status is (token[0] == "UNTIL"):
                return  # the loop body never runs
            bodies = bodies[1:]
        self.scoped([bodies], desc, [f"inside {desc}"], where=self.lexer.pos(token[2]))

    _for_block = _while_block = _loop

    def _case_block(self, node: Any) -> None:
        token = node.children[0]
        desc = self.desc(token)
        payload = self.lexer.payload
        field = self.expand(payload[node.children[1][2]], split=False)
        subject = field[0].value if field and type(field[0].value) is str else None
        used = list(assumed_of(field[0])) if field else []
        candidates, labels, shorts, exhaustive = [], [], [], False
        for item in node.children:
            if type(item) is tuple or item.data != "case_item":
                continue
            patterns = [payload[c[2]] for c in item.children if type(c) is tuple and c[0] == "WORD"]
            body = next(c for c in item.children if type(c) is not tuple and c.data == "body")
            matched: bool | None = False
            for pattern in patterns:
                if pattern.raw == "*":
                    matched = True
                    break
                regex = self.pattern(pattern)
                found = None if regex is None or subject is None else regex.fullmatch(subject) is not None
                matched = _status_or(matched, found)
            if matched is False:
                continue
            candidates.append(body)
            shown = '|'.join(p.raw for p in patterns)
            labels.append(f"{desc}: `{shown})`")
            subject_text = self.lexer.shown(payload[node.children[1][2]].raw)
            shorts.append(f"when `{subject_text}` matches `{shown}`, line {patterns[0].line}" if shown != "*" else
                          f"when `{subject_text}` matches no other pattern (`*)`), line {patterns[0].line}")
            if matched is True:
                exhaustive = True
                break
        self.choose(candidates, labels, shorts, exhaustive, desc, self.lexer.pos(token[2]), used)

    def walk_decided(self, body: Any, used: list) -> None:
        """Walks the one branch that runs; when script defaults decided it, what the branch sets
        (the text written in it) stands on them too."""
        if not used:
            self.walk(body)
            return
        first, last = self.lexer.pos(_first_token(body)[2])[0], self.lexer.pos(_last_token(body)[2])[0]
        saved = self.deciding
        self.deciding = saved + ((tuple(dict.fromkeys(used)), first, last),)
        try:
            self.walk(body)
        finally:
            self.deciding = saved

    def _funcdef(self, node: Any) -> None:
        token = node.children[1] if node.children[0][0] == "FUNCTION" else node.children[0]
        name = word_text(self.lexer.payload[token[2]])
        self.functions[name] = (node.children[-1], self.lexer)

    def call(self, name: str, fields: list) -> None:
        body, lexer = self.functions[name]
        self.called.add(name)
        if self.depth > 12 or name in self.active:
            return  # a function that calls itself: read once
        values, exact = [], True
        for f in fields[1:]:
            if f.splice:
                exact = False
                break
            values.append(_make(f.pieces, f.raw))
        saved = self.lexer, self.args
        self.lexer, self.args = lexer, (values, exact)
        self.depth += 1
        self.active.add(name)
        try:
            self.walk(body)
        except _Exit as end:
            if end.kind != "return":
                raise
        finally:
            self.lexer, self.args = saved
            self.depth -= 1
            self.active.discard(name)

    # -- deciding ------------------------------------------------------------------------------
    def status(self, node: Any) -> bool | None:
        """Whether a command list succeeds, when that is known without running it."""
        if type(node) is tuple:
            return None
        data = node.data
        if data in ("body", "group", "subshell", "start"):
            commands = [c for c in node.children if type(c) is not tuple]
            return self.status(commands[-1]) if commands else None
        if data == "simple":
            return self.test_status(node)
        if data == "pipeline":
            commands = [c for c in node.children if type(c) is not tuple]
            status = self.status(commands[-1])
            bang = type(node.children[0]) is tuple and node.children[0][0] == "BANG"
            return (None if status is None else not status) if bang else status
        if data == "and_or":
            kids = [c for c in node.children if type(c) is not tuple or c[0] != "NEWLINE"]
            status = self.status(kids[0])
            for k in range(1, len(kids) - 1, 2):
                nxt = self.status(kids[k + 1])
                status = _status_and(status, nxt) if kids[k][0] == "AND_IF" else _status_or(status, nxt)
            return status
        return None

    def test_status(self, node: Any) -> bool | None:
        payload = self.lexer.payload
        words, assigns = [], []
        for child in node.children:
            if type(child) is not tuple or child[0] not in ("WORD", "ASSIGN"):
                return None  # redirections, arrays: not a test
            (words if child[0] == "WORD" else assigns).append(payload[child[2]])
        if not words:  # only assignments: they succeed, unless a command substitution fails
            if any(part[0] == "unknown" for a in assigns if a.word for part in a.word.parts):
                return None
            return True
        if assigns:
            return None
        first = word_text(words[0]) if len(words[0].parts) == 1 else None
        last = word_text(words[-1]) if len(words[-1].parts) == 1 else None
        if first in ("true", ":") and len(words) == 1:
            return True
        if first == "false" and len(words) == 1:
            return False
        if words[0].raw.startswith("((") and words[0].raw.endswith("))") and len(words) == 1:
            value = self.arith_int(words[0].raw[2:-2])
            return None if value is None else value != 0
        if first == "[[" or last == "]]":
            words = words[1 if first == "[[" else 0:len(words) - (1 if last == "]]" else 0)]
            operands = []
            for k, word in enumerate(words):
                fields = self.expand(word, split=False)
                pattern = None
                if k and word_text(words[k - 1]) in ("==", "=", "!=") and len(words[k - 1].parts) == 1:
                    pattern = self.pattern(word)
                operands.append(self.operand(fields[0] if fields else None, pattern))
            return shell_eval.test(operands, True, self.arith_int, self.is_set)
        if first in ("[", "test"):
            if first == "[":
                if last != "]":
                    return None
                words = words[:-1]
            fields = [f for w in words[1:] for f in self.expand(w, split=True)]
            if any(f.splice for f in fields):
                return None  # an unknown number of words
            return shell_eval.test([self.operand(f, None) for f in fields], False, self.arith_int, self.is_set)
        return None

    @staticmethod
    def operand(field: Any, pattern: Any) -> shell_eval.Operand:
        if field is None:
            return shell_eval.Operand("", False, pattern)
        if type(field.value) is str:
            return shell_eval.Operand(field.value, bool(field.value), pattern)
        known = any(type(a) is _Piece and a.text for a in field.pieces)
        return shell_eval.Operand(None, True if known else None, pattern)

    def is_set(self, name: str) -> bool | None:
        return True if name in self.env else None

    def pattern(self, word: _Word) -> re.Pattern | None:
        """The glob pattern a word is (quoted parts literal), or None when part of it is unknown."""
        segments = []
        for part in word.parts:
            kind, quoted = part[0], part[1]
            if kind == "lit":
                segments.append((part[2].text, not quoted))
                continue
            fields = self.expand(_Word([part], "", word.line, word.column), split=False)
            if not fields:
                continue
            if type(fields[0].value) is not str:
                return None
            segments.append((fields[0].value, not quoted))
        try:
            return shell_eval.glob_regex(segments)
        except re.error:
            return None

    # -- commands ----------------------------------------------------------------------------
    def _simple(self, node: Any) -> None:
        payload = self.lexer.payload
        fields: list = []
        temporary: dict = {}
        heredocs, target = [], None
        for child in node.children:
            if type(child) is tuple:
                kind = child[0]
                if kind == "WORD":
                    fields.extend(self.expand(payload[child[2]], split=True))
                elif kind == "ASSIGN":
                    assign = payload[child[2]]
                    if not fields:
                        temporary.setdefault(assign.name, self.env.get(assign.name, _MISSING))
                    self.assign(assign, self.text_of(assign.word))
            elif child.data == "array":
                assign = payload[child.children[0][2]]
                items: list = []
                for c in child.children[1:]:
                    if type(c) is tuple and c[0] == "WORD":
                        items.extend(self.expand(payload[c[2]], split=True))
                self.assign(assign, [f.value if f.splice else _make(f.pieces, f.raw) for f in items])
            elif child.data == "redirect":
                first = child.children[0]
                if first[0] == "HEREDOC":
                    heredocs.append(payload[first[2]])
                elif first[1].lstrip("0123456789") in (">", ">>", ">|"):
                    word = self.expand(payload[child.children[1][2]], split=False)
                    target = word[0].value if word else ""
        for doc in heredocs:
            self.heredocs.append(Heredoc(target, self.heredoc_text(doc), doc.line))
        command = fields[0].value if fields and type(fields[0].value) is str else None
        try:
            if command is not None:
                self.command(command, fields, heredocs)
            elif fields:
                self.launches.extend(self.detect(fields))
        finally:
            if fields and command not in DECLARERS:
                for name, old in temporary.items():
                    if old is _MISSING:
                        self.unset_var(name)
                    else:
                        self.set_var(name, old)

    def command(self, command: str, fields: list, heredocs: list) -> None:
        if command in self.functions:
            self.call(command, fields)
        elif command in ("exit", "return"):
            raise _Exit(command)
        elif command == "unset":
            for f in fields[1:]:
                if type(f.value) is str and not f.value.startswith("-"):
                    self.unset_var(f.value)
        elif command in ("read", "mapfile", "readarray", "getopts", "printf"):
            names = [f.value for f in fields[1:] if type(f.value) is str and NAME.fullmatch(f.value)]
            if command == "printf":
                names = [fields[k + 1].value for k in range(1, len(fields) - 1)
                         if fields[k].value == "-v" and type(fields[k + 1].value) is str]
            elif command == "getopts":
                names = names[1:2]
            for name in names:
                self.set_var(name, Unknown(f"set by `{command}` at line {fields[0].line}"))
        elif command in ("source", "."):
            self.sourced = True
        elif command == "shift":
            if self.args is not None:
                count = int(fields[1].value) if len(fields) > 1 and str(fields[1].value).isdigit() else 1
                self.args = (self.args[0][count:], self.args[1])
        elif command == "sbatch" and heredocs and _options(fields, 1, _SRUN_VALUED)[1] >= len(fields):
            self.launches.extend(self.job_script(fields, heredocs[-1]))  # no script file: stdin is the job
        else:
            self.launches.extend(self.detect(fields))

    def job_script(self, fields: list, doc: _Heredoc) -> list:
        """A heredoc given to sbatch: the job script, read with its `#SBATCH` header."""
        atoms = self.heredoc_atoms(doc)
        text = "".join(a.text if type(a) is _Piece else "?" for a in atoms)
        allocation = _allocation(text)
        options, _ = _options(fields, 1, _SRUN_VALUED)
        for long, short in _COUNTS:
            value = options.get(long, options.get(short) if short else None)
            if isinstance(value, str):
                allocation[long] = (value, fields[0].line, fields[0].column)
        return self.run_string(atoms, self.via, child=True, allocation=allocation)

    def heredoc_atoms(self, doc: _Heredoc) -> tuple:
        text, line, offset = (doc.body + ["", doc.line, 0])[:3]
        if not doc.expand or "$" not in text and "`" not in text and "\\" not in text:
            return (_Piece(text, line, 1),) if text else ()
        sub = _Lexer(text, origin=([0], [_Piece(text, line, 1)]), holes=self.lexer.holes)
        try:
            parts = sub.parts(0, len(text), stop=frozenset(), quoted=True)
        except _Problem:
            return (_Piece(text, line, 1),)
        fields = self.expand(_Word(parts, text, line, 1), split=False)
        return fields[0].pieces if fields else ()

    def heredoc_text(self, doc: _Heredoc) -> str:
        text = doc.body[0] if doc.body else ""
        if not doc.expand or "$" not in text:
            return text
        lexer = _Lexer(text)
        try:
            parts = lexer.parts(0, len(text), stop=frozenset(), quoted=True)
        except _Problem:
            return text
        out = []
        for part in parts:
            if part[0] == "lit":
                out.append(part[2].text)
                continue
            fields = self.expand(_Word([part], "", doc.line, 1), split=False)
            value = fields[0].value if fields else ""
            out.append(value if type(value) is str else "$" + (part[3] if part[0] == "var" else "?"))
        return "".join(out)

    def text_of(self, word: _Word | None) -> Any:
        if word is None or not word.parts:
            return _Text((), "")
        fields = self.expand(word, split=False)
        if not fields:
            return _Text((), word.raw)
        f = fields[0]
        if f.splice:
            return f.value
        return _make(f.pieces, word.raw)

    def assign(self, assign: _Assign, value: Any) -> None:
        old = self.env.get(assign.name, _MISSING)
        if assign.append and old is not _MISSING:
            if type(value) is list:
                value = (old if type(old) is list else [old]) + value
            elif isinstance(old, Unknown):
                if not isinstance(value, Unknown):
                    value = _make((_Hole(old, assign.line, assign.column),) + _atoms(value), old.reason)
            elif isinstance(value, Unknown):
                value = _make(_atoms(old) + (_Hole(value, assign.line, assign.column),), old.raw) \
                    if type(old) is not list else old + [value]
            elif type(old) is list:
                value = old + [value]
            else:
                value = _make(_atoms(old) + _atoms(value), old.raw + value.raw)
        if self.deciding:
            value = _decided(value, self.deciding)
        self.set_var(assign.name, value)

    # -- expansion ---------------------------------------------------------------------------
    def expand(self, word: _Word, split: bool) -> list:
        """The fields a word expands to, with positions; an unknown part makes its field Unknown
        and stays in it as a hole."""
        parts = word.parts
        if len(parts) == 1 and parts[0][0] == "lit":  # the common case: plain text
            piece = parts[0][2]
            return [_FieldP(piece.text, piece.line, piece.column, word.raw, (piece,), 0)]
        fields: list = []
        atoms: list = []
        state: list = [False, None, 0]  # a field is open, how it was written, its hole is a splice

        def close() -> None:
            if state[0]:
                fields.append(_field(atoms, state[1] or word.raw, word, state[2]))
                atoms.clear()
            state[0], state[1], state[2] = False, None, 0

        def add_hole(unknown: Unknown, where: tuple, splice: int) -> None:
            atoms.append(_Hole(unknown, *where, (), splice == 2))
            state[0] = True
            state[2] = splice

        def add(value: Any, quoted: bool, where: tuple, splice: int) -> None:
            kind = type(value)
            if kind in (_Text, _Partial) and len(atoms) + len(value.pieces if kind is _Text else value.atoms) > MAX_PARTS:
                # a value built up without bound (`A="$A$A"` in a loop) is not followed further
                value, kind = Unknown(f"a value of more than {MAX_PARTS:,} parts, past the bounds of what shardshift "
                                      "evaluates"), Unknown
            if kind is Unknown:
                add_hole(value, where, splice or int(not quoted))
            elif kind is list:
                for n, element in enumerate(value):
                    if n:
                        if split:
                            close()
                        else:
                            atoms.append(_Piece(" ", *where))
                    if type(element) is Unknown:
                        add_hole(element, where, 1)
                    else:
                        add(element, quoted, where, splice)
                        state[0] = state[0] or quoted
            elif quoted or not split:
                atoms.extend(_atoms(value))
                state[0] = True
                state[1] = state[1] or value.raw
            else:
                for a in _atoms(value):
                    if type(a) is _Hole:
                        atoms.append(a)
                        state[0], state[2] = True, 2 if a.items else 1
                        continue
                    text = a.text
                    if not _IFS.search(text):
                        if text:
                            atoms.append(a)
                            state[0] = True
                            state[1] = state[1] or (value.raw if text == value.raw else text)
                        continue
                    for m in _IFS_SPLIT.finditer(text):
                        chunk = m.group(0)
                        if chunk[0] in " \t\n":
                            close()
                        else:
                            atoms.append(_Piece(chunk, *at(a, m.start()), a.assumed))
                            state[0] = True
                            state[1] = state[1] or chunk

        for part in parts:
            kind = part[0]
            if kind == "lit":
                atoms.append(part[2])
                state[0] = True
                state[1] = state[1] or word.raw
            elif kind == "var":
                whole = part[3] in ("@", "*") or part[6] in ("@", "*")
                add(self.lookup(part), part[1], part[2], int(whole))
            elif kind == "hole":
                atoms.append(part[2])
                state[0] = True
                state[2] = 0 if part[1] else 2 if part[2].items else 1
            elif kind == "arith":
                add(self.arith(part[3], part[2]), part[1], part[2], 0)
            elif kind == "value":
                add(part[2], part[1], (word.line, word.column), 0)
            else:
                add(Unknown(part[3]), part[1], part[2], 0)
        close()
        if self.consulted is not None:
            for f in fields:
                self.consulted.extend(assumed_of(f))
        return fields

    def positional(self, name: str) -> Any:
        """A positional parameter: (value or _MISSING / _UNSET, what it is called)."""
        if self.args is None:
            what = {"@": "the script's arguments ($@)", "*": "the script's arguments ($*)",
                    "#": "the number of script arguments"}.get(name, f"script argument ${name}")
            return _MISSING, what
        values, exact = self.args
        what = f"argument ${name} of a function call"
        if name in ("@", "*"):
            return (list(values) if exact else _MISSING), "the arguments of a function call"
        if name == "#":
            return (_Text((_Piece(str(len(values)), 0, 0),), "") if exact else _MISSING), what
        index = int(name)
        if index <= len(values):
            return values[index - 1], what
        return (_UNSET if exact else _MISSING), what

    def lookup(self, part: tuple) -> Any:
        _, quoted, where, name, op, arg, index = part
        if name in SPECIAL or name.isdigit():
            if name.isdigit() and name != "0" or name in ("@", "*", "#"):
                value, what = self.positional(name)
                if op == "#len" and name in ("@", "*"):
                    name, op = "#", ""
                    value, what = self.positional("#")
            else:
                return Unknown(f"`${name}` at run time")
        else:
            value, what = self.env.get(name, _MISSING), f"environment variable {name}"
        if index is not None:
            if value is _MISSING:
                return Unknown(what)
            if isinstance(value, Unknown) or type(value) is _Partial and index not in ("@", "*"):
                return value if isinstance(value, Unknown) else value.unknown
            elements = value if type(value) is list else [] if value is _UNSET else [value]
            if index in ("@", "*"):
                if op == "#len":
                    if any(isinstance(e, Unknown) or _is_items(e) for e in elements):
                        return Unknown(f"length of {name}, which holds unknown items")
                    stand_in = _stand_in_hosts(elements)
                    if stand_in is not None:
                        return Unknown(f"length of {name}, whose items are stand-ins to be replaced ({stand_in})")
                    return _Text((_Piece(str(len(elements)), *where),), "")
                return elements
            if index.isdigit():
                k = int(index)
                if any(_is_items(e) for e in elements[:k + 1]):
                    return Unknown(f"item {k} of {name}, which may hold more items before it")
                return elements[k] if k < len(elements) else _Text((), "")
            return Unknown(f"`${{{name}[{index}]}}` (not evaluated)")
        if type(value) is list:
            value = value[0] if value else _Text((), "")
        shown = arg[1] if arg else ""
        if op == "":
            if value is _MISSING:
                return Unknown(what)
            if type(value) is _Text and value.pieces and value.pieces[0].line == 0 and value.pieces[0].assumed:
                return _Text(tuple(p._replace(line=where[0], column=where[1]) for p in value.pieces), value.raw)
            return _Text((), "") if value is _UNSET else value
        if op == "#len":
            if value is _UNSET:
                return _Text((_Piece("0", *where),), "")
            if type(value) is not _Text:
                return Unknown(f"length of {what if value is _MISSING else name}")
            return _Text((_Piece(str(len(value.value)), *where),), "")
        if op in (":-", "-", ":=", "=", ":+", "+", ":?", "?"):
            colon = op.startswith(":")
            if value is _MISSING:
                if op in (":+", "+"):
                    return Unknown(f"{what} (`{shown}` when set)")
                if op in (":?", "?"):
                    return Unknown(f"{what} (required)")
                if name in SPECIAL or name.isdigit():  # a script argument: whoever runs it decides
                    return Unknown(f"{what} (default {shown} when unset)")
                # the script's own default: a value, marked as one the environment may override
                default = _assume(self.text_of(_Word(arg[0], arg[1], *where)) if arg else _Text((), ""), name, where)
                if op in (":=", "="):
                    self.set_var(name, default)
                return default
            if value is _UNSET:
                empty: bool | None = True
            elif isinstance(value, Unknown):
                empty = None
            else:
                nonempty = _nonempty(value)
                empty = None if nonempty is None else not nonempty
            absent = value is _UNSET or (colon and empty is True)
            maybe_absent = colon and empty is None
            if op in (":+", "+"):
                if absent:
                    return _Text((), "")
                if maybe_absent:
                    reason = value.reason if isinstance(value, Unknown) else value.unknown.reason
                    return Unknown(f"{reason} (`{shown}` when set and not empty)")
                return self.text_of(_Word(arg[0], arg[1], *where))
            if op in (":?", "?"):
                return Unknown(f"{what} (required)") if absent else value
            if absent:
                default = self.text_of(_Word(arg[0], arg[1], *where))
                if op in (":=", "=") and name not in SPECIAL:
                    self.set_var(name, default)
                return default
            if maybe_absent and isinstance(value, Unknown):
                return Unknown(f"{value.reason} (default {shown} when empty)")
            if maybe_absent:
                return Unknown(f"{value.unknown.reason} (default {shown} when empty)")
            return _Text((), "") if value is _UNSET else value
        if isinstance(value, Unknown):
            return value
        return Unknown(f"`${{{name}{op}{shown}}}` (not evaluated)")

    def arith(self, expr: str, where: tuple) -> Any:
        reasons: list = []
        assumed: list = []
        if _ARITH_EXPANSION.search(expr):  # `$(( ${X:-4} * 2 ))`: bash expands parameters first
            sub = _Lexer(expr, origin=([0], [_Piece(expr, where[0], where[1] + 3)]))
            try:
                parts = sub.parts(0, len(expr), stop=frozenset(), quoted=True)
            except _Problem:
                parts = None
            fields = self.expand(_Word(parts, expr, *where), split=False) if parts is not None else []
            if fields and type(fields[0].value) is str:
                expr = fields[0].value
                assumed.extend(assumed_of(fields[0]))
            elif fields and isinstance(fields[0].value, Unknown):
                return Unknown(f"`$(({expr.strip()}))` with {fields[0].value.reason}")
        value = self.arith_int(expr, reasons, assumed)
        if value is None:
            shown = expr.strip()
            return Unknown(f"`$(({shown}))` with {reasons[0]}" if reasons else f"`$(({shown}))` (not evaluated)")
        return _Text((_Piece(str(value), *where, tuple(dict.fromkeys(assumed))),), str(value))

    def arith_int(self, expr: str, reasons: list | None = None, assumed: list | None = None) -> int | None:
        """The value of an arithmetic expression, or None (with why in `reasons`); the script
        defaults the values it uses stand on are added to `assumed`."""
        reasons = [] if reasons is None else reasons

        def resolve(name: str) -> str:
            if name.startswith("__arg_"):
                value, what = self.positional(name[6:])
            else:
                value, what = self.env.get(name, _MISSING), f"environment variable {name}"
            if type(value) is list:
                value = value[0] if value else _UNSET
            if value is _UNSET:
                return ""
            if value is _MISSING:
                reasons.append(what)
            elif isinstance(value, Unknown):
                reasons.append(value.reason)
            elif type(value) is _Partial:
                reasons.append(value.unknown.reason)
            else:
                if assumed is not None:
                    for piece in value.pieces:
                        assumed.extend(piece.assumed)
                text = value.value.strip()
                if not text or _INTEGER.fullmatch(text):
                    return text
                try:  # a value that is itself an expression
                    return str(shell_eval.arithmetic(text, resolve, 1))
                except (shell_eval.NotEvaluated, ValueError, RecursionError):
                    if not reasons:
                        reasons.append(f"{name} is not a number ({text!r})")
            raise shell_eval.NotEvaluated(name)

        source = _ARITH_NAMES.sub(_arith_name, expr)
        if not source.strip():
            return 0
        try:
            return shell_eval.arithmetic(source, resolve)
        except (shell_eval.NotEvaluated, ValueError, RecursionError, OverflowError, KeyError):
            return None

    # -- launchers ---------------------------------------------------------------------------
    def run_string(self, atoms: Any, via: tuple, child: bool, allocation: dict | None = None) -> list:
        """Reads text again as a script (eval: in these variables; `bash -c` and job scripts: on a
        copy of them) and gives the launches found in it."""
        if self.depth >= 8:
            return []
        text, origin, holes = _source_of(atoms)
        if not text.strip():
            return []
        lexer = _Lexer(text, origin=origin, holes=holes, placeholders=True)
        lexer.run()
        tree, _ = _parse(lexer)
        if tree is None:
            return []
        if child:
            walker = _Walker(lexer, dict(self.env), via, self.conditions,
                             self.allocation if allocation is None else allocation, self.depth + 1)
            if allocation:
                _seed(walker.env, allocation)
            try:
                walker.top(tree)
            except RecursionError:
                pass
            self.heredocs.extend(walker.heredocs)
            return walker.launches
        saved = self.lexer, self.via
        self.lexer, self.via = lexer, via
        self.depth += 1
        start = len(self.launches)
        try:
            self.walk(tree)
        finally:
            self.lexer, self.via = saved
            self.depth -= 1
        found = self.launches[start:]
        del self.launches[start:]
        return found

    def detect(self, fields: list, via: tuple | None = None, tries: int = 0) -> list:
        """The launches a command starts (through wrappers, srun, eval, bash -c)."""
        via = self.via if via is None else via
        i = _skip_wrappers(fields)
        if i >= len(fields):
            return []
        head = fields[i]
        name = _name_of(head)
        if name is None:
            return self.unknown_program(fields, i, via, tries)
        if name == "eval":
            atoms: list = []
            for f in fields[i + 1:]:
                if atoms:
                    atoms.append(_Piece(" ", f.line, f.column))
                atoms.extend(f.pieces)
            return self.run_string(atoms, via, child=False)
        if name in _SHELLS:
            string = _dash_c(fields, i)
            return self.run_string(string.pieces, via, child=True) if string is not None else []
        if name == "srun":
            options, j = _options(fields, i + 1, _SRUN_VALUED)
            _inherit(options, self.allocation)
            inner_via = via + (("srun", options),)
            inner = self.detect(fields[j:], inner_via, tries)
            if inner:
                return [_srun_starts_python(launch, inner_via, options, via) for launch in inner]
            return self.launch("srun", options, fields, j, head, via, tries)
        if name == "torchrun":
            options, j = _options(fields, i + 1, _TORCHRUN_VALUED)
            return self.launch("torchrun", options, fields, j, head, via, tries)
        if name == "deepspeed":
            options, j = _options(fields, i + 1, _DEEPSPEED_VALUED)
            if options.get("no_python") is True:
                # `deepspeed --no_python bash -c "$CMD"`: the launcher runs the program as given on
                # each rank, so a python started inside is the launch, with the launcher's options
                inner_via = via + (("deepspeed", options),)
                inner = self.detect(fields[j:], inner_via, tries)
                if inner:
                    return [_srun_starts_python(launch, inner_via, options, via, "deepspeed") for launch in inner]
            return self.launch("deepspeed", options, fields, j, head, via, tries)
        if _PYTHON.fullmatch(name):
            j = i + 1
            while j < len(fields) and type(fields[j].value) is str and fields[j].value.startswith("-") \
                    and fields[j].value != "-":
                flag = fields[j].value
                if flag == "-m" and j + 1 < len(fields):
                    module = fields[j + 1].value
                    if module in _TORCHRUN_MODULES:
                        options, k = _options(fields, j + 2, _TORCHRUN_VALUED)
                        return self.launch(f"python -m {module}", options, fields, k, head, via, tries)
                    return self.launch("python", {"m": module}, fields, j + 1, head, via, tries)
                if flag == "-c":
                    return []
                j += 2 if flag in _PYTHON_VALUED else 1
            return self.launch("python", {}, fields, j, head, via, tries)
        if name in _OTHER_LAUNCHERS and name not in self.functions:
            # accelerate launch, mpirun, sbatch and the frameworks' own tools (formats/launch/launchers.py)
            from shardshift.formats.launch.launchers import detect_other

            return detect_other(self, name, fields, i, head, via, tries)
        if self.sourced and name not in self.functions and name not in _NOT_WRAPPERS and i + 1 < len(fields) \
                and _is_launcher(_name_of(fields[i + 1])):
            # a function from a file the script sources (not read here) that runs its arguments
            return self.detect(fields[i + 1:], via + ((name, {}),), tries)
        return []

    def unknown_program(self, fields: list, i: int, via: tuple, tries: int) -> list:
        head = fields[i]
        if head.splice and head.pieces[0].alts and tries < 2:
            return self.alternatives(fields, i, lambda f: self.detect(f, via, tries + 1), True)
        unknowns = []
        while i < len(fields) and _name_of(fields[i]) is None:
            unknowns.append(fields[i].value)
            i += 1
        if i >= len(fields):
            return []
        name = _name_of(fields[i])
        if _is_launcher(name) or name in _SHELLS:
            return self.detect(fields[i:], via + (("?", {"?": unknowns}),), tries)
        if name.endswith(".py"):
            return self.launch("?", {"?": unknowns}, fields, i, head, via, tries)
        return []

    def alternatives(self, fields: list, i: int, then: Any, head: bool) -> list:
        """Tries each text a hole may hold (one per branch of the `if`/`case` that set it). A launch
        that every text gives does not depend on the hole, and is given once."""
        hole = fields[i].pieces[0]
        saved = self.conditions
        results = []
        for atoms, label in hole.alts[:8]:
            self.conditions = saved + (label,)
            try:
                results.append(then(fields[:i] + self.alternative_fields(atoms, fields[i], head) + fields[i + 1:]))
            finally:
                self.conditions = saved
        out: list = []
        bare = [[launch._replace(conditions=(), variables={}) for launch in found] for found in results]
        for k, found in enumerate(results):
            for launch, key in zip(found, bare[k]):
                if any(o._replace(conditions=(), variables={}) == key for o in out):
                    continue
                if all(key in keys for keys in bare):
                    launch = launch._replace(conditions=launch.conditions[:len(saved)] +
                                             launch.conditions[len(saved) + 1:])
                out.append(launch)
        return out

    def alternative_fields(self, atoms: tuple, field: _FieldP, head: bool) -> list:
        """The words one text of a hole gives where the hole stood: split, or (in text read again)
        read as shell words; a command separator in it ends the command before (when the hole is
        the program) or after it."""
        if self.lexer.origin is None:
            return self.expand(_Word([("value", False, _make(atoms, field.raw))], field.raw, field.line,
                                     field.column), split=True)
        text, origin, holes = _source_of(atoms)
        sub = _Lexer(text, origin=origin, holes=holes)
        sub.run()
        if sub.problems:
            return [field]
        words: list = []
        for kind, _, pos in sub.tokens:
            if kind in ("SEMI", "NEWLINE", "AND_IF", "OR_IF", "PIPE", "AMP"):
                if not head:
                    break
                words = []
            elif kind == "WORD":
                words.append(sub.payload[pos])
        return [f for word in words for f in self.expand(word, True)]

    def launch(self, launcher: str, options: dict, fields: list, j: int, head: _FieldP, via: tuple,
               tries: int) -> list:
        if j >= len(fields):
            return []
        script = fields[j]
        if script.splice and script.pieces[0].alts and tries < 2:  # read the command again with each text
            return self.alternatives(fields, j, lambda f: self.detect(f, via, tries + 1), False)
        variables = {k: _public(v) for k, v in self.env.items()}
        name = _name_of(script)
        args = _pair(fields[j + 1:])
        if self.deciding:
            args = [arg._replace(assumed=_decided_assumptions(arg.assumed, arg.line, self.deciding)) for arg in args]
        return [Launch(launcher, options, script.value, args, head.line, head.column, via,
                       variables, name, self.conditions, _options_assumed(fields, head, j), tail_of(script))]


_INTEGER = re.compile(r"-?[0-9]+")
_ARITH_EXPANSION = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*[^A-Za-z0-9_}]")
_ARITH_NAMES = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@#*])\}|\$([A-Za-z_][A-Za-z0-9_]*|[0-9]|[#@*])")


def _arith_name(m: re.Match) -> str:
    name = m.group(1) or m.group(2)
    return name if NAME.fullmatch(name) else "__arg_" + name if name.isdigit() else "__arg_" + name


def _decided_assumptions(assumed: tuple, line: int, deciding: tuple) -> tuple:
    """`assumed` and the defaults that decided a branch holding `line`."""
    for used, first, last in deciding:
        if first <= line <= last:
            assumed = assumed + tuple(a for a in used if a not in assumed)
    return assumed


def _decided(value: Any, deciding: tuple) -> Any:
    """A value assigned in a branch that script defaults decided: the text written in the branch
    stands on those defaults too."""
    kind = type(value)
    if kind is list:
        return [_decided(v, deciding) for v in value]
    if kind is _Text:
        return _Text(tuple(p._replace(assumed=_decided_assumptions(p.assumed, p.line, deciding))
                           for p in value.pieces), value.raw)
    if kind is _Partial:
        return _Partial(tuple(a._replace(assumed=_decided_assumptions(a.assumed, a.line, deciding))
                              if type(a) is _Piece else a for a in value.atoms), value.raw, value.unknown)
    return value


def _options_assumed(fields: list, head: Any, end: int) -> dict:
    """{option name: the script defaults its value stands on} for a launcher's options (the words
    between the launcher `head` and `end`)."""
    start = next((k for k, f in enumerate(fields) if f is head), end)
    out: dict = {}
    name = None
    for f in fields[start + 1:end]:
        value = f.value
        if type(value) is str and value.startswith("-"):
            name, eq, _ = value.lstrip("-").partition("=")
            name = name.replace("-", "_") if name not in _SRUN_VALUED else name
            if not eq:
                continue
        elif type(value) is not str and f.pieces and type(f.pieces[0]) is _Piece and \
                f.pieces[0].text.startswith("-") and "=" in f.pieces[0].text:
            name = f.pieces[0].text.lstrip("-").split("=", 1)[0].replace("-", "_")
        assumed = assumed_of(f)
        if assumed and name is not None:
            out[name] = assumed
        name = None
    return out


def _assume(value: Any, name: str, where: tuple) -> Any:
    """A default of `${name:-default}` (written at `where`), its pieces marked as the script's
    default for `name`, which the environment may override."""
    if type(value) is _Text:
        if not value.pieces:
            return value
        shown = value.value
        assumption = (name, shown, *where)
        return _Text(tuple(p._replace(assumed=p.assumed + (assumption,)) for p in value.pieces), value.raw)
    if type(value) is _Partial:
        shown = "".join(a.text if type(a) is _Piece else "?" for a in value.atoms)
        assumption = (name, shown, *where)
        return _Partial(tuple(a._replace(assumed=a.assumed + (assumption,)) if type(a) is _Piece else a
                              for a in value.atoms), value.raw, value.unknown)
    return value


# -- entry points ----------------------------------------------------------------------------------
def read_launch_script(text: str, path: str = "<script>") -> LaunchScript:
    """Reads a launch script without running anything: its variables, launcher lines, heredocs and
    syntax problems (message, line, column). Never raises on any text."""
    lexer = _Lexer(text)
    lexer.run()
    tree, problems = _parse(lexer)
    allocation = _allocation(text)
    walker = _Walker(lexer, allocation=allocation)
    _seed(walker.env, allocation)
    if tree is not None:
        try:
            walker.top(tree)
        except RecursionError:
            problems.append(("the script nests too deeply to read", 1, 1))
    problems = sorted(lexer.problems + problems, key=lambda p: (p[1], p[2]))
    variables = {k: _public(v) for k, v in walker.env.items()}
    return LaunchScript(path, variables, walker.launches, walker.heredocs, problems, walker.branches)


def launch_variants(text: str, script: LaunchScript, launch: Launch, limit: int = 8) -> list:
    """The launch read once per configuration an undecided `if`/`case` chooses, when its arguments
    (or its launcher's options) hold values those branches set: [(label, Launch)], the label
    naming the branch chosen at each block, in the script's order (("when `[ "$M" = 13B ]`, line 5",)). Only the branches that run to their end
    and set variables count (an `if` without `else` chooses nothing of its own: its missing else
    is no configuration); a block nested in a chosen branch is chosen in turn. Empty when the
    launch depends on no such block, or when there would be more than `limit` configurations."""
    import itertools

    branches = dict(script.branches or {})
    if not branches:
        return []

    def depends(found: Launch, force: dict) -> list:
        reasons = [u.reason for u in _unknowns_of(found)]
        if not reasons:
            return []
        return sorted(key for key, block in branches.items()
                      if key not in force and any(block.desc in r for r in reasons))

    def read_again(force: dict) -> Launch | None:
        lexer = _Lexer(text)
        lexer.run()
        tree, _ = _parse(lexer)
        if tree is None:
            return None
        allocation = _allocation(text)
        walker = _Walker(lexer, allocation=allocation)
        walker.force = force
        _seed(walker.env, allocation)
        try:
            walker.top(tree)
        except RecursionError:
            return None
        for key, block in walker.branches.items():
            branches.setdefault(key, block)
        chosen = {label for k in force for label, _ in branches[k].choices}

        def same(x: Launch) -> tuple:  # the launch as the first reading found it, but for the chosen values
            return (x.line, x.column, x.launcher, _name_of_script(x), tuple(c for c in x.conditions if c not in chosen))

        return next((x for x in walker.launches if same(x) == same(launch)), None)

    found: list = [({}, launch)]
    for _ in range(4):  # nesting depth followed
        grown, more = [], False
        for force, one in found:
            keys = depends(one, force)
            if not keys:
                grown.append((force, one))
                continue
            more = True
            for combo in itertools.product(*(branches[k].choices for k in keys)):
                grown.append(({**force, **{k: label for k, (label, _) in zip(keys, combo)}}, None))
                if len(grown) > limit:
                    return []
        if not more:
            break
        found = []
        for force, one in grown:
            one = one if one is not None else read_again(force)
            if one is not None:
                found.append((force, one))
    if len(found) < 2:
        return []
    shorts = {label: short for block in branches.values() for label, short in block.choices}
    return [(tuple(shorts[force[k]] for k in sorted(force)), one) for force, one in found]


def _name_of_script(launch: Launch) -> Any:
    return launch.script if type(launch.script) is str else launch.script_name


def _unknowns_of(launch: Launch) -> list:
    """Every Unknown among a launch's arguments, its launcher's options and its entry script."""
    out: list = []

    def visit(value: Any) -> None:
        if isinstance(value, Unknown):
            out.append(value)
        elif isinstance(value, (list, tuple)):
            for v in value:
                visit(v)

    for arg in launch.args:
        visit(arg.value)
    for value in launch.options.values():
        visit(value)
    visit(launch.script)
    return out


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


MAX_PARTS = 4096  # pieces of one expanded word: real launch lines join a few dozen


# Items that stand for the machines a user fills in: the unspecified address, `x.x.x.x`, `<node-ip>`,
# "your..."; an address listed twice is no list of real machines either.
_STAND_IN_HOST = re.compile(r"(?i)^(?:0\.0\.0\.0|x+(?:\.x+)+|.*<[^>]*>.*|.*\b(?:your|changeme|todo|xxx)\w*.*)$")
_ADDRESS = re.compile(r"^\d{1,3}(?:\.\d{1,3}){3}$")


def _stand_in_hosts(elements: list) -> str | None:
    """Why the items of an array are stand-ins rather than real hosts, or None: counting them
    would count machines that the user has yet to name."""
    texts = [e.value for e in elements if type(e) is _Text]
    if len(texts) != len(elements) or not texts:
        return None
    odd = next((t for t in texts if _STAND_IN_HOST.match(t)), None)
    if odd is not None:
        return f"{odd!r}"
    addresses = [t for t in texts if _ADDRESS.match(t)]
    if len(addresses) != len(set(addresses)):
        return "an address listed more than once"
    return None
