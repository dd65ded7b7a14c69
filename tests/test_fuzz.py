"""No input makes shardshift print a traceback.

Hypothesis feeds random text, random JSON shaped like a ds_config, and mutated fixture and corpus
documents to the DeepSpeed reader and to the whole rule run (`run_check` with every rule, with
and without a world size). Whatever the reader returns must also survive the writer: a Plan read
from any text is written, and the written text reads back to the same Plan. A few runs of the
real command line on nasty files check the end-to-end promise: exit status 0 or 1, no traceback.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shardshift.check import run_check
from shardshift.formats import deepspeed
from shardshift.formats.deepspeed.keys import KEYS, children_of
from shardshift.rules.base import Context

from conftest import FIXTURES, corpus_files, run_cli
from strategies import FINITE, TEXT, mutated_documents

FUZZ = settings(max_examples=200, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# Seeds for mutation: every fixture, and every 8th corpus config (enough variety, bounded time).
SEEDS = sorted({p.read_text(encoding="utf-8-sig", errors="replace") for p in FIXTURES.rglob("*.json")}
               | {p.read_text(encoding="utf-8-sig", errors="replace") for p in corpus_files("deepspeed")[::8]})
SEEDS = SEEDS or ['{"train_batch_size": 8, "zero_optimization": {"stage": 2}}']


@pytest.fixture(scope="module")
def config_file(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz") / "ds_config.json"


def read_and_write(text: str) -> None:
    """The reader never raises; a Plan it returns is written and read back unchanged."""
    document = deepspeed.read(text, "ds_config.json")
    assert (document.plan is None) == (document.syntax is not None)
    if document.syntax is not None:
        assert document.syntax.line >= 1 and document.syntax.column >= 1
        return
    for pointer, line, column in document.settings():
        assert line >= 1 and column >= 1, pointer
    written = deepspeed.convert(document).text
    again = deepspeed.read(written, "<written>")
    assert again.syntax is None, f"written text does not parse: {again.syntax}\n{written}"
    assert again.plan == document.plan
    written.encode("utf-8")


def check_everything(path, text: str, world: int | None) -> None:
    """Every rule over the file as `shardshift check` would read it (bytes, BOM and all)."""
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    result = run_check([str(path)], Context(world_size=world))
    for finding in result.findings:
        assert finding.line >= 1 and finding.column >= 1, finding
        assert finding.severity in ("error", "warning", "info")
        json.dumps(finding.to_json())


WORLDS = st.sampled_from([None, 1, 8, 3])

# (a) random text: anything, and text from JSON's own alphabet (reaches deeper parser states)
JSONISH = st.text(alphabet='{}[]:,"0123456789.eE-+ \n\t\\/#*truefalsnu_', max_size=120)


@FUZZ
@given(text=st.text(max_size=200) | JSONISH, world=WORLDS)
def test_random_text(config_file, text, world):
    read_and_write(text)
    check_everything(config_file, text, world)


# (b) random JSON shaped like a ds_config: known keys at their level, wrong types, "auto", "5e8"
SECTIONS = sorted({k.path.rsplit("/", 1)[0] for k in KEYS if k.path.count("/") > 1})
SCALARS = (st.none() | st.booleans() | st.integers() | FINITE | TEXT
           | st.sampled_from(["auto", "5e8", "5E8", "1e-5", "true", "cpu", "nvme", "none", "bf16", "fp16", "Adam",
                              "WarmupLR", "", " 8 ", "inf", "nan"]))


def ds_like(section: str, depth: int) -> st.SearchStrategy:
    names = list(children_of(section))
    keys = (st.sampled_from(names) if names else TEXT) | TEXT
    children = SCALARS | st.lists(SCALARS, max_size=3)
    if depth > 0:
        nested = st.sampled_from([s for s in SECTIONS if s.startswith(section + "/") and
                                  s.count("/") == section.count("/") + 1] or [section])
        children = children | nested.flatmap(lambda s: ds_like(s, depth - 1).map(lambda v: {s.rsplit("/", 1)[1]: v}))
        children = children | st.deferred(lambda: ds_like(section, depth - 1))
    return st.dictionaries(keys, children, max_size=6)


@FUZZ
@given(data=ds_like("", 3), world=WORLDS, indent=st.sampled_from([None, 2]))
def test_random_json(config_file, data, world, indent):
    text = json.dumps(data, indent=indent)
    read_and_write(text)
    check_everything(config_file, text, world)


@FUZZ
@given(value=st.recursive(SCALARS, lambda c: st.lists(c, max_size=3) | st.dictionaries(TEXT, c, max_size=3),
                          max_leaves=10))
def test_random_json_values(config_file, value):
    text = json.dumps(value)
    read_and_write(text)
    check_everything(config_file, text, None)


# (c) mutated fixtures and corpus documents
@FUZZ
@given(text=mutated_documents(SEEDS), world=WORLDS)
def test_mutated_documents(config_file, text, world):
    read_and_write(text)
    check_everything(config_file, text, world)


# --- hand-written nasty inputs, in process and through the real command line -------------------

NASTY = {
    "empty": "",
    "whitespace": " \n\t ",
    "bom_only": "\ufeff",
    "bom": '\ufeff{"train_batch_size": 8}',
    "array": "[1, 2, 3]",
    "string": '"ds_config"',
    "null": "null",
    "unclosed": '{"zero_optimization": {"stage": 2',
    "unclosed_comment": '{"train_batch_size": 8 /* no end',
    "unclosed_string": '{"train_batch_size": "8',
    "trailing_garbage": '{"train_batch_size": 8} }',
    "placeholder": '{"train_batch_size": BATCH_SIZE}',
    "nan": '{"gradient_clipping": NaN}',
    "infinity": '{"gradient_clipping": Infinity}',
    "overflow": '{"zero_optimization": {"stage": 2, "reduce_bucket_size": 1e400}}',
    "overflow_batch": '{"train_batch_size": 1e400, "train_micro_batch_size_per_gpu": 1}',
    "negative_overflow": '{"gradient_clipping": -1e400}',
    "underflow": '{"gradient_clipping": 1e-400, "train_batch_size": 8}',
    "many_digits": '{"train_batch_size": ' + "9" * 5000 + "}",
    "huge_int": '{"train_batch_size": ' + "9" * 300 + ', "train_micro_batch_size_per_gpu": 7}',
    "bad_escape": '{"train_batch_size": 8, "a\\uZZZZ": 1}',
    "nul_key": '{"train_batch_size": 8, "a\\u0000b": 1}',
    "rtl_key": '{"train_batch_size": 8, "zero_optimi\u202ezation": {"stage": 2}}',
    "deep_object": '{"zero_optimization": ' + '{"a": ' * 3000 + "1" + "}" * 3000 + "}",
    "deep_array": '{"train_batch_size": ' + "[" * 3000 + "]" * 3000 + "}",
    "just_deep_enough": '{"x": ' + "[" * 200 + "]" * 200 + ', "train_batch_size": 8}',
    "dup_everything": '{"fp16": {}, "fp16": 1, "fp16": {"enabled": true, "enabled": "auto"}, "train_batch_size": 8}',
    "types_swapped": '{"train_batch_size": "8", "zero_optimization": true, "fp16": [], "bf16": "true", '
                     '"optimizer": "Adam", "scheduler": 5, "gradient_clipping": {}}',
    "string_numbers": '{"train_batch_size": "5e8", "zero_optimization": {"stage": "3", "reduce_bucket_size": "5e8", '
                      '"stage3_prefetch_bucket_size": "1e400", "allgather_bucket_size": "nan"}}',
    "zero_stage_weird": '{"train_batch_size": 8, "zero_optimization": {"stage": -1, "offload_param": {"device": 5}}}',
    "all_auto": '{"train_batch_size": "auto", "zero_optimization": "auto", "fp16": "auto", "optimizer": "auto"}',
    "crlf_comments": '{\r\n  // c\r\n  "train_batch_size": 8, # c\r\n  /* c */ "fp16": {"enabled": true,},\r\n}',
    "control_chars": '{"train_batch_size": 8, "x": "\x01\x02"}',
    "emoji": '{"train_batch_size": 8, "\U0001f600": "\U0001f600"}',
    # hjson, DeepSpeed's own loader: shardshift reads what it reads (tests/test_hjson.py)
    "hjson_braceless": "train_batch_size: 8\nzero_optimization: {\n  stage: 2\n}\n",
    "hjson_swallowed_brace": '{"zero_optimization": {"stage": TWO}, "train_batch_size": 8}',
    "hjson_multiline_unclosed": "{\n  a: \'\'\'\n  never closed\n",
    "hjson_multiline_first_line": "a: \'\'\'x\'\'\'",
    "hjson_quoteless_everything": "{\ntrain_batch_size: CONFIG_BATCH_SIZE\nfp16: {enabled: CONFIG_FP16\n}\n}",
    "hjson_deep_quoteless": "{a:\n" * 300 + "x\n" + "}\n" * 300,
    "hjson_unicode_digits": '{"train_batch_size": \u0661\u0662}',
    "hjson_odd_escapes": '{"train_batch_size": 8, "a": "\\u 1a \\\'"}',
}

# A lone surrogate (from a "\ud800" escape) once crashed the reporters on stdout; the CLI now
# prints it escaped.
LONE_SURROGATE = '{"train_batch_size": 8, "x\\ud800": "\\udc00"}'


@pytest.mark.parametrize("name", sorted(NASTY))
def test_nasty_in_process(config_file, name):
    read_and_write(NASTY[name])
    for world in (None, 8):
        check_everything(config_file, NASTY[name], world)


def test_nasty_in_process_lone_surrogate(config_file):
    read_and_write(LONE_SURROGATE)
    check_everything(config_file, LONE_SURROGATE, None)


@pytest.fixture(scope="module")
def nasty_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("nasty")
    for name, text in NASTY.items():
        (directory / f"ds_config_{name}.json").write_bytes(text.encode("utf-8", "surrogatepass"))
    return directory


def assert_clean_exit(done) -> None:
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode in (0, 1), (done.returncode, done.stderr)


@pytest.mark.parametrize("output", ["text", "json"])
def test_cli_check_nasty_directory(nasty_dir, output):
    done = run_cli("check", "--format", output, "--world-size", "8", str(nasty_dir))
    assert_clean_exit(done)
    assert done.returncode == 1  # most of these files are broken
    if output == "json":
        result = json.loads(done.stdout)
        checked = {f["path"].rsplit("/", 1)[-1] for f in result["files"]}
        # every file whose content names a ds_config key is reported, even the unparseable ones
        assert "ds_config_overflow.json" in checked and "ds_config_many_digits.json" in checked
        assert all(f["line"] >= 1 and f["column"] >= 1 for f in result["findings"])


def test_cli_check_nasty_files_explicitly(nasty_dir):
    paths = sorted(str(p) for p in nasty_dir.iterdir())
    done = run_cli("check", "--format", "json", *paths)
    assert_clean_exit(done)
    result = json.loads(done.stdout)
    assert len(result["files"]) == len(paths)  # named on the command line: each one is reported


@pytest.mark.parametrize("name", ["overflow", "dup_everything", "types_swapped", "crlf_comments", "emoji"])
def test_cli_convert_nasty(nasty_dir, tmp_path, name):
    source = nasty_dir / f"ds_config_{name}.json"
    target = tmp_path / "out.json"
    done = run_cli("convert", str(source), "--to", "deepspeed", "-o", str(target))
    assert_clean_exit(done)
    if done.returncode == 0:
        assert deepspeed.read(target.read_text(encoding="utf-8")).plan == deepspeed.read(
            source.read_text(encoding="utf-8-sig")).plan


@pytest.mark.parametrize("output", ["text", "json"])
def test_cli_check_lone_surrogate(tmp_path, output):
    path = tmp_path / "ds_config.json"
    path.write_text(LONE_SURROGATE, encoding="utf-8")
    assert_clean_exit(run_cli("check", "--format", output, str(path)))


def test_cli_check_explicit_non_utf8_file_is_reported(tmp_path):
    path = tmp_path / "ds_config.json"
    path.write_bytes(b'{"train_batch_size": 8, "x": "\xff\xfe"}')
    done = run_cli("check", "--format", "json", str(path))
    assert_clean_exit(done)
    assert json.loads(done.stdout)["findings"], "an explicitly named, unreadable config passes as clean"
