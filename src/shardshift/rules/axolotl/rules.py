"""Axolotl rules: keys Axolotl's schema drops or rejects (AX001-AX005) and settings that fail or
do nothing once the run starts (AX101-AX106).

What each rule says Axolotl does is what axolotl 0.21.0's config schema does
(`axolotl.utils.config.validate_config`; tests/test_axolotl_oracle.py runs it on every fixture
and on the corpus). The pydantic models use the default `extra="ignore"`: an unknown key, at the
top level or inside `fsdp_config`, is dropped without a word.
"""

from __future__ import annotations

import datetime
from typing import Iterable

from shardshift.context import UnknownContext
from shardshift.document import Document
from shardshift.formats.axolotl.keys import (
    FSDP1_ONLY_IGNORED,
    FSDP1_ONLY_REJECTED,
    FSDP_CONFIG_ALIASES,
    FSDP_CONFIG_FIELDS,
)
from shardshift.formats.axolotl.reader import fsdp_config_keys
from shardshift.formats.axolotl.schema_keys import SCHEMA_KEYS, STRING_KEYS
from shardshift.rules.base import Context, Finding, Rule, clear_match, did_you_mean

FORMATS = ("axolotl",)
MIGRATION = "see Axolotl's docs/multi-gpu.qmd#sec-migrate-fsdp1-fsdp2"
# top-level keys another rule reports (the removed FSDP1 list)
REPORTED_ELSEWHERE = frozenset({"fsdp"})


def _fsdp_config(document: Document) -> dict | None:
    data = document.data
    block = data.get("fsdp_config") if isinstance(data, dict) else None
    return block if isinstance(block, dict) and block else None


def _gated(findings: Iterable[Finding], code: str, document: Document, context: Context) -> Iterable[Finding]:
    """`findings` as the Axolotl release that runs the file makes them (rules/axolotl/releases.py):
    none when it predates the check; each saying which release judged it."""
    from shardshift.rules.axolotl import releases

    release = context.release("axolotl", document.path)
    for finding in findings:
        check = code
        if code == "AX007":
            check = f"AX007:{(finding.pointer or '').strip('/').split('/')[0]}"
        gate = releases.gate(release, check) if check in releases.CHECKS else None
        if gate is None:
            yield finding
        elif gate.applies:
            yield gate.apply(finding)


def _stripped(key: str) -> str:
    return key[5:] if key.startswith("fsdp_") and key != "fsdp_version" else key


class UnknownKey(Rule):
    """A top-level key Axolotl's config schema does not know: it is dropped silently.

    ## What it does
    Reports top-level keys that are neither a field of Axolotl's config schema nor an argument of
    a plugin the file registers, with the closest known key when one is close. A key of a bundled
    plugin (`liger_rms_norm` of `axolotl.integrations.liger.LigerPlugin`, ...) counts only when
    `plugins:` lists that plugin (plugin_keys.py, generated from axolotl's sources). In a file that
    lists a plugin shardshift does not know (not bundled with axolotl), an unknown key is an info:
    that plugin may add it. An unknown key left empty (`debug:`) is an info: nothing is lost.

    ## Why is this bad
    Axolotl's schema ignores unknown keys (pydantic's `extra="ignore"`): a misspelled
    `gradient_acumulation_steps: 8` leaves the default of 1 in force and nothing in the log says
    so. A plugin's keys join the schema only when the plugin is registered
    (`merge_input_args`): `liger_rms_norm: true` without the Liger plugin does nothing.

    ## Example
    ```yaml
    base_model: meta-llama/Llama-3.1-8B
    micro_batch_size: 2
    gradient_acumulation_steps: 8
    ```

    ## Use instead
    ```yaml
    base_model: meta-llama/Llama-3.1-8B
    micro_batch_size: 2
    gradient_accumulation_steps: 8
    ```
    """

    code = "AX001"
    name = "unknown-key"
    severity = "warning"
    formats = FORMATS

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        from shardshift.formats.axolotl.plugin_keys import BUILTIN_PLUGINS, PLUGINS
        from shardshift.rules.axolotl import releases

        listed = _listed_plugins(document.data)
        registered = {_plugin_class(name) for name in (*BUILTIN_PLUGINS, *listed)} - {None}
        known = set(SCHEMA_KEYS)
        for plugin in registered:
            known |= PLUGINS[plugin][1]
        plugin_keys = known - set(SCHEMA_KEYS)
        foreign = [name for name in listed if _plugin_class(name) is None]
        release = context.release("axolotl", document.path)
        pinned = release.version if release.pinned and releases.covered(release) else None
        for key in document.data:
            if not isinstance(key, str) or key in REPORTED_ELSEWHERE:
                continue
            if pinned is not None and releases.known_key(key, pinned) is not None:
                if releases.known_key(key, pinned):
                    continue  # the release that runs the file has the key
                if key in known and key not in plugin_keys:
                    yield self.finding(document, f"/{key}", f"{key} is not a key of {release.text()}: its schema "
                                       f"drops it silently (the key was added in axolotl "
                                       f"{releases.text(releases.ADDED_IN[key])})", key=True)
                    continue
            if key in known:
                continue
            value = document.data[key]
            owner = next((name for name, (_, keys) in sorted(PLUGINS.items()) if key in keys), None)
            if owner is not None:
                package = PLUGINS[owner][0]
                yield self.finding(document, f"/{key}",
                                   f"{key} is an argument of Axolotl's {owner} plugin, which this file does not list "
                                   f"under plugins: Axolotl's schema drops it silently; add {package}.{owner} to "
                                   "plugins:", key=True)
                continue
            if key in SET_BY_AXOLOTL:
                wanted, how = SET_BY_AXOLOTL[key]
                yield self.finding(document, f"/{key}", f"{key} is not an Axolotl config key: {how}",
                                   key=True, severity="info" if value == wanted else None)
                continue
            fix = clear_match(key, SCHEMA_KEYS)
            guess = fix or did_you_mean(key, SCHEMA_KEYS)
            hint = f"; did you mean {guess}?" if guess else ""
            if foreign:
                names = ", ".join(foreign)
                yield self.finding(document, f"/{key}",
                                   f"{key} is not a key of Axolotl's schema or of its bundled plugins; unless the "
                                   f"plugin {names} adds it, Axolotl's schema drops it silently{hint}", key=True,
                                   unknown_context=UnknownContext(
                                       "extension", f"this file lists the plugin {names}, which is not bundled with "
                                       "axolotl, so the keys it adds are unknown",
                                       f"check the package that provides {names}; suppress this finding for its "
                                       "keys"))
                continue
            if value is None or value == "":
                yield self.finding(document, f"/{key}", f"{key} is not an Axolotl config key and is left empty: "
                                   f"Axolotl's schema drops it, and nothing is lost{hint}", key=True,
                                   severity="info")
                continue
            yield self.finding(document, f"/{key}",
                               f"{key} is not an Axolotl config key: Axolotl's schema drops it silently{hint}",
                               fix=fix, key=True, fix_kind="rename-key" if fix else None)


# keys Axolotl does not read because it sets the TrainingArguments itself: key -> (the value it
# sets, what it does) (axolotl 0.21.0 core/builders/base.py `_configure_hub_parameters`; the same
# since v0.4, src/axolotl/core/trainer_builder.py)
SET_BY_AXOLOTL = {
    "hub_private_repo": (True, "Axolotl drops it and, whenever hub_model_id is set, pushes to a private "
                               "repository itself (hub_private_repo=True)"),
}


def _listed_plugins(data) -> list[str]:
    plugins = data.get("plugins") if isinstance(data, dict) else None
    if isinstance(plugins, str):
        plugins = [plugins]
    return [p.strip() for p in plugins if isinstance(p, str) and p.strip()] if isinstance(plugins, list) else []


def _plugin_class(name: str) -> str | None:
    """The bundled plugin a `plugins:` entry names (`axolotl.integrations.liger.LigerPlugin`, or the
    module that defines it, or `module:Class`), or None."""
    from shardshift.formats.axolotl.plugin_keys import PLUGINS

    module, _, cls = name.replace(":", ".").rpartition(".")
    found = PLUGINS.get(cls)
    if found is not None and (module == found[0] or module.startswith(found[0] + ".")):
        return cls
    return None


class UnknownFsdpConfigKey(Rule):
    """A key inside `fsdp_config` that Axolotl's FSDPConfig does not know: it is dropped silently.

    ## What it does
    Reports keys of `fsdp_config` that are not fields of Axolotl's `FSDPConfig` (after Axolotl
    strips an `fsdp_` prefix), with the closest field. FSDP1-only keys are AX003.

    ## Why is this bad
    `FSDPConfig` ignores unknown keys: `offload_param: true` (without the s) offloads nothing,
    and training runs out of memory, or simply runs with the defaults, without a warning.

    ## Example
    ```yaml
    fsdp_version: 2
    fsdp_config:
      offload_param: true
    ```

    ## Use instead
    ```yaml
    fsdp_version: 2
    fsdp_config:
      offload_params: true
    ```
    """

    code = "AX002"
    name = "unknown-fsdp-config-key"
    severity = "warning"
    formats = FORMATS

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        block = _fsdp_config(document)
        if block is None:
            return
        known = FSDP_CONFIG_FIELDS + FSDP_CONFIG_ALIASES
        for key in block:
            if not isinstance(key, str):
                continue
            name = _stripped(key)
            if name in known or name in FSDP1_ONLY_REJECTED or name in FSDP1_ONLY_IGNORED:
                continue
            fix = clear_match(name, FSDP_CONFIG_FIELDS)
            guess = fix or did_you_mean(name, FSDP_CONFIG_FIELDS)
            hint = f"; did you mean {guess}?" if guess else ""
            yield self.finding(document, f"/fsdp_config/{key}",
                               f"fsdp_config.{key} is not a field of Axolotl's FSDPConfig: it is dropped "
                               f"silently{hint}", fix=fix, key=True,
                               fix_kind="rename-key" if fix else None)


