"""Case tables for the Megatron training-setup rules (MG201-MG229), run through the real CLI, and
Megatron-LM's own argument code (tests/megatron_oracle.py) as the judge of what each rule claims.

Each bad case: fixture, code, severity, pointer (the flag as written), the text that marks where
the finding must point (its line and column are looked up in the fixture), and the fix."""

from __future__ import annotations

import os
import re

import pytest

from shardshift.formats.megatron.reader import read

from conftest import FIXTURES, check_json, shown
from rule_cases import findings_with_code, marker_position

RULES = FIXTURES / "megatron" / "rules"

# (fixture, code, severity, pointer, marker, fix)
BAD_CASES = [
    ("MG201/bad.sh", "MG201", "error", "--fp16", "--fp16", None),
    ("MG202/bad.sh", "MG202", "error", "--fp8-param-gather", "--fp8-param-gather", "--use-distributed-optimizer"),
    ("MG203/bad.sh", "MG203", "error", "--fp4-format", "--fp4-format", None),
    ("MG204/bad.sh", "MG204", "error", "--fp8-param-gather", "--fp8-param-gather", None),
    ("MG204/bad_fp4.sh", "MG204", "error", "--fp4-param-gather", "--fp4-param-gather", "--fp4-format e2m1"),
    ("MG205/bad.sh", "MG205", "error", "--overlap-param-gather", "--overlap-param-gather", "--use-distributed-optimizer"),
    ("MG206/bad.sh", "MG206", "error", "--overlap-param-gather", "--overlap-param-gather", "--overlap-grad-reduce"),
    ("MG207/bad.sh", "MG207", "error", "--overlap-param-gather-with-optimizer-step",
     "--overlap-param-gather-with-optimizer-step", None),
    ("MG208/bad_pp.sh", "MG208", "error", "--pipeline-model-parallel-size", "--pipeline-model-parallel-size", "1"),
    ("MG208/bad_ep.sh", "MG208", "error", "--expert-model-parallel-size", "--expert-model-parallel-size", "1"),
    ("MG208/bad_distopt.sh", "MG208", "error", "--use-distributed-optimizer", "--use-distributed-optimizer", None),
    ("MG208/bad_fusion.sh", "MG208", "error", "--use-torch-fsdp2", "--use-torch-fsdp2",
     "--no-gradient-accumulation-fusion"),
    ("MG208/bad_ckpt.sh", "MG208", "error", "--ckpt-format", "--ckpt-format", "torch_dist"),
    ("MG208/bad_tied.sh", "MG208", "error", "--use-torch-fsdp2", "--use-torch-fsdp2",
     "--untie-embeddings-and-output-weights"),
    ("MG208/bad_fp16.sh", "MG208", "error", "--fp16", "--fp16", "--bf16"),
    ("MG209/bad_ckpt.sh", "MG209", "error", "--use-megatron-fsdp", "--use-megatron-fsdp", "--ckpt-format fsdp_dtensor"),
    ("MG209/bad_optimizer.sh", "MG209", "error", "--optimizer", "--optimizer", "adam"),
    ("MG209/bad_v2.sh", "MG209", "error", "--use-distributed-optimizer", "--use-distributed-optimizer", None),
    ("MG210/bad.sh", "MG210", "warning", "--use-megatron-fsdp", "--use-megatron-fsdp", "--use-distributed-optimizer"),
    ("MG211/bad.sh", "MG211", "warning", "--data-parallel-sharding-strategy", "--data-parallel-sharding-strategy",
     None),
    ("MG212/bad.sh", "MG212", "warning", "--ddp-bucket-size", "--ddp-bucket-size", "--overlap-grad-reduce"),
    ("MG213/bad.sh", "MG213", "warning", "--use-distributed-optimizer", "--use-distributed-optimizer", None),
    ("MG214/bad.sh", "MG214", "error", "--global-batch-size", "--global-batch-size", None),
    ("MG215/bad.sh", "MG215", "error", "--lr-decay-samples", "--lr-decay-samples", "--lr-decay-iters"),
    ("MG215/bad_samples.sh", "MG215", "error", "--lr-warmup-iters", "--lr-warmup-iters", "--lr-warmup-samples"),
    ("MG216/bad.sh", "MG216", "error", "--lr-warmup-fraction", "--lr-warmup-fraction", None),
    ("MG217/bad.sh", "MG217", "error", "--train-iters", "torchrun", "--train-iters"),
    ("MG218/bad.sh", "MG218", "error", "--min-lr", "--min-lr", None),
    ("MG219/bad.sh", "MG219", "error", "--max-position-embeddings", "--max-position-embeddings", "512"),
    ("MG219/bad_rope.sh", "MG219", "error", "--max-position-embeddings", "--max-position-embeddings", "512"),
    ("MG220/bad.sh", "MG220", "error", "--recompute-granularity", "--recompute-granularity",
     "--recompute-method uniform --recompute-num-layers 1"),
    ("MG220/bad_layers.sh", "MG220", "error", "--recompute-granularity", "--recompute-granularity",
     "--recompute-num-layers 1"),
    ("MG221/bad.sh", "MG221", "error", "--recompute-method", "--recompute-method", None),
    ("MG221/bad_layers.sh", "MG221", "error", "--recompute-num-layers", "--recompute-num-layers", None),
    ("MG222/bad.sh", "MG222", "error", "--distribute-saved-activations", "--distribute-saved-activations", None),
    ("MG222/bad_sp.sh", "MG222", "error", "--distribute-saved-activations", "--distribute-saved-activations", None),
    ("MG223/bad.sh", "MG223", "error", "--optimizer-cpu-offload", "--optimizer-cpu-offload",
     "--use-precision-aware-optimizer"),
    ("MG224/bad_pp.sh", "MG224", "error", "--cpu-offloading-num-layers", "--cpu-offloading-num-layers", None),
    ("MG224/bad_recompute.sh", "MG224", "error", "--cpu-offloading-num-layers", "--cpu-offloading-num-layers", None),
    ("MG224/bad_layers.sh", "MG224", "error", "--cpu-offloading-num-layers", "--cpu-offloading-num-layers", "3"),
    ("MG225/bad.sh", "MG225", "error", "--ckpt-format", "--ckpt-format", "torch_dist"),
    ("MG225/bad_tp.sh", "MG225", "error", "--ckpt-format", "--ckpt-format", "torch_dist"),
    ("MG225/bad_dtensor.sh", "MG225", "error", "--ckpt-format", "--ckpt-format", "torch_dist"),
    ("MG225/bad_gloo.sh", "MG225", "error", "--ckpt-format", "--ckpt-format", "torch_dist"),
    ("MG226/bad.sh", "MG226", "error", "--optimizer", "--optimizer", None),
    ("MG227/bad.sh", "MG227", "error", "--fp16-lm-cross-entropy", "--fp16-lm-cross-entropy", None),
    ("MG227/bad_fp32.sh", "MG227", "error", "--fp32-residual-connection", "--fp32-residual-connection", None),
    ("MG228/bad.sh", "MG228", "error", "--weight-decay-incr-style", "--weight-decay-incr-style", None),
    ("MG228/bad_constant.sh", "MG228", "error", "--start-weight-decay", "--start-weight-decay", None),
    ("MG229/bad.sh", "MG229", "error", "--save", "--save", "--save-interval"),
    ("MG229/bad_retain.sh", "MG229", "error", "--save-retain-interval", "--save-retain-interval", "10"),
    ("MG229/bad_retain_zero.sh", "MG229", "error", "--save-retain-interval", "--save-retain-interval", "5"),
]
GOOD_CASES = sorted(RULES.glob("MG2*/good*.sh"))


