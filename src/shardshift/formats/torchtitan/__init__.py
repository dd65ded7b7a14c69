"""torchtitan train-config TOML (the format torchtitan read until 2026-02): reader and writer."""

from shardshift.formats.torchtitan.reader import FORMAT, MARKER_KEYS, is_config, looks_like, read  # noqa: F401
