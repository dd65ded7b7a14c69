"""The world a launcher line starts: nodes, processes per node and the world size, from the
launcher's own options (shell_launch.Launch), as each launcher reads them.

- torchrun / `python -m torch.distributed.run` / `tune run` (torchtune hands its options to
  torchrun): `--nnodes` × `--nproc_per_node`, both 1 by default;
- the deepspeed launcher: `--num_nodes` × `--num_gpus` (every host and GPU it finds otherwise);
- srun and sbatch: the task count, or nodes × tasks per node (srun inherits the `#SBATCH` counts);
- `accelerate launch`: `--num_processes` is the TOTAL over all machines, `--num_machines` the
  nodes (accelerate/utils/launch.py: `nproc_per_node = num_processes // num_machines`); without
  `--num_processes` the count comes from the config file (`--config_file`, read as its own
  document of the setup) or, without one, from Accelerate's default config or the GPUs found;
- mpirun / mpiexec: `-np`/`-n` is the total, `-N`/`--npernode`/`-ppn` the processes per node;
- a plain `python`: one process (Megatron's WORLD_SIZE defaults to 1);
- `axolotl train` and `llamafactory-cli train` start a launcher themselves: unknown.

A value that depends on the environment or on the machine is Unknown with the reason.
"""

from __future__ import annotations

from typing import Any

from shardshift.plan import Unknown
from shardshift.source import Location


def count(value: Any, what: str) -> Any:
    """A process count as the launcher reads it: an int, or Unknown with the reason."""
    if isinstance(value, Unknown):
        return value
    if isinstance(value, str) and value.isdigit() and int(value) > 0:
        return int(value)
    if isinstance(value, str):
        return Unknown(f"{what} is {value!r}, which the launcher resolves on the machine")
    return Unknown(f"{what} is not given as a number")


_SPLICED = ("nnodes", "nproc_per_node", "num_gpus", "num_nodes", "ntasks", "nodes", "ntasks-per-node",
            "num_processes", "num_machines", "np")


