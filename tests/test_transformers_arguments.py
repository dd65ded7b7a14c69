"""TA rules (issue 33): what `TrainingArguments` refuses when it is built, on `TrainingArguments(...)` calls and on
the TrainingArguments flags of launch scripts, with the release that judges them."""

from __future__ import annotations

import pytest

from shardshift import api

ENTRY = "from transformers import HfArgumentParser, Trainer, TrainingArguments\n" \
        "args, = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n"


def _findings(tmp_path, files: dict[str, str], pin: str | None = "5.24.0"):
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    if pin is not None:
        (tmp_path / "requirements.txt").write_text(f"transformers=={pin}\n", encoding="utf-8")
    found = api.check([str(tmp_path)]).findings
    return [(f.code, f.severity, f.line, f.column) for f in found if f.code.startswith("TA")]


def test_launch_flags_meet_the_checks_at_the_flag_that_decides(tmp_path):
    launch = ("#!/bin/bash\ntorchrun --nproc_per_node 4 train.py --output_dir out --load_best_model_at_end "
              "--save_strategy epoch --lr_scheduler_type reduce_lr_on_plateau --dataloader_prefetch_factor 2\n")
    found = _findings(tmp_path, {"run.sh": launch, "train.py": ENTRY})
    line = launch.splitlines()[1]
    assert sorted(found) == [("TA002", "error", 2, line.index("--save_strategy") + 1),
                             ("TA003", "error", 2, line.index("--lr_scheduler_type") + 1),
                             ("TA004", "error", 2, line.index("--dataloader_prefetch_factor") + 1)]
    fixed = launch.replace("--output_dir out", "--output_dir out --eval_strategy epoch --dataloader_num_workers 2")
    assert _findings(tmp_path, {"run.sh": fixed}) == []


def test_a_trl_config_has_defaults_of_its_own_so_only_given_values_count(tmp_path):
    entry = ENTRY.replace("TrainingArguments)", "SFTConfig)").replace(", TrainingArguments", "") \
        .replace("from transformers import", "from trl import SFTConfig\nfrom transformers import")
    launch = "#!/bin/bash\ntorchrun train.py --output_dir out --load_best_model_at_end --save_strategy epoch\n"
    assert _findings(tmp_path, {"run.sh": launch, "train.py": entry}) == []  # SFTConfig's eval_strategy: unknown
    both = launch.replace("--save_strategy epoch", "--fp16 --bf16")
    assert [f[0] for f in _findings(tmp_path, {"run.sh": both})] == ["TA001"]


def test_arguments_a_spread_may_set_are_not_taken_as_defaults(tmp_path):
    script = ("from transformers import TrainingArguments\n\ndef main(extra):\n"
              "    return TrainingArguments(output_dir='out', load_best_model_at_end=True, **extra)\n")
    assert _findings(tmp_path, {"train.py": script}) == []
    given = script.replace("**extra", "save_strategy='epoch', **extra")
    assert _findings(tmp_path, {"train.py": given}) == []  # the spread may give eval_strategy too
    plain = script.replace(", **extra", ", save_strategy='epoch'")
    assert [f[:2] for f in _findings(tmp_path, {"train.py": plain})] == [("TA002", "error")]


@pytest.mark.parametrize(("pin", "expected"), [("4.12.0", []), ("4.13.0", [("TA001", "info")]),
                                               (None, [("TA001", "info")]), ("4.15.0", [("TA001", "error")]),
                                               ("5.24.0", [("TA001", "error")])])
def test_the_release_decides_whether_the_check_exists(tmp_path, pin, expected):
    # fp16 with bf16: refused from 4.15 (read), absent in 4.12 (read); 4.13 was not read
    script = "from transformers import TrainingArguments\nargs = TrainingArguments(output_dir='o', fp16=True, bf16=True)\n"
    found = _findings(tmp_path, {"train.py": script}, pin)
    assert [f[:2] for f in found if f[0] == "TA001"] == expected
    if pin == "4.12.0":  # 4.12 has no bf16 field at all: the class refuses the keyword first (TA010)
        assert [f[:2] for f in found if f[0] == "TA010"] == [("TA010", "error")]


