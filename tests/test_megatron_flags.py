"""Megatron-LM's own argument parser as the oracle for the flag table
(src/shardshift/formats/megatron/flags.json, written by scripts/dump_megatron_flags.py).

The parser is built once per module by the script itself, in a child process:
`add_megatron_arguments` of ../shared/oracles/megatron-lm on a fresh
`ArgumentParser(allow_abbrev=False)`, with only the patches the script's docstring lists. The
checked-in table must equal what that parser defines now; regenerate it with
`python scripts/dump_megatron_flags.py` when the pinned Megatron changes. Without the Megatron
folder the tests skip, except under CI (CI=true), where they fail.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT, SHARED

pytestmark = pytest.mark.oracle

MEGATRON = SHARED / "oracles" / "megatron-lm"
SCRIPT = ROOT / "scripts" / "dump_megatron_flags.py"
TABLE = ROOT / "src" / "shardshift" / "formats" / "megatron" / "flags.json"


def _load_script():
    spec = importlib.util.spec_from_file_location("dump_megatron_flags", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def script():
    return _load_script()


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """The table as Megatron's parser defines it now, written by the script in a child process (one
    ~9 s import per test session; Megatron and torch never load into the test process)."""
    if not (MEGATRON / "megatron" / "training" / "arguments.py").is_file():
        message = f"{MEGATRON} (Megatron-LM's own code) is not present"
        if os.environ.get("CI", "").strip().lower() in ("1", "true", "yes"):
            pytest.fail(f"{message}; CI must run every oracle test", pytrace=False)
        pytest.skip(message)
    out = tmp_path_factory.mktemp("megatron") / "flags.json"
    done = subprocess.run([sys.executable, str(SCRIPT), "--megatron", str(MEGATRON), "--out", str(out)],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(out.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def checked_in():
    return json.loads(TABLE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def by_spelling(generated):
    return {spelling: flag for flag in generated["flags"] for spelling in flag["spellings"]}


def test_checked_in_table_equals_the_parser(script, generated, checked_in):
    assert TABLE.read_text(encoding="utf-8") == script.render(generated), (
        "flags.json is stale: run `python scripts/dump_megatron_flags.py`")
    assert checked_in == generated


def test_header(generated, script):
    assert generated["format_version"] == script.FORMAT_VERSION
    assert generated["megatron_commit"] == "d98e8a64ddf34856e74b24714e3bedb2f5a39553"
    assert generated["megatron_core_version"] == "0.20.0"
    assert generated["allow_abbrev"] is False
    assert generated["count"] == len(generated["flags"])


def test_several_hundred_flags_each_spelled_once(generated):
    flags = generated["flags"]
    assert len(flags) >= 500
    spellings = [s for flag in flags for s in flag["spellings"]]
    assert len(spellings) == len(set(spellings))
    assert all(s.startswith("-") for s in spellings)
    assert [f["spellings"][0] for f in flags] == sorted(f["spellings"][0] for f in flags)


def test_parallel_and_batch_flags(by_spelling):
    tp = by_spelling["--tensor-model-parallel-size"]
    assert (tp["dest"], tp["action"], tp["type"], tp["default"], tp["nargs"]) == (
        "tensor_model_parallel_size", "store", "int", 1, None)
    for name in ("--micro-batch-size", "--global-batch-size"):
        flag = by_spelling[name]
        assert (flag["type"], flag["default"], flag["required"]) == ("int", None, False), name
    assert by_spelling["--num-query-groups"]["type"] == "int"
    assert by_spelling["--group-query-attention"]["action"] == "store_true"
    assert by_spelling["--rampup-batch-size"]["nargs"] == 3


@pytest.mark.parametrize("name", ["--bf16", "--fp16", "--sequence-parallel", "--use-distributed-optimizer"])
def test_bare_switches_are_store_true(by_spelling, name):
    flag = by_spelling[name]
    assert (flag["action"], flag["type"], flag["default"], flag["nargs"]) == ("store_true", "bool-flag", False, 0)


def test_underscore_spellings_only_where_megatron_registers_them(by_spelling):
    assert "--tensor_model_parallel_size" not in by_spelling  # argparse rejects it (allow_abbrev=False)
    flag = by_spelling["--override-opt_param-scheduler"]
    assert "--override-opt-param-scheduler" in flag["spellings"]


def test_choices_and_custom_types(by_spelling):
    assert set(by_spelling["--recompute-granularity"]["choices"]) == {"full", "selective"}
    assert by_spelling["--moe-layer-freq"]["type"] == "custom"
    assert by_spelling["--moe-layer-freq"]["type_name"].endswith("moe_freq_type")


def test_deprecations(by_spelling):
    for name in ("--batch-size", "--warmup", "--model-parallel-size", "--checkpoint-activations",
                 "--use-rotary-position-embeddings", "--no-position-embedding", "--enable-cuda-graph",
                 "--hybrid-override-pattern", "--use-dist-ckpt", "--moe-layer-recompute"):
        assert by_spelling[name]["deprecated"], name
        assert by_spelling[name]["deprecation"], name
    for name in ("--tensor-model-parallel-size", "--optimizer", "--cuda-graph-modules", "--hybrid-layer-pattern",
                 "--fp8-param-gather", "--bf16"):
        assert not by_spelling[name]["deprecated"], name
    assert any("dist_muon" in s for s in by_spelling["--optimizer"]["deprecation_mentions"])
