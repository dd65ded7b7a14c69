"""DeepSpeed 0.19.8's own config parser as the oracle for shardshift's ds_config support.

Issue 2 (reader/writer): every ds_config that DeepSpeed accepts (fixtures, and the shared corpus
when present), after Hugging Face Trainer-style "auto" filling at the first plausible
data-parallel world size, is read with `shardshift.formats.deepspeed.read`, written back with
`write`, and the written text must be accepted too and resolve the same values (batch sizes,
ZeRO stage and buckets, offload, precision and loss scaling, optimizer, scheduler, clipping,
communication dtype, every other ZeRO field). The written text is loaded both ways a ds_config
is loaded in practice: `json.load` (Transformers / Accelerate) and DeepSpeed's own file loader.

Issue 3 (checker): when DeepSpeed rejects a config at every plausible world size (powers of two
to 64 and the sizes its batch values imply), `shardshift check` must report at least one error.
A file is judged on the values DeepSpeed's own loader (hjson) gives it: one that is not JSON once
comments and trailing commas are removed (missing commas, unquoted words such as a template's
`CONFIG_BATCH_SIZE`) is read by shardshift as hjson reads it, gets the hjson-only syntax warning
(SS004, tests/test_hjson.py) and counts as rejected only when DeepSpeed rejects those values.
A file hjson cannot load at all counts as rejected. A lone "auto" is not an error by itself.

DeepSpeed is imported once per module (about 3.5 s); the rest runs in a few seconds. Known gaps
are listed in KNOWN_MISSES / ROUND_TRIP_GAPS as strict xfails: fixing one makes its test XPASS
and fail, so the entry gets removed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from shardshift.check import run_check
from shardshift.formats.deepspeed import read, write
from shardshift.rules.base import Context
from shardshift.source import value_at

import oracles
from conftest import CORPUS, FIXTURES, corpus_files

pytestmark = pytest.mark.oracle

FIXTURE_FILES = sorted((FIXTURES / "deepspeed").rglob("*.json"))
CORPUS_FILES = corpus_files("deepspeed", "*.json")

# Files DeepSpeed rejects at every world size while shardshift reports no error, by test id:
# the DeepSpeed assertion that fires, for the rule authors who will close the gap.
KNOWN_MISSES: dict[str, str] = {}

# Round trips that change what DeepSpeed resolves, by test id, with the cause (none known).
ROUND_TRIP_GAPS: dict[str, str] = {}


def _label(path: Path) -> str:
    return str(path.relative_to(CORPUS.parent if path.is_relative_to(CORPUS) else FIXTURES.parent))


def _params(known: dict[str, str]) -> list:
    params = []
    for path in (*FIXTURE_FILES, *CORPUS_FILES):
        reason = known.get(_label(path))
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        params.append(pytest.param(path, id=_label(path), marks=marks))
    return params


# --- what DeepSpeed makes of each file (computed once per file) ------------------------------


@dataclass
class Case:
    path: Path
    text: str | None
    loaded: Any = None  # DeepSpeed's file loader (hjson, duplicate keys rejected)
    load_error: str | None = None
    world: int | None = None  # first plausible world size where DeepSpeed accepts it
    rejected_everywhere: bool = False
    errors: list[str] = field(default_factory=list)
    hjson_only: bool = False  # hjson (DeepSpeed) loads it, json.load (Transformers, Accelerate) does not

    @property
    def name(self) -> str:
        return _label(self.path)


class Oracle:
    def __init__(self) -> None:
        self.deepspeed = oracles.deepspeed_module()
        self.cases: dict[Path, Case] = {}
        self.checked: dict[Path, dict] = {}

    def case(self, path: Path) -> Case:
        if path not in self.cases:
            self.cases[path] = self._classify(path)
        return self.cases[path]

    def check(self, path: Path) -> dict:
        """`shardshift check --format json FILE --deepspeed-version 0.19.8`, in-process: judged by the
        release the oracle runs (with no pin, a key only later releases refuse is an info)."""
        if path not in self.checked:
            self.checked[path] = run_check([str(path)], oracle_context()).to_json()
        return self.checked[path]

    @staticmethod
    def _classify(path: Path) -> Case:
        try:
            text = path.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError) as error:
            return Case(path, None, load_error=str(error), rejected_everywhere=True, errors=[str(error)])
        case = Case(path, text)
        try:
            case.loaded = oracles.load_text(text)
        except Exception as error:  # noqa: BLE001 - hjson syntax errors and duplicate keys alike
            case.load_error = f"{type(error).__name__}: {error}"
            case.rejected_everywhere, case.errors = True, [f"DeepSpeed cannot load the file: {case.load_error}"]
            return case
        # DeepSpeed's hjson takes missing commas and unquoted words, json.load does not: shardshift
        # warns about those (SS004) and judges the values DeepSpeed gets, as for any other file.
        case.hjson_only = not oracles.is_json_with_comments(text)
        case.world, _, case.errors = oracles.first_acceptance(case.loaded)
        if case.world is None:
            case.rejected_everywhere, case.errors = oracles.rejected_everywhere(case.loaded)
        return case


@pytest.fixture(scope="module")
def oracle() -> Oracle:
    return Oracle()


def _json_load(text: str, fallback: Any) -> Any:
    """The file as `json.load` reads it (what Transformers and Accelerate hand to DeepSpeed);
    files with comments fall back to shardshift's reading, which has json.load semantics."""
    try:
        return json.loads(text)
    except ValueError:
        return fallback


