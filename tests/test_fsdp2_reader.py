"""FSDP2 reader: real-world code styles read into the expected Plan (fixtures/fsdp2/reader), with
positions; read(write(plan)) gives back every field FSDP2 can express; bad input never raises."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shardshift.formats import fsdp2
from shardshift.formats.fsdp2 import reader as fsdp2_reader
from shardshift.formats.fsdp2.writer import DEEPSPEED_SCHEDULERS, TORCH_OPTIMIZER_DEFAULTS
from shardshift.plan import (
    ActivationCheckpointing,
    Offload,
    OffloadTarget,
    Optimizer,
    Plan,
    Precision,
    Scheduler,
    Sharding,
    Unknown,
    World,
)

from conftest import FIXTURES

READER = FIXTURES / "fsdp2" / "reader"
EXPECTED = json.loads((READER / "expected.json").read_text())


def field(plan, dotted):
    value = plan
    for part in dotted.split("."):
        if value is None:
            return None
        value = getattr(value, part)
    if isinstance(value, Unknown):  # its reason and the values of the branches, not where (a path)
        return {"unknown": value.reason, "alternatives": [a.value for a in value.alternatives]}
    return {k: v for k, v in value.to_data().items() if v is not None} if hasattr(value, "to_data") else value


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_real_world_styles(name):
    document = fsdp2.read((READER / name).read_text(), str(READER / name))
    assert document.syntax is None
    wrong = {key: (field(document.plan, key), value) for key, value in EXPECTED[name].items()
             if field(document.plan, key) != value}
    assert not wrong


def test_every_reader_sample_has_expectations():
    assert sorted(p.name for p in READER.glob("*.py")) == sorted(EXPECTED)


def test_settings_are_positioned_at_the_calls_that_set_them():
    text = (READER / "list_and_positional.py").read_text()
    document = fsdp2.read(text, "list_and_positional.py")
    positions = {pointer: (line, column) for pointer, line, column in document.settings()}
    lines = text.splitlines()
    assert lines[positions["/precision/param_dtype"][0] - 1].startswith("policy = MixedPrecisionPolicy(")
    assert "get_cosine_schedule_with_warmup" in lines[positions["/scheduler/warmup_steps"][0] - 1]
    assert lines[positions["/batch/accumulation"][0] - 1] == "gradient_accumulation_steps = 8"
    line, column = positions["/sharding/reshard_after_forward"]
    assert lines[line - 1][column - 1:].startswith("fully_shard(block")


@pytest.mark.parametrize("path,text,expected", [
    ("train.py", "from torch.distributed.fsdp import fully_shard\n", True),
    ("train.py", "model = FullyShardedDataParallel(model)\n", True),
    ("train.py", "import torch.distributed as dist\n", False),
    ("setup.cfg", "fully_shard\n", False),
    ("shard.PY", "fully_shard(model)\n", True),
    ("notes.md", "call fully_shard(model) on the root\n", False),
])
def test_looks_like(path, text, expected):
    assert fsdp2.looks_like(path, text) is expected


@pytest.mark.parametrize("text", [
    "fully_shard(\n",
    "def f(:\n    fully_shard(m)\n",
    "fully_shard(model)\x00\n",
    "x = " + "(" * 300 + "1" + ")" * 300 + "\nfully_shard(model)\n",
    "fully_shard(" + "[" * 2000 + "]" * 2000 + ")\n",
    "def f():\n    return f()\nf()\nfully_shard(f())\n",
    "class A(A):\n    def m(self):\n        return self.m()\nfully_shard(A().m())\n",
    "for fully_shard in fully_shard: fully_shard(fully_shard)\n",
    "fully_shard(model, mesh=init_device_mesh('cuda', (0, -1, 2**80), mesh_dim_names=1))\n",
])
def test_bad_input_never_raises(text):
    document = fsdp2.read(text, "x.py")
    assert document.syntax is not None or document.plan is not None


def test_helpers_calling_helpers_stay_fast():
    """f0 calls f1 twice, f1 calls f2 twice, ...: inlining everything would run 2**40 bodies; the
    reader's work budget keeps it linear (the number of calls it records stays bounded)."""
    lines = ["from torch.distributed.fsdp import fully_shard", "", "def f40(model):", "    fully_shard(model)"]
    for level in range(39, -1, -1):
        lines += [f"def f{level}(model):", f"    f{level + 1}(model.a)", f"    f{level + 1}(model.b)"]
    lines.append("f0(model)")
    text = "\n".join(lines) + "\n"
    document = fsdp2.read(text, "x.py")
    assert document.syntax is None
    assert 1 <= len(fsdp2_reader.analyse(text).of("fully_shard")) < 200_000


