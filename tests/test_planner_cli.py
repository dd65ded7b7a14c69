"""`shardshift plan` through the real command line: the JSON contract (keys and types), exit codes,
units, the text table; and PL201 setup-does-not-fit in `check`."""

from __future__ import annotations

import json
import re

import pytest

from conftest import FIXTURES, check_json, run_cli

DS = FIXTURES / "deepspeed"
PL201 = FIXTURES / "plan" / "PL201"
MEGATRON = FIXTURES / "megatron" / "llama_8b_tp2_pp2.sh"
LLAMA_3_8B = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
              "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
              "tie_word_embeddings": False}
LLAMA_3_70B = {"model_type": "llama", "hidden_size": 8192, "num_hidden_layers": 80, "num_attention_heads": 64,
               "num_key_value_heads": 8, "intermediate_size": 28672, "vocab_size": 128256,
               "tie_word_embeddings": False}
NUMBER = (int, float)


def plan_json(*args: str) -> tuple[int, dict]:
    done = run_cli("plan", "--format", "json", *map(str, args))
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


@pytest.fixture(scope="module")
def zero2_8b():
    return plan_json(DS / "zero2_bf16_adamw.json", "--model-params", "8B", "--nodes", "1", "--gpus-per-node", "8",
                     "--gpu-memory", "80GB")


def test_the_json_contract(zero2_8b):
    status, report = zero2_8b
    assert status == 0
    assert {"memory", "communication", "recommendation", "assumptions", "setup", "model", "machine"} <= set(report)
    memory = report["memory"]
    assert {"per_gpu_bytes", "parts", "fits", "largest_micro_batch"} <= set(memory)
    assert isinstance(memory["per_gpu_bytes"], NUMBER) and memory["per_gpu_bytes"] > 0
    assert memory["fits"] is True
    assert memory["largest_micro_batch"] is None or isinstance(memory["largest_micro_batch"], int)
    assert {"parameters", "gradients", "optimizer_states"} <= set(memory["parts"])
    for name, part in memory["parts"].items():
        assert set(part) == {"bytes", "assumption"}, name
        assert isinstance(part["bytes"], NUMBER) and isinstance(part["assumption"], str) and part["assumption"]
    gpu_parts = sum(p["bytes"] for n, p in memory["parts"].items() if not n.startswith("cpu_"))
    assert gpu_parts == pytest.approx(memory["per_gpu_bytes"])
    communication = report["communication"]
    assert isinstance(communication["per_step"], list) and communication["per_step"]
    for traffic in communication["per_step"]:
        assert {"axis", "bytes", "seconds", "assumption"} <= set(traffic)
        assert isinstance(traffic["axis"], str) and isinstance(traffic["bytes"], NUMBER)
        assert traffic["seconds"] is None or isinstance(traffic["seconds"], NUMBER)
        assert isinstance(traffic["assumption"], str) and traffic["assumption"]
    assert "data-parallel" in {t["axis"] for t in communication["per_step"]}
    assert isinstance(communication["step_time_lower_bound_seconds"], NUMBER)
    recommendation = report["recommendation"]
    assert set(recommendation) >= {"choice", "why", "smallest_change"}
    assert isinstance(recommendation["choice"], str) and isinstance(recommendation["why"], str)
    assert recommendation["smallest_change"] is None  # it fits already
    assert isinstance(report["assumptions"], list) and all(isinstance(a, str) for a in report["assumptions"])
    assert report["setup"]["files"] == ["fixtures/deepspeed/zero2_bf16_adamw.json"]
    layout = report["setup"]["layout"]
    assert (layout["stage"], layout["world_size"], layout["data_parallel"], layout["engine"]) == (2, 8, 8, "deepspeed")
    assert report["model"]["parameters"] == 8_000_000_000 and report["model"]["source"] == "--model-params"
    assert report["machine"] == {"nodes": 1, "gpus_per_node": 8, "world_size": 8, "gpu_memory_bytes": 80_000_000_000,
                                 "bandwidth_bytes_per_second": 50_000_000_000,
                                 "intra_node_bandwidth_bytes_per_second": 450_000_000_000}
    # the defaults are stated as assumptions
    assert any("inter-node bandwidth not given" in a for a in report["assumptions"])


