"""JSON Schemas for editors (draft 2020-12): `shardshift schema deepspeed|accelerate|plan`.

- deepspeed: generated from the ds_config key table (formats/deepspeed/keys.py): descriptions,
  defaults, ranges; strictly validated sections reject unknown keys, permissive ones allow
  them (DeepSpeed ignores them); every scalar also accepts "auto" (the Hugging Face
  placeholder); integer fields accept `5e8` (an integer value in JSON Schema).
- accelerate: the `accelerate launch` config file (../shared/reference/accelerate.md §2-§6),
  from the table below: unknown top-level keys are rejected (Accelerate rejects them); keys
  inside the nested sections are typed and described but not restricted (Accelerate never
  checks them; shardshift's rules do).
- plan: the Plan's own schema (plan.plan_json_schema).

The checked-in copies in schemas/ are regenerated with `python -m shardshift.schemas schemas/`.
Generating a schema never imports a validator; jsonschema is for tests.
"""

from __future__ import annotations

import json
import sys
from typing import Any

DRAFT = "https://json-schema.org/draft/2020-12/schema"
BASE_ID = "https://shardshift.dev/schemas/"
FILES = {"deepspeed": "ds_config.schema.json", "accelerate": "accelerate.schema.json", "plan": "plan.schema.json"}
GENERATED = ("deepspeed", "accelerate")  # written by `python -m shardshift.schemas`
AUTO = {"$ref": "#/$defs/auto"}
AUTO_DEF = {"const": "auto", "description": "Filled in by the Hugging Face integration (Trainer / Accelerate)."}


def schema(name: str) -> dict:
    """The schema called `name` (deepspeed, accelerate or plan)."""
    if name == "deepspeed":
        return deepspeed_schema()
    if name == "accelerate":
        return accelerate_schema()
    if name == "plan":
        from shardshift.plan import plan_json_schema

        return plan_json_schema()
    raise KeyError(name)


# --- ds_config ------------------------------------------------------------------------------

# Values DeepSpeed accepts besides the row's type (legacy forms it still migrates).
DEEPSPEED_EXTRA_TYPES = {"/zero_optimization": ["boolean"]}  # `true` = stage 1, with a deprecation warning


def _case_insensitive(choice: str) -> str:
    return "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else ("\\" + c if c in ".-+" else c) for c in choice)


def _scalar(key) -> dict:
    """The type part of a scalar row's schema."""
    bounds = {name: getattr(key, attribute) for name, attribute in (
        ("minimum", "minimum"), ("exclusiveMinimum", "exclusive_minimum"), ("maximum", "maximum"))
        if getattr(key, attribute) is not None}
    if key.type == "int":
        return {"type": "integer", **bounds, **({"multipleOf": 2} if key.even else {})}
    if key.type == "number":
        return {"type": "number", **bounds}
    if key.type == "bool":
        return {"type": "boolean"}
    if key.type == "str":
        return {"type": "string"}
    if key.type == "array":
        return {"type": "array"}
    if key.type == "enum":
        choices = list(key.choices or ())
        if key.case_insensitive and all(isinstance(c, str) for c in choices):
            pattern = "^(?:" + "|".join(_case_insensitive(c) for c in choices) + ")$"
            return {"anyOf": [{"enum": choices}, {"type": "string", "pattern": pattern}]}
        return {"enum": choices}
    return {}


def _description(key) -> str:
    parts = [key.doc.strip()] if key.doc.strip() else []
    if key.renamed_to:
        parts.insert(0, f"Legacy spelling of `{key.renamed_to[1:].replace('/', '.')}`.")
    if key.inert:
        parts.append("Has no effect.")
    if key.foreign:
        parts = [f"Not a DeepSpeed key: {key.foreign}."]
    if key.stages:
        parts.append("Read at ZeRO stage " + ", ".join(map(str, key.stages)) + ".")
    if key.type == "object" and key.strict and not key.open:
        parts.append("DeepSpeed rejects unknown keys in this section.")
    return " ".join(parts)


