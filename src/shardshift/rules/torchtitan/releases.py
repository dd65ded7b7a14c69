"""torchtitan's TOML keys across releases: the release each renamed, moved or removed key (TT003)
stopped being read in, and the release from which an unread key is refused.

Read from the released wheels on PyPI (`pip download --no-deps torchtitan==X`):
- 0.0.2 (2024-04) holds no code at all (an empty placeholder wheel), so the table starts at 0.1.0;
- 0.1.0 (2025-06): `torchtitan/config_manager.py` (`JobConfig` and its dataclasses already have
  `[parallelism]` (PR #767) and `training.local_batch_size` (PR #1238)); its
  `ConfigManager._dict_to_dataclass` keeps only the fields a dataclass has and drops every other
  key without a word;
- 0.2.0 (2025-10): `torchtitan/config/job_config.py` + `config/manager.py`: `[compile]`,
  `checkpoint.enable`, `lr_scheduler.min_lr_factor`, `[quantize.linear.float8]`,
  `model.hf_assets_path`, `job.custom_config_module`; `_dict_to_dataclass` now raises
  `ValueError: Invalid field names in <class> data` for an unknown key, and `_validate_config`
  warns about and copies `model.tokenizer_path` and `experimental.custom_args_module`;
- 0.2.1 (2025-12) and 0.2.2 (the installed release): the same for these keys.
"""

from __future__ import annotations

from dataclasses import dataclass

from shardshift.context import CoveredReleases, Release, Version
from shardshift.versions import version_text

OLDEST = (0, 1, 0)  # the oldest release the table was read from
NEWEST = (0, 2, 2)  # the newest (the release the TT rules restate)
STRICT_FROM = (0, 2, 0)  # unknown keys refused (Invalid field names) from here; 0.1.0 drops them silently

V010 = "torchtitan 0.1.0 config_manager.py"
V020 = "torchtitan 0.2.0 config/job_config.py"


@dataclass(frozen=True, slots=True)
class KeyRelease:
    """A key of an older layout: the last release that reads it (None: no release of the table
    does) and the first that does not; `then` is its place in 0.1.0 when that differs."""

    read_until: Version | None
    gone_in: Version
    source: str
    then: str | None = None


# (section, key as written) -> when it stopped being read (the rows of rules.RENAMED)
KEYS: dict[tuple[str, str], KeyRelease] = {
    ("training", "batch_size"): KeyRelease(None, OLDEST, f"{V010} Training.local_batch_size (PR #1238)"),
    ("training", "data_parallel_degree"): KeyRelease(None, OLDEST, f"{V010} Parallelism (PR #767)"),
    ("training", "data_parallel_shard_degree"): KeyRelease(None, OLDEST, f"{V010} Parallelism (PR #767)"),
    ("training", "data_parallel_replicate_degree"): KeyRelease(None, OLDEST, f"{V010} Parallelism (PR #767)"),
    ("training", "tensor_parallel_degree"): KeyRelease(None, OLDEST, f"{V010} Parallelism (PR #767)"),
    ("training", "pipeline_parallel_degree"): KeyRelease(None, OLDEST, f"{V010} Parallelism (PR #767)"),
    ("training", "enable_async_tensor_parallel"): KeyRelease(None, OLDEST, f"{V010} Parallelism (PR #767)"),
    ("experimental", "pipeline_parallel_degree"): KeyRelease(None, OLDEST, f"{V010} Parallelism (PR #767)"),
    ("experimental", "context_parallel_degree"): KeyRelease(None, OLDEST, f"{V010} Parallelism (PR #767)"),
    ("experimental", "enable_async_tensor_parallel"): KeyRelease(None, OLDEST, f"{V010} Parallelism (PR #767)"),
    ("training", "warmup_steps"): KeyRelease(None, OLDEST, f"{V010} LRScheduler.warmup_steps"),
    ("training", "fp8_linear"): KeyRelease(None, OLDEST, f"{V010} Model.converters"),
    ("checkpoint", "model_weights_only"): KeyRelease(None, OLDEST, f"{V010} Checkpoint.last_save_model_weights_only",
                                                     then="checkpoint.last_save_model_weights_only"),
    ("model", "norm_type"): KeyRelease(None, OLDEST, f"{V010} Model (no norm_type)"),
    ("checkpoint", "interval_type"): KeyRelease(None, OLDEST, f"{V010} Checkpoint (no interval_type)"),
    ("training", "compile"): KeyRelease((0, 1, 0), (0, 2, 0), f"{V010} Training.compile; {V020} Compile"),
    ("checkpoint", "enable_checkpoint"): KeyRelease((0, 1, 0), (0, 2, 0),
                                                    f"{V010} Checkpoint.enable_checkpoint; {V020} Checkpoint.enable"),
    ("lr_scheduler", "lr_min"): KeyRelease((0, 1, 0), (0, 2, 0),
                                           f"{V010} LRScheduler.lr_min; {V020} LRScheduler.min_lr_factor"),
    ("", "float8"): KeyRelease((0, 1, 0), (0, 2, 0), f"{V010} JobConfig.float8; {V020} Quantize"),
}
# Deprecated keys (read with a warning and copied) from this release on; before it they were the keys.
DEPRECATED_FROM: dict[tuple[str, str], tuple[Version, str]] = {
    ("model", "tokenizer_path"): ((0, 2, 0), "torchtitan 0.2.0 config/manager.py _validate_config"),
    ("experimental", "custom_args_module"): ((0, 2, 0), "torchtitan 0.2.0 config/manager.py _validate_config"),
}
# The converter name "float8" is registered by 0.1.0 and renamed "quantize.linear.float8" in 0.2.0.
CONVERTER_RENAMED_IN = (0, 2, 0)


text = version_text
COVERED = CoveredReleases("torchtitan", OLDEST, NEWEST, "key table covers", "what that release does with this key",
                          "check the key against that release's config code, or pass --torchtitan-version with the "
                          "release that runs")
covered = COVERED.covers
uncovered = COVERED.uncovered


def used(release: Release) -> Version:
    return NEWEST if release.version is None else tuple(release.version)


def judged_by(release: Release) -> str:
    """`torchtitan 0.2.1 (assets/version.txt:1)` or `the newest torchtitan, 0.2.2` (no pin found)."""
    if release.version is None:
        return f"the newest torchtitan, {text(NEWEST)}"
    return release.text()
