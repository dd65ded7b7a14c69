"""Issue 14: shardshift agrees with DeepSpeed on the cases DeepSpeed's own test suite showed.

Each case goes through the real CLI (`check --format json`, one run per set of arguments over a
folder of generated files) and the verdict is compared with the one DeepSpeed 0.19.8 gives, in the
same test: `DeepSpeedConfig` (tests/oracles.py `deepspeed_accepts`) for what DeepSpeed decides
while it parses the config, `deepspeed.initialize` on the CPU (tests/deepspeed_initialize_oracle.py,
one child process for every case) for what it decides when it builds the engine.

- removed keys know their version: 0.19.7 started rejecting nebula, compression_training,
  quantize_training, sparse_attention and the MiCS keys, 0.19.8 amp, sparse_gradients, eigenvalue,
  elasticity, graph_harvesting, curriculum_learning, progressive_layer_drop and zeropp_loco_param
  (DeepSpeed's `_REMOVED_TOP_LEVEL_CONFIG_KEYS` / `_REMOVED_ZERO_CONFIG_KEYS`, absent from 0.19.6);
  with `--deepspeed-version 0.19.6` none of them is an error;
- null and coerced values DeepSpeed takes are accepted, and the key table's NULLABLE / STR_TO_LIST
  sets equal what DeepSpeed's pydantic section models accept (probed field by field);
- the checks DeepSpeed performs: load_balance_coeff (DS444), param_dtype against the fp16/bf16
  flags (DS445), OneCycle step sizes <= 0 (DS440), warmup_num_steps null (DS415);
- an elasticity-only ds_config is read as a ds_config (every top-level key is a DeepSpeed key),
  while a walk still skips package.json, tsconfig.json and a JSON Schema.

DeepSpeed is imported once per module (`oracles.deepspeed_module`); under CI=true a missing
DeepSpeed fails instead of skipping (`oracles.require_installed`).
"""

from __future__ import annotations

import importlib
import json
import typing
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pytest

from shardshift.formats.deepspeed.keys import KEYS, NULLABLE, STR_TO_LIST, key_index

import oracles
from conftest import check_json

pytestmark = pytest.mark.oracle

BATCH = {"train_micro_batch_size_per_gpu": 1, "gradient_clipping": 1.0}
ADAMW = {"type": "AdamW", "params": {"lr": 0.001}}
CPU = {"device": "cpu"}  # offload_optimizer to the CPU
Z = "/zero_optimization"


@dataclass(frozen=True)
class Case:
    """A ds_config, the error codes shardshift must report (none: no error at all), and where
    DeepSpeed 0.19.8 decides: "parse" (DeepSpeedConfig), "initialize" (deepspeed.initialize) or "step" (the
    first training steps after it);
    `refused` is the verdict and `error` a text of DeepSpeed's message when it refuses."""

    name: str
    config: dict
    errors: tuple[tuple[str, str], ...]  # (code, pointer)
    oracle: str
    refused: bool
    error: str = ""
    file: str = ""  # the file name, when it matters ("" -> ds_config_<name>.json)

    @property
    def filename(self) -> str:
        return self.file or f"ds_config_{self.name}.json"


ELASTICITY = {"enabled": True, "max_train_batch_size": 64, "micro_batch_sizes": [2, 4], "min_gpus": 1,
              "max_gpus": 8, "min_time": 0, "version": 0.1}

