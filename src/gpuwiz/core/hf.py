"""Read a local Hugging Face ``config.json`` into architecture fields (no network, no transformers).

Supported shapes (key names as written by ``transformers``):

* Llama / Mistral / Qwen2 (``LlamaConfig``, ``MistralConfig``, ``Qwen2Config``): ``num_hidden_layers``,
  ``hidden_size``, ``num_attention_heads``, ``num_key_value_heads``, ``intermediate_size``,
  ``vocab_size``, ``max_position_embeddings``, ``tie_word_embeddings``, ``head_dim``; SiLU-gated MLP
  (SwiGLU), RMSNorm, no biases except Qwen2's q/k/v projections.
* Mixtral (``MixtralConfig``): as Llama plus ``num_local_experts`` and ``num_experts_per_tok``.
* Qwen2-MoE / Qwen3-MoE: ``num_experts``, ``moe_intermediate_size`` (one expert), Qwen2-MoE's
  ``shared_expert_intermediate_size`` (one gated shared expert), ``decoder_sparse_step`` and
  ``mlp_only_layers`` (dense layers, modelled when they are the first ones); Qwen3 q/k RMSNorm.
* DeepSeek-V2/V3: ``n_routed_experts``, ``n_shared_experts`` (each ``moe_intermediate_size`` wide),
  ``first_k_dense_replace`` (dense layers of ``intermediate_size``), ``moe_layer_freq`` (1 only), MLA
  (``q_lora_rank`` — null = direct q — ``kv_lora_rank``, ``qk_nope_head_dim``, ``qk_rope_head_dim``,
  ``v_head_dim``), ``num_nextn_predict_layers`` (MTP modules, reported, not counted).
* gpt-oss (``GptOssConfig``): ``num_local_experts``, ``experts_per_token`` / ``num_experts_per_tok``,
  ``attention_bias`` (q, k, v, o), attention sinks, biased experts and router.
* Sliding-window attention: ``sliding_window`` on every layer (Mistral v0.1), or on the layers that
  ``layer_types`` marks ``sliding_attention`` (gpt-oss); off when ``use_sliding_window`` is false (Qwen2).
* Contradictions (top-k above the expert count, two top-k keys that disagree, MoE sizes without
  experts, MLA dims without ``kv_lora_rank``, an unknown ``hidden_act``) → one line naming file and key.
* GPT-2 (``GPT2Config``): ``n_layer``, ``n_embd``, ``n_head``, ``n_inner`` (None = 4 h),
  ``n_positions`` (learned position embeddings), tied embeddings, LayerNorm, biases everywhere.
* BERT (``BertConfig``): ``num_hidden_layers`` ... ``max_position_embeddings`` (learned),
  ``type_vocab_size``, tied MLM head, LayerNorm, biases, pooler.

The result is a plain dict of ``ModelSpec``-style fields plus layout flags that ``core.arch``
understands (``tied_embeddings``, ``norm``, ``bias``, ``qkv_bias``, ``learned_positions``,
``type_vocab``, ``head_dim``, ``max_positions``). Results are cached by (path, mtime).
"""

from __future__ import annotations

import errno
import json
import math
import os
from functools import lru_cache
from typing import Any

from gpuwiz.core.errors import GpuwizError, printable
from gpuwiz.core.yamlio import decode_utf8, read_file_bytes

FIELD = "model.hf_config"

