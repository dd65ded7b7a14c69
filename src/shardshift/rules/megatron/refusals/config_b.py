"""MG301 rows: `TransformerConfig.__post_init__`, its sites 116-228, `MLATransformerConfig.__post_init__` and core/model_parallel_config.py.

These checks run in core_transformer_config_from_args (megatron/training/argument_utils.py), after
validate_args: a row reads the values validate_args leaves (its rewrites: --num-experts 0 is None, the
recompute granularity of --recompute-activations, the CUDA graph implementation of the deprecated
switches, no rope fusion without rope) and the config fields as the builder maps them (the activation
of --swiglu/--squared-relu/--quick-geglu, bias_activation_fusion, a one-element --cp-comm-type as a
string). A row of a block of checks holds only where none of the block's earlier checks fails first.
"""

from __future__ import annotations

import ast
import math
import re

from shardshift.rules.megatron.refusals.base import Refusal, Undecided

SELECTIVE_ONLY = ("expert_fc1", "moe_act", "fused_group_mlp")  # what local CUDA graphs may offload


def _name(value) -> str:
    """An enum's member name, whether the value is the member, its name or its repr."""
    return str(value).strip("<>").split(":")[0].rsplit(".", 1)[-1]


def _experts(v):
    n = v("num_experts")
    return None if n == 0 else n  # validate_args: --num-experts 0 means none


def _no_hybrid(v) -> None:
    if v("hybrid_layer_pattern") is not None or v("heterogeneous_layers_config_path") is not None:
        raise Undecided("hybrid_layer_pattern")  # it rewrites layers, MLA, MTP and the virtual pipeline


def _mla(v) -> bool:
    _no_hybrid(v)
    return bool(v("multi_latent_attention"))


def _vpp(v):
    """The virtual pipeline size validate_args derives (None when there is none)."""
    _no_hybrid(v)
    if v("pipeline_model_parallel_layout") is not None or v("num_layers_per_virtual_pipeline_stage") is not None:
        raise Undecided("virtual_pipeline_model_parallel_size")
    n = v("num_virtual_stages_per_pipeline_rank")
    return None if n in (None, 1) else n


def _num_layers(v) -> int:
    _no_hybrid(v)
    layers = v("num_layers")
    if layers is None:
        raise Undecided("num_layers")  # validate_args takes it from --encoder-num-layers
    return layers


def _granularity(v):
    return "selective" if v("recompute_activations") else v("recompute_granularity")


def _recompute_modules(v) -> list:
    modules = v("recompute_modules")
    return ["core_attn"] if modules is None else list(modules)


def _activation(v) -> str:
    """The activation core_transformer_config_from_args gives the config."""
    swiglu, squared, quick = v("swiglu"), v("squared_relu"), v("quick_geglu")
    if swiglu and (squared or quick):
        raise Undecided("activation")  # the config builder asserts `not args.swiglu` first
    if squared:
        return "squared_relu"
    if quick:
        return "quick_gelu"
    return "silu" if swiglu else "gelu"


def _gated(v) -> bool:
    return bool(v("swiglu")) or (not v("squared_relu") and bool(v("quick_geglu")))


def _bias_fusion(v) -> bool:
    """bias_activation_fusion: --bias-swiglu-fusion with --swiglu, else --bias-gelu-fusion (off without bias)."""
    if v("swiglu"):
        return bool(v("bias_swiglu_fusion"))
    return bool(v("bias_gelu_fusion")) and bool(v("add_bias_linear"))


def _rope_fusion(v) -> bool:
    """apply_rope_fusion after validate_args (off unless the position embedding is rope)."""
    rope = v("use_rotary_position_embeddings") or v("position_embedding_type") == "rope"
    return bool(rope) and bool(v("apply_rope_fusion"))


def _clamp(v):
    """activation_func_clamp_value where the SwiGLU clamp checks read it, else None."""
    value = v("activation_func_clamp_value")
    if value is None or _activation(v) != "silu" or not _gated(v):
        return None
    return float(value)


def _clamp_ok(v) -> bool:
    value = _clamp(v)
    return value is not None and math.isfinite(value) and value > 0


def _impl(v) -> str:
    """cuda_graph_impl after validate_args (the deprecated --enable-cuda-graph / --external-cuda-graph)."""
    enable, external = v("enable_cuda_graph"), v("external_cuda_graph")
    if enable or external:
        if (enable and external) or v("cuda_graph_impl") != "none":
            raise Undecided("cuda_graph_impl")  # validate_args refuses first
        return "local" if enable else "transformer_engine"
    return str(v("cuda_graph_impl"))


def _modules(v) -> list[str]:
    """The CUDA graph modules' names (the deprecated spellings, which rewrite other settings: undecided)."""
    if v("cuda_graph_scope_deprecated") is not None:
        raise Undecided("cuda_graph_scope")
    raw = v("cuda_graph_modules") or []
    names = raw.split(",") if isinstance(raw, str) else [_name(m) for m in raw]
    if any(n in ("full", "full_iteration", "full_iteration_inference") for n in names):
        raise Undecided("cuda_graph_modules")
    return names


def _graph_modules(v) -> list[str]:
    """The modules after the local implementation's moe_router / moe_preprocess pairing."""
    names = _modules(v)
    if _impl(v) == "local" and ("moe_router" in names or "moe_preprocess" in names):
        names = [*names, *(n for n in ("moe_router", "moe_preprocess") if n not in names)]
    return names


def _per_layer(v) -> bool:
    return _impl(v) in ("local", "transformer_engine")


def _pattern(text: str):
    """Megatron's `_eval_pattern` of a layer pattern ("([0]*3+[1])*2"): lists, ints, + and *, kept small."""
    if re.search(r"[^,\d\[\]\(\)\+\*]", text):
        raise Undecided("pattern")  # Megatron raises ValueError: Invalid pattern (argparse: MG004's)

    def value(node):
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, (ast.List, ast.Tuple)):
            items = [value(e) for e in node.elts]
            return items if isinstance(node, ast.List) else tuple(items)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult)):
            left, right = value(node.left), value(node.right)
            if isinstance(node.op, ast.Mult) and isinstance(left, int) and isinstance(right, int):
                if max(abs(left), abs(right)) > 100_000:
                    raise Undecided("pattern")
                return left * right
            if isinstance(node.op, ast.Mult):
                count = right if isinstance(right, int) else left
                if isinstance(count, int) and count * len(left if isinstance(right, int) else right) > 100_000:
                    raise Undecided("pattern")
            return left * right if isinstance(node.op, ast.Mult) else left + right
        raise Undecided("pattern")

    try:
        return value(ast.parse(text, mode="eval").body)
    except (SyntaxError, TypeError, RecursionError, MemoryError):
        raise Undecided("pattern") from None


