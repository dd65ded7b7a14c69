"""Case tables for the DeepSpeed semantic rules of issue 3, part A (DS301-DS331): ZeRO stage and
offload, precision, legacy spellings and versions, bucket sizes. Everything runs through the
real CLI (`check --format json`); to keep the run lean the CLI is called once per distinct set
of arguments over all fixture folders of these rules, and each case reads its file's findings.

A bad case names the text that marks where the finding must point; `|` inside the marker is the
exact column (the value after a key), otherwise the marker's first character is."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import pytest

from shardshift.rules import all_rules
from shardshift.versions import deepspeed_default, key_read_by

from conftest import FIXTURES, ROOT, check_json
from rule_cases import marker_position
from test_rules_deepspeed_catalog import PART_C

RULES = FIXTURES / "deepspeed" / "rules"
MODULES = ("deepspeed.stage", "deepspeed.combinations", "deepspeed.precision", "deepspeed.legacy", "deepspeed.buckets")
OURS = {rule.code for rule in all_rules() if rule.__module__.removeprefix("shardshift.rules.") in MODULES} - PART_C  # C: own file
FOLDERS = sorted(p for p in RULES.iterdir() if p.name in OURS)


@lru_cache(maxsize=None)
def findings_by_file(args: tuple[str, ...]) -> dict[str, list[dict]]:
    """Every finding of one CLI run over all our fixture folders, by file."""
    _, output = check_json(*args, *map(str, FOLDERS))
    found: dict[str, list[dict]] = {}
    for finding in output["findings"]:
        found.setdefault(str(ROOT / finding["file"]), []).append(finding)  # relative to the current directory
    return found


def position(path: Path, marker: str, occurrence: int) -> tuple[int, int]:
    text = marker.replace("|", "")
    line, column = marker_position(path, text, occurrence)
    return line, column + max(marker.find("|"), 0)


OLD_PIN, OLD_CLIP = ("--deepspeed-version", "0.19.4"), ("--deepspeed-version", "0.19.2")
H1024, H4096 = ("--hidden-size", "1024"), ("--hidden-size", "4096")
OD, ZQ = '"offload_optimizer": {"device": "cpu"}', '"stage3_gather_16bit_weights_on_model_save"'

# (fixture, args, code, severity, pointer, marker, occurrence, fix, text the message must contain)
BAD_CASES = [
    ("DS301/bad.json", (), "DS301", "error", "/zero_optimization/offload_param/device", '"device"', 2, None,
     "the stage is 2"),
    ("DS301/bad_legacy.json", (), "DS301", "error", "/zero_optimization/cpu_offload_param", '"cpu_offload_param"', 1,
     None, "the stage is 1"),
    ("DS302/bad.json", (), "DS302", "error", "/zero_optimization/offload_optimizer/device", '"nvme"', 1, '"cpu"',
     "stage 2"),
    ("DS303/bad.json", (), "DS303", "warning", "/zero_optimization/stage3_max_live_parameters",
     '"stage3_max_live_parameters"', 1, None, "at stage 2"),
    ("DS303/bad_feature.json", (), "DS303", "error", "/zero_optimization/zero_quantized_weights",
     '"zero_quantized_weights"', 1, None, "qwZ"),
    ("DS303/bad_stage_0.json", (), "DS303", "warning", "/zero_optimization/stage", '"stage": |0', 1, None,
     "reduce_bucket_size, overlap_comm"),
    ("DS303/bad_no_stage.json", (), "DS303", "error", "/zero_optimization", '"zero_optimization"', 1, '"stage": 2',
     "no \"stage\""),
    ("DS303/bad_stage_3.json", (), "DS303", "warning", "/zero_optimization/allgather_bucket_size",
     '"allgather_bucket_size"', 1, None, "stages 1-2"),
    ("DS304/bad.json", (), "DS304", "error", "/zero_optimization/offload_optimizer", '"offload_optimizer"', 1,
     '"device": "cpu"', '"none"'),
    ("DS305/bad.json", (), "DS305", "error", "/zero_optimization/offload_param/device", '"nvme"', 1, None,
     "no nvme_path"),
    ("DS305/bad_optimizer.json", (), "DS305", "error", "/zero_optimization/offload_optimizer/device", '"nvme"', 1,
     None, "not NoneType"),
    ("DS306/bad.json", (), "DS306", "error", "/zero_optimization/offload_optimizer/ratio", '"ratio": |0.5', 1, "1.0",
     "stage 2"),
    ("DS306/bad_grad_norm.json", (), "DS306", "error", "/zero_optimization/compute_grad_norm",
     '"compute_grad_norm": |false', 1, "true", "Stage 1 or 2"),
    # no consumer beside it: whether the model is a PipelineModule (the assertion) is unknown
    ("DS307/bad.json", (), "DS307", "info", "/zero_optimization/stage", '"stage": |2', 1, "1", "pipeline"),
    ("DS307/pipeline_module/ds307_pipeline.json", (), "DS307", "error", "/zero_optimization/stage", '"stage": |2', 1,
     "1", "pipeline"),
    ("DS308/bad.json", (), "DS308", "warning", "/zero_optimization/stage3_gather_16bit_weights_on_model_save",
     '"stage": |3', 1, "true", "save_16bit_model"),
    ("DS309/bad.json", (), "DS309", "info", "/zero_optimization/offload_optimizer/pin_memory", '"device": |"cpu"', 1,
     "true", "the newest DeepSpeed"),
    ("DS309/bad.json", OLD_PIN, "DS309", "info", "/zero_optimization/offload_optimizer/pin_memory",
     '"device": |"cpu"', 1, "false", "DeepSpeed 0.19.4 uses pin_memory false"),
    ("DS310/bad.json", (), "DS310", "error", "/bf16/enabled", '"enabled": |true', 2, None, "both true"),
    ("DS311/bad.json", (), "DS311", "warning", "/data_types/grad_accum_dtype", '"gradient_accumulation_steps": |8', 1,
     '"fp32"', "8 accumulation steps"),
    ("DS311/bad_derived.json", ("--world-size", "2"), "DS311", "warning", "/data_types/grad_accum_dtype",
     '"enabled": |true', 1, '"fp32"', "8 accumulation steps"),
    ("DS312/bad.json", (), "DS312", "warning", "/fp16/loss_scale", '"loss_scale": |128', 1, "0", "128"),
    ("DS313/bad.json", (), "DS313", "info", "/gradient_clipping", "{", 1, "1.0", "newest DeepSpeed"),
    ("DS313/bad.json", OLD_CLIP, "DS313", "info", "/gradient_clipping", "{", 1, "0",
     "DeepSpeed 0.19.2 does not clip"),
    ("DS313/bad_auto.json", (), "DS313", "info", "/gradient_clipping", "{", 1, '"auto"', "max_grad_norm"),
    ("DS320/bad.json", (), "DS320", "warning", "/zero_optimization/stage3_gather_fp16_weights_on_model_save",
     '"stage3_gather_fp16_weights_on_model_save"', 1, ZQ.strip('"'), "deprecation"),
    ("DS320/bad_cpu_offload.json", (), "DS320", "warning", "/zero_optimization/cpu_offload", '"cpu_offload"', 1, OD,
     "offload_optimizer"),
    ("DS320/bad_pin_memory.json", (), "DS320", "error", "/zero_optimization/cpu_offload_use_pin_memory",
     '"cpu_offload_use_pin_memory"', 1, "pin_memory", "ignores"),
    ("DS320/bad_bfloat16.json", (), "DS320", "warning", "/bfloat16", '"bfloat16"', 1, "bf16", "Accelerate"),
    ("DS320/bad_aio.json", (), "DS320", "error", "/aio/thread_count", '"thread_count"', 1, "intra_op_parallelism",
     "0.16.4"),
    ("DS320/bad_allgather_size.json", (), "DS320", "error", "/allgather_size", '"allgather_size"', 1,
     "allgather_bucket_size", "zero_optimization\": true"),
    ("DS321/bad.json", (), "DS321", "error", "/zero_optimization/prefetch_bucket_size", '"prefetch_bucket_size"', 1,
     None, "two names of one field"),
    ("DS321/bad_deprecated.json", (), "DS321", "error", "/zero_optimization/cpu_offload", '"cpu_offload"', 1, None,
     "Cannot provide deprecated parameter"),
    ("DS321/bad_bf16.json", (), "DS321", "error", "/bfloat16", '"bfloat16"', 1, None, "settings are lost"),
    ("DS321/bad_bf16_same.json", (), "DS321", "warning", "/bfloat16", '"bfloat16"', 1, None, "says the same"),
    ("DS322/bad.json", ("--deepspeed-version", "0.18.0"), "DS322", "error",
     "/zero_optimization/stage3_allgather_sequential", '"stage3_allgather_sequential"', 1, None, "rejects"),
    ("DS322/bad_aio.json", ("--deepspeed-version", "0.16.0"), "DS322", "error", "/aio/intra_op_parallelism",
     '"intra_op_parallelism"', 1, "thread_count", "DeepSpeed 0.16.0 ignores it"),
    ("DS330/bad.json", (), "DS330", "warning", "/zero_optimization/reduce_bucket_size", '"reduce_bucket_size": |5000',
     1, "500000000", "5,000 elements = 10 kB in bf16"),
    ("DS330/bad.json", H4096, "DS330", "warning", "/zero_optimization/reduce_bucket_size",
     '"reduce_bucket_size": |5000', 1, "16777216", "h² = 16,777,216"),
    ("DS330/bad_threshold.json", (), "DS330", "warning", "/zero_optimization/stage3_param_persistence_threshold",
     '"stage3_param_persistence_threshold": |0', 1, "100000", "norm weights"),
    ("DS330/bad_hidden.json", H4096, "DS330", "warning", "/zero_optimization/stage3_param_persistence_threshold",
     '"stage3_param_persistence_threshold": |1000', 1, "40960", "below the hidden size 4096"),
    ("DS331/bad.json", (), "DS331", "warning", "/zero_optimization/reduce_bucket_size",
     '"reduce_bucket_size": |5000000000', 1, "500000000", "5e9 elements = 10 GB in bf16"),
    ("DS331/bad_hidden.json", H1024, "DS331", "warning", "/zero_optimization/reduce_bucket_size",
     '"reduce_bucket_size": |500000000', 1, "1048576", "5e8 elements = 1.0 GB in bf16"),
    ("DS331/bad_overlap.json", (), "DS331", "warning", "/zero_optimization/allgather_bucket_size",
     '"allgather_bucket_size": |3000000000', 1, "500000000", "4.5 × 3.5e9 = 32 GB"),
    ("DS331/bad_threshold.json", (), "DS331", "warning", "/zero_optimization/stage3_param_persistence_threshold",
     '"stage3_param_persistence_threshold": |1000000000', 1, "100000", "up to hidden size 31,622"),
    ("DS331/bad_threshold_hidden.json", H4096, "DS331", "warning",
     "/zero_optimization/stage3_param_persistence_threshold", '"stage3_param_persistence_threshold": |20000000', 1,
     "40960", "h² = 16,777,216"),
    # DS445 (issue 14): deepspeed.initialize asserts param_dtype agrees with the fp16/bf16 flags
    # (confirmed by tests/test_deepspeed_agreement.py through deepspeed.initialize on the CPU).
    ("DS445/bad.json", (), "DS445", "error", "/data_types/param_dtype", '"param_dtype": |"fp16"', 1, '"bf16"',
     "conflicts with the enabled precision mode"),
    ("DS445/bad_fp32.json", (), "DS445", "error", "/data_types/param_dtype", '"param_dtype": |"bfloat16"', 1,
     '"fp32"', "trains in fp32 (neither fp16 nor bf16 is enabled)"),
    ("DS445/bad_unknown.json", (), "DS445", "error", "/data_types/param_dtype", '"param_dtype": |"BF16"', 1, None,
     "not a dtype DeepSpeed knows"),
    # DS447 (issue 14): without ZeRO, deepspeed.initialize refuses another accumulation dtype (confirmed in
    # tests/test_deepspeed_agreement.py).
    ("DS447/bad.json", (), "DS447", "error", "/data_types/grad_accum_dtype", '"grad_accum_dtype": |"fp32"', 1, None,
     "unsupported mix of model_dtype=torch.bfloat16 and grad_accum_dtype=torch.float32"),
    ("DS447/bad_fp32.json", (), "DS447", "error", "/data_types/grad_accum_dtype", '"grad_accum_dtype": |"bf16"', 1,
     None, "unsupported mix of model_dtype=torch.float32 and grad_accum_dtype=torch.bfloat16"),
]


@pytest.mark.parametrize("fixture,args,code,severity,pointer,marker,occurrence,fix,text", BAD_CASES,
                         ids=[f"{c[0]}{'-' + '='.join(c[1]) if c[1] else ''}" for c in BAD_CASES])
def test_bad_fixture_is_reported_at_the_right_place(fixture, args, code, severity, pointer, marker, occurrence, fix,
                                                     text):
    path = RULES / fixture
    findings = findings_by_file(args).get(str(path), [])
    ours = [f for f in findings if f["code"] in OURS]
    assert [f["code"] for f in ours] == [code], findings  # exactly this rule, once
    assert [f for f in findings if f["code"] not in OURS and f["severity"] == "error"] == []
    (finding,) = ours
    assert (finding["severity"], finding["pointer"]) == (severity, pointer)
    assert (finding["line"], finding["column"]) == position(path, marker, occurrence)
    assert finding["fix"] == fix
    assert text in finding["message"], finding["message"]


# Findings that depend on what the run knows: without it (or with another version) they vanish.
# (fixture, args, code)
NOT_REPORTED = [
    ("DS320/bad_aio.json", ("--deepspeed-version", "0.16.0"), "DS320"),  # thread_count is right before 0.16.4
    ("DS322/bad.json", (), "DS322"),  # no version pinned
    ("DS322/bad.json", ("--deepspeed-version", "0.18.5"), "DS322"),
    ("DS322/bad_aio.json", ("--deepspeed-version", "0.16.4"), "DS322"),
    ("DS311/bad_derived.json", (), "DS311"),  # accumulation unknown without the world size
    ("DS330/bad_hidden.json", (), "DS330"),  # 1000 is fine when the hidden size is unknown
    ("DS331/bad_hidden.json", (), "DS331"),  # 5e8 is DeepSpeed's default
    ("DS331/bad_hidden.json", H4096, "DS331"),  # and below 64·h² for h = 4096
    ("DS331/bad_threshold_hidden.json", (), "DS331"),
]


@pytest.mark.parametrize("fixture,args,code", NOT_REPORTED, ids=[f"{c[0]}-{'='.join(c[1])}" for c in NOT_REPORTED])
def test_finding_depends_on_what_the_run_knows(fixture, args, code):
    findings = findings_by_file(args).get(str(RULES / fixture), [])
    assert [f for f in findings if f["code"] == code] == []


GOOD = sorted(p for folder in FOLDERS for p in folder.glob("good*.json"))


@pytest.mark.parametrize("args", [(), ("--world-size", "8"), H4096, OLD_CLIP], ids=["plain", "world", "hidden", "old"])
def test_good_fixtures_are_clean(args):
    """No finding of these rules, and no error of any rule, in any good fixture."""
    found = findings_by_file(args)
    assert len(GOOD) >= len(FOLDERS)
    dirty = {p.relative_to(RULES).as_posix(): [f for f in found.get(str(p), [])
                                               if f["code"] in OURS or f["severity"] == "error"] for p in GOOD}
    assert {name: f for name, f in dirty.items() if f} == {}


# Fixes safe for `check --fix`: only plain renames in place. (fixture, args, code, fix_kind)
FIX_KINDS = [
    ("DS320/bad.json", (), "DS320", "rename-key"),
    ("DS320/bad_bfloat16.json", (), "DS320", "rename-key"),
    ("DS320/bad_aio.json", (), "DS320", "rename-key"),
    ("DS320/bad_cpu_offload.json", (), "DS320", None),  # a new block, not a rename
    ("DS320/bad_pin_memory.json", (), "DS320", None),  # moves into another object
    ("DS320/bad_allgather_size.json", (), "DS320", None),
    ("DS322/bad_aio.json", ("--deepspeed-version", "0.16.0"), "DS322", "rename-key"),
    ("DS312/bad.json", (), "DS312", None),  # changes training: the user decides
    ("DS331/bad.json", (), "DS331", None),
]


@pytest.mark.parametrize("fixture,args,code,kind", FIX_KINDS, ids=[c[0] for c in FIX_KINDS])
def test_only_plain_renames_are_marked_safe_to_apply(fixture, args, code, kind):
    (finding,) = [f for f in findings_by_file(args)[str(RULES / fixture)] if f["code"] == code]
    assert finding.get("fix_kind") == kind


def test_every_rule_has_a_bad_and_a_good_fixture_and_a_case():
    cased = {case[2] for case in BAD_CASES}
    assert OURS == cased == {p.name for p in FOLDERS}
    for folder in FOLDERS:
        assert list(folder.glob("bad*.json")) and list(folder.glob("good*.json")), folder


def test_every_rule_documents_itself():
    for rule in all_rules():
        if rule.code not in OURS:
            continue
        doc = rule.documentation()
        for section in ("## What it does", "## Why is this bad", "## Example", "## Use instead"):
            assert section in doc, (rule.code, section)
        assert doc.count("```") >= 4, rule.code  # a bad and a good example
        assert rule.severity in ("error", "warning", "info") and rule.name == rule.name.lower()


# The stage × offload matrix, from DeepSpeed's own behaviour: offload_param is read at stage 3
# only; stages 1-2 turn any optimizer offload device into CPU; a block without device offloads
# nothing; NVMe at stage 3 needs nvme_path; without ZeRO nothing in zero_optimization is read.
STAGES = (0, 1, 2, 3)
BLOCKS = {"none": {"device": "none"}, "cpu": {"device": "cpu", "pin_memory": True},
          "nvme": {"device": "nvme", "pin_memory": True}, "missing": {"pin_memory": True}}


def _expected(stage: int, block: str, device: str) -> set[str]:
    if block == "offload_param":
        if stage < 3:
            return set() if device == "none" else {"DS301"}
        return {"missing": {"DS304"}, "nvme": {"DS305"}}.get(device, set())
    if stage == 0:
        return {"DS303"}  # ZeRO off: the block is dead (an error when it asks for offload)
    if device == "missing":
        return {"DS304"}
    if device == "nvme":
        return {"DS302"} if stage < 3 else {"DS305"}
    return set()


def test_offload_rules_follow_deepspeed_across_stages_and_devices(tmp_path):
    cases = {}
    for stage in STAGES:
        for block in ("offload_param", "offload_optimizer"):
            for device, settings in BLOCKS.items():
                zero = {"stage": stage, block: settings, "stage3_gather_16bit_weights_on_model_save": True}
                if stage < 3:
                    del zero["stage3_gather_16bit_weights_on_model_save"]
                path = tmp_path / f"ds_config_{stage}_{block}_{device}.json"
                path.write_text(json.dumps({"train_micro_batch_size_per_gpu": 1, "gradient_clipping": 1.0,
                                            "zero_optimization": zero}, indent=2))
                cases[str(path)] = _expected(stage, block, device)
    _, output = check_json(str(tmp_path))
    found: dict[str, set[str]] = {path: set() for path in cases}
    for finding in output["findings"]:
        if finding["code"] in OURS:
            found[finding["file"]].add(finding["code"])
    assert found == cases


def test_values_left_to_the_hugging_face_integration_are_not_judged(tmp_path):
    auto = {"train_micro_batch_size_per_gpu": "auto", "gradient_clipping": "auto", "bf16": {"enabled": "auto"},
            "gradient_accumulation_steps": "auto",
            "zero_optimization": {"stage": "auto", "offload_param": {"device": "auto"},
                                  "stage3_prefetch_bucket_size": "auto", "reduce_bucket_size": "auto",
                                  "stage3_param_persistence_threshold": "auto"}}
    stage2 = {"train_micro_batch_size_per_gpu": 4, "gradient_clipping": 1.0,
              "zero_optimization": {"stage": 2, "stage3_prefetch_bucket_size": "auto",
                                    "offload_optimizer": {"device": "nvme", "nvme_path": "auto", "pin_memory": True}}}
    (tmp_path / "ds_auto.json").write_text(json.dumps(auto))
    (tmp_path / "ds_stage2.json").write_text(json.dumps(stage2))
    _, output = check_json("--hidden-size", "4096", str(tmp_path))
    codes = sorted((Path(f["file"]).name, f["code"]) for f in output["findings"] if f["code"] in OURS)
    assert codes == [("ds_stage2.json", "DS302")]  # nvme at stage 2 whatever the path


def test_fp16_with_the_legacy_bfloat16_block_is_rejected_too(tmp_path):
    path = tmp_path / "ds_config.json"
    path.write_text('{"train_micro_batch_size_per_gpu": 4, "gradient_clipping": 1.0,\n'
                    ' "fp16": {"enabled": true}, "bfloat16": {"enabled": true}}\n')
    _, output = check_json(str(path))
    (finding,) = [f for f in output["findings"] if f["code"] == "DS310"]
    assert (finding["pointer"], finding["line"], finding["severity"]) == ("/bfloat16/enabled", 2, "error")


@pytest.mark.parametrize("pointer,version,expected", [
    ("/gradient_clipping", None, 1.0), ("/gradient_clipping", (0, 19, 3), 1.0), ("/gradient_clipping", (0, 19, 2), 0.0),
    ("/zero_optimization/offload_param/pin_memory", (0, 19, 4), False),
    ("/zero_optimization/offload_optimizer/pin_memory", (0, 19, 5), True),
    ("/bf16/check_grad_overflow", (0, 18, 0), False),
    ("/zero_optimization/reduce_bucket_size", (0, 10, 0), 500_000_000),  # unchanged: the key table's default
])
def test_version_table_gives_the_default_of_each_version(pointer, version, expected):
    assert deepspeed_default(pointer, version) == expected


@pytest.mark.parametrize("pointer,version,read", [
    ("/aio/thread_count", (0, 16, 3), True), ("/aio/thread_count", (0, 16, 4), False), ("/aio/thread_count", None, False),
    ("/aio/intra_op_parallelism", (0, 16, 3), False), ("/aio/intra_op_parallelism", None, True),
    ("/gradient_allreduce_op", (0, 19, 5), False), ("/train_batch_size", (0, 1, 0), True),
])
def test_version_table_knows_which_keys_a_version_reads(pointer, version, read):
    assert key_read_by(pointer, version) is read
