"""The per-format defaults tables (formats/<fmt>/defaults.py, issue 21) and what `resolve` makes of them.

Generic: every table names a framework shardshift knows, yields only real Plan fields with values the
Plan accepts, and `resolve` marks each value it fills as a default, never overwrites what the file
set, never replaces an Unknown and never invents a world size. Then behaviour cases per framework,
each read with the real reader. The framework's own objects are compared in test_defaults_oracle.py.
"""

from __future__ import annotations

import copy

import pytest

from shardshift import formats
from shardshift.context import FRAMEWORKS
from shardshift.plan import Plan, Unknown
from shardshift.resolve import defaulted, defaults_table, is_default, resolve

FRAMEWORK_FORMATS = ("deepspeed", "megatron", "torchtitan", "axolotl", "accelerate", "fsdp2")
DISPATCHERS = ("launch", "python")  # no framework of their own: the table of what they run


def concrete_tables() -> dict[str, object]:
    """Every defaults table, by a name for the test ids: the formats' own and what the dispatchers add."""
    from shardshift.formats.launch.defaults import table_for

    tables = {name: defaults_table(name) for name in FRAMEWORK_FORMATS}
    tables["transformers"] = table_for("hf")
    return tables


TABLES = concrete_tables()


def read(format_name: str, text: str, path: str):
    document = formats.reader(format_name).read(text, path)
    assert document.syntax is None, document.syntax
    return document.plan


def resolved(format_name: str, text: str, path: str, version=None) -> Plan:
    return resolve(read(format_name, text, path), format_name, path, version)


def test_every_reader_format_but_the_plan_has_a_table():
    for name in FRAMEWORK_FORMATS:
        assert hasattr(defaults_table(name), "defaults"), name
    for name in DISPATCHERS:
        assert hasattr(defaults_table(name), "table_for"), name
    assert set(formats.READERS) == {*FRAMEWORK_FORMATS, *DISPATCHERS, "plan"}
    assert defaults_table("plan") is None  # a Plan YAML is neutral


@pytest.mark.parametrize("name", TABLES)
def test_table_names_a_known_framework(name):
    assert TABLES[name].FRAMEWORK in FRAMEWORKS


@pytest.mark.parametrize("entry, table", [("torchtitan", "torchtitan"), ("axolotl", "axolotl"),
                                          ("megatron", "megatron"), ("deepspeed", "deepspeed"),
                                          ("accelerate", "accelerate"), ("hf", "transformers"),
                                          ("torchtune", None), ("llamafactory", None), ("script", None),
                                          ("job", None), (None, None)])
def test_launch_entry_picks_the_table_of_what_it_runs(entry, table):
    from shardshift.formats.launch.defaults import table_for

    assert table_for(entry) is (TABLES[table] if table else None)
    plan = Plan()
    plan.set("world.world_size", 8)
    out = resolve(plan, "launch", "run.sh", entry=entry)
    assert bool(defaulted(out)) is (table is not None)
    assert resolve(plan, "launch", "run.sh") == plan  # no entry given: nothing known


@pytest.mark.parametrize("name", TABLES)
@pytest.mark.parametrize("version", [None, (0, 1), (99, 0)])
def test_table_yields_real_fields_the_plan_accepts(name, version):
    plan = Plan()
    seen = []
    for dotted, value in TABLES[name].defaults(plan, version):
        seen.append(dotted)
        if value is None:
            continue
        probe = copy.deepcopy(plan)
        assert probe.set(dotted, value), (dotted, value)  # AttributeError for a field the Plan has not
        if plan.get(dotted) is None:
            plan.set(dotted, value)
    if name != "fsdp2":  # torch has no default for an empty Plan: no optimizer, no fully_shard seen
        assert seen, f"{name}'s table yields nothing for an empty Plan"
    assert plan.world.world_size is None and plan.world.nodes is None and plan.world.gpus_per_node is None


