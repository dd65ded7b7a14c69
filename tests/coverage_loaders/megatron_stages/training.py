"""stage=training: what `pretrain` (megatron/training/training.py) checks from the arguments around the training
loop, with Megatron-LM's own code, after tests/coverage_loaders/megatron.py has validated the arguments.

`run(args, world)` runs, in the order `pretrain` meets them:

1. The wandb writer's check: `global_vars._set_wandb_writer(args)` (what `set_global_variables` calls in
   `initialize_megatron`), on a copy of the arguments with `rank = world - 1`: the check runs on the last rank
   only. Stood in: `import wandb` after the check fails (wandb is put out of reach in `sys.modules` while it
   runs), so no writer is made (a ModuleNotFoundError/ImportError there is caught).
2. The set-up `stage=startup` does: `set_global_variables(args, build_tokenizer=False)`, a `fake` process group
   of the world size on rank 0 (torch's FakeStore) and `initialize_model_parallel(...)` compiled from
   megatron/training/initialize.py (`use_gloo_process_groups` off), so that what follows finds its groups.
3. The logits saver's constructor: `setup_model_and_optimizer`'s own `LogitsSaverHooks(...)` call, compiled from
   training.py, evaluated when `args.logits_save_dir is not None` (Megatron builds it on the last pipeline
   stage's ranks; some rank is one, so the rank-0 test of `mpu.is_pipeline_last_stage()` is not repeated). The
   model it would attach to is not built (the constructor reads only the arguments and the process groups).
4. The validation data loaders: `build_train_valid_test_data_loaders`' own `for valid_d in valid_ds:` loop,
   compiled from training.py (where its enclosing test `not args.perform_rl_step` holds), with the real
   `build_pretraining_data_loader`. Stood in: the data sets (pretrain_gpt.py's provider, not in the pinned tree,
   builds them): `valid_ds = [None]`, so no sampler is made.
5. The fault injector's configuration, at the top of `train`: its own statements building
   `FaultInjectorConfig` from the arguments, compiled from training.py; then, where train's condition holds
   (`--fault-injector-ranks` or `--fault-injector-num-ranks`, set up at the start:
   `should_setup_fault_injection_at_start`), what `setup_fault_injection` does on rank 0 before it touches the
   GPU: the rng `random.Random(config.fault_injector_seed)`, `get_fault_ranks(config)` (which reads the fake
   group's world size), `get_fault(config)`, `get_fault_delay(config)`. `setup_fault_injection` itself first
   requires nvidia_resiliency_ext, and `get_fault` again, before its checks; it is not installed here, so the
   run stops quietly at `get_fault`'s requirement (its checks and `get_fault_delay`'s are not reached here).
6. `train`'s manual garbage collection check: its `if args.manual_gc:` statement compiled from training.py with
   its assertions only (`gc.disable()` / `gc.collect()` are left out, not to change this process).
7. The first iteration's `training_log` (logged on the first iteration whatever --log-interval): its two timer
   calls with `normalizer=args.log_interval`, compiled from training.py: `if args.log_timers_to_tensorboard:
   timers.write(...)` and `timers.log(...)`, on the timers `set_global_variables` made, with no timer names,
   `iteration=1`, `should_reset=False` (the first iteration's) and no writers. Stood in: the iteration itself
   (train_step and the statements of training_log before these calls are not run).
8. The first evaluation (`evaluate_and_print_results`, at --eval-interval or after training): its statements
   `data_iterators = ...`, `if not args.multiple_validation_sets: ...` and `if args.validation_set_names: ...`,
   compiled from training.py, with `data_iterator = None`, where pretrain evaluates (`args.do_valid`, as
   `build_train_valid_test_data_loaders` sets it: `args.full_validation or args.eval_iters > 0`; not RL). Not
   run: its `if args.full_validation:` block (it broadcasts eval_iters from tensor-parallel rank 0 in a GPU
   tensor; on rank 0 it leaves them as they are), and the step with --multiple-validation-sets (the number of
   validation data sets comes from the data provider, not built here).

Steps 5 to 7 run where `pretrain` calls `train`: not `--skip-train` and `(args.train_iters or 0) > 0`, with
`args.do_train` taken as true (the data sets, whose train split gives it, are not built here).

Whatever Megatron raises propagates. Global state is reset after every case: the global variables and the
microbatch calculator, the process groups, the fault injector's rng.
"""

