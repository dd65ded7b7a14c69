"""The conversion measure of bench/convert_matrix.py (issue 21's starting point): it runs over real
files of every source format, and what the issue says already holds, holds: converting a file to its
own format, or to the Plan, and reading the output back keeps every field that decides the run."""

from __future__ import annotations

import importlib.util

from conftest import ROOT, needs_corpus

ROUND_TRIPS = {("deepspeed", "deepspeed"), ("accelerate", "accelerate"), ("axolotl", "axolotl"),
               ("torchtitan", "torchtitan"), ("megatron", "megatron"), ("plan", "plan")}


def _bench():
    spec = importlib.util.spec_from_file_location("convert_matrix", ROOT / "bench" / "convert_matrix.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@needs_corpus
def test_round_trips_and_plan_keep_every_deciding_field():
    bench = _bench()
    results, failures = bench.measure(per_format=2)
    assert not failures
    sources = {source for source, _ in results}
    assert {"deepspeed", "accelerate", "axolotl", "torchtitan", "megatron", "fsdp2", "launch"} <= sources
    for (source, target), row in results.items():
        assert row["conversions"] > 0, (source, target)
        if (source, target) in ROUND_TRIPS or target == "plan":
            assert row["kept"] > 0, (source, target)
            assert row["changed"] == row["vanished"] == row["appeared"] == row["not read back"] == 0, \
                (source, target, dict(row))


@needs_corpus
def test_no_report_calls_exact_what_the_output_does_not_keep():
    bench = _bench()
    results, _ = bench.measure(per_format=3)
    assert sum(row["changed"] + row["vanished"] for row in results.values()) > 0  # there is something to say
    assert {pair: row["said exact"] for pair, row in results.items() if row["said exact"]} == {}


def test_an_exact_entry_the_output_drops_is_measured_dropped():
    from shardshift import api

    path = str(ROOT / "fixtures" / "accelerate" / "deepspeed_inline.yaml")
    source = api.load(path).plan
    assert source.get("world.world_size") == 16
    entry = next(e for e in api.convert(path, "megatron-args").entries if e.source == "/num_processes")
    # the Megatron writer itself says an argument list holds no world size (issue 21); either way never exact
    assert entry.status == "dropped" and ("read back" in entry.reason or "has no launcher" in entry.reason)
    # the same setting into a target that holds a world size stays exact
    kept = next(e for e in api.convert(path, "accelerate-fsdp2").entries if e.source == "/num_processes")
    assert kept.status == "exact", kept


@needs_corpus
def test_the_table_counts_every_pair():
    bench = _bench()
    results, failures = bench.measure(per_format=1)
    text = bench.table(results, failures, 1)
    assert text.count("\n| ") == len(results) + 2  # header, one row per pair, the total
