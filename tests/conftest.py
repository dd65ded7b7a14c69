"""Shared test helpers: where the fixtures and the shared corpus are, and how to run the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# No per-example deadline: on a shared 2-core machine a slow example is load, not a bug, and a
# deadline turns it into a flaky failure. Tests that want fewer or more examples still say so.
settings.register_profile("shardshift", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("shardshift")

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
SHARED = ROOT.parent / "shared"
CORPUS = SHARED / "corpus"

needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus is not present")


# Under CI (CI=true, as .ci/run sets it) a test may skip only for its input, with a reason that
# starts with INPUT_SKIP ("input: the fixture does not parse, on purpose"). Every other skip
# means a tool, package or folder the run lacks (pre-commit, an oracle, ../shared): there it
# fails, naming what is missing, so a green CI never hides a missing install step.
IN_CI = os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")
INPUT_SKIP = "input: "


def _skip_reason(report) -> str | None:
    if not report.skipped or hasattr(report, "wasxfail"):
        return None
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return reason.removeprefix("Skipped: ")


def _fail_missing(report) -> None:
    reason = _skip_reason(report)
    if IN_CI and reason is not None and not reason.startswith(INPUT_SKIP):
        report.outcome = "failed"
        report.longrepr = (f"skipped under CI=true for something missing, which CI must provide: {reason}\n"
                           "(install it from the repo's own files, scripts/install-dev.sh; a skip for the input "
                           f"itself must give a reason starting with {INPUT_SKIP!r})")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    _fail_missing(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    _fail_missing(outcome.get_result())


def corpus_files(folder: str, pattern: str = "*") -> list[Path]:
    """Files of one corpus folder, sorted (empty when the corpus is absent)."""
    directory = CORPUS / folder
    return sorted(p for p in directory.glob(pattern) if p.is_file()) if directory.is_dir() else []


def shown(path) -> str:
    """`path` as shardshift prints it when run from ROOT (the CLI helpers' working directory):
    relative to ROOT when under it, else as given (see tests/test_output.py)."""
    try:
        return str(Path(path).relative_to(ROOT))
    except ValueError:
        return str(path)


def run_cli(*args: str, cwd: Path | None = None, input: str | None = None) -> subprocess.CompletedProcess:
    """Run the real command line in a fresh process."""
    return subprocess.run([sys.executable, "-m", "shardshift", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd or ROOT, input=input, timeout=300)


def check_json(*args: str, cwd: Path | None = None) -> tuple[int, dict]:
    """`shardshift check --format json ARGS`: (exit status, parsed output)."""
    done = run_cli("check", "--format", "json", *args, cwd=cwd)
    assert done.stderr == "" or done.returncode == 2, done.stderr
    return done.returncode, json.loads(done.stdout)


def convert_matrix():
    """bench/convert_matrix.py as a module (a script, not a package): the conversion set and its measure."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("convert_matrix", ROOT / "bench" / "convert_matrix.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
