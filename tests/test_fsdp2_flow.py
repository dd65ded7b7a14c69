"""The flow rules (rules/fsdp2/flow.py) through the real command line: what one function body's
statement order shows is an error, what an undecided `if` or code the rule cannot see into leaves
open is an info naming it, and what is not one object on one path is no finding."""

from __future__ import annotations

from pathlib import Path

from conftest import check_json

META = ("import torch\nfrom torch.distributed.fsdp import fully_shard\n"
        "def main(args, make_model, loader, init_model):\n"
        "    with torch.device('meta'):\n        model = make_model()\n")
REPLICATE = ("from torch.distributed._composable.replicate_with_fsdp import replicate\n"
             "from torch.distributed.fsdp import fully_shard\n"
             "def shard(model, args):\n")


def _verdicts(tmp_path: Path, cases: dict[str, str], code: str) -> dict[str, tuple[str, ...]]:
    for name, text in cases.items():
        (tmp_path / f"{name}.py").write_text(text)
    _, out = check_json(*(str(tmp_path / f"{n}.py") for n in cases), "--select", code, "--isolated")
    found: dict[str, tuple[str, ...]] = {name: () for name in cases}
    for finding in out["findings"]:
        found[Path(finding["file"]).stem] += ((finding["severity"], finding["line"]),)
    return found


def test_fs042_meta_module_run_before_materialised(tmp_path):
    shard = "    fully_shard(model)\n"
    cases = {
        "plain": META + shard + "    model(x)\n",
        "loop": META + "    for layer in model.layers:\n        fully_shard(layer)\n"
                       "    for batch in loader:\n        model(batch).sum().backward()\n",
        "device_kwarg": "from torch.distributed.fsdp import fully_shard\ndef main(Model, x):\n"
                        "    model = Model(device='meta')\n    fully_shard(model)\n    model(x)\n",
        "to_empty": META + shard + "    model.to_empty(device='cuda')\n    model.init_weights()\n    model(x)\n",
        "assign": META + shard + "    model.load_state_dict(sd, assign=True)\n    model(x)\n",
        "rebound": META + shard + "    model = make_model()\n    model(x)\n",
        "no_forward": META + shard + "    return model\n",
        "no_shard": META + "    model(x)\n",
        "meta_branch": "import torch\nfrom torch.distributed.fsdp import fully_shard\ndef main(args, Model, x):\n"
                       "    if args.meta:\n        with torch.device('meta'):\n            model = Model()\n"
                       "    else:\n        model = Model()\n    fully_shard(model)\n"
                       "    if args.meta:\n        model.to_empty(device='cuda')\n    model(x)\n",
        "maybe_to_empty": META + shard + "    if args.resume:\n        model.to_empty(device='cuda')\n    model(x)\n",
        "helper": META + shard + "    init_model(model)\n    model(x)\n",
        "method": META + shard + "    model.materialise()\n    model(x)\n",
        "maybe_shard": META + "    if args.fsdp:\n        fully_shard(model)\n    model(x)\n",
    }
    found = _verdicts(tmp_path, cases, "FS042")
    assert found == {
        "plain": (("error", 7),), "loop": (("error", 9),), "device_kwarg": (("error", 5),),
        "to_empty": (), "assign": (), "rebound": (), "no_forward": (), "no_shard": (), "meta_branch": (),
        "maybe_to_empty": (("info", 9),), "helper": (("info", 8),), "method": (("info", 8),),
        "maybe_shard": (("info", 8),),
    }


def test_fs043_replicate_and_fully_shard_on_one_module(tmp_path):
    cases = {
        "same": REPLICATE + "    replicate(model)\n    fully_shard(model)\n",
        "list": REPLICATE + "    replicate(model.output)\n    fully_shard([model.output, model.norm])\n",
        "loop_element": REPLICATE + "    for layer in model.layers:\n        replicate(layer)\n"
                                    "        fully_shard(layer)\n",
        "other_modules": REPLICATE + "    for layer in model.layers:\n        replicate(layer)\n    fully_shard(model)\n",
        "two_sides": REPLICATE + "    if args.ddp:\n        replicate(model)\n    else:\n        fully_shard(model)\n",
        "one_side": REPLICATE + "    if args.ddp:\n        replicate(model)\n    fully_shard(model)\n",
        "rebound": REPLICATE + "    replicate(model)\n    model = args.build()\n    fully_shard(model)\n",
        "slices": REPLICATE + "    for i, layer in enumerate(model.layers[:2]):\n        replicate(layer)\n"
                              "    for i, layer in enumerate(model.layers[2:]):\n        fully_shard(layer)\n",
        "other_library": "from mylib import replicate\nfrom torch.distributed.fsdp import fully_shard\n"
                         "def shard(model):\n    replicate(model)\n    fully_shard(model)\n",
    }
    found = _verdicts(tmp_path, cases, "FS043")
    assert found == {
        "same": (("error", 5),), "list": (("error", 5),), "loop_element": (("error", 6),), "other_modules": (),
        "two_sides": (), "one_side": (("info", 6),), "rebound": (), "slices": (), "other_library": (),
    }


