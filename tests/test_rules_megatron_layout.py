"""Case tables for the Megatron parallel-layout rules (MG101-MG118), run through the real CLI
(`check --format json`), and Megatron-LM's own argument code (tests/megatron_oracle.py) as the judge
of what each message claims: rejected at the stated stage with the stated cause, or accepted with
the silently changed value, or (for the checks that run after the processes start) accepted by the
argument checks with the values that the later check then refuses."""

from __future__ import annotations

import os
import re

import pytest

from shardshift.formats.megatron.reader import read

from conftest import FIXTURES, check_json, shown
from megatron_oracle import available, judge
from rule_cases import findings_with_code, marker_position

RULES = FIXTURES / "megatron" / "rules"
PL103 = FIXTURES / "plan" / "PL103"

# (fixture, code, severity, pointer, occurrence of the pointer in the file, fix)
BAD_CASES = [
    ("MG101/bad.sh", "MG101", "error", "--num-layers", 1, "8"),
    ("MG101/bad_account.sh", "MG101", "error", "--num-layers", 1, "5"),
    ("MG101/bad_virtual_stages.sh", "MG101", "error", "--num-layers", 1, "8"),
    ("MG102/bad.sh", "MG102", "error", "--num-layers-per-virtual-pipeline-stage", 1, None),
    ("MG102/bad_uneven.sh", "MG102", "error", "--num-layers-per-virtual-pipeline-stage", 1, None),
    ("MG102/bad_virtual_stages.sh", "MG102", "error", "--num-virtual-stages-per-pipeline-rank", 1, None),
    ("MG103/bad.sh", "MG103", "error", "--decoder-first-pipeline-num-layers", 1, None),
    ("MG103/bad_mismatch.sh", "MG103", "error", "--decoder-first-pipeline-num-layers", 1, None),
    ("MG103/bad_virtual.sh", "MG103", "error", "--decoder-first-pipeline-num-layers", 1, None),
    ("MG103/bad_account.sh", "MG103", "error", "--decoder-first-pipeline-num-layers", 1, None),
    ("MG104/bad.sh", "MG104", "error", "--num-virtual-stages-per-pipeline-rank", 1, None),
    ("MG105/bad.sh", "MG105", "error", "--pipeline-model-parallel-layout", 1, None),
    ("MG105/bad_uneven.sh", "MG105", "error", "--pipeline-model-parallel-layout", 1, None),
    ("MG106/bad.sh", "MG106", "error", "--num-virtual-stages-per-pipeline-rank", 1, None),
    ("MG106/bad_no_overlap.sh", "MG106", "error", "--num-virtual-stages-per-pipeline-rank", 1, None),
    ("MG107/bad.sh", "MG107", "warning", "--sequence-parallel", 1, None),
    ("MG108/bad.sh", "MG108", "error", "--tp-comm-overlap", 1, None),
    ("MG108/bad_tp1.sh", "MG108", "error", "--tp-comm-overlap", 1, None),
    ("MG109/bad.sh", "MG109", "error", "--expert-model-parallel-size", 1, None),
    ("MG109/bad_split.sh", "MG109", "error", "--num-experts", 1, "8"),
    ("MG110/bad.sh", "MG110", "error", "--num-experts", 1, None),
    ("MG111/bad.sh", "MG111", "error", "--expert-tensor-parallel-size", 1, None),
    ("MG112/bad.sh", "MG112", "error", "--seq-length", 1, "508"),
    ("MG113/bad.sh", "MG113", "error", "--hierarchical-context-parallel-sizes", 1, None),
    ("MG114/bad.sh", "MG114", "error", "--cp-comm-type", 1, None),
    ("MG115/bad.sh", "MG115", "warning", "--num-query-groups", 1, None),
    ("MG116/bad.sh", "MG116", "error", "--hidden-size", 1, "256"),
    ("MG117/bad.sh", "MG117", "error", "--global-batch-size", 1, "32"),
    ("MG117/bad_default.sh", "MG117", "error", "--micro-batch-size", 1, None),
    ("MG118/bad.sh", "MG118", "error", "--seq-length", 1, "508"),
]
# Other findings a bad fixture shows besides its own (a bad fixture should show only its rule's problem).
ALSO = {"MG108/bad_tp1.sh": {"MG107"}}  # --sequence-parallel at tensor parallel size 1 is what makes MG108 fire