CASES = [
    # An elasticity-only ds_config under a name that does not say "ds_config": read by its keys.
    Case("elasticity_only", {"elasticity": ELASTICITY}, (("DS101", "/elasticity"),), "parse", True,
         "Elastic training has been removed", file="elastic.json"),
    # null where DeepSpeed takes it (the default), a string where it takes a list.
    Case("offload_null", {**BATCH, "zero_optimization": {"stage": 3, "offload_param": None, "offload_optimizer": None,
                                                         "stage3_gather_16bit_weights_on_model_save": True}},
         (), "parse", False),
    Case("grad_accum_dtype_null", {**BATCH, "data_types": {"grad_accum_dtype": None}}, (), "parse", False),
    Case("param_buffer_dtype_null", {**BATCH, "data_types": {"param_dtype": None, "buffer_dtype": None}}, (),
         "parse", False),
    Case("leaf_module_string", {**BATCH, "zero_optimization": {
        "stage": 3, "stage3_gather_16bit_weights_on_model_save": True,
        "leaf_module": {"classes": "MyMoEBlock", "names": "layers.0.mlp", "name_suffixes": "mlp"}}}, (), "parse", False),
    Case("leaf_module_null", {**BATCH, "zero_optimization": {"stage": 3, "stage3_gather_16bit_weights_on_model_save": True,
                                                             "leaf_module": None}}, (), "parse", False),
    Case("overlap_comm_null", {**BATCH, "zero_optimization": {"stage": 2, "overlap_comm": None}}, (), "parse", False),
    # A value DeepSpeed does not take stays an error.
    Case("offload_string", {**BATCH, "zero_optimization": {"stage": 3, "offload_param": "cpu",
                                                           "stage3_gather_16bit_weights_on_model_save": True}},
         (("DS102", Z + "/offload_param"),), "parse", True, "ValidationError"),
    Case("leaf_module_number", {**BATCH, "zero_optimization": {"stage": 3, "stage3_gather_16bit_weights_on_model_save": True,
                                                               "leaf_module": {"classes": 3}}},
         (("DS102", Z + "/leaf_module/classes"),), "parse", True, "ValidationError"),
    # MoE: load_balance_coeff (DS444).
    Case("load_balance_coeff", {**BATCH, "expert_parallel": {"enabled": False, "load_balance_coeff": 0.001}},
         (("DS444", "/expert_parallel/load_balance_coeff"),), "parse", True, "load_balance_coeff=0.001 is not supported"),
    Case("load_balance_coeff_zero", {**BATCH, "expert_parallel": {"load_balance_coeff": 0}},
         (("DS444", "/expert_parallel/load_balance_coeff"),), "parse", True, "load_balance_coeff=0 is not supported"),
    Case("load_balance_coeff_null", {**BATCH, "expert_parallel": {"enabled": False, "load_balance_coeff": None}},
         (), "parse", False),
    # data_types.param_dtype against the fp16/bf16 flags (DS445), at deepspeed.initialize.
    Case("param_dtype_contradicts_fp32", {**BATCH, "optimizer": ADAMW, "data_types": {"param_dtype": "bf16"}},
         (("DS445", "/data_types/param_dtype"),), "initialize", True, "conflicts with the enabled precision mode"),
    Case("param_dtype_contradicts_bf16", {**BATCH, "optimizer": ADAMW, "bf16": {"enabled": True},
                                          "data_types": {"param_dtype": "fp32"}},
         (("DS445", "/data_types/param_dtype"),), "initialize", True, "conflicts with the enabled precision mode"),
    Case("param_dtype_unknown", {**BATCH, "optimizer": ADAMW, "data_types": {"param_dtype": "FP32"}},
         (("DS445", "/data_types/param_dtype"),), "initialize", True, "is not a valid DtypeEnum"),
    Case("param_dtype_agrees", {**BATCH, "optimizer": ADAMW, "bf16": {"enabled": True},
                                "data_types": {"param_dtype": "bfloat16"}}, (), "initialize", False),
    Case("param_dtype_agrees_fp32", {**BATCH, "optimizer": ADAMW, "data_types": {"param_dtype": "float32"}}, (),
         "initialize", False),
    # Scheduler values DeepSpeed refuses when it builds the scheduler (DS440, DS415: verified here).
    Case("onecycle_first_step_zero", {**BATCH, "optimizer": ADAMW, "scheduler": {"type": "OneCycle", "params": {
        "cycle_min_lr": 0.0001, "cycle_max_lr": 0.001, "cycle_first_step_size": 0, "cycle_momentum": False}}},
         (("DS440", "/scheduler/params/cycle_first_step_size"),), "initialize", True, "cycle_first_step_size"),
    Case("onecycle_second_step_negative", {**BATCH, "optimizer": ADAMW, "scheduler": {"type": "OneCycle", "params": {
        "cycle_min_lr": 0.0001, "cycle_max_lr": 0.001, "cycle_first_step_size": 10, "cycle_second_step_size": -5,
        "cycle_momentum": False}}},
         (("DS440", "/scheduler/params/cycle_second_step_size"),), "initialize", True, "cycle_second_step_size"),
    Case("warmup_num_steps_null", {**BATCH, "optimizer": ADAMW, "scheduler": {"type": "WarmupLR", "params": {
        "warmup_num_steps": None}}},
         (("DS415", "/scheduler/params/warmup_num_steps"),), "initialize", True, "warmup_num_steps"),
    # Sections read with .get and None as the default: null trains (two steps); gradient_clipping does not.
    Case("dict_get_nulls", {**BATCH, "optimizer": ADAMW, "bf16": None, "aio": None, "expert_parallel": None,
                            "communication_data_type": None, "steps_per_print": None}, (), "initialize", False),
    Case("gradient_clipping_null", {**BATCH, "optimizer": ADAMW, "gradient_clipping": None},
         (("DS102", "/gradient_clipping"),), "step", True, "not supported between instances of 'NoneType'"),
    # dtype names: DeepSpeed's DtypeEnum, case-sensitive, wherever DeepSpeed converts one.
    Case("grad_accum_dtype_bfloat16", {**BATCH, "optimizer": ADAMW, "bf16": {"enabled": True},
                                       "data_types": {"grad_accum_dtype": "bfloat16"}}, (), "initialize", False),
    Case("grad_accum_dtype_upper", {**BATCH, "optimizer": ADAMW, "bf16": {"enabled": True},
                                    "data_types": {"grad_accum_dtype": "BF16"}},
         (("DS102", "/data_types/grad_accum_dtype"),), "initialize", True, "'BF16' is not a valid DtypeEnum"),
    Case("grad_accum_dtype_without_zero", {**BATCH, "optimizer": ADAMW, "bf16": {"enabled": True},
                                           "data_types": {"grad_accum_dtype": "fp32"}},
         (("DS447", "/data_types/grad_accum_dtype"),), "initialize", True,
         "unsupported mix of model_dtype=torch.bfloat16 and grad_accum_dtype=torch.float32"),
    Case("grad_accum_dtype_fp32_model_without_zero", {**BATCH, "optimizer": ADAMW,
                                                      "data_types": {"grad_accum_dtype": "bf16"}},
         (("DS447", "/data_types/grad_accum_dtype"),), "initialize", True,
         "unsupported mix of model_dtype=torch.float32 and grad_accum_dtype=torch.bfloat16"),
    Case("grad_accum_dtype_with_zero", {**BATCH, "optimizer": ADAMW, "bf16": {"enabled": True},
                                        "zero_optimization": {"stage": 1}, "data_types": {"grad_accum_dtype": "fp32"}},
         (), "initialize", False),
    Case("grad_accum_dtype_int8", {**BATCH, "optimizer": ADAMW, "data_types": {"grad_accum_dtype": "int8"}},
         (("DS102", "/data_types/grad_accum_dtype"),), "initialize", True, "unsupported mix"),
    Case("autocast_dtype_unknown", {**BATCH, "torch_autocast": {"enabled": False, "dtype": "bf"}},
         (("DS102", "/torch_autocast/dtype"),), "parse", True, "'bf' is not a valid DtypeEnum"),
    Case("autocast_modules_not_strings", {**BATCH, "torch_autocast": {"enabled": True,
                                                                      "lower_precision_safe_modules": ["torch.nn.Linear", 1]}},
         (("DS102", "/torch_autocast/lower_precision_safe_modules/1"),), "parse", True, "Expected list of strings"),
    Case("keep_in_fp32_string", {**BATCH, "data_types": {"keep_in_fp32_modules": "lm_head"}},
         (("DS102", "/data_types/keep_in_fp32_modules"),), "parse", True, "must be \"auto\" or a list"),
    Case("keep_in_fp32_null", {**BATCH, "data_types": {"keep_in_fp32_modules": None}},
         (("DS102", "/data_types/keep_in_fp32_modules"),), "parse", True, "must be \"auto\" or a list"),
    Case("keep_in_fp32_list", {**BATCH, "data_types": {"keep_in_fp32_modules": ["lm_head", "norm"]}}, (), "parse",
         False),
    # ZenFlow's validator and field bounds (ZenFlow at ZeRO-1/2 needs the optimizer offloaded to the CPU: DS340).
    Case("zenflow_update_interval_zero", {**BATCH, "zero_optimization": {"stage": 2, "offload_optimizer": CPU, "zenflow": {"update_interval": 0}}},
         (("DS102", Z + "/zenflow/update_interval"),), "parse", True, "update_interval is a number"),
    Case("zenflow_select_interval_word", {**BATCH, "zero_optimization": {"stage": 2, "offload_optimizer": CPU, "zenflow": {"select_interval": "step"}}},
         (("DS102", Z + "/zenflow/select_interval"),), "parse", True, "select_interval is a str"),
    Case("zenflow_topk_ratio_one", {**BATCH, "zero_optimization": {"stage": 2, "offload_optimizer": CPU, "zenflow": {"topk_ratio": 1}}},
         (("DS102", Z + "/zenflow/topk_ratio"),), "parse", True, "less than 1"),
    Case("zenflow_auto", {**BATCH, "zero_optimization": {"stage": 2, "offload_optimizer": CPU,
                                                         "zenflow": {"select_interval": "auto",
                                                                                 "update_interval": "auto"}}},
         (), "parse", False),
    # ZenFlowConfig's `Union[str, int]` interval makes 4.0 the number 4, which the auto strategy refuses (DS340).
    Case("zenflow_select_interval_float", {**BATCH, "optimizer": ADAMW, "zero_optimization": {
        "stage": 2, "offload_optimizer": CPU, "zenflow": {"select_interval": 4.0}}},
         (("DS340", Z + "/zenflow/select_interval"),), "initialize", True, "If use auto select strategy"),
    # No lower bound in DeepSpeed: a negative value trains.
    Case("negative_thresholds", {**BATCH, "optimizer": ADAMW, "tensor_parallel": {"autotp_size": -1},
                                 "zero_optimization": {"stage": 3, "stage3_gather_16bit_weights_on_model_save": True,
                                                       "stage3_module_granularity_threshold": -5}},
         (), "initialize", False),
    # AutoEP values deepspeed.initialize refuses when expert parallelism is enabled (DS446).
    Case("ep_comm_num_sm", {**BATCH, "optimizer": ADAMW, "expert_parallel": {"enabled": True, "comm_num_sm": 0}},
         (("DS446", "/expert_parallel/comm_num_sm"),), "initialize", True, "comm_num_sm must be a positive integer"),
    Case("ep_qp_margin", {**BATCH, "optimizer": ADAMW, "expert_parallel": {"enabled": True, "comm_qp_margin": -1}},
         (("DS446", "/expert_parallel/comm_qp_margin"),), "initialize", True, "comm_qp_margin must be a non-negative"),
    Case("ep_score_func", {**BATCH, "optimizer": ADAMW, "expert_parallel": {"enabled": True, "score_func": "sigmod"}},
         (("DS446", "/expert_parallel/score_func"),), "initialize", True, "score_func must be one of"),
    Case("ep_groups", {**BATCH, "optimizer": ADAMW, "expert_parallel": {"enabled": True, "num_expert_groups": 4,
                                                                       "num_limited_groups": 8}},
         (("DS446", "/expert_parallel/num_limited_groups"),), "initialize", True,
         "num_limited_groups (8) must be <= num_expert_groups (4)"),
    Case("ep_folding_flag", {**BATCH, "optimizer": ADAMW, "expert_parallel": {"enabled": True,
                                                                             "validate_folding_routing": "yes"}},
         (("DS446", "/expert_parallel/validate_folding_routing"),), "initialize", True, "must be a boolean"),
    Case("ep_deepep_tokens", {**BATCH, "optimizer": ADAMW, "expert_parallel": {"enabled": True, "comm_backend": "deepep"}},
         (("DS446", "/expert_parallel/comm_backend"),), "initialize", True,
         "comm_max_tokens_per_rank must be a positive integer when comm_backend='deepep'"),
    Case("ep_good", {**BATCH, "optimizer": ADAMW, "expert_parallel": {
        "enabled": True, "comm_num_sm": 12, "score_func": "sigmoid", "num_expert_groups": 8, "num_limited_groups": 4}},
         (), "initialize", False),
    Case("ep_disabled", {**BATCH, "optimizer": ADAMW, "expert_parallel": {"enabled": False, "comm_num_sm": 0,
                                                                         "score_func": "x"}}, (), "initialize", False),
]
CASE_IDS = [case.name for case in CASES]

