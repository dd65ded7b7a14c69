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

Plain classes whose fields are declared by annotations (`Section` reads them once per class):
building a Plan costs nothing at start-up, where a pre-commit hook builds one per file, and
unlike dataclasses no code is generated when the module is imported. The field types are
checked by `accepts` and described by `plan_json_schema` from the same annotations. No I/O and
no framework imports here.
"""

from __future__ import annotations

import types
import typing
from functools import lru_cache
from typing import Any, Callable, Iterator, Literal, Union

from shardshift.source import Location

_UNIONS = (Union, types.UnionType)  # Union[X, Y] and X | Y

Auto = Literal["auto"]
Dtype = Literal["fp32", "fp16", "bf16", "fp8"]
OffloadDevice = Literal["none", "cpu", "nvme"]

AutoInt = Union[int, Auto]
AutoFloat = Union[float, Auto]
AutoBool = Union[bool, Auto]


# --- values that are not known before the job runs ------------------------------------------


class _Value:
    """An immutable value object: fields from `__slots__`, compared and hashed by value."""

    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def _values(self) -> tuple:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._values() == self._values()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), self._values()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{n}={getattr(self, n)!r}' for n in self.__slots__)})"

    def __reduce__(self):  # copy and pickle through __init__
        return type(self), self._values()


class Alternative(_Value):
    """One value a branch may give a field, with the condition under which it does."""

    __slots__ = ("value", "condition", "where")
    value: Any
    condition: str
    where: Location | None

    def __init__(self, value: Any, condition: str, where: Location | None = None) -> None:
        for name, item in (("value", value), ("condition", condition), ("where", where)):
            object.__setattr__(self, name, item)


class Unknown(_Value):
    """A value set in the source but not known statically.

    `reason` says why in words a user can act on ("environment variable WORLD_SIZE", "run-time
    argument args.lr", "undecided branch `if args.cpu_offload:` at line 12"); `where` is the place
    that decides it; `alternatives` are the values the branches give, when the reader saw them."""

    __slots__ = ("reason", "where", "alternatives")
    reason: str
    where: Location | None
    alternatives: tuple[Alternative, ...]

    def __init__(self, reason: str, where: Location | None = None, alternatives: tuple[Alternative, ...] = ()) -> None:
        for name, item in (("reason", reason), ("where", where), ("alternatives", tuple(alternatives))):
            object.__setattr__(self, name, item)

    def to_data(self) -> dict:
        out: dict[str, Any] = {"unknown": self.reason}
        if self.where is not None:
            out["where"] = _location_data(self.where)
        if self.alternatives:
            out["alternatives"] = [{"value": to_data(a.value), "condition": a.condition,
                                    **({"where": _location_data(a.where)} if a.where else {})}
                                   for a in self.alternatives]
        return out


def known(value: Any) -> Any:
    """`value` when it is a real value; None when it is not set, "auto" or Unknown. Rules read
    fields through this so that they never judge a placeholder as if it were a value."""
    if value is None or value == "auto" or isinstance(value, Unknown):
        return None
    return value


def _location_data(where: Location) -> dict:
    return {"file": where.file, "line": where.line, "column": where.column, "pointer": where.pointer}


# --- sections ---------------------------------------------------------------------------------


class Default:
    """A field default built anew for each instance (a section, an empty dict)."""

    __slots__ = ("make",)

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make


class Section:
    """Shared behaviour of the Plan and its sections: keyword construction with defaults, value
    equality and repr over the fields their annotations declare (in order)."""

    FIELDS: typing.ClassVar[tuple[str, ...]] = ()
    DEFAULTS: typing.ClassVar[dict[str, Any]] = {}
    MINIMUM: typing.ClassVar[dict[str, int]] = {}  # field -> smallest value accepted by `assign`
    HIDDEN: typing.ClassVar[frozenset[str]] = frozenset()  # fields that are not part of the value

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.FIELDS = tuple(name for name, kind in cls.__dict__.get("__annotations__", {}).items()
                           if not kind.startswith("typing.ClassVar"))
        cls.DEFAULTS = {name: cls.__dict__.get(name) for name in cls.FIELDS}

    def __init__(self, **values: Any) -> None:
        for name in self.FIELDS:
            if name in values:
                setattr(self, name, values.pop(name))
            else:
                default = self.DEFAULTS[name]
                setattr(self, name, default.make() if isinstance(default, Default) else default)
        if values:
            raise TypeError(f"{type(self).__name__} has no field {sorted(values)[0]!r}")

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and all(
            getattr(self, n) == getattr(other, n) for n in self.FIELDS if n not in self.HIDDEN)

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.FIELDS
                          if n not in self.HIDDEN and getattr(self, n) != self.DEFAULTS[n])
        return f"{type(self).__name__}({shown})"

    def is_empty(self) -> bool:
        """True when no field was set (every field is None, empty or an empty section)."""
        for name in self.FIELDS:
            if name in self.HIDDEN:
                continue
            value = getattr(self, name)
            if isinstance(value, Section):
                if not value.is_empty():
                    return False
            elif value not in (None, {}, []):
                return False
        return True

    def to_data(self) -> dict:
        """Plain JSON-able data keyed as in the Plan's JSON Schema (`global` for `global_`)."""
        return {_alias(name): to_data(getattr(self, name)) for name in self.FIELDS if name not in self.HIDDEN}


def to_data(value: Any) -> Any:
    if isinstance(value, (Section, Unknown)):
        return value.to_data()
    if isinstance(value, dict):
        return {k: to_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_data(v) for v in value]
    return value


def _alias(name: str) -> str:
    return "global" if name == "global_" else name


class World(Section):
    """How many processes the job runs: nodes × GPUs per node = world size."""

    MINIMUM = {"nodes": 1, "gpus_per_node": 1, "world_size": 1}
    nodes: int | None = None
    gpus_per_node: int | None = None
    world_size: int | None = None


class Parallelism(Section):
    """The degrees of the five parallel axes. data_parallel = replicate × shard."""

    data_parallel_replicate: AutoInt | None = None
    data_parallel_shard: AutoInt | None = None
    tensor: AutoInt | None = None
    pipeline: AutoInt | None = None
    virtual_pipeline: int | None = None
    context: AutoInt | None = None
    sequence_parallel: bool | None = None
    expert: AutoInt | None = None


class Sharding(Section):
    """What is sharded across data-parallel ranks, in ZeRO-stage terms.

    stage 0: nothing; 1: optimizer state; 2: + gradients; 3: + parameters.
    """

    stage: Union[Literal[0, 1, 2, 3], Auto, None] = None
    reshard_after_forward: Union[bool, int, None] = None
    hybrid: bool | None = None
    hybrid_shard_size: int | None = None


class OffloadTarget(Section):
    """Where one kind of state lives when it is not on the GPU."""

    device: Union[OffloadDevice, Auto, None] = None
    nvme_path: str | None = None
    pin_memory: AutoBool | None = None
    ratio: float | None = None


class Offload(Section):
    optimizer: OffloadTarget | None = None
    params: OffloadTarget | None = None


class Precision(Section):
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


class Batch(Section):
    """Batch sizes in samples: global = micro × accumulation × data-parallel size."""

    micro: AutoInt | None = None
    accumulation: AutoInt | None = None
    global_: AutoInt | None = None
    sequence_length: AutoInt | None = None


class Optimizer(Section):
    """The optimizer by its framework name, with the common hyper-parameters lifted out."""

    name: str | None = None
    lr: AutoFloat | None = None
    betas: Union[list[AutoFloat], Auto, None] = None
    eps: AutoFloat | None = None
    weight_decay: AutoFloat | None = None
    decoupled_weight_decay: bool | None = None
    params: dict[str, Any] = Default(dict)


class Scheduler(Section):
    """The learning-rate schedule by its framework name; steps count optimizer steps."""

    name: str | None = None
    warmup_steps: AutoInt | None = None
    total_steps: AutoInt | None = None
    min_lr: AutoFloat | None = None
    max_lr: AutoFloat | None = None
    warmup_type: str | None = None
    params: dict[str, Any] = Default(dict)


class ActivationCheckpointing(Section):
    enabled: bool | None = None
    partition_activations: bool | None = None
    cpu_checkpointing: bool | None = None
    contiguous_memory_optimization: bool | None = None
    number_checkpoints: int | None = None
    synchronize_checkpoint_boundary: bool | None = None
    profile: bool | None = None


class Communication(Section):
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


class ModelShape(Section):
    parameters: int | None = None
    layers: int | None = None
    hidden: int | None = None
    heads: int | None = None
    kv_heads: int | None = None
    vocab: int | None = None


class Plan(Section):
    """A whole training setup. `passthrough` maps a format name to its settings with no
    neutral meaning, in that format's own nested shape. `provenance` maps a dotted field
    ("batch.micro") to where it was set; it is not part of the Plan's value (two Plans with the
    same settings read from different files are equal). `parts` maps a field set from several
    settings (betas from beta1 and beta2) to the places of the others, so that a report can say
    where each of them went."""

    HIDDEN = frozenset({"provenance", "parts"})
    world: World = Default(World)
    parallelism: Parallelism = Default(Parallelism)
    sharding: Sharding = Default(Sharding)
    offload: Offload = Default(Offload)
    precision: Precision = Default(Precision)
    batch: Batch = Default(Batch)
    optimizer: Optimizer | None = None
    scheduler: Scheduler | None = None
    activation_checkpointing: ActivationCheckpointing | None = None
    communication: Communication = Default(Communication)
    gradient_clipping: AutoFloat | None = None
    model: ModelShape = Default(ModelShape)
    passthrough: dict[str, dict[str, Any]] = Default(dict)
    provenance: dict[str, Location] = Default(dict)
    parts: dict[str, list[Location]] = Default(dict)

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


def assign(section: Section, dotted: str, value: Any) -> bool:
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
        if not _accepted(type(target), name, value) or not _within(type(target), name, value):
            return False
        if isinstance(value, (int, list)):
            value = _coerce(annotation, value)
    setattr(target, name, value)
    return True


# Numbers are checked for range before any conversion: a whole number past the float range cannot
# become a float at all (json.load keeps `1` followed by 400 digits as an int), so a float field
# does not take it.
FLOAT_LIMIT = 2**1023
_SIMPLE = {bool: lambda v: isinstance(v, bool), str: lambda v: isinstance(v, str),
           int: lambda v: isinstance(v, int) and not isinstance(v, bool),
           float: lambda v: isinstance(v, float) or (isinstance(v, int) and not isinstance(v, bool)
                                                     and -FLOAT_LIMIT < v < FLOAT_LIMIT)}


@lru_cache(maxsize=None)
def _checker(cls: type, name: str) -> Callable[[Any], bool]:
    """`accepts` for one field, specialised once: a plain type (or plain type | None, | "auto")
    is a few isinstance tests; anything else goes through `accepts`."""
    annotation = field_types(cls)[name]
    options = _options(annotation)
    plain = [o for o in options if o in _SIMPLE]
    extra = [o for o in options if o not in _SIMPLE]
    if all(o is type(None) or (typing.get_origin(o) is Literal and typing.get_args(o) == ("auto",)) for o in extra):
        tests = tuple(_SIMPLE[o] for o in plain)
        allow_none = type(None) in extra
        allow_auto = len(extra) > (1 if allow_none else 0)
        return lambda v: (v is None and allow_none) or (allow_auto and v == "auto" and isinstance(v, str)) or \
            any(test(v) for test in tests)
    return lambda v: accepts(annotation, v)


def _accepted(cls: type, name: str, value: Any) -> bool:
    return _checker(cls, name)(value)


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


def _leaves(section: Section, prefix: str) -> Iterator[tuple[str, Any]]:
    for name in section.FIELDS:
        if name in ("passthrough", "provenance", "parts"):
            continue
        value = getattr(section, name)
        dotted = prefix + name
        if isinstance(value, Section):
            yield from _leaves(value, dotted + ".")
        elif value not in (None, {}, []):
            yield dotted, value


# --- the field types, for validation and the JSON Schema --------------------------------------


@lru_cache(maxsize=None)
def field_types(cls: type) -> dict[str, Any]:
    """The annotation of each field of a section class, evaluated."""
    hints = typing.get_type_hints(cls)
    return {name: hints[name] for name in cls.FIELDS}


def section_class(cls: type, name: str) -> type:
    """The section class of a (possibly optional) section field (`X | None` -> X)."""
    annotation = field_types(cls)[name]
    for candidate in typing.get_args(annotation) or (annotation,):
        if isinstance(candidate, type) and issubclass(candidate, Section):
            return candidate
    raise TypeError(f"{cls.__name__}.{name} is not a section")


def _within(cls: type, name: str, value: Any) -> bool:
    minimum = cls.MINIMUM.get(name)
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
        key, item = typing.get_args(annotation)
        return isinstance(value, dict) and all(accepts(key, k, floats=floats) and accepts(item, v, floats=floats)
                                               for k, v in value.items())
    if annotation is bool:
        return isinstance(value, bool)
    if annotation is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if annotation is float:
        if isinstance(value, bool):
            return False
        return isinstance(value, float) or (floats and isinstance(value, int) and -FLOAT_LIMIT < value < FLOAT_LIMIT)
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
    for name in cls.FIELDS:
        if name in cls.HIDDEN:
            continue
        schema = _type_schema(field_types(cls)[name], defs)
        if name in cls.MINIMUM:
            minimum = cls.MINIMUM[name]
            schema = {"anyOf": [dict(s, minimum=minimum) if s.get("type") == "integer" else s
                                for s in schema["anyOf"]]} if "anyOf" in schema else dict(schema, minimum=minimum)
        leaf = not any(isinstance(a, type) and issubclass(a, Section)
                       for a in (typing.get_args(field_types(cls)[name]) or (field_types(cls)[name],)))
        if leaf and name != "passthrough":
            schema = {"anyOf": [*schema.get("anyOf", [schema]), {"$ref": "#/$defs/Unknown"}]}
        properties[_alias(name)] = schema
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
    if isinstance(annotation, type) and issubclass(annotation, Section):
        if annotation.__name__ not in defs:
            defs[annotation.__name__] = {}  # placeholder against recursion
            defs[annotation.__name__] = _section_schema(annotation, defs)
        return {"$ref": f"#/$defs/{annotation.__name__}"}
    return {"type": {bool: "boolean", int: "integer", float: "number", str: "string"}[annotation]}
