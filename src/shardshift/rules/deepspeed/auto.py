"""`"auto"` values in a ds_config, judged by who reads the file.

Plain DeepSpeed has no `"auto"`: its strict (pydantic) sections drop the key and use the default,
its permissive sections keep the string and fail where they use it. Only the Hugging Face
integration fills `"auto"` in: the Trainer (`HfTrainerDeepSpeedConfig.trainer_config_process`
and `trainer_config_finalize`) and Accelerate (`DeepSpeedPlugin.__post_init__`,
`Accelerator._prepare_deepspeed`), which raises ValueError for any `"auto"` left after that.

So the rules first find the file's consumers (`consumers_of`): an Accelerate YAML whose
`deepspeed_config_file` names it, an Axolotl (or LLaMA-Factory) YAML with `deepspeed:`, a Python
script that passes it to `TrainingArguments(deepspeed=...)`, `HfDeepSpeedConfig`,
`DeepSpeedPlugin` or `deepspeed.initialize` (also through a constant, an argparse default or an
HfArgumentParser dataclass default), or a shell script with `--deepspeed <file>` /
`--deepspeed_config <file>` / `--deepspeed_config_file <file>` (read with the Megatron launch
script reader, formats/shell_refs.py: variables, arrays, `${X:-default}`, branches). They are
looked for among the documents of the run and in the files of the file's repository (the nearest
directory with `.git`, else the file's own directory), with a plain text search for the file name
(or a `--deepspeed*` flag with a `$` value) before anything is parsed. A path decided at run time
is an "undecided" consumer (`undecided_consumers_of`), never counted as one that reads the file.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import Any, Iterable

from shardshift.context import UnknownContext
from shardshift.context.tree import HINTS
from shardshift.document import Document
from shardshift.rules.base import Context, Finding, Related, Rule
from shardshift.source import join_pointer

# "auto" keys the Hugging Face integration fills in, with where the value comes from.
HF_FILLED: dict[str, str] = {
    "/train_micro_batch_size_per_gpu": "per_device_train_batch_size (Trainer), the DataLoader batch size (Accelerate)",
    "/gradient_accumulation_steps": "gradient_accumulation_steps",
    "/train_batch_size": "micro batch × accumulation × world size",
    "/gradient_clipping": "max_grad_norm (Trainer) or 1.0 (Accelerate)",
    "/optimizer/params/lr": "learning_rate",
    "/optimizer/params/betas": "adam_beta1, adam_beta2",
    "/optimizer/params/eps": "adam_epsilon",
    "/optimizer/params/weight_decay": "weight_decay",
    "/scheduler/params/warmup_min_lr": "0",
    "/scheduler/params/warmup_max_lr": "learning_rate",
    "/scheduler/params/warmup_num_steps": "warmup_steps",
    "/scheduler/params/total_num_steps": "the number of training steps",
    "/fp16/enabled": "fp16 / mixed_precision",
    "/bf16/enabled": "bf16 / mixed_precision",
    "/amp/enabled": "fp16_backend",
    "/amp/opt_level": "fp16_opt_level",
    "/zero_optimization/reduce_bucket_size": "hidden_size²",
    "/zero_optimization/stage3_prefetch_bucket_size": "0.9 × hidden_size²",
    "/zero_optimization/stage3_param_persistence_threshold": "10 × hidden_size",
    "/zero_optimization/stage": "Accelerate's zero_stage (default 2)",
    "/zero_optimization/offload_optimizer/device": "Accelerate's offload_optimizer_device",
    "/zero_optimization/offload_param/device": "Accelerate's offload_param_device",
    "/zero_optimization/offload_optimizer/nvme_path": "Accelerate's offload_optimizer_nvme_path",
    "/zero_optimization/offload_param/nvme_path": "Accelerate's offload_param_nvme_path",
    "/zero_optimization/stage3_gather_16bit_weights_on_model_save": "Accelerate's zero3_save_16bit_model",
}

# Keys that Accelerate's DeepSpeedPlugin overwrites whatever the file says (its __post_init__ sets
# steps_per_print to inf to silence DeepSpeed's logging): the Trainer, `accelerate launch` and Axolotl
# all build one, so an "auto" there is never filled and never refused. HfDeepSpeedConfig alone does not.
PLUGIN_OVERWRITTEN = {"/steps_per_print"}
THROUGH_PLUGIN = ("trainer", "accelerate", "axolotl", "shell")

# Keys where "auto" is a real DeepSpeed value (its own default): fine for plain DeepSpeed.
NATIVE_AUTO = {
    "/pipeline/stages", "/zero_optimization/zenflow/select_strategy", "/zero_optimization/zenflow/select_interval",
    "/zero_optimization/zenflow/update_interval", "/data_types/keep_in_fp32_modules", "/expert_parallel/top_k",
    "/expert_parallel/score_func", "/expert_parallel/score_apply", "/expert_parallel/combine_impl",
    "/expert_parallel/row_weighting_impl",
}

# What plain DeepSpeed does with "auto" in permissive places it checks early.
PLAIN_FAILURE = {
    "/train_batch_size": "fails while parsing the config (TypeError: '>' between 'str' and 'int')",
    "/train_micro_batch_size_per_gpu": "fails while parsing the config (TypeError: '>' between 'str' and 'int')",
    "/gradient_accumulation_steps": "fails while parsing the config (TypeError: '>' between 'str' and 'int')",
    "/gradient_clipping": "keeps the string and fails with TypeError at the first optimizer step",
    "/wall_clock_breakdown": "fails while parsing the config (TypeError)",
    "/communication_data_type": "fails while parsing the config (ValueError: Invalid communication_data_type)",
    "/scheduler/params/warmup_num_steps": "fails in deepspeed.initialize (ValueError: warmup_num_steps must be a "
                                          "positive integer)",
    "/optimizer/type": "fails in deepspeed.initialize (auto is not a supported DeepSpeed Optimizer)",
    "/scheduler/type": "fails in deepspeed.initialize (DeepSpeed does not recognize LR scheduler auto)",
}

HF_KINDS = {"trainer": "the Hugging Face Trainer", "hf": "HfDeepSpeedConfig", "accelerate": "Accelerate",
            "axolotl": "an Axolotl-style YAML (deepspeed:)", "shell": "a launcher passing --deepspeed"}

SCAN_SUFFIXES = (".py", ".sh", ".bash", ".zsh", ".slurm", ".sbatch", ".job", ".yaml", ".yml", ".args", ".cmd", ".json")
SCAN_MAX_BYTES = 1_000_000
SCAN_MAX_JSON_BYTES = 65_536  # a JSON of training arguments is small; data files are not read
# A flag and its value; the value is matched in a lookahead so that `--deepspeed --deepspeed_config
# ds.json` yields both flags.
SHELL_FLAG = re.compile(r"--(deepspeed_config_file|deepspeed_config|deepscale_config|deepspeed)\b"
                        r"(?=(?:\s*=\s*|(?:\s|\\\n)+)([\"']?)([^\s\"'`;|&()]+)\2)")
# `deepspeed=` given something other than a string literal (TrainingArguments(deepspeed=args.ds)).
PYTHON_RUNTIME = HINTS["deepspeed-runtime"]
# Folders of launch scripts that run from the directory above (`bash scripts/train.sh`).
LAUNCH_DIRS = {"scripts", "script", "bin", "launch", "launchers", "slurm", "jobs", "examples", "run"}
# A flag whose value is a variable: a script that may pass any ds_config.
RUNTIME_FLAG = HINTS["deepspeed-flag-runtime"]
YAML_KEY = re.compile(r"^\s*(deepspeed_config_file|deepspeed)\s*:\s*[\"']?([^\"'#\s]+)", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Consumer:
    """Who reads a ds_config: kind is "trainer", "hf", "accelerate", "axolotl", "shell" (all
    through the Hugging Face integration, json.load) or "deepspeed" (deepspeed.initialize or
    `--deepspeed_config`). `loader` is how the file is parsed: "json" or "hjson"."""

    kind: str
    file: str
    line: int
    loader: str = "json"
    # set for a reference whose path is decided at run time (`--deepspeed $1`): why it is not
    # known. Such a consumer may or may not read the file: `consumers_of` leaves it out.
    unknown: str | None = None

    @property
    def hugging_face(self) -> bool:
        return self.kind != "deepspeed"

    def describe(self) -> str:
        what = HF_KINDS.get(self.kind) or ("deepspeed.initialize" if self.file.endswith(".py") else
                                           "a launcher passing --deepspeed_config")
        return f"{what} ({os.path.relpath(self.file) if os.path.isabs(self.file) else self.file}:{self.line})"


# --- finding the consumers -------------------------------------------------------------------

_CACHE: dict[int, tuple[list, dict[str, list[Consumer]]]] = {}


def consumers_of(document: Document, context: Context) -> list[Consumer]:
    """Everything found that reads `document` (empty when it is checked alone)."""
    return [c for c in _all_consumers(document, context) if c.unknown is None]


def undecided_consumers_of(document: Document, context: Context) -> list[Consumer]:
    """The references found whose path is decided at run time (`--deepspeed $1`,
    `TrainingArguments(deepspeed=args.cfg)`) and may be `document`: scripts in the file's own
    directory or one of its ancestors up to the repository root."""
    return [c for c in _all_consumers(document, context) if c.unknown is not None]


def _all_consumers(document: Document, context: Context) -> list[Consumer]:
    documents = context.documents or [document]
    cached = _CACHE.get(id(documents))
    if cached is None or cached[0] is not documents:
        _CACHE.clear()
        cached = (documents, _index(documents, getattr(context, "roots", ())))
        _CACHE[id(documents)] = cached
    return cached[1].get(_real(document.path), [])


_STOPPED: dict[str, str] = {}  # scan root -> the folder where its listing stopped (tree.MAX_WALK_FILES)


def search_stopped(document: Document, context: Context) -> str | None:
    """Why "no consumer found" is no finding that nothing reads the file: the search stopped at its
    bound in the file's tree (the words to say so), or None when it covered the tree."""
    _all_consumers(document, context)
    root = scan_root(document.path, getattr(context, "roots", ()))
    stopped = _STOPPED.get(root)
    if stopped is None:
        return None
    from shardshift.context.tree import MAX_WALK_FILES

    return (f"the search for the files that use it stopped after {MAX_WALK_FILES:,} files (at "
            f"{os.path.relpath(stopped)}), so files beyond it were not looked at")


