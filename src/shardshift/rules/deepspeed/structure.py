"""Structural rules for ds_config, driven by the key table (the same data as
schemas/ds_config.schema.json): unknown keys and values of the wrong type or range."""

from __future__ import annotations

import json
import math
from typing import Iterable

from shardshift.document import Document
from shardshift.formats.deepspeed.keys import Key, children_of, key_index
from shardshift.rules.base import Context, Finding, Rule, Severity, Suggestions, did_you_mean
from shardshift.source import Member, Node, find_node, join_pointer
from shardshift.versions import BEHAVIOUR_CHANGES, removed_by, strict_from, version_text

TRUTHY_STRINGS = {"true", "yes", "on", "1"}
FALSY_STRINGS = {"false", "no", "off", "0"}


def _sections(document: Document) -> Iterable[tuple[Node, str, Key | None]]:
    """Every object in the document that maps to a section of the key table (or the top
    level), with its pointer and row. Arrays and free-form sections are not entered."""
    if document.root is None or document.root.kind != "object":
        return
    stack: list[tuple[Node, str, Key | None]] = [(document.root, "", None)]
    rows = key_index()
    while stack:
        node, pointer, row = stack.pop()
        yield node, pointer, row
        if row is not None and row.open:
            continue
        for member in node.members:
            child = join_pointer(pointer, member.key)
            child_row = rows.get(child)
            if child_row is not None and member.value.kind == "object" and child_row.type in ("object", "any"):
                stack.append((member.value, child, child_row))


def _members(document: Document) -> Iterable[tuple[Node, str, Key | None, Member, str, Key | None]]:
    """Every key of every checked (not free-form) section: (section node, section pointer,
    section row, member, the member's pointer, the member's row or None when unknown)."""
    rows = key_index()
    for node, pointer, row in _sections(document):
        if row is not None and row.open:
            continue
        for member in node.members:
            child = join_pointer(pointer, member.key)
            yield node, pointer, row, member, child, rows.get(child)


class UnknownKey(Rule):
    """A key that DeepSpeed does not know: rejected in strict sections, silently ignored elsewhere.

    ## What it does
    Reports every key of a ds_config that is not a DeepSpeed key at its level, with the closest
    known key as a "did you mean" suggestion. In sections that DeepSpeed validates strictly
    (`zero_optimization`, offload blocks, `fp16`, `bf16`, monitors, ...) DeepSpeed rejects the
    file at launch; everywhere else, the top level included, it ignores the key without a word.
    A section DeepSpeed removed (`amp`, `elasticity`, `progressive_layer_drop`, MiCS, ...) is an
    error from the release that started rejecting it (0.19.7 or 0.19.8), judged against
    `--deepspeed-version` (the newest by default); an older release still reads it, so there it
    is only a note (info) for the upgrade.

    ## Why is this bad
    A misspelled top-level key such as `zero_optimisation` or `gradient_clippping` turns the
    feature off: the run trains without ZeRO or with the default clipping, and nothing says so.
    A near miss of a known key, or any unknown key in a strict section, is an error; another
    unknown key (perhaps read by your own code) is a warning.

    ## Example
    ```json
    {"train_batch_size": 32, "zero_optimisation": {"stage": 2}}
    ```

    ## Use instead
    ```json
    {"train_batch_size": 32, "zero_optimization": {"stage": 2}}
    ```
    """

    code = "DS101"
    name = "unknown-key"
    severity = "error"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        suggestions = Suggestions()  # fuzzy "did you mean" for the first 50 unknown keys of the file only
        for node, pointer, row, member, child, child_row in _members(document):
            if child_row is not None and child_row.foreign:
                yield self.finding(document, child, f"{member.key!r} is not a DeepSpeed key: it is "
                                   f"{child_row.foreign}; DeepSpeed ignores it", severity="warning", key=True)
                continue
            if child_row is not None and child_row.removed:
                if not removed_by(child_row, context.deepspeed_version):
                    # still read by the DeepSpeed version in use (--deepspeed-version): a note for the upgrade
                    yield self.finding(
                        document, child,
                        f"{member.key!r} is read by {context.deepspeed_version_text}, but DeepSpeed "
                        f"{version_text(child_row.removed_in or ())} removed it and rejects the file; drop it before "
                        "upgrading", severity="info", key=True)
                    continue
                removed = self.finding(document, child, f"{member.key!r} is {_removed_text(child_row, context)}; "
                                       "remove it", severity="error", key=True)
                removed.release_dependent = True  # releases before the removal read it
                yield removed
                continue
            if child_row is not None or member.key.startswith(("_comment", "//", "#")):
                continue
            known = children_of(pointer)
            where = f"in {pointer[1:]}" if pointer else "at the top level"
            clear, suggestion = suggestions.lookup(member.key, known)
            lenient = _lenient_before(pointer, context)
            if row is not None and row.strict and lenient is None:
                message = f"unknown key {member.key!r} {where}: DeepSpeed rejects it at launch"
                severity: Severity = "error"
            elif lenient is not None and suggestion:
                message = (f"unknown key {member.key!r} {where}: {context.deepspeed_version_text} silently ignores it "
                           f"(DeepSpeed rejects it from {version_text(lenient)})")
                severity = "error"
            elif lenient is not None:
                message = (f"unknown key {member.key!r} {where}: {context.deepspeed_version_text} ignores it (DeepSpeed "
                           f"rejects it from {version_text(lenient)}; fine only if your own code reads it)")
                severity = "warning"
            elif suggestion:
                message = f"unknown key {member.key!r} {where}: DeepSpeed silently ignores it"
                severity = "error"
            else:
                message = (f"unknown key {member.key!r} {where}: DeepSpeed ignores it (fine only if your own "
                           "code reads it)")
                severity = "warning"
            message += f"; did you mean {suggestion!r}?" if suggestion else "; remove it"
            if suggestions.skipped:
                message += f" ({suggestions.note()})"
            finding = self.finding(document, child, message, fix=suggestion, severity=severity, key=True,
                                   fix_kind="rename-key" if clear and node.get(clear) is None else None)
            # a section DeepSpeed validates only from some release on: before it, a key that is no near miss was
            # ignored (a warning), so with no release known the verdict differs between releases
            finding.release_dependent = row is not None and row.strict and lenient is None and \
                strict_from(pointer) is not None and not suggestion
            yield finding


def _lenient_before(pointer: str, context: Context) -> tuple[int, ...] | None:
    """The release from which DeepSpeed rejects unknown keys in the section at `pointer`, when the
    release in use (given or pinned) is older than it; else None."""
    since = strict_from(pointer)
    version = context.deepspeed_version
    if since is None or version is None or tuple(version) >= since:
        return None
    return since


