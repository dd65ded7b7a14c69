"""Paths written on another machine: `/home/someone/proj/configs/ds.json` in a script names the
file of the checked tree whose path ends the same way (`proj/configs/ds.json`), when exactly one
file ends that way with the most components."""

from __future__ import annotations

import os
from typing import Iterable


def anchors(folder: str, depth: int = 8) -> list[str]:
    """Where a relative path a script writes may start: the script's folder and up to `depth` folders above
    it, then the current directory (the job's working directory is known only when it runs)."""
    found: list[str] = []
    probe = folder
    for _ in range(depth):
        found.append(probe)
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    return found + [os.getcwd()]


def components(path: str) -> list[str]:
    return [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]


def by_suffix(written: str, paths: Iterable[str]) -> str | None:
    """The one path among `paths` that shares the longest run of trailing components with
    `written` (at least the file name), or None when none does or several tie."""
    wanted = components(written)
    if not wanted:
        return None
    best, count = [], 0
    for path in dict.fromkeys(paths):
        have = components(path)
        shared = 0
        while shared < min(len(have), len(wanted)) and have[-1 - shared] == wanted[-1 - shared]:
            shared += 1
        if shared == 0 or shared < count:
            continue
        if shared > count:
            best, count = [], shared
        best.append(path)
    return best[0] if len(best) == 1 else None


def suffix_note(written: str, resolved: str, short: bool = False) -> str:
    """`resolved /home/x/proj/ds.json to configs/ds.json by its path suffix` (`short`: without
    the path as written, for a message that shows it already)."""
    shown = os.path.relpath(resolved) if os.path.isabs(resolved) else resolved
    return f"resolved {'' if short else written + ' '}to {shown} by its path suffix"
