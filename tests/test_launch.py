"""Issue 20: every launch script is a setup. For each launcher x entry point (fixtures/launch/):
the world the launcher starts, the files its arguments link, and a command-line override that
changes a judged value; a launch of a framework shardshift does not read stays SS005; the launch
scripts of the corpus read without a traceback."""

from __future__ import annotations

import pytest

from shardshift.formats.launch import reader as launch_reader
from shardshift.plan import known

from conftest import CORPUS, FIXTURES, check_json, needs_corpus

LAUNCH = FIXTURES / "launch"


def _read(path):
    from shardshift.check import load

    return load(str(path), explicit=True)


def _world(document):
    plan = document.plan
    return tuple(known(plan.get(f)) for f in ("world.nodes", "world.gpus_per_node", "world.world_size"))


@pytest.mark.parametrize("script, launcher, framework, world, linked", [
    ("torchtitan/good/run_train.sh", "torchrun", "torchtitan", (1, 8, 8), [("torchtitan_config", "llama3_8b.toml")]),
    ("python_module/bad/run.sh", "python -m torch.distributed.run", "torchtitan", (2, 4, 8),
     [("torchtitan_config", "llama3_8b.toml")]),
    ("accelerate/bad/launch.sh", "accelerate launch", "accelerate", (2, 8, 16),
     [("accelerate_config", "accelerate.yaml")]),
    ("accelerate/good/launch.sh", "accelerate launch", "accelerate", (None, None, 8),
     [("accelerate_config", "accelerate.yaml")]),
    ("axolotl/bad/train.sh", "axolotl train", "axolotl", (None, None, None), [("axolotl_config", "qlora.yml")]),
    ("axolotl_cli/bad/train.sh", "accelerate launch", "axolotl", (1, 4, 4), [("axolotl_config", "qlora.yml")]),
    ("hf_deepspeed/bad/run.sh", "deepspeed", "hf", (2, 8, 16), [("deepspeed_config", "ds_zero2.json")]),
    ("hf_deepspeed/good/run.sh", "torchrun", "hf", (1, 8, 8), [("deepspeed_config", "ds_zero2.json")]),
    ("mpirun/bad/run.sh", "mpirun", "hf", (None, 8, 16), [("deepspeed_config", "ds_zero2.json")]),
    ("srun/bad/job.slurm", "srun", "hf", (2, 8, 16), [("deepspeed_config", "ds_zero2.json")]),
])
def test_each_launcher_gives_its_world_and_links_its_config(script, launcher, framework, world, linked):
    document = _read(LAUNCH / script)
    assert document.format == "launch"
    assert document.data.launch.launcher == launcher
    assert document.data.framework == framework
    assert _world(document) == world
    assert [(r.role, r.resolved.rsplit("/", 1)[-1]) for r in document.references] == linked


def test_a_launch_without_a_known_count_is_unknown_with_the_reason():
    document = _read(LAUNCH / "axolotl/good/train.sh")
    size = document.plan.world.world_size
    assert known(size) is None and "accelerate launch" in size.reason


@pytest.mark.parametrize("folder, code, file, pointer", [
    # torchtitan: the script's 8 GPUs against the TOML's tensor degree 3 (the shard degree takes the rest)
    ("torchtitan/bad", "TT101", "llama3_8b.toml", "/parallelism/data_parallel_shard_degree"),
    # the command line's --parallelism.tensor_parallel_degree 3 over the TOML's 2
    ("torchtitan/override", "TT101", "llama3_8b.toml", "/parallelism/data_parallel_shard_degree"),
    ("python_module/bad", "TT101", "llama3_8b.toml", "/parallelism/data_parallel_shard_degree"),
    ("torchtitan/explicit", "PL101", "llama3_8b.toml", "/parallelism/tensor_parallel_degree"),
    # accelerate launch --num_processes 16 over the YAML's 8: the ds_config's batch no longer fits
    ("accelerate/bad", "DS201", "ds_config.json", "/train_batch_size"),
    # axolotl's --micro_batch_size over the YAML meets the ds_config's value
    ("axolotl/bad", "PL001", "train.sh", "--micro_batch_size"),
    ("axolotl_cli/bad", "PL001", "train.sh", "--micro_batch_size"),
    ("hf_deepspeed/bad", "DS201", "ds_zero2.json", "/train_batch_size"),
    ("mpirun/bad", "DS201", "ds_zero2.json", "/train_batch_size"),
    ("srun/bad", "DS201", "ds_zero2.json", "/train_batch_size"),
])
def test_the_launch_decides_a_judged_value(folder, code, file, pointer):
    status, report = check_json(str(LAUNCH / folder) + "/")
    errors = [(f["code"], f["file"].rsplit("/", 1)[-1], f["pointer"]) for f in report["findings"]
              if f["severity"] == "error"]
    assert errors == [(code, file, pointer)]
    assert status == 1


@pytest.mark.parametrize("folder", ["torchtitan/good", "accelerate/good", "axolotl/good", "axolotl_cli/good",
                                    "hf_deepspeed/good"])
def test_a_correct_launch_and_its_config_are_clean(folder):
    status, report = check_json("--min-severity", "warning", str(LAUNCH / folder) + "/")
    assert report["findings"] == [] and status == 0
    assert "launch" in {f["format"] for f in report["files"]}


def test_the_toml_error_names_the_script_as_related_place():
    _, report = check_json(str(LAUNCH / "torchtitan/bad") + "/")
    (finding,) = report["findings"]
    assert finding["file"].endswith("llama3_8b.toml")
    assert "run_train.sh starts" in finding["message"]
    assert any(r["file"].endswith("run_train.sh") and r["line"] == 5 for r in finding["related"])


