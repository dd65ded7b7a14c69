"""What the launch-script reader (shell.py) decides without running anything: bash integer
arithmetic (`$(( ))`, `(( ))`, `[[ a -lt b ]]`), the tests of `[ ]`, `test` and `[[ ]]` on known
operands, and glob patterns (`case` items, `[[ x == pattern ]]`). An answer that depends on
something unknown is None: the caller keeps every branch open."""

from __future__ import annotations

import re
from typing import Any, Callable, NamedTuple


class NotEvaluated(Exception):
    """The expression is outside what is evaluated here (or bash would reject it)."""


# -- arithmetic ------------------------------------------------------------------------------------
_TOKEN = re.compile(r"\s*(?:(0[xX][0-9a-fA-F]+|[0-9]+#[0-9a-zA-Z@_]+|[0-9]+)|([A-Za-z_][A-Za-z0-9_]*)"
                    r"|(\*\*|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%()<>!~&^|?:,]))")
_BINARY = {  # operator: (precedence, right associative)
    ",": (1, False), "||": (3, False), "&&": (4, False), "|": (5, False), "^": (6, False), "&": (7, False),
    "==": (8, False), "!=": (8, False), "<": (9, False), "<=": (9, False), ">": (9, False), ">=": (9, False),
    "<<": (10, False), ">>": (10, False), "+": (11, False), "-": (11, False), "*": (12, False),
    "/": (12, False), "%": (12, False), "**": (14, True),
}
_TERNARY = 2
_UNARY = 13


def _number(text: str) -> int:
    if text[:2] in ("0x", "0X"):
        return int(text[2:], 16)
    if "#" in text:
        base, digits = text.split("#", 1)
        if not 2 <= int(base) <= 36:
            raise NotEvaluated(text)
        return int(digits, int(base))
    if len(text) > 1 and text.startswith("0"):
        return int(text, 8)
    return int(text)


def _tokens(source: str) -> list:
    if "++" in source or "--" in source or re.search(r"(?<![=!<>])=(?!=)", source):
        raise NotEvaluated(source)  # assignments and increments change variables: not evaluated
    out, i, n = [], 0, len(source)
    while i < n:
        m = _TOKEN.match(source, i)
        if not m:
            if source[i:].strip() == "":
                break
            raise NotEvaluated(source)
        number, name, op = m.groups()
        out.append(("n", _number(number)) if number else ("v", name) if name else ("o", op))
        i = m.end()
    return out


def _parse(tokens: list) -> Any:
    """An expression tree: ("n", int) | ("v", name) | ("u", op, x) | ("b", op, x, y) | ("?", c, x, y)."""
    pos = [0]

    def peek() -> Any:
        return tokens[pos[0]] if pos[0] < len(tokens) else None

    def take() -> Any:
        token = peek()
        if token is None:
            raise NotEvaluated("the expression ends early")
        pos[0] += 1
        return token

    def unary() -> Any:
        kind, value = take()
        if kind == "o" and value in ("-", "+", "!", "~"):
            return ("u", value, expression(_UNARY))
        if kind == "o" and value == "(":
            inner = expression(0)
            if take() != ("o", ")"):
                raise NotEvaluated("`(` is not closed")
            return inner
        if kind == "o":
            raise NotEvaluated(value)
        return (kind, value)

    def expression(floor: int) -> Any:
        left = unary()
        while True:
            token = peek()
            if token is None or token[0] != "o":
                return left
            op = token[1]
            if op == "?" and _TERNARY >= floor:
                take()
                middle = expression(0)
                if take() != ("o", ":"):
                    raise NotEvaluated("`?` without `:`")
                left = ("?", left, middle, expression(_TERNARY))
                continue
            if op not in _BINARY:
                return left
            precedence, right = _BINARY[op]
            if precedence < floor:
                return left
            take()
            left = ("b", op, left, expression(precedence if right else precedence + 1))

    tree = expression(0)
    if pos[0] != len(tokens):
        raise NotEvaluated("unexpected token")
    return tree


