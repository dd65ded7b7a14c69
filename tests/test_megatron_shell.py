"""Launch scripts and argument files read without running them (formats/megatron/shell.py)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardshift.formats.megatron.shell import Arg, read_argument_file, read_launch_script
from shardshift.plan import Unknown

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
SCRIPTS = sorted((CORPUS / "megatron-scripts").glob("*")) if (CORPUS / "megatron-scripts").is_dir() else []
ARG_FILES = sorted((CORPUS / "megatron").glob("*.args")) if (CORPUS / "megatron").is_dir() else []


def _need_corpus(files: list) -> None:
    if not files:
        if os.environ.get("CI") == "true":
            pytest.fail("the shared corpus is missing in CI")
        pytest.skip("the shared corpus is absent")


def _flags(launch) -> dict:
    return {a.flag.replace("_", "-"): a.value for a in launch.args if a.flag}


# -- the generated parser is current ---------------------------------------------------------------
def test_generated_parser_matches_grammar():
    """shell_grammar.py numbers the states breadth-first and sorts the rules, so the tables it writes
    depend only on the grammar: the module must be exactly what the grammar gives today."""
    pytest.importorskip("lark")
    from shardshift.formats.megatron import shell_grammar

    assert shell_grammar.generate() == (ROOT / "src" / "shardshift" / "_parsers" / "launch.py").read_text(), \
        "regenerate: python -m shardshift.formats.megatron.shell_grammar"


def test_generated_parser_builds_the_tree_lark_builds():
    """The driver in the generated module gives the tree lark's own LALR parser gives."""
    lark = pytest.importorskip("lark")
    from shardshift._parsers import launch as generated
    from shardshift.formats.megatron.shell_lexer import _Lexer

    parser = lark.Lark((ROOT / "grammars" / "launch.lark").read_text(), parser="lalr")

    def shape(node):
        if isinstance(node, (lark.Token, tuple)):
            return node.type if isinstance(node, lark.Token) else node[0]
        return (node.data, [shape(c) for c in node.children])

    texts = [p.read_text() for p in SCRIPTS[:10]] + [
        "A=1\nif [ $A = 1 ]; then torchrun t.py | tee x; elif b; then :; else c; fi\nf() { B=(1 2); }\n",
        "case $x in a|b) y ;; (*) z;; esac; for i in 1 2; do ! a && b || c; done; (x) >o 2>&1 <<E\nq\nE\n"]
    for text in texts:
        lexer = _Lexer(text)
        lexer.run()
        tree, bad = generated.parse(lexer.tokens)
        interactive = parser.parse_interactive("")
        for kind, value, pos in lexer.tokens:
            interactive.feed_token(lark.Token(kind, value, pos))
        assert shape(tree) == shape(interactive.feed_eof())


# -- the corpus ------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", SCRIPTS or [None], ids=lambda p: p.name if p else "absent")
def test_corpus_script_reads(path):
    _need_corpus(SCRIPTS)
    result = read_launch_script(path.read_text(), str(path))
    if shutil.which("bash") and subprocess.run(["bash", "-n", str(path)], capture_output=True).returncode == 0:
        assert result.problems == []


@pytest.mark.parametrize("path", ARG_FILES or [None], ids=lambda p: p.name if p else "absent")
def test_corpus_argument_file_reads(path):
    _need_corpus(ARG_FILES)
    args = read_argument_file(path.read_text(), str(path))
    assert args and all(a.flag is None or a.flag.startswith("-") for a in args)


# script, launcher, nproc, nnodes, {flag: value}
CASES = [
    ("NVIDIA__Megatron-LM__examples__finetune_mnli_distributed.sh", "python -m torch.distributed.launch", "8", "1",
     {"--tensor-model-parallel-size": "1", "--micro-batch-size": "8"}),
    ("NVIDIA__Megatron-LM__examples__pretrain_gpt_distributed_with_mp.sh", "torchrun", "8", "1",
     {"--tensor-model-parallel-size": "2", "--pipeline-model-parallel-size": "2", "--micro-batch-size": "4",
      "--global-batch-size": "16"}),
    ("NVIDIA__Megatron-LM__examples__gpt3__train_gpt3_175b_distributed.sh", "torchrun", "8", "1",
     {"--tensor-model-parallel-size": "8", "--pipeline-model-parallel-size": "16", "--micro-batch-size": "1",
      "--global-batch-size": "1536"}),
    ("NVIDIA__Megatron-LM__examples__llama__train_llama3_8b_h100_fp8.sh", "torchrun", "8", "1",
     {"--tensor-model-parallel-size": "1", "--context-parallel-size": "1", "--micro-batch-size": "1",
      "--global-batch-size": "128"}),
    ("bigscience-workshop__Megatron-DeepSpeed__examples__pretrain_gpt_single_node.sh", "deepspeed", "1", None,
     {"--micro-batch-size": "4", "--global-batch-size": "8"}),
    ("deepspeedai__Megatron-DeepSpeed__examples_deepspeed__azure__run-175b.sh", "deepspeed", None, "1",
     {"--tensor-model-parallel-size": "1", "--pipeline-model-parallel-size": "1", "--micro-batch-size": "4",
      "--global-batch-size": "32", "--deepspeed_config": "ds_config.json"}),
    ("deepspeedai__Megatron-DeepSpeed__examples_deepspeed__pretrain_llama2_distributed.sh", "torchrun", "8", "1",
     {"--tensor-model-parallel-size": "2", "--pipeline-model-parallel-size": "2", "--micro-batch-size": "4",
      "--global-batch-size": "32"}),
    ("epfLLM__Megatron-LLM__examples__pretrain_gpt.sh", "python", None, None,
     {"--micro-batch-size": "4", "--global-batch-size": "8"}),
]


