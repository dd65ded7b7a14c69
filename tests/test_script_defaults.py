"""Issue 20: a launch script's own defaults (`${TP:-8}`, `: "${GBS:=1536}"`) are values, marked as
ones the job's environment may override; findings on them say so; `check --env X=VALUE` (and
`[tool.shardshift] env`, the API's `env=`) sets what the environment would."""

from __future__ import annotations

import json

import pytest

from shardshift import api
from shardshift.context.environment import given, parse
from shardshift.formats.megatron.shell import read_argument_file, read_launch_script
from shardshift.plan import Unknown

from conftest import FIXTURES, check_json, run_cli

BAD = FIXTURES / "megatron" / "defaults" / "bad_tp_default.sh"  # TP=${TP:-3} with 32 heads on 8 GPUs
NOTE = "(with the script's default TP=3; the environment may set TP: `shardshift check --env TP=...`)"


def _args(text: str) -> dict:
    script = read_launch_script(text, "run.sh")
    assert script.problems == [], script.problems
    return {a.flag: a for a in script.launches[-1].args if a.flag is not None}


# -- each form of default --------------------------------------------------------------------------
FORMS = [
    ("TP=${TP:-8}\n", "$TP", "8", ("TP", "8", 1, 4)),
    ("TP=${TP-8}\n", "$TP", "8", ("TP", "8", 1, 4)),
    (': "${TP:=8}"\n', "$TP", "8", ("TP", "8", 1, 4)),
    (": ${TP:=8}\n", "$TP", "8", ("TP", "8", 1, 3)),
    (": ${TP=8}\n", "$TP", "8", ("TP", "8", 1, 3)),
    ("export TP=${TP:-8}\n", "$TP", "8", ("TP", "8", 1, 11)),
    ("", "${TP:-8}", "8", ("TP", "8", 1, 24)),  # used in place
    ("TP=${TP:-4}\nDP=$((TP*2))\n", "$DP", "8", ("TP", "4", 1, 4)),  # in arithmetic
    ("DP=$(( ${TP:-4} * 2 ))\n", "$DP", "8", ("TP", "4", 1, 8)),  # a default inside arithmetic
    ("DP=$((${TP:=4}+1))\n", "$TP", "4", ("TP", "4", 1, 7)),  # ... that assigns
    ("TP=${TP:-8}\n", '"tp${TP}x"', "tp8x", ("TP", "8", 1, 4)),  # inside a string
    ("A=(--x ${TP:-8})\n", '"${A[1]}"', "8", ("TP", "8", 1, 8)),  # in an array
]


@pytest.mark.parametrize("prefix,use,value,assumption", FORMS, ids=[f[0] + f[1] for f in FORMS])
def test_each_form_of_default_gives_its_value_marked_as_the_scripts_default(prefix, use, value, assumption):
    args = _args(prefix + f"torchrun train.py --tp {use}\n")
    assert args["--tp"].value == value
    assert args["--tp"].assumed == (assumption,)


def test_nested_defaults_name_both_variables():
    arg = _args("L=${A:-${B:-4}}\ntorchrun train.py --layers $L\n")["--layers"]
    assert arg.value == "4"
    assert {a[:2] for a in arg.assumed} == {("A", "4"), ("B", "4")}


def test_a_value_the_script_sets_is_no_assumption():
    args = _args("TP=2\nTP=${TP:-8}\nE=\nG=${E:-5}\ntorchrun train.py --tp $TP --g $G\n")
    assert (args["--tp"].value, args["--tp"].assumed) == ("2", ())
    assert (args["--g"].value, args["--g"].assumed) == ("5", ())  # E is set (empty) by the script itself


def test_no_default_stays_unknown_with_the_variable_name():
    args = _args("torchrun train.py --tp $TP --pp ${PP:+2} --x ${X:?}\n")
    assert args["--tp"].value == Unknown("environment variable TP")
    assert isinstance(args["--pp"].value, Unknown) and "PP" in args["--pp"].value.reason
    assert isinstance(args["--x"].value, Unknown) and "X" in args["--x"].value.reason


def test_a_script_argument_with_a_default_stays_unknown():
    assert isinstance(_args("torchrun train.py --tp ${1:-8}\n")["--tp"].value, Unknown)


