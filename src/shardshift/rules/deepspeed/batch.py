"""The data-parallel size DeepSpeed takes from the file (DS202). The batch arithmetic itself
(DS201) is a rule over the Plan: rules/plan/batch.py."""

from __future__ import annotations

from typing import Iterable

from shardshift.document import Document
from shardshift.rules.base import Context, Finding, Rule


def _int(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _whole(value) -> int | None:
    """A whole JSON number as DeepSpeed's reader lifts it (5e8 and 8.0 count; booleans do not).
    Read from the document, not the Plan, so that checking a file does not build a Plan."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class DataParallelSizeMismatch(Rule):
    """`data_parallel_size` that DeepSpeed ignores, or that does not fit the world size.

    ## What it does
    `deepspeed.initialize` reads `data_parallel_size` only together with
    `sequence_parallel_size`: the two build its (data_parallel, sequence_parallel) device mesh,
    and the data-parallel size of the batch arithmetic is then `data_parallel_size`. Reports
    `data_parallel_size` without `sequence_parallel_size` (a warning: DeepSpeed never reads it,
    the batch arithmetic uses the whole world size), and, with `--world-size` (or `--nodes` and
    `--gpus-per-node`), a mesh `data_parallel_size × sequence_parallel_size` that does not match
    the world size (an error when it is larger: torch refuses a mesh larger than the world).

    ## Why is this bad
    The key reads like a way to tell DeepSpeed the data-parallel size when tensor or pipeline
    parallelism shrink it, but on its own it changes nothing: `train_batch_size` is still checked
    against micro × accumulation × all GPUs, and the assertion fires at launch. A mesh that does
    not cover the world stops `deepspeed.initialize` or leaves ranks out of it.

    ## Example
    ```json
    {"train_batch_size": 64, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 4,
     "data_parallel_size": 4}
    ```
    (on 16 GPUs with tensor parallelism of 4)

    ## Use instead
    ```json
    {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 4}
    ```
    and pass the model-parallel `mpu` to `deepspeed.initialize`, which gives DeepSpeed the
    data-parallel size (or set both `data_parallel_size` and `sequence_parallel_size` for
    Ulysses sequence parallelism).
    """

    code = "DS202"
    name = "data-parallel-size-mismatch"
    severity = "error"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        if document.syntax is not None or not isinstance(data, dict) or "data_parallel_size" not in data:
            return
        dp = _int(_whole(data.get("data_parallel_size")))
        if dp is None:
            return  # "auto" or a bad value (DS102)
        world = context.world_size
        if "sequence_parallel_size" not in data:
            used = f"the whole world size ({world})" if world else "the whole world size"
            yield self.finding(
                document, "/data_parallel_size",
                f"data_parallel_size is {dp} but sequence_parallel_size is not set: DeepSpeed reads "
                f"data_parallel_size only with sequence_parallel_size (to build its device mesh) and uses {used} as "
                "the data-parallel size of the batch arithmetic; remove it, or pass the model-parallel mpu to "
                "deepspeed.initialize", severity="warning", key=True)
            return
        sp = _int(_whole(data.get("sequence_parallel_size")))
        if sp is None or world is None or dp * sp == world:
            return
        larger = dp * sp > world
        effect = ("torch refuses a mesh larger than the world" if larger else
                  f"{world - dp * sp} of the {world} ranks are left out of it")
        advice = (f"set data_parallel_size to {world // sp}" if world % sp == 0 else
                  f"choose sizes whose product is {world}")
        yield self.finding(
            document, "/data_parallel_size",
            f"data_parallel_size {dp} × sequence_parallel_size {sp} = {dp * sp}, but the world size is {world}: "
            f"DeepSpeed builds its (data_parallel, sequence_parallel) device mesh from these two keys, and {effect}; "
            f"{advice}", severity="error" if larger else "warning", fix=str(world // sp) if world % sp == 0 else None)
