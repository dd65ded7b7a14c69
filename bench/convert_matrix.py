"""What conversions keep, measured: every source format to every target, each output read back.

For up to N files per source format (the shared corpus, else the fixtures), `shardshift convert` to each
target; the output is written to a temporary file, read back with the target's own reader, and the
fields that decide what a run trains (world size, parallel degrees, batch triple, precision, sharding
stage, learning rate, scheduler) are compared with the source setup's merged Plan:

- kept: the same value on both sides;
- changed: both set, different values;
- vanished: set in the source, unset in the output (the target's own default then applies, which is
  a silent change whenever that default differs);
- appeared: unset in the source, set in the output (a value the writer chose);
- and, for changed or vanished fields, whether the report said `exact` for the setting that set it.

This is the measure issue 21 starts from (a Plan whose unset fields mean "the source's default", and
reports written per pair); it prints a Markdown table (`bench/CONVERT.md` holds the last run). Usage:

    python bench/convert_matrix.py [--per-format N] [--out bench/CONVERT.md] [--files DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"

FIELDS = ("world.world_size", "parallelism.tensor", "parallelism.pipeline", "parallelism.context",
          "parallelism.expert", "parallelism.data_parallel_shard", "batch.micro", "batch.global_",
          "batch.accumulation", "precision.param_dtype", "sharding.stage", "optimizer.lr", "scheduler.name")

# (source format, where its files are, file filter)
SOURCES = (
    ("deepspeed", SHARED / "corpus" / "deepspeed", ".json"),
    ("accelerate", SHARED / "corpus" / "accelerate", ".yaml"),
    ("axolotl", SHARED / "corpus" / "axolotl", ".yaml"),
    ("torchtitan", SHARED / "corpus" / "torchtitan", ".toml"),
    ("megatron", SHARED / "corpus" / "megatron-scripts", ".sh"),
    ("megatron", SHARED / "corpus" / "megatron", ".args"),
    ("fsdp2", SHARED / "corpus" / "fsdp2", ".py"),
    ("launch", SHARED / "corpus" / "wild", ".sh"),
    ("launch", ROOT / "fixtures" / "launch", ".sh"),
    ("plan", ROOT / "fixtures", ".plan.yaml"),
)

def _output_names() -> dict[str, str]:
    """A file name each target's reader recognises (formats.OUTPUTS)."""
    from shardshift import formats

    return {target: name for target, (_, name) in formats.OUTPUTS.items()}


OUTPUT_NAMES = _output_names()


def sources(per_format: int, folder_given: Path | None = None) -> list[tuple[str, str]]:
    """Up to `per_format` files per source format: from SOURCES, or every file under `folder_given`
    whose format shardshift recognises (a set collected for a blind measurement)."""
    from shardshift.check import load

    out: list[tuple[str, str]] = []
    taken: Counter = Counter()
    if folder_given is not None:
        for path in sorted(p for p in folder_given.rglob("*") if p.is_file()):
            document = load(str(path), explicit=False)
            if document is None or document.syntax is not None or document.plan is None or \
                    document.format == "python" or taken[document.format] >= per_format:
                continue
            out.append((document.format, str(path)))
            taken[document.format] += 1
        return out
    for name, folder, suffix in SOURCES:
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*" + suffix)):
            if taken[name] >= per_format:
                break
            document = load(str(path), explicit=False)
            if document is None or document.format != name or document.syntax is not None or document.plan is None:
                continue
            out.append((name, str(path)))
            taken[name] += 1
    return out


def _value(plan, dotted: str):
    from shardshift.plan import Unknown

    try:
        value = plan.get(dotted)
    except (AttributeError, KeyError):
        return None
    return "unknown" if isinstance(value, Unknown) else value


def _entry_for(migration, plan, dotted: str):
    """The report's entry for the setting that set `dotted` in the source (by the place the Plan
    records), or for the source framework's default (an entry named by the field)."""
    from shardshift.resolve import is_default

    where = plan.provenance.get(dotted)
    if where is None:
        return None
    shown = os.path.basename(where.file or "")
    for entry in migration.entries:
        if is_default(where):
            if entry.source == dotted:
                return entry
            continue
        if entry.file is not None and os.path.basename(entry.file) != shown:
            continue
        if where.pointer and entry.source == where.pointer:
            return entry
        if not where.pointer and (entry.line, entry.column) == (where.line, where.column):
            return entry
    return None


def _field_entry(migration, dotted: str):
    """The report's entry named by the field itself (a source default, a value the writer chose)."""
    return next((e for e in migration.entries if e.source == dotted), None)


BLANKET = ("key table", "no Axolotl key: shardshift has no", "carried through the neutral Plan")