# Removed keys, each alone in an otherwise valid config: the key table's rows with a version.
REMOVED = [key for key in KEYS if key.removed_in is not None]
OLD, SEVEN, NEWEST = "0.19.6", "0.19.7", "0.19.8"


def _removed_config(pointer: str) -> dict:
    value = {"enabled": False} if key_index()[pointer].type == "object" else False
    if pointer == Z + "/mics_shard_size":
        value = -1
    if pointer.startswith(Z + "/"):
        return {**BATCH, "zero_optimization": {"stage": 3, "stage3_gather_16bit_weights_on_model_save": True,
                                               pointer.rsplit("/", 1)[1]: value}}
    return {**BATCH, pointer[1:]: value}


@pytest.fixture(scope="module")
def deepspeed():
    oracles.require_installed("deepspeed", "torch")
    return oracles.deepspeed_module()


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """Every case and every removed-key config as a file, in one folder."""
    root = tmp_path_factory.mktemp("agreement")
    for case in CASES:
        (root / case.filename).write_text(json.dumps(case.config, indent=2), encoding="utf-8")
    for key in REMOVED:
        name = key.path[1:].replace("/", "_")
        (root / f"ds_config_removed_{name}.json").write_text(json.dumps(_removed_config(key.path), indent=2),
                                                             encoding="utf-8")
    return root


