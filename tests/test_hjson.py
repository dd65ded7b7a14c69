"""shardshift reads a ds_config as DeepSpeed's own loader does (issue 11).

DeepSpeed opens a config path with `hjson.load(f, object_pairs_hook=dict_raise_error_on_duplicate_keys)`
(deepspeed/runtime/config.py). `shardshift.jsonc.parse_jsonc` must give the same values for every
text, or both must fail: for every fixture and every file of ../shared/corpus/deepspeed, and for
random JSON and hjson texts (hypothesis). Values are compared with their types (hjson makes `5e8`
an int), and duplicate keys are kept on both sides (shardshift reports them as SS002; DeepSpeed's
hook raises on them, which is a separate check).

Also here: the rule SS004 (hjson-only syntax) through the real CLI, templates with unquoted
placeholders getting their other findings, deep nesting refused cleanly, and "did you mean"
bounded per file (counted, never timed).
"""

from __future__ import annotations

import json
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shardshift.jsonc import MAX_DEPTH, ParseError, parse_jsonc
from shardshift.rules import base

from conftest import FIXTURES, check_json, corpus_files
from rule_cases import findings_with_code, marker_position

hjson = pytest.importorskip("hjson", reason="hjson (DeepSpeed's config loader) is not installed")

RULES = FIXTURES / "deepspeed" / "rules"
HJSON = FIXTURES / "deepspeed" / "hjson"


# --- the comparison ------------------------------------------------------------------------


class _Pairs(list):
    """An object as hjson decoded it: its (key, value) pairs, duplicates kept."""


def _hjson(text: str):
    """hjson's values, typed: objects as lists of pairs, scalars as (type name, value)."""

    def typed(value):
        if isinstance(value, _Pairs):
            return ("object", [(k, typed(v)) for k, v in value])
        if isinstance(value, dict):  # an empty or comment-only text: hjson returns {} without the hook
            return ("object", [(k, typed(v)) for k, v in value.items()])
        if isinstance(value, list):
            return ("array", [typed(v) for v in value])
        return (type(value).__name__, value)

    return typed(hjson.loads(text, object_pairs_hook=_Pairs))


def _ours(text: str):
    def typed(node):
        if node.kind == "object":
            return ("object", [(m.key, typed(m.value)) for m in node.members])
        if node.kind == "array":
            return ("array", [typed(e) for e in node.elements])
        value = node.hjson_value()
        return (type(value).__name__, value)

    return typed(parse_jsonc(text))


def assert_same_as_hjson(text: str) -> None:
    try:
        expected, refused = _hjson(text), None
    except Exception as error:  # noqa: BLE001 - HjsonDecodeError, and the IndexError/OverflowError hjson lets out
        expected, refused = None, error
    try:
        ours, failed = _ours(text), None
    except ParseError as error:
        ours, failed = None, error
    if refused is not None or failed is not None:
        assert refused is not None and failed is not None, (
            f"hjson: {refused!r}, shardshift: {failed and (failed.message, failed.line, failed.column)!r}; "
            f"text {text[:300]!r}")
        assert failed.line >= 1 and failed.column >= 1
        return
    assert ours == expected, f"text {text[:300]!r}"


def _ds_config_like(path: Path) -> bool:
    return path.suffix in (".json", ".jsonc", ".hjson", ".conf")


FILES = sorted(p for p in FIXTURES.rglob("*") if p.is_file() and _ds_config_like(p))
CORPUS = corpus_files("deepspeed")


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")  # DeepSpeed: open(path, "r"), universal newlines
    except UnicodeDecodeError:
        pytest.skip("input: not UTF-8 text, which neither loader reads")


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(FIXTURES)) for p in FILES])
def test_every_fixture_reads_to_hjsons_values(path):
    assert_same_as_hjson(_text(path))


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_every_corpus_file_reads_to_hjsons_values(path):
    assert_same_as_hjson(_text(path))


def test_the_corpus_is_compared():
    if not CORPUS:
        pytest.skip("../shared/corpus/deepspeed is not present")
    assert len(CORPUS) > 100