@pytest.mark.parametrize("name,launcher,nproc,nnodes,flags", CASES, ids=[c[0][:50] for c in CASES])
def test_corpus_script_resolves(name, launcher, nproc, nnodes, flags):
    path = CORPUS / "megatron-scripts" / name
    _need_corpus([path] if path.exists() else [])
    launches = read_launch_script(path.read_text(), str(path)).launches
    launch = next(x for x in launches if x.launcher == launcher)
    gpus = launch.options.get("nproc_per_node", launch.options.get("num_gpus"))
    nodes = launch.options.get("nnodes", launch.options.get("num_nodes"))
    assert (gpus, nodes) == (nproc, nnodes)
    got = _flags(launch)
    for flag, value in flags.items():
        assert got[flag.replace("_", "-")] == value, flag


def test_environment_only_values_name_the_variable():
    path = CORPUS / "megatron-scripts" / "NVIDIA__Megatron-LM__examples__llama__train_llama3_8b_h100_fp8.sh"
    _need_corpus([path] if path.exists() else [])
    launch = read_launch_script(path.read_text(), str(path)).launches[0]
    # `${MASTER_ADDR:-localhost}`: the script's default is the value, marked as one the environment may set
    assert launch.options["master_addr"] == "localhost"
    assert [a[:2] for a in launch.assumed["master_addr"]] == [("MASTER_ADDR", "localhost")]


# -- constructs, one at a time -------------------------------------------------------------------------
def one(text: str):
    result = read_launch_script(text, "t.sh")
    assert result.problems == [], result.problems
    return result


def test_comments_and_assignments():
    r = one("# c\nX=8  # trailing\nexport Y=$X\nZ=${W:-4}\n")
    assert r.variables["X"] == "8" and r.variables["Y"] == "8"
    assert r.variables["Z"] == "4"  # the script's default for W


def test_default_when_set_before():
    assert one("W=2\nZ=${W:-4}\n").variables["Z"] == "2"


def test_assign_default_expansion():
    r = one(": ${TP:=8}\nA=$TP\n")
    assert r.variables["TP"] == "8" == r.variables["A"]
    assert one("TP=2\n: ${TP:=8}\n").variables["TP"] == "2"


def test_arrays_and_append_and_splice():
    r = one("A=( --a 1\n  --b )\nA+=(--c \"x y\")\ntorchrun --nproc_per_node 2 train.py ${A[@]} --d\n")
    assert r.variables["A"] == ["--a", "1", "--b", "--c", "x y"]
    args = r.launches[0].args
    assert [(a.flag, a.value, a.line, a.column) for a in args] == [
        ("--a", "1", 1, 5), ("--b", None, 2, 3), ("--c", ("x", "y"), 3, 5), ("--d", None, 4, 46)]  # unquoted ${A[@]} splits "x y"


def test_line_continuations_keep_positions():
    r = one("torchrun --nnodes 2 \\\n    pretrain_gpt.py \\\n    --lr 1e-4 \\\n  --fp16\n")
    launch = r.launches[0]
    assert launch.options == {"nnodes": "2"} and launch.script == "pretrain_gpt.py"
    assert [(a.flag, a.value, a.line, a.column) for a in launch.args] == [("--lr", "1e-4", 3, 5), ("--fp16", None, 4, 3)]


def test_quotes():
    r = one("A='$X y'\nB=\"a $A\"\nC=\"--x 1 --y\"\npython p.py $C \"$C\"\n")
    assert r.variables["A"] == "$X y" and r.variables["B"] == "a $X y"
    args = r.launches[0].args
    assert [(a.flag, a.value) for a in args][:2] == [("--x", "1"), ("--y", None)]
    assert args[2].flag == "--x 1 --y"  # one quoted field, as bash passes it
    assert (args[0].line, args[0].column) == (3, 4)


def test_expansion_forms():
    r = one("A=1\nB=${A}2\nC=$A$B\nD=(p q)\nE=${D[1]}\nF=${#A}\n")
    assert (r.variables["B"], r.variables["C"], r.variables["E"], r.variables["F"]) == ("12", "112", "q", "1")


