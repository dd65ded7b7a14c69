"""MG301 rows: `TransformerConfig.__post_init__` (megatron/core/transformer/transformer_config.py), its sites 1-115.

These checks run in `core_transformer_config_from_args` (megatron/training/argument_utils.py), after
validate_args: a row reads the values the config receives, i.e. validate_args' rewrites of `args`
(`--num-experts 0` is None, `--recompute-activations` is selective recompute, a one-element
`--moe-router-load-balancing-type` / `--moe-aux-loss-coeff` list is its element, the expert tensor
parallel size defaults to the tensor parallel size, `--cpu-offloading-num-layers` > 0 turns CPU offloading
on, a `--hybrid-layer-pattern` sets the layer count, MLA and DSA) and the config's own rewrites before
the site (`__post_init__` turns the grouped tensor on with the TE op fuser and grouped GEMM, and
`--moe-enable-deepep` makes the flex backend deepep).
"""

from __future__ import annotations

from shardshift.rules.megatron.refusals.base import Refusal, Undecided

SITE = "megatron/core/transformer/transformer_config.py:TransformerConfig.__post_init__:"


def _name(value) -> str:
    """An enum value's name, or a string as written."""
    return str(value).rsplit(".", 1)[-1]


def _pattern(v) -> str | None:
    return v("hybrid_layer_pattern")


def _variant(v) -> str | None:
    """The experimental attention variant the config gets (a D of the hybrid pattern means dsa), canonical."""
    pattern = _pattern(v)
    variant = "dsa" if pattern is not None and "D" in str(pattern) else v("experimental_attention_variant")
    return {"gated_delta_net": "gdn"}.get(variant, variant)


def _gdn(v) -> bool:
    return _variant(v) in ("gdn", "gdn2")


def _mla(v) -> bool:
    pattern = _pattern(v)
    return bool(v("multi_latent_attention")) or (pattern is not None and any(s in str(pattern) for s in "+D"))


def _num_layers(v) -> int:
    if _pattern(v) is not None:
        raise Undecided("num_layers")  # the pattern's layer count
    layers = v("num_layers")
    if layers is None:
        layers = v("encoder_num_layers")
    if layers is None:
        raise Undecided("num_layers")
    return layers


def _experts(v) -> int | None:
    experts = v("num_experts")
    return None if experts == 0 else experts


def _expert_tp(v) -> int:
    """validate_args: an unset expert tensor parallel size is the tensor parallel size."""
    size = v("expert_tensor_parallel_size")
    return v("tensor_model_parallel_size") if size is None else size


def _grouped_tensor(v) -> bool:
    return bool(v("moe_use_grouped_tensor")) or bool(v("use_transformer_engine_op_fuser") and v("moe_grouped_gemm"))


def _flex_backend(v) -> str:
    return "deepep" if v("moe_enable_deepep") else v("moe_flex_dispatcher_backend")


def _inference_moe(v) -> bool:
    return v("transformer_impl") == "inference_optimized" and _experts(v) is not None


def _glu(v) -> bool:
    return bool(v("swiglu")) or bool(v("quick_geglu") and not v("squared_relu"))


def _granularity(v) -> str | None:
    """Recompute granularity as the config's checks of recompute_modules see it (validate_args' rewrite)."""
    return "selective" if v("recompute_activations") else v("recompute_granularity")


def _modules(v) -> list:
    modules = v("recompute_modules")
    return ["core_attn"] if modules is None else list(modules)


def _granularity_after_moe_layer_recompute(v) -> str | None:
    granularity = _granularity(v)
    return "selective" if v("moe_layer_recompute") and granularity != "full" else granularity


def _modules_after_moe_layer_recompute(v) -> list:
    modules = _modules(v)
    if v("moe_layer_recompute") and _granularity(v) != "full" and "moe" not in modules:
        modules.append("moe")
    return modules


def _selective(v) -> list:
    """recompute_modules when selective recompute is on (the sites 75-80 block), else []."""
    return _modules(v) if _granularity(v) == "selective" else []


def _mhc_recompute(v) -> bool:
    return (_granularity_after_moe_layer_recompute(v) == "selective"
            and "mhc" in _modules_after_moe_layer_recompute(v))


def _cpu_offloading(v) -> bool:
    return v("cpu_offloading_num_layers") > 0


def _offload(v) -> set:
    return set(v("offload_modules") or ()) if v("fine_grained_activation_offloading") else set()


def _lb_types(v):
    """--moe-router-load-balancing-type as the config gets it (validate_args unwraps a one-element list)."""
    types = v("moe_router_load_balancing_type")
    return types[0] if isinstance(types, list) and len(types) == 1 else types


def _aux_coeff(v):
    coeff = v("moe_aux_loss_coeff")
    return coeff[0] if isinstance(coeff, list) and len(coeff) == 1 else coeff


def _mixed_moe_layer_freq(v) -> bool:
    freq = v("moe_layer_freq")
    if isinstance(freq, str):
        raise Undecided("moe_layer_freq")  # a pattern moe_freq_type evaluates
    return (isinstance(freq, list) and 0 in freq) or (isinstance(freq, int) and freq > 1)


def _mtp(v) -> bool:
    """Whether the config gets an mtp_num_layers (validate_args infers one from a hybrid pattern's MTP part)."""
    if v("mtp_num_layers") is not None:
        return True
    if _pattern(v) is not None:
        raise Undecided("mtp_num_layers")
    return False


