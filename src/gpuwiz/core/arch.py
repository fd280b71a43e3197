"""Resolve a ``ModelSpec`` (preset / HF config.json / explicit fields) into a ``ResolvedModel``.

Order of precedence: catalog preset < local HF ``config.json`` < explicit fields in the config.
Parameters are counted exactly from the architecture (GQA, SwiGLU vs GELU MLP, tied or untied
embeddings, norms and biases, MoE total vs active including the router), following the layout of
``NVIDIA/Megatron-LM:megatron/training/theoretical_memory_usage.py`` and the HF model code. The
research note (sizing_formulas_and_peers.md §3.1) checks Llama-2-7B → 6.738 B and 70B → 68.98 B.

When only ``params_b`` is known, a plausible shape is derived from ``P ≈ 12·L·h²`` with the common
aspect ratio ``h = 128·L`` (GPT-3 175B: 12288 = 128·96; Llama-2-7B: 4096 = 128·32), and the
model says so in ``notes``.
"""

from __future__ import annotations

import math
from typing import Any, Literal

from gpuwiz.core.catalog import Catalog, did_you_mean
from gpuwiz.core.errors import GpuwizError
from gpuwiz.core.hf import read_hf_config
from gpuwiz.core.models import Family, ModelSpec, ResolvedModel

TOKEN_FAMILIES = ("decoder", "encoder", "encoder-decoder", "moe")
IMAGE_FAMILIES = ("cnn", "vit", "diffusion")
DEFAULT_VOCAB = 32_000  # Llama-1/2 tokenizer; used only when nothing else says
DEFAULT_SEQ = 2048
ASPECT = 128  # h / L for shapes derived from params_b (see module docstring)
HEAD_DIM = 128

_ARCH_KEYS = ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "seq_len", "experts", "top_k")
_LAYOUT_KEYS = (
    "tied_embeddings", "norm", "bias", "qkv_bias", "head_dim", "max_positions", "type_vocab", "pooler", "mlp",
)


# --------------------------------------------------------------------------------------------------
# Parameter counting
# --------------------------------------------------------------------------------------------------


def _attn_params(m: ResolvedModel) -> float:
    """q, k, v, o projections with GQA (Megatron theoretical_memory_usage.py: 2h·h_q + 2h·kv·d)."""
    h, a = m.hidden or 0, m.heads or 1
    d = m.head_dim or h // a
    kv = m.kv_heads or a
    q_out, kv_out = a * d, kv * d
    p = h * q_out + 2 * h * kv_out + q_out * h
    if m.bias:
        p += q_out + 2 * kv_out + h
    elif m.qkv_bias:  # Qwen2: q/k/v biases only (transformers/models/qwen2/modeling_qwen2.py)
        p += q_out + 2 * kv_out
    return float(p)


def _mlp_params(m: ResolvedModel) -> float:
    """One expert's MLP: SwiGLU has gate, up, down (3·h·ffn); GELU has fc1, fc2 (2·h·ffn)."""
    h, f = m.hidden or 0, m.ffn or 4 * (m.hidden or 0)
    if m.mlp == "swiglu":
        return float(3 * h * f + (2 * f + h if m.bias else 0))
    return float(2 * h * f + (f + h if m.bias else 0))


def _norm_params(m: ResolvedModel) -> int:
    """RMSNorm has a weight; LayerNorm a weight and a bias."""
    return (m.hidden or 0) * (2 if m.norm == "layer" else 1)


def embedding_params(m: ResolvedModel) -> tuple[float, float]:
    """(all embedding params, the larger single table) — input + output head (if untied) + positions."""
    h, v = m.hidden or 0, m.vocab or 0
    one = float(v * h)
    total = one * (1 if m.tied_embeddings else 2)
    if m.max_positions:  # learned absolute positions (GPT-2 wpe, BERT position_embeddings)
        total += m.max_positions * h
    if m.type_vocab:
        total += m.type_vocab * h
    return total, one