def test_arithmetic():
    r = one("A=4\nB=2\nW=$((A*B))\nX=$(( ($A + 1) * ${B} / 3 ))\nY=$((A*N))\n")
    assert r.variables["W"] == "8" and r.variables["X"] == "3"
    assert isinstance(r.variables["Y"], Unknown) and "environment variable N" in r.variables["Y"].reason


def test_heredoc():
    r = one("B=8\ncat <<EOF > ds.json\n{\"train_batch_size\": $B}\nEOF\ncat <<'X' >$OUT\n$B\nX\n")
    assert r.heredocs[0] == ("ds.json", "{\"train_batch_size\": 8}\n", 2)
    assert r.heredocs[1].text == "$B\n" and r.heredocs[1].target == Unknown("environment variable OUT")


def test_if_and_for_make_values_unknown():
    r = one("A=1\nif [ -n \"$X\" ]; then\n  B=2\n  A=3\nelse\n  A=3\nfi\nfor i in 1 2; do C=1; done\n")
    assert r.variables["A"] == "3"
    assert r.variables["B"] == Unknown("set only inside `if [ -n \"$X\" ]` at line 2")
    assert r.variables["C"] == Unknown("set only inside `for i in 1 2` at line 8")


def test_and_or_and_case_and_function():
    r = one("[ -z $X ] && A=1 || A=2\ncase $1 in\n  a) B=1 ;;\n  *) B=2 ;;\nesac\nf() { C=1; }\n")
    assert all(isinstance(r.variables[n], Unknown) for n in "AB")
    assert "C" not in r.variables  # f is never called
    assert one("f() { C=$1; }\nf 3\n").variables["C"] == "3"


def test_launchers():
    cases = {
        "torchrun --nproc_per_node=4 --nnodes $NN t.py --x 1": ("torchrun", {"nproc_per_node": "4",
                                                                 "nnodes": Unknown("environment variable NN")}),
        "python -m torch.distributed.run --nproc-per-node 2 t.py": ("python -m torch.distributed.run",
                                                                  {"nproc_per_node": "2"}),
        "deepspeed --num_gpus 8 --num_nodes 2 t.py --deepspeed_config ds.json": (
            "deepspeed", {"num_gpus": "8", "num_nodes": "2"}),
        "srun -N 2 --ntasks-per-node=8 python t.py": ("srun", {"N": "2", "ntasks-per-node": "8"}),
        "python -u t.py --x": ("python", {}),
    }
    for line, (launcher, options) in cases.items():
        launch = one(line + "\n").launches[0]
        assert (launch.launcher, launch.options, launch.script) == (launcher, options, "t.py"), line


def test_srun_wraps_torchrun_and_eval():
    launch = one("srun -N 4 torchrun --nproc_per_node 8 t.py --tp 2\n").launches[0]
    assert launch.launcher == "torchrun" and launch.via == (("srun", {"N": "4"}),)
    launch = one("CMD=\"torchrun --nnodes 1 t.py --tp 2\"\neval $CMD &> log\n").launches[0]
    assert (launch.launcher, launch.script, launch.args[0][:2]) == ("torchrun", "t.py", ("--tp", "2"))


def test_echo_is_not_a_launch():
    assert one("echo torchrun t.py\n").launches == []


def test_syntax_problems_are_reported():
    r = read_launch_script("A=1\nif true; then\nB=<x>\ntorchrun t.py --x 1\n", "t.sh")
    assert ("syntax error near unexpected end of line", 3, 6) in r.problems and r.variables["A"] == "1"
    assert read_launch_script("A='x\n", "t.sh").problems


def test_argument_file():
    args = read_argument_file("--num-layers 24 --fp16  # c\n--data-path 0.5 a 0.5 b\n--save ${CKPT}\n--lr=1e-4\n")
    assert [(a.flag, a.value, a.line, a.column) for a in args] == [
        ("--num-layers", "24", 1, 1), ("--fp16", None, 1, 17), ("--data-path", ("0.5", "a", "0.5", "b"), 2, 1),
        ("--save", Unknown("environment variable CKPT"), 3, 1), ("--lr", "1e-4", 4, 1)]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(list("ab=$(){}[]'\"\\#;&|<>\n -:+*@0x`!") + ["if ", "fi", "then", "do", "done",
                                                                           "<<EOF", "EOF"])).map("".join))
def test_random_text_never_raises(text):
    read_launch_script(text, "t.sh")
    read_argument_file(text, "t.args")


def test_a_long_script_of_defaults_and_arithmetic_is_read_through():
    # Its reading time is measured in bench/bench_shell.py (a wall-clock bound here would fail on a
    # loaded machine, not on a slow reader).
    text = "".join(f"A{i}=${{X{i}:-{i}}}\nB{i}=$((A{i} * 2))\n" for i in range(60))
    text += "ARGS=(\n" + "".join(f"  --flag-{i} $B{i}\n" for i in range(70)) + ")\ntorchrun t.py ${ARGS[@]}\n"
    r = one(text)
    assert r.variables["B59"] == "118" and r.variables["B0"] == "0"