SOURCE = (READER / "torchtitan_style.py").read_text()


@given(st.integers(0, len(SOURCE)), st.integers(0, 40), st.text(max_size=8))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_mutated_code_never_raises(start, length, replacement):
    text = SOURCE[:start] + replacement + SOURCE[start + length:]
    document = fsdp2.read(text, "x.py")
    assert (document.syntax is None) == (document.plan is not None)


# --- read(write(plan)) ---------------------------------------------------------------------

numbers = st.floats(1e-6, 10, allow_nan=False).map(lambda x: float(f"{x:.6g}"))
positive = st.integers(1, 64)


def optimizer_strategy():
    def build(name, values):
        defaults = TORCH_OPTIMIZER_DEFAULTS[name]
        optimizer = Optimizer(name=name, lr=values["lr"], decoupled_weight_decay=(name == "AdamW") if name in (
            "Adam", "AdamW") else None)
        if "betas" in defaults:
            optimizer.betas = [values["b1"], values["b2"]]
        if "eps" in defaults:
            optimizer.eps = values["eps"]
        optimizer.weight_decay = values["wd"]
        for key, default in defaults.items():
            if key not in ("lr", "betas", "eps", "weight_decay"):
                optimizer.params[key] = (not default) if isinstance(default, bool) else values["extra"]
        return optimizer

    values = st.fixed_dictionaries({"lr": numbers, "b1": st.sampled_from([0.8, 0.9]), "b2": st.sampled_from([0.95, 0.999]),
                                    "eps": st.sampled_from([1e-8, 1e-6]), "wd": st.sampled_from([0.0, 0.01, 0.1]),
                                    "extra": st.sampled_from([0.0, 0.5, 0.9])})
    return st.builds(build, st.sampled_from(["AdamW", "Adam", "SGD", "Adagrad"]), values)


def scheduler_strategy():
    from shardshift.formats.deepspeed import SCHEDULER_FIELDS

    def build(name, seed):
        params = {}
        for index, (key, default) in enumerate(DEEPSPEED_SCHEDULERS[name].items()):
            if isinstance(default, bool):
                params[key] = bool((seed >> index) & 1)
            elif key == "warmup_type":
                params[key] = "linear" if seed & 1 else "log"
            elif "lr" in key or "ratio" in key or "mom" in key or "rate" in key:
                params[key] = round(0.001 * (1 + (seed + index) % 7), 6)
            else:
                params[key] = 1 + (seed + index) % 50
        scheduler = Scheduler(name=name)
        for source, target in SCHEDULER_FIELDS.get(name, {}).items():
            setattr(scheduler, target, params.pop(source))
        scheduler.params = params
        return scheduler

    torch_cosine = st.builds(lambda t: Scheduler(name="CosineAnnealingLR", params={"T_max": t, "eta_min": 0.0}),
                             positive)
    return st.one_of(st.builds(build, st.sampled_from(sorted(DEEPSPEED_SCHEDULERS)), st.integers(0, 1000)),
                     torch_cosine, st.none())


@st.composite
def expressible_plans(draw):
    stage = draw(st.sampled_from([2, 3]))
    dtype = draw(st.sampled_from(["fp32", "bf16", "fp16"]))
    hybrid = draw(st.booleans())
    offload = draw(st.booleans())
    plan = Plan(
        world=World(world_size=draw(st.none() | positive)),
        sharding=Sharding(stage=stage, reshard_after_forward=draw(st.none() | st.sampled_from([2, 4, 8]))
                          if stage == 3 else None, hybrid=hybrid or None,
                          hybrid_shard_size=draw(positive) if hybrid else None),
        precision=Precision(param_dtype=dtype, reduce_dtype=draw(st.sampled_from(["fp32", "bf16", "fp16"]))),
        gradient_clipping=draw(st.sampled_from([0.0, 0.5, 1.0, 2.5])),
        optimizer=draw(optimizer_strategy()),
        scheduler=draw(scheduler_strategy()),
        activation_checkpointing=ActivationCheckpointing(enabled=True) if draw(st.booleans()) else None,
    )
    plan.batch.micro, plan.batch.accumulation = draw(st.none() | positive), draw(st.none() | positive)
    if offload:
        pin = draw(st.booleans())
        plan.offload = Offload(params=OffloadTarget(device="cpu", pin_memory=pin),
                               optimizer=OffloadTarget(device="cpu", pin_memory=pin))
    if dtype == "fp16":
        if draw(st.booleans()):
            plan.precision.loss_scale = 0.0
            plan.precision.initial_scale_power = draw(st.integers(0, 24))
            plan.precision.loss_scale_window = draw(st.integers(1, 5000))
        else:
            plan.precision.loss_scale = float(draw(st.sampled_from([1, 128, 1024, 3])))
    return plan


