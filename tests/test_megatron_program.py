"""The program that receives a launch's Megatron flags (formats/megatron/program.py): its entry
script, a vendored Megatron fork's arguments module and its extra_args_provider decide which flags
exist; a program not in the checked tree makes the flag findings infos with the unknown program."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from shardshift.formats.megatron import program, reader

from conftest import run_cli

ROOT = Path(__file__).resolve().parent.parent
CONTEXT = ROOT / "fixtures" / "megatron" / "context"


def run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return run_cli("check", *args, cwd=cwd)


def findings(path: Path) -> list[dict]:
    result = run("--format", "json", "--min-severity", "info", str(path))
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)["findings"]


def read(path: Path):
    return reader.read(path.read_text(encoding="utf-8"), str(path)).data


def test_a_vendored_fork_replaces_upstreams_table():
    arguments = read(CONTEXT / "fork" / "examples" / "good.sh")
    found = arguments.program
    assert found.fork is not None and found.fork.endswith(os.path.join("megatron", "arguments.py"))
    assert found.unknown is None and not found.upstream
    assert found.table.get("--use-fork-gate") is not None
    assert found.table.get("--mock-data") is None  # upstream has it, the fork does not
    assert found.table.get("--normalization").choices == ["LayerNorm", "RMSNorm"]
    assert all(item.flag is not None for item in arguments.given)


def test_fork_flags_are_clean_and_upstream_deprecations_do_not_apply():
    assert findings(CONTEXT / "fork" / "examples" / "good.sh") == []


def test_fork_choices_and_unknown_flags_are_errors():
    found = {(f["code"], f["pointer"]): f for f in findings(CONTEXT / "fork" / "examples" / "bad.sh")}
    choice = found[("MG004", "--normalization")]
    assert choice["severity"] == "error"
    assert "invalid choice: 'rmsnorm' (choose from 'LayerNorm', 'RMSNorm')" in choice["message"]
    assert "pretrain_fork.py's parser (megatron/arguments.py of the repository)" in choice["message"]
    unknown = found[("MG001", "--mock-data")]
    assert unknown["severity"] == "error" and "unknown_context" not in unknown


def test_provider_flags_are_read_through_imports_and_partial():
    arguments = read(CONTEXT / "provider" / "examples" / "good.sh")
    found = arguments.program
    assert found.unknown is None and found.fork is None
    assert found.provider == "partial(extra_args)"
    for spelling in ("--custom-window", "--custom-gate", "--custom-mixing", "--num-layers"):
        assert found.table.get(spelling) is not None, spelling
    assert findings(CONTEXT / "provider" / "examples" / "good.sh") == []


def test_a_flag_neither_defines_is_an_error():
    found = findings(CONTEXT / "provider" / "examples" / "bad.sh")
    by = {(f["code"], f["pointer"]): f for f in found}
    assert by[("MG001", "--custom-windows")]["severity"] == "error"
    assert by[("MG001", "--custom-windows")]["fix"] == "--custom-window"
    assert by[("MG004", "--custom-mixing")]["severity"] == "error"
    assert "choose from 'mean', 'sum'" in by[("MG004", "--custom-mixing")]["message"]


def test_entry_script_not_in_the_tree_is_an_info_with_the_unknown_program_in_json():
    result = run("--format", "json", "--min-severity", "info", str(CONTEXT / "missing" / "launch.sh"))
    output = json.loads(result.stdout)
    [finding] = [f for f in output["findings"] if f["code"] == "MG001"]
    assert finding["severity"] == "info" and finding["pointer"] == "--custom-thing"
    context = finding["unknown_context"]
    assert context["kind"] == "program"
    assert "train_missing.py is not in the checked tree" in context["what"]
    assert "train_missing.py" in context["how"]
    assert output["summary"]["unknown_context"] == 1
    assert result.returncode == 0  # an info does not fail the check


def test_entry_script_not_in_the_tree_in_text_output():
    result = run("--min-severity", "info", str(CONTEXT / "missing" / "launch.sh"))
    assert "MG001 info: --custom-thing" in result.stdout
    assert "    unknown program: train_missing.py is not in the checked tree" in result.stdout


def test_a_provider_from_outside_the_repository_makes_the_program_unknown(tmp_path):
    (tmp_path / "train_ext.py").write_text(
        "from megatron.training import pretrain\nfrom other_pkg.args import add_args\n"
        "pretrain(None, None, None, None, extra_args_provider=add_args)\n", encoding="utf-8")
    script = tmp_path / "run.sh"
    script.write_text("torchrun --nproc_per_node 8 train_ext.py --num-layers 4 --micro-batch-size 2 --ext-flag 1\n",
                      encoding="utf-8")
    found = program.find(str(script), reader.read(script.read_text(), "<string>").data.launch, "megatron-lm", False)
    assert found.unknown is not None and "other_pkg.args" in found.unknown.what
    [finding] = [f for f in findings(script) if f["code"] == "MG001"]
    assert finding["severity"] == "info" and finding["unknown_context"]["kind"] == "program"


def test_an_upstream_entry_name_not_in_the_tree_is_an_unknown_program(tmp_path):
    # a name is not evidence (issue 30): pretrain_gpt.py may be a fork's, so upstream's verdict is an info
    script = tmp_path / "run.sh"
    script.write_text("torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 4 --micro-batch-size 2 "
                      "--tensor_model_parallel_size 2\n", encoding="utf-8")
    [finding] = [f for f in findings(script) if f["code"] == "MG001"]
    assert finding["severity"] == "info" and finding["unknown_context"]["kind"] == "program"
    assert "pretrain_gpt.py is not in the checked tree" in finding["unknown_context"]["what"]


def test_the_entry_present_in_the_tree_keeps_upstreams_verdict_with_its_evidence(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 4 --micro-batch-size 2 "
                      "--tensor_model_parallel_size 2\n", encoding="utf-8")
    (tmp_path / "pretrain_gpt.py").write_text("from megatron.training import pretrain\npretrain(None, None)\n",
                                             encoding="utf-8")
    [finding] = [f for f in findings(script) if f["code"] == "MG001"]
    assert finding["severity"] == "error" and "unknown_context" not in finding
    [program] = [p for p in finding["evidence"] if p["premise"] == "program"]
    assert program["state"] == "established" and program["file"].endswith("pretrain_gpt.py")


def test_an_entry_in_a_submodule_that_is_not_checked_out_names_the_submodule(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitmodules").write_text('[submodule "Megatron-LM"]\n\tpath = third_party/Megatron-LM\n'
                                          "\turl = https://github.com/someone/Megatron-LM.git\n", encoding="utf-8")
    script = tmp_path / "run.sh"
    script.write_text("torchrun --nproc_per_node 8 third_party/Megatron-LM/pretrain_gpt.py --num-layers 4 "
                      "--tensor_model_parallel_size 2\n", encoding="utf-8")
    [finding] = [f for f in findings(script) if f["code"] == "MG001"]
    assert finding["severity"] == "info"
    assert "git submodule third_party/Megatron-LM (.gitmodules:2" in finding["unknown_context"]["what"]


def test_a_provider_given_to_parse_and_validate_args_is_read(tmp_path):
    (tmp_path / "pretrain_vlm.py").write_text(
        "from megatron.training import pretrain\nfrom megatron.training.arguments import parse_and_validate_args\n"
        "def add_extra(parser):\n    group = parser.add_argument_group('vlm')\n"
        "    group.add_argument('--vision-model-type', type=str)\n    return parser\n"
        "args = parse_and_validate_args(extra_args_provider=add_extra)\n", encoding="utf-8")
    script = tmp_path / "run.sh"
    script.write_text("torchrun --nproc_per_node 8 pretrain_vlm.py --num-layers 4 --vision-model-type clip\n",
                      encoding="utf-8")
    assert [f for f in findings(script) if f["code"] == "MG001"] == []


@pytest.mark.parametrize("source", [
    "def extra(parser):\n    parser.add_argument(**KW)\n    return parser\n",
    "def extra(parser):\n    helper(parser)\n    return parser\n",
])
def test_a_provider_read_only_in_part_makes_the_program_unknown(tmp_path, source):
    (tmp_path / "train_part.py").write_text(
        source + "from megatron.training import pretrain\npretrain(None, None, extra_args_provider=extra)\n",
        encoding="utf-8")
    script = tmp_path / "run.sh"
    script.write_text("torchrun --nproc_per_node 8 train_part.py --num-layers 4 --zzz 1\n", encoding="utf-8")
    launch = reader.read(script.read_text(), str(script)).data.launch
    found = program.find(str(script), launch, "megatron-lm", False)
    assert found.unknown is not None and "could not be read" in found.unknown.what


def test_each_module_is_parsed_once_per_run():
    program._module.cache_clear()
    for _ in range(3):
        read(CONTEXT / "fork" / "examples" / "good.sh")
    info = program._module.cache_info()
    assert info.misses == info.currsize  # every later read of a module was a cache hit
    assert info.hits > 0


WILD = ROOT.parent / "shared" / "corpus" / "wild"


@pytest.mark.skipif(not (WILD / "IEIT-Yuan__Yuan-2.0").is_dir(), reason="the wild corpus is not here")
def test_wild_fork_flags_are_all_known():
    """Yuan-2.0 vendors its Megatron (megatron/arguments.py): every flag of its launches is the fork's."""
    for name in ("pretrain_yuan2.0_51B.sh", "pretrain_yuan2.0_2.1B_sft.sh"):
        result = run("--format", "json", "--min-severity", "info", f"IEIT-Yuan__Yuan-2.0/examples/{name}", cwd=WILD)
        codes = [f["code"] for f in json.loads(result.stdout)["findings"]]
        assert not [c for c in codes if c in ("MG001", "MG003", "MG004")], codes


