"""Reporters: one module per output format. They format a CheckResult and decide nothing."""

REPORTERS = {
    "text": "shardshift.report.text",
    "json": "shardshift.report.json",
}
