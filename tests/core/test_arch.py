"""Parameter counts from architecture vs published figures; model resolution; HF config.json reading."""

from __future__ import annotations

import json
import os

import pytest

from gpuwiz.core.arch import lora_params, resolve_model
from gpuwiz.core.catalog import load_catalog
from gpuwiz.core.errors import GpuwizError
from gpuwiz.core.models import ModelSpec


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def _within(value: float, published: float, tol: float = 0.005) -> bool:
    return abs(value / published - 1) <= tol


# Published counts: Llama 2 paper / HF model cards; Mistral 7B card (7.24B); Mixtral paper (46.7B total,
# 12.9B active); GPT-2 small 124M (HF); BERT-base 110M (Devlin et al., 109.5M without the MLM head)
LLAMA2_7B = dict(layers=32, hidden=4096, heads=32, kv_heads=32, ffn=11008, vocab=32000, mlp="swiglu", norm="rms")
LLAMA2_70B = dict(layers=80, hidden=8192, heads=64, kv_heads=8, ffn=28672, vocab=32000, mlp="swiglu", norm="rms")
LLAMA3_8B = dict(layers=32, hidden=4096, heads=32, kv_heads=8, ffn=14336, vocab=128256, mlp="swiglu", norm="rms")
MISTRAL_7B = dict(layers=32, hidden=4096, heads=32, kv_heads=8, ffn=14336, vocab=32000, mlp="swiglu", norm="rms")


def _hf_llama(shape: dict, **extra) -> dict:
    d = {
        "model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_act": "silu", "rms_norm_eps": 1e-5,
        "num_hidden_layers": shape["layers"], "hidden_size": shape["hidden"], "num_attention_heads": shape["heads"],
        "num_key_value_heads": shape["kv_heads"], "intermediate_size": shape["ffn"], "vocab_size": shape["vocab"],
        "max_position_embeddings": 4096, "tie_word_embeddings": False,
    }
    d.update(extra)
    return d


def _write(tmp_path, name: str, data: dict) -> str:
    p = tmp_path / name
    p.write_text(json.dumps(data))
    return str(p)


@pytest.mark.parametrize(
    "shape,published",
    [(LLAMA2_7B, 6.74e9), (LLAMA2_70B, 68.98e9), (LLAMA3_8B, 8.03e9), (MISTRAL_7B, 7.24e9)],
)
def test_hf_llama_family_param_counts(tmp_path, cat, shape, published):
    path = _write(tmp_path, "config.json", _hf_llama(shape))
    m = resolve_model(ModelSpec(hf_config=path), cat)
    assert _within(m.params_total, published), m.params_total
    assert m.params_active == m.params_total
    assert m.kv_heads == shape["kv_heads"] and m.mlp == "swiglu"


def test_explicit_fields_without_mlp_infer_it_from_the_width(cat):
    # ffn 11008 = 2.69·h is no GELU width (4·h): counted as SwiGLU, and the assumption is stated
    shape = {k: v for k, v in LLAMA2_7B.items() if k not in ("mlp", "norm")}
    m = resolve_model(ModelSpec(**shape, family="decoder"), cat)
    assert m.mlp == "swiglu" and _within(m.params_total, 6.74e9)
    assert any(n.startswith("model.mlp not given: assumed swiglu") for n in m.notes)
    gelu = resolve_model(ModelSpec(layers=12, hidden=768, heads=12, ffn=3072, vocab=50257), cat)
    assert gelu.mlp == "gelu"
    forced = resolve_model(ModelSpec(**{k: v for k, v in LLAMA2_7B.items() if k != "mlp"}, mlp="gelu"), cat)
    assert forced.mlp == "gelu" and forced.params_total < 0.8 * m.params_total  # 2·h·ffn instead of 3·h·ffn


def test_mixtral_total_and_active(tmp_path, cat):
    cfg = _hf_llama(MISTRAL_7B, model_type="mixtral", num_local_experts=8, num_experts_per_tok=2)
    m = resolve_model(ModelSpec(hf_config=_write(tmp_path, "config.json", cfg)), cat)
    assert m.family == "moe" and m.experts == 8 and m.top_k == 2
    assert _within(m.params_total, 46.7e9)
    assert _within(m.params_active, 12.9e9, 0.01)


def test_gpt2_small_from_hf_config(tmp_path, cat):
    cfg = {"model_type": "gpt2", "n_layer": 12, "n_embd": 768, "n_head": 12, "n_positions": 1024,
           "vocab_size": 50257, "n_inner": None, "activation_function": "gelu_new"}
    m = resolve_model(ModelSpec(hf_config=_write(tmp_path, "config.json", cfg)), cat)
    assert m.params_total == 124_439_808  # HF GPT2Model: exact
    assert m.seq_len == 1024 and m.tied_embeddings


def test_bert_base_from_hf_config(tmp_path, cat):
    cfg = {"model_type": "bert", "architectures": ["BertForMaskedLM"], "num_hidden_layers": 12, "hidden_size": 768,
           "num_attention_heads": 12, "intermediate_size": 3072, "vocab_size": 30522,
           "max_position_embeddings": 512, "type_vocab_size": 2, "hidden_act": "gelu"}
    m = resolve_model(ModelSpec(hf_config=_write(tmp_path, "config.json", cfg)), cat)
    assert m.family == "encoder"
    assert m.params_total == 109_482_240  # BertModel incl. pooler
    assert _within(m.params_total, 110e6, 0.01)


