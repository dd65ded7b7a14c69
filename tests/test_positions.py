"""Findings carry the right line, column and JSON pointer, in JSON with comments too.

The fixtures in fixtures/deepspeed/positions/ put known mistakes at known places after //, # and
/* */ comments, trailing commas, tabs and non-ASCII text. Expected positions are not written
down: each row names a marker (the key as quoted in the file, its occurrence, and for a value
finding the value's first characters), and the test finds the marker in the fixture text.
Columns are 1-based and count characters (code points): a key finding points at the key's
opening quote, a value finding at the value's first character.
"""

from __future__ import annotations

import json

import pytest

from shardshift import formats
from shardshift.check import run_check
from shardshift.formats import deepspeed
from shardshift.rules.base import Context
from shardshift.source import find_member

from conftest import FIXTURES, check_json

POSITIONS = FIXTURES / "deepspeed" / "positions"

# (fixture, code, severity, pointer, kind, key marker, occurrence of the marker, value marker)
CASES = [
    ("block_comment_typo.json", "DS101", "error", "/zero_optimisation", "key", '"zero_optimisation"', 1, None),
    ("block_comment_typo.json", "DS101", "error", "/gradient_accumulaton_steps", "key",
     '"gradient_accumulaton_steps"', 1, None),
    ("line_comments_bucket.json", "DS102", "error", "/zero_optimization/reduce_bucket_size", "value",
     '"reduce_bucket_size"', 1, '"5e8"'),
    ("line_comments_bucket.json", "DS101", "error", "/zero_optimization/offload_optimizer/pin_memroy", "key",
     '"pin_memroy"', 1, None),
    ("duplicate_key.json", "SS002", "error", "/train_micro_batch_size_per_gpu", "key",
     '"train_micro_batch_size_per_gpu"', 2, None),
    ("duplicate_key.json", "SS002", "error", "/fp16/enabled", "key", '"enabled"', 2, None),
    # the parser stops at the second comma (where hjson, DeepSpeed's loader, stops too)
    ("syntax_error.json", "SS001", "error", None, "value", '"gradient_clipping"', 1, ", /*"),
    ("tabs_legacy_values.json", "DS102", "error", "/fp16", "value", '"fp16"', 1, "["),
    ("tabs_legacy_values.json", "DS320", "warning", "/zero_optimization/cpu_offload", "key", '"cpu_offload"', 1, None),
    ("tabs_legacy_values.json", "DS102", "warning", "/zero_optimization/overlap_comm", "value", '"overlap_comm"', 1,
     '"yes"'),
    ("unicode_columns.json", "DS101", "error", "/gradient_clippin", "key", '"gradient_clippin"', 1, None),
    ("pointer_escapes.json", "DS101", "error", "/zero_optimization/sub~1group~0size", "key", '"sub/group~size"', 1,
     None),
    ("pointer_escapes.json", "DS403", "error", "/optimizer/params/betas", "value", '"betas"', 1, "["),
]


def locate(text: str, marker: str, occurrence: int = 1, start: int = 0) -> tuple[int, int, int]:
    """(line, column, offset) of the `occurrence`-th `marker` at or after `start`; 1-based."""
    offset = start - 1
    for _ in range(occurrence):
        offset = text.index(marker, offset + 1)
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, column, offset


def expected_position(text: str, kind: str, marker: str, occurrence: int, value: str | None) -> tuple[int, int]:
    line, column, offset = locate(text, marker, occurrence)
    if kind == "value":
        line, column, _ = locate(text, value, 1, offset + len(marker))
    return line, column


def _by_file(result: dict) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {}
    for finding in result["findings"]:
        found.setdefault(finding["file"].replace("\\", "/").rsplit("/", 1)[-1], []).append(finding)
    return found


@pytest.fixture(scope="module")
def checked() -> dict[str, list[dict]]:
    """`shardshift check --format json` over the positions fixtures, once."""
    rc, result = check_json(str(POSITIONS))
    assert rc == 1
    assert {f["path"].replace("\\", "/").rsplit("/", 1)[-1] for f in result["files"]} == \
        {p.name for p in POSITIONS.glob("*.json")}, "every positions fixture is found and read"
    return _by_file(result)


