"""MG301 rows: `validate_args` (megatron/training/arguments.py), its sites 101-201, and the rest of the argument path's smaller files."""

from shardshift.rules.megatron.refusals.base import Refusal

A = "megatron/training/arguments.py:validate_args:"
CG = "megatron/core/transformer/cuda_graph_config.py:"
PL = "megatron/core/transformer/pipeline_parallel_layer_layout.py:PipelineParallelLayerLayout."
HY = "megatron/core/models/hybrid/hybrid_layer_allocation.py:"
AU = "megatron/training/argument_utils.py:core_transformer_config_from_args:"


def _name(value):
    """An enum-typed flag's value as validate_args compares it (a string, or an enum member)."""
    return None if value is None else str(value).rsplit(".", 1)[-1]


def _hybrid_pattern(v):
    """--hybrid-layer-pattern as validate_args sees it (the deprecated --hybrid-override-pattern moves there)."""
    override, pattern = v("hybrid_override_pattern"), v("hybrid_layer_pattern")
    if override is not None and pattern is not None:
        raise ValueError("refused earlier")  # validate_args asserts that not both are given
    return override if override is not None else pattern


def _mla(v):
    """--multi-latent-attention after validate_args (an MLA or DSA symbol in the hybrid pattern turns it on)."""
    pattern = _hybrid_pattern(v)
    return bool(v("multi_latent_attention")) or bool(pattern and ("+" in pattern or "D" in pattern))


def _gtp(v):
    """Whether GTP is on: --(expert-)tensor-parallel-num-weight-shards over the (expert) TP size above 1
    (resolve_tensor_parallel_weight_shards; a value it refuses raises ValueError: not this row's)."""
    tp = v("tensor_model_parallel_size")
    etp = v("expert_tensor_parallel_size")
    etp = tp if etp is None else etp
    for shards, size in ((v("tensor_parallel_num_weight_shards"), tp),
                         (v("expert_tensor_parallel_num_weight_shards"), etp)):
        if shards is not None and (shards < size or shards % size):
            raise ValueError("refused earlier")
        if shards is not None and shards // size > 1:
            return True
    return False


_DEPRECATED_MODULES = ("full_iteration", "full_iteration_inference")


def _graph_impl(v):
    """--cuda-graph-impl after validate_args moves the deprecated --enable-cuda-graph / --external-cuda-graph
    there (their conflicts stop it earlier: ValueError, not this row's)."""
    impl, enable, external = v("cuda_graph_impl"), bool(v("enable_cuda_graph")), bool(v("external_cuda_graph"))
    if enable or external:
        if impl != "none" or (enable and external):
            raise ValueError("refused earlier")
        return "local" if enable else "transformer_engine"
    return impl


def _graph_modules(v):
    """--cuda-graph-modules as written (the hidden --cuda-graph-scope moves there; both stop validate_args earlier)."""
    modules = [_name(m) for m in v("cuda_graph_modules") or []]
    scope = v("cuda_graph_scope_deprecated")
    if scope is not None:
        if modules:
            raise ValueError("refused earlier")
        return [_name(m) for m in scope]
    return modules


def _deprecated_modules(v):
    """The deprecated words of --cuda-graph-modules that validate_deprecated_cuda_graph_modules_migration_inputs
    reads (None when `full` stops normalize_cuda_graph_modules first)."""
    modules = _graph_modules(v)
    if "full" in modules:
        return None
    return sorted({m for m in modules if m in _DEPRECATED_MODULES})


def _graph_migration_site(v):
    """Which assert of validate_deprecated_cuda_graph_modules_migration_inputs stops validate_args (1-5), or 0."""
    deprecated = _deprecated_modules(v)
    if not deprecated:
        return 0
    if len(deprecated) > 1:
        return 1
    impl, scope = _graph_impl(v), _name(v("inference_cuda_graph_scope"))
    if deprecated == ["full_iteration"]:
        if impl not in ("none", "local", "full_iteration"):
            return 2
        return 3 if scope not in (None, "none") else 0
    if impl not in ("none", "local"):
        return 4
    return 5 if scope not in (None, "block") else 0


