"""No value type makes shardshift raise: real files with a value replaced by one of another type.

For every format shardshift reads — DeepSpeed ds_config (JSON, HJSON), a JSON file of HF training
arguments, Accelerate, Axolotl and Plan YAML, torchtitan TOML, Megatron argument lists and launch
scripts, other launch scripts, FSDP2 code and Python training scripts — real files (fixtures and
../shared/corpus) get the value at a key path (or a value word, or a Python literal) replaced by a
value of every other YAML/JSON/TOML type (tests/type_substitution.py says which), are written in
their format, and go through `shardshift.check` and `shardshift.convert` in process: findings or a
clean refusal (ShardshiftError), never an exception.

Two parts, both deterministic and bounded (the module runs in ~15 s):
- a sweep of a few representative files per format: every key × every type class, the keys of a
  file split into a few groups, each group substituted at once with the types rotated over it (a
  Latin square: over the rotations every key gets every type), checked, and every other document
  converted to one target, the targets in turn;
- a hypothesis test over a wider pool (fixtures and every Nth corpus file of each folder): one
  place, one value, check and convert to every target.
tests/type_substitution.py run as a script does the full sweep (every place of every file).
"""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from type_substitution import (
    CORPUS,
    FIXTURES,
    HUGE,
    LITERALS,
    WORDS,
    Case,
    corpus_cases,
    dump_structured,
    exercise,
    expressible,
    fixture_case,
    fixture_cases,
    load_structured,
)

# One value of each type class for the sweep (the hypothesis test draws from every value).
SWEEP_VALUES = [None, True, 7, -1, HUGE, 0.5, math.nan, math.inf, "", "auto", [], {}, [1, "a", None],
                {"k": {"n": [None, {}]}}]
SWEEP_WORDS = ["0", "-1", "1.5", "1e400", "nan", str(HUGE), "true", "None", "auto", "''", "'[1, 2]'",
               "'{\"a\": 1}'", "$UNSET_SHARDSHIFT_VAR"]
SWEEP_LITERALS = ["None", "True", "-1", str(HUGE), "0.5", "1e999", "float('nan')", "'auto'", "''", "[]", "{}",
                  "[1, 'a', None]", "{'a': {'b': [None]}}", "(1, 2)"]
GROUPS = 3  # a file's places are split into this many groups, each substituted at once


def _case(relative: str) -> Case:
    return fixture_case(FIXTURES / relative)


REPRESENTATIVE = {
    "deepspeed-json": _case("deepspeed/hf_trainer_zero3_auto.json"),
    "deepspeed-hjson": _case("deepspeed/hjson/braceless.hjson"),
    "training-arguments-json": Case(FIXTURES / "setups/consumers/json_arguments", "train_args/sft/full.json",
                                    keep_folder=True),
    "accelerate-yaml": _case("accelerate/fsdp.yaml"),
    "accelerate-deepspeed-yaml": _case("accelerate/deepspeed_inline.yaml"),
    "axolotl-yaml": _case("axolotl/lora.yaml"),
    "torchtitan-toml": _case("launch/torchtitan/good/llama3_8b.toml"),
    "plan-yaml": _case("plan/PL101/good.plan.yaml"),
    "megatron-script": _case("megatron/llama_8b_tp2_pp2.sh"),
    "launch-deepspeed": _case("launch/hf_deepspeed/good/run.sh"),
    "launch-torchtitan": _case("launch/torchtitan/good/run_train.sh"),
    "fsdp2-python": _case("fsdp2/reader/pytorch_examples_style.py"),
    "training-script-python": _case("setups/consumers/dataclass_defaults/train.py"),
}
MEGATRON_ARGS = sorted(CORPUS.glob("megatron/*.args"))
if MEGATRON_ARGS:
    REPRESENTATIVE["megatron-args"] = Case(MEGATRON_ARGS[0].parent, MEGATRON_ARGS[0].name)


def sweep_values(case: Case) -> list:
    if case.shape == "python":
        return SWEEP_LITERALS
    if case.shape == "words":
        return SWEEP_WORDS
    return [v for v in SWEEP_VALUES if expressible(case.shape, v)]


def test_every_format_has_a_representative():
    shapes = {case.shape for case in REPRESENTATIVE.values()}
    assert shapes >= {"json", "hjson", "yaml", "toml", "words", "python"}
    for name, case in REPRESENTATIVE.items():
        assert case.path.is_file(), name
        assert case.places(), f"{name}: no place to substitute in {case.name}"


