"""Every error shardshift reports over ../shared/corpus/deepspeed, each with why it is a real
mistake in that file (issue 3). A new error, or one that disappears, fails the test: either the
rule changed (update the table with the justification) or it regressed.

The oracle test (test_deepspeed_oracle.py) checks the other direction: every corpus file that
DeepSpeed 0.19.8 rejects gets at least one error."""

from __future__ import annotations

import pytest

from shardshift.check import run_check
from shardshift.rules.base import Context

from conftest import CORPUS, needs_corpus

ONEBIT_REMOVED = ("a 1-bit optimizer (OneBitAdam, ZeroOneAdam, OneBitLamb): removed from DeepSpeed, so "
                  "deepspeed.initialize stops with 'not a supported DeepSpeed Optimizer' on the newest version")
MAX_GRAD_NORM = ("max_grad_norm inside optimizer.params: deepspeed.initialize raises ValueError when DeepSpeed "
                 "builds the optimizer; clipping belongs in top-level gradient_clipping")
OFFLOAD_PARAM_BELOW_3 = ("offload_param with ZeRO stage below 3: stages 0-2 never read it, so no parameter is "
                         "offloaded although the file asks for it")
AUTOTUNING_TEMPLATE = ("an autotuner template without any batch key: DeepSpeed asserts that train_batch_size or "
                       "train_micro_batch_size_per_gpu is given when the file is used as a config")
NO_BATCH = ("no train_batch_size and no train_micro_batch_size_per_gpu (not even \"auto\"): DeepSpeed asserts one "
            "of them at initialisation, and the Hugging Face integration fills only keys present as \"auto\"")
REDUCE_BUCKET_ZERO = "zero_optimization.reduce_bucket_size 0: DeepSpeed 0.19.8 requires it > 0 (ValidationError)"
# A section DeepSpeed removed (amp, compression_training, curriculum_learning, ...) is an error only where
# the release that reads the file is known: the corpus holds no pins, and the releases before the
# removal read these sections, so they are infos here (issue 30: where releases disagree, a pin is needed).
STRICT_UNKNOWN = ("an unknown key inside a strictly validated section (fp16, bf16, compile, tensor_parallel): "
                  "DeepSpeed's pydantic model rejects the file at launch")
TOP_LEVEL_TYPO = ("micro_batch_size_per_gpu at the top level: a misspelling of train_micro_batch_size_per_gpu that "
                  "DeepSpeed ignores, so the intended micro batch is never applied")

