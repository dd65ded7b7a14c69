"""Megatron rules: the flags themselves, as Megatron-LM's argparse parser and the first lines of
validate_args see them (MG001-MG005): a flag the parser does not know, a flag given twice, a
deprecated flag, a value argparse rejects, a required flag that is missing.

Megatron builds its parser with `allow_abbrev=False` and calls the strict `parse_args()`
(megatron/training/arguments.py, parse_args): anything it does not know stops the run with
argparse's "unrecognized arguments" (exit status 2) before any check. The flag table is
formats/megatron/flags.json, dumped from that parser. A launch is judged against the parser of the
program it runs (formats/megatron/program.py): a vendored fork's arguments module and the entry
script's `extra_args_provider`, read statically from the checked tree; where the program or part of
its parser is not there, the findings are infos with the unknown program."""

from __future__ import annotations

from typing import Any, Callable, Iterable

from shardshift.formats.megatron.flags import table
from shardshift.plan import Unknown
from shardshift.rules.base import Context, Finding, Related, Severity
from shardshift.rules.megatron.base import Flags, MegatronRule

# DeepSpeed's own flags (deepspeed.add_config_arguments), which Megatron-DeepSpeed adds to its parser.
DEEPSPEED_OWN = frozenset({"--deepspeed", "--deepspeed_config", "--deepspeed-config", "--deepscale",
                           "--deepscale_config", "--deepspeed_mpi"})

# Flags that pretrain_gpt.py, pretrain_mamba.py and pretrain_hybrid.py add with
# `extra_args_provider=add_modelopt_args if has_nvidia_modelopt else None`
# (megatron/post_training/arguments.py): accepted only when NVIDIA ModelOpt is installed.
MODELOPT_FLAGS = frozenset({
    "--export-model-type", "--export-legacy-megatron", "--export-te-mcore-model", "--export-force-local-attention",
    "--export-kv-cache-quant", "--export-real-quant-cfg", "--export-quant-cfg", "--export-kd-teacher-load",
    "--export-kd-teacher-model-config", "--export-kd-teacher-ckpt-format", "--export-kd-cfg", "--finetune-hf-dataset",
    "--finetune-data-split", "--export-qk-l2-norm", "--export-moe-apply-probs-on-input", "--export-offline-model",
    "--modelopt-enabled", "--enable-gpt-oss",
})
MODELOPT_ENTRIES = ("pretrain_gpt.py", "pretrain_mamba.py", "pretrain_hybrid.py")

# Flags older Megatron-LM releases had (../shared/reference/megatron.md §2.4): (last release, instead).
REMOVED: dict[str, tuple[str | None, str | None]] = {
    "--use-custom-fsdp": ("0.13", "--use-megatron-fsdp"),
    "--standalone-embedding-stage": ("0.10", None),
    "--encoder-pipeline-model-parallel-size": ("0.13", None),
    "--moe-extended-tp": ("0.15", None),
    "--no-async-tensor-model-parallel-allreduce": ("0.15", None),
    "--use-legacy-models": ("0.17", None),
    "--moe-router-topk-limited-devices": (None, None),
    "--tp-comm-atomic-ag": (None, None),
    "--tp-comm-atomic-rs": (None, None),
}


def _unrecognized(words: Iterable[Any]) -> str:
    return "argparse stops with 'unrecognized arguments: " + " ".join(str(w) for w in words) + "'"


def _entry_name(flags: Flags) -> str:
    entry = flags.arguments.entry
    return entry if isinstance(entry, str) else "the entry script"


def _pretrain(flags: Flags) -> bool:
    """A launch of Megatron-LM's own pretrain_*.py, or an argument file (checked as the arguments of
    one: it does not name its program)."""
    arguments = flags.arguments
    return arguments.megatron_entry or (arguments.launch is None and arguments.script is None)


