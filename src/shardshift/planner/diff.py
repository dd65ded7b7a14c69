"""`shardshift diff A B`: what changes between two setups, on their merged Plans, across formats.

    ds_config.json → fsdp2_setup.py: sharding stage 2 → 2, gradient reduce dtype fp32 → bf16,
    buckets dropped, memory per GPU 41.0 → 38.0 GB, traffic per step +12%

The Plans' set fields are compared with deepdiff (field by field; nested values such as optimizer
parameters compare inside). Settings with no neutral meaning (`passthrough`) compare only between
two files of the same format; across formats they are counted as not comparable. Memory and
traffic appear only when a model and a machine are given (the options of `plan`).

JSON (a contract: keys only grow):
    {"from": {"files", "formats"}, "to": {"files", "formats"},
     "changes": [{"field", "label", "kind": "changed" | "added" | "dropped", "from", "to",
                  "from_default"?, "to_default"?}],   # "default of torchtitan 0.2.2": a framework's default
                                                       # (across formats, each side's defaults are filled in)
     "kept": [{"field", "label", "value"}],          # the headline settings that stay the same
     "passthrough": {"compared": bool, "changes": [...], "only_in_from": n, "only_in_to": n},
     "memory": {"from_per_gpu_bytes", "to_per_gpu_bytes", "change"} | null,
     "traffic": {"from_bytes", "to_bytes", "change"} | null,
     "resolved": [{"field", "from", "to"}],      # the Layout's values (defaults filled), with a model and machine
     "summary": "..."}
"""

from __future__ import annotations

from typing import Any

LABELS = {
    "sharding.stage": "sharding stage",
    "sharding.reshard_after_forward": "reshard after forward",
    "sharding.hybrid": "hybrid sharding",
    "sharding.hybrid_shard_size": "hybrid shard group size",
    "precision.param_dtype": "parameter dtype",
    "precision.compute_dtype": "compute dtype",
    "precision.reduce_dtype": "gradient reduce dtype",
    "precision.grad_accum_dtype": "gradient accumulation dtype",
    "communication.dtype": "communication dtype",
    "communication.reduce_bucket_elements": "reduce bucket",
    "communication.allgather_bucket_elements": "all-gather bucket",
    "communication.prefetch_bucket_elements": "prefetch bucket",
    "communication.param_persistence_threshold": "parameter persistence threshold",
    "communication.overlap": "communication overlap",
    "batch.micro": "micro batch",
    "batch.accumulation": "gradient accumulation",
    "batch.global_": "global batch",
    "batch.sequence_length": "sequence length",
    "offload.optimizer.device": "optimizer offload",
    "offload.params.device": "parameter offload",
    "activation_checkpointing.enabled": "activation checkpointing",
    "gradient_clipping": "gradient clipping",
    "optimizer.name": "optimizer",
    "scheduler.name": "scheduler",
    "optimizer.params": "optimizer parameters",
    "scheduler.params": "scheduler parameters",
    "world.nodes": "nodes",
    "world.gpus_per_node": "GPUs per node",
    "world.world_size": "world size",
    "parallelism.data_parallel_shard": "data-parallel shard",
    "parallelism.data_parallel_replicate": "data-parallel replicate",
    "parallelism.tensor": "tensor parallel",
    "parallelism.pipeline": "pipeline parallel",
    "parallelism.context": "context parallel",
    "parallelism.expert": "expert parallel",
}
HEADLINE = ("sharding.stage", "precision.param_dtype", "parallelism.tensor", "parallelism.pipeline")
BUCKETS = ("communication.reduce_bucket_elements", "communication.allgather_bucket_elements",
           "communication.prefetch_bucket_elements", "communication.param_persistence_threshold")


def label(dotted: str) -> str:
    if dotted in LABELS:
        return LABELS[dotted]
    return dotted.replace("global_", "global").replace("_", " ").replace(".", " ")


def _leaves(plan) -> dict[str, Any]:
    from shardshift.plan import to_data

    return {dotted: to_data(value) for dotted, value in plan.leaves()}


def shown(value: Any) -> str:
    import json

    if value is None:
        return "not set"
    if isinstance(value, dict) and "unknown" in value and set(value) <= {"unknown", "where", "alternatives"}:
        return f"unknown ({value['unknown']})"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer():
        return str(int(value)) if abs(value) < 1e15 else json.dumps(value)
    if isinstance(value, int) and abs(value) >= 10**6:
        return f"{value:,}"
    return json.dumps(value, sort_keys=True)


