"""Issue 20: Hugging Face TrainingArguments given as command-line flags of a launch script
(formats/launch/training_flags.py), and DS435-DS439 on them.

The flags are read from a launch script with the launch reader (read_launch_script) and must be
what transformers' own `HfArgumentParser(TrainingArguments)` stores for the same argv (oracle
test). The rules run on a launch Document whose `data.training_arguments` holds the calls, as the
launch reader keeps them.
"""

from __future__ import annotations

import shlex
import textwrap
from types import SimpleNamespace

import pytest

from shardshift.document import Document
from shardshift.formats.launch import training_flags
from shardshift.formats.launch.training_flags import TrainingFlags, arguments_call, parse, plan_fields
from shardshift.formats.megatron.shell import read_launch_script
from shardshift.formats.python_script import UNKNOWN
from shardshift.rules.base import Context
from shardshift.rules.deepspeed import script as rules

from conftest import CORPUS, FIXTURES, needs_corpus

HF = FIXTURES / "launch" / "hf"
RULES = (rules.TrainingArgumentsOptimIgnored, rules.TrainingArgumentsPrecisionMismatch, rules.FullEvalPrecisionTrains,
         rules.TrainerOptimizerReplaced, rules.TrainingArgumentsOptimSwappedByOffload)

# argv lists HfArgumentParser(TrainingArguments) accepts
ACCEPTED = [
    ["--per_device_train_batch_size", "4", "--bf16", "true", "--gradient_accumulation_steps=2", "--optim",
     "adamw_torch", "--gradient_checkpointing"],
    ["--bf16"],
    ["--bf16", "False"],
    ["--bf16=yes"],
    ["--fp16", "1", "--bf16", "n"],
    ["--gradient_checkpointing", "--bf16", "T"],
    ["--no_remove_unused_columns"],
    ["--no-dataloader-pin-memory", "--per-device-train-batch-size", "16"],
    ["--learning_rate", "2e-5", "--weight_decay", "0.1", "--adam_beta2", "0.95", "--max_grad_norm", "0.5"],
    ["--warmup_steps", "100", "--lr_scheduler_type", "cosine", "--max_steps", "-1"],
    ["--learning_rate", "1e-4", "--learning_rate", "3e-4"],
    ["--tf32", "true", "--ddp_find_unused_parameters", "False"],
    ["--label_names", "labels", "mask", "--report_to", "wandb"],
    ["--deepspeed", "ds.json", "--output_dir", "out", "--bf16_full_eval", "--save_steps", "0.5"],
    ["--model_name_or_path", "gpt2", "--per_device_train_batch_size=8", "--seed", "7"],
]
# argv lists argparse refuses: the word is kept as written
REFUSED = [
    (["--per_device_train_batch_size", "four"], "per_device_train_batch_size", "four"),
    (["--bf16", "maybe"], "bf16", "maybe"),
    (["--optim", "adamw"], "optim", "adamw"),
    (["--learning_rate", "fast"], "learning_rate", "fast"),
]


def _args(argv: list[str]) -> list:
    text = "torchrun --nproc_per_node 8 train.py " + " ".join(shlex.quote(w) for w in argv) + "\n"
    launches = read_launch_script(text, "<run.sh>").launches
    assert len(launches) == 1
    return launches[0].args


def _plain(value):
    value = getattr(value, "value", value)  # an Enum member: its value
    return list(value) if isinstance(value, tuple) else value


@pytest.fixture(scope="module")
def hf_parser():
    pytest.importorskip("transformers")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from transformers import HfArgumentParser, TrainingArguments

        return HfArgumentParser(TrainingArguments)


@pytest.mark.oracle
@pytest.mark.parametrize("argv", ACCEPTED, ids=lambda a: " ".join(a)[:60])
def test_flags_are_what_hf_argument_parser_stores(hf_parser, argv):
    namespace, _ = hf_parser.parse_known_args(argv)
    values, positions, written, more = parse(_args(argv))
    assert values and not more
    for name, value in values.items():
        expected = _plain(getattr(namespace, name))
        assert value == expected and type(value) is type(expected), (name, value, expected)
    # every TrainingArguments option in argv is read
    spelled = {w.split("=", 1)[0] for w in argv if w.startswith("--")}
    assert {n for o, n in _options().items() if o in spelled} == set(values)
    assert set(positions) == set(written) == set(values)


