"""The Accelerate writer: same-format round trips change nothing (text and Plan, over the
corpus), a ds_config becomes an Accelerate FSDP2 config with a report for every setting, and
FSDP1 -> FSDP2 does what `accelerate to-fsdp2` does, comments kept, plus the report.
tests/test_accelerate_oracle.py loads every text `emitted_cases` returns with Accelerate's own
loader and builds its plugin."""

from __future__ import annotations

import pytest
import yaml
from deepdiff import DeepDiff
from hypothesis import given, settings
from hypothesis import strategies as st

from shardshift.formats import accelerate, deepspeed
from shardshift.formats.accelerate import writer

from conftest import CORPUS, FIXTURES, corpus_files, needs_corpus

DS_FIXTURES = sorted((FIXTURES / "deepspeed").glob("*.json"))

FSDP1 = """\
# trained on 2 nodes
compute_environment: LOCAL_MACHINE
distributed_type: FSDP
fsdp_config:
  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP
  fsdp_backward_prefetch: BACKWARD_PRE  # prefetch
  fsdp_cpu_ram_efficient_loading: true
  fsdp_forward_prefetch: false
  fsdp_offload_params: false
  # the strategy
  fsdp_sharding_strategy: HYBRID_SHARD
  fsdp_state_dict_type: LOCAL_STATE_DICT
  fsdp_sync_module_states: true
  fsdp_use_orig_params: true
  fsdp_version: 1
machine_rank: 0
mixed_precision: 'bf16'
num_machines: 2
num_processes: 16
"""


def emitted_cases() -> dict[str, str]:
    """Every Accelerate YAML the writer emits that the oracle must load: the corpus round trips,
    the conversions of the fixture ds_configs and the FSDP1 -> FSDP2 conversions."""
    out: dict[str, str] = {}
    for path in corpus_files("accelerate"):
        document = accelerate.read(path.read_text(), str(path))
        if document.plan is not None:
            out[f"roundtrip__{path.name}"] = writer.convert(document).text
            if (document.data.get("fsdp_config") or {}) and document.data.get("distributed_type") == "FSDP":
                out[f"fsdp2__{path.name}"] = writer.to_fsdp2(document).text
    for path in DS_FIXTURES:
        document = deepspeed.read(path.read_text(), str(path))
        out[f"from_ds__{path.stem}.yaml"] = writer.convert(document).text
    document = accelerate.read(FSDP1, "fsdp1.yaml")
    out["fsdp2__inline.yaml"] = writer.to_fsdp2(document).text
    for name, plan in resolved_plans().items():
        out[f"from_plan__{name}.yaml"] = writer.write(plan)
    out["setup__accelerate_clean.yaml"] = setup_to_fsdp2(SETUP / "accelerate_config.yaml").text
    return out


SETUP = FIXTURES / "setups" / "accelerate_clean"


def setup_to_fsdp2(path):
    """`convert PATH --to accelerate-fsdp2` as the CLI does it: the setup's merged Plan."""
    from shardshift.check import load
    from shardshift.formats.accelerate import fsdp2_target
    from shardshift.setup import build_setups

    document = load(str(path), explicit=True)
    (setup,) = [s for s in build_setups([document], lambda p: load(p, explicit=False)) if s.documents[0] is document]
    document.plan = setup.plan
    return fsdp2_target.convert(document)


def test_deepspeed_plugin_config_with_its_ds_config_becomes_fsdp2_keeping_the_machines():
    conversion = setup_to_fsdp2(SETUP / "accelerate_config.yaml")
    data = yaml.safe_load(conversion.text)
    assert data["distributed_type"] == "FSDP" and "deepspeed_config" not in data
    assert data["fsdp_config"]["fsdp_version"] == 2
    assert data["fsdp_config"]["fsdp_reshard_after_forward"] is True  # the ds_config's ZeRO-3
    assert data["mixed_precision"] == "bf16" and data["num_processes"] == 8
    statuses = {e.source: e.status for e in conversion.entries}
    assert statuses["/num_processes"] == "exact" and statuses["/deepspeed_config/zero3_init_flag"] == "approximate"