# (corpus file, code, pointer) -> why it is a real mistake
EXPECTED_ERRORS = {
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__curriculum_learning__ds_zero_stage_1_config_curriculum_fixed_linear.json', 'DS404', '/optimizer/params/max_grad_norm'): MAX_GRAD_NORM,
    ('BabyChouSr__parallel-llms__ds_config.json', 'DS101', '/micro_batch_size_per_gpu'): TOP_LEVEL_TYPO,
    ('CarperAI__trlx__examples__summarize_rlhf__configs__ds_config_trlx_gptj_summarize.json', 'DS301', '/zero_optimization/offload_param/device'): OFFLOAD_PARAM_BELOW_3,
    ('CarperAI__trlx__examples__summarize_rlhf__reward_model__ds_config_gpt_j.json', 'DS301', '/zero_optimization/offload_param/device'): OFFLOAD_PARAM_BELOW_3,
    ('CarperAI__trlx__examples__summarize_rlhf__sft__ds_config_gptj.json', 'DS301', '/zero_optimization/offload_param/device'): OFFLOAD_PARAM_BELOW_3,
    ('Fahad-Touseef__DistributingHybridLLMs__ds_config.json', 'DS101', '/tensor_parallel/enabled'): STRICT_UNKNOWN,
    ('Fahad-Touseef__DistributingHybridLLMs__ds_config.json', 'DS101', '/tensor_parallel/tp_size'): STRICT_UNKNOWN,
    ('OpenGVLab__InternVL__segmentation__zero_configs__adam_zero3_fp16.json', 'DS401', '/optimizer/type'): ONEBIT_REMOVED,
    ('axolotl-ai-cloud__axolotl__deepspeed_configs__zero1_torch_compile.json', 'DS101', '/compile/disable'): STRICT_UNKNOWN,
    ('axolotl-ai-cloud__axolotl__deepspeed_configs__zero1_torch_compile.json', 'DS101', '/compile/backend'): STRICT_UNKNOWN,
    ('axolotl-ai-cloud__axolotl__deepspeed_configs__zero2_torch_compile.json', 'DS101', '/compile/disable'): STRICT_UNKNOWN,
    ('axolotl-ai-cloud__axolotl__deepspeed_configs__zero2_torch_compile.json', 'DS101', '/compile/backend'): STRICT_UNKNOWN,
    ('bigscience-workshop__Megatron-DeepSpeed__examples__curriculum_learning__ds_config_cl.json', 'DS404', '/optimizer/params/max_grad_norm'): MAX_GRAD_NORM,
    ('deepspeedai__DeepSpeedExamples__training__BingBertSquad__1-bit_adam__mpi_ethernet__deepspeed_onebitadam_bsz96_config.json', 'DS401', '/optimizer/type'): ONEBIT_REMOVED,
    ('deepspeedai__DeepSpeedExamples__training__BingBertSquad__1-bit_adam__mpi_infiniband__deepspeed_onebitadam_bsz96_config.json', 'DS401', '/optimizer/type'): ONEBIT_REMOVED,
    ('deepspeedai__DeepSpeedExamples__training__BingBertSquad__1-bit_adam__nccl__deepspeed_onebitadam_bsz96_config.json', 'DS401', '/optimizer/type'): ONEBIT_REMOVED,
    ('deepspeedai__DeepSpeedExamples__training__MoQ__test.json', 'DS201', ''): NO_BATCH,
    ('deepspeedai__DeepSpeedExamples__training__bing_bert__01_adam__mpi_ethernet__deepspeed_bsz4k_01adam_config_seq128_mpi_ethernet.json', 'DS401', '/optimizer/type'): ONEBIT_REMOVED,
    ('deepspeedai__DeepSpeedExamples__training__bing_bert__01_adam__mpi_ethernet__deepspeed_bsz4k_01adam_config_seq512_mpi_ethernet.json', 'DS401', '/optimizer/type'): ONEBIT_REMOVED,
    ('deepspeedai__DeepSpeedExamples__training__bing_bert__1-bit_adam__mpi_ethernet__deepspeed_bsz4k_onebitadam_config_seq128_mpi_ethernet.json', 'DS401', '/optimizer/type'): ONEBIT_REMOVED,
    ('deepspeedai__DeepSpeedExamples__training__bing_bert__1-bit_adam__mpi_infiniband__deepspeed_bsz4k_onebitadam_config_seq128_mpi_infiniband.json', 'DS401', '/optimizer/type'): ONEBIT_REMOVED,
    ('deepspeedai__DeepSpeedExamples__training__bing_bert__1-bit_adam__nccl__deepspeed_bsz4k_onebitadam_config_seq128_nccl.json', 'DS401', '/optimizer/type'): ONEBIT_REMOVED,
    ('deepspeedai__DeepSpeedExamples__training__bing_bert__1-bit_lamb__mpi_ethernet__deepspeed_bsz32k_onebitlamb_config_seq512_mpi_ethernet.json', 'DS401', '/optimizer/type'): ONEBIT_REMOVED,
    ('deepspeedai__DeepSpeedExamples__training__bing_bert__1-bit_lamb__mpi_ethernet__deepspeed_bsz64k_onebitlamb_config_seq128_mpi_ethernet.json', 'DS401', '/optimizer/type'): ONEBIT_REMOVED,
    ('deepspeedai__DeepSpeedExamples__training__bing_bert__1-bit_lamb__mpi_infiniband__deepspeed_bsz32k_onebitlamb_config_seq512_mpi_infiniband.json', 'DS401', '/optimizer/type'): ONEBIT_REMOVED,
    ('deepspeedai__DeepSpeedExamples__training__bing_bert__1-bit_lamb__mpi_infiniband__deepspeed_bsz64k_onebitlamb_config_seq128_mpi_infiniband.json', 'DS401', '/optimizer/type'): ONEBIT_REMOVED,
    ('deepspeedai__DeepSpeedExamples__training__bing_bert__1-bit_lamb__nccl__deepspeed_bsz32k_onebitlamb_config_seq512_nccl.json', 'DS401', '/optimizer/type'): ONEBIT_REMOVED,
    ('deepspeedai__DeepSpeedExamples__training__bing_bert__1-bit_lamb__nccl__deepspeed_bsz64k_onebitlamb_config_seq128_nccl.json', 'DS401', '/optimizer/type'): ONEBIT_REMOVED,
    ('deepspeedai__DeepSpeed__deepspeed__autotuning__config_templates__template_zero0.json', 'DS201', ''): AUTOTUNING_TEMPLATE,
    ('deepspeedai__DeepSpeed__deepspeed__autotuning__config_templates__template_zero1.json', 'DS201', ''): AUTOTUNING_TEMPLATE,
    ('deepspeedai__DeepSpeed__deepspeed__autotuning__config_templates__template_zero2.json', 'DS201', ''): AUTOTUNING_TEMPLATE,
    ('deepspeedai__DeepSpeed__deepspeed__autotuning__config_templates__template_zero3.json', 'DS201', ''): AUTOTUNING_TEMPLATE,
    ('deepspeedai__DeepSpeed__tests__hybrid_engine__hybrid_engine_config.json', 'DS301', '/zero_optimization/offload_param/device'): OFFLOAD_PARAM_BELOW_3,
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__curriculum_learning__ds_zero_stage_1_config_baseline.json', 'DS404', '/optimizer/params/max_grad_norm'): MAX_GRAD_NORM,
    ('huggingface__transformers__tests__deepspeed__ds_config_zero3.json', 'DS201', ''): NO_BATCH,
    ('huggingface__transformers__tests__deepspeed__ds_config_zero3.json', 'DS102', '/zero_optimization/reduce_bucket_size'): REDUCE_BUCKET_ZERO,
}


