"""Conversion reports that say what the output really does (issue 34, from a blind measurement of
real configs): an output DeepSpeed can build, a setting that went into a field with others
reported with that field, and precision switches that are off or "auto" not called exact."""

from __future__ import annotations

import json

import pytest

from shardshift import api


def _convert(tmp_path, name: str, text: str, target: str):
    source = tmp_path / name
    source.write_text(text, encoding="utf-8")
    return api.convert(str(source), target)


def _errors_in_output(tmp_path, text: str, name: str = "ds_config.json") -> list[str]:
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    (out / name).write_text(text, encoding="utf-8")
    return [f.code for f in api.check([str(out / name)]).findings if f.severity == "error"]


TORCHTITAN = """\
[optimizer]
name = "AdamW"
lr = 3e-4
beta1 = 0.9
beta2 = 0.95

[lr_scheduler]
warmup_steps = 100
decay_ratio = 0.8
decay_type = "cosine"
min_lr_factor = 0.1

[training]
local_batch_size = 4
steps = 1000
"""


def test_scheduler_params_deepspeed_does_not_take_are_left_out_with_an_entry(tmp_path):
    conversion = _convert(tmp_path, "train.toml", TORCHTITAN, "deepspeed")
    params = json.loads(conversion.text)["scheduler"]["params"]
    assert "decay_ratio" not in params and "min_lr_factor" not in params
    notes = [e.reason for e in conversion.entries if "not written" in e.reason]
    assert any("decay_ratio" in n and "WarmupCosineLR" in n and "TypeError" in n for n in notes), notes
    assert not any(e.source == "/lr_scheduler/decay_ratio" and e.status == "exact" for e in conversion.entries)
    assert "DS411" not in _errors_in_output(tmp_path, conversion.text)


def test_an_optimizer_deepspeed_has_no_class_for_is_not_written(tmp_path):
    conversion = _convert(tmp_path, "axolotl.yaml", "base_model: m\nmicro_batch_size: 2\nlearning_rate: 0.0002\n"
                                                    "optimizer: adamw_8bit\n", "deepspeed")
    assert "optimizer" not in json.loads(conversion.text)
    entry = next(e for e in conversion.entries if e.source == "/optimizer")
    assert entry.status == "dropped", entry
    assert any("adamw_8bit" in e.reason and "deepspeed.initialize would stop" in e.reason for e in conversion.entries)
    assert "DS401" not in _errors_in_output(tmp_path, conversion.text)


def test_a_torch_optimizer_keyword_fused_adam_does_not_take_is_left_out(tmp_path):
    code = ("import torch\nfrom torch.distributed.fsdp import fully_shard\n\nmodel = torch.nn.Linear(8, 8)\n"
            "fully_shard(model)\noptimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)\n")
    conversion = _convert(tmp_path, "train_fsdp.py", code, "deepspeed")
    assert "foreach" not in json.loads(conversion.text)["optimizer"].get("params", {})
    assert "DS402" not in _errors_in_output(tmp_path, conversion.text)
    foreach = next(e for e in conversion.entries if e.source == "/optimizer/params/foreach")
    assert foreach.status == "approximate" and "not from this setting" not in foreach.reason, foreach


def test_a_setting_that_went_into_a_field_with_another_is_reported_with_it(tmp_path):
    # torchtitan: beta1 and beta2 make optimizer.betas, decay_ratio and min_lr_factor the schedule's params
    entries = {e.source: e for e in _convert(tmp_path, "train.toml", TORCHTITAN, "deepspeed").entries}
    for pointer in ("/optimizer/beta2", "/lr_scheduler/min_lr_factor"):
        assert "sets nothing" not in entries[pointer].reason, entries[pointer]
    assert entries["/optimizer/beta2"].status == "exact" and "optimizer.betas" in entries["/optimizer/beta2"].reason
    # Megatron: --adam-beta1 and --adam-beta2 make optimizer.betas
    script = ("#!/bin/bash\ntorchrun pretrain_gpt.py --adam-beta1 0.9 --adam-beta2 0.95 --lr 1e-4 "
              "--micro-batch-size 2 --global-batch-size 64 --train-iters 100\n")
    entries = {e.source: e for e in _convert(tmp_path, "train_gpt.sh", script, "deepspeed").entries}
    assert entries["--adam-beta2"].status == "exact", entries["--adam-beta2"]
    assert "optimizer.betas = [0.9, 0.95] kept" in entries["--adam-beta2"].reason


