"""MG301 rows: what `pretrain` checks from its start-up to the learning-rate schedule, in the order it meets them: the
microbatch calculator (`set_global_variables`), `initialize_model_parallel`'s checks that need more than the sizes,
the random seed (`_set_random_seed`), the DDP wrapper's config (`get_megatron_ddp_config`), the optimizer config
(`get_megatron_optimizer_config`), `get_megatron_optimizer`'s checks, the grad scaler and the learning-rate and
weight-decay scheduler (`get_optimizer_param_scheduler`). The checks run before the model is built (the first
three) are of stage "startup"."""

from shardshift.rules.megatron.refusals.base import Refusal
from shardshift.rules.megatron.refusals.validate_a import _dp, _global_batch, _gtp

DDP = "megatron/core/distributed/distributed_data_parallel_config.py:DistributedDataParallelConfig.__post_init__:"
MICRO = "megatron/core/num_microbatches_calculator.py:"
OPT = "megatron/core/optimizer/optimizer_config.py:OptimizerConfig.__post_init__:"
SCALER = "megatron/core/optimizer/grad_scaler.py:"
SCHED = "megatron/core/optimizer_param_scheduler.py:OptimizerParamScheduler.__init__:"
STEP = "megatron/core/num_microbatches_calculator.py:StepBatchsizeNumMicroBatchesCalculator."


# ------------------------------------------------------------------------------------ the microbatch calculator


def _schedule_entries(v):
    """--step-batch-size-schedule's entries as _parse_schedule splits them (None without a schedule)."""
    schedule = v("step_batch_size_schedule")
    if schedule is None:
        return None
    return str(schedule).strip().replace(",", " ").split()


def _number(text: str) -> int:
    """StepBatchsizeNumMicroBatchesCalculator._parse_numeric_value."""
    text, multiplier = text.strip().upper(), 1
    for suffix, factor in (("T", 10**12), ("B", 10**9), ("M", 10**6), ("K", 10**3)):
        if text.endswith(suffix):
            text, multiplier = text[:-1], factor
            break
    return int(float(text) * multiplier)