def _resolve_with(name: str, plan: Plan) -> Plan:
    if name == "transformers":
        return resolve(plan, "launch", "x", entry="hf")
    return resolve(plan, name, "x")


@pytest.mark.parametrize("name", TABLES)
def test_resolve_marks_every_filled_field_and_keeps_the_rest(name):
    plan = Plan()
    plan.set("precision.param_dtype", "fp16")
    plan.set("batch.micro", 3)
    plan.set("gradient_clipping", Unknown("environment variable CLIP"))
    plan.set("optimizer.name", "AdamW")
    plan.set("optimizer.lr", "auto")
    plan.set("sharding.stage", 1)
    plan.passthrough["accelerate"] = {"distributed_type": "MEGATRON_LM"}  # Accelerate's table reads the type
    out = _resolve_with(name, plan)
    assert out.precision.param_dtype == "fp16" and out.batch.micro == 3 and out.sharding.stage == 1
    assert out.gradient_clipping == Unknown("environment variable CLIP") and out.optimizer.lr == "auto"
    filled = defaulted(out)
    assert filled, name
    assert not {"precision.param_dtype", "batch.micro", "gradient_clipping", "optimizer.lr"} & set(filled)
    for dotted in filled:
        assert is_default(out.provenance[dotted])
        assert out.provenance[dotted].pointer.startswith("default of " + TABLES[name].FRAMEWORK + " ")
        assert plan.get(dotted) is None
    assert not defaulted(plan)  # the Plan given is not changed
    assert out.world.world_size is None  # never invented


# --- DeepSpeed -----------------------------------------------------------------------------------


def test_deepspeed_micro_only_is_accumulation_1_and_no_global():
    plan = resolved("deepspeed", '{"train_micro_batch_size_per_gpu": 4}', "ds_config.json")
    assert (plan.batch.micro, plan.batch.accumulation, plan.batch.global_) == (4, 1, None)
    assert plan.precision.param_dtype == "fp32" and plan.sharding.stage == 0
    assert plan.scheduler.name == "constant" and plan.optimizer is None
    assert plan.world.world_size is None


def test_deepspeed_triple_with_a_world():
    plan = read("deepspeed", '{"train_batch_size": 64, "train_micro_batch_size_per_gpu": 2}', "ds_config.json")
    assert resolve(plan, "deepspeed", "ds_config.json").batch.accumulation is None  # no world: not known
    plan.set("world.world_size", 8)
    assert resolve(plan, "deepspeed", "ds_config.json").batch.accumulation == 4
    plan.set("parallelism.tensor", 2)  # Megatron-DeepSpeed: the mpu's data-parallel size is world / TP
    assert resolve(plan, "deepspeed", "ds_config.json").batch.accumulation == 8


def test_deepspeed_global_only():
    plan = read("deepspeed", '{"train_batch_size": 32}', "ds_config.json")
    plan.set("world.world_size", 4)
    out = resolve(plan, "deepspeed", "ds_config.json")
    assert (out.batch.micro, out.batch.accumulation, out.batch.global_) == (8, 1, 32)


def test_deepspeed_clipping_default_changed_in_0_19_3():
    text = '{"train_batch_size": 32}'
    assert resolved("deepspeed", text, "ds_config.json", (0, 19, 3)).gradient_clipping == 1.0
    assert resolved("deepspeed", text, "ds_config.json", (0, 16, 0)).gradient_clipping == 0.0


def test_deepspeed_fp16_loss_scaling_and_stage_kept():
    plan = resolved("deepspeed", '{"train_batch_size": 32, "fp16": {"enabled": true}, '
                                 '"zero_optimization": {"stage": 2}}', "ds_config.json")
    assert plan.precision.param_dtype == "fp16" and plan.sharding.stage == 2
    assert (plan.precision.loss_scale, plan.precision.initial_scale_power, plan.precision.loss_scale_window,
            plan.precision.hysteresis, plan.precision.min_loss_scale) == (0.0, 16, 1000, 2, 1.0)
    assert not is_default(plan.provenance["sharding.stage"])


