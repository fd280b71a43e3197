"""Read a local Hugging Face ``config.json`` into architecture fields (no network, no transformers).

Supported shapes (key names as written by ``transformers``):

* Llama / Mistral / Qwen2 (``LlamaConfig``, ``MistralConfig``, ``Qwen2Config``): ``num_hidden_layers``,
  ``hidden_size``, ``num_attention_heads``, ``num_key_value_heads``, ``intermediate_size``,
  ``vocab_size``, ``max_position_embeddings``, ``tie_word_embeddings``, ``head_dim``; SiLU-gated MLP
  (SwiGLU), RMSNorm, no biases except Qwen2's q/k/v projections.
* Mixtral (``MixtralConfig``): as Llama plus ``num_local_experts`` and ``num_experts_per_tok``.
* GPT-2 (``GPT2Config``): ``n_layer``, ``n_embd``, ``n_head``, ``n_inner`` (None = 4 h),
  ``n_positions`` (learned position embeddings), tied embeddings, LayerNorm, biases everywhere.
* BERT (``BertConfig``): ``num_hidden_layers`` ... ``max_position_embeddings`` (learned),
  ``type_vocab_size``, tied MLM head, LayerNorm, biases, pooler.

The result is a plain dict of ``ModelSpec``-style fields plus layout flags that ``core.arch``
understands (``tied_embeddings``, ``norm``, ``bias``, ``qkv_bias``, ``learned_positions``,
``type_vocab``, ``head_dim``, ``max_positions``). Results are cached by (path, mtime).
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from typing import Any

from gpuwiz.core.errors import GpuwizError

FIELD = "model.hf_config"

_SWIGLU_ACTS = {"silu", "swish", "swiglu"}
_MOE_EXPERT_KEYS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")
_MOE_TOPK_KEYS = ("num_experts_per_tok", "moe_top_k", "top_k")


def read_hf_config(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Architecture fields from a local config.json (or a folder holding one). Cached by mtime."""
    p = os.fspath(path)
    if os.path.isdir(p):
        p = os.path.join(p, "config.json")
    try:
        mtime = os.stat(p).st_mtime_ns
    except OSError as exc:
        raise GpuwizError(f"{FIELD}: cannot read {p!r}: {exc.strerror or exc}") from None
    return dict(_read_cached(p, mtime))