@lru_cache(maxsize=None)
def _run(folder: str, *args: str) -> dict[str, list[dict]]:
    _, output = check_json(*args, folder)
    found: dict[str, list[dict]] = {Path(entry["path"]).name: [] for entry in output["files"]}
    for finding in output["findings"]:
        found.setdefault(Path(finding["file"]).name, []).append(finding)
    return found


def findings(folder: Path, name: str, *args: str) -> list[dict]:
    found = _run(str(folder), *args)
    assert name in found, f"{name} was not checked: {sorted(found)}"
    return found[name]


def errors(found: list[dict]) -> set[tuple[str, str]]:
    return {(f["code"], f["pointer"]) for f in found if f["severity"] == "error"}


@pytest.fixture(scope="module")
def engines(deepspeed) -> dict[str, dict]:
    """The initialize cases through `deepspeed.initialize` on the CPU, in one child process."""
    import deepspeed_initialize_oracle

    cases = {case.name: {"config": case.config, "steps": 2} for case in CASES if case.oracle in ("initialize", "step")}
    return deepspeed_initialize_oracle.engine_outcomes(cases)


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_the_cli_gives_deepspeeds_verdict(folder, deepspeed, engines, case):
    found = findings(folder, case.filename, "--deepspeed-version", NEWEST)  # the oracle's release
    assert errors(found) == set(case.errors), found
    if case.oracle == "parse":
        accepted, error, _ = oracles.deepspeed_accepts(case.config, 1)
        assert accepted is not case.refused, error
        if case.refused:
            assert case.error in error, error
        return
    outcome = engines[case.name]
    if case.refused:
        assert outcome["stage"] == case.oracle, outcome
        assert case.error in outcome["error"], outcome["error"]
    else:
        assert outcome["stage"] is None, outcome


# --- removed keys follow --deepspeed-version ------------------------------------------------------


def test_the_removed_keys_are_the_ones_deepspeed_rejects(deepspeed):
    """The key table's versioned removed rows are exactly DeepSpeed 0.19.8's tables of removed keys."""
    config = deepspeed.runtime.config
    rejected = {"/" + key for key in config._REMOVED_TOP_LEVEL_CONFIG_KEYS}
    rejected |= {Z + "/" + key for key in config._REMOVED_ZERO_CONFIG_KEYS}
    assert {key.path for key in REMOVED} == rejected


