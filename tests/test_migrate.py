"""`shardshift migrate --to trainer-fsdp2` (issue 34): a launch script that runs a Hugging Face
Trainer script under DeepSpeed, with its ds_config, becomes a patch: the launch under torchrun,
`--deepspeed X` as `--fsdp ... --fsdp_config Y` with Y a new JSON, the ds_config's decisions as the
Trainer's flags, every other flag kept and said so. transformers' own TrainingArguments judges the
result in tests/test_migrate_oracle.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shardshift.api import ShardshiftError
from shardshift.setup_migration import apply, migrate

from conftest import run_cli

TRAIN_PY = "from transformers import HfArgumentParser, Trainer, TrainingArguments\n"
ZERO3 = {"bf16": {"enabled": "auto"}, "zero_optimization": {"stage": 3, "overlap_comm": True,
                                                            "stage3_gather_16bit_weights_on_model_save": True},
         "train_micro_batch_size_per_gpu": "auto", "gradient_accumulation_steps": "auto", "gradient_clipping": "auto"}
LAUNCH = ("#!/bin/bash\nMODEL=org/model\n"
          "deepspeed --num_gpus=4 --master_port 29501 train.py \\\n"
          "    --model_name_or_path $MODEL \\\n"
          "    --deepspeed configs/ds.json \\\n"
          "    --per_device_train_batch_size 4 --bf16 True \\\n"
          "    --learning_rate 2e-5 --lr_scheduler_type cosine\n")


def make(tmp_path: Path, launch: str = LAUNCH, config: dict | None = None, files: dict | None = None,
         git: bool = True) -> Path:
    repo = tmp_path / "repo"
    (repo / "configs").mkdir(parents=True)
    (repo / "train.sh").write_text(launch, encoding="utf-8")
    (repo / "train.py").write_text(TRAIN_PY, encoding="utf-8")
    (repo / "configs" / "ds.json").write_text(json.dumps(ZERO3 if config is None else config, indent=2) + "\n",
                                              encoding="utf-8")
    for name, text in (files or {}).items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text, encoding="utf-8")
    if git and shutil.which("git"):
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo


def one(repo: Path, script: str = "train.sh", to: str = "trainer-fsdp2"):
    [migration] = migrate(str(repo / script), to)
    return migration


def entry(migration, source: str):
    return next(e for e in migration.entries if e.source == source)


def test_a_deepspeed_launch_becomes_torchrun_with_the_trainers_fsdp2(tmp_path):
    migration = one(make(tmp_path))
    script, config = migration.changes
    assert script.before == LAUNCH
    assert "torchrun --nproc_per_node=4 --master_port=29501 train.py \\\n" in script.after
    assert '--fsdp "full_shard auto_wrap" --fsdp_config configs/ds_fsdp2.json \\\n' in script.after
    assert "--deepspeed" not in script.after and "deepspeed " not in script.after
    # everything else as written, line for line
    assert [line for line in LAUNCH.splitlines() if "deepspeed" not in line] == \
        [line for line in script.after.splitlines() if "torchrun" not in line and "--fsdp" not in line]
    assert config.before is None and config.path.endswith(os.path.join("configs", "ds_fsdp2.json"))
    assert json.loads(config.after) == {"fsdp_version": 2, "reshard_after_forward": True,
                                        "auto_wrap_policy": "TRANSFORMER_BASED_WRAP",
                                        "state_dict_type": "FULL_STATE_DICT", "cpu_ram_efficient_loading": True}
    # the script's flags stay, and the report says so; "auto" values come from them
    kept = entry(migration, "--learning_rate")
    assert (kept.status, kept.target) == ("exact", "--learning_rate") and "kept" in kept.reason
    auto = entry(migration, "/train_micro_batch_size_per_gpu")
    assert (auto.status, auto.target) == ("exact", "--per_device_train_batch_size") and '"auto"' in auto.reason
    assert entry(migration, "/zero_optimization/overlap_comm").status == "dropped"
    assert entry(migration, "deepspeed").target == "torchrun --nproc_per_node=4 --master_port=29501"
    # no transformers pin: the release the flags are written for is said, as unknown
    assert any(e.status == "unknown" and "no transformers pin" in e.reason for e in migration.entries)


def test_the_patch_applies_with_git_and_equals_what_apply_writes(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("input: git is needed to apply the patch")
    repo = make(tmp_path)
    migration = one(repo)
    patch = tmp_path / "migration.patch"
    patch.write_text(migration.diff(), encoding="utf-8")
    done = subprocess.run(["git", "apply", "--check", str(patch)], cwd=repo, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    copy = tmp_path / "copy"
    shutil.copytree(repo, copy)
    subprocess.run(["git", "apply", str(patch)], cwd=copy, check=True)
    os.chmod(repo / "train.sh", 0o755)
    written = apply(migration)
    assert sorted(written) == sorted(c.path for c in migration.changes)
    for change in migration.changes:
        rel = os.path.relpath(change.path, repo)
        assert (copy / rel).read_text(encoding="utf-8") == (repo / rel).read_text(encoding="utf-8") == change.after
    assert os.stat(repo / "train.sh").st_mode & 0o777 == 0o755  # the script keeps its mode


def test_apply_never_writes_over_other_content(tmp_path):
    repo = make(tmp_path)
    migration = one(repo)
    (repo / "configs" / "ds_fsdp2.json").write_text("{}\n", encoding="utf-8")  # appeared since
    with pytest.raises(ShardshiftError, match="exists already"):
        apply(migration)
    assert (repo / "train.sh").read_text(encoding="utf-8") == LAUNCH  # nothing written
    (repo / "configs" / "ds_fsdp2.json").unlink()
    (repo / "train.sh").write_text(LAUNCH + "echo done\n", encoding="utf-8")  # edited since it was read
    with pytest.raises(ShardshiftError, match="changed since"):
        apply(migration)
    assert not (repo / "configs" / "ds_fsdp2.json").exists()
    # and an existing file of that name stops the migration before any patch is made
    (repo / "configs" / "ds_fsdp2.json").write_text("{}\n", encoding="utf-8")
    with pytest.raises(ShardshiftError, match="exists already"):
        one(repo)


def test_the_ds_configs_decisions_become_the_trainers_flags(tmp_path):
    config = {"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": "auto", "gradient_clipping": 0.5,
              "zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}},
              "optimizer": {"type": "AdamW", "params": {"lr": 2e-5, "betas": [0.9, 0.95], "weight_decay": 0.1}},
              "scheduler": {"type": "WarmupCosineLR", "params": {"warmup_num_steps": 100, "cos_min_ratio": 0.1,
                                                                 "warmup_type": "linear"}}}
    migration = one(make(tmp_path, config=config))
    after = migration.changes[0].after
    # DeepSpeed's blocks replaced --optim and --lr_scheduler_type: now the flags say what ran
    assert "--lr_scheduler_type cosine_with_min_lr" in after and "--lr_scheduler_type cosine\n" not in after
    assert "--optim adamw_torch" in after and "--lr_scheduler_kwargs '{\"min_lr_rate\": 0.1}'" in after
    # literal values the Trainer required to agree with its own flags: written where the script has none
    assert "--max_grad_norm 0.5" in after and "--weight_decay 0.1" in after and "--warmup_steps 100" in after
    assert "--adam_beta1 0.9 --adam_beta2 0.95" in after
    assert after.count("--learning_rate") == 1 and after.count("--per_device_train_batch_size") == 1  # same values
    assert '--fsdp "shard_grad_op auto_wrap"' in after
    written = json.loads(migration.changes[1].after)
    assert written["reshard_after_forward"] is False and written["cpu_offload"] is True
    assert "cpu_ram_efficient_loading" not in written
    assert entry(migration, "/zero_optimization/stage").status == "approximate"
    assert entry(migration, "/zero_optimization/offload_optimizer/device").status == "approximate"
    assert entry(migration, "/scheduler/type").status == "approximate"  # cosine to a floor: the same shape
    assert entry(migration, "/optimizer/params/lr").reason.startswith("the script's --learning_rate 2e-5, kept")


def test_a_disagreeing_flag_stays_and_is_reported(tmp_path):
    config = dict(ZERO3, gradient_clipping=2.0)
    migration = one(make(tmp_path, LAUNCH.replace("--bf16 True", "--bf16 True --max_grad_norm 1.0"), config))
    clipping = entry(migration, "/gradient_clipping")
    assert clipping.status == "approximate" and "refuses" in clipping.reason
    assert "--max_grad_norm 1.0" in migration.changes[0].after and "--max_grad_norm 2" not in migration.changes[0].after


@pytest.mark.parametrize(("launcher", "expected", "status"), [
    ("deepspeed train.py", "torchrun --nproc_per_node=gpu train.py", "exact"),
    ("deepspeed --include localhost:0,2 train.py", "env CUDA_VISIBLE_DEVICES=0,2 torchrun --nproc_per_node=2 train.py",
     "exact"),
    ("deepspeed --num_nodes 2 --num_gpus 8 --hostfile hosts train.py",
     "torchrun --nproc_per_node=8 --nnodes=2 --node_rank=FILL_IN --master_addr=FILL_IN train.py", "unknown"),
    ("deepspeed --num_gpus $NGPU --module train", "torchrun --nproc_per_node=$NGPU --module train", "exact"),
    ("torchrun --nproc_per_node 2 train.py", "torchrun --nproc_per_node 2 train.py", "exact"),
])
def test_the_launcher(tmp_path, launcher, expected, status):
    launch = f"{launcher} --deepspeed configs/ds.json --bf16 True\n"
    files = {"train/__main__.py": TRAIN_PY} if "--module" in launcher else {}
    migration = one(make(tmp_path, launch, files=files))
    assert migration.changes[0].after.startswith(expected + " --fsdp")
    said = [e for e in migration.entries if e.source in ("deepspeed", "torchrun")]
    assert said and said[0].status == status


def test_the_config_path_is_written_as_the_script_wrote_it(tmp_path):
    quoted = LAUNCH.replace("--deepspeed configs/ds.json", "--deepspeed \"./configs/ds.json\"")
    assert '--fsdp_config "./configs/ds_fsdp2.json"' in one(make(tmp_path / "a", quoted)).changes[0].after
    variable = LAUNCH.replace("MODEL=org/model\n", "MODEL=org/model\nDS=configs/ds.json\n").replace(
        "--deepspeed configs/ds.json", "--deepspeed $DS")
    assert "--fsdp_config configs/ds_fsdp2.json" in one(make(tmp_path / "b", variable)).changes[0].after
    folder = LAUNCH.replace("--deepspeed configs/ds.json", "--deepspeed ${ROOT:-.}/configs/ds.json")
    assert "--fsdp_config ${ROOT:-.}/configs/ds_fsdp2.json" in one(make(tmp_path / "c", folder)).changes[0].after


def test_what_cannot_be_migrated_is_an_error_that_says_why(tmp_path):
    old = make(tmp_path / "old", files={"requirements.txt": "transformers==4.46.0\n"})
    with pytest.raises(ShardshiftError, match=r"transformers 4\.46\.0 \(requirements.txt:1\) builds FSDP1"):
        one(old)
    other = make(tmp_path / "other", files={"train.py": "import deepspeed\n"})
    with pytest.raises(ShardshiftError, match="builds no TrainingArguments"):
        one(other)
    plain = make(tmp_path / "plain", "deepspeed train.py --deepspeed_config configs/ds.json\n")
    with pytest.raises(ShardshiftError, match="no launch in it passes --deepspeed"):
        one(plain)
    with pytest.raises(ShardshiftError, match="unknown migration target"):
        migrate(str(plain / "train.sh"), "fsdp3")


def test_a_folder_migrates_each_trainer_launch(tmp_path):
    readme = "# Train\n\n```bash\ndeepspeed train.py --deepspeed configs/ds.json --bf16 True\n```\n"
    repo = make(tmp_path, files={"scripts/other.sh": "echo nothing to see\n", "README.md": readme,
                                 "scripts/second.sh": LAUNCH.replace("train.py", "../train.py").replace(
                                     "configs/ds.json", "../configs/ds.json")})
    found = migrate(str(repo), "trainer-fsdp2")
    assert sorted(os.path.basename(m.source) for m in found) == ["second.sh", "train.sh"]  # not the README
    with pytest.raises(ShardshiftError, match="a README's commands are not migrated"):
        one(repo, "README.md")


def test_the_command_line(tmp_path):
    repo = make(tmp_path)
    done = run_cli("migrate", "train.sh", "--to", "trainer-fsdp2", "--report", str(tmp_path / "r.json"), cwd=repo)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("--- a/train.sh\n+++ b/train.sh\n") and "+++ b/configs/ds_fsdp2.json" in done.stdout
    assert "train.sh:5:5: exact       --deepspeed -> --fsdp_config configs/ds_fsdp2.json" in done.stderr
    assert (repo / "train.sh").read_text(encoding="utf-8") == LAUNCH  # nothing written without --apply
    report = json.loads((tmp_path / "r.json").read_text())
    assert report[0]["target_format"] == "trainer-fsdp2" and report[0]["summary"]["exact"] > 5
    done = run_cli("migrate", "train.sh", "--to", "trainer-fsdp2", "--apply", cwd=repo)
    assert done.returncode == 0 and done.stdout == "" and "written: train.sh, configs/ds_fsdp2.json" in done.stderr
    assert "torchrun" in (repo / "train.sh").read_text(encoding="utf-8")
    again = run_cli("migrate", "train.sh", "--to", "trainer-fsdp2", cwd=repo)
    assert again.returncode == 1 and "no launch in it passes --deepspeed" in again.stderr
    assert run_cli("migrate", "nothing.sh", "--to", "trainer-fsdp2", cwd=repo).returncode == 2


_OPTIONS = st.lists(st.sampled_from(["--num_gpus 2", "--num_gpus=8", "--master_port 1234", "--master_addr=h",
                                     "--include localhost:1", "--ssh_port 22", "--no_local_rank",
                                     "--bind_cores_to_rank"]), max_size=3, unique=True)
_FLAGS = st.lists(st.sampled_from(["--bf16 True", "--learning_rate 1e-4", "--output_dir out", "--do_train",
                                   "--lr_scheduler_type linear", "--seed 3", "--report_to none"]),
                  max_size=5, unique=True)


def _generated_launch(options, before, after, wrapped) -> tuple[str, list[str]]:
    """A deepspeed launch with the launcher `options`, the Trainer flags `before` and `after` --deepspeed,
    one line or one flag per line; and the Trainer flags in their order."""
    if any(o.startswith("--include") for o in options) and any(o.startswith("--num_gpus") for o in options):
        options = [o for o in options if not o.startswith("--num_gpus")]
    after = [f for f in after if f not in before]
    sep = " \\\n    " if wrapped else " "
    return sep.join(["deepspeed", *options, "train.py", *before, "--deepspeed configs/ds.json", *after]) + "\n", \
        before + after


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(options=_OPTIONS, before=_FLAGS, after=_FLAGS, wrapped=st.booleans())
def test_any_launch_reads_back_as_torchrun_with_the_same_trainer_flags(tmp_path_factory, options, before, after,
                                                                        wrapped):
    from shardshift.formats.launch import reader

    launch, flags = _generated_launch(options, before, after, wrapped)
    repo = make(tmp_path_factory.mktemp("prop"), launch, git=False)
    migration = one(repo)
    text = migration.changes[0].after
    document = reader.read(text, str(repo / "train.sh"))
    launched = document.data.launch
    assert launched.launcher == "torchrun" and launched.script == "train.py"
    given_flags = [(a.flag, a.value) for a in launched.args]
    expected = [(f.split()[0], f.split()[1] if " " in f else None) for f in flags]
    assert [f for f in given_flags if not f[0].startswith("--fsdp")] == expected
    assert ("--fsdp_config", "configs/ds_fsdp2.json") in given_flags


_NOISE = st.lists(st.sampled_from(list("\"'`$(){}[];&|\\ \n\t=-#x1") + ["${A:-b}", "$(x)", "--deepspeed",
                                                                         " \\\n", "deepspeed ", "<<EOF\n"]),
                  max_size=30).map("".join)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(prefix=_NOISE, middle=_NOISE, suffix=_NOISE)
def test_a_hostile_script_is_migrated_or_refused_never_a_traceback(tmp_path_factory, prefix, middle, suffix):
    launch = f"{prefix}\ndeepspeed --num_gpus 2 train.py {middle} --deepspeed configs/ds.json {suffix}\n"
    repo = make(tmp_path_factory.mktemp("hostile"), launch, git=False)
    try:
        migration = one(repo)
    except ShardshiftError:
        return
    script = migration.changes[0]
    assert script.before == launch and "--fsdp_config" in script.after
    # only the launch's own words changed: the text before it is kept as written (a prefix that itself
    # starts a deepspeed command is that launch, and is rewritten)
    if "deepspeed" not in prefix:
        assert script.after.startswith(prefix)


def test_several_nodes_keep_a_given_master_address(tmp_path):
    launch = "deepspeed --num_nodes 2 --num_gpus 8 --master_addr node0 train.py --deepspeed configs/ds.json\n"
    after = one(make(tmp_path, launch)).changes[0].after
    assert after.startswith("torchrun --nproc_per_node=8 --nnodes=2 --node_rank=FILL_IN --master_addr=node0 train.py")
    assert after.count("--master_addr") == 1


@pytest.mark.parametrize(("launcher", "expected", "status"), [
    ("deepspeed --num_gpus=4 train.py",
     "accelerate launch --config_file configs/ds_accelerate_fsdp2.yaml --num_processes 4 train.py", "exact"),
    ("deepspeed --include localhost:0,2 --master_port 29600 train.py",
     "env CUDA_VISIBLE_DEVICES=0,2 accelerate launch --config_file configs/ds_accelerate_fsdp2.yaml "
     "--num_processes 2 --main_process_port 29600 train.py", "exact"),
    ("deepspeed train.py",
     "accelerate launch --config_file configs/ds_accelerate_fsdp2.yaml --num_processes FILL_IN train.py", "unknown"),
    ("torchrun --nproc_per_node 2 train.py",
     "accelerate launch --config_file configs/ds_accelerate_fsdp2.yaml --num_processes 2 train.py", "exact"),
])
def test_the_accelerate_target_starts_the_trainer_with_accelerate_launch(tmp_path, launcher, expected, status):
    migration = one(make(tmp_path, f"{launcher} --deepspeed configs/ds.json --bf16 True\n"), to="accelerate-fsdp2")
    script, config = migration.changes
    assert script.after.startswith(expected + " --bf16 True") and "--deepspeed" not in script.after
    said = [e for e in migration.entries if e.source in ("deepspeed", "torchrun")]
    assert said and said[0].status == status
    import yaml

    written = yaml.safe_load(config.after)
    assert config.before is None and config.path.endswith("ds_accelerate_fsdp2.yaml")
    assert written["distributed_type"] == "FSDP" and written["fsdp_config"]["fsdp_version"] == 2
    assert written["num_processes"] == (int(expected.split("--num_processes ")[1].split()[0])
                                        if status == "exact" else "FILL_IN")
    # the ds_config's settings each have an entry, the ZeRO stage with what the config now says
    stage = next(e for e in migration.entries if e.source == "/zero_optimization/stage")
    assert "fsdp_reshard_after_forward" in (stage.target or "")


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(options=_OPTIONS, before=_FLAGS, after=_FLAGS, wrapped=st.booleans())
def test_any_launch_reads_back_as_accelerate_launch_with_the_same_trainer_flags(tmp_path_factory, options, before,
                                                                                after, wrapped):
    from shardshift.formats.launch import reader

    launch, flags = _generated_launch(options, before, after, wrapped)
    repo = make(tmp_path_factory.mktemp("prop"), launch, git=False)
    migration = one(repo, to="accelerate-fsdp2")
    text = migration.changes[0].after
    launched = reader.read(text, str(repo / "train.sh")).data.launch
    assert launched.launcher.startswith("accelerate") and launched.script == "train.py", text
    given_flags = [(a.flag, a.value) for a in launched.args]
    expected = [(f.split()[0], f.split()[1] if " " in f else None) for f in flags]
    assert [f for f in given_flags if f[0] != "--max_grad_norm"] == expected
    # every launcher option is carried or reported dropped
    reported = {e.source for e in migration.entries}
    for option in options:
        name = option.split()[0].split("=")[0]
        assert name in ("--num_gpus", "--include", "--master_port") or name in reported, (name, reported)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(prefix=_NOISE, middle=_NOISE, suffix=_NOISE)
def test_a_hostile_script_is_migrated_to_accelerate_or_refused_never_a_traceback(tmp_path_factory, prefix, middle,
                                                                                 suffix):
    launch = f"{prefix}\ndeepspeed --num_gpus 2 train.py {middle} --deepspeed configs/ds.json {suffix}\n"
    repo = make(tmp_path_factory.mktemp("hostile"), launch, git=False)
    try:
        migration = one(repo, to="accelerate-fsdp2")
    except ShardshiftError:
        return
    script = migration.changes[0]
    assert script.before == launch and "accelerate launch --config_file" in script.after
    if "deepspeed" not in prefix:
        assert script.after.startswith(prefix)


# -- a DeepSpeed script's own loop: --to fsdp2 and --to torchtitan ------------------------------------------------

OWN_TRAIN_PY = ("import argparse\nimport deepspeed\n\nparser = argparse.ArgumentParser()\n"
                "parser.add_argument('--epochs', type=int)\nparser = deepspeed.add_config_arguments(parser)\n"
                "args = parser.parse_args()\nmodel = build()\n"
                "engine, optimizer, _, _ = deepspeed.initialize(args=args, model=model)\n")
OWN_LAUNCH = ("#!/bin/bash\ndeepspeed --num_gpus 2 --master_port 29600 train.py \\\n    --epochs 3 \\\n"
              "    --deepspeed \\\n    --deepspeed_config configs/ds.json\n")
OWN_CONFIG = {"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 2, "gradient_clipping": 1.0,
              "zero_optimization": {"stage": 2}, "optimizer": {"type": "AdamW", "params": {"lr": 1e-4}}}


def own(tmp_path: Path, launch: str = OWN_LAUNCH) -> Path:
    return make(tmp_path, launch, OWN_CONFIG, files={"train.py": OWN_TRAIN_PY})


def test_a_deepspeed_scripts_loop_gets_the_fsdp2_module_and_torchrun(tmp_path):
    repo = own(tmp_path)
    migration = one(repo, to="fsdp2")
    script, module = migration.changes
    assert script.after == "#!/bin/bash\ntorchrun --nproc_per_node=2 --master_port=29600 train.py \\\n    --epochs 3\n"
    assert module.before is None and module.path == str(repo / "fsdp2_setup.py")  # beside the entry: importable
    assert "def setup(" in module.after and "MICRO_BATCH_SIZE = 2" in module.after and "WORLD_SIZE = 2" in module.after
    assert entry(migration, "--epochs").status == "exact" and "kept" in entry(migration, "--epochs").reason
    assert entry(migration, "--deepspeed_config").reason.startswith("removed: DeepSpeed's own flag")
    initialize = entry(migration, "deepspeed.initialize")
    assert (initialize.file, initialize.line, initialize.status) == (str(repo / "train.py"), 9, "unknown")
    assert entry(migration, "/gradient_clipping").status == "exact"
    written = apply(migration)
    assert sorted(os.path.basename(p) for p in written) == ["fsdp2_setup.py", "train.sh"]


def test_a_deepspeed_scripts_loop_gives_way_to_torchtitans_trainer(tmp_path):
    repo = own(tmp_path)
    migration = one(repo, to="torchtitan")
    script, toml = migration.changes
    assert script.after == ("#!/bin/bash\ntorchrun --nproc_per_node=2 --master_port=29600 -m torchtitan.train "
                            "--job.config_file configs/ds_torchtitan.toml\n")
    assert toml.path == str(repo / "configs" / "ds_torchtitan.toml")
    assert "local_batch_size = 2" in toml.after and "global_batch_size = 8" in toml.after  # 2 × 2 × 2 processes
    assert entry(migration, "train.py").status == "unknown"
    assert {entry(migration, f).status for f in ("--epochs", "--deepspeed", "--deepspeed_config")} == {"dropped"}


@pytest.mark.parametrize("to", ["fsdp2", "torchtitan"])
def test_a_ds_config_alone_migrates_to_the_new_file_only(tmp_path, to):
    repo = own(tmp_path)
    [migration] = migrate(str(repo / "configs" / "ds.json"), to)
    assert [c.before for c in migration.changes] == [None]
    assert migration.changes[0].path == str(repo / "configs" / ("fsdp2_setup.py" if to == "fsdp2"
                                                                  else "ds_torchtitan.toml"))


def test_the_own_loop_targets_refuse_what_they_cannot_migrate(tmp_path):
    trainer = make(tmp_path / "trainer")
    with pytest.raises(ShardshiftError, match="Hugging Face Trainer script, whose FSDP2 is the Trainer's own"):
        one(trainer, to="fsdp2")
    with pytest.raises(ShardshiftError, match="no launch script here passes --deepspeed_config"):
        migrate(str(trainer), "torchtitan")
    repo = own(tmp_path / "own")
    (repo / "fsdp2_setup.py").write_text("# mine\n", encoding="utf-8")
    with pytest.raises(ShardshiftError, match="exists already"):
        one(repo, to="fsdp2")
    assert [os.path.basename(m.source) for m in migrate(str(repo), "torchtitan")] == ["train.sh"]


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(options=_OPTIONS, flags=_FLAGS, to=st.sampled_from(["fsdp2", "torchtitan"]))
def test_any_deepspeed_script_launch_reads_back_as_torchrun(tmp_path_factory, options, flags, to):
    launch = (f"#!/bin/bash\ndeepspeed {' '.join(options)} train.py {' '.join(flags)} --deepspeed "
              "--deepspeed_config configs/ds.json\n")
    repo = own(tmp_path_factory.mktemp("own"), launch)
    migration = one(repo, to=to)
    from shardshift.formats.launch.reader import read

    data = read(migration.changes[0].after, str(repo / "train.sh")).data
    assert data.launch.launcher == "torchrun"
    given_flags = [a.flag for a in data.launch.args if a.flag]
    if to == "fsdp2":
        assert given_flags == [f.split()[0] for f in flags]  # DeepSpeed's own flags gone, the rest as they were
    else:
        assert given_flags == ["--job.config_file"]
