"""DeepSpeed's AutoTP (`tensor_parallel.autotp_size` > 1): what the engine refuses when it shards the model.

The engine reads `tensor_parallel.partition_config` and the `tp` block only when `autotp_size` is
above 1 (`DeepSpeedEngine._apply_autotp_partitioning`, in `deepspeed.initialize`); below that the
keys are not read and nothing here is reported.
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from shardshift.context import UnknownContext
from shardshift.document import Document
from shardshift.rules.base import Context, Finding, Rule, did_you_mean

PARTITION_TYPES = ("column", "row", "skip")  # module_inject/autotp_config.py PartitionType


def _tuple(shape: Any) -> Any:
    """AutoTPConfig._convert_shape and TPLayerSpec._normalize_shape: lists become tuples, one level in."""
    if isinstance(shape, list):
        return tuple(_tuple(item) if isinstance(item, list) else item for item in shape)
    return shape


def shape_refusal(shape: Any, partition_dim: Any, partition_type: str) -> str | None:
    """What TPLayerSpec._validate_shape_format (0.19.8) raises for a layer spec's shape, or None."""
    shape = _tuple(shape)
    if not isinstance(shape, tuple):
        return "AutoTP shape must be a tuple of ints or a tuple at partition_dim."
    dim = partition_dim if partition_dim is not None else (0 if partition_type == "column" else 1)
    if not isinstance(dim, int) or isinstance(dim, bool):
        return None  # a comparison TypeError rather than the check's own message: not judged
    if dim < 0 or dim >= len(shape):
        return f"AutoTP partition_dim {dim} is out of range for shape length {len(shape)}."
    nested = False
    for index, item in enumerate(shape):
        if isinstance(item, tuple):
            if index != dim:
                return f"AutoTP shape nested tuple only allowed at partition_dim={dim}, got at {index}."
            if nested:
                return "AutoTP shape supports only 1-level nesting at partition_dim."
            nested = True
            if len(item) == 0:
                return "AutoTP shape nested tuple cannot be empty."
            for value in item:
                if isinstance(value, (tuple, list)):
                    return "AutoTP shape supports only 1-level nesting at partition_dim."
                if not isinstance(value, int) or value <= 0:
                    return "AutoTP nested sub-parameter sizes must be positive integers."
        elif isinstance(item, int):
            if item == 0 or item < -1:
                return "AutoTP shape dimensions must be positive integers or -1."
        else:
            return "AutoTP shape must contain only integers or a tuple at partition_dim."
    return None


