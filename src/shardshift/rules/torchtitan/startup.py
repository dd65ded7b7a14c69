"""torchtitan rules for the checks its start-up makes on the job config (issue 22's coverage map).

Each mirrors a check site of torchtitan v0.2.2 that scripts/coverage/scope_torchtitan.py lists
and src/shardshift/data/coverage/torchtitan.tsv maps to it; tests/test_coverage_map.py runs
torchtitan's own start-up path (tests/coverage_loaders/torchtitan.py) on every bad fixture and
confirms that the site is reached, and not reached on the good fixtures.
"""

from __future__ import annotations

import os
from typing import Any, Iterable

from shardshift.rules.base import Context, Finding, did_you_mean
from shardshift.rules.torchtitan.rules import _TitanRule

# torchtitan v0.2.2's registered train specs: torchtitan/models/__init__.py `_supported_models` and
# torchtitan/experiments/__init__.py `_supported_experiments`, looked up by `get_train_spec`.
MODELS = ("deepseek_v3", "flux", "gpt_oss", "llama3", "llama3_ft", "llama4", "qwen3")
EXPERIMENTS = ("simple_fsdp.llama3", "simple_fsdp.deepseek_v3", "vlm", "compiler_toolkit.deepseek_v3",
               "compiler_toolkit.llama3", "transformers_modeling_backend", "autoparallel.llama3",
               "autoparallel.deepseek_v3", "autoparallel.local_map_deepseek_v3")


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _section(data: Any, *names: str) -> dict:
    for name in names:
        data = data.get(name) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else {}


def _upstream_data(document, context: Context) -> dict | None:
    """The file's TOML data when torchtitan v0.2.2's own code judges it (`_upstream`), else None."""
    data = document.data
    return data if isinstance(data, dict) and _upstream(document, context) else None


class _StartupRule(_TitanRule):
    """A check of torchtitan v0.2.2's own code: judged only where that code reads the file (`_upstream_data`)."""

    def check(self, document, context: Context) -> Iterable[Finding]:
        data = _upstream_data(document, context)
        if data is not None:
            yield from self.judge(document, data)

    def judge(self, document, data: dict) -> Iterable[Finding]:
        raise NotImplementedError


def _upstream(document, context: Context) -> bool:
    """Whether torchtitan v0.2.2's own code judges the file (not a vendored copy of another release)."""
    from shardshift.formats.torchtitan.extension import table_for

    return table_for(document.path, document.data, "torchtitan" in context.release_overrides).upstream


class ConfigDataclassCheck(_StartupRule):
    """A value that a torchtitan config section refuses as it is built from the file.

    ## What it does
    Checks the values that torchtitan v0.2.2's config dataclasses check in their `__post_init__`,
    which runs while `ConfigManager` builds `JobConfig` from the TOML:
    `parallelism.context_parallel_load_balancer` must not be the empty string, and
    `validation.steps` must be positive or -1 (whether or not validation is enabled).

    ## Why is this bad
    The config manager stops before anything starts: `ValueError: context_parallel_load_balancer
    cannot be an empty string. Use None to disable load balancing.` or `AssertionError: validation
    steps must be positive or -1`.

    ## Example
    ```toml
    [validation]
    steps = 0
    ```

    ## Use instead
    ```toml
    [validation]
    steps = 100  # or -1: the whole validation set
    ```
    """

    code = "TT004"
    name = "config-section-refuses-value"
    severity = "error"

    def judge(self, document, data: dict) -> Iterable[Finding]:
        parallelism = _section(data, "parallelism")
        if parallelism.get("context_parallel_load_balancer") == "":
            yield self.finding(document, "/parallelism/context_parallel_load_balancer",
                               'context_parallel_load_balancer = "": torchtitan\'s Parallelism section refuses the '
                               "empty string when the config is loaded (ValueError: context_parallel_load_balancer "
                               'cannot be an empty string); leave the key out for "headtail", or name a balancer '
                               '("headtail", "ptrr")')
        steps = _int(_section(data, "validation").get("steps"))
        if steps is not None and not (steps > 0 or steps == -1):
            yield self.finding(document, "/validation/steps",
                               f"validation.steps = {steps}: torchtitan's Validation section asserts a positive "
                               "number of steps or -1 (the whole validation set) when the config is loaded, whether "
                               "or not validation is enabled (AssertionError: validation steps must be positive or -1)")


