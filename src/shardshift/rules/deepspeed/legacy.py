"""Spellings across DeepSpeed versions: legacy keys, a legacy key next to its modern spelling,
and keys newer than the DeepSpeed version in use (DS320-DS322)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from shardshift.document import Document
from shardshift.formats.deepspeed.keys import KEYS, key_index
from shardshift.rules.base import Context, Finding, Rule, Severity
from shardshift.rules.deepspeed.facts import MISSING, OO, OP, Z, get, zero_stage
from shardshift.versions import KEY_CHANGES, key_read_by, version_text


@dataclass(frozen=True, slots=True)
class Legacy:
    """A legacy spelling: what DeepSpeed does with it, and what to write instead."""

    pointer: str
    modern: str
    severity: Severity
    effect: str
    fix: str | None


LEGACY: tuple[Legacy, ...] = (
    Legacy(Z + "/cpu_offload", OO, "warning",
           "DeepSpeed still converts it to offload_optimizer (with a deprecation warning)",
           '"offload_optimizer": {"device": "cpu"}'),
    Legacy(Z + "/cpu_offload_param", OP, "warning",
           "DeepSpeed still converts it to offload_param (with a deprecation warning)",
           '"offload_param": {"device": "cpu"}'),
    Legacy(Z + "/cpu_offload_use_pin_memory", OO + "/pin_memory", "error",
           "DeepSpeed ignores it (it only logs a deprecation warning)", "pin_memory"),
    Legacy(Z + "/stage3_gather_fp16_weights_on_model_save", Z + "/stage3_gather_16bit_weights_on_model_save",
           "warning", "DeepSpeed still copies it (with a deprecation warning)",
           "stage3_gather_16bit_weights_on_model_save"),
    Legacy("/bfloat16", "/bf16", "warning",
           "DeepSpeed reads it, but Accelerate and the Hugging Face Trainer fill and check only bf16 (Accelerate "
           "even adds a bf16 block of its own, which then wins over bfloat16)", "bf16"),
    Legacy("/aio/thread_count", "/aio/intra_op_parallelism", "error",
           "DeepSpeed ignores it since 0.16.4", "intra_op_parallelism"),
    Legacy("/allgather_size", Z + "/allgather_bucket_size", "error",
           "DeepSpeed only reads it with the legacy \"zero_optimization\": true and ignores it here",
           "allgather_bucket_size"),
)


def _written(data: dict, pointer: str) -> bool:
    return get(data, pointer) is not MISSING


class LegacySpelling(Rule):
    """A legacy ds_config spelling, with the spelling to use instead.

    ## What it does
    Reports keys that older DeepSpeed releases used: `cpu_offload`, `cpu_offload_param`,
    `cpu_offload_use_pin_memory`, `stage3_gather_fp16_weights_on_model_save`, `bfloat16`,
    `aio.thread_count` (from DeepSpeed 0.16.4) and a top-level `allgather_size`. The
    `zero_optimization: true` form is reported by DS102.

    ## Why is this bad
    Some are still converted, with a deprecation warning in the log (warning); some are ignored
    outright (error): `cpu_offload_use_pin_memory` has no effect, `aio.thread_count` is no
    longer read, `allgather_size` only works with the boolean `zero_optimization`. `bfloat16`
    works in DeepSpeed but not with Accelerate or the Hugging Face Trainer, which only know
    `bf16`.

    ## Example
    ```json
    {"zero_optimization": {"stage": 3, "cpu_offload": true, "stage3_gather_fp16_weights_on_model_save": true}}
    ```

    ## Use instead
    ```json
    {"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"},
                           "stage3_gather_16bit_weights_on_model_save": true}}
    ```
    """

    code = "DS320"
    name = "legacy-spelling"
    severity = "warning"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        stage = zero_stage(data)
        rows = key_index()
        for legacy in LEGACY:
            value = get(data, legacy.pointer)
            if value is MISSING or _written(data, legacy.modern):
                continue  # absent, or next to its modern spelling (DS321)
            row = rows.get(legacy.pointer)
            if row is not None and row.stages and stage is not None and stage not in row.stages:
                continue  # ignored at this stage anyway (DS303)
            if legacy.pointer == Z + "/cpu_offload_param" and value is True and stage is not None and stage < 3:
                continue  # parameter offload below stage 3 (DS301)
            if legacy.pointer == "/allgather_size" and isinstance(data.get("zero_optimization"), bool):
                continue  # read by the legacy boolean form (DS102 reports that form)
            if legacy.pointer == "/aio/thread_count" and key_read_by(legacy.pointer, context.deepspeed_version):
                continue  # the right spelling before 0.16.4
            modern = legacy.modern[len(Z) + 1:] if legacy.modern.startswith(Z + "/") else legacy.modern[1:]
            fix = legacy.fix
            if legacy.pointer in (Z + "/cpu_offload", Z + "/cpu_offload_param") and value is not True:
                instead, fix = "remove it (no offload is the default)", None
            else:
                instead = f"write {modern} instead"
            version = ""
            if legacy.pointer == "/aio/thread_count":
                version = f" (assuming {context.deepspeed_version_text})"
            parent, name = legacy.modern.rsplit("/", 1)
            rename = fix == name and legacy.pointer.rsplit("/", 1)[0] == parent  # a plain rename in place
            yield self.finding(
                document, legacy.pointer,
                f"{legacy.pointer[1:].replace('/', '.')} is a legacy spelling: {legacy.effect}{version}; {instead}",
                fix=fix, severity=legacy.severity, key=True, fix_kind="rename-key" if rename else None)


def _groups() -> list[tuple[str, ...]]:
    """Spellings DeepSpeed refuses to see together in zero_optimization: a field and its alias, or a
    deprecated field and its replacement. The modern spelling comes first."""
    groups: dict[str, list[str]] = {}
    for key in KEYS:
        if not (key.renamed_to and key.path.startswith(Z + "/")) or key.inert:
            continue
        target = key.renamed_to.rsplit("/", 1)[0] if key.renamed_to.endswith("/device") else key.renamed_to
        groups.setdefault(target, [target]).append(key.path)
    return [tuple(g) for g in groups.values()]


def _is_alias(modern: str, other: str) -> bool:
    return modern.rsplit("/", 1)[1] == "stage3_" + other.rsplit("/", 1)[1]


class LegacyAndModernBothSet(Rule):
    """The same setting written twice, in two spellings DeepSpeed does not accept together.

    ## What it does
    Reports a zero_optimization field written both under its name and its alias
    (`prefetch_bucket_size` and `stage3_prefetch_bucket_size`), or a deprecated key next to its
    replacement (`cpu_offload` with `offload_optimizer`, `stage3_gather_fp16_weights_on_model_save`
    with `stage3_gather_16bit_weights_on_model_save`), and `bfloat16` next to `bf16`.

    ## Why is this bad
    In zero_optimization DeepSpeed rejects the config at launch (a pydantic ValidationError for
    an alias, "Cannot provide deprecated parameter ... together" for a deprecated key), even when
    both say the same. With `bf16` and `bfloat16` DeepSpeed reads only `bf16` and drops the other
    block without a word (an error when they differ, a warning when they agree).

    ## Example
    ```json
    {"zero_optimization": {"stage": 2, "cpu_offload": false, "offload_optimizer": {"device": "cpu"}}}
    ```

    ## Use instead
    ```json
    {"zero_optimization": {"stage": 2, "offload_optimizer": {"device": "cpu"}}}
    ```
    """

    code = "DS321"
    name = "legacy-and-modern-both-set"
    severity = "error"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        for group in _groups():
            present = [p for p in group if _written(data, p)]
            if len(present) < 2:
                continue
            keep = present[0] if present[0] == group[0] else group[0]
            drop = [p for p in present if p != keep]
            names = " and ".join(p[len(Z) + 1:] for p in present)
            if all(_is_alias(group[0], p) for p in drop):
                why = "they are two names of one field, and DeepSpeed's validator rejects the pair at launch"
            else:
                why = "DeepSpeed asserts \"Cannot provide deprecated parameter ... together\" at launch"
            yield self.finding(
                document, drop[-1],
                f"{names} are both set: {why}; keep only {keep[len(Z) + 1:]}", key=True)
        if _written(data, "/bf16") and data.get("bf16") is not None and _written(data, "/bfloat16"):
            same = data["bf16"] == data["bfloat16"]
            effect = ("it says the same as bf16, so remove it" if same else
                      "its settings are lost; merge them into bf16 and remove bfloat16")
            yield self.finding(
                document, "/bfloat16",
                f"bf16 and bfloat16 are both set: DeepSpeed reads only bf16 and ignores bfloat16; {effect}",
                severity="warning" if same else "error", key=True)


def _older_spelling(pointer: str) -> str | None:
    for change in KEY_CHANGES:
        if change.replaced_by == pointer:
            return change.pointer.rsplit("/", 1)[1]
    return None


class KeyNewerThanDeepSpeed(Rule):
    """A key that the DeepSpeed version in use does not know yet (`--deepspeed-version`).

    ## What it does
    Only when a DeepSpeed version is given: reports keys introduced in a later release, such as
    `gradient_allreduce_op` (after 0.19.5), `managed_gradient_accumulation` (0.19.4),
    `stage3_allgather_sequential` (0.18.5) or `aio.intra_op_parallelism` (0.16.4, before that
    `thread_count`).

    ## Why is this bad
    In a strictly validated section (`zero_optimization`, offload blocks) the older DeepSpeed
    rejects the config at launch; anywhere else it ignores the key without a word, so the
    feature is simply off on the cluster that runs the older release.

    ## Example
    With `--deepspeed-version 0.18.0`:
    ```json
    {"zero_optimization": {"stage": 3, "stage3_allgather_sequential": true}}
    ```

    ## Use instead
    Upgrade DeepSpeed to 0.18.5 or later, or remove the key:
    ```json
    {"zero_optimization": {"stage": 3}}
    ```
    """

    code = "DS322"
    name = "key-newer-than-deepspeed-version"
    severity = "error"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        version = context.deepspeed_version
        if version is None:
            return
        data = document.data
        rows = key_index()
        for change in KEY_CHANGES:
            if change.introduced is None or key_read_by(change.pointer, version) or not _written(data, change.pointer):
                continue
            parent = rows.get(change.pointer.rsplit("/", 1)[0])
            strict = parent is not None and parent.strict
            effect = "rejects the config at launch" if strict else "ignores it"
            older = _older_spelling(change.pointer)
            instead = f"write {older} instead" if older else f"upgrade to {version_text(change.introduced)} or remove it"
            yield self.finding(
                document, change.pointer,
                f"{change.pointer[1:].replace('/', '.')} was added in DeepSpeed {version_text(change.introduced)}: "
                f"{context.deepspeed_version_text} {effect}; {instead}", fix=older, key=True,
                fix_kind="rename-key" if older else None)