def _row_schema(key) -> dict:
    description = _description(key)
    if key.removed:
        return {"description": f"Not a DeepSpeed key: {key.removed}.", "not": {}}
    if key.type == "object":
        out: dict[str, Any] = {"type": ["object", *DEEPSPEED_EXTRA_TYPES.get(key.path, [])]}
        if description:
            out["description"] = description
        out["properties"] = {}
        if key.strict and not key.open:
            out["additionalProperties"] = False
    else:
        typed = _scalar(key)
        if typed and key.type != "array":
            out = {"anyOf": [*typed["anyOf"], AUTO]} if set(typed) == {"anyOf"} else {"anyOf": [typed, AUTO]}
        else:
            out = typed
        if description:
            out = {"description": description, **out}
    if key.default is not None and not key.removed:
        out["default"] = key.default
    if key.renamed_to or key.foreign or key.inert:
        out["deprecated"] = True
    return out


def deepspeed_schema() -> dict:
    """ds_config.schema.json, from the key table."""
    from shardshift.formats.deepspeed.keys import KEYS
    from shardshift.source import split_pointer

    root: dict[str, Any] = {
        "$schema": DRAFT,
        "$id": BASE_ID + FILES["deepspeed"],
        "title": "DeepSpeed configuration (ds_config.json)",
        "description": ("DeepSpeed's training configuration. Generated by shardshift from its key table: "
                        "`shardshift check` reports what a schema cannot (batch arithmetic, stage-dependent keys, "
                        "silently ignored typos at the top level)."),
        "type": "object",
        "properties": {},
        "$defs": {"auto": AUTO_DEF},
    }
    nodes: dict[str, dict] = {"": root}
    for key in sorted(KEYS, key=lambda k: k.path.count("/")):
        tokens = split_pointer(key.path)
        parent_path = key.path.rsplit("/", 1)[0]
        parent = nodes.get(parent_path)
        if parent is None:  # a row below a section without its own row
            parent = nodes[""]
            for depth, token in enumerate(tokens[:-1]):
                parent = parent["properties"].setdefault(token, {"type": "object", "properties": {}})
                nodes["/" + "/".join(tokens[:depth + 1])] = parent
        if "properties" not in parent:
            continue  # below a removed section: the section itself is refused
        row = _row_schema(key)
        if tokens[-1] == "*":
            parent["additionalProperties"] = row
        else:
            parent["properties"][tokens[-1]] = row
        if key.type == "object" and not key.removed:
            nodes[key.path] = row
    _drop_empty(root)
    return root


def _drop_empty(node: dict) -> None:
    for child in node.get("properties", {}).values():
        _drop_empty(child)
    if node.get("properties") == {}:
        del node["properties"]


# --- Accelerate config YAML -----------------------------------------------------------------

DISTRIBUTED_TYPES = ("NO", "MULTI_CPU", "MULTI_GPU", "MULTI_NPU", "MULTI_MLU", "MULTI_SDAA", "MULTI_MUSA",
                     "MULTI_XPU", "MULTI_HPU", "MULTI_NEURON", "DEEPSPEED", "FSDP", "XLA", "MEGATRON_LM",
                     "DATA_PARALLEL", "MODEL_PARALLEL")
DYNAMO_BACKENDS = ("NO", "EAGER", "AOT_EAGER", "INDUCTOR", "AOT_TS_NVFUSER", "NVPRIMS_NVFUSER", "CUDAGRAPHS", "OFI",
                   "FX2TRT", "ONNXRT", "TENSORRT", "AOT_TORCHXLA_TRACE_ONCE", "TORCHXLA_TRACE_ONCE", "TVM",
                   "HPU_BACKEND", "NEURON")
SHARDING_STRATEGIES = ("FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD", "HYBRID_SHARD_ZERO2")
BOOL, INT, NUMBER, STRING, NULL = "boolean", "integer", "number", "string", "null"
YES_NO = ("no", "yes")  # what `accelerate config` writes for some booleans

