"""DeepSpeed 0.19.8's own path on a fixture, for the coverage map (tests/test_coverage_map.py).

Two paths, as DeepSpeed's users take them:

- a ds_config (`.json`), default: `DeepSpeedConfig(<the file name>)` (DeepSpeed's own loader:
  hjson, duplicate keys refused) as if on `world` ranks (option `world=N`, default 1; the rank
  count is patched into `deepspeed.comm` as tests/oracles.py's `deepspeed_accepts` does); with
  `load=json` the file is read with `json.load` and the dict handed over, as the Hugging Face
  Trainer and Accelerate do with a ds_config path (Python's json reads `Infinity` as a float);
- option `stage=initialize`: `deepspeed.initialize(model=torch.nn.Linear(4, 4), config=<the dict>,
  model_parameters=...)` on one CPU rank (gloo), the engine's sanity checks and optimizer,
  ZeRO and scheduler set-up included. The config is first made runnable on one CPU rank as
  tests/test_messages_oracle.py's `runnable` does: AdamW when there is no optimizer block (not
  with `optimizer=none`), fp16 off (it fails on the CPU only) unless `fp16=1`, and a
  train_batch_size that does not fit one rank dropped; with `data=1` the call also hands DeepSpeed
  `training_data` (16 samples), as a script that lets the engine build its data loader does, from a
  temporary working directory (the curriculum sampler creates its data_cluster_path there); with
  `forward=1` the engine then runs one training forward on a batch of zeros; with `tp_model_init=1`
  the program first calls `deepspeed.tp_model_init(model, tp_size=1, dtype=float32)`, whose arguments
  deepspeed.initialize then merges into the config (`merge_tp_model_init_into_config`); with `ops=loaded`
  FusedLamb's CUDA op answers as loaded (a stand-in object, as on a GPU machine where it builds: the
  constructor's own argument checks follow the load, and the op is first used at a step);
- option `stage=autotp`: what `deepspeed.initialize` does with `tensor_parallel` when autotp_size > 1,
  without the other ranks it needs: the config parsed as on `world` ranks (default 2), then the
  engine's own `DeepSpeedEngine._apply_autotp_partitioning` run on `torch.nn.Linear(4, 4)` with the
  parsed tensor_parallel config (a stand-in engine answers autotp_size and local_rank; no tensor
  parallel group exists, so the group DeepSpeed would ask the mesh for is None); with `model=proj` the
  model is a module whose one child is that Linear, named `proj` (AutoTP replaces a model's children,
  never the root, so a layer spec's patterns only meet a weight there: `proj.weight`);
- option `stage=autoep`: the engine's own `DeepSpeedEngine._configure_expert_parallel` (its AutoEP
  checks before any process group exists: validate_autoep_config, build_folding_spec,
  validate_folding_global) on `torch.nn.Linear(4, 4)`, with the config parsed as on `world` ranks
  (default 4) and DeepSpeed's world size answering the same; an engine made without its __init__
  holds the parsed config, no mpu and a sequence-parallel size of 1. What follows the checks (the
  expert groups) needs those ranks and fails here, after every site the map names;
- option `stage=moe`: what `_configure_expert_parallel` does once its expert groups exist (they need
  those ranks, so none are made): AutoEP's own MoE detection, `AutoEP(model, config).ep_parser()`
  (the route scale of each layer resolved), and `validate_autoep_post_detection`, on a one-layer
  Mixtral of transformers (4 experts, top-2, hidden size 8: a model every AutoEP preset list
  detects), the config parsed as on `world` ranks (default 4; `load=json` reads the file with
  `json.load` first, as a script that hands DeepSpeed a dict does); then, with ZeRO stage 3, the
  engine's own `_validate_zero3_moe_compatibility`, on an engine made without its __init__ whose
  model holds an AutoEP layer (a stand-in for the replaced Mixtral block) and whose
  sequence-parallel size is 1;
- a Python script (`.py`, a DS43x fixture): the `deepspeed.initialize(...)` call it makes, read
  with `ast` (the script is never run): its `config` (a file name beside it, a literal dict, or
  none at all),
  and whether it passes a torch optimizer (`optimizer=` or the third positional argument) or a
  scheduler (`lr_scheduler=` or the fifth); the loader makes that call on one CPU rank with
  stand-ins for the program's objects: DeepSpeedCPUAdam when the script names that class (in
  the call or a helper's branch), else torch's AdamW, and a LambdaLR.
"""

from __future__ import annotations

import ast
import copy
import os
import socket
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
_state: dict = {}


def prepare() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    os.environ.update(DS_ACCELERATOR="cpu", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK="0", LOCAL_RANK="0",
                      WORLD_SIZE="1", LOCAL_WORLD_SIZE="1")
    if str(TESTS) not in sys.path:
        sys.path.insert(0, str(TESTS))
    import warnings

    warnings.filterwarnings("ignore")
    import torch

    import oracles

    _state["deepspeed"] = oracles.deepspeed_module()
    _state["oracles"] = oracles
    _state["torch"] = torch
    import deepspeed.runtime.engine  # noqa: F401 - imported before tracing starts
    import deepspeed.runtime.lr_schedules  # noqa: F401


