"""Megatron rules: the training setup (MG201-MG229) — precision, data-parallel overlap and sharding
(distributed optimizer, PyTorch FSDP2, Megatron-FSDP), settings Megatron silently ignores or turns off,
batch schedule, run length and learning-rate schedule, positions, activation recomputation and offloading,
checkpoint format and intervals, weight-decay schedule.

Each rule states what Megatron-LM itself does with the arguments (../shared/reference/megatron.md §2,
checked against Megatron-LM's `validate_args` in megatron/training/arguments.py, `TransformerConfig.__post_init__`
in megatron/core/transformer/transformer_config.py and megatron/training/training.py). A value the script
decides at run time is never judged, nor is a flag's absence when an unresolved splice (`$EXTRA_ARGS`) may
supply it, nor anything `--use-checkpoint-args` may replace from a checkpoint, nor a launch that reads its
arguments from `--yaml-cfg` (which skips validate_args)."""

from __future__ import annotations

from typing import Any, Iterable

from shardshift.rules.base import Context, Finding, Related
from shardshift.rules.megatron.base import Flags, MegatronRule

UNKNOWN = object()  # a value that cannot be decided from the arguments

# load_args_from_checkpoint (megatron/training/checkpointing.py) with --use-checkpoint-args: always replaced ...
FROM_CHECKPOINT = frozenset({
    "tensor_model_parallel_size", "pipeline_model_parallel_size", "expert_model_parallel_size",
    "untie_embeddings_and_output_weights", "position_embedding_type", "num_experts",
})
# ... or filled in when not given (only for flags whose default is None: --ckpt-format's is not)
FROM_CHECKPOINT_WHEN_UNSET = frozenset({
    "num_layers", "seq_length", "max_position_embeddings", "num_layers_per_virtual_pipeline_stage",
    "hybrid_layer_pattern",
})

VALIDATE = "validate_args stops the launch before training starts"
CONFIG = "TransformerConfig raises ValueError when the model config is built, before training starts"


class Args:
    """The values Megatron's validate_args sees, or UNKNOWN when the arguments do not decide them."""

    def __init__(self, flags: Flags) -> None:
        self.flags = flags
        self.open = flags.spliced
        checkpoint = self.raw("use_checkpoint_args")
        self.from_checkpoint = checkpoint is UNKNOWN or bool(checkpoint)

    def raw(self, dest: str) -> Any:
        flags = self.flags
        if flags.undecided(dest):
            return UNKNOWN
        if not flags.given(dest):
            if self.open or (flags.unknown_program is not None and not flags.table.by_dest.get(dest)):
                return UNKNOWN  # a splice may give it; a parser read in part may define it, with its own default
            return flags.default(dest)
        return flags.get(dest)

    def __call__(self, dest: str) -> Any:
        if self.from_checkpoint and (dest in FROM_CHECKPOINT or
                                     (dest in FROM_CHECKPOINT_WHEN_UNSET and not self.flags.given(dest))):
            return UNKNOWN
        return self.raw(dest)

    def on(self, dest: str) -> bool | None:
        """A switch's value: True / False, None when not decided."""
        value = self(dest)
        return None if value is UNKNOWN else bool(value)

    def granularity(self) -> tuple[Any, str | None]:
        """The recompute granularity after validate_args (`--recompute-activations` means selective),
        and the dest that set it."""
        activations = self.on("recompute_activations")
        if activations is None:
            return UNKNOWN, None
        if activations:
            return "selective", "recompute_activations"
        return self("recompute_granularity"), "recompute_granularity"


def known(*values: Any) -> bool:
    return all(v is not UNKNOWN for v in values)


class TrainingRule(MegatronRule):
    """Base of the training-setup rules: Megatron-LM launches whose arguments go through validate_args."""

    def check_flags(self, flags: Flags, context: Context) -> Iterable[Finding]:
        if flags.arguments.dialect != "megatron-lm":
            return ()  # Megatron-DeepSpeed has its own validate_args
        if flags.given("yaml_cfg") or flags.get("checkpoint_activations"):
            return ()  # --yaml-cfg skips validate_args; --checkpoint-activations exits before these checks
        return self.judge(Args(flags), flags, context)

    def judge(self, args: Args, flags: Flags, context: Context) -> Iterable[Finding]:
        raise NotImplementedError

    def also_each(self, flags: Flags, *dests: str) -> list[Related]:
        """The places of the other flags involved (those given)."""
        out: list[Related] = []
        for dest in dests:
            out.extend(self.also(flags, dest))
        return out


# --------------------------------------------------------------------------------------------- precision


class Fp16WithBf16(TrainingRule):
    """`--fp16` and `--bf16` together.

    ## What it does
    Reports a launch that passes both `--fp16` and `--bf16`.

    ## Why is this bad
    Megatron's validate_args asserts that only one is set (`assert not args.bf16`), so the launch
    stops before training starts, after the job got its GPUs.

    ## Example
    ```sh
    torchrun ... pretrain_gpt.py ... --fp16 --bf16
    ```

    ## Use instead
    ```sh
    torchrun ... pretrain_gpt.py ... --bf16
    ```
    """

    code = "MG201"
    name = "fp16-with-bf16"
    severity = "error"

    def judge(self, args, flags, context):
        if args.on("fp16") and args.on("bf16"):
            yield self.at(flags, "fp16",
                          f"{flags.spelled('fp16')} and {flags.spelled('bf16')} are both set: {VALIDATE} "
                          "(it asserts `not args.bf16`); keep one of them (--bf16 on Ampere or newer GPUs)",
                          related=self.also(flags, "bf16"))


class Fp8ParamGatherWithoutShardedParameters(TrainingRule):
    """`--fp8-param-gather` without a distributed optimizer or FSDP.

    ## What it does
    Reports `--fp8-param-gather` when none of `--use-distributed-optimizer`, `--use-torch-fsdp2` and
    `--use-megatron-fsdp` is set.

    ## Why is this bad
    FP8 parameter all-gather only exists where parameters are gathered: validate_args asserts
    "--fp8-param-gather only supported with distributed optimizer, torch fsdp2, megatron fsdp, or
    inference mode" and the launch stops before training.

    ## Example
    ```sh
    torchrun ... pretrain_gpt.py ... --bf16 --fp8-format hybrid --fp8-param-gather
    ```

    ## Use instead
    ```sh
    torchrun ... pretrain_gpt.py ... --bf16 --fp8-format hybrid --fp8-param-gather --use-distributed-optimizer
    ```
    """

    code = "MG202"
    name = "fp8-param-gather-without-sharded-parameters"
    severity = "error"

    def judge(self, args, flags, context):
        if not args.on("fp8_param_gather"):
            return
        sharded = [args.on(d) for d in ("use_distributed_optimizer", "use_torch_fsdp2", "use_megatron_fsdp")]
        if None in sharded or any(sharded):
            return
        yield self.at(flags, "fp8_param_gather",
                      f"{flags.spelled('fp8_param_gather')} without a distributed optimizer or FSDP: {VALIDATE} "
                      "(\"--fp8-param-gather only supported with distributed optimizer, torch fsdp2, megatron fsdp, "
                      "or inference mode\"); add --use-distributed-optimizer",
                      fix="--use-distributed-optimizer")


class Fp4WithFp8(TrainingRule):
    """`--fp4-format` together with `--fp8-format`.

    ## What it does
    Reports a launch that sets both an FP4 and an FP8 format.

    ## Why is this bad
    validate_args raises ValueError "--fp4-format and --fp8-format cannot be used simultaneously"
    and the launch stops before training.

    ## Example
    ```sh
    torchrun ... pretrain_gpt.py ... --bf16 --fp8-format hybrid --fp4-format e2m1
    ```

    ## Use instead
    ```sh
    torchrun ... pretrain_gpt.py ... --bf16 --fp4-format e2m1
    ```
    """

    code = "MG203"
    name = "fp4-with-fp8"
    severity = "error"

    def judge(self, args, flags, context):
        fp4, fp8 = args("fp4"), args("fp8")
        if known(fp4, fp8) and fp4 and fp8:
            yield self.at(flags, "fp4",
                          f"{flags.spelled('fp4')} and {flags.spelled('fp8')} are both set: {VALIDATE} (ValueError "
                          "\"--fp4-format and --fp8-format cannot be used simultaneously\"); choose one of them",
                          related=self.also(flags, "fp8"))