def test_every_fixture_is_in_a_table():
    bad = {c[0] for c in BAD_CASES}
    assert bad == {f"{p.parent.name}/{p.name}" for p in RULES.glob("MG2*/bad*")}
    assert {p.parent.name for p in GOOD_CASES} == {c[1] for c in BAD_CASES}


@pytest.mark.parametrize("fixture,code,severity,pointer,marker,fix", BAD_CASES, ids=[c[0] for c in BAD_CASES])
def test_bad_fixture_is_reported_at_the_flag(fixture, code, severity, pointer, marker, fix):
    path = RULES / fixture
    status, output = check_json(str(path))
    found = findings_with_code(output, code)
    assert len(found) == 1, output["findings"]
    finding = found[0]
    assert (finding["severity"], finding["pointer"]) == (severity, pointer)
    assert (finding["line"], finding["column"]) == marker_position(path, marker)
    assert finding["fix"] == fix
    assert finding["file"] == shown(path)
    # the fixture shows its rule's problem and nothing else of this module
    assert [f["code"] for f in output["findings"] if f["code"].startswith("MG2")] == [code]
    if severity == "warning":
        assert [f for f in output["findings"] if f["severity"] == "error"] == []


@pytest.mark.parametrize("path", GOOD_CASES, ids=[f"{p.parent.name}/{p.name}" for p in GOOD_CASES])
def test_good_fixture_has_no_finding_of_its_rule_and_no_error(path):
    status, output = check_json(str(path))
    assert findings_with_code(output, path.parent.name) == []
    assert [f for f in output["findings"] if f["severity"] == "error"] == []
    assert status == 0