def _marker(path, pointer: str, occurrence: int) -> tuple[int, int]:
    """Where the flag `pointer` is written (as a whole word: --num-layers is not --num-layers-per-...;
    comment lines do not count)."""
    seen = 0
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.lstrip().startswith("#"):
            continue
        for match in re.finditer(re.escape(pointer) + r"(?![\w-])", line):
            seen += 1
            if seen == occurrence:
                return number, match.start() + 1
    raise AssertionError(f"{pointer!r} not found in {path}")


@pytest.mark.parametrize("fixture,code,severity,pointer,occurrence,fix", BAD_CASES, ids=[c[0] for c in BAD_CASES])
def test_bad_fixture_is_reported_at_the_flag(fixture, code, severity, pointer, occurrence, fix):
    path = RULES / fixture
    status, output = check_json(str(path))
    found = findings_with_code(output, code)
    assert len(found) == 1, output["findings"]
    (finding,) = found
    assert (finding["file"], finding["severity"], finding["pointer"]) == (shown(path), severity, pointer)
    assert (finding["line"], finding["column"]) == _marker(path, pointer, occurrence)
    assert finding["fix"] == fix
    assert {f["code"] for f in output["findings"]} == {code} | ALSO.get(fixture, set()), output["findings"]
    assert status == (1 if severity == "error" else 0)


def test_marker_helper_agrees_with_the_shared_one():
    path = RULES / "MG112" / "bad.sh"
    assert _marker(path, "--seq-length", 1) == marker_position(path, "--seq-length")


GOOD_CASES = sorted(RULES.glob("MG1*/good*.sh"))


@pytest.mark.parametrize("path", GOOD_CASES, ids=[f"{p.parent.name}/{p.name}" for p in GOOD_CASES])
def test_good_fixture_is_clean(path):
    status, output = check_json(str(path))
    assert findings_with_code(output, path.parent.name) == []
    assert [f for f in output["findings"] if f["severity"] == "error"] == [], output["findings"]
    assert status == 0


def test_every_rule_of_the_module_has_bad_and_good_fixtures():
    from shardshift.rules.megatron import layout

    codes = sorted(v.code for v in vars(layout).values()
                   if isinstance(v, type) and issubclass(v, layout.MegatronRule) and "code" in vars(v))
    assert codes == [f"MG1{n:02d}" for n in range(1, len(codes) + 1)]
    for code in codes:
        assert list((RULES / code).glob("bad*.sh")) and list((RULES / code).glob("good*.sh")), code


# --- values the script leaves to the run are never judged --------------------------------------------


def _script(tmp_path, flags: str, prefix: str = "") -> str:
    path = tmp_path / "run.sh"
    path.write_text("#!/bin/bash\n" + prefix + "torchrun --nproc_per_node 8 pretrain_gpt.py \\\n"
                    "    --num-layers 4 --hidden-size 256 --num-attention-heads 8 --seq-length 512 \\\n"
                    "    --max-position-embeddings 512 --micro-batch-size 2 --global-batch-size 16 \\\n"
                    f"    {flags}\n")
    return str(path)


@pytest.mark.parametrize("flags", [
    "--pipeline-model-parallel-size $PP",  # MG101: the pipeline size is an environment variable
    "--sequence-parallel $EXTRA_ARGS",  # MG107: the tensor parallel size may come with $EXTRA_ARGS
    "--sequence-parallel \"$@\"",  # ... or with the script's arguments
    "--num-query-groups ${GROUPS}",  # MG115: the value is the environment's (no default in the script)
])
def test_values_decided_at_run_time_are_not_judged(tmp_path, flags):
    status, output = check_json(_script(tmp_path, flags))
    assert [f for f in output["findings"] if f["code"].startswith("MG1")] == [], output["findings"]


