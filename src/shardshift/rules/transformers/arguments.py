"""Checks `TrainingArguments.__post_init__` makes on the values it is given (transformers/training_args.py
`_validate_args`), mirrored on `TrainingArguments(...)` calls in Python and on the TrainingArguments flags of
launch scripts (`torchrun train.py --fp16 --bf16 ...`).

Each check names the releases whose source was read to hold it (`Check.present`) and the newest read
not to (`Check.absent`): the training_args.py of 26 wheels from 4.10 to 5.24 (`pip download
transformers==X --no-deps`, searched for each error message), never installed. A pinned release from
`present` on gets the error; one up to `absent` has no such check and gets nothing; one in between, or
no pin, leaves the verdict to the release (an info saying so).

A value the call does not give is transformers' default (the same in every release read: `eval_strategy`
"no", `save_strategy` "steps", `logging_steps` and `save_steps` 500, `dataloader_num_workers` 0) only
for `TrainingArguments` and `Seq2SeqTrainingArguments` themselves, and for flags read into them or into a
subclass whose own defaults the reader took; a TRL config's defaults differ, so there it is unknown. A
subclass in the repository with a `__post_init__` of its own may change any value before transformers checks
it: its flags are not judged. Only transformers' own class counts (imported from transformers): PaddleNLP's
and a repository's classes of the same name are not it.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Iterable

from shardshift.context import UnknownContext
from shardshift.document import Document
from shardshift.formats.accelerate.keys import truthy
from shardshift.formats.python_script.reader import TRAINING_ARGUMENTS_CLASSES, UNKNOWN, ArgumentsCall, ScriptFacts
from shardshift.rules.base import Context, Finding, Rule, did_you_mean

# transformers' TrainingArguments defaults that these checks read, the same in 4.10 to 5.24
DEFAULTS = {"eval_strategy": "no", "save_strategy": "steps", "logging_steps": 500, "save_steps": 500,
            "eval_steps": None, "dataloader_num_workers": 0, "dataloader_prefetch_factor": None,
            "lr_scheduler_type": "linear", "load_best_model_at_end": False, "warmup_steps": 0,
            "logging_strategy": "steps",
            "fp16": False, "bf16": False, "fp16_full_eval": False, "bf16_full_eval": False,
            # read by the Trainer's own checks (rules/transformers/trainer.py); `fsdp` is "" before 5.0 and None
            # since, `report_to` "all" before 5.0 and "none" since: each a value no check refuses
            "metric_for_best_model": None, "save_only_model": False, "auto_find_batch_size": False,
            "gradient_accumulation_steps": 1, "accelerator_config": None, "fsdp": None, "fsdp_config": None,
            "deepspeed": None, "gradient_checkpointing": False, "activation_checkpointing": False, "report_to": None,
            # read by TA011 (computed with unchecked)
            "greater_is_better": None, "dataloader_multiprocessing_context": None, "per_device_train_batch_size": 8}
STRATEGIES = ("no", "steps", "epoch", "best")


@dataclass(frozen=True)
class Check:
    """A check of `_validate_args` and the releases read: `present` the oldest that has it, `absent`
    the newest that has not (None: none read lacks it, the oldest read being 4.10)."""

    present: tuple[int, ...]
    absent: tuple[int, ...] | None

    def verdict(self, version: tuple[int, ...]) -> str:
        """"refused", "accepted" or "unknown" (a release between the two read) for a known release."""
        if self.absent is not None and tuple(version) <= self.absent:
            return "accepted"
        return "unknown" if tuple(version) < self.present else "refused"

    def between(self, version: tuple[int, ...]) -> str:
        """Why the release's verdict is unknown."""
        return (f"transformers {_dotted(version)} lies between the releases read: "
                + (f"{_dotted(self.absent)} has no such check, " if self.absent else "") + f"{_dotted(self.present)} has it")

    # whether every release read makes the check (then no pin is needed for the verdict)
    agreed = False


def _calls(document: Document) -> list[ArgumentsCall]:
    if document.format == "launch":
        calls = getattr(document.data, "training_arguments", None)
        return [c for c in calls if isinstance(c, ArgumentsCall)] if isinstance(calls, list) else []
    facts = document.data
    return list(facts.arguments) if isinstance(facts, ScriptFacts) else []


def value(call: ArgumentsCall, name: str) -> Any:
    """The field's value: given, transformers' default, or UNKNOWN."""
    names = (name, "evaluation_strategy") if name == "eval_strategy" else (name,)  # renamed in 4.41
    for spelled in names:
        if spelled in call.keywords:
            return call.keywords[spelled]
    if call.star_kwargs or not call.own_defaults():
        return UNKNOWN
    return DEFAULTS[name]


def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


def _number(found: Any) -> int | float | None:
    """A finite number (an infinite or nan one makes int() raise: not judged here)."""
    return found if isinstance(found, (int, float)) and not isinstance(found, bool) and math.isfinite(found) else None