class UnknownModelName(_StartupRule):
    """A `model.name` that torchtitan has no train spec for.

    ## What it does
    Checks `model.name` against the models torchtitan v0.2.2 registers (`llama3`, `llama4`,
    `qwen3`, `deepseek_v3`, `gpt_oss`, `flux`, `llama3_ft` and the experiments such as
    `simple_fsdp.llama3`). A file that imports its own module (`experimental.custom_import`),
    which may register a train spec with `register_train_spec`, is not judged.

    ## Why is this bad
    The trainer looks the name up before it reads data or builds the model and stops:
    `ValueError: TrainSpec llama_3 is not registered.`

    ## Example
    ```toml
    [model]
    name = "llama_3"
    ```

    ## Use instead
    ```toml
    [model]
    name = "llama3"
    ```
    """

    code = "TT005"
    name = "unknown-model-name"
    severity = "error"
    # a model name the repository registers itself (register_train_spec) is an extension
    premises = ("reader", "release", "extension")

    def judge(self, document, data: dict) -> Iterable[Finding]:
        name = _section(data, "model").get("name")
        if not isinstance(name, str) or name in MODELS or name in EXPERIMENTS:
            return
        if _section(data, "experimental").get("custom_import"):
            return  # the imported module may register this name
        registers = _custom_module_registers(document)
        if registers is not False:
            return  # the custom config module torchtitan imports registers train specs, or is not in the tree
        message = (f"model.name = \"{name}\": torchtitan v0.2.2 has no train spec of that name and stops before it "
                   f"builds anything (ValueError: TrainSpec {name} is not registered.)")
        guess = did_you_mean(name, [*MODELS, *EXPERIMENTS])
        if guess:
            message += f"; did you mean {guess!r}?"
        yield self.finding(document, "/model/name", message)


def _custom_module_registers(document) -> bool | None:
    """Whether the custom config module the TOML names (`job.custom_config_module`), which
    torchtitan imports before it looks the model up, or a package `__init__` above it, calls
    `register_train_spec`: True, False, or None when the module is not in the checked tree. False
    when the TOML names none."""
    from shardshift.formats.torchtitan.extension import table_for

    table = table_for(document.path, document.data)
    if not table.custom:
        return False
    if table.custom_path is None:
        return None
    folder, paths = os.path.dirname(table.custom_path), [table.custom_path]
    for _ in table.custom.split(".")[:-1]:
        paths.append(os.path.join(folder, "__init__.py"))
        folder = os.path.dirname(folder)
    from shardshift.context.repository import read_text

    return any("register_train_spec" in (read_text(path) or "") for path in paths)


def _degree(data: dict, key: str) -> int:
    value = _int(_section(data, "parallelism").get(key))
    return value if value is not None else 1


def _model_compiled(data: dict) -> bool:
    compile_ = _section(data, "compile")
    components = compile_.get("components", ["model", "loss"])
    return compile_.get("enable") is True and isinstance(components, list) and "model" in components