def _removed_text(row: Key, context: Context) -> str:
    """Why a removed key is refused, naming the release that refuses it: the version in use when
    one is given (--deepspeed-version), else the text of the key table (the newest, 0.19.8)."""
    text = row.removed or ""
    if row.removed_in is None or context.deepspeed_version is None:
        return text
    used = version_text(context.deepspeed_version)
    text = text.replace("(0.19.8 rejects", f"in {version_text(row.removed_in)} ({used} rejects")
    return text


def _number_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)


def _same_meaning(row: Key, node: Node, fix: str | None) -> bool:
    """Whether `fix` spells the value DeepSpeed (or its author) meant, so --fix may write it: a
    number or boolean written as a string, 0/1 for a boolean, an enum value in the wrong case."""
    if fix is None:
        return False
    if row.type in ("int", "number"):
        if node.kind == "string":
            return row.type == "number" or float(fix).is_integer()
        return node.kind == "bool"
    if row.type == "bool":
        return node.kind in ("string", "number")
    if row.type == "enum":
        return isinstance(node.value, str) and json.dumps(node.value.lower()) == fix.lower()
    return False


# the raw booleans DeepSpeed's config parser joins with `|` (config.py: get_wall_clock_breakdown(...) |
# flops_profiler_config.enabled): a string, null or float there is a TypeError, not a truth test
OR_COMBINED = frozenset({"/wall_clock_breakdown", "/flops_profiler/enabled"})


def check_value(row: Key, node: Node, strict: bool) -> tuple[Severity, str, str | None] | None:
    """What is wrong with `node` as a value of `row`, given whether DeepSpeed coerces it
    (strict, pydantic lax mode) or uses it raw (permissive): (severity, problem, fix)."""
    value, kind = node.value, node.kind
    if (value == "auto" and not row.rejects_auto) or row.type == "any":
        return None
    if kind == "null" and row.nullable:
        return None  # DeepSpeed takes null here: the default (keys.NULLABLE)
    if kind == "string" and row.type == "array" and row.str_to_list:
        return None  # DeepSpeed turns a single string into a one-item list (keys.STR_TO_LIST)
    shown = node.raw if kind != "object" and kind != "array" else kind
    if row.type in ("int", "number"):
        if kind == "string":
            try:
                number = float(value)
            except ValueError:
                return "error", f"{shown} is not a number", None
            if not math.isfinite(number):
                return "error", f"{shown} is not a finite number", None
            fix = _number_text(number)
            if strict and (row.type == "number" or value.strip().lstrip("-").isdigit()):
                return "warning", f"{shown} is a string; DeepSpeed converts it, other loaders may not", fix
            why = ("DeepSpeed's strict parser rejects a string in scientific notation" if strict
                   else "DeepSpeed uses it as a string and fails when it computes with it")
            return "error", f"{shown} is a string, not a number: {why}", fix
        if kind == "bool":
            if strict and not row.rejects_bool:
                return "warning", f"{shown} is a boolean where a number is expected (read as {int(value)})", str(int(value))
            why = " (DeepSpeed's validator refuses booleans here)" if row.rejects_bool else ""
            return "error", f"{shown} is a boolean where a number is expected{why}", None
        if kind != "number":
            return "error", f"expected a number, found {kind}", None
        if isinstance(value, float) and not math.isfinite(value):  # the parser rejects 1e400 today
            return "error", f"{shown} is not a finite number", None
        if row.type == "int" and isinstance(value, float) and not value.is_integer():
            return "error", _fraction_problem(row, shown, strict), str(int(value))
        return _check_range(row, value)
    if row.type == "bool":
        if kind == "bool":
            return None
        if strict and ((kind == "string" and value.lower() in TRUTHY_STRINGS | FALSY_STRINGS) or
                       (kind == "number" and value in (0, 1))):
            truth = value in (1,) or (isinstance(value, str) and value.lower() in TRUTHY_STRINGS)
            return "warning", f"{shown} is not a JSON boolean (DeepSpeed reads it as {str(truth).lower()})", \
                str(truth).lower()
        if row.bool_only:
            if kind == "number" and value in (0, 1):
                return "warning", f"{shown} is not a JSON boolean (DeepSpeed reads it as {str(value == 1).lower()})", \
                    str(value == 1).lower()
            return "error", (f"expected true or false, found {shown}: DeepSpeed raises DeepSpeedConfigError while "
                             "parsing the config"), None
        if row.path in OR_COMBINED and (kind in ("string", "null") or (kind == "number" and isinstance(value, float))):
            return "error", (f"expected true or false, found {shown}: DeepSpeed keeps the value as written and "
                             "combines wall_clock_breakdown with flops_profiler.enabled (`|`), which raises TypeError "
                             "while parsing the config"), None
        if not strict and kind in ("string", "number"):
            return "error", (f"expected true or false, found {shown}: DeepSpeed keeps the value as written and tests "
                             "it for truth, so any non-empty string (\"false\" too) or non-zero number counts as "
                             "true"), None
        return "error", f"expected true or false, found {shown}", None
    if row.type == "str":
        return None if kind == "string" else ("error", f"expected a string, found {shown}", None)
    if row.type == "enum":
        choices = row.choices or ()
        probe = value.lower() if row.case_insensitive and isinstance(value, str) else value
        if probe in choices:
            return None
        if value == "auto":  # rows with rejects_auto: nobody fills it in, DeepSpeed's parser raises
            return "error", (f"\"auto\" is not one of {', '.join(map(json.dumps, choices))}: neither the Hugging Face "
                             "Trainer nor Accelerate fills it in, and DeepSpeed raises ValueError while parsing the "
                             "config"), None
        suggestion = did_you_mean(str(value), [str(c) for c in choices])
        fix = json.dumps(suggestion) if suggestion else None
        return "error", f"{shown} is not one of {', '.join(map(json.dumps, choices))}", fix
    if row.type == "object" and kind != "object":
        if row.path == "/zero_optimization" and kind == "bool":
            return "warning", (f"legacy boolean form (means stage {1 if value else 0}); write an object with "
                               "\"stage\""), json.dumps({"stage": 1 if value else 0})
        return "error", f"expected an object, found {shown}", None
    if row.type == "array" and kind != "array":
        return "error", f"expected a list, found {shown}", None
    return None


# DeepSpeed's config models moved to pydantic v2 in 0.15.0: before it a fraction for a whole-number field
# was truncated, from it rejected (versions.BEHAVIOUR_CHANGES "fractional element counts")
PYDANTIC_V2 = next(c.since for c in BEHAVIOUR_CHANGES if c.what == "fractional element counts")