# -- decided branches: case, if, [ ], [[ ]], test, && / || ---------------------------------------------
def test_case_on_a_known_word_runs_only_the_matching_branch():
    r = one('S="800M"\ncase "${S}" in\n  "8B"|"16B") T=4 ;;\n  8*M) T=1 ;;\n  *) echo bad; exit 1 ;;\nesac\n')
    assert r.variables["T"] == "1"
    script = 'case $S in\n  [0-9]B) T=a ;;\n  ?0B|x) T=b ;;\n  "*") T=c ;;\n  *) T=d ;;\nesac\n'
    assert one("S=7B\n" + script).variables["T"] == "a"
    assert one("S=70B\n" + script).variables["T"] == "b"
    assert one("S='*'\n" + script).variables["T"] == "c"  # a quoted * is the character itself
    assert one("S=x70B\n" + script).variables["T"] == "d"


def test_case_on_an_unknown_word_keeps_every_branch():
    r = one("case $1 in\n  a) T=1 ;;\n  *) T=2 ;;\nesac\ncase $1 in\n  a) U=1 ;;\nesac\n")
    assert r.variables["T"] == Unknown("set differently by the branches of `case $1 in` at line 1")
    assert r.variables["U"] == Unknown("set only inside `case $1 in` at line 5")


@pytest.mark.parametrize("test,expected", [
    ('[ "$A" = 8 ]', True), ('[ "$A" == 9 ]', False), ('[ "$A" != 8 ]', False), ("[ $A -eq 8 ]", True),
    ("[ $A -ne 8 ]", False), ("[ $A -lt 9 ]", True), ("[ $A -gt 9 ]", False), ("[ $A -le 8 ]", True),
    ("[ $A -ge 9 ]", False), ('[ -z "$A" ]', False), ('[ -n "$A" ]', True), ('[ -z "$E" ]', True),
    ("[ -n $E ]", True),  # `[ -n ]`: one word, which is not empty
    ("test $A = 8", True), ("[ ! $A = 8 ]", False), ("[ $A = 8 -a $B = xyz ]", True), ("[ $A = 1 -o $B = y ]", False),
    ("[[ $A == 8 ]]", True), ("[[ $B == x* ]]", True), ('[[ $B == "x*" ]]', False), ("[[ $E == '' ]]", True),
    ("[[ $A -eq 4+4 ]]", True), ("[[ $A = 8 && $B = xyz ]]", True), ("[[ $A = 1 || $B = y ]]", False),
    ("[[ -v A ]]", True), ("[[ ! -n $E ]]", True), ("(( A > 7 ))", True), ("(( A * 2 == 17 ))", False),
    ("[ $A = 8 ] && [ $B = x ]", False), ("[ $A = 1 ] || [ $B = xyz ]", True), ("! [ $A = 8 ]", False),
    ("true", True), ("false", False),
])
def test_tests_on_known_operands_are_decided(test, expected):
    r = one(f"A=8\nB=xyz\nE=\nif {test}; then\n  R=then\nelse\n  R=else\nfi\n")
    assert r.variables["R"] == ("then" if expected else "else")


@pytest.mark.parametrize("test", ['[ "$X" = 8 ]', "[ -f /etc/x ]", "[[ $X == a* ]]", "[ $A -eq $X ]", "[ -z $X ]",
                                  "[[ -v X ]]", "[[ $A =~ ^8 ]]", "(( X > 1 ))", "grep -q x f", "[ $(pwd) = / ]"])
def test_tests_on_unknown_operands_are_not_decided(test):
    r = one(f"A=8\nif {test}; then\n  R=then\nelse\n  R=else\nfi\n")
    assert isinstance(r.variables["R"], Unknown) and "set differently by the branches" in r.variables["R"].reason


def test_elif_chain_and_and_or_lists():
    r = one("A=2\nif [ $A = 1 ]; then R=a\nelif [ $A = 2 ]; then R=b\nelif [ $X = 3 ]; then R=c\nelse R=d\nfi\n")
    assert r.variables["R"] == "b"
    r = one("A=3\nif [ $A = 1 ]; then R=a\nelif [ $X = 3 ]; then R=c\nelif [ $A = 3 ]; then R=d\nelse R=e\nfi\n")
    assert isinstance(r.variables["R"], Unknown)  # c or d; e no more
    assert one("A=\n[ -z $A ] && A=1 || A=2\n").variables["A"] == "1"
    assert "B" not in one("A=x\n[ -z $A ] && B=1\n").variables


def test_exit_ends_a_branch():
    r = one('if [ -z "$X" ]; then\n  echo "X is needed"\n  exit 1\nfi\nA=1\n[ -d "$D" ] || exit 1\nB=2\n')
    assert (r.variables["A"], r.variables["B"]) == ("1", "2")
    r = one('if [ -n "$X" ]; then T=1\nelse echo no; exit 1\nfi\n')
    assert r.variables["T"] == "1"  # the other branch does not go on
    assert one("exit 0\nA=1\n").variables == {}


