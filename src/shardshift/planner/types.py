"""The planner's shared value types. Sizes are bytes, bandwidths bytes per second, times seconds."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Recompute = Literal["none", "selective", "full"]


@dataclass(frozen=True, slots=True)
class Figure:
    """A number with the assumption (or formula and source) it rests on."""

    value: float
    assumption: str


@dataclass(slots=True)
class Model:
    """The model's shape. `parameters` is the total count; the rest may be None when only the
    count is known (then only model-state memory is estimated, and activations say why not)."""

    parameters: int
    layers: int | None = None
    hidden: int | None = None
    heads: int | None = None
    kv_heads: int | None = None
    ffn_hidden: int | None = None
    vocab: int | None = None
    experts: int | None = None  # routed experts per MoE layer (None: dense)
    experts_per_token: int | None = None
    tied_embeddings: bool | None = None
    largest_layer_parameters: int | None = None  # ZeRO-3's largest gathered layer (DeepSpeed's estimator)
    expert_parameters: int | None = None  # the routed experts' share of `parameters` (split by EP)
    gated_mlp: bool | None = None  # SwiGLU-style MLP (gate and up projections): more MLP activations
    source: str = ""  # where the shape came from: "--model-params", "config.json path", "the Plan"
    assumptions: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Machine:
    nodes: int
    gpus_per_node: int
    gpu_memory: int | None = None  # bytes per GPU; None: fit is not judged
    bandwidth: float | None = None  # inter-node, bytes/s per GPU
    intra_node_bandwidth: float | None = None  # bytes/s per GPU (NVLink)
    assumptions: list[str] = field(default_factory=list)

    @property
    def world_size(self) -> int:
        return self.nodes * self.gpus_per_node


@dataclass(slots=True)
class Layout:
    """Every setting of the setup the estimates use, resolved: a value the Plan does not give is
    the framework's default, named in `assumptions`."""

    world_size: int
    data_parallel_replicate: int = 1  # hybrid sharding: replicas across shard groups
    data_parallel_shard: int = 1  # ranks one copy is sharded over (ZeRO / FSDP group)
    tensor: int = 1
    pipeline: int = 1
    virtual_pipeline: int | None = None
    context: int = 1
    expert: int = 1
    sequence_parallel: bool = False
    stage: int = 0  # ZeRO stage (FSDP2 full shard = 3, reshard_after_forward=False = 2)
    distributed_optimizer: bool = False  # Megatron's --use-distributed-optimizer
    offload_optimizer: Literal["none", "cpu", "nvme"] = "none"
    offload_params: Literal["none", "cpu", "nvme"] = "none"
    param_bytes: int = 2  # bytes per parameter as computed (bf16/fp16 2, fp32 4)
    grad_bytes: int = 2
    master_weights: bool = True  # an fp32 copy beside 16-bit parameters
    optimizer_state_bytes: int = 8  # per parameter: Adam's two fp32 moments
    micro_batch: int = 1
    accumulation: int = 1
    sequence_length: int | None = None
    recompute: Recompute = "none"
    fixed_buffers: dict[str, Figure] = field(default_factory=dict)  # buckets, prefetch, persistence
    framework: str = ""  # deepspeed, fsdp2, megatron, accelerate, axolotl, torchtitan
    assumptions: list[str] = field(default_factory=list)
    nodes: int = 1
    gpus_per_node: int = 1
    compute_bytes: int = 2  # bytes per element of gathered / computed parameters and activations
    master_bytes: int = 4  # bytes per parameter of the master copy (when master_weights)
    fp32_grad_copy: bool = False  # an fp32 gradient partition beside 16-bit gradients (DeepSpeed's ZeRO)
    zero_init: bool = True  # ZeRO-3 parameters partitioned at construction (deepspeed.zero.Init)
    additional_buffer_factor: float = 1.5  # DeepSpeed's estimator margin on CPU memory
    flash_attention: bool = True  # attention scores are not stored (no s^2 term in activations)
    gated_mlp: bool = False  # SwiGLU-style MLP (activations: two ffn-wide inputs)
    num_microbatches: int | None = None  # per optimizer step per pipeline (accumulation steps)
    engine: str = ""  # the accounting used: deepspeed, megatron, fsdp2 (also torchtitan, Accelerate FSDP), ddp
    # parameter-efficient fine-tuning (Axolotl `adapter: lora|qlora`): only the adapter is trained
    adapter: str | None = None  # "lora", "qlora"; None: every parameter is trained
    adapter_rank: int | None = None
    adapter_targets: tuple[str, ...] = ()  # module names (q_proj, ...), or ("all-linear",)
    base_weight_bytes: float | None = None  # frozen base weights, bytes/parameter (4-bit 0.5, 8-bit 1)
    recompute_method: str | None = None  # full recomputation: Megatron's "uniform" / "block"; None: every layer
    recompute_layers: int | None = None  # Megatron's --recompute-num-layers (N)
    offload_fraction: float = 1.0  # share of the optimizer state offloaded (Megatron --optimizer-offload-fraction, DeepSpeed ratio)
    secondary_partition: int = 1  # DeepSpeed ZeRO++ hpZ: a second 16-bit parameter copy sharded over this many ranks
    # bytes per gradient element as reduced on the wire (DeepSpeed communication_data_type, FSDP2
    # reduce_dtype, Megatron --accumulate-allreduce-grads-in-fp32 / --grad-reduce-in-bf16);
    # None: the engine's default (planner/communication.py says which and why)
    grad_reduce_bytes: int | None = None
    # gradient reduction under accumulation: "every-micro-batch" or "last-micro-batch" (DDP no_sync,
    # FSDP2 set_requires_gradient_sync(False), Accelerate's accumulate); None: the engine's default
    gradient_sync: str | None = None

    @property
    def data_parallel(self) -> int:
        return self.data_parallel_replicate * self.data_parallel_shard


@dataclass(slots=True)
class MemoryEstimate:
    parts: dict[str, Figure]  # parameters, gradients, optimizer_states, master_weights, activations, buffers...
    per_gpu_bytes: float
    fits: bool | None  # None when the GPU memory is not known
    largest_micro_batch: int | None
    assumptions: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Traffic:
    """Communication on one axis per optimizer step, for one GPU."""

    axis: str  # data-parallel, hybrid-cross-node, tensor, pipeline, context, expert
    bytes: float
    seconds: float | None  # None when the bandwidth is not known
    assumption: str


@dataclass(slots=True)
class Recommendation:
    choice: str  # ddp, fsdp2-full-shard, fsdp2-hybrid, 3d (tensor/pipeline + sharded data parallel), ...
    why: str
    smallest_change: str | None  # to this setup, so that it fits; None when it fits already
    assumptions: list[str] = field(default_factory=list)