def expressible(plan: Plan) -> dict:
    """The fields of a Plan that FSDP2 wrapper code states."""
    sharding, precision, optimizer, scheduler = plan.sharding, plan.precision, plan.optimizer, plan.scheduler
    offload = plan.offload.params
    view = {
        # the module asks torch.distributed for the world size when the Plan did not state it
        "world_size": None if isinstance(plan.world.world_size, Unknown) else plan.world.world_size,
        "stage": sharding.stage,
        "reshard_after_forward": sharding.reshard_after_forward if isinstance(sharding.reshard_after_forward, int)
        and not isinstance(sharding.reshard_after_forward, bool) else None,
        "hybrid": bool(sharding.hybrid), "hybrid_shard_size": sharding.hybrid_shard_size,
        "offload": offload.device if offload else None, "pin_memory": offload.pin_memory if offload else None,
        "param_dtype": precision.param_dtype, "reduce_dtype": precision.reduce_dtype,
        "micro": plan.batch.micro, "accumulation": plan.batch.accumulation,
        "gradient_clipping": plan.gradient_clipping,
        "activation_checkpointing": bool(plan.activation_checkpointing and plan.activation_checkpointing.enabled),
        "optimizer": optimizer.to_data() if optimizer else None,
        "scheduler": scheduler.to_data() if scheduler else None,
    }
    if precision.param_dtype == "fp16":
        static = precision.loss_scale not in (None, 0.0)
        view["loss_scale"] = precision.loss_scale
        view["initial_scale_power"] = None if static else precision.initial_scale_power
        view["loss_scale_window"] = None if static else precision.loss_scale_window
    return view


@given(expressible_plans())
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_read_of_write_gives_the_plan_back(plan):
    text = fsdp2.write(plan)
    document = fsdp2.read(text, "fsdp2_setup.py")
    assert document.syntax is None
    assert expressible(document.plan) == expressible(plan)


def test_reader_never_imports_the_file(tmp_path):
    marker = tmp_path / "imported"
    text = f"import pathlib\npathlib.Path({str(marker)!r}).write_text('x')\nfully_shard(model)\n"
    document = fsdp2_reader.read(text, "x.py")
    assert document.plan is not None and not marker.exists()


# --- facts the catalog rules (FS021-FS028) read -------------------------------------------------


def _events(text, *kinds):
    analysis = fsdp2_reader.analyse(text)
    return [(e.kind, e.line, e.name, e.targets) for e in analysis.events if e.kind in kinds]


def test_weight_ties_are_events_with_both_modules():
    text = ("import torch.nn as nn\n"
            "class M(nn.Module):\n"
            "    def __init__(self):\n"
            "        self.output.weight = self.tok_embeddings.weight\n"
            "        self.config = self.other.config\n"
            "model = build()\n"
            "model.lm_head.weight = model.model.embed_tokens.weight\n"
            "model.norm.weight = model.norm.weight\n"
            "head = model.lm_head\n"
            "head.bias = model.proj.bias\n")
    assert _events(text, "tie") == [
        ("tie", 7, "weight", ["model.lm_head", "model.model.embed_tokens"]),
        ("tie", 10, "bias", ["model.lm_head", "model.proj"]),
        ("tie", 4, "weight", ["self.output", "self.tok_embeddings"]),
    ]


def test_new_parameters_are_events_on_the_resolved_module():
    text = ("import torch\nfrom torch import nn\n"
            "for layer in model.layers:\n"
            "    layer.attn.magnitude = nn.Parameter(torch.ones(4))\n"
            "model.norm.register_parameter('shift', torch.nn.Parameter(torch.zeros(4)))\n"
            "model.norm.register_parameter(name, p)\n"
            "model.scale = torch.ones(4)\n"
            "make().x = nn.Parameter(torch.ones(1))\n")
    assert _events(text, "new_parameter") == [
        ("new_parameter", 4, "magnitude", ["model.layers[*].attn"]),
        ("new_parameter", 5, "shift", ["model.norm"]),
    ]  # `make().x` names no module path


