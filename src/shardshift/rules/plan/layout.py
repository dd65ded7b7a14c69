"""The parallel layout over the Plan: the degrees of the parallel axes against the world size
and against the model's shape. Written once for every format; the reference for each fact is
../shared/reference/megatron.md §2 and torchtitan.md §3."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Iterable

from shardshift.plan import known
from shardshift.rules.base import Context, Finding, PlanRule, Related, name_of

if TYPE_CHECKING:
    from shardshift.setup import Setup

MODEL_AXES = ("parallelism.tensor", "parallelism.pipeline", "parallelism.context")
DATA_AXES = ("parallelism.data_parallel_replicate", "parallelism.data_parallel_shard")


def _degrees(setup: Setup, dotted_names: tuple[str, ...]) -> dict[str, int] | None:
    """The degrees the Plan gives (positive ints), or None when one is set but not known (an
    "auto", an Unknown or a bad value) so that nothing can be judged."""
    found = {}
    for dotted in dotted_names:
        value = setup.plan.get(dotted)
        if value is None:
            continue
        value = known(value)
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            return None
        found[dotted] = value
    return found


def _world(setup: Setup, context: Context) -> int | None:
    return context.world_size or known(setup.plan.world.world_size)


class _LayoutRule(PlanRule):
    def spelled(self, setup: Setup, degrees: dict[str, int]) -> str:
        return " × ".join(f"{name_of(setup.plan.origin(d), d)} {v}" for d, v in degrees.items())

    def place(self, setup: Setup, degrees: dict[str, int]):
        """The first degree with a recorded place, and the others as related places."""
        places = [(d, setup.plan.provenance[d]) for d in degrees if d in setup.plan.provenance]
        if not places:
            return None, []
        (_, first), rest = places[0], places[1:]
        return first, [self.related_at(w, f"{name_of(w, d)} is set here") for d, w in rest]


class ParallelDegreesAgainstWorld(_LayoutRule):
    """The parallel degrees do not fit the world size.

    ## What it does
    With the world size known (`--world-size`, `--nodes` × `--gpus-per-node`, or a world size
    the setup states), checks that tensor × pipeline × context parallelism divides it (Megatron's
    "world size not divisible by total_model_size") and, when the setup also gives the
    data-parallel degrees (replicate, shard), that all of them multiply to exactly the world
    size (torchtitan's "Invalid parallel dims"; a device mesh of another size is refused by
    torch). Degrees that are `"auto"` or not known before the job runs are not judged.

    ## Why is this bad
    Every framework checks this only once the processes have started, after the job waited for
    its GPUs.

    ## Example
    Tensor parallel 4 and pipeline parallel 3 on 16 GPUs: 12 does not divide 16.

    ## Use instead
    Degrees whose product divides the world size (tensor 4 × pipeline 2 on 16 GPUs leaves a
    data-parallel size of 2).
    """

    code = "PL101"
    judges_world = True
    name = "parallel-degrees-against-world"
    severity = "error"

    def check_setup(self, setup: Setup, context: Context) -> Iterable[Finding]:
        world = _world(setup, context)
        model = _degrees(setup, MODEL_AXES)
        data = _degrees(setup, DATA_AXES)
        if world is None or model is None or data is None:
            return
        if not any(d in model for d in ("parallelism.tensor", "parallelism.pipeline")) and not data:
            return  # context parallelism alone: the batch rule (DS201) judges it with the batch sizes
        product = 1
        for value in model.values():
            product *= value
        where, related = self.place(setup, {**model, **data})
        if where is None:
            return
        world_at = setup.plan.provenance.get("world.world_size")
        if context.world_size is None and world_at is not None and world_at.file != where.file:
            # the world comes from another file of the setup (the launch script that starts the run)
            related = [*related, self.related_at(world_at, f"the world size {world} is set here")]
        if world % product:
            from shardshift.formats.megatron.program import fork_checks, fork_checks_world, fork_of

            # a vendored Megatron checks (or clamps) the degrees its own way: read its validate_args
            fork = fork_of(setup.documents)
            unknown = None
            if fork is not None:
                kept = fork_checks_world(fork)
                if kept is None:
                    unknown = fork_checks(fork)
                else:
                    related = [*related, Related(os.path.relpath(kept[0]), kept[1], 1, None,
                                                 "the vendored Megatron's validate_args tests this too")]
            yield self.finding_at(where, f"{self.spelled(setup, model)} = {product} does not divide the world size "
                                         f"{world}; choose degrees whose product divides {world}", related=related,
                                  unknown_context=unknown)
            return
        if data:
            total = product
            for value in data.values():
                total *= value
            if total != world:
                yield self.finding_at(where, f"{self.spelled(setup, {**model, **data})} = {total}, but the world "
                                             f"size is {world}; the degrees must multiply to exactly {world}",
                                      related=related)


class ExpertParallelAgainstWorld(_LayoutRule):
    """Expert parallelism that cannot be laid over the ranks.

    ## What it does
    Expert parallelism re-partitions ranks that already hold a pipeline stage: Megatron builds
    its expert grid as world = expert-data × expert-tensor × expert × pipeline, and torchtitan
    requires the expert degree to divide dp_shard × cp × tp, a divisor of world / pipeline. So
    in both the expert degree must divide world size / pipeline degree. Reports an expert degree
    that does not, when the world size is known.

    ## Why is this bad
    The device mesh for the experts cannot be built; the job fails at start-up.

    ## Example
    Expert parallel 3 on 8 GPUs.

    ## Use instead
    An expert degree that divides the ranks of one pipeline stage (1, 2, 4 or 8 on 8 GPUs).
    """

    code = "PL102"
    judges_world = True
    name = "expert-parallel-against-world"
    severity = "error"

    def check_setup(self, setup: Setup, context: Context) -> Iterable[Finding]:
        world = _world(setup, context)
        degrees = _degrees(setup, ("parallelism.expert", "parallelism.pipeline"))
        if world is None or degrees is None or degrees.get("parallelism.expert", 1) == 1:
            return
        expert, pipeline = degrees["parallelism.expert"], degrees.get("parallelism.pipeline", 1)
        if world % pipeline or (world // pipeline) % expert:
            where, related = self.place(setup, degrees)
            if where is None:
                return
            per_stage = f"the world size {world} / {name_of(setup.plan.origin('parallelism.pipeline'), 'pipeline')} " \
                f"{pipeline}" \
                if pipeline > 1 else f"the world size {world}"
            yield self.finding_at(where, f"{name_of(where, 'parallelism.expert')} {expert} does not divide "
                                         f"{per_stage}: the expert mesh cannot be built; use a divisor of "
                                         f"{world // pipeline if world % pipeline == 0 else world}", related=related)


class HeadsAgainstTensorParallel(_LayoutRule):
    """Attention heads (or key-value heads) that tensor parallelism cannot split evenly.

    ## What it does
    Tensor parallelism gives each rank an equal share of the attention heads: torchtitan's
    tensor-parallel plan splits the head projections evenly, and Megatron's TransformerConfig
    raises ValueError unless `num_attention_heads % tensor_model_parallel_size == 0`. Key-value
    heads must be split the same way, except in Megatron-LM, which also accepts key-value heads
    (`--num-query-groups` with `--group-query-attention`) that divide the tensor degree, each
    group then replicated over tensor degree / groups ranks ("num_query_groups must be a multiple
    or divisor of tensor_model_parallel_size", since core_v0.16). Reports heads or key-value heads
    that do not fit the tensor degree when the setup states both.

    ## Why is this bad
    The model fails to build, after the job started.

    ## Example
    32 attention heads with tensor parallel 3.

    ## Use instead
    A tensor degree that divides the number of heads and of key-value heads (1, 2, 4, 8 for 32
    heads and 8 key-value heads; with Megatron-LM also 16 or 32, which 8 key-value heads divide).
    """

    code = "PL103"
    name = "heads-against-tensor-parallel"
    severity = "error"

    def check_setup(self, setup: Setup, context: Context) -> Iterable[Finding]:
        degrees = _degrees(setup, ("parallelism.tensor",))
        if not degrees:
            return
        tensor = degrees["parallelism.tensor"]
        plan = setup.plan
        # Megatron-LM's TransformerConfig replicates key-value heads that divide the tensor degree
        megatron = bool(setup.documents) and setup.documents[0].format == "megatron"
        for dotted in ("model.heads", "model.kv_heads"):
            heads = known(plan.get(dotted))
            if not isinstance(heads, int) or isinstance(heads, bool) or heads < 1 or heads % tensor == 0:
                continue
            replicated = megatron and dotted == "model.kv_heads"
            if replicated and tensor % heads == 0:
                continue
            where = plan.provenance.get(dotted)
            tensor_at = plan.provenance.get("parallelism.tensor")
            if where is None or tensor_at is None:
                continue
            divisors = [d for d in range(1, min(heads, max(tensor, 8), 100_000) + 1) if heads % d == 0]
            related = [self.related_at(tensor_at, f"{name_of(tensor_at, 'tensor')} is set here")]
            if replicated:
                multiples = [heads * k for k in (2, 4)]
                yield self.finding_at(
                    where, f"{name_of(where, dotted)} {heads} is neither a multiple nor a divisor of "
                           f"{name_of(tensor_at, 'tensor')} {tensor}: Megatron's TransformerConfig raises ValueError "
                           f"'num_query_groups ({heads}) must be a multiple or divisor of tensor_model_parallel_size "
                           f"({tensor})' when the model is built; use a tensor degree in {divisors + multiples}",
                    related=related)
                continue
            yield self.finding_at(
                where, f"{name_of(where, dotted)} {heads} is not divisible by {name_of(tensor_at, 'tensor')} "
                       f"{tensor}: each tensor-parallel rank must hold the same number of heads; use a tensor degree "
                       f"in {divisors}", related=related)