class TrainingArgumentsCheck(Rule):
    """A value `TrainingArguments` refuses when it is built (a base: each subclass is one check)."""

    formats = ("python", "launch")
    premises = ("release",)
    framework = "transformers"  # the release premise is transformers' on launch scripts too
    severity = "error"
    source = "training_args.py"  # where the release's checks are read

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        calls = _calls(document)
        if not calls:
            return
        release = context.release("transformers", document.path)
        version = release.version
        from shardshift.context.releases import known_releases

        newest = tuple(known_releases("transformers")[-1])
        if version is None and release.basis == "unpinned":  # installed without a version: the newest release
            version = newest
        for call in calls:
            if getattr(call, "own_post_init", False):
                continue  # the repository's subclass may change the values before TrainingArguments checks them
            for check, keyword, message in self.refusals(call):
                # with no pin, the newest release judges (as the summary says), and the finding is an info where
                # older releases judge otherwise (release_dependent)
                verdict = check.verdict(version if version is not None else newest)
                if verdict == "accepted":
                    continue  # that release has no such check
                if version is None:
                    verdict = None
                # the launch's entry script not found, or one that builds no HfArgumentParser of TrainingArguments
                unknown = getattr(call, "program", None)
                if unknown is None:
                    unknown = self.unknown_program(call, document)
                if unknown is None and verdict == "unknown":
                    unknown = UnknownContext("release", check.between(version), f"check the release's own {self.source}")
                where = keyword if isinstance(keyword, tuple) else call.positions.get(keyword, (call.line, call.column))
                finding = self.finding(document, None, message, position=where,
                                       unknown_context=unknown)
                finding.release_dependent = version is None and not check.agreed
                yield finding

    def refusals(self, call: ArgumentsCall) -> Iterable[tuple[Check, str, str]]:
        """(the check, the keyword to point at, the message) for each refusal of the call."""
        raise NotImplementedError

    def unknown_program(self, call: ArgumentsCall, document: Document) -> UnknownContext | None:
        """What the program leaves unknown for these checks (None: building the arguments runs them)."""
        return None


def shown(call: ArgumentsCall, *names: str) -> str:
    """How the call gives `names`: `TrainingArguments(fp16=True, bf16=True)`, or the flags as written with
    the launch they belong to; a field left out shows its default."""
    written = getattr(call, "written", None)
    spelled = {n: "evaluation_strategy" if n == "eval_strategy" and n not in call.keywords
               and "evaluation_strategy" in call.keywords else n for n in names}  # the name before 4.41
    if written is not None:
        parts = [written.get(spelled[n]) or f"{n} not given ({value(call, n)!r})" for n in names]
        return f"{', '.join(parts)} ({call.callee})"
    parts = [f"{spelled[n]}={value(call, n)!r}" if spelled[n] in call.keywords else f"{n} not given ({value(call, n)!r})"
             for n in names]
    return f"{call.callee}({', '.join(parts)})"


class BothHalfPrecisions(TrainingArgumentsCheck):
    """`fp16` and `bf16` both true (or `fp16_full_eval` and `bf16_full_eval`).

    ## What it does
    Reports a `TrainingArguments(...)` call, or the TrainingArguments flags of a launch, that sets
    both `fp16=True` and `bf16=True`, or both `fp16_full_eval=True` and `bf16_full_eval=True`.

    ## Why is this bad
    `TrainingArguments` refuses the pair when it is built (`_validate_args`), before the model is
    loaded: `ValueError: At most one of fp16 and bf16 can be True, but not both` (since transformers
    4.15; for the full-eval pair `... can be True for full eval, but not both`, since 4.25). A script
    that switches precision with two flags often ends up with both.

    ## Example
    ```python
    args = TrainingArguments(output_dir="out", fp16=True, bf16=True)
    ```

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="out", bf16=True)
    ```
    """

    code = "TA001"
    name = "fp16-and-bf16"
    PAIRS = ((("fp16", "bf16"), Check((4, 15, 0), (4, 12, 0)), "At most one of fp16 and bf16 can be True, but not both"),
             (("fp16_full_eval", "bf16_full_eval"), Check((4, 25, 1), (4, 20, 0)),
              "At most one of fp16 and bf16 can be True for full eval, but not both"))

    def refusals(self, call):
        for (first, second), check, refusal in self.PAIRS:
            if value(call, first) is True and value(call, second) is True:
                yield check, second, (f"{shown(call, first, second)}: TrainingArguments raises ValueError when it is "
                                      f"built ({refusal}); keep one")


