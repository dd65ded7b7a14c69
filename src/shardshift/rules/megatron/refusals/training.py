"""MG301 rows: the training loop and what it calls: checkpoint saving, evaluation, data loaders and samplers, the fault injector, the logits saver, timers, the vocabulary padding."""

from shardshift.rules.megatron.refused import Refusal


def _trains(v) -> bool:
    """Whether pretrain calls `train`: not --skip-train and `(args.train_iters or 0) > 0` (with --train-samples alone,
    train_iters is computed later: not judged here)."""
    return not v("skip_train") and (v("train_iters") or 0) > 0


def _first_iteration(v) -> bool:
    """Whether train runs a first iteration (and training_log logs it, whatever --log-interval): a fresh run that
    trains (with --load, the checkpoint's iteration may already reach --train-iters: not judged; RL is not judged)."""
    return _trains(v) and v("load") is None and not v("perform_rl_step")


def _evaluates(v) -> bool:
    """Whether pretrain evaluates (args.do_valid, which build_train_valid_test_data_loaders sets to
    `args.full_validation or args.eval_iters > 0`): at --eval-interval in train or after it (a run that may leave
    train early, by --exit-interval or --exit-duration-in-mins, is not judged; RL evaluates otherwise)."""
    return (bool(v("full_validation")) or v("eval_iters") > 0) and not v("perform_rl_step") \
        and v("exit_interval") is None and v("exit_duration_in_mins") is None


def _fault_set_up_at_start(v) -> bool:
    """train's fault injection set-up at its start: --fault-injector-ranks or --fault-injector-num-ranks, without a
    --fault-injector-delay-start-iteration (which moves the set-up to that iteration)."""
    return _trains(v) and (v("fault_injector_ranks") is not None or v("fault_injector_num_ranks") is not None) \
        and v("fault_injector_delay_start_iteration") is None


def _fault_ranks(v) -> list[int]:
    """get_fault_ranks' parse of --fault-injector-ranks (a value int() refuses raises ValueError: not judged)."""
    ranks = v("fault_injector_ranks")
    return [int(r) for r in ranks.split(",")] if "," in ranks else [int(ranks)]


def _logits_saver(v) -> bool:
    """setup_model_and_optimizer builds LogitsSaverHooks with --logits-save-dir (on the last pipeline stage), after its
    first checks (top-k positive, save dtype known) where the row's check comes later."""
    return v("logits_save_dir") is not None


