"""FSDP2 rules for the pitfalls of the reference catalog (fsdp2.md §9 and §10) not covered in rules.py."""

from __future__ import annotations
