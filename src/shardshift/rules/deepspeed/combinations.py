"""Settings that only go wrong together: combinations DeepSpeed refuses at initialisation,
round-robin gradients without offload, the ZeRO++ hpZ group size against the nodes (DS340-DS342)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from shardshift.document import Document
from shardshift.rules.base import Context, Finding, Rule
from shardshift.rules.deepspeed.facts import (
    MISSING,
    OO,
    Z,
    bf16_block,
    get,
    number,
    offload_device,
    offloading,
    precision,
    truth,
    whole,
    zero_stage,
)
from shardshift.versions import deepspeed_default, default_change, key_read_by, version_text


def _python_false(value: Any) -> bool:
    """A permissive (dict.get) flag that DeepSpeed's `if not value` reads as false."""
    return value is not MISSING and value is not None and not value


def _clipping(data: dict, context: Context) -> tuple[float, str] | None:
    """The gradient clipping DeepSpeed applies and how the file says it; None when unknown ("auto")."""
    value = get(data, "/gradient_clipping")
    if value is MISSING:
        version = context.deepspeed_version
        clip = deepspeed_default("/gradient_clipping", version)
        change = default_change("/gradient_clipping")
        since = f"DeepSpeed {version_text(change.since)} and later" if change is not None else "the newest DeepSpeed"
        where = f"DeepSpeed {version_text(version)}" if version is not None else since
        return float(clip), f"gradient_clipping not set ({clip} by default in {where})"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value), f"gradient_clipping {json.dumps(value)}"


def _managed_off(data: dict, context: Context) -> bool:
    return (_python_false(get(data, "/managed_gradient_accumulation"))
            and key_read_by("/managed_gradient_accumulation", context.deepspeed_version))


def _allreduce_sum(data: dict, context: Context) -> bool:
    value = get(data, "/gradient_allreduce_op")
    return (isinstance(value, str) and value.lower() == "sum" and zero_stage(data) != 3  # stage 3: DS306
            and key_read_by("/gradient_allreduce_op", context.deepspeed_version))


def _grad_norm_off(data: dict) -> bool:
    return zero_stage(data) in (1, 2) and truth(get(data, Z + "/compute_grad_norm")) is False


def _zenflow(data: dict) -> bool:
    return get(data, Z + "/zenflow") not in (MISSING, None)


ZF = Z + "/zenflow"


def _zenflow_setting(data: dict, name: str) -> Any:
    """A ZenFlow setting as ZenFlowConfig holds it: "auto" when not written, a whole number (4.0 too, which
    its `Union[str, int]` field makes 4) as an int."""
    value = get(data, f"{ZF}/{name}")
    if value is MISSING:
        return "auto"
    return whole(value) if whole(value) is not None else value


def _zenflow_interval(data: dict, name: str) -> bool:
    """Whether a ZenFlow interval is a number to ZenFlowConfig (a boolean, which pydantic also makes one,
    is not judged)."""
    value = _zenflow_setting(data, name)
    return isinstance(value, int) and not isinstance(value, bool)


def _offloaded_to_cpu(data: dict) -> bool:
    """ZeRO-1/2's `cpu_offload` (engine.zero_cpu_offload): the optimizer offloaded to the CPU, not NVMe."""
    found = offload_device(data, OO)
    return found is not None and found[0] == "cpu"


def _deepcompile(data: dict) -> bool:
    return truth(get(data, "/compile/deepcompile")) is True


def _bf16(data: dict, name: str) -> str:
    return f"{bf16_block(data) or '/bf16'}/{name}"


def _static_loss_scale(data: dict) -> bool:
    scale = number(get(data, "/fp16/loss_scale"))  # DeepSpeed takes float(value): "128" is static too
    return scale is not None and scale != 0


@dataclass(frozen=True, slots=True)
class Conflict:
    """Two settings DeepSpeed refuses together. `found(data, context)` says what the file has when the
    conflict is there (None otherwise); the finding goes to `pointer`, with `other` as the related place."""

    pointer: Callable[[dict], str]
    other: Callable[[dict], str]
    found: Callable[[dict, Context], str | None]
    when: str
    refusal: str
    fix: str


