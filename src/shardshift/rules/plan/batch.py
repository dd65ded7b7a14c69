"""Batch arithmetic over the Plan: global = micro × accumulation × data-parallel size, where the
data-parallel size is the world size divided by the tensor, pipeline and context degrees.

DS201 began as a DeepSpeed rule and keeps its code (codes are never renamed); it now judges the
merged Plan of any setup, with DeepSpeed's derivation (floor division of a missing value)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from shardshift.plan import known
from shardshift.rules.base import Context, Finding, PlanRule, name_of

if TYPE_CHECKING:
    from shardshift.setup import Setup


def _positive(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


class BatchArithmetic(PlanRule):
    """The batch sizes do not multiply out, so the job stops at launch.

    ## What it does
    DeepSpeed asserts `train_batch_size == train_micro_batch_size_per_gpu ×
    gradient_accumulation_steps × data-parallel size`, deriving a missing value by floor
    division first; the other frameworks compute the same product. With `--world-size` (or
    `--nodes` and `--gpus-per-node`, or a world size the setup states) this rule does the same
    arithmetic; without it, it checks that some data-parallel size could work at all (the global
    batch divisible by micro × accumulation). The data-parallel size is the world size divided
    by the context (DeepSpeed: `sequence_parallel_size`), tensor and pipeline degrees the setup
    states. The rule judges the merged Plan of a setup, so values a referring file fills in for
    a ds_config's `"auto"` count; `"auto"` left unfilled and values not known before the job
    runs are never judged.

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
    judges_world = True
    name = "batch-arithmetic"
    severity = "error"

    def check_setup(self, setup: Setup, context: Context) -> Iterable[Finding]:
        plan = setup.plan
        elastic = plan.passthrough.get("deepspeed", {}).get("elasticity")
        if isinstance(elastic, dict) and elastic.get("enabled") is True:
            return  # DeepSpeed's elasticity computes the batch sizes itself
        batch = plan.batch
        values = {"batch.global_": batch.global_, "batch.micro": batch.micro, "batch.accumulation": batch.accumulation}
        if any(v is not None and known(v) is None for v in values.values()):
            return  # "auto" nobody filled, or a value known only at run time
        configs = setup.of_format("deepspeed")
        if batch.global_ is None and batch.micro is None:
            # Only "auto" is filled by the integrations, never a missing key; a YAML framework's own
            # batch settings would have been merged in above.
            if configs and (setup.referrer is None or setup.referrer.format == "python"):
                document = configs[0]
                keys = ("train_batch_size", "train_micro_batch_size_per_gpu")
                data = document.data if isinstance(document.data, dict) else {}
                if any(data.get(k) is not None for k in keys):
                    return  # written, but not as a number: DS102 says what DeepSpeed does with it
                from shardshift.source import Location

                nulls = [k for k in keys if k in data]  # null: unset, as DeepSpeed's config.get reads it
                said = f" ({' and '.join(nulls)} null, which DeepSpeed reads as unset)" if nulls else ""
                yield self.finding_at(
                    Location(document.path, 1, 1, ""),
                    f"neither train_batch_size nor train_micro_batch_size_per_gpu is set{said}; DeepSpeed asserts one "
                    "of them at launch; add train_micro_batch_size_per_gpu")
            return
        total, micro, accumulation = (_positive(v) for v in values.values())
        if any(values[n] is not None and v is None for n, v in zip(values, (total, micro, accumulation))):
            return  # a bad value: the format's invalid-value rule reports it
        if total is None:
            return  # micro (and accumulation) given: the total is derived, always consistent
        world = context.world_size or known(plan.world.world_size)
        if world is not None:
            yield from self._with_world(setup, world, total, micro, accumulation)
        else:
            yield from self._without_world(setup, total, micro, accumulation)

    def _with_world(self, setup, world, total, micro, accumulation):
        plan = setup.plan
        split, named = 1, []
        for dotted in ("parallelism.context", "parallelism.tensor", "parallelism.pipeline"):
            value = plan.get(dotted)
            if value is not None and known(value) is None:
                return  # a model-parallel degree not known before the job runs
            degree = _positive(value)
            if value is not None and degree is None:
                return  # a bad value: the format's invalid-value rule reports it
            if degree is not None and degree > 1:
                split *= degree
                named.append((dotted, degree))
        if world % split:
            if any(d != "parallelism.context" for d, _ in named):
                return  # tensor or pipeline parallelism: PL101 reports the degrees against the world
            dotted, degree = named[0]
            yield self.finding_at(self._at(plan, dotted, setup),
                                  f"{name_of(plan.origin(dotted), dotted)} {degree} does not divide the world size "
                                  f"{world}")
            return
        dp = world // split
        ranks = f"{dp} data-parallel ranks" + (
            f" ({world} GPUs / " + " / ".join(f"{name_of(plan.origin(d), d)} {v}" for d, v in named) + ")"
            if named else "")
        where = self._at(plan, "batch.global_", setup)
        name = name_of(plan.origin("batch.global_"), "batch.global_")
        if micro is not None and accumulation is not None:
            expected = micro * accumulation * dp
            if expected != total:
                yield self.finding_at(where, f"{name} is {total} but micro {micro} × accumulation {accumulation} × "
                                             f"{ranks} = {expected}; set it to {expected} or drop it",
                                      fix=str(expected), related=self._others(plan, where))
            return
        # DeepSpeed derives the missing value by floor division and then asserts the product; the
        # other frameworks assert divisibility directly. Name the derived field DeepSpeed's way
        # only when a ds_config is part of the setup.
        deepspeed = bool(setup.of_format("deepspeed"))
        derives = "DeepSpeed derives" if deepspeed else "that gives"
        accumulation_name = self._name(plan, "batch.accumulation", "gradient_accumulation_steps" if deepspeed
                                       else "accumulation")
        micro_name = self._name(plan, "batch.micro", "train_micro_batch_size_per_gpu" if deepspeed else "micro")
        if micro is not None:
            derived = total // micro // dp
            what = f"{accumulation_name} = {total} // {micro} // {dp} = {derived}"
            result = micro * derived * dp
        elif accumulation is not None:
            derived = total // dp // accumulation
            what = f"{micro_name} = {total} // {dp} // {accumulation} = {derived}"
            result = derived * accumulation * dp
        else:
            derived = total // dp
            what = f"{micro_name} = {total} // {dp} = {derived}"
            result = derived * dp
        if derived == 0:
            yield self.finding_at(where, f"{name} {total} is too small for {ranks}: {derives} {what}"
                                         + (" and asserts it is greater than 0" if deepspeed else ""))
        elif result != total:
            megatron = plan.passthrough.get("megatron", {})
            rounds = megatron.get("--decrease-batch-size-if-needed", False)
            if rounds is not False and rounds is not True:
                return  # a value not known before the job runs
            if rounds and "--eval-global-batch-size" in megatron:
                # Megatron's microbatch calculator rounds the training batch down instead of refusing it
                yield self.finding_at(where, f"{name} {total} does not divide evenly over {ranks}: with "
                                             f"--decrease-batch-size-if-needed Megatron rounds it down to {result} "
                                             f"({what}), so the run trains on {result} samples per step, not "
                                             f"{total}; set {name} to {result}", fix=str(result), severity="warning")
                return
            also = (" (--decrease-batch-size-if-needed rounds only the training batch: validate_args asserts that the "
                    "eval global batch, which defaults to it, divides evenly)" if rounds else "")
            yield self.finding_at(where, f"{name} {total} does not divide evenly over {ranks}: {derives} "
                                         f"{what}, then the product is {result} ≠ {total}{also}; set {name} to "
                                         f"{result}", fix=str(result))

    def _without_world(self, setup, total, micro, accumulation):
        plan = setup.plan
        step = (micro or 1) * (accumulation or 1)
        if total % step:
            parts = " × ".join(f"{name} {v}" for name, v in (("micro", micro), ("accumulation", accumulation)) if v)
            lower = total - total % step
            name = name_of(plan.origin("batch.global_"), "batch.global_")
            where = self._at(plan, "batch.global_", setup)
            yield self.finding_at(
                where, f"{name} {total} is not a multiple of {parts} = {step}, so no data-parallel size works; use a "
                       f"multiple of {step} such as {lower or step} (pass --world-size for the exact value)",
                fix=str(lower or step), related=self._others(plan, where))

    @staticmethod
    def _name(plan, dotted: str, deepspeed_name: str) -> str:
        """The derived field's name: as its source spells it, else DeepSpeed's key (DeepSpeed derives it)."""
        where = plan.origin(dotted)
        return name_of(where, dotted) if where is not None else deepspeed_name

    @staticmethod
    def _at(plan, dotted: str, setup: Setup):
        from shardshift.source import Location

        where = plan.provenance.get(dotted)
        if where is not None:
            return where
        document = setup.documents[0]
        return Location(document.path, 1, 1, None)

    def _others(self, plan, where):
        """The micro and accumulation values when another file set them (a setup of several files)."""
        related = []
        for dotted in ("batch.micro", "batch.accumulation"):
            other = plan.provenance.get(dotted)
            if other is not None and other.file != where.file:
                related.append(self.related_at(other, f"{name_of(other, dotted)} is set here"))
        return related
