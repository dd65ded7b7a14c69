"""Dump every command-line flag of Megatron-LM's own argument parser into a data file.

    python scripts/dump_megatron_flags.py [--megatron ../shared/oracles/megatron-lm]
                                          [--out src/shardshift/formats/megatron/flags.json] [--check]

The parser is Megatron's: `megatron.training.arguments.add_megatron_arguments` applied to an
`argparse.ArgumentParser(allow_abbrev=False)`, exactly as `parse_args` builds it (without an extra
args provider). Nothing is parsed, validated or trained; no GPU and no network are used. Every action
of the parser becomes one entry: its spellings (the option strings argparse accepts, nothing else:
Megatron turns abbreviations off), dest, action kind, value type, default, const, choices, nargs,
required, argument group, the first sentence of its help, and whether it is deprecated.

Deprecation has no single mechanism in Megatron (no registry; argparse's `deprecated=` is Python
3.13+ and unused); a flag is deprecated when any of these says so, and `deprecation` lists which:
its help text deprecates the flag itself ("Deprecated.", "[DEPRECATED] ...", "DEPRECATED: use ...",
"..., do not use."), its dest (`*_deprecated`, `deprecated_*`), argparse's `deprecated=`, or a
message in the code that handles old flags: the string literals of `parse_args`, `validate_args` and
the `__post_init__` of `TransformerConfig` / `ModelParallelConfig` of the form "--flag is deprecated"
/ "--flag argument is no longer valid" / "dest_name is deprecated" (read with `ast`, never run). Help sentences that mention a
deprecated *value* of a live flag (`--optimizer dist_muon`, `--cuda-graph-modules full`) are kept
apart in `deprecation_mentions`.

What is patched in to import the arguments module on a CPU-only Python 3.11, and nothing else:

- `typing.override` (Python 3.12) is set to an identity decorator, only when `typing` lacks it:
  `megatron/training/models/gpt.py` and `hybrid.py` import it and `argument_utils` imports those.
- `triton`, only when it is not installed: the import chain of `megatron.core` reaches ~35 modules
  that define GPU kernels at import time (`import triton`, `@triton.jit`, `triton.Config(...)`,
  `triton.__version__`). While Megatron is imported, an `import triton...` made by a `megatron.*`
  module gets an inert stand-in (decorators return the function unchanged, anything else is another
  stand-in); the stand-in never enters `sys.modules`, so torch keeps seeing that triton is absent
  (torch's own optional triton imports break on a stub), and the import hook is removed afterwards.

The GPU facts and the environment (`RANK`, `WORLD_SIZE`, device arch, Transformer Engine version)
that `parse_args` / `validate_args` read are not needed to build the parser, so none are patched.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import enum
import importlib.util
import inspect
import json
import re
import sys
import textwrap
import typing
from contextlib import contextmanager
from pathlib import Path

FORMAT_VERSION = 1
ROOT = Path(__file__).resolve().parents[1]
DEFAULT_MEGATRON = ROOT.parent / "shared" / "oracles" / "megatron-lm"
DEFAULT_OUT = ROOT / "src" / "shardshift" / "formats" / "megatron" / "flags.json"

# Help that deprecates the flag itself: "Deprecated.", "[DEPRECATED] ...", "DEPRECATED: use ...",
# "... do not use." -- not "'x' is a deprecated alias" or "the deprecated values" (those are about values).
_DEPRECATED_HELP = re.compile(r"(?:^|[.\[:]\s*)deprecated\b|\bdo not use\.", re.IGNORECASE)
_MENTIONS_DEPRECATION = re.compile(r"deprecat|\bdo not use\.|no longer valid", re.IGNORECASE)
# A message in the code whose subject is the flag: "--x is deprecated", "--x argument is no longer valid".
_DEPRECATED_CODE = re.compile(r"(--[A-Za-z0-9][A-Za-z0-9_-]*|\b[a-z][a-z0-9]*_[a-z0-9_]+)(?:\s+(?:argument|flag))?\s+is\s+"
                              r"(?:deprecated|no longer valid|going to be deprecated)\b")
_TRITON_VERSION = "3.5.0"  # what the stand-in reports as triton.__version__ (some modules parse it)


class _Inert:
    """A stand-in for anything under `triton`: attributes and calls give more stand-ins, and a call
    with one callable argument (a decorator: `@triton.jit`, `@triton.autotune(...)`) returns it."""

    def __init__(self, name: str):
        self.__name__ = name

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and callable(args[0]) and not kwargs:
            return args[0]
        return _Inert(self.__name__ + "()")

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Inert(f"{self.__name__}.{name}")

    def __getitem__(self, key):
        return _Inert(self.__name__ + "[]")

    def __repr__(self) -> str:
        return f"<inert {self.__name__}>"


@contextmanager
def _patched_imports():
    """The patches listed in the module docstring, each only when it is needed."""
    if not hasattr(typing, "override"):
        typing.override = lambda func: func
    if importlib.util.find_spec("triton") is not None:
        yield
        return
    triton = _Inert("triton")
    triton.__version__ = _TRITON_VERSION
    original = builtins.__import__

    def hooked(name, globals=None, locals=None, fromlist=(), level=0):
        importer = (globals or {}).get("__name__") or ""
        if level == 0 and (name == "triton" or name.startswith("triton.")) and importer.startswith("megatron."):
            if not fromlist:
                return triton
            module = triton
            for part in name.split(".")[1:]:
                module = getattr(module, part)
            return module
        return original(name, globals, locals, fromlist, level)

    builtins.__import__ = hooked
    try:
        yield
    finally:
        builtins.__import__ = original


def import_arguments(megatron: Path):
    """Import `megatron.training.arguments` from the Megatron-LM folder (the ~6-9 s part)."""
    megatron = Path(megatron).resolve()
    if not (megatron / "megatron" / "training" / "arguments.py").is_file():
        raise FileNotFoundError(f"{megatron} does not hold megatron/training/arguments.py")
    if str(megatron) not in sys.path:
        sys.path.insert(0, str(megatron))
    import warnings

    with _patched_imports(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Transformer Engine and Apex are not installed" and the like
        import megatron.training.arguments as arguments
    loaded = Path(arguments.__file__).resolve()
    if megatron not in loaded.parents:
        raise RuntimeError(f"megatron was already imported from {loaded}, not from {megatron}")
    return arguments


def build_parser(megatron: Path) -> argparse.ArgumentParser:
    """Megatron's ArgumentParser, built as `parse_args` builds it."""
    arguments = import_arguments(megatron)
    parser = argparse.ArgumentParser(description="Megatron-LM Arguments", allow_abbrev=False)
    return arguments.add_megatron_arguments(parser)


