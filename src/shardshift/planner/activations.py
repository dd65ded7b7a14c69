"""Activation memory per GPU for GPT-style transformers.

Source: V. Korthikanti, J. Casper, S. Lym, L. McAfee, M. Andersch, M. Shoeybi, B. Catanzaro,
"Reducing Activation Recomputation in Large Transformer Models", MLSys 2023, arXiv:2205.05198
(section 4, Table 2). Per transformer layer, in bytes, with 16-bit activations and 1-byte dropout
masks, sequence s, micro-batch b, hidden h, heads a, tensor-parallel size t:

    no parallelism                   s*b*h * (34 + 5*a*s/h)
    tensor parallel                  s*b*h * (10 + 24/t + 5*a*s/(h*t))
    tensor + sequence parallel       s*b*h / t * (34 + 5*a*s/h)
    selective recomputation          the 5*a*s/h term is dropped (attention scores recomputed)
    full recomputation               2*s*b*h per layer (its input; /t with sequence parallelism),
                                     plus one layer's activations while it is recomputed

The 34 breaks down as: layer-norm inputs 4, attention 11 (QKV input 2, Q and K 4, V 2, output
projection input 2, dropout mask 1), MLP 19 (input 2, fc1 output 8, GeLU output 8, dropout mask 1);
the "10" are the parts tensor parallelism does not split (norm inputs, block inputs, dropout
masks). Here the terms are kept apart so that an element size other than 2 bytes, an MLP width
other than 4h, a gated (SwiGLU) MLP (three ffn-wide tensors instead of two) and grouped-query
attention (K and V kv_heads/heads as wide) and mixture-of-experts layers (each token's ffn-wide tensors
once per routed expert, top-k, with `ffn_hidden` the expert width; balanced routing) follow the same
accounting.

Attention kernel: with a fused (flash) attention kernel the s^2 scores are never stored, so the
5*a*s/h term is dropped as under selective recomputation (`Layout.flash_attention`; Megatron's
`compute_activation_memory_without_sp` assumes the same); the kernel keeps the softmax's log-sum-exp
instead, 4 bytes per head and token (4*a/h in units of s*b*h: under 0.1% for usual shapes; Megatron
leaves it out). Measured on the CPU (tests/test_planner_activations.py).

Pipeline parallelism (section 4.2.3 of the paper; Megatron's `compute_activation_memory`): the first
stage holds L/p layers for p micro-batches in flight under 1F1B, i.e. L layers' worth; fewer when
there are fewer micro-batches (x min(1, m/p)); the interleaved schedule with v virtual stages
multiplies by 1 + (p-1)/(p*v). Context parallelism divides s. The embedding stage adds the input
ids (8 bytes a token) and the embedding dropout mask (1 byte an element) per in-flight micro-batch;
with p = 1 the output layer adds the final norm's and the output projection's inputs and the fp32 logits
the loss reads, 4*s*b*h*(1 + V/h)/t with 16-bit activations and sequence parallelism (as Megatron's
`compute_activation_memory`; its `compute_activation_memory_without_sp` counts 2*(s*b*V/t + s*b*h)).
Megatron multiplies its estimate by 1.05 for temporaries when sequence parallelism is off; that
margin is not added here.
"""

from __future__ import annotations

import math
from dataclasses import replace

from shardshift.planner.types import Figure, Layout, Model


def missing_shape(model: Model, layout: Layout) -> list[str]:
    """What the activation formula needs and does not have."""
    need = [name for name in ("layers", "hidden", "heads") if getattr(model, name) is None]
    if layout.sequence_length is None:
        need.append("sequence length")
    return need


def per_layer_bytes(layout: Layout, model: Model, micro_batch: int) -> float:
    """Bytes of one transformer layer's saved activations for one micro-batch on one GPU."""
    s = layout.sequence_length / max(1, layout.context)
    b, h, a = micro_batch, model.hidden, model.heads
    t = max(1, layout.tensor)
    e = layout.compute_bytes
    ffn = model.ffn_hidden or 4 * h
    kv = (model.kv_heads or a) / a
    sbh = s * b * h
    if layout.recompute == "full":
        return sbh * e / (t if layout.sequence_parallel else 1)
    # parts tensor parallelism does not split: two norm inputs, QKV input, MLP input (e each),
    # two dropout masks (1 byte each) -- 10 with e = 2
    replicated = 4 * e + 2
    # parts it splits: Q (e), K and V (e * kv each), output-projection input (e), the MLP's
    # ffn-wide tensors (fc1 output and activation output; a gated MLP has gate, up and product)
    widths = 3 if _gated(layout, model) else 2
    if model.experts and model.experts_per_token:
        widths *= model.experts_per_token  # each token goes through k experts of width ffn (balanced routing)
    split = e * (2 + 2 * kv) + widths * e * ffn / h
    if layout.flash_attention:
        # a fused kernel keeps only the softmax's log-sum-exp: one fp32 value per head and token
        scores = 4 * a / h
    elif layout.recompute == "selective":
        scores = 0.0
    else:
        scores = (2 * e + 1) * a * s / h
    if layout.sequence_parallel:
        return sbh * (replicated + split + scores) / t
    return sbh * (replicated + (split + scores) / t)


def _gated(layout: Layout, model: Model) -> bool:
    return bool(layout.gated_mlp or model.gated_mlp)