def _real(path: str) -> str:
    return os.path.realpath(path)


def initialize_calls_of(path: str, context: Context, line: int) -> tuple[str, list] | None:
    """(the script's text, its deepspeed.initialize calls that pass the config at `line`, or all of them when
    none is on that line), read once per check (the document given to check, else the file), or None when the
    script cannot be read."""
    from shardshift.files import read_text
    from shardshift.formats.python_script import reader

    document = next((d for d in context.documents if d.path == path and d.format == "python"), None)
    text = document.text if document is not None else read_text(path, errors="strict", bom=False)
    if text is None:
        return None
    if document is None:
        document = reader.read(text, path)
    calls = getattr(document.data, "initialize_calls", [])
    return text, [c for c in calls if c.config is not None and c.config.line == line] or calls


def repository_root(path: str) -> str:
    """The nearest ancestor directory with `.git` (at most 8 levels up), else the file's directory."""
    directory = os.path.dirname(_real(path))
    probe = directory
    for _ in range(8):
        if os.path.exists(os.path.join(probe, ".git")):
            return probe
        parent = os.path.dirname(probe)
        if parent == probe:
            break
        probe = parent
    return directory


def scan_root(path: str, checked: Iterable[str] = ()) -> str:
    """Where the consumers of the file at `path` are looked for: its repository (`repository_root`),
    else the outermost directory given to `check` that holds it (the checked tree), else its own
    directory."""
    root = repository_root(path)
    if os.path.exists(os.path.join(root, ".git")):
        return root
    real = _real(path)
    holding = [c for c in checked if real.startswith(c.rstrip(os.sep) + os.sep)]
    return min(holding, key=len) if holding else root


