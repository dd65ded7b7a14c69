"""The Plan: one neutral, typed description of a distributed training setup.

Every format reads into a Plan and writes out of one. A field holds one of four things:

- None: the source did not say (the framework default applies), which is different from a value
  equal to the default;
- a value of the field's type;
- the Hugging Face placeholder `"auto"`, which some consumer fills at launch;
- an `Unknown`: the source sets it, but to something that is not known before the job runs (an
  environment variable, a run-time argument, a branch the reader cannot decide). It records why,
  where, and, when a branch chooses between values, the alternatives with their conditions.

`Plan.provenance` records where each field was set (file, line, column, JSON pointer or flag):
`plan.set(dotted, value, where)` validates the value against the field's type and records it.
Settings with no neutral meaning are kept per format in `passthrough`, so a same-format round
trip loses nothing.

Standard-library dataclasses, so that building a Plan costs nothing at start-up (a pre-commit
hook builds one per file); the field types are checked by `accepts` and described by
`plan_json_schema` from the same annotations. No I/O and no framework imports here.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Iterator, Literal, Union

from shardshift.source import Location

_UNIONS = (Union, types.UnionType)  # Union[X, Y] and X | Y

Auto = Literal["auto"]
Dtype = Literal["fp32", "fp16", "bf16", "fp8"]
OffloadDevice = Literal["none", "cpu", "nvme"]

AutoInt = Union[int, Auto]
AutoFloat = Union[float, Auto]
AutoBool = Union[bool, Auto]


# --- values that are not known before the job runs ------------------------------------------


@dataclass(frozen=True, slots=True)
class Alternative:
    """One value a branch may give a field, with the condition under which it does."""

    value: Any
    condition: str
    where: Location | None = None


@dataclass(frozen=True, slots=True)
class Unknown:
    """A value set in the source but not known statically.

    `reason` says why in words a user can act on ("environment variable WORLD_SIZE", "run-time
    argument args.lr", "undecided branch `if args.cpu_offload:` at line 12"); `where` is the place
    that decides it; `alternatives` are the values the branches give, when the reader saw them."""

    reason: str
    where: Location | None = None
    alternatives: tuple[Alternative, ...] = ()

    def to_data(self) -> dict:
        out: dict[str, Any] = {"unknown": self.reason}
        if self.where is not None:
            out["where"] = _location_data(self.where)
        if self.alternatives:
            out["alternatives"] = [{"value": to_data(a.value), "condition": a.condition,
                                    **({"where": _location_data(a.where)} if a.where else {})}
                                   for a in self.alternatives]
        return out


def is_unknown(value: Any) -> bool:
    return isinstance(value, Unknown)


def known(value: Any) -> Any:
    """`value` when it is a real value; None when it is not set, "auto" or Unknown. Rules read
    fields through this so that they never judge a placeholder as if it were a value."""
    if value is None or value == "auto" or isinstance(value, Unknown):
        return None
    return value


def _location_data(where: Location) -> dict:
    return {"file": where.file, "line": where.line, "column": where.column, "pointer": where.pointer}


# --- sections ---------------------------------------------------------------------------------


class _Section:
    """Shared behaviour of the Plan and its sections (all dataclasses)."""

    __slots__ = ()

    def is_empty(self) -> bool:
        """True when no field was set (every field is None, empty or an empty section)."""
        for spec in dataclasses.fields(self):  # type: ignore[arg-type]
            if spec.name == "provenance":
                continue
            value = getattr(self, spec.name)
            if isinstance(value, _Section):
                if not value.is_empty():
                    return False
            elif value not in (None, {}, []):
                return False
        return True

    def to_data(self) -> dict:
        """Plain JSON-able data keyed as in the Plan's JSON Schema (`global` for `global_`)."""
        return {_alias(spec.name): to_data(getattr(self, spec.name))
                for spec in dataclasses.fields(self)  # type: ignore[arg-type]
                if spec.name != "provenance"}


def to_data(value: Any) -> Any:
    if isinstance(value, (_Section, Unknown)):
        return value.to_data()
    if isinstance(value, dict):
        return {k: to_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_data(v) for v in value]
    return value


def _alias(name: str) -> str:
    return "global" if name == "global_" else name


@dataclass(slots=True)
class World(_Section):
    """How many processes the job runs: nodes × GPUs per node = world size."""

    nodes: int | None = field(default=None, metadata={"minimum": 1})
    gpus_per_node: int | None = field(default=None, metadata={"minimum": 1})
    world_size: int | None = field(default=None, metadata={"minimum": 1})


@dataclass(slots=True)
class Parallelism(_Section):
    """The degrees of the five parallel axes. data_parallel = replicate × shard."""

    data_parallel_replicate: AutoInt | None = None
    data_parallel_shard: AutoInt | None = None
    tensor: AutoInt | None = None
    pipeline: AutoInt | None = None
    virtual_pipeline: int | None = None
    context: AutoInt | None = None
    sequence_parallel: bool | None = None
    expert: AutoInt | None = None


@dataclass(slots=True)
class Sharding(_Section):
    """What is sharded across data-parallel ranks, in ZeRO-stage terms.

    stage 0: nothing; 1: optimizer state; 2: + gradients; 3: + parameters.
    """

    stage: Union[Literal[0, 1, 2, 3], Auto, None] = None
    reshard_after_forward: Union[bool, int, None] = None
    hybrid: bool | None = None
    hybrid_shard_size: int | None = None


@dataclass(slots=True)
class OffloadTarget(_Section):
    """Where one kind of state lives when it is not on the GPU."""

    device: Union[OffloadDevice, Auto, None] = None
    nvme_path: str | None = None
    pin_memory: AutoBool | None = None
    ratio: float | None = None


@dataclass(slots=True)
class Offload(_Section):
    optimizer: OffloadTarget | None = None
    params: OffloadTarget | None = None


@dataclass(slots=True)
class Precision(_Section):
    """Training dtypes and loss scaling.

    param_dtype: the dtype parameters are computed in; master weights stay fp32 unless said.
    loss_scale: 0 means dynamic scaling (fp16 only).
    """

    param_dtype: Union[Dtype, Auto, None] = None
    compute_dtype: Union[Dtype, Auto, None] = None
    reduce_dtype: Union[Dtype, Auto, None] = None
    grad_accum_dtype: Dtype | None = None
    loss_scale: AutoFloat | None = None
    initial_scale_power: int | None = None
    loss_scale_window: int | None = None
    hysteresis: int | None = None
    consecutive_hysteresis: bool | None = None
    min_loss_scale: float | None = None
    fp8: bool | None = None


@dataclass(slots=True)
class Batch(_Section):
    """Batch sizes in samples: global = micro × accumulation × data-parallel size."""

    micro: AutoInt | None = None
    accumulation: AutoInt | None = None
    global_: AutoInt | None = None
    sequence_length: AutoInt | None = None


@dataclass(slots=True)
class Optimizer(_Section):
    """The optimizer by its framework name, with the common hyper-parameters lifted out."""

    name: str | None = None
    lr: AutoFloat | None = None
    betas: Union[list[AutoFloat], Auto, None] = None
    eps: AutoFloat | None = None
    weight_decay: AutoFloat | None = None
    decoupled_weight_decay: bool | None = None
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Scheduler(_Section):
    """The learning-rate schedule by its framework name; steps count optimizer steps."""

    name: str | None = None
    warmup_steps: AutoInt | None = None
    total_steps: AutoInt | None = None
    min_lr: AutoFloat | None = None
    max_lr: AutoFloat | None = None
    warmup_type: str | None = None
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class ActivationCheckpointing(_Section):
    enabled: bool | None = None
    partition_activations: bool | None = None
    cpu_checkpointing: bool | None = None
    contiguous_memory_optimization: bool | None = None
    number_checkpoints: int | None = None
    synchronize_checkpoint_boundary: bool | None = None
    profile: bool | None = None


@dataclass(slots=True)
class Communication(_Section):
    """Gradient and parameter communication. Bucket sizes are element counts, not bytes."""

    overlap: bool | None = None
    reduce_bucket_elements: AutoInt | None = None
    allgather_bucket_elements: AutoInt | None = None
    prefetch_bucket_elements: AutoInt | None = None
    param_persistence_threshold: AutoInt | None = None
    dtype: Union[Dtype, Auto, None] = None
    contiguous_gradients: bool | None = None
    reduce_scatter: bool | None = None
    allgather_partitions: bool | None = None


@dataclass(slots=True)
class ModelShape(_Section):
    parameters: int | None = None
    layers: int | None = None
    hidden: int | None = None
    heads: int | None = None
    kv_heads: int | None = None
    vocab: int | None = None


@dataclass(slots=True)
class Plan(_Section):
    """A whole training setup. `passthrough` maps a format name to its settings with no
    neutral meaning, in that format's own nested shape. `provenance` maps a dotted field
    ("batch.micro") to where it was set; it is not part of the Plan's value (two Plans with the
    same settings read from different files are equal)."""

    world: World = field(default_factory=World)
    parallelism: Parallelism = field(default_factory=Parallelism)
    sharding: Sharding = field(default_factory=Sharding)
    offload: Offload = field(default_factory=Offload)
    precision: Precision = field(default_factory=Precision)
    batch: Batch = field(default_factory=Batch)
    optimizer: Optimizer | None = None
    scheduler: Scheduler | None = None
    activation_checkpointing: ActivationCheckpointing | None = None
    communication: Communication = field(default_factory=Communication)
    gradient_clipping: AutoFloat | None = None
    model: ModelShape = field(default_factory=ModelShape)
    passthrough: dict[str, dict[str, Any]] = field(default_factory=dict)
    provenance: dict[str, Location] = field(default_factory=dict, compare=False, repr=False)

    def get(self, dotted: str) -> Any:
        """The value of a field by dotted path ("offload.params.device"); None when a section
        on the way is not set."""
        target: Any = self
        for part in dotted.split("."):
            if target is None:
                return None
            target = getattr(target, part)
        return target

    def set(self, dotted: str, value: Any, where: Location | None = None) -> bool:
        """Set a field by dotted path (see `assign`) and record `where` it was set."""
        if not assign(self, dotted, value):
            return False
        if where is not None:
            self.provenance[dotted] = where
        return True

    def origin(self, dotted: str) -> Location | None:
        """Where `dotted` was set, else where its nearest section was set, else None."""
        probe = dotted
        while probe:
            if probe in self.provenance:
                return self.provenance[probe]
            probe = probe.rpartition(".")[0]
        return None

    def leaves(self) -> Iterator[tuple[str, Any]]:
        """Every set field below the sections, as (dotted path, value), passthrough excluded."""
        yield from _leaves(self, "")

    def unknowns(self) -> list[tuple[str, Unknown]]:
        """Every field whose value is not known statically."""
        return [(dotted, value) for dotted, value in self.leaves() if isinstance(value, Unknown)]


def assign(section: _Section, dotted: str, value: Any) -> bool:
    """Set a field of `section` by dotted path, creating the sections on the way. False (nothing
    changes) when the field's type does not accept the value; a whole number in a float field
    becomes a float. An Unknown is accepted by every field below the sections."""
    *parents, name = dotted.split(".")
    target: Any = section
    for part in parents:
        child = getattr(target, part)
        if child is None:
            child = section_class(type(target), part)()
            setattr(target, part, child)
        target = child
    annotation = field_types(type(target)).get(name)
    if annotation is None:
        raise AttributeError(f"{type(section).__name__} has no field {dotted}")
    if not isinstance(value, Unknown):
        if not accepts(annotation, value) or not _within(type(target), name, value):
            return False
        value = _coerce(annotation, value)
    setattr(target, name, value)
    return True


def _options(annotation: Any) -> tuple:
    return typing.get_args(annotation) if typing.get_origin(annotation) in _UNIONS else (annotation,)


def _coerce(annotation: Any, value: Any) -> Any:
    """An accepted value in the field's own type: a whole number in a float field is a float."""
    if isinstance(value, int) and not isinstance(value, bool) and not accepts(annotation, value, floats=False):
        return float(value)
    if isinstance(value, list):
        item = next((typing.get_args(a)[0] for a in _options(annotation) if typing.get_origin(a) is list), None)
        if item is not None:
            return [_coerce(item, v) for v in value]
    return value


def without_unknowns(plan: Plan) -> Plan:
    """A copy of `plan` in which every Unknown is "not set" (None), also inside free-form
    params: what a writer writes, since no file format can hold "known only at run time"."""
    import copy

    clean = copy.deepcopy(plan)
    for dotted, _ in clean.unknowns():
        *parents, name = dotted.split(".")
        setattr(clean.get(".".join(parents)) if parents else clean, name, None)
    for section in (clean.optimizer, clean.scheduler):
        if section is not None:
            section.params = _drop_unknowns(section.params)
    return clean


def _drop_unknowns(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _drop_unknowns(v) for k, v in value.items() if not isinstance(v, Unknown)}
    if isinstance(value, list):
        return [_drop_unknowns(v) for v in value if not isinstance(v, Unknown)]
    return value


def _leaves(section: _Section, prefix: str) -> Iterator[tuple[str, Any]]:
    for spec in dataclasses.fields(section):  # type: ignore[arg-type]
        if spec.name in ("passthrough", "provenance"):
            continue
        value = getattr(section, spec.name)
        dotted = prefix + spec.name
        if isinstance(value, _Section):
            yield from _leaves(value, dotted + ".")
        elif value not in (None, {}, []):
            yield dotted, value


# --- the field types, for validation and the JSON Schema --------------------------------------


@lru_cache(maxsize=None)
def field_types(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def section_class(cls: type, name: str) -> type:
    """The section class of a (possibly optional) section field (`X | None` -> X)."""
    annotation = field_types(cls)[name]
    for candidate in typing.get_args(annotation) or (annotation,):
        if isinstance(candidate, type) and issubclass(candidate, _Section):
            return candidate
    raise TypeError(f"{cls.__name__}.{name} is not a section")


def _within(cls: type, name: str, value: Any) -> bool:
    minimum = next((f.metadata.get("minimum") for f in dataclasses.fields(cls) if f.name == name), None)
    return minimum is None or not isinstance(value, (int, float)) or value >= minimum


def accepts(annotation: Any, value: Any, *, floats: bool = True) -> bool:
    """Whether a field typed `annotation` can hold `value` (no conversion but int -> float when
    `floats`; a bool is never a number; Literal choices match by type too, so True is not 1)."""
    if annotation is Any:
        return True
    if annotation is type(None):
        return value is None
    origin = typing.get_origin(annotation)
    if origin in _UNIONS:
        return any(accepts(a, value, floats=floats) for a in typing.get_args(annotation))
    if origin is Literal:
        return any(type(value) is type(choice) and value == choice for choice in typing.get_args(annotation))
    if origin is list:
        (item,) = typing.get_args(annotation)
        return isinstance(value, list) and all(accepts(item, v, floats=floats) for v in value)
    if origin is dict:
        return isinstance(value, dict)
    if annotation is bool:
        return isinstance(value, bool)
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if annotation is float:
        if isinstance(value, bool):
            return False
        return isinstance(value, float) or (floats and isinstance(value, int))
    if isinstance(annotation, type):
        return isinstance(value, annotation)
    return False


def plan_json_schema() -> dict:
    """The JSON Schema of the Plan's data (`Plan.to_data()`; kept in schemas/plan.schema.json)."""
    defs: dict[str, Any] = {
        "Unknown": {
            "description": Unknown.__doc__.split("\n\n")[0].strip(),
            "type": "object",
            "additionalProperties": False,
            "required": ["unknown"],
            "properties": {
                "unknown": {"type": "string", "description": "why the value is not known before the job runs"},
                "where": {"$ref": "#/$defs/Location"},
                "alternatives": {"type": "array", "items": {
                    "type": "object", "additionalProperties": False, "required": ["value", "condition"],
                    "properties": {"value": {}, "condition": {"type": "string"}, "where": {"$ref": "#/$defs/Location"}}}},
            },
        },
        "Location": {
            "type": "object", "additionalProperties": False, "required": ["file", "line", "column"],
            "properties": {"file": {"type": "string"}, "line": {"type": "integer"}, "column": {"type": "integer"},
                           "pointer": {"type": ["string", "null"]}},
        },
    }
    schema = _section_schema(Plan, defs)
    schema.pop("title", None)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "https://shardshift.dev/schemas/plan.schema.json", "title": "Plan", **schema,
            "$defs": dict(sorted(defs.items()))}


def _section_schema(cls: type, defs: dict) -> dict:
    properties = {}
    for spec in dataclasses.fields(cls):
        if spec.name == "provenance":
            continue
        schema = _type_schema(field_types(cls)[spec.name], defs)
        if "minimum" in spec.metadata:
            schema = {"anyOf": [dict(s, minimum=spec.metadata["minimum"]) if s.get("type") == "integer" else s
                                for s in schema["anyOf"]]} if "anyOf" in schema else dict(schema, **spec.metadata)
        leaf = not any(isinstance(a, type) and issubclass(a, _Section)
                       for a in (typing.get_args(field_types(cls)[spec.name]) or (field_types(cls)[spec.name],)))
        if leaf and spec.name != "passthrough":
            schema = {"anyOf": [*schema.get("anyOf", [schema]), {"$ref": "#/$defs/Unknown"}]}
        properties[_alias(spec.name)] = schema
    out = {"title": cls.__name__, "type": "object", "additionalProperties": False, "properties": properties}
    if cls.__doc__ and not cls.__doc__.startswith(cls.__name__ + "("):
        out["description"] = " ".join(cls.__doc__.split())
    return out


def _type_schema(annotation: Any, defs: dict) -> dict:
    if annotation is Any:
        return {}
    if annotation is type(None):
        return {"type": "null"}
    origin = typing.get_origin(annotation)
    if origin in _UNIONS:
        options = []
        for arg in typing.get_args(annotation):
            sub = _type_schema(arg, defs)
            options.extend(sub["anyOf"] if set(sub) == {"anyOf"} else [sub])
        return {"anyOf": options}
    if origin is Literal:
        return {"enum": list(typing.get_args(annotation))}
    if origin is list:
        return {"type": "array", "items": _type_schema(typing.get_args(annotation)[0], defs)}
    if origin is dict:
        return {"type": "object", "additionalProperties": _type_schema(typing.get_args(annotation)[1], defs)}
    if isinstance(annotation, type) and issubclass(annotation, _Section):
        if annotation.__name__ not in defs:
            defs[annotation.__name__] = {}  # placeholder against recursion
            defs[annotation.__name__] = _section_schema(annotation, defs)
        return {"$ref": f"#/$defs/{annotation.__name__}"}
    return {"type": {bool: "boolean", int: "integer", float: "number", str: "string"}[annotation]}
