"""DeepSpeed round trip: read -> write -> read gives the same Plan, and write is idempotent.

Over every ds_config among the fixtures and the shared corpus, and over generated Plans
(tests/strategies.py). A same-format round trip must also keep what DeepSpeed sees: the written
file holds the same settings as the source once legacy spellings are renamed.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from shardshift import formats
from shardshift.formats import deepspeed

from conftest import FIXTURES, corpus_files, needs_corpus
from strategies import deepspeed_plans


def _fixture_configs() -> list[Path]:
    found = []
    for path in sorted(FIXTURES.rglob("*.json")):
        text = path.read_text(encoding="utf-8-sig", errors="replace")
        if formats.detect(str(path), text) == deepspeed.FORMAT:
            found.append(path)
    return found


@lru_cache(maxsize=None)
def _read(path: Path):
    return deepspeed.read(path.read_text(encoding="utf-8-sig"), str(path))


# Files that parse (the others are unparseable on purpose, or templates with placeholders).
FIXTURE_CONFIGS = [p for p in _fixture_configs() if _read(p).plan is not None]
ALL_CORPUS_CONFIGS = corpus_files("deepspeed")
CORPUS_CONFIGS = [p for p in ALL_CORPUS_CONFIGS if _read(p).plan is not None]


def _plan_diff(a, b) -> str:
    left, right = a.to_data(), b.to_data()
    return "\n".join(f"{k}: {left[k]!r}\n  -> {right[k]!r}" for k in left if left[k] != right[k])


def assert_round_trip(plan) -> str:
    """read(write(plan)) == plan and write(read(write(plan))) == write(plan); returns the text, which
    is also plain JSON in UTF-8 (what json.load-based loaders such as Transformers read)."""
    text = deepspeed.write(plan)
    assert json.loads(text) == deepspeed.write_dict(plan)
    text.encode("utf-8")  # no lone surrogates
    again = deepspeed.read(text, "<written>")
    assert again.syntax is None, f"the writer's output does not parse: {again.syntax}\n{text}"
    assert again.plan == plan, _plan_diff(plan, again.plan)
    assert deepspeed.write(again.plan) == text
    return text


def _same_settings(written: dict, source: dict) -> list[str]:
    """Differences between what the writer wrote and the (renamed) source, except the ones that mean
    the same to DeepSpeed: an fp16/bf16 `enabled: false` is the default and may be dropped or added,
    and a scheduler always gets `params` (DeepSpeed calls it with **params). 1 and 1.0 are the same
    value (DeepSpeed's hjson loader reads both as 1); true and 1 are not."""
    problems: list[str] = []

    def visit(a, b, pointer):
        if isinstance(a, dict) and isinstance(b, dict):
            for key in a.keys() | b.keys():
                here = f"{pointer}/{key}"
                if key not in a or key not in b:
                    extra = a.get(key, b.get(key))
                    if here in ("/fp16/enabled", "/bf16/enabled") and extra is False:
                        continue
                    if here in ("/fp16", "/bf16") and extra in ({"enabled": False}, {}):
                        continue
                    if here == "/scheduler/params" and key in a and extra == {}:
                        continue
                    problems.append(f"{here}: {'only written' if key in a else 'lost'} ({extra!r})")
                else:
                    visit(a[key], b[key], here)
        elif a != b or isinstance(a, bool) != isinstance(b, bool):
            problems.append(f"{pointer}: written {a!r}, source {b!r}")

    visit(written, source, "")
    return problems


@pytest.mark.parametrize("path", FIXTURE_CONFIGS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fixture_round_trip(path):
    assert_round_trip(_read(path).plan)


@pytest.mark.parametrize("path", FIXTURE_CONFIGS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fixture_write_keeps_settings(path):
    document = _read(path)
    normalised, _ = deepspeed._normalise(document.data)
    assert _same_settings(json.loads(deepspeed.write(document.plan)), normalised) == []


@needs_corpus
@pytest.mark.corpus
@pytest.mark.parametrize("path", CORPUS_CONFIGS, ids=lambda p: p.name)
def test_corpus_round_trip(path):
    document = _read(path)
    assert_round_trip(document.plan)
    normalised, _ = deepspeed._normalise(document.data)
    assert _same_settings(json.loads(deepspeed.write(document.plan)), normalised) == []


@needs_corpus
def test_corpus_is_mostly_readable():
    """Guards the parametrisation above against silently dropping most of the corpus."""
    assert len(CORPUS_CONFIGS) >= 0.8 * len(ALL_CORPUS_CONFIGS), f"{len(CORPUS_CONFIGS)} of {len(ALL_CORPUS_CONFIGS)}"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(deepspeed_plans())
def test_generated_plan_round_trip(plan):
    assert_round_trip(plan)


# --- cases found while building these tests (each a bug that was fixed) ---------------------

SOURCE_KEPT = [
    # scheduler params of the wrong JSON type were coerced by pydantic ("1e-5" -> 1e-05, true -> 1)
    '{"scheduler": {"type": "WarmupLR", "params": {"warmup_min_lr": "1e-5", "warmup_num_steps": true}}}',
    '{"scheduler": {"type": "WarmupDecayLR", "params": {"total_num_steps": "100", "warmup_max_lr": 0.001}}}',
    # a non-object params crashed the writer (TypeError)
    '{"optimizer": {"type": "Adam", "params": [1]}}',
    '{"scheduler": {"type": "WarmupLR", "params": "x"}}',
    # the writer added "params": {} to an optimizer that had none
    '{"optimizer": {"type": "Adam"}}',
    '{"optimizer": {"type": "AdamW", "params": {}}}',
    # legacy cpu_offload replaced a non-object offload_optimizer value
    '{"zero_optimization": {"stage": 2, "cpu_offload": true, "offload_optimizer": "cpu"}}',
    # fp32 replaced a non-object bf16 value with {"enabled": false}
    '{"fp16": {"enabled": false}, "bf16": "x"}',
    # a lone surrogate made the written text unencodable as UTF-8
    '{"train_batch_size": 8, "x\\ud800": "\\udc00"}',
]


@pytest.mark.parametrize("text", SOURCE_KEPT)
def test_source_settings_kept(text):
    document = deepspeed.read(text)
    written = assert_round_trip(document.plan)
    normalised, _ = deepspeed._normalise(document.data)
    assert _same_settings(json.loads(written), normalised) == []


def test_scheduler_without_params_still_gets_params():
    """DeepSpeed calls the scheduler with **params, so the writer always writes them."""
    written = json.loads(deepspeed.write(deepspeed.read('{"scheduler": {"type": "WarmupLR"}}').plan))
    assert written["scheduler"] == {"type": "WarmupLR", "params": {}}


def test_an_empty_scheduler_block_round_trips():
    """Found by test_fuzz: `{"scheduler": {}}` kept the block in the passthrough while the writer
    writes it with empty params, so the Plan read back differed."""
    document = deepspeed.read('{"scheduler": {}}', "ds_config.json")
    again = deepspeed.read(deepspeed.convert(document).text, "written.json")
    assert again.plan == document.plan and document.plan.scheduler is not None
