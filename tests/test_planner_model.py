"""The model shape for the planner: parameter counts from a Hugging Face config.json against the
published counts of real models (literals), against transformers itself (a meta-device model of
each architecture, the oracle), and from a Megatron script's flags."""

from __future__ import annotations

import json

import pytest

import shardshift
from shardshift.planner.model import from_config, load_config, model_from
from shardshift.planner.units import parse_count

import oracles
from conftest import FIXTURES

LLAMA_3_8B = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
              "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
              "tie_word_embeddings": False}
LLAMA_2_7B = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
              "num_key_value_heads": 32, "intermediate_size": 11008, "vocab_size": 32000}
MIXTRAL_8X7B = {"model_type": "mixtral", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
                "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 32000,
                "num_local_experts": 8, "num_experts_per_tok": 2}
GPT2 = {"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12, "vocab_size": 50257, "n_positions": 1024}
PYTHIA_160M = {"model_type": "gpt_neox", "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
               "intermediate_size": 3072, "vocab_size": 50304}
DEEPSEEK_V3 = {"model_type": "deepseek_v3", "hidden_size": 7168, "num_hidden_layers": 61, "num_attention_heads": 128,
               "num_key_value_heads": 128, "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128,
               "qk_rope_head_dim": 64, "v_head_dim": 128, "intermediate_size": 18432, "moe_intermediate_size": 2048,
               "n_routed_experts": 256, "n_shared_experts": 1, "first_k_dense_replace": 3, "moe_layer_freq": 1,
               "vocab_size": 129280, "tie_word_embeddings": False, "num_experts_per_tok": 8}


@pytest.mark.parametrize(("config", "published"), [
    (LLAMA_3_8B, 8.03e9),  # Meta: "8B", 8,030,261,248 parameters
    (LLAMA_2_7B, 6.74e9),  # the Llama 2 paper's 6.7B; 6,738,415,616 in the checkpoint
    (MIXTRAL_8X7B, 46.7e9),  # Mistral: 46.7B total, 12.9B active
    (GPT2, 124e6),  # GPT-2 small: 124M (124,439,808)
    (PYTHIA_160M, 162e6),  # Pythia-160M: 162,322,944 total
    (DEEPSEEK_V3, 671e9),  # DeepSeek-V3: 671B without its 14B multi-token prediction module
], ids=["llama-3-8b", "llama-2-7b", "mixtral-8x7b", "gpt2", "pythia-160m", "deepseek-v3"])
def test_parameter_counts_of_known_models(config, published):
    model = from_config(config)
    assert model.parameters == pytest.approx(published, rel=0.005)  # the published counts are rounded


def test_exact_counts():
    assert from_config(LLAMA_3_8B).parameters == 8_030_261_248
    assert from_config(LLAMA_2_7B).parameters == 6_738_415_616
    assert from_config(GPT2).parameters == 124_439_808


def test_shape_fields():
    model = from_config(MIXTRAL_8X7B, "mixtral/config.json")
    assert (model.layers, model.hidden, model.heads, model.kv_heads, model.ffn_hidden, model.vocab) == \
        (32, 4096, 32, 8, 14336, 32000)
    assert (model.experts, model.experts_per_token, model.tied_embeddings) == (8, 2, False)
    assert model.source == "mixtral/config.json"
    assert any("8 experts" in a for a in model.assumptions)
    gpt2 = from_config(GPT2)
    assert gpt2.tied_embeddings is True and gpt2.kv_heads == 12 and gpt2.ffn_hidden == 3072
    # the largest single module is the embedding for a dense model (DeepSpeed's ZeRO-3 estimator)
    assert from_config(LLAMA_3_8B).largest_layer_parameters == 128256 * 4096


def test_missing_shape_is_an_error():
    with pytest.raises(ValueError, match="vocab_size"):
        from_config({"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2})


def test_load_config(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA_3_8B))
    assert load_config(str(path)).parameters == 8_030_261_248
    path.write_text("{not json")
    with pytest.raises(ValueError, match="cannot read"):
        load_config(str(path))


@pytest.mark.parametrize(("text", "count"), [("8e9", 8_000_000_000), ("8B", 8_000_000_000),
                                             ("70b", 70_000_000_000), ("1.3T", 1_300_000_000_000),
                                             ("125M", 125_000_000)])
def test_parameter_count_units(text, count):
    assert parse_count(text) == count


def test_megatron_script_shape_and_count():
    """A Megatron script (Llama-3-8B flags): Megatron's own count, no biases, vocabulary padded
    to 128 × TP 2 (128256 is already a multiple of 256)."""
    setup = shardshift.load(str(FIXTURES / "megatron" / "llama_8b_tp2_pp2.sh"))
    model = model_from(setup.plan)
    assert model is not None
    assert model.parameters == 8_030_261_248
    assert (model.layers, model.hidden, model.heads, model.kv_heads, model.ffn_hidden) == (32, 4096, 32, 8, 14336)
    assert any("Megatron" in a for a in model.assumptions)


def test_precedence():
    setup = shardshift.load(str(FIXTURES / "megatron" / "llama_8b_tp2_pp2.sh"))
    given = model_from(setup.plan, parameters=7_000_000_000)
    assert given.parameters == 7_000_000_000 and given.layers == 32  # the count given, the shape of the setup
    bare = model_from(None, parameters=70_000_000_000)
    assert bare.parameters == 70_000_000_000 and bare.layers is None and bare.largest_layer_parameters is None
    assert "--model-params" in bare.assumptions[0]
    from shardshift.plan import Plan

    assert model_from(Plan()) is None


# --- the oracle: transformers builds each architecture on the meta device ---------------------

SMALL = {
    "llama": dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=8, num_key_value_heads=2,
                  intermediate_size=688, vocab_size=1000),
    "mistral": dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=8, num_key_value_heads=2,
                    intermediate_size=688, vocab_size=1000),
    "qwen2": dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=8, num_key_value_heads=2,
                  intermediate_size=688, vocab_size=1000, tie_word_embeddings=True),
    "qwen3": dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=8, num_key_value_heads=2,
                  intermediate_size=688, vocab_size=1000, head_dim=64),
    "mixtral": dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=8, num_key_value_heads=2,
                    intermediate_size=688, vocab_size=1000, num_local_experts=4, num_experts_per_tok=2),
    "qwen2_moe": dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=8, num_key_value_heads=2,
                      intermediate_size=688, moe_intermediate_size=64, shared_expert_intermediate_size=128,
                      num_experts=4, num_experts_per_tok=2, vocab_size=1000),
    "gpt2": dict(n_embd=256, n_layer=2, n_head=8, vocab_size=1000, n_positions=128, bos_token_id=0, eos_token_id=0),
    "gpt_neox": dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=8, intermediate_size=1024,
                     vocab_size=1000),
    "deepseek_v3": dict(hidden_size=256, num_hidden_layers=3, num_attention_heads=8, q_lora_rank=64,
                        kv_lora_rank=32, qk_nope_head_dim=16, qk_rope_head_dim=8, v_head_dim=16,
                        intermediate_size=512, moe_intermediate_size=64, n_routed_experts=8, n_shared_experts=1,
                        first_k_dense_replace=1, vocab_size=1000, num_experts_per_tok=2, n_group=1, topk_group=1),
}