# Unquoted stand-ins of templates (CONFIG_BATCH_SIZE, ZERO_STAGE, ...) that launch scripts fill in with sed:
# the corpus holds the templates without their scripts, and the file's name says it is a template, so
# these are placeholders, known only once the file is rendered: infos naming the placeholder, not errors.
PLACEHOLDER_INFOS = {
    ('alibaba__Pai-Megatron-Patch__examples__baichuan__ds_config_TEMPLATE.json', 'DS102', '/bf16/enabled'),
    ('alibaba__Pai-Megatron-Patch__examples__baichuan__ds_config_TEMPLATE.json', 'DS102', '/fp16/enabled'),
    ('alibaba__Pai-Megatron-Patch__examples__baichuan__ds_config_TEMPLATE.json', 'DS102', '/gradient_accumulation_steps'),
    ('alibaba__Pai-Megatron-Patch__examples__baichuan__ds_config_TEMPLATE.json', 'DS102', '/train_batch_size'),
    ('alibaba__Pai-Megatron-Patch__examples__baichuan__ds_config_TEMPLATE.json', 'DS102', '/train_micro_batch_size_per_gpu'),
    ('alibaba__Pai-Megatron-Patch__examples__baichuan__ds_config_TEMPLATE.json', 'DS102', '/zero_optimization/stage'),
    ('deepspeedai__DeepSpeedExamples__compression__bert__config__ds_config_TEMPLATE.json', 'DS102', '/fp16/enabled'),
    ('deepspeedai__DeepSpeedExamples__compression__bert__config__ds_config_TEMPLATE.json', 'DS102', '/train_micro_batch_size_per_gpu'),
    ('deepspeedai__DeepSpeedExamples__compression__bert__config__ds_config_structural_pruning_TEMPLATE.json', 'DS102', '/fp16/enabled'),
    ('deepspeedai__DeepSpeedExamples__compression__bert__config__ds_config_structural_pruning_TEMPLATE.json', 'DS102', '/train_micro_batch_size_per_gpu'),
    ('deepspeedai__DeepSpeedExamples__training__data_efficiency__gpt_finetuning__finetune__ds_config_gpt2-medium_1clmetric_TEMPLATE.json', 'DS102', '/train_batch_size'),
    ('deepspeedai__DeepSpeedExamples__training__data_efficiency__gpt_finetuning__finetune__ds_config_gpt2-medium_1clmetric_TEMPLATE.json', 'DS102', '/train_micro_batch_size_per_gpu'),
    ('deepspeedai__DeepSpeedExamples__training__data_efficiency__gpt_finetuning__finetune__ds_config_gpt2-medium_2clmetrics_TEMPLATE.json', 'DS102', '/train_batch_size'),
    ('deepspeedai__DeepSpeedExamples__training__data_efficiency__gpt_finetuning__finetune__ds_config_gpt2-medium_2clmetrics_TEMPLATE.json', 'DS102', '/train_micro_batch_size_per_gpu'),
    ('deepspeedai__DeepSpeedExamples__training__data_efficiency__gpt_finetuning__finetune__ds_config_gpt2_TEMPLATE.json', 'DS102', '/train_batch_size'),
    ('deepspeedai__DeepSpeedExamples__training__data_efficiency__gpt_finetuning__finetune__ds_config_gpt2_TEMPLATE.json', 'DS102', '/train_micro_batch_size_per_gpu'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__MoE__ds_config_gpt_TEMPLATE.json', 'DS102', '/bf16/enabled'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__MoE__ds_config_gpt_TEMPLATE.json', 'DS102', '/fp16/enabled'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__MoE__ds_config_gpt_TEMPLATE.json', 'DS102', '/prescale_gradients'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__MoE__ds_config_gpt_TEMPLATE.json', 'DS102', '/steps_per_print'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__MoE__ds_config_gpt_TEMPLATE.json', 'DS102', '/train_batch_size'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__MoE__ds_config_gpt_TEMPLATE.json', 'DS102', '/train_micro_batch_size_per_gpu'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__MoE__ds_config_gpt_TEMPLATE.json', 'DS102', '/zero_optimization/stage'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__MoE__ds_config_gpt_Zero2_TEMPLATE.json', 'DS102', '/bf16/enabled'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__MoE__ds_config_gpt_Zero2_TEMPLATE.json', 'DS102', '/fp16/enabled'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__MoE__ds_config_gpt_Zero2_TEMPLATE.json', 'DS102', '/steps_per_print'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__MoE__ds_config_gpt_Zero2_TEMPLATE.json', 'DS102', '/train_batch_size'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__MoE__ds_config_gpt_Zero2_TEMPLATE.json', 'DS102', '/train_micro_batch_size_per_gpu'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__bert_with_pile__ds_config_bert_TEMPLATE.json', 'DS102', '/bf16/enabled'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__bert_with_pile__ds_config_bert_TEMPLATE.json', 'DS102', '/fp16/enabled'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__bert_with_pile__ds_config_bert_TEMPLATE.json', 'DS102', '/prescale_gradients'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__bert_with_pile__ds_config_bert_TEMPLATE.json', 'DS102', '/steps_per_print'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__bert_with_pile__ds_config_bert_TEMPLATE.json', 'DS102', '/train_batch_size'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__bert_with_pile__ds_config_bert_TEMPLATE.json', 'DS102', '/train_micro_batch_size_per_gpu'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__bert_with_pile__ds_config_bert_TEMPLATE.json', 'DS102', '/zero_optimization/stage'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__compression__ds_config_gpt_TEMPLATE_compression.json', 'DS102', '/bf16/enabled'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__compression__ds_config_gpt_TEMPLATE_compression.json', 'DS102', '/fp16/enabled'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__compression__ds_config_gpt_TEMPLATE_compression.json', 'DS102', '/prescale_gradients'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__compression__ds_config_gpt_TEMPLATE_compression.json', 'DS102', '/steps_per_print'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__compression__ds_config_gpt_TEMPLATE_compression.json', 'DS102', '/train_batch_size'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__compression__ds_config_gpt_TEMPLATE_compression.json', 'DS102', '/train_micro_batch_size_per_gpu'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__compression__ds_config_gpt_TEMPLATE_compression.json', 'DS102', '/zero_optimization/stage'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__curriculum_learning__ds_config_gpt_slw_TEMPLATE.json', 'DS102', '/prescale_gradients'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__curriculum_learning__ds_config_gpt_slw_TEMPLATE.json', 'DS102', '/steps_per_print'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__curriculum_learning__ds_config_gpt_slw_TEMPLATE.json', 'DS102', '/train_batch_size'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__curriculum_learning__ds_config_gpt_slw_TEMPLATE.json', 'DS102', '/train_micro_batch_size_per_gpu'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__curriculum_learning__ds_config_gpt_slw_TEMPLATE.json', 'DS102', '/zero_optimization/stage'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__data_efficiency__bert__finetune__ds_config_bert_TEMPLATE.json', 'DS102', '/prescale_gradients'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__data_efficiency__bert__finetune__ds_config_bert_TEMPLATE.json', 'DS102', '/steps_per_print'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__data_efficiency__bert__finetune__ds_config_bert_TEMPLATE.json', 'DS102', '/train_batch_size'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__data_efficiency__bert__finetune__ds_config_bert_TEMPLATE.json', 'DS102', '/train_micro_batch_size_per_gpu'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__data_efficiency__bert__finetune__ds_config_bert_TEMPLATE.json', 'DS102', '/zero_optimization/stage'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__data_efficiency__bert__pretrain__ds_config_bert_1clmetric_TEMPLATE.json', 'DS102', '/prescale_gradients'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__data_efficiency__bert__pretrain__ds_config_bert_1clmetric_TEMPLATE.json', 'DS102', '/steps_per_print'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__data_efficiency__bert__pretrain__ds_config_bert_1clmetric_TEMPLATE.json', 'DS102', '/train_batch_size'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__data_efficiency__bert__pretrain__ds_config_bert_1clmetric_TEMPLATE.json', 'DS102', '/train_micro_batch_size_per_gpu'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__data_efficiency__bert__pretrain__ds_config_bert_1clmetric_TEMPLATE.json', 'DS102', '/zero_optimization/stage'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__data_efficiency__bert__pretrain__ds_config_bert_2clmetrics_TEMPLATE.json', 'DS102', '/prescale_gradients'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__data_efficiency__bert__pretrain__ds_config_bert_2clmetrics_TEMPLATE.json', 'DS102', '/steps_per_print'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__data_efficiency__bert__pretrain__ds_config_bert_2clmetrics_TEMPLATE.json', 'DS102', '/train_batch_size'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__data_efficiency__bert__pretrain__ds_config_bert_2clmetrics_TEMPLATE.json', 'DS102', '/train_micro_batch_size_per_gpu'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__data_efficiency__bert__pretrain__ds_config_bert_2clmetrics_TEMPLATE.json', 'DS102', '/zero_optimization/stage'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__data_efficiency__gpt__pretrain__ds_config_gpt_1clmetric_TEMPLATE.json', 'DS102', '/prescale_gradients'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__data_efficiency__gpt__pretrain__ds_config_gpt_1clmetric_TEMPLATE.json', 'DS102', '/steps_per_print'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__data_efficiency__gpt__pretrain__ds_config_gpt_1clmetric_TEMPLATE.json', 'DS102', '/train_batch_size'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__data_efficiency__gpt__pretrain__ds_config_gpt_1clmetric_TEMPLATE.json', 'DS102', '/train_micro_batch_size_per_gpu'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__data_efficiency__gpt__pretrain__ds_config_gpt_1clmetric_TEMPLATE.json', 'DS102', '/zero_optimization/stage'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__data_efficiency__gpt__pretrain__ds_config_gpt_2clmetrics_TEMPLATE.json', 'DS102', '/prescale_gradients'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__data_efficiency__gpt__pretrain__ds_config_gpt_2clmetrics_TEMPLATE.json', 'DS102', '/steps_per_print'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__data_efficiency__gpt__pretrain__ds_config_gpt_2clmetrics_TEMPLATE.json', 'DS102', '/train_batch_size'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__data_efficiency__gpt__pretrain__ds_config_gpt_2clmetrics_TEMPLATE.json', 'DS102', '/train_micro_batch_size_per_gpu'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__data_efficiency__gpt__pretrain__ds_config_gpt_2clmetrics_TEMPLATE.json', 'DS102', '/zero_optimization/stage'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__deepspeed4science__megatron_long_seq_support__ds_config_gpt_TEMPLATE.json', 'DS102', '/prescale_gradients'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__deepspeed4science__megatron_long_seq_support__ds_config_gpt_TEMPLATE.json', 'DS102', '/steps_per_print'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__deepspeed4science__megatron_long_seq_support__ds_config_gpt_TEMPLATE.json', 'DS102', '/train_batch_size'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__deepspeed4science__megatron_long_seq_support__ds_config_gpt_TEMPLATE.json', 'DS102', '/train_micro_batch_size_per_gpu'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__deepspeed4science__megatron_long_seq_support__ds_config_gpt_TEMPLATE.json', 'DS102', '/zero_optimization/stage'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__offload_pp__ds_config_gpt_TEMPLATE.json', 'DS102', '/bf16/enabled'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__offload_pp__ds_config_gpt_TEMPLATE.json', 'DS102', '/fp16/enabled'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__offload_pp__ds_config_gpt_TEMPLATE.json', 'DS102', '/steps_per_print'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__offload_pp__ds_config_gpt_TEMPLATE.json', 'DS102', '/train_batch_size'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__offload_pp__ds_config_gpt_TEMPLATE.json', 'DS102', '/train_micro_batch_size_per_gpu'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__rebase__ds_config_gpt_TEMPLATE.json', 'DS102', '/prescale_gradients'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__rebase__ds_config_gpt_TEMPLATE.json', 'DS102', '/steps_per_print'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__rebase__ds_config_gpt_TEMPLATE.json', 'DS102', '/train_batch_size'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__rebase__ds_config_gpt_TEMPLATE.json', 'DS102', '/train_micro_batch_size_per_gpu'),
    ('deepspeedai__Megatron-DeepSpeed__examples_deepspeed__rebase__ds_config_gpt_TEMPLATE.json', 'DS102', '/zero_optimization/stage'),
}


