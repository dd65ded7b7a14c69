"""Every argument list the Megatron writer emits (`shardshift convert SCRIPT --to megatron-args`) from a launch
script whose values come from the script's own defaults (`${X:-d}`, `: "${X:=d}"`) passes Megatron-LM's own
parse_args + validate_args (+ the model config; tests/megatron_oracle.py), all judged in ONE child process
(issue 20). Where a value Megatron requires stays unknown (an environment variable with no default), the
written list lacks it and Megatron refuses it: the conversion report must say so (never silent).

Cases: this repository's fixtures (fixtures/megatron/defaults/) and corpus launch scripts whose values come
from defaults, each at the world size its launcher gives with those defaults."""

from __future__ import annotations

import json
import os

import pytest

from shardshift.formats.megatron import read
from shardshift.plan import Unknown

from conftest import FIXTURES, SHARED, run_cli
from megatron_oracle import available, judge
from test_megatron_oracle import ENVIRONMENT, _same, argv_for_oracle

pytestmark = pytest.mark.oracle

DEFAULTS = FIXTURES / "megatron" / "defaults"
GOOD = ["torchrun_defaults.sh", "arrays_defaults.sh", "deepspeed_launcher_defaults.sh", "srun_defaults.sh"]
# The flag Megatron requires that each of these leaves to the environment (no default in the script).
UNKNOWN_REQUIRED = {"unknown_layers.sh": "--num-layers"}
SCRIPTS = SHARED / "corpus" / "megatron-scripts"
# Corpus scripts (Megatron-LM's parser) whose degrees, batch or node count come from `${X:-d}` defaults.
CORPUS = [
    "NVIDIA__Megatron-LM__examples__mixtral__train_mixtral_8x7b_distributed.sh",  # NNODES=${SLURM_NNODES:-"1"}
    "NVIDIA__Megatron-LM__examples__gptoss__02_train.sh",  # GPUS_PER_NODE=${GPUS_PER_NODE:-8}, PP=${WORLD_SIZE}
    "NVIDIA__Megatron-LM__examples__megatron_fsdp__sbatch_mfsdp_deepseek_v3.sh",  # TP/EP/MBS/GBS=${X:-d}
    "NVIDIA__Megatron-LM__examples__llama__train_llama3_8b_h100_fp8.sh",  # MASTER_ADDR/PORT, paths ${1:-d}
]
DEFAULT_WORLD = 8


def _convert(path, tmp):
    report = tmp / (path.name + ".report.json")
    done = run_cli("convert", str(path), "--to", "megatron-args", "--report", str(report))
    assert done.returncode == 0, done.stderr
    return done.stdout, json.loads(report.read_text())


def _world(path) -> int:
    value = read(path.read_text(encoding="utf-8"), str(path)).plan.get("world.world_size")
    return value if isinstance(value, int) and not isinstance(value, Unknown) else DEFAULT_WORLD


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory):
    reason = available()
    if reason is not None:
        if os.environ.get("CI", "").strip().lower() in ("1", "true", "yes"):
            pytest.fail(f"the Megatron oracle must run in CI: {reason}")
        pytest.skip(reason)
    tmp = tmp_path_factory.mktemp("defaults")
    cases, keys, reports = [], [], {}
    paths = [DEFAULTS / n for n in (*GOOD, *UNKNOWN_REQUIRED)] + \
        ([SCRIPTS / n for n in CORPUS] if SCRIPTS.is_dir() else [])
    for path in paths:
        text, report = _convert(path, tmp)
        reports[path.name] = report
        world = _world(path)
        written = argv_for_oracle(read(text, str(tmp / (path.name + ".args"))))
        assert written is not None, f"{path.name}: the written list holds an unknown number"
        cases.append((written, world))
        keys.append((path.name, "written"))
        source = argv_for_oracle(read(path.read_text(encoding="utf-8"), str(path)))
        if source is not None:
            cases.append((source, world))
            keys.append((path.name, "source"))
    return dict(zip(keys, judge(cases))), reports


@pytest.mark.parametrize("name", GOOD)
def test_fixture_list_from_defaults_passes_megatron(verdicts, name):
    judged, reports = verdicts
    verdict = judged[(name, "written")]
    assert verdict.ok, (verdict.stage, verdict.error)
    # the values Megatron resolved are the scripts' defaults
    assert verdict.args["micro_batch_size"] is not None
    assert reports[name]["summary"]["unknown"] == 0


def test_fixture_values_are_the_defaults(verdicts):
    judged, _ = verdicts
    args = judged[("torchrun_defaults.sh", "written")].args
    assert (args["tensor_model_parallel_size"], args["pipeline_model_parallel_size"], args["data_parallel_size"],
            args["micro_batch_size"], args["global_batch_size"], args["bf16"]) == (2, 2, 2, 2, 64, True)
    args = judged[("srun_defaults.sh", "written")].args
    assert (args["tensor_model_parallel_size"], args["world_size"], args["data_parallel_size"],
            args["global_batch_size"]) == (4, 16, 4, 128)
    args = judged[("arrays_defaults.sh", "written")].args
    assert (args["world_size"], args["context_parallel_size"], args["num_query_groups"], args["fp16"],
            args["use_distributed_optimizer"]) == (8, 2, 4, True, True)


@pytest.mark.parametrize("name", sorted(UNKNOWN_REQUIRED))
def test_unknown_required_value_is_refused_and_reported(verdicts, name):
    judged, reports = verdicts
    flag = UNKNOWN_REQUIRED[name]
    verdict = judged[(name, "written")]
    assert not verdict.ok and verdict.stage == "validate", (verdict.stage, verdict.error)
    notes = [e for e in reports[name]["entries"] if e["status"] == "unknown" and flag in e["reason"]
             and "refuses" in e["reason"]]
    assert notes, reports[name]["entries"]


@pytest.mark.skipif(not SCRIPTS.is_dir(), reason="../shared/corpus is not present")
@pytest.mark.parametrize("name", CORPUS)
def test_corpus_list_from_defaults_passes_megatron_when_its_source_does(verdicts, name):
    """A corpus script's written list passes whenever the script's own words (defaults applied) do; when the
    source is refused, the written list is refused for the same cause (the writer adds no new problem), or
    only for this machine (no GPU, no Transformer Engine)."""
    judged, reports = verdicts
    written = judged[(name, "written")]
    source = judged.get((name, "source"))
    if written.ok:
        return
    if written.stage == "config" and ENVIRONMENT.search(written.error or ""):
        return  # past parse_args and validate_args: only the model config needs Transformer Engine here
    assert source is not None and not source.ok, (written.stage, written.error)
    assert _same(written, source, set()) or \
        any(e["status"] == "unknown" and "refuses" in e["reason"] for e in reports[name]["entries"]), \
        (written.stage, written.error, source.stage, source.error)
