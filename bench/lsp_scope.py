"""Does the language server's scope (the opened file's setup, not the workspace) give each file the
findings `shardshift check FOLDER` gives it? For every configuration file under each FOLDER (the
workspace), compare; print the files that differ and the count.

    PYTHONPATH=src python bench/lsp_scope.py ../shared/corpus fixtures/setups/* fixtures/launch/*
"""

from __future__ import annotations

import os
import sys
import time

import shardshift
from shardshift.check import discover, load
from shardshift.lsp import server


def key(finding) -> tuple:
    return finding.code, os.path.realpath(finding.file), finding.line, finding.column, finding.message


def main(folders: list[str]) -> int:
    files = differ = 0
    started = time.perf_counter()
    for folder in folders:
        top = os.path.realpath(folder)
        whole: dict[str, set] = {}
        for finding in shardshift.check([top], isolated=True).findings:
            whole.setdefault(os.path.realpath(finding.file), set()).add(key(finding))
        state = server.Workspace(root=top)
        for path, _ in discover([top]):
            if load(path, explicit=False) is None:
                continue
            found = server.setup_findings(state, path)
            if found is None:
                continue
            files += 1
            real = os.path.realpath(path)
            mine = {key(f) for f in found[1] if os.path.realpath(f.file) == real}
            if mine != whole.get(real, set()):
                differ += 1
                print(f"DIFF {os.path.relpath(path)}")
                for code, _, line, column, message in sorted(mine ^ whole.get(real, set())):
                    side = "server" if (code, real, line, column, message) in mine else "check"
                    print(f"    only {side}: {line}:{column} {code} {message[:120]}")
    print(f"{files} files, {differ} differ ({time.perf_counter() - started:.0f} s)")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
