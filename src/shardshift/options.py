"""The options of one check, resolved against the configuration file, and its result made ready
to show: what the API's `check` and the command line share. Re-exported by `shardshift.api`, which
documents them; here so that `shardshift.check` (the module, callable as the API's check) needs
nothing that imports it back."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from shardshift.check import CheckResult
    from shardshift.rules.base import Context, Finding

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("info", "warning", "error")


class ShardshiftError(Exception):
    """A problem with what was asked rather than with the files: `usage` is true for a bad option
    or a path that does not exist (the command line exits 2), false for a file that cannot be
    used (exit 1). `in_configuration`: the problem is in the configuration file, not the call."""

    def __init__(self, message: str, *, usage: bool = False, in_configuration: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.usage = usage or in_configuration
        self.in_configuration = in_configuration


@dataclass(slots=True)
class CheckOptions:
    """The options of one check, resolved against the configuration file."""

    context: Context
    select: set[str] | None = None
    ignore: set[str] | None = None
    per_file_ignores: Any = None  # path -> codes switched off, or None
    fail_on: Literal["error", "warning"] = "error"
    min_severity: Severity | None = None  # None: every finding
    skip_unrecognised: bool = False  # files named explicitly that are no configuration: skipped, not reported
    env: dict = field(default_factory=dict)  # the job's environment for launch scripts (--env X=VALUE)
    docs_url: str | None = None  # `docs-url` of the configuration file (SARIF links there); None: the default


def _codes(value: str | Iterable[str] | None) -> set[str] | None:
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else value
    return {c.strip().upper() for c in items if c.strip()} or None


def _version(value: str | tuple[int, ...] | None) -> tuple[int, ...] | None:
    if value is None or isinstance(value, tuple):
        return value
    try:
        return tuple(int(p) for p in str(value).split("."))
    except ValueError:
        raise ShardshiftError(f"{value!r} is not a version like 0.19.8", usage=True) from None


def resolve_options(*, world_size: int | None = None, nodes: int | None = None, gpus_per_node: int | None = None,
                    deepspeed_version: str | tuple[int, ...] | None = None, hidden_size: int | None = None,
                    select: str | Iterable[str] | None = None, ignore: str | Iterable[str] | None = None,
                    fail_on: str | None = None, min_severity: str | None = None, config: str | None = None,
                    isolated: bool = False, gpu_memory: str | int | None = None,
                    model_params: str | int | None = None, model_config: str | None = None,
                    skip_unrecognised: bool = False, follow_outside: bool | None = None,
                    megatron_core_version: str | tuple[int, ...] | None = None,
                    accelerate_version: str | tuple[int, ...] | None = None,
                    transformers_version: str | tuple[int, ...] | None = None,
                    axolotl_version: str | tuple[int, ...] | None = None,
                    torchtitan_version: str | tuple[int, ...] | None = None,
                    torch_version: str | tuple[int, ...] | None = None,
                    env: Mapping[str, str] | Iterable[str] | None = None) -> CheckOptions:
    """Options given here win over the configuration file (`config`, else the one found from the
    current directory, none with `isolated`), option by option. A framework version given
    (`axolotl_version="0.12.2"`) wins over the pin found in a repository's dependency files.
    `env` ({"TP": "4"} or ["TP=4"]) is the environment launch scripts are read in: `$TP` and
    `${TP:-8}` give 4; it adds to (and wins over) the configuration file's `env`."""
    from shardshift import config as configuration
    from shardshift.rules.base import Context

    if (nodes is None) != (gpus_per_node is None):
        raise ShardshiftError("--nodes and --gpus-per-node go together", usage=True)
    for name, value in (("fail_on", fail_on), ("min_severity", min_severity)):
        allowed = ("error", "warning") if name == "fail_on" else SEVERITIES
        if value is not None and value not in allowed:
            raise ShardshiftError(f"{name} must be one of {', '.join(allowed)}, not {value!r}", usage=True)
    try:
        settings = configuration.load(config, isolated)
    except configuration.ConfigError as error:
        raise ShardshiftError(str(error), in_configuration=True) from None
    chosen_select = _codes(select) if select is not None else set(settings.select or ()) or None
    chosen_ignore = _codes(ignore) if ignore is not None else set(settings.ignore or ()) or None
    if chosen_select or chosen_ignore or settings.per_file_ignores:
        _check_codes(settings, select, ignore, chosen_select, chosen_ignore)
    world = world_size
    if nodes is not None:
        product = nodes * gpus_per_node
        if world is not None and world != product:
            raise ShardshiftError(f"--world-size {world} disagrees with --nodes × --gpus-per-node = {product}",
                                  usage=True)
        world = product
    if world is None:  # the caller wins; the file's world applies only when the caller says nothing
        world = settings.world_size or (settings.nodes * settings.gpus_per_node if settings.nodes else None)
    context = Context(world_size=world,
                      deepspeed_version=_version(deepspeed_version) or settings.deepspeed_version,
                      hidden_size=hidden_size or settings.hidden_size)
    given = {"deepspeed": deepspeed_version, "megatron-core": megatron_core_version,
             "accelerate": accelerate_version, "transformers": transformers_version,
             "axolotl": axolotl_version, "torchtitan": torchtitan_version, "torch": torch_version}
    context.release_overrides = _release_overrides(given, settings)
    context.follow_outside = bool(follow_outside if follow_outside is not None else settings.follow_outside)
    if nodes is not None or world_size is None:  # the node shape that goes with the world size
        context.gpus_per_node = gpus_per_node if nodes is not None else settings.gpus_per_node
    if model_params is None and model_config is None:  # the caller's model wins whole, as other options do
        model_params, model_config = settings.model_params, settings.model_config
    _model_and_memory(context, gpu_memory or settings.gpu_memory, model_params, model_config)
    return CheckOptions(context, chosen_select, chosen_ignore,
                        settings.ignored_for if settings.per_file_ignores else None,
                        fail_on or settings.fail_on or "error",  # type: ignore[arg-type]
                        min_severity or settings.min_severity,  # type: ignore[arg-type]
                        skip_unrecognised, {**settings.env, **environment(env)}, docs_url=settings.docs_url)


