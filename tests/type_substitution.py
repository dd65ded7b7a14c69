"""Type substitution: a real file with the value at one place replaced by a value of another type.

Shared by tests/test_type_substitution.py (bounded, in CI) and by a full sweep run by hand
(`python tests/type_substitution.py [--limit N] [FOLDER...]`: every key of every corpus file and
fixture × every value, check and convert; prints each traceback it meets).

A *case* is one file of one *shape*:

- structured documents (JSON, HJSON, YAML, TOML): the data is loaded with the format's own
  library, the value at a key path (a mapping key, a list index, a whole section, the root) is
  replaced, and the data is written back in the file's format;
- argument lists and shell scripts (Megatron `.args`, launch scripts): a value word (after a
  `--flag`, after `--flag=`, or of `VAR=value`) is replaced by a word of another shape;
- Python (FSDP2 code, training scripts): a literal is replaced by a literal of another type.

`exercise` writes the substituted file beside copies of its neighbours (a fixture's folder keeps
its setup), runs `shardshift.check` and `shardshift.convert` to every target in process, and lets
any exception other than ShardshiftError (a clear refusal) escape: an escape is the failure.
"""

from __future__ import annotations

import ast
import copy
import itertools
import json
import math
import re
import shutil
import signal
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
CORPUS = ROOT.parent / "shared" / "corpus"

HUGE = 2**64 + 1
# Values of every YAML/JSON/TOML type: null, bools, ints (small, negative, beyond 64 bits), floats
# (fractions, negative zero, NaN and the infinities where the format has them), strings (empty, the
# magic "auto", words that look like other types, control and bidi characters), empty and nested
# containers.
VALUES: list[Any] = [
    None, True, False, 0, 1, -1, HUGE, 10**40, 0.5, -0.0, 1e300, math.nan, math.inf, -math.inf,
    "", "auto", "x", "1e5", "true", "null", " 8 ", "none", "a\u202eb\x00",
    [], {}, [1, "a", None], {"a": 1}, {"k": {"n": [None, {}]}}, [[]], [{}], [[1, 2], {"b": [3]}],
]


def has_none(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, list):
        return any(has_none(v) for v in value)
    if isinstance(value, dict):
        return any(has_none(v) for v in value.values())
    return False


def has_special_float(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, list):
        return any(has_special_float(v) for v in value)
    if isinstance(value, dict):
        return any(has_special_float(v) for v in value.values())
    return False


# --- structured formats: load, dump --------------------------------------------------------------

def load_structured(kind: str, text: str) -> Any:
    """The document's data, or raise ValueError when this loader cannot read it (the file is skipped)."""
    if kind in ("json", "hjson"):
        try:
            return json.loads(text)
        except ValueError:
            import hjson

            try:
                return _plain(hjson.loads(text))
            except Exception as error:  # hjson raises its own errors
                raise ValueError(str(error)) from None
    if kind == "yaml":
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as error:
            raise ValueError(str(error)) from None
    if kind == "toml":
        import tomllib

        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            raise ValueError(str(error)) from None
    raise AssertionError(kind)


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def expressible(kind: str, value: Any) -> bool:
    """Whether the format has a spelling for `value` (TOML has no null; JSON writes NaN as Python's
    json does, which hjson and DeepSpeed's loader accept, so JSON keeps it)."""
    return not (kind == "toml" and has_none(value))


def dump_structured(kind: str, data: Any) -> str:
    if kind == "json":
        return json.dumps(data, indent=2, ensure_ascii=False)
    if kind == "hjson":
        import hjson

        try:
            return hjson.dumps(data, ensure_ascii=False)
        except (ValueError, TypeError):  # hjson has no spelling for NaN / infinity: write JSON, which hjson reads
            return json.dumps(data, indent=2, ensure_ascii=False)
    if kind == "yaml":
        return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False)
    if kind == "toml":
        if not isinstance(data, dict):
            raise ValueError("a TOML document is a table")
        lines: list[str] = []
        _toml_table(data, [], lines)
        return "\n".join(lines) + "\n"
    raise AssertionError(kind)