from __future__ import annotations

import ast
import random
import sys
import types
from pathlib import Path

_compiled: dict = {}


def _training_source():
    import megatron.training.training as training

    if "tree" not in _compiled:
        _compiled["file"] = training.__file__
        _compiled["tree"] = ast.parse(Path(training.__file__).read_text(encoding="utf-8"))
    return _compiled["tree"], _compiled["file"]


def _function(name: str) -> ast.FunctionDef:
    tree, _ = _training_source()
    return next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == name)


def _compile_statements(key: str, statements: list, mode: str = "exec"):
    if key not in _compiled:
        _, filename = _training_source()
        node = ast.Expression(statements) if mode == "eval" else ast.Module(body=statements, type_ignores=[])
        _compiled[key] = compile(node, filename, mode)
    return _compiled[key]


def _model_parallel_call():
    if "model_parallel" not in _compiled:
        import megatron.training.initialize as initialize

        source = Path(initialize.__file__).read_text(encoding="utf-8")
        call = next(node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Call)
                    and ast.unparse(node.func) == "mpu.initialize_model_parallel")
        _compiled["model_parallel"] = compile(ast.Expression(call), initialize.__file__, "eval")
    return _compiled["model_parallel"]


def _wandb_writer(args, world: int) -> None:
    from megatron.training import global_vars

    last = types.SimpleNamespace(**{**vars(args), "rank": world - 1})
    saved = sys.modules.get("wandb", ...)
    sys.modules["wandb"] = None  # `import wandb` after the check fails: no writer is made
    try:
        global_vars._set_wandb_writer(last)
    except ImportError:
        pass
    finally:
        if saved is ...:
            sys.modules.pop("wandb", None)
        else:
            sys.modules["wandb"] = saved
        global_vars._GLOBAL_WANDB_WRITER = None


def _logits_saver(args) -> None:
    if "logits_saver" not in _compiled:
        call = next(node for node in ast.walk(_function("setup_model_and_optimizer")) if isinstance(node, ast.Call)
                    and ast.unparse(node.func) == "LogitsSaverHooks")
        _compile_statements("logits_saver", call, "eval")
    if args.logits_save_dir is not None:
        from megatron.training.distillation import LogitsSaverHooks

        eval(_compiled["logits_saver"], {"LogitsSaverHooks": LogitsSaverHooks, "args": args})


def _fault_injector(args) -> None:
    import megatron.core.fault_injector as fault_injector
    from megatron.training.config import FaultInjectorConfig

    if "fault_config" not in _compiled:
        body = _function("train").body
        first = next(i for i, s in enumerate(body) if isinstance(s, ast.Assign)
                     and ast.unparse(s.targets[0]) == "fault_injector_kwargs")
        last = next(i for i, s in enumerate(body) if isinstance(s, ast.Assign)
                    and ast.unparse(s.targets[0]) == "fault_injector_config")
        _compile_statements("fault_config", body[first:last + 1])
    scope = {"args": args, "dataclasses": __import__("dataclasses"), "FaultInjectorConfig": FaultInjectorConfig}
    exec(_compiled["fault_config"], scope)
    config = scope["fault_injector_config"]
    if config.fault_injector_ranks is None and config.fault_injector_num_ranks is None:
        return
    if not fault_injector.should_setup_fault_injection_at_start(config):
        return  # set up at a later iteration of the loop
    try:
        # setup_fault_injection on rank 0, before its GPU tensors
        fault_injector.rng = random.Random(config.fault_injector_seed)
        fault_injector.get_fault_ranks(config)
        try:
            fault_injector.get_fault(config)
        except ModuleNotFoundError:
            return  # nvidia_resiliency_ext is not installed here: get_fault's checks are not reached
        fault_injector.get_fault_delay(config)
    finally:
        fault_injector.rng = None


