"""DeepSpeed's data efficiency library: what its curriculum sampler refuses once the engine builds it.

DeepSpeed builds `DeepSpeedDataSampler` (and a `CurriculumScheduler` per metric) only when the
program hands it the training data (`deepspeed.initialize(training_data=...)` or
`engine.deepspeed_io(dataset)`). That is the premise every finding here rests on, shown by the
script that reads the ds_config; without it a finding is an info that says so.
"""

from __future__ import annotations

import json
import os
from typing import Any, Iterable

from shardshift.context import UnknownContext
from shardshift.document import Document
from shardshift.rules.base import Context, Finding, Related, Rule

# deepspeed/runtime/data_pipeline/curriculum_scheduler.py (0.19.8): schedule_type -> the schedule_config
# keys CurriculumScheduler asserts, in its order
SCHEDULE_KEYS = {
    "fixed_discrete": ("difficulty", "max_step"),
    "fixed_root": ("total_curriculum_step", "difficulty_step", "root_degree"),
    "fixed_linear": ("total_curriculum_step", "difficulty_step"),
    "custom": (),
}
# data_sampling's default num_epochs (data_pipeline/constants.py DATA_SAMPLING_NUM_EPOCHS_DEFAULT)
NUM_EPOCHS_DEFAULT = 1000
CURRICULUM = "/data_efficiency/data_sampling/curriculum_learning"
BUILT = "when deepspeed.initialize builds the training data loader"


def _block(data: Any, *keys: str) -> dict | None:
    """The object at `keys` under `data`, or None where a step is missing or no object."""
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else None


def _truth(value: Any) -> bool:
    """DeepSpeed reads `enabled` with get_scalar_param and tests Python's truth: "false" enables."""
    return bool(value)


def training_data_verdict(document: Document, context: Context) -> tuple[str, list[Related], list[Related]]:
    """Whether a program that reads `document` hands DeepSpeed its training data: ("yes", where, []),
    ("no", [], []) when every consumer found certainly does not, else ("unknown", [], undecided) or
    ("none", [], []) when no consumer was found."""
    from shardshift.rules.deepspeed.auto import consumers_of, undecided_consumers_of

    consumers = consumers_of(document, context)
    if not consumers:
        maybe = undecided_consumers_of(document, context)  # a script whose config path is decided at run time
        if maybe:
            return "unknown", [], [Related(c.file, c.line, 1, None, c.unknown or "") for c in maybe]
        return "none", [], []
    shown: list[Related] = []
    undecided: list[Related] = []
    for consumer in consumers:
        label = consumer.describe().rsplit(" (", 1)[0]
        if consumer.hugging_face:
            continue  # the Trainer, Accelerate and Axolotl pass no training_data; they build their own loaders
        if not consumer.file.endswith(".py"):
            undecided.append(Related(consumer.file, consumer.line, 1, None, f"{label} runs a script shardshift did "
                                     "not follow to its deepspeed.initialize call"))
            continue
        verdict, line = _script_passes_data(consumer.file, context, consumer.line)
        if verdict is True:
            shown.append(Related(consumer.file, line, 1, None, "hands DeepSpeed the training data, which builds the "
                                 "curriculum data sampler"))
        elif verdict is None:
            undecided.append(Related(consumer.file, line, 1, None, "whether this call passes training_data is decided "
                                     "at run time"))
    if shown:
        return "yes", shown, []
    if undecided:
        return "unknown", [], undecided
    return "no", [], []


def _script_passes_data(path: str, context: Context, line: int) -> tuple[bool | None, int]:
    """(True / False / None, line) for the deepspeed.initialize calls of a script that pass the
    config at `line` (all of them when none is on that line): True where one certainly passes
    training_data or the script calls `deepspeed_io(...)`."""
    from shardshift.rules.deepspeed.auto import initialize_calls_of

    found = initialize_calls_of(path, context, line)
    if found is None:
        return None, line
    text, chosen = found
    verdicts = [(call.passes("training_data"), call.line) for call in chosen]
    for verdict, at in verdicts:
        if verdict:
            return True, at
    for number, source in enumerate(text.splitlines(), 1):
        if ".deepspeed_io(" in source and not source.lstrip().startswith("#"):
            return True, number
    for verdict, at in verdicts:
        if verdict is None:
            return None, at
    return False, line


