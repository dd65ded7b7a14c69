"""stage=training: what `pretrain` (megatron/training/training.py) checks from the arguments around the training
loop, with Megatron-LM's own code, after tests/coverage_loaders/megatron.py has validated the arguments.

`run(args, world)` runs, in the order `pretrain` meets them:

0. parse_and_validate_args' checks of --use-checkpoint-args (megatron/training/arguments.py; the entry script
   calls it before validate_args, so it runs here on arguments validate_args has seen, which it does not
   change for these): its `if args.use_checkpoint_args or args_defaults.get("use_checkpoint_args", False):`
   statement compiled from arguments.py with its assertions only, `args_defaults = {}` (as the oracle's
   validate_args gets). Not run: `load_args_from_checkpoint` (it reads the checkpoint).
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
4. setup_model_and_optimizer's check of the batch size at the start: its statements from
   `num_microbatches = get_num_microbatches()` to the assertion after them, compiled from training.py, on the
   microbatch calculator `set_global_variables` made (no checkpoint is loaded: the schedule's position is at 0
   consumed samples, where a run that loads none starts). The model and optimizer are not built.
5. pretrain's check of RL's separate inference model: its `inference_model = None` and its
   `if args.perform_rl_step:` block with the offload check, compiled from training.py, the inference model's
   build (when the --rl-inference-* sizes or a context-parallel size above 1 ask for one) stood in by a
   placeholder (`inference_model = [object()]`: the check reads only whether there is one).
6. The data blend: `get_blend_and_blend_per_split(args)` (megatron/training/utils/common_utils.py), which the
   GPT data set provider's config (pretrain_gpt.py, not in the pinned tree) calls with the arguments, with or
   without --mock-data, when `build_train_valid_test_data_loaders` builds the data sets (not with RL, which
   builds none). Not run where the blend comes from a file (--data-args-path, --per-split-data-args-path).
7. The validation data loaders: `build_train_valid_test_data_loaders`' own `for valid_d in valid_ds:` loop,
   compiled from training.py (where its enclosing test `not args.perform_rl_step` holds), with the real
   `build_pretraining_data_loader`, so the sampler of the validation split is made from the arguments. Stood in:
   the data set (pretrain_gpt.py's provider, not in the pinned tree, builds it): an object with only the split
   (`Split.valid`) and a length, the number of validation samples Megatron's own
   `get_train_valid_test_num_samples()` asks for, where the provider's config would build a validation split
   (`BlendedMegatronDatasetConfig`'s rule, with Megatron's own split functions: a --valid-data-path of the
   per-split paths; a --split whose validation share is not empty, with --data-path; always with neither, where
   the config falls back to a mock data set split "1,1,1"); else `None` (no sampler), as where that number is
   0 or unknown here (--train-samples, whose iterations `update_train_iters` computes first; --full-validation,
   which asks for the whole split; a blend read from a file; no --eval-interval, which the pinned
   `get_train_valid_test_num_samples` divides by, raising TypeError, where later releases ask for no validation
   samples).
8. The fault injector's configuration, at the top of `train`: its own statements building
   `FaultInjectorConfig` from the arguments, compiled from training.py; then, where train's condition holds
   (`--fault-injector-ranks` or `--fault-injector-num-ranks`, set up at the start:
   `should_setup_fault_injection_at_start`), what `setup_fault_injection` does on rank 0 before it touches the
   GPU: the rng `random.Random(config.fault_injector_seed)`, `get_fault_ranks(config)` (which reads the fake
   group's world size), `get_fault(config)`, `get_fault_delay(config)`. `setup_fault_injection` itself first
   requires nvidia_resiliency_ext, and `get_fault` again, before its checks; it is not installed here, so the
   run stops quietly at `get_fault`'s requirement (its checks and `get_fault_delay`'s are not reached here).
9. `train`'s manual garbage collection check: its `if args.manual_gc:` statement compiled from training.py with
   its assertions only (`gc.disable()` / `gc.collect()` are left out, not to change this process).
10. The first train_step's first call of the rerun state machine: the machine as initialize_megatron makes it
   (its `initialize_rerun_state_machine(...)` call compiled from initialize.py, with no-op state save and
   restore functions), train's `if args.hybrid_context_parallel:` wrapping of the train data iterator
   (compiled from training.py, with the model config from `core_transformer_config_from_args(args)`), then
   the first call of `should_run_forward_backward(train_data_iterator)` (train_step's loop):
   `_sanitize_data_iterators(data_iterator)` (what follows it saves the CUDA rng state). Stood in: the data
   loader's iterator (`RerunDataIterator(iter(()))`, as build_train_valid_test_data_iterators wraps it).
11. The first iteration's `training_log` (logged on the first iteration whatever --log-interval): its two timer
   calls with `normalizer=args.log_interval`, compiled from training.py: `if args.log_timers_to_tensorboard:
   timers.write(...)` and `timers.log(...)`, on the timers `set_global_variables` made, with no timer names,
   `iteration=1`, `should_reset=False` (the first iteration's) and no writers. Stood in: the iteration itself
   (train_step and the statements of training_log before these calls are not run).
12. The step batch size schedule through the loop (--step-batch-size-schedule only): train's check
   `if get_num_microbatches() != num_microbatches and iteration != 0:` compiled from training.py with its
   assertions only, between the loop's `update_num_microbatches(args.consumed_train_samples,
   consistency_check=False)` and `(..., consistency_check=True)` calls on Megatron's calculator, the consumed
   samples growing by data-parallel size × micro batch × microbatches an iteration, up to --train-iters (or
   past the schedule's last threshold). Stood in: the iterations themselves.
13. The first save of params or wgrads in train_step (`--save-params-interval`, `--save-wgrads-interval`): the
   iteration is found with train_step's own `save_*_in_this_iteration = ...` statements compiled from
   training.py, for iterations from 0 (`args.iteration` of a run that loads no checkpoint: none is loaded here)
   to `args.train_iters`; there (before the first training_log when it is the first iteration, else after it,
   and before or after the first checkpoint save as their iterations fall) `save_grads(args.save, {}, iteration + 1, label)` as
   `_save_state_dict` calls it (wgrads before params), only where `args.save` is None: past its checks it
   writes files. Stood in: the state dict (no model), and the iterations in between.
14. The first checkpoint save: which save comes first, persistent or not, from checkpoint_and_decide_exit's own
   tests `args.save and args.save_interval and iteration % args.save_interval == 0` and its `elif` (the
   non-persistent save), compiled from training.py, for iterations 1 .. `args.train_iters`, else pretrain's save
   after the loop; then `save_checkpoint`'s statements from `ckpt_type = ...` to its `if args.async_save:` checks,
   compiled from checkpointing.py, keeping only the assignments of `ckpt_type`, the raises and the ifs around
   them (its `non_persistent_ckpt` test, the non-persistent type's), and that `if args.async_save:` block. Not
   run: what writes or reads files or needs a model (the rng and rerun state, the checkpoint name, the
   dataloader and optimizer state, the old non-persistent checkpoints' clean-up), nor the exit-interval,
   exit-duration and signal saves.
15. The first evaluation (`evaluate_and_print_results`, at --eval-interval or after training): its statements
   `data_iterators = ...`, `if not args.multiple_validation_sets: ...` and `if args.validation_set_names: ...`,
   compiled from training.py, with `data_iterator = None`, where pretrain evaluates (`args.do_valid`, as
   `build_train_valid_test_data_loaders` sets it: `args.full_validation or args.eval_iters > 0`; not RL). Not
   run: its `if args.full_validation:` block (it broadcasts eval_iters from tensor-parallel rank 0 in a GPU
   tensor; on rank 0 it leaves them as they are), and the step with --multiple-validation-sets (the number of
   validation data sets comes from the data provider, not built here).

Steps 8 to 14 run where `pretrain` calls `train`: not `--skip-train` and `(args.train_iters or 0) > 0`, with
`args.do_train` taken as true (the data sets, whose train split gives it, are not built here).

Whatever Megatron raises propagates. Global state is reset after every case: the global variables and the
microbatch calculator, the process groups, the rerun state machine, the fault injector's rng.
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
        _compiled[key] = compile(ast.fix_missing_locations(node), filename, mode)
    return _compiled[key]


def _checkpoint_args(args) -> None:
    """parse_and_validate_args' `if args.use_checkpoint_args or args_defaults.get(...):` with its assertions only."""
    if "checkpoint_args" not in _compiled:
        import megatron.training.arguments as arguments

        tree = ast.parse(Path(arguments.__file__).read_text(encoding="utf-8"))
        function = next(node for node in tree.body if isinstance(node, ast.FunctionDef)
                        and node.name == "parse_and_validate_args")
        node = next(s for s in function.body if isinstance(s, ast.If) and "args.use_checkpoint_args" in ast.unparse(s.test))
        checks = ast.If(test=node.test, body=[s for s in node.body if isinstance(s, ast.Assert)], orelse=[])
        ast.copy_location(checks, node)
        _compiled["checkpoint_args"] = compile(ast.Module(body=[checks], type_ignores=[]), arguments.__file__, "exec")
    exec(_compiled["checkpoint_args"], {"args": args, "args_defaults": {}})


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


