"""PL201: a setup that cannot fit in the GPU memory given (the planner's estimate)."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Iterable

from shardshift.plan import known
from shardshift.rules.base import Context, Finding, PlanRule

if TYPE_CHECKING:
    from shardshift.setup import Setup

# Settings the memory estimate reads: one that is set but not known before the run ("auto" the
# integration fills, an environment variable) leaves the estimate undecided, and the rule silent.
DECIDING = ("sharding.stage", "sharding.reshard_after_forward", "sharding.hybrid", "sharding.hybrid_shard_size",
            "parallelism.tensor", "parallelism.pipeline", "parallelism.context", "parallelism.expert",
            "parallelism.data_parallel_replicate", "parallelism.data_parallel_shard",
            "parallelism.sequence_parallel", "parallelism.virtual_pipeline",
            "offload.optimizer.device", "offload.params.device", "precision.param_dtype",
            "batch.sequence_length", "optimizer.name", "activation_checkpointing.enabled",
            "world.world_size", "world.nodes", "world.gpus_per_node")
# Settings whose unknown value only lowers the estimate when taken at its least (micro batch 1).
AT_LEAST_ONE = ("batch.micro", "batch.accumulation", "batch.global_")
GB = 10**9


@lru_cache(maxsize=8)
def _config_model(path: str):
    from shardshift.planner.model import load_config

    try:
        return load_config(path)
    except ValueError:
        return None


def _sharding(layout) -> str:
    if layout.engine == "fsdp2":
        return {3: "FSDP2 full shard", 2: "FSDP2 without reshard after forward"}.get(layout.stage, "FSDP2 no shard")
    if layout.engine == "megatron":
        return "Megatron with the distributed optimizer" if layout.distributed_optimizer else "Megatron DDP"
    if layout.engine == "ddp":
        return "DDP"
    return f"ZeRO-{layout.stage}" if layout.stage else "DeepSpeed without ZeRO"


class SetupDoesNotFit(PlanRule):
    """The setup needs more memory per GPU than the GPUs have.

    ## What it does
    With the GPU memory (`--gpu-memory 80GB` or `gpu-memory` in `[tool.shardshift]`), the model
    (`--model-params 8B`, `--model-config config.json`, or the shape a Megatron script states)
    and the world size known, estimates the memory each GPU needs for this setup as
    `shardshift plan` does: parameters, gradients, master weights and optimizer states by ZeRO
    stage / FSDP2 sharding, hybrid groups, tensor / pipeline / expert splits and offload
    (DeepSpeed's and Megatron's own accounting), activations for the micro batch when the
    model's shape and the sequence length are known, and the buffers the config sizes. When the
    total exceeds the GPU memory, it reports at the setting that decides it (the sharding
    stage) with the smallest change that fits. The estimate is a lower bound where something is
    not stated: no activations without a shape and a sequence length, micro batch 1 when it is
    not set, no optimizer state when the setup names no optimizer (Megatron-LM and torchtitan
    build their default Adam / AdamW themselves, and it is counted). Nothing is judged when the
    world size, the GPU memory or the model is not known, or when a setting the estimate reads
    is `"auto"` or known only at run time.

    ## Why is this bad
    The job gets its GPUs, loads the model, and fails with CUDA out of memory at the first step
    (or at the optimizer's first step, when the states are allocated lazily).

    ## Example
    An 8B model with ZeRO-1 in bf16 with Adam on 8 × 24 GB: 16 GB of 16-bit parameters and
    gradients per GPU before the 12 bytes/parameter of optimizer state (sharded 8 ways, 12 GB).
    ```json
    {"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
     "optimizer": {"type": "AdamW"}, "zero_optimization": {"stage": 1}}
    ```

    ## Use instead
    ```json
    {"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true},
     "optimizer": {"type": "AdamW"}, "zero_optimization": {"stage": 3}}
    ```
    `shardshift plan` shows every part of the estimate and the assumption each rests on.
    """

    code = "PL201"
    name = "setup-does-not-fit"
    severity = "error"

    def check_setup(self, setup: Setup, context: Context) -> Iterable[Finding]:
        if context.gpu_memory is None:
            return
        plan = setup.plan
        for dotted in DECIDING:
            value = plan.get(dotted)
            if value is not None and known(value) is None:
                return
        if known(plan.precision.param_dtype) is None and self._undecided_precision(plan):
            return
        world = context.world_size or known(plan.world.world_size)
        if not isinstance(world, int) or world < 1:
            return
        model = self._model(plan, context)
        if model is None:
            return
        from shardshift.planner import layout as layouts
        from shardshift.planner import memory
        from shardshift.planner.types import Machine

        per_node = context.gpus_per_node or known(plan.world.gpus_per_node)
        if not isinstance(per_node, int) or per_node < 1 or world % per_node:
            if known(plan.sharding.hybrid) is True and known(plan.sharding.hybrid_shard_size) is None:
                return  # hybrid sharding over "one node" of an unknown size
            per_node = world
        machine = Machine(nodes=world // per_node, gpus_per_node=per_node, gpu_memory=context.gpu_memory)
        from shardshift.planner.report import framework_of

        layout = layouts.layout_of(plan, machine, framework=framework_of(setup))
        if layout.world_size % (layout.tensor * layout.pipeline * layout.context):
            return  # PL101 reports the degrees against the world size
        # Megatron-LM (--optimizer, default adam) and torchtitan ([optimizer] name, default AdamW)
        # build the optimizer themselves; elsewhere a setup that names none leaves it to the code.
        no_optimizer = (plan.optimizer is None or plan.optimizer.name is None) \
            and layout.engine != "megatron" and layout.framework != "torchtitan"
        if no_optimizer:
            layout.optimizer_state_bytes = 0

        def estimate_fn(candidate):
            if no_optimizer:
                candidate.optimizer_state_bytes = 0
            return memory.estimate(candidate, model, machine)

        estimate = estimate_fn(layout)
        if estimate.fits is not False:
            return
        yield self._finding(setup, layout, model, machine, estimate, estimate_fn, no_optimizer)

    @staticmethod
    def _undecided_precision(plan) -> bool:
        """A ds_config's `bf16`/`fp16` block with `"enabled": "auto"` that no linked file filled (the
        Hugging Face integration fills it at launch): the training dtype is not known before the run."""
        deepspeed = plan.passthrough.get("deepspeed")
        if not isinstance(deepspeed, dict):
            return False
        for key in ("bf16", "bfloat16", "fp16"):
            block = deepspeed.get(key)
            if isinstance(block, dict) and block.get("enabled") == "auto":
                return True
        return False

    @staticmethod
    def _model(plan, context: Context):
        from shardshift.planner.model import model_from

        if context.model_config is not None:
            model = _config_model(context.model_config)
            if model is None:
                return None
            if context.model_parameters is not None:
                import copy

                model = copy.copy(model)
                model.parameters = context.model_parameters
            return model
        return model_from(plan, parameters=context.model_parameters)

    def _finding(self, setup, layout, model, machine, estimate, estimate_fn, no_optimizer) -> Finding:
        from shardshift.source import Location

        plan = setup.plan
        what = _sharding(layout)
        split = [f"{label} {getattr(layout, axis)}" for axis, label in
                 (("tensor", "TP"), ("pipeline", "PP"), ("context", "CP"), ("expert", "EP"))
                 if getattr(layout, axis) > 1]
        on = (f"{machine.nodes} × {machine.gpus_per_node}" if machine.nodes > 1 else f"{machine.world_size}") \
            + f" × {machine.gpu_memory / GB:.0f} GB"
        parts = sorted(((n, f.value) for n, f in estimate.parts.items() if not n.startswith("cpu_") and f.value),
                       key=lambda item: -item[1])
        shown = ", ".join(f"{n.replace('_', ' ')} {v / GB:.1f}" for n, v in parts[:3])
        message = (f"{what}{' with ' + ' × '.join(split) if split else ''} on {on}: "
                   f"{estimate.per_gpu_bytes / GB:.1f} GB per GPU ({shown}) for {model.parameters / 1e9:.3g}B "
                   f"parameters")
        if no_optimizer:
            message += ", before any optimizer state (the setup names no optimizer)"
        change = self._change(layout, model, machine, estimate_fn)
        if change:
            message += f"; {change}"
        message += " (`shardshift plan` shows the estimate)"
        # the setting that decides it: the sharding stage, else the model-parallel degrees, else the micro batch
        where = next((plan.provenance[d] for d in ("sharding.stage", "parallelism.tensor", "parallelism.pipeline",
                                                    "batch.micro") if d in plan.provenance), None)
        if where is None:
            document = setup.documents[0]
            where = Location(document.path, 1, 1, None)
        return self.finding_at(where, message)

    @staticmethod
    def _change(layout, model, machine, estimate_fn) -> str | None:
        try:
            from shardshift.planner import recommend
        except ImportError:  # pragma: no cover - the recommendation lands with the planner
            return None
        change = recommend.recommend(layout, model, machine, estimate_fn).smallest_change
        if change and "; " in change and change.split("; ", 1)[0].endswith("per GPU"):
            change = change.split("; ", 1)[1]  # "ZeRO-2 on 8 × 80 GB: 131 GB per GPU; stage 3 needs 19 GB"
        return change