class LoadBestModelStrategiesDiffer(TrainingArgumentsCheck):
    """`load_best_model_at_end` with evaluation and saving on different schedules.

    ## What it does
    Reports `load_best_model_at_end=True` when `eval_strategy` differs from `save_strategy` (which is
    not `"best"`), with the defaults counted (`eval_strategy` "no", `save_strategy` "steps"); and,
    with both on "steps", a whole-number `save_steps` that is no multiple of `eval_steps` (which
    defaults to `logging_steps`, 500).

    ## Why is this bad
    The best model is the best of the evaluated checkpoints, so every checkpoint must be evaluated.
    `TrainingArguments` refuses otherwise when it is built: `ValueError: --load_best_model_at_end
    requires the save and eval strategy to match` (the most common case: `load_best_model_at_end`
    with no `eval_strategy` at all), or `... requires the saving steps to be a round multiple of the
    evaluation steps` (ratios below 1, since 4.30: both ratios, one a multiple of the other). The
    strategies and whole steps are checked by every release read, 4.10 to 5.24.

    ## Example
    ```python
    args = TrainingArguments(output_dir="out", load_best_model_at_end=True, save_strategy="epoch")
    ```

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="out", load_best_model_at_end=True, save_strategy="epoch",
                             eval_strategy="epoch")
    ```
    """

    code = "TA002"
    name = "load-best-model-strategies-differ"
    CHECK = Check((4, 10, 0), None)
    RATIOS = Check((4, 30, 0), (4, 27, 0))  # steps below 1 are ratios of the run since 4.30

    def refusals(self, call):
        if value(call, "load_best_model_at_end") is not True:
            return
        evaluate, save = value(call, "eval_strategy"), value(call, "save_strategy")
        if evaluate not in STRATEGIES or save not in STRATEGIES or save == "best":
            return
        keyword = next((k for k in ("eval_strategy", "evaluation_strategy", "save_strategy", "load_best_model_at_end")
                        if k in call.keywords), "load_best_model_at_end")
        if evaluate != save:
            yield self.CHECK, keyword, (
                f"{shown(call, 'load_best_model_at_end', 'eval_strategy', 'save_strategy')}: TrainingArguments "
                f"raises ValueError when it is built (--load_best_model_at_end requires the save and eval strategy "
                f"to match); make them match: eval_strategy {save!r}" + (f" or save_strategy {evaluate!r}" if evaluate != "no" else ""))
            return
        if evaluate != "steps":
            return
        save_steps = _number(value(call, "save_steps"))
        eval_steps = value(call, "eval_steps")
        if eval_steps is None or eval_steps == 0:
            eval_steps = value(call, "logging_steps")  # __post_init__ fills it so
        eval_steps = _number(eval_steps)
        if save_steps is None or eval_steps is None or eval_steps == 0 or \
                any(steps > 1 and steps != int(steps) for steps in (save_steps, eval_steps)) or \
                save_steps % eval_steps == 0:
            return  # a fraction above 1 is refused first (TA006)
        keyword = next((k for k in ("save_steps", "eval_steps") if k in call.keywords), keyword)
        about = f"{shown(call, 'save_steps', 'eval_steps')} with load_best_model_at_end"
        refusal = "TrainingArguments raises ValueError when it is built (--load_best_model_at_end requires the saving steps "
        if eval_steps >= 1 and save_steps >= 1:
            yield self.CHECK, keyword, (f"{about}: {refusal}to be a round multiple of the evaluation steps, but found "
                                        f"{save_steps:g}, which is not a round multiple of {eval_steps:g})")
        elif not (eval_steps < 1 and save_steps < 1):
            yield self.RATIOS, keyword, (f"{about}: {refusal}to be a multiple of the evaluation steps, which cannot get "
                                         "guaranteed when mixing ratio and absolute steps); give both as ratios or both "
                                         "as steps")
        elif (save_steps * 1_000_000) % (eval_steps * 1_000_000) != 0:  # transformers' own arithmetic
            yield self.RATIOS, keyword, (f"{about}: {refusal}to be a multiple of the evaluation steps, but found "
                                         f"{save_steps:g}, which is not a multiple of {eval_steps:g})")


class SchedulerNeedsEvaluation(TrainingArgumentsCheck):
    """A learning-rate schedule driven by evaluation, with evaluation off.

    ## What it does
    Reports `lr_scheduler_type` `"reduce_lr_on_plateau"` or `"greedy"` when `eval_strategy` is
    `"no"` (its default).

    ## Why is this bad
    Both schedules step on the evaluation metric. `TrainingArguments` refuses them without an
    evaluation when it is built: `ValueError: lr_scheduler_type reduce_lr_on_plateau requires an
    eval strategy` (since transformers 4.30; `greedy`, since 5.10, likewise).

    ## Example
    ```python
    args = TrainingArguments(output_dir="out", lr_scheduler_type="reduce_lr_on_plateau")
    ```

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="out", lr_scheduler_type="reduce_lr_on_plateau", eval_strategy="epoch")
    ```
    """

    code = "TA003"
    name = "scheduler-needs-evaluation"
    SCHEDULES = {"reduce_lr_on_plateau": Check((4, 30, 0), (4, 27, 0)), "greedy": Check((5, 10, 1), (5, 0, 0))}

    def refusals(self, call):
        schedule = value(call, "lr_scheduler_type")
        if not isinstance(schedule, str) or schedule not in self.SCHEDULES or value(call, "eval_strategy") != "no":
            return
        yield self.SCHEDULES[schedule], "lr_scheduler_type", (
            f"{shown(call, 'lr_scheduler_type', 'eval_strategy')}: TrainingArguments raises ValueError when it is "
            f"built (lr_scheduler_type {schedule} requires an eval strategy); set eval_strategy to \"steps\" or "
            "\"epoch\"")


