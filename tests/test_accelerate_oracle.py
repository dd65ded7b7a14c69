"""Accelerate 1.15 as the oracle for the Accelerate rules, the reader and the writer.

One child process (oracles.run_in_child's environment and timeout; `launch_outcomes` below runs
in it) takes every case through what `accelerate launch --config_file FILE train.py` does:
`load_config_from_file`, the launch parser, `launch_command` (`_validate_launch_command` and the
launcher's `prepare_*_env`), with only the final process start replaced: the FSDP or DeepSpeed
plugin (and the ParallelismConfig) is built under the environment the training processes would
get, and its resolved values are returned.

Checked here:
- every bad fixture whose rule says Accelerate refuses it is refused, at the stage and with the
  words the message quotes; every fixture whose rule says Accelerate silently ignores or
  overrides something is accepted, and the plugin's value is the one the message says;
- every good fixture is accepted;
- the Plan the reader builds equals the plugin's resolved values (sharding stage, offload,
  activation checkpointing, reduce dtype, parallelism degrees, DeepSpeed stage/accumulation/
  clipping/offload) for the fixtures, the corpus and everything the writer emits
  (tests/test_accelerate_writer.py provides those texts through `emitted_cases`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import oracles
from conftest import CORPUS, FIXTURES, corpus_files

pytestmark = pytest.mark.oracle

RULES = FIXTURES / "accelerate" / "rules"

# fixture -> (stage Accelerate refuses it at, words of the error) ; None: Accelerate accepts it
REFUSED = {
    "AC001/bad.yaml": ("load", "had unknown keys (['num_process'])"),
    "AC006/bad.yaml": ("plugin", "invalid truth value full_shard"),
    "AC006/bad_type.yaml": ("load", "'MULTI_GPUS' is not a valid DistributedType"),
    "AC006/bad_state_dict.yaml": ("plugin", "FSDP2 does not support LOCAL_STATE_DICT"),
    "AC006/bad_wrap.yaml": ("plugin", "Invalid auto wrap policy"),
    "AC006/bad_ac_offload.yaml": ("plugin", "`activation_checkpointing_offload=True` requires `fsdp_version=2`"),
    "AC006/bad_precision.yaml": ("launch", "ValueError: Unknown mixed_precision mode: bf32"),
    "AC006/bad_precision_cpu.yaml": ("launch", "ValueError: Unknown mixed_precision mode: bf32"),
    "AC006/bad_precision_deepspeed.yaml": ("launch", "ValueError: Unknown mixed_precision mode: bf32"),
    "AC006/bad_no_type.yaml": ("load", "A `distributed_type` must be specified in the config file."),
    "AC006/bad_no_processes.yaml": ("launch", "You need to manually pass in `--num_processes`"),
    "AC006/bad_processes_default.yaml": ("launch", "You need to manually pass in `--num_processes`"),
    "AC006/bad_ac_offload_without_ac.yaml": ("plugin", "`activation_checkpointing_offload=True` requires "
                                             "`activation_checkpointing=True`"),
    "AC006/bad_dynamo.yaml": ("launch", "ValueError: Unknown dynamo backend: INDUCTR"),
    "AC006/bad_gpu_ids.yaml": ("launch", "AttributeError: 'int' object has no attribute 'split'"),
    "AC006/bad_gpu_ids_no.yaml": ("launch", "AttributeError: 'bool' object has no attribute 'split'"),
    # AC012: found by mutation (bench/mutation_accelerate.py), no `raise` of Accelerate's own names them
    "AC012/bad_machines_string.yaml": ("launch", "TypeError: '>' not supported between instances of 'str' and 'int'"),
    "AC012/bad_processes_float.yaml": ("launch", "ValueError: invalid literal for int()"),
    "AC012/bad_port_string.yaml": ("launch", "TypeError"),
    "AC012/bad_offload_null.yaml": ("plugin", "ValueError: invalid truth value none"),
    "AC012/bad_prefetch_no.yaml": ("plugin", "KeyError: 'FALSE'"),
    "AC012/bad_zero_stage_float.yaml": ("plugin", "ValueError: invalid literal for int() with base 10: '2.0'"),
    "AC012/bad_init_flag.yaml": ("plugin", "ValueError: invalid truth value sometimes"),
    "AC012/bad_processes_float_deepspeed.yaml": ("launch", "ValueError: invalid literal for int()"),
    "AC012/bad_processes_string.yaml": ("launch", "TypeError: '>' not supported between instances of 'str' and 'int'"),
    "AC012/bad_use_cpu_word.yaml": ("launch", "ValueError: invalid truth value sometimes"),
    "AC012/bad_size_float.yaml": ("plugin", "ValueError: invalid literal for int() with base 10: '2.5'"),
    "AC012/bad_cp_size_string.yaml": ("launch", "TypeError: '>' not supported between instances of 'str' and 'int'"),
    "AC012/bad_processes_string_nodes.yaml": ("launch", "TypeError: unsupported operand type(s) for //: 'str' and 'int'"),
    "AC012/bad_machine_rank_null.yaml": ("launch", "TypeError: int() argument must be a string"),
    "AC012/bad_port_string_deepspeed.yaml": ("launch", "TypeError: 'str' object cannot be interpreted as an integer"),
    "AC012/bad_main_process_ip_number.yaml": ("launch", "TypeError: str expected, not int"),
    "AC012/bad_min_num_params_float.yaml": ("plugin", "ValueError: invalid literal for int() with base 10: '1.0e8'"),
    "AC006/bad_dynamo_cpu.yaml": ("launch", "ValueError: Unknown dynamo backend: TORCH_COMPILE"),
    # what Accelerator.prepare does with the wrap policy on a model that has every class the file means
    "AC009/bad.yaml": ("prepare", "Could not find the transformer layer class  LlamaMLP in the model"),
    "AC009/bad_fsdp1_list.yaml": ("prepare", "Could not find the transformer layer class ['LlamaDecoderLayer' in "
                                  "the model"),
    "AC103/bad.yaml": ("launch", "set `--fsdp_sync_module_states` to `True`"),
    "AC008/bad.yaml": ("launch", "AttributeError: 'bool' object has no attribute 'lower'"),
}
# rules whose fixtures tests/test_coverage_map.py runs through Accelerate instead (the check
# sites of the coverage map, with what this oracle does not build: the Accelerator's
# ParallelismConfig check against the launch, the FP8 recipes on a machine with a backend)
COVERAGE_MAP_RULES = ("AC010", "AC011", "AC104", "AC105", "AC106", "AC109")
# accepted fixtures and the plugin value that shows the silent behaviour the message describes
SILENT = {
    "AC002/bad.yaml": ("cpu_offload", False),               # fsdp_ofload_params: true has no effect
    "AC002/bad_deepspeed.yaml": ("zero_stage", 2),          # accepted; the ds key goes nowhere
    "AC003/bad.yaml": ("reshard_after_forward", True),      # SHARD_GRAD_OP dropped: FULL_SHARD behaviour
    "AC004/bad.yaml": ("sharding_strategy", "FULL_SHARD"),  # SHARD_GRAD_OP ignored under v1
    "AC005/bad.yaml": ("cpu_offload", False),               # the later offload_params: false wins
    "AC007/bad.yaml": ("mixed_precision", "fp16"),          # fp16: true became mixed_precision fp16
    "AC101/bad.yaml": ("nproc_per_node", 4),                # 9 processes over 2 machines: 4 each
    "AC102/bad.yaml": ("offload_param_device", "none"),     # fsdp_offload_params ignored under DEEPSPEED
    "AC013/bad.yaml": ("nproc_per_node", 8),                # num_processes: 010 is the octal 8
}


# a converted config whose source does not say the number of processes holds the placeholder
# `num_processes: FILL_IN` (its report says to fill it in): the oracle loads it as written (refused)
# and filled in (accepted), the latter under this name prefix
NEEDS_PROCESSES = ("placeholder__",)


# --- the child ------------------------------------------------------------------------------


def _resolved_fsdp(plugin: Any) -> dict:
    out: dict[str, Any] = {"fsdp_version": plugin.fsdp_version}
    strategy = getattr(plugin, "sharding_strategy", None)
    out["sharding_strategy"] = getattr(strategy, "name", strategy if strategy is None else str(strategy))
    raf = plugin.reshard_after_forward
    out["reshard_after_forward"] = raf if isinstance(raf, (bool, int, type(None))) else str(raf)
    offload = plugin.cpu_offload
    name = type(offload).__name__
    out["cpu_offload"] = (name == "CPUOffloadPolicy") if plugin.fsdp_version == 2 else bool(
        getattr(offload, "offload_params", False))
    out["activation_checkpointing"] = bool(plugin.activation_checkpointing)
    out["state_dict_type"] = getattr(plugin.state_dict_type, "name", str(plugin.state_dict_type))
    policy = plugin.mixed_precision_policy
    for field in ("param_dtype", "reduce_dtype"):
        value = getattr(policy, field, None) if policy is not None else None
        out[field] = str(value).replace("torch.", "") if value is not None else None
    return out


def _resolved_deepspeed(plugin: Any) -> dict:
    config = plugin.deepspeed_config
    zero = config.get("zero_optimization", {})
    return {"zero_stage": zero.get("stage"), "gradient_accumulation_steps": config.get("gradient_accumulation_steps"),
            "gradient_clipping": config.get("gradient_clipping"),
            "offload_optimizer_device": zero.get("offload_optimizer", {}).get("device"),
            "offload_param_device": zero.get("offload_param", {}).get("device")}


def _prepare_wrap_policy(plugin: Any, names: Any) -> None:
    """(In the child.) What `Accelerator.prepare` does with the wrap policy (FSDP1:
    `set_auto_wrap_policy`; FSDP2: `fsdp2_prepare_auto_wrap_policy`) on a model that holds a
    class for every name the file means (each name stripped), so that only the way the name is
    written can make it fail. Raises the plugin's own error, as a "prepare" refusal."""
    if not isinstance(names, list):
        return
    import re

    import torch
    from accelerate.utils.fsdp_utils import fsdp2_prepare_auto_wrap_policy

    model = torch.nn.Sequential(*(type(re.sub(r"[\[\]'\"\s]", "", str(name)) or "Blank", (torch.nn.Linear,), {})(1, 1)
                                  for name in names))
    try:
        if plugin.fsdp_version == 2:
            fsdp2_prepare_auto_wrap_policy(plugin, model)
        else:
            plugin.set_auto_wrap_policy(model)
    except Exception as error:  # noqa: BLE001 - a refusal is a result
        raise _PrepareRefused(oracles._error_text(error)) from error