class Fsdp1OnlyKey(Rule):
    """An FSDP1-only key inside `fsdp_config`: rejected or dropped, as Axolotl only runs FSDP2.

    ## What it does
    Reports `sharding_strategy` and `forward_prefetch` (with or without the `fsdp_` prefix),
    which Axolotl's schema rejects (error), and `sync_module_states`, `backward_prefetch`,
    `backward_prefetch_policy`, `limit_all_gathers` and `use_orig_params`, which it drops with
    a warning in the log (warning).

    ## Why is this bad
    FSDP1 has been removed from Axolotl (0.21): the first group stops the run at config
    validation; the second does nothing any more (an FSDP1 `use_orig_params: false` meant to
    save memory, say).

    ## Example
    ```yaml
    fsdp_config:
      fsdp_sharding_strategy: SHARD_GRAD_OP
      fsdp_use_orig_params: false
    ```

    ## Use instead
    ```yaml
    fsdp_version: 2
    fsdp_config:
      reshard_after_forward: false
    ```
    """

    code = "AX003"
    name = "fsdp1-only-key"
    severity = "error"
    formats = FORMATS

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        return _gated(self._check(document, context), "AX003", document, context)  # releases.py

    def _check(self, document: Document, context: Context) -> Iterable[Finding]:
        block = _fsdp_config(document)
        if block is None:
            return
        for key in block:
            if not isinstance(key, str):
                continue
            name = _stripped(key)
            if name in FSDP1_ONLY_REJECTED:
                replacement = FSDP1_ONLY_REJECTED[name]
                instead = (f"use {replacement} instead" if replacement else "it has no FSDP2 equivalent: remove it")
                if name == "sharding_strategy":
                    instead += " (FULL_SHARD is reshard_after_forward: true, SHARD_GRAD_OP false)"
                yield self.finding(document, f"/fsdp_config/{key}",
                                   f"fsdp_config.{key} is an FSDP1-only option and Axolotl's schema rejects it "
                                   f"(FSDP1 has been removed from Axolotl); {instead}; {MIGRATION}", key=True)
            elif name in FSDP1_ONLY_IGNORED:
                yield self.finding(document, f"/fsdp_config/{key}",
                                   f"fsdp_config.{key} is an FSDP1-only option: Axolotl drops it under FSDP2 "
                                   f"(with a warning in the log) and it has no effect; remove it",
                                   severity="warning", key=True)


class PrefixedAndUnprefixed(Rule):
    """The same `fsdp_config` field written with and without the `fsdp_` prefix: the later wins.

    ## What it does
    Reports an `fsdp_config` key such as `fsdp_offload_params` next to `offload_params`.

    ## Why is this bad
    Axolotl strips the deprecated `fsdp_` prefix by rebuilding `fsdp_config` key by key, so
    the one written later silently replaces the other; which one that is depends on the order
    in the file, not on intent.

    ## Example
    ```yaml
    fsdp_config:
      offload_params: true
      fsdp_offload_params: false
    ```

    ## Use instead
    ```yaml
    fsdp_config:
      offload_params: true
    ```
    """

    code = "AX004"
    name = "fsdp-prefixed-and-unprefixed-key"
    severity = "warning"
    formats = FORMATS

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        block = _fsdp_config(document)
        if block is None:
            return
        winners = fsdp_config_keys(document.data)
        for key in block:
            if not isinstance(key, str):
                continue
            name = _stripped(key)
            name = "fsdp_version" if name == "version" else name
            winner = winners.get(name)
            if winner is None or winner == key:
                continue
            same = block[key] == block[winner]
            effect = "the same value, written twice" if same else \
                f"Axolotl uses the later one, {winner}: {block[winner]!r}, and ignores this {block[key]!r}"
            yield self.finding(
                document, f"/fsdp_config/{key}",
                f"fsdp_config.{key} and fsdp_config.{winner} set the same field ({name}); {effect}; keep one "
                f"({name}, without the deprecated fsdp_ prefix)", key=True,
                related=[self.related(document, f"/fsdp_config/{winner}", "the spelling Axolotl uses", key=True)])


class PrefixedKey(Rule):
    """An `fsdp_`-prefixed key inside `fsdp_config`: deprecated, Axolotl strips the prefix.

    ## What it does
    Reports keys such as `fsdp_offload_params` inside `fsdp_config` (not `fsdp_version`).

    ## Why is this bad
    Axolotl logs that the prefix is deprecated and strips it; a future release may stop doing
    so. The unprefixed name is the schema's own.

    ## Example
    ```yaml
    fsdp_config:
      fsdp_offload_params: true
    ```

    ## Use instead
    ```yaml
    fsdp_config:
      offload_params: true
    ```
    """

    code = "AX005"
    name = "fsdp-prefixed-key"
    severity = "info"
    formats = FORMATS

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        return _gated(self._check(document, context), "AX005", document, context)  # releases.py

    def _check(self, document: Document, context: Context) -> Iterable[Finding]:
        block = _fsdp_config(document)
        if block is None:
            return
        for key in block:
            if not isinstance(key, str) or _stripped(key) == key:
                continue
            name = _stripped(key)
            if name in FSDP1_ONLY_REJECTED or name in FSDP1_ONLY_IGNORED or name in block:
                continue  # AX003 / AX004
            if name not in FSDP_CONFIG_FIELDS:
                continue  # AX002
            yield self.finding(document, f"/fsdp_config/{key}",
                               f"the fsdp_ prefix of fsdp_config.{key} is deprecated: Axolotl strips it (with a "
                               f"warning); write {name}", fix=name, key=True, fix_kind="rename-key")


_BOOL_WORDS = {"yes", "no", "on", "off", "y", "n"}


def _plain_token(document: Document, pointer: str) -> str | None:
    """The scalar at `pointer` as written, when it is written plain (not quoted) on its line."""
    from shardshift.yaml11 import plain_token

    return plain_token(document.text, *document.position(pointer))


def _yaml11_non_string(value: object) -> bool:
    """A date or a number (not a bool: those are the first case) where PyYAML's YAML 1.1 resolver
    reads a plain scalar: `2024-01-01`, `0123` (octal), `1:30` (base 60), `1e5` is text there."""
    return isinstance(value, (int, float, datetime.date)) and not isinstance(value, bool)


def _shown(value: object) -> str:
    return value.isoformat() if isinstance(value, datetime.date) else repr(value)


class Yaml11Surprise(Rule):
    """A value PyYAML (YAML 1.1) reads differently than it looks: `no` is false, `None` is a string.

    ## What it does
    Reports, at the top level of an Axolotl config, a plain `yes` / `no` / `on` / `off` given to
    a key whose schema type is a string (`save_strategy`, `eval_strategy`, `hub_strategy`,
    `lr_scheduler`, ...), a plain date or number given to such a key (`hub_revision:
    2024-06-01`, `revision_of_model: 0123`), and a plain `None`, which is not YAML's null.

    ## Why is this bad
    Axolotl loads its config with PyYAML, which follows YAML 1.1: `save_strategy: no` is the
    boolean false, and the schema stops with "Input should be a valid string". `None` is the
    string "None": `max_steps: None` is a validation error, `adapter: None` asks for an adapter
    named None, `deepspeed: None` points at a file named None and `lr_scheduler: None` is passed
    on as a scheduler name, all accepted by the schema.

    ## Example
    ```yaml
    save_strategy: no
    max_steps: None
    ```

    ## Use instead
    ```yaml
    save_strategy: 'no'
    max_steps: null
    ```
    """

    code = "AX006"
    name = "yaml11-surprise"
    severity = "error"
    formats = FORMATS

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        for key, value in document.data.items():
            if not isinstance(key, str):
                continue
            pointer = f"/{key}"
            if isinstance(value, bool) and key in STRING_KEYS:
                token = _plain_token(document, pointer)
                if token is not None and token.lower() in _BOOL_WORDS:
                    yield self.finding(document, pointer,
                                       f"{key}: {token} is the boolean {str(value).lower()} to PyYAML (YAML 1.1), "
                                       f"and Axolotl's schema rejects a boolean for {key} (\"Input should be a "
                                       f"valid string\"); quote it: '{token}'", fix=f"'{token}'",
                                       fix_kind="replace-value")
            elif key in STRING_KEYS and _yaml11_non_string(value):
                token = _plain_token(document, pointer)
                if token is not None:
                    kind = "date" if isinstance(value, datetime.date) else "number"
                    yield self.finding(document, pointer,
                                       f"{key}: {token} is the {kind} {_shown(value)} to PyYAML (YAML 1.1), not "
                                       f"text, and Axolotl's schema rejects a {kind} for {key} (\"Input should be a "
                                       f"valid string\"); quote it: '{token}'", fix=f"'{token}'",
                                       fix_kind="replace-value")
            elif value == "None" and _plain_token(document, pointer) == "None":
                yield self.finding(document, pointer,
                                   f"{key}: None is the string 'None' in YAML, not null: Axolotl reads {key} as "
                                   "the text None; write null (or remove the key) for no value", fix="null",
                                   fix_kind="replace-value")


