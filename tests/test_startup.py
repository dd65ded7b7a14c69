"""A lean start: `shardshift check` on a ds_config imports none of the heavy libraries (a
pre-commit hook pays every import on every commit). Speed itself is measured in bench/."""

from __future__ import annotations

import subprocess
import sys

from conftest import FIXTURES, ROOT

PROBE = """
import io, contextlib, sys
from shardshift import cli
with contextlib.redirect_stdout(io.StringIO()):
    status = cli.main(["check", "--isolated", *sys.argv[1:]])
heavy = ("pydantic", "lark", "ruamel.yaml", "jsonschema", "deepdiff", "deepspeed", "torch",
         "tomllib", "tomli")
print(",".join(name for name in heavy if name in sys.modules))
"""


def _imported(*paths: str) -> set[str]:
    done = subprocess.run([sys.executable, "-c", PROBE, *paths], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    return set(filter(None, done.stdout.strip().split(",")))


def test_checking_ds_configs_imports_no_heavy_library():
    configs = sorted(str(p) for p in (FIXTURES / "deepspeed").glob("*.json"))
    assert configs and _imported(*configs) == set()


def test_the_plan_is_still_there_when_asked_for():
    from shardshift.formats import deepspeed

    document = deepspeed.read((FIXTURES / "deepspeed" / "zero2_bf16_adamw.json").read_text(), "x.json")
    assert document.plan is not None and document.plan.sharding.stage == 2
    document.plan = None
    assert document.plan is None