def test_zero2_model_states_of_8b_on_8_gpus(zero2_8b):
    """DeepSpeed's accounting for ZeRO-2 in bf16 with AdamW (its estimator: 2 bytes of 16-bit
    parameters whole, 18 bytes sharded 8 ways: 16-bit gradient, fp32 gradient copy, master, moments)."""
    parts = zero2_8b[1]["memory"]["parts"]
    assert parts["parameters"]["bytes"] == pytest.approx(16e9)
    states = sum(parts[n]["bytes"] for n in ("gradients", "master_weights", "optimizer_states"))
    assert states == pytest.approx(8e9 * 18 / 8)


def test_a_setup_that_does_not_fit_exits_1_only_with_the_gpu_memory():
    args = (PL201 / "bad.json", "--model-params", "70B", "--world-size", "8")
    status, report = plan_json(*args, "--gpu-memory", "80GB")
    assert status == 1 and report["memory"]["fits"] is False
    assert report["recommendation"]["smallest_change"]
    status, report = plan_json(*args)
    assert status == 0 and report["memory"]["fits"] is None and report["memory"]["largest_micro_batch"] is None
    assert any("GPU memory not given" in a for a in report["assumptions"])


@pytest.mark.parametrize(("option", "value", "key", "expected"), [
    ("--gpu-memory", "80GiB", "gpu_memory_bytes", 80 * 2**30),
    ("--gpu-memory", "40 GB", "gpu_memory_bytes", 40_000_000_000),
    ("--gpu-memory", "512MB", "gpu_memory_bytes", 512_000_000),
    ("--bandwidth", "200Gbps", "bandwidth_bytes_per_second", 25_000_000_000),
    ("--bandwidth", "25GB/s", "bandwidth_bytes_per_second", 25_000_000_000),
    ("--intra-node-bandwidth", "900GB/s", "intra_node_bandwidth_bytes_per_second", 900_000_000_000),
])
def test_units(option, value, key, expected):
    _, report = plan_json(DS / "zero2_bf16_adamw.json", "--model-params", "1.3e9", option, value)
    assert report["machine"][key] == expected
    assert report["model"]["parameters"] == 1_300_000_000


@pytest.mark.parametrize(("count", "parameters"), [("8e9", 8 * 10**9), ("8B", 8 * 10**9), ("70b", 70 * 10**9),
                                                   ("1.3T", 1_300 * 10**9)])
def test_parameter_counts(count, parameters):
    _, report = plan_json(DS / "zero2_bf16_adamw.json", "--model-params", count)
    assert report["model"]["parameters"] == parameters


def test_the_world_size_options_and_the_default():
    _, report = plan_json(DS / "zero2_bf16_adamw.json", "--model-params", "8B", "--world-size", "16")
    assert (report["machine"]["nodes"], report["machine"]["gpus_per_node"]) == (2, 8)
    assert any("16 GPUs as 2 node(s) × 8" in a for a in report["assumptions"])
    _, report = plan_json(DS / "zero2_bf16_adamw.json", "--model-params", "8B")
    assert report["machine"]["world_size"] == 8
    assert any("world size not given" in a for a in report["assumptions"])