def _json_value(value):
    """(value as JSON, whether it had to be written as its repr)."""
    if isinstance(value, enum.Enum):
        return repr(value), True
    if isinstance(value, (list, tuple)):
        items = [_json_value(v) for v in value]
        return [v for v, _ in items], any(r for _, r in items)
    if isinstance(value, float) and value != value or value in (float("inf"), float("-inf")):
        return repr(value), True
    if value is None or isinstance(value, (bool, int, float, str)):
        return value, False
    return repr(value), True


def _type_of(action: argparse.Action) -> tuple[str, str | None]:
    """(type kind, the converter's qualified name for custom converters)."""
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction, argparse.BooleanOptionalAction)):
        return "bool-flag", None
    if isinstance(action, (argparse._StoreConstAction, argparse._AppendConstAction)):
        return "const", None
    if isinstance(action, argparse._CountAction):
        return "count", None
    if isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
        return "help", None
    converter = action.type
    if converter is None or converter is str:
        return "str", None
    if converter in (int, float, bool):
        return converter.__name__, None  # "bool": bool("False") is True, a known trap
    module = getattr(converter, "__module__", None) or type(converter).__module__
    name = getattr(converter, "__qualname__", None) or type(converter).__qualname__
    return "custom", f"{module}.{name}"


def _kind(action: argparse.Action) -> str:
    name = type(action).__name__
    known = {"_StoreAction": "store", "_StoreTrueAction": "store_true", "_StoreFalseAction": "store_false",
             "_StoreConstAction": "store_const", "_AppendAction": "append", "_AppendConstAction": "append_const",
             "_CountAction": "count", "_HelpAction": "help", "_VersionAction": "version",
             "BooleanOptionalAction": "boolean_optional", "_ExtendAction": "extend"}
    return known.get(name, f"{type(action).__module__}.{type(action).__qualname__}")


def _first_sentence(text: str | None) -> str | None:
    if not text or text == argparse.SUPPRESS:
        return None
    text = " ".join(text.split())
    match = re.match(r"(.+?[.!?])(?=\s+[A-Z(\"'`-]|$)", text)
    return match.group(1) if match else text