def test_packed_sequences_are_not_judged_against_the_tensor_parallel_size(tmp_path):
    path = tmp_path / "sft.sh"
    path.write_text((RULES / "MG118" / "bad.sh").read_text().replace("--bf16", "--bf16 --sft"))
    assert findings_with_code(check_json(str(path))[1], "MG118") == []


def test_expert_parallel_with_zero_experts_is_a_dense_model(tmp_path):
    path = tmp_path / "zero.sh"
    path.write_text((RULES / "MG109" / "bad.sh").read_text().replace("--bf16", "--bf16 --num-experts 0"))
    (finding,) = findings_with_code(check_json(str(path))[1], "MG109")
    assert "--expert-model-parallel-size 2 with --num-experts 0 (a dense model)" in finding["message"]


def test_a_flag_after_an_unresolved_splice_is_judged(tmp_path):
    # $EXTRA_ARGS comes before --tensor-model-parallel-size 1 --sequence-parallel: argparse keeps the later ones
    status, output = check_json(_script(tmp_path, "$EXTRA_ARGS --tensor-model-parallel-size 1 --sequence-parallel"))
    assert [f["code"] for f in output["findings"] if f["code"].startswith("MG1")] == ["MG107"]


def test_world_size_rules_need_the_world_size(tmp_path):
    path = tmp_path / "run.sh"
    text = (RULES / "MG117" / "bad.sh").read_text().replace("--nproc_per_node 8", "--nproc_per_node $GPUS")
    path.write_text(text)
    assert findings_with_code(check_json(str(path))[1], "MG117") == []
    (finding,) = findings_with_code(check_json("--world-size", "8", str(path))[1], "MG117")
    assert "3 microbatches" in finding["message"]
    path.write_text((RULES / "MG111" / "bad.sh").read_text().replace("--nproc_per_node 8", "--nproc_per_node $GPUS"))
    assert findings_with_code(check_json(str(path))[1], "MG111") == []
    assert len(findings_with_code(check_json("--world-size", "8", str(path))[1], "MG111")) == 1
    assert findings_with_code(check_json("--world-size", "16", str(path))[1], "MG111") == []


def test_arguments_taken_from_elsewhere_are_not_judged(tmp_path):
    text = (RULES / "MG101" / "bad.sh").read_text().replace("--bf16", "--bf16 --use-checkpoint-args --load /ckpt")
    path = tmp_path / "run.sh"
    path.write_text(text)
    assert findings_with_code(check_json(str(path))[1], "MG101") == []


def test_megatron_deepspeed_launches_are_not_judged(tmp_path):
    text = (RULES / "MG107" / "bad.sh").read_text().replace("--bf16", "--bf16 --deepspeed")
    path = tmp_path / "run.sh"
    path.write_text(text)
    assert findings_with_code(check_json(str(path))[1], "MG107") == []


def test_the_layers_rule_counts_the_embedding_and_the_loss(tmp_path):
    both = "--pipeline-model-parallel-size 4 --account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split"
    (finding,) = findings_with_code(check_json(_script(tmp_path, both))[1], "MG101")  # 4 + 1 + 1 = 6 over 4 stages
    assert "--num-layers 4 + 1 (--account-for-embedding-in-pipeline-split) + 1 (--account-for-loss-in-pipeline-split) " \
        "= 6 is not divisible by --pipeline-model-parallel-size 4" in finding["message"]
    assert finding["fix"] == "6" and "use 6 layers (6 + 2 = 8)" in finding["message"]
    path = _script(tmp_path, both)
    with open(path, "r+", encoding="utf-8") as f:
        text = f.read().replace("--num-layers 4", "--num-layers 6")
        f.seek(0), f.truncate(), f.write(text)
    assert findings_with_code(check_json(path)[1], "MG101") == []


