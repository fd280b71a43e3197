"""Operator-level time of one micro-batch on one GPU, for token (transformer) models.

Per layer and micro-batch (forward, backward, recompute), after tensor (TP), context (CP) and expert
(EP) parallel splits:

* GEMMs with their (m, n, k): t = 2·m·n·k / achieved GEMM rate + a fixed time per GEMM (launch, tile
  tail), so small and skinny GEMMs run far below the large-GEMM rate (core.hardware). Backward runs two
  GEMMs per forward GEMM (input and weight gradient); frozen weights (LoRA/QLoRA) only the first.
* attention: FlashAttention-class kernel time from its achieved rate (causal: half the score FLOPs;
  backward 2.5× the forward FLOPs, FlashAttention-2 §3.2), or -- without a fused kernel -- the score
  and context GEMMs plus the softmax traffic over the materialised s × s scores.
* memory-bound kernels (norms, residuals, rotary, activation function, LoRA adapters, QLoRA
  dequantisation, FP8 casts, the cross-entropy over the vocabulary) as bytes over achieved HBM
  bandwidth; the stack's fused kernels / compile reduce the bytes (``ELEMENTWISE``).
* host launch time: when the GPU work per kernel is shorter than the launch, the host is the
  bottleneck (small models): t = max(GPU time, kernels × launch time).

Everything here is a mechanism; the achieved rates are catalog data (``perf:``), the stack's habits
catalog data (``stacks:``). ``compute.step_time`` uses the *ratio* of two such times -- this GPU,
precision and stack over the generation's reference GPU and the stack ``auto`` picks -- to carry the
validated efficiency model to GPUs, precisions and stacks without published runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpuwiz.core.hardware import GpuRates
from gpuwiz.core.stacks import StackEntry

# Activation elements moved by memory-bound kernels per token and layer, forward pass, in units of the
# hidden size (h) and of the MLP width (f). My count of the reads + writes of a Llama/GPT block in eager
# PyTorch: 2 norms (read, fp32 upcast, write: ~4h each), rotary on q and k (~4h), 2 residual adds (3h
# each), SwiGLU silu + multiply (read 3f, write 2f) or GELU (read f, write f, bias f). Fused (Megatron /
# Transformer Engine norm-linear and bias-activation kernels, Liger/Unsloth Triton kernels, torch.compile
# chains): norms and residuals in one pass each, activation in one read and one write. Backward moves
# about twice the forward bytes (gradients of every input and output).
ELEMENTWISE = {
    # (h coefficient, f coefficient swiglu, f coefficient gelu)
    False: (18.0, 5.0, 3.0),
    True: (8.0, 3.0, 2.0),
}
BWD_BYTES = 2.0
# Kernels per layer, forward (my count of an eager Llama block: ~28 launches; fused/compiled: ~12)
KERNELS = {False: 28, True: 12}
CUDA_GRAPH_LAUNCH = 0.2  # compiled stacks (CUDA graphs / fewer dispatches): share of the eager launch time
# Softmax traffic over materialised scores (no fused attention), bytes per score element, forward:
# write scores, read + write probabilities, dropout mask (~9 B unfused; Megatron fused scale-mask-softmax
# ~4 B); backward about twice
SOFTMAX_BYTES = {False: 9.0, True: 4.0}
# Cross-entropy over the vocabulary per token, bytes per logit (fwd + bwd): fp32 upcast, softmax, its
# gradient, 16-bit downcast (~24 B unfused); fused / chunked kernels (~6 B)
LOSS_BYTES = {False: 24.0, True: 6.0}
# FlashAttention-2 backward executes 2.5× the forward FLOPs (5 GEMM-like products vs 2, Dao 2023 §3.2)
ATTN_BWD_FLOPS = 2.5
# QLoRA: NF4 weights dequantised to 16 bit before each use: read 0.5 B + write 2 B per parameter
QLORA_DEQUANT_BYTES = 2.5
# FP8 recipes cast each linear's input and weight (read 2 B, write 1 B, amax) every pass
FP8_CAST_BYTES = 3.0


@dataclass(frozen=True, slots=True)
class WorkShape:
    """The model as operators (built once per requirements)."""

    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    swiglu: bool
    vocab: int
    seq: int
    experts: int  # 1 = dense
    top_k: int
    params_per_layer: float
    frozen: bool  # LoRA / QLoRA base weights
    lora_rank: int
    qlora: bool
    act_bytes: float  # bytes per activation element (2 for 16-bit, 4 for fp32)
    flash_requested: bool


@dataclass(frozen=True, slots=True)
class MbTime:
    total_s: float
    gemm_s: float
    attn_s: float
    memory_s: float
    launch_exposed_s: float


def _gemm(m: float, n: float, k: float, r: GpuRates) -> float:
    return 2.0 * m * n * k / r.gemm_flops + r.gemm_fixed_s


def microbatch_time(w: WorkShape, r: GpuRates, st: StackEntry, *, tokens: float, tp: int, cp: int, ep: int,
                    layers: float, head: bool, ckpt: str, fp8: bool) -> MbTime:
    """Forward + backward (+ recompute) time of one micro-batch of ``tokens`` on one GPU holding ``layers``
    layers (one pipeline stage); ``head`` adds the LM head and loss."""
    t = tokens / max(1, cp)
    h, f, dkv = w.hidden, w.ffn, w.kv_heads * w.head_dim
    n_up = 2 if w.swiglu else 1
    fused = st.fused_kernels or st.compile
    bwd_g = 1.0 if w.frozen else 2.0
    # ---- GEMMs (per layer)
    g_dense = _gemm(t, (h + 2 * dkv) / tp, h, r) + _gemm(t, h, h / tp, r)
    if w.experts > 1:
        local = max(1.0, w.experts / max(1, ep))
        m_e = t * w.top_k * max(1, ep) / w.experts
        # the local experts run as one grouped GEMM (Megatron-Core --moe-grouped-gemm, torchtitan grouped_mm):
        # one fixed cost per projection, not one per expert
        g_down = _gemm(local * m_e, h, f / tp, r)
        g_mlp = _gemm(local * m_e, n_up * f / tp, h, r) + g_down + _gemm(t, w.experts, h, r)
    else:
        g_down = _gemm(t, h, f / tp, r)
        g_mlp = _gemm(t, n_up * f / tp, h, r) + g_down
    g_fwd = g_dense + g_mlp
    # ---- attention (per layer)
    sc_flops = 4.0 * t * w.seq * h / tp  # QK^T and PV, non-causal
    flash = w.flash_requested and r.fused_attention and st.attention != "eager"
    if flash:
        a_fwd = 0.5 * sc_flops / r.attn_fwd_flops
        a_bwd = ATTN_BWD_FLOPS * 0.5 * sc_flops / r.attn_bwd_flops
        sm_bytes = 0.0
    else:
        a_fwd = sc_flops / r.gemm_flops * 1.25  # batched s×s×d_head GEMMs: k = d_head is small
        a_bwd = 2.0 * a_fwd
        sm_bytes = SOFTMAX_BYTES[st.fused_kernels] * (w.heads / tp) * w.seq * t
    # ---- memory-bound bytes (per layer, forward)
    ch, cf_s, cf_g = ELEMENTWISE[fused]
    act_f = f * (w.top_k if w.experts > 1 else 1) / tp
    elems = ch * h + (cf_s if w.swiglu else cf_g) * act_f
    mem_fwd = elems * t * w.act_bytes + sm_bytes
    kernels = KERNELS[fused]
    if w.lora_rank and w.frozen:
        n_lin = 7 if w.swiglu else 4
        # each adapted linear: read its input, write and re-read the rank-r product, add into the output
        mem_fwd += n_lin * t * (h + 2.0 * h) * w.act_bytes
        kernels += 3 * n_lin
    deq = w.params_per_layer / tp * QLORA_DEQUANT_BYTES if w.qlora else 0.0
    cast = FP8_CAST_BYTES * t * (3 * h + f) if fp8 else 0.0
    mem_fwd_s = (mem_fwd + deq + cast) / r.hbm_bytes
    # ---- forward, backward, recompute
    fwd = g_fwd + a_fwd + mem_fwd_s
    bwd = g_fwd * bwd_g + a_bwd + (mem_fwd + cast) * BWD_BYTES / r.hbm_bytes + deq / r.hbm_bytes
    # full recompute re-runs the block forward; with early stop (stacks ``recompute_early_stop``) without the
    # MLP down projection, the last GEMM, whose output the backward does not need
    g_rec = g_fwd - (g_down if st.recompute_early_stop else 0.0)
    rec = (fwd - g_fwd + g_rec) if ckpt == "full" else (a_fwd + sm_bytes / r.hbm_bytes if ckpt == "selective" else 0.0)
    per_layer = fwd + bwd + rec
    gemm_s = layers * (g_fwd * (1 + bwd_g) + (g_rec if ckpt == "full" else 0.0))
    attn_s = layers * (a_fwd + a_bwd + (a_fwd if ckpt != "none" else 0.0))
    gpu = layers * per_layer
    n_kernels = layers * kernels * (3 + (1 if ckpt == "full" else 0))
    if head:
        lm = _gemm(t, w.vocab / tp, h, r)
        loss = LOSS_BYTES[st.fused_loss] * t * w.vocab / tp / r.hbm_bytes
        gpu += lm * (1 + bwd_g) + loss
        gemm_s += lm * (1 + bwd_g)
        n_kernels += 12
    launch = n_kernels * r.launch_s * (CUDA_GRAPH_LAUNCH if st.compile else 1.0)
    total = max(gpu, launch)
    return MbTime(total, gemm_s, attn_s, max(0.0, gpu - gemm_s - attn_s), max(0.0, launch - gpu))

