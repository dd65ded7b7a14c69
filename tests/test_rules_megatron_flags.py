"""The Megatron flag rules (MG001-MG005) through the real CLI, and what Megatron-LM's own argument
code (tests/megatron_oracle.py) does with each fixture: every bad fixture fails or is changed the
way its finding says, every good fixture passes. One `judge` call for the whole module."""

from __future__ import annotations

from pathlib import Path

import pytest

from shardshift.formats.megatron.reader import read
from shardshift.plan import Unknown, known

from conftest import FIXTURES, check_json, shown
from rule_cases import findings_with_code, marker_position

RULES = FIXTURES / "megatron" / "rules"

# (fixture, code, severity, pointer (the flag as written), marker, occurrence, fix, words in the message)
BAD_CASES = [
    ("MG001/bad.sh", "MG001", "error", "--tensor_model_parallel_size", "--tensor_model_parallel_size", 1,
     "--tensor-model-parallel-size", ("unrecognized arguments: --tensor_model_parallel_size", "0.20.0")),
    ("MG001/bad_typo.sh", "MG001", "error", "--use-distributed-optimiser", "--use-distributed-optimiser", 1,
     "--use-distributed-optimizer", ("unrecognized arguments: --use-distributed-optimiser", "did you mean")),
    # the program is not in the fixture's tree: an info with the unknown program (test_megatron_program.py)
    ("MG001/bad_deepspeed.sh", "MG001", "info", "--zero-stage", "--zero-stage", 1, None,
     ("if the program that runs does not define it",)),
    ("MG001/bad_entry.sh", "MG001", "info", "--task", "--task", 1, None,
     ("if the program that runs does not define it",)),
    ("MG002/bad.sh", "MG002", "warning", "--micro-batch-size", "--micro-batch-size", 2, None,
     ("keeps the last, --micro-batch-size 1 at line 8",)),
    ("MG003/bad.sh", "MG003", "error", "--batch-size", "--batch-size", 1, "--micro-batch-size",
     ("--batch-size argument is no longer valid",)),
    ("MG003/bad_checkpoint_activations.sh", "MG003", "error", "--checkpoint-activations", "--checkpoint-activations",
     1, "--recompute-activations", ("exit()", "exit status 0")),
    ("MG003/bad_rampup.sh", "MG003", "warning", "--rampup-batch-size", "--rampup-batch-size", 1,
     "--step-batch-size-schedule", ("no longer uses it",)),
    ("MG003/bad_rotary.sh", "MG003", "warning", "--use-rotary-position-embeddings", "--use-rotary-position-embeddings",
     1, "--position-embedding-type rope", ("maps it to --position-embedding-type rope",)),
    ("MG003/bad_position.sh", "MG003", "error", "--no-position-embedding", "--no-position-embedding", 1,
     "--position-embedding-type none", ("RuntimeError", "--no-position-embedding is deprecated")),
    ("MG004/bad.sh", "MG004", "error", "--use-distributed-optimizer", "--use-distributed-optimizer", 1,
     "--use-distributed-optimizer", ("unrecognized arguments: true", "switch")),
    ("MG004/bad_int.sh", "MG004", "error", "--eval-iters", "--eval-iters", 1, None,
     ("argument --eval-iters: invalid int value: 'ten'",)),
    ("MG004/bad_choice.sh", "MG004", "error", "--optimizer", "--optimizer", 1, None,
     ("argument --optimizer: invalid choice: 'adamw'",)),
    ("MG004/bad_missing.sh", "MG004", "error", "--clip-grad", "--clip-grad", 1, None,
     ("argument --clip-grad: expected one argument",)),
    ("MG004/bad_extra.sh", "MG004", "error", "--eval-iters", "--eval-iters", 1, None,
     ("unrecognized arguments: 20",)),
    ("MG005/bad.sh", "MG005", "error", "--max-position-embeddings", "torchrun", 1, "--max-position-embeddings",
     ("max_position_embeddings argument is None",)),
    ("MG005/bad_micro.sh", "MG005", "error", "--micro-batch-size", "torchrun", 1, "--micro-batch-size",
     ("args.micro_batch_size is not None",)),
    ("MG005/bad.args", "MG005", "error", "--num-layers", "--hidden-size", 1, "--num-layers",
     ("either num-layers or encoder-num-layers should be specified",)),
]


@pytest.mark.parametrize("fixture,code,severity,pointer,marker,occurrence,fix,words", BAD_CASES,
                         ids=[c[0] for c in BAD_CASES])
