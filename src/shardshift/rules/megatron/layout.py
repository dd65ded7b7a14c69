"""Megatron rules: the parallel layout (MG101-MG149).

Each rule restates one check of Megatron-LM's own code (../shared/oracles/megatron-lm, the commit of
formats/megatron/flags.json): `validate_args` (megatron/training/arguments.py), the model config's
`__post_init__` (megatron/core/transformer/transformer_config.py), or a later check that runs
once the processes have started (parallel_state.initialize_model_parallel, the MoE layer, the
interleaved schedule, the sequence-parallel scatter). Messages say which one stops the run and
when. tests/test_rules_megatron_layout.py confirms every claim the argument checks can confirm
with Megatron's own code (tests/megatron_oracle.py).

A value is judged only when it is certain: a flag whose value the script decides at run time, a
flag that an unresolved splice (`$EXTRA_ARGS` from the environment, `"$@"`) given after it may
override, and a default that such a splice may replace are all left alone. Arguments that
Megatron takes from elsewhere (`--yaml-cfg`, `--use-checkpoint-args`, a heterogeneous layers
config) and Megatron-DeepSpeed launches (an older fork with its own argument checks) are not
judged at all."""

from __future__ import annotations

import math
import re
from typing import Any, Iterable

from shardshift.plan import Unknown
from shardshift.rules.base import Context, Finding
from shardshift.rules.megatron.base import Flags, MegatronRule

UNSURE = object()  # a value that cannot be known before the job runs

# Arguments taken from somewhere else than the command line: validate_args is skipped (--yaml-cfg) or
# the model's shape is overwritten from a checkpoint or a config file before it runs.
ELSEWHERE = ("yaml_cfg", "use_checkpoint_args", "heterogeneous_layers_config_path",
             "heterogeneous_layers_config_encoded_json")
ACCOUNT = (("account_for_embedding_in_pipeline_split", "embedding"), ("account_for_loss_in_pipeline_split", "loss"))
VIRTUAL = ("num_layers_per_virtual_pipeline_stage", "num_virtual_stages_per_pipeline_rank",
           "pipeline_model_parallel_layout")
UNEVEN = ("decoder_first_pipeline_num_layers", "decoder_last_pipeline_num_layers")
HYBRID = ("hybrid_layer_pattern", "hybrid_override_pattern")
# Sequences packed or padded per sample instead of cut to --seq-length (SFT, hybrid context parallel, RL).
PACKED = ("sft", "hybrid_context_parallel", "rl_use_sequence_packing", "perform_rl_step")
WEIGHT_SHARDS = ("tensor_parallel_num_weight_shards", "expert_tensor_parallel_num_weight_shards")


class Args:
    """The values Megatron uses, or UNSURE. A given value is sure when it is known and no
    unresolved splice comes after it; a default is sure when no unresolved splice exists."""

    def __init__(self, flags: Flags) -> None:
        self.flags = flags
        self.open = flags.last_splice

    def sure(self, dest: str) -> bool:
        item = self.flags.item(dest)
        if item is None:
            return self.open is None
        if item.problem or isinstance(item.value, Unknown):
            return False
        if isinstance(item.value, list) and any(isinstance(v, Unknown) for v in item.value):
            return False
        return self.open is None or (item.line, item.column, 1) > self.open

    def value(self, dest: str) -> Any:
        return self.flags.value(dest) if self.sure(dest) else UNSURE

    def known(self, *dests: str) -> bool:
        return all(self.sure(d) for d in dests)

    def int(self, dest: str) -> int | None:
        """A sure int value (None when unsure, unset or not an int)."""
        value = self.value(dest)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def on(self, dest: str) -> bool | None:
        """A sure switch: True or False; None when unsure."""
        value = self.value(dest)
        return None if value is UNSURE else bool(value)

    def given(self, dest: str) -> bool:
        return self.flags.given(dest)

    def spelled(self, dest: str) -> str:
        return self.flags.spelled(dest)

    def shown(self, dest: str) -> str:
        """`--flag value` as Megatron sees it (the flag as written, or its default)."""
        value = self.value(dest)
        if isinstance(value, bool):
            return self.spelled(dest)
        if isinstance(value, list):
            value = " ".join(str(v) for v in value)
        suffix = "" if self.given(dest) else " (the default)"
        return f"{self.spelled(dest)} {value}{suffix}"


