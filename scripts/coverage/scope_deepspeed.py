"""DeepSpeed 0.19.8: the code that validates a ds_config, and the engine's checks during `initialize`.

Included (what a ds_config and the `deepspeed.initialize` call that hands it over decide):

- `runtime/config.py` whole: `DeepSpeedConfig` (batch arithmetic, `_do_error_check`, removed keys)
  and the `get_*` readers of single keys it calls;
- the pydantic config models DeepSpeedConfig builds: `runtime/zero/config.py`,
  `runtime/zero/offload_config.py`, `runtime/precision_config.py`, `runtime/config_utils.py`
  (deprecated-field handling, duplicate keys), `monitor/config.py`, `comm/config.py`,
  `runtime/activation_checkpointing/config.py`, `runtime/swap_tensor/aio_config.py`,
  `runtime/model_checkpointing/config.py` (the last two: the `aio` and `checkpoint` sections);
- `runtime/lr_schedules.py`: the parameter checks of the schedulers a `scheduler` block builds
  (constructors, `_initialize_cycle`, `_format_param`, `get_torch_optimizer`); `get_last_lr`'s
  "call step() first" asserts guard the scheduler's own state and are left out;
- `runtime/engine.py`: the functions `DeepSpeedEngine.__init__` runs on the config:
  `_configure_with_arguments`, `_do_args_sanity_check`, `_do_sanity_check`,
  `_assert_valid_mixed_precision_config`, `_do_optimizer_sanity_check`, `_configure_optimizer`,
  `_configure_basic_optimizer`, `_configure_zero_optimizer`, `_configure_lr_scheduler`,
  `_scheduler_from_config`, `_check_for_duplicates`;
- `__init__.py`'s `initialize` (the arguments and config it is handed).

Left out: the engine's training, checkpoint, compile, offload_states, AutoTP/AutoEP and MoE code
(asserts on tensors, checkpoints on disk, the model's modules: not the configuration); the
configs of features shardshift's ds_config reader does not model and no setup in the wild folder
uses (AutoEP `expert_parallel`, AutoTP, ZenFlow, data efficiency / curriculum, autotuning,
inference v2 ragged): a later pass can widen the scope file by file.
"""

DISTRIBUTION = "deepspeed"

ENGINE = [
    "DeepSpeedEngine._configure_with_arguments",
    "DeepSpeedEngine._do_args_sanity_check",
    "DeepSpeedEngine._do_sanity_check",
    "DeepSpeedEngine._assert_valid_mixed_precision_config",
    "DeepSpeedEngine._do_optimizer_sanity_check",
    "DeepSpeedEngine._configure_optimizer",
    "DeepSpeedEngine._configure_basic_optimizer",
    "DeepSpeedEngine._configure_zero_optimizer",
    "DeepSpeedEngine._configure_lr_scheduler",
    "DeepSpeedEngine._scheduler_from_config",
    "DeepSpeedEngine._check_for_duplicates",
]

FILES = {
    "deepspeed/runtime/config.py": None,
    "deepspeed/runtime/zero/config.py": None,
    "deepspeed/runtime/zero/offload_config.py": None,
    "deepspeed/runtime/precision_config.py": None,
    "deepspeed/runtime/config_utils.py": None,
    "deepspeed/monitor/config.py": None,
    "deepspeed/comm/config.py": None,
    "deepspeed/runtime/activation_checkpointing/config.py": None,
    "deepspeed/runtime/swap_tensor/aio_config.py": None,
    "deepspeed/runtime/model_checkpointing/config.py": None,
    "deepspeed/runtime/lr_schedules.py": ["get_torch_optimizer", "_format_param", "LRRangeTest.__init__",
                                          "OneCycle._initialize_cycle", "WarmupLR.__init__",
                                          "WarmupCosineLR.__init__"],
    "deepspeed/runtime/engine.py": ENGINE,
    "deepspeed/__init__.py": ["initialize"],
}


