"""Where the cursor is in a (possibly broken, half-typed) file: the key or flag under it and the
block around it, for hover and completion. Forgiving scanners, one per syntax; none raises and
none needs the file to parse.

Positions are 0-based lines and code-point columns (the language server converts to UTF-16).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

# --- what the scanners return ---------------------------------------------------------------


@dataclass(frozen=True)
class Token:
    """A key or flag under the cursor: its path (enclosing keys, then its own name) and span."""

    path: tuple[str, ...]
    line: int
    start: int
    end: int
    value: bool = False  # the cursor is on the value of the key at `path`, not on the key


@dataclass
class Place:
    """Where a completion goes: below `parent`, at a key (or flag) or at the value of `key`."""

    parent: tuple[str, ...]
    at_value: bool = False
    key: str = ""  # at a value: whose value
    prefix: str = ""  # what is typed of the word so far
    quote: str = ""  # JSON: the quote the user opened ("" none)
    closed: bool = False  # JSON: that quote is already closed after the cursor
    present: set[str] = field(default_factory=set)  # keys already in the block


def offset_of(text: str, line: int, character: int) -> int:
    """The offset of a position (clamped into the text)."""
    if line < 0:
        return 0
    pos = 0
    for _ in range(line):
        nl = text.find("\n", pos)
        if nl < 0:
            return len(text)
        pos = nl + 1
    end = text.find("\n", pos)
    end = len(text) if end < 0 else end
    return min(pos + max(character, 0), end)


def position_of(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset)
    return line, offset - (text.rfind("\n", 0, offset) + 1)


def lines_of(text: str) -> list[str]:
    return text.split("\n")


def _line_at(text: str, line: int) -> tuple[list[str], str] | None:
    """The text's lines and line `line` of them, or None when the position is past the text."""
    lines = lines_of(text)
    return (lines, lines[line]) if 0 <= line < len(lines) else None


# --- JSON (with comments, hjson-ish bare words) -----------------------------------------------

_JSON_TOKEN = re.compile(
    r'"(?:[^"\\\n]|\\.)*"?'          # a string, possibly unterminated at the line end
    r"|'(?:[^'\\\n]|\\.)*'?"
    r"|//[^\n]*|#[^\n]*|/\*[\s\S]*?(?:\*/|$)"  # comments
    r"|[{}\[\]:,]"
    r"|[^\s{}\[\]:,\"']+"           # bare words: numbers, true, unquoted keys
)


@dataclass(slots=True)
class _JTok:
    kind: str  # "str", "word", "punct"
    text: str
    start: int
    end: int
    frame: int = -1  # the id of the object it is a member key of (keys only)
    key: bool = False
    path: tuple[str, ...] = ()  # for keys: the path of the enclosing object


def _json_tokens(text: str) -> list[_JTok]:
    out: list[_JTok] = []
    for m in _JSON_TOKEN.finditer(text):
        s = m.group()
        if s.startswith(("//", "/*", "#")):
            continue
        kind = "str" if s[0] in "\"'" else "punct" if s in "{}[]:," else "word"
        out.append(_JTok(kind, s, m.start(), m.end()))
    return out


def _unquote(token: _JTok) -> str:
    s = token.text
    if token.kind != "str":
        return s
    q = s[0]
    body = s[1:-1] if len(s) > 1 and s.endswith(q) else s[1:]
    return body.replace('\\"', '"').replace("\\\\", "\\")


def _json_walk(tokens: list[_JTok]) -> list[tuple]:
    """The stack before every token (and one after the last): frames (kind, id, path of the frame)."""
    stack: list[tuple[str, int, tuple[str, ...]]] = []
    pending: str | None = None  # the key whose value comes next
    states: list[tuple] = []
    next_id = 0
    for i, tok in enumerate(tokens):
        states.append(tuple(stack))
        top = stack[-1] if stack else None
        if tok.kind == "punct":
            if tok.text in "{[":
                base = top[2] if top else ()
                if top is not None and top[0] == "{":
                    name = pending if pending is not None else "?"
                    path = base + (name,)
                elif top is not None:
                    path = base  # an array item: the array's own path (items share it)
                else:
                    path = ()
                stack.append((tok.text, next_id, path))
                next_id += 1
                pending = None
            elif tok.text in "}]":
                # forgiving: pop to the matching opener if there is one
                want = "{" if tok.text == "}" else "["
                for j in range(len(stack) - 1, -1, -1):
                    if stack[j][0] == want:
                        del stack[j:]
                        break
                pending = None
            elif tok.text == ",":
                pending = None
            continue
        # a string or a word: a key when ':' follows inside an object
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if top is not None and top[0] == "{" and nxt is not None and nxt.text == ":" and nxt.kind == "punct":
            tok.key = True
            tok.frame = top[1]
            tok.path = top[2]
            pending = _unquote(tok)
    states.append(tuple(stack))
    return states


