"""Accelerate config YAML writer: `write(plan)`, `convert(document)` and `to_fsdp2(document)`.

- An Accelerate document converts to itself by editing its own text (formats/yaml_write.py):
  every lifted value is written back at the place it came from, so comments, key order and
  quoting stay, and an unchanged Plan gives the same text.
- Any other Plan (above all a ds_config) becomes an Accelerate FSDP2 config,
  `distributed_type: FSDP` with `fsdp_version: 2`: ZeRO-3 -> `fsdp_reshard_after_forward: true`,
  ZeRO-2 (and 0/1) -> false, CPU offload -> `fsdp_offload_params: true`, the dtype ->
  `mixed_precision` (bf16 / fp16 / fp8, fp32 -> "no"), the world -> `num_processes`, tensor /
  context / replicate degrees -> a `parallelism_config` that multiplies to the world. The Plan is a
  resolved one (shardshift.resolve): the values are its fields whatever the source format, a
  default of the source framework included. `num_processes`, which `accelerate launch` requires
  ("You need to manually pass in `--num_processes` using this config yaml" when the config has
  none), is the placeholder `FILL_IN` with a comment and an `unknown` entry when the Plan has no
  world. The report of a ds_config reuses the DeepSpeed -> FSDP2 rows (formats/deepspeed/fsdp2_explained.py)
  where Accelerate's FSDP2 plugin does what the module does; for any source, what an Accelerate
  config cannot hold (the optimizer, the scheduler, batch sizes, gradient accumulation and
  clipping, which belong to the training script or the Trainer; pipeline and expert degrees) is
  `dropped` with where to put it instead.
- `to_fsdp2` is `accelerate to-fsdp2` (commands/to_fsdp2.py, Accelerate 1.15) on the text, with
  comments kept, plus what the command gets wrong: HYBRID_* keeps its replicate dimension as a
  `parallelism_config`, LOCAL_STATE_DICT becomes SHARDED_STATE_DICT, integer strategies and
  unprefixed keys are mapped too, and every step is in the report.
"""

from __future__ import annotations

import copy
from typing import Any

from shardshift.document import Conversion, Document, MappingEntry
from shardshift.formats import yaml_write
from shardshift.formats.accelerate.keys import (
    DEEPSPEED_KEYS,
    FSDP1_ONLY,
    MEGATRON_FIELDS,
    PARALLELISM_FIELDS,
    SHARDING_STRATEGIES,
    TO_FSDP2,
    fsdp_name,
    truthy,
)
from shardshift.resolve import PLACEHOLDER, is_default, placeholder_reason
from shardshift.source import MISSING

FORMAT = "accelerate"
E, A, X, U = "exact", "approximate", "dropped", "unknown"
MIXED = {"bf16": "bf16", "fp16": "fp16", "fp8": "fp8", "fp32": "no"}
NOT_HELD = ("an Accelerate config has no place for it: ")


# --- Plan -> text ---------------------------------------------------------------------------------


def _known(value: Any) -> Any:
    from shardshift.plan import Unknown

    return None if isinstance(value, Unknown) or value == "auto" else value


def world_size(plan) -> int | None:
    """The total number of processes the Plan says: its world size, else nodes x GPUs per node."""
    world = _known(plan.world.world_size)
    if isinstance(world, int) and world > 0:
        return world
    nodes, per_node = _known(plan.world.nodes), _known(plan.world.gpus_per_node)
    if isinstance(nodes, int) and isinstance(per_node, int) and nodes > 0 and per_node > 0:
        return nodes * per_node
    return None


def _degree(plan, dotted: str) -> int | None:
    value = _known(plan.get(dotted))
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def parallelism_config(plan, world: int | None) -> dict[str, int] | None:
    """Accelerate's ParallelismConfig for the Plan's mesh, or None when it is plain FSDP over every
    process or cannot be stated. Accelerate 1.15 (parallelism_config.py) refuses a config whose sizes
    do not multiply to num_processes, one with nothing for FSDP to shard across (dp_shard and cp both
    1), and TP/CP over pure replication; so the shard size is what the world leaves, and nothing is
    written without the world."""
    if world is None:
        return None
    tp, cp = _degree(plan, "parallelism.tensor") or 1, _degree(plan, "parallelism.context") or 1
    replicate = _degree(plan, "parallelism.data_parallel_replicate") or 1
    size = _known(plan.sharding.hybrid_shard_size)
    if _known(plan.sharding.hybrid) and isinstance(size, int) and size > 0 and world % size == 0 and replicate == 1 \
            and tp == cp == 1:
        replicate = world // size
    if replicate == tp == cp == 1 or world % (replicate * tp * cp):
        return None
    shard = world // (replicate * tp * cp)
    if shard == 1 and cp == 1:
        return None
    out = {"parallelism_config_dp_replicate_size": replicate, "parallelism_config_dp_shard_size": shard}
    if tp > 1:
        out["parallelism_config_tp_size"] = tp
    if cp > 1:
        out["parallelism_config_cp_size"] = cp
    return out


