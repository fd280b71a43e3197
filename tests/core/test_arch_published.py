"""Every public model family, written out field by field AND parsed from its real config.json, counts
within 0.5 % of its published parameter count (MoE active parameters within 1 %, or within the rounding
of a figure published to two digits). Fixtures: tests/data/hf/ (sources in its README.md).

Published counts (total / active), where they come from:
- Llama 2 7B / 13B / 70B: 6.74B / 13.0B / 69.0B, Hugging Face model pages (meta-llama/Llama-2-*-hf);
  Touvron et al. 2023 (arXiv 2307.09288) name them 7B/13B/70B.
- Llama 3 8B / 70B, Llama 3.1 8B / 70B: 8.03B / 70.6B, Hugging Face model pages (meta-llama).
- Llama 3.1 405B: 405B, Llama Team 2024 "The Llama 3 Herd of Models" (arXiv 2407.21783), Table 3.
- Mistral 7B v0.1: 7.24B, Hugging Face model page (mistralai/Mistral-7B-v0.1).
- Mixtral 8x7B: 46.7B total, 12.9B per token, Mistral AI "Mixtral of experts" (2023-12-11).
- Mixtral 8x22B: 141B total, 39B active, Mistral AI "Cheaper, Better, Faster, Stronger" (2024-04-17).
- Qwen2.5 7B / 72B: 7.61B / 72.7B, Qwen2.5 model cards (Qwen/Qwen2.5-7B, Qwen/Qwen2.5-72B).
- Qwen3 8B / 32B: 8.2B / 32.8B; Qwen3-30B-A3B: 30.5B / 3.3B activated; Qwen3-235B-A22B: 235B / 22B
  activated: Qwen3 model cards (Qwen/Qwen3-*), 2025-04.
- Qwen1.5-MoE-A2.7B (Qwen2-MoE code): 14.3B / 2.7B activated, model card (Qwen/Qwen1.5-MoE-A2.7B).
- DeepSeek-V3: 671B total, 37B activated, DeepSeek-AI 2024 (arXiv 2412.19437) abstract; the 685B of
  the checkpoint adds the 14B multi-token-prediction module (README), not counted here.
- DeepSeek-V2: 236B / 21B activated, DeepSeek-AI 2024 (arXiv 2405.04434) abstract.
- gpt-oss 120b / 20b: 116.83B / 5.13B active and 20.91B / 3.61B, OpenAI gpt-oss model card
  (arXiv 2508.10925) Table 1, 2025-08.
- GPT-2: 124M, 355M, 774M, 1558M: the model names of openai/gpt-2 (README, download_model.py), = the
  counts (the paper's 117M/345M/762M/1542M were a miscount).
- BERT base / large: 110M (google-bert/bert-base-uncased model card; Devlin et al. 2018) and 336M
  (google-bert/bert-large-uncased model card; the paper's "340M" is rounded).

"Active" conventions differ by vendor, so each case says which it uses: Mistral and Qwen count every
tensor a token touches, both embedding tables included (Qwen1.5-MoE's 2.689B → "2.7B" shows it);
OpenAI (Table 1 breaks it down) and DeepSeek leave the input-embedding lookup out ("head").
gpuwiz's ``params_active`` is the first; the second is ``params_active - vocab·hidden``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuwiz.core.arch import count_params, lora_params, mlp_params, resolve_model
from gpuwiz.core.catalog import load_catalog
from gpuwiz.core.config_io import loads_config
from gpuwiz.core.errors import GpuwizError
from gpuwiz.core.models import ModelSpec

HF = Path(__file__).resolve().parents[1] / "data" / "hf"


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def _llama(layers, hidden, heads, kv_heads, ffn, vocab, **kw):
    return dict(layers=layers, hidden=hidden, heads=heads, kv_heads=kv_heads, ffn=ffn, vocab=vocab,
                mlp="swiglu", norm="rms", **kw)


_QWEN3 = dict(head_dim=128, qk_norm=True, vocab=151936, mlp="swiglu", norm="rms")
_GPT_OSS = dict(hidden=2880, heads=64, kv_heads=8, head_dim=64, ffn=2880, top_k=4, vocab=201088, mlp="swiglu",
                norm="rms", attention_bias=True, mlp_bias=True, router_bias=True, attention_sinks=True)
_MLA = dict(kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128)


def _gpt2(layers, hidden, heads):
    return dict(layers=layers, hidden=hidden, heads=heads, vocab=50257, seq_len=1024, mlp="gelu", norm="layer",
                bias=True, learned_positions=True, max_positions=1024, tied_embeddings=True)


def _bert(layers, hidden, heads):
    return dict(family="encoder", layers=layers, hidden=hidden, heads=heads, ffn=4 * hidden, vocab=30522,
                seq_len=512, mlp="gelu", norm="layer", bias=True, learned_positions=True, max_positions=512,
                type_vocab=2, pooler=True, tied_embeddings=True)


# (fixture, field-by-field description, published total, published active or None, active convention,
#  active tolerance)
CASES = [
    ("llama-2-7b", _llama(32, 4096, 32, 32, 11008, 32000), 6.74e9, None, "", 0),
    ("llama-2-13b", _llama(40, 5120, 40, 40, 13824, 32000), 13.0e9, None, "", 0),
    ("llama-2-70b", _llama(80, 8192, 64, 8, 28672, 32000), 69.0e9, None, "", 0),
    ("llama-3-8b", _llama(32, 4096, 32, 8, 14336, 128256), 8.03e9, None, "", 0),
    ("llama-3-70b", _llama(80, 8192, 64, 8, 28672, 128256), 70.6e9, None, "", 0),
    ("llama-3.1-8b", _llama(32, 4096, 32, 8, 14336, 128256), 8.03e9, None, "", 0),
    ("llama-3.1-70b", _llama(80, 8192, 64, 8, 28672, 128256), 70.6e9, None, "", 0),
    ("llama-3.1-405b", _llama(126, 16384, 128, 8, 53248, 128256), 405e9, None, "", 0),
    # Llama 3.2 and the Qwen sizes below: the exact count of the released checkpoint (the cards truncate: 1.23B,
    # 3.21B, 14.7B, 4.0B), as public repositories quote it (tests/data/hf/README.md)
    ("llama-3.2-1b", _llama(16, 2048, 32, 8, 8192, 128256, tied_embeddings=True), 1_235_814_400, None, "", 0),
    ("llama-3.2-3b", _llama(28, 3072, 24, 8, 8192, 128256, tied_embeddings=True), 3_212_749_824, None, "", 0),
    ("mistral-7b-v0.1", _llama(32, 4096, 32, 8, 14336, 32000), 7.24e9, None, "", 0),
    ("mixtral-8x7b-v0.1", _llama(32, 4096, 32, 8, 14336, 32000, experts=8, top_k=2), 46.7e9, 12.9e9, "all", 0.01),
    ("mixtral-8x22b-v0.1", _llama(56, 6144, 48, 8, 16384, 32000, experts=8, top_k=2), 141e9, 39e9, "all", 0.01),
    ("qwen2.5-7b", _llama(28, 3584, 28, 4, 18944, 152064, qkv_bias=True), 7.61e9, None, "", 0),
    ("qwen2.5-14b", _llama(48, 5120, 40, 8, 13824, 152064, qkv_bias=True), 14_770_033_664, None, "", 0),
    ("qwen2.5-72b", _llama(80, 8192, 64, 8, 29568, 152064, qkv_bias=True), 72.7e9, None, "", 0),
    ("qwen3-4b", dict(layers=36, hidden=2560, heads=32, kv_heads=8, ffn=9728, tied_embeddings=True, **_QWEN3),
     4_022_468_096, None, "", 0),
    ("qwen3-8b", dict(layers=36, hidden=4096, heads=32, kv_heads=8, ffn=12288, **_QWEN3), 8.2e9, None, "", 0),
    ("qwen3-32b", dict(layers=64, hidden=5120, heads=64, kv_heads=8, ffn=25600, **_QWEN3), 32.8e9, None, "", 0),
    # 3.353B: the card's "3.3B" is truncated, not rounded (one unit of the last digit, 3 %)
    ("qwen3-30b-a3b", dict(layers=48, hidden=2048, heads=32, kv_heads=4, ffn=6144, moe_ffn=768, experts=128,
                           top_k=8, **_QWEN3), 30.5e9, 3.3e9, "all", 0.03),
    # "22B": two digits, half a unit = 2.3 %
    ("qwen3-235b-a22b", dict(layers=94, hidden=4096, heads=64, kv_heads=4, ffn=12288, moe_ffn=1536, experts=128,
                             top_k=8, **_QWEN3), 235e9, 22e9, "all", 0.5 / 22),
    ("qwen1.5-moe-a2.7b", _llama(24, 2048, 16, 16, 5632, 151936, qkv_bias=True, moe_ffn=1408, experts=60, top_k=4,
                                 shared_experts=1, shared_expert_ffn=5632, shared_expert_gate=True),
     14.3e9, 2.7e9, "all", 0.01),
    ("deepseek-v3", _llama(61, 7168, 128, 128, 18432, 129280, moe_ffn=2048, experts=256, top_k=8, shared_experts=1,
                           first_k_dense=3, q_lora_rank=1536, **_MLA), 671e9, 37e9, "head", 0.5 / 37),
    ("deepseek-v2", _llama(60, 5120, 128, 128, 12288, 102400, moe_ffn=1536, experts=160, top_k=6, shared_experts=2,
                           first_k_dense=1, q_lora_rank=1536, **_MLA), 236e9, 21e9, "head", 0.5 / 21),
    ("gpt-oss-120b", dict(layers=36, experts=128, **_GPT_OSS), 116.83e9, 5.13e9, "head", 0.01),
    ("gpt-oss-20b", dict(layers=24, experts=32, **_GPT_OSS), 20.91e9, 3.61e9, "head", 0.01),
    ("gpt2", _gpt2(12, 768, 12), 124e6, None, "", 0),
    ("gpt2-medium", _gpt2(24, 1024, 16), 355e6, None, "", 0),
    ("gpt2-large", _gpt2(36, 1280, 20), 774e6, None, "", 0),
    ("gpt2-xl", _gpt2(48, 1600, 25), 1558e6, None, "", 0),
    ("bert-base-uncased", _bert(12, 768, 12), 110e6, None, "", 0),
    ("bert-large-uncased", _bert(24, 1024, 16), 336e6, None, "", 0),
]


def _active(m, convention: str) -> float:
    return m.params_active - (m.vocab * m.hidden if convention == "head" else 0)


@pytest.mark.parametrize("fixture,fields,total,active,convention,tol", CASES, ids=[c[0] for c in CASES])
def test_field_by_field_and_config_json_match_the_published_count(cat, fixture, fields, total, active, convention,
                                                                  tol):
    written = resolve_model(ModelSpec(**fields), cat)
    parsed = resolve_model(ModelSpec(hf_config=str(HF / f"{fixture}.json")), cat)
    for m in (written, parsed):
        assert abs(m.params_total / total - 1) <= 0.005, (fixture, m.params_total)
        if active:
            assert abs(_active(m, convention) / active - 1) <= tol, (fixture, m.params_active)
        else:
            assert m.params_active == m.params_total
    # the two descriptions are the same architecture, to the parameter
    assert parsed.params_total == written.params_total and parsed.params_active == written.params_active
    assert (parsed.dense_layers, parsed.moe_layers) == (written.dense_layers, written.moe_layers)
    assert parsed.head_dim == written.head_dim and parsed.mlp == written.mlp


def test_llama_405b_written_out_without_mlp_is_not_a_gelu_model(cat):
    # issue 11: counted as GELU this came out at 296 B
    fields = {k: v for k, v in _llama(126, 16384, 128, 8, 53248, 128256).items() if k not in ("mlp", "norm")}
    m = resolve_model(ModelSpec(**fields), cat)
    assert abs(m.params_total / 405e9 - 1) <= 0.005
    gelu = resolve_model(ModelSpec(**fields, mlp="gelu"), cat)
    assert 290e9 < gelu.params_total < 300e9


def test_config_file_takes_the_architecture_keys(cat):
    text = """version: 1
