"""Issue 11: "every pitfall in fsdp2.md (§9 and §10) that can be decided from code is a rule, or a
test names why it cannot be".

COVERAGE maps every entry of the FSDP2 reference's catalog — the known pitfalls of §9 (their own
IDs, P1...) and the lint-rule seeds of §10 (their bold names, FSDP2-...) — to the FS codes that
decide it, or to "not decidable:" and the precise reason (a fact that exists only at run time or
in no file shardshift reads). The IDs are parsed from the reference when it is present, so a new
entry fails here until it is mapped. Every code named must be a registered rule with a bad and a
good fixture, and must report something on its bad fixtures through the real CLI.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache

import pytest

from shardshift.rules import all_rules

from conftest import FIXTURES, SHARED, check_json

REFERENCE = SHARED / "reference" / "fsdp2.md"
NOT_DECIDABLE = "not decidable: "

COVERAGE: dict[str, tuple[str, ...] | str] = {
    # §9 known pitfalls
    "P1": ("FS001",),
    "P2": ("FS015",),
    # FS002: blocks sharded, the root never; FS027: only the root sharded (one group, no overlap)
    "P3": ("FS002", "FS027"),
    "P4": ("FS003",),
    "P5": ("FS021",),
    # FS004: reduce_dtype unset; FS005: low-precision reduction over many accumulation steps
    "P6": ("FS004", "FS005"),
    # FS022: to_empty with nothing initialising or loading afterwards; FS023: a new nn.Parameter after
    # fully_shard. Second look (issue 22): "non-persistent buffers not re-created after a load" is
    # decidable when the model's class is among the checked files (register_buffer(..., persistent=False)
    # in its __init__); the reader follows functions and imports into those files but not class bodies,
    # so no rule decides it yet. For a library's model class (transformers) it stays undecidable
    "P7": ("FS022", "FS023"),
    "P8": ("FS016",),
    "P9": ("FS012",),
    # FS020: HF gradient checkpointing plus checkpoint wrappers; FS017: AC applied after fully_shard
    "P10": ("FS020", "FS017"),
    # FS026: torch.nn.utils.clip_grad_norm_ under pipelining. The mixed-mesh case is not decided (second
    # look: following calls and imports does not change it): which parameters a tensor-parallel plan
    # covers (and so which mesh each parameter ends on) depends on the model's module tree, matched
    # against the plan's FQN patterns at run time
    "P11": ("FS026",),
    "P12": ("FS024",),
    "P13": ("FS025",),
    # FS014: fp16 without a scaler; FS013: ShardedGradScaler with fully_shard
    "P14": ("FS014", "FS013"),
    # apex's GPU-only fused optimizers. DeepSpeed's FusedAdam picks its kernel from the accelerator it
    # detects at run time (with the CPU accelerator it steps CPU tensors), and torch's fused=True
    # supports CPU tensors in 2.13, so neither is reported
    "P15": ("FS028",),
    "P16": (
        NOT_DECIDABLE + "how global ranks map to nodes is set when the job starts: for srun and mpirun by the "
        "scheduler's task distribution (srun --distribution, mpirun --map-by, each cluster's defaults), which no "
        "file shardshift reads states; FS006 decides whether the int divides the shard group. Second look (issue "
        "22): torchrun numbers ranks node by node (node rank x nproc-per-node + local rank), so there the int need "
        "only divide nproc-per-node, but the launch script's per-node count does not reach the FSDP2 rules yet"),
    # §10 lint-rule seeds
    "FSDP2-MESH-PRODUCT": ("FS019",),
    "FSDP2-HSDP-ORDER": ("FS009",),
    "FSDP2-RAF-INT": ("FS006",),
    # both halves: the explicit True of torch 2.8+, and (second look, issue 22: the torch release is now read
    # from the setup's pins or --torch-version) any explicit value on a setup pinned to torch <= 2.7
    "FSDP2-RAF-ROOT": ("FS012",),
    "FSDP2-NO-ROOT": ("FS002",),
    "FSDP2-OPT-ORDER": ("FS001", "FS015"),
    "FSDP2-TIED": ("FS021",),
    "FSDP2-REDUCE-DTYPE": ("FS004",),
    "FSDP2-META-INIT": ("FS022",),
    "FSDP2-NOSHARD-MAP": ("FS024",),
    "FSDP2-AC-DOUBLE": ("FS020",),
    "FSDP2-SCALER": ("FS014", "FS013"),
}

# Issue 22: pitfalls PyTorch's own FSDP2 documentation (the fully_shard page's user contract and docstrings,
# the FSDP2 tutorial) and GitHub issues describe, beyond the reference's catalog, mapped the same way:
# entry -> (where it is described, the FS codes that decide it or "not decidable: <why>").
DOCS = "https://docs.pytorch.org/docs/stable/distributed.fsdp.fully_shard.html"
DOCS_PITFALLS: dict[str, tuple[str, tuple[str, ...] | str]] = {
    "optimizer-on-dtensor-parameters": (DOCS + " (user contract: the optimizer must be initialized with the DTensor "
                                        "model.parameters())", ("FS001", "FS015")),
    "call-model-not-forward": (DOCS + " (user contract: call model(input), not model.forward(input))", ("FS016",)),
    "bottom-up-not-root-only": (DOCS + " (fully_shard docstring: apply bottom-up; do not shard only the root)",
                                ("FS003", "FS027")),
    "deepcopy-unsupported": ("torch _fully_shard.py _unimplemented_deepcopy: FSDP does not support deepcopy, use the "
                             "state dict", ("FS033",)),
    "forward-through-root-first": ("torch _fsdp_state.py _lazy_init: FSDP requires running forward through the root "
                                   "module first", ("FS034",)),
    "applied-once": ("torch _composable/contract.py: a composable API can be applied to a module once", ("FS032",)),
    "setter-takes-a-bool": (DOCS + " (FSDPModule.set_reshard_after_forward(reshard_after_forward: bool))", ("FS018",)),
    "int-reshard-non-trivial-divisor": (DOCS + " (reshard_after_forward: an int should be a non-trivial divisor of "
                                        "the shard dim size)", ("FS006",)),
    "hsdp-2d-mesh-roles-by-position": (DOCS + " (mesh: if 2D, shard across the 1st dim, replicate across the 0th)",
                                       ("FS009", "FS029")),
    "dp-mesh-dims-needs-names-and-dtensors": ("pytorch/pytorch PR #176334 (DataParallelMeshDims: the DP dims must "
                                              "be named mesh dims the parameters' DTensors replicate over)",
                                              ("FS030",)),
    "scalar-parameters": ("komikndr/raylight #5; torch _fsdp_init.py _verify_managed_param",
                          NOT_DECIDABLE + "a 0-dim parameter is declared in the model's class, mostly a library's "
                          "(quantised or scaled layers); the sharding code only names the module"),
    "container-without-forward": ("torch _fsdp_init.py _validate_module (fully_shard on an nn.ModuleList)",
                                  NOT_DECIDABLE + "whether model.layers is an nn.ModuleList or a module with its own "
                                  "forward is declared by the model's class, which the FSDP2 code imports from a "
                                  "library; the reader does not type a class's attributes"),
    "dim-smaller-than-shard-group": ("pytorch/pytorch #164554 (a parameter dim smaller than the shard group leaves "
                                     "empty shards; meta-device init then fails)",
                                     NOT_DECIDABLE + "parameter shapes come from the model's configuration and "
                                     "weights (hidden sizes, expert counts), not from the sharding code"),
    "grouped-module-reused-in-iteration": ("pytorch/pytorch #183702 (fully_shard([a, b]) fails when a grouped module "
                                           "runs again later in the same iteration)",
                                           NOT_DECIDABLE + "how often each grouped module runs per iteration is "
                                           "decided by the model's forward (and the loss code's chunking) at run "
                                           "time"),
    "uneven-nonzero-dim-shard": (DOCS + " (shard_placement_fn: sharding on a nonzero dim requires even sharding)",
                                 NOT_DECIDABLE + "shard_placement_fn is a callable run on each parameter when "
                                 "fully_shard runs, and the dims it divides are the model's"),
}

PITFALL_ROW = re.compile(r"^\|\s*(P\d+)\s*\|", re.MULTILINE)
SEED = re.compile(r"^-\s+\*\*(FSDP2-[A-Z0-9]+(?:-[A-Z0-9]+)*)\*\*", re.MULTILINE)


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    following = re.search(r"^## ", text[start + len(heading):], re.MULTILINE)
    return text[start:start + len(heading) + following.start()] if following else text[start:]


def catalog_ids(text: str) -> list[str]:
    """The pitfall IDs of §9's table and the seed names of §10's list, in order."""
    return (PITFALL_ROW.findall(_section(text, "## 9. Known pitfalls"))
            + SEED.findall(_section(text, "## 10. Lint-rule seeds")))


@pytest.mark.skipif(not REFERENCE.is_file(), reason="../shared/reference is not present")
def test_every_catalog_entry_is_mapped():
    ids = catalog_ids(REFERENCE.read_text(encoding="utf-8"))
    assert len(ids) == len(set(ids)) >= 28, ids
    assert sorted(set(ids) - COVERAGE.keys()) == [], "catalog entries without a rule or a reason"
    assert sorted(COVERAGE.keys() - set(ids)) == [], "entries no longer in the catalog"


def test_catalog_ids_are_parsed_from_the_two_sections_only():
    text = ("## 8. Order\n| P0 | before |\n- **FSDP2-EARLY** (error): x\n"
            "## 9. Known pitfalls and silent misconfigurations\n| # | Pitfall |\n|---|---|\n| P1 | a P7 |\n| P12 | b |\n"
            "## 10. Lint-rule seeds for the project\n- **FSDP2-A-B** (error): x **FSDP2-NOT** y\n- **FSDP2-C** (info): z\n"
            "## 11. After\n| P99 | c |\n- **FSDP2-LATE** (error): w\n")
    assert catalog_ids(text) == ["P1", "P12", "FSDP2-A-B", "FSDP2-C"]


def test_every_entry_is_rules_or_a_precise_reason():
    registered = {rule.code for rule in all_rules()}
    for entry, decided in COVERAGE.items():
        if isinstance(decided, str):
            assert decided.startswith(NOT_DECIDABLE) and len(decided) > len(NOT_DECIDABLE) + 40, entry
            continue
        assert decided and len(set(decided)) == len(decided), entry
        assert all(code.startswith("FS") for code in decided), entry
        assert set(decided) <= registered, (entry, set(decided) - registered)


@lru_cache(maxsize=None)
def _fixtures_of(code: str) -> tuple[str, ...]:
    return tuple(sorted(str(p) for p in FIXTURES.rglob("*") if p.is_file() and code in p.parts))


DECIDING = sorted({code for decided in (*COVERAGE.values(), *(d for _, d in DOCS_PITFALLS.values()))
                   if not isinstance(decided, str) for code in decided})


def test_every_documented_pitfall_is_rules_or_a_precise_reason():
    registered = {rule.code for rule in all_rules()}
    for entry, (source, decided) in DOCS_PITFALLS.items():
        assert len(source) > 20, entry
        if isinstance(decided, str):
            assert decided.startswith(NOT_DECIDABLE) and len(decided) > len(NOT_DECIDABLE) + 40, entry
            continue
        assert decided and set(decided) <= registered and all(c.startswith("FS") for c in decided), entry


@pytest.mark.parametrize("code", DECIDING)
def test_each_deciding_rule_has_bad_and_good_fixtures(code):
    names = [os.path.basename(p) for p in _fixtures_of(code)]
    assert any(n.startswith("bad") for n in names) and any(n.startswith("good") for n in names), (code, names)


def test_each_deciding_rule_reports_its_bad_fixtures():
    """Through the real CLI, in one run: every code of the table finds something in a bad fixture of
    its own (FS019 needs a world size; no literal mesh of the FS fixtures is over 32 ranks but its own)."""
    folders = sorted({os.path.dirname(p) for code in DECIDING for p in _fixtures_of(code)
                      if os.path.basename(p).startswith("bad")})
    _, output = check_json("--world-size", "32", *folders)
    reported = {f["code"] for f in output["findings"]
                if os.path.basename(f["file"]).startswith("bad") and f["code"] in f["file"].split(os.sep)}
    assert sorted(set(DECIDING) - reported) == []