def _sentences_matching(text: str | None, pattern: re.Pattern) -> list[str]:
    if not text or text == argparse.SUPPRESS:
        return []
    text = " ".join(text.split())
    return [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z(\[\"'`-])", text) if pattern.search(s)]


def _string_literals(function) -> list[str]:
    """String literals of one function (f-strings: their literal parts joined), read with ast."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.append(node.value)
        elif isinstance(node, ast.JoinedStr):
            found.append("".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values))
    return found


def code_deprecations(arguments) -> dict[str, list[str]]:
    """Flag -> the messages in Megatron's argument-handling code that call it deprecated."""
    from megatron.core.model_parallel_config import ModelParallelConfig
    from megatron.core.transformer import TransformerConfig

    places = {"parse_args": arguments.parse_args, "validate_args": arguments.validate_args,
              "TransformerConfig.__post_init__": TransformerConfig.__post_init__,
              "ModelParallelConfig.__post_init__": ModelParallelConfig.__post_init__}
    notes: dict[str, list[str]] = {}
    for place, function in places.items():
        for literal in _string_literals(function):
            text = " ".join(literal.split())
            for flag in _DEPRECATED_CODE.findall(text):
                note = f"{place}: {text}"
                if note not in notes.setdefault(flag, []):
                    notes[flag].append(note)
    return notes


def _group_titles(parser: argparse.ArgumentParser) -> dict[int, str]:
    titles = {}
    for group in parser._action_groups:
        for action in group._group_actions:
            titles.setdefault(id(action), group.title)
    return titles


def flag_table(parser: argparse.ArgumentParser, arguments, megatron: Path) -> dict:
    """The data file's content: one entry per parser action, sorted by first spelling."""
    groups = _group_titles(parser)
    from_code = code_deprecations(arguments)
    flags = []
    for action in parser._actions:
        kind, type_name = _type_of(action)
        default, default_is_repr = _json_value(action.default)
        mentions = _sentences_matching(action.help, _MENTIONS_DEPRECATION)
        notes = [f"help: {s}" for s in mentions if _DEPRECATED_HELP.search(s)]
        if re.search(r"(^|_)deprecated(_|$)", action.dest):
            notes.append(f"dest: {action.dest}")
        if getattr(action, "deprecated", False):
            notes.append("argparse: deprecated=True")
        for name in [*action.option_strings, action.dest]:  # the code names a flag or its dest
            notes.extend(n for n in from_code.get(name, []) if n not in notes)
        flags.append({
            "spellings": list(action.option_strings),
            "dest": action.dest,
            "action": _kind(action),
            "type": kind,
            "type_name": type_name,
            "default": default,
            "default_is_repr": default_is_repr,
            "const": _json_value(action.const)[0],
            "choices": None if action.choices is None else _json_value(list(action.choices))[0],
            "nargs": action.nargs,
            "required": bool(action.required),
            "group": groups.get(id(action)),
            "help": _first_sentence(action.help),
            "deprecated": bool(notes),
            "deprecation": notes,
            "deprecation_mentions": [s for s in mentions if f"help: {s}" not in notes],
        })
    flags.sort(key=lambda f: (f["spellings"][0] if f["spellings"] else f["dest"], f["dest"]))
    return {
        "format_version": FORMAT_VERSION,
        "generator": "scripts/dump_megatron_flags.py",
        "megatron_commit": megatron_commit(megatron),
        "megatron_core_version": _core_version(megatron),
        "allow_abbrev": parser.allow_abbrev,
        "prefix_chars": parser.prefix_chars,
        "count": len(flags),
        "flags": flags,
    }


def megatron_commit(megatron: Path) -> str | None:
    """The pinned commit: a git checkout's HEAD, else the 40-hex commit the folder's README names."""
    megatron = Path(megatron)
    head = megatron / ".git" / "HEAD"
    if head.is_file():
        ref = head.read_text().strip()
        if ref.startswith("ref: "):
            target = megatron / ".git" / ref[5:]
            return target.read_text().strip() if target.is_file() else None
        return ref
    for readme in (megatron / "README.md", megatron.parent / "README.md"):
        if readme.is_file():
            text = readme.read_text(encoding="utf-8")
            match = re.search(rf"{re.escape(megatron.name)}/?`?[^\n]*?\n?[^\n]*?commit\s+`?([0-9a-f]{{40}})", text)
            if match:
                return match.group(1)
    return None


def _core_version(megatron: Path) -> str | None:
    info = Path(megatron) / "megatron" / "core" / "package_info.py"
    if not info.is_file():
        return None
    fields = dict(re.findall(r"^(MAJOR|MINOR|PATCH)\s*=\s*(\d+)", info.read_text(), re.MULTILINE))
    return ".".join(fields[k] for k in ("MAJOR", "MINOR", "PATCH")) if len(fields) == 3 else None


def generate(megatron: Path = DEFAULT_MEGATRON) -> dict:
    """Build Megatron's parser and return the flag table."""
    return flag_table(build_parser(megatron), import_arguments(megatron), megatron)


def render(table: dict) -> str:
    return json.dumps(table, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cli.add_argument("--megatron", type=Path, default=DEFAULT_MEGATRON, help="the Megatron-LM folder (oracle)")
    cli.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where to write the JSON")
    cli.add_argument("--check", action="store_true", help="only compare with --out; exit 1 when it differs")
    options = cli.parse_args(argv)
    text = render(generate(options.megatron))
    if options.check:
        same = options.out.is_file() and options.out.read_text(encoding="utf-8") == text
        print(f"{options.out}: {'up to date' if same else 'differs from the parser'}")
        return 0 if same else 1
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(text, encoding="utf-8")
    print(f"wrote {options.out} ({json.loads(text)['count']} flags)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