def test_functions_run_where_they_are_called():
    r = one("f() {\n  local B=$1\n  C=\"$B-$2\"\n}\nf x y\nf z\n")
    assert r.variables["C"] == "z-"
    r = one("build() { CMD=\"torchrun --nproc_per_node $N t.py\"; }\nN=4\nbuild\neval $CMD\n")
    assert r.launches[0].options == {"nproc_per_node": "4"}
    r = one("main() {\n  torchrun t.py --x 1\n}\n")  # never called: its launch is still found
    assert r.launches[0].script == "t.py" and "does not call" in r.launches[0].conditions[0]
    r = one("g() { return 0; A=1; }\ng\n")
    assert "A" not in r.variables
    assert len(one("f() { f; torchrun t.py; }\nf\n").launches) == 1  # recursion is read once


def test_arithmetic_forms():
    r = one("A=4\nB=$((A > 3 ? 10 : 20))\nC=$(( (A + 1) % 3 ))\nD=$((0x10 + 2#101 + 010))\nE=$((A && 0))\n"
            "F=$((1 << 4))\nG=$(( -7 / 2 ))\nH=$((X > 1 ? 1 : 0))\nI=$((A++))\n")
    assert [r.variables[k] for k in "BCDEFG"] == ["10", "2", "29", "0", "16", "-3"]
    assert r.variables["H"] == Unknown("`$((X > 1 ? 1 : 0))` with environment variable X")
    assert r.variables["I"] == Unknown("`$((A++))` (not evaluated)")
    assert one("A=126_953_125\nB=$((A*2))\n").variables["B"] == \
        Unknown("`$((A*2))` with A is not a number ('126_953_125')")  # bash rejects it too


def test_positional_defaults():
    r = one('A=${1:-"7"}\nB=${2:-x}\n')
    assert r.variables["A"] == Unknown("script argument $1 (default \"7\" when unset)")
    assert one("f() { A=${2:-d}; B=${#}; }\nf a\n").variables["A"] == "d"


# -- strings partly known; text read again (bash -c, eval) -------------------------------------------------
def test_a_partly_known_string_keeps_its_known_words():
    r = one('OPTS="--lr $LR --fp16 --save $(pwd)/ckpt"\ntorchrun t.py $OPTS\n')
    assert r.variables["OPTS"] == Unknown("environment variable LR")
    assert [(a.flag, a.value) for a in r.launches[0].args] == [
        ("--lr", Unknown("environment variable LR")), ("--fp16", None), ("--save", Unknown("output of `pwd`"))]
    assert r.launches[0].args[0][2:4] == (1, 7)


def test_bash_c_with_unknown_pieces_is_read_again():
    r = one('DIR=`pwd`\nrun="python -u ${DIR}/pretrain_gpt.py $@ --tp 2 --data <PATH TO DATA>"\n'
            'srun -N 2 --ntasks-per-node 8 sh -c "${run}"\n')
    launch = r.launches[0]
    assert (launch.launcher, launch.options) == ("srun", {"N": "2", "ntasks-per-node": "8"})
    assert launch.script == Unknown("output of `pwd`") and launch.script_name == "pretrain_gpt.py"
    assert [(a.flag, a.value) for a in launch.args] == [
        (None, Unknown("the script's arguments ($@)")), ("--tp", "2"), ("--data", "<PATH TO DATA>")]
    assert (launch.args[1].line, launch.args[1].column) == (2, 42)  # where the flag is written


def test_bash_c_sees_escaped_variables_at_its_own_run_time():
    r = one('export LAUNCHER="python -u -m torch.distributed.run --nproc_per_node 8 --nnodes $NN"\n'
            "CMD=\" train.py --pp 'a|b' --x $X\"\n"
            'srun --jobid $SLURM_JOB_ID bash -c "$LAUNCHER --node_rank \\$SLURM_PROCID $CMD" 2>&1 | tee log\n')
    launch = r.launches[0]
    assert launch.launcher == "python -m torch.distributed.run" and launch.script == "train.py"
    assert launch.options == {"nproc_per_node": "8", "nnodes": Unknown("environment variable NN"),
                              "node_rank": Unknown("environment variable SLURM_PROCID")}
    assert launch.via == (("srun", {"jobid": Unknown("environment variable SLURM_JOB_ID")}),)
    assert [(a.flag, a.value) for a in launch.args] == [("--pp", "a|b"), ("--x", Unknown("environment variable X"))]


def test_eval_reads_the_string_as_a_command_line_in_the_current_variables():
    r = one('run_cmd="deepspeed ../pretrain_gpt.py --tp 2\n --pp ${PP}\n &> ${LOG}.log"\neval ${run_cmd}\n')
    launch = r.launches[0]
    assert (launch.launcher, launch.script) == ("deepspeed", "../pretrain_gpt.py")
    assert [(a.flag, a.value) for a in launch.args] == [("--tp", "2"), ("--pp", Unknown("environment variable PP"))]
    r = one("full='cd /w; A=3; torchrun t.py --x $A'\neval \"$full\"\nB=$A\n")
    assert r.launches[0].args[0][:2] == ("--x", "3") and r.variables["B"] == "3"  # eval runs here
    r = one("bash -c 'C=1'\nD=$C\n")
    assert r.variables["D"] == Unknown("environment variable C")  # bash -c runs in a child


