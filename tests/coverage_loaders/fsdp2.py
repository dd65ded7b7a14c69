"""Coverage-map loader for FSDP2 (torch 2.13 `fully_shard`): run a fixture's sharding code on the CPU.

As tests/fsdp2_harness/driver.py runs an emitted module (execute it, call its entry with a small
model), `load` executes one of OUR fixtures (fixtures/fsdp2/..., never a user's file) and calls
its entry function with a small transformer, under a "fake" process group (torch's own
single-process backend for simulating a world: the mesh checks see the world size the fixture is
written for, no collective moves data). Device types written as "cuda" become "cpu" (the mesh's
own argument checks still see the text, so "cuda:0" still fails as written). After the entry
returns, the model runs one forward: the first forward is where fully_shard's lazy-init checks
(one root, tied parameters in one group) run.

Options (the map's case column, `key=value`): `world` (default 32, the world every FS fixture is
written for), `call` (the entry function; default: the first top-level function whose first
parameter is `model`, else the module body alone), `tied=1` (the model's output weight is its
embedding's), `forward=0` (skip the forward), `pg=own` (no fake group: the fixture calls
init_process_group itself, on one rank with env:// set up as torchrun would), `accelerator=cuda` (torch
answers as a CUDA build with one GPU would: `torch.accelerator.current_accelerator()` is cuda and
`device_count()` 1, so init_process_group's device_id checks run as on a GPU machine; nothing else is
patched and no CUDA call is made before the check that raises), `backward=1` (the forward's output is summed
and run backward: the first backward's post-backward checks), `symm_mem=nccl` (torch's symmetric memory
accepts the NCCL backend, as a CUDA build with NCCL's symmetric memory does: `set_symm_mem_for_comm()`
builds FSDP's symmetric-memory collectives; nothing else is patched, and the check that raises at the
first forward's lazy init comes before any symmetric allocation), `nccl=1` (torch answers as a build with
NCCL: `is_nccl_available()` is True and `ProcessGroupNCCL` is a stand-in whose `Options` class the NCCL
branch of `_new_process_group_helper` checks `pg_options` against; the check raises, or the stand-in,
which builds no group, refuses to be called, before any NCCL call), `devices=written` (device types stay as
written, "cuda" included: under the fake group init_device_mesh("cuda", ...) builds the mesh without a
GPU, and `torch.cuda.current_device()` answers 0, so fully_shard on a "cuda" mesh gets the device cuda:0
and its device checks run as on a GPU machine; a check that moves a tensor to CUDA still fails on the CPU
build, so this only reaches the checks made before any move), and any other key: an int argument of
the entry.
The entry's `plan` gets an empty TP plan, `stream` a stand-in object, `hook` a no-op.
DTensor's sharding-propagation caches are cleared after each case: they hand a new DTensor the mesh
object of an earlier, equal mesh (one of an earlier fixture), which would decide torch's same-mesh-object
check (FSDPParam._init_sharding_spec_spmd) by what ran before.
"""

from __future__ import annotations

import ast
import inspect
import os
from pathlib import Path


def prepare() -> None:
    os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
    import torch  # noqa: F401
    import torch.distributed as dist  # noqa: F401
    from torch.distributed.device_mesh import init_device_mesh  # noqa: F401
    from torch.distributed.fsdp import fully_shard  # noqa: F401
    from torch.testing._internal.distributed.fake_pg import FakeStore  # noqa: F401


def _model(tied: bool):
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attention = nn.Linear(16, 16)
            self.feed_forward = nn.Linear(16, 16)

        def forward(self, x):
            return x + self.feed_forward(torch.relu(self.attention(x)))

    class Transformer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok_embeddings = nn.Embedding(64, 16)
            self.layers = nn.ModuleList(Block() for _ in range(2))
            self.norm = nn.LayerNorm(16)
            self.output = nn.Linear(16, 64, bias=False)
            if tied:
                self.output.weight = self.tok_embeddings.weight

        def forward(self, tokens):
            h = self.tok_embeddings(tokens)
            for layer in self.layers:
                h = layer(h)
            return self.output(self.norm(h))

    return Transformer()


