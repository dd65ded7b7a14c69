"""Coverage-loader stage `optimizer` (tests/coverage_loaders/megatron.py, `stage=optimizer`): what `pretrain`
does with the validated arguments from its start-up to the learning-rate schedule, with Megatron-LM's own code.

What runs, in `pretrain`'s order (megatron/training/training.py, megatron/training/initialize.py):

1. `set_global_variables(args, build_tokenizer=False)` (the microbatch calculator: the constant one or the
   step-batch-size schedule, `init_num_microbatches_calculator` with the arguments global_vars passes), as
   stage=startup runs it.
2. The process groups: a `fake` torch process group of the world size on rank 0 (torch's FakeStore) and
   `mpu.initialize_model_parallel(...)` compiled from `_initialize_distributed`'s own call in
   megatron/training/initialize.py, with `use_gloo_process_groups` off, as stage=startup runs it.
3. The random seed: `_set_random_seed(...)` as `finish_mpu_init` calls it, compiled from that call in
   megatron/training/initialize.py (the per-module seed groups are None, as there outside MiMo). The CPU has no
   CUDA device, so its CUDA RNG tracker part (`torch.cuda.device_count() > 0`) is not run.
4. Unless `--skip-train` leaves out the optimizer (as `setup_model_and_optimizer` decides; then nothing more
   runs): the DDP wrapper's config, `get_megatron_ddp_config(args)` (training.py, DistributedDataParallelConfig's
   `__post_init__`; with `--use-torch-fsdp2` the FSDP2 config).
5. The optimizer config: `get_megatron_optimizer_config(args)` (training.py, OptimizerConfig's `__post_init__`).
6. `get_megatron_optimizer`'s own checks (megatron/core/optimizer/__init__.py): its statements up to and
   including the precision-aware-optimizer check, compiled from the function's source (same file, same lines)
   into a function with its parameters, called with the config of 5 and the arguments `setup_model_and_optimizer`
   passes, and, as the model chunks, one tiny `torch.nn.Linear` (stand-in for the wrapped model: the checks read
   only the config and whether the chunk is a MimoModel or a Megatron-FSDP v2 module). With `--use-megatron-fsdp
   --megatron-fsdp-version 2` the chunk is an instance of Megatron's FullyShardedDataParallelV2 not built by its
   `__init__` (its DTensor parameters need CUDA) holding the tiny model and the DDP config of 4; its own checks in
   `__init__` are not run. An emerging optimizer (`--optimizer muon`, ...) goes on into `_get_megatron_emerging_optimizer`,
   which raises ImportError here, where the emerging-optimizers package is not installed.
7. For adam and sgd with Megatron-FSDP v2: `_get_megatron_optimizer_based_on_param_groups(config=...,
   model_chunks=[chunk], param_groups=...)` itself over the tiny model's parameters (the torch optimizer, the grad
   scaler, FullyShardedOptimizer and its `_validate_config`), with grad_scaler.py's and optimizer.py's CUDA tensors
   made on the CPU; with `--optimizer-cpu-offload` its HybridDeviceOptimizer needs CUDA and the case raises.
   Otherwise, for adam and sgd, the grad scaler: the `grad_scaler = None` statement and the `if config.fp16 or config.bf16 or
   config.use_distributed_optimizer:` block of `_get_megatron_optimizer_based_on_param_groups`, compiled from
   that function's source and run with the config of 5 (ConstantGradScaler / DynamicGradScaler `__init__`),
   with megatron/core/optimizer/grad_scaler.py's `torch.tensor(..., device='cuda')` making its scale tensors on
   the CPU (stand-in for the GPU). With the distributed optimizer (and neither CPU offload nor the
   precision-aware optimizer, whose optimizers pass the check), the torch optimizer from
   `_get_megatron_optimizer_based_on_param_groups(..., skip_megatron_wrapping=True)` over the tiny model's
   parameters (torch's AdamW / SGD here, where Transformer Engine and Apex are absent: Megatron's own fallback),
   then `DistributedOptimizer.__init__`'s statements up to and including its check of that optimizer (the class
   compiled from megatron/core/optimizer/distrib_optimizer.py with only `__init__` cut after that check;
   MixedPrecisionOptimizer's `__init__` runs with its CUDA tensors on the CPU; the tiny model carries the DDP
   config of 4 as the DDP wrapper does).
8. `get_optimizer_param_scheduler(optimizer)` (training.py; it reads the global args of 1), with a
   `torch.optim.SGD` over the tiny model's parameters standing in for the Megatron optimizer
   (OptimizerParamScheduler reads and sets only its `param_groups`).

Stood in: the GPU (CUDA tensors made on the CPU where named), the process group (fake), the model (one
`torch.nn.Linear`, in a FullyShardedDataParallelV2 shell for Megatron-FSDP v2) and the Megatron optimizer
wrapping torch's (a `torch.optim.SGD`, for the scheduler). Not run:
building the model and its DDP / FSDP wrapper (parameter and gradient buffers, buckets), the rest of the
DistributedOptimizer and the layer-wise / fully-sharded optimizers, which need CUDA tensors, and the CUDA RNG
tracker of step 3.

Global state Megatron sets (global vars, the microbatch calculator, process groups, the RNG) is reset after
each case, as stage=startup's `_start_up` does.
"""