SHARDED = ("from torch.distributed.fsdp import fully_shard\n"
           "def wrap(model, mesh, stream, args):\n"
           "    fully_shard(model.output)\n    fully_shard(model)\n")


def test_fs031_hook_stream_and_symmetric_memory_buffers(tmp_path):
    """FS031's two run-time combinations: a stream with no hook on a 1-D mesh (the first backward asserts),
    and input buffers above 1 on groups that use the symmetric-memory reduce-scatter, which
    set_symm_mem_for_comm picks only when the sum-only reduction was forced before it."""
    symm = "    model.set_force_sum_reduction_for_comms(True)\n    model.set_symm_mem_for_comm()\n"
    cases = {
        "hook_none": SHARDED + "    model.set_all_reduce_hook(None, stream=stream)\n",
        "hook_none_no_stream": SHARDED + "    model.set_all_reduce_hook(None)\n",
        "hook_given_later": SHARDED + "    model.set_all_reduce_hook(None, stream=stream)\n"
                                    "    model.set_all_reduce_hook(args.hook)\n",
        "hook_unknown_mesh": "from torch.distributed.fsdp import fully_shard\ndef wrap(model, mesh, stream):\n"
                             "    fully_shard(model, mesh=mesh)\n    model.set_all_reduce_hook(None, stream=stream)\n",
        "buffers": SHARDED + "    model.set_reduce_scatter_max_input_buffers(4)\n" + symm,
        "buffers_after": SHARDED + symm + "    model.set_reduce_scatter_max_input_buffers(2)\n",
        "symm_first": SHARDED + "    model.set_reduce_scatter_max_input_buffers(2)\n"
                                "    model.set_symm_mem_for_comm()\n    model.set_force_sum_reduction_for_comms(True)\n",
        "one_buffer": SHARDED + "    model.set_reduce_scatter_max_input_buffers(1)\n" + symm,
        "back_to_one": SHARDED + "    model.set_reduce_scatter_max_input_buffers(2)\n" + symm
                                 + "    model.set_reduce_scatter_max_input_buffers(1)\n",
        "block_buffers": SHARDED + "    model.output.set_reduce_scatter_max_input_buffers(2)\n" + symm,
        "root_buffers": SHARDED + "    model.set_reduce_scatter_max_input_buffers(2)\n"
                                  "    model.output.set_force_sum_reduction_for_comms(True)\n"
                                  "    model.output.set_symm_mem_for_comm()\n",
        "root_buffers_alone": SHARDED + "    model.set_reduce_scatter_max_input_buffers(2, recurse=False)\n"
                                        "    model.output.set_force_sum_reduction_for_comms(True)\n"
                                        "    model.output.set_symm_mem_for_comm()\n",
        "maybe_symm": SHARDED + "    model.set_reduce_scatter_max_input_buffers(2)\n"
                                "    model.set_force_sum_reduction_for_comms(True)\n"
                                "    if args.symm:\n        model.set_symm_mem_for_comm()\n",
    }
    found = _verdicts(tmp_path, cases, "FS031")
    assert found == {
        "hook_none": (("error", 5),), "hook_none_no_stream": (), "hook_given_later": (), "hook_unknown_mesh": (),
        "buffers": (("error", 5),), "buffers_after": (("error", 7),), "symm_first": (), "one_buffer": (), "back_to_one": (),
        "block_buffers": (), "root_buffers": (("error", 5),), "root_buffers_alone": (),
        "maybe_symm": (("info", 5),),
    }


OFFLOAD = ("import torch\nfrom torch.distributed.fsdp import CPUOffloadPolicy, fully_shard\nPOLICY = CPUOffloadPolicy()\n"
           "def main(model, args, device, x):\n    fully_shard(model, offload_policy=CPUOffloadPolicy())\n")