class ParamGatherWithoutItsFormat(TrainingRule):
    """`--fp8-param-gather` without `--fp8-format`, or `--fp4-param-gather` without `--fp4-format`.

    ## What it does
    Reports a low-precision parameter gather without the matching low-precision format.

    ## Why is this bad
    Without FP4, validate_args raises ValueError "--fp4-param-gather must be used together with
    --fp4-format". Without FP8, TransformerConfig raises ValueError "fp8_param must be used together
    with fp8 mode" when the model config is built. Either way the launch stops before training.

    ## Example
    ```sh
    torchrun ... pretrain_gpt.py ... --bf16 --use-distributed-optimizer --fp8-param-gather
    ```

    ## Use instead
    ```sh
    torchrun ... pretrain_gpt.py ... --bf16 --use-distributed-optimizer --fp8-format hybrid --fp8-param-gather
    ```
    """

    code = "MG204"
    name = "param-gather-without-its-format"
    severity = "error"

    def judge(self, args, flags, context):
        if args.on("fp4_param_gather") and args("fp4") is None:
            yield self.at(flags, "fp4_param_gather",
                          f"{flags.spelled('fp4_param_gather')} without --fp4-format: {VALIDATE} (ValueError "
                          "\"--fp4-param-gather must be used together with --fp4-format\"); add --fp4-format e2m1",
                          fix="--fp4-format e2m1")
        if args.on("fp8_param_gather") and args("fp8") is None:
            if args.on("use_torch_fsdp2") is not False:
                return  # with FSDP2, validate_args may turn fp8_param_gather off first (depends on the TE version)
            yield self.at(flags, "fp8_param_gather",
                          f"{flags.spelled('fp8_param_gather')} without --fp8-format: {CONFIG} (\"fp8_param must be "
                          "used together with fp8 mode\"); add --fp8-format (e4m3 or hybrid) or remove the flag")


# ------------------------------------------------------------------------- data-parallel overlap and sharding


def _sharded_optimizer(args: Args) -> bool | None:
    """validate_args' condition for --overlap-param-gather: distributed optimizer, Megatron-FSDP or dist_muon."""
    distopt, mfsdp, optimizer = args.on("use_distributed_optimizer"), args.on("use_megatron_fsdp"), args("optimizer")
    if distopt or mfsdp or optimizer == "dist_muon":
        return True
    if distopt is None or mfsdp is None or optimizer is UNKNOWN:
        return None
    return False


class OverlapParamGatherWithoutShardedOptimizer(TrainingRule):
    """`--overlap-param-gather` without a distributed optimizer.

    ## What it does
    Reports `--overlap-param-gather` when neither `--use-distributed-optimizer` nor
    `--use-megatron-fsdp` is set (nor `--optimizer dist_muon`).

    ## Why is this bad
    Only a sharded optimizer gathers parameters. validate_args asserts "--overlap-param-gather only
    supported with distributed optimizer, megatron fsdp, or dist_muon" and the launch stops.

    ## Example
    ```sh
    torchrun ... pretrain_gpt.py ... --overlap-grad-reduce --overlap-param-gather
    ```

    ## Use instead
    ```sh
    torchrun ... pretrain_gpt.py ... --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather
    ```
    """

    code = "MG205"
    name = "overlap-param-gather-without-sharded-optimizer"
    severity = "error"

    def judge(self, args, flags, context):
        if args.on("overlap_param_gather") and _sharded_optimizer(args) is False:
            yield self.at(flags, "overlap_param_gather",
                          f"{flags.spelled('overlap_param_gather')} without a distributed optimizer: {VALIDATE} "
                          "(\"--overlap-param-gather only supported with distributed optimizer, megatron fsdp, or "
                          "dist_muon\"); add --use-distributed-optimizer", fix="--use-distributed-optimizer")


class OverlapParamGatherWithoutOverlapGradReduce(TrainingRule):
    """`--overlap-param-gather` without `--overlap-grad-reduce`.

    ## What it does
    Reports `--overlap-param-gather` when `--overlap-grad-reduce` is not set.

    ## Why is this bad
    validate_args asserts "Must use --overlap-param-gather with --overlap-grad-reduce" and the
    launch stops before training.

    ## Example
    ```sh
    torchrun ... pretrain_gpt.py ... --use-distributed-optimizer --overlap-param-gather
    ```

    ## Use instead
    ```sh
    torchrun ... pretrain_gpt.py ... --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather
    ```
    """

    code = "MG206"
    name = "overlap-param-gather-without-overlap-grad-reduce"
    severity = "error"

    def judge(self, args, flags, context):
        if args.on("overlap_param_gather") and args.on("overlap_grad_reduce") is False:
            yield self.at(flags, "overlap_param_gather",
                          f"{flags.spelled('overlap_param_gather')} without --overlap-grad-reduce: {VALIDATE} "
                          "(\"Must use --overlap-param-gather with --overlap-grad-reduce\"); add --overlap-grad-reduce",
                          fix="--overlap-grad-reduce")


VPP_DESTS = ("num_layers_per_virtual_pipeline_stage", "num_virtual_stages_per_pipeline_rank",
             "pipeline_model_parallel_layout", "hybrid_layer_pattern", "hybrid_override_pattern")


class OverlapParamGatherWithOptimizerStepRequirements(TrainingRule):
    """`--overlap-param-gather-with-optimizer-step` without what it needs.

    ## What it does
    Reports `--overlap-param-gather-with-optimizer-step` missing one of its requirements, which
    validate_args asserts in this order: `--use-distributed-optimizer`, `--overlap-param-gather`,
    an interleaved pipeline schedule (virtual pipeline stages) and a non-distributed checkpoint
    format (`--ckpt-format torch`; the default `torch_dist` is distributed).

    ## Why is this bad
    The first missing requirement stops the launch in validate_args, e.g.
    "--overlap-param-gather-with-optimizer-step only supported with interleaved pipeline parallelism".

    ## Example
    ```sh
    torchrun ... pretrain_gpt.py ... --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather \\
        --overlap-param-gather-with-optimizer-step
    ```

    ## Use instead
    ```sh
    torchrun ... pretrain_gpt.py ... --pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage 1 \\
        --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather \\
        --overlap-param-gather-with-optimizer-step --ckpt-format torch
    ```
    """

    code = "MG207"
    name = "overlap-param-gather-with-optimizer-step-requirements"
    severity = "error"

    def judge(self, args, flags, context):
        if not args.on("overlap_param_gather_with_optimizer_step"):
            return
        step = "--overlap-param-gather-with-optimizer-step"
        missing = []  # in validate_args' order, with its message
        if args.on("use_distributed_optimizer") is False:  # checked before Megatron-FSDP turns it on
            missing.append(("--use-distributed-optimizer", f"{step} only supported with distributed optimizer"))
        if args.on("overlap_param_gather") is False:
            missing.append(("--overlap-param-gather", f"Must use {step} with --overlap-param-gather"))
        vpp = [args(d) for d in VPP_DESTS]
        if known(*vpp) and all(v is None for v in vpp):
            missing.append(("an interleaved pipeline schedule (--num-layers-per-virtual-pipeline-stage or "
                            "--num-virtual-stages-per-pipeline-rank with --pipeline-model-parallel-size > 1)",
                            f"{step} only supported with interleaved pipeline parallelism"))
        ckpt = args("ckpt_format")
        if known(ckpt) and ckpt != "torch":
            missing.append((f"--ckpt-format torch (--ckpt-format {ckpt} is a distributed checkpoint format)",
                            f"{step} not supported with distributed checkpointing yet"))
        if missing:
            yield self.at(flags, "overlap_param_gather_with_optimizer_step",
                          f"{flags.spelled('overlap_param_gather_with_optimizer_step')} needs "
                          f"{'; '.join(m for m, _ in missing)}: {VALIDATE} (\"{missing[0][1]}\")",
                          related=self.also_each(flags, "ckpt_format"))


