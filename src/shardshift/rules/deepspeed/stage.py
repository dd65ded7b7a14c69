"""ZeRO stage and offload: settings a stage ignores, offload blocks that offload nothing or fail
later, pipeline parallelism with ZeRO-2/3, and what ZeRO-3 saves (DS301-DS309)."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from shardshift.document import Document
from shardshift.formats.deepspeed.keys import KEYS
from shardshift.rules.base import Context, Finding, Related, Rule
from shardshift.rules.deepspeed.facts import (
    MISSING,
    OO,
    OP,
    Z,
    bf16_block,
    get,
    offload_device,
    offloading,
    precision,
    stage_pointer,
    truth,
    whole,
    zero_stage,
)
from shardshift.versions import at_least, default_change, key_read_by, version_text

STAGE_NAMES = {0: "stage 0 (ZeRO off)", 1: "stage 1", 2: "stage 2", 3: "stage 3"}

# The key table's `stages` column, corrected where DeepSpeed reads a key in more places:
# the stage 1/2 optimizer also asserts on unused parameters at stage 1 with CPU offload.
STAGES_READ: dict[str, tuple[int, ...]] = {Z + "/ignore_unused_parameters": (1, 2)}


def _on(value: Any) -> bool:
    return truth(value) is True


# Settings that switch a feature on: ignoring them loses what the user asked for (error), while
# ignoring any other stage-specific setting only leaves a dead line (warning).
FEATURES: dict[str, tuple[str, Callable[[Any], bool]]] = {
    OO: ("optimizer-state offload", lambda v: isinstance(v, dict) and v.get("device") != "none"),
    Z + "/zero_quantized_weights": ("ZeRO++ quantized weights (qwZ)", _on),
    Z + "/zero_quantized_gradients": ("ZeRO++ quantized gradients (qgZ)", _on),
    Z + "/zero_quantized_nontrainable_weights": ("quantized frozen weights", _on),
    Z + "/zero_hpz_partition_size": ("ZeRO++ hierarchical partitioning (hpZ)", lambda v: (whole(v) or 0) > 1),
    OO + "/super_offload": ("SuperOffload", _on),
}


def _stage_rows() -> list[tuple[str, tuple[int, ...]]]:
    """Every zero_optimization key that only some stages read, with those stages."""
    rows = []
    for key in KEYS:
        if key.stages and key.path.startswith(Z + "/") and not key.path.startswith(OP) and not key.removed:
            rows.append((key.path, STAGES_READ.get(key.path, key.stages)))
    return rows


def _stages_text(stages: tuple[int, ...]) -> str:
    if stages == (3,):
        return "stage 3"
    if len(stages) > 1 and stages == tuple(range(stages[0], stages[-1] + 1)):
        return f"stages {stages[0]}-{stages[-1]}"
    return "stages " + ", ".join(map(str, stages))


class OffloadParamBelowStage3(Rule):
    """Parameter offload at ZeRO stage 0, 1 or 2, where DeepSpeed never reads it.

    ## What it does
    Reports a `zero_optimization.offload_param` block (or the legacy `cpu_offload_param: true`)
    that asks for offload while the ZeRO stage is below 3. Only ZeRO-3 partitions parameters,
    so only ZeRO-3 can offload them; stages 1 and 2 never look at the block.

    ## Why is this bad
    The run keeps every parameter on the GPU and nothing says so (the Hugging Face integration
    even logs that offload was detected). The memory plan the config was written for does not
    hold, and the job runs out of memory or runs with a batch size tuned for the wrong budget.

    ## Example
    ```json
    {"zero_optimization": {"stage": 2, "offload_param": {"device": "cpu"}}}
    ```

    ## Use instead
    ```json
    {"zero_optimization": {"stage": 3, "offload_param": {"device": "cpu"}}}
    ```
    or keep stage 2 and remove `offload_param` (stage 2 can offload optimizer state with
    `offload_optimizer`).
    """

    code = "DS301"
    name = "offload-param-below-stage-3"
    severity = "error"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        stage = zero_stage(data)
        found = offload_device(data, OP)
        if stage is None or stage == 3 or found is None:
            return
        device, pointer = found
        if device == "none" or device == "auto":
            return
        if stage in (1, 2) and truth(get(data, "/compile/deepcompile")) is True and offloading(data, OO):
            return  # DeepCompile's parameter-offload pass reads it at stages 1-2
        asked = f"device {json.dumps(device)}" if device else "no device (the docs suggest cpu)"
        yield self.finding(
            document, pointer,
            f"offload_param ({asked}) needs ZeRO stage 3, but the stage is {stage}: DeepSpeed ignores parameter "
            "offload below stage 3 and keeps every parameter on the GPU; set stage to 3 or remove offload_param",
            key=True)


class NvmeOffloadBelowStage3(Rule):
    """Optimizer offload to NVMe at ZeRO stage 1 or 2, which DeepSpeed turns into CPU offload.

    ## What it does
    Reports `offload_optimizer.device: "nvme"` at ZeRO stage 1 or 2. The stage 1/2 optimizer
    only asks whether the device is "none"; any other value means CPU offload, and `nvme_path`
    and the NVMe buffer settings are never read.

    ## Why is this bad
    The optimizer state lands in host memory, not on the NVMe drive. A config sized for NVMe
    (little host RAM) runs the host out of memory, or the run is simply not what it claims.

    ## Example
    ```json
    {"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "nvme", "nvme_path": "/nvme"}}}
    ```

    ## Use instead
    ```json
    {"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "nvme", "nvme_path": "/nvme"}}}
    ```
    or `"device": "cpu"` to keep stage 2 and say what actually happens.
    """

    code = "DS302"
    name = "nvme-offload-below-stage-3"
    severity = "error"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        stage = zero_stage(data)
        found = offload_device(data, OO)
        if stage not in (1, 2) or found is None or found[0] != "nvme":
            return
        yield self.finding(
            document, found[1],
            f"offload_optimizer.device is \"nvme\" at ZeRO stage {stage}: stages 1 and 2 treat any device as CPU "
            "offload and ignore nvme_path, so optimizer state goes to host memory; set stage to 3 for NVMe "
            "offload, or write \"cpu\"", fix='"cpu"')


class SettingIgnoredAtStage(Rule):
    """A zero_optimization setting that the configured ZeRO stage never reads.

    ## What it does
    Uses the stages each key applies to (the key table): `stage3_*` keys, `sub_group_size`,
    and ZeRO++ keys only matter at stage 3; `allgather_bucket_size`, `round_robin_gradients`
    only at stages 1-2 (`allgather_partitions` at none: DeepSpeed 0.19.8 parses it and never
    uses it, stages 1-2 always all-gather; it is reported at stage 3 and 0 only); nothing in
    `zero_optimization` matters at stage 0. It reports each such key at the stage configured.
    At stage 0 the dead settings are reported together, on the stage. Values left to the
    Hugging Face integration (`"auto"`) are not reported.

    ## Why is this bad
    DeepSpeed accepts these keys and ignores them without a word. A setting that switches a
    feature on (ZeRO++ quantization, hpZ, offload at stage 0, SuperOffload) is an error:
    the run lacks what the config asks for. Any other ignored setting is a warning: usually a
    leftover from a config written for another stage, which misleads whoever tunes it next.
    A `zero_optimization` block without `stage` runs stage 0: every setting in it is ignored,
    which is an error.

    ## Example
    ```json
    {"zero_optimization": {"stage": 2, "stage3_max_live_parameters": 1e9, "zero_quantized_weights": true}}
    ```

    ## Use instead
    ```json
    {"zero_optimization": {"stage": 3, "stage3_max_live_parameters": 1e9, "zero_quantized_weights": true}}
    ```
    or remove the stage-3 settings when stage 2 is what you want.
    """

    code = "DS303"
    name = "setting-ignored-at-zero-stage"
    severity = "warning"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        stage = zero_stage(data)
        zero = data.get("zero_optimization")
        if stage is None or not isinstance(zero, dict):
            return
        dead: list[str] = []
        reported: list[str] = []
        for pointer, stages in _stage_rows():
            value = get(data, pointer)
            if value is MISSING or value == "auto" or stage in stages:
                continue
            if any(r.pointer == pointer and r.applies(value) for r in STAGE_REJECTIONS):
                continue  # rejected, not ignored (DS306)
            if any(pointer.startswith(parent + "/") for parent in reported):
                continue  # the enclosing block is reported already
            if pointer == Z + "/allgather_bucket_size" and stage == 0 and precision(data) in ("bf16", None):
                continue  # the bf16 optimizer reads it without ZeRO
            reported.append(pointer)
            name = pointer[len(Z) + 1:]
            feature = FEATURES.get(pointer)
            if feature and feature[1](value):
                yield self.finding(
                    document, pointer,
                    f"{name} asks for {feature[0]}, which needs ZeRO {_stages_text(stages)}, but the stage is "
                    f"{stage}: DeepSpeed ignores it; set the stage to {stages[-1]} or remove {name}",
                    severity="error", key=True)
            elif stage == 0:
                dead.append(name)
            elif pointer == Z + "/allgather_partitions":
                yield self.finding(
                    document, pointer,
                    f"allgather_partitions is read by no ZeRO stage: DeepSpeed keeps it in its config but no code "
                    f"uses it (stages 1 and 2 always all-gather the updated partitions), and at stage {stage} nothing "
                    "would; remove it", key=True)
            else:
                yield self.finding(
                    document, pointer,
                    f"{name} only applies at ZeRO {_stages_text(stages)}; at stage {stage} DeepSpeed ignores it; "
                    "remove it (or change the stage)", key=True)
        if dead:
            where = stage_pointer(data)
            without_stage = "stage" not in zero
            listed = ", ".join(dead)
            if without_stage:
                yield self.finding(
                    document, Z,
                    f"zero_optimization has no \"stage\", so DeepSpeed runs stage 0 (ZeRO off) and ignores its "
                    f"{len(dead)} setting(s): {listed}; add the stage you want, e.g. \"stage\": 2",
                    severity="error", key=True, fix='"stage": 2')
            else:
                yield self.finding(
                    document, where,
                    f"ZeRO is off (stage 0), so DeepSpeed ignores {len(dead)} zero_optimization setting(s): {listed}; "
                    "remove them or set stage to 1, 2 or 3")


class OffloadWithoutDevice(Rule):
    """An offload block without `device`, which offloads nothing.

    ## What it does
    Reports `offload_param` or `offload_optimizer` blocks that leave out `device`. DeepSpeed's
    default device is `"none"` (the configuration docs say `cpu`), so such a block configures
    offload options and offloads nothing.

    ## Why is this bad
    The settings next to it (`pin_memory`, buffer sizes, `ratio`) suggest offload is on. The run
    keeps everything on the GPU, runs out of memory, or wastes the effort spent tuning offload.

    ## Example
    ```json
    {"zero_optimization": {"stage": 3, "offload_optimizer": {"pin_memory": true}}}
    ```

    ## Use instead
    ```json
    {"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "pin_memory": true}}}
    ```
    """

    code = "DS304"
    name = "offload-without-device"
    severity = "error"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        stage = zero_stage(data)
        for block, needs in ((OP, (3,)), (OO, (1, 2, 3))):
            value = get(data, block)
            if not isinstance(value, dict) or "device" in value:
                continue
            if stage is not None and stage not in needs:
                continue  # the stage ignores the block (DS301, DS303)
            device = "nvme" if value.get("nvme_path") not in (None, MISSING) else "cpu"
            yield self.finding(
                document, block,
                f"{block[len(Z) + 1:]} has no \"device\": DeepSpeed's default is \"none\" (not cpu, as its docs say), "
                f"so nothing is offloaded; add \"device\": \"{device}\" (or remove the block)",
                key=True, fix=f'"device": "{device}"')


class NvmeOffloadWithoutPath(Rule):
    """NVMe offload without `nvme_path`, which fails in `deepspeed.initialize` (swap space set-up).

    ## What it does
    Reports an offload block with `device: "nvme"` and no `nvme_path` at ZeRO stage 3 (or an
    unknown stage). The schema accepts it; `deepspeed.initialize` then fails when ZeRO-3 sets up
    the swap space: for parameters it asserts `"nvme_path" in DeepSpeed Config cannot be None`,
    for the optimizer state it joins a path to `None` (TypeError).

    ## Why is this bad
    The failure comes at start-up on the cluster, after the job got its nodes, with a message
    that does not name the missing key.

    ## Example
    ```json
    {"zero_optimization": {"stage": 3, "offload_param": {"device": "nvme"}}}
    ```

    ## Use instead
    ```json
    {"zero_optimization": {"stage": 3, "offload_param": {"device": "nvme", "nvme_path": "/local_nvme"}}}
    ```
    """

    code = "DS305"
    name = "nvme-offload-without-path"
    severity = "error"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        stage = zero_stage(data)
        if stage not in (3, None):
            return  # below stage 3 NVMe is ignored or treated as CPU (DS301, DS302)
        for block in (OP, OO):
            value = get(data, block)
            if not isinstance(value, dict) or value.get("device") != "nvme":
                continue
            path = value.get("nvme_path")
            if path == "auto" or (isinstance(path, str) and path.strip()):
                continue
            found = "no nvme_path" if path is None else f"nvme_path {json.dumps(path)}"
            yield self.finding(
                document, block + "/device",
                f"{block[len(Z) + 1:]} offloads to NVMe with {found}: deepspeed.initialize fails when ZeRO-3 sets "
                f"up the NVMe swap space ({_NVME_FAILURE[block]}); add \"nvme_path\": the directory on the local "
                "NVMe drive")


# How deepspeed.initialize (0.19.8) fails without nvme_path, by offload block.
_NVME_FAILURE = {OP: "AssertionError: \"nvme_path\" in DeepSpeed Config cannot be None",
                 OO: "TypeError: expected str, bytes or os.PathLike object, not NoneType"}


@dataclass(frozen=True, slots=True)
class StageRejection:
    """A value DeepSpeed's zero_optimization validator rejects unless the stage is one of `stages`."""

    pointer: str
    stages: tuple[int, ...]
    applies: Callable[[Any], bool]
    what: str
    assertion: str
    fix: str
    instead: str