def fsdp2_settings(plan) -> dict[str, Any]:
    """The top-level keys and `fsdp_config` of the FSDP2 config that expresses `plan` (a resolved
    Plan: every value is the Plan's; `num_processes` is the placeholder when the Plan has no world)."""
    stage = _known(plan.sharding.stage)
    raf = _known(plan.sharding.reshard_after_forward)
    reshard = (stage == 3) if isinstance(stage, int) else (raf is not None and raf is not False) if raf is not None \
        else True
    params = plan.offload.params.device if plan.offload.params else None
    optimizer = plan.offload.optimizer.device if plan.offload.optimizer else None
    offload = any(_known(d) in ("cpu", "nvme") for d in (params, optimizer))
    ac = plan.activation_checkpointing
    dtype = _known(plan.precision.param_dtype)
    out: dict[str, Any] = {"compute_environment": "LOCAL_MACHINE", "debug": False, "distributed_type": "FSDP",
                           "downcast_bf16": "no", "enable_cpu_affinity": False}
    out["fsdp_config"] = {
        "fsdp_version": 2,
        "fsdp_reshard_after_forward": reshard,
        "fsdp_offload_params": offload,
        "fsdp_auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
        "fsdp_cpu_ram_efficient_loading": True,
        "fsdp_state_dict_type": "SHARDED_STATE_DICT",
        "fsdp_activation_checkpointing": bool(ac is not None and ac.enabled is True),
    }
    nodes = _known(plan.world.nodes)
    world = world_size(plan)
    out["machine_rank"] = 0
    out["main_training_function"] = "main"
    if dtype in MIXED:  # absent, Accelerate trains without mixed precision ("no"), as an unknown dtype may not
        out["mixed_precision"] = MIXED[dtype]
    out["num_machines"] = nodes if isinstance(nodes, int) and nodes > 0 else 1
    out["num_processes"] = world if world is not None else PLACEHOLDER
    mesh = parallelism_config(plan, world)
    if mesh is not None:
        out["parallelism_config"] = mesh
    out["rdzv_backend"] = "static"
    out["same_network"] = True
    out["use_cpu"] = False
    return out


NUM_PROCESSES_COMMENT = ("shardshift: the total number of processes (GPUs) over all machines; accelerate launch "
                         "stops without it")
NUM_PROCESSES_ENTRY = placeholder_reason("num_processes: the total number of processes (GPUs) over all machines. "
                                         "The source does not say how many run, and without it accelerate launch "
                                         "stops (\"You need to manually pass in `--num_processes` using this config "
                                         "yaml\"); or pass --num_processes to accelerate launch")


def placeholders(edit: yaml_write.Edit) -> list[MappingEntry]:
    """Mark the placeholders of a written config with their comment; their report entries."""
    entries = []
    if edit.get("/num_processes") == PLACEHOLDER:
        edit.comment("/num_processes", NUM_PROCESSES_COMMENT)
        entries.append(MappingEntry("", 1, 1, U, "num_processes", NUM_PROCESSES_ENTRY))
    return entries


def dump(config: dict) -> tuple[str, list[MappingEntry]]:
    """A new config's text, its placeholders commented, and their report entries."""
    edit = yaml_write.new(config)
    entries = placeholders(edit)
    return edit.dump(), entries


def write(plan) -> str:
    """An Accelerate config for `plan`: its own Accelerate settings when it came from one (the
    passthrough plus the lifted fields), else the FSDP2 config."""
    if FORMAT in plan.passthrough:
        return _rebuild(plan).dump()
    return dump(fsdp2_settings(plan))[0]