# fp16 and bf16 are validated strictly only from DeepSpeed 0.17.1 (before, read key by key: an unknown key
# ignored, a fractional min_loss_scale used as written), and pydantic v1 (before 0.15.0) truncated fractions.
# The corpus holds no pins, so where the releases' verdicts differ these are infos naming the release as unknown.
RELEASE_DEPENDENT_INFOS = {
    ('CarperAI__trlx__examples__summarize_rlhf__configs__ds_config_trlx_gptj_summarize.json', 'DS101', '/fp16/fp16_scale_tolerance'),
    ('CarperAI__trlx__examples__summarize_rlhf__configs__ds_config_trlx_gptj_summarize.json', 'DS101', '/fp16/opt_level'),
    ('CarperAI__trlx__examples__summarize_rlhf__configs__ds_config_trlx_gptj_summarize.json', 'DS102', '/fp16/min_loss_scale'),
    ('CarperAI__trlx__examples__summarize_rlhf__reward_model__ds_config_gpt_j.json', 'DS101', '/fp16/opt_level'),
    ('CarperAI__trlx__examples__summarize_rlhf__sft__ds_config_gptj.json', 'DS101', '/fp16/opt_level'),
    ('KimMeen__Time-LLM__ds_config_zero2.json', 'DS101', '/bf16/auto_cast'),
    ('ymcui__Chinese-LLaMA-Alpaca__scripts__training__ds_zero2_no_offload.json', 'DS102', '/fp16/min_loss_scale'),
}