def _errors(result: dict) -> list[dict]:
    return [f for f in result["findings"] if f["severity"] == "error"]


# --- issue 2: read -> write keeps what DeepSpeed resolves ------------------------------------


@pytest.mark.parametrize("path", _params(ROUND_TRIP_GAPS))
def test_round_trip_resolves_the_same_in_deepspeed(path: Path, oracle: Oracle, tmp_path: Path) -> None:
    case = oracle.case(path)
    if case.text is None:
        return  # not text: nothing to read
    document = read(case.text, str(path))
    if case.world is None:
        # DeepSpeed refuses the original at 1-16 ranks: there are no values to compare, but the
        # round trip must not make it acceptable either (it must not change what DeepSpeed sees).
        if document.plan is not None and isinstance(case.loaded, dict):
            emitted = json.loads(write(document.plan))
            world, _, _ = oracles.first_acceptance(emitted)
            assert world is None, (f"DeepSpeed rejects {case.name} ({case.errors[0]}) but accepts the config "
                                   f"shardshift writes back from it, at world size {world}")
        return

    world = case.world
    assert document.plan is not None, f"DeepSpeed accepts {case.name} but shardshift cannot read it: {document.syntax}"
    text = write(document.plan)
    emitted_file = tmp_path / "ds_config.json"
    emitted_file.write_text(text, encoding="utf-8")
    routes = {
        "json.load": (_json_load(case.text, document.data), json.loads(text)),
        "DeepSpeed's hjson loader": (case.loaded, oracles.load_file(emitted_file)),
    }
    fill = oracles.fill_auto_like_trainer
    for route, (original, emitted) in routes.items():
        ok_before, error_before, before = oracles.deepspeed_accepts(fill(original, world), world)
        ok_after, error_after, after = oracles.deepspeed_accepts(fill(emitted, world), world)
        where = f"{case.name} read with {route} at world size {world}"
        assert ok_after == ok_before, (f"{where}: DeepSpeed {'accepts' if ok_before else 'rejects'} the original "
                                       f"but not the written config: {error_after or error_before}\n{text}")
        if before is None or after is None:
            assert error_after == error_before, f"{where}: {error_before!r} became {error_after!r}"
            continue
        changed = oracles.differences(before, after)
        assert not changed, f"{where}: DeepSpeed resolves different values after the round trip: {changed}\n{text}"
        kinds = oracles.int_kind_changes(before, after)
        assert not kinds, f"{where}: values DeepSpeed needs as ints changed kind: {kinds}\n{text}"

    if '"auto"' not in text and "sequence_parallel_size" not in case.loaded:
        # (DeepSpeed 0.19.8 looks for sequence_parallel_size in the *path string* when given a file)
        # Nothing to fill: hand the written file itself to DeepSpeed, as `deepspeed --deepspeed_config` does.
        ok, error, from_file = oracles.deepspeed_accepts(emitted_file, world)
        assert ok, f"DeepSpeed rejects the file written from {case.name}: {error}"
        if from_file is not None:
            _, _, expected = oracles.deepspeed_accepts(case.loaded, world)
            assert not oracles.differences(expected, from_file), oracles.differences(expected, from_file)