def _variant_dir(tmp_path_factory, name: str, transform) -> dict[str, list[dict]]:
    directory = tmp_path_factory.mktemp(name)
    for path in POSITIONS.glob("*.json"):
        (directory / path.name).write_bytes(transform(path.read_bytes()))
    rc, result = check_json(str(directory))
    assert rc == 1
    return _by_file(result)


@pytest.fixture(scope="module")
def checked_crlf(tmp_path_factory):
    return _variant_dir(tmp_path_factory, "crlf", lambda data: data.replace(b"\n", b"\r\n"))


@pytest.fixture(scope="module")
def checked_bom(tmp_path_factory):
    return _variant_dir(tmp_path_factory, "bom", lambda data: b"\xef\xbb\xbf" + data)


def _case_id(case) -> str:
    return f"{case[0].removesuffix('.json')}-{case[1]}-{case[3] or 'syntax'}"


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_finding_position(checked, case):
    fixture, code, severity, pointer, kind, marker, occurrence, value = case
    text = (POSITIONS / fixture).read_text(encoding="utf-8")
    line, column = expected_position(text, kind, marker, occurrence, value)
    matches = [f for f in checked.get(fixture, []) if f["code"] == code and f["pointer"] == pointer]
    assert matches, f"no {code} at {pointer} in {fixture}: {checked.get(fixture)}"
    assert [(f["severity"], f["line"], f["column"]) for f in matches] == [(severity, line, column)]


def test_duplicate_key_names_the_first_line(checked):
    text = (POSITIONS / "duplicate_key.json").read_text(encoding="utf-8")
    for marker, pointer in (('"train_micro_batch_size_per_gpu"', "/train_micro_batch_size_per_gpu"),
                            ('"enabled"', "/fp16/enabled")):
        first_line = locate(text, marker, 1)[0]
        [finding] = [f for f in checked["duplicate_key.json"] if f["code"] == "SS002" and f["pointer"] == pointer]
        assert f"first at line {first_line}" in finding["message"]


@pytest.mark.parametrize("variant", ["checked_crlf", "checked_bom"])
def test_line_endings_and_bom_do_not_move_findings(request, checked, variant):
    """Windows line endings and a UTF-8 byte-order mark leave every line and column as they were."""
    other = request.getfixturevalue(variant)

    def key(findings):
        return sorted((f["code"], f["line"], f["column"], f["pointer"]) for f in findings)

    assert {n: key(fs) for n, fs in other.items()} == {n: key(fs) for n, fs in checked.items()}


# --- in process: every rule's positions agree with the parsed tree -----------------------------

def _deepspeed_fixtures():
    found = []
    for path in sorted(FIXTURES.rglob("*.json")):
        text = path.read_text(encoding="utf-8-sig", errors="replace")
        if formats.detect(str(path), text) == deepspeed.FORMAT:
            found.append(path)
    return found