@pytest.mark.parametrize("key", REMOVED, ids=[key.path for key in REMOVED])
def test_a_removed_key_is_an_error_from_its_version_on(folder, deepspeed, key):
    name = f"ds_config_removed_{key.path[1:].replace('/', '_')}.json"
    expected = {("DS101", key.path)}
    # 0.19.8 (the newest, and the installed oracle): an error, and DeepSpeedConfig refuses the file.
    assert errors(findings(folder, name, "--deepspeed-version", NEWEST)) == expected
    # with no pin the releases disagree (0.19.6 reads the key): an info naming the release (issue 30)
    unpinned = [f for f in findings(folder, name, "--min-severity", "info") if f["code"] == "DS101"]
    assert [f["severity"] for f in unpinned] == ["info"] and unpinned[0]["unknown_context"]["kind"] == "release"
    accepted, error, _ = oracles.deepspeed_accepts(_removed_config(key.path), 1)
    assert not accepted and "has been removed" in error, error
    # 0.19.7 rejects only what it removed; 0.19.6 reads every one of these keys.
    at_seven = errors(findings(folder, name, "--deepspeed-version", SEVEN))
    assert at_seven == (expected if key.removed_in <= (0, 19, 7) else set()), at_seven
    old = findings(folder, name, "--deepspeed-version", OLD, "--min-severity", "info")
    assert errors(old) == set()
    (note,) = [f for f in old if f["code"] == "DS101"]
    assert note["severity"] == "info" and note["pointer"] == key.path
    assert f"read by DeepSpeed 0.19.6, but DeepSpeed {'.'.join(map(str, key.removed_in))} removed it" in note["message"]
    # Without the 0.19.8 removal the same config is one DeepSpeed accepts.
    accepted, error, _ = oracles.deepspeed_accepts(
        {k: v for k, v in _removed_config(key.path).items() if k != key.path[1:]}
        if not key.path.startswith(Z + "/") else {**BATCH, "zero_optimization": {"stage": 3}}, 1)
    assert accepted, error


def test_the_issue_keys_are_not_errors_at_0_19_6(folder, deepspeed):
    """The issue's list: amp, progressive_layer_drop, curriculum_learning, elasticity and the
    compression sections are read by 0.19.6 and refused by 0.19.8 (DeepSpeedConfig)."""
    config = {**BATCH, "amp": {"enabled": False}, "progressive_layer_drop": {"enabled": False},
              "curriculum_learning": {"enabled": False}, "elasticity": {"enabled": False},
              "compression_training": {}}
    path = folder / "ds_config_issue_keys.json"
    path.write_text(json.dumps(config, indent=2), encoding="utf-8")
    _, old = check_json("--deepspeed-version", OLD, str(path))
    assert [f for f in old["findings"] if f["severity"] == "error"] == []
    _, new = check_json("--deepspeed-version", NEWEST, str(path))
    assert {f["pointer"] for f in new["findings"] if f["code"] == "DS101"} == {"/" + k for k in config if k not in BATCH}
    accepted, error, _ = oracles.deepspeed_accepts(config, 1)
    assert not accepted and "has been removed" in error


def test_the_removed_message_names_the_version_in_use(folder):
    found = findings(folder, "ds_config_removed_nebula.json", "--deepspeed-version", SEVEN)
    (finding,) = [f for f in found if f["code"] == "DS101"]
    assert "removed from DeepSpeed in 0.19.7 (0.19.7 rejects the file)" in finding["message"]


# --- null and str-to-list: the key table against DeepSpeed's pydantic models ----------------------

# Section pointer -> DeepSpeed 0.19.8's pydantic model of that section.
MODELS = {
    Z: "deepspeed.runtime.zero.config:DeepSpeedZeroConfig",
    Z + "/offload_param": "deepspeed.runtime.zero.offload_config:DeepSpeedZeroOffloadParamConfig",
    Z + "/offload_optimizer": "deepspeed.runtime.zero.offload_config:DeepSpeedZeroOffloadOptimizerConfig",
    Z + "/zenflow": "deepspeed.runtime.zenflow.zenflow_config:ZenFlowConfig",
    Z + "/leaf_module": "deepspeed.runtime.zero.leaf_module_config:DeepSpeedZeroLeafModuleConfig",
    "/fp16": "deepspeed.runtime.precision_config:DeepSpeedFP16Config",
    "/bf16": "deepspeed.runtime.precision_config:DeepSpeedBF16Config",
    "/tensorboard": "deepspeed.monitor.config:TensorBoardConfig",
    "/wandb": "deepspeed.monitor.config:WandbConfig",
    "/csv_monitor": "deepspeed.monitor.config:CSVConfig",
    "/comet": "deepspeed.monitor.config:CometConfig",
    "/comms_logger": "deepspeed.comm.config:CommsLoggerConfig",
    "/timers/throughput": "deepspeed.utils.config:DeepSpeedThroughputTimerConfig",
    "/compile": "deepspeed.compile.config:CompileConfig",
    "/tensor_parallel": "deepspeed.runtime.tensor_parallel.config:TPTrainingConfig",
    "/tensor_parallel/tp": "deepspeed.runtime.tensor_parallel.config:TPConfig",
    "/tensor_parallel/tensor_parallel": "deepspeed.runtime.tensor_parallel.config:TPConfig",
    "/hybrid_engine": "deepspeed.runtime.config:HybridEngineConfig",
    "/weight_quantization": "deepspeed.inference.config:WeightQuantConfig",
}
# Keys DeepSpeedConfig reads with `.get(key, None)` (runtime/config.py), outside any pydantic model:
# each parsed with null here; the sections also train with null (case dict_get_nulls).
DICT_GET_NULLABLE = {"/data_types/grad_accum_dtype", "/data_types/param_dtype", "/data_types/buffer_dtype",
                     "/bf16", "/aio", "/expert_parallel", "/communication_data_type", "/steps_per_print",
                     # read with get_scalar_param, None their default (profiling/config.py, activation_checkpointing/config.py)
                     "/flops_profiler/output_file", "/activation_checkpointing/number_checkpoints",
                     # the batch sizes: get_scalar_param with a None default; the missing one is derived (issue 30)
                     "/train_batch_size", "/train_micro_batch_size_per_gpu", "/gradient_accumulation_steps"}
