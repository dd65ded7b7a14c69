"""Axolotl's `validate_config` for the oracle children (tests/test_axolotl_oracle.py's schema child,
tests/coverage_loaders/axolotl.py), imported in the child only.

`validate_config` builds its schema classes anew for every config (`merge_input_args`: about 0.3 s,
seconds under the coverage tracer), and they are a function of the registered plugins' input args
alone: here they are built once per set of plugins. Validation itself is Axolotl's, unchanged."""

from __future__ import annotations


def validate_config():
    """`axolotl.utils.config.validate_config`, its `merge_input_args` memoised per plugin set."""
    import axolotl.utils.config as config_module
    from axolotl.integrations.base import PluginManager

    merge = config_module.merge_input_args
    if not getattr(merge, "memoised", False):
        built: dict[tuple, tuple] = {}

        def merged():
            key = tuple(PluginManager.get_instance().get_input_args())
            if key not in built:
                built[key] = merge()
            return built[key]

        merged.memoised = True
        config_module.merge_input_args = merged
    return config_module.validate_config
