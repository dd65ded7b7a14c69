"""Issue 33: severity by outcome. A failure the framework always raises is an error, never a warning:
over every rule's bad fixtures, a warning whose claim (the message up to its first ";", before the
advice) says that the framework raises, refuses, rejects or fails must say under which condition
(a flag not given, a loader that reads the file, a release), or it is an error reported too low.

The rule classes' own severities are checked the same way on their documented claim (the first
line of the docstring), so that a rule cannot state a certain failure and be declared a warning.
"""

from __future__ import annotations

import re

import pytest

from conftest import FIXTURES, check_json

FAILS = re.compile(r"\b(raises|raise|refuses|rejects|fails|asserts|stops at|exits with|crashes)\b", re.I)
# words that make the failure conditional: on the command line, the loader, a release or a value not
# in the file; or a failure the message describes as what would happen on another path
CONDITION = re.compile(r"\b(unless|if|would|then|when\b.*\bgiven|depending|may|might|could)\b", re.I)


def _claim(message: str) -> str:
    return message.split(";", 1)[0]


def certain_failure(message: str) -> bool:
    claim = _claim(message)
    return bool(FAILS.search(claim)) and not CONDITION.search(claim)


@pytest.mark.parametrize("message,certain", [
    ("bf16 is set: DeepSpeed raises ValueError; remove it", True),
    ("num_processes is -1: accelerate launch raises ValueError unless --num_processes is given", False),
    ("written 1e3, which json.load reads as a float: then deepspeed.initialize raises ValueError", False),
    ("the key is ignored; a later release raises on it", False),  # the advice, not the claim
    ("x is dropped without a word; remove it", False),
])
def test_the_claim_reader(message, certain):
    assert certain_failure(message) is certain


@pytest.fixture(scope="module")
def bad_findings() -> list[dict]:
    paths = sorted(str(p) for p in FIXTURES.rglob("bad*") if p.is_file())
    assert len(paths) > 500
    _, output = check_json("--isolated", "--no-cache", "--min-severity", "info", *paths)
    return output["findings"]


def test_no_warning_says_the_framework_always_raises(bad_findings):
    low = sorted({(f["code"], _claim(f["message"])[:160]) for f in bad_findings
                  if f["severity"] == "warning" and certain_failure(f["message"])})
    assert low == []


def test_no_rule_declares_a_certain_failure_as_a_warning():
    from shardshift.rules import all_rules

    low = sorted(rule.code for rule in all_rules()
                 if rule.severity == "warning" and certain_failure((rule.__doc__ or "").strip().splitlines()[0]))
    assert low == []