def _freq_value(v, dest: str):
    """A --moe-layer-freq / --no-rope-freq value as Megatron's type function reads it: an int, or a pattern."""
    value = v(dest)
    if value is None or isinstance(value, (int, list)):
        return value
    text = str(value)
    if "[" in text:
        return _pattern(text)
    try:
        return int(text)
    except ValueError:
        raise Undecided(dest) from None


def _layer_freq(v):
    return _freq_value(v, "moe_layer_freq")


def _no_rope_freq(v):
    return _freq_value(v, "no_rope_freq")


def _padding_for_quantization(v) -> bool:
    return bool(v("moe_router_padding_for_quantization")) or bool(v("moe_router_padding_for_fp8"))


def _lb_type(v):
    value = v("moe_router_load_balancing_type")
    return value[0] if isinstance(value, list) and len(value) == 1 else value


def _first(*checks):
    """A row of a block: its own check fails and none of the block's earlier ones does."""
    *earlier, own = checks
    return lambda v: not any(c(v) for c in earlier) and own(v)


# the uneven pipeline's layer checks (sites 116-122) are MG101/MG102/MG103's

# bias_activation_fusion (sites 123-127)
def _c123(v):
    return _bias_fusion(v) and _activation(v) not in ("gelu", "silu", "quick_gelu")


def _c126(v):
    return _bias_fusion(v) and float(v("glu_linear_offset")) != 0.0 and _activation(v) != "quick_gelu"


def _c127(v):
    return _bias_fusion(v) and bool(v("use_te_activation_func"))


# the SwiGLU clamp (sites 131-134)
def _c131(v):
    return _clamp(v) is not None and not _clamp_ok(v)


def _c132(v):
    return _clamp(v) is not None and _experts(v) is None


def _c133(v):
    return _clamp(v) is not None and float(v("glu_linear_offset")) != 0.0


def _c134(v):
    return _clamp(v) is not None and bool(v("use_te_activation_func"))


# group-limited routing (sites 148-150)
def _c148(v):
    return bool(v("moe_router_group_topk")) and not v("moe_router_num_groups")


def _c149(v):
    experts = _experts(v)
    return (bool(v("moe_router_group_topk")) and bool(v("moe_router_num_groups")) and experts is not None
            and experts % v("moe_router_num_groups") != 0)


def _c150(v):
    return (bool(v("moe_router_group_topk")) and bool(v("moe_router_num_groups"))
            and v("moe_router_group_topk") > v("moe_router_num_groups"))


# per-layer CUDA graph modules (sites 158-164), under cuda_graph_impl != "none"
def _c158(v):
    return _impl(v) not in ("none", "full_iteration") and v("cpu_offloading_num_layers") > 0


def _c159(v):
    names = _graph_modules(v)
    return _per_layer(v) and "moe" in names and "moe_router" in names


def _c160(v):
    names = _graph_modules(v)
    return _per_layer(v) and "moe_preprocess" in names and "moe_router" not in names


def _c161(v):
    experts, names = _experts(v), _graph_modules(v)
    return _per_layer(v) and (experts is None or experts <= 1) and ("moe" in names or "moe_router" in names)


def _many_experts(v) -> bool:
    experts = _experts(v)
    return experts is not None and experts > 1


def _c162(v):
    freq = _layer_freq(v)
    every_layer_moe = freq == 1 or (isinstance(freq, list) and 0 not in freq)
    return _per_layer(v) and _many_experts(v) and every_layer_moe and "mlp" in _graph_modules(v)


def _dropping(v) -> bool:
    return v("moe_expert_capacity_factor") is None or not v("moe_pad_expert_input_to_capacity")


def _c163(v):
    return _per_layer(v) and _many_experts(v) and _dropping(v) and "moe" in _graph_modules(v)


def _c164(v):
    return (_per_layer(v) and _many_experts(v) and _dropping(v) and v("moe_token_dispatcher_type") == "alltoall"
            and (v("moe_expert_capacity_factor") is not None or bool(v("moe_router_padding_for_fp8")))
            and "moe_preprocess" in _graph_modules(v))


_GRAPH_MODULES = (_c158, _c159, _c160, _c161, _c162, _c163, _c164)


# recomputation under CUDA graphs (sites 165-170)
def _graphed(v) -> bool:
    return _impl(v) != "none" and not any(c(v) for c in _GRAPH_MODULES)


def _c165(v):
    granularity = _granularity(v)
    return _graphed(v) and bool(granularity) and granularity != "selective" and _impl(v) != "full_iteration"


def _selective_graphed(v) -> bool:
    return _graphed(v) and _granularity(v) == "selective"


def _full_graph(v) -> bool:
    return _impl(v) == "full_iteration" or not _graph_modules(v)


def _graphs(v, module: str) -> bool:
    """Whether the graph captures `module` (the whole layer or that module)."""
    return _full_graph(v) or module in _graph_modules(v)


def _c166(v):
    return (_selective_graphed(v) and _impl(v) == "transformer_engine" and "moe" in _recompute_modules(v)
            and "moe_router" in _graph_modules(v))


def _c167(v):
    return (_selective_graphed(v) and float(v("attention_dropout")) != 0.0 and _graphs(v, "attn")
            and "core_attn" in _recompute_modules(v))


def _c168(v):
    modules = _recompute_modules(v)
    return (_selective_graphed(v) and float(v("hidden_dropout")) != 0.0
            and ((_graphs(v, "mlp") and "mlp" in modules) or (_graphs(v, "moe") and "moe" in modules)))


def _c169(v):
    return (_selective_graphed(v) and v("moe_input_jitter_eps") is not None and _graphs(v, "moe")
            and "moe" in _recompute_modules(v))


def _gtp(v) -> bool:
    shards, tp = v("tensor_parallel_num_weight_shards"), v("tensor_model_parallel_size")
    return shards is not None and shards // tp > 1


def _c170(v):
    names = _graph_modules(v)
    return (_selective_graphed(v) and _gtp(v) and _impl(v) == "local"
            and (v("fp8") is not None or v("fp4") is not None)
            and v("moe_shared_expert_intermediate_size") is not None and not v("moe_shared_expert_overlap")
            and (_full_graph(v) or "moe" in names or "moe_router" in names)
            and "shared_experts" in _recompute_modules(v))


