"""One setting given in two linked files (a YAML or script and the ds_config it names)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from shardshift.plan import known
from shardshift.rules.base import Context, Finding, PlanRule, name_of

if TYPE_CHECKING:
    from shardshift.setup import Conflict, Setup


class SettingInTwoFiles(PlanRule):
    """A setting is given both in a file and in the ds_config it names, and they disagree.

    ## What it does
    Follows the references between the files of one training run (an Accelerate config's
    `deepspeed_config_file`, an Axolotl config's `deepspeed:`) and reports each setting both
    files give, with what the framework does about it: some pairs it refuses at launch whatever
    the values (Accelerate with `deepspeed_config_file`), some it refuses when the values
    differ (the Hugging Face Trainer's "mismatch" check, which fills `"auto"` instead), and some
    it resolves silently in favour of one file (a ds_config `optimizer` block beats the Axolotl
    `optimizer:`). The finding is on the referring file's line, with the ds_config's place as a
    related location. Two cases involve one file only: a setting Accelerate refuses next to
    `deepspeed_config_file` is reported even when the ds_config does not set it, and a ds_config
    value that transformers compares with its own default (`max_grad_norm` 1.0, `weight_decay`
    0.0) when the Axolotl config is silent is reported on the ds_config, with the reference as
    the related location. These claims are checked against Accelerate and transformers
    themselves (tests/test_setup_oracle.py). A setting the framework's precedence does not cover is reported as an info
    that names both values: shardshift does not guess which one is used.

    ## Why is this bad
    The refusals come only at launch, after the job got its GPUs; the silent cases train with a
    value the user did not mean to use, and nothing in either file says so.

    ## Example
    ```yaml
    # accelerate_config.yaml
    distributed_type: DEEPSPEED
    deepspeed_config:
      deepspeed_config_file: ds_config.json
      gradient_accumulation_steps: 4
    ```
    with `"gradient_accumulation_steps": 8` in ds_config.json

    ## Use instead
    Give each setting in one place: here, keep `gradient_accumulation_steps` in ds_config.json
    and delete it from the YAML (or write `"auto"` in the ds_config where the framework fills it).
    """

    code = "PL001"
    name = "setting-in-two-files"
    severity = "error"

    def check_setup(self, setup: Setup, context: Context) -> Iterable[Finding]:
        for conflict in setup.conflicts:
            finding = self._finding(conflict)
            if finding is not None:
                yield finding

    def _finding(self, conflict: Conflict) -> Finding | None:
        ours_at = conflict.referrer.plan.provenance.get(conflict.field) if conflict.referrer.plan else None
        theirs_at = conflict.referenced.plan.provenance.get(conflict.field) if conflict.referenced.plan else None
        rule = conflict.precedence
        if rule is not None and conflict.referenced_value is None and ours_at is not None:
            return self._alone(conflict, ours_at, rule)
        if rule is not None and conflict.referrer_value is None and theirs_at is not None:
            return self._default(conflict, theirs_at, rule)
        if ours_at is None or theirs_at is None:
            return None
        from shardshift.setup import shown

        ours, theirs = conflict.referrer_value, conflict.referenced_value
        here, there = name_of(ours_at, conflict.field), name_of(theirs_at, conflict.field)
        other = _called(theirs_at.file, ours_at.file)
        if here == there:
            both = f"{here} is {shown(ours)} here and " + ("in" if ours == theirs else f"{shown(theirs)} in") + \
                f" {other}"
        else:
            both = f"{here} is {shown(ours)} here and {there} is {shown(theirs)} in {other}"
        related = [self.related_at(theirs_at, f"{there} is set here too")]
        rule = conflict.precedence
        if rule is None:
            return self.finding_at(ours_at, f"{both}; shardshift does not know which one the framework uses: give it "
                                            "in one file", severity="info", related=related)
        if rule.outcome == "refuses":
            return self.finding_at(ours_at, f"{both}: {rule.says}; remove {here} from this file and keep it in "
                                            f"{other}", related=related)
        if known(ours) is None or known(theirs) is None:
            return None  # an unknown or "auto" value: nothing to compare
        if rule.outcome == "mismatch":
            return self.finding_at(ours_at, f"{both}: {rule.says}; make them equal, or write \"auto\" for {there} in "
                                            f"{other}", related=related)
        used = f"the value in {other} is used and this one does nothing" if rule.outcome == "referenced" else \
            f"this value is used and the one in {other} does nothing"
        return self.finding_at(ours_at, f"{both}: {rule.says}, so {used}; keep it in one file", severity="warning",
                               related=related)


    def _alone(self, conflict: Conflict, ours_at, rule) -> Finding:
        """A refused setting that only the referring file gives."""
        from shardshift.setup import shown

        here = name_of(ours_at, conflict.field)
        other = _called(conflict.referenced.path, ours_at.file)
        related = [self.related_at(conflict.via, f"{other} is named here")] if conflict.via else []
        return self.finding_at(ours_at, f"{here} is {shown(conflict.referrer_value)} here while this file names "
                                        f"{other}: {rule.says}; remove {here} from this file and set it in {other}",
                               related=related)

    def _default(self, conflict: Conflict, theirs_at, rule) -> Finding:
        """A ds_config value the framework compares with its default, the referring file being silent."""
        from shardshift.setup import shown

        there = name_of(theirs_at, conflict.field)
        referrer = _called(conflict.referrer.path, theirs_at.file)
        key = rule.key or conflict.field
        related = [self.related_at(conflict.via, f"{referrer} names this file here, without {key}")] \
            if conflict.via else []
        return self.finding_at(theirs_at, f"{there} is {shown(conflict.referenced_value)} here but {referrer} does "
                                          f"not set {key}, so its default {shown(rule.default)} is compared: "
                                          f"{rule.says}; write \"auto\" for {there}, or set {key} in {referrer}",
                               related=related)


def _called(path: str, beside: str) -> str:
    """`path` as short as it stays clear: its name when it sits beside `beside`."""
    import os

    return os.path.basename(path) if os.path.dirname(path) == os.path.dirname(beside) else path
