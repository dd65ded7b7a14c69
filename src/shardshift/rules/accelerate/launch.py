"""Accelerate config YAML rules from the coverage map of Accelerate 1.15 (issue 22): the checks
`accelerate launch` and the objects each training process builds from its environment make on
values of the file that the AC001-AC009 / AC101-AC103 rules do not look at.

- AC010: `parallelism_config` (ParallelismConfig, its context- and sequence-parallel handlers, and
  `ParallelismConfig._validate_accelerator` against the number of processes and the mode);
- AC011: `fp8_config` under `mixed_precision: fp8` (the Transformer Engine and MS-AMP recipes, and
  MS-AMP inside the DeepSpeed plugin);
- AC104: a multi-GPU launch on one machine with fewer than two `gpu_ids`;
- AC105: a multi-machine launch through the simple launcher without `main_process_ip` / port;
- AC106: a `deepspeed_config_file` without `zero_optimization`.

tests/test_coverage_map.py runs Accelerate's own code on every bad fixture (tests/coverage_loaders/
accelerate.py) and checks that it reaches the check site the message names, and not on the good
fixtures."""

from __future__ import annotations

from typing import Any, Iterable

from shardshift.document import Document
from shardshift.formats.accelerate.keys import truthy
from shardshift.formats.accelerate.reader import fsdp_version
from shardshift.rules.accelerate.config import (  # noqa: F401 - MULTI_DEVICE and the rest: this module's names too
    MULTI_DEVICE,
    PARALLELISM_LAUNCHERS,
    SIMPLE_LAUNCHER,
    SIZES,
    AccelerateRule,
    _data,
    _int,
    _is_int,
    _premised,
    _sagemaker,
)
from shardshift.rules.base import Context, Finding, PlanRule

CP_COMM_STRATEGIES = ("allgather", "alltoall")
SP_ATTN_BUILTIN = ("flash_attention_2", "flash_attention_3", "sdpa")
SP_ATTN_UNSUPPORTED = ("eager", "flex_attention")