# deprecated top-level spelling -> (what Axolotl 0.21.0 does with it, what to write instead)
DEPRECATED = {
    "sequence_parallel_degree": ("Axolotl copies it into context_parallel_size with a warning, and ignores it when "
                                 "context_parallel_size is set", "context_parallel_size"),
    "ring_attn_func": ("Axolotl only warns: it is unused since ringmaster context parallelism replaced the "
                       "ring_flash_attn backend", None),
    "heads_k_stride": ("Axolotl only warns: it is unused since ringmaster context parallelism replaced the "
                       "ring_flash_attn backend", None),
    "fsdp_final_state_dict_type": ("deprecated by Axolotl's schema", "fsdp_config.final_state_dict_type"),
    "evaluation_strategy": ("Axolotl warns that it is deprecated", "eval_strategy"),
}
GC_VALUES = {"offload": "activation_offloading: true", "offload_disk": "activation_offloading: disk"}


class DeprecatedOption(Rule):
    """A deprecated or no longer used Axolotl option, with what to write instead.

    ## What it does
    Reports `sequence_parallel_degree` (now `context_parallel_size`), `ring_attn_func` and
    `heads_k_stride` (unused), the top-level `fsdp_final_state_dict_type` (now
    `fsdp_config.final_state_dict_type`), `evaluation_strategy` (now `eval_strategy`) and
    `gradient_checkpointing: offload` / `offload_disk` (now `activation_offloading`), as of
    axolotl 0.21.

    ## Why is this bad
    Axolotl still converts some (with a warning in the log) and ignores others: a
    `sequence_parallel_degree: 4` next to `context_parallel_size: 2` is ignored, and
    `ring_attn_func` no longer selects anything. A later release may reject them.

    ## Example
    ```yaml
    sequence_parallel_degree: 4
    gradient_checkpointing: offload
    ```

    ## Use instead
    ```yaml
    context_parallel_size: 4
    gradient_checkpointing: true
    activation_offloading: true
    ```
    """

    code = "AX007"
    # deprecated, renamed or removed: what an older release reads, a newer one refuses
    release_agreement = False
    name = "deprecated-option"
    severity = "warning"
    formats = FORMATS

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        return _gated(self._check(document, context), "AX007", document, context)  # releases.py

    def _check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        for key, (effect, instead) in DEPRECATED.items():
            if key not in data or data[key] is None:
                continue
            if key == "sequence_parallel_degree" and data.get("context_parallel_size"):
                effect = "Axolotl ignores it, as context_parallel_size is set"
            use = f"write {instead} instead" if instead else "remove it"
            fix = instead if instead and "." not in instead and instead not in data else None
            yield self.finding(document, f"/{key}", f"{key} is deprecated: {effect}; {use}", fix=fix, key=True,
                               fix_kind="rename-key" if fix else None)
        gc = data.get("gradient_checkpointing")
        if isinstance(gc, str) and gc in GC_VALUES:
            yield self.finding(document, "/gradient_checkpointing",
                               f"gradient_checkpointing: {gc} is deprecated: Axolotl rewrites it to true plus "
                               f"{GC_VALUES[gc]} (with a warning); write gradient_checkpointing: true and "
                               f"{GC_VALUES[gc]}")


class FsdpListRemoved(Rule):
    """The top-level `fsdp:` list (FSDP1 sharding options): Axolotl's schema rejects it.

    ## What it does
    Reports a non-empty top-level `fsdp:` list such as `[full_shard, auto_wrap]`, also next to
    `fsdp_version: 2`.

    ## Why is this bad
    Axolotl 0.21 removed FSDP1: its schema stops with "The top-level `fsdp` list is no longer
    supported". Older releases read it as FSDP1 sharding options and, next to
    `fsdp_version: 2`, mixed the FSDP1 strategy into an FSDP2 run.

    ## Example
    ```yaml
    fsdp:
      - full_shard
      - auto_wrap
    fsdp_config:
      fsdp_offload_params: true
    ```

    ## Use instead
    ```yaml
    fsdp_version: 2
    fsdp_config:
      offload_params: true
      reshard_after_forward: true
    ```
    """

    code = "AX101"
    name = "fsdp-list-removed"
    severity = "error"
    formats = FORMATS

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        return _gated(self._check(document, context), "AX101", document, context)  # releases.py

    def _check(self, document: Document, context: Context) -> Iterable[Finding]:
        value = document.data.get("fsdp")
        if not value:
            return
        words = value if isinstance(value, list) else [value]
        reshard = "false" if any(str(w).startswith("shard_grad_op") for w in words) else "true"
        yield self.finding(document, "/fsdp",
                           f"the top-level fsdp list ({', '.join(map(str, words))}) configured FSDP1 and Axolotl's "
                           f"schema rejects it (\"no longer supported\"); remove it and write fsdp_version: 2 with "
                           f"fsdp_config.reshard_after_forward: {reshard}; {MIGRATION}", key=True)


class FsdpVersion1(Rule):
    """`fsdp_version` other than 2: Axolotl's schema rejects it, FSDP1 has been removed.

    ## What it does
    Reports `fsdp_version` (top level, or `fsdp_version` / `version` inside `fsdp_config`)
    with any value but 2.

    ## Why is this bad
    Axolotl 0.21 stops at config validation: "fsdp_version: 1 is no longer supported".

    ## Example
    ```yaml
    fsdp_version: 1
    ```

    ## Use instead
    ```yaml
    fsdp_version: 2
    ```
    """

    code = "AX102"
    name = "fsdp-version-removed"
    severity = "error"
    formats = FORMATS

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        return _gated(self._check(document, context), "AX102", document, context)  # releases.py

    def _check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        block = data.get("fsdp_config") if isinstance(data.get("fsdp_config"), dict) else {}
        places = [("/fsdp_version", data.get("fsdp_version"))]
        places += [(f"/fsdp_config/{k}", block.get(k)) for k in ("fsdp_version", "version")]
        for pointer, version in places:
            if version is not None and str(version) != "2":
                yield self.finding(document, pointer,
                                   f"fsdp_version {version} is FSDP1, which Axolotl has removed: its schema rejects "
                                   f"it; write 2 (and move FSDP1-only keys: {MIGRATION})",
                                   fix="2", fix_kind="replace-value")


class DeepspeedAndFsdp(Rule):
    """`deepspeed:` and `fsdp_config` both set: Axolotl's schema rejects the pair.

    ## What it does
    Reports `deepspeed` next to a non-empty `fsdp_config` (or the FSDP1 `fsdp` list).

    ## Why is this bad
    One run shards with one engine. Axolotl stops with "deepspeed and fsdp cannot be used
    together." (older releases only checked the `fsdp` list and then silently took the FSDP
    branch while still passing the ds_config to the Trainer).

    ## Example
    ```yaml
    deepspeed: deepspeed_configs/zero3.json
    fsdp_version: 2
    fsdp_config:
      reshard_after_forward: true
    ```

    ## Use instead
    ```yaml
    fsdp_version: 2
    fsdp_config:
      reshard_after_forward: true
    ```
    """

    code = "AX103"
    name = "deepspeed-and-fsdp"
    severity = "error"
    formats = FORMATS

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        if not data.get("deepspeed"):
            return
        other = "/fsdp_config" if data.get("fsdp_config") else "/fsdp" if data.get("fsdp") else None
        if other is None:
            return
        yield self.finding(document, "/deepspeed",
                           f"deepspeed and {other[1:]} are both set: Axolotl's schema rejects the pair (\"deepspeed "
                           f"and fsdp cannot be used together.\"); keep one", key=True,
                           related=[self.related(document, other, "the FSDP settings", key=True)])


