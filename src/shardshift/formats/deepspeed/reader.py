"""DeepSpeed ds_config.json: reader (text -> Document with Plan) and writer (Plan -> text).

The reader parses the text as DeepSpeed's own loader (hjson) reads it (JSON, comments, and
hjson's laxer forms, which rule SS004 reports: shardshift.jsonc), renames legacy
spellings the way DeepSpeed itself migrates them, lifts every value with a neutral meaning into
the Plan, and keeps the rest, untouched, in ``plan.passthrough["deepspeed"]``. A value is lifted
only when its JSON type is the one DeepSpeed expects: anything else stays in the passthrough and
is written back verbatim, so a round trip never changes what DeepSpeed sees.
"""

from __future__ import annotations

import copy
import json
import re
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Callable

from shardshift.document import Document, SyntaxProblem
from shardshift.formats.deepspeed.keys import KEYS, Key, key_index
from shardshift.jsonc import ParseError, parse_jsonc
from shardshift.source import MISSING, Location, join_pointer, split_pointer, value_at

if TYPE_CHECKING:  # the Plan (pydantic) is imported when a Plan is built, not to check a file
    from shardshift.plan import Plan

FORMAT = "deepspeed"

# Keys whose presence marks a JSON object as a ds_config.
MARKER_KEYS = frozenset({
    "zero_optimization", "train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps",
    "fp16", "bf16", "bfloat16", "gradient_clipping", "steps_per_print", "wall_clock_breakdown", "zero_allow_untested_optimizer",
})
# File names that say "ds_config" even when the content has none of the marker keys.
NAME_PATTERN = re.compile(r"ds_?config|deepspeed|zero[_-]?(stage)?[_-]?[0-3]|ds_z[0-3]", re.IGNORECASE)

# Scheduler params lifted into the Plan, per DeepSpeed scheduler type.
SCHEDULER_FIELDS: dict[str, dict[str, str]] = {
    "WarmupLR": {"warmup_min_lr": "min_lr", "warmup_max_lr": "max_lr", "warmup_num_steps": "warmup_steps",
                 "warmup_type": "warmup_type"},
    "WarmupDecayLR": {"warmup_min_lr": "min_lr", "warmup_max_lr": "max_lr", "warmup_num_steps": "warmup_steps",
                      "total_num_steps": "total_steps", "warmup_type": "warmup_type"},
    "WarmupCosineLR": {"warmup_num_steps": "warmup_steps", "total_num_steps": "total_steps",
                       "warmup_type": "warmup_type"},
    "OneCycle": {"cycle_min_lr": "min_lr", "cycle_max_lr": "max_lr"},
    "LRRangeTest": {"lr_range_test_min_lr": "min_lr"},
}
# The JSON type a lifted scheduler param must have (pydantic alone would turn "1e-5" or true into numbers).
SCHEDULER_FIELD_TYPES = {"min_lr": "number", "max_lr": "number", "warmup_steps": "int", "total_steps": "int",
                         "warmup_type": "str"}
OPTIMIZER_FIELDS = ("lr", "betas", "eps", "weight_decay")


def looks_like(path: str, text: str) -> bool:
    """Whether a file is probably a ds_config, by name or by content."""
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    if not name.lower().endswith((".json", ".jsonc", ".hjson", ".conf")):
        return False
    if NAME_PATTERN.search(name):
        return True
    if '"compute_environment"' in text or '"distributed_type"' in text:
        from shardshift.formats.accelerate.reader import JSON_MARKER

        if JSON_MARKER.search(text):  # an Accelerate config written as JSON ("mixed_precision": "bf16")
            return False
    if any(f'"{k}"' in text for k in MARKER_KEYS) or (
            any(k in text for k in MARKER_KEYS) and _QUOTELESS_MARKER.search(text) is not None):
        return True
    if text.lstrip()[:1] != "{":
        return False
    first = _FIRST_KEY.match(text)
    if first is not None and not _deepspeed_key(first.group(1)):
        return False  # a JSON object whose first key DeepSpeed does not know: not parsed (a 30 MB data file)
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # not strict JSON, or nested deeper than json can follow
        return False
    return _only_deepspeed_keys(data)


