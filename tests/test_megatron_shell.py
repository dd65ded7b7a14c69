"""Launch scripts and argument files read without running them (formats/megatron/shell.py)."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardshift.formats.megatron.shell import read_argument_file, read_launch_script
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
    assert launch.options["master_addr"] == Unknown("environment variable MASTER_ADDR (default localhost when unset)")


# -- constructs, one at a time -------------------------------------------------------------------------
def one(text: str):
    result = read_launch_script(text, "t.sh")
    assert result.problems == [], result.problems
    return result


def test_comments_and_assignments():
    r = one("# c\nX=8  # trailing\nexport Y=$X\nZ=${W:-4}\n")
    assert r.variables["X"] == "8" and r.variables["Y"] == "8"
    assert r.variables["Z"] == Unknown("environment variable W (default 4 when unset)")


def test_default_when_set_before():
    assert one("W=2\nZ=${W:-4}\n").variables["Z"] == "2"


def test_assign_default_expansion():
    r = one(": ${TP:=8}\nA=$TP\n")
    assert r.variables["TP"] == Unknown("environment variable TP (default 8 when unset)") == r.variables["A"]
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


def test_reading_is_fast():
    import time

    text = "".join(f"A{i}=${{X{i}:-{i}}}\nB{i}=$((A{i} * 2))\n" for i in range(60))
    text += "ARGS=(\n" + "".join(f"  --flag-{i} $B{i}\n" for i in range(70)) + ")\ntorchrun t.py ${ARGS[@]}\n"
    start = time.perf_counter()
    read_launch_script(text, "t.sh")
    assert time.perf_counter() - start < 0.5