def test_the_launchers_counts_carry_their_defaults():
    launch = read_launch_script("NGPU=${NGPU:-8}\ntorchrun --nproc_per_node=$NGPU --nnodes ${NN:-2} t.py\n").launches[0]
    assert launch.options == {"nproc_per_node": "8", "nnodes": "2"}
    assert launch.assumed == {"nproc_per_node": (("NGPU", "8", 1, 6),), "nnodes": (("NN", "2", 2, 42),)}


def test_a_command_read_again_keeps_the_defaults_and_the_positions():
    text = 'TP=${TP:-2}\nARGS=(\n  --tp $TP\n)\nCMD="python train.py ${ARGS[@]}"\nbash -c "$CMD"\n'
    arg = _args(text)["--tp"]
    assert (arg.value, arg.line, arg.column, arg.assumed) == ("2", 3, 3, (("TP", "2", 1, 4),))


def test_what_a_branch_decided_by_a_default_sets_stands_on_that_default():
    text = ("M=${M:-7B}\nUSE=${USE:-1}\ncase $M in\n  7B) L=32 ;;\n  13B) L=40 ;;\nesac\nA=(--x 1)\n"
            'if [ "$USE" = 1 ]; then\n  A=("${A[@]}" --fsdp)\nfi\ntorchrun t.py --layers $L "${A[@]}"\n')
    args = _args(text)
    assert (args["--layers"].value, args["--layers"].assumed) == ("32", (("M", "7B", 1, 3),))
    assert args["--fsdp"].assumed == (("USE", "1", 2, 5),)
    assert args["--x"].assumed == ()  # set before the branch
    with given({"USE": "0", "M": "13B"}):
        args = _args(text)
    assert args["--layers"].value == "40" and "--fsdp" not in args


# -- the environment given with --env ------------------------------------------------------------------
def test_the_given_environment_sets_bare_and_defaulted_variables():
    with given({"TP": "4", "PP": "2"}):
        args = _args("TP=${TP:-8}\ntorchrun train.py --tp $TP --pp $PP --cp ${CP:-1}\n")
        file_args = {a.flag: a.value for a in read_argument_file("--tp ${TP}\n--pp ${PP:-9}\n")}
    assert (args["--tp"].value, args["--pp"].value, args["--cp"].value) == ("4", "2", "1")
    assert args["--tp"].assumed == (("TP", "4", 0, 0),)  # line 0: given with --env
    assert file_args == {"--tp": "4", "--pp": "2"}
    # outside the block the environment is empty again
    assert _args("torchrun train.py --tp $TP\n")["--tp"].value == Unknown("environment variable TP")


def test_an_assignment_in_the_script_wins_over_the_environment():
    with given({"TP": "4"}):
        assert _args("TP=2\ntorchrun train.py --tp $TP\n")["--tp"].value == "2"


@pytest.mark.parametrize("items,error", [
    (["TP"], "NAME=VALUE"), (["1X=2"], "not a shell variable name"), ({"TP": [1]}, "string or a number"),
])
def test_bad_environment_items_are_refused(items, error):
    with pytest.raises(ValueError, match=error):
        parse(items)


def test_environment_items_parse():
    assert parse(["TP=8", "PATH=/a=b", "E="]) == {"TP": "8", "PATH": "/a=b", "E": ""}
    assert parse({"TP": 8, "DTYPE": "bf16"}) == {"TP": "8", "DTYPE": "bf16"}


# -- findings ------------------------------------------------------------------------------------------
def test_a_mistake_behind_a_default_is_caught_with_the_note():
    status, output = check_json(str(BAD))
    found = {f["code"]: f for f in output["findings"]}
    assert status == 1 and set(found) == {"PL101", "PL103"}
    heads = found["PL103"]
    assert heads["message"].endswith(NOTE)
    assert heads["assumed"] == [{"variable": "TP", "value": "3", "line": 3, "column": 4, "source": "script default"}]
    # the world size 8 is NGPU's default, given at the launcher
    assert "the script's defaults TP=3, NGPU=8" in found["PL101"]["message"]
    assert [a["variable"] for a in found["PL101"]["assumed"]] == ["TP", "NGPU"]


def test_the_text_report_shows_the_note():
    done = run_cli("check", str(BAD))
    assert NOTE in done.stdout and done.returncode == 1


def test_env_on_the_command_line_makes_it_clean():
    status, output = check_json("--env", "TP=4", str(BAD))
    assert (status, output["findings"]) == (0, [])