class QuantizationConverterConfig(_StartupRule):
    """Quantization converter settings that torchtitan's converters refuse at start-up.

    ## What it does
    For the converters `model.converters` names, checks what torchtitan v0.2.2's converter
    classes assert when the trainer builds them (`build_model_converters`, after the GPU check):
    - quantization converters of different types together (`quantize.linear.float8` with
      `quantize.grouped_mm.mx`): one quantization type for dense and MoE layers;
    - `quantize.linear.float8`: `recipe_name` together with `enable_fsdp_float8_all_gather`;
    - `quantize.grouped_mm.float8`: pipeline or context parallelism (degree > 1);
    - `quantize.linear.mx`: tensor parallelism (degree > 1) with the model compiled
      (`compile.enable` and "model" in `compile.components`).

    ## Why is this bad
    The trainer stops with an AssertionError after the job got its GPUs ("Cannot combine model
    converters with different quantization types", "using `float8_config.enable_fsdp_float8_all_gather`
    together with `float8_config.recipe_name` is not supported", "Float8 MoE training prototype does
    not yet support pipeline parallelism", "TP not yet supported with torch.compile for mxfp8").

    ## Example
    ```toml
    [model]
    converters = ["quantize.linear.float8"]
    [quantize.linear.float8]
    recipe_name = "rowwise"
    enable_fsdp_float8_all_gather = true
    ```

    ## Use instead
    ```toml
    [model]
    converters = ["quantize.linear.float8"]
    [quantize.linear.float8]
    recipe_name = "rowwise"
    ```
    """

    code = "TT006"
    name = "quantization-converter-config"
    severity = "error"

    def judge(self, document, data: dict) -> Iterable[Finding]:
        converters = _section(data, "model").get("converters")
        if not isinstance(converters, list) or not all(isinstance(c, str) for c in converters):
            return
        quantizing = [(i, c) for i, c in enumerate(converters) if "quantize" in c]
        if quantizing:
            first_index, first = quantizing[0]
            for index, converter in quantizing[1:]:
                if converter.split(".")[-1] != first.split(".")[-1]:
                    yield self.finding(
                        document, f"/model/converters/{index}",
                        f'"{converter}" after "{first}": torchtitan applies one quantization type to dense and MoE '
                        f"layers and stops when it builds the converters (AssertionError: Cannot combine model "
                        f"converters with different quantization types: '{converter.split('.')[-1]}' and "
                        f"'{first.split('.')[-1]}'); use the {first.split('.')[-1]} form of both",
                        related=[self.related(document, f"/model/converters/{first_index}",
                                              f"{first} is named here")])
                    break
        if "quantize.linear.float8" in converters:
            float8 = _section(data, "quantize", "linear", "float8")
            if float8.get("recipe_name") not in (None, "") and float8.get("enable_fsdp_float8_all_gather") is True:
                yield self.finding(
                    document, "/quantize/linear/float8/enable_fsdp_float8_all_gather",
                    f"enable_fsdp_float8_all_gather = true with recipe_name \"{float8['recipe_name']}\": torchtitan's "
                    "Float8LinearConverter supports the float8 all-gather only for the default tensorwise scaling "
                    "and stops (AssertionError: using `float8_config.enable_fsdp_float8_all_gather` together with "
                    "`float8_config.recipe_name` is not supported); drop one of them",
                    related=[self.related(document, "/quantize/linear/float8/recipe_name", "recipe_name is set here")])
        if "quantize.grouped_mm.float8" in converters:
            named = f"/model/converters/{converters.index('quantize.grouped_mm.float8')}"
            for key, axis in (("pipeline_parallel_degree", "pipeline"), ("context_parallel_degree", "context")):
                degree = _degree(data, key)
                if degree > 1:
                    yield self.finding(
                        document, f"/parallelism/{key}",
                        f"{key} = {degree} with the quantize.grouped_mm.float8 converter: torchtitan's float8 MoE "
                        f"training prototype stops at start-up (AssertionError: Float8 MoE training prototype does "
                        f"not yet support {axis} parallelism); set the degree to 1 or drop the converter",
                        related=[self.related(document, named, "the converter is named here")])
        if "quantize.linear.mx" in converters and _model_compiled(data) and _degree(data, "tensor_parallel_degree") > 1:
            tp = _degree(data, "tensor_parallel_degree")
            yield self.finding(
                document, "/parallelism/tensor_parallel_degree",
                f"tensor_parallel_degree = {tp} with the quantize.linear.mx converter and the model compiled: "
                "torchtitan's MXLinearConverter stops at start-up (AssertionError: TP not yet supported with "
                "torch.compile for mxfp8); turn tensor parallelism off or leave \"model\" out of compile.components",
                related=[self.related(document, "/compile/enable", "compile is enabled here")])