def _megatron_lm(flags: Flags) -> bool:
    """The arguments go to Megatron-LM itself: not to Megatron-DeepSpeed, and no value decided at
    run time may pass `--deepspeed` (a script that writes --deepspeed into a variable set inside an
    `if`, say)."""
    return flags.arguments.dialect == "megatron-lm" and not _maybe_deepspeed(flags)


def _maybe_deepspeed(flags: Flags) -> bool:
    return flags.arguments.dialect == "megatron-lm" and flags.spliced and "--deepspeed" in flags.document.text


def _other_parser(flags: Flags) -> str | None:
    """Why a parser other than Megatron-LM's own may read these arguments (None: Megatron-LM's)."""
    arguments = flags.arguments
    if arguments.dialect != "megatron-lm":
        return ("this launch runs Megatron-DeepSpeed (--deepspeed / --deepspeed_config / the deepspeed launcher), "
                "whose parser differs")
    if _maybe_deepspeed(flags):
        return "this script may pass --deepspeed (Megatron-DeepSpeed) through a value decided at run time"
    if not _pretrain(flags) and any(item.flag is None for item in arguments.given):
        return (f"{_entry_name(flags)} passes flags Megatron-LM lacks, so its parser (an extra_args_provider or a "
                f"fork) may differ")
    return None


def _judged(flags: Flags) -> str:
    """How the parser that reads the flags is known: "unknown" (the program or part of its parser
    was not found: findings are infos with the UnknownContext), "own" (the program's parser was
    read from the repository: a vendored fork and/or the entry script's extra_args_provider),
    "upstream" (Megatron-LM's own table: a pretrain_*.py script not in the tree, an argument file)."""
    program = flags.program
    if program is None:
        return "upstream"
    if program.unknown is not None:
        return "unknown"
    return "own" if program.path is not None else "upstream"


def _fork(flags: Flags) -> bool:
    """The program runs a vendored Megatron (its own arguments module), not Megatron-LM's."""
    program = flags.program
    return program is not None and program.fork is not None


def _placeholder(word: Any) -> bool:
    """A placeholder the user fills in (`<Specify path>`), not a value."""
    return isinstance(word, str) and ("<" in word or ">" in word)


