"""The check sites of Megatron-LM's argument path (megatron-core 0.20.0, the checkout in
../shared/oracles/megatron-lm: Megatron-LM's training code is on no package index) that judge
configuration.

Included, in the order `pretrain_gpt.py` meets them before it builds anything:

- `training/arguments.py`, every function: `parse_args` (argparse's type and choice helpers of the
  file: `tuple_type`, `moe_freq_type`, ...), `validate_args` (the flags against each other and the
  world size, read from `WORLD_SIZE`), and what it calls in the file;
- what `validate_args` calls elsewhere: `core/transformer/cuda_graph_config.py` (the cuda-graph
  scope and module names), `core/transformer/pipeline_parallel_layer_layout.py` (a
  `--pipeline-model-parallel-layout` string), `core/models/hybrid/hybrid_layer_allocation.py`
  (a hybrid layer pattern), `training/determinism.py` (`--deterministic-mode`);
- `training/argument_utils.py` `core_transformer_config_from_args`, then the config dataclasses it
  builds: `core/transformer/transformer_config.py` (`TransformerConfig.__post_init__`: heads, query
  groups, the pipeline split, MoE, recomputation, fp8/fp4, ...) and `core/model_parallel_config.py`.

Beyond these, `pretrain` goes on to `initialize_model_parallel` (the degrees against the process
group), the microbatch calculator, the model, optimizer, checkpoint and data builders and the
training loop: REACHED below lists the functions holding a check that the call graph reaches
(scripts/coverage/callgraph.py, entry `pretrain`), so that the map judges every site a run reaches.
"""

from pathlib import Path

SOURCE = Path(__file__).resolve().parents[3] / "shared" / "oracles" / "megatron-lm"
RELEASE = "0.20.0"

FILES = {
    "megatron/training/arguments.py": None,
    "megatron/core/transformer/cuda_graph_config.py": None,
    "megatron/core/transformer/pipeline_parallel_layer_layout.py": None,
    "megatron/core/models/hybrid/hybrid_layer_allocation.py": None,
    "megatron/training/determinism.py": None,
    "megatron/training/argument_utils.py": ["core_transformer_config_from_args"],
    "megatron/core/transformer/transformer_config.py": None,
    "megatron/core/model_parallel_config.py": None,
}