class SeedCheckpointWithoutCheckpointing(_StartupRule):
    """A seed checkpoint asked for with checkpointing off.

    ## What it does
    Reports `checkpoint.create_seed_checkpoint = true` while `checkpoint.enable` is not true
    (torchtitan's default is false).

    ## Why is this bad
    torchtitan's entry point (`torchtitan.train.main`) builds the whole trainer first, then
    stops: `AssertionError: Must enable checkpointing when creating a seed checkpoint.`

    ## Example
    ```toml
    [checkpoint]
    create_seed_checkpoint = true
    ```

    ## Use instead
    ```toml
    [checkpoint]
    enable = true
    create_seed_checkpoint = true
    ```
    """

    code = "TT007"
    name = "seed-checkpoint-without-checkpointing"
    severity = "error"

    def judge(self, document, data: dict) -> Iterable[Finding]:
        checkpoint = _section(data, "checkpoint")
        if checkpoint.get("create_seed_checkpoint") is not True or checkpoint.get("enable") is True:
            return
        where = "is false" if "enable" in checkpoint else "is not set (false by default)"
        yield self.finding(document, "/checkpoint/create_seed_checkpoint",
                           f"create_seed_checkpoint = true, but checkpoint.enable {where}: torchtitan's entry point "
                           "builds the trainer, then stops (AssertionError: Must enable checkpointing when creating a "
                           "seed checkpoint.); set checkpoint.enable = true")


class SeedCheckpointOnManyProcesses(_TitanRule):
    """A seed checkpoint made by more than one process.

    ## What it does
    With the world size known (`--world-size`, `--nodes` × `--gpus-per-node`, or the processes a
    launch script that names this TOML starts), reports `checkpoint.create_seed_checkpoint = true`
    on more than one process.

    ## Why is this bad
    A seed checkpoint is the unsharded initial model; torchtitan's entry point builds the
    trainer on every process, then stops: `AssertionError: Must create seed checkpoint using a
    single device, to disable sharding.` torchtitan's own script starts it with `NGPU=1`.

    ## Example
    ```toml
    [checkpoint]
    enable = true
    create_seed_checkpoint = true
    ```
    launched with `torchrun --nproc_per_node=8`.

    ## Use instead
    Create the seed checkpoint in a separate run on one process (`NGPU=1 ./run_train.sh
    --checkpoint.create_seed_checkpoint`), and leave the key out of the training config.
    """

    code = "TT104"
    name = "seed-checkpoint-on-many-processes"
    severity = "error"

    def check(self, document, context: Context) -> Iterable[Finding]:
        from shardshift.rules.torchtitan.rules import _place, launched

        data = _upstream_data(document, context)
        if data is None:
            return
        if _section(data, "checkpoint").get("create_seed_checkpoint") is not True:
            return
        world, script = context.world_size, None
        if world is None:
            setup = launched(document, context)
            if setup is None:
                return
            _, world, script = setup
        if not isinstance(world, int) or world <= 1:
            return
        message = (f"create_seed_checkpoint = true on {world} processes: torchtitan's entry point builds the trainer "
                   f"on each, then stops (AssertionError: Must create seed checkpoint using a single device, to "
                   f"disable sharding.); create it in a run on one process and leave the key out of this config")
        related = []
        if script is not None:
            message += f"; {os.path.basename(script.file)} starts the {world} processes"
            related.append(_place(self, document, script, f"the launch script starts {world} processes here"))
        yield self.finding(document, "/checkpoint/create_seed_checkpoint", message, related=related)


# What torchtitan v0.2.2's own train specs hold (torchtitan/models/<name>/__init__.py get_train_spec;
# TrainSpec.build_validator_fn defaults to None): the models without a pipelining function, and those
# without a validator builder. Checked against get_train_spec by tests/test_torchtitan_oracle.py.
NO_PIPELINING = frozenset({"flux", "gpt_oss", "qwen3"})
NO_VALIDATOR = frozenset({"deepseek_v3", "gpt_oss"})


def _spec_model(document, context: Context) -> str | None:
    """The model.name of a file torchtitan's own code judges, when its train spec is one of torchtitan's
    (no custom import that may register others)."""
    data = _upstream_data(document, context)
    if data is None:
        return None
    if _section(data, "experimental").get("custom_import"):
        return None
    name = _section(data, "model").get("name", "llama3")
    return name if isinstance(name, str) and name in MODELS else None