def test_deepspeed_auto_config_scheduler_is_the_trainers():
    plan = resolved("deepspeed", '{"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto"}',
                    "ds_config.json")
    assert isinstance(plan.scheduler.name, Unknown) and "Trainer" in plan.scheduler.name.reason
    assert plan.batch.accumulation is None  # DeepSpeed would compute it from the "auto" values


# --- torchtitan ----------------------------------------------------------------------------------


def test_torchtitan_empty_training_is_bf16_fully_sharded():
    plan = resolved("torchtitan", "[training]\n[job]\ndump_folder = 'out'\n", "train.toml")
    assert plan.precision.param_dtype == "bf16" and plan.sharding.stage == 3
    assert plan.sharding.reshard_after_forward is True
    assert (plan.batch.micro, plan.batch.accumulation, plan.batch.global_) == (8, 1, None)
    assert isinstance(plan.parallelism.data_parallel_shard, Unknown)
    assert plan.optimizer.name == "AdamW" and plan.optimizer.lr == 8e-4 and plan.optimizer.betas == [0.9, 0.95]
    assert plan.scheduler.name == "linear" and plan.scheduler.warmup_steps == 200
    assert plan.scheduler.total_steps == 10000 and plan.gradient_clipping == 1.0
    assert plan.world.world_size is None


def test_torchtitan_pipeline_keeps_params_gathered():
    plan = resolved("torchtitan", "[parallelism]\npipeline_parallel_degree = 2\n", "train.toml")
    assert plan.sharding.reshard_after_forward is False and plan.sharding.stage == 2


def test_torchtitan_without_fsdp():
    text = "[parallelism]\ndata_parallel_shard_degree = 1\ndata_parallel_replicate_degree = 4\n"
    plan = resolved("torchtitan", text, "train.toml")
    assert plan.sharding.stage == 0 and plan.precision.param_dtype == "bf16"  # DDP: autocast
    tp = resolved("torchtitan", "[parallelism]\ndata_parallel_shard_degree = 1\ntensor_parallel_degree = 2\n",
                  "train.toml")
    assert tp.sharding.stage == 0 and tp.precision.param_dtype == "fp32"  # no mixed precision with TP alone
    open_ = resolved("torchtitan", "[parallelism]\ntensor_parallel_degree = 2\n", "train.toml")
    assert isinstance(open_.precision.param_dtype, Unknown)
    assert {a.value for a in open_.precision.param_dtype.alternatives} == {"bf16", "fp32"}


def test_torchtitan_global_batch_with_a_world():
    plan = read("torchtitan", "[training]\nlocal_batch_size = 2\nglobal_batch_size = 64\n"
                              "[parallelism]\ntensor_parallel_degree = 2\n", "train.toml")
    assert resolve(plan, "torchtitan", "train.toml").batch.accumulation is None
    plan.set("world.world_size", 8)
    out = resolve(plan, "torchtitan", "train.toml")
    assert out.parallelism.data_parallel_shard == 4 and out.batch.accumulation == 8  # 64 / (2 × 4)


def test_torchtitan_min_lr_follows_the_factor():
    plan = resolved("torchtitan", "[optimizer]\nlr = 0.001\n[lr_scheduler]\nmin_lr_factor = 0.1\n", "train.toml")
    assert plan.scheduler.min_lr == pytest.approx(1e-4)


# --- Megatron ------------------------------------------------------------------------------------

MEGATRON = """#!/bin/bash
torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 \\
    --global-batch-size 128 --micro-batch-size 1 --num-layers 4 --hidden-size 64 --num-attention-heads 4 \\
    --seq-length 128 --max-position-embeddings 128 --lr 1e-4 --train-iters 100
"""