# Top-level ds_config keys that are plain words other tools use too: a JSON object made of these
# alone ({"optimizer": ...}, {"checkpoint": ...}) is not taken for a ds_config by its content.
_COMMON_WORDS = frozenset({"optimizer", "scheduler", "timers", "pipeline", "compile", "checkpoint", "aio",
                           "wandb", "comet", "tensorboard", "amp"})


# The first key of a JSON object, when written without escapes.
_FIRST_KEY = re.compile(r'\s*\{\s*"([^"\\]*)"\s*:')


def _deepspeed_key(key: Any) -> bool:
    row = key_index().get("/" + key) if isinstance(key, str) and "/" not in key else None
    return row is not None and not row.foreign


def _only_deepspeed_keys(data: Any) -> bool:
    """A JSON object whose top-level keys are all ds_config keys (removed ones too, such as an
    elasticity-only file), with at least one that only DeepSpeed uses (a name with an underscore,
    or elasticity, nebula, eigenvalue, autotuning): read as a ds_config, so that a file DeepSpeed
    reads is checked, while package.json, tsconfig.json or a JSON Schema are not."""
    if not isinstance(data, dict) or not data or "$schema" in data:
        return False
    if not all(_deepspeed_key(key) for key in data):
        return False
    return any(key not in _COMMON_WORDS for key in data)


# A marker key written the hjson way, without quotes (`train_batch_size: 32`).
_QUOTELESS_MARKER = re.compile(r"(?:^|[{,\s'])(?:" + "|".join(sorted(MARKER_KEYS)) + r")'?[ \t]*:", re.M)


def is_config(document: Document) -> bool:
    """Whether a parsed file really is a ds_config: a marker key at the top level, or a
    ds_config file name. A JSON of Hugging Face training arguments (`output_dir`,
    `per_device_train_batch_size`, ... with `fp16` and `gradient_accumulation_steps`) is none."""
    from shardshift.formats.training_args_json import is_training_arguments

    if is_training_arguments(document.data):
        return False
    if isinstance(document.data, dict) and MARKER_KEYS.intersection(document.data):
        return True
    if isinstance(document.data, dict) and "$schema" in document.data:
        return False  # a JSON Schema (such as schemas/ds_config.schema.json), not a config
    if _only_deepspeed_keys(document.data):
        return True
    name = document.path.replace("\\", "/").rsplit("/", 1)[-1]
    return bool(NAME_PATTERN.search(name))


def not_config_reason(document: Document) -> str | None:
    """Why a file taken for a ds_config by its name or content is none, when that is more than
    "no setting of the format"."""
    from shardshift.formats.training_args_json import is_training_arguments

    if is_training_arguments(document.data):
        return ("it holds Hugging Face training arguments (output_dir, per_device_train_batch_size, ...), as read by "
                "HfArgumentParser.parse_json_file, not a ds_config")
    return None


# --- helpers over nested dicts ------------------------------------------------------------


def _set(data: dict, pointer: str, value: Any) -> None:
    tokens = split_pointer(pointer)
    for token in tokens[:-1]:
        if not isinstance(data.get(token), dict):
            data[token] = {}
        data = data[token]
    data[tokens[-1]] = value


def _delete(data: dict, pointer: str) -> None:
    """Remove the value at `pointer` and the parents that this leaves empty."""
    tokens = split_pointer(pointer)
    chain = [data]
    for token in tokens[:-1]:
        chain.append(chain[-1][token])
    del chain[-1][tokens[-1]]
    for depth in range(len(tokens) - 1, 0, -1):
        if chain[depth] == {}:
            del chain[depth - 1][tokens[depth - 1]]
        else:
            break


