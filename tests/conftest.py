"""Shared test helpers: where the fixtures and the shared corpus are, and how to run the CLI."""

from __future__ import annotations

import json
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


def corpus_files(folder: str, pattern: str = "*") -> list[Path]:
    """Files of one corpus folder, sorted (empty when the corpus is absent)."""
    directory = CORPUS / folder
    return sorted(p for p in directory.glob(pattern) if p.is_file()) if directory.is_dir() else []


def run_cli(*args: str, cwd: Path | None = None, input: str | None = None) -> subprocess.CompletedProcess:
    """Run the real command line in a fresh process."""
    return subprocess.run([sys.executable, "-m", "shardshift", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd or ROOT, input=input, timeout=300)


def check_json(*args: str, cwd: Path | None = None) -> tuple[int, dict]:
    """`shardshift check --format json ARGS`: (exit status, parsed output)."""
    done = run_cli("check", "--format", "json", *args, cwd=cwd)
    assert done.stderr == "" or done.returncode == 2, done.stderr
    return done.returncode, json.loads(done.stdout)
