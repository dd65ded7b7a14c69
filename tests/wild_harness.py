"""The judged findings on ../shared/corpus/wild (issue 19): the verdict table and a fresh run of the
tool over every setup folder, shared by tests/test_wild.py and bench/wild_precision.py.

tests/wild_verdicts.tsv holds one row per judged finding (tab-separated, header row, sorted):
file (relative to the wild folder), line, code, pointer (empty when the finding has none),
severity when judged, verdict (true | false) and a one-sentence reason that cites the framework
or repository code deciding the claim. A finding is named by (file, line, code, pointer)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
VERDICTS = HERE / "wild_verdicts.tsv"
WILD = HERE.parents[1] / "shared" / "corpus" / "wild"
COLUMNS = ("file", "line", "code", "pointer", "severity", "verdict", "reason")
JUDGED_SEVERITIES = ("error", "warning")
# A row at severity "info" is a true finding the tool knowingly reports only as an info (its
# context is not read: a fork's own validate_args, say); its reason says why. It must stay reported.
KNOWN_LOSS = "info"

Key = tuple[str, int, str, str]  # (file, line, code, pointer or "")


@dataclass(frozen=True)
class Verdict:
    file: str
    line: int
    code: str
    pointer: str
    severity: str
    verdict: bool
    reason: str

    @property
    def key(self) -> Key:
        return (self.file, self.line, self.code, self.pointer)


@dataclass(frozen=True)
class Reported:
    """One finding of a fresh run, with the format of its file (as the JSON `files` list gives it)."""

    file: str
    line: int
    code: str
    pointer: str
    severity: str
    format: str
    message: str

    @property
    def key(self) -> Key:
        return (self.file, self.line, self.code, self.pointer)

    def row(self) -> str:
        """A verdict row to fill in (verdict and reason left to the judge)."""
        return "\t".join((self.file, str(self.line), self.code, self.pointer, self.severity,
                          "true|false", "<the code that decides it, one sentence>"))


def parse_verdicts(text: str) -> list[Verdict]:
    """The rows of a verdict table; ValueError names the first malformed line."""
    lines = text.splitlines()
    if not lines or tuple(lines[0].split("\t")) != COLUMNS:
        raise ValueError(f"line 1: the header must be {' TAB '.join(COLUMNS)}")
    rows = []
    for number, line in enumerate(lines[1:], 2):
        cells = line.split("\t")
        if len(cells) != len(COLUMNS):
            raise ValueError(f"line {number}: {len(cells)} cells, expected {len(COLUMNS)}")
        file, line_no, code, pointer, severity, verdict, reason = cells
        if not line_no.isdigit():
            raise ValueError(f"line {number}: line {line_no!r} is not a number")
        if verdict not in ("true", "false"):
            raise ValueError(f"line {number}: verdict {verdict!r} is neither true nor false")
        if severity not in (*JUDGED_SEVERITIES, KNOWN_LOSS) or (severity == KNOWN_LOSS and verdict != "true"):
            raise ValueError(f"line {number}: severity {severity!r} is not one of {JUDGED_SEVERITIES}")
        if not reason.strip():
            raise ValueError(f"line {number}: no reason")
        rows.append(Verdict(file, int(line_no), code, pointer, severity, verdict == "true", reason))
    return rows


def load_verdicts(path: Path = VERDICTS) -> list[Verdict]:
    return parse_verdicts(path.read_text(encoding="utf-8"))


def setups(wild: Path = WILD) -> list[str]:
    """The setup folders of the wild folder (one per repository), sorted."""
    return sorted(p.name for p in wild.iterdir() if p.is_dir())


def run_wild(wild: Path = WILD) -> list[Reported]:
    """Every finding of `shardshift check` over each setup folder, in-process, one run per folder,
    with the working directory at the wild folder so that paths read as in the verdict table."""
    from shardshift import api

    found: list[Reported] = []
    before = os.getcwd()
    os.chdir(wild)
    try:
        for name in setups(wild):
            result = api.check(name + "/")
            formats = {checked.path: checked.format for checked in result.files}
            found.extend(Reported(f.file, f.line, f.code, f.pointer or "", f.severity, formats.get(f.file, "?"),
                                  f.message) for f in result.findings)
    finally:
        os.chdir(before)
    return found


def precision(verdicts: dict[Key, Verdict], reported: list[Reported], severity: str) -> tuple[int, int]:
    """(true, judged) over the findings reported at `severity` that have a verdict."""
    judged = [verdicts[r.key] for r in reported if r.severity == severity and r.key in verdicts]
    return sum(v.verdict for v in judged), len(judged)