STAGE_REJECTIONS: tuple[StageRejection, ...] = (
    StageRejection(OO + "/ratio", (3,), lambda v: not isinstance(v, bool) and isinstance(v, (int, float)) and 0 <= v < 1,
                   "partial optimizer offload", "Partial offloading only supported for ZeRO Stage 3", "1.0",
                   "remove ratio to offload all optimizer state"),
    StageRejection(Z + "/compute_grad_norm", (1, 2), lambda v: truth(v) is False,
                   "skipping the gradient-norm computation",
                   "compute_grad_norm=false is supported only with ZeRO Stage 1 or 2", "true", "remove it"),
    StageRejection("/gradient_allreduce_op", (0, 1, 2), lambda v: isinstance(v, str) and v.lower() == "sum",
                   "summed instead of averaged gradients",
                   "gradient_allreduce_op='sum' is not supported with ZeRO stage 3", '"mean"',
                   "remove it (gradients are averaged, \"mean\")"),
    # DeepSpeedConfig._do_error_check asserts these whether or not fp16/bf16 is enabled.
    *(StageRejection(f"{block}/{name}", (1, 2, 3), lambda v: truth(v) is True, what,
                     f"{assertion} is only supported with ZeRO Stage 1, 2, or 3", "false", "remove it")
      for block in ("/fp16", "/bf16", "/bfloat16") for name, what, assertion in (
          ("fp16_master_weights_and_grads", "fp16 master weights and gradients", "Fp16_master_weights_and_grads"),
          ("bf16_master_weights_and_grads", "bf16 master weights and gradients", "Bf16_master_weights_and_grads"),
          ("bf16_optimizer_states", "bf16 optimizer states", "bf16_optimizer_states"))
      if name[:4] == ("fp16" if block == "/fp16" else "bf16")),
)