# name: (JSON types, default, description[, enum]); a "!" in the description marks a legacy key.
ACCELERATE_TOP: dict[str, tuple] = {
    "compute_environment": ((STRING,), "LOCAL_MACHINE", "Where the job runs: LOCAL_MACHINE (a cluster) or "
                            "AMAZON_SAGEMAKER.", ("LOCAL_MACHINE", "AMAZON_SAGEMAKER")),
    "distributed_type": ((STRING,), None, "Required. How the job is distributed (SageMaker: NO, DATA_PARALLEL, "
                         "MODEL_PARALLEL).", DISTRIBUTED_TYPES),
    "mixed_precision": ((STRING, NULL), None, "no, fp16, bf16 or fp8 (quote 'no': YAML 1.1 reads an unquoted no "
                        "as false). With a deepspeed_config_file it must not be set.", ("no", "fp16", "bf16", "fp8")),
    "use_cpu": ((BOOL,), False, "Run on the CPU only."),
    "debug": ((BOOL,), False, "Extra distributed debugging checks."),
    "enable_cpu_affinity": ((BOOL,), False, "Pin processes to CPU cores (NVIDIA only)."),
    "num_processes": ((INT,), -1, "Total processes across all machines (each machine runs num_processes // "
                      "num_machines)."),
    "machine_rank": ((INT,), 0, "Rank of this machine."),
    "num_machines": ((INT,), 1, "Number of machines."),
    "gpu_ids": ((STRING, INT, NULL), None, "GPUs to use: \"all\" or a comma-separated list such as \"0,1\"."),
    "main_process_ip": ((STRING, NULL), None, "Address of the rank-0 machine (multi-node)."),
    "main_process_port": ((INT, NULL), None, "Port of the rank-0 machine (default 29500; 0 picks a free port)."),
    "rdzv_backend": ((STRING, NULL), "static", "Rendezvous backend: static or c10d."),
    "same_network": ((BOOL, NULL), False, "Multi-node: machines share a network (sets the master address/port)."),
    "main_training_function": ((STRING,), "main", "TPU only: the function to launch."),
    "downcast_bf16": ((BOOL, STRING), False, "TPU bf16: downcast float32 to bf16 ('no' as `accelerate config` "
                      "writes it)."),
    "fsdp_config": (("object", NULL), None, "FSDP settings (distributed_type: FSDP)."),
    "parallelism_config": (("object", NULL), None, "N-D parallel sizes (FSDP2); non-empty turns it on."),
    "deepspeed_config": (("object", NULL), None, "DeepSpeed plugin settings (distributed_type: DEEPSPEED)."),
    "megatron_lm_config": (("object", NULL), None, "Megatron-LM plugin settings (distributed_type: MEGATRON_LM)."),
    "fp8_config": (("object", NULL), None, "FP8 settings: backend (ao, te or msamp) and its knobs."),
    "dynamo_config": (("object", NULL), None, "torch.compile settings."),
    "mpirun_config": (("object", NULL), None, "mpirun settings (MULTI_CPU): mpirun_hostfile."),
    "tpu_name": ((STRING, NULL), None, "TPU pod name."),
    "tpu_zone": ((STRING, NULL), None, "TPU zone."),
    "tpu_use_cluster": ((BOOL,), False, "Launch on a TPU pod."),
    "tpu_use_sudo": ((BOOL,), False, "Use sudo on TPU pod workers."),
    "command_file": ((STRING, NULL), None, "TPU: file of commands to run on each pod worker."),
    "commands": (("array", STRING, NULL), None, "TPU: commands to run on each pod worker."),
    "tpu_vm": (("array", NULL), None, "TPU VM names."),
    "tpu_env": (("array", NULL), None, "TPU environment variables."),
    # SageMaker (compute_environment: AMAZON_SAGEMAKER)
    "ec2_instance_type": ((STRING,), None, "SageMaker: EC2 instance type (required there)."),
    "iam_role_name": ((STRING,), None, "SageMaker: IAM role (required there)."),
    "image_uri": ((STRING, NULL), None, "SageMaker: container image."),
    "profile": ((STRING, NULL), None, "SageMaker: AWS profile."),
    "region": ((STRING,), "us-east-1", "SageMaker: AWS region."),
    "base_job_name": ((STRING,), None, "SageMaker: job name prefix."),
    "pytorch_version": ((STRING,), None, "SageMaker: PyTorch version."),
    "transformers_version": ((STRING,), None, "SageMaker: Transformers version."),
    "py_version": ((STRING,), None, "SageMaker: Python version."),
    "sagemaker_inputs_file": ((STRING, NULL), None, "SageMaker: inputs file."),
    "sagemaker_metrics_file": ((STRING, NULL), None, "SageMaker: metrics file."),
    "additional_args": (("object", NULL), None, "SageMaker: extra estimator arguments."),
    # legacy keys Accelerate still converts
    "fp16": ((BOOL,), None, "! Legacy: use mixed_precision: fp16."),
    "dynamo_backend": ((STRING,), None, "! Legacy: use dynamo_config.dynamo_backend.", DYNAMO_BACKENDS),
}

