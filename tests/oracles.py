"""DeepSpeed's own config parser as a test oracle (tests only: needs the `oracles` extra).

`import deepspeed` costs about 3.5 s, so it happens once, lazily, in `deepspeed_module()`; each
`DeepSpeedConfig(...)` after that costs well under a millisecond. Nothing here touches a GPU or
starts a process group: `DeepSpeedConfig.__init__` falls back to rank 0 / world 1 when dist is not
initialised, and `deepspeed_accepts` patches `dist.get_world_size` / `dist.get_rank` to parse at
another data-parallel size (../shared/reference/oracles.md).

Hugging Face `"auto"` values are filled the way transformers' `HfTrainerDeepSpeedConfig`
(`trainer_config_process` + `trainer_config_finalize`) fills them, from the TrainingArguments in
`TRAINING_ARGUMENTS` adjusted to agree with the values the file states (`trainer_arguments_for`),
because a user whose file says `"train_micro_batch_size_per_gpu": 4` runs the Trainer with
`--per_device_train_batch_size 4` (anything else is a Trainer ValueError, not a DeepSpeed one).
"""

from __future__ import annotations

import copy
import math
import os
import re
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

# The TrainingArguments the auto-filling starts from: transformers' defaults, except warmup
# (default 0; DeepSpeed's WarmupLR wants a positive step count) and precision (bf16, the usual
# choice for LLM training; fp16 when the file enables fp16 itself).
TRAINING_ARGUMENTS: dict[str, Any] = {
    "per_device_train_batch_size": 8,
    "gradient_accumulation_steps": 1,
    "max_grad_norm": 1.0,
    "learning_rate": 5e-5,
    "adam_beta1": 0.9,
    "adam_beta2": 0.999,
    "adam_epsilon": 1e-8,
    "weight_decay": 0.0,
    "fp16": False,
    "bf16": True,
    "fp16_opt_level": "O1",
    "warmup_steps": 100,
    "num_training_steps": 1000,
}
# model.config.hidden_size for the hidden-size-based keys (a Llama-7B-sized model).
HIDDEN_SIZE = 4096

PLAUSIBLE_WORLD_SIZES = (1, 2, 4, 8, 16)
ALL_WORLD_SIZES = (1, 2, 4, 8, 16, 32, 64)

# Deprecated ZeRO fields: DeepSpeed copies them into their replacements and deletes them, so they
# are absent from a dump when given and present (None/False) when not; compare the replacements.
DEPRECATED_ZERO_FIELDS = frozenset({"cpu_offload", "cpu_offload_param", "cpu_offload_use_pin_memory",
                                    "stage3_gather_fp16_weights_on_model_save"})

# Oracle failures that only say there is no GPU on this machine (oracles.md): not rejections.
# Whole phrases, so that a rejected key that merely contains "cuda" is still a rejection.
GPU_ONLY_MARKERS = ("only supported for cuda accelerator", "cannot access accelerator device",
                    "no cuda gpus are available", "torch not compiled with cuda enabled",
                    "found no nvidia driver")


# --- loading --------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def deepspeed_module():
    """Import DeepSpeed once, CPU accelerator, quiet logger."""
    os.environ.setdefault("DS_ACCELERATOR", "cpu")
    import logging

    import deepspeed
    import deepspeed.runtime.config  # noqa: F401
    from deepspeed.utils import logger

    logger.setLevel(logging.ERROR)
    return deepspeed


def load_text(text: str) -> dict:
    """Parse ds_config text the way `DeepSpeedConfig(path)` does: hjson (comments allowed,
    integral numbers such as 5e8 become ints), duplicate keys rejected (ValueError)."""
    import hjson
    from deepspeed.runtime.config_utils import dict_raise_error_on_duplicate_keys

    deepspeed_module()
    return hjson.loads(text, object_pairs_hook=dict_raise_error_on_duplicate_keys)


def load_file(path: str | Path) -> dict:
    """`load_text` of a file."""
    return load_text(Path(path).read_text(encoding="utf-8-sig"))