class _PrepareRefused(Exception):
    pass


def _raising_site(error: BaseException) -> str | None:
    """Where in Accelerate `error` was raised (issue 33's implicit sites: tests/implicit_sites.py)."""
    import accelerate
    from implicit_sites import raising_site

    return raising_site(error, accelerate)


def launch_outcomes(config_files: list[str]) -> dict[str, dict]:
    """(In the child.) {file: {"stage": "load" | "launch" | "plugin" | None, "error": text | None,
    "mode": ..., "resolved": {...}}} for each Accelerate config file."""
    import subprocess
    from unittest import mock

    import torch.distributed.run as distrib_run
    from accelerate.commands import launch as accelerate_launch
    from accelerate.commands.config.config_args import load_config_from_file
    from accelerate.utils import DeepSpeedPlugin, FullyShardedDataParallelPlugin

    outcomes: dict[str, dict] = {}
    home = os.getcwd()
    for config_file in config_files:
        outcome: dict[str, Any] = {"stage": None, "error": None, "mode": None, "resolved": {}}
        try:
            loaded = load_config_from_file(config_file)
            outcome["resolved"]["mixed_precision"] = loaded.mixed_precision
        except Exception as error:  # noqa: BLE001 - a refusal is a result
            outcome.update(stage="load", error=oracles._error_text(error), site=_raising_site(error))
            outcomes[config_file] = outcome
            continue

        def start(args=None, outcome=outcome):
            resolved = outcome["resolved"]
            if args is not None and hasattr(args, "nproc_per_node"):
                resolved["nproc_per_node"] = int(args.nproc_per_node)
            try:
                if os.environ.get("ACCELERATE_USE_FSDP") == "true":
                    outcome["mode"] = "fsdp"
                    # FSDP1 with sync_module_states asks for the current GPU at the very end of
                    # __post_init__ (param_init_fn); this machine has none, so it gets device 0
                    import accelerate.utils.dataclasses as plugins
                    import torch

                    with mock.patch.object(plugins, "is_cuda_available", lambda: True), \
                            mock.patch.object(torch.cuda, "current_device", lambda: 0):
                        plugin = FullyShardedDataParallelPlugin()
                    mixed = os.environ.get("ACCELERATE_MIXED_PRECISION", "no")
                    if mixed in ("fp16", "bf16", "fp8"):
                        plugin.set_mixed_precision(mixed)
                    resolved.update(_resolved_fsdp(plugin))
                    names = plugin.transformer_cls_names_to_wrap
                    resolved["transformer_cls_names_to_wrap"] = names
                    _prepare_wrap_policy(plugin, names)
                    if os.environ.get("ACCELERATE_USE_PARALLELISM_CONFIG") == "true":
                        from accelerate.parallelism_config import ParallelismConfig

                        config = ParallelismConfig()
                        resolved.update(dp_replicate_size=config.dp_replicate_size,
                                        dp_shard_size=config.dp_shard_size, tp_size=config.tp_size,
                                        cp_size=config.cp_size)
                elif os.environ.get("ACCELERATE_USE_DEEPSPEED") == "true":
                    outcome["mode"] = "deepspeed"
                    plugin = DeepSpeedPlugin()
                    resolved.update(_resolved_deepspeed(plugin))
            except _PrepareRefused as error:
                outcome.update(stage="prepare", error=str(error))
            except Exception as error:  # noqa: BLE001
                outcome.update(stage="plugin", error=oracles._error_text(error), site=_raising_site(error))

        def popen(*args, outcome=outcome, **kwargs):
            outcome["resolved"]["launcher"] = "one process"  # the simple launcher (and multi-node DeepSpeed)
            with mock.patch.dict(os.environ, kwargs.get("env") or {}):
                start()
            return mock.Mock(returncode=0, wait=lambda: 0)

        def run(args, outcome=outcome):
            outcome["resolved"]["launcher"] = "torchrun"
            start(args)

        os.chdir(os.path.dirname(os.path.abspath(config_file)))
        try:
            extra = []
            args = accelerate_launch.launch_command_parser().parse_args(
                ["--config_file", os.path.basename(config_file), *extra, "train.py"])
            with mock.patch.object(distrib_run, "run", run), mock.patch.object(subprocess, "Popen", popen):
                accelerate_launch.launch_command(args)
        except Exception as error:  # noqa: BLE001
            if outcome["stage"] is None:
                outcome.update(stage="launch", error=oracles._error_text(error), site=_raising_site(error))
        finally:
            os.chdir(home)
        outcomes[config_file] = outcome
    return outcomes


