"""Hover and completion knowledge (shardshift.lsp.knowledge): pure functions, no pygls.

Expected texts come from the key tables the module reads (formats/*/keys.py, schemas.py,
flags.json), never written here by hand. The inner `_hover` / `_complete` are called where a test
checks that nothing raises: the public functions swallow every exception, which would hide a bug.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shardshift.lsp import knowledge
from shardshift.lsp.knowledge import CompletionItem, HoverInfo, Span, complete, hover

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"


def _pos(text: str, needle: str, shift: int = 1, nth: int = 0) -> tuple[int, int]:
    """The (line, character) `shift` code points into the nth occurrence of `needle`."""
    offset = -1
    for _ in range(nth + 1):
        offset = text.index(needle, offset + 1)
    offset += shift
    line = text.count("\n", 0, offset)
    return line, offset - (text.rfind("\n", 0, offset) + 1)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A repository of its own (the release walk stops at its .git): no pin unless a test writes one."""
    (tmp_path / ".git").mkdir()
    return tmp_path


def _hover_at(path: Path, text: str, needle: str, shift: int = 1, nth: int = 0) -> HoverInfo:
    path.write_text(text, encoding="utf-8")
    info = knowledge._hover(str(path), text, *_pos(text, needle, shift, nth))
    assert info is not None, f"no hover on {needle!r}"
    return info


def _labels(items: list[CompletionItem]) -> list[str]:
    return [item.label for item in items]


DS_TEXT = """{
  // a ds_config with comments
  "train_batch_size": 64,
  "zero_optimization": {
    "stage": 3,
    "overlap_comm": true,
    "stage3_prefetch_bucket_size": 5e8
  },
  "bfloat16": {"enabled": true},
  "aio": {"thread_count": 2}
}
"""


# --- hover: DeepSpeed -------------------------------------------------------------------------------


def test_hover_strict_section_key_mentions_rejection(tree):
    from shardshift.formats.deepspeed.keys import lookup

    info = _hover_at(tree / "ds_config.json", DS_TEXT, '"stage"')
    row = lookup("/zero_optimization/stage")
    assert lookup("/zero_optimization").strict
    assert "`zero_optimization.stage`" in info.markdown.splitlines()[0]
    assert "rejects unknown keys" in info.markdown
    assert row.doc in info.markdown and row.field in info.markdown
    line, character = _pos(DS_TEXT, '"stage"', 0)
    assert info.span == Span(line, character, line, character + len('"stage"'))


def test_hover_links_the_rules_under_the_projects_docs_url(tree):
    from shardshift.rules import rule_by_code

    (tree / "pyproject.toml").write_text('[tool.shardshift]\ndocs-url = "https://docs.example.com/s"\n')
    info = _hover_at(tree / "ds.json", DS_TEXT, '"overlap_comm"')
    links = [line for line in info.markdown.splitlines() if line.startswith("Rules: ")]
    assert links and "https://docs.example.com/s/rules/" in links[0]
    codes = [part.split("]")[0] for part in links[0].split("[")[1:]]
    assert codes and all(rule_by_code(code) is not None for code in codes)
    assert all(f"[{code}](https://docs.example.com/s/rules/{code}/)" in links[0] for code in codes)


def test_hover_links_the_packages_site_when_the_docs_url_is_refused(tree):
    from shardshift.docs_url import fallback_url

    (tree / "pyproject.toml").write_text('[tool.shardshift]\ndocs-url = "ftp://docs.example.com"\n')
    info = _hover_at(tree / "ds.json", DS_TEXT, '"overlap_comm"')
    links = [line for line in info.markdown.splitlines() if line.startswith("Rules: ")]
    assert links and f"]({fallback_url()}/rules/" in links[0] and "ftp://" not in links[0]


