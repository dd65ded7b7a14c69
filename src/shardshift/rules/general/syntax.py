"""Rules about the text itself, for every format: unparseable files and duplicate keys."""

from __future__ import annotations

from typing import Iterable

from shardshift.document import Document
from shardshift.rules.base import Context, Finding, Rule


class UnparseableFile(Rule):
    """The file cannot be parsed, so the framework's loader rejects it or misreads it.

    ## What it does
    Reports a configuration file that is not valid in its format (for a ds_config: JSON, with the
    comments and trailing commas that DeepSpeed's hjson loader accepts), at the first place the
    parser stopped.

    ## Why is this bad
    The training job fails when it loads the file, usually after waiting in a queue: Hugging Face
    Transformers and Accelerate read ds_config files with `json.load`. DeepSpeed's own hjson
    loader is laxer (it reads an unquoted word as a string), which is worse: a missing comma or
    quote then turns a value into a string without a word, and the run fails later. Template
    files with unquoted placeholders (`"train_batch_size": BATCH`) that a script fills in with
    `sed` also land here: check the filled-in file instead.

    ## Example
    ```json
    {"train_batch_size": 32,, "fp16": {"enabled": true}}
    ```

    ## Use instead
    ```json
    {"train_batch_size": 32, "fp16": {"enabled": true}}
    ```
    """

    code = "SS001"
    name = "unparseable-file"
    severity = "error"

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        if document.syntax is not None:
            problem = document.syntax
            yield self.finding(document, None, f"cannot parse {document.format} file: {problem.message}",
                               position=(problem.line, problem.column))


# What each format's loader does with a repeated key.
CONSEQUENCE = {
    "deepspeed": "DeepSpeed rejects the file and json.load keeps only the last value",
    "accelerate": "PyYAML, which Accelerate reads the file with, keeps only the last value",
    "axolotl": "PyYAML, which Axolotl reads the file with, keeps only the last value",
    "plan": "only the last value is read",
}


class DuplicateKey(Rule):
    """A key appears twice in the same object.

    ## What it does
    Reports every repeated key after the first in one JSON object.

    ## Why is this bad
    DeepSpeed's own file loader rejects duplicate keys, while Hugging Face Transformers and
    Accelerate read the file with `json.load`, which silently keeps the last value. The same file
    therefore means different things, or nothing, depending on who loads it. Accelerate and
    Axolotl read their YAML with PyYAML, which also keeps the last value without a word: the
    first one, often the one a reader of the file sees, does nothing.

    ## Example
    ```json
    {"train_micro_batch_size_per_gpu": 4, "train_micro_batch_size_per_gpu": 8}
    ```

    ## Use instead
    ```json
    {"train_micro_batch_size_per_gpu": 8}
    ```
    """

    code = "SS002"
    name = "duplicate-key"
    severity = "error"

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        if document.root is None:
            return
        for node in document.root.walk():
            seen: dict[str, int] = {}
            for member in node.members:
                if member.key in seen:
                    pointer = member.value.pointer
                    yield self.finding(
                        document, pointer,
                        f"key {member.key!r} is repeated (first at line {seen[member.key]}); "
                        f"{CONSEQUENCE.get(document.format, CONSEQUENCE['deepspeed'])}; remove one of them",
                        position=(member.line, member.column))
                else:
                    seen[member.key] = member.line
