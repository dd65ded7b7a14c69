"""What an MG301 row is (src/shardshift/rules/megatron/refused.py): the check it mirrors, its condition over the values
validate_args sees (`Values`: an undecided one raises `Undecided`), and what Megatron says."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from shardshift.rules.megatron.base import Flags
from shardshift.rules.megatron.training import UNKNOWN, Args


class Undecided(Exception):
    """A value the row's condition needs and the arguments do not decide."""


class Values:
    """What a row's condition reads: `v("dest")` is the value validate_args sees (given, else the default)."""

    def __init__(self, args: Args, flags: Flags, world: int | None) -> None:
        self.args, self.flags, self._world = args, flags, world

    def __call__(self, dest: str) -> Any:
        if not self.flags.table.by_dest.get(dest) and not self.flags.given(dest):
            raise Undecided(dest)  # no flag of the program's parser (a fork's without it): what it holds is unknown
        value = self.args(dest)
        if value is UNKNOWN:
            raise Undecided(dest)
        return value

    def given(self, dest: str) -> bool:
        """Whether the flag is written (an unresolved splice may write any: undecided when not)."""
        if self.flags.given(dest):
            return True
        if self.args.open:
            raise Undecided(dest)
        return False

    def world(self) -> int:
        if self._world is None:
            raise Undecided("world size")
        return self._world


@dataclass(frozen=True)
class Refusal:
    site: str  # the coverage map's id of the check it mirrors
    at: str  # the dest the finding points at
    refused: Callable[[Values], bool]  # True when Megatron refuses the values
    says: str  # what Megatron does, in its words: "it asserts `cond`: <its message>" or "it raises ValueError: ..."
    fix: str  # what to write instead
    involved: tuple[str, ...] = ()  # the other dests of the condition (shown where given)
    stage: str = "validate"  # a key of STOPS: "validate" (validate_args), "config" (TransformerConfig.__post_init__),
    # "startup" (initialize_model_parallel), "specs", "optimizer", "training"
