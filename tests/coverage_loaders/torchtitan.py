"""torchtitan 0.2.2's own start-up path on a TOML, for the coverage map (tests/test_coverage_map.py).

`load(path, world=N, gpu=M.m)` does what `torchtitan.train` does with the file before it reads
data or builds the model, in the trainer's order (torchtitan/train.py `main` and
`Trainer.__init__`):

1. `ConfigManager().parse_args(["--job.config_file", path])`: the TOML, unknown keys, the config
   dataclasses' `__post_init__` checks, `_validate_config`;
2. `ParallelDims(...)` from `[parallelism]` with the world size: the option `world` (the number of
   processes the launch starts), else the file's own (the product of the degrees it states, a
   shard degree of -1 counted as 1), as tests/torchtitan_oracle_child.py does;
3. `set_determinism(...)` when `[debug] seed` is set (its seed check runs before any mesh is
   built; building the mesh needs a process group, which this process does not start: the
   loader stops there);
4. `get_train_spec(model.name)`;
5. `build_model_converters(job_config, parallel_dims)`: the `[quantize]` converter checks;
6. `maybe_enable_amp(parallel_dims, mixed_precision_param, "cpu")`;
7. `torchtitan.train.main(trainer_class)` with the command line and WORLD_SIZE a torchrun launch of the file
   gives it and a trainer class that builds nothing but runs the "verify batch sizes" statements of
   `Trainer.__init__`, compiled from torchtitan/train.py itself (its file and lines), with the batch
   degree of the "batch" mesh (dp_replicate × dp_shard when data parallelism is on, else 1), and its
   checks against the train spec (pipelining, the validator builder), compiled the same way: main's
   own checks of the config (the seed checkpoint), then the trainer's.

It raises what torchtitan raises. What the machine lacks is stood in for, never torchtitan's
code: `triton` (a GPU compiler, imported at module level by torchtitan's MoE kernels, which the
quantization converters import) and `torchao` (torchtitan's quantization backend: a
`Float8LinearConfig` that takes its arguments) when they are not installed; torchdata,
tensorboard, datasets and wandb (imported at module level by the dataloader and metrics modules
that `torchtitan.train` and the train specs import; the config path calls none of them) as
modules of empty classes when absent; and with the option
`gpu=9.0` (a CUDA compute capability) the converters' `has_cuda_capability` answers as that GPU
would, so the checks after the GPU check are reached on a CPU machine.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import io
import logging
import sys
import types
import warnings
from pathlib import Path

_torchtitan: dict = {}


class NoProcessGroup(RuntimeError):
    """The loader's stand-in for building a device mesh: there is no process group here."""


def _stub(name: str, **attributes) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
    module.__path__ = []
    module.__dict__.update(attributes)
    sys.modules[name] = module
    return module


def _stub_missing() -> None:
    """torchao's stand-in when it is not installed; triton's, only while torchtitan's MoE kernels import."""
    if importlib.util.find_spec("triton") is None:
        # torchtitan's package __init__ imports the converters, they the MoE utilities, and those the
        # kernels module, which does `import triton` at module level (for a GPU kernel the config path
        # never calls). torch probes for triton too (torch.compile), so the stand-in exists only while
        # that one module executes; it is then in sys.modules for the package imports that follow.
        kernels = "torchtitan.models.moe.kernels"
        root = Path(importlib.util.find_spec("torchtitan").origin).parent
        spec = importlib.util.spec_from_file_location(kernels, root / "models" / "moe" / "kernels.py")
        module = importlib.util.module_from_spec(spec)
        language = _stub("triton.language", constexpr=int)
        _stub("triton", jit=lambda fn=None, **_: fn if fn is not None else (lambda f: f), language=language)
        try:
            spec.loader.exec_module(module)
        finally:
            del sys.modules["triton"], sys.modules["triton.language"]
        sys.modules[kernels] = module
    if importlib.util.find_spec("torchao") is None:

        class Float8LinearConfig:
            def __init__(self, **options):
                self.__dict__.update(options)
                self.enable_fsdp_float8_all_gather = options.get("enable_fsdp_float8_all_gather", False)

            @classmethod
            def from_recipe_name(cls, recipe_name):
                return cls(recipe_name=recipe_name)

        float8 = _stub("torchao.float8", Float8LinearConfig=Float8LinearConfig)
        _stub("torchao", float8=float8)
    # Packages torchtitan's modules import at module level for data loading and metrics (the trainer's
    # dataloader subclasses torchdata's StatefulDataLoader, metrics import tensorboard's SummaryWriter),
    # none of which the configuration path calls: any name taken from them is an empty class.
    for name, package in ABSENT.items():
        if importlib.util.find_spec(package) is None:
            sys.meta_path.insert(0, _Absent(name))


