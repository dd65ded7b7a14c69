"""The check sites of torchtitan 0.2.2 (the last release that reads a TOML) that judge configuration.

Included, in the order `torchtitan.train` meets them at start-up:

- `config/manager.py` `ConfigManager`: reading the TOML, refusing unknown keys
  (`_dict_to_dataclass`), the deprecated-key and assets-path checks (`_validate_config`);
- `config/job_config.py`, every function: the dataclasses' `__post_init__` checks, which run
  while `_dict_to_dataclass` builds `JobConfig` from the file;
- `distributed/parallel_dims.py` `ParallelDims`: the degree checks of `_validate` (run by
  `Trainer.init_distributed` with the world size) and the mesh look-ups the trainer makes next;
- `distributed/utils.py` `init_distributed`, `set_determinism`, `maybe_enable_amp`: what
  `Trainer.__init__` does with `[comm]`, `[debug]` and the mixed-precision dtype before it builds
  anything (`maybe_enable_amp` has no raise or assert: it decides silently, TT102 mirrors it);
- `protocols/train_spec.py` `get_train_spec`: `model.name` looked up among the registered models,
  the last step before the trainer reads data or builds the model;
- `components/quantization/{__init__,float8,mx}.py`, every function: the converters that
  `model.converters` names, built by `build_model_converters` with the job config and
  `ParallelDims`; their `__init__`s check the `[quantize]` settings against `[compile]` and
  `[parallelism]` (and the GPU and torchao, which no file decides);
- `train.py` `main`: the entry point's own asserts on the job config (a seed checkpoint is made
  by one process, with checkpointing enabled); `Trainer.__init__`: its batch-size asserts
  (`global_batch_size % (local_batch_size * dp) == 0`) and its other checks of the config (the
  coverage loader runs the batch statements from train.py itself, with the batch degree of
  `ParallelDims`: the rest of `__init__` builds the tokenizer, the data and the model);
- `components/checkpoint.py` `CheckpointManager.__init__`: the `[checkpoint]` checks the trainer
  meets when it builds the manager (the loader runs them compiled from the file's own statements);
  its load (the trainer's first act in `train`, a first run and a resume: `load`, `_states_to_load`),
  its save methods (the save after the last step included), the validators, the profilers (`maybe_enable_profiling`, entered when training
  starts) and `cp_shard` (the first step's context-parallel sharding): the rest of what the call graph
  reaches from the trainer's entries (scripts/coverage/callgraph.py) where no check is the
  files'.

Left out: the model builders and `parallelize_*` functions of each model (they check the model's
code and args together with the config), the dataloader, tokenizer and dataset code (data),
optimizer and lr-scheduler builders (run after the model is built, mostly guarding their own state).
`torchtitan/experiments/` is not part of the release's supported surface.
"""

DISTRIBUTION = "torchtitan"

FILES = {
    "torchtitan/config/manager.py": ["ConfigManager"],
    "torchtitan/config/job_config.py": None,
    "torchtitan/distributed/parallel_dims.py": ["ParallelDims"],
    "torchtitan/distributed/utils.py": ["init_distributed", "set_determinism", "maybe_enable_amp"],
    "torchtitan/protocols/train_spec.py": ["get_train_spec"],
    "torchtitan/components/quantization/__init__.py": None,
    "torchtitan/components/quantization/float8.py": None,
    "torchtitan/components/quantization/mx.py": None,
    "torchtitan/train.py": ["main", "Trainer.__init__", "Trainer.batch_generator", "Trainer.post_dataloading_process",
                            "Trainer.forward_backward_step", "Trainer.train"],
    "torchtitan/components/checkpoint.py": ["CheckpointManager.__init__", "CheckpointManager.dcp_save",
                                            "CheckpointManager.dcp_load", "CheckpointManager.save",
                                            "CheckpointManager.maybe_wait_for_staging",
                                            "CheckpointManager._save_last_step", "CheckpointManager._async_wait",
                                            "CheckpointManager._purge_stale_checkpoints", "CheckpointManager.load",
                                            "CheckpointManager._states_to_load"],
    "torchtitan/components/validate.py": ["BaseValidator.validate", "Validator.validate"],
    "torchtitan/models/flux/validate.py": ["FluxValidator.validate"],
    "torchtitan/tools/profiling.py": ["maybe_enable_profiling", "maybe_enable_memory_snapshot"],
    "torchtitan/distributed/context_parallel.py": ["cp_shard"],
}
# Reached by call graph and judged in the map since their rules exist: CheckpointManager.load (an HF
# initial load without model-only, TT112; a quantized one without HF, TT113) and _states_to_load (an
# exclude_from_loading entry naming no state, TT114), like cp_shard's load balancer (TT110),
# maybe_enable_profiling's frequency (TT109) and _save_last_step's HF format (TT111) before them.
# ft/manager.py maybe_semi_sync_training (an unknown fault_tolerance.semi_sync_method) is called only by
# torchtitan/experiments/ft/train.py: torchtitan.train never reads the setting.
