"""`check --fix` / `--diff`: safe rewrites in place that keep everything else byte for byte."""

from __future__ import annotations

import json

import pytest

from shardshift.fix import apply_edits, plan_edits
from shardshift.formats import deepspeed
from shardshift.rules.base import Finding

from conftest import check_json, run_cli

ORIGINAL = """{
  // a comment that must survive
  "train_micro_batch_size_per_gpu": 4,
  "gradient_clippping":   1.0,
  "zero_optimisation": {
    "stage": 3,
    "reduce_bucket_size": "5e8",     /* the usual */
    "stage3_prefetch_bucket_size" :"50000000",
    "reduce_bucket_sise": 7,
    "overlap_comm": "true",
  },
  "bf16": {"enabled": true},
  "train_batch": 32
}
"""
# What --fix must change, and nothing else: (old token, new token), in file order.
EXPECTED_EDITS = [
    ('"gradient_clippping"', '"gradient_clipping"'),
    ('"zero_optimisation"', '"zero_optimization"'),
    ('"5e8"', "500000000"),
    ('"50000000"', "50000000"),
    ('"true"', "true"),
]


def _expected(text: str) -> str:
    for old, new in EXPECTED_EDITS:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return text


def _run_fix(path, *args: str) -> tuple[int, dict]:
    done = run_cli("check", "--fix", "--format", "json", *args, str(path))
    assert done.stderr == "", done.stderr
    return done.returncode, json.loads(done.stdout)


def test_fix_rewrites_only_the_fixed_tokens_and_reports_what_remains(tmp_path):
    path = tmp_path / "ds_config.json"
    path.write_bytes(ORIGINAL.encode())
    before = check_json(str(path))[1]["findings"]
    status, output = _run_fix(path)
    assert path.read_bytes() == _expected(ORIGINAL).encode()  # byte for byte: nothing else moved
    fixed = {(f["code"], f["pointer"]) for f in output["fixed"]}
    assert fixed == {("DS101", "/gradient_clippping"), ("DS101", "/zero_optimisation"),
                     ("DS102", "/zero_optimization/reduce_bucket_size"),
                     ("DS102", "/zero_optimization/stage3_prefetch_bucket_size"),
                     ("DS102", "/zero_optimization/overlap_comm")}
    assert output["summary"]["fixed"] == 5
    # what remains: the typo whose correct spelling is already there, and the unclear one
    remaining = {(f["code"], f["pointer"]) for f in output["findings"] if f["code"] in ("DS101", "DS102")}
    assert remaining == {("DS101", "/zero_optimization/reduce_bucket_sise"), ("DS101", "/train_batch")}
    # a fresh check of the fixed file agrees, and has none of the fixed findings
    after = check_json(str(path))[1]["findings"]
    assert [(f["code"], f["pointer"], f["line"]) for f in after] == [
        (f["code"], f["pointer"], f["line"]) for f in output["findings"]]
    fixed_pointers = {p.replace("zero_optimisation", "zero_optimization") for _, p in fixed}
    assert not [f for f in after if f["code"] in ("DS101", "DS102") and f["pointer"] in fixed_pointers]
    assert len(before) > len(after)
    assert status == 1  # errors remain


def test_diff_prints_the_changes_and_writes_nothing(tmp_path):
    path = tmp_path / "ds_config.json"
    path.write_bytes(ORIGINAL.encode())
    done = run_cli("check", "--diff", str(path))
    assert path.read_bytes() == ORIGINAL.encode()
    assert done.returncode == 1
    assert f"--- a/{path}" in done.stdout and f"+++ b/{path}" in done.stdout
    assert '-  "zero_optimisation": {' in done.stdout and '+  "zero_optimization": {' in done.stdout
    assert "5 findings fixable in 1 file(s)" in done.stderr
    plain = run_cli("check", str(path))
    assert plain.returncode == 1 and path.read_bytes() == ORIGINAL.encode()  # no --fix: never written


def test_clean_file_is_left_alone(tmp_path):
    path = tmp_path / "ds_config.json"
    text = '{"train_micro_batch_size_per_gpu": 4, "gradient_clipping": 1.0, "zero_optimization": {"stage": 2}}\n'
    path.write_text(text)
    stat = path.stat()
    assert run_cli("check", "--diff", str(path)).returncode == 0
    status, output = _run_fix(path)
    assert status == 0 and output["fixed"] == [] and path.stat().st_mtime_ns == stat.st_mtime_ns


def test_crlf_line_endings_and_byte_order_mark_are_kept(tmp_path):
    path = tmp_path / "ds_config.json"
    original = "\ufeff" + ORIGINAL.replace("\n", "\r\n")
    path.write_bytes(original.encode())
    _run_fix(path)
    assert path.read_bytes() == _expected(original).encode()


