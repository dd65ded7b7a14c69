"""Issue 33: failures with no `raise` of their own. DeepSpeed's config parser and Accelerate's launcher compute
with values they never check (a string batch size divided, a null boolean joined with `|`, a port that is a
word); each place that fails so is an implicit site, found by mutation (bench/mutation_deepspeed.py,
bench/mutation_accelerate.py) and mapped in src/shardshift/data/coverage/<framework>-implicit.tsv to the rule that
reports it and a bad fixture, with a good one beside it (Axolotl's, through its schema and normalize_config,
torchtitan's, through its start-up path, transformers' TrainingArguments, built from a script's literal
keywords, Megatron-LM's, each flag of a launch script through its argument path and process groups, and FSDP2's,
each literal argument of fully_shard, its policies and its mesh through torch on a fake process group, are found
the same way and mutated here too). Here (oracle):

- mutating every ds_config DeepSpeed accepts (the fixtures and ../shared/corpus/deepspeed) finds no implicit site
  the table lacks (Accelerate's mutation takes minutes: bench/mutation_accelerate.py lists its sites);
- the framework fails at each row's site on its bad fixture and accepts the good fixture beside it (DeepSpeed on
  8 ranks; `accelerate launch` as tests/test_accelerate_oracle.py runs it);
- `shardshift check` reports the row's rule as an error on the bad fixture and no error or warning on the good one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT, check_json

TABLES = ROOT / "src" / "shardshift" / "data" / "coverage"
CORPUS = ROOT.parent / "shared" / "corpus" / "deepspeed"


def _rows(framework: str = "deepspeed") -> list[tuple[str, str, Path]]:
    rows = []
    for raw in (TABLES / f"{framework}-implicit.tsv").read_text(encoding="utf-8").splitlines():
        if raw.strip() and not raw.startswith("#"):
            site, rule, case = raw.split("\t")
            assert rule.startswith("rule: "), raw
            rows.append((site, rule.removeprefix("rule: "), FIXTURES / case))
    return rows


@pytest.mark.parametrize("framework, good", [("deepspeed", "good.json"), ("accelerate", "good"), ("axolotl", "good.yaml"),
                                            ("torchtitan", "good.toml"), ("transformers", "good.py"),
                                            ("megatron", "good.sh"), ("fsdp2", "good.py")])
def test_each_row_names_a_registered_rule_and_a_bad_and_good_fixture(framework, good):
    from shardshift.rules import all_rules

    codes = {rule.code for rule in all_rules()}
    rows = _rows(framework)
    assert len(rows) == len({site for site, _, _ in rows}) >= 5
    for site, rule, bad in rows:
        assert rule in codes, site
        assert bad.exists() and (bad.parent / good).exists(), site


def _child_sites(child: str, rows: list[tuple[str, str, Path]], good: str, sources: list[str],
                 env: dict[str, str] | None = None) -> None:
    """Run `child` (a framework's own path on each fixture, and its mutation of `sources`): each row's bad fixture
    fails at the row's site, its good one is accepted, and the mutation finds no site the table lacks."""
    cases = [str(bad) for _, _, bad in rows] + [str(bad.parent / good) for _, _, bad in rows]
    done = subprocess.run([sys.executable, "-c", child, str(ROOT / "tests")], input=json.dumps([cases, sources]),
                          capture_output=True, text=True, timeout=600, env={**os.environ, **(env or {})})
    assert done.returncode == 0, done.stderr[-3000:]
    sites, found = json.loads(done.stdout.strip().splitlines()[-1])
    for site, _, bad in rows:
        assert sites[str(bad)] == site, (bad, sites[str(bad)])
        assert sites[str(bad.parent / good)] is None, bad.parent
    assert set(found) <= {site for site, _, _ in rows}, sorted(set(found) - {site for site, _, _ in rows})


CHILD = r"""
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import implicit_sites

def config_of(path):
    try:
        return json.loads(Path(path).read_text(encoding="utf-8-sig"))
    except (ValueError, UnicodeDecodeError):
        return None

cases, sources = json.loads(sys.stdin.read())
sites = {path: implicit_sites.site_of(config_of(path), 8) for path in cases}
found = implicit_sites.mutation_sites([c for c in map(config_of, sources) if c is not None])
print(json.dumps([sites, found]))
"""


@pytest.mark.oracle
def test_deepspeed_fails_at_each_site_on_its_bad_fixture_and_mutation_finds_no_other():
    sources = [str(p) for p in sorted((FIXTURES / "deepspeed").glob("*.json")) + sorted(CORPUS.glob("*.json"))]
    assert len(sources) > 100  # the corpus is there (CI has ../shared)
    _child_sites(CHILD, _rows(), "good.json", sources, env={"DS_ACCELERATOR": "cpu"})


def test_a_raw_boolean_deepspeed_joins_with_or_is_said_to_raise_typeerror(tmp_path):
    """wall_clock_breakdown and flops_profiler.enabled are joined with `|` while parsing: a string, null or float
    there is DeepSpeed's TypeError (the table's _initialize_params site), not a truth test."""
    _, output = check_json("--isolated", "--world-size", "8",
                           str(FIXTURES / "deepspeed" / "implicit" / "wall_clock_breakdown_string" / "bad.json"))
    (finding,) = [f for f in output["findings"] if f["code"] == "DS102"]
    assert "raises TypeError" in finding["message"] and "tests it for truth" not in finding["message"]


ACCELERATE = _rows("accelerate")


@pytest.mark.oracle
def test_accelerate_fails_at_each_site_on_its_bad_fixture_and_not_on_the_good_one():
    from test_accelerate_oracle import run_oracle

    configs = [str(folder / "config.yaml") for _, _, bad in ACCELERATE for folder in (bad, bad.parent / "good")]
    outcomes = run_oracle(configs)
    for site, _, bad in ACCELERATE:
        assert outcomes[str(bad / "config.yaml")].get("site") == site, (bad, outcomes[str(bad / "config.yaml")])
        good = outcomes[str(bad.parent / "good" / "config.yaml")]
        assert good["stage"] is None, (bad.parent, good["error"])


AXOLOTL_CHILD = r"""
import json, sys, tempfile
from pathlib import Path
tests = Path(sys.argv[1])
sys.path.insert(0, str(tests))
import implicit_sites
from implicit_sites import mutated_sites, raising_site
loader = implicit_sites.coverage_loader("axolotl")
import axolotl
import yaml
EXPLICIT = ("ValidationError", "ValueError", "AssertionError", "DeprecationWarning")

def site(path):
    try:
        loader.load(Path(path), stage="normalize")
    except Exception as error:
        return "explicit" if type(error).__name__ in EXPLICIT else raising_site(error, axolotl) or "explicit"
    return None

def config_of(path):
    try:
        return yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except yaml.YAMLError:
        return None

cases, sources = json.loads(sys.stdin.read())
sites = {path: site(path) for path in cases}
with tempfile.TemporaryDirectory() as scratch:
    target = Path(scratch, "mutant.yaml")

    def write(config):
        target.write_text(yaml.safe_dump(config), encoding="utf-8")
        return target

    found = mutated_sites([(config_of(path), path) for path in sources], site, write)
print(json.dumps([sites, found]))
"""


@pytest.mark.oracle
def test_axolotl_fails_at_each_site_on_its_bad_fixture_and_mutation_finds_no_other():
    sources = [str(p) for p in sorted((ROOT.parent / "shared" / "corpus" / "axolotl").glob("*.y*ml"))
               + sorted((FIXTURES / "axolotl" / "rules").rglob("good*.y*ml"))]
    assert len(sources) > 100
    _child_sites(AXOLOTL_CHILD, _rows("axolotl"), "good.yaml", sources)


TORCHTITAN_CHILD = r"""
import json, sys, tempfile, tomllib
from pathlib import Path
tests = Path(sys.argv[1])
sys.path.insert(0, str(tests))
import implicit_sites
from implicit_sites import mutated_sites, raising_site
loader = implicit_sites.coverage_loader("torchtitan")
import torchtitan
EXPLICIT = ("ValueError", "AssertionError", "SystemExit", "NotImplementedError", "RuntimeError")

def toml(config):
    def value(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float)):
            return repr(v)
        if isinstance(v, str):
            return json.dumps(v)
        if v is None:
            raise TypeError("TOML has no null")
        return "[" + ", ".join(value(x) for x in v) + "]"
    lines = []
    def table(prefix, d):
        if prefix:
            lines.append(f"[{prefix}]")
        lines.extend(f"{k} = {value(v)}" for k, v in d.items() if not isinstance(v, dict))
        for k, v in d.items():
            if isinstance(v, dict):
                table(f"{prefix}.{k}" if prefix else k, v)
    table("", config)
    return "\n".join(lines) + "\n"

def site(path):
    try:
        loader.load(Path(path))
    except BaseException as error:
        # outside torchtitan: a module the fixture names, not a value computed with
        return "explicit" if type(error).__name__ in EXPLICIT else raising_site(error, torchtitan) or "explicit"
    return None

cases, sources = json.loads(sys.stdin.read())
sites = {path: site(path) for path in cases}
with tempfile.TemporaryDirectory() as scratch:
    target = Path(scratch, "mutant.toml")

    def write(config):
        try:
            target.write_text(toml(config), encoding="utf-8")
        except TypeError:
            return None  # TOML has no null
        return target

    found = mutated_sites([(tomllib.loads(Path(path).read_text(encoding="utf-8")), path) for path in sources], site,
                          write)
print(json.dumps([sites, found]))
"""


@pytest.mark.oracle
def test_torchtitan_fails_at_each_site_on_its_bad_fixture_and_mutation_finds_no_other():
    sources = [str(p) for p in sorted((FIXTURES / "torchtitan" / "rules").rglob("good*.toml"))]
    _child_sites(TORCHTITAN_CHILD, _rows("torchtitan"), "good.toml", sources)


TRANSFORMERS_CHILD = r"""
import json, sys, tempfile
from pathlib import Path
tests = Path(sys.argv[1])
sys.path.insert(0, str(tests))
import implicit_sites
from implicit_sites import mutated_sites, raising_site
loader = implicit_sites.coverage_loader("transformers")
import transformers
# what TrainingArguments raises on purpose (its own checks; an enum's value it does not know; a deepspeed file it
# cannot find, refused by Accelerate)
EXPLICIT = ("ValueError", "NotImplementedError", "ImportError", "RuntimeError")
# keys a call may lack, each with a value TrainingArguments takes: given, then swapped for its neighbours
ADDED = {"output_dir": "out", "per_device_train_batch_size": 8, "per_device_eval_batch_size": 8,
         "gradient_accumulation_steps": 4, "num_train_epochs": 3, "max_steps": 100, "learning_rate": 5e-5,
         "weight_decay": 0.01, "max_grad_norm": 1.0, "warmup_steps": 10, "logging_steps": 10, "save_steps": 500,
         "eval_steps": 100, "save_total_limit": 2, "seed": 42, "dataloader_num_workers": 2,
         "metric_for_best_model": "loss", "greater_is_better": False, "eval_strategy": "steps",
         "save_strategy": "steps", "logging_strategy": "steps", "lr_scheduler_type": "cosine", "optim": "adamw_torch",
         "bf16": True, "fp16": False, "gradient_checkpointing": True, "load_best_model_at_end": False,
         "torch_empty_cache_steps": 10, "eval_accumulation_steps": 2, "label_smoothing_factor": 0.1,
         "ddp_timeout": 1800, "run_name": "run", "do_train": True, "do_eval": True, "push_to_hub": False,
         "remove_unused_columns": False, "dataloader_drop_last": True, "logging_first_step": True,
         "save_only_model": False, "log_level": "info", "ddp_find_unused_parameters": False}

def site(path):
    try:
        loader.load(Path(path), stage="arguments")
    except Exception as error:
        return "explicit" if type(error).__name__ in EXPLICIT else raising_site(error, transformers) or "explicit"
    return None

cases, sources = json.loads(sys.stdin.read())
sites = {path: site(path) for path in cases}
calls = []  # (each call's literal keywords, a deepspeed file named from the script's folder, its script)
for path in map(Path, sources):
    for call in loader._calls(path):
        kwargs = loader.literal_keywords(call)
        if isinstance(kwargs.get("deepspeed"), str) and kwargs["deepspeed"]:
            kwargs["deepspeed"] = str(path.parent / kwargs["deepspeed"])
        calls.append((kwargs, path))
with tempfile.TemporaryDirectory() as scratch:
    target = Path(scratch, "mutant.py")

    def write(kwargs):
        keywords = ", ".join(f"{key}={value!r}" for key, value in kwargs.items())
        target.write_text(f"from transformers import TrainingArguments\nargs = TrainingArguments({keywords})\n",
                          encoding="utf-8")
        return target

    found = mutated_sites(calls, site, write, ADDED)
print(json.dumps([sites, found]))
"""


@pytest.mark.oracle
def test_transformers_fails_at_each_site_on_its_bad_fixture_and_mutation_finds_no_other():
    sources = sorted({str(p) for p in [*FIXTURES.rglob("good*.py"), *(FIXTURES / "transformers").rglob("*.py")]
                      if not p.name.startswith("bad") and "TrainingArguments(" in p.read_text(encoding="utf-8")})
    assert len(sources) > 20
    _child_sites(TRANSFORMERS_CHILD, _rows("transformers"), "good.py", sources)


MEGATRON_CHILD = r"""
import json, sys, tempfile
from pathlib import Path
tests = Path(sys.argv[1])
sys.path.insert(0, str(tests))
import implicit_sites
loader = implicit_sites.coverage_loader("megatron")
import megatron
judge = loader._state["judge"]

def site(path):
    try:
        loader.load(Path(path), stage="startup")
    except BaseException as error:  # the loader's RuntimeError names a refusal; the Judge kept Megatron's own
        return implicit_sites.megatron_site(judge.last_error or error, megatron) or "explicit"
    return None

cases, sources = json.loads(sys.stdin.read())
sites = {path: site(path) for path in cases}
configs, flags = [], {}
for path in sources:
    config, known = implicit_sites.megatron_flags(path)
    configs.append((config, path))
    flags.update(known)
with tempfile.TemporaryDirectory() as scratch:
    target = Path(scratch, "mutant.sh")

    def write(config):
        target.write_text(implicit_sites.megatron_script(config), encoding="utf-8")
        return target

    # each (flag, neighbour) on one source: the sources share their model flags (under a minute)
    found = implicit_sites.mutated_sites(configs, site, write, near=implicit_sites.megatron_near(flags, 1))
print(json.dumps([sites, found]))
"""


@pytest.mark.oracle
def test_megatron_fails_at_each_site_on_its_bad_fixture_and_mutation_finds_no_other():
    """Megatron's arguments, config and process groups (tests/coverage_loaders/megatron.py, stage=startup) on each
    row's fixtures, and on the mutants of the launch scripts it accepts among the rule fixtures' good ones."""
    sources = sorted(str(p) for p in (FIXTURES / "megatron" / "rules").rglob("good*.sh"))
    assert len(sources) > 40
    _child_sites(MEGATRON_CHILD, _rows("megatron"), "good.sh", sources)


FSDP2_CHILD = r"""
import json, os, sys, tempfile, warnings
from pathlib import Path
tests = Path(sys.argv[1])
sys.path.insert(0, str(tests))
import implicit_sites
loader = implicit_sites.coverage_loader("fsdp2")
import torch
warnings.simplefilter("ignore")  # torch's deprecation and device warnings, once per mutant

def site(path):
    try:
        loader.load(Path(path))
    except Exception as error:  # a fixture's own failure (a module it imports, a name it lacks) is no site
        return implicit_sites.fsdp2_site(error, torch) or "explicit"
    return None

cases, sources = json.loads(sys.stdin.read())
sites = {path: site(path) for path in cases}
found = {}
with tempfile.TemporaryDirectory() as scratch:
    target = Path(scratch, "mutant.py")
    for path in sources:
        if site(path) is not None:
            continue  # a fixture the loader cannot run without options (its own process group, a model it imports)
        for _, text in implicit_sites.fsdp2_mutants(Path(path).read_text(encoding="utf-8")):
            target.write_text(text, encoding="utf-8")
            where = site(target)
            if where not in (None, "explicit"):
                found[where] = found.get(where, 0) + 1
print(json.dumps([sites, found]))
"""


@pytest.mark.oracle
def test_fsdp2_fails_at_each_site_on_its_bad_fixture_and_mutation_finds_no_other():
    """torch 2.13's init_device_mesh, fully_shard and first forward (tests/coverage_loaders/fsdp2.py, a fake process
    group of 32 ranks) on each row's fixtures, and on the mutants of the rule fixtures' good files the loader runs
    without options: each literal argument of fully_shard, its policies, init_device_mesh and FSDPModule's setters
    swapped for its neighbours (tests/implicit_sites.py, fsdp2_mutants)."""
    sources = sorted(str(p) for p in (FIXTURES / "fsdp2" / "rules").rglob("good*.py"))
    assert len(sources) > 40
    # HF_HUB_OFFLINE: a fixture that loads a Hugging Face model fails at once instead of waiting on the network
    _child_sites(FSDP2_CHILD, _rows("fsdp2"), "good.py", sources, env={"HF_HUB_OFFLINE": "1"})


# framework -> (the good fixture beside each bad one, what `check` is told): Axolotl's verdicts hold from 0.21.0;
# an Accelerate case is a folder with the launch (run.sh) that leaves every value to the file; the transformers
# fixtures are judged by the release fixtures/transformers/requirements.txt pins (5.24.0)
REPORTED = {"deepspeed": ("good.json", ("--world-size", "8")), "accelerate": ("good", ()),
            "axolotl": ("good.yaml", ("--axolotl-version", "0.21.0")), "torchtitan": ("good.toml", ()),
            "transformers": ("good.py", ()), "megatron": ("good.sh", ()), "fsdp2": ("good.py", ())}


@pytest.mark.parametrize("framework", sorted(REPORTED))
def test_shardshift_reports_each_rows_rule_on_its_bad_fixture_and_no_error_or_warning_on_the_good_one(framework):
    good, options = REPORTED[framework]
    rows = _rows(framework)
    _, output = check_json("--isolated", *options, *(str(p) for _, _, bad in rows for p in (bad, bad.parent / good)))
    found: dict[Path, set[tuple[str, str]]] = {}
    for finding in output["findings"]:
        file = (ROOT / finding["file"]).resolve()
        for place in (file, file.parent):  # a fixture file, or the folder of a fixture with its launch
            found.setdefault(place, set()).add((finding["code"], finding["severity"]))
    for site, rule, bad in rows:
        assert (rule, "error") in found.get(bad.resolve(), set()), (site, found.get(bad.resolve()))
        assert not {s for _, s in found.get((bad.parent / good).resolve(), set())} & {"error", "warning"}, site



FSDP2_RAISED_CHILD = r"""
import json, sys, warnings
from pathlib import Path
tests = Path(sys.argv[1])
sys.path.insert(0, str(tests))
import implicit_sites
loader = implicit_sites.coverage_loader("fsdp2")
warnings.simplefilter("ignore")

def raised(path):
    try:
        loader.load(Path(path))
    except Exception as error:
        return type(error).__name__
    return None

print(json.dumps({path: raised(path) for path in json.loads(sys.stdin.read())}))
"""

# mesh_shape literals: each dim None, 0 or negative, alone and together, in each order torch meets them
FSDP2_SHAPES = ["(0,)", "(0, 8)", "(4, 0)", "(2, 2, 0)", "(-1,)", "(-2, 4)", "(-4, -8)", "(None,)", "(4, None)",
                "(4, 0, -1)", "(0, -1)", "(-1, 0)", "(4, None, 0)", "(0, None)", "(2, -1, 0)", "[4, 0]"]


@pytest.mark.oracle
def test_fs029_names_the_exception_torch_raises_on_each_mesh_shape(tmp_path):
    """FS029's message on a mesh_shape dim of size None, 0 or negative names the exception torch 2.13 raises on that
    shape (tests/coverage_loaders/fsdp2.py), whichever of the dims torch meets first."""
    paths = []
    for index, shape in enumerate(FSDP2_SHAPES):
        path = tmp_path / f"shape_{index}.py"
        path.write_text("from torch.distributed.device_mesh import init_device_mesh\n"
                        "from torch.distributed.fsdp import fully_shard\n\n"
                        f"mesh = init_device_mesh('cuda', {shape})\n\n\n"
                        "def wrap(model):\n    fully_shard(model, mesh=mesh)\n", encoding="utf-8")
        paths.append(str(path))
    done = subprocess.run([sys.executable, "-c", FSDP2_RAISED_CHILD, str(ROOT / "tests")], input=json.dumps(paths),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    raised = json.loads(done.stdout.strip().splitlines()[-1])
    _, output = check_json("--isolated", "--select", "FS029", *paths)
    messages = {str(Path(f["file"]).resolve()): f["message"] for f in output["findings"]}
    for path, shape in zip(paths, FSDP2_SHAPES):
        message = messages.get(str(Path(path).resolve()), "")
        assert raised[path] and f"torch raises {raised[path]}" in message, (shape, raised[path], message)