def _rebuild(plan) -> yaml_write.Edit:
    edit = yaml_write.new(copy.deepcopy(plan.passthrough[FORMAT]))
    _write_back(edit, plan)
    return edit


def _write_back(edit: yaml_write.Edit, plan) -> None:
    """Write the Plan's lifted values at the places they came from (the provenance pointers,
    else the canonical key), in the representation the file already uses."""
    distributed = edit.get("/distributed_type")

    def put(dotted: str, pointer: str, value: Any, same) -> None:
        if value is None:
            return
        where = plan.provenance.get(dotted)
        at = where.pointer if where is not None and where.pointer and where.pointer.startswith("/") else pointer
        old = edit.get(at)
        if old is not MISSING and same(old, value):
            return
        edit.set(at, value)

    equal = (lambda old, new: old == new and type(old) is type(new) or
             (not isinstance(old, bool) and not isinstance(new, bool) and old == new))
    put("world.nodes", "/num_machines", _known(plan.world.nodes), equal)
    if distributed != "NO":
        put("world.world_size", "/num_processes", _known(plan.world.world_size), equal)
    dtype = _known(plan.precision.param_dtype)
    if dtype is not None:
        put("precision.param_dtype", "/mixed_precision", MIXED.get(dtype, dtype), lambda o, n: o == n)
    if distributed == "DEEPSPEED":
        for key, (dotted, kind) in DEEPSPEED_KEYS.items():
            value = _known(plan.get(dotted))
            put(dotted, f"/deepspeed_config/{key}", value, equal)
    if distributed == "FSDP":
        version = edit.get("/fsdp_config/fsdp_version")
        stage = _known(plan.sharding.stage)
        if str(version) == "2" and stage in (2, 3):
            put("sharding.stage", "/fsdp_config/fsdp_reshard_after_forward", stage == 3,
                lambda o, n: truthy(o) == n)
        elif stage is not None:
            names = {3: "FULL_SHARD", 2: "SHARD_GRAD_OP", 0: "NO_SHARD"}
            if plan.sharding.hybrid:
                names = {3: "HYBRID_SHARD", 2: "HYBRID_SHARD_ZERO2"}
            if stage in names:
                put("sharding.stage", "/fsdp_config/fsdp_sharding_strategy", names[stage], _same_strategy)
        device = plan.offload.params.device if plan.offload.params else None
        if _known(device) in ("cpu", "none"):
            put("offload.params.device", "/fsdp_config/fsdp_offload_params", device == "cpu",
                lambda o, n: truthy(o) == n)
        ac = plan.activation_checkpointing
        if ac is not None and ac.enabled is not None:
            put("activation_checkpointing.enabled", "/fsdp_config/fsdp_activation_checkpointing", ac.enabled,
                lambda o, n: truthy(o) == n)
        for key, dotted in PARALLELISM_FIELDS.items():
            put(dotted, f"/parallelism_config/{key}", _known(plan.get(dotted)), equal)
    if distributed == "MEGATRON_LM":
        for key, (dotted, kind) in MEGATRON_FIELDS.items():
            put(dotted, f"/megatron_lm_config/{key}", _known(plan.get(dotted)), equal)


def _same_strategy(old: Any, new: str) -> bool:
    text = str(old).upper()
    if text.isdigit() and 1 <= int(text) <= len(SHARDING_STRATEGIES):
        text = SHARDING_STRATEGIES[int(text) - 1]
    return text == new


# --- document -> Conversion --------------------------------------------------------------------------


def convert(document: Document) -> Conversion:
    """The Accelerate config for `document` and what happened to every source setting."""
    if document.plan is None:
        raise ValueError(f"{document.path} has no Plan to write")
    plan = copy.deepcopy(document.plan)
    if document.format == FORMAT:
        edit = yaml_write.load(document.text)
        _write_back(edit, plan)
        entries = [MappingEntry(pointer, line, column, E, pointer, "kept as written")
                   for pointer, line, column in document.settings()]
        conversion = Conversion(edit.dump(), entries)
    elif document.format == "deepspeed":
        conversion = _from_deepspeed(document, plan)
    else:
        text, entries = dump(fsdp2_settings(plan))
        conversion = Conversion(text, explanations(document, plan) + entries)
    conversion.mark_unknowns(plan)
    return conversion