@needs_corpus
def test_corpus_round_trips_change_nothing():
    changed = {}
    for path in corpus_files("accelerate"):
        text = path.read_text()
        document = accelerate.read(text, str(path))
        if document.plan is None:
            continue
        conversion = writer.convert(document)
        again = accelerate.read(conversion.text, str(path))
        if conversion.text != text:
            changed[path.name] = "text"
        elif DeepDiff(document.plan, again.plan):
            changed[path.name] = DeepDiff(document.plan, again.plan)
        assert {e.status for e in conversion.entries} <= {"exact", "unknown"}
    assert changed == {}
    assert len(corpus_files("accelerate")) >= 75


def test_edited_plan_is_written_in_place_keeping_comments():
    text = FSDP1.replace("fsdp_version: 1", "fsdp_version: 2").replace("  fsdp_sharding_strategy: HYBRID_SHARD\n",
                                                                        "  fsdp_reshard_after_forward: true\n")
    document = accelerate.read(text, "a.yaml")
    document.plan.set("sharding.stage", 2, None)
    document.plan.set("world.world_size", 8, None)
    out = writer.convert(document).text
    assert "  fsdp_reshard_after_forward: false\n" in out and "num_processes: 8\n" in out
    assert "# trained on 2 nodes\n" in out and "# prefetch" in out and "mixed_precision: 'bf16'" in out
    again = accelerate.read(out, "a.yaml").plan
    assert (again.sharding.stage, again.world.world_size) == (2, 8)


def test_zero3_offload_becomes_fsdp2_with_a_report():
    path = next(p for p in DS_FIXTURES if "zero3_offload" in p.name)
    document = deepspeed.read(path.read_text(), str(path))
    conversion = writer.convert(document)
    data = yaml.safe_load(conversion.text)
    assert data["distributed_type"] == "FSDP"
    assert data["fsdp_config"]["fsdp_version"] == 2
    assert data["fsdp_config"]["fsdp_reshard_after_forward"] is True
    assert data["fsdp_config"]["fsdp_offload_params"] is True
    assert data["mixed_precision"] == "fp16"
    by_source = {e.source: e for e in conversion.entries}
    assert by_source["/zero_optimization/stage"].status == "exact"
    assert by_source["/zero_optimization/stage"].target == "fsdp_config.fsdp_reshard_after_forward"
    offload = by_source["/zero_optimization/offload_optimizer/device"]
    assert (offload.status, offload.target) == ("approximate", "fsdp_config.fsdp_offload_params")
    settings_ = {p for p, _, _ in document.settings()}
    assert settings_ <= set(by_source)
    assert by_source[""].status == "unknown"  # num_processes


def test_every_ds_fixture_converts_and_reports_every_setting():
    for path in DS_FIXTURES:
        document = deepspeed.read(path.read_text(), str(path))
        conversion = writer.convert(document)
        data = yaml.safe_load(conversion.text)
        assert data["fsdp_config"]["fsdp_version"] == 2
        stage = document.plan.sharding.stage
        if stage in (2, 3):
            assert data["fsdp_config"]["fsdp_reshard_after_forward"] is (stage == 3)
        reported = {e.source for e in conversion.entries}
        assert {p for p, _, _ in document.settings()} <= reported, path.name
        assert all(e.status in ("exact", "approximate", "dropped", "unknown") and e.reason for e in conversion.entries)


def test_fsdp1_to_fsdp2_does_what_accelerate_does_and_keeps_comments():
    document = accelerate.read(FSDP1, "fsdp1.yaml")
    conversion = writer.to_fsdp2(document)
    out = conversion.text
    data = yaml.safe_load(out)
    fsdp = data["fsdp_config"]
    assert fsdp["fsdp_version"] == 2
    assert fsdp["fsdp_reshard_after_forward"] is True
    for removed in ("fsdp_backward_prefetch", "fsdp_forward_prefetch", "fsdp_sync_module_states",
                    "fsdp_use_orig_params", "fsdp_sharding_strategy"):
        assert removed not in fsdp
    assert fsdp["fsdp_state_dict_type"] == "SHARDED_STATE_DICT"
    assert data["parallelism_config"] == {"parallelism_config_dp_replicate_size": 2,
                                          "parallelism_config_dp_shard_size": 8}
    assert "# trained on 2 nodes" in out and "# the strategy" in out and "mixed_precision: 'bf16'" in out
    assert list(fsdp)[:3] == ["fsdp_auto_wrap_policy", "fsdp_cpu_ram_efficient_loading", "fsdp_offload_params"]
    by_source = {e.source: e for e in conversion.entries}
    assert by_source["/fsdp_config/fsdp_sharding_strategy"].status == "approximate"
    assert by_source["/fsdp_config/fsdp_backward_prefetch"].status == "dropped"
    assert by_source["/fsdp_config/fsdp_use_orig_params"].status == "dropped"