class TorchFsdp2Conflict(TrainingRule):
    """A setting that `--use-torch-fsdp2` does not support.

    ## What it does
    With `--use-torch-fsdp2`, reports each setting validate_args rejects: pipeline parallelism,
    expert parallelism, `--use-distributed-optimizer`, gradient accumulation fusion (on by default:
    pass `--no-gradient-accumulation-fusion`), a checkpoint format other than `torch_dist` or
    `torch_dcp`, tied embeddings (pass `--untie-embeddings-and-output-weights`) and `--fp16`.
    Its other conditions (PyTorch >= 2.4, `CUDA_DEVICE_MAX_CONNECTIONS` not 1) depend on the
    machine, not on the arguments, and are not checked.

    ## Why is this bad
    Each one stops the launch in validate_args with an assertion such as "--use-torch-fsdp2 is
    not supported with pipeline parallelism".

    ## Example
    ```sh
    torchrun ... pretrain_gpt.py ... --bf16 --use-torch-fsdp2 --pipeline-model-parallel-size 2
    ```

    ## Use instead
    ```sh
    torchrun ... pretrain_gpt.py ... --bf16 --use-torch-fsdp2 --untie-embeddings-and-output-weights \\
        --no-gradient-accumulation-fusion
    ```
    """

    code = "MG208"
    name = "torch-fsdp2-conflict"
    severity = "error"

    def judge(self, args, flags, context):
        if not args.on("use_torch_fsdp2"):
            return
        fsdp2 = flags.spelled("use_torch_fsdp2")
        here = self.also(flags, "use_torch_fsdp2")
        pp, ep = args("pipeline_model_parallel_size"), args("expert_model_parallel_size")
        if known(pp) and isinstance(pp, int) and pp != 1:
            yield self.at(flags, "pipeline_model_parallel_size",
                          f"{fsdp2} with pipeline parallel size {pp}: {VALIDATE} (\"--use-torch-fsdp2 is not "
                          "supported with pipeline parallelism\"); use pipeline parallel size 1",
                          fix="1", related=here)
        if known(ep) and isinstance(ep, int) and ep != 1:
            yield self.at(flags, "expert_model_parallel_size",
                          f"{fsdp2} with expert parallel size {ep}: {VALIDATE} (\"--use-torch-fsdp2 is not "
                          "supported with expert parallelism\"); use expert parallel size 1", fix="1", related=here)
        if args.on("use_distributed_optimizer"):
            yield self.at(flags, "use_distributed_optimizer",
                          f"{fsdp2} with {flags.spelled('use_distributed_optimizer')}: {VALIDATE} (\"--use-torch-"
                          "fsdp2 is not supported with MCore's distributed optimizer\"); FSDP2 already shards the "
                          "optimizer state, remove --use-distributed-optimizer", related=here)
        if args.on("gradient_accumulation_fusion"):
            yield self.at(flags, "use_torch_fsdp2",
                          f"{fsdp2} with gradient accumulation fusion, which is on unless "
                          "--no-gradient-accumulation-fusion is given: "
                          f"{VALIDATE} (\"--use-torch-fsdp2 is not supported with gradient accumulation fusion\"); "
                          "add --no-gradient-accumulation-fusion", fix="--no-gradient-accumulation-fusion")
        ckpt = args("ckpt_format")
        if known(ckpt) and ckpt not in ("torch_dist", "torch_dcp"):
            yield self.at(flags, "ckpt_format",
                          f"{fsdp2} with --ckpt-format {ckpt}: {VALIDATE} (\"--use-torch-fsdp2 requires --ckpt-format "
                          "torch_dist or torch_dcp\"); use --ckpt-format torch_dist", fix="torch_dist", related=here)
        if args.on("untie_embeddings_and_output_weights") is False:
            yield self.at(flags, "use_torch_fsdp2",
                          f"{fsdp2} with tied input and output embeddings (the default): {VALIDATE} (\"--use-torch-"
                          "fsdp2 requires --untie-embeddings-and-output-weights\"); add "
                          "--untie-embeddings-and-output-weights", fix="--untie-embeddings-and-output-weights")
        if args.on("fp16"):
            yield self.at(flags, "fp16",
                          f"{fsdp2} with {flags.spelled('fp16')}: {VALIDATE} (\"--use-torch-fsdp2 not supported with "
                          "fp16 yet\"); use --bf16", fix="--bf16", related=here)


class MegatronFsdpConflict(TrainingRule):
    """A setting that `--use-megatron-fsdp` does not support.

    ## What it does
    With `--use-megatron-fsdp`, reports what validate_args rejects from the arguments: an
    optimizer other than `adam` or `sgd`, a checkpoint format other than `fsdp_dtensor` (the
    default is `torch_dist`), and `--megatron-fsdp-version 2` with `--use-distributed-optimizer`.
    (`CUDA_DEVICE_MAX_CONNECTIONS` must not be 1: an environment setting, not checked here.)

    ## Why is this bad
    Each one stops the launch in validate_args, e.g. "Megatron-FSDP requires the `fsdp_dtensor`
    checkpointing format."

    ## Example
    ```sh
    torchrun ... pretrain_gpt.py ... --bf16 --use-megatron-fsdp --use-distributed-optimizer
    ```

    ## Use instead
    ```sh
    torchrun ... pretrain_gpt.py ... --bf16 --use-megatron-fsdp --use-distributed-optimizer --ckpt-format fsdp_dtensor
    ```
    """

    code = "MG209"
    name = "megatron-fsdp-conflict"
    severity = "error"

    def judge(self, args, flags, context):
        if not args.on("use_megatron_fsdp"):
            return
        mfsdp = flags.spelled("use_megatron_fsdp")
        here = self.also(flags, "use_megatron_fsdp")
        version = args("megatron_fsdp_version")
        if version == 2 and args.on("use_distributed_optimizer"):
            yield self.at(flags, "use_distributed_optimizer",
                          f"{mfsdp} version 2 with {flags.spelled('use_distributed_optimizer')}: {VALIDATE} "
                          "(\"--megatron-fsdp-version 2 is not compatible with --use-distributed-optimizer\"); remove "
                          "--use-distributed-optimizer", related=self.also_each(flags, "megatron_fsdp_version"))
        optimizer = args("optimizer")
        if known(optimizer) and optimizer not in ("adam", "sgd"):
            yield self.at(flags, "optimizer",
                          f"{mfsdp} with --optimizer {optimizer}: {VALIDATE} (\"Megatron-FSDP does not support the "
                          f"{optimizer} optimizer yet\"; only adam and sgd); use --optimizer adam", fix="adam",
                          related=here)
        ckpt = args("ckpt_format")
        if known(ckpt) and ckpt != "fsdp_dtensor":
            given = flags.given("ckpt_format")
            yield self.at(flags, "ckpt_format" if given else "use_megatron_fsdp",
                          f"{mfsdp} with --ckpt-format {ckpt}{'' if given else ' (the default)'}: {VALIDATE} "
                          "(\"Megatron-FSDP requires the `fsdp_dtensor` checkpointing format\"); use --ckpt-format "
                          "fsdp_dtensor", fix="fsdp_dtensor" if given else "--ckpt-format fsdp_dtensor",
                          related=here if given else [])


