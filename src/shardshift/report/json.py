"""`--format json`: one object {"findings": [...], "files": [...], "summary": {...}}.

This shape is a public contract: fields are only ever added."""

from __future__ import annotations

import json

from shardshift.check import CheckResult


def render(result: CheckResult) -> str:
    return json.dumps(result.to_json(), indent=2, ensure_ascii=False) + "\n"
