"""Issue 33: failures with no `raise` of their own. DeepSpeed's config parser and Accelerate's launcher compute
with values they never check (a string batch size divided, a null boolean joined with `|`, a port that is a
word); each place that fails so is an implicit site, found by mutation (bench/mutation_deepspeed.py,
bench/mutation_accelerate.py) and mapped in src/shardshift/data/coverage/<framework>-implicit.tsv to the rule that
reports it and a bad fixture, with a good one beside it (Axolotl's, through its schema and normalize_config,
and torchtitan's, through its start-up path, are found the same way and mutated here too). Here (oracle):

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
                                            ("torchtitan", "good.toml")])
def test_each_row_names_a_registered_rule_and_a_bad_and_good_fixture(framework, good):
    from shardshift.rules import all_rules

    codes = {rule.code for rule in all_rules()}
    rows = _rows(framework)
    assert len(rows) == len({site for site, _, _ in rows}) >= 5
    for site, rule, bad in rows:
        assert rule in codes, site
        assert bad.exists() and (bad.parent / good).exists(), site


CHILD = r"""
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import implicit_sites
cases, sources = json.loads(sys.stdin.read())
sites = {path: implicit_sites.site_of(json.loads(Path(path).read_text(encoding="utf-8")), 8) for path in cases}
found = implicit_sites.mutation_sites(sources)
print(json.dumps([sites, found]))
"""


@pytest.mark.oracle
def test_deepspeed_fails_at_each_site_on_its_bad_fixture_and_mutation_finds_no_other():
    rows = _rows()
    cases = [str(bad) for _, _, bad in rows] + [str(bad.parent / "good.json") for _, _, bad in rows]
    sources = []
    for path in sorted((FIXTURES / "deepspeed").glob("*.json")) + sorted(CORPUS.glob("*.json")):
        try:
            sources.append(json.loads(path.read_text(encoding="utf-8-sig")))
        except (ValueError, UnicodeDecodeError):
            continue
    assert len(sources) > 100  # the corpus is there (CI has ../shared)
    child = subprocess.run([sys.executable, "-c", CHILD, str(ROOT / "tests")], input=json.dumps([cases, sources]),
                           capture_output=True, text=True, timeout=600, env={**os.environ, "DS_ACCELERATOR": "cpu"})
    assert child.returncode == 0, child.stderr[-3000:]
    sites, found = json.loads(child.stdout.strip().splitlines()[-1])
    for site, _, bad in rows:
        assert sites[str(bad)] == site, (bad, sites[str(bad)])
        assert sites[str(bad.parent / "good.json")] is None, bad.parent
    assert set(found) <= {site for site, _, _ in rows}, sorted(set(found) - {site for site, _, _ in rows})


def test_shardshift_reports_each_rows_rule_on_its_bad_fixture_and_no_error_on_the_good_one():
    rows = _rows()
    paths = [str(p) for _, _, bad in rows for p in (bad, bad.parent / "good.json")]
    _, output = check_json("--isolated", "--world-size", "8", *paths)
    found: dict[Path, set[tuple[str, str]]] = {}
    for finding in output["findings"]:
        found.setdefault((ROOT / finding["file"]).resolve(), set()).add((finding["code"], finding["severity"]))
    for site, rule, bad in rows:
        assert (rule, "error") in found.get(bad.resolve(), set()), (site, found.get(bad.resolve()))
        assert not {s for _, s in found.get((bad.parent / "good.json").resolve(), set())} & {"error", "warning"}, site


def test_a_raw_boolean_deepspeed_joins_with_or_is_said_to_raise_typeerror(tmp_path):
    """wall_clock_breakdown and flops_profiler.enabled are joined with `|` while parsing: a string, null or float
    there is DeepSpeed's TypeError (the table's _initialize_params site), not a truth test."""
    _, output = check_json("--isolated", "--world-size", "8",
                           str(FIXTURES / "deepspeed" / "implicit" / "wall_clock_breakdown_string" / "bad.json"))
    (finding,) = [f for f in output["findings"] if f["code"] == "DS102"]
    assert "raises TypeError" in finding["message"] and "tests it for truth" not in finding["message"]


ACCELERATE = [(site, rule, bad) for site, rule, bad in _rows("accelerate")]


@pytest.mark.oracle
def test_accelerate_fails_at_each_site_on_its_bad_fixture_and_not_on_the_good_one():
    from test_accelerate_oracle import run_oracle

    configs = [str(folder / "config.yaml") for _, _, bad in ACCELERATE for folder in (bad, bad.parent / "good")]
    outcomes = run_oracle(configs)
    for site, _, bad in ACCELERATE:
        assert outcomes[str(bad / "config.yaml")].get("site") == site, (bad, outcomes[str(bad / "config.yaml")])
        good = outcomes[str(bad.parent / "good" / "config.yaml")]
        assert good["stage"] is None, (bad.parent, good["error"])


def test_shardshift_reports_each_accelerate_rows_rule_on_its_bad_folder_and_nothing_on_the_good_one():
    """Each bad folder holds the launch that leaves every value to the file (run.sh), the premise of the errors that
    a command-line flag would override."""
    paths = [str(folder) for _, _, bad in ACCELERATE for folder in (bad, bad.parent / "good")]
    _, output = check_json("--isolated", *paths)
    found: dict[Path, set[tuple[str, str]]] = {}
    for finding in output["findings"]:
        found.setdefault((ROOT / finding["file"]).resolve().parent, set()).add((finding["code"], finding["severity"]))
    for site, rule, bad in ACCELERATE:
        assert (rule, "error") in found.get(bad.resolve(), set()), (site, found.get(bad.resolve()))
        assert not {s for _, s in found.get((bad.parent / "good").resolve(), set())} & {"error", "warning"}, site


AXOLOTL_CHILD = r"""
import importlib.util, json, os, sys, traceback
from pathlib import Path
tests = Path(sys.argv[1])
sys.path.insert(0, str(tests))
from implicit_sites import leaves, neighbours, put
spec = importlib.util.spec_from_file_location("axolotl_loader", tests / "coverage_loaders" / "axolotl.py")
loader = importlib.util.module_from_spec(spec)
spec.loader.exec_module(loader)
loader.prepare()
import tempfile
import axolotl
import yaml
root = os.path.dirname(axolotl.__file__)
EXPLICIT = ("ValidationError", "ValueError", "AssertionError", "DeprecationWarning")

