"""Choose the parallel plan: the simplest layout that fits in memory.

Order (research note §3.3 and §3.10: keep TP inside an NVLink domain, prefer DP/FSDP + PP across nodes):

1. DDP (ZeRO-0)            -- every GPU holds all model states
2. ZeRO-1, ZeRO-2, ZeRO-3  -- shard optimizer states, then gradients, then parameters (FSDP)
3. TP = 2, 4, 8 within a node, only over NVLink (+ ZeRO-1 on the data-parallel dimension, Megatron
   distributed optimizer)
4. PP = 2, 4, ... (across nodes; inside a node too when there is no NVLink), with TP filling the node
5. CPU offload (optimizer, then optimizer + parameters) on ZeRO-3 -- last resort, slow

Issue 11 adds the other dimensions, each only where a practitioner would use it:

* context parallel (CP, ring attention) for sequences of at least ``CP_MIN_SEQ`` tokens, each rank
  keeping at least ``CP_MIN_TOKENS`` of them (Llama 3 405B: CP 16 at 128k = 8k per rank), after the
  ZeRO layouts and combined with TP and PP;
* expert parallel (EP) for mixture-of-experts models on ZeRO-0/1 and TP/PP layouts (Megatron-Core /
  DeepSpeed-MoE; never with ZeRO-3): EP divides the experts and the data-parallel ranks;
* interleaved 1F1B (``vp`` virtual stages per rank, ``vp_for``) is decided after the layout: where the
  layers split into pp·vp chunks of at least two layers, the micro-batches per step are a multiple of
  pp, it fits and it is faster (``core.estimate``), the chosen pipeline runs interleaved.

TP never leaves a node (``shape_problem``); the time-based choice in ``core.estimate`` skips pipelines
with fewer micro-batches than stages.

For each layout the activation checkpointing is none, then selective (only where it saves memory: it
equals "none" when FlashAttention already drops the attention-score term), then full; the first that
fits with micro-batch ≥ 1 wins, with the largest power-of-two micro-batch ≤ the cap. Values pinned in
``training.parallel`` / ``training.micro_batch`` / ``training.activation_checkpointing`` are kept.
The search is closed-form per layout (memory is linear in the micro-batch), so it is cheap.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import accumulate
from typing import NamedTuple

from gpuwiz.core.memory import MemoryConsts, micro_batch_terms
from gpuwiz.core.models import Checkpointing, Offload
from gpuwiz.i18n import N_, Msg

CP_MIN_SEQ = 32_768  # shortest sequence the planner splits with context parallelism
CP_MIN_TOKENS = 8_192  # tokens each CP rank keeps at least (Llama 3 405B: 131,072 / CP 16)
EP_MAX = 64  # widest expert-parallel group the planner proposes (DeepSeek-V3: EP 64)
EP_MIN_GPUS = 16  # below this many GPUs MoE runs without EP unless configured (FSDP / ZeRO fine-tuning recipes)
VP_OPTIONS = (4, 2)  # virtual stages per rank tried for interleaved 1F1B, largest first
VP_MIN_LAYERS = 2  # layers per virtual stage at least


class Shape(NamedTuple):
    """A parallel layout. A named tuple: it keys many of the estimator's lookup tables, and a tuple's
    hash and equality run in C (a frozen dataclass's ran a Python ``__hash__`` on every lookup)."""

    zero: int
    tp: int
    pp: int
    offload: Offload
    cp: int = 1
    ep: int = 1
    vp: int = 1

    @property
    def model_parallel(self) -> bool:
        """A layout beyond data parallelism / ZeRO (any of TP, PP, CP, EP)."""
        return self.tp > 1 or self.pp > 1 or self.cp > 1 or self.ep > 1

    def framework(self, count: int) -> str:
        if self.model_parallel:
            deg = " ".join(x for x in (f"TP={self.tp}" if self.tp > 1 else "", f"PP={self.pp}" if self.pp > 1 else "",
                                       f"VP={self.vp}" if self.vp > 1 else "", f"CP={self.cp}" if self.cp > 1 else "",
                                       f"EP={self.ep}" if self.ep > 1 else "")
                           if x)
            z = f" + ZeRO-{self.zero}" if self.zero else ""
            off = f" + CPU offload ({self.offload})" if self.offload != "none" else ""
            return f"Megatron-LM {deg}{z}{off}"
        if self.offload != "none":
            return f"DeepSpeed ZeRO-{self.zero} + CPU offload ({self.offload})"
        if self.zero == 3:
            return "PyTorch FSDP (ZeRO-3)"
        if self.zero in (1, 2):
            return f"DeepSpeed ZeRO-{self.zero}"
        return "PyTorch DDP" if count > 1 else "PyTorch (single GPU)"


@dataclass(frozen=True, slots=True)
class Pinned:
    zero: int | None = None
    tp: int | None = None
    pp: int | None = None
    offload: Offload | None = None
    micro_batch: int | None = None
    ckpt: Checkpointing | None = None
    cp: int | None = None
    ep: int | None = None
    vp: int | None = None

    @property
    def any_layout(self) -> bool:
        return any(v is not None for v in (self.zero, self.tp, self.pp, self.offload))


def _pow2_upto(n: int) -> list[int]:
    out, v = [], 2
    while v <= n:
        out.append(v)
        v *= 2
    return out


def cp_options(count: int, seq: int) -> list[int]:
    """Context-parallel degrees worth proposing: powers of two dividing the GPUs, each rank keeping at least
    ``CP_MIN_TOKENS`` tokens, the sequence a multiple of 2·cp (ring attention's load-balanced chunks)."""
    if seq < CP_MIN_SEQ:
        return []
    return [c for c in _pow2_upto(min(count, seq // CP_MIN_TOKENS)) if count % c == 0 and seq % (2 * c) == 0]


def ep_for(experts: int, dp: int, cap: int = EP_MAX) -> int:
    """The expert-parallel degree for ``dp`` data-parallel ranks: the largest power of two ≤ ``cap`` (at most
    ``EP_MAX``) dividing both the experts and the ranks (1: no EP)."""
    best = 1
    for e in _pow2_upto(min(experts, dp, cap, EP_MAX)):
        if experts % e == 0 and dp % e == 0:
            best = e
    return best


def vp_for(layers: int, pp: int) -> int:
    """Virtual stages per rank for an interleaved variant of a ``pp``-stage pipeline (1: none)."""
    for v in VP_OPTIONS:
        if layers % (pp * v) == 0 and layers // (pp * v) >= VP_MIN_LAYERS:
            return v
    return 1


# the layouts every search starts and ends with (a Shape is immutable)
_DDP = Shape(0, 1, 1, "none")
_ZERO = (Shape(1, 1, 1, "none"), Shape(2, 1, 1, "none"), Shape(3, 1, 1, "none"))
_OFFLOAD_MULTI = (Shape(3, 1, 1, "optimizer"), Shape(3, 1, 1, "optimizer+params"))
_OFFLOAD_ONE = (Shape(2, 1, 1, "optimizer"), Shape(3, 1, 1, "optimizer+params"))


def candidate_shapes(
    count: int, gpn: int, nodes: int, nvlink_tp_max: int, is_token: bool, heads: int, kv_heads: int,
    layers: int, pinned: Pinned, experts: int = 1, seq: int = 0,
    intern: dict[tuple[int, int, int, int, int, int], Shape] | None = None,
) -> list[Shape]:
    """Layouts in order of simplicity (see module docstring), filtered by pinned values. ``intern``: Shapes
    made before, by (zero, tp, pp, cp, ep, vp) of their in-GPU layout, reused (the caller's table)."""
    shapes: list[Shape] = [_DDP]
    moe = is_token and experts > 1 and count >= EP_MIN_GPUS
    cps = cp_options(count, seq) if is_token and count > 1 else []

    def mk(zero: int, tp: int, pp: int, cp: int, ep: int, vp: int) -> Shape:
        if intern is None:
            return Shape(zero, tp, pp, "none", cp, ep, vp)
        k = (zero, tp, pp, cp, ep, vp)
        got = intern.get(k)
        if got is None:
            got = intern[k] = Shape(zero, tp, pp, "none", cp, ep, vp)
        return got

    def with_ep(zero: int, tp: int, pp: int, cp: int = 1, vp: int = 1) -> list[Shape]:
        out = [mk(zero, tp, pp, cp, 1, vp)]
        dp = count // (tp * pp)
        if moe and zero < 3:
            # the all-to-all inside the node (tp·ep ≤ GPUs per node), then the widest EP the ranks allow
            for ep in sorted({ep_for(experts, dp, max(1, gpn // tp)), ep_for(experts, dp)}):
                if ep > 1:
                    out.append(mk(1 if dp > 1 else zero, tp, pp, cp, ep, vp))
        return out

    if count > 1:
        shapes += _ZERO
        if moe:
            shapes += with_ep(1, 1, 1)[1:]
        for cp in cps:
            shapes += [*with_ep(1, 1, 1, cp), mk(3, 1, 1, cp, 1, 1)]
    if is_token and count > 1:
        tps = [t for t in _pow2_upto(min(8, gpn, nvlink_tp_max))
               if count % t == 0 and heads % t == 0 and (kv_heads % t == 0 or t % kv_heads == 0)]
        for tp in tps:
            z = 1 if count // tp > 1 else 0
            shapes += with_ep(z, tp, 1)
            for cp in cps:
                if (count // tp) % cp == 0:
                    shapes += with_ep(1 if count // (tp * cp) > 1 or cp > 1 else 0, tp, 1, cp)
        tp_fill = max([1] + [t for t in _pow2_upto(min(8, gpn, nvlink_tp_max))
                             if count % t == 0 and heads % t == 0])
        for pp in _pow2_upto(min(layers, count // tp_fill)):
            if (count // tp_fill) % pp == 0:
                dp = count // (tp_fill * pp)
                z = 1 if dp > 1 else 0
                for cp in [1] + [c for c in cps if dp % c == 0]:
                    shapes += with_ep(z, tp_fill, pp, cp)
    if count > 1:
        shapes += _OFFLOAD_MULTI
    else:
        shapes += _OFFLOAD_ONE
    if pinned.cp is not None or pinned.ep is not None or pinned.vp is not None:
        # a configured cp / ep / vp applies to every layout searched (dimensions it does not fit are
        # reported by core.estimate, never silently dropped)
        seen: dict[Shape, None] = {}
        for s in shapes:
            seen[Shape(s.zero, s.tp, s.pp, s.offload, pinned.cp or s.cp, pinned.ep or s.ep,
                       pinned.vp or s.vp)] = None
        shapes = list(seen)
    if pinned.any_layout:
        keep = [s for s in shapes if (pinned.zero is None or s.zero == pinned.zero)
                and (pinned.tp is None or s.tp == pinned.tp) and (pinned.pp is None or s.pp == pinned.pp)
                and (pinned.offload is None or s.offload == pinned.offload)]
        if not keep:
            keep = [Shape(pinned.zero or 0, pinned.tp or 1, pinned.pp or 1, pinned.offload or "none",
                          pinned.cp or 1, pinned.ep or 1, pinned.vp or 1)]
        shapes = keep
    return shapes


def shape_problem(shape: Shape, count: int, heads: int, layers: int, gpn: int, nvlink: bool) -> Msg | None:
    """Why a (pinned) layout cannot run on this hardware, or None (rendered where shown: see ``Msg``)."""
    mp = shape.tp * shape.pp
    if count % mp:
        return Msg(N_("{field}: tp × pp = {mp} does not divide {count} GPUs"), field="training.parallel", mp=mp,
                   count=count)
    if shape.tp > 1 and heads % shape.tp:
        return Msg(N_("{field}: {tp} does not divide the {heads} attention heads"), field="training.parallel.tp",
                   tp=shape.tp, heads=heads)
    if shape.pp > layers:
        return Msg(N_("{field}: {pp} stages for {layers} layers"), field="training.parallel.pp", pp=shape.pp,
                   layers=layers)
    if shape.tp > gpn:
        return Msg(N_("{field}: {tp} spans nodes ({gpn} GPUs per node); tensor parallel needs NVLink"),
                   field="training.parallel.tp", tp=shape.tp, gpn=gpn)
    return None


@dataclass(slots=True)
class Choice:
    shape: Shape
    dp: int
    mb: int
    ckpt: Checkpointing
    fits: bool
    need_bytes: float  # total at the chosen micro-batch (unscaled)
    shapes_tried: int
    host_ok: bool = True  # CPU offload: pinned host memory within the platform's limit


def ckpt_options(mc: MemoryConsts, pinned: Pinned) -> tuple[Checkpointing, ...]:
    if pinned.ckpt is not None:
        return (pinned.ckpt,)
    if mc.is_token and mc.act_layer["selective"] >= mc.act_layer["none"]:
        return ("none", "full")
    return ("none", "selective", "full")


# shape, dp, host bytes, (ckpt, fixed, per)
Row = tuple[Shape, int, float, tuple[tuple[Checkpointing, float, float], ...]]


def memory_table(
    mc: MemoryConsts, shapes: list[Shape], count: int, ckpts: tuple[Checkpointing, ...],
    cache: dict[tuple[int, Shape], Row] | None = None,
    act_cache: dict[tuple[int, int, str, int, int], float] | None = None,
) -> list[Row]:
    """Per layout: data-parallel degree, host bytes per GPU (offload) and, per checkpointing mode, the
    (fixed, per-sample) bytes of ``memory.micro_batch_terms``. Independent of the GPU type, so the
    recommender's sweep over GPU types reuses rows (``cache``, keyed by (count, layout)); ``act_cache``: see
    ``memory.micro_batch_terms``."""
    rows: list[Row] = []
    for s in shapes:
        if cache is not None:
            hit = cache.get((count, s))
            if hit is not None:
                rows.append(hit)
                continue
        dp = count // (s.tp * s.pp)
        if dp < 1:
            dp = 1
        host, per_ck = micro_batch_terms(mc, count, dp, s.tp, s.pp, s.zero, s.offload, ckpts, cp=s.cp, ep=s.ep, vp=s.vp,
                                         act_cache=act_cache)
        row = (s, dp, host, per_ck)
        if cache is not None:
            cache[(count, s)] = row
        rows.append(row)
    return rows


def _mb_room(budget_bytes: float, fixed: float, per: float) -> int:
    """The most micro-batch samples whose activations (``per`` bytes each) fit beside a layout's ``fixed``
    bytes in the budget (1 << 30: the layout needs no per-sample bytes); 0 when none fits."""
    room = budget_bytes - fixed
    if per > 0:
        return int(room // per) if room > 0 else 0
    return (1 << 30) if room >= 0 else 0


def pow2_at_most(n: int) -> int:
    """The largest power of two <= ``n``, and 1 when ``n`` < 1: the micro-batch the planner picks within a limit."""
    return 1 << (int(n).bit_length() - 1) if n >= 1 else 1


def choose_from_table(
    rows: list[Row], budget_bytes: float, mb_cap_fn: Callable[[int], int], want: int | None,
    host_budget_per_gpu: float = float("inf"),
) -> Choice:
    """First (layout, checkpointing) that fits with micro-batch ≥ 1; else the least-memory one.

    Offload layouts also need their pinned host memory within ``host_budget_per_gpu`` (bytes)."""
    # the leanest so far, as plain values (a Choice is made once, at the end): its key (not host_ok, need)
    best: tuple[Shape, int, Checkpointing, float, bool] | None = None
    best_bad, best_need = True, 0.0
    for i, (s, dp, host, per_ck) in enumerate(rows):
        host_ok = host <= host_budget_per_gpu
        for ck, fixed, per in per_ck:
            mbmax = _mb_room(budget_bytes, fixed, per) if host_ok else 0
            if want is not None:
                if mbmax >= want:
                    return Choice(s, dp, want, ck, True, fixed + per * want, i + 1)
                need = fixed + per * want
            elif mbmax >= 1:
                mb = pow2_at_most(min(mbmax, mb_cap_fn(dp)))
                return Choice(s, dp, mb, ck, True, fixed + per * mb, i + 1)
            else:
                need = fixed + per
            # report the leanest layout the host can carry (offload beyond host RAM is no answer): the least
            # (not host_ok, need), the first of equals
            bad = not host_ok
            if best is None or bad < best_bad or (bad == best_bad and need < best_need):
                best, best_bad, best_need = (s, dp, ck, need, host_ok), bad, need
    assert best is not None
    s, dp, ck, need, host_ok = best
    return Choice(s, dp, want or 1, ck, False, need, len(rows), host_ok)


# an entry's threshold is scaled by this before it rules the entry out: a filter, the exact test decides
_THRESHOLD_SLACK = 1.0 - 1e-9


@dataclass(slots=True)
class ChoiceIndex:
    """``choose_from_table``'s rows, prepared to answer many budgets (GPUs of other memory sizes): every
    (layout, checkpointing) entry in table order with the bytes it needs at the wanted micro-batch, and the
    entries ordered by that threshold, so a budget finds the entries that may fit by bisection instead of
    scanning them all (``choose_indexed``: the same answer as ``choose_from_table``)."""

    rows: list[Row]
    want: int | None
    # (row index, layout, dp, host bytes, checkpointing, fixed, per-sample, bytes needed at the wanted mb)
    flat: list[tuple[int, Shape, int, float, Checkpointing, float, float, float]]
    thresholds: list[float]  # ascending: the bytes needed, scaled by _THRESHOLD_SLACK (a lower bound)
    by_threshold: list[int]  # the flat indices in that order
    leanest: dict[float, Choice] = field(default_factory=dict)  # the no-fit answer by host budget
    # first_of[k]: the first entry in table order of by_threshold[:k] (the first one choose_indexed tests)
    first_of: list[int] = field(default_factory=list)
    # the answer when that entry fits at the micro-batch cap (the same for every budget that holds it), by
    # (entry, cap)
    capped: dict[tuple[int, int], Choice] = field(default_factory=dict)


def choice_index(rows: list[Row], want: int | None) -> ChoiceIndex:
    w = want or 1
    flat = [(i, s, dp, host, ck, fixed, per, fixed + per * w)
            for i, (s, dp, host, per_ck) in enumerate(rows) for ck, fixed, per in per_ck]
    needs = [f[7] for f in flat]
    order = sorted(range(len(flat)), key=needs.__getitem__)  # (no Python frame per entry)
    first_of = [-1, *accumulate(order, min)]
    return ChoiceIndex(rows, want, flat, [flat[j][7] * _THRESHOLD_SLACK for j in order], order, first_of=first_of)


def choose_indexed(ix: ChoiceIndex, budget_bytes: float, mb_cap_fn: Callable[[int], int],
                   host_budget_per_gpu: float = float("inf")) -> Choice:
    """``choose_from_table(ix.rows, budget_bytes, mb_cap_fn, ix.want, host_budget_per_gpu)``, answered from the
    index: only entries whose bytes needed are within the budget (a necessary condition, with slack) are
    tested, in table order, by the same arithmetic; with none fitting, the leanest entry (per host budget)."""
    want = ix.want
    if (want is not None and want < 1) or budget_bytes != budget_bytes:  # (not met by the planner: the plain scan)
        return choose_from_table(ix.rows, budget_bytes, mb_cap_fn, want, host_budget_per_gpu)
    k = bisect_right(ix.thresholds, budget_bytes)
    if k:
        # the entry tested first (the first in table order of those within the budget): it answers unless the
        # host cannot carry it or its micro-batch does not fit after all (the threshold's slack)
        j = ix.first_of[k]
        i, s, dp, host, ck, fixed, per, _need = ix.flat[j]
        if host <= host_budget_per_gpu:
            room = _mb_room(budget_bytes, fixed, per)
            if want is not None:
                if room >= want:
                    return Choice(s, dp, want, ck, True, fixed + per * want, i + 1)
            else:
                cap_raw = mb_cap_fn(dp)
                cap = int(cap_raw)
                if room >= cap >= 1:
                    # it holds the micro-batch cap: the answer is the same for every budget that holds it
                    got = ix.capped.get((j, cap))
                    if got is None:
                        mb = pow2_at_most(cap)
                        got = ix.capped[(j, cap)] = Choice(s, dp, mb, ck, True, fixed + per * mb, i + 1)
                    return got
                if room >= 1:
                    mb = pow2_at_most(cap_raw if cap_raw < room else room)  # (min(room, cap_raw))
                    return Choice(s, dp, mb, ck, True, fixed + per * mb, i + 1)
    if k > 1:  # the first one did not answer: the others in table order
        w = want or 1
        flat = ix.flat
        for j in sorted(ix.by_threshold[:k]):
            i, s, dp, host, ck, fixed, per, _need = flat[j]
            if host > host_budget_per_gpu:
                continue
            mbmax = _mb_room(budget_bytes, fixed, per)
            if mbmax < w:
                continue
            if want is not None:
                return Choice(s, dp, want, ck, True, fixed + per * want, i + 1)
            mb = pow2_at_most(min(mbmax, mb_cap_fn(dp)))
            return Choice(s, dp, mb, ck, True, fixed + per * mb, i + 1)
    hit = ix.leanest.get(host_budget_per_gpu)
    if hit is None:
        # the least (not host_ok, need), the first of equals (as choose_from_table's scan): by_threshold lists the
        # entries by need, equals in table order (a stable sort), so the first the host can carry, else the first
        flat = ix.flat
        best = next((j for j in ix.by_threshold if flat[j][3] <= host_budget_per_gpu), ix.by_threshold[0])
        _i, s, dp, host, ck, _f, _p, need = flat[best]
        host_ok = host <= host_budget_per_gpu
        hit = ix.leanest[host_budget_per_gpu] = Choice(s, dp, want or 1, ck, False, need, len(ix.rows), host_ok)
    return hit


def choose(
    mc: MemoryConsts, shapes: list[Shape], budget_bytes: float, count: int, mb_cap_fn: Callable[[int], int],
    pinned: Pinned, ckpts: tuple[Checkpointing, ...], host_budget_per_gpu: float = float("inf"),
) -> Choice:
    """``choose_from_table`` over a freshly built ``memory_table``."""
    return choose_from_table(memory_table(mc, shapes, count, ckpts), budget_bytes, mb_cap_fn, pinned.micro_batch,
                             host_budget_per_gpu)