class ModelWithoutPipelining(_TitanRule):
    """Pipeline parallelism for a model whose train spec has no pipelining function.

    ## What it does
    Reports `pipeline_parallel_degree` > 1 when `model.name` is one of torchtitan v0.2.2's models
    whose train spec has no `pipelining_fn`: `flux`, `gpt_oss`, `qwen3`.

    ## Why is this bad
    `Trainer.__init__` checks it before it applies any parallelism and stops: `RuntimeError:
    Pipeline Parallel is enabled but qwen3 does not support pipelining`.

    ## Example
    ```toml
    [model]
    name = "qwen3"
    [parallelism]
    pipeline_parallel_degree = 2
    ```

    ## Use instead
    Another parallelism for this model (data-parallel sharding, tensor or context parallel), or a
    model torchtitan can pipeline (`llama3`, `llama4`, `deepseek_v3`).
    """

    code = "TT106"
    name = "model-without-pipelining"
    severity = "error"
    premises = ("reader", "release", "extension")

    def check(self, document, context: Context) -> Iterable[Finding]:
        name = _spec_model(document, context)
        if name not in NO_PIPELINING:
            return
        pipeline = _int(_section(document.data, "parallelism").get("pipeline_parallel_degree"))
        if pipeline is None or pipeline <= 1:
            return
        yield self.finding(document, "/parallelism/pipeline_parallel_degree",
                           f"pipeline_parallel_degree {pipeline} with model.name = \"{name}\": its train spec has no "
                           f"pipelining function, and torchtitan's Trainer stops (RuntimeError: Pipeline Parallel is "
                           f"enabled but {name} does not support pipelining)",
                           fix="pipeline_parallel_degree = 1, with another parallelism for this model")


class ValidationWithoutValidator(_TitanRule):
    """Validation enabled for a model whose train spec builds no validator.

    ## What it does
    Reports `validation.enable = true` when `model.name` is one of torchtitan v0.2.2's models whose
    train spec has no `build_validator_fn`: `deepseek_v3`, `gpt_oss`.

    ## Why is this bad
    `Trainer.__init__` asserts `self.train_spec.build_validator_fn is not None` when validation is
    enabled, after it has built the model and applied the parallelisms: `AssertionError`, with no
    message, and the job stops before its first step.

    ## Example
    ```toml
    [model]
    name = "deepseek_v3"
    [validation]
    enable = true
    ```

    ## Use instead
    Validate outside the training job (or with a model whose train spec builds a validator:
    `llama3`, `llama4`, `qwen3`, `flux`).
    """

    code = "TT107"
    name = "validation-without-validator"
    severity = "error"
    premises = ("reader", "release", "extension")

    def check(self, document, context: Context) -> Iterable[Finding]:
        name = _spec_model(document, context)
        if name not in NO_VALIDATOR or _section(document.data, "validation").get("enable") is not True:
            return
        yield self.finding(document, "/validation/enable",
                           f"validation.enable with model.name = \"{name}\": its train spec builds no validator, and "
                           "torchtitan's Trainer asserts build_validator_fn is not None (AssertionError) before the "
                           "first step", fix="validation.enable = false")


class KeepOnlyLatestCheckpoint(_StartupRule):
    """`checkpoint.keep_latest_k = 1` with checkpointing on.

    ## What it does
    Reports `keep_latest_k = 1` in `[checkpoint]` when `checkpoint.enable` is true.

    ## Why is this bad
    torchtitan v0.2.2's `CheckpointManager` refuses it when the trainer builds it, before the first
    step: `ValueError: We need to maintain at least 2 checkpoint replicas, as the last one may be in
    the process of being saved.` (0 keeps every checkpoint.)

    ## Example
    ```toml
    [checkpoint]
    enable = true
    keep_latest_k = 1
    ```

    ## Use instead
    ```toml
    [checkpoint]
    enable = true
    keep_latest_k = 2
    ```
    """

    code = "TT108"
    name = "keep-only-latest-checkpoint"
    severity = "error"

    def judge(self, document, data: dict) -> Iterable[Finding]:
        checkpoint = _section(data, "checkpoint")
        if checkpoint.get("enable") is not True or _int(checkpoint.get("keep_latest_k")) != 1:
            return
        yield self.finding(document, "/checkpoint/keep_latest_k",
                           "keep_latest_k = 1 with checkpointing on: torchtitan's CheckpointManager refuses it before "
                           "the first step (ValueError: We need to maintain at least 2 checkpoint replicas, as the "
                           "last one may be in the process of being saved)",
                           fix="keep_latest_k = 2 or more (0 keeps every checkpoint)")