@pytest.mark.oracle
def test_the_rules_refuse_exactly_what_training_arguments_refuses(tmp_path):
    """Differential, against transformers' own TrainingArguments: over combinations of the values the TA rules read
    (FSDP's included), a TA finding comes out exactly when building the arguments raises ValueError."""
    hypothesis = pytest.importorskip("hypothesis")
    strategies = hypothesis.strategies
    transformers = pytest.importorskip("transformers")
    if transformers.__version__ != "5.24.0":
        pytest.skip(f"input: the rules' checks were read from 5.24.0, not {transformers.__version__}")
    values = {
        "fp16": strategies.booleans(), "bf16": strategies.booleans(), "fp16_full_eval": strategies.booleans(),
        "bf16_full_eval": strategies.booleans(), "load_best_model_at_end": strategies.booleans(),
        "eval_strategy": strategies.sampled_from(["no", "steps", "epoch"]),
        "save_strategy": strategies.sampled_from(["no", "steps", "epoch"]),
        "eval_steps": strategies.sampled_from([None, 0, 0.1, 0.2, 0.3, 2.5, 100, 250]),
        "save_steps": strategies.sampled_from([0.1, 0.2, 0.3, 0.5, 2.5, 100, 250, 500]),
        "logging_steps": strategies.sampled_from([0, 0.5, 7.5, 10, 500]),
        "lr_scheduler_type": strategies.sampled_from(["linear", "reduce_lr_on_plateau", "greedy"]),
        "warmup_steps": strategies.sampled_from([0, -5, 10]),
        "dataloader_prefetch_factor": strategies.sampled_from([None, 2]),
        "dataloader_num_workers": strategies.sampled_from([0, 2]),
        "torch_empty_cache_steps": strategies.sampled_from([None, 0, 5]),
        "fsdp": strategies.sampled_from(["full_shard auto_wrap", "shard_grad_op", "hybrid_shard", "FULL_SHARD",
                                         "full_shard auto-wrap", "offload"]),
        "fsdp_config": strategies.sampled_from([{"auto_wrap_policy": "NO_WRAP"}, {"auto_wrap_policy": "BLOCK_WRAP"},
                                                {"fsdp_cpu_ram_efficient_loading": "maybe"},
                                                {"cpu_ram_efficient_loading": "true"}]),
    }
    (tmp_path / "requirements.txt").write_text("transformers==5.24.0\n", encoding="utf-8")
    script = tmp_path / "train.py"
    disagreements = []

    @hypothesis.settings(max_examples=150, deadline=None, database=None,
                         suppress_health_check=list(hypothesis.HealthCheck))
    @hypothesis.given(strategies.fixed_dictionaries({}, optional=values))
    def agree(given):
        text = ", ".join(f"{k}={v!r}" for k, v in given.items())
        script.write_text(f"from transformers import TrainingArguments\nargs = TrainingArguments(output_dir='o', "
                          f"{text})\n", encoding="utf-8")
        reported = [f.code for f in api.check([str(script)]).findings if f.code.startswith("TA")]
        try:
            transformers.TrainingArguments(output_dir=str(tmp_path / "out"), use_cpu=True, report_to="none", **given)
            refused = None
        except ValueError as error:
            refused = str(error).splitlines()[0]
        if bool(reported) != (refused is not None):
            disagreements.append((given, reported, refused))

    agree()
    assert disagreements == [], disagreements[:3]


def test_an_older_release_flag_name_is_read_not_taken_for_the_new_fields_default(tmp_path):
    # --evaluation_strategy is eval_strategy before 4.41: reading it as absent would make eval_strategy "no"
    launch = ("#!/bin/bash\ntorchrun train.py --output_dir out --load_best_model_at_end --evaluation_strategy epoch "
              "--save_strategy epoch\n")
    assert _findings(tmp_path, {"run.sh": launch, "train.py": ENTRY}, "4.26.0") == []  # 4.26 has the option
    differ = launch.replace("--evaluation_strategy epoch", "--evaluation_strategy steps")
    assert [f[:2] for f in _findings(tmp_path, {"run.sh": differ}, "4.26.0")] == [("TA002", "error")]


@pytest.mark.parametrize("source", ["from paddlenlp.trainer import TrainingArguments\n",
                                    "class TrainingArguments:\n    def __init__(self, **kw):\n        pass\n"])