class UnknownFlag(MegatronRule):
    """A flag that Megatron-LM's argument parser does not know.

    ## What it does
    Reports every flag that is not one of the spellings of Megatron-LM's parser (the flag table
    dumped from `megatron/training/arguments.py`): a typo, an underscore spelling
    (`--tensor_model_parallel_size`), a prefix of a longer flag, or a flag Megatron-LM removed.
    It suggests the dashed spelling or the closest flag. An argument file (`*.args`) is read as the
    arguments of a `pretrain_*.py` script.

    The flags are those of the program the launch runs: its entry script is looked for in the
    checked tree (next to the launch script, then in each folder above it), and its parser is read
    statically: a vendored Megatron (`megatron/training/arguments.py` or `megatron/arguments.py` next
    to the entry script, a fork such as Megatron-DeepSpeed) replaces Megatron-LM's table, and the
    flags of the `extra_args_provider` the script passes to `pretrain()` are added. With the
    program's parser read completely, an unknown flag is an error. When the program or part of its
    parser is not in the checked tree (a custom entry script, Megatron-DeepSpeed without its
    arguments.py, a provider imported from elsewhere, a container launch), the finding is an info
    that names the unknown program. The NVIDIA ModelOpt flags, which `pretrain_gpt.py` adds when
    ModelOpt is installed, are a warning.

    ## Why is this bad
    Megatron builds its parser with `allow_abbrev=False` and parses strictly: argparse stops with
    "unrecognized arguments" (exit status 2) before anything is checked, after the job waited for
    its nodes. Only dashed spellings exist; `--tensor_model_parallel_size` is not accepted.

    ## Example
    ```sh
    torchrun --nproc_per_node 8 pretrain_gpt.py --tensor_model_parallel_size 2 --num-layer 24 ...
    ```

    ## Use instead
    ```sh
    torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2 --num-layers 24 ...
    ```
    """

    code = "MG001"
    name = "unknown-flag"
    severity = "error"

    def check_flags(self, flags: Flags, context: Context) -> Iterable[Finding]:
        arguments = flags.arguments
        flag_table = flags.table
        state = _judged(flags)
        program = flags.program
        parser = program.parser if program is not None else f"{flag_table.described}'s parser"
        deepspeed = arguments.dialect != "megatron-lm"
        maybe = _maybe_deepspeed(flags)
        entry = arguments.entry if isinstance(arguments.entry, str) else None
        for item in arguments.given:
            if item.flag is not None:
                continue
            spelling = item.spelling
            if deepspeed and spelling in DEEPSPEED_OWN:
                continue  # DeepSpeed adds these to Megatron-DeepSpeed's parser
            removed = REMOVED.get(spelling) if not _fork(flags) else None
            dashed = "--" + spelling[2:].replace("_", "-") if spelling.startswith("--") else spelling
            suggestion = removed[1] if removed and removed[1] else flag_table.close_to(spelling)
            what = f"{spelling} is not a flag of {parser}"
            if removed:
                what += f" (Megatron-LM {removed[0]} was the last to have it)" if removed[0] else " (Megatron-LM removed it)"
            if removed and removed[1]:
                hint = f"; use {removed[1]} instead"
            elif suggestion and suggestion == dashed and suggestion != spelling:
                hint = f"; the parser accepts only the dashed spelling {suggestion}"
            elif suggestion:
                hint = f"; did you mean {suggestion}?"
            else:
                hint = ""
            stop = _unrecognized([spelling])
            if state == "unknown":
                message = f"{what}; if the program that runs does not define it either, {stop}{hint}"
                yield self.at(flags, item, message, fix=suggestion, unknown_context=program.unknown)
                continue
            if state == "own":
                message = f"{what}: {stop} before anything runs{hint}"
                yield self.at(flags, item, message, fix=suggestion, severity="error")
                continue
            if deepspeed or maybe:
                runs = ("this launch runs Megatron-DeepSpeed (a fork with flags of its own, --deepspeed / "
                        "--deepspeed_config / the deepspeed launcher)" if deepspeed else
                        "this script may pass --deepspeed through a value decided at run time and run Megatron-DeepSpeed "
                        "(a fork with flags of its own)")
                message = (f"{what}: {runs}, which shardshift cannot check it against; if the program that reads it "
                           f"does not define it, {stop}{hint}")
                severity: Severity = "warning"
            elif spelling in MODELOPT_FLAGS and (arguments.launch is None or (
                    entry is not None and entry.endswith(MODELOPT_ENTRIES) and arguments.megatron_entry)):
                script = entry if entry is not None else "pretrain_gpt.py"
                message = (f"{what}: {script} adds it (add_modelopt_args) only when NVIDIA ModelOpt is installed; "
                           f"without ModelOpt {stop}")
                severity = "warning"
            elif not _pretrain(flags):
                message = (f"{what}: {_entry_name(flags)} is not one of Megatron-LM's pretrain_*.py scripts and may "
                           f"add it with its extra_args_provider; if it does not, {stop}{hint}")
                severity = "warning"
            else:
                read_as = " (an argument file is read as the arguments of a pretrain_*.py script)" \
                    if arguments.launch is None else ""
                message = f"{what}: {stop} before anything runs{read_as}{hint}"
                severity = "error"
            yield self.at(flags, item, message, fix=suggestion, severity=severity)


def _shown(item) -> str:
    """The flag and its values as written (`--lr 1e-4`), or the switch."""
    return item.text if item.text else item.spelling