# --- the oracle: Megatron-LM's own argument code -----------------------------------------------------


def argv(document) -> list[str]:
    """The words Megatron receives, rebuilt from the flags as written: `[spelling, *values]`."""
    words: list[str] = []
    for given in document.data.given:
        words.append(given.spelling)
        if isinstance(given.value, bool) and not given.flag.takes_value(given.spelling):
            continue
        values = given.value if isinstance(given.value, list) else [given.value]
        words += [str(v) for v in values]
    return words


def world(document) -> int:
    return document.plan.world.world_size


# Each bad fixture: what Megatron's argument code does with it (stage, a pattern of the error).
# Stage None: the argument checks accept it (the rule's failure comes later; the values that
# cause it are asserted in test_oracle_confirms_each_claim).
EXPECTED = {
    "MG101/bad.sh": ("validate", r"Number of layers should be divisible by the pipeline-model-parallel size"),
    "MG101/bad_account.sh": ("validate", r"Number of layers should be divisible by the pipeline-model-parallel size"),
    "MG101/bad_virtual_stages.sh": (None, None),  # get_num_layers_to_build asserts when the model is built
    "MG102/bad.sh": ("validate", r"number of layers per pipeline stage must be divisible number of layers per virtual"),
    "MG102/bad_uneven.sh": ("validate", r"please use --num-virtual-stages-per-pipeline-rank"),
    "MG102/bad_virtual_stages.sh": (None, None),  # get_num_layers_to_build asserts when the model is built
    "MG103/bad.sh": ("config", r"number of layers at middle stage: 5 must be divisible by\s*the middle pipeline"),
    "MG103/bad_mismatch.sh": ("config", r"Mismatch: 2 middle layers remaining but 0 middle PP stages available"),
    "MG103/bad_virtual.sh": ("config", r"number of layers at first stage: 3\s*must be divisible by virtual"),
    "MG103/bad_account.sh": ("config", r"num_layers_in_first_pipeline_stage and num_layers_in_last_pipeline_stage"),
    "MG104/bad.sh": ("validate", r"No more than one of the following arguments can be set at the same time"),
    "MG105/bad.sh": ("validate", r"length of pipeline_model_parallel_layout must be divisible.*num_stages=5"),
    "MG105/bad_uneven.sh": ("config", r"pipeline_model_parallel_layout cannot be set with other pipeline layout"),
    "MG106/bad.sh": ("validate", r"When interleaved schedule is used, pipeline-model-parallel size should be greater "
                                 r"than 1"),
    "MG106/bad_no_overlap.sh": ("validate", r"p2p communication overlap is disabled, pipeline-model-parallel size "
                                            r"should be greater than 2"),
    "MG107/bad.sh": (None, None),  # accepted with sequence_parallel turned off
    "MG108/bad.sh": ("validate", r"overlap can happen only when sequence parallelism is enabled"),
    "MG108/bad_tp1.sh": ("validate", r"overlap can happen only when sequence parallelism is enabled"),
    "MG109/bad.sh": ("validate", r"num_experts must be non None to use expert model parallelism"),
    "MG109/bad_split.sh": ("validate", r"Number of experts should be a multiple of expert model parallel_size"),
    "MG110/bad.sh": (None, None),  # MoELayer.forward raises in training
    "MG111/bad.sh": (None, None),  # initialize_model_parallel raises
    "MG112/bad.sh": ("validate", r"seq-length should be a multiple of 2 \* context-parallel-size"),
    "MG113/bad.sh": ("validate", r"context_parallel_size == prod\(args.hierarchical_context_parallel_sizes\)"),
    "MG114/bad.sh": ("validate", r"--hierarchical-context-parallel-sizes must be set when a2a\+p2p is used"),
    "MG115/bad.sh": (None, None),  # accepted; the query groups never reach the model config
    "MG116/bad.sh": ("validate", r"hidden_size % args.num_attention_heads == 0"),
    "MG117/bad.sh": (None, None),  # the interleaved schedule raises at the first step
    "MG117/bad_default.sh": (None, None),
    "MG118/bad.sh": (None, None),  # the sequence-parallel scatter asserts at the first forward pass
    "PL103/bad_megatron.sh": ("config", r"num_query_groups \(3\) must be a multiple or divisor of "
                                        r"tensor_model_parallel_size \(4\)"),
}

