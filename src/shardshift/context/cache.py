"""shardshift's cache between runs: where it lives, and how a file of it is written.

`SHARDSHIFT_CACHE_DIR` names the folder; else `$XDG_CACHE_HOME/shardshift`, else
`~/.cache/shardshift`. `SHARDSHIFT_NO_CACHE=1` (or `check --no-cache`) switches it off. The cache
holds only what shardshift derived from the repository's files (never the user's files), so a
lost or stale entry costs time, never a verdict: each entry is keyed by what it was derived from."""

from __future__ import annotations

import os
import tempfile

ENABLED = [True]  # `check --no-cache` switches it off for the process


def cache_dir() -> str | None:
    if not ENABLED[0] or os.environ.get("SHARDSHIFT_NO_CACHE", "").strip() not in ("", "0"):
        return None
    folder = os.environ.get("SHARDSHIFT_CACHE_DIR")
    if not folder:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        folder = os.path.join(base, "shardshift")
    return folder


def write(path: str, data: bytes) -> None:
    """Write a cache file whole or not at all (a temporary file renamed over it); a cache that
    cannot be written is no error (a read-only home, a full disk): the next run reads again."""
    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=".tmp-")
    except OSError:
        return
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except OSError:
        try:
            os.unlink(temporary)
        except OSError:
            pass
