"""Conversion outputs judged by their target framework, batched: one child process per framework.

    cases = conversions(per_format)          # every source of bench/convert_matrix.py to every target
    verdicts = judge(FRAMEWORKS["deepspeed"], cases)   # ONE child for all ds_config outputs
    rows = [classify(case, verdicts) for case in cases if case.target in ...]

Each output is written to a file named as its target's reader expects (bench/convert_matrix.py
OUTPUT_NAMES) and judged by the framework's own code, through the harnesses that already exist:

- deepspeed: `DeepSpeedConfig` on the CPU (tests/oracles.py: hjson with duplicate keys refused, the
  HF Trainer's "auto" filling, the world size patched) at the source's world size when the source
  states one, else at any plausible one; the text must also be plain JSON (what transformers and
  Accelerate load).
- accelerate, accelerate-fsdp2: `accelerate launch --config_file FILE` up to building the plugin
  (tests/test_accelerate_oracle.py `run_oracle`: `load_config_from_file`, `_validate_launch_command`,
  `prepare_*_env`, the FSDP / DeepSpeed plugin).
- axolotl: `axolotl.utils.config.validate_config` (tests/test_axolotl_oracle.py `schema_run`).
- torchtitan: torchtitan 0.2.2's `ConfigManager` (tests/torchtitan_oracle_child.py).
- megatron-args, megatron (the argument list of the script's launch line): Megatron-LM's
  `parse_args`, `validate_args`, `core_transformer_config_from_args` (tests/megatron_oracle.py), at the
  source's world size when it states one, else the smallest world the output's degrees fit.
- fsdp2: the module compiles (`ast`), imports with torch, and its `setup(model)` shards a tiny
  transformer (tests/fsdp2_harness/model.py) in a 1-process gloo group and runs one forward,
  backward and step (`fsdp2_outcomes`, in one child).
- plan: the Plan YAML validates against schemas/plan.schema.json and reads back (in process).

A refusal is explained when the output holds placeholders (`resolve.PLACEHOLDER`, "FILL_IN"), the
report has an `unknown` entry whose reason starts "placeholder FILL_IN" for exactly those keys, and
the output with each placeholder replaced by a plausible value (`fill_placeholders`) is accepted.
A same-format round trip that is the source text unchanged is refused exactly when its source is
(not the converter's doing). A refusal that only says this machine has no GPU, or lacks a package the
source's own custom module needs, is "environment" (not judged).

`python tests/convert_oracle.py [--per-format N]` prints the acceptance table and every refusal.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
import sys
import tempfile
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
from conftest import convert_matrix  # noqa: E402 - beside this file, also when it runs as a script

PLACEHOLDER = "FILL_IN"  # shardshift.resolve.PLACEHOLDER (checked in the test module)
PLACEHOLDER_REASON = f"placeholder {PLACEHOLDER}"

# How many corpus files per source format (bench/convert_matrix.py `sources`): the issue asks for 8.
PER_FORMAT = 8

# the verdict kinds, in the order of the acceptance table
ACCEPTED, PLACEHOLDERS, ROUND_TRIP, ENVIRONMENT, UNEXPLAINED = (
    "accepted", "refused: named placeholders", "refused like its source", "environment", "refused: unexplained")
KINDS = (ACCEPTED, PLACEHOLDERS, ROUND_TRIP, ENVIRONMENT, UNEXPLAINED)

# which framework judges which target
FRAMEWORK_OF = {"deepspeed": "deepspeed", "accelerate": "accelerate", "accelerate-fsdp2": "accelerate",
                "axolotl": "axolotl", "torchtitan": "torchtitan", "megatron": "megatron",
                "megatron-args": "megatron", "fsdp2": "fsdp2", "plan": "plan"}


# --- the conversions ----------------------------------------------------------------------------


@dataclass
class Case:
    source_format: str
    source: str  # path of the source file
    target: str
    text: str  # the output
    placeholders: list[str]  # targets of the report's "placeholder FILL_IN" entries
    unchanged: bool  # the output is the source text (a same-format round trip)
    world: int | None  # the source's world size, when it states or defaults one
    error: str | None = None  # the conversion raised
    data_parallel: int | None = None  # the source's world over its model-parallel degrees (DeepSpeed's batch rule)
    members: dict[str, str] = field(default_factory=dict)  # the source setup's files: path -> format
    name: str = ""  # a unique file stem
    paths: dict[str, str] = field(default_factory=dict)  # "output" / "filled" -> the written file
    reasons: list[str] = field(default_factory=list)  # the report's reasons

    @property
    def filled(self) -> str | None:
        """The output with each placeholder replaced by a plausible value, when it has any."""
        python = self.target == "fsdp2"
        return fill_placeholders(self.text, python=python) if placeholder_occurrences(self.text, python=python) \
            else None

    def label(self) -> str:
        return f"{self.source_format}:{Path(self.source).name} -> {self.target}"


def _positive(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _world(plan) -> int | None:
    return _positive(plan.get("world.world_size")) if plan is not None else None


def _data_parallel(plan) -> int | None:
    """The world over TP x PP x CP: what DeepSpeed's batch check multiplies by when the model is
    split (Megatron-DeepSpeed hands DeepSpeed its mpu)."""
    world = _world(plan)
    if world is None:
        return None
    model = 1
    for name in ("tensor", "pipeline", "context"):
        model *= _positive(plan.get(f"parallelism.{name}")) or 1
    return world // model if world % model == 0 else world


@lru_cache(maxsize=4)
def conversions(per_format: int = PER_FORMAT) -> tuple[Case, ...]:
    """Every source of bench/convert_matrix.py (`per_format` files per source format) converted to
    every target with `shardshift.api.convert`."""
    from shardshift import api

    bench = convert_matrix()
    cases: list[Case] = []
    for number, (source_format, path) in enumerate(bench.sources(per_format)):
        text = Path(path).read_text(encoding="utf-8-sig", errors="replace")
        world = data_parallel = None
        members = {path: source_format}
        try:
            from shardshift.resolve import resolve

            loaded = api.load(path)
            members.update({d.path: d.format for d in getattr(loaded, "documents", ()) if d.format})
            if loaded.plan is not None:
                resolved = resolve(loaded.plan, source_format, path)
                world, data_parallel = _world(resolved), _data_parallel(resolved)
        except Exception:  # noqa: BLE001 - hints for the oracle only
            pass
        for target in api.targets():
            case = Case(source_format, path, target, "", [], False, world, name=f"{number:03d}_{target}",
                        data_parallel=data_parallel, members=members)
            try:
                migration = api.convert(path, target)
            except Exception as error:  # noqa: BLE001 - a conversion that raises is a failure row
                case.error = f"{type(error).__name__}: {error}"
                cases.append(case)
                continue
            case.text = migration.text
            case.unchanged = migration.text == text
            case.placeholders = [entry.target for entry in migration.entries if entry.status == "unknown"
                                 and (entry.reason or "").startswith(PLACEHOLDER_REASON)]
            case.reasons = [entry.reason or "" for entry in migration.entries]
            cases.append(case)
    return tuple(cases)


# --- placeholders --------------------------------------------------------------------------------

# key (normalised: lower case, "_" for "-", last path component) -> a plausible value, first match wins
PLAUSIBLE: tuple[tuple[str, Any], ...] = (
    (r"num_processes|nproc|world_size|gpus_per_node|num_gpus|processes", 8),
    (r"num_machines|nnodes|nodes|machines", 1),
    (r"micro", 1),
    (r"global|train_batch_size", 64),
    (r"batch", 1),
    (r"accumulation", 1),
    (r"num_experts|experts", 64),  # a multiple of any expert-parallel degree up to 64
    (r"num_layers|n_layers|layers", 2),
    (r"ffn|intermediate", 256),
    (r"query_groups|kv_heads", 2),
    (r"heads", 4),
    (r"hidden|dim", 64),
    (r"max_position_embeddings", 131072),  # at least any sequence length the source states
    (r"seq|position|length", 128),
    (r"vocab", 128),
    (r"iters|steps|samples", 10),
    (r"(^|_)lr|learning_rate", 1e-4),
    (r"^type$", "alpaca"),  # an Axolotl dataset's prompt format
    (r"model|path|dataset|name|tokenizer|dir|file", "placeholder"),
)
_OCCURRENCE = re.compile(r"""(["']?)FILL_IN\1""")
_KEY_BEFORE = re.compile(r"""([A-Za-z_][A-Za-z0-9_./-]*)["']?\s*[:=]?\s*\[?\s*$""")
_PARENT = re.compile(r"""^\s*(?:-\s+)?["']?([A-Za-z_][A-Za-z0-9_.-]*)["']?\s*[:=]|^\s*\[+([^\]]+)\]+\s*$""")


def normalise(key: str) -> str:
    """A key as the report or the text spells it -> one spelling: `--micro-batch-size`,
    `/train_micro_batch_size_per_gpu`, `fsdp_config.num_processes` -> the last component, lower
    case, "_" for "-"."""
    key = key.strip().strip("\"'").lstrip("-/")
    key = re.split(r"[./]", key)[-1] if key else key
    return key.lower().replace("-", "_")


def plausible(key: str) -> Any:
    normal = normalise(key)
    for pattern, value in PLAUSIBLE:
        if re.search(pattern, normal):
            return value
    return 1


def _code(line: str) -> str:
    """A line without its comment (a "#" outside quotes; "//" never occurs in these outputs)."""
    quote = None
    for i, char in enumerate(line):
        if quote:
            if char == quote:
                quote = None
        elif char in "\"'":
            quote = char
        elif char == "#":
            return line[:i]
    return line


def _indent(line: str) -> int:
    """Where a line's key starts (a YAML list item's "- " counts as indentation)."""
    stripped = line.lstrip()
    return len(line) - len(stripped) + (len(stripped) - len(stripped[1:].lstrip()) if stripped.startswith("- ") else 0)


@dataclass(frozen=True)
class Occurrence:
    line: int  # 0-based
    start: int
    end: int
    key: str  # normalised: the key the value belongs to
    parents: tuple[str, ...]  # the enclosing keys, nearest first (YAML/JSON nesting, a TOML table, a dict)


def placeholder_occurrences(text: str, *, python: bool = False) -> list[Occurrence]:
    """The placeholders in `text`, outside comments (in Python only string literals, so that
    prose in a docstring does not count): each with the key before it on its line (`"key":
    "FILL_IN"`, `key: FILL_IN`, `--flag FILL_IN`, `NAME = ...`), else the last word of the previous
    non-blank line (an argument list with one word a line), and its enclosing keys."""
    found = []
    lines = text.splitlines()
    for number, line in enumerate(lines):
        code = _code(line)
        for match in _OCCURRENCE.finditer(code):
            if python and not match.group(1):
                continue
            before = _KEY_BEFORE.search(code[:match.start()])
            if before is None:
                previous = next((_code(l) for l in reversed(lines[:number]) if _code(l).strip()), "")
                words = previous.split()
                key = normalise(words[-1]) if words else ""
            else:
                key = normalise(before.group(1))
            parents, indent = [], _indent(line)
            for above in reversed(lines[:number]):
                if not above.strip() or _indent(above) >= indent and not above.lstrip().startswith("["):
                    continue
                parent = _PARENT.match(_code(above))
                if parent is not None:
                    parents.append(normalise(parent.group(1) or parent.group(2)))
                    indent = _indent(above)
                if indent == 0:
                    break
            found.append(Occurrence(number, match.start(), match.end(), key, tuple(parents)))
    return found


def placeholder_keys(text: str, *, python: bool = False) -> list[str]:
    """The keys of `placeholder_occurrences`, in order."""
    return [occurrence.key for occurrence in placeholder_occurrences(text, python=python)]


def _stated(text: str, key: str) -> int | None:
    """The number `text` states for `key` (`--num-attention-heads 32`, `num_attention_heads: 32`)."""
    pattern = rf"""(?:--{key.replace("_", "-")}|\b{key})["']?\s*[:= ]\s*(\d+)\b"""
    found = re.search(pattern, text)
    return int(found.group(1)) if found else None


def _shape(text: str, key: str, value: Any) -> Any:
    """A model-shape value that fits the shape the text states (Megatron checks hidden % heads,
    heads % query groups, heads and groups % TP)."""
    tp = _stated(text, "tensor_model_parallel_size") or 1
    groups = _stated(text, "num_query_groups") or 1
    if key == "num_attention_heads":
        heads = math.lcm(4, tp, groups)
        hidden = _stated(text, "hidden_size")
        return heads if hidden is None or hidden % heads == 0 else value
    if key == "hidden_size":
        heads = _stated(text, "num_attention_heads") or math.lcm(4, tp, groups)
        return heads * 16
    return value


def fill_placeholders(text: str, *, python: bool = False) -> str:
    """`text` with every placeholder replaced by a plausible value for its key (`plausible`, a
    model shape that fits what the text states): a number written bare, a string quoted with
    double quotes (valid in JSON, YAML, TOML and Python)."""
    lines = text.splitlines(keepends=True)
    for occurrence in reversed(placeholder_occurrences(text, python=python)):
        value = _shape(text, occurrence.key, plausible(occurrence.key))
        written = json.dumps(value) if isinstance(value, str) else repr(value)
        line = lines[occurrence.line]
        lines[occurrence.line] = line[:occurrence.start] + written + line[occurrence.end:]
    return "".join(lines)


def unnamed_placeholders(text: str, named: list[str], *, python: bool = False) -> tuple[list[str], list[str]]:
    """(placeholders in the text no report entry names, report entries naming no placeholder in
    the text). An entry names a placeholder when its key is the placeholder's key or one of its
    enclosing keys (`datasets` for the `path` and `type` under it)."""
    occurrences = placeholder_occurrences(text, python=python)
    # a Python dict item is named as the module spells it: LR_SCHEDULE['total_num_steps']
    named = [re.sub(r"^\w+\[['\"](.+)['\"]\]$", r"\1", key or "") for key in named]
    names = {normalise(key or "") for key in named}
    unnamed = sorted({o.key for o in occurrences if not names & {o.key, *o.parents}})
    unused = sorted(name for name in names if not any(name in {o.key, *o.parents} for o in occurrences))
    return unnamed, unused


# --- writing the outputs ------------------------------------------------------------------------


def write_outputs(cases, folder: Path) -> None:
    """Each case's output (and its filled variant) to its own folder under `folder`, under the file
    name its target's reader recognises."""
    names = convert_matrix().OUTPUT_NAMES
    for case in cases:
        if case.error is not None:
            continue
        for kind, text in (("output", case.text), ("filled", case.filled)):
            if text is None:
                continue
            directory = folder / f"{case.name}_{kind}"
            directory.mkdir(parents=True, exist_ok=True)
            path = directory / names[case.target]
            path.write_text(text, encoding="utf-8")
            case.paths[kind] = str(path)


# --- the judges: {path: None (accepted) | "environment: ..." | the framework's message} -----------

ENV = "environment: "


def deepspeed_outcomes(payload: list[dict]) -> dict[str, str | None]:
    """(In the child.) DeepSpeedConfig for each {"path", "world"}: at `world` when given, else at the
    first plausible world size (after the HF Trainer's "auto" filling)."""
    import oracles

    out: dict[str, str | None] = {}
    for item in payload:
        path, world = item["path"], item["world"]
        text = Path(path).read_text(encoding="utf-8")
        try:
            json.loads(text)
            config = oracles.load_text(text)
        except Exception as error:  # noqa: BLE001
            out[path] = f"not JSON: {oracles._error_text(error)}"
            continue
        if not isinstance(config, dict):
            out[path] = "not a JSON object"
            continue
        sizes = (world,) if world else (*oracles.ALL_WORLD_SIZES, *oracles.implied_world_sizes(config))
        accepted, _, errors = oracles.first_acceptance(config, sizes)
        if accepted is not None:
            out[path] = _scheduler_refusal(config)
            continue
        error = errors[0] if errors else "refused"
        if world:
            other, _, _ = oracles.first_acceptance(config, (*oracles.ALL_WORLD_SIZES,
                                                            *oracles.implied_world_sizes(config)))
            if other is not None:
                error += f" (accepted at world {other}, not at the source's {world})"
        out[path] = ENV + error if oracles.gpu_only(error) else error
    return out


def _scheduler_refusal(config: dict) -> str | None:
    """(In the child.) What building the config's scheduler raises, as deepspeed.initialize builds it
    (engine._scheduler_from_config: DeepSpeed's own class by name, else torch's, called with the
    optimizer and **params), or None. Params the HF Trainer fills ("auto") are not judged here."""
    import torch
    from deepspeed.runtime import lr_schedules

    block = config.get("scheduler")
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        return None
    params = block.get("params", {})
    if not isinstance(params, dict) or "auto" in params.values():
        return None
    name = block["type"]
    cls = getattr(lr_schedules, name, None) if name in lr_schedules.VALID_LR_SCHEDULES else \
        getattr(torch.optim.lr_scheduler, name, None)
    if cls is None:
        return None
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1e-3)
    try:
        cls(optimizer, **params)
    except Exception as error:  # noqa: BLE001 - the refusal is the verdict
        return f"{name}(optimizer, **params): {type(error).__name__}: {error}"
    return None


