"""FSDP2 values torch 2.13 computes with unchecked: no `raise` of its own refuses them, an operation on them fails
(found by mutating the rule fixtures' literal arguments, tests/test_coverage_implicit.py; the sites are listed in
src/shardshift/data/coverage/fsdp2-implicit.tsv). The mesh's are FS029's (`mesh_problems`); a
`MixedPrecisionPolicy` dtype is FS050's.
"""

from __future__ import annotations

from shardshift.rules.fsdp2 import rules as _base

R = _base.R

# the values shardshift's own FSDP2 writer leaves for the user to fill ("auto" from a Trainer config): the
# emitted setup() refuses to run until they are replaced, so they are not torch's refusal to report
PLACEHOLDERS = frozenset({"auto", "FILL_IN"})
# the device types torch.device parses (c10's DeviceType names, torch 2.13), and the out-of-tree backends that
# rename privateuse1 (Ascend's torch_npu, Cambricon's torch_mlu, Moore Threads' torch_musa, ...)
TORCH_DEVICE_TYPES = frozenset({"cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga",
                                "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone"})
OUT_OF_TREE_DEVICE_TYPES = frozenset({"npu", "mlu", "musa", "gcu", "sdaa", "dipu", "tpu"})
# integer and boolean dtypes: a parameter cast to one cannot require gradients
INTEGER_DTYPES = frozenset(f"torch.{name}" for name in (
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "int", "long", "short", "bool"))


def _key(mesh) -> tuple[str, int, int]:
    return mesh.file, mesh.line, mesh.column


def _used(analysis) -> dict[tuple[str, int, int], list[str]]:
    """The root meshes (by where init_device_mesh made them) that a call which runs for certain (no undecided
    condition) gives to fully_shard or to a DTensor API, a slice of them too: {mesh: the calls' names, in the order
    they run}."""
    used: dict[tuple[str, int, int], list[str]] = {}
    for event in analysis.of("fully_shard", "dtensor"):
        mesh = event.kwargs.get("mesh" if event.kind == "fully_shard" else "device_mesh")
        if isinstance(mesh, R.Mesh) and not event.conds:
            used.setdefault(_key(mesh), []).append("fully_shard" if event.kind == "fully_shard" else event.name)
    return used


def _shape_entries(value) -> list | None:
    if isinstance(value, R.Const) and isinstance(value.value, tuple):
        return [R.Const(v) for v in value.value]
    if isinstance(value, R.ListVal):
        return list(value.items)
    return None


def _shape_problem(entries: list | None) -> str | None:
    """What torch raises on a literal mesh_shape of ints and Nones with a dim that is None, 0 or negative, in the
    order torch meets them: the sizes multiplied (None), the layout's cosize (0), torch.arange over the ranks or the
    rank map's shape (negative). None where the shape is fine or not every dim is such a literal."""
    if not entries or not all(isinstance(e, R.Const) and (e.value is None or type(e.value) is int) for e in entries):
        return None
    sizes = [e.value for e in entries]
    if None in sizes:
        return (f"dim {sizes.index(None)} is None; torch raises TypeError while it lays out the mesh (unsupported "
                "operand type(s) for *: 'int' and 'NoneType')")
    if 0 in sizes:
        raised = ("AssertionError (the layout's complement)" if sizes[0] == 0 else
                  "ZeroDivisionError (integer modulo by zero)")
        return f"dim {sizes.index(0)} has size 0; torch raises {raised} while it lays out the mesh"
    negative = [i for i, size in enumerate(sizes) if size < 0]
    if negative:
        return (f"dim {negative[0]} has size {sizes[negative[0]]}; torch raises RuntimeError while it numbers the "
                "mesh's ranks (torch.arange: upper bound and lower bound inconsistent with step sign; or, for an even "
                "number of negative sizes, an invalid shape dimension)")
    return None