class MegatronFsdpTurnsOnDistributedOptimizer(TrainingRule):
    """`--use-megatron-fsdp` (version 1) without `--use-distributed-optimizer`.

    ## What it does
    Reports Megatron-FSDP version 1 (the default `--megatron-fsdp-version`) when
    `--use-distributed-optimizer` is not given.

    ## Why is this bad
    validate_args turns the distributed optimizer on by itself ("Megatron-FSDP v1 is only
    compatible with --use-distributed-optimizer. Using DistributedOptimizer..."): the launch
    does something other than what it says, and a translation of the arguments that trusts them
    misses the sharded optimizer.

    ## Example
    ```sh
    torchrun ... pretrain_gpt.py ... --use-megatron-fsdp --ckpt-format fsdp_dtensor
    ```

    ## Use instead
    ```sh
    torchrun ... pretrain_gpt.py ... --use-megatron-fsdp --use-distributed-optimizer --ckpt-format fsdp_dtensor
    ```
    """

    code = "MG210"
    name = "megatron-fsdp-turns-on-distributed-optimizer"
    severity = "warning"

    def judge(self, args, flags, context):
        if args.on("use_megatron_fsdp") and args("megatron_fsdp_version") == 1 and \
                args.on("use_distributed_optimizer") is False:
            yield self.at(flags, "use_megatron_fsdp",
                          f"{flags.spelled('use_megatron_fsdp')} (version 1) without --use-distributed-optimizer: "
                          "validate_args turns the distributed optimizer on by itself (\"Megatron-FSDP v1 is only "
                          "compatible with --use-distributed-optimizer. Using DistributedOptimizer...\"); write "
                          "--use-distributed-optimizer so the arguments say what runs",
                          fix="--use-distributed-optimizer")


class ShardingStrategyWithoutMegatronFsdp(TrainingRule):
    """`--data-parallel-sharding-strategy` without `--use-megatron-fsdp`.

    ## What it does
    Reports `--data-parallel-sharding-strategy` when Megatron-FSDP is not used.

    ## Why is this bad
    Only Megatron-FSDP reads the strategy; plain DDP, the distributed optimizer and
    `--use-torch-fsdp2` ignore it without a word (issue NVIDIA/Megatron-LM#1641). A launch that
    asks for `optim_grads_params` (ZeRO-3) without Megatron-FSDP shards nothing of the kind.

    ## Example
    ```sh
    torchrun ... pretrain_gpt.py ... --use-distributed-optimizer --data-parallel-sharding-strategy optim_grads
    ```

    ## Use instead
    ```sh
    torchrun ... pretrain_gpt.py ... --use-megatron-fsdp --use-distributed-optimizer \\
        --data-parallel-sharding-strategy optim_grads --ckpt-format fsdp_dtensor
    ```
    """

    code = "MG211"
    name = "sharding-strategy-without-megatron-fsdp"
    severity = "warning"

    def judge(self, args, flags, context):
        if flags.given("data_parallel_sharding_strategy") and args.on("use_megatron_fsdp") is False:
            yield self.at(flags, "data_parallel_sharding_strategy",
                          f"{flags.spelled('data_parallel_sharding_strategy')} without --use-megatron-fsdp: only "
                          "Megatron-FSDP reads it, Megatron ignores it silently here; add --use-megatron-fsdp "
                          "(with --ckpt-format fsdp_dtensor) or remove the flag")


class BucketsWithoutOverlapGradReduce(TrainingRule):
    """`--ddp-bucket-size` or `--ddp-num-buckets` that Megatron ignores.

    ## What it does
    Reports a bucket setting when `--overlap-grad-reduce` is not set, or with `--use-torch-fsdp2`.

    ## Why is this bad
    Without `--overlap-grad-reduce`, Megatron's DDP (and the bucket resolution in training.py)
    sets the bucket size to None: all gradients go into one bucket reduced after the backward
    pass, and the setting has no effect. With `--use-torch-fsdp2` the DDP settings are not
    passed on at all. Nothing is printed.

    ## Example
    ```sh
    torchrun ... pretrain_gpt.py ... --use-distributed-optimizer --ddp-bucket-size 20000000
    ```

    ## Use instead
    ```sh
    torchrun ... pretrain_gpt.py ... --use-distributed-optimizer --overlap-grad-reduce --ddp-bucket-size 20000000
    ```
    """

    code = "MG212"
    name = "buckets-without-overlap-grad-reduce"
    severity = "warning"

    def judge(self, args, flags, context):
        fsdp2, overlap = args.on("use_torch_fsdp2"), args.on("overlap_grad_reduce")
        for dest in ("ddp_bucket_size", "ddp_num_buckets"):
            if not flags.given(dest) or args(dest) is None:
                continue
            spelled = flags.spelled(dest)
            if fsdp2:
                yield self.at(flags, dest,
                              f"{spelled} with {flags.spelled('use_torch_fsdp2')}: Megatron passes no DDP bucket "
                              "setting to FSDP2, it is ignored silently; remove it",
                              related=self.also(flags, "use_torch_fsdp2"))
            elif fsdp2 is False and overlap is False:
                yield self.at(flags, dest,
                              f"{spelled} without --overlap-grad-reduce: Megatron's DDP sets the bucket size to None "
                              "(one bucket, reduced after the backward pass) and ignores it silently; add "
                              "--overlap-grad-reduce or remove it", fix="--overlap-grad-reduce")


class FreezeAllLayersTurnsOffSharding(TrainingRule):
    """`--freeze-all-layers` with `--use-distributed-optimizer` or `--overlap-param-gather`.

    ## What it does
    Reports `--use-distributed-optimizer` and `--overlap-param-gather` next to `--freeze-all-layers`.

    ## Why is this bad
    validate_args turns both off ("--freeze-all-layers incompatible with use_distributed_optimizer.
    Disabling use_distributed_optimizer."): the run does not shard the optimizer state although
    the arguments say so.

    ## Example
    ```sh
    torchrun ... pretrain_gpt.py ... --freeze-all-layers --use-distributed-optimizer
    ```

    ## Use instead
    ```sh
    torchrun ... pretrain_gpt.py ... --freeze-all-layers
    ```
    """

    code = "MG213"
    name = "freeze-all-layers-turns-off-sharding"
    severity = "warning"

    def judge(self, args, flags, context):
        if not args.on("freeze_all_layers"):
            return
        for dest, what in (("use_distributed_optimizer", "the distributed optimizer"),
                           ("overlap_param_gather", "the parameter all-gather overlap")):
            if flags.given(dest) and args.on(dest):
                yield self.at(flags, dest,
                              f"{flags.spelled(dest)} with {flags.spelled('freeze_all_layers')}: validate_args turns "
                              f"{what} off (\"--freeze-all-layers incompatible with {dest}. Disabling {dest}.\"); "
                              "remove it", related=self.also(flags, "freeze_all_layers"))


# ------------------------------------------------------------------------------------ batch and run length


class StepBatchScheduleWithGlobalBatch(TrainingRule):
    """`--step-batch-size-schedule` together with `--global-batch-size`.

    ## What it does
    Reports a launch that gives both a step batch-size schedule and a global batch size.

    ## Why is this bad
    The schedule sets the global batch size; validate_args raises ValueError "Cannot specify both
    --step-batch-size-schedule and --global-batch-size" and the launch stops (Megatron-LM's own
    examples/gpt3/train_gpt3_175b_distributed.sh passes both).

    ## Example
    ```sh
    torchrun ... pretrain_gpt.py ... --global-batch-size 1536 --step-batch-size-schedule "0:768 250B:1536"
    ```

    ## Use instead
    ```sh
    torchrun ... pretrain_gpt.py ... --step-batch-size-schedule "0:768 250B:1536"
    ```
    """

    code = "MG214"
    name = "step-batch-schedule-with-global-batch"
    severity = "error"

    def judge(self, args, flags, context):
        if flags.given("step_batch_size_schedule") and flags.given("global_batch_size") and \
                args("step_batch_size_schedule") not in (None, UNKNOWN) and args("global_batch_size") is not None:
            yield self.at(flags, "global_batch_size",
                          f"{flags.spelled('global_batch_size')} with {flags.spelled('step_batch_size_schedule')}: "
                          f"{VALIDATE} (ValueError \"Cannot specify both --step-batch-size-schedule and "
                          "--global-batch-size\"); remove --global-batch-size (the schedule gives the batch size)",
                          related=self.also(flags, "step_batch_size_schedule"))