def test_bad_fixture_is_reported_at_the_flag(fixture, code, severity, pointer, marker, occurrence, fix, words):
    path = RULES / fixture
    status, output = check_json(str(path))
    found = findings_with_code(output, code)
    assert len(found) == 1, output["findings"]
    finding = found[0]
    line, column = marker_position(path, marker, occurrence, skip_comments=True)
    assert (finding["severity"], finding["pointer"], finding["line"], finding["column"]) == (
        severity, pointer, line, column)
    assert finding["fix"] == fix
    assert "fix_kind" not in finding  # --fix edits JSON/YAML trees only, not shell words
    assert finding["file"] == shown(path)
    for word in words:
        assert word in finding["message"], finding["message"]
    # a bad fixture shows its own problem only
    assert [f["code"] for f in output["findings"] if f["code"].startswith("MG0")] == [code]


def test_flag_given_twice_points_back_at_the_first():
    path = RULES / "MG002/bad.sh"
    (finding,) = findings_with_code(check_json(str(path))[1], "MG002")
    line, column = marker_position(path, "--micro-batch-size", 1, skip_comments=True)
    assert [(r["line"], r["column"], r["pointer"]) for r in finding["related"]] == [
        (line, column, "--micro-batch-size")]


GOOD_CASES = sorted(p for p in RULES.glob("MG00*/good*") if p.is_file())


@pytest.mark.parametrize("path", GOOD_CASES, ids=[f"{p.parent.name}/{p.name}" for p in GOOD_CASES])
def test_good_fixture_has_no_finding_of_its_rule_and_no_errors(path):
    status, output = check_json(str(path))
    assert findings_with_code(output, path.parent.name) == []
    assert [f for f in output["findings"] if f["severity"] == "error"] == []
    assert status == 0


LAUNCH = """#!/bin/bash
torchrun --nproc_per_node 8 {entry} \\
    --num-layers 4 --hidden-size 256 --num-attention-heads 8 --seq-length 512 \\
    --micro-batch-size 2 --global-batch-size 16 --lr 1e-4 --train-iters 10 {rest}
"""


ENTRY_STUB = Path(__file__).resolve().parents[1] / "fixtures" / "megatron" / "pretrain_gpt.py"


def _check(tmp_path: Path, text: str, name: str = "launch.sh") -> dict:
    """Check a launch in a tree that holds the entry script it runs (an absent one is an unknown program)."""
    path = tmp_path / name
    path.write_text(text)
    (tmp_path / "pretrain_gpt.py").write_text(ENTRY_STUB.read_text(encoding="utf-8"), encoding="utf-8")
    return check_json(str(path))[1]


@pytest.mark.parametrize("rest", ['$EXTRA_ARGS', '"$@"', "--bf16 $MORE", "--use-checkpoint-args --load ckpt",
                                  "--yaml-cfg model.yaml"])
def test_missing_flag_is_not_claimed_when_something_else_may_supply_it(tmp_path, rest):
    # an unresolved splice may hold --max-position-embeddings; a checkpoint or a YAML file gives it
    output = _check(tmp_path, LAUNCH.format(entry="pretrain_gpt.py", rest=rest))
    assert findings_with_code(output, "MG005") == []


def test_missing_flag_is_not_claimed_for_another_entry_or_megatron_deepspeed(tmp_path):
    assert findings_with_code(_check(tmp_path, LAUNCH.format(entry="finetune.py", rest="")), "MG005") == []
    output = _check(tmp_path, LAUNCH.format(entry="pretrain_gpt.py", rest="--deepspeed"))
    assert findings_with_code(output, "MG005") == []
    (finding,) = findings_with_code(_check(tmp_path, LAUNCH.format(entry="pretrain_gpt.py", rest="")), "MG005")
    assert finding["pointer"] == "--max-position-embeddings"


def test_modelopt_flags_are_no_error_for_pretrain_gpt(tmp_path):
    # upstream's pretrain_gpt.py adds them only with ModelOpt installed; an entry that is not in the
    # tree is an unknown program (issue 30), so the finding is an info either way
    path = tmp_path / "launch.sh"
    path.write_text(LAUNCH.format(entry="pretrain_gpt.py", rest="--max-position-embeddings 512 --enable-gpt-oss"))
    (finding,) = findings_with_code(check_json("--min-severity", "info", str(path))[1], "MG001")
    assert finding["severity"] == "info" and finding["unknown_context"]["kind"] == "program"


def test_unknown_flag_in_an_argument_file_is_read_as_pretrain_arguments(tmp_path):
    output = _check(tmp_path, "--num-layers 4\n--retro-project-dir /data\n--enable-gpt-oss\n", "model.args")
    found = findings_with_code(output, "MG001")
    assert [(f["pointer"], f["severity"]) for f in found] == [("--retro-project-dir", "error"),
                                                              ("--enable-gpt-oss", "warning")]
    assert "argument file" in found[0]["message"] and "ModelOpt" in found[1]["message"]
    assert findings_with_code(output, "MG005") == []  # already stopped by argparse; not claimed twice


