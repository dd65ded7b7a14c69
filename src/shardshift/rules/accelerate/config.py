"""Accelerate config YAML rules: keys and values (AC001-AC099) and what they mean together
(AC101-AC199).

Each message says what Accelerate 1.15 does with the file: `load_config_from_file`
(commands/config/config_args.py: the unknown top-level key check, the enums), `accelerate
launch`'s `_validate_launch_command` and `prepare_*_env` (utils/launch.py), and the plugins built
from that environment in each training process (`FullyShardedDataParallelPlugin.__post_init__`,
`DeepSpeedPlugin.__post_init__`). tests/test_accelerate_oracle.py runs Accelerate's own code on
every fixture and confirms each claim (rejected or accepted, and the value the plugin ends up
with)."""

from __future__ import annotations

from typing import Any, Iterable

from shardshift.document import Document
from shardshift.formats.accelerate.keys import (
    AUTO_WRAP_POLICIES,
    CLUSTER_KEYS,
    COMPUTE_ENVIRONMENTS,
    DISTRIBUTED_TYPES,
    DYNAMO_BACKENDS,
    FSDP1_ONLY,
    LEGACY_TOP,
    MIXED_PRECISIONS,
    NESTED,
    SAGEMAKER_KEYS,
    SAGEMAKER_TYPES,
    SHARDING_STRATEGIES,
    STATE_DICT_TYPES,
    fsdp_name,
    truthy,
)
from shardshift.formats.accelerate.reader import fsdp_settings, fsdp_version
from shardshift.rules.base import Context, Finding, Related, Rule, clear_match, did_you_mean


def _data(document: Document) -> dict | None:
    return document.data if isinstance(document.data, dict) and document.syntax is None else None


def _sagemaker(data: dict) -> bool:
    return data.get("compute_environment") == "AMAZON_SAGEMAKER"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class AccelerateRule(Rule):
    formats = ("accelerate",)


class UnknownTopLevelKey(AccelerateRule):
    """A top-level key Accelerate does not know: `accelerate launch` refuses the file.

    ## What it does
    Reports a top-level key of an Accelerate config that is not a field of Accelerate's
    `ClusterConfig` (or `SageMakerConfig` with `compute_environment: AMAZON_SAGEMAKER`), with the
    key it is probably a misspelling of. The legacy `fp16` and `dynamo_backend` keys are not
    reported here: Accelerate still converts them (AC008).

    ## Why is this bad
    `load_config_from_file` raises `ValueError("The config file at ... had unknown keys ([...])")`
    before anything starts, so every `accelerate launch` with this file fails.

    ## Example
    ```yaml
    distributed_type: FSDP
    num_process: 8
    ```

    ## Use instead
    ```yaml
    distributed_type: FSDP
    num_processes: 8
    ```
    """

    code = "AC001"
    name = "unknown-top-level-key"
    severity = "error"

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = _data(document)
        if data is None:
            return
        known = SAGEMAKER_KEYS if _sagemaker(data) else CLUSTER_KEYS
        for key in data:
            if not isinstance(key, str) or key in known or key in LEGACY_TOP:
                continue
            guess = did_you_mean(key, known)
            hint = f"; did you mean `{guess}`?" if guess else ""
            yield self.finding(document, f"/{key}", f"`{key}` is not an Accelerate config key: Accelerate's "
                               f"loader refuses the whole file (ValueError: \"had unknown keys\"){hint}",
                               key=True, fix=clear_match(key, known))


class UnknownNestedKey(AccelerateRule):
    """A key inside `fsdp_config`, `deepspeed_config`, `megatron_lm_config` or
    `parallelism_config` that Accelerate does not read: silently ignored.

    ## What it does
    Reports a key of one of these blocks that `accelerate launch` has no argument for (in
    `fsdp_config` after adding the `fsdp_` prefix the launcher adds to an unprefixed key), with
    the key it is probably a misspelling of.

    ## Why is this bad
    Unlike top-level keys, Accelerate never checks the keys inside these blocks: the launcher
    copies each one onto its arguments, nothing reads a misspelt one, and the setting you meant
    keeps its default. The run starts normally.

    ## Example
    ```yaml
    fsdp_config:
      fsdp_ofload_params: true
    ```

    ## Use instead
    ```yaml
    fsdp_config:
      fsdp_offload_params: true
    ```
    """

    code = "AC002"
    name = "unknown-nested-key"
    severity = "warning"

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = _data(document)
        if data is None or _sagemaker(data):
            return
        for block, known in NESTED.items():
            section = data.get(block)
            if not isinstance(section, dict):
                continue
            for key in section:
                if not isinstance(key, str):
                    continue
                name = fsdp_name(key) if block == "fsdp_config" else key
                if name in known:
                    continue
                if block == "fsdp_config" and key in OLD_FSDP_KEYS:
                    yield from self._old_key(document, context, block, key)
                    continue
                candidates = known if block != "fsdp_config" else known + tuple(k[5:] for k in known)
                guess = did_you_mean(key, candidates)
                hint = f"; did you mean `{guess}`?" if guess else ""
                yield self.finding(document, f"/{block}/{key}", f"`{key}` is not a key Accelerate reads in "
                                   f"{block}: Accelerate never checks the keys of {block}, so it is silently "
                                   f"ignored{hint}", key=True, fix=clear_match(key, candidates))


    def _old_key(self, document: Document, context: Context, block: str, key: str) -> Iterable[Finding]:
        """An old spelling that older Accelerate releases still read: judged by the release in use."""
        from shardshift.context import UnknownContext
        from shardshift.context.releases import newest
        from shardshift.versions import version_text

        last_read, new_name, evidence = OLD_FSDP_KEYS[key]
        release = context.release("accelerate", document.path)
        last, newest_known = version_text(last_read), newest("accelerate")
        if release.pinned and release.version <= last_read:
            return  # the release that runs the file reads it (with a deprecation warning)
        message = (f"`{key}` is the old name of `{new_name}`: accelerate {last} still read it ({evidence}), "
                   f"the newest Accelerate does not and silently ignores it; write `{new_name}`")
        if release.pinned and release.version < newest_known:
            yield self.finding(document, f"/{block}/{key}", message, key=True, unknown_context=UnknownContext(
                "release", f"whether {release.text()} still reads `{key}` is not in shardshift's table (read up to "
                f"at least {last}, not by {version_text(newest_known)})",
                "check the Accelerate release's utils/launch.py, or pass --accelerate-version"))
            return
        yield self.finding(document, f"/{block}/{key}", message, key=True, fix=new_name, fix_kind="rename-key")


# Old fsdp_config spellings: key -> (the last release known to read it, the new name, where it is read).
# Confirmed in accelerate 0.20.0 (utils/launch.py:171) and 0.31.0 (utils/launch.py:238-246, with a
# deprecation warning); the newest release shardshift knows (accelerate 1.15) no longer reads it.
OLD_FSDP_KEYS = {
    "fsdp_backward_prefetch_policy": ((0, 31, 0), "fsdp_backward_prefetch",
                                      "its utils/launch.py maps it to FSDP_BACKWARD_PREFETCH"),
}


