"""Megatron-LM's own argument code (parse_args, validate_args, core_transformer_config_from_args; see
tests/megatron_oracle.py) as the judge of what shardshift reads and writes, in ONE child process:

- every argument list the writer emits passes Megatron exactly when its source does (round trips of
  the corpus lists, as an argument list and as a launch script), and conversions of the fixture
  ds_configs pass at a stated world size with a stated model;
- every corpus list the oracle rejects at its script's world size gets an error finding from
  `shardshift check` for the same cause (CAUSES maps Megatron's message to the rule codes that
  report it); rejections that come only from this machine (no GPU, no Transformer Engine) are
  not counted, and lists for another program (Megatron-DeepSpeed, an entry script with its own
  extra flags) are not judged by Megatron-LM's parser at all.
"""

from __future__ import annotations

import os
import re

import pytest

from shardshift.formats.megatron import read
from shardshift.formats.megatron.writer import write, write_arguments
from shardshift.plan import Unknown

from conftest import FIXTURES, SHARED, check_json, run_cli
from megatron_oracle import available, judge

pytestmark = pytest.mark.oracle

ARGS = SHARED / "corpus" / "megatron"
SCRIPTS = SHARED / "corpus" / "megatron-scripts"

# World size of each corpus list: its launch script's (../shared/corpus/MANIFEST.tsv notes, or the
# script in megatron-scripts/); otherwise one 8-GPU node, the launchers' default in these scripts.
WORLD = {
    "NVIDIA__Megatron-LM__examples__pretrain_gpt3_175B.args": 1024,  # #SBATCH --nodes=128 --ntasks-per-node=8
    "NVIDIA__Megatron-LM__examples__megatron_fsdp__sbatch_mfsdp_deepseek_v3.args": 8,  # placeholders: stated
}
DEFAULT_WORLD = 8

# Stated values for what Megatron requires and a ds_config does not hold (the writer reports them
# missing): a small model, a training length, a micro batch when the ds_config leaves it to "auto".
STATED = {"--num-layers": "2", "--hidden-size": "64", "--num-attention-heads": "4", "--seq-length": "128",
          "--max-position-embeddings": "128", "--train-iters": "10", "--micro-batch-size": "1"}

# Megatron's message -> the codes whose error findings report that cause.
CAUSES = [
    (r"unrecognized arguments", ("MG001", "MG004")),
    (r"invalid choice|invalid (int|float) value|expected (one|at least one|\d+) argument", ("MG004",)),
    (r"is not divisible by total_model_size", ("PL101",)),
    (r"no longer valid|is deprecated", ("MG003",)),
    (r"not divisible by (tensor|number of)|num_attention_heads|num_query_groups", ("PL103", "MG1")),
    (r"global batch size", ("DS201",)),
    (r"fp16 and bf16|not args.bf16", ("MG201",)),
    (r"Cannot specify both --step-batch-size-schedule", ("MG214",)),
    (r"expected (iteration|sample)-based|lr-warmup-fraction", ("MG215", "MG216")),
    (r"Number of layers should be divisible|layers per (pipeline|virtual)", ("MG101", "MG102", "MG103")),
    (r"multiple of 2 \* context|seq-length should be", ("MG112",)),
    (r"greater than or equal to seq_length", ("MG219",)),
    (r"min_lr <= args.lr", ("MG218",)),
    (r"overlap[-_]param[-_]gather", ("MG205", "MG206", "MG207")),
    (r"required|must be provided|is None", ("MG005",)),
]
# Rejections that come from this machine, not from the arguments (tests/megatron_oracle_child.py).
ENVIRONMENT = re.compile(r"Transformer Engine|install TE|TE >=|transformer-engine|not compiled with CUDA|CUDA_DEVICE_MAX")


def argv_for_oracle(document) -> list[str] | None:
    """The words Megatron would receive; a value the run decides becomes a placeholder when Megatron
    takes it as a string (paths, names), and the list is not judged when it is a number."""
    from shardshift.formats.megatron.flags import table

    flags = table()
    words, flag = [], None
    for word in document.data.argv:
        if isinstance(word, str) and word.startswith("--"):
            flag = flags.get(word.split("=", 1)[0])
        if isinstance(word, Unknown):
            if flag is not None and flag.type in ("int", "float"):
                return None
            word = "UNKNOWN"
        words.append(word)
    return words