@pytest.mark.skipif(not (WILD / "LumiOpen__Megatron-DeepSpeed").is_dir(), reason="the wild corpus is not here")
def test_wild_container_launch_is_an_unknown_program():
    """`srun singularity exec ... ./launch.sh $CMD`: the program inside the container is not known."""
    result = run("--format", "json", "--min-severity", "info", "LumiOpen__Megatron-DeepSpeed/pretrain_viking_13B.sh",
                 cwd=WILD)
    found = [f for f in json.loads(result.stdout)["findings"] if f["code"].startswith("MG00")]
    assert found and all(f["severity"] == "info" and f["unknown_context"]["kind"] == "program" for f in found)


def test_upstream_validate_args_checks_on_a_fork_are_infos(tmp_path):
    """The fork's own validate_args is not read: Megatron-LM's checks (PL101 here) say so."""
    (tmp_path / "megatron").mkdir()
    (tmp_path / "megatron" / "arguments.py").write_text(
        (CONTEXT / "fork" / "megatron" / "arguments.py").read_text(encoding="utf-8")
        .replace('group.add_argument("--bf16", action="store_true")',
                 'group.add_argument("--bf16", action="store_true")\n'
                 '    group.add_argument("--tensor-model-parallel-size", type=int, default=1)'), encoding="utf-8")
    (tmp_path / "pretrain_fork.py").write_text((CONTEXT / "fork" / "pretrain_fork.py").read_text(encoding="utf-8"),
                                                encoding="utf-8")
    script = tmp_path / "run.sh"
    script.write_text("torchrun --nproc_per_node 8 pretrain_fork.py --num-layers 4 --hidden-size 256 "
                      "--num-attention-heads 8 --micro-batch-size 2 --tensor-model-parallel-size 3\n", encoding="utf-8")
    found = [f for f in findings(script) if f["code"] == "PL101"]
    assert found and found[0]["severity"] == "info"
    assert "vendored Megatron (megatron/arguments.py)" in found[0]["unknown_context"]["what"]