def test_hover_unknown_key_in_strict_and_lenient_sections(tree):
    text = '{"zero_optimization": {"stag": 1}, "my_own_key": 3}'
    strict = _hover_at(tree / "ds_config.json", text, '"stag"')
    lenient = _hover_at(tree / "ds_config.json", text, '"my_own_key"')
    assert "rejects unknown keys" in strict.markdown and "`stage`" in strict.markdown
    assert "ignores unknown keys" in lenient.markdown and "rejects" not in lenient.markdown


def test_hover_top_level_key(tree):
    from shardshift.formats.deepspeed.keys import lookup

    info = _hover_at(tree / "ds_config.json", DS_TEXT, '"train_batch_size"')
    row = lookup("/train_batch_size")
    assert row.doc in info.markdown and f"`{row.field}`" in info.markdown
    assert "no pin found" in info.markdown  # the tree pins nothing
    assert len(info.markdown.splitlines()) <= 25


def test_hover_stage_only_key_says_where_it_is_inert(tree):
    info = _hover_at(tree / "ds_config.json", DS_TEXT, '"stage3_prefetch_bucket_size"')
    assert "inert at stage 0, 1, 2" in info.markdown
    assert "https://shardshift.dev/rules/DS303/" in info.markdown or "/DS303" in info.markdown


def test_hover_renamed_key(tree):
    from shardshift.formats.deepspeed.keys import lookup

    info = _hover_at(tree / "ds_config.json", DS_TEXT, '"bfloat16"')
    assert lookup("/bfloat16").renamed_to == "/bf16"
    assert "Legacy spelling" in info.markdown and "`bf16`" in info.markdown
    inert = _hover_at(tree / "ds_config.json", DS_TEXT, '"thread_count"')
    assert "`aio.intra_op_parallelism`" in inert.markdown


def test_hover_on_a_value_describes_its_key(tree):
    info = _hover_at(tree / "ds_config.json", DS_TEXT, "5e8", 1)
    assert "stage3_prefetch_bucket_size" in info.markdown.splitlines()[0]
    line, character = _pos(DS_TEXT, "5e8", 0)
    assert info.span == Span(line, character, line, character + 3)


def test_release_pin_changes_what_hover_says(tree):
    """A key DeepSpeed 0.19.8 removed is read under a 0.16 pin; without the pin it is removed."""
    from shardshift.formats.deepspeed.keys import lookup

    row = lookup("/sparse_gradients")
    assert row.removed and row.removed_in is not None and row.removed_in > (0, 16, 0)
    text = '{\n  "sparse_gradients": true\n}\n'
    unpinned = _hover_at(tree / "ds_config.json", text, '"sparse_gradients"')
    assert "Removed" in unpinned.markdown and "no pin found" in unpinned.markdown
    (tree / "requirements.txt").write_text("deepspeed==0.16.0\n", encoding="utf-8")
    knowledge._release_cache.clear()
    pinned = _hover_at(tree / "ds_config.json", text, '"sparse_gradients"')
    assert "Read by DeepSpeed 0.16.0" in pinned.markdown
    assert "pinned in requirements.txt:1" in pinned.markdown
    assert "Removed:" not in pinned.markdown


# --- hover: the other formats --------------------------------------------------------------------------


ACCELERATE_TEXT = """compute_environment: LOCAL_MACHINE
distributed_type: FSDP
fsdp_config:
  fsdp_version: 2
  fsdp_sharding_strategy: FULL_SHARD
  reshard_after_forward: true
mixed_precision: bf16
num_processes: 8
"""


def test_hover_accelerate_fsdp_config_key(tree):
    from shardshift.formats.accelerate.keys import FSDP1_ONLY
    from shardshift.schemas import ACCELERATE_SECTIONS

    info = _hover_at(tree / "accelerate.yaml", ACCELERATE_TEXT, "fsdp_sharding_strategy", 3)
    description = ACCELERATE_SECTIONS["fsdp_config"]["fsdp_sharding_strategy"][2]
    assert "`fsdp_config.fsdp_sharding_strategy`" in info.markdown.splitlines()[0]
    assert description in info.markdown
    assert FSDP1_ONLY["fsdp_sharding_strategy"] in info.markdown
    unprefixed = _hover_at(tree / "accelerate.yaml", ACCELERATE_TEXT, "reshard_after_forward")
    assert "`fsdp_reshard_after_forward`" in unprefixed.markdown
    top = _hover_at(tree / "accelerate.yaml", ACCELERATE_TEXT, "mixed_precision")
    assert "rejects unknown top-level keys" in top.markdown and "precision.param_dtype" in top.markdown


