"""What the language server knows of keys and flags, for hover and completion (no pygls here).

STUB of the lsp lane: the knowledge lane writes the real module with these signatures; the
server only calls `hover` and `complete`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Span:
    """0-based; `character` counts code points (the server converts to the client's units)."""

    line: int
    character: int
    end_line: int
    end_character: int


@dataclass(frozen=True)
class HoverInfo:
    markdown: str
    span: Span


@dataclass(frozen=True)
class CompletionItem:
    label: str
    detail: str
    documentation: str
    insert_text: str
    kind: str  # "key" | "flag" | "value"


def hover(path: str, text: str, line: int, character: int) -> HoverInfo | None:
    return None


def complete(path: str, text: str, line: int, character: int) -> list[CompletionItem]:
    return []