# Functions beyond the configuration code above that scripts/coverage/callgraph.py reaches from
# `initialize` and the engine's first forward, backward and step (issue 33's denominator), each with a
# check site: judged site by site in data/coverage/deepspeed.tsv (read from 0.19.8's source). Many are
# reached only because calls resolve by name; their rows say so.
REACHED: dict[str, list[str]] = {
    'deepspeed/__init__.py': ['_report_per_head_tagging', 'resolve_per_head_muon_after_sharding'],
    'deepspeed/accelerator/abstract_accelerator.py': ['DeepSpeedAccelerator._require_host_device'],
    'deepspeed/accelerator/hpu_accelerator.py': ['HPU_Accelerator.__init__'],
    'deepspeed/accelerator/mps_accelerator.py': ['MPS_Accelerator.__init__'],
    'deepspeed/accelerator/real_accelerator.py': ['_validate_accelerator', 'get_accelerator'],
    'deepspeed/autotuning/config.py': ['DeepSpeedAutotuningConfig._initialize'],
    'deepspeed/checkpoint/affine.py': ['AffinePiece.__init__', 'ParamAffineMap._validate_destinations',
                                       'ParamAffineMap.validate'],
    'deepspeed/checkpoint/autoep_affine.py': ['_positive_int', 'autoep_experts_for_rank',
                                              'autoep_placement_to_affine_map',
                                              'legacy_uniform_autoep_placement_descriptor',
                                              'validate_autoep_placement_descriptor'],
    'deepspeed/checkpoint/reshape_3d_utils.py': ['model_3d_desc.reshape'],
    'deepspeed/checkpoint/reshape_meg_2d.py': ['meg_2d_parallel_map._validate_indices',
                                               'meg_2d_parallel_map.add_data', 'reshape_meg_2d_parallel'],
    'deepspeed/checkpoint/reshape_utils.py': ['partition_data'],
    'deepspeed/comm/comm.py': ['init_distributed', 'mpi_discovery'],
    'deepspeed/compile/input_storage.py': ['InputStorage.get'],
    'deepspeed/inference/config.py': ['DeepSpeedInferenceConfig.has_triton',
                                      'DeepSpeedInferenceConfig.validate_dtype', 'DtypeEnum.from_str'],
    'deepspeed/inference/v2/inference_parameter.py': ['InferenceParameter.initialize'],
    'deepspeed/inference/v2/model_implementations/inference_model_base.py': [
                                                                             'DSInferenceModelBase.get_kv_requirements'],
    'deepspeed/inference/v2/model_implementations/inference_policy_base.py': ['ContainerMap.validate'],
    'deepspeed/linear/quantization.py': ['QuantizedParameter._ensure_quantized'],
    'deepspeed/module_inject/auto_ep.py': ['AutoEP._raise_no_moe_layers_detected', 'AutoEP.ep_parser',
                                           '_as_finite_float', '_infer_hidden_and_ffn_size',
                                           '_raise_if_duplicate_moe_specs',
                                           '_resolve_e_score_correction_bias_path', '_resolve_expert_activation'],
    'deepspeed/module_inject/auto_ep_config.py': ['validate_autoep_config', 'validate_autoep_post_detection'],
    'deepspeed/module_inject/auto_ep_folding.py': ['_require_positive', 'build_folding_spec',
                                                   'validate_folding_global'],
    'deepspeed/module_inject/auto_ep_layer.py': ['AutoEPMoELayer.__init__',
                                                 'AutoEPMoELayer.set_deepspeed_parallelism',
                                                 '_copy_parameter_data'],
    'deepspeed/module_inject/auto_ep_presets/base.py': ['AutoEPPresetAdapter._validate_hf_model_type',
                                                        'AutoEPPresetAdapter._validate_transformers_version',
                                                        '_raise_unsupported_load_balance_coeff'],
    'deepspeed/module_inject/auto_ep_presets/registry.py': ['get_preset', 'get_preset_adapter'],
    'deepspeed/module_inject/auto_tp.py': ['AutoTP._create_column_parallel_layer',
                                           'AutoTP._create_row_parallel_layer', 'AutoTP._replace_module',
                                           'AutoTP._replace_vocab_parallel_lm_head',
                                           'AutoTP._replace_with_config',
                                           'AutoTP._resolve_vocab_parallel_lm_head',
                                           'AutoTP._validate_row_parallel_head_ties',
                                           'AutoTP._validate_vocab_parallel_layer', 'AutoTP.supported',
                                           'AutoTP.tp_parser', 'ReplaceWithTensorSlicing.copy',
                                           'ReplaceWithTensorSlicing.merge_assert'],
    'deepspeed/module_inject/autotp_config.py': ['TPLayerSpec._validate_shape_format'],
    'deepspeed/module_inject/containers/base.py': ['BaseTransformerContainer.create_ds_model_config'],
    'deepspeed/module_inject/containers/base_moe.py': ['BaseTransformerMoEContainer.create_ds_model_config'],
    'deepspeed/module_inject/containers/features/hybrid_engine.py': ['HybridEngineContainer.set_lora_params'],
    'deepspeed/module_inject/layers.py': ['HiddenParallelEmbedding.validate_embedding',
                                          'SubParamLinearLayer.__init__', 'TensorParallel_Layer.config_tp_params',
                                          'VocabParallelEmbedding.validate_embedding',
                                          'VocabParallelLinear.__init__', '_infer_subparam_logical_shapes',
                                          'fused_LinearLayer.__init__'],
    'deepspeed/module_inject/load_checkpoint.py': [
                                                   'load_model_with_checkpoint.load_transformer_layer.load_parameters'],
    'deepspeed/module_inject/replace_module.py': ['_replace_module', 'replace_module',
                                                  'replace_transformer_layer'],
    'deepspeed/module_inject/tp_plan_converter.py': ['TPPlanConverter.convert'],
    'deepspeed/module_inject/tp_shard.py': ['get_shard_size', 'get_shard_size_list'],
    'deepspeed/module_inject/utils.py': ['policy_to_ds_container'],
    'deepspeed/moe/ep_experts.py': ['GroupedExperts.__init__', 'get_expert_activation'],
    'deepspeed/moe/ep_repack.py': ['_get_expert_weight', '_repack_fused_3d', '_repack_module_list',
                                   '_repack_module_list_requires_grad_flags', '_require_consistent_dtype_device',
                                   '_require_consistent_requires_grad', 'repack_expert_requires_grad_flags',
                                   'repack_expert_source_params', 'repack_expert_weights'],
    'deepspeed/moe/sharded_moe.py': ['TopKGate._set_ep_group'],
    'deepspeed/moe/utils.py': ['configure_moe_param_groups',
                               'split_params_into_different_moe_groups_for_optimizer'],
    'deepspeed/monitor/utils.py': ['check_comet_availability', 'check_tb_availability',
                                   'check_wandb_availability'],
    'deepspeed/ops/adagrad/cpu_adagrad.py': ['DeepSpeedCPUAdagrad.__init__'],
    'deepspeed/ops/adam/zenflow_torch_adam.py': ['adamw'],
    'deepspeed/ops/lamb/fused_lamb.py': ['FusedLamb.__init__'],
    'deepspeed/ops/lion/cpu_lion.py': ['DeepSpeedCPULion.__init__'],
    'deepspeed/ops/op_builder/npu/quantizer.py': ['NPUQuantizer._as_groups', 'NPUQuantizer.quantized_reduction',
                                                  'NPUQuantizer.swizzle_quant'],
    'deepspeed/ops/op_builder/supa/quantizer.py': ['SUPAQuantizer._op'],
    'deepspeed/runtime/activation_checkpointing/checkpointing.py': ['CudaRNGStatesTracker.add'],
    'deepspeed/runtime/bf16_optimizer.py': ['BF16_Optimizer.__init__', 'BF16_Optimizer._configure_moe_settings',
                                            'BF16_Optimizer._split_flat_tensor', 'BF16_Optimizer._update_hp_grad',
                                            'BF16_Optimizer.accumulate_hp_grads_and_remove_lp'],
    'deepspeed/runtime/checkpoint_engine/datastates_checkpoint_engine.py': ['DataStatesCheckpointEngine.__init__'],
    'deepspeed/runtime/comm/coalesced_collectives.py': ['all_to_all_quant_reduce'],
    'deepspeed/runtime/data_pipeline/config.py': ['get_curriculum_learning', 'get_dynamic_batching'],
    'deepspeed/runtime/data_pipeline/curriculum_scheduler.py': ['CurriculumScheduler.__init__'],
    'deepspeed/runtime/data_pipeline/data_routing/scheduler.py': ['BaseScheduler.get_value',
                                                                  'RandomLTDScheduler.__init__'],
    'deepspeed/runtime/data_pipeline/data_sampling/data_sampler.py': ['DeepSpeedDataSampler.__init__'],
    'deepspeed/runtime/engine.py': ['DeepSpeedEngine._apply_autotp_partitioning',
                                    'DeepSpeedEngine._backward_post_hook', 'DeepSpeedEngine._backward_prologue',
                                    'DeepSpeedEngine._commit_decoupled_checkpoint',
                                    'DeepSpeedEngine._configure_expert_parallel',
                                    'DeepSpeedEngine._configure_tensor_parallel_states.check_dataloader_inputs_same_across_ranks.broadcast_and_check',
                                    'DeepSpeedEngine._muon_param_groups',
                                    'DeepSpeedEngine._optimized_linear_offload_setup',
                                    'DeepSpeedEngine._partition_autoep_zero3_experts',
                                    'DeepSpeedEngine._resolve_zero3_param_placement',
                                    'DeepSpeedEngine._validate_zero3_moe_compatibility',
                                    'DeepSpeedEngine.backward', 'DeepSpeedEngine.buffered_allreduce_fallback',
                                    'DeepSpeedEngine.deepspeed_io', 'DeepSpeedEngine.get_optimizer_configuration',
                                    'DeepSpeedEngine.scale', 'DeepSpeedEngine.set_gradient_accumulation_boundary',
                                    'DeepSpeedEngine.sparse_all_gather', 'DeepSpeedEngine.step',
                                    '_remap_client_optimizer_after_module_replacement',
                                    '_resolve_replacement_param_groups', 'split_half_float_double_sparse'],
    'deepspeed/runtime/fp16/fused_optimizer.py': ['FP16_Optimizer.__init__'],
    'deepspeed/runtime/fp16/unfused_optimizer.py': ['FP16_UnfusedOptimizer.__init__'],
    'deepspeed/runtime/model_checkpointing/data_parallel_writer_factory.py': [
                                                                              'DataParallelWriterFactory._get_expert_data_parallel_config',
                                                                              'DataParallelWriterFactory._get_expert_parallel_write_for_2d',
                                                                              'DataParallelWriterFactory._get_parallel_write_for_3d._expand_resources',
                                                                              'DataParallelWriterFactory._get_parallel_write_for_3d._get_tensor_slice_resources'],
    'deepspeed/runtime/pipe/topology.py': ['ProcessTopology.get_coord', 'ProcessTopology.get_rank'],
    'deepspeed/runtime/sparse_tensor.py': ['SparseTensor.__init__', 'SparseTensor.add'],
    'deepspeed/runtime/swap_tensor/async_swapper.py': ['AsyncTensorSwapper._swap_out_tensor',
                                                       'AsyncTensorSwapper.add_buffers'],
    'deepspeed/runtime/swap_tensor/optimizer_utils.py': ['OptimizerSwapper.is_swappable_tensor'],
    'deepspeed/runtime/swap_tensor/partitioned_param_swapper.py': [
                                                                   'AsyncPartitionedParameterSwapper.remove_partition_and_release_buffers',
                                                                   'AsyncPartitionedParameterSwapper.swap_in'],
    'deepspeed/runtime/swap_tensor/utils.py': ['SwapBufferManager.allocate', 'SwapBufferPool.swap_in'],
    'deepspeed/runtime/tensor_parallel/init_utils.py': ['load_ds_config', 'merge_tp_model_init_into_config'],
    'deepspeed/runtime/torch_autocast.py': ['_validate_auto_cast_settings', 'init_autocast_params'],
    'deepspeed/runtime/utils.py': ['get_only_unique_item'],
    'deepspeed/runtime/zenflow/engine.py': ['configure_zenflow'],
    'deepspeed/runtime/zenflow/zenflow_stage_1_and_2.py': ['ZenFlowZeroOptimizer._configure_zenflow'],
    'deepspeed/runtime/zero/muon/muon_optimizer.py': ['MuonWithAuxAdam.__init__'],
    'deepspeed/runtime/zero/muon/original_muon.py': ['MuonWithAuxAdam.__init__', '_per_head_orthogonalize',
                                                     'zeropower_via_gram_newtonschulz',
                                                     'zeropower_via_newtonschulz5'],
    'deepspeed/runtime/zero/partition_parameters.py': ['AllGatherCoalescedHandle.__init__',
                                                       'AllGatherHandle.__init__',
                                                       'AllReduceCoalescedHandle.__init__', 'Init.__init__',
                                                       'Init._convert_to_deepspeed_param._all_gather_dtype',
                                                       'Init._convert_to_deepspeed_param.all_gather_coalesced',
                                                       'Init._ensure_availability_of_partitioned_params',
                                                       'Init._reduce_scatter_gradients',
                                                       'Init._validate_remote_device', '_no_gather_coalesced',
                                                       'register_external_parameter',
                                                       'unregister_external_parameter'],
    'deepspeed/runtime/zero/partitioned_param_coordinator.py': [
                                                                'PartitionedParameterCoordinator.__params_to_release',
                                                                'PartitionedParameterCoordinator._fetch_sub_module_impl',
                                                                'PartitionedParameterCoordinator._invalidate_trace',
                                                                'PartitionedParameterCoordinator.record_module',
                                                                'PartitionedParameterCoordinator.record_parameters',
                                                                'PartitionedParameterCoordinator.release_sub_module'],
    'deepspeed/runtime/zero/stage3.py': ['DeepSpeedZeroOptimizer_Stage3.__reduce_and_partition_ipg_grads',
                                         'DeepSpeedZeroOptimizer_Stage3._assert_same_partition_group',
                                         'DeepSpeedZeroOptimizer_Stage3._autoep_expert_parallel_group'],
    'deepspeed/runtime/zero/stage_1_and_2.py': ['DeepSpeedZeroOptimizer._get_flat_partition_unpadded',
                                                'DeepSpeedZeroOptimizer._get_param_group_idx',
                                                'DeepSpeedZeroOptimizer.async_inplace_copy_grad_to_fp32_buffer_from_gpu',
                                                'DeepSpeedZeroOptimizer.average_tensor',
                                                'DeepSpeedZeroOptimizer.get_flat_partition',
                                                'DeepSpeedZeroOptimizer.reduce_independent_p_g_buckets_and_remove_grads',
                                                'DeepSpeedZeroOptimizer.reduce_ipg_grads'],
    'deepspeed/runtime/zero/utils.py': ['assert_ints_same_as_other_ranks', 'assert_lst_len_same_as_other_ranks'],
    'deepspeed/sequence/cross_entropy.py': ['_set_vocab_parallel_loss'],
    'deepspeed/utils/logging.py': ['LoggerFactory.create_logger', 'get_log_level_from_string', 'should_log_le'],
    'deepspeed/utils/pin_memory.py': ['NativePinnedMemory.__init__',
                                      'NativePinnedMemory._device_registration_enabled'],
    'deepspeed/utils/tensor_fragment.py': ['get_hp_fragment_mapping'],
    'deepspeed/utils/timer.py': ['SynchronizedWallClockTimer.Timer.start',
                                 'SynchronizedWallClockTimer.Timer.stop', 'SynchronizedWallClockTimer.get_mean',
                                 'SynchronizedWallClockTimer.log', 'ThroughputTimer.__init__', 'trim_mean'],
    'deepspeed/utils/torch.py': ['required_torch_version'],
    'deepspeed/utils/z3_leaf_module.py': ['_do_set_z3_leaf_modules', 'set_z3_leaf_modules_by_name',
                                          'set_z3_leaf_modules_by_suffix'],
}
for _file, _functions in REACHED.items():
    if _file not in FILES:
        FILES[_file] = list(_functions)
    elif FILES[_file] is not None:
        FILES[_file] = FILES[_file] + [f for f in _functions if f not in FILES[_file]]