def _json_type_ok(key: Key, value: Any, strict: bool = False) -> Any:
    """The value to lift if its JSON type is what DeepSpeed expects for `key`, else MISSING.

    A whole float (JSON `5e8`) counts as an int only in strict sections, where DeepSpeed's
    pydantic models convert it; elsewhere DeepSpeed uses the float as it is (a float
    `warmup_num_steps` fails at initialisation), so it stays verbatim in the passthrough."""
    if value == "auto":
        return value
    if key.type == "int":
        if isinstance(value, bool):
            return MISSING
        if isinstance(value, int):
            return value
        if strict and isinstance(value, float) and value.is_integer():
            return int(value)
        return MISSING
    if key.type == "number":
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else MISSING
    if key.type == "bool":
        return value if isinstance(value, bool) else MISSING
    if key.type == "str":
        return value if isinstance(value, str) else MISSING
    if key.type == "enum":
        return value if key.choices and value in key.choices else MISSING
    return MISSING


def _in_strict_section(key: Key) -> bool:
    parent = key_index().get(key.path.rsplit("/", 1)[0])
    return parent is not None and parent.strict


def _assign(section: Any, dotted: str, value: Any) -> bool:
    """Set a Plan field by dotted path; False when the field's type rejects the value."""
    from shardshift.plan import assign

    return assign(section, dotted, value)


SIMPLE_KEYS: tuple[Key, ...] = tuple(
    k for k in KEYS if k.field and not k.renamed_to and k.path not in ("/fp16/enabled", "/bf16/enabled")
    and not k.path.startswith(("/optimizer/", "/scheduler/"))
)


# --- normalisation of legacy spellings ----------------------------------------------------


def _blocked(data: dict, pointer: str) -> bool:
    """Whether a parent of `pointer` holds a non-object value (so setting it would destroy that value)."""
    value: Any = data
    for token in split_pointer(pointer)[:-1]:
        if token not in value:
            return False
        value = value[token]
        if not isinstance(value, dict):
            return True
    return False


