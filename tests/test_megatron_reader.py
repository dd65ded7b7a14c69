"""Megatron launch scripts and argument files: what the reader resolves (world size, degrees, batch,
precision), what stays unknown, the setup a `--deepspeed_config` forms, and round trips through
the writer (a launch script and a plain argument list)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shardshift.formats.megatron import read
from shardshift.formats.megatron.writer import write, write_arguments
from shardshift.plan import Unknown, without_unknowns

from conftest import SHARED, check_json, run_cli

SCRIPTS = SHARED / "corpus" / "megatron-scripts"
ARGS = SHARED / "corpus" / "megatron"
corpus = pytest.mark.skipif(not SCRIPTS.is_dir(), reason="../shared/corpus is not present")


def plan_of(path: Path):
    document = read(path.read_text(encoding="utf-8"), str(path))
    assert document.plan is not None, document.syntax
    return document.plan


def summary(plan) -> tuple:
    p, b = plan.parallelism, plan.batch
    return (plan.world.world_size, p.tensor, p.pipeline, p.context, p.expert, b.micro, b.global_,
            plan.precision.param_dtype)


# (script, world, TP, PP, CP, EP, micro, global, dtype): each value as the script gives it, None when
# it does not (the framework default), "unknown" when only the run decides it. Styles: arrays,
# strings with continuations, ${X:-d}, torchrun / python -m torch.distributed.launch / deepspeed
# launchers, environment-only node counts, heredoc ds_configs.
RESOLVED = [
    ("NVIDIA__Megatron-LM__examples__gpt3__train_gpt3_175b_distributed.sh", 8, 8, 16, None, None, 1, 1536, "fp16"),
    ("NVIDIA__Megatron-LM__examples__bert__train_bert_340m_distributed.sh", 8, 8, 16, None, None, 4, 32, "fp16"),
    # NNODES=${SLURM_NNODES:-"1"}: the script's default, one node of 8
    ("NVIDIA__Megatron-LM__examples__mixtral__train_mixtral_8x7b_distributed.sh", 8, 1, 4, None, 8, 1, 256,
     "bf16"),
    ("NVIDIA__Megatron-LM__examples__llama__train_llama3_8b_h100_fp8.sh", 8, 1, None, 1, None, 1, 128, "bf16"),
    ("NVIDIA__Megatron-LM__examples__gptoss__02_train.sh", 8, 1, 8, 1, 1, 1, 128, "bf16"),
    ("NVIDIA__Megatron-LM__examples__mimo__scripts__run_vlm_train.sh", 2, 1, 1, 2, None, 4, 128, "bf16"),
    ("NVIDIA__Megatron-LM__examples__pretrain_gpt_distributed_with_mp.sh", 8, 2, 2, None, None, 4, 16, "fp16"),
    ("NVIDIA__Megatron-LM__examples__finetune_mnli_distributed.sh", 8, 1, None, None, None, 8, None, "fp16"),
    ("deepspeedai__Megatron-DeepSpeed__examples_deepspeed__pretrain_llama2_distributed.sh", 8, 2, 2, None, None, 4,
     32, "bf16"),
    ("deepspeedai__Megatron-DeepSpeed__examples_deepspeed__azure__run-175b.sh", "unknown", 1, 1, None, None, 4, 32,
     "fp16"),
    # srun under #SBATCH --nodes=24 starting torch.distributed.run --nproc_per_node 8 through bash -c "$LAUNCHER ..."
    ("bigscience-workshop__bigscience__train__tr11-176B-ml__tr11-176B-ml.slurm", 192, 4, 12, None, None, 2, 2048,
     "bf16"),
    ("bigcode-project__Megatron-LM__examples__pretrain_bigcode_model.slurm", 512, 4, 4, None, None, 1, 512, "bf16"),
    # srun ... sh -c "python -u pretrain_gpt.py $@ ${options}" under "#SBATCH --nodes=128 --ntasks-per-node=8"
    ("NVIDIA__Megatron-LM__examples__pretrain_gpt3_175B.sh", 1024, 8, 16, None, None, 1, 1536, "fp16"),
    # options chosen by `case "${MODEL_SCALE}"` on a literal
    ("NVIDIA__Megatron-LM__examples__mamba__train.sh", 8, 1, 1, None, None, 4, 32, "bf16"),
    # `eval "$full_cmd"` chosen by $1: the finetuning branch (not the checkpoint converters)
    ("deepspeedai__Megatron-DeepSpeed__examples_deepspeed__finetune_hf_llama__finetune_llama.sh", "unknown", 2, 2,
     None, None, 16, 256, "bf16"),
    # --num_gpus 1 but no --num_nodes: the deepspeed launcher takes every host of /job/hostfile when one exists
    ("bigscience-workshop__Megatron-DeepSpeed__examples__pretrain_gpt_single_node.sh", "unknown", None, None, None,
     None, 4, 8, "fp16"),
]


@corpus
@pytest.mark.parametrize("name,world,tp,pp,cp,ep,micro,total,dtype", RESOLVED, ids=[r[0][:60] for r in RESOLVED])
def test_corpus_launch_scripts_resolve_as_the_launcher_and_megatron_would(name, world, tp, pp, cp, ep, micro, total,
                                                                           dtype):
    got = summary(plan_of(SCRIPTS / name))
    shown = tuple("unknown" if isinstance(v, Unknown) else v for v in got)
    assert shown == (world, tp, pp, cp, ep, micro, total, dtype)


@corpus
def test_environment_only_values_are_unknown_with_the_variable_name():
    plan = plan_of(ARGS / "alibaba__Pai-Megatron-Patch__examples__llama3__run_pretrain_llama_70b.args")
    assert isinstance(plan.parallelism.tensor, Unknown) and "TP" in plan.parallelism.tensor.reason
    plan = plan_of(SCRIPTS / "deepspeedai__Megatron-DeepSpeed__examples_deepspeed__azure__run-175b.sh")
    assert "--num_gpus" in plan.world.gpus_per_node.reason


@corpus
def test_every_corpus_file_reads_without_a_traceback():
    for path in sorted(SCRIPTS.iterdir()) + sorted(ARGS.glob("*.args")):
        document = read(path.read_text(encoding="utf-8"), str(path))
        if document.data is not None and document.data.given:
            assert document.plan is not None


def test_flags_are_paired_as_argparse_pairs_them(tmp_path):
    path = tmp_path / "run.sh"
    path.write_text("#!/bin/bash\ntorchrun --nnodes 2 --nproc_per_node 4 pretrain_gpt.py \\\n"
                    "  --tensor-model-parallel-size=2 --bf16 true --num-layers 4 8 --lr x \\\n"
                    "  --micro-batch-size 2 --global-batch-size 32 --num-query-groups 4 --num-attention-heads 8\n")
    document = read(path.read_text(), str(path))
    given = {g.spelling: g for g in document.data.given}
    assert given["--tensor-model-parallel-size"].value == 2
    assert given["--bf16"].value is True and given["--bf16"].stray == ("true",)
    assert given["--num-layers"].value == 4 and given["--num-layers"].stray == ("8",)
    assert given["--lr"].problem == "invalid float value: 'x'"
    plan = document.plan
    assert (plan.world.nodes, plan.world.gpus_per_node, plan.world.world_size) == (2, 4, 8)
    assert plan.model.kv_heads is None  # --num-query-groups without --group-query-attention: Megatron ignores it
    assert plan.provenance["parallelism.tensor"].pointer == "--tensor-model-parallel-size"
    assert plan.provenance["parallelism.tensor"].line == 3


def test_launcher_option_splice_makes_the_world_unknown(tmp_path):
    path = tmp_path / "run.sh"
    path.write_text('torchrun $DISTRIBUTED_ARGS pretrain_gpt.py --micro-batch-size 1 --num-layers 2 --lr 1\n')
    plan = read(path.read_text(), str(path)).plan
    assert isinstance(plan.world.world_size, Unknown)


def test_deepspeed_config_joins_the_setup(tmp_path):
    (tmp_path / "ds.json").write_text(json.dumps({"train_micro_batch_size_per_gpu": 2, "gradient_clipping": 1.0,
                                                  "zero_optimization": {"stage": 1}}))
    script = tmp_path / "run.sh"
    script.write_text("deepspeed --num_nodes 1 --num_gpus 8 pretrain_gpt.py --deepspeed \\\n"
                      "  --deepspeed_config ds.json --micro-batch-size 4 --global-batch-size 64 --num-layers 2 \\\n"
                      "  --tensor-model-parallel-size 2\n")
    status, output = check_json(str(script))
    assert {f["path"] for f in output["files"]} == {str(script)}
    conflicts = [f for f in output["findings"] if f["code"] == "PL001"]
    assert len(conflicts) == 1, output["findings"]
    related = conflicts[0]["related"][0]
    assert {conflicts[0]["file"], related["file"]} == {str(script), str(tmp_path / "ds.json")}


# --- round trips through the writer -------------------------------------------------------------


def comparable(plan, world: bool = True) -> dict:
    data = without_unknowns(plan).to_data()
    data.pop("provenance", None)
    if not world:
        data.pop("world")
    for name in ("optimizer", "scheduler", "activation_checkpointing"):
        if isinstance(data[name], dict) and all(v in (None, {}, []) for v in data[name].values()):
            data[name] = None  # a section whose only values were unknown: nothing to write or compare
    rest = data["passthrough"].get("megatron", {})
    data["passthrough"]["megatron"] = {k: v for k, v in rest.items() if not _has_unknown(v)}
    return data


def _has_unknown(value) -> bool:
    return isinstance(value, dict) or (isinstance(value, list) and any(isinstance(v, dict) for v in value))


@corpus
@pytest.mark.parametrize("style", ["script", "arguments"])
def test_corpus_round_trips_through_the_writer(style, tmp_path):
    for path in sorted(ARGS.glob("*.args")) + sorted(SCRIPTS.iterdir()):
        document = read(path.read_text(encoding="utf-8"), str(path))
        if document.plan is None or not document.data.given:
            continue
        text = write(document.plan) if style == "script" else write_arguments(document.plan)
        again = read(text, str(tmp_path / ("out.sh" if style == "script" else "out.args")))
        known_world = not isinstance(document.plan.world.world_size, Unknown) and \
            document.plan.world.world_size is not None
        assert comparable(again.plan, style == "script" and known_world) == \
            comparable(document.plan, style == "script" and known_world), path.name


_FLAG_VALUES = st.fixed_dictionaries({}, optional={
    "--tensor-model-parallel-size": st.integers(1, 16), "--pipeline-model-parallel-size": st.integers(1, 16),
    "--context-parallel-size": st.integers(1, 8), "--micro-batch-size": st.integers(1, 64),
    "--global-batch-size": st.integers(1, 4096), "--num-layers": st.integers(1, 128),
    "--lr": st.floats(1e-7, 1.0), "--weight-decay": st.floats(0.0, 1.0), "--clip-grad": st.floats(0.0, 10.0),
    "--bf16": st.just(None), "--sequence-parallel": st.just(None), "--use-distributed-optimizer": st.just(None),
    "--lr-decay-style": st.sampled_from(["constant", "linear", "cosine"]), "--split": st.just("99,1,0"),
    "--seq-length": st.integers(1, 32768)})


@given(flags=_FLAG_VALUES, nodes=st.integers(1, 4), per_node=st.integers(1, 8))
def test_generated_launch_scripts_round_trip(flags, nodes, per_node):
    words = []
    for flag, value in flags.items():
        words += [flag] if value is None else [flag, repr(value) if isinstance(value, float) else str(value)]
    text = f"torchrun --nnodes {nodes} --nproc_per_node {per_node} pretrain_gpt.py " + " ".join(words) + "\n"
    document = read(text, "run.sh")
    if not document.data.given:
        return
    again = read(write(document.plan), "out.sh")
    assert comparable(again.plan) == comparable(document.plan)
    assert again.plan.world.world_size == nodes * per_node


def test_written_script_groups_flags_by_topic_in_arrays():
    document = read("torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2 --bf16 "
                    "--micro-batch-size 2 --lr 0.1 --log-interval 5\n", "run.sh")
    text = write(document.plan)
    assert re.search(r"PARALLEL_ARGS=\(\n    --tensor-model-parallel-size 2\n\)", text)
    assert "PRECISION_ARGS=(\n    --bf16\n)" in text and "OTHER_ARGS=(\n    --log-interval 5\n)" in text
    assert 'torchrun --nnodes "$NNODES" --nproc_per_node "$GPUS_PER_NODE" pretrain_gpt.py' in text


def test_convert_cli_to_megatron_reports_what_has_no_flag(tmp_path):
    source = tmp_path / "ds_config.json"
    source.write_text(json.dumps({"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2,
                                  "bf16": {"enabled": True}, "zero_optimization": {"stage": 3,
                                                                                     "offload_param": {"device": "cpu"}},
                                  "gradient_clipping": 1.0}))
    report = tmp_path / "report.json"
    done = run_cli("convert", str(source), "--to", "megatron-args", "--report", str(report))
    assert done.returncode == 0, done.stderr
    assert "--micro-batch-size 4" in done.stdout and "--bf16" in done.stdout
    entries = {e["source"]: e for e in json.loads(report.read_text())["entries"]}
    assert entries["/zero_optimization/stage"]["status"] == "approximate"
    assert entries["/zero_optimization/offload_param/device"]["status"] == "dropped"
    # no world size to compute the global batch from the accumulation: a placeholder, never Megatron's default
    # (micro × data-parallel size, accumulation 1)
    assert "--global-batch-size FILL_IN" in done.stdout
    assert entries["/gradient_accumulation_steps"]["status"] == "unknown"
    assert "--global-batch-size FILL_IN" in entries["/gradient_accumulation_steps"]["reason"]
    placeholders = [e for e in json.loads(report.read_text())["entries"] if e["source"] == ""]
    assert {e["target"] for e in placeholders} == {"--num-layers", "--hidden-size", "--num-attention-heads",
                                                   "--seq-length", "--max-position-embeddings",
                                                   "--global-batch-size"}
    assert all(e["status"] == "unknown" and e["reason"].startswith("placeholder FILL_IN: fill in ")
               for e in placeholders)


def test_convert_cli_from_megatron_drops_tensor_and_pipeline_with_the_reason(tmp_path):
    source = tmp_path / "run.sh"
    source.write_text("torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2 "
                      "--pipeline-model-parallel-size 2 --micro-batch-size 2 --global-batch-size 16 --bf16 "
                      "--lr 1e-4 --lr-decay-style cosine --min-lr 1e-5 --use-distributed-optimizer\n")
    for target in ("deepspeed", "fsdp2"):
        report = tmp_path / f"{target}.json"
        done = run_cli("convert", str(source), "--to", target, "--report", str(report))
        assert done.returncode == 0, done.stderr
        entries = {e["source"]: e for e in json.loads(report.read_text())["entries"]}
        assert entries["--tensor-model-parallel-size"]["status"] == "dropped"
        assert "model code" in entries["--tensor-model-parallel-size"]["reason"]
        assert entries["--pipeline-model-parallel-size"]["status"] == "dropped"
        assert entries["--bf16"]["status"] == "exact"
        assert entries["--lr-decay-style"]["status"] == "approximate"
    config = json.loads(run_cli("convert", str(source), "--to", "deepspeed").stdout)
    assert config["scheduler"]["type"] == "WarmupCosineLR"
    assert config["scheduler"]["params"]["cos_min_ratio"] == pytest.approx(0.1)
    assert config["zero_optimization"]["stage"] == 1 and config["bf16"]["enabled"] is True