def environment(env: Mapping[str, str] | Iterable[str] | None) -> dict[str, str]:
    """{"X": "V"} or ["X=V", ...] as the environment of launch scripts; ShardshiftError when bad."""
    from shardshift.context.environment import parse

    if env is None:
        return {}
    try:
        return parse(env if isinstance(env, Mapping) else list(env))
    except ValueError as error:
        raise ShardshiftError(str(error), usage=True) from None


def _release_overrides(given: dict, settings) -> dict:
    """framework -> the Release given on the command line (or by the caller), else in the file."""
    from shardshift.context import Release

    out = {}
    for framework, value in given.items():
        option = f"{framework}-version"
        version, source = _version(value), f"--{option}"
        if version is None:
            version = getattr(settings, option.replace("-", "_"), None)
            source = f"[tool.shardshift] {option}" if (settings.path or "").endswith("pyproject.toml") \
                else f"{os.path.basename(settings.path or 'shardshift.toml')} {option}"
        if version is not None:
            out[framework] = Release(framework, tuple(version), source, ".".join(map(str, version)))
    return out


def _model_and_memory(context: Context, gpu_memory, model_params, model_config) -> None:
    from shardshift.planner.units import UnitError, parse_bytes, parse_count

    try:
        if gpu_memory is not None:
            context.gpu_memory = gpu_memory if isinstance(gpu_memory, int) else parse_bytes(gpu_memory)
        if model_params is not None:
            context.model_parameters = model_params if isinstance(model_params, int) else parse_count(model_params)
    except UnitError as error:
        raise ShardshiftError(str(error), usage=True) from None
    if model_params is not None and model_config is not None:
        raise ShardshiftError("give the model as a parameter count or a config.json, not both", usage=True)
    if model_config is not None:
        if not os.path.exists(model_config):
            raise ShardshiftError(f"no such model config: {model_config}", usage=True)
        import json

        from shardshift.files import MAX_BYTES, read_text

        # read here, so that a broken file is an error and not a PL201 that silently never runs
        text = read_text(model_config, errors="strict", bom=False)
        if text is None:
            raise ShardshiftError(f"{model_config}: cannot read the model config: not a regular UTF-8 file of at most "
                                  f"{MAX_BYTES:,} bytes", usage=True)
        try:
            shape = json.loads(text)
        except (ValueError, RecursionError) as error:
            raise ShardshiftError(f"{model_config}: cannot read the model config: {error}", usage=True) from None
        if not isinstance(shape, dict):
            raise ShardshiftError(f"{model_config}: a model config is a JSON object", usage=True)
        context.model_config = model_config