def test_hover_axolotl_key(tree):
    from shardshift.formats.axolotl.keys import KEYS
    from shardshift.rules.axolotl.rules import DEPRECATED

    text = "base_model: x\nmicro_batch_size: 2\nsequence_parallel_degree: 2\n"
    info = _hover_at(tree / "axolotl.yaml", text, "micro_batch_size")
    assert f"`{KEYS['micro_batch_size'][0]}`" in info.markdown
    deprecated = _hover_at(tree / "axolotl.yaml", text, "sequence_parallel_degree")
    assert DEPRECATED["sequence_parallel_degree"][1] in deprecated.markdown and "Deprecated" in deprecated.markdown


TORCHTITAN_TEXT = """[job]
dump_folder = "./out"

[training]
local_batch_size = 2
batch_size = 4

[lr_scheduler]
decay_type = "cosine"
"""


def test_hover_torchtitan_key(tree):
    from shardshift.formats.torchtitan.keys import SCHEMA
    from shardshift.rules.torchtitan.rules import RENAMED

    info = _hover_at(tree / "train.toml", TORCHTITAN_TEXT, "local_batch_size")
    kind, default = SCHEMA["training"]["local_batch_size"]
    assert f"`{kind}`" in info.markdown and f"**Default**: {default}" in info.markdown
    assert "rejects unknown keys" in info.markdown
    renamed = _hover_at(tree / "train.toml", TORCHTITAN_TEXT, "batch_size = 4")
    assert RENAMED[("training", "batch_size")][0] in renamed.markdown


def test_hover_megatron_flag_in_fixture_launch_script():
    from shardshift.formats.megatron.flags import table

    path = FIXTURES / "megatron" / "llama_8b_tp2_pp2.sh"
    text = path.read_text(encoding="utf-8")
    line, character = _pos(text, "--tensor-model-parallel-size", 4)
    info = knowledge._hover(str(path), text, line, character)
    flag = table().get("--tensor-model-parallel-size")
    assert info is not None
    assert " ".join(flag.help.split()) in info.markdown
    assert f"**Default**: {flag.default}" in info.markdown
    assert info.span.character == character - 4


def test_hover_and_complete_in_an_argument_file():
    from shardshift.formats.megatron.flags import table

    path = FIXTURES / "megatron" / "rules" / "MG005" / "bad.args"
    text = path.read_text(encoding="utf-8")
    info = knowledge._hover(str(path), text, *_pos(text, "--seq-length", 2))
    flag = table().get("--seq-length")
    assert info is not None and " ".join(flag.help.split()) in info.markdown
    assert "upstream Megatron-LM" in info.markdown  # an argument file names no program
    typo = text.replace("--seq-length", "--seq-lenght")
    unknown = knowledge._hover(str(path), typo, *_pos(typo, "--seq-lenght", 2))
    assert unknown is not None and "`--seq-length`" in unknown.markdown and "unrecognized arguments" in unknown.markdown
    text += "--num-lay"
    labels = _labels(knowledge._complete(str(path), text, text.count("\n"), len("--num-lay")))
    assert labels[0] == "--num-layers"


