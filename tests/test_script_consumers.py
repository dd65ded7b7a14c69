"""Issue 11: DS420 ("auto" nobody fills) finds the consumers of a ds_config the way real setups
name it: a shell variable, a launcher argument (`accelerate launch --deepspeed_config_file`,
`torchrun ... --deepspeed=`), a Python constant, an argparse default, an HfArgumentParser
dataclass default. A path decided at run time (`--deepspeed $1`) makes the consumer unknown: DS420
says so instead of claiming there is none, and never guesses that the script reads the file.

Through the real CLI (`check --format json`) on the setups under fixtures/setups/ds420_*, and on
small repositories written to tmp_path.
"""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES, check_json
from rule_cases import findings_with_code, marker_position

SETUPS = FIXTURES / "setups"
SILENT = ["ds420_shell_variable", "ds420_launcher_argument", "ds420_python_constant", "ds420_argparse_default",
          "ds420_hfargumentparser_default"]


@pytest.fixture(scope="module")
def setups() -> dict:
    status, output = check_json(*(str(SETUPS / name) for name in [*SILENT, "ds420_runtime_argument"]))
    return output


@pytest.mark.parametrize("name", SILENT)
def test_ds420_is_silent_when_a_script_passes_the_path_through_a_variable(setups, name):
    config = str(SETUPS / name / "ds_config.json")
    found = [f for f in findings_with_code(setups, "DS420") if f["file"].endswith(config.split("fixtures/", 1)[1])]
    assert found == []
    assert [f for f in findings_with_code(setups, "DS421") if name in f["file"]] == []  # every "auto" is filled


def test_ds420_says_the_consumer_is_unknown_for_a_path_decided_at_run_time(setups):
    (finding,) = [f for f in findings_with_code(setups, "DS420") if "ds420_runtime_argument" in f["file"]]
    assert finding["severity"] == "info"  # the consumer is context shardshift could not find
    assert finding["unknown_context"]["kind"] == "consumer"
    assert "decided at run time" in finding["unknown_context"]["what"]
    assert (finding["line"], finding["column"]) == marker_position(
        SETUPS / "ds420_runtime_argument" / "ds_config.json", '"auto"')
    message = finding["message"]
    assert "decided at run time" in message and "script argument $1" in message and "is unknown" in message
    assert "nothing found" not in message
    script = [r for r in finding["related"] if r["file"].endswith("train.sh")]
    assert [r["line"] for r in script] == [3]


def test_each_setup_alone_gives_the_same_verdict(tmp_path):
    """Checking only the ds_config (as pre-commit does) finds the script in its directory."""
    for name in [*SILENT, "ds420_runtime_argument"]:
        status, output = check_json(str(SETUPS / name / "ds_config.json"))
        assert len(findings_with_code(output, "DS420")) == (name == "ds420_runtime_argument"), (name, output)


# --- small repositories -------------------------------------------------------------------

HF_CONFIG = {"train_micro_batch_size_per_gpu": "auto", "gradient_clipping": "auto", "zero_optimization": {"stage": 2}}