# Probes beside the fixtures: (name, extra words appended to a fixture's argv, that fixture)
PROBES = [
    # --num-query-groups without --group-query-attention never reaches TransformerConfig: 3 groups
    # over 4 tensor-parallel ranks pass without the flag and are refused with it.
    ("groups-ignored", ["--tensor-model-parallel-size", "4", "--num-query-groups", "3"], "MG115/bad.sh"),
    ("groups-used", ["--tensor-model-parallel-size", "4", "--num-query-groups", "3", "--group-query-attention"],
     "MG115/bad.sh"),
]


def _all_fixtures():
    paths = sorted(RULES.glob("MG1*/*.sh")) + sorted(PL103.glob("*_megatron.sh"))
    return {f"{p.parent.name}/{p.name}": p for p in paths}


@pytest.fixture(scope="module")
def oracle():
    """Every fixture and probe of this module, judged in ONE child process."""
    reason = available()
    if reason is not None:
        if os.environ.get("CI", "").strip().lower() in ("1", "true", "yes"):
            pytest.fail(f"the Megatron oracle must run in CI: {reason}")
        pytest.skip(reason)
    documents = {name: read(path.read_text(encoding="utf-8"), str(path)) for name, path in _all_fixtures().items()}
    cases, names = [], []
    for name, document in documents.items():
        cases.append((argv(document), world(document)))
        names.append(name)
    for probe, extra, base in PROBES:
        cases.append((argv(documents[base]) + extra, world(documents[base])))
        names.append(probe)
    return dict(zip(names, judge(cases))), documents


@pytest.mark.oracle
def test_every_bad_fixture_has_a_stated_verdict():
    assert set(EXPECTED) == {n for n in _all_fixtures() if "/bad" in n}


@pytest.mark.oracle
@pytest.mark.parametrize("name", sorted(n for n in EXPECTED))
def test_oracle_confirms_the_stage_and_cause(oracle, name):
    verdicts, _ = oracle
    verdict = verdicts[name]
    stage, pattern = EXPECTED[name]
    if stage is None:
        assert verdict.ok, (verdict.stage, verdict.error, verdict.where)
    else:
        assert (verdict.ok, verdict.stage) == (False, stage), (verdict.error, verdict.where)
        assert re.search(pattern, verdict.error or "") or re.search(pattern, verdict.where or ""), \
            (verdict.error, verdict.where)


@pytest.mark.oracle
@pytest.mark.parametrize("name", sorted(n for n in _all_fixtures() if "/good" in n))
def test_oracle_accepts_every_good_fixture(oracle, name):
    verdicts, _ = oracle
    verdict = verdicts[name]
    assert verdict.ok, (verdict.stage, verdict.error, verdict.where)


