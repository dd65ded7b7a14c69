"""The documentation site's generated pages (mkdocs.yml at the repository root, hand-written pages
in docs/). `pages(root)` returns every generated page, `{path under docs/: markdown}`, read from the
code itself so that the site cannot drift from it: a page per rule (its doc, fixtures, the
framework checks it mirrors, the releases it knows), a page per format (what is read, the key
tables), the planner, the Python API and the command line. `hook.py` hands them to mkdocs as
virtual files; nothing here imports mkdocs, and nothing here is imported by `shardshift check`.
"""

from __future__ import annotations

from pathlib import Path


def pages(root: Path) -> dict[str, str]:
    """Every generated page of the site for the checkout at `root` (it holds fixtures/)."""
    from shardshift.docs import format_pages, reference_pages, rule_pages

    found: dict[str, str] = {}
    found.update(rule_pages.pages(root))
    found.update(format_pages.pages())
    found.update(reference_pages.pages(root))
    return found
