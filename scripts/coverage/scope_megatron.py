"""The check sites of Megatron-LM's argument path (megatron-core 0.20.0, the checkout in
../shared/oracles/megatron-lm: Megatron-LM's training code is on no package index) that judge
configuration.

Included, in the order `pretrain_gpt.py` meets them before it builds anything:

- `training/arguments.py`, every function: `parse_args` (argparse's type and choice helpers of the
  file: `tuple_type`, `moe_freq_type`, ...), `validate_args` (the flags against each other and the
  world size, read from `WORLD_SIZE`), and what it calls in the file;
- what `validate_args` calls elsewhere: `core/transformer/cuda_graph_config.py` (the cuda-graph
  scope and module names), `core/transformer/pipeline_parallel_layer_layout.py` (a
  `--pipeline-model-parallel-layout` string), `core/models/hybrid/hybrid_layer_allocation.py`
  (a hybrid layer pattern), `training/determinism.py` (`--deterministic-mode`);
- `training/argument_utils.py` `core_transformer_config_from_args`, then the config dataclasses it
  builds: `core/transformer/transformer_config.py` (`TransformerConfig.__post_init__`: heads, query
  groups, the pipeline split, MoE, recomputation, fp8/fp4, ...) and `core/model_parallel_config.py`.

Beyond these, `pretrain` goes on to `initialize_model_parallel` (the degrees against the process
group), the microbatch calculator, the model, optimizer and data builders and the first
`train_step`: those sites are reached by the call graph (scripts/coverage/callgraph.py, entry
`pretrain`) and not judged yet, so they count as decidable in the coverage shown.
"""

from pathlib import Path

SOURCE = Path(__file__).resolve().parents[3] / "shared" / "oracles" / "megatron-lm"
RELEASE = "0.20.0"

FILES = {
    "megatron/training/arguments.py": None,
    "megatron/core/transformer/cuda_graph_config.py": None,
    "megatron/core/transformer/pipeline_parallel_layer_layout.py": None,
    "megatron/core/models/hybrid/hybrid_layer_allocation.py": None,
    "megatron/training/determinism.py": None,
    "megatron/training/argument_utils.py": ["core_transformer_config_from_args"],
    "megatron/core/transformer/transformer_config.py": None,
    "megatron/core/model_parallel_config.py": None,
}