class FlagGivenTwice(MegatronRule):
    """The same setting given more than once; argparse keeps the last.

    ## What it does
    Reports a flag whose setting (argparse's `dest`) is given again later in the same argument
    list, under the same spelling or another one (`--foo` and `--no-foo`, `--no-tp-comm-split-ag`
    and `--disable-tp-comm-split-ag`). The finding is at the value that wins; the earlier places
    are related locations.

    ## Why is this bad
    argparse does not complain: the last value silently replaces the earlier ones. A launch script
    that builds its arguments from several variables (`$MODEL_ARGS $TRAINING_ARGS`) easily gives
    a flag twice, and the value a reader sees first is not the one the run uses.

    ## Example
    ```sh
    torchrun --nproc_per_node 8 pretrain_gpt.py --lr 3e-4 ... --lr 1e-4
    ```

    ## Use instead
    ```sh
    torchrun --nproc_per_node 8 pretrain_gpt.py --lr 1e-4 ...
    ```
    """

    code = "MG002"
    name = "flag-given-twice"
    severity = "warning"

    def check_flags(self, flags: Flags, context: Context) -> Iterable[Finding]:
        seen: dict[str, list] = {}
        for item in flags.arguments.given:
            if item.flag is None or item.problem:
                continue  # an unknown flag (MG001) or a value argparse rejects (MG004)
            seen.setdefault(item.flag.dest, []).append(item)
        path = flags.document.path
        for items in seen.values():
            if len(items) < 2:
                continue
            *earlier, last = items
            if isinstance(last.value, Unknown):
                wins = f"{_shown(last)} (a value the script decides at run time)"
            else:
                wins = _shown(last)
            places = ", ".join(f"{_shown(e)} at line {e.line}" for e in earlier)
            same = all(not isinstance(e.value, Unknown) and e.value == last.value for e in earlier) \
                and not isinstance(last.value, Unknown)
            tail = "both say the same; remove the repeat" if same else "remove the earlier one"
            message = (f"{last.flag.name} is given {len(items)} times: argparse keeps the last, {wins} at line "
                       f"{last.line}, and drops {places}; {tail}")
            related = [Related(path, e.line, e.column, e.spelling, f"{_shown(e)} is given here first")
                       for e in earlier]
            yield self.at(flags, last, message, related=related)


# --- MG003: deprecated flags ------------------------------------------------------------------------

Effect = tuple[Severity, str, "str | None"]


def _assert(replacement: str, text: str) -> Callable[[Flags, Any], Effect]:
    def effect(flags: Flags, item) -> Effect:
        return ("error", f"validate_args asserts '{text}' before training starts", replacement)
    return effect


def _checkpoint_activations(flags: Flags, item) -> Effect:
    return ("error", "validate_args prints '--checkpoint-activations is no longer valid, use --recompute-activations, "
                     "or, for more control, --recompute-granularity and --recompute-method.' and calls exit(): the "
                     "job ends with exit status 0 without training, which looks like success to a scheduler",
            "--recompute-activations")


def _ignored(text: str, replacement: str | None) -> Callable[[Flags, Any], Effect]:
    def effect(flags: Flags, item) -> Effect:
        return ("warning", text, replacement)
    return effect


def _no_position_embedding(flags: Flags, item) -> Effect:
    kind = "rope" if flags.get("use_rotary_position_embeddings") is True else flags.value("position_embedding_type")
    if kind == "rope":
        return ("warning", "with --position-embedding-type rope it has no effect (validate_args rejects it only for "
                            "other position embedding types)",
                None)
    if kind is None:
        return ("warning", "validate_args raises RuntimeError('--no-position-embedding is deprecated, use "
                           "--position-embedding-type') unless the position embedding type is rope, which this "
                           "script decides at run time", "--position-embedding-type none")
    return ("error", f"with --position-embedding-type {kind} validate_args raises RuntimeError('--no-position-embedding "
                     "is deprecated, use --position-embedding-type') before training starts",
            "--position-embedding-type none")


def _no_weight_decay_cond_type(flags: Flags, item) -> Effect:
    return ("warning", "validate_args maps it to --apply-wd-to-qk-layernorm (with a deprecation warning)",
            "--apply-wd-to-qk-layernorm")


