"""DS454 autotp-partition-config-refused: what DeepSpeed's AutoTP refuses when autotp_size > 1. DeepSpeed's
own `_apply_autotp_partitioning` reaches each bad fixture's site (tests/test_coverage_map.py,
`stage=autotp`); the shape checks are compared with DeepSpeed's TPLayerSpec here."""

from __future__ import annotations

import itertools
import json
import os
import random
import subprocess
import sys

import pytest

from shardshift.rules.deepspeed.tensor_parallel import shape_refusal

from conftest import FIXTURES, check_json

RULES = FIXTURES / "deepspeed" / "rules" / "DS454"
POINTERS = {"bad_tp_size.json": "/tensor_parallel/tp/tp_size",
            "bad_partition_type.json": "/tensor_parallel/partition_config/layer_specs/0/partition_type",
            "bad_gather_output.json": "/tensor_parallel/partition_config/layer_specs/0/gather_output",
            "bad_liger.json": "/tensor_parallel/vocab_parallel_ce_backend"}
# raised for the first weight a spec's patterns match: whether the model has one is not in the config
MODEL_DEPENDENT = {"bad_gather_output.json", "bad_inferred_dims.json"}


def test_each_bad_fixture_is_reported_at_its_key_and_the_good_ones_are_clean():
    _, output = check_json("--select", "DS454", "--isolated", str(RULES))
    found = {f["file"].rsplit("/", 1)[-1]: f for f in output["findings"]}
    bad = sorted(p.name for p in RULES.glob("bad*.json"))
    assert sorted(found) == bad
    for name, finding in found.items():
        assert finding["severity"] == ("info" if name in MODEL_DEPENDENT else "error"), name
        assert (finding.get("unknown_context") is not None) == (name in MODEL_DEPENDENT), name
        assert finding["pointer"] == POINTERS.get(name, "/tensor_parallel/partition_config/layer_specs/0/shape")
    assert found["bad_partition_type.json"]["fix"] == '"column"'


@pytest.mark.parametrize("head, partition, severity", [(False, True, "error"), (False, False, "error"),
                                                       (None, True, "error"), (None, False, "info"),
                                                       (True, True, None), (True, False, None)])
def test_the_liger_backend_needs_the_vocabulary_parallel_head(tmp_path, head, partition, severity):
    """Unset, the head is built only where the model's HF tp_plan asks for it, a path a partition_config
    bypasses: there the backend fails for sure."""
    config = json.loads((RULES / "bad_liger.json").read_text())
    section = config["tensor_parallel"]
    section.pop("vocab_parallel_lm_head")
    if head is not None:
        section["vocab_parallel_lm_head"] = head
    if not partition:
        section.pop("partition_config")
    (tmp_path / "ds.json").write_text(json.dumps(config))
    _, output = check_json("--select", "DS454", "--isolated", str(tmp_path / "ds.json"))
    assert [f["severity"] for f in output["findings"]] == ([severity] if severity else [])


def test_nothing_is_read_without_autotp(tmp_path):
    config = json.loads((RULES / "bad.json").read_text())
    for size in (0, 1, "auto"):
        config["tensor_parallel"]["autotp_size"] = size
        (tmp_path / "ds.json").write_text(json.dumps(config))
        _, output = check_json("--select", "DS454", "--isolated", str(tmp_path / "ds.json"))
        assert output["findings"] == []


def _shapes(count: int, seed: int) -> list:
    """Nested shapes of every kind (ints around the edges, floats, strings, null, booleans, lists up to
    three deep), with each partition_dim and partition_type."""
    rng = random.Random(seed)
    atoms = [-3, -2, -1, 0, 1, 2, 5, 0.5, 2.5, "x", None, True, False]

    def shape(depth: int):
        if depth == 0 or rng.random() < 0.35:
            return rng.choice(atoms)
        return [shape(depth - 1) for _ in range(rng.randint(0, 3))]

    cases = [(shape(3), rng.choice([None, -1, 0, 1, 2]), rng.choice(["column", "row", "skip", "ROW"]))
             for _ in range(count)]
    return [case for case in cases if case[0] is not None]