def test_hover_megatron_flag_of_a_forked_program(tree):
    """The entry script's extra_args_provider defines a flag upstream Megatron-LM lacks."""
    from shardshift.formats.megatron.flags import table

    assert table().get("--my-window") is None
    (tree / "pretrain_gpt.py").write_text(
        "from megatron.training import pretrain\n\n"
        "def add_my_args(parser):\n"
        "    group = parser.add_argument_group(title='mine')\n"
        "    group.add_argument('--my-window', type=int, default=7, help='Window of my fork.')\n"
        "    return parser\n\n"
        "pretrain(None, None, None, None, extra_args_provider=add_my_args)\n", encoding="utf-8")
    text = "#!/bin/bash\ntorchrun --nproc_per_node 8 pretrain_gpt.py \\\n    --num-layers 2 \\\n    --my-window 3\n"
    info = _hover_at(tree / "train.sh", text, "--my-window", 3)
    assert "Window of my fork." in info.markdown and "**Default**: 7" in info.markdown
    assert "add_my_args" in info.markdown


def test_hover_skips_launcher_options_in_a_script():
    path = FIXTURES / "megatron" / "llama_8b_tp2_pp2.sh"
    text = path.read_text(encoding="utf-8")
    assert knowledge._hover(str(path), text, *_pos(text, "--nproc_per_node", 3)) is None


def test_hover_megatron_flag_unknown_program_says_upstream(tree):
    text = "#!/bin/bash\ntorchrun train_somewhere_else.py --num-layers 2\n"
    info = _hover_at(tree / "run.sh", text, "--num-layers", 3)
    assert "upstream Megatron-LM" in info.markdown


def test_hover_and_complete_training_arguments_flags():
    from shardshift.formats.launch.training_fields import CHOICES, FIELDS

    path = FIXTURES / "setups" / "consumers" / "hf_launcher" / "scripts" / "train.sh"
    text = path.read_text(encoding="utf-8")
    info = knowledge._hover(str(path), text, *_pos(text, "--bf16", 3))
    assert info is not None and "`TrainingArguments.bf16`" in info.markdown
    assert f"**Default**: {str(FIELDS['bf16'][1]).lower()}" in info.markdown
    typed = text.rstrip() + " \\\n    --lr_sch"
    items = knowledge._complete(str(path), typed, typed.count("\n"), len("    --lr_sch"))
    assert items[0].label.startswith("--lr_sch") and items[0].kind == "flag"
    at_value = text.rstrip() + " \\\n    --lr_scheduler_type "
    values = knowledge._complete(str(path), at_value, at_value.count("\n"), len("    --lr_scheduler_type "))
    assert set(_labels(values)) == set(CHOICES["lr_scheduler_type"])


# --- completion -----------------------------------------------------------------------------------------


def test_complete_inside_zero_optimization(tree):
    from shardshift.formats.deepspeed.keys import children_of

    text = '{\n  "train_batch_size": 8,\n  "zero_optimization": {\n    "overlap_comm": true,\n    \n  }\n}\n'
    (tree / "ds_config.json").write_text(text, encoding="utf-8")
    items = knowledge._complete(str(tree / "ds_config.json"), text, 4, 4)
    labels = _labels(items)
    assert "stage" in labels and "overlap_comm" not in labels
    assert "train_batch_size" not in labels and "zero_optimization" not in labels
    assert set(labels) == set(children_of("/zero_optimization")) - {"overlap_comm"}
    stage = next(i for i in items if i.label == "stage")
    assert stage.insert_text == '"stage": ' and stage.kind == "key"


@pytest.mark.parametrize("typed, expected", [
    ('"st', 'stage": '),    # an opening quote, not closed
    ('"st"', "stage"),      # the editor closed it
    ("st", '"stage": '),    # no quote yet
])
def test_complete_json_insert_text_fits_the_quotes(tree, typed, expected):
    text = '{"zero_optimization": {\n  ' + typed + "\n}}"
    line, character = 1, 2 + len(typed.rstrip('"') if typed.count('"') == 2 else typed)
    items = knowledge._complete(str(tree / "ds_config.json"), text, line, character)
    assert items and items[0].label.startswith("st")
    assert next(i for i in items if i.label == "stage").insert_text == expected