def test_megatron_accumulation_from_the_world():
    plan = resolved("megatron", MEGATRON, "train.sh")
    assert plan.world.world_size == 8
    assert plan.batch.accumulation == 64  # 128 / (micro 1 × DP 8 / (TP 2 × PP 2))
    assert is_default(plan.provenance["batch.accumulation"])
    assert plan.precision.param_dtype == "fp32" and plan.sharding.stage == 0
    assert plan.scheduler.name == "linear" and plan.scheduler.min_lr == 0.0 and plan.scheduler.warmup_steps == 0
    assert plan.optimizer.name == "AdamW" and plan.optimizer.betas == [0.9, 0.999]
    assert plan.optimizer.weight_decay == 0.01 and plan.gradient_clipping == 1.0


def test_megatron_global_default_is_micro_times_dp():
    plan = resolved("megatron", MEGATRON.replace("--global-batch-size 128 ", ""), "train.sh")
    assert (plan.batch.global_, plan.batch.accumulation) == (2, 1)


def test_megatron_argument_list_has_no_world():
    plan = resolved("megatron", "--micro-batch-size 2\n--bf16\n--use-distributed-optimizer\n", "train.args")
    assert plan.world.world_size is None and plan.batch.global_ is None
    # no --global-batch-size: global = micro × data-parallel size, one micro-batch per step whatever the world
    assert plan.batch.accumulation == 1
    assert plan.precision.param_dtype == "bf16" and plan.sharding.stage == 1
    with_global = resolved("megatron", "--micro-batch-size 2\n--global-batch-size 64\n", "train.args")
    assert with_global.batch.accumulation is None  # 64 / (2 × data-parallel size): needs the world


def test_megatron_fp16_loss_scaling():
    plan = resolved("megatron", "--micro-batch-size 2\n--fp16\n--optimizer sgd\n", "train.args")
    assert plan.precision.initial_scale_power == 32 and plan.precision.loss_scale == 0.0
    assert plan.optimizer.name == "SGD" and plan.optimizer.betas is None


# --- Axolotl -------------------------------------------------------------------------------------

AXOLOTL = "base_model: x\nlearning_rate: 2e-5\ndatasets:\n  - path: a\n    type: alpaca\n"


def test_axolotl_defaults():
    plan = resolved("axolotl", AXOLOTL + "micro_batch_size: 2\nbatch_size: 16\n", "axolotl.yaml")
    assert (plan.batch.micro, plan.batch.accumulation, plan.batch.global_) == (2, 1, None)  # batch_size never counts
    assert plan.batch.sequence_length == 512
    dtype = plan.precision.param_dtype
    assert isinstance(dtype, Unknown) and {a.value for a in dtype.alternatives} == {"bf16", "fp16"}
    assert plan.sharding.stage == 0  # no deepspeed, no fsdp_config: DDP
    assert plan.optimizer.name == "adamw_torch_fused" and plan.optimizer.weight_decay == 0.0
    assert plan.optimizer.betas == [0.9, 0.999] and plan.optimizer.lr == 2e-5
    assert plan.scheduler.name == "cosine" and plan.scheduler.min_lr == 0.0 and plan.gradient_clipping == 1.0
    assert plan.world.world_size is None


def test_axolotl_precision_written_wins_and_fp16_false_means_fp32_without_bf16():
    assert resolved("axolotl", AXOLOTL + "bf16: true\n", "axolotl.yaml").precision.param_dtype == "bf16"
    dtype = resolved("axolotl", AXOLOTL + "fp16: false\n", "axolotl.yaml").precision.param_dtype
    assert {a.value for a in dtype.alternatives} == {"bf16", "fp32"}


def test_axolotl_sharding():
    fsdp = resolved("axolotl", AXOLOTL + "fsdp_config:\n  fsdp_version: 2\n", "axolotl.yaml")
    assert fsdp.sharding.stage == 3
    kept = resolved("axolotl", AXOLOTL + "fsdp_config:\n  fsdp_version: 2\n  reshard_after_forward: false\n",
                    "axolotl.yaml")
    assert kept.sharding.stage == 2
    ds = resolved("axolotl", AXOLOTL + "deepspeed: zero3.json\n", "axolotl.yaml")
    assert isinstance(ds.sharding.stage, Unknown)  # the ds_config decides, and it is not merged here


