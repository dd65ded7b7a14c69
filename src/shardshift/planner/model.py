"""The model's shape: from `--model-params N`, a Hugging Face `config.json`, or the Plan's `model`
section (a Megatron script gives layers, hidden size, heads, query groups and vocabulary).

The parameter count is computed from the shape, module by module, as the model code builds it:

- Llama-style decoders (Llama, Mistral, Qwen2/3, Mixtral and most recent models): attention
  q/k/v/o projections (grouped-query: k and v have kv_heads × head_dim outputs), a gated MLP of
  three matrices (gate, up, down), two RMSNorms per layer and one at the end, the embedding and,
  unless tied, the output projection; no biases except Qwen2's q/k/v biases; Qwen3's per-head
  q/k norms; MoE layers with `num_local_experts` (Mixtral) or `num_experts` experts and a router.
- GPT-2 and GPT-NeoX: biases everywhere, LayerNorms with a bias, a two-matrix MLP (4h unless
  `n_inner` / `intermediate_size`), GPT-2's learned position embedding; GPT-2 ties the output
  projection to the embedding, GPT-NeoX does not.
- DeepSeek-V2/V3: multi-head latent attention (q/kv low-rank projections with their norms),
  `first_k_dense_replace` dense layers, then MoE layers of `n_routed_experts` routed and
  `n_shared_experts` shared experts of `moe_intermediate_size` (V3 adds a per-expert score bias).
- A Megatron script: Megatron's own count (megatron/training/theoretical_memory_usage.py:
  no biases, LayerNorm 2h or RMSNorm h, ffn 4h or the SwiGLU default, the vocabulary padded to a
  multiple of 128 × tensor parallel).

Reads JSON only: transformers is never imported.
"""

from __future__ import annotations

import json
from typing import Any

from shardshift.planner.types import Model

_LLAMA_LIKE = "Llama-style decoder"


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _first(config: dict, *keys: str) -> Any:
    for key in keys:
        if config.get(key) is not None:
            return config[key]
    return None


def from_config(config: dict, source: str = "config.json") -> Model:
    """The shape and parameter count of a Hugging Face `config.json` (already parsed). Raises
    ValueError when the config lacks what the count needs (hidden size, layers, vocabulary)."""
    if isinstance(config.get("text_config"), dict) and "hidden_size" not in config and "n_embd" not in config:
        config = {**config["text_config"], "model_type": config["text_config"].get("model_type", config.get("model_type"))}
    kind = str(config.get("model_type") or "").lower()
    hidden = _int(_first(config, "hidden_size", "n_embd", "d_model"))
    layers = _int(_first(config, "num_hidden_layers", "n_layer", "num_layers"))
    heads = _int(_first(config, "num_attention_heads", "n_head"))
    vocab = _int(config.get("vocab_size"))
    missing = [name for name, value in (("hidden_size", hidden), ("num_hidden_layers", layers),
                                        ("num_attention_heads", heads), ("vocab_size", vocab)) if value is None]
    if missing:
        raise ValueError(f"{source}: no {', '.join(missing)}: cannot count the parameters")
    assert hidden and layers and heads and vocab
    if kind == "gpt2" or ("n_embd" in config and "n_layer" in config):
        return _gpt2(config, source, hidden, layers, heads, vocab)
    if kind == "gpt_neox":
        return _neox(config, source, hidden, layers, heads, vocab)
    return _decoder(config, source, kind, hidden, layers, heads, vocab)


def _gpt2(config, source, h, layers, heads, vocab) -> Model:
    ffn = _int(config.get("n_inner")) or 4 * h
    positions = _int(_first(config, "n_positions", "max_position_embeddings")) or 1024
    tied = config.get("tie_word_embeddings", True) is not False
    per_layer = 2 * h + (3 * h * h + 3 * h) + (h * h + h) + 2 * h + (h * ffn + ffn) + (ffn * h + h)
    total = vocab * h + positions * h + layers * per_layer + 2 * h + (0 if tied else vocab * h)
    return Model(parameters=total, layers=layers, hidden=h, heads=heads, kv_heads=heads, ffn_hidden=ffn, vocab=vocab,
                 tied_embeddings=tied, largest_layer_parameters=max(vocab * h, 3 * h * h + 3 * h, h * ffn + ffn),
                 source=source, assumptions=[f"GPT-2 architecture from {source}: biases, LayerNorms, a learned "
                                             f"position embedding of {positions}, MLP {ffn}"])


def _neox(config, source, h, layers, heads, vocab) -> Model:
    ffn = _int(config.get("intermediate_size")) or 4 * h
    tied = config.get("tie_word_embeddings", False) is True
    per_layer = 4 * h + (3 * h * h + 3 * h) + (h * h + h) + (h * ffn + ffn) + (ffn * h + h)
    total = vocab * h + layers * per_layer + 2 * h + (0 if tied else vocab * h)
    return Model(parameters=total, layers=layers, hidden=h, heads=heads, kv_heads=heads, ffn_hidden=ffn, vocab=vocab,
                 tied_embeddings=tied, largest_layer_parameters=max(vocab * h, 3 * h * h + 3 * h, h * ffn + ffn),
                 source=source, assumptions=[f"GPT-NeoX architecture from {source}: biases, LayerNorms, MLP {ffn}"])