_RECOMPUTE = (_c165, _c166, _c167, _c168, _c169, _c170)


# fine-grained activation offloading under CUDA graphs (sites 171-176)
def _offloading(v) -> bool:
    return _graphed(v) and not any(c(v) for c in _RECOMPUTE) and bool(v("fine_grained_activation_offloading"))


def _offload_modules(v) -> set:
    return set(v("offload_modules") or [])


def _c171(v):
    return _offloading(v) and _impl(v) == "local" and bool(_offload_modules(v) - set(SELECTIVE_ONLY))


def _c172(v):
    return _offloading(v) and _impl(v) == "local" and not _graph_modules(v)


def _c173(v):
    modules = _offload_modules(v)
    partial = (_impl(v) == "local" and bool(modules) and modules <= set(SELECTIVE_ONLY)
               and "moe" not in _graph_modules(v))
    return _offloading(v) and _impl(v) not in ("transformer_engine", "full_iteration") and not partial


def _c174(v):
    return _offloading(v) and "moe" in _graph_modules(v)


def _c175(v):
    return _offloading(v) and v("cuda_graph_warmup_steps") <= 0


def _c176(v):
    inflight = v("fine_grained_offloading_max_inflight_offloads")
    return _offloading(v) and _impl(v) == "full_iteration" and (inflight is None or inflight < 0)


# --overlap-moe-expert-parallel-comm (sites 180-191)
def _overlap(v) -> bool:
    return bool(v("overlap_moe_expert_parallel_comm"))


def _c180(v):
    return _overlap(v) and v("pipeline_model_parallel_size") > 1 and _vpp(v) is None


def _c181(v):
    return _overlap(v) and v("expert_model_parallel_size") <= 1


def _c182(v):
    return _overlap(v) and v("moe_token_dispatcher_type") not in ("alltoall", "flex")


def _c183(v):
    return _overlap(v) and _granularity(v) == "full"


def _c184(v):
    return _overlap(v) and v("recompute_method") is not None


def _c185(v):
    return _overlap(v) and v("recompute_num_layers") is not None


def _c186(v):
    return _overlap(v) and "moe" in _recompute_modules(v)


def _c187(v):
    return _overlap(v) and not (v("bf16") or v("fp16"))


def _c188(v):
    return _overlap(v) and bool(v("moe_shared_expert_overlap"))


def _c189(v):
    _no_hybrid(v)
    return _overlap(v) and v("mtp_num_layers") not in (None, 0, 1)


def _c190(v):
    return (_overlap(v) and v("moe_token_dispatcher_type") == "flex" and v("moe_flex_dispatcher_backend") == "ncclep"
            and bool(v("fine_grained_activation_offloading")) and "expert_fc1" in (v("offload_modules") or []))


def _c191(v):
    names = _graph_modules(v)
    return _overlap(v) and _impl(v) == "transformer_engine" and ("moe" in names or "mlp" in names)


_OVERLAP = (_c180, _c181, _c182, _c183, _c184, _c185, _c186, _c187, _c188, _c189, _c190, _c191)


# --no-rope-freq (sites 204-206)
def _c204(v):
    return bool(_no_rope_freq(v)) and bool(v("flash_decode"))


def _c205(v):
    freq = _no_rope_freq(v)
    return bool(freq) and isinstance(freq, int) and _num_layers(v) % freq != 0


def _c206(v):
    freq = _no_rope_freq(v)
    return bool(freq) and isinstance(freq, list) and len(freq) != _num_layers(v)


# --transformer-impl inference_optimized (sites 207-210)
def _inference_optimized(v) -> bool:
    return v("transformer_impl") == "inference_optimized"


def _c207(v):
    return _inference_optimized(v) and v("normalization") != "RMSNorm"


def _c208(v):
    return _inference_optimized(v) and bool(v("layernorm_zero_centered_gamma"))


def _c209(v):
    return _inference_optimized(v) and bool(v("add_bias_linear"))


def _c210(v):
    return _inference_optimized(v) and (bool(v("add_qkv_bias")) or bool(v("add_bias_linear")))


_INFERENCE_OPTIMIZED = (_c207, _c208, _c209, _c210)


# DSA (sites 212-213): gated on MLA, which DSA's earlier checks ask for
def _dsa(v) -> bool:
    return _mla(v) and v("experimental_attention_variant") == "dsa"


def _c212(v):
    return _dsa(v) and _rope_fusion(v)


def _cp_comm_types(v) -> list:
    types = v("cp_comm_type")
    return list(types) if isinstance(types, list) else [types]


def _c213(v):
    return (_dsa(v) and v("context_parallel_size") > 1
            and not all(t is not None and t.replace("_", "").lower() == "allgather" for t in _cp_comm_types(v)))


# --batch-invariant-mode (sites 219-228)
def _invariant(v) -> bool:
    return bool(v("batch_invariant_mode"))


def _c219(v):
    return _invariant(v) and not v("bf16")


def _c220(v):
    return _invariant(v) and _name(v("attention_backend")) != "flash"


def _c221(v):
    return _invariant(v) and v("flash_attention_version") not in (3, 4)


def _c222(v):
    return _invariant(v) and v("context_parallel_size") != 1


def _c223(v):
    return _invariant(v) and float(v("attention_dropout")) != 0.0


def _invariant_moe(v) -> bool:
    return _invariant(v) and (_experts(v) or 0) > 0


def _c224(v):
    return (_invariant_moe(v) and not _inference_optimized(v)
            and v("moe_token_dispatcher_type") != "alltoall")


def _needs_deepgemm(v) -> bool:
    """Site 225 (DeepGEMM installed or not) lies between: undecided where the backend needs it."""
    needs = v("batch_invariant_backend") in ("deepgemm", "triton") or (
        _inference_optimized(v) and _name(v("inference_grouped_gemm_backend")).lower() == "torch")
    if needs and _invariant_moe(v):
        raise Undecided("DeepGEMM")
    return False


def _c226(v):
    return _invariant_moe(v) and (v("fp8") is not None or v("fp4") is not None)


def _c227(v):
    return _invariant_moe(v) and (bool(v("moe_permute_fusion")) or bool(v("moe_permute_fusion_into_hybridep")))


def _c228(v):
    return _invariant_moe(v) and (bool(v("moe_pad_expert_input_to_capacity"))
                                  or bool(v("moe_pad_experts_for_cuda_graph_inference")))