def _index(documents: list[Document], checked: Iterable[str] = ()) -> dict[str, list[Consumer]]:
    from shardshift.context.tree import tree_of

    targets: dict[str, list[str]] = {}
    roots: set[str] = set()
    checked = list(checked)
    for document in documents:
        if document.format == "deepspeed" and document.path and os.path.isfile(document.path):
            targets.setdefault(os.path.basename(document.path), []).append(_real(document.path))
            roots.add(scan_root(document.path, checked))
    if not targets:
        return {}
    candidates: dict[str, Document | None] = {}
    for document in documents:
        if document.format != "deepspeed" and document.path:
            candidates[_real(document.path)] = document
    _STOPPED.clear()
    for root in sorted(roots):
        # the repository's listing says which files mention a target's name, or pass `deepspeed=` a
        # value decided at run time: only those are read
        tree = tree_of(root)
        found = {f for name in targets for f in tree.naming(name)} | set(tree.hinted("deepspeed-runtime")) | \
            set(tree.hinted("deepspeed-flag-runtime"))
        for file in sorted(found):
            if file.endswith(SCAN_SUFFIXES) or "." not in os.path.basename(file):
                candidates.setdefault(_real(file), None)
        if tree.stopped is not None:
            _STOPPED[root] = os.path.join(root, tree.stopped)  # said in every finding that rests on finding no consumer
    index: dict[str, list[Consumer]] = {}
    names = tuple(targets)
    target_dirs = {os.path.dirname(t) for paths in targets.values() for t in paths}
    for path, document in candidates.items():
        scope = _scope(path)
        runtime = any(d == scope or d.startswith(scope + os.sep) for d in target_dirs)
        for reference, consumer, alternatives in _references(path, document, names, runtime):
            hits: list[str] = []
            for written in (reference, *alternatives):
                hits += [t for t in _resolve(written, path, targets) if t not in hits]
            if consumer.unknown is not None:
                if hits:
                    consumer = Consumer(consumer.kind, consumer.file, consumer.line, consumer.loader)
                else:
                    hits = _may_name(reference, path, targets)
            for target in hits:
                index.setdefault(target, [])
                if consumer not in index[target]:
                    index[target].append(consumer)
    return index