def _write(tmp_path, extra: str, name: str = "run.sh", drop: str = "") -> str:
    """The MG201 good fixture (a valid 8-GPU launch) with `extra` words added and `drop` taken out."""
    text = (RULES / "MG201" / "good.sh").read_text(encoding="utf-8").rstrip("\n")
    if drop:
        assert drop in text
        text = text.replace(drop, "")
    path = tmp_path / name
    path.write_text(text + " \\\n    " + extra + "\n", encoding="utf-8")
    return str(path)


def test_a_value_decided_at_run_time_is_not_judged(tmp_path):
    _, output = check_json(_write(tmp_path, "--min-lr $MIN_LR"))
    assert findings_with_code(output, "MG218") == []
    _, output = check_json(_write(tmp_path, "--fp16 $FLAGS"))  # the splice might hold anything, the pair is known
    assert len(findings_with_code(output, "MG201")) == 1


def test_a_save_path_decided_at_run_time_still_needs_an_interval(tmp_path):
    # validate_args only asks that --save is set; its path does not matter
    _, output = check_json(_write(tmp_path, "--save $CHECKPOINT_PATH"))
    assert len(findings_with_code(output, "MG229")) == 1
    _, output = check_json(_write(tmp_path, "--save $CHECKPOINT_PATH --save-interval $INTERVAL"))
    assert findings_with_code(output, "MG229") == []


def test_an_absent_flag_is_not_judged_next_to_an_unresolved_splice(tmp_path):
    # MG202 would need the absence of --use-distributed-optimizer, which $EXTRA_ARGS may hold
    _, output = check_json(_write(tmp_path, "--fp8-format hybrid --fp8-param-gather $EXTRA_ARGS"))
    assert findings_with_code(output, "MG202") == []
    _, output = check_json(_write(tmp_path, "--use-torch-fsdp2 $EXTRA_ARGS"))
    assert findings_with_code(output, "MG208") == []


def test_checkpoint_arguments_may_replace_what_the_rules_read(tmp_path):
    _, output = check_json(_write(tmp_path, "--use-checkpoint-args --load ckpt --use-torch-fsdp2 "
                                            "--no-gradient-accumulation-fusion"))
    assert findings_with_code(output, "MG208") == []  # the checkpoint decides the tied embeddings


def test_yaml_config_launch_is_not_judged(tmp_path):
    _, output = check_json(_write(tmp_path, "--yaml-cfg run.yaml --fp16"))
    assert findings_with_code(output, "MG201") == []


def test_megatron_deepspeed_launch_is_not_judged(tmp_path):
    # Megatron-DeepSpeed has its own validate_args; these rules read Megatron-LM's
    _, output = check_json(_write(tmp_path, "--fp16 --deepspeed --deepspeed_config ds_config.json"))
    assert [f for f in output["findings"] if f["code"].startswith("MG2")] == []


def test_recompute_activations_counts_as_selective(tmp_path):
    _, output = check_json(_write(tmp_path, "--recompute-granularity full --recompute-activations "
                                            "--recompute-method uniform"))
    (finding,) = findings_with_code(output, "MG221")
    assert "--recompute-activations" in finding["message"]
    assert findings_with_code(output, "MG220") == []


def test_explain_prints_each_rule():
    from conftest import run_cli

    for code in sorted({c[1] for c in BAD_CASES}):
        done = run_cli("explain", code)
        assert done.returncode == 0, done.stderr
        assert "## Why is this bad" in done.stdout or "Why is this bad" in done.stdout


# ------------------------------------------------------------------------------------------------ oracle