class ProfileFrequencyBelowWarmupAndActive(_StartupRule):
    """Profiling on with `profile_freq` below `profiler_warmup + profiler_active`.

    ## What it does
    Reports `profiling.profile_freq` when `profiling.enable_profiling` is true and it is smaller
    than `profiler_warmup + profiler_active` (torchtitan v0.2.2's defaults: 10, 3 and 1 where the
    file leaves them out).

    ## Why is this bad
    The trainer starts the profiler when training starts, after it has built the model and loaded
    the checkpoint, and torchtitan's `maybe_enable_profiling` asserts that the wait before each
    profiled window is not negative: `AssertionError: profile_freq must be greater than or equal to
    warmup + active`. The job stops at its first step, with the machines already allocated.

    ## Example
    ```toml
    [profiling]
    enable_profiling = true
    profile_freq = 2
    profiler_warmup = 3
    ```

    ## Use instead
    ```toml
    [profiling]
    enable_profiling = true
    profile_freq = 10
    profiler_warmup = 3
    ```
    """

    code = "TT109"
    name = "profile-frequency-below-warmup-and-active"
    severity = "error"

    def judge(self, document, data: dict) -> Iterable[Finding]:
        profiling = _section(data, "profiling")
        if profiling.get("enable_profiling") is not True:
            return
        values = {name: profiling.get(name, default) for name, default in
                  (("profile_freq", 10), ("profiler_warmup", 3), ("profiler_active", 1))}
        if any(_int(value) is None for value in values.values()):
            return  # a type the config manager refuses first
        frequency, warmup, active = values.values()
        if frequency >= warmup + active:
            return
        pointer = "/profiling/profile_freq" if "profile_freq" in profiling else "/profiling/enable_profiling"
        yield self.finding(document, pointer,
                           f"profile_freq {frequency} is below profiler_warmup {warmup} + profiler_active {active}: "
                           "when training starts torchtitan's profiler asserts (AssertionError: profile_freq must be "
                           "greater than or equal to warmup + active)",
                           fix=f"profile_freq = {warmup + active} or more")


# the load balancers torchtitan v0.2.2's cp_shard builds (distributed/context_parallel.py)
CP_LOAD_BALANCERS = ("headtail", "ptrr")


class UnknownContextParallelLoadBalancer(_StartupRule):
    """A `context_parallel_load_balancer` torchtitan has none of, with context parallelism on.

    ## What it does
    Reports `parallelism.context_parallel_load_balancer` when `context_parallel_degree` is above 1
    and the value is neither `headtail` nor `ptrr` (the empty string is refused earlier, by the
    config itself: TT004).

    ## Why is this bad
    torchtitan v0.2.2 accepts any string there and builds the config, the model and the mesh. Its
    first training step shards the batch over the context-parallel ranks (`cp_shard`) and raises:
    `ValueError: Invalid load_balancer_type '...'. Must be one of: 'headtail', 'ptrr', or None`.
    None (no load balancing) cannot be written in TOML.

    ## Example
    ```toml
    [parallelism]
    context_parallel_degree = 2
    context_parallel_load_balancer = "head_tail"
    ```

    ## Use instead
    ```toml
    [parallelism]
    context_parallel_degree = 2
    context_parallel_load_balancer = "headtail"
    ```
    """

    code = "TT110"
    name = "unknown-context-parallel-load-balancer"
    severity = "error"

    def judge(self, document, data: dict) -> Iterable[Finding]:
        parallelism = _section(data, "parallelism")
        balancer = parallelism.get("context_parallel_load_balancer")
        degree = _int(parallelism.get("context_parallel_degree"))
        if degree is None or degree <= 1 or not isinstance(balancer, str) or not balancer or \
                balancer in CP_LOAD_BALANCERS:
            return
        suggestion = did_you_mean(balancer, CP_LOAD_BALANCERS)
        yield self.finding(document, "/parallelism/context_parallel_load_balancer",
                           f"context_parallel_load_balancer {balancer!r} with context_parallel_degree {degree}: the "
                           "first training step raises ValueError (Invalid load_balancer_type "
                           f"'{balancer}'. Must be one of: 'headtail', 'ptrr', or None)"
                           + (f"; did you mean {suggestion!r}?" if suggestion else "; write headtail (SDPA) or ptrr "
                              "(FlexAttention)"),
                           fix=f'"{suggestion}"' if suggestion else None)