# Plan field (or section) -> why an Accelerate config has no place for it, and where it goes instead
PLACES = {
    "batch.global_": "the global batch is the per-device batch x gradient accumulation x num_processes of "
                     + "{trainer}",
    "batch.micro": "set the per-device batch size in your DataLoader or {trainer}",
    "batch.accumulation": "Accelerate reads gradient accumulation only from Accelerator(gradient_accumulation_steps="
                          "...) or {trainer} (a config file holds it only for the DeepSpeed plugin)",
    "batch.sequence_length": "the sequence length is your data pipeline's",
    "gradient_clipping": "call accelerator.clip_grad_norm_(model.parameters(), max_norm) in your loop (max_grad_norm "
                         "in the Trainer)",
    "optimizer": "your script or the Trainer builds the optimizer",
    "scheduler": "your script or the Trainer builds the learning-rate scheduler",
    "parallelism.pipeline": "Accelerate's FSDP2 plugin has no pipeline parallelism",
    "parallelism.virtual_pipeline": "Accelerate's FSDP2 plugin has no pipeline parallelism",
    "parallelism.expert": "Accelerate's parallelism_config has no expert-parallel size",
    "model": "the model's shape is the model's own (your script loads it)",
    "communication": "Accelerate's FSDP2 plugin has no communication tuning in its config",
}
MESH = ("parallelism.tensor", "parallelism.context", "parallelism.data_parallel_replicate",
        "parallelism.data_parallel_shard")


def explanations(document: Document, plan) -> list[MappingEntry]:
    """What the written config cannot hold, and why, for each setting of `document` that set it
    (found by the Plan's provenance; a framework's default has no setting). Fields the config holds
    are measured by the caller against the output read back; these entries explain the rest."""
    written = fsdp2_settings(plan)
    reasons: dict[tuple, tuple[str, str]] = {}
    for dotted, where in plan.provenance.items():
        if where is None or is_default(where) or where.file != document.path or plan.get(dotted) is None:
            continue
        reason = next((text for prefix, text in PLACES.items() if dotted == prefix or dotted.startswith(prefix + ".")),
                      None)
        if reason is None and dotted in MESH and "parallelism_config" not in written and \
                (_degree(plan, dotted) or 1) > 1:
            reason = ("Accelerate's parallelism_config must multiply to num_processes, which the source does not say"
                      if written["num_processes"] == PLACEHOLDER else
                      "these degrees do not make a mesh Accelerate accepts over num_processes (FSDP2 needs a shard "
                      "or context dimension; tensor or context parallelism cannot sit on pure replication)")
        if reason is None:
            continue
        key = (where.pointer or dotted, where.line, where.column)
        reasons.setdefault(key, (dotted, NOT_HELD + reason.format(trainer=TRAINER)))
    return [MappingEntry(source, line, column, X, None, reason)
            for (source, line, column), (_, reason) in sorted(reasons.items(), key=lambda item: item[0][1:])]


# DeepSpeed pointer (or prefix) -> (status, Accelerate target, reason), for what differs from the
# FSDP2 module's report because the setting goes to the Accelerate config, or nowhere in it.
TRAINER = "the Trainer's TrainingArguments or Accelerator(...) in your script"
OVERRIDES: dict[str, tuple[str, str | None, str]] = {
    "/train_batch_size": (X, None, NOT_HELD + "the global batch is per_device_train_batch_size x "
                          "gradient_accumulation_steps x num_processes in " + TRAINER),
    "/train_micro_batch_size_per_gpu": (X, None, NOT_HELD + "set the per-device batch size in your DataLoader or "
                                        + TRAINER),
    "/gradient_accumulation_steps": (X, None, NOT_HELD + "under FSDP Accelerate reads gradient accumulation only "
                                     "from Accelerator(gradient_accumulation_steps=...) or " + TRAINER),
    "/gradient_clipping": (X, None, NOT_HELD + "call accelerator.clip_grad_norm_(model.parameters(), max_norm) in "
                           "your loop (max_grad_norm in the Trainer)"),
    "/optimizer": (X, None, NOT_HELD + "your script or the Trainer builds the optimizer (a torch optimizer under "
                   "FSDP2; DeepSpeed's own optimizer classes are not used)"),
    "/scheduler": (X, None, NOT_HELD + "your script or the Trainer builds the learning-rate scheduler"),
    "/dataloader_drop_last": (X, None, NOT_HELD + "pass drop_last to your DataLoader (dataloader_drop_last in the "
                              "Trainer)"),
    "/fp16/enabled": (E, "mixed_precision", "mixed_precision: fp16: Accelerate's FSDP2 policy computes in fp16 with "
                      "fp32 sharded parameters, and Accelerate scales the loss"),
    "/bf16/enabled": (E, "mixed_precision", "mixed_precision: bf16: Accelerate's FSDP2 policy computes in bf16 with "
                      "fp32 sharded parameters"),
    "/communication_data_type": (A, "mixed_precision", "Accelerate's FSDP2 policy reduces gradients in the "
                                 "mixed_precision dtype (MixedPrecisionPolicy(reduce_dtype=...)); the YAML cannot ask "
                                 "for another reduce dtype"),
    "/activation_checkpointing": (A, "fsdp_config.fsdp_activation_checkpointing", "Accelerate wraps each direct "
                                  "child of every auto-wrapped layer in checkpoint_wrapper (not the layer itself); "
                                  "remove deepspeed.checkpointing calls from the model"),
}
OFFLOAD = ("/zero_optimization/offload_param/device", "/zero_optimization/offload_optimizer/device")