_SWIGLU_ACTS = {"silu", "swish", "swiglu"}
_GELU_ACTS = {"gelu", "gelu_new", "gelu_fast", "gelu_pytorch_tanh", "gelu_python", "quick_gelu", "relu", "gelu_10"}
_MOE_EXPERT_KEYS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")
_MOE_TOPK_KEYS = ("num_experts_per_tok", "experts_per_token", "moe_top_k")
# Structures whose parameters this parser would miscount: refused by name rather than guessed
_UNMODELLED_KEYS = (
    ("intermediate_size_mlp", "Llama 4's separate dense-layer width"),
    ("ffn_config", "DBRX's nested MoE block"),
    ("attn_layer_period", "Jamba's attention/Mamba interleave"),
    ("layers_block_type", "a hybrid Mamba/attention stack"),
    ("hybrid_override_pattern", "a hybrid Mamba/attention stack"),
    ("o_lora_rank", "a low-rank output projection"),
)
# MoE structure keys that mean nothing without routed experts
_MOE_ONLY_KEYS = ("moe_intermediate_size", "n_shared_experts", "shared_expert_intermediate_size",
                  "first_k_dense_replace")


MAX_HF_CONFIG_BYTES = 4_000_000  # real config.json files are 1-10 KB; the largest seen ~100 KB
MAX_HF_DEPTH = 32  # real files nest 2-3 levels (text_config, rope_scaling, quantization_config)
MAX_HF_DIGITS = 18  # integers past 1e18 are no architecture figure (and would overflow floats)