BATCH_NULLABLE = {"/train_batch_size", "/train_micro_batch_size_per_gpu", "/gradient_accumulation_steps"}


def _model(spec: str):
    module, name = spec.split(":")
    return getattr(importlib.import_module(module), name)


def _accepts(model, name: str, value) -> tuple[bool, object]:
    try:
        return True, model(**{name: value})
    except Exception:  # noqa: BLE001 - a refusal is the answer
        return False, None


def _is_list(annotation) -> bool:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union,) or str(origin) == "<class 'types.UnionType'>":
        return any(_is_list(arg) for arg in typing.get_args(annotation))
    return origin in (list, tuple) or annotation in (list, tuple)


def test_nullable_and_str_to_list_are_what_deepspeeds_models_accept(deepspeed):
    """Every field of every section model set to null (and every list field set to a string):
    the fields DeepSpeed accepts are exactly the key table's NULLABLE / STR_TO_LIST rows."""
    rows = key_index()
    nullable, to_list, seen = set(), set(), set()
    for section, spec in MODELS.items():
        model = _model(spec)
        for name, field in model.model_fields.items():
            spelled = field.alias or name
            pointer = f"{section}/{spelled}"
            if pointer not in rows:
                continue
            seen.add(pointer)
            if _accepts(model, spelled, None)[0]:
                nullable.add(pointer)
            if _is_list(field.annotation):
                ok, parsed = _accepts(model, spelled, "x")
                if ok and getattr(parsed, name) == ["x"]:
                    to_list.add(pointer)
    for pointer in DICT_GET_NULLABLE:
        section, _, name = pointer[1:].partition("/")
        config = {**BATCH, section: {name: None}} if name else {**BATCH, section: None}
        if pointer in BATCH_NULLABLE:  # the other two batch sizes given: DeepSpeed derives the null one
            config = {"train_batch_size": 8, "train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 1,
                      section: None}
        accepted, error, _ = oracles.deepspeed_accepts(config, 1)
        assert accepted, (pointer, error)
        nullable.add(pointer)
    assert len(seen) > 100
    assert sorted(NULLABLE - DICT_GET_NULLABLE - seen) == [], "NULLABLE rows outside the probed models"
    assert sorted(nullable) == sorted(NULLABLE)
    assert sorted(to_list) == sorted(STR_TO_LIST)


# Bounds the key table has although the pydantic field has no gt/ge/lt/le: DeepSpeed enforces them
# elsewhere (a validator or an enum).
BOUNDS_FROM_VALIDATORS = {
    Z + "/stage": "ZeroStageEnum (0-3)",
    Z + "/zenflow/update_interval": "ZenFlowConfig.validate: \"at least 1\" (case zenflow_update_interval_zero)",
    "/fp16/loss_scale": "DeepSpeedFP16Config loss_scale validator: >= 0",
}
BOUND_NAMES = (("gt", "exclusive_minimum"), ("ge", "minimum"), ("lt", "exclusive_maximum"), ("le", "maximum"))


def test_ranges_are_the_pydantic_field_bounds(deepspeed):
    """Every gt/ge/lt/le of a section model's field is the key table's bound, and the other way
    round (except the bounds a validator enforces, listed above)."""
    rows = key_index()
    differ = {}
    for section, spec in MODELS.items():
        for name, field in _model(spec).model_fields.items():
            pointer = f"{section}/{field.alias or name}"
            row = rows.get(pointer)
            if row is None:
                continue
            want = {ours: float(getattr(meta, theirs)) for meta in field.metadata for theirs, ours in BOUND_NAMES
                    if getattr(meta, theirs, None) is not None}
            have = {ours: float(getattr(row, ours)) for _, ours in BOUND_NAMES if getattr(row, ours) is not None}
            if want != have and pointer not in BOUNDS_FROM_VALIDATORS:
                differ[pointer] = (want, have)
    assert differ == {}


def test_a_nullable_section_set_to_null_is_accepted_through_the_cli(folder):
    """Every NULLABLE row set to null in one config: no DS102 finding."""
    config: dict = {**BATCH}
    for pointer in sorted(NULLABLE):
        node = config
        parts = pointer[1:].split("/")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if node is None:
                break
        else:
            node[parts[-1]] = None
    path = folder / "ds_config_every_null.json"
    path.write_text(json.dumps(config, indent=2), encoding="utf-8")
    _, output = check_json(str(path))
    assert [f for f in output["findings"] if f["code"] == "DS102"] == []


# --- reading an elasticity-only file; walks still skip what is not a ds_config -----------------------