@dataclass
class JsonView:
    tokens: list[_JTok]
    states: list[tuple]


@lru_cache(maxsize=4)
def json_view(text: str) -> JsonView:
    """The tokens of a JSON text and the stack of objects before each (cached: hover and completion
    of one keystroke read the same text)."""
    tokens = _json_tokens(text)
    return JsonView(tokens, _json_walk(tokens))


def _at(tokens: list[_JTok], offset: int) -> int:
    """The index of the token that holds `offset` (its end counts), or -1."""
    lo, hi = 0, len(tokens)
    while lo < hi:
        mid = (lo + hi) // 2
        if tokens[mid].end < offset:
            lo = mid + 1
        else:
            hi = mid
    if lo < len(tokens) and tokens[lo].start <= offset <= tokens[lo].end:
        return lo
    return -1


def _before(tokens: list[_JTok], offset: int) -> int:
    """The index of the last token that ends at or before `offset` (-1 when none)."""
    lo, hi = 0, len(tokens)
    while lo < hi:
        mid = (lo + hi) // 2
        if tokens[mid].end <= offset:
            lo = mid + 1
        else:
            hi = mid
    return lo - 1


def json_token(text: str, line: int, character: int) -> Token | None:
    view = json_view(text)
    offset = offset_of(text, line, character)
    i = _at(view.tokens, offset)
    if i < 0 or view.tokens[i].kind == "punct":
        return None
    tok = view.tokens[i]
    l0, c0 = position_of(text, tok.start)
    l1, c1 = position_of(text, tok.end)
    if l1 != l0:
        return None
    if tok.key:
        return Token(tok.path + (_unquote(tok),), l0, c0, c1)
    # a value: the key it belongs to (`"key": value`)
    if i >= 2 and view.tokens[i - 1].text == ":" and view.tokens[i - 2].key:
        key = view.tokens[i - 2]
        return Token(key.path + (_unquote(key),), l0, c0, c1, value=True)
    return None


def json_place(text: str, line: int, character: int) -> Place | None:
    """Where a completion at the cursor goes in a JSON text."""
    view = json_view(text)
    tokens = view.tokens
    offset = offset_of(text, line, character)
    i = _at(tokens, offset)
    current = tokens[i] if i >= 0 and tokens[i].kind != "punct" and tokens[i].start < offset else None
    if current is not None:
        prev_i = i - 1
        stack = view.states[i]
    else:
        prev_i = _before(tokens, offset)
        stack = view.states[prev_i + 1]
    if not stack or stack[-1][0] != "{":
        if stack and stack[-1][0] == "[" and prev_i >= 0:
            return None
        if stack:
            return None
    prev = tokens[prev_i] if prev_i >= 0 else None
    prefix, quote, closed = "", "", False
    if current is not None:
        typed = text[current.start:offset]
        if current.kind == "str":
            quote = typed[0]
            prefix = typed[1:]
            closed = len(current.text) > 1 and current.text.endswith(quote) and current.end > offset
        else:
            prefix = typed
    if not stack:
        return None
    frame = stack[-1]
    present = {_unquote(t) for t in tokens if t.key and t.frame == frame[1] and t is not current}
    if prev is not None and prev.kind == "punct" and prev.text == ":":
        key_tok = tokens[prev_i - 1] if prev_i >= 1 else None
        if key_tok is None or not key_tok.key:
            return None
        return Place(frame[2], at_value=True, key=_unquote(key_tok), prefix=prefix, quote=quote, closed=closed,
                     present=present)
    if prev is None or (prev.kind == "punct" and prev.text in "{,"):
        return Place(frame[2], prefix=prefix, quote=quote, closed=closed, present=present)
    # a comma not typed yet: after a value (`"a": 1 "|`) or a nested block (`"a": {...} "|`)
    after_value = prev.kind != "punct" and prev_i >= 1 and tokens[prev_i - 1].text == ":"
    if after_value or (prev.kind == "punct" and prev.text in "}]"):
        return Place(frame[2], prefix=prefix, quote=quote, closed=closed, present=present)
    return None


# --- YAML (indentation) -----------------------------------------------------------------------

_YAML_KEY = re.compile(r"^(?P<indent>[ \t]*)(?P<dash>-[ \t]+)?(?P<key>[^\s:#'\"][^:#]*?|\"[^\"]*\"|'[^']*')[ \t]*:(?=\s|$)")