class Fsdp1KeyUnderFsdp2(AccelerateRule):
    """An FSDP1-only `fsdp_config` key under `fsdp_version: 2`: dropped without a word.

    ## What it does
    Reports `fsdp_sharding_strategy`, `fsdp_backward_prefetch`, `fsdp_forward_prefetch`,
    `fsdp_use_orig_params` and `fsdp_sync_module_states` in an `fsdp_config` with
    `fsdp_version: 2`.

    ## Why is this bad
    FSDP2 has no such settings. From a YAML, Accelerate's FSDP2 plugin ignores them (the
    sharding strategy environment variable is read for version 1 only), so a
    `fsdp_sharding_strategy: SHARD_GRAD_OP` written for FSDP2 still runs as FULL_SHARD.
    `accelerate to-fsdp2` renames `fsdp_sharding_strategy` to `fsdp_reshard_after_forward` and
    removes the others.

    ## Example
    ```yaml
    fsdp_config:
      fsdp_version: 2
      fsdp_sharding_strategy: SHARD_GRAD_OP
    ```

    ## Use instead
    ```yaml
    fsdp_config:
      fsdp_version: 2
      fsdp_reshard_after_forward: false
    ```
    """

    code = "AC003"
    name = "fsdp1-key-under-fsdp2"
    severity = "warning"

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = _data(document)
        if data is None or data.get("distributed_type") != "FSDP" or fsdp_version(data) != 2:
            return
        settings = fsdp_settings(data)
        loading = settings.get("fsdp_cpu_ram_efficient_loading", (None, True))[1]
        for name, (pointer, value) in settings.items():
            if name == "fsdp_sync_module_states" and not value and loading:
                continue  # the launcher refuses it: AC103
            if name in FSDP1_ONLY:
                fix = None
                if name == "fsdp_sharding_strategy" and "fsdp_reshard_after_forward" not in settings:
                    fix = "fsdp_reshard_after_forward"
                yield self.finding(document, pointer, f"`{pointer.rsplit('/', 1)[-1]}` is an FSDP1 setting: "
                                   f"under fsdp_version 2 Accelerate ignores it ({FSDP1_ONLY[name]})", key=True,
                                   fix=fix)


class ReshardIgnoredUnderFsdp1(AccelerateRule):
    """`fsdp_reshard_after_forward` under FSDP1 without `fsdp_sharding_strategy`: FULL_SHARD runs.

    ## What it does
    Reports an `fsdp_config` of version 1 (the default) that gives `fsdp_reshard_after_forward`
    (as `accelerate config` writes it: a strategy name, or a bool) but no
    `fsdp_sharding_strategy`.

    ## Why is this bad
    `accelerate launch` always exports `FSDP_SHARDING_STRATEGY` (its argument defaults to
    `FULL_SHARD`), and the version 1 plugin reads the sharding strategy first and only falls back
    to `reshard_after_forward` when there is none. So `fsdp_reshard_after_forward: SHARD_GRAD_OP`
    runs as FULL_SHARD.

    ## Example
    ```yaml
    fsdp_config:
      fsdp_reshard_after_forward: SHARD_GRAD_OP
    ```

    ## Use instead
    ```yaml
    fsdp_config:
      fsdp_sharding_strategy: SHARD_GRAD_OP
    ```
    """

    code = "AC004"
    name = "reshard-after-forward-ignored-under-fsdp1"
    severity = "warning"

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = _data(document)
        if data is None or data.get("distributed_type") != "FSDP" or fsdp_version(data) != 1:
            return
        settings = fsdp_settings(data)
        if "fsdp_reshard_after_forward" not in settings or "fsdp_sharding_strategy" in settings:
            return
        pointer, value = settings["fsdp_reshard_after_forward"]
        if str(value).upper() == "FULL_SHARD" or value is True:
            return
        fix = "fsdp_sharding_strategy" if isinstance(value, str) and value.upper() in SHARDING_STRATEGIES else None
        yield self.finding(document, pointer, f"under fsdp_version 1 Accelerate ignores fsdp_reshard_after_forward "
                           f"({value!r}) when fsdp_sharding_strategy is not given: the launcher exports "
                           "FSDP_SHARDING_STRATEGY=FULL_SHARD and the plugin reads that first, so this runs as "
                           "FULL_SHARD", key=True, fix=fix)


class DuplicateFsdpKey(AccelerateRule):
    """One `fsdp_config` setting written twice, with and without the `fsdp_` prefix.

    ## What it does
    Reports `sharding_strategy` next to `fsdp_sharding_strategy` (and every such pair) in
    `fsdp_config`.

    ## Why is this bad
    The launcher adds the `fsdp_` prefix to an unprefixed key and copies the keys in the
    file's order, so the later of the two silently wins.

    ## Example
    ```yaml
    fsdp_config:
      fsdp_offload_params: true
      offload_params: false
    ```

    ## Use instead
    ```yaml
    fsdp_config:
      fsdp_offload_params: true
    ```
    """

    code = "AC005"
    name = "duplicate-fsdp-key"
    severity = "warning"

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = _data(document)
        block = data.get("fsdp_config") if data is not None else None
        if not isinstance(block, dict):
            return
        seen: dict[str, str] = {}
        for key, value in block.items():
            if not isinstance(key, str):
                continue
            name = fsdp_name(key)
            if name in seen:
                first = seen[name]
                yield self.finding(document, f"/fsdp_config/{key}", f"`{key}` and `{first}` are the same setting "
                                   f"({name}): Accelerate uses the later one, {value!r}, and ignores `{first}`",
                                   key=True, related=[self.related(document, f"/fsdp_config/{first}",
                                                                   "the setting it overrides", key=True)])
            seen[name] = key