@pytest.mark.parametrize("args", [
    ("--model-params", "8X"),
    ("--model-params", "8B", "--gpu-memory", "80XB"),
    ("--model-params", "8B", "--bandwidth", "fast"),
    ("--model-params", "8B", "--bandwidth", "0Gbps"),
    ("--model-params", "8B", "--gpu-memory", "0GB"),
    ("--model-params", "8B", "--model-config", "config.json"),
    ("--model-params", "8B", "--nodes", "2"),
    ("--model-params", "8B", "--nodes", "2", "--gpus-per-node", "8", "--world-size", "8"),
    ("--model-params", "8B", "--world-size", "0"),
    ("--model-params", "8B", "--format", "yaml"),
    (),  # no model: a ds_config states none
], ids=["count-unit", "size-unit", "bandwidth-unit", "bandwidth-0", "memory-0", "two-models", "nodes-alone", "world-disagrees", "world-0",
        "format", "no-model"])
def test_usage_errors_exit_2(args):
    done = run_cli("plan", DS / "zero2_bf16_adamw.json", *args)
    assert done.returncode == 2 and done.stdout == ""
    assert "shardshift" in done.stderr or "usage" in done.stderr


def test_a_missing_path_exits_2():
    done = run_cli("plan", "no/such/ds_config.json", "--model-params", "8B")
    assert done.returncode == 2 and "no such file" in done.stderr


def test_no_model_says_what_to_pass():
    done = run_cli("plan", DS / "zero2_bf16_adamw.json")
    assert done.returncode == 2 and "--model-params" in done.stderr and "--model-config" in done.stderr


def test_a_model_config(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps(LLAMA_3_8B))
    _, report = plan_json(DS / "zero2_bf16_adamw.json", "--model-config", config, "--gpu-memory", "80GB")
    assert report["model"]["parameters"] == 8_030_261_248
    assert report["model"]["layers"] == 32 and report["model"]["source"] == str(config)
    assert report["memory"]["parts"]["activations"]["bytes"] >= 0
    (tmp_path / "bad.json").write_text("{")
    done = run_cli("plan", DS / "zero2_bf16_adamw.json", "--model-config", tmp_path / "bad.json")
    assert done.returncode == 2 and "cannot read the model config" in done.stderr


def test_a_megatron_script_states_its_own_model():
    status, report = plan_json(MEGATRON, "--nodes", "2", "--gpus-per-node", "8", "--gpu-memory", "80GB")
    assert status == 0
    assert report["model"]["parameters"] == 8_030_261_248 and report["model"]["source"] == "the Plan"
    layout = report["setup"]["layout"]
    assert (layout["engine"], layout["tensor"], layout["pipeline"], layout["data_parallel"]) == ("megatron", 2, 2, 4)
    assert {"tensor", "pipeline"} <= {t["axis"] for t in report["communication"]["per_step"]}


def test_a_setup_of_several_files():
    folder = FIXTURES / "setups" / "accelerate_clean"
    _, one = plan_json(folder / "accelerate_config.yaml", "--model-params", "8B")
    _, both = plan_json(folder / "accelerate_config.yaml", folder / "ds_config.json", "--model-params", "8B")
    assert one["setup"]["files"] == both["setup"]["files"] == [
        "fixtures/setups/accelerate_clean/accelerate_config.yaml", "fixtures/setups/accelerate_clean/ds_config.json"]
    assert one["memory"] == both["memory"] and one["setup"]["layout"]["engine"] == "deepspeed"
    done = run_cli("plan", DS / "zero2_bf16_adamw.json", DS / "zero1_fp32_sgd.json", "--model-params", "8B")
    assert done.returncode == 2 and "2 setups" in done.stderr


def test_the_text_table():
    done = run_cli("plan", DS / "zero2_bf16_adamw.json", "--model-params", "8B", "--nodes", "1", "--gpus-per-node",
                   "8", "--gpu-memory", "80GB")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "memory per GPU" in text and "parameters" in text and "16.0 GB" in text
    assert "fits in 80.0 GB" in text
    assert "communication per optimizer step" in text and "data-parallel" in text
    assert "recommendation:" in text and "assumptions" in text
    done = run_cli("plan", PL201 / "bad.json", "--model-params", "70B", "--world-size", "8", "--gpu-memory", "80GB")
    assert done.returncode == 1 and "does NOT fit in 80.0 GB" in done.stdout
    assert "smallest change that fits:" in done.stdout


