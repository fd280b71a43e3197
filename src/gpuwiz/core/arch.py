"""Resolve a ``ModelSpec`` (preset / HF config.json / explicit fields) into a ``ResolvedModel``.

Order of precedence: catalog preset < local HF ``config.json`` < explicit fields in the config.
Parameters are counted exactly from the architecture (GQA, SwiGLU vs GELU MLP, tied or untied
embeddings, norms and biases, MoE total vs active including the router), following the layout of
``NVIDIA/Megatron-LM:megatron/training/theoretical_memory_usage.py`` and the HF model code. The
research note (sizing_formulas_and_peers.md §3.1) checks Llama-2-7B → 6.738 B and 70B → 68.98 B.

Beyond the basic shape, the keys a field-by-field description of a public model needs (docs/LIMITS.md
"Architecture"): the MLP kind (``mlp``; unset, a width other than 4·h on an RMSNorm model means SwiGLU),
``head_dim``, biases (all / attention / q,k,v / MLP), Qwen3 q/k norms, learned positions, BERT token
types and pooler; MoE expert and shared-expert sizes, dense first layers and MoE layer frequency;
DeepSeek MLA ranks and head dims; gpt-oss sinks and router bias. ``tests/core/test_arch_published.py``
checks each public family written out and parsed from its config.json against the published count.

When only ``params_b`` is known, a plausible shape is derived from ``P ≈ 12·L·h²`` with the common
aspect ratio ``h = 128·L`` (GPT-3 175B: 12288 = 128·96; Llama-2-7B: 4096 = 128·32), and the
model says so in ``notes``.
"""

from __future__ import annotations

import math
from typing import Any

from gpuwiz.core.catalog import Catalog, did_you_mean
from gpuwiz.core.errors import GpuwizError
from gpuwiz.core.hf import read_hf_config
from gpuwiz.core.models import Family, Mlp, ModelSpec, ResolvedModel
from gpuwiz.i18n import _

TOKEN_FAMILIES = ("decoder", "encoder", "encoder-decoder", "moe")
IMAGE_FAMILIES = ("cnn", "vit", "diffusion")
DEFAULT_VOCAB = 32_000  # Llama-1/2 tokenizer; used only when nothing else says
DEFAULT_SEQ = 2048
ASPECT = 128  # h / L for shapes derived from params_b (see module docstring)
HEAD_DIM = 128