ITERATION_BASED = ("train_iters", "lr_decay_iters", "lr_warmup_iters")
SAMPLE_BASED = ("train_samples", "lr_decay_samples", "lr_warmup_samples")
COUNTERPART = dict(zip(ITERATION_BASED, SAMPLE_BASED)) | dict(zip(SAMPLE_BASED, ITERATION_BASED))
WRONG_FAMILY = {
    "train_samples": "expected iteration-based training", "lr_decay_samples": "expected iteration-based learning "
    "rate decay", "lr_warmup_samples": "expected iteration-based learning rate warmup",
    "train_iters": "expected sample-based training", "lr_decay_iters": "expected sample-based learning rate decay",
    "lr_warmup_iters": "expected sample-based learnig rate warmup",
}


def _set(args: Args, dest: str) -> Any:
    """Whether a run-length setting is in use the way validate_args tests it (None / 0 are off)."""
    value = args(dest)
    if value is UNKNOWN:
        return UNKNOWN
    if dest in ("lr_warmup_iters", "lr_warmup_samples"):
        return value != 0
    if dest in ("train_iters", "train_samples"):
        return bool(value)
    return value is not None


class IterationAndSampleBasedMixed(TrainingRule):
    """Iteration-based and sample-based run length or LR schedule mixed.

    ## What it does
    With `--train-iters`, reports `--train-samples`, `--lr-decay-samples` and `--lr-warmup-samples`;
    with `--train-samples`, reports `--lr-decay-iters` and `--lr-warmup-iters`.

    ## Why is this bad
    validate_args asserts that one family is used throughout ("expected iteration-based learning
    rate decay") and the launch stops before training (unless `--skip-train`).

    ## Example
    ```sh
    torchrun ... pretrain_gpt.py ... --train-iters 500000 --lr-decay-samples 250000000
    ```

    ## Use instead
    ```sh
    torchrun ... pretrain_gpt.py ... --train-iters 500000 --lr-decay-iters 500000
    ```
    """

    code = "MG215"
    name = "iteration-and-sample-based-mixed"
    severity = "error"

    def judge(self, args, flags, context):
        if args.on("skip_train") is not False:
            return
        for base, others in (("train_iters", SAMPLE_BASED), ("train_samples", ITERATION_BASED[1:])):
            if _set(args, base) is not True:
                continue
            for dest in others:
                if _set(args, dest) is True and flags.given(dest):
                    counterpart = COUNTERPART[dest]
                    yield self.at(flags, dest,
                                  f"{flags.spelled(dest)} with {flags.spelled(base)}: {VALIDATE} (\""
                                  f"{WRONG_FAMILY[dest]}\"); use {flags.spelled(counterpart)} instead",
                                  fix=flags.spelled(counterpart), related=self.also(flags, base))
            return


class WarmupFractionWithWarmupSteps(TrainingRule):
    """`--lr-warmup-fraction` together with `--lr-warmup-iters` or `--lr-warmup-samples`.

    ## What it does
    Reports `--lr-warmup-fraction` next to a warmup length of the same family as the run
    (`--lr-warmup-iters` with `--train-iters`, `--lr-warmup-samples` with `--train-samples`).
    The other mix is MG215.

    ## Why is this bad
    validate_args asserts "can only specify one of lr-warmup-fraction and lr-warmup-iters" and the
    launch stops before training.

    ## Example
    ```sh
    torchrun ... pretrain_gpt.py ... --train-iters 500000 --lr-warmup-fraction 0.01 --lr-warmup-iters 2000
    ```

    ## Use instead
    ```sh
    torchrun ... pretrain_gpt.py ... --train-iters 500000 --lr-warmup-iters 2000
    ```
    """

    code = "MG216"
    name = "warmup-fraction-with-warmup-steps"
    severity = "error"

    def judge(self, args, flags, context):
        fraction = args("lr_warmup_fraction")
        if fraction in (None, UNKNOWN) or args.on("skip_train") is not False:
            return
        for base, dest, text in (("train_iters", "lr_warmup_iters", "lr-warmup-iters"),
                                 ("train_samples", "lr_warmup_samples", "lr-warmup-samples")):
            if _set(args, base) is True and _set(args, dest) is True and flags.given(dest):
                yield self.at(flags, "lr_warmup_fraction",
                              f"{flags.spelled('lr_warmup_fraction')} with {flags.spelled(dest)}: {VALIDATE} (\"can "
                              f"only specify one of lr-warmup-fraction and {text}\"); keep one of them",
                              related=self.also(flags, dest))
                return


class NoTrainingLength(TrainingRule):
    """Neither `--train-iters` nor `--train-samples`.

    ## What it does
    Reports a launch of a `pretrain_*.py` script that gives neither `--train-iters` nor
    `--train-samples` (and no `--skip-train`); in a script whose `if`/`case` chooses between
    configurations, only when no branch gives one.

    ## Why is this bad
    validate_args accepts it, but building the learning-rate scheduler raises "either train-iters
    or train-samples should be provided." once the model is built on every GPU, at start-up.

    ## Example
    ```sh
    torchrun ... pretrain_gpt.py ... --lr 3e-4 --lr-decay-style cosine
    ```

    ## Use instead
    ```sh
    torchrun ... pretrain_gpt.py ... --lr 3e-4 --lr-decay-style cosine --train-iters 500000
    ```
    """

    code = "MG217"
    name = "no-training-length"
    severity = "error"
    reports_missing = True

    def judge(self, args, flags, context):
        if not flags.arguments.megatron_entry or args.open:
            return
        if args.on("skip_train") is not False:
            return
        iters, samples = _set(args, "train_iters"), _set(args, "train_samples")
        if iters is False and samples is False:
            yield self.at(flags, "train_iters",
                          "neither --train-iters nor --train-samples is given (or both are 0): validate_args lets it "
                          "pass, but building the learning-rate scheduler raises \"either train-iters or train-samples "
                          "should be provided.\" after the model is built, at start-up; add --train-iters",
                          fix="--train-iters")


class MinLrAboveLr(TrainingRule):
    """`--min-lr` above `--lr`.

    ## What it does
    Reports a minimum learning rate larger than the peak learning rate.

    ## Why is this bad
    validate_args asserts `args.min_lr <= args.lr` and the launch stops before training.

    ## Example
    ```sh
    torchrun ... pretrain_gpt.py ... --lr 1e-4 --min-lr 1e-3
    ```

    ## Use instead
    ```sh
    torchrun ... pretrain_gpt.py ... --lr 1e-4 --min-lr 1e-5
    ```
    """

    code = "MG218"
    name = "min-lr-above-lr"
    severity = "error"

    def judge(self, args, flags, context):
        lr, min_lr = args("lr"), args("min_lr")
        if not known(lr, min_lr) or lr is None or min_lr is None or not flags.given("min_lr"):
            return
        if min_lr > lr:
            yield self.at(flags, "min_lr",
                          f"{flags.spelled('min_lr')} {min_lr:g} is above {flags.spelled('lr')} {lr:g}: {VALIDATE} "
                          "(it asserts `args.min_lr <= args.lr`); use a minimum at most the learning rate",
                          related=self.also(flags, "lr"))