@pytest.mark.oracle
def test_fsdp1_to_fsdp2_matches_accelerates_own_command_on_the_keys_it_handles():
    from accelerate.commands.to_fsdp2 import convert_config_to_fsdp2

    plain = FSDP1.replace("HYBRID_SHARD", "SHARD_GRAD_OP").replace("LOCAL_STATE_DICT", "FULL_STATE_DICT")
    ours = yaml.safe_load(writer.to_fsdp2(accelerate.read(plain, "x.yaml")).text)
    theirs = convert_config_to_fsdp2(yaml.safe_load(plain))
    assert ours == theirs


def test_fsdp2_files_and_files_without_fsdp_config_are_left_alone():
    text = FSDP1.replace("fsdp_version: 1", "fsdp_version: 2")
    assert writer.to_fsdp2(accelerate.read(text, "a.yaml")).text == text
    plain = "distributed_type: MULTI_GPU\nnum_processes: 2\n"
    assert writer.to_fsdp2(accelerate.read(plain, "b.yaml")).text == plain


STRATEGIES = st.sampled_from(["FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", 1, 2, 3])


@settings(max_examples=60, deadline=None)
@given(st.fixed_dictionaries({"strategy": STRATEGIES, "offload": st.booleans(), "ac": st.booleans(),
                              "mixed": st.sampled_from(["no", "bf16", "fp16"]), "procs": st.integers(1, 64)}))
def test_generated_fsdp1_configs_round_trip_and_convert(values):
    text = (f"distributed_type: FSDP\nmixed_precision: '{values['mixed']}'\nnum_machines: 1\n"
            f"num_processes: {values['procs']}\nfsdp_config:\n  fsdp_sharding_strategy: {values['strategy']}\n"
            f"  fsdp_offload_params: {str(values['offload']).lower()}\n"
            f"  fsdp_activation_checkpointing: {str(values['ac']).lower()}\n")
    document = accelerate.read(text, "gen.yaml")
    assert writer.convert(document).text == text
    converted = accelerate.read(writer.to_fsdp2(document).text, "gen2.yaml").plan
    plan = document.plan
    stage = {0: 2}.get(plan.sharding.stage, plan.sharding.stage)
    assert (converted.sharding.stage, converted.offload.params.device, converted.activation_checkpointing.enabled,
            converted.precision.param_dtype) == (stage, plan.offload.params.device,
                                                 plan.activation_checkpointing.enabled, plan.precision.param_dtype)


# --- writing the meaning of a resolved Plan (issue 21) ------------------------------------------------


def _plan(values: dict, default: dict | None = None):
    """A Plan as resolution leaves it: `values` set in a file, `default` filled as a framework's default."""
    from shardshift.plan import Plan
    from shardshift.resolve import default_location
    from shardshift.source import Location

    plan = Plan()
    for line, (dotted, value) in enumerate(values.items(), 1):
        assert plan.set(dotted, value, Location("src.toml", line, 1, f"/{dotted.replace('.', '/')}"))
    for dotted, value in (default or {}).items():
        assert plan.set(dotted, value, default_location("src.toml", "torchtitan", (0, 2, 2)))
    return plan


def resolved_plans() -> dict:
    return {
        "bf16_default_no_world": _plan({"parallelism.tensor": 1}, {"precision.param_dtype": "bf16",
                                                                   "sharding.stage": 3}),
        "tp2_cp2_world16": _plan({"world.world_size": 16, "parallelism.tensor": 2, "parallelism.context": 2,
                                  "sharding.stage": 2}, {"precision.param_dtype": "bf16"}),
        "fp32_hsdp": _plan({"world.nodes": 2, "world.gpus_per_node": 8, "parallelism.data_parallel_replicate": 2},
                           {"precision.param_dtype": "fp32", "sharding.stage": 3}),
    }


def _read_back(text: str):
    return accelerate.read(text, "a.yaml").plan


