"""The estimator: memory per GPU, parallel plan, throughput and time for one GPU type × count.

Two entry points share one code path (no duplicated formulas):

* ``estimate(req, catalog, gpu=None, count=None, gpus_per_node=None) -> Estimate`` -- the full, typed
  pydantic answer with breakdowns, plan, throughput, time, problems and assumptions. Invalid input
  (unknown GPU id, missing model information) raises ``GpuwizError``; valid input never raises: an
  infeasible case returns ``feasible=False`` with ``problems`` in words.
* The fast path for the recommender, which scores hundreds of GPU × count candidates per keystroke::

      ctx = prepare(req, catalog)          # resolve the model and per-requirement constants once
      r = quick(ctx, "h100-sxm", 8)        # -> QuickResult (NamedTuple): fits, per_gpu_gib, wall_hours,
                                           #    gpu_hours, mfu, tokens/samples per s, plan, reason

  ``estimate`` is ``prepare`` + ``quick`` + building the pydantic models (``estimate_from(ctx, ...)``
  reuses a ``ctx``). ``quick`` does closed-form arithmetic only (the memory is linear in the
  micro-batch, so the plan search solves for the micro-batch instead of trying values).

Models: ``core.memory`` (bytes), ``core.compute`` (FLOPs, efficiency, communication, step time),
``core.parallel`` (plan choice), ``core.arch`` (parameter count). Calibration (``calibration:`` in the
config) wins: measured tokens/s (or samples/s), MFU and peak memory replace the model's values at the
user's own hardware (``hardware:``) and scale the model's values for other candidates; without
``hardware:`` they replace the values for every candidate.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from dataclasses import replace as dc_replace
from typing import NamedTuple

from gpuwiz.core import gcpause
from gpuwiz.core.arch import GATED_MLPS, block_params, fmt_params, largest_layer_params, lora_params, resolve_model
from gpuwiz.core.catalog import GPU, Catalog, did_you_mean
from gpuwiz.core.compute import (
    EFF,
    SHAPE_ANCHOR,
    ComputeConsts,
    EfficiencyParams,
    RelSpeed,
    StepTime,
    arch_key,
    gpu_factor,
    hardware_flops_per_token,
    inter_node_bw,
    intra_node_bw,
    model_flops_per_token,
    static_model_factor,
    step_time,
)
from gpuwiz.core.errors import GpuwizError
from gpuwiz.core.hardware import GpuRates, PerfEntry, rates_for
from gpuwiz.core.memory import (
    PARAMS,
    MemoryConsts,
    MemoryParams,
    MemParts,
    memory_consts,
    plan_memory,
    state_bytes,
    states,
)
from gpuwiz.core.models import (
    BATCH_SLACK,
    Checkpointing,
    Estimate,
    Memory,
    MemoryBreakdown,
    ModelInfo,
    Plan,
    Range,
    Requirements,
    ResolvedModel,
    StackAlternative,
    Throughput,
    Time,
)
from gpuwiz.core.parallel import (
    Choice,
    ChoiceIndex,
    Pinned,
    Row,
    Shape,
    candidate_shapes,
    choice_index,
    choose_from_table,
    choose_indexed,
    ckpt_options,
    memory_table,
    pow2_at_most,
    shape_problem,
    vp_for,
)
from gpuwiz.core.ranges import (
    RangeTable,
    Spread,
    around,
    basis_text,
    bundled_ranges,
    group_keys,
    range_for,
    scale_group,
)
from gpuwiz.core.schedule import WorkShape
from gpuwiz.core.stacks import StackEntry, auto_stack
from gpuwiz.core.units import GIB
from gpuwiz.i18n import N_, Msg, _

TOKENS_PER_MICROBATCH_CAP = 16_384  # mb·s cap: llm-foundry configs use 8k-32k tokens per micro-batch
NONTOKEN_MB_CAP = 64
PP_MICROBATCHES_PER_STAGE = 4  # pinned pipelines: micro-batches per pipeline ≥ 4 × stages (see _mb_cap_of)
BYTES_PER_TOKEN = 4.0  # ~4 bytes of English text per BPE token (OpenAI tokenizer rule of thumb)
DEFAULT_GB_PRETRAIN_TOKENS = 4 * 2**20  # Llama 1/2 pre-training global batch: 4M tokens
DEFAULT_GB_FINETUNE = 64  # sequences
DEFAULT_GB_NONTOKEN = 256  # images (ResNet-50 standard batch, Goyal et al. 2017)
# A defaulted global batch (training.global_batch unset) grows with the cluster -- whole micro-batches on every
# replica, as teams scale the batch (and the learning rate) with the GPUs -- up to the most a run of its kind uses:
# a bigger batch is another run (too few optimizer steps, a learning rate no recipe has). Past it the micro-batch
# shrinks, and a shape whose replicas alone overshoot it is dropped (recommend.DROP_BATCH_GROWN).
GROWN_BATCH_MAX_PRETRAIN_TOKENS = 16 * 2**20  # Llama 3 405B's largest pre-training batch: 16M tokens (Meta 2024,
#   "The Llama 3 Herd of Models" §3.4.1: 4M, then 8M, then 16M tokens)
GROWN_BATCH_MAX_FINETUNE = 8 * DEFAULT_GB_FINETUNE  # 512 sequences, for LoRA / QLoRA (adapters fine-tune on
#   instruction-sized data). Judgement: published fine-tuning recipes use 64-512 (Tülu 3's SFT: 128 sequences of
#   4,096 tokens, Lambert et al. 2024). Full training takes the pre-training limit: on a trillion tokens it is
#   continued pre-training, with pre-training's batches.
GROWN_BATCH_MAX_NONTOKEN = 8192  # images: Goyal et al. 2017 kept ResNet-50's ImageNet accuracy up to a batch of 8k
#   with the linear learning-rate rule and warm-up, and lost it beyond
DEFAULT_GOODPUT = 0.9  # Llama 3: >90 % effective training time at 16k GPUs (§3.8)


class QuickResult(NamedTuple):
    fits: bool
    per_gpu_gib: float
    capacity_gib: float
    wall_hours: float
    gpu_hours: float
    mfu: float
    tokens_per_s_per_gpu: float | None
    samples_per_s_per_gpu: float | None
    plan: str  # e.g. "ZeRO-3, mb 4, ckpt selective" (a technical label: the validation harness's table)
    reason: Msg | None  # why it does not fit / run (memoised: rendered where shown, ``str`` is English)
    nodes: int
    gpus_per_node: int
    host_ram_gib: float  # per node (CPU offload)
    detail: _Detail


@dataclass(slots=True)
class _Detail:
    gpu: GPU
    count: int
    gpn: int
    nodes: int
    choice: Choice
    ga: int
    mem: MemParts
    mem_scale: float
    st: StepTime | None  # None: not timed (``quick(..., time_misfit=False)`` of a plan that does not fit)
    peak_tflops: float
    units_per_s_per_gpu: float
    problems: list[Msg]  # memoised with the candidate: rendered (``Msg.text``) where shown
    notes: list[Msg]


# gpu_factor()'s (core efficiency, peak TFLOPS, precision fallback) + intra- and inter-node bandwidth (bytes/s)
GpuFactors = tuple[float, float, bool, float, float]


@dataclass(slots=True)
class Context:
    """Everything that depends only on the requirements (built once by ``prepare``).

    The ``_*`` dict fields are the fast path's lookup tables, filled as ``quick`` meets candidates and
    keyed by what their values depend on below the (GPU, count, GPUs per node) of a candidate: layouts and
    memory rows per count, plan choices per (rows, memory budget, host budget) -- shared by GPUs of the same
    memory --, GPU factors per GPU id, stack picks per (vendor, layout), operator-model times per rate
    identity (``_wmemo``: this context times one work shape). They live as long as the context (one
    requirements object; core.memo shares them between contexts of the same plan key) and hold only
    values the same arithmetic would compute again (tests/core/test_fastpath.py checks a filled context
    against fresh ones)."""

    req: Requirements
    catalog: Catalog
    model: ResolvedModel
    mc: MemoryConsts
    cc: ComputeConsts
    pinned: Pinned
    ckpts: tuple[Checkpointing, ...]
    seq: int
    global_batch: int
    global_batch_defaulted: bool
    total_units: float  # tokens (token models) or samples
    data_note: str
    p_trainable: float
    goodput: float
    headroom: float
    eff: EfficiencyParams
    notes: list[str]
    gpus: dict[str, GPU]
    mem_scale: float = 1.0
    thr_scale: float = 1.0  # calibration with a reference config
    thr_direct: float | None = None  # units/s/GPU replacing the model (calibration without hardware)
    calib_notes: list[str] = field(default_factory=list)
    _shape_cache: dict[tuple[int, ...], tuple[list[Shape], list[Row]]] = field(default_factory=dict)
    _host_cache: dict[tuple[str, int], float] = field(default_factory=dict)
    _mem_cache: dict[tuple[int, Shape, str, int, int], tuple[MemParts, str]] = field(default_factory=dict)
    _row_cache: dict[tuple[int, Shape], Row] = field(default_factory=dict)
    _gpu_cache: dict[tuple[str, int], GpuFactors] = field(default_factory=dict)
    _mb_cap_fn: Callable[[int], int] = field(init=False, repr=False)
    ranges: RangeTable | None = None  # cross-validated residual table (gpuwiz/data/ranges.yaml)
    stacks: dict[str, StackEntry] = field(default_factory=dict)
    perf: dict[str, PerfEntry] = field(default_factory=dict)
    cp: int = 1
    ep: int = 1
    vp: int = 1
    stack_override: str | None = None  # estimate_from's stack alternatives: this stack instead of the configured one
    _rel_cache: dict[tuple[str, Shape, str], RelSpeed | None] = field(default_factory=dict)
    _stack_cache: dict[tuple[str, Shape, str], tuple[StackEntry | None, str]] = field(default_factory=dict)
    _relspeed: dict[tuple[str, str, str, int, int, int], RelSpeed] = field(default_factory=dict)
    _cc_cache: dict[int, ComputeConsts] = field(default_factory=dict)  # by expert-parallel degree (_cc_for)
    # operator-model times of this context's one work shape, by rate identities (compute.RelSpeed.wmemo)
    _wmemo: dict[tuple[object, ...], float] = field(default_factory=dict)
    _gf_cache: dict[str, tuple[float, float, bool]] = field(default_factory=dict)  # gpu_factor by GPU id
    _ref_stack_cache: dict[tuple[str, Shape], StackEntry | None] = field(default_factory=dict)  # by (vendor, layout)
    # the speed spread (_speed_spread, wall_hours_high) by its group keys: (generation, stack, scale group)
    _spread_cache: dict[tuple[str, str, str], Spread | None] = field(default_factory=dict)
    # ... and by what those keys are read from: (architecture, vendor, layout, scale group, stack override)
    _spread_front: dict[tuple[object, ...], Spread | None] = field(default_factory=dict)
    _mem_spread_front: dict[tuple[object, ...], Spread | None] = field(default_factory=dict)  # lightest_memory_high's
    _arch_cache: dict[str, str] = field(default_factory=dict)  # compute.arch_key by GPU architecture
    _rows_cache: dict[tuple[object, ...], list[Row]] = field(default_factory=dict)  # filtered layout tables
    _choice_cache: dict[tuple[tuple[object, ...], float, float], Choice] = field(default_factory=dict)  # _choose
    _choice_index: dict[tuple[object, ...], ChoiceIndex] = field(default_factory=dict)  # _choose: rows by tkey
    _choice_once: dict[tuple[object, ...], bool] = field(default_factory=dict)  # _choose: rows asked one budget so far
    _step_cache: dict[tuple[object, ...], StepTime] = field(default_factory=dict)  # plans timed by _step_units_per_s
    _host_need_cache: dict[tuple[int, Shape], float] = field(default_factory=dict)  # offload host bytes per GPU
    _act_cache: dict[tuple[int, int, str, int, int], float] = field(default_factory=dict)  # memory.micro_batch_terms
    _shape_intern: dict[tuple[int, int, int, int, int, int], Shape] = field(default_factory=dict)  # candidate_shapes
    # quick()'s memory stage by (layout key, memory size, host-RAM limit[, configured stack, vendor]): _Stage
    _stage_cache: dict[tuple[object, ...], _Stage] = field(default_factory=dict)
    # _fit's answer for a plan that fits without a sentence, by (count, layout, dp, mb, checkpointing, memory scale)
    _clean_fits: dict[tuple[object, ...], _Fit] = field(default_factory=dict)
    _work_num: int = -1  # _work_key's answer, looked up once
    any_layout: bool = field(init=False)  # pinned.any_layout, read on every quick()
    batch_most: float = field(init=False)  # the most samples a step may train (batch_most)

    def __post_init__(self) -> None:
        caps: dict[int, int] = {}  # _mb_cap_of per data-parallel degree (it reads fields fixed at construction)
        # (the values, not the context: a closure over the context would make it a reference cycle, freed
        # only by the cycle collector)
        model, seq, global_batch, pp = self.model, self.seq, self.global_batch, self.pinned.pp
        most = self.batch_most = batch_most(model, self.req.training.method, seq, global_batch,
                                            not self.global_batch_defaulted)

        def cap(dp: int) -> int:
            hit = caps.get(dp)
            if hit is None:
                hit = caps[dp] = _mb_cap_of(model, seq, global_batch, pp, dp, most)
            return hit

        self._mb_cap_fn = cap
        self.any_layout = self.pinned.any_layout


# --------------------------------------------------------------------------------------------------
# prepare
# --------------------------------------------------------------------------------------------------


def _data_total(req: Requirements, model: ResolvedModel, seq: int) -> tuple[float, str]:
    """The run's tokens (token models) or samples, and the sentence saying how they were counted."""
    d = req.data
    total, data_note = 0.0, ""
    if model.is_token_model:
        if d.tokens:
            total = d.tokens * d.epochs
            data_note = _("{total:.3g} tokens ({tokens:.3g} × {epochs:g} epochs)").format(
                total=total, tokens=d.tokens, epochs=d.epochs)
        elif d.samples:
            total = d.samples * d.epochs * seq
            data_note = _("{total:.3g} tokens = {samples:.3g} samples × {epochs:g} epochs × {seq} tokens "
                          "(packed)").format(total=total, samples=d.samples, epochs=d.epochs, seq=seq)
        elif d.dataset_gb:
            total = d.dataset_gb * 1e9 / BYTES_PER_TOKEN * d.epochs
            data_note = _("{total:.3g} tokens from {gb:g} GB of text at ~4 bytes/token × {epochs:g} "
                          "epochs").format(total=total, gb=d.dataset_gb, epochs=d.epochs)
    else:
        kb = d.sample_kb
        if d.samples:
            total = d.samples * d.epochs
            data_note = _("{total:.3g} samples ({samples:.3g} × {epochs:g} epochs)").format(
                total=total, samples=d.samples, epochs=d.epochs)
        elif d.dataset_gb and kb:
            total = d.dataset_gb * 1e6 / kb * d.epochs
            data_note = _("{total:.3g} samples from {gb:g} GB at {kb:g} kB/sample × {epochs:g} epochs").format(
                total=total, gb=d.dataset_gb, kb=kb, epochs=d.epochs)
    if not total:
        data_note = _("no data size given (data.tokens or data.samples): time not estimated")
    return float(total), data_note


