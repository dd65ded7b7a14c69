"""Real launch scripts of the shared corpus (issue 20): the values the Megatron reader takes from them,
with the scripts' own `${X:-d}` defaults applied, against a table resolved BY HAND from each script's text
(never from the tool's output), and every launch script of the two corpus folders read without a
traceback, by the reader and by `shardshift check`.

Each row: world size, TP, PP, micro batch, global batch and the params dtype as the job would run with an
empty environment and no script arguments. UNKNOWN: the script leaves the value to the environment, the
machine or a file it reads at run time (no default); None: the flag is not given."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, SHARED, needs_corpus

UNKNOWN = "unknown"
MEGATRON = SHARED / "corpus" / "megatron-scripts"
WILD = SHARED / "corpus" / "wild"

# path -> (world, tp, pp, micro, global, dtype), each worked out from the script's text:
EXPECTED: dict[str, tuple] = {
    # NUM_NODES=${HL_NUM_NODES:-1} x DEVICES_PER_NODE=${HL_DEVICES_PER_NODE:-8} (deepspeed --num_nodes/--num_gpus,
    # which starts `bash -c "$CMD"`); TP=${HL_TP:-2}; PP=${HL_PP:-2}; MICRO_BATCH=${HL_MICRO_BATCH:-1};
    # LLAMA_VER=${HL_LLAMA_VER:-3.1} -> GLOBAL_BATCH=${HL_GBS:-2048}; --bf16
    "wild/HabanaAI__Megatron-DeepSpeed/scripts/run_llama.sh": (8, 2, 2, 1, 2048, "bf16"),
    # torchrun --nproc_per_node 8 --nnodes 1; GPT_ARGS: TP 1, PP 1, micro 2, global 384, --bf16
    "wild/IEIT-Yuan__Yuan-2.0/examples/pretrain_yuan2.0_2.1B_sft.sh": (8, 1, 1, 2, 384, "bf16"),
    # torchrun 8 x 1; TP 1, PP 16, micro 1, global 1152, --bf16
    "wild/IEIT-Yuan__Yuan-2.0/examples/pretrain_yuan2.0_51B.sh": (8, 1, 16, 1, 1152, "bf16"),
    # srun under #SBATCH --nodes=128 --ntasks-per-node=8; TP_SIZE=2, PP_SIZE=4, MICRO 1, GLOBAL 1024, --bf16
    "wild/LumiOpen__Megatron-DeepSpeed/pretrain_viking_13B.sh": (1024, 2, 4, 1, 1024, "bf16"),
    # torchrun --nproc_per_node=8; TP 1, PP 1, micro 4, global ((8*4)/(1*1)*8) = 256, --bf16
    "wild/alibaba__Megatron-LLaMA/examples/LLaMA/LLaMA2_7B_standalone.sh": (8, 1, 1, 4, 256, "bf16"),
    # torchrun --nproc_per_node=8; TP 2, PP 1, micro 2, global ((8*2)/(2*1)*8) = 64, --bf16
    "wild/alibaba__Megatron-LLaMA/examples/LLaMA/LLaMA_13_standalone.sh": (8, 2, 1, 2, 64, "bf16"),
    # deepspeed --include="localhost:0,1,2,3,4,5,6,7" (8 GPUs of one host); mp_size=1, pp_size=1;
    # batch_size = 32 / 8 / 1 = 4; global_batch_size=32; --fp16
    "wild/lzzmm__reft_ds/Megatron-DeepSpeed/examples_deepspeed/data_efficiency/gpt/pretrain/"
    "ds_pretrain_gpt_1.3B_dense_base_script.sh": (8, 1, 1, 4, 32, "fp16"),
    # eval "deepspeed --num_nodes 1 --num_gpus 1 ..." (DEBUG=1 branch); only the old --model-parallel-size and
    # --batch-size flags, no --tensor-model-parallel-size / --micro-batch-size / --global-batch-size; --fp16
    "wild/yandex__YaLM-100B/megatron_lm/examples/ds_pretrain_gpt2-zero3.sh": (1, None, None, None, None, "fp16"),
    # torchrun 8 x 1; TP 8, PP 16, micro 1, global 1536, --fp16
    "megatron-scripts/NVIDIA__Megatron-LM__examples__gpt3__train_gpt3_175b_distributed.sh":
        (8, 8, 16, 1, 1536, "fp16"),
    # torchrun 8 x 1; TP_SIZE=1, no --pipeline-model-parallel-size; micro 1, global 128; --bf16 (fp8 on top)
    "megatron-scripts/NVIDIA__Megatron-LM__examples__llama__train_llama3_8b_h100_fp8.sh": (8, 1, None, 1, 128, "bf16"),
    # NNODES=${SLURM_NNODES:-"1"} x 8; TP 1, PP 4, micro 1, global 256, --bf16
    "megatron-scripts/NVIDIA__Megatron-LM__examples__mixtral__train_mixtral_8x7b_distributed.sh":
        (8, 1, 4, 1, 256, "bf16"),
    # python -m torch.distributed.run 8 x 1 (GPUS_PER_NODE=${GPUS_PER_NODE:-8}, NUM_NODES=${NUM_NODES:-1});
    # TP 1, PP_SIZE=${WORLD_SIZE} = 8, micro 1, global 128, --bf16
    "megatron-scripts/NVIDIA__Megatron-LM__examples__gptoss__02_train.sh": (8, 1, 8, 1, 128, "bf16"),
    # `launch python3 finetune_llama.py` (an ezpz shell function, eval'd): the world is
    # WORLD_SIZE=${WORLD_SIZE:-${NGPUS}}, with no default; TP=${TP:-1}, PP=${PP:-1}, MICRO_BATCH_SIZE=${MICRO_BATCH_SIZE:-8};
    # global = MICRO * GAS * WORLD_SIZE / (TP * PP): unknown with the world; --bf16
    "megatron-scripts/argonne-lcf__Megatron-DeepSpeed__ALCF__examples__finetune_llama3__finetune_llama.sh":
        (UNKNOWN, 1, 1, 8, UNKNOWN, "bf16"),
    # torchrun 8 x 1 (DISTRIBUTED_ARGS string); GPT_ARGS: TP 2, PP 2, micro 4, global 16, --fp16
    "megatron-scripts/NVIDIA__Megatron-LM__examples__pretrain_gpt_distributed_with_mp.sh": (8, 2, 2, 4, 16, "fp16"),
    # torchrun 8 x 1; TP=2, PP=2, MICRO_BATCH_SIZE=4, GLOBAL_BATCH_SIZE=32, --bf16 (with a heredoc ds_config)
    "megatron-scripts/deepspeedai__Megatron-DeepSpeed__examples_deepspeed__pretrain_llama2_distributed.sh":
        (8, 2, 2, 4, 32, "bf16"),
    # sbatch <<EOF srun ... bash -c "python pretrain_gpt.py ..." EOF: srun's task count comes from the allocation
    # (no --nodes anywhere); TP=${TP:-1}, no PP flag, MBS=${MBS:-4}, GBS=${GBS:-2048}, --bf16
    "megatron-scripts/NVIDIA__Megatron-LM__examples__megatron_fsdp__sbatch_mfsdp_deepseek_v3.sh":
        (UNKNOWN, 1, None, 4, 2048, "bf16"),
}

FIELDS = ("world.world_size", "parallelism.tensor", "parallelism.pipeline", "batch.micro", "batch.global_",
          "precision.param_dtype")


def _read(path: Path):
    from shardshift.formats.megatron.reader import read

    return read(path.read_text(encoding="utf-8"), str(path))


def _values(path: Path) -> tuple:
    from shardshift.plan import Unknown

    document = _read(path)
    plan = document.plan
    if plan is None:
        return ("no launch found",)
    out = []
    for dotted in FIELDS:
        value = plan.get(dotted)
        out.append(UNKNOWN if isinstance(value, Unknown) else value)
    return tuple(out)


# Rows the reader does not get right yet (each a known gap, measured; strict: fixing it makes the test fail
# until the mark is removed).
GAPS: dict[str, str] = {}


@needs_corpus
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(reason=GAPS[n], strict=True))
                                  if n in GAPS else n for n in sorted(EXPECTED)])
def test_values_with_script_defaults(name):
    path = SHARED / "corpus" / name
    assert path.is_file(), path
    got = _values(path)
    assert dict(zip(FIELDS, got)) == dict(zip(FIELDS, EXPECTED[name]))


def test_enough_scripts():
    assert len(EXPECTED) >= 12


def _scripts() -> list[Path]:
    found = []
    for folder in (MEGATRON, WILD):
        if folder.is_dir():
            found += [p for p in folder.rglob("*") if p.suffix in (".sh", ".slurm", ".sbatch") and p.is_file()]
    return sorted(found)


@needs_corpus
def test_every_corpus_script_reads_without_traceback():
    scripts = _scripts()
    assert len(scripts) >= 60
    for path in scripts:
        document = _read(path)
        document.plan  # the deferred Plan is built too
        document.references


@needs_corpus
def test_every_corpus_script_checks_without_traceback():
    """`shardshift check` names every script (so each is read, recognised or reported SS005, and judged)."""
    scripts = _scripts()
    done = subprocess.run([sys.executable, "-m", "shardshift", "check", "--format", "json", "--min-severity",
                           "info", *map(str, scripts)], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    output = json.loads(done.stdout)
    assert len(output["files"]) == len(scripts)
