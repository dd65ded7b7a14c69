"""The Axolotl config reader: values as Axolotl reads them, positions, precision, betas,
references, bad input, the precedence table, and the setups it forms with a ds_config."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shardshift.formats import axolotl, detect
from shardshift.plan import Unknown
from shardshift.source import Location

from conftest import FIXTURES, check_json, corpus_files, needs_corpus
from test_accelerate_reader import is_plan_field

LORA = FIXTURES / "axolotl" / "lora.yaml"
HEAD = "base_model: m\nmicro_batch_size: 1\n"


def read(text: str, path: str = "dir/axolotl.yaml"):
    return axolotl.read(text, path)


def test_lora_values_and_positions():
    document = axolotl.read(LORA.read_text(), str(LORA))
    plan = document.plan
    expected = {
        "batch.sequence_length": (4096, 9, "/sequence_len"),
        "batch.micro": (2, 11, "/micro_batch_size"),
        "batch.accumulation": (4, 12, "/gradient_accumulation_steps"),
        "optimizer.name": ("adamw_torch_fused", 14, "/optimizer"),
        "scheduler.name": ("cosine", 15, "/lr_scheduler"),
        "optimizer.lr": (2e-4, 16, "/learning_rate"),  # `2e-4` is a string to PyYAML; Axolotl converts it
        "optimizer.weight_decay": (0.0, 17, "/weight_decay"),
        "optimizer.betas": ([0.9, 0.95], 18, "/adam_beta2"),  # adam_beta1 is the TrainingArguments default
        "scheduler.warmup_steps": (10, 19, "/warmup_steps"),
        "gradient_clipping": (1.0, 20, "/max_grad_norm"),
    }
    for dotted, (value, line, pointer) in expected.items():
        assert plan.get(dotted) == value, dotted
        where = plan.provenance[dotted]
        assert (where.file, where.line, where.column, where.pointer) == (str(LORA), line, len(pointer) + 2, pointer)
    assert document.data["learning_rate"] == "2e-4"
    dtype = plan.precision.param_dtype
    assert isinstance(dtype, Unknown) and dtype.reason.startswith("bf16: auto depends on the GPU")
    assert dtype.where == Location(str(LORA), 21, 7, "/bf16")
    rest = plan.passthrough["axolotl"]
    assert rest["base_model"] == "NousResearch/Meta-Llama-3-8B" and rest["adapter"] == "lora"
    assert rest["datasets"] == [{"path": "mhenrichsen/alpaca_2k_test", "type": "alpaca"}]
    assert not {"micro_batch_size", "learning_rate", "adam_beta2", "bf16"} & set(rest)
    assert document.references == []


@pytest.mark.parametrize("flags, expected", [
    ("bf16: true\n", "bf16"), ("bf16: false\nfp16: true\n", "fp16"), ("bf16: auto\nfp16: true\n", "fp16"),
    ("bf16: false\n", "fp32"), ("bf16: false\nfp16: false\n", "fp32"), ("fp8: true\nbf16: true\n", "fp8"),
    ("", None), ("fp16: false\n", None),
])
def test_precision(flags, expected):
    assert read(HEAD + flags).plan.precision.param_dtype == expected


def test_bf16_auto_is_unknown():
    assert isinstance(read(HEAD + "bf16: auto\n").plan.precision.param_dtype, Unknown)


@pytest.mark.parametrize("written, expected", [
    ("adam_beta1: 0.8\nadam_beta2: 0.9\n", [0.8, 0.9]),
    ("adam_beta1: 0.8\n", [0.8, 0.999]),
    ("adam_beta2: 0.95\n", [0.9, 0.95]),
    ("adam_beta2: 0.95\noptimizer: came_pytorch\n", None),  # Axolotl's own optimizers get betas only with both
    ("adam_beta1: 0.8\nadam_beta2: 0.9\noptimizer: came_pytorch\n", [0.8, 0.9]),
])
def test_betas(written, expected):
    plan = read(HEAD + written).plan
    assert plan.get("optimizer.betas") == expected
    if expected is None:
        assert plan.passthrough["axolotl"]["adam_beta2"] == 0.95


def test_warmup_steps_1_is_bumped_to_2_as_axolotl_does():
    assert read(HEAD + "warmup_steps: 1\n").plan.scheduler.warmup_steps == 2


def test_values_of_the_wrong_type_stay_in_the_passthrough():
    plan = read(HEAD + "gradient_accumulation_steps: yes\nlearning_rate: fast\nsequence_len: 2.5\n").plan
    assert plan.batch.accumulation is None and plan.get("optimizer.lr") is None and plan.batch.sequence_length is None
    assert plan.passthrough["axolotl"]["gradient_accumulation_steps"] is True


def test_deepspeed_path_is_a_reference(tmp_path, monkeypatch):
    (tmp_path / "examples" / "deepspeed_configs").mkdir(parents=True)
    (tmp_path / "examples" / "deepspeed_configs" / "zero2.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    document = read(HEAD + "deepspeed: deepspeed_configs/zero2.json\n", os.path.join("examples", "llama.yml"))
    (reference,) = document.references
    assert reference.resolved == os.path.join("examples", "deepspeed_configs", "zero2.json")
    assert (reference.where.line, reference.where.column, reference.where.pointer) == (3, 12, "/deepspeed")
    assert document.plan.passthrough["axolotl"]["deepspeed"] == "deepspeed_configs/zero2.json"


def test_deepspeed_env_var_is_not_resolved():
    (reference,) = read(HEAD + "deepspeed: ${DEEPSPEED}\n").references
    assert reference.resolved is None and "DEEPSPEED" in reference.unknown


def test_inline_deepspeed_dict_is_no_reference():
    document = read(HEAD + "deepspeed:\n  zero_optimization:\n    stage: 3\n")
    assert document.references == []
    assert document.plan.passthrough["axolotl"]["deepspeed"] == {"zero_optimization": {"stage": 3}}


@pytest.mark.parametrize("text", ["base_model: m\ndatasets: [\n", "base_model: m\n datasets: x\n y: 1\n",
                                  "base_model: 'm\n", "[base_model, datasets]\n"])
def test_bad_yaml_is_a_syntax_problem(text):
    document = read(text)
    assert document.syntax is not None and document.plan is None


def test_detection():
    assert detect("a/llama.yml", "base_model: m\ndatasets:\n  - path: x\n") == "axolotl"
    assert detect("a/llama.yml", "base_model: m\n") is None  # needs a second typical key
    assert detect("a/llama.json", "base_model: m\ndatasets: []\n") is None
    assert detect("a/model.yaml", "model:\n  base_model: m\n  datasets: []\n") is None


def test_precedence_table():
    table = axolotl.PRECEDENCE
    for dotted in table:
        assert is_plan_field(dotted), dotted
    mismatch = {"batch.micro", "batch.accumulation", "gradient_clipping", "optimizer.lr", "optimizer.betas",
                "optimizer.eps", "optimizer.weight_decay", "precision.param_dtype"}
    assert {d for d, p in table.items() if p.outcome == "mismatch"} == mismatch
    assert {d for d, p in table.items() if p.outcome == "referenced"} == {"optimizer.name", "scheduler.name"}
    assert all("mismatch TrainingArguments values" in table[d].says for d in mismatch)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=300) | st.lists(st.sampled_from(
    ["base_model: m", "datasets:", "  - path: x", "bf16: auto", "fp16: yes", "adam_beta1: .9", "adam_beta2: x",
     "learning_rate: 2e-5", "warmup_steps: 1", "deepspeed: ${X}", "deepspeed: z.json", "deepspeed: {a: 1}",
     "optimizer: came_pytorch", "<<: {a: 1}", "&a", "*a", "'", "\t", "[", "micro_batch_size: -3"]),
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
    files = corpus_files("axolotl")
    assert len(files) == 83
    for path in files:
        text = path.read_text(encoding="utf-8-sig")
        assert axolotl.looks_like(str(path), text), path
        document = axolotl.read(text, str(path))
        assert document.syntax is None, (path, document.syntax)
        assert document.data == yaml.safe_load(text), path


@pytest.mark.parametrize("folder, code, severity, line, pointer, related", [
    ("axolotl_mismatch", "PL001", "error", 6, "/micro_batch_size", (2, "/train_micro_batch_size_per_gpu")),
    ("axolotl_optimizer_ignored", "PL001", "warning", 9, "/optimizer", (10, "/optimizer/type")),
])
def test_setup_conflict_is_one_finding_with_both_places(folder, code, severity, line, pointer, related):
    status, out = check_json("--isolated", f"fixtures/setups/{folder}")
    (finding,) = out["findings"]
    assert (finding["code"], finding["severity"], finding["file"], finding["line"], finding["pointer"]) == (
        code, severity, f"fixtures/setups/{folder}/axolotl.yaml", line, pointer)
    (other,) = finding["related"]
    assert other["file"].endswith(f"fixtures/setups/{folder}/ds_config.json")
    assert (other["line"], other["pointer"]) == related
    assert status == (1 if severity == "error" else 0)


def test_setup_auto_is_clean():
    status, out = check_json("--isolated", "fixtures/setups/axolotl_auto")
    assert status == 0 and out["findings"] == []
    assert {f["format"] for f in out["files"]} == {"axolotl", "deepspeed"}


@pytest.mark.parametrize("written, dotted, expected", [
    ("tensor_parallel_size: 2\n", "parallelism.tensor", 2),
    ("context_parallel_size: 4\n", "parallelism.context", 4),
    ("sequence_parallel_degree: 4\n", "parallelism.context", 4),  # Axolotl copies the deprecated alias
    ("sequence_parallel_degree: 4\ncontext_parallel_size: 2\n", "parallelism.context", 2),
    ("dp_shard_size: 8\ndp_replicate_size: 2\n", "parallelism.data_parallel_shard", 8),
    ("dp_shard_size: 8\ndp_replicate_size: 2\n", "parallelism.data_parallel_replicate", 2),
    ("gradient_checkpointing: true\n", "activation_checkpointing.enabled", True),
    ("gradient_checkpointing: offload\n", "activation_checkpointing.enabled", True),  # rewritten to true
    ("fsdp_config:\n  activation_checkpointing: true\n", "activation_checkpointing.enabled", True),
    ("fsdp_config:\n  reshard_after_forward: false\n", "sharding.reshard_after_forward", False),
    ("fsdp_config:\n  fsdp_reshard_after_forward: false\n", "sharding.reshard_after_forward", False),
    # the later of the prefixed and the unprefixed spelling wins, as Axolotl rebuilds the mapping in order
    ("fsdp_config:\n  reshard_after_forward: true\n  fsdp_reshard_after_forward: false\n",
     "sharding.reshard_after_forward", False),
    ("fsdp_config:\n  offload_params: true\n  cpu_offload_pin_memory: false\n", "offload.params.device", "cpu"),
    ("fsdp_config:\n  offload_params: true\n  cpu_offload_pin_memory: false\n", "offload.params.pin_memory", False),
])
def test_distributed_keys(written, dotted, expected):
    plan = read(HEAD + written).plan
    assert plan.get(dotted) == expected
    assert plan.provenance[dotted].line >= 3