def test_a_walk_reads_a_file_of_deepspeed_keys_and_skips_other_json(tmp_path):
    (tmp_path / "package.json").write_text('{"name": "x", "version": "1.0.0", "scripts": {"test": "jest"}}')
    (tmp_path / "tsconfig.json").write_text('{"compilerOptions": {"strict": true}, "include": ["src"]}')
    (tmp_path / "schema.json").write_text(json.dumps({"$schema": "http://json-schema.org/draft-07/schema#",
                                                      "type": "object", "elasticity": {}}))
    (tmp_path / "settings.json").write_text('{"optimizer": {"type": "Adam"}, "checkpoint": {"path": "x"}}')
    (tmp_path / "elastic.json").write_text(json.dumps({"elasticity": ELASTICITY}, indent=2))
    status, output = check_json("--deepspeed-version", NEWEST, str(tmp_path))
    assert [Path(entry["path"]).name for entry in output["files"]] == ["elastic.json"]
    assert {(f["code"], f["pointer"]) for f in output["findings"] if f["severity"] == "error"} == \
        {("DS101", "/elasticity")}
    assert status == 1
    status, output = check_json("--deepspeed-version", OLD, str(tmp_path / "elastic.json"))
    assert [f for f in output["findings"] if f["code"] in ("DS101", "SS005") and f["severity"] != "info"] == []


# --- the new rules' fixtures, through the CLI ----------------------------------------------------------

RULES = Path(__file__).resolve().parent.parent / "fixtures" / "deepspeed" / "rules"
NEW_CODES = ("DS444", "DS446")  # DS445 (precision.py) has its cases in test_rules_deepspeed_stage_precision_buckets

# (fixture, code, severity, pointer, marker (`|`: the exact column), fix, text the message must contain)
FIXTURE_CASES = [
    ("DS444/bad.json", "DS444", "error", "/expert_parallel/load_balance_coeff", '"load_balance_coeff": |0.001', "null",
     "is not supported in this AutoEP build"),
    ("DS446/bad.json", "DS446", "error", "/expert_parallel/comm_num_sm", '"comm_num_sm": |0', None,
     "comm_num_sm must be a positive integer"),
    ("DS446/bad_choice.json", "DS446", "error", "/expert_parallel/score_func", '"score_func": |"sigmod"', '"sigmoid"',
     'did you mean "sigmoid"?'),
    ("DS446/bad_groups.json", "DS446", "error", "/expert_parallel/num_limited_groups", '"num_limited_groups": |8', None,
     "num_limited_groups (8) must be <= num_expert_groups (4)"),
]


# What DeepSpeed 0.19.8 says about each bad fixture (and the finding quotes).
ORACLE_TEXT = {
    "DS444/bad.json": "load_balance_coeff=0.001 is not supported in this AutoEP build",
    "DS446/bad.json": "comm_num_sm must be a positive integer",
    "DS446/bad_choice.json": "score_func must be one of ('auto', 'softmax', 'sigmoid')",
    "DS446/bad_groups.json": "num_limited_groups (8) must be <= num_expert_groups (4)",
    "DS446/bad_async_split.json": "expert_parallel.async_split_plan must be a boolean",
    "DS446/bad_async_split_autotp.json": "async_split_plan does not support AutoEP+AutoTP folding yet",
    "DS446/bad_attr_dot.json": "router_pattern must be a direct attribute name (no dots)",
    "DS446/bad_attr_empty.json": "expert_w1 must be a non-empty string",
    "DS446/bad_combine_impl.json": "combine_impl must be one of",
    "DS446/bad_comm_backend.json": "comm_backend must be one of",
    "DS446/bad_deepep_tokens.json": "comm_max_tokens_per_rank must be a positive integer when comm_backend='deepep'",
    "DS446/bad_ep_size.json": "expert_parallel.autoep_size must be a positive integer, got 0",
    "DS446/bad_expert_groups.json": "num_expert_groups must be >= 1, got 0",
    "DS446/bad_folding_routing.json": "expert_parallel.validate_folding_routing must be a boolean",
    "DS446/bad_activation.json": "expert_activation must be one of",
    "DS446/bad_fused_combine_autotp.json": 'combine_impl="fused_weighted_sum" does not support folded tensor parallelism',
    "DS446/bad_fused_combine_deepep.json": 'combine_impl="fused_weighted_sum" cannot be used with comm_backend="deepep"',
    "DS446/bad_fused_combine_etp.json": 'combine_impl="fused_weighted_sum" requires expert_tensor_parallel_size=1',
    "DS446/bad_fused_rows_comm.json": 'row_weighting_impl="fused" only runs inside the DeepEP route',
    "DS446/bad_fused_rows_single.json": 'row_weighting_impl="fused" only runs when DeepEP dispatch is active',
    "DS446/bad_gate_up.json": "gate_up_impl must be one of",
    "DS446/bad_gate_up_loop.json": 'gate_up_impl="fused" runs the gate and up projections as one torch._grouped_mm',
    "DS446/bad_limited_groups.json": "num_limited_groups must be >= 1, got 0",
    "DS446/bad_max_tokens.json": "comm_max_tokens_per_rank must be a non-negative integer, got -8",
    "DS446/bad_preset.json": "Unknown preset_model 'mixtral-8x7b'",
    "DS446/bad_presets_differ.json": "tensor_parallel.preset_model and expert_parallel.preset_model must match",
    "DS446/bad_qp_margin.json": "comm_qp_margin must be a non-negative integer, got -1",
    "DS446/bad_row_weighting.json": "row_weighting_impl must be one of",
    "DS446/bad_scaling.json": "routed_scaling_factor must be a number or 'auto'",
    "DS446/bad_score_apply.json": "score_apply must be one of",
    "DS446/bad_shared_flag.json": "has_shared_experts must be a boolean when set",
}