class InvalidValue(AccelerateRule):
    """A value Accelerate refuses when it loads the file or builds its FSDP plugin.

    ## What it does
    Reports a missing or unknown `distributed_type`, `gpu_ids` that YAML reads as a number
    (`gpu_ids: 0`, `gpu_ids: 1:2`, the sexagesimal 62), an unknown `compute_environment` or
    `mixed_precision`, `num_processes: -1` (or none: an error where the launch scripts that run
    the file leave `--num_processes` to it, an info where no launch is found), a non-bool
    `fsdp_reshard_after_forward` under `fsdp_version: 2`, `LOCAL_STATE_DICT` under FSDP2, an unknown
    `fsdp_auto_wrap_policy`, `fsdp_state_dict_type` or FSDP1 `fsdp_sharding_strategy`, an
    `fsdp_version` other than 1 or 2, and the FSDP2-only `fsdp_activation_checkpointing_offload`
    under version 1 (or without `fsdp_activation_checkpointing`).

    ## Why is this bad
    Each of these is an exception in `accelerate launch` or in every training process before the
    first step.

    ## Example
    ```yaml
    distributed_type: FSDP
    fsdp_config:
      fsdp_version: 2
      fsdp_reshard_after_forward: FULL_SHARD
    ```

    ## Use instead
    ```yaml
    distributed_type: FSDP
    fsdp_config:
      fsdp_version: 2
      fsdp_reshard_after_forward: true
    ```
    """

    code = "AC006"
    name = "invalid-accelerate-value"
    severity = "error"

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = _data(document)
        if data is None:
            return
        sagemaker = _sagemaker(data)
        environment = data.get("compute_environment", "LOCAL_MACHINE")
        if environment not in COMPUTE_ENVIRONMENTS:
            yield self.finding(document, "/compute_environment", f"compute_environment {environment!r} is not one "
                               f"of {', '.join(COMPUTE_ENVIRONMENTS)}: Accelerate's loader raises ValueError")
        ids = data.get("gpu_ids")
        if not sagemaker and isinstance(ids, (bool, int, float)):
            yield from self._gpu_ids(document, context, ids)
        if "distributed_type" not in data:
            yield self.finding(document, None, "no distributed_type: Accelerate's loader raises ValueError (\"A "
                               "`distributed_type` must be specified in the config file.\")", position=(1, 1))
            return
        kind = data.get("distributed_type")
        allowed = SAGEMAKER_TYPES if sagemaker else DISTRIBUTED_TYPES
        # an unquoted NO (False): the loader skips the enum check, and no mode is chosen (as NO)
        if kind is not False and kind not in allowed:
            yield self.finding(document, "/distributed_type", f"distributed_type {kind!r} is not one of "
                               f"{', '.join(allowed)}: Accelerate's loader raises ValueError",
                               fix=clear_match(str(kind), allowed))
            return
        precision = data.get("mixed_precision")
        if kind is not False and precision is not None and precision not in MIXED_PRECISIONS and \
                not isinstance(precision, bool):
            yield self.finding(document, "/mixed_precision", f"mixed_precision {precision!r} is not one of "
                               f"{', '.join(MIXED_PRECISIONS)}: accelerate launch raises ValueError")
        if sagemaker:
            return
        if kind is not False:
            yield from self._dynamo(document, data, kind)
        # the loader gives a file of distributed_type "NO" without num_processes 1 (not an unquoted no,
        # which is False there); any other -1 makes _validate_launch_command raise after it merges the
        # file into the command line, where --num_processes wins
        processes = data.get("num_processes", 1 if kind == "NO" else -1)
        if isinstance(processes, int) and not isinstance(processes, bool) and processes == -1:
            where = "/num_processes" if "num_processes" in data else None
            yield from _premised(self, document, context, where, "num_processes",
                                 f"num_processes is -1{'' if where else ' (its default: the file has none)'}: "
                                 "accelerate launch raises ValueError (\"You need to manually pass in "
                                 "`--num_processes` using this config yaml.\")", position=None if where else (1, 1))
        if kind == "FSDP":
            yield from self._fsdp(document, data)

    def _gpu_ids(self, document: Document, context: Context, ids: bool | int | float) -> Iterable[Finding]:
        """gpu_ids that the loader gives as a number or a boolean: `.split` fails on it. A YAML file
        (PyYAML reads a plain `0` or `no` so) is fixed by quoting the text as written; a JSON one
        is told to write a string."""
        import json

        from shardshift.yaml11 import plain_token

        what = "boolean" if isinstance(ids, bool) else "number"
        failure = (f"accelerate launch fails (AttributeError: '{type(ids).__name__}' object has no attribute "
                   "'split')")
        if document.path.endswith(".json"):
            yield from _premised(self, document, context, "/gpu_ids", "gpu_ids",
                                 f"gpu_ids is the JSON {what} {json.dumps(ids)}, not the text of GPU ids: {failure}; "
                                 "write a string such as \"0,1\" or \"all\"")
            return
        written = plain_token(document.text, *document.position("/gpu_ids"))
        shown = written if written is not None else json.dumps(ids)
        plain = written is not None and written[0] not in "!&*"  # not a tag, an anchor or an alias
        yield from _premised(self, document, context, "/gpu_ids", "gpu_ids",
                             f"gpu_ids: {shown} is the {what} {ids!r} to Accelerate's YAML loader (YAML 1.1), not the "
                             f"text of GPU ids: {failure}; quote it: '{shown}'",
                             fix=f"'{written}'" if plain else None, fix_kind="replace-value" if plain else None)

    def _dynamo(self, document: Document, data: dict, kind: str) -> Iterable[Finding]:
        """The dynamo backend the simple and multi-GPU launchers check (`DynamoBackend(value.upper())`;
        the DeepSpeed and TPU launchers do not). The loader moves a legacy top-level
        `dynamo_backend` into `dynamo_config`, replacing it."""
        if kind in ("DEEPSPEED", "XLA"):
            return
        if "dynamo_backend" in data:
            pointer, value = "/dynamo_backend", data["dynamo_backend"]
        else:
            block = data.get("dynamo_config")
            if not isinstance(block, dict):
                return
            key = next((k for k in ("dynamo_backend", "backend") if k in block), None)
            if key is None:
                return
            pointer, value = f"/dynamo_config/{key}", block[key]
        if isinstance(value, str) and value.upper() not in DYNAMO_BACKENDS:
            yield self.finding(document, pointer, f"dynamo_backend {value!r} is not one of "
                               f"{', '.join(DYNAMO_BACKENDS)}: accelerate launch raises ValueError (\"Unknown dynamo "
                               "backend\")", fix=clear_match(value.upper(), DYNAMO_BACKENDS))

    def _fsdp(self, document: Document, data: dict) -> Iterable[Finding]:
        settings = fsdp_settings(data)
        version = fsdp_version(data)
        if version not in (1, 2):
            pointer, value = settings.get("fsdp_version", ("/fsdp_config", None))
            yield self.finding(document, pointer, f"fsdp_version {value!r} is neither 1 nor 2")
            return
        if version == 2 and "fsdp_reshard_after_forward" in settings:
            pointer, value = settings["fsdp_reshard_after_forward"]
            if truthy(value) is None:
                fix = str(SHARDING_STRATEGIES.index(str(value).upper()) in (0, 3)).lower() \
                    if str(value).upper() in SHARDING_STRATEGIES else None
                yield self.finding(document, pointer, f"under fsdp_version 2 fsdp_reshard_after_forward is a bool: "
                                   f"{value!r} makes every training process raise ValueError (\"invalid truth "
                                   f"value {str(value).lower()}\")", fix=fix)
        if "fsdp_state_dict_type" in settings:
            pointer, value = settings["fsdp_state_dict_type"]
            if str(value).upper() not in STATE_DICT_TYPES:
                yield self.finding(document, pointer, f"fsdp_state_dict_type {value!r} is not one of "
                                   f"{', '.join(STATE_DICT_TYPES)}: the FSDP plugin raises")
            elif version == 2 and str(value).upper() == "LOCAL_STATE_DICT":
                yield self.finding(document, pointer, "FSDP2 does not support LOCAL_STATE_DICT: the FSDP plugin "
                                   "raises ValueError; use SHARDED_STATE_DICT", fix="SHARDED_STATE_DICT")
        if "fsdp_auto_wrap_policy" in settings:
            pointer, value = settings["fsdp_auto_wrap_policy"]
            if value is not None and str(value).upper() not in AUTO_WRAP_POLICIES:
                yield self.finding(document, pointer, f"fsdp_auto_wrap_policy {value!r} is not one of "
                                   f"{', '.join(AUTO_WRAP_POLICIES)}: the FSDP plugin raises ValueError")
        if truthy(settings.get("fsdp_activation_checkpointing_offload", (None, False))[1]):
            pointer = settings["fsdp_activation_checkpointing_offload"][0]
            if not truthy(settings.get("fsdp_activation_checkpointing", (None, False))[1]):
                yield self.finding(document, pointer, "fsdp_activation_checkpointing_offload needs "
                                   "fsdp_activation_checkpointing: true: the FSDP plugin raises ValueError "
                                   "(\"`activation_checkpointing_offload=True` requires `activation_checkpointing=True`.\")")
            elif version != 2:
                yield self.finding(document, pointer, "fsdp_activation_checkpointing_offload is an FSDP2 setting: "
                                   "under fsdp_version 1 the FSDP plugin raises ValueError (\"`activation_checkpointing_"
                                   "offload=True` requires `fsdp_version=2`.\")")
        if version == 1 and "fsdp_sharding_strategy" in settings:
            pointer, value = settings["fsdp_sharding_strategy"]
            text = str(value)
            if text.upper() not in SHARDING_STRATEGIES and not (text.isdigit() and 1 <= int(text) <= 5):
                yield self.finding(document, pointer, f"fsdp_sharding_strategy {value!r} is not one of "
                                   f"{', '.join(SHARDING_STRATEGIES)} (or 1-5): the FSDP plugin raises")