def test_arithmetic_for_loop_with_do_on_the_next_line_parses():
    """`for ((i = 0; i < n; i++))` then `do` on its own line (lzzmm/reft_ds) is bash, not a parse error."""
    from shardshift.formats.megatron import shell

    text = ("for (( node = 0; node <= num_node-1; node++ ))\ndo\n    echo $node\ndone\n"
            "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 4 --micro-batch-size 2\n")
    script = shell.read_launch_script(text, "run.sh")
    assert script.problems == [] and len(script.launches) == 1


def _entry_tree(tmp_path: Path, entry_source: str, launch: str) -> Path:
    (tmp_path / "train_x.py").write_text(entry_source, encoding="utf-8")
    script = tmp_path / "run.sh"
    script.write_text(launch, encoding="utf-8")
    return script


def test_a_lambda_provider_is_followed(tmp_path):
    script = _entry_tree(tmp_path, (
        "from megatron.training import pretrain\n"
        "def add(parser):\n    parser.add_argument('--lam-flag', type=int)\n    return parser\n"
        "pretrain(None, None, extra_args_provider=lambda p: add(p))\n"),
        "torchrun --nproc_per_node 8 train_x.py --num-layers 4 --micro-batch-size 2 --lam-flag 3 --lam-flags 3\n")
    by = {f["pointer"]: f for f in findings(script) if f["code"] == "MG001"}
    assert list(by) == ["--lam-flags"] and by["--lam-flags"]["severity"] == "error"