class SettingRejectedAtStage(Rule):
    """A value that DeepSpeed rejects at the configured ZeRO stage.

    ## What it does
    Reports values that DeepSpeed's config validators only accept at some stages:
    `offload_optimizer.ratio` below 1 (partial offload) needs stage 3 ("Partial offloading only
    supported for ZeRO Stage 3"); `compute_grad_norm: false` needs stage 1 or 2;
    `gradient_allreduce_op: "sum"` is refused at stage 3; `fp16.fp16_master_weights_and_grads`,
    `bf16.bf16_master_weights_and_grads` and `bf16.bf16_optimizer_states` need ZeRO (stage 1-3),
    even when that precision is not enabled.

    ## Why is this bad
    The run stops at `deepspeed.initialize`, on the cluster, after the job got its GPUs.
    Without `ratio` (or with 1.0) stages 1 and 2 offload all optimizer state.

    ## Example
    ```json
    {"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu", "ratio": 0.3}}}
    ```

    ## Use instead
    ```json
    {"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "ratio": 0.3}}}
    ```
    """

    code = "DS306"
    name = "setting-rejected-at-zero-stage"
    severity = "error"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        stage = zero_stage(data)
        if stage is None:
            return
        for rejection in STAGE_REJECTIONS:
            value = get(data, rejection.pointer)
            if value is MISSING or stage in rejection.stages or not rejection.applies(value):
                continue
            if rejection.pointer.startswith(("/bf16/", "/bfloat16/")) and \
                    not rejection.pointer.startswith(f"{bf16_block(data)}/"):
                continue  # the bf16 block DeepSpeed does not read (DS321)
            if not key_read_by(rejection.pointer, context.deepspeed_version):
                continue  # a version that ignores the key (DS322)
            name = rejection.pointer[len(Z) + 1:] if rejection.pointer.startswith(Z + "/") else rejection.pointer[1:]
            yield self.finding(
                document, rejection.pointer,
                f"{name.replace('/', '.')} is {json.dumps(value)} ({rejection.what}) at "
                f"ZeRO stage {stage}: DeepSpeed rejects the config at launch (\"{rejection.assertion}\"); set the "
                f"stage to {' or '.join(map(str, rejection.stages))}, or {rejection.instead}", fix=rejection.fix)


