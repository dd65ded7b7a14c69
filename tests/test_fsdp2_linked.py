"""FSDP2 code that calls a helper defined in another file given to `check` is followed into it
(fixtures/fsdp2/linked, written for these tests): the caller's Plan gets the helper's facts, each
with the helper's file as provenance; alone, the caller claims none of them; an import that two
given files could satisfy equally is not followed; mutual recursion across files terminates; the
FSDP2 rules still judge each file's own code, so a helper's mistake is reported once, in its file."""

from __future__ import annotations

import csv
import os
import shutil

import pytest

from shardshift.check import run_check
from shardshift.formats import fsdp2
from shardshift.plan import Unknown
from shardshift.rules.base import Context

from conftest import CORPUS, FIXTURES, ROOT, check_json

LINKED = FIXTURES / "fsdp2" / "linked"


def documents(*paths) -> dict[str, object]:
    """The documents of one `check` run over `paths`, by file name relative to the fixtures."""
    result = run_check([str(p) for p in paths], Context())
    return {os.path.relpath(d.path, LINKED): d for d in result.documents}


def test_sibling_helper_followed():
    found = documents(LINKED / "sibling")
    plan, helper = found["sibling/train.py"].plan, str(LINKED / "sibling" / "parallelize.py")
    expected = {  # field: (value, line in parallelize.py)
        "sharding.stage": (3, 17), "precision.param_dtype": ("bf16", 15), "precision.reduce_dtype": ("fp32", 15),
        "world.world_size": (8, 11), "parallelism.data_parallel_replicate": (2, 11),
        "parallelism.data_parallel_shard": (4, 11), "sharding.hybrid": (True, 11),
    }
    for dotted, (value, line) in expected.items():
        assert plan.get(dotted) == value, dotted
        where = plan.provenance[dotted]
        assert (where.file, where.line) == (helper, line), dotted
    assert plan.get("optimizer.name") == "AdamW"  # the script's own call, in the script
    assert plan.provenance["optimizer.name"].file == str(LINKED / "sibling" / "train.py")
    # in the script's positioned tree, a helper's setting sits at the call that led into the helper
    assert found["sibling/train.py"].position("/sharding/stage") == (10, 1)
    assert found["sibling/train.py"].position("/precision/param_dtype") == (10, 1)


def test_sibling_alone_claims_nothing_of_the_helper():
    found = documents(LINKED / "sibling" / "train.py")
    plan = found["sibling/train.py"].plan  # still FSDP2 code: it hands the model to an FSDP helper
    for dotted in ("sharding.stage", "precision.param_dtype", "world.world_size", "sharding.hybrid"):
        assert plan.get(dotted) is None, dotted
    assert plan.get("optimizer.name") == "AdamW"


def test_sibling_through_the_command_line():
    code, out = check_json(str(LINKED / "sibling"))
    assert code == 0 and out["findings"] == []
    assert [f["format"] for f in out["files"]] == ["fsdp2", "fsdp2"]
    # what the script's Plan knows only at run time is listed at the helper's lines, never the script's
    assert all(u["file"].endswith("parallelize.py") for u in out["unknowns"])
    code, alone = check_json(str(LINKED / "sibling" / "train.py"))
    assert code == 0 and alone["findings"] == [] and alone["unknowns"] == []


def test_package_import_in_the_helpers_module_environment():
    found = documents(LINKED / "pkg_case")
    helper = str(LINKED / "pkg_case" / "mypkg" / "parallelize.py")
    for name in ("pkg_case/train.py", "pkg_case/train_module.py"):  # `from mypkg.parallelize import`, `import ... as`
        plan = found[name].plan
        assert plan.get("sharding.stage") == 3, name
        assert plan.get("precision.param_dtype") == "bf16", name  # PARAM_DTYPE, a constant of the helper's module
        assert plan.provenance["precision.param_dtype"].file == helper
    assert found["pkg_case/train.py"].plan.get("offload.params.device") is None  # apply_fsdp(model, offload=False)
    assert found["pkg_case/train_module.py"].plan.get("offload.params.device") == "cpu"  # the default, True
    assert found["pkg_case/train_module.py"].plan.provenance["offload.params.device"].file == helper


def test_two_equally_likely_helpers_are_not_followed():
    found = documents(LINKED / "ambiguous")
    assert found["ambiguous/train.py"].plan.get("sharding.stage") is None
    # with one of them given, the import names it
    for folder, stage in (("one", 3), ("two", 2)):
        found = documents(LINKED / "ambiguous" / "train.py", LINKED / "ambiguous" / folder / "parallelize.py")
        assert found["ambiguous/train.py"].plan.get("sharding.stage") == stage


def test_mutual_recursion_across_files_terminates():
    found = documents(LINKED / "mutual")
    plan = found["mutual/train.py"].plan
    # left.py shards with the default (resharded), right.py with False: which holds is not one stage
    stage = plan.get("sharding.stage")
    assert isinstance(stage, Unknown) and "the default at left.py line 9, False at right.py line 9" in stage.reason
    assert plan.provenance["sharding.stage"].file == str(LINKED / "mutual" / "left.py")
    code, out = check_json(str(LINKED / "mutual"))
    assert code == 0 and len(out["files"]) == 3


