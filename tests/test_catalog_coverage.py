"""Issue 3: "a rule for each catalog entry that can be decided from the files".

COVERAGE maps every entry of the catalog of silent or late misconfigurations
(../shared/reference/deepspeed.md §4) to the rule codes that decide it, or to "not decidable:"
and the precise reason (a fact that exists only at run time or in no file shardshift reads).
The IDs are parsed from the reference when it is present, so a new catalog entry fails here
until it is mapped. Every code named must be a registered rule with a bad and a good fixture, and
must actually report something on its bad fixtures through the real CLI.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache

import pytest

from shardshift.rules import all_rules

from conftest import FIXTURES, SHARED, check_json

REFERENCE = SHARED / "reference" / "deepspeed.md"
NOT_DECIDABLE = "not decidable: "

# Catalog ID -> the codes that decide it, or why no file decides it. Where one entry has several
# parts, a comment says which part a code decides.
COVERAGE: dict[str, tuple[str, ...] | str] = {
    "DS-OPT-CLIENT-WINS": ("DS430",),
    # DS438: Trainer(optimizers=(opt, ...)) with TrainingArguments(deepspeed=...) in the same file; the Trainer
    # drops the optimizer whether or not the ds_config has an optimizer block (transformers 5.x deepspeed_init)
    "DS-OPT-HF-CONFIG-WINS": ("DS438",),
    # DS435: a TrainingArguments(optim=...) literal; --optim on a command line is not read
    "DS-OPT-HF-OPTIM-IGNORED": ("DS435",),
    "DS-OPT-CFG-SCHED-ON-CLIENT": ("DS432",),
    "DS-OPT-ADAM-IS-ADAMW": ("DS406",),
    "DS-OPT-WD-ZERO": ("DS408",),
    "DS-OPT-MAXGRADNORM": ("DS404",),
    # DS431: plain deepspeed.initialize; DS439: the silent swap for DeepSpeedCPUAdam under the Trainer and Accelerate,
    # for a TrainingArguments(optim=...) literal that is not AdamW or Adagrad
    "DS-OFF-CLIENT-OPT": ("DS431", "DS439"),
    "DS-OPT-UNTESTED-BYPASS": (
        NOT_DECIDABLE + "when the ds_config has no optimizer block, the optimizer the Trainer or Accelerate builds "
        "(and unlocks with zero_allow_untested_optimizer) is TrainingArguments.optim or an object in user code, "
        "known only at run time; the guard itself, for an optimizer the ds_config names, is DS407"),
    # DS405: 1-bit optimizers with ZeRO before 0.19.7, DS401: removed since; DS340: Lamb with a static loss scale
    "DS-OPT-ONEBIT-ZERO": ("DS405", "DS401", "DS340"),
    "DS-SCHED-WDLR-MAXLR": ("DS414",),
    # DS418: warmup_type left to its "log" default; DS417: a misspelled warmup_type falls back to "log"
    "DS-SCHED-LOG-WARMUP": ("DS418", "DS417"),
    # DS418 says when the warmup starts at 0 (the first two optimizer steps at learning rate 0)
    "DS-SCHED-ZERO-FIRST": ("DS418",),
    "DS-SCHED-INT-STEPS": ("DS415",),
    "DS-SCHED-SKIP-OVERFLOW": (
        NOT_DECIDABLE + "whether and how often a step overflows, and so how far the schedule lags the step count, "
        "is known only while training"),
    "DS-SCHED-ONECYCLE-BETA2": ("DS416",),
    "DS-SCHED-AUTO-OUTSIDE-TRAINER": ("DS420", "DS421"),
    "DS-OFF-PARAM-STAGE": ("DS301",),
    "DS-OFF-NVME-STAGE12": ("DS302",),
    "DS-OFF-NVME-NOPATH": ("DS305",),
    "DS-OFF-NO-DEVICE": ("DS304",),
    "DS-OFF-PIN-FLIP": ("DS309",),
    # DS341: stage 1/2 without offload; DS303: stage 0 and 3, where the key is not read
    "DS-OFF-RR": ("DS341", "DS303"),
    # sizes are checked as element counts (DS330/DS331 say the bytes); "500MB" and the like are DS102
    "DS-BKT-UNITS": ("DS330", "DS331", "DS102"),
    "DS-BKT-FLOAT": ("DS102",),
    "DS-BKT-SCI-STRING": ("DS102",),
    "DS-BKT-TOO-SMALL": ("DS330",),
    "DS-BKT-TOO-LARGE": ("DS331",),
    # DS340: managed_gradient_accumulation false with overlap_comm at stage 0/1. The stage-dependent default is
    # the documented meaning of one file, and the NaN of DS #8061 is a stream race fixed in DeepSpeed
    "DS-OVL-CONTIG": ("DS340",),
    "DS-BKT-STAGE-IGNORED": ("DS303",),
    "DS-BKT-ODD-ALLGATHER": ("DS102",),
    # limits too small; how large they may be depends on free GPU memory, which no file states
    "DS-BKT-LIVE-SUBGROUP": ("DS332",),
    "DS-PREC-AUTO-FALSE": ("DS420", "DS421"),
    # DS310: both in the ds_config; DS436: TrainingArguments asking for the precision the ds_config does not enable
    # (Accelerate's set_mixed_precision ValueError)
    "DS-PREC-BOTH": ("DS310", "DS436"),
    "DS-PREC-BF16-ALIAS": ("DS321",),
    "DS-PREC-STATIC-LOSS": ("DS312",),
    "DS-PREC-BF16-ACCUM": ("DS311",),
    "DS-COMM-DTYPE": ("DS315",),
    "DS-PREC-OVERFLOW-FLIP": ("DS316",),
    "DS-CLIP-DEFAULT": ("DS313",),
    "DS-CLIP-AUTO": ("DS420", "DS421"),
    "DS-SAVE-Z3-NOGATHER": ("DS308",),
    "DS-PP-ZERO23": ("DS307",),
    # with --world-size / --nodes and --gpus-per-node; qwZ's multiple of 8 depends on the model's shapes
    "DS-ZPP-HPZ": ("DS342",),
    # DeepSpeed 0.19.8 removed elasticity and rejects the section (DS101, "removed")
    "DS-ELASTIC-OVERRIDE": ("DS101",),
    "DS-BATCH-TRUNC": ("DS201",),
    # DS201 with --world-size and sequence_parallel_size; DS202 for data_parallel_size. An mpu passed in code
    # (Megatron TP/PP) is a run-time object
    "DS-BATCH-WORLD": ("DS201", "DS202"),
    "DS-PARSE-TYPO-TOP": ("DS101",),
    "DS-PARSE-TYPO-SECTION": ("DS101", "DS320"),
    "DS-PARSE-VERSION-SKEW": ("DS322", "DS101"),
    "DS-PARSE-DUPKEY": ("SS002",),
    # grad_hooks and misspelled format-string keys (DS101), offload device (DS304), nvme_path (DS305), thread_count
    # (DS320); the drifted doc defaults of absent keys are what DeepSpeed uses, not a mistake in the file
    "DS-PARSE-DOC-DRIFT": ("DS101", "DS304", "DS305", "DS320"),
    "DS-ACT-CKPT-NOOP": ("DS422",),
}

CATALOG_ROW = re.compile(r"^\|\s*(DS-[A-Z0-9]+(?:-[A-Z0-9]+)*)\s*\[[HML]\]\s*\|", re.MULTILINE)


def catalog_ids(text: str) -> list[str]:
    """The IDs of the catalog table in §4 of the reference (up to §4.1)."""
    start = text.index("## 4. Catalog")
    end = text.index("### 4.1", start)
    return CATALOG_ROW.findall(text[start:end])


@pytest.mark.skipif(not REFERENCE.is_file(), reason="../shared/reference is not present")
def test_every_catalog_entry_is_mapped():
    ids = catalog_ids(REFERENCE.read_text(encoding="utf-8"))
    assert len(ids) == len(set(ids)) >= 50, ids
    assert sorted(set(ids) - COVERAGE.keys()) == [], "catalog entries without a rule or a reason"
    assert sorted(COVERAGE.keys() - set(ids)) == [], "entries no longer in the catalog"


def test_catalog_ids_are_parsed_from_the_table_rows_only():
    text = ("## 4. Catalog\n| ID | What |\n|---|---|\n| DS-A-B [H] | x DS-NOT-ME [M] |\n| DS-C1 [L] | y |\n"
            "### 4.1 Bucket\n| DS-AFTER [H] | z |\n")
    assert catalog_ids(text) == ["DS-A-B", "DS-C1"]


def test_every_entry_is_rules_or_a_precise_reason():
    registered = {rule.code for rule in all_rules()}
    for entry, decided in COVERAGE.items():
        if isinstance(decided, str):
            assert decided.startswith(NOT_DECIDABLE) and len(decided) > len(NOT_DECIDABLE) + 40, entry
            continue
        assert decided and len(set(decided)) == len(decided), entry
        assert set(decided) <= registered, (entry, set(decided) - registered)


@lru_cache(maxsize=None)
def _fixtures_of(code: str) -> tuple[str, ...]:
    return tuple(sorted(str(p) for p in FIXTURES.rglob("*") if p.is_file() and code in p.parts))


DECIDING = sorted({code for decided in COVERAGE.values() if not isinstance(decided, str) for code in decided})


@pytest.mark.parametrize("code", DECIDING)
def test_each_deciding_rule_has_bad_and_good_fixtures(code):
    names = [os.path.basename(p) for p in _fixtures_of(code)]
    assert any(n.startswith("bad") for n in names) and any(n.startswith("good") for n in names), (code, names)


# What a rule needs to know to report its bad fixtures (the rest need nothing beyond the files).
RUN_FOR = {"DS322": ("--deepspeed-version", "0.18.0"), "DS405": ("--deepspeed-version", "0.19.5"),
           "DS342": ("--world-size", "8")}


def test_each_deciding_rule_reports_its_bad_fixtures():
    """Through the real CLI: every code of the table finds something in a bad fixture of its own."""
    runs: dict[tuple[str, ...], list[str]] = {}
    for code in DECIDING:
        folders = sorted({os.path.dirname(p) for p in _fixtures_of(code) if os.path.basename(p).startswith("bad")})
        runs.setdefault(RUN_FOR.get(code, ()), []).extend(folders)
    reported: set[str] = set()
    for args, folders in runs.items():
        _, output = check_json(*args, *sorted(set(folders)))
        for finding in output["findings"]:
            if os.path.basename(finding["file"]).startswith("bad") and finding["code"] in finding["file"].split(os.sep):
                reported.add(finding["code"])
    assert sorted(set(DECIDING) - reported) == []

