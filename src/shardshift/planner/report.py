"""The `shardshift plan` report: a JSON contract (keys only grow) and its text rendering.

    {"memory": {"per_gpu_bytes", "parts": {name: {"bytes", "assumption"}}, "fits",
                "largest_micro_batch", "gpu_memory_bytes", "cpu_bytes"},
     "communication": {"per_step": [{"axis", "bytes", "seconds", "assumption"}],
                       "step_time_lower_bound_seconds", "step_time_lower_bound_assumption"},
     "recommendation": {"choice", "why", "smallest_change"},
     "assumptions": [...],
     "model": {"parameters", "source", ...shape},
     "machine": {"nodes", "gpus_per_node", "world_size", "gpu_memory_bytes", "bandwidth_bytes_per_second",
                 "intra_node_bandwidth_bytes_per_second"},
     "setup": {"files": [...], "layout": {...}}}

Parts whose name starts with "cpu_" are host memory (offloaded state): they are listed with the
parts but not counted in `per_gpu_bytes`. Sizes are bytes, times seconds; the text shows GB (10^9).
"""

from __future__ import annotations

import dataclasses
from typing import Any

GB = 10**9


def _number(value: float | None) -> float | int | None:
    if value is None:
        return None
    value = float(value)
    return int(value) if value.is_integer() else value


def _unique(items) -> list[str]:
    seen: dict[str, None] = {}
    for item in items:
        if item and item not in seen:
            seen[item] = None
    return list(seen)