@lru_cache(maxsize=1)
def _fixture_findings() -> dict[str, list[dict]]:
    _, output = check_json(*(str(RULES / code) for code in NEW_CODES))
    found: dict[str, list[dict]] = {}
    for finding in output["findings"]:
        found.setdefault(Path(finding["file"]).resolve().relative_to(RULES).as_posix(), []).append(finding)
    return found


@pytest.mark.parametrize("fixture,code,severity,pointer,marker,fix,text", FIXTURE_CASES, ids=[c[0] for c in FIXTURE_CASES])
def test_bad_fixture_is_reported_at_the_right_place(fixture, code, severity, pointer, marker, fix, text):
    from rule_cases import marker_position

    found = _fixture_findings().get(fixture, [])
    (finding,) = [f for f in found if f["code"] == code]
    assert [f for f in found if f["severity"] == "error" and f is not finding] == []
    line, column = marker_position(RULES / fixture, marker.replace("|", ""))
    assert (finding["severity"], finding["pointer"], finding["fix"]) == (severity, pointer, fix)
    assert (finding["line"], finding["column"]) == (line, column + marker.find("|"))
    assert text in finding["message"], finding["message"]


def test_good_fixtures_are_clean_and_every_new_rule_has_cases():
    found = _fixture_findings()
    for code in NEW_CODES:
        goods = sorted((RULES / code).glob("good*.json"))
        assert goods and sorted((RULES / code).glob("bad*.json"))
        for path in goods:
            assert [f for f in found.get(path.relative_to(RULES).as_posix(), [])
                    if f["code"] in NEW_CODES or f["severity"] != "info"] == [], path
    assert {case[1] for case in FIXTURE_CASES} == set(NEW_CODES)


# AutoEP folded with AutoTP needs ranks for both (tp divides the world, experts tile it): one CPU rank refuses
# these for the world size first. DeepSpeed's own _configure_expert_parallel reaches each one's check on four
# ranks' worth of config in tests/test_coverage_map.py (`stage=autoep`).
NEEDS_RANKS = {f"DS446/bad_fold_{name}.json" for name in ("deepcompile", "expert_tp", "single_ep", "data_before",
                                                          "offload")}


@pytest.mark.parametrize("path", sorted(p for code in NEW_CODES for p in (RULES / code).glob("*.json")
                                        if f"{code}/{p.name}" not in NEEDS_RANKS),
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_fixtures_get_deepspeeds_verdict(engines_fixtures, path):
    """Each bad fixture is refused by DeepSpeed with the message the finding quotes; each good one
    is not refused for that reason (DeepSpeedConfig for DS444, deepspeed.initialize for DS446)."""
    outcome = engines_fixtures[f"{path.parent.name}/{path.name}"]
    stage = "parse" if path.parent.name == "DS444" else "initialize"
    if path.name.startswith("bad"):
        assert outcome["stage"] == stage, outcome
        assert ORACLE_TEXT[f"{path.parent.name}/{path.name}"] in outcome["error"], outcome["error"]
    else:
        assert outcome["stage"] is None, outcome


@pytest.fixture(scope="module")
def engines_fixtures(deepspeed) -> dict[str, dict]:
    import deepspeed_initialize_oracle

    outcomes: dict[str, dict] = {}
    cases = {}
    for code in NEW_CODES:
        for path in sorted((RULES / code).glob("*.json")):
            config = json.loads(path.read_text(encoding="utf-8"))
            name = f"{code}/{path.name}"
            accepted, error, _ = oracles.deepspeed_accepts(config, 1)
            if not accepted:
                outcomes[name] = {"stage": "parse", "error": error}
            else:
                cases[name] = {"config": {**config, "optimizer": ADAMW}, "steps": 1}
    for name, outcome in deepspeed_initialize_oracle.engine_outcomes(cases).items():
        outcomes[name] = outcome
    return outcomes


# --- renamed keys: still read by 0.19.8, or their version is recorded ------------------------------------

RENAMED = [key for key in KEYS if key.renamed_to]


def _alone(pointer: str, value) -> dict:
    config: dict = {**BATCH}
    node = config
    parts = pointer[1:].split("/")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value
    if pointer.startswith(Z + "/"):
        config["zero_optimization"].setdefault("stage", 3)
    return config


@pytest.mark.parametrize("key", RENAMED, ids=[key.path for key in RENAMED])
def test_a_renamed_key_is_still_accepted_or_knows_its_version(deepspeed, key):
    """DeepSpeed 0.19.8 accepts every legacy spelling of the key table (an alias, or a deprecated
    key it converts); one it no longer reads (inert) has the release that stopped reading it in
    versions.KEY_CHANGES, so that --deepspeed-version judges it (DS320)."""
    from shardshift.versions import key_change

    value = {"enabled": False} if key.type == "object" else (False if key.type == "bool" else key.default)
    if value is None and key.type == "int":
        value = 1000  # a sample value (the row's default is "unset")
    accepted, error, _ = oracles.deepspeed_accepts(_alone(key.path, value), 1)
    assert accepted, error
    if key.inert and key.path != Z + "/cpu_offload_use_pin_memory":  # that one: ignored with a log line in every release
        change = key_change(key.path)
        assert change is not None and change.ignored_since is not None and change.replaced_by == key.renamed_to