DEPRECATED: dict[str, Callable[[Flags, Any], Effect]] = {
    "batch_size": _assert("--micro-batch-size", "--batch-size argument is no longer valid, use --micro-batch-size "
                                                "instead"),
    "warmup": _assert("--lr-warmup-fraction", "--warmup argument is no longer valid, use --lr-warmup-fraction instead"),
    "model_parallel_size": _assert("--tensor-model-parallel-size", "--model-parallel-size is no longer valid, use "
                                                                   "--tensor-model-parallel-size instead"),
    "checkpoint_activations": _checkpoint_activations,
    "rampup_batch_size": _ignored(
        "Megatron parses it but no longer uses it (since core_v0.18 the batch-size calculator is built without "
        "it): the global batch size is constant from the first step (a schedule needs no --global-batch-size, which "
        "Megatron would refuse next to it)", "--step-batch-size-schedule"),
    "use_rotary_position_embeddings": _ignored(
        "validate_args maps it to --position-embedding-type rope", "--position-embedding-type rope"),
    "add_position_embedding": _no_position_embedding,
    "enable_cuda_graph": _ignored(
        "validate_args maps it to --cuda-graph-impl local (with a deprecation message)", "--cuda-graph-impl local"),
    "external_cuda_graph": _ignored(
        "validate_args maps it to --cuda-graph-impl transformer_engine (with a deprecation message)",
        "--cuda-graph-impl transformer_engine"),
    "cuda_graph_scope_deprecated": _ignored(
        "validate_args copies it to --cuda-graph-modules (with a deprecation warning)", "--cuda-graph-modules"),
    "use_dist_ckpt_deprecated": _ignored(
        "it has no effect (validate_args only prints that it is deprecated); --ckpt-format selects the checkpoint "
        "format", "--ckpt-format"),
    "dist_ckpt_format_deprecated": _ignored(
        "it has no effect (validate_args only prints that it is deprecated); --ckpt-format selects the checkpoint "
        "format", "--ckpt-format"),
    "ckpt_fully_parallel_save_deprecated": _ignored(
        "it has no effect (validate_args only prints that it is deprecated): parallel save is the default, "
        "--no-ckpt-fully-parallel-save turns it off", None),
    "disable_msc_deprecated": _ignored(
        "it is a no-op with a deprecation warning (MSC is off by default) and turns MSC off even next to "
        "--enable-msc", None),
    "deprecated_use_mcore_models": _ignored(
        "it has no effect: Megatron Core models are the only ones", None),
    "fp8_interval": _ignored(
        "Transformer Engine ignores it from v1.8 (Megatron warns 'fp8_interval is deprecated and ignored')", None),
    "hybrid_override_pattern": _ignored(
        "validate_args copies it to --hybrid-layer-pattern (with a deprecation warning)", "--hybrid-layer-pattern"),
    "mtp_hybrid_override_pattern": _ignored(
        "it is kept only for loading old checkpoints (validate_args warns); new hybrid models with MTP give the MTP "
        "pattern inside --hybrid-layer-pattern after '/'", "--hybrid-layer-pattern"),
    "moe_deepep_num_sms": _ignored(
        "TransformerConfig copies it to moe_flex_dispatcher_num_sms (with a deprecation warning)",
        "--moe-flex-dispatcher-num-sms"),
    "moe_hybridep_num_sms": _ignored(
        "TransformerConfig copies it to moe_flex_dispatcher_num_sms (with a deprecation warning)",
        "--moe-flex-dispatcher-num-sms"),
    "moe_enable_deepep": _ignored(
        "TransformerConfig maps it to --moe-flex-dispatcher-backend deepep (with a deprecation warning)",
        "--moe-flex-dispatcher-backend deepep"),
    "moe_layer_recompute": _ignored(
        "TransformerConfig maps it to selective recomputation of the moe module (with a deprecation warning)",
        "--recompute-granularity selective --recompute-modules moe"),
    "moe_router_padding_for_fp8": _ignored(
        "TransformerConfig maps it to --moe-router-padding-for-quantization (with a deprecation warning)",
        "--moe-router-padding-for-quantization"),
    "tp_comm_split_ag": _ignored(
        "it is deprecated since Transformer Engine 1.6; with Transformer Engine 1.5 or newer Megatron passes "
        "tp_comm_overlap_ag instead", None),
    "tp_comm_split_rs": _ignored(
        "it is deprecated since Transformer Engine 1.6; with Transformer Engine 1.5 or newer Megatron passes "
        "tp_comm_overlap_rs instead", None),
    "no_weight_decay_cond_type": _no_weight_decay_cond_type,
}


