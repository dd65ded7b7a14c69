"""Branches that choose whole configurations (issue 20): an undecided `if`/`case` that sets the model
shape in each branch is kept as alternatives (shell.launch_variants, Document.variants), and the
check judges each: what is wrong in some is reported naming the branch, a missing flag only when
no branch sets it."""

from __future__ import annotations

import textwrap
from pathlib import Path

from shardshift.check import _branches_named, _judge_variants
from shardshift.formats.megatron import read, shell
from shardshift.formats.megatron.reader import choose_launch
from shardshift.plan import Unknown
from shardshift.rules.base import Finding

from conftest import ROOT, check_json

FIXTURES = ROOT / "fixtures" / "megatron" / "branches"
TAIL = ("--tensor-model-parallel-size 8 --seq-length 4096 --max-position-embeddings 4096 --micro-batch-size 1 "
        "--global-batch-size 64 --train-iters 1000 --bf16")


def variants(text: str) -> list:
    text = textwrap.dedent(text)
    script = shell.read_launch_script(text)
    launch = choose_launch(script.launches)
    assert launch is not None
    return [(label, {a.flag: a.value for a in one.args if a.flag is not None})
            for label, one in shell.launch_variants(text, script, launch)]


def test_if_elif_arrays_give_one_launch_per_branch_with_the_values_known():
    found = variants(f"""\
        MODEL=${{1}}
        if [ "$MODEL" = 7B ]; then
            MODEL_ARGS=(--num-layers 32 --hidden-size 4096 --num-attention-heads 32)
        elif [ "$MODEL" = 13B ]; then
            MODEL_ARGS=(--num-layers 40 --hidden-size 5120 --num-attention-heads 40)
        fi
        torchrun --nproc_per_node 8 pretrain_gpt.py "${{MODEL_ARGS[@]}}" {TAIL}
        """)
    assert [label for label, _ in found] == [('when `[ "$MODEL" = 7B ]`, line 2',),
                                             ('when `[ "$MODEL" = 13B ]`, line 4',)]
    assert [(a["--num-layers"], a["--hidden-size"], a["--num-attention-heads"]) for _, a in found] == \
        [("32", "4096", "32"), ("40", "5120", "40")]
    assert all(a["--tensor-model-parallel-size"] == "8" for _, a in found)


def test_case_with_scalars_and_an_exiting_default_gives_the_two_sizes():
    found = variants(f"""\
        case $SIZE in
            7b) HIDDEN=4096;;
            13b) HIDDEN=5120;;
            *) echo "unknown size"; exit 1;;
        esac
        torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 32 --hidden-size $HIDDEN --num-attention-heads 32 {TAIL}
        """)
    assert [(label, a["--hidden-size"]) for label, a in found] == [
        (("when `$SIZE` matches `7b`, line 2",), "4096"), (("when `$SIZE` matches `13b`, line 3",), "5120")]


def test_arrays_appended_in_if_else_and_the_else_label():
    found = variants(f"""\
        ARGS=({TAIL})
        if [[ "$MODEL" == 7B ]]; then
            ARGS+=(--num-layers 32 --hidden-size 4096)
        else
            ARGS+=(--num-layers 40 --hidden-size 5120)
        fi
        torchrun --nproc_per_node 8 pretrain_gpt.py "${{ARGS[@]}}" --num-attention-heads 32
        """)
    assert [(label, a["--hidden-size"], a["--micro-batch-size"]) for label, a in found] == [
        (('when `[[ "$MODEL" == 7B ]]`, line 2',), "4096", "1"),
        (('when not `[[ "$MODEL" == 7B ]]`, line 2',), "5120", "1")]


def test_a_string_built_from_a_branch_value_is_read_again_too():
    found = variants(f"""\
        if [ "$BIG" = 1 ]; then HIDDEN=8192; else HIDDEN=4096; fi
        GPT_ARGS="--num-layers 32 --hidden-size $HIDDEN --num-attention-heads 32"
        torchrun --nproc_per_node 8 pretrain_gpt.py $GPT_ARGS {TAIL}
        """)
    assert [a["--hidden-size"] for _, a in found] == ["8192", "4096"]


def test_an_if_without_else_chooses_no_configuration():
    """Its missing else is no configuration of its own: the launch keeps today's merged values."""
    found = variants(f"""\
        EXTRA=()
        if [ -n "$WANDB" ]; then EXTRA=(--wandb-project x); fi
        torchrun --nproc_per_node 8 pretrain_gpt.py "${{EXTRA[@]}}" --num-layers 2 --hidden-size 64 {TAIL}
        """)
    assert found == []


def test_no_variants_when_the_branches_do_not_reach_the_launch_or_are_decided():
    unused = f"""\
        if [ "$X" = a ]; then NAME=one; else NAME=two; fi
        torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 2 --hidden-size 64 {TAIL}
        """
    decided = f"""\
        MODEL=7B
        if [ "$MODEL" = 7B ]; then HIDDEN=4096; else HIDDEN=5120; fi
        torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 2 --hidden-size $HIDDEN {TAIL}
        """
    assert variants(unused) == []
    assert variants(decided) == []