class GradientCheckpointingTwice(Rule):
    """`gradient_checkpointing` and `fsdp_config.activation_checkpointing` both true: the Trainer refuses.

    ## What it does
    Reports `gradient_checkpointing: true` (or `offload` / `offload_disk`) together with
    `fsdp_config.activation_checkpointing: true`, unless `activation_offloading` is set (then
    Axolotl passes `gradient_checkpointing=False` to the Trainer).

    ## Why is this bad
    Axolotl's schema accepts the pair, but the transformers Trainer (5.x) raises when it is
    built, after the model has loaded: "`fsdp_config['activation_checkpointing']` (FSDP's own
    activation checkpointing) and the `activation_checkpointing` training argument can't both be
    set to True".

    ## Example
    ```yaml
    gradient_checkpointing: true
    fsdp_version: 2
    fsdp_config:
      activation_checkpointing: true
    ```

    ## Use instead
    ```yaml
    fsdp_version: 2
    fsdp_config:
      activation_checkpointing: true
    ```
    """

    code = "AX104"
    name = "gradient-checkpointing-twice"
    severity = "error"
    formats = FORMATS

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        if data.get("gradient_checkpointing") not in (True, "offload", "offload_disk") or \
                data.get("activation_offloading"):
            return
        key = fsdp_config_keys(data).get("activation_checkpointing")
        if key is None or data["fsdp_config"][key] is not True:
            return
        yield self.finding(document, "/gradient_checkpointing",
                           f"gradient_checkpointing and fsdp_config.{key} are both on: the transformers Trainer "
                           "raises when it is built (\"can't both be set to True\"), after the model has loaded; "
                           "keep FSDP's activation_checkpointing and remove gradient_checkpointing", key=True,
                           related=[self.related(document, f"/fsdp_config/{key}", "FSDP's activation checkpointing",
                                                 key=True)])


class Yaml11Number(Rule):
    """A number PyYAML (YAML 1.1) reads as another number: `010` is 8, `1:30` is 90.

    ## What it does
    Reports, at the top level of an Axolotl config, a plain number that YAML 1.1 reads in another
    base than it looks: a leading zero makes it octal (`010`, `0100`), colons make it base 60
    (`1:30`). Numbers a leading zero does not change (`07`) are left alone.

    ## Why is this bad
    Axolotl loads its config with PyYAML, which follows YAML 1.1: `save_steps: 0100` is 64 and
    `warmup_steps: 1:30` is 90, and the schema accepts both. YAML 1.2 readers (and most editors'
    highlighting) read 100 and a string. Nothing says which number the run used.

    ## Example
    ```yaml
    save_steps: 0100
    ```

    ## Use instead
    ```yaml
    save_steps: 100
    ```
    """

    code = "AX012"
    name = "yaml11-number"
    severity = "warning"
    formats = FORMATS

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        from shardshift.yaml11 import surprising_number

        for key, value in document.data.items():
            if not isinstance(key, str) or key in STRING_KEYS or key not in SCHEMA_KEYS:
                continue
            found = surprising_number(document.text, *document.position(f"/{key}"), value)
            if found is not None:
                token, surprise = found
                yield self.finding(document, f"/{key}",
                                   f"{key}: {token} is {surprise} to PyYAML (YAML 1.1), which Axolotl loads the file "
                                   f"with: Axolotl receives {value}, not the number it looks like; write {value} "
                                   "(or the number meant, without a leading zero or colon)")


class Fp16DroppedByBf16(Rule):
    """`bf16: true` and `fp16: true` together: Axolotl trains in bf16 and drops fp16 without a word.

    ## What it does
    Reports `fp16: true` in an Axolotl config that also sets `bf16` to `true` or `full`.

    ## Why is this bad
    Axolotl's schema accepts the pair. When the run starts, `resolve_dtype` sets `fp16` to false
    whenever `bf16` is on (off Apple's MPS), the model loads in bfloat16, and the trainer builder
    passes `fp16=False` to the Trainer: the run trains in bf16, and nothing says that `fp16: true`
    was dropped. A config copied between GPUs (fp16 on a V100, bf16 on an A100) often ends up with
    both.

    ## Example
    ```yaml
    bf16: true
    fp16: true
    ```

    ## Use instead
    ```yaml
    bf16: true
    ```
    (or `fp16: true` alone, or `bf16: auto` with `fp16` unset to choose by GPU)
    """

    code = "AX111"
    name = "fp16-dropped-by-bf16"
    severity = "warning"
    formats = FORMATS

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        bf16 = data.get("bf16")
        if data.get("fp16") is not True or (bf16 is not True and bf16 != "full"):
            return
        yield self.finding(document, "/fp16",
                           f"fp16: true with bf16: {'true' if bf16 is True else bf16}: Axolotl sets fp16 to false "
                           "when the run starts (resolve_dtype) and trains in bf16, without a word; remove fp16 "
                           "(or bf16, to train in fp16)", key=True,
                           related=[self.related(document, "/bf16", "the precision Axolotl trains in", key=True)])


class OptimizerRejectedWithDeepspeed(Rule):
    """An optimizer Axolotl refuses to run under DeepSpeed (Muon, the flash_* optimizers).

    ## What it does
    Reports `optimizer: muon`, `muon_8bit` or any `flash_*` optimizer next to `deepspeed:`.

    ## Why is this bad
    Axolotl's schema stops the run: "Muon optimizer is currently incompatible with DeepSpeed",
    "flash_adamw optimizer is incompatible with DeepSpeed. Flash optimizers only support DDP and
    FSDP2." The ds_config's own optimizer block does not change that.

    ## Example
    ```yaml
    optimizer: muon
    deepspeed: deepspeed_configs/zero2.json
    ```

    ## Use instead
    ```yaml
    optimizer: muon
    fsdp_version: 2
    fsdp_config:
      reshard_after_forward: true
    ```
    """

    code = "AX105"
    name = "optimizer-rejected-with-deepspeed"
    severity = "error"
    formats = FORMATS

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        optimizer = data.get("optimizer")
        if not data.get("deepspeed") or not isinstance(optimizer, str):
            return
        if optimizer in ("muon", "muon_8bit"):
            says = "Muon optimizer is currently incompatible with DeepSpeed"
        elif optimizer.startswith("flash_"):
            says = f"{optimizer} optimizer is incompatible with DeepSpeed. Flash optimizers only support DDP and FSDP2."
        else:
            return
        yield self.finding(document, "/optimizer",
                           f"optimizer {optimizer} with deepspeed: Axolotl's schema rejects the pair (\"{says}\"); "
                           "use FSDP2 (fsdp_version: 2) or another optimizer",
                           related=[self.related(document, "/deepspeed", "the DeepSpeed config", key=True)])


class Bnb8bitOptimizerWithFsdp(Rule):
    """`adamw_8bit` / `adamw_bnb_8bit` with FSDP: Axolotl's schema rejects them.

    ## What it does
    Reports `optimizer: adamw_8bit` or `adamw_bnb_8bit` next to a non-empty `fsdp_config`.

    ## Why is this bad
    bitsandbytes' 8-bit AdamW fails in CUDA ops on FSDP2's sharded parameters, so Axolotl
    stops with "FSDP2 not compatible with adamw_bnb_8bit, use `adamw_torch_8bit` instead".

    ## Example
    ```yaml
    optimizer: adamw_bnb_8bit
    fsdp_version: 2
    fsdp_config:
      reshard_after_forward: true
    ```

    ## Use instead
    ```yaml
    optimizer: adamw_torch_8bit
    fsdp_version: 2
    fsdp_config:
      reshard_after_forward: true
    ```
    """

    code = "AX106"
    name = "bnb-8bit-optimizer-with-fsdp"
    severity = "error"
    formats = FORMATS

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        optimizer = data.get("optimizer")
        if optimizer not in ("adamw_8bit", "adamw_bnb_8bit") or not data.get("fsdp_config"):
            return
        yield self.finding(document, "/optimizer",
                           f"optimizer {optimizer} with FSDP: Axolotl's schema rejects it (\"FSDP2 not compatible "
                           f"with {optimizer}\"); use adamw_torch_8bit", fix="adamw_torch_8bit",
                           fix_kind="replace-value",
                           related=[self.related(document, "/fsdp_config", "the FSDP settings", key=True)])


class FalconWithFsdp(Rule):
    """A Falcon base model with FSDP: Axolotl's schema rejects it.

    ## What it does
    Reports a non-empty `fsdp_config` when `base_model` names a Falcon model (Axolotl tests
    whether "falcon" is in the name, ignoring case).

    ## Why is this bad
    Axolotl stops before training with "FSDP is not supported for falcon models".

    ## Example
    ```yaml
    base_model: tiiuae/falcon-7b
    fsdp_version: 2
    fsdp_config:
      reshard_after_forward: true
    ```

    ## Use instead
    DeepSpeed (`deepspeed: deepspeed_configs/zero3.json`) for Falcon, or another base model with FSDP.
    """

    code = "AX107"
    name = "falcon-with-fsdp"
    severity = "error"
    formats = FORMATS

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        base = data.get("base_model")
        if not isinstance(base, str) or "falcon" not in base.lower() or not data.get("fsdp_config"):
            return
        yield self.finding(document, "/fsdp_config",
                           f"FSDP with the Falcon model {base}: Axolotl's schema rejects it (\"FSDP is not supported "
                           "for falcon models\"); use DeepSpeed for this model", key=True,
                           related=[self.related(document, "/base_model", "the base model", key=True)])


# Axolotl's preference-tuning trainers for which FSDP2 refuses a quantized base model
QUANTIZED_RL = frozenset({"dpo", "kto", "orpo", "ipo"})