def test_a_plan_without_a_world_gets_the_num_processes_placeholder_and_an_unknown_entry():
    from shardshift.document import Document
    from shardshift.resolve import PLACEHOLDER

    plan = resolved_plans()["bf16_default_no_world"]
    document = Document(path="src.toml", format="torchtitan", text="", data={}, plan=plan)
    conversion = writer.convert(document)
    assert f"num_processes: {PLACEHOLDER}  # shardshift: the total number of processes" in conversion.text
    (entry,) = [e for e in conversion.entries if e.target == "num_processes"]
    assert (entry.status, entry.source, entry.line) == ("unknown", "", 1)
    assert entry.reason.startswith(f"placeholder {PLACEHOLDER}: fill in num_processes")
    assert _read_back(conversion.text).world.world_size is None
    filled = conversion.text.replace(f"num_processes: {PLACEHOLDER}", "num_processes: 4")
    assert _read_back(filled).world.world_size == 4


def test_a_defaulted_precision_is_written_explicitly_and_read_back():
    back = _read_back(writer.write(resolved_plans()["bf16_default_no_world"]))
    assert back.precision.param_dtype == "bf16"  # Accelerate's own default would be "no" (fp32)
    back = _read_back(writer.write(resolved_plans()["fp32_hsdp"]))
    assert back.precision.param_dtype == "fp32" and back.sharding.stage == 3


def test_an_unknown_precision_is_not_guessed():
    from shardshift.plan import Unknown

    plan = _plan({"world.world_size": 2, "precision.param_dtype": Unknown("bf16: auto depends on the GPU")})
    assert "mixed_precision" not in yaml.safe_load(writer.write(plan))


def test_the_mesh_becomes_a_parallelism_config_that_multiplies_to_the_world():
    back = _read_back(writer.write(resolved_plans()["tp2_cp2_world16"]))
    assert (back.world.world_size, back.parallelism.tensor, back.parallelism.context,
            back.parallelism.data_parallel_shard, back.sharding.stage) == (16, 2, 2, 4, 2)
    back = _read_back(writer.write(resolved_plans()["fp32_hsdp"]))
    assert (back.world.world_size, back.parallelism.data_parallel_replicate,
            back.parallelism.data_parallel_shard) == (16, 2, 8)


def test_without_a_world_no_mesh_is_invented_and_the_report_says_why():
    from shardshift.document import Document

    plan = _plan({"parallelism.tensor": 2, "parallelism.pipeline": 2, "optimizer.lr": 3e-4})
    conversion = writer.convert(Document(path="src.toml", format="torchtitan", text="", data={}, plan=plan))
    assert "parallelism_config" not in yaml.safe_load(conversion.text)
    by_source = {e.source: e for e in conversion.entries}
    assert by_source["/parallelism/tensor"].status == "dropped"
    assert "num_processes" in by_source["/parallelism/tensor"].reason
    assert "no pipeline parallelism" in by_source["/parallelism/pipeline"].reason
    assert "builds the optimizer" in by_source["/optimizer/lr"].reason


@needs_corpus
def test_no_blanket_entries_for_any_source():
    from shardshift import api

    for folder, suffix in (("torchtitan", ".toml"), ("axolotl", ".yaml"), ("megatron-scripts", ".sh"),
                           ("fsdp2", ".py")):
        for path in sorted((CORPUS / folder).glob("*" + suffix))[:4]:
            for target in ("accelerate", "accelerate-fsdp2"):
                migration = api.convert(str(path), target)
                blanket = [e for e in migration.entries if "key table" in e.reason or "carried through" in e.reason]
                assert blanket == [], (path.name, blanket[:1])


def test_a_deepspeed_plugin_config_without_num_processes_gets_the_placeholder():
    from shardshift.formats.accelerate import fsdp2_target
    from shardshift.resolve import PLACEHOLDER

    text = ("compute_environment: LOCAL_MACHINE\ndistributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 3\n"
            "mixed_precision: bf16\nnum_machines: 1\n")
    conversion = fsdp2_target.convert(accelerate.read(text, "ds.yaml"))
    data = yaml.safe_load(conversion.text)
    assert data["distributed_type"] == "FSDP" and data["num_processes"] == PLACEHOLDER
    assert data["fsdp_config"]["fsdp_reshard_after_forward"] is True and data["mixed_precision"] == "bf16"
    assert [e.target for e in conversion.entries if e.status == "unknown"] == ["num_processes"]