def _manual_gc(args) -> None:
    if "manual_gc" not in _compiled:
        node = next(s for s in _function("train").body if isinstance(s, ast.If)
                    and ast.unparse(s.test) == "args.manual_gc")
        checks = ast.If(test=node.test, body=[s for s in node.body if isinstance(s, ast.Assert)], orelse=[])
        ast.copy_location(checks, node)
        _compile_statements("manual_gc", [checks])
    exec(_compiled["manual_gc"], {"args": args})


def _first_training_log(args) -> None:
    from megatron.training.global_vars import get_timers

    if "timers" not in _compiled:
        function = _function("training_log")
        block = next(s for s in function.body if isinstance(s, ast.If)
                     and ast.unparse(s.test) == "iteration % args.log_interval == 0 or is_first_iteration")
        write = next(s for s in block.body if isinstance(s, ast.If) and ast.unparse(s.test) == "args.log_timers_to_tensorboard"
                     and "timers.write(" in ast.unparse(s))
        log = next(s for s in block.body if isinstance(s, ast.Expr) and ast.unparse(s.value.func) == "timers.log")
        _compile_statements("timers", [write, log])
    exec(_compiled["timers"], {"args": args, "timers": get_timers(), "timers_to_log": [], "writer": None,
                               "wandb_writer": None, "iteration": 1, "should_reset": False})


def _valid_data_loaders(args) -> None:
    from megatron.training.datasets.data_samplers import build_pretraining_data_loader

    if "valid_loaders" not in _compiled:
        loop = next(node for node in ast.walk(_function("build_train_valid_test_data_loaders"))
                    if isinstance(node, ast.For) and ast.unparse(node.target) == "valid_d")
        _compile_statements("valid_loaders", [loop])
    if not args.perform_rl_step:  # its enclosing `if args.perform_rl_step: ... else:`
        exec(_compiled["valid_loaders"], {"args": args, "valid_ds": [None], "valid_dataloaders": [],
                                          "build_pretraining_data_loader": build_pretraining_data_loader})


def _first_evaluation(args) -> None:
    if "evaluation" not in _compiled:
        body = _function("evaluate_and_print_results").body
        kept = [s for s in body if (isinstance(s, ast.Assign) and ast.unparse(s.targets[0]) == "data_iterators")
                or (isinstance(s, ast.If) and ast.unparse(s.test) in ("not args.multiple_validation_sets",
                                                                        "args.validation_set_names"))]
        assert len(kept) == 3, [ast.unparse(s) for s in kept]
        _compile_statements("evaluation", kept)
    # pretrain evaluates where args.do_valid, which build_train_valid_test_data_loaders sets to
    # `valid_dataloaders is not None and (args.full_validation or args.eval_iters > 0)` (a list: not None)
    do_valid = args.full_validation or args.eval_iters > 0
    if do_valid and not args.perform_rl_step and not args.multiple_validation_sets:
        exec(_compiled["evaluation"], {"args": args, "data_iterator": None})


def run(args, world: int) -> None:
    import torch
    from megatron.core import parallel_state as mpu
    from megatron.training import global_vars
    from torch.testing._internal.distributed.fake_pg import FakeStore

    try:
        _wandb_writer(args, world)
        global_vars.set_global_variables(args, build_tokenizer=False)
        torch.distributed.init_process_group(backend="fake", store=FakeStore(), rank=0, world_size=world)
        flags = types.SimpleNamespace(**{**vars(args), "use_gloo_process_groups": False})
        eval(_model_parallel_call(), {"mpu": mpu, "args": flags, "get_embedding_ranks": None,
                                      "get_position_embedding_ranks": None})
        _logits_saver(args)
        _valid_data_loaders(args)
        # pretrain calls train when not --skip-train and `args.do_train and (args.train_iters or 0) > 0`;
        # do_train (a train split with samples) is taken as given: the data sets are not built here
        if not args.skip_train and (args.train_iters or 0) > 0:
            _fault_injector(args)
            _manual_gc(args)
            _first_training_log(args)
        _first_evaluation(args)
    finally:
        mpu.destroy_model_parallel()
        if torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()
        for name in dir(global_vars):
            if name.startswith("_GLOBAL_"):
                setattr(global_vars, name, None)
        try:
            from megatron.core import num_microbatches_calculator as microbatches

            microbatches._GLOBAL_NUM_MICROBATCHES_CALCULATOR = None
        except ImportError:
            pass