def run_oracle(paths: list[str]) -> dict[str, dict]:
    """`launch_outcomes(paths)` in a fresh Python, the way oracles.run_in_child runs its own."""
    import json
    import subprocess
    import sys
    import tempfile

    oracles.require_installed("accelerate", "yaml", "torch")
    tests = Path(__file__).resolve().parent
    with tempfile.TemporaryDirectory(prefix="shardshift-oracle-") as scratch:
        given, result = Path(scratch, "in.json"), Path(scratch, "out.json")
        given.write_text(json.dumps([os.path.abspath(p) for p in paths]), encoding="utf-8")
        env = {name: value for name, value in os.environ.items() if not name.startswith(("ACCELERATE_", "FSDP_"))}
        env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_VERBOSITY="error", PYTHONWARNINGS="ignore",
                   CUDA_VISIBLE_DEVICES="")
        code = ("import json, sys; sys.path.insert(0, sys.argv[1]); import test_accelerate_oracle as m; "
                "json.dump(m.launch_outcomes(json.load(open(sys.argv[2]))), open(sys.argv[3], 'w'))")
        done = subprocess.run([sys.executable, "-c", code, str(tests), str(given), str(result)], capture_output=True,
                              text=True, timeout=oracles.CHILD_TIMEOUT, env=env, cwd=scratch, stdin=subprocess.DEVNULL)
        if done.returncode != 0 or not result.is_file():
            raise AssertionError(f"oracle child failed ({done.returncode}):\n{done.stdout[-4000:]}\n"
                                 f"{done.stderr[-4000:]}")
        found = json.loads(result.read_text(encoding="utf-8"))
        return {path: found[os.path.abspath(path)] for path in paths}


