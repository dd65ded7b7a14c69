"""FS047's join verdict (rules/fsdp2/meshes.py: join_problem) against torch's own DeviceMesh._concatenate.

Generated scripts build two meshes (one root or two, literal shapes over 8 to 32 ranks, slices by
dims in order) and hand one to distribute_module and one to fully_shard; the reader's Mesh values of
those calls are judged by join_problem, and a child Python on a fake 32-rank process group builds the
same meshes and joins them as fully_shard's TP path does. Both must agree: "ranks", "overlap" or "".
"""

from __future__ import annotations

import ast
import itertools
import json
import random
import subprocess
import sys

import pytest

from oracles import require_installed

pytestmark = pytest.mark.oracle

SHAPES = [(32,), (4, 8), (8, 4), (2, 16), (2, 2, 8), (2, 4, 4), (8,), (2, 4), (16,), (4, 4), (2, 2, 2, 2)]

CHILD = r"""
import json, sys
import torch.distributed as dist
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
from torch.testing._internal.distributed.fake_pg import FakeStore

dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=32)
out = []
for case in json.loads(sys.stdin.read()):
    space = {"init_device_mesh": lambda d, s, mesh_dim_names: init_device_mesh("cpu", s, mesh_dim_names=mesh_dim_names)}
    exec(case, space)
    try:
        DeviceMesh._concatenate([space["dp"], space["tp"]])
        out.append("")
    except RuntimeError as error:
        out.append("ranks" if "different device meshs" in str(error) else "overlap" if "overlapping" in str(error)
                   else str(error))
print(json.dumps(out))
"""


def _slice(name: str, shape: tuple[int, ...], prefix: str, rng: random.Random) -> str:
    dims = [f"{prefix}{i}" for i in range(len(shape))]
    picked = sorted(rng.sample(range(len(dims)), rng.randint(1, len(dims))))
    if len(picked) == len(dims) and rng.random() < 0.5:
        return name
    return f"{name}[{', '.join(repr(dims[i]) for i in picked)}]"


def _cases(count: int) -> list[str]:
    rng = random.Random(20261206)
    cases = []
    for _ in range(count):
        a, b = rng.choice(SHAPES), rng.choice(SHAPES)
        names_a = tuple(f"a{i}" for i in range(len(a)))
        names_b = tuple(f"b{i}" for i in range(len(b)))
        lines = [f"a = init_device_mesh('cuda', {a!r}, mesh_dim_names={names_a!r})"]
        one_root = rng.random() < 0.5
        if not one_root:
            lines.append(f"b = init_device_mesh('cuda', {b!r}, mesh_dim_names={names_b!r})")
        lines.append(f"dp = {_slice('a', a, 'a', rng)}")
        lines.append(f"tp = {_slice('a', a, 'a', rng) if one_root else _slice('b', b, 'b', rng)}")
        cases.append("\n".join(lines) + "\n")
    return cases


def test_fs047_join_verdict_agrees_with_torch_on_generated_meshes():
    require_installed("torch")
    from shardshift.formats.fsdp2 import reader as R
    from shardshift.rules.fsdp2.meshes import join_problem

    cases = _cases(400)
    ours = []
    for case in cases:
        script = ("from torch.distributed.device_mesh import init_device_mesh\n"
                  "from torch.distributed.fsdp import fully_shard\n"
                  "from torch.distributed.tensor import distribute_module\n" + case +
                  "distribute_module(model, tp)\nfully_shard(model, mesh=dp)\n")
        analysis = R.analyse(script)
        tp = analysis.of("dtensor")[0].kwargs["device_mesh"]
        dp = analysis.of("fully_shard")[0].kwargs["mesh"]
        ours.append(join_problem(dp, tp))
    child = subprocess.run([sys.executable, "-c", CHILD], input=json.dumps(cases), capture_output=True, text=True,
                           timeout=600)
    assert child.returncode == 0, child.stderr[-3000:]
    torch_says = json.loads(child.stdout.strip().splitlines()[-1])
    differ = [(case, mine, theirs) for case, mine, theirs in zip(cases, ours, torch_says) if mine != theirs]
    assert differ == []
    assert {k: len(list(g)) for k, g in itertools.groupby(sorted(torch_says))}.keys() == {"", "ranks", "overlap"}


GLOO_CHILD = r"""
import os, sys
import torch, torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn


def run(rank, port, queue):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=4)
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    try:
        mesh = init_device_mesh("cpu", (2,))
        model = nn.Sequential(nn.Linear(4, 4))
        fully_shard(model, mesh=mesh)
        model(torch.zeros(1, 4)).sum().backward()
        queue.put((rank, ""))
    except Exception as error:
        queue.put((rank, f"{type(error).__name__}: {error}"))
    dist.destroy_process_group()


if __name__ == "__main__":
    import socket
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    queue = mp.get_context("spawn").SimpleQueue()
    procs = [mp.get_context("spawn").Process(target=run, args=(rank, port, queue)) for rank in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    print(sorted(queue.get() for _ in range(4)))
"""


def test_a_mesh_smaller_than_the_world_fails_fully_shard_on_the_ranks_outside_it(tmp_path):
    """FS019's claim for a smaller mesh, with a real backend: four gloo processes, a mesh of two; ranks 0 and 1
    train a step, ranks 2 and 3 (outside the mesh) get IndexError from fully_shard."""
    require_installed("torch")
    (tmp_path / "child.py").write_text(GLOO_CHILD, encoding="utf-8")
    child = subprocess.run([sys.executable, str(tmp_path / "child.py")], capture_output=True, text=True, timeout=300)
    assert child.returncode == 0, child.stderr[-3000:]
    outcomes = dict(ast.literal_eval(child.stdout.strip().splitlines()[-1]))
    assert outcomes[0] == outcomes[1] == ""
    assert outcomes[2].startswith("IndexError") and outcomes[3].startswith("IndexError"), outcomes