def test_pipelining_clip_and_optimizer_names():
    text = ("import torch, apex\n"
            "from torch.distributed.pipelining import PipelineStage, Schedule1F1B\n"
            "from torch.nn.utils import clip_grad_norm_\n"
            "stage = PipelineStage(module, 0, 2, device)\n"
            "schedule = Schedule1F1B(stage, n_microbatches=4)\n"
            "opt = apex.optimizers.FusedAdam(module.parameters())\n"
            "clip_grad_norm_(module.parameters(), 1.0)\n"
            "model.clip_grad_norm_(1.0)\n")
    analysis = fsdp2_reader.analyse(text)
    assert [(e.kind, e.name) for e in analysis.of("pipeline")] == [("pipeline", "PipelineStage"),
                                                                  ("pipeline", "Schedule1F1B")]
    assert [e.name for e in analysis.of("clip")] == ["torch.nn.utils.clip_grad_norm_", "clip_grad_norm_"]
    assert [e.qualified for e in analysis.of("optimizer")] == ["apex.optimizers.FusedAdam"]


def test_to_empty_keeps_its_arguments():
    analysis = fsdp2_reader.analyse("model.to_empty(device='cuda')\n")
    (event,) = analysis.of("to_empty")
    assert event.targets == ["model"] and event.value("device") == "cuda"


# --- facts the argument-check rules (FS029-FS034, issue 22's coverage map) read -----------------------------


def test_argument_check_events():
    analysis = fsdp2_reader.analyse(
        "import copy\n"
        "from torch.distributed.device_mesh import DeviceMesh, init_device_mesh\n"
        "from torch.distributed.fsdp import DataParallelMeshDims, fully_shard, share_comm_ctx\n"
        "mesh = init_device_mesh('cuda', (4, 8), mesh_dim_names=('r', 's'), backend_override={0: 'nccl'})\n"
        "def wrap(model):\n"
        "    sub = mesh['s']\n"
        "    other = DeviceMesh('cuda', [[0, 1], [2, 3]])\n"
        "    fully_shard(model, mesh=sub, dp_mesh_dims=DataParallelMeshDims('s'))\n"
        "    model.set_reduce_scatter_max_input_buffers(0)\n"
        "    model.set_modules_to_forward_prefetch([model.norm])\n"
        "    share_comm_ctx([model])\n"
        "    twin = copy.deepcopy(model)\n")
    kinds = [(e.kind, e.line) for e in analysis.events if e.kind != "call"]
    assert kinds == [("mesh", 4), ("mesh_slice", 6), ("device_mesh", 7), ("policy", 8), ("fully_shard", 8),
                     ("fsdp_method", 9), ("fsdp_method", 10), ("share_comm_ctx", 11), ("deepcopy", 12)]
    mesh, sliced, constructed, dims, shard, buffers, prefetch, share, copied = (
        e for e in analysis.events if e.kind != "call")
    assert mesh.texts["backend_override"] == "{0: 'nccl'}" and mesh.kwargs["mesh"].root
    assert sliced.kwargs["names"].value == "s" and sliced.kwargs["mesh"].dims == (("r", 4), ("s", 8))
    assert not shard.kwargs["mesh"].root and shard.kwargs["mesh"].dims == (("s", 8),)
    assert constructed.texts["mesh"] == "[[0, 1], [2, 3]]"
    assert dims.name == "dp_mesh_dims" and dims.kwargs["shard"].value == "s"
    assert shard.kwargs["dp_mesh_dims"].kind == "dp_mesh_dims"
    assert (buffers.name, buffers.targets, buffers.kwargs["max_input_buffers"].value) == (
        "set_reduce_scatter_max_input_buffers", ["model"], 0)
    assert [p.path for p in prefetch.kwargs["modules"].items] == ["model.norm"]
    assert [p.path for p in share.kwargs["modules"].items] == ["model"]
    assert copied.targets == ["model"]


def test_another_librarys_fully_sharded_data_parallel_is_not_torchs_fsdp1(tmp_path):
    """Megatron-LM's FSDP adapter (and fairscale's wrapper) share the name of torch's FSDP1 class: FS007's claims
    (FSDP1 is deprecated in torch) are about torch's only."""
    from conftest import check_json

    cases = {"torch_fsdp1.py": "from torch.distributed.fsdp import FullyShardedDataParallel",
             "torch_module.py": "import torch.distributed.fsdp as fsdp\nFullyShardedDataParallel = None",
             "megatron.py": "from megatron.core.distributed import FullyShardedDataParallel",
             "fairscale.py": "from fairscale.nn import FullyShardedDataParallel"}
    for name, imports in cases.items():
        call = "fsdp.FullyShardedDataParallel" if "torch_module" in name else "FullyShardedDataParallel"
        (tmp_path / name).write_text(f"{imports}\n\n\ndef wrap(model):\n    return {call}(module=model)\n")
    _, out = check_json(*(str(tmp_path / n) for n in cases), "--select", "FS007", "--isolated")
    assert sorted(f["file"].rsplit("/", 1)[-1] for f in out["findings"]) == ["torch_fsdp1.py", "torch_module.py"]