def test_removed_flag_names_its_replacement(tmp_path):
    output = _check(tmp_path, "--num-layers 4\n--use-custom-fsdp\n", "model.args")
    (finding,) = findings_with_code(output, "MG001")
    assert finding["fix"] == "--use-megatron-fsdp" and "0.13 was the last" in finding["message"]


def test_unknown_flag_of_another_entry_softens_the_value_rules(tmp_path):
    # tasks/main.py is not in the checked tree: its parser is unknown, so these are infos that say so
    text = LAUNCH.format(entry="tasks/main.py", rest="--task MNLI --optimizer adamw --batch-size 4")
    output = _check(tmp_path, text)
    found = findings_with_code(output, "MG004") + findings_with_code(output, "MG003")
    assert [f["severity"] for f in found] == ["info", "info"]
    assert all(f["unknown_context"]["kind"] == "program" for f in found)


def test_values_decided_at_run_time_are_not_judged_and_a_placeholder_is_a_warning(tmp_path):
    rest = "--max-position-embeddings 512 --bf16 $FLAG_VALUE --eval-iters $ITERS 5 --save <Specify path>"
    output = _check(tmp_path, LAUNCH.format(entry="pretrain_gpt.py", rest=rest).replace("<Specify path>", '"<path>"'))
    (finding,) = findings_with_code(output, "MG004")  # only the placeholder, which Megatron receives as written
    assert (finding["pointer"], finding["severity"]) == ("--save", "warning")
    assert "placeholder to fill in" in finding["message"]


def test_a_placeholder_of_several_words_stops_argparse(tmp_path):
    rest = "--max-position-embeddings 512 --save '<PATH TO' 'CHECKPOINTS DIRECTORY>'"
    output = _check(tmp_path, LAUNCH.format(entry="pretrain_gpt.py", rest=rest))
    (finding,) = findings_with_code(output, "MG004")
    assert (finding["pointer"], finding["severity"]) == ("--save", "error")
    assert "unrecognized arguments: CHECKPOINTS DIRECTORY>" in finding["message"]


def test_positional_word_is_rejected(tmp_path):
    # a word before any flag belongs to none; after a one-value flag's value it is a second value
    output = _check(tmp_path, "stray\n--num-layers 4\n--max-position-embeddings 512 more\n", "model.args")
    found = findings_with_code(output, "MG004")
    assert [(f["pointer"], f["line"], f["severity"]) for f in found] == [
        ("stray", 1, "error"), ("--max-position-embeddings", 3, "error")]
    assert "unrecognized arguments: stray" in found[0]["message"]
    assert "unrecognized arguments: more" in found[1]["message"]


def test_deprecated_flags_are_left_to_megatron_deepspeed(tmp_path):
    output = _check(tmp_path, LAUNCH.format(entry="pretrain_gpt.py",
                                            rest="--max-position-embeddings 512 --checkpoint-activations --deepspeed"))
    assert findings_with_code(output, "MG003") == []


def test_two_spellings_of_one_setting_are_given_twice(tmp_path):
    output = _check(tmp_path, LAUNCH.format(entry="pretrain_gpt.py",
                                            rest="--max-position-embeddings 512 --rl-partial-rollouts "
                                                 "--no-rl-partial-rollouts"))
    (finding,) = findings_with_code(output, "MG002")
    assert finding["pointer"] == "--no-rl-partial-rollouts"


# --- what Megatron-LM does with the fixtures ---------------------------------------------------------

DEFAULT_WORLD = 8


def _argv_and_world(path: Path) -> tuple[list[str], int]:
    document = read(path.read_text(encoding="utf-8"), str(path))
    argv = list(document.data.argv)
    assert not any(isinstance(word, Unknown) for word in argv), path
    world = known(document.plan.world.world_size) if document.plan is not None else None
    return argv, world if isinstance(world, int) else DEFAULT_WORLD