def _parse(path: Path, world: int, *, json_load: bool = False) -> None:
    deepspeed, oracles = _state["deepspeed"], _state["oracles"]
    if json_load:
        import json

        config = json.loads(path.read_text(encoding="utf-8"))
    with oracles._world(world):
        deepspeed.runtime.config.DeepSpeedConfig(config if json_load else str(path))


def _runnable(config: dict, options: dict) -> dict:
    oracles = _state["oracles"]
    config = copy.deepcopy(config)
    if options.get("optimizer") != "none" and "optimizer" not in config:
        config["optimizer"] = {"type": "AdamW", "params": {"lr": 1e-4}}
        zero = config.get("zero_optimization")
        if isinstance(zero, dict) and ("offload_optimizer" in zero or zero.get("cpu_offload")):
            config["zero_force_ds_cpu_optimizer"] = False
    if isinstance(config.get("fp16"), dict) and config["fp16"].get("enabled") is True and options.get("fp16") != "1":
        config["fp16"]["enabled"] = False
    if isinstance(config.get("train_batch_size"), (int, float)):
        ok, error, _ = oracles.deepspeed_accepts({k: v for k, v in config.items() if k != "optimizer"}, 1)
        if not ok and "Check batch related parameters" in (error or ""):
            del config["train_batch_size"]
    return config


def _initialize(config: dict | None, *, client_optimizer: str | None = None, client_scheduler: bool = False,
                data: bool = False, forward: bool = False, tp_model_init: bool = False, ops_loaded: bool = False) -> None:
    deepspeed, torch = _state["deepspeed"], _state["torch"]
    if ops_loaded:
        import types

        from deepspeed.ops.lamb import fused_lamb

        saved = fused_lamb.FusedLambBuilder
        fused_lamb.FusedLambBuilder = lambda: types.SimpleNamespace(load=lambda verbose=False: types.SimpleNamespace())
        try:
            _initialize(config, client_optimizer=client_optimizer, client_scheduler=client_scheduler, data=data,
                        forward=forward, tp_model_init=tp_model_init)
        finally:
            fused_lamb.FusedLambBuilder = saved
        return
    model = torch.nn.Linear(4, 4)
    if tp_model_init:
        deepspeed.tp_model_init(model, tp_size=1, dtype=torch.float32)
    kwargs: dict = {"model_parameters": model.parameters()}
    if data:
        kwargs["training_data"] = torch.utils.data.TensorDataset(torch.zeros(16, 4))
    if client_optimizer == "DeepSpeedCPUAdam":
        from deepspeed.ops.adam import DeepSpeedCPUAdam

        kwargs["optimizer"] = DeepSpeedCPUAdam(model.parameters(), lr=1e-4)
    elif client_optimizer:
        kwargs["optimizer"] = torch.optim.AdamW(model.parameters(), lr=1e-4)
        if client_scheduler:
            kwargs["lr_scheduler"] = torch.optim.lr_scheduler.LambdaLR(kwargs["optimizer"], lambda step: 1.0)
    try:
        engine, *_ = deepspeed.initialize(model=model, config=config, **kwargs)
    finally:
        if tp_model_init:  # tp_model_init's arguments are module state: the next case starts without them
            from deepspeed.runtime.tensor_parallel import init_utils

            init_utils._TP_MODEL_INIT_ARGS = None
    if forward:
        engine.train()
        engine(torch.zeros(1, 4))


def _autotp(path: Path, world: int, model_kind: str | None = None) -> None:
    import types

    deepspeed, oracles, torch = _state["deepspeed"], _state["oracles"], _state["torch"]
    from deepspeed.utils import groups

    with oracles._world(world):
        config = deepspeed.runtime.config.DeepSpeedConfig(oracles.load_file(path))
    tp_config = config.tensor_parallel_config
    engine = types.SimpleNamespace(autotp_size=lambda: tp_config.autotp_size, local_rank=-1)
    model = torch.nn.Linear(4, 4)
    if model_kind == "proj":
        model = torch.nn.Sequential()
        model.add_module("proj", torch.nn.Linear(4, 4))
    saved = groups.get_tensor_model_parallel_group
    groups.get_tensor_model_parallel_group = lambda: None
    try:
        deepspeed.runtime.engine.DeepSpeedEngine._apply_autotp_partitioning(engine, model, tp_config)
    finally:
        groups.get_tensor_model_parallel_group = saved