class DeprecatedFlag(MegatronRule):
    """A deprecated Megatron-LM flag: rejected, ending the run, or mapped to its replacement.

    ## What it does
    Reports flags Megatron-LM still parses but deprecated, with what its code does with each
    (validate_args, parse_args, TransformerConfig): `--batch-size`, `--warmup` and
    `--model-parallel-size` fail an assertion in validate_args (error); `--checkpoint-activations`
    makes validate_args print a hint and call `exit()`, so the job ends with status 0 without
    training (error); `--no-position-embedding` raises unless the position embedding type is rope;
    the others are mapped to their replacement or ignored, with a message in the log (warning):
    `--rampup-batch-size` (no longer used since core_v0.18), `--use-rotary-position-embeddings`,
    `--enable-cuda-graph`, `--use-dist-ckpt`, `--moe-layer-recompute`, ... Not checked for
    Megatron-DeepSpeed, whose older flags differ, nor for a launch of a vendored fork (its
    deprecations are its own); an info when the program that runs is not found.

    ## Why is this bad
    An assertion or an exit ends the job after it waited for its nodes; an exit with status 0
    even looks like success. An ignored flag does nothing: `--rampup-batch-size` no longer ramps
    the batch size up.

    ## Example
    ```sh
    torchrun --nproc_per_node 8 pretrain_gpt.py --checkpoint-activations --rampup-batch-size 16 16 100000 ...
    ```

    ## Use instead
    ```sh
    torchrun --nproc_per_node 8 pretrain_gpt.py --recompute-activations --step-batch-size-schedule "0:16 100K:32" ...
    ```
    """

    code = "MG003"
    # deprecated, renamed or removed: what an older release reads, a newer one refuses
    release_agreement = False
    name = "deprecated-flag"
    severity = "error"

    def check_flags(self, flags: Flags, context: Context) -> Iterable[Finding]:
        if not _megatron_lm(flags) or _fork(flags):
            return  # Megatron-DeepSpeed or a vendored fork: upstream's deprecations are not the fork's
        unknown = flags.unknown_program
        other = _other_parser(flags) if unknown is None else None
        for dest, item in flags.last.items():
            effect = DEPRECATED.get(dest)
            if effect is None or item.problem:
                continue
            severity, what, fix = effect(flags, item)
            instead = f"; use {fix} instead" if fix else "; remove it"
            message = f"{item.spelling} is deprecated in {table().described}: {what}{instead}"
            if unknown is not None:
                message += " (if the program that runs is Megatron-LM)"
            elif other:
                message += f" (if Megatron-LM reads it: {other})"
                severity = "warning"
            yield self.at(flags, item, message, fix=fix, severity=severity, unknown_context=unknown)