class AutoTpPartitionConfigRefused(Rule):
    """A `tensor_parallel` setting that DeepSpeed's AutoTP refuses when it shards the model.

    ## What it does
    With `tensor_parallel.autotp_size` above 1, reports what DeepSpeed 0.19.8 raises in
    `deepspeed.initialize` when it applies AutoTP:

    - `tensor_parallel.tp.tp_size` neither 1 nor `autotp_size`;
    - a `partition_config.layer_specs[]` entry whose `partition_type` is not `column`, `row` or
      `skip` (any case), or whose `shape` is not a list, has a `partition_dim` outside it (the
      default is 0 for column and 1 for row specs), a nested list anywhere but at
      `partition_dim` or nested twice, an empty nested list, a nested size that is not a positive
      integer, a dimension of 0 or below -1, or an entry that is neither an integer nor a list;
    - `vocab_parallel_ce_backend: "liger"` without the vocabulary-parallel LM head it needs
      (`vocab_parallel_lm_head` false, or unset with a `partition_config`; unset without one, the
      model's Hugging Face `tp_plan` decides: an info).

    And, as infos (they are raised for the first weight a spec's `patterns` match, and whether the
    model has one is not in the config): a column spec with both a `shape` and
    `gather_output: true` (NotImplementedError), and a `shape` that leaves two or more
    dimensions to infer (`-1`, or a sub-parameter count at `partition_dim`) without being 2-D like
    the Linear and Embedding weights AutoTP replaces.

    ## Why is this bad
    The engine stops while it shards the model (ValueError), on every rank, after the model is
    built. With `autotp_size` 0 or 1 the keys are not read at all.

    ## Example
    ```json
    {"tensor_parallel": {"autotp_size": 4, "partition_config": {"layer_specs": [
      {"patterns": [".*qkv_proj.weight$"], "partition_type": "column", "shape": [[4096, 1024, 1024], 0]}]}}}
    ```

    ## Use instead
    ```json
      {"patterns": [".*qkv_proj.weight$"], "partition_type": "column", "shape": [[4096, 1024, 1024], -1]}
    ```
    """

    code = "DS454"
    name = "autotp-partition-config-refused"
    severity = "error"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        section = data.get("tensor_parallel") if isinstance(data, dict) else None
        if not isinstance(section, dict):
            return
        size = section.get("autotp_size", 0)
        if not isinstance(size, int) or isinstance(size, bool) or size <= 1:
            return  # AutoTP is not applied: the engine reads none of the rest
        tail = f"with tensor_parallel.autotp_size {size}, deepspeed.initialize raises ValueError while AutoTP shards " \
               "the model"
        for key in ("tp", "tensor_parallel"):
            block = section.get(key)
            tp_size = block.get("tp_size") if isinstance(block, dict) else None
            if isinstance(tp_size, int) and not isinstance(tp_size, bool) and tp_size not in (1, size):
                yield self.finding(document, f"/tensor_parallel/{key}/tp_size",
                                   f"tensor_parallel.{key}.tp_size is {tp_size}, neither 1 nor autotp_size: {tail} "
                                   f"(\"tensor_parallel.tp.tp_size ({tp_size}) does not match tensor_parallel."
                                   f"autotp_size ({size})\"); remove it or set it to {size}", fix=str(size))
        partition = section.get("partition_config")
        specs = partition.get("layer_specs") if isinstance(partition, dict) else None
        for index, spec in enumerate(specs if isinstance(specs, list) else ()):
            if not isinstance(spec, dict):
                continue
            where = f"/tensor_parallel/partition_config/layer_specs/{index}"
            kind = spec.get("partition_type", "column")
            if isinstance(kind, str) and kind.lower() not in PARTITION_TYPES:
                close = did_you_mean(kind.lower(), PARTITION_TYPES)
                yield self.finding(document, f"{where}/partition_type",
                                   f"layer_specs[{index}].partition_type {json.dumps(kind)} is not column, row or skip: "
                                   f"{tail} (\"'{kind.lower()}' is not a valid PartitionType\")"
                                   + (f"; did you mean {json.dumps(close)}?" if close else ""),
                                   fix=json.dumps(close) if close else None)
                continue
            if "shape" not in spec or spec["shape"] is None:
                continue
            # a partition_type that is no string stays as written: it is not COLUMN, so the default dim is 1
            refusal = shape_refusal(spec["shape"], spec.get("partition_dim"), kind.lower() if isinstance(kind, str)
                                    else "other")
            if refusal is not None:
                yield self.finding(document, f"{where}/shape",
                                   f"layer_specs[{index}].shape {json.dumps(spec['shape'])}: {tail} (\"{refusal}\")")
                continue
            if not isinstance(kind, str) or kind.lower() == "skip":
                continue
            yield from self._layer_refusal(document, where, index, spec, kind.lower(), size)
        yield from self._loss_backend(document, section, size)

    def _layer_refusal(self, document: Document, where: str, index: int, spec: dict, kind: str,
                       size: int) -> Iterable[Finding]:
        """What AutoTP raises when it replaces a weight the spec's patterns match (auto_tp.py
        _create_column_parallel_layer, layers.py _infer_subparam_logical_shapes): whether the model has
        such a weight is the program's, so an info naming it."""
        shape = _tuple(spec["shape"])
        patterns = spec.get("patterns")
        unknown = UnknownContext(
            "program", f"whether the model has a weight that layer_specs[{index}].patterns "
                       f"{json.dumps(patterns)} match (the config does not show the model; a spec that matches no weight "
                       "is never used)",
            "check the patterns against the model's parameter names (model.named_parameters())")
        tail = (f"with tensor_parallel.autotp_size {size}, deepspeed.initialize raises {{}} when AutoTP replaces the "
                "first weight the spec's patterns match")
        if kind == "column" and spec.get("gather_output") is True:
            yield self.finding(document, f"{where}/gather_output",
                               f"layer_specs[{index}] has both a shape and gather_output true: "
                               + tail.format("NotImplementedError") + " (\"AutoTP gather_output does not yet support "
                               "shaped sub-parameter layers.\"); drop gather_output, or the shape", unknown_context=unknown)
            return
        dim = spec.get("partition_dim")
        dim = dim if isinstance(dim, int) and not isinstance(dim, bool) else (0 if kind == "column" else 1)
        inferred = sum(1 for position, item in enumerate(shape)
                       if item == -1 or (position == dim and isinstance(item, int) and item > 0))
        if inferred >= 2 and len(shape) != 2:  # Linear and Embedding weights, the layers AutoTP replaces, are 2-D
            yield self.finding(document, f"{where}/shape",
                               f"layer_specs[{index}].shape {json.dumps(spec['shape'])} leaves {inferred} dimensions to "
                               f"infer (-1, or a sub-parameter count at partition_dim) and has {len(shape)}, not 2: "
                               + tail.format("ValueError") + " (\"AutoTP layer '...' shape has multiple inferred dims "
                               "and is ambiguous for weight.\"); give every dimension but one", unknown_context=unknown)

    def _loss_backend(self, document: Document, section: dict, size: int) -> Iterable[Finding]:
        """vocab_parallel_ce_backend "liger" needs the vocabulary-parallel LM head, which AutoTP builds only
        with vocab_parallel_lm_head true, or, unset and without a partition_config, where the model's
        Hugging Face tp_plan asks for it (a tied head planned "embedding_rowwise")."""
        if section.get("vocab_parallel_ce_backend") != "liger" or section.get("vocab_parallel_lm_head") is True:
            return
        head = section.get("vocab_parallel_lm_head")
        unknown = None
        if head is None and section.get("partition_config") is None:
            unknown = UnknownContext(
                "program", "vocab_parallel_lm_head is unset, so whether AutoTP builds the vocabulary-parallel head "
                           "depends on the model's Hugging Face tp_plan (a tied output head planned "
                           "\"embedding_rowwise\"), which the config does not show",
                "set tensor_parallel.vocab_parallel_lm_head explicitly")
        shown = "unset" if head is None else json.dumps(head)
        yield self.finding(document, "/tensor_parallel/vocab_parallel_ce_backend",
                           f"vocab_parallel_ce_backend \"liger\" with vocab_parallel_lm_head {shown}"
                           + (" and a partition_config" if section.get("partition_config") is not None else "")
                           + f": with tensor_parallel.autotp_size {size}, deepspeed.initialize raises ValueError after "
                           "AutoTP shards the model (\"vocab_parallel_ce_backend='liger' requires a no-gather "
                           "vocabulary-parallel LM head\"); set vocab_parallel_lm_head to true, or the backend to "
                           "\"torch\"", unknown_context=unknown)