def test_pythonpath_without_a_vendored_megatron_is_an_unknown_program(tmp_path):
    script = _entry_tree(tmp_path, "from megatron.training import pretrain\npretrain(None, None)\n",
                         "export PYTHONPATH=/opt/Megatron-LM\n"
                         "torchrun --nproc_per_node 8 train_x.py --num-layers 4 --micro-batch-size 2 --zz 1\n")
    [finding] = [f for f in findings(script) if f["code"] == "MG001"]
    assert finding["severity"] == "info" and "PYTHONPATH" in finding["unknown_context"]["what"]


def test_a_fork_whose_validate_args_still_tests_the_world_keeps_the_error(tmp_path):
    """The fork's validate_args is read for the divisibility test: where it is still there (after
    whatever the fork clamps), PL101 stands, pointing at the fork's own line."""
    (tmp_path / "megatron").mkdir()
    arguments = (CONTEXT / "fork" / "megatron" / "arguments.py").read_text(encoding="utf-8").replace(
        'group.add_argument("--bf16", action="store_true")',
        'group.add_argument("--bf16", action="store_true")\n'
        '    group.add_argument("--tensor-model-parallel-size", type=int, default=1)')
    clamped = arguments + ("\n\ndef validate_args(args, defaults={}):\n"
                           "    args.tensor_model_parallel_size = min(args.tensor_model_parallel_size, 2)\n"
                           "    assert args.world_size % args.tensor_model_parallel_size == 0, 'world size'\n"
                           "    return args\n")
    arguments += ("\n\ndef validate_args(args, defaults={}):\n"
                  "    assert args.world_size % args.tensor_model_parallel_size == 0, 'world size'\n"
                  "    return args\n")
    (tmp_path / "megatron" / "arguments.py").write_text(arguments, encoding="utf-8")
    (tmp_path / "pretrain_fork.py").write_text((CONTEXT / "fork" / "pretrain_fork.py").read_text(encoding="utf-8"),
                                                encoding="utf-8")
    script = tmp_path / "run.sh"
    script.write_text("torchrun --nproc_per_node 8 pretrain_fork.py --num-layers 4 --hidden-size 256 "
                      "--num-attention-heads 8 --micro-batch-size 2 --tensor-model-parallel-size 3\n", encoding="utf-8")
    [found] = [f for f in findings(script) if f["code"] == "PL101"]
    assert found["severity"] == "error" and found.get("unknown_context") is None
    line = arguments.splitlines().index("    assert args.world_size % args.tensor_model_parallel_size == 0, 'world size'")
    assert any(r["file"].endswith("arguments.py") and r["line"] == line + 1 for r in found["related"])
    # a fork that sets the degrees anew first (clamps them) passes this test, failing if at all elsewhere
    (tmp_path / "megatron" / "arguments.py").write_text(clamped, encoding="utf-8")
    [found] = [f for f in findings(script) if f["code"] == "PL101"]
    assert found["severity"] == "info" and "vendored Megatron" in found["unknown_context"]["what"]