def _override(pointer: str) -> tuple[str, str | None, str] | None:
    for prefix, outcome in OVERRIDES.items():
        if pointer == prefix or pointer.startswith(prefix + "/"):
            return outcome
    return None


def deepspeed_fsdp2_config(plan, source_name: str) -> tuple[dict, Any]:
    """The Accelerate FSDP2 config for a DeepSpeed Plan, making the FSDP2 module's choices where
    Accelerate's config can hold them, and those settings (fsdp2_settings.py)."""
    from shardshift.fsdp2_settings import settings_from_plan

    settings = settings_from_plan(plan, source_name=source_name)
    config = fsdp2_settings(plan)
    config["fsdp_config"]["fsdp_reshard_after_forward"] = bool(settings.stage == 3)
    config["fsdp_config"]["fsdp_offload_params"] = bool(settings.cpu_offload)
    config["fsdp_config"]["fsdp_activation_checkpointing"] = bool(settings.activation_checkpointing)
    if settings.param_dtype in MIXED:
        config["mixed_precision"] = MIXED[settings.param_dtype]
    return config, settings


def _switch(document: Document, pointer: str) -> Any:
    from shardshift.source import value_at

    return value_at(document.data, pointer) if isinstance(document.data, dict) else MISSING


def _from_deepspeed(document: Document, plan) -> Conversion:
    from shardshift.formats.deepspeed.fsdp2_explained import report

    config, settings = deepspeed_fsdp2_config(plan, document.path)
    entries: list[MappingEntry] = []
    for entry in report(document, settings):
        source = entry.source
        mine = _override(source)
        if source == "/communication_data_type" and entry.reason.startswith("not set"):
            status, target, reason = E, "mixed_precision", ("not set: DeepSpeed reduces gradients in the training "
                                                            "dtype, and so does Accelerate's FSDP2 policy")
        elif source == "/gradient_clipping" and entry.reason.startswith("not set"):
            status, target, reason = X, None, ("not set: DeepSpeed 0.19.3+ clips at 1.0; " + NOT_HELD +
                                               "call accelerator.clip_grad_norm_(..., 1.0) (max_grad_norm=1.0 in the "
                                               "Trainer, its default)")
        elif source == "/communication_data_type":
            value = document.data.get("communication_data_type") if isinstance(document.data, dict) else None
            same = {"bf16": "bf16", "bfp16": "bf16", "fp16": "fp16"}.get(str(value)) == settings.param_dtype
            status, target, reason = (E if same else A), "mixed_precision", (
                "Accelerate reduces gradients in the mixed_precision dtype, as this setting asks" if same else
                OVERRIDES[source][2] + f": {value!r} is not reproduced")
        elif source in ("/fp16/enabled", "/bf16/enabled") and _switch(document, source) is not True:
            # the row speaks of the precision switched on: off, or "auto", says something else
            if _switch(document, source) == "auto":
                status, target, reason = U, None, (
                    '"auto": the Hugging Face Trainer fills it from its own fp16 / bf16 arguments; this config '
                    "states no mixed_precision, so Accelerate's default, no mixed precision, applies unless the "
                    "launch (--mixed_precision) or the script (Accelerator(mixed_precision=...)) sets one")
            else:
                status, target, reason = entry.status, None, entry.reason
        elif mine is not None:
            status, target, reason = mine
            if source.startswith("/optimizer") or source.startswith("/scheduler"):
                reason = f"{reason}" + (f" ({entry.reason})" if entry.reason and entry.status == E else "")
        elif source in OFFLOAD:
            status, target, reason = entry.status, "fsdp_config.fsdp_offload_params", entry.reason
        elif source == "/zero_optimization/stage" or (entry.target or "").startswith("RESHARD_AFTER_FORWARD"):
            status, target, reason = entry.status, "fsdp_config.fsdp_reshard_after_forward", entry.reason
            if source != "/zero_optimization/stage":
                status, target, reason = X, None, NOT_HELD + "fsdp_reshard_after_forward is a bool in Accelerate " \
                    f"({entry.reason})"
        elif entry.target is None:
            status, target, reason = entry.status, None, entry.reason
        elif entry.target in ("PARAM_DTYPE", "INITIAL_LOSS_SCALE", "LOSS_SCALE_WINDOW"):
            status, target, reason = (A if entry.status == E else entry.status), "mixed_precision", (
                f"Accelerate's own GradScaler with its defaults: {entry.reason}")
        elif entry.target == "build_mesh":
            status, target, reason = entry.status, "num_processes", entry.reason
        else:
            status, target, reason = X, None, NOT_HELD + entry.reason
        entries.append(MappingEntry(entry.source, entry.line, entry.column, status, target, reason))
    text, placeholder = dump(config)
    return Conversion(text, entries + placeholder)


