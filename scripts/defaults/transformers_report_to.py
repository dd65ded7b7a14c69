"""Write src/shardshift/data/defaults/transformers_report_to.json: the `report_to` names each transformers
release from 4.10.0 on takes, read with `ast` from the keys of `INTEGRATION_TO_CALLBACK` in its own
`transformers/integrations/integration_utils.py` (`transformers/integrations.py` before 4.32), downloaded as
a wheel, never installed or imported. `Trainer.__init__` raises `ValueError: X is not supported, only ... are
supported.` for a name that is not a key (rules/transformers/trainer.py, TA009).

    python scripts/defaults/transformers_report_to.py [--cache DIR]   # downloads missing wheels into DIR
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "src" / "shardshift" / "data" / "defaults" / "transformers_report_to.json"
FIRST = (4, 10, 0)
SOURCES = ("transformers/integrations/integration_utils.py", "transformers/integrations.py")


def read_names(text: str) -> tuple[list[str], int]:
    """The keys of the module's `INTEGRATION_TO_CALLBACK` dict literal, and its line."""
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "INTEGRATION_TO_CALLBACK"
                                                for t in node.targets) and isinstance(node.value, ast.Dict):
            names = [k.value for k in node.value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
            if len(names) != len(node.value.keys):
                raise ValueError("INTEGRATION_TO_CALLBACK has a key that is not a string literal")
            return names, node.lineno
    raise ValueError("no INTEGRATION_TO_CALLBACK dict literal")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cache", default="/tmp/transformers-wheels")
    args = parser.parse_args()
    from release_sources import release_wheels  # beside this script

    variants: list[list[str]] = []
    releases: dict[str, list] = {}
    for shown, archive in release_wheels("transformers", FIRST, Path(args.cache)):
        present = set(archive.namelist())
        source = next(s for s in SOURCES if s in present)
        names, line = read_names(archive.read(source).decode("utf-8"))
        if names not in variants:
            variants.append(names)
        releases[shown] = [variants.index(names), source, line]
        print(shown, len(names), file=sys.stderr)
    OUT.write_text(json.dumps({"generator": "scripts/defaults/transformers_report_to.py", "variants": variants,
                               "releases": releases}, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
