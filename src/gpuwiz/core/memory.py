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
from typing import TYPE_CHECKING

from gpuwiz.core.units import GIB

if TYPE_CHECKING:
    from gpuwiz.core.models import ResolvedModel

CKPT_MODES = ("none", "selective", "full")


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


def layer_activation_bytes(
    seq: int, hidden: int, heads: int, ffn: int, mlp: str, flash: bool, ckpt: str, tp: int = 1
) -> float:
    """Activation bytes of one transformer layer for ONE sequence (b = 1), 16-bit activations.

    Korthikanti et al. 2022, Table 2: ``s·b·h·(34 + 5·a·s/h)`` without recompute; the ``5·a·s²·b``
    attention-score term (scores, softmax, dropout mask) disappears with FlashAttention or selective
    recompute; full recompute keeps only the layer input ``2·s·b·h``. The "34" assumes ffn = 4h; it is
    generalised as ``18 + c·ffn/h`` (Megatron theoretical_memory_usage.py: 18 + 4·ffn/h) with c = 4
    for a GELU MLP and c = 8 for SwiGLU (gate, up, SiLU output and product are stored: Ultra-Scale
    Playbook memory widget). With tensor parallel + sequence parallel everything is divided by t.
    """
    s, h = float(seq), float(hidden)
    if ckpt == "full":
        return 2.0 * s * h / tp
    c = 8.0 if mlp == "swiglu" else 4.0
    per = s * h * (18.0 + c * ffn / h)
    if ckpt == "none" and not flash:
        per += 5.0 * heads * s * s
    return per / tp


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
    # Activation bytes per sample (sequence / image) at tp = 1, by checkpointing mode
    act_layer: dict[str, float]  # one layer (token models)
    act_work_full: float  # one layer's full working set, recomputed transiently (full recompute)
    act_head: float  # logits + loss + embedding output
    act_lora_layer: float  # LoRA adapter intermediates per layer
    act_sample: dict[str, float]  # non-token models: whole-model activation bytes per sample
    params: MemoryParams = PARAMS


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


def _shard_params(mc: MemoryConsts, tp: int, pp: int) -> tuple[float, float]:
    """(params, trainable params) held by the most loaded model-parallel rank before ZeRO sharding.

    Megatron theoretical_memory_usage.py: blocks / pp + embedding (one table when pp > 1), all / t.
    """
    blocks = mc.p_total - mc.p_embedding
    emb = mc.p_embedding if pp == 1 else mc.p_embedding_one
    p = (blocks / pp + emb) / tp
    tr = mc.p_adapter / (tp * pp) if mc.lora else p
    return p, tr


def states(mc: MemoryConsts, dp: int, tp: int, pp: int, zero: int, offload: str) -> tuple[float, float, float, float]:
    """(weights, gradients, optimizer, host bytes per GPU) for one plan; ZeRO table in §3.3."""
    p, tr = _shard_params(mc, tp, pp)
    w_div = dp if zero >= 3 else 1
    g_div = dp if zero >= 2 else 1
    o_div = dp if zero >= 1 else 1
    if mc.lora:
        weights = mc.frozen_bytes * p / w_div + mc.w_bytes * tr / w_div
    else:
        weights = mc.w_bytes * p / w_div
    grads = mc.g_bytes * tr / g_div
    opt = mc.o_bytes * tr / o_div
    host = 0.0
    if offload != "none":
        # DeepSpeed ZeRO-Offload: fp32 grads + optimizer states (+ master) live on the CPU:
        # 16 B/param for AdamW (estimate_zero3_*: "offload optimizer" → CPU 16·P), GPU keeps weights.
        host += (mc.o_bytes + 4.0) * tr / o_div
        grads = 0.0
        opt = 0.0
        if offload == "optimizer+params":
            host += weights  # 16-bit params streamed from host (DeepSpeed: 18 B/param on CPU)
            weights = 0.0
    return weights, grads, opt, host * mc.params.host_buffer_factor


