"""The mkdocs hook (mkdocs.yml `hooks:`): adds the generated pages as virtual files, and the format
pages to the nav under "Formats", and README sections into the hand-written pages that name them.
Pages are generated from the code of the checkout that holds mkdocs.yml (its `src/` comes first
on the path), never written to disk."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

_ROOT: Path | None = None
# `<!-- README: In the editor -->` on a line of its own: that README section's text, so the page and
# the README cannot say different things
README_SECTION = re.compile(r"^<!-- README: (.+?) -->$", re.M)


def on_config(config, **kwargs):
    global _ROOT
    _ROOT = Path(config.config_file_path).resolve().parent
    source = str(_ROOT / "src")
    if os.path.isdir(source) and source not in sys.path:
        sys.path.insert(0, source)
    from shardshift.formats import READERS

    nav = config.nav or []
    for index, entry in enumerate(nav):  # "Formats: formats/index.md" -> the index and a page per format
        if isinstance(entry, dict) and entry.get("Formats") == "formats/index.md":
            nav[index] = {"Formats": ["formats/index.md", *(f"formats/{name}.md" for name in READERS)]}
    return config


def on_files(files, config, **kwargs):
    from mkdocs.structure.files import File

    from shardshift.docs import pages

    for path, content in pages(_ROOT or Path.cwd()).items():
        existing = files.get_file_from_path(path)
        if existing is not None:  # a generated page wins over a stray file of the same name
            files.remove(existing)
        files.append(File.generated(config, path, content=content))
    return files


def on_page_markdown(markdown, page, config, files, **kwargs):
    if "<!-- README:" not in markdown:
        return markdown
    readme = ((_ROOT or Path.cwd()) / "README.md").read_text(encoding="utf-8")

    def section(match: re.Match) -> str:
        above = re.findall(r"^(#+) ", markdown[:match.start()], re.M)
        return readme_section(readme, match.group(1), level=len(above[-1]) if above else 1)

    return README_SECTION.sub(section, markdown)


def readme_section(readme: str, heading: str, level: int = 1) -> str:
    """The body of the README's `## heading` section, placed under a page heading of `level`:
    its subsections (`###`) become `level + 1`. A heading the README does not have fails the
    build: a page must not point at a section that was renamed."""
    from mkdocs.exceptions import PluginError

    lines = readme.splitlines()
    try:
        start = lines.index(f"## {heading}") + 1
    except ValueError:
        raise PluginError(f"README.md has no section '## {heading}'") from None
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    body, fenced = [], False
    for line in lines[start:end]:
        if line.startswith("```"):
            fenced = not fenced
        hashes = len(line) - len(line.lstrip("#"))
        if not fenced and hashes >= 3 and line[hashes:hashes + 1] == " ":
            line = "#" * (hashes - 3 + level + 1) + line[hashes:]
        body.append(line)
    return "\n".join(body).strip() + "\n"