def test_complete_marks_renamed_and_skips_removed(tree):
    from shardshift.formats.deepspeed.keys import KEYS

    items = knowledge._complete(str(tree / "ds_config.json"), "{\n  \n}", 1, 2)
    labels = _labels(items)
    removed = [k.path[1:] for k in KEYS if k.path.count("/") == 1 and k.removed and k.removed_in is not None]
    assert removed and not set(removed) & set(labels)
    bfloat16 = next(i for i in items if i.label == "bfloat16")
    assert "deprecated" in bfloat16.detail and "bf16" in bfloat16.detail
    assert labels.index("bf16") < labels.index("bfloat16")


def test_complete_enum_value_in_json(tree):
    from shardshift.formats.deepspeed.keys import lookup

    text = '{"communication_data_type": "'
    items = knowledge._complete(str(tree / "ds_config.json"), text, 0, len(text))
    assert set(_labels(items)) == set(lookup("/communication_data_type").choices)
    assert all(i.kind == "value" and i.insert_text == i.label + '"' for i in items)


def test_complete_in_accelerate_fsdp_config_block(tree):
    from shardshift.schemas import ACCELERATE_SECTIONS

    text = ACCELERATE_TEXT.replace("  fsdp_version: 2\n", "  fsdp_version: 2\n  fsdp_o\n")
    line, character = _pos(text, "  fsdp_o\n", 8)
    items = knowledge._complete(str(tree / "accelerate.yaml"), text, line, character)
    labels = _labels(items)
    assert labels[0] == "fsdp_offload_params" and items[0].insert_text == "fsdp_offload_params: "
    assert set(labels) <= set(ACCELERATE_SECTIONS["fsdp_config"]) | {"fsdp_activation_checkpointing_offload"}
    assert "fsdp_version" not in labels and "fsdp_sharding_strategy" not in labels
    values = knowledge._complete(str(tree / "accelerate.yaml"), ACCELERATE_TEXT.replace("FULL_SHARD", ""),
                                 *_pos(ACCELERATE_TEXT, "FULL_SHARD", 0))
    assert "SHARD_GRAD_OP" in _labels(values)


def test_complete_accelerate_top_level_and_axolotl(tree):
    text = ACCELERATE_TEXT + "num_m\n"
    items = knowledge._complete(str(tree / "accelerate.yaml"), text, text.count("\n") - 1, 5)
    assert _labels(items)[0] == "num_machines" and "num_processes" not in _labels(items)
    text = "base_model: x\nmicro_batch_size: 2\ngradient_acc\n"
    items = knowledge._complete(str(tree / "axolotl.yaml"), text, 2, 12)
    assert _labels(items)[0] == "gradient_accumulation_steps"


def test_complete_torchtitan_section_keys(tree):
    from shardshift.formats.torchtitan.keys import SCHEMA

    text = TORCHTITAN_TEXT.replace("local_batch_size = 2\n", "local_batch_size = 2\n\n")
    line, _ = _pos(text, "local_batch_size = 2\n\n", 22)
    labels = _labels(knowledge._complete(str(tree / "train.toml"), text, line, 0))
    assert "seq_len" in labels and "local_batch_size" not in labels
    assert set(labels) <= set(SCHEMA["training"])
    values = knowledge._complete(str(tree / "train.toml"), '[lr_scheduler]\ndecay_type = "', 1, 14)
    assert set(_labels(values)) == {"linear", "sqrt", "cosine"}