def test_axolotl_global_batch_with_a_world():
    plan = read("axolotl", AXOLOTL + "micro_batch_size: 2\ngradient_accumulation_steps: 4\ntensor_parallel_size: 2\n",
                "axolotl.yaml")
    plan.set("world.world_size", 8)
    assert resolve(plan, "axolotl", "axolotl.yaml").batch.global_ == 32  # 2 × 4 × 8 / TP 2


# --- Accelerate ----------------------------------------------------------------------------------


def test_accelerate_defaults():
    plan = resolved("accelerate", "compute_environment: LOCAL_MACHINE\ndistributed_type: FSDP\n"
                                  "fsdp_config:\n  fsdp_version: 2\n", "accelerate_config.yaml")
    assert plan.precision.param_dtype == "fp32" and plan.sharding.stage == 3
    assert plan.sharding.reshard_after_forward is True
    assert plan.world.world_size is None  # num_processes missing: accelerate launch refuses, nothing invented
    ds = resolved("accelerate", "distributed_type: DEEPSPEED\nmixed_precision: bf16\ndeepspeed_config:\n"
                                "  gradient_accumulation_steps: 2\n", "accelerate_config.yaml")
    assert ds.sharding.stage == 2 and ds.precision.param_dtype == "bf16"  # DeepSpeedPlugin's zero_stage 2
    ddp = resolved("accelerate", "distributed_type: MULTI_GPU\nnum_processes: 4\n", "accelerate_config.yaml")
    assert ddp.sharding.stage == 0 and ddp.world.world_size == 4 and not is_default(ddp.provenance["world.world_size"])


def test_accelerate_with_a_deepspeed_config_file():
    text = "distributed_type: DEEPSPEED\ndeepspeed_config:\n  deepspeed_config_file: ds.json\n"
    alone = resolved("accelerate", text, "accelerate_config.yaml")
    assert isinstance(alone.sharding.stage, Unknown) and isinstance(alone.precision.param_dtype, Unknown)
    from shardshift.setup import merge

    referrer = formats.reader("accelerate").read(text, "cfg/accelerate_config.yaml")
    ds_config = formats.reader("deepspeed").read('{"train_batch_size": 16, "bf16": {"enabled": true}}',
                                                 "cfg/ds.json")
    merged = resolve(merge(referrer, [ds_config]).plan, "accelerate", "cfg/accelerate_config.yaml")
    assert merged.sharding.stage == 0 and merged.precision.param_dtype == "bf16"


# --- FSDP2 code ----------------------------------------------------------------------------------


def test_fsdp2_optimizer_defaults_and_open_schedule():
    from conftest import FIXTURES

    path = FIXTURES / "fsdp2" / "reader" / "torchtune_style.py"
    plan = resolve(read("fsdp2", path.read_text(), str(path)), "fsdp2", str(path))
    assert plan.optimizer.name == "AdamW" and plan.optimizer.weight_decay == 0.01
    assert plan.optimizer.betas == [0.9, 0.999] and plan.optimizer.eps == 1e-8
    assert isinstance(plan.precision.param_dtype, Unknown)  # no param_dtype: the module's own dtype
    assert isinstance(plan.scheduler.name, Unknown)
    assert [a.value for a in plan.scheduler.name.alternatives] == ["constant"]
    path = FIXTURES / "fsdp2" / "reader" / "fp16_scaler_style.py"
    sgd = resolve(read("fsdp2", path.read_text(), str(path)), "fsdp2", str(path))
    assert sgd.optimizer.name == "SGD" and sgd.optimizer.betas is None and sgd.precision.param_dtype == "fp16"
    assert sgd.scheduler.name == "LambdaLR"