# ZeRO-2/3 with a pipeline section: the pipeline engine's assertion needs a PipelineModule, which only the
# consumer's code shows (a plain model ignores the section); the corpus holds configs alone
MODEL_UNKNOWN_INFOS = {
    ('DannyMeb__BERT-Parallelism-Efficiency__ds_config.json', 'DS307', '/zero_optimization/stage'),
}


@needs_corpus
def test_every_corpus_error_is_a_justified_real_mistake():
    result = run_check([str(CORPUS / "deepspeed")], Context())
    found = {(f.file.rsplit("/", 1)[-1], f.code, f.pointer) for f in result.findings if f.severity == "error"}
    unexpected = sorted(found - EXPECTED_ERRORS.keys(), key=str)
    gone = sorted(EXPECTED_ERRORS.keys() - found, key=str)
    assert not unexpected, f"new errors over the corpus: justify each in EXPECTED_ERRORS or fix the rule: {unexpected}"
    assert not gone, f"errors no longer reported (a rule regressed, or update the table): {gone}"


# infos whose unknown premise the table names: (the findings, the premise's kind, words of what is unknown)
UNKNOWN_PREMISE_INFOS = {
    "template placeholders": (PLACEHOLDER_INFOS, "role", "template placeholder"),
    "releases that judge differently": (RELEASE_DEPENDENT_INFOS, "release", "differs"),
    "what only the model decides": (MODEL_UNKNOWN_INFOS, "program", "PipelineModule"),
}


@needs_corpus
@pytest.mark.parametrize("kind", sorted(UNKNOWN_PREMISE_INFOS))
def test_a_finding_on_an_unknown_premise_is_an_info_naming_it(kind):
    expected, premise, words = UNKNOWN_PREMISE_INFOS[kind]
    result = run_check([str(CORPUS / "deepspeed")], Context())
    infos = {(f.file.rsplit("/", 1)[-1], f.code, f.pointer): f for f in result.findings if f.severity == "info"}
    assert expected <= infos.keys(), sorted(expected - infos.keys(), key=str)
    for key in expected:
        found = [p for p in infos[key].evidence if p.kind == premise]
        assert len(found) == 1 and found[0].state == "unknown" and words in found[0].what, key