def _yaml_key(line: str) -> tuple[int, str, int, int] | None:
    """(indent of the key, key, start column, end column) of a `key:` line."""
    m = _YAML_KEY.match(line)
    if m is None:
        return None
    key = m.group("key").strip()
    start = m.start("key")
    end = start + len(m.group("key").rstrip())
    if key[:1] in "\"'":
        key = key[1:-1]
    return start, key, start, end


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _blank(line: str) -> bool:
    s = line.strip()
    return not s or s.startswith("#") or s in ("---", "...")


def _yaml_parents(lines: list[str], line: int, indent: int) -> tuple[str, ...]:
    """The keys of the blocks that hold a line of indentation `indent` (outermost first)."""
    path: list[str] = []
    level = indent
    for j in range(min(line, len(lines)) - 1, -1, -1):
        if level <= 0:
            break
        raw = lines[j]
        if _blank(raw):
            continue
        ind = _indent(raw)
        if ind >= level:
            continue
        found = _yaml_key(raw)
        if found is not None and found[0] < level:
            rest = raw[found[3]:].split(":", 1)[1] if ":" in raw[found[3]:] else ""
            if rest.split("#", 1)[0].strip() in ("", "|", ">", "|-", ">-"):
                path.append(found[1])
                level = found[0]
                continue
        level = ind
    return tuple(reversed(path))


def yaml_token(text: str, line: int, character: int) -> Token | None:
    at = _line_at(text, line)
    if at is None:
        return None
    lines, raw = at
    found = _yaml_key(raw)
    if found is None:
        return None
    col, key, start, end = found
    parents = _yaml_parents(lines, line, col)
    if start <= character <= end:
        return Token(parents + (key,), line, start, end)
    return _value_token(raw, raw.find(":", end), parents + (key,), line, character)


def _value_token(raw: str, separator: int, path: tuple, line: int, character: int) -> Token | None:
    """The value after the `:` or `=` at `separator` (its trailing ` # comment` left out), when the
    cursor is on it."""
    if separator < 0:
        return None
    value = raw[separator + 1:].split(" #", 1)[0]
    vstart = separator + 1 + (len(value) - len(value.lstrip()))
    vend = separator + 1 + len(value.rstrip())
    if vstart <= character <= vend and vend > vstart:
        return Token(path, line, vstart, vend, value=True)
    return None


def yaml_place(text: str, line: int, character: int) -> Place | None:
    at = _line_at(text, line)
    if at is None:
        return None
    lines, raw = at
    character = min(character, len(raw))
    head = raw[:character]
    found = _yaml_key(raw)
    if found is not None and character > found[3]:
        # after `key:`: a value
        colon = raw.find(":", found[3])
        if colon >= 0 and character > colon:
            typed = raw[colon + 1:character].lstrip()
            quote = typed[:1] if typed[:1] in "\"'" else ""
            return Place(_yaml_parents(lines, line, found[0]), at_value=True, key=found[1],
                         prefix=typed[len(quote):], quote=quote)
    if "#" in head:
        return None
    stripped = head.lstrip(" \t")
    if ":" in stripped:
        return None
    if stripped.startswith("- "):
        return None
    indent = len(head) - len(stripped)
    prefix = stripped
    if not re.fullmatch(r"[\w.\-]*", prefix):
        return None
    parents = _yaml_parents(lines, line, indent)
    present = _yaml_siblings(lines, line, indent)
    return Place(parents, prefix=prefix, present=present)


def _yaml_siblings(lines: list[str], line: int, indent: int) -> set[str]:
    """Keys at `indent` in the block that holds `line`."""
    out: set[str] = set()
    for step in (-1, 1):
        j = line + step
        while 0 <= j < len(lines):
            raw = lines[j]
            if not _blank(raw):
                ind = _indent(raw)
                if ind < indent:
                    break
                found = _yaml_key(raw)
                if found is not None and found[0] == indent:
                    out.add(found[1])
            j += step
    return out


# --- TOML ([section] headers) -----------------------------------------------------------------

_TOML_HEADER = re.compile(r"^[ \t]*\[\[?[ \t]*(?P<name>[^\]]*?)[ \t]*\]?\]?[ \t]*(?:#.*)?$")
_TOML_KEY = re.compile(r"^(?P<indent>[ \t]*)(?P<key>[A-Za-z0-9_\-\"'][A-Za-z0-9_.\-\"' ]*?)[ \t]*=")


def _toml_section(lines: list[str], line: int) -> str:
    for j in range(min(line, len(lines) - 1), -1, -1):
        m = _TOML_HEADER.match(lines[j])
        if m is not None and lines[j].lstrip().startswith("["):
            return m.group("name").strip().replace('"', "").replace("'", "")
    return ""