@lru_cache(maxsize=64)
def _read_cached(path: str, mtime: int) -> dict[str, Any]:  # mtime: only the cache key (a changed file reloads)
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        raise GpuwizError(f"{FIELD}: cannot read {path!r}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise GpuwizError(f"{FIELD}: {path!r} is not a UTF-8 text file") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise GpuwizError(f"{FIELD}: {path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise GpuwizError(f"{FIELD}: {path}: a config.json must hold a JSON object")
    # Multimodal wrappers (e.g. Llava) keep the language model under text_config.
    if "hidden_size" not in data and "n_embd" not in data and isinstance(data.get("text_config"), dict):
        data = {**data["text_config"], "model_type": data["text_config"].get("model_type", data.get("model_type"))}
    return parse_hf_config(data, path)


def _int(data: dict[str, Any], path: str, *keys: str, required: bool = True) -> int | None:
    for k in keys:
        v = data.get(k)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v <= 0 or int(v) != v:
            raise GpuwizError(f"{FIELD}: {path}: {k} must be a positive whole number, got {v!r}")
        return int(v)
    if required:
        raise GpuwizError(f"{FIELD}: {path}: missing {' / '.join(keys)}")
    return None


def parse_hf_config(data: dict[str, Any], path: str = "config.json") -> dict[str, Any]:
    """Map a config.json dict to architecture fields (see module docstring)."""
    mtype = str(data.get("model_type") or "").lower()
    archs = " ".join(str(a) for a in data.get("architectures") or []).lower()
    out: dict[str, Any] = {}
    name = data.get("_name_or_path") or (data.get("architectures") or [None])[0] or mtype or "hf-model"
    out["name"] = str(name)

    if mtype == "gpt2" or ("n_embd" in data and "n_layer" in data):
        # GPT-2: transformers/models/gpt2/configuration_gpt2.py
        h = _int(data, path, "n_embd")
        out.update(
            family="decoder",
            layers=_int(data, path, "n_layer"),
            hidden=h,
            heads=_int(data, path, "n_head"),
            vocab=_int(data, path, "vocab_size"),
            max_positions=_int(data, path, "n_positions", "n_ctx", required=False) or 1024,
            mlp="gelu",
            norm="layer",
            bias=True,
            tied_embeddings=bool(data.get("tie_word_embeddings", True)),
            learned_positions=True,
        )
        out["ffn"] = _int(data, path, "n_inner", required=False) or 4 * (h or 0)
        out["kv_heads"] = out["heads"]
        out["seq_len"] = out["max_positions"]
        return out

    if mtype in ("bert", "roberta", "xlm-roberta", "distilbert") or "bertfor" in archs or "bertmodel" in archs:
        # BERT: transformers/models/bert/configuration_bert.py
        heads = _int(data, path, "num_attention_heads", "n_heads")
        out.update(
            family="encoder",
            layers=_int(data, path, "num_hidden_layers", "n_layers"),
            hidden=_int(data, path, "hidden_size", "dim"),
            heads=heads,
            kv_heads=heads,
            ffn=_int(data, path, "intermediate_size", "hidden_dim"),
            vocab=_int(data, path, "vocab_size"),
            max_positions=_int(data, path, "max_position_embeddings", required=False) or 512,
            type_vocab=_int(data, path, "type_vocab_size", required=False) or (0 if mtype == "distilbert" else 2),
            mlp="gelu",
            norm="layer",
            bias=True,
            tied_embeddings=bool(data.get("tie_word_embeddings", True)),
            learned_positions=True,
            pooler=mtype != "distilbert",
        )
        out["seq_len"] = min(out["max_positions"], 512)
        return out

    # Llama family (Llama, Mistral, Qwen2, Mixtral and look-alikes)
    heads = _int(data, path, "num_attention_heads")
    act = str(data.get("hidden_act") or data.get("hidden_activation") or "silu").lower()
    max_pos = _int(data, path, "max_position_embeddings", "seq_length", required=False)
    out.update(
        family="decoder",
        layers=_int(data, path, "num_hidden_layers"),
        hidden=_int(data, path, "hidden_size"),
        heads=heads,
        kv_heads=_int(data, path, "num_key_value_heads", required=False) or heads,
        ffn=_int(data, path, "intermediate_size"),
        vocab=_int(data, path, "vocab_size"),
        head_dim=_int(data, path, "head_dim", required=False),
        mlp="swiglu" if act in _SWIGLU_ACTS or "gated" in act else "gelu",
        norm="rms" if ("rms_norm_eps" in data or "rms" in str(data.get("norm_type", "")).lower()) else "layer",
        bias=bool(data.get("mlp_bias", False)) and bool(data.get("attention_bias", False)),
        qkv_bias=mtype.startswith("qwen2") or bool(data.get("attention_bias", False)),
        tied_embeddings=bool(data.get("tie_word_embeddings", False)),
        learned_positions=False,
        max_positions=max_pos,
    )
    experts = None
    for k in _MOE_EXPERT_KEYS:
        if data.get(k):
            experts = _int(data, path, k)
            break
    if experts and experts > 1:
        top_k = None
        for k in _MOE_TOPK_KEYS:
            if data.get(k):
                top_k = _int(data, path, k)
                break
        out.update(family="moe", experts=experts, top_k=top_k or 2)
        moe_ffn = _int(data, path, "moe_intermediate_size", required=False)
        if moe_ffn:
            out["ffn"] = moe_ffn
    if max_pos:
        out["seq_len"] = min(max_pos, 4096)
    return out