class PrefetchWithoutWorkers(TrainingArgumentsCheck):
    """`dataloader_prefetch_factor` with `dataloader_num_workers` 0.

    ## What it does
    Reports a `dataloader_prefetch_factor` that is set when `dataloader_num_workers` is 0 (its
    default).

    ## Why is this bad
    Only worker processes prefetch. `TrainingArguments` refuses the pair when it is built (since
    transformers 4.38): `ValueError: --dataloader_prefetch_factor can only be set when data is
    loaded in a different process, i.e. when --dataloader_num_workers > 0.`

    ## Example
    ```python
    args = TrainingArguments(output_dir="out", dataloader_prefetch_factor=4)
    ```

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="out", dataloader_prefetch_factor=4, dataloader_num_workers=4)
    ```
    """

    code = "TA004"
    name = "prefetch-without-workers"
    CHECK = Check((4, 38, 0), (4, 37, 0))

    def refusals(self, call):
        factor = value(call, "dataloader_prefetch_factor")
        if factor is None or factor is UNKNOWN or value(call, "dataloader_num_workers") != 0:
            return
        yield self.CHECK, "dataloader_prefetch_factor", (
            f"{shown(call, 'dataloader_prefetch_factor', 'dataloader_num_workers')}: TrainingArguments raises "
            "ValueError when it is built (--dataloader_prefetch_factor can only be set when data is loaded in a "
            "different process, i.e. when --dataloader_num_workers > 0); set dataloader_num_workers, or drop the "
            "prefetch factor")


class NegativeWarmupSteps(TrainingArgumentsCheck):
    """A negative `warmup_steps`.

    ## What it does
    Reports `warmup_steps` below 0.

    ## Why is this bad
    `TrainingArguments` refuses it when it is built (since transformers 5.24): `ValueError: Got
    warmup_steps = -100, Expected value warmup_steps >= 0`. Releases before that take it, and the
    schedule's warm-up never ends where it should.

    ## Example
    ```python
    args = TrainingArguments(output_dir="out", warmup_steps=-100)
    ```

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="out", warmup_steps=100)
    ```
    """

    code = "TA005"
    name = "negative-warmup-steps"
    CHECK = Check((5, 24, 0), (5, 22, 0))

    def refusals(self, call):
        steps = _number(value(call, "warmup_steps"))
        if steps is None or steps >= 0:
            return
        yield self.CHECK, "warmup_steps", (
            f"{shown(call, 'warmup_steps')}: TrainingArguments raises ValueError when it is built (Got warmup_steps "
            f"= {steps:g}, Expected value warmup_steps >= 0)")


class IntervalStepsRefused(TrainingArgumentsCheck):
    """A logging, evaluation or saving interval `TrainingArguments` refuses.

    ## What it does
    Reports, on the "steps" strategy (the default for logging and saving): a `logging_steps`,
    `eval_steps` or `save_steps` above 1 that is no whole number; `logging_steps` 0; evaluation on
    "steps" with neither `eval_steps` nor `logging_steps` above 0; and a `torch_empty_cache_steps`
    that is no whole number above 0.

    ## Why is this bad
    An interval above 1 counts steps; below 1 it is a ratio of the run (since transformers 4.30).
    `TrainingArguments` refuses the rest when it is built: `ValueError: --save_steps must be an
    integer if bigger than 1: 2.5`, `logging strategy steps requires non-zero --logging_steps`,
    `evaluation strategy steps requires either non-zero --eval_steps or --logging_steps`,
    `torch_empty_cache_steps must be an integer bigger than 0` (since 4.44).

    ## Example
    ```python
    args = TrainingArguments(output_dir="out", save_steps=2.5)
    ```

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="out", save_steps=250)
    ```
    """

    code = "TA006"
    name = "interval-steps-refused"
    ALWAYS = Check((4, 10, 0), None)
    WHOLE = Check((4, 30, 0), (4, 27, 0))
    EMPTY_CACHE = Check((4, 44, 0), (4, 41, 0))

    def refusals(self, call):
        refusal = "TrainingArguments raises ValueError when it is built"
        logging_steps = _number(value(call, "logging_steps"))
        if value(call, "eval_strategy") == "steps" and value(call, "eval_steps") in (None, 0) and \
                logging_steps is not None and logging_steps <= 0:
            yield self.ALWAYS, "logging_steps" if "logging_steps" in call.keywords else "eval_strategy", (
                f"{shown(call, 'eval_strategy', 'eval_steps', 'logging_steps')}: {refusal} (evaluation strategy "
                "IntervalStrategy.STEPS requires either non-zero --eval_steps or --logging_steps)")
            return
        cache = value(call, "torch_empty_cache_steps") if "torch_empty_cache_steps" in call.keywords else None
        if cache is not None and cache is not UNKNOWN and not (isinstance(cache, int) and cache > 0):  # as it checks
            yield self.EMPTY_CACHE, "torch_empty_cache_steps", (
                f"{shown(call, 'torch_empty_cache_steps')}: {refusal} (`torch_empty_cache_steps` must be an integer "
                f"bigger than 0, got {cache})")
            return
        if value(call, "logging_strategy") == "steps" and logging_steps == 0:
            yield self.ALWAYS, "logging_steps", (f"{shown(call, 'logging_steps')}: {refusal} (logging strategy "
                                                 "IntervalStrategy.STEPS requires non-zero --logging_steps)")
            return
        for field, strategy in (("logging_steps", "logging_strategy"), ("eval_steps", "eval_strategy"),
                                ("save_steps", "save_strategy")):
            steps = _number(value(call, field))
            if value(call, strategy) == "steps" and steps is not None and steps > 1 and steps != int(steps):
                yield self.WHOLE, field, (f"{shown(call, field)}: {refusal} (--{field} must be an integer if bigger "
                                          f"than 1: {steps:g}); give a whole number of steps, or a ratio below 1")
                return