def _rerun_first_step(args) -> None:
    import megatron.training.initialize as initialize
    import megatron.training.training as training
    from megatron.core import rerun_state_machine as rerun

    if "rerun" not in _compiled:
        source = Path(initialize.__file__).read_text(encoding="utf-8")
        call = next(node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Call)
                    and ast.unparse(node.func) == "initialize_rerun_state_machine")
        _compiled["rerun"] = compile(ast.Expression(call), initialize.__file__, "eval")
        wrap = next(s for s in _function("train").body if isinstance(s, ast.If)
                    and ast.unparse(s.test) == "args.hybrid_context_parallel" and "HybridCPDataLoaderWrapper" in ast.unparse(s))
        _compile_statements("hybrid_cp_wrap", [wrap])
    eval(_compiled["rerun"], {**vars(initialize), "args": args, "state_save_func": lambda: {},
                              "state_restore_func": lambda state_dict: None})
    # what build_train_valid_test_data_iterators gives train: the loader's iterator in a RerunDataIterator
    scope = {"args": args, "train_data_iterator": rerun.RerunDataIterator(iter(())),
             "HybridCPDataLoaderWrapper": training.HybridCPDataLoaderWrapper}
    if args.hybrid_context_parallel:
        from megatron.training.arguments import core_transformer_config_from_args

        scope["config"] = core_transformer_config_from_args(args)
    exec(_compiled["hybrid_cp_wrap"], scope)
    # train_step's `while rerun_state_machine.should_run_forward_backward(data_iterator):` begins with this call
    # (what follows it saves the CUDA rng state)
    rerun.get_rerun_state_machine()._sanitize_data_iterators(scope["train_data_iterator"])