_BALANCING = ("aux_loss", "seq_aux_loss", "global_aux_loss", "none")
_RECOMPUTE = {"core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts", "gdn_norm_out",
              "gdp_in_proj", "gdp_qkv", "mhc"}
_OFFLOAD = {"core_attn", "attn_proj", "expert_fc1", "fused_group_mlp", "moe_act", "attn_norm", "mlp_norm",
            "qkv_linear", "gdp_qkv"}

ROWS = [
    Refusal(SITE + "1", "moe_use_grouped_tensor",
            lambda v: v("moe_use_grouped_tensor") and not v("moe_grouped_gemm"),
            "it raises ValueError: moe_use_grouped_tensor=True requires moe_grouped_gemm=True.",
            "add `--moe-grouped-gemm`, or drop --moe-use-grouped-tensor", involved=("moe_grouped_gemm",), stage="config"),
    Refusal(SITE + "4", "gdp_num_householder",
            lambda v: v("gdp_num_householder") < 1,
            "it raises ValueError: gdp_num_householder must be positive",
            "give --gdp-num-householder 1 or more (the default is 3)", stage="config"),
    Refusal(SITE + "7", "experimental_attention_variant",
            lambda v: _variant(v) == "gdn" and v("linear_attention_freq") is None,
            "it asserts `self.linear_attention_freq is not None`: linear_attention_freq must be set for linear gdn.",
            "add `--linear-attention-freq N` (every N-th layer full attention, or a pattern)",
            involved=("linear_attention_freq",), stage="config"),
    Refusal(SITE + "13", "linear_num_value_heads",
            lambda v: _gdn(v) and v("linear_num_value_heads") % v("linear_num_key_heads") != 0,
            "it asserts `self.linear_num_value_heads % self.linear_num_key_heads == 0`: linear_num_value_heads "
            "must be a multiple of linear_num_key_heads",
            "make --linear-num-value-heads a multiple of --linear-num-key-heads",
            involved=("linear_num_key_heads", "experimental_attention_variant"), stage="config"),
    Refusal(SITE + "14", "linear_num_key_heads",
            lambda v: _gdn(v) and
            v("linear_num_key_heads") % (v("tensor_model_parallel_size") * v("context_parallel_size")) != 0,
            "it asserts `self.linear_num_key_heads % tp_cp_size == 0`: linear_num_key_heads must be a multiple of "
            "(tensor_model_parallel_size * context_parallel_size)",
            "make --linear-num-key-heads a multiple of the tensor parallel size times the context parallel size",
            involved=("tensor_model_parallel_size", "context_parallel_size", "experimental_attention_variant"),
            stage="config"),
    Refusal(SITE + "16", "experimental_attention_variant",
            lambda v: _variant(v) == "dsa" and v("add_bias_linear"),
            "it raises ValueError: DSA uses AbsorbedMLASelfAttention, which requires add_bias_linear=False. "
            "Disable linear bias for DSA configs.",
            "add `--disable-bias-linear`", involved=("add_bias_linear",), stage="config"),
    Refusal(SITE + "17", "dsa_indexer_topk_freq",
            lambda v: _variant(v) == "dsa" and v("dsa_indexer_topk_freq") < 1,
            "it raises ValueError: dsa_indexer_topk_freq must be positive",
            "give --dsa-indexer-topk-freq 1 or more (the default is 1)",
            involved=("experimental_attention_variant",), stage="config"),
    Refusal(SITE + "18", "dsa_indexer_skip_topk_offset",
            lambda v: _variant(v) == "dsa" and v("dsa_indexer_skip_topk_offset") < 0,
            "it raises ValueError: dsa_indexer_skip_topk_offset must be non-negative",
            "give --dsa-indexer-skip-topk-offset 0 or more (the default is 0)",
            involved=("experimental_attention_variant",), stage="config"),
    Refusal(SITE + "19", "first_last_layers_bf16",
            lambda v: v("fp8") and v("first_last_layers_bf16") and _name(v("fp8_recipe")) == "delayed",
            "it raises ValueError: Delayed scaling does not support first / last layer in BF16.",
            "give another --fp8-recipe (tensorwise, mxfp8 or blockwise), or drop --first-last-layers-bf16",
            involved=("fp8", "fp8_recipe"), stage="config"),
    Refusal(SITE + "20", "num_layers_at_start_in_bf16",
            lambda v: v("fp8") and v("first_last_layers_bf16") and not
            0 <= v("num_layers_at_start_in_bf16") <= _num_layers(v) // v("pipeline_model_parallel_size"),
            "it raises ValueError: num_layers_at_start_in_bf16 must be between 0 and number of layers per "
            "pipeline stage",
            "give --num-layers-at-start-in-bf16 between 0 and the layers of a pipeline stage",
            involved=("first_last_layers_bf16", "num_layers", "pipeline_model_parallel_size"), stage="config"),
    Refusal(SITE + "21", "num_layers_at_end_in_bf16",
            lambda v: v("fp8") and v("first_last_layers_bf16") and not
            0 <= v("num_layers_at_end_in_bf16") <= _num_layers(v) // v("pipeline_model_parallel_size"),
            "it raises ValueError: num_layers_at_end_in_bf16 must be between 0 and number of layers per "
            "pipeline stage",
            "give --num-layers-at-end-in-bf16 between 0 and the layers of a pipeline stage",
            involved=("first_last_layers_bf16", "num_layers", "pipeline_model_parallel_size"), stage="config"),
    Refusal(SITE + "22", "fp8_recipe",
            lambda v: v("fp8") and _name(v("fp8_recipe")) == "custom" and not v("fp8_quantizer_factory"),
            "it raises ValueError: fp8_quantizer_factory must be provided when fp8_recipe is 'custom'.",
            "add `--fp8-quantizer-factory package.module.quantizer_factory`, or give another --fp8-recipe",
            involved=("fp8_quantizer_factory",), stage="config"),
    Refusal(SITE + "24", "fp8_output_proj",
            lambda v: v("fp8_output_proj") and not v("fp8"),
            "it raises ValueError: fp8_output_proj must be used together with fp8 mode.",
            "add `--fp8-format` (with `--fp8-recipe mxfp8`), or drop --fp8-output-proj", involved=("fp8",),
            stage="config"),
    Refusal(SITE + "25", "fp8_output_proj",
            lambda v: v("fp8_output_proj") and v("fp8") and _name(v("fp8_recipe")) != "mxfp8",
            "it raises ValueError: fp8_output_proj requires fp8_recipe='mxfp8'",
            "add `--fp8-recipe mxfp8`, or drop --fp8-output-proj", involved=("fp8_recipe",), stage="config"),
    Refusal(SITE + "28", "fp4_recipe",
            lambda v: v("fp4") and _name(v("fp4_recipe")) == "custom" and not v("fp4_quantizer_factory"),
            "it raises ValueError: fp4_quantizer_factory must be provided when fp4_recipe is 'custom'.",
            "add `--fp4-quantizer-factory package.module.quantizer_factory`, or use --fp4-recipe nvfp4",
            involved=("fp4_quantizer_factory",), stage="config"),
    Refusal(SITE + "30", "expert_tensor_parallel_size",
            lambda v: _inference_moe(v) and _expert_tp(v) > 1,
            "it raises ValueError: Inference-optimized MoE layers does not support expert tensor parallelism.",
            "give `--expert-tensor-parallel-size 1` (it defaults to the tensor parallel size)",
            involved=("transformer_impl", "tensor_model_parallel_size"), stage="config"),
    Refusal(SITE + "31", "moe_expert_capacity_factor",
            lambda v: _inference_moe(v) and v("moe_expert_capacity_factor") is not None,
            "it raises ValueError: Inference-optimized MoE layers only support dropless MoE",
            "drop --moe-expert-capacity-factor (dropless MoE)", involved=("transformer_impl",), stage="config"),
    Refusal(SITE + "32", "moe_router_padding_for_quantization",
            lambda v: _inference_moe(v) and v("moe_router_padding_for_quantization"),
            "it raises ValueError: Inference-optimized MoE layers do not support padded routing map for quantization.",
            "drop --moe-router-padding-for-quantization", involved=("transformer_impl",), stage="config"),
    Refusal(SITE + "33", "transformer_impl",
            lambda v: _inference_moe(v) and v("moe_router_dtype") != "fp32",
            "it raises ValueError: --transformer-impl='inference_optimized' requires --moe-router-dtype=fp32 to "
            "avoid costly dtype conversions during decode.",
            "add `--moe-router-dtype fp32`", involved=("moe_router_dtype",), stage="config"),
    Refusal(SITE + "34", "inference_grouped_gemm_backend",
            lambda v: _inference_moe(v) and _glu(v) and v("inference_grouped_gemm_backend") not in ("torch", "vllm"),
            "it raises ValueError: --transformer-impl='inference_optimized' supports gated linear units "
            "(SwiGLU/GeGLU) only with --inference-grouped-gemm-backend torch or vllm",
            "give `--inference-grouped-gemm-backend torch` or vllm (the default)",
            involved=("transformer_impl", "swiglu", "quick_geglu"), stage="config"),
    Refusal(SITE + "39", "batch_invariant_mode",
            lambda v: _inference_moe(v) and v("batch_invariant_mode")
            and v("inference_grouped_gemm_backend") not in ("torch", "vllm"),
            "it raises ValueError: batch_invariant_mode requires inference_grouped_gemm_backend 'torch' or 'vllm'.",
            "give `--inference-grouped-gemm-backend torch` or vllm (the default)",
            involved=("inference_grouped_gemm_backend", "transformer_impl"), stage="config"),
    Refusal(SITE + "40", "inference_moe_token_dispatcher_type",
            lambda v: _inference_moe(v) and v("batch_invariant_mode") and v("expert_model_parallel_size") > 1
            and v("inference_moe_token_dispatcher_type") != "nvls",
            "it raises ValueError: batch_invariant_mode with inference-optimized MoE and expert parallelism "
            "requires inference_moe_token_dispatcher_type='nvls'.",
            "give `--inference-moe-token-dispatcher-type nvls` (the default)",
            involved=("batch_invariant_mode", "expert_model_parallel_size", "transformer_impl"), stage="config"),
    Refusal(SITE + "41", "num_experts",
            lambda v: _experts(v) is not None and _experts(v) <= 0,
            "it raises ValueError: num_moe_experts must be non-negative.",
            "give a positive --num-experts (or 0 / none for a dense model)", stage="config"),
    Refusal(SITE + "42", "moe_ffn_hidden_size",
            lambda v: _experts(v) is None and v("moe_ffn_hidden_size") is not None and not _mixed_moe_layer_freq(v),
            "it raises ValueError: moe_ffn_hidden_size is set but num_moe_experts is None. Please set "
            "num_moe_experts or remove moe_ffn_hidden_size.",
            "add `--num-experts N`, or drop --moe-ffn-hidden-size", involved=("num_experts",), stage="config"),
    Refusal(SITE + "43", "moe_grouped_gemm",
            lambda v: (v("moe_single_grouped_weight") or v("moe_single_grouped_bias")) and not v("moe_grouped_gemm"),
            "it raises ValueError: moe_single_grouped_weight and moe_single_grouped_bias require moe_grouped_gemm=True.",
            "add `--moe-grouped-gemm`", involved=("moe_single_grouped_weight", "moe_single_grouped_bias"),
            stage="config"),
    Refusal(SITE + "45", "moe_single_grouped_weight",
            lambda v: v("moe_single_grouped_weight") and (
                (v("fp8") and _name(v("fp8_recipe")) != "mxfp8") or (v("fp4") and _name(v("fp4_recipe")) != "nvfp4")),
            "it raises ValueError: moe_single_grouped_weight is currently supported with high-precision primary "
            "weights, fp8_recipe='mxfp8', or fp4_recipe='nvfp4'.",
            "use `--fp8-recipe mxfp8` (or --fp4-recipe nvfp4), or drop --moe-single-grouped-weight",
            involved=("fp8", "fp8_recipe", "fp4", "fp4_recipe"), stage="config"),
    Refusal(SITE + "46", "moe_single_grouped_weight",
            lambda v: v("moe_single_grouped_weight") and v("fp4") and not v("fp4_param_gather"),
            "it raises ValueError: moe_single_grouped_weight with FP4 compute requires fp4_param=True "
            "(--fp4-param-gather).",
            "add `--fp4-param-gather`", involved=("fp4", "fp4_param_gather"), stage="config"),
    Refusal(SITE + "47", "moe_single_grouped_weight",
            lambda v: v("moe_grouped_gemm") and v("moe_single_grouped_weight")
            and not _grouped_tensor(v),  # without grouped GEMM site 43 raises first
            "it raises ValueError: moe_single_grouped_weight requires moe_use_grouped_tensor=True.",
            "add `--moe-use-grouped-tensor` (or `--use-transformer-engine-op-fuser` with --moe-grouped-gemm)",
            involved=("moe_use_grouped_tensor",), stage="config"),
    Refusal(SITE + "48", "moe_single_grouped_bias",
            lambda v: v("moe_single_grouped_bias") and not v("add_bias_linear"),
            "it raises ValueError: moe_single_grouped_bias requires add_bias_linear=True.",
            "drop --moe-single-grouped-bias (or --disable-bias-linear)", involved=("add_bias_linear",), stage="config"),
    Refusal(SITE + "49", "moe_single_grouped_bias",
            lambda v: v("moe_grouped_gemm") and v("moe_single_grouped_bias")
            and not _grouped_tensor(v),  # without grouped GEMM site 43 raises first
            "it raises ValueError: moe_single_grouped_bias requires moe_use_grouped_tensor=True.",
            "add `--moe-use-grouped-tensor` (or `--use-transformer-engine-op-fuser` with --moe-grouped-gemm)",
            involved=("moe_use_grouped_tensor",), stage="config"),
    Refusal(SITE + "50", "moe_enable_deepep",
            lambda v: v("moe_enable_deepep") and v("moe_token_dispatcher_type") != "flex",
            "it raises ValueError: DeepEP backend is only supported with flex token dispatcher.",
            "add `--moe-token-dispatcher-type flex` (and prefer --moe-flex-dispatcher-backend deepep to the "
            "deprecated --moe-enable-deepep)", involved=("moe_token_dispatcher_type",), stage="config"),
    Refusal(SITE + "51", "moe_enable_deepep",
            lambda v: v("moe_enable_deepep") and v("moe_flex_dispatcher_backend") == "hybridep",
            "it raises ValueError: Only one backend is supported for flex token dispatcher.",
            "drop --moe-enable-deepep (deprecated) to use hybridep, or drop --moe-flex-dispatcher-backend hybridep",
            involved=("moe_flex_dispatcher_backend",), stage="config"),
    Refusal(SITE + "52", "moe_pad_expert_input_to_capacity",
            lambda v: v("moe_token_dispatcher_type") == "flex" and v("moe_pad_expert_input_to_capacity")
            and (v("moe_enable_deepep") or v("moe_flex_dispatcher_backend") == "deepep"),
            "it raises ValueError: Flex token dispatcher with deepep backend does not support "
            "moe_pad_expert_input_to_capacity",
            "drop --moe-pad-expert-input-to-capacity, or use --moe-flex-dispatcher-backend hybridep (the deepep "
            "backend is the default)", involved=("moe_token_dispatcher_type", "moe_flex_dispatcher_backend"),
            stage="config"),
    Refusal(SITE + "53", "moe_flex_dispatcher_backend",
            lambda v: _flex_backend(v) == "ncclep" and v("moe_token_dispatcher_type") != "flex",
            "it raises ValueError: moe_flex_dispatcher_backend='ncclep' requires moe_token_dispatcher_type='flex'.",
            "add `--moe-token-dispatcher-type flex`", involved=("moe_token_dispatcher_type",), stage="config"),
    Refusal(SITE + "54", "moe_use_grouped_tensor",
            lambda v: _flex_backend(v) == "ncclep" and _grouped_tensor(v) and not v("use_transformer_engine_op_fuser"),
            "it raises ValueError: moe_use_grouped_tensor=True without use_transformer_engine_op_fuser is not yet "
            "supported with the NCCL-EP dispatcher.",
            "add `--use-transformer-engine-op-fuser`, or use the alltoall dispatcher or another flex backend",
            involved=("moe_flex_dispatcher_backend", "use_transformer_engine_op_fuser"), stage="config"),
    Refusal(SITE + "55", "moe_dispatch_fwd_dtype",
            lambda v: (v("moe_dispatch_fwd_dtype") != "bf16" or v("moe_combine_bwd_dtype") != "bf16")
            and (v("moe_token_dispatcher_type") != "flex" or _flex_backend(v) != "ncclep"),
            "it raises ValueError: moe_dispatch_fwd_dtype / moe_combine_bwd_dtype require the 'ncclep' flex "
            "dispatcher backend.",
            "add `--moe-token-dispatcher-type flex --moe-flex-dispatcher-backend ncclep`, or keep bf16",
            involved=("moe_combine_bwd_dtype", "moe_token_dispatcher_type", "moe_flex_dispatcher_backend"),
            stage="config"),
    Refusal(SITE + "56", "moe_dispatch_fwd_dtype",
            lambda v: (v("moe_dispatch_fwd_dtype") != "bf16" or v("moe_combine_bwd_dtype") != "bf16")
            and not (v("use_transformer_engine_op_fuser") and v("moe_grouped_gemm")),
            "it raises ValueError: moe_dispatch_fwd_dtype / moe_combine_bwd_dtype = 'mxfp8' require BOTH "
            "use_transformer_engine_op_fuser and moe_grouped_gemm",
            "add `--use-transformer-engine-op-fuser --moe-grouped-gemm`, or keep bf16",
            involved=("moe_combine_bwd_dtype", "use_transformer_engine_op_fuser", "moe_grouped_gemm"),
            stage="config"),
    Refusal(SITE + "57", "moe_hybridep_num_sms",
            lambda v: v("moe_flex_dispatcher_num_sms") is None and v("moe_deepep_num_sms") is not None
            and v("moe_hybridep_num_sms") is not None and v("moe_deepep_num_sms") != v("moe_hybridep_num_sms"),
            "it raises ValueError: Conflicting deprecated SM-count knobs; set a single moe_flex_dispatcher_num_sms "
            "instead.",
            "give one `--moe-flex-dispatcher-num-sms N` instead of the deprecated --moe-deepep-num-sms and "
            "--moe-hybridep-num-sms", involved=("moe_deepep_num_sms",), stage="config"),
    Refusal(SITE + "58", "moe_shared_expert_intermediate_size",
            lambda v: v("moe_shared_expert_intermediate_size") is not None
            and v("moe_shared_expert_intermediate_size") <= 0,
            "it raises ValueError: moe_shared_expert_intermediate_size must be num_shared_experts * "
            "ffn_size_of_each_shared_expert",
            "give a positive --moe-shared-expert-intermediate-size, or drop it (no shared experts)", stage="config"),
    Refusal(SITE + "59", "moe_shared_expert_overlap",
            lambda v: v("moe_shared_expert_intermediate_size") is not None and v("moe_shared_expert_overlap")
            and v("moe_token_dispatcher_type") not in ("alltoall", "flex"),
            "it raises ValueError: moe_shared_expert_overlap only works with alltoall or flex token dispatcher.",
            "add `--moe-token-dispatcher-type alltoall` (or flex), or drop --moe-shared-expert-overlap",
            involved=("moe_token_dispatcher_type",), stage="config"),
    Refusal(SITE + "60", "moe_aux_loss_coeff",
            lambda v: isinstance(_lb_types(v), list) and not (
                isinstance(_aux_coeff(v), list) and len(_aux_coeff(v)) == len(_lb_types(v))),
            "it asserts `isinstance(self.moe_aux_loss_coeff, list) and len(self.moe_aux_loss_coeff) == "
            "len(self.moe_router_load_balancing_type)`: moe_aux_loss_coeff must be a list of the same length as "
            "moe_router_load_balancing_type",
            "give --moe-aux-loss-coeff one value per --moe-router-load-balancing-type",
            involved=("moe_router_load_balancing_type",), stage="config"),
    Refusal(SITE + "61", "moe_router_load_balancing_type",
            lambda v: v("moe_expert_capacity_factor") is not None and isinstance(_lb_types(v), list)
            and any(t not in _BALANCING for t in _lb_types(v)),
            "it raises ValueError: moe_expert_capacity_factor only works with aux_loss, seq_aux_loss, "
            "global_aux_loss or none load balancing",
            "drop --moe-expert-capacity-factor, or use only aux_loss, seq_aux_loss, global_aux_loss or none",
            involved=("moe_expert_capacity_factor",), stage="config"),
    Refusal(SITE + "62", "moe_router_load_balancing_type",
            lambda v: v("moe_expert_capacity_factor") is not None and not isinstance(_lb_types(v), list)
            and _lb_types(v) not in _BALANCING,
            "it raises ValueError: moe_expert_capacity_factor only works with aux_loss, seq_aux_loss, "
            "global_aux_loss or none load balancing",
            "drop --moe-expert-capacity-factor, or use aux_loss, seq_aux_loss, global_aux_loss or none",
            involved=("moe_expert_capacity_factor",), stage="config"),
    Refusal(SITE + "63", "moe_pad_expert_input_to_capacity",
            lambda v: v("moe_pad_expert_input_to_capacity") and (
                v("moe_expert_capacity_factor") is None or v("moe_expert_capacity_factor") < 0),
            "it raises ValueError: moe_expert_capacity_factor must be set to use moe_pad_expert_input_to_capacity",
            "add `--moe-expert-capacity-factor F` (a negative factor counts as unset)",
            involved=("moe_expert_capacity_factor",), stage="config"),
    Refusal(SITE + "64", "moe_expert_rank_capacity_factor",
            lambda v: v("moe_expert_rank_capacity_factor") is not None
            and _flex_backend(v) not in ("hybridep", "ncclep"),
            "it raises ValueError: moe_expert_rank_capacity_factor requires moe_flex_dispatcher_backend to be "
            "'hybridep' or 'ncclep'.",
            "add `--moe-flex-dispatcher-backend hybridep` (or ncclep; the default is deepep)",
            involved=("moe_flex_dispatcher_backend",), stage="config"),
    Refusal(SITE + "65", "moe_expert_rank_capacity_factor",
            lambda v: v("moe_expert_rank_capacity_factor") is not None and _flex_backend(v) == "hybridep"
            and not v("use_transformer_engine_op_fuser") and not _grouped_tensor(v),
            "it raises ValueError: moe_expert_rank_capacity_factor with the 'hybridep' backend requires "
            "use_transformer_engine_op_fuser=True or moe_use_grouped_tensor=True.",
            "add `--use-transformer-engine-op-fuser` or `--moe-use-grouped-tensor`",
            involved=("moe_flex_dispatcher_backend", "use_transformer_engine_op_fuser", "moe_use_grouped_tensor"),
            stage="config"),
    Refusal(SITE + "75", "recompute_modules",
            lambda v: bool(set(_selective(v)) - _RECOMPUTE),
            "it asserts `not invalid_modules`: Invalid choices for recompute_modules",
            "name only core_attn, moe_act, layernorm, mla_up_proj, mlp, moe, shared_experts, gdn_norm_out, "
            "gdp_in_proj, gdp_qkv or mhc in --recompute-modules", involved=("recompute_granularity",), stage="config"),
    Refusal(SITE + "76", "recompute_modules",
            lambda v: "moe_act" in _selective(v) and not v("moe_grouped_gemm"),
            "it raises ValueError: moe_act in recompute_modules is only supported with moe_grouped_gemm.",
            "add `--moe-grouped-gemm`, or drop moe_act from --recompute-modules", involved=("moe_grouped_gemm",),
            stage="config"),
    Refusal(SITE + "77", "recompute_modules",
            lambda v: "mla_up_proj" in _selective(v) and not _mla(v),
            "it raises ValueError: mla_up_proj in recompute_modules is only supported with multi_latent_attention.",
            "add `--multi-latent-attention`, or drop mla_up_proj from --recompute-modules",
            involved=("multi_latent_attention",), stage="config"),
    Refusal(SITE + "78", "recompute_modules",
            lambda v: "gdn_norm_out" in _selective(v) and not _gdn(v),
            "it raises ValueError: gdn_norm_out in recompute_modules is only supported with "
            "experimental_attention_variant='gdn' or 'gdn2'.",
            "add `--experimental-attention-variant gdn` (or gdn2), or drop gdn_norm_out from --recompute-modules",
            involved=("experimental_attention_variant",), stage="config"),
    Refusal(SITE + "79", "recompute_modules",
            lambda v: "shared_experts" in _selective(v) and v("moe_shared_expert_intermediate_size") is not None
            and v("moe_shared_expert_overlap"),
            "it raises ValueError: shared_experts recompute cannot work with --moe-shared-expert-overlap.",
            "drop shared_experts from --recompute-modules, or drop --moe-shared-expert-overlap",
            involved=("moe_shared_expert_overlap",), stage="config"),
    Refusal(SITE + "80", "recompute_modules",
            lambda v: v("fp8") and ("moe_act" in _selective(v) or "layernorm" in _selective(v))
            and _name(v("fp8_recipe")) == "delayed",
            "it raises ValueError: Delayed scaling does not support moe_act and layernorm recompute for fp8.",
            "give another --fp8-recipe (tensorwise, mxfp8 or blockwise), or drop moe_act and layernorm from "
            "--recompute-modules", involved=("fp8", "fp8_recipe"), stage="config"),
    Refusal(SITE + "82", "moe_layer_recompute",
            lambda v: v("moe_layer_recompute") and _granularity(v) == "full",
            "it raises ValueError: Do not set --moe-layer-recompute with full recompute granularity.",
            "drop --moe-layer-recompute (deprecated; use --recompute-granularity selective --recompute-modules moe)",
            involved=("recompute_granularity",), stage="config"),
    Refusal(SITE + "83", "recompute_modules",
            lambda v: _mhc_recompute(v) and not v("enable_mhc_connections"),
            "it raises ValueError: 'mhc' in recompute_modules requires enable_mhc_connections=True.",
            "add `--enable-mhc-connections`, or drop mhc from --recompute-modules",
            involved=("enable_mhc_connections",), stage="config"),
    Refusal(SITE + "84", "recompute_modules",
            lambda v: _mhc_recompute(v) and "mlp" in _modules_after_moe_layer_recompute(v),
            "it raises ValueError: 'mhc' and 'mlp' in recompute_modules cannot be used together.",
            "recompute either mhc or mlp", stage="config"),
    Refusal(SITE + "85", "mhc_recompute_layer_num",
            lambda v: _mhc_recompute(v) and v("mhc_recompute_layer_num") is not None
            and v("mhc_recompute_layer_num") < 1,
            "it raises ValueError: mhc_recompute_layer_num must be a positive integer when 'mhc' is in "
            "recompute_modules.",
            "give a positive --mhc-recompute-layer-num, or drop it", involved=("recompute_modules",), stage="config"),
    Refusal(SITE + "86", "fine_grained_activation_offloading",
            lambda v: _mhc_recompute(v) and v("fine_grained_activation_offloading"),
            "it raises NotImplementedError: 'mhc' in recompute_modules + fine_grained_activation_offloading is not "
            "yet supported.",
            "drop mhc from --recompute-modules or drop --fine-grained-activation-offloading",
            involved=("recompute_modules",), stage="config"),
    Refusal(SITE + "87", "enable_mhc_connections",
            lambda v: v("enable_mhc_connections") and _mtp(v),
            "it raises ValueError: enable_mhc_connections is not compatible with Multi-Token Prediction (MTP).",
            "drop --mtp-num-layers, or drop --enable-mhc-connections", involved=("mtp_num_layers",), stage="config"),
    Refusal(SITE + "88", "enable_mhc_connections",
            lambda v: v("enable_mhc_connections") and _granularity_after_moe_layer_recompute(v) == "full",
            "it raises NotImplementedError: enable_mhc_connections is not yet compatible with full activation "
            "recompute.",
            "use `--recompute-granularity selective --recompute-modules mhc`, or no activation recompute",
            involved=("recompute_granularity",), stage="config"),
    Refusal(SITE + "89", "enable_mhc_connections",
            lambda v: v("enable_mhc_connections") and v("inference_fuse_tp_communication"),
            "it raises NotImplementedError: enable_mhc_connections is not compatible with "
            "inference_fuse_tp_communication.",
            "drop --inference-fuse-tp-communication, or drop --enable-mhc-connections",
            involved=("inference_fuse_tp_communication",), stage="config"),
    Refusal(SITE + "90", "enable_mhc_connections",
            lambda v: v("enable_mhc_connections") and v("pipeline_model_parallel_size") > 1,
            "it raises NotImplementedError: enable_mhc_connections does not support pipeline_model_parallel_size > 1 "
            "yet.",
            "use --pipeline-model-parallel-size 1 with --enable-mhc-connections",
            involved=("pipeline_model_parallel_size",), stage="config"),
    Refusal(SITE + "91", "enable_mhc_connections",
            lambda v: v("enable_mhc_connections") and v("fp32_residual_connection"),
            "it raises NotImplementedError: enable_mhc_connections is not compatible with fp32_residual_connection.",
            "drop --fp32-residual-connection, or drop --enable-mhc-connections",
            involved=("fp32_residual_connection",), stage="config"),
    Refusal(SITE + "92", "mhc_sinkhorn_iterations",
            lambda v: v("enable_mhc_connections") and v("mhc_sinkhorn_iterations") < 1,
            "it raises ValueError: mhc_sinkhorn_iterations must be >= 1; the Sinkhorn-Knopp backward assumes at "
            "least one row-normalization pass",
            "give --mhc-sinkhorn-iterations 1 or more (the default is 20)", involved=("enable_mhc_connections",),
            stage="config"),
    Refusal(SITE + "93", "mhc_init_gating_factor",
            lambda v: v("enable_mhc_connections") and v("mhc_init_gating_factor") < 0,
            "it raises ValueError: mhc_init_gating_factor must be non-negative",
            "give a non-negative --mhc-init-gating-factor (the default is 0.01)",
            involved=("enable_mhc_connections",), stage="config"),
    Refusal(SITE + "94", "fine_grained_activation_offloading",
            lambda v: v("fine_grained_activation_offloading") and _cpu_offloading(v),
            "it asserts `not self.cpu_offloading`: fine_grained_activation_offloading cannot be enabled with "
            "cpu_offloading.",
            "drop --cpu-offloading-num-layers, or drop --fine-grained-activation-offloading",
            involved=("cpu_offloading_num_layers",), stage="config"),
    Refusal(SITE + "95", "fine_grained_activation_offloading",
            lambda v: v("fine_grained_activation_offloading") and not v("offload_modules"),
            "it asserts `self.offload_modules is not None and len(self.offload_modules) > 0` (no message)",
            "add `--offload-modules` with the modules to offload (e.g. core_attn)", involved=("offload_modules",),
            stage="config"),
    Refusal(SITE + "96", "offload_modules",
            lambda v: bool(_offload(v) - _OFFLOAD),
            "it asserts `not invalid_modules`: Invalid choices for offload_modules",
            "name only core_attn, attn_proj, expert_fc1, fused_group_mlp, moe_act, attn_norm, mlp_norm, "
            "qkv_linear or gdp_qkv in --offload-modules", involved=("fine_grained_activation_offloading",),
            stage="config"),
    Refusal(SITE + "97", "offload_modules",
            lambda v: "attn_proj" in _offload(v) and "core_attn" not in _offload(v),
            "it raises ValueError: attn_proj cannot be set to offload_modules alone without core_attn",
            "add core_attn to --offload-modules, or drop attn_proj", stage="config"),
    Refusal(SITE + "98", "offload_modules",
            lambda v: "gdp_qkv" in _offload(v) and _granularity_after_moe_layer_recompute(v) == "selective"
            and "gdp_in_proj" in _modules_after_moe_layer_recompute(v),
            "it raises ValueError: gdp_qkv cannot be set in offload_modules together with gdp_in_proj in "
            "recompute_modules",
            "drop gdp_qkv from --offload-modules or gdp_in_proj from --recompute-modules",
            involved=("recompute_modules",), stage="config"),
    Refusal(SITE + "99", "offload_modules",
            lambda v: _granularity_after_moe_layer_recompute(v) == "selective"
            and "moe" in _modules_after_moe_layer_recompute(v)
            and bool({"moe_act", "expert_fc1", "fused_group_mlp"} & _offload(v)),
            "it asserts `not offload_inside_moe`: Cannot offload moe_act, expert_fc1 or fused_group_mlp while "
            "recomputing the entire MoE layer.",
            "drop moe from --recompute-modules (and --moe-layer-recompute), or drop the MoE modules from "
            "--offload-modules", involved=("recompute_modules",), stage="config"),
    Refusal(SITE + "100", "min_offloaded_tensor_size",
            lambda v: v("fine_grained_activation_offloading") and v("min_offloaded_tensor_size") < 0,
            "it asserts `self.min_offloaded_tensor_size >= 0`: min_offloaded_tensor_size must be non-negative.",
            "give a non-negative --min-offloaded-tensor-size", involved=("fine_grained_activation_offloading",),
            stage="config"),
    Refusal(SITE + "101", "activation_offload_fraction",
            lambda v: v("fine_grained_activation_offloading") and not 0 <= v("activation_offload_fraction") <= 1,
            "it asserts `self.activation_offload_fraction >= 0 and self.activation_offload_fraction <= 1`: "
            "activation_offload_fraction must be in range [0, 1].",
            "give --activation-offload-fraction between 0 and 1", involved=("fine_grained_activation_offloading",),
            stage="config"),
    Refusal(SITE + "102", "delta_offload_bytes_across_pp_ranks",
            lambda v: v("fine_grained_activation_offloading") and v("delta_offload_bytes_across_pp_ranks") < 0,
            "it asserts `self.delta_offload_bytes_across_pp_ranks >= 0`: delta_offload_bytes_across_pp_ranks must "
            "be non-negative.",
            "give a non-negative --delta-offload-bytes-across-pp-ranks",
            involved=("fine_grained_activation_offloading",), stage="config"),
    Refusal(SITE + "103", "offload_modules",
            lambda v: "fused_group_mlp" in _offload(v) and not v("use_transformer_engine_op_fuser"),
            "it raises ValueError: fused_group_mlp requires use_transformer_engine_op_fuser.",
            "add `--use-transformer-engine-op-fuser`, or drop fused_group_mlp from --offload-modules",
            involved=("use_transformer_engine_op_fuser",), stage="config"),
    Refusal(SITE + "104", "offload_modules",
            lambda v: "fused_group_mlp" in _offload(v) and bool({"expert_fc1", "moe_act"} & _offload(v)),
            "it raises ValueError: fused_group_mlp offloads the whole fused grouped MLP and cannot be combined with "
            "expert_fc1 or moe_act.",
            "drop expert_fc1 and moe_act from --offload-modules (fused_group_mlp covers them)", stage="config"),
    Refusal(SITE + "105", "gdp_num_chunk_states_to_recompute",
            lambda v: v("gdp_cutedsl_kernel") and not 0 <= v("gdp_num_chunk_states_to_recompute") <= 64,
            "it asserts `0 <= self.gdp_num_chunk_states_to_recompute <= 64`: gdp_num_chunk_states_to_recompute must "
            "be in range [0, 64]",
            "give --gdp-num-chunk-states-to-recompute between 0 and 64 (the default is 2)",
            involved=("gdp_cutedsl_kernel",), stage="config"),
    Refusal(SITE + "106", "gtp_remat_opt_in_modules",
            lambda v: bool(set(v("gtp_remat_opt_in_modules") or ()) - {"moe_latent_proj"}),
            "it asserts `not invalid`: Invalid choices for gtp_remat_opt_in_modules",
            "name only moe_latent_proj in --gtp-remat-opt-in-modules", stage="config"),
    Refusal(SITE + "107", "moe_paged_stash",
            lambda v: v("moe_paged_stash") and _cpu_offloading(v),
            "it raises ValueError: moe_paged_stash cannot be enabled with cpu_offloading.",
            "drop --cpu-offloading-num-layers, or drop --moe-paged-stash", involved=("cpu_offloading_num_layers",),
            stage="config"),
    Refusal(SITE + "108", "moe_paged_stash",
            lambda v: v("moe_paged_stash") and v("moe_expert_rank_capacity_factor") is None,
            "it raises ValueError: moe_paged_stash requires moe_expert_rank_capacity_factor to be set",
            "add `--moe-expert-rank-capacity-factor F`, or drop --moe-paged-stash",
            involved=("moe_expert_rank_capacity_factor",), stage="config"),
    Refusal(SITE + "109", "offload_modules",
            lambda v: v("moe_paged_stash")
            and bool({"expert_fc1", "moe_act", "fused_group_mlp"} & set(v("offload_modules") or ())),
            "it raises ValueError: When moe_paged_stash is enabled, offload_modules must not include expert_fc1, "
            "moe_act, or fused_group_mlp (paged stash covers those activations).",
            "drop expert_fc1, moe_act and fused_group_mlp from --offload-modules", involved=("moe_paged_stash",),
            stage="config"),
]
