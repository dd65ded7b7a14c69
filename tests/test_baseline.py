"""The output of `check --format json` against the baselines recorded at 26aa8af (tests/baselines/).

Every difference from a baseline must be listed in EXPECTED, one row each, with the reason; a row
that no longer matches any difference fails too, so the table stays honest. Findings are compared
per file, order-insensitively (duplicates kept):

  added     a finding that is not in the baseline
  removed   a baseline finding that is gone
  changed   same file, code, line and column, but another message, severity, pointer, related, fix ...

The `files` list is compared per path with code "files" (added / removed / changed format).
A Change's file is an fnmatch pattern (an exact path is the usual case); line narrows it to one
line; runs narrows it to some of the invocations in RUNS (default: every run that checks the file).
NewFile(pattern) accepts every finding and files entry of a file that the baseline does not know.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from collections import Counter
from dataclasses import dataclass
from fnmatch import fnmatchcase

import pytest

from conftest import CORPUS, ROOT, SHARED

BASELINES = ROOT / "tests" / "baselines"


@dataclass(frozen=True)
class Change:
    file: str
    code: str
    kind: str  # "added" | "removed" | "changed"
    why: str
    line: int | None = None
    runs: tuple[str, ...] | None = None


@dataclass(frozen=True)
class NewFile:
    pattern: str
    why: str


EXPECTED: list[Change | NewFile] = [
    Change("../shared/corpus/deepspeed/*", "DS101", "changed", "Issue 30: a key a later DeepSpeed removed is read by "
           "the releases before it, so with no pin the release premise is unknown and the error is an info"),
    Change("fixtures/fsdp2/migrate/zero3_mics_hybrid.json", "DS101", "changed", "Issue 30: MiCS keys, removed in a "
           "later DeepSpeed, are an info without a pin (earlier releases read them)"),
    NewFile("fixtures/megatron/rules/MG301/*/*", "Issue 33: MG301, the argument checks of Megatron's coverage map that "
                                                 "no other MG rule restates, one bad fixture per check"),
    NewFile("fixtures/megatron/coverage/*/*", "Issue 33: the bad fixtures of Megatron's coverage map for the checks "
                                              "an MG rule of its own reports"),
    NewFile("fixtures/general/rules/SS006/*", "Issue 31: SS006's fixtures (inside the checked tree when fixtures/ "
                                              "is checked whole: no SS006 there)"),
    NewFile("fixtures/fsdp2/rules/FS003/bad_helper.py", "Issue 30: FS003 across a helper that shards the blocks "
                                                        "of the same module after its root, in one call of a builder"),
    NewFile("fixtures/launch/*", "Issue 20: launch scripts of every launcher x entry point with the configs they link "
                                 "(the launch format)"),
    Change("fixtures/deepspeed/rules/DS421/run_plain.sh", "files", "added", "Issue 20: a launch script that names "
           "a ds_config is read as a launch document (it was only a link before)"),
    NewFile("fixtures/context/*", "Issue 19: setups whose own tree pins the framework release that judges them "
            "(requirements.txt, pyproject.toml): renamed torchtitan keys and a DeepSpeed key under old and new pins"),
    NewFile("fixtures/deepspeed/rules/DS423/*", "DS423 fixtures: ds_configs with a pipeline section and the scripts "
            "that consume them (issue 19)"),
    Change("fixtures/deepspeed/rules/DS307/*", "DS423", "added", "a pipeline section with no consumer next to it: "
           "an info with UnknownContext('consumer') (issue 19)"),
    NewFile("fixtures/deepspeed/rules/DS308/trainer.py", "DS308's consumer: the Trainer reads bad.json (issue 19)"),
    NewFile("fixtures/deepspeed/rules/DS308/checkpoint_only/*", "DS308: a script that saves only sharded "
            "checkpoints (issue 19)"),
    *[Change(pattern, "DS308", "changed", "DS308 judged by the consumer: without one it is an info with "
             "UnknownContext('consumer') (issue 19)") for pattern in ("../shared/corpus/*", "fixtures/*")],
    *[Change(pattern, "DS303", "changed", "DS303 says that no ZeRO stage reads allgather_partitions (DeepSpeed "
             "0.19.8 never uses it; issue 19)") for pattern in ("../shared/corpus/*",)],
    *[Change(pattern, "DS406", "changed", "DS406 with weight_decay \"auto\" is an info with "
             "UnknownContext('consumer'): the Trainer's default is 0 (issue 19)")
      for pattern in ("../shared/corpus/*",)],
    Change("../shared/corpus/deepspeed/*", "DS423", "added", "a pipeline section with no consumer in the corpus "
           "folder: an info with UnknownContext('consumer') (issue 19)"),
    *[NewFile(f"fixtures/deepspeed/rules/{name}", "Issue 22: a bad fixture per DeepSpeed 0.19.8 check site that an "
              "existing rule mirrors (src/shardshift/data/coverage/deepspeed.tsv; tests/test_coverage_map.py)")
      for name in ("DS101/bad_removed*.json", "DS102/bad_accumulation.json", "DS102/bad_allreduce_op.json",
                   "DS102/bad_autocast_modules.json", "DS102/bad_checkpoint_writer.json",
                   "DS102/bad_communication_data_type.json", "DS102/bad_keep_in_fp32.json",
                   "DS102/bad_loss_scale_*.json", "DS102/bad_micro.json", "DS102/bad_min_scale_infinity.json",
                   "DS102/bad_parallel_write.json", "DS102/bad_scale_window_*.json", "DS102/bad_tag_validation.json",
                   "DS201/bad_no_batch.json", "DS306/bad_allreduce_sum.json", "DS306/bad_bf16_*.json",
                   "DS306/bad_fp16_master.json", "DS340/bad_allreduce_deepcompile.json",
                   "DS340/bad_grad_norm_stage1.json", "DS340/bad_legacy_stage1.json",
                   "DS340/bad_managed_deepcompile.json", "DS415/bad_cosine.json", "DS448/*")],
    NewFile("fixtures/plan/*", "Plan YAML fixtures of the semantic rules over the Plan (PL101-PL103)"),
    NewFile("fixtures/setups/*", "Accelerate/Axolotl setups linked to their ds_config (PL001 cases)"),
    NewFile("fixtures/accelerate/*", "Accelerate configs, read since the Accelerate reader"),
    NewFile("fixtures/axolotl/*", "Axolotl configs, read since the Axolotl reader"),
    NewFile("fixtures/fsdp2/unknown/*", "FSDP2 code the reader cannot decide (Unknown values, switches); "
            "flag_offload.py's FS004 is real: its bf16 policy leaves reduce_dtype unset"),
    NewFile("fixtures/fsdp2/linked/*", "FSDP2 scripts that call helpers of other files given to check (followed "
            "into them), and those helpers"),
    NewFile("fixtures/megatron/*", "Megatron launch scripts and argument files, read since the Megatron reader: the "
            "sample launch script and the MG rules' bad and good fixtures"),
    NewFile("fixtures/launch/hf/*", "issue 20: launch scripts whose TrainingArguments flags are judged against the "
            "--deepspeed ds_config (DS435/DS436), their entry scripts and ds_configs"),
    NewFile("fixtures/torchtitan/*", "torchtitan TOML rule fixtures (TT001-TT103, PL101 at a TOML key), read since the "
            "torchtitan reader"),
    NewFile("fixtures/deepspeed/rules/DS421/*.y*ml", "the DS421 fixtures' Accelerate and Axolotl YAML, read since "
            "those readers"),
    # issue 11: DeepSpeed's own (hjson) parsing; confirmed messages; scheduler ranges; scripts; FSDP2 catalog
    NewFile("fixtures/deepspeed/hjson/*", "ds_configs in DeepSpeed's hjson dialect, read as its loader reads them"),
    NewFile("fixtures/deepspeed/rules/SS004/*", "SS004 hjson-only-syntax fixtures"),
    NewFile("fixtures/general/rules/SS005/*", "SS005 fixtures: the good one is a ds_config (the bad one is skipped by "
            "a walk, reported only when named)"),
    NewFile("fixtures/deepspeed/rules/DS102/bad_fraction*.json", "DS102 fractions in strict and lenient sections"),
    NewFile("fixtures/deepspeed/rules/DS305/bad_optimizer.json", "DS305 offload_optimizer to NVMe without a path"),
    NewFile("fixtures/deepspeed/rules/DS415/bad_[nt]*.json", "DS415 null step counts and a string total_num_steps"),
    NewFile("fixtures/deepspeed/rules/DS4[34][0-9]/*", "DS430-DS432 optimizers passed as callables or built by a "
            "helper; DS435-DS439 TrainingArguments; DS440-DS443 scheduler ranges; DS444-DS447 (issue 14)"),
    NewFile("fixtures/deepspeed/rules/DS201/bad_null_batch.json", "Issue 33: a batch size written null is unset to "
            "DeepSpeed, which then asserts (found by bench/mutation_deepspeed.py)"),
    NewFile("fixtures/deepspeed/rules/DS45[0-9]/*", "Issue 33: DS450, a Trainer subclass's create_optimizer that "
            "builds nothing under an optimizer block (DS449's fixtures match the DS4[34][0-9] row)"),
    NewFile("fixtures/fsdp2/rules/FS02[1-8]/*", "FSDP2 catalog rules FS021-FS028"),
    *[NewFile(f"fixtures/fsdp2/rules/{folder}/*", "FSDP2 argument-check rules FS029-FS034 (issue 22's coverage map)")
      for folder in ("FS029", "FS03[0-4]")],
    Change("fixtures/fsdp2/rules/FS001/bad.py", "FS001", "added", "Issue 33: an optimizer over parameters listed "
           "before fully_shard (the list keeps the originals)", line=20),
    NewFile("fixtures/fsdp2/rules/FS03[56]/*", "Issue 33: FS035 (DDP/FSDP1 methods on a fully_shard module) and FS036 "
            "(a meta module moved with .to)"),
    NewFile("fixtures/torchtitan/rules/TT108/*", "Issue 33: TT108, keep_latest_k = 1 with checkpointing on "
            "(torchtitan's CheckpointManager refuses it)"),
    NewFile("fixtures/torchtitan/rules/TT109/*", "Issue 33: TT109, profiling with profile_freq below warm-up + active "
            "(torchtitan's profiler asserts when training starts)"),
    NewFile("fixtures/torchtitan/rules/TT110/*", "Issue 33: TT110, a context-parallel load balancer torchtitan has "
            "none of (the first step raises)"),
    NewFile("fixtures/torchtitan/rules/TT111/*", "Issue 33: TT111, the last save in HF format without model only "
            "(the final save asserts)"),
    NewFile("fixtures/torchtitan/rules/TT112/*", "Issue 33: TT112, an HF initial load without model only (the "
            "first run asserts)"),
    NewFile("fixtures/torchtitan/rules/TT113/*", "Issue 33: TT113, a quantized initial load without HF format (the "
            "first run asserts)"),
    NewFile("fixtures/torchtitan/rules/TT114/*", "Issue 33: TT114, an exclude_from_loading entry naming no state "
            "(a resume raises)"),
    NewFile("fixtures/deepspeed/rules/DS316/good_zero3.json", "Issue 34: DS316 is silent under ZeRO-3, which reads "
            "no check_grad_overflow"),
    NewFile("fixtures/axolotl/rules/AX115/*", "Issue 33: AX115, dp_shard_size without FSDP on a world that leaves ranks for it"),
    NewFile("fixtures/axolotl/layout/*", "Issue 33: Axolotl's parallel sizes refused by build_parallelism_config, "
            "reported by PL101/PL102 (coverage map)"),
    NewFile("fixtures/axolotl/rules/AX114/*", "Issue 33: AX114, diffusion set-ups normalize_config refuses"),
    NewFile("fixtures/axolotl/rules/AX113/*", "Issue 33: AX113, adapter set-ups axolotl train refuses once the model is loaded"),
    NewFile("fixtures/axolotl/rules/AX112/*", "Issue 33: AX112, QAT dtype pairs Axolotl's torchao path refuses"),
    NewFile("fixtures/deepspeed/rules/DS102/bad_tp_not_object.json", "Issue 33: DS102, tensor_parallel.tp that is no "
            "object, refused at tp_model_init's merge (coverage map)"),
    NewFile("fixtures/deepspeed/rules/DS455/*", "Issue 33: DS455, random-LTD settings DeepSpeed's scheduler refuses"),
    NewFile("fixtures/deepspeed/rules/DS454/*", "Issue 33: DS454, AutoTP partition settings DeepSpeed refuses"),
    NewFile("fixtures/torchtitan/implicit/*", "Issue 33: a bad and a good torchtitan TOML per implicit failure site of "
            "its start-up path (src/shardshift/data/coverage/torchtitan-implicit.tsv)"),
    NewFile("fixtures/axolotl/implicit/*", "Issue 33: a bad and a good Axolotl config per implicit failure site of axolotl "
            "train's config handling (src/shardshift/data/coverage/axolotl-implicit.tsv)"),
    NewFile("fixtures/axolotl/rules/AX116/*", "Issue 33: AX116, values Axolotl computes with unchecked"),
    NewFile("fixtures/transformers/implicit/*", "Issue 33: a bad and a good TrainingArguments script per implicit failure "
            "site of building transformers' TrainingArguments (src/shardshift/data/coverage/transformers-implicit.tsv)"),
    NewFile("fixtures/transformers/rules/TA011/*", "Issue 33: TA011, TrainingArguments values transformers computes "
            "with unchecked"),
    NewFile("fixtures/accelerate/implicit/*", "Issue 33: a bad and a good Accelerate config (with the launch that runs "
            "it) per implicit failure site of accelerate launch (src/shardshift/data/coverage/accelerate-implicit.tsv)"),
    NewFile("fixtures/deepspeed/implicit/*", "Issue 33: a bad and a good ds_config per implicit failure site of "
            "DeepSpeed's parser (src/shardshift/data/coverage/deepspeed-implicit.tsv)"),
    NewFile("fixtures/megatron/implicit/*", "Issue 33: a bad and a good Megatron launch script per implicit failure "
            "site of Megatron's argument path and start-up (src/shardshift/data/coverage/megatron-implicit.tsv)"),
    NewFile("fixtures/deepspeed/rules/DS456/*", "Issue 33: DS456, optimizer parameters the class DeepSpeed builds refuses"),
    NewFile("fixtures/deepspeed/rules/DS453/*", "Issue 33: DS453, curriculum metrics DeepSpeed's sampler refuses"),
    NewFile("fixtures/fsdp2/implicit/*", "Issue 33: a bad and a good sharding script per implicit failure site of "
            "torch 2.13's init_device_mesh, fully_shard and first forward (src/shardshift/data/coverage/fsdp2-implicit.tsv)"),
    NewFile("fixtures/fsdp2/rules/FS050/*", "Issue 33: FS050, a MixedPrecisionPolicy param_dtype FSDP2 cannot compute in"),
    NewFile("fixtures/fsdp2/rules/FS029/bad_mesh_shape_*.py", "Issue 33: FS029, a mesh_shape dim torch computes with "
            "unchecked (zero, negative, None)"),
    NewFile("fixtures/fsdp2/rules/FS029/bad_device_type_*.py", "Issue 33: FS029, a device type fully_shard looks up "
            "unchecked"),
    NewFile("fixtures/fsdp2/rules/FS029/bad_last_dim_name.py", "Issue 33: FS029, an HSDP mesh's last dim name that "
            "is no string (fully_shard slices by it)"),
    NewFile("fixtures/fsdp2/rules/FS049/*", "Issue 33: FS049, an int reshard_after_forward on DTensor parameters"),
    NewFile("fixtures/fsdp2/rules/FS048/*", "Issue 33: FS048, dp_mesh_dims on a mesh or DTensors torch refuses"),
    NewFile("fixtures/fsdp2/rules/FS047/*", "Issue 33: FS047, fully_shard's mesh and the TP mesh torch cannot join"),
    NewFile("fixtures/fsdp2/rules/FS019/bad_smaller.py",
            "FS019: a mesh smaller than the world that fully_shard gets (the ranks outside it fail)"),
    NewFile("fixtures/fsdp2/rules/FS029/bad_mesh_rank_whole_world.py",
            "Issue 33: FS029, a 1-D mesh over every rank listing one twice"),
    NewFile("fixtures/fsdp2/rules/FS044/*", "Issue 33: FS044, a CPU-offloaded module moved to the GPU"),
    NewFile("fixtures/fsdp2/rules/FS043/*", "Issue 33: FS043, replicate and fully_shard on one module"),
    NewFile("fixtures/fsdp2/rules/FS001/*_builder*.py", "Issue 33: FS001 pairs an optimizer and fully_shard only "
            "on one object (not one local name in two calls of a builder)"),
    NewFile("fixtures/fsdp2/rules/FS002/*_blocks*.py", "Issue 33: FS002 is silent where the model's class in the file "
            "holds parameters only in its blocks"),
    NewFile("fixtures/fsdp2/rules/FS002/*_method_*.py", "Issue 33: FS002 on a class that shards its own blocks in a "
            "method (silent where it holds parameters only in them)"),
    NewFile("fixtures/fsdp2/rules/FS002/good_root_under_condition.py", "Issue 33: FS002 does not say 'never' where a "
            "fully_shard call's module is one the reader cannot name (a model bound under an undecided if)"),
    NewFile("fixtures/fsdp2/rules/FS003/good_unnamed_modules.py", "Issue 33: FS003 does not take two modules the "
            "reader cannot name for parent and child"),
    Change("fixtures/fsdp2/rules/FS002/bad.py", "FS002", "changed", "Issue 33: severity by outcome, FS002 is a "
           "warning (the run goes on; the unsharded parameters drift apart silently)"),
    Change("fixtures/fsdp2/rules/FS013/bad.py", "FS013", "changed", "Issue 33: severity by outcome, FS013 is an "
           "info (ShardedGradScaler works on DTensor gradients: tests/test_fsdp2_catalog_oracle.py)"),
    NewFile("fixtures/fsdp2/rules/FS022/*_helper*.py", "Issue 33: FS022 judges a helper's to_empty through the "
            "callers in the file, and leaves one nothing in the file calls to its callers"),
    NewFile("fixtures/fsdp2/rules/FS051/*", "Issue 33: FS051, an nn.ModuleList / nn.ModuleDict passed to fully_shard"),
    NewFile("fixtures/fsdp2/rules/FS042/*", "Issue 33: FS042, a meta-device module sharded and run before to_empty"),
    NewFile("fixtures/fsdp2/rules/FS041/*", "Issue 33: FS041, a device mesh dimension written as a true division"),
    NewFile("fixtures/fsdp2/rules/FS040/*", "Issue 33: FS040, init_process_group arguments torch refuses"),
    NewFile("fixtures/fsdp2/rules/FS039/*", "Issue 33: FS039, a process group initialised after the mesh did it"),
    NewFile("fixtures/fsdp2/rules/FS038/*", "Issue 33: FS038, a process-group timeout that is not a timedelta"),
    NewFile("fixtures/transformers/rules/TA007/*", "Issue 33: TA007, fsdp words and fsdp_config values TrainingArguments "
            "refuses"),
    NewFile("fixtures/transformers/rules/TA010/*", "Issue 33: TA010, keywords the release's TrainingArguments lacks"),
    NewFile("fixtures/transformers/rules/TA008/*", "Issue 33: TA008, arguments the Trainer refuses when it is built"),
    NewFile("fixtures/transformers/rules/TA009/*", "Issue 33: TA009, report_to names the Trainer does not know"),
    NewFile("fixtures/transformers/rules/TA001/*", "Issue 33: TA001, both half precisions (TrainingArguments refuses the pair)"),
    NewFile("fixtures/transformers/rules/TA002/*", "Issue 33: TA002, load_best_model_at_end with evaluation and saving on different schedules"),
    NewFile("fixtures/transformers/rules/TA003/*", "Issue 33: TA003, a schedule stepped by evaluation, with evaluation off"),
    NewFile("fixtures/transformers/rules/TA004/*", "Issue 33: TA004, a prefetch factor with no dataloader workers"),
    NewFile("fixtures/transformers/rules/TA005/*", "Issue 33: TA005, a negative warm-up"),
    NewFile("fixtures/transformers/rules/TA006/*", "Issue 33: TA006, logging, evaluation and saving intervals TrainingArguments refuses"),
    NewFile("fixtures/torchtitan/rules/TT10[67]/*", "Issue 33: TT106 (pipelining for a model that cannot) and TT107 "
            "(validation for a model without a validator), torchtitan's Trainer.__init__ checks against its train spec"),
    NewFile("fixtures/torchtitan/rules/TT105/*", "Issue 33: TT105, torchtitan's batch check of Trainer.__init__ (a "
            "global batch of 0, or one the written data-parallel degrees do not divide)"),
    NewFile("fixtures/fsdp2/rules/FS037/*", "Issue 33: FS037, an AveragedModel (EMA) of a sharded module whose copy "
            "is never sharded"),
    NewFile("fixtures/accelerate/rules/AC006/*_processes_*", "Issue 33: AC006's num_processes -1 beside the launch "
            "scripts that leave it to the file (an error) or give --num_processes (nothing)"),
    NewFile("fixtures/accelerate/rules/AC006/run_processes_*.sh", "Issue 33: the launch scripts of AC006's "
            "num_processes fixtures"),
    NewFile("fixtures/launch/readme/*", "Issue 33: a README whose shell block launches the setup"),
    NewFile("fixtures/deepspeed/rules/DS307/pipeline_module/*", "DS307 where the consumer passes a PipelineModule: "
                                                                "the pipeline engine's assertion is certain (an error)"),
    Change("fixtures/deepspeed/rules/DS307/bad.json", "DS307", "changed", "DS307 with no consumer beside the config: "
           "whether the model is a PipelineModule is unknown, so an info naming the program (a blind sample's false "
           "error: a Trainer's plain model ignores the section)"),
    Change("../shared/corpus/deepspeed/DannyMeb__BERT-Parallelism-Efficiency__ds_config.json", "DS307", "changed",
           "DS307 with no consumer: whether the model is a PipelineModule is unknown, an info naming the program"),
    NewFile("fixtures/deepspeed/rules/DS307/megatron_deepspeed/*", "Issue 33: DS307 under a Megatron-DeepSpeed "
            "launch whose entry builds a PipelineModule without --no-pipeline-parallel (a fork tree, its launch)"),
    NewFile("fixtures/deepspeed/rules/DS340/*_zenflow*.json", "Issue 33: DS340's ZenFlow refusals (no CPU offload "
            "at ZeRO-1/2, select_interval against select_strategy) and configs it takes"),
    NewFile("fixtures/deepspeed/rules/DS340/bad_autocast_quantized.json", "Issue 33: DS340, torch_autocast with "
            "zero_quantized_weights"),
    Change("fixtures/deepspeed/rules/DS340/bad_allreduce_sum.json", "DS340", "changed", "Issue 33: the fixture "
           "offloads the optimizer to the CPU, so that it shows the allreduce-sum refusal alone (ZenFlow at ZeRO-2 "
           "needs the offload)"),
    Change("fixtures/deepspeed/rules/DS340/bad_allreduce_sum.json", "DS309", "added", "Issue 33: its new CPU "
           "offload pins memory by default (DS309's info)"),
    NewFile("fixtures/deepspeed/rules/DS451/*", "Issue 33: DS451, a torch scheduler class over DeepSpeed's "
            "wrapped optimizer (found by training the migration fixtures under DeepSpeed)"),
    Change("fixtures/fsdp2/migrate/zero*_torch_scheduler.json", "DS451", "added", "Issue 33: a torch scheduler over "
           "ZeRO's optimizer wrapper, which deepspeed.initialize refuses (tests/test_migration_training.py)"),
    Change("fixtures/fsdp2/migrate/zero2_adagrad_step_lr.json", "DS451", "added", "Issue 33: StepLR over ZeRO-2's "
           "optimizer wrapper, which deepspeed.initialize refuses (tests/test_migration_training.py)"),
    NewFile("fixtures/accelerate/rules/AC013/*", "Issue 33: AC013, numbers PyYAML reads in another base"),
    NewFile("fixtures/accelerate/rules/AC012/*", "Issue 33: AC012, values of a type Accelerate cannot compute with "
            "(found by bench/mutation_accelerate.py)"),
    NewFile("fixtures/accelerate/rules/AC10[78]/*", "Issue 33: AC107 (settings distributed_type never reads) and "
            "AC108 (the script's Accelerator(mixed_precision=...) over the launch's)"),
    NewFile("fixtures/fsdp2/rules/FS012/torch27/*", "FS012 on a setup that pins torch 2.7 (the root's explicit "
            "value is ignored there; issue 22's second look at FSDP2-RAF-ROOT)"),
    NewFile("fixtures/fsdp2/rules/FS002/bad_list_group.py", "FS002 with a list group and no root: torch's lazy init "
            "refuses the group as root (issue 22's coverage map)"),
    Change("fixtures/fsdp2/rules/FS009/bad.py", "FS009", "changed", "FS009's fix no longer offers a reordering slice: "
           "torch raises KeyError for mesh dim names out of order (FS029)"),
    Change("fixtures/fsdp2/reader/fsdp1_legacy.py", "FS024", "added", "HYBRID_SHARD has no 1-D fully_shard "
           "equivalent (FS024, issue 11)"),
    Change("fixtures/deepspeed/rules/SS001/bad.json", "SS001", "removed", "the fixture now holds a placeholder hjson "
           "cannot read either ({BATCH_SIZE}); the old one (a bare word) is a string to DeepSpeed's loader"),
    Change("fixtures/deepspeed/rules/SS001/bad.json", "SS001", "added", "the same, at the new placeholder"),
    Change("fixtures/deepspeed/positions/syntax_error.json", "SS001", "changed", "the hand-written hjson parser's "
           "message"),
    Change("fixtures/deepspeed/*", "DS403", "changed", "DS403 says where a bad betas fails (initialize for torch's "
           "classes, the first step for DeepSpeed's fused optimizers), confirmed by the messages oracle"),
    Change("fixtures/deepspeed/rules/DS305/bad.json", "DS305", "changed", "DS305 names how initialize fails without "
           "nvme_path (confirmed by the messages oracle)"),
    Change("fixtures/deepspeed/rules/DS42[12]/*", "DS421", "changed", "related locations are relative to the working "
           "directory, as every location (issue 11; absolute at 26aa8af)"),
    Change("fixtures/deepspeed/rules/DS421/bad.json", "DS421", "removed", "issue 22: steps_per_print \"auto\" under "
           "the Trainer is overwritten by Accelerate's DeepSpeedPlugin (inf), not refused: a false error"),
    Change("fixtures/deepspeed/rules/DS421/bad.json", "DS421", "added", "issue 22: the fixture's unfilled \"auto\" is now "
           "zero_optimization.sub_group_size, which the plugin refuses"),
    Change("fixtures/deepspeed/rules/DS422/*", "DS422", "changed", "related locations are relative to the working "
           "directory, as every location (issue 11; absolute at 26aa8af)"),
    Change("../shared/corpus/deepspeed/*", "DS316", "removed", "Issue 34: ZeRO-3 reads no check_grad_overflow "
           "(stage3.py checks fp16 gradients only), so its default is no finding"),
    Change("fixtures/*", "DS316", "removed", "Issue 34: the same for the ZeRO-3 fixtures"),
    Change("../shared/corpus/deepspeed/*", "DS102", "changed", "DS102's fraction message says what DeepSpeed does "
           "(confirmed by the messages oracle)"),
    Change("fixtures/*", "DS420", "changed", "issue 19: no consumer found is context shardshift could not find: "
           "an info with unknown_context (kind consumer), no longer a warning"),
    Change("../shared/corpus/deepspeed/*", "DS420", "changed", "issue 19: the same (the corpus holds ds_configs "
           "without their scripts, so every consumer is unknown)"),
    *[Change(pattern, code, kind, "a template with unquoted placeholders, read as DeepSpeed's hjson loader reads it "
             "(issue 11): SS004 instead of SS001, and the findings its values and sections deserve")
      for pattern, code, kind in (
          ('../shared/corpus/deepspeed/*TEMPLATE*', 'DS101', 'added'),
          ('../shared/corpus/deepspeed/*TEMPLATE*', 'DS102', 'added'),
          ('../shared/corpus/deepspeed/*TEMPLATE*', 'DS308', 'added'),
          ('../shared/corpus/deepspeed/*TEMPLATE*', 'DS331', 'added'),
          ('../shared/corpus/deepspeed/*TEMPLATE*', 'DS418', 'added'),
          ('../shared/corpus/deepspeed/*TEMPLATE*', 'DS420', 'added'),
          ('../shared/corpus/deepspeed/*TEMPLATE*', 'SS001', 'removed'),
          ('../shared/corpus/deepspeed/*TEMPLATE*', 'SS004', 'added'),
          ('../shared/corpus/deepspeed/*curriculum_fixed_linear.json', 'DS101', 'added'),
          ('../shared/corpus/deepspeed/*curriculum_fixed_linear.json', 'DS404', 'added'),
          ('../shared/corpus/deepspeed/*curriculum_fixed_linear.json', 'DS408', 'added'),
          ('../shared/corpus/deepspeed/*curriculum_fixed_linear.json', 'SS001', 'removed'),
          ('../shared/corpus/deepspeed/*curriculum_fixed_linear.json', 'SS004', 'added'),
          ('../shared/corpus/deepspeed/*ds_config_temp.json', 'DS102', 'added'),
          ('../shared/corpus/deepspeed/*ds_config_temp.json', 'DS418', 'added'),
          ('../shared/corpus/deepspeed/*ds_config_temp.json', 'DS420', 'added'),
          ('../shared/corpus/deepspeed/*ds_config_temp.json', 'SS001', 'removed'),
          ('../shared/corpus/deepspeed/*ds_config_temp.json', 'SS004', 'added'),
      )],
]

# name: (baseline file, arguments after `check --isolated --format json`)
RUNS = {
    "fixtures": ("check_fixtures.json", ["fixtures/"]),
    "corpus": ("check_corpus_deepspeed.json", ["../shared/corpus/deepspeed/"]),
    "corpus-world8": ("check_corpus_deepspeed_world8.json", ["--world-size", "8", "../shared/corpus/deepspeed/"]),
}


@dataclass(frozen=True)
class Difference:
    file: str
    code: str
    kind: str
    line: int | None
    detail: str


def normalise(value):
    """Absolute paths do not depend on where the repo is checked out (see tests/baselines/README.md)."""
    if isinstance(value, str):
        return value.replace(f"{SHARED}/", "<SHARED>/").replace(f"{ROOT}/", "<ROOT>/")
    if isinstance(value, list):
        return [normalise(item) for item in value]
    if isinstance(value, dict):
        return {key: normalise(item) for key, item in value.items()}
    return value


def run_check(arguments: list[str], monkeypatch) -> dict:
    from shardshift.cli import main

    monkeypatch.chdir(ROOT)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["check", "--isolated", "--format", "json", *arguments])
    return normalise(json.loads(out.getvalue()))


def by_file(output: dict) -> tuple[dict[str, list[dict]], dict[str, dict]]:
    findings: dict[str, list[dict]] = {}
    for finding in output["findings"]:
        # `evidence` (issue 30) is a key added to every finding: compared by tests/test_premises.py
        finding = {k: v for k, v in finding.items() if k != "evidence"}
        findings.setdefault(finding["file"], []).append(finding)
    # a file's path and format (its "release" object says what judged it, not what it is)
    return findings, {entry["path"]: {"path": entry["path"], "format": entry["format"]} for entry in output["files"]}


def canonical(value) -> str:
    return json.dumps(value, sort_keys=True)


def shorten(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


def compare_findings(path: str, before: list[dict], after: list[dict]) -> list[Difference]:
    from deepdiff import DeepDiff

    old = Counter(map(canonical, before))
    new = Counter(map(canonical, after))
    gone = [json.loads(text) for text in (old - new).elements()]
    came = sorted((json.loads(text) for text in (new - old).elements()), key=canonical)

    def place(finding):
        return finding["code"], finding["line"], finding["column"]

    result = []
    for finding in sorted(gone, key=canonical):
        partner = next((other for other in came if place(other) == place(finding)), None)
        if partner is None:
            result.append(Difference(path, finding["code"], "removed", finding["line"],
                                     shorten(finding["message"])))
        else:
            came.remove(partner)
            diff = DeepDiff(finding, partner, ignore_order=True, report_repetition=True, verbose_level=2)
            result.append(Difference(path, finding["code"], "changed", finding["line"], shorten(diff.pretty(), 600)))
    result += [Difference(path, finding["code"], "added", finding["line"], shorten(finding["message"]))
               for finding in came]
    return result


def differences(baseline: dict, current: dict) -> tuple[list[Difference], set[str]]:
    """The differences not covered by a NewFile row, and the new files that a NewFile row covers."""
    old_findings, old_files = by_file(baseline)
    new_findings, new_files = by_file(current)
    found, new = [], set()
    for path in sorted(set(old_findings) | set(new_findings) | set(old_files) | set(new_files)):
        if path not in old_files and path not in old_findings and any(
                isinstance(row, NewFile) and fnmatchcase(path, row.pattern) for row in EXPECTED):
            new.add(path)
            continue
        before, after = old_files.get(path), new_files.get(path)
        if before != after:
            kind = "added" if before is None else "removed" if after is None else "changed"
            found.append(Difference(path, "files", kind, None, f"{before} -> {after}"))
        found += compare_findings(path, old_findings.get(path, []), new_findings.get(path, []))
    return found, new


def explains(row: Change, difference: Difference, run: str) -> bool:
    return (fnmatchcase(difference.file, row.file) and row.code == difference.code and row.kind == difference.kind
            and row.line in (None, difference.line) and (row.runs is None or run in row.runs))


def applies(pattern: str, run: str, arguments: list[str], runs: tuple[str, ...] | None = None) -> bool:
    """Whether a row's file pattern lies under the paths that `run` checks."""
    paths = [a for a in arguments if a.endswith("/")]
    return (runs is None or run in runs) and any(pattern.startswith(p) for p in paths)


