"""What the FS rules' messages say torch does, checked against torch itself (2.13, CPU).

Every case runs the snippet of a rule's bad (or good) fixture — our own fixtures, with a small
model standing in for `mymodel` — in ONE child Python: gloo, world size 1, `fully_shard` on a
1-rank CPU mesh (a 2-D mesh is 1 x 1). A case records what happened (the exception's type and
text, or the facts it looked at), and the tests assert the behaviour the rule's message states.
Behaviour that needs 2 ranks or a GPU is not run here; RULE_CLAIMS says which rules state a torch
behaviour and which test confirms it (or why none does).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT
from oracles import require_installed

pytestmark = pytest.mark.oracle

# code -> the test that confirms what its message says torch does, or why nothing runs here.
RULE_CLAIMS = {
    "FS001": "test_fs001_optimizer_built_before_keeps_the_original_parameters",
    "FS002": "test_fs002_parameters_outside_every_group_stay_plain_tensors",
    "FS003": "test_fs003_block_after_root_fails",
    "FS004": "test_fs004_unset_reduce_dtype_reduces_in_param_dtype",
    "FS006": "test_fs006_int_not_a_factor_raises_value_error",
    "FS008": "test_fs008_pinned_offload_without_accelerator_fails",
    "FS009": "test_fs009_hsdp_dims_are_chosen_by_position",
    "FS010": "test_fs010_three_dim_mesh_raises_value_error",
    "FS011": "test_fs011_two_dim_mesh_without_names_raises_assertion_error",
    "FS012": "test_fs012_explicit_true_on_the_root_reshards_it_after_forward",
    "FS013": "test_fs013_sharded_grad_scaler_steps_dtensor_gradients_as_grad_scaler_does",
    "FS015": "test_fs015_forward_leaves_the_root_unsharded",
    "FS016": "test_fs016_direct_forward_skips_the_hooks_and_fails",
    "FS018": "test_fs018_setter_raises_value_error_for_an_int",
    "FS019": "test_fs019_mesh_larger_than_the_world_fails",
    "FS021": "test_fs021_tied_parameters_in_two_groups_raise_at_the_first_forward",
    "FS022": "test_fs022_to_empty_does_not_initialise",
    "FS023": "test_fs023_parameter_added_after_fully_shard_is_unmanaged_or_raises",
    "FS024": "test_fs024_fully_shard_always_shards_and_hsdp_needs_a_2d_mesh",
    "FS025": "test_fs025_default_reshard_regathers_for_every_micro_batch",
    "FS026": "test_fs026_clip_grad_norm_uses_the_given_parameters_only",
    "FS027": "test_fs027_root_only_is_one_group",
    "FS028": "test_fs028_offloaded_step_runs_on_cpu_tensors",
    "FS035": "test_fs035_an_fsdp2_module_has_no_wrapper_methods",
    "FS036": "test_fs036_a_meta_module_cannot_be_copied_with_to",
    "FS037": "test_fs037_an_averaged_model_needs_its_copy_sharded",
    "FS043": "test_fs043_replicate_and_fully_shard_refuse_each_other",
}
# Rules whose messages say which argument check of torch raises: confirmed site by site by the coverage map's
# oracle, which runs each rule's bad fixtures through torch on a fake process group of the fixture's world
# (tests/coverage_loaders/fsdp2.py) and asserts torch reaches the check site the map names.
COVERAGE_ORACLE = ("tests/test_coverage_map.py::test_framework_reaches_each_rule_site_on_its_bad_fixture_and_the_rule_"
                   "reports_it[fsdp2]")
COVERAGE_CLAIMS = {code: COVERAGE_ORACLE for code in ("FS029", "FS030", "FS031", "FS032", "FS033", "FS034", "FS038", "FS039",
                                                    "FS040", "FS041", "FS042",
                                                    "FS047", "FS048", "FS049", "FS051")}
# Rules whose messages say how torch fails on a value it computes with unchecked (no check of its own): confirmed
# site by site by the implicit map's oracle, which runs each row's bad and good fixture through torch on a fake
# process group (src/shardshift/data/coverage/fsdp2-implicit.tsv).
IMPLICIT_ORACLE = ("tests/test_coverage_implicit.py::test_fsdp2_fails_at_each_site_on_its_bad_fixture_and_mutation_"
                   "finds_no_other")
IMPLICIT_CLAIMS = {"FS050": IMPLICIT_ORACLE}
# Rules whose messages state no torch behaviour this can run: numerics (FS005, FS014), another
# library or the docs (FS007, FS020), performance over several ranks (FS017).
NO_RUNNABLE_CLAIM = {"FS005": "bf16 accumulation precision", "FS007": "FSDP1 deprecated in the docs",
                     "FS014": "fp16 underflow without a scaler", "FS017": "extra all-gathers on recompute",
                     "FS020": "the Transformers Trainer refuses the combination",
                     "FS044": "a module moved to an accelerator: the CPU build has none to move it to (the "
                              "_validate_cpu_offload_params site stays in scope_fsdp2.NO_RULE_YET)"}

CHILD = textwrap.dedent(r'''
    import json, os, sys, traceback, warnings
    warnings.simplefilter("ignore")
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=sys.argv[2])
    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, fully_shard
    from torch.distributed.fsdp._fully_shard import _fsdp_param_group
    from torch.distributed.tensor import DTensor

    dist.init_process_group("gloo", rank=0, world_size=1)
    MESH = init_device_mesh("cpu", (1,))
    out = {}

    def case(name):
        def run(function):
            try:
                out[name] = {"ok": function()}
            except BaseException as error:  # noqa: BLE001 - what torch raises is the result
                out[name] = {"raised": type(error).__name__, "text": str(error)[:400]}
            return function
        return run

    class Transformer(nn.Module):  # the fixtures' model: embeddings, blocks, norm, tied output
        def __init__(self, tied=True):
            super().__init__()
            self.tok_embeddings = nn.Embedding(16, 8)
            self.layers = nn.ModuleList(nn.Linear(8, 8) for _ in range(2))
            self.norm = nn.LayerNorm(8)
            self.output = nn.Linear(8, 16, bias=False)
            if tied:
                self.output.weight = self.tok_embeddings.weight

        def forward(self, tokens):
            h = self.tok_embeddings(tokens)
            for layer in self.layers:
                h = layer(h)
            return self.output(self.norm(h))

    TOKENS = torch.tensor([[1, 2, 3]])

    def placements(tensor):
        return ["Replicate" if p.is_replicate() else f"Shard({p.dim})" if p.is_shard() else str(p)
                for p in tensor.placements]

    def blocks_then_root(model, **kw):
        for layer in model.layers:
            fully_shard(layer, mesh=MESH, **kw)
        fully_shard(model, mesh=MESH, **kw)
        return model

    Group = _fsdp_param_group.FSDPParamGroup

    class Counter:
        """Counts the unshards that gather a group's parameters (an all-gather on more than one rank;
        on one rank FSDP2 skips the collective itself) and records the dtype of each gradient
        reduction (foreach_reduce reduces in `reduce_dtype or` the gradients' dtype)."""
        def __init__(self):
            self.gathers, self.reduce_dtypes = 0, []
            self.unshard, self.reduce = Group.unshard, _fsdp_param_group.foreach_reduce
        def __enter__(self):
            import inspect
            signature = inspect.signature(self.reduce)
            def unshard(group, *a, **k):
                if group._all_gather_result is None and not group.is_unsharded:
                    self.gathers += 1
                return self.unshard(group, *a, **k)
            def reduce(*a, **k):
                given = signature.bind(*a, **k).arguments
                self.reduce_dtypes.append(str(given["reduce_dtype"] or given["unsharded_grads"][0].dtype))
                return self.reduce(*a, **k)
            Group.unshard, _fsdp_param_group.foreach_reduce = unshard, reduce
            return self
        def __exit__(self, *exc):
            Group.unshard, _fsdp_param_group.foreach_reduce = self.unshard, self.reduce

    # --- FS021 tied-parameters-in-two-groups (fixtures/fsdp2/rules/FS021) ----------------------
    @case("FS021-bad-own-groups")
    def _():
        model = Transformer()
        fully_shard(model.tok_embeddings, mesh=MESH)
        for layer in model.layers:
            fully_shard(layer, mesh=MESH)
        fully_shard(model.output, mesh=MESH)
        fully_shard(model, mesh=MESH)
        out["FS021-sharding-did-not-raise"] = True
        model(TOKENS)

    @case("FS021-bad-embedding-only")
    def _():
        model = Transformer()
        fully_shard(model.tok_embeddings, mesh=MESH)
        fully_shard(model, mesh=MESH)
        model(TOKENS)

    @case("FS021-good-one-call")
    def _():
        model = Transformer()
        for layer in model.layers:
            fully_shard(layer, mesh=MESH)
        fully_shard([model.tok_embeddings, model.output], mesh=MESH)
        fully_shard(model, mesh=MESH)
        model(TOKENS).sum().backward()
        return True

    @case("FS021-good-root")
    def _():
        blocks_then_root(Transformer())(TOKENS).sum().backward()
        return True

    # --- FS022 to-empty-without-initialisation ------------------------------------------------
    @case("FS022-bad")
    def _():
        calls = []
        original = nn.Linear.reset_parameters
        nn.Linear.reset_parameters = lambda self: (calls.append(1), original(self))[1]
        try:
            with torch.device("meta"):
                model = Transformer(tied=False)
            calls.clear()
            blocks_then_root(model)
            model.to_empty(device="cpu")
        finally:
            nn.Linear.reset_parameters = original
        return {"reset_calls": len(calls), "devices": sorted({str(p.device) for p in model.parameters()}),
                "dtensors": all(isinstance(p, DTensor) for p in model.parameters())}

    # --- FS023 parameter-assigned-after-fully-shard -------------------------------------------
    class Block(nn.Linear):  # uses an adapter parameter when one is there (DoRA's magnitude)
        def forward(self, x):
            out = super().forward(x)
            return out * self.magnitude if "magnitude" in self._parameters else out

    def adapted(before):
        model = nn.Sequential(Block(8, 8), Block(8, 8))
        if before:
            model[0].magnitude = nn.Parameter(torch.ones(8))
        fully_shard(model[0], mesh=MESH)
        fully_shard(model, mesh=MESH)
        if not before:
            model[0].magnitude = nn.Parameter(torch.ones(8))
        model(torch.ones(2, 8)).sum().backward()
        managed = [fp.sharded_param for group in [model[0]._get_fsdp_state()._fsdp_param_group] for fp in group.fsdp_params]
        magnitude = model[0].magnitude
        return {"dtensor": isinstance(magnitude, DTensor), "managed": any(p is magnitude for p in managed),
                "has_grad": magnitude.grad is not None}

    @case("FS023-bad-new-name")
    def _():
        return adapted(before=False)

    @case("FS023-good")
    def _():
        return adapted(before=True)

    @case("FS023-bad-register")
    def _():
        model = nn.Sequential(Block(8, 8), Block(8, 8))
        fully_shard(model[0], mesh=MESH)
        fully_shard(model, mesh=MESH)
        model[0].register_parameter("magnitude", nn.Parameter(torch.ones(8)))
        model(torch.ones(2, 8)).sum().backward()
        return {"dtensor": isinstance(model[0].magnitude, DTensor)}

    @case("FS023-bad-replacement")
    def _():
        model = blocks_then_root(Transformer(tied=False))
        model.output.weight = nn.Parameter(torch.randn(16, 8))
        model(TOKENS)

    # --- FS024 fsdp1-strategy-without-plain-equivalent ----------------------------------------
    @case("FS024-no-reshard-still-shards")
    def _():
        model = nn.Linear(8, 8)
        fully_shard(model, mesh=MESH, reshard_after_forward=False)
        return placements(model.weight)

    @case("FS024-hsdp-placements")
    def _():
        mesh = init_device_mesh("cpu", (1, 1), mesh_dim_names=("replicate", "shard"))
        model = nn.Linear(8, 8)
        fully_shard(model, mesh=mesh)
        return placements(model.weight)

    @case("FS024-fsdp1-no-shard-warning")
    def _():
        import inspect
        from torch.distributed.fsdp import _init_utils
        return "The `NO_SHARD` sharding strategy is deprecated" in inspect.getsource(_init_utils)

    # --- FS025 reshard-after-forward-with-pipelining: two micro-batch forwards, then backward --
    def microbatches(**kw):
        model = nn.Sequential(nn.Linear(8, 8), nn.Linear(8, 8))
        fully_shard(model[0], mesh=MESH, **kw)
        fully_shard(model, mesh=MESH, **kw)
        model(torch.ones(2, 8)).sum().backward()  # lazy init and one whole step, not counted
        with Counter() as counter:
            losses = [model(torch.ones(2, 8)).sum() for _ in range(2)]
            gathered_in_forward = counter.gathers
            sum(losses).backward()
        return gathered_in_forward

    @case("FS025-default")
    def _():
        return microbatches()

    @case("FS025-false")
    def _():
        return microbatches(reshard_after_forward=False)

    # --- FS026 clip-grad-norm-per-pipeline-stage -----------------------------------------------
    @case("FS026")
    def _():
        stage = nn.Linear(8, 8)
        other = nn.Linear(8, 8)  # another rank's stage
        for module, value in ((stage, 1.0), (other, 3.0)):
            for p in module.parameters():
                p.grad = torch.full_like(p, value)
        calls = []
        original = dist.all_reduce
        dist.all_reduce = lambda *a, **k: (calls.append(1), original(*a, **k))[1]
        try:
            norm = torch.nn.utils.clip_grad_norm_(stage.parameters(), max_norm=1e9)
        finally:
            dist.all_reduce = original
        stage_norm = torch.linalg.vector_norm(torch.cat([p.grad.flatten() for p in stage.parameters()]))
        return {"norm": float(norm), "stage_norm": float(stage_norm), "all_reduces": len(calls)}

    # --- FS027 only-root-sharded ----------------------------------------------------------------
    @case("FS027")
    def _():
        model = Transformer()
        fully_shard(model, mesh=MESH)
        with Counter() as counter:
            model(TOKENS)
        state = model._get_fsdp_state()
        groups = state._fsdp_param_groups
        return {"groups": len(groups), "in_group": sum(len(g.fsdp_params) for g in groups),
                "parameters": len(list(model.parameters())), "gathers": counter.gathers}

    # --- FS028 cpu-offload-with-gpu-only-optimizer: where the offloaded step runs -----------------
    @case("FS028-good")
    def _():
        model = blocks_then_root(Transformer(tied=False), offload_policy=CPUOffloadPolicy(pin_memory=False))
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, fused=True)
        model(TOKENS).sum().backward()
        before = model.layers[0].weight.to_local().clone()
        optimizer.step()
        return {"param_devices": sorted({str(p.to_local().device) for p in model.parameters()}),
                "grad_devices": sorted({str(p.grad.to_local().device) for p in model.parameters()}),
                "stepped": not torch.equal(before, model.layers[0].weight.to_local())}

    # --- FS030 dp-mesh-dims-refused: the check outside the coverage map's scope (_fsdp_param.py) -------
    @case("FS030-plain")
    def _():
        from torch.distributed.fsdp import DataParallelMeshDims
        mesh = init_device_mesh("cpu", (1,), mesh_dim_names=("dp_shard",))
        fully_shard(nn.Linear(8, 8), mesh=mesh, dp_mesh_dims=DataParallelMeshDims(shard="dp_shard"))

    @case("FS030-distributed")
    def _():
        from torch.distributed.fsdp import DataParallelMeshDims
        from torch.distributed.tensor import distribute_module
        mesh = init_device_mesh("cpu", (1,), mesh_dim_names=("dp_shard",))
        model = nn.Linear(8, 8)
        distribute_module(model, mesh)
        fully_shard(model, mesh=mesh, dp_mesh_dims=DataParallelMeshDims(shard="dp_shard"))
        return placements(model.weight)

    # --- existing rules ------------------------------------------------------------------------
    @case("FS001")
    def _():
        model = Transformer(tied=False)
        optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
        blocks_then_root(model)
        before = model.layers[0].weight.full_tensor().clone()
        model(TOKENS).sum().backward()
        optimizer.step()
        held = [q for g in optimizer.param_groups for q in g["params"]]
        return {"shares_any": any(p is q for p in model.parameters() for q in held),
                "model_changed": not torch.equal(before, model.layers[0].weight.full_tensor())}

    @case("FS001-copied")
    def _():
        model = Transformer(tied=False)
        params = list(model.parameters())
        blocks_then_root(model)
        optimizer = torch.optim.SGD(params, lr=1.0)
        before = model.layers[0].weight.full_tensor().clone()
        model(TOKENS).sum().backward()
        optimizer.step()
        held = [q for g in optimizer.param_groups for q in g["params"]]
        return {"shares_any": any(p is q for p in model.parameters() for q in held),
                "model_changed": not torch.equal(before, model.layers[0].weight.full_tensor())}

    @case("FS001-generator")  # a generator made before sharding reads the module's parameters when consumed
    def _():
        model = Transformer(tied=False)
        params = model.parameters()
        blocks_then_root(model)
        optimizer = torch.optim.SGD(params, lr=1.0)
        held = [q for g in optimizer.param_groups for q in g["params"]]
        return {"all_dtensors": all(isinstance(q, DTensor) for q in held)}

    @case("FS002")
    def _():
        model = Transformer(tied=False)
        for layer in model.layers:
            fully_shard(layer, mesh=MESH)
        return {"blocks": type(model.layers[0].weight).__name__, "embeddings": type(model.tok_embeddings.weight).__name__,
                "head": type(model.output.weight).__name__}

    @case("FS003")
    def _():
        model = Transformer(tied=False)
        fully_shard(model, mesh=MESH)
        for layer in model.layers:
            fully_shard(layer, mesh=MESH)
        model(TOKENS)

    @case("FS003-named-mesh")
    def _():
        named = init_device_mesh("cpu", (1,), mesh_dim_names=("dp_shard",))
        model = Transformer(tied=False)
        fully_shard(model, mesh=named)
        for layer in model.layers:
            fully_shard(layer, mesh=named)
        out["FS003-named-mesh-sharded"] = True
        model(TOKENS)

    @case("FS004")
    def _():
        model = blocks_then_root(Transformer(tied=False), mp_policy=MixedPrecisionPolicy(param_dtype=torch.bfloat16))
        with Counter() as counter:
            model(TOKENS).float().sum().backward()
        return counter.reduce_dtypes

    @case("FS004-good")
    def _():
        model = blocks_then_root(Transformer(tied=False), mp_policy=MixedPrecisionPolicy(
            param_dtype=torch.bfloat16, reduce_dtype=torch.float32))
        with Counter() as counter:
            model(TOKENS).float().sum().backward()
        return counter.reduce_dtypes

    @case("FS006")
    def _():
        fully_shard(nn.Linear(8, 8), mesh=MESH, reshard_after_forward=2)

    @case("FS008")
    def _():
        model = nn.Linear(8, 8)
        fully_shard(model, mesh=MESH, offload_policy=CPUOffloadPolicy())
        model(torch.ones(2, 8))

    @case("FS008-good")
    def _():
        model = nn.Linear(8, 8)
        fully_shard(model, mesh=MESH, offload_policy=CPUOffloadPolicy(pin_memory=False))
        model(torch.ones(2, 8))
        return True

    @case("FS009")
    def _():
        mesh = init_device_mesh("cpu", (1, 1), mesh_dim_names=("shard", "replicate"))
        model = nn.Linear(8, 8)
        fully_shard(model, mesh=mesh)
        info = model._get_fsdp_state()._fsdp_param_group.mesh_info
        return {"shard_dim": info.shard_mesh_dim, "replicate_dim": info.replicate_mesh_dim,
                "placements": placements(model.weight)}

    @case("FS010")
    def _():
        mesh = init_device_mesh("cpu", (1, 1, 1), mesh_dim_names=("dp", "cp", "tp"))
        fully_shard(nn.Linear(8, 8), mesh=mesh)

    @case("FS011")
    def _():
        fully_shard(nn.Linear(8, 8), mesh=init_device_mesh("cpu", (1, 1)))

    @case("FS012")
    def _():
        explicit = Transformer(tied=False)
        for layer in explicit.layers:
            fully_shard(layer, mesh=MESH, reshard_after_forward=True)
        fully_shard(explicit, mesh=MESH, reshard_after_forward=True)
        explicit(TOKENS)
        default = blocks_then_root(Transformer(tied=False))
        default(TOKENS)
        return {"explicit": type(explicit.norm.weight).__name__, "default": type(default.norm.weight).__name__}

    @case("FS013")
    def _():
        from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler

        out = {}
        for name, scaler in (("sharded", ShardedGradScaler(device="cpu")), ("amp", torch.amp.GradScaler("cpu"))):
            model = blocks_then_root(Transformer(tied=False))
            before = model.norm.weight.detach().full_tensor().clone()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            scaler.scale(model(TOKENS).sum()).backward()
            scaler.step(optimizer)
            scaler.update()
            out[name] = {"dtensor_grads": all(isinstance(p.grad, DTensor) for p in model.parameters()),
                         "stepped": not torch.equal(before, model.norm.weight.detach().full_tensor())}
        return out

    @case("FS015")
    def _():
        model = blocks_then_root(Transformer(tied=False))
        model(TOKENS)
        return {"root": type(model.norm.weight).__name__, "block": type(model.layers[0].weight).__name__}

    @case("FS016")
    def _():
        model = blocks_then_root(Transformer(tied=False))
        model.forward(TOKENS)

    @case("FS018")
    def _():
        model = nn.Linear(8, 8)
        fully_shard(model, mesh=MESH)
        model.set_reshard_after_forward(8)

    @case("FS019")
    def _():
        init_device_mesh("cpu", (2, 2), mesh_dim_names=("replicate", "shard"))

    # --- FS035 wrapper-method-on-fully-shard-module, FS036 meta-module-moved-with-to --------------
    for method, arguments in (("no_sync", ()), ("clip_grad_norm_", (1.0,))):
        @case(f"FS035-{method}")
        def _(method=method, arguments=arguments):
            model = blocks_then_root(Transformer(tied=False))
            getattr(model, method)(*arguments)

    @case("FS035-good")
    def _():
        model = blocks_then_root(Transformer(tied=False))
        model.set_requires_gradient_sync(False)
        model(TOKENS).sum().backward()
        model.set_requires_gradient_sync(True)
        return float(torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)) >= 0

    for sharded in (True, False):
        for move in ("to", "cpu"):
            @case(f"FS036-{move}-{'sharded' if sharded else 'plain'}")
            def _(sharded=sharded, move=move):
                with torch.device("meta"):
                    model = Transformer(tied=False)
                if sharded:
                    blocks_then_root(model)
                model.to("cpu") if move == "to" else model.cpu()

    @case("FS036-good")
    def _():
        with torch.device("meta"):
            model = Transformer(tied=False)
        blocks_then_root(model)
        model.to_empty(device="cpu")
        model.to(torch.bfloat16)
        return sorted({str(p.device) for p in model.parameters()})

    # --- FS043 replicate-and-fully-shard-one-module: each order, each replicate ----------------
    from torch.distributed._composable import replicate as replicate_ddp
    from torch.distributed._composable.replicate_with_fsdp import replicate as replicate_fsdp

    @case("FS043-replicate-then-shard")
    def _():
        model = Transformer(tied=False)
        replicate_fsdp(model, mesh=MESH)
        fully_shard(model, mesh=MESH)

    for name, replicate in (("fsdp", replicate_fsdp), ("ddp", replicate_ddp)):
        @case(f"FS043-shard-then-{name}")
        def _(replicate=replicate):
            model = blocks_then_root(Transformer(tied=False))
            replicate(model, mesh=MESH) if replicate is replicate_fsdp else replicate(model)

    @case("FS043-ddp-then-shard")
    def _():
        model = Transformer(tied=False)
        replicate_ddp(model)
        fully_shard(model, mesh=MESH)
        model(TOKENS)

    @case("FS043-good")
    def _():
        model = Transformer(tied=False)
        for layer in model.layers:
            replicate_fsdp(layer, mesh=MESH)
        fully_shard(model, mesh=MESH)
        model(TOKENS).sum().backward()
        return True

    # --- FS037 averaged-model-of-sharded-module ---------------------------------------------------
    from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

    @case("FS037-before")
    def _():
        model = Transformer(tied=False)
        ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.999))
        blocks_then_root(model)
        model(TOKENS).sum().backward()
        ema.update_parameters(model)

    @case("FS037-after")
    def _():
        model = blocks_then_root(Transformer(tied=False))
        AveragedModel(model)

    @case("FS037-good")
    def _():
        model = Transformer(tied=False)
        ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.999))
        blocks_then_root(model)
        blocks_then_root(ema.module)
        for _ in range(2):
            model(TOKENS).sum().backward()
            ema.update_parameters(model)
        return sorted({type(p).__name__ for p in ema.parameters()})

    out["torch"] = torch.__version__
    dist.destroy_process_group()
    json.dump(out, open(sys.argv[1], "w"))
