"""Batch arithmetic: train_batch_size = micro x accumulation x data-parallel size
(DeepSpeed runtime/config.py, _set_batch_related_parameters and _batch_assertion), and the
data-parallel size DeepSpeed takes from the file (DS201, DS202)."""

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


class BatchArithmetic(Rule):
    """The batch sizes do not multiply out, so DeepSpeed stops at launch.

    ## What it does
    DeepSpeed asserts `train_batch_size == train_micro_batch_size_per_gpu ×
    gradient_accumulation_steps × data-parallel size`, deriving a missing value by floor
    division first. With `--world-size` (or `--nodes` and `--gpus-per-node`) this rule does the
    same arithmetic; without it, it checks that some data-parallel size could work at all
    (`train_batch_size` divisible by micro × accumulation). The data-parallel size is the world
    size divided by `sequence_parallel_size` when that key is set; tensor or pipeline
    parallelism passed through an mpu shrinks it further.

    ## Why is this bad
    The assertion fires only at `deepspeed.initialize`, after the job got its GPUs. Floor
    division also hides mistakes: train 32, micro 3 on 4 GPUs derives accumulation 2, and
    3 × 2 × 4 = 24 ≠ 32.

    ## Example
    ```json
    {"train_batch_size": 64, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 8}
    ```
    (on 8 GPUs: 4 × 8 × 8 = 256)

    ## Use instead
    ```json
    {"train_batch_size": 256, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 8}
    ```
    or leave `train_batch_size` out and let DeepSpeed derive it.
    """

    code = "DS201"
    name = "batch-arithmetic"
    severity = "error"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        if document.syntax is not None or not isinstance(data, dict):
            return
        elastic = data.get("elasticity")
        if isinstance(elastic, dict) and elastic.get("enabled") is True:
            return  # elasticity computes the batch sizes itself
        present = {name: data.get(name) for name in
                   ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps")}
        if "auto" in present.values():
            return  # filled in by the Hugging Face integration
        if present["train_batch_size"] is None and present["train_micro_batch_size_per_gpu"] is None:
            yield self.finding(document, "", "neither train_batch_size nor train_micro_batch_size_per_gpu is set; "
                               "DeepSpeed asserts one of them at launch; add train_micro_batch_size_per_gpu",
                               position=(1, 1))
            return
        total, micro, accumulation = (_int(_whole(value)) for value in present.values())
        if any(present[n] is not None and v is None for n, v in zip(present, (total, micro, accumulation))):
            return  # a bad value: invalid-value reports it
        sp = _whole(data.get("sequence_parallel_size"))
        sp = 1 if sp is None else sp
        if context.world_size is not None:
            yield from self._with_world(document, context.world_size, sp, total, micro, accumulation)
        else:
            yield from self._without_world(document, total, micro, accumulation)

    def _with_world(self, document, world, sp, total, micro, accumulation):
        if sp < 1 or world % sp:
            yield self.finding(document, "/sequence_parallel_size",
                               f"sequence_parallel_size {sp} does not divide the world size {world}")
            return
        dp = world // sp
        ranks = f"{dp} data-parallel ranks" + (f" ({world} GPUs / sequence_parallel_size {sp})" if sp > 1 else "")
        if total is None:
            return  # micro (and accumulation) given: DeepSpeed derives the total, always consistent
        if micro is not None and accumulation is not None:
            expected = micro * accumulation * dp
            if expected != total:
                yield self.finding(
                    document, "/train_batch_size",
                    f"train_batch_size is {total} but micro {micro} × accumulation {accumulation} × {ranks} = "
                    f"{expected}; set it to {expected} or drop it", fix=str(expected))
            return
        if micro is not None:
            derived = total // micro // dp
            what = f"gradient_accumulation_steps = {total} // {micro} // {dp} = {derived}"
            result = micro * derived * dp
        elif accumulation is not None:
            derived = total // dp // accumulation
            what = f"train_micro_batch_size_per_gpu = {total} // {dp} // {accumulation} = {derived}"
            result = derived * accumulation * dp
        else:
            derived = total // dp
            what = f"train_micro_batch_size_per_gpu = {total} // {dp} = {derived}"
            result = derived * dp
        if derived == 0:
            yield self.finding(document, "/train_batch_size",
                               f"train_batch_size {total} is too small for {ranks}: DeepSpeed derives {what} and "
                               "asserts it is greater than 0", fix=None)
        elif result != total:
            yield self.finding(
                document, "/train_batch_size",
                f"train_batch_size {total} does not divide evenly over {ranks}: DeepSpeed derives {what}, then "
                f"the product is {result} ≠ {total}; set train_batch_size to {result}", fix=str(result))

    def _without_world(self, document, total, micro, accumulation):
        if total is None:
            return
        step = (micro or 1) * (accumulation or 1)
        if total % step:
            parts = " × ".join(f"{name} {v}" for name, v in (("micro", micro), ("accumulation", accumulation)) if v)
            lower = total - total % step
            yield self.finding(
                document, "/train_batch_size",
                f"train_batch_size {total} is not a multiple of {parts} = {step}, so no data-parallel size "
                f"works; use a multiple of {step} such as {lower or step} (pass --world-size for the exact value)",
                fix=str(lower or step))


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
