"""Axolotl's own path on a YAML file, for the coverage map's oracle (tests/test_coverage_map.py).

`load(path)` is what `axolotl train` does to the file before anything loads (cli/config.py
load_cfg): the YAML parsed with PyYAML, the plugins it lists registered
(`axolotl.utils.config.prepare_plugins`), and the config validated by `axolotl.utils.config.validate_config` (the `AxolotlInputConfig` schema,
merged with the arguments of the plugins the file lists), as tests/test_axolotl_oracle.py runs it.
It raises what the schema raises (pydantic's ValidationError wraps a validator's ValueError; the
site tracer sees the validator's own raise). With `capabilities=gpu` (a map case option) it
validates as `axolotl train` does, with `AxolotlConfigWCapabilities` and the capabilities of one
bf16 GPU (sm_90) and torch 2.13: the class whose own checks of file-written keys
(`check_qat_config`, `check_quantize_moe_experts`, ...) run only then. The checks of that class
that read the GPU's capabilities are `environment:` sites in the map. With `stage=qat` it then does
what `axolotl train` does with a `qat` block once the model is loaded (loaders/model.py `_configure_qat`):
`prepare_model_for_qat` on a small torch model with the validated block's dtypes (torchao on the CPU).
With `stage=adapter` it runs the checks `axolotl train` makes of the validated config when it builds the
adapter, in their order (ModelLoader._build_adapters, then load_adapter): Axolotl's own
`check_tensor_parallel_rl_adapter_support` and `_validate_mixlora_lora_target_modules`, compiled from their
installed source files with their own file names and lines (the modules they sit in import bitsandbytes and
a GPU stack, which the oracle does not install; these two functions read only the config). With
`stage=normalize` it then runs Axolotl's own `normalize_config`, as `axolotl train` does after validation,
with the model's config answered by a stand-in (transformers' LlamaConfig: a causal model with no
diffusion profile) instead of a download. With `stage=parallel` (and `world=N`, default 8) it runs Axolotl's
own `build_parallelism_config` as the model loader does, with the world size answering N (what follows,
the device mesh, needs those ranks).
"""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path

_validate = None


def prepare() -> None:
    global _validate
    os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_VERBOSITY="error", PYTHONWARNINGS="ignore")
    warnings.filterwarnings("ignore")
    logging.disable(logging.CRITICAL)
    from axolotl_schema import validate_config

    _validate = validate_config()  # its classes built once per set of plugins (tests/axolotl_schema.py)


def _function(relative: str, name: str, **names):
    """An installed Axolotl function, compiled alone from its file (its own file name and line numbers, so
    the site tracer sees Axolotl's lines), with the module-level names it reads given in `names`."""
    import ast

    import axolotl

    path = Path(axolotl.__file__).parent.parent / relative
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    namespace = dict(names)
    exec(compile(ast.Module(body=[node], type_ignores=[]), str(path), "exec"), namespace)  # noqa: S102 - oracle only
    return namespace[name]


def load(path: Path, **options: str) -> None:
    import yaml
    from axolotl.utils.config import prepare_plugins
    from axolotl.utils.dict import DictDefault

    data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    prepare_plugins(DictDefault(data))
    if options.get("capabilities") == "gpu" or options.get("stage") == "qat":
        cfg = _validate(DictDefault(data), capabilities={"bf16": True, "fp8": False, "tf32": True, "n_gpu": 1,
                                                         "n_node": 1, "compute_capability": "sm_90"},
                        env_capabilities={"torch_version": "2.13.0"})
    else:
        cfg = _validate(DictDefault(data))
    if options.get("stage") == "parallel":
        import axolotl.utils.distributed as distributed

        saved_world = distributed.get_world_size
        distributed.get_world_size = lambda: int(options.get("world", "8"))
        try:
            distributed.build_parallelism_config(cfg)
        finally:
            distributed.get_world_size = saved_world
    if options.get("stage") == "normalize":
        import axolotl.utils.config as config_module
        import transformers

        saved = config_module.load_model_config
        config_module.load_model_config = lambda cfg: transformers.LlamaConfig()
        try:
            config_module.normalize_config(cfg)
        finally:
            config_module.load_model_config = saved
    if options.get("stage") == "adapter":
        from axolotl.integrations.mixlora.constants import MIXLORA_FFN_MODULE_NAMES
        from axolotl.utils.schemas.enums import RLType

        _function("axolotl/loaders/model.py", "check_tensor_parallel_rl_adapter_support", RLType=RLType)(cfg)
        if cfg.adapter == "mixlora":
            _function("axolotl/loaders/adapter.py", "_validate_mixlora_lora_target_modules",
                      MIXLORA_FFN_MODULE_NAMES=MIXLORA_FFN_MODULE_NAMES)(cfg)
    if options.get("stage") == "qat" and cfg.qat:
        import torch
        from axolotl.utils.quantization import prepare_model_for_qat

        model = torch.nn.Sequential(torch.nn.Embedding(64, 64), torch.nn.Linear(64, 64))
        prepare_model_for_qat(model, cfg.qat.weight_dtype, cfg.qat.group_size, cfg.qat.activation_dtype,
                              cfg.qat.quantize_embedding)
