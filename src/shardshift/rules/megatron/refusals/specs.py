"""MG301 rows: the layer specs `pretrain`'s model builder asks for (megatron/core/models/gpt/gpt_layer_specs.py, the
experimental attention variants, the MLA/DSA norm config, the hybrid pattern's pipeline split), before any weight.

`setup_model_and_optimizer` builds the model from the config container: a GPT model (`GPTModelBuilder.build_model`,
megatron/training/models/gpt.py) takes its layer spec from `default_layer_spec`, in this order: the inference spec
(`--transformer-impl inference_optimized` without experts), the experimental-attention-variant block spec, the MoE
decoder block spec (`--num-experts`), the heterogeneous spec, else the TE or local layer spec; then `mtp_block_spec`
(`--mtp-num-layers`) builds the GPT decoder layer specs. A hybrid model (`--hybrid-layer-pattern`) splits its pattern
by pipeline stage (`select_pipeline_segment`). Each MLA attention layer resolves its Q/KV norms from its spec first
(`QKNormConfigResolver`). A `--spec` replaces the default spec: those rows are then not judged.
"""

from __future__ import annotations

from shardshift.rules.megatron.refusals.base import Refusal, Undecided
from shardshift.rules.megatron.refusals.config_a import _experts, _variant
from shardshift.rules.megatron.refusals.config_b import _freq_value, _vpp
from shardshift.rules.megatron.refusals.validate_a import _hybrid_pattern

VARIANTS = "megatron/core/models/gpt/experimental_attention_variant_module_specs.py:"
GPT = "megatron/core/models/gpt/gpt_layer_specs.py:"
NORMS = "megatron/core/transformer/mla_qk_norm_config.py:QKNormConfigResolver."
TE = "transformer_engine"


def _main(v) -> str | None:
    """The hybrid pattern's main part (before the MTP separator), None for a GPT model."""
    pattern = _hybrid_pattern(v)
    return None if pattern is None else str(pattern).split("/", 1)[0]


def _branch(v) -> str | None:
    """Which spec `default_layer_spec` builds for a GPT model (None for a hybrid model)."""
    if _hybrid_pattern(v) is not None:
        return None
    if v("spec") is not None:
        raise Undecided("spec")  # a user spec module replaces the default spec
    impl, experts = v("transformer_impl"), _experts(v)
    if impl == "inference_optimized" and experts is None:
        return "inference"
    if _variant(v) is not None:
        return "variant"
    if experts is not None:
        return "moe"
    if v("heterogeneous_layers_config_path") is not None:
        return "heterogeneous"
    return "te" if impl == TE else "local"


def _num_layers(v) -> int:
    layers = v("num_layers")
    if layers is None:
        raise Undecided("num_layers")
    return layers


def _linear_variant(v) -> bool:
    return _variant(v) in ("gdn", "gdn2")


def _linear_freq(v):
    """--linear-attention-freq as la_freq_type reads it (an int, a list, or None)."""
    return _freq_value(v, "linear_attention_freq")


def _moe_freq(v):
    return _freq_value(v, "moe_layer_freq")


def _even_split(v) -> bool:
    """Whether the stages split the layers evenly (no layout, no uneven first/last stage, no embedding/loss share)."""
    return (v("pipeline_model_parallel_layout") is None and v("decoder_first_pipeline_num_layers") is None
            and v("decoder_last_pipeline_num_layers") is None and not v("account_for_embedding_in_pipeline_split")
            and not v("account_for_loss_in_pipeline_split"))


# the experimental-attention-variant block spec (default_layer_spec's variant branch), in the order it checks
def _variant_spec(v) -> bool:
    return _branch(v) == "variant"


def _backend_refused(v) -> bool:
    return _variant_spec(v) and v("transformer_impl") != TE


def _linear_length_refused(v) -> bool:
    freq = _linear_freq(v) if _variant_spec(v) and not _backend_refused(v) and _linear_variant(v) else None
    return isinstance(freq, list) and len(freq) != _num_layers(v)


def _linear_none_refused(v) -> bool:
    # TransformerConfig asserts a frequency for gdn first: only gdn2 gets here
    return _variant_spec(v) and not _backend_refused(v) and _variant(v) == "gdn2" and _linear_freq(v) is None


