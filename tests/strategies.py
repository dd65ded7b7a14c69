"""Hypothesis strategies: valid Plans that a ds_config can express, JSON values, and nasty texts.

`deepspeed_plans()` covers every Plan field the DeepSpeed writer has a key for. It is restricted
to what ds_config can express exactly, and says why at each restriction:

- Plan fields with no ds_config key are never set: world.*, parallelism.data_parallel_*,
  pipeline, virtual_pipeline, sequence_parallel, sharding.reshard_after_forward / hybrid /
  hybrid_shard_size, offload.params.ratio, precision.compute_dtype / reduce_dtype / fp8,
  batch.sequence_length, activation_checkpointing.enabled, optimizer/scheduler fields other
  than the ones lifted for their type, model.* except vocab.
- precision.param_dtype is fp16, bf16 or fp32: ds_config has no spelling for "fp8", and an
  `"enabled": "auto"` flag is kept in the passthrough rather than lifted, so "auto" is not a
  param_dtype the writer can express.
- Dtype fields written to ds_config enums (communication.dtype, precision.grad_accum_dtype)
  take the enum's values (no "fp8").
- Floats are finite: JSON has no spelling for NaN or infinity (the reader reports 1e400 as
  unparseable, as DeepSpeed's hjson loader fails on it).
- A float Plan field whose ds_config key DeepSpeed types as int (fp16.min_loss_scale) gets whole
  numbers: a fraction stays in the passthrough as written, so it cannot round-trip as a field.
- A section whose every field is None is None (an empty section writes no key, and the reader
  gives None for a missing one).
- optimizer.decoupled_weight_decay is derived the way DeepSpeed decides it (AdamW always; Adam
  unless `adam_w_mode` is false); the reader computes it, no key carries it.
- Params of the optimizer/scheduler never use the names lifted into Plan fields (the writer
  would overwrite them), and the passthrough holds only keys the reader does not lift: unknown
  keys and known keys without a Plan field.
"""

from __future__ import annotations

import json
import math

from hypothesis import strategies as st

from shardshift.formats.deepspeed import OPTIMIZER_FIELDS, SCHEDULER_FIELDS, SIMPLE_KEYS
from shardshift.formats.deepspeed.keys import KEYS, key_index
from shardshift.plan import (
    ActivationCheckpointing,
    Batch,
    Communication,
    ModelShape,
    Offload,
    OffloadTarget,
    Optimizer,
    Parallelism,
    Plan,
    Precision,
    Scheduler,
    Sharding,
)
from shardshift.source import split_pointer

AUTO = st.just("auto")
# UTF-8 files cannot hold lone surrogates; everything else (controls, RTL, emoji, NUL) is fair.
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
KEY_TEXT = st.one_of(TEXT, st.sampled_from(["auto", "type", "params", "enabled", "stage", "", "a/b", "~0", "é"]))
FINITE = st.floats(allow_nan=False, allow_infinity=False)
INTS = st.integers(min_value=-(2**63), max_value=2**70)
POSITIVE = st.integers(min_value=1, max_value=2**40)
BOOLS = st.booleans()


def optional(strategy: st.SearchStrategy) -> st.SearchStrategy:
    return st.none() | strategy


ROWS_BY_FIELD = {k.field: k for k in SIMPLE_KEYS}


def number_for(field: str) -> st.SearchStrategy:
    """Values for a float Plan field: whole numbers when DeepSpeed types its key as int (a ds_config
    cannot express fp16.min_loss_scale 0.5: DeepSpeed rejects it and the reader keeps it as written)."""
    if ROWS_BY_FIELD[field].type == "int":
        return st.integers(min_value=-(2**53), max_value=2**53).map(float)
    return FINITE


JSON_SCALARS = st.none() | BOOLS | INTS | FINITE | TEXT | AUTO
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(KEY_TEXT, children, max_size=4),
    max_leaves=8,
)
FLOAT_OR_AUTO = FINITE | AUTO
INT_OR_AUTO = INTS | AUTO
DS_DTYPES = st.sampled_from(["fp32", "fp16", "bf16"])

# Strategies are built once, at import: building them per draw costs hypothesis most of its time.


def section(cls, fields: dict, optional_section: bool = False) -> st.SearchStrategy:
    """`cls` with a drawn subset of `fields` set. An optional section with no field set is None
    (an empty section writes no key, and the reader gives None for a missing one)."""
    names = st.lists(st.sampled_from(sorted(fields)), unique=True, max_size=len(fields))

    @st.composite
    def build(draw):
        chosen = draw(names)
        if not chosen and optional_section:
            return None
        return cls(**{name: draw(fields[name]) for name in chosen})

    return build()


