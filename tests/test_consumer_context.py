"""Issue 19, cause 2: who consumes a ds_config. DS420 ("auto" nobody fills) is right only when the
consumer is known: a consumer that fills "auto" (the Trainer through a launch script in another
folder, a JSON of training arguments) silences it, a plain `deepspeed.initialize` is DS421, and
no consumer found is an info with an unknown consumer (`unknown_context`), never a warning.
Also: an absolute path from the author's machine resolves by its path suffix, a
`Seq2SeqTrainingArguments(**kwargs)` is read, and a JSON of training arguments is no ds_config.

Through the real CLI on fixtures/setups/consumers/*, on copies of them in a tree without git,
and on the wild corpus (skipped when absent).
"""

from __future__ import annotations

import json
import os
import shutil

import pytest

from conftest import FIXTURES, SHARED, check_json, run_cli
from rule_cases import findings_with_code

CONSUMERS = FIXTURES / "setups" / "consumers"
WILD = SHARED / "corpus" / "wild"


@pytest.fixture(scope="module")
def output() -> dict:
    status, found = check_json("--min-severity", "info", str(CONSUMERS))
    return found


def _in(output: dict, code: str, folder: str) -> list[dict]:
    return [f for f in findings_with_code(output, code) if f"/consumers/{folder}/" in f["file"]]


@pytest.mark.parametrize("folder", ["hf_launcher", "json_arguments", "absolute_path", "seq2seq_kwargs",
                                    "dataclass_defaults"])
def test_no_ds420_when_a_consumer_that_fills_auto_is_found(output, folder):
    assert _in(output, "DS420", folder) == []
    assert _in(output, "DS421", folder) == []


def test_no_consumer_is_an_info_with_an_unknown_consumer(output):
    (finding,) = _in(output, "DS420", "no_consumer")
    assert finding["severity"] == "info"
    context = finding["unknown_context"]
    assert context["kind"] == "consumer"
    assert "ds_orphan_config.json" in context["what"] and "checked tree" in context["what"]
    assert "together with" in context["how"]
    assert output["summary"]["unknown_context"] >= 1


def test_a_plain_deepspeed_initialize_consumer_is_named(output):
    found = _in(output, "DS421", "plain_initialize")
    assert {f["pointer"] for f in found} == {"/train_micro_batch_size_per_gpu", "/gradient_accumulation_steps",
                                             "/gradient_clipping", "/bf16/enabled"}
    for finding in found:
        assert finding["severity"] == "error" and "unknown_context" not in finding
        assert "deepspeed.initialize" in finding["message"]
        assert [r["file"].rsplit("/", 2)[-2:] for r in finding["related"]] == [["plain_initialize", "train.py"]]
    assert _in(output, "DS420", "plain_initialize") == []


def test_an_absolute_path_from_another_machine_resolves_by_its_suffix(output):
    (finding,) = _in(output, "DS435", "absolute_path")
    assert "/home/someone/proj/configs/ds_abs_config.json (resolved to " in finding["message"]
    assert "absolute_path/configs/ds_abs_config.json by its path suffix" in finding["message"]
    assert finding["related"][0]["file"].endswith("absolute_path/configs/ds_abs_config.json")


def test_seq2seq_training_arguments_with_kwargs_is_read(output):
    (finding,) = _in(output, "DS435", "seq2seq_kwargs")
    assert finding["message"].startswith('Seq2SeqTrainingArguments(optim="adafactor") is ignored')
    assert (finding["line"], finding["column"]) == (3, 76)  # at optim= inside the dict(...)


def test_the_defaults_of_a_training_arguments_dataclass_are_values(output):
    """`optim: str = field(default="adafactor")` in a dataclass built on Seq2SeqTrainingArguments
    that HfArgumentParser fills is the optim the Trainer gets unless the command line says otherwise."""
    (finding,) = _in(output, "DS435", "dataclass_defaults")
    assert finding["message"].startswith('TrainingArguments(optim="adafactor") is ignored')
    assert (finding["line"], finding["column"]) == (11, 32)  # at the field's default
    assert finding["related"][0]["file"].endswith("dataclass_defaults/configs/ds_dataclass_config.json")


def test_a_json_of_training_arguments_is_no_ds_config(output):
    formats = {f["path"].rsplit("consumers/", 1)[-1]: f["format"] for f in output["files"]}
    assert "json_arguments/train_args/sft/full.json" not in formats
    assert formats["json_arguments/train_args/ds_json_config.json"] == "deepspeed"
    assert [f for f in output["findings"] if f["file"].endswith("sft/full.json")] == []


def test_the_json_named_on_the_command_line_says_what_it_is():
    done = run_cli("check", str(CONSUMERS / "json_arguments" / "train_args" / "sft" / "full.json"))
    assert "Hugging Face training arguments" in done.stdout and "HfArgumentParser.parse_json_file" in done.stdout