def _batch_size_schedule(args) -> None:
    import megatron.core.num_microbatches_calculator as microbatches
    from megatron.core import parallel_state as mpu

    if "schedule_check" not in _compiled:
        loop = next(s for s in ast.walk(_function("train")) if isinstance(s, ast.While)
                    and ast.unparse(s.test) == "iteration < args.train_iters")
        check = next(s for s in loop.body if isinstance(s, ast.If) and "get_num_microbatches() != num_microbatches"
                     in ast.unparse(s.test))
        _compile_statements("schedule_check", _kept([check], lambda s: isinstance(s, ast.Assert)))
    if args.step_batch_size_schedule is None:
        return  # a constant batch size: the number of microbatches never changes
    # the loop's microbatch updates, with `args.consumed_train_samples += dp * micro batch * microbatches` after
    # each iteration (train's batch_size without RL sequence packing); the iterations themselves are not run
    num_microbatches = microbatches.get_num_microbatches()
    consumed = 0
    last_threshold = max(threshold for threshold, _ in microbatches._GLOBAL_NUM_MICROBATCHES_CALCULATOR.schedule)
    for iteration in range(args.train_iters):
        microbatches.update_num_microbatches(consumed, consistency_check=False, verbose=False)
        exec(_compiled["schedule_check"], {"args": args, "iteration": iteration, "num_microbatches": num_microbatches,
                                           "get_num_microbatches": microbatches.get_num_microbatches,
                                           "print_rank_0": lambda *a, **k: None})
        num_microbatches = microbatches.get_num_microbatches()
        microbatches.update_num_microbatches(consumed, consistency_check=True, verbose=False)
        if consumed > last_threshold:
            break  # past the schedule's last threshold nothing changes
        consumed += mpu.get_data_parallel_world_size() * args.micro_batch_size * microbatches.get_num_microbatches()


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


