"""Achieved hardware rates as data: what a GPU sustains on GEMMs, attention, memory-bound kernels.

The numbers live in catalog.yaml's ``perf:`` section, one entry per GPU architecture (``id`` = the
``compute.arch_key`` of the GPU's architecture, e.g. ``hopper``) with optional per-GPU overrides
(``id`` = a GPU id); an overlay can tune either without a release. Each entry carries its ``source``
and ``as_of``; ``check()`` rejects values that cannot be right (efficiencies outside (0, 1], a rate
above the datasheet, a sustained clock above the boost clock).

``rates_for(catalog, gpu, precision)`` merges architecture entry and GPU override into ``GpuRates``:
per-second figures the time model (``core.schedule``) uses directly.
"""


from dataclasses import dataclass
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, model_validator

if TYPE_CHECKING:  # catalog imports this module for its `perf` field
    from gpuwiz.core.catalog import GPU

Precision16 = ("bf16", "fp16")


class PerfEntry(BaseModel):
    """Achieved rates for one architecture (all fields) or one GPU (any subset: overrides)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, defer_build=True)
    id: str
    # Large-GEMM efficiency: best cuBLAS/hipBLASLt matmul throughput / dense datasheet peak, by precision
    gemm_eff: dict[str, float] = Field(default_factory=dict)
    # Fixed time per GEMM (launch, tile tail, wave quantisation): t = FLOPs / rate + gemm_fixed_us
    gemm_fixed_us: float | None = Field(None, ge=0, le=1000)
    # Fused attention kernel (FlashAttention class) forward / backward, fraction of the 16-bit dense peak,
    # by kernel generation ("fa2", "fa3"); backward is slower (more GEMMs, recompute of the scores)
    attn_fwd_eff: dict[str, float] = Field(default_factory=dict)
    attn_bwd_eff: dict[str, float] = Field(default_factory=dict)
    # Achieved fraction of the datasheet HBM/GDDR bandwidth on streaming kernels
    hbm_eff: float | None = Field(None, gt=0, le=1)
    # Sustained tensor clock under the card's power limit, as a fraction of the boost clock the peak assumes
    sustained_clock: float | None = Field(None, gt=0, le=1)
    # Host time to launch one kernel in eager mode (hidden when the GPU is busier than the host)
    launch_us: float | None = Field(None, ge=0, le=1000)
    # A FlashAttention-class fused kernel exists for this architecture (FA2 needs sm80+; Volta has none)
    flash: bool | None = None
    # The GPU whose published runs set this generation's efficiency (compute.EfficiencyParams); the
    # operator model carries that efficiency to the generation's other GPUs
    reference_gpu: str | None = None
    source: str = ""
    as_of: str = ""
    notes: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _check(self) -> "PerfEntry":
        for name in ("gemm_eff", "attn_fwd_eff", "attn_bwd_eff"):
            for k, v in getattr(self, name).items():
                if not 0 < v <= 1:
                    raise ValueError(f"{name}.{k}: an efficiency must be in (0, 1], got {v}")
        for k, fwd in self.attn_fwd_eff.items():
            bwd = self.attn_bwd_eff.get(k)
            if bwd is not None and bwd > fwd:
                raise ValueError(f"attn_bwd_eff.{k}: backward ({bwd}) cannot beat forward ({fwd})")
        return self


@dataclass(frozen=True, slots=True)
class GpuRates:
    """Per-second rates of one GPU at one precision (what the time model consumes)."""

    gemm_flops: float  # large-GEMM FLOP/s at the training precision
    gemm_fixed_s: float
    attn_fwd_flops: float  # FLOP/s of the fused attention kernel
    attn_bwd_flops: float
    hbm_bytes: float  # achieved bytes/s
    launch_s: float
    fused_attention: bool  # the architecture runs a FlashAttention-class kernel at all
    basis: str  # which entries set it


DEFAULTS = PerfEntry(
    id="default", gemm_eff={"bf16": 0.7, "fp16": 0.7, "fp8": 0.6, "tf32": 0.6, "fp32": 0.8}, gemm_fixed_us=5.0,
    attn_fwd_eff={"fa2": 0.4}, attn_bwd_eff={"fa2": 0.3}, hbm_eff=0.8, sustained_clock=1.0, launch_us=6.0,
    source="gpuwiz fallback for an architecture without a perf entry (my estimate)",
)


def _merge(base: PerfEntry, top: PerfEntry | None) -> PerfEntry:
    if top is None:
        return base
    upd = {k: v for k, v in top.model_dump(exclude_unset=True).items() if k not in ("id", "source", "as_of", "notes")}
    for k in ("gemm_eff", "attn_fwd_eff", "attn_bwd_eff"):
        if k in upd:
            upd[k] = {**getattr(base, k), **upd[k]}
    return base.model_copy(update=upd)


def rates_for(perf: dict[str, PerfEntry], gpu: "GPU", arch: str, precision: str, attention: str, *,
              own: bool = True) -> GpuRates:
    """Rates for ``gpu`` (architecture key ``arch``) at ``precision``, with the stack's attention kernel.

    ``own=False`` ignores a per-GPU entry: the generation's reference rates, so that a per-GPU overlay on
    the reference GPU itself still changes that GPU's estimate."""
    entry = _merge(_merge(DEFAULTS, perf.get(arch)), perf.get(gpu.id) if own else None)
    clock = entry.sustained_clock or 1.0
    peak16 = gpu.peak_tflops("bf16") * 1e12
    if precision == "fp8" and gpu.fp8_tflops:
        peak, key = float(gpu.fp8_tflops) * 1e12, "fp8"
    elif precision == "fp8":
        peak, key = peak16, "bf16"
    elif precision in Precision16:
        peak, key = gpu.peak_tflops(precision) * 1e12, precision if gpu.supports(precision) else "fp32"
    else:
        peak, key = gpu.peak_tflops(precision) * 1e12, precision if (precision == "fp32" or gpu.tf32_tflops) else "fp32"
    eff = entry.gemm_eff.get(key) or entry.gemm_eff.get("bf16") or 0.7
    fused = entry.flash is not False and attention != "eager"
    kern = attention if attention in entry.attn_fwd_eff else "fa2"
    a_f = entry.attn_fwd_eff.get(kern, 0.4)
    a_b = entry.attn_bwd_eff.get(kern, a_f * 0.75)
    # attention runs in 16 bit even in fp8 recipes (Transformer Engine keeps FlashAttention in bf16)
    a_peak = peak16 if precision in ("fp8", *Precision16) else peak
    basis = " + ".join(x for x in (perf[arch].id if arch in perf else "default", gpu.id if gpu.id in perf else "")
                       if x)
    return GpuRates(
        gemm_flops=peak * eff * clock, gemm_fixed_s=(entry.gemm_fixed_us or 0.0) * 1e-6,
        attn_fwd_flops=a_peak * a_f * clock, attn_bwd_flops=a_peak * a_b * clock,
        hbm_bytes=gpu.memory_bandwidth_gbps * 1e9 * (entry.hbm_eff or 0.8), launch_s=(entry.launch_us or 0.0) * 1e-6,
        fused_attention=fused, basis=basis,
    )