def _attention_pattern_ok(v) -> bool:
    return _variant_spec(v) and not _backend_refused(v) and not _linear_length_refused(v) \
        and not _linear_none_refused(v)


def _dsa_without_mla(v) -> bool:
    return _attention_pattern_ok(v) and _variant(v) == "dsa" and not v("multi_latent_attention")


def _dsa_l2(v) -> bool:
    return _attention_pattern_ok(v) and _variant(v) == "dsa" and bool(v("multi_latent_attention")) \
        and bool(v("qk_l2_norm"))


def _variant_moe_length(v) -> bool:
    if not _attention_pattern_ok(v) or _dsa_without_mla(v) or _dsa_l2(v) or _experts(v) is None:
        return False
    freq = _moe_freq(v)
    return isinstance(freq, list) and len(freq) != _num_layers(v)


def _variant_layers_ok(v) -> bool:
    return _attention_pattern_ok(v) and not _dsa_without_mla(v) and not _dsa_l2(v) and not _variant_moe_length(v)


def _dsa_share_refused(v) -> bool:
    """_validate_dsa_index_share_pipeline_split on every pipeline rank's chunks (an even split: else undecided)."""
    if not _variant_layers_ok(v) or _variant(v) != "dsa":
        return False
    freq = v("dsa_indexer_topk_freq")
    if freq <= 1:
        return False
    if not _even_split(v):
        raise Undecided("pipeline split")
    layers, pp = _num_layers(v), v("pipeline_model_parallel_size")
    vp = _vpp(v) if pp > 1 else None
    if layers % pp or (vp and (layers // pp) % vp):
        return False  # get_num_layers_to_build refuses first (MG101, MG102)
    per_rank = layers // pp
    chunks = []
    for rank in range(pp):
        if vp:
            size = per_rank // vp
            chunks += [range(stage * (layers // vp) + rank * size, stage * (layers // vp) + (rank + 1) * size)
                       for stage in range(vp)]
        else:
            chunks.append(range(rank * per_rank, (rank + 1) * per_rank))
    offset = max(v("dsa_indexer_skip_topk_offset"), 1)
    for chunk in chunks:
        for layer_id in chunk:
            number = layer_id + 1
            if max(number - offset, 0) % freq == 0:
                continue  # a layer that computes its own top-k
            source = number if number <= offset else number - ((number - offset) % freq)
            if source - 1 not in chunk:
                return True
    return False


# the GPT decoder layer specs (get_gpt_decoder_layer_specs): the MoE block spec builds them, so does mtp_block_spec
def _mtp(v) -> bool:
    if v("mtp_num_layers") is None:
        return False
    if not _even_split(v):
        raise Undecided("pipeline split")  # a stage without decoder layers takes another spec for its MTP layers
    return True


def _layer_specs(v) -> bool:
    """Whether the GPT decoder layer specs get built (the MoE block spec, or the MTP block spec)."""
    branch = _branch(v)
    return branch == "moe" or (branch is not None and _mtp(v))


def _mla_l2(v) -> bool:
    return bool(v("multi_latent_attention")) and bool(v("qk_l2_norm"))


def _inference_l2(v) -> bool:
    return _branch(v) == "inference" and _mla_l2(v)


def _te_l2(v) -> bool:
    return _branch(v) in ("te", "moe") and v("transformer_impl") == TE and _mla_l2(v)


def _layer_specs_variant(v) -> bool:
    return _branch(v) is not None and _mtp(v) and _variant(v) is not None


def _moe_length(v) -> bool:
    if not _layer_specs(v) or _layer_specs_variant(v):
        return False
    freq = _moe_freq(v)
    return isinstance(freq, list) and len(freq) != _num_layers(v)


def _moe_entry(v) -> bool:
    if not _layer_specs(v) or _layer_specs_variant(v) or _moe_length(v):
        return False
    freq = _moe_freq(v)
    return isinstance(freq, list) and any(entry not in (0, 1) for entry in freq)


# the hybrid pattern's pipeline split (select_pipeline_segment, a pipe-free main pattern)
def _hybrid_split(v) -> bool:
    main = _main(v)
    pp = v("pipeline_model_parallel_size")
    if main is None or "|" in main or pp <= 1:
        return False
    if v("decoder_first_pipeline_num_layers") is not None or v("decoder_last_pipeline_num_layers") is not None:
        return False
    return len(main) % pp != 0


# the MLA attention layers' Q/KV norm resolution (QKNormConfigResolver), reached where the GPT spec functions passed
def _hybrid_mla(v) -> bool:
    """Whether a hybrid model builds MLA/DSA attention layers (a + or D in its pattern)."""
    pattern = _hybrid_pattern(v)
    if pattern is None:
        return False
    main = _main(v)
    if any(s in main for s in "+D"):
        return True
    if any(s in str(pattern) for s in "+D"):
        raise Undecided("hybrid_layer_pattern")  # only its MTP layers have them
    return False


def _hybrid_l2(v) -> bool:
    return _hybrid_mla(v) and not _hybrid_split(v) and bool(v("qk_l2_norm"))


def _hybrid_dsa_norm(v) -> bool:
    main = _main(v)
    return main is not None and "D" in main and not _hybrid_split(v) and not v("qk_l2_norm") \
        and bool(v("qk_layernorm")) and v("q_lora_rank") is None


def _unused_q_norm(v) -> bool:
    """A spec with a standalone Q norm (the local MLA spec, GPT's DSA spec) with --qk-layernorm, no Q-LoRA."""
    if not v("qk_layernorm") or v("q_lora_rank") is not None or v("qk_l2_norm"):
        return False
    branch = _branch(v)
    if branch in ("local", "moe") and v("transformer_impl") == "local":
        return bool(v("multi_latent_attention")) and not _moe_length(v) and not _moe_entry(v)
    if branch == "variant":
        return _variant(v) == "dsa" and _variant_layers_ok(v) and not _dsa_share_refused(v) \
            and bool(v("multi_latent_attention"))
    return False


L2 = "qk_l2_norm is not supported with MLA."
MOE_LENGTH = "Invalid length of moe_layer_pattern: <length>, expected <num_layers>"

ROWS = [
    Refusal(VARIANTS + "get_dsa_module_spec_for_backend:1", "experimental_attention_variant", _dsa_without_mla,
            "the DSA attention spec asserts `config.multi_latent_attention`: Currently only MLA supports sparse "
            "attention.", "add `--multi-latent-attention`, or choose another `--experimental-attention-variant`",
            involved=("multi_latent_attention",), stage="specs"),
    Refusal(VARIANTS + "get_dsa_module_spec_for_backend:2", "qk_l2_norm", _dsa_l2,
            f"the DSA attention spec asserts `config.qk_l2_norm is False`: {L2}",
            "drop `--qk-l2-norm` (use `--qk-layernorm`)", involved=("experimental_attention_variant",), stage="specs"),
    Refusal(VARIANTS + "_validate_dsa_index_share_pipeline_split:1", "dsa_indexer_topk_freq", _dsa_share_refused,
            "it raises RuntimeError: DSA index-share pipeline split is invalid: a layer of a pipeline stage reuses "
            "top-k indices from a computing layer that is not earlier in this pipeline stage",
            "choose --num-layers, pipeline sizes and `--dsa-indexer-skip-topk-offset` so that each stage (and each "
            "virtual stage) starts on a computing layer, or `--dsa-indexer-topk-freq 1`",
            involved=("dsa_indexer_skip_topk_offset", "pipeline_model_parallel_size"), stage="specs"),
    Refusal(VARIANTS + "get_moe_layer_pattern:1", "moe_layer_freq", _variant_moe_length,
            f"the experimental attention variant spec asserts `len(moe_layer_pattern) == config.num_layers`: "
            f"{MOE_LENGTH}", "give `--moe-layer-freq` one entry per layer", involved=("num_layers",), stage="specs"),
    Refusal(VARIANTS + "get_linear_attention_pattern:1", "linear_attention_freq", _linear_length_refused,
            "the experimental attention variant spec asserts `len(linear_attention_pattern) == config.num_layers`: "
            "Invalid length of linear_attention_pattern: <length>, expected <num_layers>",
            "give `--linear-attention-freq` one entry per layer", involved=("num_layers",), stage="specs"),
    Refusal(VARIANTS + "get_linear_attention_pattern:2", "experimental_attention_variant", _linear_none_refused,
            "it raises ValueError: Linear attention type gdn2 is specified but linear_attention_freq is None. "
            "Please set linear_attention_freq to specify the LA/SDPA layer pattern.",
            "add `--linear-attention-freq`", stage="specs"),
    Refusal(VARIANTS + "_get_backend_spec_provider:1", "transformer_impl", _backend_refused,
            "it asserts `config.transformer_impl == \"transformer_engine\"`: Experimental GPT decoder block spec "
            "only supports transformer engine implementation for now.",
            "use `--transformer-impl transformer_engine`, or drop `--experimental-attention-variant`",
            involved=("experimental_attention_variant",), stage="specs"),
    Refusal(GPT + "get_gpt_layer_with_inference_submodules:2", "qk_l2_norm", _inference_l2,
            f"the inference layer spec asserts `qk_l2_norm is False`: {L2}", "drop `--qk-l2-norm` with MLA",
            involved=("multi_latent_attention", "transformer_impl"), stage="specs"),
    Refusal(GPT + "get_gpt_layer_with_transformer_engine_submodules:4", "qk_l2_norm", _te_l2,
            f"the Transformer Engine layer spec asserts `qk_l2_norm is False`: {L2}", "drop `--qk-l2-norm` with MLA",
            involved=("multi_latent_attention",), stage="specs"),
    Refusal(GPT + "get_gpt_decoder_layer_specs:1", "mtp_num_layers", _layer_specs_variant,
            "the MTP block spec builds the GPT decoder layer specs, which assert "
            "`config.experimental_attention_variant is None`: Experimental attention variant is not supported with "
            "get_gpt_decoder_layer_specs", "drop `--mtp-num-layers` or `--experimental-attention-variant`",
            involved=("experimental_attention_variant",), stage="specs"),
    Refusal(GPT + "get_gpt_decoder_layer_specs:2", "moe_layer_freq", _moe_length,
            f"the GPT decoder layer specs assert `len(moe_layer_pattern) == config.num_layers`: {MOE_LENGTH}",
            "give `--moe-layer-freq` one entry per layer", involved=("num_layers",), stage="specs"),
    Refusal(GPT + "get_gpt_decoder_layer_specs:4", "moe_layer_freq", _moe_entry,
            "the GPT decoder layer specs raise ValueError: Invalid layer pattern: <pattern> (an entry other than 0 "
            "or 1)", "write `--moe-layer-freq` with 1 (MoE layer) and 0 (dense layer) entries only", stage="specs"),
    Refusal("megatron/core/models/hybrid/hybrid_layer_allocation.py:select_pipeline_segment:4",
            "hybrid_layer_pattern", _hybrid_split,
            "it raises ValueError: Number of layers (<layers>) must be evenly divisible by "
            "pipeline-model-parallel-size (<size>) when no pipe separators are specified in the pattern.",
            "give the pattern a layer count the pipeline size divides, or mark the stages with `|`",
            involved=("pipeline_model_parallel_size",), stage="specs"),
    Refusal(NORMS + "resolve:1", "qk_l2_norm", _hybrid_l2,
            "the hybrid model's MLA/DSA layers resolve their Q/KV norms and raise ValueError: qk_l2_norm is not "
            "supported with MLA (DSA).", "drop `--qk-l2-norm` (use `--qk-layernorm`)",
            involved=("hybrid_layer_pattern",), stage="specs"),
    Refusal(NORMS + "_resolve_dsa_qk_layernorm:1", "qk_layernorm", _hybrid_dsa_norm,
            "the hybrid model's DSA layers raise ValueError: `qk_layernorm=True` with `q_lora_rank is None` is not "
            "supported for DSA because DSA cannot fuse Q norm into `linear_q_proj`.",
            "add `--q-lora-rank`, or drop `--qk-layernorm`", involved=("q_lora_rank", "hybrid_layer_pattern"),
            stage="specs"),
    Refusal(NORMS + "_raise_unused_q_norm:1", "qk_layernorm", _unused_q_norm,
            "the MLA attention layers raise ValueError: `q_layernorm=...` is non-trivial, but `q_lora_rank is None`, "
            "meaning it will not be used (the local MLA spec and the DSA spec put a standalone Q norm)",
            "add `--q-lora-rank`, drop `--qk-layernorm`, or use `--transformer-impl transformer_engine` for MLA",
            involved=("q_lora_rank", "multi_latent_attention"), stage="specs"),
]