class QuantizedPreferenceTuningWithFsdp(Rule):
    """`load_in_8bit` / `load_in_4bit` with FSDP for DPO, KTO, ORPO or IPO: Axolotl's schema rejects it.

    ## What it does
    Reports `load_in_8bit: true` or `load_in_4bit: true` when `rl` is dpo, kto, orpo or ipo and
    `fsdp_config` is set.

    ## Why is this bad
    Axolotl stops with "FSDP2 does not support load_in_8bit or load_in_4bit with ... Please use
    DeepSpeed instead."

    ## Example
    ```yaml
    rl: dpo
    load_in_4bit: true
    fsdp_version: 2
    fsdp_config:
      reshard_after_forward: true
    ```

    ## Use instead
    ```yaml
    rl: dpo
    load_in_4bit: true
    deepspeed: deepspeed_configs/zero2.json
    ```
    """

    code = "AX108"
    name = "quantized-preference-tuning-with-fsdp"
    severity = "error"
    formats = FORMATS

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        rl = data.get("rl")
        if not isinstance(rl, str) or rl.lower() not in QUANTIZED_RL or not data.get("fsdp_config"):
            return
        for key in ("load_in_8bit", "load_in_4bit"):
            if data.get(key):
                yield self.finding(document, f"/{key}",
                                   f"{key} with FSDP for rl: {rl}: Axolotl's schema rejects it (\"FSDP2 does not "
                                   f"support load_in_8bit or load_in_4bit with {rl}\"); use DeepSpeed for a quantized "
                                   "base model here", key=True,
                                   related=[self.related(document, "/fsdp_config", "the FSDP settings", key=True)])
                return


class ExpertParallelRequirements(Rule):
    """Axolotl's expert-parallel plugin with `expert_parallel_size` > 1 but no FSDP2 full state dict.

    ## What it does
    With the `expert_parallel` plugin listed in `plugins` and `expert_parallel_size` above 1,
    reports a missing FSDP2 setup (`fsdp_version: 2` and an `fsdp_config`) and an
    `fsdp_config.state_dict_type` (or `final_state_dict_type`) other than FULL_STATE_DICT.

    ## Why is this bad
    The plugin's argument check stops the run ("expert_parallel_size (N) > 1 requires FSDP2" /
    "requires fsdp_config.state_dict_type: FULL_STATE_DICT"): Accelerate's default sharded state
    dict keeps only the first expert group's experts in a checkpoint.

    ## Example
    ```yaml
    plugins:
      - axolotl.integrations.expert_parallel.ExpertParallelPlugin
    expert_parallel_size: 4
    fsdp_version: 2
    fsdp_config:
      reshard_after_forward: true
    ```

    ## Use instead
    ```yaml
    fsdp_config:
      reshard_after_forward: true
      state_dict_type: FULL_STATE_DICT
    ```
    """

    code = "AX109"
    name = "expert-parallel-requirements"
    severity = "error"
    formats = FORMATS

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        return _gated(self._check(document, context), "AX109", document, context)  # releases.py

    def _check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        plugins = data.get("plugins")
        size = data.get("expert_parallel_size")
        if not isinstance(plugins, list) or not any(isinstance(p, str) and "expert_parallel" in p for p in plugins):
            return
        if not isinstance(size, int) or isinstance(size, bool) or size <= 1:
            return
        block = _fsdp_config(document)
        version = data.get("fsdp_version")
        if version is None and block is not None:
            version = block.get("fsdp_version", block.get("version"))
        if block is None or version != 2:
            yield self.finding(document, "/expert_parallel_size",
                               f"expert_parallel_size {size} without FSDP2: the expert-parallel plugin stops the run "
                               f"(\"expert_parallel_size ({size}) > 1 requires FSDP2\"); set fsdp_version: 2 and an "
                               "fsdp_config with state_dict_type: FULL_STATE_DICT", key=True)
            return
        for key in ("state_dict_type", "final_state_dict_type"):
            spelled = next((k for k in (key, "fsdp_" + key) if k in block), None)
            value = block.get(spelled) if spelled else None
            if (key == "state_dict_type" and value is None) or (value is not None and value != "FULL_STATE_DICT"):
                pointer = f"/fsdp_config/{spelled}" if spelled else "/fsdp_config"
                yield self.finding(document, pointer,
                                   f"expert_parallel_size {size} with fsdp_config.{key} {value or 'unset'}: the "
                                   f"expert-parallel plugin stops the run (\"requires fsdp_config.{key}: "
                                   "FULL_STATE_DICT\"): a sharded checkpoint keeps only one expert group's experts; "
                                   "set it to FULL_STATE_DICT", key=True,
                                   related=[self.related(document, "/expert_parallel_size", "expert parallelism",
                                                         key=True)])
                return



# utils/schemas/quantization.py validate_ao_dtype: the names of each dtype
_AO_NAMES = {"int4": "int4", "int8": "int8", "float8_e4m3fn": "float8_e4m3fn", "fp8": "float8_e4m3fn",
             "float8": "float8_e4m3fn", "nvfp4": "nvfp4", "mxfp4": "mxfp4", "ternary": "ternary"}


def quantization_refusal(weight: str, activation: str | None, group_size: int | None) -> str | None:
    """What axolotl 0.20.0-0.21.0's get_quantization_config raises for the (validated) dtypes, or None."""
    if activation is None:
        if weight == "int8":
            return "Int8WeightOnlyConfig is not supported by torchao QAT."
        if weight == "int4":
            return None
    if (activation, weight) == ("int4", "int4"):
        return "Int4DynamicActivationInt4WeightConfig is not supported by torchao QAT."
    if (activation, weight) == ("int8", "int8"):
        return "Int8DynamicActivationInt8WeightConfig is not supported by torchao QAT."
    if (activation, weight) in (("int8", "int4"), ("float8_e4m3fn", "float8_e4m3fn"), ("float8_e4m3fn", "int4")):
        return None
    if weight == "nvfp4":
        if group_size is not None and group_size != 16:
            return "NVFP4 quantization must use a group_size of 16"
        if activation not in (None, "nvfp4"):
            return "NVFP4 weights support only NVFP4 or unquantized activations"
        return None
    if weight == "mxfp4":
        return None if (32 if group_size is None else group_size) == 32 else \
            "MXFP4 quantization must use a block_size (group_size) of 32"
    shown = [f"TorchAOQuantDType.{d}" if d else "None" for d in (activation, weight)]  # the enum's str, as raised
    return f"Invalid activation/weight dtype combination: {shown[0]}/{shown[1]}"


class QuantizationDtypesRefused(Rule):
    """A `qat:` block whose dtypes torchao has no QAT configuration for in Axolotl.

    ## What it does
    Reports a `qat` block that `axolotl train` refuses when it prepares the model for
    quantization-aware training, with Axolotl's defaults for what the block leaves out (`weight_dtype: int8`, no
    `activation_dtype`, `group_size: 32`): int8 weights without activation quantization,
    int4 or int8 for both, NVFP4 weights with a `group_size` other than 16 (the default 32
    included) or with activations other than NVFP4, MXFP4 with a `group_size` other than 32,
    and any other pair (float8 weights without float8 activations, say). With
    `quantize_embedding`, the embedding is quantized with the weight dtype alone, which is
    judged too. Ternary QAT takes another path and is not judged here; nor is a `quantization`
    block, whose dtypes `axolotl quantize` takes from its command line first.

    ## Why is this bad
    The schema accepts the block; the run stops later with ValueError (`get_quantization_config`),
    after the model is loaded.

    ## Example
    ```yaml
    qat:
      weight_dtype: int8
    ```

    ## Use instead
    ```yaml
    qat:
      weight_dtype: int4
      activation_dtype: int8
      group_size: 32
    ```
    """

    code = "AX112"
    name = "quantization-dtypes-refused"
    severity = "error"
    formats = FORMATS

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        return _gated(self._check(document, context), "AX112", document, context)  # releases.py

    def _check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        for block, command, when in (("qat", "axolotl train", "when it prepares the model for QAT"),):
            section = data.get(block)
            if not isinstance(section, dict) or not section:
                continue  # an empty or absent block is not read (`if cfg.qat:`)
            weight = section.get("weight_dtype", "int8")
            activation = section.get("activation_dtype")
            group_size = section.get("group_size", 32)
            if not isinstance(weight, str) or weight not in _AO_NAMES or (
                    activation is not None and (not isinstance(activation, str) or activation not in _AO_NAMES)):
                continue  # a name validate_ao_dtype refuses: AX110
            if group_size is not None and (not isinstance(group_size, int) or isinstance(group_size, bool)):
                continue  # the schema's type check (AX110 / pydantic)
            weight, activation = _AO_NAMES[weight], _AO_NAMES.get(activation) if activation else None
            if weight == "ternary":
                continue
            quantize_embedding = section.get("quantize_embedding") is True
            calls = [(activation, "")] + ([(None, " for the embedding (quantize_embedding quantizes it with the "
                                                  "weight dtype alone)")] if quantize_embedding else [])
            for used, note in calls:
                refusal = quantization_refusal(weight, used, group_size)
                if refusal is None:
                    continue
                pointer = next((f"/{block}/{k}" for k in ("weight_dtype", "activation_dtype", "group_size")
                                if k in section), f"/{block}")
                written = ", ".join(f"{k}: {section[k]}" for k in ("weight_dtype", "activation_dtype", "group_size")
                                    if k in section) or "the defaults"
                yield self.finding(document, pointer,
                                   f"{block} with {written} (weight {weight}, activation {used or 'none'}, group_size "
                                   f"{group_size}){note}: {command} raises ValueError {when} (\"{refusal}\"); "
                                   f"{_QUANT_FIX}", key=pointer == f"/{block}")
                break