class InvalidFlagValue(MegatronRule):
    """A value argparse rejects, or a word that belongs to no flag.

    ## What it does
    Pairs each flag with the words after it the way Megatron's argparse parser does and reports
    what argparse rejects: a value of the wrong type (`--num-layers 24.0`), a value outside the
    flag's choices (`--optimizer adamw`), a flag missing its value(s), a value after a switch
    (`--bf16 true`: switches take none), a second value after a one-value flag, and positional
    words (Megatron takes none). Values the script decides at run time are not judged.

    ## Why is this bad
    argparse stops with a usage error (exit status 2) before anything runs. `--bf16 true` and
    `--bf16 false` are both errors: the switch alone turns bf16 on.

    ## Example
    ```sh
    torchrun --nproc_per_node 8 pretrain_gpt.py --bf16 true --optimizer adamw ...
    ```

    ## Use instead
    ```sh
    torchrun --nproc_per_node 8 pretrain_gpt.py --bf16 --optimizer adam ...
    ```
    """

    code = "MG004"
    name = "invalid-flag-value"
    severity = "error"

    def check_flags(self, flags: Flags, context: Context) -> Iterable[Finding]:
        unknown = flags.unknown_program
        for finding in self._check(flags):
            if unknown is not None:  # the program's own parser was not found: an info that says so
                finding.severity, finding.unknown_context = "info", unknown
            yield finding

    def _check(self, flags: Flags) -> Iterable[Finding]:
        state = _judged(flags)
        unknown = flags.unknown_program
        other = _other_parser(flags) if state == "upstream" else None
        severity: Severity = "warning" if other else "error"
        parser = flags.program.parser if flags.program is not None else f"{table().described}'s parser"
        caveat = f" (in {parser}; {other})" if other else f" (in {parser})" if state != "upstream" else ""
        if unknown is not None:
            caveat = f" (in {parser}, if the program that runs uses it)"
        for item in flags.arguments.given:
            if item.flag is None:
                continue
            if item.problem:
                message = (f'argparse stops with "argument {"/".join(item.flag.spellings)}: {item.problem}"{caveat} '
                           f"before anything runs")
                yield self.at(flags, item, message, severity=severity)
                continue
            words = []
            if isinstance(item.value, Unknown):
                continue  # a run-time value may be empty or several words
            if _placeholder(item.value) or any(_placeholder(w) for w in item.stray):
                yield self._placeholder(flags, item, severity, caveat)
                continue
            for word in item.stray:
                if isinstance(word, Unknown) or _placeholder(word):
                    break  # a splice may supply a flag that takes the words after it
                words.append(word)
            if not words:
                continue
            if item.flag.takes_value(item.spelling):
                what = f"{item.spelling} takes {self._count(item.flag)}"
                fix = None
            else:
                what = f"{item.spelling} is a switch and takes no value"
                fix = item.spelling
                if item.flag.action == "store_true" and len(words) == 1 and str(words[0]).lower() in (
                        "false", "0", "no", "off"):
                    what += f" ({item.spelling} {words[0]} would turn it on; leave the flag out to keep it off)"
                    fix = None
            message = f"{what}: {_unrecognized(words)}{caveat} before anything runs"
            yield self.at(flags, item, message, fix=fix, severity=severity)
        for arg in flags.arguments.extra:
            if isinstance(arg.value, str) and arg.flag is None and not _placeholder(arg.value):
                message = (f"the word {arg.value!r} belongs to no flag (Megatron takes no positional arguments): "
                           f"{_unrecognized([arg.value])}{caveat} before anything runs")
                finding = self.finding(flags.document, None, message, severity=severity,
                                       position=(arg.line, arg.column))
                finding.pointer = arg.value
                yield finding

    def _placeholder(self, flags: Flags, item, severity: Severity, caveat: str) -> Finding:
        """A template placeholder (`<PATH TO vocab.json>`) left where a value belongs: Megatron receives
        it as written. Several words: argparse stops on the extra ones; one word: it is the value."""
        shown = " ".join(w for w in item.argv[1:] if isinstance(w, str))
        extra = [w for w in item.stray if isinstance(w, str)]
        if extra:
            message = (f"{item.spelling} is followed by a placeholder to fill in ({shown}): only its first word is "
                       f"the value, so {_unrecognized(extra)}{caveat} before anything runs; write the real value")
            return self.at(flags, item, message, severity=severity)
        message = (f"{item.spelling} {shown} is a placeholder to fill in: Megatron receives it as the value, "
                   "as written; write the real value")
        return self.at(flags, item, message, severity="warning")

    @staticmethod
    def _count(flag) -> str:
        if flag.nargs is None:
            return "one value"
        if isinstance(flag.nargs, int):
            return f"{flag.nargs} values"
        return "values"