@pytest.mark.parametrize("path", _deepspeed_fixtures(), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_positions_agree_with_the_tree(path):
    """A finding whose pointer names a setting in the file (as written) sits on that setting's key
    or value; any other finding sits on some node of the file, or at 1:1."""
    document = deepspeed.read(path.read_text(encoding="utf-8-sig"), str(path))
    if document.root is None:
        pytest.skip("input: the fixture does not parse, on purpose (SS001's own cases): no tree to compare with")
    nodes = {(n.line, n.column) for n in document.root.walk()}
    keys = {(m.line, m.column) for n in document.root.walk() for m in n.members}
    result = run_check([str(path)], Context(world_size=8))
    for finding in result.findings:
        where = (finding.line, finding.column)
        if finding.pointer is None:
            continue
        member = find_member(document.root, finding.pointer) if finding.pointer else None
        if member is not None:
            assert where in ((member.line, member.column), (member.value.line, member.value.column)), finding
        else:
            assert where in nodes | keys | {(1, 1)}, finding


@pytest.mark.parametrize("fixture", sorted(p.name for p in POSITIONS.glob("*.json")))
def test_comment_above_moves_findings_one_line_down(tmp_path, fixture):
    """A comment line inserted at the top moves every positioned finding exactly one line down."""
    text = (POSITIONS / fixture).read_text(encoding="utf-8")
    original, shifted = tmp_path / "a" / fixture, tmp_path / "b" / fixture
    for path, content in ((original, text), (shifted, "// one more line\n" + text)):
        path.parent.mkdir()
        path.write_text(content, encoding="utf-8")
    before = run_check([str(original)], Context()).findings
    after = run_check([str(shifted)], Context()).findings
    # A finding placed at the start of the file (it has no better place) stays at 1:1.
    moved_back = [(f.code, f.line if (f.line, f.column) == (1, 1) else f.line - 1, f.column, f.pointer) for f in after]
    assert sorted(moved_back) == sorted((f.code, f.line, f.column, f.pointer) for f in before)


# --- where a legacy spelling puts a finding --------------------------------------------------

LEGACY = [
    # (text, pointer in the normalised data, marker of where it was written)
    ('{"zero_optimization": {"stage": 2,\n "cpu_offload": true}}', "/zero_optimization/offload_optimizer/device",
     '"cpu_offload"'),
    ('{"bfloat16": {\n  "enabled": true}}', "/bf16/enabled", '"enabled"'),
    ('{"zero_optimization": {"stage": 3,\n  "prefetch_bucket_size": 5e7}}',
     "/zero_optimization/stage3_prefetch_bucket_size", '"prefetch_bucket_size"'),
]


@pytest.mark.parametrize("text,pointer,marker", LEGACY)
def test_renamed_pointer_points_where_it_was_written(text, pointer, marker):
    document = deepspeed.read(text)
    assert pointer in document.renamed
    line, column, _ = locate(text, marker)
    assert document.position(pointer, key=True) == (line, column)


def test_missing_pointer_falls_back_to_parent():
    text = '{\n  "zero_optimization": {\n    "stage": 3\n  }\n}'
    document = deepspeed.read(text)
    line, column, _ = locate(text, "{", 2)
    assert document.position("/zero_optimization/offload_param/device") == (line, column)
    assert document.position("/nothing/here") == (1, 1)


def test_comment_markers_inside_strings_are_text():
    text = (POSITIONS / "line_comments_bucket.json").read_text(encoding="utf-8")
    document = deepspeed.read(text)
    assert document.data["zero_optimization"]["offload_optimizer"]["nvme_path"] == "/nvme//scratch#1/*x*/"


@pytest.mark.parametrize("path", sorted(POSITIONS.glob("*.json")), ids=lambda p: p.name)
def test_fixture_reads_as_deepspeeds_own_loader_reads_it(path):
    """The data behind the positions is what DeepSpeed's hjson loader sees (hjson turns whole
    numbers such as 5e8 into ints; == treats 500000000 and 5e8 alike)."""
    hjson = pytest.importorskip("hjson")
    text = path.read_text(encoding="utf-8")
    document = deepspeed.read(text, str(path))
    try:
        expected = hjson.loads(text)
    except hjson.HjsonDecodeError:
        assert document.syntax is not None
        return
    if document.syntax is not None:  # hjson is laxer (quoteless strings, newline as a comma): keep fixtures clear
        pytest.fail(f"hjson reads {path.name} but the reader does not: {document.syntax}")
    assert document.data == json.loads(json.dumps(expected))


def test_json_output_pointer_is_rfc6901(checked):
    """Pointers in the JSON output escape '/' and '~' in keys."""
    pointers = [f["pointer"] for fs in checked.values() for f in fs if f["pointer"]]
    assert "/zero_optimization/sub~1group~0size" in pointers
    assert all(p.startswith("/") for p in pointers)
    json.dumps(pointers)
