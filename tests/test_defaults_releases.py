"""Issue 34: no defaults row claims a release whose source says otherwise. Each defaults table lists
the releases whose source was read (`CHECKED_RELEASES`, two or more per framework where the package
index has them); here each of those releases is downloaded (`pip download --no-deps`, never
installed or imported), the defaults are read from its source with `ast`, and the table, asked for
that release, must give the same. A pinned release outside a table's checked range resolves to
Unknown (tests/test_defaults.py), never to the newest release's value.

The transformers table is generated per release from the wheels (scripts/defaults/
transformers_defaults.py): two releases besides the installed one are regenerated and compared."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
import sys

import pytest

from conftest import ROOT

pytestmark = pytest.mark.oracle

sys.path.insert(0, str(ROOT / "scripts" / "defaults"))
from release_sources import source_files  # noqa: E402

MISSING = object()


def _literal(node: ast.AST):
    """A default as written: a literal, an enum member (its name in lower case, as HF's enums are
    valued), Field(default=...) / field(default=...), a negative number."""
    if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) in ("Field", "field"):
        for keyword in node.keywords:
            if keyword.arg == "default":
                return _literal(keyword.value)
        return _literal(node.args[0]) if node.args else MISSING
    if isinstance(node, ast.Attribute) and node.attr == "value" and isinstance(node.value, ast.Attribute):
        node = node.value  # OptimizerNames.ADAMW_HF.value
    if isinstance(node, ast.Attribute) and node.attr.isupper():
        return node.attr.lower()
    try:
        return ast.literal_eval(node)
    except ValueError:
        return MISSING


def field_default(files: dict[str, str], field: str, classes: str, under: str = ""):
    """The default of `field` in the first class whose name matches `classes` (a regex) that has it,
    over the release's files below `under`."""
    for path in sorted(files):
        if not path.startswith(under) or "/tests/" in path or "/experiments/" in path:
            continue
        if field not in files[path]:
            continue
        tree = ast.parse(files[path])
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and re.fullmatch(classes, node.name):
                for item in node.body:
                    if isinstance(item, ast.AnnAssign) and getattr(item.target, "id", None) == field and item.value:
                        return _literal(item.value)
    return MISSING


def constant(files: dict[str, str], path: str, name: str):
    for node in ast.parse(files[path]).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return _literal(node.value)
    return MISSING


def env_default(files: dict[str, str], path: str, suffix: str, in_class: str):
    """The default of `os.environ.get(<...> + "SUFFIX", default)` inside class `in_class`: a literal,
    or the expression's source when it is one (a conditional)."""
    for node in ast.walk(ast.parse(files[path])):
        if isinstance(node, ast.ClassDef) and node.name == in_class:
            for call in ast.walk(node):
                if isinstance(call, ast.Call) and getattr(call.func, "attr", None) == "get" and \
                        getattr(call.func.value, "attr", None) == "environ" and len(call.args) == 2:
                    key = call.args[0]
                    key = key.right if isinstance(key, ast.BinOp) else key
                    if isinstance(key, ast.Constant) and str(key.value).endswith(suffix):
                        value = _literal(call.args[1])
                        return ast.unparse(call.args[1]) if value is MISSING else value
    return MISSING


# --- what each framework's source says, in the Plan's terms, per scenario ----------------------------


def deepspeed_source(files):
    constants = "deepspeed/runtime/constants.py"
    fp16 = {"precision.loss_scale": float(constant(files, constants, "FP16_LOSS_SCALE_DEFAULT")),
            "precision.initial_scale_power": constant(files, constants, "FP16_INITIAL_SCALE_POWER_DEFAULT"),
            "precision.loss_scale_window": constant(files, constants, "FP16_LOSS_SCALE_WINDOW_DEFAULT"),
            "precision.hysteresis": constant(files, constants, "FP16_HYSTERESIS_DEFAULT"),
            "precision.consecutive_hysteresis": constant(files, constants, "FP16_CONSECUTIVE_HYSTERESIS_DEFAULT"),
            "precision.min_loss_scale": float(constant(files, constants, "FP16_MIN_LOSS_SCALE_DEFAULT"))}
    common = {"gradient_clipping": float(constant(files, constants, "GRADIENT_CLIPPING_DEFAULT")),
              "sharding.stage": field_default(files, "stage", "DeepSpeedZeroConfig", "deepspeed/runtime/zero/")}
    # the engine's communication_data_type: the dtype it returns when fp16_enabled() holds
    fp16["precision.reduce_dtype"] = _reduce_dtype_when(files, "fp16_enabled")
    return {"fp16": {**common, **fp16}}


