"""SS003: suppression comments that suppressed nothing. The check engine computes these after
the other rules ran (shardshift.suppress); this module holds the rule's code and documentation."""

from __future__ import annotations

from typing import Iterable

from shardshift.document import Document
from shardshift.rules.base import Context, Finding, Rule


class UnusedSuppression(Rule):
    """A suppression comment that suppressed nothing.

    ## What it does
    Reports a `shardshift: ignore[CODE]` comment when no `CODE` finding occurred on the line it
    covers (its own line, and for a comment alone on its line the next line), a bare
    `shardshift: ignore` that covered no finding, a code that is not a rule, and a directive that
    cannot be read. Codes switched off for the file (by `--select`, `--ignore` or
    per-file-ignores) are not reported: their findings could not occur.

    ## Why is this bad
    A stale suppression hides the next real problem on that line: after the setting was fixed
    or moved, the comment still silences the rule there. Misspelled codes suppress nothing.

    ## Example
    ```yaml
    mixed_precision: bf16  # shardshift: ignore[DS101]
    ```

    ## Use instead
    ```yaml
    mixed_precision: bf16
    ```
    """

    code = "SS003"
    name = "unused-suppression"
    severity = "warning"

    def check(self, document: Document, context: Context) -> Iterable[Finding]:
        return ()  # computed by the check engine from the other rules' findings