# What Megatron does with each fixture, as the rule's message says: (stage, text in the error) for a
# rejection; for an accepted list, the resolved values the message claims (Verdict.args) and a warning.
REJECTED = {
    "MG201/bad.sh": ("validate", "assert not args.bf16"),
    "MG202/bad.sh": ("validate", "--fp8-param-gather only supported with distributed optimizer"),
    "MG203/bad.sh": ("validate", "--fp4-format and --fp8-format cannot be used simultaneously"),
    "MG204/bad.sh": ("config", "fp8_param must be used together with fp8 mode"),
    "MG204/bad_fp4.sh": ("validate", "--fp4-param-gather must be used together with --fp4-format"),
    "MG205/bad.sh": ("validate", "--overlap-param-gather only supported with distributed optimizer"),
    "MG206/bad.sh": ("validate", "Must use --overlap-param-gather with --overlap-grad-reduce"),
    "MG207/bad.sh": ("validate", "only supported with interleaved pipeline parallelism"),
    "MG208/bad_pp.sh": ("validate", "--use-torch-fsdp2 is not supported with pipeline parallelism"),
    "MG208/bad_ep.sh": ("validate", "--use-torch-fsdp2 is not supported with expert parallelism"),
    "MG208/bad_distopt.sh": ("validate", "--use-torch-fsdp2 is not supported with MCore's distributed optimizer"),
    "MG208/bad_fusion.sh": ("validate", "--use-torch-fsdp2 is not supported with gradient accumulation fusion"),
    "MG208/bad_ckpt.sh": ("validate", "--use-torch-fsdp2 requires --ckpt-format torch_dist or torch_dcp"),
    "MG208/bad_tied.sh": ("validate", "--use-torch-fsdp2 requires --untie-embeddings-and-output-weights"),
    "MG208/bad_fp16.sh": ("validate", "--use-torch-fsdp2 not supported with fp16 yet"),
    "MG209/bad_ckpt.sh": ("validate", "Megatron-FSDP requires the `fsdp_dtensor` checkpointing format"),
    "MG209/bad_optimizer.sh": ("validate", "Megatron-FSDP does not support the muon optimizer yet"),
    "MG209/bad_v2.sh": ("validate", "--megatron-fsdp-version 2 is not compatible with --use-distributed-optimizer"),
    "MG214/bad.sh": ("validate", "Cannot specify both --step-batch-size-schedule and --global-batch-size"),
    "MG215/bad.sh": ("validate", "expected iteration-based learning rate decay"),
    "MG215/bad_samples.sh": ("validate", "expected sample-based learnig rate warmup"),
    "MG216/bad.sh": ("validate", "can only specify one of lr-warmup-fraction and lr-warmup-iters"),
    "MG218/bad.sh": ("validate", "assert args.min_lr <= args.lr"),
    "MG219/bad.sh": ("validate", "max_position_embeddings (256) must be greater than or equal to seq_length (512)"),
    "MG219/bad_rope.sh": ("validate",
                          "max_position_embeddings (256) must be greater than or equal to seq_length (512)"),
    "MG220/bad.sh": ("config", 'recompute_method must be "block" or "uniform"'),
    "MG220/bad_layers.sh": ("config", "recompute_num_layers must be between 1 and num_layers_per_pipeline_rank"),
    "MG221/bad.sh": ("validate", "recompute method is not yet supported for selective recomputing granularity"),
    "MG221/bad_layers.sh": ("config", "When using recompute_granularity: selective recompute_num_layers must be None"),
    "MG222/bad.sh": ("validate", "distributed recompute activations is only application to full recompute"),
    "MG222/bad_sp.sh": ("config", "must be false when sequence parallel is enabled"),
    "MG223/bad.sh": ("validate", "must be used in conjunction with `--use-precision-aware-optimizer`"),
    "MG224/bad_pp.sh": ("config", "Currently there is no support for Pipeline parallelism with CPU offloading"),
    "MG224/bad_recompute.sh": ("config", "CPU offloading does not work when activation recomputation is enabled"),
    "MG224/bad_layers.sh": ("config", "CPU offloading can be done only for layers less than 4"),
    "MG225/bad.sh": ("validate", "--ckpt-format torch_dcp is only tested with FSDP."),
    "MG225/bad_tp.sh": ("validate", "--ckpt-format torch_dcp is not tested with megatron tensor parallelism."),
    "MG225/bad_dtensor.sh": ("validate", "--ckpt-format fsdp_dtensor is only tested with Megatron FSDP."),
    "MG225/bad_gloo.sh": ("validate", "assert args.use_dist_ckpt"),
    "MG226/bad.sh": ("validate", "Emerging optimizer does not support Torch-FSDP2 for now."),
    "MG227/bad.sh": ("validate", "lm cross entropy in fp16 only support in fp16 mode."),
    "MG227/bad_fp32.sh": ("validate", "residual connection in fp32 only supported when using fp16 or bf16."),
    "MG228/bad.sh": ("validate", "assert args.end_weight_decay is not None"),
    "MG228/bad_constant.sh": ("validate", "assert args.start_weight_decay is None"),
    "MG229/bad.sh": ("validate", "assert args.save_interval is not None"),
    "MG229/bad_retain.sh": ("validate", "assert args.save_retain_interval % args.save_interval == 0"),
    "MG229/bad_retain_zero.sh": ("validate", "assert args.save_retain_interval > 0"),
}
# accepted, with the values the message says Megatron ends up with (of those Verdict.args reports), and the
# warning it prints (or None)
ACCEPTED = {
    # Megatron-FSDP v1 turns the distributed optimizer on by itself
    "MG210/bad.sh": ({"use_distributed_optimizer": True}, "Using DistributedOptimizer"),
    # accepted without a word; only Megatron-FSDP reads the strategy (megatron/core/optimizer/__init__.py,
    # megatron/core/distributed/fsdp/): that it is unused otherwise is read in the code, beyond the oracle
    "MG211/bad.sh": ({"use_distributed_optimizer": True}, None),
    # accepted without a word; DDP sets bucket_size to None without --overlap-grad-reduce
    # (distributed_data_parallel.py, training.resolve_ddp_bucket_size): read in the code, beyond the oracle
    "MG212/bad.sh": ({"use_distributed_optimizer": True}, None),
    "MG213/bad.sh": ({"use_distributed_optimizer": False}, "Disabling use_distributed_optimizer"),
    # validate_args lets it pass; get_optimizer_param_scheduler (training.py) raises "either train-iters or
    # train-samples should be provided." at start-up, after the model is built: beyond the oracle
    "MG217/bad.sh": ({}, None),
}


