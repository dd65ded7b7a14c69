"""torchtitan train-config TOML (`--job.config_file`, the format torchtitan read until 2026-02): reader.

Parsed with the standard library's `tomllib`, as torchtitan's `ConfigManager` reads it, with a
position for every table, key and value (toml.py). Lifted into the Plan, each with its place:

- degrees: `[parallelism]` `data_parallel_replicate_degree`, `data_parallel_shard_degree`,
  `tensor_parallel_degree`, `pipeline_parallel_degree`, `context_parallel_degree`,
  `expert_parallel_degree`; in the ≤ 2025-04 layout the same keys under `[training]`
  (`data_parallel_degree` then meant the FSDP degree) and `[experimental]`. A shard degree of -1
  ("the ranks left over": world // (replicate·cp·tp·pp), ParallelDims) is an Unknown: a TOML does
  not state the world size;
- batch: `training.local_batch_size` (older `batch_size`) -> batch.micro, `global_batch_size`
  (-1 = no accumulation -> batch.accumulation 1), `seq_len`;
- precision: `training.mixed_precision_param` / `mixed_precision_reduce` -> param/reduce dtype (what
  FSDP's MixedPrecisionPolicy gets), `model.converters` with "quantize.linear.float8" (v0.2) or
  "float8" (v0.1), or `[float8] enable_float8_linear` (≤ 2025-04) -> precision.fp8;
- `[optimizer]` name, lr, eps, weight_decay, betas (beta1 and beta2 both written);
  `[lr_scheduler]` (older `training.warmup_steps`) warmup_steps, total_steps, decay_type (name),
  decay_ratio / min_lr_factor (params); `training.max_norm` -> gradient_clipping;
- `activation_checkpoint.mode` -> activation_checkpointing.enabled (mode "none" = off; the mode
  itself stays in the passthrough); `parallelism.fsdp_reshard_after_forward` -> sharding.
  reshard_after_forward ("default" = not pipeline-parallel); `training.enable_cpu_offload` -> the
  optimizer and parameters offloaded to the CPU.

Everything else stays as written in `plan.passthrough["torchtitan"]`.
"""

from __future__ import annotations

import re

from shardshift.document import Document, SyntaxProblem
from shardshift.source import MISSING

FORMAT = "torchtitan"

# The section headers that mark a torchtitan TOML (an unparseable file is reported only with one).
MARKER_KEYS = ("[job]", "[model]", "[training]", "[parallelism]", "[optimizer]", "[lr_scheduler]",
               "[activation_checkpoint]", "[checkpoint]")
_MARKER = re.compile(r"^\[(?:job|model|training|parallelism|optimizer|lr_scheduler|activation_checkpoint|"
                     r"checkpoint)\][ \t]*(?:#.*)?$", re.MULTILINE)
_SECTIONS = {"job", "model", "training", "parallelism", "optimizer", "lr_scheduler", "activation_checkpoint",
             "checkpoint"}

DTYPES = {"bfloat16": "bf16", "float32": "fp32", "float16": "fp16"}
FLOAT8_CONVERTERS = ("quantize.linear.float8", "float8")

# Plan field <- the pointers that may hold it, newest layout first
DEGREES = {
    "parallelism.data_parallel_replicate": ("/parallelism/data_parallel_replicate_degree",
                                            "/training/data_parallel_replicate_degree"),
    "parallelism.data_parallel_shard": ("/parallelism/data_parallel_shard_degree",
                                        "/training/data_parallel_shard_degree", "/training/data_parallel_degree"),
    "parallelism.tensor": ("/parallelism/tensor_parallel_degree", "/training/tensor_parallel_degree"),
    "parallelism.pipeline": ("/parallelism/pipeline_parallel_degree", "/experimental/pipeline_parallel_degree",
                             "/training/pipeline_parallel_degree"),
    "parallelism.context": ("/parallelism/context_parallel_degree", "/experimental/context_parallel_degree"),
    "parallelism.expert": ("/parallelism/expert_parallel_degree",),
}
SCALARS = {  # Plan field <- (pointers, kind)
    "batch.micro": (("/training/local_batch_size", "/training/batch_size"), int),
    "batch.sequence_length": (("/training/seq_len",), int),
    "gradient_clipping": (("/training/max_norm",), float),
    "optimizer.name": (("/optimizer/name",), str),
    "optimizer.lr": (("/optimizer/lr",), float),
    "optimizer.eps": (("/optimizer/eps",), float),
    "optimizer.weight_decay": (("/optimizer/weight_decay",), float),
    "scheduler.warmup_steps": (("/lr_scheduler/warmup_steps", "/training/warmup_steps"), int),
    # torchtitan decays over lr_scheduler.total_steps when given, else over training.steps (build_lr_schedulers)
    "scheduler.total_steps": (("/lr_scheduler/total_steps", "/training/steps"), int),
    "scheduler.name": (("/lr_scheduler/decay_type",), str),
}


def looks_like(path: str, text: str) -> bool:
    """A .toml file with one of torchtitan's section headers (`[job]`, `[training]`, ...)."""
    return path.lower().endswith(".toml") and _MARKER.search(text) is not None


def is_config(document: Document) -> bool:
    """The parsed document really has one of torchtitan's sections at its top level."""
    data = document.data
    return isinstance(data, dict) and any(isinstance(data.get(s), dict) for s in _SECTIONS)