@pytest.mark.oracle
def test_flags_match_the_dataclass_parse_args_into_dataclasses_builds(hf_parser):
    # the whole parse, TrainingArguments.__post_init__ included, where it runs on a CPU machine
    argv = ["--output_dir", "out", "--per_device_train_batch_size", "3", "--gradient_accumulation_steps", "5",
            "--learning_rate", "3e-4", "--gradient_checkpointing", "true", "--optim", "sgd", "--fp16", "false",
            "--adam_beta1", "0.8", "--max_grad_norm", "2"]
    (arguments,) = hf_parser.parse_args_into_dataclasses(argv)
    values, *_ = parse(_args(argv))
    for name, value in values.items():
        assert _plain(getattr(arguments, name)) == value, name


@pytest.mark.oracle
@pytest.mark.parametrize("argv, name, word", REFUSED)
def test_a_value_argparse_refuses_is_kept_as_written(hf_parser, argv, name, word, capsys):
    with pytest.raises(SystemExit):
        hf_parser.parse_known_args(argv)
    values, *_ = parse(_args(argv))
    assert values[name] == word


def _options() -> dict:
    from shardshift.formats.launch.training_fields import OPTIONS

    return {o: n.lstrip("!") for o, n in OPTIONS.items()}


@pytest.mark.oracle
def test_the_option_table_is_the_installed_transformers_one():
    pytest.importorskip("transformers")
    import subprocess
    import sys

    from conftest import ROOT

    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_training_arguments_flags.py"), "--check"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_unknown_values_and_splices():
    text = 'torchrun train.py --per_device_train_batch_size "$BS" --bf16 $EXTRA --output_dir out\n'
    launch = read_launch_script(text, "<run.sh>").launches[0]
    values, _, _, more = parse(launch.args)
    assert values["per_device_train_batch_size"] is UNKNOWN
    assert values["bf16"] is UNKNOWN  # `--bf16 $EXTRA`: the unknown word is the flag's value
    text = "torchrun train.py --output_dir out ${EXTRA_ARGS[@]} --bf16\n"
    values, _, _, more = parse(read_launch_script(text, "<run.sh>").launches[0].args)
    assert values["bf16"] is True and more


# --- which flags are TrainingArguments flags ----------------------------------------------------------


def _calls(path) -> list:
    path = str(path)
    with open(path, encoding="utf-8") as handle:
        script = read_launch_script(handle.read(), path)
    return [c for c in (arguments_call(launch, path) for launch in script.launches) if c is not None]


def test_flags_of_an_hf_argument_parser_script():
    (call,) = _calls(HF / "bad_precision" / "run.sh")
    assert isinstance(call, TrainingFlags) and call.program is None
    assert call.entry.endswith("bad_precision/train.py")
    assert call.callee == "train.py's TrainingArguments flags"
    assert call.keywords["bf16"] is True and call.keywords["per_device_train_batch_size"] == 4
    assert call.positions["bf16"] == (9, 5) and call.written["bf16"] == "--bf16 true"
    assert (call.line, call.column) == (4, 1)


def test_entry_script_not_found_is_an_unknown_program():
    (call,) = _calls(HF / "no_entry" / "run.sh")
    assert call.entry is None
    assert call.program.kind == "program" and "train.py is not in the checked tree" in call.program.what


def _tree(tmp_path, entry: str | None, run: str, name: str = "train.py"):
    if entry is not None:
        (tmp_path / name).write_text(textwrap.dedent(entry))
    (tmp_path / "run.sh").write_text(textwrap.dedent(run))
    (tmp_path / ".git").mkdir(exist_ok=True)
    return tmp_path / "run.sh"


def test_a_script_with_its_own_argparse_and_no_trainer_gives_no_call(tmp_path):
    run = _tree(tmp_path, """\
        import argparse
        parser = argparse.ArgumentParser()
        parser.add_argument("--output_dir")
        parser.add_argument("--bf16", action="store_true")
        """, "python train.py --output_dir out --bf16 --per_device_train_batch_size 4\n")
    assert _calls(run) == []


def test_deepspeed_flag_and_the_trainer_make_training_arguments_flags(tmp_path):
    run = _tree(tmp_path, """\
        import argparse
        from transformers import Trainer, TrainingArguments
        parser = argparse.ArgumentParser()
        parser.add_argument("--deepspeed")
        parser.add_argument("--bf16", action="store_true")
        args = parser.parse_args()
        Trainer(args=TrainingArguments("out", deepspeed=args.deepspeed, bf16=args.bf16))
        """, "deepspeed --num_gpus 2 train.py --deepspeed ds.json --bf16\n")
    (call,) = _calls(run)
    assert call.keywords == {"deepspeed": "ds.json", "bf16": True}


