"""MG301 rows: what `pretrain` checks after the arguments, before it builds the model: `initialize_model_parallel`
(megatron/core/parallel_state.py), called by `_initialize_distributed` with the validated arguments."""

from shardshift.rules.megatron.refusals.base import Refusal


def _sizes(v) -> tuple[int, int]:
    """(data-parallel size, expert data-parallel size) as initialize_model_parallel computes them; undecided where
    the world does not split (it raises first: PL101, MG111)."""
    world, tp, pp, cp = v.world(), v("tensor_model_parallel_size"), v("pipeline_model_parallel_size"), \
        v("context_parallel_size")
    etp = v("expert_tensor_parallel_size") or tp  # validate_args: the tensor-parallel size when unset
    expert = etp * v("expert_model_parallel_size") * pp
    if world % (tp * pp * cp) or world % expert:
        raise ZeroDivisionError  # not this row's failure: the row is not judged
    return world // (tp * pp * cp), world // expert


ROWS = [
    Refusal("megatron/core/parallel_state.py:initialize_model_parallel:2", "sharp_enabled_group",
            lambda v: bool(v("use_sharp")) and v("sharp_enabled_group") == "dp_replica" and
            v("num_distributed_optimizer_instances") <= 1,
            "it asserts `num_distributed_optimizer_instances > 1`: dp_replica group requires "
            "num_distributed_optimizer_instances > 1",
            "use `--sharp-enabled-group dp`, or more than one `--num-distributed-optimizer-instances`",
            involved=("use_sharp", "num_distributed_optimizer_instances"), stage="startup"),
    Refusal("megatron/core/parallel_state.py:initialize_model_parallel:3", "sharp_enabled_group",
            lambda v: not v("use_sharp") and v("sharp_enabled_group") is not None,
            "it asserts `sharp_enabled_group is None`: sharp_enabled_group is only valid when use_sharp is True",
            "add `--use-sharp`, or remove `--sharp-enabled-group`", involved=("use_sharp",), stage="startup"),
    Refusal("megatron/core/parallel_state.py:initialize_model_parallel:10", "use_tp_pp_dp_mapping",
            lambda v: bool(v("use_tp_pp_dp_mapping")) and v("pipeline_model_parallel_size") > 1 and
            _sizes(v)[0] != _sizes(v)[1],
            "it asserts the pp-last rank order or equal sizes: when not using pp-last rank ordering, the data "
            "parallel size of the attention and moe layers must be the same",
            "remove `--use-tp-pp-dp-mapping`, or choose expert and tensor sizes that leave the expert layers the "
            "attention layers' data-parallel size",
            involved=("pipeline_model_parallel_size", "expert_model_parallel_size"), stage="startup"),
    Refusal("megatron/core/parallel_state.py:initialize_model_parallel:13", "num_distributed_optimizer_instances",
            lambda v: (_sizes(v)[0] * v("context_parallel_size")) % v("num_distributed_optimizer_instances") != 0,
            "it asserts `(data_parallel_size * context_parallel_size) % num_distributed_optimizer_instances == 0`: "
            "Data parallel size should be divisible by partial DistOpt shard factor",
            "give a `--num-distributed-optimizer-instances` that divides the data-parallel size times the "
            "context-parallel size", stage="startup"),
    Refusal("megatron/core/parallel_state.py:initialize_model_parallel:37", "num_distributed_optimizer_instances",
            lambda v: (_sizes(v)[0] * v("context_parallel_size")) % v("num_distributed_optimizer_instances") == 0
            and _sizes(v)[1] % v("num_distributed_optimizer_instances") != 0,
            "it asserts `expert_data_parallel_size % num_distributed_optimizer_instances == 0`: Expert data parallel "
            "size should be divisible by partial DistOpt shard factor",
            "give a `--num-distributed-optimizer-instances` that divides the expert data-parallel size (the world "
            "over expert tensor × expert × pipeline parallel)", involved=("expert_model_parallel_size",),
            stage="startup"),
]
