"""Editor schemas: the checked-in copies are the generated ones, they accept what the frameworks
accept (the corpus, judged by the frameworks' own loaders) and reject what they reject."""

from __future__ import annotations

import json

import jsonschema
import pytest

from shardshift import schemas
from shardshift.jsonc import ParseError, parse_jsonc

from conftest import CORPUS, FIXTURES, ROOT, corpus_files, needs_corpus, run_cli

SCHEMAS = ROOT / "schemas"


@pytest.mark.parametrize("name", schemas.GENERATED)
def test_checked_in_schema_is_the_generated_one(name):
    checked_in = (SCHEMAS / schemas.FILES[name]).read_text(encoding="utf-8")
    assert checked_in == schemas.dumps(schemas.schema(name)), "regenerate: python -m shardshift.schemas schemas/"


@pytest.mark.parametrize("name", ["deepspeed", "accelerate", "plan"])
def test_schema_command_prints_a_valid_draft_2020_12_schema(name):
    done = run_cli("schema", name)
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert printed == json.loads(json.dumps(schemas.schema(name)))
    jsonschema.Draft202012Validator.check_schema(printed)
    assert run_cli("schema", "nope").returncode == 2


def _validator(name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads((SCHEMAS / schemas.FILES[name]).read_text()))


DS_CASES = [  # (ds_config, valid?) : the schema's reading of values DeepSpeed's loaders produce
    ({"zero_optimization": {"stage": 3, "reduce_bucket_size": 5e8}}, True),  # json.load keeps 5e8 a float
    ({"zero_optimization": {"stage": 3, "reduce_bucket_size": 500000000}}, True),
    ({"train_batch_size": "auto", "zero_optimization": {"stage": "auto", "offload_param": {"device": "auto"}}}, True),
    ({"communication_data_type": "BF16"}, True),  # DeepSpeed lower-cases it
    ({"zero_optimization": True}, True),  # legacy form, still migrated
    ({"my_own_key": 1, "optimizer": {"type": "AdamW", "params": {"anything": 1}}}, True),  # permissive / open
    ({"zero_optimization": {"reduce_bucket_size": "5e8"}}, False),
    ({"zero_optimization": {"reduce_bucket_size": 1.5e7 + 0.5}}, False),
    ({"zero_optimization": {"stage": 4}}, False),
    ({"zero_optimization": {"reduce_bucket_sise": 5}}, False),  # strict section
    ({"zero_optimization": {"allgather_bucket_size": 3}}, False),  # must be even
    ({"fp16": {"enabled": "yes please"}}, False),
    ({"zero_optimization": {"offload_param": {"device": "gpu"}}}, False),
    ({"train_micro_batch_size_per_gpu": 0}, False),
]


@pytest.mark.parametrize("config,valid", DS_CASES, ids=[json.dumps(c)[:60] for c, _ in DS_CASES])
def test_ds_config_schema_cases(config, valid):
    errors = list(_validator("deepspeed").iter_errors(config))
    assert (not errors) == valid, [e.message for e in errors]


def test_ds_config_schema_carries_descriptions_and_defaults_from_the_key_table():
    from shardshift.formats.deepspeed.keys import key_index

    zero = json.loads((SCHEMAS / "ds_config.schema.json").read_text())["properties"]["zero_optimization"]
    row = key_index()["/zero_optimization/reduce_bucket_size"]
    bucket = zero["properties"]["reduce_bucket_size"]
    assert bucket["default"] == row.default and row.doc in bucket["description"]
    assert zero["additionalProperties"] is False


def test_fixtures_that_deepspeed_accepts_validate(tmp_path):
    validator = _validator("deepspeed")
    for path in sorted((FIXTURES / "deepspeed").glob("*.json")):
        data = parse_jsonc(path.read_text(encoding="utf-8")).to_python()
        assert not list(validator.iter_errors(data)), path