def _may_name(reference: str, referrer: str, targets: dict[str, list[str]]) -> list[str]:
    """The ds_configs a path decided at run time may name: those in the referring file's
    directory or below it (the directory above for a `scripts/`-like folder) whose name fits the known part of the path (`${?}` stands for each
    unknown stretch); none when the path names known directories (`$ROOT/configs/ds.json` is
    configs/ds.json, resolved by `_resolve`)."""
    from shardshift.formats.shell_refs import HOLE

    parts = [p.replace("$", HOLE) if "$" in p and HOLE not in p else p for p in _components(reference)] or [HOLE]
    holes = [i for i, p in enumerate(parts) if HOLE in p]
    if not holes:
        return []
    tail = [p for p in parts[holes[-1] + 1:] if p != ".."]
    if len(tail) >= 2:
        return []
    pattern = re.compile(".*".join(re.escape(piece) for piece in parts[-1].split(HOLE)) + r"\Z")
    base = _scope(referrer)
    return [t for paths in targets.values() for t in paths
            if pattern.match(os.path.basename(t))
            and (os.path.dirname(t) == base or os.path.dirname(t).startswith(base + os.sep))]


def _scope(referrer: str) -> str:
    """The directory whose ds_configs a path decided at run time in `referrer` may name."""
    base = os.path.dirname(referrer)
    if os.path.basename(base).lower() in LAUNCH_DIRS:
        base = os.path.dirname(base)  # `scripts/train.sh` is run from the directory above, next to configs/
    return base


