"""Issue 13: under CI (CI=true) a test skipped because a tool, package or folder is missing fails
the run, naming what is missing; a skip that depends on the input stays a skip. The rule lives in
conftest.py; these tests run pytest in a child process to watch it act."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from conftest import ROOT

SAMPLE = '''
import pytest

def test_input_dependent():
    pytest.skip("input: this fixture is broken on purpose")

def test_missing_package():
    pytest.importorskip("no_such_package_for_shardshift")
'''


def _pytest(*args: str, ci: bool, path: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PYTHONPATH"] = str(ROOT / "tests")
    if ci:
        env["CI"] = "true"
    if path is not None:
        env["PATH"] = path
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                           "-p", "conftest", "-rA", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)


def test_a_missing_package_fails_under_ci_and_an_input_skip_stays_a_skip(tmp_path):
    sample = tmp_path / "test_sample.py"
    sample.write_text(SAMPLE)
    local = _pytest(str(sample), ci=False)
    assert local.returncode == 0 and "2 skipped" in local.stdout
    under_ci = _pytest(str(sample), ci=True)
    assert under_ci.returncode == 1
    assert "1 failed" in under_ci.stdout and "1 skipped" in under_ci.stdout
    assert "no_such_package_for_shardshift" in under_ci.stdout  # the message names what is missing
    assert "FAILED" in under_ci.stdout and "test_missing_package" in under_ci.stdout


def test_the_precommit_test_fails_under_ci_when_pre_commit_is_hidden_from_path(tmp_path):
    # PATH holds git only: pre-commit, which scripts/install-dev.sh installs, is hidden
    tools = tmp_path / "bin"
    tools.mkdir()
    git = shutil.which("git")
    assert git is not None, "git is needed to run these tests (and by the pre-commit test itself)"
    (tools / "git").symlink_to(git)
    hidden = _pytest("tests/test_precommit.py", ci=True, path=str(tools))
    assert hidden.returncode == 1, hidden.stdout
    assert "pre-commit" in hidden.stdout and "CI=true" in hidden.stdout
    outside_ci = _pytest("tests/test_precommit.py", ci=False, path=str(tools))
    assert outside_ci.returncode == 0 and "1 skipped" in outside_ci.stdout
