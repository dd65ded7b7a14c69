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

from shardshift.rules.megatron.refused import Refusal, Undecided

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
]