def launch_world(launch: Any) -> tuple[Any, Any, Any]:
    """(nodes, processes per node, world size) of one launch; each None when the launcher does not
    say it (the world size then follows from the other two when both are given)."""
    options = dict(launch.options)
    splice = options.pop("?", None)
    if splice:
        # options spliced in from a value not known statically may set any count
        reason = f"the launcher's options include {splice[0].reason}" if isinstance(splice[0], Unknown) else \
            "the launcher's options include a value not known before the job runs"
        for name in _SPLICED:
            options.setdefault(name, Unknown(reason))
    nodes: Any = None
    per_node: Any = None
    world: Any = None
    launcher = launch.launcher
    if launcher in ("torchrun", "tune run") or launcher.startswith("python -m torch.distributed"):
        if launcher == "tune run" and "nproc_per_node" not in options and "nnodes" not in options:
            return 1, 1, 1  # torchtune runs the recipe in this process unless given torchrun's counts
        # torchrun's defaults: one node, one process per node
        nodes = count(options.get("nnodes", "1"), "--nnodes")
        per_node = count(options.get("nproc_per_node", options.get("nproc-per-node", "1")), "--nproc_per_node")
        if isinstance(nodes, Unknown) and isinstance(options.get("nnodes"), str) and ":" in options["nnodes"]:
            nodes = Unknown(f"--nnodes {options['nnodes']} is an elastic range")
    elif launcher == "deepspeed":
        if "num_gpus" in options:
            per_node = count(options["num_gpus"], "--num_gpus")
        else:
            per_node = Unknown("the deepspeed launcher starts one process per GPU it finds when --num_gpus is "
                               "not given")
        if "num_nodes" in options:
            nodes = count(options["num_nodes"], "--num_nodes")
        elif "hostfile" in options or "H" in options:
            nodes = Unknown("the deepspeed launcher uses every host of the hostfile when --num_nodes is not given")
        else:
            nodes = Unknown("the deepspeed launcher uses every host of /job/hostfile, when it exists, when "
                            "--num_nodes is not given")
        if any(k in options for k in ("include", "i", "exclude", "e")):
            per_node = Unknown("the deepspeed launcher's --include/--exclude select the GPUs")
            hosts = _include_slots(options.get("include", options.get("i")))
            if hosts is not None and not any(k in options for k in ("exclude", "e", "num_gpus", "num_nodes")):
                # every host named with its slots: exactly those (deepspeed/launcher/runner.py
                # parse_resource_filter); a host named without slots takes all of its GPUs
                counts = set(hosts.values())
                nodes = len(hosts)
                per_node = counts.pop() if len(counts) == 1 else None
                if per_node is None:
                    world = sum(hosts.values())
    elif launcher in ("srun", "sbatch"):
        tasks = options.get("ntasks", options.get("n"))
        node_count = options.get("nodes", options.get("N"))
        per_task = options.get("ntasks-per-node")
        if tasks is not None:
            world = count(tasks, f"{launcher} --ntasks")
        elif node_count is not None and per_task is not None:
            nodes, per_node = count(node_count, f"{launcher} --nodes"), count(per_task, f"{launcher} --ntasks-per-node")
        elif launcher == "srun":
            world = Unknown("srun takes the number of tasks from the job's allocation (#SBATCH or salloc)")
    elif launcher == "accelerate launch":
        machines = options.get("num_machines")
        nodes = count(machines, "--num_machines") if machines is not None else None
        if "num_processes" in options:
            world = count(options["num_processes"], "--num_processes")
            if nodes is None and "config_file" not in options:
                nodes = 1  # accelerate launch: num_machines is 1 when neither a flag nor a config gives it
            if isinstance(world, int) and isinstance(nodes, int) and world % nodes == 0:
                per_node = world // nodes
        elif "config_file" not in options:
            world = Unknown("accelerate launch takes the number of processes from its default config file "
                            "(~/.cache/huggingface/accelerate/default_config.yaml) or, without one, from the "
                            "GPUs it finds, when --num_processes is not given")
    elif launcher in ("mpirun", "mpiexec"):
        total = options.get("np", options.get("n", options.get("c")))
        per = options.get("N", options.get("npernode", options.get("ppn")))
        if per is not None:
            per_node = count(per, f"{launcher} -N")
        if total is not None:
            world = count(total, f"{launcher} -np")
        else:
            world = Unknown(f"{launcher} starts one process per slot of its hosts when -np is not given")
    elif launcher == "python":
        if launch.variables.get("WORLD_SIZE") is None:
            nodes, per_node = 1, 1  # one process: Megatron's WORLD_SIZE defaults to 1
        else:
            world = Unknown("WORLD_SIZE is set in the script; a plain python launch starts one process")
    elif launcher == "axolotl train":
        world = Unknown("axolotl train starts `accelerate launch` (or the launcher given with --launcher), which "
                        "takes the number of processes from Accelerate's config or the GPUs it finds")
    elif launcher == "llamafactory-cli train":
        world = Unknown("llamafactory-cli train starts torchrun with NNODES × NPROC_PER_NODE from the environment "
                        "(every GPU it finds by default)")
    else:  # "?": the program before the entry script is decided at run time
        world = Unknown("the launcher is decided at run time")
    if world is None and nodes is not None and per_node is not None:
        if isinstance(nodes, int) and isinstance(per_node, int):
            world = nodes * per_node
        else:
            world = Unknown(next(v for v in (nodes, per_node) if isinstance(v, Unknown)).reason)
    return nodes, per_node, world


def set_world(plan: Any, launch: Any, path: str) -> None:
    """Put the launch's world into `plan` (world.nodes, world.gpus_per_node, world.world_size), at
    the launcher's name in the script."""
    if launch is None:
        return
    nodes, per_node, world = launch_world(launch)
    where = Location(path, launch.line, launch.column, launch.launcher)
    if nodes is not None:
        plan.set("world.nodes", nodes, where)
    if per_node is not None:
        plan.set("world.gpus_per_node", per_node, where)
    if world is not None:
        plan.set("world.world_size", world, where)


def _include_slots(value: Any) -> dict[str, int] | None:
    """`--include host:0,1@other:2,3` -> {host: number of distinct slots}, or None unless every host
    names its slots as numbers (then the hostfile or the machine decides)."""
    if not isinstance(value, str) or not value:
        return None
    hosts: dict[str, set] = {}
    for spec in value.split("@"):
        name, colon, slots = spec.partition(":")
        if not name or not colon or not slots:
            return None
        words = slots.split(",")
        if not all(w.strip().isdigit() for w in words):
            return None
        hosts.setdefault(name, set()).update(int(w) for w in words)
    return {name: len(slots) for name, slots in hosts.items()}