def test_a_class_of_the_same_name_that_is_not_transformers_is_not_judged(tmp_path, source):
    script = source + "args = TrainingArguments(output_dir='o', fp16=True, bf16=True, load_best_model_at_end=True)\n"
    assert _findings(tmp_path, {"train.py": script}) == []
    launch = "#!/bin/bash\ntorchrun train.py --output_dir o --load_best_model_at_end --save_strategy epoch\n"
    entry = source + "from transformers import HfArgumentParser\n" \
                     "args, = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n"
    assert _findings(tmp_path, {"run.sh": launch, "train.py": entry}) == []
    # the same through transformers' own class, imported as a module attribute
    real = "import transformers\nargs = transformers.TrainingArguments(output_dir='o', fp16=True, bf16=True)\n"
    assert [f[0] for f in _findings(tmp_path, {"train.py": real, "run.sh": "#!/bin/bash\necho\n"})] == ["TA001"]


def test_a_subclass_with_its_own_post_init_is_not_judged(tmp_path):
    entry = ("from dataclasses import dataclass\nfrom transformers import HfArgumentParser, TrainingArguments\n\n"
             "@dataclass\nclass Arguments(TrainingArguments):\n    def __post_init__(self):\n"
             "        self.eval_strategy = self.save_strategy\n        super().__post_init__()\n\n"
             "args, = HfArgumentParser(Arguments).parse_args_into_dataclasses()\n")
    launch = "#!/bin/bash\ntorchrun train.py --output_dir o --load_best_model_at_end --save_strategy epoch\n"
    assert _findings(tmp_path, {"run.sh": launch, "train.py": entry}) == []
    plain = entry.replace("    def __post_init__(self):\n        self.eval_strategy = self.save_strategy\n"
                          "        super().__post_init__()\n", "    pass\n")
    assert [f[0] for f in _findings(tmp_path, {"train.py": plain})] == ["TA002"]


def test_flags_taken_for_training_arguments_without_a_parser_are_only_an_info(tmp_path):
    # --deepspeed to a Trainer script makes the flags TrainingArguments flags for the DeepSpeed rules; with no
    # HfArgumentParser shown, the script may parse them itself and build TrainingArguments from other values
    entry = ("import argparse\nfrom transformers import Trainer, TrainingArguments\n"
             "parser = argparse.ArgumentParser()\nargs = parser.parse_args()\n")
    launch = ("#!/bin/bash\ndeepspeed train.py --deepspeed ds.json --output_dir o --load_best_model_at_end "
              "--save_strategy epoch\n")
    found = _findings(tmp_path, {"run.sh": launch, "train.py": entry, "ds.json": '{"train_batch_size": 8}'})
    assert [f[:2] for f in found] == [("TA002", "info")]


def test_an_infinite_or_nan_interval_is_not_judged_and_raises_nothing(tmp_path):
    # int() of it raises in transformers itself (OverflowError / ValueError, no check of its own): no TA finding
    script = ("from transformers import TrainingArguments\nargs = TrainingArguments(output_dir='o', "
              "load_best_model_at_end=True, eval_strategy='steps', save_steps=1e999, logging_steps=1e999, "
              "warmup_steps=-1e999)\n")
    assert _findings(tmp_path, {"train.py": script}) == []


@pytest.mark.parametrize("field", ["lr_scheduler_type", "eval_strategy", "save_steps", "fsdp", "fsdp_config",
                                   "torch_empty_cache_steps", "dataloader_prefetch_factor"])
@pytest.mark.parametrize("written", ["[1]", "{'a': 1}", "(1, 2)", "float('nan')", "1e999", "'x'", "True"])
def test_a_value_of_any_type_gives_a_finding_or_none_never_a_traceback(tmp_path, field, written):
    script = ("from transformers import TrainingArguments\nargs = TrainingArguments(output_dir='o', "
              f"load_best_model_at_end=True, fsdp='full_shard', {field}={written})\n")
    found = _findings(tmp_path, {"train.py": script})
    assert all(code.startswith("TA") for code, *_ in found)
    if field == "torch_empty_cache_steps" and written == "True":  # isinstance(True, int): transformers takes it
        assert not [f for f in found if f[0] == "TA006"]


# -- the Trainer's own checks (TA008, TA009) ------------------------------------------------------------------

BUILDS = "trainer = Trainer(model=model, args=args)\n"


def test_a_trainer_check_is_an_error_only_where_the_script_builds_a_trainer(tmp_path):
    script = ("from transformers import Trainer, TrainingArguments\n"
              "args = TrainingArguments(output_dir='o', eval_strategy='steps', save_strategy='best')\n")
    assert [f[:2] for f in _findings(tmp_path, {"train.py": script + BUILDS})] == [("TA008", "error")]
    assert [f[:2] for f in _findings(tmp_path, {"train.py": script})] == [("TA008", "info")]
    named = script.replace("save_strategy='best'", "save_strategy='best', metric_for_best_model='eval_loss'")
    assert _findings(tmp_path, {"train.py": named + BUILDS}) == []


