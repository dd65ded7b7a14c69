"""Issue 33: the coverage maps' denominator found by call graph from the entry a user runs
(scripts/coverage/callgraph.py), read from each framework's installed source with `ast`.

The maps count the sites of files chosen by hand; the call graph must reach the sites those files
hold on the path a run takes (so that the two denominators can be compared), and it finds sites
the hand-chosen scope left out (`Accelerator.__init__`, the engine's step)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

import oracles

pytestmark = pytest.mark.oracle

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "coverage" / "callgraph.py"


def _callgraph():
    sys.path.insert(0, str(SCRIPT.parent))
    spec = importlib.util.spec_from_file_location("callgraph", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["callgraph"] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_accelerate_call_graph_reaches_the_launch_checks_and_finds_more():
    oracles.require_installed("accelerate")
    from shardshift import coverage

    found, counts = _callgraph().reachable("accelerate")
    ids = {site.id for site in found}
    mapped = coverage.load("accelerate")
    # the launch's own checks, which the hand-chosen scope holds too
    launch = {s for s in mapped if s.startswith("accelerate/commands/launch.py:_validate_launch_command:")}
    assert launch and launch <= ids
    assert "accelerate/commands/config/config_args.py:BaseConfig.process_config:1" in ids  # AC006's
    # and beyond the launch: the Accelerator the script builds, whose sites the map judges too
    assert any(i.startswith("accelerate/accelerator.py:Accelerator.__init__:") for i in ids)
    assert ids <= set(mapped), sorted(ids - set(mapped))[:10]
    assert counts["functions"] > 50


def test_deepspeed_call_graph_reaches_initialize_and_the_engine():
    oracles.require_installed("deepspeed")
    found, _ = _callgraph().reachable("deepspeed")
    files = {site.file for site in found}
    assert "deepspeed/runtime/config.py" in files and "deepspeed/runtime/engine.py" in files


def test_the_record_rules_coverage_prints_is_the_call_graph_of_the_installed_releases():
    """data/coverage/callgraph.tsv is what callgraph.py finds now (rewrite it with --write when a
    pin, an entry or the map changes)."""
    oracles.require_installed("accelerate", "deepspeed", "transformers", "axolotl", "torchtitan", "torch")
    from shardshift import coverage

    recorded = [line for line in coverage.DATA.joinpath("callgraph.tsv").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    assert recorded == _callgraph().rows()
    shown = coverage.render(coverage.summary())
    assert "chosen by hand" in shown and all(framework in shown for framework in coverage.reached())
