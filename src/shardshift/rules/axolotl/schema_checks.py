"""The "X and Y together" / "X requires Y" checks of Axolotl 0.21.0's config schema, as data (AX110).

Each row mirrors one check site of axolotl 0.21.0 (the map src/shardshift/data/coverage/axolotl.tsv
names the rule AX110 for it, with the bad fixture fixtures/axolotl/rules/AX110/bad_<slug>.yaml that
tests/test_coverage_map.py runs through Axolotl's own `validate_config`): the keys it reads, the
condition over the YAML under which Axolotl raises, what it says, and the fix. Every input of these
checks is written in the YAML, so the condition decides it; a condition never guesses a value the
file does not write (an unset key is what Axolotl's default makes it).

`when(d)` reads the YAML mapping through `View` (`d.get` is the raw value as Axolotl's "before"
validators read it; `d.on` its truth after pydantic's bool coercion, as "after" validators read it).
`example` is the smallest addition to a valid config that Axolotl refuses at the site: the bad
fixture is generated from it (scripts/coverage/axolotl_fixtures.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

V = "axolotl/utils/schemas/validation.py"
C = "axolotl/utils/schemas/config.py"
F = "axolotl/utils/schemas/fsdp.py"
CP = "axolotl/integrations/context_parallel/args.py"
EP = "axolotl/integrations/expert_parallel/args.py"
P = "axolotl/utils/schemas/peft.py"
M = "axolotl/utils/schemas/model.py"
MM = "axolotl/utils/schemas/multimodal.py"
QUANT = "axolotl/utils/schemas/quantization.py"
DS = "axolotl/utils/schemas/datasets.py"
SU = "axolotl/utils/schemas/utils.py"

_FALSE_STRINGS = {"false", "f", "no", "n", "off", "0", ""}
# a value a template fills in before Axolotl reads the file (`${GPTQ}`, `{{ lr }}`, FILL_IN)
_PLACEHOLDER = re.compile(r"\$\{[^}]*\}|\{\{.*\}\}|^FILL_IN$")


class View:
    """The YAML mapping as Axolotl's validators read it. `templated` turns true when a value read
    is a template placeholder: the row is then not judged (the value Axolotl sees is not written)."""

    def __init__(self, data: dict):
        self.data = data
        self.templated = False

    def _seen(self, value: Any) -> Any:
        if isinstance(value, str) and _PLACEHOLDER.search(value):
            self.templated = True
        return value

    def get(self, key: str, default: Any = None) -> Any:
        return self._seen(self.data.get(key, default))

    def sub(self, key: str) -> dict:
        """A nested mapping (empty when unset or not a mapping)."""
        value = self._seen(self.data.get(key))
        if isinstance(value, dict):
            for inner in value.values():
                self._seen(inner)
            return value
        return {}

    def on(self, key: str, within: dict | None = None) -> bool:
        """Truth after pydantic's coercion of a bool/str/number field ("false" is False)."""
        value = self._seen((self.data if within is None else within).get(key))
        if isinstance(value, str):
            return value.strip().lower() not in _FALSE_STRINGS
        return bool(value)

    def int(self, key: str, default: int = 1, within: dict | None = None) -> int:
        value = self._seen((self.data if within is None else within).get(key))
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise TypeError(key)
        return int(value)

    def fsdp(self) -> dict:
        """fsdp_config with the deprecated `fsdp_` prefix stripped (check_fsdp_config_kwargs_prefix)."""
        return {(k[5:] if isinstance(k, str) and k.startswith("fsdp_") and k != "fsdp_version" else k): v
                for k, v in self.sub("fsdp_config").items()}

    def adapter(self) -> Any:
        return self.data.get("adapter")


@dataclass(frozen=True)
class Check:
    slug: str  # the bad fixture is bad_<slug>.yaml
    site: str  # the coverage-map site id
    keys: tuple[str, ...]  # the first one written is where the finding points
    when: Callable[[View], Any]
    says: str  # Axolotl's error, as it raises it (abridged with "...")
    fix: str
    example: dict = field(default_factory=dict)


# utils/schemas/quantization.py validate_ao_dtype: the dtype names it takes
_AO_DTYPES = ("int4", "int8", "float8_e4m3fn", "fp8", "float8", "nvfp4", "mxfp4", "ternary")


def _regex_invalid(patterns) -> bool:
    if not isinstance(patterns, list):
        return False
    for pattern in patterns:
        if isinstance(pattern, str):
            try:
                re.compile(pattern)
            except re.error:
                return True
    return False


_LEGACY_ATTN = ("xformers_attention", "sage_attention", "flex_attention", "flash_attention", "sdp_attention",
                "eager_attention")
_CANONICAL_ATTN = {"eager", "sdpa", "flash_attention_2", "flash_attention_3", "flash_attention_4",
                   "flash_attention_torch", "flex_attention", "varlen", "xformers", "sage", "fp8"}
_ALIASES = {"flash": "flash_attention_2", "flex": "flex_attention", "sdp": "sdpa"}
_PACKING_ATTN = {"flash_attention_2", "flash_attention_3", "flash_attention_4", "flash_attention_torch",
                 "flex_attention", "xformers", "sage", "varlen"}
_INDUCTOR_ALLOWED = {"coordinate_descent_tuning", "coordinate_descent_check_all_directions", "shape_padding",
                     "epilogue_fusion", "max_autotune_gemm", "fx_graph_cache", "assume_aligned_inputs",
                     "comprehensive_padding", "decompose_mem_bound_mm", "triton.cudagraphs"}
_SUPPORTED_METRICS = {"sacrebleu", "comet", "ter", "chrf", "perplexity"}


def _attn(d: View) -> Any:
    """attn_implementation after normalize_attn_implementation (a legacy flag maps to its backend)."""
    value = d.get("attn_implementation")
    if value:
        return value
    legacy = {"xformers_attention": "xformers", "sage_attention": "sage", "flex_attention": "flex_attention",
              "flash_attention": "flash_attention_2", "sdp_attention": "sdpa", "eager_attention": "eager"}
    for flag, impl in legacy.items():
        if d.get(flag):
            return impl
    if d.get("gemma4_hybrid_attn_impl"):
        return "flash_attention_2"
    return None


def _gc(d: View) -> bool:
    """gradient_checkpointing after the schema (`offload` / `offload_disk` become true)."""
    return d.on("gradient_checkpointing")


def _offloading(d: View) -> Any:
    """activation_offloading after check_gradient_checkpointing_w_offload."""
    gc = d.get("gradient_checkpointing")
    if gc == "offload":
        return True
    if gc == "offload_disk":
        return "disk"
    value = d.get("activation_offloading")
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return value


def _reentrant(d: View) -> bool:
    return bool(d.sub("gradient_checkpointing_kwargs").get("use_reentrant"))


def _cp(d: View) -> int:
    """context_parallel_size as the schema ends with it (the plugin's context_parallel.size fills it)."""
    flat = d.int("context_parallel_size", d.int("sequence_parallel_degree", 0))
    return flat or d.int("size", 1, d.sub("context_parallel"))


def _ep_backend_torch(d: View) -> bool:
    """expert_parallel_backend resolves to torch: written `torch` (`auto` depends on deep_ep being installed)."""
    return d.get("expert_parallel_backend") == "torch"


def _staged(d: View) -> bool:
    """check_staged_nf4 runs its constraints: torchao NF4, or qlora_sharded_model_loading with 4-bit under
    an FSDP config with cpu_ram_efficient_loading."""
    if d.get("nf4_backend") == "torchao":
        return True
    fsdp = d.fsdp()
    sharded = d.get("qlora_sharded_model_loading")
    if sharded is None:
        sharded = bool(fsdp and d.adapter() == "qlora" and d.on("load_in_4bit") and d.on("cpu_ram_efficient_loading",
                                                                                          fsdp))
    return bool(sharded and d.on("load_in_4bit") and fsdp and d.on("cpu_ram_efficient_loading", fsdp))


def _grpo_gen(d: View) -> tuple[int, int] | None:
    trl = d.sub("trl")
    if d.get("rl") != "grpo" or trl.get("num_generations") is None or trl.get("generation_batch_size") is None:
        return None
    return int(trl["num_generations"]), int(trl["generation_batch_size"])


def _polora_untrained(d: View) -> bool:
    return any(d.get(k) for k in ("lora_modules_to_save", "unfrozen_parameters", "peft_use_dora",
                                  "peft_trainable_token_indices", "lisa_step_interval", "reward_model",
                                  "process_reward_model"))


def _polora_lrs(d: View) -> bool:
    return any(d.get(k) for k in ("loraplus_lr_ratio", "lr_groups", "embedding_lr", "embedding_lr_scale"))


def _lora_kernel_written(d: View) -> bool:
    """A fused LoRA kernel written on (auto-enabling depends on the model's support table: not judged)."""
    return bool(d.adapter()) and any(d.on(k) for k in ("lora_mlp_kernel", "lora_qkv_kernel", "lora_o_kernel"))


def _sac(d: View) -> dict:
    value = d.get("selective_checkpointing")
    return value if isinstance(value, dict) else {}


_SAC_FUSED = (
    ("lora_mlp_kernel", ("gate_proj", "up_proj", "down_proj", "mlp", "mixer", "shared_experts", "shared_expert",
                         "feedforward", "experts", "gate_projs", "up_projs", "down_projs")),
    ("lora_qkv_kernel", ("q_proj", "k_proj", "v_proj", "in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a",
                         "self_attn", "linear_attn", "mixer")),
    ("lora_o_kernel", ("o_proj", "out_proj", "self_attn", "linear_attn", "mixer")),
    ("flash_attn_fuse_mlp", ("gate_proj", "up_proj", "down_proj", "mlp")),
)
_SAC_CONTAINERS = ("model", "language_model", "text_model", "decoder", "transformer", "backbone", "layers", "layer",
                   "h", "blocks", "block")


def _sac_module_site(d: View) -> int | None:
    """Which of check_selective_checkpointing's save_modules raises (6: an entry names a module a fused
    kernel replaces; 7: an entry scopes a layer container a LoRA kernel runs in), judging only the
    kernels the file writes on (auto-enabled LoRA kernels depend on the model's support table)."""
    import fnmatch

    sac = _sac(d)
    if not sac or not _gc(d) or _reentrant(d) or _offloading(d) not in (None, False, "hidden_states"):
        return None
    if _lora_kernel_written(d):
        save = sac.get("save", ["attention"]) or []
        if sac.get("save_matmul_min_k") or any(
                isinstance(s, str) and s != "attention"
                and any(s in op for op in ("aten::mm", "aten::addmm", "aten::matmul", "aten::bmm")) for s in save):
            return None  # site 4 or 5 raises first
    entries = [e for e in (sac.get("save_modules") or []) if isinstance(e, str)]
    for flag, modules in _SAC_FUSED:
        enabled = (d.on(flag) and bool(d.adapter())) if flag.startswith("lora_") else d.on(flag)
        if not enabled:
            continue
        for entry in entries:
            last = entry.rsplit(".", 1)[-1]
            glob = any(ch in last for ch in "*?[")
            if any(fnmatch.fnmatchcase(m, last) if glob else last == m for m in modules):
                return 6
            if flag.startswith("lora_"):
                names = _SAC_CONTAINERS + tuple(str(i) for i in range(100))
                if (any(fnmatch.fnmatchcase(n, last) for n in names) if glob
                        else last.isdigit() or last in _SAC_CONTAINERS):
                    return 7
    return None


def _ce_count(d: View) -> int:
    return sum(bool(d.get(k)) for k in ("cut_cross_entropy", "chunked_cross_entropy", "liger_cross_entropy",
                                        "liger_fused_linear_cross_entropy"))


def _dft_conflicts(d: View) -> bool:
    losses = [k for k in ("use_dft", "use_eaft") if d.get(k)]
    if len(losses) != 1:
        return False
    return any(d.get(k) for k in ("rl", "reward_model", "process_reward_model", "cut_cross_entropy",
                                  "liger_fused_linear_cross_entropy", "chunked_cross_entropy")) or \
        (d.get("context_parallel_size") or d.get("sequence_parallel_degree") or 1) > 1


def _cp_block(d: View) -> dict:
    return d.sub("context_parallel")


def _balance_bad(d: View) -> bool:
    return d.on("balance_labels") and bool(
        (not d.on("sample_packing") and (d.on("streaming") or d.get("pretraining_dataset") or d.on("group_by_length")))
        or d.on("sample_packing_sequentially") or d.on("curriculum_sampling") or d.get("diffusion_lm")
        or d.get("rl") or d.on("reward_model") or d.on("process_reward_model"))


def _relora_adapter(d: View) -> bool:
    return d.on("relora") and bool(d.get("jagged_restart_steps")) and not d.adapter()


def _relora(d: View) -> bool:
    return d.on("relora") and bool(d.get("jagged_restart_steps")) and d.adapter() in ("lora", "qlora")


Q = {"adapter": "qlora", "load_in_4bit": True}
FSDP = {"fsdp_version": 2, "fsdp_config": {"reshard_after_forward": True}}