''')


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    require_installed("torch")
    directory = tmp_path_factory.mktemp("fsdp2_catalog_oracle")
    script, result = directory / "child.py", directory / "out.json"
    script.write_text(CHILD)
    port = str(29400 + os.getpid() % 500)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore", "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run([sys.executable, str(script), str(result), port], capture_output=True, text=True,
                          timeout=300, env=env, cwd=directory, stdin=subprocess.DEVNULL)
    assert done.returncode == 0 and result.is_file(), done.stderr[-4000:]
    return json.loads(result.read_text())


def raised(outcome, kind, *words):
    assert outcome.get("raised") == kind, outcome
    assert all(word in outcome["text"] for word in words), outcome["text"]


def test_runs_the_torch_the_messages_name(ran):
    assert ran["torch"].startswith(("2.13", "2.14")), ran["torch"]


def test_every_fs_rule_is_confirmed_or_says_why_not():
    from shardshift.rules import all_rules

    codes = {rule.code for rule in all_rules() if rule.code.startswith("FS")}
    assert codes == set(RULE_CLAIMS) | set(NO_RUNNABLE_CLAIM) | set(COVERAGE_CLAIMS) | set(IMPLICIT_CLAIMS)
    assert not set(RULE_CLAIMS) & set(NO_RUNNABLE_CLAIM)
    assert not (set(RULE_CLAIMS) | set(NO_RUNNABLE_CLAIM)) & set(COVERAGE_CLAIMS)
    assert not (set(RULE_CLAIMS) | set(NO_RUNNABLE_CLAIM) | set(COVERAGE_CLAIMS)) & set(IMPLICIT_CLAIMS)
    implicit = {line.split("\t")[1].removeprefix("rule: ") for line in (ROOT / "src" / "shardshift" / "data" / "coverage"
                / "fsdp2-implicit.tsv").read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")}
    assert set(IMPLICIT_CLAIMS) <= implicit, "a rule confirmed by the implicit oracle must name a site of its table"
    from shardshift import coverage

    mapped = {code for v in coverage.load("fsdp2").values() for code in v.codes}
    assert set(COVERAGE_CLAIMS) <= mapped, "a rule confirmed by the coverage oracle must name a site of the map"
    tests = {name for name in globals() if name.startswith("test_")}
    assert set(RULE_CLAIMS.values()) <= tests


# --- the catalog rules ---------------------------------------------------------------------------


def test_fs021_tied_parameters_in_two_groups_raise_at_the_first_forward(ran):
    assert ran["FS021-sharding-did-not-raise"]
    for name in ("FS021-bad-own-groups", "FS021-bad-embedding-only"):
        raised(ran[name], "ValueError", "is shared with a parameter already managed by another FSDP group")
    assert ran["FS021-good-one-call"] == {"ok": True} and ran["FS021-good-root"] == {"ok": True}


def test_fs022_to_empty_does_not_initialise(ran):
    assert ran["FS022-bad"]["ok"] == {"reset_calls": 0, "devices": ["cpu"], "dtensors": True}


def test_fs023_parameter_added_after_fully_shard_is_unmanaged_or_raises(ran):
    # a new name: a plain tensor FSDP2 neither shards nor reduces (it does get its local gradient)
    assert ran["FS023-bad-new-name"]["ok"] == {"dtensor": False, "managed": False, "has_grad": True}
    assert ran["FS023-bad-register"]["ok"] == {"dtensor": False}
    # in place of a sharded parameter: the first forward raises
    raised(ran["FS023-bad-replacement"], "AttributeError", "'Parameter' object has no attribute '_local_tensor'")
    assert ran["FS023-good"]["ok"] == {"dtensor": True, "managed": True, "has_grad": True}


def test_fs024_fully_shard_always_shards_and_hsdp_needs_a_2d_mesh(ran):
    assert ran["FS024-no-reshard-still-shards"]["ok"] == ["Shard(0)"]
    assert ran["FS024-hsdp-placements"]["ok"] == ["Replicate", "Shard(0)"]
    assert ran["FS024-fsdp1-no-shard-warning"]["ok"] is True


def test_fs025_default_reshard_regathers_for_every_micro_batch(ran):
    # the default reshards the block after each forward: each micro-batch gathers it again; False gathers once
    # (root and block gathered for the first micro-batch; the default regathers the block for the second)
    assert (ran["FS025-false"]["ok"], ran["FS025-default"]["ok"]) == (2, 3)


def test_fs026_clip_grad_norm_uses_the_given_parameters_only(ran):
    result = ran["FS026"]["ok"]
    assert result["all_reduces"] == 0
    assert result["norm"] == pytest.approx(result["stage_norm"])


def test_fs027_root_only_is_one_group(ran):
    result = ran["FS027"]["ok"]
    assert result["groups"] == 1 and result["in_group"] == result["parameters"]
    assert result["gathers"] == 1  # the whole model in one all-gather


def test_fs028_offloaded_step_runs_on_cpu_tensors(ran):
    # the claim that apex's fused optimizers are GPU-only is apex's own ("Currently GPU-only"): apex is
    # not installed here. What runs: with CPUOffloadPolicy the step's tensors are on the CPU, and torch's
    # fused AdamW (the fix) steps them
    assert ran["FS028-good"]["ok"] == {"param_devices": ["cpu"], "grad_devices": ["cpu"], "stepped": True}


def test_fs030_dp_mesh_dims_needs_dtensor_parameters(ran):
    # the rest of FS030 is confirmed site by site by the coverage map's oracle (COVERAGE_CLAIMS)
    raised(ran["FS030-plain"], "ValueError", "all parameters must be DTensors on the full SPMD mesh")
    assert ran["FS030-distributed"]["ok"] == ["Shard(0)"]


# --- the rules of rules.py that state what torch does ------------------------------------------------


def test_fs001_optimizer_built_before_keeps_the_original_parameters(ran):
    assert ran["FS001"]["ok"] == {"shares_any": False, "model_changed": False}
    assert ran["FS001-copied"]["ok"] == {"shares_any": False, "model_changed": False}  # a list made before
    assert ran["FS001-generator"]["ok"] == {"all_dtensors": True}  # not reported: read when consumed


def test_fs002_parameters_outside_every_group_stay_plain_tensors(ran):
    assert ran["FS002"]["ok"] == {"blocks": "DTensor", "embeddings": "Parameter", "head": "Parameter"}


def test_fs003_block_after_root_fails(ran):
    # the block's fully_shard call raises on a mesh without dim names; with names, the first forward does
    raised(ran["FS003"], "TypeError", "Invariant encountered")
    assert ran["FS003-named-mesh-sharded"]
    raised(ran["FS003-named-mesh"], "RuntimeError", "mixed torch.Tensor and DTensor")


def test_fs004_unset_reduce_dtype_reduces_in_param_dtype(ran):
    assert set(ran["FS004"]["ok"]) == {"torch.bfloat16"}
    assert set(ran["FS004-good"]["ok"]) == {"torch.float32"}


def test_fs006_int_not_a_factor_raises_value_error(ran):
    raised(ran["FS006"], "ValueError", "If passing reshard_after_forward as an int, it should be a factor of")


def test_fs008_pinned_offload_without_accelerator_fails(ran):
    raised(ran["FS008"], "RuntimeError", "Cannot access accelerator device when none is available")
    assert ran["FS008-good"] == {"ok": True}


def test_fs009_hsdp_dims_are_chosen_by_position(ran):
    assert ran["FS009"]["ok"] == {"shard_dim": 1, "replicate_dim": 0, "placements": ["Replicate", "Shard(0)"]}


def test_fs010_three_dim_mesh_raises_value_error(ran):
    raised(ran["FS010"], "ValueError", "fully_shard expects a 1D or 2D DeviceMesh")


def test_fs011_two_dim_mesh_without_names_raises_assertion_error(ran):
    raised(ran["FS011"], "AssertionError", "Please init the 2D mesh for HSDP with mesh_dim_names specified")


def test_fs012_explicit_true_on_the_root_reshards_it_after_forward(ran):
    assert ran["FS012"]["ok"] == {"explicit": "DTensor", "default": "Parameter"}


def test_fs013_sharded_grad_scaler_steps_dtensor_gradients_as_grad_scaler_does(ran):
    """FS013 is an info: ShardedGradScaler works on fully_shard's DTensor gradients, as torch.amp.GradScaler does."""
    both = {"dtensor_grads": True, "stepped": True}
    assert ran["FS013"] == {"ok": {"sharded": both, "amp": both}}


def test_fs035_an_fsdp2_module_has_no_wrapper_methods(ran):
    for method in ("no_sync", "clip_grad_norm_"):
        raised(ran[f"FS035-{method}"], "AttributeError", "object has no attribute", f"'{method}'", "'FSDPTransformer'")
    assert ran["FS035-good"] == {"ok": True}


def test_fs036_a_meta_module_cannot_be_copied_with_to(ran):
    for name in ("FS036-to-sharded", "FS036-cpu-sharded", "FS036-to-plain", "FS036-cpu-plain"):
        raised(ran[name], "NotImplementedError", "Cannot copy out of meta tensor; no data!")
    assert "Please use torch.nn.Module.to_empty() instead" in ran["FS036-to-sharded"]["text"]
    assert ran["FS036-good"] == {"ok": ["cpu"]}


def test_fs043_replicate_and_fully_shard_refuse_each_other(ran):
    raised(ran["FS043-replicate-then-shard"], "AssertionError", "more than once")
    for name in ("fsdp", "ddp"):
        raised(ran[f"FS043-shard-then-{name}"], "RuntimeError",
               "Cannot apply `replicate()` on a Module already managed by `fully_shard`")
    raised(ran["FS043-ddp-then-shard"], "RuntimeError", "DistributedDataParallel")
    assert ran["FS043-good"] == {"ok": True}


def test_fs037_an_averaged_model_needs_its_copy_sharded(ran):
    raised(ran["FS037-before"], "RuntimeError", "got mixed torch.Tensor and DTensor")
    raised(ran["FS037-after"], "AssertionError", "FSDP does not support deepcopy")
    assert ran["FS037-good"] == {"ok": ["DTensor"]}


def test_fs015_forward_leaves_the_root_unsharded(ran):
    assert ran["FS015"]["ok"] == {"root": "Parameter", "block": "DTensor"}


def test_fs016_direct_forward_skips_the_hooks_and_fails(ran):
    raised(ran["FS016"], "RuntimeError", "mixed torch.Tensor and DTensor")


def test_fs018_setter_raises_value_error_for_an_int(ran):
    raised(ran["FS018"], "ValueError", "reshard_after_forward should be a bool")


def test_fs019_mesh_larger_than_the_world_fails(ran):
    raised(ran["FS019"], "RuntimeError", "Mesh should not be bigger than default world size")
