"""FSDP2 rules over the meshes a script hands to tensor parallelism and to `fully_shard` (torch 2.13).

One analysis (`MeshUse`) serves them all: the meshes the script builds (`init_device_mesh` with literal
sizes, their slices `mesh["dp"]` and flattened dims `mesh["dp", "cp"]._flatten("dp_cp")`, each dim with
its layout over the root mesh's ranks, as the reader keeps them), the modules whose parameters the
script makes DTensors over a mesh (`distribute_module`, `parallelize_module` with a literal plan), and
each `fully_shard` call's mesh, `dp_mesh_dims` and `reshard_after_forward`. That two calls use one
module or one mesh object is taken only from what the reader resolves (the same name bound once,
slices of one root); what it cannot tie gives no finding.

torch joins the meshes the way `DeviceMesh._concatenate` does: the meshes must index one rank map
(slices of one root, or roots of the same number of ranks) and their dims must not overlap.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from shardshift.rules.fsdp2 import rules as _base

R = _base.R
_show = _base._show

# the parallel styles that make the parameters of the module they are applied to DTensors
PARAMETER_STYLES = ("ColwiseParallel", "RowwiseParallel", "SequenceParallel")
CACHED = re.compile(r"@\s*(?:functools\s*\.\s*)?(?:lru_)?cache\b")


@dataclass
class Distributed:
    """Parameters the script makes DTensors over `mesh`: those of the module at `path` (a plan's style),
    or every parameter at or below it (`subtree`: distribute_module replicates what partition_fn leaves)."""

    event: object
    mesh: object
    path: str
    subtree: bool


def root(mesh):
    return mesh.origin or mesh


def overlapping(axes) -> bool:
    """Whether the dims (each a tuple of (size, stride) pairs) generate a rank twice: torch's
    `_MeshLayout(...).collapse().check_orthogonal()` is False."""
    pairs = sorted(((stride, size) for axis in axes for size, stride in axis if size != 1), reverse=True)
    return any(pairs[i][0] % (pairs[i + 1][0] * pairs[i + 1][1]) for i in range(len(pairs) - 1))


def _pairs(axes) -> tuple:
    return tuple(pair for axis in axes for pair in axis if pair[0] != 1)


def _plan_entries(event) -> list[tuple[str, str]] | None:
    """(plan key, style source) of parallelize_module's plan: one style applies to the module itself (key "")."""
    value = event.kwargs.get("parallelize_plan")
    if isinstance(value, R.DictVal):
        if set(value.texts) != set(value.items):
            return None
        return list(value.texts.items())
    text = event.texts.get("parallelize_plan", "")
    try:
        node = ast.parse(text, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if isinstance(node, ast.Call):
        return [("", text)]
    if isinstance(node, ast.Dict) and all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in node.keys):
        return [(k.value, ast.unparse(v)) for k, v in zip(node.keys, node.values)]
    return None


def _style(text: str) -> bool:
    head = text.split("(", 1)[0].strip()
    return "(" in text and head.rsplit(".", 1)[-1].endswith(PARAMETER_STYLES)


def _below(path: str, key: str) -> str | None:
    """The reader's path of a plan key under `path` ("layers.*.attention" -> model.layers[*].attention)."""
    for part in key.split(".") if key else ():
        if part == "*" or part.isdigit():
            path += "[*]"
        elif re.fullmatch(r"[A-Za-z_]\w*", part):
            path += "." + part
        else:
            return None
    return path


def _runs_before(first, second) -> bool:
    return (first.flow == second.flow and first.seq < second.seq) or (first.flow == 0 and second.flow != 0)


class MeshUse:
    """What the script does with meshes, read once per analysis."""

    def __init__(self, analysis) -> None:
        self.shards = [e for e in analysis.of("fully_shard") if not e.file]
        self.flattens = [e for e in analysis.of("mesh_flatten") if not e.conds and not e.file]
        self.cached = bool(CACHED.search(analysis.text))
        self.distributed: list[Distributed] = []
        self.dtensor_calls = analysis.of("dtensor")
        for event in self.dtensor_calls:
            mesh = event.kwargs.get("device_mesh")
            if event.conds or event.file or not event.targets or not isinstance(mesh, R.Mesh):
                continue
            if event.name == "distribute_module":
                self.distributed.append(Distributed(event, mesh, event.targets[0], True))
            elif event.name == "parallelize_module" and len(mesh.dims) == 1:  # a style refuses more dims itself
                for key, style in _plan_entries(event) or ():
                    path = _below(event.targets[0], key)
                    if path is not None and _style(style):
                        self.distributed.append(Distributed(event, mesh, path, False))

    def mesh_of(self, event, world: int | None):
        """fully_shard's mesh: the Mesh it is given, torch's default 1-D mesh over the world when none is given
        (with the world's size where --world-size gives it), or None when the reader cannot tell."""
        if "mesh" in event.given or "**" in event.texts:
            mesh = event.kwargs.get("mesh")
            return mesh if isinstance(mesh, R.Mesh) else None
        return R.Mesh(((None, world),), None, event.line, event.column, names_given=False,
                      axes=(((world, 1),),) if world else None)

    def managed(self, event, path: str) -> list[Distributed]:
        """The DTensor parameters made before `event` that fully_shard on `path` manages: its own, those of
        modules below it that no other fully_shard call takes, or (distribute_module) every one at or above."""
        found = []
        for item in self.distributed:
            if not _runs_before(item.event, event):
                continue
            if path == item.path or (item.subtree and R.is_below(path, item.path)):
                found.append(item)
            elif R.is_below(item.path, path) and not any(
                    t != path and (t == item.path or R.is_below(item.path, t)) and R.is_below(t, path)
                    for other in self.shards for t in other.targets):
                found.append(item)
        return found

    def first_dtensors(self, event) -> bool:
        """The DTensor call `event` runs before any other call that makes DTensors (fully_shard included)."""
        return not any(_runs_before(other, event) for other in (*self.dtensor_calls, *self.shards) if other is not event)

    def all_dtensors(self, event, path: str) -> list[Distributed]:
        """The calls that make every parameter fully_shard on `path` manages a DTensor."""
        return [item for item in self.distributed if _runs_before(item.event, event)
                and (path == item.path or (item.subtree and R.is_below(path, item.path)))]


def _equal(a, b) -> bool:
    """Two meshes torch compares equal (the same ranks, layout and dim names), where the reader knows."""
    return (a.axes is None or b.axes is None or a.axes == b.axes) and [n for n, _ in a.dims] == [n for n, _ in b.dims] \
        and root(a).size == root(b).size and a.names_given == b.names_given


def join_problem(dp, tp) -> str | None:
    """How torch's _concatenate([dp, tp]) fails: "ranks" (different rank maps), "overlap", "" (it joins
    them), or None (the reader does not know the sizes)."""
    a, b = root(dp), root(tp)
    if a is not b:
        if a.size is None or b.size is None:
            return None
        if a.size != b.size:
            return "ranks"
    if dp.axes is None or tp.axes is None:
        return None
    return "overlap" if overlapping(dp.axes + tp.axes) else ""


def tp_problem(mesh, tp) -> str | None:
    """What torch's TP/EP path refuses when fully_shard on `mesh` meets DTensors on `tp`: "device" (another
    device type, refused first), a join_problem, "dims" (a DTensor mesh of three or more dims), "" (none),
    or None (unknown)."""
    if mesh.device and tp.device and mesh.device != tp.device:
        return "device"
    found = join_problem(mesh, tp)
    return "dims" if found == "" and len(tp.dims) > 2 else found


META = re.compile(r"""["']meta["']|\binit_empty_weights\b""")


def _meta_unknown(text: str):
    """The premise of a device-type refusal: the parameters are not on the meta device (torch leaves meta
    tensors where they are and compares no mesh). Unknown where the file builds something on the meta device."""
    if not META.search(text):
        return None
    from shardshift.context import UnknownContext

    return UnknownContext("program", "whether the module's parameters are on the meta device when fully_shard runs "
                          "(this file builds on the meta device; torch skips the check for meta tensors)",
                          "if the parameters are real tensors there, this is the error; build both meshes on one "
                          "device type either way")


def _where(mesh) -> str:
    return f"the mesh from line {mesh.line}" if mesh.line else "the mesh"


def _dims(mesh) -> str:
    if mesh.names_given and all(n is not None for n, _ in mesh.dims):
        return "(" + ", ".join(f"{n}={s}" if s is not None else n for n, s in mesh.dims) + ")"
    return "(" + ", ".join(str(s) for _, s in mesh.dims) + ")"


class FullyShardTensorParallelMeshRefused(_base._Fsdp2Rule):
    """`fully_shard` cannot join its mesh with the mesh the module's DTensor parameters are on.

    ## What it does
    Reports `fully_shard` (without `dp_mesh_dims`) on a module whose parameters the script made
    DTensors (`parallelize_module` with a literal plan, `distribute_module`) over a mesh that torch
    cannot join with fully_shard's: a mesh of another device type than the `mesh=` fully_shard gets
    (both written as literals: TP on `init_device_mesh("cpu", ...)`, FSDP on `"cuda"`, or the reverse);
    a mesh from another `init_device_mesh` call over another number of ranks; a mesh sharing a dim
    with fully_shard's (the same slice, `mesh` for both, or no `mesh=` at all: the default mesh spans
    every rank); or a tensor-parallel mesh of three or more dims. Meshes and modules are tied only
    where the reader resolves them (one name, slices of one `init_device_mesh` with literal sizes).
    The device types are an info where the file builds something on the meta device (torch leaves
    meta tensors where they are and compares no mesh), and nothing with `ignored_params`.

    ## Why is this bad
    fully_shard first moves the parameters it manages to its mesh's device and refuses a DTensor on a
    mesh of another device type: `ValueError: Requires DTensor to have mesh of the same type as the
    FSDP mesh but got cpu for DTensor and cuda for FSDP`. Then for each DTensor parameter it builds
    one mesh from both (`DeviceMesh._concatenate`), and torch 2.13 raises at the `fully_shard` call:
    `RuntimeError: Cannot concatenate DeviceMeshes derived from different device meshs`,
    `RuntimeError: Cannot concatenate overlapping meshes`, or `NotImplementedError: FSDP only
    supports 1D TP/EP or 2D EP+TP`.

    ## Example
    ```python
    tp_mesh = init_device_mesh("cuda", (8,), mesh_dim_names=("tp",))
    dp_mesh = init_device_mesh("cuda", (4,), mesh_dim_names=("dp",))
    parallelize_module(model, tp_mesh, {"output": ColwiseParallel()})
    fully_shard(model, mesh=dp_mesh)
    ```

    ## Use instead
    ```python
    mesh = init_device_mesh("cuda", (4, 8), mesh_dim_names=("dp", "tp"))
    parallelize_module(model, mesh["tp"], {"output": ColwiseParallel()})
    fully_shard(model, mesh=mesh["dp"])
    ```
    """

    code = "FS047"
    name = "fully-shard-tp-mesh-refused"
    severity = "error"

    def judge(self, analysis, context):
        use = MeshUse(analysis)
        failed: set[int] = set()  # the flows a refused call already ended
        for event in use.shards:
            if event.conds or "dp_mesh_dims" in event.given or event.flow in failed:
                continue
            mesh = use.mesh_of(event, context.world_size)
            if mesh is None:
                continue
            for path in event.targets:
                problem = next(((item, found) for item in use.managed(event, path)
                                if (found := self._problem(event, mesh, item.mesh))), None)
                if problem is not None:
                    failed.add(event.flow)
                    yield (event, *self._message(event, path, mesh, *problem),
                           *([_meta_unknown(analysis.text)] if problem[1] == "device" else []))
                    break

    @staticmethod
    def _problem(event, mesh, tp) -> str | None:
        if mesh.device and tp.device and mesh.device != tp.device:
            # torch compares the device types first (_move_states_to_device), where both are literals of a type
            # alone ("cuda:0" init_device_mesh refuses itself) and no ignored_params may hold the DTensors
            return "device" if "mesh" in event.given and "ignored_params" not in event.given \
                and all(isinstance(d, str) and d.isalpha() for d in (mesh.device, tp.device)) else None
        if "mesh" not in event.given and tp.device not in (None, "cuda"):
            return None  # the default mesh is on the accelerator: a device-type refusal the file does not decide
        if not mesh.names_given or not tp.names_given:
            return "unnamed"  # the default mesh has no names either
        found = tp_problem(mesh, tp)
        return found if found in ("ranks", "overlap", "dims") else None

    @staticmethod
    def _message(event, path, mesh, item, problem):
        given = "mesh" in event.given
        ours = _where(mesh) + f" {_dims(mesh)}" if given else f"its default mesh (every rank{', ' + str(mesh.size) if mesh.size else ''})"
        theirs = f"the mesh from line {item.mesh.line} {_dims(item.mesh)}"
        made = f"{item.event.name} at line {item.event.line}"
        fix = ('slice both meshes from one init_device_mesh: mesh = init_device_mesh(device, (dp, tp), '
               'mesh_dim_names=("dp", "tp")); give mesh["tp"] to ' + item.event.name + ' and mesh=mesh["dp"] to fully_shard')
        if problem == "device":
            return (f"fully_shard on {_show(path)} gets {_where(mesh)}, on {mesh.device!r}, but {made} made its "
                    f"parameters DTensors on {_where(item.mesh)}, on {item.mesh.device!r}: torch raises ValueError "
                    f"(Requires DTensor to have mesh of the same type as the FSDP mesh but got {item.mesh.device} for "
                    f"DTensor and {mesh.device} for FSDP)",
                    fix.replace("(device,", f'("{mesh.device}",'))
        if problem == "ranks":
            return (f"fully_shard on {_show(path)} joins {ours} with {theirs}, which {made} made its parameters "
                    f"DTensors on, but the two come from init_device_mesh calls over {root(mesh).size} and "
                    f"{root(item.mesh).size} ranks: torch raises RuntimeError (Cannot concatenate DeviceMeshes derived "
                    "from different device meshs)", fix)
        if problem == "unnamed":
            which = ours if not mesh.names_given else theirs
            return (f"fully_shard on {_show(path)} joins {ours} with {theirs}, which {made} made its parameters "
                    f"DTensors on, but {which} has no mesh_dim_names: torch raises TypeError while it joins them "
                    "(Invariant encountered: value was None)", fix if given else fix.replace("and mesh=", "and pass mesh="))
        if problem == "overlap":
            return (f"fully_shard on {_show(path)} joins {ours} with {theirs}, which {made} made its parameters "
                    "DTensors on, and the two share ranks along a dim: torch raises RuntimeError (Cannot concatenate "
                    "overlapping meshes)", fix if given else fix.replace("and mesh=", "and pass mesh="))
        return (f"fully_shard on {_show(path)} gets parameters that {made} made DTensors on "
                f"{theirs}, of {len(item.mesh.dims)} dims: torch raises NotImplementedError (FSDP only supports 1D TP/EP or 2D EP+TP)",
                "distribute the parameters over at most two dims (EP and TP), and give fully_shard the other dims")


class DpMeshDimsMeshRefused(_base._Fsdp2Rule):
    """`fully_shard(..., dp_mesh_dims=...)` on a mesh or parameters torch refuses to join.

    ## What it does
    Reports `fully_shard` with `dp_mesh_dims` where `DataParallelMeshDims` names one mesh dim in both
    `shard` and `replicate`; where a tuple of dims (`shard=("dp", "cp")`) flattens to a name
    (`"dp_cp"`) the root mesh already has as a dim, or that the script already gave a flattened mesh
    of other dims (`mesh["cp", "tp"]._flatten("dp_cp")`); and where the module's parameters were made
    DTensors (`distribute_module`, `parallelize_module`) over a mesh without `mesh_dim_names` or over
    another mesh object than the one fully_shard gets (a second `init_device_mesh`, or a slice).

    ## Why is this bad
    With `dp_mesh_dims` fully_shard takes the data-parallel dims out of the mesh it gets and expects
    each parameter to be a DTensor on that very mesh object. torch 2.13 raises at the `fully_shard`
    call: `RuntimeError: Cannot concatenate overlapping meshes`, `ValueError: dp_cp already exists for
    submesh`, `ValueError: Flatten mesh with mesh_dim_name dp_cp has been created before`,
    `AssertionError: spmd_mesh.mesh_dim_names must not be None`, or `ValueError: Expected param's
    DTensor mesh to be the same mesh passed to fully_shard, but got different mesh objects`.

    ## Example
    ```python
    mesh = init_device_mesh("cuda", (4, 8), mesh_dim_names=("dp", "tp"))
    distribute_module(model, mesh["dp", "tp"])
    fully_shard(model, mesh=mesh, dp_mesh_dims=DataParallelMeshDims(shard="dp"))
    ```

    ## Use instead
    ```python
    mesh = init_device_mesh("cuda", (4, 8), mesh_dim_names=("dp", "tp"))
    distribute_module(model, mesh)
    fully_shard(model, mesh=mesh, dp_mesh_dims=DataParallelMeshDims(shard="dp"))
    ```
    """

    code = "FS048"
    name = "dp-mesh-dims-mesh-refused"
    severity = "error"

    def judge(self, analysis, context):
        use = MeshUse(analysis)
        failed: set[int] = set()  # the flows a refused call already ended
        for event in use.shards:
            dims = event.kwargs.get("dp_mesh_dims")
            mesh = event.kwargs.get("mesh")
            if event.conds or event.flow in failed or not isinstance(dims, R.Policy) or dims.kind != "dp_mesh_dims" or dims.conds \
                    or not isinstance(mesh, R.Mesh) or not mesh.names_given:
                continue
            have = [name for name, _ in mesh.dims]
            from shardshift.rules.fsdp2.arguments import _names

            shard, replicate = (_names(dims.kwargs.get(f)) for f in ("shard", "replicate"))
            if None in have or any(n not in have for n in (shard or ()) + (replicate or ())):
                continue  # FS030 reports a name the mesh lacks
            problem = self._flatten(use, event, mesh, shard) or self._flatten(use, event, mesh, replicate) \
                or self._twice(mesh, shard, replicate)
            if problem is None and not self._int_reshard(event):
                problem = self._objects(use, event, mesh)
            if problem is not None:
                failed.add(event.flow)
                yield (event, *problem)

    @staticmethod
    def _int_reshard(event) -> bool:
        value = event.value("reshard_after_forward")
        return isinstance(value, int) and not isinstance(value, bool)  # FS030: refused before the parameters

    @staticmethod
    def _flatten(use, event, mesh, names):
        if not names or len(names) < 2:
            return None
        picked = [i for n in names for i, d in enumerate(mesh.dims) if d[0] == n]
        if picked != sorted(picked):
            return None  # the slice itself is refused (FS029's order)
        joined = "_".join(names)
        base = root(mesh)
        if joined in [n for n, _ in base.dims]:
            return (f"dp_mesh_dims flattens {names} into a dim named {joined!r}, which the mesh from line {base.line} "
                    f"already has: torch raises ValueError ({joined} already exists for submesh)",
                    f"rename the mesh dim {joined!r}, or give dp_mesh_dims one dim")
        if mesh.axes is None:
            return None
        layout = _pairs(tuple(mesh.axes[i] for i in picked))
        for flat in use.flattens:
            source = flat.kwargs["mesh"]
            name = flat.kwargs["name"] if flat.kwargs["given"] else (
                "_".join(n for n, _ in source.dims) if all(n for n, _ in source.dims) else None)
            if name != joined or root(source) is not base or source.axes is None or not _runs_before(flat, event):
                continue
            if _pairs(source.axes) != layout:
                return (f"dp_mesh_dims flattens {names} into {joined!r}, but line {flat.line} already flattened other "
                        f"dims of the same mesh under that name: torch raises ValueError (Flatten mesh with "
                        f"mesh_dim_name {joined} has been created before)",
                        f"give the flattened mesh at line {flat.line} another name")
        return None

    @staticmethod
    def _twice(mesh, shard, replicate):
        both = [n for n in shard or () if n in (replicate or ())]
        sizes = dict(mesh.dims)
        both = [n for n in both if sizes.get(n) != 1]
        if both:
            return (f"DataParallelMeshDims names {both[0]!r} in both shard and replicate: torch raises RuntimeError "
                    "(Cannot concatenate overlapping meshes) when fully_shard joins the two",
                    "name each mesh dim once: shard on one dim, replicate on another")
        return None

    @staticmethod
    def _objects(use, event, mesh):
        items = [item for path in event.targets for item in use.all_dtensors(event, path)]
        if any(i.mesh.device and mesh.device and i.mesh.device != mesh.device for i in items):
            return None  # torch refuses the device types first, before it builds any FSDPParam
        for path in event.targets:
            for item in use.all_dtensors(event, path):
                other = item.mesh
                if not other.names_given:
                    return (f"fully_shard on {_show(path)} gets dp_mesh_dims, but {item.event.name} at line "
                            f"{item.event.line} made its parameters DTensors on the mesh from line {other.line}, which "
                            "has no mesh_dim_names: torch raises AssertionError (spmd_mesh.mesh_dim_names must not be "
                            "None)", "distribute the parameters over the mesh given to fully_shard")
                if other is mesh or use.cached or (_equal(other, mesh) and not use.first_dtensors(item.event)):
                    # one object, or maybe one: a cached helper, or a mesh equal to fully_shard's after the program
                    # made other DTensors (torch's sharding propagation hands a new DTensor the mesh object of an
                    # earlier equal one)
                    continue
                same = other.root and mesh.root and (other.file, other.line, other.column) == (mesh.file, mesh.line,
                                                                                           mesh.column)
                return (f"fully_shard on {_show(path)} gets dp_mesh_dims with {_where(mesh)}"
                        f"{' (a slice)' if not mesh.root else ''}, but {item.event.name} at line {item.event.line} made "
                        f"its parameters DTensors on another mesh object ({_where(other)}"
                        f"{', a slice' if not other.root else ''}{', made by another run of that call' if same else ''}"
                        "): torch raises ValueError (Expected param's DTensor "
                        "mesh to be the same mesh passed to fully_shard, but got different mesh objects)",
                        "pass the same mesh object to both: bind it once (mesh = ...) and use that name in each call")
        return None


class ReshardToSmallerMeshWithDTensors(_base._Fsdp2Rule):
    """`reshard_after_forward=<int>` on a module whose parameters are DTensors.

    ## What it does
    Reports `fully_shard(module, reshard_after_forward=N)` with N an integer between 1 and the shard
    group's size (both excluded, N dividing it) on a module that is not the root, when the script made
    the module's parameters DTensors (`parallelize_module` with a literal plan, `distribute_module`)
    over a mesh fully_shard can join with its own.

    ## Why is this bad
    An integer reshards the parameters after forward to a smaller group, which FSDP2 does not support
    for DTensor parameters: torch 2.13 raises `NotImplementedError: Resharding to smaller mesh is not
    supported for DTensor parameters yet` at the first forward, after the module has run.

    ## Example
    ```python
    mesh = init_device_mesh("cuda", (4, 8), mesh_dim_names=("dp", "tp"))
    parallelize_module(model, mesh["tp"], {"layers.*.feed_forward": ColwiseParallel()})
    for layer in model.layers:
        fully_shard(layer, mesh=mesh["dp"], reshard_after_forward=2)
    fully_shard(model, mesh=mesh["dp"])
    ```

    ## Use instead
    ```python
    for layer in model.layers:
        fully_shard(layer, mesh=mesh["dp"], reshard_after_forward=True)
    ```
    """

    code = "FS049"
    name = "reshard-int-with-dtensor-params"
    severity = "error"

    def judge(self, analysis, context):
        use = MeshUse(analysis)
        failed: set[int] = set()  # the flows whose first forward already fails
        for event in use.shards:
            value = event.value("reshard_after_forward")
            if event.conds or event.flow in failed or "dp_mesh_dims" in event.given or not isinstance(value, int) or isinstance(value, bool) \
                    or value <= 1:
                continue
            mesh = use.mesh_of(event, context.world_size)
            if mesh is None or len(mesh.dims) not in (1, 2):
                continue
            size = mesh.dims[-1][1]  # the shard dim: the only one, or the second of an HSDP mesh
            if size is None or value >= size or size % value:
                continue  # equal to the group: a plain reshard; not a factor: FS006
            for path in event.targets:
                root_call = not any(R.is_below(path, t) for other in use.shards
                                    if other is not event and not other.conds and other.flow in (0, event.flow)
                                    for t in other.targets)
                if root_call:
                    continue  # the root keeps its parameters after forward
                item = next((i for i in use.managed(event, path) if tp_problem(mesh, i.mesh) == ""), None)
                if item is not None:
                    failed.add(event.flow)
                    yield (event, f"fully_shard on {_show(path)} gets reshard_after_forward={value}, but "
                           f"{item.event.name} at line {item.event.line} made its parameters DTensors: torch raises "
                           "NotImplementedError at the first forward (Resharding to smaller mesh is not supported for "
                           "DTensor parameters yet)", "use reshard_after_forward=True (or False) for this module")
                    break
