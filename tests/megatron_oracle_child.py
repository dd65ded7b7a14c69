"""Child process of tests/megatron_oracle.py: judge many Megatron-LM argument lists with Megatron's own code.

    python tests/megatron_oracle_child.py [--megatron ../shared/oracles/megatron-lm] < request.json > verdicts.json

stdin: {"cases": [[argv, world_size], ...]} (argv without the program name). stdout: exactly one JSON
document, {"verdicts": [...], "import_seconds": float, "judge_seconds": float}; everything Megatron
writes goes to stderr or into the verdicts (file descriptor 1 is pointed at stderr before Megatron is
imported, and the JSON is written to a duplicate of the original stdout).

For each case, as `pretrain_gpt.py` would run it up to building the model config:
`sys.argv = ["pretrain_gpt.py", *argv]`, `megatron.training.arguments.parse_args()`, then
`validate_args(args, defaults={})`, then `core_transformer_config_from_args(args)` (defined in
`megatron/training/argument_utils.py`, re-exported by `arguments.py`; it builds `TransformerConfig`,
whose `__post_init__` holds the head and query-group divisibility checks). The stage that fails is
"parse", "validate" or "config"; `exit()` / `sys.exit()` with status 0 or None is stage "exit" (e.g.
`--checkpoint-activations` prints a hint and calls `exit()` in `validate_args`).

Import patches: the two of scripts/dump_megatron_flags.py (`typing.override`, the triton stand-in
scoped to `megatron.*` importers), used through that script's `_patched_imports`, kept active while
the cases run because `validate_args` and `core_transformer_config_from_args` import more Megatron
modules lazily.

The environment of each case (set before `parse_args`, restored after the case):

- `WORLD_SIZE=<world>`, `RANK=0`, `LOCAL_RANK=0`: `parse_args` reads `RANK` and `WORLD_SIZE`;
  `print_rank_0` / `warn_rank_0` fall back to `RANK` (no process group is initialised).
- `CUDA_DEVICE_MAX_CONNECTIONS`: `validate_args` asserts it is "1" when TP or CP > 1 on a GPU older
  than Blackwell, and asserts it is *not* "1" with `--use-torch-fsdp2` / `--use-megatron-fsdp`. Both
  are advice about the launch environment, not about the argument list (../shared/reference/oracles.md),
  so each case gets the value Megatron asks for: unset when the parsed args use either FSDP, else "1".
- `NVTE_CPU_OFFLOAD_V1=1`: with TE >= 2.10 (see below) `validate_args` asserts it for
  `--fine-grained-activation-offloading`; launch-environment advice again, so it is satisfied.
- Other variables `validate_args` reads as environment advice are removed, so that the caller's
  environment cannot change a verdict (unset satisfies each of them): `PYTORCH_CUDA_ALLOC_CONF`,
  `NCCL_GRAPH_REGISTER`, `CUDA_GRAPHS_USE_NODE_PRIORITY`, `NCCL_PROTO`, `NCCL_ALGO`,
  `NVTE_ALLOW_NONDETERMINISTIC_ALGO`, `CUBLAS_WORKSPACE_CONFIG`, `MAMBA_DETERMINISTIC`,
  `CAUSAL_CONV1D_DETERMINISTIC`, and SLURM's `SLURM_PROCID` / `SLURM_NTASKS` (rank fallbacks).

GPU facts patched in while a case runs (a CPU has none of them; nothing else is patched):

- Device architecture / compute capability: `torch.cuda.get_device_properties(...)` returns a
  stand-in with `major=9, minor=0` (an H100, Hopper) and `torch.cuda.get_device_capability()` returns
  (9, 0). `validate_args` calls `get_device_arch_version()`, i.e.
  `torch.cuda.get_device_properties("cuda:0").major`, for every TP>1 or CP>1 list (the
  `CUDA_DEVICE_MAX_CONNECTIONS` rule above), with `--use-megatron-fsdp` and with
  `--tensor-parallel-num-weight-shards` > 1 (Blackwell-only stream priorities), and
  `torch.cuda.get_device_capability()` for
  `--moe-grouped-gemm` (needs >= 8). On the CPU both raise "Torch not compiled with CUDA enabled".
  Hopper, not Blackwell, so that the pre-Blackwell checks run.
- Transformer Engine version: `megatron.core.utils._te_version` (the cache `get_te_version()` and
  every `is_te_min_version(...)` read) is set to `TE_VERSION`, the newest version any TE gate in the
  pinned Megatron asks for. Without TE installed it is 0.0.0 and every TE-gated feature (fp4,
  `--qk-clip`, `--log-max-attention-logit`, `--delay-wgrad-compute`, FP8 MoE, ...) would be rejected
  only because TE is absent here. Note that a new TE also *switches on* TE-dependent requirements
  (e.g. `--fine-grained-activation-offloading` then needs `NVTE_CPU_OFFLOAD_V1=1`).
- CUDA device count: not patched; nothing on the parse/validate/config path asks for it
  (`torch.cuda.device_count()` is 0 here and no check reads it).

Megatron state reset for every case (each case runs as if alone in the process):
`sys.argv`, `os.environ` (snapshot restored: `--deterministic-mode` setdefaults NCCL/cuBLAS variables),
`torch.use_deterministic_algorithms` (`--deterministic-mode` switches it on),
`torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction` (`TransformerConfig.__post_init__`
clears it with `--disable-bf16-reduced-precision-matmul`), `MultiStorageClientFeature` (`parse_args`
enables/disables it), the TE version cache, and the globals of `megatron.training.global_vars` and
the microbatch calculator (not set by these three calls, reset anyway so a Megatron change cannot
make cases leak). Every exception of a case, SystemExit included, is caught (KeyboardInterrupt is not).
What cannot be undone is a module imported lazily by an earlier case: its import-time warnings appear
only in the first case that imports it.

Not modelled: `--yaml-cfg` (Megatron then runs `validate_yaml`, not `validate_args`; here the YAML
namespace still goes through `validate_args`) and `--use-checkpoint-args` (arguments loaded from a
checkpoint by `parse_and_validate_args`, which is not called).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import logging
import os
import sys
import time
import traceback
import types
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "dump_megatron_flags.py"
DEFAULT_MEGATRON = ROOT.parent / "shared" / "oracles" / "megatron-lm"
PROGRAM = "pretrain_gpt.py"
TE_VERSION = "2.17.0"  # >= every is_te_min_version(...) in the pinned Megatron (highest: "2.17.0.dev0")
DEVICE_CAPABILITY = (9, 0)  # Hopper (H100): pre-Blackwell, so the CUDA_DEVICE_MAX_CONNECTIONS rule applies
ENV_ADVICE = ("NVTE_CPU_OFFLOAD_V1", "PYTORCH_CUDA_ALLOC_CONF", "NCCL_GRAPH_REGISTER", "CUDA_GRAPHS_USE_NODE_PRIORITY",
              "NCCL_PROTO", "NCCL_ALGO", "NVTE_ALLOW_NONDETERMINISTIC_ALGO", "CUBLAS_WORKSPACE_CONFIG",
              "MAMBA_DETERMINISTIC", "CAUSAL_CONV1D_DETERMINISTIC", "SLURM_PROCID", "SLURM_NTASKS",
              "CUDA_DEVICE_MAX_CONNECTIONS")
RESOLVED = ("world_size", "tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size",
            "expert_model_parallel_size", "data_parallel_size", "sequence_parallel", "micro_batch_size",
            "global_batch_size", "fp16", "bf16", "params_dtype", "num_query_groups", "group_query_attention",
            "virtual_pipeline_model_parallel_size", "use_distributed_optimizer")
_ARGS_DUMP_START = "------------------------ arguments ------------------------"
_ARGS_DUMP_END = "-------------------- end of arguments ---------------------"


def load_script():
    """scripts/dump_megatron_flags.py as a module (its import patches are reused, not copied)."""
    spec = importlib.util.spec_from_file_location("dump_megatron_flags", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return sys.modules[spec.name]


class _DeviceProperties(types.SimpleNamespace):
    """What `torch.cuda.get_device_properties` would return on an H100 (the fields Megatron reads)."""


@contextlib.contextmanager
def gpu_facts(megatron_utils, torch):
    """The GPU facts of the module docstring, for the duration of one case."""
    from packaging.version import Version

    major, minor = DEVICE_CAPABILITY
    properties = _DeviceProperties(name="NVIDIA H100 80GB HBM3 (oracle stand-in)", major=major, minor=minor,
                                   total_memory=80 * 1024**3, multi_processor_count=132)
    saved = (torch.cuda.get_device_properties, torch.cuda.get_device_capability, megatron_utils._te_version)
    torch.cuda.get_device_properties = lambda device=None: properties
    torch.cuda.get_device_capability = lambda device=None: (major, minor)
    megatron_utils._te_version = Version(TE_VERSION)
    try:
        yield
    finally:
        torch.cuda.get_device_properties, torch.cuda.get_device_capability, megatron_utils._te_version = saved


class _Transcript:
    """What one case emitted, in order: printed lines (stdout, stderr), `warnings.warn` calls and
    logger records (WARNING and above), each as (source, text)."""

    def __init__(self):
        self.events: list[tuple[str, str]] = []
        self.stderr_text = io.StringIO()  # raw, for argparse's "prog: error: ..." line
        self._partial = {"stdout": "", "stderr": ""}

    def stream(self, source: str):
        transcript = self

        class _Stream(io.TextIOBase):
            def writable(self):
                return True

            def write(self, text):
                if source == "stderr":
                    transcript.stderr_text.write(text)
                transcript._partial[source] += text
                *lines, transcript._partial[source] = transcript._partial[source].split("\n")
                transcript.events.extend((source, line) for line in lines)
                return len(text)

        return _Stream()

    def flush(self):
        for source, rest in self._partial.items():
            if rest:
                self.events.append((source, rest))
            self._partial[source] = ""

    def showwarning(self, message, category, filename, lineno, file=None, line=None):
        self.flush()
        self.events.append(("warning", f"{category.__name__}: {message}"))

    def handler(self) -> logging.Handler:
        transcript = self

        class _Handler(logging.Handler):
            def emit(self, record):
                with contextlib.suppress(Exception):
                    transcript.flush()
                    transcript.events.append(("log", f"{record.levelname} {record.name}: {record.getMessage()}"))

        return _Handler(logging.WARNING)

    def lines(self, with_stderr: bool) -> list[str]:
        """The events as text, without blank lines and without `_print_args`' dump of every argument
        (hundreds of lines, no news); stderr only when asked (argparse's usage is not a warning)."""
        self.flush()
        lines, dumping = [], False
        for source, text in self.events:
            if source == "stderr" and not with_stderr:
                continue
            if text.strip() == _ARGS_DUMP_START:
                dumping = True
            elif dumping and text.strip() == _ARGS_DUMP_END:
                dumping = False
            elif not dumping and text.strip():
                lines.append(text.rstrip())
        return lines


def _where(error: BaseException, megatron: Path) -> str | None:
    """file:line of the innermost frame inside Megatron's folder, with its source line."""
    found = None
    for frame in traceback.extract_tb(error.__traceback__):
        path = Path(frame.filename)
        if megatron in path.parents:
            found = f"{path.relative_to(megatron)}:{frame.lineno}: {(frame.line or '').strip()}"
    return found


def _argparse_message(stderr: str) -> str:
    """argparse's `prog: error: MESSAGE` line (its usage lines dropped), else the whole stderr."""
    marker = f"{PROGRAM}: error: "
    for line in stderr.splitlines():
        if line.startswith(marker):
            return line[len(marker):].strip()
    return stderr.strip()


def _json_safe(value):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def _resolved(args) -> dict:
    return {name: _json_safe(getattr(args, name, None)) for name in RESOLVED}


class Judge:
    """Megatron's argument code, imported once; `__call__` judges one case."""

    def __init__(self, megatron: Path):
        self.megatron = Path(megatron).resolve()
        self.script = load_script()
        self.arguments = self.script.import_arguments(self.megatron)
        import megatron.core.utils as megatron_utils
        import torch
        from megatron.core.msc_utils import MultiStorageClientFeature
        from megatron.training import global_vars

        self.torch = torch
        self.megatron_utils = megatron_utils
        self.msc = MultiStorageClientFeature
        self.global_vars = global_vars
        try:
            from megatron.core import num_microbatches_calculator
        except ImportError:  # moved or renamed in a later Megatron: nothing to reset
            num_microbatches_calculator = None
        self.microbatches = num_microbatches_calculator
        self.core_transformer_config_from_args = self.arguments.core_transformer_config_from_args

    def _reset_globals(self):
        for name in dir(self.global_vars):
            if name.startswith("_GLOBAL_"):
                setattr(self.global_vars, name, None)
        if self.microbatches is not None and hasattr(self.microbatches, "_GLOBAL_NUM_MICROBATCHES_CALCULATOR"):
            self.microbatches._GLOBAL_NUM_MICROBATCHES_CALCULATOR = None
        self.msc.disable()

    def __call__(self, argv: list[str], world: int) -> dict:
        torch = self.torch
        saved_env = dict(os.environ)
        saved_argv = sys.argv
        saved_deterministic = (torch.are_deterministic_algorithms_enabled(),
                               torch.is_deterministic_algorithms_warn_only_enabled())
        saved_bf16_reduction = torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction
        transcript = _Transcript()
        handler = transcript.handler()
        stage, args, error, exception, where, validated = "parse", None, None, None, None, False
        self.last_args = None
        self.last_error = None  # Megatron's own exception of a refused case (its traceback: implicit_sites.py)
        root = logging.getLogger()
        try:
            self._reset_globals()
            for name in ENV_ADVICE:
                os.environ.pop(name, None)
            os.environ.update(WORLD_SIZE=str(int(world)), RANK="0", LOCAL_RANK="0", NVTE_CPU_OFFLOAD_V1="1")
            sys.argv = [PROGRAM, *map(str, argv)]
            root.addHandler(handler)
            with contextlib.redirect_stdout(transcript.stream("stdout")), \
                    contextlib.redirect_stderr(transcript.stream("stderr")), \
                    warnings.catch_warnings(), gpu_facts(self.megatron_utils, torch):
                warnings.showwarning = transcript.showwarning
                warnings.simplefilter("always")
                try:
                    args = self.arguments.parse_args()
                    stage = "validate"
                    if not (getattr(args, "use_torch_fsdp2", False) or getattr(args, "use_megatron_fsdp", False)):
                        os.environ["CUDA_DEVICE_MAX_CONNECTIONS"] = "1"
                    self.arguments.validate_args(args, {})
                    validated = True
                    self.last_args = args  # what a caller goes on with (tests/coverage_loaders/megatron.py)
                    stage = "config"
                    self.core_transformer_config_from_args(args)
                    stage = None
                except KeyboardInterrupt:
                    raise
                except SystemExit as done:
                    code = done.code
                    if code is None or code == 0:
                        stage, error = "exit", None
                    elif stage == "parse":
                        error = _argparse_message(transcript.stderr_text.getvalue())
                    else:
                        error = str(code)
                    exception = "SystemExit"
                    where = _where(done, self.megatron)
                    self.last_error = done
                except BaseException as failure:  # isolate the case from anything (not KeyboardInterrupt)
                    exception = type(failure).__name__
                    where = _where(failure, self.megatron)
                    self.last_error = failure
                    error = str(failure).strip() or f"{exception} (no message) at {where}"
        except KeyboardInterrupt:
            raise
        except BaseException as failure:  # the harness itself failed on this case
            exception = type(failure).__name__
            error = f"oracle harness error: {exception}: {failure}"
            stage = stage or "config"
        finally:
            root.removeHandler(handler)
            sys.argv = saved_argv
            os.environ.clear()
            os.environ.update(saved_env)
            torch.use_deterministic_algorithms(saved_deterministic[0], warn_only=saved_deterministic[1])
            torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = saved_bf16_reduction
            self._reset_globals()
        emitted = transcript.lines(with_stderr=stage != "parse")
        return {"ok": stage is None, "stage": stage, "error": error, "warnings": emitted,
                "args": _resolved(args) if validated else None, "exception": exception, "where": where}


def main(argv: list[str] | None = None) -> int:
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cli.add_argument("--megatron", type=Path, default=DEFAULT_MEGATRON, help="the Megatron-LM folder (oracle)")
    cli.add_argument("--serve", action="store_true", help="judge one request per stdin line, answer one line "
                     "each, until stdin closes (one Megatron import for every batch of a test process)")
    options = cli.parse_args(argv)
    request = None if options.serve else json.loads(sys.stdin.read())
    requests = None
    if options.serve:  # the requests on a descriptor of their own: what a case does to stdin cannot touch them
        requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
    result_stream = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # from here on, whatever writes to fd 1 (Megatron, C code) lands on stderr
    sys.stdout = sys.stderr
    started = time.perf_counter()
    judge = Judge(options.megatron)
    imported = time.perf_counter()
    if options.serve:
        with judge.script._patched_imports():
            for line in requests:
                begun = time.perf_counter()
                verdicts = [judge(case_argv, world) for case_argv, world in json.loads(line)["cases"]]
                json.dump({"verdicts": verdicts, "import_seconds": round(imported - started, 3),
                           "judge_seconds": round(time.perf_counter() - begun, 3)}, result_stream, allow_nan=False)
                result_stream.write("\n")
                result_stream.flush()
        return 0
    verdicts = []
    with judge.script._patched_imports():  # validate_args imports more of megatron lazily
        for case_argv, world in request["cases"]:
            verdicts.append(judge(case_argv, world))
    finished = time.perf_counter()
    json.dump({"verdicts": verdicts, "import_seconds": round(imported - started, 3),
               "judge_seconds": round(finished - imported, 3)}, result_stream, allow_nan=False)
    result_stream.write("\n")
    result_stream.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
