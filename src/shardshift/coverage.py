"""Which checks of each framework shardshift mirrors (issue 22): the coverage map, read from data.

Every check site of a framework's configuration code (a `raise` or `assert` that scripts/coverage/
sites.py lists from the pinned release's source) has a line in data/coverage/<framework>.tsv:

    site <TAB> line <TAB> verdict <TAB> case <TAB> check

- verdict `rule: CODE[, CODE...]`: the rules that report what the site refuses; `case` is a bad
  fixture (relative to fixtures/) on which the framework's own code reaches the site and the rule
  reports (tests/test_coverage_map.py runs both);
- verdict `todo: <what a rule would check>`: decidable from the files, no rule yet;
- otherwise why no file decides it: `environment:` (the GPU, installed packages, environment
  variables), `model:` (the model's code or weights), `data:` (the dataset), `runtime:` (a value
  the program passes or the run produces), `internal:` (guards the framework's own state, not
  the configuration).

Coverage is rules over decidable sites (rule + todo), among the sites of the files chosen by hand.
The denominator found by call graph from the entry a run takes (issue 33) is recorded beside the
maps (data/coverage/callgraph.tsv, written by scripts/coverage/callgraph.py): how many reachable
sites the map has not judged yet. Only the CLI's `rules --coverage` reads this.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data" / "coverage"
FRAMEWORKS = ("deepspeed", "transformers", "accelerate", "axolotl", "torchtitan", "fsdp2", "megatron")
RELEASES = {"deepspeed": "deepspeed 0.19.8", "transformers": "transformers 5.24.0",
            "accelerate": "accelerate 1.15.0", "axolotl": "axolotl 0.21.0", "torchtitan": "torchtitan 0.2.2",
            "fsdp2": "torch 2.13.0 (fully_shard)", "megatron": "Megatron-LM (megatron-core 0.20.0)"}
DECIDABLE = ("rule", "todo")
UNDECIDABLE = ("environment", "model", "data", "runtime", "internal")
KINDS = DECIDABLE + UNDECIDABLE


@dataclass(frozen=True)
class Verdict:
    site: str
    line: int
    kind: str  # one of KINDS
    text: str  # the codes for "rule", the reason otherwise
    case: str  # a bad fixture for "rule", else ""
    check: str  # the statement at the site

    @property
    def verdict(self) -> str:
        return f"{self.kind}: {self.text}"

    @property
    def codes(self) -> tuple[str, ...]:
        if self.kind != "rule":
            return ()
        return tuple(c.strip() for c in self.text.split(";", 1)[0].split(",") if c.strip())


class MapError(ValueError):
    pass


def load(framework: str) -> dict[str, Verdict]:
    path = DATA / f"{framework}.tsv"
    if not path.is_file():
        return {}
    found: dict[str, Verdict] = {}
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not raw.strip() or raw.startswith("#"):
            continue
        cells = raw.split("\t")
        if len(cells) != 5:
            raise MapError(f"{path.name}:{number}: {len(cells)} columns, want 5 (site, line, verdict, case, check)")
        site, line, verdict, case, check = cells
        kind, _, text = verdict.partition(":")
        if kind not in KINDS or not text.strip():
            raise MapError(f"{path.name}:{number}: verdict {verdict!r} is not `<{'|'.join(KINDS)}>: <text>`")
        if site in found:
            raise MapError(f"{path.name}:{number}: {site} is mapped twice")
        found[site] = Verdict(site, int(line), kind, text.strip(), case.strip(), check)
    return found


def summary() -> dict[str, dict[str, int]]:
    """Per framework: how many sites of each verdict kind."""
    counts = {}
    for framework in FRAMEWORKS:
        mapped = load(framework)
        counts[framework] = {kind: sum(v.kind == kind for v in mapped.values()) for kind in KINDS}
    return counts


def reached() -> dict[str, tuple[int, int, int, str]]:
    """Per framework, from the call-graph record (scripts/coverage/callgraph.py --write): the check
    sites reachable from the entry a run takes, how many of them the map judges, the functions
    reached and the entries."""
    path = DATA / "callgraph.tsv"
    out: dict[str, tuple[int, int, int, str]] = {}
    if not path.is_file():
        return out
    for raw in path.read_text(encoding="utf-8").splitlines():
        if raw.strip() and not raw.startswith("#"):
            framework, sites, judged, functions, entries = raw.split("\t")
            out[framework] = (int(sites), int(judged), int(functions), entries)
    return out


def render(counts: dict[str, dict[str, int]]) -> str:
    lines = [f"{'framework':<13}{'release':<46}{'sites':>6}{'decidable':>10}{'rules':>7}{'coverage':>9}  "
             "not decidable from the files"]
    for framework, by_kind in counts.items():
        sites = sum(by_kind.values())
        decidable = by_kind["rule"] + by_kind["todo"]
        share = f"{100 * by_kind['rule'] // decidable}%" if decidable else "-"  # floored: never above the bar it misses
        reasons = ", ".join(f"{kind} {by_kind[kind]}" for kind in UNDECIDABLE if by_kind[kind])
        lines.append(f"{framework:<13}{RELEASES[framework]:<46}{sites:>6}{decidable:>10}{by_kind['rule']:>7}"
                     f"{share:>9}  {reasons}")
    graph = reached()
    if graph:
        lines += ["", "The sites above are those of the files and functions chosen by hand (scripts/coverage/"
                      "scope_<framework>.py), so the coverage is over that denominator only. Found by call graph "
                      "from the entry a run takes (scripts/coverage/callgraph.py; by name, so an over-approximation). "
                      "The sites not judged yet are decidable from the files and wait for their rules, so the "
                      "coverage here is rules / (decidable + not yet):",
                  f"{'framework':<13}{'reachable':>10}{'judged':>8}{'not yet':>9}{'coverage':>10}  entries"]
        for framework, by_kind in counts.items():
            if framework in graph:
                sites, judged, _, entries = graph[framework]
                decidable = by_kind["rule"] + by_kind["todo"] + sites - judged
                share = f"{100 * by_kind['rule'] // decidable}%" if decidable else "-"  # floored: never above the bar it misses
                lines.append(f"{framework:<13}{sites:>10}{judged:>8}{sites - judged:>9}{share:>10}  {entries}")
    return "\n".join(lines)