def _rl_inference_model(args) -> None:
    if "rl_inference" not in _compiled:
        function = _function("pretrain")
        init = next(s for s in function.body if isinstance(s, ast.Assign) and ast.unparse(s.targets[0]) == "inference_model")
        block = next(s for s in function.body if isinstance(s, ast.If) and ast.unparse(s.test) == "args.perform_rl_step"
                     and "rl_offload_inference_model_weights_when_idle" in ast.unparse(s))
        force, build, check = block.body
        assert ast.unparse(force.targets[0]) == "force_cp1_inference_model" and "raise ValueError" in ast.unparse(check)
        # the separate inference model's build (a GPU model) stood in by a placeholder object
        stand_in = ast.parse("inference_model = [object()]").body[0]
        built = ast.If(test=build.test, body=[ast.copy_location(stand_in, build)], orelse=[])
        kept = ast.If(test=block.test, body=[force, ast.copy_location(built, build), check], orelse=[])
        _compile_statements("rl_inference", [init, ast.copy_location(kept, block)])
    exec(_compiled["rl_inference"], {"args": args})


def _batch_size_at_start(args) -> None:
    import megatron.core.num_microbatches_calculator as microbatches
    from megatron.core import parallel_state as mpu

    if "batch_at_start" not in _compiled:
        body = _function("setup_model_and_optimizer").body
        first = next(i for i, s in enumerate(body) if isinstance(s, ast.Assign)
                     and ast.unparse(s.targets[0]) == "num_microbatches")
        last = next(i for i, s in enumerate(body) if i > first and isinstance(s, ast.Assert))
        _compile_statements("batch_at_start", body[first:last + 1])
    exec(_compiled["batch_at_start"], {"args": args, "mpu": mpu, "get_num_microbatches": microbatches.get_num_microbatches,
                                       "get_current_global_batch_size": microbatches.get_current_global_batch_size})


def _data_blend(args) -> None:
    from megatron.training.utils import get_blend_and_blend_per_split

    if args.perform_rl_step or args.data_args_path is not None or args.per_split_data_args_path is not None:
        return  # RL builds no data sets; a blend read from a file is not read here
    get_blend_and_blend_per_split(args)


def _valid_data_loaders(args) -> None:
    from megatron.training.datasets.data_samplers import build_pretraining_data_loader

    if "valid_loaders" not in _compiled:
        loop = next(node for node in ast.walk(_function("build_train_valid_test_data_loaders"))
                    if isinstance(node, ast.For) and ast.unparse(node.target) == "valid_d")
        _compile_statements("valid_loaders", [loop])
    if not args.perform_rl_step:  # its enclosing `if args.perform_rl_step: ... else:`
        exec(_compiled["valid_loaders"], {"args": args, "valid_ds": [_valid_data_set(args)], "valid_dataloaders": [],
                                          "build_pretraining_data_loader": build_pretraining_data_loader})


class _StandInDataSet:
    """The provider's data set of one split, as build_pretraining_data_loader reads it: its split and its length."""

    def __init__(self, split, length: int) -> None:
        self.split, self._length = split, length

    def __len__(self) -> int:
        return self._length