class LegacyTopLevelKey(AccelerateRule):
    """A legacy top-level key Accelerate still converts: `fp16` or `dynamo_backend`.

    ## What it does
    Reports `fp16: true` (Accelerate turns it into `mixed_precision: fp16` unless
    `mixed_precision` is set, then deletes it) and `dynamo_backend` (turned into
    `dynamo_config: {dynamo_backend: ...}`).

    ## Why is this bad
    The conversion hides what the file means, and `fp16` is silently dropped when
    `mixed_precision` is given too.

    ## Example
    ```yaml
    fp16: true
    ```

    ## Use instead
    ```yaml
    mixed_precision: fp16
    ```
    """

    code = "AC007"
    name = "legacy-top-level-key"
    severity = "info"

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = _data(document)
        if data is None:
            return
        if "fp16" in data:
            note = ("mixed_precision is set, so Accelerate drops it" if data.get("mixed_precision") is not None
                    else "Accelerate turns it into mixed_precision: fp16" if data["fp16"] else
                    "Accelerate drops it")
            yield self.finding(document, "/fp16", f"legacy key fp16: {note}; write mixed_precision instead",
                               key=True)
        if "dynamo_backend" in data:
            yield self.finding(document, "/dynamo_backend", "legacy key dynamo_backend: Accelerate moves it into "
                               "dynamo_config (dynamo_backend); write it there", key=True)


class UnquotedNo(AccelerateRule):
    """`mixed_precision: no` unquoted: a YAML boolean, and `accelerate launch` fails on it.

    ## What it does
    Reports an unquoted `no`, `yes`, `on` or `off` as the value of `mixed_precision`.

    ## Why is this bad
    Accelerate loads the file with PyYAML (YAML 1.1), which reads these words as booleans:
    `mixed_precision: no` is `False`, not `'no'`. The loader accepts it, then `accelerate launch`
    fails with `AttributeError: 'bool' object has no attribute 'lower'`. `accelerate config`
    writes the value quoted.

    ## Example
    ```yaml
    mixed_precision: no
    ```

    ## Use instead
    ```yaml
    mixed_precision: 'no'
    ```
    """

    code = "AC008"
    name = "unquoted-yaml-boolean"
    severity = "error"

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = _data(document)
        if data is None or not isinstance(data.get("mixed_precision"), bool):
            return
        line, column = document.position("/mixed_precision")
        written = document.text.splitlines()[line - 1][column - 1:].split("#")[0].strip()
        fix = "'no'" if written.lower() in ("no", "off", "false") else None
        yield self.finding(document, "/mixed_precision", f"mixed_precision: {written} unquoted is the boolean "
                           f"{data['mixed_precision']} to Accelerate's YAML loader (YAML 1.1), not a precision: "
                           "accelerate launch fails (AttributeError: 'bool' object has no attribute 'lower'); "
                           "quote it", fix=fix)


# fsdp_config booleans the FSDP plugin reads with str_to_bool, by FSDP version (FSDP2 ignores the rest)
FSDP_BOOLEANS = {"fsdp_offload_params": (1, 2), "fsdp_cpu_ram_efficient_loading": (1, 2),
                 "fsdp_activation_checkpointing": (1, 2), "fsdp_sync_module_states": (1,),
                 "fsdp_forward_prefetch": (1,), "fsdp_use_orig_params": (1,)}
BACKWARD_PREFETCH = ("BACKWARD_PRE", "BACKWARD_POST", "NO_PREFETCH")
# the modes whose launches the oracle checked for the processes per machine (multi_gpu_launcher, and
# deepspeed_launcher on one machine) and the port
PER_MACHINE_MODES = ("MULTI_GPU", "FSDP", "DEEPSPEED")


def _kind_of(value: Any) -> str:
    return "null" if value is None else "a boolean" if isinstance(value, bool) else \
        "a string" if isinstance(value, str) else "an integer" if isinstance(value, int) else \
        f"a {type(value).__name__}"


# the distributed types `accelerate launch` sends to its multi-GPU launcher (torchrun)
MULTI_DEVICE = ("MULTI_GPU", "MULTI_NPU", "MULTI_MLU", "MULTI_SDAA", "MULTI_MUSA", "MULTI_XPU", "MULTI_HPU",
                "MULTI_NEURON")
# ... and the ones that export PARALLELISM_CONFIG_* to the training processes (multi-GPU and DeepSpeed launchers)
PARALLELISM_LAUNCHERS = MULTI_DEVICE + ("FSDP", "DEEPSPEED", "MEGATRON_LM")
# the ones `accelerate launch` starts with its simple launcher (one process per machine, itself)
SIMPLE_LAUNCHER = ("NO", "MULTI_CPU")

SIZES = ("dp_replicate_size", "dp_shard_size", "tp_size", "cp_size", "sp_size")


def _int(value: Any) -> int | None:
    """The int Accelerate reads back from the environment variable the launcher exports (`str(value)`)."""
    if isinstance(value, bool):
        return None
    try:
        return int(str(value))
    except ValueError:
        return None


# `accelerate launch` flags that choose a launcher other than the file's mode
MODE_FLAGS = ("multi_gpu", "use_fsdp", "use_deepspeed", "use_megatron_lm", "tpu")


def launch_premise(document: Document, context: Context, flag: str) -> tuple[str, object]:
    """Whether the `accelerate launch` lines that run this file leave `--flag` to it: a flag given on
    the command line wins over the file's value (`_validate_launch_command` copies a file value only
    where the flag is not given). ("given", None) when a launch of the checked setups gives it,
    ("left", Related) when the launches found all leave it to the file, ("unknown", UnknownContext)
    when no launch in the checked tree runs the file."""
    from shardshift.context import UnknownContext
    from shardshift.setup import launches_of

    launches = [(first, first.data.launch) for first in launches_of(document, context.setups)
                if getattr(getattr(first.data, "launch", None), "launcher", None) == "accelerate launch"]
    if any(flag in (launch.options or {}) for _, launch in launches):
        return "given", None
    if launches:
        first, launch = launches[0]
        return "left", Related(first.path, launch.line, launch.column, None,
                               f"accelerate launch runs this file without --{flag}")
    return "unknown", UnknownContext(
        "consumer", f"no accelerate launch in the checked tree runs {document.path}, so whether its command line "
        f"gives --{flag} (which wins over the file's value) is not known",
        "check the config together with the launch script that runs it")


def _premised(rule: Rule, document: Document, context: Context, pointer: str, flag: str, message: str,
              **kwargs) -> Iterable[Finding]:
    """The finding, as the launches that run the file decide (launch_premise): none where the command
    line gives the flag, an info where no launch is found."""
    state, extra = launch_premise(document, context, flag)
    if state == "given":
        return
    if state == "left":
        kwargs["related"] = [*kwargs.get("related", []), extra]
    else:
        kwargs["unknown_context"] = extra
    yield rule.finding(document, pointer, message, **kwargs)