# --- Plan against the plugin ------------------------------------------------------------------


def plan_mismatches(text: str, path: str, outcome: dict) -> dict:
    """{what: (Plan, plugin)} where the reader's Plan disagrees with Accelerate's resolved values."""
    from shardshift.formats import accelerate

    plan = accelerate.read(text, path).plan
    resolved = outcome["resolved"]
    out: dict[str, tuple] = {}

    def compare(name: str, mine: Any, theirs: Any) -> None:
        if mine is not None and mine != theirs:
            out[name] = (mine, theirs)

    if outcome["mode"] == "fsdp" and outcome["stage"] is None:
        if resolved["fsdp_version"] == 2:
            stage = {True: 3, False: 2}.get(resolved["reshard_after_forward"])
        else:
            stage = {"FULL_SHARD": 3, "SHARD_GRAD_OP": 2, "NO_SHARD": 0, "HYBRID_SHARD": 3,
                     "HYBRID_SHARD_ZERO2": 2}.get(resolved["sharding_strategy"])
        compare("sharding.stage", plan.sharding.stage, stage)
        device = plan.offload.params.device if plan.offload.params else None
        compare("offload.params.device", device, "cpu" if resolved["cpu_offload"] else "none")
        ac = plan.activation_checkpointing.enabled if plan.activation_checkpointing else None
        compare("activation_checkpointing.enabled", ac, resolved["activation_checkpointing"])
        reduce = {"bfloat16": "bf16", "float16": "fp16", None: None}.get(resolved["reduce_dtype"])
        compare("precision.reduce_dtype", plan.precision.reduce_dtype, reduce)
        for name, key in (("data_parallel_replicate", "dp_replicate_size"), ("data_parallel_shard", "dp_shard_size"),
                          ("tensor", "tp_size"), ("context", "cp_size")):
            if key in resolved:
                compare(f"parallelism.{name}", getattr(plan.parallelism, name), resolved[key])
    if outcome["mode"] == "deepspeed" and outcome["stage"] is None and not plan.passthrough.get(
            "accelerate", {}).get("deepspeed_config", {}).get("deepspeed_config_file"):
        compare("sharding.stage", plan.sharding.stage, resolved["zero_stage"])
        compare("batch.accumulation", plan.batch.accumulation, resolved["gradient_accumulation_steps"])
        compare("gradient_clipping", plan.gradient_clipping, resolved["gradient_clipping"])
        compare("offload.optimizer.device", plan.offload.optimizer.device if plan.offload.optimizer else None,
                resolved["offload_optimizer_device"])
        compare("offload.params.device", plan.offload.params.device if plan.offload.params else None,
                resolved["offload_param_device"])
    mixed = resolved.get("mixed_precision", "absent")
    if mixed in ("no", "fp16", "bf16", "fp8"):
        compare("precision.param_dtype", plan.precision.param_dtype, {"no": "fp32"}.get(mixed, mixed))
    return out