def fsdp2_outcomes(payload: list[str]) -> dict[str, str | None]:
    """(In the child.) Each emitted FSDP2 module: compiled, imported, `setup(TinyTransformer())` in a
    1-process gloo group, then one forward, backward and step. A HYBRID_SHARD_SIZE that cannot divide
    one process is set to None first (the module's own error names it otherwise)."""
    import ast
    import socket
    import traceback
    import warnings

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK="0", WORLD_SIZE="1", LOCAL_RANK="0",
                      LOCAL_WORLD_SIZE="1")
    import torch

    from fsdp2_harness.model import TinyTransformer, batch

    out: dict[str, str | None] = {}
    for number, path in enumerate(payload):
        text = Path(path).read_text(encoding="utf-8")
        try:
            compile(ast.parse(text, path), path, "exec")
        except SyntaxError as error:
            out[path] = f"SyntaxError: {error}"
            continue
        try:
            spec = importlib.util.spec_from_file_location(f"emitted_{number}", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            if getattr(module, "HYBRID_SHARD_SIZE", None) not in (None, "node", 1):
                module.HYBRID_SHARD_SIZE = None
            torch.manual_seed(0)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                engine = module.setup(TinyTransformer())
                loss = engine(batch(0, 0))
                engine.backward(loss)
                engine.step()
            out[path] = None if math.isfinite(float(loss.detach())) else f"loss is {float(loss)}"
        except Exception as error:  # noqa: BLE001 - a refusal is a result
            message = f"{type(error).__name__}: {error}"
            import oracles

            out[path] = ENV + message if oracles.gpu_only(message) else message
            if not out[path].startswith(ENV) and not isinstance(error, ValueError):
                out[path] += "\n" + traceback.format_exc(limit=-2)
    return out


def _child(function: str, payload: Any) -> Any:
    import oracles

    return oracles.run_in_child(function, payload, module="convert_oracle")


def _judge_deepspeed(cases) -> dict[str, str | None]:
    import oracles

    oracles.require_installed("deepspeed", "hjson")
    payload = [{"path": path, "world": case.data_parallel} for case in cases for path in case.paths.values()]
    return _child("deepspeed_outcomes", payload)


def _judge_fsdp2(cases) -> dict[str, str | None]:
    import oracles

    oracles.require_installed("torch")
    return _child("fsdp2_outcomes", [path for case in cases for path in case.paths.values()])


def _judge_accelerate(cases) -> dict[str, str | None]:
    import oracles
    from test_accelerate_oracle import run_oracle

    paths = [path for case in cases for path in case.paths.values()]
    out = {}
    for path, outcome in run_oracle(paths).items():
        error = outcome["error"]
        if outcome["stage"] is None:
            out[path] = None
        elif oracles.gpu_only(error or ""):
            out[path] = ENV + f"{outcome['stage']}: {error}"
        else:
            out[path] = f"{outcome['stage']}: {error}"
    return out


def _judge_axolotl(cases) -> dict[str, str | None]:
    from test_axolotl_oracle import schema_run

    texts = {path: Path(path).read_text(encoding="utf-8") for case in cases for path in case.paths.values()}
    return dict(schema_run(texts)["errors"]) if texts else {}


def _judge_torchtitan(cases) -> dict[str, str | None]:
    return _judge_torchtitan_paths([path for case in cases for path in case.paths.values()])


def _judge_torchtitan_paths(paths: list[str]) -> dict[str, str | None]:
    """torchtitan's config manager on each TOML (None: taken), one child for all."""
    import subprocess

    import oracles

    oracles.require_installed("torchtitan", "tyro")
    if not paths:
        return {}
    done = subprocess.run([sys.executable, str(TESTS / "torchtitan_oracle_child.py")],
                          input=json.dumps({"files": paths}), capture_output=True, text=True,
                          timeout=oracles.CHILD_TIMEOUT, cwd=tempfile.gettempdir())
    assert done.returncode == 0, done.stderr[-3000:]
    out = {}
    for path, result in zip(paths, json.loads(done.stdout)["files"]):
        if "ok" in result:
            out[path] = None
        else:
            message = f"{result['error']}: {result['message']}"
            out[path] = ENV + message if result["error"] == "ModuleNotFoundError" else message
    return out


def _megatron_world(case: Case, document) -> int:
    """The source's world size, else the smallest one the output's degrees fit."""
    if case.world:
        return case.world
    plan = document.plan

    def degree(name):
        value = plan.get(f"parallelism.{name}") if plan is not None else None
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 1

    model = degree("tensor") * degree("pipeline") * degree("context")
    return math.lcm(model, degree("expert") * degree("pipeline"))


def _judge_megatron(cases) -> dict[str, str | None]:
    from shardshift.formats.megatron import read

    import megatron_oracle
    from test_megatron_oracle import ENVIRONMENT, argv_for_oracle

    reason = megatron_oracle.available()
    if reason is not None:
        if os.environ.get("CI", "").strip().lower() in ("1", "true", "yes"):
            raise AssertionError(f"the Megatron oracle must run in CI: {reason}")
        import pytest

        pytest.skip(reason)
    out: dict[str, str | None] = {}
    judged, batch = [], []
    for case in cases:
        for path in case.paths.values():
            document = read(Path(path).read_text(encoding="utf-8"), path)
            argv = argv_for_oracle(document) if document.syntax is None else None
            if document.syntax is not None:
                out[path] = f"shardshift cannot read it back: {document.syntax}"
            elif argv is None:
                out[path] = "a number only the run decides (a shell variable): not judged"
            else:
                judged.append(path)
                batch.append((argv, _megatron_world(case, document)))
    for path, verdict, (_, world) in zip(judged, megatron_oracle.judge(batch), batch):
        if verdict.ok:
            out[path] = None
        else:
            message = f"{verdict.stage} (world {world}): {verdict.error}"
            out[path] = ENV + message if ENVIRONMENT.search(verdict.error or "") else message
    return out


def _judge_plan(cases) -> dict[str, str | None]:
    import jsonschema
    import yaml

    from shardshift.formats.plan_yaml import read

    validator = jsonschema.Draft202012Validator(json.loads((ROOT / "schemas" / "plan.schema.json").read_text()))
    out: dict[str, str | None] = {}
    for case in cases:
        for path in case.paths.values():
            text = Path(path).read_text(encoding="utf-8")
            try:
                data = yaml.safe_load(text)
            except yaml.YAMLError as error:
                out[path] = f"not YAML: {error}"
                continue
            errors = sorted(validator.iter_errors(data if data is not None else {}), key=lambda e: list(e.path))
            if errors:
                out[path] = f"schema: /{'/'.join(map(str, errors[0].path))}: {errors[0].message}"
                continue
            document = read(text, path)
            out[path] = None if document.syntax is None else f"reader: {document.syntax}"
    return out


JUDGES = {"deepspeed": _judge_deepspeed, "accelerate": _judge_accelerate, "axolotl": _judge_axolotl,
          "torchtitan": _judge_torchtitan, "megatron": _judge_megatron, "fsdp2": _judge_fsdp2,
          "plan": _judge_plan}


# source format -> the framework that runs such a file (FSDP2 sources are user code: never run)
SOURCE_FRAMEWORK = {"deepspeed": "deepspeed", "accelerate": "accelerate", "axolotl": "axolotl",
                    "torchtitan": "torchtitan", "megatron": "megatron", "plan": "plan"}


def judge(framework: str, cases, folder: Path) -> dict[str, str | None]:
    """Write the outputs of `cases` for `framework` under `folder` and judge them all in one go,
    with the source files of this framework's own format (to tell a refusal the source already
    gets from one the conversion brings)."""
    mine = [case for case in cases if FRAMEWORK_OF[case.target] == framework and case.error is None]
    write_outputs(mine, folder)
    sources = {}
    for case in mine:
        for path, source_format in case.members.items():
            if SOURCE_FRAMEWORK.get(source_format) == framework and path not in sources:
                sources[path] = Case(source_format, path, source_format, "", [], True, case.world,
                                     data_parallel=case.data_parallel, paths={"source": path})
    return JUDGES[framework]([*mine, *sources.values()])


# --- classification --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    case: Case
    kind: str
    message: str | None  # the framework's message for a refusal, else None
    why: str = ""  # for an unexplained refusal: what is missing

    def failure(self) -> tuple[str, str, str]:
        """(source, target, framework message) of an unexplained refusal."""
        return (f"{self.case.source_format}:{Path(self.case.source).name}", self.case.target,
                f"{self.why}: {self.message}" if self.why else str(self.message))


def _cause(message: str) -> str:
    """A refusal's first line without paths, file names and world sizes (a source and its output
    sit in different folders, under different names)."""
    first = re.sub(r"\(world \d+\)|world \d+", "", (message.splitlines() or [""])[0])
    return " ".join(word for word in first.split() if "/" not in word and not word.endswith((".yaml", ".json")))


def _same_cause(source: str, output: str) -> bool:
    """Whether the output is refused for its source's cause. argparse lists unrecognized words in
    the order given and the writers regroup flags and leave out values only the run knows, so for
    those the output's unrecognized flags must be among the source's."""
    marker = "unrecognized arguments:"
    if marker in source and marker in output:
        def flags(message):
            return {word.split("=")[0] for word in message.split(marker, 1)[1].split() if word.startswith("--")}
        return flags(output) <= flags(source)
    return _cause(source) == _cause(output)


def bad_on_purpose(case: Case) -> bool:
    """A source that is one of shardshift's own bad fixtures (`fixtures/.../bad*`): wrong on purpose."""
    path = Path(case.source)
    return path.name.startswith("bad") and (ROOT / "fixtures") in path.parents


def classify(case: Case, verdicts: dict[str, str | None]) -> Row:
    """The kind of one conversion's outcome (see the module doc)."""
    row = _classify(case, verdicts)
    if row.kind == UNEXPLAINED and case.error is None and bad_on_purpose(case):
        return Row(case, ROUND_TRIP, row.message, "its source is a fixture wrong on purpose")
    return row


def _classify(case: Case, verdicts: dict[str, str | None]) -> Row:
    if case.error is not None:
        return Row(case, UNEXPLAINED, case.error, "the conversion raised")
    message = verdicts[case.paths["output"]]
    if message is None:
        return Row(case, ACCEPTED, None)
    if message.startswith(ENV):
        return Row(case, ENVIRONMENT, message)
    source = next((verdicts[path] for path, source_format in case.members.items()
                   if SOURCE_FRAMEWORK.get(source_format) == FRAMEWORK_OF[case.target] and verdicts.get(path)), None)
    if source is not None and (case.unchanged or _same_cause(source, message)):
        return Row(case, ROUND_TRIP, message)
    python = case.target == "fsdp2"
    if python and _only_the_sources_auto(case, message):
        return Row(case, ROUND_TRIP, message, 'the source\'s own "auto" values (its consumer, the HF Trainer, fills '
                                              'them in), each named in the report as a placeholder to set')
    if not placeholder_occurrences(case.text, python=python) and not case.placeholders:
        return Row(case, UNEXPLAINED, message, "" if source is None else f"its source is refused for another "
                                                                         f"cause ({source[:300]})")
    named = sorted({normalise(key or "") for key in case.placeholders})
    unnamed, unused = unnamed_placeholders(case.text, case.placeholders, python=python)
    if unnamed or unused:
        return Row(case, UNEXPLAINED, message, f"placeholders in the text the report does not name: {unnamed}; "
                                               f"report placeholders not in the text: {unused}")
    filled = verdicts.get(case.paths.get("filled", ""), "not judged")
    if filled is not None and not filled.startswith(ENV):
        return Row(case, UNEXPLAINED, message, f"still refused with the placeholders {named} filled in ({filled})")
    return Row(case, PLACEHOLDERS, message)


_UNSET = re.compile(r"set ([A-Z_, ]+) at the top of")


def _only_the_sources_auto(case: Case, message: str) -> bool:
    """An FSDP2 module that refuses to set up only because constants hold "auto", copied from a source
    that says "auto" itself, with a report entry that says so for them."""
    listed = _UNSET.search(message)
    if listed is None or '"auto"' not in "".join(_read(path) for path in case.members):
        return False
    blocks = re.split(r"\n(?=[A-Z_]+ = )", case.text)
    for name in (n.strip() for n in listed.group(1).split(",")):
        block = next((b for b in blocks if b.lstrip("\n").startswith(name + " = ")), "")
        if '"auto"' not in block or f'"{PLACEHOLDER}"' in block:
            return False
    return any('placeholder "auto"' in reason for reason in case.reasons)


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def rows_for(framework: str, cases, folder: Path) -> list[Row]:
    verdicts = judge(framework, cases, folder)
    mine = [case for case in cases if FRAMEWORK_OF[case.target] == framework]
    return [classify(case, verdicts) for case in mine]


def table(rows: list[Row]) -> str:
    """The acceptance table per target (Markdown), then every refusal that is not accepted."""
    from collections import Counter

    counts: dict[str, Counter] = {}
    for row in rows:
        counts.setdefault(row.case.target, Counter())[row.kind] += 1
    lines = ["| target | " + " | ".join(KINDS) + " |", "|---|" + "---|" * len(KINDS)]
    for target in sorted(counts):
        lines.append(f"| {target} | " + " | ".join(str(counts[target][kind]) for kind in KINDS) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-format", type=int, default=PER_FORMAT)
    parser.add_argument("--framework", action="append", choices=sorted(JUDGES))
    args = parser.parse_args(argv)
    sys.path.insert(0, str(TESTS))
    cases = conversions(args.per_format)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="shardshift-convert-oracle-") as scratch:
        for framework in args.framework or sorted(JUDGES):
            rows += rows_for(framework, cases, Path(scratch) / framework)
    sys.stdout.write(table(rows))
    for row in rows:
        if row.kind not in (ACCEPTED,):
            source, target, message = row.failure()
            sys.stdout.write(f"\n[{row.kind}] {source} -> {target}\n    {message[:600]}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