@pytest.mark.parametrize("run", list(RUNS))
def test_check_output_matches_baseline(run, monkeypatch):
    name, arguments = RUNS[run]
    if "../shared/corpus/deepspeed/" in arguments and not CORPUS.is_dir():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{CORPUS} is missing under CI")
        pytest.skip("../shared/corpus is not present")
    baseline = json.loads((BASELINES / name).read_text(encoding="utf-8"))
    found, new = differences(baseline, run_check(arguments, monkeypatch))

    changes = [row for row in EXPECTED if isinstance(row, Change)]
    unexplained = [d for d in found if not any(explains(row, d, run) for row in changes)]
    stale = [row for row in changes if applies(row.file, run, arguments, row.runs)
             and not any(explains(row, d, run) for d in found)]
    stale += [row for row in EXPECTED if isinstance(row, NewFile) and applies(row.pattern, run, arguments)
              and not any(fnmatchcase(path, row.pattern) for path in new)]
    problems = [f"{d.file}  {d.code}  line {d.line}  {d.kind}:\n    {d.detail}\n"
                f"    (if intended: Change({d.file!r}, {d.code!r}, {d.kind!r}, \"why ...\"))" for d in unexplained]
    problems += [f"listed in EXPECTED but no longer occurs in run {run!r} (narrow it with runs=... if it occurs "
                 f"only in some runs): {row}" for row in stale]
    if problems:
        pytest.fail(f"`check {' '.join(arguments)}` differs from tests/baselines/{name}:\n" + "\n".join(problems),
                    pytrace=False)