# --- the cases --------------------------------------------------------------------------------


def _corpus() -> list[Path]:
    return corpus_files("accelerate")


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory) -> dict[str, dict]:
    """One child for every fixture, corpus file and emitted text."""
    from shardshift.resolve import PLACEHOLDER

    from test_accelerate_writer import emitted_cases

    folder = tmp_path_factory.mktemp("emitted")
    emitted = {}
    for name, text in emitted_cases().items():
        path = folder / name
        if f"num_processes: {PLACEHOLDER}" in text:
            raw = folder / f"{NEEDS_PROCESSES[0]}{name}"
            raw.write_text(text, encoding="utf-8")
            emitted[raw.name] = str(raw)
            text = text.replace(f"num_processes: {PLACEHOLDER}", "num_processes: 2")  # the user fills it in
        path.write_text(text, encoding="utf-8")
        emitted[name] = str(path)
    paths = [str(p) for p in sorted(RULES.glob("*/*.yaml"))] + [str(p) for p in _corpus()] + list(emitted.values())
    results = run_oracle(paths)
    results["__emitted__"] = emitted
    return results


def _fixture(name: str) -> str:
    return str(RULES / name)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refusals_the_rules_report_are_accelerates(outcomes, name):
    stage, words = REFUSED[name]
    outcome = outcomes[_fixture(name)]
    assert (outcome["stage"], words in (outcome["error"] or "")) == (stage, True), outcome


@pytest.mark.parametrize("name", sorted(SILENT))
def test_silent_behaviours_the_rules_report_are_accelerates(outcomes, name):
    key, value = SILENT[name]
    outcome = outcomes[_fixture(name)]
    assert outcome["stage"] is None, outcome
    assert outcome["resolved"][key] == value, outcome


# AC107: the launcher and mode `distributed_type` chooses, whatever else the file sets
IGNORED_SETTINGS = {"AC107/bad.yaml": ("one process", None), "AC107/bad_processes.yaml": ("one process", None),
                    "AC107/bad_multi_gpu.yaml": ("torchrun", None), "AC107/good.yaml": ("torchrun", "fsdp")}