# Each: a text, and what hjson (and so shardshift) makes of it; None = both refuse it.
FORMS = [
    ('{"a": 5e8, "b": 1.0, "c": 1.5, "d": 1e10}', {"a": 500000000, "b": 1, "c": 1.5, "d": 1e10}),
    ('{"train_batch_size": CONFIG_BATCH_SIZE\n}', {"train_batch_size": "CONFIG_BATCH_SIZE"}),
    ('{"train_batch_size": CONFIG_BATCH_SIZE,\n}', {"train_batch_size": "CONFIG_BATCH_SIZE,"}),
    ('{"a": 1, }', {"a": 1}),
    ('{"a": 1\n"b": 2}', {"a": 1, "b": 2}),
    ('{a: 1, b: two words # inside a quoteless string: text\n}', {"a": 1, "b": "two words # inside a quoteless string: text"}),
    ('{a: 1 # after a number: a comment\n}', {"a": 1}),
    ("{a: 'x', 'b': \"y\"}", {"a": "x", "b": "y"}),
    ("a: 1\nb: [1\n2]\n", {"a": 1, "b": [1, 2]}),
    ("{\n  a:\n    '''\n    one\n      two\n    '''\n}", {"a": "one\n  two"}),
    ("", {}),
    ("// only a comment\n", {}),
    ('{"a": Infinity\n}', {"a": "Infinity"}),  # json.load: the float (test_ss004_bare_infinity_...)
    ('{"a": -Infinity,\n"b": NaN\n}', {"a": "-Infinity,", "b": "NaN"}),
    ('{"a": 1 "b": 2}', None),  # a quoteless value runs to the end of the line
    ("{a: {b: c}}", None),  # ... taking the closing braces with it
    ('{"a": 1,, "b": 2}', None),
    ("{a b: 1}", None),
    ('{"a": 1e400}', None),  # hjson: OverflowError
    ('{"a": 1} x', None),
    ("/* never closed", None),
    ('{"a": 1', None),
    ('{"a": "\\q"}', None),
]


@pytest.mark.parametrize("text,expected", FORMS, ids=[repr(t[:30]) for t, _ in FORMS])
def test_hjson_forms(text, expected):
    assert_same_as_hjson(text)
    if expected is None:
        with pytest.raises(ParseError):
            parse_jsonc(text)
    else:
        assert parse_jsonc(text).to_hjson() == expected


def test_values_keep_json_load_types_and_say_hjsons():
    """`Node.value` is json.load's reading (what the Hugging Face integration hands DeepSpeed and the
    rules judge); `hjson_value()` is DeepSpeed's own loader's."""
    root = parse_jsonc('{"a": 5e8, "b": 1.0, "c": 2}')
    assert root.to_python() == json.loads('{"a": 5e8, "b": 1.0, "c": 2}')
    assert [type(m.value.value) for m in root.members] == [float, float, int]
    assert [type(m.value.hjson_value()) for m in root.members] == [int, int, int]


def test_positions_of_hjson_forms():
    root = parse_jsonc('{\n  stage: 2\n  "x": CONFIG_X,\n  \'y\': [1\n    2]\n}')
    stage, x, y = root.members
    assert (stage.key, stage.line, stage.column, stage.value.line, stage.value.column) == ("stage", 2, 3, 2, 10)
    assert (x.value.value, x.value.raw, x.value.line, x.value.column) == ("CONFIG_X,", "CONFIG_X,", 3, 8)
    assert (y.line, y.column, y.value.elements[1].line, y.value.elements[1].column) == (4, 3, 5, 5)
    assert [p.pointer for p in root.walk()] == ["", "/stage", "/x", "/y", "/y/0", "/y/1"]
    # "CONFIG_X," takes its comma (the value runs to the end of the line): hjson sees none after it,
    # but the author wrote one, so that is not reported as a missing comma
    assert [form for form, _, _ in root.hjson_forms] == ["quoteless-key", "missing-comma", "quoteless-value",
                                                        "single-quoted", "missing-comma"]


