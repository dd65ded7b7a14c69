"""FSDP2 rules for the argument checks of torch 2.13's `fully_shard`, its device mesh and FSDPModule methods.

They mirror check sites of the coverage map (src/shardshift/data/coverage/fsdp2.tsv, issue 22):
each message says what torch raises, which tests/test_coverage_map.py confirms by running the
rule's bad fixtures through torch on a fake process group (tests/coverage_loaders/fsdp2.py).
"""

from __future__ import annotations

import ast
import difflib
import re

from shardshift.rules.fsdp2 import rules as _base
from shardshift.rules.fsdp2 import values as _values

R = _base.R
_show = _base._show


def _names(value) -> tuple[str, ...] | None:
    """Mesh dim names written as a string or a tuple/list of strings, else None."""
    if isinstance(value, R.Const):
        value = value.value
        if isinstance(value, str):
            return (value,)
        if isinstance(value, tuple) and all(isinstance(v, str) for v in value):
            return value
    if isinstance(value, R.ListVal) and all(isinstance(i, R.Const) and isinstance(i.value, str) for i in value.items):
        return tuple(i.value for i in value.items)
    return None


def _literal(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _depth(value) -> int | None:
    """How many dims a literal nested list/tuple has (a mesh written as [[0, 1], [2, 3]])."""
    if isinstance(value, (list, tuple)):
        inner = {_depth(v) for v in value}
        return 1 + next(iter(inner)) if len(inner) == 1 and None not in inner else (1 if not value else None)
    return 0 if isinstance(value, int) else None


def _flattened(text: str) -> dict[str, set[str]]:
    """Names the code gives flattened meshes (`mesh["a", "b"]._flatten("dp")`), each with the dim names it
    was flattened from when the slice is written out: slicing the root by a flattened name is valid, by it
    together with one of those dims is not."""
    found: dict[str, set[str]] = {}
    for match in re.finditer(r"(?:\[([^\[\]]*)\]\s*)?\._flatten\(\s*(?:mesh_dim_name\s*=\s*)?[\"'](\w+)[\"']", text):
        found.setdefault(match.group(2), set()).update(re.findall(r"[\"'](\w+)[\"']", match.group(1) or ""))
    return found


class DeviceMeshArgumentRefused(_base._Fsdp2Rule):
    """`init_device_mesh`, `DeviceMesh` or a mesh slice gets arguments torch refuses.

    ## What it does
    Reports, from the literals in the code: `init_device_mesh` with repeated dim names, with a
    different number of names than dims, with a device type that carries an index (`"cuda:0"`),
    or with `backend_override` keys that name no dim (or one dim twice, by index and by name);
    `DeviceMesh(device_type)` without a mesh, or with a `backend_override` of another length than
    the mesh's dims; and slicing a mesh (`mesh["dp", "tp"]`) that has no dim names, by a name it
    does not have, by names out of the mesh's order, or by a flattened dim together with a dim it
    was flattened from. Also values torch computes with unchecked (no check of its own refuses
    them): a `mesh_shape` dim of size 0, negative or None; a device type torch does not have
    (`"gpu"`, `"CUDA"`) or no string (None, a number) on a mesh `fully_shard` or a DTensor API
    gets; and a 2-D mesh `fully_shard` gets whose last dim name is no string.

    ## Why is this bad
    torch 2.13 raises at that line, before any training: `RuntimeError: Each mesh_dim_name must
    be unique`, `mesh_shape and mesh_dim_names should have same length`, `Device type with index
    is not supported`, `Found invalid keys in backend_override`, `TypeError: The mesh argument is
    required`, `RuntimeError: Cannot slice a DeviceMesh without mesh_dim_names`, `KeyError:
    Invalid mesh_dim_names`, or `KeyError: ... Mesh dim indices should be in ascending order`.
    The unchecked values fail where torch computes with them: laying out the mesh
    (`ZeroDivisionError` for a zero size, `RuntimeError` from `torch.arange` for a negative one,
    `TypeError` for None), looking up the device module (`AttributeError: 'NoneType' object has no
    attribute 'current_device'` in fully_shard; `TypeError` for a device type that is None), moving
    a tensor to it (`RuntimeError: Expected one of cpu, cuda, ... device type`), or slicing the
    mesh by its dim name (`TypeError`).
    The last one catches `mesh["dp_replicate", "dp_shard"]` taken from a mesh created as
    `("dp_shard", "dp_replicate")` to put the dims in fully_shard's order: a slice cannot reorder.

    ## Example
    ```python
    mesh = init_device_mesh("cuda", (8, 4), mesh_dim_names=("dp_shard", "dp_replicate"))
    fully_shard(model, mesh=mesh["dp_replicate", "dp_shard"])
    ```

    ## Use instead
    ```python
    mesh = init_device_mesh("cuda", (4, 8), mesh_dim_names=("dp_replicate", "dp_shard"))
    fully_shard(model, mesh=mesh)
    ```
    """

    code = "FS029"
    name = "device-mesh-argument-refused"
    severity = "error"

    def judge(self, analysis, context):
        for event in analysis.of("mesh"):
            yield from self._init(event)
        for event in analysis.of("device_mesh"):
            yield from self._constructor(event, context.world_size)  # --world-size: the launch's process count
        flattened = _flattened(analysis.text)
        for event in analysis.of("mesh_slice"):
            yield from self._slice(event, flattened)
        yield from _values.mesh_problems(analysis, analysis.text)

    def _init(self, event):
        names = _names(event.kwargs.get("mesh_dim_names"))
        shape = event.kwargs.get("mesh_shape")
        dims = (len(shape.value) if isinstance(shape, R.Const) and isinstance(shape.value, tuple)
                else len(shape.items) if isinstance(shape, R.ListVal) else None)
        if names is not None and len(set(names)) != len(names):
            yield (event, f"init_device_mesh repeats a dim name in {names}: torch raises RuntimeError (each "
                   "mesh_dim_name must be unique)", "give every dim its own name")
        elif names is not None and dims is not None and len(names) != dims:
            yield (event, f"init_device_mesh gets {len(names)} dim names {names} for a {dims}-D mesh_shape: torch "
                   "raises RuntimeError (mesh_shape and mesh_dim_names should have same length)",
                   "write one name per dim of mesh_shape")
        device = event.value("device_type")
        if isinstance(device, str) and device and not device.isalpha():
            yield (event, f"init_device_mesh gets device type {device!r}: torch raises RuntimeError (a device type "
                   "with an index is not supported)", f"pass {re.sub(r'[^a-zA-Z].*', '', device)!r}; the rank picks its "
                   "device (torch.cuda.set_device(local_rank))")
        override = _literal(event.texts.get("backend_override", ""))
        if isinstance(override, dict) and dims is not None:
            valid = set(range(dims)) | set(names or ())
            wrong = [k for k in override if k not in valid]
            twice = [(i, n) for i, n in enumerate(names or ()) if i in override and n in override]
            if wrong:
                yield (event, f"backend_override names {wrong}, which are neither dim indices below {dims} nor dim "
                       f"names {names or ()}: torch raises RuntimeError (invalid keys in backend_override)",
                       "key backend_override by a dim's index or its name")
            elif twice:
                yield (event, f"backend_override sets dim {twice[0][0]} by its index and by its name "
                       f"{twice[0][1]!r}: torch raises RuntimeError (redundant dim index and name)",
                       "keep one of the two keys")

    def _constructor(self, event, world: int | None):
        given = event.given | set(event.kwargs)
        if "mesh" not in given and not {"_layout", "_rank_map"} & given and "**" not in event.texts:
            yield (event, "DeviceMesh is constructed without a mesh: torch raises TypeError (the mesh argument is "
                   "required)", "use init_device_mesh(device_type, mesh_shape, mesh_dim_names=...)")
            return
        override = _literal(event.texts.get("backend_override", ""))
        dims = _depth(_literal(event.texts.get("mesh", "")))
        yield from self._ranks(event, world)
        if isinstance(override, (tuple, list)) and dims and len(override) != dims:
            yield (event, f"DeviceMesh gets {len(override)} backend_override entries for a {dims}-D mesh: torch raises "
                   "ValueError (backend_override should have the same length as the number of mesh dimensions)",
                   "give one (backend, options) entry per dim, or use init_device_mesh(..., backend_override={...})")

    def _ranks(self, event, context_world: int | None):
        """A literal mesh (`[[0, 1], [2, 3]]`, or `torch.tensor(...)` of one) that lists a rank twice, or a rank
        at or past the world size: the process groups torch creates for it refuse the ranks."""
        text = event.texts.get("mesh", "")
        try:
            node = ast.parse(text, mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return
        if isinstance(node, ast.Call) and node.args and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                "tensor", "as_tensor"):
            node = node.args[0]
        mesh = _literal(ast.unparse(node))
        positions: dict[int, tuple[int, ...]] = {}

        def walk(value, at: tuple[int, ...]):
            if isinstance(value, (list, tuple)):
                for index, item in enumerate(value):
                    yield from walk(item, at + (index,))
            elif isinstance(value, int) and not isinstance(value, bool):
                yield value, at
            else:
                raise ValueError(value)

        try:
            ranks = list(walk(mesh, ()))
        except ValueError:
            return  # not a literal of ranks
        for rank, at in ranks:
            first = positions.setdefault(rank, at)
            if first == at:
                continue
            differ = [d for d, (a, b) in enumerate(zip(first, at)) if a != b]
            whole = "AssertionError: rank_coords.size(0) must be 0 or 1, as the rank finds itself twice"
            if len(at) == 1 and context_world == len(ranks):  # one group over the whole world: the default group
                why = f"{whole} (a 1-D mesh over every rank takes the default group, which checks no list)"
            elif len(at) == 1 and context_world is None:
                why = (f"ValueError: ranks list must not contain duplicate entries; or, where the mesh spans every "
                       f"rank, {whole}")
            elif len(differ) == 1:
                why = f"ValueError: ranks list must not contain duplicate entries (one group of dim {differ[0]} holds it twice)"
            else:
                why = (f"RuntimeError: each device mesh dimension should get only one process group (rank {rank} falls "
                       f"in two groups of dim {differ[0]})")
            yield (event, f"DeviceMesh lists rank {rank} twice (at {list(first)} and {list(at)}): torch refuses it "
                   f"while it creates the mesh's process groups ({why})", "list each rank once")
            return
        if context_world:
            past = sorted({rank for rank, _ in ranks if rank >= context_world or rank < 0})
            if past:
                yield (event, f"DeviceMesh lists rank {past[0]}, outside the world of {context_world} ranks: torch raises "
                       f"ValueError (Rank {past[0]} is out of range)", f"use ranks 0 to {context_world - 1}")

    def _slice(self, event, flattened):
        mesh = event.kwargs["mesh"]
        wanted = _names(event.kwargs.get("names"))
        if wanted is None:
            return
        shown = event.texts.get("names", "")
        if not mesh.names_given:
            yield (event, f"the mesh from line {mesh.line} has no mesh_dim_names, so slicing it by [{shown}] raises "
                   "RuntimeError (cannot slice a DeviceMesh without mesh_dim_names)",
                   "create the mesh with mesh_dim_names=(...)")
            return
        have = [name for name, _ in mesh.dims]
        if any(name is None for name in have):
            return
        unknown = [n for n in wanted if n not in have and not (mesh.root and n in flattened)]
        if unknown:
            yield (event, f"the mesh from line {mesh.line} has dims {tuple(have)}, not {tuple(unknown)}: slicing it by "
                   f"[{shown}] raises KeyError (invalid mesh_dim_names)", f"slice by one of {tuple(have)}")
            return
        overlapping = [(n, sorted(flattened[n] & set(wanted))[0]) for n in wanted
                       if mesh.root and n in flattened and flattened[n] & set(wanted)]
        if overlapping:
            flat, part = overlapping[0]
            yield (event, f"slicing the mesh from line {mesh.line} by [{shown}] names the flattened dim {flat!r} "
                   f"together with {part!r}, which it was flattened from: torch refuses the slice (RuntimeError: "
                   "slicing overlapping dim_names is not allowed)", f"slice by {flat!r} alone, or by the dims it was "
                   "flattened from")
            return
        order = [have.index(n) for n in wanted if n in have]
        if mesh.root and len(order) == len(wanted) and order != sorted(order):
            yield (event, f"the mesh from line {mesh.line} has dims {tuple(have)} in that order; slicing it by "
                   f"[{shown}] raises KeyError (mesh dim indices should be in ascending order): a slice cannot "
                   "reorder dims", f"create the mesh with its dims in the order {tuple(wanted)}")


DTENSOR_MAKERS = re.compile(r"\b(distribute_module|parallelize_module|distribute_tensor|from_local|DTensor)\b")


def _dp_dims(event):
    dims = event.kwargs.get("dp_mesh_dims")
    return dims if isinstance(dims, R.Policy) and dims.kind == "dp_mesh_dims" else None


def _none(value) -> bool:
    return value is None or (isinstance(value, R.Const) and value.value is None)


def _unset(policy, field: str) -> bool:
    return _none(policy.kwargs.get(field))


class DpMeshDimsRefused(_base._Fsdp2Rule):
    """`dp_mesh_dims` is combined with arguments torch refuses.

    ## What it does
    Reports `DataParallelMeshDims()` with neither `shard` nor `replicate`; and `fully_shard(...,
    dp_mesh_dims=...)` on a mesh without dim names, naming a dim the mesh does not have, with an
    integer `reshard_after_forward`, (with `replicate` only) with a `shard_placement_fn` or
    followed by `set_reshard_after_forward` on that module, or in a file where nothing makes the
    parameters DTensors (`distribute_module`, `parallelize_module`).

    ## Why is this bad
    torch 2.13 raises: `ValueError: At least one of shard or replicate must be set`, `mesh must
    have mesh_dim_names when dp_mesh_dims is provided`, `Mesh dim name ... not found`,
    `NotImplementedError: reshard_after_forward as int is not yet supported with SPMD mesh`,
    `ValueError: Per-param mesh via shard_placement_fn is not supported with DDPMeshInfo`, a
    bare `AssertionError` from `set_reshard_after_forward` (a replicate-only group has nothing to
    reshard), and `ValueError: When dp_mesh_dims is provided, all parameters must be DTensors on
    the full SPMD mesh`.

    ## Example
    ```python
    mesh = init_device_mesh("cuda", (4, 8), mesh_dim_names=("dp_replicate", "dp_shard"))
    dims = DataParallelMeshDims(shard="dp_shard", replicate="dp_replicate")
    fully_shard(layer, mesh=mesh, dp_mesh_dims=dims, reshard_after_forward=4)
    ```

    ## Use instead
    ```python
    mesh = init_device_mesh("cuda", (4, 8), mesh_dim_names=("dp_replicate", "dp_shard"))
    dims = DataParallelMeshDims(shard="dp_shard", replicate="dp_replicate")
    fully_shard(layer, mesh=mesh, dp_mesh_dims=dims, reshard_after_forward=True)
    ```
    """

    code = "FS030"
    name = "dp-mesh-dims-refused"
    severity = "error"

    def judge(self, analysis, context):
        for event in analysis.of("policy"):
            if event.name == "dp_mesh_dims" and "**" not in event.texts and all(
                    _none(event.kwargs.get(field)) for field in ("shard", "replicate")):
                yield (event, "DataParallelMeshDims sets neither shard nor replicate: torch raises ValueError (at least "
                       "one of shard or replicate must be set)", "name the mesh dim FSDP shards on: shard=\"dp_shard\"")
        replicate_only, seen, plain_reported = [], set(), False
        for event in analysis.of("fully_shard"):
            dims = _dp_dims(event)
            mesh = event.kwargs.get("mesh")
            if dims is None or (id(dims), id(mesh)) in seen:  # one finding per (mesh, dims) pair
                continue
            seen.add((id(dims), id(mesh)))
            if isinstance(mesh, R.Mesh) and not mesh.names_given:
                yield (event, f"fully_shard gets dp_mesh_dims with the mesh from line {mesh.line}, which has no "
                       "mesh_dim_names: torch raises ValueError", "create the mesh with mesh_dim_names=(...)")
                continue
            named = [n for field in ("shard", "replicate") for n in (_names(dims.kwargs.get(field)) or ())]
            have = [name for name, _ in mesh.dims] if isinstance(mesh, R.Mesh) else []
            missing = [n for n in named if n not in have]
            if isinstance(mesh, R.Mesh) and None not in have and missing:
                yield (event, f"dp_mesh_dims names {tuple(missing)}, which the mesh from line {mesh.line} "
                       f"{tuple(have)} does not have: torch raises ValueError (mesh dim name not found)",
                       f"name dims of the mesh: {tuple(have)}")
                continue
            value = event.value("reshard_after_forward")
            if isinstance(value, int) and not isinstance(value, bool):
                yield (event, f"reshard_after_forward={value} with dp_mesh_dims: torch 2.13 raises NotImplementedError "
                       "(an int is not yet supported with an SPMD mesh)", "use True or False")
                continue
            if _unset(dims, "shard") and not _unset(dims, "replicate"):
                placement = event.kwargs.get("shard_placement_fn")
                if "shard_placement_fn" in event.given and not (isinstance(placement, R.Const) and placement.value is None):
                    yield (event, "shard_placement_fn with a replicate-only dp_mesh_dims: torch raises ValueError "
                           "(per-param mesh via shard_placement_fn is not supported with DDPMeshInfo)",
                           "drop shard_placement_fn, or set dp_mesh_dims.shard")
                    continue
                replicate_only.append(event)
            if not DTENSOR_MAKERS.search(analysis.text) and not (_unset(dims, "shard") and _unset(dims, "replicate")) \
                    and not plain_reported:
                plain_reported = True
                yield (event, "fully_shard gets dp_mesh_dims, but nothing in the file makes the parameters DTensors on "
                       "the full mesh (distribute_module, parallelize_module): torch raises ValueError (all parameters "
                       "must be DTensors on the full SPMD mesh)",
                       "distribute the model over the full mesh first (distribute_module(model, mesh)), or drop "
                       "dp_mesh_dims and pass the data-parallel sub-mesh")
        for event in analysis.of("set_reshard_after_forward"):
            owner = event.targets[0] if event.targets else None
            found = next((e for e in replicate_only for t in e.targets
                          if owner is not None and (t == owner or R.is_below(t, owner))), None)
            if found is not None:
                yield (event, f"set_reshard_after_forward on {_show(owner)}, sharded at line {found.line} with a "
                       "replicate-only dp_mesh_dims: torch raises AssertionError (a replicated group has nothing to "
                       "reshard)", "drop the call for replicated modules")


PLACEHOLDERS = _values.PLACEHOLDERS


def _sharded(analysis) -> set[str]:
    return {t for e in analysis.of("fully_shard") for t in e.targets}


def _module_list(value) -> list | None:
    if isinstance(value, R.ListVal):
        return value.items
    return None


class FsdpMethodArgumentRefused(_base._Fsdp2Rule):
    """An FSDP2 method or `fully_shard` argument has a value torch refuses.

    ## What it does
    Reports `reshard_after_forward` given something other than a bool, an int or None (a string,
    a float); `set_reduce_scatter_max_input_buffers` given a non-int or a number below 1;
    `set_all_reduce_hook(..., stream=...)` on a module sharded over a 2-D (HSDP) mesh, and
    `set_all_reduce_hook(None, stream=...)` on one sharded over a 1-D mesh;
    `set_reduce_scatter_max_input_buffers(n)` above 1 on a module that also gets
    `set_force_sum_reduction_for_comms(True)` then `set_symm_mem_for_comm()` (the symmetric-memory
    reduce-scatter); and `set_modules_to_forward_prefetch` / `set_modules_to_backward_prefetch` /
    `share_comm_ctx` given a module that no `fully_shard` call in the file shards.

    ## Why is this bad
    torch 2.13 raises: `ValueError: reshard_after_forward should be a bool or an int`,
    `TypeError: max_input_buffers must be an int`, `ValueError: max_input_buffers must be a
    positive int`, `ValueError: stream cannot be set when using native HSDP`, `AssertionError: all
    reduce hook stream is specified but hook itself is missing.` (in the first backward),
    `ValueError: set_reduce_scatter_max_input_buffers(>1) is not supported with the
    symmetric-memory reduce-scatter comm` (at the first forward), and `ValueError: Expects
    FSDPModule` / `Expects list of FSDPModules`.

    ## Example
    ```python
    for layer in model.layers:
        fully_shard(layer, reshard_after_forward="true")
    ```

    ## Use instead
    ```python
    for layer in model.layers:
        fully_shard(layer, reshard_after_forward=True)
    ```
    """

    code = "FS031"
    name = "fsdp-method-argument-refused"
    severity = "error"

    def judge(self, analysis, context):
        for event in analysis.of("fully_shard"):
            value = event.kwargs.get("reshard_after_forward")
            if isinstance(value, R.Const) and value.value is not None and not isinstance(value.value, (bool, int)) \
                    and value.value not in PLACEHOLDERS:
                yield (event, f"reshard_after_forward is {value.value!r}: torch raises ValueError (it should be a bool "
                       "or an int)", "write True or False (or an int group size)")
        sharded = _sharded(analysis)
        for event in analysis.of("fsdp_method"):
            yield from self._method(event, analysis, sharded)
        for event in analysis.of("share_comm_ctx"):
            yield from self._modules(event, "share_comm_ctx", event.kwargs.get("modules"), sharded, analysis,
                                     "Expects list of FSDPModules")

    def _method(self, event, analysis, sharded):
        if event.name == "set_reduce_scatter_max_input_buffers":
            value = event.kwargs.get("max_input_buffers")
            if isinstance(value, R.Const):
                if isinstance(value.value, bool) or not isinstance(value.value, int):
                    yield (event, f"set_reduce_scatter_max_input_buffers({value.value!r}): torch raises TypeError "
                           "(max_input_buffers must be an int)", "pass an int of at least 1")
                elif value.value < 1:
                    yield (event, f"set_reduce_scatter_max_input_buffers({value.value}): torch raises ValueError "
                           "(max_input_buffers must be a positive int)", "pass 1 (the default) or more")
        elif event.name == "set_all_reduce_hook":
            stream = event.kwargs.get("stream")
            if "stream" not in event.given or (isinstance(stream, R.Const) and stream.value is None):
                return
            owner = event.targets[0] if event.targets else None
            hsdp = next((e for e in analysis.of("fully_shard") if owner in e.targets
                         and isinstance(e.kwargs.get("mesh"), R.Mesh) and len(e.kwargs["mesh"].dims) == 2
                         and _dp_dims(e) is None), None)
            if hsdp is not None:
                yield (event, f"set_all_reduce_hook with a stream on {_show(owner)}, sharded over a 2-D mesh at line "
                       f"{hsdp.line}: torch raises ValueError (stream cannot be set when using native HSDP)",
                       "drop stream=: with HSDP the hook runs in FSDP's own all-reduce stream")
                return
            hook = event.kwargs.get("hook")
            flat = next((e for e in analysis.of("fully_shard") if owner in e.targets and _dp_dims(e) is None
                         and (isinstance(e.kwargs.get("mesh"), R.Mesh) and len(e.kwargs["mesh"].dims) == 1
                              or "mesh" not in e.given and "**" not in e.texts)), None)
            later = [e for e in analysis.of("fsdp_method") if e.name == "set_all_reduce_hook" and e.seq > event.seq
                     and e.targets == event.targets and not _none(e.kwargs.get("hook"))]
            if "hook" in event.given and isinstance(hook, R.Const) and hook.value is None and flat is not None \
                    and not later:  # a later call with a hook gives the stream its hook
                yield (event, f"set_all_reduce_hook(None, stream=...) on {_show(owner)}, sharded over a 1-D mesh at line "
                       f"{flat.line}: a stream with no hook; the first backward raises AssertionError (all reduce hook "
                       "stream is specified but hook itself is missing.)",
                       "pass the hook to run in that stream, or drop stream=")
        elif event.name in ("set_modules_to_forward_prefetch", "set_modules_to_backward_prefetch"):
            yield from self._modules(event, event.name, event.kwargs.get("modules"), sharded, analysis,
                                     "Expects FSDPModule")
        elif event.name == "set_symm_mem_for_comm":
            yield from self._symmetric_buffers(event, analysis)

    def _symmetric_buffers(self, symm, analysis):
        """Input buffers above 1 with the symmetric-memory reduce-scatter, which set_symm_mem_for_comm picks
        only when the sum-only reduction was forced before it (both on the module's own groups);
        set_reduce_scatter_max_input_buffers reaches the groups of the module and, by default, its submodules."""
        owner = symm.targets[0] if symm.targets else None
        methods = [e for e in analysis.of("fsdp_method") if e.flow == symm.flow and not e.file]
        forced = next((e for e in methods if e.name == "set_force_sum_reduction_for_comms" and e.seq < symm.seq
                       and e.targets == symm.targets and e.value("enable") is True), None)
        if owner is None or forced is None or symm.file:
            return
        for buffers in methods:
            value = buffers.value("max_input_buffers")
            if buffers.name != "set_reduce_scatter_max_input_buffers" or isinstance(value, bool) \
                    or not isinstance(value, int) or value <= 1 or not buffers.targets:
                continue
            above = buffers.targets[0]
            if not (above == owner or (R.is_below(owner, above) and buffers.value("recurse", True) is not False)):
                continue
            if any(e.name == buffers.name and e.targets == buffers.targets and e.seq > buffers.seq
                   and e.value("max_input_buffers") == 1 for e in methods):
                continue  # set back to one buffer before the forward
            steps = (forced, symm, buffers)
            if any(_base._alternatives(a, b) for a in steps for b in steps):
                continue
            unknown = None
            conds = {c for e in steps for c in e.conds}
            if any(c not in e.conds for e in steps for c in conds):
                from shardshift.context import UnknownContext

                odd = next(c for e in steps for c in conds if c not in e.conds)
                unknown = UnknownContext("value", f"whether all three calls run ({odd.describe()} holds for only "
                                         "some of them)", "shardshift reads the code without running it: where they "
                                         "do, fix it; where they do not, add `# shardshift: ignore[FS031]` on the line")
            yield (buffers, f"set_reduce_scatter_max_input_buffers({value}) on {_show(above)}, whose groups use the "
                   f"symmetric-memory reduce-scatter (set_force_sum_reduction_for_comms(True) at line {forced.line}, "
                   f"then set_symm_mem_for_comm() at line {symm.line}): the first forward raises ValueError "
                   "(set_reduce_scatter_max_input_buffers(>1) is not supported with the symmetric-memory "
                   "reduce-scatter comm)", "keep max_input_buffers=1 with symmetric memory, or drop "
                   "set_symm_mem_for_comm() to keep the default reduce-scatter", unknown)
            return

    def _modules(self, event, call, value, sharded, analysis, raised):
        items = _module_list(value)
        if not items or not sharded or "FSDPModule" in analysis.text or "**" in analysis.text:
            return
        for item in items:
            if not isinstance(item, R.Path) or "?" in item.path:
                return
        missing = [item.path for item in items if item.path not in sharded]
        if missing:
            yield (event, f"{call} gets {_show(missing[0])}, which no fully_shard call shards: torch raises ValueError "
                   f"({raised})", "pass only modules given to fully_shard")


class FullyShardAppliedTwice(_base._Fsdp2Rule):
    """`fully_shard` is applied twice to the same module.

    ## What it does
    Reports a `fully_shard` call on a module that an earlier call (outside any loop, in the same
    flow of the script, not in the other branch of an `if`) already sharded.

    ## Why is this bad
    `fully_shard` is a composable API that can be applied to a module once: torch raises
    `AssertionError: Each distinct composable distributed API can only be applied to a module
    once. fully_shard has already been applied`.

    ## Example
    ```python
    fully_shard(model, mesh=mesh)
    ...
    fully_shard(model, mesh=mesh, mp_policy=policy)
    ```

    ## Use instead
    ```python
    fully_shard(model, mesh=mesh, mp_policy=policy)
    ```
    """

    code = "FS032"
    name = "fully-shard-applied-twice"
    severity = "error"

    def judge(self, analysis, context):
        for flow in analysis.flows():
            done: dict[str, object] = {}
            for event in flow:
                if event.kind != "fully_shard" or event.in_loop:
                    continue
                for target in event.targets:
                    earlier = done.get(target)
                    if earlier is not None and not _base._alternatives(earlier, event) and "?" not in target \
                            and earlier.owner == event.owner:  # two calls of one builder make two objects
                        yield (event, f"fully_shard({_show(target)}) runs again after line {earlier.line}: torch raises "
                               "AssertionError (fully_shard can only be applied to a module once)",
                               "shard each module once, with all its arguments in that call")
                        break
                for target in event.targets:
                    done.setdefault(target, event)


def _after_fully_shard(analysis, kind: str, unwrapped_by: str | None = None):
    """(event, the fully_shard event before it) for each `kind` event on a module sharded earlier in
    the same flow (not on the other branch of an `if`); an `unwrapped_by` event on the module
    forgets that it was sharded."""
    for flow in analysis.flows():
        done: dict[str, object] = {}
        for event in flow:
            if event.kind == "fully_shard":
                for target in event.targets:
                    done.setdefault(target, event)
            elif event.kind == unwrapped_by:
                for target in event.targets:
                    done.pop(target, None)
            elif event.kind == kind and event.targets:
                earlier = next((done[t] for t in event.targets if t in done), None)
                if earlier is not None and not _base._alternatives(earlier, event):
                    yield event, earlier


class DeepcopyOfShardedModule(_base._Fsdp2Rule):
    """`copy.deepcopy` is called on a module after `fully_shard`.

    ## What it does
    Reports `copy.deepcopy(m)` when an earlier `fully_shard` call in the same flow sharded `m`
    (an EMA or reference copy of the model, made after wrapping).

    ## Why is this bad
    `fully_shard` gives the module a class whose `__deepcopy__` raises `AssertionError: FSDP does
    not support deepcopy. Please use state dict for serialization.`

    ## Example
    ```python
    fully_shard(model)
    ema = copy.deepcopy(model)
    ```

    ## Use instead
    ```python
    ema = copy.deepcopy(model)  # before sharding (shard the copy too if it trains)
    fully_shard(model)
    ```
    """

    code = "FS033"
    name = "deepcopy-of-sharded-module"
    severity = "error"

    def judge(self, analysis, context):
        for event, earlier in _after_fully_shard(analysis, "deepcopy"):
            yield (event, f"copy.deepcopy({_show(event.targets[0])}) after fully_shard at line "
                   f"{earlier.line}: torch raises AssertionError (FSDP does not support deepcopy)",
                   "copy before fully_shard, or build the copy from a state dict")


class AveragedModelOfShardedModule(_base._Fsdp2Rule):
    """An `AveragedModel` (EMA or SWA) of a module that `fully_shard` shards, its copy left unsharded.

    ## What it does
    Reports `torch.optim.swa_utils.AveragedModel(m)` built after `fully_shard` sharded `m`, and
    `averaged.update_parameters(m)` after `fully_shard(m)` when the AveragedModel was built before
    it and its copy (`averaged.module`) was never sharded, in the same flow of the script.

    ## Why is this bad
    `AveragedModel` deep-copies the module. After `fully_shard` that copy fails: torch raises
    `AssertionError: FSDP does not support deepcopy`. Built before, the copy keeps plain tensors
    while the model's parameters become sharded `DTensor`s, and the first `update_parameters(m)`
    raises `RuntimeError: aten.copy_.default: got mixed torch.Tensor and DTensor`. Checked with
    torch 2.13 on the CPU.

    ## Example
    ```python
    ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.999))
    fully_shard(model)
    ...
    ema.update_parameters(model)
    ```

    ## Use instead
    ```python
    ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.999))
    fully_shard(model)
    fully_shard(ema.module)  # the copy sharded the same way: its parameters are DTensors too
    ...
    ema.update_parameters(model)
    ```
    """

    code = "FS037"
    name = "averaged-model-of-sharded-module"
    severity = "error"

    def judge(self, analysis, context):
        for event, earlier in _after_fully_shard(analysis, "averaged_model"):
            yield (event, f"AveragedModel({_show(event.targets[0])}) after fully_shard at line {earlier.line}: it "
                   "deep-copies the module, and torch raises AssertionError (FSDP does not support deepcopy)",
                   "build the AveragedModel before fully_shard, then fully_shard its copy (averaged.module) too")
        for flow in analysis.flows():
            for index, built in enumerate(flow):
                if built.kind != "averaged_model" or not built.targets:
                    continue
                model = built.targets[0]
                later = flow[index + 1:]
                shard = next((e for e in later if e.kind == "fully_shard" and not _base._alternatives(built, e)
                              and any(_base._related(t, model) for t in e.targets)), None)
                if shard is None:
                    continue
                for position, update in enumerate(later):
                    if update.kind != "averaged_update" or update.seq < shard.seq or len(update.targets) < 2 \
                            or not any(_base._related(m, model) for m in update.targets[1:]):
                        continue
                    owner = update.targets[0]
                    if any(e.kind == "fully_shard" and any(t == owner or t.startswith(owner + ".module")
                                                           for t in e.targets) for e in later[:position]):
                        break  # the copy is sharded too
                    yield (update, f"{owner}.update_parameters({_show(update.targets[1])}): the AveragedModel built "
                           f"at line {built.line} copied {_show(model)} before fully_shard at line {shard.line}, and "
                           "its copy was never sharded: torch raises RuntimeError (mixed torch.Tensor and DTensor) "
                           "at the first update",
                           f"fully_shard({owner}.module) after sharding {_show(model)}, the same way")
                    break


class ForwardBeforeRootSharded(_base._Fsdp2Rule):
    """A forward runs through sharded blocks before the root is sharded.

    ## What it does
    Reports a call of a module (its forward) after `fully_shard` on it or on blocks inside it,
    when a later `fully_shard` call in the same flow shards a module containing it (typically:
    blocks sharded, a warm-up or shape-probe forward, then the root sharded).

    ## Why is this bad
    The first forward through an FSDP module makes it a root and initialises its state. When the
    real root is sharded afterwards, its first forward finds the blocks' state already
    initialised and torch raises `RuntimeError: FSDP state has already been lazily initialized
    for ... FSDP requires running forward through the root module first`.

    ## Example
    ```python
    for layer in model.layers:
        fully_shard(layer)
    model(example_batch)  # probe
    fully_shard(model)
    ```

    ## Use instead
    ```python
    for layer in model.layers:
        fully_shard(layer)
    fully_shard(model)
    model(example_batch)
    ```
    """

    code = "FS034"
    name = "forward-before-root-sharded"
    severity = "error"

    def judge(self, analysis, context):
        sharded = _sharded(analysis)
        for flow in analysis.flows():
            for index, event in enumerate(flow):
                if event.kind != "call" or not event.targets or event.targets[0] not in sharded:
                    continue
                called = event.targets[0]
                before = [e for e in flow[:index] if e.kind == "fully_shard"
                          and any(t == called or R.is_below(t, called) for t in e.targets)]
                after = next((e for e in flow[index + 1:] if e.kind == "fully_shard"
                              and any(R.is_below(called, t) or (t == called and before) for t in e.targets)), None)
                if before and after is not None and not _base._alternatives(event, after):
                    yield (event, f"{_show(called)}(...) runs forward at line {event.line}, before fully_shard("
                           f"{_show(_base._target(after))}) at line {after.line}: the first forward through the root "
                           "then raises RuntimeError (FSDP requires running forward through the root module first)",
                           "shard the root before any forward")


# what to call instead of each wrapper method an FSDP2 module lacks
WRAPPER_INSTEAD = {
    "no_sync": "{m}.set_requires_gradient_sync(False) before the accumulation steps (and True before the last)",
    "clip_grad_norm_": "torch.nn.utils.clip_grad_norm_({m}.parameters(), max_norm)",
}


class WrapperMethodOnFullyShardModule(_base._Fsdp2Rule):
    """A method of DDP or FSDP1's wrapper (`no_sync`, `clip_grad_norm_`) called on a `fully_shard` module.

    ## What it does
    Reports `model.no_sync()` and `model.clip_grad_norm_(...)` after `fully_shard(model)` in
    the same flow, when nothing wraps the module in DDP or FSDP1 in between (code moved from
    `FullyShardedDataParallel(model)` or `DistributedDataParallel(model)` to FSDP2).

    ## Why is this bad
    `fully_shard` changes the module's class to `FSDP<Class>` (an `FSDPModule`), which has
    neither method: torch raises `AttributeError: 'FSDPTransformer' object has no attribute
    'no_sync'` at the first step. FSDP2 skips the gradient reduction with
    `set_requires_gradient_sync(False)`, and clips with `torch.nn.utils.clip_grad_norm_`, which
    handles the DTensor gradients.

    ## Example
    ```python
    fully_shard(model)
    with model.no_sync():
        loss.backward()
    model.clip_grad_norm_(1.0)
    ```

    ## Use instead
    ```python
    fully_shard(model)
    model.set_requires_gradient_sync(False)
    loss.backward()
    model.set_requires_gradient_sync(True)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    ```
    """

    code = "FS035"
    name = "wrapper-method-on-fully-shard-module"
    severity = "error"

    def judge(self, analysis, context):
        # wrapped again in DDP or FSDP1 (`fsdp1`): the wrapper has the method
        for event, earlier in _after_fully_shard(analysis, "wrapper_method", unwrapped_by="fsdp1"):
            target = event.targets[0]
            if "?" in target:
                continue
            shown = _show(target)
            yield (event, f"{shown}.{event.name}() after fully_shard({shown}) at line {earlier.line}: an "
                   f"FSDP2 module has no {event.name} (torch raises AttributeError: 'FSDP...' object has no "
                   f"attribute '{event.name}')", "use " + WRAPPER_INSTEAD[event.name].format(m=shown))


class ProcessGroupTimeoutNotTimedelta(_base._Fsdp2Rule):
    """`init_process_group(timeout=...)` given a number (or other plain value), not a `timedelta`.

    ## What it does
    Reports `torch.distributed.init_process_group` called with `timeout=` a literal number or
    string (a name bound once to one counts).

    ## Why is this bad
    The timeout must be a `datetime.timedelta`. torch checks it before it connects to the other
    ranks and raises `TypeError: Expected timeout argument to be of type datetime.timedelta, got
    1800` (c10d `_check_valid_timeout`): every rank stops at start-up. A bare number of seconds is
    the usual slip (`timeout=1800`, `timeout=args.timeout_s` read as an int).

    ## Example
    ```python
    dist.init_process_group(backend="nccl", timeout=1800)
    ```

    ## Use instead
    ```python
    dist.init_process_group(backend="nccl", timeout=timedelta(seconds=1800))
    ```
    """

    code = "FS038"
    name = "process-group-timeout-not-timedelta"
    severity = "error"

    def judge(self, analysis, context):
        for event in analysis.of("process_group"):
            found = event.kwargs.get("timeout")
            if not isinstance(found, R.Const) or found.value is None or found.value in PLACEHOLDERS:
                continue  # a placeholder is filled in before the script runs (FS031 skips them too)
            value = found.value
            fix = f"timeout=timedelta(seconds={value})" if isinstance(value, (int, float)) and \
                not isinstance(value, bool) else "timeout=timedelta(...)"
            yield (event, f"init_process_group(timeout={value!r}): the timeout must be a datetime.timedelta; torch "
                   "raises TypeError before it connects to the other ranks (Expected timeout argument to be of type "
                   f"datetime.timedelta, got {value})", fix)


class ProcessGroupInitialisedTwice(_base._Fsdp2Rule):
    """`init_process_group` after the default process group already exists.

    ## What it does
    Reports `torch.distributed.init_process_group(...)` that runs, in the same flow and under no
    undecided condition, after `init_device_mesh(...)` or after another `init_process_group(...)`,
    with no `destroy_process_group()` between them.

    ## Why is this bad
    Building a device mesh initialises the default process group when none exists. A second
    initialisation stops every rank at start-up: `ValueError: trying to initialize the default
    process group twice!` (c10d `init_process_group`). Initialise the group first (or not at all:
    the mesh does it), or guard the call with `if not dist.is_initialized():`.

    ## Example
    ```python
    mesh = init_device_mesh("cuda", (world_size,))
    dist.init_process_group("nccl")
    ```

    ## Use instead
    ```python
    dist.init_process_group("nccl")
    mesh = init_device_mesh("cuda", (world_size,))
    ```
    """

    code = "FS039"
    name = "process-group-initialised-twice"
    severity = "error"

    def judge(self, analysis, context):
        for flow in analysis.flows():
            first = None
            for event in flow:
                if event.kind not in ("mesh", "process_group", "process_group_destroyed") or event.file:
                    continue
                if event.kind == "process_group_destroyed":
                    if event.conds or event.in_loop:
                        break  # the group may or may not be gone: the rest of the flow is not judged
                    first = None
                    continue
                if event.conds or event.in_loop:
                    continue  # guarded or repeated: whether it runs, or runs first, is not known
                if first is None:
                    first = event
                    continue
                if event.kind == "process_group":
                    what = "init_process_group(...)" if first.kind == "process_group" else "the device mesh"
                    yield (event, f"init_process_group(...) after {what} at line {first.line}, which already "
                           "initialised the default process group: every rank raises ValueError at start-up (trying "
                           "to initialize the default process group twice!)",
                           "initialise the process group once, before the mesh (or leave it to the mesh)")
                    break


# torch 2.13's built-in c10d backends (Backend.backend_list) and the names any 2.x release had:
# a name outside them is refused unless a package registers it (Backend.register_backend)
BUILT_IN_BACKENDS = frozenset({"undefined", "gloo", "nccl", "xccl", "ucc", "mpi", "fake"})
# torch's own rendezvous handlers (torch.distributed.rendezvous: register_rendezvous_handler adds others)
RENDEZVOUS_SCHEMES = frozenset({"tcp", "env", "file"})
TORCH_C10D = ("torch.distributed.", "torch.distributed.distributed_c10d.")


def _foreign_imports(text: str) -> list[str]:
    """Top-level modules the file imports that are neither the standard library nor torch: any of
    them may register a backend or a rendezvous handler when imported (oneccl_bindings_for_pytorch
    registers "ccl", torch_npu "hccl")."""
    import sys

    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ["(the file)"]
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            names = ["." * node.level + (node.module or "")] if node.level else [node.module or ""]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            if name.startswith(".") or (top not in sys.stdlib_module_names and top not in ("torch", "__future__")):
                if name not in found:
                    found.append(name)
    return found


def _device_literal(text: str | None) -> tuple[str, int | None] | str | None:
    """`torch.device("cuda")` -> ("cuda", None), `torch.device("cuda", 0)` / `"cuda:0"` -> ("cuda", 0);
    a plain string literal -> the string itself; anything else -> None."""
    if not text:
        return None
    try:
        node = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if not (isinstance(node, ast.Call) and not node.keywords and 1 <= len(node.args) <= 2
            and (getattr(node.func, "attr", None) == "device" or getattr(node.func, "id", None) == "device")
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
        return None
    kind, _, index = node.args[0].value.partition(":")
    if len(node.args) == 2:
        return (kind, 0) if not index else None  # an index given twice: torch's own device() refuses it
    return kind, int(index) if index.isdigit() else None if not index else -1


class ProcessGroupArgumentsRefused(_base._Fsdp2Rule):
    """`init_process_group(...)` with arguments torch refuses before the group exists.

    ## What it does
    Reports `torch.distributed.init_process_group` called with literal arguments that torch 2.13's
    own checks refuse:

    - a `backend` written as `"device:backend"` pairs with a part that is not one `device:backend`
      pair (`"cuda:nccl:x"`), or that names one device twice (`"cuda:nccl,cuda:gloo"`);
    - a `backend` name that is no built-in backend (`gloo`, `nccl`, `xccl`, `ucc`, `mpi`, `fake`),
      alone (`"ncll"`) or in a pair (`"cuda:ncll"`);
    - both `init_method=` and `store=`; `store=` without a positive `world_size=` or without a
      `rank=` of 0 or more;
    - an `init_method` URL whose scheme has no rendezvous handler (torch has `tcp://`, `env://` and
      `file://`), or whose query already holds `rank` or `world_size` while the call passes them too;
    - a `device_id` that is a CPU device, an accelerator device with no index
      (`torch.device("cuda")`), or a string (`"cuda:0"`, where torch wants a `torch.device` or an int).

    A backend name or URL scheme that an imported package may register (any import that is not the
    standard library or torch) is an info: the premise that nothing registers it is not established.

    ## Why is this bad
    Each of these raises on every rank before any collective runs (c10d `BackendConfig`,
    `init_process_group`, `_new_process_group_helper`, and the rendezvous helper): the job stops at
    start-up, after the launcher has allocated every node.

    ## Example
    ```python
    dist.init_process_group(backend="ncll", device_id=torch.device("cuda"))
    ```

    ## Use instead
    ```python
    dist.init_process_group(backend="nccl", device_id=torch.device("cuda", local_rank))
    ```
    """

    code = "FS040"
    name = "process-group-arguments-refused"
    severity = "error"

    def judge(self, analysis, context):
        foreign: list[str] | None = None

        def registered(what: str, api: str):
            """None when nothing in the file can register `what`; else the premise left unknown."""
            nonlocal foreign
            if foreign is None:
                foreign = _foreign_imports(analysis.text)
            if not foreign and api not in analysis.text:
                return None
            from shardshift.context import UnknownContext

            shown = ", ".join(foreign[:3]) + (" ..." if len(foreign) > 3 else "") if foreign else f"a {api} call"
            return UnknownContext("program", f"{what} is no built-in of torch, but the program may register it "
                                  f"({shown}: code torch runs before this call)",
                                  "if no import registers it, fix the name; add `# shardshift: ignore[FS040]` where a "
                                  "package does")

        for event in analysis.of("process_group"):
            if event.file or not event.qualified.startswith(TORCH_C10D):
                continue  # another library's init_process_group, or a call in another file
            for problem in self._problems(event, registered, analysis.text):
                yield (event, *problem)
                break  # torch stops at the first; one finding per call (the checker keeps one per place)

    @staticmethod
    def _problems(event, registered, source: str):
        args = event.kwargs

        def const(name):
            found = args.get(name)
            return found.value if isinstance(found, R.Const) and found.value not in PLACEHOLDERS else None

        backend, init_method = const("backend"), const("init_method")
        store_given = _is_store(event.texts.get("store"), source)
        world_size, rank = args.get("world_size"), args.get("rank")
        if isinstance(init_method, str) and init_method and store_given:
            yield ("init_process_group(init_method=..., store=...): torch raises AssertionError (Cannot specify both "
                   "init_method and store.)", "pass either init_method or store, not both")
        if store_given:
            for name, value, bound, wants in (("world_size", world_size, 1, "positive"), ("rank", rank, 0,
                                                                                            "non-negative")):
                if name not in event.given:
                    yield (f"init_process_group(store=...) without {name}=: the default is -1 and torch raises "
                           f"AssertionError ({name} must be {wants} if using store)",
                           f"pass {name}= with the store (read it from the launcher's environment)")
                elif isinstance(value, R.Const) and isinstance(value.value, int) and not isinstance(value.value, bool) \
                        and value.value < bound:
                    yield (f"init_process_group(store=..., {name}={value.value}): torch raises AssertionError ({name} "
                           f"must be {wants} if using store)", f"pass the real {name}")
        if isinstance(backend, str) and backend:
            yield from ProcessGroupArgumentsRefused._backend(backend, registered)
            options = _not_nccl_options(event.texts.get("pg_options"), source)
            if options and "nccl" in {part.split(":")[-1] for part in backend.lower().split(",")}:
                yield (f"init_process_group(backend={backend!r}, pg_options={options}): the NCCL backend takes only a "
                       "ProcessGroupNCCL.Options instance; torch raises AssertionError (Expected backend_options "
                       "argument to be of type ProcessGroupNCCL.Options)",
                       "pg_options=dist.ProcessGroupNCCL.Options() with its fields set (opts.is_high_priority_stream = "
                       "True, opts.config...)")
        if isinstance(init_method, str) and "://" in init_method:
            yield from ProcessGroupArgumentsRefused._url(init_method, args, registered)
        device = _device_literal(event.texts.get("device_id"))
        if isinstance(device, str):
            yield (f"init_process_group(device_id={device!r}): a string has no .type, so torch raises AttributeError "
                   "while it checks the device", f"device_id=torch.device({device!r})")
        elif isinstance(device, tuple):
            kind, index = device
            if kind == "cpu":
                yield ("init_process_group(device_id=<a CPU device>): torch raises ValueError (init_process_group "
                       "device_id parameter must be an accelerator with an index)",
                       "leave device_id out for a CPU (gloo) group, or pass the rank's accelerator")
            elif index is None:
                yield (f"init_process_group(device_id=torch.device({kind!r})): a device with no index; torch raises "
                       "ValueError (Please use a device_id with index; on a build without that accelerator: does not "
                       "match the current compilation's accelerator support)",
                       f"device_id=torch.device({kind!r}, local_rank)")

    @staticmethod
    def _backend(backend: str, registered):
        lowered = backend.lower()
        if lowered in BUILT_IN_BACKENDS:
            return
        if ":" not in lowered:
            yield ProcessGroupArgumentsRefused._unknown(backend, lowered, f"Unknown backend type {lowered}",
                                                        "backend={}", registered)
            return
        seen: set[str] = set()
        for part in lowered.split(","):
            pair = part.split(":")
            if len(pair) != 2:
                yield (f"init_process_group(backend={backend!r}): {part!r} is not one device:backend pair; torch "
                       "raises ValueError (Invalid device:backend pairing)", "write it as 'cpu:gloo,cuda:nccl'")
                return
            if pair[0] in seen:
                yield (f"init_process_group(backend={backend!r}): the device {pair[0]!r} is named twice; torch raises "
                       f"ValueError (Duplicate device type {pair[0]})", "name each device type once")
                return
            seen.add(pair[0])
        for part in lowered.split(","):
            name = part.split(":")[1]
            if name not in BUILT_IN_BACKENDS:
                device = part.split(":")[0]
                yield ProcessGroupArgumentsRefused._unknown(backend, name, f"Unknown c10d backend type {name.upper()}",
                                                            device + ":{}", registered)
                return

    @staticmethod
    def _unknown(backend: str, name: str, raised: str, fix: str, registered) -> tuple:
        """An unknown backend name: an error where nothing the file imports can register it (then
        with "did you mean"), else an info that says so."""
        unknown = registered(f"the backend {name!r}", "register_backend")
        if unknown is not None:
            return (f"init_process_group(backend={backend!r}): {name!r} is no built-in c10d backend; unless a package "
                    f"the program imports registers it, torch raises AssertionError ({raised})",
                    "check that an import registers it (Backend.register_backend)", unknown)
        close = difflib.get_close_matches(name, sorted(BUILT_IN_BACKENDS - {"undefined"}), n=1, cutoff=0.7)
        return (f"init_process_group(backend={backend!r}): {name!r} is no c10d backend and nothing the file imports "
                f"registers one; torch raises AssertionError ({raised})"
                + (f"; did you mean {close[0]!r}?" if close else ""),
                fix.format(repr(close[0]) if ":" not in fix else close[0]) if close
                else "use gloo, nccl, xccl, ucc or mpi")

    @staticmethod
    def _url(url: str, args, registered):
        from urllib.parse import urlparse

        try:
            parsed = urlparse(url)
        except ValueError:
            return
        scheme = parsed.scheme
        if scheme not in RENDEZVOUS_SCHEMES:
            yield (f"init_process_group(init_method={url!r}): torch has no rendezvous handler for {scheme}://; unless "
                   f"the program registers one, it raises RuntimeError (No rendezvous handler for {scheme}://)",
                   "use env:// (torchrun's variables), tcp://host:port or file:///path",
                   registered(f"the rendezvous scheme {scheme}://", "register_rendezvous_handler"))
            return
        query = {pair.split("=")[0] for pair in filter(None, parsed.query.split("&"))}
        passed = [name for name in ("rank", "world_size") if isinstance(args.get(name), R.Const)
                  and isinstance(args[name].value, int) and args[name].value != -1]
        if query & {"rank", "world_size"} and passed:
            yield (f"init_process_group(init_method={url!r}, {', '.join(f'{n}=...' for n in passed)}): the URL already "
                   "holds rank or world_size; torch raises AssertionError (... has node-specific arguments(rank, "
                   "world_size) already.)", "give rank and world_size once: in the URL or as arguments")


def _not_nccl_options(text: str | None, source: str) -> str | None:
    """How `pg_options=` shows it is no ProcessGroupNCCL.Options instance, or None: a dict, the class
    itself (not called), or another class's options (`ProcessGroupGloo._Options()`, `Backend.Options(...)`),
    written in the call or bound once in the file to the name the call uses."""
    if not text:
        return None
    try:
        node = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    shown = text
    if isinstance(node, ast.Name):
        bound = re.findall(rf"^[ \t]*{re.escape(node.id)}[ \t]*(?::[^=]+)?=(?!=)(.*)$", source, re.M)
        if len(bound) != 1:
            return None
        try:
            node = ast.parse(bound[0].strip(), mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        shown = f"{text} = {bound[0].strip()}"
    if isinstance(node, (ast.Dict, ast.DictComp)) or (isinstance(node, ast.Call) and _base_name(node.func) == "dict"):
        return f"{shown} (a dict)"
    dotted = _dotted_name(node.func if isinstance(node, ast.Call) else node)
    if dotted is None or dotted.rsplit(".", 1)[-1] not in ("Options", "_Options"):
        return None
    owner = dotted.rsplit(".", 2)[-2] if "." in dotted else ""
    if owner == "ProcessGroupNCCL":
        return None if isinstance(node, ast.Call) else f"{shown} (the class, not an instance)"
    return f"{shown} ({owner or 'another'} options)" if owner in ("ProcessGroupGloo", "Backend", "ProcessGroup",
                                                                   "ProcessGroupUCC", "ProcessGroupMPI",
                                                                   "ProcessGroupXCCL") else None


def _base_name(node: ast.expr) -> str:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


def _dotted_name(node: ast.expr) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def _is_store(text: str | None, source: str) -> bool:
    """Whether `store=` is shown to be a store object: a call of a `...Store(...)` class written in the
    call, or a name the file binds once, to such a call (a name that may be None at run time is not)."""
    if not text:
        return False
    try:
        node = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    if isinstance(node, ast.Name):
        bound = re.findall(rf"^[ \t]*{re.escape(node.id)}[ \t]*(?::[^=]+)?=(?!=)(.*)$", source, re.M)
        return len(bound) == 1 and re.match(r"\s*[\w.]*Store\(", bound[0]) is not None
    return isinstance(node, ast.Call) and (getattr(node.func, "attr", None) or getattr(node.func, "id", "")
                                            ).endswith("Store")


def _float_entries(event, source: str) -> list[str]:
    """The entries of an init_device_mesh mesh_shape that are floats: a float the reader computed
    (`world / tp` with both known), a float literal, or a true division (`/` always gives a float), written
    in the call or bound once in the file to the name the call uses."""
    shape = event.kwargs.get("mesh_shape")
    if isinstance(shape, R.Const):
        values = shape.value if isinstance(shape.value, tuple) else (shape.value,)
        found = [repr(v) for v in values if isinstance(v, float)]
        if found:
            return found
    text = event.texts.get("mesh_shape", "")
    try:
        node = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    elements = node.elts if isinstance(node, (ast.Tuple, ast.List)) else [node]
    found = []
    for element in elements:
        if isinstance(element, ast.Name):  # `dp = world_size / tp` bound once, then `(dp, tp)`
            bound = re.findall(rf"^[ \t]*{re.escape(element.id)}[ \t]*=(?!=)(.*)$", source, re.M)
            if len(bound) == 1:
                try:
                    element = ast.parse(bound[0].strip(), mode="eval").body
                except (SyntaxError, ValueError, RecursionError, MemoryError):
                    continue
        if (isinstance(element, ast.Constant) and isinstance(element.value, float)) or \
                (isinstance(element, ast.BinOp) and isinstance(element.op, ast.Div)):
            found.append(ast.unparse(element))
    return found


class MeshShapeNotInteger(_base._Fsdp2Rule):
    """`init_device_mesh(...)` with a mesh dimension that is a float (`world_size / tp`).

    ## What it does
    Reports a `mesh_shape` entry of `torch.distributed.init_device_mesh` that is a float: a float
    literal, or a true division (`/`), which gives a float in Python 3 even when it divides evenly,
    written in the call or bound once to the name the call uses.

    ## Why is this bad
    torch builds the mesh's layout from the sizes and refuses a float: `ValueError: sizes (8.0,)
    and strides (4,) don't match` (`_FlatLayout`), on every rank at start-up. Use floor division
    (`//`), which keeps the sizes integers.

    ## Example
    ```python
    mesh = init_device_mesh("cuda", (world_size / tp, tp), mesh_dim_names=("dp", "tp"))
    ```

    ## Use instead
    ```python
    mesh = init_device_mesh("cuda", (world_size // tp, tp), mesh_dim_names=("dp", "tp"))
    ```
    """

    code = "FS041"
    name = "mesh-shape-not-integer"
    severity = "error"

    def judge(self, analysis, context):
        for event in analysis.of("mesh"):
            if event.file:
                continue
            floats = _float_entries(event, analysis.text)
            if floats:
                shown = ", ".join(floats)
                fix = event.texts.get("mesh_shape", "").replace(" / ", " // ") if "/" in event.texts.get(
                    "mesh_shape", "") else "int sizes"
                yield (event, f"init_device_mesh(..., mesh_shape={event.texts.get('mesh_shape', '...')}): {shown} is a "
                       "float (a true division or a float literal); torch raises ValueError while it lays out the "
                       "mesh (sizes ... and strides ... don't match)", f"mesh_shape={fix}")
