"""The pre-commit hook, run by the real `pre-commit try-repo` on a temporary git repository.

pre-commit builds its own virtual environment from a git copy of this project (pip installs the
package and its dependencies from PyPI), then runs the hook on the files it is given: the hook
must fail on a bad ds_config with the finding and pass on a good one. One test: it is slow
(a fresh environment) and needs the network.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from conftest import FIXTURES, ROOT

# The real pre-commit builds the hook's environment (pip, from PyPI): an oracle like the frameworks'
pytestmark = [pytest.mark.oracle,
              pytest.mark.skipif(shutil.which("pre-commit") is None or shutil.which("git") is None,
                                 reason="pre-commit and git are needed")]


def _git(*args: str, cwd) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env)


def _project_copy(destination) -> None:
    """This checkout as it is on disk (tracked and new files, not ignored ones), committed to a
    fresh repository: `try-repo` would otherwise see only committed files."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            check=True, capture_output=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    _git("init", "-q", cwd=destination)
    _git("add", "-A", cwd=destination)
    _git("commit", "-q", "-m", "snapshot", cwd=destination)


def test_hook_fails_on_a_bad_config_and_passes_on_a_good_one(tmp_path):
    hook_repo, work = tmp_path / "shardshift", tmp_path / "work"
    hook_repo.mkdir()
    work.mkdir()
    _project_copy(hook_repo)
    shutil.copy(FIXTURES / "deepspeed" / "rules" / "DS101" / "bad.json", work / "ds_config_bad.json")
    shutil.copy(FIXTURES / "deepspeed" / "zero2_bf16_adamw.json", work / "ds_config_good.json")
    (work / "README.md").write_text("not a config\n")
    _git("init", "-q", cwd=work)
    _git("add", "-A", cwd=work)
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("GITHUB_ACTIONS", None)

    def run(*files: str) -> subprocess.CompletedProcess:
        return subprocess.run(["pre-commit", "try-repo", str(hook_repo), "shardshift-check", "--files", *files],
                              cwd=work, env=env, capture_output=True, text=True, timeout=900)

    bad = run("ds_config_bad.json", "README.md")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "Failed" in bad.stdout
    assert "ds_config_bad.json:4:3: DS101 error: unknown key 'zero_optimisation'" in bad.stdout

    good = run("ds_config_good.json", "README.md")
    assert good.returncode == 0, good.stdout + good.stderr
    assert "Passed" in good.stdout and "DS101" not in good.stdout