# --- random texts --------------------------------------------------------------------------

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SCALARS = (st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
           | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=10))
VALUES = st.recursive(SCALARS, lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4),
                      max_leaves=15)


@FUZZ
@given(value=VALUES, indent=st.sampled_from([None, 0, 2, "\t"]))
def test_random_json_reads_as_hjson_and_json_load_read_it(value, indent):
    text = json.dumps(value, indent=indent)
    assert_same_as_hjson(text)
    assert parse_jsonc(text).to_python() == json.loads(text)


@FUZZ
@given(value=VALUES)
def test_random_hjson_from_hjsons_own_writer(value):
    """hjson.dumps writes quoteless keys and strings, no commas, ''' strings: the real dialect."""
    assert_same_as_hjson(hjson.dumps(value))
    assert_same_as_hjson(hjson.dumps(value, indent=4))


WORDS = st.text(alphabet=string.ascii_letters + "_", min_size=1, max_size=8)
PIECES = st.sampled_from(["{", "}", "[", "]", ",", ":", " ", "\n", "\t", "\r\n", '"', "'", "'''", "#", "//", "/*",
                          "*/", "\\", "1", "-", "5e8", "1.0", "true", "null", "\u00e9", "\u0661"]) | WORDS


@FUZZ
@given(pieces=st.lists(PIECES, max_size=40))
def test_random_hjson_like_text(pieces):
    """Random texts of hjson's significant characters: the same values as hjson, or both refuse."""
    assert_same_as_hjson("".join(pieces))


@FUZZ
@given(pieces=st.lists(PIECES, max_size=25))
def test_random_object_bodies(pieces):
    assert_same_as_hjson('{"a": ' + "".join(pieces) + "\n}")
    assert_same_as_hjson("{\n  key: " + "".join(pieces) + "\n  other: 1\n}")


# --- SS004 through the real command line --------------------------------------------------

# (fixture, marker of the first hjson-only form, occurrence, how many forms, the form's words)
SS004_CASES = [
    ("SS004/bad.json", "stage", 1, 2, "a key without quotes"),
    ("SS004/bad_template.json", "CONFIG_BATCH_SIZE", 1, 1, "a string value without quotes"),
    ("SS004/bad_single_quotes.json", "'AdamW'", 1, 1, "a single-quoted string"),
]


@pytest.mark.parametrize("fixture,marker,occurrence,count,words", SS004_CASES, ids=[c[0] for c in SS004_CASES])
def test_ss004_bad_fixture(fixture, marker, occurrence, count, words):
    path = RULES / fixture
    status, output = check_json(str(path))
    found = findings_with_code(output, "SS004")
    assert len(found) == 1, output["findings"]
    finding = found[0]
    line, column = marker_position(path, marker, occurrence)
    # checked alone, nobody is known to open it: whether json.load refuses it is unknown context
    assert (finding["severity"], finding["pointer"], finding["line"], finding["column"], finding["fix"]) == (
        "info", None, line, column, None)
    assert finding["unknown_context"]["kind"] == "consumer"
    assert finding["file"].endswith(fixture)
    assert words in finding["message"] and "json.load" in finding["message"]
    assert (f"{count} such places" if count > 1 else "the only such place") in finding["message"]
    assert not findings_with_code(output, "SS001")


def test_ss004_good_fixture_comments_and_trailing_commas_are_not_reported():
    status, output = check_json("--world-size", "8", str(RULES / "SS004" / "good.json"))
    assert findings_with_code(output, "SS004") == []
    assert [f for f in output["findings"] if f["severity"] == "error"] == []


def test_template_gets_its_real_findings_too():
    """An unquoted placeholder is read as hjson reads it (a string): the file gets SS004 and what
    DeepSpeed's own validation rejects in it (a string batch size, a removed section)."""
    path = HJSON / "template_removed_sections.json"
    status, output = check_json(str(path))
    codes = {(f["code"], f["pointer"]) for f in output["findings"]}
    assert ("SS004", None) in codes
    assert ("DS102", "/train_batch_size") in codes
    assert ("DS101", "/curriculum_learning") in codes
    assert not findings_with_code(output, "SS001")
    assert status == 1