_QUANT_FIX = ("use a pair torchao QAT has: int4 weights with int8 activations (or none), float8 with float8, "
              "nvfp4 with group_size 16, mxfp4 with group_size 32")


# integrations/mixlora/constants.py MIXLORA_FFN_MODULE_NAMES: the FFN projections MixLoRA patches itself
MIXLORA_FFN_MODULES = ("gate_proj", "up_proj", "down_proj")
# loaders/model.py check_tensor_parallel_rl_adapter_support: the trainers that wrap the TP-sharded model in PEFT
TP_ADAPTER_RL = ("dpo", "ipo", "kto")


def _truthy(value) -> bool:
    """Truth after pydantic's coercion of a bool field ("false" is False), as Axolotl's cfg holds it."""
    if isinstance(value, str):
        return value.strip().lower() not in ("false", "f", "no", "n", "off", "0", "")
    return bool(value)


class AdapterSetupRefused(Rule):
    """An adapter set-up that `axolotl train` refuses when it builds the adapter, after the model is loaded.

    ## What it does
    Reports `adapter: mixlora` (its plugin listed in `plugins`) with `lora_target_linear: true`, or
    with `lora_target_modules` naming `gate_proj`, `up_proj` or `down_proj` (MixLoRA patches those
    FFN projections itself);
    and any adapter with `tensor_parallel_size` above 1 under `rl: dpo`, `ipo` or `kto` without
    `merge_lora`.

    ## Why is this bad
    The schema accepts the file; the run stops with ValueError once the model is loaded
    (`_validate_mixlora_lora_target_modules`, `check_tensor_parallel_rl_adapter_support`): with
    DPO, IPO or KTO the trainer applies PEFT to the tensor-parallel shards itself, so every rank
    would train a shard-local adapter.

    ## Example
    ```yaml
    adapter: mixlora
    lora_target_linear: true
    ```

    ## Use instead
    ```yaml
    adapter: mixlora
    lora_target_modules: [q_proj, k_proj, v_proj, o_proj]
    ```
    """

    code = "AX113"
    name = "adapter-setup-refused"
    severity = "error"
    formats = FORMATS

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        return _gated(self._check(document, context), "AX113", document, context)  # releases.py

    def _check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        adapter = data.get("adapter")
        plugins = data.get("plugins")
        # without the MixLoRA plugin listed the schema refuses the adapter first (AX110)
        if adapter == "mixlora" and isinstance(plugins, list) and any(isinstance(p, str) and "mixlora" in p.lower()
                                                                      for p in plugins):
            if _truthy(data.get("lora_target_linear")):
                yield self.finding(document, "/lora_target_linear",
                                   "adapter mixlora with lora_target_linear: axolotl train raises ValueError when it "
                                   "builds the adapter (\"MixLoRA is incompatible with lora_target_linear=true because "
                                   "FFN gate_proj/up_proj/down_proj are patched by MixLoRA\"); list the attention "
                                   "projections in lora_target_modules instead",
                                   related=[self.related(document, "/adapter", "the MixLoRA adapter", key=True)])
            modules = data.get("lora_target_modules")
            modules = [modules] if isinstance(modules, str) else modules if isinstance(modules, list) else []
            overlap = sorted({m for m in modules if isinstance(m, str)} & set(MIXLORA_FFN_MODULES))
            if overlap:
                yield self.finding(document, "/lora_target_modules",
                                   f"adapter mixlora with lora_target_modules {overlap}: axolotl train raises ValueError "
                                   "when it builds the adapter (\"MixLoRA cannot be combined with LoRA targets on FFN "
                                   f"modules. Remove overlapping lora_target_modules entries: {overlap}\")",
                                   related=[self.related(document, "/adapter", "the MixLoRA adapter", key=True)])
        size = data.get("tensor_parallel_size")
        rl = data.get("rl")
        if adapter and isinstance(size, int) and not isinstance(size, bool) and size > 1 and \
                isinstance(rl, str) and rl in TP_ADAPTER_RL and not _truthy(data.get("merge_lora")):
            yield self.finding(document, "/tensor_parallel_size",
                               f"adapter {adapter} with tensor_parallel_size {size} under rl: {rl}: axolotl train raises "
                               f"ValueError when it loads the model (\"tensor_parallel_size > 1 with an adapter is not "
                               f"supported for rl: {rl}\"): the trainer applies PEFT to the tensor-parallel shards, so "
                               "every rank would train a shard-local adapter; use FSDP (dp_shard_size) or "
                               "context_parallel_size instead",
                               related=[self.related(document, "/rl", "the preference trainer", key=True)])


# utils/config/__init__.py _LEGACY_DIFFUSION_PLUGINS (after normalize_plugin_name: "module:Class" -> "module.Class")
DIFFUSION_PLUGINS = frozenset({"axolotl.integrations.diffusion.DiffusionPlugin",
                               "axolotl.integrations.diffusion.plugin.DiffusionPlugin"})


class DiffusionSetupRefused(Rule):
    """A diffusion language-model set-up that `axolotl train` refuses when it normalizes the config.

    ## What it does
    Reports `diffusion_lm.from_causal_lm: true` (a causal checkpoint converted to diffusion)
    without `axolotl.integrations.diffusion.DiffusionPlugin` in `plugins`, and
    `attn_implementation: varlen` without a native diffusion block (`diffusion_lm` with
    `from_causal_lm` false): varlen attention is only for native full-sequence diffusion models.
    With a native block, whether the model supports varlen is the model's own profile, and not
    judged here.

    ## Why is this bad
    The schema accepts the file; `normalize_config` raises ValueError before the model loads
    ("requires `plugins: [axolotl.integrations.diffusion.DiffusionPlugin]`; without it training
    would silently fall back to causal SFT", "varlen is supported only for native full-sequence
    diffusion models").

    ## Example
    ```yaml
    diffusion_lm:
      from_causal_lm: true
    ```

    ## Use instead
    ```yaml
    plugins:
      - axolotl.integrations.diffusion.DiffusionPlugin
    diffusion_lm:
      from_causal_lm: true
    ```
    """

    code = "AX114"
    name = "diffusion-setup-refused"
    severity = "error"
    formats = FORMATS

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        return _gated(self._check(document, context), "AX114", document, context)  # releases.py

    def _check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        block = data.get("diffusion_lm")
        from_causal = isinstance(block, dict) and bool(block.get("from_causal_lm", False))
        native = isinstance(block, dict) and not from_causal
        if from_causal:
            plugins = data.get("plugins") if isinstance(data.get("plugins"), list) else []
            named = {p.replace(":", ".", 1) if ":" in p else p for p in plugins if isinstance(p, str)}
            if not named & DIFFUSION_PLUGINS:
                yield self.finding(document, "/diffusion_lm/from_causal_lm",
                                   "diffusion_lm.from_causal_lm without the DiffusionPlugin in plugins: axolotl train "
                                   "raises ValueError while it normalizes the config (\"`diffusion_lm.from_causal_lm: "
                                   "true` requires `plugins: [axolotl.integrations.diffusion.DiffusionPlugin]`\"); "
                                   "add the plugin", key=True)
        if data.get("attn_implementation") == "varlen" and not native:
            yield self.finding(document, "/attn_implementation",
                               "attn_implementation varlen without a native diffusion_lm block: axolotl train raises "
                               "ValueError while it normalizes the config (\"attn_implementation: varlen is supported "
                               "only for native full-sequence diffusion models that declare diffusion_varlen\"); use "
                               "flash_attention_2 or sdpa")


# core/builders/base.py: the optimizers whose factory asks build_parallelism_config for a device mesh
MESH_OPTIMIZERS = ("muon", "muon_8bit", "dion", "sinkgd")


def _size(value) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 1


