"""DS454 autotp-partition-config-refused: what DeepSpeed's AutoTP refuses when autotp_size > 1. DeepSpeed's
own `_apply_autotp_partitioning` reaches each bad fixture's site (tests/test_coverage_map.py,
`stage=autotp`); the shape checks are compared with DeepSpeed's TPLayerSpec here."""

from __future__ import annotations

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
            "bad_partition_type.json": "/tensor_parallel/partition_config/layer_specs/0/partition_type"}


def test_each_bad_fixture_is_an_error_at_its_key_and_the_good_ones_are_clean():
    _, output = check_json("--select", "DS454", "--isolated", str(RULES))
    found = {f["file"].rsplit("/", 1)[-1]: f for f in output["findings"]}
    bad = sorted(p.name for p in RULES.glob("bad*.json"))
    assert sorted(found) == bad
    for name, finding in found.items():
        assert finding["severity"] == "error"
        assert finding["pointer"] == POINTERS.get(name, "/tensor_parallel/partition_config/layer_specs/0/shape")
    assert found["bad_partition_type.json"]["fix"] == '"column"'


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


@pytest.mark.oracle
def test_the_shape_checks_are_deepspeeds():
    """shape_refusal equals what DeepSpeed's AutoTPConfig.from_dict raises (ValueError's text, or nothing),
    for 3,000 nested shapes of every kind, in one child process (DeepSpeed on the CPU)."""
    shapes = _shapes(3000, seed=454)
    script = (
        "import json, sys, warnings\nwarnings.filterwarnings('ignore')\n"
        "from deepspeed.module_inject.autotp_config import AutoTPConfig\nout = []\n"
        "for shape, dim, kind in json.loads(sys.stdin.read()):\n"
        "    try:\n        AutoTPConfig.from_dict({'layer_specs': [{'patterns': ['x'], 'partition_type': kind, "
        "'shape': shape, 'partition_dim': dim}]}); out.append(None)\n"
        "    except ValueError as error:\n        out.append(str(error))\n"
        "    except Exception as error:\n        out.append('other: ' + type(error).__name__)\n"
        "print(json.dumps(out))\n")
    child = subprocess.run([sys.executable, "-c", script], input=json.dumps(shapes), capture_output=True, text=True,
                           timeout=300, env={**os.environ, "DS_ACCELERATOR": "cpu"})
    assert child.returncode == 0, child.stderr[-3000:]
    real = json.loads(child.stdout.strip().splitlines()[-1])
    messages = set()
    for (shape, dim, kind), raised in zip(shapes, real):
        ours = shape_refusal(shape, dim, kind.lower())
        if raised is not None and raised.startswith("other: "):
            assert ours is None, (shape, dim, kind, raised)  # a TypeError of another line: not claimed
        else:
            assert ours == raised, (shape, dim, kind)
            messages.add(raised)
    assert len(messages) >= 8  # every reachable check of _validate_shape_format, and acceptance, were met