def _reduce_dtype_when(files, switch: str):
    """What DeepSpeedEngine.communication_data_type returns under `if self.<switch>():` (no
    communication_data_type in the config), in the Plan's words."""
    tree = ast.parse(files["deepspeed/runtime/engine.py"])
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "communication_data_type" and node.decorator_list \
                and getattr(node.decorator_list[0], "id", "") == "property":
            for test in node.body:
                if isinstance(test, ast.If) and isinstance(test.test, ast.Call) and \
                        getattr(test.test.func, "attr", "") == switch and isinstance(test.body[0], ast.Return):
                    return {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32"}.get(test.body[0].value.attr)
    return MISSING


def accelerate_source(files):
    path = "accelerate/utils/dataclasses.py"
    strategy = env_default(files, path, "SHARDING_STRATEGY", "FullyShardedDataParallelPlugin")
    reshard = env_default(files, path, "RESHARD_AFTER_FORWARD", "FullyShardedDataParallelPlugin")
    fsdp2 = {"sharding.stage": {"FULL_SHARD": 3, "SHARD_GRAD_OP": 2, "NO_SHARD": 0}.get(strategy, strategy)}
    if reshard is not MISSING:  # FSDP2 (fsdp_version 2) exists in this release
        fsdp2["sharding.reshard_after_forward"] = ("'true' if self.fsdp_version == 2" in str(reshard).replace('"', "'")
                                                   or reshard)
    return {"DEEPSPEED": {"sharding.stage": env_default(files, path, "ZERO_STAGE", "DeepSpeedPlugin")},
            "FSDP": fsdp2,
            "MEGATRON_LM": {"parallelism.tensor": env_default(files, path, "TP_DEGREE", "MegatronLMPlugin"),
                            "parallelism.pipeline": env_default(files, path, "PP_DEGREE", "MegatronLMPlugin"),
                            "gradient_clipping": float(env_default(files, path, "GRADIENT_CLIPPING",
                                                                   "MegatronLMPlugin"))}}


def axolotl_source(files):
    schemas = "axolotl/utils/schemas/" if any(p.startswith("axolotl/utils/schemas/") for p in files) \
        else "axolotl/utils/config/"
    pick = lambda name: field_default(files, name, r".*", schemas)  # noqa: E731 - one lookup per field
    return {"plain": {"batch.micro": pick("micro_batch_size"), "batch.accumulation": pick("gradient_accumulation_steps"),
                      "batch.sequence_length": pick("sequence_len"), "optimizer.name": pick("optimizer"),
                      "optimizer.weight_decay": pick("weight_decay"), "scheduler.name": pick("lr_scheduler")}}


def torchtitan_source(files):
    def pick(name, classes):
        return field_default(files, name, classes, "torchtitan/")

    training = r"Training(Config)?"
    optimizer = r"Optimizer(Config|sContainer\.Config)?|Config"
    return {"plain": {"parallelism.tensor": pick("tensor_parallel_degree", r"Parallelism(Config)?"),
                      "parallelism.pipeline": pick("pipeline_parallel_degree", r"Parallelism(Config)?"),
                      "parallelism.context": pick("context_parallel_degree", r"Parallelism(Config)?"),
                      "batch.micro": pick("local_batch_size", training),
                      "batch.sequence_length": pick("seq_len", training),
                      "gradient_clipping": float(pick("max_norm", training)),
                      "optimizer.name": pick("name", optimizer),
                      "optimizer.lr": pick("lr", optimizer),
                      "optimizer.betas": [pick("beta1", optimizer), pick("beta2", optimizer)],
                      "optimizer.eps": pick("eps", optimizer),
                      "optimizer.weight_decay": pick("weight_decay", optimizer),
                      "scheduler.warmup_steps": pick("warmup_steps", r"LRScheduler(Config)?|Config"),
                      "scheduler.name": pick("decay_type", r"LRScheduler(Config)?|Config")}}


def _plan(framework: str, scenario: str):
    from shardshift.plan import Plan
    from shardshift.source import Location

    plan = Plan()
    if framework == "deepspeed" and scenario == "fp16":
        plan.set("precision.param_dtype", "fp16", Location("x", 1, 1, "/fp16/enabled"))
    if framework == "accelerate":
        plan.passthrough["accelerate"] = {"distributed_type": scenario, **({"fsdp_config": {"fsdp_version": 2}}
                                                                         if scenario == "FSDP" else {})}
    return plan


SOURCES = {"deepspeed": ("deepspeed", deepspeed_source), "accelerate": ("accelerate", accelerate_source),
           "axolotl": ("axolotl", axolotl_source), "torchtitan": ("torchtitan", torchtitan_source)}
CASES = [(framework, ".".join(map(str, release)))
         for framework, table in (("deepspeed", "deepspeed"), ("accelerate", "accelerate"), ("axolotl", "axolotl"),
                                  ("torchtitan", "torchtitan"))
         for release in importlib.import_module(f"shardshift.formats.{table}.defaults").CHECKED_RELEASES]


def test_every_table_names_two_checked_releases_or_says_why_not():
    from shardshift.resolve import defaults_table

    for name in ("deepspeed", "accelerate", "axolotl", "torchtitan", "megatron", "fsdp2"):
        table = defaults_table(name)
        checked = getattr(table, "CHECKED_RELEASES", ())
        assert len(checked) >= 2 or getattr(table, "WHY_ONE_RELEASE", ""), name


@pytest.mark.parametrize(("framework", "release"), CASES)
def test_the_table_gives_what_the_release_source_says(framework, release):
    from shardshift.resolve import defaults_table

    package, read = SOURCES[framework]
    said = read(source_files(package, release))
    table = defaults_table(framework)
    version = tuple(int(p) for p in release.split("."))
    for scenario, fields in said.items():
        given = dict(table.defaults(_plan(framework, scenario), version))
        for dotted, value in fields.items():
            assert value is not MISSING, f"{framework} {release}: {dotted} not found in its source"
            assert given.get(dotted) == value, (framework, release, scenario, dotted, given.get(dotted), value)


@pytest.mark.parametrize("release", ["4.46.3", "5.0.0"])
def test_the_transformers_table_row_is_the_release_source(release):
    """The generator, run on another release's training_args.py, gives the row the checked-in table
    holds for it (values and cited lines)."""
    import json

    generator = importlib.import_module("transformers_defaults")  # scripts/defaults is on sys.path
    read = generator.read_defaults(source_files("transformers", release)["transformers/training_args.py"])
    table = json.loads((ROOT / "src" / "shardshift" / "data" / "defaults" / "transformers.json").read_text())
    index, lines = table["releases"][release]
    assert {name: {k: v for k, v in record.items() if k != "line"} for name, record in read.items()} == \
        table["variants"][index]
    assert {name: record["line"] for name, record in read.items()} == lines



@pytest.mark.parametrize("release", ["4.46.3", "5.0.0", "5.24.0"])
def test_the_report_to_names_row_is_the_release_source(release):
    """TA009's table (scripts/defaults/transformers_report_to.py), run on the release's own source, gives the
    names and the cited file and line the checked-in table holds for it."""
    import json

    generator = importlib.import_module("transformers_report_to")  # scripts/defaults is on sys.path
    table = json.loads((ROOT / "src" / "shardshift" / "data" / "defaults" / "transformers_report_to.json").read_text())
    index, source, line = table["releases"][release]
    names, found = generator.read_names(source_files("transformers", release)[source])
    assert (table["variants"][index], line) == (names, found)


@pytest.mark.parametrize("release", ["4.46.3", "5.0.0", "5.24.0"])
def test_the_fields_table_row_is_the_release_source(release):
    """TA010's table (scripts/defaults/transformers_fields.py), run on the release's own source, gives the fields
    the checked-in table holds for that release, for both classes."""
    import json

    generator = importlib.import_module("transformers_fields")  # scripts/defaults is on sys.path
    files = source_files("transformers", release)
    table = json.loads((ROOT / "src" / "shardshift" / "data" / "defaults" / "transformers_fields.json").read_text())
    index = table["releases"].index(release)
    base = generator.class_fields(files[generator.SOURCES["TrainingArguments"]], "TrainingArguments")
    own = generator.class_fields(files[generator.SOURCES["Seq2SeqTrainingArguments"]], "Seq2SeqTrainingArguments")
    read = {"TrainingArguments": set(base), "Seq2SeqTrainingArguments": set(base) | set(own)}
    for cls, fields in read.items():
        held = {name for name, spans in table["classes"][cls].items() if any(a <= index <= b for a, b in spans)}
        assert held == fields, (cls, sorted(held ^ fields))
    complements = set(generator.class_fields(files[generator.SOURCES["TrainingArguments"]], "TrainingArguments", True))
    held = {name for name, spans in table["complements"]["TrainingArguments"].items()
            if any(a <= index <= b for a, b in spans)}
    assert held == complements, sorted(held ^ complements)