def test_hf_config_folder_and_qwen2_bias(tmp_path, cat):
    cfg = _hf_llama(dict(layers=28, hidden=3584, heads=28, kv_heads=4, ffn=18944, vocab=152064), model_type="qwen2")
    (tmp_path / "qwen").mkdir()
    _write(tmp_path / "qwen", "config.json", cfg)
    m = resolve_model(ModelSpec(hf_config=str(tmp_path / "qwen")), cat)
    assert m.qkv_bias
    assert _within(m.params_total, 7.62e9)  # Qwen2.5-7B model card: 7.61B


@pytest.mark.parametrize(
    "preset,published,tol",
    [("llama-2-7b", 6.74e9, 0.005), ("llama-2-70b", 68.98e9, 0.005), ("llama-3-8b", 8.03e9, 0.005),
     ("mistral-7b", 7.24e9, 0.005), ("mixtral-8x7b", 46.7e9, 0.005), ("gpt2-124m", 124e6, 0.01),
     ("bert-base", 110e6, 0.01)],
)
def test_presets_match_published(cat, preset, published, tol):
    if preset not in {m.id for m in cat.models}:
        pytest.skip(f"{preset} not in catalog")
    m = resolve_model(ModelSpec(preset=preset), cat)
    assert _within(m.params_total, published, tol), m.params_total


def test_explicit_field_overrides_preset(cat):
    base = resolve_model(ModelSpec(preset="llama-2-7b"), cat)
    deeper = resolve_model(ModelSpec(preset="llama-2-7b", layers=40), cat)
    assert deeper.layers == 40 and deeper.params_total > base.params_total
    longer = resolve_model(ModelSpec(preset="llama-2-7b", seq_len=8192), cat)
    assert longer.seq_len == 8192 and longer.params_total == base.params_total


def test_params_only_derives_a_shape_and_says_so(cat):
    m = resolve_model(ModelSpec(params_b=7), cat)
    assert m.params_total == 7e9 and m.shape_derived
    assert 24 <= (m.layers or 0) <= 40 and (m.hidden or 0) % 128 == 0
    assert 0.7 < 12 * m.layers * m.hidden**2 / 7e9 < 1.3
    assert any("derived" in n for n in m.notes)


def test_unknown_preset_suggests(cat):
    with pytest.raises(GpuwizError) as err:
        resolve_model(ModelSpec(preset="llama-2-7"), cat)
    msg = str(err.value)
    assert msg.startswith("model.preset: unknown preset 'llama-2-7'") and "did you mean" in msg


def test_missing_information_names_the_field(cat):
    with pytest.raises(GpuwizError, match=r"^model\.preset: no model given"):
        resolve_model(ModelSpec(), cat)
    with pytest.raises(GpuwizError, match=r"^model\.hidden"):
        resolve_model(ModelSpec(layers=12), cat)


def test_bad_hf_files_name_the_file(tmp_path, cat):
    with pytest.raises(GpuwizError, match=r"model\.hf_config: cannot read"):
        resolve_model(ModelSpec(hf_config=str(tmp_path / "nope.json")), cat)
    bad = tmp_path / "bad.json"
    bad.write_text('{"hidden_size": 4096,,}')
    with pytest.raises(GpuwizError, match=r"bad\.json:1: not valid JSON"):
        resolve_model(ModelSpec(hf_config=str(bad)), cat)
    missing = _write(tmp_path, "missing.json", {"model_type": "llama", "hidden_size": 4096})
    with pytest.raises(GpuwizError, match=r"missing\.json: missing num_attention_heads"):
        resolve_model(ModelSpec(hf_config=missing), cat)


def test_hf_cache_follows_mtime(tmp_path, cat):
    path = _write(tmp_path, "config.json", _hf_llama(LLAMA2_7B))
    a = resolve_model(ModelSpec(hf_config=path), cat)
    _write(tmp_path, "config.json", _hf_llama(LLAMA2_70B))
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    b = resolve_model(ModelSpec(hf_config=path), cat)
    assert b.params_total > 9 * a.params_total


def test_lora_params_llama2_7b_rank8(cat):
    m = resolve_model(ModelSpec(preset="llama-2-7b"), cat)
    # r·(d_in + d_out) over q,k,v,o,gate,up,down x 32 layers = 19.99 M (research note §3.5)
    assert lora_params(m, 8) == pytest.approx(19.99e6, rel=1e-3)


def test_per_sample_figures_say_whether_published(cat):
    """A non-token preset's FLOPs per sample are said to be published only where they are: the presets whose
    catalog notes call their count an estimate carry per_sample_basis: estimate, and the estimate's assumptions
    and the model's note then say the count is ours (round 2 said "published figure" for SDXL's own count)."""
    from gpuwiz.core.estimate import estimate
    from gpuwiz.core.models import Requirements

    said_estimate = [m.id for m in cat.models if m.train_gflops_per_sample
                     and any(n.startswith("estimate:") and ("train_gflops_per_sample" in n or "forward" in n)
                             for n in m.notes)]
    assert {"sdxl", "stable-diffusion-2.1", "whisper-large-v3"} <= set(said_estimate)
    for m in cat.models:
        if m.train_gflops_per_sample:
            assert (m.per_sample_basis == "estimate") == (m.id in said_estimate), m.id
    for preset, word in (("sdxl", "counted from the architecture"), ("resnet-50", "published figure"),
                         ("whisper-large-v3", "counted from the architecture")):
        req = Requirements.model_validate({"model": {"preset": preset}, "data": {"samples": 1e5},
                                           "hardware": {"gpu": "h100-sxm", "count": 1}})
        flops = [a for a in estimate(req, cat).assumptions if a.startswith("FLOPs per sample")]
        assert len(flops) == 1 and word in flops[0], flops
        note = resolve_model(req.model, cat).notes[0]
        assert ("none published" in note) == (preset != "resnet-50") and "?" not in note, note  # (audio: no px)