def mesh_problems(analysis, text: str):
    """(event, message, fix) for each `init_device_mesh` whose literal device type, mesh_shape entry or last dim
    name torch fails on with no check of its own."""
    used = _used(analysis)
    hsdp = {_key(e.kwargs["mesh"]) for e in analysis.of("fully_shard")
            if isinstance(e.kwargs.get("mesh"), R.Mesh) and e.kwargs["mesh"].root and len(e.kwargs["mesh"].dims) == 2
            and not e.conds}
    for event in analysis.of("mesh"):
        if event.file or event.conds:
            continue
        mesh = event.kwargs["mesh"]
        yield from _device(event, used.get(_key(mesh), []), text)
        problem = _shape_problem(_shape_entries(event.kwargs.get("mesh_shape")))
        if problem is not None:
            yield (event, f"init_device_mesh(..., mesh_shape={event.texts.get('mesh_shape', '...')}): {problem}",
                   "give every dim a positive int size; their product is the number of ranks")
        names = event.kwargs.get("mesh_dim_names")
        entries = _shape_entries(names)
        if _key(mesh) in hsdp and entries and len(entries) == 2 and isinstance(entries[-1], R.Const) \
                and not isinstance(entries[-1].value, str):
            yield (event, f"init_device_mesh(..., mesh_dim_names={event.texts.get('mesh_dim_names', '...')}): the "
                   f"last dim's name is {entries[-1].value!r}, and fully_shard on this 2-D mesh slices it by that name; "
                   f"torch raises TypeError (the slice takes the name for a sequence of names: "
                   f"'{type(entries[-1].value).__name__}' object is not iterable)",
                   "name both dims with strings, e.g. mesh_dim_names=(\"dp_replicate\", \"dp_shard\")")


def _device(event, users: list[str], text: str):
    device = event.kwargs.get("device_type")
    if not isinstance(device, R.Const):
        return
    value = device.value
    if value and not isinstance(value, str):  # a truthy non-string: `device_type.isalpha()` in init_device_mesh
        yield (event, f"init_device_mesh gets device type {value!r}, which is no string: torch raises AttributeError "
               f"('{type(value).__name__}' object has no attribute 'isalpha')", "pass \"cuda\" (or \"cpu\")")
    elif not isinstance(value, str):  # None, 0, False skip init_device_mesh's check; fully_shard looks them up
        if "fully_shard" in users:  # (a DTensor API moves tensors with .to(None), which keeps them where they are)
            yield (event, f"init_device_mesh gets device type {value!r}, and fully_shard uses the mesh: torch raises "
                   f"TypeError where fully_shard looks up the device module (getattr(torch, {value!r}): attribute "
                   "name must be string)", "pass \"cuda\" (or \"cpu\")")
    elif users and value.isalpha() and value not in TORCH_DEVICE_TYPES | OUT_OF_TREE_DEVICE_TYPES | PLACEHOLDERS \
            and "privateuse1" not in text and "_register_device_module" not in text:
        user = users[0]
        raised = ("raises AttributeError (torch has no torch.{0} module to ask for the current device: 'NoneType' "
                  "object has no attribute 'current_device')" if user == "fully_shard" else
                  "raises RuntimeError when it moves a tensor to the mesh's device (Expected one of cpu, cuda, ... "
                  "device type)").format(value)
        fix = value.lower() if value.lower() in TORCH_DEVICE_TYPES else "cuda"
        yield (event, f"init_device_mesh gets device type {value!r}, which torch does not have, and {user} uses the "
               f"mesh: {user} {raised}", f"pass {fix!r}")


def _dtype_problem(value, text: str) -> tuple[str, str] | None:
    """(what torch does, the fix) for a param_dtype torch fails on, None for one it takes or the code leaves
    unknown."""
    if isinstance(value, R.Qual) and value.name in INTEGER_DTYPES:
        return ("FSDP2 casts each parameter to it at the first forward and torch raises RuntimeError (only tensors of "
                "floating point and complex dtype can require gradients)", "param_dtype=torch.bfloat16")
    if isinstance(value, R.Dtype) and value.name == "fp8":
        return ("FSDP2 runs the forward's layers in float8, and torch implements no float8 kernel for a residual add, a "
                "norm or an activation (NotImplementedError at the first forward, e.g. \"add_stub\" not implemented for "
                "'Float8_e4m3fn'); float8 training goes through torchao's Float8Linear",
                "param_dtype=torch.bfloat16 (and torchao.float8.convert_to_float8_training)")
    return _string_dtype(value, "param_dtype", "the first forward's all-gather", "torch.bfloat16")


