"""MG301 rows: what `pretrain` checks from the arguments after the process groups, around the training loop (stage
"training", tests/coverage_loaders/megatron_stages/training.py): the wandb writer, the logits saver, the batch size
schedule, RL's inference model, the data blend and loaders, the fault injector, manual gc, the rerun state machine,
the timers, train_step's grads saves, checkpoint saving, evaluation; and parse_and_validate_args' check of
--use-checkpoint-args, which the stage runs first (stage "validate": Megatron checks it before validate_args)."""

import re

from shardshift.rules.megatron.refusals.base import Refusal
from shardshift.rules.megatron.refusals.validate_a import _dp, _gtp


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


def _saves_grads(v) -> bool:
    """Whether train_step of a fresh run saves params or wgrads: at an iteration i < --train-iters with
    `(i + 1) % interval == 0` (an interval of 0 divides by zero first: not judged)."""
    if not _first_iteration(v):
        return False
    intervals = [v(dest) for dest in ("save_params_interval", "save_wgrads_interval") if v(dest) is not None]
    return any(abs(k) <= v("train_iters") for k in intervals if k != 0)


def _first_checkpoint(v):
    """(iteration, non_persistent) of a fresh run's first checkpoint save: checkpoint_and_decide_exit's tests for
    iterations 1 .. --train-iters (`args.save and args.save_interval and iteration % args.save_interval == 0`, elif
    `args.save and args.non_persistent_save_interval and iteration % args.non_persistent_save_interval == 0`), else
    pretrain's save after the loop (`iteration % args.save_interval != 0`); None without one. A run that may save
    on exit first (--exit-interval, --exit-duration-in-mins, --phase-transition-iterations) is not judged."""
    if not _first_iteration(v) or v("save") is None:
        return None
    if v("exit_interval") or v("exit_duration_in_mins") or v("phase_transition_iterations"):
        return None
    save_interval, non_persistent, iters = v("save_interval"), v("non_persistent_save_interval"), v("train_iters")
    for iteration in range(1, iters + 1):
        if save_interval and iteration % save_interval == 0:
            return iteration, False
        if non_persistent and iteration % non_persistent == 0:
            return iteration, True
    return (iters, False) if iters % save_interval != 0 else None


def _async_save(v) -> bool:
    """args.async_save after validate_args (turned off with a distributed format without
    --use-persistent-ckpt-worker)."""
    if v("ckpt_format") != "torch" and not v("use_persistent_ckpt_worker"):
        return False
    return bool(v("async_save"))


def _blend_refused(words) -> bool:
    """get_blend_from_list's `assert all(is_none)` on a list of an even number of words: `is_none` is one map
    iterator that `any(is_none)` has consumed up to the first weight slot float() refuses, so the assertion fails
    when a later weight slot is a number."""
    if words is None or len(words) % 2 == 1:
        return False
    is_none = []
    for word in words[0::2]:
        try:
            float(word)
            is_none.append(False)
        except ValueError:
            is_none.append(True)
    return any(is_none) and not all(is_none[is_none.index(True) + 1:])