# Reached sites judged decidable from the files, with no rule yet: kept out of the map until one exists
# (sites.py leaves them out), each with what a rule would check.
NO_RULE_YET = {
    'deepspeed/runtime/engine.py:DeepSpeedEngine._validate_zero3_moe_compatibility:3':
        'expert_parallel.enabled, zero_optimization.stage 3 and sequence_parallel_size > 1 (with '
        'data_parallel_size, building the mesh), on a model with MoE layers AutoEP detects',
    'deepspeed/module_inject/auto_ep_folding.py:validate_folding_global:3':
        'expert_parallel.enabled true, tensor_parallel.autotp_size > 1 and sequence_parallel_size > 1 with '
        'data_parallel_size set (DeepSpeed\'s mesh); an mpu\'s SP size is runtime',
    'deepspeed/module_inject/auto_ep_layer.py:AutoEPMoELayer.set_deepspeed_parallelism:2':
        'expert_parallel.enabled true, comm_backend "deepep", autoep_size > 1 and tensor_parallel.autotp_size'
        ' > 1 (refused in initialize after MoE layers are replaced)',
    'deepspeed/runtime/bf16_optimizer.py:BF16_Optimizer.__init__:1':
        'optimizer.type "muon" with bf16.enabled and a PipelineModule model (its mpu is always passed), no '
        'ZeRO or stage 1 with data_types.grad_accum_dtype fp32; elsewhere an mpu/MoE layers decide',
}