# fixture -> (stage, what Megatron says: the error, or a printed line for "exit"); None: accepted
EXPECTED = {
    "MG001/bad.sh": ("parse", "unrecognized arguments: --tensor_model_parallel_size"),
    "MG001/bad_typo.sh": ("parse", "unrecognized arguments: --use-distributed-optimiser"),
    # Megatron-LM's parser does not know it (Megatron-DeepSpeed may: hence only a warning)
    "MG001/bad_deepspeed.sh": ("parse", "unrecognized arguments: --zero-stage 1 --deepspeed"),
    # Megatron-LM's parser alone does not know it (tasks/main.py adds it: hence only a warning)
    "MG001/bad_entry.sh": ("parse", "unrecognized arguments: --task MNLI"),
    "MG002/bad.sh": None,
    "MG003/bad.sh": ("validate", "--batch-size argument is no longer valid, use --micro-batch-size instead"),
    "MG003/bad_checkpoint_activations.sh": ("exit", "--checkpoint-activations is no longer valid"),
    "MG003/bad_rampup.sh": None,
    "MG003/bad_rotary.sh": None,
    "MG003/bad_position.sh": ("validate", "--no-position-embedding is deprecated, use --position-embedding-type"),
    "MG004/bad.sh": ("parse", "unrecognized arguments: true"),
    "MG004/bad_int.sh": ("parse", "argument --eval-iters: invalid int value: 'ten'"),
    "MG004/bad_choice.sh": ("parse", "argument --optimizer: invalid choice: 'adamw'"),
    "MG004/bad_missing.sh": ("parse", "argument --clip-grad: expected one argument"),
    "MG004/bad_extra.sh": ("parse", "unrecognized arguments: 20"),
    "MG005/bad.sh": ("validate", "max_position_embeddings argument is None"),
    "MG005/bad_micro.sh": ("validate", "assert args.micro_batch_size is not None"),
    "MG005/bad.args": ("validate", "either num-layers or encoder-num-layers should be specified"),
}
FIXTURE_CASES = sorted(EXPECTED) + [f"{p.parent.name}/{p.name}" for p in GOOD_CASES]
# Extra lists that show a silent change: --use-rotary-position-embeddings really makes the type rope
# (validate_args raises for --no-position-embedding unless the type is rope).
ROTARY_PROOF = "MG003/bad_rotary.sh + --no-position-embedding"


@pytest.fixture(scope="module")
def verdicts():
    from megatron_oracle import available, judge

    reason = available()
    if reason:
        pytest.skip(reason)
    cases = {name: _argv_and_world(RULES / name) for name in FIXTURE_CASES}
    argv, world = cases["MG003/bad_rotary.sh"]
    cases[ROTARY_PROOF] = ([*argv, "--no-position-embedding"], world)
    return dict(zip(cases, judge(list(cases.values())), strict=True))


def test_every_bad_fixture_has_an_expected_verdict():
    assert sorted(EXPECTED) == sorted(f"{p.parent.name}/{p.name}" for p in RULES.glob("MG00*/bad*"))


@pytest.mark.oracle
@pytest.mark.parametrize("name", FIXTURE_CASES)
def test_megatron_does_what_the_finding_says(verdicts, name):
    verdict = verdicts[name]
    expected = EXPECTED.get(name)
    if expected is None:
        assert (verdict.ok, verdict.stage, verdict.error) == (True, None, None), verdict
        return
    stage, said = expected
    assert (verdict.ok, verdict.stage) == (False, stage), verdict
    if stage == "exit":
        assert verdict.error is None and any(said in line for line in verdict.warnings), verdict
    else:
        assert said in verdict.error, verdict


@pytest.mark.oracle
def test_megatron_keeps_the_last_of_a_flag_given_twice(verdicts):
    assert verdicts["MG002/bad.sh"].args["micro_batch_size"] == 1


@pytest.mark.oracle
def test_megatron_maps_rotary_to_rope_and_ignores_rampup(verdicts):
    assert verdicts[ROTARY_PROOF].ok, verdicts[ROTARY_PROOF]
    rampup = verdicts["MG003/bad_rampup.sh"]
    assert rampup.args["global_batch_size"] == 16
    assert not any("rampup" in line for line in rampup.warnings)  # ignored without a word


@pytest.mark.parametrize("word, refused", [
    ("2", False), ("([1]*3+[0]*1)*2", False), ("[1,0,1]", False), ("x", True), ("2.5", True),
    ("[1,0]*x", True), ("[1, 0]", True),  # a space is no character of Megatron's pattern
    ("(1)", True),  # no `[`: read as an int
])
def test_a_layer_pattern_is_refused_where_megatrons_converter_raises(tmp_path, word, refused):
    """--moe-layer-freq and its siblings take an int, or a list expression of digits and , [ ] ( ) + * only
    (megatron/training/arguments.py moe_freq_type, _eval_pattern: ValueError, which argparse reports)."""
    script = tmp_path / "run.sh"
    script.write_text("torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 4 --num-experts 4 "
                      f"--moe-layer-freq '{word}'\n", encoding="utf-8")
    _, output = check_json("--isolated", str(script))
    found = [f for f in output["findings"] if f["code"] == "MG004"]
    assert bool(found) is refused, found
    if refused:
        assert f"invalid moe_freq_type value: {word!r}" in found[0]["message"]