def test_a_hole_with_known_branch_texts_is_tried_as_the_program_or_the_entry_script():
    r = one('if [ "$1" = "convert" ]; then\n  task="deepspeed tools/convert.py --to hf"\nelse\n'
            '  task="deepspeed finetune_llama.py --load ckpt"\nfi\nfull="$task --tp 2"\neval "$full"\n')
    found = {(x.script, tuple((a.flag, a.value) for a in x.args), x.conditions) for x in r.launches}
    assert found == {
        ("tools/convert.py", (("--to", "hf"), ("--tp", "2")), ('`if [ "$1" = "convert" ]` at line 1: then',)),
        ("finetune_llama.py", (("--load", "ckpt"), ("--tp", "2")), ('`if [ "$1" = "convert" ]` at line 1: else',))}
    r = one('if [ "$P" = 1 ]; then\n  PROF="nsys profile -o x"\nelse\n  PROF=""\nfi\n$PROF python t.py --a 1\n')
    assert [(x.launcher, x.script, x.conditions) for x in r.launches] == [("python", "t.py", ())]  # both give it


def test_unknown_program_before_an_entry_script():
    launch = one("$LAUNCH pretrain_gpt.py --tp 2\n").launches[0]
    assert (launch.launcher, launch.options, launch.script) == (
        "?", {"?": [Unknown("environment variable LAUNCH")]}, "pretrain_gpt.py")
    launch = one("$PROFILER python t.py\n").launches[0]
    assert (launch.launcher, launch.via) == ("python", (("?", {"?": [Unknown("environment variable PROFILER")]}),))
    launch = one("source <(curl -s u)\nlaunch python3 t.py --x 1\n").launches[0]
    assert (launch.launcher, launch.via) == ("python", (("launch", {}),))  # a function from an unread file
    assert one("echo python t.py\n").launches == []


# -- sbatch --------------------------------------------------------------------------------------------------
def test_sbatch_heredoc_is_the_job_script():
    r = one('ARGS="--tp 2"\nsbatch <<EOF\n#!/bin/bash\n#SBATCH --nodes=4\n#SBATCH -n 32   # tasks\n'
            '#SBATCH --gpus-per-node 8\nsrun python pretrain_gpt.py $ARGS --log \\${SLURM_JOB_ID}.log\nEOF\n')
    launch = r.launches[0]
    assert (launch.launcher, launch.script) == ("srun", "pretrain_gpt.py")
    assert launch.options == {"nodes": "4", "ntasks": "32", "gpus-per-node": "8"}
    assert [(a.flag, a.value) for a in launch.args] == [
        ("--tp", "2"), ("--log", Unknown("environment variable SLURM_JOB_ID"))]
    assert launch.line == 7
    r = one("sbatch -N 2 <<'EOF'\n#SBATCH --nodes=8\n#SBATCH --ntasks-per-node=your_own_tasks\nsrun -n 4 python t.py $X\nEOF\n")
    launch = r.launches[0]
    assert launch.options == {"n": "4", "nodes": "2", "ntasks-per-node": "your_own_tasks"}  # the command line wins
    assert launch.args == [Arg(None, Unknown("environment variable X"), 4, 23, "$X")]


def test_sbatch_header_of_the_script_itself():
    r = one("#!/bin/bash\n#SBATCH --job-name=x\n#SBATCH -N 16\n#SBATCH --ntasks-per-node=1\n\nNN=$SLURM_NNODES\n"
            "srun bash -c \"torchrun --nnodes $NN --nproc_per_node 8 t.py\"\nsrun -N 1 python t.py\n"
            "#SBATCH --nodes=99\n")
    first, second = r.launches
    assert (first.launcher, first.options["nnodes"]) == ("torchrun", "16")  # SLURM_NNODES from the header
    assert first.via == (("srun", {"nodes": "16", "ntasks-per-node": "1"}),)
    assert second.options == {"N": "1", "ntasks-per-node": "1"}  # its own count, the others inherited


# -- arguments: flags, values, unknown splices ----------------------------------------------------------------
def test_unknown_splice_in_the_launcher_options_is_kept_under_question_mark():
    launch = one("torchrun $DISTRIBUTED_ARGS --nnodes=$NN x.py --a 1\n").launches[0]
    assert launch.options == {"?": [Unknown("environment variable DISTRIBUTED_ARGS")],
                              "nnodes": Unknown("environment variable NN")}
    assert launch.script == "x.py"


