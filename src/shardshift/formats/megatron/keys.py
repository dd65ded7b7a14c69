"""Megatron-LM flags with a neutral meaning: which Plan field each sets (../shared/reference/megatron.md
§1 and §4), and what is known about a launch script's `--deepspeed_config` next to its flags."""

from __future__ import annotations

from shardshift.setup import Precedence

# dest -> Plan field, for flags whose stored value is the field's value as is
FIELDS: dict[str, str] = {
    "tensor_model_parallel_size": "parallelism.tensor",
    "pipeline_model_parallel_size": "parallelism.pipeline",
    "num_virtual_stages_per_pipeline_rank": "parallelism.virtual_pipeline",
    "context_parallel_size": "parallelism.context",
    "expert_model_parallel_size": "parallelism.expert",
    "sequence_parallel": "parallelism.sequence_parallel",
    "micro_batch_size": "batch.micro",
    "global_batch_size": "batch.global_",
    "seq_length": "batch.sequence_length",
    "num_layers": "model.layers",
    "hidden_size": "model.hidden",
    "num_attention_heads": "model.heads",
    "vocab_size": "model.vocab",
    "lr": "optimizer.lr",
    "adam_eps": "optimizer.eps",
    "weight_decay": "optimizer.weight_decay",
    "clip_grad": "gradient_clipping",
    "lr_decay_style": "scheduler.name",
    "lr_warmup_iters": "scheduler.warmup_steps",
    "min_lr": "scheduler.min_lr",
    "loss_scale": "precision.loss_scale",
    "min_loss_scale": "precision.min_loss_scale",
    "hysteresis": "precision.hysteresis",
    "overlap_grad_reduce": "communication.overlap",
    "ddp_bucket_size": "communication.reduce_bucket_elements",
}

# Flags read by the reader's own code (several flags make one field, or the value is translated).
DERIVED: frozenset[str] = frozenset({
    "bf16", "fp16", "fp8_format", "optimizer", "adam_beta1", "adam_beta2", "initial_loss_scale",
    "loss_scale_window", "use_distributed_optimizer", "group_query_attention", "num_query_groups",
    "num_layers_per_virtual_pipeline_stage", "lr_decay_iters", "fp8",
})

# Flags that set a Plan field and also stay in the passthrough, since the field alone does not say
# which of them to write back (FSDP2 or Megatron-FSDP for a stage; the recompute granularity and
# method for "activation checkpointing on"; the offload fraction).
KEPT: frozenset[str] = frozenset({
    "use_torch_fsdp2", "torch_fsdp2_reshard_after_forward", "use_megatron_fsdp", "data_parallel_sharding_strategy",
    "recompute_granularity", "recompute_activations", "optimizer_cpu_offload", "optimizer_offload_fraction",
})

# Megatron's --optimizer values -> the optimizer's name in the Plan ("adam" is AdamW: decoupled
# weight decay, with no switch to turn it off; megatron/core/optimizer/__init__.py)
OPTIMIZERS = {"adam": "AdamW", "sgd": "SGD"}

# --data-parallel-sharding-strategy (Megatron-FSDP) -> ZeRO stage
SHARDING_STRATEGIES = {"no_shard": 0, "optim": 1, "optim_grads": 2, "optim_grads_params": 3}

# Megatron-DeepSpeed hands its arguments and the ds_config to deepspeed.initialize; which one wins
# for a setting both give is not documented and not checked by an oracle here, so no field has a
# precedence: a setting given in both with different values is reported as "not known".
PRECEDENCE: dict[str, Precedence] = {}