def _fraction(row: Key, node: Node) -> bool:
    """A number with a fractional part for a whole-number key."""
    return row.type == "int" and node.kind == "number" and isinstance(node.value, float) and \
        math.isfinite(node.value) and not node.value.is_integer()


def _fraction_problem(row: Key, shown: str, strict: bool) -> str:
    """Why a fractional value of a whole-number key is wrong: DeepSpeed's pydantic sections
    reject it while parsing; elsewhere DeepSpeed 0.19.8 keeps the float and computes with it."""
    if strict:
        return (f"{shown} is not a whole number: DeepSpeed's config parser rejects it (\"a number with a "
                "fractional part\"), so deepspeed.initialize fails")
    if row.path == "/gradient_accumulation_steps":
        return (f"{shown} is not a whole number: DeepSpeed accepts it without a check and computes with the "
                "fraction, so train_batch_size becomes a fraction, each loss is divided by it and the optimizer "
                "steps only when the micro-step count is a multiple of it")
    return (f"{shown} is not a whole number: DeepSpeed accepts it without a check and computes with the "
            "fraction where it expects a count")


def _check_range(row: Key, value: float) -> tuple[Severity, str, str | None] | None:
    if row.exclusive_minimum is not None and value <= row.exclusive_minimum:
        return "error", f"{_number_text(value)} must be greater than {_number_text(row.exclusive_minimum)}", None
    if row.minimum is not None and value < row.minimum:
        return "error", f"{_number_text(value)} is below the minimum {_number_text(row.minimum)}", None
    if row.maximum is not None and value > row.maximum:
        return "error", f"{_number_text(value)} is above the maximum {_number_text(row.maximum)}", None
    if row.exclusive_maximum is not None and value >= row.exclusive_maximum:
        return "error", f"{_number_text(value)} must be less than {_number_text(row.exclusive_maximum)}", None
    if row.even and int(value) % 2:
        return "error", f"{_number_text(value)} is odd; DeepSpeed asserts it is even at initialisation", \
            str(int(value) + 1)
    return None


def _item_problem(row: Key, item: Node) -> str | None:
    if row.items == "str" and item.kind != "string":
        shown = item.raw if item.kind not in ("object", "array") else item.kind
        return f"{shown} is not a string: DeepSpeed takes a list of strings here and rejects the config"
    return None


class InvalidValue(Rule):
    """A value of the wrong type or outside its range.

    ## What it does
    Checks every known ds_config key against the type and range DeepSpeed expects: element
    counts are whole numbers, booleans are `true`/`false`, the ZeRO stage is 0-3, batch values
    are positive, enumerations take one of their values.

    ## Why is this bad
    In strictly validated sections DeepSpeed rejects a bad value at launch (a bucket size written
    as the string `"5e8"`, a fractional element count, stage 4). Elsewhere it keeps the raw value
    and fails later, when it computes with it, or behaves differently from what was written; a few
    such keys it checks itself while parsing (`checkpoint.parallel_write.pipeline_stage` other than
    true or false raises DeepSpeedConfigError). Values DeepSpeed converts silently (a digit string, `1` for `true`) are warnings.

    ## Example
    ```json
    {"zero_optimization": {"stage": 4, "reduce_bucket_size": "5e8"}}
    ```

    ## Use instead
    ```json
    {"zero_optimization": {"stage": 3, "reduce_bucket_size": 500000000}}
    ```
    """

    code = "DS102"
    name = "invalid-value"
    severity = "error"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        for _, pointer, row, member, child, child_row in _members(document):
            if child_row is None or child_row.foreign or removed_by(child_row, context.deepspeed_version):
                continue
            strict = row is not None and row.strict
            # a section validated only from some release on: an older release reads it key by key
            lenient = _lenient_before(pointer, context) if strict else None
            problem = check_value(child_row, member.value, strict and lenient is None)
            if problem is None:
                yield from self._items(document, child, child_row, member.value)
                continue
            severity, message, fix = problem
            fraction = _fraction(child_row, member.value)
            used = context.deepspeed_version
            if lenient is not None and severity == "error" and fraction and child_row.fraction_meant:
                severity = "info"  # used as meant: nothing fails or changes until an upgrade
                message = (f"{member.value.raw} is not a whole number: {context.deepspeed_version_text} reads "
                           f"{pointer[1:]} key by key and uses it as written; DeepSpeed validates the section, and "
                           f"rejects a fraction here, from {version_text(lenient)} on (write a whole number before "
                           "upgrading)")
            elif lenient is not None and severity == "error":
                severity = "warning"
                message += (f" ({context.deepspeed_version_text} reads {pointer[1:]} key by key and takes it; DeepSpeed "
                            f"validates the section, and rejects it, from {version_text(lenient)} on)")
            elif strict and fraction and used is not None and tuple(used) < PYDANTIC_V2:
                severity = "warning"
                message = (f"{member.value.raw} is not a whole number: {context.deepspeed_version_text} truncates it to "
                           f"{int(member.value.value)} (pydantic v1); DeepSpeed rejects it from "
                           f"{version_text(PYDANTIC_V2)} on")
            finding = self.finding(document, child, f"{child[1:]}: {message}", fix=fix, severity=severity,
                                   fix_kind="replace-value" if _same_meaning(child_row, member.value, fix) else None)
            # the verdict differs between releases: a value an older release took where it read the section key by
            # key (before strict_from), or a fraction that pydantic v1 truncated (before 0.15.0)
            if strict and problem[0] == "error":
                older = check_value(child_row, member.value, False) if strict_from(pointer) is not None else problem
                finding.release_dependent = fraction or older is None or older[0] != "error"
            yield finding

    def _items(self, document: Document, pointer: str, row: Key, node: Node) -> Iterable[Finding]:
        """Items of a list whose items DeepSpeed checks by type (`items` in the key table)."""
        if row.items is None or node.kind != "array":
            return
        for index, item in enumerate(node.elements):
            problem = _item_problem(row, item)
            if problem is not None:
                yield self.finding(document, f"{pointer}/{index}", f"{pointer[1:]}[{index}]: {problem}")


# List settings whose items DeepSpeed checks against a fixed set (a pydantic `List[Literal[...]]`),
# which one type per key-table row cannot say: pointer -> the accepted items (DeepSpeed 0.19.8).
LIST_ITEMS: dict[str, tuple[str, ...]] = {
    "/compile/passes": ("z1", "z3", "autosp", "autotp"),  # deepspeed/compile/config.py PassName
}


