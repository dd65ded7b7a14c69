"""Markdown pieces the generated pages share (a fence, a table cell, inline code)."""

from __future__ import annotations


def fence(text: str, language: str = "") -> str:
    """`text` in a code fence longer than any backtick run inside it."""
    longest, run = 0, 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{language}\n{text.rstrip()}\n{ticks}\n"


def cell(value: object) -> str:
    """A value as one Markdown table cell (pipes escaped, on one line)."""
    text = " ".join(str(value).split())
    return text.replace("\\", "\\\\").replace("|", "\\|")


def code(value: object) -> str:
    """A value as inline code inside a table cell."""
    text = " ".join((value if isinstance(value, str) else repr(value)).split())
    return f"`{text}`" if text and "`" not in text else cell(text)
