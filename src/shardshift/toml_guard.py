"""What the standard library's TOML parser must not be given: it is recursive (arrays and inline
tables nested some thousand deep raise RecursionError) and quadratic in the parts of one dotted key
(a 40 KB key of 20,000 parts costs gigabytes). `refusal` says why a text is refused, cheaply and
before `tomllib` sees it; real configuration files nest a few levels and dot a few parts."""

from __future__ import annotations

import re

MAX_NESTING = 64  # arrays and inline tables inside one another
MAX_KEY_PARTS = 64  # parts of one dotted key or table header

_STRING = re.compile(r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'')
_COMMENT = re.compile(r"#[^\n]*")
_KEY_DOTS = re.compile(r"(?:\.[^.\n=\[\]]*){%d,}" % MAX_KEY_PARTS)


def refusal(text: str) -> str | None:
    """Why `text` is refused (nesting or dotted keys past the bounds), or None."""
    if text.count(".") < MAX_KEY_PARTS and text.count("[") + text.count("{") < MAX_NESTING:
        return None  # the common case costs two counts
    plain = _COMMENT.sub("", _STRING.sub('""', text))  # strings and comments hold no structure
    depth = deepest = 0
    for char in re.findall(r"[\[\]{}]", plain):
        depth += 1 if char in "[{" else -1
        deepest = max(deepest, depth)
        if deepest > MAX_NESTING:
            return f"arrays or inline tables nested more than {MAX_NESTING} deep"
    for line in plain.splitlines():
        key = line.split("=", 1)[0] if "=" in line else line
        if key.count(".") >= MAX_KEY_PARTS and _KEY_DOTS.search(key):
            return f"a key or table name of more than {MAX_KEY_PARTS} dotted parts"
    return None