class LastSaveInHfWithoutModelOnly(_StartupRule):
    """`last_save_in_hf = true` with `last_save_model_only = false`, checkpointing on.

    ## What it does
    Reports `checkpoint.last_save_model_only = false` when `checkpoint.last_save_in_hf` is true and
    checkpointing is on (`checkpoint.enable`, not `load_only`).

    ## Why is this bad
    A Hugging Face safetensors checkpoint holds the model only. torchtitan v0.2.2 saves the last
    step that way and asserts first (`AssertionError: Only model can be saved when saving in HF
    safetensors format.`): the run trains to its last step and then fails at the final save, so
    the final weights are not written. The same happens to a seed checkpoint
    (`create_seed_checkpoint`), which is saved as a last step.

    ## Example
    ```toml
    [checkpoint]
    enable = true
    last_save_in_hf = true
    last_save_model_only = false
    ```

    ## Use instead
    ```toml
    [checkpoint]
    enable = true
    last_save_in_hf = true
    last_save_model_only = true
    ```
    """

    code = "TT111"
    name = "last-save-in-hf-without-model-only"
    severity = "error"

    def judge(self, document, data: dict) -> Iterable[Finding]:
        checkpoint = _section(data, "checkpoint")
        if checkpoint.get("enable") is not True or checkpoint.get("load_only") is True or \
                checkpoint.get("last_save_in_hf") is not True or checkpoint.get("last_save_model_only") is not False:
            return
        yield self.finding(document, "/checkpoint/last_save_model_only",
                           "last_save_model_only = false with last_save_in_hf = true: torchtitan trains to the last "
                           "step and then fails the final save (AssertionError: Only model can be saved when saving "
                           "in HF safetensors format), so the final weights are not written",
                           fix="last_save_model_only = true (or last_save_in_hf = false for a full checkpoint)")


def _loads_checkpoints(data: dict) -> dict | None:
    """The `[checkpoint]` section when checkpointing is on: only then does the trainer's first act,
    `CheckpointManager.load`, look at the load settings (it returns at once when `enable` is off)."""
    checkpoint = _section(data, "checkpoint")
    return checkpoint if checkpoint.get("enable") is True else None


class InitialLoadInHfWithoutModelOnly(_StartupRule):
    """`initial_load_in_hf = true` with `initial_load_model_only = false`, checkpointing on.

    ## What it does
    Reports `checkpoint.initial_load_model_only = false` when `checkpoint.initial_load_in_hf` is
    true and checkpointing is on (`checkpoint.enable`).

    ## Why is this bad
    A Hugging Face safetensors checkpoint holds the model only. torchtitan v0.2.2's trainer loads
    the initial checkpoint first thing in `train()`, on a run that has no checkpoint folder yet
    (the first run), and asserts before the first step: `AssertionError: Only model can be loaded
    when loading from HF's safetensors checkpoint.` A run that resumes from its own checkpoint
    folder ignores `initial_load_in_hf` (with a warning), so the setting never loads anything.

    ## Example
    ```toml
    [checkpoint]
    enable = true
    initial_load_in_hf = true
    initial_load_model_only = false
    ```

    ## Use instead
    ```toml
    [checkpoint]
    enable = true
    initial_load_in_hf = true
    initial_load_model_only = true
    ```
    """

    code = "TT112"
    name = "initial-load-in-hf-without-model-only"
    severity = "error"

    def judge(self, document, data: dict) -> Iterable[Finding]:
        checkpoint = _loads_checkpoints(data)
        if checkpoint is None or checkpoint.get("initial_load_in_hf") is not True or \
                checkpoint.get("initial_load_model_only") is not False:
            return
        yield self.finding(document, "/checkpoint/initial_load_model_only",
                           "initial_load_model_only = false with initial_load_in_hf = true: the first run (no "
                           "checkpoint folder yet) fails before its first step (AssertionError: Only model can be "
                           "loaded when loading from HF's safetensors checkpoint), and a resumed run ignores "
                           "initial_load_in_hf",
                           fix="initial_load_model_only = true (an HF checkpoint holds the model only)")