def _wgrad_in_graph(v):
    """validate_args' `wgrad_in_graph_scope` for --delay-wgrad-compute --overlap-grad-reduce (the modules
    normalized: no deprecated word, no `full`)."""
    modules = _graph_modules(v)
    if "full" in modules or any(m in _DEPRECATED_MODULES for m in modules):
        raise ValueError("not decided here")
    return "attn" in modules or ("moe_router" in modules and v("moe_shared_expert_intermediate_size") is not None
                                 and not v("moe_shared_expert_overlap"))


def _delayed_wgrad_in_graph(v):
    return (bool(v("delay_wgrad_compute")) and v("transformer_impl") == "transformer_engine"
            and bool(v("overlap_grad_reduce")) and _wgrad_in_graph(v))


def _layout_stages(v):
    """--pipeline-model-parallel-layout as PipelineParallelLayerLayout.parse_str_to_list reads it: a list of
    stages, each a list of layer characters (None when not given)."""
    import re

    text = v("pipeline_model_parallel_layout")
    if text is None:
        return None
    text = str(text).replace(",", "")
    for pattern in (r"\(([^)]+)\)\*(\d+)", r"(.)\*(\d+)"):
        text = re.sub(pattern, lambda m: m.group(1) * int(m.group(2)), text)
    return [list(stage) for stage in text.split("|")]


def _layout_site(v):
    """Which assert of PipelineParallelLayerLayout.validate_layer_layout stops the model config (2-10), or 0;
    only for a layout validate_args accepts (known characters, stages a multiple of the pipeline size)."""
    stages = _layout_stages(v)
    if stages is None:
        return 0
    pp = v("pipeline_model_parallel_size")
    if any(c not in "ELtm" for stage in stages for c in stage) or len(stages) % pp:
        return 0
    vpp = len(stages) // pp
    grid = [[stages[r * pp + rank] for r in range(vpp)] for rank in range(pp)]  # grid[pp_rank][vpp_rank]
    flat = [c for stage in stages for c in stage]  # layer order: every vpp stage's pp ranks in turn
    if not flat:
        return 0
    mtp = v("mtp_num_layers")
    checks = [
        (2, flat[0] == "E"), (3, flat[-1] == "L"), (4, flat.count("E") == 1), (5, flat.count("L") == 1),
        (6, flat.count("t") == (v("num_layers") if v("num_layers") is not None else v("encoder_num_layers"))),
        (7, flat.count("m") == mtp or (mtp is None and flat.count("m") == 0)),
        (8, "m" not in flat or "t" not in flat[flat.index("m"):]),
        (9, not any("m" in grid[rank][r] for rank in range(pp) for r in range(vpp - 1))),
        (10, all(grid[rank][-1].count("m") == mtp for rank in range(pp) if "m" in grid[rank][-1])),
    ]
    return next((site for site, ok in checks if not ok), 0)


_HYBRID_SYMBOLS = set("MG*D+-E")


def _hybrid_site(v):
    """Where the hybrid pattern stops validate_args: "_validate_pattern:1" / ":2" (a symbol it does not know,
    attention with MLA/DSA), "parse_hybrid_pattern:1" (MTP patterns that differ), or None."""
    pattern = _hybrid_pattern(v)
    if pattern is None:
        return None

    def bad(part, pipe):
        if any(c not in _HYBRID_SYMBOLS and not (pipe and c == "|") for c in part):
            return "_validate_pattern:1"
        if "*" in part and ("D" in part or "+" in part):
            return "_validate_pattern:2"
        return None

    parts = pattern.split("/")
    found = bad(parts[0], True)
    if found or len(parts) == 1 or all(p == "" for p in parts[1:]):
        return found
    if any(p != parts[1] for p in parts[2:]):
        return "parse_hybrid_pattern:1"
    return bad(parts[1], False)


def _hcp(v):
    return bool(v("hybrid_context_parallel"))