def read(text: str, path: str = "<string>") -> Document:
    """Parse a torchtitan TOML and build its Plan. Never raises for bad input."""
    from shardshift.formats.torchtitan.toml import TomlProblem, parse
    from shardshift.formats.yaml_lift import Lifter

    document = Document(path=path, format=FORMAT, text=text)
    try:
        document.root, document.data = parse(text)
    except TomlProblem as problem:
        document.syntax = SyntaxProblem(problem.message, problem.line, problem.column)
        return document
    except Exception as error:  # noqa: BLE001  # tomllib accepted it but the positioned scan did not
        document.syntax = SyntaxProblem(f"cannot position this TOML: {error}", 1, 1)
        return document
    lift = Lifter(document)
    _degrees(lift)
    for dotted, (pointers, kind) in SCALARS.items():
        pointer = _first(lift, pointers)
        if pointer is not None:
            lift.set(dotted, _typed(lift.value(pointer), kind), pointer)
    _batch(lift)
    _precision(lift)
    _optimizer(lift)
    _scheduler(lift)
    _checkpointing(lift)
    _reshard(lift)
    offload = _first(lift, ("/training/enable_cpu_offload",))
    if offload is not None and lift.value(offload) is True:
        lift.set("offload.optimizer.device", "cpu", offload, consumed=())
        lift.set("offload.params.device", "cpu", offload)
    return lift.finish(FORMAT)


def _first(lift, pointers: tuple[str, ...]) -> str | None:
    for pointer in pointers:
        if lift.value(pointer) is not MISSING:
            return pointer
    return None


def _typed(value, kind):
    """The value when torchtitan would use it as `kind`: TOML ints for ints, ints or floats for
    floats (the config manager does not convert: a string stays a string); MISSING else."""
    if isinstance(value, bool):
        return MISSING
    if kind is float and isinstance(value, (int, float)):
        return value
    if isinstance(value, kind):
        return value
    return MISSING


def _degrees(lift) -> None:
    from shardshift.plan import Unknown

    for dotted, pointers in DEGREES.items():
        pointer = _first(lift, pointers)
        if pointer is None:
            continue
        value = _typed(lift.value(pointer), int)
        if value == -1 and dotted == "parallelism.data_parallel_shard":
            value = Unknown("-1: torchtitan gives the shard degree the ranks left over, world size // "
                            "(replicate × context × tensor × pipeline), once the world size is known",
                            lift.where(pointer))
            lift.set(dotted, value, pointer, consumed=())  # -1 stays as written
            continue
        lift.set(dotted, value, pointer)


def _batch(lift) -> None:
    pointer = "/training/global_batch_size"
    value = _typed(lift.value(pointer), int)
    if value == -1:
        lift.set("batch.accumulation", 1, pointer, consumed=())
        lift.lifted.append(pointer)
    elif value is not MISSING:
        lift.set("batch.global_", value, pointer)


def _precision(lift) -> None:
    for dotted, pointer in (("precision.param_dtype", "/training/mixed_precision_param"),
                            ("precision.reduce_dtype", "/training/mixed_precision_reduce")):
        value = lift.value(pointer)
        if isinstance(value, str) and value in DTYPES:
            lift.set(dotted, DTYPES[value], pointer)
    converters = lift.value("/model/converters")
    if isinstance(converters, list):
        # "float8" is the v0.1 name; a v0.2 file (one with [quantize] or [compile]) only registers the new one
        names = FLOAT8_CONVERTERS[:1] if _v02(lift) else FLOAT8_CONVERTERS
        for index, name in enumerate(converters):
            if name in names:
                lift.set("precision.fp8", True, f"/model/converters/{index}", consumed=())
                break
    legacy = lift.value("/float8/enable_float8_linear")
    if isinstance(legacy, bool):
        lift.set("precision.fp8", legacy, "/float8/enable_float8_linear")


def _v02(lift) -> bool:
    return isinstance(lift.value("/quantize"), dict) or isinstance(lift.value("/compile"), dict)


def _optimizer(lift) -> None:
    beta1, beta2 = lift.value("/optimizer/beta1"), lift.value("/optimizer/beta2")
    if _typed(beta1, float) is not MISSING and _typed(beta2, float) is not MISSING:
        lift.set("optimizer.betas", [float(beta1), float(beta2)], "/optimizer/beta1",
                 consumed=("/optimizer/beta1", "/optimizer/beta2"))


def _scheduler(lift) -> None:
    params = {k: v for k in ("decay_ratio", "min_lr_factor")
              if (v := _typed(lift.value(f"/lr_scheduler/{k}"), float)) is not MISSING}
    pointers = [f"/lr_scheduler/{k}" for k in params]
    # v0.1's name for the same factor (lr_scheduler.py: `lr_min + (1 - lr_min) * adjustment`), renamed in v0.2
    legacy = _typed(lift.value("/lr_scheduler/lr_min"), float)
    if legacy is not MISSING and "min_lr_factor" not in params:
        params["min_lr_factor"] = legacy
        pointers.append("/lr_scheduler/lr_min")
    if params:
        lift.set("scheduler.params", params, pointers[0], consumed=tuple(pointers))


def _checkpointing(lift) -> None:
    pointer = "/activation_checkpoint/mode"
    mode = lift.value(pointer)
    if mode in ("selective", "full", "memory_budget", "none"):
        lift.set("activation_checkpointing.enabled", mode != "none", pointer, consumed=())


def _reshard(lift) -> None:
    pointer = "/parallelism/fsdp_reshard_after_forward"
    policy = lift.value(pointer)
    if policy == "always":
        lift.set("sharding.reshard_after_forward", True, pointer, consumed=())
    elif policy == "never":
        lift.set("sharding.reshard_after_forward", False, pointer, consumed=())
    elif policy == "default":
        pipeline = lift.plan.parallelism.pipeline
        if pipeline is None or isinstance(pipeline, int):
            lift.set("sharding.reshard_after_forward", not (pipeline or 1) > 1, pointer, consumed=())
