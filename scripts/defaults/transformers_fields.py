"""Write src/shardshift/data/defaults/transformers_fields.json: the fields of `TrainingArguments` and
`Seq2SeqTrainingArguments` in every transformers release from 4.10.0 on, read with `ast` from each
release's own `transformers/training_args.py` and `transformers/training_args_seq2seq.py` (downloaded as a
wheel, never installed or imported). A keyword that is no field of the release's class makes the
dataclass's `__init__` raise `TypeError: ... got an unexpected keyword argument` (rules/transformers/
arguments.py, TA010).

The table is compact: the releases in order, and for each class and field the ranges of release indexes
(first and last, both included) whose class has it.

    python scripts/defaults/transformers_fields.py [--cache DIR]   # downloads missing wheels into DIR
"""

from __future__ import annotations

import argparse
import ast
import json
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "src" / "shardshift" / "data" / "defaults" / "transformers_fields.json"
FIRST = (4, 10, 0)
SOURCES = {"TrainingArguments": "transformers/training_args.py",
           "Seq2SeqTrainingArguments": "transformers/training_args_seq2seq.py"}


def class_fields(text: str, name: str, complements: bool = False) -> list[str]:
    """The dataclass fields the class body declares (annotated names, ClassVar and private ones left out); with
    `complements`, the `no_<field>` options HfArgumentParser adds instead: one for each bool field whose default
    is True (hf_argparser.py: `if field.type is bool and field.default is True`, Optional[bool] included)."""
    for node in ast.parse(text).body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            fields = []
            for statement in node.body:
                if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                    annotation = ast.unparse(statement.annotation)
                    if "ClassVar" in annotation or statement.target.id.startswith("_") or _no_init(statement.value):
                        continue
                    if not complements:
                        fields.append(statement.target.id)
                    elif annotation.replace(" ", "") in ("bool", "Optional[bool]", "bool|None", "None|bool") and \
                            _default(statement.value) is True:
                        fields.append("no_" + statement.target.id)
            return fields
    raise ValueError(f"no class {name}")


def _default(value: ast.AST | None):
    """A field's literal default (`= True`, `field(default=True)`), else None."""
    if isinstance(value, ast.Call):
        value = next((k.value for k in value.keywords if k.arg == "default"), None)
    return value.value if isinstance(value, ast.Constant) else None


def _no_init(value: ast.AST | None) -> bool:
    """`field(..., init=False)`: not a keyword of `__init__`."""
    return isinstance(value, ast.Call) and any(k.arg == "init" and isinstance(k.value, ast.Constant)
                                               and k.value.value is False for k in value.keywords)


def release_fields(archive: zipfile.ZipFile, complements: bool = False) -> dict[str, list[str]]:
    base = class_fields(archive.read(SOURCES["TrainingArguments"]).decode("utf-8"), "TrainingArguments", complements)
    own = class_fields(archive.read(SOURCES["Seq2SeqTrainingArguments"]).decode("utf-8"), "Seq2SeqTrainingArguments",
                       complements)
    return {"TrainingArguments": base, "Seq2SeqTrainingArguments": base + [f for f in own if f not in base]}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cache", default="/tmp/transformers-wheels")
    args = parser.parse_args()
    from release_sources import release_wheels  # beside this script

    releases: list[str] = []
    per_release: list[dict[str, list[str]]] = []
    per_complement: list[dict[str, list[str]]] = []
    for shown, archive in release_wheels("transformers", FIRST, Path(args.cache)):
        per_release.append(release_fields(archive))
        per_complement.append(release_fields(archive, complements=True))
        releases.append(shown)
    OUT.write_text(json.dumps({"generator": "scripts/defaults/transformers_fields.py", "sources": SOURCES,
                               "releases": releases, "classes": _ranges(per_release),
                               "complements": _ranges(per_complement)}, sort_keys=True) + "\n")
    return 0


def _ranges(per_release: list[dict[str, list[str]]]) -> dict[str, dict[str, list[list[int]]]]:
    """Per class, each name's ranges of release indexes (first and last, both included)."""
    classes: dict[str, dict[str, list[list[int]]]] = {}
    for name in SOURCES:
        ranges: dict[str, list[list[int]]] = {}
        for index, fields in enumerate(per_release):
            for field in fields[name]:
                spans = ranges.setdefault(field, [])
                if spans and spans[-1][1] == index - 1:
                    spans[-1][1] = index
                else:
                    spans.append([index, index])
        classes[name] = dict(sorted(ranges.items()))
    return classes


if __name__ == "__main__":
    raise SystemExit(main())
