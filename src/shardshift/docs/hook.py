"""The mkdocs hook (mkdocs.yml `hooks:`): adds the generated pages as virtual files, and the format
pages to the nav under "Formats". Pages are generated from the code of the checkout that holds
mkdocs.yml (its `src/` comes first on the path), never written to disk."""

from __future__ import annotations

import os
import sys
from pathlib import Path

_ROOT: Path | None = None


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
