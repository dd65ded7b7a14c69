"""Write src/shardshift/data/defaults/transformers.json: the `TrainingArguments` defaults of every
transformers release shardshift knows from 4.30.0 on, read from each release's own
`transformers/training_args.py` with `ast` (downloaded as a wheel, never installed or imported).

For each field the record is one of:
- {"value": V, "line": N}: `field(default=V)` (or `= V`) with a literal V, at line N;
- {"values": [A, B], "condition": "...", "line": N}: a default that depends on the environment the
  Trainer runs in (`default_optim = "adamw_torch"`, then `if ...: default_optim = "adamw_torch_fused"`):
  A, or B when the condition holds;
- {"unknown": "why", "line": N}: anything else (the default is computed in a way not read here).

    python scripts/defaults/transformers_defaults.py [--cache DIR]   # downloads missing wheels into DIR
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "src" / "shardshift" / "data" / "defaults" / "transformers.json"
FIRST = (4, 30, 0)
SOURCE = "transformers/training_args.py"
FIELDS = ("optim", "learning_rate", "adam_beta1", "adam_beta2", "adam_epsilon", "weight_decay", "max_grad_norm",
          "lr_scheduler_type", "warmup_steps", "per_device_train_batch_size", "gradient_accumulation_steps",
          "bf16", "fp16")


def _literal(node: ast.AST):
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def _default_node(statement: ast.AnnAssign) -> ast.AST | None:
    value = statement.value
    if isinstance(value, ast.Call) and getattr(value.func, "id", None) == "field":
        return next((k.value for k in value.keywords if k.arg == "default"), None)
    return value


def _assigned(statements: list[ast.stmt], name: str) -> list[ast.Assign]:
    return [s for s in statements if isinstance(s, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == name for t in s.targets)]


def read_defaults(text: str) -> dict[str, dict]:
    tree = ast.parse(text)
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "TrainingArguments"), None)
    if cls is None:
        return {name: {"unknown": "no class TrainingArguments", "line": 0} for name in FIELDS}
    out: dict[str, dict] = {}
    body = cls.body
    for name in FIELDS:
        statement = next((s for s in body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
                          and s.target.id == name), None)
        if statement is None:
            out[name] = {"unknown": f"TrainingArguments has no field {name}", "line": 0}
            continue
        node = _default_node(statement)
        line = statement.lineno
        if node is None:
            out[name] = {"unknown": "no default", "line": line}
            continue
        ok, value = _literal(node)
        if ok:
            out[name] = {"value": value, "line": line}
            continue
        if isinstance(node, ast.Name):
            before = [s for s in body if s.lineno < line]
            plain = _assigned(before, node.id)
            branches = [s for s in before if isinstance(s, ast.If) and any(
                _assigned(list(ast.walk(s)), node.id) for _ in [0])]
            if len(plain) == 1 and _literal(plain[0].value)[0]:
                base = _literal(plain[0].value)[1]
                if not branches:
                    out[name] = {"value": base, "line": plain[0].lineno}
                    continue
                inner = [a for b in branches for a in ast.walk(b) if isinstance(a, ast.Assign)
                         and any(isinstance(t, ast.Name) and t.id == node.id for t in a.targets)]
                tests = [ast.unparse(n.test) for b in branches for n in ast.walk(b) if isinstance(n, ast.If)]
                values = [_literal(a.value) for a in inner]
                if len(values) == 1 and values[0][0]:
                    out[name] = {"values": [base, values[0][1]], "condition": " and ".join(tests),
                                 "line": plain[0].lineno}
                    continue
        out[name] = {"unknown": f"computed: {ast.unparse(node)[:80]}", "line": line}
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cache", default="/tmp/transformers-wheels")
    args = parser.parse_args()
    from release_sources import release_wheels  # beside this script

    releases: dict[str, dict] = {}
    for shown, archive in release_wheels("transformers", FIRST, Path(args.cache)):
        text = archive.read(SOURCE).decode("utf-8")
        releases[shown] = read_defaults(text)
        print(shown, releases[shown]["optim"], file=sys.stderr)
    # the defaults repeat from release to release: each distinct set once, each release with its lines
    variants: list[dict] = []
    compact: dict[str, list] = {}
    for shown, fields in releases.items():
        variant = {name: {k: v for k, v in record.items() if k != "line"} for name, record in fields.items()}
        if variant not in variants:
            variants.append(variant)
        compact[shown] = [variants.index(variant), {name: record["line"] for name, record in fields.items()}]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"source": SOURCE, "generator": "scripts/defaults/transformers_defaults.py",
                               "variants": variants, "releases": compact}, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
