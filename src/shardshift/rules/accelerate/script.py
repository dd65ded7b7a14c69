"""Accelerate rules over a launch script: what the script that `accelerate launch` starts does with
the config file's settings (read with `ast`, never run)."""

from __future__ import annotations

import ast
import os
from typing import Iterable

from shardshift.document import Document
from shardshift.rules.base import Context, Finding, Related, Rule
from shardshift.user_code import walk as walk_nodes

PRECISIONS = ("no", "fp16", "bf16", "fp8")


def _accelerator_precisions(path: str) -> list[tuple[str, int, int]]:
    """The literal `mixed_precision=` of each `Accelerator(...)` call in a script: (value, line, column)."""
    from shardshift.context.tree import read_text

    text = read_text(path)
    if text is None or "Accelerator" not in text or "mixed_precision" not in text:
        return []
    from shardshift.user_code import parse

    try:
        tree = parse(text, path)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    found = []
    for node in walk_nodes(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name != "Accelerator":
            continue
        for keyword in node.keywords:
            value = keyword.value
            if keyword.arg == "mixed_precision" and isinstance(value, ast.Constant) and value.value in PRECISIONS:
                found.append((value.value, value.lineno, value.col_offset + 1))
    return found


class ScriptOverridesMixedPrecision(Rule):
    """`Accelerator(mixed_precision=...)` in the script overrides the config file's `mixed_precision`.

    ## What it does
    Reports an `accelerate launch --config_file X.yaml train.py` line when `train.py` builds
    `Accelerator(mixed_precision="...")` with a literal that differs from the precision the launch
    gives (the config file's `mixed_precision`, or `--mixed_precision` on the command line).

    ## Why is this bad
    The launcher passes the precision to the training processes in `ACCELERATE_MIXED_PRECISION`,
    but `AcceleratorState` reads that variable only when the script passes no `mixed_precision`:
    the script's literal wins, without a word. `Accelerator(mixed_precision="no")` trains in full
    precision, whatever the YAML says (and FSDP's mixed-precision policy follows the script's
    value).

    ## Example
    ```yaml
    mixed_precision: bf16
    ```
    with `accelerator = Accelerator(mixed_precision="no")` in the script

    ## Use instead
    `accelerator = Accelerator()`, so that the launch's precision applies (or the same value in
    both).
    """

    code = "AC108"
    name = "script-overrides-mixed-precision"
    severity = "warning"
    formats = ("launch",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        data = document.data
        launch = getattr(data, "launch", None)
        if launch is None or getattr(launch, "launcher", None) != "accelerate launch" or \
                getattr(data, "framework", None) != "accelerate":
            return
        entry = self._entry(document, launch)
        if entry is None:
            return
        calls = _accelerator_precisions(entry)
        if not calls:
            return
        given = launch.options.get("mixed_precision") if isinstance(launch.options, dict) else None
        if given is not None:
            if not isinstance(given, str) or given not in PRECISIONS:
                return
            precision, source, related = given, "--mixed_precision " + given, []
            position = (launch.line, launch.column)
        else:
            found = self._config_precision(document, context)
            if found is None:
                return
            precision, config, reference = found
            source = f"{os.path.basename(config.path)}'s mixed_precision {precision}"
            related = [self.related(config, "/mixed_precision", "the precision the launch gives")]
            position = (reference.where.line, reference.where.column)
        for value, line, column in calls:
            if value == precision:
                continue
            trains = "in full precision (no mixed precision)" if value == "no" else f"in {value}"
            yield self.finding(
                document, None,
                f"{os.path.basename(entry)}:{line} builds Accelerator(mixed_precision=\"{value}\"), which wins over "
                f"{source}: AcceleratorState reads the launch's precision only when the script passes none, so the "
                f"run trains {trains} without a word; drop mixed_precision= from the call to use the launch's, "
                "or make them agree", position=position,
                related=[Related(entry, line, column, None, f"mixed_precision=\"{value}\", the value used"), *related])

    @staticmethod
    def _entry(document: Document, launch) -> str | None:
        script = getattr(launch, "script", None)
        if not isinstance(script, str) or not script.endswith(".py") or not os.path.isfile(document.path):
            return None
        from shardshift.formats.megatron.program import locate

        return locate(document.path, script)

    @staticmethod
    def _config_precision(document: Document, context: Context):
        """(precision, the Accelerate document, the reference) of the launch's `--config_file`."""
        from shardshift.formats import accelerate

        for reference in document.references:
            if reference.role != "accelerate_config" or reference.resolved is None:
                continue
            config = next((d for d in context.documents if d.format == "accelerate" and
                           os.path.realpath(d.path) == os.path.realpath(reference.resolved)), None)
            if config is None:
                from shardshift.context.tree import read_text

                text = read_text(reference.resolved)
                if text is None:
                    continue
                config = accelerate.read(text, reference.resolved)
            data = config.data if config.syntax is None else None
            precision = data.get("mixed_precision") if isinstance(data, dict) else None
            if data is None or data.get("distributed_type") == "DEEPSPEED":
                continue  # DeepSpeed takes its precision from its own config (AC's DeepSpeed rules)
            if isinstance(precision, str) and precision in PRECISIONS:
                return precision, config, reference
        return None