PARSE, INIT = "while parsing the config", "in deepspeed.initialize"

CONFLICTS: tuple[Conflict, ...] = (
    Conflict(lambda d: "/managed_gradient_accumulation", lambda d: Z + "/overlap_comm",
             lambda d, c: (f"managed_gradient_accumulation false with overlap_comm true at ZeRO stage {zero_stage(d)}"
                           if _managed_off(d, c) and zero_stage(d) in (0, 1)
                           and truth(get(d, Z + "/overlap_comm")) is True else None),
             INIT, "managed_gradient_accumulation=False supports ZeRO overlap_comm only with ZeRO stage 2",
             "set overlap_comm to false, or use ZeRO stage 2 or 3"),
    Conflict(lambda d: "/managed_gradient_accumulation", lambda d: "/compile/deepcompile",
             lambda d, c: ("managed_gradient_accumulation false with compile.deepcompile true"
                           if _managed_off(d, c) and _deepcompile(d) else None),
             INIT, "managed_gradient_accumulation=False is not supported with DeepCompile",
             "remove managed_gradient_accumulation or turn DeepCompile off"),
    Conflict(lambda d: "/gradient_allreduce_op", lambda d: Z + "/zenflow",
             lambda d, c: ("gradient_allreduce_op \"sum\" with zero_optimization.zenflow"
                           if _allreduce_sum(d, c) and _zenflow(d) else None),
             PARSE, "gradient_allreduce_op='sum' is not supported with ZenFlow",
             "remove gradient_allreduce_op (gradients are averaged) or the zenflow block"),
    Conflict(lambda d: "/gradient_allreduce_op", lambda d: "/compile/deepcompile",
             lambda d, c: ("gradient_allreduce_op \"sum\" with compile.deepcompile true"
                           if _allreduce_sum(d, c) and _deepcompile(d) else None),
             PARSE, "gradient_allreduce_op='sum' is not supported with DeepCompile",
             "remove gradient_allreduce_op (gradients are averaged) or turn DeepCompile off"),
    Conflict(lambda d: _bf16(d, "bf16_optimizer_states"), lambda d: _bf16(d, "bf16_master_weights_and_grads"),
             lambda d, c: ("bf16_optimizer_states true without bf16_master_weights_and_grads true"
                           if zero_stage(d) in (1, 2, 3) and truth(get(d, _bf16(d, "bf16_optimizer_states"))) is True
                           and truth(get(d, _bf16(d, "bf16_master_weights_and_grads"))) is not True else None),
             PARSE, "bf16_optimizer_states requires bf16_master_weights_and_grads to be enabled.",
             "add \"bf16_master_weights_and_grads\": true, or remove bf16_optimizer_states"),
    Conflict(lambda d: Z + "/compute_grad_norm", lambda d: "/gradient_clipping",
             lambda d, c: (f"compute_grad_norm false with {clip[1]}"
                           if _grad_norm_off(d) and (clip := _clipping(d, c)) is not None and clip[0] > 0 else None),
             INIT, "zero_optimization.compute_grad_norm=false requires gradient_clipping=0",
             "set \"gradient_clipping\": 0, or remove compute_grad_norm"),
    Conflict(lambda d: Z + "/compute_grad_norm", lambda d: OO + "/device",
             lambda d, c: ("compute_grad_norm false with optimizer offload"
                           if _grad_norm_off(d) and offloading(d, OO) else None),
             INIT, "zero_optimization.compute_grad_norm=false does not support optimizer offload",
             "remove compute_grad_norm or the optimizer offload"),
    Conflict(lambda d: Z + "/compute_grad_norm", lambda d: Z + "/zenflow",
             lambda d, c: "compute_grad_norm false with zenflow" if _grad_norm_off(d) and _zenflow(d) else None,
             INIT, "zero_optimization.compute_grad_norm=false does not support ZenFlow",
             "remove compute_grad_norm or the zenflow block"),
    Conflict(lambda d: Z + "/compute_grad_norm", lambda d: "/data_types/grad_accum_dtype",
             lambda d, c: ("compute_grad_norm false at ZeRO stage 1 with bf16 and fp32 gradient accumulation"
                           if _grad_norm_off(d) and zero_stage(d) == 1 and precision(d) == "bf16"
                           and str(get(d, "/data_types/grad_accum_dtype")).lower() == "fp32"
                           and not offloading(d, OO) else None),
             INIT, "zero_optimization.compute_grad_norm=false does not support ZeRO Stage 1 with BF16 parameters "
                   "and FP32 gradient accumulation",
             "remove compute_grad_norm, or use ZeRO stage 2"),
    Conflict(lambda d: Z + "/legacy_stage1", lambda d: Z + "/stage",
             lambda d, c: (f"legacy_stage1 true at ZeRO stage {zero_stage(d)}"
                           if zero_stage(d) in (1, 2, 3) and truth(get(d, Z + "/legacy_stage1")) is True else None),
             INIT, "The deprecated version of ZeRO Stage 1 is not supported in deepspeed >= 0.5.9",
             "remove legacy_stage1 (the current ZeRO stage 1 is the only one DeepSpeed has)"),
    Conflict(lambda d: "/fp16/loss_scale", lambda d: "/optimizer/type",
             lambda d, c: (f"optimizer Lamb with the static fp16.loss_scale {json.dumps(get(d, '/fp16/loss_scale'))}"
                           if isinstance(get(d, "/optimizer/type"), str) and get(d, "/optimizer/type").lower() == "lamb"
                           and _static_loss_scale(d) else None),
             INIT, "DeepSpeed lamb optimizer requires dynamic loss scaling",
             "set fp16.loss_scale to 0 (dynamic loss scaling; the check applies even with fp16 off)"),
    # runtime/torch_autocast.py _validate_auto_cast_settings, run when torch_autocast is enabled
    Conflict(lambda d: "/torch_autocast/enabled", lambda d: Z + "/zero_quantized_weights",
             lambda d, c: ("torch_autocast enabled with zero_optimization.zero_quantized_weights true"
                           if truth(get(d, "/torch_autocast/enabled")) is True
                           and truth(get(d, Z + "/zero_quantized_weights")) is True else None),
             INIT, "Cannot enable both torch autocast and zero quantized weights",
             "turn off zero_quantized_weights or torch_autocast"),
    # runtime/zenflow/zenflow_stage_1_and_2.py _configure_zenflow: ZenFlow's ZeRO-1/2 optimizer
    Conflict(lambda d: Z + "/zenflow", lambda d: OO + "/device",
             lambda d, c: (f"zero_optimization.zenflow at ZeRO stage {zero_stage(d)} without optimizer offload to the CPU"
                           if _zenflow(d) and zero_stage(d) in (1, 2) and not _offloaded_to_cpu(d) else None),
             INIT, "Zenflow must be used with cpu offload",
             "add \"offload_optimizer\": {\"device\": \"cpu\"} to zero_optimization, or remove the zenflow block"),
    # runtime/zenflow/engine.py configure_zenflow (ZenFlowConfig's defaults: "auto" for all three)
    Conflict(lambda d: ZF + "/select_interval", lambda d: ZF + "/select_strategy",
             lambda d, c: (f"zenflow select_interval {_zenflow_setting(d, 'select_interval')} with select_strategy "
                           "\"auto\""
                           if _zenflow(d) and _zenflow_setting(d, "select_strategy") == "auto"
                           and _zenflow_interval(d, "select_interval") else None),
             INIT, "If use auto select strategy, select_interval will be set to 1 ... (raised as a Warning exception)",
             "remove select_interval, or set select_strategy to \"step\" or \"epoch\""),
    Conflict(lambda d: ZF + "/select_strategy", lambda d: ZF + "/select_interval",
             lambda d, c: (f"zenflow select_strategy {json.dumps(_zenflow_setting(d, 'select_strategy'))} with "
                           f"select_interval {json.dumps(_zenflow_setting(d, 'select_interval'))}"
                           f"{' (its default)' if get(d, ZF + '/select_interval') is MISSING else ''}"
                           if _zenflow(d) and _zenflow_setting(d, "select_strategy") in ("step", "epoch")
                           and isinstance(_zenflow_setting(d, "select_interval"), str) else None),
             INIT, "If don't use auto select strategy, select_interval must be a number.",
             "give select_interval a number of steps (or epochs)"),
    Conflict(lambda d: ZF + "/select_interval", lambda d: ZF + "/update_interval",
             lambda d, c: (f"zenflow select_interval {_zenflow_setting(d, 'select_interval')} below update_interval "
                           f"{_zenflow_setting(d, 'update_interval')} with select_strategy \"step\""
                           if _zenflow(d) and _zenflow_setting(d, "select_strategy") == "step"
                           and _zenflow_interval(d, "select_interval")
                           and _zenflow_interval(d, "update_interval")
                           and 0 != _zenflow_setting(d, "select_interval") < _zenflow_setting(d, "update_interval")
                           else None),
             INIT, "Select interval must be greater or equal to update interval",
             "make select_interval at least update_interval"),
)