def _references(path: str, document: Document | None, names: tuple[str, ...], runtime: bool = True
                ) -> list[tuple[str, Consumer, tuple[str, ...]]]:
    """(path as written, consumer, other paths it may be) for every ds_config reference in one
    file; a path decided at run time has the consumer's `unknown` set. A file that names none of
    the ds_configs is read only when `runtime` (a ds_config lies in its scope, see `_may_name`)."""
    if document is not None:
        text = document.text
    else:
        from shardshift.context.tree import read_text

        try:  # a JSON of training arguments is small: a larger one is data, not read
            if path.endswith(".json") and os.path.getsize(path) > SCAN_MAX_JSON_BYTES:
                return []
        except OSError:
            return []
        # regular files only (a FIFO waits for a writer forever), at most SCAN_MAX_BYTES, each read once per run
        text = read_text(path)
        if text is None:
            return []
    named = any(name in text for name in names)
    if path.endswith(".py"):
        if not named and not (runtime and PYTHON_RUNTIME.search(text)):
            return []  # only a keyword `deepspeed=<not a string>` can name a ds_config decided at run time
        from shardshift.formats import python_script

        facts = document.data if document is not None and document.format == "python" else \
            python_script.read(text, path).data
        found: list[tuple[str, Consumer, tuple[str, ...]]] = []
        for reference in getattr(facts, "references", []):
            expr = reference.expr
            loader = expr.loader or ("hjson" if reference.consumer == "deepspeed" else "json")
            if expr.kind == "str":
                found.append((expr.value, Consumer(reference.consumer, path, expr.line, loader), ()))
            elif expr.kind == "unknown" and reference.runtime:
                found.append(("${?}", Consumer(reference.consumer, path, expr.line, loader,
                                               f"{expr.text} is decided at run time"), ()))
        return found
    if path.endswith(".json"):
        return _json_references(text, path) if named else []
    if path.endswith((".yaml", ".yml")):
        if not named:
            return []
        found = []
        for match in YAML_KEY.finditer(text):
            kind = "accelerate" if match.group(1) == "deepspeed_config_file" else "axolotl"
            found.append((match.group(2), Consumer(kind, path, text.count("\n", 0, match.start(2)) + 1), ()))
        return found
    if not named and not (runtime and RUNTIME_FLAG.search(text)):
        return []
    found = []
    covered: set[int] = set()
    if not path.endswith((".args", ".cmd")):
        from shardshift.formats.shell_refs import deepspeed_references

        for reference in deepspeed_references(text, path):
            loader = "hjson" if reference.kind == "deepspeed" else "json"
            covered.add(reference.line)
            if reference.value is not None:
                found.append((reference.value, Consumer(reference.kind, path, reference.line, loader), ()))
            else:
                found.append((reference.text, Consumer(reference.kind, path, reference.line, loader,
                                                       reference.unknown.reason if reference.unknown else "unknown"),
                              reference.alternatives))
    if not named:
        return found
    for match in SHELL_FLAG.finditer(text):  # what the shell reader did not see (eval strings, argument files)
        value = match.group(3)
        line = text.count("\n", 0, match.start(3)) + 1
        if value.startswith("-") or line in covered or text.count("\n", 0, match.start(1)) + 1 in covered:
            continue
        kind = {"deepspeed": "shell", "deepspeed_config_file": "accelerate"}.get(match.group(1), "deepspeed")
        loader = "hjson" if kind == "deepspeed" else "json"
        found.append((value, Consumer(kind, path, line, loader), ()))
    return found


def _json_references(text: str, path: str) -> list[tuple[str, Consumer, tuple[str, ...]]]:
    """The ds_config named by a JSON file of training arguments (`"deepspeed": "ds.json"`), which
    `HfArgumentParser.parse_json_file` turns into `TrainingArguments(deepspeed=...)`: the Trainer
    reads it."""
    from shardshift.formats.training_args_json import is_training_arguments

    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return []
    if not is_training_arguments(data) or not isinstance(data.get("deepspeed"), str):
        return []
    match = re.search(r'"deepspeed"\s*:', text)
    line = text.count("\n", 0, match.start()) + 1 if match else 1
    return [(data["deepspeed"], Consumer("trainer", path, line), ())]


def _components(path: str) -> list[str]:
    return [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]


def _resolve(reference: str, referrer: str, targets: dict[str, list[str]]) -> list[str]:
    """The ds_configs of this run that a path written in `referrer` names: relative to the
    referrer's directory, any of its ancestors (scripts usually run from the repository root) or
    the current directory; a path with `$VARIABLE` parts by its last components (at least two:
    `configs/ds_config.json`); an absolute path from another machine by the longest path suffix
    that only one of them has (`context.paths.by_suffix`)."""
    name = os.path.basename(reference.replace("\\", "/"))
    candidates = targets.get(name)
    if not candidates:
        return []
    from shardshift.context.paths import anchors as lookup_anchors

    anchors = lookup_anchors(os.path.dirname(referrer))
    if "$" not in reference and "{" not in reference:
        if os.path.isabs(reference):
            resolved = {os.path.normpath(reference)}
        else:
            resolved = {os.path.normpath(os.path.join(anchor, reference)) for anchor in anchors}
        hits = [t for t in candidates if t in resolved]
        if hits:
            return hits
    parts = _components(reference)
    variable = [i for i, p in enumerate(parts) if "$" in p or "{" in p]
    if not variable and os.path.isabs(reference):  # from the author's machine: the longest unique path suffix
        from shardshift.context.paths import by_suffix

        found = by_suffix(reference, candidates)
        return [found] if found is not None else []
    if not variable:
        return []  # a plain relative path names the file it resolves to, and that is not one of ours
    tail = [p for p in (parts[variable[-1] + 1:] if variable else parts) if p != ".."]
    if len(tail) < 2:
        return []  # "$DIR/ds_config.json" could be any ds_config.json
    return [t for t in candidates if _components(t)[-len(tail):] == tail]