ROWS = [
    Refusal(A + "101", "train_iters",
            lambda v: bool(v("train_samples")) and not v("skip_train") and v("train_iters") is not None
            and not v("train_iters"),
            "it asserts `args.train_iters is None` for a sample-based run: expected sample-based training",
            "drop --train-iters (a sample-based run counts --train-samples)", involved=("train_samples",)),
    Refusal(A + "105", "encoder_num_layers",
            lambda v: v("encoder_num_layers") is not None and (
                v("num_layers") is not None or _hybrid_pattern(v) is not None),
            "it asserts `args.encoder_num_layers is None`: cannot have both num-layers and encoder-num-layers "
            "specified", "drop --encoder-num-layers", involved=("num_layers",)),
    Refusal(A + "109", "encoder_seq_length",
            lambda v: v("encoder_seq_length") is not None and v("seq_length") is not None,
            "it asserts `args.encoder_seq_length is None` when --seq-length is given",
            "drop --encoder-seq-length", involved=("seq_length",)),
    Refusal(A + "118", "save_params_interval",
            lambda v: v("save") is not None and v("save_params_interval") is not None
            and bool(v("overlap_param_gather")),
            "it asserts `not args.overlap_param_gather` when --save-params-interval is given",
            "drop --save-params-interval, or --overlap-param-gather", involved=("overlap_param_gather",)),
    Refusal(A + "119", "log_memory_interval",
            lambda v: v("log_memory_interval") is not None and v("log_memory_interval") % v("log_interval") != 0,
            "it asserts `args.log_memory_interval % args.log_interval == 0`",
            "use a multiple of --log-interval", involved=("log_interval",)),
    Refusal(A + "134", "hybrid_context_parallel",
            lambda v: _hcp(v) and v("pipeline_model_parallel_size") > 1,
            "it asserts `not args.pipeline_model_parallel_size > 1`: Hybrid context parallelism not supported "
            "with pipeline parallelism", "use pipeline parallel size 1, or drop --hybrid-context-parallel",
            involved=("pipeline_model_parallel_size",)),
    Refusal(A + "135", "hybrid_context_parallel",
            lambda v: _hcp(v) and bool(v("enable_cuda_graph")) and _graph_impl(v) == "local",
            "it asserts `not args.enable_cuda_graph`, an AttributeError once validate_args has moved the "
            "deprecated --enable-cuda-graph to --cuda-graph-impl local: Hybrid context parallelism not supported "
            "with CUDA Graph", "drop --enable-cuda-graph", involved=("enable_cuda_graph",)),
    Refusal(A + "136", "hybrid_context_parallel",
            lambda v: _hcp(v) and bool(v("use_megatron_fsdp")),
            "it asserts `not args.use_megatron_fsdp`: Hybrid context parallelism not supported with Megatron FSDP",
            "drop --use-megatron-fsdp, or --hybrid-context-parallel", involved=("use_megatron_fsdp",)),
    Refusal(A + "137", "hybrid_context_parallel",
            lambda v: _hcp(v) and v("dataloader_type") not in (None, "single"),
            "it asserts `args.dataloader_type == 'single'`: Hybrid context parallelism only supported with "
            "single dataloader type", "use --dataloader-type single", involved=("dataloader_type",)),
    Refusal(A + "138", "hybrid_context_parallel",
            lambda v: _hcp(v) and not v("calculate_per_token_loss"),
            "it asserts `args.calculate_per_token_loss`: Hybrid context parallelism must be used with "
            "--calculate-per-token-loss", "add --calculate-per-token-loss"),
    Refusal(A + "140", "fp4",
            lambda v: _gtp(v) and v("fp4") is not None and not v("fp4_param_gather"),
            "it raises ValueError: GTP (--tensor-parallel-num-weight-shards / "
            "--expert-tensor-parallel-num-weight-shards > 1) with --fp4-format requires --fp4-param-gather",
            "add --fp4-param-gather", involved=("tensor_parallel_num_weight_shards",)),
    Refusal(A + "142", "ddp_average_in_collective",
            lambda v: _gtp(v) and bool(v("ddp_average_in_collective")),
            "it asserts `not args.ddp_average_in_collective`: GTP requires --ddp-average-in-collective off",
            "drop --ddp-average-in-collective", involved=("tensor_parallel_num_weight_shards",)),
    Refusal(A + "143", "ckpt_format",
            lambda v: _gtp(v) and v("ckpt_format") not in ("torch", "torch_dist"),
            "it asserts `args.ckpt_format in ('torch', 'torch_dist')`: GTP supports only --ckpt-format 'torch' "
            "(legacy) or 'torch_dist'", "use --ckpt-format torch_dist",
            involved=("tensor_parallel_num_weight_shards",)),
    Refusal(A + "144", "distrib_optim_fully_reshardable_mem_efficient",
            lambda v: _gtp(v) and bool(v("dist_ckpt_optim_fully_reshardable"))
            and bool(v("distrib_optim_fully_reshardable_mem_efficient")),
            "it asserts that not both: GTP does not support the distributed-optimizer fully-reshardable + "
            "mem-efficient checkpoint mode", "drop --distrib-optim-fully-reshardable-mem-efficient",
            involved=("dist_ckpt_optim_fully_reshardable", "tensor_parallel_num_weight_shards")),
    Refusal(A + "145", "fp8_recipe",
            lambda v: _gtp(v) and _name(v("fp8_recipe")) == "mxfp8" and not v("fp8_param_gather"),
            "it asserts `args.fp8_param_gather`: GTP + mxfp8 requires --fp8-param-gather",
            "add --fp8-param-gather", involved=("tensor_parallel_num_weight_shards",)),
    Refusal(A + "146", "fp8_param_gather",
            lambda v: _gtp(v) and _name(v("fp8_recipe")) == "mxfp8" and bool(v("fp8_param_gather"))
            and not v("reuse_grad_buf_for_mxfp8_param_ag"),
            "it asserts `args.reuse_grad_buf_for_mxfp8_param_ag`: GTP + mxfp8 + --fp8-param-gather requires "
            "--reuse-grad-buf-for-mxfp8-param-ag", "add --reuse-grad-buf-for-mxfp8-param-ag",
            involved=("fp8_recipe", "tensor_parallel_num_weight_shards")),
    Refusal(A + "147", "disable_symmetric_registration",
            lambda v: _gtp(v) and (bool(v("gtp_remat_nccl_ub")) or bool(v("gtp_expert_remat_nccl_ub")))
            and bool(v("disable_symmetric_registration")),
            "it asserts `not args.disable_symmetric_registration`: --gtp-remat-nccl-ub/--gtp-expert-remat-nccl-ub "
            "require symmetric window registration", "drop --disable-symmetric-registration",
            involved=("gtp_remat_nccl_ub", "gtp_expert_remat_nccl_ub")),
    Refusal(A + "149", "qk_clip_alpha",
            lambda v: bool(v("qk_clip")) and not 0.0 < v("qk_clip_alpha") < 1.0,
            "it asserts `0.0 < args.qk_clip_alpha < 1.0`: --qk-clip-alpha must be between 0.0 and 1.0 when using "
            "--qk-clip", "use a --qk-clip-alpha between 0 and 1", involved=("qk_clip",)),
    Refusal(A + "150", "qk_clip_threshold",
            lambda v: bool(v("qk_clip")) and v("qk_clip_threshold") <= 0,
            "it asserts `args.qk_clip_threshold > 0`: --qk-clip-threshold must be greater than 0 when using "
            "--qk-clip", "use a positive --qk-clip-threshold", involved=("qk_clip",)),
    Refusal(A + "153", "position_embedding_type",
            lambda v: not v("use_rotary_position_embeddings") and v("position_embedding_type") == "relative"
            and v("transformer_impl") != "transformer_engine",
            "it asserts `args.transformer_impl == 'transformer_engine'`: Local transformer implementation currently "
            "does not support attention bias-based position embeddings",
            "use --transformer-impl transformer_engine, or another --position-embedding-type",
            involved=("transformer_impl",)),
    Refusal(A + "154", "position_embedding_type",
            lambda v: not v("use_rotary_position_embeddings") and v("position_embedding_type") == "mrope"
            and v("mrope_section") is None,
            "it asserts `args.mrope_section is not None`: --mrope-section should be set when using "
            "--position-embedding-type mrope", "add --mrope-section"),
    Refusal(A + "161", "data_path",
            lambda v: bool(v("mock_data")) + bool(v("data_path"))
            + any([v("train_data_path"), v("valid_data_path"), v("test_data_path")]) > 1,
            "it asserts at most one of --mock-data, --data-path and --train/valid/test-data-path: A single data "
            "source must be provided in training mode, else None", "keep one data source",
            involved=("mock_data", "train_data_path", "valid_data_path", "test_data_path")),
    Refusal(A + "162", "fim_data",
            lambda v: bool(v("fim_data")) and bool(v("mock_data")),
            "it asserts `not args.mock_data`: Mock dataset is not supported with FIM dataset",
            "use --data-path, or drop --fim-data", involved=("mock_data",)),
    Refusal(A + "163", "fim_rate",
            lambda v: bool(v("fim_data")) and not v("fim_rate"),
            "it asserts `args.fim_rate`: --fim-rate should be specified", "use a nonzero --fim-rate",
            involved=("fim_data",)),
    Refusal(A + "164", "fim_spm_rate",
            lambda v: bool(v("fim_data")) and not v("fim_spm_rate"),
            "it asserts `args.fim_spm_rate`: --fim-spm-rate should be specified", "use a nonzero --fim-spm-rate",
            involved=("fim_data",)),
    Refusal(A + "166", "cross_entropy_fusion_impl",
            lambda v: bool(v("cross_entropy_loss_fusion")) and v("cross_entropy_fusion_impl") == "te",
            "it asserts not both: Transformer Engine cross entropy loss fusion is disabled due to stability issues",
            "use --cross-entropy-fusion-impl native, or drop --cross-entropy-loss-fusion",
            involved=("cross_entropy_loss_fusion",)),
    Refusal(A + "171", "distrib_optim_fully_reshardable_mem_efficient",
            lambda v: not v("use_gloo_process_groups") and v("optimizer") in ("sgd", "adam")
            and bool(v("use_distributed_optimizer")) and v("ckpt_format") != "torch"
            and bool(v("dist_ckpt_optim_fully_reshardable"))
            and bool(v("distrib_optim_fully_reshardable_mem_efficient")),
            "it asserts `not args.distrib_optim_fully_reshardable_mem_efficient` without Gloo process groups: "
            "--distrib-optim-fully-reshardable-mem-efficient requires -enable-gloo-process-groups",
            "drop --distrib-optim-fully-reshardable-mem-efficient, or --disable-gloo-process-groups",
            involved=("use_gloo_process_groups",)),
    Refusal(A + "172", "moe_token_dispatcher_type",
            lambda v: bool(v("fake_process_group")) and v("moe_token_dispatcher_type") == "flex",
            "it asserts `args.moe_token_dispatcher_type != 'flex'`: Fake process group is not supported with flex "
            "token dispatcher", "use another --moe-token-dispatcher-type, or drop --fake-process-group",
            involved=("fake_process_group",)),
    Refusal(A + "173", "ckpt_pg_tensors_cache_path",
            lambda v: v("ckpt_pg_tensors_cache_path") is not None
            and v("ckpt_fully_parallel_save_process_group") != v("ckpt_fully_parallel_load_process_group"),
            "it asserts the save and load process groups are equal: --ckpt-pg-tensors-cache-path requires "
            "--ckpt-fully-parallel-save-process-group and --ckpt-fully-parallel-load-process-group to be identical",
            "give both process-group flags the same value",
            involved=("ckpt_fully_parallel_save_process_group", "ckpt_fully_parallel_load_process_group")),
    Refusal(A + "174", "load_main_params_from_ckpt",
            lambda v: bool(v("load_main_params_from_ckpt")) and not v("no_load_optim"),
            "it asserts `args.no_load_optim`: --load-main-params-from-ckpt must be used with --no-load-optim",
            "add --no-load-optim"),
    Refusal(A + "175", "logits_save_dir",
            lambda v: v("logits_save_dir") is not None and v("logits_save_top_k") is None,
            "it asserts `args.logits_save_top_k is not None`: --logits-save-top-k is required when "
            "--logits-save-dir is set", "add --logits-save-top-k"),
    Refusal(A + "176", "logits_save_dir",
            lambda v: v("logits_save_dir") is not None and v("logits_save_top_k") is not None and (
                not v("async_save") or (v("ckpt_format") != "torch" and not v("use_persistent_ckpt_worker"))),
            "it asserts `args.async_save` (which validate_args turns off for a distributed checkpoint without "
            "--use-persistent-ckpt-worker): --logits-save-dir requires --async-save (and "
            "--use-persistent-ckpt-worker)", "add --async-save --use-persistent-ckpt-worker",
            involved=("async_save",)),
    Refusal(A + "177", "override_ckpt_iteration",
            lambda v: v("override_ckpt_iteration") is not None and bool(v("finetune")),
            "it asserts `not args.finetune`: Cannot override checkpoint iteration together with finetune flag",
            "drop --override-ckpt-iteration, or --finetune", involved=("finetune",)),
    Refusal(A + "178", "inference_batch_times_seqlen_threshold",
            lambda v: v("inference_batch_times_seqlen_threshold") > -1 and v("pipeline_model_parallel_size") <= 1,
            "it asserts `args.pipeline_model_parallel_size > 1`: --inference-batch-times-seqlen-threshold requires "
            "setting --pipeline-model-parallel-size > 1", "drop --inference-batch-times-seqlen-threshold",
            involved=("pipeline_model_parallel_size",)),
    Refusal(A + "179", "inference_batch_times_seqlen_threshold",
            lambda v: v("inference_batch_times_seqlen_threshold") > -1 and _graph_impl(v) != "none",
            "it asserts `args.cuda_graph_impl == 'none'`: Pipeline-parallel microbatched inference is incompatible "
            "with CUDA graphs", "drop --inference-batch-times-seqlen-threshold, or --cuda-graph-impl",
            involved=("cuda_graph_impl",)),
    Refusal(A + "180", "moe_use_upcycling",
            lambda v: bool(v("moe_use_upcycling")) and v("save") is None,
            "it asserts `args.save is not None`: When using upcycling, the --save option must be specified",
            "add --save"),
    Refusal(A + "181", "rl_offload_optimizer_during_inference",
            lambda v: bool(v("skip_train")) and bool(v("perform_rl_step"))
            and (bool(v("no_load_optim")) or bool(v("moe_use_upcycling")))
            and bool(v("rl_offload_optimizer_during_inference")),
            "it asserts False: --no-load-optim with --skip-train --perform-rl-step skips the optimizer; "
            "--rl-offload-optimizer-during-inference is incompatible",
            "drop --rl-offload-optimizer-during-inference, or --no-load-optim",
            involved=("no_load_optim", "skip_train", "perform_rl_step")),
    Refusal(A + "185", "replication",
            lambda v: bool(v("replication")) and v("replication_jump") is None,
            "it asserts `args.replication_jump is not None`: --replication requires the value of --replication-jump",
            "add --replication-jump"),
    Refusal(A + "186", "replication",
            lambda v: bool(v("replication")) and v("replication_jump") is not None
            and v("non_persistent_ckpt_type") != "local",
            "it asserts `args.non_persistent_ckpt_type == 'local'`: --replication requires "
            "args.non_persistent_ckpt_type == 'local'", "add --non-persistent-ckpt-type local",
            involved=("non_persistent_ckpt_type",)),
    Refusal(A + "187", "delay_wgrad_compute",
            lambda v: bool(v("delay_wgrad_compute")) and v("transformer_impl") != "transformer_engine",
            "it asserts `args.transformer_impl == 'transformer_engine'`: Delaying wgrad compute is only supported "
            "with transformer_engine implementation", "use --transformer-impl transformer_engine",
            involved=("transformer_impl",)),
    Refusal(A + "190", "gradient_accumulation_fusion",
            lambda v: _delayed_wgrad_in_graph(v) and not v("gradient_accumulation_fusion"),
            "it asserts `args.gradient_accumulation_fusion`: CUDA graph with delay_wgrad_compute requires "
            "gradient_accumulation_fusion to be enabled", "drop --no-gradient-accumulation-fusion",
            involved=("delay_wgrad_compute", "cuda_graph_modules")),
    Refusal(A + "191", "cuda_graph_modules",
            lambda v: _delayed_wgrad_in_graph(v) and bool(v("gradient_accumulation_fusion"))
            and "attn" in _graph_modules(v) and (bool(v("add_bias_linear")) or bool(v("add_qkv_bias"))),
            "it asserts `not args.add_bias_linear and not args.add_qkv_bias`: CUDA graph with delay_wgrad_compute "
            "doesn't support attn bias for now", "add --disable-bias-linear (and no --add-qkv-bias), or take attn "
            "out of --cuda-graph-modules", involved=("delay_wgrad_compute", "add_bias_linear", "add_qkv_bias")),
    Refusal(A + "193", "fine_grained_activation_offloading",
            lambda v: bool(v("fine_grained_activation_offloading")) and v("transformer_impl") != "transformer_engine",
            "it asserts `args.transformer_impl == 'transformer_engine'`: Fine-grained activation offloading is only "
            "supported with transformer_engine implementation", "use --transformer-impl transformer_engine",
            involved=("transformer_impl",)),
    Refusal(A + "197", "cuda_graph_modules",
            lambda v: _graph_impl(v) == "full_iteration" and bool(_graph_modules(v))
            and all(m not in ("full", *_DEPRECATED_MODULES) for m in _graph_modules(v)),
            "it asserts `not (args.cuda_graph_impl == 'full_iteration' and args.cuda_graph_modules)`: "
            "--cuda-graph-modules must be empty when --cuda-graph-impl=full_iteration",
            "drop --cuda-graph-modules (full_iteration captures the whole iteration)", involved=("cuda_graph_impl",)),
    Refusal(A + "198", "group_query_attention",
            lambda v: _mla(v) and bool(v("group_query_attention")),
            "it asserts `not args.group_query_attention`: Group query attention is mutually exclusive with multi "
            "latent attention", "drop --group-query-attention", involved=("multi_latent_attention",)),
    Refusal(A + "199", "mla_down_proj_fusion",
            lambda v: bool(v("mla_down_proj_fusion")) and not _mla(v),
            "it asserts `args.multi_latent_attention`: --mla-down-proj-fusion requires --multi-latent-attention",
            "add --multi-latent-attention, or drop --mla-down-proj-fusion"),
    Refusal(A + "200", "moe_latent_size",
            lambda v: v("moe_latent_size") is not None and v("moe_latent_size") <= 0,
            "it asserts `args.moe_latent_size > 0`: MoE latent projection dimension has to be greater than zero",
            "use a positive --moe-latent-size"),
    Refusal(A + "201", "moe_latent_size",
            lambda v: v("moe_latent_size") is not None and v("moe_latent_size") > 0 and not v("num_experts"),
            "it asserts `args.num_experts is not None`: MoE latent projections are applicable only for MoE models",
            "add --num-experts, or drop --moe-latent-size", involved=("num_experts",)),
    Refusal(CG + "normalize_cuda_graph_modules:1", "cuda_graph_modules",
            lambda v: "full" in _graph_modules(v) and _graph_modules(v) != ["full"],
            "it asserts `raw_scopes == ['full']`: full scope cannot be used with other scopes",
            "drop `full` (an empty --cuda-graph-modules captures the whole layer)"),
    *[Refusal(CG + f"validate_deprecated_cuda_graph_modules_migration_inputs:{n}", "cuda_graph_modules",
              lambda v, n=n: _graph_migration_site(v) == n, says, fix, involved=involved)
      for n, says, fix, involved in [
          (1, "it raises AssertionError: cuda_graph_modules cannot contain multiple deprecated values at the same "
              "time", "keep one of full_iteration and full_iteration_inference (or, better, neither)", ()),
          (2, "it asserts `cuda_graph_impl in ('none', 'local', 'full_iteration')`: cuda_graph_modules="
              "'full_iteration' cannot be combined with this cuda_graph_impl",
           "use --cuda-graph-impl full_iteration instead of the deprecated module", ("cuda_graph_impl",)),
          (3, "it asserts `inference_cuda_graph_scope in (None, InferenceCudaGraphScope.none)`: cuda_graph_modules="
              "'full_iteration' cannot be combined with this inference_cuda_graph_scope",
           "use --cuda-graph-impl full_iteration instead of the deprecated module, without "
           "--inference-cuda-graph-scope", ("inference_cuda_graph_scope",)),
          (4, "it asserts `cuda_graph_impl in ('none', 'local')`: cuda_graph_modules='full_iteration_inference' "
              "cannot be combined with this cuda_graph_impl",
           "use --cuda-graph-impl local --inference-cuda-graph-scope block instead of the deprecated module",
           ("cuda_graph_impl",)),
          (5, "it asserts `inference_cuda_graph_scope in (None, InferenceCudaGraphScope.block)`: cuda_graph_modules="
              "'full_iteration_inference' cannot be combined with this inference_cuda_graph_scope",
           "use --cuda-graph-impl local --inference-cuda-graph-scope block instead of the deprecated module",
           ("inference_cuda_graph_scope",)),
      ]],
    *[Refusal(PL + f"validate_layer_layout:{n}", "pipeline_model_parallel_layout",
              lambda v, n=n: _layout_site(v) == n, says, fix, involved=involved, stage="config")
      for n, says, fix, involved in [
          (2, "it asserts `self.flatten_layout[0] == LayerType.embedding`: The first layer must be embedding",
           "start the layout (its first stage) with E", ()),
          (3, "it asserts `self.flatten_layout[-1] == LayerType.loss`: The last layer must be loss",
           "end the layout (its last stage) with L", ()),
          (4, "it asserts the layout has one embedding: Embedding must be specified exactly once",
           "write E once, at the start", ()),
          (5, "it asserts the layout has one loss: Loss must be specified exactly once", "write L once, at the end", ()),
          (6, "it asserts the layout's decoder layers (t) number --num-layers: Number of decoder layers must match "
              "num_layers", "write as many t as --num-layers", ("num_layers",)),
          (7, "it asserts the layout's MTP layers (m) number --mtp-num-layers: Number of mtp layers in layout must "
              "match mtp_num_layers", "write as many m as --mtp-num-layers", ("mtp_num_layers",)),
          (8, "it asserts no decoder layer follows an MTP layer: decoder layers must be placed before MTP layers",
           "move the m layers after every t", ()),
          (9, "it asserts the MTP layers are in their pipeline rank's last virtual stage: Currently we restrict "
              "that the MTP should be always in the last virtual pipeline stage of that rank",
           "move the m layers to a last virtual stage", ()),
          (10, "it asserts one stage holds every MTP layer: All of the MTP layers must be in the same one virtual "
               "pipeline stage", "put every m in one stage", ("mtp_num_layers",)),
      ]],
    Refusal(PL + "parse_str_to_list:1", "pipeline_model_parallel_layout",
            lambda v: any(c not in "ELtm" for stage in _layout_stages(v) or [] for c in stage),
            "it asserts each layer character is known: Invalid layer character (known layer characters: E, L, t, m)",
            "write the layout with E (embedding), t (decoder), m (MTP), L (loss), | between stages"),
    Refusal(HY + "parse_hybrid_pattern:1", "hybrid_layer_pattern",
            lambda v: _hybrid_site(v) == "parse_hybrid_pattern:1",
            "it raises ValueError: All MTP patterns must be identical",
            "repeat one MTP pattern after each /"),
    Refusal(HY + "_validate_pattern:1", "hybrid_layer_pattern",
            lambda v: _hybrid_site(v) == "_validate_pattern:1",
            "it raises ValueError: a symbol of the pattern is not a valid layer symbol (valid: M G * D + - E, and | "
            "in the main pattern)", "write the pattern with M, G, *, D, +, -, E (| between pipeline stages)"),
    Refusal(HY + "_validate_pattern:2", "hybrid_layer_pattern",
            lambda v: _hybrid_site(v) == "_validate_pattern:2",
            "it raises ValueError: Not supported to have both Attention and MLA/DSA in one model",
            "use * (attention) or + / D (MLA / DSA), not both"),
    Refusal("megatron/training/determinism.py:apply_determinism_to_args:1", "deterministic_mode",
            lambda v: bool(v("deterministic_mode")) and (bool(v("cross_entropy_loss_fusion"))
                                                         or bool(v("tp_comm_overlap"))),
            "it asserts that --cross-entropy-loss-fusion and --tp-comm-overlap are off: --deterministic-mode "
            "requires: cross_entropy_loss_fusion=False, tp_comm_overlap=False",
            "drop --cross-entropy-loss-fusion and --tp-comm-overlap, or --deterministic-mode",
            involved=("cross_entropy_loss_fusion", "tp_comm_overlap")),
    Refusal(AU + "2", "squared_relu",
            lambda v: bool(v("squared_relu")) and bool(v("swiglu")),
            "it asserts `not args.swiglu` with --squared-relu", "keep one of --squared-relu and --swiglu",
            involved=("swiglu",), stage="config"),
    Refusal(AU + "3", "quick_geglu",
            lambda v: not v("squared_relu") and bool(v("quick_geglu")) and bool(v("swiglu")),
            "it asserts `not args.swiglu` with --quick-geglu", "keep one of --quick-geglu and --swiglu",
            involved=("swiglu",), stage="config"),
    Refusal(AU + "4", "rope_type",
            lambda v: v("rope_type") is not None and v("rope_type") != "rope" and not _mla(v),
            "it asserts `args.multi_latent_attention or args.rope_type == 'rope'`: Common attention only support "
            "rope_type=\"rope\"", "drop --rope-type (yarn is for --multi-latent-attention)", stage="config"),
]