def test_a_tree_without_git_is_searched_as_a_whole(tmp_path, monkeypatch):
    """The checked folder is the tree: a launch script in scripts/ names configs/ds_launcher_config.json."""
    # The machine's temporary directory may lie inside a checkout (then that checkout is the
    # repository searched, as it should be): this tree stands for one with no checkout above it.
    import os

    from shardshift.rules.deepspeed import auto

    found_root = auto.repository_root
    top = os.path.realpath(tmp_path)
    monkeypatch.setattr(auto, "repository_root", lambda path: found_root(path) if
                        os.path.realpath(found_root(path)).startswith(top + os.sep) else
                        os.path.dirname(os.path.realpath(path)))
    shutil.copytree(CONSUMERS / "hf_launcher", tmp_path / "hf_launcher")
    shutil.copytree(CONSUMERS / "no_consumer", tmp_path / "no_consumer")
    status, found = check_json("--min-severity", "info", str(tmp_path))
    assert [f["file"].rsplit("/", 1)[-1] for f in findings_with_code(found, "DS420")] == ["ds_orphan_config.json"]
    # the config alone: its folder (configs/) has no consumer, so the consumer is unknown, not missing
    status, alone = check_json("--min-severity", "info", str(tmp_path / "hf_launcher" / "configs"))
    (finding,) = findings_with_code(alone, "DS420")
    assert finding["severity"] == "info" and finding["unknown_context"]["kind"] == "consumer"


def test_text_output_shows_the_unknown_consumer():
    done = run_cli("check", "--min-severity", "info", str(CONSUMERS / "no_consumer"))
    assert "DS420 info" in done.stdout
    assert "    unknown consumer: no file in the checked tree passes ds_orphan_config.json to a program" in done.stdout
    assert done.returncode == 0


def test_by_suffix_is_the_longest_unique_suffix():
    from shardshift.context.paths import by_suffix, suffix_note

    paths = ["a/configs/ds.json", "b/other/ds.json", "c/ds_z2.json"]
    assert by_suffix("/home/x/proj/configs/ds.json", paths) == "a/configs/ds.json"
    assert by_suffix("/home/x/ds.json", paths) is None  # two files end in ds.json alone
    assert by_suffix("/home/x/ds_z2.json", paths) == "c/ds_z2.json"
    assert by_suffix("/home/x/missing.json", paths) is None
    assert suffix_note("/home/x/ds_z2.json", "c/ds_z2.json") == \
        "resolved /home/x/ds_z2.json to c/ds_z2.json by its path suffix"


def test_training_arguments_detection():
    from shardshift.formats.training_args_json import is_training_arguments

    assert is_training_arguments({"output_dir": "o", "deepspeed": "ds.json", "per_device_train_batch_size": 1,
                                  "gradient_accumulation_steps": 16, "fp16": True, "learning_rate": 1e-5})
    assert not is_training_arguments({"train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 16,
                                      "fp16": {"enabled": True}, "zero_optimization": {"stage": 2}})
    assert not is_training_arguments({"output_dir": "o", "fp16": True})  # too little to tell


@pytest.mark.skipif(not (WILD / "yangjianxin1__Firefly").is_dir(), reason="wild corpus absent")
def test_firefly_train_args_json_is_the_consumer_not_a_ds_config():
    status, found = check_json("--min-severity", "info", str(WILD / "yangjianxin1__Firefly"))
    assert [f["path"].rsplit("/", 1)[-1] for f in found["files"]] == ["ds_z3_config.json"]
    assert findings_with_code(found, "DS420") == []
    assert [f for f in found["findings"] if f["code"] in ("DS101", "DS102", "DS201")] == []


def test_a_dict_literal_spread_is_unfolded_and_an_unknown_one_is_not(tmp_path):
    (tmp_path / ".git").mkdir()
    shutil.copytree(CONSUMERS / "seq2seq_kwargs" / "configs", tmp_path / "configs")
    (tmp_path / "train.py").write_text(
        "from transformers import TrainingArguments\n"
        "kwargs = {'output_dir': 'o', 'deepspeed': 'configs/ds_kwargs_config.json', 'optim': 'adafactor'}\n"
        "args = TrainingArguments(**kwargs)\n", encoding="utf-8")
    (tmp_path / "other.py").write_text(
        "from transformers import TrainingArguments\n"
        "kwargs = load()\n"
        "args = TrainingArguments(**kwargs)\n", encoding="utf-8")
    status, found = check_json(str(tmp_path))
    (finding,) = findings_with_code(found, "DS435")
    assert finding["file"].endswith("train.py") and (finding["line"], finding["column"]) == (2, 76)  # at the key


def test_a_fifo_in_the_repository_is_not_read_for_references(tmp_path):
    """The consumers of a ds_config are looked for in its repository; a FIFO there (opening one
    waits for a writer) is skipped, as the checked walk skips it. Found when the tests ran with the
    temporary directory inside another checkout: the search reached another test's FIFO and hung."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "ds_config.json").write_text('{"train_batch_size": "auto", "train_micro_batch_size_per_gpu": 3}')
    os.mkfifo(tmp_path / "launch.sh")
    os.mkfifo(tmp_path / "other.json")
    done = run_cli("check", "--format", "json", str(tmp_path / "ds_config.json"), process=True)  # a hang is a timeout
    assert done.returncode in (0, 1) and json.loads(done.stdout)["summary"]["files"] == 1, done.stderr