# --- what plain DeepSpeed does with "auto" -----------------------------------------------------


def auto_values(document: Document) -> list[str]:
    """Pointers of every "auto" value of a ds_config key: a key of the key table, or a key inside
    an open section (optimizer and scheduler params, apex amp kwargs). Unknown keys are left to
    unknown-key (DS101); lists are not entered."""
    from shardshift.formats.deepspeed.keys import key_index

    rows = key_index()
    found: list[str] = []

    def visit(value: Any, pointer: str, open_section: bool) -> None:
        if isinstance(value, dict):
            for key, child in value.items():
                child_pointer = join_pointer(pointer, key)
                row = rows.get(child_pointer)
                if row is None and not open_section:
                    continue
                visit(child, child_pointer, open_section or (row is not None and row.open))
        elif value == "auto":
            found.append(pointer)

    visit(document.data, "", False)
    return found


def plain_deepspeed_effect(pointer: str) -> str:
    """What plain DeepSpeed does with "auto" at `pointer`."""
    from shardshift.formats.deepspeed.keys import key_index

    if pointer in PLAIN_FAILURE:
        return PLAIN_FAILURE[pointer]
    rows = key_index()
    if pointer.startswith(("/optimizer/params/", "/scheduler/params/")):
        return ("passes the string \"auto\" to the constructor, which fails with TypeError (in deepspeed.initialize or "
                "at the first step)")
    parent = pointer.rsplit("/", 1)[0]
    section = rows.get(parent)
    if section is not None and section.strict:
        row = rows.get(pointer)
        default = json.dumps(row.default) if row is not None else "its default"
        return f"drops the key (strict section) and silently uses the default {default}"
    return "keeps the string \"auto\" and fails (TypeError) or misbehaves where it uses the value"


def _dotted(pointer: str) -> str:
    return pointer[1:].replace("/", ".")


