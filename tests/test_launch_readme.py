"""Issue 33: a launch command quoted in a README (its fenced shell blocks) is a launch of the setup,
read at the README's own lines and columns (fixtures/launch/readme/); prose, placeholders, other
languages and a console's output are never read as commands, and a README is never reported as a
script that does not parse."""

from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st

from shardshift.formats.launch import markdown
from shardshift.formats.launch import reader as launch_reader

from conftest import FIXTURES, check_json

README = FIXTURES / "launch" / "readme"


def _at(text: str, needle: str) -> tuple[int, int]:
    offset = text.index(needle)
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def test_the_readme_launch_is_judged_at_the_readme_place():
    status, output = check_json(str(README / "bad"))
    text = (README / "bad" / "README.md").read_text()
    found = [(f["code"], os.path.basename(f["file"]), f["line"], f["column"], f["severity"])
             for f in output["findings"] if f["severity"] != "info"]
    assert found == [("DS449", "README.md", *_at(text, "--lr_scheduler_type"), "warning")]
    status, output = check_json(str(README / "good"))
    assert [f for f in output["findings"] if f["severity"] != "info"] == []


def test_the_console_block_of_the_good_readme_is_read():
    from shardshift.check import load

    document = load(str(README / "good" / "README.md"), explicit=True)
    assert document.format == "launch" and document.syntax is None
    assert document.data.launch.launcher == "deepspeed"
    assert [(r.role, os.path.basename(r.resolved)) for r in document.references] == [
        ("deepspeed_config", "ds_config.json")]
    flags = {a.flag: (a.line, a.column) for a in document.data.launch.args if a.flag}
    text = (README / "good" / "README.md").read_text()
    assert flags["--lr_scheduler_type"] == _at(text, "--lr_scheduler_type")


def test_only_readmes_are_read_and_only_their_shell_blocks(tmp_path):
    command = "```bash\ndeepspeed train.py --deepspeed ds.json --lr_scheduler_type cosine\n```\n"
    assert launch_reader.looks_like("docs/README.md", command)
    assert launch_reader.looks_like("examples/readme_en.markdown", command)
    assert not launch_reader.looks_like("docs/tutorial.md", command)  # another page quotes other setups
    assert not launch_reader.looks_like("README.md", command.replace("```bash", "    ").replace("```", ""))
    python = command.replace("```bash", "```python")
    assert markdown.shell_blocks(python) == []
    assert [line for _, line in markdown.shell_blocks(command)[0]] == [command.split("\n")[1]]


def test_a_readme_that_holds_no_script_is_no_finding(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# x\n\n```bash\ndeepspeed train.py --deepspeed <config> | (\n```\n\n"
                      "```\nthis is prose with torchrun in it ( and an unclosed paren\n```\n")
    status, output = check_json(str(readme))
    assert [f["code"] for f in output["findings"]] == ["SS005"]  # named, not read: never SS001
    assert "README" in output["findings"][0]["message"] and "placeholders" in output["findings"][0]["message"]
    assert "SS001" not in {f["code"] for f in check_json(str(tmp_path))[1]["findings"]}


def test_console_prompts_and_output():
    text = "```console\n$ torchrun --nproc_per_node 8 \\\n    train.py --deepspeed ds.json\nstarting 8\n" \
           "  $ echo done\ndone\n```\n"
    (block,) = markdown.shell_blocks(text)
    lines = text.split("\n")
    assert [number for number, _ in block] == [1, 2, 4]
    assert block[0][1] == "  torchrun --nproc_per_node 8 \\" and block[2][1] == "    echo done"
    assert all(len(line) == len(lines[number]) for number, line in block)


def test_crlf_and_indented_fences_keep_positions():
    text = "Steps:\r\n\r\n1. Train:\r\n   ```sh\r\n   torchrun --nproc_per_node 2 train.py --deepspeed ds.json\r\n   ```\r\n"
    script = markdown.script_text(text, markdown.shell_blocks(text))
    assert len(script) == len(text) and script.count("\n") == text.count("\n")
    assert script.split("\n")[4] == text.split("\n")[4]
    assert script.split("\n")[3].strip() == ""


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["```bash", "```", "~~~", "```console", "$ deepspeed x.py --deepspeed a.json",
                                 "torchrun --nproc_per_node 2 t.py \\", "  --lr 1", "text (", "```python",
                                 "<placeholder>", "\r", "$ echo", "EOF", "cat <<EOF", "'", '"']),
                max_size=30))
def test_any_readme_reads_without_a_traceback_and_keeps_its_shape(parts):
    text = "\n".join(parts)
    script = markdown.script_text(text, markdown.shell_blocks(text))
    assert len(script) == len(text) and script.count("\n") == text.count("\n")
    document = launch_reader.read(text, "README.md")
    assert document.syntax is None


def test_a_readme_command_of_another_setup_is_no_launch_of_this_one(tmp_path):
    """A README that quotes a command whose config and entry are not in the repository (a tool's
    own usage, a file to write first) starts no setup here; named, it says why."""
    (tmp_path / "README.md").write_text("Run:\n\n```bash\naccelerate launch --config_file fsdp.yaml train.py\n"
                                        "deepspeed train.py --deepspeed ds.json --lr_scheduler_type cosine\n```\n")
    status, output = check_json(str(tmp_path))
    assert output["findings"] == [] and status == 0
    status, output = check_json(str(tmp_path / "README.md"))
    (finding,) = output["findings"]
    assert finding["code"] == "SS005" and "names no configuration or entry script" in finding["message"]
    (tmp_path / "train.py").write_text("from transformers import HfArgumentParser, TrainingArguments\n"
                                       "HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n")
    from shardshift.check import load

    document = load(str(tmp_path / "README.md"), explicit=False)  # its entry script is here now
    assert document is not None and document.format == "launch" and document.data.training_arguments