def _uncomparable(found: Any) -> bool:
    """A literal that `<` / `>` with a number refuses (TypeError): null, a string, a collection."""
    return found is not UNKNOWN and (found is None or isinstance(found, (str, list, tuple, dict, set)))


def _type_name(found: Any) -> str:
    return type(found).__name__ if found is not None else "NoneType"


def _as_number(field: str, found: Any) -> str:
    """What to write instead of a string or null where transformers computes with a number."""
    if isinstance(found, str):
        try:
            number = float(found.strip())
        except ValueError:
            number = None
        if number is not None and math.isfinite(number):
            return f"write the number, {field}={int(number) if number == int(number) else number!r}"
    return f"give {field} a number"


class UncheckedValueFails(TrainingArgumentsCheck):
    """A `TrainingArguments` value of a type it computes with before any check of its own.

    ## What it does
    Reports, in a `TrainingArguments(...)` or `Seq2SeqTrainingArguments(...)` call (transformers' own
    classes), a literal that building the arguments compares or computes with unchecked:
    `logging_steps`, `eval_steps` or `save_steps` on the "steps" strategy, `warmup_steps` or
    `dataloader_num_workers` given as a string or null (or a list, dict...); with evaluation on
    "steps" and no `eval_steps`, a `logging_steps` of that kind; an `output_dir` that is no string; a
    `metric_for_best_model` that is no string while `greater_is_better` is left out; and, with
    `deepspeed` given, a null `per_device_train_batch_size` or `gradient_accumulation_steps`.

    ## Why is this bad
    `TrainingArguments.__post_init__` uses these values as they come, so a string read from the
    environment and passed on unconverted, or a null meant as "the default", stops the run before the
    model is loaded with an error that is no check of transformers' own: `TypeError: '>' not
    supported between instances of 'str' and 'int'` (the intervals, since 4.30; the workers, since
    5.18; `warmup_steps`, since 5.0, and `ValueError` from 4.42 to 4.57), `TypeError: expected str,
    bytes or os.PathLike object, not int` (`output_dir`), `AttributeError: 'int' object has no
    attribute 'endswith'` (the metric, since 4.42), `TypeError: unsupported operand type(s) for *`
    (the DeepSpeed batch size, world size × micro batch × accumulation). Found by mutating the
    fixtures' calls through transformers 5.24.0 (`data/coverage/transformers-implicit.tsv`).

    ## Example
    ```python
    args = TrainingArguments(output_dir="out", logging_steps="50")
    ```

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="out", logging_steps=50)
    ```
    """

    code = "TA011"
    name = "unchecked-value-fails"
    formats = ("python",)
    ALWAYS = Check((4, 10, 0), None)
    INTERVALS = Check((4, 30, 0), (4, 27, 0))  # the `> 1` of TA006's whole-number check
    SINCE_4_42 = Check((4, 42, 0), (4, 41, 2))  # metric_for_best_model.endswith; warmup_steps checked
    WORKERS = Check((5, 18, 0), (5, 14, 1))  # the MPS start method reads dataloader_num_workers > 1
    BUILT = "TrainingArguments raises {} when it is built"

    def refusals(self, call):
        # only transformers' own classes, in Python: flags are converted by HfArgumentParser, a dataclass's defaults
        # may be replaced on the command line, and a TRL config's __post_init__ runs first
        if hasattr(call, "written") or call.callee not in TRAINING_ARGUMENTS_CLASSES or call.defaults:
            return
        yield from self._first(call)

    def _first(self, call):
        """The first value transformers 5.24 fails on, in the order `__post_init__` reaches them."""
        typeerror = self.BUILT.format("TypeError")
        output_dir = call.keywords.get("output_dir")
        if output_dir is not None and output_dir is not UNKNOWN and not isinstance(output_dir, (str, bytes)):
            yield self.ALWAYS, "output_dir", (
                f"{shown(call, 'output_dir')}: {typeerror} (os.path.expanduser: expected str, bytes or os.PathLike "
                f"object, not {_type_name(output_dir)}); write the directory as a string, output_dir={str(output_dir)!r}")
            return
        logging_steps, eval_steps = value(call, "logging_steps"), value(call, "eval_steps")
        falls_back = eval_steps is None or (eval_steps is not UNKNOWN and eval_steps == 0)  # then logging_steps
        if value(call, "eval_strategy") == "steps" and falls_back and _uncomparable(logging_steps):
            yield self.ALWAYS, "logging_steps", (
                f"{shown(call, 'eval_strategy', 'eval_steps', 'logging_steps')}: {typeerror} ('>' not supported "
                f"between instances of '{_type_name(logging_steps)}' and 'int': with no eval_steps it compares "
                f"logging_steps with 0 to evaluate as often); {_as_number('logging_steps', logging_steps)}")
            return
        metric = value(call, "metric_for_best_model")
        if metric is not UNKNOWN and metric is not None and not isinstance(metric, str) and \
                value(call, "greater_is_better") is None:
            yield self.SINCE_4_42, "metric_for_best_model", (
                f"{shown(call, 'metric_for_best_model')}: {self.BUILT.format('AttributeError')} ('{_type_name(metric)}' "
                "object has no attribute 'endswith': with no greater_is_better it reads whether the metric's name "
                "ends in \"loss\"); name the metric as a string, e.g. metric_for_best_model=\"eval_loss\"")
            return
        for field, strategy in (("logging_steps", "logging_strategy"), ("eval_steps", "eval_strategy"),
                                ("save_steps", "save_strategy")):
            steps = value(call, field)
            if value(call, strategy) == "steps" and _uncomparable(steps) and (field != "eval_steps" or steps is not None):
                yield self.INTERVALS, field, (
                    f"{shown(call, field)}: {typeerror} ('>' not supported between instances of '{_type_name(steps)}' "
                    f"and 'int': _validate_args compares {field} with 1 unchecked); {_as_number(field, steps)}")
                return
        warmup = value(call, "warmup_steps")
        if _uncomparable(warmup):
            yield self.SINCE_4_42, "warmup_steps", (
                f"{shown(call, 'warmup_steps')}: {typeerror} ('<' not supported between instances of "
                f"'{_type_name(warmup)}' and 'int': _validate_args compares warmup_steps with 0 unchecked; 4.42 to 4.57 "
                f"raise ValueError, warmup_steps must be an integer); {_as_number('warmup_steps', warmup)}")
            return
        workers = value(call, "dataloader_num_workers")
        if _uncomparable(workers) and value(call, "dataloader_multiprocessing_context") is None:
            yield self.WORKERS, "dataloader_num_workers", (
                f"{shown(call, 'dataloader_num_workers')}: {typeerror} ('>' not supported between instances of "
                f"'{_type_name(workers)}' and 'int': it compares dataloader_num_workers with 1 to choose the worker "
                f"start method); {_as_number('dataloader_num_workers', workers)}")
            return
        deepspeed = call.keywords.get("deepspeed")
        if isinstance(deepspeed, (str, dict)) and deepspeed:
            for field in ("per_device_train_batch_size", "gradient_accumulation_steps"):
                size = value(call, field)
                if size is None or isinstance(size, (dict, set)):
                    yield self.ALWAYS, field, (
                        f"{shown(call, field)} with deepspeed: {typeerror} (unsupported operand type(s) for *: 'int' "
                        f"and '{_type_name(size)}': it computes DeepSpeed's train_batch_size, world size × "
                        f"per_device_train_batch_size × gradient_accumulation_steps, unchecked); give {field} a "
                        "whole number")
                    return


