"""Round-trip YAML editing (shardshift.formats.yaml_write): unchanged text stays byte for byte,
edits keep comments, order, quoting and indentation, and what is written reads back under
PyYAML's YAML 1.1 as the value that was set."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from shardshift.formats import yaml_write
from shardshift.source import MISSING

from conftest import corpus_files, needs_corpus

TEXT = """\
# Accelerate config
compute_environment: LOCAL_MACHINE
distributed_type: FSDP   # the mode
fsdp_config:
  fsdp_sharding_strategy: FULL_SHARD
  fsdp_use_orig_params: true
  # the version comes last
  fsdp_version: 1
mixed_precision: 'bf16'
gpu_ids: "0,1"
list:
    - a
    - b
"""


def test_unchanged_text_is_returned_verbatim():
    assert yaml_write.load(TEXT).dump() == TEXT


def test_edits_keep_comments_order_quoting_and_indentation():
    edit = yaml_write.load(TEXT)
    assert edit.get("/fsdp_config/fsdp_version") == 1
    assert edit.get("/fsdp_config/nope") is MISSING
    assert edit.rename("/fsdp_config/fsdp_sharding_strategy", "fsdp_reshard_after_forward", value=True)
    assert edit.delete("/fsdp_config/fsdp_use_orig_params")
    assert not edit.delete("/fsdp_config/fsdp_use_orig_params")
    edit.set("/fsdp_config/fsdp_version", 2)
    edit.set("/num_processes", 8)
    out = edit.dump()
    assert out == """\
# Accelerate config
compute_environment: LOCAL_MACHINE
distributed_type: FSDP   # the mode
fsdp_config:
  fsdp_reshard_after_forward: true
  # the version comes last
  fsdp_version: 2
mixed_precision: 'bf16'
gpu_ids: "0,1"
list:
    - a
    - b
num_processes: 8
"""


def test_setting_the_same_value_changes_nothing():
    edit = yaml_write.load(TEXT)
    edit.set("/mixed_precision", "bf16")
    edit.set("/fsdp_config/fsdp_version", 1)
    assert not edit.changed and edit.dump() == TEXT


def test_replacing_a_quoted_string_keeps_its_quotes():
    edit = yaml_write.load(TEXT)
    edit.set("/mixed_precision", "fp16")
    edit.set("/gpu_ids", "all")
    assert "mixed_precision: 'fp16'\n" in edit.dump() and 'gpu_ids: "all"\n' in edit.dump()


@pytest.mark.parametrize("value", ["no", "on", "yes", "off", "2e-5", "1e-5", "010", "1:30", "null", "", "~",
                                   "2026-01-01", "true", " x", "#x", "a: b", "1.5", ".inf"])
def test_strings_pyyaml_would_misread_are_quoted(value):
    edit = yaml_write.load("a: 1\n")
    edit.set("/b", value)
    assert yaml.safe_load(edit.dump()) == {"a": 1, "b": value}


def test_new_document_and_nested_creation():
    edit = yaml_write.new({"distributed_type": "FSDP", "fsdp_config": {"fsdp_version": 2}})
    edit.set("/fsdp_config/fsdp_offload_params", False)
    edit.comment("/fsdp_config/fsdp_offload_params", "approximate")
    out = edit.dump()
    assert out == "distributed_type: FSDP\nfsdp_config:\n  fsdp_version: 2\n  fsdp_offload_params: false  # approximate\n"


def test_not_a_mapping():
    with pytest.raises(yaml_write.YamlEditError):
        yaml_write.load("- a\n- b\n")
    with pytest.raises(yaml_write.YamlEditError):
        yaml_write.load("a: [\n")


scalars = st.one_of(st.booleans(), st.integers(-10**6, 10**6), st.text(max_size=12),
                    st.floats(allow_nan=False, allow_infinity=False, width=32))


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.from_regex(r"[a-z_]{1,10}", fullmatch=True), scalars, max_size=6))
def test_written_values_read_back_under_yaml_1_1(values):
    edit = yaml_write.load(TEXT)
    for key, value in values.items():
        edit.set(("fsdp_config", key), value)
    data = yaml.safe_load(edit.dump())
    for key, value in values.items():
        assert data["fsdp_config"][key] == value
    assert data["compute_environment"] == "LOCAL_MACHINE"


@needs_corpus
def test_corpus_files_unchanged_and_edit_of_one_key_keeps_the_rest():
    for path in corpus_files("accelerate") + corpus_files("axolotl"):
        text = path.read_text()
        try:
            edit = yaml_write.load(text)
        except yaml_write.YamlEditError:
            continue
        assert edit.dump() == text
        before = yaml.safe_load(text)
        edit.set("/shardshift_probe", 1)
        after = yaml.safe_load(edit.dump())
        assert after.pop("shardshift_probe") == 1
        assert after == before, path.name