@pytest.mark.parametrize("target", ["accelerate", "accelerate-fsdp2"])
def test_precision_switches_off_or_auto_are_not_called_fp16(tmp_path, target):
    off = _convert(tmp_path, "ds_config.json", json.dumps(
        {"train_micro_batch_size_per_gpu": 2, "fp16": {"enabled": False}, "zero_optimization": {"stage": 2}}), target)
    entry = next(e for e in off.entries if e.source == "/fp16/enabled")
    assert entry.status == "exact" and "computes in fp16" not in entry.reason, entry
    auto = _convert(tmp_path, "ds_config.json", json.dumps(
        {"train_micro_batch_size_per_gpu": 2, "bf16": {"enabled": "auto"}, "zero_optimization": {"stage": 2}}), target)
    entry = next(e for e in auto.entries if e.source == "/bf16/enabled")
    assert entry.status == "unknown" and "mixed_precision" not in auto.text.split("fsdp_config")[0], (entry, auto.text)


def test_flags_of_an_entry_script_not_in_the_tree_are_unknown_not_said_to_set_nothing(tmp_path):
    script = ("#!/bin/bash\ntorchrun --nproc_per_node 8 src/finetune_entry_not_here.py --bf16 True "
              "--per_device_train_batch_size 4 --output_dir out\n")
    conversion = _convert(tmp_path, "run.sh", script, "fsdp2")
    entries = {e.source: e for e in conversion.entries}
    for flag in ("--bf16", "--per_device_train_batch_size"):
        assert entries[flag].status == "unknown", entries[flag]
        assert "finetune_entry_not_here.py is not in the checked tree" in entries[flag].reason
        assert "sets nothing" not in entries[flag].reason
    # what the output then decides on its own is named as well
    assert entries["precision.param_dtype"].status == "unknown"


def test_both_precision_flags_of_a_trainer_launch_are_reported_with_the_precision(tmp_path):
    (tmp_path / "train.py").write_text(
        "from transformers import HfArgumentParser, Trainer, TrainingArguments\n"
        "args, = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n"
        "Trainer(model=None, args=args).train()\n", encoding="utf-8")
    script = ("#!/bin/bash\ntorchrun --nproc_per_node 8 train.py --bf16 True --fp16 false --adam_beta1 0.9 "
              "--adam_beta2 0.95 --per_device_train_batch_size 4 --output_dir out\n")
    entries = {e.source: e for e in _convert(tmp_path, "run.sh", script, "fsdp2").entries}
    assert entries["--fp16"].status == "exact" and "precision.param_dtype = 'bf16' kept" in entries["--fp16"].reason
    assert entries["--adam_beta2"].status == "exact" and "optimizer.betas" in entries["--adam_beta2"].reason


def test_a_megatron_warmup_given_as_a_fraction_is_read_in_steps(tmp_path):
    script = ("#!/bin/bash\ntorchrun pretrain_gpt.py --lr 1e-4 --min-lr 1e-5 --lr-decay-style cosine "
              "--lr-warmup-fraction 0.01 --lr-decay-iters 1000 --micro-batch-size 2 --global-batch-size 64 "
              "--train-iters 2000\n")
    conversion = _convert(tmp_path, "train_gpt.sh", script, "deepspeed")
    assert json.loads(conversion.text)["scheduler"]["params"]["warmup_num_steps"] == 10
    entry = next(e for e in conversion.entries if e.source == "--lr-warmup-fraction")
    assert entry.status == "exact" and "scheduler.warmup_steps = 10 kept" in entry.reason, entry
    # a fraction that is no whole number of steps is unknown, never rounded in silence
    odd = _convert(tmp_path, "train_gpt.sh", script.replace("0.01", "0.0125"), "deepspeed")
    entry = next(e for e in odd.entries if e.source == "--lr-warmup-fraction")
    assert entry.status == "unknown" and "12.5 iterations" in entry.reason, entry