class ValueOfWrongType(AccelerateRule):
    """A value of a type the launcher or the FSDP plugin cannot compute with: the run fails at start.

    ## What it does
    Reports, in an Accelerate config file:
    - `num_machines` that is a string or null (every mode) or a float, and `num_processes` null
      or a float (under `MULTI_GPU`, `FSDP` and `DEEPSPEED`) or a string (under `NO` and
      `MULTI_CPU`, which compare it with a number before any conversion);
    - `main_process_port` that is not an integer from 0 to 65535 (under `MULTI_GPU`, `FSDP` and
      `DEEPSPEED`, whose launchers check whether the port is in use);
    - with `num_machines` above 1 under `MULTI_GPU`, `FSDP` and `DEEPSPEED`: a string
      `num_processes` (divided by `num_machines` first) and a `machine_rank` that int() cannot
      read (null, a word);
    - under `NO` and `MULTI_CPU` with more than one process or machine, a `main_process_ip` that
      is not a string (the simple launcher sets it as MASTER_ADDR);
    - under `FSDP` with `SIZE_BASED_WRAP`, an `fsdp_min_num_params` that int() cannot read;
    - under `NO` and `MULTI_CPU` (the simple launcher), a `use_cpu` that Accelerate's
      `str_to_bool` cannot read (null, `maybe`, `2`), unless the command line gives `--cpu` or
      a mode flag;
    - a `parallelism_config` size that is not a whole number (null, a float, a word): the
      launcher compares `cp_size` and `sp_size` with 1 (a string or null fails there, TypeError),
      and each training process reads every size back with int() (ValueError);
    - under `FSDP`, an `fsdp_config` boolean that Accelerate's `str_to_bool` cannot read (null,
      `bogus`, `2`): `fsdp_offload_params`, `fsdp_cpu_ram_efficient_loading`,
      `fsdp_activation_checkpointing`, and under FSDP1 also `fsdp_sync_module_states`,
      `fsdp_forward_prefetch`, `fsdp_use_orig_params`;
    - under `DEEPSPEED`, a float `deepspeed_config.zero_stage` and a `zero3_init_flag` that
      `str_to_bool` cannot read;
    - under `FSDP`, an `fsdp_backward_prefetch` that is not BACKWARD_PRE, BACKWARD_POST or
      NO_PREFETCH (an unquoted `no` is the boolean false);
    - under `DEEPSPEED`, a `deepspeed_config_file` that names no file and reads as JSON that is
      no object (`5`, `[1]`): Accelerate takes it for inline JSON and looks keys up in it;
    - with `mixed_precision: fp8`, an `fp8_config.override_linear_precision` that is not a list
      of three (the launcher exports items 0, 1 and 2).

    These were found by mutating real configs and running Accelerate on each
    (bench/mutation_accelerate.py): no `raise` in Accelerate's code names them.

    A flag on the `accelerate launch` command line wins over the file's value, so the verdict rests
    on the launches that run the file: an error where the launch scripts of the checked tree that
    run it leave the value to it, nothing where one gives the flag, an info where none is found
    (a null `num_machines` is often left to the command line on purpose).

    ## Why is this bad
    `accelerate launch` compares and divides these values (`num_machines > 1`,
    `int(str(num_processes // num_machines))`, a socket check of the port) and exports the FSDP
    settings as environment variables that the plugin reads back with `str_to_bool` or as an enum
    name. A value of another type fails there, with a TypeError, ValueError, OverflowError or
    KeyError that does not name the key: at launch, or in every training process when the FSDP
    plugin is built.

    ## Example
    ```yaml
    distributed_type: FSDP
    num_machines: "1"
    fsdp_config:
      fsdp_offload_params: null
    ```

    ## Use instead
    ```yaml
    distributed_type: FSDP
    num_machines: 1
    fsdp_config:
      fsdp_offload_params: false
    ```
    """

    code = "AC012"
    name = "value-of-wrong-type"
    severity = "error"

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = _data(document)
        if data is None or _sagemaker(data):
            return
        kind = data.get("distributed_type")
        machines = data.get("num_machines", 1)
        # null leaves the value to the command line: an error only where the launches found give none
        if "num_machines" in data and (machines is None or isinstance(machines, str)):
            yield from _premised(self, document, context, "/num_machines", "num_machines",
                                 f"num_machines is {_kind_of(machines)}, not an integer: accelerate launch fails with "
                                 "TypeError ('>' not supported between instances of "
                                 f"'{type(machines).__name__}' and 'int'); write the number unquoted")
        if kind == "DEEPSPEED":
            yield from self._deepspeed(document, data, context)
        processes = data.get("num_processes")
        if kind in (False, "NO", "MULTI_CPU") and isinstance(processes, str):
            # the other modes convert it on the way to torchrun; these compare it with a number first
            yield from _premised(self, document, context, "/num_processes", "num_processes",
                                 f"num_processes is a string ({processes!r}), not an integer: accelerate launch fails "
                                 "with TypeError ('>' not supported between instances of 'str' and 'int') when it "
                                 "chooses the launcher; write the number unquoted")
        use_cpu = data.get("use_cpu")
        if kind in (False, "NO", "MULTI_CPU") and "use_cpu" in data and truthy(use_cpu) is None and \
                not any(launch_premise(document, context, flag)[0] == "given" for flag in MODE_FLAGS):
            # the simple launcher exports str(use_cpu) as ACCELERATE_USE_CPU and reads it back with str_to_bool
            yield from _premised(self, document, context, "/use_cpu", "cpu",
                                 f"use_cpu is {_kind_of(use_cpu)} ({use_cpu!r}), which Accelerate's str_to_bool "
                                 f"cannot read: with distributed_type {'NO' if kind is False else kind} accelerate "
                                 "launch starts its simple launcher, which exports it as ACCELERATE_USE_CPU and "
                                 f"fails with ValueError (invalid truth value {str(use_cpu).lower()}); write true "
                                 "or false")
        yield from self._parallelism_sizes(document, data, context)
        yield from self._fp8_precision(document, data, context)
        address = data.get("main_process_ip")
        spread = any(isinstance(n, (int, float)) and not isinstance(n, bool) and n > 1 for n in (machines, processes))
        if kind in (False, "NO", "MULTI_CPU") and address is not None and not isinstance(address, str) and spread:
            # the simple launcher puts it in the environment of the processes as it is
            yield from _premised(self, document, context, "/main_process_ip", "main_process_ip",
                                 f"main_process_ip is {_kind_of(address)} ({address!r}), not a string: accelerate "
                                 "launch's simple launcher sets it as MASTER_ADDR and fails with TypeError (str "
                                 f"expected, not {type(address).__name__}); quote the address"
                                 + (" (an unquoted no is the boolean false)" if address is False else ""))
        if kind not in PER_MACHINE_MODES:
            return
        if isinstance(machines, float):
            yield from _premised(self, document, context, "/num_machines", "num_machines",
                                 f"num_machines is the float {machines!r}: accelerate launch fails with ValueError "
                                 "(invalid literal for int(): it divides num_processes by it and reads the result "
                                 "back as an integer); write a whole number without a point")
        several = isinstance(machines, (int, float)) and not isinstance(machines, bool) and machines > 1
        if several and isinstance(processes, str):
            # on several machines the launcher divides it by num_machines before any conversion
            yield from _premised(self, document, context, "/num_processes", "num_processes",
                                 f"num_processes is a string ({processes!r}), not an integer: with num_machines "
                                 f"{machines} accelerate launch fails with TypeError (unsupported operand type(s) for "
                                 "//: 'str' and 'int') when it computes the processes per machine; write the number "
                                 "unquoted")
        rank = data.get("machine_rank")
        if several and "machine_rank" in data and (rank is None or isinstance(rank, bool) or (
                isinstance(rank, str) and not rank.strip().lstrip("+-").isdigit())):
            yield from _premised(self, document, context, "/machine_rank", "machine_rank",
                                 f"machine_rank is {_kind_of(rank)} ({rank!r}): with num_machines {machines} "
                                 "accelerate launch reads it with int() (node_rank) and fails with "
                                 f"{'TypeError' if rank is None else 'ValueError'}; write this machine's rank"
                                 + (f" (0 to {machines - 1})" if _is_int(machines) else ""))
        if "num_processes" in data and (processes is None or isinstance(processes, float)):
            shown = "null" if processes is None else f"a float ({processes!r})"
            yield from _premised(self, document, context, "/num_processes", "num_processes",
                                 f"num_processes is {shown}: accelerate launch fails with ValueError (invalid literal "
                                 "for int()) when it computes the processes per machine; write a whole number without "
                                 "a point")
        port = data.get("main_process_port")
        if kind in PER_MACHINE_MODES and "main_process_port" in data and port is not None:
            if isinstance(port, (str, float)) and not isinstance(port, bool):
                yield from _premised(self, document, context, "/main_process_port", "main_process_port",
                                     f"main_process_port is {_kind_of(port)} ({port!r}), not an integer: accelerate "
                                     "launch fails with TypeError when it checks whether the port is in use; write "
                                     "the port as a whole number")
            elif _is_int(port) and not 0 <= port <= 65535:
                yield from _premised(self, document, context, "/main_process_port", "main_process_port",
                                     f"main_process_port {port} is not a port (0-65535): accelerate launch fails with "
                                     "OverflowError when it checks whether the port is in use")
        if kind != "FSDP":
            return
        settings = fsdp_settings(data)
        version = fsdp_version(data)
        for name, versions in FSDP_BOOLEANS.items():
            if name not in settings or version not in versions:
                continue
            pointer, value = settings[name]
            if truthy(value) is None:
                yield from _premised(self, document, context, pointer, name,
                                     f"{name} is {_kind_of(value)} ({value!r}), which Accelerate's str_to_bool cannot "
                                     "read: building the FSDP plugin fails in every training process with ValueError "
                                     f"(invalid truth value {str(value).lower()}); write true or false")
        policy = settings.get("fsdp_auto_wrap_policy", (None, None))[1]
        if isinstance(policy, str) and policy.upper() == "SIZE_BASED_WRAP" and "fsdp_min_num_params" in settings:
            pointer, value = settings["fsdp_min_num_params"]
            if _int(value) is None:
                yield from _premised(self, document, context, pointer, "fsdp_min_num_params",
                                     f"fsdp_min_num_params is {_kind_of(value)} ({value!r}): with SIZE_BASED_WRAP "
                                     "building the FSDP plugin fails in every training process with ValueError "
                                     f"(invalid literal for int() with base 10: '{value}'); write a whole number "
                                     "without a point")
        if "fsdp_backward_prefetch" in settings:
            pointer, value = settings["fsdp_backward_prefetch"]
            if value is not None and not (isinstance(value, str) and value.upper() in BACKWARD_PREFETCH):
                error = "ValueError" if _is_int(value) else f"KeyError: '{str(value).upper()}'"
                yield from _premised(self, document, context, pointer, "fsdp_backward_prefetch",
                                     f"fsdp_backward_prefetch is {_kind_of(value)} ({value!r}), not one of "
                                     f"{', '.join(BACKWARD_PREFETCH)}: building the FSDP plugin fails in every "
                                     f"training process ({error})" + (" (an unquoted no is the boolean false)"
                                                                       if value is False else ""),
                                     fix=clear_match(str(value).upper(), BACKWARD_PREFETCH) if isinstance(value, str)
                                     else None)

    def _parallelism_sizes(self, document: Document, data: dict, context: Context) -> Iterable[Finding]:
        """`parallelism_config` sizes the launcher compares (cp, sp) or each training process reads back
        with int() from the PARALLELISM_CONFIG_* variables it exports (utils/launch.py
        prepare_extend_env_parallelism_config; ParallelismConfig.__post_init__)."""
        block = data.get("parallelism_config")
        if data.get("distributed_type") not in PARALLELISM_LAUNCHERS or not isinstance(block, dict):
            return
        for name in SIZES:
            key = f"parallelism_config_{name}"
            if key not in block:
                continue
            given = block[key]
            if name in ("cp_size", "sp_size") and (given is None or isinstance(given, str)):
                yield from _premised(self, document, context, f"/parallelism_config/{key}", key,
                                     f"{key} is {_kind_of(given)} ({given!r}), not a number: accelerate launch fails "
                                     f"with TypeError ('>' not supported between instances of '{type(given).__name__}' "
                                     "and 'int') when it exports the parallelism config; write the size as a whole "
                                     "number, unquoted")
            elif _int(given) is None:
                yield from _premised(self, document, context, f"/parallelism_config/{key}", key,
                                     f"{key} is {_kind_of(given)} ({given!r}): every training process fails when it "
                                     f"creates the Accelerator, with ValueError (invalid literal for int() with base "
                                     f"10: '{given}', read back from PARALLELISM_CONFIG_{name.upper()}); write a whole "
                                     "number without a point")

    def _deepspeed(self, document: Document, data: dict, context: Context) -> Iterable[Finding]:
        """`deepspeed_config` values the DeepSpeed plugin reads with int() or str_to_bool."""
        block = data.get("deepspeed_config")
        if not isinstance(block, dict):
            return
        stage = block.get("zero_stage")
        if isinstance(stage, float):
            yield from _premised(self, document, context, "/deepspeed_config/zero_stage", "zero_stage",
                                 f"zero_stage is a float ({stage!r}): building the DeepSpeed plugin fails in every "
                                 "training process with ValueError (invalid literal for int()); write 0, 1, 2 or 3")
        flag = block.get("zero3_init_flag")
        if "zero3_init_flag" in block and flag is not None and truthy(flag) is None:
            yield from _premised(self, document, context, "/deepspeed_config/zero3_init_flag", "zero3_init_flag",
                                 f"zero3_init_flag is {_kind_of(flag)} ({flag!r}), which Accelerate's str_to_bool "
                                 "cannot read: building the DeepSpeed plugin fails in every training process with "
                                 f"ValueError (invalid truth value {str(flag).lower()}); write true or false")
        yield from self._config_file(document, block, context)

    def _config_file(self, document: Document, block: dict, context: Context) -> Iterable[Finding]:
        """A `deepspeed_config_file` whose text (str() of the YAML value, as the launcher exports it) Accelerate's
        HfDeepSpeedConfig reads as JSON that is no object (a number, a list): it then looks keys up in it."""
        import json
        import os

        if "deepspeed_config_file" not in block:
            return
        value = block["deepspeed_config_file"]
        if value is None or isinstance(value, bool) or isinstance(value, dict):
            return
        text = str(value)
        if text.strip().lower() == "none" or os.path.exists(os.path.join(os.path.dirname(document.path), text)):
            return
        try:
            read = json.loads(text)
        except (ValueError, RecursionError):
            return
        if isinstance(read, dict):
            return
        yield from _premised(self, document, context, "/deepspeed_config/deepspeed_config_file", "deepspeed_config_file",
                             f"deepspeed_config_file is {_kind_of(value)} ({value!r}), not a path: Accelerate's "
                             f"DeepSpeed plugin reads {text!r} as inline JSON, gets no object, and fails in every "
                             f"training process with AttributeError ('{type(read).__name__}' object has no attribute "
                             "'get'); name the ds_config file")

    def _fp8_precision(self, document: Document, data: dict, context: Context) -> Iterable[Finding]:
        """fp8_config.override_linear_precision, which the launcher indexes [0], [1] and [2] under fp8."""
        block = data.get("fp8_config")
        if not isinstance(block, dict) or "override_linear_precision" not in block:
            return
        mixed = data.get("mixed_precision")
        value = block["override_linear_precision"]
        if not (isinstance(mixed, str) and mixed.lower() == "fp8") or value is None:
            return
        if isinstance(value, (list, tuple, str)) and len(value) >= 3:
            return
        error = "IndexError (list index out of range)" if isinstance(value, (list, tuple, str)) else \
            f"TypeError ('{type(value).__name__}' object is not subscriptable)"
        yield from _premised(self, document, context, "/fp8_config/override_linear_precision",
                             "fp8_override_linear_precision",
                             f"override_linear_precision is {_kind_of(value)} ({value!r}), not three booleans: with "
                             f"mixed_precision fp8 accelerate launch exports its items [0], [1] and [2] and fails with "
                             f"{error}; write [false, false, false] (fprop, dgrad, wgrad)")