# --- MG005: required flags ---------------------------------------------------------------------------

# (dest, the flags that stand in for it, what validate_args says when all are missing)
REQUIRED: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("micro_batch_size", (), "assert args.micro_batch_size is not None"),
    ("num_layers", ("encoder_num_layers", "hybrid_layer_pattern", "hybrid_override_pattern"),
     "either num-layers or encoder-num-layers should be specified"),
    ("hidden_size", (), "hidden_size argument is None"),
    ("num_attention_heads", (), "num_attention_heads argument is None"),
    ("max_position_embeddings", (), "max_position_embeddings argument is None"),
    ("seq_length", ("encoder_seq_length",), "assert args.encoder_seq_length is not None"),
)
# With these, the values come from elsewhere: a checkpoint's saved arguments, or a YAML file.
ELSEWHERE = ("use_checkpoint_args", "yaml_cfg")


class MissingRequiredFlag(MegatronRule):
    """A flag Megatron-LM requires is missing.

    ## What it does
    Reports the arguments validate_args asserts on when they are missing:
    `--micro-batch-size`, `--num-layers` (or `--encoder-num-layers`, or a hybrid model's
    `--hybrid-layer-pattern`, which gives the depth), `--hidden-size`, `--num-attention-heads`,
    `--max-position-embeddings` and `--seq-length` (or `--encoder-seq-length`). Only for a launch
    of Megatron-LM's own `pretrain_*.py` scripts, or an argument file, and only when no argument
    is an unresolved splice (`$EXTRA_ARGS`, `"$@"`), which might supply the flag. Silent with
    `--use-checkpoint-args` (the values come from the checkpoint) and `--yaml-cfg`. In a script
    whose `if`/`case` chooses between configurations (the model size), only a flag that no
    branch sets.

    ## Why is this bad
    validate_args fails an assertion before training starts ("num_layers argument is None"), after
    the job waited for its nodes.

    ## Example
    ```sh
    torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 24 --hidden-size 2048 --num-attention-heads 16 \\
        --seq-length 2048 --micro-batch-size 4 ...
    ```

    ## Use instead
    ```sh
    torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 24 --hidden-size 2048 --num-attention-heads 16 \\
        --seq-length 2048 --max-position-embeddings 2048 --micro-batch-size 4 ...
    ```
    """

    code = "MG005"
    name = "missing-required-flag"
    severity = "error"
    reports_missing = True

    def check_flags(self, flags: Flags, context: Context) -> Iterable[Finding]:
        arguments = flags.arguments
        if not _megatron_lm(flags) or not arguments.given:
            return
        if not _pretrain(flags):
            return
        if any(flags.given(dest) for dest in ELSEWHERE) or flags.spliced:
            return
        if _other_parser(flags) or any(item.flag is None for item in arguments.given):
            return  # another parser (an extra_args_provider, a fork) may set it
        if flags.unknown_program is not None or _fork(flags):
            return  # a fork's validate_args is not upstream's; an unknown program may differ
        where = "this argument file" if arguments.launch is None else f"this launch of {_entry_name(flags)}"
        for dest, others, said in REQUIRED:
            if flags.given(dest) or any(flags.given(other) for other in others):
                continue
            spelled = flags.spelled(dest)
            alternatives = [flags.spelled(o) for o in others if o != "hybrid_override_pattern"]
            instead = f" (or {' / '.join(alternatives)})" if alternatives else ""
            message = (f"{spelled}{instead} is missing from {where}: Megatron-LM requires it and validate_args "
                       f"fails '{said}' before training starts; add {spelled}")
            yield self.at(flags, dest, message, fix=spelled)
