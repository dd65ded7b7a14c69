"""The key table that judges a torchtitan TOML when the repository extends or replaces torchtitan's.

Two extension points change which sections and keys a TOML may hold, and both are read statically
(with `ast`, never imported):

* a **custom config module** (`job.custom_config_module`, or the older `experimental.custom_args_module`):
  torchtitan's `ConfigManager._maybe_add_custom_args` imports it and `_merge_configs` merges its
  `JobConfig` dataclass into the schema (a section that is a dataclass on both sides is merged key by
  key, any other field of the module replaces or adds the field). The dotted name is resolved against
  the TOML's folder and its ancestors (the repository root among them).
* a **vendored torchtitan copy**: a repository that holds its own `torchtitan/config/job_config.py`
  (with `torchtitan/config/manager.py`), or the older single `torchtitan/config_manager.py` (dataclasses,
  or the argparse form of 2024), runs that copy, so the copy's dataclasses are the table.

When a named module or the config module of a vendored tree is not in the checked tree, the table is
unknown: `missing` says what and how to tell the tool (`UnknownContext`).
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from shardshift.context import UnknownContext
from shardshift.user_code import parse as parse_user_code
from shardshift.user_code import walk as walk_nodes

Schema = dict[str, dict[str, tuple[str, Any]]]
MAX_UP = 12  # ancestors looked at above a TOML (a repository root is rarely deeper)
_NO_DEFAULT = None


@dataclass(frozen=True)
class TitanTable:
    """The sections and keys that judge one TOML, and whose they are."""

    schema: Schema
    classes: dict[str, str]  # section -> the qualified class name torchtitan's "Invalid field names" error shows
    copy: str | None = None  # the vendored config module (path) whose dataclasses are the base table
    # what the config manager of the copy does with a key its dataclass lacks: "refuse" (ValueError: Invalid
    # field names), "drop" (ignored silently), "unknown" (its manager is not in the checked tree), "open"
    # (argparse form: the TOML is read as a plain dict, any key passes)
    unknown_keys: str = "refuse"
    custom: str | None = None  # the custom module as named
    custom_path: str | None = None  # where it was found
    custom_keys: frozenset[tuple[str, str]] = field(default_factory=frozenset)  # (section, key) the module adds
    missing: UnknownContext | None = None  # the module or copy that could not be found

    @property
    def tables(self) -> set[str]:
        names = set(self.schema)
        for name in self.schema:
            parts = name.split(".")
            names.update(".".join(parts[:i]) for i in range(1, len(parts)))
        names.discard("")
        return names

    @property
    def upstream(self) -> bool:
        """True when torchtitan v0.2.2's own table judges (no vendored copy)."""
        return self.copy is None


CUSTOM_KEYS = (("job", "custom_config_module"), ("experimental", "custom_args_module"))


def _named(data: dict, section: str, key: str) -> str | None:
    table = data.get(section) if isinstance(data, dict) else None
    value = table.get(key) if isinstance(table, dict) else None
    return value.strip() if isinstance(value, str) and value.strip() else None


def table_for(path: str, data: dict, release_given: bool = False) -> TitanTable:
    """The table that judges the TOML at `path` with content `data`."""
    named = tuple(_named(data, section, key) for section, key in CUSTOM_KEYS)
    try:
        return _table(os.path.abspath(path), named, release_given)
    except RecursionError:  # a pathologically nested module: judge with torchtitan's own table
        from shardshift.formats.torchtitan.keys import CLASSES, SCHEMA

        return TitanTable({k: dict(v) for k, v in SCHEMA.items()},
                          {s: f"torchtitan.config.job_config.{n}" for s, n in CLASSES.items()})


def _ancestors(path: str) -> list[str]:
    out = []
    folder = os.path.dirname(path)
    for _ in range(MAX_UP):
        out.append(folder)
        if os.path.exists(os.path.join(folder, ".git")):
            break
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return out


