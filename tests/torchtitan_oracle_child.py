"""Child process of tests/test_torchtitan_oracle.py: loads TOML files with torchtitan's own ConfigManager.

Reads {"files": [paths], "dims": [{dp_replicate, dp_shard, cp, tp, pp, world_size, dtype}]} on stdin;
writes {"files": [...], "dims": [...]}: per path {"ok": resolved JobConfig as plain data} or
{"error": type, "message": text}; per degrees what `ParallelDims` (torchtitan/distributed/
parallel_dims.py) resolves or raises, and what `maybe_enable_amp` (torchtitan/distributed/utils.py)
does with it: "fsdp" (fully_shard applies the policy), "autocast", or "disabled". torchtitan 0.2.2's config code
(torchtitan/config/{manager,job_config}.py) runs unmodified; only the package's own `__init__` is
skipped: it imports the quantization converters (and through them triton, a GPU compiler that is
not installed on the CPU machines), which the config manager does not use.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import io
import json
import logging
import sys
import types
import warnings


def _config_manager():
    spec = importlib.util.find_spec("torchtitan")
    if spec is None:
        raise SystemExit("torchtitan is not installed")
    package = types.ModuleType("torchtitan")
    package.__path__ = list(spec.submodule_search_locations)
    sys.modules["torchtitan"] = package
    from torchtitan.config import ConfigManager

    logging.getLogger().setLevel(logging.ERROR)
    return ConfigManager


def _dims(case: dict) -> dict:
    from torchtitan.distributed.parallel_dims import ParallelDims
    from torchtitan.distributed.utils import maybe_enable_amp

    try:
        dims = ParallelDims(dp_replicate=case["dp_replicate"], dp_shard=case["dp_shard"], cp=case["cp"], tp=case["tp"],
                            pp=case["pp"], ep=case.get("ep", 1), etp=case.get("etp", 1), world_size=case["world_size"])
    except BaseException as error:  # noqa: BLE001
        return {"error": type(error).__name__, "message": str(error)}
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        amp = maybe_enable_amp(dims, case.get("dtype", "bfloat16"), "cpu")
    mode = "fsdp" if dims.fsdp_enabled else ("disabled" if isinstance(amp, contextlib.nullcontext) else "autocast")
    return {"dp_shard": dims.dp_shard, "amp": mode}


def _batch_check():
    """torchtitan's own "verify batch sizes" statements of Trainer.__init__, compiled from the installed
    train.py by the coverage loader's `batch_check_code` (importing train.py would import the model
    code and triton)."""
    import importlib.util as util
    from pathlib import Path

    spec = util.spec_from_file_location("torchtitan_loader", Path(__file__).parent / "coverage_loaders" / "torchtitan.py")
    loader = util.module_from_spec(spec)
    spec.loader.exec_module(loader)
    return loader.batch_check_code(sys.modules["torchtitan"].__path__[0] + "/train.py")


def _batch(check, manager, case: dict) -> dict:
    """The batch check of torchtitan's Trainer on a TOML, with the batch degree of its "batch" mesh
    (train.py: batch_mesh.size() when dp_enabled, else 1; parallel_dims.py: dp_replicate * dp_shard)."""
    import types

    from torchtitan.distributed.parallel_dims import ParallelDims

    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        config = manager().parse_args(["--job.config_file", case["path"]])
    p = config.parallelism
    try:
        dims = ParallelDims(dp_replicate=p.data_parallel_replicate_degree, dp_shard=p.data_parallel_shard_degree,
                            cp=p.context_parallel_degree, tp=p.tensor_parallel_degree, pp=p.pipeline_parallel_degree,
                            ep=p.expert_parallel_degree, etp=p.expert_tensor_parallel_degree,
                            world_size=case["world_size"])
    except BaseException as error:  # noqa: BLE001
        return {"error": type(error).__name__, "message": "ParallelDims: " + str(error)}
    degree = dims.dp_replicate * dims.dp_shard if dims.dp_enabled else 1
    scope = {"job_config": config, "batch_degree": degree, "self": types.SimpleNamespace()}
    try:
        exec(check, scope)  # noqa: S102 - torchtitan's own statements, from its installed source
    except BaseException as error:  # noqa: BLE001
        return {"error": type(error).__name__, "message": str(error)}
    return {"accumulation": scope["self"].gradient_accumulation_steps}


def main() -> None:
    manager = _config_manager()
    request = json.load(sys.stdin)
    out = []
    for path in request.get("files", []):
        try:
            with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
                    contextlib.redirect_stderr(io.StringIO()):
                warnings.simplefilter("ignore")
                config = manager().parse_args(["--job.config_file", path])
            out.append({"ok": dataclasses.asdict(config)})
        except BaseException as error:  # noqa: BLE001  # SystemExit from tyro included
            out.append({"error": type(error).__name__, "message": str(error)[:2000]})
    dims = [_dims(case) for case in request.get("dims", [])]
    check = _batch_check() if request.get("batches") else None
    batches = [_batch(check, manager, case) for case in request.get("batches", [])]
    json.dump({"files": out, "dims": dims, "batches": batches}, sys.stdout, default=repr)


if __name__ == "__main__":
    main()