class CurriculumScheduleRefused(Rule):
    """A curriculum-learning metric that DeepSpeed's curriculum sampler refuses when it is built.

    ## What it does
    Reports, in `data_efficiency.data_sampling.curriculum_learning` enabled (Python's truth of
    the value, as DeepSpeed reads it), what DeepSpeed 0.19.8's `DeepSpeedDataSampler` and
    `CurriculumScheduler` refuse:

    - no `data_cluster_path` (KeyError before any metric is read);
    - a metric without `min_difficulty`, `max_difficulty` or `schedule_type`, or with a
      `schedule_type` other than `fixed_discrete`, `fixed_root`, `fixed_linear`, `custom`;
    - a `schedule_config` missing, or without the keys its schedule type needs
      (`difficulty` and `max_step` for `fixed_discrete`, with `difficulty` one longer than a
      non-empty `max_step`; `total_curriculum_step` and `difficulty_step`, plus `root_degree`
      for `fixed_root`);
    - a metric without `difficulty_type` or `clustering_type` (KeyError);
    - `data_sampling.num_epochs` 0 or below (the sampler asserts a positive sample count).

    DeepSpeed builds the sampler only when the program hands it the training data
    (`deepspeed.initialize(training_data=...)` or `engine.deepspeed_io(...)`). The finding is
    an error where the script that reads the config shows that; an info where no such script was
    found or it is decided at run time. Under the Hugging Face Trainer, Accelerate or Axolotl
    (which pass no training data) nothing is reported here.

    ## Why is this bad
    Each of these stops `deepspeed.initialize` on every rank (AssertionError, KeyError or
    RuntimeError "Unsupported curriculum schedule type").

    ## Example
    ```json
    {"data_efficiency": {"data_sampling": {"curriculum_learning": {"enabled": true,
      "data_cluster_path": "clusters", "curriculum_metrics": {"seqlen": {
        "difficulty_type": "value", "clustering_type": "single_cluster",
        "min_difficulty": 8, "max_difficulty": 1024, "schedule_type": "fixed_linear",
        "schedule_config": {"total_curriculum_step": 30000}}}}}}}
    ```

    ## Use instead
    ```json
        "schedule_config": {"total_curriculum_step": 30000, "difficulty_step": 8}
    ```
    """

    code = "DS453"
    name = "curriculum-schedule-refused"
    severity = "error"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        sampling = _block(document.data, "data_efficiency", "data_sampling")
        curriculum = _block(sampling, "curriculum_learning")
        if not isinstance(curriculum, dict) or not _truth(curriculum.get("enabled", False)):
            return
        metrics = curriculum.get("curriculum_metrics")
        if not isinstance(metrics, dict):
            return  # missing: DS452 (DeepSpeed asserts while it reads the config)
        problems = list(self._problems(curriculum, metrics, sampling))
        if not problems:
            return
        verdict, shown, undecided = training_data_verdict(document, context)
        if verdict == "no":
            return
        unknown = None
        if verdict == "none":
            from shardshift.rules.deepspeed.auto import search_stopped

            unknown = UnknownContext("consumer", search_stopped(document, context) or "no script that reads this file "
                                     "was found, so whether DeepSpeed builds its curriculum sampler (only when the "
                                     "program hands it training_data) is unknown",
                                     "check the ds_config together with the training script that uses it")
        elif verdict == "unknown":
            where = undecided[0]
            shown_file = os.path.relpath(where.file) if os.path.isabs(where.file) else where.file
            unknown = UnknownContext("program", f"whether {shown_file}:{where.line} reads this file and hands DeepSpeed "
                                     "the training data (which builds the curriculum sampler) could not be decided",
                                     "check the ds_config together with the script that calls deepspeed.initialize")
        for pointer, message in problems:
            yield self.finding(document, pointer, message, related=shown, unknown_context=unknown)

    def _problems(self, curriculum: dict, metrics: dict, sampling: dict) -> Iterable[tuple[str, str]]:
        if "data_cluster_path" not in curriculum:
            yield (CURRICULUM, f"curriculum learning is enabled without data_cluster_path: DeepSpeed's data sampler "
                   f"reads it {BUILT} and raises KeyError: 'data_cluster_path'; add the folder it keeps its clusters in")
        for name, metric in metrics.items():
            if not isinstance(metric, dict):
                continue
            where = f"{CURRICULUM}/curriculum_metrics/{_escape(name)}"
            yield from self._metric(name, metric, where)
        epochs = sampling.get("num_epochs", NUM_EPOCHS_DEFAULT)
        if isinstance(epochs, (int, float)) and not isinstance(epochs, bool) and epochs <= 0:
            yield ("/data_efficiency/data_sampling/num_epochs",
                   f"data_sampling.num_epochs is {json.dumps(epochs)} with curriculum learning: the sampler's sample "
                   f"count is the epoch size times num_epochs, and DeepSpeed asserts it is positive {BUILT}; set "
                   "num_epochs to 1 or more (the default is 1000)")

    @staticmethod
    def _metric(name: str, metric: dict, where: str) -> Iterable[tuple[str, str]]:
        shown = f"curriculum metric {json.dumps(name)}"
        for key in ("min_difficulty", "max_difficulty", "schedule_type"):
            if key not in metric:
                yield (where, f"{shown} has no {key}: DeepSpeed's CurriculumScheduler asserts {BUILT} "
                       f"(\"Curriculum learning requires the config '{key}'\")")
        schedule = metric.get("schedule_type")
        if "schedule_type" in metric and (not isinstance(schedule, str) or schedule not in SCHEDULE_KEYS):
            from shardshift.rules.base import did_you_mean

            close = did_you_mean(str(schedule), SCHEDULE_KEYS)
            yield (f"{where}/schedule_type", f"{shown} has schedule_type {json.dumps(schedule)}, not one of "
                   f"{', '.join(SCHEDULE_KEYS)}: DeepSpeed raises RuntimeError {BUILT} (\"Unsupported curriculum "
                   f"schedule type\")" + (f"; did you mean {json.dumps(close)}?" if close else ""))
        needed = SCHEDULE_KEYS.get(schedule, ()) if isinstance(schedule, str) else ()
        if needed and all(key in metric for key in ("min_difficulty", "max_difficulty")):
            config = metric.get("schedule_config")
            if not isinstance(config, dict):
                yield (where if config is None else f"{where}/schedule_config",
                       f"{shown} has schedule_type {schedule} and {'no' if config is None else 'a non-object'} "
                       f"schedule_config: DeepSpeed's CurriculumScheduler reads its {' and '.join(needed)} {BUILT} "
                       f"and fails ({'KeyError' if config is None else 'TypeError'})")
            else:
                missing = [key for key in needed if key not in config]
                for key in missing:
                    yield (f"{where}/schedule_config", f"{shown} has schedule_type {schedule} without "
                           f"schedule_config.{key}: DeepSpeed's CurriculumScheduler asserts {BUILT} (\"Curriculum "
                           f"learning with {schedule} schedule requires the schedule_config '{key}'\")")
                if schedule == "fixed_discrete" and not missing:
                    yield from _discrete(shown, config, f"{where}/schedule_config")
        for key in ("difficulty_type", "clustering_type"):
            if key not in metric:
                yield (where, f"{shown} has no {key}: DeepSpeed's data sampler reads it {BUILT} and raises "
                       f"KeyError: '{key}'")


