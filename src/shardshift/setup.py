"""Setups: the files that describe one training run, linked by their references and merged into
one Plan with each framework's precedence.

A reader records the files a document refers to (`Document.references`: a training script's
ds_config, an Accelerate YAML's `deepspeed_config_file`, an Axolotl YAML's `deepspeed:`). A
format module says, in its `PRECEDENCE` table, what its framework does when the referring file
and the referred-to ds_config both set the same Plan field:

- "refuses": the framework stops at launch whenever both set it, whatever the values;
- "mismatch": the framework stops at launch when both hold real values that differ; an `"auto"`
  in the ds_config is filled from the referring file;
- "referrer" / "referenced": one side silently wins (the referring file, or the ds_config).

A file that no other file refers to is a setup of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Outcome = Literal["refuses", "mismatch", "referrer", "referenced"]


@dataclass(frozen=True, slots=True)
class Precedence:
    """What a framework does when a referring file and its ds_config both set one Plan field.
    `says` is that behaviour in words for the finding, checked against the framework's code
    (e.g. "Accelerate raises a ValueError at launch when deepspeed_config_file is set")."""

    outcome: Outcome
    says: str
