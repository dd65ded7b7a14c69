"""FS007 and the reader's entry functions (issue 19).

The entry function of a training script runs however the script starts it: a plain call, or a
CLI wrapper the reader does not follow (`fire.Fire(main)`, `typer.run(main)`, `tyro.cli(main)`,
`jsonargparse.CLI(main)`, a `hydra.main` decorator, `mp.spawn(main, ...)`). Each form must give the
same findings as `main()` (issue 19: FS007 was missed under `fire.Fire(main)`)."""

from __future__ import annotations

import pytest

from conftest import check_json

BODY = '''import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
{imports}

{decorator}def main(lr: float = 1e-4):
    model = torch.nn.Linear(4, 4)
    model = FSDP(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)


if __name__ == "__main__":
    {start}
'''

# id -> (imports, decorator, how the script starts main)
STARTS = {
    "call": ("", "", "main()"),
    "fire": ("import fire", "", "fire.Fire(main)"),
    "fire-dict": ("import fire", "", 'fire.Fire({"train": main})'),
    "typer": ("import typer", "", "typer.run(main)"),
    "typer-app": ("import typer\napp = typer.Typer()", "@app.command()\n", "app()"),
    "tyro": ("import tyro", "", "tyro.cli(main)"),
    "jsonargparse": ("from jsonargparse import CLI", "", "CLI(main)"),
    "hydra": ("import hydra", '@hydra.main(config_path=None, version_base=None)\n', "main()"),
    "spawn": ("import torch.multiprocessing as mp", "", "mp.spawn(main, nprocs=2)"),
    "partial": ("from functools import partial", "", "partial(main, lr=1.0)()"),
}


def _codes(tmp_path, name: str, text: str) -> list[tuple[str, int]]:
    path = tmp_path / f"{name}.py"
    path.write_text(text, encoding="utf-8")
    _, output = check_json("--min-severity", "info", str(path))
    return sorted((f["code"], f["line"]) for f in output["findings"])


@pytest.mark.parametrize("start", sorted(STARTS))
def test_fsdp1_wrapper_is_found_however_main_is_started(tmp_path, start):
    imports, decorator, call = STARTS[start]
    text = BODY.format(imports=imports, decorator=decorator, start=call)
    found = _codes(tmp_path, start.replace("-", "_"), text)
    line = next(n for n, row in enumerate(text.splitlines(), 1) if "FSDP(model)" in row)
    assert ("FS007", line) in found, found
    assert [code for code, _ in found].count("FS007") == 1, found


def test_a_function_nobody_passes_or_calls_is_still_an_entry_and_runs_once(tmp_path):
    text = BODY.format(imports="import fire", decorator="", start="fire.Fire(main)").replace(
        "fire.Fire(main)", "fire.Fire(main)\n    main()")
    found = _codes(tmp_path, "both", text)
    assert [code for code, _ in found].count("FS007") == 1, found


# --- FS007 where the file keeps FSDP1 on purpose (issue 19: Modalities) -------------------------

LIBRARY = '''import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import fully_shard
{imports}

{decorator}def wrap_fsdp1(model):
    return FSDP(model, use_orig_params=True)


def wrap_fsdp2(model):
    for block in model.children():
        fully_shard(block)
    fully_shard(model)
    return model
'''


def _fs007(tmp_path, name: str, text: str) -> list[dict]:
    path = tmp_path / f"{name}.py"
    path.write_text(text, encoding="utf-8")
    _, output = check_json("--min-severity", "info", str(path))
    return [f for f in output["findings"] if f["code"] == "FS007"]


@pytest.mark.parametrize("imports,decorator", [
    ("from typing_extensions import deprecated", '@deprecated("use wrap_fsdp2")\n'),
    ("import warnings", '@warnings.deprecated("use wrap_fsdp2")\n'),
    ("from deprecated import deprecated", "@deprecated\n"),
])
def test_fsdp1_in_a_function_the_file_deprecates_is_not_reported(tmp_path, imports, decorator):
    assert _fs007(tmp_path, "deprecated", LIBRARY.format(imports=imports, decorator=decorator)) == []


def test_fsdp1_next_to_fully_shard_in_another_function_is_an_unknown_program_info(tmp_path):
    found = _fs007(tmp_path, "both", LIBRARY.format(imports="", decorator=""))
    assert [(f["severity"], f["unknown_context"]["kind"]) for f in found] == [("info", "program")], found
    assert "also calls fully_shard (line 12)" in found[0]["message"]


def test_fsdp1_alone_is_still_a_warning(tmp_path):
    text = LIBRARY.format(imports="", decorator="").split("\n\ndef wrap_fsdp2")[0] + "\n"
    found = _fs007(tmp_path, "alone", text)
    assert [(f["severity"], f.get("unknown_context")) for f in found] == [("warning", None)], found
