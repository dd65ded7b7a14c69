"""Accelerate 1.15's own path on one config file, for the coverage map (tests/test_coverage_map.py).

`load(path)` does what `accelerate launch --config_file FILE train.py` does, as
tests/test_accelerate_oracle.py does (`launch_outcomes`): `load_config_from_file`, the launch
parser, `launch_command` (`_validate_launch_command`, the launcher's `prepare_*_env`), with only
the process start replaced: under the environment the training processes would get, it builds
what `Accelerator(...)` builds from that environment (the FSDP plugin and its mixed precision and
wrap policy, as in the oracle; the DeepSpeed plugin and `set_mixed_precision`; the Megatron-LM
plugin; the ParallelismConfig, then, for FSDP and multi-GPU launches, the real `AcceleratorState`
(its context-parallel checks; `_accelerator_state` below), and `_validate_accelerator` against the
world size the launcher starts; the FP8 recipe `Accelerator` picks from ACCELERATE_FP8_BACKEND, and
under TE the model's FP8 wrapping in `prepare`, `apply_fp8_autowrap`, over stand-ins for Transformer
Engine's modules: `_te_autowrap` below).
It raises the first refusal.

Emulated, because this machine lacks them: a GPU (FSDP1's `sync_module_states` asks for the
current device: device 0, as the oracle does) and an FP8 backend (`is_fp8_available` at launch
and the recipes' own "is the backend installed" checks say yes, so that the checks of the file's
fp8 values run as they do where the backend is installed). The accelerator `_validate_accelerator`
sees is a stand-in with the mode, the FSDP version and the number of processes the launch gives.

Options (after the case path in the map): `launch=<accelerate config>`: the case is a ds_config;
launch the Accelerate config of that name beside it with `--deepspeed_config_file <case>` (the
command line wins over the file's own deepspeed_config_file), so that a finding on the ds_config
(DS421) has its case. Under DeepSpeed the loader also fills the ds_config as
`Accelerator._prepare_deepspeed` does (`_prepare_deepspeed` below) and runs its check that no
"auto" is left.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

_PREFIXES = ("ACCELERATE_", "FSDP_", "PARALLELISM_CONFIG_", "MEGATRON_LM_")


def prepare() -> None:
    import torch  # noqa: F401
    import torch.distributed.run  # noqa: F401
    from accelerate.commands import launch  # noqa: F401
    from accelerate.commands.config import config_args  # noqa: F401
    from accelerate.parallelism_config import ParallelismConfig  # noqa: F401
    from accelerate.utils import (  # noqa: F401
        DeepSpeedPlugin,
        FullyShardedDataParallelPlugin,
        MegatronLMPlugin,
        fsdp_utils,  # noqa: F401
    )
    from accelerate.utils.deepspeed import HfDeepSpeedConfig  # noqa: F401


def _training_process(args, config) -> None:
    """What each training process builds from the environment `accelerate launch` exported."""
    import accelerate.utils.dataclasses as plugins
    import torch
    from accelerate.utils import DeepSpeedPlugin, DistributedType, FullyShardedDataParallelPlugin, MegatronLMPlugin

    import test_accelerate_oracle as oracle

    env = os.environ
    mixed = env.get("ACCELERATE_MIXED_PRECISION", "no")
    mode = DistributedType.NO
    is_fsdp2 = False
    if env.get("ACCELERATE_USE_FSDP") == "true":
        mode = DistributedType.FSDP
        with mock.patch.object(plugins, "is_cuda_available", lambda: True), \
                mock.patch.object(torch.cuda, "current_device", lambda: 0):
            plugin = FullyShardedDataParallelPlugin()
        if mixed in ("fp16", "bf16", "fp8"):
            plugin.set_mixed_precision(mixed)
        is_fsdp2 = plugin.fsdp_version == 2
        try:
            oracle._prepare_wrap_policy(plugin, plugin.transformer_cls_names_to_wrap)
        except oracle._PrepareRefused as refused:
            raise refused.__cause__ from None
    elif env.get("ACCELERATE_USE_DEEPSPEED") == "true":
        mode = DistributedType.DEEPSPEED
        plugin = DeepSpeedPlugin()
        plugin.set_mixed_precision(mixed)
        _prepare_deepspeed(plugin, args)
    elif env.get("ACCELERATE_USE_MEGATRON_LM") == "true":
        mode = DistributedType.MEGATRON_LM
        MegatronLMPlugin()
    elif config.distributed_type in (DistributedType.MULTI_GPU, DistributedType.MULTI_CPU):
        mode = config.distributed_type
    if getattr(args, "nproc_per_node", None) is not None:  # torchrun: per machine
        world = int(args.nproc_per_node) * int(args.num_machines or 1)
    else:
        world = int(args.num_processes or 1)
    if env.get("ACCELERATE_USE_PARALLELISM_CONFIG") == "true":
        from accelerate.parallelism_config import ParallelismConfig

        parallelism = ParallelismConfig()
        if mode in (DistributedType.FSDP, DistributedType.MULTI_GPU):
            _accelerator_state(plugin if mode == DistributedType.FSDP else None, parallelism, world)
        multi_device = world > 1 and mode == DistributedType.MULTI_GPU
        accelerator = SimpleNamespace(multi_device=multi_device, num_processes=world, is_fsdp2=is_fsdp2,
                                      distributed_type=mode, is_main_process=True)
        parallelism._validate_accelerator(accelerator)
    if mixed == "fp8":
        backend = env.get("ACCELERATE_FP8_BACKEND", "NO").upper()
        with mock.patch.object(plugins, "is_transformer_engine_available", lambda: True):
            if backend == "TE":
                _te_autowrap(plugins.TERecipeKwargs())
            elif backend == "MSAMP" and mode != DistributedType.DEEPSPEED:
                plugins.MSAMPRecipeKwargs()


def _te_autowrap(handler) -> None:
    """`Accelerator.prepare` of a model under the TE backend (`_prepare_te`): accelerate's own
    `apply_fp8_autowrap` with the recipe handler, over stand-ins for Transformer Engine's recipe classes,
    its `fp8_autocast` and its MXFP8 support check (a GPU that has it), which this machine lacks."""
    import sys
    import types

    import accelerate.utils.transformer_engine as te_utils
    import torch

    recipe = types.ModuleType("transformer_engine.common.recipe")
    recipe.Format = types.SimpleNamespace(HYBRID="HYBRID", E4M3="E4M3", E5M2="E5M2")
    recipe.MXFP8BlockScaling = recipe.DelayedScaling = lambda **kwargs: kwargs
    fp8 = types.ModuleType("transformer_engine.pytorch.fp8")
    fp8.check_mxfp8_support = lambda: (True, "")
    pytorch = types.ModuleType("transformer_engine.pytorch")
    pytorch.fp8_autocast = lambda **kwargs: None
    common = types.ModuleType("transformer_engine.common")
    stand_ins = {"transformer_engine": types.ModuleType("transformer_engine"), "transformer_engine.common": common,
                 "transformer_engine.common.recipe": recipe, "transformer_engine.pytorch": pytorch,
                 "transformer_engine.pytorch.fp8": fp8}
    with mock.patch.dict(sys.modules, stand_ins), \
            mock.patch.object(te_utils, "is_transformer_engine_available", lambda: True), \
            mock.patch.object(te_utils, "is_hpu_available", lambda *args, **kwargs: False):
        te_utils.apply_fp8_autowrap(torch.nn.Linear(2, 2), handler)


def _accelerator_state(fsdp_plugin, parallelism, world: int) -> None:
    """What `Accelerator(...)` hands its `AcceleratorState` (built after the ParallelismConfig, before
    `_validate_accelerator`): the real `AcceleratorState.__init__` over a PartialState set up as
    torchrun's multi-GPU process group would leave it (MULTI_GPU, `world` processes; the device is
    the CPU so that no CUDA setting is touched), so that its context-parallel checks (`cp_size > 1`
    without an FSDP plugin, or under FSDP1) run on the launch's environment. Only for the FSDP and
    multi-GPU launches that export a parallelism_config; the shared state is cleared afterwards."""
    import accelerate.state as state
    import torch
    from accelerate.utils import DistributedType, TorchDynamoPlugin

    state.AcceleratorState._reset_state(True)
    state.PartialState._shared_state.update(
        _cpu=False, backend="nccl", device=torch.device("cpu"), debug=False, fork_launched=False,
        distributed_type=DistributedType.MULTI_GPU, num_processes=world, process_index=0, local_process_index=0)
    try:
        with mock.patch.object(state, "is_fp8_available", lambda: True):
            state.AcceleratorState(dynamo_plugin=TorchDynamoPlugin(), fsdp_plugin=fsdp_plugin,
                                   parallelism_config=parallelism, _from_accelerator=True)
    finally:
        state.AcceleratorState._reset_state(True)


def _prepare_deepspeed(plugin, args) -> None:
    """What `Accelerator._prepare_deepspeed` fills into a ds_config before it checks that no
    "auto" is left (`deepspeed_config_process`), for the program that lets it fill the most: a
    DataLoader (batch size 1), the Accelerator's gradient accumulation (1), a model whose config
    has a hidden_size, and DummyOptim /
    DummyScheduler (with total_num_steps) where the ds_config has an optimizer / scheduler."""
    config = plugin.deepspeed_config
    plugin.fill_match("gradient_accumulation_steps", must_match=False, gradient_accumulation_steps=1)
    accumulation = plugin.get_value("gradient_accumulation_steps")
    accumulation = accumulation if isinstance(accumulation, int) else 1
    hidden = 1024
    kwargs = {"gradient_clipping": 1.0, "zero_optimization.stage3_gather_16bit_weights_on_model_save": False,
              "train_micro_batch_size_per_gpu": 1, "train_batch_size": accumulation * int(args.num_processes or 1),
              "zero_optimization.reduce_bucket_size": hidden * hidden,
              "zero_optimization.stage3_prefetch_bucket_size": int(0.9 * hidden * hidden),
              "zero_optimization.stage3_param_persistence_threshold": 10 * hidden}
    if "optimizer" in config:
        kwargs.update({"optimizer.params.lr": 1e-3, "optimizer.params.weight_decay": 0.0})
    if "scheduler" in config:
        kwargs.update({"scheduler.params.warmup_min_lr": 0, "scheduler.params.warmup_max_lr": 1e-3,
                       "scheduler.params.warmup_num_steps": 1, "scheduler.params.total_num_steps": 100})
    plugin.deepspeed_config_process(must_match=False, **kwargs)


def load(path: Path, **options: str) -> None:
    import accelerate.utils.launch as launch_utils
    import torch.distributed.run as distrib_run
    from accelerate.commands import launch as accelerate_launch
    from accelerate.commands.config.config_args import load_config_from_file

    path = Path(path).resolve()
    config_file, extra = path.name, []
    if "launch" in options:  # the case is a ds_config: launch the Accelerate config beside it with it
        config_file, extra = options["launch"], ["--deepspeed_config_file", path.name]
    saved = {name: value for name, value in os.environ.items() if name.startswith(_PREFIXES)}
    for name in saved:
        del os.environ[name]
    home = os.getcwd()
    failures: list[BaseException] = []
    config = load_config_from_file(str(path.parent / config_file))

    def start(*_: object) -> None:
        try:
            _training_process(parsed, config)
        except Exception as error:  # noqa: BLE001 - raised after the launcher returns
            failures.append(error)

    def popen(cmd, *popen_args, **kwargs):
        with mock.patch.dict(os.environ, kwargs.get("env") or {}):
            start()
        return mock.Mock(returncode=0, wait=lambda: 0)

    os.chdir(path.parent)
    try:
        parsed = accelerate_launch.launch_command_parser().parse_args(["--config_file", config_file, *extra,
                                                                          "train.py"])
        with mock.patch.object(distrib_run, "run", start), mock.patch.object(subprocess, "Popen", popen), \
                mock.patch.object(launch_utils, "is_fp8_available", lambda: True), \
                mock.patch.object(launch_utils, "is_port_in_use", lambda port: False):
            accelerate_launch.launch_command(parsed)
    finally:
        os.chdir(home)
        for name in [n for n in os.environ if n.startswith(_PREFIXES)]:
            del os.environ[name]
        os.environ.update(saved)
    if failures:
        raise failures[0]
