"""The `pipeline` section of a ds_config, judged by the model its consumer builds (DS423).

DeepSpeed 0.19.8 reads the section into `DeepSpeedConfig.pipeline` (`get_pipeline_config`: the
keys are copied over the defaults, none is checked) and only `PipelineEngine` uses it.
`deepspeed.initialize` builds a `PipelineEngine` only when the model passed is a
`PipelineModule` (deepspeed/__init__.py); every other model gets a `DeepSpeedEngine`, which never
looks at the section. The Hugging Face Trainer and Accelerate hand the user's model to
`deepspeed.initialize` and then call the engine's forward, backward and step, which a
`PipelineEngine` refuses ("Only train_batch() is accessible in pipeline mode."): under them the
section can never do anything.
"""

from __future__ import annotations

import ast
import os
import re
from typing import Iterable

from shardshift.context import UnknownContext
from shardshift.document import Document
from shardshift.rules.base import Context, Finding, Related, Rule
from shardshift.user_code import parse as parse_user_code
from shardshift.user_code import walk as walk_nodes

# consumers that run the model through the Hugging Face integration's own training loop
TRAINING_LOOPS = ("trainer", "accelerate", "axolotl")
# callees whose result is certainly not a PipelineModule
NOT_PIPELINE_SUFFIXES = (".from_pretrained", ".from_config", "from_pretrained", "from_config")


def _pipeline_classes(tree: ast.Module) -> set[str]:
    """Names of the classes the file defines that are PipelineModule or derive from it (in the file)."""
    found = {"PipelineModule"}
    classes = [n for n in walk_nodes(tree) if isinstance(n, ast.ClassDef)]
    changed = True
    while changed:
        changed = False
        for node in classes:
            bases = {(ast.unparse(b).rsplit(".", 1)[-1]) for b in node.bases}
            if node.name not in found and bases & found:
                found.add(node.name)
                changed = True
    return found


def _plain_classes(tree: ast.Module, pipeline: set[str]) -> set[str]:
    """Classes the file defines that do not derive from a pipeline class."""
    return {n.name for n in walk_nodes(tree) if isinstance(n, ast.ClassDef) and n.name not in pipeline}


def model_kind(path: str, text: str, callee: str | None) -> str:
    """"pipeline", "plain" or "unknown" for a model built by `callee` (dotted) in the file."""
    if not callee:
        return "unknown"
    try:
        tree = parse_user_code(text)
    except (SyntaxError, ValueError):
        return "unknown"
    last = callee.rsplit(".", 1)[-1]
    pipeline = _pipeline_classes(tree)
    if last in pipeline:
        return "pipeline"
    if callee.endswith(NOT_PIPELINE_SUFFIXES) or last.startswith("AutoModel") or callee.startswith(("torch.nn.", "nn.")):
        return "plain"
    if last in _plain_classes(tree, pipeline):
        return "plain"
    return "unknown"


def _script_models(path: str, context: Context, line: int) -> list[tuple[str, int, str]]:
    """(kind, line, callee) of the model of each deepspeed.initialize call of the script at
    `path` that passes the config at `line` (all its calls when none is on that line)."""
    from shardshift.rules.deepspeed.auto import initialize_calls_of

    found = initialize_calls_of(path, context, line)
    if found is None:
        return []
    text, chosen = found
    out = []
    for call in chosen:
        model = call.arguments.get("model")
        callee = model.value if model is not None and model.kind == "call" and model.certain else None
        kind = model_kind(path, text, callee) if callee else "unknown"
        out.append((kind, model.line if model is not None else call.line, callee or (model.text if model else "")))
    return out


def model_verdict(document: Document, context: Context) -> tuple[str, list[tuple[str, Related]], list[Related]]:
    """Whether the consumers found for `document` can run a PipelineModule: ("none", ...) when no
    consumer is found, ("pipeline", ...) when one passes a PipelineModule, ("unknown", [], undecided)
    when some model cannot be decided, else ("plain", reasons with their places, [])."""
    from shardshift.rules.deepspeed.auto import consumers_of

    consumers = consumers_of(document, context)
    if not consumers:
        return "none", [], []
    plain: list[tuple[str, Related]] = []
    undecided: list[Related] = []
    for consumer in consumers:
        label = consumer.describe().rsplit(" (", 1)[0]
        if consumer.kind in TRAINING_LOOPS and consumer.file.endswith(".py") and _own_training_step(consumer.file):
            # a Trainer whose training step the script replaces (train_batch on a PipelineModule) may run one
            undecided.append(Related(consumer.file, consumer.line, 1, None, f"{label} reads this file, and the script "
                                     "(or a module it imports) names PipelineModule, train_batch or its own "
                                     "training_step"))
            continue
        if consumer.kind in TRAINING_LOOPS:
            plain.append((f"{label} reads this file and trains through the engine's forward, backward and step, "
                          "which a pipeline engine would refuse (\"Only train_batch() is accessible in pipeline mode.\"), "
                          "so its model is not a PipelineModule",
                          Related(consumer.file, consumer.line, 1, None, f"{label} reads this file")))
            continue
        if consumer.kind == "deepspeed" and consumer.file.endswith(".py"):
            models = _script_models(consumer.file, context, consumer.line)
            if models and all(kind == "plain" for kind, _, _ in models):
                for _, line, callee in models:
                    plain.append((f"deepspeed.initialize gets a model built by {callee}, not a PipelineModule",
                                  Related(consumer.file, line, 1, None, f"the model passed to deepspeed.initialize "
                                          f"is built by {callee}, not a PipelineModule")))
                continue
            if any(kind == "pipeline" for kind, _, _ in models):
                return "pipeline", [], []  # a PipelineModule reads the section
            for _, line, callee in models or [("unknown", consumer.line, "")]:
                undecided.append(Related(consumer.file, line, 1, None, "deepspeed.initialize gets a model built "
                                         f"by {callee or 'code shardshift cannot follow'}"))
            continue
        undecided.append(Related(consumer.file, consumer.line, 1, None, f"{label} reads this file"))
    if undecided:
        return "unknown", [], undecided
    return "plain", plain, []