class Yaml11Number(AccelerateRule):
    """A number PyYAML (YAML 1.1) reads as another number: `010` is 8, `1:30` is 90.

    ## What it does
    Reports, anywhere in an Accelerate config file, a plain number that YAML 1.1 reads in another
    base than it looks: a leading zero makes it octal (`num_processes: 010`, `machine_rank: 01`
    stays 1 and is left alone), colons make it base 60 (`fsdp_min_num_params: 1:00`). `gpu_ids`
    is AC006's.

    ## Why is this bad
    `accelerate launch` loads the file with PyYAML's `safe_load`, which follows YAML 1.1:
    `num_processes: 010` starts 8 processes. YAML 1.2 readers (and most editors' highlighting)
    read 10. The value is valid, so nothing says which number the run used.

    ## Example
    ```yaml
    distributed_type: MULTI_GPU
    num_processes: 010
    ```

    ## Use instead
    ```yaml
    distributed_type: MULTI_GPU
    num_processes: 10
    ```
    """

    code = "AC013"
    name = "yaml11-number"
    severity = "warning"

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = _data(document)
        if data is None or not document.path.lower().endswith((".yaml", ".yml")):
            return  # a JSON config is read by json.load: 010 is no number there (the reader says so)
        from shardshift.yaml11 import surprising_number

        for node in document.root.walk():
            if node.kind != "number" or node.pointer == "/gpu_ids":
                continue
            found = surprising_number(document.text, node.line, node.column, node.value)
            if found is not None:
                token, surprise = found
                yield self.finding(document, node.pointer, f"{node.pointer.lstrip('/')}: {token} is {surprise} to "
                                   "PyYAML (YAML 1.1), which accelerate launch loads the file with: it uses "
                                   f"{node.value}, not the number it looks like; write {node.value} (or the number "
                                   "meant, without a leading zero or colon)")


