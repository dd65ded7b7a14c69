"""The conversion measure of bench/convert_matrix.py (issue 21's starting point): it runs over real
files of every source format, and what the issue says already holds, holds: converting a file to its
own format, or to the Plan, and reading the output back keeps every field that decides the run."""

from __future__ import annotations

from conftest import ROOT, convert_matrix, needs_corpus

ROUND_TRIPS = {("deepspeed", "deepspeed"), ("accelerate", "accelerate"), ("axolotl", "axolotl"),
               ("torchtitan", "torchtitan"), ("megatron", "megatron"), ("plan", "plan")}


@needs_corpus
def test_round_trips_and_plan_keep_every_deciding_field():
    bench = convert_matrix()
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
def test_every_conversion_of_real_files_reports_what_its_output_holds():
    """Issue 21: 8 real files of every source format to every target, each output read back. No
    deciding field that changed or vanished is called exact or left without an entry; every source
    setting has an entry; no entry only says that no table exists."""
    bench = convert_matrix()
    results, failures = bench.measure(per_format=8)
    assert not failures
    per_source = {}
    for (source, _), row in results.items():
        per_source[source] = max(per_source.get(source, 0), row["conversions"])
    assert all(count >= 8 for source, count in per_source.items() if source != "plan"), per_source
    assert sum(row["changed"] + row["vanished"] for row in results.values()) > 0  # there is something to say
    for fault in ("said exact", "silent", "no entry", "blanket", "unknown unnamed", "appeared silent"):
        assert {pair: row[fault] for pair, row in results.items() if row[fault]} == {}, fault


def test_an_exact_entry_the_output_drops_is_measured_dropped():
    from shardshift import api

    path = str(ROOT / "fixtures" / "accelerate" / "deepspeed_inline.yaml")
    source = api.load(path).plan
    assert source.get("world.world_size") == 16
    entry = next(e for e in api.convert(path, "megatron-args").entries if e.source == "/num_processes")
    assert entry.status == "dropped" and entry.reason.startswith("measured: ") and "world.world_size = 16" in entry.reason
    # the same setting into a target that holds a world size stays exact
    kept = next(e for e in api.convert(path, "accelerate-fsdp2").entries if e.source == "/num_processes")
    assert kept.status == "exact", kept


@needs_corpus
def test_the_table_counts_every_pair():
    bench = convert_matrix()
    results, failures = bench.measure(per_format=1)
    text = bench.table(results, failures, 1)
    assert text.count("\n| ") == len(results) + 2  # header, one row per pair, the total


def test_a_stage_or_precision_only_the_output_states_has_an_unknown_entry(tmp_path):
    """Issue 34: a Plan that says nothing of sharding or precision, converted, gets an entry for each
    the output decides (fully sharded in FSDP2, the target's default precision), named unknown: the
    source's value is not known, so neither "exact" nor silence is true."""
    from shardshift import api

    source = tmp_path / "run.plan.yaml"
    source.write_text("batch:\n  micro: 4\noptimizer:\n  lr: 0.0001\n", encoding="utf-8")
    for target, stated in (("fsdp2", {"sharding.stage": "the output states 3"}),
                           ("deepspeed", {"sharding.stage": "default, 0, applies",
                                          "precision.param_dtype": "default, 'fp32', applies"})):
        entries = {e.source: e for e in api.convert(str(source), target).entries}
        for field, said in stated.items():
            assert entries[field].status == "unknown", (target, entries[field])
            assert "not in the source" in entries[field].reason and said in entries[field].reason, entries[field]
        # an axis the source does not use, written as 1, is the same run: no entry
        assert "parallelism.tensor" not in entries and "parallelism.pipeline" not in entries


def test_a_field_the_source_sets_gets_no_second_entry(tmp_path):
    from shardshift import api

    source = tmp_path / "run.plan.yaml"
    source.write_text("sharding:\n  stage: 3\nprecision:\n  param_dtype: bf16\n", encoding="utf-8")
    entries = api.convert(str(source), "fsdp2").entries
    assert not [e for e in entries if "not in the source, which leaves" in e.reason], entries


@needs_corpus
def test_no_deepspeed_output_of_another_format_has_a_class_or_param_deepspeed_cannot_build(tmp_path):
    """The ds_configs written from real files of every other format: no optimizer type DeepSpeed has
    no class for (DS401), no optimizer or scheduler param the class does not take (DS402, DS411), no
    schedule value it refuses such as warmup_num_steps 0 (DS415), which would each stop
    deepspeed.initialize."""
    from shardshift import api

    bench = convert_matrix()
    checked = 0
    for source, path in bench.sources(8):
        if source == "deepspeed":
            continue
        out = tmp_path / source / "ds_config.json"
        out.parent.mkdir(exist_ok=True)
        out.write_text(api.convert(path, "deepspeed").text, encoding="utf-8")
        findings = api.check([str(out)]).findings
        codes = {f.code for f in findings}
        assert not codes & {"DS401", "DS402", "DS411"}, (path, codes)
        # a schedule value DeepSpeed refuses, other than the FILL_IN placeholders the report names
        assert not [f for f in findings if f.code == "DS415" and "FILL_IN" not in f.message], path
        checked += 1
    assert checked >= 40