OFFLOAD_FIELDS = {"device": st.sampled_from(["none", "cpu", "nvme", "auto"]),
                  "nvme_path": TEXT | st.just("/local_nvme"), "pin_memory": BOOLS | AUTO}
# offload_param has no ratio key: only the optimizer target gets one.
OPTIMIZER_OFFLOAD = section(OffloadTarget, {**OFFLOAD_FIELDS, "ratio": st.floats(min_value=0, max_value=1)}, True)
PARAM_OFFLOAD = section(OffloadTarget, OFFLOAD_FIELDS, True)


def _decoupled(name: str | None, params: dict) -> bool | None:
    """DeepSpeed: AdamW decouples weight decay; Adam does unless `adam_w_mode` is false."""
    if not name or name.lower() not in ("adam", "adamw"):
        return None
    mode = params.get("adam_w_mode", True)
    if not isinstance(mode, bool):
        return None
    return name.lower() == "adamw" or mode


OPTIMIZER_NAMES = optional(st.sampled_from(["Adam", "AdamW", "adam", "adamw", "Lamb", "OneBitAdam", "Lion", "SGD",
                                            "Adagrad", "MuAdamW"]) | TEXT)
OPTIMIZER_PARAMS = st.dictionaries(KEY_TEXT.filter(lambda k: k not in OPTIMIZER_FIELDS), JSON_VALUES, max_size=3)
OPTIMIZER_LIFTED = {"lr": FLOAT_OR_AUTO, "betas": AUTO | st.lists(FLOAT_OR_AUTO, max_size=3), "eps": FLOAT_OR_AUTO,
                    "weight_decay": FLOAT_OR_AUTO}
OPTIMIZER_FIELD_SETS = st.lists(st.sampled_from(sorted(OPTIMIZER_LIFTED)), unique=True)


@st.composite
def optimizers(draw) -> Optimizer | None:
    if draw(BOOLS):
        return None
    name = draw(OPTIMIZER_NAMES)
    params = draw(OPTIMIZER_PARAMS)
    if draw(BOOLS):
        params["adam_w_mode"] = draw(BOOLS)
    lifted = {field: draw(OPTIMIZER_LIFTED[field]) for field in draw(OPTIMIZER_FIELD_SETS)}
    return Optimizer(name=name, decoupled_weight_decay=_decoupled(name, params), params=params, **lifted)


SCHEDULER_VALUES = {
    "min_lr": FLOAT_OR_AUTO, "max_lr": FLOAT_OR_AUTO, "warmup_steps": INT_OR_AUTO, "total_steps": INT_OR_AUTO,
    "warmup_type": st.sampled_from(["log", "linear"]) | TEXT,
}
SCHEDULER_NAMES = optional(st.sampled_from([*SCHEDULER_FIELDS, "StepLR", "CosineAnnealingLR"]) | TEXT)
# Per scheduler type: its lifted fields (the others have no param to go to), and params that
# avoid the names lifted for that type.
SCHEDULER_SHAPES = {
    name: (st.lists(st.sampled_from(sorted(set(mapping.values()))), unique=True) if mapping else st.just([]),
           st.dictionaries(KEY_TEXT.filter(lambda k, m=mapping: k not in m), JSON_VALUES, max_size=3))
    for name, mapping in [*SCHEDULER_FIELDS.items(), ("", {})]
}


@st.composite
def schedulers(draw) -> Scheduler | None:
    if draw(BOOLS):
        return None
    name = draw(SCHEDULER_NAMES)
    fields, params = SCHEDULER_SHAPES[name if name in SCHEDULER_FIELDS else ""]
    lifted = {target: draw(SCHEDULER_VALUES[target]) for target in draw(fields)}
    return Scheduler(name=name, params=draw(params), **lifted)


def _passthrough_rows() -> list:
    """Known keys the reader never lifts: leaves without a Plan field, outside the blocks the reader
    interprets as a whole (optimizer, scheduler) and the precision flags."""
    return [
        k for k in KEYS
        if k.field is None and k.type != "object" and not (k.renamed_to or k.foreign or k.removed)
        and "*" not in k.path and not k.path.startswith(("/optimizer", "/scheduler"))
        and k.path not in ("/fp16/enabled", "/bf16/enabled")
    ]


