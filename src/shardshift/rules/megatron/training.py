"""Megatron rules: training (see the rule classes for what each checks)."""

from __future__ import annotations