def _argv(path) -> tuple[list[str], int]:
    document = read(path.read_text(encoding="utf-8"), str(path))
    argv = list(document.data.argv)
    assert all(isinstance(word, str) for word in argv), argv
    world = document.plan.world.world_size
    assert isinstance(world, int), world
    return argv, world


FSDP2 = "--use-torch-fsdp2 --untie-embeddings-and-output-weights --no-gradient-accumulation-fusion"
# Conditions beyond the fixtures: (name, words added to a valid launch, words taken out, code, how many
# findings of it, what Megatron does: (stage, text in the error) or (None, a warning it prints or None)).
EXTRA = [
    # the distributed-optimizer assertion runs before Megatron-FSDP turns the optimizer on
    ("with-optimizer-step-megatron-fsdp", "--use-megatron-fsdp --ckpt-format torch --overlap-grad-reduce "
     "--overlap-param-gather --overlap-param-gather-with-optimizer-step --pipeline-model-parallel-size 2 "
     "--num-layers-per-virtual-pipeline-stage 1", "", "MG207", 1,
     ("validate", "--overlap-param-gather-with-optimizer-step only supported with distributed optimizer")),
    ("offload-fp8-recipe", "--use-distributed-optimizer --optimizer-cpu-offload --use-precision-aware-optimizer "
     "--fp8-format hybrid --fp8-param-gather --fp8-recipe tensorwise", "", "MG223", 1,
     ("validate", "must be used in conjunction with `--fp8-recipe delayed`")),
    ("iterations-with-warmup-samples", "--lr-warmup-samples 16", "", "MG215", 1,
     ("validate", "expected iteration-based learning rate warmup")),
    ("decoder-sequence", "--decoder-seq-length 1024", "", "MG219", 1,
     ("validate", "args.max_position_embeddings >= args.decoder_seq_length")),
    ("fsdp2-buckets", FSDP2 + " --overlap-grad-reduce --ddp-bucket-size 1000", "", "MG212", 1, (None, None)),
    # FSDP2 turns fp8_param_gather off itself with this Transformer Engine (a version matter): not judged
    ("fsdp2-fp8-param-gather", FSDP2 + " --fp8-param-gather", "", "MG204", 0,
     (None, "turning off fp8_param_gather")),
    ("freeze-both", "--freeze-all-layers --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather",
     "", "MG213", 2, (None, "Disabling overlap_param_gather")),
    ("skip-train", "--skip-train", "--train-iters 10 ", "MG217", 0, (None, None)),
]