class AutoWithoutIntegration(Rule):
    """`"auto"` in a ds_config that nothing found fills in.

    ## What it does
    Reports the `"auto"` values of a ds_config for which no consumer was found (one finding per
    file, at the first one, with every place as a related location): no Accelerate
    YAML (`deepspeed_config_file`), Axolotl YAML (`deepspeed:`), Python script
    (`TrainingArguments(deepspeed=...)`, `HfDeepSpeedConfig`, `deepspeed.initialize`) or shell
    script (`--deepspeed`, `--deepspeed_config`, `accelerate launch --deepspeed_config_file`) in
    the run or in the file's repository names it. Paths are followed through shell variables,
    arrays and `${X:-default}`, Python constants, argparse defaults (also `args.<dest>`) and
    `HfArgumentParser` dataclass defaults. Says what plain DeepSpeed would do with the key. Keys
    where `"auto"` is a real DeepSpeed value (`pipeline.stages`, the ZenFlow intervals, ...) are
    not reported. When a script in the file's directory (or the directory above its `scripts/`
    folder) passes a path decided at run time (`--deepspeed $1`, `TrainingArguments(
    deepspeed=args.ds)`), the finding says the consumer is unknown instead of that there is none.
    Consumers are looked for in the file's git repository, else in the whole tree given to
    `check`. Either way the consumer is context shardshift could not find, so the finding is an
    info with an unknown consumer (`unknown_context`); a consumer that is found and does not fill
    `"auto"` (plain `deepspeed.initialize`) is auto-not-filled-by-consumer (DS421).

    ## Why is this bad
    Only the Hugging Face integration (Trainer, Accelerate) fills `"auto"` in. Given to plain
    DeepSpeed, a strict section drops the key and uses the default without a word
    (`"stage": "auto"` is stage 0, `"enabled": "auto"` trains in fp32), and a permissive one keeps
    the string and fails later (`"gradient_clipping": "auto"` at the first step). The file is fine
    if the Trainer or Accelerate loads it, which is why this is only an info: check it together
    with the script or launcher config that uses it, and the finding goes away.

    ## Example
    ```json
    {"train_micro_batch_size_per_gpu": 4, "gradient_clipping": "auto", "zero_optimization": {"stage": "auto"}}
    ```
    (checked alone, or used by `deepspeed.initialize(config=...)`)

    ## Use instead
    ```json
    {"train_micro_batch_size_per_gpu": 4, "gradient_clipping": 1.0, "zero_optimization": {"stage": 2}}
    ```
    """

    code = "DS420"
    name = "auto-without-integration"
    severity = "warning"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        if not isinstance(document.data, dict):
            return
        pointers = [p for p in auto_values(document) if p not in NATIVE_AUTO]
        if not pointers or consumers_of(document, context):
            return
        # One finding per file (at the first "auto"), the other places as related locations:
        # a Hugging Face config checked alone has a dozen of them, all with one cause.
        name = os.path.basename(document.path)
        unfillable = [p for p in pointers if p not in HF_FILLED]
        keys = ", ".join(_dotted(p) for p in pointers[:6]) + (f" and {len(pointers) - 6} more" if len(pointers) > 6 else "")
        count = f"{len(pointers)} value{'s are' if len(pointers) > 1 else ' is'} \"auto\" ({keys})"
        who = "only the Hugging Face Trainer or Accelerate fills them in"
        if unfillable:
            who += f" (and not even they fill {', '.join(_dotted(p) for p in unfillable)})"
        related = []
        for pointer in pointers:
            line, column = document.position(pointer)
            related.append(Related(document.path, line, column, pointer,
                                   f"{_dotted(pointer)}: plain DeepSpeed {plain_deepspeed_effect(pointer)}"))
        undecided = undecided_consumers_of(document, context)
        if undecided:
            first = undecided[0]
            for consumer in undecided[:3]:
                related.append(Related(consumer.file, consumer.line, 1, None,
                                       f"{consumer.describe().rsplit(' (', 1)[0]} gets a ds_config path decided at "
                                       f"run time ({consumer.unknown})"))
            yield self.finding(
                document, pointers[0],
                f"{count}: {who}; the ds_config path given to {first.describe()} is decided at run time "
                f"({first.unknown}), so whether it is {name} (and the \"auto\" values are filled) is unknown; if "
                f"{name} is given to plain DeepSpeed instead, it {plain_deepspeed_effect(pointers[0])} for "
                f"{_dotted(pointers[0])}; set values, or pass {name} literally where the script names it",
                related=related, unknown_context=UnknownContext(
                    "consumer", f"the ds_config path given to {first.describe()} is decided at run time, so whether "
                                f"it reads {name} is not known",
                    f"pass {name} literally where the script names it, or check {name} together with the "
                    "launch command that fills the path"))
            return
        stopped = search_stopped(document, context)
        found = (f"and {stopped}" if stopped else "and nothing found with this run passes " + name + " to them")
        yield self.finding(
            document, pointers[0],
            f"{count}: {who}, {found}; plain DeepSpeed "
            f"{plain_deepspeed_effect(pointers[0])} for {_dotted(pointers[0])} (see the related locations for the "
            f"others); set values, or check {name} together with the script or launcher config that uses it",
            related=related, unknown_context=UnknownContext(
                "consumer", (stopped if stopped else f"no file in the checked tree passes {name} to a program")
                + ", so whether a Hugging Face consumer fills its \"auto\" values is not known",
                f"check {name} together with the script, launch command or YAML that uses it (the directory that "
                "holds both)"))