def block_params(m: ResolvedModel) -> tuple[float, float]:
    """(total, active) parameters of one transformer block. MoE: router h·E; active = top_k experts."""
    attn = _attn_params(m)
    mlp = _mlp_params(m)
    norms = 2 * _norm_params(m)
    if m.experts and m.experts > 1:
        e, k = m.experts, min(m.top_k or 2, m.experts)
        router = (m.hidden or 0) * e  # Mixtral gate: Linear(h, E, bias=False)
        return attn + e * mlp + router + norms, attn + k * mlp + router + norms
    return attn + mlp + norms, attn + mlp + norms


def count_params(m: ResolvedModel) -> tuple[float, float, float]:
    """Exact (total, active, embedding) parameter count from the architecture.

    ``P = V·h·(1 if tied else 2) + L·[attn + m·h·ffn + norms] + final norm`` (research note §3.1);
    plus learned positions / token types / embedding LayerNorm / pooler for BERT-style encoders.
    """
    h, layers = m.hidden or 0, m.layers or 0
    blk_total, blk_active = block_params(m)
    emb, _one = embedding_params(m)
    extra = 0.0
    if m.family == "encoder" and m.type_vocab:
        extra += _norm_params(m)  # BERT embedding LayerNorm; no final norm (post-LN)
    else:
        extra += _norm_params(m)  # final norm (ln_f / model.norm)
    if m.pooler:
        extra += h * h + h  # BERT pooler dense
    total = emb + layers * blk_total + extra
    active = emb + layers * blk_active + extra
    return total, active, emb


def lora_params(m: ResolvedModel, rank: int) -> float:
    """Trainable LoRA parameters on every linear layer: Σ r·(d_in + d_out) (Hu et al. 2021, §4).

    Attention q, k, v, o and the MLP (gate, up, down for SwiGLU; fc1, fc2 for GELU), on every
    expert for MoE. Llama-2-7B, r = 8 → 19.99 M (research note §3.5).
    """
    if not (m.layers and m.hidden):
        return m.params_total * 0.01  # no architecture: ~1 % trainable (stated in assumptions)
    h, a = m.hidden, m.heads or 1
    d = m.head_dim or h // a
    kv = m.kv_heads or a
    f = m.ffn or 4 * h
    attn = rank * ((h + a * d) + 2 * (h + kv * d) + (a * d + h))
    mlp = rank * (3 if m.mlp == "swiglu" else 2) * (h + f)
    per_layer = attn + mlp * (m.experts if m.experts and m.experts > 1 else 1)
    return float(m.layers * per_layer)


def largest_layer_params(m: ResolvedModel) -> float:
    """Largest single module's parameters (ZeRO-3 gather buffer; DeepSpeed estimate_zero3_*)."""
    if m.layers and m.hidden:
        blk, _ = block_params(m)
        _, one = embedding_params(m)
        return max(blk, one)
    return 0.1 * m.params_total


# --------------------------------------------------------------------------------------------------
# Resolution
# --------------------------------------------------------------------------------------------------


def _preset_fields(spec: ModelSpec, catalog: Catalog) -> dict[str, Any]:
    assert spec.preset is not None
    ids = [m.id for m in catalog.models]
    preset = next((m for m in catalog.models if m.id == spec.preset), None)
    if preset is None:
        low = spec.preset.lower()
        preset = next((m for m in catalog.models if m.id.lower() == low or m.name.lower() == low), None)
    if preset is None:
        raise GpuwizError(f"model.preset: unknown preset {spec.preset!r}{did_you_mean(spec.preset, ids)}")
    d = preset.model_dump(exclude={"id", "notes", "as_of"})
    d["preset_params_b"] = d.pop("params_b")
    d["source"] = preset.source
    return {k: v for k, v in d.items() if v is not None}


