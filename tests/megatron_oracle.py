"""Megatron-LM's own argument code as a test oracle for argument lists (tests only).

    verdicts = judge([(["--num-layers", "4", ...], 8), ...])   # (argv without program name, world size)

`judge` asks ../shared/oracles/megatron-lm whether each argument list is accepted, the way
`pretrain_gpt.py` would treat it up to building the model config: `parse_args()`, `validate_args(args)`,
`core_transformer_config_from_args(args)` (TransformerConfig.__post_init__ holds the head and
query-group divisibility checks). Importing Megatron costs ~6-9 s, so one call runs ONE child process
(tests/megatron_oracle_child.py) for the whole batch: the cases go to it as JSON on stdin, the verdicts
come back as JSON on stdout (Megatron's own output goes to stderr or into the verdicts). The child stays
up for the next batch (`--serve`, one JSON line each way): a test process, or a pytest-xdist worker, imports
Megatron once whatever the number of modules that ask. Megatron and torch never load into the calling
process, and nothing is cached on disk.

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
    """One verdict per (argv, world size), in order. The batch goes to this process's one child
    (tests/megatron_oracle_child.py --serve, started at the first call): Megatron is imported once
    per test process (once per pytest-xdist worker), not once per batch."""
    given = _check(cases)
    if not given:
        return []
    # one run per distinct (argv, world): conversions of several sources often write the same list
    index = {key: number for number, key in enumerate(dict.fromkeys(json.dumps(case) for case in given))}
    checked = [json.loads(key) for key in index]
    reason = available(megatron)
    if reason:
        raise RuntimeError(f"the Megatron oracle cannot run: {reason}")
    child = _child(Path(megatron))
    try:
        child.process.stdin.write(json.dumps({"cases": checked}) + "\n")
        child.process.stdin.flush()
        line = _read_line(child.process, timeout)
    except (OSError, TimeoutError) as failure:
        line = None
        _stop(child)
        problem = f"{type(failure).__name__}: {failure}"
    else:
        problem = None
    try:
        result = json.loads(line) if line else None
    except json.JSONDecodeError:
        result = None
    if result is None or len(result.get("verdicts", ())) != len(checked):
        _stop(child)
        raise RuntimeError(f"the Megatron oracle child failed (exit status {child.process.poll()}"
                           f"{'; ' + problem if problem else ''}); stdout: {(line or '')[-500:]!r}; "
                           f"stderr:\n{child.stderr_tail()}")
    verdicts = [_verdict(raw) for raw in result["verdicts"]]
    return [verdicts[index[json.dumps(case)]] for case in given]


@dataclass
class _Child:
    process: subprocess.Popen
    log: object  # the child's stderr (Megatron's own output), a temporary file: never a full pipe

    def stderr_tail(self, size: int = 4000) -> str:
        self.log.flush()
        self.log.seek(0)
        return self.log.read()[-size:]


_CHILDREN: dict[str, _Child] = {}


def _child(megatron: Path) -> _Child:
    key = str(megatron.resolve())
    child = _CHILDREN.get(key)
    if child is not None and child.process.poll() is None:
        return child
    import atexit
    import tempfile

    log = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    process = subprocess.Popen([sys.executable, str(CHILD), "--megatron", str(megatron), "--serve"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True,
                               encoding="utf-8", cwd=ROOT, env=env)
    child = _CHILDREN[key] = _Child(process, log)
    atexit.register(_stop, child)
    return child


def _read_line(process: subprocess.Popen, timeout: float) -> str:
    import threading

    box: list[str] = []
    reader = threading.Thread(target=lambda: box.append(process.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    if reader.is_alive():
        raise TimeoutError(f"no answer in {timeout} s")
    return box[0] if box else ""


def _stop(child: _Child) -> None:
    process = child.process
    if process.poll() is None:
        try:
            process.stdin.close()
            process.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            process.kill()
            process.wait()
