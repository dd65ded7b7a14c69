"""Issue 19: a finding that rests on context shardshift could not find (the program, the consumer, the
release, an extension) is an info that says what is unknown and how to tell the tool, in every output."""

from __future__ import annotations

import json

from shardshift.check import CheckedFile, CheckResult
from shardshift.context import Release, UnknownContext
from shardshift.document import Document
from shardshift.report import github, sarif, text
from shardshift.report import json as json_report
from shardshift.rules.base import Rule

UNKNOWN = UnknownContext("program", "pretrain_x.py is not in the checked tree, so its own flags are unknown",
                         "check the repository that holds pretrain_x.py together with this script")


class _FlagRule(Rule):
    code, name, severity, formats = "MG001", "unknown-flag", "error", ("megatron",)


def _result() -> CheckResult:
    document = Document(path="launch.sh", format="megatron", text="torchrun pretrain_x.py --extra 1\n")
    rule = _FlagRule()
    resting = rule.finding(document, None, "--extra is not a flag of Megatron-LM", position=(1, 24),
                           unknown_context=UNKNOWN)
    plain = rule.finding(document, None, "--bad is not a flag of Megatron-LM", position=(1, 1))
    result = CheckResult(findings=[plain, resting], files=[CheckedFile("launch.sh", "megatron")])
    return result


def test_a_finding_resting_on_unknown_context_is_an_info_whatever_the_rules_severity():
    plain, resting = _result().findings
    assert plain.severity == "error" and resting.severity == "info"
    assert resting.unknown_context is UNKNOWN and plain.unknown_context is None


def test_json_names_the_unknown_context_and_counts_it_in_the_summary():
    output = json.loads(json_report.render(_result()))
    plain, resting = output["findings"]
    assert "unknown_context" not in plain
    assert resting["unknown_context"] == {"kind": "program", "what": UNKNOWN.what, "how": UNKNOWN.how}
    assert output["summary"]["unknown_context"] == 1 and output["summary"]["infos"] == 1


def test_text_says_what_is_unknown_and_how_to_tell_the_tool():
    rendered = text.render(_result())
    assert f"    unknown program: {UNKNOWN.what}; {UNKNOWN.how}" in rendered
    assert "1 finding rests on context shardshift could not find" in rendered


def test_sarif_and_github_carry_it_too():
    results = json.loads(sarif.render(_result()))["runs"][0]["results"]
    resting = [r for r in results if r["level"] == "note"][0]
    assert resting["properties"]["unknownContext"]["what"] == UNKNOWN.what
    assert UNKNOWN.how in resting["message"]["text"]
    annotations = github.render(_result())
    assert "unknown program: " in annotations


def test_a_given_release_wins_and_says_where_it_came_from():
    from shardshift.rules.base import Context

    given = Release("axolotl", (0, 12, 2), "--axolotl-version")
    context = Context(release_overrides={"axolotl": given})
    assert context.release("axolotl", "any/where/config.yaml") is given
    assert given.text() == "axolotl 0.12.2 (--axolotl-version)"
    assert Release("torch", None, "no pin found").text() == "the newest torch (no pin found)"