from __future__ import annotations

import ast
import contextlib
import random

import numpy

_compiled: dict = {}


def _node_call(module, name: str):
    """The call `name(...)` in `module`'s file, compiled as an expression with that file's name and lines."""
    key = (module.__name__, name)
    if key not in _compiled:
        source = open(module.__file__, encoding="utf-8").read()
        call = next(node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Call)
                    and ast.unparse(node.func) == name)
        _compiled[key] = compile(ast.Expression(call), module.__file__, "eval")
    return _compiled[key]


def _function(module, function, name: str, last):
    """`function`'s statements up to and including the first for which `last(statement)` holds, compiled from
    its module's file (same file name, same line numbers) as a function `name` with the same parameters."""
    key = (module.__name__, name)
    if key not in _compiled:
        source = open(module.__file__, encoding="utf-8").read()
        tree = ast.parse(source)
        node = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == function.__name__)
        body = []
        for statement in node.body:
            body.append(statement)
            if last(statement):
                break
        else:
            raise LookupError(f"{function.__name__}: the statement to stop at is gone")
        node = ast.FunctionDef(name=name, args=node.args, body=body, decorator_list=[], returns=None,
                               type_params=[], lineno=node.lineno, col_offset=node.col_offset)
        _compiled[key] = compile(ast.Module(body=[node], type_ignores=[]), module.__file__, "exec")
    namespace: dict = {}
    exec(_compiled[key], module.__dict__, namespace)
    return namespace[name]


def _statements(module, function, first, last):
    """`function`'s body statements from the first that `first` holds for to the first after it that `last`
    holds for, compiled from its module's file."""
    key = (module.__name__, function.__name__, "statements")
    if key not in _compiled:
        source = open(module.__file__, encoding="utf-8").read()
        tree = ast.parse(source)
        node = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == function.__name__)
        start = next(i for i, s in enumerate(node.body) if first(s))
        end = next(i for i, s in enumerate(node.body) if i > start and last(s))
        _compiled[key] = compile(ast.Module(body=node.body[start:end + 1], type_ignores=[]), module.__file__, "exec")
    return _compiled[key]


class _CpuTorch:
    """`torch` as a module sees it, but `torch.tensor(..., device='cuda')` makes the tensor on the CPU."""

    def __init__(self, torch) -> None:
        self._torch = torch

    def __getattr__(self, name: str):
        return getattr(self._torch, name)

    def tensor(self, *values, device=None, **options):
        return self._torch.tensor(*values, device=None if device == "cuda" else device, **options)


@contextlib.contextmanager
def _cpu_tensors(module):
    saved = module.torch
    module.torch = _CpuTorch(saved)
    try:
        yield
    finally:
        module.torch = saved


def _unparsed(text: str):
    return lambda statement: ast.unparse(statement).startswith(text)


def run(args, world: int) -> None:
    import torch
    from megatron.core import optimizer as megatron_optimizer
    from megatron.core.optimizer import grad_scaler
    from megatron.core.optimizer import optimizer as optimizer_module
    from megatron.training import initialize, training

    rng = (random.getstate(), numpy.random.get_state(), torch.random.get_rng_state())
    try:
        # 1-2. the loader's start-up: global variables (the microbatch calculator) and the process groups
        with LOADER["started"](args, world):  # noqa: F821 - the loader's globals, set on this module before it runs
            # 3. the random seed, as finish_mpu_init calls it
            eval(_node_call(initialize, "_set_random_seed"),
                 {**initialize.__dict__, "args": args,
                  **{f"seed_{g}_group": None for g in ("pp", "dp", "tp", "ep", "etp")},
                  "seed_gtp_remat_group": None, "seed_egtp_remat_group": None})
            # setup_model_and_optimizer: no DDP wrapper and no optimizer with --skip-train (unless an RL step loads one)
            if args.skip_train and not (args.perform_rl_step and not args.no_load_optim):
                return
            # 4. the DDP wrapper's config
            ddp_config = training.get_megatron_ddp_config(args)
            # 5. the optimizer config
            config, config_overrides = training.get_megatron_optimizer_config(args)
            model = torch.nn.Linear(2, 2)
            fsdp_v2 = bool(args.use_megatron_fsdp and args.megatron_fsdp_version == 2)
            chunk = _fsdp_v2_chunk(model, ddp_config) if fsdp_v2 else model
            # 6. get_megatron_optimizer's checks, with a tiny model as the model chunks
            checks = _function(megatron_optimizer, megatron_optimizer.get_megatron_optimizer, "optimizer_checks",
                               _unparsed("if is_mfsdp_v2:"))
            checks(config, [chunk], config_overrides=config_overrides,
                   use_gloo_process_groups=args.use_gloo_process_groups,
                   dump_param_to_param_group_map=args.dump_param_to_param_group_map)
            if config.optimizer in ("adam", "sgd") and fsdp_v2:
                # 7 (Megatron-FSDP v2). _get_megatron_optimizer_based_on_param_groups itself: the torch optimizer, the
                # grad scaler and FullyShardedOptimizer (whose CUDA tensors are made on the CPU)
                with _cpu_tensors(grad_scaler), _cpu_tensors(optimizer_module):
                    megatron_optimizer._get_megatron_optimizer_based_on_param_groups(
                        config=config, model_chunks=[chunk], param_groups=[{"params": list(model.parameters())}])
            elif config.optimizer in ("adam", "sgd"):
                # 7. the grad scaler (its scale tensors on the CPU: there is no CUDA device)
                scope = {"config": config}
                with _cpu_tensors(grad_scaler):
                    exec(_statements(megatron_optimizer,
                                     megatron_optimizer._get_megatron_optimizer_based_on_param_groups,
                                     _unparsed("grad_scaler = None"),
                                     _unparsed("if config.fp16 or config.bf16 or config.use_distributed_optimizer:")),
                         megatron_optimizer.__dict__, scope)
                # 7b. the distributed optimizer's check of the torch optimizer it wraps
                if config.use_distributed_optimizer and not (config.optimizer_cpu_offload
                                                             or config.use_precision_aware_optimizer):
                    _distributed_optimizer_check(megatron_optimizer, config, model, ddp_config, scope["grad_scaler"])
            # 8. the learning-rate and weight-decay schedule
            training.get_optimizer_param_scheduler(torch.optim.SGD(model.parameters(), lr=args.lr))
    finally:
        random.setstate(rng[0])
        numpy.random.set_state(rng[1])
        torch.random.set_rng_state(rng[2])