CHECKS: tuple[Check, ...] = (
    # --- DatasetValidationMixin
    Check("sharegpt", f"{V}:DatasetValidationMixin.deprecate_sharegpt_datasets:1", ("datasets",),
          lambda d: any(isinstance(x, dict) and isinstance(x.get("type"), str) and x["type"].startswith("sharegpt")
                        for x in (d.get("datasets") if isinstance(d.get("datasets"), list) else [])),
          "`type: sharegpt.*` is deprecated. Please use `type: chat_template` instead.",
          "use `type: chat_template` (with its field mappings)",
          {"datasets": [{"path": "org/data", "type": "sharegpt"}]}),
    Check("unsloth", f"{V}:DatasetValidationMixin.check_deprecated_unsloth_fields:1",
          ("unsloth_cross_entropy_loss", "unsloth_lora_mlp", "unsloth_lora_qkv", "unsloth_lora_o", "unsloth_rms_norm",
           "unsloth_rope"),
          lambda d: any(d.get(k) for k in ("unsloth_cross_entropy_loss", "unsloth_lora_mlp", "unsloth_lora_qkv",
                                           "unsloth_lora_o", "unsloth_rms_norm", "unsloth_rope")),
          "`unsloth_*` ... been removed. Please use `lora_mlp_kernel`, `lora_qkv_kernel`, `lora_o_kernel` instead.",
          "use lora_mlp_kernel / lora_qkv_kernel / lora_o_kernel", {"unsloth_lora_mlp": True}),
    Check("no_datasets", f"{V}:DatasetValidationMixin.check_dataset_or_pretraining_dataset:1", ("datasets",),
          lambda d: d.get("datasets") is None and d.get("pretraining_dataset") is None,
          "either datasets or pretraining_dataset is required", "add `datasets:` (or `pretraining_dataset:`)",
          {"datasets": None}),
    Check("push_ds_auth", f"{V}:DatasetValidationMixin.check_push_ds_auth:1", ("push_dataset_to_hub",),
          lambda d: d.get("push_dataset_to_hub") and d.get("hf_use_auth_token") is not True,
          "Require cfg.hf_use_auth_token to be True for push_dataset_to_hub", "set `hf_use_auth_token: true`",
          {"push_dataset_to_hub": "org/prepared"}),
    Check("val_w_test", f"{V}:DatasetValidationMixin.check_val_w_test_datasets:1", ("val_set_size", "test_datasets"),
          lambda d: d.get("test_datasets") and d.get("val_set_size"),
          "non-zero val_set_size should not be used with test_datasets configuration",
          "remove val_set_size (test_datasets is the eval set)",
          {"test_datasets": [{"path": "org/eval", "type": "alpaca", "split": "train"}], "val_set_size": 0.05}),
    Check("eval_packing", f"{V}:DatasetValidationMixin.check_eval_packing:1", ("eval_table_size", "sample_packing"),
          lambda d: d.get("sample_packing") and d.get("eval_table_size") and d.get("eval_sample_packing") is not False,
          "eval_table_size and eval_sample_packing are not supported together with sample_packing.",
          "set `eval_sample_packing: false`", {"sample_packing": True, "eval_table_size": 5}),
    # --- AttentionValidationMixin
    Check("scaling_softmax", f"{V}:AttentionValidationMixin.check_scaling_softmax_requires_flex:1",
          ("scaling_softmax",), lambda d: d.on("scaling_softmax") and _attn(d) != "flex_attention",
          "scaling_softmax requires flex attention.", "add `attn_implementation: flex_attention`",
          {"scaling_softmax": True}),
    # --- TrainingValidationMixin
    Check("batch_size_only", f"{V}:TrainingValidationMixin.check_batch_size_fields:1", ("batch_size",),
          lambda d: not (d.get("micro_batch_size") or d.get("gradient_accumulation_steps")) and d.get("batch_size"),
          "At least two of micro_batch_size, gradient_accumulation_steps, batch_size must be set",
          "set micro_batch_size next to batch_size",
          {"micro_batch_size": None, "gradient_accumulation_steps": None, "batch_size": 8}),
    Check("gas_bsz", f"{V}:TrainingValidationMixin.check_gas_bsz:1", ("batch_size", "gradient_accumulation_steps"),
          lambda d: d.get("gradient_accumulation_steps") and d.get("batch_size"),
          "please set only one of gradient_accumulation_steps or batch_size", "keep one of them",
          {"batch_size": 8}),
    Check("warmup", f"{V}:TrainingValidationMixin.check_warmup:1", ("warmup_ratio", "warmup_steps"),
          lambda d: d.get("warmup_steps") and d.get("warmup_ratio"),
          "warmup_steps and warmup_ratio are mutually exclusive", "keep one of them",
          {"warmup_steps": 10, "warmup_ratio": 0.1}),
    Check("save_strategy_steps", f"{V}:TrainingValidationMixin.check_saves:1", ("save_steps", "save_strategy"),
          lambda d: d.get("save_strategy") and d.get("save_steps") and d.get("save_strategy") != "steps",
          "save_strategy and save_steps mismatch.", "set `save_strategy: steps` or remove save_steps",
          {"save_strategy": "epoch", "save_steps": 100}),
    Check("saves_per_epoch", f"{V}:TrainingValidationMixin.check_saves:2", ("save_steps", "saves_per_epoch"),
          lambda d: d.get("saves_per_epoch") and d.get("save_steps"),
          "save_steps and saves_per_epoch are mutually exclusive and cannot be used together.", "keep one of them",
          {"saves_per_epoch": 2, "save_steps": 100}),
    Check("eval_strategy_steps", f"{V}:TrainingValidationMixin.check_evals:1", ("eval_steps", "eval_strategy"),
          lambda d: d.get("eval_strategy") and d.get("eval_steps") and d.get("eval_strategy") != "steps",
          "eval_strategy and eval_steps mismatch.", "set `eval_strategy: steps` or remove eval_steps",
          {"eval_strategy": "epoch", "eval_steps": 50}),
    Check("eval_wo_val", f"{V}:TrainingValidationMixin.check_evals:2", ("val_set_size", "eval_steps", "eval_strategy"),
          lambda d: d.get("val_set_size") == 0 and (d.get("eval_steps") or d.get("eval_strategy"))
          and not d.get("test_datasets") and d.get("eval_strategy") != "no",
          "eval_steps and eval_strategy are not supported with val_set_size == 0",
          "set val_set_size (or test_datasets), or drop the eval settings", {"val_set_size": 0, "eval_steps": 50}),
    Check("evals_per_epoch", f"{V}:TrainingValidationMixin.check_evals:3", ("eval_steps", "evals_per_epoch"),
          lambda d: d.get("evals_per_epoch") and d.get("eval_steps"),
          "eval_steps and evals_per_epoch are mutually exclusive and cannot be used together.", "keep one of them",
          {"val_set_size": 0.05, "evals_per_epoch": 2, "eval_steps": 50}),
    Check("evals_per_epoch_strategy", f"{V}:TrainingValidationMixin.check_evals:4",
          ("eval_strategy", "evals_per_epoch"),
          lambda d: d.get("evals_per_epoch") and d.get("eval_strategy") and d.get("eval_strategy") != "steps",
          "eval_strategy must be empty or set to `steps` when used with evals_per_epoch.",
          "remove eval_strategy or set it to `steps`",
          {"val_set_size": 0.05, "evals_per_epoch": 2, "eval_strategy": "epoch"}),
    Check("bench_eval", f"{V}:TrainingValidationMixin.check_evals:5", ("do_bench_eval",),
          lambda d: d.get("do_bench_eval") and not (d.get("evals_per_epoch") or d.get("eval_steps")),
          "do_bench_eval requires evals_per_epoch or eval_steps to be set.", "set evals_per_epoch or eval_steps",
          {"do_bench_eval": True, "val_set_size": 0.05}),
    Check("neftune_both", f"{V}:TrainingValidationMixin.check_neftune:1", ("noisy_embedding_alpha",),
          lambda d: d.get("noisy_embedding_alpha") and d.get("neftune_noise_alpha"),
          "noisy_embedding_alpha is deprecated, use neftune_noise_alpha; both are set",
          "remove noisy_embedding_alpha", {"noisy_embedding_alpha": 5, "neftune_noise_alpha": 5}),
    Check("multipack_buffer", f"{V}:TrainingValidationMixin.check_multipack_buffer_size:1",
          ("pretrain_multipack_buffer_size",),
          lambda d: d.get("pretrain_multipack_buffer_size") and d.get("streaming_multipack_buffer_size"),
          "pretrain_multipack_buffer_size is deprecated, use streaming_multipack_buffer_size; both are set",
          "remove pretrain_multipack_buffer_size",
          {"pretrain_multipack_buffer_size": 1000, "streaming_multipack_buffer_size": 1000}),
    Check("fp8_config_wo_fp8", f"{V}:TrainingValidationMixin.check_fp8_config:1", ("fp8_config",),
          lambda d: d.get("fp8_config") is not None and not d.get("fp8"),
          "`fp8_config` requires `fp8: true`", "set `fp8: true` or remove fp8_config",
          {"fp8_config": {"recipe": "tensorwise"}}),
    Check("fp8_allgather_rowwise", f"{V}:TrainingValidationMixin.check_fp8_config:2",
          ("fp8_enable_fsdp_float8_all_gather",),
          lambda d: d.get("fp8_enable_fsdp_float8_all_gather") and d.get("fp8_config") is not None
          and isinstance(d.get("fp8_config"), dict) and d.sub("fp8_config").get("recipe") not in (None, "tensorwise"),
          "`fp8_enable_fsdp_float8_all_gather` only supports the tensorwise `fp8_config.recipe`",
          "disable fp8_enable_fsdp_float8_all_gather with rowwise scaling",
          {"fp8": True, "fp8_config": {"recipe": "rowwise"}, "fp8_enable_fsdp_float8_all_gather": True, **FSDP}),
    Check("fp8_allgather_wo_fsdp", f"{V}:TrainingValidationMixin.check_fp8_config:3",
          ("fp8_enable_fsdp_float8_all_gather",),
          lambda d: d.get("fp8_enable_fsdp_float8_all_gather") and not d.get("fsdp_config")
          and (d.get("fp8_config") is None or d.get("fp8")),
          "fp8_enable_fsdp_float8_all_gather requires FSDP2 (fsdp_config) to be used.",
          "add an fsdp_config (FSDP2) or remove it", {"fp8": True, "fp8_enable_fsdp_float8_all_gather": True}),
    Check("reentrant_frozen", f"{V}:TrainingValidationMixin.check_use_reentrant_mismatch:1",
          ("gradient_checkpointing_kwargs", "unfrozen_parameters"),
          lambda d: d.get("unfrozen_parameters") and d.sub("gradient_checkpointing_kwargs").get("use_reentrant") is True,
          "`use_reentrant` must be false when used with partially frozen model.",
          "set gradient_checkpointing_kwargs.use_reentrant: false",
          {"unfrozen_parameters": ["^lm_head.weight$"], "gradient_checkpointing": True,
           "gradient_checkpointing_kwargs": {"use_reentrant": True}}),
    Check("causal_lm_eval_packing", f"{V}:TrainingValidationMixin.check_causal_lm_evals:1",
          ("do_causal_lm_eval", "eval_sample_packing"),
          lambda d: d.get("do_causal_lm_eval") and d.get("eval_sample_packing"),
          "do_causal_lm_eval is enabled, eval_sample_packing must be set to False", "set `eval_sample_packing: false`",
          {"do_causal_lm_eval": True, "eval_sample_packing": True}),
    Check("causal_lm_metrics_list", f"{V}:TrainingValidationMixin.check_causal_lm_evals:2",
          ("eval_causal_lm_metrics",),
          lambda d: d.get("eval_causal_lm_metrics") and not isinstance(d.get("eval_causal_lm_metrics"), list),
          "eval_causal_lm_metrics must be a list", "write a list: [sacrebleu, ...]",
          {"eval_causal_lm_metrics": "sacrebleu"}),
    Check("causal_lm_metrics_known", f"{V}:TrainingValidationMixin.check_causal_lm_evals:3",
          ("eval_causal_lm_metrics",),
          lambda d: isinstance(d.get("eval_causal_lm_metrics"), list) and d.get("eval_causal_lm_metrics")
          and set(d.get("eval_causal_lm_metrics")) - _SUPPORTED_METRICS,
          "eval_causal_lm_metrics must be one of {'sacrebleu', 'comet', 'ter', 'chrf', 'perplexity'}",
          "use only sacrebleu, comet, ter, chrf, perplexity", {"eval_causal_lm_metrics": ["bleu"]}),
    Check("mistral_chat_template", f"{V}:TrainingValidationMixin.check_mistral_common_incompatible_options:4",
          ("chat_template",),
          lambda d: d.get("tokenizer_use_mistral_common") and not any(
              d.get(k) for k in ("added_tokens_overrides", "special_tokens", "tokens")) and d.get("chat_template"),
          "Setting chat_template is not supported with mistral-common tokenizer",
          "remove chat_template (the mistral-common tokenizer has its own)",
          {"tokenizer_use_mistral_common": True, "chat_template": "chatml"}),
    Check("mistral_processor_kwargs", f"{V}:TrainingValidationMixin.check_mistral_common_incompatible_options:5",
          ("processor_kwargs",),
          lambda d: d.get("tokenizer_use_mistral_common") and not any(
              d.get(k) for k in ("added_tokens_overrides", "special_tokens", "tokens", "chat_template"))
          and d.get("processor_kwargs"),
          "processor_kwargs is not supported with mistral-common tokenizer", "remove processor_kwargs",
          {"tokenizer_use_mistral_common": True, "processor_kwargs": {"do_resize": False}}),
    Check("pretrain_tps", f"{V}:TrainingValidationMixin.pretrain_with_tps:1", ("include_tokens_per_second",),
          lambda d: d.get("pretraining_dataset") and d.get("include_tokens_per_second", False),
          "pretraining_dataset and include_tokens_per_second cannot be used together.",
          "remove include_tokens_per_second",
          {"pretraining_dataset": [{"path": "org/corpus", "type": "pretrain"}], "max_steps": 100, "streaming": True,
           "include_tokens_per_second": True}),
    # --- LoRAValidationMixin
    Check("lr_groups_loraplus", f"{V}:LoRAValidationMixin.check_lr_groups:1", ("lr_groups", "loraplus_lr_ratio"),
          lambda d: d.get("lr_groups") and d.get("loraplus_lr_ratio"),
          "lr_groups and loraplus_lr_ratio cannot be used together.", "keep one of them",
          {"adapter": "lora", "loraplus_lr_ratio": 16,
           "lr_groups": [{"name": "o", "modules": ["o_proj"], "lr": 0.0001}]}),
    Check("frozen_layers", f"{V}:LoRAValidationMixin.check_frozen:1", ("unfrozen_parameters",),
          lambda d: d.get("adapter") and d.get("peft_layers_to_transform") and d.get("unfrozen_parameters"),
          "`unfrozen_parameters` used with `peft_layers_to_transform` can have unexpected behavior.",
          "remove unfrozen_parameters (the adapter picks the layers)",
          {"adapter": "lora", "peft_layers_to_transform": [0, 1], "unfrozen_parameters": ["^lm_head.weight$"]}),
    Check("layers_pattern", f"{V}:LoRAValidationMixin.check_peft_layers_pattern:1", ("peft_layers_pattern",),
          lambda d: d.get("peft_layers_pattern") and not d.get("peft_layers_to_transform"),
          "peft_layers_pattern requires peft_layers_to_transform to be set", "set peft_layers_to_transform",
          {"adapter": "lora", "peft_layers_pattern": ["layers"]}),
    Check("fused_mlp_lora", f"{V}:LoRAValidationMixin.check_fused_lora:1", ("flash_attn_fuse_mlp",),
          lambda d: d.adapter() in ("lora", "qlora", "mixlora") and d.on("flash_attn_fuse_mlp"),
          "Fused modules are not supported with LoRA/QLoRA", "remove flash_attn_fuse_mlp",
          {"adapter": "lora", "flash_attn_fuse_mlp": True}),
    Check("mixlora_rl", f"{V}:LoRAValidationMixin.check_fused_lora:3", ("adapter", "rl"),
          lambda d: d.adapter() == "mixlora" and not d.on("flash_attn_fuse_mlp") and d.get("rl") is not None,
          "MixLoRA is not compatible with RL training (DPO/KTO/GRPO).", "use adapter: lora or qlora for RL",
          {"plugins": ["axolotl.integrations.mixlora.MixLoraPlugin"], "adapter": "mixlora", "rl": "dpo", "datasets": [{"path": "org/prefs", "type": "chatml.intel"}]}),
    Check("onebit_lora", f"{V}:LoRAValidationMixin.check_onebitllms_lora:1", ("use_onebitllms", "adapter"),
          lambda d: d.on("use_onebitllms") and d.adapter() in ("lora", "qlora"),
          "LoRA/QLoRA is not supported with use_onebitllms", "remove the adapter or use_onebitllms",
          {"use_onebitllms": True, "adapter": "lora"}),
    Check("lora_kernels_8bit", f"{V}:LoRAValidationMixin.check_lora_kernels_8bit:1",
          ("lora_mlp_kernel", "lora_qkv_kernel", "lora_o_kernel"),
          lambda d: (d.get("lora_mlp_kernel") or d.get("lora_qkv_kernel") or d.get("lora_o_kernel"))
          and d.adapter() == "lora" and d.get("load_in_8bit"),
          "lora_mlp_kernel, lora_qkv_kernel, and lora_o_kernel are not compatible with 8-bit LoRA a the moment.",
          "set the lora_*_kernel flags to false with load_in_8bit",
          {"adapter": "lora", "load_in_8bit": True, "lora_mlp_kernel": True}),
    # --- RLValidationMixin
    Check("packing_rl", f"{V}:RLValidationMixin.check_sample_packing_w_rl:1", ("sample_packing", "rl"),
          lambda d: d.get("sample_packing") and d.get("rl"),
          "`sample_packing: true` does not work with RLHF training", "remove sample_packing",
          {"rl": "dpo", "sample_packing": True, "datasets": [{"path": "org/prefs", "type": "chatml.intel"}]}),
    Check("kto_packing", f"{V}:RLValidationMixin.check_kto_config:1", ("eval_sample_packing",),
          lambda d: d.get("rl") == "kto" and not d.get("sample_packing") and d.get("eval_sample_packing"),
          "sample_packing is not supported with kto", "remove eval_sample_packing",
          {"rl": "kto", "eval_sample_packing": True, "remove_unused_columns": False,
           "datasets": [{"path": "org/kto", "type": "chatml.intel"}]}),
    Check("kto_columns", f"{V}:RLValidationMixin.check_kto_config:2", ("rl",),
          lambda d: d.get("rl") == "kto" and not d.get("sample_packing") and not d.get("eval_sample_packing")
          and d.get("remove_unused_columns") is not False,
          "Set `remove_unused_columns: False` when using kto", "set `remove_unused_columns: false`",
          {"rl": "kto", "datasets": [{"path": "org/kto", "type": "chatml.intel"}]}),
    Check("grpo_liger_cp", f"{V}:RLValidationMixin.check_grpo_liger_context_parallel:1", ("context_parallel_size",),
          lambda d: d.get("rl") == "grpo" and d.sub("trl").get("use_liger_loss") and d.int("context_parallel_size") > 1,
          "GRPO + SP + Liger not currently supported", "drop trl.use_liger_loss or context parallelism",
          {"rl": "grpo", "trl": {"use_liger_loss": True}, "context_parallel_size": 2}),
    Check("gdpo_sum", f"{V}:RLValidationMixin.check_gdpo:1", ("trl",),
          lambda d: d.get("rl") == "gdpo" and d.sub("trl").get("multi_objective_aggregation") == "sum_then_normalize",
          "`multi_objective_aggregation` value set as `sum_then_normalize` => GRPO, but GDPO was selected",
          "use rl: grpo, or another aggregation",
          {"rl": "gdpo", "trl": {"multi_objective_aggregation": "sum_then_normalize"}}),
    Check("dpo_weights_wo_type", f"{V}:RLValidationMixin.check_dpo:1", ("dpo_loss_weights",),
          lambda d: d.get("rl") == "dpo" and d.get("dpo_loss_weights") is not None and d.get("dpo_loss_type") is None,
          "`dpo_loss_weights` requires `dpo_loss_type` to be set", "set dpo_loss_type",
          {"rl": "dpo", "dpo_loss_weights": [1.0], "datasets": [{"path": "org/prefs", "type": "chatml.intel"}]}),
    Check("dpo_lengths", f"{V}:RLValidationMixin.check_dpo:2", ("dpo_loss_weights", "dpo_loss_type"),
          lambda d: d.get("rl") == "dpo" and isinstance(d.get("dpo_loss_type"), list)
          and isinstance(d.get("dpo_loss_weights"), list) and len(d.get("dpo_loss_type")) != len(d.get("dpo_loss_weights")),
          "`dpo_loss_type` and `dpo_loss_weights` must be the same length", "give one weight per loss type",
          {"rl": "dpo", "dpo_loss_type": ["sigmoid", "ipo"], "dpo_loss_weights": [1.0],
           "datasets": [{"path": "org/prefs", "type": "chatml.intel"}]}),
    Check("dpo_only", f"{V}:RLValidationMixin.check_dpo:3", ("dpo_loss_type", "dpo_loss_weights"),
          lambda d: d.get("rl") != "dpo" and (d.get("dpo_loss_type") is not None or d.get("dpo_loss_weights") is not None),
          "`dpo_loss_type` and `dpo_loss_weights` are for DPO only", "remove them or set rl: dpo",
          {"dpo_loss_type": ["sigmoid"]}),
    Check("grpo_one_generation", f"{V}:RLValidationMixin.check_grpo_batch_size_divisibility:1", ("trl",),
          lambda d: d.get("rl") == "grpo" and d.sub("trl").get("num_generations") is not None
          and d.sub("trl").get("num_generations") < 2,
          "GRPO requires `trl.num_generations >= 2`", "set trl.num_generations to 2 or more",
          {"rl": "grpo", "trl": {"num_generations": 1}}),
    Check("grpo_generation_batch", f"{V}:RLValidationMixin.check_grpo_batch_size_divisibility:2", ("trl",),
          lambda d: (g := _grpo_gen(d)) is not None and g[0] >= 2 and g[1] % g[0] != 0,
          "GRPO: generation batch size must be divisible by `trl.num_generations`.",
          "make trl.generation_batch_size a multiple of trl.num_generations",
          {"rl": "grpo", "trl": {"num_generations": 4, "generation_batch_size": 6}}),
    # --- OptimizationValidationMixin
    Check("polora_adapter", f"{V}:OptimizationValidationMixin.check_polora:1", ("optimizer",),
          lambda d: d.get("optimizer") == "polora" and d.adapter() not in ("lora", "qlora"),
          "polora only updates LoRA (A, B) factors and requires adapter: lora or qlora.",
          "add adapter: lora, or pick another optimizer", {"optimizer": "polora"}),
    Check("polora_parallel", f"{V}:OptimizationValidationMixin.check_polora:2", ("optimizer",),
          lambda d: d.get("optimizer") == "polora" and d.adapter() in ("lora", "qlora")
          and (d.get("deepspeed") or (d.get("tensor_parallel_size") or 1) > 1),
          "polora is not compatible with DeepSpeed or tensor parallelism.", "use single-GPU, DDP or FSDP2",
          {"optimizer": "polora", "adapter": "lora", "deepspeed": "zero2.json"}),
    Check("polora_untrained", f"{V}:OptimizationValidationMixin.check_polora:3", ("optimizer",),
          lambda d: d.get("optimizer") == "polora" and d.adapter() in ("lora", "qlora") and not d.get("deepspeed")
          and (d.get("tensor_parallel_size") or 1) <= 1 and _polora_untrained(d),
          "polora has no fallback optimizer, so the parameters added by [...] would never be trained.",
          "remove those keys or pick another optimizer",
          {"optimizer": "polora", "adapter": "lora", "lora_modules_to_save": ["lm_head"]}),
    Check("polora_lrs", f"{V}:OptimizationValidationMixin.check_polora:4", ("optimizer",),
          lambda d: d.get("optimizer") == "polora" and d.adapter() in ("lora", "qlora") and not d.get("deepspeed")
          and (d.get("tensor_parallel_size") or 1) <= 1 and not _polora_untrained(d) and _polora_lrs(d),
          "polora sets its own per-factor step size, so [...] would be silently ignored.",
          "remove those keys or pick another optimizer",
          {"optimizer": "polora", "adapter": "lora", "loraplus_lr_ratio": 16}),
    Check("polora_relora", f"{V}:OptimizationValidationMixin.check_polora:5", ("optimizer",),
          lambda d: d.get("optimizer") == "polora" and d.adapter() in ("lora", "qlora") and not d.get("deepspeed")
          and (d.get("tensor_parallel_size") or 1) <= 1 and not _polora_untrained(d) and not _polora_lrs(d)
          and d.get("relora_steps"),
          "relora resets optimizer state through Optimizer.state, which polora does not use",
          "remove relora_steps or pick another optimizer",
          {"optimizer": "polora", "adapter": "lora", "relora_steps": 100}),
    Check("qgalore_adapter", f"{V}:OptimizationValidationMixin.check_qgalore:1", ("optimizer",),
          lambda d: d.get("optimizer") == "q_galore_adamw8bit" and d.adapter(),
          "q_galore_adamw8bit operates on full-precision parameters and is incompatible with adapter=...",
          "remove the adapter or pick another optimizer", {"optimizer": "q_galore_adamw8bit", "adapter": "lora"}),
    Check("qgalore_deepspeed", f"{V}:OptimizationValidationMixin.check_qgalore:2", ("optimizer",),
          lambda d: d.get("optimizer") == "q_galore_adamw8bit" and not d.adapter() and d.get("deepspeed"),
          "q_galore_adamw8bit is not yet validated with DeepSpeed. Use DDP or FSDP2.", "use DDP or FSDP2",
          {"optimizer": "q_galore_adamw8bit", "deepspeed": "zero2.json"}),
    Check("batch_flattening_attn", f"{V}:OptimizationValidationMixin.check_batch_flattening_fa:1",
          ("batch_flattening",),
          lambda d: d.get("batch_flattening") not in (None, False, "auto") and d.on("batch_flattening")
          and _attn(d) not in _PACKING_ATTN,
          "batch_flattening requires a varlen-capable attention backend (e.g., attn_implementation: flash_attention_2).",
          "set attn_implementation: flash_attention_2 (or batch_flattening: auto)", {"batch_flattening": True}),
    Check("batch_flattening_packing", f"{V}:OptimizationValidationMixin.check_batch_flattening_fa:2",
          ("batch_flattening",),
          lambda d: d.get("batch_flattening") not in (None, False, "auto") and d.on("batch_flattening")
          and _attn(d) in _PACKING_ATTN and d.on("sample_packing"),
          "batch_flattening not compatible with sample_packing", "keep one of them",
          {"batch_flattening": True, "attn_implementation": "flash_attention_2", "sample_packing": True}),
    Check("cross_entropy", f"{V}:OptimizationValidationMixin.check_cross_entropy_conflicts:1",
          ("cut_cross_entropy", "chunked_cross_entropy", "liger_cross_entropy", "liger_fused_linear_cross_entropy"),
          lambda d: _ce_count(d) > 1, "Only one cross entropy optimization can be enabled at a time.",
          "keep one of cut_cross_entropy, chunked_cross_entropy, liger_*cross_entropy",
          {"chunked_cross_entropy": True, "liger_cross_entropy": True}),
    Check("dft_eaft", f"{V}:OptimizationValidationMixin.check_custom_loss_conflicts:1", ("use_dft", "use_eaft"),
          lambda d: d.get("use_dft") and d.get("use_eaft"), "`use_dft` and `use_eaft` cannot be enabled together.",
          "keep one of them", {"use_dft": True, "use_eaft": True}),
    Check("dft_conflict", f"{V}:OptimizationValidationMixin.check_custom_loss_conflicts:2", ("use_dft", "use_eaft"),
          _dft_conflicts, "`use_dft` is an SFT-only loss and cannot be combined with: ...",
          "drop the custom loss or the conflicting option", {"use_dft": True, "chunked_cross_entropy": True}),
    Check("cpu_offload_pin_memory", f"{V}:OptimizationValidationMixin.check_fsdp2_cpu_offload_pin_memory:1",
          ("fsdp_config",),
          lambda d: d.get("fsdp_config") and d.sub("fsdp_config").get("cpu_offload_pin_memory") is False
          and not d.sub("fsdp_config").get("offload_params"),
          "disabling cpu_offload_pin_memory requires enabling offload_params",
          "set fsdp_config.offload_params: true or drop cpu_offload_pin_memory",
          {"fsdp_version": 2, "fsdp_config": {"cpu_offload_pin_memory": False}}),
    Check("cpu_ram_4bit", f"{V}:OptimizationValidationMixin.check_fsdp2_cpu_ram_efficient_loading_w_4bit:1",
          ("fsdp_config",),
          lambda d: d.fsdp() and d.on("cpu_ram_efficient_loading", d.fsdp()) and d.on("load_in_4bit")
          and (d.get("qlora_sharded_model_loading") is False or (d.get("qlora_sharded_model_loading") is None
                                                                 and d.adapter() != "qlora")),
          "FSDP2 does not support `cpu_ram_efficient_loading` with load_in_4bit",
          "set qlora_sharded_model_loading: true, or fsdp_config.cpu_ram_efficient_loading: false",
          {"adapter": "qlora", "load_in_4bit": True, "qlora_sharded_model_loading": False, "fsdp_version": 2,
           "fsdp_config": {"cpu_ram_efficient_loading": True}}),
    Check("bnb_blocksize", f"{V}:OptimizationValidationMixin.check_bnb_blocksize:1", ("bnb_config_kwargs",),
          lambda d: d.on("load_in_4bit") and d.get("nf4_backend") != "torchao"
          and d.sub("bnb_config_kwargs").get("blocksize", 64) != 64,
          "bitsandbytes 4-bit loading always quantizes with blocksize 64",
          "remove bnb_config_kwargs.blocksize or set it to 64",
          {**Q, "bnb_config_kwargs": {"blocksize": 128}}),
    Check("staged_nf4", f"{V}:OptimizationValidationMixin.check_staged_nf4:1", ("nf4_backend", "qlora_sharded_model_loading"),
          lambda d: _staged(d) and (not d.on("load_in_4bit") or d.adapter() != "qlora" or d.on("load_in_8bit")
                                    or not d.fsdp() or not d.on("cpu_ram_efficient_loading", d.fsdp())
                                    or d.get("deepspeed") or d.int("tensor_parallel_size") > 1 or _cp(d) > 1
                                    or d.int("dp_replicate_size") > 1
                                    or d.sub("bnb_config_kwargs").get("bnb_4bit_quant_type", "nf4") != "nf4"),
          "CPU-staged NF4 requires adapter: qlora, load_in_4bit, FSDP2 with cpu_ram_efficient_loading, no "
          "DeepSpeed/tensor/context parallelism, dp_replicate_size 1 and bnb_4bit_quant_type: nf4",
          "meet the CPU-staged NF4 requirements or drop nf4_backend: torchao",
          {"nf4_backend": "torchao", "adapter": "lora"}),
    Check("deepcompile", f"{V}:OptimizationValidationMixin.check_deepcompile:1", ("deepcompile",),
          lambda d: d.get("deepcompile") and not d.get("deepspeed"),
          "DeepCompile is only supported with DeepSpeed", "add a deepspeed config or remove deepcompile",
          {"deepcompile": True}),
    # --- SystemValidationMixin
    Check("mem_mismatch", f"{V}:SystemValidationMixin.check_mem_mismatch:1", ("gpu_memory_limit", "max_memory"),
          lambda d: d.get("max_memory") is not None and d.get("gpu_memory_limit") is not None,
          "max_memory and gpu_memory_limit are mutually exclusive and cannot be used together.", "keep one of them",
          {"max_memory": {"0": "20GiB"}, "gpu_memory_limit": "20GiB"}),
    Check("quant_config_bnb", f"{V}:SystemValidationMixin.check_model_quantization_config_vs_bnb:1",
          ("model_quantization_config",),
          lambda d: d.get("model_quantization_config") and (d.get("load_in_8bit") or d.get("load_in_4bit")),
          "model_quantization_config and load_in_8bit or load_in_4bit cannot be used together.", "keep one of them",
          {"model_quantization_config": "Mxfp4Config", **Q}),
    # --- ChatTemplateValidationMixin
    Check("jinja_wo_template", f"{V}:ChatTemplateValidationMixin.check_chat_template_config:1", ("chat_template",),
          lambda d: d.get("chat_template") == "jinja" and not d.get("chat_template_jinja"),
          "chat_template_jinja is required when chat_template is set to 'jinja'.", "set chat_template_jinja",
          {"chat_template": "jinja"}),
    # --- PretrainingValidationMixin
    Check("pretrain_max_steps", f"{V}:PretrainingValidationMixin.check_pretraining_w_max_steps:1",
          ("pretraining_dataset",),
          lambda d: d.get("pretraining_dataset") and not d.get("max_steps"),
          "max_steps must be set when using iterable pretraining_dataset", "set max_steps",
          {"pretraining_dataset": [{"path": "org/corpus", "type": "pretrain"}]}),
    Check("pretrain_val", f"{V}:PretrainingValidationMixin.check_pretraining_w_val_set_size:1", ("val_set_size",),
          lambda d: d.get("pretraining_dataset") and d.get("max_steps") and d.get("val_set_size"),
          "val_set_size is not supported with pretraining_dataset.", "use test_datasets for evaluation",
          {"pretraining_dataset": [{"path": "org/corpus", "type": "pretrain"}], "max_steps": 100,
           "val_set_size": 0.05}),
    Check("streaming_val", f"{V}:PretrainingValidationMixin.check_streaming_w_val_set_size:1", ("val_set_size",),
          lambda d: d.get("streaming") and not d.get("pretraining_dataset") and d.get("val_set_size"),
          "val_set_size is not supported with streaming datasets.", "use test_datasets for evaluation",
          {"streaming": True, "max_steps": 100, "val_set_size": 0.05}),
    Check("streaming_max_steps", f"{V}:PretrainingValidationMixin.check_streaming_w_max_steps:1", ("streaming",),
          lambda d: d.get("streaming") and not d.get("max_steps") and not d.get("pretraining_dataset"),
          "max_steps must be set when using streaming datasets.", "set max_steps", {"streaming": True}),
    Check("streaming_multi", f"{V}:PretrainingValidationMixin.check_streaming_w_multiple_datasets:1",
          ("sample_packing",),
          lambda d: d.get("streaming") and d.get("max_steps") and d.get("sample_packing") and d.get("datasets")
          and len(d.get("datasets")) > 1,
          "Sample packing with multiple streaming datasets is not yet supported", "stream one dataset, or drop packing",
          {"streaming": True, "max_steps": 100, "sample_packing": True,
           "datasets": [{"path": "org/a", "type": "alpaca"}, {"path": "org/b", "type": "alpaca"}]}),
    # --- ModelCompatibilityValidationMixin
    Check("mpt_gc", f"{V}:ModelCompatibilityValidationMixin.check_mpt_checkpointing:1", ("gradient_checkpointing",),
          lambda d: isinstance(d.get("base_model"), str) and "mpt" in d.get("base_model").lower() and _gc(d),
          "gradient_checkpointing is not supported for MPT models", "remove gradient_checkpointing",
          {"base_model": "mosaicml/mpt-7b", "gradient_checkpointing": True}),
    Check("offloading_wo_gc", f"{V}:ModelCompatibilityValidationMixin.check_activation_offloading_wo_gc:1",
          ("activation_offloading",),
          lambda d: _offloading(d) and not _gc(d),
          "activation_offloading requires gradient_checkpointing", "set gradient_checkpointing: true",
          {"activation_offloading": True}),
    Check("sac_wo_gc", f"{V}:ModelCompatibilityValidationMixin.check_selective_checkpointing:1",
          ("selective_checkpointing",),
          lambda d: d.on("selective_checkpointing") and not _gc(d),
          "selective_checkpointing requires gradient_checkpointing", "set gradient_checkpointing: true",
          {"selective_checkpointing": True}),
    Check("sac_reentrant", f"{V}:ModelCompatibilityValidationMixin.check_selective_checkpointing:2",
          ("selective_checkpointing",),
          lambda d: d.on("selective_checkpointing") and _gc(d) and _reentrant(d),
          "selective_checkpointing requires non-reentrant checkpointing",
          "set gradient_checkpointing_kwargs.use_reentrant: false",
          {"selective_checkpointing": True, "gradient_checkpointing": True,
           "gradient_checkpointing_kwargs": {"use_reentrant": True}}),
    Check("sac_offloading", f"{V}:ModelCompatibilityValidationMixin.check_selective_checkpointing:3",
          ("selective_checkpointing",),
          lambda d: d.on("selective_checkpointing") and _gc(d) and not _reentrant(d) and _offloading(d)
          and _offloading(d) != "hidden_states",
          "selective_checkpointing is only compatible with activation_offloading: hidden_states (or false)",
          "use activation_offloading: hidden_states or false",
          {"selective_checkpointing": True, "gradient_checkpointing": True, "activation_offloading": True}),
    Check("sac_matmul_lora", f"{V}:ModelCompatibilityValidationMixin.check_selective_checkpointing:4",
          ("selective_checkpointing",),
          lambda d: _sac(d) and _gc(d) and not _reentrant(d) and _offloading(d) in (None, False, "hidden_states")
          and _lora_kernel_written(d) and any(
              isinstance(s, str) and s != "attention" and any(s in op for op in ("aten::mm", "aten::addmm",
                                                                                 "aten::matmul", "aten::bmm"))
              for s in (_sac(d).get("save") or [])),
          "selective_checkpointing.save entries [...] match matmul ops, which cannot be saved while a fused LoRA "
          "kernel is enabled", "set the lora_*_kernel flags to false, or use save: [attention]",
          {"adapter": "lora", "lora_mlp_kernel": True, "gradient_checkpointing": True,
           "selective_checkpointing": {"save": ["aten::mm"]}}),
    Check("sac_min_k_lora", f"{V}:ModelCompatibilityValidationMixin.check_selective_checkpointing:5",
          ("selective_checkpointing",),
          lambda d: _sac(d) and _gc(d) and not _reentrant(d) and _offloading(d) in (None, False, "hidden_states")
          and _lora_kernel_written(d) and _sac(d).get("save_matmul_min_k") and not any(
              isinstance(s, str) and s != "attention" and any(s in op for op in ("aten::mm", "aten::addmm",
                                                                                 "aten::matmul", "aten::bmm"))
              for s in (_sac(d).get("save") or [])),
          "selective_checkpointing.save_matmul_min_k saves the base matmul that a fused LoRA kernel then mutates "
          "in-place (addmm_)", "set the lora_*_kernel flags to false, or drop save_matmul_min_k",
          {"adapter": "lora", "lora_mlp_kernel": True, "gradient_checkpointing": True,
           "selective_checkpointing": {"save": ["attention"], "save_matmul_min_k": 1024}}),
    Check("sac_fused_module", f"{V}:ModelCompatibilityValidationMixin.check_selective_checkpointing:6",
          ("selective_checkpointing",), lambda d: _sac_module_site(d) == 6,
          "selective_checkpointing.save_modules entry ... names a module whose forward is replaced by <kernel>: true, "
          "so its hooks never fire and the rule would be a silent no-op.",
          "set that kernel flag to false or remove the entry",
          {"flash_attn_fuse_mlp": True, "gradient_checkpointing": True,
           "selective_checkpointing": {"save_modules": ["mlp"]}}),
    Check("sac_layer_container", f"{V}:ModelCompatibilityValidationMixin.check_selective_checkpointing:7",
          ("selective_checkpointing",), lambda d: _sac_module_site(d) == 7,
          "selective_checkpointing.save_modules entry ... scopes a decoder layer or model container, which holds the "
          "projections <lora kernel>: true runs", "set the lora_*_kernel flag to false or name a projection the "
          "kernel does not cover",
          {"adapter": "lora", "lora_o_kernel": True, "gradient_checkpointing": True,
           "selective_checkpointing": {"save_modules": ["layers.0"]}}),
    Check("compile_regional_gc",
          f"{V}:ModelCompatibilityValidationMixin.check_torch_compile_regional_with_gradient_checkpointing:1",
          ("torch_compile_regional",),
          lambda d: d.get("torch_compile") is True and d.on("torch_compile_regional") and _gc(d),
          "torch_compile_regional cannot be combined with gradient_checkpointing", "use whole-model compile",
          {"torch_compile": True, "torch_compile_regional": True, "gradient_checkpointing": True}),
    Check("ep_torch_reentrant", f"{V}:ModelCompatibilityValidationMixin.check_torch_expert_parallel_checkpointing:1",
          ("expert_parallel_backend",),
          lambda d: d.int("expert_parallel_size") > 1 and _ep_backend_torch(d) and _gc(d) and _reentrant(d),
          "expert_parallel_backend: torch requires non-reentrant gradient checkpointing",
          "set gradient_checkpointing_kwargs.use_reentrant: false",
          {"expert_parallel_size": 2, "expert_parallel_backend": "torch", "gradient_checkpointing": True,
           "gradient_checkpointing_kwargs": {"use_reentrant": True}, "fsdp_version": 2,
           "fsdp_config": {"state_dict_type": "FULL_STATE_DICT"}}),
    Check("ep_torch_offloading", f"{V}:ModelCompatibilityValidationMixin.check_torch_expert_parallel_checkpointing:2",
          ("expert_parallel_backend",),
          lambda d: d.int("expert_parallel_size") > 1 and _ep_backend_torch(d) and _gc(d) and not _reentrant(d)
          and _offloading(d) in (True, "legacy", "disk"),
          "expert_parallel_backend: torch is incompatible with activation_offloading ...",
          "use activation_offloading: hidden_states or false",
          {"expert_parallel_size": 2, "expert_parallel_backend": "torch", "gradient_checkpointing": True,
           "activation_offloading": True, "fsdp_version": 2, "fsdp_config": {"state_dict_type": "FULL_STATE_DICT"}}),
    Check("ep_dispatch_chunks", f"{V}:ModelCompatibilityValidationMixin.check_expert_parallel_dispatch_chunks:1",
          ("expert_parallel_dispatch_chunks",),
          lambda d: d.int("expert_parallel_dispatch_chunks") > 1 and d.get("expert_parallel_backend") == "deep_ep",
          "expert_parallel_dispatch_chunks > 1 requires expert_parallel_backend: torch",
          "set expert_parallel_backend: torch", {"expert_parallel_dispatch_chunks": 2,
                                                 "expert_parallel_backend": "deep_ep"}),
    Check("hidden_states_frozen", f"{V}:ModelCompatibilityValidationMixin.check_hidden_states_offloading:1",
          ("activation_offloading",),
          lambda d: _offloading(d) == "hidden_states" and _reentrant(d) and d.get("unfrozen_parameters"),
          "activation_offloading: hidden_states with reentrant checkpointing is incompatible with "
          "`unfrozen_parameters`", "set gradient_checkpointing_kwargs.use_reentrant: false",
          {"activation_offloading": "hidden_states", "gradient_checkpointing": True,
           "gradient_checkpointing_kwargs": {"use_reentrant": 1}, "unfrozen_parameters": ["^lm_head.weight$"]}),
    Check("bettertransformer_amp", f"{V}:ModelCompatibilityValidationMixin.check_better_transformers:1",
          ("flash_optimum",),
          lambda d: d.get("flash_optimum") is True and (d.on("fp16") or d.get("bf16") is True),
          "AMP is not supported with BetterTransformer", "remove fp16/bf16 (load in float16/bfloat16 instead)",
          {"flash_optimum": True, "bf16": True}),
    Check("gptq_revision", f"{V}:ModelCompatibilityValidationMixin.check_gptq_w_revision:1", ("revision_of_model",),
          lambda d: d.get("gptq") and d.get("revision_of_model"),
          "revision_of_model is not supported for GPTQ models.", "download that branch and point base_model at it",
          {"gptq": True, "revision_of_model": "main"}),
    Check("mxfp4_cpu_ram", f"{V}:ModelCompatibilityValidationMixin.check_gpt_oss_fsdp_loading:1", ("fsdp_config",),
          lambda d: d.get("model_quantization_config", "") == "Mxfp4Config"
          and (d.sub("fsdp_config").get("cpu_ram_efficient_loading", False) is True),
          "FSDP cpu_ram_efficient_loading is not supported for Mxfp4Config model quantization.",
          "set fsdp_config.cpu_ram_efficient_loading: false",
          {"model_quantization_config": "Mxfp4Config", "fsdp_version": 2,
           "fsdp_config": {"cpu_ram_efficient_loading": True}}),
    # --- ComplexValidationMixin
    Check("neftune_alpha", f"{V}:ComplexValidationMixin.validate_neftune_noise_alpha:1", ("neftune_noise_alpha",),
          lambda d: isinstance(d.get("neftune_noise_alpha"), (int, float)) and d.get("neftune_noise_alpha") <= 0.0,
          "neftune_noise_alpha must be > 0.0", "set a positive value or remove it", {"neftune_noise_alpha": 0}),
    Check("simpo_warmup", f"{V}:ComplexValidationMixin.check_simpo_warmup:1", ("warmup_ratio",),
          lambda d: d.get("rl") == "simpo" and d.get("warmup_ratio"),
          "warmup_ratio is not supported with the simpo trainer.", "use warmup_steps",
          {"rl": "simpo", "warmup_ratio": 0.1, "datasets": [{"path": "org/prefs", "type": "chatml.intel"}]}),
    Check("relora_steps", f"{V}:ComplexValidationMixin.check_relora:1", ("relora",),
          lambda d: d.on("relora") and not d.get("jagged_restart_steps"),
          "jagged_restart_steps must be set to use ReLoRA", "set jagged_restart_steps", {"relora": True}),
    Check("relora_adapter", f"{V}:ComplexValidationMixin.check_relora:2", ("relora",), _relora_adapter,
          "cfg.adapter must support ReLoRA to use ReLoRA restart semantics", "set adapter: lora or qlora",
          {"relora": True, "jagged_restart_steps": 100}),
    Check("relora_fsdp", f"{V}:ComplexValidationMixin.check_relora:3", ("relora",),
          lambda d: _relora(d) and d.get("fsdp_config"), "fsdp not supported with ReLoRA", "drop FSDP or ReLoRA",
          {"relora": True, "jagged_restart_steps": 100, "adapter": "lora", **FSDP}),
    Check("relora_deepspeed", f"{V}:ComplexValidationMixin.check_relora:4", ("relora",),
          lambda d: _relora(d) and not d.get("fsdp_config") and d.get("deepspeed"),
          "deepspeed not supported with ReLoRA", "drop DeepSpeed or ReLoRA",
          {"relora": True, "jagged_restart_steps": 100, "adapter": "lora", "deepspeed": "zero2.json"}),
    Check("relora_one_cycle", f"{V}:ComplexValidationMixin.check_relora:5", ("relora",),
          lambda d: _relora(d) and not d.get("fsdp_config") and not d.get("deepspeed")
          and d.get("lr_scheduler") == "one_cycle",
          "ReLoRA is not compatible with the one_cycle scheduler", "use another lr_scheduler",
          {"relora": True, "jagged_restart_steps": 100, "adapter": "lora", "lr_scheduler": "one_cycle"}),
    Check("relora_fused", f"{V}:ComplexValidationMixin.check_relora:6", ("relora",),
          lambda d: _relora(d) and not d.get("fsdp_config") and not d.get("deepspeed")
          and d.get("lr_scheduler") != "one_cycle" and d.on("flash_attn_fuse_mlp"),
          "Fused modules are not supported with ReLoRA", "remove flash_attn_fuse_mlp",
          {"relora": True, "jagged_restart_steps": 100, "adapter": "qlora", "load_in_4bit": True,
           "flash_attn_fuse_mlp": True}),
    Check("early_stopping_steps", f"{V}:ComplexValidationMixin.check_early_stopping:1", ("early_stopping_patience",),
          lambda d: d.get("early_stopping_patience") and (not d.get("save_steps") or not d.get("eval_steps")),
          "`early_stopping_patience` requires save_steps and eval_steps to be set.", "set save_steps and eval_steps",
          {"early_stopping_patience": 3}),
    Check("early_stopping_divide", f"{V}:ComplexValidationMixin.check_early_stopping:2", ("early_stopping_patience",),
          lambda d: d.get("early_stopping_patience") and isinstance(d.get("save_steps"), int)
          and isinstance(d.get("eval_steps"), int) and d.get("save_steps") and d.get("eval_steps")
          and d.get("save_steps") % d.get("eval_steps") != 0,
          "`early_stopping_patience` requires that eval_steps should evenly divide save_steps.",
          "make save_steps a multiple of eval_steps",
          {"early_stopping_patience": 3, "val_set_size": 0.05, "save_steps": 100, "eval_steps": 30}),
    Check("cp_glm_packing", f"{V}:ComplexValidationMixin.check_context_parallel_size:1", ("context_parallel_size",),
          lambda d: _cp(d) > 1 and (d.on("sample_packing") or d.on("batch_flattening")) and d.on("use_glm_dsa_kernels"),
          "GLM DSA context parallelism does not support packed inputs", "drop sample_packing",
          {"plugins": ["axolotl.integrations.kernels.KernelsPlugin"], "context_parallel_size": 2, "use_glm_dsa_kernels": True, "sample_packing": True,
           "attn_implementation": "flash_attention_2"}),
    Check("cp_eager", f"{V}:ComplexValidationMixin.check_context_parallel_size:2", ("attn_implementation",),
          lambda d: _cp(d) > 1 and _attn(d) == "eager" and not d.on("use_glm_dsa_kernels"),
          "context parallelism wraps a kernel-backed attention implementation (sdpa/flash/flex); "
          "`attn_implementation: eager` is not supported.", "use sdpa, flash or flex attention",
          {"context_parallel_size": 2, "attn_implementation": "eager"}),
    Check("cp_glm_deepspeed", f"{V}:ComplexValidationMixin.check_context_parallel_deepspeed:1", ("deepspeed",),
          lambda d: d.get("deepspeed") and _cp(d) > 1 and d.on("use_glm_dsa_kernels"),
          "GLM DSA context parallelism needs ringmaster, which does not run under DeepSpeed; use FSDP2 instead.",
          "use FSDP2", {"plugins": ["axolotl.integrations.kernels.KernelsPlugin"], "deepspeed": "zero2.json", "context_parallel_size": 2, "use_glm_dsa_kernels": True,
                        "attn_implementation": "flash_attention_2"}),
    Check("cp_rl_deepspeed", f"{V}:ComplexValidationMixin.check_context_parallel_deepspeed:2", ("deepspeed",),
          lambda d: d.get("deepspeed") and _cp(d) > 1 and not d.on("use_glm_dsa_kernels") and d.get("rl"),
          "rl: ... with context_parallel_size > 1 under DeepSpeed is not supported", "use FSDP2",
          {"deepspeed": "zero2.json", "context_parallel_size": 2, "rl": "grpo",
           "attn_implementation": "flash_attention_2"}),
    Check("cp_backend_deepspeed", f"{V}:ComplexValidationMixin.check_context_parallel_deepspeed:3",
          ("context_parallel",),
          lambda d: d.get("deepspeed") and _cp(d) > 1 and not d.on("use_glm_dsa_kernels") and not d.get("rl")
          and _cp_block(d) and (_cp_block(d).get("backend", "auto") not in ("auto", "ulysses")
                                or _cp_block(d).get("ring_size") not in (None, 1)
                                or _cp_block(d).get("ulysses_size") not in (None, _cp_block(d).get("size", _cp(d)))),
          "Under DeepSpeed, context parallelism maps to DeepSpeed Ulysses (ALST): only `context_parallel.backend: "
          "ulysses` (or auto) ... is supported; Ring/USP need FSDP2.", "use backend: ulysses, or FSDP2",
          {"deepspeed": "zero2.json", "context_parallel": {"size": 2, "backend": "ring"},
           "attn_implementation": "flash_attention_2"}),
    # --- DistributedValidationMixin
    Check("tp_8bit_optimizer", f"{V}:DistributedValidationMixin.check_tensor_parallel_optimizer:1", ("optimizer",),
          lambda d: d.int("tensor_parallel_size") > 1 and d.get("optimizer") in ("paged_adamw_8bit", "adamw_8bit",
                                                                                 "adamw_bnb_8bit"),
          "tensor_parallel_size is not supported with paged_adamw_8bit, adamw_8bit, and adamw_bnb_8bit optimizers",
          "use adamw_torch_8bit or an unquantized optimizer", {"tensor_parallel_size": 2,
                                                               "optimizer": "paged_adamw_8bit"}),
    Check("tp_ep", f"{V}:DistributedValidationMixin.check_tensor_parallel_expert_parallel:1",
          ("tensor_parallel_size", "expert_parallel_size"),
          lambda d: d.int("tensor_parallel_size") > 1 and d.int("expert_parallel_size") > 1,
          "tensor_parallel_size > 1 cannot be combined with expert_parallel_size > 1",
          "shard the experts with expert_parallel_size and the rest with dp_shard_size",
          {"tensor_parallel_size": 2, "expert_parallel_size": 2, "fsdp_version": 2,
           "fsdp_config": {"state_dict_type": "FULL_STATE_DICT"}}),
    # --- EBFTValidationMixin
    Check("ebft_section", f"{V}:EBFTValidationMixin.check_ebft_config_required:1", ("rl",),
          lambda d: d.get("rl") == "ebft" and not d.get("ebft"),
          "`ebft` config section is required when `rl: ebft` is set.", "add an `ebft:` section (mode: structured)",
          {"rl": "ebft"}),
    Check("ebft_compile_gc", f"{V}:EBFTValidationMixin.check_ebft_torch_compile:1", ("torch_compile",),
          lambda d: d.get("rl") == "ebft" and d.get("torch_compile") is True
          and d.sub("ebft").get("mode") == "strided" and d.get("gradient_checkpointing"),
          "EBFT strided mode: `torch_compile: true` with `gradient_checkpointing: true` causes CheckpointError",
          "remove torch_compile", {"rl": "ebft", "ebft": {"mode": "strided"}, "torch_compile": True,
                                   "gradient_checkpointing": True}),
    Check("ebft_offloading", f"{V}:EBFTValidationMixin.check_ebft_activation_offloading:1", ("activation_offloading",),
          lambda d: d.get("rl") == "ebft" and d.sub("ebft").get("mode") == "strided" and _offloading(d) is True
          and _attn(d) == "flex_attention",
          "EBFT strided mode: `activation_offloading: true` is incompatible with `attn_implementation: flex_attention`.",
          "remove activation_offloading",
          {"rl": "ebft", "ebft": {"mode": "strided"}, "activation_offloading": True, "gradient_checkpointing": True,
           "attn_implementation": "flex_attention"}),
    # --- GRPOVllmValidationMixin
    Check("colocate_cp", f"{V}:GRPOVllmValidationMixin.check_vllm_colocate_compat:1", ("trl",),
          lambda d: d.sub("trl").get("use_vllm") and d.sub("trl").get("vllm_mode") == "colocate" and _cp(d) > 1,
          "`vllm_mode: colocate` is not supported with `context_parallel_size > 1`.", "use vllm_mode: server",
          {"rl": "grpo", "trl": {"use_vllm": True, "vllm_mode": "colocate"}, "context_parallel_size": 2,
           "attn_implementation": "flash_attention_2"}),
    Check("colocate_lora_sync", f"{V}:GRPOVllmValidationMixin.check_vllm_colocate_compat:2", ("trl",),
          lambda d: d.sub("trl").get("use_vllm") and d.sub("trl").get("vllm_mode") == "colocate" and _cp(d) <= 1
          and d.sub("trl").get("vllm_lora_sync"),
          "`vllm_lora_sync: true` requires `vllm_mode: server`", "remove vllm_lora_sync in colocate mode",
          {"rl": "grpo", "trl": {"use_vllm": True, "vllm_mode": "colocate", "vllm_lora_sync": True}}),
    Check("colocate_async_adapter", f"{V}:GRPOVllmValidationMixin.check_vllm_colocate_compat:3", ("trl",),
          lambda d: d.sub("trl").get("use_vllm") and d.sub("trl").get("vllm_mode") == "colocate" and _cp(d) <= 1
          and not d.sub("trl").get("vllm_lora_sync")
          and (d.sub("trl").get("async_prefetch") or d.sub("trl").get("use_data_producer")) and d.adapter(),
          "`vllm_mode: colocate` with an adapter is not supported by the async GRPO trainer",
          "remove async_prefetch / use_data_producer or use vllm_mode: server",
          {"rl": "grpo", "adapter": "lora", "trl": {"use_vllm": True, "vllm_mode": "colocate",
                                                    "async_prefetch": True}}),
    # --- config.py AxolotlInputConfig
    Check("gemma4_attn", f"{C}:AxolotlInputConfig.normalize_attn_implementation:1", ("gemma4_hybrid_attn_impl",),
          lambda d: d.get("gemma4_hybrid_attn_impl") and d.get("attn_implementation")
          and d.get("attn_implementation") != "flash_attention_2",
          "gemma4_hybrid_attn_impl requires attn_implementation=flash_attention_2", "use flash_attention_2",
          {"gemma4_hybrid_attn_impl": True, "attn_implementation": "sdpa"}),
    Check("attn_and_legacy", f"{C}:AxolotlInputConfig.normalize_attn_implementation:2", _LEGACY_ATTN,
          lambda d: d.get("attn_implementation") and any(d.get(f) for f in _LEGACY_ATTN)
          and not (d.get("gemma4_hybrid_attn_impl") and d.get("attn_implementation") != "flash_attention_2"),
          "attn_implementation=... cannot be combined with legacy attention flags",
          "set only attn_implementation", {"attn_implementation": "sdpa", "flash_attention": True}),
    Check("large_head_attention", f"{C}:AxolotlInputConfig.validate_large_head_attention:1",
          ("large_head_attention",),
          lambda d: d.get("large_head_attention") is not None
          and str(d.get("large_head_attention")).lower() not in ("auto", "sdpa", "triton_flash"),
          "large_head_attention must be one of ['auto', 'sdpa', 'triton_flash']", "use auto, sdpa or triton_flash",
          {"large_head_attention": "flash"}),
    Check("attn_not_string", f"{C}:AxolotlInputConfig.validate_attn_implementation:1", ("attn_implementation",),
          lambda d: d.get("attn_implementation") is not None and not isinstance(d.get("attn_implementation"), str)
          and not any(d.get(f) for f in _LEGACY_ATTN),
          "attn_implementation must be a string", "write a backend name: sdpa, flash_attention_2, ...",
          {"attn_implementation": True}),
    Check("attn_alias", f"{C}:AxolotlInputConfig.validate_attn_implementation:2", ("attn_implementation",),
          lambda d: d.get("attn_implementation") in _ALIASES,
          "attn_implementation=... is not accepted. Use the canonical name instead.",
          "use flash_attention_2 / flex_attention / sdpa", {"attn_implementation": "flash"}),
    Check("attn_unknown", f"{C}:AxolotlInputConfig.validate_attn_implementation:3", ("attn_implementation",),
          lambda d: isinstance(d.get("attn_implementation"), str) and d.get("attn_implementation")
          and d.get("attn_implementation") not in _CANONICAL_ATTN and d.get("attn_implementation") not in _ALIASES
          and "/" not in d.get("attn_implementation"),
          "attn_implementation=... is not a recognized backend.",
          "use eager, sdpa, flash_attention_2/3/4, flash_attention_torch, flex_attention, varlen, xformers, sage, "
          "fp8, or a hub-kernel path", {"attn_implementation": "flash_attn"}),
    Check("compile_options", f"{C}:AxolotlInputConfig.validate_torch_compile_options:1", ("torch_compile_options",),
          lambda d: isinstance(d.get("torch_compile_options"), dict)
          and set(d.get("torch_compile_options")) - _INDUCTOR_ALLOWED,
          "torch_compile_options contains disallowed inductor flags", "keep only the allowed inductor flags",
          {"torch_compile": True, "torch_compile_options": {"max_autotune": True}}),
    Check("balance_labels", f"{C}:AxolotlInputConfig.check_label_balanced_packing:1", ("balance_labels",),
          _balance_bad, "balance_labels requires causal LM sample_packing or map-style fixed-count batching ...",
          "drop balance_labels or the conflicting sampling option",
          {"balance_labels": True, "curriculum_sampling": True}),
    Check("balance_window", f"{C}:AxolotlInputConfig.check_label_balanced_packing:2",
          ("label_balance_window_optim_steps",),
          lambda d: d.int("label_balance_window_optim_steps") > 1 and not d.on("balance_labels"),
          "label_balance_window_optim_steps requires balance_labels", "set balance_labels: true",
          {"label_balance_window_optim_steps": 4}),
    Check("balance_window_streaming", f"{C}:AxolotlInputConfig.check_label_balanced_packing:3",
          ("label_balance_window_optim_steps",),
          lambda d: d.int("label_balance_window_optim_steps") > 1 and d.on("balance_labels")
          and not _balance_bad(d) and (d.on("streaming") or d.get("pretraining_dataset")),
          "label_balance_window_optim_steps > 1 requires non-streaming training", "drop streaming or the window",
          {"label_balance_window_optim_steps": 4, "balance_labels": True, "sample_packing": True, "streaming": True,
           "max_steps": 100}),
    Check("balance_split_batches", f"{C}:AxolotlInputConfig.check_label_balanced_packing:4", ("accelerator_config",),
          lambda d: d.on("balance_labels") and not _balance_bad(d) and d.sub("accelerator_config").get("split_batches")
          and not (d.int("label_balance_window_optim_steps") > 1 and (d.on("streaming") or d.get("pretraining_dataset"))),
          "balance_labels requires split_batches=False for optimizer-step grouping",
          "set accelerator_config.split_batches: false",
          {"balance_labels": True, "accelerator_config": {"split_batches": True}}),
    Check("compile_options_wo_compile", f"{C}:AxolotlInputConfig.check_torch_compile_options_requires_compile:1",
          ("torch_compile_options",),
          lambda d: isinstance(d.get("torch_compile_options"), dict)
          and not set(d.get("torch_compile_options")) - _INDUCTOR_ALLOWED and not d.get("torch_compile"),
          "torch_compile_options is set but torch_compile is not enabled.", "set torch_compile: true",
          {"torch_compile_options": {"shape_padding": True}}),
    Check("fp32_norms", f"{C}:AxolotlInputConfig.check_fp32_norms:1", ("fp32_norms",),
          lambda d: d.on("fp32_norms") and d.get("fsdp_config") is None,
          "fp32_norms requires FSDP to be enabled (fsdp_config block must be set).", "add an fsdp_config",
          {"fp32_norms": True}),
    Check("ple_fsdp", f"{C}:AxolotlInputConfig.check_ple_cpu_offload:1", ("ple_cpu_offload",),
          lambda d: d.get("ple_cpu_offload") and d.get("fsdp_config") is not None,
          "ple_cpu_offload is not compatible with FSDP", "drop FSDP or ple_cpu_offload",
          {"ple_cpu_offload": True, **Q, **FSDP}),
    Check("ple_deepspeed", f"{C}:AxolotlInputConfig.check_ple_cpu_offload:2", ("ple_cpu_offload",),
          lambda d: d.get("ple_cpu_offload") and d.get("fsdp_config") is None and d.get("deepspeed"),
          "ple_cpu_offload is not compatible with DeepSpeed", "drop DeepSpeed or ple_cpu_offload",
          {"ple_cpu_offload": True, **Q, "deepspeed": "zero2.json"}),
    Check("ple_quant", f"{C}:AxolotlInputConfig.check_ple_cpu_offload:3", ("ple_cpu_offload",),
          lambda d: d.get("ple_cpu_offload") and d.get("fsdp_config") is None and not d.get("deepspeed")
          and not ((d.adapter() == "qlora" and d.get("load_in_4bit")) or (d.adapter() == "lora" and d.get("load_in_8bit"))),
          "ple_cpu_offload requires qlora with load_in_4bit or lora with load_in_8bit",
          "use qlora + load_in_4bit or lora + load_in_8bit", {"ple_cpu_offload": True}),
    Check("save_best", f"{C}:AxolotlInputConfig.check_save_strategy_best_requires_metric:1", ("save_strategy",),
          lambda d: d.get("save_strategy") == "best" and not d.get("metric_for_best_model"),
          "save_strategy: 'best' requires metric_for_best_model to be set.", "set metric_for_best_model: eval_loss",
          {"save_strategy": "best"}),
    Check("target_regex", f"{C}:AxolotlInputConfig.check_lora_target_modules_regex:1", ("lora_target_modules",),
          lambda d: _regex_invalid(d.get("lora_target_modules")),
          "lora_target_modules contains invalid regex pattern(s)", "fix the pattern (or use plain module names)",
          {"adapter": "lora", "lora_target_modules": ["q_proj[", "v_proj"]}),
    # --- config.py AxolotlConfigWCapabilities (axolotl train always validates with the capabilities)
    Check("moe_target_linear", f"{C}:AxolotlConfigWCapabilities.check_quantize_moe_experts:1",
          ("quantize_moe_experts",),
          lambda d: d.get("quantize_moe_experts") and d.get("lora_target_linear"),
          "lora_target_linear is not compatible with quantize_moe_experts.", "use lora_target_parameters",
          {"quantize_moe_experts": True, **Q, "lora_target_linear": True}),
    Check("moe_adapter", f"{C}:AxolotlConfigWCapabilities.check_quantize_moe_experts:2", ("quantize_moe_experts",),
          lambda d: d.get("quantize_moe_experts") and not d.get("lora_target_linear") and d.adapter() not in ("lora",
                                                                                                             "qlora"),
          "quantize_moe_experts requires adapter: lora or qlora", "add adapter: lora or qlora",
          {"quantize_moe_experts": True}),
    Check("moe_quant", f"{C}:AxolotlConfigWCapabilities.check_quantize_moe_experts:3", ("quantize_moe_experts",),
          lambda d: d.get("quantize_moe_experts") and not d.get("lora_target_linear") and d.adapter() in ("lora", "qlora")
          and not (d.get("load_in_4bit") or d.get("load_in_8bit")),
          "quantize_moe_experts requires load_in_4bit or load_in_8bit", "set load_in_4bit or load_in_8bit",
          {"quantize_moe_experts": True, "adapter": "lora"}),
    Check("lora_fp32_gradients", f"{C}:AxolotlConfigWCapabilities.check_lora_fp32_gradients:1",
          ("lora_fp32_gradients",),
          lambda d: d.get("lora_fp32_gradients") and d.adapter() not in ("lora", "qlora", "multilora"),
          "lora_fp32_gradients requires a LoRA adapter", "add adapter: lora, or remove it",
          {"lora_fp32_gradients": True}),
    Check("beta_mismatch", f"{C}:AxolotlConfigWCapabilities.check_beta_and_trl_beta_match:1", ("beta", "trl"),
          lambda d: d.get("beta") and d.sub("trl").get("beta") and d.get("beta") != d.sub("trl").get("beta"),
          "beta and trl.beta must match or one must be removed", "keep one of them",
          {"beta": 0.1, "trl": {"beta": 0.2}}),
    Check("qat_peft", f"{C}:AxolotlConfigWCapabilities.check_qat_config:1", ("qat",),
          lambda d: d.get("qat") and d.get("peft"), "QAT and PEFT cannot be used together.", "drop one of them",
          {"qat": {"weight_dtype": "int8"}, "peft": {"loftq_config": {"loftq_bits": 4}}}),
    Check("qat_8bit", f"{C}:AxolotlConfigWCapabilities.check_qat_config:2", ("qat",),
          lambda d: d.get("qat") and not d.get("peft") and d.get("load_in_8bit"),
          "QAT and load_in_8bit cannot be used together.", "remove load_in_8bit",
          {"qat": {"weight_dtype": "int8"}, "adapter": "lora", "load_in_8bit": True}),
    Check("qat_4bit", f"{C}:AxolotlConfigWCapabilities.check_qat_config:3", ("qat",),
          lambda d: d.get("qat") and not d.get("peft") and not d.get("load_in_8bit") and d.get("load_in_4bit"),
          "QAT and load_in_4bit cannot be used together.", "remove load_in_4bit",
          {"qat": {"weight_dtype": "int8"}, **Q}),
    Check("qat_ternary", f"{C}:AxolotlConfigWCapabilities.check_qat_config:4", ("qat",),
          lambda d: isinstance(d.get("qat"), dict) and d.get("qat") and not d.get("peft")
          and not d.get("load_in_8bit") and not d.get("load_in_4bit")
          and d.sub("qat").get("weight_dtype") == "ternary" and d.sub("qat").get("activation_dtype") not in (None, "int8"),
          "Ternary QAT only supports activation_dtype: int8.", "set qat.activation_dtype: int8",
          {"qat": {"weight_dtype": "ternary", "activation_dtype": "int4"}}),
    Check("dedup_streaming", f"{C}:AxolotlConfigWCapabilities.check_deduplication_with_streaming:1",
          ("dataset_exact_deduplication",),
          lambda d: d.get("dataset_exact_deduplication") and (d.get("streaming") or d.get("pretraining_dataset")),
          "dataset_exact_deduplication is not available for streaming datasets.",
          "drop dataset_exact_deduplication or streaming",
          {"dataset_exact_deduplication": True, "streaming": True, "max_steps": 100}),
    Check("dedup_skip_prepare", f"{C}:AxolotlConfigWCapabilities.check_deduplication_with_skip_prepare:1",
          ("dataset_exact_deduplication",),
          lambda d: d.get("dataset_exact_deduplication") and d.get("skip_prepare_dataset")
          and not (d.get("streaming") or d.get("pretraining_dataset")),
          "dataset_exact_deduplication=True has no effect when skip_prepare_dataset=True.",
          "set skip_prepare_dataset: false or drop dataset_exact_deduplication",
          {"dataset_exact_deduplication": True, "skip_prepare_dataset": True}),
    # --- fsdp.py
    Check("size_based_wrap", f"{F}:FSDPConfig.validate_size_based_wrap:1", ("fsdp_config",),
          lambda d: d.fsdp().get("auto_wrap_policy") == "SIZE_BASED_WRAP" and d.fsdp().get("min_num_params") is None,
          "fsdp_config.min_num_params is required when auto_wrap_policy is SIZE_BASED_WRAP",
          "set fsdp_config.min_num_params", {"fsdp_version": 2, "fsdp_config": {"auto_wrap_policy": "SIZE_BASED_WRAP"}}),
    # --- the context-parallel plugin (bundled: always registered in 0.21.0)
    Check("cp_divide", f"{CP}:ContextParallelConfig._validate:1", ("context_parallel",),
          lambda d: any(isinstance(_cp_block(d).get(n), int) and _cp_block(d).get(n) >= 1
                        and d.int("size", 1, _cp_block(d)) % _cp_block(d)[n] for n in ("ulysses_size", "ring_size")),
          "ulysses_size / ring_size (...) must divide context_parallel.size (...)", "use divisors of size",
          {"context_parallel": {"size": 4, "ulysses_size": 3}, "attn_implementation": "flash_attention_2"}),
    Check("cp_ulysses", f"{CP}:ContextParallelConfig._validate:2", ("context_parallel",),
          lambda d: _cp_block(d).get("backend") == "ulysses" and (
              _cp_block(d).get("ring_size") not in (None, 1)
              or _cp_block(d).get("ulysses_size") not in (None, _cp_block(d).get("size", 1))),
          "backend=ulysses requires ring_size=1 and ulysses_size=size", "set ring_size: 1 (or drop it)",
          {"context_parallel": {"size": 4, "backend": "ulysses", "ring_size": 2},
           "attn_implementation": "flash_attention_2"}),
    Check("cp_ring", f"{CP}:ContextParallelConfig._validate:3", ("context_parallel",),
          lambda d: _cp_block(d).get("backend") == "ring" and (
              _cp_block(d).get("ulysses_size") not in (None, 1)
              or _cp_block(d).get("ring_size") not in (None, _cp_block(d).get("size", 1))),
          "backend=ring requires ulysses_size=1 and ring_size=size", "set ulysses_size: 1 (or drop it)",
          {"context_parallel": {"size": 4, "backend": "ring", "ulysses_size": 2},
           "attn_implementation": "flash_attention_2"}),
    Check("cp_product", f"{CP}:ContextParallelConfig._validate:4", ("context_parallel",),
          lambda d: _cp_block(d).get("backend", "auto") in ("auto", "usp") and isinstance(_cp_block(d).get("ulysses_size"), int)
          and isinstance(_cp_block(d).get("ring_size"), int) and _cp_block(d)["ulysses_size"] >= 1
          and _cp_block(d)["ring_size"] >= 1 and d.int("size", 1, _cp_block(d)) % _cp_block(d)["ulysses_size"] == 0
          and d.int("size", 1, _cp_block(d)) % _cp_block(d)["ring_size"] == 0
          and _cp_block(d)["ulysses_size"] * _cp_block(d)["ring_size"] != d.int("size", 1, _cp_block(d)),
          "ulysses_size(...) * ring_size(...) != context_parallel.size(...)", "make ulysses_size * ring_size = size",
          {"context_parallel": {"size": 4, "ulysses_size": 2, "ring_size": 4},
           "attn_implementation": "flash_attention_2"}),
    Check("cp_size_conflict", f"{CP}:ContextParallelArgs.sync_context_parallel_size:1",
          ("context_parallel", "context_parallel_size"),
          lambda d: _cp_block(d).get("size") is not None and (
              d.get("context_parallel_size") if d.get("context_parallel_size") is not None
              else d.get("sequence_parallel_degree")) not in (None, _cp_block(d).get("size")),
          "context_parallel.size (...) conflicts with context_parallel_size (...); set only one", "set only one",
          {"context_parallel": {"size": 2}, "context_parallel_size": 4, "attn_implementation": "flash_attention_2"}),
    # --- the expert-parallel plugin (bundled: always registered in 0.21.0)
    Check("ep_size", f"{EP}:ExpertParallelArgs._validate:1", ("expert_parallel_size",),
          lambda d: isinstance(d.get("expert_parallel_size"), int) and d.get("expert_parallel_size") < 1,
          "expert_parallel_size must be >= 1", "use 1 to disable expert parallelism", {"expert_parallel_size": 0}),
    Check("ep_capacity", f"{EP}:ExpertParallelArgs._validate:2", ("expert_parallel_token_capacity",),
          lambda d: isinstance(d.get("expert_parallel_token_capacity"), int)
          and d.get("expert_parallel_token_capacity") < 1 and d.int("expert_parallel_size") >= 1,
          "expert_parallel_token_capacity must be >= 1 when set", "remove it to disable the cap",
          {"expert_parallel_token_capacity": 0}),
    Check("ep_optimizer", f"{EP}:validate_expert_parallel_topology:4", ("optimizer",),
          lambda d: d.int("expert_parallel_size") > 1 and d.get("optimizer") in ("adamw_torch_4bit", "ao_adamw_4bit",
                                                                                 "ao_adamw_fp8"),
          "expert_parallel_size (...) > 1 does not support optimizer: ...", "use adamw_torch_8bit or an unquantized "
          "optimizer",
          {"expert_parallel_size": 2, "optimizer": "adamw_torch_4bit", "fsdp_version": 2,
           "fsdp_config": {"state_dict_type": "FULL_STATE_DICT"}}),
    # --- adapters (utils/schemas/peft.py LoraConfig): quantized loading needs an adapter, QLoRA needs 4-bit
    Check("quantized_without_adapter", f"{P}:LoraConfig.validate_adapter:1", ("load_in_4bit", "load_in_8bit"),
          lambda d: not d.get("adapter") and not d.get("inference") and bool(d.get("load_in_8bit")
                                                                              or d.get("load_in_4bit")),
          "load_in_8bit and load_in_4bit are not supported without setting an adapter for training...",
          "set adapter: qlora (4-bit) or lora (8-bit), or turn off load_in_8bit and load_in_4bit for a full "
          "finetune", {"load_in_4bit": True}),
    Check("qlora_merge_8bit", f"{P}:LoraConfig.validate_qlora:1", ("merge_lora", "load_in_8bit"),
          lambda d: d.get("adapter") == "qlora" and d.on("merge_lora") and d.on("load_in_8bit"),
          "Can't merge qlora if loaded in 8bit", "merge without load_in_8bit (the base in full precision)",
          {"adapter": "qlora", "merge_lora": True, "load_in_8bit": True}),
    Check("qlora_merge_gptq", f"{P}:LoraConfig.validate_qlora:2", ("merge_lora", "gptq"),
          lambda d: d.get("adapter") == "qlora" and d.on("merge_lora") and not d.on("load_in_8bit") and d.on("gptq"),
          "Can't merge qlora if gptq", "merge into an unquantized base model",
          {"adapter": "qlora", "merge_lora": True, "gptq": True}),
    Check("qlora_merge_4bit", f"{P}:LoraConfig.validate_qlora:3", ("merge_lora", "load_in_4bit"),
          lambda d: d.get("adapter") == "qlora" and d.on("merge_lora") and not d.on("load_in_8bit")
          and not d.on("gptq") and d.on("load_in_4bit"),
          "Can't merge qlora if loaded in 4bit", "merge with load_in_4bit: false (the base in full precision)",
          {"adapter": "qlora", "merge_lora": True, "load_in_4bit": True}),
    Check("qlora_8bit", f"{P}:LoraConfig.validate_qlora:4", ("load_in_8bit",),
          lambda d: d.get("adapter") == "qlora" and not d.on("merge_lora") and d.on("load_in_8bit"),
          "Can't load qlora in 8bit", "QLoRA loads the base in 4 bits: load_in_4bit: true (or adapter: lora for 8 bits)",
          {"adapter": "qlora", "load_in_8bit": True, "load_in_4bit": True}),
    Check("qlora_gptq", f"{P}:LoraConfig.validate_qlora:5", ("gptq",),
          lambda d: d.get("adapter") == "qlora" and not d.on("merge_lora") and not d.on("load_in_8bit")
          and d.on("gptq"),
          "Can't load qlora if gptq", "use adapter: lora on a GPTQ model", {"adapter": "qlora", "gptq": True,
                                                                            "load_in_4bit": True}),
    Check("qlora_no_4bit", f"{P}:LoraConfig.validate_qlora:6", ("adapter", "load_in_4bit"),
          lambda d: d.get("adapter") == "qlora" and not d.on("merge_lora") and not d.on("load_in_8bit")
          and not d.on("gptq") and not d.on("load_in_4bit"),
          "Require cfg.load_in_4bit to be True for qlora", "load_in_4bit: true", {"adapter": "qlora"}),
    Check("target_parameters_dropout", f"{P}:LoraConfig.validate_lora_target_parameters_dropout:1",
          ("lora_dropout", "lora_target_parameters"),
          lambda d: bool(d.get("lora_target_parameters")) and isinstance(d.get("lora_dropout"), (int, float))
          and not isinstance(d.get("lora_dropout"), bool) and d.get("lora_dropout") != 0,
          "lora_dropout must be 0 when lora_target_parameters is set...", "lora_dropout: 0.0",
          {"adapter": "lora", "lora_r": 8, "lora_alpha": 16, "lora_target_parameters": ["mlp.experts.gate_up_proj"],
           "lora_dropout": 0.05}),
    Check("target_parameters_init", f"{P}:LoraConfig.validate_lora_target_parameters_init:1",
          ("peft_init_lora_weights", "lora_target_parameters"),
          lambda d: bool(d.get("lora_target_parameters")) and (
              (d.get("peft_init_lora_weights") is not None and not isinstance(d.get("peft_init_lora_weights"), bool)
               and d.get("peft_init_lora_weights") != "gaussian")
              or bool(d.sub("peft").get("loftq_config"))),
          "peft_init_lora_weights must be the default or gaussian when lora_target_parameters is set...",
          "leave peft_init_lora_weights unset (or gaussian), without loftq",
          {"adapter": "lora", "lora_r": 8, "lora_alpha": 16, "lora_target_parameters": ["mlp.experts.gate_up_proj"],
           "peft_init_lora_weights": "pissa"}),
    Check("mixlora_top_k", f"{P}:MixLoraConfig.validate_mixlora_top_k:1", ("mixlora_top_k", "mixlora_num_experts"),
          lambda d: isinstance(d.get("mixlora_top_k", 2), int) and isinstance(d.get("mixlora_num_experts", 8), int)
          and (2 if d.get("mixlora_top_k") is None else d.get("mixlora_top_k"))
          > (8 if d.get("mixlora_num_experts") is None else d.get("mixlora_num_experts")),
          "mixlora_top_k (...) must be <= mixlora_num_experts (...)", "route to at most as many experts as there are",
          {"mixlora_top_k": 4, "mixlora_num_experts": 2}),
    # --- single fields whose validator refuses a value
    Check("processor_kwargs_reserved", f"{M}:ModelInputConfig.reject_reserved_processor_kwargs:1",
          ("processor_kwargs",),
          lambda d: bool({"revision", "trust_remote_code"} & set(d.sub("processor_kwargs"))),
          "Do not set reserved keys [...] inside `processor_kwargs`; use the top-level `revision_of_model` / "
          "`trust_remote_code` config keys instead.", "move them to the top-level keys",
          {"processor_kwargs": {"trust_remote_code": True}}),
    Check("save_modules_blank", "axolotl/utils/schemas/training.py:SelectiveCheckpointingConfig.normalize_save_modules:1",
          ("selective_checkpointing",),
          lambda d: isinstance(d.sub("selective_checkpointing").get("save_modules"), list) and any(
              isinstance(entry, str) and not entry.strip() for entry in d.sub("selective_checkpointing")["save_modules"]),
          "selective_checkpointing.save_modules entries must be non-empty strings", "remove the blank entry",
          {"gradient_checkpointing": True, "selective_checkpointing": {"save_modules": ["mlp", " "]}}),
    Check("save_safetensors_false", f"{M}:ModelOutputConfig.validate_save_safetensors:1", ("save_safetensors",),
          lambda d: d.get("save_safetensors") is not None and not d.on("save_safetensors"),
          "save_safetensors=False is not supported in Transformers V5...", "remove save_safetensors (always true)",
          {"save_safetensors": False}),
    Check("image_resize_algorithm", f"{MM}:MultiModalConfig.convert_image_resize_algorithm:1",
          ("image_resize_algorithm",),
          lambda d: isinstance(d.get("image_resize_algorithm"), str)
          and d.get("image_resize_algorithm").lower() not in ("bilinear", "bicubic", "lanczos"),
          "Invalid image resize algorithm: ...", "bilinear, bicubic or lanczos",
          {"image_resize_algorithm": "nearest"}),
    Check("ao_dtype", f"{QUANT}:validate_ao_dtype:1", ("qat", "quantization"),
          lambda d: any(isinstance(block, dict) and any(
              block.get(k) is not None and block.get(k) not in _AO_DTYPES for k in ("weight_dtype", "activation_dtype"))
              for block in (d.sub("qat"), d.sub("quantization"))),
          "Invalid dtype: '...'. Must be one of: ['int4', 'int8', 'float8_e4m3fn', 'nvfp4', 'mxfp4', 'ternary', 'fp8', "
          "'float8']", "one of int4, int8, float8_e4m3fn (fp8, float8), nvfp4, mxfp4, ternary",
          {"qat": {"weight_dtype": "int2"}}),
    # --- dataset entries (datasets.py; an SFT config: under `rl` the entries are preference datasets, which
    # take these keys without the check)
    Check("chat_template_jinja", f"{DS}:SFTDataset.check_chat_template_config:1", ("datasets",),
          lambda d: not d.get("rl") and any(x.get("chat_template") == "jinja" and not x.get("chat_template_jinja")
                                            for x in _sft_entries(d)),
          "chat_template_jinja is required when chat_template is set to jinja",
          "add the template as `chat_template_jinja` to the dataset entry, or name a built-in chat_template",
          {"datasets": [{"path": "org/data", "type": "chat_template", "chat_template": "jinja"}]}),
    Check("message_field_role", f"{SU}:handle_legacy_message_fields_logic:1", ("datasets",),
          lambda d: not d.get("rl") and any(_legacy_conflict(x, "role") for x in _sft_entries(d)),
          "Conflicting message role fields: message_field_role=... conflicts with message_property_mappings.role=...",
          "keep one: message_property_mappings.role (message_field_role is its deprecated name)",
          {"datasets": [{"path": "org/data", "type": "chat_template", "message_field_role": "from",
                         "message_property_mappings": {"role": "speaker"}}]}),
    Check("message_field_content", f"{SU}:handle_legacy_message_fields_logic:2", ("datasets",),
          lambda d: not d.get("rl") and any(_legacy_conflict(x, "content") for x in _sft_entries(d)),
          "Conflicting message content fields: message_field_content=... conflicts with "
          "message_property_mappings.content=...",
          "keep one: message_property_mappings.content (message_field_content is its deprecated name)",
          {"datasets": [{"path": "org/data", "type": "chat_template", "message_field_content": "value",
                         "message_property_mappings": {"content": "text"}}]}),
    Check("synthetic_turns", f"{DS}:SyntheticDataset.validate_turns:1", ("datasets",),
          lambda d: not d.get("rl") and any((t := _synthetic_turns(x)) is not None and t[0] > 1 and t[1] <= t[0]
                                            for x in _entries(d)),
          "max_turns must exceed min_turns for multi-turn data", "set max_turns above min_turns",
          {"datasets": [{"path": "synthetic", "type": "_synthetic", "min_turns": 3, "max_turns": 2}]}),
    Check("synthetic_length", f"{DS}:SyntheticDataset.validate_turns:2", ("datasets",),
          lambda d: not d.get("rl") and any(_synthetic_too_short(x) for x in _entries(d)),
          "sequence_length must be at least ... * min_turns",
          "raise sequence_length to min_turns x the tokens of one turn (min_turn_length, 32 by default)",
          {"datasets": [{"path": "synthetic", "type": "_synthetic", "min_turns": 4, "max_turns": 6,
                         "sequence_length": 4}]}),
    # --- adapters (peft.py)
    Check("adapter_unknown", f"{P}:LoraConfig.validate_adapter:2", ("adapter",),
          lambda d: isinstance(d.get("adapter"), str) and d.get("adapter") not in ("", "lora", "qlora", "llama-adapter")
          and _plugins_known(d) and d.adapter() not in _plugin_adapters(d),
          "Adapter '...' is not built in and was not registered by a plugin. Add the plugin that provides this "
          "adapter to `plugins:`.",
          "add the plugin that provides it (mixlora: axolotl.integrations.mixlora.MixLoraPlugin, mora: "
          "axolotl.integrations.mora.MoraPlugin), or use lora / qlora (DoRA is `adapter: lora` with "
          "`peft_use_dora: true`)",
          {"adapter": "dora", "lora_r": 8, "lora_alpha": 16}),
    Check("mixlora_no_r", f"{P}:LoraConfig.validate_mixlora:1", ("adapter", "lora_r"),
          lambda d: d.adapter() == "mixlora" and "mixlora" in _plugin_adapters(d) and not d.get("lora_r"),
          "lora_r is required when using the mixlora adapter", "set lora_r (the rank of each expert's LoRA)",
          {"plugins": ["axolotl.integrations.mixlora.MixLoraPlugin"], "adapter": "mixlora", "lora_alpha": 16}),
    Check("mixlora_no_alpha", f"{P}:LoraConfig.validate_mixlora:2", ("adapter", "lora_alpha"),
          lambda d: d.adapter() == "mixlora" and "mixlora" in _plugin_adapters(d) and d.get("lora_r")
          and not d.get("lora_alpha"),
          "lora_alpha is required when using the mixlora adapter", "set lora_alpha",
          {"plugins": ["axolotl.integrations.mixlora.MixLoraPlugin"], "adapter": "mixlora", "lora_r": 8}),
)


