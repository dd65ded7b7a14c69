"""Human-readable output, one line per finding, in the style of ruff and compilers."""

from __future__ import annotations

from shardshift.check import CheckResult
from shardshift.report import hidden_line, line_start, printable


def render(result: CheckResult, show_evidence: bool = False) -> str:
    """`show_evidence`: under each error and warning, the premises it rests on and where each was
    established (`check --show-evidence`)."""
    lines = []
    for f in result.findings:
        where = f" [{f.pointer}]" if f.pointer else ""
        lines.append(f"{f.file}:{f.line}:{f.column}: {f.code} {f.severity}: {f.message}{where}")
        if f.fix is not None:
            lines.append(f"    fix: {f.fix}")
        for related in f.related:
            lines.append(f"    see {related.file}:{related.line}:{related.column}: {related.message}")
        if f.unknown_context is not None:
            lines.append(f"    unknown {f.unknown_context.kind}: {f.unknown_context.what}; {f.unknown_context.how}")
        if show_evidence:
            lines.extend(f"    evidence: {premise.text()}" for premise in f.evidence)
    if result.fixed:
        lines.append(f"fixed {len(result.fixed)} finding(s):")
        lines.extend(f"    {f.file}:{f.line}:{f.column}: {f.code} {_fixed(f)}" for f in result.fixed)
    if result.unknowns:
        count = len(result.unknowns)
        lines.append(f"{count} setting{'s are' if count != 1 else ' is'} known only when the job runs and "
                     f"{'were' if count != 1 else 'was'} not judged (listed by --format json)")
    resting = result.unknown_context_count()
    if resting:
        lines.append(f"{resting} finding{'s rest' if resting != 1 else ' rests'} on context shardshift could not find "
                     f"(the program, the consumer or the release) and {'are' if resting != 1 else 'is'} only "
                     "info; each says how to tell the tool")
    releases = releases_line(result)
    if releases:
        lines.append(releases)
    hidden = hidden_line(result)
    if hidden:
        lines.append(hidden)
    counts = result.counts()
    files = len(result.files)
    summary = (f"{files} file{'s' if files != 1 else ''} checked: {counts['error']} error(s), "
               f"{counts['warning']} warning(s)"
                 + ("" if result.hidden_counts()["info"] else f", {counts['info']} info"))
    lines.append(summary if result.findings or result.hidden else f"{summary}; all clean")
    # one line per item: whatever a field holds (a newline in a key, ESC in a file name) is escaped
    return "\n".join(line_start(printable(line)) for line in lines) + "\n"


def releases_line(result: CheckResult) -> str:
    """`judged by axolotl 0.12.2 (requirements.txt:1): 2 files; the newest torchtitan (no pin
    found): 1 file` — the framework releases the files were judged against, and where each came from."""
    used: dict[str, int] = {}
    for checked in result.files:
        if checked.release is not None:
            text = checked.release.text()
            used[text] = used.get(text, 0) + 1
    if not used:
        return ""
    return "judged by " + "; ".join(f"{text}: {count} file{'s' if count != 1 else ''}" for text, count in used.items())


def _fixed(f) -> str:
    if f.fix_kind == "rename-key":
        return f"renamed key {(f.pointer or '').rsplit('/', 1)[-1]!r} to {f.fix!r}"
    return f"set {f.pointer} to {f.fix}"