class MaxPositionsBelowSequence(TrainingRule):
    """`--max-position-embeddings` below `--seq-length`.

    ## What it does
    Reports a maximum number of positions smaller than the training sequence length (or the
    decoder sequence length).

    ## Why is this bad
    validate_args asserts "max_position_embeddings (N) must be greater than or equal to
    seq_length (M)" for every position embedding type (RoPE included), and the launch stops.

    ## Example
    ```sh
    torchrun ... pretrain_gpt.py ... --seq-length 4096 --max-position-embeddings 2048
    ```

    ## Use instead
    ```sh
    torchrun ... pretrain_gpt.py ... --seq-length 4096 --max-position-embeddings 4096
    ```
    """

    code = "MG219"
    name = "max-positions-below-sequence"
    severity = "error"

    def judge(self, args, flags, context):
        positions = args("max_position_embeddings")
        if not known(positions) or positions is None:
            return
        for dest in ("seq_length", "decoder_seq_length"):
            length = args(dest)
            if known(length) and length is not None and positions < length:
                yield self.at(flags, "max_position_embeddings",
                              f"{flags.spelled('max_position_embeddings')} {positions} is below "
                              f"{flags.spelled(dest)} {length}: {VALIDATE} for every position embedding type ("
                              + (f"\"max_position_embeddings ({positions}) must be greater than or equal to "
                                 f"seq_length ({length}).\"" if dest == "seq_length" else
                                 "it asserts `args.max_position_embeddings >= args.decoder_seq_length`")
                              + f"); use {length}", fix=str(length),
                              related=self.also(flags, dest))
                return


# ----------------------------------------------------------------------------- recomputation and offloading


class FullRecomputeIncomplete(TrainingRule):
    """`--recompute-granularity full` without `--recompute-method` or `--recompute-num-layers`.

    ## What it does
    Reports full recomputation that does not say which layers to recompute.

    ## Why is this bad
    TransformerConfig raises ValueError when the model config is built: "Using
    recompute_granularity: full so recompute_method must be "block" or "uniform"", then "When
    using recompute_granularity: full recompute_num_layers must be between 1 and
    num_layers_per_pipeline_rank".

    ## Example
    ```sh
    torchrun ... pretrain_gpt.py ... --recompute-granularity full
    ```

    ## Use instead
    ```sh
    torchrun ... pretrain_gpt.py ... --recompute-granularity full --recompute-method uniform --recompute-num-layers 1
    ```
    """

    code = "MG220"
    name = "full-recompute-incomplete"
    severity = "error"

    def judge(self, args, flags, context):
        granularity, _ = args.granularity()
        if granularity != "full":
            return
        method, layers = args("recompute_method"), args("recompute_num_layers")
        missing = []
        if method is None:
            missing.append("--recompute-method uniform")
        if layers is None:
            missing.append("--recompute-num-layers 1")
        if not missing:
            return
        said = ('Using recompute_granularity: full so recompute_method must be "block" or "uniform"' if method is None
                else "When using recompute_granularity: full recompute_num_layers must be between 1 and "
                     "num_layers_per_pipeline_rank")
        yield self.at(flags, "recompute_granularity",
                      f"{flags.spelled('recompute_granularity')} full without "
                      f"{' and '.join(m.split()[0] for m in missing)}: {CONFIG} (\"{said}\"); add {' '.join(missing)}",
                      fix=" ".join(missing))


class SelectiveRecomputeWithLayerSettings(TrainingRule):
    """Selective recomputation with `--recompute-method` or `--recompute-num-layers`.

    ## What it does
    Reports `--recompute-method` or `--recompute-num-layers` with `--recompute-granularity selective`
    (or `--recompute-activations`, which means selective).

    ## Why is this bad
    Selective recomputation picks modules, not layers. validate_args asserts "recompute method is
    not yet supported for selective recomputing granularity"; `--recompute-num-layers` makes
    TransformerConfig raise ValueError "recompute_num_layers must be None". The launch stops.

    ## Example
    ```sh
    torchrun ... pretrain_gpt.py ... --recompute-granularity selective --recompute-method uniform
    ```

    ## Use instead
    ```sh
    torchrun ... pretrain_gpt.py ... --recompute-granularity selective
    ```
    """

    code = "MG221"
    name = "selective-recompute-with-layer-settings"
    severity = "error"

    def judge(self, args, flags, context):
        granularity, source = args.granularity()
        if granularity != "selective":
            return
        spelled = flags.spelled(source)
        if source == "recompute_granularity":
            spelled += " selective"
        if flags.given("recompute_method") and args("recompute_method") not in (None, UNKNOWN):
            yield self.at(flags, "recompute_method",
                          f"{flags.spelled('recompute_method')} with {spelled}: {VALIDATE} (\"recompute method is not "
                          "yet supported for selective recomputing granularity\"); remove it",
                          related=self.also(flags, source))
            return
        if flags.given("recompute_num_layers") and args("recompute_num_layers") not in (None, UNKNOWN):
            yield self.at(flags, "recompute_num_layers",
                          f"{flags.spelled('recompute_num_layers')} with {spelled}: {CONFIG} (\"When using "
                          "recompute_granularity: selective recompute_num_layers must be None.\"); remove it",
                          related=self.also(flags, source))


class DistributeSavedActivationsRequirements(TrainingRule):
    """`--distribute-saved-activations` without what it needs.

    ## What it does
    Reports `--distribute-saved-activations` without tensor parallelism (size > 1), without
    `--recompute-granularity full`, or without `--recompute-method` (validate_args asserts all
    three), or with `--sequence-parallel` (TransformerConfig raises ValueError).

    ## Why is this bad
    The saved activations are split across the tensor-parallel group of a fully recomputed
    layer; any of these stops the launch before training, e.g. "can distribute recomputed
    activations only across tensor model parallel groups".

    ## Example
    ```sh
    torchrun ... pretrain_gpt.py ... --tensor-model-parallel-size 2 --distribute-saved-activations
    ```

    ## Use instead
    ```sh
    torchrun ... pretrain_gpt.py ... --tensor-model-parallel-size 2 --recompute-granularity full \\
        --recompute-method uniform --recompute-num-layers 1 --distribute-saved-activations
    ```
    """

    code = "MG222"
    name = "distribute-saved-activations-requirements"
    severity = "error"

    def judge(self, args, flags, context):
        if not args.on("distribute_saved_activations"):
            return
        tp, method = args("tensor_model_parallel_size"), args("recompute_method")
        granularity, _ = args.granularity()
        missing = []  # in validate_args' order, with its message
        if known(tp) and isinstance(tp, int) and tp <= 1:
            missing.append((f"tensor parallel size above 1 (it is {tp})",
                            "can distribute recomputed activations only across tensor model parallel groups"))
        if known(granularity) and granularity != "full":
            missing.append(("--recompute-granularity full",
                            "distributed recompute activations is only application to full recompute granularity"))
        if known(method) and method is None:
            missing.append(("--recompute-method", "for distributed recompute activations to work you need to use a "
                                                  "recompute method"))
        if missing:
            yield self.at(flags, "distribute_saved_activations",
                          f"{flags.spelled('distribute_saved_activations')} needs "
                          f"{' and '.join(m for m, _ in missing)}: {VALIDATE} (\"{missing[0][1]}\")")
            return
        if known(tp, granularity, method) and args.on("sequence_parallel"):
            yield self.at(flags, "distribute_saved_activations",
                          f"{flags.spelled('distribute_saved_activations')} with {flags.spelled('sequence_parallel')}: "
                          f"{CONFIG} (\"distribute_saved_activations: True must be false when sequence parallel is "
                          "enabled\"); keep one of them", related=self.also(flags, "sequence_parallel"))


