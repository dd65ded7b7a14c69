"""Issue 19: every error and warning the tool gives on ../shared/corpus/wild (45 real setups) is judged
against the frameworks' own code in tests/wild_verdicts.tsv (see tests/wild_harness.py for the
columns). A new unjudged error or warning fails, a finding judged false that is reported as an error
or a warning fails, a finding judged true that is no longer an error or a warning fails, and the
precision over the judged errors and warnings must reach the issue's target.

To judge a new finding: run `python bench/wild_precision.py` (or read the failure below), add its
row to tests/wild_verdicts.tsv (keep the table sorted), with verdict true or false and one sentence
citing the code that decides it (a framework file and line, or the repository's own file)."""

from __future__ import annotations

import pytest

from conftest import needs_corpus
from wild_harness import JUDGED_SEVERITIES, VERDICTS, WILD, load_verdicts, parse_verdicts, precision, run_wild

TARGET = {"error": 0.95, "warning": 0.85}

needs_wild = pytest.mark.skipif(not WILD.is_dir(), reason="../shared/corpus/wild is not present")


@pytest.fixture(scope="module")
def verdicts():
    return {v.key: v for v in load_verdicts()}


@pytest.fixture(scope="module")
def reported():
    return run_wild()


def _judged(reported):
    return [r for r in reported if r.severity in JUDGED_SEVERITIES]


def test_the_verdict_table_is_well_formed_sorted_and_has_one_row_per_finding():
    rows = load_verdicts()
    keys = [(v.file, v.line, v.code, v.pointer) for v in rows]
    assert keys == sorted(keys), "keep tests/wild_verdicts.tsv sorted by file, line, code, pointer"
    assert len(keys) == len(set(keys)), "a finding has more than one verdict row"
    assert rows, "the verdict table is empty"


def test_a_malformed_verdict_row_is_refused():
    header = "file\tline\tcode\tpointer\tseverity\tverdict\treason\n"
    with pytest.raises(ValueError, match="verdict 'maybe'"):
        parse_verdicts(header + "a/b.json\t3\tDS101\t/x\twarning\tmaybe\tbecause\n")
    with pytest.raises(ValueError, match="no reason"):
        parse_verdicts(header + "a/b.json\t3\tDS101\t/x\twarning\ttrue\t \n")
    with pytest.raises(ValueError, match="header"):
        parse_verdicts("file\tline\n")
    assert parse_verdicts(header + "a/b.json\t3\tDS101\t\terror\tfalse\tbecause\n")[0].verdict is False


@needs_corpus
@needs_wild
def test_every_judged_file_is_in_the_wild_folder():
    missing = sorted({v.file for v in load_verdicts() if not (WILD / v.file).is_file()})
    assert not missing, f"verdict rows name files the wild folder lacks: {missing}"


@needs_corpus
@needs_wild
@pytest.mark.corpus
def test_every_error_and_warning_has_a_verdict(verdicts, reported):
    unjudged = [r for r in _judged(reported) if r.key not in verdicts]
    assert not unjudged, (
        f"{len(unjudged)} error/warning finding(s) on ../shared/corpus/wild have no verdict: judge each against "
        f"the framework's code and add its row to {VERDICTS.name} (sorted; fill in verdict and reason):\n"
        + "\n".join(f"{r.row()}\t# {r.message[:120]}" for r in unjudged))


@needs_corpus
@needs_wild
@pytest.mark.corpus
def test_no_finding_judged_false_is_an_error_or_a_warning(verdicts, reported):
    false = [(r, verdicts[r.key]) for r in _judged(reported) if r.key in verdicts and not verdicts[r.key].verdict]
    assert not false, (
        f"{len(false)} finding(s) judged false are reported as errors or warnings:\n"
        + "\n".join(f"{r.file}:{r.line} {r.code} {r.pointer} ({r.severity}): {v.reason}" for r, v in false))


@needs_corpus
@needs_wild
@pytest.mark.corpus
def test_every_finding_judged_true_is_still_an_error_or_a_warning(verdicts, reported):
    still = {r.key for r in _judged(reported)}
    anywhere = {r.key for r in reported}  # a known loss (severity "info" in the table) is still reported as an info
    lost = [v for v in verdicts.values() if v.verdict and v.key not in (anywhere if v.severity == "info" else still)]
    assert not lost, (
        f"{len(lost)} finding(s) judged true are no longer reported as errors or warnings:\n"
        + "\n".join(f"{v.file}:{v.line} {v.code} {v.pointer} (was {v.severity}): {v.reason}" for v in lost))


@needs_corpus
@needs_wild
@pytest.mark.corpus
@pytest.mark.parametrize("severity", sorted(TARGET))
def test_precision_on_the_wild_folder_reaches_the_target(verdicts, reported, severity):
    right, judged = precision(verdicts, reported, severity)
    share = right / judged if judged else 1.0
    assert share >= TARGET[severity], (
        f"{severity}s on ../shared/corpus/wild: {right} of {judged} right ({share:.1%}), target "
        f"{TARGET[severity]:.0%} (bench/wild_precision.py lists the false ones with their reasons)")