def test_launch_flags_meet_the_trainer_checks_when_the_entry_builds_a_trainer(tmp_path):
    launch = "#!/bin/bash\ntorchrun train.py --output_dir out --report_to tensorbaord\n"
    found = _findings(tmp_path, {"run.sh": launch, "train.py": ENTRY + "trainer = Trainer(args=args)\n"})
    assert [f[:3] for f in found] == [("TA009", "error", 2)]
    parser_only = ENTRY.replace("Trainer, ", "")
    assert [f[:2] for f in _findings(tmp_path, {"run.sh": launch, "train.py": parser_only})] == [("TA009", "info")]


@pytest.mark.parametrize(("name", "pin", "expected"), [
    ("tensorbaord", None, [("TA009", "error")]),  # no release read takes it: no pin needed
    ("tensorbaord", "4.30.0", [("TA009", "error")]),
    ("trackio", "4.40.0", [("TA009", "error")]),  # added later
    ("trackio", "5.24.0", []),
    ("trackio", None, []),  # no pin: the newest release judges, and it has trackio
    ("trackio", "4.9.2", [("TA009", "info")]),  # a release whose names were not read (before 4.10.0)
    ("wandb", None, []),
])
def test_the_release_decides_which_report_to_names_exist(tmp_path, name, pin, expected):
    script = f"from transformers import Trainer, TrainingArguments\nargs = TrainingArguments(output_dir='o', " \
             f"report_to=[{name!r}])\n" + BUILDS
    assert [f[:2] for f in _findings(tmp_path, {"train.py": script}, pin)] == expected


def test_report_to_messages_suggest_the_name_or_say_why(tmp_path):
    script = "from transformers import Trainer, TrainingArguments\nargs = TrainingArguments(output_dir='o', " \
             "report_to=['wandb', 'none', 'tensorbaord'])\n" + BUILDS
    (tmp_path / "train.py").write_text(script, encoding="utf-8")
    (tmp_path / "requirements.txt").write_text("transformers==5.24.0\n", encoding="utf-8")
    messages = [f.message for f in api.check([str(tmp_path)]).findings if f.code == "TA009"]
    assert len(messages) == 2
    assert "has its meaning only alone" in messages[0] and "did you mean 'tensorboard'" in messages[1]


@pytest.mark.parametrize(("pin", "expected"), [("4.46.3", []), ("4.47.0", [("TA008", "info")]),
                                               ("4.47.1", [("TA008", "error")])])
def test_the_release_decides_whether_the_trainer_check_exists(tmp_path, pin, expected):
    # save_strategy "best" without a metric: refused from 4.47.1 (read); 4.46.3 (read) has no "best" strategy
    script = ("from transformers import Trainer, TrainingArguments\n"
              "args = TrainingArguments(output_dir='o', eval_strategy='steps', save_strategy='best')\n" + BUILDS)
    assert [f[:2] for f in _findings(tmp_path, {"train.py": script}, pin)] == expected


