"""Axolotl across releases: the release each check of the AX rules holds from, and the top-level
keys each release's schema has (AX001), so that a repository pinned to an older Axolotl is judged
as that release judges it.

Read from the released packages on PyPI (`pip download --no-deps axolotl==X`; 0.20.0 and 0.21.0
need `--python-version 3.12`): the schema is `AxolotlInputConfig` and its bases in
`axolotl/utils/schemas/` (from 0.9.0; `utils/config/models/input/v0_4_1/` before), read with ast
(checked against the installed 0.21.0: the same 417 fields and aliases as schema_keys.py). The
0.5.0 wheel holds no code, so the table starts at 0.5.2. Every check below is present in every
release from its `since` on, up to 0.21.0.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Iterable, Iterator

from shardshift.context import CoveredReleases, Release, UnknownContext, Version
from shardshift.versions import version_text

OLDEST = (0, 5, 2)
NEWEST = (0, 21, 0)

V = "utils/schemas/validation.py"


@dataclass(frozen=True, slots=True)
class Since:
    """A check Axolotl makes from `version` on (absent in the release before it), and where."""

    version: Version
    source: str


# rule code (or "AX007:<key>") -> the release the behaviour a finding restates started in
CHECKS: dict[str, Since] = {
    # FSDP1 removed: the top-level `fsdp` list, fsdp_version 1 and the FSDP1-only fsdp_config keys
    # raise or are dropped (check_fsdp_version); 0.19.0 still ran FSDP1 with them
    "AX101": Since((0, 20, 0), f"axolotl 0.20.0 {V} check_fsdp_version (absent in 0.19.0)"),
    "AX102": Since((0, 20, 0), f"axolotl 0.20.0 {V} check_fsdp_version (absent in 0.19.0)"),
    "AX003": Since((0, 20, 0), f"axolotl 0.20.0 {V} check_fsdp_version, FSDP1_ONLY_*_KEYS (absent in 0.19.0)"),
    # the expert-parallel plugin's "expert_parallel_size (N) > 1 requires FSDP2" (absent in 0.19.0)
    "AX109": Since((0, 20, 0), "axolotl 0.20.0 integrations/expert_parallel (absent in 0.19.0)"),
    # the fsdp_ prefix in fsdp_config deprecated and stripped (check_fsdp_config_kwargs_prefix);
    # before, the prefixed names were the keys
    "AX005": Since((0, 12, 0), f"axolotl 0.12.0 {V} check_fsdp_config_kwargs_prefix (absent in 0.11.0)"),
    "AX007:sequence_parallel_degree": Since((0, 12, 0), "axolotl 0.12.0 utils/schemas/deprecated.py (absent in 0.11.0)"),
    "AX007:fsdp_final_state_dict_type": Since((0, 12, 0), "axolotl 0.12.0 utils/schemas/deprecated.py (absent in 0.11.0)"),
    "AX007:ring_attn_func": Since((0, 20, 0), f"axolotl 0.20.0 {V} validate_ring_attn_func (absent in 0.19.0)"),
    "AX007:heads_k_stride": Since((0, 20, 0), f"axolotl 0.20.0 {V} validate_ring_attn_func (absent in 0.19.0)"),
    # get_quantization_config's refusals as 0.21.0 has them ("NVFP4 weights support only NVFP4 or unquantized
    # activations" is new in 0.20.0; 0.19.0 judged some pairs otherwise)
    "AX112": Since((0, 20, 0), "axolotl 0.20.0 utils/quantization.py get_quantization_config (0.19.0 differs)"),
    # loaders/adapter.py _validate_mixlora_lora_target_modules and loaders/model.py
    # check_tensor_parallel_rl_adapter_support, both new in 0.20.0 and unchanged in 0.21.0
    "AX113": Since((0, 20, 0), "axolotl 0.20.0 loaders/adapter.py, loaders/model.py (absent in 0.19.0)"),
    # utils/config/__init__.py normalize_config's diffusion checks, new in 0.21.0 (absent in 0.20.0)
    "AX114": Since((0, 21, 0), "axolotl 0.21.0 utils/config/__init__.py normalize_config (absent in 0.20.0)"),
    # utils/distributed.py _get_parallel_config_kwargs as 0.21.0 has it (the expert-parallel and DeepSpeed
    # branches differ in 0.20.0)
    "AX115": Since((0, 21, 0), "axolotl 0.21.0 utils/distributed.py _get_parallel_config_kwargs (0.20.0 differs)"),
    # values Axolotl 0.21.0 computes with unchecked (found by mutation: tests/test_coverage_implicit.py); earlier
    # releases were not compared, so with no pin these are infos
    "AX116": Since((0, 21, 0), "axolotl 0.21.0 utils/config/__init__.py normalize_config, utils/schemas/validation.py "
                               "(earlier releases not compared)"),
    "AX007:evaluation_strategy": Since(OLDEST, "axolotl 0.5.2 schema (every release of the table)"),
    "AX007:gradient_checkpointing": Since((0, 12, 0), f"axolotl 0.12.0 {V} check_gradient_checkpointing_w_offload "
                                                      "(absent in 0.11.0)"),
}

# key -> the first release whose schema has it (every later one has it too)
ADDED_IN: dict[str, Version] = {
    'activation_offloading': (0, 12, 0),
    'adam_beta3': (0, 9, 1),
    'adam_epsilon2': (0, 9, 1),
    'added_tokens_overrides': (0, 8, 0),
    'attn_implementation': (0, 12, 0),
    'balance_labels': (0, 21, 0),
    'batch_flattening': (0, 7, 0),
    'center_rewards_coefficient': (0, 13, 1),
    'chat_template_kwargs': (0, 10, 0),
    'chunked_cross_entropy': (0, 11, 0),
    'chunked_cross_entropy_num_chunks': (0, 11, 0),
    'context_parallel_size': (0, 12, 0),
    'dataset_exact_deduplication': (0, 6, 0),
    'dataset_num_proc': (0, 13, 1),
    'deepcompile': (0, 12, 0),
    'diffusion_lm': (0, 21, 0),
    'dion_lr': (0, 12, 0),
    'dion_momentum': (0, 12, 0),
    'dion_rank_fraction': (0, 12, 0),
    'dion_rank_multiple_of': (0, 12, 0),
    'dp_replicate_size': (0, 12, 0),
    'dp_shard_size': (0, 12, 0),
    'dpo_generate_during_eval': (0, 11, 0),
    'dpo_label_smoothing': (0, 10, 0),
    'dpo_ld_alpha': (0, 21, 0),
    'dpo_loss_type': (0, 17, 0),
    'dpo_loss_weights': (0, 17, 0),
    'dpo_norm_loss': (0, 10, 0),
    'dpo_padding_free': (0, 10, 0),
    'dpo_use_liger_kernel': (0, 13, 1),
    'dpo_use_logits_to_keep': (0, 7, 0),
    'dynamic_checkpoint': (0, 13, 1),
    'eaft_alpha': (0, 14, 0),
    'eaft_k': (0, 14, 0),
    'ebft': (0, 16, 0),
    'embedding_lr': (0, 6, 0),
    'embedding_lr_scale': (0, 6, 0),
    'embeddings_skip_upcast': (0, 9, 1),
    'eot_tokens': (0, 9, 0),
    'eval_on_start': (0, 21, 0),
    'eval_sequence_len': (0, 11, 0),
    'excess_length_strategy': (0, 12, 2),
    'experimental_skip_move_to_device': (0, 12, 0),
    'experts_implementation': (0, 14, 0),
    'export': (0, 20, 0),
    'fa_varlen_kwargs_in_collator': (0, 21, 0),
    'flash_attn_d512': (0, 18, 0),
    'flex_attention': (0, 8, 1),
    'flex_attn_compile_kwargs': (0, 9, 0),
    'fp32_norm_classes': (0, 17, 0),
    'fp32_norms': (0, 17, 0),
    'fp8': (0, 8, 1),
    'fp8_config': (0, 19, 0),
    'fp8_enable_fsdp_float8_all_gather': (0, 12, 0),
    'freeze_mm_modules': (0, 17, 0),
    'fsdp_version': (0, 12, 0),
    'full_determinism': (0, 21, 0),
    'fused_attn_kernel': (0, 17, 0),
    'gc_collect_steps': (0, 17, 0),
    'gc_steps': (0, 7, 0),
    'gemma4_hybrid_attn_impl': (0, 17, 0),
    'generate_samples': (0, 15, 0),
    'generation_do_sample': (0, 15, 0),
    'generation_max_new_tokens': (0, 15, 0),
    'generation_prompt_ratio': (0, 15, 0),
    'generation_temperature': (0, 15, 0),
    'generation_top_k': (0, 15, 0),
    'generation_top_p': (0, 15, 0),
    'heads_k_stride': (0, 8, 0),
    'hub_revision': (0, 15, 0),
    'image_resize_algorithm': (0, 8, 0),
    'image_size': (0, 8, 0),
    'include_tkps': (0, 13, 1),
    'include_tokens_per_second': (0, 7, 0),
    'jagged_restart_anneal_steps': (0, 12, 0),
    'jagged_restart_steps': (0, 12, 0),
    'jagged_restart_warmup_steps': (0, 12, 0),
    'label_balance_window_optim_steps': (0, 21, 0),
    'large_head_attention': (0, 18, 0),
    'layer_offloading': (0, 16, 0),
    'llama4_linearized_experts': (0, 8, 1),
    'logging_nan_inf_filter': (0, 21, 0),
    'lora_alpha_pattern': (0, 18, 0),
    'lora_embedding_kernel': (0, 16, 0),
    'lora_fp32_gradients': (0, 20, 0),
    'lora_mlp_kernel': (0, 7, 0),
    'lora_o_kernel': (0, 7, 0),
    'lora_qkv_kernel': (0, 7, 0),
    'lora_rank_pattern': (0, 18, 0),
    'lora_target_parameters': (0, 12, 0),
    'lr_groups': (0, 7, 0),
    'merge_method': (0, 16, 0),
    'mixlora_expert_lora_alpha': (0, 20, 0),
    'mixlora_expert_lora_dropout': (0, 20, 0),
    'mixlora_expert_lora_r': (0, 20, 0),
    'mixlora_jitter_noise': (0, 20, 0),
    'mixlora_num_experts': (0, 20, 0),
    'mixlora_router_aux_loss_coef': (0, 20, 0),
    'mixlora_router_init_range': (0, 20, 0),
    'mixlora_top_k': (0, 20, 0),
    'model_quantization_config': (0, 12, 0),
    'model_quantization_config_kwargs': (0, 12, 0),
    'nf4_backend': (0, 20, 0),
    'num_dataset_shards_to_save': (0, 12, 0),
    'num_generation_samples': (0, 15, 0),
    'num_labels': (0, 7, 0),
    'nvfp4_merge_aware': (0, 20, 0),
    'otel_metrics_host': (0, 13, 1),
    'otel_metrics_port': (0, 13, 1),
    'overrides_of_model_kwargs': (0, 7, 0),
    'pad_to_multiple_of': (0, 17, 0),
    'peft_autocast_adapter_dtype': (0, 13, 1),
    'peft_ensure_weight_tying': (0, 13, 1),
    'peft_init_lora_weights': (0, 8, 0),
    'peft_trainable_token_indices': (0, 13, 1),
    'ple_cpu_offload': (0, 19, 0),
    'precompute_ref_log_probs': (0, 16, 0),
    'preprocess_iterable': (0, 7, 0),
    'pretraining_sample_concatenation': (0, 7, 0),
    'process_reward_model': (0, 7, 0),
    'processor_kwargs': (0, 17, 0),
    'profiler_steps': (0, 7, 0),
    'profiler_steps_start': (0, 12, 0),
    'qat': (0, 10, 0),
    'qgalore_cos_threshold': (0, 17, 0),
    'qgalore_gamma_proj': (0, 17, 0),
    'qgalore_proj_bits': (0, 17, 0),
    'qgalore_proj_group_size': (0, 17, 0),
    'qgalore_proj_quant': (0, 17, 0),
    'qgalore_proj_type': (0, 17, 0),
    'qgalore_queue_size': (0, 17, 0),
    'qgalore_rank': (0, 17, 0),
    'qgalore_scale': (0, 17, 0),
    'qgalore_update_proj_gap': (0, 17, 0),
    'quantization': (0, 10, 0),
    'quantize_moe_experts': (0, 15, 0),
    'ray_num_workers': (0, 7, 0),
    'ray_run_name': (0, 7, 0),
    'reinit_weights': (0, 13, 1),
    'relora': (0, 12, 0),
    'relora_prune_method': (0, 17, 0),
    'resources_per_worker': (0, 7, 0),
    'ring_attn_func': (0, 9, 0),
    'role_boundaries': (0, 17, 0),
    'sage_attention': (0, 15, 0),
    'sample_packing_mp_start_method': (0, 11, 0),
    'sample_packing_sequentially': (0, 8, 0),
    'save_first_step': (0, 12, 0),
    'scaling_softmax': (0, 13, 1),
    'scaling_softmax_bias': (0, 13, 1),
    'scaling_softmax_factor': (0, 13, 1),
    'sdpa_varlen': (0, 18, 0),
    'selective_checkpointing': (0, 18, 0),
    'sequence_parallel_degree': (0, 8, 0),
    'shrink_embeddings': (0, 7, 0),
    'shuffle_before_merging_datasets': (0, 12, 0),
    'streaming': (0, 13, 1),
    'streaming_multipack_buffer_size': (0, 13, 1),
    'sync_profiler_start_step': (0, 21, 0),
    'sync_profiler_steps': (0, 21, 0),
    'tensor_parallel_size': (0, 12, 0),
    'tiled_mlp': (0, 11, 0),
    'tiled_mlp_num_shards': (0, 11, 0),
    'tiled_mlp_use_original_mlp': (0, 12, 0),
    'tokenizer_save_jinja_files': (0, 13, 1),
    'tokenizer_use_mistral_common': (0, 10, 0),
    'torch_compile_options': (0, 18, 0),
    'torch_compile_regional': (0, 21, 0),
    'torch_empty_cache_steps': (0, 17, 0),
    'trackio_project_name': (0, 13, 1),
    'trackio_run_name': (0, 13, 1),
    'trackio_space_id': (0, 13, 1),
    'trainer_cls': (0, 12, 0),
    'trl': (0, 7, 0),
    'use_dft': (0, 20, 0),
    'use_eaft': (0, 14, 0),
    'use_kernels': (0, 12, 0),
    'use_onebitllms': (0, 17, 0),
    'use_otel_metrics': (0, 13, 1),
    'use_ray': (0, 7, 0),
    'use_trackio': (0, 13, 1),
    'vllm': (0, 8, 0),
}
# key the newest schema lacks -> (first, last) release whose schema has it
REMOVED: dict[str, tuple[Version, Version]] = {
    'flash_attn_fuse_qkv': ((0, 5, 2), (0, 11, 0)),
    'fsdp': ((0, 5, 2), (0, 19, 0)),
    'relora_anneal_steps': ((0, 5, 2), (0, 11, 0)),
    'relora_steps': ((0, 5, 2), (0, 11, 0)),
    'relora_warmup_steps': ((0, 5, 2), (0, 11, 0)),
    'unsloth_cross_entropy_loss': ((0, 5, 2), (0, 16, 1)),
    'unsloth_lora_mlp': ((0, 5, 2), (0, 16, 1)),
    'unsloth_lora_o': ((0, 5, 2), (0, 16, 1)),
    'unsloth_lora_qkv': ((0, 5, 2), (0, 16, 1)),
    'unsloth_rms_norm': ((0, 5, 2), (0, 16, 1)),
    'unsloth_rope': ((0, 5, 2), (0, 16, 1)),
}


text = version_text
COVERED = CoveredReleases("Axolotl", OLDEST, NEWEST, "tables cover", "whether that release does this",
                          "check the setting against that release's schema, or pass --axolotl-version with the "
                          "release that runs")
covered = COVERED.covers
uncovered = COVERED.uncovered


@dataclass(frozen=True, slots=True)
class Gate:
    """Whether a check applies to a file, and what its findings say about the release."""

    applies: bool
    note: str = ""
    unknown: UnknownContext | None = None
    # the verdict holds from a release on, and no release was found: the release premise decides it
    # (premises.py: an info, unless the repository installs Axolotl without a version, the newest)
    release_dependent: bool = False

    def apply(self, finding):
        """The finding, saying which release judged it (an info when the release is not covered)."""
        if self.unknown is not None:
            return dataclasses.replace(finding, message=f"{finding.message} ({self.note})", severity="info",
                                       unknown_context=self.unknown)
        if self.release_dependent:
            finding = dataclasses.replace(finding, release_dependent=True)
        return dataclasses.replace(finding, message=f"{finding.message} ({self.note})") if self.note else finding

    def all(self, findings: Iterable) -> Iterator:
        if self.applies:
            for finding in findings:
                yield self.apply(finding)


def gate(release: Release, check: str) -> Gate:
    """The gate of `check` (a key of CHECKS) for a file judged by `release`."""
    since = CHECKS[check].version
    if not covered(release):
        return Gate(True, f"from axolotl {text(since)}", uncovered(release))
    if release.version is not None:
        if tuple(release.version) < since:
            return Gate(False)
        return Gate(True, f"judged by {release.text()}")
    if since <= OLDEST:
        return Gate(True)  # every release does it: nothing to say
    return Gate(True, f"from axolotl {text(since)}; judged by the newest, {text(NEWEST)}", release_dependent=True)


def known_key(key: str, version: Version) -> bool | None:
    """Whether the schema of Axolotl `version` has the top-level `key`: True / False from the
    tables, None when the tables do not say (a key no release of the tables had)."""
    version = tuple(version)
    if key in REMOVED:
        first, last = REMOVED[key]
        return first <= version <= last
    if key in ADDED_IN:
        return version >= ADDED_IN[key]
    return None