def _outside_strings(text: str, handle) -> str:
    """Rebuild `text`, letting `handle(text, i)` rewrite what lies outside JSON strings: it
    returns (replacement, next index) or None to keep the character."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
            continue
        done = handle(text, i)
        if done is None:
            out.append(text[i])
            i += 1
        else:
            out.append(done[0])
            i = done[1]
    return "".join(out)


def _comment(text: str, i: int):
    if text.startswith("//", i) or text[i] == "#":
        end = text.find("\n", i)
        return "", len(text) if end < 0 else end
    if text.startswith("/*", i):
        end = text.find("*/", i + 2)
        return " ", len(text) if end < 0 else end + 2
    return None


_CLOSER_AHEAD = re.compile(r"\s*[}\]]")


def _trailing_comma(text: str, i: int):
    if text[i] == "," and _CLOSER_AHEAD.match(text, i + 1):
        return "", i + 1
    return None


def is_json_with_comments(text: str) -> bool:
    """Whether `text` is JSON once comments (//, /* */, #) and trailing commas are removed: the
    part of hjson that ds_config files use. hjson also takes missing commas, unquoted strings
    and more, which DeepSpeed then accepts from a file but `json.load` (Transformers, Accelerate)
    refuses; such files count as rejected here."""
    import json

    try:
        json.loads(_outside_strings(_outside_strings(text, _comment), _trailing_comma))
    except ValueError:
        return False
    return True


# --- Hugging Face Trainer "auto" filling ---------------------------------------------------


def _node(config: dict, dotted: str) -> tuple[dict | None, str]:
    *parents, key = dotted.split(".")
    for part in parents:
        config = config.get(part) if isinstance(config, dict) else None
        if not isinstance(config, dict):
            return None, key
    return config, key


def _get(config: dict, dotted: str, default: Any = None) -> Any:
    node, key = _node(config, dotted)
    return default if node is None else node.get(key, default)


def _stated(config: dict, dotted: str) -> Any:
    """The value the file states for `dotted`, or None when absent or "auto"."""
    value = _get(config, dotted)
    return None if value == "auto" else value


def _positive_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value if isinstance(value, int) and value > 0 else None


def data_parallel_size(config: dict, world_size: int) -> int:
    """World size divided by `sequence_parallel_size` when the file sets it (what DeepSpeed and
    the Trainer use for the batch arithmetic)."""
    sp = _positive_int(config.get("sequence_parallel_size")) if isinstance(config, dict) else None
    return max(1, world_size // sp) if sp else world_size


def trainer_arguments_for(config: dict, world_size: int) -> dict[str, Any]:
    """TrainingArguments a user would pass with this file: the defaults, overridden by every
    value the Trainer checks against the file ("match" keys) that the file states."""
    args = dict(TRAINING_ARGUMENTS)
    numbers = {"train_micro_batch_size_per_gpu": "per_device_train_batch_size",
               "gradient_accumulation_steps": "gradient_accumulation_steps"}
    for ds_key, arg in numbers.items():
        value = _positive_int(_stated(config, ds_key))
        if value is not None:
            args[arg] = value
    total = _positive_int(_stated(config, "train_batch_size"))
    dp = data_parallel_size(config, world_size)
    if total is not None:
        micro_stated = _positive_int(_stated(config, "train_micro_batch_size_per_gpu")) is not None
        gas_stated = _positive_int(_stated(config, "gradient_accumulation_steps")) is not None
        if not micro_stated and total % (dp * args["gradient_accumulation_steps"]) == 0:
            args["per_device_train_batch_size"] = max(1, total // (dp * args["gradient_accumulation_steps"]))
        elif not gas_stated and total % (dp * args["per_device_train_batch_size"]) == 0:
            args["gradient_accumulation_steps"] = max(1, total // (dp * args["per_device_train_batch_size"]))
    clip = _stated(config, "gradient_clipping")
    if isinstance(clip, (int, float)) and not isinstance(clip, bool):
        args["max_grad_norm"] = clip
    for ds_key, arg in (("optimizer.params.lr", "learning_rate"), ("optimizer.params.eps", "adam_epsilon"),
                        ("optimizer.params.weight_decay", "weight_decay"),
                        ("scheduler.params.warmup_max_lr", "learning_rate")):
        value = _stated(config, ds_key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            args[arg] = value
    betas = _stated(config, "optimizer.params.betas")
    if isinstance(betas, list) and len(betas) == 2:
        args["adam_beta1"], args["adam_beta2"] = betas
    fp16, bf16 = _stated(config, "fp16.enabled"), _stated(config, "bf16.enabled")
    if fp16 is True:
        args["fp16"], args["bf16"] = True, False
    elif bf16 is False and fp16 is None:
        args["bf16"] = False
    if bf16 is True:
        args["bf16"] = True
    for ds_key, arg in (("scheduler.params.total_num_steps", "num_training_steps"),
                        ("scheduler.params.warmup_num_steps", "warmup_steps")):
        value = _positive_int(_stated(config, ds_key))
        if value is not None:
            args[arg] = value
    return args


def fill_auto_like_trainer(config: dict, world_size: int, *, hidden_size: int = HIDDEN_SIZE,
                           args: dict[str, Any] | None = None) -> dict:
    """A copy of `config` with "auto" replaced the way transformers' HfTrainerDeepSpeedConfig
    does (../shared/reference/deepspeed.md §2). Only those keys: any other "auto" stays, as it
    does under the Trainer (DeepSpeed then drops it in strict sections and keeps the string in
    permissive ones)."""
    config = copy.deepcopy(config)
    if not isinstance(config, dict):
        return config
    args = args or trainer_arguments_for(config, world_size)
    dp = data_parallel_size(config, world_size)

    def fill(dotted: str, value: Any) -> None:
        node, key = _node(config, dotted)
        if node is not None and node.get(key) == "auto":
            node[key] = value

    fill("train_micro_batch_size_per_gpu", args["per_device_train_batch_size"])
    fill("gradient_accumulation_steps", args["gradient_accumulation_steps"])
    fill("train_batch_size", dp * args["per_device_train_batch_size"] * args["gradient_accumulation_steps"])
    fill("gradient_clipping", args["max_grad_norm"])
    fill("optimizer.params.lr", args["learning_rate"])
    fill("optimizer.params.betas", [args["adam_beta1"], args["adam_beta2"]])
    fill("optimizer.params.eps", args["adam_epsilon"])
    fill("optimizer.params.weight_decay", args["weight_decay"])
    fill("scheduler.params.warmup_min_lr", 0)
    fill("scheduler.params.warmup_max_lr", args["learning_rate"])
    fill("fp16.enabled", bool(args["fp16"]))
    fill("amp.enabled", False)
    fill("amp.opt_level", args["fp16_opt_level"])
    fill("bf16.enabled", bool(args["bf16"]))
    # trainer_config_finalize
    fill("zero_optimization.reduce_bucket_size", hidden_size * hidden_size)
    if _get(config, "zero_optimization.stage") == 3:
        fill("zero_optimization.stage3_prefetch_bucket_size", int(0.9 * hidden_size * hidden_size))
        fill("zero_optimization.stage3_param_persistence_threshold", 10 * hidden_size)
    fill("scheduler.params.total_num_steps", args["num_training_steps"])
    fill("scheduler.params.warmup_num_steps", args["warmup_steps"])
    return config


# --- DeepSpeedConfig ------------------------------------------------------------------------


@contextmanager
def _world(world_size: int):
    dist = deepspeed_module().runtime.config.dist
    saved = dist.get_world_size, dist.get_rank
    dist.get_world_size = lambda *args, **kwargs: world_size
    dist.get_rank = lambda *args, **kwargs: 0
    try:
        yield
    finally:
        dist.get_world_size, dist.get_rank = saved


def gpu_only(error: str) -> bool:
    """Whether an oracle error only says that this machine has no GPU (oracles.md), such as
    `aio.use_gds: true` ("GDS currently only supported for CUDA accelerator")."""
    lowered = error.lower()
    return not lowered.startswith("validationerror") and any(marker in lowered for marker in GPU_ONLY_MARKERS)


def deepspeed_accepts(config_dict: Any, world_size: int) -> tuple[bool, str | None, dict | None]:
    """Run `DeepSpeedConfig(config_dict)` as if on `world_size` ranks. A `Path` is handed to
    DeepSpeed as a file name, so DeepSpeed's own file loader reads it.

    Returns (ok, error, resolved): `error` is "ExceptionType: message" when DeepSpeed refused
    the config; `resolved` is what DeepSpeed made of it (see `resolved_values`). A failure that
    only says there is no GPU counts as acceptance (with `resolved` None)."""
    deepspeed = deepspeed_module()
    if isinstance(config_dict, Path):
        config: Any = str(config_dict)
    elif isinstance(config_dict, dict):
        config = copy.deepcopy(config_dict)
    else:
        return False, f"TypeError: a ds_config is a JSON object, not {type(config_dict).__name__}", None
    with _world(world_size):
        try:
            parsed = deepspeed.runtime.config.DeepSpeedConfig(config)
        except Exception as error:  # noqa: BLE001 - every refusal is a result here
            message = f"{type(error).__name__}: {error}".strip()
            if gpu_only(message):
                return True, message, None
            return False, message, None
    return True, None, resolved_values(parsed)


def _offload(block: Any) -> dict | None:
    if block is None:
        return None
    nvme_path = None if block.nvme_path is None else str(block.nvme_path)
    return {"device": str(_enum_value(block.device)), "nvme_path": nvme_path, "pin_memory": block.pin_memory}


def _enum_value(value: Any) -> Any:
    return getattr(value, "value", value)


def _dtype_name(value: Any) -> str | None:
    return None if value is None else str(value).replace("torch.", "")


def resolved_values(parsed: Any) -> dict:
    """What DeepSpeed 0.19.8 resolved from a config (attribute names of `DeepSpeedConfig`)."""
    zero = parsed.zero_config
    fp16, bf16 = parsed.float16_config, parsed.bfloat16_config
    return {
        "train_batch_size": parsed.train_batch_size,
        "train_micro_batch_size_per_gpu": parsed.train_micro_batch_size_per_gpu,
        "gradient_accumulation_steps": parsed.gradient_accumulation_steps,
        "zero_stage": int(_enum_value(parsed.zero_optimization_stage)),
        "offload_optimizer": _offload(zero.offload_optimizer),
        "offload_param": _offload(zero.offload_param),
        "fp16_enabled": fp16.enabled,
        "bf16_enabled": bf16.enabled,
        "loss_scale": fp16.loss_scale,
        "initial_scale_power": fp16.initial_scale_power,
        "loss_scale_window": fp16.loss_scale_window,
        "hysteresis": fp16.hysteresis,
        "consecutive_hysteresis": fp16.consecutive_hysteresis,
        "min_loss_scale": fp16.min_loss_scale,
        "optimizer_name": parsed.optimizer_name,
        "optimizer_params": parsed.optimizer_params,
        "scheduler_name": parsed.scheduler_name,
        "scheduler_params": parsed.scheduler_params,
        "reduce_bucket_size": zero.reduce_bucket_size,
        "allgather_bucket_size": zero.allgather_bucket_size,
        "prefetch_bucket_size": zero.prefetch_bucket_size,
        "param_persistence_threshold": zero.param_persistence_threshold,
        "gradient_clipping": parsed.gradient_clipping,
        "communication_data_type": _dtype_name(parsed.communication_data_type),
        # everything else ZeRO resolved, for a stricter round-trip comparison
        "zero_config": {name: value for name, value in zero.model_dump(mode="json").items()
                        if name not in DEPRECATED_ZERO_FIELDS},
    }


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, (list, tuple)):
        return "list"
    return type(value).__name__


def same(a: Any, b: Any, *, exact_numbers: bool = False) -> bool:
    """Equal values. `true` is never the number 1 here (Python says it is); `1` and `1.0` are
    equal unless `exact_numbers`, which also tells ints from floats."""
    kinds = {_kind(a), _kind(b)}
    if len(kinds) > 1 and (exact_numbers or not kinds <= {"int", "float"}):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k], exact_numbers=exact_numbers) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y, exact_numbers=exact_numbers) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def differences(first: dict, second: dict, *, exact_numbers: bool = False) -> dict[str, tuple[Any, Any]]:
    """Resolved values that differ: {name: (first, second)} (see `same`)."""
    return {name: (first.get(name), second.get(name)) for name in sorted(set(first) | set(second))
            if not same(first.get(name), second.get(name), exact_numbers=exact_numbers)}


# Values DeepSpeed uses raw and needs as ints: a round trip must not turn them into floats
# (e.g. WarmupLR raises for a float warmup_num_steps since 0.19.3; batch values feed range()).
INT_SENSITIVE = ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps")
INT_SENSITIVE_SCHEDULER_PARAMS = ("warmup_num_steps", "total_num_steps", "lr_range_test_step_size",
                                  "cycle_first_step_size", "cycle_second_step_size", "cycle_first_stair_count",
                                  "cycle_second_stair_count", "decay_step_size")


def int_kind_changes(first: dict, second: dict) -> dict[str, tuple[Any, Any]]:
    """Int-sensitive resolved values whose int/float kind differs between two resolutions."""
    pairs = {name: (first.get(name), second.get(name)) for name in INT_SENSITIVE}
    params = (first.get("scheduler_params") or {}, second.get("scheduler_params") or {})
    if all(isinstance(p, dict) for p in params):
        pairs.update({f"scheduler.params.{name}": (params[0].get(name), params[1].get(name))
                      for name in INT_SENSITIVE_SCHEDULER_PARAMS})
    return {name: pair for name, pair in pairs.items() if _kind(pair[0]) != _kind(pair[1])}


# --- world sizes ----------------------------------------------------------------------------


def implied_world_sizes(config: Any) -> list[int]:
    """World sizes the batch values of a config point at (train / (micro x accumulation) and
    the like, times sequence_parallel_size), beyond the powers of two."""
    if not isinstance(config, dict):
        return []
    total = _positive_int(config.get("train_batch_size"))
    micro = _positive_int(config.get("train_micro_batch_size_per_gpu"))
    gas = _positive_int(config.get("gradient_accumulation_steps"))
    sp = _positive_int(config.get("sequence_parallel_size")) or 1
    found: set[int] = set()
    if total:
        for divisor in {(micro or 1) * (gas or 1), micro or 1, gas or 1, 1}:
            if total % divisor == 0:
                found.add(total // divisor * sp)
    return sorted(size for size in found if 0 < size <= 65536 and size not in ALL_WORLD_SIZES)


def first_acceptance(config: dict, world_sizes=PLAUSIBLE_WORLD_SIZES, *, fill: bool = True
                     ) -> tuple[int | None, dict | None, list[str]]:
    """The first world size at which DeepSpeed accepts `config` (after Trainer-style auto
    filling when `fill`): (world_size, filled config, errors seen at each size tried)."""
    errors: list[str] = []
    for world in world_sizes:
        candidate = fill_auto_like_trainer(config, world) if fill else config
        ok, error, _ = deepspeed_accepts(candidate, world)
        if ok:
            return world, candidate, errors
        errors.append(f"world {world}: {error}")
    return None, None, errors


def rejected_everywhere(config: Any) -> tuple[bool, list[str]]:
    """Whether DeepSpeed rejects `config` at every plausible data-parallel world size (powers of
    two to 64 and the sizes its batch values imply), after Trainer-style auto filling."""
    if not isinstance(config, dict):
        return True, ["not a JSON object"]
    sizes = (*ALL_WORLD_SIZES, *implied_world_sizes(config))
    world, _, errors = first_acceptance(config, sizes)
    return world is None, errors


# --- Accelerate's launcher and the HF Trainer's DeepSpeed handoff, in a child process -------
#
# Both change process-wide state (os.environ, the current directory, Accelerate's singleton
# state, transformers' global DeepSpeed config weakref), so they run in a fresh Python with a
# timeout, all cases of a module in one child (imports cost seconds, each case milliseconds).

TESTS = Path(__file__).resolve().parent
CHILD_TIMEOUT = 600  # seconds: a cold first import of torch + DeepSpeed on a slow CI machine

# The start of the ValueError in DeepSpeedPlugin._deepspeed_config_checks (accelerate 1.15.0).
ACCELERATE_REFUSAL = "When using `deepspeed_config_file`, the following accelerate config variables will be ignored:"
# The start of the ValueError in HfTrainerDeepSpeedConfig.trainer_config_finalize (transformers 5.24.0).
TRAINER_MISMATCH = "Please correct the following DeepSpeed config values that mismatch TrainingArguments values"


def require_installed(*modules: str) -> None:
    """Skip the calling test when an oracle package is not installed, except under CI
    (`CI=true`, as .ci/run runs), where scripts/install-dev.sh must have installed it: there a
    missing oracle fails the test instead of passing unnoticed. Looks modules up without
    importing them."""
    import importlib.util

    import pytest

    missing = [name for name in modules if importlib.util.find_spec(name) is None]
    if not missing:
        return
    message = f"oracle package(s) not installed: {', '.join(missing)} (pip install -e '.[oracles]')"
    if os.environ.get("CI", "").strip().lower() in ("1", "true", "yes"):
        pytest.fail(f"{message}; CI must run every oracle test (scripts/install-dev.sh)", pytrace=False)
    pytest.skip(message)


def run_in_child(function: str, payload: Any, *, timeout: float = CHILD_TIMEOUT, module: str = "oracles") -> Any:
    """`<module>.<function>(payload)` in a fresh Python (`module`: a module of tests/, `oracles` by
    default): JSON in and out through files (the frameworks log to stdout). Raises AssertionError
    with the child's output when it fails or outlives `timeout`."""
    import json
    import subprocess
    import sys
    import tempfile

    with tempfile.TemporaryDirectory(prefix="shardshift-oracle-") as scratch:
        given, result = Path(scratch, "in.json"), Path(scratch, "out.json")
        given.write_text(json.dumps(payload), encoding="utf-8")
        env = {name: value for name, value in os.environ.items() if not name.startswith("ACCELERATE_")}
        env.update(DS_ACCELERATOR="cpu", HF_HUB_OFFLINE="1", TRANSFORMERS_VERBOSITY="error",
                   TOKENIZERS_PARALLELISM="false", PYTHONWARNINGS="ignore")
        code = ("import importlib, json, sys; sys.path.insert(0, sys.argv[1]); "
                "out = getattr(importlib.import_module(sys.argv[5]), sys.argv[2])(json.load(open(sys.argv[3]))); "
                "json.dump(out, open(sys.argv[4], 'w'))")
        try:
            done = subprocess.run([sys.executable, "-c", code, str(TESTS), function, str(given), str(result), module],
                                  capture_output=True, text=True, timeout=timeout, env=env, cwd=scratch,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as error:
            raise AssertionError(f"oracle child {function} did not finish in {timeout} s:\n{error.stdout}\n"
                                 f"{error.stderr}") from None
        if done.returncode != 0 or not result.is_file():
            raise AssertionError(f"oracle child {function} failed ({done.returncode}):\n{done.stdout[-4000:]}\n"
                                 f"{done.stderr[-4000:]}")
        return json.loads(result.read_text(encoding="utf-8"))


def _error_text(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


def accelerate_launch_outcomes(config_files: list[str]) -> dict[str, dict]:
    """(In the child.) What `accelerate launch --config_file FILE train.py` does with each
    Accelerate config up to the point where each training process builds its DeepSpeedPlugin.

    Accelerate's own code all the way: the launch parser, `launch_command` (which runs
    `_validate_launch_command`, i.e. `load_config_from_file`, then lists the YAML's DeepSpeed
    fields and `mixed_precision` for ACCELERATE_CONFIG_DS_FIELDS), `deepspeed_launcher` and its
    `prepare_deepspeed_cmd_env`. Only the final `torch.distributed.run.run` is replaced: instead
    of starting the training processes it builds `DeepSpeedPlugin()` and calls
    `set_mixed_precision` under the environment those processes would get (the launcher's own
    `patch_environment(**current_env)`), as `Accelerator()` does in each of them. A multi-node
    launch (which would start the `deepspeed` runner) is refused rather than run.

    The current directory is each file's folder, where a relative deepspeed_config_file
    resolves. Returns {file: {"stage": "launch" | "plugin" | "mixed_precision" | None,
    "error": "Type: message" | None}}."""
    import subprocess
    from unittest import mock

    import torch.distributed.run as distrib_run
    from accelerate.commands import launch as accelerate_launch
    from accelerate.utils import DeepSpeedPlugin

    outcomes: dict[str, dict] = {}
    home = os.getcwd()
    for config_file in config_files:
        outcome: dict[str, Any] = {"stage": None, "error": None}

        def start_processes(_args, outcome=outcome):
            try:
                plugin = DeepSpeedPlugin()
            except Exception as error:  # noqa: BLE001 - every refusal is a result here
                outcome.update(stage="plugin", error=_error_text(error))
                return
            try:
                plugin.set_mixed_precision(os.environ.get("ACCELERATE_MIXED_PRECISION", "no"))
            except Exception as error:  # noqa: BLE001
                outcome.update(stage="mixed_precision", error=_error_text(error))

        def no_runner(*args, **kwargs):
            raise RuntimeError("a multi-node launch would start the deepspeed runner: not run by the oracle")

        os.chdir(os.path.dirname(os.path.abspath(config_file)))
        try:
            args = accelerate_launch.launch_command_parser().parse_args(
                ["--config_file", os.path.basename(config_file), "train.py"])
            with mock.patch.object(distrib_run, "run", start_processes), \
                    mock.patch.object(subprocess, "Popen", no_runner):
                accelerate_launch.launch_command(args)
        except Exception as error:  # noqa: BLE001
            outcome.update(stage="launch", error=_error_text(error))
        finally:
            os.chdir(home)
        outcomes[config_file] = outcome
    return outcomes


def axolotl_training_arguments(yaml_config: dict) -> dict[str, Any]:
    """The TrainingArguments keywords Axolotl's trainer builder derives from its YAML for the
    values transformers checks against a ds_config (../shared/reference/axolotl.md §2, §5):
    micro_batch_size -> per_device_train_batch_size (default 1), gradient_accumulation_steps
    (default 1), learning_rate (a string such as "2e-5" is converted), weight_decay (default
    0.0), bf16 / fp16 (`true` only; Axolotl's `bf16: auto` is decided by the GPU), and
    max_grad_norm, adam_beta1/2, adam_epsilon and optimizer (-> optim) only when set, so that
    transformers' own defaults apply otherwise."""
    kwargs: dict[str, Any] = {
        "per_device_train_batch_size": int(yaml_config.get("micro_batch_size") or 1),
        "gradient_accumulation_steps": int(yaml_config.get("gradient_accumulation_steps") or 1),
        "learning_rate": float(yaml_config["learning_rate"]) if "learning_rate" in yaml_config else 5e-5,
        "weight_decay": float(yaml_config.get("weight_decay") or 0.0),
        "bf16": yaml_config.get("bf16") is True,
        "fp16": yaml_config.get("fp16") is True,
    }
    for key in ("max_grad_norm", "adam_beta1", "adam_beta2", "adam_epsilon"):
        if yaml_config.get(key) is not None:
            kwargs[key] = float(yaml_config[key])
    if yaml_config.get("optimizer") is not None:
        kwargs["optim"] = yaml_config["optimizer"]
    return kwargs


def trainer_handoff_outcomes(yaml_files: list[str]) -> dict[str, dict]:
    """(In the child.) What the Hugging Face Trainer does with each Axolotl YAML's ds_config,
    with transformers' own code: `TrainingArguments(deepspeed=<the ds_config, json.load-ed>,
    use_cpu=True, ...)` (its __post_init__ builds `HfTrainerDeepSpeedConfig` and runs
    `trainer_config_process`), then what `Trainer` runs: `propagate_args_to_deepspeed` (at
    construction) and `deepspeed_init(trainer, num_training_steps=10)` (in `train`), which runs
    `trainer_config_finalize` (where mismatches raise) and `deepspeed_optim_sched` (which picks
    the optimizer and scheduler). The Trainer is a stand-in carrying the model (a Linear layer
    with a config.hidden_size of 16), the arguments, the Accelerator state and a
    `create_optimizer` / `create_scheduler` that record being called: the only Trainer methods
    `deepspeed_optim_sched` uses. `deepspeed.initialize` is not run (the optimizer DeepSpeed then
    builds from the ds_config's block is DeepSpeed's business, see test_deepspeed_oracle).

    Returns {file: {"stage", "error", "config" (the ds_config after filling), "optimizer"
    (class name), "created" (Trainer methods called), "scheduler" (class name),
    "scheduler_from_trainer" (a DummyScheduler that will build the Trainer's scheduler)}}."""
    import json
    import tempfile
    from types import SimpleNamespace

    import torch
    import yaml
    from transformers import TrainingArguments
    from transformers.integrations.deepspeed import deepspeed_init, propagate_args_to_deepspeed

    outcomes: dict[str, dict] = {}
    for yaml_file in yaml_files:
        outcome: dict[str, Any] = {"stage": None, "error": None, "config": None, "optimizer": None,
                                   "created": [], "scheduler": None, "scheduler_from_trainer": None}
        outcomes[yaml_file] = outcome
        with open(yaml_file, encoding="utf-8") as handle:
            yaml_config = yaml.safe_load(handle)
        ds_path = os.path.join(os.path.dirname(os.path.abspath(yaml_file)), yaml_config["deepspeed"])
        with open(ds_path, encoding="utf-8") as handle:
            ds_config = json.load(handle)
        with tempfile.TemporaryDirectory() as output_dir:
            try:
                args = TrainingArguments(output_dir=output_dir, use_cpu=True, report_to="none", deepspeed=ds_config,
                                         **axolotl_training_arguments(yaml_config))
            except Exception as error:  # noqa: BLE001
                outcome.update(stage="arguments", error=_error_text(error))
                continue
            model = torch.nn.Linear(4, 4)
            model.config = SimpleNamespace(hidden_size=16)
            created = outcome["created"]

            def create_optimizer(model=model, created=created):
                created.append("create_optimizer")
                return torch.optim.SGD(model.parameters(), lr=0.1)

            def create_scheduler(num_training_steps, optimizer=None, created=created):
                created.append("create_scheduler")
                return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)

            accelerator = SimpleNamespace(state=SimpleNamespace(deepspeed_plugin=args.deepspeed_plugin))
            trainer = SimpleNamespace(model=model, args=args, accelerator=accelerator, optimizer=None,
                                      lr_scheduler=None, create_optimizer=create_optimizer,
                                      create_scheduler=create_scheduler)
            try:
                propagate_args_to_deepspeed(accelerator, args)
                optimizer, scheduler = deepspeed_init(trainer, num_training_steps=10)
            except Exception as error:  # noqa: BLE001
                outcome.update(stage="deepspeed_init", error=_error_text(error),
                               config=accelerator.state.deepspeed_plugin.hf_ds_config.config)
                continue
            outcome.update(config=accelerator.state.deepspeed_plugin.hf_ds_config.config,
                           optimizer=type(optimizer).__name__, scheduler=type(scheduler).__name__,
                           scheduler_from_trainer=getattr(scheduler, "lr_scheduler_callable", None) is not None)
    return outcomes