def _toml_key(key: str) -> str:
    from shardshift.formats.torchtitan.writer import _key

    return _key(key)


def _toml_value(value: Any) -> str:
    """The torchtitan writer's spelling of a TOML value (the substitutions are the test's; how a
    value is spelled is not what it tests)."""
    from shardshift.formats.torchtitan.writer import _value

    try:
        return _value(value)
    except TypeError:
        raise ValueError(f"TOML has no spelling for {value!r}") from None


def _toml_table(table: dict, path: list[str], lines: list[str]) -> None:
    tables = {k: v for k, v in table.items() if isinstance(v, dict)}
    arrays = {k: v for k, v in table.items()
              if isinstance(v, list) and v and all(isinstance(i, dict) for i in v)}
    for key, value in table.items():
        if key not in tables and key not in arrays:
            lines.append(f"{_toml_key(key)} = {_toml_value(value)}")
    for key, value in tables.items():
        lines.extend(["", "[" + ".".join(_toml_key(k) for k in [*path, key]) + "]"])
        _toml_table(value, [*path, key], lines)
    for key, items in arrays.items():
        for item in items:
            lines.extend(["", "[[" + ".".join(_toml_key(k) for k in [*path, key]) + "]]"])
            _toml_table(item, [*path, key], lines)


def key_paths(data: Any, most: int = 400) -> list[tuple]:
    """Every place in `data` that holds a value: the root, each mapping key, the first three items
    of each list (sections and lists included: a whole section replaced by a scalar is a case)."""
    out: list[tuple] = [()]

    def walk(value: Any, path: tuple) -> None:
        if len(out) >= most:
            return
        items = value.items() if isinstance(value, dict) else \
            enumerate(value[:3]) if isinstance(value, list) else ()
        for key, child in items:
            out.append((*path, key))
            walk(child, (*path, key))

    walk(data, ())
    return out[:most]


def replaced(data: Any, path: tuple, value: Any) -> Any:
    if not path:
        return copy.deepcopy(value)
    data = copy.deepcopy(data)
    parent = data
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = copy.deepcopy(value)
    return data


# --- argument lists and shell scripts: value words ----------------------------------------------

# Words of other shapes than the value they replace: numbers of every kind, words that spell other
# types in other languages, JSON and Python containers, empty and quoted words, expansions.
WORDS: list[str] = [
    "0", "-1", "1.5", "-0.0", "1e400", "-5e-3", "0x10", "nan", "inf", "-inf", str(HUGE), "9" * 60,
    "true", "False", "null", "None", "auto", "x", "''", '""', "'a b'", "[1,2]", "'[]'", "'{}'",
    "'{\"a\": 1}'", "'[[1], {\"b\": 2}]'", "$UNSET_SHARDSHIFT_VAR", "${UNSET_SHARDSHIFT_VAR:-}", "'*'",
]

_WORD = r"(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s\\;|&<>()#'\"]+)"
_FLAG_VALUE = re.compile(r"(?<![\w-])(--?[A-Za-z][\w.-]*)(=|[ \t]+)(?![-\\#|;&<>])(" + _WORD + ")")
_ASSIGNMENT = re.compile(r"^([ \t]*(?:export[ \t]+|local[ \t]+)?[A-Za-z_]\w*=)(" + _WORD + "?)", re.M)


def value_spans(text: str, most: int = 400) -> list[tuple[int, int]]:
    """(start, end) of every value word: the word after a `--flag` / `-f`, `--flag=word`, the
    right-hand side of `VAR=word`."""
    spans = {(m.start(3), m.end(3)) for m in _FLAG_VALUE.finditer(text)}
    spans |= {(m.start(2), m.end(2)) for m in _ASSIGNMENT.finditer(text)}
    return sorted(spans)[:most]


# --- Python: literals -----------------------------------------------------------------------------

