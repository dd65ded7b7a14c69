"""SS005: a file named on the command line that is not a configuration shardshift reads."""

from __future__ import annotations

from typing import Iterable

from shardshift.document import Document
from shardshift.rules.base import Context, Finding, Rule


class UnrecognisedFile(Rule):
    """A file named on the command line is not a configuration shardshift reads.

    ## What it does
    Reports a file given by name (not found by walking a directory) whose name and content are
    not those of a training configuration shardshift reads: a ds_config, an Accelerate, Axolotl
    or torchtitan config, a Megatron-LM launch script or argument file, FSDP2 or DeepSpeed
    training code, or a Plan. A directory walk skips such files quietly; a pre-commit hook, which
    names every changed file, passes `--skip-unrecognised` to do the same.

    ## Why is this bad
    A CI step that names a file expects it checked. If shardshift skipped it, the step would
    report "all clean" for a file nobody checked: a ds_config holding only `elasticity`, say, or
    a config under a name and in a shape shardshift does not know.

    ## Example
    ```sh
    shardshift check configs/elastic.json   # {"elasticity": {"enabled": true, ...}}
    ```

    ## Use instead
    ```sh
    shardshift check configs/ds_config.json               # a file shardshift reads
    shardshift check --skip-unrecognised $(git diff --name-only)   # when naming files in bulk
    ```
    """

    code = "SS005"
    name = "unrecognised-file"
    severity = "error"
    formats = ("unrecognised",)

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        why = document.data or "it is not a training configuration shardshift reads"
        yield self.finding(document, None, f"named on the command line, but not a configuration shardshift reads: "
                                           f"{why}; it was not checked", position=(1, 1))
