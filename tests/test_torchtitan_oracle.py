"""torchtitan's own ConfigManager (v0.2.2, the last release that reads a TOML) as the oracle.

Every TOML the writer emits loads with it, and what it resolves equals the Plan: round trips of the
corpus files (the text back unchanged, and `write(plan)` from the Plan alone) and conversions of the
fixture ds_configs and of the other formats' example fixtures (FSDP2 scripts, Plan YAML, setups,
Accelerate, Axolotl, Megatron). On the corpus, the files torchtitan refuses are exactly the ones TT001 / TT003
report as errors. On the TT101 / TT102 / PL101 fixtures, torchtitan's `ParallelDims` refuses exactly
the degrees TT101 / PL101 report, and `maybe_enable_amp` turns mixed precision off exactly where
TT102 warns. One child process loads every file (tests/torchtitan_oracle_child.py).

Install (CPU, no CUDA torch pulled in; torch 2.13 CPU is already there):
    pip install --no-deps torchtitan==0.2.2 tyro==1.0.17 docstring-parser==0.18.0 typeguard==4.6.1
"""

from __future__ import annotations

import glob
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from shardshift.formats import detect, reader
from shardshift.formats.torchtitan import read
from shardshift.formats.torchtitan.writer import convert, write
from shardshift.plan import Unknown

from conftest import FIXTURES, check_json, shown

pytestmark = pytest.mark.oracle

CORPUS = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "corpus", "torchtitan")
FILES = sorted(glob.glob(os.path.join(CORPUS, "*.toml")))
DS_FIXTURES = sorted((FIXTURES / "deepspeed").glob("*.json"))


def _convertible() -> list[Path]:
    """The fixture ds_configs and the other formats' example files (not the rule fixtures)."""
    found = []
    for path in sorted(FIXTURES.rglob("*")):
        if not path.is_file() or "rules" in path.parts:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if detect(str(path), text) not in (None, "torchtitan"):
            found.append(path)
    return found


CONVERTED = _convertible()
CHILD = Path(__file__).with_name("torchtitan_oracle_child.py")
DTYPES = {"bfloat16": "bf16", "float32": "fp32"}
# A custom config module (job.custom_config_module) that imports a package the oracle does not
# install (flux: datasets; vlm: torchdata): the schema cannot be built here, so the file is not judged.
MISSING_MODULE = "ModuleNotFoundError"


def _require():
    if importlib.util.find_spec("torchtitan") is None or importlib.util.find_spec("tyro") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("torchtitan 0.2.2 is not installed (see this module's docstring)")
        pytest.skip("torchtitan 0.2.2 is not installed")
    if not FILES:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the torchtitan corpus is missing at {CORPUS}")
        pytest.skip("the torchtitan corpus is not here")


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    """{name: (document, oracle result)} for every emitted TOML, loaded in one child process."""
    _require()
    folder = tmp_path_factory.mktemp("titan")
    emitted: dict[str, tuple] = {}
    for path in FILES:
        text = open(path, encoding="utf-8").read()
        source = read(text, path)
        name = os.path.basename(path)
        emitted[f"roundtrip/{name}"] = (source, convert(source).text)
        emitted[f"written/{name}"] = (source, write(source.plan))
    for path in CONVERTED:
        source = reader(detect(str(path), path.read_text(encoding="utf-8"))).read(path.read_text(encoding="utf-8"),
                                                                                  str(path))
        if source.syntax is None and source.plan is not None:
            name = str(path.relative_to(FIXTURES)).replace("/", "__")
            emitted[f"converted/{name}.toml"] = (source, convert(source).text)
    paths = []
    for name, (_, text) in emitted.items():
        target = folder / name.replace("/", "__")
        target.write_text(text, encoding="utf-8")
        paths.append(str(target))
    dims = [_degrees(read(p.read_text(), str(p)).plan, WORLD) for p in DIMS_FIXTURES]
    batches = [{"path": str(p), "world_size": WORLD} for p in BATCH_FIXTURES]
    done = subprocess.run([sys.executable, str(CHILD)], input=json.dumps({"files": paths, "dims": dims,
                                                                        "batches": batches}),
                          capture_output=True, text=True, timeout=600, cwd=folder)
    assert done.returncode == 0, done.stderr[-3000:]
    answer = json.loads(done.stdout)
    files = {name: (source, text, path, result)
             for (name, (source, text)), path, result in zip(emitted.items(), paths, answer["files"])}
    BATCHES.update(zip(BATCH_FIXTURES, answer["batches"]))
    return files, dict(zip(DIMS_FIXTURES, answer["dims"]))