LITERALS: list[str] = [
    "None", "True", "False", "0", "-1", str(HUGE), "0.5", "-0.0", "1e999", "-1e999", "float('nan')",
    "''", "'auto'", "'x'", "b'x'", "1j", "...", "[]", "{}", "()", "set()", "[1, 'a', None]",
    "{'a': 1}", "{'k': {'n': [None, {}]}}", "(1, 2)", "{1, 2}",
]


def literal_spans(text: str, most: int = 400) -> list[tuple[int, int]]:
    """(start, end) character offsets of every literal of a Python file (docstrings and f-string
    parts left out): what the reader reads as a value."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            skip.update(id(n) for n in ast.walk(node))
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
            skip.add(id(body[0].value))
    lines = text.splitlines(keepends=True)
    starts = list(itertools.accumulate((len(line) for line in lines), initial=0))

    def offset(line: int, column: int) -> int:  # ast columns count UTF-8 bytes
        source = lines[line - 1] if line - 1 < len(lines) else ""
        return starts[line - 1] + len(source.encode("utf-8")[:column].decode("utf-8", "replace"))

    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and id(node) not in skip and node.end_lineno is not None:
            out.append((offset(node.lineno, node.col_offset), offset(node.end_lineno, node.end_col_offset)))
    return sorted(set(out))[:most]


# --- cases ----------------------------------------------------------------------------------------

STRUCTURED = {".json": "json", ".hjson": "hjson", ".jsonc": "hjson", ".yaml": "yaml", ".yml": "yaml",
              ".toml": "toml"}


@dataclass(frozen=True)
class Case:
    """One real file: `file` (relative to `folder`, which is copied whole when `keep_folder`)."""

    folder: Path
    file: str
    keep_folder: bool = False

    @property
    def path(self) -> Path:
        return self.folder / self.file

    @property
    def shape(self) -> str:
        suffix = self.path.suffix.lower()
        if suffix in STRUCTURED:
            return STRUCTURED[suffix]
        return "python" if suffix == ".py" else "words"

    @property
    def name(self) -> str:
        try:
            return str(self.path.relative_to(ROOT.parent))
        except ValueError:
            return str(self.path)

    def text(self) -> str:
        return self.path.read_text(encoding="utf-8-sig", errors="replace")

    def places(self, most: int = 400) -> list:
        """Key paths (structured) or spans (words, Python) where a value can be substituted."""
        text = self.text()
        if self.shape == "python":
            return literal_spans(text, most)
        if self.shape == "words":
            return value_spans(text, most)
        try:
            return key_paths(load_structured(self.shape, text), most)
        except ValueError:
            return []

    def replacements(self) -> list:
        if self.shape == "python":
            return LITERALS
        if self.shape == "words":
            return WORDS
        return [v for v in VALUES if expressible(self.shape, v)]

    def substituted(self, places: list, value: Any) -> str | None:
        """The file's text with `value` at each of `places`; None when the format cannot say it."""
        return self.substituted_each({place: value for place in places})

    def substituted_each(self, assigned: dict) -> str | None:
        """The file's text with each place's value (place -> value)."""
        text = self.text()
        if self.shape in ("python", "words"):
            for (start, end), value in sorted(assigned.items(), reverse=True):
                text = text[:start] + value + text[end:]
            return text
        data = load_structured(self.shape, text)
        for path, value in assigned.items():
            try:
                data = replaced(data, path, value)
            except (KeyError, IndexError, TypeError):  # an earlier place replaced this one's parent
                continue
        try:
            return dump_structured(self.shape, data)
        except ValueError:
            return None


def exercise(case: Case, text: str, where: Path, *, world_size: int | None = None,
             targets: list[str] | None = None) -> None:
    """Write `text` as the case's file under `where` (with its folder's other files when the case
    keeps them), check it and convert it to each of `targets` (every target by default). Raises
    whatever escapes: a clean run returns."""
    from shardshift import api

    if case.keep_folder:
        if where.exists():
            shutil.rmtree(where)
        shutil.copytree(case.folder, where, symlinks=True)
    else:
        where.mkdir(parents=True, exist_ok=True)
    path = where / case.file
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    result = api.check(str(path), isolated=True, world_size=world_size)
    json.dumps(result.to_json())
    for finding in result.findings:
        assert finding.line >= 1 and finding.column >= 1, finding
    for to in api.targets() if targets is None else targets:
        try:
            migration = api.convert(str(path), to)
        except api.ShardshiftError:
            continue
        json.dumps(migration.to_json())
        assert isinstance(migration.text, str)