def test_an_override_has_its_place_in_the_script():
    _, report = check_json(str(LAUNCH / "torchtitan/override") + "/")
    (finding,) = report["findings"]
    assert any(r["file"].endswith("run_train.sh") and r["pointer"] == "--parallelism.tensor_parallel_degree"
               for r in finding["related"])


def test_the_script_named_alone_brings_its_config():
    _, report = check_json(str(LAUNCH / "accelerate/bad/launch.sh"))
    assert [(f["code"], f["file"].rsplit("/", 1)[-1]) for f in report["findings"] if f["severity"] == "error"] == \
        [("DS201", "ds_config.json")]


@pytest.mark.parametrize("script, says", [
    ("torchtune/run.sh", "launch script of torchtune (`tune run full_finetune_distributed`)"),
    ("llamafactory/run.sh", "launch script of LLaMA-Factory"),
    ("sbatch/submit.sh", "submits the job script job.slurm to Slurm"),
])
def test_a_launch_of_a_framework_not_read_stays_ss005_saying_what_it_is(script, says):
    status, report = check_json(str(LAUNCH / script))
    (finding,) = report["findings"]
    assert finding["code"] == "SS005" and says in finding["message"]
    assert status == 1


@pytest.mark.parametrize("folder", ["torchtune", "llamafactory", "sbatch"])
def test_a_launch_that_links_nothing_adds_no_noise_in_a_folder_walk(folder):
    status, report = check_json(str(LAUNCH / folder) + "/")
    assert report["findings"] == [] and report["files"] == [] and status == 0


def test_megatron_launch_scripts_stay_the_megatron_format():
    script = FIXTURES / "megatron"
    found = sorted(script.rglob("*.sh"))
    assert found
    from shardshift import formats

    for path in found[:20]:
        text = path.read_text()
        name = formats.detect(str(path), text)
        if name == "megatron":
            continue
        assert name in (None, "launch"), path


def test_looks_like_is_a_cheap_text_test():
    assert launch_reader.looks_like("run.sh", "torchrun --nproc_per_node 8 train.py\n")
    assert launch_reader.looks_like("job", "#!/bin/bash\naccelerate launch train.py\n")
    assert not launch_reader.looks_like("notes.txt", "torchrun train.py\n")
    assert not launch_reader.looks_like("run.sh", "echo --deepspeed\n")


@needs_corpus
def test_every_corpus_launch_script_reads_without_a_traceback():
    from shardshift.check import load

    scripts = sorted(p for folder in ("wild", "megatron-scripts") for suffix in ("*.sh", "*.slurm")
                     for p in (CORPUS / folder).rglob(suffix))
    assert len(scripts) > 50
    formats = {}
    for path in scripts:
        document = load(str(path), explicit=True)
        if document.format == "launch":
            document.plan  # builds the Plan
        formats[document.format] = formats.get(document.format, 0) + 1
    assert formats.get("launch", 0) >= 15


@pytest.mark.parametrize("line, world", [
    # accelerate launch: --num_processes is the total over the machines (accelerate/utils/launch.py)
    ("accelerate launch --num_processes 16 --num_machines 2 train.py", (2, 8, 16)),
    ("accelerate launch --num_processes=4 train.py", (1, 4, 4)),
    # with a config file and no flag the count is the file's (merged from the YAML, not set here)
    ("accelerate launch --config_file a.yaml train.py", (None, None, None)),
    ("accelerate launch train.py", (None, None, "default config")),
    ("mpirun -np 16 --npernode 8 python train.py", (None, 8, 16)),
    ("mpiexec -n 4 python train.py", (None, None, 4)),
    ("mpirun python train.py", (None, None, "slot")),
    ("tune run full_finetune_single_device --config x.yaml", (1, 1, 1)),
    ("tune run --nnodes 2 --nproc_per_node 8 full_finetune_distributed --config x.yaml", (2, 8, 16)),
    ("llamafactory-cli train x.yaml", (None, None, "NPROC_PER_NODE")),
    ("sbatch --nodes 2 --ntasks-per-node 4 job.slurm", (2, 4, 8)),
    # deepspeed --include with every host's slots: exactly those (runner.py parse_resource_filter)
    ("deepspeed --include localhost:0,1,2,3 train.py", (1, 4, 4)),
    ("deepspeed --include a:0,1@b:0,1,2 train.py", (2, None, 5)),
    ("deepspeed --include worker-0 train.py", ("hostfile", "--include/--exclude", "hostfile")),
    ("deepspeed --exclude localhost:0 train.py", ("hostfile", "--include/--exclude", "hostfile")),
    # --no_python: the python a shell runs is the launch, with the launcher's counts
    ("deepspeed --num_nodes 1 --num_gpus 4 --no_python /usr/bin/bash -c 'python3 -u train.py --lr 1'", (1, 4, 4)),
])
def test_the_world_each_launcher_starts(line, world):
    from shardshift.formats.launch.world import launch_world
    from shardshift.formats.megatron.shell import read_launch_script

    (launch,) = read_launch_script("#!/bin/bash\n" + line + "\n").launches
    got = launch_world(launch)
    for value, expected in zip(got, world):
        if isinstance(expected, str):
            assert expected in value.reason
        else:
            assert value == expected


def test_the_megatron_reader_takes_its_world_from_the_shared_module():
    from shardshift.formats.megatron import reader

    document = reader.read("#!/bin/bash\ntorchrun --nnodes 2 --nproc_per_node 8 pretrain_gpt.py "
                           "--tensor-model-parallel-size 2 --num-layers 4 --micro-batch-size 1\n", "x.sh")
    assert _world(document) == (2, 8, 16)
