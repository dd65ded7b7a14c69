"""The one way shardshift reads a file it did not write: regular files only (a FIFO would block,
a device never ends) and at most a cap of bytes, checked before reading and again while reading
(a sparse file or one that grows). Every context reader uses it: entry scripts, model configs,
scripts that name a config, dependency files, the language server's workspace files."""

from __future__ import annotations

import os
import stat

MAX_BYTES = 5_000_000  # no training configuration or script is larger; `check` reads no more either


def inside(path: str, tops) -> bool:
    """`path`, links resolved, is one of the folders or files `tops` or lies below one of them."""
    try:
        real = os.path.realpath(path)
    except ValueError:  # a NUL byte: no file anywhere
        return False
    for top in tops:
        top = os.path.realpath(top)
        if real == top or real.startswith(top.rstrip(os.sep) + os.sep):
            return True
    return False


def shown(path: str) -> str:
    """`path` as reports show it: relative to the current directory where it can be."""
    try:
        return os.path.relpath(path)
    except ValueError:
        return path


def read_bytes(path: str, limit: int = MAX_BYTES) -> bytes | None:
    """The bytes of the regular file at `path`, or None (not a regular file, larger than
    `limit`, unreadable)."""
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        with open(path, "rb") as handle:
            raw = handle.read(limit + 1)
    except (OSError, ValueError):  # ValueError: a NUL byte in the path
        return None
    return raw if len(raw) <= limit else None


def read_text(path: str, limit: int = MAX_BYTES, errors: str = "replace", bom: bool = True) -> str | None:
    """`read_bytes` decoded as UTF-8 (a byte-order mark dropped when `bom`); None as there, or when
    `errors="strict"` and the bytes are not UTF-8."""
    raw = read_bytes(path, limit)
    if raw is None:
        return None
    try:
        return raw.decode("utf-8-sig" if bom else "utf-8", errors)
    except UnicodeDecodeError:
        return None


def repository_root(path: str, tops: tuple[str, ...] = ()) -> str:
    """The directory the walk from `path` stops at: the nearest holding `.git`, else the nearest
    top of a tree given to check, else the current directory when `path` is under it, else the
    file's own directory."""
    start = os.path.dirname(os.path.abspath(path)) if not os.path.isdir(path) else os.path.abspath(path)
    stops = {os.path.abspath(t) for t in tops} | {os.path.realpath(t) for t in tops}
    cwd = os.getcwd()
    directory = start
    while True:
        if os.path.exists(os.path.join(directory, ".git")) or directory in stops:
            return directory
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    inside = start == cwd or start.startswith(cwd.rstrip(os.sep) + os.sep)
    return cwd if inside else start