def test_fs044_cpu_offload_module_moved_to_accelerator(tmp_path):
    cases = {
        "to_cuda": OFFLOAD + "    model.to('cuda')\n    model(x)\n",
        "cuda": OFFLOAD + "    model.cuda()\n    for batch in args.loader:\n        model(batch)\n",
        "bound_device": OFFLOAD + "    gpu = torch.device('cuda', args.rank)\n    model.to(gpu)\n    model(x)\n",
        "module_policy": "from torch.distributed.fsdp import CPUOffloadPolicy, fully_shard\nPOLICY = CPUOffloadPolicy()\n"
                         "def main(model, x):\n    for layer in model.layers:\n"
                         "        fully_shard(layer, offload_policy=POLICY)\n    model.to_empty(device='cuda:0')\n"
                         "    model(x)\n",
        "unknown_device": OFFLOAD + "    model.to(device)\n    model(x)\n",
        "f_string": OFFLOAD + "    model.to(f'cuda:{args.rank}')\n    model(x)\n",
        "bound_twice": OFFLOAD + "    gpu = 'cpu'\n    gpu = args.device\n    model.to(gpu)\n    model(x)\n",
        "maybe_moved": OFFLOAD + "    if args.gpu:\n        model.to('cuda')\n    model(x)\n",
        "to_empty_cpu": OFFLOAD + "    model.to_empty(device='cpu')\n    model(x)\n",
        "dtype": OFFLOAD + "    model.to(torch.bfloat16)\n    model(x)\n",
        "moved_back": OFFLOAD + "    model.to('cuda')\n    model.to('cpu')\n    model(x)\n",
        "no_forward": OFFLOAD + "    model.to('cuda')\n    return model\n",
        "no_offload": "from torch.distributed.fsdp import CPUOffloadPolicy, fully_shard\ndef main(model, x):\n"
                      "    fully_shard(model)\n    model.to('cuda')\n    model(x)\n",
        "moved_before": "from torch.distributed.fsdp import CPUOffloadPolicy, fully_shard\ndef main(model, x):\n"
                        "    model.to('cuda')\n    fully_shard(model, offload_policy=CPUOffloadPolicy())\n    model(x)\n",
    }
    found = _verdicts(tmp_path, cases, "FS044")
    assert found == {
        "to_cuda": (("error", 7),), "cuda": (("error", 8),), "bound_device": (("error", 8),),
        "module_policy": (("error", 7),), "unknown_device": (("info", 7),),
        "f_string": (("error", 7),), "bound_twice": (("info", 9),), "maybe_moved": (("info", 8),),
        "to_empty_cpu": (), "dtype": (), "moved_back": (), "no_forward": (), "no_offload": (), "moved_before": (),
    }


def test_fs040_nccl_options_of_another_kind(tmp_path):
    """pg_options for an NCCL group must be a ProcessGroupNCCL.Options instance: a dict, the class itself
    or another backend's options are refused, written in the call or bound once to the name it uses."""
    head = "import torch.distributed as dist\nfrom torch.distributed.fsdp import fully_shard\ndef main(make_options):\n"
    cases = {
        "dict": head + "    dist.init_process_group('nccl', pg_options={'is_high_priority_stream': True})\n",
        "gloo_options": head + "    opts = dist.ProcessGroupGloo._Options()\n"
                               "    dist.init_process_group(backend='cpu:gloo,cuda:nccl', pg_options=opts)\n",
        "class": head + "    dist.init_process_group('nccl', pg_options=dist.ProcessGroupNCCL.Options)\n",
        "instance": head + "    opts = dist.ProcessGroupNCCL.Options()\n    dist.init_process_group('nccl', pg_options=opts)\n",
        "gloo_group": head + "    dist.init_process_group('gloo', pg_options={'x': 1})\n",
        "bound_twice": head + "    opts = {}\n    opts = make_options()\n"
                              "    dist.init_process_group('nccl', pg_options=opts)\n",
        "helper": head + "    dist.init_process_group('nccl', pg_options=make_options())\n",
    }
    found = _verdicts(tmp_path, cases, "FS040")
    assert found == {"dict": (("error", 4),), "gloo_options": (("error", 5),), "class": (("error", 4),),
                     "instance": (), "gloo_group": (), "bound_twice": (), "helper": ()}


def test_fs042_materialised_on_both_sides_of_one_if(tmp_path):
    """PyTorch's FSDP2 example: to_empty on a fresh start, a checkpoint loader on a resume; each side of the
    `if` materialises the module, so no path reaches the forward on the meta device."""
    body = (META + "    fully_shard(model)\n    if args.fresh:\n        model.to_empty(device='cuda')\n"
            "        model.reset_parameters()\n    else:\n        {}(model)\n    model(x)\n")
    found = _verdicts(tmp_path, {"loader": body.format("checkpointer.load_model"),
                                 "unknown": body.format("inspect_model")}, "FS042")
    assert found == {"loader": (), "unknown": (("info", 12),)}


def test_a_call_that_returns_the_module_keeps_it_one_object(tmp_path):
    """`model = fully_shard(model)` (fully_shard and replicate return the module they are given) and
    `model = torch.compile(model)` (its forward runs the module) keep the flow on one module."""
    meta = META + "    model = fully_shard(model)\n    model = torch.compile(model)\n    model(x)\n"
    replicated = REPLICATE + "    model = replicate(model)\n    model = fully_shard(model)\n"
    wrapped = REPLICATE + "    replicate(model)\n    model = checkpoint_wrapper(model)\n    fully_shard(model)\n"
    assert _verdicts(tmp_path, {"meta": meta}, "FS042") == {"meta": (("error", 8),)}
    assert _verdicts(tmp_path, {"replicated": replicated, "wrapped": wrapped}, "FS043") == {
        "replicated": (("error", 5),), "wrapped": ()}
