"""Generate src/shardshift/formats/axolotl/plugin_keys.py: the config keys each bundled Axolotl
plugin adds to the schema, read statically (ast, no import) from the installed axolotl sources.

Axolotl registers the plugins a config lists under `plugins:` (and its BUILTIN_PLUGINS, always);
`axolotl.integrations.config.merge_input_args` then builds the config model from the base schema
plus every registered plugin's `get_input_args()` pydantic model. A plugin's keys are fields of
that model (with its bases) and their aliases.

    python scripts/gen_axolotl_plugins.py            # writes the module
    python scripts/gen_axolotl_plugins.py --check    # exits 1 when the module is out of date
"""

from __future__ import annotations

import ast
import importlib.util
import os
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src" / "shardshift" / "formats" / "axolotl" / "plugin_keys.py"


def _root() -> Path:
    spec = importlib.util.find_spec("axolotl")
    if spec is None or spec.origin is None:
        sys.exit("axolotl is not installed")
    return Path(spec.origin).parent


def _version(root: Path) -> str:
    for dist in root.parent.glob("axolotl-*.dist-info"):
        return dist.name[len("axolotl-"):-len(".dist-info")]
    return "?"


def _module_file(root: Path, module: str) -> Path | None:
    parts = module.split(".")[1:]  # drop "axolotl"
    base = root.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _resolve_class(root: Path, module: str, name: str, depth: int = 0) -> tuple[str, ast.ClassDef] | None:
    """(module, ClassDef) where `name` is defined, following `from .x import name` re-exports."""
    path = _module_file(root, module)
    if path is None or depth > 5:
        return None
    tree = _parse(path)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return module, node
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == name for a in node.names):
            original = next(a.name for a in node.names if (a.asname or a.name) == name)
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("axolotl."):
                return _resolve_class(root, target, original, depth + 1)
    return None


def _aliases(value: ast.expr | None, annotation: ast.expr) -> list[str]:
    out = []
    calls = [value] if isinstance(value, ast.Call) else []
    if isinstance(annotation, ast.Subscript) and getattr(annotation.value, "id", "") == "Annotated":
        elements = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else []
        calls += [e for e in elements if isinstance(e, ast.Call)]
    for call in calls:
        for keyword in call.keywords:
            if keyword.arg in ("alias", "validation_alias") and isinstance(keyword.value, ast.Constant) \
                    and isinstance(keyword.value.value, str):
                out.append(keyword.value.value)
    return out


def _fields(root: Path, module: str, cls: ast.ClassDef, depth: int = 0) -> set[str]:
    keys: set[str] = set()
    for item in cls.body:
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            if ast.unparse(item.annotation).startswith(("ClassVar", "typing.ClassVar")):
                continue
            if item.target.id == "model_config":
                continue
            keys.add(item.target.id)
            keys.update(_aliases(item.value, item.annotation))
    for base in cls.bases:
        name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else None
        if name in (None, "BaseModel") or depth > 5:
            continue
        found = _resolve_class(root, module, name)
        if found is not None:
            keys |= _fields(root, found[0], found[1], depth + 1)
    return keys


def plugins(root: Path) -> dict[str, tuple[str, frozenset[str]]]:
    """plugin class name -> (package "axolotl.integrations.<x>", its keys)."""
    out = {}
    for path in sorted((root / "integrations").rglob("*.py")):
        if path.name == "base.py" and path.parent.name == "integrations":
            continue
        tree = _parse(path)
        relative = path.relative_to(root.parent).with_suffix("")
        module = ".".join(relative.parts[:-1] if relative.name == "__init__" else relative.parts)
        package = ".".join(relative.parts[:3])
        for node in tree.body:
            if not isinstance(node, ast.ClassDef):
                continue
            method = next((m for m in node.body if isinstance(m, ast.FunctionDef) and m.name == "get_input_args"),
                          None)
            if method is None:
                continue
            returned = [r.value.value for r in ast.walk(method) if isinstance(r, ast.Return)
                        and isinstance(r.value, ast.Constant) and isinstance(r.value.value, str)]
            keys: set[str] = set()
            for target in returned:
                args_module, args_class = target.rsplit(".", 1)
                found = _resolve_class(root, args_module, args_class)
                if found is None:
                    sys.exit(f"cannot find {target} ({path})")
                keys |= _fields(root, *found)
            out[node.name] = (package, frozenset(keys))
        del module
    return out


def builtin(root: Path) -> tuple[str, ...]:
    tree = _parse(root / "integrations" / "base.py")
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "BUILTIN_PLUGINS" for t in node.targets):
            return tuple(ast.literal_eval(node.value))
    return ()


def render(root: Path) -> str:
    table = plugins(root)
    lines = [
        f'"""The config keys each plugin bundled with axolotl {_version(root)} adds to the schema (generated by',
        "scripts/gen_axolotl_plugins.py from the installed sources: every `get_input_args()` of",
        "axolotl/integrations/*, the fields of the pydantic model it names, with their bases and aliases).",
        "",
        "Axolotl merges a plugin's model into the config schema only when the plugin is registered: listed",
        "under `plugins:` (axolotl.integrations.config.merge_input_args), or one of BUILTIN_PLUGINS, which",
        'axolotl.integrations.base always registers."""',
        "",
        "# plugin class -> (its package, the keys its input args model adds)",
        "PLUGINS: dict[str, tuple[str, frozenset[str]]] = {",
    ]
    for name, (package, keys) in sorted(table.items()):
        shown = ", ".join(repr(k) for k in sorted(keys))
        lines.append(f"    {name!r}: ({package!r}, frozenset({{{shown}}})),")
    lines.append("}")
    lines.append("")
    lines.append("# registered whatever the config lists (axolotl.integrations.base.BUILTIN_PLUGINS)")
    lines.append(f"BUILTIN_PLUGINS = {builtin(root)!r}")
    lines.append("")
    return "\n".join(lines)


def main() -> int:
    text = render(_root())
    if "--check" in sys.argv:
        current = OUT.read_text(encoding="utf-8") if OUT.is_file() else ""
        return 0 if current == text else 1
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {os.path.relpath(OUT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
