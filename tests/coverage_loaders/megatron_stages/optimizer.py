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
4. The DDP wrapper's config: `get_megatron_ddp_config(args)` (training.py, DistributedDataParallelConfig's
   `__post_init__`).
5. The optimizer config: `get_megatron_optimizer_config(args)` (training.py, OptimizerConfig's `__post_init__`).
6. `get_megatron_optimizer`'s own checks (megatron/core/optimizer/__init__.py): its statements up to and
   including the precision-aware-optimizer check, compiled from the function's source (same file, same lines)
   into a function with its parameters and run with the config of 5 and, as the model chunks, one tiny
   `torch.nn.Linear` (stand-in for the DDP-wrapped model: the checks read only the config and whether the chunk
   is a MimoModel or a Megatron-FSDP v2 module, which the stand-in is not; launches with `--use-megatron-fsdp
   --megatron-fsdp-version 2` stop before this step, see below). An emerging optimizer (`--optimizer muon`, ...)
   goes on into `_get_megatron_emerging_optimizer`, which raises ImportError here where the
   emerging-optimizers package is not installed.
7. The grad scaler: the `grad_scaler = None` statement and the `if config.fp16 or config.bf16 or
   config.use_distributed_optimizer:` block of `_get_megatron_optimizer_based_on_param_groups`, compiled from
   that function's source and run with the config of 5 (ConstantGradScaler / DynamicGradScaler `__init__`),
   with megatron/core/optimizer/grad_scaler.py's `torch.tensor(..., device='cuda')` making its scale tensors on
   the CPU (stand-in for the GPU; the checks come before or do not read them).
8. `get_optimizer_param_scheduler(optimizer)` (training.py; it reads the global args of 1), with a
   `torch.optim.SGD` over the tiny model's parameters standing in for the Megatron optimizer
   (OptimizerParamScheduler reads and sets only its `param_groups`).

Stood in: the GPU (none of the above needs one past the stand-ins named), the process group (fake), the model
(one `torch.nn.Linear`) and the Megatron optimizer wrapping torch's (a `torch.optim.SGD`). Not run: building
the model and its DDP / FSDP wrapper (parameter and gradient buffers, buckets), the DistributedOptimizer and
the layer-wise / fully-sharded optimizers, which need CUDA tensors; a launch with `--use-megatron-fsdp
--megatron-fsdp-version 2` or `--use-torch-fsdp2` stops after step 5 (its optimizer takes DTensor parameters).

Global state Megatron sets (global vars, the microbatch calculator, process groups, the RNG) is reset after
each case, as stage=startup's `_start_up` does.
"""

from __future__ import annotations

import ast
import contextlib
import random
import types

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
    from megatron.core import parallel_state as mpu
    from megatron.core.optimizer import grad_scaler
    from megatron.training import global_vars, initialize, training
    from torch.testing._internal.distributed.fake_pg import FakeStore

    rng = (random.getstate(), numpy.random.get_state(), torch.random.get_rng_state())
    try:
        # 1. global variables: the microbatch calculator
        global_vars.set_global_variables(args, build_tokenizer=False)
        # 2. the process groups (without the gloo side groups: a fake group cannot build them)
        torch.distributed.init_process_group(backend="fake", store=FakeStore(), rank=0, world_size=world)
        flags = types.SimpleNamespace(**{**vars(args), "use_gloo_process_groups": False})
        eval(_node_call(initialize, "mpu.initialize_model_parallel"),
             {"mpu": mpu, "args": flags, "get_embedding_ranks": None, "get_position_embedding_ranks": None})
        # 3. the random seed, as finish_mpu_init calls it
        eval(_node_call(initialize, "_set_random_seed"),
             {**initialize.__dict__, "args": args, **{f"seed_{g}_group": None for g in ("pp", "dp", "tp", "ep", "etp")},
              "seed_gtp_remat_group": None, "seed_egtp_remat_group": None})
        # 4. the DDP wrapper's config
        training.get_megatron_ddp_config(args)
        # 5. the optimizer config
        config, config_overrides = training.get_megatron_optimizer_config(args)
        if args.use_torch_fsdp2 or (args.use_megatron_fsdp and args.megatron_fsdp_version == 2):
            return  # the model and optimizer take DTensor parameters: not built here
        # 6. get_megatron_optimizer's checks, with a tiny model as the model chunks
        model = torch.nn.Linear(2, 2)
        checks = _function(megatron_optimizer, megatron_optimizer.get_megatron_optimizer, "optimizer_checks",
                           _unparsed("if is_mfsdp_v2:"))
        checks(config, [model], config_overrides=config_overrides,
               use_gloo_process_groups=args.use_gloo_process_groups,
               dump_param_to_param_group_map=args.dump_param_to_param_group_map)
        # 7. the grad scaler (its scale tensors on the CPU: there is no CUDA device)
        with _cpu_tensors(grad_scaler):
            exec(_statements(megatron_optimizer, megatron_optimizer._get_megatron_optimizer_based_on_param_groups,
                             _unparsed("grad_scaler = None"),
                             _unparsed("if config.fp16 or config.bf16 or config.use_distributed_optimizer:")),
                 megatron_optimizer.__dict__, {"config": config})
        # 8. the learning-rate and weight-decay schedule
        training.get_optimizer_param_scheduler(torch.optim.SGD(model.parameters(), lr=args.lr))
    finally:
        mpu.destroy_model_parallel()
        if torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()
        _reset(global_vars)
        random.setstate(rng[0])
        numpy.random.set_state(rng[1])
        torch.random.set_rng_state(rng[2])


def _reset(global_vars) -> None:
    from megatron.core import num_microbatches_calculator

    for name in dir(global_vars):
        if name.startswith("_GLOBAL_"):
            setattr(global_vars, name, None)
    num_microbatches_calculator._GLOBAL_NUM_MICROBATCHES_CALCULATOR = None

