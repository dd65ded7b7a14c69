"""What decides a finding beyond the file itself: the program that receives a file's flags or
loads it, the consumer of a config, and the framework release that runs it.

Values a file cannot decide are *unknown values* (`plan.Unknown`); in the same way, a fact about
the run that shardshift could not find is *unknown context*. A finding that needs it is never an
error or a warning: it is an info that says what is unknown and how to tell the tool
(`UnknownContext`), counted in the summary like unknown values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# program: which code parses the flags or loads the file (Megatron's entry script, a fork);
# consumer: who reads a config (the HF Trainer that fills "auto"); release: the framework version;
# extension: a plugin or custom module that adds keys the framework's own table lacks; reader: the code
# that loads a config (the repository's own config manager); role: what the file is (a template, an
# inference config, another program's JSON); readers: the repository's own code that reads a key.
ContextKind = Literal["program", "consumer", "release", "extension", "reader", "role", "readers", "value"]

Version = tuple[int, ...]

# The frameworks whose release shardshift can be told (`--<name>-version`, `<name>-version` in
# [tool.shardshift]) and detects from a repository's dependency files.
FRAMEWORKS = ("deepspeed", "megatron-core", "accelerate", "transformers", "axolotl", "torchtitan", "torch")

# The framework whose release judges each format (a Megatron launch is judged by megatron-core).
FORMAT_FRAMEWORK = {
    "deepspeed": "deepspeed",
    "megatron": "megatron-core",
    "accelerate": "accelerate",
    "axolotl": "axolotl",
    "torchtitan": "torchtitan",
    "fsdp2": "torch",
    "python": "transformers",
}


@dataclass(frozen=True, slots=True)
class UnknownContext:
    """Why a finding is only an info: `what` could not be found, `how` tells the tool."""

    kind: ContextKind
    what: str  # what shardshift could not find, in a clause ("the program pretrain_yuan.py is not in the checked tree")
    how: str  # how to tell the tool ("check the repository that holds pretrain_yuan.py with the script")

    def to_json(self) -> dict:
        return {"kind": self.kind, "what": self.what, "how": self.how}


@dataclass(frozen=True, slots=True)
class Release:
    """The release of `framework` that judges a file, and where that came from: `version` None is
    the newest release shardshift knows (`source` then says that no pin was found)."""

    framework: str
    version: Version | None
    source: str  # "--axolotl-version", "[tool.shardshift] axolotl-version", "requirements.txt:3", "no pin found"
    detail: str = ""  # the pin as written ("axolotl==0.12.2", "deepspeed>=0.14,<0.16")
    # how the repository installs it when `version` is None but a place was found: "unpinned" (listed or
    # installed without a version, or from the upstream default branch: the newest when installed),
    # "fork" (from another repository than the framework's own: its release is unknown), "build" (the
    # framework's own container image under a branch tag such as main-py3.11-cu124-2.5.1: a build of an
    # unknown commit, no release)
    basis: str = ""

    @property
    def pinned(self) -> bool:
        return self.version is not None

    def text(self) -> str:
        """`axolotl 0.12.2 (requirements.txt:3)` or `the newest axolotl (no pin found)`."""
        if self.version is None:
            if self.basis == "fork":
                return f"a fork of {self.framework} ({self.source}: {self.detail})"
            if self.basis == "build":
                return f"a branch build of {self.framework} ({self.source}: {self.detail})"
            return f"the newest {self.framework} ({self.source})"
        return f"{self.framework} {'.'.join(map(str, self.version))} ({self.source})"

    def to_json(self) -> dict:
        return {"framework": self.framework,
                "version": None if self.version is None else ".".join(map(str, self.version)),
                "source": self.source, "detail": self.detail, **({"basis": self.basis} if self.basis else {})}


@dataclass(frozen=True, slots=True)
class CoveredReleases:
    """The releases of a framework that a version table was read from: a pin outside them is
    unknown context (what that release does is not in the table), never a guess."""

    framework: str  # as users spell it in messages: "Axolotl", "torchtitan"
    oldest: Version
    newest: Version
    table: str  # which table covers them, with its verb: "tables cover", "key table covers"
    question: str  # what is unknown for such a pin: "whether that release does this"
    how: str

    def covers(self, release: Release) -> bool:
        """Whether the table covers `release` (no pin: the newest, which it does)."""
        return release.version is None or self.oldest <= tuple(release.version)[:3] <= self.newest

    def uncovered(self, release: Release) -> UnknownContext:
        from shardshift.versions import version_text

        side = "older" if tuple(release.version or ()) < self.oldest else "newer"
        return UnknownContext(
            "release", f"the pin {release.text()} is {side} than the {self.framework} releases shardshift's "
                       f"{self.table} ({version_text(self.oldest)} "
                       f"to {version_text(self.newest)}), so {self.question} is unknown", self.how)