@lru_cache(maxsize=64)
def _table(path: str, named: tuple[str | None, ...], release_given: bool) -> TitanTable:
    from shardshift.formats.torchtitan.keys import CLASSES, SCHEMA

    ancestors = _ancestors(path)
    schema: Schema = {k: dict(v) for k, v in SCHEMA.items()}
    classes = dict(CLASSES)
    classes = {section: f"torchtitan.config.job_config.{name}" for section, name in classes.items()}
    copy, unknown_keys, missing = None, "refuse", None
    found = _find_copy(ancestors)
    if found is not None:
        copy, manager, form = found
        read = _read_copy(copy, form)
        if read is not None:
            schema, names = read
            classes = {section: f"{_module_name(copy)}.{name}" for section, name in names.items()}
            unknown_keys = _manager_behaviour(manager, form)
    elif not release_given:
        tree = _vendored_tree(path)
        if tree is not None:
            missing = UnknownContext(
                "release", f"this file sits in a vendored torchtitan tree ({_shown(tree)}) whose config module "
                "(torchtitan/config/job_config.py or torchtitan/config_manager.py) is not in the checked tree, so "
                "the release or fork that reads it is unknown",
                "check the repository that holds the copy together with this file")
    # the key that names the module is the one the config manager reads before it builds the schema:
    # torchtitan v0.2.2 reads job.custom_config_module only (experimental.custom_args_module is copied
    # over after the file has been read); a copy reads the key its own dataclasses have
    module = None
    for (section, key), value in zip(CUSTOM_KEYS, named):
        if value and (key in schema.get(section, {}) if copy else section == "job"):
            module = value
            break
    custom_path, custom_keys = None, frozenset()
    if module:
        custom_path = _resolve_module(module, ancestors)
        if custom_path is None:
            missing = UnknownContext(
                "extension", f"the custom config module {module} is not in the checked tree, so the sections and "
                "keys it adds are unknown",
                f"check the repository that holds {module.replace('.', '/')}.py together with this file")
        else:
            added = _read_custom(custom_path)
            if added is None:
                missing = UnknownContext(
                    "extension", f"the custom config module {module} ({_shown(custom_path)}) has no JobConfig dataclass "
                    "shardshift can read", "write its JobConfig as a plain @dataclass in that module")
            else:
                extra, extra_classes = added
                keys = set()
                for section, fields in extra.items():
                    schema.setdefault(section, {}).update(fields)
                    keys.update((section, k) for k in fields)
                for section, name in extra_classes.items():
                    # ConfigManager._merge_configs builds Merged<Base> for a section both sides have
                    base = classes.get(section)
                    classes[section] = (f"torchtitan.config.manager.Merged{base.rsplit('.', 1)[1]}" if base
                                        else f"{module}.{name}")
                custom_keys = frozenset(keys)
    return TitanTable(schema, classes, copy, unknown_keys, module, custom_path, custom_keys, missing)


def _find_copy(ancestors: list[str]) -> tuple[str, str | None, str] | None:
    """(config module, config manager or None, "split" | "single") of the torchtitan copy nearest the TOML."""
    for folder in ancestors:
        split = os.path.join(folder, "torchtitan", "config", "job_config.py")
        if os.path.isfile(split):
            manager = os.path.join(folder, "torchtitan", "config", "manager.py")
            return split, manager if os.path.isfile(manager) else None, "split"
        single = os.path.join(folder, "torchtitan", "config_manager.py")
        if os.path.isfile(single):
            return single, single, "single"
    return None


def _vendored_tree(path: str) -> str | None:
    """The torchtitan package folder the TOML sits in (…/torchtitan/models/<m>/train_configs/x.toml,
    …/torchtitan/experiments/…, …/torchtitan/train_configs/…), or None."""
    parts = path.split(os.sep)
    for i in range(len(parts) - 2, 0, -1):
        if parts[i] == "torchtitan" and parts[i + 1] in ("models", "experiments", "train_configs"):
            return os.sep.join(parts[: i + 1])
    return None


