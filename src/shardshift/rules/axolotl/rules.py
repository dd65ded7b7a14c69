"""axolotl rules (see the rule classes)."""

from __future__ import annotations