def test_close_to_answers_by_the_parsers_flags_not_by_the_table_object():
    """The "did you mean" of an unknown flag is remembered per parser's flags (a tree's entries
    share a few parsers in tables of their own), so two tables with other flags never share it."""
    from shardshift.formats.megatron.flags import FlagTable, table

    model = next(f for f in table().flags if f.spellings == ["--hidden-size"])

    def flag(spelling: str) -> dict:
        entry = {s: getattr(model, s) for s in model.__slots__}
        return {**entry, "spellings": [spelling], "dest": spelling[2:].replace("-", "_")}

    first = FlagTable({"flags": [flag("--hidden-size"), flag("--num-layers")]})
    same = FlagTable({"flags": [flag("--hidden-size"), flag("--num-layers")]})
    other = FlagTable({"flags": [flag("--hidden-dropout"), flag("--num-layers")]})
    assert first.close_to("--hiden-size") == "--hidden-size"
    assert same.close_to("--hiden-size") == "--hidden-size"
    assert other.close_to("--hiden-size") is None
    assert other.close_to("--hidden-dropot") == "--hidden-dropout"


@pytest.mark.parametrize("call", ["factory.build_group(parser, title='model')",
                                  "other_module.add_model_args(parser)",
                                  "factory.build_group(parser=parser)"])
def test_a_fork_parser_that_hands_the_parser_to_a_call_it_does_not_follow_is_partly_unknown(tmp_path, call):
    """A vendored parse_args that adds flags through a method or another module's function (Megatron-LM's own
    ArgumentGroupFactory adds a config dataclass's fields as flags so) is read only in part: a flag it does not
    find is an info naming the unread call, not an unknown-flag error."""
    fork = tmp_path / "megatron"
    fork.mkdir()
    (fork / "__init__.py").write_text("", encoding="utf-8")
    source = (CONTEXT / "fork" / "megatron" / "arguments.py").read_text(encoding="utf-8")
    (fork / "arguments.py").write_text(source.replace(
        "    parser = _add_training_args(parser)\n",
        f"    parser = _add_training_args(parser)\n    {call}\n"), encoding="utf-8")
    (tmp_path / "pretrain_fork.py").write_text((CONTEXT / "fork" / "pretrain_fork.py").read_text(), encoding="utf-8")
    script = tmp_path / "run.sh"
    script.write_text("torchrun --nproc_per_node 8 pretrain_fork.py --num-layers 4 --use-fork-gate "
                      "--model-dim-from-dataclass 64\n", encoding="utf-8")
    launch = reader.read(script.read_text(), str(script)).data.launch
    found = program.find(str(script), launch, "megatron-lm", False)
    assert found.fork is not None and found.unknown is not None
    assert "does not follow it" in found.unknown.what
    unknown = [f for f in findings(script) if f["code"] == "MG001"]
    assert [f["severity"] for f in unknown] == ["info"] and unknown[0]["unknown_context"]


def test_a_flag_left_out_of_a_parser_read_in_part_has_no_default_to_judge(tmp_path):
    """The unread call may add --train-iters with a default of its own: MG217 (no training length) cannot say that
    the launch gives none. With the flag in the part that was read, its absence is judged as before."""
    fork = tmp_path / "megatron"
    fork.mkdir()
    (fork / "__init__.py").write_text("", encoding="utf-8")
    iters = '    group.add_argument("--train-iters", type=int, default=None)\n'
    source = (CONTEXT / "fork" / "megatron" / "arguments.py").read_text(encoding="utf-8").replace(
        iters, iters + '    group.add_argument("--train-samples", type=int, default=None)\n'
        '    group.add_argument("--skip-train", action="store_true")\n')
    # a vendored Megatron-LM's own entry (MG217 judges Megatron-LM's pretrain_*.py scripts)
    (tmp_path / "pretrain_gpt.py").write_text((CONTEXT / "fork" / "pretrain_fork.py").read_text(), encoding="utf-8")
    script = tmp_path / "run.sh"
    script.write_text("torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 4 --hidden-size 64 "
                      "--num-attention-heads 4 --max-position-embeddings 128 --seq-length 128 --micro-batch-size 1 "
                      "--lr 1e-4\n", encoding="utf-8")
    factory = "    parser = _add_training_args(parser)\n    factory.build_group(parser, title='training')\n"
    (fork / "arguments.py").write_text(source.replace("    parser = _add_training_args(parser)\n", factory),
                                       encoding="utf-8")
    assert [f["severity"] for f in findings(script) if f["code"] == "MG217"] == ["info"]  # --train-iters was read
    unread = source.replace(iters, "")
    assert unread != source
    (fork / "arguments.py").write_text(unread.replace("    parser = _add_training_args(parser)\n", factory),
                                       encoding="utf-8")
    assert [f for f in findings(script) if f["code"] == "MG217"] == []


