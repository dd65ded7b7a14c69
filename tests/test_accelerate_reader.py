"""The Accelerate config reader: values as PyYAML reads them, positions, the Plan, references,
bad input, the precedence table, and the setups it forms with a ds_config."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shardshift.formats import accelerate, detect
from shardshift.plan import Plan, Unknown, field_types, section_class
from shardshift.source import Location

from conftest import FIXTURES, ROOT, check_json, corpus_files, needs_corpus

INLINE = FIXTURES / "accelerate" / "deepspeed_inline.yaml"


def read(text: str, path: str = "dir/accelerate_config.yaml"):
    return accelerate.read(text, path)


def test_inline_deepspeed_values_and_positions():
    document = accelerate.read(INLINE.read_text(), str(INLINE))
    plan = document.plan
    assert document.syntax is None
    expected = {
        "world.nodes": (2, 16, "/num_machines"),
        "world.world_size": (16, 17, "/num_processes"),
        "precision.param_dtype": ("bf16", 15, "/mixed_precision"),
        "batch.accumulation": (4, 5, "/deepspeed_config/gradient_accumulation_steps"),
        "gradient_clipping": (1.0, 6, "/deepspeed_config/gradient_clipping"),
        "offload.optimizer.device": ("cpu", 7, "/deepspeed_config/offload_optimizer_device"),
        "offload.params.device": ("none", 8, "/deepspeed_config/offload_param_device"),
        "sharding.stage": (2, 10, "/deepspeed_config/zero_stage"),
    }
    for dotted, (value, line, pointer) in expected.items():
        assert plan.get(dotted) == value, dotted
        where = plan.provenance[dotted]
        assert (where.file, where.line, where.pointer) == (str(INLINE), line, pointer), dotted
        assert document.position(pointer) == (where.line, where.column)
    rest = plan.passthrough["accelerate"]
    assert rest["distributed_type"] == "DEEPSPEED"
    assert rest["deepspeed_config"] == {"zero3_init_flag": False}
    assert "num_machines" not in rest and "mixed_precision" not in rest
    assert document.references == []


def test_column_of_a_nested_value():
    document = read("distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 3\n")
    assert document.plan.provenance["sharding.stage"] == Location("dir/accelerate_config.yaml", 3, 15,
                                                                  "/deepspeed_config/zero_stage")
    assert document.position("/deepspeed_config/zero_stage", key=True) == (3, 3)


def test_deepspeed_config_ignored_unless_distributed_type_is_deepspeed():
    document = read("distributed_type: FSDP\ndeepspeed_config:\n  zero_stage: 3\n"
                    "  deepspeed_config_file: ds.json\n")
    assert document.plan.sharding.stage is None
    assert document.references == []
    assert document.plan.passthrough["accelerate"]["deepspeed_config"]["zero_stage"] == 3


def test_num_processes_not_lifted_for_distributed_type_no():
    plan = read("distributed_type: 'NO'\nnum_processes: 8\n").plan
    assert plan.world.world_size is None


@pytest.mark.parametrize("written, expected", [
    ("'no'", "fp32"), ('"fp16"', "fp16"), ("bf16", "bf16"), ("fp8", "fp8"),
])
def test_mixed_precision(written, expected):
    assert read(f"distributed_type: MULTI_GPU\nmixed_precision: {written}\n").plan.precision.param_dtype == expected


def test_unquoted_no_is_a_boolean_as_pyyaml_reads_it():
    document = read("distributed_type: MULTI_GPU\nmixed_precision: no\ndowncast_bf16: off\n")
    assert document.data["mixed_precision"] is False and document.data["downcast_bf16"] is False
    value = document.plan.precision.param_dtype
    assert isinstance(value, Unknown) and "boolean False" in value.reason


def test_yaml_11_scalars():
    data = read("distributed_type: DEEPSPEED\na: 2e-5\nb: 2.0e-5\nc: 1.0e+3\nd: on\ne: 010\nf: 1:30\ng: 0x1F\n"
                "h: ~\ni: 1_000\n").data
    assert data == {"distributed_type": "DEEPSPEED", "a": "2e-5", "b": 2e-05, "c": 1000.0, "d": True, "e": 8,
                    "f": 90, "g": 31, "h": None, "i": 1000}


def test_numeric_strings_reach_the_plan_as_numbers():
    # Accelerate hands deepspeed_config values on as environment variables, so "1e-3" is 0.001
    plan = read("distributed_type: DEEPSPEED\ndeepspeed_config:\n  gradient_clipping: 1e-3\n"
                "  gradient_accumulation_steps: '4'\n").plan
    assert plan.gradient_clipping == 0.001 and plan.batch.accumulation == 4


def test_reference_resolved_from_the_referring_folder(tmp_path, monkeypatch):
    (tmp_path / "a" / "ds").mkdir(parents=True)
    (tmp_path / "a" / "ds" / "z3.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    text = "distributed_type: DEEPSPEED\ndeepspeed_config:\n  deepspeed_config_file: ../ds/z3.json\n"
    document = read(text, os.path.join("a", "b", "accelerate.yaml"))
    (reference,) = document.references
    assert reference.target == "../ds/z3.json"
    assert reference.resolved == os.path.normpath(os.path.join("a", "ds", "z3.json"))
    assert reference.where.line == 3 and reference.where.pointer == "/deepspeed_config/deepspeed_config_file"
    assert reference.role == "deepspeed_config" and reference.unknown is None
    # not beside the YAML: the current directory (where `accelerate launch` usually runs), else unresolved
    (reference,) = read(text.replace("../ds/z3.json", "a/ds/z3.json"), os.path.join("a", "b", "accelerate.yaml")).references
    assert reference.resolved == os.path.join("a", "ds", "z3.json")
    (reference,) = read(text.replace("../ds/z3.json", "nowhere.json"), os.path.join("a", "b", "accelerate.yaml")).references
    assert reference.resolved is None and "neither next to accelerate.yaml nor in the current directory" in reference.unknown


@pytest.mark.parametrize("target", ["${DS_CONFIG}", "$HOME/ds.json", "~/ds.json"])
def test_reference_not_a_literal_path(target):
    (reference,) = read(f"distributed_type: DEEPSPEED\ndeepspeed_config:\n  deepspeed_config_file: '{target}'\n"
                        ).references
    assert reference.resolved is None and reference.unknown


def test_no_reference_for_none():
    assert read("distributed_type: DEEPSPEED\ndeepspeed_config:\n  deepspeed_config_file: none\n").references == []


@pytest.mark.parametrize("text", [
    "distributed_type: DEEPSPEED\n  bad: [1,\n", "distributed_type: [\n", "distributed_type: a\n\tb: c\n",
    "- distributed_type\n", "distributed_type: &a [*a]\n", "---\na: 1\n---\nb: 2\n",
    "distributed_type: a\n? [1]\n: 2\n", "distributed_type: !!python/object:os.system x\n", "",
])
def test_bad_yaml_is_a_syntax_problem(text):
    document = read(text)
    assert document.syntax is not None and document.plan is None
    assert document.syntax.line >= 1 and document.syntax.column >= 1


def test_alias_expansion_is_bounded():
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    document = read("distributed_type: MULTI_GPU\n" + "\n".join(lines) + "\n")
    assert document.syntax is not None and "alias" in document.syntax.message


def test_detection():
    assert detect("x/accelerate.yaml", "compute_environment: LOCAL_MACHINE\n") == "accelerate"
    assert detect("x/accelerate.yml", "distributed_type: FSDP\n") == "accelerate"
    assert detect("x/notes.txt", "distributed_type: FSDP\n") is None
    assert detect("x/ci.yaml", "jobs:\n  distributed_type: FSDP\n") is None


@pytest.mark.parametrize("path", sorted(str(p.relative_to(ROOT)) for p in ROOT.rglob("*.y*ml")
                                        if ".git" not in p.parts and "fixtures" not in p.parts))
def test_repository_yaml_is_not_taken_for_a_config(path):
    assert detect(path, (ROOT / path).read_text()) not in ("accelerate", "axolotl")


def is_plan_field(dotted: str) -> bool:
    """A leaf field of the Plan, found through the section classes (sections may be unset)."""
    *sections, name = dotted.split(".")
    cls: type = Plan
    for section in sections:
        if section not in field_types(cls):
            return False
        cls = section_class(cls, section)
    return name in field_types(cls) and section_class_or_none(cls, name) is None


def section_class_or_none(cls: type, name: str) -> type | None:
    try:
        return section_class(cls, name)
    except TypeError:
        return None


def test_precedence_keys_are_plan_fields():
    for dotted, precedence in accelerate.PRECEDENCE.items():
        assert is_plan_field(dotted), dotted
        Plan().get(dotted)
        assert precedence.outcome == "refuses" and precedence.says.startswith("Accelerate raises a ValueError")
    assert len(accelerate.PRECEDENCE) == 8
    assert not is_plan_field("offload.params") and not is_plan_field("batch.nothing")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=300) | st.lists(st.sampled_from(
    ["distributed_type: DEEPSPEED", "deepspeed_config:", "  zero_stage: 3", "  - x", "mixed_precision: no", "&a",
     "*a", "<<: *a", "? x", "{", "]", "'", '"', "\t", "num_processes: -1", "  deepspeed_config_file: $X"]),
    max_size=12).map("\n".join))
def test_fuzz_never_raises(text):
    document = read(text)
    if document.syntax is None:
        assert isinstance(document.data, dict)
        document.plan.to_data()
        for pointer, line, column in document.settings():
            assert line >= 1 and column >= 1


@needs_corpus
def test_corpus_reads_as_pyyaml_reads_it():
    yaml = pytest.importorskip("yaml")
    files = corpus_files("accelerate")
    assert len(files) == 75
    for path in files:
        text = path.read_text(encoding="utf-8-sig")
        document = accelerate.read(text, str(path))
        assert document.syntax is None, (path, document.syntax)
        assert accelerate.is_config(document), path
        assert document.data == yaml.safe_load(text), path


def test_setup_refused_pair_is_one_finding_with_both_places():
    status, out = check_json("--isolated", "fixtures/setups/accelerate_refuses")
    assert status == 1
    (finding,) = out["findings"]
    assert (finding["code"], finding["severity"], finding["file"], finding["line"], finding["pointer"]) == (
        "PL001", "error", "fixtures/setups/accelerate_refuses/accelerate_config.yaml", 5,
        "/deepspeed_config/gradient_accumulation_steps")
    (related,) = finding["related"]
    assert related["file"].endswith("fixtures/setups/accelerate_refuses/ds_config.json")
    assert (related["line"], related["pointer"]) == (3, "/gradient_accumulation_steps")


def test_setup_clean():
    status, out = check_json("--isolated", "fixtures/setups/accelerate_clean")
    assert status == 0 and out["findings"] == []
    assert {f["format"] for f in out["files"]} == {"accelerate", "deepspeed"}


def test_a_repeated_key_says_what_pyyaml_does_and_pyyaml_does_it(tmp_path):
    yaml = pytest.importorskip("yaml")  # PyYAML comes with accelerate (the oracles extra)
    path = tmp_path / "accelerate_config.yaml"
    path.write_text("compute_environment: LOCAL_MACHINE\ndistributed_type: 'NO'\ndebug: false\ndebug: true\n")
    status, output = check_json(str(path))
    (finding,) = output["findings"]
    assert finding["code"] == "SS002" and finding["line"] == 4
    assert "PyYAML, which Accelerate reads the file with, keeps only the last value" in finding["message"]
    assert "DeepSpeed" not in finding["message"]
    assert finding["severity"] == "warning" and "the first (false) is never read" in finding["message"]
    assert yaml.safe_load(path.read_text())["debug"] is True  # the oracle: the last value, no error
    # the same value twice changes nothing: an info; 1 and true are different values to the program
    path.write_text("compute_environment: LOCAL_MACHINE\ndistributed_type: 'NO'\ndebug: true\ndebug: true\n"
                    "num_processes: 1\nnum_processes: true\n")
    status, output = check_json(str(path))
    assert [(f["line"], f["severity"]) for f in output["findings"] if f["code"] == "SS002"] == [(4, "info"),
                                                                                                (6, "warning")]
    assert "the repeat changes nothing" in output["findings"][0]["message"]
    loaded = yaml.safe_load(path.read_text())
    assert loaded["debug"] is True and loaded["num_processes"] is True


# --- fsdp_config, parallelism_config, megatron_lm_config (issue 10) --------------------------


def test_fsdp2_values_and_positions():
    document = read("distributed_type: FSDP\nmixed_precision: bf16\nnum_machines: 2\nnum_processes: 16\n"
                    "fsdp_config:\n  fsdp_version: 2\n  reshard_after_forward: false\n  fsdp_offload_params: true\n"
                    "  fsdp_activation_checkpointing: true\nparallelism_config:\n"
                    "  parallelism_config_dp_replicate_size: 2\n  parallelism_config_dp_shard_size: 8\n")
    plan = document.plan
    assert (plan.sharding.stage, plan.offload.params.device, plan.offload.optimizer.device) == (2, "cpu", "cpu")
    assert plan.activation_checkpointing.enabled is True
    assert (plan.precision.param_dtype, plan.precision.reduce_dtype) == ("bf16", "bf16")
    assert (plan.parallelism.data_parallel_replicate, plan.parallelism.data_parallel_shard) == (2, 8)
    assert plan.world.gpus_per_node == 8
    assert plan.provenance["sharding.stage"] == Location("dir/accelerate_config.yaml", 7, 26,
                                                         "/fsdp_config/reshard_after_forward")
    assert plan.passthrough["accelerate"]["fsdp_config"] == {"fsdp_version": 2}


def test_fsdp1_reads_the_strategy_and_ignores_reshard_after_forward():
    plan = read("distributed_type: FSDP\nfsdp_config:\n  fsdp_sharding_strategy: 5\n"
                "  fsdp_reshard_after_forward: FULL_SHARD\n").plan
    assert (plan.sharding.stage, plan.sharding.hybrid) == (2, True)  # HYBRID_SHARD_ZERO2
    assert read("distributed_type: FSDP\nfsdp_config:\n  fsdp_reshard_after_forward: SHARD_GRAD_OP\n"
                ).plan.sharding.stage is None  # the launcher's FULL_SHARD wins: AC004


def test_fsdp_config_ignored_unless_distributed_type_is_fsdp_and_megatron_degrees():
    assert read("distributed_type: DEEPSPEED\nfsdp_config:\n  fsdp_sharding_strategy: SHARD_GRAD_OP\n"
                ).plan.sharding.stage is None
    plan = read("distributed_type: MEGATRON_LM\nmegatron_lm_config:\n  megatron_lm_tp_degree: 4\n"
                "  megatron_lm_pp_degree: 2\n  megatron_lm_sequence_parallelism: true\n"
                "  megatron_lm_gradient_clipping: 1.0\n").plan
    assert (plan.parallelism.tensor, plan.parallelism.pipeline, plan.parallelism.sequence_parallel,
            plan.gradient_clipping) == (4, 2, True, 1.0)