def read_hf_config(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Architecture fields from a local config.json (or a folder holding one). Cached by mtime.

    The file goes through the one safe reader (regular files only, size-capped, strict UTF-8), and
    the JSON is checked before it is mapped: no NaN / Infinity, no huge integers, bounded nesting,
    no control characters in strings, ``architectures`` a list of names.
    """
    p = os.path.expanduser(os.fspath(path))
    if "\x00" in p:
        raise GpuwizError(f"{FIELD}: {printable(p)!s}: not a valid file name (contains a NUL character)")
    try:
        if os.path.isdir(p):
            p = os.path.join(p, "config.json")
        st = os.stat(p)
        key = (st.st_mtime_ns, st.st_size, st.st_ino)
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            raise GpuwizError(f"{FIELD}: {printable(p[:60])}...: file name too long") from None
        if isinstance(exc, FileNotFoundError):
            parent = os.path.dirname(p) or "."
            if p.startswith("~"):
                user = p.split("/")[0]
                raise GpuwizError(f"{FIELD}: cannot read {p!r}: no such file (unknown user in {user!r})") from None
            if not os.path.isdir(parent):
                raise GpuwizError(
                    f"{FIELD}: cannot read {p!r}: no such file (folder {printable(parent)} does not exist)") from None
            raise GpuwizError(f"{FIELD}: cannot read {p!r}: no such file") from None
        raise GpuwizError(f"{FIELD}: cannot read {printable(p)!r}: {exc.strerror or exc}") from None
    return dict(_read_cached(p, key))


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number a config.json may hold")


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_HF_DIGITS:
        raise ValueError(f"integer {text[:20]}... has {len(text)} digits")
    return int(text)


def _finite_float(text: str) -> float:
    v = float(text)
    if not math.isfinite(v):
        raise ValueError(f"number {text[:20]} is out of range")
    return v


def _check_json(value: Any, where: str, depth: int = 0) -> None:
    if depth > MAX_HF_DEPTH:
        raise ValueError(f"nested more than {MAX_HF_DEPTH} levels deep")
    if isinstance(value, dict):
        for k, v in value.items():
            _check_json(k, where, depth + 1)
            _check_json(v, f"{where}.{k}" if where else str(k), depth + 1)
    elif isinstance(value, list):
        for v in value:
            _check_json(v, where, depth + 1)
    elif isinstance(value, str):
        if len(value) > 10_000:
            raise ValueError(f"{where or 'a key'}: a string of {len(value)} characters")
        if not value.isprintable():
            bad = next(ch for ch in value if not ch.isprintable())
            raise ValueError(f"{where or 'a key'}: contains the control character {bad!a}")


@lru_cache(maxsize=64)
def _read_cached(path: str, key: tuple[int, int, int]) -> dict[str, Any]:  # key: mtime, size, inode (a change reloads)
    shown = printable(path)
    try:
        raw = read_file_bytes(path, max_bytes=MAX_HF_CONFIG_BYTES, what="config.json")
        text = decode_utf8(raw, path, what="JSON")
    except GpuwizError as exc:
        raise GpuwizError(f"{FIELD}: {exc}") from None
    try:
        data = json.loads(text, parse_constant=_no_constant, parse_int=_bounded_int, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        raise GpuwizError(f"{FIELD}: {shown}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    except RecursionError:
        raise GpuwizError(f"{FIELD}: {shown}: JSON nested too deeply") from None
    except ValueError as exc:
        raise GpuwizError(f"{FIELD}: {shown}: {printable(str(exc))}") from None
    if not isinstance(data, dict):
        raise GpuwizError(f"{FIELD}: {shown}: a config.json must hold a JSON object")
    try:
        _check_json(data, "")
    except ValueError as exc:
        raise GpuwizError(f"{FIELD}: {shown}: {printable(str(exc))}") from None
    except RecursionError:
        raise GpuwizError(f"{FIELD}: {shown}: JSON nested too deeply") from None
    # Multimodal wrappers (e.g. Llava) keep the language model under text_config.
    if "hidden_size" not in data and "n_embd" not in data and isinstance(data.get("text_config"), dict):
        data = {**data["text_config"], "model_type": data["text_config"].get("model_type", data.get("model_type"))}
    _check_shape(data, shown)
    return parse_hf_config(data, path)


def _check_shape(data: dict[str, Any], shown: str) -> None:
    """The few keys parse_hf_config reads as names must have the types transformers writes."""
    archs = data.get("architectures")
    if archs is not None and (not isinstance(archs, list) or not all(isinstance(a, str) for a in archs)):
        raise GpuwizError(f"{FIELD}: {shown}: architectures must be a list of class names "
                          f"(got {type(archs).__name__})")
    for k in ("model_type", "_name_or_path", "hidden_act", "hidden_activation", "norm_type"):
        v = data.get(k)
        if v is not None and not isinstance(v, str):
            raise GpuwizError(f"{FIELD}: {shown}: {k} must be a string (got {type(v).__name__})")
        if isinstance(v, str) and len(v) > 200:
            raise GpuwizError(f"{FIELD}: {shown}: {k} is {len(v)} characters long (at most 200)")


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

    # Llama family and its descendants: Llama, Mistral, Mixtral, Qwen2/2.5/3 (+ MoE), DeepSeek-V2/V3, gpt-oss
    for key, what in _UNMODELLED_KEYS:
        if data.get(key) is not None:
            raise GpuwizError(f"{FIELD}: {path}: {key} ({what}) is not modelled; describe the model field by "
                              "field instead (docs/LIMITS.md, Architecture)")
    heads = _int(data, path, "num_attention_heads")
    layers = _int(data, path, "num_hidden_layers")
    assert layers is not None
    hidden = _int(data, path, "hidden_size")
    act_key = "hidden_act" if "hidden_act" in data else "hidden_activation"
    act = str(data.get(act_key) or "silu").lower()
    if act in _SWIGLU_ACTS or "gated" in act or "glu" in act:
        mlp = "geglu" if "gelu" in act else "swiglu"
    elif act in _GELU_ACTS:
        # Gemma checkpoints name a gated GELU MLP "gelu_pytorch_tanh" (gate, up, down)
        mlp = "geglu" if mtype.startswith("gemma") else "gelu"
    else:
        raise GpuwizError(f"{FIELD}: {path}: {act_key} {act!r} is not an activation gpuwiz knows "
                          f"(silu/swiglu for gated MLPs, gelu variants, relu)")
    max_pos = _int(data, path, "max_position_embeddings", "seq_length", required=False)
    attention_bias = _bool(data, path, "attention_bias")
    out.update(
        family="decoder",
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=_int(data, path, "num_key_value_heads", required=False) or heads,
        ffn=_int(data, path, "intermediate_size"),
        vocab=_int(data, path, "vocab_size"),
        mlp=mlp,
        norm="rms" if ("rms_norm_eps" in data or "rms" in str(data.get("norm_type", "")).lower()) else "layer",
        bias=False,
        # transformers Llama/Mistral/gpt-oss: attention_bias puts a bias on q, k, v and o
        attention_bias=attention_bias,
        # Qwen2 / Qwen2.5 / Qwen2-MoE / Qwen2-VL: q, k, v biases, no o bias (modeling_qwen2.py)
        qkv_bias=mtype.startswith("qwen2") and not attention_bias,
        mlp_bias=_bool(data, path, "mlp_bias") or mtype == "gpt_oss",  # gpt-oss experts carry biases
        qk_norm=mtype in ("qwen3", "qwen3_moe"),  # q_norm / k_norm = RMSNorm(head_dim)
        attention_sinks=mtype == "gpt_oss",
        tied_embeddings=_bool(data, path, "tie_word_embeddings"),
        learned_positions=False,
        max_positions=max_pos,
    )
    head_dim = _int(data, path, "head_dim", required=False)
    kv_lora = _int(data, path, "kv_lora_rank", required=False)
    if kv_lora:
        # DeepSeek-V2/V3 multi-head latent attention (configuration_deepseek_v3.py); transformers writes a
        # head_dim (= qk_rope_head_dim) that MLA does not use as the q·k width
        out.update(
            kv_lora_rank=kv_lora,
            q_lora_rank=_int(data, path, "q_lora_rank", required=False),
            qk_nope_head_dim=_int(data, path, "qk_nope_head_dim"),
            qk_rope_head_dim=_int(data, path, "qk_rope_head_dim"),
            v_head_dim=_int(data, path, "v_head_dim"),
        )
    elif head_dim:
        out["head_dim"] = head_dim
    else:
        stray = [k for k in ("q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim") if data.get(k)]
        if stray:
            raise GpuwizError(f"{FIELD}: {path}: {stray[0]} is set but kv_lora_rank is not "
                              "(multi-head latent attention needs both)")
    # Sliding-window attention: Mistral v0.1 on every layer; gpt-oss / Gemma on the layers layer_types marks;
    # Qwen2 writes a window but switches it off (use_sliding_window false)
    window = _int(data, path, "sliding_window", required=False)
    if window and data.get("use_sliding_window") is not False:
        kinds = data.get("layer_types")
        if kinds is not None:
            if not isinstance(kinds, list) or len(kinds) != layers:
                raise GpuwizError(f"{FIELD}: {path}: layer_types must list one attention kind per layer "
                                  f"({layers})")
            n_window = sum(1 for t in kinds if t == "sliding_attention")
        else:
            n_window = layers
        if n_window:
            out.update(sliding_window=window, sliding_layers=n_window)
    mtp = _count(data, path, "num_nextn_predict_layers")
    if mtp:
        out["mtp_layers"] = mtp
    out.update(_parse_moe(data, path, mtype, layers))
    if max_pos:
        out["seq_len"] = min(max_pos, 4096)
    return out


def _count(data: dict[str, Any], path: str, key: str) -> int:
    """A whole number that may be 0 (shared experts, dense first layers, MTP modules); absent = 0."""
    v = data.get(key)
    if v is None:
        return 0
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 or int(v) != v:
        raise GpuwizError(f"{FIELD}: {path}: {key} must be a whole number, 0 or more, got {v!r}")
    return int(v)


def _bool(data: dict[str, Any], path: str, key: str) -> bool:
    v = data.get(key)
    if v is None:
        return False
    if not isinstance(v, bool):
        raise GpuwizError(f"{FIELD}: {path}: {key} must be true or false, got {v!r}")
    return v


def _first_key(data: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    return next((k for k in keys if data.get(k) is not None), None)


def _parse_moe(data: dict[str, Any], path: str, mtype: str, layers: int) -> dict[str, Any]:
    """MoE fields: experts, top_k, expert / shared-expert sizes, which layers are MoE (see module doc)."""
    ekey = _first_key(data, _MOE_EXPERT_KEYS)
    dense_marker = ekey is not None and data[ekey] in (0, 1) and not isinstance(data[ekey], bool)
    experts = None if ekey is None or dense_marker else _int(data, path, ekey)
    if not experts or experts <= 1:
        stray = [k for k in _MOE_ONLY_KEYS if data.get(k)]
        if stray and not dense_marker:
            raise GpuwizError(f"{FIELD}: {path}: {stray[0]} is set but the config has no routed experts "
                              f"({' / '.join(_MOE_EXPERT_KEYS)})")
        return {}
    kkey = _first_key(data, _MOE_TOPK_KEYS)
    if kkey is None:
        raise GpuwizError(f"{FIELD}: {path}: {ekey} is {experts} but {' / '.join(_MOE_TOPK_KEYS)} is missing")
    top_k = _int(data, path, kkey)
    assert top_k is not None
    if top_k > experts:
        raise GpuwizError(f"{FIELD}: {path}: {kkey} {top_k} is more than {ekey} {experts}")
    other = _first_key(data, tuple(k for k in _MOE_TOPK_KEYS if k != kkey))
    if other and data[other] != top_k:
        raise GpuwizError(f"{FIELD}: {path}: {other} {data[other]!r} contradicts {kkey} {top_k}")
    out: dict[str, Any] = {"family": "moe", "experts": experts, "top_k": top_k}
    moe_ffn = _int(data, path, "moe_intermediate_size", required=False)
    if moe_ffn:
        out["moe_ffn"] = moe_ffn
    # Shared experts: DeepSeek n_shared_experts x moe_intermediate_size; Qwen2-MoE one shared expert of
    # shared_expert_intermediate_size with a sigmoid gate (modeling_qwen2_moe.py)
    n_shared = _count(data, path, "n_shared_experts")
    shared_ffn = _int(data, path, "shared_expert_intermediate_size", required=False)
    if shared_ffn:
        out.update(shared_experts=n_shared or 1, shared_expert_ffn=shared_ffn, shared_expert_gate=mtype == "qwen2_moe")
    elif n_shared:
        out["shared_experts"] = n_shared
    if mtype == "gpt_oss":
        out["router_bias"] = True  # GptOssTopKRouter: weight (E, h) and bias (E)
    # Which layers carry experts
    first_k = _count(data, path, "first_k_dense_replace")
    freq_key = _first_key(data, ("moe_layer_freq", "decoder_sparse_step", "interleave_moe_layer_step"))
    freq = _int(data, path, freq_key) if freq_key else 1
    assert freq is not None
    if freq > 1 and freq_key == "moe_layer_freq":
        # DeepSeek's rule is layer_idx % freq == 0 (after first_k_dense_replace); gpuwiz counts (i + 1) % freq
        raise GpuwizError(f"{FIELD}: {path}: moe_layer_freq {freq} (DeepSeek's every-n-th-layer rule) is not "
                          "modelled; only 1 is")
    only = data.get("mlp_only_layers") or []
    if not isinstance(only, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in only):
        raise GpuwizError(f"{FIELD}: {path}: mlp_only_layers must be a list of layer numbers, got {only!r}")
    if only:
        if sorted(only) != list(range(len(only))) or first_k:
            raise GpuwizError(f"{FIELD}: {path}: mlp_only_layers {only} is modelled only as the first layers "
                              "(0, 1, 2, ...)")
        first_k = len(only)
    if first_k >= layers:
        raise GpuwizError(f"{FIELD}: {path}: first_k_dense_replace {first_k} leaves no MoE layer of "
                          f"num_hidden_layers {layers}")
    if first_k:
        out["first_k_dense"] = first_k
    if freq > 1:
        out["moe_layer_freq"] = freq
    return out