VALUE_BY_TYPE = {
    "bool": BOOLS, "int": INTS, "number": FINITE, "str": TEXT, "array": st.lists(JSON_SCALARS, max_size=3),
    "any": JSON_VALUES,
}
PASSTHROUGH_SETTINGS = st.lists(
    st.one_of(*(st.tuples(st.just(row.path), st.sampled_from(list(row.choices or ())) if row.type == "enum"
                          else VALUE_BY_TYPE[row.type]) for row in _passthrough_rows())),
    max_size=4, unique_by=lambda pair: pair[0])
UNKNOWN_KEYS = st.tuples(
    st.sampled_from(["", "/zero_optimization", "/fp16", "/bf16", "/activation_checkpointing", "/tensor_parallel",
                     "/zero_optimization/offload_optimizer"]),
    KEY_TEXT, JSON_VALUES)


@st.composite
def passthroughs(draw) -> dict:
    """{"deepspeed": {...}} with unknown keys and known keys that have no Plan field, or {}."""
    out: dict = {}
    for path, value in draw(PASSTHROUGH_SETTINGS):
        _put(out, split_pointer(path), value)
    index = key_index()
    for parent, name, value in draw(st.lists(UNKNOWN_KEYS, max_size=3)):
        pointer = parent + "/" + name.replace("~", "~0").replace("/", "~1")
        if pointer not in index:  # a known key could be lifted by the reader
            _put(out, split_pointer(pointer), value)
    return {"deepspeed": out} if out else {}


def _put(data: dict, tokens: list[str], value) -> None:
    for token in tokens[:-1]:
        if not isinstance(data.get(token), dict):
            data[token] = {}
        data = data[token]
    data[tokens[-1]] = value


BATCHES = section(Batch, {"micro": POSITIVE | AUTO, "accumulation": POSITIVE | AUTO, "global_": POSITIVE | AUTO})
SHARDINGS = section(Sharding, {"stage": st.sampled_from([0, 1, 2, 3, "auto"])})
PRECISIONS = section(Precision, {
    "param_dtype": DS_DTYPES, "grad_accum_dtype": DS_DTYPES, "loss_scale": number_for("precision.loss_scale") | AUTO,
    "initial_scale_power": INTS, "loss_scale_window": INTS, "hysteresis": INTS, "consecutive_hysteresis": BOOLS,
    "min_loss_scale": number_for("precision.min_loss_scale"),
})
PARALLELISMS = section(Parallelism, {"context": INT_OR_AUTO, "tensor": INT_OR_AUTO, "expert": INT_OR_AUTO})
COMMUNICATIONS = section(Communication, {
    "overlap": BOOLS, "reduce_bucket_elements": INT_OR_AUTO, "allgather_bucket_elements": INT_OR_AUTO,
    "prefetch_bucket_elements": INT_OR_AUTO, "param_persistence_threshold": INT_OR_AUTO, "dtype": DS_DTYPES | AUTO,
    "contiguous_gradients": BOOLS, "reduce_scatter": BOOLS, "allgather_partitions": BOOLS,
})
CHECKPOINTINGS = section(ActivationCheckpointing, {
    "partition_activations": BOOLS, "cpu_checkpointing": BOOLS, "contiguous_memory_optimization": BOOLS,
    "number_checkpoints": INTS, "synchronize_checkpoint_boundary": BOOLS, "profile": BOOLS,
}, optional_section=True)
MODELS = section(ModelShape, {"vocab": INTS})
CLIPPINGS = optional(number_for("gradient_clipping") | AUTO)
OPTIMIZERS = optimizers()
SCHEDULERS = schedulers()
PASSTHROUGHS = passthroughs()


@st.composite
def deepspeed_plans(draw) -> Plan:
    """A valid Plan built only from what ds_config can express (see the module docstring)."""
    return Plan(
        batch=draw(BATCHES), sharding=draw(SHARDINGS),
        offload=Offload(optimizer=draw(OPTIMIZER_OFFLOAD), params=draw(PARAM_OFFLOAD)),
        precision=draw(PRECISIONS), parallelism=draw(PARALLELISMS), communication=draw(COMMUNICATIONS),
        activation_checkpointing=draw(CHECKPOINTINGS), optimizer=draw(OPTIMIZERS), scheduler=draw(SCHEDULERS),
        gradient_clipping=draw(CLIPPINGS), model=draw(MODELS), passthrough=draw(PASSTHROUGHS),
    )