class OptimizerCpuOffloadRequirements(TrainingRule):
    """`--optimizer-cpu-offload` without `--use-precision-aware-optimizer`.

    ## What it does
    Reports `--optimizer-cpu-offload` without `--use-precision-aware-optimizer`, and with
    `--fp8-param-gather` under an FP8 recipe other than `delayed`.

    ## Why is this bad
    The hybrid CPU/GPU optimizer reuses the precision-aware optimizer's code path; validate_args
    asserts "The optimizer cpu offload must be used in conjunction with
    `--use-precision-aware-optimizer`" and the launch stops before training.

    ## Example
    ```sh
    torchrun ... pretrain_gpt.py ... --use-distributed-optimizer --optimizer-cpu-offload
    ```

    ## Use instead
    ```sh
    torchrun ... pretrain_gpt.py ... --use-distributed-optimizer --optimizer-cpu-offload --use-precision-aware-optimizer
    ```
    """

    code = "MG223"
    name = "optimizer-cpu-offload-requirements"
    severity = "error"

    def judge(self, args, flags, context):
        if not args.on("optimizer_cpu_offload"):
            return
        offload = flags.spelled("optimizer_cpu_offload")
        if args.on("use_precision_aware_optimizer") is False:
            yield self.at(flags, "optimizer_cpu_offload",
                          f"{offload} without --use-precision-aware-optimizer: {VALIDATE} (\"The optimizer cpu offload "
                          "must be used in conjunction with `--use-precision-aware-optimizer`\"); add "
                          "--use-precision-aware-optimizer", fix="--use-precision-aware-optimizer")
            return
        recipe = args("fp8_recipe")
        if args.on("fp8_param_gather") and known(recipe) and recipe != "delayed" and \
                args.on("use_torch_fsdp2") is False:
            yield self.at(flags, "fp8_param_gather",
                          f"{flags.spelled('fp8_param_gather')} with {offload} and --fp8-recipe {recipe}: {VALIDATE} "
                          "(\"the optimizer cpu offload must be used in conjunction with `--fp8-recipe delayed`\"); use "
                          "--fp8-recipe delayed", related=self.also_each(flags, "optimizer_cpu_offload", "fp8_recipe"))


class CpuOffloadingConflict(TrainingRule):
    """`--cpu-offloading-num-layers` with pipeline parallelism, recomputation, or too many layers.

    ## What it does
    With activation/weight CPU offloading on (`--cpu-offloading-num-layers` above 0), reports
    pipeline parallelism, activation recomputation (any granularity, `--recompute-activations`
    too), and a layer count not below `--num-layers`.

    ## Why is this bad
    TransformerConfig raises ValueError when the model config is built: "Currently there is no
    support for Pipeline parallelism with CPU offloading", "CPU offloading does not work when
    activation recomputation is enabled", "CPU offloading can be done only for layers less than N".

    ## Example
    ```sh
    torchrun ... pretrain_gpt.py ... --pipeline-model-parallel-size 2 --cpu-offloading-num-layers 1
    ```

    ## Use instead
    ```sh
    torchrun ... pretrain_gpt.py ... --cpu-offloading-num-layers 1
    ```
    """

    code = "MG224"
    name = "cpu-offloading-conflict"
    severity = "error"

    def judge(self, args, flags, context):
        count = args("cpu_offloading_num_layers")
        if not known(count) or not isinstance(count, int) or count <= 0:
            return
        offload = flags.spelled("cpu_offloading_num_layers")
        layers = args("num_layers")
        if known(layers) and isinstance(layers, int) and count >= layers and args("hybrid_layer_pattern") is None:
            yield self.at(flags, "cpu_offloading_num_layers",
                          f"{offload} {count} is not below --num-layers {layers}: {CONFIG} (\"CPU offloading can be "
                          f"done only for layers less than {layers}\"); use at most {layers - 1}", fix=str(layers - 1))
            return
        pp = args("pipeline_model_parallel_size")
        if known(pp) and isinstance(pp, int) and pp > 1:
            yield self.at(flags, "cpu_offloading_num_layers",
                          f"{offload} with pipeline parallel size {pp}: {CONFIG} (\"Currently there is no support for "
                          "Pipeline parallelism with CPU offloading\"); remove one of them",
                          related=self.also(flags, "pipeline_model_parallel_size"))
            return
        granularity, source = args.granularity()
        if known(granularity) and granularity is not None:
            yield self.at(flags, "cpu_offloading_num_layers",
                          f"{offload} with activation recomputation ({flags.spelled(source)}): {CONFIG} (\"CPU "
                          "offloading does not work when activation recomputation is enabled\"); remove one of them",
                          related=self.also(flags, source))


# ------------------------------------------------------------------------- checkpoints, optimizer, schedule


class CheckpointFormatConflict(TrainingRule):
    """A `--ckpt-format` that the rest of the setup cannot use.

    ## What it does
    Reports `--ckpt-format torch_dcp` without `--use-torch-fsdp2` or with tensor or pipeline
    parallelism, `--ckpt-format fsdp_dtensor` without `--use-megatron-fsdp`, and the legacy
    `--ckpt-format torch` with `--use-distributed-optimizer` and `--disable-gloo-process-groups`
    (the legacy format gathers the optimizer state over Gloo groups). Pipeline parallelism with
    FSDP2 is MG208's.

    ## Why is this bad
    validate_args asserts each of these ("--ckpt-format torch_dcp is only tested with FSDP.",
    "--ckpt-format fsdp_dtensor is only tested with Megatron FSDP.") and the launch stops.

    ## Example
    ```sh
    torchrun ... pretrain_gpt.py ... --use-distributed-optimizer --ckpt-format fsdp_dtensor
    ```

    ## Use instead
    ```sh
    torchrun ... pretrain_gpt.py ... --use-distributed-optimizer --ckpt-format torch_dist
    ```
    """

    code = "MG225"
    name = "checkpoint-format-conflict"
    severity = "error"

    def judge(self, args, flags, context):
        ckpt = args("ckpt_format")
        if not flags.given("ckpt_format") or ckpt is UNKNOWN:
            return
        spelled = f"{flags.spelled('ckpt_format')} {ckpt}"
        if ckpt == "torch_dcp":
            fsdp2 = args.on("use_torch_fsdp2")
            if fsdp2 is False:
                yield self.at(flags, "ckpt_format",
                              f"{spelled} without --use-torch-fsdp2: {VALIDATE} (\"--ckpt-format torch_dcp is only "
                              "tested with FSDP.\"); use --ckpt-format torch_dist", fix="torch_dist")
                return
            for dest, name, text in (("tensor_model_parallel_size", "tensor", "tensor"),
                                     ("pipeline_model_parallel_size", "pipeline", "pipeline")):
                size = args(dest)
                if dest == "pipeline_model_parallel_size" and fsdp2:
                    continue  # MG208
                if known(size) and isinstance(size, int) and size > 1:
                    yield self.at(flags, "ckpt_format",
                                  f"{spelled} with {name} parallel size {size}: {VALIDATE} (\"--ckpt-format torch_dcp "
                                  f"is not tested with megatron {text} parallelism.\"); use --ckpt-format torch_dist",
                                  fix="torch_dist", related=self.also(flags, dest))
                    return
        elif ckpt == "fsdp_dtensor" and args.on("use_megatron_fsdp") is False:
            yield self.at(flags, "ckpt_format",
                          f"{spelled} without --use-megatron-fsdp: {VALIDATE} (\"--ckpt-format fsdp_dtensor is only "
                          "tested with Megatron FSDP.\"); use --ckpt-format torch_dist", fix="torch_dist")
        elif ckpt == "torch" and args.on("use_gloo_process_groups") is False and \
                args.on("use_distributed_optimizer") and args("optimizer") in ("adam", "sgd"):
            yield self.at(flags, "ckpt_format",
                          f"{spelled} with --use-distributed-optimizer and "
                          f"{flags.spelled('use_gloo_process_groups')}: {VALIDATE} (it asserts `args.use_dist_ckpt`: "
                          "the legacy format collects the optimizer state over Gloo groups); use --ckpt-format "
                          "torch_dist", fix="torch_dist", related=self.also(flags, "use_gloo_process_groups"))