def test_megatron_launch_gives_no_call(tmp_path):
    run = _tree(tmp_path, None, "torchrun pretrain_gpt.py --bf16 --micro-batch-size 4 --seed 1 --deepspeed\n",
                name="pretrain_gpt.py")
    assert _calls(run) == []
    # only flags Megatron shares with TrainingArguments, entry not found: not taken for TrainingArguments
    run = _tree(tmp_path, None, "torchrun train_gpt.py --bf16 --seed 1 --weight-decay 0.1\n")
    assert _calls(run) == []


def test_a_training_arguments_subclass_gives_its_defaults(tmp_path):
    run = _tree(tmp_path, """\
        from dataclasses import dataclass, field
        from transformers import HfArgumentParser, TrainingArguments

        @dataclass
        class MyArguments(TrainingArguments):
            bf16: bool = field(default=True)
            optim: str = "adafactor"
            model_max_length: int = 512

        (args,) = HfArgumentParser((MyArguments,)).parse_args_into_dataclasses()
        """, "torchrun train.py --deepspeed ds.json --optim sgd\n")
    (call,) = _calls(run)
    assert call.keywords["bf16"] is True and call.keywords["optim"] == "sgd"
    assert "model_max_length" not in call.keywords
    assert call.written["bf16"] == "bf16=True (the default of MyArguments in train.py)"
    assert "bf16" not in call.positions


def test_trl_config_counts(tmp_path):
    run = _tree(tmp_path, """\
        from trl import SFTConfig, TrlParser
        from transformers import HfArgumentParser
        parser = HfArgumentParser((ScriptArguments, SFTConfig, ModelConfig))
        """, "accelerate launch sft.py --per_device_train_batch_size 2\n", name="sft.py")
    (run.parent / "run.sh").write_text("torchrun sft.py --per_device_train_batch_size 2\n")
    (call,) = _calls(run)
    assert call.callee == "sft.py's TrainingArguments flags"


# --- Plan fields --------------------------------------------------------------------------------------


def test_plan_fields_from_the_flags():
    (call,) = _calls(HF / "bad_precision" / "run.sh")
    assert plan_fields(call) == [("batch.micro", 4, (7, 5)), ("batch.accumulation", 2, (8, 5)),
                                 ("precision.param_dtype", "bf16", (9, 5)),
                                 ("activation_checkpointing.enabled", True, (10, 5))]
    values, positions, written, _ = parse(_args(
        ["--learning_rate", "3e-4", "--weight_decay", "0.1", "--adam_beta2", "0.95", "--optim", "adamw_torch",
         "--warmup_steps", "0.03", "--lr_scheduler_type", "cosine", "--max_grad_norm", "0.5", "--bf16", "false",
         "--per_device_train_batch_size", "$X"]))
    call = TrainingFlags("t", 1, 1, values, positions, written=written)
    fields = {dotted: value for dotted, value, _ in plan_fields(call)}
    assert fields == {"optimizer.lr": 3e-4, "optimizer.weight_decay": 0.1, "optimizer.betas": [0.9, 0.95],
                      "optimizer.name": "adamw_torch", "scheduler.name": "cosine", "gradient_clipping": 0.5,
                      "precision.param_dtype": "fp32"}  # warmup 0.03 is a ratio; $X is unknown


# --- DS435-DS439 on launch documents --------------------------------------------------------------------


def _findings(run) -> list:
    run = str(run)
    with open(run, encoding="utf-8") as handle:
        text = handle.read()
    document = Document(run, "launch", text, data=SimpleNamespace(training_arguments=_calls(run)))
    return [f for rule in RULES for f in rule().check(document, Context())]


def test_bf16_flag_with_fp16_enabled_is_ds436():
    (finding,) = _findings(HF / "bad_precision" / "run.sh")
    assert (finding.code, finding.severity, finding.line, finding.column) == ("DS436", "error", 9, 5)
    assert finding.message.startswith("--bf16 true (train.py's TrainingArguments flags) but ds_zero2.json has "
                                      "fp16.enabled true: Accelerate raises ValueError")
    (related,) = finding.related
    assert related.file.endswith("bad_precision/ds_zero2.json") and related.line == 5
    assert finding.unknown_context is None


