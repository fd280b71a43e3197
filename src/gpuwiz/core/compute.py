"""FLOPs, the efficiency (MFU) model, communication time and step time.

FLOPs (research note §3.8):

* model FLOPs per token ``6·N_active + 12·L·h·s`` (Kaplan et al. 2020; PaLM's MFU definition
  ``6N + 12·L·H·Q·T``, Chowdhery et al. 2022 App. B; MosaicML llm-foundry benchmarking README);
* hardware FLOPs with full recompute ``8·N + 16·L·h·s`` (one extra forward; MosaicML HFU, Narayanan
  et al. 2021 eq. 3); selective recompute re-runs only attention: ``+4·L·h·s``;
* LoRA / QLoRA ``4·N + 12·L·h·s``: frozen weights need the activation-gradient GEMM but no
  weight-gradient GEMM (Hu et al. 2021 §4.2 -- gradients are not computed for frozen weights);
* non-token models: the preset's ``train_gflops_per_sample`` × (resolution / reference)².

The efficiency model is a *function* of hardware, model, plan and method (no per-model table).
``core_efficiency`` is the fraction of peak the GPU sustains on the hardware FLOPs of one micro-batch
(HFU-like); communication, pipeline bubble and offload are then added as *time*, so the reported MFU
= model FLOPs / (step time × peak) falls out. Its coefficients live in ``EfficiencyParams`` (one
dataclass, documented, calibrated later against /work/shared/calibration/published_runs.yaml).

Anchors (§3.9): MosaicML llm-foundry MPT on 8× A100-80GB BF16 FSDP: 7B s=2048 MFU 64 %, 13B 60 %,
30B 55 %, 125M 45 %, 760M 57 %; HFU with activation checkpointing ~73 %; on 8× H100: 7B 46 %,
1B 42 %, 760M 38 %, 70B/64 GPUs 43 %; long context 7B H100 40 % (4k) → 31 % (32k); FP8 1.25-1.35×
BF16 tokens/s; GPT-3 175B on 1024 A100 ~45 % HFU (Narayanan 2021); ResNet-50 A100 AMP 2470 img/s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from gpuwiz.core.catalog import GPU
from gpuwiz.core.hardware import GpuRates
from gpuwiz.core.schedule import WorkShape, microbatch_time
from gpuwiz.core.stacks import StackEntry


@dataclass(frozen=True, slots=True)
class EfficiencyParams:
    """Every coefficient of the throughput model. Units: fractions of peak unless stated."""

    # Core efficiency (HFU) of a large dense transformer, bf16, s = 2048, one NVLink node, by GPU
    # architecture. A100: MosaicML 7B-30B 8 GPUs MFU 55-64 % without recompute, HFU ~73 % with it.
    # H100: MosaicML 7B-70B MFU 42-46 % (HFU 50-56 %); Llama 3 405B 38-43 % MFU; 0.45 fits the
    # 50 Hopper entries of the validation set best (docs/VALIDATION.md). V100: Megatron 8.3B
    # 39 TFLOPS = 30 % of peak on one GPU. Others: my estimates from peak/bandwidth balance.
    # 2026-12-01, with recompute charged in full (recompute_time_factor 1.0) and CNN memory traffic timed
    # apart: the generation scales fitted on all published runs by `gpuwiz validate` (validation/loso.py,
    # source-weighted) applied to the values above -- ampere 0.62 → 0.68 (the fit: 0.70, one grid step
    # above; 0.68 keeps MosaicML's 7B A100 anchor, MFU 0.64, within 6 %), hopper 0.45 → 0.49, volta
    # 0.42 → 0.41; generations without five runs of their own by the pooled scale (×1.08).
    base_by_arch: dict[str, float] = field(default_factory=lambda: {
        "volta": 0.41, "turing": 0.38, "ampere": 0.68, "ada": 0.54, "hopper": 0.49,
        "blackwell": 0.45, "cdna2": 0.33, "cdna3": 0.36, "cdna4": 0.36, "gaudi": 0.38,
        "rdna3": 0.27, "xe": 0.27,
    })
    base_default: float = 0.43
    # Segment: consumer/workstation cards throttle (power/thermal), smaller caches, no NVLink/SXM
    # (my estimates; torchtune 8B LoRA 1x 4090 3083 tok/s vs A6000 4699 tok/s as a loose check)
    segment_factor: dict[str, float] = field(default_factory=lambda: {
        "datacenter": 1.0, "workstation": 0.9, "consumer": 0.8,
    })
    # Precision, applied to the efficiency at the precision's own peak. fp8 is a tokens/s multiplier over
    # bf16 (MosaicML MPT-1B/3B 8x H100: 1.27-1.35x). tf32: ResNet-50 A100 TF32 938 vs AMP 2470 img/s and
    # BERT-large 317 vs 580 seq/s at a 2x peak ratio (0.76-1.09; 0.9 taken). fp32 on CUDA cores reaches a
    # much higher share of its (low) peak (ResNet-50 V100 FP32 367 img/s vs AMP 1200 → ~2.4x).
    fp8_speedup: float = 1.3
    tf32_factor: float = 0.9
    fp32_factor: float = 1.8
    max_core: float = 0.85
    # Model size: small models are launch/memory bound. f = min(1, (N / size_ref)^size_exp):
    # MosaicML A100 125M/350M/760M/1B+ → 0.73/0.85/0.93/1.0 of the 3B-7B figure.
    size_ref_params: float = 2e9
    size_exp: float = 0.1
    # Sequence length: f = seq_decay ^ log2(s / seq_ref) above seq_ref (MosaicML 7B H100: 46 % at 2k,
    # 37 % at 8k, 31 % at 32k, 29 % at 64k; A100 64 → 47 % over the same range).
    seq_ref: int = 2048
    seq_decay: float = 0.95
    seq_floor: float = 0.55
    # Recompute: time charged for recomputed FLOPs = recompute_time_factor × their count. 1.0: the extra
    # forward of checkpointing runs the same kernels as the first (Korthikanti et al. 2022 §5). A fitted 0.3
    # (MosaicML AC-on MFU only 5-15 % below AC-off) stood in for the higher efficiency of the large models
    # that checkpoint and did not hold across sources (leave-one-source-out folds chose 0 to 0.6). What is
    # recomputed is the stack's: PyTorch's non-reentrant checkpoint stops once backward's inputs exist again and
    # skips the block's last GEMM, the MLP down projection (``recompute_skip_flops_per_token``, stacks
    # ``recompute_early_stop``): leave-one-source-out 13.9 % → 12.6 %, Hopper 14.5 % → 11.4 % (2026-12-01).
    recompute_time_factor: float = 1.0
    # FlashAttention off (scores materialised, softmax memory-bound): Megatron-LM 2021 GPT on A100 reached
    # HFU 44-52 % vs 2023 FlashAttention stacks 55-74 %.
    no_flash_factor: float = 1.0
    # Non-transformer families, relative to the transformer figure (ResNet-50 A100 AMP 2470 img/s at
    # ~24.6 GFLOP/img training = 20 % of peak → 0.33 of the A100 base; UNet/ViT/speech my estimates)
    # CNN: 1.0 -- its memory-bound layers (batch norm, ReLU, residual adds, pooling) are timed as bytes over
    # HBM bandwidth instead (``cnn_activation_passes``); the factor 0.33 it replaces made a V100 / A100
    # ResNet-50 ratio of 0.22 where DLE publishes 0.49-0.58 (the ratio of their bandwidths is 0.44).
    family_factor: dict[str, float] = field(default_factory=lambda: {
        "cnn": 1.0, "diffusion": 0.6, "vit": 0.85, "speech": 0.7,
    })
    # CNN memory traffic per sample = passes × the activation bytes a sample keeps for backward (the preset's
    # act_gib_per_sample, 16-bit; 2× in fp32/tf32). My count over a conv-BN-ReLU block: forward writes each
    # activation and the next layer reads it (2), batch norm reads its input twice (statistics, normalise:
    # +1); backward reads the saved activation and the incoming gradient and writes its gradient (3), batch
    # norm's backward reduces over its input and gradient once more (+2): ~8.
    cnn_activation_passes: float = 8.0
    hbm_eff: float = 0.8  # achieved share of datasheet HBM bandwidth (perf DEFAULTS hbm_eff)
    # Method: LoRA runs extra small adapter GEMMs and kernels; torchtune Llama-3.2-3B 1x A100: LoRA 8210
    # tok/s vs full + AC 7210 tok/s although LoRA does 6N vs 8N hardware FLOPs → ~0.85; QLoRA adds
    # NF4 dequantisation (torchtune 4090 8B: QLoRA 2413 vs LoRA 3083 tok/s → 0.78; A100 3B: 0.98).
    lora_factor: float = 0.8
    qlora_factor: float = 0.85
    # Scale: stragglers / synchronisation per doubling of nodes (MosaicML H100 7B: 128 → 512 GPUs
    # 45.7 → 42.2 % MFU; Llama 3 8k → 16k GPUs 430 → 400 TFLOPS) -- on top of explicit comm time.
    per_node_doubling_loss: float = 0.02
    # Communication: effective bus bandwidth = link × efficiency (Calculon a100_80g.json: NVLink 0.65,
    # IB 0.9; nccl-tests on H100 busbw ~360-450 GB/s of 450 GB/s per direction → 0.75 taken)
    nvlink_eff: float = 0.75
    pcie_eff: float = 0.6
    no_p2p_factor: float = 0.5  # GeForce 40/50: P2P disabled, traffic staged through host memory
    # Inter-node network assumed when none is specified: 400 Gb/s per GPU (HGX-style IB/RoCE) for
    # datacenter SXM/OAM parts; 200 Gb/s per node for datacenter PCIe; 100 Gb/s per node otherwise
    net_gbps_per_gpu_sxm: float = 400.0
    net_gbps_per_node_pcie: float = 200.0
    net_gbps_per_node_other: float = 100.0
    net_eff: float = 0.9
    # Overlap of data-parallel communication with compute (bucketed all-reduce under backward,
    # FSDP prefetch): fraction of the overlap window actually usable
    dp_overlap: float = 0.8
    # Tensor-parallel collectives sit on the critical path; share hidden by overlap (Megatron TP overlap)
    tp_overlap: float = 0.3
    # CPU offload: DeepSpeed CPU-Adam speed per node (ZeRO-Offload, Ren et al. 2021, reports ~1 B
    # params/s-class updates on a dual-socket host; my round figure) and PCIe efficiency for transfers
    cpu_adam_params_per_s_per_node: float = 2e9
    # Goodput (failures, restarts) from the catalog facility 'goodput' applies above this many GPUs
    goodput_min_gpus: int = 256


EFF = EfficiencyParams()

_ARCH_ALIASES = (
    ("blackwell", "blackwell"), ("hopper", "hopper"), ("ada", "ada"), ("ampere", "ampere"),
    ("turing", "turing"), ("volta", "volta"), ("cdna4", "cdna4"), ("cdna3", "cdna3"), ("cdna2", "cdna2"),
    ("mi3", "cdna3"), ("mi2", "cdna2"), ("gaudi", "gaudi"), ("rdna", "rdna3"), ("xe", "xe"),
)


def arch_key(architecture: str) -> str:
    a = architecture.lower()
    for needle, key in _ARCH_ALIASES:
        if needle in a:
            return key
    return a


# --------------------------------------------------------------------------------------------------
# FLOPs
# --------------------------------------------------------------------------------------------------


def attention_flops_per_token(layers: int, hidden: int, seq: int) -> float:
    """fwd+bwd attention-score FLOPs per token: 12·L·h·s (PaLM App. B; MosaicML attn_flops_per_seq·3/s)."""
    return 12.0 * layers * hidden * seq


def model_flops_per_token(n_active: float, layers: int, hidden: int, seq: int, method: str = "full") -> float:
    """Model FLOPs per training token: 6·N + 12·L·h·s (4·N + 12·L·h·s for LoRA/QLoRA)."""
    k = 4.0 if method in ("lora", "qlora") else 6.0
    return k * n_active + attention_flops_per_token(layers, hidden, seq)


def hardware_flops_per_token(
    n_active: float, layers: int, hidden: int, seq: int, method: str, ckpt: str
) -> float:
    """FLOPs actually executed: model FLOPs + recompute (full: one more forward 2·N + 4·L·h·s;
    selective: the attention core only, 4·L·h·s -- Korthikanti et al. 2022 §5)."""
    f = model_flops_per_token(n_active, layers, hidden, seq, method)
    attn_fwd = 4.0 * layers * hidden * seq
    if ckpt == "full":
        f += 2.0 * n_active + attn_fwd
    elif ckpt == "selective":
        f += attn_fwd
    return f


def recompute_skip_flops_per_token(w: WorkShape) -> float:
    """Forward FLOPs per token that full recompute with early stop does not re-run: every layer's MLP down
    projection (2·h·f per routed or shared expert a token visits), the block's last GEMM, whose output the
    backward does not need (torch.utils.checkpoint, non-reentrant, ``set_checkpoint_early_stop``)."""
    return 2.0 * w.hidden * w.ffn * (w.top_k if w.experts > 1 else 1) * w.layers


# --------------------------------------------------------------------------------------------------
# Efficiency
# --------------------------------------------------------------------------------------------------


def static_model_factor(
    params_active: float, seq: int | None, family: str, is_token: bool, method: str, e: EfficiencyParams = EFF,
    precision: str = "bf16", flash: bool = True,
) -> float:
    """The part of the efficiency that depends only on the requirements (computed once per prepare)."""
    f = min(1.0, (max(params_active, 1.0) / e.size_ref_params) ** e.size_exp) if is_token else 1.0
    if is_token and seq and seq > e.seq_ref:
        f *= max(e.seq_floor, e.seq_decay ** math.log2(seq / e.seq_ref))
    if (not is_token or family in e.family_factor) and precision != "fp32":
        # the family penalty is a tensor-core effect (memory-bound layers between fast GEMMs); on CUDA
        # cores (fp32) a CNN reaches a high share of the low peak (ResNet-50 V100 FP32: 367 img/s = 58 %)
        f *= e.family_factor.get(family, 1.0)
    if is_token and not flash:
        f *= e.no_flash_factor
    if method == "lora":
        f *= e.lora_factor
    elif method == "qlora":
        f *= e.lora_factor * e.qlora_factor
    return f


def gpu_factor(gpu: GPU, precision: str, e: EfficiencyParams = EFF, op: bool = False) -> tuple[float, float, bool]:
    """(core efficiency at the precision's peak, peak TFLOPS used, fallback) for a GPU -- before model factors;
    ``fallback``: the GPU has no tensor rate for the precision and is timed at another one (the estimate's
    note says which: estimate._precision_note).

    Without the operator model (``op``): fp8 is ``fp8_speedup`` × the bf16 tokens/s and the segment factor
    stands in for power limits. With it, the efficiency is the generation's (its reference GPU's) and
    fp8, power limits and the GPU's own rates come in through ``step_time``'s ``rel`` ratio; for fp8 the
    efficiency is quoted against the fp8 peak (``base × bf16_peak / fp8_peak`` before that ratio).
    """
    base = e.base_by_arch.get(arch_key(gpu.architecture), e.base_default)
    if not op:
        base *= e.segment_factor.get(gpu.segment, 1.0)
    fallback = False
    if precision == "fp8":
        bf = gpu.peak_tflops("bf16")
        if gpu.fp8_tflops:
            peak = float(gpu.fp8_tflops)
            return base * (1.0 if op else e.fp8_speedup) * bf / peak, peak, False
        return base, bf, True
    peak = gpu.peak_tflops(precision)
    if precision in ("bf16", "fp16") and not gpu.supports(precision):
        fallback = True
        if not gpu.fp16_tflops and not gpu.bf16_tflops:
            base *= e.fp32_factor
    elif precision == "tf32":
        base *= e.tf32_factor if gpu.tf32_tflops else e.fp32_factor
    elif precision == "fp32":
        base *= e.fp32_factor
    return base, peak, fallback


# --------------------------------------------------------------------------------------------------
# Bandwidths and collectives (nccl-tests PERFORMANCE.md: all-reduce 2·S·(n-1)/n, AG/RS S·(n-1)/n)
# --------------------------------------------------------------------------------------------------

_PCIE_GBPS = {3: 15.75, 4: 31.5, 5: 63.0, 6: 121.0}  # GB/s per direction, x16


def intra_node_bw(gpu: GPU, gpn: int, e: EfficiencyParams = EFF) -> tuple[float, str]:
    """Effective per-GPU bus bandwidth inside a node, bytes/s, and the link name."""
    if gpu.nvlink_gbps > 0 and (gpu.nvlink_multi_gpu or gpn <= 2):
        return gpu.nvlink_gbps / 2 * 1e9 * e.nvlink_eff, "NVLink"
    bw = _PCIE_GBPS.get(gpu.pcie_gen, 31.5) * 1e9 * e.pcie_eff
    if not gpu.p2p:
        return bw * e.no_p2p_factor, "PCIe (no P2P)"
    return bw, "PCIe"


def inter_node_bw(gpu: GPU, gpn: int, e: EfficiencyParams = EFF) -> tuple[float, str]:
    """Assumed inter-node bandwidth per GPU, bytes/s, and a description."""
    if gpu.segment == "datacenter" and gpu.form_factor in ("sxm", "oam", "nvl"):
        gb = e.net_gbps_per_gpu_sxm
        return gb / 8 * 1e9 * e.net_eff, f"{gb:g} Gb/s per GPU"
    per_node = e.net_gbps_per_node_pcie if gpu.segment == "datacenter" else e.net_gbps_per_node_other
    return per_node / 8 * 1e9 * e.net_eff / max(1, gpn), f"{per_node:g} Gb/s per node"


def allreduce_time(nbytes: float, n: int, bw: float) -> float:
    return 0.0 if n <= 1 else 2.0 * nbytes * (n - 1) / n / bw


def allgather_time(nbytes: float, n: int, bw: float) -> float:
    return 0.0 if n <= 1 else nbytes * (n - 1) / n / bw


# --------------------------------------------------------------------------------------------------
# Step time for one plan
# --------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class ComputeConsts:
    """Per-requirements constants for the time model (built once by ``estimate.prepare``)."""

    is_token: bool
    units_per_sample: float  # tokens per sequence (token models) or 1 (images / clips)
    model_flops_per_unit: float  # model FLOPs per token or per sample
    hw_flops_per_unit: dict[str, float]  # by checkpointing mode
    static_factor: float  # static_model_factor(...)
    layers: int
    hidden: int
    seq: int
    p_total: float
    p_trainable: float
    w_comm_bytes: float  # bytes per parameter moved by a ZeRO-3 all-gather (16-bit weights, 0.52 QLoRA)
    g_comm_bytes: float  # bytes per gradient element reduced (2 mixed, 4 fp32)
    e: EfficiencyParams = EFF
    work: WorkShape | None = None  # the model as operators (token models with a known shape)
    mem_bytes_per_unit: float = 0.0  # HBM bytes per sample of memory-bound layers timed apart (CNNs)


# The work the efficiency model's base (``base_by_arch``) stands for: a Llama-2-7B-shaped dense block (32 layers,
# hidden 4096, MHA, SwiGLU 11008 or GELU 4h), sequence 2048, 4 sequences per micro-batch -- the MosaicML 7B
# anchor (``EfficiencyParams``); method, precision and kernel flags are the workload's own
CANONICAL_TOKENS = 4 * 2048
SHAPE_ANCHOR = "ampere"  # the generation whose runs set the size / sequence curves (``RelSpeed.shape``)


def canonical_work(w: WorkShape) -> WorkShape:
    f = 11008 if w.swiglu else 16384
    per_layer = 4.0 * 4096 * 4096 + (3 if w.swiglu else 2) * 4096.0 * f
    return replace(w, layers=32, hidden=4096, heads=32, kv_heads=32, head_dim=128, ffn=f, vocab=32000, seq=2048,
                   experts=1, top_k=1, params_per_layer=per_layer)


MEMO_MAX = 200_000  # operator-time memo entries kept per catalog (cleared when full)


@dataclass(slots=True)
class RelSpeed:
    """What the operator model needs to carry the reference time to this GPU, precision and stack. Not changed
    once made (not frozen: a frozen __init__ sets each of its 17 fields through ``object.__setattr__``, and a
    context makes one per GPU, stack and layout it times)."""

    rates: GpuRates  # this GPU at the training precision, with this stack's attention kernel
    stack: StackEntry
    ref_rates: GpuRates  # the generation's reference GPU (catalog perf reference_gpu), 16-bit
    ref_stack: StackEntry  # the stack `auto` picks for the plan (what the efficiency model was fitted on)
    peak_ratio: float = 1.0  # this GPU's / the reference GPU's peak at the precision the efficiency model uses
    fp8: bool = False
    cp: int = 1
    ep: int = 1
    vp: int = 1
    # operator-model micro-batch times, shared by every RelSpeed built from one catalog (the plan search,
    # the stack alternatives and the next keystroke's estimate ask for the same ones)
    memo: dict[tuple[object, ...], float] = field(default_factory=dict)
    local: dict[tuple[int, int, int, str], float] = field(default_factory=dict)  # this RelSpeed's ratios
    pairs: dict[tuple[int, int, int, str], tuple[float, float]] = field(default_factory=dict)  # ``factors``
    # overlap: (dp, tp) as differences to the reference stack's (the efficiency model's own overlap was fitted
    # on runs of that stack), (pp, cp, ep) as the stack's own shares
    ov: tuple[float, float, float, float, float] = (0.0, 0.0, 0.0, 0.0, 0.0)
    # the generation whose published runs set the size / sequence-length curves (``SHAPE_ANCHOR``): its
    # reference GPU's rates and peak FLOP/s; None where this generation is that one (no shape term)
    anchor_rates: GpuRates | None = None
    anchor_peak: float = 0.0
    ref_peak: float = 0.0  # FLOP/s of the reference GPU at the precision of ``ref_rates``
    # One estimator context's front to ``memo``: that context times one work shape (one model, sequence and
    # method), so its entries are keyed by the identities of the rates (``rate_keys``: this GPU's, the
    # reference's, the anchor's -- the arguments ``estimate._rates`` memoises them by) instead of hashing the
    # work and the rates on every lookup. None: ``memo`` alone (the same values, looked up slower).
    wmemo: dict[tuple[object, ...], float] | None = None
    rate_keys: tuple[tuple[object, ...], tuple[object, ...], tuple[object, ...]] = ((), (), ())
    # the work shape's number in ``memo``'s catalog (estimate._work_key: one per distinct WorkShape, never
    # reused): with ``rate_keys``, ``memo``'s entries are keyed by it instead of hashing and comparing the work
    # and the rates on every lookup; -1: keyed by the work and the rates themselves
    work_key: int = -1

    def _t(self, w: WorkShape, r: GpuRates, st: StackEntry, fp8: bool, units_mb: float, mb: int, tp: int, pp: int,
           ckpt: str, rk: tuple[object, ...] = ()) -> float:
        front = self.wmemo
        if front is not None and rk:
            fkey = ("t", rk, st.id, fp8, mb, tp, pp, ckpt, self.cp, self.ep)
            got = front.get(fkey)
            if got is not None:
                return got
        wk = self.work_key
        key = (wk, rk, st.id, fp8, mb, tp, pp, ckpt, self.cp, self.ep) if wk >= 0 and rk else \
            (w, r, st.id, fp8, mb, tp, pp, ckpt, self.cp, self.ep)
        hit = self.memo.get(key)
        if hit is None:
            if len(self.memo) > MEMO_MAX:
                self.memo.clear()
            hit = microbatch_time(w, r, st, tokens=units_mb, tp=tp, cp=self.cp, ep=self.ep, layers=w.layers / pp,
                                  head=True, ckpt=ckpt, fp8=fp8).total_s
            self.memo[key] = hit
        if front is not None and rk:
            front[fkey] = hit
        return hit

    def shape(self, w: WorkShape, units_mb: float, mflops_unit: float, mb: int, tp: int, pp: int) -> float:
        """How much more this work's shape costs on the reference GPU than on the anchor generation's.

        The efficiency model's size and sequence-length curves were set on the anchor generation's runs
        (MosaicML A100 tables); a generation whose GEMMs are faster against its attention kernels, fixed
        per-GEMM costs and launches (Hopper with FlashAttention-2) loses more on small models, small
        micro-batches and long sequences. Each side: eff_op(canonical work) / eff_op(this work), eff_op =
        model FLOPs / (operator-model time × peak), on the stack the efficiency model assumes, without
        recompute (charged by its FLOPs); the term is their ratio (1 on the anchor generation)."""
        if self.anchor_rates is None or self.ref_peak <= 0 or self.anchor_peak <= 0:
            return 1.0
        key = (mb, tp, pp, "shape")
        hit = self.local.get(key)
        if hit is None:
            front = self.wmemo
            fkey = ("shape", self.rate_keys[1], self.rate_keys[2], self.ref_stack.id, mb, tp, pp, self.cp, self.ep)
            if front is not None and self.rate_keys[1]:
                hit = front.get(fkey)
                if hit is not None:
                    self.local[key] = hit
                    return hit
            # the same for every GPU of the generation: shared through the catalog-wide memo
            wk = self.work_key
            gkey = ("shape", wk, self.rate_keys[1], self.rate_keys[2], self.ref_stack.id, units_mb, mflops_unit, mb, tp,
                    pp, self.cp, self.ep) if wk >= 0 and self.rate_keys[1] and self.rate_keys[2] else \
                ("shape", w, self.ref_rates, self.anchor_rates, self.ref_stack.id, units_mb, mflops_unit, mb, tp,
                 pp, self.cp, self.ep)
            hit = self.memo.get(gkey)
            if hit is None:
                flops = units_mb * mflops_unit / (tp * pp * max(1, self.cp))
                loss = []
                for r, peak in ((self.ref_rates, self.ref_peak), (self.anchor_rates, self.anchor_peak)):
                    t = microbatch_time(w, r, self.ref_stack, tokens=units_mb, tp=tp, cp=self.cp, ep=self.ep,
                                        layers=w.layers / pp, head=True, ckpt="none", fp8=False).total_s
                    eff = flops / (t * peak) if t > 0 else 0.0
                    loss.append(self._canon(w, r, peak) / eff if eff > 0 else 1.0)
                hit = self.memo[gkey] = loss[0] / loss[1]
            if front is not None and self.rate_keys[1]:
                front[fkey] = hit
            self.local[key] = hit
        return hit

    def _canon(self, w: WorkShape, r: GpuRates, peak: float) -> float:
        c = canonical_work(w)
        key = ("canon", c, r, self.ref_stack.id)
        hit = self.memo.get(key)
        if hit is None:
            t = microbatch_time(c, r, self.ref_stack, tokens=CANONICAL_TOKENS, tp=1, cp=1, ep=1, layers=c.layers,
                                head=True, ckpt="none", fp8=False).total_s
            n = c.layers * c.params_per_layer + c.vocab * c.hidden
            mf = model_flops_per_token(n, c.layers, c.hidden, c.seq, "lora" if c.frozen else "full")
            hit = self.memo[key] = CANONICAL_TOKENS * mf / (t * peak)
        return hit

    def factors(self, w: WorkShape, units_mb: float, mflops_unit: float, mb: int, tp: int, pp: int,
                ckpt: str) -> tuple[float, float]:
        """(``ratio``, ``shape``) of one micro-batch, in one lookup (step_time applies both, in that order)."""
        key = (mb, tp, pp, ckpt)
        hit = self.pairs.get(key)
        if hit is None:
            hit = self.pairs[key] = (self.ratio(w, units_mb, mb, tp, pp, ckpt),
                                     self.shape(w, units_mb, mflops_unit, mb, tp, pp))
        return hit

    def ratio(self, w: WorkShape, units_mb: float, mb: int, tp: int, pp: int, ckpt: str) -> float:
        """t_op(this) / t_op(reference) × peak ratio for one micro-batch."""
        key = (mb, tp, pp, ckpt)
        hit = self.local.get(key)
        if hit is None:
            ref = self._t(w, self.ref_rates, self.ref_stack, False, units_mb, mb, tp, pp, ckpt, self.rate_keys[1])
            this = self._t(w, self.rates, self.stack, self.fp8, units_mb, mb, tp, pp, ckpt, self.rate_keys[0])
            hit = self.local[key] = this / ref * self.peak_ratio if ref > 0 else 1.0
        return hit


def _unit(x: float) -> float:
    """``min(1.0, max(0.0, x))``: an overlap share clipped to [0, 1]."""
    x = x if x > 0.0 else 0.0
    return x if x < 1.0 else 1.0


@dataclass(slots=True)
class StepTime:
    step_s: float
    compute_s: float
    bubble_s: float
    dp_comm_s: float  # exposed data-parallel / ZeRO communication per step
    tp_comm_s: float
    offload_s: float
    core_eff: float


def step_time(
    cc: ComputeConsts, gpu: GPU, core_gpu: float, peak_tflops: float, count: int, gpn: int, nodes: int,
    dp: int, tp: int, pp: int, zero: int, offload: str, mb: int, ga: int, ckpt: str,
    intra: float | None = None, inter: float | None = None, *, rel: RelSpeed | None = None,
) -> StepTime:
    """Seconds per optimizer step: compute + pipeline bubble + exposed communication + offload.

    The efficiency model gives the micro-batch time on the generation's reference GPU and stack; with
    ``rel`` (token models with a known shape) the operator-level model carries it to this GPU, precision
    and stack: efficiency = efficiency_reference × [t_op(reference) · peak_reference] / [t_op(this) · peak]
    (core.schedule), i.e. t = t_efficiency-model × t_op(this) / t_op(reference) × peak / peak_reference; and
    off the anchor generation (``SHAPE_ANCHOR``, whose runs set the size and sequence curves) by
    ``RelSpeed.shape``, what the work's shape costs on the reference GPU over what it costs on the anchor's."""
    e = cc.e
    core = core_gpu * cc.static_factor
    if nodes > 1:
        scale = 1.0 - e.per_node_doubling_loss * math.log2(nodes)
        core *= scale if scale > 0.5 else 0.5  # (max(0.5, scale): hot, and the builtin's call costs more than the test)
    max_core = e.max_core
    if max_core < core:
        core = max_core
    peak = peak_tflops * 1e12
    mp = tp * pp
    cp = rel.cp if rel else 1
    cpn = cp if cp > 1 else 1  # (max(1, cp))
    units_mb = mb * cc.units_per_sample
    rec_flops = cc.hw_flops_per_unit[ckpt] - cc.model_flops_per_unit
    if ckpt == "full" and rel is not None and cc.work is not None and rel.ref_stack.recompute_early_stop:
        rec_flops -= recompute_skip_flops_per_token(cc.work)
    flops = cc.model_flops_per_unit + e.recompute_time_factor * rec_flops
    t_mb = units_mb * flops / mp / cpn / (peak * core)
    if cc.mem_bytes_per_unit > 0 and gpu.memory_bandwidth_gbps > 0:
        # memory-bound layers between the convolutions: bytes over achieved HBM bandwidth
        t_mb += units_mb * cc.mem_bytes_per_unit / mp / (gpu.memory_bandwidth_gbps * 1e9 * e.hbm_eff)
        core = units_mb * flops / mp / (t_mb * peak)
    dp_ov, tp_ov, pp_ov, cp_ov, ep_ov = e.dp_overlap, e.tp_overlap, 0.0, 0.0, 0.0
    vp = 1
    if rel is not None and cc.work is not None:
        ratio, shape = rel.factors(cc.work, units_mb, cc.model_flops_per_unit, mb, tp, pp, ckpt)
        t_mb *= ratio  # the peak ratio is already in t_mb
        t_mb *= shape
        d_dp, d_tp, pp_ov, cp_ov, ep_ov = rel.ov
        if d_dp:
            dp_ov = _unit(dp_ov + d_dp)
        if d_tp:
            tp_ov = _unit(tp_ov + d_tp)
        vp = rel.vp
        core = units_mb * flops / mp / cpn / (t_mb * peak) if t_mb > 0 else core
    compute = t_mb * ga
    # 1F1B: (p - 1) micro-batch slots idle per step (Narayanan 2021 §2.2); interleaved with v virtual
    # stages per rank: (p - 1)/v (Narayanan 2021 §2.2.2)
    bubble = t_mb * (pp - 1) / (vp if vp > 1 else 1) if pp > 1 else 0.0

    if intra is None:
        intra = intra_node_bw(gpu, gpn, e)[0]
    if inter is None:
        inter = inter_node_bw(gpu, gpn, e)[0]
    p_mp = cc.p_total / mp
    tr_mp = cc.p_trainable / mp
    dp_bw = inter if (nodes > 1 and nodes > pp) else intra
    dp_comm = 0.0
    if dp > 1:
        if zero >= 3:
            # per micro-batch: all-gather params (fwd + bwd) + reduce-scatter grads = 1.5x DDP volume (ZeRO §7)
            t = (2 * allgather_time(cc.w_comm_bytes * p_mp, dp, dp_bw)
                 + allgather_time(cc.g_comm_bytes * tr_mp, dp, dp_bw))
            exposed = t - dp_ov * t_mb
            dp_comm = ga * (exposed if exposed > 0.0 else 0.0)
        else:
            # once per step: gradient all-reduce (ZeRO-1/2: reduce-scatter + all-gather, same volume),
            # overlapped with the backward pass (2/3 of the last micro-batch)
            t = allreduce_time(cc.g_comm_bytes * tr_mp, dp, dp_bw)
            exposed = t - dp_ov * (2.0 / 3.0) * t_mb
            dp_comm = exposed if exposed > 0.0 else 0.0
    tp_comm = 0.0
    if tp > 1 and cc.is_token:
        # Megatron: 2 all-reduces forward + 2 backward per layer of s·b·h 16-bit activations (§3 of
        # Shoeybi et al. 2019); one more pair with full recompute
        n_ar = 6 if ckpt == "full" else 4
        bw = intra if tp <= gpn else inter
        per = allreduce_time(2.0 * units_mb * cc.hidden, tp, bw)
        tp_comm = ga * (cc.layers / pp) * n_ar * per * (1.0 - tp_ov)
    if rel is not None and cc.work is not None:
        w = cc.work
        assert w is not None
        tok = units_mb / cpn
        if pp > 1:  # p2p: activations forward, their gradients backward, per micro-batch and stage boundary
            bw = intra if gpn >= tp * pp else inter
            tp_comm += ga * 2 * (2.0 * tok * cc.hidden / tp) / bw * (1.0 - pp_ov)
        if cp > 1:  # ring attention: K and V chunks travel cp - 1 hops per layer, forward and backward
            bw = intra if tp * cp <= gpn else inter
            kv = 2.0 * tok * w.kv_heads * w.head_dim / tp * 2.0
            tp_comm += ga * (cc.layers / pp) * 3 * kv * (cp - 1) / bw * (1.0 - cp_ov)
        ep = rel.ep if rel else 1
        if ep > 1 and w.experts > 1:  # all-to-all dispatch + combine, forward and backward
            bw = intra if tp * ep <= gpn else inter
            a2a = 2.0 * tok * w.top_k * cc.hidden * 2.0 * (ep - 1) / ep
            tp_comm += ga * (cc.layers / pp) * 3 * a2a / bw * (1.0 - ep_ov)
        if pp > 1 and vp > 1:  # interleaving multiplies the p2p traffic by vp
            tp_comm += ga * (vp - 1) * 2 * (2.0 * tok * cc.hidden / tp) / (intra if gpn >= tp * pp else inter) \
                * (1.0 - pp_ov)
    off = 0.0
    if offload != "none":
        pcie = _PCIE_GBPS.get(gpu.pcie_gen, 31.5) * 1e9 * e.pcie_eff
        shard = tr_mp / (dp if zero >= 1 else 1)
        # grads to host + updated 16-bit params back, then CPU Adam on this node's shards
        off = (cc.g_comm_bytes + 2.0) * shard / pcie
        off += shard * min(gpn, count) / e.cpu_adam_params_per_s_per_node
        if offload == "optimizer+params":
            # each micro-batch streams this GPU's parameter shard from host twice (fwd, bwd), half hidden
            off += ga * 0.5 * 2 * cc.w_comm_bytes * p_mp / dp / pcie
    step = compute + bubble + dp_comm + tp_comm + off
    return StepTime(step, compute, bubble, dp_comm, tp_comm, off, core)