# --- PL201 setup-does-not-fit in check ---------------------------------------------------------

FIT = ("--gpu-memory", "24GB", "--model-params", "8B", "--world-size", "8")

PL201_CASES = [
    # fixture, options, severity, line, column, pointer, fix, message start
    # (the message as a pattern: the total and the change follow the planner's estimate, tested there)
    ("bad.json", FIT, "error", 6, 14, "/zero_optimization/stage", None,
     r"ZeRO-1 on 8 × 24 GB: \d+\.\d GB per GPU \(gradients 20\.0, parameters 16\.0, optimizer states 8\.0\) for 8B "
     r"parameters; stage 3 needs \d+ GB"),
    # the script states the model and the world (torchrun --nproc_per_node 8 --nnodes 1)
    ("bad_megatron.sh", ("--gpu-memory", "24GB"), "error", 19, 5, "--tensor-model-parallel-size", None,
     r"Megatron DDP with TP 2 on 8 × 24 GB: \d+\.\d GB per GPU \(optimizer states 32\.1, gradients 16\.1, master "
     r"weights 16\.1\) for 8\.03B parameters; .+ needs \d+ GB"),
]


@pytest.mark.parametrize(("name", "options", "severity", "line", "column", "pointer", "fix", "message"), PL201_CASES,
                         ids=[c[0] for c in PL201_CASES])
def test_pl201_case_table(name, options, severity, line, column, pointer, fix, message):
    status, output = check_json(*options, str(PL201 / name))
    (finding,) = [f for f in output["findings"] if f["code"] == "PL201"]
    assert status == 1
    assert (finding["severity"], finding["file"], finding["line"], finding["column"], finding["pointer"],
            finding["fix"]) == (severity, f"fixtures/plan/PL201/{name}", line, column, pointer, fix)
    assert re.fullmatch(message + r" \(`shardshift plan` shows the estimate\)", finding["message"]), finding["message"]


@pytest.mark.parametrize(("name", "options"), [("good.json", FIT), ("good_megatron.sh", ("--gpu-memory", "24GB"))])
def test_pl201_good_fixtures_fit(name, options):
    status, output = check_json(*options, str(PL201 / name))
    assert status == 0 and [f for f in output["findings"] if f["severity"] != "info"] == []


def test_pl201_names_the_smallest_change():
    _, output = check_json(*FIT, str(PL201 / "bad.json"))
    (finding,) = [f for f in output["findings"] if f["code"] == "PL201"]
    assert "stage 3" in finding["message"] or "ZeRO-3" in finding["message"], finding["message"]


@pytest.mark.parametrize("options", [
    ("--model-params", "8B", "--world-size", "8"),  # no GPU memory
    ("--gpu-memory", "24GB", "--world-size", "8"),  # no model (a ds_config states none)
    ("--gpu-memory", "24GB", "--model-params", "8B"),  # no world size
], ids=["no-memory", "no-model", "no-world"])
def test_pl201_is_silent_without_what_it_needs(options):
    status, output = check_json(*options, str(PL201 / "bad.json"))
    assert [f for f in output["findings"] if f["code"] == "PL201"] == []


def test_pl201_never_judges_auto_or_unknown(tmp_path):
    path = tmp_path / "ds_config.json"
    path.write_text(json.dumps({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": "auto"},
                                "optimizer": {"type": "AdamW"}, "zero_optimization": {"stage": 1}}))
    _, output = check_json(*FIT, str(path))
    assert [f for f in output["findings"] if f["code"] == "PL201"] == []
    path.write_text(json.dumps({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": True},
                                "optimizer": {"type": "AdamW"}, "zero_optimization": {"stage": "auto"}}))
    _, output = check_json(*FIT, str(path))
    assert [f for f in output["findings"] if f["code"] == "PL201"] == []