@pytest.mark.parametrize("name", sorted(IGNORED_SETTINGS))
def test_the_launcher_and_mode_distributed_type_chooses(outcomes, name):
    outcome = outcomes[_fixture(name)]
    assert outcome["stage"] is None, outcome
    assert (outcome["resolved"].get("launcher"), outcome["mode"]) == IGNORED_SETTINGS[name], outcome


def test_good_fixtures_are_accepted(outcomes):
    refused = {p.relative_to(RULES).as_posix(): outcomes[str(p)] for p in sorted(RULES.glob("*/good*.yaml"))
               if outcomes[str(p)]["stage"] is not None and p.parent.name not in COVERAGE_MAP_RULES}
    assert refused == {}


def test_every_refused_bad_fixture_is_in_the_table(outcomes):
    refused = {p.relative_to(RULES).as_posix() for p in sorted(RULES.glob("*/bad*.yaml"))
               if outcomes[str(p)]["stage"] is not None and p.parent.name not in COVERAGE_MAP_RULES}
    assert refused == set(REFUSED)


def test_fixture_plans_equal_the_plugins(outcomes):
    differ = {}
    for path in sorted(RULES.glob("*/*.yaml")):
        found = plan_mismatches(path.read_text(), str(path), outcomes[str(path)])
        if found:
            differ[path.relative_to(RULES).as_posix()] = found
    assert differ == {}


@pytest.mark.skipif(not CORPUS.is_dir() and os.environ.get("CI", "") != "true", reason="corpus absent")
def test_corpus_plans_equal_the_plugins(outcomes):
    differ = {}
    for path in _corpus():
        found = plan_mismatches(path.read_text(), str(path), outcomes[str(path)])
        if found:
            differ[path.name] = found
    assert differ == {}


def _cause(outcome: dict) -> tuple:
    """A refusal without the file's own path (a round trip is written elsewhere)."""
    error = outcome["error"] or ""
    return outcome["stage"], error.split(" at ")[0] if "had unknown keys" in error else error


def test_emitted_configs_load_and_their_plugins_equal_the_plan(outcomes):
    """A conversion loads and its plugin equals its Plan; a round trip (or an FSDP2 conversion) of a
    corpus file Accelerate refuses is refused for the same cause, and only then."""
    from test_accelerate_writer import emitted_cases

    texts = emitted_cases()
    originals = {p.name: outcomes[str(p)] for p in _corpus()}
    problems = {}
    for name, path in outcomes["__emitted__"].items():
        outcome = outcomes[path]
        if name.startswith(NEEDS_PROCESSES):  # the placeholder as written: Accelerate stops at it
            if outcome["stage"] is None:
                problems[name] = "accepted with num_processes: FILL_IN"
            continue
        original = originals.get(name.split("__", 1)[1]) if name.startswith(("roundtrip__", "fsdp2__")) else None
        if outcome["stage"] is not None:
            if original is not None and original["stage"] is not None and _cause(original)[1].split(":")[0] == \
                    _cause(outcome)[1].split(":")[0]:
                continue
            if not oracles.gpu_only(outcome["error"] or ""):
                problems[name] = outcome["error"]
            continue
        found = plan_mismatches(texts[name], path, outcome)
        if found:
            problems[name] = found
    assert problems == {}
    assert sum(name.startswith("from_ds__") for name in texts) == len(list((FIXTURES / "deepspeed").glob("*.json")))
    assert any(name.startswith(NEEDS_PROCESSES) for name in outcomes["__emitted__"])