def _split_dotted(key: str) -> tuple[str, ...]:
    return tuple(p.strip().strip("\"'") for p in key.split(".") if p.strip())


def toml_token(text: str, line: int, character: int) -> Token | None:
    at = _line_at(text, line)
    if at is None:
        return None
    lines, raw = at
    if raw.lstrip().startswith("["):
        m = _TOML_HEADER.match(raw)
        if m is None:
            return None
        name = m.group("name").strip()
        start = m.start("name")
        end = start + len(name)
        if start <= character <= end and name:
            return Token(_split_dotted(name), line, start, end)
        return None
    m = _TOML_KEY.match(raw)
    if m is None:
        return None
    key = m.group("key").strip()
    start = m.start("key")
    end = start + len(key)
    section = _split_dotted(_toml_section(lines, line - 1)) if line > 0 else ()
    path = section + _split_dotted(key)
    if start <= character <= end:
        return Token(path, line, start, end)
    return _value_token(raw, raw.find("=", end), path, line, character)


def toml_place(text: str, line: int, character: int) -> Place | None:
    at = _line_at(text, line)
    if at is None:
        return None
    lines, raw = at
    character = min(character, len(raw))
    head = raw[:character]
    if head.lstrip().startswith("["):
        # a section header being typed: complete section names (parent "" marks it)
        name = head.lstrip()[1:].lstrip("[").strip()
        present = {_toml_section(lines, j) for j, r in enumerate(lines) if r.lstrip().startswith("[") and j != line}
        return Place(("[",), prefix=name, present=present)
    section = _split_dotted(_toml_section(lines, line - 1)) if line > 0 else ()
    if "=" in head:
        m = _TOML_KEY.match(raw)
        if m is None:
            return None
        typed = head[head.find("=") + 1:].lstrip()
        quote = typed[:1] if typed[:1] in "\"'" else ""
        dotted = _split_dotted(m.group("key"))
        if not dotted:
            return None
        return Place(section + dotted[:-1], at_value=True, key=dotted[-1], prefix=typed[len(quote):], quote=quote)
    stripped = head.strip()
    if "#" in head or not re.fullmatch(r"[\w\-]*", stripped):
        return None
    # the keys of this section already written
    present: set[str] = set()
    start = line
    while start > 0 and not lines[start - 1].lstrip().startswith("["):
        start -= 1
    end = line + 1
    while end < len(lines) and not lines[end].lstrip().startswith("["):
        end += 1
    for j in range(start, end):
        if j == line:
            continue
        m = _TOML_KEY.match(lines[j])
        if m is not None:
            present.add(_split_dotted(m.group("key"))[0] if _split_dotted(m.group("key")) else "")
    return Place(section, prefix=stripped, present=present)


# --- shell / argument files (--flags) ---------------------------------------------------------

_WORD_BREAK = " \t\"'`;|&()<>$\\"


def _word(raw: str, character: int) -> tuple[int, int]:
    start = min(character, len(raw))
    while start > 0 and raw[start - 1] not in _WORD_BREAK:
        start -= 1
    end = min(character, len(raw))
    while end < len(raw) and raw[end] not in _WORD_BREAK:
        end += 1
    return start, end


def flag_token(text: str, line: int, character: int) -> Token | None:
    at = _line_at(text, line)
    if at is None:
        return None
    _, raw = at
    start, end = _word(raw, character)
    word = raw[start:end]
    if not word.startswith("-") or len(word) < 2 or raw[:start].lstrip().startswith("#"):
        return None
    eq = word.find("=")
    if eq > 0:
        if character > start + eq:
            return Token((word[:eq],), line, start + eq + 1, end, value=True)
        word = word[:eq]
        end = start + eq
    return Token((word,), line, start, end)


def flag_place(text: str, line: int, character: int) -> Place | None:
    at = _line_at(text, line)
    if at is None:
        return None
    lines, raw = at
    character = min(character, len(raw))
    if raw[:character].lstrip().startswith("#"):
        return None
    start, _ = _word(raw, character)
    typed = raw[start:character]
    if typed.startswith("-"):
        if "=" in typed:
            flag, _, value = typed.partition("=")
            return Place((), at_value=True, key=flag, prefix=value)
        return Place((), prefix=typed)
    # a value: the word before (possibly on the line above, after a backslash)
    before = raw[:start].rstrip()
    j = line
    while not before.strip() or before.rstrip().endswith("\\"):
        before = before.rstrip().rstrip("\\").rstrip()
        if before.strip():
            break
        j -= 1
        if j < 0:
            return None
        before = lines[j].rstrip()
    words = before.split()
    if words and words[-1].startswith("--") and "=" not in words[-1]:
        return Place((), at_value=True, key=words[-1], prefix=typed)
    return None