class SettingsRejectedTogether(Rule):
    """Two settings that DeepSpeed refuses to combine, when it parses the config or in `initialize`.

    ## What it does
    Reports combinations DeepSpeed 0.19.8 rejects: `managed_gradient_accumulation: false` with
    `overlap_comm` at ZeRO stage 0 or 1, or with DeepCompile; `gradient_allreduce_op: "sum"`
    with ZenFlow or DeepCompile; `bf16_optimizer_states` without `bf16_master_weights_and_grads`;
    `compute_grad_norm: false` with gradient clipping (its default is 1.0 since DeepSpeed 0.19.3),
    optimizer offload, ZenFlow, or at stage 1 with bf16 and fp32 gradient accumulation; the
    `Lamb` optimizer with a static `fp16.loss_scale`; `zero_optimization.legacy_stage1: true`
    with ZeRO on (the legacy stage 1 was removed in DeepSpeed 0.5.9); `torch_autocast` with
    `zero_quantized_weights`; ZenFlow at ZeRO stage 1 or 2 without optimizer offload to the CPU,
    or with a `select_interval` that its `select_strategy` refuses (a number under `"auto"`, none
    under `"step"` / `"epoch"`, one below `update_interval` under `"step"`).

    ## Why is this bad
    Each half is valid on its own, so the file passes a schema check; DeepSpeed stops with an
    assertion or ValueError when it parses the config or builds the engine, after the job got
    its GPUs. The message names DeepSpeed's own refusal and the setting to change.

    ## Example
    ```json
    {"managed_gradient_accumulation": false, "zero_optimization": {"stage": 1, "overlap_comm": true}}
    ```

    ## Use instead
    ```json
    {"managed_gradient_accumulation": false, "zero_optimization": {"stage": 2, "overlap_comm": true}}
    ```
    """

    code = "DS340"
    name = "settings-rejected-together"
    severity = "error"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        if not isinstance(data, dict):
            return
        for conflict in CONFLICTS:
            found = conflict.found(data, context)
            if found is None:
                continue
            other = conflict.other(data)
            related = []
            if get(data, other) is not MISSING:
                related.append(self.related(document, other, f"{other[1:].replace('/', '.')}: the other half"))
            yield self.finding(
                document, conflict.pointer(data),
                f"{found}: DeepSpeed refuses this combination {conflict.when} (\"{conflict.refusal}\"); "
                f"{conflict.fix}", related=related)