def _fsdp_v2_chunk(model, ddp_config):
    """Stand-in for the Megatron-FSDP v2 wrapper around the model (its DTensor parameters need CUDA): an instance of
    Megatron's FullyShardedDataParallelV2 class, not built by its `__init__`, holding the tiny model and the DDP
    config (what the optimizer path reads of it: its class and `ddp_config`)."""
    import torch
    from megatron.core.distributed.fsdp.mcore_fsdp_adapter import FullyShardedDataParallelV2

    chunk = FullyShardedDataParallelV2.__new__(FullyShardedDataParallelV2)
    torch.nn.Module.__init__(chunk)
    chunk.module = model
    chunk.ddp_config = ddp_config
    return chunk


def _distributed_optimizer_check(megatron_optimizer, config, model, ddp_config, scaler) -> None:
    """The torch optimizer as _get_megatron_optimizer_based_on_param_groups builds it (Megatron's function, with
    `skip_megatron_wrapping=True`, over the tiny model's parameters), then DistributedOptimizer.__init__'s statements
    up to and including its check of that optimizer, compiled from megatron/core/optimizer/distrib_optimizer.py
    (the class compiled from its source with only `__init__` cut after that check; its `super().__init__` runs
    MixedPrecisionOptimizer's, with its CUDA tensors on the CPU); the model chunk carries the DDP config as the DDP
    wrapper does."""
    from megatron.core.optimizer import distrib_optimizer
    from megatron.core.optimizer import optimizer as optimizer_module

    key = ("distributed optimizer",)
    if key not in _compiled:
        source = open(distrib_optimizer.__file__, encoding="utf-8").read()
        cls = next(n for n in ast.walk(ast.parse(source))
                   if isinstance(n, ast.ClassDef) and n.name == "DistributedOptimizer")
        init = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
        stop = next(i for i, n in enumerate(init.body) if isinstance(n, ast.Assert)
                    and ast.unparse(n.test).startswith("isinstance(optimizer, (Adam"))
        init = ast.FunctionDef(name="__init__", args=init.args, body=init.body[:stop + 1], decorator_list=[],
                               returns=None, type_params=[], lineno=init.lineno, col_offset=init.col_offset)
        body = [init if isinstance(n, ast.FunctionDef) and n.name == "__init__" else n for n in cls.body]
        cls = ast.ClassDef(name=cls.name, bases=cls.bases, keywords=cls.keywords, body=body,
                           decorator_list=cls.decorator_list, type_params=[], lineno=cls.lineno,
                           col_offset=cls.col_offset)
        _compiled[key] = compile(ast.Module(body=[cls], type_ignores=[]), distrib_optimizer.__file__, "exec")
    namespace = dict(distrib_optimizer.__dict__)
    exec(_compiled[key], namespace)
    optimizer, init_state_fn = megatron_optimizer._get_megatron_optimizer_based_on_param_groups(
        config, [model], [{"params": list(model.parameters())}], skip_megatron_wrapping=True)
    model.ddp_config = ddp_config
    with _cpu_tensors(optimizer_module):
        namespace["DistributedOptimizer"](optimizer, config, scaler, init_state_fn, model_chunks=[model],
                                          per_model_buffers=None, data_parallel_group=None,
                                          data_parallel_group_gloo=None, data_parallel_group_idx=None,
                                          distributed_optimizer_instance_id=0)