# Corpus files Accelerate refuses for a reason that is not in the file (this machine, a file the
# corpus does not hold, an Accelerate bug) or that the file's own use case takes care of.
NOT_THE_FILE = {
    "CarperAI__trlx__examples__summarize_rlhf__configs__default_accelerate_config.yaml": "its deepspeed_config_file "
    "is not in the corpus",
    "LianjiaTech__BELLE__train__configs__accelerate_config_ppo.yaml": "its deepspeed_config_file is not in the corpus",
    "LianjiaTech__BELLE__train__configs__accelerate_config_rm.yaml": "its deepspeed_config_file is not in the corpus",
    "Luodian__Otter__accelerate_config.yaml": "its deepspeed_config_file is not in the corpus",
    "deepspeedai__DeepSpeedExamples__benchmarks__autosp__configs__autosp_config.yaml": "its deepspeed_config_file is "
    "not in the corpus",
    "deepspeedai__DeepSpeedExamples__benchmarks__autosp__configs__torchcompile_config.yaml": "its "
    "deepspeed_config_file is not in the corpus",
    "huggingface__accelerate__examples__alst_ulysses_sequence_parallelism__sp-alst.accelerate-config.yml": "its "
    "deepspeed_config_file is not in the corpus",
    "huggingface__accelerate__examples__config_yaml_templates__deepspeed.yaml": "its deepspeed_config_file is not in "
    "the corpus",
    "huggingface__accelerate__tests__test_configs__0_28_0_mpi.yaml": "no mpirun on this machine",
    "huggingface__accelerate__tests__test_configs__0_30_0_sagemaker.yaml": "Accelerate 1.15 fails every SageMaker "
    "config in _validate_launch_command (AttributeError: no parallelism_config): an Accelerate bug, not the file",
    "huggingface__accelerate__examples__slurm__fsdp_config.yaml": "num_processes is left out on purpose: the slurm "
    "script passes --num_processes; shardshift warns (AC006) instead of failing it",
}
# corpus files Accelerate refuses -> the shardshift error code for the same cause
SAME_CAUSE = {"huggingface__accelerate__tests__test_configs__invalid_keys.yaml": "AC001"}
# corpus files Accelerate accepts on which shardshift reports an error: real silent mistakes
SILENT_MISTAKES: dict[str, str] = {}


@pytest.mark.skipif(not CORPUS.is_dir() and os.environ.get("CI", "") != "true", reason="corpus absent")
def test_corpus_refusals_are_shardshift_errors_and_acceptances_are_not(outcomes):
    from conftest import check_json

    assert _corpus(), "the corpus must be present"
    wrong = {}
    for path in _corpus():
        outcome = outcomes[str(path)]
        _, output = check_json(str(path))
        errors = sorted({f["code"] for f in output["findings"] if f["severity"] == "error"
                         and f["file"] == str(path)})
        if outcome["stage"] is not None and path.name not in NOT_THE_FILE:
            if SAME_CAUSE.get(path.name) not in errors:
                wrong[path.name] = ("refused", outcome["error"], errors)
        elif outcome["stage"] is None and errors and path.name not in SILENT_MISTAKES:
            wrong[path.name] = ("accepted", errors)
    assert wrong == {}
    assert set(NOT_THE_FILE) | set(SAME_CAUSE) == {p.name for p in _corpus() if outcomes[str(p)]["stage"]}


# --- AC108: the script's Accelerator(mixed_precision=...) against the launch's precision ------------

PRECISION_CHILD = r"""
import json, sys
from accelerate import Accelerator
from accelerate.state import AcceleratorState
out = {}
for name, value in json.loads(sys.argv[1]).items():
    kwargs = {} if value is None else {"mixed_precision": value}
    out[name] = Accelerator(cpu=True, **kwargs).mixed_precision
    AcceleratorState._reset_state(True)
print("RESULT " + json.dumps(out))
"""


def test_ac108_the_script_literal_wins_over_the_launch_precision():
    """What the training process gets when the launch exports the config file's precision
    (`ACCELERATE_MIXED_PRECISION`, as `accelerate launch` does) and the fixture's script builds its
    Accelerator: the literal it passes, or the launch's when it passes none."""
    import json
    import subprocess
    import sys

    from shardshift.rules.accelerate.script import _accelerator_precisions

    oracles.require_installed("accelerate", "torch")
    folder = RULES / "AC108"
    import yaml

    launched = yaml.safe_load((folder / "config.yaml").read_text())["mixed_precision"]
    literals = {name: (_accelerator_precisions(str(folder / name)) or [(None,)])[0][0]
                for name in ("train_no.py", "train_default.py")}
    assert literals == {"train_no.py": "no", "train_default.py": None}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCELERATE_", "FSDP_"))}
    env.update(ACCELERATE_MIXED_PRECISION=launched, CUDA_VISIBLE_DEVICES="", PYTHONWARNINGS="ignore")
    done = subprocess.run([sys.executable, "-c", PRECISION_CHILD, json.dumps(literals)], capture_output=True,
                          text=True, env=env, timeout=oracles.CHILD_TIMEOUT, stdin=subprocess.DEVNULL)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stderr[-3000:]
    used = json.loads(lines[-1][len("RESULT "):])
    assert launched == "bf16" and used == {"train_no.py": "no", "train_default.py": "bf16"}