class RoundRobinGradientsWithoutOffload(Rule):
    """`round_robin_gradients` at ZeRO stage 1 or 2 without optimizer offload, where it speeds up nothing.

    ## What it does
    Reports `zero_optimization.round_robin_gradients: true` at stage 1 or 2 when the optimizer
    state is not offloaded (`offload_optimizer.device` cpu or nvme, or the legacy `cpu_offload`).
    (At stage 0 and 3 the key is not read at all: setting-ignored-at-zero-stage, DS303.)

    ## Why is this bad
    DeepSpeed documents it as a stage 1/2 optimisation for CPU offload: it spreads the copy of
    gradients to CPU memory over the ranks. Without offload there is no such copy; the setting
    only reorders which rank owns which gradient partition, so the speed-up it was set for never
    happens, and the partition layout differs from a run without it.

    ## Example
    ```json
    {"zero_optimization": {"stage": 2, "round_robin_gradients": true}}
    ```

    ## Use instead
    ```json
    {"zero_optimization": {"stage": 2, "round_robin_gradients": true, "offload_optimizer": {"device": "cpu"}}}
    ```
    or remove `round_robin_gradients`.
    """

    code = "DS341"
    name = "round-robin-gradients-without-offload"
    severity = "warning"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        stage = zero_stage(data)
        if stage not in (1, 2) or truth(get(data, Z + "/round_robin_gradients")) is not True:
            return
        found = offload_device(data, OO)
        if found is not None and found[0] in ("cpu", "nvme", "auto"):
            return
        yield self.finding(
            document, Z + "/round_robin_gradients",
            f"round_robin_gradients is true at ZeRO stage {stage} without optimizer offload: it only speeds up "
            "copying gradients to CPU memory under offload_optimizer, so here it merely reorders which rank owns "
            "which gradient; remove it, or offload the optimizer state (\"offload_optimizer\": {\"device\": \"cpu\"})",
            fix="false")