class PipelineWithZero2Or3(Rule):
    """A `pipeline` section together with ZeRO stage 2 or 3, which the pipeline engine rejects.

    ## What it does
    Reports ZeRO stage 2 or 3 in a config that has a `pipeline` section. DeepSpeed's
    `PipelineEngine` asserts "ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism" when
    it starts. If the model is not a `PipelineModule`, the section is never read instead; where
    the consumer shows that (the Hugging Face Trainer, Accelerate, a `from_pretrained` model),
    pipeline-section-without-pipeline-module (DS423) reports the section instead.

    Also reports ZeRO stage 2 or 3 in a config that a Megatron-DeepSpeed launch runs (`--deepspeed
    --deepspeed_config`) without `--no-pipeline-parallel`: Megatron-DeepSpeed's entry builds its
    model as a PipelineModule (`GPTModelPipe`) unless that flag is given, at any pipeline size.
    This is an error where the entry script in the tree shows that branch; an info where it is
    not in the tree or the launch passes arguments decided at run time.

    ## Why is this bad
    Either the run stops at `deepspeed.initialize`, or the pipeline settings do nothing and the
    model is not pipelined at all. (The number of stages and the partition method come from
    `PipelineModule(num_stages=..., partition_method=...)`, not from this section.)

    ## Example
    ```json
    {"zero_optimization": {"stage": 2}, "pipeline": {"activation_checkpoint_interval": 1}}
    ```

    ## Use instead
    ```json
    {"zero_optimization": {"stage": 1}, "pipeline": {"activation_checkpoint_interval": 1}}
    ```
    or remove the `pipeline` section when the model is not a `PipelineModule`.
    """

    code = "DS307"
    name = "pipeline-with-zero-stage-2-or-3"
    severity = "error"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        stage = zero_stage(data)
        if stage not in (2, 3):
            return
        if not isinstance(data.get("pipeline"), dict):
            yield from self._megatron_deepspeed(document, context, stage)
            return
        from shardshift.context import UnknownContext
        from shardshift.rules.deepspeed.pipeline import model_verdict

        verdict, _, undecided = model_verdict(document, context)
        if verdict == "plain":
            return  # no PipelineEngine is built: the section is ignored (DS423), nothing asserts
        unknown = None
        if verdict == "none":  # the assertion needs a PipelineModule, which only the model's code shows
            unknown = UnknownContext("program", "no script or config that reads this file was found, so whether its "
                                     "model is a PipelineModule (the pipeline engine's assertion) or not (the section "
                                     "is ignored) is unknown",
                                     "check the ds_config together with the training script that uses it")
        elif verdict == "unknown":
            where = undecided[0]
            shown = os.path.relpath(where.file) if os.path.isabs(where.file) else where.file
            unknown = UnknownContext("program", f"whether the model that reaches deepspeed.initialize through "
                                     f"{shown}:{where.line} is a PipelineModule could not be decided",
                                     "check the ds_config together with the files that define the model")
        yield self.finding(
            document, stage_pointer(data),
            f"ZeRO stage {stage} with a pipeline section: DeepSpeed's pipeline engine asserts stage < 2 at start-up, "
            "and without a PipelineModule the pipeline section is not read at all; use stage 1 (or 0) with pipeline "
            "parallelism, or remove the pipeline section", fix="1", unknown_context=unknown)


    def _megatron_deepspeed(self, document: Document, context: Context, stage: int) -> Iterable[Finding]:
        """A Megatron-DeepSpeed launch that runs this file: its entry builds a PipelineModule (GPTModelPipe)
        whenever --deepspeed is given without --no-pipeline-parallel, at any pipeline size, and the
        pipeline engine asserts on ZeRO-2 and ZeRO-3."""
        from shardshift.context import UnknownContext

        for launch in megatron_deepspeed_launches(document, context):
            # imported only with such a launch: a ds_config checked alone loads no Megatron rule
            from shardshift.rules.megatron.base import Flags

            flags = Flags(launch)
            if flags.given("no_pipeline_parallel") and not flags.undecided("no_pipeline_parallel"):
                continue
            line = flags.arguments.launch.line if flags.arguments.launch is not None else 1
            related = [Related(launch.path, line, 1, None, "the Megatron-DeepSpeed launch without --no-pipeline-parallel")]
            program = flags.program
            builds = pipeline_unless_flag(program.path if program is not None else None)
            message = (f"ZeRO stage {stage} under a Megatron-DeepSpeed launch without --no-pipeline-parallel: its entry "
                       "builds the model as a PipelineModule (GPTModelPipe) unless that flag is given, and DeepSpeed's "
                       "pipeline engine asserts \"ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism\" at "
                       "start-up; add --no-pipeline-parallel to the launch, or use stage 1 (or 0)")
            unknown = None
            if flags.spliced or flags.undecided("no_pipeline_parallel"):
                unknown = UnknownContext("program", f"{os.path.basename(launch.path)} passes arguments decided at run "
                                         "time, which may hold --no-pipeline-parallel", "check the script with --env "
                                         "set to the values the job uses")
            elif builds is None:
                entry = program.entry if program is not None else "the entry script"
                unknown = UnknownContext("program", f"{entry} is not in the checked tree, or does not show that it "
                                         "builds a PipelineModule unless --no-pipeline-parallel (Megatron-DeepSpeed's "
                                         "pretrain_gpt.py does)", "check the tree with the entry script the launch runs")
            else:
                related.append(Related(program.path, builds, 1, None, "builds a PipelineModule unless "
                                       "--no-pipeline-parallel"))
            yield self.finding(document, stage_pointer(document.data), message, related=related,
                               unknown_context=unknown, fix="1")