# MLATransformerConfig (sites 1-3)
def _mla1(v):
    rope_type = v("rope_type") or "yarn"
    return _mla(v) and _rope_fusion(v) and rope_type != "yarn"


def _mla2(v):
    return _mla(v) and bool(v("attention_output_gate"))


def _mla3(v):
    return _mla(v) and bool(v("cache_mla_latents")) and _rope_fusion(v)


# resolve_tensor_parallel_weight_shards (validate_args: the dense layers' shards, then the experts')
def _shards(v, expert: bool):
    tp = v("tensor_model_parallel_size")
    if expert:
        return v("expert_tensor_parallel_num_weight_shards"), v("expert_tensor_parallel_size") or tp
    return v("tensor_parallel_num_weight_shards"), tp


def _too_few(v, expert: bool) -> bool:
    shards, tp = _shards(v, expert)
    return shards is not None and shards < tp


def _indivisible(v, expert: bool) -> bool:
    shards, tp = _shards(v, expert)
    return shards is not None and shards >= tp and shards % tp != 0


def _shards_ok(v, expert: bool) -> bool:
    return not _too_few(v, expert) and not _indivisible(v, expert)


def _defer(v) -> bool:
    return bool(v("defer_embedding_wgrad_compute"))


TC = "megatron/core/transformer/transformer_config.py:TransformerConfig.__post_init__:"
MLA = "megatron/core/transformer/transformer_config.py:MLATransformerConfig.__post_init__:"
MPC = "megatron/core/model_parallel_config.py:"
CONFIG = "config"