def test_optim_flag_with_an_optimizer_block_is_ds435():
    (finding,) = _findings(HF / "bad_optim" / "run.sh")
    assert (finding.code, finding.severity, finding.line, finding.column) == ("DS435", "warning", 6, 5)
    assert finding.message.startswith("--optim sgd (finetune.py's TrainingArguments flags) is ignored: "
                                      "ds_zero2.json has an \"optimizer\" block (AdamW)")
    assert finding.message.endswith("or drop --optim")
    assert finding.related[0].line == 4


@pytest.mark.parametrize("folder", ["good_precision", "good_optim"])
def test_good_launches_are_clean(folder):
    assert _calls(HF / folder / "run.sh")
    assert _findings(HF / folder / "run.sh") == []


def test_entry_script_missing_makes_the_finding_an_info():
    (finding,) = _findings(HF / "no_entry" / "run.sh")
    assert (finding.code, finding.severity) == ("DS436", "info")
    assert finding.unknown_context.kind == "program"


def test_missing_precision_flag_and_full_eval_and_offload_swap(tmp_path):
    entry = """\
        from transformers import HfArgumentParser, TrainingArguments
        (args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()
        """
    (tmp_path / "ds.json").write_text('{"bf16": {"enabled": true}, "fp16": {"enabled": "auto"}, '
                                      '"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}}')
    run = _tree(tmp_path, entry, "torchrun train.py --deepspeed ds.json --fp16_full_eval --optim=sgd\n")
    found = {f.code: f for f in _findings(run)}
    assert set(found) == {"DS436", "DS437", "DS439"}
    assert found["DS436"].message.startswith("train.py's TrainingArguments flags without --bf16 (False) but ds.json "
                                             "has bf16.enabled true: the Trainer raises ValueError when train() starts")
    assert found["DS437"].message.startswith("--fp16_full_eval (train.py's TrainingArguments flags) asks for fp16 in "
                                             "evaluation only")
    assert "or set --fp16 True if that is meant" in found["DS437"].message
    assert found["DS439"].message.startswith("--optim=sgd (train.py's TrainingArguments flags) builds torch.optim.SGD")
    assert (found["DS439"].line, found["DS439"].column) == (1, 56)
    # an unknown splice may set bf16: no "not set" verdict
    run = _tree(tmp_path, entry, "torchrun train.py --deepspeed ds.json $EXTRA\n")
    assert [f.code for f in _findings(run)] == []


def test_python_messages_are_unchanged():
    call = rules.ArgumentsCall("TrainingArguments", 3, 8, {"optim": "sgd"}, {"optim": (3, 30)})
    assert rules._given(call, 'TrainingArguments(optim="sgd")', "optim") == 'TrainingArguments(optim="sgd")'
    assert rules._option(call, "optim") == "optim=" and rules._option(call, "bf16", "True") == "bf16=True"


def test_never_raises_on_odd_launches(tmp_path):
    for text in ("torchrun\n", "python -m foo --bf16\n", "torchrun $SCRIPT --per_device_train_batch_size 4\n",
                 "deepspeed train.py --no_remove_unused_columns=1 --label_names\n"):
        path = tmp_path / "run.sh"
        path.write_text(text)
        for launch in read_launch_script(text, str(path)).launches:
            training_flags.arguments_call(launch, str(path))


def test_plain_deepspeed_flags_without_the_entry_script_give_no_call(tmp_path):
    run = _tree(tmp_path, None, "deepspeed ds_train.py --epoch 1 --deepspeed --deepspeed_config ds_config.json\n")
    assert _calls(run) == []


def test_a_module_entry_is_found(tmp_path):
    (tmp_path / "pkg").mkdir()
    run = _tree(tmp_path, """\
        from transformers import HfArgumentParser
        from trl import SFTConfig
        (config,) = HfArgumentParser(SFTConfig).parse_args_into_dataclasses()
        """, "deepspeed --module pkg.main --per_device_train_batch_size 2\n", name="pkg/main.py")
    (call,) = _calls(run)
    assert call.entry == str(tmp_path / "pkg" / "main.py") and call.callee == "main.py's TrainingArguments flags"


def test_no_plan_fields_when_the_program_is_unknown():
    (call,) = _calls(HF / "no_entry" / "run.sh")
    assert call.keywords["per_device_train_batch_size"] == 4 and plan_fields(call) == []


