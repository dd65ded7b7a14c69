"""Bucket and threshold sizes (reference deepspeed.md §4.1): too small to keep collectives
bandwidth-bound, too large for the GPU memory their buffers take (DS330, DS331); ZeRO-3 limits
so small that parameters are gathered again and again (DS332).

All sizes are element counts; bytes = elements × 2 in fp16/bf16, × 4 in fp32. When the model's
hidden size h is known (`--hidden-size`, or the Plan), sizes are compared with the values the
Hugging Face integration derives for "auto": h² for reduce_bucket_size, 0.9·h² for the ZeRO-3
prefetch bucket, 10·h for the persistence threshold.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable

from shardshift.document import Document
from shardshift.formats.deepspeed.keys import key_index
from shardshift.rules.base import Context, Finding, Rule
from shardshift.rules.deepspeed.facts import (
    BYTES,
    Z,
    bytes_text,
    elements_text,
    get,
    precision,
    size_text,
    truth,
    whole,
    zero_stage,
)

SMALL = 100_000  # below this many elements a bucket's collective is dominated by latency
LARGE = 2_000_000_000  # above this (4 GB in bf16) one buffer takes a large share of any GPU
LAYERS = 64  # × h²: more than the gradients of five transformer layers (12·h² each)
PERSISTENT_WITHOUT_H = 100_000_000  # keeps every h×h matrix of models up to hidden size 10,000


@dataclass(frozen=True, slots=True)
class Size:
    """One size key: its spellings, the Hugging Face "auto" formula, and what it buffers."""

    pointer: str
    spellings: tuple[str, ...]
    auto: Callable[[int], int] | None
    auto_text: str
    small_effect: str
    large_effect: str
    bucket: bool = True  # a buffer of this many elements (not a threshold)


SIZES: tuple[Size, ...] = (
    Size(Z + "/reduce_bucket_size", (Z + "/reduce_bucket_size",), lambda h: h * h, "h²",
         "every gradient reduction becomes many small, latency-bound collectives",
         "the gradient bucket buffer"),
    Size(Z + "/allgather_bucket_size", (Z + "/allgather_bucket_size",), None, "",
         "the updated partitions are all-gathered in many small, latency-bound rounds",
         "the all-gather buffer"),
    Size(Z + "/stage3_prefetch_bucket_size", (Z + "/stage3_prefetch_bucket_size", Z + "/prefetch_bucket_size"),
         lambda h: int(0.9 * h * h), "0.9·h²",
         "parameters are fetched just in time in small all-gathers and the GPU waits for them",
         "the prefetched parameters kept on the GPU"),
    Size(Z + "/stage3_param_persistence_threshold",
         (Z + "/stage3_param_persistence_threshold", Z + "/param_persistence_threshold"), lambda h: 10 * h, "10·h",
         "", "", bucket=False),
)


def hidden_size(document: Document, context: Context) -> int | None:
    if context.hidden_size:
        return context.hidden_size
    if document.format == "deepspeed":
        return None  # no ds_config key holds the hidden size; and not building the Plan keeps `check` fast
    model = document.plan.model if document.plan is not None else None
    hidden = getattr(model, "hidden", None) if model is not None else None
    return hidden if isinstance(hidden, int) and hidden > 0 else None


def _written_sizes(document: Document) -> Iterable[tuple[Size, str, int]]:
    """(size row, pointer as written, value) for every size key the configured stage reads."""
    data = document.data
    stage = zero_stage(data)
    rows = key_index()
    for size in SIZES:
        for pointer in size.spellings:
            value = whole(get(data, pointer))
            if value is None or value < 0:
                continue  # absent, "auto", or a bad value (DS102)
            row = rows.get(pointer)
            if row is not None and ((row.exclusive_minimum is not None and value <= row.exclusive_minimum)
                                    or (row.minimum is not None and value < row.minimum)):
                continue  # out of range: DS102
            if stage is not None and row is not None and row.stages and stage not in row.stages:
                continue  # ignored at this stage (DS303)
            yield size, pointer, value


def _recommendation(size: Size, h: int | None) -> tuple[str, str]:
    """(text, fix): Hugging Face's "auto" value for hidden size h, else DeepSpeed's default."""
    default = key_index()[size.pointer].default
    if h is not None and size.auto is not None:
        value = size.auto(h)
        return f"{size.auto_text} = {elements_text(value)} for hidden size {h} (what \"auto\" uses)", str(value)
    return f"DeepSpeed's default {elements_text(default)}", str(default)


def _name(pointer: str) -> str:
    return pointer[len(Z) + 1:]


class BucketTooSmall(Rule):
    """A communication bucket so small that its collectives are latency-bound.

    ## What it does
    Reports `reduce_bucket_size`, `allgather_bucket_size` and `stage3_prefetch_bucket_size`
    below 1e5 elements (200 kB in bf16), and a `stage3_param_persistence_threshold` below the
    hidden size (0 when the hidden size is not known). Sizes are element counts, not bytes.
    Pass `--hidden-size` to compare with the values the Hugging Face integration derives.

    ## Why is this bad
    Each bucket is one NCCL call. Tiny buckets turn a step's communication into thousands of
    small calls whose cost is latency, not bandwidth, and ZeRO-3 stalls the GPU waiting for
    parameters. A persistence threshold of 0 partitions even norm weights and biases, each then
    gathered by its own all-gather. The run is slower than it should be, with no message.

    ## Example
    ```json
    {"zero_optimization": {"stage": 3, "reduce_bucket_size": 5000, "stage3_prefetch_bucket_size": 0}}
    ```

    ## Use instead
    ```json
    {"zero_optimization": {"stage": 3, "reduce_bucket_size": 16777216, "stage3_prefetch_bucket_size": 15099494}}
    ```
    (h² and 0.9·h² for a hidden size of 4096, or `"auto"` with the Hugging Face Trainer.)
    """

    code = "DS330"
    name = "bucket-too-small"
    severity = "warning"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        h = hidden_size(document, context)
        dtype = precision(document.data)
        for size, pointer, value in _written_sizes(document):
            advice, fix = _recommendation(size, h)
            if size.bucket:
                if value >= SMALL:
                    continue
                yield self.finding(
                    document, pointer,
                    f"{_name(pointer)} is {size_text(value, dtype)}: {size.small_effect}; use at least "
                    f"{elements_text(SMALL)}, e.g. {advice}", fix=fix)
                continue
            if value >= (h or 1):
                continue
            below = f" (below the hidden size {h})" if h else ""
            yield self.finding(
                document, pointer,
                f"{_name(pointer)} is {elements_text(value)} elements{below}: even norm weights and biases are partitioned, "
                f"each gathered by its own small all-gather; use {advice}", fix=fix)


class BucketTooLarge(Rule):
    """A bucket or threshold so large that its buffers take a large share of GPU memory.

    ## What it does
    Reports `reduce_bucket_size`, `allgather_bucket_size` and `stage3_prefetch_bucket_size`
    above 2e9 elements (4 GB in bf16) or, when the hidden size h is known, above 64·h² (more
    than the gradients of five transformer layers); and a `stage3_param_persistence_threshold`
    of at least h² (1e8 when h is not known), which keeps whole h×h weight matrices on every GPU.
    The message gives elements and bytes in the training dtype.

    ## Why is this bad
    ZeRO-3 keeps a reduce buffer of `reduce_bucket_size` elements per gradient dtype; ZeRO-2
    with `overlap_comm` needs about 4.5 × (reduce + all-gather bucket) elements (the Hugging
    Face docs: 5e8 each is 9 GB in 16-bit). The run runs out of memory at the first backward,
    or leaves less room for activations; a bucket bigger than a few layers also leaves nothing
    to overlap. A persistence threshold of h² or more undoes ZeRO-3 for the largest tensors.

    ## Example
    ```json
    {"zero_optimization": {"stage": 3, "reduce_bucket_size": 5e9, "stage3_param_persistence_threshold": 1e9}}
    ```

    ## Use instead
    ```json
    {"zero_optimization": {"stage": 3, "reduce_bucket_size": 5e8, "stage3_param_persistence_threshold": 1e5}}
    ```
    """

    code = "DS331"
    name = "bucket-too-large"
    severity = "warning"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        h = hidden_size(document, context)
        dtype = precision(data)
        per = BYTES.get(dtype or "", 2)
        stage = zero_stage(data)
        for size, pointer, value in _written_sizes(document):
            advice, fix = _recommendation(size, h)
            if not size.bucket:
                limit = h * h if h else PERSISTENT_WITHOUT_H
                if value < limit:
                    continue
                side = h if h else math.isqrt(value)
                whose = (f"at least h² = {elements_text(h * h)} for hidden size {h}" if h else
                         f"enough for square weight matrices up to hidden size {side:,}")
                yield self.finding(
                    document, pointer,
                    f"{_name(pointer)} is {size_text(value, dtype)} ({whose}): every parameter up to that size stays "
                    f"whole on every GPU, so ZeRO-3 no longer partitions the weight matrices; use {advice}", fix=fix)
                continue
            limit = min(LARGE, LAYERS * h * h) if h else LARGE
            if value <= limit:
                continue
            why = (f"more than {LAYERS}·h² = {elements_text(LAYERS * h * h)} for hidden size {h}, the gradients of "
                   "five layers" if h and LAYERS * h * h < LARGE else f"more than {elements_text(LARGE)}")
            total = ""
            if stage in (1, 2) and size.pointer in (Z + "/reduce_bucket_size", Z + "/allgather_bucket_size") \
                    and truth(get(data, Z + "/overlap_comm")) is True:
                both = sum(whole(get(data, Z + k)) or key_index()[Z + k].default
                           for k in ("/reduce_bucket_size", "/allgather_bucket_size"))
                total = f"; with overlap_comm at stage {stage} the buffers take about 4.5 × {elements_text(both)} " \
                        f"= {bytes_text(4.5 * both * per)}"
            yield self.finding(
                document, pointer,
                f"{_name(pointer)} is {size_text(value, dtype)} ({why}): {size.large_effect} takes that much GPU "
                f"memory{total}; use {advice}", fix=fix)


# ZeRO-3 limits that are not buffers: (spellings, the effect of a value below the limit).
LIMITS: tuple[tuple[tuple[str, ...], str], ...] = (
    ((Z + "/stage3_max_live_parameters", Z + "/max_live_parameters"),
     "ZeRO-3 prefetches only while fewer gathered elements than that are live, so it prefetches (almost) nothing "
     "and every module waits for its own all-gather"),
    ((Z + "/stage3_max_reuse_distance", Z + "/max_reuse_distance"),
     "a parameter used again within that many elements (tied weights, the recompute of activation "
     "checkpointing) is released after its first use and gathered a second time"),
    ((Z + "/sub_group_size",),
     "the optimizer step walks the fp32 partition in sub-groups of that many elements (0: one parameter at a "
     "time), each with its own launch and, under NVMe offload, swap overhead"),
)


class Zero3LimitTooSmall(Rule):
    """A ZeRO-3 live-parameter, reuse-distance or sub-group limit so small that it slows every step.

    ## What it does
    At ZeRO stage 3, reports `stage3_max_live_parameters` and `stage3_max_reuse_distance` below
    one h×h weight matrix when the hidden size h is known (`--hidden-size`), else below 1e5
    elements, and `sub_group_size` below 1e5 elements. All three are element counts.

    ## Why is this bad
    These limits trade memory for speed. ZeRO-3 prefetches the next modules' parameters only
    while fewer than `stage3_max_live_parameters` gathered elements are live, so a tiny value
    (0 is common in copied configs) turns prefetching off and every all-gather waits on the
    critical path; a tiny `stage3_max_reuse_distance` releases parameters that are used again
    soon and gathers them twice; a tiny `sub_group_size` splits the optimizer step into many
    small steps. The run is slower than it should be and nothing says why. (How large they may
    be depends on the free GPU memory, which no file states: lower them from the defaults when
    ZeRO-3 runs out of memory, but not below a layer.)

    ## Example
    ```json
    {"zero_optimization": {"stage": 3, "stage3_max_live_parameters": 1000, "sub_group_size": 1000}}
    ```

    ## Use instead
    ```json
    {"zero_optimization": {"stage": 3, "stage3_max_live_parameters": 1e9, "sub_group_size": 1e9}}
    ```
    """

    code = "DS332"
    name = "zero3-limit-too-small"
    severity = "warning"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        stage = zero_stage(data)
        if stage not in (3, None):
            return  # ignored at this stage (DS303)
        h = hidden_size(document, context)
        rows = key_index()
        for spellings, effect in LIMITS:
            layered = spellings[0] != Z + "/sub_group_size"
            limit = h * h if (h and layered) else SMALL
            for pointer in spellings:
                value = whole(get(data, pointer))
                if value is None or value < 0 or value >= limit:
                    continue  # absent, "auto", a bad value (DS102), or large enough
                default = rows[spellings[0]].default
                why = (f"less than one {h}×{h} weight matrix ({elements_text(h * h)} elements)" if h and layered
                       else f"below {elements_text(SMALL)} elements")
                yield self.finding(
                    document, pointer,
                    f"{_name(pointer)} is {elements_text(value)}, {why}: {effect}; use DeepSpeed's default "
                    f"{elements_text(default)} (lower it on out-of-memory, but not below one layer's weights)",
                    fix=str(default))