def _validation_sampler(v) -> bool:
    """Whether build_train_valid_test_data_loaders makes a sampler for the validation split with the eval micro batch
    size: not RL, not --full-validation (its sampler takes one sample at a time), a number of validation samples
    (get_train_valid_test_num_samples: evaluation points × --eval-iters × eval global batch) above 0, and a validation
    split the data set config builds: a --valid-data-path among per-split paths; with --data-path, a --split (else
    validate_args' '969, 30, 1') whose validation share is not empty; with neither, the mock data set's even split.
    Not judged: a blend read from a file, --train-samples (update_train_iters decides the iterations first), no
    --eval-interval (0.20's count divides by it; later releases count no validation samples)."""
    if v("perform_rl_step") or v("full_validation") or v("data_args_path") is not None \
            or v("per_split_data_args_path") is not None:
        return False
    if v("skip_train"):
        points = 1
    elif v("train_iters") is None or v("eval_interval") is None:
        return False  # iterations update_train_iters decides; no evaluation points (Megatron after 0.20 counts none)
    else:
        skipped = v("start_eval_at_iter") // v("eval_interval") if v("start_eval_at_iter") is not None else 0
        points = max(0, v("train_iters") // v("eval_interval") + 1 - skipped)
    batch = v("eval_global_batch_size") if v("eval_global_batch_size") is not None else v("global_batch_size")
    if batch is None or points * v("eval_iters") * batch <= 0:
        return False
    if any(v(dest) is not None for dest in ("train_data_path", "valid_data_path", "test_data_path")):
        return v("valid_data_path") is not None
    if v("data_path") is None:
        return True
    shares = [float(share) for share in re.findall(r"[.0-9]+", str(v("split") or "969, 30, 1"))] + [0.0, 0.0, 0.0]
    return sum(shares) > 0 and shares[1] > 0


def _schedule_number(text: str) -> int:
    """StepBatchsizeNumMicroBatchesCalculator._parse_numeric_value."""
    text = text.strip().upper()
    multiplier = {"T": 10**12, "B": 10**9, "M": 10**6, "K": 10**3}.get(text[-1:], 1)
    if multiplier != 1:
        text = text[:-1]
    return int(float(text) * multiplier)


def _schedule(v) -> list[tuple[int, int]]:
    """The --step-batch-size-schedule as the microbatch calculator parses it (thresholds in tokens converted to
    samples by --seq-length); a schedule its own checks refuse raises ValueError (their rows', not judged)."""
    schedule = []
    for entry in str(v("step_batch_size_schedule")).strip().replace(",", " ").split():
        if ":" not in entry:
            raise ValueError(entry)
        threshold, batch = (_schedule_number(part) for part in entry.split(":", 1))
        if v("seq_length") is not None:
            threshold //= v("seq_length")
        schedule.append((threshold, batch))
    schedule.sort(key=lambda entry: entry[0])
    if not schedule or schedule[0][0] != 0 or any(b[0] <= a[0] for a, b in zip(schedule, schedule[1:])) \
            or any(batch <= 0 for _, batch in schedule):
        raise ValueError("a schedule the calculator refuses")
    return schedule


def _microbatches_at_start(v) -> int:
    """get_num_microbatches() of a run that loads no checkpoint: the threshold-0 batch size over micro batch ×
    args.data_parallel_size × gtp_weight_remat_size (what set_global_variables gives the calculator)."""
    return _schedule(v)[0][1] // (v("micro_batch_size") * _dp(v) * _gtp(v))


def _schedule_failure(v) -> str | None:
    """Where train's microbatch updates of a fresh run stop it: "decreases" (train's own check: fewer microbatches
    than the iteration before) or "indivisible" (update_num_microbatches' consistency check: a batch size micro
    batch × data-parallel size does not divide), whichever comes first; None when neither does. The consumed
    samples grow by micro batch × data-parallel size × microbatches each iteration, up to --train-iters (a schedule
    setup_model_and_optimizer refuses at the start is its row's; RL with sequence packing and runs that may exit
    early are not judged)."""
    if v("step_batch_size_schedule") is None or not _first_iteration(v) or v("decrease_batch_size_if_needed"):
        return None
    if v("exit_interval") or v("exit_duration_in_mins") or v("phase_transition_iterations"):
        return None
    schedule, unit = _schedule(v), v("micro_batch_size") * _dp(v) * _gtp(v)

    def batch(consumed):
        return [size for threshold, size in schedule if threshold <= consumed][-1]

    if batch(0) // unit < 1:
        return None
    consumed, microbatches = 0, batch(0) // unit
    for iteration in range(v("train_iters")):
        now = batch(consumed) // unit
        if iteration != 0 and now != microbatches and now <= microbatches:
            return "decreases"
        if batch(consumed) % unit:
            return "indivisible"
        if consumed > schedule[-1][0]:
            return None
        microbatches = now
        consumed += unit * now
    return None


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
    Refusal("megatron/core/num_microbatches_calculator.py:StepBatchsizeNumMicroBatchesCalculator.update:2",
            "step_batch_size_schedule", lambda v: _schedule_failure(v) == "indivisible",
            "update_num_microbatches asserts `current_global_batch_size % micro_batch_times_data_parallel_size == 0`: "
            "current global batch size is not divisible by micro_batch_size * data_parallel_size",
            "give each batch size of the schedule that the run reaches as a multiple of --micro-batch-size × the "
            "data-parallel size", involved=("micro_batch_size",), stage="training"),
    Refusal("megatron/training/training.py:setup_model_and_optimizer:2", "step_batch_size_schedule",
            lambda v: v("step_batch_size_schedule") is not None and v("load") is None
            and not v("decrease_batch_size_if_needed") and _microbatches_at_start(v) < 1,
            "setup_model_and_optimizer asserts `num_microbatches >= 1`: the schedule's batch size at the start is "
            "too small for micro_batch_size * data_parallel_size",
            "start the schedule (its threshold-0 entry) at a batch size of at least --micro-batch-size × the "
            "data-parallel size", involved=("micro_batch_size",), stage="training"),
    Refusal("megatron/training/arguments.py:parse_and_validate_args:1", "use_checkpoint_args",
            lambda v: bool(v("use_checkpoint_args")) and v("load") is None and v("pretrained_checkpoint") is None,
            "parse_and_validate_args, before validate_args, asserts `args.load is not None or "
            "args.pretrained_checkpoint is not None`: --use-checkpoint-args requires --load or "
            "--pretrained-checkpoint argument",
            "add `--load DIR` (or `--pretrained-checkpoint DIR`), or remove `--use-checkpoint-args`", stage="validate"),
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
    Refusal("megatron/training/training.py:pretrain:2", "rl_offload_inference_model_weights_when_idle",
            lambda v: bool(v("perform_rl_step")) and bool(v("rl_offload_inference_model_weights_when_idle"))
            and all(v(dest) is None for dest in (
                "rl_inference_tensor_model_parallel_size", "rl_inference_pipeline_model_parallel_size",
                "rl_inference_expert_model_parallel_size", "rl_inference_expert_tensor_model_parallel_size"))
            and not v("context_parallel_size") > 1,
            "after building the model, pretrain raises ValueError: --rl-offload-inference-model-weights-when-idle "
            "requires a separate inference model",
            "give the inference model its own parallel sizes (`--rl-inference-tensor-model-parallel-size` ...), or "
            "remove `--rl-offload-inference-model-weights-when-idle`", involved=("perform_rl_step",),
            stage="training"),
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
    Refusal("megatron/core/rerun_state_machine.py:RerunStateMachine._sanitize_data_iterators:1",
            "hybrid_context_parallel",
            lambda v: _first_iteration(v) and bool(v("hybrid_context_parallel")) and v("rerun_mode") != "disabled",
            "train wraps the train data iterator for hybrid context parallelism, and the first train_step's rerun "
            "state machine asserts it is a RerunDataIterator: data iterator is not wrapped with RerunDataIterator",
            "add `--rerun-mode disabled`, or remove `--hybrid-context-parallel`", involved=("rerun_mode",),
            stage="training"),
    Refusal("megatron/training/training.py:train:5", "step_batch_size_schedule",
            lambda v: _schedule_failure(v) == "decreases",
            "train asserts `get_num_microbatches() > num_microbatches` when the schedule changes the batch size: "
            "Number of microbatches should not decrease",
            "make the schedule's batch sizes grow (never shrink) with the thresholds the run reaches",
            stage="training"),
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
    Refusal("megatron/training/datasets/data_samplers.py:MegatronPretrainingSampler.__init__:3", "eval_micro_batch_size",
            lambda v: _validation_sampler(v) and v("dataloader_type") in (None, "single")
            and v("eval_micro_batch_size") is not None and v("eval_micro_batch_size") < 0,
            "building the validation data loader, MegatronPretrainingSampler asserts `self.micro_batch_size > 0` on "
            "the eval micro batch size (validate_args checks only --micro-batch-size; a negative eval micro batch "
            "passes its divisibility check)",
            "give a positive `--eval-micro-batch-size`, or leave it out (it defaults to --micro-batch-size)",
            involved=("eval_iters",), stage="training"),
    Refusal("megatron/training/datasets/data_samplers.py:MegatronPretrainingRandomSampler.__init__:2",
            "eval_micro_batch_size",
            lambda v: _validation_sampler(v) and v("dataloader_type") == "cyclic"
            and v("eval_micro_batch_size") is not None and v("eval_micro_batch_size") < 0,
            "building the validation data loader, MegatronPretrainingRandomSampler (--dataloader-type cyclic) asserts "
            "`self.micro_batch_size > 0` on the eval micro batch size (validate_args checks only --micro-batch-size; a "
            "negative eval micro batch passes its divisibility check)",
            "give a positive `--eval-micro-batch-size`, or leave it out (it defaults to --micro-batch-size)",
            involved=("dataloader_type", "eval_iters"), stage="training"),
    Refusal("megatron/training/training.py:evaluate_and_print_results:2", "validation_set_names",
            lambda v: bool(v("validation_set_names")) and not v("multiple_validation_sets") and _evaluates(v),
            "the first evaluation (evaluate_and_print_results) asserts `args.multiple_validation_sets`: "
            "--validation-set-names requires --multiple-validation-sets",
            "add `--multiple-validation-sets` (with `--full-validation`), or remove `--validation-set-names`",
            stage="training"),
    Refusal("megatron/training/checkpointing.py:save_grads:1", "save_params_interval",
            lambda v: _saves_grads(v) and v("save") is None,
            "train_step saves the params or wgrads under --save, and save_grads asserts `save_dir is not None` "
            "(no message)",
            "add `--save DIR` (with `--save-interval`), or remove `--save-params-interval` / "
            "`--save-wgrads-interval`", involved=("save_wgrads_interval",), stage="training"),
    Refusal("megatron/training/checkpointing.py:save_checkpoint:2", "async_save",
            lambda v: _async_save(v) and (_first_checkpoint(v) or (0, True))[1] is False
            and v("ckpt_format") == "torch",
            "the first checkpoint save (save_checkpoint, a legacy checkpoint with --ckpt-format torch) raises "
            "NotImplementedError: Async checkpoint save not implemented for legacy checkpoints",
            "use a distributed `--ckpt-format` (torch_dist, with `--use-persistent-ckpt-worker`), or remove "
            "`--async-save`", involved=("ckpt_format",), stage="training"),
    Refusal("megatron/training/checkpointing.py:save_checkpoint:3", "async_save",
            lambda v: _async_save(v) and (_first_checkpoint(v) or (0, False))[1] is True
            and v("non_persistent_ckpt_type") == "global"
            and v("ckpt_format") not in ("torch_dist", "torch_dcp", "fsdp_dtensor"),
            "the first non-persistent checkpoint save (save_checkpoint, --non-persistent-ckpt-type global) raises "
            "NotImplementedError: Async checkpoint save not implemented for this distributed checkpoint format",
            "use `--ckpt-format torch_dist` (with `--use-persistent-ckpt-worker`), or remove `--async-save`",
            involved=("non_persistent_ckpt_type", "ckpt_format"), stage="training"),
    Refusal("megatron/core/datasets/utils.py:get_blend_from_list:1", "data_path",
            lambda v: not v("perform_rl_step") and v("data_args_path") is None
            and _blend_refused([str(w) for w in v("data_path")] if v("data_path") is not None else None),
            "building the data sets, get_blend_from_list asserts that no weight slot after the first non-number "
            "is a number (`assert all(is_none)`, no message)",
            "write the blend as `WEIGHT PREFIX` pairs (`0.3 corpus_a 0.7 corpus_b`), or the prefixes alone",
            stage="training"),
]