# --- the oracle: the launch's argv through HfArgumentParser and the real Trainer on the CPU --------------

TRAINER_PROBE = r'''
import json, os, sys, tempfile
import torch
from transformers import HfArgumentParser, PretrainedConfig, PreTrainedModel, Trainer, TrainingArguments


class TinyConfig(PretrainedConfig):
    model_type = "shardshift-tiny-flags"

    def __init__(self, hidden_size=16, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size


class Tiny(PreTrainedModel):
    config_class = TinyConfig

    def __init__(self, config):
        super().__init__(config)
        self.linear = torch.nn.Linear(4, 4)
        self.post_init()

    def forward(self, x=None, labels=None):
        return {"loss": self.linear(x.to(self.linear.weight.dtype)).float().pow(2).mean()}


results = {}
for folder, argv in json.load(sys.stdin).items():
    namespace, _ = HfArgumentParser(TrainingArguments).parse_known_args(argv)
    keywords = vars(namespace)
    config = json.load(open(os.path.join(folder, keywords.pop("deepspeed"))))
    result = results[folder] = {"stage": None, "error": None}
    with tempfile.TemporaryDirectory() as out:
        # what the tiny model on one CPU process needs; everything the flags say is kept
        keywords.update(output_dir=out, use_cpu=True, report_to="none", max_steps=1, save_strategy="no",
                        gradient_checkpointing=False, deepspeed=config)
        stage = "arguments"
        try:
            args = TrainingArguments(**keywords)
            stage = "trainer"
            trainer = Trainer(model=Tiny(TinyConfig()), args=args, train_dataset=[{"x": torch.ones(4)}] * 8)
            stage = "train"
            trainer.train()
        except Exception as error:
            result.update(stage=stage, error=f"{type(error).__name__}: {error}"[:500])
            continue
        engine = trainer.model_wrapped
        result.update(optimizer=type(engine.basic_optimizer).__name__, bf16=bool(engine.bfloat16_enabled()),
                      optim=str(args.optim.value))
print("RESULT " + json.dumps(results))
'''


@pytest.fixture(scope="module")
def flag_runs() -> dict:
    import json
    import os
    import socket
    import subprocess
    import sys

    from shardshift.formats.megatron.reader import argv_of

    import oracles

    oracles.require_installed("transformers", "accelerate", "deepspeed", "torch")
    cases = {}
    for folder in ("bad_precision", "good_precision", "bad_optim", "good_optim"):
        run = HF / folder / "run.sh"
        (launch,) = read_launch_script(run.read_text(), str(run)).launches
        cases[str(HF / folder)] = argv_of(launch.args)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {name: value for name, value in os.environ.items() if not name.startswith("ACCELERATE_")}
    env.update(DS_ACCELERATOR="cpu", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK="0", LOCAL_RANK="0",
               WORLD_SIZE="1", HF_HUB_OFFLINE="1", TRANSFORMERS_VERBOSITY="error", PYTHONWARNINGS="ignore")
    done = subprocess.run([sys.executable, "-c", TRAINER_PROBE], input=json.dumps(cases), capture_output=True,
                          text=True, env=env, timeout=900)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stderr[-3000:]
    return {os.path.basename(k): v for k, v in json.loads(lines[-1][len("RESULT "):]).items()}


@pytest.mark.oracle
def test_the_trainer_refuses_the_bf16_flag_as_ds436_says(flag_runs):
    bad, good = flag_runs["bad_precision"], flag_runs["good_precision"]
    (finding,) = _findings(HF / "bad_precision" / "run.sh")
    quoted = "`--mixed_precision` arg cannot be set to `bf16` when `fp16` is set in the DeepSpeed config file."
    assert bad["stage"] == "trainer" and quoted in bad["error"] and quoted in finding.message
    assert good["error"] is None and good["bf16"] is True, good


@pytest.mark.oracle
def test_the_optim_flag_is_ignored_as_ds435_says(flag_runs):
    bad, good = flag_runs["bad_optim"], flag_runs["good_optim"]
    assert bad["error"] is None and good["error"] is None, (bad, good)
    assert bad["optim"] == good["optim"] == "sgd"
    assert bad["optimizer"] in ("AdamW", "FusedAdam")  # DeepSpeed's for the block's AdamW: --optim sgd is not used
    assert good["optimizer"] == "SGD"


