"""GPU memory per device: weights, gradients, optimizer states, activations, overhead.

All functions are pure arithmetic on floats (bytes unless the name says ``_gib``), so the plan search
in ``core.parallel`` can call them hundreds of times per keystroke.

Sources (research note ``sizing_formulas_and_peers.md``):

* bytes per parameter by optimizer/precision: §3.2 (ZeRO paper K = 12; Transformer Math 101 for
  8-bit Adam and SGD);
* sharding by ZeRO stage: §3.3 (Rajbhandari et al. 2019, Fig. 1; DeepSpeed estimators for offload and
  the ZeRO-3 gathered-layer buffer ``4·largest_layer``);
* activations: §3.4 (Korthikanti et al. 2022 Table 2; gated-MLP term from the Ultra-Scale Playbook
  memory widget; fp32 logits ``4·s·b·V``); pipeline in-flight micro-batches (Megatron 1F1B);
* LoRA / QLoRA: §3.5 (QLoRA paper: NF4 + double quantisation ≈ 4.127 bits/param);
* overheads: §3.7 (CUDA context ~1 GiB, DeepSpeed bucket sizes, host buffer factor 1.5).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from gpuwiz.core.arch import count_params
from gpuwiz.core.units import GIB

if TYPE_CHECKING:
    from gpuwiz.core.models import ResolvedModel, VisionArch

CKPT_MODES = ("none", "selective", "full")
CK = TypeVar("CK", bound=str)  # a checkpointing mode (models.Checkpointing)


@dataclass(frozen=True, slots=True)
class MemoryParams:
    """Constants of the memory model, in one place (each with its source)."""

    # CUDA context + kernels: 300 MiB-2 GiB; vram-calculator uses 1000 MiB, Playbook "1-2 GB" (§3.7)
    cuda_context_gib: float = 1.0
    # cuBLAS/cuDNN workspaces + NCCL communicator buffers (my allowance; NCCL_BUFFSIZE 4 MiB x channels)
    framework_gib_single: float = 0.25
    framework_gib_multi: float = 0.5
    # PyTorch DDP bucket_cap_mb default 25 MB (two buckets in flight); gradient_as_bucket_view assumed
    ddp_bucket_bytes: float = 2 * 25e6
    # DeepSpeed reduce/allgather bucket default 5e8 elements x 2 B (EleutherAI cookbook defaults, §3.3)
    zero_bucket_elems: float = 5e8
    # ZeRO-3 gathered parameters: the layer being computed + the prefetched next one, at the stored weight
    # width: 2 x 2 B = 4 B x largest layer for 16-bit weights (DeepSpeed estimate_zero3_model_states_mem_needs:
    # 4·largest_layer); NF4 bases (QLoRA) gather 2 x 0.52 B (FSDP all-gathers the quantised storage)
    zero3_gather_layers: float = 2.0
    # ZeRO-3 / FSDP unsharded gradients: the layer whose backward just ran waits for its reduce-scatter
    # (PyTorch FSDP2 frees the unsharded gradient after the reduce-scatter) -- one layer at the gradient width
    zero3_grad_layers: float = 1.0
    # Layers whose checkpointed inputs stay on the GPU with activation offloading (current + prefetched)
    act_offload_layers_on_gpu: float = 2.0
    # Allocator fragmentation allowance on states + activations (ZeRO paper §3 reports OOM with up to 30 %
    # free in extreme cases; Megatron adds 5 % to activations) -- my default, applied to everything
    fragmentation: float = 0.05
    # Pinned host memory for offload: DeepSpeed additional_buffer_factor = 1.5
    host_buffer_factor: float = 1.5
    # QLoRA NF4 + double quantisation: 4 + 0.127 bits/param (Dettmers et al. 2023 §2)
    qlora_bits_per_param: float = 4.127
    # Non-token models: activation share kept under checkpointing (no published figure; my choice)
    nontoken_ckpt_factor: dict[str, float] = field(
        default_factory=lambda: {"none": 1.0, "selective": 0.6, "full": 0.3}
    )


PARAMS = MemoryParams()


# --------------------------------------------------------------------------------------------------
# Bytes per parameter (§3.2)
# --------------------------------------------------------------------------------------------------


def state_bytes(precision: str, optimizer: str, pure: bool = False) -> tuple[float, float, float]:
    """(weight, gradient, optimizer) bytes per trainable parameter.

    Mixed precision (bf16/fp16/fp8 compute) + AdamW: 2 + 2 + 12 (fp32 master 4 + m 4 + v 4) = 16
    (ZeRO paper K = 12). 8-bit Adam: master 4 + m,v 1 each = 6 (Transformer Math 101 -> 10 total).
    SGD with momentum: master 4 + momentum 4 = 8 (-> 12). fp32/tf32: weights 4, grads 4, AdamW 8,
    8-bit Adam 2, SGD 4 (no master copy). FP8 recipes keep bf16 weights and fp32 master (Playbook
    FP8 table: 9-16 B/param) -- counted as bf16 mixed.

    ``pure`` (``training.pure_bf16``): no fp32 master copy, states in 16 bits -- AdamW 2 + 2 + 4 = 8 B/param
    (LLaMA-Factory pure_bf16; torchtune dtype=bf16), 8-bit AdamW 2 + 2 + 2, SGD 2 + 2 + 2.
    """
    if precision in ("fp32", "tf32"):
        return 4.0, 4.0, {"adamw": 8.0, "adamw-8bit": 2.0, "sgd": 4.0}[optimizer]
    if pure:
        return 2.0, 2.0, {"adamw": 4.0, "adamw-8bit": 2.0, "sgd": 2.0}[optimizer]
    return 2.0, 2.0, {"adamw": 12.0, "adamw-8bit": 6.0, "sgd": 8.0}[optimizer]


def model_state_bytes_per_gpu(
    params: float, n_d: int, zero_stage: int, k: float = 12.0, weight_bytes: float = 2.0, grad_bytes: float = 2.0
) -> float:
    """Model-state bytes per GPU under ZeRO (Rajbhandari et al. 2019, §5 / Fig. 1).

    Stage 0: (2 + 2 + K)·Ψ; stage 1 (P_os): (2 + 2)·Ψ + K·Ψ/N_d; stage 2 (P_os+g): 2·Ψ + (2 + K)·Ψ/N_d;
    stage 3 (P_os+g+p): (2 + 2 + K)·Ψ/N_d. The paper's example: Ψ = 7.5 B, N_d = 64, K = 12 →
    120 GB / 31.4 GB / 16.6 GB / 1.9 GB.
    """
    w, g, o = weight_bytes * params, grad_bytes * params, k * params
    if zero_stage <= 0:
        return w + g + o
    if zero_stage == 1:
        return w + g + o / n_d
    if zero_stage == 2:
        return w + (g + o) / n_d
    return (w + g + o) / n_d


# --------------------------------------------------------------------------------------------------
# Activations (§3.4)
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LayerShape:
    """One transformer layer as the operators whose outputs autograd keeps (token models).

    ``q_dim``/``kv_dim``/``v_dim``/``o_dim``: widths of the stored query, key, value and attention-output
    tensors per token (GQA/MQA: ``kv_dim = kv_heads·head_dim``; MLA: the decompressed per-head widths).
    ``dropout``: the model trains with dropout (GPT-2/BERT-era LayerNorm models: one 1-byte mask per
    dropout; Llama-style RMSNorm decoders have none). MoE layers: ``experts`` routed experts of width
    ``moe_ffn``, ``top_k`` per token, ``shared_ffn`` = the summed width of the always-active shared experts.
    """

    hidden: int
    heads: int
    ffn: int
    gated: bool  # SwiGLU / GeGLU (gate, up, down) vs GELU (fc1, fc2)
    q_dim: int = 0  # 0: hidden
    kv_dim: int = 0  # 0: hidden (multi-head attention)
    v_dim: int = 0  # 0: kv_dim
    o_dim: int = 0  # 0: q_dim
    dropout: bool = True
    experts: int = 1
    top_k: int = 1
    moe_ffn: int = 0
    shared_ffn: int = 0


def mlp_activation_bytes(seq: int, hidden: int, width: int, gated: bool) -> float:
    """Stored activations of one MLP (or one expert's share) for ``seq`` tokens, 16-bit, without its input.

    GELU: the fc1 output (GELU input) and the GELU output (fc2 input), ``2·s·f`` each = ``4·s·f``
    (Korthikanti et al. 2022 §4.1: 16·s·b·h at f = 4h). Gated: gate and up outputs, the activation
    output and the product (down-projection input) = ``8·s·f`` (Ultra-Scale Playbook memory widget)."""
    return (8.0 if gated else 4.0) * seq * width


def layer_activation_parts(seq: int, ls: LayerShape, flash: bool, moe: bool = False) -> dict[str, float]:
    """Activation bytes of one layer for ONE sequence (b = 1), 16-bit, no recompute, by operator.

    Korthikanti et al. 2022 §4.1 (``34·s·h + 5·a·s²`` for GPT with f = 4h), split by operator so every
    family gets its own terms:

    * ``norm``: the inputs of the two norms, ``2·s·h`` each (LayerNorm and RMSNorm alike);
    * ``attention``: the QKV-projection input ``2·s·h``, Q, K and V at their own widths (GQA/MQA keep
      K and V at ``kv_heads·head_dim``), the output-projection input (a fused kernel's fp32 log-sum-exp,
      ``4·s·a``, is under 0.1 % of the layer and left out); without FlashAttention the scores: softmax
      output ``2·a·s²`` + dropout mask ``a·s²`` + dropout output ``2·a·s²`` (``2·a·s²`` without dropout);
    * ``mlp`` (dense layers): its input ``2·s·h`` + ``mlp_activation_bytes``;
    * ``moe`` (MoE layers): the router input ``2·s·h`` and fp32 logits + probabilities ``8·s·E``; per
      routed token-expert pair the permuted input ``2·h``, the expert's activations and its output
      ``2·h`` (kept for the weighted combine); the shared experts as a dense MLP over every token.
      Only the ``top_k`` experts a token visits hold activations; EP moves them between GPUs but the
      tokens per GPU stay the same on average;
    * ``dropout``: the two 1-byte masks ``s·h`` each (attention output and MLP output).
    """
    s, h = float(seq), float(ls.hidden)
    q = float(ls.q_dim or ls.hidden)
    kv = float(ls.kv_dim or ls.hidden)
    v = float(ls.v_dim or kv)
    o = float(ls.o_dim or q)
    attn = 2.0 * s * h + 2.0 * s * (q + kv + v) + 2.0 * s * o
    if not flash:
        attn += (5.0 if ls.dropout else 2.0) * ls.heads * s * s
    parts = {"norm": 4.0 * s * h, "attention": attn, "dropout": 2.0 * s * h if ls.dropout else 0.0}
    if moe and ls.experts > 1:
        routed = ls.top_k * (4.0 * s * h + mlp_activation_bytes(seq, ls.hidden, ls.moe_ffn or ls.ffn, ls.gated))
        shared = mlp_activation_bytes(seq, ls.hidden, ls.shared_ffn, ls.gated) if ls.shared_ffn else 0.0
        parts["moe"] = 2.0 * s * h + 8.0 * s * ls.experts + routed + shared
    else:
        parts["mlp"] = 2.0 * s * h + mlp_activation_bytes(seq, ls.hidden, ls.ffn, ls.gated)
    return parts


# Per-operator terms that tensor parallelism without sequence parallelism leaves replicated on every rank
# (Korthikanti et al. 2022 Table 2: 10·s·b·h = norms 4 + dropout masks 2 + QKV and MLP inputs 2 + 2)
def _replicated_without_sp(seq: int, ls: LayerShape) -> float:
    s, h = float(seq), float(ls.hidden)
    return 4.0 * s * h + (2.0 * s * h if ls.dropout else 0.0) + 4.0 * s * h


def layer_activation_bytes(
    seq: int, hidden: int, heads: int, ffn: int, mlp: str, flash: bool, ckpt: str, tp: int = 1, *,
    shape: LayerShape | None = None, moe: bool = False, sp: bool = True, cp: int = 1,
) -> float:
    """Activation bytes of one transformer layer for ONE sequence (b = 1), 16-bit activations.

    The sum of ``layer_activation_parts`` (``shape``; default: multi-head attention, dropout, the
    given MLP). For GPT (f = 4h, GELU) it is Korthikanti et al. 2022 Table 2: ``s·h·(34 + 5·a·s/h)``
    without recompute; FlashAttention or selective recompute drop the ``5·a·s²`` score term; full
    recompute keeps only the layer input ``2·s·h``. Tensor parallel with sequence parallel divides
    everything by t; without SP the norms, dropout masks and the two block inputs stay whole
    (``10 + 24/t``). Context parallel splits the sequence: s → s/cp (the score term becomes the local
    queries against every key, ``a·(s/cp)·s``).
    """
    ls = shape or LayerShape(hidden=hidden, heads=heads, ffn=ffn, gated=mlp in ("swiglu", "geglu"))
    s_loc = seq / max(1, cp)
    if ckpt == "full":
        return 2.0 * s_loc * ls.hidden / (tp if sp else 1)
    keep_scores = ckpt == "none" and not flash
    # The s² score term is computed on the local chunk against every key: a·(s/cp)·s
    parts = layer_activation_parts(seq, ls, flash=not keep_scores, moe=moe)
    total = sum(parts.values()) / max(1, cp)
    if tp <= 1:
        return total
    if sp:
        return total / tp
    rep = _replicated_without_sp(seq, ls) / max(1, cp)
    return rep + (total - rep) / tp


def head_activation_bytes(seq: int, hidden: int, vocab: int, tp: int = 1, chunked: bool = False) -> float:
    """Output layer + loss for ONE sequence: fp32 logits for the cross-entropy ``4·s·V`` (Playbook widget),
    plus bf16 logits ``2·s·V`` and the final norm / embedding output ``4·s·h`` (Megatron: 4·s·b·h·(1 + V/h)).
    Vocab-parallel with TP divides by t.

    ``chunked`` (``training.chunked_loss``): the loss upcasts one chunk of the logits at a time
    (torchtune CEWithChunkedOutputLoss, 8 chunks: the bf16 logits ``2·s·V`` stay, fp32 only for ``s/8``
    tokens); measured by torchtune: -8.1 GiB on Llama-3.2-3B at b·s = 8192 (README "Optimization flags")."""
    s = float(seq)
    per_v = (2.0 + 4.0 / CHUNKED_LOSS_CHUNKS) if chunked else 6.0
    return (per_v * s * vocab + 4.0 * s * hidden) / tp


CHUNKED_LOSS_CHUNKS = 8  # torchtune CEWithChunkedOutputLoss num_output_chunks


# --------------------------------------------------------------------------------------------------
# Vision models as operators (issue 11): ResNet, ConvNeXt, ViT, diffusion UNet
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class VisionUnit:
    """One block of a vision model for ONE sample, in elements of the activation dtype.

    ``saved``: the tensors autograd keeps for the backward pass, the block's input included and its output
    not (the next block's input); ``boundary``: the block's input, all a checkpoint keeps; ``scores``: the
    attention probabilities, kept only by an eager (non-fused) attention without recompute; ``idx``:
    int64 elements (max-pool indices), 8 bytes whatever the precision; ``wide``: the part of ``saved`` that
    mixed precision keeps in fp32 -- autocast runs group_norm and layer_norm in fp32 (PyTorch AMP op
    reference, "CUDA Ops that can autocast to float32"), so a norm keeps an fp32 copy of its input and a
    SiLU after a GroupNorm keeps the fp32 GroupNorm output; BatchNorm runs in 16 bits."""

    saved: float
    boundary: float
    scores: float = 0.0
    idx: float = 0.0
    wide: float = 0.0


def _down(side: int, stride: int) -> int:
    return -(-side // stride)  # a padded convolution / pooling with this stride (ceil)


def _resnet_units(a: VisionArch, side: int) -> list[VisionUnit]:
    """torchvision ResNet v1.5 (stride on the 3x3 conv), counted from what each operator saves:

    * stem: conv 7x7/2 keeps the image, BatchNorm its input (the conv output), ReLU (in place) its output,
      which max-pool 3x3/2 reads; max-pool keeps int64 indices of its output;
    * bottleneck (width w, out e·w): conv1 1x1 keeps the block input, BN1 the conv1 output, the in-place
      ReLU1 output is conv2's input (w each at the input resolution); the same for conv2 / BN2 / ReLU2 at
      the output resolution; BN3 keeps the conv3 output (e·w); the first block's projection shortcut adds
      its conv output (kept by its BN); the residual sum, made in place and ReLU'd in place, is the output;
    * head: global average pool keeps its input.
    """
    c = a.widths[0]
    s1 = _down(side, 2)
    s2 = _down(s1, 2)
    img = 3.0 * side * side
    units = [VisionUnit(saved=img + 2.0 * c * s1 * s1, boundary=img, idx=float(c * s2 * s2))]
    c_in, sd = float(c), s2
    for i, (n, w) in enumerate(zip(a.stages, a.widths, strict=True)):
        for b in range(n):
            st = 2 if (i > 0 and b == 0) else 1
            so = _down(sd, st)
            hin, hout = float(sd * sd), float(so * so)
            out = float(a.expansion * w)
            saved = c_in * hin + 2.0 * w * hin + 2.0 * w * hout + out * hout
            if b == 0:
                saved += out * hout  # projection shortcut: conv 1x1 output kept by its BatchNorm
            units.append(VisionUnit(saved=saved, boundary=c_in * hin))
            c_in, sd = out, so
    units.append(VisionUnit(saved=c_in * sd * sd, boundary=c_in * sd * sd))
    return units


def _convnext_units(a: VisionArch, side: int) -> list[VisionUnit]:
    """ConvNeXt (Liu et al. 2022; torchvision CNBlock), counted from what each operator saves:

    * stem: conv 4x4/4 keeps the image, LayerNorm its input; the LayerNorm output is the first block's input;
    * block (C channels): depthwise 7x7 keeps the block input, LayerNorm the depthwise output, fc1 the
      LayerNorm output (C each), GELU the fc1 output and fc2 the GELU output (4C each), the layer-scale
      multiply the fc2 output (C) = 12·C per pixel; the residual sum is the output;
    * downsampling between stages: LayerNorm keeps its input, the 2x2/2 conv the LayerNorm output.
    """
    c0 = a.widths[0]
    sd = _down(side, 4)
    img = 3.0 * side * side
    units = [VisionUnit(saved=img + float(c0 * sd * sd), boundary=img, wide=float(c0 * sd * sd))]
    c_in = float(c0)
    for i, (n, c) in enumerate(zip(a.stages, a.widths, strict=True)):
        if i > 0:
            hw = float(sd * sd)
            units.append(VisionUnit(saved=2.0 * c_in * hw, boundary=c_in * hw, wide=c_in * hw))
            sd = _down(sd, 2)
        hw = float(sd * sd)
        units.extend(VisionUnit(saved=12.0 * c * hw, boundary=c * hw, wide=c * hw) for _ in range(n))
        c_in = float(c)
    units.append(VisionUnit(saved=c_in * sd * sd, boundary=c_in * sd * sd))
    return units


def _vit_units(a: VisionArch, side: int) -> list[VisionUnit]:
    """ViT: the patch-embedding conv keeps the image; tokens = (side / patch)² + class tokens; each block is
    a pre-norm transformer layer (``layer_activation_parts``: GELU MLP, no dropout -- timm and torchvision
    train ViTs with dropout 0 and stochastic depth, whose per-sample masks are negligible); the final norm
    keeps its input."""
    t = (side // a.patch) ** 2 + a.cls_tokens
    h = float(a.hidden)
    ls = LayerShape(hidden=a.hidden, heads=a.heads, ffn=a.ffn or 4 * a.hidden, gated=False, dropout=False)
    per = sum(layer_activation_parts(t, ls, flash=True).values()) / 2.0
    img = 3.0 * side * side
    units = [VisionUnit(saved=img, boundary=img)]
    units.extend(VisionUnit(saved=per, boundary=t * h, scores=float(a.heads) * t * t, wide=2.0 * t * h)
                 for _ in range(a.layers))
    units.append(VisionUnit(saved=t * h, boundary=t * h, wide=t * h))
    return units


def _unet_units(a: VisionArch, side: int) -> list[VisionUnit]:
    """diffusers UNet2DConditionModel (SD 1.x / 2.x / SDXL) on the latent (side / latent_factor):

    * ResnetBlock2D (C_in -> C_out): GroupNorm1 keeps the input, SiLU the GroupNorm output, conv1 the SiLU
      output (C_in each); GroupNorm2 keeps conv1 output + time embedding, SiLU its output, conv2 the SiLU
      output (C_out each): 3·(C_in + C_out) per pixel; up-path inputs are the concatenation with the skip;
    * Transformer2DModel (C, depth d): GroupNorm input and output, the proj_out input (C each); per
      BasicTransformerBlock a pre-norm self-attention + GEGLU (4C) layer (``layer_activation_parts``, no
      dropout) plus the cross-attention: its norm input, q-projection input, q and the out-projection input
      (C each per pixel) and k, v of the text tokens (2·T·C per sample); eager attention also keeps the
      self (h·s²) and cross (h·s·T) probabilities;
    * downsampler conv keeps its input; upsampler: nearest-neighbour resize keeps nothing, its conv keeps
      the resized tensor; conv_in keeps the latent; the output GroupNorm / SiLU / conv keep 3·C0.
    """
    sd = _down(side, a.latent_factor)
    depth = tuple(a.transformer_depth) + (0,) * (len(a.widths) - len(a.transformer_depth))
    t_ctx = float(a.context_tokens)

    def heads(c: int) -> int:
        return a.heads or max(1, c // (a.head_dim or 64))

    def resnet(c_in: float, c_out: float, s: int) -> VisionUnit:
        hw = float(s * s)
        return VisionUnit(saved=3.0 * (c_in + c_out) * hw, boundary=c_in * hw, wide=2.0 * (c_in + c_out) * hw)

    def transformer(c: int, s: int, d: int) -> VisionUnit:
        hw = s * s
        ls = LayerShape(hidden=c, heads=heads(c), ffn=4 * c, gated=True, dropout=False)
        block = sum(layer_activation_parts(hw, ls, flash=True).values()) / 2.0
        cross = 4.0 * c * hw + 2.0 * t_ctx * c
        scores = float(d * heads(c)) * hw * (hw + t_ctx)
        return VisionUnit(saved=3.0 * c * hw + d * (block + cross), boundary=float(c * hw), scores=scores,
                          wide=float(c * hw) * (1 + 3 * d))

    lat = float(a.latent_channels)
    units = [VisionUnit(saved=lat * sd * sd, boundary=lat * sd * sd)]
    ch = float(a.widths[0])
    skips = [ch]
    sides: list[int] = []
    last = len(a.widths) - 1
    for i, c in enumerate(a.widths):
        sides.append(sd)
        for _ in range(a.layers_per_block):
            units.append(resnet(ch, c, sd))
            ch = float(c)
            if depth[i]:
                units.append(transformer(c, sd, depth[i]))
            skips.append(ch)
        if i < last:
            units.append(VisionUnit(saved=ch * sd * sd, boundary=ch * sd * sd))
            sd = _down(sd, 2)
            skips.append(ch)
    units.append(resnet(ch, ch, sd))
    if a.mid_depth:
        units.append(transformer(int(ch), sd, a.mid_depth))
    units.append(resnet(ch, ch, sd))
    for i in range(last, -1, -1):
        c = a.widths[i]
        for _ in range(a.layers_per_block + 1):
            units.append(resnet(ch + skips.pop(), c, sd))
            ch = float(c)
            if depth[i]:
                units.append(transformer(c, sd, depth[i]))
        if i > 0:
            up = sides[i - 1]
            units.append(VisionUnit(saved=ch * up * up, boundary=ch * sd * sd))
            sd = up
    units.append(VisionUnit(saved=3.0 * ch * sd * sd + 2.0 * lat * sd * sd, boundary=ch * sd * sd,
                            wide=2.0 * ch * sd * sd))
    return units


_VISION_UNITS = {"resnet": _resnet_units, "convnext": _convnext_units, "vit": _vit_units, "unet": _unet_units}


def vision_activation_bytes(a: VisionArch, side: int, ckpt: str, flash: bool = True, elem_bytes: float = 2.0) -> float:
    """Activation bytes of ONE sample of a vision model at image side ``side``, per operator.

    ``elem_bytes``: 2 under mixed precision (autocast runs convolutions and GEMMs in 16 bits and their
    outputs are what is kept; norms keep fp32 copies, ``VisionUnit.wide``; an eager softmax keeps its fp32
    output and the 16-bit copy the next GEMM reads, 6 bytes per probability), 4 in fp32 / tf32 (the
    probabilities 4 bytes). Checkpointing: ``none`` keeps every unit's ``saved``
    (+ the attention probabilities without a fused kernel); ``selective`` recomputes the attention core
    only (drops the probabilities, but for the one block being recomputed); ``full`` (each block
    checkpointed, as diffusers' and timm's ``gradient_checkpointing`` do) keeps every block's input plus
    the largest block recomputed at a time.
    Channels-last (NHWC) changes the layout, not the count: the same bytes either way."""
    units = _VISION_UNITS[a.kind](a, max(1, side))
    keep_scores = ckpt == "none" and not flash
    idx = sum(u.idx for u in units) * 8.0
    amp = elem_bytes < 4.0
    wide = 1.0 if amp else 0.0  # the fp32 share costs one more 16-bit element's worth
    sb = 3.0 if amp else 1.0  # probabilities: fp32 softmax output + 16-bit copy = 3 x 2 bytes

    def held(u: VisionUnit, scores: bool) -> float:
        return u.saved + wide * u.wide + (sb * u.scores if scores else 0.0)

    if ckpt == "full":
        # checkpoint boundaries are block outputs, 16-bit under autocast
        peak = max(held(u, not flash) - u.boundary for u in units)
        return (sum(u.boundary for u in units) + peak) * elem_bytes + idx
    total = sum(held(u, keep_scores) for u in units)
    if ckpt == "selective" and not flash:
        # the backward pass recomputes one block's attention core at a time: its probabilities, transiently
        total += max(sb * u.scores for u in units)
    return total * elem_bytes + idx


# --------------------------------------------------------------------------------------------------
# The per-requirement constants and the per-plan evaluation
# --------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class MemoryConsts:
    """Everything the per-plan memory formula needs, precomputed once per requirements (``prepare``)."""

    is_token: bool
    layers: int
    p_total: float
    p_embedding: float  # all embedding tables (input + untied head + positions)
    p_embedding_one: float  # the larger single table (a PP stage holds at most one)
    p_adapter: float  # LoRA trainable params (0 for full training)
    lora: bool
    act_offload: bool  # checkpointed layer inputs offloaded to host (only with full recompute)
    frozen_bytes: float  # per frozen base param (LoRA 2, QLoRA 0.516, fp32 4)
    w_bytes: float
    g_bytes: float
    o_bytes: float
    largest_layer: float
    # Activation bytes per sample (sequence / image) at tp = cp = 1, by checkpointing mode
    act_layer: dict[str, float]  # one layer, mean over the layers (token models; MoE and dense layers differ)
    act_work_full: float  # the largest layer's full working set, recomputed transiently (full recompute)
    act_head: float  # logits + loss + embedding output
    act_lora_layer: float  # LoRA adapter intermediates per layer
    act_sample: dict[str, float]  # non-token models: whole-model activation bytes per sample
    params: MemoryParams = PARAMS
    p_expert: float = 0.0  # routed-expert parameters of all MoE layers (sharded by EP)
    layer_expert: float = 0.0  # routed-expert parameters of one MoE layer (the ZeRO-3 gather under EP)
    fp8_weight_bytes: float = 0.0  # FP8 weight copies per local weight (recipe-dependent, 0 without FP8)
    fp8_amax_bytes: float = 0.0  # FP8 scaling history, whole model
    companion_bytes: float = 0.0  # frozen companion modules on every GPU (diffusion text encoders + VAE)


@dataclass(slots=True)
class MemParts:
    weights: float
    gradients: float
    optimizer: float
    activations: float
    overhead: float
    host_per_gpu: float  # bytes of pinned host memory per GPU (offload), incl. buffer factor

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer + self.activations + self.overhead


def _shard_params(mc: MemoryConsts, tp: int, pp: int, ep: int = 1) -> tuple[float, float, float]:
    """(non-expert params, routed-expert params, trainable params) on the most loaded model-parallel rank
    before ZeRO sharding.

    Megatron theoretical_memory_usage.py: blocks / pp + embedding (one table when pp > 1), all / t;
    routed experts additionally / ep (Megatron-Core MoE: expert weights split over the expert-parallel
    group, expert tensor parallel = TP by default).
    """
    blocks = mc.p_total - mc.p_embedding - mc.p_expert
    emb = mc.p_embedding if pp == 1 else mc.p_embedding_one
    dense = (blocks / pp + emb) / tp
    experts = mc.p_expert / (pp * tp * (ep if ep > 1 else 1))
    tr = mc.p_adapter / (tp * pp) if mc.lora else dense + experts
    return dense, experts, tr


def states(
    mc: MemoryConsts, dp: int, tp: int, pp: int, zero: int, offload: str, ep: int = 1,
) -> tuple[float, float, float, float]:
    """(weights, gradients, optimizer, host bytes per GPU) for one plan; ZeRO table in §3.3.

    Non-expert states shard over the ``dp`` data-parallel ranks; routed-expert states over the
    ``dp / ep`` ranks that hold the same experts (Megatron-Core's expert data-parallel group), so under
    ZeRO-3 EP leaves the per-GPU figure unchanged and under ZeRO-0/1/2 it divides the experts by ep.
    FP8 recipes add their weight copies (``fp8_weight_bytes`` per local weight, of the gathered layer
    under ZeRO-3) and the scaling history to the weights."""
    dense, experts, tr = _shard_params(mc, tp, pp, ep)
    edp = dp // ep if ep > 1 else dp
    if edp < 1:
        edp = 1  # (max(1, dp // max(1, ep)), without the builtins: every plan's memory asks)
    # the divisor of each state under ZeRO: the ranks (dp, or the expert ranks edp) from the stage that shards it
    fdp, fedp = float(dp), float(edp)
    d1, e1 = (fdp, fedp) if zero >= 1 else (1.0, 1.0)  # optimizer states
    d2, e2 = (fdp, fedp) if zero >= 2 else (1.0, 1.0)  # gradients
    d3, e3 = (fdp, fedp) if zero >= 3 else (1.0, 1.0)  # parameters
    if mc.lora:
        weights = mc.frozen_bytes * (dense / d3 + experts / e3) + mc.w_bytes * tr / d3
        grads = mc.g_bytes * tr / d2
        opt = mc.o_bytes * tr / d1
    else:
        weights = mc.w_bytes * (dense / d3 + experts / e3)
        grads = mc.g_bytes * (dense / d2 + experts / e2)
        opt = mc.o_bytes * (dense / d1 + experts / e1)
    host = 0.0
    if offload != "none":
        # DeepSpeed ZeRO-Offload: fp32 grads + optimizer states (+ master) live on the CPU:
        # 16 B/param for AdamW (estimate_zero3_*: "offload optimizer" → CPU 16·P), GPU keeps weights.
        host += (mc.o_bytes + 4.0) / mc.o_bytes * opt if mc.o_bytes else 0.0
        grads = 0.0
        opt = 0.0
        if offload == "optimizer+params":
            host += weights  # 16-bit params streamed from host (DeepSpeed: 18 B/param on CPU)
            weights = 0.0
    if mc.fp8_weight_bytes and offload != "optimizer+params":
        local = dense + experts
        weights += mc.fp8_weight_bytes * (local / dp if zero >= 3 else local) + mc.fp8_amax_bytes / (tp * pp)
    return weights + mc.companion_bytes, grads, opt, host * mc.params.host_buffer_factor


def in_flight_layers(layers: int, pp: int, vp: int = 1, ga: int | None = None) -> float:
    """Layers' worth of activations the first pipeline stage holds at its peak.

    1F1B (Narayanan et al. 2021 §2.2): stage 0 runs p warm-up forwards before its first backward, so it
    holds min(p, m) micro-batches of L/p layers (m = micro-batches per step). Interleaved 1F1B with v
    chunks per rank (Megatron-LM schedules.py: (p - 1)·2 + (v - 1)·p warm-up chunks + the current one):
    v·p + p - 1 chunks of L/(p·v) layers = L·(1 + (p - 1)/(p·v)) (Korthikanti et al. 2022 §4.2.3), at
    most m·v chunks. ``ga`` None (planning, before the micro-batch is known): as many as the schedule
    can hold."""
    if pp <= 1:
        return float(layers)
    m = ga if ga is not None else 1 << 30
    if vp <= 1:
        return layers / pp * min(pp, m)
    return layers / (pp * vp) * min(m * vp, vp * pp + pp - 1)


def activation_per_sample(
    mc: MemoryConsts, tp: int, pp: int, ckpt: str, cp: int = 1, vp: int = 1, ga: int | None = None,
) -> float:
    """Activation bytes per micro-batch sample on the most loaded GPU.

    Pipeline: the first stage holds ``in_flight_layers`` layers' worth; the last stage holds one
    micro-batch of its layers and the logits; the larger of the two is taken. Context parallel splits
    every sequence (layers, logits) over cp GPUs (the s² score term: local queries against all keys).
    """
    if not mc.is_token:
        return mc.act_sample[ckpt]
    # LoRA adapter intermediates are recomputed (not stored) under full recompute
    per_layer = mc.act_layer[ckpt] / tp + (mc.act_lora_layer / tp if ckpt != "full" else 0.0)
    work = mc.act_work_full / tp if ckpt == "full" else 0.0
    head = mc.act_head / tp
    c = float(cp if cp > 1 else 1)
    if mc.act_offload and ckpt == "full":
        # checkpointed inputs stream to host; the current and the prefetched layer's stay on the GPU
        return (min(mc.layers, mc.params.act_offload_layers_on_gpu) * per_layer + work + head) / c
    if pp == 1:
        return (mc.layers * per_layer + work + head) / c
    first = in_flight_layers(mc.layers, pp, vp, ga) * per_layer + work
    last = mc.layers / pp * per_layer + work + head
    return (last if last > first else first) / c  # (max(first, last))


def fixed_overhead(
    mc: MemoryConsts, count: int, dp: int, tp: int, zero: int, offload: str, ep: int = 1,
) -> float:
    """Bytes that do not scale with the micro-batch: CUDA context, framework, comm buckets, and under
    ZeRO-3 / FSDP the unsharded layer buffers: ``zero3_gather_layers`` layers of gathered parameters
    (the one computing + the prefetched one; only the local experts under EP) and
    ``zero3_grad_layers`` layer of unsharded gradients waiting for their reduce-scatter."""
    prm = mc.params
    b = (prm.cuda_context_gib + (prm.framework_gib_multi if count > 1 else prm.framework_gib_single)) * GIB
    if dp > 1:
        if zero == 0:
            b += prm.ddp_bucket_bytes
        else:
            tr = (mc.p_adapter if mc.lora else mc.p_total) / tp
            b += min(prm.zero_bucket_elems, tr) * mc.g_bytes
    if zero >= 3 or offload == "optimizer+params":
        wb = mc.frozen_bytes if mc.lora else mc.w_bytes
        layer = max(mc.largest_layer - mc.layer_expert * (1.0 - 1.0 / max(1, ep)), mc.p_embedding_one)
        b += prm.zero3_gather_layers * wb * layer / tp
        if offload == "none":
            trainable = layer * (mc.p_adapter / mc.p_total if mc.lora and mc.p_total else 1.0)
            b += prm.zero3_grad_layers * mc.g_bytes * trainable / tp
    return b


def grads_transient(dp: int, zero: int, offload: str, ga: int) -> bool:
    """Whether the gradients do not yet exist while the forward activations peak.

    PyTorch >= 2.0 ``zero_grad(set_to_none=True)`` frees ``.grad`` after each step and backward allocates it
    layer by layer while the activations are freed, so with one micro-batch per step the peak is
    ``states + max(activations, gradients)``, not their sum. Not so with gradient accumulation (grads live
    across micro-batches), DDP (persistent gradient buckets) or DeepSpeed ZeRO-1/2 (persistent partition
    buffers); FSDP / ZeRO-3 and a single GPU qualify. Planning (``micro_batch_terms``) keeps the sum."""
    return ga <= 1 and offload == "none" and (dp <= 1 or zero >= 3)


def plan_memory(
    mc: MemoryConsts, count: int, dp: int, tp: int, pp: int, zero: int, offload: str, mb: int, ckpt: str,
    ga: int = 2, *, cp: int = 1, ep: int = 1, vp: int = 1,
) -> MemParts:
    """Full breakdown for one plan (bytes per GPU). With ``grads_transient`` the gradients and the
    activations share the same memory over the step: the breakdown shows the larger, the other as 0.
    ``ga`` (micro-batches per step) also bounds the pipeline's in-flight micro-batches."""
    w, g, o, host = states(mc, dp, tp, pp, zero, offload, ep)
    act = activation_per_sample(mc, tp, pp, ckpt, cp, vp, ga) * mb
    if grads_transient(dp, zero, offload, ga):
        g, act = (g, 0.0) if g > act else (0.0, act)
    frag = mc.params.fragmentation * (w + g + o + act)
    over = fixed_overhead(mc, count, dp, tp, zero, offload, ep) + frag
    return MemParts(w, g, o, act, over, host)


def micro_batch_terms(
    mc: MemoryConsts, count: int, dp: int, tp: int, pp: int, zero: int, offload: str, ckpts: tuple[CK, ...],
    *, cp: int = 1, ep: int = 1, vp: int = 1, act_cache: dict[tuple[int, int, str, int, int], float] | None = None,
) -> tuple[float, tuple[tuple[CK, float, float], ...]]:
    """The (fixed, per-sample) bytes of one layout for each checkpointing mode, with the host bytes per
    GPU (CPU offload, else 0). total(mb) = fixed_overhead + (1 + frag)·(states + mb·act_per_sample) is
    linear in mb, so the largest micro-batch that fits a budget is solved directly from them (a pipeline
    is planned with the most in-flight micro-batches its schedule can hold). The model states and the
    fixed overhead do not depend on the checkpointing: computed once. ``act_cache``: the per-sample bytes
    by (tp, pp, checkpointing, cp, vp), which is all they depend on for one ``mc``."""
    w, g, o, host = states(mc, dp, tp, pp, zero, offload, ep)
    k = 1.0 + mc.params.fragmentation
    fixed = fixed_overhead(mc, count, dp, tp, zero, offload, ep) + k * (w + g + o)
    out: list[tuple[CK, float, float]] = []
    for ck in ckpts:
        if act_cache is None:
            per = k * activation_per_sample(mc, tp, pp, ck, cp, vp)
        else:
            akey = (tp, pp, ck, cp, vp)
            got = act_cache.get(akey)
            per = act_cache[akey] = k * activation_per_sample(mc, tp, pp, ck, cp, vp) if got is None else got
        out.append((ck, fixed, per))
    return (host if offload != "none" else 0.0), tuple(out)


def layer_shapes(model: ResolvedModel) -> tuple[LayerShape, int, int]:
    """(the layer's operator shape, dense layers, MoE layers) of a token model."""
    h, a = model.hidden or 1, model.heads or 1
    d = model.head_dim or max(1, h // a)
    if model.kv_lora_rank:  # MLA: q/k decompressed per head (nope + rope), v per head
        qk = a * ((model.qk_nope_head_dim or 0) + (model.qk_rope_head_dim or 0))
        q_dim, kv_dim, v_dim, o_dim = qk, qk, a * (model.v_head_dim or d), a * (model.v_head_dim or d)
    else:
        q_dim, kv_dim = a * d, (model.kv_heads or a) * d
        v_dim, o_dim = kv_dim, a * d
    experts = int(model.experts or 1)
    shared = model.shared_experts * (model.shared_expert_ffn or model.moe_ffn or model.ffn or 4 * h)
    ls = LayerShape(
        hidden=h, heads=a, ffn=model.ffn or 4 * h, gated=model.mlp in ("swiglu", "geglu"), q_dim=q_dim,
        kv_dim=kv_dim, v_dim=v_dim, o_dim=o_dim, dropout=model.norm == "layer", experts=experts,
        top_k=min(int(model.top_k or 2), experts) if experts > 1 else 1, moe_ffn=model.moe_ffn or model.ffn or 4 * h,
        shared_ffn=int(shared),
    )
    n_dense, n_moe = model.dense_layers, model.moe_layers
    if not (n_dense or n_moe):
        layers = model.layers or 1
        n_dense, n_moe = (0, layers) if experts > 1 else (layers, 0)
    return ls, n_dense, n_moe


# FP8 weight copies kept per local weight, bytes per parameter (0: cast on the fly, freed after use)
FP8_WEIGHT_BYTES = {
    # Transformer Engine caches each weight's FP8 cast across micro-batches, plus its FP8 transpose for the
    # backward GEMMs on Hopper (TE Linear ``is_first_microbatch`` weight caching): 1 + 1 B
    "transformer-engine": 2.0,
    # torchao float8 (torchtitan, FSDP2): casts inside each linear, nothing persistent
    "torchao-float8": 0.0,
    "none": 0.0,
}
FP8_AMAX_HISTORY = 1024  # TE DelayedScaling default amax_history_len; fp32 per FP8 tensor
FP8_TENSORS_PER_LINEAR = 3  # input, weight, output gradient


def memory_consts(
    model: ResolvedModel,
    method: str,
    precision: str,
    optimizer: str,
    flash: bool,
    lora_rank: int,
    seq: int,
    resolution: int | None,
    p_adapter: float,
    largest_layer: float,
    params: MemoryParams = PARAMS,
    pure: bool = False,
    chunked_loss: bool = False,
    act_offload: bool = False,
    fp8_recipe: str = "transformer-engine",
) -> MemoryConsts:
    """Precompute the per-requirements constants used by every plan evaluation."""
    w, g, o = state_bytes(precision, optimizer, pure)
    lora = method in ("lora", "qlora")
    if method == "qlora":
        frozen = params.qlora_bits_per_param / 8.0
    else:
        frozen = 4.0 if precision in ("fp32", "tf32") else 2.0
    act_layer: dict[str, float] = {}
    act_sample: dict[str, float] = {}
    work = head = lora_act = companion = 0.0
    p_expert = layer_expert = 0.0
    fp8_w = fp8_amax = 0.0
    if model.is_token_model:
        h, a, f = model.hidden or 1, model.heads or 1, model.ffn or 4 * (model.hidden or 1)
        ls, n_dense, n_moe = layer_shapes(model)
        n = max(1, n_dense + n_moe)
        for mode in CKPT_MODES:
            dense = layer_activation_bytes(seq, h, a, f, model.mlp, flash, mode, shape=ls) if n_dense else 0.0
            moe = layer_activation_bytes(seq, h, a, f, model.mlp, flash, mode, shape=ls, moe=True) if n_moe else 0.0
            act_layer[mode] = (n_dense * dense + n_moe * moe) / n
        work = max(layer_activation_bytes(seq, h, a, f, model.mlp, flash, "none", shape=ls, moe=m)
                   for m, k in ((False, n_dense), (True, n_moe)) if k)
        head = head_activation_bytes(seq, h, model.vocab or 0, chunked=chunked_loss)
        if precision in ("fp32", "tf32"):
            # No autocast: every kept tensor is 4 bytes, not 2; the dropout masks stay 1 byte (bool), and
            # the logits are fp32 already (their fp32 copy for the loss becomes the log-softmax output)
            masks = 2.0 * seq * h if ls.dropout else 0.0
            scores_mask = float(ls.heads) * seq * seq if ls.dropout and not flash else 0.0
            for mode in CKPT_MODES:
                m = 0.0 if mode == "full" else masks + (scores_mask if mode == "none" else 0.0)
                act_layer[mode] = 2.0 * act_layer[mode] - m
            work = 2.0 * work - masks - scores_mask
            head = head + 2.0 * seq * (model.vocab or 0) + 4.0 * seq * h
        if lora:
            # PEFT adapter inputs (dropout copy) and rank-r intermediates: 2·(4·s·b·(r + h) + s·b·h) bytes
            # per layer (pacman100 in huggingface/transformers#25572)
            lora_act = 2.0 * (4.0 * seq * (lora_rank + h) + seq * h)
        if n_moe and model.experts and model.experts > 1 and model.params_expert:
            # the experts' share of the counted blocks, applied to the model's parameter figure (a shape
            # derived from params_b counts differently from the figure itself)
            counted, _, counted_emb = count_params(model)
            blocks = max(0.0, model.params_total - model.params_embedding)
            scale = blocks / (counted - counted_emb) if counted > counted_emb else 0.0
            layer_expert = float(model.experts) * model.params_expert * scale
            p_expert = min(n_moe * layer_expert, blocks)
        if precision == "fp8":
            fp8_w = FP8_WEIGHT_BYTES.get(fp8_recipe, 0.0)
            if fp8_recipe == "transformer-engine":
                linears = 4 + (3 if ls.gated else 2) * (ls.top_k if n_moe else 1)
                fp8_amax = float(n * linears * FP8_TENSORS_PER_LINEAR * FP8_AMAX_HISTORY * 4)
    elif model.vision is not None:
        # per operator from the layer list (catalog ``vision:``), at the requested image side
        side = resolution or model.resolution or 224
        eb = 4.0 if precision in ("fp32", "tf32") else 2.0
        # diffusers' training scripts cast the frozen text encoder(s) and VAE to the 16-bit weight dtype
        companion = model.vision.companion_params * eb
        for mode in CKPT_MODES:
            act_sample[mode] = vision_activation_bytes(model.vision, side, mode, flash, eb)
            if lora and model.family == "cnn":
                act_sample[mode] *= 2.0  # LoRA on a CNN roughly doubles activations (huggingface/peft#2196)
    else:
        ref = model.resolution or resolution or 1
        scale = ((resolution or ref) / ref) ** 2  # activations scale with pixels (H·W), §3.6
        base = (model.act_gib_per_sample or 0.0) * GIB * scale
        if lora:
            base *= 2.0  # LoRA on a CNN roughly doubles activations (huggingface/peft#2196)
        for mode in CKPT_MODES:
            act_sample[mode] = base * params.nontoken_ckpt_factor[mode]
    emb_total = model.params_embedding
    emb_one = (model.vocab or 0) * (model.hidden or 0) if model.is_token_model else 0.0
    return MemoryConsts(
        is_token=model.is_token_model, layers=model.layers or 1, p_total=model.params_total,
        p_embedding=emb_total, p_embedding_one=float(emb_one), p_adapter=p_adapter if lora else 0.0, lora=lora,
        act_offload=act_offload,
        frozen_bytes=frozen, w_bytes=w, g_bytes=g, o_bytes=o, largest_layer=largest_layer,
        act_layer=act_layer, act_work_full=work, act_head=head, act_lora_layer=lora_act,
        act_sample=act_sample, params=params, p_expert=p_expert, layer_expert=layer_expert,
        fp8_weight_bytes=fp8_w, fp8_amax_bytes=fp8_amax, companion_bytes=companion,
    )
