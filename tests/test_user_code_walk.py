"""The faster walks of shardshift.user_code give what the standard library's give, in the same order
(the FSDP2 reader and the script reader take "the first" of some kinds of node)."""

from __future__ import annotations

import ast
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from shardshift.user_code import Visitor, nodes

from conftest import ROOT


def _trees():
    for path in sorted((ROOT / "src" / "shardshift").rglob("*.py"))[:40]:
        yield ast.parse(path.read_text(encoding="utf-8"))


def test_nodes_is_ast_walk_in_the_same_order():
    for tree in _trees():
        assert nodes(tree) == list(ast.walk(tree))


def test_visitor_visits_as_node_visitor_does():
    class Recording(ast.NodeVisitor):
        def __init__(self):
            self.seen = []

        def visit_Call(self, node):
            self.seen.append(("call", node))
            self.generic_visit(node)

        def visit_Name(self, node):
            self.seen.append(("name", node))

    class Fast(Visitor, Recording):
        pass

    for tree in _trees():
        slow, fast = Recording(), Fast()
        slow.visit(tree)
        fast.visit(tree)
        assert fast.seen == slow.seen


TOP_LEVEL = ["train_batch_size", "zero_optimization", "bf16", "optimizer", "scheduler", "steps_per_print",
             "name", "version", "dependencies", "$schema", "compile", "checkpoint", "elasticity"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(TOP_LEVEL) | st.text(min_size=1, max_size=6), min_size=1, max_size=5, unique=True))
def test_a_json_object_is_a_ds_config_by_content_as_before_the_first_key_shortcut(keys):
    """DeepSpeed's reader skips parsing a JSON object whose first key it does not know; the verdict
    must be the one the whole parse gives."""
    from shardshift.formats.deepspeed import reader

    text = json.dumps({key: 1 for key in keys}, indent=2)
    path = "settings.json"  # a name that says nothing: judged by content
    markers = any(f'"{k}"' in text for k in reader.MARKER_KEYS)
    expected = markers or reader._only_deepspeed_keys(json.loads(text))
    assert reader.looks_like(path, text) == expected