WORLD = 8
# TT105: torchtitan's own batch check of Trainer.__init__ on each fixture, on WORLD processes
BATCH_FIXTURES = sorted((FIXTURES / "torchtitan" / "rules" / "TT105").glob("*.toml"))
BATCHES: dict = {}
DIMS_FIXTURES = sorted(p for code in ("TT101", "TT102", "TT103", "PL101")
                       for p in (FIXTURES / "torchtitan" / "rules" / code).glob("*.toml"))


def _degrees(plan, world: int) -> dict:
    """The ParallelDims arguments a torchtitan run of `plan` builds (the defaults where unset)."""
    def degree(field, default):
        value = getattr(plan.parallelism, field)
        return -1 if isinstance(value, Unknown) else default if value is None else value

    rest = plan.passthrough.get("torchtitan", {})
    dtype = rest.get("training", {}).get("dtype", "float32")
    etp = rest.get("parallelism", {}).get("expert_tensor_parallel_degree", 1)
    return {"dp_replicate": degree("data_parallel_replicate", 1), "dp_shard": degree("data_parallel_shard", -1),
            "cp": degree("context", 1), "tp": degree("tensor", 1), "pp": degree("pipeline", 1), "world_size": world,
            "ep": degree("expert", 1), "etp": etp,
            "dtype": "bfloat16", "storage": dtype}


def test_parallel_dims_and_mixed_precision_agree_with_tt101_tt102_pl101(loaded):
    _, dims = loaded
    _, output = check_json("--world-size", str(WORLD), *(str(p) for p in dims))
    for path, result in dims.items():
        codes = {f["code"] for f in output["findings"] if f["file"] == shown(path)}
        refused = "error" in result
        if refused:
            assert result["error"] == "AssertionError", result
            if "TT103" in codes:
                message = next(f["message"] for f in output["findings"] if f["file"] == shown(path) and f["code"] == "TT103")
                assert result["message"] in message, (result, message)
            elif any(f["file"] == shown(path) and "= 0 and stops at `assert dp_shard >= 1`" in f["message"]
                     for f in output["findings"]):
                assert result["message"] == "", result
            else:
                assert "Invalid parallel dims" in result["message"], result
        assert refused == bool(codes & {"TT101", "TT103", "PL101"}), (path, result, codes)
        storage = _degrees(read(path.read_text(), str(path)).plan, WORLD)["storage"]
        off = not refused and result["amp"] == "disabled" and storage == "float32"
        assert off == ("TT102" in codes), (path, result, codes)
    assert sum("error" in r for r in dims.values()) >= 2
    assert sum(r.get("amp") == "disabled" for r in dims.values()) >= 2


def _judged(loaded, prefix):
    out = {}
    for name, (source, text, path, result) in loaded[0].items():
        if name.startswith(prefix) and result.get("error") != MISSING_MODULE:
            out[name] = (source, text, path, result)
    return out


def test_torchtitan_stops_at_its_batch_check_exactly_where_tt105_reports(loaded):
    """The fixtures write their data-parallel degrees (replicate × shard = 8 = WORLD) or a global batch of
    0: TT105 needs no world size there, and torchtitan's Trainer asserts on exactly those."""
    assert len(BATCHES) == len(BATCH_FIXTURES) >= 3
    _, output = check_json(*(str(p) for p in BATCH_FIXTURES))
    reported = {os.path.basename(f["file"]) for f in output["findings"] if f["code"] == "TT105"}
    stopped = {p.name for p, result in BATCHES.items() if result.get("error") == "AssertionError"}
    assert reported == stopped and stopped >= {"bad.toml", "bad_degree.toml"}, (reported, BATCHES)
    assert any("global batch size must be multiple of local batch size times data-parallel degree"
               in r.get("message", "") for r in BATCHES.values())
    assert BATCHES[FIXTURES / "torchtitan" / "rules" / "TT105" / "good.toml"] == {"accumulation": 2}