def prepare(
    req: Requirements, catalog: Catalog, *, eff: EfficiencyParams = EFF, mem_params: MemoryParams = PARAMS
) -> Context:
    """Resolve the model and precompute every per-requirement constant (raises GpuwizError on bad input)."""
    model = resolve_model(req.model, catalog)
    tr = req.training
    notes: list[str] = list(model.notes)
    seq = int(req.model.seq_len or model.seq_len or 1)
    res = req.model.resolution or model.resolution
    lora = tr.method in ("lora", "qlora")
    p_adapter = lora_params(model, tr.lora_rank) if lora else 0.0
    p_tr = p_adapter if lora else model.params_total
    mc = memory_consts(model, tr.method, tr.precision, tr.optimizer, tr.flash_attention, tr.lora_rank, seq, res,
                       p_adapter, largest_layer_params(model), mem_params, tr.pure_bf16, tr.chunked_loss,
                       tr.activation_offload, _fp8_recipe(catalog, tr.stack))

    if model.is_token_model:
        L, h = model.layers or 1, model.hidden or 1
        mflops = model_flops_per_token(model.params_active, L, h, seq, tr.method)
        hw = {ck: hardware_flops_per_token(model.params_active, L, h, seq, tr.method, ck)
              for ck in ("none", "selective", "full")}
        units_per_sample = float(seq)
    else:
        ref = model.resolution or res or 1
        scale = ((res or ref) / ref) ** 2  # per-sample FLOPs scale with pixels (§3.6)
        mflops = (model.train_gflops_per_sample or 0.0) * 1e9 * scale
        if lora:
            mflops *= 2.0 / 3.0  # no weight-gradient GEMMs for frozen weights (4N vs 6N)
        hw = {"none": mflops, "selective": mflops * 1.15, "full": mflops * 4.0 / 3.0}
        units_per_sample = 1.0
        L, h = model.layers or 1, model.hidden or 1
    static = static_model_factor(model.params_active, seq if model.is_token_model else None, model.family,
                                 model.is_token_model, tr.method, eff, tr.precision, tr.flash_attention)
    w_b, g_b, _o = state_bytes(tr.precision, tr.optimizer, tr.pure_bf16)
    cc = ComputeConsts(
        is_token=model.is_token_model, units_per_sample=units_per_sample, model_flops_per_unit=mflops,
        hw_flops_per_unit=hw, static_factor=static, layers=L, hidden=h, seq=seq, p_total=model.params_total,
        p_trainable=p_tr, w_comm_bytes=mc.frozen_bytes if lora else w_b, g_comm_bytes=g_b, e=eff,
        work=_work_shape(model, tr.method, tr.lora_rank, tr.precision, tr.flash_attention, seq),
        mem_bytes_per_unit=_cnn_bytes(model, tr.precision, res, eff),
    )

    total, data_note = _data_total(req, model, seq)

    if tr.global_batch:
        gb, gb_def = int(tr.global_batch), False
    elif not model.is_token_model:
        gb, gb_def = DEFAULT_GB_NONTOKEN, True
    elif tr.method == "pretrain":
        gb, gb_def = max(1, DEFAULT_GB_PRETRAIN_TOKENS // seq), True
    else:
        gb, gb_def = DEFAULT_GB_FINETUNE, True

    par = tr.parallel
    pinned = Pinned(
        zero=par.zero_stage if par else None, tp=par.tp if par else None, pp=par.pp if par else None,
        offload=par.offload if par else None, micro_batch=tr.micro_batch, ckpt=tr.activation_checkpointing,
        cp=par.cp if par else None, ep=par.ep if par else None, vp=par.vp if par else None,
    )
    good = DEFAULT_GOODPUT
    try:
        good = float(catalog.fac("goodput"))
    except KeyError:
        pass
    ctx = Context(
        req=req, catalog=catalog, model=model, mc=mc, cc=cc, pinned=pinned, ckpts=ckpt_options(mc, pinned), seq=seq,
        global_batch=gb, global_batch_defaulted=gb_def, total_units=total, data_note=data_note,
        p_trainable=p_tr, goodput=good, headroom=float(req.deployment.headroom), eff=eff, notes=notes,
        gpus=catalog.gpu_map(),
    )
    ctx.ranges = bundled_ranges()
    ctx.stacks = catalog.stack_map
    ctx.perf = catalog.perf_map
    # GPU facts of the catalog alone, kept with it (a config edit or a new context finds them): the host-RAM
    # limit by (GPU, GPUs per node); with the default efficiency parameters, the GPU factors and link
    # bandwidths by (GPU, GPUs per node) for this precision and time model
    derived = catalog.derived
    ctx._host_cache = derived.setdefault(("host-limit-by-gpu",), {})
    if eff is EFF:
        ctx._gpu_cache = derived.setdefault(("gpu-factors", tr.precision, cc.work is not None), {})
    if par is not None:
        ctx.cp, ctx.ep, ctx.vp = int(par.cp or 1), int(par.ep or 1), int(par.vp or 1)
    _calibrate(ctx)
    return ctx


def reprepare(prev: Context, req: Requirements) -> Context:
    """``prepare(req, prev.catalog)`` for requirements that differ from ``prev.req`` in price-only fields alone
    (core.memo.PRICE_ONLY: the data, the schedule, the deployment's money and policy fields; the caller checks
    that the two have one plan key): the model, the constants, the calibration and the lookup tables are
    ``prev``'s -- prepare reads none of those fields for them --, the data's total and its note ``req``'s."""
    new = copy.copy(prev)
    new.req = req
    new.notes, new.calib_notes = list(prev.notes), list(prev.calib_notes)
    new.total_units, new.data_note = _data_total(req, prev.model, prev.seq)
    return new


def _fp8_recipe(catalog: Catalog, stack: str) -> str:
    """The FP8 recipe whose memory habits the memory model assumes: the configured stack's; with ``auto``
    Transformer Engine (Megatron-Core, the stack ``auto`` picks for FP8 model-parallel plans; the larger
    memory of the two recipes)."""
    st = catalog.stack_map.get(stack) if stack != "auto" else None
    return st.fp8 if st is not None else "transformer-engine"


def _cnn_bytes(model: ResolvedModel, precision: str, res: int | None, eff: EfficiencyParams) -> float:
    """HBM bytes per sample of a CNN's memory-bound layers (compute.EfficiencyParams.cnn_activation_passes)."""
    if model.is_token_model or model.family != "cnn" or not model.act_gib_per_sample:
        return 0.0
    ref = model.resolution or res or 1
    wide = 2.0 if precision in ("fp32", "tf32") else 1.0  # act_gib_per_sample is for 16-bit activations
    return eff.cnn_activation_passes * model.act_gib_per_sample * GIB * wide * ((res or ref) / ref) ** 2


def _work_shape(model: ResolvedModel, method: str, rank: int, precision: str, flash: bool,
                seq: int) -> WorkShape | None:
    """The model as operators for core.schedule (token models with a known shape; None otherwise).

    MoE: the expert GEMMs run at one routed expert's width (``moe_ffn``); the shared experts, which every
    token visits, count as that many more experts per token (``top_k`` + shared width / expert width:
    DeepSeek-V3 8 + 1 = 9); dense first layers are folded into the per-layer parameters only (DeepSeek-V3:
    3 of 61 layers, whose 18,432-wide MLP equals 9 experts of 2,048)."""
    if not (model.is_token_model and model.layers and model.hidden and model.heads):
        return None
    h, heads = int(model.hidden), int(model.heads)
    blk, _ = block_params(model)
    experts = int(model.experts or 1)
    moe = experts > 1 and model.moe_layers > 0
    ffn = int(model.moe_ffn or model.ffn or 4 * h) if moe else int(model.ffn or 4 * h)
    top_k = min(int(model.top_k or 2), experts) if moe else 1
    if moe and model.shared_experts:
        shared_w = model.shared_experts * (model.shared_expert_ffn or ffn)
        top_k += max(1, round(shared_w / ffn))
    return WorkShape(
        layers=int(model.layers), hidden=h, heads=heads, kv_heads=int(model.kv_heads or heads),
        head_dim=int(model.head_dim or h // heads), ffn=ffn, swiglu=model.mlp in GATED_MLPS,
        vocab=int(model.vocab or 32000), seq=seq, experts=experts if moe else 1, top_k=top_k,
        params_per_layer=float(blk), frozen=method in ("lora", "qlora"),
        lora_rank=rank if method in ("lora", "qlora") else 0,
        qlora=method == "qlora", act_bytes=4.0 if precision in ("fp32", "tf32") else 2.0, flash_requested=flash,
    )


def _stack_for(ctx: Context, g: GPU, s: Shape) -> tuple[StackEntry | None, str]:
    """The stack this plan runs on and why: the one configured, else the simplest that supports the plan."""
    key = (g.vendor, s, ctx.stack_override or "")
    hit = ctx._stack_cache.get(key)
    if hit is None:
        hit = ctx._stack_cache[key] = _pick_stack(ctx, g, s)
    return hit


def _auto(ctx: Context, **plan: object) -> StackEntry | None:
    memo = ctx.catalog.derived
    key = ("auto-stack", *sorted(plan.items()))
    if key not in memo:
        memo[key] = auto_stack(ctx.stacks, **plan)
    return memo[key]  # type: ignore[no-any-return]


def _pick_stack(ctx: Context, g: GPU, s: Shape) -> tuple[StackEntry | None, str]:
    want = ctx.stack_override or ctx.req.training.stack
    fp8 = ctx.req.training.precision == "fp8"
    plan = dict(tp=s.tp, pp=s.pp, cp=s.cp, ep=s.ep, vp=s.vp, zero=s.zero, offload=s.offload,
                method=ctx.req.training.method, vendor=g.vendor)
    if want != "auto":
        st = ctx.stacks.get(want)
        return st, N_("as configured")
    st = _auto(ctx, fp8=fp8, **plan)
    if st is None and fp8:
        st = _auto(ctx, fp8=False, **plan)
    # the reason is memoised with the plan: a message id, translated where shown (_stack_notes)
    if (s.tp, s.pp, s.cp, s.ep) == (1, 1, 1, 1):
        why = (N_("auto: the simplest stack that runs this layout with an FP8 recipe") if fp8
               else N_("auto: the simplest stack that runs this layout"))
    else:
        why = (N_("auto: the simplest stack that runs TP/PP/CP/EP with an FP8 recipe") if fp8
               else N_("auto: the simplest stack that runs TP/PP/CP/EP"))
    return st, why


def _rates(ctx: Context, g: GPU, prec: str, attention: str, own: bool = True) -> GpuRates:
    memo = ctx.catalog.derived
    key = ("rates", g.id, prec, attention, own)
    r = memo.get(key)
    if r is None:
        r = memo[key] = rates_for(ctx.perf, g, arch_key(g.architecture), prec, attention, own=own)
    return r


def _op_rel(ctx: Context, g: GPU, s: Shape) -> RelSpeed | None:
    """``rel`` for compute.step_time: the operator model's view of this GPU / precision / stack against the
    generation's reference GPU and the stack `auto` picks (None: the efficiency model alone)."""
    if ctx.cc.work is None:
        return None
    key = (g.id, s, ctx.stack_override or "")
    cache = ctx._rel_cache
    if key in cache:  # (None is a value there: no stack runs the layout)
        return cache[key]
    hit = cache[key] = _rel_for(ctx, g, s)
    return hit


def _arch(ctx: Context, g: GPU) -> str:
    """``compute.arch_key`` of the GPU's architecture, looked up once per context."""
    a = ctx._arch_cache.get(g.architecture)
    if a is None:
        a = ctx._arch_cache[g.architecture] = arch_key(g.architecture)
    return a


def _ref_stack(ctx: Context, g: GPU, s: Shape) -> StackEntry | None:
    """The stack ``auto`` picks for this layout without FP8 (the efficiency model's reference), per (vendor, layout)."""
    key = (g.vendor, s)
    if key in ctx._ref_stack_cache:
        return ctx._ref_stack_cache[key]
    hit = ctx._ref_stack_cache[key] = _auto(ctx, fp8=False, tp=s.tp, pp=s.pp, cp=s.cp, ep=s.ep, vp=s.vp, zero=s.zero,
                                             offload=s.offload, method=ctx.req.training.method, vendor=g.vendor)
    return hit


def _rel_for(ctx: Context, g: GPU, s: Shape) -> RelSpeed | None:
    st, _ = _stack_for(ctx, g, s)
    ref_st = _ref_stack(ctx, g, s) or st
    if st is None or ref_st is None:
        return None
    key = (g.id, st.id, ref_st.id, s.cp, s.ep, s.vp)
    rel = ctx._relspeed.get(key)
    if rel is None:
        rel = ctx._relspeed[key] = _relspeed(ctx, g, st, ref_st, s)
    return rel


def _op_memo(ctx: Context) -> dict[tuple[object, ...], float]:
    memo = ctx.catalog.derived
    key = ("op-times",)
    if key not in memo:
        memo[key] = {}
    return memo[key]  # type: ignore[no-any-return]


OP_SHAPE = True  # carry the size / sequence curves to other generations by the operator model (RelSpeed.shape)


def _relspeed(ctx: Context, g: GPU, st: StackEntry, ref_st: StackEntry, s: Shape) -> RelSpeed:
    """The operator model's view of this GPU, stack and layout. What it holds of the catalog alone (rates,
    peaks, overlaps, the reference and anchor GPUs) is built once per catalog (``_relspeed_args``); the work
    shape's memo (``wmemo``, ``work_key``) and the ratios (``local``) are this context's."""
    prec = ctx.req.training.precision
    ckey = ("relspeed-args", g.id, st.id, ref_st.id, prec, s.cp, s.ep, s.vp, OP_SHAPE)
    derived = ctx.catalog.derived
    args = derived.get(ckey)
    if args is None:
        args = derived[ckey] = _relspeed_args(ctx, g, st, ref_st, s)
    return RelSpeed(**args, wmemo=ctx._wmemo, work_key=_work_key(ctx))


def _relspeed_args(ctx: Context, g: GPU, st: StackEntry, ref_st: StackEntry, s: Shape) -> dict[str, object]:
    prec = ctx.req.training.precision
    fp8 = prec == "fp8" and st.fp8 != "none" and bool(g.fp8_tflops)
    arch = _arch(ctx, g)
    entry = ctx.perf.get(arch)
    ref_g = ctx.gpus.get(entry.reference_gpu or "") if entry is not None else None
    rg = ref_g or g
    ref_prec = "bf16" if prec == "fp8" else prec
    o, r = st.overlap, ref_st.overlap
    anchor = ctx.perf.get(SHAPE_ANCHOR)
    ag = ctx.gpus.get(anchor.reference_gpu or "") if anchor is not None else None
    shape = OP_SHAPE and ag is not None and arch != SHAPE_ANCHOR
    # the arguments each _rates() below is memoised by: the front memo's keys for the operator times
    keys = ((g.id, prec if fp8 else ref_prec, st.attention, True), (rg.id, ref_prec, ref_st.attention, ref_g is None),
            (ag.id, ref_prec, ref_st.attention, False) if shape and ag else ())
    return dict(rates=_rates(ctx, g, prec if fp8 else ref_prec, st.attention), stack=st,
                # the reference's rates from its generation's entry alone: a per-GPU (overlay) entry on the
                # reference GPU itself then still moves that GPU's estimate
                ref_rates=_rates(ctx, rg, ref_prec, ref_st.attention, own=ref_g is None),
                ref_stack=ref_st,
                peak_ratio=g.peak_tflops(ref_prec) / rg.peak_tflops(ref_prec), fp8=fp8, cp=s.cp, ep=s.ep,
                vp=s.vp, memo=_op_memo(ctx), ov=(o.dp - r.dp, o.tp - r.tp, o.pp, o.cp, o.ep),
                ref_peak=rg.peak_tflops(ref_prec) * 1e12,
                anchor_rates=_rates(ctx, ag, ref_prec, ref_st.attention, own=False) if shape and ag else None,
                anchor_peak=ag.peak_tflops(ref_prec) * 1e12 if shape and ag else 0.0, rate_keys=keys)


_WORK_KEYS_MAX = 4096  # distinct work shapes numbered per catalog before the numbering starts afresh


def _work_key(ctx: Context) -> int:
    """This context's work shape's number in the catalog's operator-time memo (``RelSpeed.work_key``): one per
    distinct WorkShape, from a counter that never repeats, so an entry keyed by an old number is never read
    for another work shape. -1 without a work shape."""
    w = ctx.cc.work
    if w is None:
        return -1
    if ctx._work_num < 0:
        derived = ctx.catalog.derived
        ids: dict[WorkShape, int] = derived.setdefault(("work-keys",), {})
        n = ids.get(w)
        if n is None:
            if len(ids) >= _WORK_KEYS_MAX:
                ids.clear()
            # next() of an itertools.count is atomic: two threads never draw the same number
            n = ids[w] = next(derived.setdefault(("work-key-counter",), itertools.count()))
        ctx._work_num = n
    return ctx._work_num


def _extra_dim_problems(ctx: Context, s: Shape, count: int) -> list[Msg]:
    """Why a configured cp / ep / vp cannot run this layout, in words (training.parallel.cp/ep/vp)."""
    out: list[Msg] = []
    m = ctx.model
    if s.cp > 1:
        if count % (s.tp * s.pp * s.cp):
            out.append(Msg(N_("{field}: {count} GPUs do not split into TP {tp} × PP {pp} × CP {cp} groups"),
                           field="training.parallel.cp", count=count, tp=s.tp, pp=s.pp, cp=s.cp))
        if ctx.seq % (2 * s.cp):
            out.append(Msg(N_("{field}: sequence length {seq} is not a multiple of 2 × cp = {n} "
                              "(ring attention splits each sequence into 2·cp chunks)"),
                           field="training.parallel.cp", seq=ctx.seq, n=2 * s.cp))
    if s.ep > 1:
        if not m.experts or m.experts < 2:
            out.append(Msg(N_("{field}: expert parallelism needs a mixture-of-experts model (model.experts)"),
                           field="training.parallel.ep"))
        elif m.experts % s.ep:
            out.append(Msg(N_("{field}: {experts} experts do not split evenly over ep = {ep}"),
                           field="training.parallel.ep", experts=m.experts, ep=s.ep))
        elif (count // (s.tp * s.pp)) % s.ep:
            out.append(Msg(N_("{field}: ep = {ep} does not divide the {ranks} data-parallel ranks "
                              "(expert parallelism is carved out of data parallelism)"),
                           field="training.parallel.ep", ep=s.ep, ranks=count // (s.tp * s.pp)))
    if s.vp > 1:
        if s.pp <= 1:
            out.append(Msg(N_("{field}: virtual pipeline stages need pipeline parallelism (pp > 1)"),
                           field="training.parallel.vp"))
        elif (m.layers or 0) % (s.pp * s.vp):
            out.append(Msg(N_("{field}: {layers} layers do not split into pp × vp = {n} stages"),
                           field="training.parallel.vp", layers=m.layers, n=s.pp * s.vp))
    return out


def _calibrate(ctx: Context) -> None:
    cal = ctx.req.calibration
    if cal is None:
        return
    hw = ctx.req.hardware
    # The measured point: the calibration's own gpu/count (`gpuwiz calibrate` / `probe`), else hardware:.
    ref_id, ref_n, ref_gpn = ((cal.gpu, cal.count, cal.gpus_per_node) if cal.gpu else
                              (hw.gpu, hw.count, hw.gpus_per_node) if hw else (None, None, None))
    ref_gpu = ctx.gpus.get(ref_id) if ref_id else None
    ref = None
    if ref_gpu is not None:
        ref = quick(ctx, ref_gpu, int(ref_n or 1), ref_gpn)
        where = f"{ref_n or 1}× {ref_gpu.name}"
    if cal.peak_memory_gib:
        # a measured peak below the weights alone (fully sharded over the reference GPUs, ZeRO-3)
        # is a typo (MB for GiB, a per-node figure split wrongly), not a measurement: refuse it
        n_ref = int(hw.count or 1) if ref is not None and hw is not None else 1
        floor = plan_memory(ctx.mc, n_ref, n_ref, 1, 1, 3, "none", 1, "full").weights / GIB
        if cal.peak_memory_gib < floor:
            raise GpuwizError("calibration.peak_memory_gib: " + _(
                "measured {peak:g} GiB per GPU is below the model's weights alone ({floor:.2f} GiB per GPU even "
                "when sharded over {n} GPU(s)); give the peak GPU memory of one GPU in GiB").format(
                peak=cal.peak_memory_gib, floor=floor, n=n_ref))
        if ref is not None:
            raw = ref.per_gpu_gib
            where_m = where
        else:
            # GPU-independent reference: one GPU, no sharding, the configured micro-batch / checkpointing
            mb = ctx.pinned.micro_batch or 1
            ck = ctx.pinned.ckpt or "none"
            raw = plan_memory(ctx.mc, 1, 1, 1, 1, 0, "none", mb, ck).total / GIB
            where_m = _("one GPU, no sharding, micro-batch {mb}, checkpointing {ck}").format(mb=mb, ck=ck)
        ctx.mem_scale = cal.peak_memory_gib / raw if raw > 0 else 1.0
        ctx.calib_notes.append(_(
            "calibration: measured peak {peak:g} GiB at {where} (model: {raw:.1f} GiB) → memory scaled "
            "×{scale:.2f} for every plan").format(peak=cal.peak_memory_gib, where=where_m, raw=raw,
                                                  scale=ctx.mem_scale))
    units = None
    label = ""
    if cal.tokens_per_s_per_gpu:
        units = cal.tokens_per_s_per_gpu / (ctx.cc.units_per_sample if not ctx.cc.is_token else 1.0)
        label = _("{n:g} tokens/s/GPU").format(n=cal.tokens_per_s_per_gpu)
        if not ctx.cc.is_token:
            units = cal.tokens_per_s_per_gpu
    elif cal.samples_per_s_per_gpu:
        units = cal.samples_per_s_per_gpu * ctx.cc.units_per_sample
        label = _("{n:g} samples/s/GPU").format(n=cal.samples_per_s_per_gpu)
    elif cal.step_time_s and ref is not None:  # a step = the global batch, over ref_n GPUs
        units = ctx.global_batch * ctx.cc.units_per_sample / (cal.step_time_s * int(ref_n or 1))
        label = _("step time {s:g} s").format(s=cal.step_time_s)
    elif cal.mfu:
        label = _("MFU {mfu:g}").format(mfu=cal.mfu)
    if not label:
        return
    if ref is not None:
        raw_units = ref.detail.units_per_s_per_gpu
        if units is None:  # MFU given
            target = cal.mfu
            assert target is not None  # a label and neither rate: the MFU
            raw_mfu = ref.mfu
            ctx.thr_scale = target / raw_mfu if raw_mfu > 0 else 1.0
        else:
            ctx.thr_scale = units / raw_units if raw_units > 0 else 1.0
        ctx.calib_notes.append(_(
            "calibration: measured {label} on {where} → model throughput scaled ×{scale:.2f} (other GPUs and "
            "counts scaled by the same factor)").format(label=label, where=where, scale=ctx.thr_scale))
    else:
        if units is None:
            assert cal.mfu is not None  # a label and neither rate: the MFU
            ctx.thr_direct = -float(cal.mfu)  # negative marks "MFU given": converted per GPU in quick()
        else:
            ctx.thr_direct = units
        ctx.calib_notes.append(_("calibration: measured {label} used for every candidate (no hardware: "
                                 "section)").format(label=label))


# --------------------------------------------------------------------------------------------------
# quick (the fast path)
# --------------------------------------------------------------------------------------------------


def planned_batch(global_batch: int, mb: int, replicas: int) -> int:
    """The batch a step trains with: whole micro-batches of ``mb`` on each replica, enough to hold the global
    batch asked (``ga = ceil(global_batch / (mb x replicas))``)."""
    unit = max(1, mb) * max(1, replicas)
    return -(-global_batch // unit) * unit


def batch_most(model: ResolvedModel, method: str, seq: int, global_batch: int, stated: bool) -> float:
    """The most samples a step may train: a stated global batch (a hyperparameter of the run) within
    ``BATCH_SLACK``; a defaulted one grown with the replicas up to the most a run of its kind uses (pre-training and
    full training: ``GROWN_BATCH_MAX_PRETRAIN_TOKENS`` in sequences of ``seq``; LoRA / QLoRA:
    ``GROWN_BATCH_MAX_FINETUNE`` sequences; image / audio models: ``GROWN_BATCH_MAX_NONTOKEN`` samples), never below
    the default."""
    if stated:
        return (1 + BATCH_SLACK) * global_batch
    if not model.is_token_model:
        grown = GROWN_BATCH_MAX_NONTOKEN
    elif method in ("pretrain", "full"):
        grown = GROWN_BATCH_MAX_PRETRAIN_TOKENS // max(1, seq)
    else:
        grown = GROWN_BATCH_MAX_FINETUNE
    return float(max(global_batch, grown))


def _mb_cap_of(model: ResolvedModel, seq: int, global_batch: int, pinned_pp: int | None, dp: int,
               most: float | None = None) -> int:
    """The largest micro-batch worth planning at ``dp`` data-parallel replicas (``Context._mb_cap_fn``). With
    ``most`` (``batch_most``: the most samples a step may train), also the largest power of two whose whole
    micro-batches per replica keep the batch a step trains with within it (``planned_batch``: it only
    shrinks as the micro-batch halves, so every smaller power of two keeps it too); 1 when none does (the search
    then drops the shape: a different run)."""
    if model.is_token_model:
        cap = max(1, TOKENS_PER_MICROBATCH_CAP // max(1, seq))
    else:
        cap = model.default_micro_batch or NONTOKEN_MB_CAP
    per_replica = global_batch // max(1, dp)
    pp = pinned_pp or 1
    if pp > 1:
        # a pipeline needs many more micro-batches than stages: the 1F1B bubble is (pp - 1) / m of the step
        # (Narayanan et al. 2021 §2.2: m ≫ p); keep m ≥ PP_MICROBATCHES_PER_STAGE × pp (bubble ≤ 25 %)
        cap = min(cap, max(1, per_replica // (PP_MICROBATCHES_PER_STAGE * pp)))
    cap = max(1, min(cap, per_replica))
    if most is not None:
        while cap > 1 and planned_batch(global_batch, pow2_at_most(cap), dp) > most:
            cap = pow2_at_most(cap) // 2
    return cap


_CHASSIS_RANK = {"desktop": 0, "workstation": 1, "server": 2, "hgx": 3}


def _host_limit_gib(ctx: Context, g: GPU, gpn: int) -> float:
    """Most host RAM (GiB) the smallest catalog platform that carries gpn of these GPUs can take.

    The chassis is the smallest one for the GPU's form factor (PCIe/NVL cards: PCIe chassis) with room
    for gpn cards; its CPU segment's largest ``max_memory_gb × sockets`` bounds CPU-offload plans.
    No platforms in the catalog: no limit."""
    key = (g.id, gpn)
    hit = ctx._host_cache.get(key)
    if hit is not None:
        return hit
    form = "pcie" if g.form_factor in ("pcie", "nvl") else g.form_factor
    # the same for every GPU of this form factor, slot width and segment: a table of the catalog's
    ckey = ("host-limit", form, g.slot_width if form == "pcie" else 0, g.segment == "datacenter", gpn)
    derived = ctx.catalog.derived
    hit = derived.get(ckey)
    if hit is None:
        hit = derived[ckey] = _platform_host_gib(ctx.catalog, g, form, gpn)
    ctx._host_cache[key] = hit
    return hit


def _platform_host_gib(catalog: Catalog, g: GPU, form: str, gpn: int) -> float:
    plat = catalog.platforms
    fits = [c for c in plat.chassis if c.gpu_form == form and c.max_gpus >= gpn
            and (form != "pcie" or c.max_slot_width >= g.slot_width)]
    if g.segment == "datacenter":
        fits = [c for c in fits if c.kind in ("server", "hgx")] or fits
    limit = float("inf")
    if fits:
        ch = min(fits, key=lambda c: (c.max_gpus, _CHASSIS_RANK.get(c.kind, 9)))
        mems = [c.max_memory_gb * min(ch.sockets, c.max_sockets) for c in plat.cpus if c.segment == ch.cpu_segment]
        if mems:
            limit = max(mems) * 1e9 / GIB
    return limit


FASTEST_MARGIN = 0.05
TIGHT_HEADROOM = 0.05  # before CPU offload, the in-GPU plans are tried against this smaller headroom
LARGE_SCALE_GPUS = 256  # at this scale and model size the planner prefers Megatron-style TP/PP plans
LARGE_SCALE_PARAMS = 100e9  # a model-parallel plan must be this much faster to replace the simpler ZeRO-3 plan
MOE_EP_GPUS = 64  # from this many GPUs a mixture-of-experts model runs expert-parallel where a layout fits


def _cc_for(ctx: Context, s: Shape) -> ComputeConsts:
    """The time model's constants for this layout: under expert parallelism each GPU holds and reduces the
    gradients of only its 1/ep of the routed experts (plus the dense part), so the data-parallel gradient
    volume the time model moves shrinks to ``dense + experts / ep`` (Megatron-Core: expert gradients are
    reduced over the expert data-parallel group)."""
    if s.ep <= 1 or ctx.mc.lora or not ctx.mc.p_expert:
        return ctx.cc
    hit = ctx._cc_cache.get(s.ep)
    if hit is None:
        tr = ctx.cc.p_trainable - ctx.mc.p_expert * (1.0 - 1.0 / s.ep)
        hit = ctx._cc_cache[s.ep] = dc_replace(ctx.cc, p_trainable=tr)
    return hit


def _step_key(ctx: Context, g: GPU, count: int, gpn: int, ch: Choice, ga: int) -> tuple[object, ...]:
    """What a plan's step time reads (``Context._step_cache``'s key; ``quick`` looks up the plans timed here)."""
    return (g.id, count, gpn, ch.shape, ch.dp, ch.mb, ga, ch.ckpt, ctx.stack_override or "")


def _step_units_per_s(ctx: Context, g: GPU, gf: GpuFactors, ch: Choice, count: int, gpn: int, nodes: int) -> float:
    core_gpu, peak, _, intra, inter = gf
    s = ch.shape
    dpd = max(1, ch.dp // s.cp)
    ga = max(1, -(-ctx.global_batch // (ch.mb * dpd)))
    key = _step_key(ctx, g, count, gpn, ch, ga)
    st = ctx._step_cache.get(key)
    if st is None:
        st = ctx._step_cache[key] = step_time(_cc_for(ctx, s), g, core_gpu, peak, count, gpn, nodes, ch.dp, s.tp, s.pp,
                                              s.zero, s.offload, ch.mb, ga, ch.ckpt, intra, inter,
                                              rel=_op_rel(ctx, g, s))
    return ch.mb * ga * dpd / st.step_s if st.step_s > 0 else 0.0


def _fastest(ctx: Context, g: GPU, gf: GpuFactors, table: list[Row], first: Choice, budget: float, count: int, gpn: int,
             nodes: int, host_budget: float, prefer_mp: bool = False, prefer_ep: bool = False) -> Choice:
    """At multi-node scale the simplest plan that fits (ZeRO-3 / FSDP) is often not what practitioners run:
    Megatron TP within the node + PP across nodes reaches ~45 % MFU on GPT-3 175B / 1024 A100 where FSDP's
    per-micro-batch all-gathers over the network do not (Narayanan et al. 2021). Among the model-parallel
    layouts that fit, keep the fastest if it beats the simple plan by more than ``FASTEST_MARGIN``.

    ``prefer_mp`` (≥ ``LARGE_SCALE_GPUS`` GPUs and ≥ ``LARGE_SCALE_PARAMS`` parameters): the fastest
    TP/PP layout that fits wins outright -- every published run of that size used Megatron-style 3D
    parallelism (GPT-3 175B, MT-NLG 530B, Megatron 1T, Falcon-180B, OPT-175B), and the ZeRO-3 time model
    misses the network contention of parameter all-gathers over hundreds of nodes.

    ``prefer_ep`` (a mixture of experts on ≥ ``MOE_EP_GPUS`` GPUs): the fastest expert-parallel layout
    that fits wins outright -- published MoE runs at that scale all spread the experts (DeepSeek-V3: EP 64
    over 2,048 H800; Megatron-Core / NeMo Mixtral and Qwen3-MoE recipes: EP 8 and up), and the time model
    does not credit EP with the expert all-gathers it saves. CP, EP and interleaved (vp) layouts compete
    like TP/PP ones; a pipeline needs at least as many micro-batches per step as stages (interleaved:
    a multiple of them, Megatron-LM's rule)."""
    best, best_ups = first, _step_units_per_s(ctx, g, gf, first, count, gpn, nodes)
    if prefer_mp and first.shape.model_parallel:
        prefer_mp = False  # already model-parallel: plain fastest-of comparison
    mp_best: Choice | None = None
    mp_ups = 0.0
    ep_best: Choice | None = first if first.shape.ep > 1 else None
    ep_ups = best_ups if ep_best is not None else 0.0
    # EP layouts are timed only where they are preferred (the time model does not credit EP with the
    # expert all-gathers it saves, so elsewhere they never win on time: skipping them keeps the search
    # fast); preferred, they are timed first and the other layouts only if none fits
    passes = ((True,), (False,)) if prefer_ep else ((False,),)
    for (ep_pass,) in passes:
        for row in table:
            sh = row[0]
            if sh.offload != "none" or not sh.model_parallel or (sh.ep > 1) != ep_pass:
                continue
            rkey = ("row", count, sh)  # a row's figures depend on the count and the layout alone (memory_table)
            one = ctx._rows_cache.get(rkey)
            if one is None:
                one = ctx._rows_cache[rkey] = [row]
            c = _choose(ctx, rkey, one, budget, host_budget)
            if not c.fits:
                continue
            m = -(-ctx.global_batch // (c.mb * max(1, c.dp // sh.cp)))
            if sh.pp > 1 and (m < sh.pp or (sh.vp > 1 and m % sh.pp)):
                continue  # fewer micro-batches than stages: most of the pipeline would idle (1F1B needs m >= p)
            if sh.pp > 1 and sh.vp == 1 and ctx.pinned.vp is None and not ctx.any_layout:
                c = _interleave(ctx, g, gf, c, budget, count, gpn, nodes)  # each pipeline at its best schedule
            ups = _step_units_per_s(ctx, g, gf, c, count, gpn, nodes)
            if ups > mp_ups:
                mp_best, mp_ups = c, ups
            if sh.ep > 1 and ups > ep_ups * (1.0 + FASTEST_MARGIN):
                ep_best, ep_ups = c, ups
            if ups > best_ups * (1.0 + FASTEST_MARGIN):
                best, best_ups = c, ups
        if prefer_ep and ep_best is not None:
            return ep_best
    if prefer_mp and mp_best is not None:
        return mp_best
    return best


def _interleave(ctx: Context, g: GPU, gf: GpuFactors, ch: Choice, budget: float, count: int, gpn: int,
                nodes: int) -> Choice:
    """The chosen pipeline with interleaved 1F1B (``vp`` virtual stages per rank) where that is allowed and
    pays: the layers split into pp·vp chunks of ≥ 2 layers, the micro-batches per step are a multiple of pp
    (Megatron-LM's rule), the stack runs it, it fits (the micro-batch re-solved for the extra in-flight
    activations) and the step -- bubble / vp against the vp-fold pipeline traffic -- is faster."""
    s = ch.shape
    v = vp_for(ctx.model.layers or 1, s.pp)
    if v <= 1:
        return ch
    sv = s._replace(vp=v)
    want = ctx.stack_override or ctx.req.training.stack
    if want != "auto" and want in ctx.stacks and not ctx.stacks[want].supports(
            tp=sv.tp, pp=sv.pp, cp=sv.cp, ep=sv.ep, vp=v, zero=sv.zero, offload=sv.offload,
            method=ctx.req.training.method, vendor=g.vendor):
        return ch
    rkey = ("vp-row", count, sv, ch.ckpt)
    rows = ctx._rows_cache.get(rkey)
    if rows is None:
        rows = ctx._rows_cache[rkey] = memory_table(ctx.mc, [sv], count, (ch.ckpt,), act_cache=ctx._act_cache)
    c = _choose(ctx, rkey, rows, budget, float("inf"))
    m = -(-ctx.global_batch // (c.mb * max(1, c.dp // s.cp)))
    if not c.fits or m < s.pp or m % s.pp:
        return ch
    if _step_units_per_s(ctx, g, gf, c, count, gpn, nodes) > _step_units_per_s(ctx, g, gf, ch, count, gpn, nodes):
        return c
    return ch


def _choose(ctx: Context, tkey: tuple[object, ...], rows: list[Row], budget: float, host_pg: float) -> Choice:
    """``choose_from_table`` through a per-context table: ``tkey`` names the rows (layouts for a count, GPUs per
    node, nodes, NVLink TP limit, and the filter applied); the choice depends on them, the memory budget and
    the host budget only (the micro-batch cap and a pinned micro-batch are the context's). GPUs with the same
    memory share it. The Choice is shared: nothing changes one after it is made (dataclasses.replace copies)."""
    ckey = (tkey, budget, host_pg)
    hit = ctx._choice_cache.get(ckey)
    if hit is None:
        ix = ctx._choice_index.get(tkey)
        if len(rows) <= 2 or (ix is None and tkey not in ctx._choice_once):
            # a row or two, or the first budget asked of these rows: the scan (it stops at the first fit) is
            # quicker than building the index, which pays from the second budget on
            if len(rows) > 2:
                ctx._choice_once[tkey] = True
            hit = choose_from_table(rows, budget, ctx._mb_cap_fn, ctx.pinned.micro_batch, host_pg)
        else:
            if ix is None:
                ix = ctx._choice_index[tkey] = choice_index(rows, ctx.pinned.micro_batch)
            hit = choose_indexed(ix, budget, ctx._mb_cap_fn, host_pg)
        ctx._choice_cache[ckey] = hit
    return hit


_GPU_NAME = "gpu"  # the Msg parameter a memoised sentence names the candidate's GPU by (filled in per candidate)


def _named(msgs: tuple[Msg, ...], name: str) -> list[Msg]:
    """The memoised sentences of a memory stage with this candidate's GPU name in them."""
    return [Msg(m.template, **{**m.params, _GPU_NAME: name}) if _GPU_NAME in m.params else m for m in msgs]


@dataclass(slots=True)
class _Fit:
    """What ``quick`` settles after the plan choice, from the choice and the GPU's memory alone: the
    pipeline's micro-batch floor, gradient accumulation, the memory breakdown, whether it fits and the
    sentences saying why not (a sentence naming the GPU holds a placeholder: ``_named``)."""

    ch: Choice
    ga: int
    dpd: int
    mem: MemParts
    plan_s: str
    per_gpu: float
    fits: bool
    problems: tuple[Msg, ...]
    notes: tuple[Msg, ...]
    named: bool  # a problem names the GPU


@dataclass(slots=True)
class _Stage:
    """The memory stage of a candidate -- layouts, the plan that fits, the headroom it is planned against --
    which depends on the GPU only through the GPUs per node, NVLink's reach, the memory size, the host-RAM
    limit and (with a configured stack) the vendor: GPUs that share those share it (``Context._stage_cache``).
    ``fit`` is None where the plan search times plans (``_fastest`` / ``_interleave``: per GPU)."""

    shapes: list[Shape]
    table: list[Row]
    problems: tuple[Msg, ...]
    notes: tuple[Msg, ...]
    ch: Choice
    usable: float
    fastest: bool  # the multi-node search for the fastest layout applies
    fast_budget: float
    large: bool
    moe_ep: bool
    named: bool  # a problem names the GPU
    fit: _Fit | None
    fits_by_choice: dict[tuple[object, ...], _Fit] = field(default_factory=dict)  # timed stages: _Fit per choice


def _stage(ctx: Context, g: GPU, count: int, gpn: int, nodes: int, nvlink_tp: int, key: tuple[int, int, int, int],
           capacity: float, host_gib: float) -> _Stage:
    problems: list[Msg] = []
    notes: list[Msg] = []
    model = ctx.model
    cached = ctx._shape_cache.get(key)
    if cached is None:
        shapes = candidate_shapes(count, gpn, nodes, nvlink_tp, model.is_token_model, model.heads or 1,
                                  model.kv_heads or model.heads or 1, model.layers or 1, ctx.pinned,
                                  experts=int(model.experts or 1), seq=ctx.seq, intern=ctx._shape_intern)
        cached = (shapes, memory_table(ctx.mc, shapes, count, ctx.ckpts, ctx._row_cache, ctx._act_cache))
        ctx._shape_cache[key] = cached
    shapes, table = cached
    want = ctx.stack_override or ctx.req.training.stack
    tkey: tuple[object, ...] = key  # what the rows chosen from depend on (the choice cache's key)
    if want != "auto" and want in ctx.stacks:
        # a configured stack: only the layouts it runs (e.g. no TP/PP on plain PyTorch, one GPU on Unsloth)
        pin = ctx.stacks[want]
        tkey = (*key, want, g.vendor)
        ok = ctx._rows_cache.get(tkey)
        if ok is None:
            ok = ctx._rows_cache[tkey] = [
                r for r in table if pin.supports(tp=r[0].tp, pp=r[0].pp, cp=r[0].cp, ep=r[0].ep, vp=r[0].vp,
                                                 zero=r[0].zero, offload=r[0].offload,
                                                 method=ctx.req.training.method, vendor=g.vendor)]
        if not ok:
            problems.append(Msg(N_("{field}: {stack} runs none of the layouts {count}× {gpu} needs (it supports: "
                                   "{supports})"), field="training.stack", stack=pin.name, count=count, gpu=g.name,
                                supports=", ".join(pin.parallel)) if pin.parallel else
                            Msg(N_("{field}: {stack} runs none of the layouts {count}× {gpu} needs (it supports: "
                                   "one GPU only)"), field="training.stack", stack=pin.name, count=count, gpu=g.name))
        else:
            table = ok
    if ctx.any_layout:
        bad = shape_problem(shapes[0], count, model.heads or 1, model.layers or 1, gpn, nvlink_tp > 1)
        if bad:
            problems.append(bad)

    usable = capacity * (1.0 - ctx.headroom)
    budget = usable * GIB / ctx.mem_scale
    host_pg = host_gib * GIB / gpn
    ch = _choose(ctx, tkey, table, budget, host_pg)
    if ((not ch.fits or ch.shape.offload != "none") and ctx.pinned.offload in (None, "none")
            and ctx.headroom > TIGHT_HEADROOM):
        # CPU offload is the last resort: first try the in-GPU layouts against a smaller headroom
        ikey = (*tkey, "in-gpu")
        in_gpu = ctx._rows_cache.get(ikey)
        if in_gpu is None:
            in_gpu = ctx._rows_cache[ikey] = [r for r in table if r[0].offload == "none"]
        tight_usable = capacity * (1.0 - TIGHT_HEADROOM)
        tight = _choose(ctx, ikey, in_gpu, tight_usable * GIB / ctx.mem_scale, host_pg) if in_gpu else None
        if tight is not None and tight.fits:
            ch, usable = tight, tight_usable
            notes.append(Msg(N_("TIGHT: fits only with less than the {asked:.0%} headroom asked "
                                "(deployment.headroom); planned against {tight:.0%} instead of CPU offload"),
                             asked=ctx.headroom, tight=TIGHT_HEADROOM))
    fastest = large = moe_ep = False
    fast_budget = 0.0
    if (ch.fits and nodes > 1 and ch.shape.offload == "none" and not ctx.any_layout
            and model.is_token_model):
        large = count >= LARGE_SCALE_GPUS and model.params_total >= LARGE_SCALE_PARAMS
        moe_ep = (model.experts or 1) > 1 and count >= MOE_EP_GPUS and ctx.pinned.ep is None
        if large or moe_ep or ch.shape.zero >= 3:
            fastest = True
            fast_budget = (budget if usable < capacity * (1.0 - TIGHT_HEADROOM) + 1e-9
                           else usable * GIB / ctx.mem_scale)
    pre = tuple(problems)
    named = bool(pre) and any(_GPU_NAME in m.params for m in pre)
    st = _Stage(shapes, table, pre, tuple(notes), ch, usable, fastest, fast_budget, large, moe_ep, named, None)
    if not fastest and not _interleaves(ctx, ch):
        st.fit = _fit(ctx, st, ch, count, gpn, capacity, host_gib)
    return st


def _interleaves(ctx: Context, ch: Choice) -> bool:
    """Whether the plan search tries an interleaved schedule for this plan (``_interleave``)."""
    s = ch.shape
    return (ch.fits and s.pp > 1 and s.vp == 1 and ctx.pinned.vp is None and not ctx.any_layout
            and ctx.model.is_token_model)


def _fit(ctx: Context, stage: _Stage, ch: Choice, count: int, gpn: int, capacity: float, host_gib: float) -> _Fit:
    # A plan that fits with no sentence about it is the same _Fit on every GPU memory it fits with the
    # headroom asked (what differs -- fits, the tight-headroom note -- is tested here): shared by them
    clean = ch.fits and not stage.problems and not stage.notes
    if clean:
        ckey = (count, ch.shape, ch.dp, ch.mb, ch.ckpt, ctx.mem_scale)
        hit = ctx._clean_fits.get(ckey)
        if (hit is not None and hit.per_gpu <= stage.usable + 1e-9
                and not hit.per_gpu > capacity * (1.0 - ctx.headroom) + 1e-9):
            return hit
    out = _fit_new(ctx, stage, ch, count, gpn, capacity, host_gib)
    if clean and out.fits and not out.problems and not out.notes:
        ctx._clean_fits.setdefault(ckey, out)
    return out


def _fit_new(ctx: Context, stage: _Stage, ch: Choice, count: int, gpn: int, capacity: float,
             host_gib: float) -> _Fit:
    problems: list[Msg] = list(stage.problems)
    notes: list[Msg] = list(stage.notes)
    usable = stage.usable
    s = ch.shape
    if s.pp > 1 and ctx.pinned.micro_batch is None:
        # keep at least as many micro-batches per step as pipeline stages: a smaller micro-batch only
        # lowers the memory, a pipeline with idle stages is one no practitioner runs
        rep = max(1, ch.dp // s.cp)
        while ch.mb > 1 and -(-ctx.global_batch // (ch.mb * rep)) < s.pp:
            ch = dc_replace(ch, mb=ch.mb // 2)
    if s.cp > 1 or s.ep > 1 or s.vp > 1:  # (none otherwise)
        problems += _extra_dim_problems(ctx, s, count)
    dpd = ch.dp // s.cp  # data-parallel replicas: a CP group shares each micro-batch's sequences
    if dpd < 1:
        dpd = 1
    ga = -(-ctx.global_batch // (ch.mb * dpd))
    if ga < 1:
        ga = 1
    if s.pp > 1 and ga < s.pp:
        notes.append(Msg(N_("pipeline: {ga} micro-batch(es) per step for {pp} stages -- most of the pipeline "
                            "idles; raise training.global_batch or lower the micro-batch"), ga=ga, pp=s.pp))
    mkey = (count, s, ch.ckpt, ch.mb, ga if s.pp > 1 else int(ga <= 1))  # a pipeline's in-flight count needs ga
    hit = ctx._mem_cache.get(mkey)
    if hit is None:
        mem = plan_memory(ctx.mc, count, ch.dp, s.tp, s.pp, s.zero, s.offload, ch.mb, ch.ckpt, ga, cp=s.cp, ep=s.ep,
                          vp=s.vp)
        plan_s = f"{s.framework(count)}, mb {ch.mb}, ckpt {ch.ckpt}"
        ctx._mem_cache[mkey] = (mem, plan_s)
    else:
        mem, plan_s = hit
    per_gpu = mem.total / GIB * ctx.mem_scale
    fits = per_gpu <= usable + 1e-9 and not problems
    if fits and per_gpu > capacity * (1.0 - ctx.headroom) + 1e-9:
        notes.append(Msg(N_("fits with {free:.0%} headroom -- tight (asked for {asked:.0%}); fragmentation spikes "
                            "or a longer sample can OOM"), free=1.0 - per_gpu / capacity, asked=ctx.headroom))
    if not ch.fits and not ch.host_ok:
        problems.append(Msg(N_(
            "does not fit: even {plan} needs {need:.0f} GiB of host RAM per node, more than the {host:.0f} GiB a "
            "platform for {gpn}× {gpu} takes"), plan=s.framework(count), need=mem.host_per_gpu * gpn / GIB,
            host=host_gib, gpn=gpn, gpu=""))
    elif not ch.fits:
        problems.append(Msg(N_(
            "does not fit: needs {need:.1f} GiB per GPU with the leanest plan ({plan}, checkpointing {ckpt}, "
            "micro-batch {mb}); {gpu} has {usable:.1f} GiB usable ({cap:g} GiB less {headroom:.0%} headroom)"),
            need=per_gpu, plan=s.framework(count), ckpt=ch.ckpt, mb=ch.mb, gpu="", usable=usable, cap=capacity,
            headroom=ctx.headroom))
        off = [x for x in stage.shapes if x.offload != "none"]
        if off:
            hkey = (count, off[-1])
            host_b = ctx._host_need_cache.get(hkey)
            if host_b is None:
                host_b = ctx._host_need_cache[hkey] = states(ctx.mc, max(1, count // (off[-1].tp * off[-1].pp)),
                                                             off[-1].tp, off[-1].pp, off[-1].zero, off[-1].offload)[3]
            need = host_b * gpn / GIB
            if need > host_gib:
                problems.append(Msg(N_("CPU offload would need {need:.0f} GiB of host RAM per node; a platform "
                                       "for {gpn}× {gpu} takes at most {host:.0f} GiB"), need=need, gpn=gpn,
                                    gpu="", host=host_gib))
    pr = tuple(problems)
    return _Fit(ch, ga, dpd, mem, plan_s, per_gpu, fits, pr, tuple(notes),
                bool(pr) and any(_GPU_NAME in m.params for m in pr))


def quick(ctx: Context, gpu: str | GPU, count: int, gpus_per_node: int | None = None, *,
          time_misfit: bool = True) -> QuickResult:
    """Fast evaluation of one candidate (see module docstring). Never raises for a known GPU.

    ``time_misfit=False``: a plan that does not fit is not timed (the recommender's search drops it
    unread): its result has no step time (``detail.st`` None), no speed and no run time (0).

    The memory stage (``_Stage``, ``_Fit``) is shared by GPUs with the same memory, host limit and node
    layout; what is the GPU's own -- its speed, the plans timed at multi-node scale, its name in the
    sentences -- is computed here."""
    g = gpu if isinstance(gpu, GPU) else ctx.gpus.get(gpu)
    if g is None:
        raise GpuwizError(f"hardware.gpu: unknown GPU id {gpu!r}{did_you_mean(str(gpu), list(ctx.gpus))}")
    # (max(1, count) and max(1, min(count, gpn)) as tests: the builtins' calls cost more, once per candidate)
    count = int(count)
    if count < 1:
        count = 1
    gpn = int(gpus_per_node or g.max_per_node)
    if count < gpn:
        gpn = count
    if gpn < 1:
        gpn = 1
    nodes = -(-count // gpn)
    nvlink_tp = gpn if (g.nvlink_gbps > 0 and g.nvlink_multi_gpu) else (2 if g.nvlink_gbps > 0 else 1)
    key = (count, gpn, nodes, nvlink_tp)
    capacity = g.memory_gib
    host_gib = ctx._host_cache.get((g.id, gpn))
    if host_gib is None:
        host_gib = _host_limit_gib(ctx, g, gpn)
    want = ctx.stack_override or ctx.req.training.stack
    # the stage's key: everything of the GPU it reads (the vendor only where a configured stack filters layouts),
    # and the memory calibration (prepare's _calibrate plans the reference point before it sets the scale)
    skey = (key, capacity, host_gib, ctx.mem_scale, want, g.vendor) if want != "auto" and want in ctx.stacks else \
        (key, capacity, host_gib, ctx.mem_scale)
    stage = ctx._stage_cache.get(skey)
    if stage is None:
        stage = ctx._stage_cache[skey] = _stage(ctx, g, count, gpn, nodes, nvlink_tp, key, capacity, host_gib)
    gkey = (g.id, gpn)
    gf = ctx._gpu_cache.get(gkey)
    if gf is None:
        per_gpu_f = ctx._gf_cache.get(g.id)  # gpu_factor does not depend on the GPUs per node
        if per_gpu_f is None:
            per_gpu_f = ctx._gf_cache[g.id] = gpu_factor(g, ctx.req.training.precision, ctx.eff,
                                                         op=ctx.cc.work is not None)
        gf = (*per_gpu_f, intra_node_bw(g, gpn, ctx.eff)[0], inter_node_bw(g, gpn, ctx.eff)[0])
        ctx._gpu_cache[gkey] = gf
    fit = stage.fit
    timed = fit is None  # the plan search timed plans (_step_units_per_s): the chosen one may be among them
    if fit is None:
        ch = stage.ch
        if stage.fastest:
            ch = _fastest(ctx, g, gf, stage.table, ch, stage.fast_budget, count, gpn, nodes, host_gib * GIB / gpn,
                          prefer_mp=stage.large, prefer_ep=stage.moe_ep)
        if _interleaves(ctx, ch):
            ch = _interleave(ctx, g, gf, ch, stage.usable * GIB / ctx.mem_scale, count, gpn, nodes)
        fkey = (ch.shape, ch.dp, ch.mb, ch.ckpt, ch.fits, ch.host_ok)
        fit = stage.fits_by_choice.get(fkey)
        if fit is None:
            fit = stage.fits_by_choice[fkey] = _fit(ctx, stage, ch, count, gpn, capacity, host_gib)
    ch, ga, mem, s = fit.ch, fit.ga, fit.mem, fit.ch.shape
    problems = _named(fit.problems, g.name) if fit.named else list(fit.problems)
    notes = list(fit.notes)

    core_gpu, peak, pnote, intra, inter = gf
    if not time_misfit and not fit.fits:
        return QuickResult(False, fit.per_gpu, capacity, 0.0, 0.0, 0.0, None, None, fit.plan_s,
                           problems[0] if problems else None, nodes, gpn, mem.host_per_gpu / GIB * gpn,
                           _Detail(g, count, gpn, nodes, ch, ga, mem, ctx.mem_scale, None, peak, 0.0, problems, notes))
    if pnote:  # gpu_factor's precision fallback (memoised with the GPU factors), said as a Msg
        notes.append(_precision_note(g, ctx.req.training.precision))
    hit_st = ctx._step_cache.get(_step_key(ctx, g, count, gpn, ch, ga)) if timed else None
    st = hit_st if hit_st is not None else step_time(
        ctx.cc if s.ep <= 1 else _cc_for(ctx, s), g, core_gpu, peak, count, gpn, nodes, ch.dp, s.tp, s.pp, s.zero,
        s.offload, ch.mb, ga, ch.ckpt, intra, inter, rel=None if ctx.cc.work is None else _op_rel(ctx, g, s))
    units_step = ch.mb * ga * fit.dpd * ctx.cc.units_per_sample
    ups = units_step / st.step_s / count if st.step_s > 0 else 0.0
    if ctx.thr_direct is not None:
        if ctx.thr_direct < 0:  # calibrated MFU
            ups = -ctx.thr_direct * peak * 1e12 / ctx.cc.model_flops_per_unit
        else:
            ups = ctx.thr_direct
    else:
        ups *= ctx.thr_scale
    mfu = ups * ctx.cc.model_flops_per_unit / (peak * 1e12) if peak > 0 else 0.0

    wall = wall_hours(ctx, ups, count)
    host_node = mem.host_per_gpu / GIB * gpn
    tok = ups if ctx.model.is_token_model else None
    smp = ups / ctx.cc.units_per_sample if ctx.cc.units_per_sample else None
    return QuickResult(  # (fits, per_gpu_gib, capacity_gib, wall_hours, gpu_hours, mfu, tokens_per_s_per_gpu,
        # samples_per_s_per_gpu, plan, reason, nodes, gpus_per_node, host_ram_gib, detail): by position (quicker)
        fit.fits, fit.per_gpu, capacity, wall, wall * count, mfu, tok, smp, fit.plan_s,
        problems[0] if problems else None, nodes, gpn, host_node,
        _Detail(g, count, gpn, nodes, ch, ga, mem, ctx.mem_scale, st, peak, ups, problems, notes),
    )


def _precision_note(g: GPU, precision: str) -> Msg:
    """compute.gpu_factor's note (a GPU without a tensor rate for the configured precision), as a Msg."""
    if precision == "fp8":
        return Msg(N_("{gpu} has no fp8 tensor cores: timed at its bf16/fp16 rate"), gpu=g.name)
    return Msg(N_("{gpu} has no {precision} tensor rate: timed at {used}"), gpu=g.name, precision=precision,
               used="fp16" if g.fp16_tflops else "fp32")


def wall_hours(ctx: Context, ups: float, count: int) -> float:
    """Hours per run at ``ups`` units/s/GPU on ``count`` GPUs: the one place the data size enters quick()."""
    good = ctx.goodput if count > ctx.eff.goodput_min_gpus else 1.0
    if ctx.total_units > 0 and ups > 0:
        return ctx.total_units / (ups * count) / 3600.0 / good
    return 0.0


def requote(ctx: Context, q: QuickResult) -> QuickResult:
    """``q`` (from a context with the same plan, see core.memo) with the run time of ``ctx``'s data size."""
    wall = wall_hours(ctx, q.detail.units_per_s_per_gpu, q.detail.count)
    return q if wall == q.wall_hours else q._replace(wall_hours=wall, gpu_hours=wall * q.detail.count)


# --------------------------------------------------------------------------------------------------
# estimate (the full answer)
# --------------------------------------------------------------------------------------------------


def estimate(
    req: Requirements, catalog: Catalog, gpu: str | None = None, count: int | None = None,
    gpus_per_node: int | None = None,
) -> Estimate:
    """Full estimate for one GPU type × count (see module docstring)."""
    hw = req.hardware
    gpu = gpu or (hw.gpu if hw else None)
    if not gpu:
        raise GpuwizError("hardware.gpu: " + _("no GPU given (set hardware.gpu or pass a GPU id)"))
    if gpu not in catalog.gpu_map():
        raise GpuwizError(f"hardware.gpu: unknown GPU id {gpu!r}{did_you_mean(gpu, [g.id for g in catalog.gpus])}")
    count = count or (hw.count if hw else None) or 1
    if gpus_per_node is None and hw is not None and hw.gpus_per_node and (hw.gpu in (None, gpu)):
        gpus_per_node = hw.gpus_per_node
    with gcpause.paused():  # no cyclic collection while the estimate allocates (core.gcpause)
        return estimate_from(prepare(req, catalog), gpu, count, gpus_per_node)


def estimate_from(ctx: Context, gpu: str | GPU, count: int, gpus_per_node: int | None = None) -> Estimate:
    """Build the full ``Estimate`` from a prepared context (same arithmetic as ``quick``)."""
    q = quick(ctx, gpu, count, gpus_per_node)
    d = q.detail
    g, ch, s, model = d.gpu, d.choice, d.choice.shape, ctx.model
    scale = d.mem_scale
    m = d.mem
    bd = MemoryBreakdown(
        weights=m.weights / GIB * scale, gradients=m.gradients / GIB * scale, optimizer=m.optimizer / GIB * scale,
        activations=m.activations / GIB * scale, overhead=m.overhead / GIB * scale,
    )
    usable = q.capacity_gib * (1 - ctx.headroom)
    rg = _ranges(ctx, q)
    memory = Memory(
        per_gpu_gib=q.per_gpu_gib, capacity_gib=q.capacity_gib, usable_gib=usable, breakdown=bd, fits=q.fits,
        headroom_frac=1 - q.per_gpu_gib / q.capacity_gib, host_ram_gib=q.host_ram_gib,
        per_gpu_gib_range=rg.memory, p90_exceeds_capacity=rg.memory is not None and rg.memory.high > q.capacity_gib,
    )
    plan = Plan(
        gpus=d.count, gpus_per_node=d.gpn, nodes=d.nodes, dp=ch.dp, tp=s.tp, pp=s.pp, zero_stage=s.zero,
        offload=s.offload, micro_batch=ch.mb, grad_accum=d.ga, activation_checkpointing=ch.ckpt,
        framework=s.framework(d.count), stack=_stack_name(ctx, g, s), cp=s.cp, ep=s.ep, vp=s.vp,
        batch_limit=int(ctx.batch_most), batch_defaulted=ctx.global_batch_defaulted,
    )
    thr = Throughput(
        tokens_per_s_per_gpu=q.tokens_per_s_per_gpu, samples_per_s_per_gpu=q.samples_per_s_per_gpu, mfu=q.mfu,
        peak_tflops=d.peak_tflops, achieved_tflops=q.mfu * d.peak_tflops,
        step_time_s=(plan.global_batch * ctx.cc.units_per_sample)
        / (d.units_per_s_per_gpu * d.count) if d.units_per_s_per_gpu > 0 else None,
        range=rg.throughput,
    )
    time = Time(wall_hours=q.wall_hours, gpu_hours=q.gpu_hours,
                total_pflop=ctx.total_units * ctx.cc.model_flops_per_unit / 1e15,
                wall_hours_range=rg.wall_hours, gpu_hours_range=rg.gpu_hours)
    info = ModelInfo(name=model.name, family=model.family, params_total=model.params_total,
                     params_active=model.params_active, params_trainable=ctx.p_trainable)
    return Estimate(
        gpu=g.id, gpu_name=g.name, model=info, memory=memory, plan=plan, throughput=thr, time=time,
        feasible=q.fits and not d.problems, problems=[p.text() for p in d.problems],
        assumptions=_assumptions(ctx, q, plan) + _stack_notes(ctx, g, s) + rg.notes, range_basis=rg.basis,
        family_runs_validated=rg.family_runs, cost_multipliers=rg.cost, stack_alternatives=_stack_alternatives(ctx, q),
    )


def _stack_name(ctx: Context, g: GPU, s: Shape) -> str:
    st, _ = _stack_for(ctx, g, s)
    return st.id if st is not None else ("pytorch" if ctx.req.training.stack == "auto" else ctx.req.training.stack)


def _stack_notes(ctx: Context, g: GPU, s: Shape) -> list[str]:
    st, why = _stack_for(ctx, g, s)
    if st is None:
        return []
    out = [_("stack: {stack} ({why})").format(stack=st.name, why=_(why))]
    if ctx.req.training.precision == "fp8" and (st.fp8 == "none" or not g.fp8_tflops):
        out.append(_("fp8: {stack} has no FP8 recipe: timed at bf16").format(stack=st.name) if st.fp8 == "none"
                   else _("fp8: {gpu} has no FP8 tensor cores: timed at bf16").format(gpu=g.name))
    return out


def _stack_alternatives(ctx: Context, q: QuickResult) -> list[StackAlternative]:
    """The same run -- same plan -- on each other stack that runs its layout (the operator model's view)."""
    d = q.detail
    if ctx.cc.work is None or q.wall_hours <= 0 or ctx.thr_direct is not None or d.st is None or d.st.step_s <= 0:
        return []
    g, ch, s = d.gpu, d.choice, d.choice.shape
    current = _stack_name(ctx, g, s)
    core_gpu, peak, _, intra, inter = ctx._gpu_cache[(g.id, d.gpn)]
    out: list[StackAlternative] = []
    saved = ctx.stack_override
    try:
        for sid, st in ctx.stacks.items():
            if sid == current or not st.supports(tp=s.tp, pp=s.pp, cp=s.cp, ep=s.ep, vp=s.vp, zero=s.zero,
                                                 offload=s.offload, method=ctx.req.training.method, vendor=g.vendor):
                continue
            ctx.stack_override = sid
            alt = step_time(_cc_for(ctx, s), g, core_gpu, peak, d.count, d.gpn, d.nodes, ch.dp, s.tp, s.pp, s.zero,
                            s.offload, ch.mb, d.ga, ch.ckpt, intra, inter, rel=_op_rel(ctx, g, s))
            if alt.step_s <= 0:
                continue
            f = alt.step_s / d.st.step_s
            out.append(StackAlternative(stack=sid, name=st.name, wall_hours=q.wall_hours * f, gpu_hours=q.gpu_hours * f,
                                        units_per_s_per_gpu=d.units_per_s_per_gpu / f, feasible=q.fits,
                                        change=f - 1.0))
    finally:
        ctx.stack_override = saved
    return sorted(out, key=lambda a: a.wall_hours)


@dataclass(slots=True)
class _Ranges:
    throughput: Range | None = None
    wall_hours: Range | None = None
    gpu_hours: Range | None = None
    memory: Range | None = None
    cost: Range | None = None  # multipliers on the cost per run
    basis: str | None = None
    notes: list[str] = field(default_factory=list)
    family_runs: int | None = None  # Estimate.family_runs_validated


def wall_hours_high(ctx: Context, q: QuickResult) -> float | None:
    """The P90 end of a plan's wall time (the cross-validated range the estimate will carry), or None
    without a range; the recommender's deadline slack reads it."""
    if q.detail is None or not q.wall_hours or q.wall_hours == float("inf"):
        return None
    if ctx.ranges is None or ctx.thr_direct is not None or ctx.thr_scale != 1.0:
        return None  # no spread (_speed_spread)
    sp = _speed_spread(ctx, q)
    return q.wall_hours / sp.p10 if sp is not None else None  # around(wall, sp, inverse=True).high


def _group_keys(ctx: Context, q: QuickResult) -> dict[str, str]:
    d = q.detail
    return group_keys(generation=_arch(ctx, d.gpu), family=ctx.model.family,
                      stack=_stack_name(ctx, d.gpu, d.choice.shape), gpus=d.count)


def _speed_spread(ctx: Context, q: QuickResult, keys: dict[str, str] | None = None) -> Spread | None:
    """The cross-validated speed spread of this plan's groups; None without a table, or when the
    config's own measured speed (calibration:) replaces the model's."""
    if ctx.ranges is None or ctx.thr_direct is not None or ctx.thr_scale != 1.0:
        return None
    if keys is not None:
        return range_for(ctx.ranges, "throughput", keys)
    # the group keys (_group_keys) read the generation, the stack and the scale (the family is the context's),
    # and those are read from the GPU's architecture (_arch), its vendor, the layout and the override
    # (_stack_for's key) and the scale group of the GPU count: a front table on these, one lookup per candidate
    d = q.detail
    g = d.gpu
    scale = scale_group(d.count)
    front = ctx._spread_front
    fkey = (g.architecture, g.vendor, d.choice.shape, scale, ctx.stack_override or "")
    if fkey in front:
        return front[fkey]
    arch = _arch(ctx, g)
    stack = _stack_name(ctx, g, d.choice.shape)
    key = (arch, stack, scale)
    cache = ctx._spread_cache
    if key not in cache:
        cache[key] = range_for(ctx.ranges, "throughput", group_keys(generation=arch, family=ctx.model.family,
                                                                    stack=stack, gpus=d.count))
    sp = front[fkey] = cache[key]
    return sp


def plain_data_parallel(ctx: Context, q: QuickResult) -> bool:
    """More data-parallel replicas of this plan cannot run a GPU faster: it is the first layout the planner tries
    (plain data parallelism: no ZeRO sharding, TP/PP/CP/EP split or offload), which more replicas leave the first
    to fit, at the same recompute and micro-batch -- data parallelism shards nothing, so a GPU holds the same bytes
    -- or a smaller micro-batch where the cap falls with the replicas; they only add communication and split the
    global batch into fewer micro-batches per replica. One exception is ruled out: a step whose replicas come down
    to a single micro-batch keeps no gradient-accumulation buffer, and the memory that frees could buy a larger
    micro-batch or less recompute; so either at least 3 micro-batches per replica (double the replicas, still 2),
    or nothing left to buy (no recompute, the largest micro-batch allowed, or the pinned one). The recommender's
    node ladder reads this."""
    d = q.detail
    if d is None or not q.fits:
        return False
    ch = d.choice
    s = ch.shape
    if (ch.shapes_tried != 1 or s.zero != 0 or s.offload != "none" or s.tp != 1 or s.pp != 1 or s.cp != 1
            or s.ep != 1 or s.vp != 1):
        return False
    if d.ga >= 3:
        return True
    want = ctx.pinned.micro_batch
    return ch.ckpt == "none" and (want is not None or ch.mb == pow2_at_most(int(ctx._mb_cap_fn(ch.dp))))


def lightest_memory_high(ctx: Context, q: QuickResult) -> float | None:
    """The P90 end of a plan's memory per GPU (GiB), as the estimate's range will carry it (``_ranges``), when the
    plan has nothing lighter in the GPU to fall back on -- micro-batch 1, full recompute, one GPU or ZeRO-3 -- else
    None (and None without a range): the recommender ranks a build whose P90 is above its card after one whose is
    not, since an estimate that errs as measured runs did has no smaller plan to retreat to."""
    if ctx.ranges is None or ctx.mem_scale != 1.0 or q.detail is None:
        return None
    d = q.detail
    ch = d.choice
    if ch.mb != 1 or ch.ckpt != "full" or (d.count > 1 and ch.shape.zero < 3):
        return None  # a smaller micro-batch, more recompute or sharding is a fallback
    g = d.gpu
    # (the groups read the stack and the scale: a front table on what those are read from, as _speed_spread's)
    fkey = (g.architecture, g.vendor, d.choice.shape, scale_group(d.count), ctx.stack_override or "")
    front = ctx._mem_spread_front
    if fkey in front:
        mp = front[fkey]
    else:
        mp = front[fkey] = range_for(ctx.ranges, "memory", _group_keys(ctx, q))
    return q.per_gpu_gib * mp.p90 if mp is not None else None


def _ranges(ctx: Context, q: QuickResult) -> _Ranges:
    """P10-P90 ranges from the cross-validated residuals of the matching groups (core.ranges)."""
    out = _Ranges()
    tbl = ctx.ranges
    if tbl is None:
        return out
    keys = _group_keys(ctx, q)
    basis: list[str] = []
    shown: list[str] = []  # the same, in the interface language
    sp = _speed_spread(ctx, q, keys)
    if sp is not None:
        head = q.tokens_per_s_per_gpu if q.tokens_per_s_per_gpu is not None else q.samples_per_s_per_gpu
        if head:
            out.throughput = around(head, sp)
        if q.wall_hours > 0:
            out.wall_hours = around(q.wall_hours, sp, inverse=True)
            out.gpu_hours = around(q.gpu_hours, sp, inverse=True)
        out.cost = Range(low=1.0 / sp.p90, high=1.0 / sp.p10)
        out.family_runs = next((n for dim, _key, n in sp.missing if dim == "family"), None)
        basis.append(f"speed: {sp.basis}")
        shown.append(_("speed: {basis}").format(basis=basis_text(sp)))
    mp = range_for(tbl, "memory", keys) if ctx.mem_scale == 1.0 else None
    if mp is not None:
        out.memory = around(q.per_gpu_gib, mp)
        basis.append(f"memory: {mp.basis}")
        shown.append(_("memory: {basis}").format(basis=basis_text(mp)))
        if out.memory.high > q.capacity_gib and q.fits:
            out.notes.append(_(
                "memory risk: the P90 end of the range ({high:.1f} GiB) is above the card's {cap:g} GiB (fits is "
                "decided at the point estimate, {point:.1f} GiB)").format(high=out.memory.high, cap=q.capacity_gib,
                                                                         point=q.per_gpu_gib))
    if basis:
        out.basis = "; ".join(basis)  # the JSON's range_basis: English, like the keys
        out.notes.append(_("P10-P90 ranges from leave-one-source-out residuals of published runs -- {basis}").format(
            basis="; ".join(shown)))
    return out




def _assumptions(ctx: Context, q: QuickResult, plan: Plan) -> list[str]:
    d = q.detail
    g, ch, s, st, model, tr = d.gpu, d.choice, d.choice.shape, d.st, ctx.model, ctx.req.training
    assert st is not None  # (estimate_from times every plan: quick's time_misfit is on)
    out: list[str] = list(ctx.notes)
    if model.is_token_model:
        out.append(_("sequence length {seq} tokens").format(seq=ctx.seq))
        out.append(_("FlashAttention on") if tr.flash_attention else _("FlashAttention off (attention scores stored)"))
    # Method / states
    w, gb, o = state_bytes(tr.precision, tr.optimizer, tr.pure_bf16)
    pure = tr.pure_bf16 and tr.precision not in ("fp32", "tf32")
    opt_name = {"adamw": "AdamW", "adamw-8bit": _("8-bit AdamW"), "sgd": _("SGD with momentum")}[tr.optimizer]
    if tr.method in ("lora", "qlora"):
        base = (_("NF4 ≈ 4.13 bits/param (QLoRA)") if tr.method == "qlora"
                else _("{b:g} B/param").format(b=ctx.mc.frozen_bytes))
        out.append(_("{method} r={rank} on all linear layers: {n} trainable ({share:.2%}); frozen base {base}").format(
            method=tr.method.upper() if tr.method == "qlora" else "LoRA", rank=tr.lora_rank,
            n=fmt_params(ctx.p_trainable), share=ctx.p_trainable / model.params_total, base=base))
        out.append(_("adapters: {precision} + {opt}, {b:g} B per trainable param").format(
            precision=tr.precision, opt=opt_name, b=w + gb + o))
    else:
        regime = _("pure 16-bit, no fp32 master copy ") if pure else (_("mixed precision ") if w == 2 else "")
        out.append(_("model states: {precision} {regime}+ {opt}, {b:g} B/param ({w:g} weights + {g:g} grads + {o:g} "
                     "optimizer)").format(precision=tr.precision, regime=regime, opt=opt_name, b=w + gb + o, w=w,
                                          g=gb, o=o))
    # Plan
    chosen = (_("as configured") if ctx.pinned.any_layout else
              _("fastest that fits") if (s.tp > 1 or s.pp > 1) and d.nodes > 1 else _("simplest that fits"))
    out.append(_("plan: {plan} ({chosen}); dp={dp} tp={tp} pp={pp}, {nodes} node(s) × {gpn} GPUs").format(
        plan=s.framework(d.count), chosen=chosen, dp=ch.dp, tp=s.tp, pp=s.pp, nodes=d.nodes, gpn=d.gpn))
    ck_why = (_("as configured") if ctx.pinned.ckpt else
              _("chosen to fit") if ch.ckpt != "none" else _("not needed"))
    out.append(_("activation checkpointing: {ckpt} ({why})").format(ckpt=ch.ckpt, why=ck_why))
    cap = ctx._mb_cap_fn(ch.dp)
    capped = cap < _mb_cap_of(model, ctx.seq, ctx.global_batch, ctx.pinned.pp, ch.dp)
    mb_why = (_("as configured") if ctx.pinned.micro_batch else
              _("largest power of two ≤ {cap} that fits").format(cap=cap) if not capped else
              _("largest power of two ≤ {cap} that fits and keeps the global batch of {gb:,} within {slack:.0%}")
              .format(cap=cap, gb=ctx.global_batch, slack=BATCH_SLACK) if not ctx.global_batch_defaulted else
              _("largest power of two ≤ {cap} that fits and keeps the batch a step trains within {most:,.0f}")
              .format(cap=cap, most=ctx.batch_most))
    out.append(_("micro-batch {mb} ({why}), gradient accumulation {ga}").format(mb=ch.mb, why=mb_why, ga=d.ga))
    if ctx.global_batch_defaulted:
        trained = plan.global_batch
        if trained == ctx.global_batch:
            out.append((_("global batch {n} sequences (default; set training.global_batch)") if model.is_token_model
                        else _("global batch {n} samples (default; set training.global_batch)")).format(
                n=ctx.global_batch))
        else:
            out.append((_("global batch {n:,} sequences: the default {d:,} grown to whole micro-batches on {r:,} "
                          "replicas (at most {most:,.0f} for a run like this; set training.global_batch)")
                        if model.is_token_model else
                        _("global batch {n:,} samples: the default {d:,} grown to whole micro-batches on {r:,} "
                          "replicas (at most {most:,.0f} for a run like this; set training.global_batch)")).format(
                n=trained, d=ctx.global_batch, r=plan.replicas, most=ctx.batch_most))
    if s.offload != "none":
        out.append(_("CPU offload ({offload}): {gib:.0f} GiB pinned host RAM per node (DeepSpeed buffer factor 1.5); "
                     "slow").format(offload=s.offload, gib=q.host_ram_gib))
    prm = ctx.mc.params
    if model.is_token_model:
        out.append(_("loss: chunked / fused cross-entropy (bf16 logits, fp32 one chunk at a time)") if tr.chunked_loss
                   else _("loss: full fp32 logits for the cross-entropy (training.chunked_loss off)"))
    out.append((_("overhead: CUDA context {ctx:g} GiB + framework/NCCL + comm buckets + ZeRO-3 gathered-layer buffer "
                  "+ {frag:.0%} fragmentation") if s.zero >= 3 else
                _("overhead: CUDA context {ctx:g} GiB + framework/NCCL + comm buckets + {frag:.0%} fragmentation")
                ).format(ctx=prm.cuda_context_gib, frag=prm.fragmentation))
    out.append(_("headroom: {h:.0%} of GPU memory kept free (deployment.headroom)").format(h=ctx.headroom))
    # Throughput
    _bw, link = intra_node_bw(g, d.gpn, ctx.eff)
    scale = (_("{n} GPUs {link}").format(n=d.count, link=link) if d.count > 1
             else _("{n} GPU").format(n=d.count))
    if d.nodes > 1:
        _bw, net = inter_node_bw(g, d.gpn, ctx.eff)
        scale += _(", {nodes} nodes over {net} (assumed network)").format(nodes=d.nodes, net=net)
    size = fmt_params(model.params_active)
    if model.family == "moe":
        size = _("{n} active").format(n=size)
    seq = _(", seq {seq}").format(seq=ctx.seq) if model.is_token_model else ""
    out.append(_("MFU {mfu:.2f} from: {gpu} {precision}, {size}{seq}, {scale}, {method}").format(
        mfu=q.mfu, gpu=g.name, precision=tr.precision, size=size, seq=seq, scale=scale, method=tr.method))
    parts = [_("compute {s:.2f} s").format(s=st.compute_s)]
    if st.bubble_s:
        parts.append(_("pipeline bubble {s:.2f} s").format(s=st.bubble_s))
    if st.dp_comm_s:
        parts.append(_("exposed DP/ZeRO comm {s:.2f} s").format(s=st.dp_comm_s))
    if st.tp_comm_s:
        parts.append(_("TP comm {s:.2f} s").format(s=st.tp_comm_s))
    if st.offload_s:
        parts.append(_("offload {s:.2f} s").format(s=st.offload_s))
    if ctx.thr_direct is None and ctx.thr_scale == 1.0:
        out.append(_("step time: {parts}").format(parts=", ".join(parts)))
    if tr.method == "qlora":
        out.append(_("QLoRA: NF4 dequantisation slows each step (efficiency × {f:g})").format(f=ctx.eff.qlora_factor))
    fl = (_("4·N + 12·L·h·s (LoRA: no weight-gradient GEMMs)") if tr.method in ("lora", "qlora")
          else "6·N + 12·L·h·s")
    if model.is_token_model:
        out.append((_("FLOPs per token {f}; full recompute executes 8·N") if ch.ckpt == "full"
                    else _("FLOPs per token {f}")).format(f=fl))
    else:
        scaled = bool(ctx.req.model.resolution)
        if model.per_sample_basis == "estimate":
            said = (_("FLOPs per sample {g:.1f} GFLOP (counted from the architecture, none published; scaled by "
                      "resolution²)") if scaled
                    else _("FLOPs per sample {g:.1f} GFLOP (counted from the architecture, none published)"))
        else:
            said = (_("FLOPs per sample {g:.1f} GFLOP (published figure, scaled by resolution²)") if scaled
                    else _("FLOPs per sample {g:.1f} GFLOP (published figure)"))
        out.append(said.format(g=ctx.cc.model_flops_per_unit / 1e9))
    out.extend(n.text() for n in d.notes)
    if d.count > ctx.eff.goodput_min_gpus:
        out.append(_("goodput {g:.2f} applied (> {n} GPUs: failures and restarts)").format(
            g=ctx.goodput, n=ctx.eff.goodput_min_gpus))
    out.append(ctx.data_note)
    out.extend(ctx.calib_notes)
    return out
