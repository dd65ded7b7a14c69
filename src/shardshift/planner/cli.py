"""The `plan` and `diff` commands' arguments and handlers (wired into shardshift.cli).

Imported on every CLI start to build the parser: keep this module's imports to the standard
library; import the planner inside the handlers."""

from __future__ import annotations

import json
import sys

DEFAULT_GPUS_PER_NODE = 8
DEFAULT_BANDWIDTH = "400Gbps"  # one 400 Gb/s InfiniBand NDR or Ethernet NIC per GPU
DEFAULT_INTRA_NODE_BANDWIDTH = "450GB/s"  # NVLink 4 (H100 SXM): 900 GB/s both ways, 450 GB/s each way


def _machine_options(parser) -> None:
    model = parser.add_argument_group("model (one of)")
    model.add_argument("--model-params", metavar="N",
                       help="the model's parameter count (8B, 70b, 1.3T, 8e9); without a shape only model-state "
                            "memory is estimated")
    model.add_argument("--model-config", metavar="CONFIG_JSON",
                       help="a Hugging Face config.json: the model's shape and parameter count")
    machine = parser.add_argument_group("machine")
    machine.add_argument("--nodes", type=int, metavar="N", help="nodes (with --gpus-per-node)")
    machine.add_argument("--gpus-per-node", type=int, metavar="N", help="GPUs per node (with --nodes)")
    machine.add_argument("--world-size", type=int, metavar="N",
                         help=f"GPUs in all ({DEFAULT_GPUS_PER_NODE} per node unless --gpus-per-node)")
    machine.add_argument("--gpu-memory", metavar="SIZE", help="memory per GPU (80GB, 80GiB); the fit is judged only "
                                                              "with it")
    machine.add_argument("--bandwidth", metavar="RATE",
                         help=f"inter-node bandwidth per GPU (200Gbps, 25GB/s; default {DEFAULT_BANDWIDTH})")
    machine.add_argument("--intra-node-bandwidth", metavar="RATE",
                         help=f"bandwidth per GPU within a node (900GB/s; default {DEFAULT_INTRA_NODE_BANDWIDTH})")
    parser.add_argument("--format", choices=("text", "json"), default="text")


def add_parsers(commands) -> None:
    plan = commands.add_parser(
        "plan", help="will this setup fit, what will each step cost (memory, communication), which framework fits",
        description="Estimate a setup's memory per GPU, its communication per optimizer step and the layout that "
                    "fits the job, from the setup's files (one setup: a script or YAML with the ds_config it "
                    "names), a model (--model-params or --model-config; a Megatron script states its own) and a "
                    "machine. Every figure names the assumption it rests on. Exit 1 when --gpu-memory is given "
                    "and the setup does not fit.")
    plan.add_argument("paths", nargs="+", metavar="PATH", help="the files of one setup")
    _machine_options(plan)
    diff = commands.add_parser(
        "diff", help="what changes between two setups, across formats",
        description="Compare the merged Plans of two setups (any formats): the settings that change, are added "
                    "or dropped; with a model and a machine (the options of `plan`) also memory per GPU and "
                    "traffic per step.")
    diff.add_argument("first", metavar="A")
    diff.add_argument("second", metavar="B")
    _machine_options(diff)


class UsageError(Exception):
    pass


def _fail(message: str, status: int = 2) -> int:
    print(f"shardshift: {message}", file=sys.stderr)
    return status