def _changes(first: dict[str, Any], second: dict[str, Any]) -> list[dict[str, Any]]:
    from deepdiff import DeepDiff

    found = DeepDiff(first, second, verbose_level=0, threshold_to_diff_deeper=0)  # always field by field
    changed = set(found.affected_root_keys) if found else set()
    out = []
    for dotted in sorted(changed, key=lambda d: (d.split(".")[0], d)):
        before, after = first.get(dotted), second.get(dotted)
        kind = "added" if dotted not in first else "dropped" if dotted not in second else "changed"
        out.append({"field": dotted, "label": label(dotted), "kind": kind, "from": before, "to": after})
    return out


def _passthrough(first, second) -> dict[str, Any]:
    mine, theirs = first.passthrough, second.passthrough
    shared = sorted(set(mine) & set(theirs))
    changes = []
    for name in shared:
        for change in _changes(_flat(mine[name]), _flat(theirs[name])):
            change["field"] = f"passthrough.{name}.{change['field']}"
            change["label"] = f"{name} {change['label']}"
            changes.append(change)
    only_first = sum(len(_flat(mine[n])) for n in mine if n not in theirs)
    only_second = sum(len(_flat(theirs[n])) for n in theirs if n not in mine)
    return {"compared": bool(shared), "formats": shared, "changes": changes,
            "only_in_from": only_first, "only_in_to": only_second}


def _flat(data: Any, prefix: str = "") -> dict[str, Any]:
    from shardshift.plan import to_data

    if isinstance(data, dict) and data and "unknown" not in data:
        out: dict[str, Any] = {}
        for key, value in data.items():
            out.update(_flat(value, f"{prefix}{key}."))
        return out
    return {prefix.rstrip("."): to_data(data)} if prefix else {}


def _side(setup) -> dict[str, Any]:
    from shardshift.api import display_path

    return {"files": [display_path(d.path) for d in setup.documents],
            "formats": sorted({d.format for d in setup.documents})}


def _percent(before: float, after: float) -> str | None:
    if not before:
        return None
    change = (after - before) / before * 100
    return f"{change:+.0f}%"


# The resolved settings (each framework's defaults filled in) compared when a model and a machine are given.
RESOLVED = ("engine", "stage", "data_parallel_shard", "data_parallel_replicate", "tensor", "pipeline", "context",
            "expert", "param_bytes", "grad_bytes", "master_weights", "optimizer_state_bytes", "offload_optimizer",
            "offload_params", "micro_batch", "accumulation", "recompute", "grad_reduce_bytes", "gradient_sync")


def _estimates(first, second, estimates) -> tuple[dict | None, dict | None, list[str], list[dict]]:
    from shardshift.planner import report

    if estimates is None:
        return None, None, [], []
    results, layouts = [], []
    for setup, (model, machine) in zip((first, second), estimates):
        layout, estimate, traffic, _, _ = report.estimates(setup.plan, model, machine, report.framework_of(setup))
        results.append((estimate.per_gpu_bytes, sum(t.bytes for t in traffic)))
        layouts.append(report.layout_data(layout))
    resolved = [{"field": name, "from": layouts[0].get(name), "to": layouts[1].get(name)} for name in RESOLVED
                if name in layouts[0] and layouts[0].get(name) != layouts[1].get(name)]
    (mem_a, bytes_a), (mem_b, bytes_b) = results
    model, machine = estimates[0]
    notes = [f"memory and traffic for {report.count(model.parameters)} parameters ({model.source}) on "
             f"{machine.nodes} × {machine.gpus_per_node} GPUs"]
    memory = {"from_per_gpu_bytes": report._number(mem_a), "to_per_gpu_bytes": report._number(mem_b),
              "change": _percent(mem_a, mem_b)}
    traffic = {"from_bytes": report._number(bytes_a), "to_bytes": report._number(bytes_b),
               "change": _percent(bytes_a, bytes_b)}
    return memory, traffic, notes, resolved


def compare(first, second, estimates=None) -> dict[str, Any]:
    """The differences between two setups (`shardshift.setup.Setup`); `estimates`: a (model,
    machine) pair per setup, or None for no memory and traffic."""
    plan_a, plan_b = _meaning(first, second)
    a, b = _leaves(plan_a), _leaves(plan_b)
    changes = _changes(a, b)
    for change in changes:  # a value neither file writes: the default of the framework that runs it
        for side, plan in (("from", plan_a), ("to", plan_b)):
            label_of = _default_label(plan, change["field"])
            if label_of is not None:
                change[f"{side}_default"] = label_of
    changed = {c["field"] for c in changes}
    kept = [{"field": d, "label": label(d), "value": a[d]} for d in HEADLINE if d in a and d not in changed]
    passthrough = _passthrough(first.plan, second.plan)
    memory, traffic, notes, resolved = _estimates(first, second, estimates)
    result = {"from": _side(first), "to": _side(second), "changes": changes, "kept": kept,
              "passthrough": passthrough, "memory": memory, "traffic": traffic, "resolved": resolved,
              "assumptions": notes}
    result["summary"] = summary(result)
    return result