class InvalidListItem(Rule):
    """An item of a list setting that is not one of the values DeepSpeed accepts.

    ## What it does
    Checks each item of list settings whose items DeepSpeed validates against a fixed set:
    `compile.passes` takes `"z1"`, `"z3"`, `"autosp"` and `"autotp"` (case-sensitive). Suggests
    the closest one. A value that is not a list at all is reported by invalid-value (DS102).

    ## Why is this bad
    `compile` is a strictly validated section: DeepSpeed rejects the whole config at launch
    ("Input should be 'z1', 'z3', 'autosp' or 'autotp'"), even when DeepCompile is off.

    ## Example
    ```json
    {"compile": {"deepcompile": true, "passes": ["z2"]}}
    ```

    ## Use instead
    ```json
    {"compile": {"deepcompile": true, "passes": ["z1"]}}
    ```
    """

    code = "DS103"
    name = "invalid-list-item"
    severity = "error"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        if document.root is None:
            return
        for pointer, choices in LIST_ITEMS.items():
            node = find_node(document.root, pointer)
            if node is None or node.kind != "array":
                continue
            for index, item in enumerate(node.elements):
                if item.kind == "string" and item.value in choices:
                    continue
                suggestion = did_you_mean(str(item.value), choices) if item.kind == "string" else None
                shown = item.raw if item.kind not in ("object", "array") else item.kind
                message = (f"{pointer[1:].replace('/', '.')}[{index}] is {shown}, not one of "
                           f"{', '.join(map(json.dumps, choices))}: DeepSpeed rejects the config at launch")
                message += f"; did you mean {json.dumps(suggestion)}?" if suggestion else "; remove it"
                yield self.finding(document, f"{pointer}/{index}", message,
                                   fix=json.dumps(suggestion) if suggestion else None)


class LoadBalanceCoeffUnsupported(Rule):
    """`expert_parallel.load_balance_coeff` set to a value: DeepSpeed only takes null.

    ## What it does
    Reports `expert_parallel.load_balance_coeff` with any value other than `null`. DeepSpeed's
    AutoEP has no auxiliary-loss-free load balancing (expert bias): `parse_autoep_config` raises
    ValueError ("load_balance_coeff=... is not supported in this AutoEP build") for every other
    value, whether or not expert parallelism is enabled.

    ## Why is this bad
    DeepSpeed parses the section while it reads the config, so the run stops in
    `deepspeed.initialize` (or `HfDeepSpeedConfig`) before anything trains. Configurations
    copied from torchtitan or DeepSeek recipes, which use a coefficient such as 1e-3, hit this.

    ## Example
    ```json
    {"expert_parallel": {"enabled": true, "autoep_size": 8, "load_balance_coeff": 0.001}}
    ```

    ## Use instead
    ```json
    {"expert_parallel": {"enabled": true, "autoep_size": 8, "load_balance_coeff": null}}
    ```
    """

    code = "DS444"
    name = "load-balance-coeff-unsupported"
    severity = "error"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        section = data.get("expert_parallel") if isinstance(data, dict) else None
        if not isinstance(section, dict) or "load_balance_coeff" not in section:
            return
        value = section["load_balance_coeff"]
        if value is None:
            return
        yield self.finding(
            document, "/expert_parallel/load_balance_coeff",
            f"expert_parallel.load_balance_coeff is {json.dumps(value)}: DeepSpeed's AutoEP has no auxiliary-loss-free "
            "load balancing and raises ValueError (\"load_balance_coeff=... is not supported in this AutoEP build\") "
            "while parsing the config, even with expert parallelism off; set it to null or remove it", fix="null")


# What deepspeed.initialize checks in `expert_parallel` when AutoEP is enabled (DeepSpeed 0.19.8,
# module_inject/auto_ep_config.py validate_autoep_config): enumerations, whole-number ranges.
EXPERT_PARALLEL_CHOICES: dict[str, tuple[str, ...]] = {
    "score_apply": ("auto", "pre", "post"),
    "combine_impl": ("auto", "weighted_sum", "fused_weighted_sum", "legacy_bmm"),
    "row_weighting_impl": ("auto", "eager", "fused"),
    "gate_up_impl": ("separate", "fused"),
    "comm_backend": ("comm", "deepep"),
    "score_func": ("auto", "softmax", "sigmoid"),
}
# key -> (lowest accepted value, what DeepSpeed's message calls it); null is accepted for the groups.
EXPERT_PARALLEL_MINIMUM: dict[str, tuple[int, str]] = {
    "comm_num_sm": (1, "a positive integer"),
    "comm_qp_margin": (0, "a non-negative integer"),
    "comm_max_tokens_per_rank": (0, "a non-negative integer"),
    "num_expert_groups": (1, ">= 1"),
    "num_limited_groups": (1, ">= 1"),
}
EXPERT_PARALLEL_BOOLS = ("validate_folding_routing", "async_split_plan")
# a bare NaN or Infinity, as hjson reads it (a string); json.load reads the float
NON_FINITE = ("NaN", "Infinity", "-Infinity")
# module_inject/auto_ep_presets/registry.py PRESET_MODELS, in registry order
# deepspeed/moe/ep_experts.py EXPERT_ACTIVATIONS (0.19.8): the built-in names; register_expert_activation adds more
EXPERT_ACTIVATIONS = ("geglu_tanh", "swiglu", "swiglu_clamped", "swiglu_oai")
EXPERT_PARALLEL_PRESETS = ("mixtral", "qwen3_moe", "qwen3_5_moe", "deepseek_v2", "deepseek_v3", "minimax_m3")
# the names validate_autoep_config's _validate_attr_name checks: a non-empty string without dots, or null
EXPERT_PARALLEL_NAMES = ("expert_w1", "expert_w2", "expert_w3", "num_experts_attr", "top_k_attr", "router_pattern",
                         "expert_pattern", "shared_experts_pattern", "shared_experts_gate_pattern")