@pytest.mark.oracle
def test_the_trainer_rules_refuse_exactly_what_the_trainer_refuses(tmp_path):
    """Differential, against transformers' own Trainer built on the CPU (tests/coverage_loaders/transformers.py):
    over combinations of the values TA008 and TA009 read, a TA008/TA009 finding comes out exactly when building the
    Trainer raises ValueError, wherever TrainingArguments itself takes the values."""
    hypothesis = pytest.importorskip("hypothesis")
    strategies = hypothesis.strategies
    transformers = pytest.importorskip("transformers")
    if transformers.__version__ != "5.24.0":
        pytest.skip(f"input: the rules' checks were read from 5.24.0, not {transformers.__version__}")
    import json
    import subprocess
    import sys
    from pathlib import Path
    zero = {2: {"zero_optimization": {"stage": 2}, "train_micro_batch_size_per_gpu": "auto"},
            3: {"zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": "auto"}}
    values = {
        "fsdp": strategies.sampled_from(["", "full_shard"]),
        "deepspeed": strategies.sampled_from([None, zero[2], zero[3]]),
        "eval_strategy": strategies.sampled_from(["no", "steps"]),
        "save_strategy": strategies.sampled_from(["steps", "best"]),
        "metric_for_best_model": strategies.sampled_from([None, "loss"]),
        "load_best_model_at_end": strategies.booleans(),
        "save_only_model": strategies.booleans(),
        "auto_find_batch_size": strategies.booleans(),
        "gradient_accumulation_steps": strategies.sampled_from([1, 2]),
        "accelerator_config": strategies.sampled_from([None, {"gradient_accumulation_kwargs": {"num_steps": 2}}]),
        "gradient_checkpointing": strategies.booleans(),
        "fsdp_config": strategies.sampled_from([None, {"activation_checkpointing": True},
                                                {"state_dict_type": "SHARDED_STATE_DICT"}]),
        "report_to": strategies.sampled_from(["none", "tensorbaord", ["none"], ["codecarbon", "none"]]),
    }
    (tmp_path / "requirements.txt").write_text("transformers==5.24.0\n", encoding="utf-8")
    cases = []  # (script, the TA codes shardshift reports, the values)

    @hypothesis.settings(max_examples=40, deadline=None, database=None,
                         suppress_health_check=list(hypothesis.HealthCheck))
    @hypothesis.given(strategies.fixed_dictionaries({}, optional=values))
    def collect(given):
        script = tmp_path / f"train_{len(cases)}.py"
        text = ", ".join(f"{k}={v!r}" for k, v in given.items())
        script.write_text(f"from transformers import Trainer, TrainingArguments\nargs = TrainingArguments("
                          f"output_dir='o', {text})\ntrainer = Trainer(model=model, args=args)\n", encoding="utf-8")
        found = [f.code for f in api.check([str(script)]).findings if f.code.startswith("TA")]
        if all(code in ("TA008", "TA009") for code in found):  # else TrainingArguments itself refuses them
            cases.append((str(script), found, given))

    collect()
    # the Trainers are built in a process of their own: the loader sets process-group variables and a port
    child = ("import json, sys\nfrom pathlib import Path\nsys.path.insert(0, sys.argv[1])\n"
             "from coverage_loaders import transformers as loader\nloader.prepare()\nout = []\n"
             "for path in json.loads(sys.argv[2]):\n    try:\n        loader.load(Path(path), stage='trainer')\n"
             "        out.append(None)\n    except ValueError as error:\n"
             "        out.append(str(error).splitlines()[0])\n"
             "    except Exception:  # past the checks: what is left needs the GPUs or a package\n"
             "        out.append(None)\nprint(json.dumps(out))\n")
    done = subprocess.run([sys.executable, "-c", child, str(Path(__file__).parent), json.dumps([c[0] for c in cases])],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    disagreements, compared = [], []
    for (_, found, given), refused in zip(cases, json.loads(done.stdout.strip().splitlines()[-1])):
        if refused is not None and refused.startswith(("Please specify the ZeRO", "Accelerate")):
            continue  # refused before the Trainer, by DeepSpeed's plugin
        compared.append(given)
        if bool(found) != (refused is not None):
            disagreements.append((given, found, refused))
    assert len(compared) >= 20, len(compared)
    assert disagreements == [], disagreements[:3]


@pytest.mark.parametrize(("launch", "expected"), [
    ('python train.py --output_dir o --fsdp "full_shard auto_wrap"', [("TA008", "error")]),
    ("python3 train.py --output_dir o --fsdp full_shard", [("TA008", "error")]),
    ("torchrun --nproc_per_node 2 train.py --output_dir o --fsdp full_shard", []),
    ("python -m torch.distributed.run --nproc_per_node 2 train.py --output_dir o --fsdp full_shard", []),
    ("srun python train.py --output_dir o --fsdp full_shard", []),  # srun starts the processes
    ("export WORLD_SIZE=2\npython train.py --output_dir o --fsdp full_shard", []),
    ("python train.py --output_dir o", []),
])
def test_fsdp_in_one_plain_process_is_refused_only_without_a_launcher(tmp_path, launch, expected):
    entry = ENTRY + "trainer = Trainer(args=args)\n"
    found = _findings(tmp_path, {"run.sh": f"#!/bin/bash\n{launch}\n", "train.py": entry})
    assert [f[:2] for f in found] == expected
    spawning = entry + "import torch.multiprocessing as mp\nmp.spawn(main, nprocs=2)\n"
    assert _findings(tmp_path, {"run.sh": f"#!/bin/bash\n{launch}\n", "train.py": spawning}) == []


@pytest.mark.parametrize("entry, expected", [
    # the flags reach TrainingArguments through HfArgumentParser: the ds_config's bf16 meets the launch's fp16
    (ENTRY + "trainer = Trainer(args=args)\n", "error"),
    # no parser of TrainingArguments: the script builds them in code (bf16=True), and what the flags set is unknown
    ("import argparse\nfrom transformers import Trainer, TrainingArguments\nparser = argparse.ArgumentParser()\n"
     "cli = parser.parse_known_args()[0]\nargs = TrainingArguments(output_dir='o', bf16=True, deepspeed=cli.deepspeed)\n"
     "trainer = Trainer(args=args)\n", "info"),
])
def test_flags_without_a_parser_of_training_arguments_are_an_unknown_program_for_every_rule(tmp_path, entry, expected):
    launch = "#!/bin/bash\ndeepspeed train.py --deepspeed ds.json --fp16 True --output_dir o\n"
    config = '{"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": true}}'
    for name, text in {"run.sh": launch, "train.py": entry, "ds.json": config,
                       "requirements.txt": "transformers==5.24.0\ndeepspeed==0.19.8\n"}.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    found = [f for f in api.check([str(tmp_path)]).findings if f.code == "DS436" and f.file.endswith("run.sh")]
    assert [f.severity for f in found] == [expected]


# -- keywords the release's TrainingArguments does not have (TA010) ---------------------------------------------

@pytest.mark.parametrize(("keyword", "pin", "expected"), [
    ("learnng_rate=1e-4", None, [("TA010", "error")]),  # no release read has it: no pin needed
    ("learnng_rate=1e-4", "4.46.0", [("TA010", "error")]),  # a release not read, between two that agree
    ("evaluation_strategy='steps'", "5.24.0", [("TA010", "error")]),  # removed after 4.50
    ("evaluation_strategy='steps'", "4.40.0", []),
    ("evaluation_strategy='steps'", None, [("TA010", "info")]),  # the verdict depends on the release
    ("eval_strategy='steps'", "4.40.0", [("TA010", "error")]),  # added in 4.41
    ("eval_strategy='steps'", "5.24.0", []),
    ("learning_rate=lr", "5.24.0", []),  # any value of a field: not a literal is fine
])
def test_a_keyword_the_release_lacks_is_refused(tmp_path, keyword, pin, expected):
    script = f"from transformers import TrainingArguments\nargs = TrainingArguments(output_dir='o', {keyword})\n"
    assert [f[:2] for f in _findings(tmp_path, {"train.py": script}, pin) if f[0] == "TA010"] == expected


def test_a_subclass_or_a_trl_config_has_fields_of_its_own_and_is_not_judged(tmp_path):
    script = ("from trl import SFTConfig\nfrom transformers import TrainingArguments\n"
              "args = SFTConfig(output_dir='o', max_seq_length=512)\n")
    assert [f for f in _findings(tmp_path, {"train.py": script}) if f[0] == "TA010"] == []


@pytest.mark.oracle
def test_the_field_table_is_what_the_installed_release_takes(tmp_path):
    """Every field name of the table (any release) and a misspelling: TA010 at the installed release (5.24.0) is
    reported exactly where transformers' own TrainingArguments / Seq2SeqTrainingArguments raises TypeError."""
    transformers = pytest.importorskip("transformers")
    import dataclasses
    import json

    from conftest import ROOT

    table = json.loads((ROOT / "src" / "shardshift" / "data" / "defaults" / "transformers_fields.json").read_text())
    (tmp_path / "requirements.txt").write_text(f"transformers=={transformers.__version__}\n", encoding="utf-8")
    script = tmp_path / "train.py"
    disagreements = []
    for cls in ("TrainingArguments", "Seq2SeqTrainingArguments"):
        real = getattr(transformers, cls)
        defaults = {f.name: f.default for f in dataclasses.fields(real) if f.init
                    and f.default is not dataclasses.MISSING}
        names = sorted(set(table["classes"][cls]) | {"learnng_rate"})
        lines = [f"from transformers import {cls}"] + [f"a{i} = {cls}(output_dir='o', {name}=None)"
                                                      for i, name in enumerate(names)]
        script.write_text("\n".join(lines) + "\n", encoding="utf-8")
        flagged = {f.line - 2 for f in api.check([str(script)]).findings if f.code == "TA010"}
        for index, name in enumerate(names):
            try:
                real(output_dir=str(tmp_path / "o"), **{name: defaults.get(name)})
                refused = False
            except TypeError as error:
                refused = "unexpected keyword argument" in str(error)
            except Exception:  # noqa: BLE001 - past the keyword check: a value this test does not choose
                refused = False
            if refused != (index in flagged):
                disagreements.append((cls, name, refused))
    assert disagreements == [], disagreements[:5]


MODEL_ARGS = ("from dataclasses import dataclass, field\n\n@dataclass\nclass ModelArguments:\n"
              "    model_name_or_path: str = field(default='gpt2')\n\n")
PARSED = ("from transformers import HfArgumentParser, Trainer, TrainingArguments\n" + MODEL_ARGS +
          "parser = HfArgumentParser((ModelArguments, TrainingArguments))\n"
          "model_args, args = parser.parse_args_into_dataclasses()\n")


@pytest.mark.parametrize(("flags", "entry", "pin", "expected"), [
    ("--evaluation_strategy steps", PARSED, "5.24.0", [("TA010", "error")]),  # removed after 4.50
    ("--evaluation_strategy steps", PARSED, "4.40.0", []),
    ("--evaluation_strategy steps", PARSED, None, [("TA010", "info")]),
    ("--model_name_or_path gpt2 --eval_strategy steps", PARSED, "5.24.0", []),  # the repository's dataclass
    ("--modle_name_or_path gpt2", PARSED, "5.24.0", [("TA010", "error")]),  # no dataclass defines it
    ("--eval_strat steps", PARSED, "5.24.0", []),  # an abbreviation argparse takes
    ("--no_remove_unused_columns", PARSED, "5.24.0", []),  # the complement of a default-True switch
    ("--evaluation_strategy steps", PARSED.replace("parse_args_into_dataclasses()",
                                                   "parse_args_into_dataclasses(return_remaining_strings=True)"),
     "5.24.0", []),  # the entry keeps what it does not know
    ("--evaluation_strategy steps", PARSED.replace("(ModelArguments, TrainingArguments)",
                                                   "(ModelArguments, TrainingArguments, ScriptArguments)"),
     "5.24.0", []),  # a class shardshift does not know: its fields may hold it
])
def test_a_launch_flag_no_parser_dataclass_defines_is_refused(tmp_path, flags, entry, pin, expected):
    launch = f"#!/bin/bash\ntorchrun --nproc_per_node 2 train.py --output_dir o {flags}\n"
    found = [f for f in _findings(tmp_path, {"run.sh": launch, "train.py": entry}, pin) if f[0] == "TA010"]
    assert [f[:2] for f in found] == expected
    if expected:
        assert found[0][2:] == (2, launch.splitlines()[1].index(flags.split()[0]) + 1)


@pytest.mark.oracle
def test_launch_flags_are_refused_exactly_where_hfargumentparser_refuses(tmp_path):
    """Every field name any release read had (and misspellings) as a launch flag: TA010 at the installed release is
    reported exactly where transformers' own HfArgumentParser(TrainingArguments).parse_args_into_dataclasses
    raises "Some specified arguments are not used" (argparse's own abbreviations and --no_ complements taken)."""
    transformers = pytest.importorskip("transformers")
    import contextlib
    import io
    import json

    from conftest import ROOT

    table = json.loads((ROOT / "src" / "shardshift" / "data" / "defaults" / "transformers_fields.json").read_text())
    names = sorted(set(table["classes"]["TrainingArguments"]) | {"learnng_rate", "eval_strat", "no_bf16"})
    (tmp_path / "train.py").write_text(ENTRY, encoding="utf-8")
    lines = ["#!/bin/bash"] + [f"torchrun train.py --output_dir o --{name} 1" for name in names]
    (tmp_path / "run.sh").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "requirements.txt").write_text(f"transformers=={transformers.__version__}\n", encoding="utf-8")
    flagged = {f.line - 2 for f in api.check([str(tmp_path)]).findings if f.code == "TA010"}
    disagreements = []
    parser = transformers.HfArgumentParser(transformers.TrainingArguments)
    for index, name in enumerate(names):
        try:
            with contextlib.redirect_stderr(io.StringIO()):
                parser.parse_args_into_dataclasses(args=["--output_dir", str(tmp_path / "o"), f"--{name}", "1"])
            refused = False
        except ValueError as error:
            refused = "not used by the HfArgumentParser" in str(error)
        except (SystemExit, Exception):  # noqa: BLE001 - argparse or a field's own check refused the value "1"
            refused = False
        if refused != (index in flagged):
            disagreements.append((name, refused))
    assert disagreements == [], disagreements[:5]