# --- Accelerate FSDP1 -> FSDP2 ------------------------------------------------------------------------

REMOVED = {
    "fsdp_backward_prefetch": "removed in FSDP2 (accelerate to-fsdp2 drops it): FSDP2 prefetches the next unit",
    "fsdp_sync_module_states": "removed in FSDP2 (accelerate to-fsdp2 drops it): cpu_ram_efficient_loading "
                               "broadcasts from rank 0",
    "fsdp_use_orig_params": "removed in FSDP2 (accelerate to-fsdp2 drops it): FSDP2 always keeps the original "
                            "parameters",
    "fsdp_forward_prefetch": "not yet implemented in FSDP2 (accelerate to-fsdp2 drops it)",
}


def to_fsdp2(document: Document) -> Conversion:
    """`accelerate to-fsdp2` on `document`, comments kept, with a report of every fsdp_config key."""
    if document.format != FORMAT or document.syntax is not None or not isinstance(document.data, dict):
        raise ValueError(f"{document.path} is not an Accelerate config that can be read")
    edit = yaml_write.load(document.text)
    data = document.data
    block = data.get("fsdp_config")
    entries: list[MappingEntry] = []

    def entry(pointer: str, status: str, target: str | None, reason: str) -> None:
        line, column = document.position(pointer, key=True)
        entries.append(MappingEntry(pointer, line, column, status, target, reason))

    if not isinstance(block, dict) or not block:
        entry("/fsdp_config", E, None, "no fsdp_config: nothing to convert (accelerate to-fsdp2 leaves the file "
              "unchanged too)")
        return Conversion(document.text, entries)
    settings = {fsdp_name(k): (k, v) for k, v in block.items() if isinstance(k, str)}
    version = settings.get("fsdp_version", (None, 1))[1]
    if str(version) == "2":
        for name, (key, _) in settings.items():
            why = FSDP1_ONLY.get(name)
            entry(f"/fsdp_config/{key}", X if why else E, None if why else f"fsdp_config.{key}",
                  f"already FSDP2, and Accelerate ignores it: {why}" if why else "already FSDP2: kept")
        return Conversion(document.text, entries)
    machines, processes = data.get("num_machines", 1), data.get("num_processes")
    for key, value in block.items():
        if not isinstance(key, str):
            continue
        name, pointer = fsdp_name(key), f"/fsdp_config/{key}"
        if name in REMOVED:
            edit.delete(pointer)
            entry(pointer, X if value not in (False, None, "NO_PREFETCH") else E, None, REMOVED[name])
        elif name in ("fsdp_sharding_strategy", "fsdp_reshard_after_forward"):
            if name == "fsdp_reshard_after_forward" and "fsdp_sharding_strategy" in settings:
                edit.delete(pointer)
                entry(pointer, X, None, "under FSDP1 Accelerate reads fsdp_sharding_strategy first and ignored this "
                      "key; the strategy decides fsdp_reshard_after_forward")
                continue
            strategy = _strategy(value)
            if strategy is None:
                entry(pointer, U, "fsdp_config.fsdp_reshard_after_forward", f"{value!r} is not a sharding strategy; "
                      "left as written")
                continue
            flag = TO_FSDP2[strategy]
            target = "fsdp_config.fsdp_reshard_after_forward"
            edit.rename(pointer, "fsdp_reshard_after_forward", value=flag)
            if strategy in ("FULL_SHARD", "SHARD_GRAD_OP"):
                status, reason = E, f"{strategy} is fsdp_reshard_after_forward: {str(flag).lower()}"
            elif strategy == "NO_SHARD":
                status, reason = A, ("NO_SHARD (plain data parallel) becomes sharding without resharding after "
                                     "forward; for DDP use distributed_type: MULTI_GPU instead")
            else:
                status, reason = A, _hybrid(edit, strategy, machines, processes)
            if name == "fsdp_reshard_after_forward" and version in (1, "1", None):
                reason += ("; under FSDP1 Accelerate ignored this key without fsdp_sharding_strategy and ran "
                           "FULL_SHARD, so the converted config now does what the key said")
                status = A
            entry(pointer, status, target, reason)
        elif name == "fsdp_state_dict_type" and str(value).upper() == "LOCAL_STATE_DICT":
            edit.set(pointer, "SHARDED_STATE_DICT")
            entry(pointer, A, f"fsdp_config.{key}", "FSDP2 has no LOCAL_STATE_DICT (accelerate to-fsdp2 keeps it and "
                  "the plugin raises): SHARDED_STATE_DICT, the per-rank shards through torch.distributed.checkpoint")
        elif name == "fsdp_version":
            edit.set(pointer, 2)
            entry(pointer, E, "fsdp_config.fsdp_version", "fsdp_version: 2")
        else:
            entry(pointer, E, f"fsdp_config.{key}", "kept: the same meaning under FSDP2" if name in (
                "fsdp_auto_wrap_policy", "fsdp_cpu_ram_efficient_loading", "fsdp_offload_params",
                "fsdp_state_dict_type", "fsdp_transformer_layer_cls_to_wrap", "fsdp_min_num_params",
                "fsdp_activation_checkpointing", "fsdp_ignored_modules", "fsdp_activation_checkpointing_offload")
                else "copied unchanged, as accelerate to-fsdp2 does")
    if "fsdp_version" not in settings:
        edit.set("/fsdp_config/fsdp_version", 2)
        entries.append(MappingEntry("/fsdp_config", *document.position("/fsdp_config", key=True), E,
                                    "fsdp_config.fsdp_version", "fsdp_version: 2 added"))
    return Conversion(edit.dump(), entries)