@pytest.mark.parametrize("name", sorted(REPRESENTATIVE))
def test_every_key_every_type(name, tmp_path):
    """Every place of a representative file gets every type class: places in GROUPS groups (every
    GROUPS-th place, so that a section and its first key fall in different groups), each group
    substituted at once with the type rotated along it, one rotation per type."""
    from shardshift import api

    case = REPRESENTATIVE[name]
    places, values = case.places(120), sweep_values(case)
    targets = api.targets()
    counter = itertools.count()
    for group in range(GROUPS):
        chosen = places[group::GROUPS]
        for rotation in range(len(values)):
            n = next(counter)
            assigned = {place: values[(i + rotation) % len(values)] for i, place in enumerate(chosen)}
            text = case.substituted_each(assigned)
            if text is None:
                continue
            exercise(case, text, tmp_path / f"r{n % 2}", world_size=(None, 8)[n % 2],
                     targets=[targets[n // 2 % len(targets)]] if n % 2 == 0 else [])


# --- hypothesis: one place, one value, every target -----------------------------------------------

def _pool() -> list[Case]:
    out: list[Case] = list(REPRESENTATIVE.values())
    for folder, every in (("deepspeed", 25), ("accelerate", 8), ("axolotl", 8), ("torchtitan", 4), ("gpt-neox", 5),
                          ("megatron", 5), ("megatron-scripts", 5), ("fsdp2", 4)):
        out += corpus_cases(folder)[::every]
    return out + fixture_cases("plan", "launch/accelerate/good", "launch/axolotl/good", "launch/sbatch",
                               "fsdp2/unknown", "setups/accelerate_clean", "setups/axolotl_auto",
                               "setups/consumers/absolute_path", "deepspeed/hjson")


POOL = _pool()
ANY_VALUE = st.recursive(st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
                         | st.floats() | st.text(max_size=6),
                         lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                                       max_size=3),
                         max_leaves=6)


@settings(derandomize=True, max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_substituted_value_gives_findings_not_tracebacks(data, tmp_path):
    case = data.draw(st.sampled_from(POOL), label="case")
    places = case.places(200)
    if not places:
        return
    place = data.draw(st.sampled_from(places), label="place")
    if case.shape == "python":
        value = data.draw(st.sampled_from(LITERALS), label="literal")
    elif case.shape == "words":
        value = data.draw(st.sampled_from(WORDS), label="word")
    else:
        from type_substitution import VALUES

        value = data.draw(st.sampled_from(VALUES) | ANY_VALUE, label="value")
        if not expressible(case.shape, value):
            return
    text = case.substituted([place], value)
    if text is None:
        return
    exercise(case, text, tmp_path / "h", world_size=data.draw(st.sampled_from([None, 8]), label="world"))


def test_pool_covers_every_corpus_folder():
    """The pool reaches each corpus folder (when the corpus is present) and every shape."""
    if CORPUS.is_dir():
        folders = {case.folder.name for case in POOL if case.folder.parent == CORPUS}
        assert folders >= {"deepspeed", "accelerate", "axolotl", "torchtitan", "megatron", "megatron-scripts", "fsdp2"}
    assert {c.shape for c in POOL} >= {"json", "hjson", "yaml", "toml", "words", "python"}


def test_substitution_changes_the_file():
    """The helper really substitutes: each shape's text changes at the chosen place."""
    for name, case in REPRESENTATIVE.items():
        place = case.places()[-1]
        value = sweep_values(case)[-1]
        text = case.substituted([place], value)
        assert text is not None and text != case.text(), name


# --- what the sweep found: each a traceback or a hang before the fix ------------------------------

REGRESSIONS = {
    # rules/megatron/layout.py _divisors counted to n: --num-layers 2**64 + 1 never finished
    "megatron-huge-layers": ("megatron/llama_8b_tp2_pp2.sh", "--num-layers", str(HUGE)),
    # rules/plan/layout.py counted the divisors of the head count up to the count itself
    "megatron-huge-heads": ("megatron/llama_8b_tp2_pp2.sh", "--num-attention-heads", str(HUGE)),
}


def _with_flag(text: str, flag: str, word: str) -> str:
    import re

    changed, count = re.subn(rf"({re.escape(flag)}[ =])\S+", lambda m: m.group(1) + word, text, count=1)
    assert count == 1, flag
    return changed


@pytest.mark.parametrize("name", sorted(REGRESSIONS))
def test_regression_words(name, tmp_path):
    relative, flag, word = REGRESSIONS[name]
    case = _case(relative)
    exercise(case, _with_flag(case.text(), flag, word), tmp_path / "x", world_size=8)


@pytest.mark.parametrize("power", [HUGE, 10**40])
def test_regression_huge_initial_scale_power(power, tmp_path):
    """fsdp2 writer: 2.0 ** power overflowed (OverflowError); megatron writer: 2 ** power never
    finished. Both now keep the power out of the output."""
    from shardshift import api

    case = _case("deepspeed/zero3_offload_fp16.jsonc.json")
    data = load_structured("hjson", case.text())
    data["fp16"] = {**(data.get("fp16") or {}), "enabled": True, "loss_scale": 0, "initial_scale_power": power}
    path = tmp_path / "ds_config.json"
    path.write_text(dump_structured("json", data))
    for to in ("fsdp2", "megatron"):
        migration = api.convert(str(path), to)
        assert str(power) not in migration.text, to


@pytest.mark.parametrize("value", [7, "x", [1], {"a": 1}])
def test_regression_torchtitan_section_written_as_value(value, tmp_path):
    """The torchtitan writer read `[parallelism]`, `[model]` and `[activation_checkpoint]` of the
    source as tables: a value there was AttributeError / TypeError."""
    from shardshift import api

    case = _case("launch/torchtitan/good/llama3_8b.toml")
    data = load_structured("toml", case.text())
    for section in ("parallelism", "activation_checkpoint", "model"):
        changed = {**data, section: value}
        path = tmp_path / section / "llama3_8b.toml"
        path.parent.mkdir()
        path.write_text(dump_structured("toml", changed))
        api.check(str(path), isolated=True)
        for to in api.targets():
            try:
                api.convert(str(path), to)
            except api.ShardshiftError:
                pass


@pytest.mark.parametrize("optim", ["['sgd']", "{'a': 1}"])
def test_regression_training_arguments_optim_unhashable(optim, tmp_path):
    """DS439 looked a list or dict `optim=` up in a dict: TypeError."""
    case = _case("setups/consumers/absolute_path/train.py")
    text = case.text().replace('optim="adafactor"', f"optim={optim}")
    assert text != case.text()
    exercise(case, text, tmp_path / "x")
