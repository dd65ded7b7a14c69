"""SS006: a checked file names a file outside the checked tree, which is not read."""

from __future__ import annotations

import os
from typing import Iterable

from shardshift.document import Document
from shardshift.rules.base import Context, Finding, Rule


class ReferenceOutsideTree(Rule):
    """A checked file names a file outside the checked tree; shardshift does not read it.

    ## What it does
    Reports, as an info, a path a checked file names as part of the same run (a launch script's
    `--deepspeed /etc/train/ds.json`, an Accelerate YAML's `deepspeed_config_file`, a
    `TrainingArguments(deepspeed=...)` path) that resolves to a file outside the checked tree:
    the folders given to `check`, and the repository of each file given. That file is not opened,
    so the settings it holds are not judged with the run. `--follow-outside` (or
    `follow-outside = true` in `[tool.shardshift]`) reads it.

    ## Why is this bad
    A check run in CI or a pre-commit hook reads what the repository holds, not what a path on
    the machine that runs it happens to name: the file may be another user's, a secret, a device
    or a FIFO, and its contents would end up in the report. The run still depends on that file,
    so its settings are unknown to the check.

    ## Example
    ```sh
    deepspeed train.py --deepspeed /etc/cluster/ds_config.json
    ```

    ## Use instead
    ```sh
    deepspeed train.py --deepspeed configs/ds_config.json   # kept in the repository
    ```
    """

    code = "SS006"
    name = "reference-outside-tree"
    severity = "info"
    formats = ()

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        if context.follow_outside or not context.tree:
            return
        from shardshift.check import inside_tree

        for reference in document.references:
            if reference.resolved is None or inside_tree(reference.resolved, context):
                continue
            where = reference.where
            yield self.finding(document, where.pointer,
                               f"names {reference.target}, a file outside the checked tree "
                               f"({', '.join(os.path.relpath(t) if t.startswith(os.getcwd()) else t for t in context.tree)}): "
                               "it is not read, so the settings it holds are not judged with this run",
                               fix="--follow-outside", position=(where.line, where.column))
