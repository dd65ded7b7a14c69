"""The defaults tables (formats/<fmt>/defaults.py) against each framework's own objects.

For an empty or minimal configuration, every value a table fills equals what the framework resolves:
DeepSpeedConfig of minimal ds_configs at a data-parallel size (the batch triple, precision, stage,
clipping, loss scaling, no scheduler / optimizer); torchtitan's JobConfig defaults and, per degrees,
ParallelDims' shard degree and maybe_enable_amp's precision mode; Megatron-LM's parse_args +
validate_args of minimal argument lists at a world size (tests/megatron_oracle.py); axolotl's
validate_config of minimal YAMLs; Accelerate's plugins with nothing set and `accelerate launch`'s
checks; transformers' TrainingArguments; torch.optim's constructors.

One child process per framework (tests/defaults_oracle_child.py; Megatron's own harness), each
importing only that framework, all its cases batched.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from shardshift import formats
from shardshift.plan import Plan, Unknown
from shardshift.resolve import defaulted, is_default, resolve

import oracles

pytestmark = pytest.mark.oracle

TESTS = Path(__file__).resolve().parent
DTYPES = {"bfloat16": "bf16", "float32": "fp32", "float16": "fp16"}


def _child(function: str, payload, *, modules: tuple[str, ...], timeout: float = 600):
    """defaults_oracle_child.<function>(payload) in a fresh Python (JSON through files)."""
    oracles.require_installed(*modules)
    with tempfile.TemporaryDirectory(prefix="shardshift-defaults-") as scratch:
        given, result = Path(scratch, "in.json"), Path(scratch, "out.json")
        given.write_text(json.dumps(payload), encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCELERATE_", "FSDP_", "MEGATRON_LM_"))}
        env.update(DS_ACCELERATOR="cpu", HF_HUB_OFFLINE="1", TRANSFORMERS_VERBOSITY="error", PYTHONWARNINGS="ignore")
        code = ("import json, sys; sys.path.insert(0, sys.argv[1]); import defaults_oracle_child as c; "
                "out = getattr(c, sys.argv[2])(json.load(open(sys.argv[3]))); "
                "json.dump(out, open(sys.argv[4], 'w'), default=repr)")
        done = subprocess.run([sys.executable, "-c", code, str(TESTS), function, str(given), str(result)],
                              capture_output=True, text=True, timeout=timeout, env=env, cwd=scratch,
                              stdin=subprocess.DEVNULL)
        assert done.returncode == 0 and result.is_file(), f"{function}: {done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        return json.loads(result.read_text(encoding="utf-8"))


def _resolved(format_name: str, text: str, path: str, world: int | None = None, version=None) -> Plan:
    plan = formats.reader(format_name).read(text, path).plan
    if world is not None:
        plan.set("world.world_size", world)
    return resolve(plan, format_name, path, version)


# --- DeepSpeed -----------------------------------------------------------------------------------

DS_CASES = [
    ({"train_micro_batch_size_per_gpu": 4}, 8),
    ({"train_batch_size": 64, "train_micro_batch_size_per_gpu": 2}, 8),
    ({"train_batch_size": 32}, 4),
    ({"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 4}, 2),
    ({"train_batch_size": 64, "gradient_accumulation_steps": 2}, 4),
    ({"train_batch_size": 16, "fp16": {"enabled": True}}, 2),
    ({"train_batch_size": 16, "fp16": {"loss_scale": 0}}, 2),
    ({"train_batch_size": 16, "bf16": {"enabled": True}, "zero_optimization": {"stage": 3}}, 2),
]


@pytest.fixture(scope="module")
def deepspeed_answers():
    return _child("deepspeed", [{"config": c, "world": w} for c, w in DS_CASES], modules=("deepspeed",))


@pytest.mark.parametrize("index", range(len(DS_CASES)))
def test_deepspeed_table_is_what_deepspeed_resolves(deepspeed_answers, index):
    config, world = DS_CASES[index]
    answer = deepspeed_answers[index]
    assert answer["ok"], answer["error"]
    truth = answer["resolved"]
    plan = _resolved("deepspeed", json.dumps(config), "ds_config.json", world, (0, 19, 8))
    assert (plan.batch.micro, plan.batch.accumulation, plan.batch.global_) == (
        truth["train_micro_batch_size_per_gpu"], truth["gradient_accumulation_steps"], truth["train_batch_size"])
    dtype = "fp16" if truth["fp16_enabled"] else "bf16" if truth["bf16_enabled"] else "fp32"
    assert plan.precision.param_dtype == dtype
    assert plan.sharding.stage == truth["zero_stage"]
    assert plan.gradient_clipping == truth["gradient_clipping"]
    assert truth["scheduler_name"] is None and plan.scheduler.name == "constant"
    assert truth["optimizer_name"] is None and plan.optimizer is None
    if dtype == "fp16":
        for field, key in (("loss_scale", "loss_scale"), ("initial_scale_power", "initial_scale_power"),
                           ("loss_scale_window", "loss_scale_window"), ("hysteresis", "hysteresis"),
                           ("consecutive_hysteresis", "consecutive_hysteresis"), ("min_loss_scale", "min_loss_scale")):
            assert getattr(plan.precision, field) == truth[key], field
    # the same file without a world: nothing that needs the data-parallel size is filled
    alone = _resolved("deepspeed", json.dumps(config), "ds_config.json", None, (0, 19, 8))
    assert alone.world.world_size is None
    for field in ("micro", "accumulation", "global_"):
        value = getattr(alone.batch, field)
        assert value is None or value == getattr(plan.batch, field)


# --- torchtitan ----------------------------------------------------------------------------------

TITAN_DIMS = [  # (world, dp_replicate, dp_shard, cp, tp, pp)
    (8, 1, -1, 1, 1, 1), (8, 1, -1, 1, 2, 1), (8, 1, -1, 1, 2, 2), (2, 1, -1, 1, 2, 1), (4, 4, 1, 1, 1, 1),
    (4, 1, 1, 1, 4, 1), (1, 1, -1, 1, 1, 1), (8, 2, -1, 1, 1, 1), (8, 1, 1, 2, 4, 1), (8, 1, -1, 1, 1, 2),
]


@pytest.fixture(scope="module")
def titan_answer():
    dims = [{"world_size": w, "dp_replicate": r, "dp_shard": s, "cp": c, "tp": t, "pp": p}
            for w, r, s, c, t, p in TITAN_DIMS]
    return _child("torchtitan", {"dims": dims}, modules=("torchtitan", "tyro"))


def test_torchtitan_table_is_jobconfig(titan_answer):
    config = titan_answer["config"]
    training, parallelism = config["training"], config["parallelism"]
    optimizer, scheduler = config["optimizer"], config["lr_scheduler"]
    plan = _resolved("torchtitan", "[job]\ndump_folder = 'out'\n", "train.toml")
    assert plan.batch.micro == training["local_batch_size"] and training["global_batch_size"] == -1
    assert plan.batch.accumulation == 1 and plan.batch.sequence_length == training["seq_len"]
    assert plan.gradient_clipping == training["max_norm"]
    assert plan.precision.param_dtype == DTYPES[training["mixed_precision_param"]]
    assert plan.precision.reduce_dtype == DTYPES[training["mixed_precision_reduce"]]
    assert (plan.parallelism.data_parallel_replicate, plan.parallelism.tensor, plan.parallelism.pipeline,
            plan.parallelism.context, plan.parallelism.expert) == (
        parallelism["data_parallel_replicate_degree"], parallelism["tensor_parallel_degree"],
        parallelism["pipeline_parallel_degree"], parallelism["context_parallel_degree"],
        parallelism["expert_parallel_degree"])
    assert parallelism["data_parallel_shard_degree"] == -1 and isinstance(plan.parallelism.data_parallel_shard, Unknown)
    assert parallelism["fsdp_reshard_after_forward"] == "default" and plan.sharding.reshard_after_forward is True
    assert (plan.optimizer.name, plan.optimizer.lr, plan.optimizer.eps, plan.optimizer.weight_decay) == (
        optimizer["name"], optimizer["lr"], optimizer["eps"], optimizer["weight_decay"])
    assert plan.optimizer.betas == [optimizer["beta1"], optimizer["beta2"]]
    assert (plan.scheduler.name, plan.scheduler.warmup_steps) == (scheduler["decay_type"], scheduler["warmup_steps"])
    assert scheduler["total_steps"] is None and plan.scheduler.total_steps == training["steps"]
    assert scheduler["decay_ratio"] is None
    assert plan.scheduler.min_lr == pytest.approx(optimizer["lr"] * scheduler["min_lr_factor"])


@pytest.mark.parametrize("index", range(len(TITAN_DIMS)))
def test_torchtitan_precision_and_sharding_per_degrees(titan_answer, index):
    world, replicate, shard, cp, tp, pp = TITAN_DIMS[index]
    truth = titan_answer["dims"][index]
    assert "error" not in truth, truth
    text = (f"[parallelism]\ndata_parallel_replicate_degree = {replicate}\ndata_parallel_shard_degree = {shard}\n"
            f"context_parallel_degree = {cp}\ntensor_parallel_degree = {tp}\npipeline_parallel_degree = {pp}\n")
    plan = _resolved("torchtitan", text, "train.toml", world)
    expected_dtype = "fp32" if truth["amp"] == "disabled" else "bf16"
    assert plan.precision.param_dtype == expected_dtype, truth
    if truth["amp"] == "fsdp":
        assert plan.sharding.stage == (2 if pp > 1 else 3)  # reshard_after_forward "default" = not pp_enabled
    else:
        assert plan.sharding.stage == 0
    shard_degree = truth["dp_shard"]
    assert (plan.batch.accumulation, plan.batch.global_) == (1, 8 * replicate * shard_degree)


# --- Megatron-LM ---------------------------------------------------------------------------------

MEGATRON_BASE = ["--num-layers", "4", "--hidden-size", "64", "--num-attention-heads", "4", "--seq-length", "128",
                 "--max-position-embeddings", "128", "--train-iters", "10", "--lr", "1e-4"]
MEGATRON_CASES = [
    (["--micro-batch-size", "1", "--global-batch-size", "128", "--tensor-model-parallel-size", "2",
      "--pipeline-model-parallel-size", "2"], 8),
    (["--micro-batch-size", "2"], 4),
    (["--micro-batch-size", "2", "--fp16"], 2),
    (["--micro-batch-size", "1", "--bf16", "--use-distributed-optimizer", "--global-batch-size", "16"], 8),
]


@pytest.fixture(scope="module")
def megatron_verdicts():
    from megatron_oracle import MEGATRON, available

    reason = available()
    if reason is not None:
        if os.environ.get("CI", "").strip().lower() in ("1", "true", "yes"):
            pytest.fail(f"the Megatron oracle must run in CI: {reason}")
        pytest.skip(reason)
    cases = [[MEGATRON_BASE + argv, world] for argv, world in MEGATRON_CASES]
    return _child("megatron", {"megatron": str(MEGATRON), "cases": cases}, modules=("torch",), timeout=900)


@pytest.mark.parametrize("index", range(len(MEGATRON_CASES)))
def test_megatron_table_is_parse_args(megatron_verdicts, index):
    argv, world = MEGATRON_CASES[index]
    verdict = megatron_verdicts[index]
    assert verdict["ok"], verdict["error"]
    args = verdict["args"]
    plan = _resolved("megatron", "\n".join(MEGATRON_BASE + argv) + "\n", "train.args", world)
    assert (plan.parallelism.tensor, plan.parallelism.pipeline, plan.parallelism.context, plan.parallelism.expert) == (
        args["tensor_model_parallel_size"], args["pipeline_model_parallel_size"], args["context_parallel_size"],
        args["expert_model_parallel_size"])
    assert plan.parallelism.sequence_parallel == args["sequence_parallel"]
    assert plan.batch.global_ == args["global_batch_size"]
    microbatches = args["global_batch_size"] // (args["micro_batch_size"] * args["data_parallel_size"])
    assert plan.batch.accumulation == microbatches
    dtype = {"torch.float32": "fp32", "torch.bfloat16": "bf16", "torch.float16": "fp16"}[str(args["params_dtype"])]
    assert plan.precision.param_dtype == dtype
    assert plan.sharding.stage == (1 if args["use_distributed_optimizer"] else 0)
    assert args["optimizer"] == "adam" and plan.optimizer.name == "AdamW"
    assert plan.optimizer.betas == [args["adam_beta1"], args["adam_beta2"]] and plan.optimizer.eps == args["adam_eps"]
    assert plan.optimizer.weight_decay == args["weight_decay"] and plan.gradient_clipping == args["clip_grad"]
    assert (plan.scheduler.name, plan.scheduler.warmup_steps, plan.scheduler.min_lr) == (
        args["lr_decay_style"], args["lr_warmup_iters"], args["min_lr"])
    if dtype == "fp16":
        assert args["loss_scale"] is None and plan.precision.loss_scale == 0.0  # dynamic
        assert 2 ** plan.precision.initial_scale_power == args["initial_loss_scale"]
        assert (plan.precision.loss_scale_window, plan.precision.hysteresis, plan.precision.min_loss_scale) == (
            args["loss_scale_window"], args["hysteresis"], args["min_loss_scale"])


# --- Axolotl -------------------------------------------------------------------------------------

AXOLOTL_BASE = {"base_model": "x", "learning_rate": 2e-5, "datasets": [{"path": "a", "type": "alpaca"}]}
AXOLOTL_CASES = [{}, {"micro_batch_size": 2, "batch_size": 16}, {"tensor_parallel_size": 2}]


@pytest.fixture(scope="module")
def axolotl_answers():
    return _child("axolotl", [{**AXOLOTL_BASE, **case} for case in AXOLOTL_CASES], modules=("axolotl",))


@pytest.mark.parametrize("index", range(len(AXOLOTL_CASES)))
def test_axolotl_table_is_the_schema(axolotl_answers, index):
    import yaml

    truth = axolotl_answers[index]
    plan = _resolved("axolotl", yaml.safe_dump({**AXOLOTL_BASE, **AXOLOTL_CASES[index]}), "axolotl.yaml")
    assert (plan.batch.micro, plan.batch.accumulation) == (truth["micro_batch_size"],
                                                           truth["gradient_accumulation_steps"])
    assert plan.batch.sequence_length == truth["sequence_len"]
    assert truth["bf16"] == "auto" and truth["fp16"] is None and isinstance(plan.precision.param_dtype, Unknown)
    assert plan.optimizer.name == truth["optimizer"] and plan.optimizer.weight_decay == truth["weight_decay"]
    assert truth["adam_beta1"] is None and truth["adam_epsilon"] is None  # transformers' defaults then apply
    assert truth["max_grad_norm"] is None and plan.gradient_clipping == 1.0  # TrainingArguments.max_grad_norm
    assert plan.scheduler.name == truth["lr_scheduler"] and truth["cosine_min_lr_ratio"] is None
    assert (plan.parallelism.tensor, plan.parallelism.context, plan.parallelism.expert) == (
        truth["tensor_parallel_size"], truth["context_parallel_size"], truth["expert_parallel_size"])


# --- Accelerate ----------------------------------------------------------------------------------

ACCELERATE_FILES = {
    "no_processes.yaml": "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\n",
    "with_processes.yaml": "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_processes: 2\n",
}


@pytest.fixture(scope="module")
def accelerate_answer(tmp_path_factory):
    folder = tmp_path_factory.mktemp("accelerate")
    paths = {}
    for name, text in ACCELERATE_FILES.items():
        (folder / name).write_text(text)
        paths[name] = str(folder / name)
    answer = _child("accelerate", {"files": list(paths.values())}, modules=("accelerate",))
    return answer, paths


def test_accelerate_table_is_the_plugins(accelerate_answer):
    answer, paths = accelerate_answer
    fsdp1, fsdp2 = answer["fsdp1"], answer["fsdp2"]
    assert fsdp1["version"] == 1 and fsdp1["sharding_strategy"] == "FULL_SHARD"
    assert fsdp2["version"] == 2 and fsdp2["reshard_after_forward"] is True
    v1 = _resolved("accelerate", "distributed_type: FSDP\nfsdp_config: {}\n", "a.yaml")
    v2 = _resolved("accelerate", "distributed_type: FSDP\nfsdp_config:\n  fsdp_version: 2\n", "a.yaml")
    assert v1.sharding.stage == 3 and v2.sharding.stage == 3 and v2.sharding.reshard_after_forward is True
    ds = _resolved("accelerate", "distributed_type: DEEPSPEED\ndeepspeed_config: {}\n", "a.yaml")
    assert ds.sharding.stage == answer["deepspeed"]["zero_stage"]
    megatron = answer["megatron"]
    mg = _resolved("accelerate", "distributed_type: MEGATRON_LM\nmegatron_lm_config: {}\n", "a.yaml")
    assert (mg.parallelism.tensor, mg.parallelism.pipeline, mg.gradient_clipping) == (
        megatron["tp"], megatron["pp"], megatron["gradient_clipping"])
    assert not megatron["use_distributed_optimizer"] and mg.sharding.stage == 0


def test_accelerate_precision_and_no_invented_world(accelerate_answer):
    answer, paths = accelerate_answer
    assert answer["num_processes"] == -1
    missing = answer["files"][paths["no_processes.yaml"]]
    assert missing["mixed_precision"] is None and "--num_processes" in (missing["error"] or "")  # refused at launch
    given = answer["files"][paths["with_processes.yaml"]]
    assert given["error"] is None and given["launch_mixed_precision"] == "no"
    for name, text in ACCELERATE_FILES.items():
        plan = _resolved("accelerate", text, name)
        assert plan.precision.param_dtype == "fp32" and is_default(plan.provenance["precision.param_dtype"])
    assert _resolved("accelerate", ACCELERATE_FILES["no_processes.yaml"], "a.yaml").world.world_size is None


# --- transformers and torch ----------------------------------------------------------------------


def test_transformers_table_is_training_arguments():
    truth = _child("transformers", None, modules=("transformers",))
    plan = Plan()
    plan.set("world.world_size", 4)
    out = resolve(plan, "launch", "run.sh", entry="hf")
    assert (out.batch.micro, out.batch.accumulation, out.batch.global_) == (
        truth["per_device_train_batch_size"], truth["gradient_accumulation_steps"],
        truth["per_device_train_batch_size"] * truth["gradient_accumulation_steps"] * 4)
    assert not truth["bf16"] and not truth["fp16"] and out.precision.param_dtype == "fp32"
    assert truth["fsdp"] == [] and out.sharding.stage == 0
    assert (out.optimizer.lr, out.optimizer.eps, out.optimizer.weight_decay) == (
        truth["learning_rate"], truth["adam_epsilon"], truth["weight_decay"])
    # optim is decided by the torch the Trainer runs with (transformers 4.55 and later): the table says
    # so, and the installed torch's choice is one of its alternatives
    name = out.optimizer.name
    assert name == truth["optim"] or (isinstance(name, Unknown) and truth["optim"] in [a.value for a in name.alternatives])
    assert out.optimizer.betas == [truth["adam_beta1"], truth["adam_beta2"]]
    assert out.gradient_clipping == truth["max_grad_norm"]
    assert (out.scheduler.name, out.scheduler.warmup_steps) == (truth["lr_scheduler_type"], truth["warmup_steps"])
    assert all(is_default(out.provenance[d]) for d in defaulted(out))


def test_fsdp2_table_is_torch_optim():
    from shardshift.formats.fsdp2.defaults import OPTIMIZERS

    truth = _child("torch", None, modules=("torch",))
    for name, fields in OPTIMIZERS.items():
        for dotted, value in fields:
            key = dotted.split(".", 1)[1]
            assert truth[name].get(key, False) == value, (name, key)  # SGD has no decoupled_weight_decay
