"""MG301: the checks of Megatron-LM's argument path that no other MG rule restates, one table row each.

`validate_args` (megatron/training/arguments.py) and the model config's `__post_init__`
(megatron/core/transformer/transformer_config.py) hold some four hundred checks. Most compare two or
three flags; a rule class for each would repeat one shape. A row of the tables in `refusals/`
names the check site it mirrors (the coverage map's id, src/shardshift/data/coverage/megatron.tsv,
where the row's bad fixture is run through Megatron's own code), the condition, in terms of the
values validate_args sees, and what Megatron says.

A condition reads values through `Values`: a value the arguments do not decide (the script decides it
at run time, an unresolved `$EXTRA_ARGS` may give the flag, `--use-checkpoint-args` may replace it)
raises `Undecided`, and the row is not judged.
"""

from __future__ import annotations

from shardshift.rules.megatron.refusals import ROWS
from shardshift.rules.megatron.refusals.base import Refusal, Undecided, Values
from shardshift.rules.megatron.training import VALIDATE, TrainingRule

STOPS_AT_CONFIG = "building the model config (TransformerConfig) stops the launch before training starts"
STOPS_AT_STARTUP = ("Megatron's start-up (the microbatch calculator, the random seed, the process groups) stops the launch "
                    "before training starts")
# where each stage stops the run, in the order pretrain meets them (tests/test_rules_megatron_refused.py reads it)
STOPS = {"validate": VALIDATE, "config": STOPS_AT_CONFIG, "startup": STOPS_AT_STARTUP,
         "specs": "building the model's layer specs stops the launch before training starts",
         "optimizer": "building the optimizer, its gradient buffers or its learning-rate schedule stops the launch "
                      "before training starts",
         "training": "the run stops after the job has started, building its data loaders or in the training loop"}


def refusals() -> list[Refusal]:
    return ROWS


class ArgumentCheckRefused(TrainingRule):
    """A setting one of Megatron-LM's argument checks refuses, which no other MG rule restates.

    ## What it does
    Reports arguments that fail one of Megatron's checks on the way from the command line to training:
    `validate_args`, the model config (`TransformerConfig.__post_init__`), the start-up (the microbatch
    calculator, the seed, `initialize_model_parallel`), the layer specs, the DDP and optimizer configs and
    the learning-rate schedule, and the training loop's checks of its flags. Each check is a row of a
    table; the message says where the run stops, quotes the check and names the flags involved.

    ## Why is this bad
    Megatron stops with an AssertionError, ValueError or RuntimeError: most of these before training
    starts, after the job got its GPUs; the training loop's at its first step, log or save. Some rows are
    values Megatron computes with and never checks (`--num-layers 0` divides by zero while the model config
    is built): it stops with that operation's error instead.

    ## Example
    ```sh
    torchrun ... pretrain_gpt.py ... --moe-router-topk 2
    ```

    ## Use instead
    ```sh
    torchrun ... pretrain_gpt.py ... --num-experts 8 --moe-router-topk 2
    ```
    """

    code = "MG301"
    name = "argument-check-refused"
    severity = "error"

    def judge(self, args, flags, context):
        values = Values(args, flags, flags.world_size(context))
        for row in refusals():
            try:
                if not row.refused(values):
                    continue
            except Undecided:
                continue
            except (TypeError, ValueError, ZeroDivisionError, AttributeError, IndexError, KeyError, OverflowError,
                    RecursionError):
                continue  # a value of another type or shape than the check reads (an empty list, an infinite number)
            where = STOPS[row.stage]
            shown = ", ".join(flags.spelled(d) for d in (row.at, *row.involved))
            yield self.at(flags, row.at, f"{shown}: {where} ({row.says}); {row.fix}",
                          related=self.also_each(flags, *row.involved))