# the `fsdp` words TrainingArguments 5.10+ takes (_apply_legacy_fsdp_to_config): Accelerate's sharding
# strategies, of which FSDP2 takes the first two, written in lower case; then "offload" and "auto_wrap"
FSDP2_STRATEGIES = ("full_shard", "shard_grad_op")
FSDP1_STRATEGIES = ("NO_SHARD", "HYBRID_SHARD", "HYBRID_SHARD_ZERO2")
FSDP_AUTO_WRAP_POLICIES = ("TRANSFORMER_BASED_WRAP", "SIZE_BASED_WRAP", "NO_WRAP")


class FsdpOptionRefused(TrainingArgumentsCheck):
    """An `fsdp` word or `fsdp_config` value that `TrainingArguments` refuses when it is built.

    ## What it does
    With FSDP on (`fsdp` given), reports: a word of the `fsdp` string that is no sharding strategy,
    `offload` or `auto_wrap`; a strategy other than `full_shard` / `shard_grad_op` (as written, in
    lower case) while `fsdp_config` asks for FSDP2 (its `version`, 2 by default); and, in an
    `fsdp_config` written as a dict in the call, an `auto_wrap_policy` other than
    TRANSFORMER_BASED_WRAP, SIZE_BASED_WRAP or NO_WRAP, or a `cpu_ram_efficient_loading` that is no
    truth value.

    ## Why is this bad
    Since transformers 5.10, `TrainingArguments` translates these into Accelerate's FSDP plugin when
    it is built and raises `ValueError` before the model is loaded: `Unknown \\`fsdp\\` option: ...`,
    `\\`fsdp=hybrid_shard\\` is only available with FSDP1`, `\\`auto_wrap_policy\\` must be one of
    [...]`, `invalid truth value ...`.

    ## Example
    ```python
    args = TrainingArguments(output_dir="out", fsdp="full_shard auto-wrap")
    ```

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="out", fsdp="full_shard auto_wrap")
    ```
    """

    code = "TA007"
    name = "fsdp-option-refused"
    CHECK = Check((5, 10, 1), (5, 0, 0))

    def refusals(self, call):
        fsdp = value(call, "fsdp") if "fsdp" in call.keywords else None
        if not fsdp or fsdp is UNKNOWN:
            return
        config = call.keywords.get("fsdp_config")
        config = {(k[5:] if isinstance(k, str) and k.startswith("fsdp_") else k): v
                  for k, v in config.items()} if isinstance(config, dict) else None
        refusal = "TrainingArguments raises ValueError when it is built"
        if isinstance(fsdp, str):
            version = config.get("version", 2) if config is not None else (2 if "fsdp_config" not in call.keywords
                                                                             else None)
            for word in fsdp.split():
                if word.upper() in (*(s.upper() for s in FSDP2_STRATEGIES), *FSDP1_STRATEGIES):
                    if version in (2, "2") and word not in FSDP2_STRATEGIES:
                        yield self.CHECK, "fsdp", (
                            f"{shown(call, 'fsdp')}: {refusal} (`fsdp={word}` is only available with FSDP1); under "
                            "FSDP2 write full_shard or shard_grad_op (lower case)")
                        return
                elif word not in ("offload", "auto_wrap"):
                    yield self.CHECK, "fsdp", (f"{shown(call, 'fsdp')}: {refusal} (Unknown `fsdp` option: {word}); "
                                               "the words are full_shard, shard_grad_op, offload and auto_wrap")
                    return
        if config is None or config.get("xla") is True:
            return
        policy = config.get("auto_wrap_policy", FSDP_AUTO_WRAP_POLICIES[0])
        if isinstance(policy, str) and policy not in FSDP_AUTO_WRAP_POLICIES:
            yield self.CHECK, "fsdp_config", (f"fsdp_config auto_wrap_policy {policy!r}: {refusal} (`auto_wrap_policy` "
                                              f"must be one of {list(FSDP_AUTO_WRAP_POLICIES)}, got {policy})")
            return
        loading = config.get("cpu_ram_efficient_loading")
        if loading is not None and truthy(loading) is None:  # transformers' str_to_bool reads Accelerate's words
            yield self.CHECK, "fsdp_config", (f"fsdp_config cpu_ram_efficient_loading {loading!r}: {refusal} "
                                              f"(invalid truth value {str(loading).lower()})")