def _schedule(v):
    """The parsed schedule, (threshold in samples, batch size) sorted by threshold; None where an entry has no ':'
    (that check fails first) or there is no schedule. --seq-length divides the thresholds (tokens)."""
    entries = _schedule_entries(v)
    if entries is None or any(":" not in entry for entry in entries):
        return None
    seq = v("seq_length")
    parsed = []
    for entry in entries:
        threshold, batch = (_number(part) for part in entry.split(":", 1))
        parsed.append((threshold // seq if seq is not None else threshold, batch))
    return sorted(parsed, key=lambda pair: pair[0])


def _step_calculator(v):
    """The step-schedule calculator is built (a schedule, no --decrease-batch-size-if-needed)."""
    return _schedule_entries(v) is not None and not v("decrease_batch_size_if_needed")


def _increasing_fails(v):
    schedule = _schedule(v)
    return bool(schedule) and schedule[0][0] == 0 and \
        any(schedule[i][0] <= schedule[i - 1][0] for i in range(1, len(schedule)))


def _schedule_ordered(v):
    schedule = _schedule(v)
    return bool(schedule) and schedule[0][0] == 0 and \
        all(schedule[i][0] > schedule[i - 1][0] for i in range(1, len(schedule)))


def _expert_gtp(v):
    """expert_gtp_weight_remat_size as validate_args resolves it (resolve_tensor_parallel_weight_shards)."""
    shards = v("expert_tensor_parallel_num_weight_shards")
    return 1 if shards is None else shards // (v("expert_tensor_parallel_size") or v("tensor_model_parallel_size"))


def _hybrid_dp_cp_odd(v):
    """initialize_model_parallel's data-parallel × context-parallel groups have an odd size."""
    return (_dp(v) * v("context_parallel_size")) % 2 != 0


# ------------------------------------------------------------------------------------ the model and optimizer


def _builds_optimizer(v):
    """setup_model_and_optimizer builds the DDP wrapper and the optimizer: not --skip-train, unless an RL step that
    loads the optimizer."""
    return not v("skip_train") or (bool(v("perform_rl_step")) and not v("no_load_optim"))


def _ddp(v):
    """get_megatron_ddp_config builds DistributedDataParallelConfig (not with --use-torch-fsdp2)."""
    return _builds_optimizer(v) and not v("use_torch_fsdp2")


def _reuse_grad_buf(v):
    """args.reuse_grad_buf_for_mxfp8_param_ag after validate_args (off with --use-megatron-fsdp)."""
    return bool(v("reuse_grad_buf_for_mxfp8_param_ag")) and not v("use_megatron_fsdp")


def _grads_in_fp32(v):
    """args.accumulate_allreduce_grads_in_fp32 after validate_args' --bf16 rewrite."""
    given = bool(v("accumulate_allreduce_grads_in_fp32"))
    if v("bf16") and not v("fp16"):
        if v("grad_reduce_in_bf16"):
            return False
        if not given and v("main_grads_dtype") == "fp32":
            return True
    return given


def _adam_or_sgd(v):
    return v("optimizer") in ("adam", "sgd")


def _distributed_optimizer(v):
    """args.use_distributed_optimizer after validate_args: Megatron-FSDP version 1 turns it on, an emerging optimizer
    and --freeze-all-layers turn it off."""
    on = bool(v("use_distributed_optimizer")) or (bool(v("use_megatron_fsdp")) and v("megatron_fsdp_version") != 2)
    return on and _adam_or_sgd(v) and not v("freeze_all_layers")


def _fsdp_v2_optimizer(v):
    """get_megatron_optimizer builds FullyShardedOptimizer: Megatron-FSDP version 2 (validate_args allows it only
    with adam or sgd and without the distributed optimizer)."""
    return _builds_optimizer(v) and bool(v("use_megatron_fsdp")) and v("megatron_fsdp_version") == 2 and \
        _adam_or_sgd(v) and _optimizer_config(v)


def _optimizer_config(v):
    """OptimizerConfig.__post_init__ gets past its precision-aware / dtype checks (to the optimizer's own)."""
    if v("reuse_grad_buf_for_mxfp8_param_ag") and not v("use_megatron_fsdp") and \
            v("overlap_param_gather_with_optimizer_step"):
        return False
    if v("use_precision_aware_optimizer"):
        return False  # the Transformer Engine FusedAdam check: not judged here
    return all(v(d) == "fp32" for d in ("main_grads_dtype", "main_params_dtype", "exp_avg_dtype", "exp_avg_sq_dtype"))


def _dynamic_scaler(v):
    """_get_megatron_optimizer_based_on_param_groups builds DynamicGradScaler (--fp16 without a --loss-scale)."""
    return _builds_optimizer(v) and _adam_or_sgd(v) and _optimizer_config(v) and not v("loss_scale") and \
        bool(v("fp16"))


def _dynamic_scaler_valid_to(v, check: int) -> bool:
    """DynamicGradScaler's checks before `check` (its site number) pass."""
    order = [v("initial_loss_scale") > 0, v("min_loss_scale") > 0, v("min_loss_scale") <= v("initial_loss_scale"),
             v("loss_scale_window") > 0]
    return all(order[:{1: 1, 2: 2, 6: 3, 7: 4}[check]])


# ------------------------------------------------------------------------------------ the scheduler


def _scheduler(v):
    """The OptimizerParamScheduler arguments get_optimizer_param_scheduler computes: (init_lr, max_lr, min_lr,
    warmup steps, decay steps, wsd decay steps, start wd, end wd); None when it builds none (no optimizer, or no
    training length: MG217's)."""
    if not _builds_optimizer(v):
        return None
    batch = _global_batch(v)
    if v("train_iters"):
        decay_iters = v("lr_decay_iters")
        decay = (decay_iters if decay_iters is not None else v("train_iters")) * batch
        wsd = v("lr_wsd_decay_iters")
        wsd = wsd * batch if wsd is not None else None
        fraction = v("lr_warmup_fraction")
        warmup = fraction * decay if fraction is not None else v("lr_warmup_iters") * batch
    elif v("train_samples"):
        decay = v("lr_decay_samples")
        decay = decay if decay is not None else v("train_samples")
        wsd = v("lr_wsd_decay_samples")
        fraction = v("lr_warmup_fraction")
        warmup = fraction * decay if fraction is not None else v("lr_warmup_samples")
    else:
        return None
    if v("weight_decay_incr_style") == "constant":
        start_wd = end_wd = v("weight_decay")
    else:
        start_wd, end_wd = v("start_weight_decay"), v("end_weight_decay")
    return v("lr_warmup_init"), float(v("lr")), v("min_lr"), warmup, decay, wsd, start_wd, end_wd


def _scheduler_to(v, check: int):
    """The scheduler's arguments where its checks before `check` (its site number) pass, else None."""
    s = _scheduler(v)
    if s is None:
        return None
    init_lr, max_lr, min_lr, warmup, decay, wsd, start_wd, end_wd = s
    passes = [min_lr >= 0.0, max_lr >= min_lr, init_lr <= max_lr, decay > 0, warmup < decay,
              v("lr_decay_style") != "WSD" or wsd is not None, start_wd >= 0.0, end_wd >= start_wd]
    return s if all(passes[:check - 1]) else None


def _scheduler_fails(check: int):
    def refused(v):
        s = _scheduler_to(v, check)
        if s is None:
            return False
        init_lr, max_lr, min_lr, warmup, decay, wsd, start_wd, end_wd = s
        return not {1: min_lr >= 0.0, 3: init_lr <= max_lr, 4: decay > 0, 5: warmup < decay,
                    6: v("lr_decay_style") != "WSD" or wsd is not None, 7: start_wd >= 0.0,
                    8: end_wd >= start_wd}[check]
    return refused


_SCHEDULE_FIX = "give --step-batch-size-schedule as space- or comma-separated THRESHOLD:BATCH_SIZE pairs (thresholds " \
    "in tokens, the first 0, increasing by at least --seq-length; batch sizes above 0)"

ROWS = [
    Refusal(MICRO + "_build_num_microbatches_calculator:1", "decrease_batch_size_if_needed",
            lambda v: _schedule_entries(v) is not None and bool(v("decrease_batch_size_if_needed")),
            "it raises ValueError: Cannot specify both --step-batch-size-schedule and --decrease-batch-size-if-needed",
            "remove --decrease-batch-size-if-needed (give the schedule's batch sizes as multiples of micro batch × "
            "data-parallel size)", involved=("step_batch_size_schedule",), stage="startup"),
    Refusal(STEP + "_parse_schedule:1", "step_batch_size_schedule",
            lambda v: _step_calculator(v) and any(":" not in e for e in _schedule_entries(v)),
            "it raises ValueError: Invalid schedule entry. Expected format: \"THRESHOLD:BATCH_SIZE\"",
            _SCHEDULE_FIX, stage="startup"),
    Refusal(STEP + "_validate_schedule:1", "step_batch_size_schedule",
            lambda v: _step_calculator(v) and _schedule(v) == [],
            "it asserts `len(self.schedule) > 0`: schedule must have at least one entry",
            _SCHEDULE_FIX, stage="startup"),
    Refusal(STEP + "_validate_schedule:2", "step_batch_size_schedule",
            lambda v: _step_calculator(v) and bool(_schedule(v)) and _schedule(v)[0][0] != 0,
            "it asserts `self.schedule[0][0] == 0`: first schedule entry must have threshold 0 (in samples: the "
            "tokens divided by --seq-length)",
            _SCHEDULE_FIX, involved=("seq_length",), stage="startup"),
    Refusal(STEP + "_validate_schedule:3", "step_batch_size_schedule",
            lambda v: _step_calculator(v) and _increasing_fails(v),
            "it asserts the thresholds increase: schedule thresholds must be strictly increasing (in samples: the "
            "tokens divided by --seq-length)",
            _SCHEDULE_FIX, involved=("seq_length",), stage="startup"),
    Refusal(STEP + "_validate_schedule:4", "step_batch_size_schedule",
            lambda v: _step_calculator(v) and _schedule_ordered(v) and any(b <= 0 for _, b in _schedule(v)),
            "it asserts `batch_size > 0`: batch size must be positive",
            _SCHEDULE_FIX, stage="startup"),
    Refusal("megatron/core/parallel_state.py:initialize_model_parallel:5", "num_distributed_optimizer_instances",
            lambda v: (_gtp(v) > 1 or _expert_gtp(v) > 1) and v("num_distributed_optimizer_instances") > 1,
            "it asserts `not ((gtp_remat_size > 1 or expert_gtp_remat_size > 1) and "
            "num_distributed_optimizer_instances > 1)`: GTP_remat with num_distributed_optimizer_instances > 1 is not "
            "yet supported.",
            "use one distributed-optimizer instance with GTP weight rematerialisation",
            involved=("tensor_parallel_num_weight_shards",), stage="startup"),
    Refusal("megatron/core/parallel_state.py:initialize_model_parallel:15", "hybrid_context_parallel",
            lambda v: bool(v("hybrid_context_parallel")) and _hybrid_dp_cp_odd(v),
            "it asserts `len(ranks_with_cp) % 2 == 0`: Hybrid context parallel requires an even number of ranks (in "
            "each data-parallel × context-parallel group)",
            "choose sizes that leave an even data-parallel × context-parallel group, or remove "
            "--hybrid-context-parallel", involved=("context_parallel_size",), stage="startup"),
    Refusal("megatron/training/initialize.py:_set_random_seed:1", "seed",
            lambda v: v("seed") is None or v("seed") <= 0,
            "it raises ValueError: Seed should be a positive integer.",
            "give a --seed above 0", stage="startup"),
    Refusal(DDP + "2", "reuse_grad_buf_for_mxfp8_param_ag",
            lambda v: _ddp(v) and _reuse_grad_buf(v) and not v("fp8_param_gather"),
            "it asserts `self.fp8_param_gather`: Reuse grad buffer only when keeping params in MXFP8.",
            "add --fp8-param-gather, or remove --reuse-grad-buf-for-mxfp8-param-ag", involved=("fp8_param_gather",),
            stage="optimizer"),
    Refusal(DDP + "4", "ddp_param_name_patterns_for_fp32_local_accumulation",
            lambda v: _ddp(v) and not (_reuse_grad_buf(v) and not v("fp8_param_gather")) and
            len(v("ddp_param_name_patterns_for_fp32_local_accumulation") or ()) > 0 and _grads_in_fp32(v),
            "it asserts `not self.grad_reduce_in_fp32`: Only need to explicitly specify param_name patterns for FP32 "
            "local accumulation if .main_grads aren't already in FP32 (with --bf16 validate_args turns "
            "--accumulate-allreduce-grads-in-fp32 on unless --grad-reduce-in-bf16 or a --main-grads-dtype other "
            "than fp32)",
            "remove --ddp-param-name-patterns-for-fp32-local-accumulation, or reduce gradients in bf16 "
            "(--grad-reduce-in-bf16)", involved=("accumulate_allreduce_grads_in_fp32",), stage="optimizer"),
    Refusal(DDP + "5", "ddp_num_buckets",
            lambda v: _ddp(v) and not (_reuse_grad_buf(v) and not v("fp8_param_gather")) and
            not (len(v("ddp_param_name_patterns_for_fp32_local_accumulation") or ()) > 0 and _grads_in_fp32(v)) and
            v("ddp_num_buckets") is not None and v("ddp_bucket_size") is not None,
            "it asserts `self.bucket_size is None`: Cannot specify both num_buckets and bucket_size",
            "give --ddp-num-buckets or --ddp-bucket-size, not both", involved=("ddp_bucket_size",), stage="optimizer"),
    Refusal(DDP + "6", "ddp_num_buckets",
            lambda v: _ddp(v) and not (_reuse_grad_buf(v) and not v("fp8_param_gather")) and
            not (len(v("ddp_param_name_patterns_for_fp32_local_accumulation") or ()) > 0 and _grads_in_fp32(v)) and
            v("ddp_num_buckets") is not None and v("ddp_bucket_size") is None and v("ddp_num_buckets") <= 0,
            "it asserts `self.num_buckets > 0`: num_buckets must be greater than 0",
            "give a --ddp-num-buckets of at least 1, or remove it", stage="optimizer"),
    Refusal(OPT + "1", "reuse_grad_buf_for_mxfp8_param_ag",
            lambda v: _builds_optimizer(v) and _reuse_grad_buf(v) and bool(v("overlap_param_gather_with_optimizer_step")),
            "it raises ValueError: overlap_param_gather_with_optimizer_step is not supported with "
            "reuse_grad_buf_for_mxfp8_param_ag.",
            "remove --reuse-grad-buf-for-mxfp8-param-ag or --overlap-param-gather-with-optimizer-step",
            involved=("overlap_param_gather_with_optimizer_step",), stage="optimizer"),
    Refusal(OPT + "2", "use_precision_aware_optimizer",
            lambda v: _builds_optimizer(v) and not (_reuse_grad_buf(v) and v("overlap_param_gather_with_optimizer_step"))
            and bool(v("use_precision_aware_optimizer")) and v("optimizer") != "adam",
            "it asserts `self.optimizer == 'adam'`: --use-precision-aware-optimizer only supported with adam",
            "use --optimizer adam, or remove --use-precision-aware-optimizer", involved=("optimizer",),
            stage="optimizer"),
    *(Refusal(OPT + str(site), dest,
              lambda v, dest=dest, before=before: _builds_optimizer(v) and
              not (_reuse_grad_buf(v) and v("overlap_param_gather_with_optimizer_step")) and
              not v("use_precision_aware_optimizer") and all(v(d) == "fp32" for d in before) and v(dest) != "fp32",
              f"it asserts `self.{dest} == torch.float32`: {dest} can only be fp32 when not using precision-aware "
              "optimizer",
              f"remove {flag} (or add --use-precision-aware-optimizer with the distributed optimizer)",
              involved=("use_precision_aware_optimizer",), stage="optimizer")
      for site, dest, flag, before in (
          (5, "main_grads_dtype", "--main-grads-dtype", ()),
          (6, "main_params_dtype", "--main-params-dtype", ("main_grads_dtype",)),
          (7, "exp_avg_dtype", "--exp-avg-dtype", ("main_grads_dtype", "main_params_dtype")),
          (8, "exp_avg_sq_dtype", "--exp-avg-sq-dtype", ("main_grads_dtype", "main_params_dtype", "exp_avg_dtype")))),
    Refusal("megatron/core/optimizer/__init__.py:get_megatron_optimizer:3", "use_precision_aware_optimizer",
            lambda v: _builds_optimizer(v) and bool(v("use_precision_aware_optimizer")) and v("optimizer") == "adam"
            and not (_reuse_grad_buf(v) and v("overlap_param_gather_with_optimizer_step"))
            and not _distributed_optimizer(v) and not (v("use_megatron_fsdp") and v("megatron_fsdp_version") == 2),
            "it raises ValueError: --use-precision-aware-optimizer only supported with distributed optimizer",
            "add --use-distributed-optimizer, or remove --use-precision-aware-optimizer", stage="optimizer"),
    Refusal(SCALER + "MegatronGradScaler.__init__:1", "loss_scale",
            lambda v: _builds_optimizer(v) and _adam_or_sgd(v) and _optimizer_config(v) and
            bool(v("fp16") or v("bf16") or _distributed_optimizer(v)) and
            ((bool(v("loss_scale")) and v("loss_scale") <= 0) or
             (not v("loss_scale") and bool(v("fp16")) and v("initial_loss_scale") <= 0)),
            "it asserts `initial_scale > 0.0` building the grad scaler: the static --loss-scale, or with --fp16 and "
            "dynamic scaling --initial-loss-scale, must be above 0",
            "give a --loss-scale above 0 (or none, for dynamic scaling) and an --initial-loss-scale above 0",
            stage="optimizer"),
    *(Refusal(SCALER + f"DynamicGradScaler.__init__:{site}", dest,
              lambda v, site=site, check=check: _dynamic_scaler(v) and _dynamic_scaler_valid_to(v, site) and check(v),
              says, fix, involved=involved, stage="optimizer")
      for site, dest, check, says, fix, involved in (
          (1, "min_loss_scale", lambda v: v("min_loss_scale") <= 0,
           "it asserts `min_scale > 0.0` building the dynamic grad scaler", "give a --min-loss-scale above 0",
           ("fp16",)),
          (2, "min_loss_scale", lambda v: v("min_loss_scale") > v("initial_loss_scale"),
           "it asserts `min_scale <= initial_scale` building the dynamic grad scaler",
           "give a --min-loss-scale at most --initial-loss-scale", ("initial_loss_scale", "fp16")),
          (6, "loss_scale_window", lambda v: v("loss_scale_window") <= 0,
           "it asserts `growth_interval > 0` building the dynamic grad scaler", "give a --loss-scale-window above 0",
           ("fp16",)),
          (7, "hysteresis", lambda v: v("hysteresis") <= 0,
           "it asserts `hysteresis > 0` building the dynamic grad scaler", "give a --hysteresis above 0",
           ("fp16",)))),
    Refusal("megatron/core/optimizer/distrib_optimizer.py:DistributedOptimizer.__init__:2", "optimizer",
            lambda v: _builds_optimizer(v) and v("optimizer") == "sgd" and _distributed_optimizer(v)
            and not v("optimizer_cpu_offload") and not v("use_precision_aware_optimizer"),
            "it asserts the optimizer it wraps is Adam, HybridDeviceOptimizer or has an init_state_fn: Only Adam, "
            "HybridDeviceOptimizer, and optimizers with an init_state_fn (e.g., Lion) are currently supported, due to "
            "checkpointing requirements. (the distributed optimizer, which Megatron-FSDP version 1 turns on, does not "
            "take SGD)",
            "use --optimizer adam with the distributed optimizer, or remove --use-distributed-optimizer",
            involved=("use_distributed_optimizer",), stage="optimizer"),
    Refusal("megatron/core/optimizer/fully_sharded_optimizer.py:FullyShardedOptimizer._validate_config:3", "loss_scale",
            lambda v: _fsdp_v2_optimizer(v) and v("loss_scale") is not None,
            "it raises ValueError: MFSDP v2 does not currently support loss scaling.",
            "remove --loss-scale with --megatron-fsdp-version 2 (bf16 needs none)",
            involved=("megatron_fsdp_version",), stage="optimizer"),
    Refusal("megatron/core/optimizer/fully_sharded_optimizer.py:FullyShardedOptimizer._validate_config:4", "fp16",
            lambda v: _fsdp_v2_optimizer(v) and v("loss_scale") is None and bool(v("fp16")),
            "it raises ValueError: MFSDP v2 does not currently support FP16 training because FP16 triggers loss "
            "unscale.",
            "use --bf16 with --megatron-fsdp-version 2", involved=("megatron_fsdp_version",), stage="optimizer"),
    Refusal(SCHED + "1", "min_lr", _scheduler_fails(1),
            "it asserts `self.min_lr >= 0.0` building the learning-rate scheduler", "give a --min-lr of 0 or above",
            stage="optimizer"),
    Refusal(SCHED + "3", "lr_warmup_init", _scheduler_fails(3),
            "it asserts `self.init_lr <= self.max_lr` building the learning-rate scheduler",
            "give a --lr-warmup-init at most --lr", involved=("lr",), stage="optimizer"),
    Refusal(SCHED + "4", "lr_decay_iters", _scheduler_fails(4),
            "it asserts `self.lr_decay_steps > 0` building the learning-rate scheduler (--lr-decay-iters × the global "
            "batch, or --lr-decay-samples; --train-iters / --train-samples when not given)",
            "give a --lr-decay-iters (or --lr-decay-samples) above 0, or none",
            stage="optimizer"),
    Refusal(SCHED + "5", "lr_warmup_iters", _scheduler_fails(5),
            "it asserts `self.lr_warmup_steps < self.lr_decay_steps` building the learning-rate scheduler (the "
            "warmup, --lr-warmup-iters / --lr-warmup-samples / --lr-warmup-fraction, must end before the decay does: "
            "--lr-decay-iters / --lr-decay-samples, else --train-iters / --train-samples)",
            "give a warmup shorter than the decay", involved=("lr_decay_iters",),
            stage="optimizer"),
    Refusal(SCHED + "6", "lr_decay_style", _scheduler_fails(6),
            "it asserts `self.wsd_decay_steps is not None` building the learning-rate scheduler: WSD needs "
            "--lr-wsd-decay-iters (iteration-based) or --lr-wsd-decay-samples (sample-based)",
            "add --lr-wsd-decay-iters (or --lr-wsd-decay-samples with --train-samples)", stage="optimizer"),
    Refusal(SCHED + "7", "start_weight_decay", _scheduler_fails(7),
            "it asserts `self.start_wd >= 0.0` building the learning-rate scheduler (--start-weight-decay, or "
            "--weight-decay with --weight-decay-incr-style constant)",
            "give a weight decay of 0 or above", stage="optimizer"),
    Refusal(SCHED + "8", "end_weight_decay", _scheduler_fails(8),
            "it asserts `self.end_wd >= self.start_wd` building the learning-rate scheduler",
            "give an --end-weight-decay at least --start-weight-decay",
            involved=("start_weight_decay", "weight_decay_incr_style"), stage="optimizer"),
    Refusal(SCHED + "9", "override_opt_param_scheduler",
            lambda v: _scheduler_to(v, 9) is not None and bool(v("override_opt_param_scheduler")) and
            bool(v("use_checkpoint_opt_param_scheduler")),
            "it asserts `not self.use_checkpoint_opt_param_scheduler`: both override and use-checkpoint are set.",
            "remove --override-opt-param-scheduler or --use-checkpoint-opt-param-scheduler",
            involved=("use_checkpoint_opt_param_scheduler",), stage="optimizer"),
]
