"""The measured conversion report (shardshift.migration): statuses come from the output read back,
grouped per source setting by provenance, whatever the pair of formats."""

from __future__ import annotations

from shardshift import api
from shardshift.migration import Measured, _worth_saying, same, source_settings

from conftest import FIXTURES


def _entries(path, to):
    return {(e.file and e.file.rsplit("/", 1)[-1], e.source): e for e in api.convert(str(path), to).entries}


def test_a_flag_given_twice_reports_the_one_that_wins(tmp_path):
    source = tmp_path / "train.args"
    source.write_text("--micro-batch-size 2\n--lr 1e-4\n--micro-batch-size 4\n")
    entries = [e for e in api.convert(str(source), "deepspeed").entries if e.source == "--micro-batch-size"]
    assert [(e.line, e.status) for e in entries] == [(1, "dropped"), (3, "exact")]
    assert "given again at line 3" in entries[0].reason
    assert entries[1].target == "/train_micro_batch_size_per_gpu"


def test_a_setting_the_command_line_overrides_names_the_override():
    """axolotl train qlora.yml --micro_batch_size 2: the YAML's 4 and the ds_config's 4 are not what the
    setup trains with; each says where the value comes from and what the output holds."""
    entries = _entries(FIXTURES / "launch" / "axolotl" / "bad" / "train.sh", "deepspeed")
    assert entries[(None, "--micro_batch_size")].status == "exact"
    for file, pointer in (("qlora.yml", "/micro_batch_size"), ("ds_config.json", "/train_micro_batch_size_per_gpu")):
        entry = entries[(file, pointer)]
        assert entry.status == "approximate", entry
        assert "from train.sh:3 --micro_batch_size" in entry.reason and "batch.micro = 4 in the source, 2" in entry.reason


def test_a_source_default_the_output_changes_has_its_own_entry(tmp_path):
    """Megatron without --use-distributed-optimizer is ZeRO-0; Axolotl's FSDP2 cannot be, so the
    output shards like ZeRO-2: an entry named by the field, saying whose default it was."""
    source = tmp_path / "run.sh"
    source.write_text("torchrun --nproc_per_node 8 pretrain_gpt.py --micro-batch-size 1 --global-batch-size 128 "
                      "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --lr 3e-4 --bf16\n")
    entries = _entries(source, "axolotl")
    stage = entries[(None, "sharding.stage")]
    assert stage.status == "approximate" and "0 in the source, 2 in the output" in stage.reason
    assert "megatron-core" in stage.reason
    # the accumulation Megatron derives (128 / (1 × 2 data-parallel ranks)) is what Axolotl is given
    accumulation = entries[(None, "batch.accumulation")]
    assert accumulation.status == "exact" and accumulation.target == "gradient_accumulation_steps"
    # a default the output keeps needs no entry unless the writer explains it
    assert (None, "parallelism.context") not in entries


def test_every_setting_of_fsdp2_code_is_matched_by_its_place():
    source = FIXTURES / "fsdp2" / "rules" / "FS001" / "good.py"
    from shardshift.check import load

    document = load(str(source), explicit=True)
    listed = {pointer for pointer, _, _ in source_settings(document)}
    entries = {e.source: e for e in api.convert(str(source), "deepspeed").entries}
    assert listed and listed <= set(entries)
    assert entries["/optimizer/lr"].target == "/optimizer/params/lr" and entries["/optimizer/lr"].status == "exact"


def test_free_form_params_are_kept_when_the_output_holds_the_sources_values():
    assert same({"cos_min_ratio": 0.1}, {"cos_min_ratio": 0.1, "warmup_min_ratio": 0.0})
    assert not same({"cos_min_ratio": 0.1}, {"cos_min_ratio": 0.2})
    assert same(3e-4, 0.0003) and same(8, 8.0) and not same(True, 1.0)


def test_a_default_switched_off_in_a_target_without_it_is_not_worth_an_entry():
    off = Measured("parallelism.sequence_parallel", "dropped", False, None, None)
    degree = Measured("parallelism.tensor", "dropped", 2, None, None)
    quiet = Measured("optimizer.decoupled_weight_decay", "dropped", True, None, None)
    assert not _worth_saying(off.field, off) and _worth_saying(degree.field, degree)
    assert not _worth_saying(quiet.field, quiet)