model:
  layers: 61
  hidden: 7168
  heads: 128
  ffn: 18432
  vocab: 129280
  mlp: swiglu
  norm: rms
  experts: 256
  top_k: 8
  moe_ffn: 2048
  shared_experts: 1
  first_k_dense: 3
  q_lora_rank: 1536
  kv_lora_rank: 512
  qk_nope_head_dim: 128
  qk_rope_head_dim: 64
  v_head_dim: 128
"""
    req = loads_config(text, "ds.yaml")
    m = resolve_model(req.model, cat)
    assert abs(m.params_total / 671e9 - 1) <= 0.005
    with pytest.raises(GpuwizError, match=r"^ds\.yaml:8: model\.mlp: Input should be 'swiglu', 'geglu' or 'gelu'"):
        loads_config(text.replace("mlp: swiglu", "mlp: relu2"), "ds.yaml")
    with pytest.raises(GpuwizError, match=r"^ds\.yaml:\d+: model\.moe_fnn: unknown key \(did you mean moe_ffn\?\)$"):
        loads_config(text.replace("moe_ffn", "moe_fnn"), "ds.yaml")


def test_deepseek_v3_per_layer_structure(cat):
    m = resolve_model(ModelSpec(hf_config=str(HF / "deepseek-v3.json")), cat)
    assert (m.family, m.dense_layers, m.moe_layers, m.experts, m.top_k) == ("moe", 3, 58, 256, 8)
    assert (m.ffn, m.moe_ffn, m.shared_experts, m.shared_expert_ffn) == (18432, 2048, 1, 2048)  # dense vs expert
    qwen = resolve_model(ModelSpec(hf_config=str(HF / "qwen3-30b-a3b.json")), cat)
    assert qwen.ffn == qwen.moe_ffn == 768 and qwen.dense_layers == 0  # intermediate_size 6144 is used by no layer
    assert (m.q_lora_rank, m.kv_lora_rank, m.qk_nope_head_dim, m.qk_rope_head_dim, m.v_head_dim) == (
        1536, 512, 128, 64, 128)
    assert m.head_dim == 192 and m.mtp_layers == 1
    assert any("multi-token-prediction" in n for n in m.notes)
    # the per-layer figures add up to the total
    emb = 2 * m.vocab * m.hidden
    router, norms = m.experts * m.hidden, 2 * m.hidden
    per_moe = m.params_attention + (m.experts + m.shared_experts) * m.params_expert + router + norms
    per_dense = m.params_attention + m.params_dense_mlp + norms
    assert m.params_total == emb + m.dense_layers * per_dense + m.moe_layers * per_moe + m.hidden
    # MLA: q_a + norm + q_b, kv_a + norm + kv_b, o
    assert m.params_attention == (7168 * 1536 + 1536 + 1536 * 128 * 192 + 7168 * 576 + 512 + 512 * 128 * 256
                                  + 128 * 128 * 7168)


def test_qwen2_moe_shared_expert_and_gate(cat):
    m = resolve_model(ModelSpec(hf_config=str(HF / "qwen1.5-moe-a2.7b.json")), cat)
    assert (m.shared_experts, m.shared_expert_ffn, m.shared_expert_gate, m.moe_ffn) == (1, 5632, True, 1408)
    no_gate = resolve_model(ModelSpec(hf_config=str(HF / "qwen1.5-moe-a2.7b.json"), shared_expert_gate=False), cat)
    assert m.params_total - no_gate.params_total == 24 * 2048


def test_gpt_oss_details(cat):
    m = resolve_model(ModelSpec(hf_config=str(HF / "gpt-oss-120b.json")), cat)
    assert m.attention_bias and m.mlp_bias and m.router_bias and m.attention_sinks and m.head_dim == 64
    # one expert: gate_up (h x 2f) + bias 2f, down (f x h) + bias h
    assert m.params_expert == 3 * 2880 * 2880 + 2 * 2880 + 2880
    # attention: q (h x 64·64) k, v (h x 8·64) o, their biases, 64 sinks
    assert m.params_attention == 2880 * 4096 * 2 + 2 * 2880 * 512 + 4096 + 2 * 512 + 2880 + 64


def test_mixtral_expert_size_defaults_to_ffn_and_moe_ffn_overrides(cat):
    m = resolve_model(ModelSpec(hf_config=str(HF / "mixtral-8x7b-v0.1.json")), cat)
    assert m.moe_ffn == m.ffn == 14336 and m.dense_layers == 0 and m.moe_layers == 32
    small = resolve_model(ModelSpec(hf_config=str(HF / "mixtral-8x7b-v0.1.json"), moe_ffn=7168), cat)
    assert small.ffn == small.moe_ffn == 7168  # no dense layer: ffn is the expert width
    assert small.params_total < m.params_total - 32 * 8 * 3 * 4096 * 7000


def test_moe_layer_frequency_and_dense_first_layers(cat):
    base = dict(layers=8, hidden=256, heads=4, ffn=1024, vocab=1000, mlp="swiglu", experts=4, top_k=1, moe_ffn=256)
    every = resolve_model(ModelSpec(**base), cat)
    half = resolve_model(ModelSpec(**base, moe_layer_freq=2), cat)
    first = resolve_model(ModelSpec(**base, first_k_dense=3), cat)
    assert (every.dense_layers, every.moe_layers) == (0, 8)
    assert (half.dense_layers, half.moe_layers) == (4, 4)  # layers 1, 3, 5, 7
    assert (first.dense_layers, first.moe_layers) == (3, 5)
    dense_mlp, expert = first.params_dense_mlp, first.params_expert
    assert first.params_total - every.params_total == pytest.approx(3 * (dense_mlp - 4 * expert - 256 * 4))


def test_lora_counts_every_expert_and_the_mla_projections(cat):
    m = resolve_model(ModelSpec(hf_config=str(HF / "deepseek-v3.json")), cat)
    r = 8
    attn = r * ((7168 + 1536) + (1536 + 128 * 192) + (7168 + 576) + (512 + 128 * 256) + (128 * 128 + 7168))
    dense = r * 3 * (7168 + 18432)
    expert = r * 3 * (7168 + 2048)
    assert lora_params(m, r) == 61 * attn + 3 * dense + 58 * 257 * expert


@pytest.mark.parametrize(
    "fields,match",
    [
        (dict(experts=8, top_k=9), r"^model\.top_k: 9 experts per token, but model\.experts is 8$"),
        (dict(moe_ffn=512), r"^model\.moe_ffn: only for a mixture of experts"),
        (dict(top_k=2), r"^model\.top_k: 2 experts per token, but model\.experts is 1$"),
        (dict(experts=8, first_k_dense=4), r"^model\.first_k_dense: 4 dense layers leave no MoE layer"),
        (dict(experts=8, moe_layer_freq=5), r"^model\.moe_layer_freq: with 4 layers"),
        (dict(experts=8, shared_expert_ffn=512), r"^model\.shared_expert_ffn: needs model\.shared_experts"),
        (dict(kv_lora_rank=64, qk_nope_head_dim=32), r"^model\.qk_rope_head_dim: needed with model\.kv_lora_rank"),
        (dict(v_head_dim=64), r"^model\.v_head_dim: multi-head latent attention also needs model\.kv_lora_rank"),
        (dict(kv_heads=16), r"^model\.kv_heads: 16 key/value heads, more than model\.heads \(8\)"),
        (dict(sliding_layers=2), r"^model\.sliding_layers: needs model\.sliding_window"),
        (dict(sliding_window=64, sliding_layers=5), r"^model\.sliding_layers: 5 windowed layers, more than"),
    ],
)
def test_contradictory_fields_are_one_line_errors(cat, fields, match):
    base = dict(layers=4, hidden=512, heads=8, ffn=1024, vocab=1000, mlp="swiglu")
    with pytest.raises(GpuwizError, match=match) as err:
        resolve_model(ModelSpec(**{**base, **fields}), cat)
    assert "\n" not in str(err.value)


def _hf(tmp_path, name: str, **changes) -> str:
    import json

    data = json.loads((HF / f"{name}.json").read_text())
    for k, v in changes.items():
        if v is None:
            data.pop(k, None)
        else:
            data[k] = v
    p = tmp_path / "config.json"
    p.write_text(json.dumps(data))
    return str(p)


@pytest.mark.parametrize(
    "name,changes,match",
    [
        ("mixtral-8x7b-v0.1", dict(num_experts_per_tok=9), r"num_experts_per_tok 9 is more than num_local_experts 8"),
        ("mixtral-8x7b-v0.1", dict(num_experts_per_tok=None), r"num_local_experts is 8 but num_experts_per_tok"),
        ("gpt-oss-20b", dict(experts_per_token=2), r"experts_per_token 2 contradicts num_experts_per_tok 4"),
        ("qwen3-8b", dict(moe_intermediate_size=768), r"moe_intermediate_size is set but the config has no routed"),
        ("qwen3-30b-a3b", dict(mlp_only_layers=[3, 7]), r"mlp_only_layers \[3, 7\] is modelled only as the first"),
        ("deepseek-v3", dict(first_k_dense_replace=61), r"first_k_dense_replace 61 leaves no MoE layer"),
        ("deepseek-v3", dict(moe_layer_freq=2), r"moe_layer_freq 2 \(DeepSeek's every-n-th-layer rule\)"),
        ("deepseek-v3", dict(kv_lora_rank=None), r"q_lora_rank is set but kv_lora_rank is not"),
        ("llama-3-8b", dict(hidden_act="squared_relu"), r"hidden_act 'squared_relu' is not an activation"),
        ("llama-3-8b", dict(attention_bias="yes"), r"attention_bias must be true or false, got 'yes'"),
        ("qwen3-30b-a3b", dict(num_experts=0.5), r"num_experts must be a positive whole number, got 0\.5"),
        ("gpt-oss-20b", dict(layer_types=["full_attention"] * 3), r"layer_types must list one attention kind per"),
        ("mixtral-8x7b-v0.1", dict(intermediate_size_mlp=16384), r"intermediate_size_mlp \(Llama 4's separate"),
    ],
)
def test_bad_moe_config_json_names_file_and_key(tmp_path, cat, name, changes, match):
    path = _hf(tmp_path, name, **changes)
    with pytest.raises(GpuwizError, match=r"^model\.hf_config: .*config\.json: " + match) as err:
        resolve_model(ModelSpec(hf_config=path), cat)
    assert "\n" not in str(err.value)


def test_mlp_only_layers_at_the_front_are_dense_layers(tmp_path, cat):
    path = _hf(tmp_path, "qwen3-30b-a3b", mlp_only_layers=[0, 1])
    m = resolve_model(ModelSpec(hf_config=path), cat)
    assert (m.dense_layers, m.moe_layers) == (2, 46)
    full = resolve_model(ModelSpec(hf_config=str(HF / "qwen3-30b-a3b.json")), cat)
    assert m.params_total == full.params_total + 2 * (m.params_dense_mlp - 128 * m.params_expert - 128 * 2048)


def test_count_params_falls_back_when_layer_split_is_missing(cat):
    m = resolve_model(ModelSpec(hf_config=str(HF / "mixtral-8x7b-v0.1.json")), cat)
    bare = m.model_copy(update={"dense_layers": 0, "moe_layers": 0})
    assert count_params(bare) == count_params(m)


# catalog preset -> the fixture of the same model
PRESET_FIXTURE = {
    "llama-2-7b": "llama-2-7b", "llama-2-13b": "llama-2-13b", "llama-2-70b": "llama-2-70b",
    "llama-3-8b": "llama-3-8b", "llama-3-70b": "llama-3-70b", "llama-3.1-8b": "llama-3.1-8b",
    "llama-3.1-70b": "llama-3.1-70b", "llama-3.1-405b": "llama-3.1-405b", "mistral-7b": "mistral-7b-v0.1",
    "mixtral-8x7b": "mixtral-8x7b-v0.1", "mixtral-8x22b": "mixtral-8x22b-v0.1", "qwen2.5-7b": "qwen2.5-7b",
    "qwen2.5-72b": "qwen2.5-72b", "qwen3-8b": "qwen3-8b", "qwen3-32b": "qwen3-32b",
    "llama-3.2-1b": "llama-3.2-1b", "llama-3.2-3b": "llama-3.2-3b", "qwen2.5-14b": "qwen2.5-14b",
    "qwen3-4b": "qwen3-4b",
    "qwen3-30b-a3b": "qwen3-30b-a3b", "qwen3-235b-a22b": "qwen3-235b-a22b", "deepseek-v3": "deepseek-v3",
    "gpt-oss-20b": "gpt-oss-20b", "gpt-oss-120b": "gpt-oss-120b", "gpt2-124m": "gpt2",
    "bert-base": "bert-base-uncased", "bert-large": "bert-large-uncased",
}


@pytest.mark.parametrize("preset,fixture", sorted(PRESET_FIXTURE.items()))
def test_preset_is_the_same_architecture_as_its_config_json(cat, preset, fixture):
    p = resolve_model(ModelSpec(preset=preset), cat)
    f = resolve_model(ModelSpec(hf_config=str(HF / f"{fixture}.json")), cat)
    assert p.params_total == f.params_total and p.params_active == f.params_active, preset
    assert (p.dense_layers, p.moe_layers, p.moe_ffn, p.shared_experts, p.head_dim, p.mlp) == (
        f.dense_layers, f.moe_layers, f.moe_ffn, f.shared_experts, f.head_dim, f.mlp)
    assert (p.sliding_window, p.sliding_layers, p.kv_lora_rank, p.mtp_layers) == (
        f.sliding_window, f.sliding_layers, f.kv_lora_rank, f.mtp_layers)
    entry = cat.model(preset)
    assert abs(p.params_total / (entry.params_b * 1e9) - 1) <= 0.005
    if entry.params_active_b:
        assert abs(p.params_active / (entry.params_active_b * 1e9) - 1) <= 0.005
    assert entry.source and entry.as_of


ARCH_KEYS = (
    "mlp", "head_dim", "tied_embeddings", "norm", "bias", "attention_bias", "qkv_bias", "mlp_bias", "qk_norm",
    "learned_positions", "max_positions", "type_vocab", "pooler", "top_k", "moe_ffn", "shared_experts",
    "shared_expert_ffn", "shared_expert_gate", "first_k_dense", "moe_layer_freq", "router_bias", "q_lora_rank",
    "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "attention_sinks", "sliding_window",
    "sliding_layers",
)


@pytest.mark.parametrize("key", ARCH_KEYS)
def test_architecture_key_is_in_limits_doc_with_its_bounds(key):
    doc = (Path(__file__).resolve().parents[2] / "docs" / "LIMITS.md").read_text(encoding="utf-8")
    rows = [line for line in doc.splitlines() if line.startswith("|") and f"`model.{key}`" in line]
    assert rows, f"docs/LIMITS.md has no row for model.{key}"
    for meta in ModelSpec.model_fields[key].metadata:
        for bound in ("ge", "le"):
            if getattr(meta, bound, None) is not None:
                assert f"{getattr(meta, bound):,}" in rows[0], (key, bound, rows[0])
    with pytest.raises(GpuwizError):
        loads_config(f"version: 1\nmodel:\n  {key}: not-a-value\n", "k.yaml")


def test_sliding_window_layers(cat):
    oss = resolve_model(ModelSpec(hf_config=str(HF / "gpt-oss-120b.json")), cat)
    assert (oss.sliding_window, oss.sliding_layers, oss.layers) == (128, 18, 36)
    mistral = resolve_model(ModelSpec(hf_config=str(HF / "mistral-7b-v0.1.json")), cat)
    assert (mistral.sliding_window, mistral.sliding_layers) == (4096, 32)
    qwen = resolve_model(ModelSpec(hf_config=str(HF / "qwen2.5-7b.json")), cat)  # window written, switched off
    assert (qwen.sliding_window, qwen.sliding_layers) == (None, 0)
    written = resolve_model(ModelSpec(layers=8, hidden=512, heads=8, sliding_window=256), cat)
    assert (written.sliding_window, written.sliding_layers) == (256, 8)
    assert written.params_total == resolve_model(ModelSpec(layers=8, hidden=512, heads=8), cat).params_total


def test_experts_switched_off_drop_the_inherited_moe_fields(cat):
    m = resolve_model(ModelSpec(preset="deepseek-v3", experts=1), cat)
    assert (m.family, m.moe_layers, m.dense_layers, m.moe_ffn, m.shared_experts) == ("decoder", 0, 61, None, 0)
    with pytest.raises(GpuwizError, match=r"^model\.moe_ffn: only for a mixture of experts"):
        resolve_model(ModelSpec(preset="deepseek-v3", experts=1, moe_ffn=1024), cat)


# ---- property: any architecture, written out or as a config.json, counts the same -----------------

@st.composite
def _architecture(draw):
    kind = draw(st.sampled_from(["llama", "qwen2", "qwen3", "mixtral", "qwen3_moe", "qwen2_moe", "deepseek_v3",
                                 "gpt_oss"]))
    layers = draw(st.integers(2, 12))
    heads = draw(st.sampled_from([4, 8, 16]))
    kv = draw(st.sampled_from([k for k in (1, 2, 4, 8, 16) if heads % k == 0]))
    hidden = heads * draw(st.sampled_from([32, 64, 128]))
    ffn = draw(st.integers(1, 64)) * 64
    vocab = draw(st.integers(100, 50_000))
    tied = draw(st.booleans())
    hf = {"model_type": kind, "num_hidden_layers": layers, "hidden_size": hidden, "num_attention_heads": heads,
          "num_key_value_heads": kv, "intermediate_size": ffn, "vocab_size": vocab, "rms_norm_eps": 1e-6,
          "hidden_act": "silu", "tie_word_embeddings": tied}
    fields = dict(layers=layers, hidden=hidden, heads=heads, kv_heads=kv, ffn=ffn, vocab=vocab, mlp="swiglu",
                  norm="rms", tied_embeddings=tied)
    if kind in ("qwen2", "qwen2_moe"):
        fields["qkv_bias"] = True
    if kind in ("qwen3", "qwen3_moe", "gpt_oss"):
        d = draw(st.sampled_from([32, 64, 128]))
        hf["head_dim"], fields["head_dim"] = d, d
        fields.update(qk_norm=kind != "gpt_oss")
    if kind in ("mixtral", "qwen3_moe", "qwen2_moe", "deepseek_v3", "gpt_oss"):
        experts = draw(st.integers(2, 64))
        top_k = draw(st.integers(1, experts))
        key = {"mixtral": "num_local_experts", "gpt_oss": "num_local_experts", "deepseek_v3": "n_routed_experts"}
        hf[key.get(kind, "num_experts")] = experts
        hf["num_experts_per_tok"] = top_k
        fields.update(experts=experts, top_k=top_k)
        if kind in ("qwen3_moe", "qwen2_moe", "deepseek_v3"):
            moe = draw(st.integers(1, 32)) * 32
            hf["moe_intermediate_size"], fields["moe_ffn"] = moe, moe
        if kind == "qwen2_moe":
            shared = draw(st.integers(1, 32)) * 64
            hf["shared_expert_intermediate_size"] = shared
            fields.update(shared_experts=1, shared_expert_ffn=shared, shared_expert_gate=True)
        if kind == "deepseek_v3":
            n_shared, first_k = draw(st.integers(0, 2)), draw(st.integers(0, layers - 1))
            rq = draw(st.sampled_from([None, 64, 256]))
            mla = dict(kv_lora_rank=draw(st.sampled_from([32, 128])), qk_nope_head_dim=draw(st.sampled_from([16, 64])),
                       qk_rope_head_dim=draw(st.sampled_from([16, 32])), v_head_dim=draw(st.sampled_from([16, 64])))
            hf.update(n_shared_experts=n_shared, first_k_dense_replace=first_k, q_lora_rank=rq, **mla)
            fields.update(mla, first_k_dense=first_k, **({"q_lora_rank": rq} if rq else {}),
                          **({"shared_experts": n_shared} if n_shared else {}))
        if kind == "gpt_oss":
            hf["attention_bias"] = True
            fields.update(attention_bias=True, mlp_bias=True, router_bias=True, attention_sinks=True)
    return hf, fields


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(arch=_architecture())
def test_any_architecture_counts_the_same_written_out_or_parsed(tmp_path_factory, arch):
    import json

    hf, fields = arch
    cat = load_catalog()
    path = tmp_path_factory.mktemp("hf") / "config.json"
    path.write_text(json.dumps(hf))
    parsed = resolve_model(ModelSpec(hf_config=str(path)), cat)
    written = resolve_model(ModelSpec(**fields), cat)
    assert parsed.params_total == written.params_total and parsed.params_active == written.params_active
    # total − active is exactly the routed experts a token does not use
    unused = parsed.moe_layers * ((parsed.experts or 1) - (parsed.top_k or 1)) * parsed.params_expert
    assert parsed.params_total - parsed.params_active == unused
    # the per-layer fields add up to the layer-by-layer total (norms: 2 per layer + the final one)
    h = parsed.hidden
    router = (parsed.experts or 0) * h + ((parsed.experts or 0) if parsed.router_bias else 0)
    router += h if parsed.shared_expert_gate else 0
    shared = parsed.shared_experts * mlp_params(parsed, parsed.shared_expert_ffn) if parsed.shared_experts else 0
    per_moe = parsed.params_attention + (parsed.experts or 0) * parsed.params_expert + shared + router + 2 * h
    per_dense = parsed.params_attention + parsed.params_dense_mlp + 2 * h
    emb = parsed.vocab * h * (1 if parsed.tied_embeddings else 2)
    assert parsed.params_total == emb + parsed.dense_layers * per_dense + parsed.moe_layers * per_moe + h