def _shown(path: str) -> str:
    """`path` relative to the working directory when it lies under it."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def _module_name(path: str) -> str:
    parts = os.path.splitext(path)[0].split(os.sep)
    index = max(i for i, p in enumerate(parts) if p == "torchtitan")
    return ".".join(parts[index:])


def _resolve_module(module: str, ancestors: list[str]) -> str | None:
    """The file of `module` under the TOML's folder or an ancestor, or under an ancestor's `src/`
    (a package in the src layout is importable once installed, as `pip install -e .` does)."""
    relative = module.replace(".", os.sep)
    for folder in ancestors:
        for base in (folder, os.path.join(folder, "src")):
            for candidate in (os.path.join(base, relative + ".py"), os.path.join(base, relative, "__init__.py")):
                if os.path.isfile(candidate):
                    return candidate
    return None


@lru_cache(maxsize=32)
def _parse(path: str) -> ast.Module | None:
    from shardshift.files import read_text

    text = read_text(path, 2_000_000, errors="strict", bom=False)
    if text is None:
        return None
    try:
        return parse_user_code(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _default(node: ast.expr | None) -> Any:
    if node is None:
        return _NO_DEFAULT
    if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "field":
        for keyword in node.keywords:
            if keyword.arg == "default":
                return _default(keyword.value)
            if keyword.arg == "default_factory":
                if isinstance(keyword.value, ast.Lambda):
                    return _default(keyword.value.body)
                return _NO_DEFAULT
        return _NO_DEFAULT
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _NO_DEFAULT


def _classes(tree: ast.Module) -> dict[str, list[tuple[str, str, Any]]]:
    """Every class of the module: name -> [(field, annotation as written, default)]."""
    out: dict[str, list[tuple[str, str, Any]]] = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        fields = []
        for item in node.body:
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                annotation = ast.unparse(item.annotation)
                if annotation.startswith(("ClassVar", "typing.ClassVar")):
                    continue
                fields.append((item.target.id, annotation, _default(item.value)))
        out[node.name] = fields
    return out


def _sections(classes: dict[str, list[tuple[str, str, Any]]], root: str = "JobConfig") -> tuple[Schema, dict[str, str]]:
    schema: Schema = {}
    names: dict[str, str] = {}

    def walk(cls: str, section: str, depth: int) -> None:
        names[section] = cls
        keys: dict[str, tuple[str, Any]] = {}
        for name, annotation, default in classes.get(cls, []):
            nested = annotation.strip("'\"")
            if nested in classes and nested != cls and depth < 6:
                walk(nested, f"{section}.{name}" if section else name, depth + 1)
            else:
                keys[name] = (annotation, default)
        if keys or section:
            schema[section] = keys

    walk(root, "", 0)
    return schema, names


def _read_copy(path: str, form: str) -> tuple[Schema, dict[str, str]] | None:
    tree = _parse(path)
    if tree is None:
        return None
    classes = _classes(tree)
    if classes.get("JobConfig"):
        return _sections(classes)
    # the argparse form (2024): `parser.add_argument("--section.key", ...)` inside class JobConfig
    schema: Schema = {}
    for node in walk_nodes(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument" and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str) and first.value.startswith("--"):
                section, _, key = first.value[2:].rpartition(".")
                schema.setdefault(section, {})[key.replace("-", "_")] = ("Any", None)
    return schema, {"": "JobConfig"}


def _manager_behaviour(manager: str | None, form: str) -> str:
    if manager is None:
        return "unknown"
    tree = _parse(manager)
    if tree is None:
        return "unknown"
    if form == "single" and not _classes(tree).get("JobConfig"):
        return "open"
    from shardshift.files import read_text

    text = read_text(manager, 2_000_000, bom=False)
    if text is None:
        return "unknown"
    return "refuse" if "Invalid field names" in text else "drop"


def _read_custom(path: str) -> tuple[Schema, dict[str, str]] | None:
    tree = _parse(path)
    if tree is None:
        return None
    classes = _classes(tree)
    if "JobConfig" not in classes:
        return None
    return _sections(classes)