def _string_dtype(value, field: str, where: str, default: str) -> tuple[str, str] | None:
    """(what torch does, the fix) for a dtype written as a string (not the writer's placeholders): torch.empty
    refuses it where FSDP2 allocates the buffer of that dtype."""
    if not (isinstance(value, R.Const) and isinstance(value.value, str) and value.value not in PLACEHOLDERS):
        return None
    name = value.value.removeprefix("torch.")
    return (f"a string, not a torch.dtype: torch raises TypeError at {where} (empty(): argument 'dtype' must be "
            "torch.dtype, not str)", f"{field}=torch.{name}" if name.isidentifier() else f"{field}={default}")


def _reduce_problem(value) -> tuple[str, str] | None:
    """(what torch does, the fix) for a reduce_dtype torch fails on at the first backward, None for one it takes or
    the code leaves unknown (a float8 one fails only where the gradients are pre-divided: not judged)."""
    if isinstance(value, R.Qual) and value.name in INTEGER_DTYPES:
        return ("FSDP2 reduce-scatters the gradients into a buffer of it, and torch raises TypeError at the first "
                "backward (torch.cat(): input types can't be cast to the desired output type)",
                "reduce_dtype=torch.float32")
    return _string_dtype(value, "reduce_dtype", "the first backward's reduce-scatter", "torch.float32")


class MixedPrecisionDtypeRefused(_base._Fsdp2Rule):
    """`MixedPrecisionPolicy(param_dtype=...)` names a dtype FSDP2 cannot compute in.

    ## What it does
    Reports a `MixedPrecisionPolicy` that `fully_shard` gets (in a call that runs for certain) whose
    `param_dtype` is an integer or boolean dtype (`torch.int8`), a float8 dtype
    (`torch.float8_e4m3fn`), or a string (`"bfloat16"`); or whose `reduce_dtype` is an integer or
    boolean dtype or a string, which fails at the first backward instead (torch.cat or torch.empty
    into a buffer of that dtype for the reduce-scatter: TypeError).

    ## Why is this bad
    torch 2.13 checks none of these when the policy is built or passed; the first forward fails:
    FSDP2 all-gathers the parameters into a buffer of `param_dtype` (`torch.empty(...,
    dtype="bfloat16")`: `TypeError: argument 'dtype' must be torch.dtype, not str`), makes them
    parameters that require gradients (`RuntimeError: Only Tensors of floating point and complex
    dtype can require gradients` for an integer dtype), and runs the layers in that dtype: torch has
    float8 matmuls but no float8 kernel for an addition, a norm or an activation
    (`NotImplementedError: "add_stub" not implemented for 'Float8_e4m3fn'`), so any model with a
    residual, a norm or an activation fails. Float8 training casts inside the matmuls instead
    (torchao's `Float8Linear`), with bf16 parameters.

    ## Example
    ```python
    mp_policy = MixedPrecisionPolicy(param_dtype="bfloat16", reduce_dtype=torch.float32)
    fully_shard(model, mp_policy=mp_policy)
    ```

    ## Use instead
    ```python
    mp_policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    fully_shard(model, mp_policy=mp_policy)
    ```
    """

    code = "FS050"
    name = "mixed-precision-dtype-refused"
    severity = "error"

    def judge(self, analysis, context):
        policies = {(e.line, e.column): e for e in analysis.of("policy") if e.name == "mp" and not e.file}
        for event in analysis.of("fully_shard"):
            policy = event.kwargs.get("mp_policy")
            if not isinstance(policy, R.Policy) or policy.kind != "mp" or policy.file or event.conds:
                continue
            made = policies.get((policy.line, policy.column))
            if made is None:
                continue
            for field, problem in (("param_dtype", _dtype_problem(policy.kwargs.get("param_dtype"), analysis.text)),
                                   ("reduce_dtype", _reduce_problem(policy.kwargs.get("reduce_dtype")))):
                if problem is not None:
                    shown = policy.texts.get(field, "...")
                    yield (made, f"MixedPrecisionPolicy({field}={shown}) is given to fully_shard: {problem[0]}",
                           problem[1])
                    break