def activation_per_sample(mc: MemoryConsts, tp: int, pp: int, ckpt: str) -> float:
    """Activation bytes per micro-batch sample on the most loaded GPU.

    1F1B pipeline: stage 0 holds p micro-batches of L/p layers = L layers' worth (Korthikanti §4.2.3);
    the last stage holds the logits; the larger of the two is taken.
    """
    if not mc.is_token:
        return mc.act_sample[ckpt]
    # LoRA adapter intermediates are recomputed (not stored) under full recompute
    per_layer = mc.act_layer[ckpt] / tp + (mc.act_lora_layer / tp if ckpt != "full" else 0.0)
    work = mc.act_work_full / tp if ckpt == "full" else 0.0
    head = mc.act_head / tp
    if mc.act_offload and ckpt == "full":
        # checkpointed inputs stream to host; the current and the prefetched layer's stay on the GPU
        return min(mc.layers, mc.params.act_offload_layers_on_gpu) * per_layer + work + head
    if pp == 1:
        return mc.layers * per_layer + work + head
    stage_layers = mc.layers / pp
    first = stage_layers * pp * per_layer + work  # p micro-batches in flight
    last = stage_layers * per_layer + work + head
    return max(first, last)


def fixed_overhead(mc: MemoryConsts, count: int, dp: int, tp: int, zero: int, offload: str) -> float:
    """Bytes that do not scale with the model states: CUDA context, framework, comm buckets, ZeRO-3 buffer."""
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
        b += prm.zero3_gather_layers * wb * mc.largest_layer / tp
    return b


def grads_transient(dp: int, zero: int, offload: str, ga: int) -> bool:
    """Whether the gradients do not yet exist while the forward activations peak.

    PyTorch >= 2.0 ``zero_grad(set_to_none=True)`` frees ``.grad`` after each step and backward allocates it
    layer by layer while the activations are freed, so with one micro-batch per step the peak is
    ``states + max(activations, gradients)``, not their sum. Not so with gradient accumulation (grads live
    across micro-batches), DDP (persistent gradient buckets) or DeepSpeed ZeRO-1/2 (persistent partition
    buffers); FSDP / ZeRO-3 and a single GPU qualify. Planning (``max_micro_batch``) keeps the sum."""
    return ga <= 1 and offload == "none" and (dp <= 1 or zero >= 3)


def plan_memory(
    mc: MemoryConsts, count: int, dp: int, tp: int, pp: int, zero: int, offload: str, mb: int, ckpt: str,
    ga: int = 2,
) -> MemParts:
    """Full breakdown for one plan (bytes per GPU). With ``grads_transient`` the gradients and the
    activations share the same memory over the step: the breakdown shows the larger, the other as 0."""
    w, g, o, host = states(mc, dp, tp, pp, zero, offload)
    act = activation_per_sample(mc, tp, pp, ckpt) * mb
    if grads_transient(dp, zero, offload, ga):
        g, act = (g, 0.0) if g > act else (0.0, act)
    frag = mc.params.fragmentation * (w + g + o + act)
    over = fixed_overhead(mc, count, dp, tp, zero, offload) + frag
    return MemParts(w, g, o, act, over, host)


def max_micro_batch(
    mc: MemoryConsts, budget_bytes: float, count: int, dp: int, tp: int, pp: int, zero: int, offload: str, ckpt: str
) -> tuple[int, float, float]:
    """Largest micro-batch whose total fits ``budget_bytes`` (0 if none), with (fixed, per-sample) bytes.

    total(mb) = fixed_overhead + (1 + frag)·(states + mb·act_per_sample) -- linear in mb, solved directly.
    """
    w, g, o, _ = states(mc, dp, tp, pp, zero, offload)
    k = 1.0 + mc.params.fragmentation
    fixed = fixed_overhead(mc, count, dp, tp, zero, offload) + k * (w + g + o)
    per = k * activation_per_sample(mc, tp, pp, ckpt)
    if per <= 0:
        return (1 << 30) if fixed <= budget_bytes else 0, fixed, per
    room = budget_bytes - fixed
    return (int(room // per) if room > 0 else 0), fixed, per


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
    work = head = lora_act = 0.0
    if model.is_token_model:
        h, a, f = model.hidden or 1, model.heads or 1, model.ffn or 4 * (model.hidden or 1)
        for mode in CKPT_MODES:
            act_layer[mode] = layer_activation_bytes(seq, h, a, f, model.mlp, flash, mode)
        work = layer_activation_bytes(seq, h, a, f, model.mlp, flash, "none")
        head = head_activation_bytes(seq, h, model.vocab or 0, chunked=chunked_loss)
        if lora:
            # PEFT adapter inputs (dropout copy) and rank-r intermediates: 2·(4·s·b·(r + h) + s·b·h) bytes
            # per layer (pacman100 in huggingface/transformers#25572)
            lora_act = 2.0 * (4.0 * seq * (lora_rank + h) + seq * h)
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
        act_sample=act_sample, params=params,
    )
