"""Axolotl 0.21.0: the code that validates an Axolotl YAML config (issue 22's coverage map).

Included, every function of:
- `axolotl/utils/schemas/validation.py`: the schema's validator mixins (`ValidationMixin`, what
  `AxolotlInputConfig` inherits), the bulk of the "X and Y together" / "X requires Y" checks;
- `axolotl/utils/schemas/config.py`: `AxolotlInputConfig`'s own validators and those of
  `AxolotlConfigWCapabilities` (the class `axolotl train` validates with, passing the GPU's and
  the environment's capabilities);
- `axolotl/utils/schemas/deprecated.py`: the removed options that raise;
- `axolotl/utils/schemas/fsdp.py`: the `fsdp_config` model's validator;
- `axolotl/integrations/context_parallel/args.py` and `axolotl/integrations/expert_parallel/
  args.py`: the two plugins 0.21.0 registers for every config (`BUILTIN_PLUGINS`), whose
  arguments (`context_parallel:`, `expert_parallel_*`) are the parallelism keys of the file.

Left out, for a later pass (their sites are not counted, decidable or not):
- the other `utils/schemas/*.py` models (datasets.py's dataset entries, peft.py's LoRA block,
  training.py, model.py, multimodal.py, quantization.py, export.py, cloud.py, diffusion.py,
  utils.py): per-block field validators of dataset, adapter, export and cloud settings, outside
  the training-topology keys this map starts with;
- the `args.py` of plugins a config must list in `plugins:` (kernels, liger, cut_cross_entropy,
  nebius, modal, nemo_gym, swanlab, diffusion_decision): they validate only when listed, several
  need their own packages to import, and they configure kernels, clouds and loggers rather than
  the training topology.
"""

DISTRIBUTION = "axolotl"
FILES = {
    "axolotl/utils/schemas/validation.py": None,
    "axolotl/utils/schemas/config.py": None,
    "axolotl/utils/schemas/deprecated.py": None,
    "axolotl/utils/schemas/fsdp.py": None,
    "axolotl/integrations/context_parallel/args.py": None,
    "axolotl/integrations/expert_parallel/args.py": None,
}