@pytest.fixture(scope="module")
def extra_scripts(tmp_path_factory):
    directory = tmp_path_factory.mktemp("mg2")
    return {name: _write(directory, words, f"{name}.sh", drop) for name, words, drop, *_ in EXTRA}


@pytest.fixture(scope="module")
def verdicts(extra_scripts):
    """Every bad and good fixture of this module and the EXTRA cases, judged in one child process."""
    from pathlib import Path

    from megatron_oracle import available, judge

    reason = available()
    if reason is not None:
        if os.environ.get("CI", "").strip().lower() in ("1", "true", "yes"):
            pytest.fail(f"the Megatron oracle must run in CI: {reason}")
        pytest.skip(reason)
    paths = sorted(RULES.glob("MG2*/*.sh"))
    keys = [f"{p.parent.name}/{p.name}" for p in paths] + list(extra_scripts)
    paths += [Path(extra_scripts[name]) for name in extra_scripts]
    return dict(zip(keys, judge([_argv(p) for p in paths])))


@pytest.mark.oracle
def test_oracle_covers_every_bad_fixture():
    assert set(REJECTED) | set(ACCEPTED) == {c[0] for c in BAD_CASES}


@pytest.mark.oracle
@pytest.mark.parametrize("fixture", sorted(REJECTED))
def test_megatron_rejects_a_bad_fixture_where_the_rule_says(verdicts, fixture):
    verdict = verdicts[fixture]
    stage, text = REJECTED[fixture]
    assert (verdict.ok, verdict.stage) == (False, stage), verdict
    assert text in (verdict.error or ""), verdict.error
    code = fixture.split("/")[0]
    _, output = check_json(str(RULES / fixture))
    (finding,) = findings_with_code(output, code)
    said = "validate_args" if stage == "validate" else "TransformerConfig raises ValueError"
    assert said in finding["message"]
    # the message quotes Megatron: its message up to the first comma, or the bare assertion's expression
    error = verdict.error or ""
    quoted = error.split(": assert ", 1)[1] if error.startswith("AssertionError (no message)") else \
        re.split(r",|\. |: (?=\S+$)", error)[0].rstrip(".")
    assert quoted in finding["message"], (quoted, finding["message"])


@pytest.mark.oracle
@pytest.mark.parametrize("fixture", sorted(ACCEPTED))
def test_megatron_accepts_a_bad_fixture_and_changes_or_ignores_what_the_rule_says(verdicts, fixture):
    verdict = verdicts[fixture]
    assert verdict.ok, verdict
    values, warning = ACCEPTED[fixture]
    assert {k: verdict.args.get(k) for k in values} == values
    if warning is not None:
        assert any(warning in w for w in verdict.warnings), verdict.warnings


@pytest.mark.oracle
@pytest.mark.parametrize("path", GOOD_CASES, ids=[f"{p.parent.name}/{p.name}" for p in GOOD_CASES])
def test_megatron_accepts_every_good_fixture(verdicts, path):
    verdict = verdicts[f"{path.parent.name}/{path.name}"]
    assert verdict.ok, verdict


@pytest.mark.oracle
@pytest.mark.parametrize("name,words,drop,code,count,megatron", EXTRA, ids=[c[0] for c in EXTRA])
def test_more_conditions_against_megatron(verdicts, extra_scripts, name, words, drop, code, count, megatron):
    verdict = verdicts[name]
    stage, text = megatron
    if stage is None:
        assert verdict.ok, verdict
        if text is not None:
            assert any(text in w for w in verdict.warnings), verdict.warnings
    else:
        assert (verdict.ok, verdict.stage) == (False, stage), verdict
        assert text in (verdict.error or ""), verdict.error
    _, output = check_json(extra_scripts[name])
    found = findings_with_code(output, code)
    assert len(found) == count, output["findings"]
    if stage is not None:
        assert text in found[0]["message"], found[0]["message"]
