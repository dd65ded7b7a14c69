"""Shared test helpers: where the fixtures and the shared corpus are, and how to run the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# No per-example deadline: on a shared 2-core machine a slow example is load, not a bug, and a
# deadline turns it into a flaky failure. Tests that want fewer or more examples still say so.
settings.register_profile("shardshift", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("shardshift")

# shardshift's cache between runs (context.cache) goes to a folder of the test session, never the
# user's own cache
os.environ.setdefault("SHARDSHIFT_CACHE_DIR", tempfile.mkdtemp(prefix="shardshift-test-cache-"))

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



# A module marked oracle as a whole (`pytestmark = pytest.mark.oracle` at its top level) may build
# its cases with a framework at import; under `-m "not oracle"` none of its tests would run, so it
# is not imported at all (about 6 s of DeepSpeed and torch per worker otherwise).
_WHOLE_MODULE_ORACLE = "\npytestmark = pytest.mark.oracle\n"


def pytest_ignore_collect(collection_path, config):
    if (config.getoption("markexpr", "") or "").replace(" ", "") != "notoracle":
        return None
    if collection_path.suffix != ".py" or not collection_path.name.startswith("test_"):
        return None
    try:
        return _WHOLE_MODULE_ORACLE in collection_path.read_text(encoding="utf-8") or None
    except OSError:
        return None

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


def run_cli(*args: str, cwd: Path | None = None, input: str | None = None,
            process: bool = False) -> subprocess.CompletedProcess:
    """Run the command line: `shardshift.cli.main` in this process (its own argv, working directory,
    standard streams, environment and warning filters; the exit status as a child would give it),
    or, with `process=True`, `python -m shardshift` in a fresh process (for what only a process
    shows: the entry point, start-up, imports; tests/test_cli.py keeps a few). In process a check
    costs milliseconds; a fresh process pays the interpreter and the imports (~0.3-1 s) each time."""
    argv = [str(a) for a in args]
    if process:
        return subprocess.run([sys.executable, "-m", "shardshift", *argv], capture_output=True, text=True,
                              cwd=cwd or ROOT, input=input, timeout=300)
    return _in_process(argv, Path(cwd or ROOT), input)


def _in_process(argv: list[str], cwd: Path, input: str | None) -> subprocess.CompletedProcess:
    import io
    import traceback
    import warnings

    from shardshift import cli

    # Bytes underneath, as a pipe: what cannot be encoded fails as it would in a child (the CLI
    # switches its stdout to backslashreplace, as it does there).
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="\n", write_through=True)
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="backslashreplace", newline="\n",
                           write_through=True)
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    saved_cwd, saved_environ = os.getcwd(), dict(os.environ)
    status = 0
    try:
        sys.stdin = io.StringIO(input or "")
        sys.stdout, sys.stderr = out, err
        os.chdir(cwd)
        with warnings.catch_warnings():
            # A child's default filters, printed to its stderr (pytest would otherwise collect them).
            warnings.resetwarnings()
            for category in (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning):
                warnings.simplefilter("ignore", category)
            warnings.showwarning = _show_warning
            try:
                status = cli.main(argv)
            except SystemExit as done:  # argparse's usage errors, --version, --help
                code = done.code
                if code is None:
                    status = 0
                elif isinstance(code, int):
                    status = code
                else:
                    print(code, file=sys.stderr)
                    status = 1
            except Exception:  # a traceback, as the child would print it, with its exit status
                traceback.print_exc()
                status = 1
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        os.chdir(saved_cwd)
        if dict(os.environ) != saved_environ:
            os.environ.clear()
            os.environ.update(saved_environ)
        _forget_files()
    return subprocess.CompletedProcess(["shardshift", *argv], status, _text(out), _text(err))


def _show_warning(message, category, filename, lineno, file=None, line=None):
    import warnings

    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


def _text(stream) -> str:
    # subprocess.run(text=True) decodes strictly and turns \r\n and \r into \n
    data = stream.buffer.getvalue().decode("utf-8")
    return data.replace("\r\n", "\n").replace("\r", "\n")


def _forget_files() -> None:
    """Empty shardshift's memoised reads of files (the memoised functions that take a `path`: parsed
    modules, the tables read from a repository, pins) so that the next run reads the files as a
    fresh process would: a test may rewrite a file between runs. Tables built from shardshift's own
    code (rules, keys, flags) stay: they cannot change within a test run."""
    import inspect

    for name, module in list(sys.modules.items()):
        if name == "shardshift" or name.startswith("shardshift."):
            for value in list(vars(module).values()):
                clear = getattr(value, "cache_clear", None)
                wrapped = getattr(value, "__wrapped__", None)
                if callable(clear) and wrapped is not None and getattr(value, "__module__", None) == name:
                    if "path" in inspect.signature(wrapped).parameters:
                        clear()


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