def _findings_of(config: dict) -> list:
    """DS454's findings on a ds_config, in this process (thousands of cases: no CLI per case)."""
    from shardshift.formats.deepspeed.reader import read
    from shardshift.rules.base import Context
    from shardshift.rules.deepspeed.tensor_parallel import AutoTpPartitionConfigRefused

    return list(AutoTpPartitionConfigRefused().check(read(json.dumps(config), "ds.json"), Context()))


@pytest.mark.oracle
def test_the_shape_checks_are_deepspeeds():
    """shape_refusal equals what DeepSpeed's AutoTPConfig.from_dict raises (ValueError's text, or nothing),
    for 3,000 nested shapes of every kind, in one child process (DeepSpeed on the CPU)."""
    # and every all-integer shape of 1 to 4 dimensions over -1, 2 and 4: the dimensions AutoTP infers
    flat = [list(shape) for length in range(1, 5) for shape in itertools.product((-1, 2, 4), repeat=length)]
    shapes = _shapes(3000, seed=454) + [(shape, dim, kind) for shape in flat for dim in (None, 0, 1)
                                        for kind in ("column", "row")]
    script = (
        "import json, sys, warnings\nwarnings.filterwarnings('ignore')\n"
        "from deepspeed.module_inject.autotp_config import AutoTPConfig\nout = []\n"
        "for shape, dim, kind in json.loads(sys.stdin.read()):\n"
        "    try:\n        AutoTPConfig.from_dict({'layer_specs': [{'patterns': ['x'], 'partition_type': kind, "
        "'shape': shape, 'partition_dim': dim}]}); out.append(None)\n"
        "    except ValueError as error:\n        out.append(str(error))\n"
        "    except Exception as error:\n        out.append('other: ' + type(error).__name__)\n"
        "from deepspeed.module_inject.autotp_config import TPLayerSpec\n"
        "from deepspeed.module_inject.layers import _infer_subparam_logical_shapes\nweights = []\n"
        "for (shape, dim, kind), refused in zip(json.loads(sys.argv[1]), out):\n"
        "    if refused is not None or kind.lower() == 'skip':\n        weights.append(None); continue\n"
        "    spec = TPLayerSpec(patterns=['x'], partition_type=kind, shape=shape, partition_dim=dim)\n"
        "    try:\n        _infer_subparam_logical_shapes((8, 8), spec.shape, spec.get_partition_dim()); "
        "weights.append('')\n"
        "    except Exception as error:\n        weights.append(str(error))\n"
        "print(json.dumps([out, weights]))\n")
    child = subprocess.run([sys.executable, "-c", script, json.dumps(shapes)], input=json.dumps(shapes),
                           capture_output=True, text=True, timeout=300, env={**os.environ, "DS_ACCELERATOR": "cpu"})
    assert child.returncode == 0, child.stderr[-3000:]
    real, weights = json.loads(child.stdout.strip().splitlines()[-1])
    # what AutoTP then raises for a 2-D weight the spec matches: "multiple inferred dims" exactly where DS454 says
    ambiguous = 0
    for (shape, dim, kind), raised in zip(shapes, weights):
        if raised is None:
            continue
        config = {"tensor_parallel": {"autotp_size": 2, "partition_config": {"layer_specs": [
            {"patterns": ["x"], "partition_type": kind, "shape": shape, "partition_dim": dim}]}}}
        (finding,) = _findings_of(config) or (None,)
        ours = finding is not None and "multiple inferred dims" in finding.message
        assert ours == ("multiple inferred dims" in raised), (shape, dim, kind, raised)
        ambiguous += ours
    assert ambiguous >= 20
    messages = set()
    for (shape, dim, kind), raised in zip(shapes, real):
        ours = shape_refusal(shape, dim, kind.lower())
        if raised is not None and raised.startswith("other: "):
            assert ours is None, (shape, dim, kind, raised)  # a TypeError of another line: not claimed
        else:
            assert ours == raised, (shape, dim, kind)
            messages.add(raised)
    assert len(messages) >= 8  # every reachable check of _validate_shape_format, and acceptance, were met
