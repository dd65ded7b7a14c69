"""The Plan: one neutral, typed description of a distributed training setup.

Every format reads into a Plan and writes out of one. Fields are optional: None means "the
source did not say" (the framework default applies), which is different from a value equal to
the default. The Hugging Face placeholder `"auto"` is a value a field can hold. Settings with no
neutral meaning are kept per format in `passthrough`, so a same-format round trip loses nothing.
No I/O and no framework imports here.
"""

from __future__ import annotations

from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field

Auto = Literal["auto"]
Dtype = Literal["fp32", "fp16", "bf16", "fp8"]
OffloadDevice = Literal["none", "cpu", "nvme"]

AutoInt = Union[int, Auto]
AutoFloat = Union[float, Auto]
AutoBool = Union[bool, Auto]


class _Section(BaseModel):
    # Strict: a Plan built in code with a misspelled field is a bug, not a silent default.
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    def is_empty(self) -> bool:
        """True when no field was set (every field is None, empty or an empty section)."""
        for name in type(self).model_fields:
            value = getattr(self, name)
            if isinstance(value, _Section):
                if not value.is_empty():
                    return False
            elif value not in (None, {}, []):
                return False
        return True


class World(_Section):
    """How many processes the job runs: nodes × GPUs per node = world size."""

    nodes: int | None = Field(None, ge=1)
    gpus_per_node: int | None = Field(None, ge=1)
    world_size: int | None = Field(None, ge=1)


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


class Sharding(_Section):
    """What is sharded across data-parallel ranks, in ZeRO-stage terms.

    stage 0: nothing; 1: optimizer state; 2: + gradients; 3: + parameters.
    """

    stage: Union[Literal[0, 1, 2, 3], Auto, None] = None
    reshard_after_forward: Union[bool, int, None] = None
    hybrid: bool | None = None
    hybrid_shard_size: int | None = None


class OffloadTarget(_Section):
    """Where one kind of state lives when it is not on the GPU."""

    device: Union[OffloadDevice, Auto, None] = None
    nvme_path: str | None = None
    pin_memory: AutoBool | None = None
    ratio: float | None = None


class Offload(_Section):
    optimizer: OffloadTarget | None = None
    params: OffloadTarget | None = None


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


class Batch(_Section):
    """Batch sizes in samples: global = micro × accumulation × data-parallel size."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, populate_by_name=True)

    micro: AutoInt | None = None
    accumulation: AutoInt | None = None
    global_: AutoInt | None = Field(None, alias="global")
    sequence_length: AutoInt | None = None


class Optimizer(_Section):
    """The optimizer by its framework name, with the common hyper-parameters lifted out."""

    name: str | None = None
    lr: AutoFloat | None = None
    betas: Union[list[AutoFloat], Auto, None] = None
    eps: AutoFloat | None = None
    weight_decay: AutoFloat | None = None
    decoupled_weight_decay: bool | None = None
    params: dict[str, Any] = Field(default_factory=dict)


class Scheduler(_Section):
    """The learning-rate schedule by its framework name; steps count optimizer steps."""

    name: str | None = None
    warmup_steps: AutoInt | None = None
    total_steps: AutoInt | None = None
    min_lr: AutoFloat | None = None
    max_lr: AutoFloat | None = None
    warmup_type: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)


class ActivationCheckpointing(_Section):
    enabled: bool | None = None
    partition_activations: bool | None = None
    cpu_checkpointing: bool | None = None
    contiguous_memory_optimization: bool | None = None
    number_checkpoints: int | None = None
    synchronize_checkpoint_boundary: bool | None = None
    profile: bool | None = None


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


class ModelShape(_Section):
    parameters: int | None = None
    layers: int | None = None
    hidden: int | None = None
    heads: int | None = None
    kv_heads: int | None = None
    vocab: int | None = None


class Plan(_Section):
    """A whole training setup. `passthrough` maps a format name to its settings with no
    neutral meaning, in that format's own nested shape."""

    world: World = Field(default_factory=World)
    parallelism: Parallelism = Field(default_factory=Parallelism)
    sharding: Sharding = Field(default_factory=Sharding)
    offload: Offload = Field(default_factory=Offload)
    precision: Precision = Field(default_factory=Precision)
    batch: Batch = Field(default_factory=Batch)
    optimizer: Optimizer | None = None
    scheduler: Scheduler | None = None
    activation_checkpointing: ActivationCheckpointing | None = None
    communication: Communication = Field(default_factory=Communication)
    gradient_clipping: AutoFloat | None = None
    model: ModelShape = Field(default_factory=ModelShape)
    passthrough: dict[str, dict[str, Any]] = Field(default_factory=dict)


def plan_json_schema() -> dict:
    """The JSON Schema of the Plan (kept in schemas/plan.schema.json)."""
    schema = Plan.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://shardshift.dev/schemas/plan.schema.json"
    return schema