_ARCH_KEYS = ("layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "seq_len", "experts", "top_k")
_LAYOUT_KEYS = (
    "tied_embeddings", "norm", "bias", "qkv_bias", "head_dim", "max_positions", "type_vocab", "pooler", "mlp",
    "attention_bias", "mlp_bias", "qk_norm", "attention_sinks", "moe_ffn", "shared_experts", "shared_expert_ffn",
    "shared_expert_gate", "router_bias", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
    "v_head_dim", "mtp_layers", "sliding_window",
)
# Keys that change the parameter count (an explicit one means "my architecture", not the preset's figure)
_COUNTED_KEYS = (
    "layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "experts", "top_k", "mlp", "head_dim",
    "tied_embeddings", "norm", "bias", "attention_bias", "qkv_bias", "mlp_bias", "qk_norm", "learned_positions",
    "max_positions", "type_vocab", "pooler", "moe_ffn", "shared_experts", "shared_expert_ffn", "shared_expert_gate",
    "first_k_dense", "moe_layer_freq", "router_bias", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim",
    "qk_rope_head_dim", "v_head_dim", "attention_sinks",
)
_COUNTED = frozenset(_COUNTED_KEYS)
_MOE_ONLY_KEYS = ("moe_ffn", "shared_experts", "shared_expert_ffn", "shared_expert_gate", "first_k_dense",
                  "moe_layer_freq", "router_bias")
_MLA_DIMS = ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")
GATED_MLPS = ("swiglu", "geglu")  # gate, up and down projections (3 matrices)


# --------------------------------------------------------------------------------------------------
# Parameter counting
# --------------------------------------------------------------------------------------------------


def attention_params(m: ResolvedModel) -> float:
    """One layer's attention block.

    Standard / GQA: q, k, v, o projections (Megatron theoretical_memory_usage.py: 2h·h_q + 2h·kv·d), plus
    biases (all four: GPT-2, BERT, gpt-oss ``attention_bias``; q/k/v only: Qwen2 ``qkv_bias``), Qwen3's
    per-head q/k RMSNorm (2·d) and gpt-oss's attention sinks (one logit per head).
    MLA (DeepSeek-V2/V3, transformers/models/deepseek_v3/modeling_deepseek_v3.py): q_a (h·r_q) + its norm
    (r_q) + q_b (r_q·a·(d_nope + d_rope)), or q (h·a·(d_nope + d_rope)) without q compression;
    kv_a (h·(r_kv + d_rope)) + its norm (r_kv) + kv_b (r_kv·a·(d_nope + d_v)); o (a·d_v·h).
    """
    h, a = m.hidden or 0, m.heads or 1
    if m.kv_lora_rank:
        nope, rope, dv = m.qk_nope_head_dim or 0, m.qk_rope_head_dim or 0, m.v_head_dim or 0
        rq, rkv = m.q_lora_rank, m.kv_lora_rank
        q = h * rq + rq + rq * a * (nope + rope) if rq else h * a * (nope + rope)
        kv = h * (rkv + rope) + rkv + rkv * a * (nope + dv)
        p = q + kv + a * dv * h
        if m.bias or m.attention_bias:
            p += a * (nope + rope) + a * (nope + dv) + h
        return float(p + (a if m.attention_sinks else 0))
    d = m.head_dim or h // a
    kv = m.kv_heads or a
    q_out, kv_out = a * d, kv * d
    p = h * q_out + 2 * h * kv_out + q_out * h
    if m.bias or m.attention_bias:
        p += q_out + 2 * kv_out + h
    elif m.qkv_bias:  # Qwen2: q/k/v biases only (transformers/models/qwen2/modeling_qwen2.py)
        p += q_out + 2 * kv_out
    if m.qk_norm:  # Qwen3: q_norm, k_norm = RMSNorm(head_dim)
        p += 2 * d
    if m.attention_sinks:  # gpt-oss: sinks = Parameter(num_attention_heads)
        p += a
    return float(p)


def mlp_params(m: ResolvedModel, width: int | None = None) -> float:
    """One MLP (or one expert) of intermediate size ``width`` (default ``ffn``).

    Gated (SwiGLU, GeGLU): gate, up, down = 3·h·f; GELU: fc1, fc2 = 2·h·f; biases with ``bias`` or
    ``mlp_bias`` (gpt-oss experts: gate_up_proj_bias 2f, down_proj_bias h).
    """
    h = m.hidden or 0
    f = width or m.ffn or 4 * h
    biased = m.bias or m.mlp_bias
    if m.mlp in GATED_MLPS:
        return float(3 * h * f + (2 * f + h if biased else 0))
    return float(2 * h * f + (f + h if biased else 0))


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


def layer_split(m: ResolvedModel) -> tuple[int, int]:
    """(dense layers, MoE layers); falls back to "every layer MoE" for a model built without them."""
    if m.dense_layers or m.moe_layers:
        return m.dense_layers, m.moe_layers
    layers = m.layers or 0
    return (0, layers) if m.experts and m.experts > 1 else (layers, 0)


def moe_block_params(m: ResolvedModel) -> tuple[float, float]:
    """(total, active) of one MoE layer: attention + E routed experts + shared experts + router + 2 norms.

    Router Linear(h, E) (+ E with ``router_bias``); Qwen2-MoE's shared-expert gate Linear(h, 1). Active:
    top_k routed experts, every shared expert, the router.
    """
    e = m.experts or 1
    k = min(m.top_k or 2, e)
    h = m.hidden or 0
    attn, norms = attention_params(m), 2 * _norm_params(m)
    expert = mlp_params(m, m.moe_ffn or m.ffn)
    shared = m.shared_experts * mlp_params(m, m.shared_expert_ffn or m.moe_ffn or m.ffn) if m.shared_experts else 0.0
    router = h * e + (e if m.router_bias else 0) + (h if m.shared_expert_gate else 0)
    fixed = attn + norms + shared + router
    return fixed + e * expert, fixed + k * expert


def block_params(m: ResolvedModel) -> tuple[float, float]:
    """(total, active) parameters of one transformer block: the MoE block when the model has one."""
    if m.experts and m.experts > 1 and layer_split(m)[1]:
        return moe_block_params(m)
    dense = attention_params(m) + mlp_params(m) + 2 * _norm_params(m)
    return dense, dense


def count_params(m: ResolvedModel) -> tuple[float, float, float]:
    """Exact (total, active, embedding) parameter count from the architecture.

    ``P = V·h·(1 if tied else 2) + L_dense·[attn + mlp(ffn) + norms] + L_moe·[attn + experts + shared +
    router + norms] + final norm`` (research note §3.1); plus learned positions / token types / embedding
    LayerNorm / pooler for BERT-style encoders. Active counts both embedding tables (the convention of
    the Mixtral and Qwen3 model cards; gpt-oss's model card leaves the input embedding out).
    DeepSeek-V3's multi-token-prediction module (``mtp_layers``) is not counted, as in the published 671B.
    """
    h = m.hidden or 0
    n_dense, n_moe = layer_split(m)
    dense = attention_params(m) + mlp_params(m) + 2 * _norm_params(m)
    moe_total, moe_active = moe_block_params(m) if n_moe else (0.0, 0.0)
    emb, _one = embedding_params(m)
    extra = float(_norm_params(m))  # final norm (ln_f / model.norm), or BERT's embedding LayerNorm (post-LN)
    if m.pooler:
        extra += h * h + h  # BERT pooler dense
    total = emb + n_dense * dense + n_moe * moe_total + extra
    active = emb + n_dense * dense + n_moe * moe_active + extra
    return total, active, emb


def lora_params(m: ResolvedModel, rank: int) -> float:
    """Trainable LoRA parameters on every linear layer: Σ r·(d_in + d_out) (Hu et al. 2021, §4).

    Attention q, k, v, o (MLA: q_a, q_b, kv_a, kv_b, o) and the MLP (gate, up, down for gated MLPs;
    fc1, fc2 for GELU), on every routed and shared expert for MoE. Llama-2-7B, r = 8 → 19.99 M
    (research note §3.5).
    """
    if not (m.layers and m.hidden):
        return m.params_total * 0.01  # no architecture: ~1 % trainable (stated in assumptions)
    h, a = m.hidden, m.heads or 1
    if m.kv_lora_rank:
        nope, rope, dv = m.qk_nope_head_dim or 0, m.qk_rope_head_dim or 0, m.v_head_dim or 0
        rq, rkv = m.q_lora_rank, m.kv_lora_rank
        q = (h + rq) + (rq + a * (nope + rope)) if rq else h + a * (nope + rope)
        attn = rank * (q + (h + rkv + rope) + (rkv + a * (nope + dv)) + (a * dv + h))
    else:
        d = m.head_dim or h // a
        kv = m.kv_heads or a
        attn = rank * ((h + a * d) + 2 * (h + kv * d) + (a * d + h))
    n_mat = 3 if m.mlp in GATED_MLPS else 2
    n_dense, n_moe = layer_split(m)
    dense = rank * n_mat * (h + (m.ffn or 4 * h))
    total = n_dense * (attn + dense)
    if n_moe:
        per_expert = rank * n_mat * (h + (m.moe_ffn or m.ffn or 4 * h))
        shared = m.shared_experts * rank * n_mat * (h + (m.shared_expert_ffn or m.moe_ffn or m.ffn or 4 * h))
        total += n_moe * (attn + (m.experts or 1) * per_expert + shared)
    return float(total)


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


def _per_sample_note(name: str, res: int | None, estimated: bool) -> str:
    """What a non-token model's per-sample figures are: published or counted by us, at which image size (an audio
    model's sample is a clip: no size)."""
    if res is None:
        return (_("{name}: per-sample figures counted from the architecture (none published)") if estimated
                else _("{name}: published per-sample figures")).format(name=name)
    return (_("{name}: per-sample figures at {res} px counted from the architecture (none published)") if estimated
            else _("{name}: published per-sample figures at {res} px")).format(name=name, res=res)


def _preset_fields(spec: ModelSpec, catalog: Catalog) -> dict[str, Any]:
    assert spec.preset is not None
    preset = next((m for m in catalog.models if m.id == spec.preset), None)
    if preset is None:
        low = spec.preset.lower()
        preset = next((m for m in catalog.models if m.id.lower() == low or m.name.lower() == low), None)
    if preset is None:
        ids = [m.id for m in catalog.models]
        raise GpuwizError(f"model.preset: unknown preset {spec.preset!r}{did_you_mean(spec.preset, ids)}",
                          fields=("model.preset",), reason="not a preset gpuwiz knows")
    d = preset.model_dump(exclude={"id", "notes", "as_of"}, exclude_none=True)
    d["preset_params_b"] = d.pop("params_b")
    d["source"] = preset.source
    return d


def _check_consistency(f: dict[str, Any], layers: int, explicit: set[str]) -> None:
    """Contradictory architecture fields → one line naming the first offending key.

    MoE-only fields inherited from a preset or config.json are dropped when the config turns the experts
    off (``experts: 1``); written in the config itself they are an error.
    """
    experts = f.get("experts") or 1
    if experts <= 1:
        for k in _MOE_ONLY_KEYS:
            if k not in explicit:
                f.pop(k, None)
    if experts > 1:
        if f.get("top_k") and f["top_k"] > experts:
            raise GpuwizError(f"model.top_k: {f['top_k']} experts per token, but model.experts is {experts}",
                              fields=("model.top_k", "model.experts"))
        if (f.get("first_k_dense") or 0) >= layers:
            raise GpuwizError(f"model.first_k_dense: {f['first_k_dense']} dense layers leave no MoE layer "
                              f"(model.layers is {layers})", fields=("model.first_k_dense", "model.layers"))
    else:
        if "top_k" not in explicit:
            f.pop("top_k", None)
        elif f["top_k"] > 1:
            raise GpuwizError(f"model.top_k: {f['top_k']} experts per token, but model.experts is {experts}",
                              fields=("model.top_k", "model.experts"))
        stray = [k for k in _MOE_ONLY_KEYS if f.get(k)]
        if stray:
            raise GpuwizError(f"model.{stray[0]}: only for a mixture of experts (set model.experts above 1)",
                              fields=(f"model.{stray[0]}", "model.experts"))
    if not f.get("shared_experts"):
        stray = [k for k in ("shared_expert_ffn", "shared_expert_gate") if f.get(k)]
        if stray:
            raise GpuwizError(f"model.{stray[0]}: needs model.shared_experts (how many shared experts)",
                              fields=(f"model.{stray[0]}", "model.shared_experts"))
    if f.get("kv_lora_rank"):
        missing = [k for k in _MLA_DIMS if not f.get(k)]
        if missing:
            raise GpuwizError(f"model.{missing[0]}: needed with model.kv_lora_rank (multi-head latent attention)",
                              fields=(f"model.{missing[0]}", "model.kv_lora_rank"))
    else:
        stray = [k for k in ("q_lora_rank", *_MLA_DIMS) if f.get(k)]
        if stray:
            raise GpuwizError(f"model.{stray[0]}: multi-head latent attention also needs model.kv_lora_rank",
                              fields=(f"model.{stray[0]}", "model.kv_lora_rank"))
    if f.get("sliding_layers") is not None:
        if not f.get("sliding_window"):
            raise GpuwizError("model.sliding_layers: needs model.sliding_window (the window in tokens)",
                              fields=("model.sliding_layers", "model.sliding_window"))
        if f["sliding_layers"] > layers:
            raise GpuwizError(f"model.sliding_layers: {f['sliding_layers']} windowed layers, more than "
                              f"model.layers ({layers})", fields=("model.sliding_layers", "model.layers"))
    heads, kv = f.get("heads"), f.get("kv_heads")
    if heads and kv and kv > heads:
        raise GpuwizError(f"model.kv_heads: {kv} key/value heads, more than model.heads ({heads})",
                          fields=("model.kv_heads", "model.heads"))


def resolve_model(spec: ModelSpec, catalog: Catalog) -> ResolvedModel:
    """Fill a ``ResolvedModel`` from a preset, a local HF config and explicit fields (see module doc)."""
    f: dict[str, Any] = {}
    notes: list[str] = []
    if spec.preset:
        f.update(_preset_fields(spec, catalog))
    if spec.hf_config:
        try:
            hf = read_hf_config(spec.hf_config)
        except GpuwizError as exc:  # every problem of the file is about this one field
            exc.fields = exc.fields or ("model.hf_config",)
            exc.reason = exc.reason or "cannot use this config.json: " + str(exc).removeprefix("model.hf_config: ")
            raise
        if spec.preset:
            hf.pop("name", None)
        f.update(hf)
        f["source"] = f"HF config {spec.hf_config}"
        f.pop("preset_params_b", None)
    ref_resolution = f.get("resolution")  # resolution at which the preset's per-sample figures hold
    explicit = spec.model_dump(exclude={"preset", "hf_config", "resolution"}, exclude_none=True)
    explicit_params_b = explicit.pop("params_b", None)
    arch_overridden = not _COUNTED.isdisjoint(explicit)
    f.update(explicit)

    if not f and explicit_params_b is None:
        raise GpuwizError(
            "model.preset: " + _("no model given (set model.preset, model.hf_config, model.params_b, "
                                 "or model.layers and model.hidden)"),
            fields=("model.preset", "model.params_b", "model.layers"),
            reason=_("needed: a model (a preset, a parameter count, or layers and hidden size)"),
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
                f"({', '.join(missing)} missing); pick a preset such as a ResNet or Stable Diffusion entry",
                fields=("model.family", "model.preset"),
                reason=f"a {family} model is sized from a preset's per-sample figures: pick a preset "
                       "(e.g. a ResNet or Stable Diffusion)",
            )
        if not published_b:
            raise GpuwizError("model.params_b: a parameter count is needed for this model", fields=("model.params_b",),
                              reason="needed: the parameter count of this model")
        res = ref_resolution or spec.resolution
        return ResolvedModel(
            name=str(name), family=family, modality=f.get("modality", "image" if family != "speech" else "audio"),
            is_token_model=False, params_total=published_b * 1e9, params_active=published_b * 1e9,
            train_gflops_per_sample=f["train_gflops_per_sample"], act_gib_per_sample=f["act_gib_per_sample"],
            per_sample_basis=f.get("per_sample_basis", "published"),
            resolution=res, source=f.get("source"), default_micro_batch=f.get("default_micro_batch"),
            vision=f.get("vision"),
            notes=(_per_sample_note(str(name), res, f.get("per_sample_basis") == "estimate"),),
            **({"seq_len": f["seq_len"]} if f.get("seq_len") else {}),
        )

    layers, hidden = f.get("layers"), f.get("hidden")
    shape_derived = False
    if not (layers and hidden):
        if not published_b:
            absent = "model.hidden" if layers else "model.layers"
            raise GpuwizError(f"{absent}: needed to size the model (or give model.params_b or a preset)",
                              fields=(absent, "model.params_b"),
                              reason="needed to size the model (or give the parameter count, or a preset)")
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
        notes.append(_("shape derived from {b:g}B parameters: {layers} layers, hidden {hidden} (P ≈ 12·L·h², "
                       "h = 128·L); parameters taken as given").format(b=published_b, layers=layers, hidden=hidden))
    heads = f.get("heads")
    if not heads:
        heads = max(1, hidden // HEAD_DIM) if hidden >= HEAD_DIM else max(1, hidden // 64)
        if not shape_derived:
            notes.append(_("model.heads not given: assumed {heads} (head size 128)").format(heads=heads))
    _check_consistency(f, int(layers), set(explicit))
    classic_hint = f.get("norm") == "layer" or family == "encoder" or bool(f.get("bias") or f.get("learned_positions"))
    mlp: Mlp | None = f.get("mlp")
    ffn = f.get("ffn")
    if not mlp:
        # GELU MLPs are 4·h wide (GPT-2/3, BERT, OPT, Falcon, MPT); gated ones are not (Llama 8h/3 rounded,
        # Mistral 3.5h, Llama 3.1 405B 3.25h), so a width other than 4·h on a modern decoder means SwiGLU.
        gated = bool(ffn) and ffn != 4 * hidden and not classic_hint and not shape_derived
        mlp = "swiglu" if gated else "gelu"
        if ffn and not shape_derived:
            hint = _("set model.mlp: gelu if that is wrong") if gated else _("set model.mlp: swiglu for Llama-style")
            notes.append(_("model.mlp not given: assumed {mlp} (ffn = {x:.2f} x hidden; {hint})").format(
                mlp=mlp, x=ffn / hidden, hint=hint))
        elif not shape_derived and not classic_hint:
            notes.append(_("model.mlp not given: assumed gelu (set model.mlp: swiglu for Llama-style models)"))
    experts = f.get("experts")
    top_k = f.get("top_k")
    is_moe = bool(experts and experts > 1)
    moe_ffn = f.get("moe_ffn")
    if not ffn:
        if is_moe and moe_ffn:
            ffn = moe_ffn
        else:
            ffn = 4 * hidden if mlp == "gelu" else round(8 * hidden / 3 / 256) * 256 or 4 * hidden
            if not shape_derived:
                notes.append(_("model.ffn not given: assumed {ffn} ({rule})").format(
                    ffn=ffn, rule="4h" if mlp == "gelu" else "8h/3"))
    vocab = f.get("vocab")
    if not vocab:
        vocab = DEFAULT_VOCAB
        notes.append(_("model.vocab not given: assumed {vocab}").format(vocab=DEFAULT_VOCAB))
    seq = f.get("seq_len")
    if not seq:
        seq = DEFAULT_SEQ
        notes.append(_("model.seq_len not given: assumed {seq} tokens").format(seq=DEFAULT_SEQ))
    if family == "moe" and not is_moe and spec.family != "moe":
        family = "decoder"  # a preset's / config.json's MoE with its experts switched off
    n_moe = 0
    if is_moe:
        family = "moe" if family == "decoder" else family
        if not top_k:
            top_k = 2
            notes.append(_("model.top_k not given: assumed 2 experts per token"))
        k_dense, freq = int(f.get("first_k_dense") or 0), int(f.get("moe_layer_freq") or 1)
        n_moe = int(layers) // freq - k_dense // freq  # layers i in [k_dense, layers) with (i + 1) % freq == 0
        if n_moe == 0:
            raise GpuwizError(f"model.moe_layer_freq: with {layers} layers, first_k_dense {k_dense} and "
                              f"moe_layer_freq {freq} no layer has experts")

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
        layout["type_vocab"] = 2
        layout.setdefault("pooler", True)
    if f.get("kv_lora_rank"):  # MLA: q·k width per head (rotary part included)
        layout["head_dim"] = int(f["qk_nope_head_dim"]) + int(f["qk_rope_head_dim"])
    else:
        layout["head_dim"] = int(f.get("head_dim") or max(1, int(hidden) // int(heads)))
    if is_moe:
        layout["moe_ffn"] = int(moe_ffn or ffn)
        if n_moe == int(layers):
            ffn = layout["moe_ffn"]  # no dense layer: ffn is the one MLP width there is (Mixtral's meaning)
        if layout.get("shared_experts"):
            layout["shared_expert_ffn"] = int(f.get("shared_expert_ffn") or layout["moe_ffn"])
    if layout.get("sliding_window"):
        layout["sliding_layers"] = int(f["sliding_layers"] if f.get("sliding_layers") is not None else layers)
    for k in ("moe_ffn", "shared_expert_ffn"):
        if not is_moe or (k == "shared_expert_ffn" and not layout.get("shared_experts")):
            layout.pop(k, None)

    base = ResolvedModel(
        name=str(name), family=family, modality=f.get("modality", "text"), is_token_model=True,
        params_total=0.0, params_active=0.0, layers=int(layers), hidden=int(hidden), heads=int(heads),
        kv_heads=int(f.get("kv_heads") or heads), ffn=int(ffn), vocab=int(vocab), seq_len=int(seq),
        experts=experts, top_k=top_k, mlp=mlp, source=f.get("source"), resolution=ref_resolution or spec.resolution,
        default_micro_batch=f.get("default_micro_batch"), shape_derived=shape_derived,
        dense_layers=int(layers) - n_moe, moe_layers=n_moe, **layout,
    )
    per_layer = {
        "params_attention": attention_params(base),
        "params_dense_mlp": mlp_params(base) if base.dense_layers else 0.0,
        "params_expert": mlp_params(base, base.moe_ffn) if n_moe else 0.0,
    }
    total, active, emb = count_params(base)
    if base.mtp_layers:
        notes.append((_("{n} multi-token-prediction module not counted in the parameters (as in the published "
                        "total); each adds about one MoE layer when trained") if base.mtp_layers == 1 else
                      _("{n} multi-token-prediction modules not counted in the parameters (as in the published "
                        "total); each adds about one MoE layer when trained")).format(n=base.mtp_layers))
    if shape_derived or explicit_params_b is not None:
        # The user's (or published) figure wins; keep the MoE active share from the architecture.
        assert published_b is not None  # shape_derived needs it; an explicit params_b is it
        given = published_b * 1e9
        active = active * given / total if total else given
        total = given
        if not shape_derived:
            notes.append(_("parameters: {b:g}B as given (architecture alone gives {arch:.2f}B)").format(
                b=published_b, arch=count_params(base)[0] / 1e9))
    elif published_b and not arch_overridden and abs(total / (published_b * 1e9) - 1) > 0.15:
        notes.append(_("parameters: published {b:g}B used; the architecture fields give {arch:.2f}B").format(
            b=published_b, arch=total / 1e9))
        active = active * published_b * 1e9 / total
        total = published_b * 1e9
    else:
        pub = (_(" (published {b:g}B)").format(b=published_b) if published_b and not arch_overridden else "")
        notes.append(_("parameters from architecture: {n}{published}").format(n=fmt_params(total), published=pub)
                     + (_(", {n} active per token").format(n=fmt_params(active)) if experts and experts > 1 else ""))
    return base.model_copy(update={
        "params_total": float(total), "params_active": float(active), "params_embedding": float(emb),
        "notes": tuple(notes), **per_layer,
    })


def fmt_params(n: float) -> str:
    if n >= 1e9:
        return f"{n / 1e9:.2f}B"
    if n >= 1e6:
        return f"{n / 1e6:.1f}M"
    return f"{n / 1e3:.0f}K"