@needs_corpus
@pytest.mark.oracle
@pytest.mark.corpus
def test_every_corpus_ds_config_deepspeed_accepts_validates():
    """Acceptance is DeepSpeedConfig at some plausible world size, after Trainer-style "auto"
    filling (tests/oracles.py); the schema sees the file as an editor does (json semantics)."""
    from oracles import ALL_WORLD_SIZES, first_acceptance, implied_world_sizes, load_file

    validator = _validator("deepspeed")
    accepted, rejected_and_flagged, rejected = 0, 0, 0
    false_errors = []
    for path in corpus_files("deepspeed"):
        try:
            config = load_file(path)
        except Exception:  # noqa: BLE001 - not loadable by DeepSpeed at all: nothing to compare
            continue
        try:
            as_json = parse_jsonc(path.read_text(encoding="utf-8-sig")).to_python()
        except ParseError:  # hjson reads unquoted placeholders; an editor's JSON parser does not
            continue
        if not isinstance(config, dict):
            continue
        world, _, _ = first_acceptance(config, (*ALL_WORLD_SIZES, *implied_world_sizes(config)))
        errors = list(validator.iter_errors(as_json))
        if world is not None:
            accepted += 1
            false_errors += [(path.name, "/".join(map(str, e.absolute_path)), e.message) for e in errors]
        else:
            rejected += 1
            rejected_and_flagged += bool(errors)
    assert accepted > 100
    assert false_errors == []
    # and the schema is worth having: it flags most of what DeepSpeed rejects at parse time
    assert rejected_and_flagged >= 0.8 * rejected


# Files Accelerate's launcher accepts although they are wrong: the schema is right to flag them.
ACCELERATE_TRUE_POSITIVES = {
    # a string where a section belongs: MULTI_GPU never reads it, so DeepSpeed is silently not used
    "PhoenixBeaudry__gradients-modified__accelerate_config.yaml": {"deepspeed_config"},
}

ACCELERATE_CASES = [
    ({"distributed_type": "FSDP", "fsdp_config": {"fsdp_version": 2, "fsdp_reshard_after_forward": True}}, True),
    ({"distributed_type": "MULTI_GPU", "mixed_precision": "no", "downcast_bf16": "no", "gpu_ids": "all"}, True),
    ({"distributed_type": "FSDP", "fsdp_config": {"fsdp_typo_key": 1}}, True),  # nested keys are never checked
    ({"mixed_precision": "bf16"}, False),  # distributed_type is required
    ({"distributed_type": "MULTI_GPU", "num_processes": 8, "num_proceses": 8}, False),  # unknown top-level key
    ({"distributed_type": "FSDPP"}, False),
    ({"distributed_type": "NO", "mixed_precision": "bf32"}, False),
    ({"compute_environment": "AMAZON_SAGEMAKER", "distributed_type": "NO"}, False),  # needs ec2/iam
]


@pytest.mark.parametrize("config,valid", ACCELERATE_CASES, ids=[json.dumps(c)[:60] for c, _ in ACCELERATE_CASES])
def test_accelerate_schema_cases(config, valid):
    errors = list(_validator("accelerate").iter_errors(config))
    assert (not errors) == valid, [e.message for e in errors]


@needs_corpus
@pytest.mark.oracle
@pytest.mark.corpus
def test_every_corpus_accelerate_config_accelerate_accepts_validates():
    """Acceptance is the path `accelerate launch --config_file F` takes (load the file, then
    `_validate_launch_command`). The schema sees the YAML as editors do (YAML 1.2: an unquoted
    `no` is the string "no"; Accelerate's PyYAML reads it as false, which shardshift's rules report)."""
    pytest.importorskip("accelerate")
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from ruamel.yaml import YAML

    validator = _validator("accelerate")
    parser = launch_command_parser()
    yaml = YAML(typ="safe", pure=True)
    yaml.allow_duplicate_keys = True  # PyYAML keeps the last; so does this
    accepted, flagged = 0, {}
    for path in corpus_files("accelerate"):
        try:
            _validate_launch_command(parser.parse_args(["--config_file", str(path), "train.py"]))
        except Exception:  # noqa: BLE001 - refused by Accelerate: nothing to compare
            continue
        accepted += 1
        text = path.read_text(encoding="utf-8")
        data = json.loads(text) if path.suffix == ".json" else yaml.load(text)
        errors = {"/".join(map(str, e.absolute_path)) or e.message for e in validator.iter_errors(data)}
        if errors:
            flagged[path.name] = errors
    assert accepted > 50
    assert flagged == ACCELERATE_TRUE_POSITIVES


@needs_corpus
def test_corpus_has_the_true_positive_files():
    for name in ACCELERATE_TRUE_POSITIVES:
        assert (CORPUS / "accelerate" / name).is_file()