def test_unknown_splice_after_a_flag_value_is_an_argument_of_its_own():
    args = one("EXTRA=($(cat extra))\ntorchrun t.py --lr 1e-4 ${EXTRA[@]} --data ${DATA[@]} $MORE --fp16\n"
               ).launches[0].args
    assert [(a.flag, a.value) for a in args] == [
        ("--lr", "1e-4"), (None, Unknown("output of `cat extra`")),
        ("--data", (Unknown("environment variable DATA"))), (None, Unknown("environment variable MORE")),
        ("--fp16", None)]
    args = one('torchrun t.py --lr=$LR --${DTYPE} --a "$B" --c "x $Y"\n').launches[0].args
    assert [(a.flag, a.value) for a in args] == [
        ("--lr", Unknown("environment variable LR")), (None, Unknown("environment variable DTYPE")),
        ("--a", Unknown("environment variable B")), ("--c", Unknown("environment variable Y"))]


def test_array_items_added_in_an_undecided_branch():
    r = one('A=(--x 1 --flag)\nif [ "$W" = 1 ]; then\n  A=("${A[@]}" --wandb w)\nfi\ntorchrun t.py ${A[@]} --y 2\n'
            'N=${#A[@]}\n')
    args = r.launches[0].args
    tail = Unknown('set before and changed inside `if [ "$W" = 1 ]` at line 2')
    assert [(a.flag, a.value) for a in args] == [("--x", "1"), ("--flag", None), (None, tail), ("--y", "2")]
    assert r.variables["A"] == ["--x", "1", "--flag", tail]
    assert isinstance(r.variables["N"], Unknown)


# -- the corpus scripts that needed case, bash -c, eval and sbatch ---------------------------------------------
# script, launcher, entry script's name, {flag: value}, {flag: what the Unknown's reason names}, {option: value}
NAMED = [
    ("NVIDIA__Megatron-LM__examples__mamba__train.sh", "torchrun", "pretrain_hybrid.py",
     {"--tensor-model-parallel-size": "1", "--hidden-size": "1024", "--global-batch-size": "32",
      "--hybrid-layer-pattern": "M-M-M--M-*M-M-M-M--*M-M-M-M-*M--M-M-M-*M-M--M-M-",
      "--spec": ("megatron.core.models.hybrid.hybrid_layer_specs", "hybrid_stack_spec")},
     {"--data-path": "script argument $1", "--tokenizer-model": "script argument $2"}, {"nproc_per_node": "8"}),
    ("NVIDIA__Megatron-LM__examples__pretrain_gpt3_175B.sh", "srun", "pretrain_gpt.py",
     {"--tensor-model-parallel-size": "8", "--pipeline-model-parallel-size": "16", "--global-batch-size": "1536",
      "--rampup-batch-size": ("16", "16", "5859375"), "--vocab-file": "<PATH TO gpt-vocab.json>"},
     {}, {"nodes": "128", "ntasks-per-node": "8"}),
    ("bigcode-project__Megatron-LM__examples__pretrain_bigcode_model.slurm", "python -m torch.distributed.run",
     "pretrain_gpt.py",
     {"--tensor-model-parallel-size": "4", "--pipeline-model-parallel-size": "4", "--micro-batch-size": "1",
      "--global-batch-size": "512", "--attention-head-type": "multiquery"},
     {}, {"nproc_per_node": "8", "nnodes": "64", "node_rank": "SLURM_PROCID", "rdzv_endpoint": "scontrol"}),
    ("bigscience-workshop__bigscience__train__tr11-176B-ml__tr11-176B-ml.slurm", "python -m torch.distributed.run",
     "pretrain_gpt.py",
     {"--tensor-model-parallel-size": "4", "--pipeline-model-parallel-size": "12", "--micro-batch-size": "2",
      "--global-batch-size": "2048", "--pp-partition-method": "type:transformer|embedding",
      "--deepspeed_config": None},
     {"--save": "six_ALL_CCFRSCRATCH"}, {"nproc_per_node": "8", "nnodes": "24", "node_rank": "SLURM_PROCID"}),
    ("alibaba__Pai-Megatron-Patch__examples__qwen3__run_mcore_qwen3.sh", "torchrun", "pretrain_qwen.py",
     {"--patch-tokenizer-type": "Qwen3Tokenizer", "--kv-channels": "128", "--swiglu": None},
     {"--tensor-model-parallel-size": "script argument $10", "--lr": "script argument $5",
      "--num-layers": "MODEL_SIZE"},
     {"nproc_per_node": "ENV", "nnodes": "ENV"}),
    ("deepspeedai__Megatron-DeepSpeed__examples_deepspeed__MoE__ds_pretrain_gpt_1.3B_MoE128.sh", "deepspeed",
     "pretrain_gpt.py",
     {"--num-experts": "128", "--moe-expert-parallel-size": "64", "--micro-batch-size": "8",
      "--global-batch-size": "512", "--num-layers": "24"},
     {"--load": "pwd"}, {}),
    ("bigscience-workshop__Megatron-DeepSpeed__examples__curriculum_learning__pretrain_gpt_cl.sh", "deepspeed",
     "pretrain_gpt.py",
     {"--micro-batch-size": "1", "--global-batch-size": "512", "--train-samples": "146_484_375"},
     {"--lr-decay-tokens": "LR_DECAY_SAMPLES is not a number"}, {}),
    ("argonne-lcf__Megatron-DeepSpeed__ALCF__examples__finetune_llama3__finetune_llama.sh", "python",
     "finetune_llama.py",
     {"--seq-length": "2048", "--load": None, "--tensor-model-parallel-size": "1", "--lr": "2e-5"},  # defaults
     {"--num-layers": "num_hidden_layers", "--deepspeed_config": 'if [ "$1" = "convert_hf2mds" ]'}, {}),
    ("deepspeedai__Megatron-DeepSpeed__examples_deepspeed__finetune_hf_llama__finetune_llama.sh", "deepspeed",
     "finetune_llama.py",
     {"--tensor-model-parallel-size": "2", "--pipeline-model-parallel-size": "2", "--micro-batch-size": "16",
      "--global-batch-size": "256", "--load": "./llama-7b-mega-ds-T2P2"},
     {"--deepspeed_config": 'if [ "$1" = "convert_hf2mds" ]'}, {}),  # another `if` on $1: not correlated
    ("NVIDIA__Megatron-LM__tests__functional_tests__test_scripts__gpt3__pretrain_gpt3_distributed_test.sh", "?",
     "pretrain_gpt.py",
     {"--num-layers": "12", "--hidden-size": "512", "--seq-length": "1024", "--split": "949,50,1"},
     {"--tensor-model-parallel-size": "TP_SIZE", "--pipeline-model-parallel-size": "PP_SIZE",
      "--data-path": "DATA_PATH"}, {"?": "RUN_CMD"}),
    ("NVIDIA__Megatron-LM__examples__megatron_fsdp__sbatch_mfsdp_deepseek_v3.sh", "srun", "pretrain_gpt.py",
     {"--num-layers": "61", "--recompute-modules": ("mlp", "moe", "mla_up_proj", "layernorm"),
      "--moe-layer-freq": "[0]*3+[1]*58", "--tensor-model-parallel-size": "1",  # the script's defaults
      "--data-path": "your_own_data_path"},
     {},
     {"nodes": "your_own_num_nodes", "ntasks-per-node": "your_own_tasks_per_node", "mpi": "pmix"}),
]


