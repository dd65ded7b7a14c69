"""Stage `specs` of the Megatron coverage loader (tests/coverage_loaders/megatron.py): the layer specs `pretrain`'s
model builder asks for, with Megatron-LM's own code, up to (not into) the model's constructor.

What runs, in `pretrain`'s order (megatron/training/training.py, megatron/training/argument_utils.py,
megatron/training/models/):

1. The start-up as stage `startup` makes it: `set_global_variables(args, build_tokenizer=False)`, a `fake`
   process group of the world size on rank 0 (torch's FakeStore), and `mpu.initialize_model_parallel(...)`
   compiled from megatron/training/initialize.py (`use_gloo_process_groups` off).
2. The model config: `hybrid_config_from_args(args)` when the arguments give a `--hybrid-layer-pattern`, else
   `gpt_config_from_args(args)` (each builds the TransformerConfig with `core_transformer_config_from_args`), and the
   process groups `pretrain` passes on: `ProcessGroupCollection.use_mpu_process_groups()`.
3. For each model chunk `build_virtual_pipeline_stages` (megatron/training/models/dist_utils.py) builds (one per
   virtual stage when the pipeline size is > 1 and a virtual size is set, else one with `vp_stage=None`):
   - GPT: the statements of `GPTModelBuilder.build_model` (megatron/training/models/gpt.py) before its
     `model = GPTModel(...)`, compiled from that file: the layer spec (`default_layer_spec`: the inference, ModelOpt,
     experimental-attention-variant, MoE decoder-block, heterogeneous or TE/local layer spec functions), the padded
     vocabulary and `mtp_block_spec` (the GPT decoder layer specs and the MTP block spec).
   - Hybrid: the statements of `HybridModelBuilder.build_model` (megatron/training/models/hybrid.py) before its
     `return HybridModel(...)`, then the statements of `HybridModel.__init__`
     (megatron/core/models/hybrid/hybrid_model.py) from its import of `select_pipeline_segment` up to and including
     the `select_pipeline_segment(...)` call (the pattern's pipeline split), compiled from that file, with `self` a
     namespace holding what `__init__` set before them (config, pattern, process groups).
4. The first thing each MLA attention layer's constructor does with its spec: `QKNormConfigResolver(self.config,
   submodules).resolve()` (MLASelfAttention._resolve_qk_norm_config, AbsorbedMLASelfAttention.__init__), called
   with the `self_attention` submodules of each layer spec of the chunk (GPT), or of the hybrid stack spec's
   `dsa_layer` / `mla_layer` when the stage's layer list has a D / + (hybrid).

Which model: a hybrid one when the validated arguments have a `hybrid_layer_pattern` (the judge runs every case as
pretrain_gpt.py, which is not in this checkout), else GPT.

Stood in: the GPU (no weights are built: GPTModel/HybridModel and the attention modules are not constructed; of the
attention constructors only the Q/KV norm resolution runs, not the checks of `Attention.__init__` before it),
Transformer Engine (not installed: while a case runs, the spec modules get the names they import when it is installed,
`HAVE_TE` and `TESpecProvider` and the TE norm / fused MLP classes, from Megatron's own TE extension modules, which
import without it and hold placeholders for TE's classes; restored afterwards), the tokenizer (the vocabulary size
comes from `--vocab-size`/`--padded-vocab-size` as `gpt_config_from_args` reads them; with neither,
`padded_vocab_size` is set to 1024 in a copy of the arguments, as the tokenizer would set it), and a real process
group (fake, rank 0: only the first pipeline stage's chunks are built). The start-up is the loader's own
(`started`, taken from the calling loader module's globals), which resets after each case the model-parallel groups,
the process group and Megatron's global variables.
"""

from __future__ import annotations

import ast
import contextlib
import types
from pathlib import Path

_compiled: dict = {}


def _function(module, qualname: str) -> ast.FunctionDef:
    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    scope: list = tree.body
    node = None
    for part in qualname.split("."):
        node = next(n for n in scope if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == part)
        scope = node.body
    return node


def _statements(module, qualname: str, start, stop, include_stop: bool = False):
    """The statements of `qualname` in `module`'s file from the first one `start` matches to the one `stop`
    matches (excluded unless include_stop), compiled with the file's name as the body of `def _part(...)`."""
    key = (module.__name__, qualname)
    if key not in _compiled:
        function = _function(module, qualname)
        body = function.body
        first = next(i for i, s in enumerate(body) if start(s))
        last = next(i for i, s in enumerate(body) if stop(s))
        part = body[first:last + 1 if include_stop else last]
        names = [a.arg for a in function.args.args + function.args.kwonlyargs]
        wrapper = ast.FunctionDef(name="_part", args=ast.arguments(
            posonlyargs=[], args=[ast.arg(arg=n) for n in names], vararg=None, kwonlyargs=[], kw_defaults=[],
            kwarg=None, defaults=[]), body=[*part, ast.Return(value=ast.Call(
                func=ast.Name(id="locals", ctx=ast.Load()), args=[], keywords=[]))],
            decorator_list=[], returns=None, type_params=[])
        tree = ast.fix_missing_locations(ast.Module(body=[wrapper], type_ignores=[]))
        _compiled[key] = (compile(tree, module.__file__, "exec"), names)
    code, names = _compiled[key]
    scope = dict(vars(module))
    exec(code, scope)
    return scope["_part"], names


def _is_call_to(name: str):
    def match(statement) -> bool:
        value = getattr(statement, "value", None)
        return isinstance(value, ast.Call) and ast.unparse(value.func) == name
    return match


def _assigns(target: str):
    def match(statement) -> bool:
        return isinstance(statement, ast.Assign) and any(ast.unparse(t) == target for t in statement.targets)
    return match