def _divide(a: int, b: int) -> int:
    if b == 0:
        raise NotEvaluated("division by zero")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def arithmetic(source: str, resolve: Callable[[str], Any], depth: int = 0) -> int:
    """The value of a bash arithmetic expression. `resolve(name)` gives a variable's text, or
    raises to say the value is not known; a value that is itself an expression is evaluated."""
    if depth > 8:
        raise NotEvaluated("variables refer to each other too deeply")
    tree = _parse(_tokens(source))

    def value(node: Any) -> int:
        kind = node[0]
        if kind == "n":
            return node[1]
        if kind == "v":
            text = resolve(node[1]).strip()
            if not text:
                return 0
            if re.fullmatch(r"-?[0-9]+", text):
                return int(text)
            return arithmetic(text, resolve, depth + 1)
        if kind == "u":
            x = value(node[2])
            return {"-": -x, "+": x, "!": int(not x), "~": ~x}[node[1]]
        if kind == "?":
            return value(node[2]) if value(node[1]) else value(node[3])
        op, a = node[1], node[2]
        if op == "&&":
            return int(bool(value(a)) and bool(value(node[3])))
        if op == "||":
            return int(bool(value(a)) or bool(value(node[3])))
        x, y = value(a), value(node[3])
        if op == "**":
            if y < 0 or y > 64:
                raise NotEvaluated("exponent out of range")
            return x ** y
        if op == "/":
            return _divide(x, y)
        if op == "%":
            return x - _divide(x, y) * y
        if op in ("<<", ">>"):
            if not 0 <= y < 64:
                raise NotEvaluated("shift out of range")
            return x << y if op == "<<" else x >> y
        return {"+": x + y, "-": x - y, "*": x * y, "<": int(x < y), "<=": int(x <= y), ">": int(x > y),
                ">=": int(x >= y), "==": int(x == y), "!=": int(x != y), "&": x & y, "^": x ^ y, "|": x | y,
                ",": y}[op]

    return value(tree)


# -- glob patterns ---------------------------------------------------------------------------------
_GLOBS: dict = {}


def glob_regex(segments: list) -> re.Pattern:
    """A regex for a bash pattern given as (text, is_pattern) segments: quoted text is literal."""
    key = tuple(segments)
    regex = _GLOBS.get(key)
    if regex is None:
        if len(_GLOBS) > 512:
            _GLOBS.clear()
        regex = _GLOBS[key] = _glob_regex(segments)
    return regex


def _glob_regex(segments: list) -> re.Pattern:
    out = []
    for text, pattern in segments:
        if not pattern:
            out.append(re.escape(text))
            continue
        i, n = 0, len(text)
        while i < n:
            c = text[i]
            if c == "*":
                out.append(".*")
            elif c == "?":
                out.append(".")
            elif c == "\\" and i + 1 < n:
                i += 1
                out.append(re.escape(text[i]))
            elif c == "[":
                j = i + 1
                if j < n and text[j] in "!^":
                    j += 1
                if j < n and text[j] == "]":
                    j += 1
                while j < n and text[j] != "]":
                    j += 1
                if j >= n:
                    out.append(re.escape(c))
                else:
                    body = text[i + 1:j]
                    negate = body[:1] in ("!", "^")
                    body = body[1:] if negate else body
                    body = body.replace("\\", "\\\\").replace("[:alpha:]", "a-zA-Z").replace("[:digit:]", "0-9")
                    out.append("[" + ("^" if negate else "") + body + "]")
                    i = j
            else:
                out.append(re.escape(c))
            i += 1
    return re.compile("".join(out), re.DOTALL)


# -- test / [ ] / [[ ]] ----------------------------------------------------------------------------
class Operand(NamedTuple):
    """One word of a test: its text (None when unknown), whether it is non-empty (None: unknown),
    and, on the right of `==` in `[[ ]]`, the pattern it is (None: not known)."""

    text: str | None
    nonempty: bool | None
    pattern: Any = None


