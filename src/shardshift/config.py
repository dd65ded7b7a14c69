"""Project configuration: `[tool.shardshift]` in pyproject.toml, or a shardshift.toml.

The file is found by walking up from the current directory; the first directory that holds
either file decides, and there shardshift.toml wins over pyproject.toml (a pyproject.toml
without a `[tool.shardshift]` table does not count). Options are the long command-line options
without dashes; unknown options and values of the wrong type are errors (exit status 2). The
command line wins over the file, option by option.

```toml
[tool.shardshift]
select = ["SS", "DS"]
ignore = ["DS101"]
fail-on = "warning"
min-severity = "info"    # lowest severity shown (text and github default: warning)
world-size = 16          # or nodes = 2 and gpus-per-node = 8
deepspeed-version = "0.19.8"
axolotl-version = "0.12.2"  # also megatron-core-, accelerate-, transformers-, torchtitan-, torch-version
hidden-size = 4096
docs-url = "https://docs.example.com/shardshift"  # where SARIF helpUri and `explain` link

[tool.shardshift.per-file-ignores]
"configs/legacy/*.json" = ["DS102"]
```
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass, field
from typing import Any, Callable

CONFIG_NAMES = ("shardshift.toml", "pyproject.toml")
# `[tool.shardshift...]`, `tool.shardshift... =` or a `[tool]` table (which may hold `shardshift.x = ...`).
MAY_HAVE_TABLE = re.compile(
    rb"""(?m)^[ \t]*(\[[ \t]*tool[ \t]*(\.[ \t]*["']?shardshift|\])|tool[ \t]*\.[ \t]*["']?shardshift)""")


class ConfigError(Exception):
    """The configuration file is unreadable or holds an unknown option or a bad value."""


@dataclass(slots=True)
class Config:
    """Settings from the configuration file (None: not set there)."""

    path: str | None = None
    select: list[str] | None = None
    ignore: list[str] | None = None
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    fail_on: str | None = None
    min_severity: str | None = None
    world_size: int | None = None
    nodes: int | None = None
    gpus_per_node: int | None = None
    deepspeed_version: tuple[int, ...] | None = None
    megatron_core_version: tuple[int, ...] | None = None
    accelerate_version: tuple[int, ...] | None = None
    transformers_version: tuple[int, ...] | None = None
    axolotl_version: tuple[int, ...] | None = None
    torchtitan_version: tuple[int, ...] | None = None
    torch_version: tuple[int, ...] | None = None
    hidden_size: int | None = None
    gpu_memory: str | None = None
    model_params: str | None = None
    model_config: str | None = None
    env: dict[str, str] = field(default_factory=dict)  # the job's environment for launch scripts
    docs_url: str | None = None  # the documentation site's base URL (shardshift.docs_url)
    follow_outside: bool | None = None  # read files outside the checked tree that a checked file names

    @property
    def root(self) -> str:
        """The directory per-file-ignores patterns are relative to."""
        return os.path.dirname(os.path.abspath(self.path)) if self.path else os.getcwd()

    def ignored_for(self, path: str) -> set[str]:
        """Codes (or prefixes) that per-file-ignores switch off for `path`."""
        if not self.per_file_ignores:
            return set()
        relative = os.path.relpath(os.path.abspath(path), self.root).replace(os.sep, "/")
        name = relative.rsplit("/", 1)[-1]
        codes: set[str] = set()
        for pattern, ignored in self.per_file_ignores.items():
            probe = pattern[2:] if pattern.startswith("./") else pattern
            if fnmatch.fnmatchcase(relative, probe) or ("/" not in probe and fnmatch.fnmatchcase(name, probe)):
                codes.update(ignored)
        return codes


# --- option table: name -> (attribute, converter, what it expects) -------------------------------


def _codes(value: Any, name: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ConfigError(f"{name} must be a list of rule codes or prefixes, such as [\"DS\", \"SS002\"]")
    return [v.strip().upper() for v in value]


def _per_file(value: Any, name: str) -> dict[str, list[str]]:
    if not isinstance(value, dict):
        raise ConfigError(f"{name} must be a table of glob = [codes], such as \"legacy/*.json\" = [\"DS102\"]")
    return {str(pattern): _codes(codes, f"{name} {pattern!r}") for pattern, codes in value.items()}


def _positive(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{name} must be a whole number of at least 1, not {value!r}")
    return value


def _fail_on(value: Any, name: str) -> str:
    if value not in ("error", "warning"):
        raise ConfigError(f"{name} must be \"error\" or \"warning\", not {value!r}")
    return value


def _severity(value: Any, name: str) -> str:
    if value not in ("error", "warning", "info"):
        raise ConfigError(f"{name} must be \"error\", \"warning\" or \"info\", not {value!r}")
    return value


def _quantity(value: Any, name: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ConfigError(f"{name} must be a number or a string such as \"80GB\" or \"8B\", not {value!r}")
    return str(value)


def _flag(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{name} must be true or false, not {value!r}")
    return value


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{name} must be a path string, not {value!r}")
    return value


def url(value: Any, name: str) -> str:
    """An http(s) URL with a host, without its trailing slash (`docs-url`)."""
    from urllib.parse import urlsplit

    parts = urlsplit(value) if isinstance(value, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc or any(c.isspace() for c in value):
        raise ConfigError(f"{name} must be an http(s) URL such as \"https://shardshift.dev\", not {value!r}")
    return value.rstrip("/")


def _version(value: Any, name: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in str(value).split("."))
    except ValueError:
        raise ConfigError(f"{name} must be a version string such as \"0.19.8\", not {value!r}") from None


def _environment(value: Any, name: str) -> dict[str, str]:
    from shardshift.context.environment import parse

    if not isinstance(value, (dict, list)):
        raise ConfigError(f"{name} must be a table such as {{TP = \"8\"}} or a list such as [\"TP=8\"], not {value!r}")
    try:
        return parse(value, name)
    except ValueError as error:
        raise ConfigError(str(error)) from None


OPTIONS: dict[str, tuple[str, Callable[[Any, str], Any]]] = {
    "select": ("select", _codes),
    "ignore": ("ignore", _codes),
    "per-file-ignores": ("per_file_ignores", _per_file),
    "fail-on": ("fail_on", _fail_on),
    "min-severity": ("min_severity", _severity),
    "world-size": ("world_size", _positive),
    "nodes": ("nodes", _positive),
    "gpus-per-node": ("gpus_per_node", _positive),
    "deepspeed-version": ("deepspeed_version", _version),
    "megatron-core-version": ("megatron_core_version", _version),
    "accelerate-version": ("accelerate_version", _version),
    "transformers-version": ("transformers_version", _version),
    "axolotl-version": ("axolotl_version", _version),
    "torchtitan-version": ("torchtitan_version", _version),
    "torch-version": ("torch_version", _version),
    "hidden-size": ("hidden_size", _positive),
    "gpu-memory": ("gpu_memory", _quantity),
    "model-params": ("model_params", _quantity),
    "model-config": ("model_config", _text),
    "env": ("env", _environment),
    "docs-url": ("docs_url", url),
    "follow-outside": ("follow_outside", _flag),
}


# --- finding and reading the file ----------------------------------------------------------------


MAX_CONFIG_BYTES = 5_000_000  # the same cap as a checked file's


def _load_toml(path: str) -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    from shardshift.toml_guard import refusal

    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
        if len(raw) > MAX_CONFIG_BYTES:
            raise ConfigError(f"{path}: larger than {MAX_CONFIG_BYTES:,} bytes; not read")
        text = raw.decode("utf-8")
        refused = refusal(text)
        if refused is not None:
            raise ConfigError(f"{path}: {refused}; not read")
        return tomllib.loads(text)
    except OSError as error:
        raise ConfigError(f"{path}: cannot read: {error.strerror}") from None
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path}: not UTF-8 text (byte 0x{raw[error.start]:02x} at offset {error.start})") from None
    except RecursionError:
        raise ConfigError(f"{path}: nested too deep to read") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: not valid TOML: {error}") from None


def _table(path: str) -> dict | None:
    """The shardshift table of one file, or None when a pyproject.toml has none."""
    if os.path.basename(path) != "pyproject.toml":
        return _load_toml(path)
    try:
        with open(path, "rb") as handle:
            if not MAY_HAVE_TABLE.search(handle.read(MAX_CONFIG_BYTES + 1)):
                return None  # cheap: most pyproject.toml files have no [tool.shardshift] (saves tomllib)
    except OSError:
        return None
    table = _load_toml(path).get("tool", {}).get("shardshift")
    if table is not None and not isinstance(table, dict):
        raise ConfigError(f"{path}: tool.shardshift must be a table")
    return table


def find(start: str | None = None) -> tuple[str, dict] | None:
    """The configuration file that applies from `start` (default: the current directory) and
    its shardshift table, or None."""
    directory = os.path.abspath(start or os.getcwd())
    while True:
        for name in CONFIG_NAMES:
            candidate = os.path.join(directory, name)
            if os.path.isfile(candidate):
                table = _table(candidate)
                if table is not None:
                    return candidate, table
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def parse(table: dict, path: str | None = None) -> Config:
    """Check and convert one shardshift table."""
    from shardshift.rules.base import did_you_mean

    where = f"{path}: " if path else ""
    section = "[tool.shardshift]" if path and os.path.basename(path) == "pyproject.toml" else "configuration"
    config = Config(path=path)
    for name, value in table.items():
        if name not in OPTIONS:
            suggestion = did_you_mean(name, OPTIONS)
            hint = f"; did you mean {suggestion!r}?" if suggestion else f"; known options: {', '.join(OPTIONS)}"
            raise ConfigError(f"{where}unknown option {name!r} in {section}{hint}")
        attribute, convert = OPTIONS[name]
        try:
            setattr(config, attribute, convert(value, name))
        except ConfigError as error:
            raise ConfigError(f"{where}{error}") from None
    if (config.nodes is None) != (config.gpus_per_node is None):
        raise ConfigError(f"{where}nodes and gpus-per-node go together")
    if config.nodes is not None and config.world_size is not None \
            and config.world_size != config.nodes * config.gpus_per_node:
        raise ConfigError(f"{where}world-size {config.world_size} disagrees with nodes × gpus-per-node = "
                          f"{config.nodes * config.gpus_per_node}")
    return config


def load(explicit: str | None = None, isolated: bool = False) -> Config:
    """The configuration for this run: `explicit` (--config), else the file found from the
    current directory, else defaults. `isolated` ignores every file."""
    if isolated:
        return Config()
    if explicit is not None:
        if not os.path.isfile(explicit):
            raise ConfigError(f"{explicit}: no such configuration file")
        table = _table(explicit)
        if table is None:
            raise ConfigError(f"{explicit}: has no [tool.shardshift] table")
        return parse(table, explicit)
    found = find()
    return parse(found[1], found[0]) if found else Config()


def check_codes(codes: list[str] | set[str] | None, known: set[str], where: str) -> None:
    """Every code or prefix in `codes` names at least one rule."""
    for prefix in codes or ():
        if not any(code.startswith(prefix) for code in known):
            raise ConfigError(f"unknown rule code {prefix!r} in {where} (see `shardshift rules`)")