class AutoNotFilledByConsumer(Rule):
    """`"auto"` that the tools reading this ds_config do not fill in.

    ## What it does
    Finds who reads the ds_config (see auto-without-integration) and reports each `"auto"` that
    none of them fills: with the Hugging Face Trainer, Accelerate or Axolotl, a key outside the
    list they fill (batch sizes, clipping, optimizer lr/betas/eps/weight_decay, scheduler warmup
    and total steps, fp16/bf16, the ZeRO stage and offload devices, the hidden-size-based bucket
    sizes); with plain `deepspeed.initialize`, every `"auto"`. `steps_per_print` is not reported
    when every consumer goes through Accelerate's DeepSpeed plugin (the Trainer, `accelerate launch`,
    Axolotl): the plugin overwrites it with infinity before it fills anything.

    ## Why is this bad
    Accelerate raises `ValueError: ... not found in kwargs. Please specify ... without auto` for
    any `"auto"` it cannot fill, at `prepare()`; the legacy spelling `"bfloat16": {"enabled":
    "auto"}` is one (only `bf16` is filled). Plain DeepSpeed drops the key to its default in strict
    sections (`"stage": "auto"` is stage 0) or fails later in permissive ones.

    ## Example
    ```json
    {"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 3, "sub_group_size": "auto"}}
    ```
    with `TrainingArguments(deepspeed="ds_config.json")`

    ## Use instead
    ```json
    {"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 3, "sub_group_size": 1000000000}}
    ```
    """

    code = "DS421"
    name = "auto-not-filled-by-consumer"
    severity = "error"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        if not isinstance(document.data, dict):
            return
        pointers = auto_values(document)
        if not pointers:
            return
        consumers = consumers_of(document, context)
        if not consumers:
            return
        hugging_face = [c for c in consumers if c.hugging_face]
        related = [Related(c.file, c.line, 1, None, f"{c.describe().rsplit(' (', 1)[0]} reads this file")
                   for c in (hugging_face or consumers)[:3]]
        for pointer in pointers:
            if hugging_face:
                if pointer in HF_FILLED:
                    continue
                if pointer in PLUGIN_OVERWRITTEN and all(c.kind in THROUGH_PLUGIN for c in hugging_face):
                    continue
                who = hugging_face[0].describe()
                hint = " (the Trainer and Accelerate fill only bf16.enabled)" if pointer == "/bfloat16/enabled" else ""
                yield self.finding(
                    document, pointer,
                    f"{_dotted(pointer)} is \"auto\" and this file is read by {who}, which does not fill this key"
                    f"{hint}: Accelerate raises ValueError (\"`{_dotted(pointer)}` not found in kwargs\") when it "
                    "prepares the model; set a value", related=related)
            elif pointer not in NATIVE_AUTO:
                who = consumers[0].describe()
                yield self.finding(
                    document, pointer,
                    f"{_dotted(pointer)} is \"auto\" and this file is read by {who}, which does not fill \"auto\" "
                    f"in: DeepSpeed {plain_deepspeed_effect(pointer)}; set a value, or load the file through the "
                    "Hugging Face Trainer or Accelerate", related=related)


class ActivationCheckpointingWithHuggingFace(Rule):
    """An `activation_checkpointing` section in a ds_config that only the Hugging Face integration reads.

    ## What it does
    Finds who reads the ds_config (as auto-without-integration does) and reports an
    `activation_checkpointing` section when every consumer found is the Hugging Face Trainer,
    Accelerate or Axolotl. DeepSpeed applies the section only when the model's own code calls
    `deepspeed.checkpointing.configure(...)` and `deepspeed.checkpointing.checkpoint(...)`
    (Megatron-DeepSpeed does); the engine never does it by itself.

    ## Why is this bad
    Hugging Face models checkpoint activations with `torch.utils.checkpoint` when
    `gradient_checkpointing` is on (`--gradient_checkpointing`, `model.gradient_checkpointing_enable()`),
    and ignore this section: `partition_activations`, `cpu_checkpointing` and the rest change
    nothing, and the memory the config was sized for is not saved. Nothing says so.

    ## Example
    ```json
    {"train_micro_batch_size_per_gpu": "auto", "activation_checkpointing": {"partition_activations": true}}
    ```
    with `TrainingArguments(deepspeed="ds_config.json")`

    ## Use instead
    ```json
    {"train_micro_batch_size_per_gpu": "auto"}
    ```
    with `TrainingArguments(deepspeed="ds_config.json", gradient_checkpointing=True)`
    """

    code = "DS422"
    name = "activation-checkpointing-with-hugging-face"
    severity = "warning"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        if not isinstance(data, dict) or not isinstance(data.get("activation_checkpointing"), dict):
            return
        consumers = consumers_of(document, context)
        if not consumers or any(not c.hugging_face for c in consumers):
            return  # unknown readers, or a deepspeed.initialize caller whose model may configure it
        related = [Related(c.file, c.line, 1, None, f"{c.describe().rsplit(' (', 1)[0]} reads this file")
                   for c in consumers[:3]]
        yield self.finding(
            document, "/activation_checkpointing",
            f"activation_checkpointing is set but this file is read by {consumers[0].describe()}: DeepSpeed applies "
            "the section only for models that call deepspeed.checkpointing themselves, and Hugging Face models use "
            "torch checkpointing (gradient_checkpointing), so it changes nothing; remove it and turn on "
            "gradient_checkpointing in the training arguments", key=True, related=related)