def _world(data: dict) -> int | None:
    """How many training processes `accelerate launch` starts: num_processes // num_machines on
    each of num_machines machines (None when the file does not say)."""
    processes, machines = data.get("num_processes"), data.get("num_machines", 1)
    if not (_is_int(processes) and _is_int(machines)) or processes < 1 or machines < 1:
        return None
    return (processes // machines) * machines if machines > 1 else processes


def _environment():
    """The job's environment as the user gave it (`check --env`)."""
    from shardshift.context.environment import current

    return current()


class InvalidParallelismConfig(AccelerateRule):
    """A `parallelism_config` that Accelerate refuses when each training process creates its Accelerator.

    ## What it does
    Reports, for a config whose launcher exports `parallelism_config` to the training processes
    (`distributed_type` FSDP, DEEPSPEED, MEGATRON_LM or MULTI_GPU and the other multi-device
    types), what `ParallelismConfig` and its handlers refuse:

    - a `parallelism_config_{dp_replicate,dp_shard,tp,cp,sp}_size` below 1;
    - a `parallelism_config_cp_backend` other than `torch`, a `parallelism_config_sp_backend`
      other than `deepspeed`;
    - `cp_size` and `sp_size` both above 1 (mutually exclusive);
    - `tp_size` or `cp_size` above 1 with pure data parallelism (`dp_replicate_size` above 1,
      `dp_shard_size` 1);
    - under `cp_size` above 1, a `parallelism_config_cp_comm_strategy` other than `allgather` or
      `alltoall`; under `sp_size` above 1, a `parallelism_config_sp_attn_implementation` of
      `eager` or `flex_attention`, or one that is neither built in (`sdpa`, `flash_attention_2`,
      `flash_attention_3`) nor a hub flash-attention kernel (`kernels-community/flash-attn2`);
    - sizes whose product is not the number of processes `accelerate launch` starts (unless
      DeepSpeed sequence parallelism is on, which Accelerate does not count; under FSDP, PL101
      reports it from the Plan);
    - under FSDP2, no dimension to shard over (`dp_shard_size` and `cp_size` both 1) while the
      product is above 1; under FSDP1 or MEGATRON_LM, any product above 1;
    - `cp_size` above 1 under MULTI_GPU and the other multi-device types with more than one
      process: context parallelism needs the FSDP plugin (unless ACCELERATE_ALLOW_CP_STANDALONE is
      true in the environment given with `--env`).

    ## Why is this bad
    `accelerate launch` copies every `parallelism_config` key onto its arguments without checking
    them and exports them as PARALLELISM_CONFIG_* variables; the `Accelerator` each training
    process creates builds a `ParallelismConfig` from them and raises `ValueError`, so the job
    fails after it got its machines.

    ## Example
    ```yaml
    distributed_type: FSDP
    num_processes: 8
    fsdp_config:
      fsdp_version: 2
    parallelism_config:
      parallelism_config_dp_shard_size: 2
      parallelism_config_tp_size: 2
    ```

    ## Use instead
    ```yaml
    distributed_type: FSDP
    num_processes: 8
    fsdp_config:
      fsdp_version: 2
    parallelism_config:
      parallelism_config_dp_shard_size: 4
      parallelism_config_tp_size: 2
    ```
    """

    code = "AC010"
    name = "invalid-parallelism-config"
    severity = "error"

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = _data(document)
        if data is None or _sagemaker(data) or data.get("distributed_type") not in PARALLELISM_LAUNCHERS:
            return
        block = data.get("parallelism_config")
        if not isinstance(block, dict) or not block:
            return
        keys = {key[len("parallelism_config_"):]: key for key in block if isinstance(key, str)
                and key.startswith("parallelism_config_")}

        def at(name: str) -> str:
            return f"/parallelism_config/{keys[name]}" if name in keys else "/parallelism_config"

        def value(name: str, default: Any) -> Any:
            return block[keys[name]] if name in keys else default

        sizes: dict[str, int] = {}
        for name in SIZES:
            size = _int(value(name, 1))
            if size is None:
                return  # int() of it raises first; not judged here
            sizes[name] = size
        refused = False
        if sizes["cp_size"] > 1:
            strategy = value("cp_comm_strategy", "allgather")
            if str(strategy) not in CP_COMM_STRATEGIES:
                refused = True
                yield self.finding(document, at("cp_comm_strategy"), f"parallelism_config_cp_comm_strategy "
                                   f"{strategy!r} is neither 'allgather' nor 'alltoall': with cp_size "
                                   f"{sizes['cp_size']} every training process raises ValueError (\"Invalid "
                                   "cp_comm_strategy\")")
        if sizes["sp_size"] > 1:
            attention = str(value("sp_attn_implementation", "sdpa"))
            if attention in SP_ATTN_UNSUPPORTED:
                refused = True
                yield self.finding(document, at("sp_attn_implementation"), f"parallelism_config_sp_attn_"
                                   f"implementation {attention!r}: sequence parallelism does not support eager or "
                                   "flex_attention; every training process raises ValueError (\"Invalid "
                                   "sp_attn_implementation\"); use sdpa or a flash attention")
            elif attention not in SP_ATTN_BUILTIN and not ("/" in attention and "flash-attn" in attention):
                refused = True
                yield self.finding(document, at("sp_attn_implementation"), f"parallelism_config_sp_attn_"
                                   f"implementation {attention!r} is not one of {', '.join(SP_ATTN_BUILTIN)} nor a "
                                   "hub flash attention kernel (kernels-community/flash-attn2): every training "
                                   "process raises ValueError (\"Invalid sp_attn_implementation\")")
        for name in SIZES:
            if sizes[name] < 1:
                refused = True
                yield self.finding(document, at(name), f"parallelism_config_{name} is {sizes[name]}: every "
                                   f"training process raises ValueError (\"{name} must be at least 1\")")
        for name, allowed in (("cp_backend", "torch"), ("sp_backend", "deepspeed")):
            chosen = value(name, allowed)
            if str(chosen) != allowed:
                refused = True
                yield self.finding(document, at(name), f"parallelism_config_{name} {chosen!r}: the only "
                                   f"{name.replace('_', ' ')} is {allowed!r}; every training process raises "
                                   f"ValueError (\"{name} must be one of ['{allowed}']\")", fix=allowed)
        if sizes["cp_size"] > 1 and sizes["sp_size"] > 1:
            refused = True
            yield self.finding(document, at("sp_size"), f"cp_size {sizes['cp_size']} and sp_size "
                               f"{sizes['sp_size']}: context and sequence parallelism are mutually exclusive; every "
                               "training process raises ValueError; set one of them to 1")
        if (sizes["tp_size"] > 1 or sizes["cp_size"] > 1) and sizes["dp_replicate_size"] > 1 \
                and sizes["dp_shard_size"] == 1:
            refused = True
            yield self.finding(document, at("dp_replicate_size"), "tensor/context parallelism with pure data "
                               f"parallelism (dp_replicate_size {sizes['dp_replicate_size']}, dp_shard_size 1): "
                               "every training process raises ValueError (\"cannot be used with pure data "
                               "parallelism\"); shard over dp_shard_size instead")
        kind, world = data.get("distributed_type"), _world(data)
        if not refused and sizes["cp_size"] > 1 and kind in MULTI_DEVICE and world is not None and world > 1 \
                and _environment().get("ACCELERATE_ALLOW_CP_STANDALONE", "false").lower() != "true":
            # AcceleratorState.__init__, on the multi-device process group: context parallelism shards with FSDP
            refused = True
            yield self.finding(document, at("cp_size"), f"parallelism_config_cp_size {sizes['cp_size']} under "
                               f"distributed_type {kind}, which builds no FSDP plugin: every training process raises "
                               "ValueError when it creates the Accelerator (\"`cp_size > 1` specified in the "
                               "`parallelism_config`, but no `fsdp_plugin` was provided\"); use distributed_type "
                               "FSDP with fsdp_version 2 (or set ACCELERATE_ALLOW_CP_STANDALONE=true in the job's "
                               "environment, and tell shardshift with --env)")
        if not refused:
            yield from self._against_the_launch(document, data, sizes, at)

    def _against_the_launch(self, document: Document, data: dict, sizes: dict[str, int], at) -> Iterable[Finding]:
        """ParallelismConfig._validate_accelerator: the sizes against the processes and the mode."""
        kind = data.get("distributed_type")
        world = _world(data)
        if world is None:
            return
        total = 1
        for size in sizes.values():
            total *= size
        multi_device = kind in MULTI_DEVICE and world > 1
        if not multi_device and total == 1:
            return
        if total == 1:
            total = world  # Accelerate makes dp_replicate_size the number of processes
        product = " x ".join(str(sizes[name]) for name in SIZES)
        if sizes["sp_size"] <= 1 and total != world:
            if kind == "FSDP":
                return  # the reader gives FSDP's degrees to the Plan: PL101 reports the product against the world
            yield self.finding(document, "/parallelism_config", f"the parallelism_config sizes multiply to {total} "
                               f"({product}: dp_replicate, dp_shard, tp, cp, sp) but accelerate launch starts "
                               f"{world} processes: every training process fails when it creates the Accelerator "
                               "(ValueError: \"ParallelismConfig total_size does not match num_processes\"); make "
                               "the product equal num_processes", key=True,
                               related=[self.related(document, "/num_processes", "the number of processes")]
                               if "num_processes" in data else [])
            return
        fsdp2 = kind == "FSDP" and fsdp_version(data) == 2
        if fsdp2 and sizes["dp_shard_size"] == 1 and sizes["cp_size"] == 1:
            yield self.finding(document, "/parallelism_config", "under FSDP2 this parallelism_config leaves FSDP "
                               "no dimension to shard over (dp_shard_size and cp_size are 1): every training process "
                               "raises ValueError (\"FSDP is enabled but the parallelism config has no dimension for "
                               "FSDP to shard across\"); give dp_shard_size the processes tp_size does not use",
                               key=True)
        elif total > 1 and not (fsdp2 or multi_device or kind == "DEEPSPEED"):
            mode = "FSDP1 (fsdp_version 1)" if kind == "FSDP" else kind
            quoted = "\"Using `cp_size>1` requires FSDP2\"" if kind == "FSDP" and sizes["cp_size"] > 1 else \
                "\"ParallelismConfig is only compatible DistributedType.FSDP (version 2) ...\""
            yield self.finding(document, "/parallelism_config", f"parallelism_config works with FSDP2, the "
                               f"multi-device types and DeepSpeed, not {mode}: every training process raises "
                               f"ValueError ({quoted})" + ("; set fsdp_version: 2" if kind == "FSDP" else ""),
                               key=True)


FP8_FORMATS = ("HYBRID", "E4M3", "E5M2")
AMAX_COMPUTE_ALGOS = ("max", "most_recent")
OPT_LEVELS = ("O1", "O2")


# the TE recipe's defaults (TERecipeKwargs.__post_init__): to_kwargs() hands Transformer Engine only what differs
TE_RECIPE_DEFAULTS = {"fp8_amax_compute_algo": "most_recent", "fp8_amax_history_len": 1024}


class InvalidFp8Config(AccelerateRule):
    """An `fp8_config` value the FP8 recipe Accelerate builds for `mixed_precision: fp8` refuses.

    ## What it does
    Under `mixed_precision: fp8`, reports in `fp8_config`: with `backend: TE` an `fp8_format`
    other than HYBRID, E4M3 or E5M2 (any case) or an `amax_compute_algo` other than `max` or
    `most_recent`, and with `use_mxfp8_block_scaling` an `amax_compute_algo` or `amax_history_len`
    other than the recipe's default (MXFP8 takes neither); with `backend: MSAMP` an `opt_level` other
    than O1 or O2, and under
    `distributed_type: DEEPSPEED` (with the DeepSpeed settings in the YAML) MS-AMP with
    `zero_stage: 3`.

    ## Why is this bad
    `accelerate launch` copies `fp8_config` onto its arguments without checking it and exports
    each key as an ACCELERATE_FP8_* variable. On a machine with the FP8 backend installed, the
    `Accelerator` each training process creates builds the backend's recipe
    (`TERecipeKwargs`, `MSAMPRecipeKwargs`) or the DeepSpeed plugin enables MS-AMP from them, and
    raises `ValueError` (MS-AMP with ZeRO stage 3: `NotImplementedError`).

    ## Example
    ```yaml
    mixed_precision: fp8
    fp8_config:
      backend: TE
      fp8_format: E4M5
    ```

    ## Use instead
    ```yaml
    mixed_precision: fp8
    fp8_config:
      backend: TE
      fp8_format: E4M3
    ```
    """

    code = "AC011"
    name = "invalid-fp8-config"
    severity = "error"

    def _mxfp8(self, document: Document, entry) -> Iterable[Finding]:
        """utils/transformer_engine.py apply_fp8_autowrap: MXFP8 block scaling takes no amax settings."""
        scaling = entry("fp8_use_mxfp8_block_scaling")
        if scaling is None or truthy(scaling[1]) is not True:  # str_to_bool of the exported variable
            return
        for name, default in TE_RECIPE_DEFAULTS.items():
            found = entry(name)
            if found is None:
                continue
            try:
                given = str(found[1]).lower() if default == "most_recent" else int(found[1])
            except (TypeError, ValueError, OverflowError):
                continue  # int() of it raises first, in the recipe
            if given == default:
                continue  # the recipe's default: not handed to Transformer Engine
            short = name[len("fp8_"):]
            yield self.finding(document, found[0], f"{short} {found[1]!r} with use_mxfp8_block_scaling: with "
                               "Transformer Engine installed, the script's Accelerator raises ValueError when it "
                               f"prepares the model (\"`{short}` is not supported for MXFP8 block scaling.\"); "
                               f"drop {short} (MXFP8 scales per block)",
                               related=[self.related(document, scaling[0], "MXFP8 block scaling")])

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = _data(document)
        if data is None or _sagemaker(data) or data.get("mixed_precision") != "fp8":
            return
        block = data.get("fp8_config")
        if not isinstance(block, dict):
            return
        keys = {(key if key.startswith("fp8") else "fp8_" + key): key for key in block if isinstance(key, str)}

        def entry(name: str) -> tuple[str, Any] | None:
            return (f"/fp8_config/{keys[name]}", block[keys[name]]) if name in keys else None

        backend = entry("fp8_backend")
        if backend is None or not isinstance(backend[1], str):
            return
        where = "every training process raises"
        if backend[1] == "TE":
            found = entry("fp8_format")
            if found is not None and str(found[1]).upper() not in FP8_FORMATS:
                yield self.finding(document, found[0], f"fp8_format {found[1]!r} is not one of "
                                   f"{', '.join(FP8_FORMATS)}: with Transformer Engine installed, {where} ValueError "
                                   "(\"`fp8_format` must be one of HYBRID or E4M3 or E5M2.\")")
            found = entry("fp8_amax_compute_algo")
            if found is not None and str(found[1]).lower() not in AMAX_COMPUTE_ALGOS:
                yield self.finding(document, found[0], f"amax_compute_algo {found[1]!r} is neither max nor "
                                   f"most_recent: with Transformer Engine installed, {where} ValueError "
                                   "(\"`amax_compute_algo` must be one of max or most_recent\")")
                return
            yield from self._mxfp8(document, entry)
        elif backend[1] == "MSAMP":
            found = entry("fp8_opt_level")
            if found is not None and str(found[1]) not in OPT_LEVELS:
                yield self.finding(document, found[0], f"opt_level {found[1]!r} is neither O1 nor O2: with MS-AMP "
                                   f"installed, {where} ValueError (\"`opt_level` must be one of O1 or O2\", or "
                                   "under DeepSpeed \"Invalid optimization level for MS-AMP\")")
            elif data.get("distributed_type") == "DEEPSPEED":
                deepspeed = data.get("deepspeed_config")
                deepspeed = deepspeed if isinstance(deepspeed, dict) else {}
                file = deepspeed.get("deepspeed_config_file")
                if isinstance(file, str) and file.strip().lower() != "none":
                    return  # the stage is the ds_config's
                if _int(deepspeed.get("zero_stage", 2)) == 3:
                    yield self.finding(document, "/deepspeed_config/zero_stage", "MS-AMP (fp8_config backend "
                                       "MSAMP) with ZeRO stage 3: with MS-AMP installed, the DeepSpeed plugin of "
                                       "every training process raises NotImplementedError (\"MS-AMP is not "
                                       "supported for ZeRO Stage 3\"); use stage 0, 1 or 2",
                                       related=[self.related(document, backend[0], "the FP8 backend")])


class TooFewGpuIds(AccelerateRule):
    """A multi-GPU launch on one machine with fewer than two `gpu_ids`: `accelerate launch` refuses it.

    ## What it does
    Reports `gpu_ids` naming fewer than two devices (`"0"`, `""`) when `distributed_type` is
    MULTI_GPU (or another multi-device type) on one machine.

    ## Why is this bad
    `accelerate launch` raises `ValueError("Less than two GPU ids were configured and tried to
    run on multiple GPUs. ...")` before it starts anything.

    ## Example
    ```yaml
    distributed_type: MULTI_GPU
    gpu_ids: '0'
    num_processes: 2
    ```

    ## Use instead
    ```yaml
    distributed_type: MULTI_GPU
    gpu_ids: 0,1
    num_processes: 2
    ```
    """

    code = "AC104"
    name = "too-few-gpu-ids-for-multi-gpu"
    severity = "error"

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = _data(document)
        if data is None or _sagemaker(data) or data.get("distributed_type") not in MULTI_DEVICE:
            return
        ids, machines = data.get("gpu_ids"), data.get("num_machines", 1)
        if not isinstance(ids, str) or ids == "all" or not _is_int(machines) or machines > 1:
            return
        if len(ids.split(",")) < 2:
            yield self.finding(document, "/gpu_ids", f"gpu_ids {ids!r} names fewer than two GPUs for "
                               f"{data['distributed_type']} on one machine: accelerate launch raises ValueError "
                               "(\"Less than two GPU ids were configured and tried to run on multiple GPUs\"); list "
                               "at least two ids, or write all")


class MultiMachineWithoutMainProcess(AccelerateRule):
    """A multi-machine config of the simple launcher without `main_process_ip` or `main_process_port`.

    ## What it does
    Reports a config with `num_machines` above 1 and `distributed_type` NO or MULTI_CPU (the
    types `accelerate launch` starts with its simple launcher) that does not give
    `main_process_ip` or `main_process_port`.

    ## Why is this bad
    The simple launcher asserts both before it starts the process (`AssertionError: When using
    multiple machines, you need to specify the main process IP.` / `... port.`), unless they
    are given on the `accelerate launch` command line. So the verdict rests on the launches that
    run the file: an error where the launch scripts of the checked tree that run it leave the value
    to it, nothing where one gives the flag, an info where none is found. A fractional
    `num_machines` such as 1.5 counts as more than one machine.

    ## Example
    ```yaml
    distributed_type: MULTI_CPU
    num_machines: 2
    num_processes: 2
    ```

    ## Use instead
    ```yaml
    distributed_type: MULTI_CPU
    num_machines: 2
    num_processes: 2
    main_process_ip: 10.0.0.1
    main_process_port: 29500
    ```
    """

    code = "AC105"
    name = "multi-machine-without-main-process"
    severity = "error"

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = _data(document)
        if data is None or _sagemaker(data) or data.get("distributed_type") not in SIMPLE_LAUNCHER:
            return
        machines = data.get("num_machines", 1)
        if not isinstance(machines, (int, float)) or isinstance(machines, bool) or machines <= 1:
            return  # (a float such as 1.5 is above 1 too: the launcher compares it as it is)
        for key, what in (("main_process_ip", "IP"), ("main_process_port", "port")):
            if data.get(key) is None:
                yield from _premised(self, document, context, "/num_machines", key,
                                     f"num_machines is {machines} with distributed_type {data['distributed_type']} "
                                     f"but no {key}: accelerate launch's simple launcher fails an assertion (\"When "
                                     f"using multiple machines, you need to specify the main process {what}.\") unless "
                                     f"--{key} is given on the command line", key=True)
                return


class DeepSpeedConfigWithoutZero(PlanRule):
    """The `deepspeed_config_file` an Accelerate config names has no `zero_optimization`.

    ## What it does
    Follows an Accelerate config's `deepspeed_config.deepspeed_config_file` (under
    `distributed_type: DEEPSPEED`) and reports when that ds_config has no `zero_optimization`
    block.

    ## Why is this bad
    Accelerate's DeepSpeed plugin raises `ValueError("Please specify the ZeRO optimization config
    in the DeepSpeed config.")` in every training process, even for ZeRO stage 0.

    ## Example
    ```yaml
    distributed_type: DEEPSPEED
    deepspeed_config:
      deepspeed_config_file: ds_config.json
    ```
    with a ds_config.json that has no `zero_optimization`.

    ## Use instead
    Add `"zero_optimization": {"stage": 0}` (or the stage you mean) to ds_config.json.
    """

    code = "AC106"
    name = "deepspeed-config-file-without-zero"
    severity = "error"
    formats = ("accelerate",)

    def check_setup(self, setup, context: Context) -> Iterable[Finding]:
        import os

        referrer = setup.referrer
        if referrer is None or referrer.format != "accelerate":
            return
        data = _data(referrer)
        if data is None or data.get("distributed_type") != "DEEPSPEED":
            return
        targets = {os.path.realpath(d.path): d for d in setup.documents if d.format == "deepspeed"}
        for reference in referrer.references:
            target = targets.get(os.path.realpath(reference.resolved)) if reference.resolved else None
            if reference.role != "deepspeed_config" or target is None:
                continue
            config = target.data
            if isinstance(config, dict) and target.syntax is None and "zero_optimization" not in config:
                yield self.finding_at(reference.where, f"{reference.target} has no zero_optimization: Accelerate's "
                                      "DeepSpeed plugin raises ValueError (\"Please specify the ZeRO optimization "
                                      "config in the DeepSpeed config.\") in every training process; add "
                                      "zero_optimization with the stage you mean (0 for none)",
                                      related=[self.related(target, "", "the ds_config, without zero_optimization")])


class DeepSpeedConfigFileMissing(AccelerateRule):
    """The `deepspeed_config_file` an Accelerate config names is neither beside it nor in the current directory.

    ## What it does
    Under `distributed_type: DEEPSPEED`, reports a `deepspeed_config_file` path that names no
    file next to the Accelerate config, from a folder above it (the repository's root, where jobs
    are usually launched) or from the directory the check runs in, and that is not inline JSON or
    base64-encoded JSON either (Accelerate takes those too). It suggests a close file name that does exist. An
    info: Accelerate opens the path relative to the directory `accelerate launch` runs in, which
    no file states.

    ## Why is this bad
    Accelerate's DeepSpeed plugin, in every training process, raises `ValueError: Expected a
    string path to an existing deepspeed config, or a dictionary, or a base64 encoded string.`
    A path that only works from one directory breaks the job as soon as it is launched from
    another.

    ## Example
    ```yaml
    distributed_type: DEEPSPEED
    deepspeed_config:
      deepspeed_config_file: configs/ds_confg.json
    ```

    ## Use instead
    ```yaml
    distributed_type: DEEPSPEED
    deepspeed_config:
      deepspeed_config_file: configs/ds_config.json
    ```
    """

    code = "AC109"
    name = "deepspeed-config-file-missing"
    severity = "info"

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        if not isinstance(data, dict) or data.get("distributed_type") != "DEEPSPEED":
            return
        for reference in document.references:
            if reference.role != "deepspeed_config" or reference.resolved is not None or reference.note:
                continue
            if reference.unknown is not None and "only known when the job runs" in reference.unknown:
                continue  # a variable: not a path the file states
            if _inline_json(reference.target) or _from_a_parent(document.path, reference.target):
                continue
            import os

            from shardshift.context import UnknownContext
            from shardshift.rules.base import did_you_mean

            folder = os.path.dirname(os.path.join(os.path.dirname(document.path), reference.target))
            try:
                names = sorted(n for n in os.listdir(folder or ".") if n.endswith(".json"))[:500]
            except (OSError, ValueError):  # no such folder, or a NUL in the path
                names = []
            close = did_you_mean(os.path.basename(reference.target), names)
            fixed = os.path.join(os.path.dirname(reference.target), close) if close else None
            where = reference.where
            yield self.finding(
                document, where.pointer,
                f"deepspeed_config_file {reference.target!r} is neither next to {os.path.basename(document.path)}, "
                "nor under a folder above it, nor in the current directory: where the job does not find it either, Accelerate's DeepSpeed plugin "
                "raises ValueError in every training process (\"Expected a string path to an existing deepspeed "
                "config, or a dictionary, or a base64 encoded string.\")"
                + (f"; did you mean {fixed!r}?" if fixed else ""),
                fix=fixed, position=(where.line, where.column),
                unknown_context=UnknownContext(
                    "program", "the directory accelerate launch runs in, which Accelerate opens the path from",
                    "check from the directory the job is launched in, or name the path from the repository's root"))


def _from_a_parent(referrer: str, target: str) -> bool:
    """Whether a relative `target` names a file from a folder above the referring file (a job launched from
    the repository's root with a config kept in a subfolder): then the directory the job runs in decides."""
    import os

    if os.path.isabs(target):
        return False
    folder = os.path.dirname(os.path.abspath(referrer))
    for _ in range(8):
        parent = os.path.dirname(folder)
        if parent == folder:
            return False
        folder = parent
        if os.path.isfile(os.path.join(folder, target)):
            return True
    return False


def _inline_json(text: str) -> bool:
    """Whether Accelerate's HfDeepSpeedConfig reads `text` itself as JSON (or base64 of JSON): an object is the
    config, anything else fails there (AC012 says so), neither is a missing path."""
    import base64
    import binascii
    import json

    try:
        json.loads(text)
        return True
    except RecursionError:
        return True  # JSON nested past the parser's depth: Accelerate fails on it too, but not as a missing path
    except ValueError:
        pass
    try:
        json.loads(base64.urlsafe_b64decode(text).decode("utf-8"))
        return True
    except (ValueError, binascii.Error, UnicodeDecodeError, RecursionError):
        return False
