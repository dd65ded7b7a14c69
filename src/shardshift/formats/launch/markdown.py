"""Launch commands quoted in a README: its shell code blocks, read where they stand.

A README often holds the only launch command of a repository (`deepspeed train.py --deepspeed
ds.json --lr_scheduler_type cosine`). Its fenced shell blocks (```` ```bash ````, ```` ```sh ````,
```` ```shell ````, ```` ```console ```` or no language) are read as one launch script, in their
order, as a user pastes them. The text handed to the launch-script reader has the README's length
and lines: everything outside those blocks (the prose, the fences, a console's output lines and
its `$ ` prompts) is replaced by spaces, so every position the reader gives is the README's own.

A block is kept only when it reads as a script on its own: a block of prose, placeholders
(`<path>`) or another language is skipped, never reported (a README is no script of its own).
Only README files are read this way: they say how the code next to them is run. Other
documentation (tutorials, API pages) quotes commands about other people's setups.
"""

from __future__ import annotations

import re

SUFFIXES = (".md", ".markdown")
# a fence: up to any indentation (a block inside a list item), ``` or ~~~, then the info string
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([^\s`{]*)")
SHELL_LANGUAGES = frozenset({"", "bash", "sh", "shell", "zsh", "console", "shell-session", "sh-session", "terminal"})
_PROMPT = re.compile(r"^([ \t]*)\$[ \t]")


def is_readme(path: str) -> bool:
    name = path.replace("\\", "/").rsplit("/", 1)[-1].lower()
    return name.startswith("readme") and name.endswith(SUFFIXES)


def may_quote_commands(text: str) -> bool:
    return "```" in text or "~~~" in text


def shell_blocks(text: str) -> list[list[tuple[int, str]]]:
    """The README's shell code blocks, each as [(line index, the line as the shell sees it)]: a
    console's prompts become spaces and its output lines are left out."""
    lines = text.split("\n")
    blocks: list[list[tuple[int, str]]] = []
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        fence, language = opening.group(1), opening.group(2).lower()
        body: list[tuple[int, str]] = []
        index += 1
        while index < len(lines):
            closing = _FENCE.match(lines[index])
            if closing is not None and closing.group(1)[0] == fence[0] and len(closing.group(1)) >= len(fence) \
                    and not closing.group(2):
                break
            body.append((index, lines[index]))
            index += 1
        index += 1  # past the closing fence (or the end of an unclosed block)
        if language in SHELL_LANGUAGES and body:
            blocks.append(_commands(body))
    return [block for block in blocks if block]


def _commands(body: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The lines a shell runs: all of them, or in a block with `$ ` prompts only the prompted lines
    and their continuations (the rest is output)."""
    if not any(_PROMPT.match(line) for _, line in body):
        return body
    kept: list[tuple[int, str]] = []
    continued = False
    for number, line in body:
        prompt = _PROMPT.match(line)
        if prompt is not None:
            kept.append((number, " " * (prompt.end()) + line[prompt.end():]))
        elif continued:
            kept.append((number, line))
        else:
            continue
        continued = line.rstrip("\r").endswith("\\")
    return kept


def script_text(text: str, blocks: list[list[tuple[int, str]]]) -> str:
    """`text` with only the lines of `blocks` kept, every other character a space (the same
    lines and columns)."""
    lines = [" " * len(line) if "\r" not in line else "".join("\r" if c == "\r" else " " for c in line)
             for line in text.split("\n")]
    for block in blocks:
        for number, line in block:
            lines[number] = line
    return "\n".join(lines)