@pytest.mark.parametrize("name,launcher,entry,flags,unknown,options", NAMED, ids=[n[0][:60] for n in NAMED])
def test_corpus_script_yields_its_megatron_launch(name, launcher, entry, flags, unknown, options):
    path = CORPUS / "megatron-scripts" / name
    _need_corpus([path] if path.exists() else [])
    launches = [x for x in read_launch_script(path.read_text(), str(path)).launches if x.script_name == entry]
    assert launches, f"no launch of {entry}"
    launch = launches[-1] if len(launches) == 1 else next(x for x in launches if not x.conditions or
                                                          x.conditions[-1].endswith("else"))
    assert launch.launcher == launcher
    assert isinstance(launch.script, Unknown) or launch.script.endswith(entry)
    given = {}
    for arg in launch.args:
        if arg.flag is not None:
            given.setdefault(arg.flag, arg.value)
    for flag, value in flags.items():
        assert flag in given, flag
        if value is not None:
            assert given[flag] == value, flag
    for flag, reason in unknown.items():
        assert isinstance(given[flag], Unknown) and reason in given[flag].reason, (flag, given[flag])
    for option, value in options.items():
        got = launch.options[option]
        if option == "?":
            got = got[0]
        if isinstance(got, Unknown):
            assert value in got.reason, (option, got)
        else:
            assert got == value, option


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([
    "A=1\n", "A=x$A\n", "B=(--a 1 $A)\n", "if [ $A = 1 ]; then\n", "if [[ $X == a* ]]; then\n", "elif [ -z $A ]; then\n",
    "else\n", "fi\n", "case $A in\n", "1|x*) C=2 ;;\n", "*) exit 1 ;;\n", "esac\n", "eval $R\n", 'eval "$R"\n',
    'R="torchrun t.py --x $A"\n', "R='bash -c \"$R\"'\n", 'bash -c "$R"\n', "sbatch <<EOF\n", "#SBATCH -N 2\n",
    "srun python t.py ${B[@]}\n", "EOF\n", "f() { A=$1; }\n", "f 3\n", "return\n", "$((A+1))\n", "${A:-$R}\n",
    "\x011\x02\n", "\x01\n", "while [ $A ]; do\n", "done\n", "for i in 1 2; do\n", "} \n", "{\n", "(\n", ")\n", "&& ", "|| "]))
       .map("".join))
def test_random_scripts_never_raise(text):
    read_launch_script(text, "t.sh")


def test_reading_imports_no_parser_library():
    code = ("import sys\nfrom shardshift.formats.megatron.shell import read_launch_script\n"
            "read_launch_script('A=1\\nif [ $A = 1 ]; then eval \"torchrun t.py\"; fi\\n', 't.sh')\n"
            "print(sorted(m for m in ('lark', 'regex', 'logging', 'pickle') if m in sys.modules))")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert "lark" not in out.stdout and "regex" not in out.stdout, out.stdout