class DpShardWithoutFsdp(Rule):
    """`dp_shard_size` above 1 without FSDP, in a run whose world leaves ranks for it to shard over.

    ## What it does
    With the launch's world size given (`--world-size`, or `world-size` in `[tool.shardshift]`), reports
    `dp_shard_size` above 1 with neither `fsdp_config` nor `fsdp`, where Axolotl builds its
    parallelism config (`tensor_parallel_size` or `context_parallel_size` above 1, or a Muon, Dion
    or SinkGD optimizer) and the ranks left after expert, tensor, context and replicate
    parallelism are more than one.

    ## Why is this bad
    `dp_shard_size` only means something to FSDP: Axolotl raises ValueError when it builds the
    device mesh ("dp_shard_size was configured without a corresponding fsdp_config!"), after the
    schema accepted the file.

    ## Example
    ```yaml
    tensor_parallel_size: 2
    dp_shard_size: 4
    ```

    ## Use instead
    ```yaml
    tensor_parallel_size: 2
    dp_shard_size: 4
    fsdp_version: 2
    fsdp_config:
      reshard_after_forward: true
    ```
    """

    code = "AX115"
    name = "dp-shard-without-fsdp"
    severity = "error"
    formats = FORMATS

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        return _gated(self._check(document, context), "AX115", document, context)  # releases.py

    def _check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        world = context.world_size
        shard = data.get("dp_shard_size")
        if world is None or not isinstance(shard, int) or isinstance(shard, bool) or shard <= 1:
            return
        if data.get("fsdp") or data.get("fsdp_config"):
            return
        tp, cp = _size(data.get("tensor_parallel_size")), _size(data.get("context_parallel_size"))
        if tp <= 1 and cp <= 1 and data.get("optimizer") not in MESH_OPTIMIZERS:
            return  # Axolotl builds no parallelism config: the key is not read
        # _get_parallel_config_kwargs (0.21.0), up to the check
        remaining = world
        expert = _size(data.get("expert_parallel_size"))
        if expert > 1:
            if remaining % expert:
                return  # it refuses the expert size first (PL102)
            remaining //= expert
        remaining //= tp
        remaining //= cp
        if data.get("deepspeed") and cp > 1 and remaining > 1:
            return  # under DeepSpeed the context axis is Ulysses and the rest replicates
        replicate = data.get("dp_replicate_size")
        if isinstance(replicate, int) and not isinstance(replicate, bool) and replicate > 1:
            remaining //= replicate
        if remaining > 1:
            yield self.finding(document, "/dp_shard_size",
                               f"dp_shard_size {shard} without fsdp_config, on {world} ranks: axolotl train raises "
                               "ValueError when it builds the device mesh (\"dp_shard_size was configured without a "
                               "corresponding fsdp_config!\"); configure FSDP (fsdp_version: 2 and an fsdp_config) or "
                               "remove dp_shard_size")

# the names check_tokenizer_use_mistral_common (validation.py, mode="before") lower-cases when
# tokenizer_use_mistral_common is unset: an explicit null there is None.lower()
MISTRAL_COMMON_PROBED = ("base_model", "base_model_config", "tokenizer_config")


class UncheckedValueFails(Rule):
    """A value Axolotl computes with before any check refuses it: `axolotl train` fails with a TypeError.

    ## What it does
    Reports what Axolotl 0.21.0 computes with unchecked, found by mutating real configs and running
    Axolotl's own validation and `normalize_config` on each (tests/test_coverage_implicit.py):

    - an explicit null `base_model`, `base_model_config` or `tokenizer_config` while
      `tokenizer_use_mistral_common` is unset (a schema validator lower-cases each: AttributeError);
    - an explicit null `gradient_accumulation_steps` or `micro_batch_size` with no `batch_size`
      (normalize_config multiplies and divides them: TypeError);
    - `num_epochs: 0` with `saves_per_epoch` (ZeroDivisionError);
    - a string `tensor_parallel_size` (a schema validator compares it with 1: TypeError);
    - with `adapter: qlora` and `gradient_checkpointing_kwargs.use_reentrant: false`, a `deepspeed`
      that is a number or a boolean (a validator searches it for "zero3": TypeError).

    ## Why is this bad
    `axolotl train` stops before the model loads, with an exception that does not name the key.

    ## Example
    ```yaml
    micro_batch_size: 2
    gradient_accumulation_steps:
    ```

    ## Use instead
    ```yaml
    micro_batch_size: 2
    gradient_accumulation_steps: 1
    ```
    """

    code = "AX116"
    name = "unchecked-value-fails"
    severity = "error"
    formats = FORMATS

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        return _gated(self._check(document, context), "AX116", document, context)  # releases.py

    def _check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        if not isinstance(data, dict):
            return
        tail = "axolotl train fails before the model loads"
        if data.get("tokenizer_use_mistral_common") is None:
            for key in MISTRAL_COMMON_PROBED:
                if key in data and data[key] is None:
                    yield self.finding(document, f"/{key}", f"{key} is null, and tokenizer_use_mistral_common is unset: "
                                       f"{tail}, with AttributeError ('NoneType' object has no attribute 'lower': the "
                                       f"schema lower-cases it to look for a Magistral model); give the {key} or remove "
                                       "the key", key=True)
        if not data.get("use_ray") and data.get("batch_size") is None:
            for key in ("gradient_accumulation_steps", "micro_batch_size"):
                if key in data and data[key] is None:
                    yield self.finding(document, f"/{key}", f"{key} is null and batch_size is not given: {tail}, with "
                                       "TypeError (normalize_config computes the batch size from micro_batch_size and "
                                       f"gradient_accumulation_steps); give {key} a number", key=True)
                    break
        epochs = data.get("num_epochs")
        if data.get("saves_per_epoch") and epochs == 0 and not isinstance(epochs, bool):
            yield self.finding(document, "/num_epochs", f"num_epochs is 0 with saves_per_epoch: {tail}, with "
                               "ZeroDivisionError (normalize_config divides by saves_per_epoch x num_epochs); set "
                               "num_epochs, or max_steps and no saves_per_epoch")
        tp = data.get("tensor_parallel_size")
        if isinstance(tp, str):
            yield self.finding(document, "/tensor_parallel_size", f"tensor_parallel_size is the string {tp!r}: {tail}, "
                               "with TypeError (a schema validator compares it with 1 before the schema converts it); "
                               "write the number unquoted")
        kwargs = data.get("gradient_checkpointing_kwargs")
        deepspeed = data.get("deepspeed")
        if data.get("adapter") == "qlora" and isinstance(kwargs, dict) and kwargs.get("use_reentrant") is False \
                and isinstance(deepspeed, (int, float)):
            yield self.finding(document, "/deepspeed", f"deepspeed is {deepspeed!r}, not a path or an object: {tail}, "
                               "with TypeError (with qlora and use_reentrant false a schema validator looks for "
                               "\"zero3\" in it); name the ds_config file")


# what Axolotl refuses to edit on a mistral-common tokenizer (validation.py,
# check_mistral_common_incompatible_options)
MISTRAL_COMMON_EDITS = ("added_tokens_overrides", "special_tokens", "tokens")


class MistralCommonTokenizerEdit(Rule):
    """Tokenizer edits with `tokenizer_use_mistral_common: true`: Axolotl's schema rejects them.

    ## What it does
    Reports `special_tokens`, `tokens` or `added_tokens_overrides` next to
    `tokenizer_use_mistral_common: true`.

    ## Why is this bad
    The mistral-common tokenizer cannot be edited: Axolotl stops with "special_tokens override is
    not supported with mistral-common tokenizer" (and the same for the other two keys).

    ## Example
    ```yaml
    tokenizer_use_mistral_common: true
    special_tokens:
      pad_token: "</s>"
    ```

    ## Use instead
    Drop the tokenizer edits, or set `tokenizer_use_mistral_common: false` to use the Hugging Face
    tokenizer.
    """

    code = "AX008"
    name = "mistral-common-tokenizer-edit"
    severity = "error"
    formats = FORMATS

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        if not data.get("tokenizer_use_mistral_common"):
            return
        for key in MISTRAL_COMMON_EDITS:
            if data.get(key):
                yield self.finding(document, f"/{key}",
                                   f"{key} with tokenizer_use_mistral_common: Axolotl's schema rejects it "
                                   f"(\"{key + ' override' if key in ('special_tokens', 'tokens') else key} is not "
                                   "supported with mistral-common tokenizer\"); drop it or use the Hugging Face "
                                   "tokenizer", key=True,
                                   related=[self.related(document, "/tokenizer_use_mistral_common",
                                                         "the mistral-common tokenizer", key=True)])
                return


class LayerClassNamesSpaced(Rule):
    """`fsdp_config.transformer_layer_cls_to_wrap: A, B`: Accelerate looks up a class named " B".

    ## What it does
    Reports `fsdp_config.transformer_layer_cls_to_wrap` (or its `fsdp_`-prefixed spelling) under
    `auto_wrap_policy: TRANSFORMER_BASED_WRAP` whose comma-separated class names have spaces
    around them or an empty name (`A,,B`, a trailing comma).

    ## Why is this bad
    Axolotl's schema takes the value as one string and `setup_fsdp_envs` hands it unchanged to
    Accelerate (`FSDP_TRANSFORMER_CLS_TO_WRAP`), whose FSDP plugin splits it on `,` without
    stripping: `A, B` names the classes `A` and ` B`. No module class is called ` B`, so
    preparing the model raises `ValueError: Could not find the transformer layer class  B in the
    model.` after the model has loaded.

    ## Example
    ```yaml
    fsdp_version: 2
    fsdp_config:
      auto_wrap_policy: TRANSFORMER_BASED_WRAP
      transformer_layer_cls_to_wrap: LlamaDecoderLayer, LlamaMLP
    ```

    ## Use instead
    ```yaml
    fsdp_version: 2
    fsdp_config:
      auto_wrap_policy: TRANSFORMER_BASED_WRAP
      transformer_layer_cls_to_wrap: LlamaDecoderLayer,LlamaMLP
    ```
    """

    code = "AX011"
    name = "layer-class-names-not-comma-separated"
    severity = "error"
    formats = FORMATS

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        if not isinstance(data, dict) or not isinstance(data.get("fsdp_config"), dict):
            return
        keys = fsdp_config_keys(data)
        if "transformer_layer_cls_to_wrap" not in keys or "auto_wrap_policy" not in keys:
            return
        block = data["fsdp_config"]
        if block[keys["auto_wrap_policy"]] != "TRANSFORMER_BASED_WRAP":
            return
        key = keys["transformer_layer_cls_to_wrap"]
        value = block[key]
        if not isinstance(value, str):
            return  # not a string: the schema rejects it (AX006 and the schema's own error)
        from shardshift.rules.accelerate.config import layer_class_names

        found = layer_class_names(value)
        if found is None:
            return
        looked_up, fix = found
        wrong = next(name for name in looked_up if not name.isidentifier())
        yield self.finding(document, f"/fsdp_config/{key}",
                           f"fsdp_config.{key} is {value!r}: Axolotl passes it to Accelerate unchanged, whose FSDP "
                           f"plugin splits it on ',' without stripping and looks up a class named {wrong!r}, so "
                           f"preparing the model raises ValueError (\"Could not find the transformer layer class "
                           f"{wrong} in the model.\")" + (f"; write {fix}" if fix else ""),
                           fix=fix, fix_kind="replace-value" if fix else None)


