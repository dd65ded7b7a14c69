"""Write the AX110 fixtures (and the extra bad fixtures of the older AX rules that mirror Axolotl
check sites) from shardshift/rules/axolotl/schema_checks.py, and print the coverage-map lines of
their sites.

    python scripts/coverage/axolotl_fixtures.py > /tmp/ax110.tsv

A bad fixture is BASE (a config Axolotl 0.21.0 validates) with the row's `example` merged in (a
None value removes the key); good.yaml is BASE with the keys the rows read, set the accepted way.
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from shardshift.rules.axolotl.schema_checks import CHECKS  # noqa: E402

BASE = {"base_model": "org/model", "datasets": [{"path": "org/data", "type": "alpaca"}], "micro_batch_size": 1,
        "gradient_accumulation_steps": 1, "learning_rate": 0.0001, "num_epochs": 1}
GOODS = {
    "good.yaml": {},
    "good_pairs.yaml": {"warmup_steps": 10, "save_strategy": "steps", "save_steps": 100, "val_set_size": 0.05,
                        "eval_strategy": "steps", "eval_steps": 50, "gradient_checkpointing": True,
                        "activation_offloading": True, "attn_implementation": "flash_attention_2",
                        "torch_compile": True, "torch_compile_options": {"shape_padding": True},
                        "fsdp_version": 2, "fsdp_config": {"reshard_after_forward": True}, "fp32_norms": True,
                        "context_parallel_size": 2, "tensor_parallel_size": 1, "optimizer": "adamw_torch_fused"},
}
FOLDER = ROOT / "fixtures" / "axolotl" / "rules" / "AX110"


def merged(example: dict) -> dict:
    data = dict(BASE)
    for key, value in example.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    return data


def main() -> int:
    FOLDER.mkdir(parents=True, exist_ok=True)
    (FOLDER / "requirements.txt").write_text("axolotl==0.21.0\n")
    for name, extra in GOODS.items():
        (FOLDER / name).write_text("# AX110: a config axolotl 0.21.0 validates\n"
                                   + yaml.safe_dump(merged(extra), sort_keys=False))
    for row in CHECKS:
        (FOLDER / f"bad_{row.slug}.yaml").write_text(f"# AX110: {row.site}\n"
                                                     + yaml.safe_dump(merged(row.example), sort_keys=False))
        print(f"{row.site}\tAX110\taxolotl/rules/AX110/bad_{row.slug}.yaml")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