def _valid_data_set(args):
    """The validation data set pretrain_gpt.py's provider would hand the loop (step 7 of the docstring), or None."""
    from megatron.core.datasets.blended_megatron_dataset_config import (
        convert_split_vector_to_split_matrix,
        parse_and_normalize_split,
    )
    from megatron.core.datasets.utils import Split
    from megatron.training.training import get_train_valid_test_num_samples
    from megatron.training.utils.common_utils import get_blend_and_blend_per_split

    if args.data_args_path is not None or args.per_split_data_args_path is not None:
        return None  # the blend is read from a file
    if args.full_validation or (not args.skip_train and (args.train_iters is None or args.eval_interval is None)):
        # the whole split; a number of samples update_train_iters decides first; no --eval-interval, which the
        # pinned get_train_valid_test_num_samples divides by (a TypeError; later releases ask for no samples)
        return None
    samples = get_train_valid_test_num_samples()[Split.valid.value]
    blend, blend_per_split = get_blend_and_blend_per_split(args)
    if blend_per_split is not None and any(blend_per_split):
        built = blend_per_split[Split.valid.value] is not None
    elif blend is not None:
        built = convert_split_vector_to_split_matrix(parse_and_normalize_split(args.split))[Split.valid.value] is not None
    else:
        built = True  # BlendedMegatronDatasetConfig: a mock data set, split "1,1,1"
    return _StandInDataSet(Split.valid, samples) if built and samples else None


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


def _grads_saves(args):
    """The first iteration (0-indexed, from 0) at which train_step saves params or wgrads, and the labels,
    from train_step's own `save_params_in_this_iteration = ...` / `save_wgrads_in_this_iteration = ...`."""
    if "grads_saves" not in _compiled:
        body = _function("train_step").body
        kept = [s for s in body if isinstance(s, ast.Assign) and ast.unparse(s.targets[0]) in
                ("save_params_in_this_iteration", "save_wgrads_in_this_iteration")]
        assert len(kept) == 2
        _compile_statements("grads_saves", kept)
    if args.save_params_interval is None and args.save_wgrads_interval is None:
        return None, []
    for iteration in range(0, args.train_iters):  # args.iteration: 0 (no checkpoint loaded here)
        scope = {"args": args, "iteration": iteration}
        exec(_compiled["grads_saves"], scope)
        # train_step saves the wgrads (after forward/backward) before the params (after the optimizer step)
        labels = [label for label, key in (("wgrads", "save_wgrads_in_this_iteration"),
                                           ("params", "save_params_in_this_iteration")) if scope[key]]
        if labels:
            return iteration, labels
    return None, []


def _save_grads(args, iteration, labels) -> None:
    from megatron.training.checkpointing import save_grads

    if args.save is not None:
        return  # past its checks save_grads writes files: not run
    for label in labels:
        save_grads(args.save, {}, iteration + 1, label)  # as _save_state_dict calls it, with no state dict


def _checkpointing_function(name: str) -> tuple[ast.FunctionDef, str]:
    import megatron.training.checkpointing as checkpointing

    if "checkpointing_tree" not in _compiled:
        _compiled["checkpointing_tree"] = ast.parse(Path(checkpointing.__file__).read_text(encoding="utf-8"))
    tree = _compiled["checkpointing_tree"]
    return next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), checkpointing.__file__


def _kept(statements, keep):
    """The statements `keep` accepts, with the bodies of the ifs among them filtered the same way."""
    out = []
    for statement in statements:
        if isinstance(statement, ast.If):
            body, orelse = _kept(statement.body, keep), _kept(statement.orelse, keep)
            if body or orelse:
                node = ast.If(test=statement.test, body=body or [ast.Pass()], orelse=orelse)
                out.append(ast.copy_location(node, statement))
        elif keep(statement):
            out.append(statement)
    return out


