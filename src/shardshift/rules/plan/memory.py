"""PL201: a setup that cannot fit in the GPU memory given (the planner's estimate)."""

from __future__ import annotations