def _copy_json(value: Any) -> Any:
    """A deep copy of JSON-like data, several times faster than copy.deepcopy on a large file
    (no memo: parsed data shares no containers); other mutable values go through deepcopy."""
    if type(value) is dict:
        return {k: _copy_json(v) if isinstance(v, (dict, list)) else v for k, v in value.items()}
    if type(value) is list:
        return [_copy_json(v) if isinstance(v, (dict, list)) else v for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return copy.deepcopy(value)


def _normalise(data: dict) -> tuple[dict, dict[str, str]]:
    """Rename legacy keys the way DeepSpeed migrates them. Returns (data, renamed) where renamed
    maps each new pointer to the pointer as written."""
    data = _copy_json(data)
    renamed: dict[str, str] = {}
    zero = data.get("zero_optimization")
    if isinstance(zero, bool):  # legacy `zero_optimization: true` -> stage 1
        data["zero_optimization"] = {"stage": 1 if zero else 0}
        renamed["/zero_optimization/stage"] = "/zero_optimization"
        if zero and "allgather_size" in data:
            data["zero_optimization"]["allgather_bucket_size"] = data.pop("allgather_size")
            renamed["/zero_optimization/allgather_bucket_size"] = "/allgather_size"
    # The Hugging Face integration fills "auto" only under `bf16`, so renaming a `bfloat16` block
    # that holds "auto" would change what the Trainer hands to DeepSpeed: keep such a block as is.
    legacy_bf16 = data.get("bfloat16")
    if legacy_bf16 is not None and "bf16" not in data and not (
            isinstance(legacy_bf16, dict) and "auto" in legacy_bf16.values()):
        data["bf16"] = data.pop("bfloat16")
        renamed["/bf16"] = "/bfloat16"
        if isinstance(data["bf16"], dict):
            for name in data["bf16"]:
                renamed[f"/bf16/{name}"] = f"/bfloat16/{name}"
    zero = data.get("zero_optimization")
    if isinstance(zero, dict):
        for key in KEYS:
            if not (key.renamed_to and key.path.startswith("/zero_optimization/") and not key.inert):
                continue
            name = key.path.rsplit("/", 1)[1]
            if name not in zero or value_at(data, key.renamed_to) is not MISSING or _blocked(data, key.renamed_to):
                continue
            value = zero[name]
            if name in ("cpu_offload", "cpu_offload_param"):
                if not isinstance(value, bool):
                    continue
                del zero[name]
                if value:
                    _set(data, key.renamed_to, "cpu")
                    renamed[key.renamed_to] = key.path
                continue
            target_name = split_pointer(key.renamed_to)[-1]
            zero[target_name] = zero.pop(name)
            renamed[key.renamed_to] = key.path
    return data, renamed


# --- reader -------------------------------------------------------------------------------


def read(text: str, path: str = "<string>") -> Document:
    """Parse a ds_config and build its Plan. Never raises for bad input: a syntax problem is
    recorded on the Document."""
    document = Document(path=path, format=FORMAT, text=text)
    try:
        root = parse_jsonc(text)
    except ParseError as error:
        document.syntax = SyntaxProblem(error.message, error.line, error.column)
        return document
    document.root = root
    document.data = root.to_python()
    if not isinstance(document.data, dict):
        document.syntax = SyntaxProblem(f"a ds_config is a JSON object, not {root.kind}", root.line, root.column)
        return document
    normalised, document.renamed = _normalise(document.data)
    document.defer_plan(lambda: _plan_of(normalised, lambda pointer: locate(document, pointer)))
    return document


def locate(document: Document, pointer: str) -> Location:
    """Where the value at `pointer` (in the normalised data) is written in `document`."""
    line, column = document.position(pointer)
    return Location(document.path, line, column, document.renamed.get(pointer, pointer))


def plan_from_dict(raw: dict, locate: Callable[[str], Location] | None = None) -> tuple[Plan, dict[str, str]]:
    """The Plan of a ds_config given as a dict (json.load semantics). With `locate` (a pointer
    -> its Location), every field the reader sets records where it was written."""
    data, renamed = _normalise(raw)
    return _plan_of(data, locate), renamed


def _plan_of(data: dict, locate: Callable[[str], Location] | None) -> Plan:
    """The Plan of normalised ds_config data (legacy spellings already renamed). `data` is the
    private copy `_normalise` made: what is not lifted into fields stays in it, as the passthrough."""
    from shardshift.plan import Plan

    rest = data
    plan = Plan()
    consumed: list[str] = []
    origins: dict[str, str] = {}  # dotted Plan field -> the pointer it was read from

    for key, tokens, strict in _simple_keys():
        value = _lookup(data, tokens)
        if value is MISSING:
            continue
        value = _json_type_ok(key, value, strict)
        if value is not MISSING and _assign(plan, key.field, value):
            consumed.append(key.path)
            origins[key.field] = key.path

    _read_precision(data, plan, consumed, origins)
    _read_optimizer(data, plan, consumed, origins)
    _read_scheduler(data, plan, consumed, origins)

    for pointer in consumed:
        if value_at(rest, pointer) is not MISSING:
            _delete(rest, pointer)
    if rest:
        plan.passthrough[FORMAT] = rest
    if locate is not None:
        plan.provenance.update((dotted, locate(pointer)) for dotted, pointer in origins.items())
    return plan


@lru_cache(maxsize=None)
def _simple_keys() -> tuple[tuple[Key, tuple[str, ...], bool], ...]:
    """SIMPLE_KEYS with their pointer split once and whether their section is strict (a check of
    a whole corpus reads this table once per file)."""
    return tuple((key, tuple(split_pointer(key.path)), _in_strict_section(key)) for key in SIMPLE_KEYS)


def _lookup(data: dict, tokens: tuple[str, ...]) -> Any:
    for token in tokens:
        if not isinstance(data, dict) or token not in data:
            return MISSING
        data = data[token]
    return data


def _read_precision(data: dict, plan: Plan, consumed: list[str], origins: dict[str, str]) -> None:
    fp16 = value_at(data, "/fp16/enabled")
    bf16 = value_at(data, "/bf16/enabled")
    flags = [v for v in (fp16, bf16) if v is not MISSING]
    if not flags or not all(isinstance(v, bool) for v in flags):
        return  # "auto", a string or nothing: leave it to the passthrough
    if fp16 is True and bf16 is True:
        return  # contradictory; DeepSpeed rejects it, keep it as written
    plan.precision.param_dtype = "fp16" if fp16 is True else "bf16" if bf16 is True else "fp32"
    origins["precision.param_dtype"] = "/bf16/enabled" if bf16 is True or fp16 is MISSING else "/fp16/enabled"
    consumed.extend(p for p, v in (("/fp16/enabled", fp16), ("/bf16/enabled", bf16)) if v is not MISSING)


def _is_number_or_auto(value: Any) -> bool:
    return value == "auto" or (isinstance(value, (int, float)) and not isinstance(value, bool))


def _read_optimizer(data: dict, plan: Plan, consumed: list[str], origins: dict[str, str]) -> None:
    block = data.get("optimizer")
    if not isinstance(block, dict):
        return
    if not block:
        consumed.append("/optimizer")  # the writer writes an empty block for an empty Optimizer
    from shardshift.plan import Optimizer

    optimizer = Optimizer()
    origins["optimizer"] = "/optimizer"
    if isinstance(block.get("type"), str):
        optimizer.name = block["type"]
        consumed.append("/optimizer/type")
        origins["optimizer.name"] = "/optimizer/type"
    params = block.get("params")
    if isinstance(params, dict):
        origins["optimizer.params"] = "/optimizer/params"
        for name, value in params.items():
            pointer = join_pointer("/optimizer/params", name)
            if name in OPTIMIZER_FIELDS and name != "betas" and _is_number_or_auto(value):
                _assign(optimizer, name, value)
                origins["optimizer." + name] = pointer
            elif name == "betas" and (value == "auto" or (isinstance(value, list) and all(map(_is_number_or_auto, value)))):
                _assign(optimizer, "betas", value)
                origins["optimizer.betas"] = pointer
            else:
                optimizer.params[name] = copy.deepcopy(value)
            consumed.append(pointer)
    if optimizer.name and optimizer.name.lower() in ("adam", "adamw"):
        mode = optimizer.params.get("adam_w_mode", True)
        if isinstance(mode, bool):
            optimizer.decoupled_weight_decay = optimizer.name.lower() == "adamw" or mode
    plan.optimizer = optimizer


def _read_scheduler(data: dict, plan: Plan, consumed: list[str], origins: dict[str, str]) -> None:
    block = data.get("scheduler")
    if not isinstance(block, dict):
        return
    from shardshift.plan import Scheduler

    if not block:
        consumed.append("/scheduler")  # the writer writes a block (with empty params) for an empty Scheduler
    scheduler = Scheduler()
    origins["scheduler"] = "/scheduler"
    if isinstance(block.get("type"), str):
        scheduler.name = block["type"]
        consumed.append("/scheduler/type")
        origins["scheduler.name"] = "/scheduler/type"
    fields = SCHEDULER_FIELDS.get(scheduler.name or "", {})
    params = block.get("params")
    if isinstance(params, dict):
        origins["scheduler.params"] = "/scheduler/params"
        for name, value in params.items():
            target = fields.get(name)
            lifted = MISSING if target is None else _json_type_ok(Key("", SCHEDULER_FIELD_TYPES[target]), value)
            if lifted is MISSING or not _assign(scheduler, target, lifted):  # type: ignore[arg-type]
                scheduler.params[name] = copy.deepcopy(value)
            else:
                origins["scheduler." + target] = join_pointer("/scheduler/params", name)
        consumed.append("/scheduler/params")
    plan.scheduler = scheduler
