"""Helpers for rule case tables: where a marker sits in a fixture, and what the CLI found."""

from __future__ import annotations

from pathlib import Path


def marker_position(path: Path, marker: str, occurrence: int = 1, *, skip_comments: bool = False) -> tuple[int, int]:
    """1-based (line, column) of the `occurrence`-th appearance of `marker` in the file (outside `#`
    comment lines with `skip_comments`: a fixture's header comment may name the flag it shows)."""
    seen = 0
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if skip_comments and line.lstrip().startswith("#"):
            continue
        start = 0
        while (index := line.find(marker, start)) != -1:
            seen += 1
            if seen == occurrence:
                return number, index + 1
            start = index + 1
    raise AssertionError(f"{marker!r} not found {occurrence} time(s) in {path}")


def findings_with_code(output: dict, code: str) -> list[dict]:
    return [f for f in output["findings"] if f["code"] == code]