def test_fill_plan_sets_the_chosen_launchs_fields_with_the_flag_as_provenance():
    from shardshift.plan import Plan

    plans = {}
    for folder in ("good_optim", "bad_optim"):
        run = HF / folder / "run.sh"
        script = read_launch_script(run.read_text(), str(run))
        data = SimpleNamespace(training_arguments=_calls(run), launch=script.launches[0])
        plan = plans[folder] = Plan()
        training_flags.fill_plan(plan, data, str(run))
    plan = plans["good_optim"]
    assert (plan.batch.micro, plan.optimizer.name, plan.optimizer.lr) == (2, "sgd", 1e-4)
    where = plan.provenance["optimizer.name"]
    assert (where.file, where.line, where.column, where.pointer) == (str(HF / "good_optim" / "run.sh"), 6, 5,
                                                                     "--optim")
    # an "optimizer" block wins (DS435 says so): the merged setup takes the block's optimizer
    assert plans["bad_optim"].optimizer.name is None and plans["bad_optim"].optimizer.lr == 1e-4
    empty = Plan()
    training_flags.fill_plan(empty, SimpleNamespace(training_arguments=_calls(HF / "no_entry" / "run.sh"),
                                                    launch=None), "run.sh")
    assert list(empty.leaves()) == []  # the entry script is unknown: no values from its flags


def test_precedence_is_transformers_fill_match():
    table = training_flags.PRECEDENCE
    assert {f for f, rule in table.items() if rule.outcome == "mismatch"} == {
        "batch.micro", "batch.accumulation", "gradient_clipping", "optimizer.lr", "optimizer.betas", "optimizer.eps",
        "optimizer.weight_decay", "scheduler.warmup_steps", "precision.param_dtype"}
    assert table["precision.param_dtype"].unless == {"bf16", "fp16", "fp32"}  # DS436's
    assert table["optimizer.name"].outcome == table["scheduler.name"].outcome == "referenced"
    assert all(rule.default is None for rule in table.values())


# --- real launch scripts (../shared/corpus/wild) ------------------------------------------------------

WILD = {  # script -> (entry script found, Plan fields from its TrainingArguments flags)
    "OpenBMB__MiniCPM/finetune/lora_finetune.sh": (True, {"batch.micro": 32, "batch.accumulation": 1,
                                                          "precision.param_dtype": "bf16", "optimizer.lr": 5e-05}),
    "THUDM__ChatGLM2-6B/ptuning/ds_train_finetune.sh": (True, {"batch.micro": 4, "precision.param_dtype": "fp16",
                                                               "optimizer.lr": 1e-4}),
    "shibing624__MedicalGPT/scripts/run_sft.sh": (True, {"batch.micro": 2, "batch.accumulation": 8,
                                                         "activation_checkpointing.enabled": True}),
    "yyDing1__SCAN-PRM/scripts/train.sh": (True, {"batch.micro": 1, "batch.accumulation": 16,
                                                  "precision.param_dtype": "bf16"}),  # deepspeed --module
    "01-ai__Yi/finetune/scripts/run_sft_Yi_6b.sh": (False, {}),  # main.py is in ../sft/ after a cd: unknown
    "tatsu-lab__alpaca_farm/examples/scripts/sft.sh": (False, {}),  # examples/supervised.py is not in the corpus
}


@needs_corpus
@pytest.mark.corpus
@pytest.mark.parametrize("script", sorted(WILD))
def test_wild_launch_scripts(script, monkeypatch):
    wild = CORPUS / "wild"
    monkeypatch.chdir(wild)  # as `check` runs over the folder
    found, expected = WILD[script]
    (call,) = _calls(wild / script)
    assert (call.entry is not None) is found and (call.program is None) is found
    fields = {dotted: value for dotted, value, _ in plan_fields(call)}
    assert {k: fields.get(k) for k in expected} == expected


@needs_corpus
@pytest.mark.corpus
def test_wild_scripts_read_without_a_traceback():
    wild = CORPUS / "wild"
    scripts = sorted(p for ext in ("sh", "slurm", "bash") for p in wild.rglob(f"*.{ext}"))
    assert scripts
    flagged = set()
    for path in scripts:
        text = path.read_text(encoding="utf-8", errors="replace")
        for launch in read_launch_script(text, str(path)).launches:
            if training_flags._arguments_call(launch, str(path)) is not None:
                flagged.add(str(path.relative_to(wild)))
    assert set(WILD) <= flagged
