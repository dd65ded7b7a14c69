"""Axolotl's own path on a YAML file, for the coverage map's oracle (tests/test_coverage_map.py).

`load(path)` is what `axolotl train` does to the file before anything loads: the YAML parsed with
PyYAML and validated by `axolotl.utils.config.validate_config` (the `AxolotlInputConfig` schema,
merged with the arguments of the plugins the file lists), as tests/test_axolotl_oracle.py runs it.
It raises what the schema raises (pydantic's ValidationError wraps a validator's ValueError; the
site tracer sees the validator's own raise). No capabilities are passed: the checks of
`AxolotlConfigWCapabilities` that need the GPU's are `environment:` sites in the map.
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
    from axolotl.utils.config import validate_config

    _validate = validate_config


def load(path: Path, **options: str) -> None:
    import yaml
    from axolotl.utils.dict import DictDefault

    data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    _validate(DictDefault(data))