@pytest.mark.oracle
def test_oracle_confirms_what_is_silently_changed_or_left_for_later(oracle):
    verdicts, _ = oracle
    args = {name: v.args for name, v in verdicts.items() if v.ok}

    # MG107: accepted, sequence parallelism turned off with a warning
    assert args["MG107/bad.sh"]["sequence_parallel"] is False
    assert any("Disabling sequence parallelism because tensor model parallelism is disabled" in w
               for w in verdicts["MG107/bad.sh"].warnings)
    assert args["MG107/good.sh"]["sequence_parallel"] is True

    # MG115: accepted without group-query attention; the same groups with the flag reach TransformerConfig
    assert args["MG115/bad.sh"]["group_query_attention"] is False
    assert verdicts["groups-ignored"].ok
    assert (verdicts["groups-used"].stage, verdicts["groups-used"].exception) == ("config", "ValueError")
    assert "num_query_groups (3) must be a multiple or divisor" in verdicts["groups-used"].error
    # PL103 for Megatron: key-value groups that divide the tensor degree are accepted
    assert args["PL103/good_megatron.sh"]["num_query_groups"] == 2
    assert args["PL103/good_megatron.sh"]["tensor_model_parallel_size"] == 4

    # MG101/MG102 with --num-virtual-stages-per-pipeline-rank: the arguments pass with an interleaved
    # pipeline; get_num_layers_to_build (megatron/core/transformer/transformer_block.py:157, :176) asserts
    # `num_layers % pipeline_model_parallel_size == 0` and `num_layers_per_pipeline_rank % vp_size == 0`
    # when the model is built, which these three calls do not reach.
    for name, layers, stages in (("MG101/bad_virtual_stages.sh", 6, 4), ("MG102/bad_virtual_stages.sh", 6, 2)):
        assert (args[name]["pipeline_model_parallel_size"], args[name]["virtual_pipeline_model_parallel_size"]) == \
            (stages, 2)
        per_rank = layers / stages
        assert not (per_rank.is_integer() and per_rank % 2 == 0)

    # MG110: accepted with MoE, tensor parallel 2 and no sequence parallelism; MoELayer.forward
    # (megatron/core/transformer/moe/moe_layer.py:636-640) raises ValueError when training with a
    # tensor-parallel group larger than 1 and sequence_parallel False.
    assert (args["MG110/bad.sh"]["tensor_model_parallel_size"], args["MG110/bad.sh"]["sequence_parallel"]) == (2, False)
    assert args["MG110/good.sh"]["sequence_parallel"] is True

    # MG111: accepted; initialize_model_parallel (megatron/core/parallel_state.py:881-884) raises
    # RuntimeError when world_size % (expert_tensor × expert_model × pipeline) != 0. The oracle does not
    # build process groups, so the product is checked against the resolved arguments here.
    resolved = args["MG111/bad.sh"]
    assert resolved["world_size"] == 8 and resolved["expert_model_parallel_size"] == 2
    assert 8 % (4 * resolved["expert_model_parallel_size"] * resolved["pipeline_model_parallel_size"]) != 0
    good = args["MG111/good.sh"]
    assert 8 % (2 * good["expert_model_parallel_size"] * good["pipeline_model_parallel_size"]) == 0

    # MG117: accepted with an interleaved pipeline; forward_backward_pipelining_with_interleaving
    # (megatron/core/pipeline_parallel/schedules.py:1160-1180) refuses M microbatches unless PP <= M and
    # M % PP is 0 or >= PP (the default group size is PP).
    for name, expected in (("MG117/bad.sh", 3), ("MG117/bad_default.sh", 1), ("MG117/good.sh", 4)):
        resolved = args[name]
        assert resolved["virtual_pipeline_model_parallel_size"] == 2
        m = resolved["global_batch_size"] // (resolved["micro_batch_size"] * resolved["data_parallel_size"])
        assert m == expected
        pp = resolved["pipeline_model_parallel_size"]
        assert (pp <= m and m % pp == 0) == name.endswith("good.sh")

    # MG118: accepted with sequence parallelism over 4 ranks and a 510-token sequence; the scatter in
    # megatron/core/tensor_parallel/mappings.py:72 (_split_along_first_dim) asserts 510 % 4 == 0 at the first forward.
    assert (args["MG118/bad.sh"]["sequence_parallel"], args["MG118/bad.sh"]["tensor_model_parallel_size"]) == (True, 4)