# --- issue 3: what DeepSpeed rejects, shardshift reports --------------------------------------


def oracle_context() -> Context:
    """A check context judging by DeepSpeed 0.19.8, the installed oracle (`--deepspeed-version`)."""
    from shardshift.context import Release

    return Context(deepspeed_version=(0, 19, 8),
                   release_overrides={"deepspeed": Release("deepspeed", (0, 19, 8), "--deepspeed-version", "0.19.8")})


@pytest.mark.parametrize("path", _params(KNOWN_MISSES))
def test_shardshift_reports_an_error_where_deepspeed_rejects(path: Path, oracle: Oracle, tmp_path: Path) -> None:
    case = oracle.case(path)
    result = oracle.check(path)
    errors = _errors(result)
    if case.rejected_everywhere:
        # a template's placeholders (`${zero_stage}`, `CONFIG_GBS` in ds_config_TEMPLATE.json) are filled in before
        # DeepSpeed reads the file: what it does with them as written is not established, and the info says so
        placeholders = [f for f in result["findings"] if any(
            p["premise"] == "role" and p["state"] == "unknown" and "template placeholder" in p["what"]
            for p in f.get("evidence", []))]
        assert errors or placeholders, (f"DeepSpeed 0.19.8 rejects {case.name} at every plausible world size "
                        f"({case.errors[0] if case.errors else '?'}) but `shardshift check` reports no error: "
                        f"{result['findings']}")
        return
    assert [f["format"] for f in result["files"]] == ["deepspeed"], \
        f"DeepSpeed accepts {case.name} but shardshift does not check it as a ds_config: {result['files']}"
    if '"auto"' not in (case.text or ""):
        return
    # A lone "auto" is not an error by itself: check the file alone, away from any script or
    # launcher config next to it that could show "auto" will not be filled in.
    alone = tmp_path / path.name
    alone.write_text(case.text or "", encoding="utf-8")
    data = _json_load(case.text or "", None)
    for finding in _errors(run_check([str(alone)], Context()).to_json()):
        if finding["pointer"]:
            assert value_at(data, finding["pointer"], None) != "auto", (
                f"{case.name}: a lone \"auto\" is not an error, but {finding['code']} reports {finding['pointer']}: "
                f"{finding['message']}")


def test_oracle_sees_both_verdicts(oracle: Oracle) -> None:
    """The oracle is not trivially accepting or rejecting: fixtures (and the corpus) hold both.
    Prints the counts and the converse cases (DeepSpeed accepts, shardshift reports an error)."""
    cases = [oracle.case(path) for path in (*FIXTURE_FILES, *CORPUS_FILES)]
    accepted = [c for c in cases if c.world is not None]
    rejected = [c for c in cases if c.rejected_everywhere]
    unloadable = [c for c in rejected if c.load_error]
    print(f"\nDeepSpeed {oracle.deepspeed.__version__}: {len(cases)} files, {len(accepted)} accepted at 1-16 ranks "
          f"(round-tripped and compared), {len(rejected)} rejected at every world size ({len(unloadable)} of them "
          f"not loadable as JSON with comments), {len(cases) - len(accepted) - len(rejected)} accepted only at "
          "other sizes")
    for case in accepted:
        for finding in _errors(oracle.check(case.path)):
            print(f"  accepted by DeepSpeed, error from shardshift: {case.name}: {finding['code']} "
                  f"{finding['pointer']}: {finding['message']}")
    assert accepted and rejected, "expected fixtures that DeepSpeed accepts and fixtures that it rejects"