def resolve_model(spec: ModelSpec, catalog: Catalog) -> ResolvedModel:
    """Fill a ``ResolvedModel`` from a preset, a local HF config and explicit fields (see module doc)."""
    f: dict[str, Any] = {}
    notes: list[str] = []
    if spec.preset:
        f.update(_preset_fields(spec, catalog))
    if spec.hf_config:
        hf = read_hf_config(spec.hf_config)
        if spec.preset:
            hf.pop("name", None)
        f.update(hf)
        f["source"] = f"HF config {spec.hf_config}"
        f.pop("preset_params_b", None)
    ref_resolution = f.get("resolution")  # resolution at which the preset's per-sample figures hold
    explicit = spec.model_dump(exclude={"preset", "hf_config", "resolution"}, exclude_none=True)
    explicit_params_b = explicit.pop("params_b", None)
    arch_overridden = any(k in explicit for k in ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "experts"))
    f.update(explicit)

    if not f and explicit_params_b is None:
        raise GpuwizError(
            "model.preset: no model given (set model.preset, model.hf_config, model.params_b, "
            "or model.layers and model.hidden)"
        )

    family: Family | None = f.get("family")
    if family is None:
        family = "moe" if (f.get("experts") or 1) > 1 else "decoder"
    published_b = explicit_params_b if explicit_params_b is not None else f.get("preset_params_b")
    name = f.get("name") or spec.preset or (f"{published_b:g}B {family}" if published_b else family)

    # Non-token models (CNN, diffusion, and ViT/speech presets given by per-sample figures)
    if family in ("cnn", "diffusion") or (
        family in ("vit", "speech") and f.get("train_gflops_per_sample") and f.get("act_gib_per_sample")
    ):
        missing = [k for k in ("train_gflops_per_sample", "act_gib_per_sample") if not f.get(k)]
        if missing:
            raise GpuwizError(
                f"model.family: a {family} model needs a catalog preset with per-sample figures "
                f"({', '.join(missing)} missing); pick a preset such as a ResNet or Stable Diffusion entry"
            )
        if not published_b:
            raise GpuwizError("model.params_b: a parameter count is needed for this model")
        res = ref_resolution or spec.resolution
        return ResolvedModel(
            name=str(name), family=family, modality=f.get("modality", "image" if family != "speech" else "audio"),
            is_token_model=False, params_total=published_b * 1e9, params_active=published_b * 1e9,
            train_gflops_per_sample=f["train_gflops_per_sample"], act_gib_per_sample=f["act_gib_per_sample"],
            resolution=res, source=f.get("source"), default_micro_batch=f.get("default_micro_batch"),
            notes=(f"{name}: published per-sample figures at {res or '?'} px",),
            **({"seq_len": f["seq_len"]} if f.get("seq_len") else {}),
        )

    layers, hidden = f.get("layers"), f.get("hidden")
    shape_derived = False
    if not (layers and hidden):
        if not published_b:
            absent = "model.hidden" if layers else "model.layers"
            raise GpuwizError(f"{absent}: needed to size the model (or give model.params_b or a preset)")
        # P ≈ 12·L·h² with h = 128·L  →  L = (P / (12·128²))^(1/3)  (Kaplan et al. 2020 §2.1 count)
        p = published_b * 1e9
        if layers and not hidden:
            hidden = max(HEAD_DIM, round(math.sqrt(p / (12 * layers)) / HEAD_DIM) * HEAD_DIM)
        elif hidden and not layers:
            layers = max(1, round(p / (12 * hidden * hidden)))
        else:
            layers = max(2, round((p / (12 * ASPECT * ASPECT)) ** (1 / 3)))
            hidden = max(HEAD_DIM, round(ASPECT * layers / HEAD_DIM) * HEAD_DIM)
        shape_derived = True
        notes.append(f"shape derived from {published_b:g}B parameters: {layers} layers, hidden {hidden} "
                     f"(P ≈ 12·L·h², h = 128·L); parameters taken as given")
    heads = f.get("heads")
    if not heads:
        heads = max(1, hidden // HEAD_DIM) if hidden >= HEAD_DIM else max(1, hidden // 64)
        if not shape_derived:
            notes.append(f"model.heads not given: assumed {heads} (head size 128)")
    mlp: Literal["swiglu", "gelu"] = f.get("mlp") or "gelu"
    ffn = f.get("ffn")
    if not ffn:
        ffn = 4 * hidden if mlp == "gelu" else round(8 * hidden / 3 / 256) * 256 or 4 * hidden
        if not shape_derived:
            notes.append(f"model.ffn not given: assumed {ffn} ({'4h' if mlp == 'gelu' else '8h/3'})")
    vocab = f.get("vocab")
    if not vocab:
        vocab = DEFAULT_VOCAB
        notes.append(f"model.vocab not given: assumed {DEFAULT_VOCAB}")
    seq = f.get("seq_len")
    if not seq:
        seq = DEFAULT_SEQ
        notes.append(f"model.seq_len not given: assumed {DEFAULT_SEQ} tokens")
    experts = f.get("experts")
    top_k = f.get("top_k")
    if experts and experts > 1:
        family = "moe" if family == "decoder" else family
        top_k = min(top_k or 2, experts)

    layout = {k: f[k] for k in _LAYOUT_KEYS if k in f and k != "mlp"}
    if "norm" not in layout and family == "encoder":
        layout["norm"] = "layer"
    # Presets carry no bias / position flags: a LayerNorm model is taken to be GPT-2/BERT/OPT-style
    # (biases on every linear layer, learned absolute positions); RMSNorm models are Llama-style.
    classic = layout.get("norm") == "layer"
    layout.setdefault("bias", classic)
    learned = f.get("learned_positions", classic)
    if learned:
        layout["max_positions"] = int(f.get("max_positions") or seq)
    else:
        layout.pop("max_positions", None)
    if family == "encoder" and "type_vocab" not in f and classic:
        layout["type_vocab"], layout["pooler"] = 2, True

    base = ResolvedModel(
        name=str(name), family=family, modality=f.get("modality", "text"), is_token_model=True,
        params_total=0.0, params_active=0.0, layers=int(layers), hidden=int(hidden), heads=int(heads),
        kv_heads=int(f.get("kv_heads") or heads), ffn=int(ffn), vocab=int(vocab), seq_len=int(seq),
        experts=experts, top_k=top_k, mlp=mlp, source=f.get("source"), resolution=ref_resolution or spec.resolution,
        default_micro_batch=f.get("default_micro_batch"), shape_derived=shape_derived, **layout,
    )
    total, active, emb = count_params(base)
    if shape_derived or explicit_params_b is not None:
        # The user's (or published) figure wins; keep the MoE active share from the architecture.
        assert published_b is not None  # shape_derived needs it; an explicit params_b is it
        given = published_b * 1e9
        active = active * given / total if total else given
        total = given
        if not shape_derived:
            notes.append(f"parameters: {published_b:g}B as given (architecture alone gives "
                         f"{count_params(base)[0] / 1e9:.2f}B)")
    elif published_b and not arch_overridden and abs(total / (published_b * 1e9) - 1) > 0.15:
        notes.append(
            f"parameters: published {published_b:g}B used; the architecture fields give {total / 1e9:.2f}B"
        )
        active = active * published_b * 1e9 / total
        total = published_b * 1e9
    else:
        pub = f" (published {published_b:g}B)" if published_b and not arch_overridden else ""
        notes.append(f"parameters from architecture: {fmt_params(total)}{pub}"
                     + (f", {fmt_params(active)} active per token" if experts and experts > 1 else ""))
    return base.model_copy(update={
        "params_total": float(total), "params_active": float(active), "params_embedding": float(emb),
        "notes": tuple(notes),
    })


def fmt_params(n: float) -> str:
    if n >= 1e9:
        return f"{n / 1e9:.2f}B"
    if n >= 1e6:
        return f"{n / 1e6:.1f}M"
    return f"{n / 1e3:.0f}K"
