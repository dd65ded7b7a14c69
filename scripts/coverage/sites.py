"""Every check site in a framework's configuration code, listed from its installed source (issue 22).

A check site is a `raise` or an `assert` inside the code that validates a configuration: the
functions and files each framework's scope module names (`scope_<framework>.py` beside this file:
DISTRIBUTION, the installed distribution whose files are read, and FILES, file inside it -> the
qualified names of the functions to scan, or None for every function of the file). The source is
read with `ast`, never imported, so listing costs no framework import.

A site's id is `<file>:<function qualname>:<n>`, n counting the sites of that function in source
order: stable for one pinned release, and readable. The map in src/shardshift/data/coverage/
<framework>.tsv gives each id a verdict (src/shardshift/coverage.py); tests/test_coverage_map.py
regenerates this list and fails when the two disagree.

    python scripts/coverage/sites.py                # coverage per framework, from the map
    python scripts/coverage/sites.py accelerate     # its sites, marked with their verdicts
    python scripts/coverage/sites.py accelerate --unmapped   # TSV lines for the sites the map lacks
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
FRAMEWORKS = ("deepspeed", "transformers", "accelerate", "axolotl", "torchtitan", "fsdp2", "megatron")


@dataclass(frozen=True)
class Site:
    id: str
    file: str  # inside the distribution, e.g. accelerate/commands/launch.py
    function: str  # qualified name, e.g. FullyShardedDataParallelPlugin.__post_init__
    kind: str  # "raise" or "assert"
    line: int
    end_line: int
    text: str  # the statement, on one line, cut to 160 characters


def scope(framework: str):
    spec = importlib.util.spec_from_file_location(f"scope_{framework}", HERE / f"scope_{framework}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def source_root(distribution: str) -> Path:
    """The directory the distribution's top-level packages live in (site-packages), without importing it."""
    dist = metadata.distribution(distribution)
    return Path(dist.locate_file("")).resolve()


def root_of(chosen) -> Path:
    """Where a scope's files are read: its SOURCE folder (a framework on no package index, Megatron-LM's
    training code: the checkout the oracles use), else its installed DISTRIBUTION's."""
    source = getattr(chosen, "SOURCE", None)
    return Path(source).resolve() if source is not None else source_root(chosen.DISTRIBUTION)


class _Collector(ast.NodeVisitor):
    def __init__(self, wanted: set[str] | None):
        self.wanted, self.stack, self.found = wanted, [], []

    def _scope(self, node):
        self.stack.append(node.name)
        self.generic_visit(node)
        self.stack.pop()

    visit_ClassDef = visit_FunctionDef = visit_AsyncFunctionDef = _scope

    def _site(self, node, kind: str):
        if not self.stack:  # module-level raises guard imports, not configuration
            return
        qualname = ".".join(self.stack)
        if self.wanted is None or any(qualname == w or qualname.startswith(w + ".") for w in self.wanted):
            self.found.append((qualname, kind, node))
        self.generic_visit(node)

    def visit_Raise(self, node):
        self._site(node, "raise")

    def visit_Assert(self, node):
        self._site(node, "assert")




def sites_in(path: Path, relative: str, functions: list[str] | None) -> list[Site]:
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    collector = _Collector(set(functions) if functions is not None else None)
    collector.visit(tree)
    lines = text.splitlines()
    counts: dict[str, int] = {}
    found = []
    for qualname, kind, node in collector.found:
        counts[qualname] = counts.get(qualname, 0) + 1
        statement = " ".join(part.strip() for part in lines[node.lineno - 1:node.end_lineno])
        found.append(Site(f"{relative}:{qualname}:{counts[qualname]}", relative, qualname, kind, node.lineno,
                          node.end_lineno, statement[:160]))
    return found


def sites(framework: str) -> list[Site]:
    """The check sites of one framework at the installed release, in file and source order."""
    chosen = scope(framework)
    root = root_of(chosen)
    found: list[Site] = []
    for relative, functions in chosen.FILES.items():
        # a scope's NO_RULE_YET: judged decidable with no rule yet, kept out of the map until one exists
        held = getattr(chosen, "NO_RULE_YET", {})
        found.extend(s for s in sites_in(root / relative, relative, functions)
                     if s.id not in held)
    return found


def installed_release(framework: str) -> str:
    chosen = scope(framework)
    return getattr(chosen, "RELEASE", None) or metadata.version(chosen.DISTRIBUTION)


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(HERE.parents[1] / "src"))
    from shardshift import coverage

    if not argv:
        print(coverage.render(coverage.summary()))
        return 0
    framework = argv[0]
    mapped = coverage.load(framework)
    for site in sites(framework):
        verdict = mapped.get(site.id)
        if "--unmapped" in argv:
            if verdict is None:
                print(f"{site.id}\t{site.line}\ttodo: not judged yet\t\t{site.text}")
        else:
            print(f"{site.id}  [{verdict.verdict if verdict else 'UNMAPPED'}]\n    {site.line}: {site.text}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