@lru_cache(maxsize=1)
def _table() -> dict:
    return json.loads(resources.files("shardshift").joinpath("data/defaults/transformers_fields.json")
                      .read_text("utf-8"))


@lru_cache(maxsize=1)
def _field_table() -> tuple[list[tuple[int, ...]], dict[str, dict[str, list[list[int]]]]]:
    """The releases read and, per class, each field's ranges of release indexes
    (data/defaults/transformers_fields.json, scripts/defaults/transformers_fields.py)."""
    return [tuple(int(p) for p in r.split(".")) for r in _table()["releases"]], _table()["classes"]


def _fields_of(cls: str, index: int, table: str = "classes") -> list[str]:
    """The class's fields in the release at `index` (`table` "complements": its `--no_<field>` options)."""
    return [name for name, spans in _table()[table][cls].items() if any(a <= index <= b for a, b in spans)]


@dataclass(frozen=True)
class FieldRefused:
    """A keyword and the releases whose class has no such field (the releases read: 4.10.0 on)."""

    cls: str
    name: str

    def takes(self, index: int) -> bool:
        """Whether the class of the release at `index` takes the keyword."""
        return any(a <= index <= b for a, b in _field_table()[1][self.cls].get(self.name, []))

    def verdict(self, version: tuple[int, ...]) -> str:
        releases, _ = _field_table()

        def at(index: int) -> str:
            return "accepted" if self.takes(index) else "refused"

        version = tuple(version)
        if version in releases:
            return at(releases.index(version))
        # a release not read: the verdict of the releases read around it, where they agree
        below = [i for i, r in enumerate(releases) if r < version]
        above = [i for i, r in enumerate(releases) if r > version]
        if below and above and at(below[-1]) == at(above[0]):
            return at(below[-1])
        return "unknown"

    def between(self, version: tuple[int, ...]) -> str:
        releases, _ = _field_table()
        return (f"transformers {_dotted(version)} is not among the releases whose {self.cls} fields were read "
                f"({_dotted(releases[0])} to {_dotted(releases[-1])})")

    @property
    def agreed(self) -> bool:
        """No release read takes it (then no pin is needed for the verdict)."""
        return not any(self.takes(index) for index in range(len(_field_table()[0])))

    @property
    def everywhere(self) -> bool:
        """Every release read takes it."""
        return all(self.takes(index) for index in range(len(_field_table()[0])))