# --- launch scripts and Python scripts: the table of what they run -------------------------------


def _merged(script: str, config: str):
    from pathlib import Path

    from shardshift.setup import merge

    from conftest import FIXTURES

    docs = []
    for name in (script, config):
        path = FIXTURES / name
        text = Path(path).read_text()
        docs.append(formats.reader(formats.detect(str(path), text)).read(text, str(path)))
    return docs[0], merge(docs[0], docs[1:]).plan


def test_launch_of_torchtitan():
    from shardshift.formats.launch.defaults import entry

    launch, plan = _merged("launch/torchtitan/good/run_train.sh", "launch/torchtitan/good/llama3_8b.toml")
    assert entry(launch) == "torchtitan"
    out = resolve(plan, "launch", launch.path, entry=entry(launch))
    assert out.world.world_size == 8 and not is_default(out.provenance["world.world_size"])
    assert out.parallelism.tensor == 2 and out.sharding.stage == 3 and out.precision.param_dtype == "bf16"
    assert (out.batch.micro, out.batch.accumulation, out.batch.global_) == (1, 1, 4)  # dp_shard = 8 / TP 2
    assert out.provenance["sharding.stage"].pointer.startswith("default of torchtitan ")


def test_launch_of_an_hf_script_with_a_ds_config():
    from shardshift.formats.launch.defaults import entry

    launch, plan = _merged("launch/hf/good_precision/run.sh", "launch/hf/good_precision/ds_zero2.json")
    assert entry(launch) == "hf"
    out = resolve(plan, "launch", launch.path, entry="hf")
    assert (out.batch.micro, out.batch.accumulation, out.batch.global_) == (4, 2, 64)
    assert out.precision.param_dtype == "bf16" and out.sharding.stage == 2
    assert out.scheduler.name == "linear" and out.optimizer.lr == 5e-5
    # the newest release's optim depends on the torch the Trainer runs with: not guessed
    assert isinstance(out.optimizer.name, Unknown) and "torch_greater_or_equal_than_2_8" in out.optimizer.name.reason
    assert [a.value for a in out.optimizer.name.alternatives] == ["adamw_torch", "adamw_torch_fused"]
    assert out.provenance["scheduler.name"].pointer.startswith("default of transformers ")


@pytest.mark.parametrize("version, optim", [((4, 30, 2), "adamw_hf"), ((4, 48, 0), "adamw_torch"),
                                            ((4, 33, 3), "adamw_torch")])
def test_the_trainer_defaults_are_those_of_the_release(version, optim):
    """Each release's own TrainingArguments defaults (data/defaults/transformers.json, read from its
    training_args.py), not the newest one's: transformers 4.30.2's optim was adamw_hf."""
    from shardshift.formats.python_script.trainer_defaults import release_defaults

    assert release_defaults(version)["optim"] == optim
    launch, plan = _merged("launch/hf/good_precision/run.sh", "launch/hf/good_precision/ds_zero2.json")
    out = resolve(plan, "launch", launch.path, version, entry="hf")
    assert out.optimizer.name == optim
    assert out.provenance["optimizer.name"].pointer.endswith(".".join(map(str, version)))


def test_a_release_the_trainer_table_does_not_hold_is_unknown():
    from shardshift.formats.python_script.trainer_defaults import release_defaults

    assert release_defaults((4, 29, 2)) is None
    launch, plan = _merged("launch/hf/good_precision/run.sh", "launch/hf/good_precision/ds_zero2.json")
    out = resolve(plan, "launch", launch.path, (4, 29, 2), entry="hf")
    assert isinstance(out.optimizer.name, Unknown) and "not in shardshift's table" in out.optimizer.name.reason
    assert isinstance(out.scheduler.name, Unknown)


