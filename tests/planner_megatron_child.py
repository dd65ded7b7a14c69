"""Child process of tests/test_planner_megatron_memory.py: Megatron-LM's theoretical memory report for many
argument lists, with the `args` namespace built by Megatron's own parse_args / validate_args.

    python tests/planner_megatron_child.py < request.json > result.json

stdin: {"cases": [{"argv": [...], "world": N, "padded_vocab_size": V}, ...]}. stdout: one JSON document,
{"results": [{"ok", "error", "weight_and_optimizer", "activation", "activation_formula", "report_mb",
"args"}, ...]}. Megatron's output goes to stderr.

Each case goes through tests/megatron_oracle_child.Judge (the same environment, GPU facts and import
patches as the argument oracle: `parse_args`, `validate_args`, `core_transformer_config_from_args`);
the validated namespace is kept, `padded_vocab_size` is set the way `_vocab_size_with_padding` would
have (the test passes it: the tokenizer is not built here), then
`megatron/training/theoretical_memory_usage.py` runs: `compute_weight_and_optimizer_memory(args)`,
the activation function `report_theoretical_memory` chooses (`compute_activation_memory` with sequence
parallelism and selective recomputation, else `compute_activation_memory_without_sp`), with
num_microbatches = global batch / (micro batch x data-parallel size), and `report_theoretical_memory`.
"""

from __future__ import annotations

import json
import os
import sys
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import megatron_oracle_child as base  # noqa: E402


def main() -> int:
    request = json.loads(sys.stdin.read())
    result_stream = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    judge = base.Judge(base.DEFAULT_MEGATRON)
    captured: dict = {}
    real = judge.arguments

    def validate_args(args, defaults):
        real.validate_args(args, defaults)
        captured["args"] = args

    judge.arguments = types.SimpleNamespace(parse_args=real.parse_args, validate_args=validate_args)
    results = []
    with judge.script._patched_imports():
        from megatron.training import theoretical_memory_usage as tmu
        for case in request["cases"]:
            captured.clear()
            verdict = judge(case["argv"], case["world"])
            if not verdict["ok"] or "args" not in captured:
                results.append({"ok": False, "error": verdict["error"]})
                continue
            args = captured["args"]
            args.padded_vocab_size = case["padded_vocab_size"]
            microbatches = args.global_batch_size // (args.micro_batch_size * args.data_parallel_size)
            try:
                weights = tmu.compute_weight_and_optimizer_memory(args)
                if args.sequence_parallel and args.recompute_granularity == "selective":
                    formula = "compute_activation_memory"
                    activation = tmu.compute_activation_memory(args, num_microbatches=microbatches)
                else:
                    formula = "compute_activation_memory_without_sp"
                    activation = tmu.compute_activation_memory_without_sp(args, num_microbatches=microbatches)
                report = tmu.report_theoretical_memory(args, num_microbatches=microbatches)
            except Exception as failure:  # a case the estimator cannot handle: reported, not fatal
                results.append({"ok": False, "error": f"{type(failure).__name__}: {failure}"})
                continue
            results.append({"ok": True, "error": None, "weight_and_optimizer": weights, "activation": activation,
                            "activation_formula": formula, "report_mb": list(report) if report else None,
                            "args": {"data_parallel_size": args.data_parallel_size, "num_microbatches": microbatches,
                                     "expert_tensor_parallel_size": args.expert_tensor_parallel_size,
                                     "virtual_pipeline_model_parallel_size":
                                         args.virtual_pipeline_model_parallel_size,
                                     "num_query_groups": args.num_query_groups, "kv_channels": args.kv_channels,
                                     "ffn_hidden_size": args.ffn_hidden_size}})
    json.dump({"results": results}, result_stream, allow_nan=False)
    result_stream.write("\n")
    result_stream.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
