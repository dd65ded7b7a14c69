"""Rules about the text itself, for every format: unparseable files, hjson-only syntax, duplicate keys."""

from __future__ import annotations

from typing import Iterable

from shardshift.document import Document
from shardshift.rules.base import Context, Finding, Related, Rule
from shardshift.source import Member


class UnparseableFile(Rule):
    """The file cannot be parsed, so the framework's loader rejects it or misreads it.

    ## What it does
    Reports a configuration file that is not valid in its format, at the first place the parser
    stopped. For a ds_config that means text DeepSpeed itself cannot load: shardshift reads it
    the way DeepSpeed's loader (hjson) does, so what hjson accepts but strict JSON does not
    (unquoted words, newline-separated members) is SS004 instead, and checked further.

    ## Why is this bad
    The training job fails when it loads the file, usually after waiting in a queue. A template
    whose placeholders hjson cannot read (`{BATCH_SIZE}` where a value should be, which hjson
    takes for an object with a bad key) lands here too: check the filled-in file instead.

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
            message, unknown = f"cannot parse {document.format} file: {problem.message}", None
            if document.format in ("megatron", "launch") and not document.path.endswith((".args", ".txt")):
                # the reader that failed is shardshift's grammar of launch scripts; the one that runs the
                # script is bash, asked to read it without running it (`bash -n`)
                verdict = bash_reads(document.text)
                from shardshift.context import UnknownContext

                if verdict is True:  # a construct the grammar lacks (or past its bound): bash reads it
                    unknown = UnknownContext(
                        "reader", f"the launches in this script: bash reads it, but shardshift's grammar of launch "
                                  f"scripts stops at line {problem.line} ({problem.message}), so they are not checked",
                        "check the launch command in a simpler script, or name its settings with --env")
                    message = f"shardshift cannot read this {document.format} script: {problem.message}"
                elif verdict is None:
                    unknown = UnknownContext(
                        "reader", "whether bash reads this script: shardshift's grammar of launch scripts stops "
                                  "here, and bash could not be asked", f"run `bash -n {document.path}` to check it")
                else:
                    message += f"; bash -n refuses it too: {verdict}"
            if problem.bound and unknown is None:  # the framework may well read what shardshift refuses
                from shardshift.context import UnknownContext

                unknown = UnknownContext("reader", f"whether {document.format} reads this file: shardshift stops at "
                                                   "its own bound here", "simplify the file, or check it another way")
            yield self.finding(document, None, message, position=(problem.line, problem.column),
                               unknown_context=unknown)


def bash_reads(text: str) -> bool | str | None:
    """Whether bash reads a script: True, the first line of its refusal, or None when bash is not
    there or does not answer in time. `bash -n` reads the commands without running any."""
    import shutil
    import subprocess

    bash = shutil.which("bash")
    if bash is None:
        return None
    try:
        done = subprocess.run([bash, "-n"], input=text.encode("utf-8", "replace"), capture_output=True,
                              timeout=5, env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"})
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode == 0:
        return True
    refusal = done.stderr.decode("utf-8", "replace").strip().splitlines()
    return (refusal[0] if refusal else f"exit status {done.returncode}")[:200]


class HjsonOnlySyntax(Rule):
    """The ds_config uses hjson-only syntax that `json.load` (Transformers, Accelerate) refuses.

    ## What it does
    Reports, at the first place, a ds_config written in a form that DeepSpeed's own loader (hjson)
    reads but strict JSON does not: a string or key without quotes, members or array elements
    separated by newlines instead of commas, a single-quoted or `\'\'\'` multi-line string, a root
    object without braces, an empty file, an escape JSON does not have (`\\'`), digits that are
    not ASCII. The message counts every such place in the file. The file is still checked: the
    values are read as hjson reads them, so an unquoted template placeholder
    (`"train_batch_size": CONFIG_BATCH_SIZE`) is the string "CONFIG_BATCH_SIZE" and gets the
    findings DeepSpeed's own validation is about, too.

    Comments (`//`, `#`, `/* */`) and trailing commas are not reported: `json.load` refuses them
    as well, but they are the common way to annotate a ds_config, and shardshift accepted them
    silently before this rule existed; a finding on every annotated file would bury the forms
    that change what a value is.

    An error where a consumer that opens the file with `json.load` is found (it always refuses the
    file); an info when no consumer is found; nothing when only DeepSpeed's own loader reads it.

    ## Why is this bad
    DeepSpeed opens a config path with `hjson.load`, so `deepspeed --deepspeed_config ds.json`
    accepts the file. The Hugging Face Trainer (`TrainingArguments(deepspeed="ds.json")`) and
    Accelerate (`deepspeed_config_file`) open the same path with `json.load` and fail with
    `JSONDecodeError` before DeepSpeed sees it. And hjson's laxness changes meaning silently: an
    unquoted value runs to the end of the line, so `"lr": 1e-4 x,` or a forgotten quote becomes
    a string, and an unquoted placeholder that a script was meant to fill in is read as text.

    ## Example
    ```json
    {
      "train_batch_size": CONFIG_BATCH_SIZE
      "zero_optimization": {stage: 2}
    }
    ```

    ## Use instead
    ```json
    {
      "train_batch_size": 32,
      "zero_optimization": {"stage": 2}
    }
    ```
    """

    code = "SS004"
    name = "hjson-only-syntax"
    severity = "error"  # where json.load opens the file (the consumer found), it always refuses it

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        forms = document.root.hjson_forms if document.root is not None else None
        if not forms:
            return
        from shardshift.jsonc import FORMS

        refused = [f for f in forms if f[0] != "non-finite"]
        if not refused:
            yield from self._non_finite(document, forms)
            return
        forms = refused

        form, line, column = forms[0]
        others = sorted({FORMS[f] for f, _, _ in forms[1:]} - {FORMS[form]})
        count = f"{len(forms)} such places in this file" if len(forms) > 1 else "the only such place in this file"
        message = (f"hjson-only syntax ({FORMS[form]}): DeepSpeed's own loader (hjson) reads it, but json.load, "
                   "which the Hugging Face Trainer and Accelerate use to open a ds_config path, refuses the file; "
                   f"{count}")
        if others:
            message += f" (also: {'; '.join(others)})"
        if document.format != "deepspeed":
            yield self.finding(document, None, message, position=(line, column))
            return
        # json.load refuses the file only where the consumer opens it with json.load: ask who does
        from shardshift.context import UnknownContext
        from shardshift.rules.deepspeed.auto import consumers_of

        readers = consumers_of(document, context)
        by_json = [c for c in readers if c.loader == "json"]
        if by_json:
            yield self.finding(document, None, message, position=(line, column), related=[
                Related(c.file, c.line, 1, None, f"{c.describe()} opens it with json.load") for c in by_json])
        elif not readers:
            yield self.finding(document, None, message, position=(line, column), unknown_context=UnknownContext(
                "consumer", f"no file in the checked tree passes {document.path} to a program, so whether json.load "
                "or DeepSpeed's hjson opens it is not known",
                "check the config together with the script, launch command or YAML that uses it"))


    def _non_finite(self, document: Document, forms: list) -> Iterable[Finding]:
        """Only bare NaN/Infinity tokens: json.load reads each as a float, hjson as a string (with what follows
        it on the line): no loader refuses the file, but the value depends on which one opens it."""
        _, line, column = forms[0]
        count = f"{len(forms)} such places in this file" if len(forms) > 1 else "the only such place in this file"
        yield self.finding(document, None, "a bare NaN or Infinity: json.load, which the Hugging Face Trainer and "
                           "Accelerate use to open a ds_config path, reads it as a float, but DeepSpeed's own loader "
                           "(hjson) reads it as a string, so the value depends on which loader opens the file; write "
                           f"a finite number; {count}", position=(line, column), severity="info")


# What each format's loader does with a repeated key.
CONSEQUENCE = {
    "deepspeed": "DeepSpeed rejects the file and json.load keeps only the last value",
    "accelerate": "PyYAML, which Accelerate reads the file with, keeps only the last value",
    "axolotl": "PyYAML, which Axolotl reads the file with, keeps only the last value",
    "plan": "only the last value is read",
}


# formats whose loader keeps the last of repeated keys without a word (PyYAML, the Plan's reader)
LAST_VALUE_WINS = frozenset({"accelerate", "axolotl", "plan"})


def _plain(node) -> tuple:
    """A value with its type, so that 1, 1.0 and true differ as the program sees them."""
    value = node.to_python()

    def typed(item):
        if isinstance(item, dict):
            return ("dict", tuple((k, typed(v)) for k, v in item.items()))
        if isinstance(item, list):
            return ("list", tuple(typed(v) for v in item))
        return (type(item).__name__, item)

    return typed(value)


def _shown(node) -> str:
    import json

    text = json.dumps(node.to_python(), default=str)
    return text if len(text) <= 40 else text[:37] + "..."


class DuplicateKey(Rule):
    """A key appears twice in the same object.

    ## What it does
    Reports every repeated key after the first in one JSON object.

    ## Why is this bad
    DeepSpeed's own file loader rejects duplicate keys, while Hugging Face Transformers and
    Accelerate read the file with `json.load`, which silently keeps the last value. The same file
    therefore means different things, or nothing, depending on who loads it (an error). Accelerate
    and Axolotl read their YAML with PyYAML, which keeps the last value without a word: where the
    two values differ, the first one, often the one a reader of the file sees, does nothing (a
    warning); where they are the same value, the repeat changes nothing (an info).

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
            members = node.members
            if len(members) < 2 or len({m.key for m in members}) == len(members):
                continue  # no repeated key here (the common case, decided at C speed)
            seen: dict[str, Member] = {}
            for member in members:
                first = seen.get(member.key)
                if first is None:
                    seen[member.key] = member
                    continue
                pointer = member.value.pointer
                consequence = CONSEQUENCE.get(document.format, CONSEQUENCE["deepspeed"])
                severity = None
                if document.format in LAST_VALUE_WINS:
                    # the loader keeps the last value without a word: a silent change where the values
                    # differ, nothing at all where they are the same value
                    kept, dropped = _plain(member.value), _plain(first.value)
                    if kept == dropped:
                        severity = "info"
                        consequence += f", the same value ({_shown(member.value)}) as the first: the repeat changes nothing"
                    else:
                        severity = "warning"
                        consequence += (f" ({_shown(member.value)}); the first ({_shown(first.value)}) is never "
                                        "read")
                yield self.finding(
                    document, pointer,
                    f"key {member.key!r} is repeated (first at line {first.line}); {consequence}; remove one of them",
                    position=(member.line, member.column), severity=severity)