HELPER = '''from torch.distributed.fsdp import CPUOffloadPolicy, fully_shard


def apply_fsdp(model, cpu_offload=False):
    policy = CPUOffloadPolicy() if cpu_offload else None
    fully_shard(model, offload_policy=policy)
    for block in model.layers:  # after the root: FS003, in this file
        fully_shard(block, offload_policy=policy)
'''

IMPORT_FORMS = {  # the script's import and call -> whether the helper is followed
    "from .parallelize import apply_fsdp\napply_fsdp(model, flag)\n": True,
    "from . import parallelize\nparallelize.apply_fsdp(model, flag)\n": True,
    "import proj.parallelize\nproj.parallelize.apply_fsdp(model, flag)\n": True,
    "from proj.parallelize import apply_fsdp as shard\nshard(model, flag)\n": True,
    "from elsewhere.parallelize import apply_fsdp\napply_fsdp(model, flag)\n": False,  # another package
    "from proj.other import apply_fsdp\napply_fsdp(model, flag)\n": False,  # a file not given
}


@pytest.mark.parametrize("script", list(IMPORT_FORMS))
def test_import_forms(script, tmp_path):
    package = tmp_path / "proj"
    package.mkdir()
    (package / "parallelize.py").write_text(HELPER)
    (package / "train.py").write_text("import sys\nflag = sys.argv[1] == 'offload'\nmodel = object()\n" + script)
    found = {os.path.basename(d.path): d for d in run_check([str(package)], Context()).documents}
    plan = found["train.py"].plan
    if not IMPORT_FORMS[script]:
        assert plan.get("offload.params.device") is None
        return
    value = plan.get("offload.params.device")  # a condition in the helper names the helper's file
    assert isinstance(value, Unknown) and "`cpu_offload` (parallelize.py line 5)" in value.reason
    assert plan.provenance["offload.params.device"].file == str(package / "parallelize.py")


def test_rules_judge_each_files_own_code(tmp_path):
    (tmp_path / "parallelize.py").write_text(HELPER)
    (tmp_path / "train.py").write_text("from parallelize import apply_fsdp\nmodel = object()\napply_fsdp(model)\n")
    code, out = check_json(str(tmp_path))
    assert code == 1
    assert [(os.path.basename(f["file"]), f["code"], f["line"]) for f in out["findings"]] == [
        ("parallelize.py", "FS003", 8)]


def test_link_needs_two_documents_and_an_import():
    path = LINKED / "sibling" / "train.py"
    alone = fsdp2.read(path.read_text(), str(path))
    data, root = alone.data, alone.root
    fsdp2.link([alone])
    assert alone.data is data and alone.root is root
    other = LINKED / "mutual" / "left.py"
    helper = fsdp2.read(other.read_text(), str(other))
    fsdp2.link([alone, helper])  # train.py imports no module that left.py is
    assert alone.data is data and helper.root is not None


# --- the shared corpus: torchtitan's llama3 parallelize.py and the distributed/fsdp.py it calls ---

TORCHTITAN = ("fsdp2/pytorch__torchtitan__torchtitan__models__llama3__parallelize.py",
              "fsdp2/pytorch__torchtitan__torchtitan__distributed__fsdp.py")


def corpus_layout(tmp_path):
    """The two corpus files at their paths in the torchtitan repository (same commit, MANIFEST.tsv)."""
    if not CORPUS.is_dir():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{CORPUS} is missing in CI")
        pytest.skip("the shared corpus is not present")
    with open(CORPUS / "MANIFEST.tsv", newline="") as handle:
        rows = {row["file"]: row for row in csv.DictReader(handle, delimiter="\t")}
    assert len({rows[name]["commit"] for name in TORCHTITAN}) == 1
    placed = []
    for name in TORCHTITAN:
        target = tmp_path / rows[name]["path_in_repo"]
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(CORPUS / name, target)
        placed.append(target)
    return placed


def test_corpus_llama3_parallelize_followed_into_distributed_fsdp(tmp_path):
    caller, helper = corpus_layout(tmp_path)
    found = {d.path: d for d in run_check([str(caller), str(helper)], Context()).documents}
    plan = found[str(caller)].plan
    expected = {  # what apply_fsdp_to_decoder does with the arguments parallelize_llama passes
        "sharding.stage": "`reshard_after_forward_policy matches 'always'` (fsdp.py line 125)",
        "precision.param_dtype": "run-time value `param_dtype`",
        "precision.reduce_dtype": "run-time value `reduce_dtype`",
        "offload.params.device": "set only when `cpu_offload` (fsdp.py line 231)",
    }
    for dotted, reason in expected.items():
        value = plan.get(dotted)
        assert isinstance(value, Unknown) and reason in value.reason, (dotted, value)
        assert plan.provenance[dotted].file == str(helper), dotted
    alone = fsdp2.read(caller.read_text(), str(caller)).plan
    assert all(alone.get(dotted) is None for dotted in expected)
    code, out = check_json(str(caller), str(helper), cwd=ROOT)
    assert code == 0 and not [f for f in out["findings"] if f["severity"] == "error"]
    assert {f["path"] for f in out["files"]} == {str(caller), str(helper)}