class ProcessesNotMultipleOfMachines(AccelerateRule):
    """`num_processes` is not a multiple of `num_machines`: some processes never start.

    ## What it does
    Reports a multi-machine config whose `num_processes` (the total over all machines) does not
    divide evenly by `num_machines`.

    ## Why is this bad
    `accelerate launch` starts `num_processes // num_machines` processes on each machine (a
    silent floor), so the job runs with fewer processes than the file says.

    ## Example
    ```yaml
    num_machines: 2
    num_processes: 9
    ```

    ## Use instead
    ```yaml
    num_machines: 2
    num_processes: 8
    ```
    """

    code = "AC101"
    name = "processes-not-multiple-of-machines"
    severity = "warning"

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = _data(document)
        if data is None or _sagemaker(data) or data.get("distributed_type") == "NO":
            return
        machines, processes = data.get("num_machines", 1), data.get("num_processes")
        if not (_is_int(machines) and _is_int(processes)) or machines < 1 or processes < 1:
            return
        if processes % machines:
            each = processes // machines
            yield self.finding(document, "/num_processes", f"num_processes {processes} is not a multiple of "
                               f"num_machines {machines}: accelerate launch starts {each} per machine, "
                               f"{each * machines} in all", related=[self.related(document, "/num_machines",
                                                                                  "the number of machines")])


class TwoEngines(AccelerateRule):
    """Both DeepSpeed and FSDP configured: only `distributed_type` decides, the other block is ignored.

    ## What it does
    Reports a non-empty `fsdp_config` when `distributed_type` is `DEEPSPEED`, and a non-empty
    `deepspeed_config` when it is `FSDP`.

    ## Why is this bad
    `accelerate launch` chooses the mode from `distributed_type` alone; the other block's
    settings are never used, which is rarely what the file's author expects.

    ## Example
    ```yaml
    distributed_type: DEEPSPEED
    deepspeed_config:
      zero_stage: 3
    fsdp_config:
      fsdp_offload_params: true
    ```

    ## Use instead
    ```yaml
    distributed_type: DEEPSPEED
    deepspeed_config:
      zero_stage: 3
      offload_param_device: cpu
    ```
    """

    code = "AC102"
    name = "deepspeed-and-fsdp-both-configured"
    severity = "warning"

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = _data(document)
        if data is None:
            return
        kind = data.get("distributed_type")
        other = {"DEEPSPEED": "fsdp_config", "FSDP": "deepspeed_config"}.get(kind) if isinstance(kind, str) else None
        if other and isinstance(data.get(other), dict) and data[other]:
            yield self.finding(document, f"/{other}", f"distributed_type is {kind}: Accelerate ignores {other} "
                               "entirely", key=True, related=[self.related(document, "/distributed_type",
                                                                           "the mode Accelerate runs")])


# block -> the distributed_type that reads it (AC102 reports the DEEPSPEED / FSDP pair)
BLOCK_READ_BY = {"fsdp_config": "FSDP", "deepspeed_config": "DEEPSPEED", "megatron_lm_config": "MEGATRON_LM"}
MODE_FLAGS = "such as --multi_gpu, --use_fsdp or --use_deepspeed"