def _number(value) -> float | None:
    """A JSON number as DeepSpeed compares it (not a boolean), else None: not judged."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return None
    return value


def _did_you_mean(value, choices: tuple[str, ...]) -> tuple[str, str | None]:
    """The "; did you mean ...?" a message about a value outside `choices` ends with ("" when no choice is
    near, or the value is no string), and the fix it suggests."""
    suggestion = did_you_mean(value, choices) if isinstance(value, str) else None
    return (f"; did you mean {json.dumps(suggestion)}?", json.dumps(suggestion)) if suggestion else ("", None)


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class ExpertParallelValueRefused(Rule):
    """An `expert_parallel` value that `deepspeed.initialize` refuses when AutoEP is enabled.

    ## What it does
    With `expert_parallel.enabled: true`, checks what DeepSpeed's `validate_autoep_config`
    checks: `score_apply`, `combine_impl`, `row_weighting_impl`, `gate_up_impl`, `comm_backend`
    and `score_func` take one of their values; `comm_num_sm` is a positive integer,
    `comm_qp_margin` and `comm_max_tokens_per_rank` are non-negative integers (positive with
    `comm_backend: "deepep"`); `num_expert_groups` and `num_limited_groups` are at least 1 and
    `num_limited_groups` is at most `num_expert_groups`; `validate_folding_routing`,
    `async_split_plan` and `has_shared_experts` are booleans; `routed_scaling_factor` is a number
    or `"auto"`; `preset_model` names a built-in preset; the weight and pattern names
    (`expert_w1`, `router_pattern`, ...) are non-empty attribute names without dots. And the
    combinations it refuses: `combine_impl: "fused_weighted_sum"` with AutoTP, with
    `expert_tensor_parallel_size` > 1 or with DeepEP across ranks; `row_weighting_impl: "fused"`
    outside DeepEP or with `autoep_size` 1; `gate_up_impl: "fused"` with `use_grouped_mm: false`;
    `async_split_plan` with AutoEP and AutoTP folded together. `autoep_size` and
    `expert_tensor_parallel_size` are positive integers, and `tensor_parallel.preset_model`,
    when both are set, names the same model. With AutoEP off DeepSpeed never looks at these.

    ## Why is this bad
    `deepspeed.initialize` raises ValueError before it touches the model, so the job dies at
    start-up on every rank.

    ## Example
    ```json
    {"expert_parallel": {"enabled": true, "autoep_size": 8, "comm_num_sm": 0, "score_func": "softplus"}}
    ```

    ## Use instead
    ```json
    {"expert_parallel": {"enabled": true, "autoep_size": 8, "comm_num_sm": 12, "score_func": "sigmoid"}}
    ```
    """

    code = "DS446"
    name = "expert-parallel-value-refused"
    severity = "error"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        section = data.get("expert_parallel") if isinstance(data, dict) else None
        if not isinstance(section, dict) or section.get("enabled", False) is not True:
            return  # DeepSpeed validates the section only when AutoEP is enabled
        tail = "deepspeed.initialize raises ValueError when AutoEP is enabled"
        for key in EXPERT_PARALLEL_BOOLS:
            if key in section and not isinstance(section[key], bool):
                yield self.finding(document, f"/expert_parallel/{key}",
                                   f"expert_parallel.{key} is {json.dumps(section[key])}, not true or false: {tail} "
                                   f"(\"expert_parallel.{key} must be a boolean\")")
        for key, choices in EXPERT_PARALLEL_CHOICES.items():
            if key not in section or section[key] in choices:
                continue
            value = section[key]
            hint, fix = _did_you_mean(value, choices)
            yield self.finding(document, f"/expert_parallel/{key}", f"expert_parallel.{key} is {json.dumps(value)}, not "
                               f"one of {', '.join(map(json.dumps, choices))}: {tail}{hint}", fix=fix)
        for key, (lowest, wording) in EXPERT_PARALLEL_MINIMUM.items():
            value = section.get(key)
            if key not in section or (value is None and key.startswith("num_")) or value == "auto":
                continue
            if not _is_int(value) or value < lowest:
                yield self.finding(document, f"/expert_parallel/{key}",
                                   f"expert_parallel.{key} is {json.dumps(value)}: {tail} ({key} must be {wording})")
        limited, groups = section.get("num_limited_groups"), section.get("num_expert_groups")
        if _is_int(limited) and _is_int(groups) and groups >= 1 and limited >= 1 and limited > groups:
            yield self.finding(document, "/expert_parallel/num_limited_groups",
                               f"expert_parallel.num_limited_groups ({limited}) is larger than num_expert_groups "
                               f"({groups}): {tail} (\"num_limited_groups ({limited}) must be <= num_expert_groups ({groups})\")")
        for key in ("autoep_size", "expert_tensor_parallel_size"):
            value = section.get(key, 1)
            if not isinstance(value, int) or value < 1:  # auto_ep_folding._require_positive (a boolean passes)
                yield self.finding(document, f"/expert_parallel/{key}",
                                   f"expert_parallel.{key} is {json.dumps(value)}: {tail} (\"expert_parallel.{key} must "
                                   "be a positive integer\")")
        tp_preset = data.get("tensor_parallel", {}).get("preset_model") if isinstance(
            data.get("tensor_parallel"), dict) else None
        ep_preset = section.get("preset_model")
        if tp_preset is not None and ep_preset is not None and tp_preset != ep_preset:
            yield self.finding(document, "/expert_parallel/preset_model",
                               f"expert_parallel.preset_model {json.dumps(ep_preset)} differs from tensor_parallel."
                               f"preset_model {json.dumps(tp_preset)}: {tail} (\"must match when both are set\"); "
                               "name one model in both, or leave one unset")
        yield from self._names(document, context, section, tail)
        yield from self._combinations(document, data, section, tail)
        yield from self._folding(document, data, section, tail)
        yield from self._activation(document, context, section, tail)
        yield from self._detected(document, data, section)
        if section.get("comm_backend") == "deepep" and section.get("comm_max_tokens_per_rank", 0) == 0:
            where = "comm_max_tokens_per_rank" if "comm_max_tokens_per_rank" in section else "comm_backend"
            yield self.finding(document, f"/expert_parallel/{where}",
                               f"comm_backend \"deepep\" with comm_max_tokens_per_rank 0 (the default): {tail} "
                               "(\"comm_max_tokens_per_rank must be a positive integer when comm_backend='deepep'\"); "
                               "set it to the most tokens one rank can route (micro batch x padded sequence length)")

    def _detected(self, document: Document, data: dict, section: dict) -> Iterable[Finding]:
        """What deepspeed.initialize refuses once AutoEP has detected the model's MoE layers: a route scale that
        is no finite number (_as_finite_float), fused_weighted_sum with scores applied before the experts
        (validate_autoep_post_detection), and under ZeRO-3 quantized gradients or hpZeRO
        (_validate_zero3_moe_compatibility). A model without MoE layers AutoEP detects only gets a warning,
        unless preset_model or moe_layer_pattern names what to detect: then it is refused as well."""
        unknown = self._moe_unknown(section)
        tail = "deepspeed.initialize raises {} when AutoEP has detected the model's MoE layers"
        factor = section.get("routed_scaling_factor")
        if isinstance(factor, bool):
            yield self.finding(document, "/expert_parallel/routed_scaling_factor",
                               f"expert_parallel.routed_scaling_factor is {json.dumps(factor)}, a boolean: the config "
                               "check lets it pass as a number, but " + tail.format("ValueError")
                               + " (\"routed_scaling_factor must be a finite number\"); write a number, or \"auto\" "
                               "to take the model config's", unknown_context=unknown)
        if section.get("combine_impl") == "fused_weighted_sum" and section.get("score_apply") == "pre":
            yield self.finding(document, "/expert_parallel/score_apply",
                               "combine_impl \"fused_weighted_sum\" with score_apply \"pre\": "
                               + tail.format("ValueError") + " ('combine_impl=\"fused_weighted_sum\" requires "
                               "score_apply=\"post\"'); set score_apply to \"post\" or leave combine_impl unset",
                               unknown_context=unknown)
        zero = data.get("zero_optimization")
        if not isinstance(zero, dict) or zero.get("stage") != 3:
            return
        zero3 = tail.format("AssertionError") + " under ZeRO stage 3"
        if zero.get("zero_quantized_gradients") is True:
            yield self.finding(document, "/zero_optimization/zero_quantized_gradients",
                               f"zero_optimization.zero_quantized_gradients with AutoEP: {zero3} (\"AutoEP with ZeRO "
                               "Stage 3 does not support zero_quantized_gradients yet.\"); turn it off, or use ZeRO "
                               "stage 1 or 2", unknown_context=unknown)
        hpz = zero.get("zero_hpz_partition_size")
        if _is_int(hpz) and hpz > 1:
            yield self.finding(document, "/zero_optimization/zero_hpz_partition_size",
                               f"zero_optimization.zero_hpz_partition_size {hpz} with AutoEP: {zero3} (\"AutoEP with "
                               "ZeRO Stage 3 does not support hpZeRO secondary tensor groups yet\"); set it to 1",
                               unknown_context=unknown)

    def _activation(self, document: Document, context: Context, section: dict, tail: str) -> Iterable[Finding]:
        """An expert_activation that is no built-in name: refused unless the program registers it first
        (register_expert_activation), which the scripts that read the file show or not."""
        name = section.get("expert_activation")
        if not isinstance(name, str) or name in EXPERT_ACTIVATIONS:
            return
        from shardshift.context import UnknownContext
        from shardshift.files import read_text
        from shardshift.formats.launch.training_flags import _local_modules_of
        from shardshift.rules.deepspeed.auto import consumers_of

        scripts = sorted({c.file for c in consumers_of(document, context) if c.file.endswith(".py")})
        registers = False
        for script in scripts:
            for file in [script, *_local_modules_of(script)]:
                if "register_expert_activation" in (read_text(file, 2_000_000, bom=False) or ""):
                    registers = True
        if registers:
            return  # the program adds activations of its own: the name may be one of them
        unknown = None if scripts else UnknownContext(
            "program", "no script that reads this file was found, so whether the program registers "
                       f"{json.dumps(name)} (register_expert_activation) before deepspeed.initialize is unknown",
            "check the ds_config together with the training script that uses it")
        hint, fix = _did_you_mean(name, EXPERT_ACTIVATIONS)
        yield self.finding(document, "/expert_parallel/expert_activation",
                           f"expert_parallel.expert_activation is {json.dumps(name)}, not one of DeepSpeed's "
                           f"activations ({', '.join(EXPERT_ACTIVATIONS)}) and not registered by the script that "
                           f"reads the file: {tail} (\"expert_activation must be one of ...\"){hint}", fix=fix,
                           unknown_context=unknown)

    def _folding(self, document: Document, data: dict, section: dict, tail: str) -> Iterable[Finding]:
        """What validate_folding_global (auto_ep_folding.py) refuses before any process group exists: expert
        tensor parallelism, and AutoEP folded with AutoTP (autotp_size > 1) together with DeepCompile, with
        autoep_size 1, with use_data_before_expert_parallelism or with ZeRO offload."""
        expert_tp = section.get("expert_tensor_parallel_size", 1)
        if _is_int(expert_tp) and expert_tp > 1:
            yield self.finding(document, "/expert_parallel/expert_tensor_parallel_size",
                               f"expert_parallel.expert_tensor_parallel_size is {expert_tp}: {tail} "
                               f"(\"expert_parallel.expert_tensor_parallel_size={expert_tp} is reserved for "
                               "expert-internal tensor parallelism and is not supported yet\"); set it to 1", fix="1")
        tensor_parallel = data.get("tensor_parallel")
        autotp = tensor_parallel.get("autotp_size", 0) if isinstance(tensor_parallel, dict) else 0
        if not _is_int(autotp) or autotp <= 1:
            return
        folded = f"{tail} with AutoTP folded in (tensor_parallel.autotp_size {autotp})"
        compile_section = data.get("compile")
        if isinstance(compile_section, dict) and compile_section.get("deepcompile") is True:
            yield self.finding(document, "/compile/deepcompile",
                               f"compile.deepcompile with AutoEP: {folded} (\"DeepCompile with AutoEP+AutoTP folding is "
                               "not supported\"); disable deepcompile or set autotp_size to 1")
        autoep = section.get("autoep_size", 1)
        if _is_int(autoep) and autoep == 1:
            where = "/expert_parallel/autoep_size" if "autoep_size" in section else "/expert_parallel"
            yield self.finding(document, where,
                               f"expert_parallel.autoep_size 1{'' if 'autoep_size' in section else ' (the default)'}: "
                               f"{folded} (\"AutoEP+AutoTP folding requires expert_parallel.autoep_size > 1\"); raise "
                               "autoep_size or set autotp_size to 1", key="autoep_size" not in section)
        if data.get("use_data_before_expert_parallelism"):
            yield self.finding(document, "/use_data_before_expert_parallelism",
                               f"use_data_before_expert_parallelism with AutoEP: {folded} (\"expert_parallel with "
                               "use_data_before_expert_parallel_ is not supported with AutoEP+AutoTP folding\")")
        zero = data.get("zero_optimization")
        if isinstance(zero, dict):
            offload = next((k for k in ("offload_optimizer", "offload_param") if zero.get(k) is not None), None)
            if offload is None and zero.get("cpu_offload") is True:
                offload = "cpu_offload"
            if offload is not None:
                yield self.finding(document, f"/zero_optimization/{offload}",
                                   f"zero_optimization.{offload} with AutoEP: {folded} (\"ZeRO optimizer/parameter "
                                   "offload with AutoEP+AutoTP folding is not validated yet\"); remove the offload "
                                   "or set autotp_size to 1", key=True)

    def _names(self, document: Document, context: Context, section: dict, tail: str) -> Iterable[Finding]:
        """The single values validate_autoep_config checks by kind: names, flags, the scaling factor."""
        preset = section.get("preset_model")
        if preset is not None and preset not in EXPERT_PARALLEL_PRESETS:
            hint, fix = _did_you_mean(preset, EXPERT_PARALLEL_PRESETS)
            yield self.finding(document, "/expert_parallel/preset_model",
                               f"expert_parallel.preset_model is {json.dumps(preset)}, not one of DeepSpeed's AutoEP "
                               f"presets ({', '.join(EXPERT_PARALLEL_PRESETS)}): {tail} (\"Unknown preset_model\"){hint}",
                               fix=fix)
        for key in EXPERT_PARALLEL_NAMES:
            value = section.get(key)
            if value is None:
                continue
            if not isinstance(value, str) or value == "":
                yield self.finding(document, f"/expert_parallel/{key}",
                                   f"expert_parallel.{key} is {json.dumps(value)}: {tail} (\"{key} must be a "
                                   "non-empty string\"); write the attribute's name, or remove the key")
            elif "." in value:
                yield self.finding(document, f"/expert_parallel/{key}",
                                   f"expert_parallel.{key} is {json.dumps(value)}: {tail} (\"{key} must be a direct "
                                   f"attribute name (no dots)\"); write the last part, {json.dumps(value.rsplit('.', 1)[-1])}",
                                   fix=json.dumps(value.rsplit(".", 1)[-1]))
        shared = section.get("has_shared_experts")
        if shared is not None and not isinstance(shared, bool):
            yield self.finding(document, "/expert_parallel/has_shared_experts",
                               f"expert_parallel.has_shared_experts is {json.dumps(shared)}, not true or false: "
                               f"{tail} (\"has_shared_experts must be a boolean when set\")")
        if "routed_scaling_factor" in section:
            factor = section["routed_scaling_factor"]
            if factor in NON_FINITE:
                yield from self._non_finite_factor(document, context, section, factor, tail)
            elif factor != "auto" and not isinstance(factor, (int, float)):
                yield self.finding(document, "/expert_parallel/routed_scaling_factor",
                                   f"expert_parallel.routed_scaling_factor is {json.dumps(factor)}: {tail} "
                                   "(\"routed_scaling_factor must be a number or 'auto'\")")

    def _non_finite_factor(self, document: Document, context: Context, section: dict, factor: str,
                           tail: str) -> Iterable[Finding]:
        """A bare NaN or Infinity: hjson (DeepSpeed's loader of a path) reads the string, refused by the config
        check; json.load (a script that hands DeepSpeed a dict) reads the float, refused only once AutoEP has
        detected the MoE layers."""
        from shardshift.rules.deepspeed.auto import consumers_of

        readers = consumers_of(document, context)
        by_json = bool(readers) and all(c.loader == "json" for c in readers)
        message = (f"expert_parallel.routed_scaling_factor is {factor}, no finite number: DeepSpeed's own loader "
                   f"reads it as the string {json.dumps(factor)}, and {tail} (\"routed_scaling_factor must be a "
                   "number or 'auto'\"); a script that opens the file with json.load hands over the float, and "
                   "deepspeed.initialize raises ValueError when AutoEP has detected the model's MoE layers "
                   "(\"routed_scaling_factor must be a finite number\"); write a number, or \"auto\"")
        unknown = self._moe_unknown(section) if by_json else None
        yield self.finding(document, "/expert_parallel/routed_scaling_factor", message, unknown_context=unknown)

    @staticmethod
    def _moe_unknown(section: dict):
        """None where preset_model or moe_layer_pattern names what AutoEP must detect (a model without it is
        refused too), else what is unknown: whether the model has MoE layers AutoEP detects."""
        from shardshift.context import UnknownContext

        if section.get("preset_model") is not None or section.get("moe_layer_pattern") is not None:
            return None
        return UnknownContext(
            "program", "whether the model has MoE layers AutoEP detects (with none, AutoEP only warns and never "
                       "reaches this check) is not in the config",
            "set expert_parallel.preset_model to the model's family (DeepSpeed then refuses a model without such "
            "layers, too)")

    def _combinations(self, document: Document, data: dict, section: dict, tail: str) -> Iterable[Finding]:
        """The pairs validate_autoep_config refuses (DeepSpeed's defaults for what the file leaves out)."""
        tensor_parallel = data.get("tensor_parallel")
        autotp = _number(tensor_parallel.get("autotp_size", 0) if isinstance(tensor_parallel, dict) else 0)
        autoep = _number(section.get("autoep_size", 1))
        expert_tp = _number(section.get("expert_tensor_parallel_size", 1))
        backend = section.get("comm_backend", "comm")
        if section.get("async_split_plan") is True and autoep is not None and autoep > 1 and autotp is not None \
                and autotp > 1:
            yield self.finding(document, "/expert_parallel/async_split_plan",
                               f"expert_parallel.async_split_plan with autoep_size {_number_text(autoep)} and "
                               f"tensor_parallel.autotp_size {_number_text(autotp)}: {tail} (\"async_split_plan does "
                               "not support AutoEP+AutoTP folding yet\"); set one of them off")
        if section.get("combine_impl") == "fused_weighted_sum":
            if autotp is not None and autotp > 1:
                yield self.finding(document, "/expert_parallel/combine_impl",
                                   f"combine_impl \"fused_weighted_sum\" with tensor_parallel.autotp_size "
                                   f"{_number_text(autotp)}: {tail} (folded tensor parallelism restores tokens without "
                                   "the weighted reduction); set autotp_size to 1 or leave combine_impl unset")
            if expert_tp is not None and expert_tp > 1:
                yield self.finding(document, "/expert_parallel/combine_impl",
                                   f"combine_impl \"fused_weighted_sum\" with expert_tensor_parallel_size "
                                   f"{_number_text(expert_tp)}: {tail} (it requires expert_tensor_parallel_size=1)")
            if backend == "deepep" and autoep is not None and autoep > 1:
                yield self.finding(document, "/expert_parallel/combine_impl",
                                   f"combine_impl \"fused_weighted_sum\" with comm_backend \"deepep\" and autoep_size "
                                   f"{_number_text(autoep)}: {tail} (DeepEP already reduces the routed rows); set "
                                   "comm_backend to \"comm\" or leave combine_impl unset")
        if section.get("gate_up_impl") == "fused" and section.get("use_grouped_mm", True) is False:
            yield self.finding(document, "/expert_parallel/gate_up_impl",
                               f"gate_up_impl \"fused\" with use_grouped_mm false: {tail} (the fused projection is one "
                               "torch._grouped_mm, use_grouped_mm false selects the expert loop); set use_grouped_mm "
                               "true or leave gate_up_impl unset")
        if section.get("row_weighting_impl") == "fused":
            if backend != "deepep":
                yield self.finding(document, "/expert_parallel/row_weighting_impl",
                                   f"row_weighting_impl \"fused\" with comm_backend {json.dumps(backend)}: {tail} (it only "
                                   "runs inside the DeepEP route); set comm_backend to \"deepep\" or leave "
                                   "row_weighting_impl unset")
            elif autoep == 1:
                yield self.finding(document, "/expert_parallel/row_weighting_impl",
                                   f"row_weighting_impl \"fused\" with autoep_size 1: {tail} (it only runs when DeepEP "
                                   "dispatches across ranks); raise autoep_size or leave row_weighting_impl unset")


class FeatureSettingRefused(Rule):
    """A setting of an optional feature that DeepSpeed refuses while it sets the run up.

    ## What it does
    Reports what DeepSpeed 0.19.8 asserts about these sections, each enabled or not as said:
    `autotuning.results_dir` or `autotuning.exps_dir` written empty (`""`, `null`, `false`, `0`),
    checked even with autotuning off; `data_efficiency.data_sampling.curriculum_learning` enabled
    without `curriculum_metrics`; `data_efficiency.data_sampling.dynamic_batching` enabled
    without `max_tokens`; a `log_level` that is not one of `debug`, `info`, `warning`,
    `error`, `critical` (any case); the Muon optimizer's `ns_method` other than `standard` or
    `gram`; and, with `torch_autocast` enabled, a `lower_precision_safe_modules` entry with no
    package (`"Linear"` for `"torch.nn.Linear"`).

    ## Why is this bad
    The first four fail while DeepSpeed reads the config (AssertionError in `DeepSpeedConfig`,
    so in `deepspeed.initialize` and in the Hugging Face Trainer's `HfDeepSpeedConfig` alike);
    the log level, Muon and autocast settings fail in `deepspeed.initialize`. The job stops on every rank
    before it trains. "Enabled" is Python's truth of the value as written, as DeepSpeed reads it:
    the string `"false"` enables.

    ## Example
    ```json
    {"log_level": "warn",
     "data_efficiency": {"data_sampling": {"dynamic_batching": {"enabled": true}}}}
    ```

    ## Use instead
    ```json
    {"log_level": "warning",
     "data_efficiency": {"data_sampling": {"dynamic_batching": {"enabled": true, "max_tokens": 8192}}}}
    ```
    """

    code = "DS452"
    name = "feature-setting-refused"
    severity = "error"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        if not isinstance(data, dict):
            return
        autotuning = data.get("autotuning")
        if isinstance(autotuning, dict):
            for key in ("results_dir", "exps_dir"):
                if key in autotuning and not autotuning[key]:
                    yield self.finding(document, f"/autotuning/{key}",
                                       f"autotuning.{key} is {json.dumps(autotuning[key])}: DeepSpeed asserts it is "
                                       f"not empty while it reads the config (\"{key} cannot be empty\"), even with "
                                       "autotuning off; write a folder or remove the key")
        efficiency = data.get("data_efficiency")
        sampling = efficiency.get("data_sampling") if isinstance(efficiency, dict) else None
        for block, required, refusal, advice in SAMPLING_REQUIRED if isinstance(sampling, dict) else ():
            section = sampling.get(block)
            if isinstance(section, dict) and section.get("enabled") and required not in section:
                yield self.finding(document, f"/data_efficiency/data_sampling/{block}",
                                   f"{block.replace('_', ' ')} is enabled without {required}: DeepSpeed asserts while "
                                   f"it reads the config (\"{refusal}\"); {advice}")
        optimizer = data.get("optimizer")
        if isinstance(optimizer, dict) and isinstance(optimizer.get("type"), str) and \
                optimizer["type"].lower() == "muon" and isinstance(optimizer.get("params"), dict) and \
                "ns_method" in optimizer["params"] and optimizer["params"]["ns_method"] not in MUON_NS_METHODS:
            value = optimizer["params"]["ns_method"]
            hint, fix = _did_you_mean(value, MUON_NS_METHODS)
            yield self.finding(document, "/optimizer/params/ns_method",
                               f"optimizer.params.ns_method is {json.dumps(value)}, not one of "
                               f"{', '.join(MUON_NS_METHODS)}: deepspeed.initialize fails when it builds the Muon "
                               f"optimizer (AssertionError \"ns_method must be one of\"){hint}", fix=fix)
        autocast = data.get("torch_autocast")
        modules = autocast.get("lower_precision_safe_modules") if isinstance(autocast, dict) else None
        if isinstance(autocast, dict) and autocast.get("enabled") is True and isinstance(modules, list):
            for index, name in enumerate(modules):
                if isinstance(name, str) and "." not in name:
                    yield self.finding(document, f"/torch_autocast/lower_precision_safe_modules/{index}",
                                       f"torch_autocast.lower_precision_safe_modules[{index}] is {json.dumps(name)}, "
                                       "not a module path: deepspeed.initialize raises ValueError (\"Failed to import "
                                       "lower precision safe module\"); write the class with its package, "
                                       "as in \"torch.nn.Linear\"")
        level = data.get("log_level")
        if isinstance(level, str) and level.lower() not in LOG_LEVELS:
            hint, fix = _did_you_mean(level.lower(), LOG_LEVELS)
            yield self.finding(document, "/log_level", f"log_level is {json.dumps(level)}, not one of "
                               f"{', '.join(LOG_LEVELS)}: deepspeed.initialize raises ValueError (\"is not one of "
                               f"the valid logging levels\"){hint}", fix=fix)


# runtime/data_pipeline/config.py (0.19.8): a data_sampling block that, enabled (Python's truth of the value),
# asserts a key -> (the key, DeepSpeed's words, what to do)
SAMPLING_REQUIRED = (
    ("curriculum_learning", "curriculum_metrics", "Curriculum learning is enabled, curriculum_metrics must be specified",
     "add the metrics or disable it"),
    ("dynamic_batching", "max_tokens", "Dynamic batching is enabled, so max_tokens must be specified",
     "add max_tokens (the tokens of one batch) or disable it"),
)
# deepspeed/utils/logging.py log_levels (0.19.8), which get_log_level_from_string reads after lower()
LOG_LEVELS = ("debug", "info", "warning", "error", "critical")
# deepspeed/runtime/zero/muon/original_muon.py NS_METHODS (0.19.8)
MUON_NS_METHODS = ("standard", "gram")
