"""FS rules through the real command line. One `check --format json` run over the rule fixtures
(a CLI run costs about a second): each bad fixture gives exactly the findings marked
`# expect: CODE` in it (code, severity, line; pointer null), each good fixture gives none."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import FIXTURES, check_json

RULES = FIXTURES / "fsdp2" / "rules"
MARKER = re.compile(r"#\s*expect:((?:\s*FS\d{3})+)")
WORLD = ("--world-size", "32")  # FS019 needs a world size; no literal mesh of the fixtures is over or (sharded) under 32 ranks but its own
SEVERITY = {"FS001": "error", "FS002": "warning", "FS003": "error", "FS004": "warning", "FS005": "warning",
            "FS006": "error", "FS007": "warning", "FS008": "error", "FS009": "warning", "FS010": "error",
            "FS011": "error", "FS012": "info", "FS013": "info", "FS014": "warning", "FS015": "error",
            "FS016": "warning", "FS017": "warning", "FS018": "error", "FS019": "error", "FS020": "warning",
            "FS021": "error", "FS022": "warning", "FS023": "error", "FS024": "warning", "FS025": "warning",
            "FS026": "warning", "FS027": "info", "FS028": "error", "FS029": "error", "FS030": "error",
            "FS031": "error", "FS032": "error", "FS033": "error", "FS034": "error",
            "FS035": "error", "FS036": "error", "FS037": "error", "FS038": "error", "FS039": "error",
            "FS040": "error", "FS041": "error", "FS042": "error", "FS043": "error", "FS044": "error",
            "FS047": "error", "FS048": "error", "FS049": "error", "FS050": "error", "FS051": "error"}


def expected(path):
    """(code, line) of every `# expect: CODE` marker."""
    found = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        found.extend((code, number) for codes in MARKER.findall(line) for code in codes.split())
    return found


@pytest.fixture(scope="module")
def checked():
    rc, out = check_json(str(RULES), "--select", "FS", *WORLD)
    by_file: dict[str, list[dict]] = {}
    for finding in out["findings"]:
        by_file.setdefault("/".join(finding["file"].rsplit("/", 2)[-2:]), []).append(finding)
    return rc, out, by_file


@pytest.mark.parametrize("code", sorted(SEVERITY))
def test_bad_fixture_reports_the_rule(code, checked):
    path = RULES / code / "bad.py"
    marks = expected(path)
    # a bad fixture may also show another rule on the same code (FS024's FSDP1 calls are FS007 too)
    assert marks and code in {c for c, _ in marks}, f"{path.name} needs `# expect: {code}` markers"
    findings = checked[2].get(f"{code}/bad.py", [])
    assert sorted((f["code"], f["line"]) for f in findings) == sorted(marks)
    for finding in findings:
        assert finding["severity"] == SEVERITY[finding["code"]]
        assert finding["pointer"] is None
        assert finding["column"] >= 1 and finding["message"] and finding["fix"]
        assert Path(finding["file"]).resolve() == path.resolve()


@pytest.mark.parametrize("code", sorted(SEVERITY))
def test_good_fixture_is_clean(code, checked):
    assert sorted((f["code"], f["line"]) for f in checked[2].get(f"{code}/good.py", [])) == \
        sorted(expected(RULES / code / "good.py"))
    assert code not in {c for c, _ in expected(RULES / code / "good.py")}


# The catalog rules (fsdp2.md §9-10): (code, fixture, the text the finding's column points at and its
# occurrence, words of the message, words of the fix).
CATALOG_CASES = [
    ("FS021", "bad.py", "fully_shard(model.output)", 1, ("tied parameter", "ValueError", "first forward"),
     "fully_shard([model.output, model.tok_embeddings])"),
    ("FS021", "bad.py", "fully_shard(model)", 2, ("line 31", "line 32"), "leave both to the root"),
    ("FS022", "bad.py", "model.to_empty(", 1, ("uninitialised", "reset_parameters"), "set_model_state_dict"),
    ("FS023", "bad.py", "layer.attention.magnitude", 1, ("model.layers[i].attention.magnitude", "AttributeError",
                                                         "_local_tensor"), "before fully_shard"),
    ("FS023", "bad.py", "model.norm.register_parameter", 1, ("model.norm.shift",), "before fully_shard"),
    ("FS024", "bad.py", "FSDP(Transformer(), sharding_strategy=ShardingStrategy.NO_SHARD", 1,
     ("NO_SHARD", "reshard_after_forward=False still shards"), "DistributedDataParallel"),
    ("FS024", "bad.py", "FSDP(  # expect", 1, ("HYBRID_SHARD", "2-D mesh"),
     'mesh_dim_names=("replicate", "shard")), reshard_after_forward=True'),
    ("FS025", "bad.py", "fully_shard(layer", 1, ("default reshard_after_forward", "PipelineStage, line 14",
                                                 "every micro-batch"), "reshard_after_forward=False"),
    ("FS025", "bad.py", "fully_shard(stage_module", 1, ("reshard_after_forward=True",), "reshard_after_forward=False"),
    ("FS026", "bad.py", "torch.nn.utils.clip_grad_norm_", 1, ("this rank's stage only", "PipelineStage, line 15"),
     "clip_grads_with_norm_"),
    ("FS027", "bad.py", "fully_shard(model", 1, ("only sharding call", "one group"), "on each block of model"),
    ("FS028", "bad.py", "apex.optimizers.FusedAdam", 1, ("GPU-only", "CPUOffloadPolicy (line 9)", "step fails"),
     "torch.optim.AdamW"),
]


@pytest.mark.parametrize("code,name,marker,occurrence,words,fix", CATALOG_CASES,
                         ids=[f"{c[0]}-{c[2][:24]}" for c in CATALOG_CASES])
def test_catalog_rule_case_table(code, name, marker, occurrence, words, fix, checked):
    from rule_cases import marker_position

    path = RULES / code / name
    line, column = marker_position(path, marker, occurrence, skip_comments=True)
    found = [f for f in checked[2].get(f"{code}/{name}", []) if f["code"] == code and f["line"] == line]
    assert len(found) == 1, (code, line, checked[2].get(f"{code}/{name}"))
    finding = found[0]
    assert (Path(finding["file"]).resolve(), finding["line"], finding["column"]) == (path.resolve(), line, column)
    assert finding["severity"] == SEVERITY[code] and finding["pointer"] is None
    assert all(word in finding["message"] for word in words), finding["message"]
    assert fix in finding["fix"], finding["fix"]


def test_the_run_reads_every_fixture_as_fsdp2_and_fails_on_errors(checked):
    rc, out, _ = checked
    assert sorted(Path(f["path"]).resolve() for f in out["files"]) == sorted(p.resolve() for p in RULES.rglob("*.py"))
    assert {f["format"] for f in out["files"]} == {"fsdp2"}
    assert rc == 1


def test_every_fs_rule_has_documentation_and_fixtures():
    from shardshift.rules import all_rules

    rules = [rule for rule in all_rules() if rule.code.startswith("FS")]
    assert {rule.code for rule in rules} == set(SEVERITY)
    for rule in rules:
        doc = rule.documentation()
        for section in ("## What it does", "## Why is this bad", "## Example", "## Use instead"):
            assert section in doc, (rule.code, section)
        assert rule.severity == SEVERITY[rule.code]
        assert rule.formats == ("fsdp2",)
        assert (RULES / rule.code / "bad.py").is_file() and (RULES / rule.code / "good.py").is_file()


def test_syntax_errors_and_ordinary_python(tmp_path):
    broken = tmp_path / "shard.py"
    broken.write_text("from torch.distributed.fsdp import fully_shard\n\nfor layer in model.layers\n    fully_shard(layer)\n")
    (tmp_path / "train.py").write_text("import torch\nmodel = torch.nn.Linear(2, 2)\n")
    (tmp_path / "notes.txt").write_text("fully_shard(model)\n")
    rc, out = check_json(str(tmp_path))
    assert [(Path(f["path"]).resolve(), f["format"]) for f in out["files"]] == [(broken.resolve(), "fsdp2")]
    assert [(f["code"], f["line"], f["severity"]) for f in out["findings"]] == [("SS001", 3, "error")]
    assert "invalid Python" in out["findings"][0]["message"]
    assert rc == 1


OTHER_BAD = sorted(p for p in RULES.glob("FS*/bad_*.py"))


@pytest.mark.parametrize("path", OTHER_BAD, ids=[f"{p.parent.name}/{p.name}" for p in OTHER_BAD])
def test_each_further_bad_fixture_gives_its_markers(path, checked):
    """The further bad fixtures of a rule (one per check site of the coverage map, issue 22) give exactly
    the findings their `# expect:` markers name."""
    marks = expected(path)
    assert marks and path.parent.name in {c for c, _ in marks}, f"{path.name} needs `# expect:` markers"
    findings = checked[2].get(f"{path.parent.name}/{path.name}", [])
    assert sorted((f["code"], f["line"]) for f in findings) == sorted(marks)
    assert all(f["severity"] == SEVERITY[f["code"]] and f["fix"] for f in findings)


def test_fs012_on_a_pinned_torch_27_reports_any_explicit_value_on_the_root(checked):
    """FSDP2-RAF-ROOT's other half (issue 22's second look): with torch <= 2.7 pinned in the setup's
    tree, an explicit value on the root is ignored (the root was always kept gathered after forward)."""
    bad = checked[2].get("torch27/bad.py", [])
    assert [(f["code"], f["line"], f["severity"]) for f in bad] == [("FS012", 8, "info")]
    assert "torch 2.7.1 (" in bad[0]["message"] and "torch27/requirements.txt:1) ignores" in bad[0]["message"]
    assert "reshard_after_forward=False" in bad[0]["message"]
    assert checked[2].get("torch27/good.py", []) == []


def test_argument_rules_stay_silent_where_torch_accepts_or_the_code_cannot_tell(tmp_path):
    """Precision of FS029-FS034: alternatives of an undecided `if`, a forward after the root, prefetch
    lists built from modules the reader cannot resolve, a slice by a name the code flattened."""
    (tmp_path / "shard.py").write_text(
        "import copy\n"
        "import torch\n"
        "from torch.distributed.device_mesh import init_device_mesh\n"
        "from torch.distributed.fsdp import fully_shard\n"
        "mesh = init_device_mesh('cuda', (4, 8), mesh_dim_names=('replicate', 'shard'))\n"
        "dp = mesh['replicate', 'shard']._flatten('dp')\n"
        "def wrap(model, fast, modules):\n"
        "    for layer in model.layers:\n"
        "        fully_shard(layer, mesh=mesh['dp'])\n"
        "    if fast:\n"
        "        fully_shard(model, reshard_after_forward=False)\n"
        "    else:\n"
        "        fully_shard(model)\n"
        "    model(torch.ones(1, 8))\n"
        "    model.set_modules_to_forward_prefetch(modules)\n"
        "    model.set_modules_to_backward_prefetch([layer for layer in get_layers(model)])\n"
        "    model.set_reduce_scatter_max_input_buffers(4)\n"
        "    return copy.deepcopy(model.state_dict())\n")
    _, out = check_json(str(tmp_path), "--select", "FS029,FS030,FS031,FS032,FS033,FS034")
    assert out["findings"] == []


def test_process_group_rules_stay_silent_where_torch_accepts_or_the_code_cannot_tell(tmp_path):
    """Precision of FS038/FS039: a placeholder timeout, a guarded init, a group destroyed between the mesh
    and the init, an init only in one branch; and the same init after the mesh, unguarded, is found."""
    head = ("import os\nfrom datetime import timedelta\nimport torch.distributed as dist\n"
            "from torch.distributed.device_mesh import init_device_mesh\nfrom torch.distributed.fsdp import fully_shard\n"
            "def shard(model, again):\n    mesh = init_device_mesh('cuda', (int(os.environ['WORLD_SIZE']),))\n")
    quiet = {"guarded": "    if not dist.is_initialized():\n        dist.init_process_group('nccl')\n",
             "destroyed": "    dist.destroy_process_group()\n    dist.init_process_group('nccl', timeout=timedelta(minutes=5))\n",
             "branch": "    if again:\n        dist.init_process_group('nccl')\n",
             "placeholder": "    dist.destroy_process_group()\n    dist.init_process_group('nccl', timeout='FILL_IN')\n"}
    for name, body in quiet.items():
        (tmp_path / f"{name}.py").write_text(head + body + "    fully_shard(model, mesh=mesh)\n")
    _, out = check_json(str(tmp_path), "--select", "FS038,FS039")
    assert out["findings"] == []
    (tmp_path / "twice.py").write_text(head + "    dist.init_process_group('nccl', timeout=600)\n"
                                              "    fully_shard(model, mesh=mesh)\n")
    _, out = check_json(str(tmp_path), "--select", "FS038,FS039")
    assert sorted(f["code"] for f in out["findings"]) == ["FS038", "FS039"]


def test_fs040_judges_only_what_the_call_shows_and_names_the_unknown_premise(tmp_path):
    """Precision of FS040: values the reader cannot know (a variable store, an argparse backend, a URL
    built at run time), another library's init_process_group and torch's accepted spellings are quiet;
    a name an imported package may register is an info; a string device_id is an error."""
    head = "import os\nimport torch\nimport torch.distributed as dist\nfrom torch.distributed.fsdp import fully_shard\n"
    quiet = {
        "variable_store": "def f(store):\n    dist.init_process_group('gloo', store=store)\n",
        "maybe_none_store": "store = None\nif os.environ.get('S'):\n    store = dist.TCPStore('h', 1)\n"
                            "dist.init_process_group('gloo', store=store, init_method='env://')\n",
        "argparse_backend": "import argparse\np = argparse.ArgumentParser()\np.add_argument('--backend')\n"
                            "dist.init_process_group(p.parse_args().backend)\n",
        "runtime_url": "dist.init_process_group('nccl', init_method=f\"tcp://{os.environ['H']}:1?rank=0\", rank=0)\n",
        "other_library": "from mylib.dist import init_process_group\ninit_process_group('ncll')\n",
        "accepted": "dist.init_process_group('NCCL', device_id=torch.device('cuda', int(os.environ['LOCAL_RANK'])))\n",
        "accepted_int": "dist.init_process_group('cuda:nccl,cpu:gloo', device_id=0, init_method='file:///tmp/x')\n",
    }
    for name, body in quiet.items():
        (tmp_path / f"{name}.py").write_text(head + body)
    _, out = check_json(*(str(tmp_path / f"{name}.py") for name in quiet), "--select", "FS040", "--isolated")
    assert out["findings"] == []
    (tmp_path / "plugin.py").write_text(head + "import torch_npu\ndist.init_process_group('hccl', "
                                               "init_method='etcd://h:1')\n")
    (tmp_path / "string_device.py").write_text(head + "dist.init_process_group('nccl', device_id='cuda:0')\n")
    _, out = check_json(str(tmp_path / "plugin.py"), str(tmp_path / "string_device.py"), "--select", "FS040",
                        "--isolated")
    found = {Path(f["file"]).name: f for f in out["findings"]}
    assert found["plugin.py"]["severity"] == "info" and "torch_npu" in found["plugin.py"]["unknown_context"]["what"]
    assert found["string_device.py"]["severity"] == "error" and "AttributeError" in found["string_device.py"]["message"]


def test_mesh_ranks_and_float_sizes_are_judged_only_from_literals(tmp_path):
    """FS029's rank checks read a literal mesh (or torch.tensor of one); a mesh built at run time
    (torch.arange(...).view(...)) and a rank judged against an unknown world are quiet. FS041 takes a
    true division or a float literal, never a floor division or an int(...) of a division."""
    head = ("import os\nimport torch\nfrom torch.distributed.device_mesh import DeviceMesh, init_device_mesh\n"
            "from torch.distributed.fsdp import fully_shard\nW = int(os.environ['WORLD_SIZE'])\n")
    quiet = {
        "arange": "m = DeviceMesh('cuda', torch.arange(8).view(2, 4))\n",
        "floor": "m = init_device_mesh('cuda', (W // 2, 2), mesh_dim_names=('dp', 'tp'))\n",
        "wrapped": "m = init_device_mesh('cuda', (int(W / 2), 2), mesh_dim_names=('dp', 'tp'))\n",
        "large_rank": "m = DeviceMesh('cuda', [[0, 1], [2, 300]])\n",  # no --world-size: the world is unknown
    }
    for name, body in quiet.items():
        (tmp_path / f"{name}.py").write_text(head + body + "fully_shard(torch.nn.Linear(2, 2), mesh=m)\n")
    _, out = check_json(*(str(tmp_path / f"{n}.py") for n in quiet), "--select", "FS029,FS041", "--isolated")
    assert out["findings"] == []
    (tmp_path / "tensor.py").write_text(head + "m = DeviceMesh('cuda', torch.tensor([[0, 1], [1, 2]]))\n"
                                               "fully_shard(torch.nn.Linear(2, 2), mesh=m)\n")
    (tmp_path / "literal.py").write_text(head + "m = init_device_mesh('cuda', (4.0,))\n"
                                                "fully_shard(torch.nn.Linear(2, 2), mesh=m)\n")
    _, out = check_json(str(tmp_path / "tensor.py"), str(tmp_path / "literal.py"), "--select", "FS029,FS041",
                        "--isolated")
    assert sorted((Path(f["file"]).name, f["code"]) for f in out["findings"]) == [("literal.py", "FS041"),
                                                                                  ("tensor.py", "FS029")]


def test_fs024_is_an_info_where_the_file_also_offers_fully_shard(tmp_path):
    """As FS007: an FSDP1 strategy in one function and fully_shard in another is a choice made outside the
    file (a config or flag picks the wrapper), so the missing plain equivalent is an info there."""
    text = ("from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, ShardingStrategy, fully_shard\n"
            "def legacy(model):\n    return FSDP(model, sharding_strategy=ShardingStrategy.HYBRID_SHARD)\n")
    (tmp_path / "alone.py").write_text(text)
    (tmp_path / "both.py").write_text(text + "def modern(model):\n    fully_shard(model)\n")
    _, out = check_json(str(tmp_path / "alone.py"), str(tmp_path / "both.py"), "--select", "FS024", "--isolated")
    assert sorted((Path(f["file"]).name, f["severity"]) for f in out["findings"]) == [("alone.py", "warning"),
                                                                                      ("both.py", "info")]


def test_mesh_joins_are_judged_only_where_the_reader_ties_meshes_and_modules(tmp_path):
    """FS047-FS049 rest on the meshes and modules the reader resolves: a plan or mesh from a parameter,
    slices of two roots of one size that torch joins, a mesh equal to fully_shard's after other DTensors
    were made (torch may hand them the earlier object), the root's own int reshard and a call under an
    undecided `if` are quiet."""
    head = ("from torch.distributed.device_mesh import init_device_mesh\n"
            "from torch.distributed.fsdp import DataParallelMeshDims, fully_shard\n"
            "from torch.distributed.tensor import distribute_module\n"
            "from torch.distributed.tensor.parallel import ColwiseParallel, parallelize_module\n"
            "a = init_device_mesh('cuda', (4, 8), mesh_dim_names=('dp', 'tp'))\n"
            "b = init_device_mesh('cuda', (4, 8), mesh_dim_names=('dp', 'tp'))\n")
    quiet = {
        "plan_parameter": "def wrap(model, plan):\n    parallelize_module(model, a['tp'], plan)\n"
                          "    fully_shard(model, mesh=a)\n",
        "mesh_parameter": "def wrap(model, tp_mesh):\n    parallelize_module(model, tp_mesh, {'w': ColwiseParallel()})\n"
                          "    fully_shard(model.w, mesh=a['dp'])\n",
        "two_roots_orthogonal": "def wrap(model):\n    parallelize_module(model, b['tp'], {'w': ColwiseParallel()})\n"
                                "    fully_shard(model.w, mesh=a['dp'])\n",
        "equal_after_other_dtensors": "def wrap(model):\n    distribute_module(model.x, a)\n    distribute_module(model.y, b)\n"
                                      "    fully_shard(model.y, mesh=a, dp_mesh_dims=DataParallelMeshDims(shard='dp'))\n",
        "root_int_reshard": "def wrap(model):\n    parallelize_module(model, a['tp'], {'w': ColwiseParallel()})\n"
                            "    fully_shard(model, mesh=a['dp'], reshard_after_forward=2)\n",
        "undecided": "def wrap(model, tp):\n    if tp:\n        parallelize_module(model, b['tp'], {'w': ColwiseParallel()})\n"
                     "    fully_shard(model.w, mesh=a)\n",
    }
    for name, body in quiet.items():
        (tmp_path / f"{name}.py").write_text(head + body)
    _, out = check_json(*(str(tmp_path / f"{n}.py") for n in quiet), "--select", "FS047,FS048,FS049", "--isolated")
    assert out["findings"] == []
    (tmp_path / "whole.py").write_text(head + "def wrap(model):\n    parallelize_module(model, a['tp'], {'w': ColwiseParallel()})\n"
                                              "    fully_shard(model.w, mesh=a)\n"
                                              "    fully_shard(model, mesh=a['dp'])\n")
    (tmp_path / "other_root.py").write_text(head + "def wrap(model):\n    distribute_module(model, b)\n"
                                                   "    fully_shard(model, mesh=a, dp_mesh_dims=DataParallelMeshDims('dp'))\n")
    _, out = check_json(str(tmp_path / "whole.py"), str(tmp_path / "other_root.py"), "--select", "FS047,FS048",
                        "--isolated")
    assert sorted((Path(f["file"]).name, f["code"], f["line"]) for f in out["findings"]) == [
        ("other_root.py", "FS048", 9), ("whole.py", "FS047", 9)]
    assert "overlapping" in next(f["message"] for f in out["findings"] if f["code"] == "FS047")


def test_tp_and_fsdp_meshes_of_two_device_types_are_refused_only_where_both_types_are_literals(tmp_path):
    """FS047's device-type case: a literal TP mesh type against the literal type of the `mesh=` fully_shard gets
    (either way round) is an error; a type from a parameter, fully_shard's default mesh (the machine's
    accelerator), `ignored_params` and dp_mesh_dims give nothing (FS048 names no mesh objects for torch's device
    refusal); a file that builds on the meta device makes it an info (torch skips meta tensors)."""
    head = ("import torch\n"
            "from torch.distributed.device_mesh import init_device_mesh\n"
            "from torch.distributed.fsdp import DataParallelMeshDims, fully_shard\n"
            "from torch.distributed.tensor import distribute_module\n"
            "from torch.distributed.tensor.parallel import ColwiseParallel, parallelize_module\n"
            "a = init_device_mesh('cpu', (4, 8), mesh_dim_names=('dp', 'tp'))\n"
            "b = init_device_mesh('cuda', (4, 8), mesh_dim_names=('dp', 'tp'))\n")
    cases = {
        "reverse": "def wrap(model):\n    parallelize_module(model, b['tp'], {'w': ColwiseParallel()})\n"
                   "    fully_shard(model.w, mesh=a['dp'])\n",
        "meta": "def wrap():\n    with torch.device('meta'):\n        model = torch.nn.Linear(4, 4)\n"
                "    parallelize_module(model, a['tp'], ColwiseParallel())\n    fully_shard(model, mesh=b['dp'])\n",
        "device_parameter": "def wrap(model, device):\n    c = init_device_mesh(device, (4, 8), mesh_dim_names=('dp', 'tp'))\n"
                            "    parallelize_module(model, a['tp'], {'w': ColwiseParallel()})\n"
                            "    fully_shard(model.w, mesh=c['dp'])\n",
        "default_mesh": "def wrap(model):\n    parallelize_module(model, a['tp'], {'w': ColwiseParallel()})\n"
                        "    fully_shard(model.w)\n",
        "ignored": "def wrap(model):\n    parallelize_module(model, a['tp'], {'w': ColwiseParallel()})\n"
                   "    fully_shard(model.w, mesh=b['dp'], ignored_params=set(model.w.parameters()))\n",
        "dp_mesh_dims": "def wrap(model):\n    distribute_module(model, a)\n"
                        "    fully_shard(model, mesh=b, dp_mesh_dims=DataParallelMeshDims(shard='dp'))\n",
    }
    for name, body in cases.items():
        (tmp_path / f"{name}.py").write_text(head + body)
    _, out = check_json(*(str(tmp_path / f"{n}.py") for n in cases), "--select", "FS047,FS048", "--isolated")
    assert sorted((Path(f["file"]).name, f["code"], f["line"], f["severity"]) for f in out["findings"]) == [
        ("meta.py", "FS047", 12, "info"), ("reverse.py", "FS047", 10, "error")]
    reverse = next(f for f in out["findings"] if f["file"].endswith("reverse.py"))
    assert "got cuda for DTensor and cpu for FSDP" in reverse["message"] and "init_device_mesh(\"cpu\"" in reverse["fix"]


def test_a_larger_mesh_is_refused_and_a_smaller_one_only_where_fully_shard_gets_it(tmp_path):
    """FS019 says what torch's DeviceMesh does: it refuses a mesh of more ranks than the default group
    (RuntimeError) and builds a smaller one, on whose outside ranks fully_shard fails (IndexError, seen with
    gloo); a smaller mesh fully_shard never gets is not reported, and one under an undecided if is an info."""
    (tmp_path / "mesh.py").write_text("from torch.distributed.device_mesh import init_device_mesh\n"
                                      "from torch.distributed.fsdp import fully_shard\n"
                                      "small = init_device_mesh('cuda', (2, 8), mesh_dim_names=('dp', 'tp'))\nwhole = init_device_mesh('cuda', (4, 8))\n"
                                      "large = init_device_mesh('cuda', (8, 8))\nfully_shard(object(), mesh=whole)\n"
                                      "tp = init_device_mesh('cuda', (8,))\nfully_shard(object(), mesh=small['dp'])\n"
                                      "import os\nif os.environ.get('X'):\n    fully_shard(object(), mesh=tp)\n")
    _, out = check_json(str(tmp_path / "mesh.py"), "--select", "FS019", "--isolated", "--world-size", "32")
    assert [(f["line"], f["severity"]) for f in out["findings"]] == [(3, "error"), (5, "error"), (7, "info")]
    assert "Mesh should not be bigger than default world size 32, but found 64 ranks!" in out["findings"][1]["message"]
    assert "ranks 16 to 31 are not in it" in out["findings"][0]["message"]


def test_a_1d_mesh_over_every_rank_listing_one_twice_fails_on_its_coordinates(tmp_path):
    """FS029: with --world-size equal to the 1-D mesh's length torch takes the default group (no list
    check) and refuses the rank's coordinates; without a world size both outcomes are named."""
    (tmp_path / "mesh.py").write_text("from torch.distributed.device_mesh import DeviceMesh\n"
                                      "from torch.distributed.fsdp import fully_shard\n"
                                      "mesh = DeviceMesh('cuda', [0, 0, 2, 3])\nfully_shard(object(), mesh=mesh)\n")
    _, out = check_json(str(tmp_path / "mesh.py"), "--select", "FS029", "--isolated", "--world-size", "4")
    assert [f["code"] for f in out["findings"]] == ["FS029"] and "AssertionError" in out["findings"][0]["message"]
    assert "ValueError" not in out["findings"][0]["message"]
    _, out = check_json(str(tmp_path / "mesh.py"), "--select", "FS029", "--isolated")
    assert "ValueError" in out["findings"][0]["message"] and "AssertionError" in out["findings"][0]["message"]