ACCELERATE_SECTIONS: dict[str, dict[str, tuple]] = {
    "fsdp_config": {
        "fsdp_version": ((INT, STRING), 1, "1 (FSDP1, the default when absent) or 2 (FSDP2, needs torch >= 2.6).",
                         (1, 2, "1", "2")),
        "fsdp_reshard_after_forward": ((BOOL, STRING), True, "FSDP2: true/false. FSDP1: a sharding strategy name "
                                       "as `accelerate config` writes it.", (True, False, *SHARDING_STRATEGIES)),
        "fsdp_sharding_strategy": ((STRING, INT), "FULL_SHARD", "FSDP1 only (ignored by FSDP2): a strategy name or "
                                   "1-5.", (*SHARDING_STRATEGIES, 1, 2, 3, 4, 5)),
        "fsdp_offload_params": ((BOOL,), False, "Offload parameters to the CPU."),
        "fsdp_auto_wrap_policy": ((STRING, NULL), "NO_WRAP", "How modules are wrapped.",
                                  ("TRANSFORMER_BASED_WRAP", "SIZE_BASED_WRAP", "NO_WRAP", None)),
        "fsdp_transformer_layer_cls_to_wrap": ((STRING, NULL), None, "Comma-separated layer class names (default: the "
                                               "model's _no_split_modules)."),
        "fsdp_min_num_params": ((INT,), 100000000, "SIZE_BASED_WRAP: minimum parameters per unit (0: no wrapping)."),
        "fsdp_backward_prefetch": ((STRING, NULL), None, "FSDP1 only: BACKWARD_PRE, BACKWARD_POST or NO_PREFETCH.",
                                   ("BACKWARD_PRE", "BACKWARD_POST", "NO_PREFETCH", None)),
        "fsdp_forward_prefetch": ((BOOL,), False, "FSDP1 only (ignored from YAML by FSDP2)."),
        "fsdp_state_dict_type": ((STRING, NULL), None, "FULL_STATE_DICT, SHARDED_STATE_DICT (FSDP2 default) or "
                                 "LOCAL_STATE_DICT (FSDP1 only).",
                                 ("FULL_STATE_DICT", "LOCAL_STATE_DICT", "SHARDED_STATE_DICT", None)),
        "fsdp_use_orig_params": ((BOOL,), True, "FSDP1 only (ignored from YAML by FSDP2)."),
        "fsdp_cpu_ram_efficient_loading": ((BOOL,), True, "Load on rank 0 and broadcast (needs "
                                           "fsdp_sync_module_states with FSDP1)."),
        "fsdp_sync_module_states": ((BOOL,), True, "FSDP1: broadcast rank 0's weights (false with efficient loading "
                                    "is an error)."),
        "fsdp_activation_checkpointing": ((BOOL,), False, "Activation checkpointing of the wrapped layers."),
        "fsdp_ignored_modules": ((STRING, NULL), None, "Regex of module names FSDP leaves alone (torch >= 2.7)."),
    },
    "parallelism_config": {
        **{f"parallelism_config_{axis}_size": ((INT,), 1, f"{what} degree (at least 1).") for axis, what in (
            ("dp_replicate", "Replicated data-parallel (DDP / HSDP)"), ("dp_shard", "Sharded data-parallel (FSDP)"),
            ("tp", "Tensor-parallel"), ("cp", "Context-parallel"), ("sp", "DeepSpeed Ulysses sequence-parallel"))},
        "parallelism_config_cp_comm_strategy": ((STRING,), "allgather", "Context-parallel exchange.",
                                                ("allgather", "alltoall")),
        "parallelism_config_cp_backend": ((STRING,), "torch", "Context-parallel backend.", ("torch",)),
        "parallelism_config_sp_backend": ((STRING,), "deepspeed", "Sequence-parallel backend.", ("deepspeed",)),
        "parallelism_config_sp_seq_length": ((INT, STRING, NULL), None, "Sequence length for sequence parallelism."),
        "parallelism_config_sp_seq_length_is_variable": ((BOOL,), True, "Variable sequence lengths."),
        "parallelism_config_sp_attn_implementation": ((STRING,), "sdpa", "Attention implementation under SP."),
    },
    "deepspeed_config": {
        "deepspeed_config_file": ((STRING,), "none", "Path of a ds_config.json; then the settings below that "
                                  "duplicate it must not be set."),
        "zero_stage": ((INT,), 2, "ZeRO stage 0-3.", (0, 1, 2, 3)),
        "offload_optimizer_device": ((STRING,), "none", "none, cpu or nvme.", ("none", "cpu", "nvme")),
        "offload_param_device": ((STRING,), "none", "none, cpu or nvme.", ("none", "cpu", "nvme")),
        "offload_optimizer_nvme_path": ((STRING,), "none", "NVMe path for optimizer offload."),
        "offload_param_nvme_path": ((STRING,), "none", "NVMe path for parameter offload."),
        "gradient_accumulation_steps": ((INT, STRING), "auto", "Micro-batches per optimizer step."),
        "gradient_clipping": ((NUMBER, STRING), "auto", "Global gradient-norm clip."),
        "zero3_save_16bit_model": ((BOOL,), False, "ZeRO-3: gather 16-bit weights when saving."),
        "zero3_init_flag": ((BOOL,), None, "Build the model under deepspeed.zero.Init (stage 3 only)."),
        "deepspeed_moe_layer_cls_names": ((STRING, NULL), None, "Comma-separated MoE layer classes (ZeRO-3 leaves)."),
        "deepspeed_multinode_launcher": ((STRING,), "pdsh", "Multi-node launcher.",
                                         ("pdsh", "standard", "openmpi", "mvapich", "mpich", "nossh", "slurm")),
        "deepspeed_hostfile": ((STRING,), None, "Hostfile for non-standard launchers."),
        "deepspeed_exclusion_filter": ((STRING,), None, "Hosts to exclude."),
        "deepspeed_inclusion_filter": ((STRING,), None, "Hosts to include."),
    },
    "megatron_lm_config": {
        "megatron_lm_tp_degree": ((INT,), 1, "Tensor-parallel degree."),
        "megatron_lm_pp_degree": ((INT,), 1, "Pipeline-parallel degree."),
        "megatron_lm_sequence_parallelism": ((BOOL,), None, "Sequence parallelism (tp > 1)."),
        "megatron_lm_num_micro_batches": ((INT,), None, "Micro-batches per step (pp > 1)."),
        "megatron_lm_recompute_activations": ((BOOL,), None, "Recompute activations."),
        "megatron_lm_use_distributed_optimizer": ((BOOL,), None, "Distributed optimizer."),
        "megatron_lm_gradient_clipping": ((NUMBER,), 1.0, "Gradient clipping."),
        "megatron_lm_context_parallel_size": ((INT,), None, "Context-parallel size (the plugin falls back to 2 "
                                              "when the key is absent)."),
        "megatron_lm_expert_model_parallel_size": ((INT,), 1, "Expert-parallel size."),
        "megatron_lm_expert_tensor_parallel_size": ((INT,), 1, "Expert tensor-parallel size."),
        "megatron_lm_recompute_granularity": ((STRING,), "full", "full or selective.", ("full", "selective")),
        "megatron_lm_recompute_method": ((STRING,), "uniform", "uniform or block.", ("uniform", "block")),
        "megatron_lm_recompute_num_layers": ((INT,), 1, "Layers per recompute unit."),
    },
    "dynamo_config": {
        "dynamo_backend": ((STRING,), "NO", "torch.compile backend.", DYNAMO_BACKENDS),
        "dynamo_mode": ((STRING,), "default", "torch.compile mode.", ("default", "reduce-overhead", "max-autotune")),
        "dynamo_use_fullgraph": ((BOOL,), False, "fullgraph=True."),
        "dynamo_use_dynamic": ((BOOL,), False, "dynamic=True."),
        "dynamo_use_regional_compilation": ((BOOL,), False, "Compile repeated blocks once."),
    },
    "fp8_config": {
        "backend": ((STRING,), None, "FP8 backend.", ("ao", "te", "msamp", "AO", "TE", "MSAMP")),
    },
    "mpirun_config": {
        "mpirun_hostfile": ((STRING,), None, "mpirun hostfile."),
    },
}