def _autoep(path: Path, world: int) -> None:
    deepspeed, oracles, torch = _state["deepspeed"], _state["oracles"], _state["torch"]
    engine_module = deepspeed.runtime.engine

    with oracles._world(world):
        config = deepspeed.runtime.config.DeepSpeedConfig(oracles.load_file(path))
    engine = engine_module.DeepSpeedEngine.__new__(engine_module.DeepSpeedEngine)
    engine.__dict__.update(_config=config, mpu=None, _autoep_sequence_parallel_world_size=lambda: 1)
    saved = engine_module.dist.get_world_size
    engine_module.dist.get_world_size = lambda *args, **kwargs: world
    try:
        engine_module.DeepSpeedEngine._configure_expert_parallel(engine, torch.nn.Linear(4, 4))
    finally:
        engine_module.dist.get_world_size = saved


def _moe(path: Path, world: int, *, json_load: bool = False) -> None:
    import json

    deepspeed, oracles, torch = _state["deepspeed"], _state["oracles"], _state["torch"]
    from deepspeed.module_inject.auto_ep import AutoEP
    from deepspeed.module_inject.auto_ep_config import validate_autoep_post_detection
    from deepspeed.module_inject.auto_ep_layer import AutoEPMoELayer
    from transformers import MixtralConfig, MixtralForCausalLM

    loaded = json.loads(path.read_text(encoding="utf-8")) if json_load else oracles.load_file(path)
    with oracles._world(world):
        config = deepspeed.runtime.config.DeepSpeedConfig(loaded)
    model = MixtralForCausalLM(MixtralConfig(vocab_size=32, hidden_size=8, intermediate_size=16, num_hidden_layers=1,
                                             num_attention_heads=2, num_key_value_heads=1, num_local_experts=4,
                                             num_experts_per_tok=2))
    specs = AutoEP(model, config.expert_parallel_config).ep_parser()
    validate_autoep_post_detection(config.expert_parallel_config, specs)
    if config.zero_optimization_stage == 3:
        engine_class = deepspeed.runtime.engine.DeepSpeedEngine
        replaced = AutoEPMoELayer.__new__(AutoEPMoELayer)
        torch.nn.Module.__init__(replaced)
        holder = torch.nn.Module()
        holder.add_module("moe", replaced)
        engine = engine_class.__new__(engine_class)
        engine.__dict__.update(_config=config, has_moe_layers=True, module=holder, sequence_parallel_size=1)
        engine._validate_zero3_moe_compatibility()


def _script_call(path: Path) -> tuple[dict, str | None, bool]:
    """(config, the optimizer class it passes or None, passes a scheduler) of the script's
    deepspeed.initialize call. The class is DeepSpeedCPUAdam when the script names that class
    anywhere (directly or in a helper's branch), else torch's AdamW."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    assigned = {target.id: node.value for node in ast.walk(tree) if isinstance(node, ast.Assign)
                for target in node.targets if isinstance(target, ast.Name)}
    call = next(node for node in ast.walk(tree) if isinstance(node, ast.Call)
                and getattr(node.func, "attr", getattr(node.func, "id", None)) == "initialize")
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    positional = dict(zip(("args", "model", "optimizer", "model_parameters", "lr_scheduler"), call.args))
    found = {**positional, **keywords}
    value = found.get("config", found.get("config_params"))
    while isinstance(value, ast.Name) and value.id in assigned:
        value = assigned[value.id]
    config = None if value is None else ast.literal_eval(value)
    if isinstance(config, str):
        config = _state["oracles"].load_file(path.parent / config)

    def given(name: str) -> bool:
        node = found.get(name)
        return node is not None and not (isinstance(node, ast.Constant) and node.value is None)

    names = {getattr(node, "id", getattr(node, "attr", None)) for node in ast.walk(tree)}
    optimizer = ("DeepSpeedCPUAdam" if "DeepSpeedCPUAdam" in names else "AdamW") if given("optimizer") else None
    return config, optimizer, given("lr_scheduler")


def load(path: Path, **options: str) -> None:
    if path.suffix == ".py":
        config, optimizer, scheduler = _script_call(path)
        if config is not None:
            config = _runnable(config, {**options, "optimizer": "none"})
        _initialize(config, client_optimizer=optimizer,
                    client_scheduler=scheduler)
        return
    if options.get("stage") == "moe":
        _moe(path, int(options.get("world", "4")), json_load=options.get("load") == "json")
        return
    if options.get("stage") == "autoep":
        _autoep(path, int(options.get("world", "4")))
        return
    if options.get("stage") == "autotp":
        _autotp(path, int(options.get("world", "2")), options.get("model"))
        return
    if options.get("stage") == "initialize" and options.get("data") == "1":
        import tempfile

        config, here = _runnable(_state["oracles"].load_file(path), options), os.getcwd()
        with tempfile.TemporaryDirectory() as folder:
            os.chdir(folder)
            try:
                _initialize(config, data=True)
            finally:
                os.chdir(here)
        return
    if options.get("stage") == "initialize":
        _initialize(_runnable(_state["oracles"].load_file(path), options), forward=options.get("forward") == "1",
                    tp_model_init=options.get("tp_model_init") == "1", ops_loaded=options.get("ops") == "loaded")
        return
    _parse(path, int(options.get("world", "1")), json_load=options.get("load") == "json")