def test_round_trips_are_the_source_text(loaded):
    for name, (source, text, _, _) in loaded[0].items():
        if name.startswith("roundtrip/"):
            assert text == source.text, name


def test_torchtitan_refuses_exactly_the_files_shardshift_reports(loaded):
    refused, accepted = [], []
    judged = _judged(loaded, "roundtrip/")
    # one CLI run for all, judged by the release the oracle runs (renames need a release: issue 30)
    _, output = check_json("--torchtitan-version", "0.2.2", *(source.path for source, _, _, _ in judged.values()))
    for name, (source, _, path, result) in judged.items():
        errors = [f for f in output["findings"] if f["severity"] == "error" and f["code"] in ("TT001", "TT002", "TT003")
                  and f["file"] == source.path]
        if "error" in result:
            assert result["error"] == "ValueError" and "Invalid field names" in result["message"], (name, result)
            assert errors, (name, result["message"])
            # the key torchtitan names is one shardshift names
            named = result["message"].split("data: {", 1)[1].split("}", 1)[0].strip("'")
            assert any(f["pointer"].rsplit("/", 1)[-1] == named for f in errors), (name, named, errors)
            refused.append(name)
        else:
            # The one real silent mistake the config manager does not see: v0.1's converter name "float8" in a
            # v0.2 file loads, then the converter registry lookup fails (KeyError, model_converter.py).
            late = [f for f in errors if f["code"] == "TT003" and f["pointer"].startswith("/model/converters/")]
            assert [f for f in errors if f not in late] == [], (name, errors)
            assert all(source.data["model"]["converters"][int(f["pointer"].rsplit("/", 1)[1])] == "float8"
                       for f in late)
            accepted.append(name)
    assert len(refused) >= 5 and len(accepted) >= 15, (refused, accepted)


def test_written_plans_resolve_like_their_sources(loaded):
    results = {name: result for name, (_, _, _, result) in loaded[0].items()}
    compared = 0
    for name, (source, text, path, result) in _judged(loaded, "roundtrip/").items():
        if "error" in result:
            continue
        written = results[name.replace("roundtrip/", "written/")]
        assert "ok" in written, (name, written)
        mine, theirs = dict(written["ok"]), dict(result["ok"])
        for config in (mine, theirs):
            config["job"] = {k: v for k, v in config["job"].items() if k != "config_file"}
        assert mine == theirs, name
        compared += 1
    assert compared >= 15


def test_resolved_values_equal_the_plan(loaded):
    checked = 0
    for name, (source, text, path, result) in loaded[0].items():
        if "ok" not in result:
            assert name.startswith("roundtrip/") or name.startswith("written/"), (name, result)
            continue
        plan = read(text, path).plan
        _compare(plan, result["ok"], name)
        checked += 1
    assert checked >= 2 * 15 + len(DS_FIXTURES) + 20


def test_ds_config_conversions_load_and_keep_the_exact_values(loaded):
    converted = 0
    for name, (source, text, path, result) in loaded[0].items():
        if not name.startswith("converted/"):
            continue
        assert "ok" in result, (name, result)
        converted += 1
        config = result["ok"]
        plan = source.plan
        conversion = convert(source)
        exact = {e.source for e in conversion.entries if e.status == "exact"}
        for dotted, (section, key) in (("batch.micro", ("training", "local_batch_size")),
                                       ("batch.global_", ("training", "global_batch_size")),
                                       ("gradient_clipping", ("training", "max_norm")),
                                       ("optimizer.lr", ("optimizer", "lr")), ("optimizer.eps", ("optimizer", "eps")),
                                       ("optimizer.weight_decay", ("optimizer", "weight_decay"))):
            where = plan.provenance.get(dotted)
            if where is not None and where.pointer in exact:
                assert config[section][key] == plan.get(dotted), (name, dotted)
    assert converted >= len(DS_FIXTURES) + 20