class EmergingOptimizerWithTorchFsdp2(TrainingRule):
    """An optimizer other than adam or sgd with `--use-torch-fsdp2`.

    ## What it does
    Reports `--optimizer muon` (or `dist_muon`, `lion`, `soap`, `adaptive_muon`) together with
    `--use-torch-fsdp2`. (With `--use-megatron-fsdp` the same is MG209.)

    ## Why is this bad
    validate_args asserts "Emerging optimizer does not support Torch-FSDP2 for now." and the
    launch stops before training.

    ## Example
    ```sh
    torchrun ... pretrain_gpt.py ... --use-torch-fsdp2 --optimizer muon
    ```

    ## Use instead
    ```sh
    torchrun ... pretrain_gpt.py ... --use-distributed-optimizer --optimizer muon
    ```
    """

    code = "MG226"
    name = "emerging-optimizer-with-torch-fsdp2"
    severity = "error"

    def judge(self, args, flags, context):
        optimizer = args("optimizer")
        if not flags.given("optimizer") or not known(optimizer) or optimizer in ("adam", "sgd"):
            return
        if args.on("use_torch_fsdp2"):
            yield self.at(flags, "optimizer",
                          f"{flags.spelled('optimizer')} {optimizer} with {flags.spelled('use_torch_fsdp2')}: "
                          f"{VALIDATE} (\"Emerging optimizer does not support Torch-FSDP2 for now.\"); use "
                          "--use-distributed-optimizer instead of FSDP2, or --optimizer adam",
                          related=self.also(flags, "use_torch_fsdp2"))


class PrecisionOptionWithoutItsPrecision(TrainingRule):
    """`--fp16-lm-cross-entropy` without `--fp16`, or `--fp32-residual-connection` in fp32.

    ## What it does
    Reports `--fp16-lm-cross-entropy` when `--fp16` is not set, and `--fp32-residual-connection`
    when neither `--fp16` nor `--bf16` is set.

    ## Why is this bad
    validate_args asserts "lm cross entropy in fp16 only support in fp16 mode." / "residual
    connection in fp32 only supported when using fp16 or bf16." and the launch stops.

    ## Example
    ```sh
    torchrun ... pretrain_gpt.py ... --bf16 --fp16-lm-cross-entropy
    ```

    ## Use instead
    ```sh
    torchrun ... pretrain_gpt.py ... --bf16
    ```
    """

    code = "MG227"
    name = "precision-option-without-its-precision"
    severity = "error"

    def judge(self, args, flags, context):
        fp16, bf16 = args.on("fp16"), args.on("bf16")
        if args.on("fp16_lm_cross_entropy") and fp16 is False:
            yield self.at(flags, "fp16_lm_cross_entropy",
                          f"{flags.spelled('fp16_lm_cross_entropy')} without --fp16: {VALIDATE} (\"lm cross entropy in "
                          "fp16 only support in fp16 mode.\"); remove it")
        if args.on("fp32_residual_connection") and fp16 is False and bf16 is False:
            yield self.at(flags, "fp32_residual_connection",
                          f"{flags.spelled('fp32_residual_connection')} in fp32 (neither --fp16 nor --bf16): {VALIDATE} "
                          "(\"residual connection in fp32 only supported when using fp16 or bf16.\"); remove it or "
                          "add --bf16")


class WeightDecayScheduleMismatch(TrainingRule):
    """Start and end weight decay that do not match `--weight-decay-incr-style`.

    ## What it does
    Reports `--start-weight-decay` / `--end-weight-decay` with the constant style (the default),
    and a linear or cosine style without both of them.

    ## Why is this bad
    With the constant style validate_args asserts both are unset (`--weight-decay` is used);
    with another style it asserts both are set. The launch stops before training.

    ## Example
    ```sh
    torchrun ... pretrain_gpt.py ... --weight-decay-incr-style linear --start-weight-decay 0.01
    ```

    ## Use instead
    ```sh
    torchrun ... pretrain_gpt.py ... --weight-decay-incr-style linear --start-weight-decay 0.01 --end-weight-decay 0.1
    ```
    """

    code = "MG228"
    name = "weight-decay-schedule-mismatch"
    severity = "error"

    def judge(self, args, flags, context):
        style = args("weight_decay_incr_style")
        if not known(style):
            return
        ends = ("start_weight_decay", "end_weight_decay")
        if style == "constant":
            for dest in ends:
                if flags.given(dest) and args(dest) is not None:
                    yield self.at(flags, dest,
                                  f"{flags.spelled(dest)} with the constant weight-decay style (the default): "
                                  f"{VALIDATE} (it asserts `args.{dest} is None`); remove it and set --weight-decay, "
                                  "or choose --weight-decay-incr-style linear or cosine")
                    return
            return
        missing = [d for d in ends if args(d) is None]
        if missing:
            spelled = " and ".join(flags.spelled(d) for d in missing)
            yield self.at(flags, "weight_decay_incr_style",
                          f"{flags.spelled('weight_decay_incr_style')} {style} without {spelled}: {VALIDATE} (it "
                          f"asserts `args.{missing[0]} is not None`); add {spelled}")


class SaveIntervalMismatch(TrainingRule):
    """`--save` without a positive `--save-interval`, or a retain interval that is not a multiple of it.

    ## What it does
    Reports `--save` without `--save-interval` (or with one that is not positive), and a
    `--save-retain-interval` that is not a positive multiple of `--save-interval`. A `--save`
    path decided at run time still counts as given: validate_args only asks that it is set.

    ## Why is this bad
    validate_args asserts `args.save_interval is not None` (then `> 0`, then
    `args.save_retain_interval % args.save_interval == 0`) and the launch stops before training.

    ## Example
    ```sh
    torchrun ... pretrain_gpt.py ... --save $CHECKPOINT_PATH
    ```

    ## Use instead
    ```sh
    torchrun ... pretrain_gpt.py ... --save $CHECKPOINT_PATH --save-interval 1000
    ```
    """

    code = "MG229"
    name = "save-interval-mismatch"
    severity = "error"

    def judge(self, args, flags, context):
        item = flags.item("save")
        if item is None or item.problem:
            return  # a --save without its value is MG004's
        interval, retain = args("save_interval"), args("save_retain_interval")
        if interval is None:
            yield self.at(flags, "save",
                          f"{flags.spelled('save')} without --save-interval: {VALIDATE} (it asserts "
                          "`args.save_interval is not None`); add --save-interval", fix="--save-interval")
            return
        if not known(interval) or not isinstance(interval, int):
            return
        if interval <= 0:
            yield self.at(flags, "save_interval",
                          f"{flags.spelled('save_interval')} {interval} with {flags.spelled('save')}: {VALIDATE} (it "
                          "asserts `args.save_interval > 0`); use a positive interval")
            return
        if known(retain) and isinstance(retain, int) and (retain <= 0 or retain % interval):
            multiple = interval * max(1, -(-retain // interval))  # the next multiple up
            check = ("args.save_retain_interval > 0" if retain <= 0
                     else "args.save_retain_interval % args.save_interval == 0")  # the first of the two that fails
            yield self.at(flags, "save_retain_interval",
                          f"{flags.spelled('save_retain_interval')} {retain} is not a positive multiple of "
                          f"{flags.spelled('save_interval')} {interval}: {VALIDATE} (it asserts "
                          f"`{check}`); use a multiple such as {multiple}",
                          fix=str(multiple), related=self.also(flags, "save_interval"))