def test_a_fully_shard_imported_from_outside_torch_is_not_judged_as_torchs(tmp_path):
    """FS042 states what torch's fully_shard does with a meta-built module; a repository's own function of that
    name (imported from its package, which may materialise the module first) is not torch's."""
    body = ("import torch\nfrom torch import nn\n{imports}\n\ndef main():\n"
            "    with torch.device('meta'):\n        model = nn.Sequential(nn.Linear(16, 16), nn.Linear(16, 16))\n"
            "    fully_shard(model)\n    loss = model(torch.randn(4, 16)).sum()\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from torch.distributed.fsdp import fully_shard as _fs\n\n"
                                                  "def fully_shard(module):\n    module.to_empty(device='cuda')\n"
                                                  "    return _fs(module)\n")
    cases = {"torch.py": "from torch.distributed.fsdp import fully_shard",
             "composable.py": "from torch.distributed._composable.fsdp import fully_shard",
             "own.py": "from pkg import fully_shard", "relative.py": "from .pkg import fully_shard",
             "renamed.py": "from pkg import shard as fully_shard"}
    for name, imports in cases.items():
        (tmp_path / name).write_text(body.format(imports=imports))
    _, out = check_json(*(str(tmp_path / n) for n in cases), "--select", "FS042", "--isolated")
    assert sorted(Path(f["file"]).name for f in out["findings"]) == ["composable.py", "torch.py"]