# module stood in for -> the package whose absence calls for it
ABSENT = {"torchdata": "torchdata", "torch.utils.tensorboard": "tensorboard", "datasets": "datasets",
          "wandb": "wandb"}


class _Absent(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """`name` and its submodules as modules whose every attribute is an empty class."""

    def __init__(self, name: str):
        self.name = name

    def find_spec(self, fullname, path=None, target=None):
        if fullname == self.name or fullname.startswith(self.name + "."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        module.__path__ = []
        module.__getattr__ = lambda attribute: (_ for _ in ()).throw(AttributeError(attribute)) \
            if attribute.startswith("__") else type(attribute, (), {})
        return module

    def exec_module(self, module):
        pass


def prepare() -> None:
    logging.disable(logging.CRITICAL)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        _stub_missing()
        import torchtitan  # noqa: F401  (registers the quantization converters)
        import torchtitan.components.quantization.float8 as float8
        import torchtitan.components.quantization.mx as mx
        from torchtitan.config import ConfigManager
        from torchtitan.distributed.context_parallel import prepare_context_parallel_input
        from torchtitan.distributed.parallel_dims import ParallelDims
        from torchtitan.distributed.utils import maybe_enable_amp, set_determinism
        from torchtitan.protocols.model_converter import build_model_converters
        from torchtitan.protocols.train_spec import get_train_spec
        from torchtitan.tools.profiling import maybe_enable_profiling
        from torchtitan.train import main

    def no_process_group(self):
        raise NoProcessGroup("the oracle starts no process group; the device mesh is not built")

    ParallelDims.build_mesh = no_process_group
    _torchtitan.update(ConfigManager=ConfigManager, ParallelDims=ParallelDims, set_determinism=set_determinism,
                       maybe_enable_amp=maybe_enable_amp, build_model_converters=build_model_converters,
                       get_train_spec=get_train_spec, main=main, float8=float8, mx=mx,
                       maybe_enable_profiling=maybe_enable_profiling,
                       prepare_context_parallel_input=prepare_context_parallel_input,
                       capability=(float8.has_cuda_capability, mx.has_cuda_capability, mx.has_rocm_capability))


def _world(parallelism) -> int:
    """The file's own world size: the product of the degrees it states (-1 counted as 1)."""
    world = 1
    for degree in (parallelism.data_parallel_replicate_degree, parallelism.data_parallel_shard_degree,
                   parallelism.context_parallel_degree, parallelism.tensor_parallel_degree,
                   parallelism.pipeline_parallel_degree):
        if isinstance(degree, int) and degree >= 1:
            world *= degree
    return world


def _gpu(capability: str | None) -> None:
    """`has_cuda_capability` in the converter modules as on a GPU of that capability (None: as installed)."""
    t = _torchtitan
    float8_cuda, mx_cuda, mx_rocm = t["capability"]
    if capability is None:
        t["float8"].has_cuda_capability, t["mx"].has_cuda_capability, t["mx"].has_rocm_capability = (
            float8_cuda, mx_cuda, mx_rocm)
        return
    have = tuple(int(part) for part in capability.split("."))

    def cuda(major: int, minor: int) -> bool:
        return have >= (major, minor)

    t["float8"].has_cuda_capability = t["mx"].has_cuda_capability = cuda
    t["mx"].has_rocm_capability = lambda major, minor: False


def load(path: Path, world: str | None = None, gpu: str | None = None) -> None:
    t = _torchtitan
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        config = t["ConfigManager"]().parse_args(["--job.config_file", str(path)])
        p = config.parallelism
        dims = t["ParallelDims"](dp_shard=p.data_parallel_shard_degree, dp_replicate=p.data_parallel_replicate_degree,
                                 cp=p.context_parallel_degree, tp=p.tensor_parallel_degree,
                                 pp=p.pipeline_parallel_degree, ep=p.expert_parallel_degree,
                                 etp=p.expert_tensor_parallel_degree,
                                 world_size=int(world) if world is not None else _world(p))
        if config.debug.seed is not None:
            debug = type(config.debug)(seed=config.debug.seed)  # not `deterministic`: it sets torch's global flags
            try:
                import torch

                t["set_determinism"](dims, torch.device("cpu"), debug, distinct_seed_mesh_dims=["pp"])
            except NoProcessGroup:
                pass
        t["spec"] = None
        try:
            t["spec"] = t["get_train_spec"](config.model.name)
        except ModuleNotFoundError:
            pass  # a registered model whose module needs a package not installed here (datasets): not a refusal
        _gpu(gpu)
        try:
            t["build_model_converters"](config, dims)
        finally:
            _gpu(None)
        t["maybe_enable_amp"](dims, config.training.mixed_precision_param, "cpu")
        t["dims"] = dims
        _main(path, dims.world_size)


def _last_save_check():
    """The HF-format check of torchtitan's `CheckpointManager._save_last_step` (components/
    checkpoint.py), compiled from its own statement and lines; run with `self`."""
    code = _torchtitan.get("last_save_check")
    if code is None:
        import ast

        import torchtitan.components.checkpoint as checkpoint

        body = method_body(checkpoint.__file__, "CheckpointManager", "_save_last_step")
        kept = [s for s in body if isinstance(s, ast.If) and ast.unparse(s.test) == "self.last_save_in_hf"]
        code = _torchtitan["last_save_check"] = compile(ast.Module(body=kept, type_ignores=[]), checkpoint.__file__,
                                                        "exec")
    return code


class _StandInMesh:
    """A one-dimensional device mesh of `size` ranks as far as torchtitan reads one before it
    communicates (its size and device type); anything more needs the process group this process
    does not start."""

    def __init__(self, size: int) -> None:
        self._size = size
        self.device_type = "cpu"

    def size(self, dim: int | None = None) -> int:
        return self._size

    def __getattr__(self, name: str):
        raise NoProcessGroup(f"the oracle starts no process group; DeviceMesh.{name} is not available")


class _Trainer:
    """The trainer class `torchtitan.train.main` is given (Trainer, FluxTrainer, ...): this one builds nothing,
    so what main itself checks on the config runs without a GPU, a model or data; of the real
    `Trainer.__init__` it runs the batch checks (they need the config and the batch degree only)."""

    def __init__(self, job_config):
        self.checkpointer = self
        self.job_config = job_config
        dims = _torchtitan["dims"]
        degree = dims.dp_replicate * dims.dp_shard if dims.dp_enabled else 1
        scope = {"job_config": job_config, "batch_degree": degree, "self": self, "parallel_dims": dims}
        exec(_batch_check(), scope)  # noqa: S102 - torchtitan's own statements
        self.train_spec = _torchtitan["spec"]
        if self.train_spec is not None:
            for code in _spec_checks():
                exec(code, scope)  # noqa: S102
        _checkpoint_checks()(types.SimpleNamespace(), job_config.checkpoint, sd_adapter=object(), ft_manager=None)

    def save(self, **_):
        pass

    def _last_save(self) -> None:
        """The save after the last step (the loop's `checkpointer.save(step, last_step=True)`): torchtitan's
        own `CheckpointManager._should_save` on the manager's settings, then its HF-format check."""
        from torchtitan.components.checkpoint import CheckpointManager

        config = self.job_config.checkpoint
        manager = types.SimpleNamespace(enable=config.enable, load_only=config.load_only,
                                        enable_first_step_checkpoint=config.enable_first_step_checkpoint,
                                        interval=config.interval, last_save_in_hf=config.last_save_in_hf,
                                        last_save_model_only=config.last_save_model_only)
        if CheckpointManager._should_save(manager, self.job_config.training.steps, last_step=True):
            exec(_last_save_check(), {"self": manager})  # noqa: S102 - torchtitan's own statement

    def _load(self) -> None:
        """The trainer's first act in `train` (`checkpointer.load(step=checkpoint.load_step)`): torchtitan's
        own `CheckpointManager.load` on a manager with the file's settings, as a first run meets it (no
        checkpoint folder yet) and as a resume of that run does (the folder holds the step it resumes
        from). Stood in for: the machine's paths (`initial_load_path` and `model.hf_assets_path` are
        folders that exist), the model's state-dict adapter (every model torchtitan registers has one),
        the states' contents (empty) and DCP's reading of the files (nothing is read)."""
        import os
        import tempfile

        from torchtitan.components.checkpoint import CheckpointManager

        config = self.job_config.checkpoint
        with tempfile.TemporaryDirectory() as base:
            present = os.path.join(base, "present")
            os.mkdir(present)
            manager = types.SimpleNamespace(
                enable=config.enable, enable_ft_dataloader_checkpoints=False,
                folder=os.path.join(base, "job", config.folder),
                initial_load_model_only=config.initial_load_model_only, initial_load_in_hf=config.initial_load_in_hf,
                initial_load_in_hf_quantized=config.initial_load_in_hf_quantized,
                initial_load_path=present if config.initial_load_path else config.initial_load_path,
                sd_adapter=types.SimpleNamespace(hf_assets_path=present if self.job_config.model.hf_assets_path
                                                 else self.job_config.model.hf_assets_path),
                exclude_from_loading=config.exclude_from_loading,
                states={name: types.SimpleNamespace(state_dict=dict)
                        for name in ("train_state", "model", "optimizer", "dataloader", "lr_scheduler")},
                dcp_load=lambda *args, **kwargs: None)
            for method in ("_find_load_step", "_create_checkpoint_id", "_states_to_load",
                           "_flattened_model_states_sd"):
                setattr(manager, method, getattr(CheckpointManager, method).__get__(manager))
            CheckpointManager.load(manager, step=config.load_step)  # the first run
            step = config.load_step if config.load_step != -1 else 10
            os.makedirs(os.path.join(manager.folder, f"step-{step}"))
            Path(manager.folder, f"step-{step}", ".metadata").touch()
            CheckpointManager.load(manager, step=config.load_step)  # a resume

    def train(self):
        """What torchtitan's `Trainer.train` does that the config decides: the checkpoint it loads, as a
        first run and as a resume (`_load`), the profiler it enters
        (`maybe_enable_profiling`, with the rank a process group would give, up to starting the
        profiler itself, which needs the GPU), then, with context
        parallelism, the sharding of the first batch (`post_dataloading_process` ->
        `prepare_context_parallel_input`) on a stand-in mesh of the context-parallel size, up to
        the mesh's first collective; and the save after the last step."""
        import tempfile

        import torch

        self._load()

        def no_gpu_profiler(*args, **kwargs):
            raise NoProcessGroup("the oracle profiles no GPU: the profiler is not started")

        get_rank, profile = torch.distributed.get_rank, torch.profiler.profile
        torch.distributed.get_rank = lambda *args, **kwargs: 0  # the rank of the one process a launch would start
        torch.profiler.profile = no_gpu_profiler  # the checks come before it; the profiler itself needs the GPU
        try:
            with tempfile.TemporaryDirectory() as folder:
                with _torchtitan["maybe_enable_profiling"](self.job_config.profiling, global_step=0, base_folder=folder):
                    pass
        except NoProcessGroup:
            pass
        finally:
            torch.distributed.get_rank, torch.profiler.profile = get_rank, profile
        self._last_save()
        dims = _torchtitan["dims"]
        if dims.cp_enabled:
            tokens = torch.zeros((1, 8 * dims.cp), dtype=torch.long)
            try:
                _torchtitan["prepare_context_parallel_input"](
                    tokens, tokens.clone(), {}, _StandInMesh(dims.cp), torch.device("cpu"),
                    self.job_config.parallelism.context_parallel_load_balancer)
            except NoProcessGroup:
                pass

    def close(self):
        pass


def method_body(path: str, class_name: str, method: str) -> list:
    """The statements of `class_name.method` in the source file at `path`, as `ast` reads them (their
    own lines: code compiled from them runs as that file's)."""
    import ast

    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    return next(n for c in ast.walk(tree) if isinstance(c, ast.ClassDef) and c.name == class_name
                for n in c.body if isinstance(n, ast.FunctionDef) and n.name == method).body


def batch_check_code(train_path: str):
    """The statements of torchtitan's `Trainer.__init__` (train.py at `train_path`) from
    `global_batch_size = ...` to the assertion on the accumulation steps, compiled as they stand there
    (a trace sees train.py's lines). Run with `job_config`, `batch_degree` and `self`."""
    import ast

    body = method_body(train_path, "Trainer", "__init__")
    first = next(i for i, s in enumerate(body) if isinstance(s, ast.Assign)
                 and ast.unparse(s.value) == "job_config.training.global_batch_size")
    last = next(i for i, s in enumerate(body) if i > first and isinstance(s, ast.Assert)
                and "gradient_accumulation_steps" in ast.unparse(s.test))
    return compile(ast.Module(body=body[first:last + 1], type_ignores=[]), train_path, "exec")


def _batch_check():
    code = _torchtitan.get("batch_check")
    if code is None:
        code = _torchtitan["batch_check"] = batch_check_code(_torchtitan["main"].__code__.co_filename)
    return code


def _spec_checks() -> list:
    """The checks of `Trainer.__init__` against the train spec, compiled from train.py as they stand there
    (their own lines): `if parallel_dims.pp_enabled:` with its first statement (no pipelining function:
    RuntimeError), and `if job_config.validation.enable:` with its first (the validator builder's
    assert); what follows them in train.py builds the pipeline or the validator, which needs a model."""
    codes = _torchtitan.get("spec_checks")
    if codes is None:
        import ast

        path = _torchtitan["main"].__code__.co_filename
        body = method_body(path, "Trainer", "__init__")
        codes = []
        for test in ("parallel_dims.pp_enabled", "job_config.validation.enable"):
            block = next(s for s in body if isinstance(s, ast.If) and ast.unparse(s.test) == test)
            check = ast.If(test=block.test, body=block.body[:1], orelse=[])
            ast.copy_location(check, block)
            codes.append(compile(ast.Module(body=[check], type_ignores=[]), path, "exec"))
        _torchtitan["spec_checks"] = codes
    return codes


def _checkpoint_checks():
    """The config checks of torchtitan's `CheckpointManager.__init__` (components/checkpoint.py), as a
    function of (self, checkpoint_config, sd_adapter, ft_manager) compiled from its own statements and
    lines: `self.enable`, the fault-tolerance fields, the early return when checkpointing is off, the
    HF-save adapter assert, `keep_latest_k` with its first check (the purge thread it then starts is
    left out), and the async mode's choice. The loader gives an adapter (every model torchtitan
    registers has one) and no fault tolerance."""
    function = _torchtitan.get("checkpoint_checks")
    if function is None:
        import ast

        import torchtitan.components.checkpoint as checkpoint

        path = checkpoint.__file__
        init_body = method_body(path, "CheckpointManager", "__init__")
        kept = []
        for statement in init_body:
            text = ast.unparse(statement)
            if text.startswith(("self.enable = ", "self.ft_manager = ", "self.enable_ft_dataloader_checkpoints = ",
                                "if not self.enable and not self.enable_ft_dataloader_checkpoints:",
                                "self.last_save_in_hf = ", "if self.last_save_in_hf:", "self.keep_latest_k = ",
                                "async_mode = ")):
                kept.append(statement)
            elif text.startswith("if self.keep_latest_k > 0:"):
                first = ast.If(test=statement.test, body=statement.body[:1], orelse=[])
                kept.append(ast.copy_location(first, statement))
            elif text.startswith("if async_mode == AsyncMode.DISABLED:"):
                kept.append(statement)
        arguments = ast.arguments(posonlyargs=[], args=[ast.arg("self"), ast.arg("checkpoint_config"),
                                                        ast.arg("sd_adapter"), ast.arg("ft_manager")],
                                  kwonlyargs=[], kw_defaults=[], defaults=[])
        definition = ast.FunctionDef(name="checkpoint_checks", args=arguments, body=kept, decorator_list=[],
                                     returns=None, type_params=[])
        ast.copy_location(definition, init_body[0])
        ast.fix_missing_locations(definition)
        namespace = dict(vars(checkpoint))
        exec(compile(ast.Module(body=[definition], type_ignores=[]), path, "exec"), namespace)  # noqa: S102
        function = _torchtitan["checkpoint_checks"] = namespace["checkpoint_checks"]
    return function


def _main(path: Path, world: int) -> None:
    """`torchtitan.train.main` as `torchrun --nproc_per_node=<world> -m torchtitan.train --job.config_file <path>`
    starts it: WORLD_SIZE from the launch, the command line as ConfigManager.parse_args's default (sys.argv[1:],
    bound when torchtitan was imported)."""
    import os

    parse_args = _torchtitan["ConfigManager"].parse_args
    saved_args, saved_world = parse_args.__defaults__, os.environ.get("WORLD_SIZE")
    parse_args.__defaults__ = (["--job.config_file", str(path)],)
    os.environ["WORLD_SIZE"] = str(world)
    try:
        _torchtitan["main"](_Trainer)
    finally:
        parse_args.__defaults__ = saved_args
        if saved_world is None:
            del os.environ["WORLD_SIZE"]
        else:
            os.environ["WORLD_SIZE"] = saved_world