def machine_of(args, plan=None):
    """The Machine from the options, else the world the setup states, else one node of 8 GPUs
    (said in its assumptions). Raises UsageError for options that contradict each other."""
    from shardshift.plan import known
    from shardshift.planner.types import Machine
    from shardshift.planner.units import UnitError, parse_bandwidth, parse_bytes

    notes: list[str] = []
    nodes, per_node, world = args.nodes, args.gpus_per_node, args.world_size
    for name, value in (("--nodes", nodes), ("--gpus-per-node", per_node), ("--world-size", world)):
        if value is not None and value < 1:
            raise UsageError(f"{name} must be at least 1")
    if nodes is not None and per_node is None:
        raise UsageError("--nodes goes with --gpus-per-node")
    if nodes is not None and world is not None and world != nodes * per_node:
        raise UsageError(f"--world-size {world} disagrees with --nodes × --gpus-per-node = {nodes * per_node}")
    if nodes is None and world is not None:
        per_node = per_node or (DEFAULT_GPUS_PER_NODE if world % DEFAULT_GPUS_PER_NODE == 0 else world)
        if world % per_node:
            raise UsageError(f"--world-size {world} is not a multiple of --gpus-per-node {per_node}")
        nodes = world // per_node
        if args.gpus_per_node is None:
            notes.append(f"{world} GPUs as {nodes} node(s) × {per_node} (pass --nodes and --gpus-per-node to say)")
    elif nodes is None:
        stated = [known(plan.get(d)) if plan is not None else None
                  for d in ("world.nodes", "world.gpus_per_node", "world.world_size")]
        if stated[0] and stated[1]:
            nodes, per_node = stated[0], stated[1]
            notes.append(f"{nodes} node(s) × {per_node} GPUs, as the setup launches")
        elif stated[2]:
            per_node = per_node or (DEFAULT_GPUS_PER_NODE if stated[2] % DEFAULT_GPUS_PER_NODE == 0 else stated[2])
            nodes = max(1, stated[2] // per_node)
            notes.append(f"{stated[2]} GPUs, as the setup launches, as {nodes} node(s) × {per_node}")
        else:
            per_node = per_node or DEFAULT_GPUS_PER_NODE
            nodes = 1
            notes.append(f"world size not given: 1 node × {per_node} GPUs (pass --nodes and --gpus-per-node, "
                         "or --world-size)")
    try:
        memory = parse_bytes(args.gpu_memory) if args.gpu_memory is not None else None
        bandwidth = parse_bandwidth(args.bandwidth or DEFAULT_BANDWIDTH)
        intra = parse_bandwidth(args.intra_node_bandwidth or DEFAULT_INTRA_NODE_BANDWIDTH)
    except UnitError as error:
        raise UsageError(str(error)) from None
    if memory is not None and memory <= 0:
        raise UsageError("--gpu-memory must be more than 0")
    for name, rate in (("--bandwidth", bandwidth), ("--intra-node-bandwidth", intra)):
        if rate <= 0:
            raise UsageError(f"{name} must be more than 0")
    if memory is None:
        notes.append("GPU memory not given: the fit is not judged (pass --gpu-memory 80GB)")
    if args.bandwidth is None:
        notes.append(f"inter-node bandwidth not given: {DEFAULT_BANDWIDTH} per GPU (one NDR InfiniBand NIC per "
                     "GPU; pass --bandwidth)")
    if args.intra_node_bandwidth is None:
        notes.append(f"intra-node bandwidth not given: {DEFAULT_INTRA_NODE_BANDWIDTH} per GPU each way (NVLink 4; "
                     "pass --intra-node-bandwidth)")
    return Machine(nodes=nodes, gpus_per_node=per_node, gpu_memory=memory, bandwidth=bandwidth,
                   intra_node_bandwidth=intra, assumptions=notes)


def model_of(args, plan):
    """The model from the options or the Plan; raises UsageError when nothing gives a count."""
    from shardshift.planner.model import missing_count, model_from
    from shardshift.planner.units import UnitError, parse_count

    if args.model_params is not None and args.model_config is not None:
        raise UsageError("give the model as --model-params or --model-config, not both")
    try:
        count = parse_count(args.model_params) if args.model_params is not None else None
    except UnitError as error:
        raise UsageError(str(error)) from None
    if count is not None and count <= 0:
        raise UsageError("--model-params must be more than 0")
    try:
        model = model_from(plan, config_json=args.model_config, parameters=count)
    except ValueError as error:
        raise UsageError(str(error)) from None
    if model is None:
        raise UsageError(f"no model: pass --model-params N or --model-config config.json ({missing_count(plan)})")
    return model


def load_setup(paths: list[str]):
    """One setup from the paths: the setup of the first file (with the files it names), or, for
    several files, the one setup they form together (as `check` links them)."""
    import os

    from shardshift.api import ShardshiftError, load

    if len(paths) == 1:
        return load(paths[0])
    from shardshift.api import _document
    from shardshift.check import load as load_document
    from shardshift.setup import build_setups

    documents = [_document(p, needs_plan=False) for p in paths]
    setups = build_setups(documents, lambda path: load_document(path, explicit=False))
    wanted = {os.path.realpath(p) for p in paths}
    for setup in setups:
        if wanted <= {os.path.realpath(d.path) for d in setup.documents}:
            return setup
    raise ShardshiftError(f"the files form {len(setups)} setups, not one: plan one setup at a time (a script or "
                          "YAML with the ds_config it names)", usage=True)


def run_plan(args, parser) -> int:
    from shardshift.api import ShardshiftError
    from shardshift.planner import report

    try:
        setup = load_setup(args.paths)
        machine = machine_of(args, setup.plan)
        model = model_of(args, setup.plan)
    except ShardshiftError as error:
        return _fail(error.message, 2 if error.usage else 1)
    except UsageError as error:
        return _fail(str(error))
    result = report.build(setup, model, machine)
    if args.format == "json":
        print(json.dumps(result, indent=2))
    else:
        sys.stdout.write(report.render_text(result))
    return 1 if result["memory"]["fits"] is False else 0


def run_diff(args, parser) -> int:
    from shardshift.api import ShardshiftError
    from shardshift.planner import diff

    try:
        first, second = load_setup([args.first]), load_setup([args.second])
        machine_given = args.nodes is not None or args.world_size is not None
        model_given = args.model_params is not None or args.model_config is not None
        estimates = None
        if model_given or machine_given:
            if not (model_given and machine_given):
                raise UsageError("memory and traffic need both a model (--model-params or --model-config) and a "
                                 "machine (--nodes and --gpus-per-node, or --world-size)")
            estimates = [(model_of(args, s.plan), machine_of(args, s.plan)) for s in (first, second)]
    except ShardshiftError as error:
        return _fail(error.message, 2 if error.usage else 1)
    except UsageError as error:
        return _fail(str(error))
    result = diff.compare(first, second, estimates)
    if args.format == "json":
        print(json.dumps(result, indent=2))
    else:
        sys.stdout.write(diff.render_text(result))
    return 0
