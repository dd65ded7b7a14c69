"""The Plan's JSON Schema in schemas/ is the one the code defines, and it describes real Plans."""

import json

import jsonschema

from shardshift.formats import deepspeed
from shardshift.plan import plan_json_schema

from conftest import ROOT


def test_checked_in_plan_schema_is_current():
    checked_in = json.loads((ROOT / "schemas" / "plan.schema.json").read_text())
    assert checked_in == plan_json_schema(), "regenerate: python -c 'from shardshift.plan import ...' (see README)"


def test_plans_read_from_fixtures_validate_against_the_schema():
    schema = json.loads((ROOT / "schemas" / "plan.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(schema)
    paths = sorted((ROOT / "fixtures" / "deepspeed").rglob("*.json"))
    checked = 0
    for path in paths:
        document = deepspeed.read(path.read_text(), str(path))
        if document.plan is None:
            continue
        errors = list(validator.iter_errors(document.plan.to_data()))
        assert not errors, (path, errors[0].message)
        checked += 1
    assert checked > 0