def _on_cpu(device_type):
    return "cpu" + device_type[4:] if isinstance(device_type, str) and device_type.startswith("cuda") else device_type


def _entry(tree: ast.Module, call: str | None) -> str | None:
    if call:
        return call
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.args.args and node.args.args[0].arg == "model":
            return node.name
    return None


def load(path: Path, world: str = "32", call: str | None = None, tied: str = "0", forward: str = "1",
         pg: str = "fake", accelerator: str = "", backward: str = "0", symm_mem: str = "", nccl: str = "0",
         devices: str = "cpu",
         **arguments: str) -> None:
    import torch
    import torch.distributed as dist
    import torch.distributed._symmetric_memory as symmetric
    from torch.distributed import device_mesh
    from torch.testing._internal.distributed.fake_pg import FakeStore

    if dist.is_initialized():
        dist.destroy_process_group()
    saved = {name: os.environ.get(name) for name in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE")}
    if pg == "own":  # the fixture starts its own process group: one rank, as torchrun --nproc-per-node=1 would
        import socket

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK="0", WORLD_SIZE="1")
    else:
        dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=int(world))
    original = device_mesh.init_device_mesh

    def init_device_mesh(device_type, mesh_shape, *args, **kwargs):
        return original(device_type if devices == "written" else _on_cpu(device_type), mesh_shape, *args, **kwargs)

    text = Path(path).read_text(encoding="utf-8")
    tree = ast.parse(text)
    device_mesh.init_device_mesh = init_device_mesh
    torch.distributed.init_device_mesh = init_device_mesh  # `from torch.distributed import init_device_mesh`
    saved_accelerator = (torch.accelerator.current_accelerator, torch.accelerator.device_count)
    saved_backend = symmetric.set_backend
    c10d = dist.distributed_c10d
    saved_nccl = (c10d.is_nccl_available, c10d.__dict__.get("ProcessGroupNCCL"), dist.__dict__.get("ProcessGroupNCCL"))
    if nccl == "1":
        from torch._C._distributed_c10d import Backend

        class ProcessGroupNCCL:  # a stand-in: its Options is what the NCCL branch checks pg_options against
            class Options(Backend.Options):
                def __init__(self) -> None:
                    super().__init__("nccl")

        c10d.is_nccl_available = lambda: True
        c10d.ProcessGroupNCCL = dist.ProcessGroupNCCL = ProcessGroupNCCL
    if symm_mem:
        symmetric.set_backend = lambda name: None if name.lower() == symm_mem.lower() else saved_backend(name)
    if accelerator:
        torch.accelerator.current_accelerator = lambda *args, **kwargs: torch.device(accelerator)
        torch.accelerator.device_count = lambda: 1
    saved_current_device = torch.cuda.current_device
    if devices == "written":
        torch.cuda.current_device = lambda: 0
    try:
        namespace = {"__name__": f"fixture_{Path(path).parent.name}", "__file__": str(path)}
        exec(compile(tree, str(path), "exec"), namespace)  # noqa: S102 - our own fixture, in the oracle only
        model = _model(tied == "1")
        entry = _entry(tree, call)
        if entry is not None:
            function = namespace[entry]
            given = {"model": model, "plan": {}, "stream": object(), "hook": lambda output: None}
            values = [given[p] if p in given else int(arguments[p]) for p in inspect.signature(function).parameters]
            function(*values)
        if forward == "1":
            output = model(torch.tensor([[1, 2, 3]]))
            if backward == "1":
                output.sum().backward()
    finally:
        from torch.distributed.tensor.debug import _clear_sharding_prop_cache

        _clear_sharding_prop_cache()
        symmetric.set_backend = saved_backend
        c10d.is_nccl_available = saved_nccl[0]
        for module, value in ((c10d, saved_nccl[1]), (dist, saved_nccl[2])):
            if value is None:
                module.__dict__.pop("ProcessGroupNCCL", None)
            else:
                module.ProcessGroupNCCL = value
        torch.accelerator.current_accelerator, torch.accelerator.device_count = saved_accelerator
        torch.cuda.current_device = saved_current_device
        device_mesh.init_device_mesh = original
        torch.distributed.init_device_mesh = original
        if dist.is_initialized():
            dist.destroy_process_group()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