def _meaning(first, second):
    """The two Plans to compare: as written for two setups of the same format; across formats each
    resolved with the defaults of the framework that runs it (shardshift.resolve), so that a field
    one format leaves to its default (torchtitan's bf16) is compared with the value the other states."""
    formats = {first.documents[0].format, second.documents[0].format}
    if len(formats) == 1:
        return first.plan, second.plan
    from shardshift.resolve import resolve_document

    return (resolve_document(first.documents[0], first.plan), resolve_document(second.documents[0], second.plan))


def _default_label(plan, dotted: str) -> str | None:
    from shardshift.resolve import is_default

    where = plan.provenance.get(dotted)
    return where.pointer if is_default(where) else None


def summary(result: dict[str, Any]) -> str:
    """One line: 'A → B: sharding stage 3 → 3, gradient reduce dtype fp32 → bf16, buckets dropped, ...'."""
    parts = [f"{k['label']} {shown(k['value'])} → {shown(k['value'])}" for k in result["kept"][:1]]
    dropped = [c for c in result["changes"] if c["kind"] == "dropped"]
    buckets = [c for c in dropped if c["field"] in BUCKETS]
    sections: dict[str, list] = {}
    for change in dropped:
        if change not in buckets:
            sections.setdefault(change["field"].split(".")[0], []).append(change)
    for change in result["changes"]:
        if change["kind"] == "added":
            parts.append(f"{change['label']} {shown(change['to'])} added")
        elif change["kind"] == "changed":
            parts.append(f"{change['label']} {shown(change['from'])} → {shown(change['to'])}")
    for section, gone in sections.items():
        parts.append(f"{gone[0]['label']} dropped" if len(gone) == 1
                     else f"{section.replace('_', ' ')} dropped ({len(gone)} settings)")
    if buckets:
        parts.append("buckets dropped" if len(buckets) > 1 else f"{buckets[0]['label']} dropped")
    if result["memory"] is not None:
        m = result["memory"]
        parts.append(f"memory per GPU {m['from_per_gpu_bytes'] / 1e9:.1f} → {m['to_per_gpu_bytes'] / 1e9:.1f} GB")
    if result["traffic"] is not None and result["traffic"]["change"] is not None:
        parts.append(f"traffic per step {result['traffic']['change']}")
    names = " + ".join(result["from"]["files"][:1]), " + ".join(result["to"]["files"][:1])
    return f"{names[0]} → {names[1]}: " + (", ".join(parts) if parts else "no change")


def render_text(result: dict[str, Any]) -> str:
    lines = [result["summary"], ""]
    for side in ("from", "to"):
        lines.append(f"{side + ':':<6}{' + '.join(result[side]['files'])} ({', '.join(result[side]['formats'])})")
    if result["changes"]:
        lines.append("")
        width = max(len(c["label"]) for c in result["changes"]) + 2
        for change in result["changes"]:
            before = shown(change['from']) + (" (default)" if "from_default" in change else "")
            after = shown(change['to']) + (" (default)" if "to_default" in change else "")
            lines.append(f"  {change['label']:<{width}}{before:>14} → {after}")
    if result["kept"]:
        lines.append("")
        lines.append("  unchanged: " + ", ".join(f"{k['label']} {shown(k['value'])}" for k in result["kept"]))
    passthrough = result["passthrough"]
    if passthrough["changes"]:
        lines.append("")
        lines.extend(f"  {c['label']}: {shown(c['from'])} → {shown(c['to'])}" for c in passthrough["changes"])
    if passthrough["only_in_from"] or passthrough["only_in_to"]:
        lines.append(f"  format-specific settings not compared: {passthrough['only_in_from']} in A, "
                     f"{passthrough['only_in_to']} in B")
    if result.get("resolved"):
        lines.append("")
        lines.append("  as the planner resolves them (each framework's defaults filled in):")
        lines.extend(f"    {r['field'].replace('_', ' ')}: {shown(r['from'])} → {shown(r['to'])}" for r in result["resolved"])
    if result["memory"] is not None:
        m, t = result["memory"], result["traffic"]
        lines.append("")
        lines.append(f"  memory per GPU   {m['from_per_gpu_bytes'] / 1e9:.1f} GB → {m['to_per_gpu_bytes'] / 1e9:.1f} GB"
                     + (f" ({m['change']})" if m["change"] else ""))
        lines.append(f"  traffic per step {t['from_bytes'] / 1e9:.1f} GB → {t['to_bytes'] / 1e9:.1f} GB"
                     + (f" ({t['change']})" if t["change"] else ""))
        lines.extend(f"  ({note})" for note in result["assumptions"])
    return "\n".join(lines) + "\n"