def test_complete_megatron_flag_after_prefix(tree):
    from shardshift.formats.megatron.flags import table

    text = "#!/bin/bash\ntorchrun pretrain_gpt.py \\\n    --num-layers 2 \\\n    --tensor-m"
    items = knowledge._complete(str(tree / "train.sh"), text, 3, len("    --tensor-m"))
    assert items[0].label == "--tensor-model-parallel-size" and items[0].kind == "flag"
    prefixed = [i.label for i in items if i.label.startswith("--tensor-m")]
    expected = {s for f in table().flags for s in f.spellings if s.startswith("--tensor-m")}
    assert set(prefixed) == expected
    assert _labels(items)[:len(prefixed)] == prefixed  # prefix matches first
    deprecated = [f for f in table().flags if f.deprecated]
    assert deprecated  # Megatron's table marks some: the case below must run
    spelling = next(s for s in deprecated[0].spellings if s.startswith("--"))
    marked = knowledge._complete(str(tree / "train.sh"), text[:-len("--tensor-m")] + spelling, 3,
                                 4 + len(spelling))
    assert "deprecated" in next(i for i in marked if i.label == spelling).detail


def test_complete_megatron_flag_choices(tree):
    from shardshift.formats.megatron.flags import table

    flag = next(f for f in table().flags if f.choices and f.type == "str")
    spelling = next(s for s in flag.spellings if s.startswith("--"))
    text = f"#!/bin/bash\ntorchrun pretrain_gpt.py {spelling} "
    labels = _labels(knowledge._complete(str(tree / "train.sh"), text, 1, len(text.splitlines()[1])))
    assert labels and set(labels) == {str(c) for c in flag.choices}


def test_accelerate_config_written_as_json(tree):
    text = '{\n  "distributed_type": "FSDP",\n  "fsdp_config": {"fsdp_version": 2}\n}\n'
    info = _hover_at(tree / "accelerate_config.json", text, '"fsdp_version"')
    assert "`fsdp_config.fsdp_version`" in info.markdown and "Accelerate" in info.markdown
    text = '{\n  "distributed_type": "FSDP",\n  "fsdp_config": {"fsdp_version": 2, "fsdp_off'
    labels = _labels(knowledge._complete(str(tree / "accelerate_config.json"), text, 2, len(text.splitlines()[2])))
    assert labels[0] == "fsdp_offload_params" and "fsdp_version" not in labels


@pytest.mark.parametrize("name, text", [
    ("settings.json", '{\n  "editor.tabSize": 2,\n  "files.exclude": {}\n}\n'),
    ("Cargo.toml", '[package]\nname = "x"\n'),
    ("build.sh", "#!/bin/bash\nmake --jobs 4 --keep-going\n"),
    ("notes.yaml", "title: x\nitems:\n  - a\n"),
])
def test_unrelated_files_get_no_hover_nor_completion(tree, name, text):
    path = tree / name
    path.write_text(text, encoding="utf-8")
    assert knowledge.format_of(str(path), text) is None
    for line, row in enumerate(text.splitlines()):
        for character in range(len(row) + 1):
            assert knowledge._hover(str(path), text, line, character) is None
            assert knowledge._complete(str(path), text, line, character) == []


def test_complete_bool_value_in_json(tree):
    text = '{"zero_optimization": {"overlap_comm": '
    items = knowledge._complete(str(tree / "ds_config.json"), text, 0, len(text))
    assert [(i.label, i.insert_text) for i in items] == [("false", "false"), ("true", "true")]


@pytest.mark.parametrize("name, text, typed", [
    ("ds_config.json", '{"zero_optimization": {"st', "st"),
    ("train.sh", "#!/bin/bash\ntorchrun pretrain_gpt.py --num-layers 2 --tensor-m", "--tensor-m"),
    ("accelerate.yaml", "distributed_type: FSDP\nfsdp_config:\n  fsdp_ver", "fsdp_ver"),
])
def test_completion_span_covers_what_is_typed(tree, name, text, typed):
    rows = text.split("\n")
    line, character = len(rows) - 1, len(rows[-1])
    span = knowledge.completion_span(str(tree / name), text, line, character)
    assert span is not None and rows[line][span.character:span.end_character] == typed
    items = knowledge._complete(str(tree / name), text, line, character)
    assert items and all(i.label.startswith(typed.strip('"')) for i in items[:1])