def test_a_method_of_the_parser_itself_is_no_unread_call(tmp_path):
    fork = tmp_path / "megatron"
    fork.mkdir()
    (fork / "__init__.py").write_text("", encoding="utf-8")
    source = (CONTEXT / "fork" / "megatron" / "arguments.py").read_text(encoding="utf-8")
    (fork / "arguments.py").write_text(source.replace(
        "    parser = _add_training_args(parser)\n",
        "    parser = _add_training_args(parser)\n    parser.set_defaults(parser=parser)\n"), encoding="utf-8")
    (tmp_path / "pretrain_fork.py").write_text((CONTEXT / "fork" / "pretrain_fork.py").read_text(), encoding="utf-8")
    script = tmp_path / "run.sh"
    script.write_text("torchrun --nproc_per_node 8 pretrain_fork.py --num-layers 4 --zzz 1\n", encoding="utf-8")
    launch = reader.read(script.read_text(), str(script)).data.launch
    assert program.find(str(script), launch, "megatron-lm", False).unknown is None


ADAPTORS = {
    "assigned": "from megatron.training import arguments\n\ndef parse_args(*a, **k):\n    pass\n\n"
                "arguments.parse_args = parse_args\n",
    "aliased": "import megatron.training.arguments as margs\nsetattr(margs, '_add_training_args', lambda p: p)\n",
    "registered": "class Patches:\n    def register(self, name, fn):\n        pass\n\n"
                  "Patches().register('megatron.training.arguments.parse_args', print)\n",
}


@pytest.mark.parametrize("how", sorted(ADAPTORS))
def test_an_adaptor_the_entry_imports_that_patches_megatrons_argument_code_makes_the_program_unknown(tmp_path, how):
    """An in-tree package the entry imports (through another module here) replaces part of Megatron's argument code,
    the way adaptor packages add their own flags: the flags the parser accepts are unknown, so an unknown flag is an
    info naming the file and line of the patch."""
    package = tmp_path / "adaptor"
    package.mkdir()
    (package / "__init__.py").write_text("from adaptor import patches  # noqa\n", encoding="utf-8")
    (package / "patches.py").write_text(ADAPTORS[how], encoding="utf-8")
    (tmp_path / "pretrain_adapted.py").write_text(
        "import adaptor\nfrom megatron.training import pretrain\n\npretrain(None, None, None, None)\n", encoding="utf-8")
    script = tmp_path / "run.sh"
    script.write_text("torchrun --nproc_per_node 8 pretrain_adapted.py --num-layers 4 --adaptor-only-flag 1\n",
                      encoding="utf-8")
    launch = reader.read(script.read_text(), str(script)).data.launch
    found = program.find(str(script), launch, "megatron-lm", False)
    assert found.unknown is not None and "adaptor/patches.py:" in found.unknown.what, found.unknown
    unknown = [f for f in findings(script) if f["code"] == "MG001"]
    assert [f["severity"] for f in unknown] == ["info"]


def test_a_module_that_only_reads_megatrons_argument_code_is_no_patch(tmp_path):
    package = tmp_path / "helpers"
    package.mkdir()
    (package / "__init__.py").write_text(
        "import logging\nfrom megatron.training import arguments\n\nLOG = logging.getLogger('megatron.training.arguments')"
        "\nDEFAULTS = arguments.parse_args\n", encoding="utf-8")
    (tmp_path / "pretrain_plain.py").write_text(
        "import helpers\nfrom megatron.training import pretrain\n\npretrain(None, None, None, None)\n", encoding="utf-8")
    script = tmp_path / "run.sh"
    script.write_text("torchrun --nproc_per_node 8 pretrain_plain.py --num-layers 4\n", encoding="utf-8")
    launch = reader.read(script.read_text(), str(script)).data.launch
    assert program.find(str(script), launch, "megatron-lm", False).unknown is None