# (files besides configs/ds_config.json, the DS420 verdict: "none" (silent), "nothing" (no consumer
# found), "unknown" (a consumer decided at run time))
CASES = {
    "variable": ({"run.sh": "CFG=configs/ds_config.json\ndeepspeed train.py --deepspeed $CFG\n"}, "none"),
    "variable-in-array": ({"run.sh": 'ARGS=(--bf16 --deepspeed "configs/ds_config.json")\n'
                                     'torchrun --nproc_per_node 8 train.py "${ARGS[@]}"\n'}, "none"),
    "env-default": ({"run.sh": "torchrun train.py --deepspeed=${DS_CONFIG:-configs/ds_config.json}\n"}, "none"),
    "branch": ({"run.sh": 'if [ "$ZERO" = 3 ]; then CFG=configs/z3.json; else CFG=configs/ds_config.json; fi\n'
                          "python train.py --deepspeed $CFG\n"}, "none"),
    "function": ({"run.sh": 'ROOT=$(pwd)\nlaunch() {\n  deepspeed train.py --deepspeed "$ROOT/configs/ds_config.json"\n}\n'
                            "launch\n"}, "none"),
    "accelerate-launch": ({"run.sh": "C=configs/ds_config.json\naccelerate launch --deepspeed_config_file $C t.py\n"},
                          "none"),
    "script-argument": ({"run.sh": "deepspeed train.py --deepspeed $1\n"}, "unknown"),
    "env-variable": ({"run.sh": 'deepspeed train.py --deepspeed "${DS_CONFIG}"\n'}, "unknown"),
    "unknown-directory": ({"run.sh": 'deepspeed train.py --deepspeed "$DIR/ds_config.json"\n'}, "unknown"),
    "name-pattern": ({"run.sh": 'deepspeed train.py --deepspeed "configs/ds_${VARIANT}.json"\n'}, "unknown"),
    # the known part rules this file out
    "other-name": ({"run.sh": 'deepspeed train.py --deepspeed "configs/zero3_${VARIANT}.json"\n'}, "nothing"),
    "other-directory": ({"run.sh": 'deepspeed train.py --deepspeed "$ROOT/other/ds_config.json"\n'}, "nothing"),
    "literal-other-file": ({"run.sh": "deepspeed train.py --deepspeed configs/z3.json\n"}, "nothing"),
    # a script in another directory than the config's (or its ancestors) is not assumed to read it
    "runtime-elsewhere": ({"other/run.sh": "deepspeed train.py --deepspeed $1\n"}, "nothing"),
    # a scripts/ folder runs from the directory above (FastChat's scripts/train_lora.sh)
    "runtime-scripts-folder": ({"scripts/train.sh": "deepspeed t.py --deepspeed $PATH_TO_DEEPSPEED_CONFIG\n"},
                               "unknown"),
    "switch-then-flag": ({"run.sh": "deepspeed train.py --deepspeed --deepspeed_config=$CFG --bf16\n"}, "unknown"),
    "python-constant": ({"train.py": 'from transformers import TrainingArguments\nDS = "configs/ds_config.json"\n'
                                     'def main():\n    return TrainingArguments(output_dir="o", deepspeed=DS)\n'}, "none"),
    "python-argparse": ({"train.py": 'import argparse\nfrom transformers import TrainingArguments\n'
                                     'p = argparse.ArgumentParser()\n'
                                     'p.add_argument("--deepspeed", default="configs/ds_config.json")\n'
                                     'a = p.parse_args()\nt = TrainingArguments(output_dir="o", deepspeed=a.deepspeed)\n'},
                        "none"),
    "python-argparse-dest": ({"train.py": 'import argparse\nfrom transformers import TrainingArguments\n'
                                          'p = argparse.ArgumentParser()\n'
                                          'p.add_argument("-c", "--config", dest="ds", default="configs/ds_config.json")\n'
                                          'a = p.parse_args()\nt = TrainingArguments(output_dir="o", deepspeed=a.ds)\n'},
                             "none"),
    "python-dataclass": ({"train.py": 'from dataclasses import dataclass, field\n'
                                      'from transformers import HfArgumentParser\n@dataclass\nclass A:\n'
                                      '    deepspeed: str = field(default="configs/ds_config.json")\n'
                                      '(a,) = HfArgumentParser(A).parse_args_into_dataclasses()\n'}, "none"),
    "python-runtime": ({"train.py": 'import sys\nfrom transformers import TrainingArguments\n'
                                    'def main(args):\n    return TrainingArguments(output_dir="o", deepspeed=args.ds)\n'},
                       "unknown"),
    "python-argv": ({"train.py": 'import sys\nfrom transformers import TrainingArguments\n'
                                 't = TrainingArguments(output_dir="o", deepspeed=sys.argv[1])\n'}, "unknown"),
    # a dict built in code is not a path: no consumer of any file
    "python-dict-builder": ({"train.py": 'from transformers import TrainingArguments\n'
                                         't = TrainingArguments(output_dir="o", deepspeed=make_config())\n'}, "nothing"),
    # a dataclass that HfArgumentParser does not read and that extends nothing: not a consumer
    "python-plain-dataclass": ({"x.py": 'from dataclasses import dataclass\nimport deepspeed\n@dataclass\nclass A:\n'
                                        '    deepspeed: str = "configs/ds_config.json"\n'}, "nothing"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_consumers_in_a_repository(tmp_path, name):
    files, verdict = CASES[name]
    (tmp_path / ".git").mkdir()
    config = tmp_path / "configs" / "ds_config.json"
    config.parent.mkdir()
    config.write_text(json.dumps(HF_CONFIG, indent=2))
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    status, output = check_json(str(config))
    found = findings_with_code(output, "DS420")
    if verdict == "none":
        assert found == [], found
        return
    assert len(found) == 1, output["findings"]
    message = found[0]["message"]
    if verdict == "unknown":
        assert "decided at run time" in message and "nothing found" not in message, message
    else:
        assert "nothing found" in message and "decided at run time" not in message, message


# --- the shell reader of references --------------------------------------------------------

SHELL_CASES = [
    ("DS=ds.json\ndeepspeed train.py --deepspeed $DS\n", [("--deepspeed", "ds.json", None, ())]),
    ("accelerate launch --num_processes 8 --deepspeed_config_file ds_z3.json train.py\n",
     [("--deepspeed_config_file", "ds_z3.json", None, ())]),
    ("torchrun train.py --deepspeed=${C:-configs/ds.json}\n",
     [("--deepspeed", "configs/ds.json", None, ())]),  # the script's default
    ('if [ "$1" = a ]; then S=_a; else S=; fi\npython t.py --deepspeed_config "ds${S}.json"\n',
     [("--deepspeed_config", None, "set differently by the branches of `if [ \"$1\" = a ]` at line 1",
       ("ds_a.json", "ds.json"))]),
    ("deepspeed t.py --deepspeed --deepspeed_config ds.json\n", [("--deepspeed_config", "ds.json", None, ())]),
    ("deepspeed t.py --deepspeed --other=$X\n", []),
    ("echo --deepspeed ds.json\n", [("--deepspeed", "ds.json", None, ())]),  # a mention on a command line counts
    ("# --deepspeed ds.json\n", []),
    ("deepspeed t.py --deepspeed $(pick_config)\n", [("--deepspeed", None, "the output of", ())]),
]


@pytest.mark.parametrize("text,expected", SHELL_CASES, ids=range(len(SHELL_CASES)))
def test_shell_references(text, expected):
    from shardshift.formats.shell_refs import deepspeed_references

    found = deepspeed_references(text, "run.sh")
    assert len(found) == len(expected), found
    for reference, (flag, value, reason, alternatives) in zip(found, expected):
        assert (reference.flag, reference.value, reference.alternatives) == (flag, value, alternatives)
        if reason is None:
            assert reference.unknown is None
        else:
            assert reason.lower() in reference.unknown.reason.lower() or reason == "the output of", reference


try:
    from hypothesis import given, settings
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover
    given = None

FRAGMENTS = ["deepspeed t.py ", "--deepspeed ", "--deepspeed=", "--deepspeed_config_file ", "$1", "${X:-a.json}", "$X",
             "ds.json", '"', "'", "\n", "; ", "if [ $A ]; then ", "fi", "else ", "( ", ")", "f() { ", "}", "$(", "`",
             "<<EOF\n", "EOF\n", "\\\n", "A=(", "${A[@]}", "&& ", "| ", "#", "=", "{", "-"]

if given is not None:
    @given(st.lists(st.sampled_from(FRAGMENTS), max_size=16))
    @settings(max_examples=200, deadline=None)
    def test_shell_references_never_raise(parts):
        from shardshift.formats.shell_refs import deepspeed_references

        assert isinstance(deepspeed_references("".join(parts)), list)
