"""The Megatron-LM argument oracle itself (tests/megatron_oracle.py and its child process).

Every case below goes to Megatron in ONE `judge` call (one child process, ~9 s of imports), made by a
module-scoped fixture. Without ../shared/oracles/megatron-lm the tests skip, except under CI (CI=true),
where they fail naming what is missing.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import ROOT
from megatron_oracle import CHILD, Verdict, available, judge

pytestmark = pytest.mark.oracle

# A small GPT that passes parse_args, validate_args and TransformerConfig (mock data: no files needed).
GPT = ["--num-layers", "4", "--hidden-size", "256", "--num-attention-heads", "8", "--seq-length", "128",
       "--max-position-embeddings", "128", "--micro-batch-size", "2", "--global-batch-size", "16",
       "--lr", "1e-4", "--train-iters", "10", "--mock-data"]
TP2 = ["--tensor-model-parallel-size", "2"]
HEADS32 = [*GPT[:4], "--num-attention-heads", "32", *GPT[6:]]

# name -> (argv, world size). The order is the batch order: "tp2" runs first (as if alone in the
# process), then failures of every stage, then the same list again ("tp2 again", "tp2 third").
CASES: dict[str, tuple[list[str], int]] = {
    "tp2": ([*GPT, *TP2], 8),
    "tp3": ([*GPT, "--tensor-model-parallel-size", "3"], 8),
    "tp2 after a validate failure": ([*GPT, *TP2], 8),
    "underscore": ([*GPT, "--tensor_model_parallel_size", "2"], 8),
    "heads32 tp3": ([*HEADS32, "--tensor-model-parallel-size", "3"], 3),
    "fp16 bf16": ([*GPT, "--fp16", "--bf16"], 8),
    "checkpoint-activations": ([*GPT, "--checkpoint-activations"], 8),
    "missing yaml": ([*GPT, "--yaml-cfg", str(ROOT / "no-such-megatron-config.yaml")], 8),
    "deterministic": ([*GPT, "--deterministic-mode"], 8),
    "tp3 again": ([*GPT, "--tensor-model-parallel-size", "3"], 8),
    "tp2 again": ([*GPT, *TP2], 8),
    "tp2 third": ([*GPT, *TP2], 8),
    "bf16 sp pp vpp": ([*GPT, "--bf16", "--sequence-parallel", "--use-distributed-optimizer", *TP2,
                        "--pipeline-model-parallel-size", "4", "--num-layers-per-virtual-pipeline-stage", "1",
                        "--num-layers", "8"], 16),
    "sp without tp": ([*GPT, "--sequence-parallel"], 8),
    "gqa 4 groups": ([*GPT, *TP2, "--group-query-attention", "--num-query-groups", "4"], 8),
    "gqa 3 groups": ([*GPT, *TP2, "--group-query-attention", "--num-query-groups", "3"], 8),
    "cp2": ([*GPT, "--context-parallel-size", "2"], 8),
    "fsdp2 tp2": ([*GPT, *TP2, "--use-torch-fsdp2", "--untie-embeddings-and-output-weights",
                   "--no-gradient-accumulation-fusion", "--ckpt-format", "torch_dist"], 8),
    "moe grouped gemm": ([*GPT, "--num-experts", "8", "--expert-model-parallel-size", "2", "--moe-grouped-gemm"], 8),
    "fp4": ([*GPT, "--bf16", "--fp4-format", "e2m1"], 8),
}


def _ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


@pytest.fixture(scope="module")
def verdicts() -> dict[str, Verdict]:
    reason = available()
    if reason:
        if _ci():
            pytest.fail(f"Megatron oracle unavailable: {reason}; CI must run every oracle test", pytrace=False)
        pytest.skip(reason)
    return dict(zip(CASES, judge(list(CASES.values())), strict=True))


def test_minimal_gpt_passes_and_resolves_the_data_parallel_size(verdicts):
    verdict = verdicts["tp2"]
    assert (verdict.ok, verdict.stage, verdict.error) == (True, None, None), verdict
    assert verdict.args == {
        "world_size": 8, "tensor_model_parallel_size": 2, "pipeline_model_parallel_size": 1,
        "context_parallel_size": 1, "expert_model_parallel_size": 1, "data_parallel_size": 4,
        "sequence_parallel": False, "micro_batch_size": 2, "global_batch_size": 16, "fp16": False, "bf16": False,
        "params_dtype": "torch.float32", "num_query_groups": 1, "group_query_attention": False,
        "virtual_pipeline_model_parallel_size": None, "use_distributed_optimizer": False}
    assert any("data-parallel size: 4" in line for line in verdict.warnings)  # print_rank_0 is captured


def test_world_not_divisible_by_tp_fails_in_validate_args(verdicts):
    verdict = verdicts["tp3"]
    assert (verdict.ok, verdict.stage, verdict.exception) == (False, "validate", "AssertionError")
    assert "world size (8) is not divisible by total_model_size" in verdict.error
    assert verdict.where.startswith("megatron/training/arguments.py:")
    assert verdict.args is None


def test_underscore_spelling_is_an_argparse_error(verdicts):
    verdict = verdicts["underscore"]
    assert (verdict.ok, verdict.stage, verdict.exception) == (False, "parse", "SystemExit")
    assert verdict.error == "unrecognized arguments: --tensor_model_parallel_size 2"


def test_heads_not_divisible_by_tp_fails_in_transformer_config(verdicts):
    verdict = verdicts["heads32 tp3"]
    assert (verdict.ok, verdict.stage, verdict.exception) == (False, "config", "ValueError")
    assert "num_attention_heads (32) must be a multiple of tensor_model_parallel_size (3)" in verdict.error
    assert verdict.where.startswith("megatron/core/transformer/transformer_config.py:")
    assert verdict.args["data_parallel_size"] == 1  # validate_args passed: its resolved values are kept


def test_fp16_with_bf16_fails(verdicts):
    verdict = verdicts["fp16 bf16"]
    assert (verdict.ok, verdict.stage, verdict.exception) == (False, "validate", "AssertionError")
    assert "assert not args.bf16" in verdict.error  # a bare assert: the message is its source line


def test_checkpoint_activations_exits_with_status_zero(verdicts):
    verdict = verdicts["checkpoint-activations"]
    assert (verdict.ok, verdict.stage, verdict.error) == (False, "exit", None)
    assert any("--checkpoint-activations is no longer valid" in line for line in verdict.warnings)


def test_other_exceptions_are_contained(verdicts):
    verdict = verdicts["missing yaml"]
    assert (verdict.ok, verdict.stage, verdict.exception) == (False, "parse", "FileNotFoundError")
    assert "no-such-megatron-config.yaml" in verdict.error


def test_cases_do_not_leak_into_each_other(verdicts):
    assert verdicts["tp2 after a validate failure"] == verdicts["tp2"]
    assert verdicts["tp2 again"] == verdicts["tp2"]  # after parse/config/exit failures and --deterministic-mode
    assert verdicts["tp2 third"] == verdicts["tp2"]
    assert verdicts["tp3 again"] == verdicts["tp3"]
    assert verdicts["deterministic"].ok, verdicts["deterministic"]


def test_resolved_values(verdicts):
    args = verdicts["bf16 sp pp vpp"].args
    assert verdicts["bf16 sp pp vpp"].ok, verdicts["bf16 sp pp vpp"]
    assert (args["data_parallel_size"], args["pipeline_model_parallel_size"]) == (2, 4)
    assert (args["bf16"], args["params_dtype"], args["sequence_parallel"]) == (True, "torch.bfloat16", True)
    assert (args["virtual_pipeline_model_parallel_size"], args["use_distributed_optimizer"]) == (2, True)
    gqa = verdicts["gqa 4 groups"]
    assert gqa.ok and (gqa.args["group_query_attention"], gqa.args["num_query_groups"]) == (True, 4)


def test_warnings_are_recorded(verdicts):
    verdict = verdicts["sp without tp"]
    assert verdict.ok and verdict.args["sequence_parallel"] is False
    assert any(line.startswith("UserWarning: Disabling sequence parallelism") for line in verdict.warnings)


def test_query_groups_must_divide_or_be_a_multiple_of_tp(verdicts):
    verdict = verdicts["gqa 3 groups"]
    assert (verdict.stage, verdict.exception) == ("config", "ValueError")
    assert "num_query_groups (3) must be a multiple or divisor of tensor_model_parallel_size (2)" in verdict.error


@pytest.mark.parametrize("name", ["tp2", "cp2", "fsdp2 tp2", "moe grouped gemm", "fp4"])
def test_gpu_facts_and_environment_advice_are_not_rejections(verdicts, name):
    """Accepted only because the child supplies a Hopper GPU's arch/capability, a Transformer Engine
    version and the CUDA_DEVICE_MAX_CONNECTIONS value Megatron asks for (1, or unset with FSDP)."""
    assert verdicts[name].ok, verdicts[name]


def test_available_names_a_missing_folder(tmp_path):
    missing = tmp_path / "megatron-lm"
    assert available(missing) == f"{missing} (Megatron-LM's own code) is not present"


def test_bad_cases_are_refused_before_any_process():
    assert judge([]) == []
    with pytest.raises(TypeError):
        judge([("--bf16", 8)])
    with pytest.raises(ValueError):
        judge([(["--bf16"], 0)])


def test_the_harness_never_imports_torch_or_megatron_here():
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import megatron_oracle as m; m.available(); "
            "print(sorted(n for n in sys.modules if n.split('.')[0] in ('torch', 'megatron')))")
    done = subprocess.run([sys.executable, "-c", code, str(CHILD.parent)], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert (done.returncode, done.stdout.strip()) == (0, "[]"), done.stderr
