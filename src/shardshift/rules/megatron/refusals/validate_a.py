"""MG301 rows: `validate_args` (megatron/training/arguments.py), its sites 1-100."""

from shardshift.rules.megatron.refusals.base import Refusal, Undecided


def _name(value):
    """An enum-typed flag's value as its name (the flag may come as a string or an enum)."""
    return None if value is None else str(value).rsplit(".", 1)[-1]


def _gtp(v):
    """gtp_weight_remat_size as validate_args resolves it (resolve_tensor_parallel_weight_shards)."""
    shards = v("tensor_parallel_num_weight_shards")
    return 1 if shards is None else shards // v("tensor_model_parallel_size")


def _dp(v):
    """args.data_parallel_size: world // (tp * pp * cp * gtp_weight_remat_size)."""
    return v.world() // (v("tensor_model_parallel_size") * v("pipeline_model_parallel_size")
                         * v("context_parallel_size") * _gtp(v))


def _global_batch(v):
    """args.global_batch_size after validate_args' default (micro batch * data-parallel size)."""
    given = v("global_batch_size")
    return given if given is not None else v("micro_batch_size") * _dp(v)


def _rl_samples(v):
    """grpo_prompts_per_step * grpo_group_size * grpo_iterations: the samples of one inference iteration."""
    return v("grpo_prompts_per_step") * v("grpo_group_size") * v("grpo_iterations")


_MIGRATED_MODULES = {"full_iteration", "full_iteration_inference"}  # --cuda-graph-modules spellings that set other args


def _cuda_graph_impl(v):
    """args.cuda_graph_impl after the deprecated --enable-cuda-graph / --external-cuda-graph rewrites."""
    modules = v("cuda_graph_scope_deprecated")
    if modules is None:
        modules = v("cuda_graph_modules")
    if any(_name(m) in _MIGRATED_MODULES for m in modules or []):
        raise Undecided("cuda_graph_modules")  # their migration rewrites cuda_graph_impl / the inference scope
    impl = v("cuda_graph_impl")
    if v("enable_cuda_graph"):
        impl = "local"
    if v("external_cuda_graph"):
        impl = "transformer_engine"
    return impl


def _inference_scope(v):
    """args.inference_cuda_graph_scope after normalize_inference_cuda_graph_scope (default from the impl)."""
    impl = _cuda_graph_impl(v)
    scope = _name(v("inference_cuda_graph_scope"))
    if scope is None:
        return "layer" if impl == "local" else "none"
    return scope


_ALLOWED_INFERENCE_SCOPES = {"none": {"none"}, "local": {"layer", "block"},
                             "transformer_engine": {"none"}, "full_iteration": {"none"}}


def _allowed_inference_scopes(v):
    allowed = _ALLOWED_INFERENCE_SCOPES.get(_cuda_graph_impl(v))
    if allowed is None:
        raise Undecided("cuda_graph_impl")  # a value argparse refuses (MG004's)
    return allowed


def _hybrid_pattern(v):
    """args.hybrid_layer_pattern after the --hybrid-override-pattern and legacy MTP pattern rewrites."""
    pattern = v("hybrid_override_pattern")
    if pattern is None:
        pattern = v("hybrid_layer_pattern")
    legacy, depths = v("mtp_hybrid_override_pattern"), v("mtp_num_layers")
    if legacy is not None and depths is not None and depths > 0 and (pattern is None or "/" not in pattern):
        pattern = (pattern or "") + "/" + "/".join([legacy] * depths)
    return pattern


def _pipes(v):
    pattern = _hybrid_pattern(v)
    return pattern is not None and "|" in pattern.split("/")[0]


def _mtp_layers(v):
    """args.mtp_num_layers at the MTP check (a pattern's MTP depths replace it: not modelled, undecided)."""
    written = v("hybrid_override_pattern") or v("hybrid_layer_pattern") or ""
    if "/" in written:
        raise Undecided("hybrid_layer_pattern")
    return v("mtp_num_layers")