def test_ss004_is_an_error_where_the_consumer_opens_the_file_with_json_load():
    """The Trainer (TrainingArguments(deepspeed=...)) opens the ds_config with json.load: the
    hjson-only key always stops it (an error, issue 33), and the finding names the script as the
    related place."""
    folder = RULES / "SS004" / "trainer"
    status, output = check_json(str(folder))
    (finding,) = findings_with_code(output, "SS004")
    assert finding["severity"] == "error" and "unknown_context" not in finding
    assert finding["related"][0]["file"].endswith("train.py") and "json.load" in finding["related"][0]["message"]
    assert status == 1


def test_hjson_file_without_braces_is_found_and_checked():
    status, output = check_json(str(HJSON / "braceless.hjson"))
    assert [f["format"] for f in output["files"]] == ["deepspeed"]
    assert [f["code"] for f in output["findings"] if f["code"].startswith("SS")] == ["SS004"]


def test_ss001_stays_for_what_hjson_cannot_load():
    status, output = check_json(str(RULES / "SS001" / "bad.json"))
    assert [f["code"] for f in output["findings"]] == ["SS001"]
    with pytest.raises(Exception):
        hjson.loads((RULES / "SS001" / "bad.json").read_text())


# --- hostile input: bounded work ----------------------------------------------------------


@pytest.mark.parametrize("opening", ["[", '{"a": '])
def test_deep_nesting_is_a_clean_parse_error(opening, tmp_path):
    closing = "]" if opening == "[" else "}"
    text = opening * 10_000 + "1" + closing * 10_000
    with pytest.raises(ParseError, match="nested more than"):
        parse_jsonc(text)
    parse_jsonc(opening * MAX_DEPTH + "1" + closing * MAX_DEPTH)  # as deep as allowed still reads
    path = tmp_path / "ds_config.json"
    path.write_text(text)
    status, output = check_json(str(path))
    assert status == 1 and [f["code"] for f in output["findings"]] == ["SS001"]


def test_did_you_mean_is_bounded_per_file(tmp_path):
    """A ds_config with 800 unknown keys (below the per-rule limit of listed findings): fuzzy
    suggestions for the first SUGGESTION_LIMIT only, each compared with the few known keys of a
    similar length; the rest say none was computed."""
    keys = [f"k{i:05d}xyz" for i in range(800)]
    text = json.dumps({"train_batch_size": 8, "zero_optimisation": {}, **{k: 1 for k in keys}})
    path = tmp_path / "ds_config.json"
    path.write_text(text)
    from shardshift.check import run_check
    from shardshift.formats.deepspeed.keys import children_of
    from shardshift.rules.base import Context

    before = base.COMPARISONS[0]
    findings = [f for f in run_check([str(path)], Context()).findings if f.code == "DS101"]
    compared = base.COMPARISONS[0] - before
    assert len(findings) == 801
    assert compared <= base.SUGGESTION_LIMIT * 2 * len(children_of("")), compared
    typo = next(f for f in findings if f.pointer == "/zero_optimisation")
    assert typo.fix == "zero_optimization"  # the first unknown key still gets its suggestion
    skipped = [f for f in findings if "no spelling suggestion computed" in f.message]
    assert len(skipped) == 801 - base.SUGGESTION_LIMIT


def test_suggestions_match_the_unbounded_functions():
    known = ["zero_optimization", "gradient_clipping", "train_batch_size", "fp16", "bf16", "optimizer", "steps_per_print"]
    for word in ["zero_optimisation", "gradient_clippping", "Train-Batch-Size", "fp61", "optimiser", "xyz", "bf16"]:
        assert base.Suggestions().lookup(word, known) == (base.clear_match(word, known),
                                                          base.clear_match(word, known) or base.did_you_mean(word, known))


