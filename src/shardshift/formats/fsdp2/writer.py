"""FSDP2 writer: a Plan -> one self-contained Python module a user drops next to their script.

The module's public surface is a contract (it only grows): `setup(model, blocks=None)` shards
`model` in place and returns an `Engine` with `.model`, `.optimizer`, `.scheduler`,
`.backward(loss)` and `.step()` that behave like DeepSpeed's engine for the same config; the
module also exposes `build_mesh()`, `find_blocks(model)`, `build_optimizer(params)` and
`build_scheduler(optimizer)`. The emitted code imports only torch (>= 2.6).

Two steps: `settings_from_plan` (fsdp2_settings.py) turns a resolved Plan into `Fsdp2Settings`, and
`render` prints them. The migration report for a ds_config explains DeepSpeed's keys against the
settings (formats/deepspeed/fsdp2_explained.py).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from shardshift.fsdp2_settings import (  # noqa: F401 - the settings' names, imported from here by tests
    AUTO,
    DEEPSPEED_ONLY_OPTIMIZER_PARAMS,
    DEEPSPEED_SCHEDULERS,
    REQUIRED,
    SCHEDULE_FUNCTIONS,
    TORCH_DTYPES,
    TORCH_OPTIMIZER_ARGUMENTS,
    TORCH_OPTIMIZER_DEFAULTS,
    Fsdp2Settings,
    _number,
    settings_from_plan,
)

if TYPE_CHECKING:
    from shardshift.plan import Plan

def literal(value: Any) -> str:
    """Python source for a plain value (floats round-trip exactly)."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, float):
        if math.isinf(value):
            return "math.inf" if value > 0 else "-math.inf"
        return repr(value)
    if isinstance(value, int):
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, tuple):
        inner = ", ".join(literal(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{literal(k)}: {literal(v)}" for k, v in value.items()) + "}"
    return repr(value)


def _dtype(value: str) -> str:
    return TORCH_DTYPES.get(value, literal(value))


def _dict_block(name: str, values: dict[str, Any]) -> str:
    if not values:
        return f"{name} = {{}}\n"
    lines = [f"{name} = {{"] + [f"    {literal(k)}: {literal(v)}," for k, v in values.items()] + ["}"]
    return "\n".join(lines) + "\n"


def torchrun_line(s: Fsdp2Settings) -> str:
    if s.nodes and s.nodes > 1:
        per_node = s.gpus_per_node or (s.world_size // s.nodes if s.world_size else "<GPUs per node>")
        return (f"torchrun --nnodes={s.nodes} --nproc-per-node={per_node} --rdzv-backend=c10d "
                "--rdzv-endpoint=$HEAD_NODE:29500 train.py")
    per_node = s.gpus_per_node or s.world_size or "<GPUs per node>"
    return f"torchrun --nnodes=1 --nproc-per-node={per_node} train.py"


def _stage_comment(s: Fsdp2Settings) -> str:
    raf = s.reshard_after_forward
    if raf == AUTO:
        return 'ZeRO stage "auto": True for ZeRO-3, False for ZeRO-2'
    if isinstance(raf, int) and not isinstance(raf, bool):
        return f"ZeRO-3 with hpZ: after forward, keep parameters gathered in groups of {raf} ranks"
    if raf:
        return "ZeRO-3: free the gathered parameters after forward, gather again in backward"
    if s.stage in (0, 1):
        return f"no FSDP2 equivalent of ZeRO-{s.stage}; shards like ZeRO-2 (same math, less memory)"
    return "ZeRO-2: keep the gathered parameters from forward to backward"


def render(s: Fsdp2Settings) -> str:
    """The Python module for `s`."""
    from shardshift import __version__

    parts = [_header(s, __version__), _imports(s), _settings_block(s), _TEMPLATE_MESH, _TEMPLATE_BLOCKS,
             _TEMPLATE_CHECKPOINT, _optimizer_block(s), *_scheduler_block(s)]
    parts.append(_TEMPLATE_ENGINE)
    parts.append(_TEMPLATE_SETUP)
    parts.append(_TEMPLATE_CHECK)
    return "\n\n\n".join(p.strip("\n") for p in parts) + "\n"


def _header(s: Fsdp2Settings, version: str) -> str:
    world = (f"the {s.world_size} data-parallel processes {s.source_name} implies" if s.world_implied
             else f"{s.world_size} processes" if s.world_size else "one process per GPU")
    if s.source_format in (None, "deepspeed"):
        where, launch_note, keys = "where you called deepspeed.initialize", "", (
            "The settings below name the ds_config keys they come from. `shardshift convert --to fsdp2`\n"
            "reports which keys map exactly, approximately or not at all.")
    else:
        where = "in your training script"
        launch_note = ("" if s.world_size else
                       f"\n{s.source_name} states no process count: setup() takes the world from torchrun.\n")
        keys = (f"The settings below come from {s.source_name}; their comments name the DeepSpeed keys of the\n"
                "same meaning. `shardshift convert --to fsdp2` reports what carries over and what does not.")
    return f'''"""FSDP2 training setup, migrated from {s.source_name} by shardshift {version}.

Use it {where}:

    import fsdp2_setup

    engine = fsdp2_setup.setup(model)  # shards `model` in place; blocks=[...] picks the units
    for batch in loader:               # DataLoader(batch_size=MICRO_BATCH_SIZE) on every rank
        loss = engine(batch)           # engine.model(batch): the sharded model
        engine.backward(loss)          # like DeepSpeedEngine.backward: scaled for accumulation
        engine.step()                  # like DeepSpeedEngine.step: acts on the accumulation boundary

Launch it with torchrun ({world}):

    {torchrun_line(s)}
{launch_note}
{keys} Imports only torch (>= 2.6).
"""'''


def _imports(s: Fsdp2Settings) -> str:
    return "\n".join([
        "import math", "import os", "import warnings", "", "import torch", "import torch.distributed as dist",
        "from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import CheckpointImpl, checkpoint_wrapper",
        "from torch.distributed.device_mesh import init_device_mesh",
        "from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, OffloadPolicy, fully_shard"])


def _setting(name: str, value: str, comment: str) -> str:
    return f"{name} = {value}  # {comment}"


def _settings_block(s: Fsdp2Settings) -> str:
    out = ['# ---- Settings from ' + s.source_name + ' ' + '-' * max(4, 78 - len(s.source_name)),
           '# Each comment names the source key. "auto" marks a value the Hugging Face Trainer filled in and',
           '# "FILL_IN" one the module needs and the source does not give: setup() refuses to run until you replace them.',
           ""]
    world_note = ("train_batch_size / (micro batch x accumulation); setup() warns on another size"
                  if s.world_implied else "the processes the batch sizes are for; setup() warns on another")
    out.append(_setting("WORLD_SIZE", literal(s.world_size), world_note))
    out.append(_setting("TRAIN_BATCH_SIZE", literal(s.train_batch_size), "train_batch_size"))
    out.append(_setting("MICRO_BATCH_SIZE", literal(s.micro_batch_size),
                        "train_micro_batch_size_per_gpu: your DataLoader's batch_size"))
    out.append(_setting("GRADIENT_ACCUMULATION_STEPS", literal(s.accumulation_steps),
                        "None: derived from the batch sizes, as DeepSpeed does"))
    if s.drop_last is not None:
        out.append(_setting("DATALOADER_DROP_LAST", literal(s.drop_last), "dataloader_drop_last: DataLoader(drop_last=...)"))
    out.append(_setting("GRADIENT_CLIPPING", literal(s.gradient_clipping),
                        "gradient_clipping: clip_grad_norm_'s max_norm, 0 disables"))
    out.append("# True: reduce gradients every micro-step, as DeepSpeed ZeRO-2/3 does (less memory, more traffic)")
    out.append(_setting("SYNC_GRADIENTS_EVERY_MICRO_STEP", literal(s.sync_every_micro_step),
                        "False: only on the accumulation boundary"))
    raf = s.reshard_after_forward
    out.append(f"# zero_optimization.stage {s.stage}: {_stage_comment(s)}")
    out.append(f"RESHARD_AFTER_FORWARD = {literal(raf)}")
    out.append("# mics_shard_size: shard within groups of this many processes and replicate across the groups")
    out.append('# (hybrid sharding); "node": the processes of one node; None: one shard group of all processes')
    hybrid = (s.hybrid_shard_size or "node") if s.hybrid else None
    out.append(f"HYBRID_SHARD_SIZE = {literal(hybrid)}")
    out.append("# Compute (and all-gather) dtype. Sharded parameters keep the model's dtype: load the model in")
    out.append("# fp32 to keep fp32 master weights, as DeepSpeed does.")
    out.append(_setting("PARAM_DTYPE", _dtype(s.param_dtype), "fp16.enabled / bf16.enabled"))
    out.append(_setting("REDUCE_DTYPE", _dtype(s.reduce_dtype),
                        "communication_data_type: gradient reduce-scatter dtype"))
    scaler = s.loss_scaler or {"init_scale": 2.0 ** 16, "growth_interval": 1000, "static": False}
    out.append("# fp16 loss scaling with torch.amp.GradScaler, used only when PARAM_DTYPE is torch.float16")
    power = math.log2(scaler["init_scale"]) if _number(scaler["init_scale"]) and 0 < scaler["init_scale"] < math.inf \
        else None
    init = (f"2.0 ** {int(power)}" if power is not None and power == int(power) and not scaler["static"]
            else literal(scaler["init_scale"]))
    out.append(_setting("INITIAL_LOSS_SCALE", init,
                        "fp16.loss_scale (static)" if scaler["static"] else "fp16: 2 ** initial_scale_power"))
    out.append(_setting("LOSS_SCALE_WINDOW", literal(scaler["growth_interval"]),
                        "never grows: a static loss scale" if scaler["static"]
                        else "fp16.loss_scale_window: good steps before the scale doubles"))
    out.append("# Skip the optimizer step when the gradient norm is inf or nan, as DeepSpeed's ZeRO optimizers do")
    out.append(_setting("SKIP_NONFINITE_STEPS", literal(s.skip_nonfinite), "bf16.check_grad_overflow"))
    out.append(_setting("CPU_OFFLOAD", literal(s.cpu_offload),
                        "offload_param/offload_optimizer.device cpu: CPUOffloadPolicy"))
    out.append(_setting("PIN_MEMORY", literal(s.pin_memory),
                        "offload_*.pin_memory; used only when an accelerator is present"))
    out.append(_setting("ACTIVATION_CHECKPOINTING", literal(s.activation_checkpointing),
                        "activation_checkpointing: recompute each block in backward"))
    out.append("")
    note = f"# {s.optimizer_note}" if s.optimizer_note else "# the optimizer's arguments"
    out.append(note)
    out.append(_dict_block("OPTIMIZER_KWARGS", s.optimizer_kwargs).rstrip("\n"))
    if s.scheduler is not None:
        kind = s.scheduler.split(":", 1)[-1]
        out.append(f"# scheduler {kind!r}: every parameter, DeepSpeed's defaults filled in")
        out.append(_dict_block("LR_SCHEDULE", s.scheduler_kwargs).rstrip("\n"))
    return "\n".join(out)


_TEMPLATE_MESH = '''
def build_mesh():
    """The device mesh FSDP2 shards over: 1-D (one shard group of all processes), or 2-D for
    hybrid sharding. Starts the default process group if the script has not."""
    device_type = "cpu"
    if torch.accelerator.is_available():
        device_type = torch.accelerator.current_accelerator().type
        torch.get_device_module(device_type).set_device(int(os.environ.get("LOCAL_RANK", "0")))
    if not dist.is_initialized():
        dist.init_process_group()  # torch picks the backend per device: NCCL for CUDA, gloo for the CPU
    world_size = dist.get_world_size()
    if HYBRID_SHARD_SIZE is None:
        return init_device_mesh(device_type, (world_size,), mesh_dim_names=("shard",))
    shard = int(os.environ.get("LOCAL_WORLD_SIZE", world_size)) if HYBRID_SHARD_SIZE == "node" else HYBRID_SHARD_SIZE
    if world_size % shard:
        raise ValueError(f"HYBRID_SHARD_SIZE is {shard} but it must divide the {world_size} processes; "
                         "set it to a divisor (the processes per node is the usual choice)")
    # fully_shard picks the roles by position, not by name: dim 0 replicates, dim 1 shards.
    return init_device_mesh(device_type, (world_size // shard, shard), mesh_dim_names=("replicate", "shard"))
'''

_TEMPLATE_BLOCKS = '''
def find_blocks(model):
    """The modules setup() shards one by one when it is given none: the entries of the
    nn.ModuleList (or nn.ModuleDict) holding the most parameters, e.g. the transformer layers."""
    best, best_size = [], 0
    for module in model.modules():
        if isinstance(module, (torch.nn.ModuleList, torch.nn.ModuleDict)):
            size = sum(p.numel() for p in module.parameters())
            if size > best_size:
                best, best_size = list(module.children()), size
    if not best:
        warnings.warn("setup() found no nn.ModuleList of blocks: the whole model is one FSDP unit, so no "
                      "communication overlaps compute; pass blocks=[...]", stacklevel=3)
    return best
'''

_TEMPLATE_CHECKPOINT = '''
def checkpoint_blocks(model, blocks):
    """Wrap each block in checkpoint_wrapper (non-reentrant) where it sits in the model, before
    fully_shard: FSDP then stays outside and the recomputation reuses its all-gather."""
    wrappers = {id(block): checkpoint_wrapper(block, checkpoint_impl=CheckpointImpl.NO_REENTRANT)
                for block in blocks}
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if id(child) in wrappers:
                parent.register_module(name, wrappers[id(child)])
    return [wrappers[id(block)] for block in blocks]
'''


def _optimizer_block(s: Fsdp2Settings) -> str:
    doc = s.optimizer_note or f"torch.optim.{s.optimizer_class}"
    return f'''
def build_optimizer(params):
    """{doc}.
    Build it after fully_shard, over the sharded (DTensor) parameters."""
    return torch.optim.{s.optimizer_class}(params, **OPTIMIZER_KWARGS)
'''


_SCHEDULE_WARMUP = '''
def {name}(iteration, *, warmup_min_lr, warmup_max_lr, warmup_num_steps, warmup_type, **_):
    """The learning rate DeepSpeed's {kind} sets after `iteration` + 1 optimizer steps
    (deepspeed/runtime/lr_schedules.py); iteration -1 is before the first step."""
    if iteration < 0:
        return warmup_min_lr
    warmup_num_steps = max(2, warmup_num_steps)
    if iteration < warmup_num_steps:
        if warmup_type == "linear":
            gamma = iteration / warmup_num_steps
        else:  # "log" (DeepSpeed also uses it for any unknown warmup_type)
            gamma = 1.0 / math.log(warmup_num_steps) * math.log(iteration + 1)
    else:
        {after}
    return warmup_min_lr + (warmup_max_lr - warmup_min_lr) * gamma
'''

_SCHEDULE_COSINE = '''
def warmup_cosine_lr_ratio(iteration, *, total_num_steps, warmup_min_ratio, warmup_num_steps, cos_min_ratio,
                           warmup_type, **_):
    """The factor DeepSpeed's WarmupCosineLR multiplies the optimizer's initial learning rate by
    after `iteration` + 1 optimizer steps; iteration -1 (before the first step) gives 0."""
    if iteration < 0:
        return 0.0
    warmup_num_steps = max(2, warmup_num_steps)
    if iteration < warmup_num_steps:
        if warmup_type == "linear":
            ratio = iteration / warmup_num_steps
        else:  # "log" (DeepSpeed also uses it for any unknown warmup_type)
            ratio = 1.0 / math.log(warmup_num_steps) * math.log(iteration + 1)
        return warmup_min_ratio + ratio * (1.0 - warmup_min_ratio)
    real_last_step = iteration - warmup_num_steps + 1
    real_total_steps = max(1, total_num_steps - warmup_num_steps)
    progress = min(1.0, real_last_step / real_total_steps)
    ratio = (1 + math.cos(math.pi * progress)) / 2
    return max(0.0, cos_min_ratio + (1.0 - cos_min_ratio) * ratio)
'''

_SCHEDULE_ONE_CYCLE = '''
def _one_cycle_scale(iteration, first, second, first_stairs, second_stairs):
    """Where DeepSpeed's OneCycle is in its cycle: 0 at the bottom, 1 at the top."""
    total = first + second
    step_ratio = first / total
    batch_iteration = iteration + 1
    cycle = math.floor(1 + batch_iteration / total)
    x = 1.0 + batch_iteration / total - cycle
    if x <= step_ratio:
        scale, stairs = x / step_ratio, first_stairs
    else:
        scale, stairs = (x - 1) / (step_ratio - 1), second_stairs
    if stairs > 0:
        position = batch_iteration % total
        if position <= first:
            stair = position * stairs / first
        else:
            stair = (total - position) * stairs / second
        scale = math.floor(stair) / stairs
    return scale


def one_cycle_lr(iteration, *, cycle_min_lr, cycle_max_lr, decay_lr_rate, cycle_first_step_size,
                 cycle_second_step_size, cycle_first_stair_count, cycle_second_stair_count, decay_step_size, **_):
    """The learning rate DeepSpeed's OneCycle sets after `iteration` + 1 optimizer steps: one
    triangular cycle, then inverse-time decay from cycle_min_lr."""
    first, second = float(cycle_first_step_size), float(cycle_second_step_size)
    if iteration < first + second:
        scale = _one_cycle_scale(iteration, first, second, cycle_first_stair_count, cycle_second_stair_count)
        return cycle_min_lr + (cycle_max_lr - cycle_min_lr) * scale
    if decay_step_size == 0 or decay_lr_rate == 0:
        return cycle_min_lr
    return cycle_min_lr / (1 + decay_lr_rate * ((iteration - (first + second) + 1) / decay_step_size))


def one_cycle_betas(iteration, *, cycle_min_mom, cycle_max_mom, decay_mom_rate, cycle_first_step_size,
                    cycle_second_step_size, cycle_first_stair_count, cycle_second_stair_count, decay_step_size, **_):
    """The Adam betas DeepSpeed's OneCycle sets: beta1 cycles opposite to the learning rate,
    beta2 is fixed at 0.99 (DeepSpeed overrides the optimizer's own beta2)."""
    if iteration < 0:
        return (cycle_min_mom, 0.99)
    first, second = float(cycle_first_step_size), float(cycle_second_step_size)
    if iteration < first + second:
        scale = _one_cycle_scale(iteration, first, second, cycle_first_stair_count, cycle_second_stair_count)
        return (cycle_max_mom - (cycle_max_mom - cycle_min_mom) * scale, 0.99)
    if decay_step_size == 0 or decay_mom_rate == 0:
        return (cycle_max_mom, 0.99)
    return (cycle_max_mom * (1 + decay_mom_rate * ((iteration - (first + second) + 1) / decay_step_size)), 0.99)
'''

_SCHEDULE_RANGE = '''
def lr_range_test_lr(iteration, *, lr_range_test_min_lr, lr_range_test_step_size, lr_range_test_step_rate,
                     lr_range_test_staircase, **_):
    """The learning rate DeepSpeed's LRRangeTest sets after `iteration` + 1 optimizer steps."""
    if lr_range_test_staircase:
        interval = math.floor(float(iteration + 1) / lr_range_test_step_size)
    else:
        interval = float(iteration + 1) / lr_range_test_step_size
    return lr_range_test_min_lr * (1 + lr_range_test_step_rate * interval)
'''

_ABSOLUTE_SCHEDULER = '''
def build_scheduler(optimizer):
    """DeepSpeed's {kind}, stepped once per optimizer step: optimizer step s (from 0) runs with
    {function}(s - 1). DeepSpeed sets absolute learning rates, so each group's initial lr is set to
    1.0 and LambdaLR's factor is the learning rate itself."""
    for group in optimizer.param_groups:
        group["lr"] = group["initial_lr"] = 1.0
    return {cls}(optimizer, lambda step: {function}(step - 1, **LR_SCHEDULE))
'''


def _scheduler_block(s: Fsdp2Settings) -> list[str]:
    kind = s.scheduler
    if kind is None:
        note = s.scheduler_note or "the source has no learning-rate scheduler: the learning rate stays constant"
        return [f'''
def build_scheduler(optimizer):
    """None: {note}."""
    return None
''']
    if kind.startswith("torch:"):
        name = kind.split(":", 1)[1]
        return [f'''
def build_scheduler(optimizer):
    """torch.optim.lr_scheduler.{name}, stepped once per optimizer step as DeepSpeed steps it."""
    return torch.optim.lr_scheduler.{name}(optimizer, **LR_SCHEDULE)
''']
    if kind in ("WarmupLR", "WarmupDecayLR"):
        after = ("gamma = 1.0" if kind == "WarmupLR" else
                 "gamma = max(0.0, float(total_num_steps - iteration) / float(max(1.0, total_num_steps - "
                 "warmup_num_steps)))")
        function = SCHEDULE_FUNCTIONS[kind]
        helper = _SCHEDULE_WARMUP.format(name=function, kind=kind, after=after)
        if kind == "WarmupDecayLR":
            helper = helper.replace("warmup_type, **_):", "warmup_type, total_num_steps, **_):")
        return [helper, _ABSOLUTE_SCHEDULER.format(kind=kind, function=function,
                                                   cls="torch.optim.lr_scheduler.LambdaLR")]
    if kind == "WarmupCosineLR":
        return [_SCHEDULE_COSINE, '''
def build_scheduler(optimizer):
    """DeepSpeed's WarmupCosineLR, stepped once per optimizer step: optimizer step s (from 0) runs
    with the optimizer's initial learning rate times warmup_cosine_lr_ratio(s - 1)."""
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: warmup_cosine_lr_ratio(step - 1, **LR_SCHEDULE))
''']
    if kind == "OneCycle":
        if s.cycle_momentum:
            scheduler_class = '''
class OneCycleLR(torch.optim.lr_scheduler.LambdaLR):
    """LambdaLR for DeepSpeed OneCycle's learning rate, plus its cycle of the Adam betas."""

    def step(self, epoch=None):
        super().step(epoch)
        for group in self.optimizer.param_groups:
            group["betas"] = one_cycle_betas(self.last_epoch - 1, **LR_SCHEDULE)
'''
            cls = "OneCycleLR"
        else:
            scheduler_class, cls = "", "torch.optim.lr_scheduler.LambdaLR"
        return [p for p in (_SCHEDULE_ONE_CYCLE, scheduler_class, _ABSOLUTE_SCHEDULER.format(
            kind="OneCycle", function="one_cycle_lr", cls=cls)) if p]
    return [_SCHEDULE_RANGE, _ABSOLUTE_SCHEDULER.format(kind="LRRangeTest", function="lr_range_test_lr",
                                                        cls="torch.optim.lr_scheduler.LambdaLR")]


_TEMPLATE_ENGINE = '''
class Engine:
    """What deepspeed.initialize returned, for the parts a training loop uses: call backward(loss)
    and step() once per micro-batch; the optimizer steps every gradient_accumulation_steps calls."""

    def __init__(self, model, optimizer, scheduler, mesh, scaler=None):
        self.model = model
        self.optimizer = optimizer
        self.scheduler = scheduler
        self.mesh = mesh
        self.scaler = scaler  # torch.amp.GradScaler for fp16, else None
        self.gradient_accumulation_steps = gradient_accumulation_steps(mesh.size())
        self.micro_steps = 0
        self.global_steps = 0  # optimizer steps taken or skipped, as DeepSpeedEngine.global_steps
        self.skipped_steps = 0

    def __call__(self, *args, **kwargs):
        return self.model(*args, **kwargs)

    def is_gradient_accumulation_boundary(self):
        return (self.micro_steps + 1) % self.gradient_accumulation_steps == 0

    def backward(self, loss):
        """Backpropagate `loss` divided by the accumulation steps, as DeepSpeedEngine.backward does.
        Gradients are reduced across processes only on the boundary micro-step."""
        if not SYNC_GRADIENTS_EVERY_MICRO_STEP:
            self.model.set_requires_gradient_sync(self.is_gradient_accumulation_boundary())
        scaled = loss / self.gradient_accumulation_steps if self.gradient_accumulation_steps > 1 else loss
        (self.scaler.scale(scaled) if self.scaler is not None else scaled).backward()
        return loss

    def step(self):
        """On the accumulation boundary: clip, step the optimizer and the scheduler, zero the
        gradients. Other micro-steps only count."""
        if self.is_gradient_accumulation_boundary():
            self._optimizer_step()
        self.micro_steps += 1

    def _optimizer_step(self):
        if self.scaler is not None:
            self.scaler.unscale_(self.optimizer)
        applied = True
        if GRADIENT_CLIPPING > 0 or SKIP_NONFINITE_STEPS:
            max_norm = GRADIENT_CLIPPING if GRADIENT_CLIPPING > 0 else math.inf
            norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), max_norm)
            if hasattr(norm, "full_tensor"):
                norm = norm.full_tensor()
            applied = not SKIP_NONFINITE_STEPS or bool(torch.isfinite(norm))
        if self.scaler is not None:
            scale = self.scaler.get_scale()
            self.scaler.step(self.optimizer)  # skipped when a gradient is inf or nan
            self.scaler.update()
            applied = self.scaler.get_scale() >= scale
        elif applied:
            self.optimizer.step()
        if applied and self.scheduler is not None:
            self.scheduler.step()
        if not applied:
            self.skipped_steps += 1
        self.optimizer.zero_grad(set_to_none=True)
        self.global_steps += 1

    def full_state_dict(self):
        """The whole model's state dict, gathered on CPU on rank 0 ({} on other ranks): what
        stage3_gather_16bit_weights_on_model_save gave save_16bit_model."""
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

        options = StateDictOptions(full_state_dict=True, cpu_offload=True)
        return get_model_state_dict(self.model, options=options)


def gradient_accumulation_steps(world_size):
    """GRADIENT_ACCUMULATION_STEPS, or derived from the batch sizes as DeepSpeed does."""
    steps = GRADIENT_ACCUMULATION_STEPS
    if steps is None:
        if TRAIN_BATCH_SIZE is not None and MICRO_BATCH_SIZE is not None:
            steps = TRAIN_BATCH_SIZE // MICRO_BATCH_SIZE // world_size
        else:
            steps = 1
    if steps < 1:
        raise ValueError(f"gradient accumulation steps is {steps} but must be at least 1: TRAIN_BATCH_SIZE "
                         f"{TRAIN_BATCH_SIZE} is smaller than MICRO_BATCH_SIZE {MICRO_BATCH_SIZE} x {world_size} "
                         "processes; set GRADIENT_ACCUMULATION_STEPS")
    batch = MICRO_BATCH_SIZE * steps * world_size if MICRO_BATCH_SIZE is not None else None
    if TRAIN_BATCH_SIZE is not None and batch is not None and TRAIN_BATCH_SIZE != batch:
        warnings.warn(f"TRAIN_BATCH_SIZE is {TRAIN_BATCH_SIZE} but {MICRO_BATCH_SIZE} x {steps} accumulation x "
                      f"{world_size} processes = {batch} samples per optimizer step "
                      "(DeepSpeed would refuse to start)", stacklevel=3)
    return steps
'''


_TEMPLATE_SETUP = '''
def setup(model, blocks=None):
    """Shard `model` in place with FSDP2 (each block, then the root), then build the optimizer and
    LR scheduler over the sharded parameters. `blocks`: the modules to shard one by one (default:
    find_blocks(model)). Returns an Engine; use engine.model (the same object as `model`)."""
    _check_settings()
    mesh = build_mesh()
    if WORLD_SIZE is not None and mesh.size() != WORLD_SIZE:
        warnings.warn(f"{mesh.size()} processes, but the settings are for {WORLD_SIZE}: the global batch "
                      "and the learning-rate schedule change with it", stacklevel=2)
    blocks = list(find_blocks(model) if blocks is None else blocks)
    if ACTIVATION_CHECKPOINTING:
        blocks = checkpoint_blocks(model, blocks)
    mp_policy = MixedPrecisionPolicy(param_dtype=PARAM_DTYPE, reduce_dtype=REDUCE_DTYPE)
    if CPU_OFFLOAD:
        offload_policy = CPUOffloadPolicy(pin_memory=PIN_MEMORY and torch.accelerator.is_available())
    else:
        offload_policy = OffloadPolicy()
    for block in blocks:
        fully_shard(block, mesh=mesh, reshard_after_forward=RESHARD_AFTER_FORWARD, mp_policy=mp_policy,
                    offload_policy=offload_policy)
    # The root takes what no block holds (embeddings, final norm, head). Its reshard_after_forward
    # stays at the default, False for the root: backward needs those parameters first.
    fully_shard(model, mesh=mesh, mp_policy=mp_policy, offload_policy=offload_policy)
    optimizer = build_optimizer(model.parameters())
    scheduler = build_scheduler(optimizer)
    scaler = None
    if PARAM_DTYPE == torch.float16:
        scaler = torch.amp.GradScaler(mesh.device_type, init_scale=INITIAL_LOSS_SCALE, growth_factor=2.0,
                                      backoff_factor=0.5, growth_interval=LOSS_SCALE_WINDOW)
    return Engine(model, optimizer, scheduler, mesh, scaler)
'''


_TEMPLATE_CHECK = '''
def _check_settings():
    unset = [name for name, value in globals().items() if name.isupper() and _unset(value)]
    if unset:
        raise ValueError(f"set {', '.join(unset)} at the top of {os.path.basename(__file__)} first: the source "
                         'config left them "auto" (the Hugging Face Trainer filled them in) or FILL_IN (a value '
                         "it does not give)")


def _unset(value):
    if isinstance(value, dict):
        return any(_unset(v) for v in value.values())
    # "FILL" "_IN": spelled apart, so that a search for FILL_IN finds only the values to fill in
    return isinstance(value, str) and value in ("auto", "FILL" "_IN")
'''


# --- the format interface -------------------------------------------------------------------


def write(plan: Plan) -> str:
    """The FSDP2 setup module for `plan`."""
    return render(settings_from_plan(plan))