def test_launch_of_an_hf_script_not_in_the_tree_has_no_defaults():
    from shardshift.formats.launch.defaults import entry

    launch, plan = _merged("launch/hf/no_entry/run.sh", "launch/hf/no_entry/ds_zero2.json")
    assert launch.data.framework == "hf" and entry(launch) is None
    assert not defaulted(resolve(plan, "launch", launch.path, entry=entry(launch)))


def test_python_script_of_deepspeed_initialize():
    from shardshift.formats.python_script.defaults import entry
    from shardshift.setup import merge

    text = ("import deepspeed\nengine, opt, _, _ = deepspeed.initialize(model=model, "
            "model_parameters=model.parameters(), config='ds.json')\n")
    script = formats.reader("python").read(text, "train.py")
    assert entry(script) == "deepspeed"
    ds_config = formats.reader("deepspeed").read('{"train_micro_batch_size_per_gpu": 2}', "ds.json")
    out = resolve(merge(script, [ds_config]).plan, "python", "train.py", entry=entry(script))
    assert out.batch.accumulation == 1 and out.sharding.stage == 0 and out.scheduler.name == "constant"
    client = formats.reader("python").read(text.replace("config=", "lr_scheduler=sched, config="), "train.py")
    assert entry(client) is None  # the client's scheduler: DeepSpeed's "no scheduler" does not apply
    hf = formats.reader("python").read("from transformers import TrainingArguments\n"
                                       "a = TrainingArguments(output_dir='o', deepspeed='ds.json')\n", "train.py")
    assert entry(hf) is None


def test_torchtitan_full_bf16_training_without_mixed_precision():
    text = "[training]\ndtype = 'bfloat16'\n[parallelism]\ndata_parallel_shard_degree = 1\ntensor_parallel_degree = 2\n"
    assert resolved("torchtitan", text, "train.toml").precision.param_dtype == "bf16"


def test_deepspeed_auto_precision_is_not_fp32():
    plan = resolved("deepspeed", '{"train_batch_size": "auto", "bf16": {"enabled": "auto"}}', "ds_config.json")
    assert isinstance(plan.precision.param_dtype, Unknown) and "Trainer" in plan.precision.param_dtype.reason


def test_deepspeed_fp16_block_without_enabled_is_fp32():
    plan = resolved("deepspeed", '{"train_batch_size": 8, "fp16": {"loss_scale": 0}}', "ds_config.json")
    assert plan.precision.param_dtype == "fp32"


@pytest.mark.parametrize("name", FRAMEWORK_FORMATS)
def test_a_release_outside_the_checked_ones_has_unknown_defaults(name):
    """Issue 34: a pinned release the table was not read from resolves to Unknown (with why), never
    to the values of the releases it was read from; inside their range, and with no pin, the values
    stand, labelled with a release the table was read from."""
    from shardshift.plan import Optimizer

    table = defaults_table(name)
    checked = table.CHECKED_RELEASES
    plan = Plan()
    if name == "fsdp2":  # FSDP2 code's defaults follow what it builds: a sharded model and an optimizer
        plan.set("sharding.stage", 3)
        plan.optimizer = Optimizer(name="AdamW")
    before, after = (0, 0, 1), (max(checked)[0] + 1, 0, 0)
    assert before < min(checked)
    for outside in (before, after):
        filled = resolve(plan, name, "/nowhere/x", outside)
        values = defaulted(filled)
        assert values and all(isinstance(v, Unknown) for v in values.values()), (name, outside)
        reason = next(iter(values.values())).reason
        assert "read from the source of" in reason and f"--{table.FRAMEWORK}-version" in reason
    for inside in (min(checked), max(checked), None):
        values = defaulted(resolve(plan, name, "/nowhere/x", inside))
        assert any(not isinstance(v, Unknown) for v in values.values()), (name, inside)
    where = resolve(plan, name, "/nowhere/x", None)
    label = next(w.pointer for d, w in where.provenance.items() if is_default(w))
    assert label == f"default of {table.FRAMEWORK} {'.'.join(map(str, max(checked)))}"