def _compare(plan, config, name):
    """Every Plan field the reader lifted equals what torchtitan resolved."""
    p, t = config["parallelism"], config["training"]
    degrees = {"data_parallel_replicate": "data_parallel_replicate_degree",
               "data_parallel_shard": "data_parallel_shard_degree", "tensor": "tensor_parallel_degree",
               "pipeline": "pipeline_parallel_degree", "context": "context_parallel_degree",
               "expert": "expert_parallel_degree"}
    for field, key in degrees.items():
        value = getattr(plan.parallelism, field)
        if isinstance(value, Unknown):
            assert p[key] == -1, (name, key)
        elif value is not None:
            assert p[key] == value, (name, key)
    pairs = [(plan.batch.micro, t["local_batch_size"]), (plan.batch.sequence_length, t["seq_len"]),
             (plan.batch.global_, t["global_batch_size"]), (plan.gradient_clipping, t["max_norm"])]
    if plan.batch.accumulation == 1:
        assert t["global_batch_size"] == -1, name
    if plan.precision.param_dtype is not None:
        pairs.append((plan.precision.param_dtype, DTYPES[t["mixed_precision_param"]]))
    if plan.precision.reduce_dtype is not None:
        pairs.append((plan.precision.reduce_dtype, DTYPES[t["mixed_precision_reduce"]]))
    if plan.precision.fp8 is not None:
        assert plan.precision.fp8 == ("quantize.linear.float8" in config["model"]["converters"]), name
    o = config["optimizer"]
    if plan.optimizer is not None:
        pairs += [(plan.optimizer.name, o["name"]), (plan.optimizer.lr, o["lr"]), (plan.optimizer.eps, o["eps"]),
                  (plan.optimizer.weight_decay, o["weight_decay"])]
        if plan.optimizer.betas is not None:
            pairs.append((plan.optimizer.betas, [o["beta1"], o["beta2"]]))
    s = config["lr_scheduler"]
    if plan.scheduler is not None:
        # components/lr_scheduler.py: lr_scheduler.total_steps when set, else training.steps
        total = s["total_steps"] if s["total_steps"] is not None else t["steps"]
        pairs += [(plan.scheduler.warmup_steps, s["warmup_steps"]), (plan.scheduler.total_steps, total),
                  (plan.scheduler.name, s["decay_type"])]
        for key, value in plan.scheduler.params.items():
            pairs.append((value, s[key]))
    if plan.activation_checkpointing is not None:
        pairs.append((plan.activation_checkpointing.enabled, config["activation_checkpoint"]["mode"] != "none"))
    reshard = plan.sharding.reshard_after_forward
    if reshard is not None:
        policy = p["fsdp_reshard_after_forward"]
        pairs.append((reshard, {"always": True, "never": False}.get(policy, not p["pipeline_parallel_degree"] > 1)))
    if plan.offload.params is not None:
        pairs.append((plan.offload.params.device == "cpu", t["enable_cpu_offload"]))
    for mine, theirs in pairs:
        if mine is not None:
            assert mine == theirs, (name, mine, theirs)


SPEC_CHILD = r'''
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("loader", sys.argv[1])
loader = importlib.util.module_from_spec(spec)
spec.loader.exec_module(loader)
loader.prepare()
out = {}
for name in json.loads(sys.argv[2]):
    try:
        train_spec = loader._torchtitan["get_train_spec"](name)
        out[name] = {"pipelining": train_spec.pipelining_fn is not None,
                     "validator": train_spec.build_validator_fn is not None}
    except Exception as error:  # noqa: BLE001
        out[name] = {"error": f"{type(error).__name__}: {error}"}
print(json.dumps(out))
'''


def test_the_train_spec_tables_of_tt106_tt107_are_torchtitans():
    """NO_PIPELINING and NO_VALIDATOR hold what torchtitan 0.2.2's get_train_spec gives for each model."""
    _require()
    from shardshift.rules.torchtitan.startup import MODELS, NO_PIPELINING, NO_VALIDATOR

    loader = Path(__file__).parent / "coverage_loaders" / "torchtitan.py"
    done = subprocess.run([sys.executable, "-c", SPEC_CHILD, str(loader), json.dumps(list(MODELS))],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    specs = json.loads(done.stdout.strip().splitlines()[-1])
    assert all("error" not in spec for spec in specs.values()), specs
    assert {name for name, spec in specs.items() if not spec["pipelining"]} == NO_PIPELINING
    assert {name for name, spec in specs.items() if not spec["validator"]} == NO_VALIDATOR