def _gpt_chunk(builder, pg_collection, vp_stage) -> None:
    import megatron.training.models.gpt as gpt

    part, names = _statements(gpt, "GPTModelBuilder.build_model", lambda s: True, _assigns("model"))
    built = part(**dict(zip(names, (builder, pg_collection, None, None, vp_stage))))
    _resolve_mla_norms(builder._model_config.transformer, built["transformer_layer_spec"])


def _resolve_mla_norms(config, spec) -> None:
    """What each MLA attention layer's constructor resolves first from its spec: `QKNormConfigResolver(self.config,
    submodules).resolve()` (MLASelfAttention._resolve_qk_norm_config, AbsorbedMLASelfAttention.__init__)."""
    from megatron.core.transformer.experimental_attention_variant.absorbed_mla import AbsorbedMLASelfAttention
    from megatron.core.transformer.mla_qk_norm_config import QKNormConfigResolver
    from megatron.core.transformer.multi_latent_attention import MLASelfAttention

    for layer in getattr(spec, "layer_specs", None) or [spec]:
        attention = getattr(getattr(layer, "submodules", None), "self_attention", None)
        module = getattr(attention, "module", None)
        if isinstance(module, type) and issubclass(module, (MLASelfAttention, AbsorbedMLASelfAttention)):
            QKNormConfigResolver(config, attention.submodules).resolve()


def _hybrid_chunk(builder, pg_collection, vp_stage) -> None:
    import megatron.core.models.hybrid.hybrid_model as hybrid_model
    import megatron.training.models.hybrid as hybrid

    build, names = _statements(hybrid, "HybridModelBuilder.build_model", lambda s: True,
                               lambda s: isinstance(s, ast.Return))
    built = build(**dict(zip(names, (builder, pg_collection, None, None, vp_stage))))
    config = builder._model_config
    this = types.SimpleNamespace(config=config.transformer, hybrid_layer_pattern=config.hybrid_layer_pattern,
                                 pg_collection=pg_collection, vp_stage=vp_stage)
    split, names = _statements(hybrid_model, "HybridModel.__init__",
                               lambda s: isinstance(s, ast.ImportFrom) and any(
                                   a.name == "select_pipeline_segment" for a in s.names),
                               _assigns("(layer_type_list, layer_offset)"), include_stop=True)
    given = {"self": this, "config": config.transformer, "vp_stage": vp_stage, "pg_collection": pg_collection,
             "hybrid_layer_pattern": config.hybrid_layer_pattern, "pre_process": built["pre_process"],
             "post_process": built["post_process"]}
    layers = split(**{n: given.get(n) for n in names})["layer_type_list"]
    from megatron.core.models.hybrid.hybrid_layer_allocation import Symbols

    stack = built["hybrid_stack_spec"].submodules  # HybridStack builds these for the stage's D and + layers
    for symbol, spec in ((Symbols.DS_ATTENTION, stack.dsa_layer), (Symbols.MLA, stack.mla_layer)):
        if symbol in layers:
            _resolve_mla_norms(config.transformer, spec)


@contextlib.contextmanager
def _transformer_engine():
    """The names the spec modules import when Transformer Engine is installed (`HAVE_TE`, `TESpecProvider`, the TE
    norm and fused MLP classes), taken from Megatron's own TE extension modules, which import without TE (their TE
    classes are placeholders); restored afterwards."""
    import megatron.core.extensions.transformer_engine as te
    import megatron.core.extensions.transformer_engine_spec_provider as provider
    import megatron.core.models.gpt.experimental_attention_variant_module_specs as variants
    import megatron.core.models.gpt.gpt_layer_specs as gpt_specs
    import megatron.core.transformer.multi_token_prediction as mtp

    names = {"HAVE_TE": True, "TESpecProvider": provider.TESpecProvider}
    patches = {gpt_specs: {**names, "TEFusedMLP": te.TEFusedMLP, "TENorm": te.TENorm,
                           "TEFusedMLPWithGroupedLinear": te.TEFusedMLPWithGroupedLinear},
               variants: names, mtp: names}
    saved = {module: {name: vars(module).get(name, _MISSING) for name in given} for module, given in patches.items()}
    try:
        for module, given in patches.items():
            vars(module).update(given)
        yield
    finally:
        for module, old in saved.items():
            for name, value in old.items():
                if value is _MISSING:
                    vars(module).pop(name, None)
                else:
                    vars(module)[name] = value


_MISSING = object()


def run(args, world: int) -> None:
    from megatron.core.process_groups_config import ProcessGroupCollection
    from megatron.training import argument_utils

    loader = LOADER  # noqa: F821 - the loader's globals, set on this module before it runs (its start-up)
    with _transformer_engine(), loader["started"](args, world):
        given = args
        if args.padded_vocab_size is None and args.vocab_size is None:  # the tokenizer's stand-in
            given = types.SimpleNamespace(**{**vars(args), "padded_vocab_size": 1024})
        if args.hybrid_layer_pattern is not None:
            from megatron.training.models.hybrid import HybridModelBuilder

            builder, chunk = HybridModelBuilder(argument_utils.hybrid_config_from_args(given)), _hybrid_chunk
        else:
            from megatron.training.models.gpt import GPTModelBuilder

            builder, chunk = GPTModelBuilder(argument_utils.gpt_config_from_args(given)), _gpt_chunk
        pg_collection = ProcessGroupCollection.use_mpu_process_groups()
        vp_size = builder._model_config.transformer.virtual_pipeline_model_parallel_size
        if pg_collection.pp.size() > 1 and vp_size is not None:  # build_virtual_pipeline_stages
            for vp_stage in range(vp_size):
                chunk(builder, pg_collection, vp_stage)
        else:
            chunk(builder, pg_collection, None)