def _divisors(n: int, limit: int | None = None) -> list[int]:
    """The divisors of `n` in order, found in pairs up to its square root. Past 10**10 only the
    divisors up to 100,000 and their partners: no layer or GPU count is that large, and a value
    such as 2**64 + 1 must not stop the check."""
    small: list[int] = []
    large: list[int] = []
    for d in range(1, min(math.isqrt(n), 100_000) + 1) if n > 0 else ():
        if n % d == 0:
            small.append(d)
            if d != n // d:
                large.append(n // d)
    return [d for d in small + large[::-1] if limit is None or d <= limit]


class _LayoutRule(MegatronRule):
    """Reads the arguments once (Args) and skips what Megatron does not take from them."""

    def check_flags(self, flags: Flags, context: Context) -> Iterable[Finding]:
        if flags.arguments.dialect != "megatron-lm":
            return ()
        if any(flags.given(d) for d in ELSEWHERE):
            return ()
        return self.check_args(Args(flags), context) or ()

    def check_args(self, a: Args, context: Context) -> Iterable[Finding]:
        raise NotImplementedError

    def related(self, a: Args, *dests: str) -> list:
        out = []
        for dest in dests:
            out += self.also(a.flags, dest)
        return out


# --- the pipeline -----------------------------------------------------------------------------------


def _layout_stages(layout: str) -> int | None:
    """PipelineParallelLayerLayout.get_num_stages_from_str: the stages of a layout string
    (megatron/core/transformer/pipeline_parallel_layer_layout.py), None when Megatron would reject
    the string itself (a character other than E, t, m, L and |)."""
    text = layout.replace(",", "")
    for pattern in (r"\(([^)]+)\)\*(\d+)", r"(.)\*(\d+)"):
        text = re.sub(pattern, lambda m: m.group(1) * int(m.group(2)), text)
    stages = text.split("|")
    if any(ch not in "EtmL" for stage in stages for ch in stage):
        return None
    return len(stages)


class Pipeline:
    """What validate_args derives for the pipeline from the arguments (arguments.py, "Uneven virtual
    pipeline parallelism" and after): `vpp` is the interleaved degree (None: not interleaved;
    UNSURE when it cannot be known)."""

    def __init__(self, a: Args) -> None:
        self.a = a
        self.pp = a.int("pipeline_model_parallel_size")
        self.layers = a.int("num_layers")
        self.hybrid = any(a.given(d) for d in HYBRID) or not a.known(*HYBRID)
        self.other_layers = a.given("encoder_num_layers") or a.given("decoder_num_layers")
        self.account = [(d, what) for d, what in ACCOUNT if a.on(d)]
        self.account_sure = a.known(*(d for d, _ in ACCOUNT))
        self.virtual = [d for d in VIRTUAL if a.given(d)]
        self.virtual_sure = a.known(*VIRTUAL)
        self.uneven = [d for d in UNEVEN if a.given(d)]
        self.uneven_sure = a.known(*UNEVEN)
        self.total = None
        if self.layers is not None and self.account_sure:
            self.total = self.layers + len(self.account)
        self.vpp = self._vpp()

    @property
    def plain(self) -> bool:
        """Layers split evenly by validate_args' rules (no hybrid pattern, no T5 layer counts)."""
        return not self.hybrid and not self.other_layers and self.pp is not None and self.pp >= 1

    def counted(self) -> str:
        """`--num-layers 6 + 1 (--account-for-embedding-in-pipeline-split)`."""
        text = f"{self.a.spelled('num_layers')} {self.layers}"
        for dest, _ in self.account:
            text += f" + 1 ({self.a.spelled(dest)})"
        if self.account:
            text += f" = {self.total}"
        return text

    def _vpp(self) -> Any:
        a = self.a
        if not self.virtual_sure or self.hybrid:
            return UNSURE
        if len(self.virtual) > 1:
            return UNSURE  # MG104: validate_args stops before deriving it
        if not self.virtual:
            return None
        dest = self.virtual[0]
        if self.pp is None:
            return UNSURE
        if dest == "pipeline_model_parallel_layout":
            layout = a.value(dest)
            stages = _layout_stages(layout) if isinstance(layout, str) else None
            if stages is None or stages % self.pp:
                return UNSURE
            vpp = stages // self.pp
        elif dest == "num_virtual_stages_per_pipeline_rank":
            vpp = a.int(dest)
            if vpp is None:
                return UNSURE
        else:
            per_stage = a.int(dest)
            if per_stage is None or per_stage < 1 or self.total is None or not self.uneven_sure or self.uneven:
                return UNSURE
            if self.total % self.pp or (self.total // self.pp) % per_stage:
                return UNSURE
            vpp = self.total // self.pp // per_stage
        return None if vpp == 1 else vpp


class LayersAgainstPipeline(_LayoutRule):
    """The number of layers does not split evenly over the pipeline stages.

    ## What it does
    Without an uneven split (`--decoder-first-pipeline-num-layers`,
    `--decoder-last-pipeline-num-layers`) or an explicit `--pipeline-model-parallel-layout`,
    Megatron gives every pipeline stage the same number of layers: `--num-layers` (plus one with
    `--account-for-embedding-in-pipeline-split`, plus one with
    `--account-for-loss-in-pipeline-split`) must be a multiple of
    `--pipeline-model-parallel-size`. `validate_args` asserts it ("Number of layers should be
    divisible by the pipeline-model-parallel size"), also with
    `--num-layers-per-virtual-pipeline-stage`. With `--num-virtual-stages-per-pipeline-rank`
    the arguments pass, and the model config (with an `--account-for-*` flag) or
    `get_num_layers_to_build` (without) stops when the model is built.

    ## Why is this bad
    The job stops before training; with `--num-virtual-stages-per-pipeline-rank` it stops only
    after the processes have started and initialised.

    ## Example
    ```sh
    --num-layers 30 --pipeline-model-parallel-size 4
    ```

    ## Use instead
    ```sh
    --num-layers 32 --pipeline-model-parallel-size 4
    # or an uneven split: 6 layers on the first stage, 8 on each of the other three
    --num-layers 30 --pipeline-model-parallel-size 4 --decoder-first-pipeline-num-layers 6
    ```
    """

    code = "MG101"
    name = "layers-against-pipeline"
    severity = "error"

    def check_args(self, a: Args, context: Context) -> Iterable[Finding]:
        p = Pipeline(a)
        if not p.plain or p.total is None or not p.virtual_sure or not p.uneven_sure:
            return
        if p.uneven or "pipeline_model_parallel_layout" in p.virtual or len(p.virtual) > 1:
            return  # MG103, MG105, MG104
        if p.total % p.pp == 0:
            return
        pp = a.shown("pipeline_model_parallel_size")
        if p.virtual == ["num_virtual_stages_per_pipeline_rank"]:
            if p.account:
                stage = ("the model config (TransformerConfig) raises ValueError when the model is built, after the "
                         "processes have started")
            else:
                stage = ("Megatron accepts the arguments, then get_num_layers_to_build "
                         "(megatron/core/transformer/transformer_block.py) asserts when the model is built, after the "
                         "processes have started")
        else:
            stage = ("validate_args asserts 'Number of layers should be divisible by the pipeline-model-parallel "
                     "size' before training starts")
            if p.virtual:
                stage = ("validate_args asserts 'number of layers of the model must be divisible pipeline model "
                         "parallel size' before training starts")
        extra = len(p.account)
        multiple = -(-p.total // p.pp) * p.pp - extra
        counted = f"{multiple} layers" + (f" ({multiple} + {extra} = {multiple + extra})" if extra else "")
        sizes = [d for d in _divisors(p.total) if d > 1][:6]
        yield self.at(a.flags, "num_layers",
                      f"{p.counted()} is not divisible by {pp}: every pipeline stage must hold the same number of "
                      f"layers, and {stage}; use {counted}, a pipeline size that divides {p.total} "
                      f"({', '.join(map(str, sizes)) or '1'}), or an uneven split with "
                      f"--decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers",
                      fix=str(multiple), related=self.related(a, "pipeline_model_parallel_size",
                                                              *(d for d, _ in p.account)))


class LayersAgainstVirtualStages(_LayoutRule):
    """The layers of a pipeline stage do not split into the virtual (interleaved) stages.

    ## What it does
    With `--num-layers-per-virtual-pipeline-stage N`, `validate_args` asserts that the layers of
    one pipeline stage (`--num-layers` / `--pipeline-model-parallel-size`, counting the
    embedding and loss with the `--account-for-*` flags) are a multiple of N, and that no uneven
    split (`--decoder-first/last-pipeline-num-layers`) is given with it (an uneven interleaved
    pipeline takes `--num-virtual-stages-per-pipeline-rank`). With
    `--num-virtual-stages-per-pipeline-rank V` (and an even split) the layers of a stage must be
    a multiple of V: the arguments pass, and `get_num_layers_to_build` asserts when the model is
    built.

    ## Why is this bad
    The job stops before training, or, with `--num-virtual-stages-per-pipeline-rank`, after the
    processes have started.

    ## Example
    ```sh
    --num-layers 24 --pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 4
    ```
    (6 layers per stage do not split into chunks of 4.)

    ## Use instead
    ```sh
    --num-layers 24 --pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 3
    ```
    """

    code = "MG102"
    name = "layers-against-virtual-stages"
    severity = "error"

    def check_args(self, a: Args, context: Context) -> Iterable[Finding]:
        p = Pipeline(a)
        if not p.plain or not p.virtual_sure or len(p.virtual) != 1 or not p.uneven_sure:
            return
        dest = p.virtual[0]
        pp = a.shown("pipeline_model_parallel_size")
        if dest == "num_layers_per_virtual_pipeline_stage":
            if p.uneven:
                uneven = " and ".join(a.spelled(d) for d in p.uneven)
                yield self.at(a.flags, dest,
                              f"{a.spelled(dest)} cannot be used with {uneven}: validate_args asserts 'please use "
                              f"--num-virtual-stages-per-pipeline-rank to specify virtual pipeline parallel degree "
                              f"when enable uneven pipeline parallelism' before training starts; give the number of "
                              f"virtual stages with --num-virtual-stages-per-pipeline-rank instead",
                              related=self.related(a, *p.uneven))
                return
            per_stage = a.int(dest)
            if per_stage is None or per_stage < 1 or p.total is None or p.total % p.pp:
                return  # MG101
            layers = p.total // p.pp
            if layers % per_stage == 0:
                return
            choices = ", ".join(map(str, _divisors(layers)))
            yield self.at(a.flags, dest,
                          f"{a.spelled(dest)} {per_stage} does not divide the {layers} layers of each pipeline stage "
                          f"({p.counted()} / {pp}): validate_args asserts 'number of layers per pipeline stage must "
                          f"be divisible number of layers per virtual pipeline stage' before training starts; use one "
                          f"of {choices}", related=self.related(a, "num_layers", "pipeline_model_parallel_size"))
            return
        if dest != "num_virtual_stages_per_pipeline_rank" or p.uneven:
            return  # an uneven split with virtual stages: MG103
        vpp = a.int(dest)
        if vpp is None or vpp <= 1 or p.pp <= 1 or p.total is None or p.total % p.pp:
            return  # not interleaved, MG106 (pipeline 1) or MG101
        layers = p.total // p.pp
        if layers % vpp == 0:
            return
        choices = ", ".join(map(str, _divisors(layers)))
        yield self.at(a.flags, dest,
                      f"{a.spelled(dest)} {vpp} does not divide the {layers} layers of each pipeline stage "
                      f"({p.counted()} / {pp}): Megatron accepts the arguments, then get_num_layers_to_build "
                      f"(megatron/core/transformer/transformer_block.py) asserts 'num_layers_per_pipeline_rank "
                      f"{layers} should be divisible by vp_size {vpp}' when the model is built, after the processes "
                      f"have started; use one of {choices}",
                      related=self.related(a, "num_layers", "pipeline_model_parallel_size"))


class UnevenPipelineStages(_LayoutRule):
    """An uneven pipeline split whose middle stages cannot take the remaining layers.

    ## What it does
    With `--decoder-first-pipeline-num-layers` and/or `--decoder-last-pipeline-num-layers`, the
    model config (`TransformerConfig.__post_init__`) spreads the remaining layers evenly over the
    remaining (middle) stages and raises ValueError when: a first/last count is not positive;
    there are layers left but no middle stage, or middle stages but no layer left; the middle
    layers are not a multiple of the middle stages; with `--num-virtual-stages-per-pipeline-rank
    V`, the first/last counts or the layers of each middle stage are not a multiple of V; or an
    `--account-for-embedding/loss-in-pipeline-split` flag is given too.

    ## Why is this bad
    `validate_args` lets these through; the job stops when the model config is built.

    ## Example
    ```sh
    --num-layers 30 --pipeline-model-parallel-size 4 --decoder-first-pipeline-num-layers 5
    ```
    (25 layers left for 3 middle stages.)

    ## Use instead
    ```sh
    --num-layers 30 --pipeline-model-parallel-size 4 --decoder-first-pipeline-num-layers 6
    ```
    """

    code = "MG103"
    name = "uneven-pipeline-stages"
    severity = "error"

    def check_args(self, a: Args, context: Context) -> Iterable[Finding]:
        p = Pipeline(a)
        if not p.plain or not p.uneven or not p.uneven_sure or not p.virtual_sure or not p.account_sure:
            return
        if "pipeline_model_parallel_layout" in p.virtual or len(p.virtual) > 1:
            return  # MG105, MG104
        if "num_layers_per_virtual_pipeline_stage" in p.virtual:
            return  # MG102
        stage = "the model config (TransformerConfig) raises ValueError when the model is built"
        where = p.uneven[0]
        if p.account:
            flags = " and ".join(a.spelled(d) for d, _ in p.account)
            yield self.at(a.flags, where,
                          f"{a.spelled(where)} cannot be combined with {flags}: {stage} ('num_layers_in_first_"
                          f"pipeline_stage and num_layers_in_last_pipeline_stage cannot be set at the same time with "
                          f"account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split'); use "
                          f"either the uneven split or the --account-for-* flags",
                          related=self.related(a, *(d for d, _ in p.account)))
            return
        if p.layers is None or p.vpp is UNSURE:
            return
        vpp = p.vpp
        layers, stages = p.layers, p.pp
        for dest in UNEVEN:
            if dest not in p.uneven:
                continue
            count = a.int(dest)
            if count is None:
                return
            if count <= 0:
                yield self.at(a.flags, dest, f"{a.spelled(dest)} {count} is not positive: {stage}; give at least "
                                             f"one layer")
                return
            if vpp is not None and count % vpp:
                yield self.at(a.flags, dest,
                              f"{a.spelled(dest)} {count} is not a multiple of the {vpp} virtual stages per pipeline "
                              f"rank ({a.shown('num_virtual_stages_per_pipeline_rank')}): {stage} ('number of "
                              f"layers at {'first' if dest == UNEVEN[0] else 'last'} stage: {count} must be divisible "
                              f"by virtual pipeline parallel degree {vpp}'); use a multiple of {vpp}",
                              related=self.related(a, "num_virtual_stages_per_pipeline_rank"))
                return
            layers -= count
            stages -= 1
        counts = " and ".join(f"{a.spelled(d)} {a.int(d)}" for d in p.uneven)
        left = (f"{a.spelled('num_layers')} {p.layers} minus {counts} leaves {layers} layers for {stages} middle "
                f"stage{'s' if stages != 1 else ''} ({a.shown('pipeline_model_parallel_size')})")
        related = self.related(a, "num_layers", "pipeline_model_parallel_size")
        if layers < 0:
            return  # more layers on the first/last stage than the model has: not a check of Megatron's
        if bool(layers) != bool(stages):
            yield self.at(a.flags, where, f"{left}: {stage} ('Mismatch: {layers} middle layers remaining but "
                                          f"{stages} middle PP stages available'); the first and last counts must "
                                          f"leave layers exactly when there are middle stages", related=related)
        elif stages and layers % stages:
            yield self.at(a.flags, where, f"{left}, which do not split evenly: {stage} ('number of layers at middle "
                                          f"stage: {layers} must be divisible by the middle pipeline model parallel "
                                          f"size {stages}'); choose first/last counts that leave a multiple of "
                                          f"{stages} layers", related=related)
        elif stages and vpp is not None and (layers // stages) % vpp:
            yield self.at(a.flags, where,
                          f"{left}, {layers // stages} per middle stage, not a multiple of the {vpp} virtual stages "
                          f"per pipeline rank: {stage} ('number of layers on each middle pipeline rank: "
                          f"{layers // stages} must be divisible by virtual pipeline parallel degree {vpp}'); choose "
                          f"counts that leave a multiple of {vpp} layers on each "
                          f"middle stage", related=related + self.related(a, "num_virtual_stages_per_pipeline_rank"))


class VirtualPipelineFlagsTogether(_LayoutRule):
    """More than one way of setting the virtual (interleaved) pipeline at once.

    ## What it does
    `--num-layers-per-virtual-pipeline-stage`, `--num-virtual-stages-per-pipeline-rank` and
    `--pipeline-model-parallel-layout` each set the interleaved pipeline; `validate_args` asserts
    that at most one of them is given ("No more than one of the following arguments can be set at
    the same time").

    ## Why is this bad
    The job stops before training, even when the flags agree.

    ## Example
    ```sh
    --num-layers-per-virtual-pipeline-stage 2 --num-virtual-stages-per-pipeline-rank 4
    ```

    ## Use instead
    ```sh
    --num-virtual-stages-per-pipeline-rank 4
    ```
    """

    code = "MG104"
    name = "virtual-pipeline-flags-together"
    severity = "error"

    def check_args(self, a: Args, context: Context) -> Iterable[Finding]:
        given = [d for d in VIRTUAL if a.given(d) and a.sure(d) and a.value(d) is not None]
        if len(given) < 2 or any(a.given(d) for d in HYBRID):
            return
        items = sorted((a.flags.item(d) for d in given), key=lambda g: (g.line, g.column))
        names = ", ".join(g.spelling for g in items)
        yield self.at(a.flags, items[-1],
                      f"{names} each set the virtual pipeline: validate_args asserts 'No more than one of the "
                      f"following arguments can be set at the same time' before training starts; keep one of them",
                      related=[r for g in items[:-1] for r in self.also(a.flags, g.flag.dest)])


class PipelineLayoutAgainstPipeline(_LayoutRule):
    """A --pipeline-model-parallel-layout whose stages do not fit the pipeline size.

    ## What it does
    `--pipeline-model-parallel-layout` lists the stages (`|`-separated, `(...)*n` repeats); its
    number of stages must be a multiple of `--pipeline-model-parallel-size` (the quotient is the
    virtual pipeline size): `validate_args` asserts "The length of pipeline_model_parallel_layout
    must be divisible by pipeline_model_parallel_size". The layout also replaces the other split
    flags: with `--decoder-first/last-pipeline-num-layers` or an `--account-for-*` flag the model
    config raises ValueError ("pipeline_model_parallel_layout cannot be set with other pipeline
    layout arguments").

    ## Why is this bad
    The job stops before training, or when the model config is built.

    ## Example
    ```sh
    --pipeline-model-parallel-size 4 --pipeline-model-parallel-layout "Et|(tt|)*2,t|L"
    ```
    (5 stages for 4 pipeline ranks.)

    ## Use instead
    ```sh
    --pipeline-model-parallel-size 4 --pipeline-model-parallel-layout "Et|(tt|)*6,t|L"
    ```
    (8 stages: 2 virtual stages per rank.)
    """

    code = "MG105"
    name = "pipeline-layout-against-pipeline"
    severity = "error"

    def check_args(self, a: Args, context: Context) -> Iterable[Finding]:
        dest = "pipeline_model_parallel_layout"
        p = Pipeline(a)
        if not a.given(dest) or p.hybrid or len(p.virtual) > 1 or not p.virtual_sure or p.pp is None:
            return
        layout = a.value(dest)
        stages = _layout_stages(layout) if isinstance(layout, str) else None
        if stages is None:
            return
        pp = a.shown("pipeline_model_parallel_size")
        if stages % p.pp:
            yield self.at(a.flags, dest,
                          f"{a.spelled(dest)} has {stages} stages, not a multiple of {pp}: validate_args asserts "
                          f"'The length of pipeline_model_parallel_layout must be divisible by "
                          f"pipeline_model_parallel_size' before training starts; give {p.pp} × (virtual stages per "
                          f"rank) stages", related=self.related(a, "pipeline_model_parallel_size"))
            return
        if not p.uneven_sure or not p.account_sure:
            return
        others = p.uneven + [d for d, _ in p.account]
        if others:
            names = " and ".join(a.spelled(d) for d in others)
            yield self.at(a.flags, dest,
                          f"{a.spelled(dest)} cannot be combined with {names}: the model config (TransformerConfig) "
                          f"raises ValueError 'pipeline_model_parallel_layout cannot be set with other pipeline "
                          f"layout arguments' when the model is built; describe the whole split in the layout "
                          f"(E for the embedding, L for the loss)", related=self.related(a, *others))


class InterleavedPipelineTooFewStages(_LayoutRule):
    """An interleaved (virtual) pipeline with too few pipeline stages.

    ## What it does
    When the arguments give a virtual pipeline size above 1 (from
    `--num-layers-per-virtual-pipeline-stage`, `--num-virtual-stages-per-pipeline-rank` or the
    stages of `--pipeline-model-parallel-layout`), `validate_args` asserts that
    `--pipeline-model-parallel-size` is greater than 1, or greater than 2 with
    `--no-overlap-p2p-communication` ("When interleaved schedule is used and p2p communication
    overlap is disabled, pipeline-model-parallel size should be greater than 2 ...", Megatron-LM
    issue #750).

    ## Why is this bad
    The job stops before training.

    ## Example
    ```sh
    --pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 2 --no-overlap-p2p-communication
    ```

    ## Use instead
    ```sh
    --pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 2
    ```
    """

    code = "MG106"
    name = "interleaved-pipeline-too-few-stages"
    severity = "error"

    def check_args(self, a: Args, context: Context) -> Iterable[Finding]:
        p = Pipeline(a)
        overlap = a.on("overlap_p2p_comm")
        if p.hybrid or p.vpp is UNSURE or p.vpp is None or p.pp is None or overlap is None:
            return
        needed = 2 if overlap else 3
        if p.pp >= needed:
            return
        where = p.virtual[0]
        pp = a.shown("pipeline_model_parallel_size")
        if overlap:
            why = (f"validate_args asserts 'When interleaved schedule is used, pipeline-model-parallel size should be "
                   f"greater than 1' before training starts; use a pipeline size of 2 or more, or drop "
                   f"{a.spelled(where)}")
        else:
            why = (f"with {a.spelled('overlap_p2p_comm')}, validate_args asserts 'pipeline-model-parallel size "
                   f"should be greater than 2 to avoid having multiple p2p sends and recvs between same 2 ranks per "
                   f"communication batch' before training starts; drop {a.spelled('overlap_p2p_comm')}, use a "
                   f"pipeline size of 3 or more, or drop {a.spelled(where)}")
        yield self.at(a.flags, where, f"{a.spelled(where)} makes {p.vpp} virtual stages per pipeline rank (an "
                                      f"interleaved schedule) with {pp}: {why}",
                      related=self.related(a, "pipeline_model_parallel_size", "overlap_p2p_comm"))


# --- tensor and sequence parallelism ----------------------------------------------------------------


class SequenceParallelWithoutTensorParallel(_LayoutRule):
    """--sequence-parallel with tensor parallel size 1: Megatron turns it off.

    ## What it does
    Megatron's sequence parallelism shards activations over the tensor-parallel ranks; with
    `--tensor-model-parallel-size 1` (the default) there is nothing to shard over, and
    `validate_args` silently sets `sequence_parallel = False` (with the warning "Disabling sequence
    parallelism because tensor model parallelism is disabled").

    ## Why is this bad
    The flag does nothing; a setup that expects its memory saving, or that pairs it with a flag
    needing it (`--tp-comm-overlap`), does not get it.

    ## Example
    ```sh
    --tensor-model-parallel-size 1 --sequence-parallel
    ```

    ## Use instead
    ```sh
    --tensor-model-parallel-size 2 --sequence-parallel
    # or no --sequence-parallel with tensor parallel size 1
    ```
    """

    code = "MG107"
    name = "sequence-parallel-without-tensor-parallel"
    severity = "warning"

    def check_args(self, a: Args, context: Context) -> Iterable[Finding]:
        if a.on("sequence_parallel") is not True or a.int("tensor_model_parallel_size") != 1:
            return
        yield self.at(a.flags, "sequence_parallel",
                      f"{a.spelled('sequence_parallel')} with {a.shown('tensor_model_parallel_size')}: Megatron "
                      f"silently turns sequence parallelism off in validate_args (warning 'Disabling sequence "
                      f"parallelism because tensor model parallelism is disabled'); remove it, or use a tensor "
                      f"parallel size above 1", related=self.related(a, "tensor_model_parallel_size"))


class TensorParallelOverlapWithoutSequenceParallel(_LayoutRule):
    """--tp-comm-overlap without sequence parallelism.

    ## What it does
    Overlapping the tensor-parallel communication with the GEMMs (Transformer Engine userbuffers)
    works only on the sequence-parallel code path: `validate_args` asserts "Tensor parallel
    communication/GEMM overlap can happen only when sequence parallelism is enabled". Sequence
    parallelism counts as off without `--sequence-parallel`, and also with it when the tensor
    parallel size is 1 (Megatron turns it off first, MG107).

    ## Why is this bad
    The job stops before training.

    ## Example
    ```sh
    --tensor-model-parallel-size 4 --tp-comm-overlap
    ```

    ## Use instead
    ```sh
    --tensor-model-parallel-size 4 --sequence-parallel --tp-comm-overlap
    ```
    """

    code = "MG108"
    name = "tp-comm-overlap-without-sequence-parallel"
    severity = "error"

    def check_args(self, a: Args, context: Context) -> Iterable[Finding]:
        sp, tp = a.on("sequence_parallel"), a.int("tensor_model_parallel_size")
        if a.on("tp_comm_overlap") is not True or sp is None or tp is None:
            return
        assertion = ("validate_args asserts 'Tensor parallel communication/GEMM overlap can happen only when "
                     "sequence parallelism is enabled' before training starts")
        if not sp:
            yield self.at(a.flags, "tp_comm_overlap",
                          f"{a.spelled('tp_comm_overlap')} without --sequence-parallel: {assertion}; add "
                          f"--sequence-parallel" + (" (with a tensor parallel size above 1)" if tp == 1 else "")
                          + f" or remove {a.spelled('tp_comm_overlap')}")
        elif tp == 1:
            yield self.at(a.flags, "tp_comm_overlap",
                          f"{a.spelled('tp_comm_overlap')} with {a.shown('tensor_model_parallel_size')}: Megatron "
                          f"turns --sequence-parallel off with tensor parallel size 1, then {assertion}; remove "
                          f"{a.spelled('tp_comm_overlap')} or use a tensor parallel size above 1",
                          related=self.related(a, "tensor_model_parallel_size", "sequence_parallel"))


# --- mixture of experts ---------------------------------------------------------------------------


def _experts(a: Args) -> Any:
    """--num-experts as Megatron uses it (0 is None: a dense model), or UNSURE."""
    value = a.value("num_experts")
    if value is UNSURE:
        return UNSURE
    return None if value in (None, 0) else value if isinstance(value, int) else UNSURE


class ExpertParallelAgainstExperts(_LayoutRule):
    """Expert parallelism without experts, or with a number of experts it cannot split.

    ## What it does
    With `--expert-model-parallel-size` above 1, `validate_args` asserts that `--num-experts` is
    given ("num_experts must be non None to use expert model parallelism"; 0 counts as not given)
    and that it is a multiple of the expert parallel size ("Number of experts should be a
    multiple of expert model parallel_size").

    ## Why is this bad
    The job stops before training.

    ## Example
    ```sh
    --expert-model-parallel-size 4 --num-experts 6
    ```

    ## Use instead
    ```sh
    --expert-model-parallel-size 4 --num-experts 8
    ```
    """

    code = "MG109"
    name = "expert-parallel-against-experts"
    severity = "error"

    def check_args(self, a: Args, context: Context) -> Iterable[Finding]:
        ep, experts = a.int("expert_model_parallel_size"), _experts(a)
        if ep is None or ep <= 1 or experts is UNSURE:
            return
        if experts is None:
            without = f"with {a.spelled('num_experts')} 0" if a.given("num_experts") else "without --num-experts"
            yield self.at(a.flags, "expert_model_parallel_size",
                          f"{a.shown('expert_model_parallel_size')} {without} (a dense model): validate_args asserts "
                          f"'num_experts must be non None to use expert model parallelism' before training starts; "
                          f"give --num-experts (a multiple of {ep}) or remove {a.spelled('expert_model_parallel_size')}",
                          related=self.related(a, "num_experts"))
        elif experts % ep:
            fix = str(-(-experts // ep) * ep)
            yield self.at(a.flags, "num_experts",
                          f"{a.spelled('num_experts')} {experts} is not a multiple of "
                          f"{a.shown('expert_model_parallel_size')}: validate_args asserts 'Number of experts should "
                          f"be a multiple of expert model parallel_size' before training starts; use {fix} experts or "
                          f"an expert parallel size in {[d for d in _divisors(experts) if d > 1]}",
                          fix=fix, related=self.related(a, "expert_model_parallel_size"))


class MoeTensorParallelWithoutSequenceParallel(_LayoutRule):
    """A mixture-of-experts model with tensor parallelism but no sequence parallelism.

    ## What it does
    `MoELayer.forward` (megatron/core/transformer/moe/moe_layer.py) raises ValueError ("During
    training, performance may degrade if MoE and tensor parallelism are enabled without also
    enabling sequence parallelism") when it runs in training with a tensor-parallel group larger
    than 1 and `sequence_parallel` off. The argument checks let this through (with expert
    parallelism above 1 the model config only warns "When using expert parallelism and tensor
    parallelism for training, sequence parallelism must be used"). Reports `--num-experts` with
    `--tensor-model-parallel-size` above 1 and no `--sequence-parallel`.

    ## Why is this bad
    The job initialises, builds the model, and stops at the first training step.

    ## Example
    ```sh
    --num-experts 8 --tensor-model-parallel-size 2
    ```

    ## Use instead
    ```sh
    --num-experts 8 --tensor-model-parallel-size 2 --sequence-parallel
    ```
    """

    code = "MG110"
    name = "moe-tensor-parallel-without-sequence-parallel"
    severity = "error"

    def check_args(self, a: Args, context: Context) -> Iterable[Finding]:
        experts, tp, sp = _experts(a), a.int("tensor_model_parallel_size"), a.on("sequence_parallel")
        if experts is UNSURE or experts is None or tp is None or tp <= 1 or sp is not False:
            return
        # megatron/core/transformer/moe/moe_layer.py, MoELayer.forward: `if self.training and
        # self.attn_tp_group.size() > 1 and not self.config.sequence_parallel: raise ValueError(...)`
        yield self.at(a.flags, "num_experts",
                      f"{a.spelled('num_experts')} {experts} with {a.shown('tensor_model_parallel_size')} and no "
                      f"--sequence-parallel: the arguments pass, but MoELayer.forward raises ValueError 'During "
                      f"training, performance may degrade if MoE and tensor parallelism are enabled without also "
                      f"enabling sequence parallelism' at the first training step; add --sequence-parallel",
                      related=self.related(a, "tensor_model_parallel_size"))


class ExpertGridAgainstWorld(_LayoutRule):
    """The expert grid (expert tensor × expert × pipeline parallel) does not divide the world size.

    ## What it does
    Besides the dense grid (tensor × context × data × pipeline), `initialize_model_parallel`
    (megatron/core/parallel_state.py) lays an expert grid over the same ranks: expert tensor
    parallel (`--expert-tensor-parallel-size`, default the tensor parallel size) × expert
    parallel × pipeline parallel must divide the world size, else it raises RuntimeError
    "world_size (...) is not divisible by expert_tensor_model_pipeline_parallel size (...)".
    `validate_args` does not check this, so the arguments pass. Needs the world size
    (torchrun's `--nnodes` × `--nproc_per_node`, or `--world-size`). An expert parallel size that
    does not divide world / pipeline is PL102.

    ## Why is this bad
    The job fails at start-up, after waiting for its GPUs.

    ## Example
    On 8 GPUs:
    ```sh
    --pipeline-model-parallel-size 2 --expert-model-parallel-size 2 --expert-tensor-parallel-size 4
    ```
    (4 × 2 × 2 = 16 ranks per expert replica.)

    ## Use instead
    ```sh
    --pipeline-model-parallel-size 2 --expert-model-parallel-size 2 --expert-tensor-parallel-size 2
    ```
    """

    code = "MG111"
    name = "expert-grid-against-world"
    severity = "error"

    def check_args(self, a: Args, context: Context) -> Iterable[Finding]:
        world = a.flags.world_size(context)
        tp, pp, cp = (a.int(d) for d in ("tensor_model_parallel_size", "pipeline_model_parallel_size",
                                         "context_parallel_size"))
        ep, etp = a.int("expert_model_parallel_size"), a.value("expert_tensor_parallel_size")
        if world is None or None in (tp, pp, cp, ep) or etp is UNSURE or not a.known(*WEIGHT_SHARDS):
            return
        if any(a.value(d) is not None for d in WEIGHT_SHARDS):
            return  # the weight-shard (GTP) axes also count; not judged
        if min(tp, pp, cp, ep) < 1 or world % (tp * pp * cp):
            return  # PL101
        if world % pp or (world // pp) % ep:
            return  # PL102
        etp = tp if etp is None else etp
        if not isinstance(etp, int) or etp < 1:
            return
        grid = etp * ep * pp
        if world % grid == 0:
            return
        where = "expert_tensor_parallel_size" if a.given("expert_tensor_parallel_size") else \
            "expert_model_parallel_size"
        etp_text = a.shown("expert_tensor_parallel_size") if a.given("expert_tensor_parallel_size") else \
            f"expert tensor parallel {etp} (the tensor parallel size, as --expert-tensor-parallel-size is not given)"
        choices = [d for d in _divisors(world // pp // ep)]
        # megatron/core/parallel_state.py, initialize_model_parallel: `if world_size %
        # expert_tensor_model_pipeline_parallel_size != 0: raise RuntimeError(...)`, after the dense grid is built
        yield self.at(a.flags, where,
                      f"{etp_text} × {a.shown('expert_model_parallel_size')} × "
                      f"{a.shown('pipeline_model_parallel_size')} = {grid} does not divide the world size {world}: "
                      f"validate_args lets it through, then initialize_model_parallel raises RuntimeError "
                      f"'world_size ({world}) is not divisible by expert_tensor_model_pipeline_parallel size ({grid})' "
                      f"when the processes start; use an expert tensor parallel size in {choices}",
                      related=self.related(a, "expert_model_parallel_size", "pipeline_model_parallel_size",
                                           "tensor_model_parallel_size"))


# --- context parallelism ----------------------------------------------------------------------------


class SequenceAgainstContextParallel(_LayoutRule):
    """A sequence length that context parallelism cannot split.

    ## What it does
    Context parallelism splits each sequence into 2 × CP chunks (two per rank, for load
    balance with the causal mask): with `--context-parallel-size` above 1, `validate_args`
    asserts `seq_length % (2 * context_parallel_size) == 0` ("seq-length should be a multiple of
    2 * context-parallel-size if context-parallel-size > 1").

    ## Why is this bad
    The job stops before training.

    ## Example
    ```sh
    --context-parallel-size 4 --seq-length 4100
    ```

    ## Use instead
    ```sh
    --context-parallel-size 4 --seq-length 4096
    ```
    """

    code = "MG112"
    name = "sequence-against-context-parallel"
    severity = "error"

    def check_args(self, a: Args, context: Context) -> Iterable[Finding]:
        cp, seq = a.int("context_parallel_size"), a.int("seq_length")
        if cp is None or cp <= 1 or seq is None or seq % (2 * cp) == 0:
            return
        fix = str(seq // (2 * cp) * 2 * cp) if seq >= 2 * cp else str(2 * cp)
        yield self.at(a.flags, "seq_length",
                      f"{a.spelled('seq_length')} {seq} is not a multiple of 2 × {a.shown('context_parallel_size')} "
                      f"= {2 * cp}: validate_args asserts 'seq-length should be a multiple of 2 * "
                      f"context-parallel-size if context-parallel-size > 1' before training starts; use {fix}",
                      fix=fix, related=self.related(a, "context_parallel_size"))


class HierarchicalSizesAgainstContextParallel(_LayoutRule):
    """--hierarchical-context-parallel-sizes that do not multiply to the context parallel size.

    ## What it does
    The levels of hierarchical context parallelism (`a2a+p2p`) must multiply to
    `--context-parallel-size`: `validate_args` asserts `context_parallel_size ==
    prod(hierarchical_context_parallel_sizes)` (a bare assert, no message).

    ## Why is this bad
    The job stops before training with an AssertionError that names no flag.

    ## Example
    ```sh
    --context-parallel-size 8 --cp-comm-type a2a+p2p --hierarchical-context-parallel-sizes 2 2
    ```

    ## Use instead
    ```sh
    --context-parallel-size 8 --cp-comm-type a2a+p2p --hierarchical-context-parallel-sizes 2 4
    ```
    """

    code = "MG113"
    name = "hierarchical-sizes-against-context-parallel"
    severity = "error"

    def check_args(self, a: Args, context: Context) -> Iterable[Finding]:
        dest = "hierarchical_context_parallel_sizes"
        sizes, cp = a.value(dest), a.int("context_parallel_size")
        if not a.given(dest) or not isinstance(sizes, list) or not sizes or cp is None:
            return
        if not all(isinstance(s, int) and not isinstance(s, bool) for s in sizes):
            return
        product = 1
        for size in sizes:
            product *= size
        if product == cp:
            return
        shown = " × ".join(map(str, sizes))
        yield self.at(a.flags, dest,
                      f"{a.spelled(dest)} {' '.join(map(str, sizes))} multiply to {shown} = {product}, not "
                      f"{a.shown('context_parallel_size')}: validate_args asserts context_parallel_size == "
                      f"prod(hierarchical_context_parallel_sizes) (an AssertionError without a message) before "
                      f"training starts; give sizes whose product is {cp}",
                      related=self.related(a, "context_parallel_size"))


class A2aP2pWithoutHierarchicalSizes(_LayoutRule):
    """--cp-comm-type a2a+p2p without --hierarchical-context-parallel-sizes.

    ## What it does
    The `a2a+p2p` context-parallel communication is hierarchical: all-to-all inside one level,
    peer-to-peer across the other, and the levels come from
    `--hierarchical-context-parallel-sizes`. `validate_args` asserts they are given
    ("--hierarchical-context-parallel-sizes must be set when a2a+p2p is used in cp comm").

    ## Why is this bad
    The job stops before training.

    ## Example
    ```sh
    --context-parallel-size 8 --cp-comm-type a2a+p2p
    ```

    ## Use instead
    ```sh
    --context-parallel-size 8 --cp-comm-type a2a+p2p --hierarchical-context-parallel-sizes 2 4
    ```
    """

    code = "MG114"
    name = "a2a-p2p-without-hierarchical-sizes"
    severity = "error"

    def check_args(self, a: Args, context: Context) -> Iterable[Finding]:
        types, sizes = a.value("cp_comm_type"), a.value("hierarchical_context_parallel_sizes")
        if not isinstance(types, list) or "a2a+p2p" not in types or sizes is not None:
            return
        yield self.at(a.flags, "cp_comm_type",
                      f"{a.spelled('cp_comm_type')} a2a+p2p without --hierarchical-context-parallel-sizes: "
                      f"validate_args asserts '--hierarchical-context-parallel-sizes must be set when a2a+p2p is used "
                      f"in cp comm' before training starts; add --hierarchical-context-parallel-sizes with levels "
                      f"whose product is the context parallel size")


# --- attention ---------------------------------------------------------------------------------------


class QueryGroupsWithoutGroupQueryAttention(_LayoutRule):
    """--num-query-groups without --group-query-attention: Megatron builds multi-head attention.

    ## What it does
    Megatron reads `--num-query-groups` only with `--group-query-attention`:
    `core_transformer_config_from_args` (megatron/training/argument_utils.py) passes
    `num_query_groups=None` to the model config otherwise, which then uses one key-value head per
    attention head. No warning is printed. Reports `--num-query-groups` (other than the number of
    attention heads) without `--group-query-attention`.

    ## Why is this bad
    The model is silently built with full multi-head attention: more parameters and a larger
    KV cache than intended, and checkpoints that do not match a GQA model (Llama, Mistral).

    ## Example
    ```sh
    --num-attention-heads 32 --num-query-groups 8
    ```

    ## Use instead
    ```sh
    --num-attention-heads 32 --group-query-attention --num-query-groups 8
    ```
    """

    code = "MG115"
    name = "query-groups-without-group-query-attention"
    severity = "warning"

    def check_args(self, a: Args, context: Context) -> Iterable[Finding]:
        groups, gqa = a.int("num_query_groups"), a.on("group_query_attention")
        if not a.given("num_query_groups") or groups is None or gqa is not False:
            return
        if a.on("multi_latent_attention") is not False:
            return  # multi-latent attention has no query groups (and refuses --group-query-attention)
        heads = a.int("num_attention_heads")
        if heads is not None and groups == heads:
            return  # multi-head attention is what it asks for
        yield self.at(a.flags, "num_query_groups",
                      f"{a.spelled('num_query_groups')} {groups} without --group-query-attention: Megatron silently "
                      f"ignores it (core_transformer_config_from_args passes num_query_groups=None) and builds "
                      f"multi-head attention with one key-value head per attention head; add "
                      f"--group-query-attention")


class HiddenAgainstAttentionHeads(_LayoutRule):
    """A hidden size that the attention heads do not divide (without --kv-channels).

    ## What it does
    Without `--kv-channels`, Megatron derives the head dimension as `hidden_size //
    num_attention_heads`, and `validate_args` first asserts `hidden_size % num_attention_heads ==
    0` (a bare assert, no message).

    ## Why is this bad
    The job stops before training with an AssertionError that names no flag.

    ## Example
    ```sh
    --hidden-size 4000 --num-attention-heads 32
    ```

    ## Use instead
    ```sh
    --hidden-size 4096 --num-attention-heads 32
    # or an explicit head dimension
    --hidden-size 4000 --num-attention-heads 32 --kv-channels 128
    ```
    """

    code = "MG116"
    name = "hidden-against-attention-heads"
    severity = "error"

    def check_args(self, a: Args, context: Context) -> Iterable[Finding]:
        hidden, heads, kv = a.int("hidden_size"), a.int("num_attention_heads"), a.value("kv_channels")
        if hidden is None or heads is None or heads < 1 or kv is not None or hidden % heads == 0:
            return
        fix = str(-(-hidden // heads) * heads)
        yield self.at(a.flags, "hidden_size",
                      f"{a.spelled('hidden_size')} {hidden} is not divisible by {a.spelled('num_attention_heads')} "
                      f"{heads} and --kv-channels is not given: validate_args asserts hidden_size % "
                      f"num_attention_heads == 0 (an AssertionError without a message) before training starts; use a "
                      f"multiple of {heads} ({fix}) or give the head dimension with --kv-channels",
                      fix=fix, related=self.related(a, "num_attention_heads"))


# --- checks that run after the processes have started ---------------------------------------------


def _data_parallel(a: Args, world: int | None) -> int | None:
    """validate_args' data_parallel_size: world / (TP × PP × CP); None when not known or not whole."""
    sizes = [a.int(d) for d in ("tensor_model_parallel_size", "pipeline_model_parallel_size",
                                "context_parallel_size")]
    if world is None or None in sizes or min(sizes) < 1 or not a.known(*WEIGHT_SHARDS):
        return None
    if any(a.value(d) is not None for d in WEIGHT_SHARDS):
        return None
    model = sizes[0] * sizes[1] * sizes[2]
    return world // model if world % model == 0 else None


class InterleavedMicrobatchesAgainstPipeline(_LayoutRule):
    """An interleaved pipeline whose number of microbatches does not fit the pipeline size.

    ## What it does
    The interleaved schedule (`forward_backward_pipelining_with_interleaving`,
    megatron/core/pipeline_parallel/schedules.py) runs the microbatches in groups of N
    (`--microbatch-group-size-per-virtual-pipeline-stage`, default the pipeline size PP). With M
    = global batch / (micro batch × data-parallel size) microbatches per step, it raises
    ValueError when N > M or N < PP, and RuntimeError when M mod N is between 1 and PP - 1 ("The
    remainder of M ... should be 0, or larger than or equal to the pipeline-parallel size"). With
    the default N that means M must be a multiple of PP. The argument checks do not look at this.
    Needs the world size; the data-parallel size is world / (tensor × pipeline × context).

    ## Why is this bad
    The job starts, builds the model, and stops at the first training step.

    ## Example
    On 8 GPUs, 2 pipeline stages with 2 virtual stages each, data-parallel size 4:
    ```sh
    --pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 2 --micro-batch-size 2 --global-batch-size 24
    ```
    (24 / (2 × 4) = 3 microbatches, not a multiple of 2.)

    ## Use instead
    ```sh
    --pipeline-model-parallel-size 2 --num-virtual-stages-per-pipeline-rank 2 --micro-batch-size 2 --global-batch-size 32
    ```
    """

    code = "MG117"
    name = "interleaved-microbatches-against-pipeline"
    severity = "error"

    def check_args(self, a: Args, context: Context) -> Iterable[Finding]:
        p = Pipeline(a)
        overlap = a.on("overlap_p2p_comm")
        if p.vpp is UNSURE or p.vpp is None or p.pp is None or overlap is None or p.pp < (2 if overlap else 3):
            return  # not interleaved, or MG106
        world = a.flags.world_size(context)
        dp = _data_parallel(a, world)
        micro, batch = a.int("micro_batch_size"), a.value("global_batch_size")
        if dp is None or micro is None or micro < 1 or batch is UNSURE:
            return
        if not a.known("step_batch_size_schedule", "decrease_batch_size_if_needed", "microbatch_group_size_per_vp_stage"):
            return
        if a.value("step_batch_size_schedule") is not None or a.on("decrease_batch_size_if_needed") \
                or a.on("perform_rl_step") is not False:
            return  # the global batch changes while training, or RL sets its own
        if batch is None:
            batch = micro * dp  # validate_args' default
        if not isinstance(batch, int) or batch % (micro * dp):
            return  # DS201
        m = batch // (micro * dp)
        # megatron/core/pipeline_parallel/schedules.py, forward_backward_pipelining_with_interleaving:
        # ValueError unless PP <= N <= M; RuntimeError when 0 < M % N < PP (N: the microbatch group size)
        group = a.int("microbatch_group_size_per_vp_stage") or p.pp
        pp = p.pp
        where = "global_batch_size" if a.given("global_batch_size") else "micro_batch_size"
        counted = (f"{a.spelled('global_batch_size')} {batch} / ({a.spelled('micro_batch_size')} {micro} × {dp} "
                   f"data-parallel ranks) = {m} microbatch{'es' if m != 1 else ''}")
        if not a.given("global_batch_size"):
            counted = (f"the global batch defaults to {a.spelled('micro_batch_size')} {micro} × {dp} data-parallel "
                       f"ranks, which is {m} microbatch{'es' if m != 1 else ''} per step")
        groups = f"a group size of {group}" + ("" if a.given("microbatch_group_size_per_vp_stage")
                                                else f" (the pipeline size {pp})")
        fix = str(-(-m // pp) * pp * micro * dp) if m % pp else None
        if group > m or group < pp:
            why = (f"the interleaved schedule raises ValueError 'The number of contiguous micro-batches in a virtual "
                   f"pipeline stage should range in [PP={pp} , M={m}]' at the first training step")
        elif 0 < m % group < pp:
            why = (f"the interleaved schedule raises RuntimeError 'The remainder of M (the total micro-batches) "
                   f"divided by N (number of contiguous micro-batches in a virtual pipeline stage) should be 0, or "
                   f"larger than or equal to the pipeline-parallel size, but it is {m % group}' at the first training "
                   f"step")
        else:
            return
        yield self.at(a.flags, where,
                      f"{counted}, with {groups} and {p.vpp} virtual stages per rank of "
                      f"{a.shown('pipeline_model_parallel_size')}: the arguments pass, but {why}; use a global batch "
                      f"that gives a multiple of {pp} microbatches" + (f" ({fix})" if fix else ""),
                      fix=fix if where == "global_batch_size" else None,
                      related=self.related(a, "micro_batch_size" if where == "global_batch_size" else
                                           "global_batch_size", "pipeline_model_parallel_size", *p.virtual))


class SequenceParallelSequenceAgainstTensorParallel(_LayoutRule):
    """Sequence parallelism with a sequence that the tensor-parallel ranks cannot split.

    ## What it does
    With `--sequence-parallel`, the embedding output ([sequence, batch, hidden]) is scattered
    along the sequence over the tensor-parallel ranks (`scatter_to_sequence_parallel_region`);
    each rank holds `seq_length / context_parallel_size` tokens, and
    `_split_along_first_dim` (megatron/core/tensor_parallel/mappings.py) asserts "First dimension
    of the tensor should be divisible by tensor parallel size". The argument checks do not look at
    this. Reports `--seq-length` / `--context-parallel-size` not divisible by
    `--tensor-model-parallel-size` with sequence parallelism on.

    ## Why is this bad
    The job starts, builds the model, and stops at the first forward pass.

    ## Example
    ```sh
    --tensor-model-parallel-size 4 --sequence-parallel --seq-length 2050
    ```

    ## Use instead
    ```sh
    --tensor-model-parallel-size 4 --sequence-parallel --seq-length 2048
    ```
    """

    code = "MG118"
    name = "sequence-parallel-sequence-against-tensor-parallel"
    severity = "error"

    def check_args(self, a: Args, context: Context) -> Iterable[Finding]:
        tp, cp, seq = a.int("tensor_model_parallel_size"), a.int("context_parallel_size"), a.int("seq_length")
        if a.on("sequence_parallel") is not True or None in (tp, cp, seq) or tp <= 1 or cp < 1:
            return
        if not all(a.on(d) is False for d in PACKED):
            return  # the samples' lengths vary (packed or padded by the dataset), not --seq-length
        if cp > 1 and seq % (2 * cp):
            return  # MG112
        local = seq // cp
        # megatron/core/tensor_parallel/mappings.py, _split_along_first_dim (scatter_to_sequence_parallel_region):
        # `assert dim_size % world_size == 0` over the tensor-parallel group
        if local % tp == 0:
            return
        step = tp * cp * (2 if cp > 1 else 1)
        fix = str(seq // step * step) if seq >= step else str(step)
        per_rank = f"{seq} / {a.shown('context_parallel_size')} = {local}" if cp > 1 else f"{seq}"
        yield self.at(a.flags, "seq_length",
                      f"{a.spelled('seq_length')} {per_rank} tokens per rank are not divisible by "
                      f"{a.shown('tensor_model_parallel_size')} with {a.spelled('sequence_parallel')}: the arguments "
                      f"pass, but the sequence-parallel scatter asserts 'First dimension of the tensor should be "
                      f"divisible by tensor parallel size' (megatron/core/tensor_parallel/mappings.py) at the first "
                      f"forward pass; use a sequence length that is a multiple of {step} ({fix})",
                      fix=fix, related=self.related(a, "tensor_model_parallel_size", "sequence_parallel"))