_OWN_STEP = re.compile(r"\bPipelineModule\b|\.train_batch\s*\(|\bdef\s+training_step\b")


def _own_training_step(path: str) -> bool:
    """Whether a Trainer script, or a local module it imports, shows a PipelineModule, a call of the pipeline
    engine's train_batch or a training_step of its own: then the Trainer's forward-and-backward loop, which
    rules a PipelineModule out, may not be the one that runs."""
    from shardshift.files import read_text
    from shardshift.formats.launch.training_flags import _local_modules_of

    for file in [path, *_local_modules_of(path)]:
        text = read_text(file, 2_000_000, bom=False)
        if text and _OWN_STEP.search(text):
            return True
    return False


class PipelineSectionWithoutPipelineModule(Rule):
    """A `pipeline` section in a ds_config whose model is not a `PipelineModule`: it does nothing.

    ## What it does
    Finds who reads the ds_config (as auto-without-integration does) and reports its `pipeline`
    section when the model cannot be a `PipelineModule`: the file is read by the Hugging Face
    Trainer, Accelerate or an Axolotl-style YAML, or by a script whose `deepspeed.initialize(model=...)`
    gets a model built by `from_pretrained`, an `AutoModel...` class, a `torch.nn` module or a class
    the script defines that does not derive from `PipelineModule`. When no consumer is found, or the
    script's model is built by code shardshift cannot see, the finding is an info that says so.

    ## Why is this bad
    DeepSpeed reads the section only in its `PipelineEngine`, which `deepspeed.initialize` builds
    only for a `PipelineModule`; any other model gets the plain engine and the section is ignored
    without a word (its keys are not even checked). The model is not pipelined: the stages,
    `activation_checkpoint_interval` and the partitioning written there do nothing, and the memory
    the config was sized for is not saved. (Under the Trainer or Accelerate a `PipelineModule`
    would not help: they call the engine's forward and backward, which the pipeline engine refuses.)

    ## Example
    ```json
    {"train_micro_batch_size_per_gpu": "auto", "pipeline": {"activation_checkpoint_interval": 1}}
    ```
    with `TrainingArguments(deepspeed="ds_config.json")`

    ## Use instead
    ```json
    {"train_micro_batch_size_per_gpu": "auto"}
    ```
    or build the model as `deepspeed.pipe.PipelineModule(layers=..., num_stages=...)` and train it
    with `engine.train_batch()`.
    """

    code = "DS423"
    name = "pipeline-section-without-pipeline-module"
    severity = "warning"
    formats = ("deepspeed",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        if not isinstance(data, dict) or not isinstance(data.get("pipeline"), dict):
            return
        verdict, plain, undecided = model_verdict(document, context)
        if verdict == "pipeline":
            return
        if verdict == "none":
            from shardshift.rules.deepspeed.auto import search_stopped

            yield self.finding(document, "/pipeline", "the pipeline section is read only by DeepSpeed's pipeline "
                               "engine, for a model that is a PipelineModule; no script or config that reads this "
                               "file was found, so whether it does anything is unknown", key=True,
                               unknown_context=UnknownContext(
                                   "consumer", search_stopped(document, context) or "nothing found in the checked "
                                   "tree passes this ds_config to deepspeed.initialize, the Trainer or Accelerate",
                                   "check the ds_config together with the training script or config that uses it"))
            return
        if undecided:
            where = undecided[0]
            shown = os.path.relpath(where.file) if os.path.isabs(where.file) else where.file
            yield self.finding(document, "/pipeline", "the pipeline section is read only by DeepSpeed's pipeline "
                               "engine, for a model that is a PipelineModule; whether the model that "
                               f"reaches deepspeed.initialize through {shown}:{where.line} is one could not be decided", key=True,
                               related=undecided[:3], unknown_context=UnknownContext(
                                   "program", f"the code that builds the model in {shown} (or the program a launcher "
                                   "starts) could not be followed",
                                   "check the ds_config together with the files that define the model"))
            return
        why, _ = plain[0]
        yield self.finding(document, "/pipeline", f"the pipeline section does nothing here: {why}; "
                           "deepspeed.initialize builds the plain DeepSpeedEngine for such a model, which never reads "
                           "the section (only the PipelineEngine of a PipelineModule does) and does not check its keys; "
                           "remove it, or build the model as a PipelineModule",
                           key=True, related=[r for _, r in plain[:3]])