def _check_codes(settings, select, ignore, chosen_select, chosen_ignore) -> None:
    """Every code or prefix named anywhere selects some rule (this is the one place a check needs
    every rule module, so it happens only when codes are named)."""
    from shardshift import config as configuration
    from shardshift.rules import all_codes

    known = all_codes()
    where = settings.path or "the configuration"
    try:
        configuration.check_codes(settings.select, known, f"{where} select")
        configuration.check_codes(settings.ignore, known, f"{where} ignore")
        for pattern, codes in settings.per_file_ignores.items():
            configuration.check_codes(codes, known, f"{where} per-file-ignores {pattern!r}")
    except configuration.ConfigError as error:
        raise ShardshiftError(str(error), in_configuration=True) from None
    for given, chosen in ((select, chosen_select), (ignore, chosen_ignore)):
        for prefix in chosen if given is not None and chosen else ():
            if not any(code.startswith(prefix) for code in known):
                raise ShardshiftError(f"unknown rule code {prefix!r} (see `shardshift rules`)", usage=True)


def present(result: CheckResult, min_severity: Severity | None) -> CheckResult:
    """Make `result` ready to show: every location in the display form of `display_path`, and the
    findings below `min_severity` moved to `result.hidden` (counted, not shown)."""
    shown = _PathCache()
    result.findings = [shown.finding(f) for f in result.findings]
    result.hidden = [shown.finding(f) for f in result.hidden]
    if result.fixed is not None:
        result.fixed = [shown.finding(f) for f in result.fixed]
    for checked in result.files:
        checked.path = shown(checked.path)
    result.unknowns = [u if shown(u.file) == u.file else dataclasses.replace(u, file=shown(u.file))
                       for u in result.unknowns]
    if min_severity is not None:
        floor = SEVERITIES.index(min_severity)
        result.hidden.extend(f for f in result.findings if SEVERITIES.index(f.severity) < floor)
        result.findings = [f for f in result.findings if SEVERITIES.index(f.severity) >= floor]
    return result


def display_path(path: str) -> str:
    """The one form every output uses for a location: relative to the current directory when the
    file lies under it (a related file found through a reference is often absolute), else as given."""
    try:
        absolute = os.path.abspath(path)
        cwd = os.getcwd()
        if os.path.commonpath([absolute, cwd]) == cwd and absolute != cwd:
            return os.path.relpath(absolute, cwd)
    except ValueError:  # another drive (Windows)
        pass
    return path


class _PathCache(dict):
    """display_path once per distinct path (a hostile file can carry 200,000 findings)."""

    def __call__(self, path: str) -> str:
        shown = self.get(path)
        if shown is None:
            shown = self[path] = display_path(path)
        return shown

    def finding(self, finding: Finding) -> Finding:
        file = self(finding.file)
        if file == finding.file and all(self(r.file) == r.file for r in finding.related):
            return finding
        related = [r if self(r.file) == r.file else dataclasses.replace(r, file=self(r.file)) for r in finding.related]
        return dataclasses.replace(finding, file=file, related=related)