def test_unchecked_value_rules_stay_silent_where_torch_accepts_or_the_code_cannot_tell(tmp_path):
    """Precision of FS029's unchecked mesh values and FS050: a device type of an out-of-tree backend, one on a mesh
    nothing shards on, the writer's placeholders, a size or a dtype the code decides at run time, a mesh under an
    undecided `if`, the first dim name of an HSDP mesh (fully_shard slices by the last), a 1-D mesh's name."""
    (tmp_path / "shard.py").write_text(
        "import torch\n"
        "from torch.distributed.device_mesh import init_device_mesh\n"
        "from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard\n"
        "npu = init_device_mesh('npu', (32,))\n"
        "unused = init_device_mesh('gpu', (32,))\n"
        "filled = init_device_mesh('auto', (32,))\n"
        "hsdp = init_device_mesh('cuda', (4, 8), mesh_dim_names=(None, 'shard'))\n"
        "flat = init_device_mesh('cuda', (32,), mesh_dim_names=(None,))\n"
        "def wrap(model, nodes, dtype, big):\n"
        "    sized = init_device_mesh('cuda', (nodes, 0 if big else 8), mesh_dim_names=('replicate', 'shard'))\n"
        "    if big:\n"
        "        fully_shard(model, mesh=init_device_mesh('gpu', (-1,)))\n"
        "    for mesh in (npu, filled, hsdp, flat, sized):\n"
        "        fully_shard(model, mesh=mesh)\n"
        "    fully_shard(model, mp_policy=MixedPrecisionPolicy(param_dtype=dtype))\n"
        "    fully_shard(model, mp_policy=MixedPrecisionPolicy(param_dtype='auto'))\n"
        "    fully_shard(model, mp_policy=MixedPrecisionPolicy(param_dtype=torch.float32, reduce_dtype=torch.float32))\n",
        encoding="utf-8")
    _, out = check_json(str(tmp_path), "--select", "FS029,FS050")
    assert out["findings"] == []


def test_fs051_judges_only_a_container_the_file_binds_once(tmp_path):
    """A name that is also a function's parameter, a loop variable or bound twice may be another module; a subclass
    of ModuleList (which may define forward) is not judged."""
    (tmp_path / "shard.py").write_text(
        "from torch import nn\nfrom torch.distributed.fsdp import fully_shard\n"
        "blocks = nn.ModuleList([nn.Linear(4, 4)])\n"
        "def wrap(blocks):\n    fully_shard(blocks)\n"
        "twice = nn.ModuleList([nn.Linear(4, 4)])\ntwice = nn.Sequential(nn.Linear(4, 4))\nfully_shard(twice)\n"
        "class Stack(nn.ModuleList):\n    def forward(self, x):\n        return x\n"
        "stack = Stack([nn.Linear(4, 4)])\nfully_shard(stack)\n"
        "plain = nn.ModuleDict({'a': nn.Linear(4, 4)})\nfully_shard(plain)  # the one finding\n", encoding="utf-8")
    _, out = check_json(str(tmp_path / "shard.py"), "--select", "FS051", "--isolated")
    assert [f["line"] for f in out["findings"]] == [15]
