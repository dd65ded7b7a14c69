"""Issue 31: mutation fuzzing of every format's fixtures through `check` and every `convert`
target. A mutated file gets findings or a clear ShardshiftError, never another exception, and
every finding serialises. The run is bounded: a fixed number of examples per format."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shardshift import api

from conftest import FIXTURES
from strategies import mutated_documents

# Seed files of each dialect the readers recognise (by name and content), a few of each.
PATTERNS = {
    "accelerate": ["accelerate/**/*.yaml"], "axolotl": ["axolotl/**/*.yml", "axolotl/**/*.yaml"],
    "torchtitan": ["torchtitan/**/*.toml"], "megatron": ["megatron/**/*.sh", "launch/**/*.sh"],
    "fsdp2": ["fsdp2/**/*.py"], "plan": ["plan/**/*.plan.yaml"],
}
SEEDS = {name: sorted({p for pattern in patterns for p in FIXTURES.glob(pattern)
                       if p.is_file() and p.stat().st_size < 20_000})[::3][:12]
         for name, patterns in PATTERNS.items()}
TARGETS = api.targets()
FUZZ = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                     HealthCheck.data_too_large,
                                                                     HealthCheck.function_scoped_fixture])


@st.composite
def mutated_fixture(draw, seeds):
    path = draw(st.sampled_from(seeds))
    text = draw(mutated_documents([path.read_text(encoding="utf-8", errors="replace")]))
    return path.name, text, draw(st.sampled_from(TARGETS))


@pytest.mark.parametrize("dialect", sorted(PATTERNS))
def test_mutated_fixtures_of_every_format_never_raise(dialect, tmp_path):
    seeds = SEEDS[dialect]
    if not seeds:
        pytest.skip(f"no {dialect} fixtures")

    @FUZZ
    @given(case=mutated_fixture(seeds))
    def run(case):
        name, text, target = case
        path = tmp_path / name
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        options = api.resolve_options(isolated=True, min_severity="info")
        result = api.run([str(path)], options)
        for finding in result.findings:
            assert finding.line >= 1 and finding.column >= 1, finding
            json.dumps(finding.to_json())
        try:
            migration = api.convert(str(path), target)
        except api.ShardshiftError as error:
            assert error.message
            return
        migration.text.encode("utf-8", "surrogatepass")

    run()