# What `pretrain` reaches beyond the argument path (scripts/coverage/callgraph.py, entry `pretrain`; by name, so an
# over-approximation): the process groups, the microbatch calculator, model, optimizer, checkpoint and data builders
# and the training loop, file -> the functions reached that hold a check. Regenerate with
# `python scripts/coverage/callgraph.py megatron -v` when the checkout changes.
REACHED = {
    'megatron/core/config_logger.py': ['log_config_to_disk'],
    'megatron/core/datasets/data_schedule.py': ['HybridCPDataLoaderWrapper.__init__'],
    'megatron/core/datasets/indexed_dataset.py': ['DType.size'],
    'megatron/core/datasets/object_storage_utils.py': ['_s3_object_exists', 'dataset_exists', 'parse_s3_path'],
    'megatron/core/datasets/utils.py': ['get_blend_from_list'],
    'megatron/core/dist_checkpointing/dict_utils.py': ['diff', 'extract_matching_values', 'merge'],
    'megatron/core/dist_checkpointing/exchange_utils.py': ['exchange_by_distribution', 'exchange_loaded_objects_gather_object'],
    'megatron/core/dist_checkpointing/gpt_checkpoint_interop.py': ['_retarget_explicit_key_to_gpt_checkpoint', 'gpt_compatible_layer_maps', 'retarget_sharded_state_dict_to_gpt_checkpoint._retarget'],
    'megatron/core/dist_checkpointing/mapping.py': ['ShardedObject.validate_metadata_integrity', 'ShardedTensor.local_chunk_offset_in_global', 'ShardedTensor.narrow', 'ShardedTensor.narrow._safe_div', 'apply_factory_merges'],
    'megatron/core/dist_checkpointing/strategies/async_utils.py': ['AsyncCaller.is_current_async_call_done', 'AsyncCaller.schedule_async_call', 'AsyncCallsQueue.maybe_finalize_async_calls', 'AsyncRequest.add_finalize_fn', 'AsyncRequest.execute_sync'],
    'megatron/core/dist_checkpointing/strategies/checkpointable.py': ['CheckpointableShardedTensor.from_sh_ten', 'LocalShardsContainer.__init__'],
    'megatron/core/dist_checkpointing/strategies/filesystem_async.py': ['FileSystemWriterAsync.__init__', 'FileSystemWriterAsync.prepare_write_data', 'FileSystemWriterAsync.retrieve_write_results', 'FileSystemWriterAsync.write_preloaded_data', 'FileSystemWriterAsync.write_preloaded_data_multithread.check_local_output', '_item_size', '_process_memory'],
    'megatron/core/dist_checkpointing/strategies/fully_parallel.py': ['FullyParallelLoadStrategyWrapper.load', 'distribute_main_replicas_with_precomputed_distribution'],
    'megatron/core/dist_checkpointing/strategies/state_dict_saver.py': ['save_state_dict_async_finalize', 'save_state_dict_async_plan', 'save_state_dict_async_plan.local_step'],
    'megatron/core/dist_checkpointing/strategies/torch.py': ['MCoreLoadPlanner._validate_global_shapes', 'MCoreSavePlanner.__init__', 'MCoreSavePlanner.create_decentralized_global_plan', 'MCoreSavePlanner.create_local_plan', 'TorchDistSaveShardedStrategy.async_save', '_replace_sharded_keys_with_state_dict_keys', '_replace_state_dict_keys_with_sharded_keys', '_restore_dict_types', '_unwrap_pyt_sharded_tensor', 'get_async_strategy', 'mcore_to_pyt_state_dict._mcore_to_dcp_compatible_tensor', 'mcore_to_pyt_state_dict._mcore_to_torch_sharded_object'],
    'megatron/core/dist_checkpointing/tensor_aware_state_dict.py': ['MCoreTensorAwareStateDict._insert_sharded_data', 'MCoreTensorAwareStateDict._validate_params', 'MCoreTensorAwareStateDict.from_state_dict', 'MCoreTensorAwareStateDict.to_state_dict'],
    'megatron/core/dist_checkpointing/validation.py': ['_validate_sharding_for_key', 'maybe_report_missing_and_unexpected_keys', 'parse_strict_flag', 'validate_integrity_and_strict_load', 'validate_sharding_integrity'],
    'megatron/core/distributed/distributed_data_parallel.py': ['DistributedDataParallel.disable_forward_pre_hook', 'DistributedDataParallel.enable_forward_pre_hook', 'DistributedDataParallel.reset_param_sync_dispatch_state'],
    'megatron/core/distributed/distributed_data_parallel_config.py': ['DistributedDataParallelConfig.__post_init__'],
    'megatron/core/distributed/fsdp/src/megatron_fsdp/distributed_data_parallel_config.py': ['DistributedDataParallelConfig.__post_init__'],
    'megatron/core/distributed/fsdp/src/megatron_fsdp/experimental/dbuffer.py': ['DBuffer.__init__', 'DBuffer._create_or_validate_out', 'DBuffer.from_local', 'DBuffer.reduce_scatter', 'DBuffer.scatter', '_validate_placements'],
    'megatron/core/distributed/fsdp/src/megatron_fsdp/experimental/indexed_order.py': ['IndexedOrder.append'],
    'megatron/core/distributed/fsdp/src/megatron_fsdp/experimental/layout.py': ['GlobalLayout.build', 'GlobalLayout.get_local_range', 'non_leading_numel'],
    'megatron/core/distributed/fsdp/src/megatron_fsdp/megatron_fsdp.py': ['MegatronFSDP._reestablish_shared_weights', 'MegatronFSDP._replace_param_with_distributed_if_needed', 'MegatronFSDP.synchronize_gradient_reduce'],
    'megatron/core/distributed/fsdp/src/megatron_fsdp/param_and_grad_buffer.py': ['DataParallelBuffer.init_data', 'ParamAndGradBuffer.all_reduce_gradients', 'ParamAndGradBuffer.manual_buffer_registration', 'ParamAndGradBuffer.reduce_scatter_gradients', '_check_nan_in_grad'],
    'megatron/core/distributed/fsdp/src/megatron_fsdp/uneven_dtensor.py': ['gather_and_compute_chunk_metadata', 'get_unflattened_state_dict'],
    'megatron/core/distributed/fsdp/src/megatron_fsdp/utils.py': ['initialize_rng_tracker.CudaRNGStatesTracker.add', 'initialize_rng_tracker.CudaRNGStatesTracker.fork'],
    'megatron/core/distributed/param_and_grad_buffer.py': ['_ParamAndGradBucketGroup.__init__', '_ParamAndGradBucketGroup.finish_param_sync', '_ParamAndGradBucketGroup.start_param_sync', 'partition_buckets', 'shard_buffer'],
    'megatron/core/extensions/transformer_engine.py': ['TEDelayedScaling.__init__', 'TEQuantizationParams.parse_from_config', 'TEQuantizationRecipe.parse_from_config'],
    'megatron/core/fault_injector.py': ['_require_nvidia_resiliency_ext', '_require_rng', 'get_fault', 'get_fault_delay', 'get_fault_ranks'],
    'megatron/core/fp4_utils.py': ['get_fp4_recipe'],
    'megatron/core/fp8_utils.py': ['_get_custom_recipe', '_resolve_callable_from_python_import_path', 'copy_tensor_to_quantized_param', 'get_fp8_context', 'get_fp8_recipe', 'get_grouped_quantized_members'],
    'megatron/core/models/audio/nemo_transformer_encoder.py': ['MultiHeadAttentionWithSDPA.__init__', 'MultiHeadAttentionWithTE.__init__', 'TransformerBlock.__init__', '_causal_window_size', '_get_te_dot_product_attention'],
    'megatron/core/models/common/embeddings/rope_utils.py': ['get_pos_emb_on_this_cp_rank'],
    'megatron/core/models/common/embeddings/yarn_rotary_pos_embedding.py': ['YarnRotaryEmbedding.get_emb'],
    'megatron/core/models/common/language_module/language_module.py': ['LanguageModule.setup_embeddings_and_output_layer', 'LanguageModule.shared_embedding_or_output_weight'],
    'megatron/core/models/gpt/experimental_attention_variant_module_specs.py': ['_get_backend_spec_provider', '_validate_dsa_index_share_pipeline_split', 'get_dsa_module_spec_for_backend', 'get_experimental_attention_variant_module_spec', 'get_linear_attention_pattern', 'get_moe_layer_pattern'],
    'megatron/core/models/gpt/gpt_layer_specs.py': ['get_gpt_decoder_block_spec', 'get_gpt_decoder_layer_specs', 'get_gpt_layer_local_submodules', 'get_gpt_layer_with_inference_submodules', 'get_gpt_layer_with_transformer_engine_submodules', 'get_gpt_mtp_block_spec_for_backend', 'get_mlp_module_spec', 'get_mlp_module_spec_for_backend'],
    'megatron/core/models/gpt/gpt_model.py': ['GPTModel.__init__'],
    'megatron/core/models/gpt/moe_module_specs.py': ['get_moe_module_spec_for_backend'],
    'megatron/core/models/hybrid/hybrid_model.py': ['HybridModel.__init__', '_hybrid_logging_pg_kwargs'],
    'megatron/core/models/mimo/optimizer.py': ['get_mimo_optimizer'],
    'megatron/core/models/mimo/submodules/audio.py': ['AudioModalitySubmodules.decode'],
    'megatron/core/models/mimo/submodules/base.py': ['ModalitySubmodules.encode'],
    'megatron/core/models/mimo/submodules/vision.py': ['VisionModalitySubmodules.decode'],
    'megatron/core/msc_utils.py': ['_FeatureFlag.import_package'],
    'megatron/core/num_microbatches_calculator.py': ['ConstantNumMicroBatchesCalculator.__init__', 'NumMicroBatchesCalculator.get_current_global_batch_size', 'NumMicroBatchesCalculator.get_current_running_global_batch_size', 'StepBatchsizeNumMicroBatchesCalculator.__init__', 'StepBatchsizeNumMicroBatchesCalculator._parse_schedule', 'StepBatchsizeNumMicroBatchesCalculator._validate_schedule', 'StepBatchsizeNumMicroBatchesCalculator.update', '_build_num_microbatches_calculator', '_configure_global_num_microbatches_calculator'],
    'megatron/core/optimizer/__init__.py': ['_get_megatron_emerging_optimizer', '_get_megatron_optimizer_based_on_param_groups', '_get_param_groups', 'check_config_overrides_consistency', 'get_megatron_optimizer'],
    'megatron/core/optimizer/cpu_offloading/hybrid_optimizer.py': ['HybridDeviceOptimizer._sync_hdo_param_groups_to_sub_optimizers'],
    'megatron/core/optimizer/distrib_optimizer.py': ['DistributedOptimizer.__init__', 'DistributedOptimizer._build_model_and_main_param_groups', 'DistributedOptimizer._build_model_gbuf_range', 'DistributedOptimizer._build_model_param_gbuf_map', 'DistributedOptimizer._build_optimizer_group_ranges', 'DistributedOptimizer._copy_main_params_to_param_buffer', 'DistributedOptimizer._update_legacy_world_tensors', 'DistributedOptimizer.get_parameter_state_dp_zero', 'DistributedOptimizer.load_parameter_state_from_dp_zero', 'DistributedOptimizer.load_parameter_state_from_dp_zero_legacy', 'DistributedOptimizer.split_state_dict_if_needed'],
    'megatron/core/optimizer/fully_sharded_optimizer.py': ['FullyShardedOptimizer.__init__', 'FullyShardedOptimizer._validate_config'],
    'megatron/core/optimizer/grad_scaler.py': ['DynamicGradScaler.__init__', 'MegatronGradScaler.__init__'],
    'megatron/core/optimizer/layer_wise_optimizer.py': ['LayerWiseDistributedOptimizer.__init__', 'LayerWiseDistributedOptimizer._shard_params_from_layout'],
    'megatron/core/optimizer/optimizer.py': ['ChainedOptimizer.__init__', 'ChainedOptimizer.save_parameter_state', 'Float16OptimizerWithFloat16Params.__init__'],
    'megatron/core/optimizer/optimizer_config.py': ['OptimizerConfig.__post_init__'],
    'megatron/core/optimizer_param_scheduler.py': ['OptimizerParamScheduler.__init__', 'OptimizerParamScheduler.get_lr', 'OptimizerParamScheduler.get_wd', 'combine_param_group_overrides'],
    'megatron/core/parallel_state.py': ['RankGenerator.__init__', 'create_all_gather_groups', 'generate_masked_orthogonal_rank_groups.decompose', 'get_context_parallel_group', 'get_data_parallel_group', 'get_expert_data_parallel_group', 'get_expert_gtp_weight_remat_group', 'get_expert_model_parallel_group', 'get_expert_tensor_parallel_group', 'get_gtp_weight_remat_group', 'get_nccl_options', 'get_pipeline_model_parallel_group', 'get_tensor_model_parallel_group', 'update_pg_timeout'],
    'megatron/core/pipeline_parallel/fine_grained_activation_offload.py': ['PipelineOffloadManager.flush', 'PipelineOffloadManager.on_save_for_backward', 'PipelineOffloadManager.post_warmup_callback', 'debug_rank', 'print_offload_summary_table'],
    'megatron/core/pipeline_parallel/utils.py': ['is_vp_first_stage', 'is_vp_last_stage', 'set_ideal_affinity_for_current_gpu'],
    'megatron/core/post_training/modelopt/checkpointing.py': ['save_sharded_modelopt_state'],
    'megatron/core/post_training/modelopt/gpt/model_specs.py': ['get_gpt_modelopt_spec'],
    'megatron/core/process_groups_config.py': ['MultiModuleProcessGroupCollection.get_language_model_collection', 'ProcessGroupCollection.setup_process_groups_for_optimizer', 'ProcessGroupCollection.use_mpu_process_groups'],
    'megatron/core/rerun_state_machine.py': ['RerunErrorInjector.__init__', 'RerunStateMachine.__init__', 'RerunStateMachine._sanitize_data_iterators', 'RerunStateMachine.should_run_forward_backward', '_set_rerun_state_machine', 'get_rerun_state_machine'],
    'megatron/core/resharding/copy_services/nixl_copy_service.py': ['NixlCopyService.__init__'],
    'megatron/core/resharding/copy_services/nvshmem_copy_service.py': ['NVSHMEMCopyService.__init__'],
    'megatron/core/resharding/nvshmem_copy_service/core/gpu_resource_manager.py': ['GPUResourceManager.init'],
    'megatron/core/resharding/nvshmem_copy_service/core/kernel_launcher.py': ['KernelLauncher.load_kernels'],
    'megatron/core/resharding/nvshmem_copy_service/planning/gpu_execution_planner.py': ['GPUExecutionPlanner.create_gpu_plans'],
    'megatron/core/resharding/nvshmem_copy_service/planning/task_segmenter.py': ['TaskSegmenter.segment_receive_request', 'TaskSegmenter.segment_send_request'],
    'megatron/core/resharding/nvshmem_copy_service/service.py': ['RemoteCopyService.init', 'RemoteCopyService.schedule'],
    'megatron/core/resharding/planner.py': ['_build_descriptors_for_param', '_emit_lcm_block_ops', '_extract_module_metadata', '_iter_global_transfer_ops', '_plan_tp', '_tp_block_layout'],
    'megatron/core/resharding/refit.py': ['_unwrap_model_cores', 'get_or_create_service', 'swap_model_weights'],
    'megatron/core/resharding/transforms.py': ['MXFP8ReshardTransform.finalize_recv', 'MXFP8ReshardTransform.prepare_recv', 'ReshardTransform.finalize_recv', 'ReshardTransform.prepare_recv', 'ReshardTransform.prepare_send', '_scale_slice_from_data_slice'],
    'megatron/core/resharding/utils.py': ['_filter_by_ep_local_rank', '_get_rank_in_group', 'select_src_metadata_balanced'],
    'megatron/core/ssm/ops/mamba2/batch_invariant_decode.py': ['_masked_update_rows'],
    'megatron/core/ssm/triton_cache_manager.py': ['ParallelFileCacheManager.put'],
    'megatron/core/telemetry/span_groups.py': ['SpanGroup.resolve'],
    'megatron/core/tensor_parallel/generalized_tensor_parallelism.py': ['classify_gtp_chains', 'update_gtp_config'],
    'megatron/core/tensor_parallel/gtp_cuda_graphs.py': ['allocate_graph_wgrad_rings', 'preserve_gtp_prefetch_state', 'track_gtp_capture_comms'],
    'megatron/core/tensor_parallel/gtp_symmetric_memory.py': ['register_gtp_symm_pool'],
    'megatron/core/tensor_parallel/random.py': ['CudaRNGStatesTracker.add', 'CudaRNGStatesTracker.fork', 'get_all_rng_states', 'initialize_rng_tracker'],
    'megatron/core/timers.py': ['DummyTimer.active_time', 'Timer.start', 'Timer.stop', 'Timers.get_all_timers_string', 'Timers.write'],
    'megatron/core/tokenizers/text/text_tokenizer.py': ['MegatronTokenizerText.save_pretrained'],
    'megatron/core/transformer/cuda_graphs.py': ['ArgMetadata.zeros_like', 'CudaGraphManager.__init__', 'TECudaGraphHelper.__init__', 'TECudaGraphHelper._get_amax_reduction_group', 'TECudaGraphHelper._get_cuda_graph_input_data', 'TECudaGraphHelper._get_sample_arguments', 'TECudaGraphHelper._get_sample_arguments._get_layer_static_inputs', 'TECudaGraphHelper._start_capturing', 'TECudaGraphHelper.delete_cuda_graphs', '_CudaGraphRunner.create_bwd_graph', '_CudaGraphRunner.create_fwd_graph', '_CudagraphGlobalRecord._create_cudagraphs', '_check_supported_type', '_clone_nested_tensors'],
    'megatron/core/transformer/custom_layers/batch_invariant_kernels.py': ['enable_batch_invariant_mode'],
    'megatron/core/transformer/experimental_attention_variant/dsa.py': ['is_dsa_skip_topk_layer'],
    'megatron/core/transformer/fsdp_dtensor_checkpoint.py': ['get_expert_index_from_key', 'get_global_unique_param_name', 'handle_experts_in_state_dict.replace_expert_index_in_key', 'handle_fp8_extra_state_case', 'validate_fsdp_dtensor_model_load'],
    'megatron/core/transformer/heterogeneous/heterogeneous_config.py': ['HeterogeneousTransformerConfig.get_config_for_layer'],
    'megatron/core/transformer/mla_qk_norm_config.py': ['QKNormConfigResolver._dsa_linear_or_default', 'QKNormConfigResolver._non_fused_or_default', 'QKNormConfigResolver._raise_unused_q_norm', 'QKNormConfigResolver._reject_disabled_norm', 'QKNormConfigResolver._reject_explicit_norm_with_fused_linear', 'QKNormConfigResolver._require_linear', 'QKNormConfigResolver._resolve_disabled_qk_layernorm', 'QKNormConfigResolver._resolve_dsa_qk_layernorm', 'QKNormConfigResolver.resolve'],
    'megatron/core/transformer/module.py': ['Float16Module.__init__'],
    'megatron/core/transformer/moe/moe_logging.py': ['MoEMetricsTracker._count_moe_layers', 'MoEMetricsTracker.report'],
    'megatron/core/transformer/moe/moe_utils.py': ['MoECudaGraphTensorStore.set'],
    'megatron/core/transformer/multi_token_prediction.py': ['MultiTokenPredictionBlock.__init__', '_get_mtp_block_submodules', 'get_mtp_num_layers_to_build', 'mtp_on_this_rank'],
    'megatron/core/transformer/spec_utils.py': ['build_module', 'import_module'],
    'megatron/core/transformer/transformer_block.py': ['TransformerBlock.__init__', '_get_block_submodules', 'get_num_layers_to_build'],
    'megatron/core/transformer/transformer_layer.py': ['get_transformer_layer_offset'],
    'megatron/core/typed_torch.py': ['not_none'],
    'megatron/core/utils.py': ['WrappedTensor.unwrap', 'check_param_hashes_across_dp_replicas', 'get_attr_wrapped_model', 'get_batch_on_this_cp_rank', 'get_batch_on_this_tp_rank._broadcast_cu_seqlens', 'get_te_version', 'is_te_min_version', 'is_torch_min_version', 'log_on_each_pipeline_stage'],
    'megatron/training/activation_logging.py': ['ActivationLogger.register_activation_hooks', 'ActivationLogger.register_tpe_hooks', '_require_logger'],
    'megatron/training/async_utils.py': ['init_persistent_async_worker'],
    'megatron/training/checkpointing.py': ['_get_checkpoint_format', '_get_non_persistent_iteration', '_load_base_checkpoint', '_load_global_dist_base_checkpoint', '_load_non_persistent_base_checkpoint', '_maybe_setup_gpt_to_hybrid_load', 'check_checkpoint_args._compare', 'fix_query_key_value_ordering', 'load_checkpoint', 'maybe_save_dataloader_state', 'read_metadata', 'save_checkpoint', 'save_grads', 'set_checkpoint_version'],
    'megatron/training/datasets/data_samplers.py': ['MegatronFullValidationSampler.__init__', 'MegatronPretrainingRandomSampler.__init__', 'MegatronPretrainingSampler.__init__', 'build_pretraining_data_loader'],
    'megatron/training/dgrad_logging.py': ['DataGradLogger.register_hooks', 'disable_dgrad_logging', 'save_dgrads'],
    'megatron/training/dist_signal_handler.py': ['get_device'],
    'megatron/training/distillation/cached_logits_loss.py': ['StudentLogitsCapture.pop'],
    'megatron/training/distillation/logits_saver.py': ['LogitsSaverHooks.__init__', 'LogitsSaverHooks._process_single_microbatch'],
    'megatron/training/distillation/utils_logits.py': ['TarShardPrefetcher.schedule'],
    'megatron/training/global_vars.py': ['_ensure_var_is_initialized'],
    'megatron/training/initialize.py': ['_initialize_distributed', '_initialize_tp_communicators', '_set_random_seed', 'initialize_megatron'],
    'megatron/training/models/dist_utils.py': ['_ddp_wrap', 'prepare_existing_model_chunks_for_distributed_training', 'unimodal_build_distributed_models'],
    'megatron/training/models/gpt.py': ['GPTModelBuilder.build_model'],
    'megatron/training/models/hybrid.py': ['HybridModelBuilder.build_model'],
    'megatron/training/theoretical_memory_usage.py': ['compute_weight_and_optimizer_memory'],
    'megatron/training/training.py': ['_assert_param_gather_overlap_model', 'build_train_valid_test_data_iterators', 'build_train_valid_test_data_iterators._get_iterator', 'build_train_valid_test_data_loaders', 'cyclic_iter', 'evaluate', 'evaluate_and_print_results', 'get_model', 'get_optimizer_param_scheduler', 'get_start_time_from_progress_log', 'get_train_valid_test_num_samples', 'num_floating_point_operations.transformer_flops', 'post_training_step_callbacks', 'pretrain', 'setup_model_and_optimizer', 'setup_model_and_optimizer._build_model_wrapper', 'train', 'train_step', 'training_log', 'wrap_model_chunks_with_ddp'],
    'megatron/training/utils/common_utils.py': ['calc_dtensor_params_l2_norm', 'calc_params_l2_norm', 'get_blend_and_blend_per_split', 'is_last_rank'],
    'megatron/training/vocab_utils.py': ['_calculate_padded_vocab_size_cached'],
}
FILES.update(REACHED)

# Reached from the two entries the call graph cannot find from `pretrain` (scripts/coverage/callgraph.py):
# `mpu.initialize_model_parallel` (called through a module alias) and `set_global_variables`.
for _file, _functions in {
    "megatron/core/parallel_state.py": ["RankGenerator.get_gtp_ranks", "_set_global_memory_buffer",
                                        "create_hierarchical_groups", "create_hybrid_dp_cp_groups",
                                        "initialize_model_parallel"],
    "megatron/core/timers.py": ["Timers.__init__"],
    "megatron/core/tokenizers/megatron_tokenizer.py": ["MegatronTokenizer.from_pretrained"],
    "megatron/core/tokenizers/utils/build_tokenizer.py": ["build_tokenizer"],
    "megatron/training/global_vars.py": ["_ensure_var_is_not_initialized", "_set_wandb_writer",
                                         "set_global_variables"],
}.items():
    FILES[_file] = sorted(set(FILES.get(_file) or []) | set(_functions))