def test_suppressed_and_ignored_findings_are_not_fixed(tmp_path):
    path = tmp_path / "ds_config.json"
    typo = '"gradient_clippping":   1.0,'
    text = ORIGINAL.replace(typo, typo + "  // shardshift: ignore[DS101]")
    path.write_text(text)
    _run_fix(path, "--ignore", "DS102")
    written = path.read_text()
    assert '"gradient_clippping"' in written and '"zero_optimization"' in written and '"5e8"' in written


def test_unicode_before_the_fix_does_not_shift_it(tmp_path):
    path = tmp_path / "ds_config.json"
    text = '{"_comment": "日本語 ✓ 🚀", "train_micro_batch_size_per_gpu": 4, "gradient_clipping": 1.0, ' \
           '"zero_optimization": {"stage": 2, "reduce_bucket_size": "5e8"}}\n'
    path.write_text(text)
    _run_fix(path)
    assert path.read_text() == text.replace('"5e8"', "500000000")


def test_fractional_string_for_an_element_count_is_not_guessed(tmp_path):
    path = tmp_path / "ds_config.json"
    text = ('{"train_micro_batch_size_per_gpu": 4, "gradient_clipping": 1.0, '
            '"zero_optimization": {"stage": 2, "reduce_bucket_size": "15099494.4"}}\n')
    path.write_text(text)
    _run_fix(path)
    assert path.read_text() == text


# --- the engine, with findings of either kind ---------------------------------------------------

ENGINE_TEXT = '{\n  "a": {"old_name": 1, "keep": "x"},\n  "b": "2"\n}\n'


@pytest.mark.parametrize("finding,expected", [
    (Finding("XX001", "warning", "f.json", 2, 10, "/a/old_name", "m", "new_name", fix_kind="rename-key"),
     ENGINE_TEXT.replace('"old_name"', '"new_name"')),
    (Finding("XX001", "warning", "f.json", 3, 8, "/b", "m", "2", fix_kind="replace-value"),
     ENGINE_TEXT.replace('"2"', "2")),
    (Finding("XX001", "warning", "f.json", 2, 10, "/a/old_name", "m", "keep", fix_kind="rename-key"), None),
    (Finding("XX001", "warning", "f.json", 2, 3, "/a", "m", "{}", fix_kind="replace-value"), None),  # not a scalar
    (Finding("XX001", "warning", "f.json", 2, 3, "/missing", "m", "1", fix_kind="replace-value"), None),
    (Finding("XX001", "warning", "f.json", 2, 3, "/a/old_name", "m", "x", fix_kind="move-key"), None),
])
def test_engine_edits(finding, expected):
    document = deepspeed.read(ENGINE_TEXT, "f.json")
    edits, skipped = plan_edits(document, [finding])
    if expected is None:
        assert edits == [] and len(skipped) == 1
    else:
        assert skipped == [] and apply_edits(ENGINE_TEXT, edits) == expected


def test_engine_refuses_to_edit_a_duplicated_key():
    text = '{"a": 1, "a": 2}\n'
    finding = Finding("XX001", "warning", "f.json", 1, 10, "/a", "m", "b", fix_kind="rename-key")
    edits, skipped = plan_edits(deepspeed.read(text, "f.json"), [finding])
    assert edits == [] and "more than once" in skipped[0][1]


def test_legacy_spellings_are_renamed_by_the_rules_that_offer_it(tmp_path):
    """DS320 offers a rename for a legacy key whose modern name lives in the same object."""
    path = tmp_path / "ds_config.json"
    text = ('{\n  "train_micro_batch_size_per_gpu": 4,\n  "gradient_clipping": 1.0,\n  "bfloat16": {"enabled": true},\n'
            '  "zero_optimization": {\n    "stage": 3,\n    "stage3_gather_fp16_weights_on_model_save": true\n  }\n}\n')
    path.write_text(text)
    _, output = _run_fix(path)
    assert {f["code"] for f in output["fixed"]} == {"DS320"}
    assert path.read_text() == text.replace('"bfloat16"', '"bf16"').replace(
        '"stage3_gather_fp16_weights_on_model_save"', '"stage3_gather_16bit_weights_on_model_save"')
    assert not [f for f in check_json(str(path))[1]["findings"] if f["code"] == "DS320"]


def test_a_file_that_cannot_be_written_is_reported_not_a_traceback(tmp_path, monkeypatch, capsys):
    from shardshift import cli

    path = tmp_path / "ds_config.json"
    path.write_text(ORIGINAL)

    def refuse(path, text, before, roots, follow_links=False):
        return "cannot write the fixes: Permission denied"

    monkeypatch.setattr("shardshift.fix.write", refuse)
    assert cli.main(["check", "--fix", "--isolated", str(path)]) == 1
    captured = capsys.readouterr()
    assert "cannot write the fixes: Permission denied" in captured.err
    assert "DS101" in captured.out and path.read_text() == ORIGINAL