def _first_checkpoint(args):
    """(iteration, non_persistent) of the first save checkpoint_and_decide_exit makes, from its own two tests, else
    the save after the loop (pretrain: `args.save and iteration != 0 and iteration % args.save_interval != 0`)."""
    if "checkpoint_tests" not in _compiled:
        function = _function("checkpoint_and_decide_exit")
        persistent = next(s for s in ast.walk(function) if isinstance(s, ast.If)
                          and ast.unparse(s.test).replace("(", "").replace(")", "")
                          == "args.save and args.save_interval and iteration % args.save_interval == 0")
        non_persistent = persistent.orelse[0]
        assert "non_persistent_save_interval" in ast.unparse(non_persistent.test)
        _, filename = _training_source()
        _compiled["checkpoint_tests"] = [compile(ast.Expression(s.test), filename, "eval")
                                         for s in (persistent, non_persistent)]
    persistent, non_persistent = _compiled["checkpoint_tests"]
    for iteration in range(1, args.train_iters + 1):
        scope = {"args": args, "iteration": iteration}
        if eval(persistent, scope):
            return iteration, False
        if eval(non_persistent, scope):
            return iteration, True
    if args.save and args.train_iters % args.save_interval != 0:
        return args.train_iters, False
    return None, False


def _save_checkpoint(args, non_persistent_ckpt: bool) -> None:
    import megatron.training.checkpointing as checkpointing

    if "save_checkpoint" not in _compiled:
        function, filename = _checkpointing_function("save_checkpoint")
        body = function.body
        start = next(i for i, s in enumerate(body) if isinstance(s, ast.Assign)
                     and ast.unparse(s.targets[0]) == "ckpt_type")
        end = next(i for i, s in enumerate(body) if isinstance(s, ast.If) and ast.unparse(s.test) == "args.async_save"
                   and "NotImplementedError" in ast.unparse(s))
        kept = _kept(body[start:end], lambda s: (isinstance(s, ast.Assign) and ast.unparse(s.targets[0]) == "ckpt_type")
                     or isinstance(s, ast.Raise))
        module = ast.fix_missing_locations(ast.Module(body=[*kept, body[end]], type_ignores=[]))
        _compiled["save_checkpoint"] = compile(module, filename, "exec")
    exec(_compiled["save_checkpoint"], {"args": args, "non_persistent_ckpt": non_persistent_ckpt,
                                        "CheckpointType": checkpointing.CheckpointType})


def run(args, world: int) -> None:
    try:
        _checkpoint_args(args)
        _wandb_writer(args, world)
        with LOADER["started"](args, world):  # noqa: F821 - the loader's globals, set on this module before it runs
            _logits_saver(args)
            _batch_size_at_start(args)
            _rl_inference_model(args)
            _data_blend(args)
            _valid_data_loaders(args)
            # pretrain calls train when not --skip-train and `args.do_train and (args.train_iters or 0) > 0`;
            # do_train (a train split with samples) is taken as given: the data sets are not built here
            if not args.skip_train and (args.train_iters or 0) > 0:
                _fault_injector(args)
                _manual_gc(args)
                _rerun_first_step(args)
                first_save, labels = _grads_saves(args)
                checkpoint, non_persistent = _first_checkpoint(args)
                if first_save == 0:  # in the first iteration's train_step, before its training_log
                    _save_grads(args, first_save, labels)
                _first_training_log(args)
                _batch_size_schedule(args)
                # the later of them: train_step's save at 0-indexed iteration i comes before the checkpoint after
                # iteration i + 1 (checkpoint_and_decide_exit's iterations count from 1)
                grads_first = first_save is not None and (checkpoint is None or first_save + 1 <= checkpoint)
                if first_save is not None and first_save != 0 and grads_first:
                    _save_grads(args, first_save, labels)
                if checkpoint is not None:
                    _save_checkpoint(args, non_persistent)
                if first_save is not None and first_save != 0 and not grads_first:
                    _save_grads(args, first_save, labels)
            _first_evaluation(args)
    finally:
        from megatron.core import rerun_state_machine

        rerun_state_machine.destroy_rerun_state_machine()
