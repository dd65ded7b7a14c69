"""The `plan` and `diff` commands' arguments and handlers (wired into shardshift.cli).

Imported on every CLI start to build the parser: keep this module's imports to the standard
library; import the planner inside the handlers."""

from __future__ import annotations

import sys


def add_parsers(commands) -> None:
    plan = commands.add_parser("plan", help="will this setup fit, what will each step cost (memory, communication)")
    plan.add_argument("paths", nargs="+", metavar="PATH")
    diff = commands.add_parser("diff", help="what changes between two setups, across formats")
    diff.add_argument("first", metavar="A")
    diff.add_argument("second", metavar="B")


def run_plan(args, parser) -> int:
    print("shardshift: plan is not built yet", file=sys.stderr)
    return 2


def run_diff(args, parser) -> int:
    print("shardshift: diff is not built yet", file=sys.stderr)
    return 2
