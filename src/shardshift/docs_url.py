"""Where the documentation site lives: the base URL and each rule's page (`<base>/rules/<CODE>/`).

The base is, in order: `docs-url` in the project's `[tool.shardshift]` (or shardshift.toml), found
from `start` as `shardshift check` finds its configuration; else the `Documentation` entry of
shardshift's own `[project.urls]` (the installed package's metadata); else DEFAULT. SARIF's
`helpUri` and `shardshift explain CODE` link to these pages; the site (mkdocs.yml, docs/) builds
one page per rule at that path.

Nothing here is imported on the `check` text path: the metadata is read only when asked.
"""

from __future__ import annotations

from functools import lru_cache

DEFAULT = "https://shardshift.dev"


def rule_url(code: str, start: str | None = None, *, base: str | None = None) -> str:
    """The page of rule `code`: `<base>/rules/<CODE>/`. `base` (already resolved, e.g. the
    `docs-url` a check was configured with) wins; otherwise `base_url(start)`."""
    return f"{(base or base_url(start)).rstrip('/')}/rules/{code.strip().upper()}/"


def base_url(start: str | None = None) -> str:
    """The documentation's base URL (no trailing slash) for the project around `start` (default:
    the current directory). A bad `docs-url` raises `config.ConfigError`."""
    return configured(start) or package_url() or DEFAULT


def configured(start: str | None = None) -> str | None:
    """`docs-url` of the configuration file that applies from `start`, validated, or None."""
    from shardshift import config

    found = config.find(start)
    if found is None or "docs-url" not in found[1]:
        return None
    return config.url(found[1]["docs-url"], f"{found[0]}: docs-url")


def fallback_url() -> str:
    """The base when no configuration sets one: the package metadata's, else DEFAULT."""
    return package_url() or DEFAULT


@lru_cache(maxsize=1)
def package_url() -> str | None:
    """The `Documentation` URL of shardshift's `[project.urls]`, from the installed metadata."""
    from importlib import metadata

    try:
        entries = metadata.metadata("shardshift").get_all("Project-URL") or []
    except metadata.PackageNotFoundError:
        return None
    return documentation_entry(entries)


def documentation_entry(entries: list[str]) -> str | None:
    """The URL of the `Documentation, <url>` entry among `Project-URL` metadata lines."""
    for entry in entries:
        label, _, url = entry.partition(",")
        if label.strip().lower() in ("documentation", "docs") and url.strip().startswith(("http://", "https://")):
            return url.strip().rstrip("/")
    return None
