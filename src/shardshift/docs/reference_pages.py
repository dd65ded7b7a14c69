"""The reference pages: the command line (`reference/cli.md`), the Python API (`reference/api.md`),
the planner (`reference/planner.md`) and the configuration options (`reference/options.md`), read
from the parser, the modules' docstrings and the option table."""

from __future__ import annotations

import contextlib
import importlib
import inspect
import json
import os
import pkgutil
from pathlib import Path

from shardshift.docs.markdown import cell, fence

CONTRACT = ("The command line is a contract that CI relies on: options, rule codes, exit codes, the JSON "
            "shape and SARIF fields only ever grow. Nothing is renamed or removed; a new field, option or code "
            "may be added.")


def pages(root: Path) -> dict[str, str]:
    return {"reference/cli.md": cli(root), "reference/api.md": api(), "reference/planner.md": planner(),
            "reference/options.md": options()}


@contextlib.contextmanager
def _columns(width: int = 100):
    """argparse wraps help at $COLUMNS: fix it so that the page is the same on every machine."""
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)
    try:
        yield
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved


def subcommands() -> dict[str, object]:
    """Each subcommand's argparse parser, in the order `shardshift --help` lists them."""
    import argparse

    from shardshift.cli import build_parser

    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {"": parser, **action.choices}


def cli(root: Path) -> str:
    from shardshift import cli as module

    lines = ["# Command line", "", CONTRACT, "", inspect.cleandoc(module.__doc__ or ""), ""]
    with _columns():
        for name, parser in subcommands().items():
            title = f"`shardshift {name}`" if name else "`shardshift`"
            lines += [f"## {title}", "", fence(parser.format_help().replace("\n\n\n", "\n\n"), "text")]
    lines += ["## `check --format json`", "",
              "One object: `findings` (each with `code`, `severity`, `file`, `line`, `column`, `pointer`, `message`, "
              "`fix`, and `fix_kind`, `related`, `unknown_context`, `assumed` when they apply), `files`, `summary` and "
              "`unknowns` (settings known only when the job runs). The output of a real run, "
              "`shardshift check --format json --isolated` on one rule's bad fixture:", ""]
    sample = root / "fixtures" / "deepspeed" / "rules" / "DS301" / "bad.json"
    if sample.is_file():
        import shardshift

        result = shardshift.check(str(sample), isolated=True)
        text = json.dumps(result.to_json(), indent=2, ensure_ascii=False)
        lines += [fence(text.replace(str(root) + os.sep, ""), "json")]  # paths as a run from the checkout shows them
    lines += ["`--format sarif` is SARIF 2.1.0: every rule is a `reportingDescriptor` whose `helpUri` is its page on "
              "this site (`docs-url` in the configuration changes the base); each finding is a `result` with its "
              "physical location, its JSON pointer as a logical location and its related locations.", ""]
    return "\n".join(lines)


def _signature(name: str, value) -> str:
    try:
        return f"{name}{inspect.signature(value)}"
    except (TypeError, ValueError):
        return name


def public_functions() -> list[str]:
    """The public functions of shardshift.api (its `__all__`, in that order)."""
    from shardshift import api

    return [name for name in api.__all__ if inspect.isfunction(getattr(api, name))]


def api() -> str:
    import shardshift
    from shardshift import api as module

    lines = ["# Python API", "", inspect.cleandoc(module.__doc__ or ""), "",
             "`import shardshift` exports " + ", ".join(f"`{n}`" for n in shardshift.__all__) + "; everything "
             "below is importable from `shardshift.api`.", ""]
    classes = [n for n in module.__all__ if inspect.isclass(getattr(module, n))]
    for name in [*public_functions(), *classes]:
        value = getattr(module, name)
        kind = "class" if inspect.isclass(value) else "def"
        lines += [f"## `{name}`", "", fence(f"{kind} {_signature(name, value)}", "python"),
                  inspect.getdoc(value) or "", ""]
    return "\n".join(lines)


def planner() -> str:
    import shardshift.planner as package

    lines = ["# Planner: `shardshift plan` and `shardshift diff`", "", fence(inspect.cleandoc(package.__doc__ or "")),
             ""]
    with _columns():
        parsers = subcommands()
        for name in ("plan", "diff"):
            if name in parsers:
                lines += [f"## `shardshift {name}`", "", fence(parsers[name].format_help(), "text")]
    lines += ["## Modules", ""]
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        lines += [f"### `shardshift.planner.{info.name}`", "", inspect.cleandoc(module.__doc__ or ""), ""]
    return "\n".join(lines)


def options() -> str:
    from shardshift import config

    lines = ["# Configuration options", "", inspect.cleandoc(config.__doc__ or ""), "",
             "| Option | Expects |", "|---|---|"]
    for name, (_attribute, convert) in config.OPTIONS.items():
        lines.append(f"| `{name}` | {cell(_expects(convert) or inspect.getdoc(convert) or '')} |")
    return "\n".join(lines) + "\n"


def _expects(convert) -> str:
    """What a converter accepts, from the message it raises on a value of the wrong kind."""
    from shardshift.config import ConfigError

    try:
        convert(object(), "the option")
    except ConfigError as error:
        return str(error).replace("the option must be", "").split(", not ")[0].strip()
    except Exception:  # noqa: BLE001 - a converter that fails another way says nothing usable
        return ""
    return ""