def test_public_functions_never_raise_on_nonsense():
    assert hover("", "", 0, 0) is None
    assert complete("", "", 0, 0) == []
    assert hover("x.json", "{", 99, 99) is None
    assert complete("x.sh", None, 0, 0) == []  # type: ignore[arg-type]
    assert hover("x.yaml", "a:\n\tb: [\n", -3, 10**9) is None
    assert knowledge.completion_span("ds_config.json", "{", 5, -1) is None


def test_scanners_agree_with_the_readers_on_every_well_formed_fixture():
    """On a file its reader parses, the forgiving scanner finds each setting the reader found, at
    the reader's position and with the reader's path (flow mappings `{a: 1}` aside)."""
    from shardshift import formats
    from shardshift.source import split_pointer

    checked = 0
    for path in sorted(FIXTURES.rglob("*")):
        if not path.is_file() or path.suffix not in (".json", ".yaml", ".yml", ".toml"):
            continue
        text = path.read_text(encoding="utf-8")
        family = knowledge.format_of(str(path), text)
        if family is None or formats.detect(str(path), text) != family:
            continue
        document = formats.reader(family).read(text, str(path))
        if document.syntax is not None or document.root is None:
            continue
        scan = {"json": knowledge._scan.json_token, "yaml": knowledge._scan.yaml_token,
                "toml": knowledge._scan.toml_token}[knowledge.syntax_of(family, str(path))]
        rows = text.split("\n")
        for pointer, line, column in document.settings():
            parts = tuple(split_pointer(pointer))
            if any(p.isdigit() for p in parts) or "{" in rows[line - 1][:column - 1]:
                continue  # list items and flow mappings: not what a key hover is for
            token = scan(text, line - 1, column)
            assert token is not None and token.path == parts, (str(path), pointer, line, column)
            checked += 1
    assert checked > 1000


# --- broken, half-typed text never raises ---------------------------------------------------------------


def _fixture_files() -> list[Path]:
    picks = [
        FIXTURES / "deepspeed" / "zero3_offload_fp16.jsonc.json",
        FIXTURES / "deepspeed" / "zero2_bf16_adamw.json",
        FIXTURES / "accelerate" / "fsdp.yaml",
        FIXTURES / "accelerate" / "deepspeed_inline.yaml",
        FIXTURES / "axolotl" / "lora.yaml",
        FIXTURES / "torchtitan" / "rules" / "TT001" / "bad.toml",
        FIXTURES / "megatron" / "llama_8b_tp2_pp2.sh",
        FIXTURES / "megatron" / "rules" / "MG005" / "bad.args",
        FIXTURES / "setups" / "consumers" / "hf_launcher" / "scripts" / "train.sh",
    ]
    return [p for p in picks if p.is_file()]


FILES = _fixture_files()


def test_every_format_has_a_fixture():
    assert {knowledge.format_of(str(p), p.read_text(encoding="utf-8")) for p in FILES} == \
        {"deepspeed", "accelerate", "axolotl", "torchtitan", "megatron", "trainer"}


@settings(max_examples=120)
@given(index=st.integers(0, len(FILES) - 1), cut=st.floats(0, 1), where=st.floats(0, 1),
       junk=st.sampled_from(["", '"', "{", ":", "\\", "[", "--", " ", "\n  ", "é😀", "#"]))
def test_cut_fixtures_never_raise(index, cut, where, junk):
    path = FILES[index]
    text = path.read_text(encoding="utf-8")
    text = text[:int(len(text) * cut)] + junk
    offset = int(len(text) * where)
    line = text.count("\n", 0, offset)
    character = offset - (text.rfind("\n", 0, offset) + 1)
    info = knowledge._hover(str(path), text, line, character)
    items = knowledge._complete(str(path), text, line, character)
    if info is not None:
        assert isinstance(info.markdown, str) and info.span.line == line
        assert len(info.markdown.splitlines()) <= 25
        assert 0 <= info.span.character <= info.span.end_character
    assert all(isinstance(i, CompletionItem) and i.kind in ("key", "flag", "value") for i in items)