def _decoder(config, source, kind, h, layers, heads, vocab) -> Model:
    assumptions: list[str] = []
    kv_heads = _int(config.get("num_key_value_heads")) or heads
    head_dim = _int(config.get("head_dim")) or h // heads
    ffn = _int(_first(config, "intermediate_size", "ffn_dim")) or 4 * h
    tied = config.get("tie_word_embeddings", False) is True
    largest = vocab * h
    # attention
    if _int(config.get("kv_lora_rank")):  # DeepSeek multi-head latent attention
        q_lora = _int(config.get("q_lora_rank"))
        nope, rope = _int(config.get("qk_nope_head_dim")) or 128, _int(config.get("qk_rope_head_dim")) or 64
        v_dim, kv_lora = _int(config.get("v_head_dim")) or 128, config["kv_lora_rank"]
        q = h * heads * (nope + rope) if q_lora is None else h * q_lora + q_lora + q_lora * heads * (nope + rope)
        attention = q + h * (kv_lora + rope) + kv_lora + kv_lora * heads * (nope + v_dim) + heads * v_dim * h
        largest = max(largest, heads * v_dim * h)
        assumptions.append(f"multi-head latent attention (kv_lora_rank {kv_lora}, q_lora_rank {q_lora})")
    else:
        attention = 2 * h * heads * head_dim + 2 * h * kv_heads * head_dim
        if config.get("attention_bias") is True or kind in ("qwen2", "qwen2_moe"):
            attention += heads * head_dim + 2 * kv_heads * head_dim + (h if config.get("attention_bias") else 0)
        if kind.startswith("qwen3"):
            attention += 2 * head_dim  # q_norm, k_norm
        largest = max(largest, h * heads * head_dim)
    mlp_bias = config.get("mlp_bias") is True
    dense_mlp = 3 * h * ffn + (2 * ffn + h if mlp_bias else 0)
    largest = max(largest, h * ffn)
    norms = 2 * h
    # mixture of experts
    experts = _int(_first(config, "num_local_experts", "n_routed_experts", "num_experts"))
    per_token = _int(config.get("num_experts_per_tok")) if experts else None
    moe_layers = 0
    moe_mlp = 0
    expert_ffn = ffn
    if experts:
        expert_ffn = _int(config.get("moe_intermediate_size")) or ffn
        shared = (_int(config.get("n_shared_experts")) or 0) * 3 * h * expert_ffn
        shared_ffn = _int(config.get("shared_expert_intermediate_size"))
        if shared_ffn:
            shared += 3 * h * shared_ffn + h  # Qwen2-MoE: one shared expert and its gate
        router = h * experts  # DeepSeek-V3's e_score_correction_bias is a buffer, not a parameter
        moe_mlp = experts * 3 * h * expert_ffn + shared + router
        first_dense = _int(config.get("first_k_dense_replace")) or 0
        every = _int(_first(config, "moe_layer_freq", "decoder_sparse_step")) or 1
        moe_layers = sum(1 for i in range(first_dense, layers) if i % every == 0) if kind.startswith("deepseek") \
            else sum(1 for i in range(layers) if (i + 1) % every == 0)
        sparse_only = config.get("mlp_only_layers") or []
        if isinstance(sparse_only, list) and sparse_only:
            moe_layers -= sum(1 for i in sparse_only if isinstance(i, int) and 0 <= i < layers)
        largest = max(largest, experts * 3 * h * expert_ffn)  # transformers keeps a layer's experts in one module
        assumptions.append(f"{experts} experts of {expert_ffn} in {moe_layers} of {layers} layers"
                           + (f", {per_token} per token" if per_token else ""))
    total = (vocab * h * (1 if tied else 2) + norms * layers + h + attention * layers
             + dense_mlp * (layers - moe_layers) + moe_mlp * moe_layers)
    name = kind or "an unnamed model_type"
    assumptions.insert(0, f"{_LLAMA_LIKE} ({name}) from {source}: gated MLP {ffn}, RMSNorms, "
                          f"{'tied' if tied else 'untied'} embeddings")
    routed = experts * 3 * h * expert_ffn * moe_layers if experts else None
    return Model(parameters=total, layers=layers, hidden=h, heads=heads, kv_heads=kv_heads, ffn_hidden=ffn,
                 vocab=vocab, experts=experts, experts_per_token=per_token, tied_embeddings=tied,
                 largest_layer_parameters=largest, expert_parameters=routed, source=source,
                 assumptions=assumptions)


def load_config(path: str) -> Model:
    """A Hugging Face config.json from disk. Raises ValueError (unreadable, not JSON, no shape)."""
    from shardshift.files import MAX_BYTES, read_text

    text = read_text(path, errors="strict", bom=False)  # a FIFO or /dev/zero is no config.json
    if text is None:
        raise ValueError(f"{path}: cannot read the model config: not a regular UTF-8 file of at most "
                         f"{MAX_BYTES:,} bytes")
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as error:
        raise ValueError(f"{path}: cannot read the model config: {error}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a model config is a JSON object")
    return from_config(data, path)