def _in_flight(layout: Layout) -> float:
    """Micro-batches' worth of layers the first pipeline stage holds, as a multiple of L/p x p."""
    p = max(1, layout.pipeline)
    if layout.virtual_pipeline and p > 1:
        return 1 + (p - 1) / (p * layout.virtual_pipeline)
    if p > 1 and layout.num_microbatches is not None:
        return min(1.0, layout.num_microbatches / p)
    return 1.0


def _full_recompute(layout: Layout, layers: int, p: int, kept: float, whole: float) -> tuple[float, float, str]:
    """(bytes the first stage keeps for its in-flight micro-batches, the peak of one recomputation,
    how) under full recomputation. Megatron's methods (megatron/core/recompute.py): "uniform" keeps
    the input of each chunk of N layers and recomputes a chunk at a time; "block" checkpoints the
    first N layers of each stage's model chunk and keeps every other layer's activations whole.
    Without a method (Hugging Face gradient checkpointing, torch checkpoint per block): each layer's
    input, one layer recomputed at a time."""
    v = max(1, layout.virtual_pipeline or 1)
    chunk = layers / (p * v)  # layers of one model chunk on a stage
    n = max(1, layout.recompute_layers or 1)
    if layout.recompute_method == "block":
        checkpointed = min(n, chunk)
        per_chunk = checkpointed * kept + (chunk - checkpointed) * whole
        peak = whole
        how = f"full recomputation of the first {n} layers of each stage (block), the rest kept whole"
    elif layout.recompute_method == "uniform":
        per_chunk = math.ceil(chunk / n) * kept
        peak = min(n, chunk) * whole
        how = f"full recomputation in chunks of {n} layers (uniform): chunk inputs kept"
    else:
        per_chunk = chunk * kept
        peak = whole
        how = "full recomputation (layer inputs kept)"
    return per_chunk * v * p, peak, how


def activation_bytes(layout: Layout, model: Model, *, micro_batch: int | None = None) -> Figure:
    """Peak saved-activation bytes per GPU (the first pipeline stage) for one micro-batch size."""
    need = missing_shape(model, layout)
    if need:
        return Figure(0.0, f"activations not estimated: {', '.join(need)} not known")
    b = layout.micro_batch if micro_batch is None else micro_batch
    s = layout.sequence_length / max(1, layout.context)
    h, L = model.hidden, model.layers
    t = max(1, layout.tensor)
    p = max(1, layout.pipeline)
    layer = per_layer_bytes(layout, model, b)
    factor = _in_flight(layout)
    how = {"none": "no recomputation", "selective": "selective recomputation",
           "full": "full recomputation (layer inputs kept)"}[layout.recompute]
    if layout.recompute == "full":
        whole = per_layer_bytes(replace(layout, recompute="none"), model, b)
        stored, peak, how = _full_recompute(layout, L, p, layer, whole)
        total = stored * factor + peak
    else:
        # the first stage keeps L/p layers for p micro-batches: L layers' worth (times the schedule factor)
        total = layer * L * factor
    # embedding stage: input ids (8 bytes a token) and the embedding dropout mask, p micro-batches in flight
    embedding = (8 * s * b * p + s * b * h * p) * factor
    if layout.sequence_parallel:
        embedding /= t
    total += embedding
    if p == 1:
        # output layer (paper, section 4.3): final norm input and output-projection input (e bytes
        # each), and the logits kept in fp32 for the cross-entropy loss (4 bytes, split by TP)
        vocab = model.vocab or 0
        norm_and_projection = 2 * layout.compute_bytes * s * b * h / (t if layout.sequence_parallel else 1)
        total += norm_and_projection + 4 * s * b * vocab / t
    attention = "fused attention, no s^2 scores" if layout.flash_attention else "attention scores stored"
    if model.experts and model.experts_per_token:
        attention += (f", MoE: each token's MLP activations for its {model.experts_per_token} experts "
                      f"(ffn {model.ffn_hidden or 4 * h}), routing balanced")
    schedule = ""
    if p > 1:
        schedule = (f", first of {p} pipeline stages x {factor:.3g}" if layout.virtual_pipeline
                    else f", first of {p} pipeline stages with {min(p, layout.num_microbatches or p)} micro-batches "
                         f"in flight (1F1B)")
    parallel = f", TP {t}" + (" with sequence parallelism" if layout.sequence_parallel else "") if t > 1 else ""
    context = f", CP {layout.context} (s/{layout.context})" if layout.context > 1 else ""
    return Figure(total, f"Korthikanti et al. 2022 (arXiv:2205.05198) per-layer activations x {L} layers: "
                         f"s={layout.sequence_length}, b={b}, h={h}, a={model.heads}, {how}, {attention}"
                         f"{parallel}{context}{schedule}")


def per_sample_bytes(layout: Layout, model: Model) -> float:
    """Activation bytes per sample of micro-batch (every term is proportional to b)."""
    if missing_shape(model, layout):
        return 0.0
    return activation_bytes(layout, model, micro_batch=1).value


def largest_fitting(free_bytes: float, layout: Layout, model: Model) -> int | None:
    """The largest micro-batch whose activations fit in `free_bytes`; None when not estimated."""
    per = per_sample_bytes(layout, model)
    if per <= 0:
        return None
    return max(0, math.floor(free_bytes / per))