_FILE_TESTS = set("abcdefghkprstuwxGLNOS")
_COMPARE = {"-eq": lambda a, b: a == b, "-ne": lambda a, b: a != b, "-lt": lambda a, b: a < b,
            "-le": lambda a, b: a <= b, "-gt": lambda a, b: a > b, "-ge": lambda a, b: a >= b}
_BINARY_TESTS = {"=", "==", "!=", "=~", "-nt", "-ot", "-ef", *_COMPARE}


def _and(a: bool | None, b: bool | None) -> bool | None:
    if a is False or b is False:
        return False
    return None if a is None or b is None else True


def _or(a: bool | None, b: bool | None) -> bool | None:
    if a is True or b is True:
        return True
    return None if a is None or b is None else False


def _not(a: bool | None) -> bool | None:
    return None if a is None else not a


def _integer(text: str | None, double: bool, arith: Callable[[str], int | None]) -> int | None:
    if text is None:
        return None
    if double:
        return arith(text)
    text = text.strip()
    return int(text) if re.fullmatch(r"[-+]?[0-9]+", text) else None


def test(args: list, double: bool, arith: Callable[[str], int | None],
         is_set: Callable[[str], bool | None]) -> bool | None:
    """The result of `[ args ]` (double=False) or `[[ args ]]`: True, False, or None when it
    depends on something unknown (an operand, a file, the environment)."""
    pos = [0]
    n = len(args)

    def text(k: int) -> str | None:
        return args[k].text if k < n else None

    def disjunction() -> bool | None:
        result = conjunction()
        while pos[0] < n and text(pos[0]) in ("-o", "||"):
            pos[0] += 1
            result = _or(result, conjunction())
        return result

    def conjunction() -> bool | None:
        result = negation()
        while pos[0] < n and text(pos[0]) in ("-a", "&&"):
            pos[0] += 1
            result = _and(result, negation())
        return result

    def negation() -> bool | None:
        if text(pos[0]) == "!" and pos[0] + 1 < n:
            pos[0] += 1
            return _not(negation())
        return primary()

    def primary() -> bool | None:
        k = pos[0]
        if k >= n:
            raise NotEvaluated("the test ends early")
        if text(k) == "(" and k + 1 < n:
            pos[0] += 1
            result = disjunction()
            if text(pos[0]) != ")":
                raise NotEvaluated("`(` is not closed")
            pos[0] += 1
            return result
        if k + 2 < n and text(k + 1) in _BINARY_TESTS:
            pos[0] += 3
            return binary(args[k], text(k + 1), args[k + 2])
        op = text(k)
        if k + 1 < n and op is not None and len(op) == 2 and op[0] == "-" and (op[1] in _FILE_TESTS or
                                                                                op[1] in "znvo"):
            pos[0] += 2
            return unary(op, args[k + 1])
        pos[0] += 1
        return args[k].nonempty

    def unary(op: str, operand: Operand) -> bool | None:
        if op == "-z":
            return _not(operand.nonempty)
        if op == "-n":
            return operand.nonempty
        if op == "-v" and operand.text is not None:
            return is_set(operand.text)
        return None  # files, shell options: known only on the machine

    def binary(left: Operand, op: str, right: Operand) -> bool | None:
        if op in ("=", "==", "!="):
            if left.text is None:
                return None
            if double:
                if right.pattern is None:
                    return None
                result = right.pattern.fullmatch(left.text) is not None
            elif right.text is None:
                return None
            else:
                result = left.text == right.text
            return result if op != "!=" else not result
        if op in _COMPARE:
            a, b = _integer(left.text, double, arith), _integer(right.text, double, arith)
            return None if a is None or b is None else _COMPARE[op](a, b)
        return None

    if n == 0:
        return False
    try:
        result = disjunction()
    except NotEvaluated:
        return None
    return result if pos[0] == n else None