def _accelerate_property(spec: tuple) -> dict:
    types, default, description, *choices = spec
    out: dict[str, Any] = {"description": description.lstrip("! ")}
    out["type"] = list(types) if len(types) > 1 else types[0]
    if choices:
        out["enum"] = list(choices[0]) + ([None] if NULL in types and None not in choices[0] else [])
    if default is not None:
        out["default"] = default
    if description.startswith("!"):
        out["deprecated"] = True
    return out


def accelerate_schema() -> dict:
    """accelerate.schema.json: the file `accelerate launch --config_file` reads."""
    properties = {name: _accelerate_property(spec) for name, spec in ACCELERATE_TOP.items()}
    for section, keys in ACCELERATE_SECTIONS.items():
        properties[section]["properties"] = {name: _accelerate_property(spec) for name, spec in keys.items()}
    return {
        "$schema": DRAFT,
        "$id": BASE_ID + FILES["accelerate"],
        "title": "Hugging Face Accelerate config (accelerate launch --config_file)",
        "description": ("The YAML (or JSON) file `accelerate config` writes. Accelerate rejects unknown top-level "
                        "keys but never checks the keys inside the nested sections: `shardshift check` reports "
                        "those, and conflicts a schema cannot express."),
        "type": "object",
        "properties": properties,
        "required": ["distributed_type"],
        "additionalProperties": False,
        "if": {"properties": {"compute_environment": {"const": "AMAZON_SAGEMAKER"}},
               "required": ["compute_environment"]},
        "then": {"required": ["ec2_instance_type", "iam_role_name"]},
    }


def main(argv: list[str] | None = None) -> int:
    """`python -m shardshift.schemas DIR`: write the generated editor schemas into DIR (the
    checked-in copies; plan.schema.json is written by the Plan's own tooling)."""
    import os

    args = sys.argv[1:] if argv is None else argv
    directory = args[0] if args else "schemas"
    for name in GENERATED:
        filename = FILES[name]
        with open(os.path.join(directory, filename), "w", encoding="utf-8") as handle:
            handle.write(dumps(schema(name)))
    return 0


def dumps(value: dict) -> str:
    """The text of a checked-in schema file."""
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    sys.exit(main())