_PIPE_UNLESS = re.compile(r"\bnot\s+args\.no_pipeline_parallel\b")
_PIPE_MODEL = re.compile(r"\b(?:\w+Pipe|PipelineModule)\s*\(")


def megatron_deepspeed_launches(document: Document, context: Context) -> list[Document]:
    """The Megatron-DeepSpeed launch scripts (megatron documents that pass --deepspeed) of the
    checked setups that run this ds_config."""
    from shardshift.setup import launches_of

    return [launch for launch in launches_of(document, context.setups, "megatron")
            if getattr(launch.data, "dialect", None) == "megatron-deepspeed"]


def pipeline_unless_flag(entry: str | None) -> int | None:
    """The line where the entry script builds a pipeline model under `not args.no_pipeline_parallel`
    (Megatron-DeepSpeed's pretrain_gpt.py: `if args.deepspeed and not args.no_pipeline_parallel:
    model = GPTModelPipe(...)`), or None when the script is not at hand or shows no such thing."""
    from shardshift.files import read_text

    text = read_text(entry, 2_000_000, bom=False) if entry else None
    if not text:
        return None
    test = _PIPE_UNLESS.search(text)
    if test is None:
        return None
    built = _PIPE_MODEL.search(text, test.end())
    if built is None or text.count("\n", test.end(), built.start()) > 12:  # the model built in that branch
        return None
    return text.count("\n", 0, built.start()) + 1