def test_pl201_without_an_optimizer_is_a_lower_bound(tmp_path):
    path = tmp_path / "ds_config.json"
    path.write_text(json.dumps({"train_micro_batch_size_per_gpu": 1, "bf16": {"enabled": True},
                                "zero_optimization": {"stage": 0}}))
    _, output = check_json(*FIT, str(path))
    (finding,) = [f for f in output["findings"] if f["code"] == "PL201"]
    assert "before any optimizer state (the setup names no optimizer)" in finding["message"]
    assert "optimizer states" not in finding["message"]


def test_pl201_from_the_configuration_file(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.shardshift]\ngpu-memory = "24GB"\nmodel-params = "8B"\n'
                                              "world-size = 8\n")
    (tmp_path / "ds_config.json").write_text((PL201 / "bad.json").read_text())
    status, output = check_json("ds_config.json", cwd=tmp_path)
    assert status == 1 and [f["code"] for f in output["findings"] if f["severity"] != "info"] == ["PL201"]


def test_pl201_with_a_model_config(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps(LLAMA_3_8B))
    _, output = check_json("--gpu-memory", "24GB", "--model-config", str(config), "--world-size", "8",
                           str(PL201 / "bad.json"))
    (finding,) = [f for f in output["findings"] if f["code"] == "PL201"]
    assert "8.03B parameters" in finding["message"]


def test_pl201_judges_an_auto_a_linked_file_fills(tmp_path):
    """An Axolotl config fills its ds_config's "auto" (bf16, micro batch): the merged setup is judged,
    on 2 nodes of 8 × 80 GB, at the ds_config's stage."""
    (tmp_path / "config.json").write_text(json.dumps(LLAMA_3_70B))
    (tmp_path / "axolotl.yaml").write_text("base_model: meta-llama/Meta-Llama-3-70B\nsequence_len: 4096\n"
                                           "micro_batch_size: 1\nbf16: true\ngradient_checkpointing: true\n"
                                           "optimizer: adamw_torch_fused\ndeepspeed: ds_zero3.json\n")
    (tmp_path / "ds_zero3.json").write_text(json.dumps({"train_micro_batch_size_per_gpu": "auto",
                                                        "bf16": {"enabled": "auto"},
                                                        "zero_optimization": {"stage": 3}}, indent=2))
    _, output = check_json("--gpu-memory", "80GB", "--model-config", "config.json", "--nodes", "2",
                           "--gpus-per-node", "8", "axolotl.yaml", cwd=tmp_path)
    (finding,) = [f for f in output["findings"] if f["code"] == "PL201"]
    assert (finding["file"], finding["pointer"]) == ("ds_zero3.json", "/zero_optimization/stage")
    assert finding["message"].startswith("ZeRO-3 on 2 × 8 × 80 GB: ")
    assert "for 70.6B parameters" in finding["message"]
    # without the Axolotl config, the ds_config's bf16 "auto" is not known before the run
    _, output = check_json("--gpu-memory", "80GB", "--model-config", "config.json", "--nodes", "2",
                           "--gpus-per-node", "8", "ds_zero3.json", cwd=tmp_path)
    assert [f for f in output["findings"] if f["code"] == "PL201"] == []


def test_report_of_a_bare_plan():
    """report.build takes a Plan as well as a setup (no files, the layout from the Plan alone)."""
    from shardshift.plan import Plan
    from shardshift.planner import report
    from shardshift.planner.types import Machine, Model

    plan = Plan()
    plan.set("sharding.stage", 3)
    plan.set("precision.param_dtype", "bf16")
    result = report.build(plan, Model(parameters=8_000_000_000, source="test"),
                          Machine(nodes=1, gpus_per_node=8, gpu_memory=80 * 10**9))
    assert result["setup"]["files"] == [] and result["setup"]["layout"]["stage"] == 3
    assert result["memory"]["fits"] is True
    assert json.loads(json.dumps(result)) == result  # plain JSON data
    assert "memory per GPU" in report.render_text(result)