def test_nested_blocks_are_chosen_in_turn_and_labelled_by_both():
    found = variants(f"""\
        if [ "$A" = 1 ]; then
            case $B in
                x) H=1024;;
                y) H=2048;;
            esac
        else
            H=4096
        fi
        torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 2 --hidden-size $H {TAIL}
        """)
    assert [(label, a["--hidden-size"]) for label, a in found] == [
        (('when `[ "$A" = 1 ]`, line 1', "when `$B` matches `x`, line 3"), "1024"),
        (('when `[ "$A" = 1 ]`, line 1', "when `$B` matches `y`, line 4"), "2048"),
        (('when not `[ "$A" = 1 ]`, line 1',), "4096")]


def test_more_than_eight_configurations_keep_the_merged_launch():
    blocks = "\n".join(f'if [ "$C{k}" = 1 ]; then V{k}=1; else V{k}=2; fi' for k in range(4))
    text = blocks + f"\ntorchrun pretrain_gpt.py --num-layers $V0 --hidden-size $V1 --lr $V2 --seed $V3 {TAIL}\n"
    assert variants(text) == []  # 16 configurations
    three = "\n".join(blocks.split("\n")[:3]) + \
        f"\ntorchrun pretrain_gpt.py --num-layers $V0 --hidden-size $V1 --lr $V2 {TAIL}\n"
    assert len(variants(three)) == 8


def test_the_document_keeps_the_merged_arguments_and_one_document_per_configuration():
    document = read((FIXTURES / "models_if.sh").read_text(), str(FIXTURES / "models_if.sh"))
    assert isinstance(document.data.launch.args[0].value, Unknown)  # the main document is today's
    assert [label for label, _ in document.variants] == [('when `[ "$MODEL" = 7B ]`, line 4',),
                                                         ('when `[ "$MODEL" = 13B ]`, line 6',)]
    shapes = [(v.plan.model.layers, v.plan.model.hidden, v.plan.model.heads) for _, v in document.variants]
    assert shapes == [(32, 4096, 32), (40, 5120, 40)]


def test_correct_branch_scripts_are_clean():
    status, out = check_json("--min-severity", "info", *(str(FIXTURES / name) for name in
                             ("models_if.sh", "models_case.sh", "models_append.sh", "one_branch_lacks_heads.sh")))
    assert [(f["code"], Path(f["file"]).name) for f in out["findings"]] == []
    assert status == 0
    assert out["unknowns"] == []  # every model value is judged in each configuration


def test_a_finding_of_one_branch_names_that_branch():
    status, out = check_json(str(FIXTURES / "model_13b_wrong.sh"))
    assert status == 1
    [finding] = out["findings"]
    assert finding["code"] == "PL103" and finding["line"] == 7
    assert finding["message"].startswith("--num-attention-heads 40 is not divisible by --tensor-model-parallel-size 16")
    assert finding["message"].endswith('(when `[ "$MODEL" = 13B ]`, line 6)')


def test_a_flag_no_branch_sets_is_reported_missing_once_without_a_branch():
    status, out = check_json(str(FIXTURES / "no_branch_sets_heads.sh"))
    assert status == 1
    assert [(f["code"], f["message"][:45]) for f in out["findings"]] == [
        ("MG005", "--num-attention-heads is missing from this la")]
    assert "(when" not in out["findings"][0]["message"]


def _finding(code: str, message: str) -> Finding:
    return Finding(code, "error", "x.sh", 1, 1, None, message)


class _Missing:
    reports_missing = True


class _Other:
    reports_missing = False


def test_judging_variants_keeps_common_findings_names_partial_ones_and_drops_partial_missing():
    a, b = ("when A, line 1",), ("when B, line 2",)
    common, only_b = _finding("PL103", "common"), _finding("PL103", "only b")
    judged = [(a, [common]), (b, [common, only_b])]
    assert [f.message for f in _judge_variants(_Other(), judged)] == ["common", "only b (when B, line 2)"]
    assert [f.message for f in _judge_variants(_Missing(), judged)] == ["common"]


def test_the_fewest_branches_name_the_configurations():
    labels = [("when A", "when X"), ("when A", "when Y"), ("when B", "when X"), ("when B", "when Y")]
    assert _branches_named(labels, {0, 1}) == "when A"
    assert _branches_named(labels, {0, 2}) == "when X"
    assert _branches_named(labels, {0}) == "when A and when X"
    assert _branches_named(labels, {0, 3}) == "when A and when X; when B and when Y"


def test_each_configuration_links_the_ds_config_its_branch_names():
    _, out = check_json("--min-severity", "info", str(FIXTURES / "ds_per_branch" / "run.sh"))
    [finding] = out["findings"]
    assert finding["code"] == "PL001"
    assert "train_micro_batch_size_per_gpu is 2 in ds_big.json" in finding["message"]
    assert finding["message"].endswith('(when not `[ "$SIZE" = small ]`, line 3)')
    assert Path(finding["related"][0]["file"]).name == "ds_big.json"