def test_a_repository_class_that_shadows_the_library_name_brings_its_own_fields(tmp_path):
    entry = ("import transformers\nfrom dataclasses import dataclass, field\n"
             "from transformers import HfArgumentParser, Trainer, TrainingArguments\n\n@dataclass\n"
             "class TrainingArguments(transformers.TrainingArguments):\n    model_max_length: int = field(default=512)\n\n"
             "args, = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n")
    launch = "#!/bin/bash\ntorchrun train.py --output_dir o --model_max_length 1024 --modle_max_length 1\n"
    found = [f[:2] for f in _findings(tmp_path, {"run.sh": launch, "train.py": entry}) if f[0] == "TA010"]
    assert found == [("TA010", "error")]  # --modle_max_length only


def test_transformers_installed_without_a_version_is_judged_as_the_newest_release(tmp_path):
    launch = "#!/bin/bash\ntorchrun train.py --output_dir o --eval_strategy steps --evaluation_strategy steps\n"
    found = _findings(tmp_path, {"run.sh": launch, "train.py": PARSED}, pin=None)
    (tmp_path / "requirements.txt").write_text("transformers\n", encoding="utf-8")
    unpinned = [f for f in api.check([str(tmp_path)]).findings if f.code == "TA010"]
    assert [(f.severity, f.column) for f in unpinned] == [("error", launch.splitlines()[1].index("--evaluation") + 1)]
    # no pin at all: the newest release judges (--eval_strategy is fine), and the refusal is an info since older
    # releases take --evaluation_strategy
    assert [f[:2] for f in found if f[0] == "TA010"] == [("TA010", "info")]


