"""Axolotl's own config schema (axolotl 0.21.0, `axolotl.utils.config.validate_config`) as the
oracle for the Axolotl writer and rules.

- Every Axolotl YAML the writer emits passes the schema: the round trip of every corpus file the
  schema accepts, and the conversion of every fixture ds_config (and of every DeepSpeed corpus
  file that reads) into an FSDP2 Axolotl config.
- Every rule fixture: a bad fixture of a rule that says "Axolotl's schema rejects" is rejected with
  the message the finding quotes; a good fixture is accepted; a bad fixture of a silent mistake
  (the schema accepts it) is accepted, which is why the rule exists.
- The corpus: every file the schema rejects gets an error from shardshift for the same cause
  (else KNOWN_MISSES, with why); no error on a file the schema accepts.

axolotl 0.21.0 declares Python >= 3.12, but its schema imports and runs on 3.11; it is installed
without its dependencies (see the module docstring of shardshift.formats.axolotl.writer's
report, or the install line in scripts/install-dev.sh): `pip install --no-deps
--ignore-requires-python axolotl==0.21.0` plus `pip install --no-deps peft==0.21.2 addict==2.4.0`
and `pip install pillow`. One child process runs every case (importing the schema takes seconds).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from shardshift.formats import axolotl, deepspeed
from shardshift.formats.axolotl import writer

import oracles
from conftest import FIXTURES, check_json, corpus_files, needs_corpus

pytestmark = pytest.mark.oracle

RULES = FIXTURES / "axolotl" / "rules"
CORPUS_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"

# rule code -> the start of the schema's error for its bad fixtures (None: a silent mistake the
# schema accepts; the rule's docstring says what goes wrong later)
REJECTS = {
    "AX001": None, "AX002": None, "AX004": None, "AX005": None, "AX104": None,
    "AX003": "fsdp_config.sharding_strategy is an FSDP1-only option",
    "AX006": "Input should be a valid",
    "AX101": "The top-level `fsdp` list is no longer supported",
    "AX102": "fsdp_version: 1 is no longer supported",
    "AX103": "deepspeed and fsdp cannot be used together.",
    "AX105": "Muon optimizer is currently incompatible with DeepSpeed",
    "AX106": "FSDP2 not compatible with adamw_bnb_8bit",
}
# what the finding says about the schema's refusal (its own words, or the quoted error)
SAYS = {
    "AX003": "schema rejects it", "AX006": "schema rejects a boolean", "AX101": "no longer supported",
    "AX102": "schema rejects it", "AX103": "deepspeed and fsdp cannot be used together.",
    "AX105": "Muon optimizer is currently incompatible with DeepSpeed", "AX106": "FSDP2 not compatible with",
}
SAYS_FOR_FIXTURE = {"AX006/bad_none.yaml": "is the string 'None' in YAML"}
SILENT_FIXTURES = {"AX003/bad_ignored.yaml"}  # dropped with a warning in the log, accepted

# schema error (start) -> the shardshift code that must report that cause as an error
CAUSES = {
    "The top-level `fsdp` list is no longer supported": "AX101",
    "is an FSDP1-only option and FSDP1 has been removed": "AX003",
    "is no longer supported, FSDP1 has been removed": "AX102",
    "deepspeed and fsdp cannot be used together": "AX103",
    "Muon optimizer is currently incompatible with DeepSpeed": "AX105",
    "optimizer is incompatible with DeepSpeed": "AX105",
    "FSDP2 not compatible with adamw": "AX106",
    "Input should be a valid string [type=string_type, input_value=False": "AX006",
    "Input should be a valid string [type=string_type, input_value=True": "AX006",
}
# corpus files the schema rejects for a cause shardshift does not check (model-, dataset- or
# plugin-specific validation outside the distributed, batch, precision and optimizer keys)
KNOWN_MISSES = {
    "FSDP is not supported for falcon models": "a model-specific check (the files also use the removed fsdp list, "
                                               "AX101)",
    "FSDP2 does not support load_in_8bit or load_in_4bit with": "RL trainers with quantized base models: not checked",
    "requires fsdp_config.state_dict_type": "expert-parallel plugin check: not checked",
    "special_tokens override is not supported": "tokenizer check: not checked",
    "validation error for SFTDataset": "datasets: not checked",
    "validation errors for SFTDataset": "datasets: not checked",
    "Input should be a valid": "a field type outside the keys shardshift reads",
    "shards": "datasets: not checked",
}

CHILD = r"""
import json, logging, sys, warnings
warnings.filterwarnings("ignore")
logging.disable(logging.CRITICAL)
import yaml
from axolotl.utils.config import validate_config
from axolotl.utils.dict import DictDefault
out = {}
for name, text in json.load(open(sys.argv[1])).items():
    try:
        validate_config(DictDefault(yaml.safe_load(text)))
        out[name] = None
    except Exception as error:
        message = str(error)
        if "Value error, " in message:
            message = message.split("Value error, ", 1)[1]
        out[name] = f"{type(error).__name__}: {message}"
