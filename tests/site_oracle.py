"""Where a framework's own code refuses an input: the check sites it reaches (issue 22's coverage map).

`reached(call)` runs `call()` under a trace function and records every `raise` or failing `assert`
in the framework's files, even when the framework catches the exception itself (pydantic wraps a
validator's ValueError; DeepSpeedConfig catches a distributed assertion). A coverage-map site
(scripts/coverage/sites.py) is reached when one of those lines lies within its statement. Import
the framework before calling: only the call is traced, never an import.
"""

from __future__ import annotations

import sys
from pathlib import Path


def reached(call, root: Path, within: tuple[str, ...] = ("",)) -> tuple[BaseException | None, set[tuple[str, int]]]:
    """Run `call()`; return what it raised (None when it returned) and the (file relative to `root`,
    line) of every exception raised while it ran in a file under `root` whose relative path starts
    with one of `within` (the framework's packages: tracing all of site-packages is slow)."""
    prefix = str(Path(root).resolve()) + "/"
    starts = tuple(prefix + part for part in within)
    found: set[tuple[str, int]] = set()

    def local(frame, event, arg):
        if event == "exception":
            found.add((frame.f_code.co_filename[len(prefix):], frame.f_lineno))
        return local

    def calls(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(starts):
            frame.f_trace_lines = False  # only its exceptions matter: no callback per line (a tenth of the time)
            return local
        return None

    previous = sys.gettrace()
    sys.settrace(calls)
    try:
        call()
        error = None
    except BaseException as raised:  # noqa: BLE001 - the framework's refusal is the result
        error = raised
    finally:
        sys.settrace(previous)
    return error, found


def hits(site, found: set[tuple[str, int]]) -> bool:
    """Whether a coverage-map site (file, line .. end_line) is among the reached lines."""
    return any(file == site.file and site.line <= line <= site.end_line for file, line in found)
