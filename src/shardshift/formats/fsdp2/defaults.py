"""PyTorch's defaults table for FSDP2 (and FSDP1) training code (shardshift.resolve): what torch does
where the code the reader saw leaves an argument out. The reader already gives `fully_shard`'s own
defaults at the call (reshard_after_forward: True for the blocks, False for the root) and the mesh's
world size where the code builds one; here only what follows from a class the code names.

Never a dtype the code does not decide: MixedPrecisionPolicy(param_dtype=None) (and no policy at all)
keeps the module's own dtype, which is the dtype the model was built or loaded in."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from shardshift.plan import Alternative, Plan, Unknown

FRAMEWORK = "torch"
# The releases whose source was read and found to give this table's values; a pinned release outside
# them resolves to Unknown (shardshift.resolve), never to these values.
CHECKED_RELEASES = ((2, 13, 0),)
WHY_ONE_RELEASE = ("torch is published on the package index only as wheels of several hundred MB: the one release read is the installed oracle, torch 2.13.0.")

# torch/optim/{adamw,adam,sgd}.py: the constructors' defaults (torch 2.13)
OPTIMIZERS: dict[str, tuple[tuple[str, Any], ...]] = {
    "AdamW": (("optimizer.lr", 1e-3), ("optimizer.betas", [0.9, 0.999]), ("optimizer.eps", 1e-8),
              ("optimizer.weight_decay", 1e-2), ("optimizer.decoupled_weight_decay", True)),
    "Adam": (("optimizer.lr", 1e-3), ("optimizer.betas", [0.9, 0.999]), ("optimizer.eps", 1e-8),
             ("optimizer.weight_decay", 0.0), ("optimizer.decoupled_weight_decay", False)),
    "SGD": (("optimizer.lr", 1e-3), ("optimizer.weight_decay", 0.0)),
}
MODULE_DTYPE = ("fully_shard without a MixedPrecisionPolicy param_dtype computes in the module's own dtype, which "
                "this code does not set where shardshift reads it (the dtype the model is built or loaded in)")
CONSTANT = "constant"  # an optimizer with no LR scheduler keeps its lr (the spelling of the other tables)
NO_SCHEDULER = ("the code builds an optimizer and no LR scheduler shardshift recognises: the LR stays constant "
                "unless a scheduler is built where shardshift does not look (a helper such as transformers' "
                "get_scheduler(name, ...) or another module)")


def defaults(plan: Plan, version: tuple[int, ...] | None) -> Iterator[tuple[str, Any]]:
    if plan.sharding.stage is not None:
        yield "precision.param_dtype", Unknown(MODULE_DTYPE)
        # torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py: all-gathers run on their own stream
        # (prefetched for the next module), reduce-scatters on another: always overlapped, no switch
        yield "communication.overlap", True
    name = plan.optimizer.name if plan.optimizer is not None else None
    if isinstance(name, str):
        yield from OPTIMIZERS.get(name, ())
        # torch: an optimizer without an LR scheduler keeps its lr. The reader recognises torch.optim.lr_scheduler
        # classes and transformers' get_*_schedule_with_warmup helpers, not every way to build one
        # (2 of the 7 corpus files with an optimizer and no recognised scheduler build one): not known
        if plan.scheduler is None or plan.scheduler.name is None:
            yield "scheduler.name", Unknown(NO_SCHEDULER, None, (
                Alternative(CONSTANT, "no scheduler is built outside what shardshift reads"),))