def test_a_cosine_without_warmup_becomes_a_warmup_cosine_deepspeed_accepts(tmp_path):
    script = ("#!/bin/bash\ntorchrun pretrain_gpt.py --lr 1e-4 --min-lr 1e-5 --lr-decay-style cosine "
              "--micro-batch-size 2 --global-batch-size 64 --train-iters 1000\n")
    conversion = _convert(tmp_path, "train_gpt.sh", script, "deepspeed")
    params = json.loads(conversion.text)["scheduler"]["params"]
    assert (params["warmup_num_steps"], params["warmup_min_ratio"]) == (1, 1.0)
    assert any(e.status == "approximate" and "refuses warmup_num_steps 0" in e.reason for e in conversion.entries)
    assert "DS415" not in _errors_in_output(tmp_path, conversion.text)


def test_plain_data_parallelism_into_torchtitan_needs_the_number_of_gpus(tmp_path):
    """torchtitan's degrees must multiply to the GPUs: "no sharding" over an unknown world is a
    placeholder for the replicas with an unknown entry, never a replicate degree of 1 (one GPU)."""
    import tomllib

    conversion = _convert(tmp_path, "axolotl.yaml", "base_model: m\nmicro_batch_size: 2\nlearning_rate: 0.0002\n",
                          "torchtitan")
    parallelism = tomllib.loads(conversion.text)["parallelism"]
    assert (parallelism["data_parallel_shard_degree"], parallelism["data_parallel_replicate_degree"]) == (1, "FILL_IN")
    entry = next(e for e in conversion.entries if e.target == "/parallelism/data_parallel_replicate_degree")
    assert entry.status == "unknown" and entry.reason.startswith("placeholder FILL_IN"), entry
    # with the world known, the replicas are the GPUs
    known = _convert(tmp_path, "accelerate_config.yaml", "compute_environment: LOCAL_MACHINE\ndistributed_type: "
                     "MULTI_GPU\nnum_machines: 1\nnum_processes: 8\nmixed_precision: bf16\n", "torchtitan")
    assert tomllib.loads(known.text)["parallelism"]["data_parallel_replicate_degree"] == 8


def test_a_source_with_nothing_torchtitan_holds_still_gives_a_config_it_reads(tmp_path):
    """An output with no key of the source is `[job]`, read back as torchtitan's: the report then says
    what torchtitan's defaults decide (its sharding and precision), where it said "not read back"."""
    script = "#!/bin/bash\ntorchrun --nproc_per_node 8 src/entry_not_here.py --per_device_train_batch_size 2\n"
    conversion = _convert(tmp_path, "run.sh", script, "torchtitan")
    assert conversion.text.strip() == "[job]"
    entries = {e.source: e for e in conversion.entries}
    assert entries["sharding.stage"].status == "unknown" and "default, 3, applies" in entries["sharding.stage"].reason
    assert not any("could not be read back" in e.reason for e in conversion.entries)


def test_torchtitan_training_steps_is_the_schedule_length(tmp_path):
    """torchtitan decays the learning rate over training.steps when lr_scheduler.total_steps is not set
    (components/lr_scheduler.py): the setting is the source's, never "sets nothing" or a default."""
    text = '[job]\ndump_folder = "./outputs"\n\n[training]\nlocal_batch_size = 2\nsteps = 500\n'
    conversion = _convert(tmp_path, "train.toml", text, "deepspeed")
    entry = next(e for e in conversion.entries if e.source == "/training/steps")
    assert "scheduler.total_steps = 500" in entry.reason and "sets nothing" not in entry.reason, entry
    assert not any(e.source == "scheduler.total_steps" for e in conversion.entries)


@pytest.mark.parametrize("fork_flags", ["--deepspeed --deepspeed_config $CONFIG_JSON --zero-stage 2", ""])
def test_defaults_of_a_megatron_deepspeed_script_are_not_megatron_cores(tmp_path, fork_flags):
    # Megatron-DeepSpeed parses its own arguments and DeepSpeed's engine runs the ds_config's ZeRO stage:
    # what the script leaves out is not megatron-core's default (plain DDP, stage 0)
    script = ("#!/bin/bash\ntorchrun pretrain_gpt.py --tensor-model-parallel-size 2 --micro-batch-size 4 "
              f"--global-batch-size 64 --lr 3e-4 --train-iters 1000 --bf16 {fork_flags}\n")
    conversion = _convert(tmp_path, "train_gpt.sh", script, "fsdp2")
    stage = next(e for e in conversion.entries if e.source == "sharding.stage")
    if fork_flags:
        assert stage.status == "unknown" and "Megatron-DeepSpeed" in stage.reason, stage
        assert "megatron-core 0.20.0" not in stage.reason, stage
    else:
        assert stage.status != "unknown" and "the default of megatron-core 0.20.0" in stage.reason, stage