def measure(per_format: int, folder: Path | None = None) -> tuple[dict, Counter]:
    """Per (source format, target): counts of deciding fields kept / changed / vanished / appeared,
    compared on both sides *resolved* with their framework's defaults; and the report's faults:
    `said exact` (a changed or vanished field whose entry says exact), `silent` (a changed or
    vanished field with no entry at all), `no entry` (a source setting the report does not list),
    `blanket` (an entry that only says no table exists)."""
    from shardshift import api
    from shardshift.check import load
    from shardshift.migration import STATED, UNUSED_AXIS, source_settings
    from shardshift.resolve import resolve, resolve_document

    results: dict = {}
    failures: Counter = Counter()
    with tempfile.TemporaryDirectory() as scratch:
        for source_format, path in sources(per_format, folder):
            try:
                setup = api.load(path)
                source_plan = resolve_document(setup.documents[0], setup.plan)
            except Exception:  # noqa: BLE001 - a measurement: count it and go on
                failures[(source_format, "load")] += 1
                continue
            for target in api.targets():
                row = results.setdefault((source_format, target), Counter())
                try:
                    migration = api.convert(path, target)
                except Exception:  # noqa: BLE001
                    failures[(source_format, target)] += 1
                    continue
                row["conversions"] += 1
                row["blanket"] += sum(any(b in e.reason for b in BLANKET) for e in migration.entries)
                same_format = target in (source_format, "megatron-args" if source_format == "megatron" else "")
                if not same_format:  # a round trip reports the file's own keys, as written
                    listed = {(os.path.basename(e.file) if e.file else None, e.source) for e in migration.entries}
                    for document in setup.documents:
                        name = None if document is setup.documents[0] else os.path.basename(document.path)
                        row["no entry"] += sum((name, pointer) not in listed
                                               for pointer, _, _ in source_settings(document))
                out = os.path.join(scratch, OUTPUT_NAMES[target])
                with open(out, "w", encoding="utf-8") as handle:
                    handle.write(migration.text)
                document = load(out, explicit=True)
                plan = document.plan if document is not None and document.syntax is None else None
                if plan is None:
                    row["not read back"] += 1
                    continue
                plan = resolve(plan, document.format, out)
                for dotted in FIELDS:
                    before, after = _value(source_plan, dotted), _value(plan, dotted)
                    if before is None and after is None:
                        continue
                    if before == after:
                        row["kept"] += 1
                    elif after is None:
                        row["vanished"] += 1
                    elif before is None:
                        row["appeared"] += 1
                    else:
                        row["changed"] += 1
                    if before is not None and before != "unknown" and before != after and not same_format:
                        entry = _entry_for(migration, source_plan, dotted)
                        if entry is None:
                            row["silent"] += 1
                        elif entry.status == "exact":
                            row["said exact"] += 1
                    elif before == "unknown" and after not in (None, "unknown") and not same_format:
                        # the output states a value the source does not know: the report must say unknown
                        entry = _entry_for(migration, source_plan, dotted) or _field_entry(migration, dotted)
                        if entry is None or entry.status != "unknown":
                            row["unknown unnamed"] += 1
                    elif before is None and after not in (None, "unknown") and dotted in STATED and not same_format \
                            and not (dotted in UNUSED_AXIS and after == 1):
                        # a value the writer chose where the source sets none (plain data parallel
                        # becoming fully sharded): a change of the run, which needs an entry
                        if _field_entry(migration, dotted) is None:
                            row["appeared silent"] += 1
    return results, failures


def table(results: dict, failures: Counter, per_format: int) -> str:
    columns = ("conversions", "not read back", "kept", "changed", "vanished", "appeared", "said exact", "silent",
               "no entry", "blanket", "unknown unnamed", "appeared silent")
    lines = [
        "# What conversions keep, measured (`python bench/convert_matrix.py`)",
        "",
        f"Up to {per_format} files per source format, converted to every target, each output read back with "
        "the target's reader and compared with the source setup's merged Plan, both resolved with their framework's "
        f"defaults, on the fields that decide what a run trains: {', '.join(f'`{f}`' for f in FIELDS)}. "
        "*vanished*: set in the source, unset in the output; *appeared*: a value the writer chose; *said exact*: a "
        "changed or vanished field whose source setting the report calls `exact`; *silent*: one the report has "
        "no entry for; *no entry*: source settings the report does not list; *blanket*: entries that only say "
        "no table exists; *unknown unnamed*: a field the source does not know that the output states, with no `unknown` \
entry; *appeared silent*: a world, degree, precision or sharding stage the writer chose where the source sets none, \
with no entry. Counts are fields (or settings, or entries) over all files.",
        "",
        "| source | target | " + " | ".join(columns) + " |",
        "|---|---|" + "---|" * len(columns),
    ]
    totals: Counter = Counter()
    for (source, target), row in sorted(results.items()):
        lines.append(f"| {source} | {target} | " + " | ".join(str(row[c]) for c in columns) + " |")
        totals.update(row)
    lines.append("| **all** | | " + " | ".join(f"**{totals[c]}**" for c in columns) + " |")
    if failures:
        lines += ["", "Conversions that raised: " + ", ".join(f"{s} → {t}: {n}" for (s, t), n in sorted(failures.items()))]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-format", type=int, default=8)
    parser.add_argument("--out", help="write the table here too")
    parser.add_argument("--files", type=Path, help="measure the files under this folder instead of the corpus")
    args = parser.parse_args(argv)
    folder = args.files.resolve() if args.files else None
    os.chdir(ROOT)
    results, failures = measure(args.per_format, folder)
    text = table(results, failures, args.per_format)
    sys.stdout.write(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
