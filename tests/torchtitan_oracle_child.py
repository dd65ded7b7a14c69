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
    json.dump({"files": out, "dims": dims}, sys.stdout, default=repr)


if __name__ == "__main__":
    main()