def test_torchtitan_v01_lr_min_is_the_floor_factor_it_was(tmp_path):
    # torchtitan 0.1's lr_scheduler.lr_min is 0.2's min_lr_factor (`lr_min + (1 - lr_min) * adjustment`)
    toml = '[optimizer]\nname = "AdamW"\nlr = 8e-4\n\n[lr_scheduler]\nwarmup_steps = 200\nlr_min = 0.1\n\n' \
           '[training]\nsteps = 1000\n'
    (tmp_path / "train.toml").write_text(toml, encoding="utf-8")
    plan = api.load(str(tmp_path / "train.toml")).plan
    assert plan.scheduler.params == {"min_lr_factor": 0.1} and plan.get("scheduler.min_lr") is None
    conversion = _convert(tmp_path, "train.toml", toml, "deepspeed")
    entry = next(e for e in conversion.entries if e.source == "/lr_scheduler/lr_min")
    assert "min_lr_factor" in entry.reason, entry  # reported with the field it sets, not as a key nothing reads


def test_a_sample_based_megatron_schedule_is_read_in_steps_of_the_fixed_global_batch(tmp_path):
    # train_step steps the scheduler by the global batch (microbatches x micro batch x data parallel) per iteration
    script = ("#!/bin/bash\ntorchrun pretrain_gpt.py --lr 3e-4 --min-lr 3e-5 --lr-decay-style cosine "
              "--micro-batch-size 2 --global-batch-size 64 --train-samples 640000 --lr-warmup-samples 6400 "
              "--lr-decay-samples 600000\n")
    conversion = _convert(tmp_path, "train_gpt.sh", script, "deepspeed")
    params = json.loads(conversion.text)["scheduler"]["params"]
    assert (params["warmup_num_steps"], params["total_num_steps"]) == (100, 9375)
    # not a whole number of iterations, or a batch that ramps up: unknown, never rounded or defaulted
    for changed, why in ((script.replace("6400", "6401"), "not a whole number"),
                         (script.replace("--global-batch-size 64", "--global-batch-size 64 --rampup-batch-size 16 16 "
                                                                   "1000"), "counts the warm-up in samples")):
        entry = next(e for e in _convert(tmp_path, "train_gpt.sh", changed, "deepspeed").entries
                     if e.source == "--lr-warmup-samples")
        assert entry.status == "unknown" and why in entry.reason, entry


def test_accelerate_deepspeed_reduces_in_the_training_dtype_and_a_conversion_says_when_that_changes(tmp_path):
    # the ds_config Accelerate builds sets no communication_data_type: DeepSpeed reduces in bf16 here,
    # torchtitan's FSDP in fp32 (mixed_precision_reduce)
    yaml = ("compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 2\n"
            "mixed_precision: bf16\nnum_machines: 1\nnum_processes: 8\n")
    conversion = _convert(tmp_path, "accelerate_config.yaml", yaml, "torchtitan")
    entry = next(e for e in conversion.entries if e.source == "precision.reduce_dtype")
    assert entry.status == "approximate" and "'bf16' in the source, 'fp32' in the output" in entry.reason, entry
    fp32 = _convert(tmp_path, "accelerate_config.yaml", yaml.replace("bf16", "no"), "torchtitan")
    assert not [e for e in fp32.entries if e.source == "precision.reduce_dtype" and e.status != "exact"]


def test_a_sample_based_megatron_schedule_is_written_back_in_samples(tmp_path):
    # validate_args refuses --lr-warmup-iters in sample-based training: the spans go back in samples
    script = ("#!/bin/bash\ntorchrun pretrain_gpt.py --lr 3e-4 --micro-batch-size 2 --global-batch-size 64 "
              "--train-samples 640000 --lr-warmup-samples 6400 --lr-decay-samples 600000\n")
    text = _convert(tmp_path, "train_gpt.sh", script, "megatron").text
    assert "--lr-warmup-samples 6400" in text and "--lr-decay-samples 600000" in text
    assert "--lr-warmup-iters" not in text and "--lr-decay-iters" not in text and "--train-iters" not in text