def _known(value: Any) -> Any:
    from shardshift.plan import known

    value = known(value)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def from_plan(plan) -> Model | None:
    """The shape the Plan states (a Megatron script's --num-layers, --hidden-size ...); its count
    by Megatron's formula when the vocabulary is known too, else only the shape (parameters 0)."""
    shape = plan.model
    layers, hidden, heads = _known(shape.layers), _known(shape.hidden), _known(shape.heads)
    kv_heads, vocab, stated = _known(shape.kv_heads), _known(shape.vocab), _known(shape.parameters)
    megatron = plan.passthrough.get("megatron", {}) if isinstance(plan.passthrough.get("megatron"), dict) else {}
    if not any((layers, hidden, heads, stated)):
        return None
    assumptions: list[str] = []
    swiglu = megatron.get("--swiglu") is True
    ffn = _known(megatron.get("--ffn-hidden-size"))
    if ffn is None and hidden:
        ffn = int((4 * hidden * 2 / 3) / 64) * 64 if swiglu else 4 * hidden
        assumptions.append(f"ffn hidden size not set: {ffn}, Megatron's default"
                           + (" for SwiGLU" if swiglu else " (4 × hidden)"))
    tied = megatron.get("--untie-embeddings-and-output-weights") is not True
    experts = _known(megatron.get("--num-experts"))
    per_token = _known(megatron.get("--moe-router-topk")) or (2 if experts else None)
    model = Model(parameters=stated or 0, layers=layers, hidden=hidden, heads=heads, kv_heads=kv_heads or heads,
                  ffn_hidden=ffn, vocab=vocab, experts=experts, experts_per_token=per_token, tied_embeddings=tied,
                  source="the Plan", assumptions=assumptions)
    if stated is None and layers and hidden and heads and vocab:
        multiple = 128 * (_known(plan.parallelism.tensor) or 1)
        divisible = _known(megatron.get("--make-vocab-size-divisible-by"))
        if divisible:
            multiple = divisible * (_known(plan.parallelism.tensor) or 1)
        padded = -(-vocab // multiple) * multiple
        if padded != vocab:
            assumptions.append(f"vocabulary {vocab} padded to {padded} (a multiple of {multiple}, as Megatron does)")
        norm = 1 if megatron.get("--normalization") == "RMSNorm" else 2
        gated = 1.5 if swiglu else 1
        groups = kv_heads or heads
        attention = 2 * hidden * hidden * (1 + groups / heads)
        mlp_ffn = _known(megatron.get("--moe-ffn-hidden-size")) or ffn or 4 * hidden
        mlp = 2 * hidden * (mlp_ffn * experts if experts else ffn) * gated
        if experts:
            model.expert_parameters = round(layers * mlp)
        router = hidden * experts if experts else 0
        per_layer = attention + mlp + 2 * hidden * norm + router
        model.parameters = round(layers * per_layer + norm * hidden + padded * hidden * (1 if tied else 2))
        model.vocab = padded
        assumptions.append("parameters counted as Megatron's theoretical memory report does (no biases)")
        if experts:
            assumptions.append(f"every layer has {experts} experts (--moe-layer-freq 1)")
    if model.parameters and vocab and hidden:
        model.largest_layer_parameters = max(model.vocab * hidden, hidden * (ffn or 0))
    return model


def model_from(plan=None, *, config_json: str | None = None, parameters: int | None = None) -> Model | None:
    """The model shape for the planner, by precedence: a `config.json` (the full shape and its
    count), then `--model-params` (the count; the Plan's shape, when it states one, for
    activations), then the Plan alone (a Megatron script). None when nothing gives a count.
    Raises ValueError for a config.json that cannot be read."""
    if config_json is not None:
        model = load_config(config_json)
        if parameters is not None:
            model.assumptions.append(f"parameter count {parameters:,} given; the shape is {config_json}'s")
            model.parameters = parameters
        return model
    planned = from_plan(plan) if plan is not None else None
    if parameters is not None:
        if planned is not None:
            planned.parameters = parameters
            planned.source = "--model-params and the Plan's shape"
            planned.assumptions.insert(0, f"{parameters:,} parameters (--model-params); layers, hidden size and "
                                          "heads from the setup")
            return planned
        return Model(parameters=parameters, source="--model-params",
                     assumptions=[f"{parameters:,} parameters (--model-params); no shape: activations and the "
                                  "largest layer are not estimated (give --model-config)"])
    if planned is not None and planned.parameters:
        return planned
    return None


def missing_count(plan) -> str:
    """Why the Plan alone gives no parameter count (for a usage message)."""
    planned = from_plan(plan) if plan is not None else None
    if planned is None:
        return "the setup states no model shape"
    absent = [name for name, value in (("layers", planned.layers), ("hidden size", planned.hidden),
                                       ("attention heads", planned.heads), ("vocabulary size", planned.vocab))
              if not value]
    return f"the setup states no {', '.join(absent)}"
