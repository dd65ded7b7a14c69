"""The FSDP2 reader on real code (../shared/corpus/fsdp2, 14 files; origins in MANIFEST.tsv): no
traceback, no error-level finding unless named here as a real mistake, and per file the Plan facts a
careful reader finds there: each field right, or Unknown with the reason; nothing guessed. The
corpus is not copied into the project: the test skips without it, and fails without it in CI."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from shardshift.cli import main
from shardshift.formats import fsdp2
from shardshift.plan import Unknown

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "fsdp2"
U = "unknown"

# file prefix -> {field: value, or (U, reason substring), or None (not set)}
FACTS = {
    "NVIDIA-NeMo__Automodel": {
        # blocks sharded in loops with a run-time reshard_after_forward, the root with False: not stage 2
        "sharding.stage": (U, "depends on `isinstance(module, (nn.ModuleList, nn.ModuleDict))` (line 1242)"),
        "precision.param_dtype": (U, "`not mp_policy` (line 425)"),  # default policy only when none is passed
        "offload.params.device": (U, "run-time value `offload_policy`"),
        "activation_checkpointing.enabled": (U, "set only when `activation_checkpointing` (line 382)"),
    },
    "NVIDIA__Megatron-LM": {  # fully_shard from a try/except ImportError import; reshard from the config
        "sharding.stage": (U, "run-time value `getattr(ddp_config, 'reshard_after_forward', True)`"),
        "optimizer.name": None,
    },
    "axolotl-ai-cloud__axolotl": {  # nn.Parameter(...) is no optimizer
        "optimizer.name": None,
        "sharding.stage": (U, "set only when not `is_type_fsdp` (line 564)"),
        "activation_checkpointing.enabled": (U, "`fsdp2_plugin.activation_checkpointing` (line 587)"),
    },
    "huggingface__accelerate__benchmarks": {
        "sharding.stage": 3, "precision.param_dtype": "bf16", "precision.reduce_dtype": "bf16",
        "optimizer.name": "AdamW",  # AdamW in both branches of `if not post_shard_optimizer:`
    },
    "huggingface__accelerate__src": {
        "sharding.stage": (U, "set only when not `is_type_fsdp` (line 756)"),
        "activation_checkpointing.enabled": (U, "set only when"),
    },
    "meta-pytorch__torchtune": {
        "sharding.stage": (U, "run-time value `reshard_after_forward`"),
        "offload.params.device": (U, "set only when `cpu_offload` (line 693)"),
        "offload.optimizer.device": (U, "set only when `cpu_offload` (line 693)"),
    },
    "pytorch__examples__distributed__FSDP2": {
        "sharding.stage": 3, "optimizer.name": "Adam", "optimizer.lr": 0.01,
        "precision.param_dtype": (U, "set only when `args.mixed_precision` (line 68)"),
        "precision.reduce_dtype": (U, "set only when `args.mixed_precision` (line 68)"),
    },
    "pytorch__examples__distributed__tensor_parallelism": {
        "parallelism.tensor": 2, "optimizer.name": "AdamW", "optimizer.lr": 0.003,
        "world.world_size": (U, "run-time mesh shape `(dp_size, tp_size)`"),
    },
    "pytorch__torchtitan__torchtitan__distributed__fsdp": {
        "sharding.stage": (U, "depends on `reshard_after_forward_policy matches 'always'`"),
        "precision.param_dtype": (U, "run-time value `param_dtype`"),
        "offload.params.device": (U, "set only when `cpu_offload` (line 231)"),
    },
    "pytorch__torchtitan__torchtitan__models__flux": {
        "sharding.stage": 3,
        "precision.param_dtype": (U, "run-time value `param_dtype`"),
        "offload.params.device": (U, "set only when `cpu_offload` (line 107)"),
        "activation_checkpointing.enabled": (U, "set only when `ac_config is not None` (line 52)"),
    },
    "pytorch__torchtitan__torchtitan__models__llama3__infra": {
        "sharding.stage": (U, "reshard_after_forward_policy matches"),
        "precision.param_dtype": (U, "run-time value `param_dtype`"),
        "offload.params.device": (U, "set only when `cpu_offload` (line 315)"),
    },
    "pytorch__torchtitan__torchtitan__models__llama3__parallelize": {
        # read alone it only delegates to apply_fsdp_to_decoder, defined in torchtitan/distributed/fsdp.py: nothing
        # is claimed; given with that file, the call is followed (tests/test_fsdp2_linked.py, the corpus case)
        "sharding.stage": None, "precision.param_dtype": None,
    },
    "pytorch__torchtitan__torchtitan__parallelisms": {
        "sharding.stage": (U, "reshard_after_forward_policy"),
        "precision.param_dtype": (U, "run-time value `param_dtype`"),
        "offload.params.device": (U, "set only when `cpu_offload` (line 333)"),
        "activation_checkpointing.enabled": (U, "`ac_config.mode == 'full'` (line 229)"),
    },
    "volcengine__verl": {  # fully_shard behind a torch-version import switch; the policies come from fsdp_kwargs
        "sharding.stage": (U, "run-time value `**fsdp_kwargs`"),
        "precision.param_dtype": (U, "run-time value `**fsdp_kwargs`"),
        "offload.params.device": (U, "run-time value `**fsdp_kwargs`"),
    },
}

# error-level findings that are real mistakes in that code, with why
REAL_ERRORS = {
    # the benchmark's "optimizer_before_fsdp" run builds AdamW before fully_shard on purpose, to measure
    # exactly this bug (without apply_optimizer_fix the optimizer holds the unsharded parameters)
    "huggingface__accelerate__benchmarks": {"FS001"},
}


def corpus_files():
    if not CORPUS.is_dir():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{CORPUS} is missing in CI")
        pytest.skip("the shared corpus is not present")
    return sorted(CORPUS.glob("*.py"))


def _entry(table, path):
    found = [value for prefix, value in table.items() if path.name.startswith(prefix)]
    return found[0] if found else None


def test_every_corpus_file_has_facts():
    files = corpus_files()
    assert len(files) == 14
    assert all(_entry(FACTS, p) is not None for p in files)


@pytest.mark.parametrize("index", range(14))
def test_corpus_file(index, capsys):
    path = corpus_files()[index]
    assert main(["check", "--format", "json", str(path)]) in (0, 1)
    out = json.loads(capsys.readouterr().out)
    errors = {f["code"] for f in out["findings"] if f["severity"] == "error"}
    assert errors <= (_entry(REAL_ERRORS, path) or set()), errors
    document = fsdp2.read(path.read_text(), str(path))
    wrong = {}
    for dotted, expected in _entry(FACTS, path).items():
        value = document.plan.get(dotted)
        if isinstance(expected, tuple):
            if not (isinstance(value, Unknown) and expected[1] in value.reason):
                wrong[dotted] = value
        elif value != expected or isinstance(value, Unknown):
            wrong[dotted] = value
    assert not wrong
    for dotted, _ in document.plan.leaves():
        assert document.plan.provenance[dotted].file == str(path)


@pytest.mark.parametrize("index", range(14))
def test_convert_lists_the_unknowns(index, tmp_path, capsys):
    path = corpus_files()[index]
    plan = fsdp2.read(path.read_text(), str(path)).plan
    code = main(["convert", str(path), "--to", "fsdp2", "-o", str(tmp_path / "out.py")])
    err = capsys.readouterr().err
    if not path.read_text().count("fully_shard") and code:  # not recognised as FSDP2 code: nothing to convert
        return
    for dotted, _ in plan.unknowns():
        assert f"unknown     /{dotted.replace('.', '/')}: " in err
    assert f", {len(plan.unknowns())} unknown" in err.splitlines()[-1]