ROWS = [
    Refusal(TC + "123", "squared_relu", _c123,
            "it raises ValueError: When bias_activation_fusion is True, activation function should be either "
            "gelu, swiglu, or quick_geglu",
            "add `--no-bias-gelu-fusion` (or `--disable-bias-linear`)", involved=("bias_gelu_fusion",), stage=CONFIG),
    Refusal(TC + "126", "glu_linear_offset", _first(_c123, _c126),
            "it raises ValueError: When bias_activation_fusion is True and glu_linear_offset is non-zero, "
            "activation function must be quick_gelu",
            "drop `--glu-linear-offset`, use `--quick-geglu`, or turn the bias activation fusion off "
            "(`--no-bias-gelu-fusion` / `--no-bias-swiglu-fusion`)", stage=CONFIG),
    Refusal(TC + "127", "use_te_activation_func", _first(_c123, _c126, _c127),
            "it raises ValueError: bias_activation_fusion and use_te_activation_func cannot be both true",
            "drop `--use-te-activation-func`, or turn the bias activation fusion off "
            "(`--no-bias-gelu-fusion` / `--no-bias-swiglu-fusion`, or `--disable-bias-linear`)", stage=CONFIG),
    Refusal(TC + "128", "fused_residual_rmsnorm",
            lambda v: bool(v("fused_residual_rmsnorm")) and v("normalization") != "RMSNorm",
            "it raises ValueError: fused_residual_rmsnorm is only supported when normalization is RMSNorm",
            "add `--normalization RMSNorm`, or drop `--fused-residual-rmsnorm`", involved=("normalization",),
            stage=CONFIG),
    Refusal(TC + "129", "use_te_activation_func",
            lambda v: (not _bias_fusion(v) and bool(v("use_te_activation_func"))
                       and _activation(v) in ("squared_relu", "quick_gelu")),
            "it raises ValueError: TransformerEngine only support gelu, geglu, silu, swiglu, relu, reglu",
            "drop `--use-te-activation-func` with `--squared-relu` or `--quick-geglu`", stage=CONFIG),
    Refusal(TC + "131", "activation_func_clamp_value", _c131,
            "it raises ValueError: activation_func_clamp_value for SwiGLU must be finite and greater than zero",
            "give `--activation-func-clamp-value` a positive number, or drop it", stage=CONFIG),
    Refusal(TC + "132", "activation_func_clamp_value", _first(_c131, _c132),
            "it raises ValueError: activation_func_clamp_value for SwiGLU is only supported with MoE",
            "drop `--activation-func-clamp-value` on a dense model (or add `--num-experts`)", stage=CONFIG),
    Refusal(TC + "133", "activation_func_clamp_value",
            lambda v: not _bias_fusion(v) and _first(_c131, _c132, _c133)(v),
            "it raises ValueError: glu_linear_offset must be zero when activation_func_clamp_value is set "
            "for SwiGLU", "drop `--glu-linear-offset` or `--activation-func-clamp-value`",
            involved=("glu_linear_offset",), stage=CONFIG),
    Refusal(TC + "134", "activation_func_clamp_value",
            lambda v: not _bias_fusion(v) and _first(_c131, _c132, _c133, _c134)(v),
            "it raises ValueError: use_te_activation_func must be False when activation_func_clamp_value is not "
            "None for SwiGLU", "drop `--use-te-activation-func` or `--activation-func-clamp-value`",
            involved=("use_te_activation_func",), stage=CONFIG),
    Refusal(TC + "138", "rotary_interleaved", lambda v: _mla(v) and bool(v("rotary_interleaved")),
            "it raises ValueError: rotary_interleaved does not work with multi_latent_attention",
            "drop `--rotary-interleaved` with `--multi-latent-attention`", involved=("multi_latent_attention",),
            stage=CONFIG),
    Refusal(TC + "139", "mup_base_hidden_size",
            lambda v: bool(v("use_mup")) and v("mup_base_hidden_size") is not None and v("mup_base_hidden_size") <= 0,
            "it asserts `self.mup_base_hidden_size > 0`: --mup-base-hidden-size must be positive",
            "give `--mup-base-hidden-size` a positive width (or leave it out: the hidden size)",
            involved=("use_mup",), stage=CONFIG),
    Refusal(TC + "140", "num_experts",
            lambda v: (_experts(v) is not None and bool(v("add_bias_linear"))
                       and (v("expert_tensor_parallel_size") or v("tensor_model_parallel_size")) != 1),
            "it asserts `self.expert_tensor_parallel_size == 1`: Bias in Moe is only supported when ETP==1",
            "add `--disable-bias-linear`, or `--expert-tensor-parallel-size 1`",
            involved=("expert_tensor_parallel_size", "tensor_model_parallel_size"), stage=CONFIG),
    Refusal(TC + "141", "moe_router_enable_expert_bias",
            lambda v: (bool(v("moe_router_enable_expert_bias"))
                       and v("moe_router_score_function") not in ("sigmoid", "sqrtsoftplus")),
            "it raises ValueError: Expert bias for aux-loss-free routing only supports 'sigmoid' and "
            "'sqrtsoftplus' score functions",
            "add `--moe-router-score-function sigmoid` (or sqrtsoftplus), or drop `--moe-router-enable-expert-bias`",
            involved=("moe_router_score_function",), stage=CONFIG),
    Refusal(TC + "144", "moe_router_padding_for_quantization",
            lambda v: (_padding_for_quantization(v)
                       and v("fp8") is None and v("fp4") is None),
            "it raises ValueError: fp8/fp4 must be specified when moe_router_padding_for_quantization is True",
            "add `--fp8-format` or `--fp4-format`, or drop the router padding", stage=CONFIG),
    Refusal(TC + "145", "moe_token_dispatcher_type",
            lambda v: (_padding_for_quantization(v)
                       and (v("fp8") is not None or v("fp4") is not None)
                       and v("moe_token_dispatcher_type") in ("allgather", "alltoall_seq")),
            "it raises ValueError: allgather and alltoall_seq dispatcher does not support "
            "moe_router_padding_for_quantization",
            "use `--moe-token-dispatcher-type alltoall` (or flex), or drop the router padding",
            involved=("moe_router_padding_for_quantization",), stage=CONFIG),
    Refusal(TC + "146", "moe_router_topk",
            lambda v: (v("moe_router_topk") == 1
                       and v("moe_router_score_function") == "softmax" and not v("moe_router_pre_softmax")
                       and _lb_type(v) != "sinkhorn"),
            "it raises ValueError: Please use --moe-router-pre-softmax when topk is 1",
            "add `--moe-router-pre-softmax` (a softmax over one expert has no gradient)", stage=CONFIG),
    Refusal(TC + "148", "moe_router_group_topk", _c148,
            "it raises ValueError: When using group limited routing, moe_router_num_groups must be specified",
            "add `--moe-router-num-groups`", stage=CONFIG),
    Refusal(TC + "149", "moe_router_num_groups", _c149,
            "it asserts `self.num_moe_experts % self.moe_router_num_groups == 0`: num_moe_experts should be "
            "divisible by moe_router_num_groups",
            "give `--moe-router-num-groups` a divisor of `--num-experts`", involved=("num_experts",), stage=CONFIG),
    Refusal(TC + "150", "moe_router_group_topk", lambda v: _experts(v) is not None and _first(_c149, _c150)(v),
            "it asserts `self.moe_router_group_topk <= self.moe_router_num_groups`: moe_router_group_topk should "
            "be smaller than moe_router_num_groups",
            "give `--moe-router-group-topk` at most `--moe-router-num-groups`", involved=("moe_router_num_groups",),
            stage=CONFIG),
    Refusal(TC + "158", "cpu_offloading_num_layers", _c158,
            "it raises ValueError: CUDA graphs not supported with CPU offloading",
            "drop `--cpu-offloading-num-layers`, or use `--cuda-graph-impl full_iteration` or none",
            involved=("cuda_graph_impl",), stage=CONFIG),
    Refusal(TC + "159", "cuda_graph_modules", _first(_c158, _c159),
            "it asserts: cuda_graph_modules must not contain both moe and moe_router (with the local "
            "implementation moe_preprocess brings moe_router)",
            "capture either moe or moe_router (and moe_preprocess)", stage=CONFIG),
    Refusal(TC + "160", "cuda_graph_modules", _first(_c158, _c159, _c160),
            "it asserts: moe_preprocess cuda graph is only supported with moe_router cuda graph",
            "add moe_router to `--cuda-graph-modules`", stage=CONFIG),
    Refusal(TC + "161", "cuda_graph_modules", _first(_c158, _c159, _c160, _c161),
            "it asserts: moe cuda graph is only supported for MoE",
            "drop moe and moe_router from `--cuda-graph-modules` on a dense model", stage=CONFIG),
    Refusal(TC + "162", "cuda_graph_modules", _first(_c158, _c159, _c160, _c161, _c162),
            "it asserts: mlp cuda graph is only supported for dense layers, but not found in the model",
            "drop mlp from `--cuda-graph-modules` (every layer is MoE)", involved=("num_experts",), stage=CONFIG),
    Refusal(TC + "163", "cuda_graph_modules", _first(_c158, _c159, _c160, _c161, _c162, _c163),
            "it asserts: moe cuda graph is only supported with drop-padding MoE",
            "add `--moe-expert-capacity-factor` and `--moe-pad-expert-input-to-capacity`, or capture moe_router "
            "instead of moe", stage=CONFIG),
    Refusal(TC + "164", "cuda_graph_modules", _first(*_GRAPH_MODULES),
            "it asserts: moe_preprocess cuda graph is not supported when there are DtoH copies and "
            "synchronizations in the preprocess step (the alltoall dispatcher with a capacity factor, unpadded)",
            "drop moe_preprocess from `--cuda-graph-modules` (with the local implementation also moe_router), "
            "or add `--moe-pad-expert-input-to-capacity`", involved=("moe_expert_capacity_factor",), stage=CONFIG),
    Refusal(TC + "165", "recompute_granularity", _c165,
            "it asserts `self.cuda_graph_impl == 'full_iteration'`: full recompute is only supported with full "
            "iteration CUDA graph", "use selective recomputation, or `--cuda-graph-impl full_iteration`",
            involved=("cuda_graph_impl",), stage=CONFIG),
    Refusal(TC + "166", "recompute_modules", _first(_c165, _c166),
            "it asserts: moe recompute is not supported with moe_router CUDA graph with --cuda-graph-impl "
            "transformer_engine", "drop moe from `--recompute-modules` or moe_router from `--cuda-graph-modules`",
            involved=("cuda_graph_modules",), stage=CONFIG),
    Refusal(TC + "167", "recompute_granularity", _first(_c165, _c166, _c167),
            "it asserts: attention dropout is not supported with graphed attention recomputation (core_attn is "
            "recomputed by default)",
            "set `--attention-dropout 0`, leave core_attn out of `--recompute-modules`, or capture modules "
            "without attn", involved=("attention_dropout", "cuda_graph_impl"), stage=CONFIG),
    Refusal(TC + "168", "recompute_modules", _first(_c165, _c166, _c167, _c168),
            "it asserts: hidden dropout is not supported with graphed MLP/MoE recomputation",
            "set `--hidden-dropout 0`, or leave mlp/moe out of `--recompute-modules` (or of the graph)",
            involved=("hidden_dropout", "cuda_graph_impl"), stage=CONFIG),
    Refusal(TC + "169", "moe_input_jitter_eps", _first(_c165, _c166, _c167, _c168, _c169),
            "it asserts: moe_input_jitter_eps is not supported with graphed moe recomputation",
            "drop `--moe-input-jitter-eps`, or leave moe out of `--recompute-modules` (or of the graph)",
            involved=("recompute_modules",), stage=CONFIG),
    Refusal(TC + "170", "recompute_modules", _first(*_RECOMPUTE),
            "it asserts: GTP + local CUDA graphs that capture shared_experts (moe_router/moe scope) cannot "
            "recompute it under fp8/fp4",
            "drop shared_experts from `--recompute-modules`, or use `--cuda-graph-impl full_iteration`",
            involved=("tensor_parallel_num_weight_shards", "cuda_graph_impl"), stage=CONFIG),
    Refusal(TC + "171", "offload_modules", _c171,
            "it asserts: fine-grained activation offloading with cuda_graph_impl='local' only supports "
            "offload_modules 'expert_fc1', 'moe_act', and 'fused_group_mlp'",
            "offload only expert_fc1, moe_act or fused_group_mlp, or use `--cuda-graph-impl transformer_engine`",
            involved=("cuda_graph_impl",), stage=CONFIG),
    Refusal(TC + "172", "cuda_graph_modules", _first(_c171, _c172),
            "it asserts: fine-grained activation offloading with cuda_graph_impl='local' is not supported with "
            "whole-layer CUDA graph capture",
            "name the modules to capture in `--cuda-graph-modules`", involved=("fine_grained_activation_offloading",),
            stage=CONFIG),
    Refusal(TC + "173", "fine_grained_activation_offloading", _first(_c171, _c172, _c173),
            "it asserts: fine-grained activation offloading is only supported with transformer_engine CUDA graph "
            "implementation or local CUDA graph implementation with partial MoE offload",
            "use `--cuda-graph-impl transformer_engine`, or do not capture the whole MoE",
            involved=("cuda_graph_impl",), stage=CONFIG),
    Refusal(TC + "174", "cuda_graph_modules", _first(_c171, _c172, _c173, _c174),
            "it asserts: Token-drop MoE is temporarily not supported with activation offloading",
            "drop moe from `--cuda-graph-modules`", involved=("fine_grained_activation_offloading",), stage=CONFIG),
    Refusal(TC + "175", "cuda_graph_warmup_steps", _first(_c171, _c172, _c173, _c174, _c175),
            "it asserts `self.cuda_graph_warmup_steps > 0`: cuda_graph_warmup_steps must be greater than 0 when "
            "enabling fine-grained activation offloading",
            "give `--cuda-graph-warmup-steps` at least 1", involved=("fine_grained_activation_offloading",),
            stage=CONFIG),
    Refusal(TC + "176", "fine_grained_offloading_max_inflight_offloads",
            _first(_c171, _c172, _c173, _c174, _c175, _c176),
            "it asserts: fine_grained_offloading_max_inflight_offloads must be a non-negative integer when using "
            "fine-grained activation offloading with full-iteration CUDA graphs",
            "give `--fine-grained-offloading-max-inflight-offloads` 0 or more", involved=("cuda_graph_impl",),
            stage=CONFIG),
    *(Refusal(TC + str(180 + i), at, _first(*_OVERLAP[:i + 1]), says, fix, involved=("overlap_moe_expert_parallel_comm",),
              stage=CONFIG)
      for i, (at, says, fix) in enumerate([
          ("pipeline_model_parallel_size",
           "it asserts: If enabling EP A2A overlap, virtual_pipeline_model_parallel_size must be specified when "
           "pipeline_model_parallel_size > 1", "add `--num-virtual-stages-per-pipeline-rank`"),
          ("expert_model_parallel_size",
           "it asserts `self.expert_model_parallel_size > 1`: overlap_moe_expert_parallel_comm is only supported "
           "with expert model parallelism", "add `--expert-model-parallel-size` above 1"),
          ("moe_token_dispatcher_type",
           "it asserts: overlap_moe_expert_parallel_comm is supported with alltoall/flex token dispatcher",
           "use `--moe-token-dispatcher-type alltoall` (or flex)"),
          ("recompute_granularity",
           "it asserts `self.recompute_granularity != 'full'`: disable full recomputation when enabling "
           "overlap_moe_expert_parallel_comm", "drop the full recomputation"),
          ("recompute_method",
           "it asserts `self.recompute_method is None`: disable recomputation method when enabling "
           "overlap_moe_expert_parallel_comm", "drop `--recompute-method`"),
          ("recompute_num_layers",
           "it asserts `self.recompute_num_layers is None`: recompute_num_layers must be None when enabling "
           "overlap_moe_expert_parallel_comm", "drop `--recompute-num-layers`"),
          ("recompute_modules",
           "it asserts `'moe' not in self.recompute_modules`: disable moe in recompute_modules when enabling "
           "overlap_moe_expert_parallel_comm", "drop moe from `--recompute-modules`"),
          ("bf16",
           "it asserts `self.bf16 or self.fp16`: overlap_moe_expert_parallel_comm is only supported with bf16 or "
           "fp16 model", "add `--bf16` (or `--fp16`)"),
          ("moe_shared_expert_overlap",
           "it asserts `not self.moe_shared_expert_overlap`: disable moe_shared_expert_overlap when enabling "
           "overlap_moe_expert_parallel_comm", "drop `--moe-shared-expert-overlap`"),
          ("mtp_num_layers",
           "it asserts `self.mtp_num_layers in (None, 0, 1)`: MTP supports at most one layer when enabling "
           "overlap_moe_expert_parallel_comm", "use `--mtp-num-layers 1`"),
          ("offload_modules",
           "it asserts: overlap_moe_expert_parallel_comm with ncclep does not support offloading 'expert_fc1'",
           "drop expert_fc1 from `--offload-modules`"),
          ("cuda_graph_modules",
           "it asserts: CUDA graph scope on moe and mlp is not supported with overlap_moe_expert_parallel_comm",
           "drop moe and mlp from `--cuda-graph-modules`"),
      ])),
    Refusal(TC + "192", "delay_wgrad_compute", lambda v: bool(v("delay_wgrad_compute")) and not _overlap(v),
            "it asserts `self.overlap_moe_expert_parallel_comm`: overlap_moe_expert_parallel_comm must be enabled "
            "when enabling delay_wgrad_compute",
            "add `--overlap-moe-expert-parallel-comm`, or drop `--delay-wgrad-compute`", stage=CONFIG),
    Refusal(TC + "194", "overlap_dispatch_backward_with_experts_wgrad",
            lambda v: bool(v("overlap_dispatch_backward_with_experts_wgrad")) and _overlap(v),
            "it asserts `not self.overlap_moe_expert_parallel_comm`: overlap_moe_expert_parallel_comm must be "
            "disabled when enabling overlap_dispatch_backward_with_experts_wgrad",
            "use one of the two overlaps", involved=("overlap_moe_expert_parallel_comm",), stage=CONFIG),
    Refusal(TC + "197", "ep_overlap_early_attn_memory_release",
            lambda v: bool(v("ep_overlap_early_attn_memory_release")) and not _overlap(v),
            "it asserts `self.overlap_moe_expert_parallel_comm`: overlap_moe_expert_parallel_comm must be enabled "
            "when enabling ep_overlap_early_attn_memory_release",
            "add `--overlap-moe-expert-parallel-comm`, or drop `--ep-overlap-early-attn-memory-release`",
            stage=CONFIG),
    Refusal(TC + "198", "cp_comm_type",
            lambda v: (v("context_parallel_size") > 1
                       and len(_cp_comm_types(v)) != 1 and len(_cp_comm_types(v)) != _num_layers(v)),
            "it asserts `len(self.cp_comm_type) == self.num_layers`: Length of cp_comm_type should equal to the "
            "total number of transformer layers",
            "give `--cp-comm-type` one type, or one per layer", involved=("num_layers", "context_parallel_size"),
            stage=CONFIG),
    Refusal(TC + "200", "pipeline_model_parallel_size", lambda v: v("pipeline_model_parallel_size") < 0,
            "it asserts `self.pipeline_model_parallel_size > 0`: Pipeline model parallel size must be larger than 0 "
            "(validate_args divides by a negative size without complaint)",
            "give `--pipeline-model-parallel-size` a positive size", stage=CONFIG),
    Refusal(TC + "204", "no_rope_freq", _c204,
            "it asserts `not self.flash_decode`: flash_decode cannot be used with no_rope",
            "drop `--flash-decode` or `--no-rope-freq`", involved=("flash_decode",), stage=CONFIG),
    Refusal(TC + "205", "no_rope_freq", _first(_c204, _c205),
            "it asserts `self.num_layers % self.no_rope_freq == 0`: no_rope_freq should be divisible by num_layers",
            "give `--no-rope-freq` a divisor of `--num-layers`", involved=("num_layers",), stage=CONFIG),
    Refusal(TC + "206", "no_rope_freq", _first(_c204, _c206),
            "it asserts `len(self.no_rope_freq) == self.num_layers`: Length of no_rope list must match the "
            "number of layers", "give `--no-rope-freq` one entry per layer", involved=("num_layers",), stage=CONFIG),
    Refusal(TC + "207", "transformer_impl", _c207,
            "it asserts `self.normalization == 'RMSNorm'` (no message)",
            "add `--normalization RMSNorm` with `--transformer-impl inference_optimized`",
            involved=("normalization",), stage=CONFIG),
    Refusal(TC + "208", "layernorm_zero_centered_gamma", _first(_c207, _c208),
            "it asserts `not self.layernorm_zero_centered_gamma` (no message): inference_optimized has no "
            "zero-centered layernorm", "drop `--apply-layernorm-1p`", involved=("transformer_impl",), stage=CONFIG),
    Refusal(TC + "209", "add_bias_linear", _first(_c207, _c208, _c209),
            "it asserts `not self.add_bias_linear` (no message): inference_optimized has no linear bias",
            "add `--disable-bias-linear`", involved=("transformer_impl",), stage=CONFIG),
    Refusal(TC + "210", "add_qkv_bias", _first(*_INFERENCE_OPTIMIZED),
            "it asserts `not self.add_qkv_bias` (no message): inference_optimized has no QKV bias",
            "drop `--add-qkv-bias`", involved=("transformer_impl",), stage=CONFIG),
    Refusal(TC + "212", "apply_rope_fusion", _c212,
            "it asserts `not self.apply_rope_fusion`: RoPE fusion is not supported for DSAttention",
            "add `--no-rope-fusion`", involved=("experimental_attention_variant",), stage=CONFIG),
    Refusal(TC + "213", "cp_comm_type", _first(_c212, _c213),
            "it asserts: DSAttention context parallelism currently supports cp_comm_type=allgather only",
            "use `--cp-comm-type allgather`", involved=("experimental_attention_variant", "context_parallel_size"),
            stage=CONFIG),
    Refusal(TC + "214", "inference_fuse_tp_communication",
            lambda v: bool(v("inference_fuse_tp_communication")) and not _inference_optimized(v),
            "it asserts `self.transformer_impl == 'inference_optimized'`: inference_fuse_tp_communication is only "
            "supported for inference_optimized transformer implementation",
            "drop `--inference-fuse-tp-communication`, or use `--transformer-impl inference_optimized`",
            involved=("transformer_impl",), stage=CONFIG),
    Refusal(TC + "215", "inference_fuse_tp_communication",
            lambda v: (bool(v("inference_fuse_tp_communication")) and _inference_optimized(v)
                       and not any(c(v) for c in _INFERENCE_OPTIMIZED) and _experts(v) is not None),
            "it asserts `self.num_moe_experts is None`: --inference-fuse-tp-communication is not supported for MoE "
            "models", "drop `--inference-fuse-tp-communication` on a MoE model", involved=("num_experts",),
            stage=CONFIG),
    Refusal(TC + "216", "inference_disable_triton_nvls_kernels",
            lambda v: bool(v("inference_disable_triton_nvls_kernels")) and not _inference_optimized(v),
            "it asserts `self.transformer_impl == 'inference_optimized'`: inference_disable_triton_nvls_kernels "
            "is only supported for inference_optimized transformer implementation",
            "drop `--inference-disable-triton-nvls-kernels`, or use `--transformer-impl inference_optimized`",
            involved=("transformer_impl",), stage=CONFIG),
    Refusal(TC + "219", "batch_invariant_mode", _c219,
            "it asserts `self.params_dtype == torch.bfloat16`: Batch invariant mode supports BF16 model parameters "
            "only", "add `--bf16`", stage=CONFIG),
    Refusal(TC + "220", "attention_backend", _first(_c219, _c220),
            "it asserts `self.attention_backend == AttnBackend.flash`: Batch invariant mode only supports "
            "FlashAttention (--attention-backend flash)", "add `--attention-backend flash`",
            involved=("batch_invariant_mode",), stage=CONFIG),
    Refusal(TC + "221", "flash_attention_version", _first(_c219, _c220, _c221),
            "it asserts `self.flash_attention_version in (3, 4)`: Batch invariant mode requires "
            "--flash-attention-version 3 or 4", "add `--flash-attention-version 3` (or 4)",
            involved=("batch_invariant_mode",), stage=CONFIG),
    Refusal(TC + "222", "context_parallel_size", _first(_c219, _c220, _c221, _c222),
            "it asserts `self.context_parallel_size == 1`: Batch invariant mode does not support context "
            "parallelism", "drop `--context-parallel-size`", involved=("batch_invariant_mode",), stage=CONFIG),
    Refusal(TC + "223", "attention_dropout", _first(_c219, _c220, _c221, _c222, _c223),
            "it asserts `self.attention_dropout == 0.0`: Batch invariant mode does not support attention dropout "
            "(its default is 0.1)", "add `--attention-dropout 0`", involved=("batch_invariant_mode",), stage=CONFIG),
    Refusal(TC + "224", "moe_token_dispatcher_type", _first(_c219, _c220, _c221, _c222, _c223, _c224),
            "it asserts `self.moe_token_dispatcher_type == 'alltoall'`: Batch-invariant MoE training requires "
            "moe_token_dispatcher_type='alltoall'", "use `--moe-token-dispatcher-type alltoall`",
            involved=("batch_invariant_mode",), stage=CONFIG),
    *(Refusal(TC + site, at, _first(_c219, _c220, _c221, _c222, _c223, _c224, _needs_deepgemm, *earlier, own),
              says, fix, involved=("batch_invariant_mode",), stage=CONFIG)
      for site, at, earlier, own, says, fix in [
          ("226", "fp8", (), _c226,
           "it asserts `not (self.fp8 or self.fp4)`: Batch-invariant MoE is bf16-only",
           "drop `--fp8-format` / `--fp4-format`"),
          ("227", "moe_permute_fusion", (_c226,), _c227,
           "it asserts: Batch-invariant MoE requires the unfused permute/unpermute path",
           "drop `--moe-permute-fusion` / `--moe-permute-fusion-into-hybridep`"),
          ("228", "moe_pad_expert_input_to_capacity", (_c226, _c227), _c228,
           "it asserts: Batch-invariant MoE supports dynamic dropless routing only",
           "drop the MoE capacity/expert padding"),
      ]),
    Refusal(MLA + "1", "rope_type", _mla1,
            "it raises ValueError: apply_rope_fusion for MLA only works with YARN RoPE",
            "add `--no-rope-fusion`, or use `--rope-type yarn`", involved=("multi_latent_attention",), stage=CONFIG),
    Refusal(MLA + "2", "attention_output_gate", lambda v: not _mla1(v) and _mla2(v),
            "it raises NotImplementedError: Output gate is not supported for MLA yet",
            "drop `--attention-output-gate` with `--multi-latent-attention`", involved=("multi_latent_attention",),
            stage=CONFIG),
    Refusal(MLA + "3", "cache_mla_latents", lambda v: not _mla1(v) and not _mla2(v) and _mla3(v),
            "it asserts `self.apply_rope_fusion is False`: Rope Fusion is not compatible with caching latents",
            "add `--no-rope-fusion` with `--cache-mla-latents`", involved=("multi_latent_attention",), stage=CONFIG),
    Refusal(MPC + "resolve_tensor_parallel_weight_shards:1", "tensor_parallel_num_weight_shards",
            lambda v: _too_few(v, False) or (_shards_ok(v, False) and _too_few(v, True)),
            "it raises ValueError: tensor_parallel_num_weight_shards must be >= tensor_model_parallel_size "
            "(the expert shards: >= expert_tensor_parallel_size)",
            "give the number of weight shards a multiple of the (expert) tensor parallel size",
            involved=("expert_tensor_parallel_num_weight_shards", "tensor_model_parallel_size")),
    Refusal(MPC + "resolve_tensor_parallel_weight_shards:2", "tensor_parallel_num_weight_shards",
            lambda v: _indivisible(v, False) or (_shards_ok(v, False) and _indivisible(v, True)),
            "it raises ValueError: tensor_parallel_num_weight_shards must be divisible by "
            "tensor_model_parallel_size (the expert shards: by expert_tensor_parallel_size)",
            "give the number of weight shards a multiple of the (expert) tensor parallel size",
            involved=("expert_tensor_parallel_num_weight_shards", "tensor_model_parallel_size")),
    Refusal(MPC + "ModelParallelConfig.__post_init__:1", "sequence_parallel",
            lambda v: bool(v("sequence_parallel")) and v("tensor_model_parallel_size") < 0,
            "it raises ValueError: Cannot use sequence parallelism without tensor parallelism (validate_args turns "
            "--sequence-parallel off only at tensor parallel size 1, not below)",
            "give `--tensor-model-parallel-size` a positive size", involved=("tensor_model_parallel_size",),
            stage=CONFIG),
    Refusal(MPC + "ModelParallelConfig.__post_init__:3", "defer_embedding_wgrad_compute",
            lambda v: _defer(v) and v("pipeline_model_parallel_size") == 1,
            "it raises ValueError: Cannot defer embedding wgrad compute when pipeline model parallel is not used",
            "drop `--defer-embedding-wgrad-compute` without pipeline parallelism", stage=CONFIG),
    Refusal(MPC + "ModelParallelConfig.__post_init__:4", "defer_embedding_wgrad_compute",
            lambda v: _defer(v) and v("pipeline_model_parallel_size") != 1 and not v("gradient_accumulation_fusion"),
            "it raises ValueError: Cannot defer embedding wgrad compute when gradient accumulation fusion is not "
            "used", "drop `--no-gradient-accumulation-fusion` or `--defer-embedding-wgrad-compute`",
            involved=("gradient_accumulation_fusion",), stage=CONFIG),
    Refusal(MPC + "ModelParallelConfig.__post_init__:5", "wgrad_deferral_limit",
            lambda v: (_defer(v) and v("pipeline_model_parallel_size") != 1 and bool(v("gradient_accumulation_fusion"))
                       and v("wgrad_deferral_limit") < 0),
            "it raises ValueError: Wgrad deferral limit should be greater than or equal to 0 when it is enabled",
            "give `--wgrad-deferral-limit` 0 or more", involved=("defer_embedding_wgrad_compute",), stage=CONFIG),
]
