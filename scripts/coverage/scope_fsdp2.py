"""FSDP2's configuration checks: what torch 2.13 refuses in the arguments of `fully_shard` and the mesh it is given.

An FSDP2 "configuration" is the code that sets up sharding: `init_device_mesh(...)` (and slicing
the mesh by dim names), `fully_shard(module, mesh=..., reshard_after_forward=..., mp_policy=...,
offload_policy=..., ignored_params=..., dp_mesh_dims=...)` called on blocks then the root, and the
FSDPModule setters users call afterwards (`set_reshard_after_forward`, `set_modules_to_*_prefetch`,
...). Included, file by file:

- `_fully_shard/_fully_shard.py`: `fully_shard` itself, every `FSDPModule` method (the setters users
  call check their arguments; the rest guard FSDP's own state and are judged `internal`), and the
  public helpers `register_fsdp_forward_method` / `share_comm_ctx` / `_assert_all_fsdp_modules` (what
  the prefetch setters call to check their list) / `_unimplemented_deepcopy` (`copy.deepcopy` of a
  sharded module).
- `_fully_shard/_fsdp_init.py`, every function: the helpers `fully_shard` calls to check the module,
  the mesh (`_validate_mesh`), `reshard_after_forward` (`_get_post_forward_mesh_info`), the managed
  parameters and the per-parameter meshes of `shard_placement_fn`.
- `_fully_shard/_fsdp_api.py`, every function: the policy dataclasses (`DataParallelMeshDims`'s
  `__post_init__`; `MixedPrecisionPolicy`, `OffloadPolicy`, `CPUOffloadPolicy` check nothing).
- `_fully_shard/_fsdp_state.py`: only `FSDPState._lazy_init` and `_validate_no_duplicate_params`,
  the checks the first forward makes on how `fully_shard` was applied (one root, root forwarded
  first, tied parameters in one group). The rest of the state (hooks, streams) is run-time machinery.
- `_composable/contract.py`: `contract`, the decorator around `fully_shard` whose wrapper refuses
  applying `fully_shard` twice to one module.
- `device_mesh.py`: what checks the user's mesh arguments: `init_device_mesh` (names unique and as
  many as dims, device type without an index, `backend_override` keys), `DeviceMesh.__init__`
  (layout, rank map, `backend_override` length), `_setup_world_group_and_device` (mesh larger than
  the world, homogeneous hosts) and slicing (`__getitem__`, `_get_slice_mesh_layout`).

Left out: `_fsdp_param.py`, `_fsdp_param_group.py`, `_fsdp_collectives.py` (sharding the tensors,
the collectives and streams: their checks guard tensors' shapes, dtypes and FSDP's training state
at run time, none reads an argument the setup code writes except through `shard_placement_fn`,
a callable whose result exists only when it runs); the rest of `device_mesh.py` (`from_group`,
`_flatten`/`_unflatten`, coordinates, process-group bookkeeping: private or internal); tensor
parallelism (`parallelize_module`) and pipelining, other APIs than FSDP2's.
"""

DISTRIBUTION = "torch"

FILES = {
    "torch/distributed/fsdp/_fully_shard/_fully_shard.py": [
        "fully_shard", "FSDPModule", "register_fsdp_forward_method", "share_comm_ctx", "_assert_all_fsdp_modules",
        "_unimplemented_deepcopy"],
    "torch/distributed/fsdp/_fully_shard/_fsdp_init.py": None,
    "torch/distributed/fsdp/_fully_shard/_fsdp_api.py": None,
    "torch/distributed/fsdp/_fully_shard/_fsdp_state.py": [
        "FSDPState._lazy_init", "FSDPState._validate_no_duplicate_params"],
    "torch/distributed/_composable/contract.py": ["contract"],
    "torch/distributed/device_mesh.py": [
        "init_device_mesh", "_normalize_backend_override", "DeviceMesh.__init__",
        "DeviceMesh._setup_world_group_and_device", "DeviceMesh.__getitem__", "DeviceMesh._get_slice_mesh_layout"],
}