def plain(value: Any) -> Any:
    """JSON data: tuples and sets as lists, a Figure as {"value", "assumption"}, other objects as text."""
    from shardshift.planner.types import Figure

    if isinstance(value, Figure):
        return {"value": _number(value.value), "assumption": value.assumption}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [plain(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def layout_data(layout) -> dict[str, Any]:
    data = {f.name: plain(getattr(layout, f.name)) for f in dataclasses.fields(layout)
            if f.name not in ("assumptions", "fixed_buffers")}
    data["data_parallel"] = layout.data_parallel
    data["fixed_buffers"] = {name: {"bytes": _number(f.value), "assumption": f.assumption}
                             for name, f in layout.fixed_buffers.items()}
    return data


def model_data(model) -> dict[str, Any]:
    return {f.name: plain(getattr(model, f.name)) for f in dataclasses.fields(model) if f.name != "assumptions"}


def machine_data(machine) -> dict[str, Any]:
    return {"nodes": machine.nodes, "gpus_per_node": machine.gpus_per_node, "world_size": machine.world_size,
            "gpu_memory_bytes": machine.gpu_memory, "bandwidth_bytes_per_second": _number(machine.bandwidth),
            "intra_node_bandwidth_bytes_per_second": _number(machine.intra_node_bandwidth)}


def framework_of(setup) -> str | None:
    """Whose accounting and defaults apply to a setup, from the formats of its files (a
    ds_config anywhere in the setup: DeepSpeed's; an Accelerate YAML with `distributed_type:
    DEEPSPEED`: DeepSpeed's); None lets the layout decide from the Plan."""
    formats = [d.format for d in setup.documents]
    if "megatron" in formats:
        return "megatron"
    if "deepspeed" in formats:
        return "deepspeed"
    accelerate = setup.plan.passthrough.get("accelerate")
    if isinstance(accelerate, dict) and str(accelerate.get("distributed_type", "")).upper() == "DEEPSPEED":
        return "deepspeed"
    if formats and formats[0] in ("fsdp2", "torchtitan", "accelerate", "axolotl"):
        return formats[0]
    return None


def estimates(plan, model, machine, framework: str | None = None):
    """(layout, memory estimate, traffic, step-time lower bound, recommendation) of one setup."""
    from shardshift.planner import communication, memory, recommend
    from shardshift.planner import layout as layouts

    layout = layouts.layout_of(plan, machine, framework=framework)
    estimate = memory.estimate(layout, model, machine)
    traffic = communication.per_step(layout, model, machine)
    bound = communication.step_time_lower_bound(traffic)
    choice = recommend.recommend(layout, model, machine, lambda other: memory.estimate(other, model, machine))
    return layout, estimate, traffic, bound, choice


def build(setup_or_plan, model, machine) -> dict[str, Any]:
    """The report of a setup (or a bare Plan) for `model` on `machine`."""
    from shardshift.api import display_path
    from shardshift.setup import Setup

    framework = None
    if isinstance(setup_or_plan, Setup):
        plan, files = setup_or_plan.plan, [display_path(d.path) for d in setup_or_plan.documents]
        framework = framework_of(setup_or_plan)
    else:
        plan, files = setup_or_plan, []
    layout, estimate, traffic, bound, choice = estimates(plan, model, machine, framework)
    parts = {name: {"bytes": _number(f.value), "assumption": f.assumption} for name, f in estimate.parts.items()}
    cpu = sum(f.value for name, f in estimate.parts.items() if name.startswith("cpu_"))
    bound_seconds = bound.value if bound is not None and bound.value is not None else None
    return {
        "memory": {
            "per_gpu_bytes": _number(estimate.per_gpu_bytes),
            "parts": parts,
            "fits": estimate.fits,
            "largest_micro_batch": estimate.largest_micro_batch,
            "gpu_memory_bytes": machine.gpu_memory,
            "cpu_bytes": _number(cpu),
        },
        "communication": {
            "per_step": [{"axis": t.axis, "bytes": _number(t.bytes), "seconds": _number(t.seconds),
                          "assumption": t.assumption} for t in traffic],
            "step_time_lower_bound_seconds": _number(bound_seconds) if bound_seconds == bound_seconds else None,
            "step_time_lower_bound_assumption": bound.assumption if bound is not None else None,
        },
        "recommendation": {"choice": choice.choice, "why": choice.why, "smallest_change": choice.smallest_change},
        "assumptions": _unique([*model.assumptions, *machine.assumptions, *layout.assumptions,
                                *estimate.assumptions, *choice.assumptions]),
        "model": model_data(model),
        "machine": machine_data(machine),
        "setup": {"files": files, "layout": layout_data(layout)},
    }


# --- text ---------------------------------------------------------------------------------------


def gb(value: float | None) -> str:
    return "-" if value is None else f"{value / GB:.1f} GB"


def count(value: int | None) -> str:
    if not value:
        return "?"
    for size, suffix in ((10**12, "T"), (10**9, "B"), (10**6, "M"), (10**3, "K")):
        if value >= size:
            return f"{value / size:.1f}{suffix}"
    return str(value)


def seconds(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 1:
        return f"{value:.2f} s"
    return f"{value * 1000:.1f} ms"


def _describe_layout(layout: dict, machine: dict) -> str:
    bits = [f"{machine['nodes']} × {machine['gpus_per_node']} GPUs"]
    if machine.get("gpu_memory_bytes"):
        bits[0] += f" of {gb(machine['gpu_memory_bytes'])}"
    engine = layout.get("engine") or layout.get("framework") or ""
    stage = layout.get("stage", 0)
    sharding = {0: "no sharding", 1: "ZeRO-1", 2: "ZeRO-2", 3: "ZeRO-3"}.get(stage, f"stage {stage}")
    if engine == "fsdp2" and stage == 3:
        sharding = "FSDP2 full shard"
    elif engine == "megatron" and layout.get("distributed_optimizer"):
        sharding = "distributed optimizer"
    degrees = [f"DP {layout['data_parallel']}"]
    if layout.get("data_parallel_replicate", 1) > 1:
        degrees[0] += f" ({layout['data_parallel_replicate']} × {layout['data_parallel_shard']} hybrid)"
    for key, label in (("tensor", "TP"), ("pipeline", "PP"), ("context", "CP"), ("expert", "EP")):
        if layout.get(key, 1) > 1:
            degrees.append(f"{label} {layout[key]}")
    batch = f"micro batch {layout.get('micro_batch')}"
    if layout.get("sequence_length"):
        batch += f" × {layout['sequence_length']} tokens"
    extra = [f"offload optimizer to {layout['offload_optimizer']}"] if layout.get("offload_optimizer") != "none" else []
    if layout.get("offload_params") != "none":
        extra.append(f"offload parameters to {layout['offload_params']}")
    if layout.get("recompute") and layout["recompute"] != "none":
        extra.append(f"{layout['recompute']} recomputation")
    return ", ".join([*bits, f"{engine or 'ddp'} {sharding}", *degrees, batch, *extra])


WIDTH = 110  # the text table wraps each row's assumption under its own column


def _row(head: str, text: str) -> list[str]:
    """`head` then `text` wrapped to WIDTH, continuation lines aligned under the text."""
    import textwrap

    if not text:
        return [head.rstrip()]
    indent = " " * len(head)
    return textwrap.wrap(text, width=max(WIDTH, len(head) + 40), initial_indent=head, subsequent_indent=indent,
                         break_on_hyphens=False) or [head.rstrip()]


def render_text(report: dict[str, Any]) -> str:
    memory, comm, rec = report["memory"], report["communication"], report["recommendation"]
    model, machine, layout = report["model"], report["machine"], report["setup"]["layout"]
    lines = []
    files = report["setup"]["files"]
    lines.append(f"setup: {' + '.join(files) if files else 'a Plan'}")
    lines.append(f"model: {count(model['parameters'])} parameters ({model['source']})")
    lines.append(f"layout: {_describe_layout(layout, machine)}")
    lines.append("")
    lines.append("memory per GPU")
    width = max([len(n) for n in memory["parts"]] + [len("total")]) + 2
    for name, part in memory["parts"].items():
        if name.startswith("cpu_"):
            continue
        lines.extend(_row(f"  {name:<{width}}{gb(part['bytes']):>10}  ", part["assumption"]))
    total = f"  {'total':<{width}}{gb(memory['per_gpu_bytes']):>10}"
    if memory["fits"] is True:
        total += f"  fits in {gb(memory['gpu_memory_bytes'])}"
    elif memory["fits"] is False:
        total += f"  does NOT fit in {gb(memory['gpu_memory_bytes'])}"
    else:
        total += "  (pass --gpu-memory to judge the fit)"
    lines.append(total)
    if memory["largest_micro_batch"]:
        lines.append(f"  largest micro batch that fits: {memory['largest_micro_batch']}")
    elif memory["largest_micro_batch"] == 0:
        lines.append("  no micro batch fits: the model states and buffers leave no room for activations"
                     if memory["fits"] is False else "  no micro batch fits")
    cpu = [(n, p) for n, p in memory["parts"].items() if n.startswith("cpu_")]
    if cpu:
        lines.append("host (CPU) memory per node")
        for name, part in cpu:
            lines.extend(_row(f"  {name:<{width}}{gb(part['bytes']):>10}  ", part["assumption"]))
    lines.append("")
    lines.append("communication per optimizer step, per GPU")
    if not comm["per_step"]:
        lines.append("  none (one GPU, or nothing is exchanged)")
    axis_width = max([len(t["axis"]) for t in comm["per_step"]] + [4]) + 2
    for traffic in comm["per_step"]:
        lines.extend(_row(f"  {traffic['axis']:<{axis_width}}{gb(traffic['bytes']):>10}"
                          f"{seconds(traffic['seconds']):>11}  ", traffic["assumption"]))
    if comm["step_time_lower_bound_seconds"] is not None:
        lines.extend(_row("  ", f"step time is at least {seconds(comm['step_time_lower_bound_seconds'])}"
                          + (f" ({comm['step_time_lower_bound_assumption']})"
                             if comm.get("step_time_lower_bound_assumption") else "")))
    lines.append("")
    lines.append(f"recommendation: {rec['choice']}")
    lines.extend(_row("  ", rec["why"]))
    if rec["smallest_change"]:
        lines.extend(_row("  smallest change that fits: ", rec["smallest_change"]))
    if report["assumptions"]:
        lines.append("")
        lines.append("assumptions")
        for assumption in report["assumptions"]:
            lines.extend(_row("  - ", assumption))
    return "\n".join(lines) + "\n"
