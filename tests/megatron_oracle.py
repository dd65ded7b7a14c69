"""Megatron-LM's own argument code as a test oracle for argument lists (tests only).

    verdicts = judge([(["--num-layers", "4", ...], 8), ...])   # (argv without program name, world size)

`judge` asks ../shared/oracles/megatron-lm whether each argument list is accepted, the way
`pretrain_gpt.py` would treat it up to building the model config: `parse_args()`, `validate_args(args)`,
`core_transformer_config_from_args(args)` (TransformerConfig.__post_init__ holds the head and
query-group divisibility checks). Importing Megatron costs ~6-9 s, so one call runs ONE child process
(tests/megatron_oracle_child.py) for the whole batch: the cases go to it as JSON on stdin, the verdicts
come back as JSON on stdout (Megatron's own output goes to stderr or into the verdicts). Megatron and
torch never load into the calling process, and nothing is cached on disk.

What the child patches in on a CPU (the import patches of scripts/dump_megatron_flags.py, a Hopper GPU's
arch/capability, a Transformer Engine version) and which environment it gives each case
(`CUDA_DEVICE_MAX_CONNECTIONS` as Megatron asks for it) is in the child's docstring. Later failures
(`initialize_model_parallel`, the microbatch calculator, the schedules) are out of reach: an `ok`
verdict means the argument list passes argument validation, not that training starts
(../shared/reference/megatron.md, 2.3).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MEGATRON = ROOT.parent / "shared" / "oracles" / "megatron-lm"
CHILD = Path(__file__).resolve().with_name("megatron_oracle_child.py")
SCRIPT = ROOT / "scripts" / "dump_megatron_flags.py"
STAGES = ("parse", "validate", "config", "exit")
# What importing megatron.training.arguments needs besides the standard library (megatron/core imports them).
PREREQUISITES = ("torch", "numpy", "packaging", "einops")
TIMEOUT = 900  # seconds for a whole batch: ~9 s of imports, then ~0.25 s a case on a 2-core machine


@dataclass(frozen=True)
class Verdict:
    ok: bool  # passed parse_args, validate_args and core_transformer_config_from_args
    stage: str | None  # "parse", "validate", "config", "exit" (exit()/sys.exit() with status 0/None); None when ok
    error: str | None  # the exception's / argparse's message (for a bare assert: its source line)
    warnings: tuple[str, ...]  # warnings.warn ("Category: text"), printed lines, logger records (WARNING+)
    args: dict | None  # resolved values after validate_args (when ok or failing at "config"), else None
    exception: str | None = None  # the exception's class name ("AssertionError", "ValueError", "SystemExit")
    where: str | None = None  # "megatron/...py:LINE: source" of the innermost Megatron frame that raised


def available(megatron: Path = MEGATRON) -> str | None:
    """None when the oracle can run, else why not (the missing folder, script or package)."""
    megatron = Path(megatron)
    if not (megatron / "megatron" / "training" / "arguments.py").is_file():
        return f"{megatron} (Megatron-LM's own code) is not present"
    for path in (CHILD, SCRIPT):
        if not path.is_file():
            return f"{path} is missing"
    missing = [name for name in PREREQUISITES if importlib.util.find_spec(name) is None]
    if missing:
        return f"{', '.join(missing)} not installed (Megatron's argument code imports them; see the oracles extra)"
    return None


def _check(cases) -> list[list]:
    checked = []
    for number, case in enumerate(cases):
        argv, world = case
        if isinstance(argv, str) or not all(isinstance(a, str) for a in argv):
            raise TypeError(f"case {number}: argv must be a list of str, got {argv!r}")
        if isinstance(world, bool) or not isinstance(world, int) or world < 1:
            raise ValueError(f"case {number}: world size must be a positive int, got {world!r}")
        checked.append([list(argv), world])
    return checked


def _verdict(raw: dict) -> Verdict:
    if raw["stage"] not in (None, *STAGES):
        raise RuntimeError(f"unknown stage from the Megatron oracle child: {raw['stage']!r}")
    return Verdict(ok=bool(raw["ok"]), stage=raw["stage"], error=raw["error"], warnings=tuple(raw["warnings"]),
                   args=raw["args"], exception=raw.get("exception"), where=raw.get("where"))


def judge(cases: list[tuple[list[str], int]], *, megatron: Path = MEGATRON,
          timeout: float = TIMEOUT) -> list[Verdict]:
    """One verdict per (argv, world size), in order, from ONE child process for the whole batch."""
    checked = _check(cases)
    if not checked:
        return []
    reason = available(megatron)
    if reason:
        raise RuntimeError(f"the Megatron oracle cannot run: {reason}")
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    done = subprocess.run([sys.executable, str(CHILD), "--megatron", str(megatron)],
                          input=json.dumps({"cases": checked}), capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env=env)
    try:
        result = json.loads(done.stdout) if done.returncode == 0 else None
    except json.JSONDecodeError:
        result = None
    if result is None or len(result.get("verdicts", ())) != len(checked):
        raise RuntimeError(f"the Megatron oracle child failed (exit status {done.returncode}); "
                           f"stdout: {done.stdout[-500:]!r}; stderr:\n{done.stderr[-4000:]}")
    return [_verdict(raw) for raw in result["verdicts"]]
