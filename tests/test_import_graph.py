"""Issue 34: no import circle under src/. The graph is walked with `ast` (every import statement,
at the top of a module or inside a function, but not those under `if TYPE_CHECKING:`, which never
run): a module that imports another which, by any path, imports it back is a circle. Writers that
know only their own format, and an API that sits on the check instead of beside it."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT


def _modules(src: Path) -> dict[str, Path]:
    found = {}
    for path in src.rglob("*.py"):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _targets(node: ast.AST, package: str, modules: dict[str, Path]) -> set[str]:
    """The modules of the run an import statement names (the deepest that exists)."""
    def deepest(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    names: list[str] = []
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            parts = package.split(".")[:len(package.split(".")) - (node.level - 1)]
            base = ".".join(parts + ([node.module] if node.module else []))
        names = [f"{base}.{alias.name}" for alias in node.names] or [base]
    return {t for t in map(deepest, names) if t is not None}


def import_graph(src: Path) -> dict[str, set[str]]:
    modules = _modules(src)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                node.body = []  # imports for type checkers only: never run
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        graph[name] = set().union(*(_targets(n, package, modules) for n in ast.walk(tree)
                                    if isinstance(n, (ast.Import, ast.ImportFrom)))) - {name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_circle_under_src():
    assert circles(import_graph(ROOT / "src")) == []


def test_a_circle_through_a_function_level_import_is_found(tmp_path):
    package = tmp_path / "pkg"
    (package / "formats").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "formats" / "__init__.py").write_text("")
    (package / "formats" / "a.py").write_text("from pkg.formats.b import helper\n")
    (package / "formats" / "b.py").write_text("def helper():\n    from . import c\n")
    (package / "formats" / "c.py").write_text("def later():\n    from pkg.formats.a import x\n")
    (package / "formats" / "d.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                               "    from pkg.formats.a import x\nfrom pkg.formats import a\n")
    assert circles(import_graph(tmp_path)) == [["pkg.formats.a", "pkg.formats.b", "pkg.formats.c"]]


def test_no_writer_imports_another_formats_writer_or_mapping():
    """Issue 34: writers know only their own format. A format's writer or mapping module may read its source's
    explanation tables (formats/deepspeed/fsdp2_explained.py, meaning.py, keys.py) and the neutral
    fsdp2_settings.py, never another format's writer or mapping."""
    graph = import_graph(ROOT / "src")
    crossing = []
    for module, targets in graph.items():
        parts = module.split(".")
        if len(parts) < 4 or parts[1] != "formats" or not parts[3].startswith(("writer", "mapping")):
            continue
        for target in targets:
            other = target.split(".")
            if len(other) >= 4 and other[1] == "formats" and other[2] != parts[2] and \
                    other[3].startswith(("writer", "mapping")):
                crossing.append((module, target))
    assert crossing == []
