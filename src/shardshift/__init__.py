"""shardshift: read, check and translate distributed LLM training configurations.

The Python API (documented in `shardshift.api` and the README):

    shardshift.check(paths, **options) -> CheckResult      findings, as `shardshift check` gives them
    shardshift.load(path) -> Setup                          a file with the files it names, and their Plan
    shardshift.convert(path, to=...) -> Migration           the target text and the migration report

They are imported on first use, so `import shardshift` stays as cheap as the command line's start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["ShardshiftError", "check", "convert", "load", "__version__"]

if TYPE_CHECKING:
    from shardshift.api import ShardshiftError, check, convert, load


def __getattr__(name: str) -> Any:
    if name == "check":  # the module shardshift.check, which is callable as the API function
        import shardshift.check

        return shardshift.check
    if name in ("ShardshiftError", "convert", "load"):
        import shardshift.api

        return getattr(shardshift.api, name)
    raise AttributeError(f"module 'shardshift' has no attribute {name!r}")