json.dump(out, open(sys.argv[2], "w"))
"""


def schema_outcomes(texts: dict[str, str]) -> dict[str, str | None]:
    """name -> None (accepted) or the schema's error, all in one child process."""
    oracles.require_installed("axolotl", "peft", "addict", "PIL")
    with tempfile.TemporaryDirectory(prefix="shardshift-axolotl-") as scratch:
        given, result = Path(scratch, "in.json"), Path(scratch, "out.json")
        given.write_text(json.dumps(texts), encoding="utf-8")
        env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_VERBOSITY="error", PYTHONWARNINGS="ignore")
        done = subprocess.run([sys.executable, "-c", CHILD, str(given), str(result)], capture_output=True, text=True,
                              timeout=oracles.CHILD_TIMEOUT, env=env, cwd=scratch, stdin=subprocess.DEVNULL)
        assert done.returncode == 0 and result.is_file(), done.stderr[-4000:]
        return json.loads(result.read_text(encoding="utf-8"))


def _ds_conversions() -> dict[str, str]:
    texts = {}
    paths = sorted((FIXTURES / "deepspeed").glob("*.json"))
    if (CORPUS_DIR / "deepspeed").is_dir():
        paths += sorted((CORPUS_DIR / "deepspeed").glob("*.json"))
    for path in paths:
        document = deepspeed.read(path.read_text(encoding="utf-8-sig", errors="replace"), str(path))
        if document.syntax is not None or document.plan is None:
            continue
        texts[f"convert:{path.name}"] = writer.convert(document).text
    return texts


def test_emitted_configs_and_rule_fixtures_against_the_schema():
    texts = _ds_conversions()
    fixtures = sorted(RULES.glob("*/*.yaml"))
    for path in fixtures:
        texts[f"fixture:{path.parent.name}/{path.name}"] = path.read_text()
    outcomes = schema_outcomes(texts)
    converted = [name for name in texts if name.startswith("convert:")]
    assert len(converted) >= 4
    rejected = {name: outcomes[name] for name in converted if outcomes[name] is not None}
    assert rejected == {}, rejected
    for path in fixtures:
        name = f"{path.parent.name}/{path.name}"
        outcome = outcomes[f"fixture:{name}"]
        expected = REJECTS[path.parent.name]
        if path.name.startswith("good") or expected is None or name in SILENT_FIXTURES:
            assert outcome is None, (name, outcome)
        else:
            assert outcome is not None and expected in outcome, (name, outcome)
            status, output = check_json("--isolated", str(path))
            (finding,) = [f for f in output["findings"] if f["code"] == path.parent.name]
            assert finding["severity"] == "error"
            assert SAYS_FOR_FIXTURE.get(name, SAYS[path.parent.name]) in finding["message"], finding["message"]


@needs_corpus
def test_corpus_rejections_are_shardshift_errors_for_the_same_cause():
    files = corpus_files("axolotl")
    texts = {path.name: path.read_text(encoding="utf-8-sig") for path in files}
    outcomes = schema_outcomes(texts)
    misses, false_errors, measured = [], [], {"accepted": 0, "rejected": 0, "known_misses": 0}
    for path in files:
        outcome = outcomes[path.name]
        status, output = check_json("--isolated", str(path))
        errors = {f["code"] for f in output["findings"] if f["severity"] == "error" and f["file"] == str(path)}
        if outcome is None:
            measured["accepted"] += 1
            if errors:
                false_errors.append((path.name, errors))
            continue
        measured["rejected"] += 1
        code = next((c for start, c in CAUSES.items() if start in outcome), None)
        if code is None:
            assert any(start in outcome for start in KNOWN_MISSES), (path.name, outcome)
            measured["known_misses"] += 1
            continue
        if code not in errors:
            misses.append((path.name, code, outcome[:120], errors))
    assert misses == []
    assert false_errors == []
    assert measured["rejected"] >= 50 and measured["known_misses"] <= 8, measured


def test_round_trips_of_accepted_corpus_files_pass_the_schema():
    if not (CORPUS_DIR / "axolotl").is_dir():
        pytest.skip("../shared/corpus is not present")
    files = corpus_files("axolotl")
    texts = {}
    for path in files:
        text = path.read_text(encoding="utf-8-sig")
        texts[f"original:{path.name}"] = text
        texts[f"written:{path.name}"] = writer.convert(axolotl.read(text, str(path))).text
    outcomes = schema_outcomes(texts)
    for path in files:
        if outcomes[f"original:{path.name}"] is None:
            assert outcomes[f"written:{path.name}"] is None, path.name