def _discrete(shown: str, config: dict, where: str) -> Iterable[tuple[str, str]]:
    difficulty, max_step = config.get("difficulty"), config.get("max_step")
    if not isinstance(difficulty, list) or not isinstance(max_step, list):
        return
    if not max_step or not difficulty:
        empty = "max_step" if not max_step else "difficulty"
        yield (f"{where}/{empty}", f"{shown} has an empty schedule_config.{empty}: DeepSpeed's CurriculumScheduler "
               f"asserts it is not empty {BUILT}")
    elif len(difficulty) != len(max_step) + 1:
        yield (f"{where}/difficulty", f"{shown} has {len(difficulty)} difficulties for {len(max_step)} max_step "
               f"entries: DeepSpeed's CurriculumScheduler asserts one difficulty more than max_step entries (the last "
               f"holds for every later step) {BUILT}")


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


RANDOM_LTD = "/data_efficiency/data_routing/random_ltd"


class RandomLtdRefused(Rule):
    """A `random_ltd` block (data routing) that DeepSpeed's random-LTD scheduler refuses.

    ## What it does
    Reports, in an enabled `data_efficiency.data_routing.random_ltd` (Python's truth of the
    value, as DeepSpeed reads it), what DeepSpeed 0.19.8's `RandomLTDScheduler` refuses:
    `total_layer_num`, `random_ltd_layer_num` or `random_ltd_schedule` missing, a schedule without
    `min_value`, `max_value`, `schedule_config` or `schedule_type`, a `layer_token_lr_schedule`
    without `enabled` or with it on (not implemented), and a `schedule_type` other than
    `fixed_linear` while `min_value` is below `max_value`.

    ## Why is this bad
    `deepspeed.initialize` builds the scheduler for every program that trains through the engine
    (the Hugging Face Trainer included) and stops with KeyError or NotImplementedError; an
    unsupported schedule type stops the first training forward (RuntimeError "Unsupported random
    LTD schedule type").

    ## Example
    ```json
    {"data_efficiency": {"data_routing": {"random_ltd": {"enabled": true, "total_layer_num": 24,
      "random_ltd_layer_num": 22, "random_ltd_schedule": {"min_value": 128, "max_value": 2048,
      "schedule_type": "fixed_root", "schedule_config": {"require_steps": 200000, "seq_per_step": 16}}}}}}
    ```

    ## Use instead
    ```json
      "schedule_type": "fixed_linear"
    ```
    """

    code = "DS455"
    name = "random-ltd-refused"
    severity = "error"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        block = _block(document.data, "data_efficiency", "data_routing", "random_ltd")
        if not isinstance(block, dict) or not _truth(block.get("enabled", False)):
            return
        built = "when deepspeed.initialize builds the random-LTD scheduler"
        for key in ("total_layer_num", "random_ltd_layer_num", "random_ltd_schedule"):
            if key not in block:
                yield self.finding(document, RANDOM_LTD, f"random_ltd is enabled without {key}: DeepSpeed reads it "
                                   f"{built} and raises KeyError: '{key}'")
        lr_schedule = block.get("layer_token_lr_schedule")
        if isinstance(lr_schedule, dict):
            if "enabled" not in lr_schedule:
                yield self.finding(document, f"{RANDOM_LTD}/layer_token_lr_schedule",
                                   f"random_ltd.layer_token_lr_schedule has no enabled: DeepSpeed reads it {built} and "
                                   "raises KeyError: 'enabled'; add \"enabled\": false")
            elif _truth(lr_schedule["enabled"]):
                yield self.finding(document, f"{RANDOM_LTD}/layer_token_lr_schedule/enabled",
                                   f"random_ltd.layer_token_lr_schedule is enabled: DeepSpeed raises "
                                   f"NotImplementedError {built} (its scheduler is work in progress); set it to false",
                                   fix="false")
        schedule = block.get("random_ltd_schedule")
        if not isinstance(schedule, dict):
            return
        missing = [k for k in ("min_value", "max_value", "schedule_config", "schedule_type") if k not in schedule]
        for key in missing:
            yield self.finding(document, f"{RANDOM_LTD}/random_ltd_schedule", f"random_ltd.random_ltd_schedule has no "
                               f"{key}: DeepSpeed reads it {built} and raises KeyError: '{key}'")
        if missing:
            return
        low, high, kind = schedule["min_value"], schedule["max_value"], schedule["schedule_type"]
        numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (low, high))
        if kind != "fixed_linear" and numbers and low < high:
            yield self.finding(document, f"{RANDOM_LTD}/random_ltd_schedule/schedule_type",
                               f"random_ltd.random_ltd_schedule.schedule_type is {json.dumps(kind)}: DeepSpeed supports "
                               "only \"fixed_linear\" and raises RuntimeError at the first training forward "
                               f"(\"Unsupported random LTD schedule type\"), while min_value {low} is below max_value "
                               f"{high}", fix='"fixed_linear"')