class InitialLoadQuantizedWithoutHf(_StartupRule):
    """`initial_load_in_hf_quantized = true` without `initial_load_in_hf = true`, checkpointing on.

    ## What it does
    Reports `checkpoint.initial_load_in_hf_quantized = true` when `checkpoint.initial_load_in_hf`
    is not true (its default is false) and checkpointing is on (`checkpoint.enable`).

    ## Why is this bad
    A quantized initial checkpoint is read in Hugging Face's format only. On a run that has no
    checkpoint folder yet (the first run), torchtitan v0.2.2's trainer loads the initial checkpoint
    first thing in `train()` and asserts before the first step: `AssertionError: Quantized
    checkpoint can only be loaded from HuggingFace format.`

    ## Example
    ```toml
    [checkpoint]
    enable = true
    initial_load_in_hf_quantized = true
    ```

    ## Use instead
    ```toml
    [checkpoint]
    enable = true
    initial_load_in_hf = true
    initial_load_in_hf_quantized = true
    ```
    """

    code = "TT113"
    name = "initial-load-quantized-without-hf"
    severity = "error"

    def judge(self, document, data: dict) -> Iterable[Finding]:
        checkpoint = _loads_checkpoints(data)
        if checkpoint is None or checkpoint.get("initial_load_in_hf_quantized") is not True or \
                checkpoint.get("initial_load_in_hf") is True:
            return
        yield self.finding(document, "/checkpoint/initial_load_in_hf_quantized",
                           "initial_load_in_hf_quantized = true without initial_load_in_hf = true: the first run (no "
                           "checkpoint folder yet) fails before its first step (AssertionError: Quantized checkpoint "
                           "can only be loaded from HuggingFace format)",
                           fix="initial_load_in_hf = true")


# the states torchtitan v0.2.2's trainer gives its CheckpointManager (train.py `states={"train_state": self}`,
# then CheckpointManager.__init__ adds model, optimizer, dataloader and lr_scheduler)
CHECKPOINT_STATES = ("model", "optimizer", "lr_scheduler", "dataloader", "train_state")


class UnknownStateExcludedFromLoading(_StartupRule):
    """An `exclude_from_loading` entry that names no state torchtitan checkpoints, checkpointing on.

    ## What it does
    Reports each entry of `checkpoint.exclude_from_loading` (a list of strings) that is none of
    `model`, `optimizer`, `lr_scheduler`, `dataloader`, `train_state`, when checkpointing is on,
    with "did you mean".

    ## Why is this bad
    torchtitan v0.2.2 accepts any string there and trains from scratch without looking at it.
    When the run loads a full checkpoint (a resume, or an `initial_load_path` with
    `initial_load_model_only = false`), `CheckpointManager._states_to_load` checks each entry and
    raises `ValueError: <entry> not found in state_dict.`: the run cannot resume, at the moment the
    setting was written for.

    ## Example
    ```toml
    [checkpoint]
    enable = true
    exclude_from_loading = ["optimizers"]
    ```

    ## Use instead
    ```toml
    [checkpoint]
    enable = true
    exclude_from_loading = ["optimizer"]
    ```
    """

    code = "TT114"
    name = "unknown-state-excluded-from-loading"
    severity = "error"

    def judge(self, document, data: dict) -> Iterable[Finding]:
        checkpoint = _loads_checkpoints(data)
        entries = checkpoint.get("exclude_from_loading") if checkpoint is not None else None
        if not isinstance(entries, list) or not all(isinstance(entry, str) for entry in entries):
            return  # another type is TT002's
        for index, entry in enumerate(entries):
            if entry in CHECKPOINT_STATES:
                continue
            suggestion = did_you_mean(entry, CHECKPOINT_STATES)
            yield self.finding(document, f"/checkpoint/exclude_from_loading/{index}",
                               f"exclude_from_loading entry {entry!r} names no state torchtitan checkpoints "
                               f"({', '.join(CHECKPOINT_STATES)}): training from scratch ignores it, and a resume "
                               f"from a checkpoint raises ValueError ({entry} not found in state_dict.)"
                               + (f"; did you mean {suggestion!r}?" if suggestion else ""),
                               fix=f'"{suggestion}"' if suggestion else "remove the entry")