def _entries(d: View) -> list[dict]:
    datasets = d.get("datasets")
    return [x for x in datasets if isinstance(x, dict)] if isinstance(datasets, list) else []


def _sft_entries(d: View) -> list[dict]:
    """The entries pydantic makes SFTDatasets: not the synthetic generator's."""
    return [x for x in _entries(d) if x.get("type") != "_synthetic"]


def _legacy_conflict(entry: dict, name: str) -> bool:
    """handle_legacy_message_fields_logic: message_field_<name> set beside a different mapping of <name>."""
    mappings = entry.get("message_property_mappings")
    return (f"message_field_{name}" in entry and isinstance(mappings, dict) and name in mappings
            and mappings[name] != entry[f"message_field_{name}"])


def _synthetic_turns(entry: dict) -> tuple[int, int] | None:
    """(min_turns, max_turns) of a synthetic entry as whole numbers (defaults 1), or None: not judged."""
    if entry.get("type") != "_synthetic" or entry.get("path", "synthetic") != "synthetic":
        return None
    turns = (entry.get("min_turns", 1), entry.get("max_turns", 1))
    return turns if all(isinstance(t, int) and not isinstance(t, bool) and t >= 1 for t in turns) else None


def _synthetic_too_short(entry: dict) -> bool:
    """SyntheticDataset.validate_turns's length check (once its turn check passed)."""
    turns = _synthetic_turns(entry)
    length, shortest = entry.get("sequence_length"), entry.get("min_turn_length", 32)
    fraction = entry.get("input_fraction", 0.25 if turns and turns[1] > 1 else 0)
    if turns is None or (turns[0] > 1 and turns[1] <= turns[0]) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in (length, shortest, fraction)):
        return False
    per_turn = max(shortest, 2 if fraction > 0 else 1)
    return (turns[1] > 1 or fraction > 0) and length < per_turn * turns[0]


# the adapters Axolotl 0.21.0's own plugins register (get_adapter_capabilities), by plugin class
_ADAPTER_PLUGINS = {"MixLoraPlugin": "mixlora", "MoraPlugin": "mora"}


def _plugins(d: View) -> list[str]:
    plugins = d.get("plugins")
    return [p for p in plugins if isinstance(p, str)] if isinstance(plugins, list) else []


def _plugins_known(d: View) -> bool:
    """Every listed plugin is Axolotl's own: a plugin of another package may register any adapter."""
    return all(p.startswith("axolotl.integrations.") for p in _plugins(d))


def _plugin_adapters(d: View) -> set[str]:
    return {_ADAPTER_PLUGINS[p.rsplit(".", 1)[-1]] for p in _plugins(d)
            if p.startswith("axolotl.integrations.") and p.rsplit(".", 1)[-1] in _ADAPTER_PLUGINS}