# options axolotl 0.21.0's schema stops at (utils/schemas/deprecated.py, DeprecatedParameters): a field
# validator raises DeprecationWarning, which is not a pydantic error, so it escapes validate_config
# and ends the run. key -> (raised when the value is "truthy" or "set" (not null), its message)
REMOVED = {
    "max_packed_sequence_len": ("truthy", "`max_packed_sequence_len` is no longer supported"),
    "rope_scaling": ("truthy", "`rope_scaling` is no longer supported, it should now be a key under `model_config`"),
    "dpo_use_logits_to_keep": ("set", "`dpo_use_logits_to_keep` is no longer supported, it has been removed in "
                                      "TRL >= 0.29.0"),
    "dpo_generate_during_eval": ("set", "`dpo_generate_during_eval` is no longer supported, it has been removed in "
                                        "TRL >= 0.29.0"),
    "dpo_norm_loss": ("set", "`dpo_norm_loss` is no longer supported, due to breaking changes in TRL >= 0.29.0"),
    "rpo_alpha": ("set", "`rpo_alpha` has been deprecated in TRL >= 0.29.0, and now requires passing multiple loss "
                         "types, which is not yet supported by Axolotl."),
    "s2_attention": ("truthy", "`s2_attention` (shifted-sparse attention) is no longer supported."),
    "flash_attn_rms_norm": ("truthy", "`flash_attn_rms_norm` is no longer supported."),
}


class RemovedOption(Rule):
    """An option Axolotl no longer supports and stops at.

    ## What it does
    Reports the options whose validator in Axolotl's schema (axolotl 0.21's
    `DeprecatedParameters`) raises: `flash_attn_rms_norm`, `s2_attention`,
    `max_packed_sequence_len` and `rope_scaling` when set to a true value, and
    `dpo_use_logits_to_keep`, `dpo_generate_during_eval`, `dpo_norm_loss` and `rpo_alpha` when
    set at all.

    ## Why is this bad
    The validator raises `DeprecationWarning("`flash_attn_rms_norm` is no longer supported.")`;
    it is not a pydantic error, so it escapes config validation and the run stops before
    training.

    ## Example
    ```yaml
    flash_attention: true
    flash_attn_rms_norm: true
    ```

    ## Use instead
    ```yaml
    flash_attention: true
    ```
    """

    code = "AX009"
    # deprecated, renamed or removed: what an older release reads, a newer one refuses
    release_agreement = False
    name = "removed-option"
    severity = "error"
    formats = FORMATS

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        if not isinstance(data, dict):
            return
        for key, (when, raised) in REMOVED.items():
            if key not in data:
                continue
            value = data[key]
            if isinstance(value, str):
                continue  # a string fails the field's type first (or is a template placeholder): not this error
            if (when == "truthy" and not value) or (when == "set" and value is None):
                continue
            shown = "true" if value is True else "false" if value is False else repr(value)
            yield self.finding(document, f"/{key}",
                               f"{key}: {shown} stops the run: Axolotl's schema raises DeprecationWarning(\"{raised}\") "
                               "while it validates the config; remove the key", key=True)


class FractionForIntField(Rule):
    """A number with a fractional part where Axolotl's schema wants an integer.

    ## What it does
    Reports a top-level key that Axolotl's schema types `int` (`warmup_steps`, `max_steps`,
    `micro_batch_size`, `logging_steps`, ...; int_keys.py, generated from axolotl 0.21's
    schema) whose value is a number with a fractional part. (`2.0` passes as 2, and a
    fraction is fine where the schema takes a float, as `eval_steps` or `save_steps` do.)

    ## Why is this bad
    Axolotl's pydantic schema refuses the config: "Input should be a valid integer, got a number
    with a fractional part". `warmup_steps: 0.1` meant as a ratio is `warmup_ratio: 0.1`.

    ## Example
    ```yaml
    warmup_steps: 0.1
    ```

    ## Use instead
    ```yaml
    warmup_ratio: 0.1
    ```
    """

    code = "AX010"
    name = "fraction-for-int-field"
    severity = "error"
    formats = FORMATS

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        from shardshift.formats.axolotl.int_keys import INT_KEYS

        data = document.data
        if not isinstance(data, dict):
            return
        for key, value in data.items():
            if key not in INT_KEYS or not isinstance(value, float) or value != value or value in (
                    float("inf"), float("-inf")) or value.is_integer():
                continue
            hint = "; for a fraction of the steps write warmup_ratio" if key == "warmup_steps" else ""
            yield self.finding(document, f"/{key}",
                               f"{key}: {value!r} is not an integer: Axolotl's schema refuses the config (\"Input "
                               f"should be a valid integer, got a number with a fractional part\"){hint}")


class SchemaRefuses(Rule):
    """A combination of keys Axolotl 0.21.0's config schema refuses ("X and Y together", "X requires Y").

    ## What it does
    Checks the YAML against the table of Axolotl's own validators in
    `shardshift/rules/axolotl/schema_checks.py`: one row per check site of axolotl 0.21.0
    (`utils/schemas/validation.py`, `config.py`, `fsdp.py` and the bundled context- and
    expert-parallel plugins' `args.py`) whose every input is written in the file: mutually
    exclusive keys (`warmup_steps` with `warmup_ratio`), keys that need another
    (`activation_offloading` without `gradient_checkpointing`, `fp32_norms` without
    `fsdp_config`), values a backend refuses (`attn_implementation: flash`). The finding quotes
    what Axolotl raises. It is an error when the repository pins axolotl 0.21.0 (the release the
    table was read from), and an info naming the unknown release otherwise: older releases lack
    some of these checks.

    ## Why is this bad
    `axolotl train` validates the config before anything loads and stops with the validator's
    error (a pydantic ValidationError): the run never starts. Finding it before the job is queued
    saves a cluster round trip; every row is confirmed against Axolotl's own `validate_config` by
    tests/test_coverage_map.py.

    ## Example
    ```yaml
    base_model: meta-llama/Llama-3.1-8B
    warmup_steps: 100
    warmup_ratio: 0.05
    activation_offloading: true
    ```

    ## Use instead
    ```yaml
    base_model: meta-llama/Llama-3.1-8B
    warmup_steps: 100
    gradient_checkpointing: true
    activation_offloading: true
    ```
    """

    code = "AX110"
    name = "schema-refuses"
    severity = "error"
    formats = FORMATS

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        from shardshift.rules.axolotl.schema_checks import CHECKS, View

        data = document.data
        if not isinstance(data, dict):
            return
        view = View(data)
        release = context.release("axolotl", document.path)
        version = tuple(release.version)[:3] if release.version is not None else None
        unknown = None
        if version != (0, 21, 0):
            what = (f"the file runs with {release.text()}, and shardshift's table of these checks is read from "
                    "axolotl 0.21.0 (older releases lack some of them)" if version is not None else
                    "no Axolotl release is pinned next to the file, and these checks are read from axolotl 0.21.0 "
                    "(older releases lack some of them)")
            unknown = UnknownContext("release", what, "pin axolotl==0.21.0 in the repository's requirements, or "
                                                      "pass --axolotl-version")
        for row in CHECKS:
            view.templated = False
            try:
                hit = row.when(view)
            except (TypeError, ValueError, AttributeError, KeyError, IndexError, ZeroDivisionError):
                continue  # a value of another type: the schema's type check reports it, not this row
            if not hit or view.templated:
                continue  # not refused, or a value read is a template placeholder (filled in before Axolotl reads it)
            written = [key for key in row.keys if key in data]
            pointer = f"/{written[0]}" if written else ""
            keys = ", ".join(written) if written else row.keys[0]
            yield self.finding(document, pointer,
                               f"{keys}: axolotl 0.21.0 refuses the config at validation (\"{row.says}\"); {row.fix}",
                               key=bool(written), unknown_context=unknown)
