"""Axolotl rules (AX001-AX010, AX101-AX109) through the real CLI: code, severity, file, line, column, pointer,
fix and related places on the bad fixtures; no finding of its code and no error on the good ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from shardshift.rules import all_rules

from conftest import FIXTURES, check_json, shown
from rule_cases import findings_with_code, marker_position

RULES = FIXTURES / "axolotl" / "rules"

# (fixture, code, severity, pointer, marker, fix, related (marker, pointer) or None)
BAD_CASES = [
    ("AX001/bad.yaml", "AX001", "warning", "/warmup_step", "warmup_step:", "warmup_steps", None),
    ("AX002/bad.yaml", "AX002", "warning", "/fsdp_config/offload_param", "offload_param:", "offload_params", None),
    ("AX003/bad.yaml", "AX003", "error", "/fsdp_config/fsdp_sharding_strategy", "fsdp_sharding_strategy", None,
     None),
    ("AX003/bad_ignored.yaml", "AX003", "warning", "/fsdp_config/use_orig_params", "use_orig_params", None, None),
    ("AX004/bad.yaml", "AX004", "warning", "/fsdp_config/offload_params", "  offload_params", None,
     ("fsdp_offload_params", "/fsdp_config/fsdp_offload_params")),
    ("AX005/bad.yaml", "AX005", "info", "/fsdp_config/fsdp_offload_params", "fsdp_offload_params", "offload_params",
     None),
    ("AX006/bad.yaml", "AX006", "error", "/save_strategy", "no", "'no'", None),
    ("AX006/bad_none.yaml", "AX006", "error", "/max_steps", "None", "null", None),
    ("AX006/bad_date.yaml", "AX006", "error", "/hub_revision", "2024-06-01", "'2024-06-01'", None),
    ("AX006/bad_octal.yaml", "AX006", "error", "/revision_of_model", "0123", "'0123'", None),
    ("AX007/bad.yaml", "AX007", "warning", "/gradient_checkpointing", "offload", None, None),
    ("AX007/bad_unused.yaml", "AX007", "warning", "/ring_attn_func", "ring_attn_func", None, None),
    ("AX008/bad.yaml", "AX008", "error", "/special_tokens", "special_tokens:", None,
     ("tokenizer_use_mistral_common:", "/tokenizer_use_mistral_common")),
    ("AX011/bad.yaml", "AX011", "error", "/fsdp_config/transformer_layer_cls_to_wrap", "LlamaDecoderLayer, ",
     "LlamaDecoderLayer,LlamaMLP", None),
    ("AX009/bad.yaml", "AX009", "error", "/flash_attn_rms_norm", "flash_attn_rms_norm:", None, None),
    ("AX010/bad.yaml", "AX010", "error", "/warmup_steps", "0.1", None, None),
    ("AX101/bad.yaml", "AX101", "error", "/fsdp", "fsdp:", None, None),
    ("AX102/bad.yaml", "AX102", "error", "/fsdp_version", "1", "2", None),
    ("AX103/bad.yaml", "AX103", "error", "/deepspeed", "deepspeed:", None, ("fsdp_config:", "/fsdp_config")),
    ("AX104/bad.yaml", "AX104", "error", "/gradient_checkpointing", "gradient_checkpointing:", None,
     ("activation_checkpointing:", "/fsdp_config/activation_checkpointing")),
    ("AX105/bad.yaml", "AX105", "error", "/optimizer", "muon", None, ("deepspeed:", "/deepspeed")),
    ("AX106/bad.yaml", "AX106", "error", "/optimizer", "adamw_bnb_8bit", "adamw_torch_8bit",
     ("fsdp_config:", "/fsdp_config")),
    ("AX107/bad.yaml", "AX107", "error", "/fsdp_config", "fsdp_config:", None, ("base_model:", "/base_model")),
    ("AX108/bad.yaml", "AX108", "error", "/load_in_4bit", "load_in_4bit:", None, ("fsdp_config:", "/fsdp_config")),
    ("AX109/bad.yaml", "AX109", "error", "/fsdp_config", "fsdp_config:", None,
     ("expert_parallel_size:", "/expert_parallel_size")),
    ("AX110/bad_warmup.yaml", "AX110", "error", "/warmup_ratio", "warmup_ratio:", None, None),
    ("AX111/bad.yaml", "AX111", "warning", "/fp16", "fp16:", None, ("bf16:", "/bf16")),
    ("AX012/bad.yaml", "AX012", "warning", "/save_steps", "0100", None, None),
    ("AX112/bad.yaml", "AX112", "error", "/qat/weight_dtype", "int8", None, None),
    ("AX112/bad_nvfp4_group.yaml", "AX112", "error", "/qat/weight_dtype", "nvfp4", None, None),
    ("AX112/bad_embedding.yaml", "AX112", "error", "/qat/weight_dtype", "fp8", None, None),
    ("AX113/bad.yaml", "AX113", "error", "/lora_target_linear", "true", None, ("adapter:", "/adapter")),
    ("AX113/bad_ffn_targets.yaml", "AX113", "error", "/lora_target_modules", "- q_proj", None, ("adapter:", "/adapter")),
    ("AX114/bad.yaml", "AX114", "error", "/diffusion_lm/from_causal_lm", "  from_causal_lm:", None, None),
    ("AX114/bad_varlen.yaml", "AX114", "error", "/attn_implementation", "varlen", None, None),
    ("AX115/bad.yaml", "AX115", "error", "/dp_shard_size", "4", None, None),
    ("AX116/bad.yaml", "AX116", "error", "/gradient_accumulation_steps", "gradient_accumulation_steps", None, None),
    ("AX113/bad_tp_dpo.yaml", "AX113", "error", "/tensor_parallel_size", "2", None, ("rl:", "/rl")),
]


def _position(path, marker):
    line, column = marker_position(path, marker, skip_comments=True)
    if marker.startswith("  "):
        column += len(marker) - len(marker.lstrip())
    return line, column


@pytest.mark.parametrize("fixture,code,severity,pointer,marker,fix,related", BAD_CASES,
                         ids=[c[0] for c in BAD_CASES])
def test_bad_fixture_is_reported_at_the_right_place(fixture, code, severity, pointer, marker, fix, related):
    path = RULES / fixture
    status, output = check_json("--isolated", *WORLD.get(code, ()), str(path))
    (finding,) = findings_with_code(output, code)
    assert (finding["severity"], finding["pointer"], finding["file"]) == (severity, pointer, shown(path))
    assert (finding["line"], finding["column"]) == _position(path, marker)
    assert finding["fix"] == fix
    if related is None:
        assert "related" not in finding
    else:
        (other,) = finding["related"]
        assert other["file"] == shown(path) and other["pointer"] == related[1]
        assert (other["line"], other["column"]) == _position(path, related[0])
    assert status == (1 if severity == "error" else 0)


GOOD_CASES = sorted(RULES.glob("*/good*.yaml"))
# rules that judge against the launch's world size: their fixtures are checked with it given
WORLD = {"AX115": ("--world-size", "8")}


@pytest.mark.parametrize("path", GOOD_CASES, ids=[f"{p.parent.name}/{p.name}" for p in GOOD_CASES])
def test_good_fixture_is_clean(path):
    status, output = check_json("--isolated", *WORLD.get(path.parent.name, ()), str(path))
    assert findings_with_code(output, path.parent.name) == []
    assert [f for f in output["findings"] if f["severity"] == "error"] == []
    assert status == 0


def test_every_axolotl_rule_has_fixtures_and_documentation():
    codes = {rule.code for rule in all_rules() if rule.code.startswith("AX")}
    assert codes == {case[1] for case in BAD_CASES}
    for rule in all_rules():
        if rule.code.startswith("AX"):
            doc = rule.documentation()
            assert all(f"## {part}" in doc for part in ("What it does", "Why is this bad", "Example", "Use instead"))
            assert (RULES / rule.code / "good.yaml").exists()


@pytest.mark.parametrize("text, code", [
    ("fsdp_config:\n  version: 1\n", "AX102"),
    ("fsdp_config:\n  fsdp_forward_prefetch: true\n", "AX003"),
    ("gradient_checkpointing: offload\nfsdp_config:\n  fsdp_activation_checkpointing: true\n", "AX104"),
    ("optimizer: flash_adamw\ndeepspeed: z.json\n", "AX105"),
])
def test_more_spellings(tmp_path, text, code):
    path = tmp_path / "axolotl.yaml"
    path.write_text("base_model: m\nmicro_batch_size: 1\n" + text)
    status, output = check_json("--isolated", str(path))
    assert findings_with_code(output, code), output["findings"]


def test_activation_offloading_turns_trainer_checkpointing_off(tmp_path):
    path = tmp_path / "axolotl.yaml"
    path.write_text("base_model: m\nmicro_batch_size: 1\ngradient_checkpointing: true\nactivation_offloading: true\n"
                    "fsdp_config:\n  activation_checkpointing: true\n")
    status, output = check_json("--isolated", str(path))
    assert findings_with_code(output, "AX104") == []


@pytest.mark.parametrize("fixture, before, after", [
    ("AX001/bad.yaml", "warmup_step: 10", "warmup_steps: 10"),
    ("AX005/bad.yaml", "  fsdp_offload_params: true", "  offload_params: true"),
    ("AX006/bad.yaml", "save_strategy: no", "save_strategy: 'no'"),
    ("AX006/bad_none.yaml", "max_steps: None", "max_steps: null"),
    ("AX102/bad.yaml", "fsdp_version: 1", "fsdp_version: 2"),
    ("AX106/bad.yaml", "optimizer: adamw_bnb_8bit", "optimizer: adamw_torch_8bit"),
])
def test_fix_edits_one_line_and_clears_the_finding(tmp_path, fixture, before, after):
    from conftest import run_cli

    original = (RULES / fixture).read_text()
    path = tmp_path / "axolotl.yaml"
    path.write_text(original)
    (tmp_path / "requirements.txt").write_text("axolotl==0.21.0\n")  # judged by a release, as the fixtures are
    run_cli("check", "--isolated", "--fix", str(path))
    fixed = path.read_text()
    assert fixed == original.replace(before + "\n", after + "\n", 1)
    status, output = check_json("--isolated", str(path))
    assert findings_with_code(output, fixture.split("/")[0]) == []


def test_ax110_every_row_has_its_bad_fixture_and_reports_it_as_an_error_under_the_pin():
    """AX110's table (schema_checks.py) and its fixtures agree; under the folder's axolotl==0.21.0 pin
    each bad fixture is an error of its own row (the coverage-map oracle runs Axolotl on them)."""
    from shardshift.rules.axolotl.schema_checks import CHECKS

    folder = RULES / "AX110"
    assert {f"bad_{row.slug}.yaml" for row in CHECKS} == {p.name for p in folder.glob("bad_*.yaml")}
    _, output = check_json(str(folder))
    by_file: dict[str, list[dict]] = {}
    for finding in findings_with_code(output, "AX110"):
        by_file.setdefault(Path(finding["file"]).name, []).append(finding)
    for row in CHECKS:
        found = by_file.get(f"bad_{row.slug}.yaml", [])
        assert any(row.says in f["message"] and f["severity"] == "error" for f in found), (row.slug, found)
    assert not any(name.startswith("good") for name in by_file)


def test_ax110_without_a_pin_is_an_info_with_the_release_unknown(tmp_path):
    path = tmp_path / "train.yaml"
    path.write_text((RULES / "AX110" / "bad_warmup.yaml").read_text())
    _, output = check_json("--min-severity", "info", str(path))
    (finding,) = findings_with_code(output, "AX110")
    assert finding["severity"] == "info" and finding["unknown_context"]["kind"] == "release"
    assert "warmup_steps and warmup_ratio are mutually exclusive" in finding["message"]


@pytest.mark.parametrize("token,surprise", [
    ("0100", "the octal number 64"), ("010", "the octal number 8"), ("-010", "the octal number -8"),
    ("1:30", "the base-60 number 90"), ("07", None), ("00", None), ("100", None), ("0", None), ("0x10", None),
    ("2e-5", None), ("1_000", None),
])
def test_number_surprise_is_what_pyyaml_reads(token, surprise):
    """AX012's reading of a plain number, against PyYAML's own safe_load (the loader Axolotl uses)."""
    import yaml

    from shardshift.yaml11 import number_surprise

    value = yaml.safe_load(f"k: {token}")["k"]
    assert number_surprise(token, value) == surprise
    if surprise is not None:
        assert surprise.endswith(str(value))


def test_ax115_needs_the_world_and_a_parallelism_config(tmp_path):
    """AX115 judges only with the world size given and where Axolotl builds its parallelism config; with
    the ranks used up by the other sizes, or under DeepSpeed's Ulysses branch, the key is never refused."""
    base = (RULES / "AX115" / "bad.yaml").read_text()
    (tmp_path / "requirements.txt").write_text("axolotl==0.21.0\n")  # the release whose check this is
    cases = {
        "no_world": (base, ()),
        "used_up": (base, ("--world-size", "2")),
        "no_mesh": (base.replace("tensor_parallel_size: 2\n", ""), ("--world-size", "8")),
        "ulysses": (base.replace("tensor_parallel_size: 2", "context_parallel_size: 2\ndeepspeed: ds.json"),
                    ("--world-size", "8")),
        "muon": (base.replace("tensor_parallel_size: 2\n", "optimizer: muon\n"), ("--world-size", "8")),
    }
    found = {}
    for name, (text, world) in cases.items():
        (tmp_path / f"{name}.yaml").write_text(text)
        _, output = check_json("--isolated", "--select", "AX115", *world, str(tmp_path / f"{name}.yaml"))
        found[name] = [f["severity"] for f in output["findings"]]
    assert found == {"no_world": [], "used_up": [], "no_mesh": [], "ulysses": [], "muon": ["error"]}
