"""Child process of tests/test_coverage_map.py: one framework, every case of its coverage map.

    python tests/coverage_child.py <framework> cases.json results.json

cases: [{"path": fixture, "options": {...}}]. The framework's loader (tests/coverage_loaders/
<framework>.py: `prepare()` imports the framework, `load(path, **options)` runs the framework's own
path on the file and raises when the framework refuses it) runs each file under site_oracle.reached;
the result per case is the error it raised (type and first line) and the lines reached in the
framework's files. One process per framework: the framework is imported once.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "scripts" / "coverage")]

from sites import root_of, scope  # noqa: E402

from site_oracle import reached  # noqa: E402


def loader(framework: str):
    spec = importlib.util.spec_from_file_location(f"coverage_loader_{framework}",
                                                  HERE / "coverage_loaders" / f"{framework}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(framework: str, cases_file: str, results_file: str) -> int:
    cases = json.loads(Path(cases_file).read_text())
    chosen = scope(framework)
    root = root_of(chosen)
    within = tuple(sorted({file.split("/", 1)[0] + "/" for file in chosen.FILES}))
    module = loader(framework)
    module.prepare()
    results = []
    for case in cases:
        path = Path(case["path"])
        error, found = reached(functools.partial(module.load, path, **case["options"]), root, within)
        message = "" if error is None else (str(error).strip().splitlines() or [""])[0][:300]
        results.append({"path": case["path"], "error": None if error is None else f"{type(error).__name__}: {message}",
                        "reached": sorted(found)})
    Path(results_file).write_text(json.dumps(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:4]))