# --- nasty inputs for the fuzz tests -----------------------------------------------------

NASTY_TOKENS = ['"5e8"', "5e8", "1e400", "-1e400", "1" + "0" * 30, "NaN", "Infinity", "-0", "0.0", "1e-400",
                "true", "null", '"auto"', '"\\ud800"', '"\\u0000"', '"\\uZZZZ"', "{}", "[]", '"é\u202e"', "1" * 5000]
ODD_TEXT = ["\ufeff", "\u202e", "\u0000", "\t", "\r\n", "\r", "//", "/*", "*/", "#", ",", ",,", "{", "}", "[", "]",
            ":", '"', "\\", "\U0001f600", "\u00a0", "\u2028"]


def _swap_type(value):
    """A value of another JSON type with a related meaning (the typos real configs have)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return json.dumps(value) if math.isfinite(value) else "1e400"
    if isinstance(value, str):
        return {"true": True, "false": False}.get(value.lower(), [value])
    if isinstance(value, list):
        return {"0": value}
    if isinstance(value, dict):
        return list(value.values())
    return 0


@st.composite
def mutated_documents(draw, seeds: list[str]) -> str:
    """A seed document (fixture or corpus text) after one to three mutations."""
    text = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(1, 3))):
        # Weighted towards mutations that keep the text parseable, so the rules see the result.
        mutation = draw(st.sampled_from(["swap", "swap", "swap", "token", "token", "duplicate", "nest", "bom",
                                         "delete", "insert", "truncate"]))
        text = MUTATIONS[mutation](draw, text)
    return text


def _position(draw, text: str) -> int:
    return draw(st.integers(0, len(text)))


def _delete(draw, text):
    i = _position(draw, text)
    return text[:i] + text[i + 1:]


def _insert(draw, text):
    i = _position(draw, text)
    return text[:i] + draw(st.sampled_from(ODD_TEXT) | TEXT) + text[i:]


def _token(draw, text):
    """Replace a value after some colon with a nasty token."""
    colons = [i for i, c in enumerate(text) if c == ":"]
    if not colons:
        return text + draw(st.sampled_from(NASTY_TOKENS))
    i = draw(st.sampled_from(colons)) + 1
    end = i
    while end < len(text) and text[end] not in ",}\n":
        end += 1
    return text[:i] + " " + draw(st.sampled_from(NASTY_TOKENS)) + text[end:]


def _swap(draw, text):
    """Parse, change the type of one value, dump again (comments are lost, which is fine)."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # not plain JSON, or nested deeper than json.loads goes
        return text
    leaves = list(_leaves(data, ()))
    if not leaves:
        return text
    path = draw(st.sampled_from(leaves))
    _replace(data, path, _swap_type(_at(data, path)))
    try:
        return json.dumps(data, indent=draw(st.sampled_from([None, 2])), ensure_ascii=draw(st.booleans()))
    except RecursionError:
        return text


def _nest(draw, text):
    depth = draw(st.sampled_from([10, 60, 120, 400, 2000]))
    inner = "{" * depth + '"a": 1' + "}" * depth if draw(st.booleans()) else "[" * depth + "]" * depth
    return _insert_member(text, f'"zero_optimization": {inner}')


def _duplicate(draw, text):
    key = draw(st.sampled_from(["train_batch_size", "zero_optimization", "fp16", "gradient_clipping"]))
    value = draw(st.sampled_from(NASTY_TOKENS))
    return _insert_member(_insert_member(text, f'"{key}": {value}'), f'"{key}": {value}')


def _bom(draw, text):
    return "\ufeff" + text


def _truncate(draw, text):
    return text[:_position(draw, text)]


def _insert_member(text: str, member: str) -> str:
    brace = text.find("{")
    if brace < 0:
        return "{" + member + "}"
    return text[:brace + 1] + member + "," + text[brace + 1:]


def _leaves(data, path):
    if isinstance(data, dict) and data:
        for key, value in data.items():
            yield from _leaves(value, (*path, key))
    elif isinstance(data, list) and data:
        for index, value in enumerate(data):
            yield from _leaves(value, (*path, index))
    elif path:
        yield path


def _at(data, path):
    for part in path:
        data = data[part]
    return data


def _replace(data, path, value):
    _at(data, path[:-1])[path[-1]] = value


MUTATIONS = {"delete": _delete, "insert": _insert, "token": _token, "swap": _swap, "nest": _nest,
             "duplicate": _duplicate, "bom": _bom, "truncate": _truncate}