def test_ac013_accelerate_loads_the_number_the_message_says():
    """What Accelerate's own loader (`load_config_from_file`, PyYAML's safe_load) gives for each
    AC013 bad fixture is the number AC013's message says the run uses."""
    import json
    import re
    import subprocess
    import sys

    from conftest import check_json

    oracles.require_installed("accelerate")
    folder = RULES / "AC013"
    said = {}
    for finding in check_json(str(folder))[1]["findings"]:
        if finding["code"] == "AC013":
            said[(os.path.basename(finding["file"]), finding["pointer"])] = \
                int(re.search(r"it uses (\d+)", finding["message"]).group(1))
    assert set(said) == {("bad.yaml", "/num_processes"), ("bad_nested.yaml", "/fsdp_config/fsdp_min_num_params")}
    child = ("import json, sys\nfrom accelerate.commands.config.config_args import load_config_from_file\n"
             "out = {}\nfor path in sys.argv[1:]:\n    config = load_config_from_file(path)\n"
             "    out[path] = [config.num_processes, (config.fsdp_config or {}).get('fsdp_min_num_params')]\n"
             "print('RESULT ' + json.dumps(out))\n")
    paths = [str(folder / name) for name in ("bad.yaml", "bad_nested.yaml")]
    done = subprocess.run([sys.executable, "-c", child, *paths], capture_output=True, text=True,
                          timeout=oracles.CHILD_TIMEOUT, stdin=subprocess.DEVNULL)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stderr[-3000:]
    loaded = json.loads(lines[-1][len("RESULT "):])
    assert loaded[paths[0]][0] == said[("bad.yaml", "/num_processes")] == 8
    assert loaded[paths[1]][1] == said[("bad_nested.yaml", "/fsdp_config/fsdp_min_num_params")] == 60


NUM_PROCESSES_CASES = {
    "quoted_no_absent.yaml": "distributed_type: 'NO'\n",
    "quoted_no_minus_one.yaml": "distributed_type: 'NO'\nnum_processes: -1\n",
    "unquoted_no_absent.yaml": "distributed_type: NO\n",
    "multi_gpu_absent.yaml": "distributed_type: MULTI_GPU\n",
    "fsdp_minus_one.yaml": "distributed_type: FSDP\nnum_processes: -1\n",
    "multi_gpu_two.yaml": "distributed_type: MULTI_GPU\nnum_processes: 2\n",
}


def test_ac006_num_processes_is_reported_where_accelerate_launch_refuses(tmp_path):
    """AC006's num_processes finding, for each way of leaving it out or at -1, against what
    `_validate_launch_command` does with the file and no --num_processes (the loader gives a
    quoted "NO" without the key one process; an unquoted no is False there)."""
    import json
    import subprocess
    import sys

    from conftest import check_json

    oracles.require_installed("accelerate")
    for name, body in NUM_PROCESSES_CASES.items():
        (tmp_path / name).write_text("compute_environment: LOCAL_MACHINE\n" + body)
    reported = {os.path.basename(f["file"]) for f in check_json(str(tmp_path))[1]["findings"]
                if f["code"] == "AC006" and "num_processes is -1" in f["message"]}
    child = ("import json, sys\nfrom accelerate.commands.launch import launch_command_parser, "
             "_validate_launch_command\nout = {}\nfor path in sys.argv[1:]:\n"
             "    args = launch_command_parser().parse_args(['--config_file', path, 'train.py'])\n"
             "    try:\n        _validate_launch_command(args)\n        out[path] = None\n"
             "    except Exception as error:\n        out[path] = str(error)\nprint('RESULT ' + json.dumps(out))\n")
    paths = [str(tmp_path / name) for name in NUM_PROCESSES_CASES]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCELERATE_", "FSDP_"))}
    done = subprocess.run([sys.executable, "-c", child, *paths], capture_output=True, text=True, env=env,
                          timeout=oracles.CHILD_TIMEOUT, stdin=subprocess.DEVNULL)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stderr[-3000:]
    refused = {os.path.basename(path) for path, error in json.loads(lines[-1][len("RESULT "):]).items()
               if error and "manually pass in `--num_processes`" in error}
    assert refused == reported == {"quoted_no_minus_one.yaml", "unquoted_no_absent.yaml", "multi_gpu_absent.yaml",
                                   "fsdp_minus_one.yaml"}