# -- values transformers computes with unchecked (TA011) -------------------------------------------------------------

TA011_CONTEXTS = [{}, {"eval_strategy": "steps"}, {"eval_strategy": "steps", "eval_steps": 100},
                  {"eval_strategy": "steps", "eval_steps": 0}, {"logging_strategy": "epoch", "save_strategy": "epoch"},
                  {"load_best_model_at_end": True, "eval_strategy": "epoch", "save_strategy": "epoch"},
                  {"greater_is_better": True}, {"dataloader_multiprocessing_context": "spawn"},
                  {"deepspeed": {"zero_optimization": {"stage": 2}}}]
TA011_FIELDS = ["output_dir", "logging_steps", "eval_steps", "save_steps", "warmup_steps", "dataloader_num_workers",
                "metric_for_best_model", "per_device_train_batch_size", "gradient_accumulation_steps"]


@pytest.mark.oracle
def test_ta011_reports_exactly_the_calls_training_arguments_fails_on_without_a_check(tmp_path):
    """Differential, against transformers 5.24.0's own TrainingArguments: each field TA011 reads, as a string, a null,
    a list or a number, in contexts that decide whether transformers reaches it: TA011 reports the call exactly when
    building it raises TypeError or AttributeError (no ValueError of its own)."""
    transformers = pytest.importorskip("transformers")
    if transformers.__version__ != "5.24.0":
        pytest.skip(f"input: TA011's sites were read from 5.24.0, not {transformers.__version__}")
    calls = [{**context, field: written} for context in TA011_CONTEXTS for field in TA011_FIELDS
             for written in ("10", None, [1], 10) if field not in context]
    script = "from transformers import TrainingArguments\n" + "".join(
        f"a{n} = TrainingArguments({', '.join(f'{k}={v!r}' for k, v in {'output_dir': 'o', **kwargs}.items())})\n"
        for n, kwargs in enumerate(calls))
    (tmp_path / "requirements.txt").write_text("transformers==5.24.0\n", encoding="utf-8")
    (tmp_path / "train.py").write_text(script, encoding="utf-8")
    reported = {f.line - 2 for f in api.check([str(tmp_path / "train.py")]).findings if f.code == "TA011"}
    disagreements = []
    for n, kwargs in enumerate(calls):
        try:
            transformers.TrainingArguments(**{"output_dir": str(tmp_path / "out"), "use_cpu": True,
                                              "report_to": "none", **kwargs})
            fails = False
        except (TypeError, AttributeError):
            fails = True
        except ValueError:
            fails = False
        if fails != (n in reported):
            disagreements.append((kwargs, n in reported))
    assert len(calls) > 250 and len(reported) > 100 and disagreements == [], disagreements[:5]