def corpus_lists():
    if not ARGS.is_dir():
        return []
    return sorted(ARGS.glob("*.args"))


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory):
    """Every case of this module, judged in one child process."""
    reason = available()
    if reason is not None:
        if os.environ.get("CI", "").strip().lower() in ("1", "true", "yes"):
            pytest.fail(f"the Megatron oracle must run in CI: {reason}")
        pytest.skip(reason)
    out = tmp_path_factory.mktemp("megatron")
    cases, keys = [], []
    for path in corpus_lists():
        document = read(path.read_text(encoding="utf-8"), str(path))
        source = argv_for_oracle(document)
        if source is None:
            continue
        world = WORLD.get(path.name, DEFAULT_WORLD)
        written = read(write_arguments(document.plan), str(out / "written.args"))
        script = read(write(document.plan, document.data.entry or "pretrain_gpt.py"), str(out / "written.sh"))
        for kind, doc in (("source", document), ("arguments", written), ("script", script)):
            argv = source if kind == "source" else argv_for_oracle(doc)
            cases.append((argv, world))
            keys.append((path.name, kind))
    for path in sorted((FIXTURES / "deepspeed").glob("*.json")):
        done = run_cli("convert", str(path), "--to", "megatron-args")
        assert done.returncode == 0, done.stderr
        document = read(done.stdout, str(out / f"{path.stem}.args"))
        argv = argv_for_oracle(document)
        # what the ds_config cannot hold is written as a placeholder (FILL_IN): filled in with the stated value
        micro = argv[argv.index("--micro-batch-size") + 1] if "--micro-batch-size" in argv else "FILL_IN"
        fills = {**STATED, "--global-batch-size": str(int(micro if micro.isdigit() else 1) * DEFAULT_WORLD)}
        argv = [fills.get(argv[i - 1], w) if w == "FILL_IN" and i else w for i, w in enumerate(argv)]
        assert "FILL_IN" not in argv, argv
        stated = [w for flag, value in STATED.items() if flag not in argv for w in (flag, value)]
        cases.append(([*argv, *stated, "--mock-data"], DEFAULT_WORLD))
        keys.append((path.name, "converted"))
    return dict(zip(keys, judge(cases)))


def _same(written, source, unwritten: set[str]) -> bool:
    """The same verdict. argparse lists unrecognized words in the order given, which the writer changes
    (it groups the flags by topic), and the writer leaves out flags whose value only the run knows
    (`unwritten`): for those rejections the unrecognized flags are compared."""
    if written.stage == source.stage == "parse" and "unrecognized arguments" in (source.error or ""):
        def flags(verdict):
            return {w.split("=")[0] for w in (verdict.error or "").split() if w.startswith("--")}
        return flags(written) == flags(source) - unwritten
    return (written.ok, written.stage, written.error) == (source.ok, source.stage, source.error)


def test_written_argument_lists_and_scripts_pass_megatron_exactly_when_their_source_does(verdicts):
    compared = 0
    for (name, kind), verdict in verdicts.items():
        if kind not in ("arguments", "script"):
            continue
        source = verdicts[(name, "source")]
        document = read((ARGS / name).read_text(encoding="utf-8"), name)
        unwritten = {g.spelling for g in document.data.given if any(isinstance(w, Unknown) for w in g.argv)}
        assert _same(verdict, source, unwritten), (name, kind, source, verdict)
        compared += 1
    assert compared >= 40


def test_converted_fixture_ds_configs_pass_megatron_with_a_stated_model(verdicts):
    converted = {name: v for (name, kind), v in verdicts.items() if kind == "converted"}
    assert converted
    for name, verdict in converted.items():
        assert verdict.ok or ENVIRONMENT.search(verdict.error or ""), (name, verdict)


def _judged_by_megatron_lm(document) -> bool:
    """Whether Megatron-LM's own parser is the program that reads this list (see the module docstring)."""
    return document.data.dialect == "megatron-lm" and (document.data.megatron_entry or document.data.entry is None)


def test_every_corpus_list_megatron_rejects_gets_an_error_for_the_same_cause(verdicts):
    judged = rejected = 0
    for path in corpus_lists():
        verdict = verdicts.get((path.name, "source"))
        document = read(path.read_text(encoding="utf-8"), str(path))
        if verdict is None or not _judged_by_megatron_lm(document):
            continue
        judged += 1
        if verdict.ok or ENVIRONMENT.search(verdict.error or ""):
            continue
        rejected += 1
        codes = next((codes for pattern, codes in CAUSES if re.search(pattern, verdict.error or "")), None)
        assert codes is not None, f"{path.name}: unclassified Megatron rejection: {verdict.error}"
        _, output = check_json("--world-size", str(WORLD.get(path.name, DEFAULT_WORLD)), str(path))
        errors = [f for f in output["findings"] if f["severity"] == "error"]
        # flags pretrain_gpt.py adds only with NVIDIA ModelOpt installed, which this oracle is not:
        # shardshift warns that argparse stops on them without ModelOpt (MG001)
        modelopt = [f for f in output["findings"] if f["code"] == "MG001" and "ModelOpt" in f["message"]]
        assert any(f["code"].startswith(codes) for f in errors) or (codes[0] == "MG001" and modelopt), \
            (path.name, verdict.error, errors)
    assert judged >= 8 and rejected >= 3, (judged, rejected)