class DistributedTypeIgnoresSettings(AccelerateRule):
    """Settings the chosen `distributed_type` never reads: one process for `NO`, a block of another mode.

    ## What it does
    Reports `distributed_type: NO` (or an unquoted `no`, which YAML 1.1 reads as the boolean
    false) with `num_processes` above 1 or a non-empty `fsdp_config`, `deepspeed_config` or
    `megatron_lm_config`; and, for the other modes, a non-empty block that only another mode reads
    (`fsdp_config` under `MULTI_GPU`, say). The pairs DEEPSPEED + `fsdp_config` and FSDP +
    `deepspeed_config` are deepspeed-and-fsdp-both-configured's.

    `num_processes` above 1 alone is an info (a one-GPU file may keep a count it never used).

    ## Why is this bad
    `accelerate launch` picks its launcher from `distributed_type` alone, unless a mode flag is
    given on the command line. For `NO` (and for the boolean false, which the loader keeps as it
    is and no mode matches) it runs the script once with the simple launcher: one process,
    whatever `num_processes` says, with no FSDP, DeepSpeed or Megatron-LM. A block is exported
    to the training processes only under its own mode. Nothing says so: the run trains on one
    GPU, or without the sharding the block describes.

    ## Example
    ```yaml
    distributed_type: no
    num_processes: 4
    fsdp_config:
      fsdp_version: 2
    ```

    ## Use instead
    ```yaml
    distributed_type: FSDP
    num_processes: 4
    fsdp_config:
      fsdp_version: 2
    ```
    """

    code = "AC107"
    name = "settings-distributed-type-ignores"
    severity = "warning"

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = _data(document)
        if data is None or _sagemaker(data) or "distributed_type" not in data:
            return
        kind = data["distributed_type"]
        if kind is not False and not (isinstance(kind, str) and kind in DISTRIBUTED_TYPES):
            return  # an unknown type: AC006
        unquoted = kind is False
        shown = "no (unquoted: the boolean false to Accelerate's YAML loader, YAML 1.1)" if unquoted else kind
        mode = "NO" if unquoted else kind
        ignored = [block for block, reader in BLOCK_READ_BY.items()
                   if reader != mode and isinstance(data.get(block), dict) and data[block]
                   and not {mode, reader} == {"DEEPSPEED", "FSDP"}]
        related = [self.related(document, f"/{block}", f"{block}, never read", key=True) for block in ignored]
        if mode == "NO":
            processes = data.get("num_processes")
            many = _is_int(processes) and processes > 1
            if not many and not ignored:
                return
            what = [f"num_processes {processes}"] if many else []
            what += ignored
            if many:
                related.insert(0, self.related(document, "/num_processes", "processes that never start", key=True))
            yield self.finding(document, "/distributed_type",
                               f"distributed_type is {shown}: accelerate launch runs the script once with the "
                               f"simple launcher, one process without FSDP, DeepSpeed or Megatron-LM, and ignores "
                               f"{' and '.join(what)}, without a word (unless the command line gives a mode flag "
                               f"{MODE_FLAGS}); set distributed_type to the mode meant"
                               + (", quoted if it is 'NO'" if unquoted else ""), related=related,
                               # a count alone may be a leftover of a one-GPU file (the loader keeps it):
                               # unusual; a block of settings that never apply changes the run
                               severity=None if ignored else "info")
            return
        for block in ignored:
            yield self.finding(document, f"/{block}",
                               f"distributed_type is {kind}: accelerate launch exports {block} only under "
                               f"{BLOCK_READ_BY[block]}, so its settings are ignored without a word (unless the "
                               f"command line gives that mode's flag); remove the block, or set distributed_type: "
                               f"{BLOCK_READ_BY[block]}", key=True,
                               related=[self.related(document, "/distributed_type", "the mode Accelerate runs")])


class SyncModuleStatesOff(AccelerateRule):
    """`fsdp_sync_module_states: false` with CPU-RAM-efficient loading on: `accelerate launch` refuses it.

    ## What it does
    Reports `fsdp_sync_module_states` false while `fsdp_cpu_ram_efficient_loading` is true or
    absent (the launcher's default is true).

    ## Why is this bad
    `accelerate launch` raises `ValueError("When using --fsdp_cpu_ram_efficient_loading set
    --fsdp_sync_module_states to True")` whatever the FSDP version.

    ## Example
    ```yaml
    fsdp_config:
      fsdp_sync_module_states: false
    ```

    ## Use instead
    ```yaml
    fsdp_config:
      fsdp_sync_module_states: true
    ```
    """

    code = "AC103"
    name = "sync-module-states-off-with-efficient-loading"
    severity = "error"

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = _data(document)
        if data is None or data.get("distributed_type") != "FSDP":
            return
        settings = fsdp_settings(data)
        if "fsdp_sync_module_states" not in settings:
            return
        pointer, value = settings["fsdp_sync_module_states"]
        loading = settings.get("fsdp_cpu_ram_efficient_loading", (None, True))[1]
        if value or not loading:
            return
        why = "is on" if loading is not True or "fsdp_cpu_ram_efficient_loading" in settings else \
            "is on by default"
        yield self.finding(document, pointer, f"fsdp_sync_module_states is false while "
                           f"fsdp_cpu_ram_efficient_loading {why}: accelerate launch raises ValueError", fix="true")


def layer_class_names(value: Any) -> tuple[list[str], str | None] | None:
    """The class names Accelerate looks up for a `transformer_layer_cls_to_wrap` value, and the
    value that names the same classes the way Accelerate reads them (None when no safe rewrite),
    or None when the value is read as written. Accelerate (FullyShardedDataParallelPlugin.
    __post_init__) splits the text on "," without stripping; a YAML list reaches it as its
    Python text (`str(['A', 'B'])`, written by `accelerate launch` into FSDP_TRANSFORMER_CLS_TO_WRAP)."""
    if isinstance(value, list):
        names = [str(item).strip() for item in value]
        looked_up = str(value).split(",")
        fix = None
    elif isinstance(value, str):
        looked_up = value.split(",")
        names = [name.strip() for name in looked_up if name.strip()]
        fix = ",".join(names) if names and all(name.isidentifier() for name in names) else None
    else:
        return None
    if all(name == name.strip() and name for name in looked_up):
        return None
    return looked_up, fix


class LayerClassNamesSpaced(AccelerateRule):
    """`fsdp_transformer_layer_cls_to_wrap: A, B`: Accelerate looks up a class named " B".

    ## What it does
    Reports an `fsdp_transformer_layer_cls_to_wrap` under `fsdp_auto_wrap_policy:
    TRANSFORMER_BASED_WRAP` whose comma-separated names have spaces around them, an empty name
    (`A,,B`, a trailing comma), or that is written as a YAML list.

    ## Why is this bad
    The FSDP plugin (`FullyShardedDataParallelPlugin.__post_init__`, FSDP1 and FSDP2 alike)
    splits the value on `,` and does not strip the pieces: `A, B` names the classes `A` and ` B`.
    No module class is called ` B`, so `accelerator.prepare(model)` raises `ValueError: Could not
    find the transformer layer class  B in the model.` in every training process. `accelerate
    launch` hands a YAML list on as its Python text (`['A', 'B']`), which fails the same way.

    ## Example
    ```yaml
    fsdp_config:
      fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP
      fsdp_transformer_layer_cls_to_wrap: LlamaDecoderLayer, LlamaMLP
    ```

    ## Use instead
    ```yaml
    fsdp_config:
      fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP
      fsdp_transformer_layer_cls_to_wrap: LlamaDecoderLayer,LlamaMLP
    ```
    """

    code = "AC009"
    name = "layer-class-names-not-comma-separated"
    severity = "error"

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = _data(document)
        if data is None or data.get("distributed_type") != "FSDP":
            return
        settings = fsdp_settings(data)
        policy = settings.get("fsdp_auto_wrap_policy", (None, None))[1]
        if str(policy).upper() != "TRANSFORMER_BASED_WRAP" or "fsdp_transformer_layer_cls_to_wrap" not in settings:
            return
        pointer, value = settings["fsdp_transformer_layer_cls_to_wrap"]
        found = layer_class_names(value)
        if found is None:
            return
        looked_up, fix = found
        wrong = next(name for name in looked_up if not name.isidentifier())
        written = "a YAML list, which accelerate launch passes on as its Python text" if isinstance(value, list) \
            else f"{value!r}"
        wanted = ",".join(str(item).strip() for item in value) if isinstance(value, list) else fix
        yield self.finding(document, pointer, f"fsdp_transformer_layer_cls_to_wrap is {written}: the FSDP plugin "
                           f"splits it on ',' without stripping and looks up a class named {wrong!r}, so "
                           f"accelerator.prepare raises ValueError (\"Could not find the transformer layer class "
                           f"{wrong} in the model.\")" + (f"; write {wanted}" if wanted else ""),
                           fix=fix, fix_kind="replace-value" if fix else None)