@pytest.fixture(scope="module")
def transformers_counts():
    """Every architecture built once by transformers on the meta device (no memory, no weights):
    its parameter count and its largest module's own parameters (what DeepSpeed's ZeRO-3
    estimator calls the largest layer), with the config transformers writes out."""
    oracles.require_installed("torch", "transformers")
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    counts = {}
    for kind, values in SMALL.items():
        config = AutoConfig.for_model(kind, **values)
        with torch.device("meta"):
            model = AutoModelForCausalLM.from_config(config)
        largest = max(sum(p.numel() for p in m.parameters(recurse=False)) for m in model.modules())
        counts[kind] = (sum(p.numel() for p in model.parameters()), largest, config.to_dict())
    return counts


@pytest.mark.oracle
@pytest.mark.parametrize("kind", sorted(SMALL))
def test_counts_equal_transformers(transformers_counts, kind):
    total, largest, written = transformers_counts[kind]
    ours = from_config({**SMALL[kind], "model_type": kind})
    assert ours.parameters == total
    assert ours.largest_layer_parameters == largest
    assert from_config(written).parameters == total  # the full config.json transformers writes


def test_expert_parameters():
    """The routed experts' share of the count (what expert parallelism splits)."""
    mixtral = from_config(MIXTRAL_8X7B)
    assert mixtral.expert_parameters == 32 * 8 * 3 * 4096 * 14336
    assert from_config(LLAMA_3_8B).expert_parameters is None
    deepseek = from_config(DEEPSEEK_V3)
    assert deepseek.expert_parameters == 58 * 256 * 3 * 7168 * 2048
