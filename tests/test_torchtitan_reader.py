"""torchtitan TOML reader: the corpus reads, positions are exact, the Plan holds what the file says."""

from __future__ import annotations

import glob
import os

import pytest
import tomllib
from hypothesis import given, settings
from hypothesis import strategies as st

from shardshift.formats.torchtitan import is_config, looks_like, read
from shardshift.formats.torchtitan.toml import parse
from shardshift.plan import Unknown
from shardshift.source import find_node

CORPUS = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "corpus", "torchtitan")
FILES = sorted(glob.glob(os.path.join(CORPUS, "*.toml")))


def _corpus():
    if not FILES:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the torchtitan corpus is missing at {CORPUS}")
        pytest.skip("the torchtitan corpus is not here")
    return FILES


def test_every_corpus_file_reads():
    for path in _corpus():
        text = open(path, encoding="utf-8").read()
        assert looks_like(path, text), path
        document = read(text, path)
        assert document.syntax is None, path
        assert is_config(document)
        assert document.root.to_python() == tomllib.loads(text), path
        assert document.plan is not None


def test_positions_of_values_and_keys():
    text = '# c\n[parallelism]\ntensor_parallel_degree = 8  # tp\n[quantize.linear.float8]\nfilter_fqns = ["output", "x"]\n' \
           'a.b = { c = 1, d = "e" }\n'
    root, _ = parse(text)
    node = find_node(root, "/parallelism/tensor_parallel_degree")
    assert (node.line, node.column, node.raw) == (3, 26, "8")
    node = find_node(root, "/quantize/linear/float8/filter_fqns/1")
    assert (node.line, node.column, node.value) == (5, 26, "x")
    assert (find_node(root, "/quantize/linear/float8").line) == 4
    node = find_node(root, "/quantize/linear/float8/a/b/d")
    assert (node.line, node.column, node.raw) == (6, 20, '"e"')


def test_multiline_strings_and_arrays_of_tables():
    text = '[job]\ndescription = """a\n"b" """\n[[x.y]]\nz = 1\n[[x.y]]\nz = 2_000\n[x.y.w]\nq = \'lit\'\n'
    root, data = parse(text)
    assert root.to_python() == data
    assert find_node(root, "/x/y/1/z").raw == "2_000"
    assert find_node(root, "/x/y/1/w/q").line == 9


def test_syntax_error_has_tomllib_message_and_place():
    document = read("[training]\nseq_len = = 3\n", "bad.toml")
    assert document.syntax is not None and document.syntax.line == 2
    assert document.plan is None


def test_plan_of_a_v02_file():
    text = """[training]
local_batch_size = 2
global_batch_size = -1
seq_len = 8192
max_norm = 1.0
mixed_precision_param = "bfloat16"
mixed_precision_reduce = "float32"
[parallelism]
data_parallel_replicate_degree = 2
data_parallel_shard_degree = -1
tensor_parallel_degree = 8
pipeline_parallel_degree = 2
fsdp_reshard_after_forward = "default"
[model]
converters = ["quantize.linear.float8"]
[optimizer]
name = "AdamW"
lr = 8e-5
beta1 = 0.9
beta2 = 0.95
weight_decay = 0.1
[lr_scheduler]
warmup_steps = 600
decay_type = "cosine"
decay_ratio = 0.8
[activation_checkpoint]
mode = "none"
"""
    plan = read(text, "t.toml").plan
    assert plan.parallelism.data_parallel_replicate == 2
    assert isinstance(plan.parallelism.data_parallel_shard, Unknown)
    assert (plan.parallelism.tensor, plan.parallelism.pipeline) == (8, 2)
    assert (plan.batch.micro, plan.batch.accumulation, plan.batch.global_, plan.batch.sequence_length) == (2, 1, None, 8192)
    assert (plan.precision.param_dtype, plan.precision.reduce_dtype, plan.precision.fp8) == ("bf16", "fp32", True)
    assert plan.optimizer.betas == [0.9, 0.95] and plan.optimizer.lr == 8e-5 and plan.optimizer.weight_decay == 0.1
    assert plan.scheduler.warmup_steps == 600 and plan.scheduler.name == "cosine"
    assert plan.scheduler.params == {"decay_ratio": 0.8}
    assert plan.activation_checkpointing.enabled is False
    assert plan.sharding.reshard_after_forward is False  # "default" with pipeline parallelism = never
    assert plan.gradient_clipping == 1.0
    where = plan.provenance["parallelism.tensor"]
    assert (where.line, where.column, where.pointer) == (11, 26, "/parallelism/tensor_parallel_degree")
    rest = plan.passthrough["torchtitan"]
    assert rest["parallelism"]["data_parallel_shard_degree"] == -1
    assert rest["activation_checkpoint"] == {"mode": "none"}


def test_plan_of_the_legacy_layout():
    path = os.path.join(CORPUS, "pytorch__torchtitan__train_configs__llama3_70b__at-699a411.toml")
    if not os.path.exists(path):
        _corpus()
        pytest.skip("file missing")
    document = read(open(path, encoding="utf-8").read(), path)
    plan = document.plan
    assert plan.parallelism.tensor == 8
    assert plan.provenance["parallelism.tensor"].pointer == "/training/tensor_parallel_degree"
    assert plan.batch.micro == 8
    assert plan.scheduler.warmup_steps is not None


def test_v01_float8_name_in_a_v02_file_is_not_fp8():
    plan = read('[model]\nconverters = ["float8"]\n[compile]\nenable = true\n', "t.toml").plan
    assert plan.precision.fp8 is None
    plan = read('[model]\nconverters = ["float8"]\n[training]\nlocal_batch_size = 1\n', "t.toml").plan
    assert plan.precision.fp8 is True


def test_not_torchtitan():
    assert not looks_like("pyproject.toml", "[project]\nname = 'x'\n")
    assert not looks_like("a.yaml", "[job]\n")


KEYS = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=8)
SCALARS = (st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False)
           | st.text(st.characters(blacklist_categories=("Cs",)), max_size=10))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
                      max_leaves=8)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(KEYS, st.dictionaries(KEYS, VALUES, max_size=4) | VALUES, max_size=5))
def test_positions_match_tomllib_and_the_text(data):
    from shardshift.formats.torchtitan.writer import dumps

    text = dumps(data)
    root, parsed = parse(text)
    assert root.to_python() == parsed == tomllib.loads(text)
    starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]
    for node in root.walk():
        if node.kind not in ("object", "array") and node.raw:
            offset = starts[node.line - 1] + node.column - 1
            assert text[offset:offset + len(node.raw)] == node.raw
