"""DS456 optimizer-param-value-refused: `amsgrad` where DeepSpeed builds a class that refuses it. DeepSpeed's own
deepspeed.initialize (the coverage loader, one CPU rank; FusedLamb's CUDA op answered as loaded) raises on each
bad fixture and not on the good ones."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT, check_json

RULES = FIXTURES / "deepspeed" / "rules" / "DS456"


def test_each_bad_fixture_is_an_error_at_amsgrad_and_the_good_ones_are_clean():
    _, output = check_json("--select", "DS456", "--isolated", str(RULES))
    found = {f["file"].rsplit("/", 1)[-1]: f for f in output["findings"]}
    assert sorted(found) == sorted(p.name for p in RULES.glob("bad*.json"))
    assert {f["severity"] for f in found.values()} == {"error"}
    assert {f["pointer"] for f in found.values()} == {"/optimizer/params/amsgrad"}


@pytest.mark.parametrize("params, reported", [({"amsgrad": 0}, False), ({"amsgrad": "yes"}, True),
                                              ({"amsgrad": True, "torch_adam": "auto"}, False)])
def test_truthiness_and_open_switches(tmp_path, params, reported):
    """DeepSpeed tests `if amsgrad:`; a torch_adam left to "auto" may build torch's AdamW, which has it."""
    config = {"train_micro_batch_size_per_gpu": 1, "gradient_clipping": 1.0,
              "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, **params}}}
    (tmp_path / "ds.json").write_text(json.dumps(config))
    _, output = check_json("--select", "DS456", "--isolated", str(tmp_path / "ds.json"))
    assert bool(output["findings"]) is reported


@pytest.mark.oracle
def test_deepspeed_refuses_exactly_the_files_ds456_reports(tmp_path):
    files = sorted(RULES.glob("*.json"))
    cases = [{"path": str(path), "options": {"stage": "initialize", "ops": "loaded"}} for path in files]
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    child = subprocess.run([sys.executable, str(ROOT / "tests" / "coverage_child.py"), "deepspeed",
                            str(tmp_path / "cases.json"), str(tmp_path / "results.json")],
                           capture_output=True, text=True, timeout=600)
    assert child.returncode == 0, child.stderr[-3000:]
    refused = {Path(r["path"]).name for r in json.loads((tmp_path / "results.json").read_text())
               if "does not support the AMSGrad variant" in (r["error"] or "")}
    _, output = check_json("--select", "DS456", "--isolated", str(RULES))
    assert refused == {f["file"].rsplit("/", 1)[-1] for f in output["findings"]}
    assert len(refused) == 3