def _strategy(value: Any) -> str | None:
    text = str(value).upper()
    if text.isdigit() and 1 <= int(text) <= len(SHARDING_STRATEGIES):
        return SHARDING_STRATEGIES[int(text) - 1]
    return text if text in SHARDING_STRATEGIES else None


def _hybrid(edit: yaml_write.Edit, strategy: str, machines: Any, processes: Any) -> str:
    """HYBRID_* shards within a machine and replicates across machines: under FSDP2 that is a
    parallelism_config (accelerate to-fsdp2 loses it)."""
    if isinstance(machines, int) and isinstance(processes, int) and machines > 1 and processes % machines == 0 \
            and not edit.has("/parallelism_config"):
        per = processes // machines
        edit.set("/parallelism_config", {"parallelism_config_dp_replicate_size": machines,
                                         "parallelism_config_dp_shard_size": per})
        return (f"{strategy}: shard within each machine ({per} processes), replicate across the {machines} machines "
                "as parallelism_config dp_replicate_size x dp_shard_size (accelerate to-fsdp2 drops the replicate "
                "dimension)" + ("; ZeRO2-like: no reshard after forward" if strategy.endswith("ZERO2") else ""))
    return (f"{strategy} loses its replicate dimension: plain FSDP2 over every process; add parallelism_config "
            "(dp_replicate_size = machines, dp_shard_size = processes per machine) for HSDP")