def _check_for_nan(v):
    """args.check_for_nan_in_loss_and_grad after --fp16 with dynamic loss scaling turns it off."""
    return v("check_for_nan_in_loss_and_grad") and not (v("fp16") and not v("loss_scale"))


RL = ("perform_rl_step",)

ROWS = [
    Refusal("megatron/training/arguments.py:validate_args:1", "ckpt_convert_format",
            lambda v: v("ckpt_convert_format") is not None and v("ckpt_convert_save") is None,
            "it asserts `args.ckpt_convert_save is not None` (no message) when --ckpt-convert-format is set",
            "add `--ckpt-convert-save DIR` (where the converted checkpoint goes)", involved=("ckpt_convert_save",)),
    Refusal("megatron/training/arguments.py:validate_args:2", "ckpt_convert_format",
            lambda v: v("ckpt_convert_format") is not None and v("load") is None,
            "it asserts `args.load is not None` (no message) when --ckpt-convert-format is set",
            "add `--load DIR`, the checkpoint to convert", involved=("load",)),
    Refusal("megatron/training/arguments.py:validate_args:3", "non_persistent_ckpt_type",
            lambda v: v("non_persistent_ckpt_type") not in ("global", "local", None),
            "it asserts `args.non_persistent_ckpt_type in ['global', 'local', None]`: Currently only global and "
            "local checkpoints are supported",
            "use `--non-persistent-ckpt-type global` or `local`"),
    Refusal("megatron/training/arguments.py:validate_args:6", "attention_backend",
            lambda v: str(v("attention_backend")).rsplit(".", 1)[-1] == "local" and
            (v("spec") is None or v("spec")[0] != "local"),
            "it asserts `args.spec[0] == 'local'`, a TypeError while --spec is unset: the local attention "
            "backend is only supported with --spec local",
            "add `--spec local`, or use another --attention-backend", involved=("spec",)),
    Refusal("megatron/training/arguments.py:validate_args:7", "rl_persist_cuda_graphs",
            lambda v: v("perform_rl_step") and v("rl_persist_cuda_graphs") and v("cuda_graph_impl") == "none",
            "it asserts `not args.rl_persist_cuda_graphs or args.cuda_graph_impl != \"none\"`: "
            "--rl-persist-cuda-graphs is set but no CUDA graphs are being built.",
            "add `--cuda-graph-impl local` (or transformer_engine), or drop --rl-persist-cuda-graphs",
            involved=("cuda_graph_impl", *RL)),
    Refusal("megatron/training/arguments.py:validate_args:8", "rl_training_cuda_graphs",
            lambda v: v("perform_rl_step") and v("rl_training_cuda_graphs") and v("cuda_graph_impl") == "none",
            "it asserts `not args.rl_training_cuda_graphs or args.cuda_graph_impl != \"none\"`: "
            "--rl-training-cuda-graphs is set but no CUDA graphs are being built.",
            "add `--cuda-graph-impl local` (or transformer_engine), or drop --rl-training-cuda-graphs",
            involved=("cuda_graph_impl", *RL)),
    Refusal("megatron/training/arguments.py:validate_args:10", "rl_kv_cache_management_mode",
            lambda v: v("perform_rl_step") and v("rl_kv_cache_management_mode") == "offload"
            and not v("rl_persist_cuda_graphs"),
            "it asserts `(not args.rl_kv_cache_management_mode == \"offload\") or (args.rl_persist_cuda_graphs)`: "
            "--rl-kv-cache-management-mode=offload requires --rl-persist-cuda-graphs",
            "add `--rl-persist-cuda-graphs` (with a --cuda-graph-impl), or use another KV cache mode",
            involved=("rl_persist_cuda_graphs", *RL)),
    Refusal("megatron/training/arguments.py:validate_args:11", "rl_kv_cache_management_mode",
            lambda v: v("perform_rl_step") and v("rl_kv_cache_management_mode") == "offload"
            and v("inference_dynamic_batching_unified_memory_level") > 0,
            "it asserts `not (args.inference_dynamic_batching_unified_memory_level > 0 and "
            "args.rl_kv_cache_management_mode == \"offload\")`: --rl-kv-cache-management-mode=offload is "
            "incompatible with UVM",
            "drop `--rl-kv-cache-management-mode offload` (UVM needs no manual offload), or the UVM level",
            involved=("inference_dynamic_batching_unified_memory_level", *RL)),
    Refusal("megatron/training/arguments.py:validate_args:14", "rl_max_inflight_requests",
            lambda v: v("perform_rl_step") and v("rl_max_inflight_requests") is not None
            and v("rl_generation_lag") is not None,
            "it asserts `args.rl_generation_lag is None`: --rl-generation-lag and --rl-max-inflight-requests are "
            "mutually exclusive.",
            "keep one of --rl-max-inflight-requests and --rl-generation-lag", involved=("rl_generation_lag", *RL)),
    Refusal("megatron/training/arguments.py:validate_args:15", "rl_max_inflight_requests",
            lambda v: v("perform_rl_step") and v("rl_max_inflight_requests") is not None
            and v("rl_max_inflight_requests") < 1,
            "it asserts `args.rl_max_inflight_requests >= 1`: --rl-max-inflight-requests must be >= 1.",
            "give --rl-max-inflight-requests 1 or more", involved=RL),
    Refusal("megatron/training/arguments.py:validate_args:16", "rl_max_inflight_requests",
            lambda v: v("perform_rl_step") and v("rl_max_inflight_requests") is not None
            and v("rl_max_inflight_requests") > v("grpo_prompts_per_step") * v("grpo_group_size")
            and not v("rl_partial_rollouts"),
            "it asserts `args.rl_partial_rollouts` when --rl-max-inflight-requests exceeds grpo_prompts_per_step * "
            "grpo_group_size: --rl-max-inflight-requests above one training batch requires --rl-partial-rollouts.",
            "add `--rl-partial-rollouts`, or keep --rl-max-inflight-requests within one training batch "
            "(--grpo-prompts-per-step × --grpo-group-size)",
            involved=("grpo_prompts_per_step", "grpo_group_size", *RL)),
    Refusal("megatron/training/arguments.py:validate_args:17", "rl_generation_lag",
            lambda v: v("perform_rl_step") and v("rl_max_inflight_requests") is None
            and v("rl_generation_lag") is not None and v("rl_generation_lag") < -1,
            "it asserts `args.rl_generation_lag >= -1`: --rl-generation-lag must be >= -1.",
            "give --rl-generation-lag -1 or more", involved=RL),
    Refusal("megatron/training/arguments.py:validate_args:18", "rl_generation_lag",
            lambda v: v("perform_rl_step") and v("rl_max_inflight_requests") is None
            and v("rl_generation_lag") is not None and v("rl_generation_lag") > 0 and not v("rl_partial_rollouts"),
            "it asserts `args.rl_partial_rollouts` when --rl-generation-lag is above 0: --rl-generation-lag requires "
            "--rl-partial-rollouts.",
            "add `--rl-partial-rollouts`, or a --rl-generation-lag of 0 or less", involved=RL),
    Refusal("megatron/training/arguments.py:validate_args:19", "rl_submission_granularity",
            lambda v: v("perform_rl_step") and v("rl_submission_granularity") != "B" and not v("rl_partial_rollouts"),
            "it asserts `args.rl_submission_granularity == \"B\" or args.rl_partial_rollouts`: "
            "--rl-submission-granularity R/G requires --rl-partial-rollouts.",
            "add `--rl-partial-rollouts`, or use `--rl-submission-granularity B`", involved=RL),
    Refusal("megatron/training/arguments.py:validate_args:20", "rl_consumption_granularity",
            lambda v: v("perform_rl_step") and v("rl_consumption_granularity") == "R",
            "it asserts `args.rl_consumption_granularity != \"R\"`: --rl-consumption-granularity R is not currently "
            "supported.",
            "use `--rl-consumption-granularity G` or `B`", involved=RL),
    Refusal("megatron/training/arguments.py:validate_args:21", "rl_consumption_granularity",
            lambda v: v("perform_rl_step") and v("rl_submission_granularity") == "B"
            and v("rl_consumption_granularity") == "G",
            "it asserts `not (args.rl_submission_granularity == \"B\" and args.rl_consumption_granularity == \"G\")`: "
            "--rl-submission-granularity B with --rl-consumption-granularity G is not supported.",
            "use `--rl-consumption-granularity B`, or submit per group (`--rl-submission-granularity G` with "
            "--rl-partial-rollouts)", involved=("rl_submission_granularity", *RL)),
    Refusal("megatron/training/arguments.py:validate_args:22", "rl_use_sequence_packing",
            lambda v: v("perform_rl_step") and v("rl_use_sequence_packing") and v("micro_batch_size") != 1,
            "it asserts `args.micro_batch_size == 1`: micro_batch_size must be 1 when using sequence packing.",
            "use `--micro-batch-size 1` (a longer sequence gives a micro batch more work)",
            involved=("micro_batch_size", *RL)),
    Refusal("megatron/training/arguments.py:validate_args:28", "cuda_graph_impl",
            lambda v: (v("enable_cuda_graph") or v("external_cuda_graph")) and v("cuda_graph_impl") != "none",
            "it asserts `args.cuda_graph_impl == \"none\"` with --enable-cuda-graph or --external-cuda-graph: "
            "Do not use --enable-cuda-graph or --external-cuda-graph with --cuda-graph-impl.",
            "drop the deprecated --enable-cuda-graph / --external-cuda-graph and keep --cuda-graph-impl",
            involved=("enable_cuda_graph", "external_cuda_graph")),
    Refusal("megatron/training/arguments.py:validate_args:29", "external_cuda_graph",
            lambda v: v("enable_cuda_graph") and v("external_cuda_graph"),
            "it asserts `not args.enable_cuda_graph or not args.external_cuda_graph`: --enable-cuda-graph and "
            "--external-cuda-graph cannot be enabled at the same time.",
            "use one `--cuda-graph-impl` (local or transformer_engine) instead of both deprecated flags",
            involved=("enable_cuda_graph",)),
    Refusal("megatron/training/arguments.py:validate_args:30", "cuda_graph_scope_deprecated",
            lambda v: v("cuda_graph_scope_deprecated") is not None and bool(v("cuda_graph_modules")),
            "it asserts `not args.cuda_graph_modules` with --cuda-graph-scope: --cuda-graph-scope and "
            "--cuda-graph-modules cannot be used together.",
            "drop the deprecated --cuda-graph-scope and list the modules in --cuda-graph-modules",
            involved=("cuda_graph_modules",)),
    Refusal("megatron/training/arguments.py:validate_args:31", "inference_cuda_graph_scope",
            lambda v: _inference_scope(v) not in _allowed_inference_scopes(v),
            "it asserts `args.inference_cuda_graph_scope in ALLOWED_INFERENCE_SCOPES[args.cuda_graph_impl]`: "
            "Invalid inference CUDA graph scope for --cuda-graph-impl (layer and block need local; "
            "the other implementations take none)",
            "use `--cuda-graph-impl local` with --inference-cuda-graph-scope layer/block, or drop the scope",
            involved=("cuda_graph_impl",)),
    Refusal("megatron/training/arguments.py:validate_args:32", "data_args_path",
            lambda v: v("data_path") is not None and v("data_args_path") is not None,
            "it asserts `(args.data_path is None) or (args.data_args_path is None)` (no message)",
            "keep one of --data-path and --data-args-path", involved=("data_path",)),
    Refusal("megatron/training/arguments.py:validate_args:33", "per_split_data_args_path",
            lambda v: v("per_split_data_args_path") is not None and any(
                v(d) is not None for d in ("train_data_path", "valid_data_path", "test_data_path")),
            "it asserts that --train/--valid/--test-data-path and --per-split-data-args-path are not both set "
            "(no message)",
            "keep either the per-split data paths or --per-split-data-args-path",
            involved=("train_data_path", "valid_data_path", "test_data_path")),
    Refusal("megatron/training/arguments.py:validate_args:35", "micro_batch_size",
            lambda v: v("micro_batch_size") is not None and v("micro_batch_size") <= 0,
            "it asserts `args.micro_batch_size > 0` (no message)",
            "give --micro-batch-size 1 or more"),
    Refusal("megatron/training/arguments.py:validate_args:37", "global_batch_size",
            lambda v: v("global_batch_size") is not None and v("global_batch_size") <= 0,
            "it asserts `args.global_batch_size > 0` (no message)",
            "give a positive --global-batch-size (a multiple of micro batch × data-parallel size)"),
    # Only where an eval batch flag is written: without them the check is the global batch's own divisibility,
    # which DS201 reports.
    Refusal("megatron/training/arguments.py:validate_args:38", "eval_global_batch_size",
            lambda v: (v.given("eval_global_batch_size") or v.given("eval_micro_batch_size")) and (
                (v("eval_global_batch_size") if v("eval_global_batch_size") is not None else _global_batch(v))
                % ((v("eval_micro_batch_size") if v("eval_micro_batch_size") is not None else v("micro_batch_size"))
                   * _dp(v) * _gtp(v)) != 0),
            "it asserts `args.eval_global_batch_size % (args.eval_micro_batch_size * args.data_parallel_size * "
            "args.gtp_weight_remat_size) == 0`: eval_global_batch_size must be divisible by eval_micro_batch_size * "
            "data_parallel_size * gtp_weight_remat_size",
            "give an --eval-global-batch-size that is a multiple of the eval micro batch × data-parallel size",
            involved=("eval_micro_batch_size",)),
    Refusal("megatron/training/arguments.py:validate_args:39", "global_batch_size",
            lambda v: v("perform_rl_step") and _rl_samples(v) % _global_batch(v) != 0,
            "it asserts `num_generated_samples_per_inference_iteration % args.global_batch_size == 0`: "
            "grpo_group_size * grpo_prompts_per_step * grpo_iterations should be divisible by global_batch_size",
            "give a --global-batch-size that divides --grpo-prompts-per-step × --grpo-group-size × --grpo-iterations",
            involved=("grpo_prompts_per_step", "grpo_group_size", "grpo_iterations", *RL)),
    Refusal("megatron/training/arguments.py:validate_args:40", "exit_interval",
            lambda v: v("perform_rl_step") and v("exit_interval") is not None
            and _rl_samples(v) % _global_batch(v) == 0
            and v("exit_interval") % (_rl_samples(v) // _global_batch(v)) != 0,
            "it asserts `args.exit_interval % num_training_iterations_per_inference_iteration == 0`: exit_interval "
            "should be divisible by number of global batches per inference iteration.",
            "give an --exit-interval that is a multiple of (--grpo-prompts-per-step × --grpo-group-size × "
            "--grpo-iterations) / --global-batch-size", involved=("global_batch_size", *RL)),
    Refusal("megatron/training/arguments.py:validate_args:41", "save_interval",
            lambda v: v("perform_rl_step") and v("save_interval") is not None
            and _rl_samples(v) % _global_batch(v) == 0
            and v("save_interval") % (_rl_samples(v) // _global_batch(v)) != 0,
            "it asserts `args.save_interval % num_training_iterations_per_inference_iteration == 0`: save_interval "
            "should be divisible by number of global batches per inference iteration.",
            "give a --save-interval that is a multiple of (--grpo-prompts-per-step × --grpo-group-size × "
            "--grpo-iterations) / --global-batch-size", involved=("global_batch_size", *RL)),
    Refusal("megatron/training/arguments.py:validate_args:42", "hybrid_override_pattern",
            lambda v: v("hybrid_override_pattern") is not None and v("hybrid_layer_pattern") is not None,
            "it asserts `args.hybrid_layer_pattern is None` with --hybrid-override-pattern: --hybrid-override-pattern "
            "and --hybrid-layer-pattern cannot both be specified.",
            "drop the deprecated --hybrid-override-pattern and keep --hybrid-layer-pattern",
            involved=("hybrid_layer_pattern",)),
    Refusal("megatron/training/arguments.py:validate_args:43", "decoder_first_pipeline_num_layers",
            lambda v: _pipes(v) and v("decoder_first_pipeline_num_layers") is not None,
            "it asserts `args.decoder_first_pipeline_num_layers is None`: If --hybrid-layer-pattern contains pipe "
            "separators, --decoder-first-pipeline-num-layers should not be specified",
            "drop --decoder-first-pipeline-num-layers: the | separators of the pattern place the stages",
            involved=("hybrid_layer_pattern",)),
    Refusal("megatron/training/arguments.py:validate_args:44", "decoder_last_pipeline_num_layers",
            lambda v: _pipes(v) and v("decoder_last_pipeline_num_layers") is not None,
            "it asserts `args.decoder_last_pipeline_num_layers is None`: If --hybrid-layer-pattern contains pipe "
            "separators, --decoder-last-pipeline-num-layers should not be specified",
            "drop --decoder-last-pipeline-num-layers: the | separators of the pattern place the stages",
            involved=("hybrid_layer_pattern",)),
    Refusal("megatron/training/arguments.py:validate_args:45", "num_layers_per_virtual_pipeline_stage",
            lambda v: _hybrid_pattern(v) is not None and v("num_layers_per_virtual_pipeline_stage") is not None,
            "it asserts `args.num_layers_per_virtual_pipeline_stage is None`: --num-layers-per-virtual-pipeline-stage "
            "should not be used with --hybrid-layer-pattern.",
            "drop it and describe the virtual stages as | segments of --hybrid-layer-pattern (a multiple of the "
            "pipeline size)", involved=("hybrid_layer_pattern",)),
    Refusal("megatron/training/arguments.py:validate_args:46", "num_virtual_stages_per_pipeline_rank",
            lambda v: _hybrid_pattern(v) is not None and v("num_virtual_stages_per_pipeline_rank") is not None,
            "it asserts `args.num_virtual_stages_per_pipeline_rank is None`: --num-virtual-stages-per-pipeline-rank "
            "should not be used with --hybrid-layer-pattern.",
            "drop it: the | segments of --hybrid-layer-pattern give the virtual stages",
            involved=("hybrid_layer_pattern",)),
    Refusal("megatron/training/arguments.py:validate_args:47", "pipeline_model_parallel_layout",
            lambda v: _hybrid_pattern(v) is not None and v("pipeline_model_parallel_layout") is not None,
            "it asserts `args.pipeline_model_parallel_layout is None`: --pipeline-model-parallel-layout should not be "
            "used with --hybrid-layer-pattern.",
            "drop --pipeline-model-parallel-layout: | separators in the pattern define the stage layout",
            involved=("hybrid_layer_pattern",)),
    Refusal("megatron/training/arguments.py:validate_args:48", "account_for_embedding_in_pipeline_split",
            lambda v: _hybrid_pattern(v) is not None and v("account_for_embedding_in_pipeline_split"),
            "it asserts `not args.account_for_embedding_in_pipeline_split`: --account-for-embedding-in-pipeline-split "
            "should not be used with --hybrid-layer-pattern.",
            "drop it: | separators in the pattern define the stage layout", involved=("hybrid_layer_pattern",)),
    Refusal("megatron/training/arguments.py:validate_args:49", "account_for_loss_in_pipeline_split",
            lambda v: _hybrid_pattern(v) is not None and v("account_for_loss_in_pipeline_split"),
            "it asserts `not args.account_for_loss_in_pipeline_split`: --account-for-loss-in-pipeline-split should "
            "not be used with --hybrid-layer-pattern.",
            "drop it: | separators in the pattern define the stage layout", involved=("hybrid_layer_pattern",)),
    Refusal("megatron/training/arguments.py:validate_args:50", "hybrid_layer_pattern",
            lambda v: _hybrid_pattern(v) is not None and not (
                _hybrid_pattern(v).split("/")[0].count("|") + 1 == 1 and v("pipeline_model_parallel_size") > 1)
            and (_hybrid_pattern(v).split("/")[0].count("|") + 1) % v("pipeline_model_parallel_size") != 0,
            "it asserts `hybrid_pipeline_segments % args.transformer_pipeline_model_parallel_size == 0`: The number "
            "of hybrid pipeline segments described by --hybrid-layer-pattern must be evenly divisible by "
            "--pipeline-model-parallel-size.",
            "split the pattern with | into a multiple of --pipeline-model-parallel-size segments (or none)",
            involved=("pipeline_model_parallel_size",)),
    Refusal("megatron/training/arguments.py:validate_args:51", "mtp_num_layers",
            lambda v: bool(_mtp_layers(v)) and v("position_embedding_type") not in ("rope", "none"),
            "it asserts `args.position_embedding_type == \"rope\" or args.position_embedding_type == \"none\"` with "
            "MTP: Multi-Token Prediction (MTP) is not supported with this position embedding type.",
            "use `--position-embedding-type rope` (or none) with --mtp-num-layers",
            involved=("position_embedding_type",)),
    Refusal("megatron/training/arguments.py:validate_args:81", "use_megatron_fsdp",
            lambda v: v("use_megatron_fsdp") and (v("moe_single_grouped_weight") or v("moe_single_grouped_bias")),
            "it raises ValueError: Megatron-FSDP does not currently support moe_single_grouped_weight or "
            "moe_single_grouped_bias.",
            "drop --moe-single-grouped-weight / --moe-single-grouped-bias, or use the distributed optimizer "
            "instead of --use-megatron-fsdp", involved=("moe_single_grouped_weight", "moe_single_grouped_bias")),
    Refusal("megatron/training/arguments.py:validate_args:83", "check_weight_hash_across_dp_replicas_interval",
            lambda v: v("use_megatron_fsdp") and v("data_parallel_sharding_strategy") == "optim_grads_params"
            and v("check_weight_hash_across_dp_replicas_interval") is not None,
            "it asserts `args.check_weight_hash_across_dp_replicas_interval is None` with Megatron-FSDP's "
            "optim_grads_params sharding (the default): check_weight_hash_across_dp_replicas_interval is not "
            "supported with optim_grads_params",
            "drop --check-weight-hash-across-dp-replicas-interval, or use another --data-parallel-sharding-strategy",
            involved=("use_megatron_fsdp", "data_parallel_sharding_strategy")),
    Refusal("megatron/training/arguments.py:validate_args:86", "init_model_with_meta_device",
            lambda v: v("use_megatron_fsdp") and v("init_model_with_meta_device")
            and v("data_parallel_sharding_strategy") == "no_shard",
            "it raises ValueError: Meta device initialization (init_model_with_meta_device=True) is not supported or "
            "necessary for the 'no_shard' / 0 sharding strategy.",
            "drop --init-model-with-meta-device, or use a sharding strategy other than no_shard",
            involved=("data_parallel_sharding_strategy", "use_megatron_fsdp")),
    Refusal("megatron/training/arguments.py:validate_args:87", "fsdp_manual_registration",
            lambda v: v("fsdp_manual_registration") and not v("use_megatron_fsdp"),
            "it asserts `args.use_megatron_fsdp`: FSDP manual registration is only supported with Megatron FSDP.",
            "add `--use-megatron-fsdp`, or drop --fsdp-manual-registration"),
    Refusal("megatron/training/arguments.py:validate_args:88", "fsdp_manual_registration",
            lambda v: v("fsdp_manual_registration") and v("use_megatron_fsdp") and not v("nccl_ub"),
            "it asserts `args.nccl_ub`: FSDP manual registration is only supported with --nccl-ub argument.",
            "add `--use-nccl-ub` (with --use-megatron-fsdp it turns manual registration on by itself)",
            involved=("nccl_ub",)),
    Refusal("megatron/training/arguments.py:validate_args:91", "main_grads_dtype",
            lambda v: v("bf16") and not v("fp16") and v("accumulate_allreduce_grads_in_fp32")
            and v("main_grads_dtype") != "fp32",
            "it asserts `args.main_grads_dtype == torch.float32` with --bf16: --main-grads-dtype can only be fp32 "
            "when --accumulate-allreduce-grads-in-fp32 is set",
            "drop `--main-grads-dtype bf16`, or --accumulate-allreduce-grads-in-fp32",
            involved=("accumulate_allreduce_grads_in_fp32",)),
    Refusal("megatron/training/arguments.py:validate_args:92", "cuda_graph_impl",
            lambda v: _cuda_graph_impl(v) == "full_iteration" and _check_for_nan(v),
            "it asserts `not args.check_for_nan_in_loss_and_grad`: --no-check-for-nan-in-loss-and-grad should be "
            "set with --cuda-graph-impl=full_iteration for training.",
            "add `--no-check-for-nan-in-loss-and-grad`"),
    Refusal("megatron/training/arguments.py:validate_args:93", "transformer_impl",
            lambda v: _inference_scope(v) == "block" and v("fp8") is not None
            and v("transformer_impl") != "inference_optimized",
            "it asserts `args.transformer_impl == \"inference_optimized\"`: fp8 with --inference-cuda-graph-scope="
            "block is only supported with --transformer-impl=inference_optimized",
            "add `--transformer-impl inference_optimized`, or drop --fp8-format or the block scope",
            involved=("inference_cuda_graph_scope", "fp8")),
    Refusal("megatron/training/arguments.py:validate_args:94", "fp8_recipe",
            lambda v: _inference_scope(v) == "block" and v("fp8") is not None and v("fp8_recipe") != "mxfp8",
            "it asserts `args.fp8_recipe == \"mxfp8\"`: Only --fp8-recipe=mxfp8 is supported with "
            "--inference-cuda-graph-scope=block",
            "use `--fp8-recipe mxfp8`, or drop --fp8-format or the block scope",
            involved=("inference_cuda_graph_scope", "fp8")),
    Refusal("megatron/training/arguments.py:validate_args:95", "inference_dynamic_batching_num_cuda_graphs",
            lambda v: _cuda_graph_impl(v) == "local" and not (
                v("inference_dynamic_batching_num_cuda_graphs") > 0
                or v("inference_dynamic_batching_num_cuda_graphs") == -1),
            "it asserts `args.inference_dynamic_batching_num_cuda_graphs > 0 or "
            "args.inference_dynamic_batching_num_cuda_graphs == -1`: inference_dynamic_batching_num_cuda_graphs "
            "should be a positive integer or -1",
            "give a positive number, or -1 (chosen from max_requests)", involved=("cuda_graph_impl",)),
    Refusal("megatron/training/arguments.py:validate_args:96", "num_dataset_builder_threads",
            lambda v: v("num_dataset_builder_threads") <= 0,
            "it asserts `args.num_dataset_builder_threads > 0` (no message)",
            "give --num-dataset-builder-threads 1 or more"),
]