class HpzPartitionSizeMismatch(Rule):
    """ZeRO++ `zero_hpz_partition_size` that does not fit the world size or the GPUs per node.

    ## What it does
    At ZeRO stage 3 with `zero_hpz_partition_size` above 1, and with the run's shape from
    `--world-size` or `--nodes`/`--gpus-per-node`: an error when the world size is not a multiple
    of the group size (DeepSpeed asserts it when it builds the hpZ groups), a warning when the
    groups of consecutive ranks cross node boundaries (the size is larger than, or does not
    divide, the GPUs per node). Without the run's shape nothing is reported.

    ## Why is this bad
    hpZ keeps a secondary copy of the parameters partitioned within each group so that ZeRO-3's
    all-gathers stay inside a node; ZeRO++ expects the group to be one node. Groups that span
    nodes send those all-gathers over the network again (users report no speed-up, hangs, or a
    loss that stops moving), and a size that does not divide the world stops
    `deepspeed.initialize`. (qwZ's need for element counts divisible by 8 depends on the model
    and is not checked.)

    ## Example
    With `--nodes 2 --gpus-per-node 8`:
    ```json
    {"zero_optimization": {"stage": 3, "zero_hpz_partition_size": 16}}
    ```

    ## Use instead
    ```json
    {"zero_optimization": {"stage": 3, "zero_hpz_partition_size": 8}}
    ```
    """

    code = "DS342"
    name = "hpz-partition-size-mismatch"
    severity = "error"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        pointer = Z + "/zero_hpz_partition_size"
        hpz = whole(get(data, pointer))
        if zero_stage(data) != 3 or hpz is None or hpz <= 1:
            return
        world, per_node = context.world_size, context.gpus_per_node
        if world is not None and world % min(hpz, world):
            group = min(hpz, world)
            yield self.finding(
                document, pointer,
                f"zero_hpz_partition_size is {hpz} but the world size {world} is not a multiple of it: DeepSpeed "
                f"asserts \"{world} is not divisible by {group}\" when it builds the hpZ groups; use a divisor of "
                f"{world}" + (f", normally the GPUs per node ({per_node})" if per_node else ""),
                fix=str(per_node) if per_node and world % per_node == 0 else None)
            return
        group = min(hpz, world) if world else hpz  # DeepSpeed caps the group at the world size
        if per_node is None or (group <= per_node and per_node % group == 0):
            return
        how = (f"each group spans {group / per_node:g} nodes of {per_node} GPUs" if group > per_node else
               f"groups of {group} consecutive ranks straddle the boundaries of nodes of {per_node} GPUs")
        yield self.finding(
            document, pointer,
            f"zero_hpz_partition_size is {hpz} with {per_node} GPUs per node: {how}, so the all-gathers hpZ keeps "
            f"inside a node cross the network; set it to {per_node} (the GPUs per node)", fix=str(per_node),
            severity="warning")