GATHER_SPELLINGS = (Z + "/stage3_gather_16bit_weights_on_model_save", Z + "/gather_16bit_weights_on_model_save",
                    Z + "/stage3_gather_fp16_weights_on_model_save")


class Zero3WithoutSixteenBitSave(Rule):
    """ZeRO-3 without `stage3_gather_16bit_weights_on_model_save`: saving the model saves no weights.

    ## What it does
    Reports a ZeRO stage 3 config that does not set `stage3_gather_16bit_weights_on_model_save`
    (default false). Under ZeRO-3 every GPU holds only a shard of each weight; without this
    setting `engine.save_16bit_model()` gathers nothing and returns False.

    ## Why is this bad
    The Hugging Face Trainer's `save_model()` then writes a model file without usable weights (and
    only logs that the full DeepSpeed checkpoint must be converted with `zero_to_fp32.py`);
    `accelerator.get_state_dict` raises. Many runs find out at the end of training, when the
    saved model does not load. Writing `false` on purpose (sharded checkpoints only) is not
    reported. Where the consumer is known and is a script that passes the file to
    `deepspeed.initialize` but never calls `save_16bit_model` (it saves with `save_checkpoint`),
    nothing is reported; where no consumer is found, or a launcher starts a program that is not
    followed, the finding is an info that says so.

    ## Example
    ```json
    {"zero_optimization": {"stage": 3}}
    ```

    ## Use instead
    ```json
    {"zero_optimization": {"stage": 3, "stage3_gather_16bit_weights_on_model_save": true}}
    ```
    """

    code = "DS308"
    name = "zero3-without-16bit-save"
    severity = "warning"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        if zero_stage(data) != 3 or any(get(data, p) is not MISSING for p in GATHER_SPELLINGS):
            return
        message = ("ZeRO stage 3 without stage3_gather_16bit_weights_on_model_save (default false): save_16bit_model "
                   "and the Hugging Face save_model write no usable weights, only the sharded checkpoint; add "
                   "\"stage3_gather_16bit_weights_on_model_save\": true (or false to keep sharded checkpoints only)")
        where = document.position(stage_pointer(data))
        from shardshift.context import UnknownContext
        from shardshift.rules.deepspeed.auto import consumers_of, search_stopped

        consumers = consumers_of(document, context)
        if not consumers:
            stopped = search_stopped(document, context)
            yield self.finding(document, GATHER_SPELLINGS[0], message, fix="true", position=where,
                               unknown_context=UnknownContext(
                                   "consumer", (stopped or "nothing found in the checked tree reads this ds_config")
                                   + ", so whether the run saves with save_16bit_model or the Hugging Face save_model "
                                   "is unknown",
                                   "check the ds_config together with the training script or config that uses it"))
            return
        if any(c.hugging_face and c.kind != "shell" for c in consumers):
            yield self.finding(document, GATHER_SPELLINGS[0], message, fix="true", position=where)
            return
        scripts = [c for c in consumers if c.kind == "deepspeed" and c.file.endswith(".py")]
        saving = [c for c in scripts if _saves_16bit(c.file)]
        if saving:
            yield self.finding(document, GATHER_SPELLINGS[0], message, fix="true", position=where)
            return
        if len(scripts) < len(consumers):  # a launcher: the program it starts is not followed
            yield self.finding(document, GATHER_SPELLINGS[0], message, fix="true", position=where,
                               unknown_context=UnknownContext(
                                   "program", "the program the launcher starts with this ds_config is not followed, "
                                   "so whether it saves with save_16bit_model (or the Hugging Face save_model) is "
                                   "unknown", "check the ds_config together with the training program"))
        # else: the scripts that pass it to deepspeed.initialize never call save_16bit_model: nothing to gather