# --- where the cases come from --------------------------------------------------------------------

def corpus_cases(folder: str) -> list[Case]:
    directory = CORPUS / folder
    if not directory.is_dir():
        return []
    return [Case(directory, p.name) for p in sorted(directory.iterdir()) if p.is_file()
            and p.suffix.lower() in (*STRUCTURED, ".py", ".sh", ".args", ".slurm", ".txt")]


def small_folder(folder: Path, most: int = 30) -> bool:
    """Whether `folder` is a setup small enough to copy for every example (a launch script with its
    ds_config), not a tree of fixtures."""
    return sum(1 for _ in itertools.islice(folder.rglob("*"), most + 1)) <= most


def fixture_case(path: Path) -> Case:
    """A fixture file, with its folder's other files when the folder is a small setup."""
    return Case(path.parent, path.name, keep_folder=small_folder(path.parent))


def fixture_cases(*folders: str) -> list[Case]:
    """Files of fixture folders (each with its folder kept when that is a small setup)."""
    out = []
    for folder in folders:
        for path in sorted((FIXTURES / folder).rglob("*")):
            if path.is_file() and path.suffix.lower() in (*STRUCTURED, ".py", ".sh", ".args"):
                out.append(fixture_case(path))
    return out


def sweep(cases: list[Case], where: Path, most: int = 400,
          rotate: bool = False, alarm: int = 0) -> Iterator[tuple[Case, Any, Any, BaseException]]:
    """Every place × every value of every case (check, and convert to every target or, with
    `rotate`, to one target per example in turn); yields each escape (with `alarm`, an example that
    takes longer than that many seconds escapes as TimeoutError)."""
    if alarm:
        def timeout(*_):
            raise TimeoutError(f"an example took more than {alarm} s")

        signal.signal(signal.SIGALRM, timeout)
    from shardshift import api

    counter = itertools.count()
    every = api.targets()
    for case in cases:
        for place in case.places(most):
            for value in case.replacements():
                text = case.substituted([place], value)
                if text is None:
                    continue
                n = next(counter)
                if alarm:
                    signal.alarm(alarm)
                try:
                    exercise(case, text, where / f"s{n % 4}", world_size=(None, 8)[n % 2],
                             targets=[every[n % len(every)]] if rotate else None)
                except Exception as error:  # noqa: BLE001 - reported, the sweep goes on
                    yield case, place, value, error
                finally:
                    if alarm:
                        signal.alarm(0)


if __name__ == "__main__":  # the full sweep, by hand
    import argparse
    import tempfile
    import traceback

    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=int, default=400, help="places per file")
    parser.add_argument("--every", type=int, default=1, help="every Nth file")
    parser.add_argument("--rotate", action="store_true", help="one convert target per example")
    parser.add_argument("folders", nargs="*", help="corpus folders or fixtures/<folder>")
    arguments = parser.parse_args()
    chosen: list[Case] = []
    for name in arguments.folders:
        chosen += fixture_cases(name.removeprefix("fixtures/")) if name.startswith("fixtures/") \
            else corpus_cases(name)
    seen: set[str] = set()
    with tempfile.TemporaryDirectory() as tmp:
        found = sweep(chosen[::arguments.every], Path(tmp), arguments.limit, arguments.rotate, alarm=30)
        for case, place, value, error in found:
            where = "".join(traceback.format_exception(error)[-7:])
            key = f"{type(error).__name__}: {traceback.extract_tb(error.__traceback__)[-1][:3]}"
            if key in seen:
                continue
            seen.add(key)
            print(f"== {case.name} at {place!r} = {value!r}\n{where}", flush=True)
    sys.exit(1 if seen else 0)
