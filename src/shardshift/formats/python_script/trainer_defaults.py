"""transformers' defaults table: what the Hugging Face Trainer does with `TrainingArguments` that leave a
field out, for the release that judges the file, with DeepSpeed's own defaults for what a ds_config it
is given leaves out (shardshift.resolve). Used for a launch whose entry is known to read TrainingArguments
(formats/launch/defaults.py: the launch reader lifts the TrainingArguments flags into the Plan, so
what the command line sets is never replaced). Never a world size.

The TrainingArguments defaults of each release from 4.30.0 on are read from that release's own
`transformers/training_args.py` (data/defaults/transformers.json, written by
scripts/defaults/transformers_defaults.py; each row cites its line). A release outside that table is
not guessed: its defaults are unknown. So is a default the release decides by the environment
(`optim` is adamw_torch_fused with torch >= 2.8, else adamw_torch, from 4.55)."""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from shardshift.formats.defaults_util import data_parallel, integer, product
from shardshift.plan import Alternative, Plan, Unknown

FRAMEWORK = "transformers"


@lru_cache(maxsize=1)
def _table() -> dict:
    import json
    from importlib import resources

    return json.loads(resources.files("shardshift").joinpath("data/defaults/transformers.json").read_text("utf-8"))


def release_defaults(version: tuple[int, ...] | None) -> dict[str, Any] | None:
    """field -> its default (a value, or Unknown) for the TrainingArguments of `version` (None: the
    newest release in the table); None when the table does not hold that release."""
    table = _table()
    releases = table["releases"]
    if version is None:
        shown = max(releases, key=lambda v: tuple(int(p) for p in v.split(".")))
    else:
        shown = ".".join(map(str, version))
        if shown not in releases and len(version) == 2:
            shown += ".0"
    if shown not in releases:
        return None
    index, lines = releases[shown]
    out: dict[str, Any] = {}
    for name, record in table["variants"][index].items():
        cited = f"{table['source']}:{lines[name]} of transformers {shown}"
        if "value" in record:
            out[name] = record["value"]
        elif "values" in record:
            first, second = record["values"]
            out[name] = Unknown(f"TrainingArguments.{name} of transformers {shown} is {second!r} when "
                                f"`{record['condition']}` holds where the Trainer runs, else {first!r} ({cited})",
                                None, (Alternative(first, f"not ({record['condition']})"),
                                       Alternative(second, record["condition"])))
        else:
            out[name] = Unknown(f"TrainingArguments.{name} of transformers {shown}: {record['unknown']} ({cited})")
    return out


def _not_in_table(version: tuple[int, ...]) -> Unknown:
    known = sorted(_table()["releases"], key=lambda v: tuple(int(p) for p in v.split(".")))
    return Unknown(f"the TrainingArguments defaults of transformers {'.'.join(map(str, version))} are not in "
                   f"shardshift's table (read from the releases {known[0]} to {known[-1]}): not known")


def defaults(plan: Plan, version: tuple[int, ...] | None) -> Iterator[tuple[str, Any]]:
    given = release_defaults(version)
    if given is None:
        missing = _not_in_table(version or ())
        given = {name: missing for name in _table()["variants"][0]}

    def both(*names: str) -> Any:
        values = [given[name] for name in names]
        unknown = next((v for v in values if isinstance(v, Unknown)), None)
        return unknown if unknown is not None else values

    # TrainingArguments: bf16 = False, fp16 = False -> fp32 (a ds_config's "auto" precision follows them)
    precision = both("bf16", "fp16")
    yield "precision.param_dtype", precision if isinstance(precision, Unknown) else (
        "fp32" if precision == [False, False] else Unknown("TrainingArguments turns bf16 or fp16 on by default"))
    # no `fsdp`: DDP; a ds_config without zero_optimization: DeepSpeedZeroConfig.stage = 0
    yield "sharding.stage", 0
    # per_device_train_batch_size, gradient_accumulation_steps; the Trainer's total batch is
    # per-device × accumulation × world size (with a ds_config it fills DeepSpeed's "auto" triple that way)
    yield "batch.micro", given["per_device_train_batch_size"]
    yield "batch.accumulation", given["gradient_accumulation_steps"]
    yield "batch.global_", product(integer(plan, "batch.micro"), integer(plan, "batch.accumulation"),
                                   data_parallel(plan))
    # optim, learning_rate, adam_beta1/2, adam_epsilon, weight_decay -- for the Trainer's own optimizer; a
    # ds_config `optimizer` block's class keeps its own
    if plan.optimizer is None or plan.optimizer.name is None:
        yield "optimizer.name", given["optim"]
        yield "optimizer.lr", given["learning_rate"]
        yield "optimizer.betas", both("adam_beta1", "adam_beta2")
        yield "optimizer.eps", given["adam_epsilon"]
        yield "optimizer.weight_decay", given["weight_decay"]
    # max_grad_norm (with a ds_config, DeepSpeed's gradient_clipping, 1.0 since 0.19.3, "auto" = this)
    yield "gradient_clipping", given["max_grad_norm"]
    # lr_scheduler_type ("linear": warm-up, then linear decay to 0), warmup_steps -- the Trainer's own
    # scheduler, also under a ds_config without a `scheduler` block
    if plan.scheduler is None or plan.scheduler.name is None:
        yield "scheduler.name", given["lr_scheduler_type"]
        yield "scheduler.warmup_steps", given["warmup_steps"]
        if given["lr_scheduler_type"] == "linear":
            yield "scheduler.min_lr", 0.0
