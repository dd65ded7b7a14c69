"""MG301 rows: where Megatron fails on a flag's value with no check of its own (an operation raising, not a `raise`
or an `assert`): the implicit sites of src/shardshift/data/coverage/megatron-implicit.tsv, found by mutation
(tests/test_coverage_implicit.py), each row's `site` that table's id."""

from shardshift.rules.megatron.refusals.base import Refusal

_LAYERS = "give `--num-layers` the model's number of transformer layers (at least 1)"
_LAYERS_ROW = "megatron/core/utils.py:{function}:{line}"


def _mup(v) -> bool:
    """Whether µP's init runs (a program without `--use-mup`, an older Megatron, has only the plain one: both divide
    by the number of layers)."""
    if not v.flags.table.by_dest.get("use_mup") and not v.flags.given("use_mup"):
        return False
    return bool(v("use_mup"))


ROWS = [
    Refusal("ZeroDivisionError " + _LAYERS_ROW.format(function="scaled_init_method_normal", line=869), "num_layers",
            lambda v: v("num_layers") == 0 and not _mup(v),
            "its __post_init__ calls scaled_init_method_normal, which divides by sqrt(2 × num_layers): "
            "ZeroDivisionError", _LAYERS, stage="config"),
    Refusal("ValueError " + _LAYERS_ROW.format(function="scaled_init_method_normal", line=869), "num_layers",
            lambda v: v("num_layers") < 0 and not _mup(v),
            "its __post_init__ calls scaled_init_method_normal, which takes sqrt(2 × num_layers) of a negative "
            "number: ValueError: math domain error", _LAYERS, stage="config"),
    Refusal("ZeroDivisionError " + _LAYERS_ROW.format(function="mup_scaled_init_method_normal", line=890), "num_layers",
            lambda v: v("num_layers") == 0 and _mup(v),
            "with --use-mup its __post_init__ calls mup_scaled_init_method_normal, which divides by "
            "sqrt(2 × num_layers): ZeroDivisionError", _LAYERS, involved=("use_mup",), stage="config"),
    Refusal("ValueError " + _LAYERS_ROW.format(function="mup_scaled_init_method_normal", line=890), "num_layers",
            lambda v: v("num_layers") < 0 and _mup(v),
            "with --use-mup its __post_init__ calls mup_scaled_init_method_normal, which takes sqrt(2 × num_layers) "
            "of a negative number: ValueError: math domain error", _LAYERS, involved=("use_mup",), stage="config"),
    Refusal("ZeroDivisionError megatron/core/model_parallel_config.py:resolve_tensor_parallel_weight_shards:36",
            "expert_tensor_parallel_size", lambda v: v("expert_tensor_parallel_size") == 0,
            "ModelParallelConfig.__post_init__ calls resolve_tensor_parallel_weight_shards, which takes the expert "
            "weight shards modulo the expert tensor-parallel size: ZeroDivisionError",
            "give `--expert-tensor-parallel-size` at least 1, or leave it out (the tensor-parallel size)",
            stage="config"),
    Refusal("ZeroDivisionError megatron/core/parallel_state.py:initialize_model_parallel:880",
            "expert_model_parallel_size", lambda v: v("expert_model_parallel_size") == 0,
            "initialize_model_parallel divides the world size by expert tensor × expert × pipeline parallel sizes: "
            "ZeroDivisionError", "give `--expert-model-parallel-size` at least 1 (1 without experts)",
            stage="startup"),
]