def site(path):
    try:
        loader.load(Path(path), stage="normalize")
    except Exception as error:
        if type(error).__name__ in EXPLICIT:
            return "explicit"
        inside = [(f, n) for f, n in traceback.walk_tb(error.__traceback__) if f.f_code.co_filename.startswith(root)]
        frame, line = inside[-1]
        where = "axolotl/" + os.path.relpath(frame.f_code.co_filename, root).replace(os.sep, "/")
        return f"{type(error).__name__} {where}:{frame.f_code.co_qualname}:{line}"
    return None

cases, sources = json.loads(sys.stdin.read())
sites = {path: site(path) for path in cases}
found = {}
with tempfile.TemporaryDirectory() as scratch:
    for source in sources:
        try:
            config = yaml.safe_load(Path(source).read_text(encoding="utf-8"))
        except yaml.YAMLError:
            continue
        if not isinstance(config, dict) or site(source) is not None:
            continue
        for pointer, value in leaves(config, lists=False):
            for mutant in neighbours(value):
                target = Path(scratch, "mutant.yaml")
                target.write_text(yaml.safe_dump(put(config, pointer, mutant)), encoding="utf-8")
                where = site(target)
                if where not in (None, "explicit"):
                    found[where] = found.get(where, 0) + 1
print(json.dumps([sites, found]))
"""


@pytest.mark.oracle
def test_axolotl_fails_at_each_site_on_its_bad_fixture_and_mutation_finds_no_other():
    rows = _rows("axolotl")
    cases = [str(bad) for _, _, bad in rows] + [str(bad.parent / "good.yaml") for _, _, bad in rows]
    sources = [str(p) for p in sorted((ROOT.parent / "shared" / "corpus" / "axolotl").glob("*.y*ml"))
               + sorted((FIXTURES / "axolotl" / "rules").rglob("good*.y*ml"))]
    assert len(sources) > 100
    child = subprocess.run([sys.executable, "-c", AXOLOTL_CHILD, str(ROOT / "tests")], input=json.dumps([cases, sources]),
                           capture_output=True, text=True, timeout=600)
    assert child.returncode == 0, child.stderr[-3000:]
    sites, found = json.loads(child.stdout.strip().splitlines()[-1])
    for site, _, bad in rows:
        assert sites[str(bad)] == site, (bad, sites[str(bad)])
        assert sites[str(bad.parent / "good.yaml")] is None, bad.parent
    assert set(found) <= {site for site, _, _ in rows}, sorted(set(found) - {site for site, _, _ in rows})


def test_shardshift_reports_each_axolotl_rows_rule_on_its_bad_fixture_and_no_error_on_the_good_one():
    rows = _rows("axolotl")
    paths = [str(p) for _, _, bad in rows for p in (bad, bad.parent / "good.yaml")]
    _, output = check_json("--isolated", "--axolotl-version", "0.21.0", *paths)
    found: dict[Path, set[tuple[str, str]]] = {}
    for finding in output["findings"]:
        found.setdefault((ROOT / finding["file"]).resolve(), set()).add((finding["code"], finding["severity"]))
    for site, rule, bad in rows:
        assert (rule, "error") in found.get(bad.resolve(), set()), (site, found.get(bad.resolve()))
        assert not {s for _, s in found.get((bad.parent / "good.yaml").resolve(), set())} & {"error", "warning"}, site


TORCHTITAN_CHILD = r"""
import importlib.util, json, os, sys, tempfile, tomllib, traceback
from pathlib import Path
tests = Path(sys.argv[1])
sys.path.insert(0, str(tests))
from implicit_sites import leaves, neighbours, put
spec = importlib.util.spec_from_file_location("torchtitan_loader", tests / "coverage_loaders" / "torchtitan.py")
loader = importlib.util.module_from_spec(spec)
spec.loader.exec_module(loader)
loader.prepare()
import torchtitan
root = os.path.dirname(torchtitan.__file__)
EXPLICIT = ("ValueError", "AssertionError", "SystemExit", "NotImplementedError", "RuntimeError")

