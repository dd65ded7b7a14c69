"""The environment a launch script runs in, as the user tells it (`check --env X=VALUE`,
`[tool.shardshift] env`, the API's `env=`).

Readers take only (text, path), so the values travel in a context variable that the CLI and the
API set around a run (`given(...)`). The launch-script reader seeds its variables from it: `$X`
and `${X:-d}` then give VALUE, marked as set by `--env` (shell_lexer._Piece.assumed, line 0).
"""

from __future__ import annotations

import contextlib
import re
from contextvars import ContextVar
from typing import Iterator, Mapping

_ENVIRONMENT: ContextVar[Mapping[str, str]] = ContextVar("shardshift_environment", default={})
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def current() -> Mapping[str, str]:
    """The variables given for this run ({} when none)."""
    return _ENVIRONMENT.get()


@contextlib.contextmanager
def given(variables: Mapping[str, str] | None) -> Iterator[None]:
    """Reads inside the block see `variables` as the job's environment."""
    token = _ENVIRONMENT.set(dict(variables or {}))
    try:
        yield
    finally:
        _ENVIRONMENT.reset(token)


def parse(items: list[str] | Mapping[str, object], where: str = "--env") -> dict[str, str]:
    """`["X=V", ...]` or `{X: V}` -> {X: V}; ValueError with what is wrong for a bad item."""
    out: dict[str, str] = {}
    pairs = list(items.items()) if isinstance(items, Mapping) else []
    if not isinstance(items, Mapping):
        for item in items:
            if not isinstance(item, str) or "=" not in item:
                raise ValueError(f"{where} takes NAME=VALUE, got {item!r}")
            pairs.append(tuple(item.split("=", 1)))
    for name, value in pairs:
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ValueError(f"{where}: {name!r} is not a shell variable name")
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ValueError(f"{where}: the value of {name} must be a string or a number, got {value!r}")
        out[name] = str(value)
    return out