def test_a_value_set_by_env_says_so():
    status, output = check_json("--env", "TP=5", "--env", "NGPU=10", str(BAD))
    heads = next(f for f in output["findings"] if f["code"] == "PL103")
    assert heads["message"].endswith("(with TP=5 set by --env)")
    assert heads["assumed"] == [{"variable": "TP", "value": "5", "line": None, "column": None, "source": "--env"}]


def test_a_bad_env_option_is_a_usage_error():
    done = run_cli("check", "--env", "TP", str(BAD))
    assert done.returncode == 2 and "NAME=VALUE" in done.stderr and "Traceback" not in done.stderr


def test_defaults_are_no_unknown_values():
    result = api.check(str(BAD))
    assert not [u for u in result.unknowns if "TP" in u.reason or "NGPU" in u.reason]
    plan = read_launch_script(BAD.read_text()).variables
    assert (plan["TP"], plan["GBS"], plan["NGPU"]) == ("3", "24", "8")


@pytest.mark.parametrize("config", ['env = {TP = "4"}', 'env = ["TP=4"]', "env = {TP = 4}"])
def test_env_in_the_project_configuration(tmp_path, config):
    (tmp_path / "pyproject.toml").write_text(f"[tool.shardshift]\n{config}\n")
    (tmp_path / "run.sh").write_text(BAD.read_text())
    status, output = check_json("run.sh", cwd=tmp_path)
    assert (status, output["findings"]) == (0, [])
    # the command line wins variable by variable
    status, output = check_json("--env", "TP=3", "run.sh", cwd=tmp_path)
    assert status == 1 and {f["code"] for f in output["findings"]} == {"PL101", "PL103"}


@pytest.mark.parametrize("config", ['env = "TP=4"', 'env = {"1X" = "4"}', 'env = ["TP"]'])
def test_a_bad_env_in_the_project_configuration_is_refused(tmp_path, config):
    (tmp_path / "pyproject.toml").write_text(f"[tool.shardshift]\n{config}\n")
    (tmp_path / "run.sh").write_text(BAD.read_text())
    done = run_cli("check", "run.sh", cwd=tmp_path)
    assert done.returncode == 2 and "env" in done.stderr and "Traceback" not in done.stderr


def test_the_api_takes_env():
    assert api.check(str(BAD), env={"TP": "4"}).findings == []
    assert api.check(str(BAD), env=["TP=4"]).findings == []
    assert {f.code for f in api.check(str(BAD)).findings} == {"PL101", "PL103"}
    with pytest.raises(api.ShardshiftError):
        api.check(str(BAD), env=["TP"])


def test_convert_reads_the_script_in_the_given_environment(tmp_path):
    assert "--tensor-model-parallel-size 3" in api.convert(str(BAD), to="megatron-args").text
    assert "--tensor-model-parallel-size 4" in api.convert(str(BAD), to="megatron-args", env={"TP": "4"}).text
    done = run_cli("convert", str(BAD), "--to", "megatron-args", "--env", "TP=4")
    assert done.returncode == 0 and "--tensor-model-parallel-size 4" in done.stdout


def test_a_default_flag_value_that_megatron_ignores_is_judged(tmp_path):
    """MG115 (was not judged while `${GROUPS:-2}` was unknown): the value is the script's default."""
    path = tmp_path / "run.sh"
    path.write_text("#!/bin/bash\ntorchrun --nproc_per_node 8 pretrain_gpt.py \\\n"
                    "    --num-layers 4 --hidden-size 256 --num-attention-heads 8 --seq-length 512 \\\n"
                    "    --max-position-embeddings 512 --micro-batch-size 2 --global-batch-size 16 \\\n"
                    "    --num-query-groups ${GROUPS:-2}\n")
    output = check_json(str(path))[1]
    found = [f for f in output["findings"] if f["code"] == "MG115"]
    assert len(found) == 1 and "the script's default GROUPS=2" in found[0]["message"], output["findings"]
    assert json.dumps(found[0]["assumed"]) == json.dumps(
        [{"variable": "GROUPS", "value": "2", "line": 5, "column": 24, "source": "script default"}])


def test_sarif_and_github_carry_the_note():
    sarif = json.loads(run_cli("check", "--format", "sarif", str(BAD)).stdout)
    results = sarif["runs"][0]["results"]
    heads = next(r for r in results if r["ruleId"] == "PL103")
    assert NOTE in heads["message"]["text"]
    assert heads["properties"]["assumed"][0]["variable"] == "TP"
    assert NOTE in run_cli("check", "--format", "github", str(BAD)).stdout