def test_member_lookup_is_indexed():
    """Finding each of n keys of an object is a dictionary look-up (positions of 200,000 findings
    were quadratic before)."""
    from shardshift.source import find_member

    root = parse_jsonc(json.dumps({f"k{i}": i for i in range(1000)})[:-1] + ', "k5": "last"}')
    assert find_member(root, "/k5").value.value == "last"  # the last duplicate, as json.load keeps
    assert root._index is not None and len(root._index) == 1000


# --- what SS004's message says, confirmed by the frameworks' own loaders -------------------


@pytest.mark.oracle
def test_ss004_message_is_what_the_loaders_do():
    """SS004 says: DeepSpeed's own loader reads the file, json.load (the Hugging Face Trainer and
    Accelerate: their HfDeepSpeedConfig opens a ds_config path with json.load) refuses it. Run
    DeepSpeed's loader (hjson with DeepSpeed's duplicate-key hook, as DeepSpeedConfig(path) calls
    it) and transformers' HfDeepSpeedConfig on every bad fixture and the hjson fixtures."""
    import oracles

    try:
        oracles.deepspeed_module()
        from transformers.integrations.deepspeed import HfDeepSpeedConfig
    except ImportError as error:
        pytest.skip(f"DeepSpeed or transformers is not installed: {error}")
    from shardshift.formats import deepspeed

    paths = sorted((RULES / "SS004").glob("bad*.json")) + sorted(HJSON.glob("*"))
    assert len(paths) >= 5
    for path in paths:
        text = path.read_text(encoding="utf-8")
        assert deepspeed.read(text, str(path)).root.hjson_forms, path  # SS004 fires on it
        loaded = oracles.load_file(path)  # DeepSpeed's loader: reads it
        assert loaded == json.loads(json.dumps(parse_jsonc(text).to_hjson())), path
        with pytest.raises(ValueError):  # JSONDecodeError
            HfDeepSpeedConfig(str(path))


def test_ss004_bare_infinity_is_an_info_that_says_what_each_loader_reads(tmp_path):
    """A bare NaN/Infinity is no form json.load refuses: transformers' HfDeepSpeedConfig reads the float,
    DeepSpeed's own loader the string. SS004 says that (an info), not that json.load refuses the file."""
    import oracles

    try:
        oracles.deepspeed_module()
        from transformers.integrations.deepspeed import HfDeepSpeedConfig
    except ImportError as error:
        pytest.skip(f"DeepSpeed or transformers is not installed: {error}")
    from shardshift.formats import deepspeed

    path = tmp_path / "ds_config.json"
    path.write_text('{\n  "train_micro_batch_size_per_gpu": 1,\n  "gradient_clipping": Infinity\n}\n', encoding="utf-8")
    assert HfDeepSpeedConfig(str(path)).config["gradient_clipping"] == float("inf")
    assert oracles.load_file(path)["gradient_clipping"] == "Infinity"
    assert [form for form, _, _ in deepspeed.read(path.read_text(), str(path)).root.hjson_forms] == ["non-finite"]
    _, output = check_json("--select", "SS004", "--isolated", str(path))
    (finding,) = output["findings"]
    assert finding["severity"] == "info" and "reads it as a float" in finding["message"]
    assert "refuses" not in finding["message"]


@pytest.mark.parametrize("path", sorted(HJSON.glob("*")) + sorted((RULES / "SS004").glob("*.json")),
                         ids=lambda p: p.name)
def test_writer_emits_strict_json_from_hjson(path):
    """A ds_config read from hjson is written back as strict JSON that json.load reads, with the
    values hjson gave (the Plan's fields and the passthrough alike)."""
    from shardshift.formats import deepspeed

    document = deepspeed.read(path.read_text(encoding="utf-8"), str(path))
    assert document.plan is not None
    written = deepspeed.convert(document).text
    again = json.loads(written)
    assert deepspeed.read(written, "<written>").plan == document.plan
    assert isinstance(again, dict)
