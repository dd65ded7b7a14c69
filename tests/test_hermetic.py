"""Hermetic tests (issue 22): a test must not depend on where the machine keeps its temporary
files. The tool looks upward from the files it checks (the checkout root for SARIF's %SRCROOT%,
the repository a config's consumers are searched in, the configuration file found walking up), so
a temporary directory inside another git checkout is the case that shows a test leaning on the
machine. These tests run the modules whose tests make such trees in tmp_path in a child pytest
whose TMPDIR lies inside a fresh `git init` directory."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT

# The modules whose tests failed with TMPDIR inside a checkout before they were fixed (issue 22:
# SARIF's %SRCROOT%; the consumers of a ds_config searched in its repository). The whole non-oracle
# suite passed that way when this test was written (bench/RESULTS.md); it is too long to rerun here.
MODULES = ["tests/test_report_sarif.py", "tests/test_consumer_context.py"]
# checks the repository's own fixtures, no temporary tree: the slowest of these tests, nothing to show here
SLOW_WITHOUT_TMP = ("tests/test_report_sarif.py::"
                    "test_cross_file_findings_from_the_fixtures_have_related_locations_in_the_other_file")


@pytest.mark.skipif(shutil.which("git") is None, reason="git is needed")
def test_modules_pass_with_the_temporary_directory_inside_another_checkout(tmp_path):
    outer = tmp_path / "checkout"
    outer.mkdir()
    subprocess.run(["git", "init", "-q", str(outer)], check=True, capture_output=True)
    temporary = outer / "tmp"
    temporary.mkdir()
    env = {**os.environ, "TMPDIR": str(temporary)}
    env.pop("GITHUB_WORKSPACE", None)
    env.pop("GITHUB_ACTIONS", None)
    env.pop("PYTEST_XDIST_WORKER", None)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                           "-m", "not oracle", *MODULES, "--deselect", SLOW_WITHOUT_TMP], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    # the child's tmp_path was where it was asked to be
    assert any(temporary.glob("pytest-of-*")), sorted(p.name for p in temporary.iterdir())
