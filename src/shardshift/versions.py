"""DeepSpeed behaviour that depends on the DeepSpeed version, as data (reference deepspeed.md §0).

Rules that judge a ds_config against a version call these helpers with
`Context.deepspeed_version`: a tuple such as (0, 19, 2), or None for the newest DeepSpeed. A
message that depends on the version names the version it assumes
(`Context.deepspeed_version_text`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Version = tuple[int, ...]


@dataclass(frozen=True, slots=True)
class DefaultChange:
    """A key whose default (the value used when the key is absent) changed in `since`."""

    pointer: str
    before: Any
    after: Any
    since: Version
    meaning_before: str
    meaning_after: str
    evidence: str


@dataclass(frozen=True, slots=True)
class KeyChange:
    """A key that DeepSpeed started reading in `introduced`, or stopped reading in `ignored_since`
    (then `replaced_by` is the spelling read instead)."""

    pointer: str
    introduced: Version | None = None
    ignored_since: Version | None = None
    replaced_by: str | None = None
    evidence: str = ""


@dataclass(frozen=True, slots=True)
class BehaviourChange:
    """A change in how DeepSpeed parses a section or value, without a key of its own."""

    what: str
    before: str
    after: str
    since: Version
    evidence: str


OP = "/zero_optimization/offload_param"
OO = "/zero_optimization/offload_optimizer"

DEFAULT_CHANGES: tuple[DefaultChange, ...] = (
    DefaultChange("/gradient_clipping", 0.0, 1.0, (0, 19, 3), "no gradient clipping",
                  "the global gradient norm clipped at 1.0", "PR #8068; runtime/constants.py GRADIENT_CLIPPING_DEFAULT"),
    DefaultChange("/bf16/check_grad_overflow", False, True, (0, 19, 3), "steps with inf/nan gradients applied",
                  "steps with inf/nan gradients skipped", "PR #8035; runtime/precision_config.py"),
    DefaultChange(OP + "/pin_memory", False, True, (0, 19, 5), "pageable host memory",
                  "page-locked (pinned) host memory", "PR #8207; runtime/zero/offload_config.py"),
    DefaultChange(OO + "/pin_memory", False, True, (0, 19, 5), "pageable host memory",
                  "page-locked (pinned) host memory", "PR #8207; runtime/zero/offload_config.py"),
    DefaultChange("/bf16/immediate_grad_update", True, False, (0, 17, 1), "gradients applied immediately",
                  "gradients applied at the step", "runtime/constants.py vs runtime/precision_config.py"),
    DefaultChange("/scheduler/params/warmup_max_lr", 0.001, None, (0, 17, 2), "WarmupLR peaks at 0.001",
                  "WarmupLR peaks at the optimizer's lr", "PR #7360 (issue #7303)"),
    DefaultChange("/steps_per_print", 10, None, (0, 16, 0), "progress printed every 10 steps",
                  "no periodic progress print", "runtime/constants.py"),
)

KEY_CHANGES: tuple[KeyChange, ...] = (
    KeyChange("/aio/thread_count", ignored_since=(0, 16, 4), replaced_by="/aio/intra_op_parallelism",
              evidence="PR #7056"),
    KeyChange("/aio/intra_op_parallelism", introduced=(0, 16, 4), evidence="PR #7056"),
    KeyChange("/zero_optimization/leaf_module", introduced=(0, 18, 0), evidence="runtime/zero/leaf_module_config.py"),
    KeyChange(OO + "/super_offload", introduced=(0, 18, 0), evidence="runtime/zero/offload_config.py"),
    KeyChange("/zero_optimization/stage3_allgather_sequential", introduced=(0, 18, 5), evidence="runtime/zero/config.py"),
    KeyChange("/zero_optimization/allgather_sequential", introduced=(0, 18, 5), evidence="runtime/zero/config.py"),
    KeyChange("/log_level", introduced=(0, 19, 3), evidence="runtime/config.py"),
    KeyChange("/managed_gradient_accumulation", introduced=(0, 19, 4), evidence="runtime/engine.py _do_sanity_check"),
    KeyChange("/gradient_allreduce_op", introduced=(0, 19, 6), evidence="PR #8232 (after 0.19.5)"),
)

BEHAVIOUR_CHANGES: tuple[BehaviourChange, ...] = (
    BehaviourChange("fp16/bf16 blocks", "read with dict.get (unknown keys ignored)",
                    "validated strictly (unknown keys rejected)", (0, 17, 1), "runtime/precision_config.py"),
    BehaviourChange("fractional element counts", "truncated to an int (pydantic v1)",
                    "rejected with a ValidationError (pydantic v2)", (0, 15, 0), "runtime/config_utils.py; issue #6525"),
    BehaviourChange("scheduler warmup_num_steps", "any number", "a positive int (ValueError otherwise)", (0, 19, 3),
                    "PR #8126"),
)


# Sections DeepSpeed validated strictly (a pydantic model that forbids extra keys) only from some
# release on; before it, it read their keys one by one and ignored the others. fp16/bf16 is the
# BehaviourChange above; zero_optimization became a DeepSpeedConfigModel in 0.7.0 (runtime/zero/config.py).
_PRECISION_STRICT = next(c.since for c in BEHAVIOUR_CHANGES if c.what == "fp16/bf16 blocks")
STRICT_SECTIONS: dict[str, Version] = {"/fp16": _PRECISION_STRICT, "/bf16": _PRECISION_STRICT,
                                       "/zero_optimization": (0, 7, 0)}


def strict_from(pointer: str) -> Version | None:
    """The release from which DeepSpeed rejects unknown keys in the section at `pointer`."""
    return STRICT_SECTIONS.get(pointer)


def at_least(version: Version | None, since: Version) -> bool:
    """Whether `version` (None = the newest DeepSpeed) includes a change made in `since`."""
    return version is None or tuple(version) >= tuple(since)


def version_text(version: Version) -> str:
    return ".".join(map(str, version))


def default_change(pointer: str) -> DefaultChange | None:
    for change in DEFAULT_CHANGES:
        if change.pointer == pointer:
            return change
    return None


def deepspeed_default(pointer: str, version: Version | None = None) -> Any:
    """The value DeepSpeed `version` uses when the key at `pointer` is absent (None = newest)."""
    change = default_change(pointer)
    if change is not None:
        return change.after if at_least(version, change.since) else change.before
    from shardshift.formats.deepspeed.keys import key_index

    row = key_index().get(pointer)
    return row.default if row is not None else None


def removed_by(row: Any, version: Version | None) -> bool:
    """Whether DeepSpeed `version` (None = the newest) rejects the key-table row `row` as removed:
    its `removed_in` release or later (rows without one were never keys)."""
    if not getattr(row, "removed", None):
        return False
    since = getattr(row, "removed_in", None)
    return since is None or at_least(version, since)


def key_change(pointer: str) -> KeyChange | None:
    for change in KEY_CHANGES:
        if change.pointer == pointer:
            return change
    return None


def key_read_by(pointer: str, version: Version | None) -> bool:
    """Whether DeepSpeed `version` reads the key at `pointer` (True for keys without a recorded change)."""
    change = key_change(pointer)
    if change is None:
        return True
    if change.introduced is not None and not at_least(version, change.introduced):
        return False
    return not (change.ignored_since is not None and at_least(version, change.ignored_since))