@dataclass(frozen=True)
class FlagRefused(FieldRefused):
    """A command-line flag and the releases whose HfArgumentParser has no option for it: none of the parser's
    dataclasses (the class's fields for that release, the repository's `others`) defines it, as `--name`, the
    `--no_name` complement of a bool field whose default is True, or an abbreviation argparse takes (a prefix
    of an option). A repository dataclass's `--no_` complements are taken as possible for each of its fields."""

    others: frozenset = frozenset()

    def takes(self, index: int) -> bool:
        options = set(_fields_of(self.cls, index)) | set(_fields_of(self.cls, index, "complements")) | set(self.others)
        complements = {"no_" + field for field in self.others}  # a repository bool field's, if its default is True
        return any(option.startswith(self.name) for option in options | complements)  # the option, or its abbreviation


class UnknownTrainingArgument(TrainingArgumentsCheck):
    """A keyword `TrainingArguments` does not have in the release that judges the file.

    ## What it does
    Reports each keyword of a `TrainingArguments(...)` or `Seq2SeqTrainingArguments(...)` call
    (transformers' own classes) that is no field of the class in the transformers release that judges
    the file: a misspelling (with the closest field), a field a later release removed
    (`evaluation_strategy` after 4.50, `overwrite_output_dir` and `no_cuda` after 4.57, `logging_dir`
    after 5.14, `group_by_length` after 5.1) or one an earlier release did not have yet
    (`eval_strategy` before 4.41). The fields of every release from 4.10.0 on are read from each
    release's own source. Also reports a launch's flag that none of the entry script's HfArgumentParser
    dataclasses defines (transformers' class for the release, and the repository's own dataclasses), where
    every class given to the parser is known and it parses with `parse_args_into_dataclasses` alone
    (an abbreviation argparse takes, and a `--no_` complement, count as defined).

    ## Why is this bad
    The class is a dataclass: its `__init__` raises `TypeError: TrainingArguments.__init__() got an
    unexpected keyword argument 'evaluation_strategy'` before anything else runs; HfArgumentParser raises
    `ValueError: Some specified arguments are not used by the HfArgumentParser: ['--evaluation_strategy',
    'steps']`. Scripts written for 4.x break on the first run after an upgrade.

    ## Example
    ```python
    args = TrainingArguments(output_dir="out", evaluation_strategy="steps")  # transformers 5
    ```

    ## Use instead
    ```python
    args = TrainingArguments(output_dir="out", eval_strategy="steps")
    ```
    """

    code = "TA010"
    name = "unknown-training-argument"

    def refusals(self, call):
        if hasattr(call, "written"):
            yield from self._flags(call)
            return
        if call.callee not in TRAINING_ARGUMENTS_CLASSES:
            return
        releases, classes = _field_table()
        table = classes[call.callee]
        newest = _fields_of(call.callee, len(releases) - 1)
        for name in call.positions:
            check = FieldRefused(call.callee, name)
            spans = table.get(name, [])
            if check.everywhere:
                continue  # every release read has it
            refusal = (f"{call.callee}({name}=...): {call.callee} raises TypeError when it is built (got an "
                       f"unexpected keyword argument {name!r})")
            if spans:
                first, last = releases[spans[0][0]], releases[spans[-1][1]]
                close = did_you_mean(name, [f for f in newest if f != name])
                hint = (f"; {name} is a field of transformers {_dotted(first)} to {_dotted(last)}"
                        + (f": write {close!r}" if close and last != releases[-1] else ""))
            else:
                close = did_you_mean(name, newest)
                hint = f"; did you mean {close!r}?" if close else "; no release read has such a field"
            yield check, name, refusal + hint

    def _flags(self, call):
        """The launch's flags that none of the entry's HfArgumentParser dataclasses defines, where the entry
        parses them with parse_args_into_dataclasses alone (formats/launch/training_flags.py)."""
        known = getattr(call, "parser_fields", None)
        if known is None:
            return
        cls, others = known
        releases, _ = _field_table()
        newest = _fields_of(cls, len(releases) - 1)
        entry = os.path.basename(getattr(call, "entry", None) or "") or "the entry script"
        for flag, line, column in getattr(call, "flags", ()):
            name = flag[2:].split("=", 1)[0].replace("-", "_") if flag.startswith("--") else ""
            if not name:
                continue
            check = FlagRefused(cls, name, others)
            if check.everywhere:
                continue
            refusal = (f"{flag} ({entry}'s HfArgumentParser of {cls}): parse_args_into_dataclasses raises ValueError "
                       f"(Some specified arguments are not used by the HfArgumentParser: [{flag!r}, ...])")
            held = [index for index in range(len(releases)) if check.takes(index)]
            if held:
                hint = f"; {name} is an option of transformers {_dotted(releases[held[0]])} to {_dotted(releases[held[-1]])}"
                close = did_you_mean(name, [f for f in newest if f != name])
                hint += f": write --{close}" if close and held[-1] != len(releases) - 1 else ""
            else:
                close = did_you_mean(name, [*newest, *others])
                hint = f"; did you mean --{close}?" if close else "; no dataclass of the parser defines it"
            yield check, (line, column), refusal + hint