def toml(config):
    def value(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float)):
            return repr(v)
        if isinstance(v, str):
            return json.dumps(v)
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
        if type(error).__name__ in EXPLICIT:
            return "explicit"
        inside = [(f, n) for f, n in traceback.walk_tb(error.__traceback__) if f.f_code.co_filename.startswith(root)]
        if not inside:
            return "explicit"  # outside torchtitan: a module the fixture names, not a value computed with
        frame, line = inside[-1]
        where = "torchtitan/" + os.path.relpath(frame.f_code.co_filename, root).replace(os.sep, "/")
        return f"{type(error).__name__} {where}:{frame.f_code.co_qualname}:{line}"
    return None

cases, sources = json.loads(sys.stdin.read())
sites = {path: site(path) for path in cases}
found = {}
with tempfile.TemporaryDirectory() as scratch:
    for source in sources:
        if site(source) is not None:
            continue
        config = tomllib.loads(Path(source).read_text(encoding="utf-8"))
        for pointer, value in leaves(config, lists=False):
            for mutant in neighbours(value):
                if mutant is None:
                    continue  # TOML has no null
                target = Path(scratch, "mutant.toml")
                target.write_text(toml(put(config, pointer, mutant)), encoding="utf-8")
                where = site(target)
                if where not in (None, "explicit"):
                    found[where] = found.get(where, 0) + 1
print(json.dumps([sites, found]))
"""


@pytest.mark.oracle
def test_torchtitan_fails_at_each_site_on_its_bad_fixture_and_mutation_finds_no_other():
    rows = _rows("torchtitan")
    cases = [str(bad) for _, _, bad in rows] + [str(bad.parent / "good.toml") for _, _, bad in rows]
    sources = [str(p) for p in sorted((FIXTURES / "torchtitan" / "rules").rglob("good*.toml"))]
    child = subprocess.run([sys.executable, "-c", TORCHTITAN_CHILD, str(ROOT / "tests")],
                           input=json.dumps([cases, sources]), capture_output=True, text=True, timeout=600)
    assert child.returncode == 0, child.stderr[-3000:]
    sites, found = json.loads(child.stdout.strip().splitlines()[-1])
    for site, _, bad in rows:
        assert sites[str(bad)] == site, (bad, sites[str(bad)])
        assert sites[str(bad.parent / "good.toml")] is None, bad.parent
    assert set(found) <= {site for site, _, _ in rows}, sorted(set(found) - {site for site, _, _ in rows})


def test_shardshift_reports_each_torchtitan_rows_rule_on_its_bad_fixture_and_no_error_on_the_good_one():
    rows = _rows("torchtitan")
    paths = [str(p) for _, _, bad in rows for p in (bad, bad.parent / "good.toml")]
    _, output = check_json("--isolated", *paths)
    found: dict[Path, set[tuple[str, str]]] = {}
    for finding in output["findings"]:
        found.setdefault((ROOT / finding["file"]).resolve(), set()).add((finding["code"], finding["severity"]))
    for site, rule, bad in rows:
        assert (rule, "error") in found.get(bad.resolve(), set()), (site, found.get(bad.resolve()))
        assert not {s for _, s in found.get((bad.parent / "good.toml").resolve(), set())} & {"error", "warning"}, site
