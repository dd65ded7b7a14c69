"""FSDP2 reader on code it cannot decide (fixtures/fsdp2/unknown, written for these tests): an
undecided branch gives Unknown with the condition, never the last assignment; run-time values are
named; only torch's fully_shard shards and only optimizer classes are optimizers; every field
records where it was set; the migration report counts unknowns and --strict fails on them."""

from __future__ import annotations

import pytest

from shardshift.cli import main
from shardshift.formats import fsdp2
from shardshift.plan import Unknown

from conftest import FIXTURES

UNKNOWN = FIXTURES / "fsdp2" / "unknown"


def plan_of(name):
    path = UNKNOWN / name
    document = fsdp2.read(path.read_text(), str(path))
    assert document.syntax is None
    return document.plan


CASES = [  # file, field, expected value, or ("unknown", reason substring)
    ("flag_offload.py", "offload.params.device", ("unknown", "set only when `cpu_offload` (line 10)")),
    ("flag_offload.py", "offload.optimizer.device", ("unknown", "set only when `cpu_offload` (line 10)")),
    ("flag_offload.py", "precision.param_dtype", ("unknown", "set only when `use_ac` (line 16)")),
    ("flag_offload.py", "activation_checkpointing.enabled", ("unknown", "set only when `use_ac` (line 18)")),
    ("flag_offload.py", "world.world_size", ("unknown", "set only when `world_size > 1` (line 12)")),
    ("flag_offload.py", "sharding.stage", 3),  # `else: mesh = None` does not hide the calls
    ("import_fallback.py", "sharding.stage", 3),  # `fully_shard = None` fallback does not hide them
    ("runtime_values.py", "precision.param_dtype", ("unknown", "run-time value `cfg.mixed_precision.param_dtype`")),
    ("runtime_values.py", "precision.reduce_dtype", ("unknown", "run-time value `cfg.reduce_dtype`")),
    ("runtime_values.py", "world.world_size", ("unknown", "os.environ['WORLD_SIZE']")),
    ("not_torch.py", "sharding.stage", None),  # mylib's fully_shard is not torch's
    ("not_torch.py", "optimizer.name", "SGD"),  # nn.Parameter / GatheredParameters are not optimizers
    ("version_switch.py", "sharding.stage", ("unknown", "set only when not `fsdp_version == 1` (line 8)")),
    ("version_switch.py", "optimizer.name", "AdamW"),
]


@pytest.mark.parametrize("name, dotted, expected", CASES)
def test_undecided_code_reads_as_unknown(name, dotted, expected):
    value = plan_of(name).get(dotted)
    if isinstance(expected, tuple):
        assert isinstance(value, Unknown), value
        assert expected[1] in value.reason
    else:
        assert value == expected and not isinstance(value, Unknown)


def test_alternatives_keep_the_branch_value():
    value = plan_of("flag_offload.py").offload.params.device
    assert [(a.value, a.condition) for a in value.alternatives] == [("cpu", "`cpu_offload` (line 10)")]


@pytest.mark.parametrize("name", sorted(p.name for p in UNKNOWN.glob("*.py")))
def test_every_field_records_where_it_was_set(name):
    plan = plan_of(name)
    for dotted, _ in plan.leaves():
        where = plan.provenance[dotted]
        assert where.file.endswith(name) and where.line > 1 and where.pointer is None


def test_switch_is_not_an_fsdp1_leftover(capsys):
    assert main(["check", "--select", "FS007", str(UNKNOWN / "version_switch.py")]) == 0
    assert "FS007" not in capsys.readouterr().out


def test_convert_lists_unknowns_and_strict_fails(tmp_path, capsys):
    source = str(UNKNOWN / "flag_offload.py")
    assert main(["convert", source, "--to", "fsdp2", "-o", str(tmp_path / "out.py")]) == 0
    err = capsys.readouterr().err
    assert "unknown     /offload/params/device: not known before the job runs: set only when `cpu_offload`" in err
    assert ", 8 unknown" in err.splitlines()[-1]
    text = (tmp_path / "out.py").read_text()
    assert "Unknown(" not in text and "set only when" not in text  # the default is written, not the Unknown
    assert main(["convert", source, "--to", "fsdp2", "-o", str(tmp_path / "out2.py"), "--strict"]) == 1


def _stage(code: str):
    from shardshift.formats import fsdp2

    return fsdp2.read(code, "x.py").plan.get("sharding.stage")


def test_a_root_only_call_beside_an_unread_sharding_helper_is_not_called_zero_2():
    code = ("from torch.distributed.fsdp import fully_shard\nfrom mylib.fsdp import apply_fsdp_to_blocks\n"
            "def setup(model):\n    apply_fsdp_to_blocks(model)\n    fully_shard(model, reshard_after_forward=False)\n")
    stage = _stage(code)
    assert isinstance(stage, Unknown) and "`apply_fsdp_to_blocks` (line 4)" in stage.reason
    assert _stage(code.replace("    apply_fsdp_to_blocks(model)\n", "")) == 2  # nothing else shards: ZeRO-2


def test_blocks_in_a_loop_decide_the_stage_and_the_last_layer_exception_does_not():
    code = ("from torch.distributed.fsdp import fully_shard\ndef setup(model):\n"
            "    for block in model.blocks:\n        fully_shard(block)\n"
            "    fully_shard(model.final_layer, reshard_after_forward=False)\n    fully_shard(model)\n")
    assert _stage(code) == 3
    mixed = code.replace("        fully_shard(block)\n", "        fully_shard(block)\n"
                                                         "    for block in model.more:\n"
                                                         "        fully_shard(block, reshard_after_forward=False)\n")
    stage = _stage(mixed)
    assert isinstance(stage, Unknown) and "the default at line 4, False at line 6" in stage.reason