ROWS = [
    Refusal("megatron/training/global_vars.py:_set_wandb_writer:1", "wandb_exp_name",
            lambda v: bool(v("wandb_project")) and v("wandb_exp_name") == "",
            "at start-up, set_global_variables' wandb writer raises ValueError on the last rank: Please specify "
            "the wandb experiment name!",
            "give `--wandb-exp-name NAME`", involved=("wandb_project",), stage="training"),
    Refusal("megatron/training/distillation/logits_saver.py:LogitsSaverHooks.__init__:1", "logits_save_top_k",
            lambda v: _logits_saver(v) and v("logits_save_top_k") <= 0,
            "when setup_model_and_optimizer builds the logits saver, LogitsSaverHooks asserts `k > 0`: Number of "
            "top log-probabilities to save must be positive",
            "give a positive `--logits-save-top-k`", involved=("logits_save_dir",), stage="training"),
    Refusal("megatron/training/distillation/logits_saver.py:LogitsSaverHooks.__init__:4", "logits_save_top_p",
            lambda v: _logits_saver(v) and v("logits_save_top_k") > 0
            and v("logits_save_dtype") in ("fp16", "bf16", "fp32")
            and v("logits_save_top_p") is not None and not 0.0 < v("logits_save_top_p") <= 1.0,
            "when setup_model_and_optimizer builds the logits saver, LogitsSaverHooks raises ValueError: p must be "
            "in (0, 1] or None",
            "give a `--logits-save-top-p` in (0, 1], or leave it out", involved=("logits_save_dir",),
            stage="training"),
    Refusal("megatron/training/distillation/logits_saver.py:LogitsSaverHooks.__init__:5", "logits_save_top_p_min_k",
            lambda v: _logits_saver(v) and v("logits_save_top_k") > 0
            and v("logits_save_dtype") in ("fp16", "bf16", "fp32")
            and (v("logits_save_top_p") is None or 0.0 < v("logits_save_top_p") <= 1.0)
            and v("logits_save_top_p_min_k") < 1,
            "when setup_model_and_optimizer builds the logits saver, LogitsSaverHooks raises ValueError: min_k must "
            "be >= 1",
            "give a `--logits-save-top-p-min-k` of at least 1", involved=("logits_save_dir",), stage="training"),
    Refusal("megatron/core/fault_injector.py:get_fault_ranks:1", "fault_injector_num_ranks",
            lambda v: _fault_set_up_at_start(v) and v("fault_injector_ranks") is not None
            and v("fault_injector_num_ranks") is not None,
            "when train sets up fault injection, get_fault_ranks asserts `config.fault_injector_num_ranks is None`: "
            "Cannot specify both force_ranks and num_ranks",
            "give either `--fault-injector-ranks` or `--fault-injector-num-ranks`",
            involved=("fault_injector_ranks",), stage="training"),
    Refusal("megatron/core/fault_injector.py:get_fault_ranks:2", "fault_injector_ranks",
            lambda v: _fault_set_up_at_start(v) and v("fault_injector_ranks") is not None
            and v("fault_injector_num_ranks") is None
            and not all(0 <= r < v.world() for r in _fault_ranks(v)),
            "when train sets up fault injection, get_fault_ranks asserts each rank is in 0 .. world size - 1: "
            "Fault ranks must be between 0 and the world size - 1",
            "give `--fault-injector-ranks` within the job's ranks", stage="training"),
    Refusal("megatron/training/training.py:train:3", "manual_gc_interval",
            lambda v: _trains(v) and bool(v("manual_gc")) and v("manual_gc_interval") < 0,
            "train asserts `args.manual_gc_interval >= 0`: Manual garbage collection interval should be larger than "
            "or equal to 0",
            "give a `--manual-gc-interval` of 0 or more",
            involved=("manual_gc",), stage="training"),
    Refusal("megatron/core/timers.py:Timers.get_all_timers_string:1", "log_interval",
            lambda v: _first_iteration(v) and not v("log_timers_to_tensorboard") and v("log_interval") < 0,
            "at the first iteration, training_log logs the timers with `normalizer=args.log_interval` and "
            "Timers.get_all_timers_string asserts `normalizer > 0.0`",
            "give a positive `--log-interval`", stage="training"),
    Refusal("megatron/core/timers.py:Timers.write:1", "log_interval",
            lambda v: _first_iteration(v) and bool(v("log_timers_to_tensorboard")) and v("log_interval") < 0,
            "at the first iteration, training_log writes the timers with `normalizer=args.log_interval` and "
            "Timers.write asserts `normalizer > 0.0`",
            "give a positive `--log-interval`", involved=("log_timers_to_tensorboard",), stage="training"),
    Refusal("megatron/training/training.py:build_train_valid_test_data_loaders:2", "multiple_validation_sets",
            lambda v: bool(v("multiple_validation_sets")) and not v("full_validation") and not v("skip_train")
            and not v("perform_rl_step"),
            "building the validation data loaders raises NotImplementedError: --multiple-validation-sets currently "
            "requires --full-validation",
            "add `--full-validation`, or remove `--multiple-validation-sets`", stage="training"),
    Refusal("megatron/training/training.py:evaluate_and_print_results:2", "validation_set_names",
            lambda v: bool(v("validation_set_names")) and not v("multiple_validation_sets") and _evaluates(v),
            "the first evaluation (evaluate_and_print_results) asserts `args.multiple_validation_sets`: "
            "--validation-set-names requires --multiple-validation-sets",
            "add `--multiple-validation-sets` (with `--full-validation`), or remove `--validation-set-names`",
            stage="training"),
]