SAVE_16BIT_CALLS = ("save_16bit_model", "save_fp16_model", "save_model(", "get_state_dict(", "save_pretrained(")


def _saves_16bit(path: str) -> bool:
    """Whether a script calls something that consolidates ZeRO-3 weights through the setting
    (or may: a file that cannot be read counts as saving)."""
    from shardshift.files import read_text

    text = read_text(path, errors="strict", bom=False)
    if text is None:
        return True
    return any(call in text for call in SAVE_16BIT_CALLS)


class OffloadPinMemoryDefault(Rule):
    """Offload without `pin_memory`, whose default flipped from false to true in DeepSpeed 0.19.5.

    ## What it does
    Reports an active offload block (`device` cpu or nvme, at a stage that reads it) that does
    not set `pin_memory`, and says which default the DeepSpeed version in use applies
    (`--deepspeed-version`, else the newest): true (page-locked host memory) from 0.19.5,
    false before.

    ## Why is this bad
    Pinned memory is faster but cannot be swapped out and counts against the memlock limit
    (`ulimit -l`). A config that ran on 0.19.4 can fail with host out-of-memory or memlock
    errors after an upgrade, and one written for 0.19.5 runs slower on an older DeepSpeed.
    This is a note: write the value you want to make the config mean the same everywhere.

    ## Example
    ```json
    {"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}}}
    ```

    ## Use instead
    ```json
    {"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu", "pin_memory": true}}}
    ```
    """

    code = "DS309"
    name = "offload-pin-memory-default"
    severity = "info"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        stage = zero_stage(data)
        if stage is None:
            return
        for block, needs in ((OP, (3,)), (OO, (1, 2, 3))):
            value = get(data, block)
            if stage not in needs or not isinstance(value, dict) or value.get("device") not in ("cpu", "nvme"):
                continue
            if "pin_memory" in value or "cpu_offload_use_pin_memory" in data["zero_optimization"]:
                continue
            change = default_change(block + "/pin_memory")
            assert change is not None
            version = context.deepspeed_version
            now = at_least(version, change.since)
            pinned = change.after if now else change.before
            since = version_text(change.since)
            other = (f"before {since} it was false (pageable memory, slower transfers)" if now else
                     f"from {since} it is true (pinned memory: needs memlock limits and RAM that cannot be swapped)")
            yield self.finding(
                document, block + "/pin_memory",
                f"{block[len(Z) + 1:]} does not set pin_memory: {context.deepspeed_version_text} uses "
                f"pin_memory {json.dumps(pinned)}, {change.meaning_after if now else change.meaning_before}; {other}; "
                "write pin_memory explicitly", fix=json.dumps(pinned), position=document.position(block + "/device"))


# --- settings DeepSpeed refuses together; round-robin gradients; hpZ group size (DS340-DS342) ---
