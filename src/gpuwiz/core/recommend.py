"""Pick the build: enumerate GPU x count candidates, filter, rank by objective, explain.

``recommend(req, catalog, objective=None) -> Recommendation`` (pure, deterministic, never raises for
valid input). A pipeline of stages with frozen values between them (``_Recommender.run``):

- ``enumerate`` (-> ``Enumerated``): every GPU x shape, sized by the estimator's fast path;
- ``price`` (-> ``Priced``): the rent price (exact) and a rough buy price, the filters (budget,
  policy); builds near the budget get their real bill of materials;
- ``rank`` (-> ``Ranked``): the whole system (``core.system``) sized for the best few and the best
  shapes of each GPU type, re-ranked on exact rent and buy costs (``core.cost``), the pick first;
- ``explain`` (-> ``Recommendation``): the full estimate, cost analysis and pitfalls
  (``core.pitfalls``) for the pick, its alternatives and the Pareto front;
- ``nothing`` / ``binding`` / ``suggestions``: when nothing fits, what binds and what would help.

Each stage returns new ``Cand`` values (frozen; ``dataclasses.replace``) and never changes its input.

Ranking ("cheapest", the default) compares each candidate's cheapest way to do the year's work over
the horizon: renting (cloud per run x runs) or buying (TCO net of residual value, tco_and_pitfalls
§C), so a team that trains twice a month is not told to buy an 8-GPU node; non-CUDA parts carry a
software-stack handicap, and within SIMPLICITY_TOLERANCE of the cheapest the build with the fewest
GPUs wins (a near-tie breaker, never more). "fastest" minimises
wall-clock time per run within the budget; "perf-per-watt" minimises energy per run.

Budget (``deployment.budget_usd``) is read as money available up front: the capex of a bought
build, or the first year of cloud spend for a rented one.
"""

from __future__ import annotations

import bisect
import dataclasses
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from operator import itemgetter
from typing import Any, TypedDict, cast

from gpuwiz.core import cost as costmod
from gpuwiz.core import gcpause, market, memo
from gpuwiz.core import pitfalls as pitmod
from gpuwiz.core import system as sysmod
from gpuwiz.core.catalog import GPU, Catalog, CloudInstance
from gpuwiz.core.errors import GpuwizError
from gpuwiz.core.models import (
    Alternative,
    BindingConstraint,
    Build,
    CloudOption,
    DeploymentSpec,
    Estimate,
    JurisdictionOption,
    MarketStatus,
    ParetoPoint,
    Range,
    Recommendation,
    RentOffer,
    Requirements,
    tier_bought_used,
)
from gpuwiz.core.units import GB_PER_GIB, HOURS_PER_MONTH, HOURS_PER_YEAR
from gpuwiz.core.whatif import fmt_hours
from gpuwiz.i18n import N_, _

# What the estimator can raise for one candidate on extreme inputs: a numeric edge (overflow, a zero
# divisor, a log/sqrt domain error) or a result that fails its own model's validation (ValueError).
_NUMERIC_ERRORS = (ArithmeticError, ValueError)
_PASSES = "passes"  # _Recommender._static's outcome for a shape that is a candidate if it ends in time

NON_CUDA_HANDICAP = 0.25  # ranking penalty for ROCm / Gaudi stacks under the cheapest objective
_NON_CUDA_STACK = 1.0 + NON_CUDA_HANDICAP  # ... as the factor on a cost (``_stack``)
# Cheapest objective: among builds within this fraction of the lowest (effective) horizon cost, the
# one with the fewest GPUs wins. The one place this tolerance is stated; see _Recommender.pick.
SIMPLICITY_TOLERANCE = 0.05
CLEARLY_FASTER = 1.25  # ... and among equally simple ones, a build this much faster wins (judgement)
# A near tie that holds builds fitting only inside the memory headroom asked (deployment.headroom: planned at
# TIGHT_HEADROOM instead of CPU offload) goes to a build that keeps it, up to this much dearer than the cheapest:
# an out-of-memory crash mid-run costs the run and a day of someone's time (judgement; >= SIMPLICITY_TOLERANCE).
ROOMY_TOLERANCE = 0.10
PICK_BAND = max(SIMPLICITY_TOLERANCE, ROOMY_TOLERANCE)  # the widest band ``pick`` looks in (``rank``'s proofs)

GPN_LADDER = (1, 2, 4, 8)
MAX_NODES = 4096
# Node counts the scale-out tries: every count to 8, then steps of ~1.25x (3 nodes that meet a
# deadline, or 5 that fit a budget, are real builds; powers of two alone missed them).
NODE_LADDER = tuple(sorted({*range(2, 9), *(int(round(8 * 1.25 ** k / 2) * 2) for k in range(1, 30))}))
NODE_LADDER = tuple(n for n in NODE_LADDER if n <= MAX_NODES)
FINETUNE_TURNAROUND_HOURS = 7 * 24.0  # no deadline: a fine-tune should come back within a week
MIN_TURNAROUND_HOURS = 7 * 24.0  # no deadline: a pretraining run gets at least a week
# A run should end by this fraction of its deadline (restarts, a slower pipeline); a build past it
# wins only when nothing else fits, and the answer says so.
SLACK_FRAC = 0.85
# Objective fastest: runs that end within this many hours tie, and the cheaper build wins (judgement: 284 nodes
# bought to finish a 1,000-sample run in 20 s instead of 50 s on 5 nodes, $93M against $88k, is not "fastest").
FASTEST_TIE_H = 0.25
LEAN_REACH = 1.5  # the lean / used tiers are tried for boxes up to this factor over the budget
ROUGH_REACH = 1.6  # over-budget single boxes whose rough capex is within this factor get a real BOM
# An instance without a published front-end network figure stages data at ~10 Gb/s (judgement).
STAGING_GBPS = 10.0
EXACT_TOP = 14  # candidates that get a full system build for exact ranking
SHAPES_PER_TYPE = 3  # ... and the best shapes (gpn x nodes) of each GPU type by the rough ranking
SHAPE_REACH = 1.5  # ... the 2nd and 3rd only when their rough horizon cost is within this of the best
N_ALTERNATIVES = 4
# The Pareto front shown beside the pick (trim_front; judgement): points up to this multiple of the
# pick's cost per run, up to max(PARETO_MIN_NODES, PARETO_NODE_REACH x the pick's nodes), and one row
# per build whose time and cost agree within PARETO_SAME.
PARETO_COST_REACH = 3.0
PARETO_NODE_REACH = 4
PARETO_MIN_NODES = 8
PARETO_SAME = 0.01

# Drop reasons are the keys of Recommendation.dropped (English in the JSON); the views translate them.
DROP_FIT = N_("does not fit in GPU memory")
DROP_DEADLINE = N_("misses the deadline")
DROP_BUDGET = N_("over budget")
DROP_MARKET = N_("not sold new in this country")
DROP_EXPORT = N_("export-restricted for your country")
DROP_CUDA = N_("not CUDA (deployment.require_cuda)")
DROP_SITE = N_("does not suit the site")
DROP_PRICE = N_("no price (buy) or cloud offer (rent)")
DROP_CONSUMER_MULTI = N_("consumer card in a multi-node build")
DROP_CAPACITY = N_("cannot do the runs per month when owned")
DROP_TRAINING = N_("not a training part (VDI / inference board)")
DROP_ERROR = N_("estimator error")
DROP_NO_P2P = N_("rented multi-GPU without peer-to-peer while one GPU suffices")
DROP_BATCH = N_("more data-parallel replicas than the global batch has samples")
DROP_BATCH_SPLIT = N_("replicas that cannot split the global batch (a step would train over 10 % more)")
DROP_BATCH_GROWN = N_("replicas that would grow the default global batch past what a run like this uses (set "
                      "training.global_batch)")


# ---- estimator adapter ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Quick:
    fits: bool
    wall_hours: float
    gpu_hours: float
    per_gpu_gib: float = 0.0
    host_ram_gib: float = 0.0  # per node, CPU offload
    replicas: int = 1  # data-parallel replicas of the plan (each needs samples of the global batch)
    wall_hours_p90: float | None = None  # the slow end of the cross-validated range (None: no range)
    plan_fits: bool = True  # the planner found a layout within the GPU's memory (False: none, at any micro-batch)
    batch: int = 0  # the global batch a step of the plan trains (micro-batch x accumulation x replicas; 0: unknown)
    # the P90 end of the memory per GPU (GiB; estimate.lightest_memory_high) of a plan with nothing lighter to fall
    # back on (micro-batch 1, full recompute, one GPU or ZeRO-3); None otherwise, or without a range: above the
    # card, the build ranks after one whose range fits (``oom_risk``)
    mem_p90: float | None = None


# What _try books for a shape whose outcome _Scanner.no_fit_proved proves (no layout fits its memory).
_NO_FIT = Quick(fits=False, wall_hours=math.inf, gpu_hours=math.inf, plan_fits=False)

QUOTES_MAX = 4096  # Quick values kept per plan key (a search makes ~100-300; each data edit as many new)
FULLS_MAX = 256  # full estimates kept per plan key (an answer makes 1-3)
ANSWERS_MAX = 16  # whole answers kept per catalog (memo.table): the last few questions asked
ENUMERATED_MAX = 64  # searches (stage 1) kept per plan key: one per data / schedule / site / policy edit

# Pruning: candidates whose outcome a cheap check proves (a desk that takes no chassis for them, ...)
# are booked without calling the estimator. The differential test (tests/core/test_prune.py) turns it
# off (``unpruned``) and compares the JSON on every example and scenario.
prune = True


@contextmanager
def unpruned() -> Iterator[None]:
    """Run the search without pruning (every candidate through the estimator), as before it."""
    global prune
    saved = prune
    prune = False
    try:
        yield
    finally:
        prune = saved


class _Scanner:
    """Runs the estimator's fast path (``prepare`` / ``quick``) or, if absent, the full estimate."""

    def __init__(self, req: Requirements, cat: Catalog) -> None:
        from gpuwiz.core import estimate as est_mod

        self.req, self.cat, self.mod = req, cat, est_mod
        self.ctx: Any = None
        prep = getattr(est_mod, "prepare", None)
        self.fast = prep is not None and hasattr(est_mod, "quick")
        # per-candidate plans shared with earlier calls of the same plan key (core.memo); None: off
        hit = memo.entry(req, cat) if self.fast else None
        if self.fast:
            # the plan key's context, for these requirements (they differ from its own in price-only fields
            # alone: estimate.reprepare), or a new one whose tables the plan key's later contexts share
            box = hit[1].setdefault("recommend.ctx", {}) if hit is not None else {}
            prev = box.get("ctx")
            if prev is not None:
                self.ctx = est_mod.reprepare(prev, req)
            else:
                self.ctx = prep(req, cat)  # type: ignore[misc]
                if hit is not None:
                    memo.share_tables(self.ctx, hit[1])
                    box["ctx"] = self.ctx
        self.memo = hit[0] if hit is not None else None
        # ... and the Quick each plan gives at a run time (same plan, same wall hours: same Quick)
        self.quotes: dict[tuple[str, int, int, float], Quick] | None = (
            hit[1].setdefault("recommend.quotes", {}) if hit is not None else None)
        if self.quotes is not None and len(self.quotes) > QUOTES_MAX:
            self.quotes.clear()
        self._spread = getattr(est_mod, "_speed_spread", None)
        self._high = getattr(est_mod, "lightest_memory_high", None)  # (``_stem``)
        self._plain = getattr(est_mod, "plain_data_parallel", None)  # (``plain``)
        self._wall = getattr(est_mod, "wall_hours", None)  # what requote recomputes (the data size's one entry)
        # Full estimates of a plan key: per shape and data section (an Estimate reads nothing else
        # the plan key leaves out), and per shape the last one made (``plan_facts``)
        self.fulls: dict[tuple[str, int, int, Any], Estimate] | None = (
            hit[1].setdefault("recommend.fulls", {}) if hit is not None else None)
        if self.fulls is not None and len(self.fulls) > FULLS_MAX:
            self.fulls.clear()
        # _Recommender._try's outcome per shape before its run time (_Recommender._static), per the other fields read
        self.outcomes: dict[tuple[Any, ...], dict[tuple[str, int, int, bool, bool], str]] | None = (
            hit[1].setdefault("recommend.outcomes", {}) if hit is not None else None)
        self.plan_ests: dict[tuple[str, int, int], Estimate] = (
            hit[1].setdefault("recommend.plan_ests", {}) if hit is not None else {})
        # the search's stage 1 on this plan key (_Recommender.enumerated): it reads no money field
        self.enumerated: dict[tuple[Any, ...], Enumerated] | None = (
            hit[1].setdefault("recommend.enumerated", {}) if hit is not None else None)
        if self.enumerated is not None and len(self.enumerated) > ENUMERATED_MAX:
            self.enumerated.clear()
        # ... and the part of each plan's Quick that the data size does not change (``_stem``)
        # ... and each plan's cross-validated speed P10 (``_p90``; None: no range), which the data size leaves alone
        self.plains: dict[tuple[str, int, int], bool] = (  # (``plain``)
            hit[1].setdefault("recommend.plains", {}) if hit is not None else {})
        self.p10s: dict[tuple[object, ...], float | None] = (
            hit[1].setdefault("recommend.p10s", {}) if hit is not None else {})
        self.stems: dict[tuple[str, int, int], tuple[bool, float, float, int, bool, int, float | None]] = (
            hit[1].setdefault("recommend.stems", {}) if hit is not None else {})
        # (count, gpus per node, fit class) -> the most GPU memory found to fit no layout there (no_fit_proved)
        self.no_fit: dict[tuple[Any, ...], float] = {}
        self.fit_classes: dict[tuple[int, int], tuple[GPU, tuple[Any, ...] | None]] = {}  # per (GPU, gpn)

    def quick(self, gpu: GPU, count: int, gpn: int, timed: bool = True) -> Quick:
        """The shape's ``Quick``; ``timed=False``: a shape that does not fit has no run time (inf), as the
        search drops it unread (estimate.quick's ``time_misfit``)."""
        if self.fast:
            key = (gpu.id, count, gpn)
            r = self.memo.get(key) if self.memo is not None else None
            if r is None or (timed and r.detail is not None and r.detail.st is None):
                r = self.mod.quick(self.ctx, gpu, count, gpn, time_misfit=timed)
                if self.memo is not None:
                    self.memo[key] = r
                wall, gpu_hours = r.wall_hours, r.gpu_hours
            elif self._wall is not None:  # requote's run time, without a new QuickResult
                d = r.detail
                wall = self._wall(self.ctx, d.units_per_s_per_gpu, d.count)
                gpu_hours = r.gpu_hours if wall == r.wall_hours else wall * d.count
            else:
                r = self.mod.requote(self.ctx, r)
                wall, gpu_hours = r.wall_hours, r.gpu_hours
            if self.quotes is not None:
                qkey = (*key, wall)
                got = self.quotes.get(qkey)
                if got is None:
                    got = self.quotes[qkey] = self._quote(r, key, wall, gpu_hours)
                return got
            return self._quote(r, key, wall, gpu_hours)
        e = self.full(gpu, count, gpn)
        return Quick(fits=e.feasible, wall_hours=e.time.wall_hours, gpu_hours=e.time.gpu_hours,
                     per_gpu_gib=e.memory.per_gpu_gib, host_ram_gib=e.memory.host_ram_gib,
                     replicas=e.plan.replicas, batch=e.plan.global_batch)

    def _quote(self, r: Any, key: tuple[str, int, int], wall: float, gpu_hours: float) -> Quick:
        """The recommender's view of one fast-path result (an ``estimate.QuickResult``; ``key`` its
        plan) at a run time (``wall``, ``gpu_hours``: the result's own, or requoted for this data
        size): the plan's ``_stem`` and the run time."""
        stem = self.stems.get(key)
        if stem is None:
            stem = self.stems[key] = self._stem(r)
        fits, per_gpu, host, replicas, plan_fits, batch, mem_p90 = stem
        new = object.__new__(Quick)  # a frozen dataclass, built without its __init__ (one per shape tried)
        new.__dict__.update(fits=fits, wall_hours=float(wall or math.inf), gpu_hours=float(gpu_hours or math.inf),
                            per_gpu_gib=per_gpu, host_ram_gib=host, replicas=replicas,
                            wall_hours_p90=self._p90(r, wall, key) if fits else None, plan_fits=plan_fits,
                            batch=batch, mem_p90=mem_p90)
        return new

    def _stem(self, r: Any) -> tuple[bool, float, float, int, bool, int, float | None]:
        """(fits, GiB per GPU, host GiB per node, replicas, plan fits, the global batch a step trains, the P90 GiB per
        GPU) of a plan: what requote keeps."""
        detail = r.detail
        if detail is None:
            blocked, dp, plan_fits, batch = False, 1, True, 0
        else:  # (estimate._Detail; ints and bools as the estimator makes them)
            choice = detail.choice
            blocked, plan_fits = bool(detail.problems), choice.fits
            cp = self.ctx.cp
            dp = (choice.dp or 1) // (cp if cp and cp > 1 else 1)
            rep = choice.dp // choice.shape.cp if choice.shape.cp > 1 else choice.dp
            batch = choice.mb * detail.ga * (rep if rep > 1 else 1)
        high = self._high
        fits = r.fits
        mem_p90 = high(self.ctx, r) if high is not None and fits else None
        return (fits and not blocked, float(r.per_gpu_gib or 0.0), float(r.host_ram_gib or 0.0), dp if dp > 1 else 1,
                plan_fits, batch, mem_p90)

    def plain(self, gpu: GPU, count: int, gpn: int) -> bool:
        """The shape's plan (tried: in the memo) gave up nothing for memory (estimate.plain_data_parallel): more
        replicas of it cannot run a GPU faster. False without the fast path (unknown)."""
        if not self.fast or self._plain is None:
            return False
        key = (gpu.id, count, gpn)
        got = self.plains.get(key)  # (a plan's: kept with the plan key's tables, so an edit asks none again)
        if got is None:
            r = self.memo.get(key) if self.memo is not None else None
            if r is None:  # (the memo off, or the shape not tried: its plan, made again)
                r = self.mod.quick(self.ctx, gpu, count, gpn)
            got = self.plains[key] = bool(self._plain(self.ctx, r))
        return got

    def fit_class(self, gpu: GPU, gpn: int) -> tuple[Any, ...] | None:
        """What the fast path's fit test reads of a GPU besides its memory (estimate.quick: the layouts
        its NVLink allows, the vendor a configured stack filters on, the host RAM a CPU-offload layout may
        use on its platform), or None when unknown (no fast path). Two GPUs of one class at one shape
        see the same layouts and host budget; the one with less memory has a smaller budget for each."""
        key = (id(gpu), gpn)
        hit = self.fit_classes.get(key)
        if hit is not None and hit[0] is gpu:
            return hit[1]
        host = getattr(self.mod, "_host_limit_gib", None)
        cls = None if not self.fast or host is None else (
            gpu.nvlink_gbps > 0, gpu.nvlink_multi_gpu, gpu.vendor, host(self.ctx, gpu, gpn))
        self.fit_classes[key] = (gpu, cls)
        return cls

    def no_fit_proved(self, gpu: GPU, count: int, gpn: int) -> bool:
        """A GPU of this one's fit class with at least its memory found no layout at this shape (its
        planner's choice did not fit, even at the tighter headroom): nothing fits this GPU either, as
        every layout needs the same bytes and has less room (``fit_class``)."""
        if not self.no_fit:
            return False
        cls = self.fit_class(gpu, gpn)
        most = self.no_fit.get((count, gpn, cls)) if cls is not None else None
        return most is not None and most >= gpu.memory_gib

    def note_fit(self, gpu: GPU, count: int, gpn: int, q: Quick) -> None:
        """Keep the most memory a GPU of each fit class had where its planner found no layout."""
        if q.plan_fits:
            return
        cls = self.fit_class(gpu, gpn)
        if cls is not None:
            key = (count, gpn, cls)
            self.no_fit[key] = max(self.no_fit.get(key, 0.0), gpu.memory_gib)

    def _p90(self, r: Any, wall: float, key: tuple[str, int, int]) -> float | None:
        """``estimate.wall_hours_high`` of ``r`` at run time ``wall``, from the plan's cross-validated speed
        spread (the P90 wall time is wall / P10; ``estimate._speed_spread`` keeps the spread per group, in
        tables the contexts of one plan key share: core.memo)."""
        if self._spread is None or r.detail is None or not wall or wall == math.inf:
            if wall != r.wall_hours:
                r = self.mod.requote(self.ctx, r)
            return self.mod.wall_hours_high(self.ctx, r)
        pkey = (key, self.ctx.stack_override)  # (the plan's; an edit of the data asks it again at a new run time)
        p10 = self.p10s.get(pkey, memo.MISS)
        if p10 is memo.MISS:
            sp = self._spread(self.ctx, r)
            p10 = self.p10s[pkey] = sp.p10 if sp is not None else None
        return wall / p10 if p10 is not None else None

    def global_batch(self) -> int | None:
        """Samples per optimizer step as the config states them (training.global_batch), or None:
        a batch the estimator defaulted is a heuristic a bigger cluster may scale, a stated one is a
        hyperparameter of the run."""
        gb = self.req.training.global_batch
        return int(gb) if gb else None

    def full(self, gpu: GPU, count: int, gpn: int) -> Estimate:
        if self.fast and hasattr(self.mod, "estimate_from"):
            if self.fulls is None:
                return self.mod.estimate_from(self.ctx, gpu, count, gpn)
            key = (gpu.id, count, gpn, self.req.data)
            got = self.fulls.get(key)
            if got is None:
                got = self.fulls[key] = self.plan_ests[key[:3]] = self.mod.estimate_from(self.ctx, gpu, count, gpn)
            return got
        return self.mod.estimate(self.req, self.cat, gpu=gpu.id, count=count, gpus_per_node=gpn)

    def plan_facts(self, gpu: GPU, count: int, gpn: int) -> sysmod.PlanFacts:
        """The sizing inputs (system.PlanFacts) of this shape's plan without building a full estimate: a full
        estimate made for it before (maybe for another data size of the plan key: they do not depend on it), else
        the fast path's result, which carries the same values (estimate_from copies them from it)."""
        got = self.plan_ests.get((gpu.id, count, gpn))
        if got is not None or not self.fast:
            return sysmod.PlanFacts.of(got if got is not None else self.full(gpu, count, gpn))
        r = self.memo.get((gpu.id, count, gpn)) if self.memo is not None else None
        if r is None or r.detail is None or r.detail.st is None:  # (not asked yet, or asked untimed)
            r = self.mod.quick(self.ctx, gpu, count, gpn)
        d, model = r.detail, self.ctx.model
        s = d.choice.shape
        return sysmod.PlanFacts(model.family, model.params_total, self.ctx.p_trainable, r.tokens_per_s_per_gpu,
                                r.samples_per_s_per_gpu, s.offload, r.host_ram_gib, s.framework(d.count), s.zero,
                                s.tp, s.pp, s.model_parallel)


# ---- candidates ----------------------------------------------------------------------------------


class _Decided(TypedDict, total=False):
    """cost.analyse's ``decided`` / ``decided_why`` keywords."""

    decided: str
    decided_why: str


@dataclass(frozen=True, eq=False)  # compared by identity: one candidate, priced step by step
class Cand:
    """One build the search tried: GPU x gpus per node x nodes, its fast-path estimate, and what
    each pricing stage found (a stage returns a new Cand; ``dataclasses.replace``)."""

    gpu: GPU
    gpn: int
    nodes: int
    q: Quick
    rent_run: float | None = None  # on-demand, cheapest offer
    rent_inst: CloudInstance | None = None  # ... that offer (``rent_label`` names it)
    rent_n: int = 0  # ... and how many instances of it
    rent_gpu_hour: float = 0.0
    spot_run: float | None = None
    reserved_year: float | None = None
    capex: float | None = None
    buy_total: float | None = None
    rent_total: float | None = None
    score: float = math.inf
    mode: str = "rent"  # the cheaper way for this candidate
    exact: bool = False
    drop: str | None = None  # why it has no score (DROP_*), when it has none
    build: sysmod.Sizing | None = None  # the sized system's numbers (exact stage)
    idle: int = 0  # GPUs paid for but unused (smallest offer >= count)
    overhead: float = 0.0  # per-run rent overhead in $ (provisioning, staging, egress)
    # per-run hours a rented run spends before it trains (provisioning, image pull, dataset staging): the time to a
    # result is the run's plus these when it is rented (``tight``, ``to_result``)
    rent_hours: float = 0.0

    def but(self, fields: dict[str, Any] | None = None, /, **changes: Any) -> Cand:
        """A copy with ``fields`` and ``changes`` (``dataclasses.replace`` without re-running ``__init__``:
        the search makes a few thousand of these per answer; ``fields`` is a dict a caller keeps, set
        without unpacking it into keywords first)."""
        new = object.__new__(Cand)
        d = new.__dict__
        d.update(self.__dict__)
        if fields:
            d.update(fields)
        d.update(changes)
        return new

    @staticmethod
    def of(gpu: GPU, gpn: int, nodes: int, q: Quick) -> Cand:
        """``Cand(gpu, gpn, nodes, q)`` without the frozen ``__init__`` (one per shape the search tries)."""
        new = object.__new__(Cand)
        new.__dict__.update(_CAND_DEFAULTS)
        new.__dict__.update(gpu=gpu, gpn=gpn, nodes=nodes, q=q)
        return new

    @property
    def rent_label(self) -> str:
        """The priced offer, as the answer names it ("" when not rented)."""
        inst = self.rent_inst
        if inst is None:
            return ""
        return rent_label(self.count, self.gpu.name, inst.provider, inst.instance_type, self.rent_n)

    @property
    def count(self) -> int:
        return self.gpn * self.nodes

    @property
    def tier(self) -> str | None:
        """The priced offer's market tier (None: not rented). A property, not a field: a Cand's attributes stay
        at 21, which a dict of 32 slots holds (a 22nd doubles it to 64: ~370 bytes more for every Cand)."""
        return self.rent_inst.tier if self.rent_inst is not None else None

    @property
    def energy_kwh(self) -> float:
        return self.q.wall_hours * self.count * self.gpu.tdp_w / 1000.0


_CAND_DEFAULTS = {f.name: f.default for f in dataclasses.fields(Cand) if f.default is not dataclasses.MISSING}

Drops = tuple[tuple[str, int], ...]  # (reason, count), in the order first seen
# price_rough's facts of one shape (_Recommender._shape_facts): the cheapest offer (rate, offer,
# instances, overhead hours, egress $, reserved $/h, spot $/h, $ per GPU-hour), the rough capex, its owning parts
_ShapeFacts = tuple[tuple[float, CloudInstance, int, float, float, float, float | None, float] | None, float | None,
                    costmod.PartsStem | None]


@dataclass(frozen=True)
class _Shapes:
    """The pricing stage's per-shape tables for one workload (``_Recommender._shape_table``)."""

    st_h: float  # $/h of the workload's cloud volume
    facts: dict[tuple[str, int, int, float], _ShapeFacts]  # shape + host RAM -> price_rough's facts
    # shape + host RAM + lean + used -> the sized system and its owning parts (``exact``)
    sized: dict[tuple[str, int, int, float, bool, bool | None], tuple[sysmod.Sizing, costmod.PartsStem]]
    # id(search) -> (the search, its candidates' _template): the search held, so its id is not reused
    templates: dict[int, tuple[Enumerated, list[_Template]]]


# price_rough's candidate before the money fields: (the search's candidate, its rent price and rough capex as
# Cand fields to set, the year's rent or None, the owning parts or None); _Recommender._template
_Template = tuple[Cand, dict[str, Any], float | None, costmod.PartsStem | None]
TEMPLATES_MAX = 8  # searches whose templates a workload's shape table keeps (past it: emptied)


class _Tally:
    """The drop counter one stage fills while it runs (local to that call); frozen into ``Drops``."""

    def __init__(self, start: Drops = (), considered: int = 0, fastest_miss: float = math.inf) -> None:
        self.counts: dict[str, int] = dict(start)
        self.considered = considered
        self.fastest_miss = fastest_miss

    def drop(self, reason: str, n: int = 1) -> None:
        self.counts[reason] = self.counts.get(reason, 0) + n

    def frozen(self) -> Drops:
        return tuple(self.counts.items())


@dataclass(frozen=True)
class Enumerated:
    """Stage 1 (enumerate + size): every shape tried, with its fast-path estimate."""

    cands: tuple[Cand, ...]
    dropped: Drops
    considered: int
    fastest_miss: float  # fastest fitting run that missed the deadline, hours


@dataclass(frozen=True)
class Priced:
    """Stage 2 (price): the candidates with a price within budget and policy, and the ones the
    budget stopped (for the binding constraint)."""

    ok: tuple[Cand, ...]
    over_budget: tuple[Cand, ...]
    dropped: Drops
    considered: int
    fastest_miss: float

    def counts(self) -> dict[str, int]:
        return dict(self.dropped)


@dataclass(frozen=True)
class Ranked:
    """Stage 3 (rank): the exact-priced shortlist, winner first, and every priced candidate (exact
    where sized) for the Pareto front."""

    shortlist: tuple[Cand, ...]
    priced: tuple[Cand, ...]
    search: Priced

    @property
    def win(self) -> Cand:
        return self.shortlist[0]


def _gpn_options(gpu: GPU) -> list[int]:
    opts = [g for g in GPN_LADDER if g <= gpu.max_per_node]
    if gpu.max_per_node not in opts and gpu.max_per_node <= 72:
        opts.append(gpu.max_per_node)
    return opts


def deadline_hours(req: Requirements) -> float:
    """The deadline, or without one a practical turnaround: a fine-tune within a week, a pretraining
    run within the time between runs (at least a week). ``turnaround_note`` says which was assumed."""
    if req.schedule.deadline_days:
        return req.schedule.deadline_days * 24.0
    if req.training.method != "pretrain":
        return FINETUNE_TURNAROUND_HOURS
    return max(MIN_TURNAROUND_HOURS, HOURS_PER_MONTH / req.schedule.runs_per_month)


def turnaround_note(req: Requirements) -> str | None:
    if req.schedule.deadline_days:
        return None
    h = deadline_hours(req)
    what = _("a fine-tune should come back within 7 days") if req.training.method != "pretrain" else \
        _("a pretraining run should finish before the next one starts")
    return _("no deadline given: assumed {days:,.0f} days per run ({what}); set schedule.deadline_days to change "
             "it").format(days=h / 24, what=what)


def recommend(req: Requirements, catalog: Catalog, objective: str | None = None) -> Recommendation:
    obj = objective or req.deployment.objective
    if obj not in ("cheapest", "fastest", "perf-per-watt"):
        raise GpuwizError("objective: " + _("unknown objective {obj!r} (cheapest, fastest, perf-per-watt)").format(
            obj=obj))
    if not req.data.tokens and not req.data.samples:
        raise GpuwizError("data: " + _("no data size given (set data.tokens or data.samples): a recommendation "
                                       "needs the time per run"), fields=("data.tokens", "data.samples"),
                          reason=_("needed: how much data (tokens or samples); the time per run depends on it"))
    if req.hardware and req.hardware.gpu and req.hardware.gpu not in {g.id for g in catalog.gpus}:
        from gpuwiz.core.catalog import did_you_mean

        gid = req.hardware.gpu
        raise GpuwizError("hardware.gpu: " + _("unknown GPU id {gid!r}").format(gid=gid)
                          + did_you_mean(gid, [g.id for g in catalog.gpus]),
                          fields=("hardware.gpu",), reason=_("not a GPU in the catalog"))
    # The same question again (a redraw, an edit undone): the answer it had (core.memo; an answer is
    # a frozen value, a pure function of the requirements, the objective and the catalog).
    answers = memo.table(catalog, "recommend.answers", maxsize=ANSWERS_MAX)
    key = (obj, req.model_dump_json()) if answers is not None else None
    if answers is not None:
        hit = answers.get(key)
        if hit is not memo.MISS:
            return hit  # type: ignore[no-any-return]
    with gcpause.paused():  # no cyclic collection while the answer allocates (core.gcpause)
        rec = _Recommender(req, catalog, obj).run()
        if req.have:  # owned hardware (have:) as an option beside buying and renting: core.owned
            from gpuwiz.core.owned import with_owned

            rec = with_owned(req, catalog, rec)
    if answers is not None:
        answers.put(key, rec)
    return rec


class _Snapshot:
    """A frozen pydantic model's field values as plain attributes (read-only by convention). A read of a
    pydantic model's attribute goes through ``BaseModel.__getattr__``'s slot hook, which the interpreter does
    not specialise (~25 ns more a read), and the search reads the deployment's fields for every shape it
    tries: about 1,900 reads an answer on small-team-lora-7b."""

    def __init__(self, model: Any) -> None:
        self.__dict__.update(model.__dict__)


class _Recommender:
    def __init__(self, req: Requirements, cat: Catalog, objective: str) -> None:
        self.req, self.cat, self.obj = req, cat, objective
        # (the deployment's fields as plain attributes: _Snapshot; the same names and values)
        self.d = cast(DeploymentSpec, _Snapshot(req.deployment))
        self.runs_pm = req.schedule.runs_per_month
        self.deadline_h = deadline_hours(req)
        self.slack_h = SLACK_FRAC * self.deadline_h  # a run that ends after it has no slack (``tight``)
        # Scale-out stops at this time per run: the deadline, or tighter when the build may be owned.
        self.stop_h = self.deadline_h
        if self.d.mode in ("buy", "either"):
            self.stop_h = min(self.stop_h, HOURS_PER_MONTH / req.schedule.runs_per_month)
        self.cap_cache: dict[tuple[str, int, int], float] = {}
        self.points: dict[Cand, tuple[float, float]] = {}  # _point per candidate (Cand: hashed by identity)
        self.keys: dict[Cand, tuple[float, ...]] = {}  # key per candidate
        self.floor_orders: dict[Cand, tuple[float, float, float] | None] = {}  # _floor_order per candidate
        self.ram_cap: dict[tuple[str, int], float] = {}
        self.restricted = market.purchase_restricted_country(cat, self.d.country)
        self.y = costmod.years(req)
        self.rpy = costmod.runs_per_year(req)
        self.not_training = {e.id for e in cat.platforms.training_excluded}
        self.buyable_cache: dict[tuple[str, int], bool] = {}
        self.sold_cache: dict[str, bool] = {}  # market.can_buy per GPU id (the country is fixed)
        self.unit_prices: dict[str, float | None] = {}  # _unit_price per GPU id
        self.pinned = bool(req.hardware and req.hardware.gpu)
        # owning: this deployment's $/kWh and residual factor, applied to the footprints' PartsStem
        self.rates = costmod.own_rates(req, cat)
        self.stem_key = costmod.stem_key(req)
        self.rough_stems = memo.table(cat, "rough_onprem_stems")
        self.floor_stems = memo.table(cat, "buy_floor_stems")  # _buy_floor's stems per shape and stem_key
        # _buy_floor per shape, kept per catalog on every money field it reads (``stem_key``, $/kWh, residual
        # factor, horizon): an edit of the data, the schedule or the budget finds the last answer's floors
        floors = memo.table(cat, "buy_floors", maxsize=16)
        fkey = (self.stem_key, self.rates.kwh, self.rates.residual_factor, self.y)
        kept = floors.find(fkey, memo.MISS) if floors is not None else memo.MISS
        if kept is memo.MISS:
            kept = {}
            if floors is not None:
                floors.put(fkey, kept)
        self.floors: dict[tuple[str, int, int], tuple[float, float]] = kept
        # price_rough's per-shape facts (_shape_facts) for one workload: (workload, $/h of its cloud
        # volume, {shape: facts}), kept per catalog on every field they read (_shape_table)
        self.shape_tables = memo.table(cat, "rough_shapes", maxsize=32)
        self._shapes: tuple[sysmod.Workload, _Shapes] | None = None
        # every requirement field price_rough's run-time-free facts read (_rough_facts)
        self.facts_key = (market.policy_key(req), self.d.used_hardware, self.d.country, self.d.site, self.pinned)
        self.facts = memo.table(cat, "rough_price_facts")
        self.no_price: dict[tuple[object, ...], bool] | None = None  # ``_no_price``'s answers for these fields
        self.offers: dict[str, tuple[tuple[CloudInstance, float], ...]] = {}  # cost.allowed_offers per GPU id
        # the catalog's pricing factors, read once per answer
        self.r1 = cat.fac("reserved_1y_discount")
        self.spot_over = cat.fac("spot_overhead_frac")
        self.share = min(max(cat.fac("server_overhead_frac"), 0.0), 0.9)
        # fastest: the search never depends on the deadline (the fastest build within budget)
        self.search_h = math.inf if objective == "fastest" else self.deadline_h
        # a step may train at most this batch (a stated one, rounded up to whole micro-batches per replica by up
        # to estimate.BATCH_SLACK; a defaulted one grown with the replicas up to estimate.batch_most's limit):
        # set by ``run`` from the estimator's context (None: the estimator has none)
        self.batch_cap: float | None = None
        # a box for the desk draws at most what one office circuit of the country carries (needs_circuit)
        self.circuit_w = sysmod.office_circuit(cat, self.d.country).continuous_w if self.d.site == "desk" else math.inf
        # ``search``'s workload (the node ladder's rented wait, the binding's lean boxes) and its search (what
        # ``_in_jurisdiction`` prices again under another policy)
        self._w0: sysmod.Workload | None = None
        self._found: Enumerated | None = None
        # _try's table of outcomes (``_static_outcomes``), for the scanner it was found for
        self._outcomes: tuple[_Scanner, dict[tuple[str, int, int, bool, bool], str] | None] | None = None
        self.stage_gbps: dict[str, float] = {}  # the slowest staging network of a GPU's allowed offers
        self.setup_h = cat.fac("cloud_setup_hours")

    # -- enumeration --
    def gpus(self) -> list[GPU]:
        hw = self.req.hardware
        if hw and hw.gpu:
            return [self.cat.gpu(hw.gpu)]
        return list(self.cat.gpus)

    def shapes(self, gpu: GPU) -> list[tuple[int, int]] | None:
        """(gpus_per_node, nodes) to try for a pinned count; None = search."""
        hw = self.req.hardware
        if not hw or not hw.count:
            return None
        count = hw.count
        gpn = hw.gpus_per_node or min(count, gpu.max_per_node)
        gpn = max(1, min(gpn, count))
        return [(gpn, max(1, math.ceil(count / gpn)))]

    def excluded(self, gpu: GPU) -> str | None:
        """Why the user cannot have this GPU at all (export controls, CUDA-only), or None."""
        # Buying is one export rule, renting abroad another (market.purchase_rule / remote_rule).
        if self.restricted and market.purchase_blocked(self.cat, self.d.country, gpu) and (
                self.d.mode == "buy" or market.remote_blocked(self.cat, self.d.country, gpu)):
            return DROP_EXPORT
        if self.d.mode == "buy" and not market.can_buy(self.cat, self.d.country, gpu):
            return DROP_MARKET
        if self.d.require_cuda and gpu.vendor != "nvidia":
            return DROP_CUDA
        if gpu.id in self.not_training:
            return DROP_TRAINING
        return None

    def _no_price(self, what: tuple[object, ...], compute: Callable[..., bool], *args: Any) -> bool:
        """``unpriced`` / ``shape_unpriced`` (``compute(*args)``: no closure made for every shape the search tries)
        through a per-catalog table on every field they read (the mode, ``facts_key``: the data policy, used
        hardware, country, site; the GPUs per node asked), so an edit of the data or the money asks each once."""
        known = self.no_price
        if known is None:
            tbl = memo.table(self.cat, "no_price", maxsize=64)
            hw = self.req.hardware
            key = (self.d.mode, self.facts_key, hw.gpus_per_node if hw else None, hw.count if hw else None)
            known = tbl.find(key, memo.MISS) if tbl is not None else memo.MISS
            if known is memo.MISS:
                known = {}
                if tbl is not None:
                    tbl.put(key, known)
            self.no_price = known
        got = known.get(what)
        if got is None:
            got = known[what] = compute(*args)  # (a value another answer would compute alike: no lock needed)
        return got

    def unpriced(self, gpu: GPU, shapes: list[tuple[int, int]] | None) -> bool:
        """No shape of this GPU the search tries has a price the mode allows: no cloud offer the data
        policy allows (``cost.allowed_offers``, the offers ``_rough_facts`` prices from) when renting is
        open, and no way to buy it (a unit price, sold in the country, a chassis for one of the
        GPUs-per-node counts tried) when buying is. Every shape would be dropped for want of a price
        (``_scored``) whatever its estimate: the GPU is dropped once, before the estimator, as the
        exclusions are."""
        d = self.d
        if d.mode in ("rent", "either") and self._allowed_offers(gpu):
            return False
        if d.mode in ("buy", "either") and self._buy_route(gpu):
            if shapes is not None:
                gpns = [gpn for gpn, _nodes in shapes]
            elif self.req.hardware and self.req.hardware.gpus_per_node:
                gpns = [min(self.req.hardware.gpus_per_node, gpu.max_per_node)]
            else:
                gpns = _gpn_options(gpu)
            if any(self._buyable_at(gpu, gpn) for gpn in gpns):
                return False
        return True

    def shape_unpriced(self, gpu: GPU, gpn: int, nodes: int) -> bool:
        """``unpriced`` for one shape: no offer the data policy allows holds ``gpn`` x ``nodes`` GPUs
        (``cost.instance_count``; an offer's RAM can only refuse more: ``cost.instance_ram_ok``) when renting
        is open, and it cannot be bought at ``gpn`` GPUs per node when buying is. Pricing would drop it
        whatever its estimate (``_scored``)."""
        d = self.d
        if d.mode in ("rent", "either"):
            count = gpn * nodes
            for inst, _usd_h in self._allowed_offers(gpu):
                if costmod.instance_count(inst, count, gpn) is not None:
                    return False
        return not (d.mode in ("buy", "either") and self._buy_route(gpu) and self._buyable_at(gpu, gpn))

    def _allowed_offers(self, gpu: GPU) -> tuple[tuple[CloudInstance, float], ...]:
        """``cost.allowed_offers`` of this GPU under the data policy, once per answer (what ``_rough_facts``
        prices from)."""
        offers = self.offers.get(gpu.id)
        if offers is None:
            offers = self.offers[gpu.id] = costmod.allowed_offers(self.cat, gpu.id, self.req, self.facts_key[0])
        return offers

    def _buy_route(self, gpu: GPU) -> bool:
        """A unit price and sold in the country: what ``_rough_facts`` needs besides a chassis to give a
        shape its capex."""
        return bool(self._unit_price(gpu)) and self._sold_here(gpu)

    def _unit_price(self, gpu: GPU) -> float | None:
        """The price of one GPU bought: used where the user takes used hardware (deployment.used_hardware) and
        the catalog has a used price, else new; None: it cannot be bought (not sold new -- catalog ``sold_new`` --
        and used hardware not asked for, or no price at all)."""
        gid = gpu.id
        if gid in self.unit_prices:  # (once per GPU: ``buy_new_usd`` is a property, and every shape priced asks)
            return self.unit_prices[gid]
        got = self.unit_prices[gid] = (gpu.price_used_usd if self.d.used_hardware and gpu.price_used_usd
                                       else gpu.buy_new_usd)
        return got

    def _sold_here(self, gpu: GPU) -> bool:
        """``market.can_buy`` in the deployment's country (no export rule, and sold there), once per GPU."""
        sold_here = self.sold_cache.get(gpu.id)
        if sold_here is None:
            # (per catalog: can_buy reads the catalog's rules alone, and the country)
            known: dict[tuple[str, str], bool] = self.cat.derived.setdefault(("can-buy",), {})
            key = (gpu.id, self.d.country)
            sold_here = known.get(key)
            if sold_here is None:
                sold_here = known[key] = market.can_buy(self.cat, self.d.country, gpu)
            self.sold_cache[gpu.id] = sold_here
        return sold_here

    def enumerate(self, scan: _Scanner) -> Enumerated:
        """Stage 1: every GPU x shape the search tries, sized by the estimator's fast path. With pruning
        the GPUs are searched largest memory first (so a GPU that fits nowhere proves it for the smaller
        ones of its fit class, ``_Scanner.no_fit_proved``); the candidates and drop counts are put
        together in catalog order, as the plain search makes them."""
        gpus = self.gpus()
        order = sorted(range(len(gpus)), key=lambda i: -gpus[i].memory_gib) if prune else range(len(gpus))
        parts: dict[int, tuple[list[Cand], _Tally]] = {}
        for i in order:
            sub = _Tally()
            parts[i] = (self._enumerate_gpu(scan, sub, gpus[i]), sub)
        t = _Tally()
        out: list[Cand] = []
        for i in range(len(gpus)):
            cands, sub = parts[i]
            out += cands
            for reason, n in sub.counts.items():
                t.drop(reason, n)
            t.considered += sub.considered
            t.fastest_miss = min(t.fastest_miss, sub.fastest_miss)
        return Enumerated(cands=tuple(out), dropped=t.frozen(), considered=t.considered, fastest_miss=t.fastest_miss)

    def _enumerate_gpu(self, scan: _Scanner, t: _Tally, gpu: GPU) -> list[Cand]:
        """``enumerate`` for one GPU type: its candidates, its drops and shapes tried booked in ``t``."""
        out: list[Cand] = []
        pinned = bool(self.req.hardware and self.req.hardware.gpu)
        # A GPU ruled out whole, before any shape of it is sized, counts as one build considered and one dropped:
        # the drops never outnumber the builds considered ("Considered 15 candidate builds; dropped: 50 ..." read
        # as nonsense when the GPU types were counted only among the drops).
        if not pinned:
            excluded = self.excluded(gpu)
            if excluded:
                t.considered += 1
                t.drop(excluded)
                return out
            if self.d.site == "desk" and gpu.form_factor in ("sxm", "oam"):
                t.considered += 1
                t.drop(DROP_SITE)
                return out
        shapes = self.shapes(gpu)
        if not pinned and self._no_price(("gpu", gpu.id), self.unpriced, gpu, shapes):
            t.considered += 1
            t.drop(DROP_PRICE)  # no shape of it could be rented or bought: not sized (like the exclusions above)
            return out
        if shapes is not None:
            for gpn, nodes in shapes:
                t.considered += 1
                c = self._try(scan, t, gpu, gpn, nodes, pinned=True)
                if c:
                    out.append(c)
            return out
        gpns = _gpn_options(gpu)
        if self.req.hardware and self.req.hardware.gpus_per_node:
            gpns = [min(self.req.hardware.gpus_per_node, gpu.max_per_node)]
        c = None
        for gpn in gpns:
            t.considered += 1
            c = self._try(scan, t, gpu, gpn, 1)
            if c:
                out.append(c)
        whole = c  # the fullest node (its shape, when it passed)
        # Scale out with full nodes: keep every shape that meets the deadline, and stop once a
        # shape also meets the tighter of (deadline, an owned build's time per run -- the month's
        # runs must fit in the month). Stopping at the deadline alone made the search depend on
        # it: a longer deadline stopped earlier and lost the bigger cluster that could be owned
        # (B4). Past that point more nodes only cost more (GPU-hours grow with the node count).
        # "fastest" goes one doubling further.
        if gpu.segment == "consumer" or self.d.site == "desk":
            return out
        gpn = gpns[-1]
        met_once = False
        # A rung ends the scale-out only if ``tight`` will not refuse it: its run inside the slack and the slow (P90)
        # end of its range inside the deadline, each after the wait of a rented run for provisioning and data
        # staging (``waits``; the longest of the GPU's offers: the one priced is not known yet). Judged on the run
        # alone, a 1.5-day deadline stopped 8 H100 nodes short and picked 80 H200s 16 % dearer than the 1-day
        # deadline's 128 H100s.
        wait = self._rent_wait_bound(gpu)
        prev: Quick | None = None
        least_gph = math.inf
        slack_h = self.stop_h * SLACK_FRAC

        def meets(q: Quick) -> bool:
            return not late(q.wall_hours, q.wall_hours_p90, wait, slack_h, self.stop_h)

        if (self.obj == "cheapest" and whole is not None and whole.q.fits and meets(whole.q)
                and scan.plain(gpu, whole.gpn, whole.gpn)):
            # The fullest node meets the deadline with a plan that gave up nothing for memory: more nodes run each
            # GPU no faster (estimate.plain_data_parallel): more GPU-hours a run, bought or rented (at no lower $/GPU-h:
            # several instances rent from the RDMA offers among the same ones), so none could be the cheapest pick.
            # (A node that had to recompute or shard can be beaten by two that do not: a 70B full fine-tune on 2x8
            # B200 is cheaper per run than on one node with full recompute.) The one exception is the offer's
            # staging time: the RDMA offer may stage the data faster than the lowest-rate one the node is priced on.
            return out

        i = 0
        batch = scan.global_batch()
        ladder = list(NODE_LADDER)
        while i < len(ladder):
            nodes = ladder[i]
            i += 1
            t.considered += 1
            c = self._try(scan, t, gpu, gpn, nodes, count_drops=False)
            q = c.q if c else None
            if c is not None and c.q.fits and batch is not None and c.q.replicas > batch:
                # More replicas than the global batch has samples: the plan would train with a
                # bigger batch than asked (a different run); more nodes only add replicas.
                t.drop(DROP_BATCH)
                break
            if c is not None and c.q.fits and batch is None and self.other_batch(c.q):
                # A defaulted batch grown past what such a run uses: more nodes only add replicas.
                t.drop(DROP_BATCH_GROWN)
                break
            if c is not None and c.q.fits and self.other_batch(c.q):
                t.drop(DROP_BATCH_SPLIT)  # as in _try; the next power of two up is a rung then: a power-of-two batch
                up = 1 << nodes.bit_length()  # (most are) splits evenly over power-of-two replicas
                if up <= MAX_NODES and up not in ladder:
                    bisect.insort(ladder, up, lo=i)
                continue
            if c and c.q.fits and c.q.wall_hours <= self.search_h:
                out.append(c)
                if self.obj != "fastest" and meets(c.q) and (met_once or self.obj == "cheapest"):
                    break
                met_once = met_once or meets(c.q)
            if q is not None and q.fits:
                least_gph = min(least_gph, q.gpu_hours)
                if prev is not None and prev.fits and q.wall_hours > 0.97 * prev.wall_hours:
                    break  # more nodes no longer help
                if q.gpu_hours > 2.0 * least_gph:
                    break  # scaling efficiency below 50 %: more nodes only burn money
                if self.obj != "fastest" and not met_once and math.isfinite(q.wall_hours):
                    # Scaling is at best linear: skip the node counts that cannot meet the slack.
                    need = nodes * q.wall_hours / slack_h * 0.95
                    while i < len(ladder) and ladder[i] < need:
                        i += 1
            prev = q
        return out

    def _rent_wait_bound(self, gpu: GPU) -> float:
        """The most a rented run on this GPU waits before it trains: ``overhead``'s hours on the allowed offer
        with the slowest front-end network (0 when the mode buys, or no offer allows it)."""
        w = self._w0
        if self.d.mode == "buy" or w is None:
            return 0.0
        gbps = self.stage_gbps.get(gpu.id)
        if gbps is None:  # (``overhead``'s hours fall as the staging network grows: the slowest one's are the most)
            gbps = self.stage_gbps[gpu.id] = memo.cached(
                self.cat, "stage_gbps", (gpu.id, self.facts_key[0]), lambda: slowest_staging(self._allowed_offers(gpu)))
        return self.wait_hours(gbps, w) if gbps > 0 else 0.0

    def enumerated(self, scan: _Scanner) -> Enumerated:
        """``enumerate``, kept per plan key on every other field it reads (the data and schedule
        sections, the site, the mode, the export / CUDA policy, the objective, the data policy and used
        hardware of ``unpriced``): an edit of the money
        fields (budget, horizon, electricity, ...) re-prices the same candidates."""
        memo_ = scan.enumerated
        if memo_ is None:
            return self.enumerate(scan)
        d = self.d
        # (facts_key: the data policy and used hardware ``unpriced`` reads)
        key = (self.obj, self.req.data, self.req.schedule, d.site, d.mode, d.country, d.require_cuda, prune,
               self.facts_key)
        got = memo_.get(key)
        if got is None:
            got = memo_[key] = self.enumerate(scan)
        return got

    def _try(self, scan: _Scanner, t: _Tally, gpu: GPU, gpn: int, nodes: int, pinned: bool = False,
             count_drops: bool = True) -> Cand | None:
        """The shape as a candidate, or None with the drop booked in ``t``. What decides it before the deadline --
        the site, the price, the fit, the host RAM, the batch (``_static``) -- reads no data, schedule or money
        field: kept per plan key (``scan.outcomes``), so an edit of those walks the shapes again without asking
        each of them again."""
        table = self._static_outcomes(scan)
        okey = (gpu.id, gpn, nodes, pinned, count_drops)
        got = table.get(okey) if table is not None else None
        q: Quick | None = None
        if got is None:
            got, q = self._static(scan, gpu, gpn, nodes, pinned, count_drops)
            if table is not None:
                table[okey] = got
        if got is not _PASSES:
            if got:
                t.drop(got)
            return None
        if q is None:  # (a shape that passed before: its plan is in the memo, requoted at this data size)
            q = scan.quick(gpu, gpn * nodes, gpn, timed=pinned)
        if pinned:
            return Cand.of(gpu, gpn, nodes, q)
        if q.wall_hours > self.search_h:
            t.fastest_miss = min(t.fastest_miss, q.wall_hours)
            if count_drops:
                t.drop(DROP_DEADLINE)
                return None
        return Cand.of(gpu, gpn, nodes, q)

    def _static_outcomes(self, scan: _Scanner) -> dict[tuple[str, int, int, bool, bool], str] | None:
        """``_try``'s table of ``_static`` outcomes, per plan key and every other field ``_static`` reads (the mode,
        ``facts_key``: the data policy, used hardware, country, site, pinned), or None when the memo is off."""
        last = self._outcomes
        if last is not None and last[0] is scan:
            return last[1]
        got = None
        if scan.outcomes is not None:
            key = (self.d.mode, self.facts_key, prune)
            got = scan.outcomes.get(key)
            if got is None:
                if len(scan.outcomes) >= ENUMERATED_MAX:
                    scan.outcomes.clear()
                got = scan.outcomes[key] = {}
        self._outcomes = (scan, got)
        return got

    def _static(self, scan: _Scanner, gpu: GPU, gpn: int, nodes: int, pinned: bool,
                count_drops: bool) -> tuple[str, Quick | None]:
        """What ``_try`` decides of a shape before its run time is read: ``_PASSES`` and the shape's Quick, or the
        drop (its reason; "" where the caller books none) and None."""
        booked = DROP_SITE if count_drops else ""
        if prune and not pinned and self.d.site == "desk" and not sysmod.chassis_options(self.cat, gpu, gpn, "desk"):
            # no desk chassis takes these GPUs: the drop below whatever the estimate, so none is made
            return booked, None
        if (count_drops and not pinned and self._no_price((gpu.id, gpn, nodes), self.shape_unpriced, gpu, gpn, nodes)
                and not (self.d.site == "desk" and not sysmod.chassis_options(self.cat, gpu, gpn, "desk"))):
            # no price the mode allows at this shape (a desk shape no desk chassis takes is the site's drop,
            # made below after the estimate when not pruned): dropped as pricing would, before the estimator
            return DROP_PRICE, None
        try:
            if prune and not pinned and scan.no_fit_proved(gpu, gpn * nodes, gpn):
                q = _NO_FIT  # a GPU of its fit class with more memory fits no layout here
            else:
                q = scan.quick(gpu, gpn * nodes, gpn, timed=pinned)  # a shape that does not fit is dropped unread
                scan.note_fit(gpu, gpn * nodes, gpn, q)
        except _NUMERIC_ERRORS:  # a numeric edge for one candidate must not sink the search
            return DROP_ERROR, None
        if pinned:
            return _PASSES, q
        if self.d.site == "desk" and not sysmod.chassis_options(self.cat, gpu, gpn, "desk"):
            return booked, None
        if not q.fits or (q.host_ram_gib and q.host_ram_gib * GB_PER_GIB > self.max_host_ram_gb(gpu, gpn)):
            # does not fit (or its CPU offload needs more host RAM than the platform takes)
            return DROP_FIT if count_drops else "", None
        if count_drops and self.other_batch(q):
            return DROP_BATCH_SPLIT if self.req.training.global_batch else DROP_BATCH_GROWN, None
        return _PASSES, q

    def other_batch(self, q: Quick) -> bool:
        """A step of the plan would train more than ``batch_cap`` even at a micro-batch of one
        (estimate._mb_cap_of): a stated global batch its replicas cannot split within BATCH_SLACK, or a
        defaulted one grown past what a run like this uses -- another run, not this one."""
        return self.batch_cap is not None and q.batch > self.batch_cap

    def max_host_ram_gb(self, gpu: GPU, gpn: int) -> float:
        """Most host RAM any chassis + CPU for these GPUs can hold (offload must fit in it)."""
        key = (gpu.form_factor, gpn)
        if key not in self.ram_cap:
            best = 0.0
            for ch in sysmod.chassis_options(self.cat, gpu, gpn, self.d.site):
                for cpu in self.cat.platforms.cpus:
                    if sysmod.cpu_fits_chassis(cpu, ch):
                        best = max(best, cpu.max_memory_gb * min(ch.sockets, cpu.max_sockets))
            # No catalog chassis: a generic dual-socket server (12 TB = 2 x EPYC 9004 maximum).
            self.ram_cap[key] = best if best > 0 else 12_288.0
        return self.ram_cap[key]

    # -- pricing --
    def storage_per_hour(self, w: sysmod.Workload) -> float:
        """The cloud volume for the data and checkpoints, $ per hour while a rented run lasts."""
        return sysmod.storage_needed_tb(w) * self.cat.fac("cloud_storage_usd_per_tb_month") / HOURS_PER_MONTH

    def price_rough(self, c: Cand, w: sysmod.Workload) -> Cand:
        """The candidate with its rent price (exact: the offer's rate) and a rough buy price (capex
        from the GPU share of a server), scored: ``_money`` of its ``_template``."""
        return self._money(self._template(c, w))

    def _template(self, c: Cand, w: sysmod.Workload) -> _Template:
        """What ``price_rough`` finds for ``c`` before the money fields (budget, horizon,
        electricity): the candidate with its rent price and rough capex (a money edit copies it once,
        ``_money``), the year's rent (the cheaper of on-demand and reservations) and the owning parts.
        The shape's part of it comes from its ``_shape_facts``."""
        shapes = self._shape_table(w)
        q = c.q
        key = (c.gpu.id, c.gpn, c.nodes, q.host_ram_gib)
        f = shapes.facts.get(key)
        if f is None:
            f = shapes.facts[key] = self._shape_facts(c, w)
        offer, capex, stem = f
        wall = q.wall_hours
        new: dict[str, Any] = {}
        rent_year: float | None = None
        if offer is not None:
            st_h = shapes.st_h
            rate, inst, n, over_h, egress, res_rate, spot_h, gpu_hour = offer
            # (max / min written as tests below: the builtins' calls cost more, and every candidate is priced)
            stored_h = wall if wall > 1.0 else 1.0  # max(wall, 1.0)
            # The cloud volume is paid while the run lasts, as in cost.cloud_options.
            rent_run = rate * (wall + over_h) + egress + st_h * stored_h
            # One reservation holds 8,760 h a year; the year's runs may need several.
            # ... plus what every run pays besides the instance: egress and the dataset's standing storage
            # (a reserved instance runs the setup and staging hours within its year).
            reservations = math.ceil(wall * self.rpy / HOURS_PER_YEAR)
            reserved_year = (res_rate * HOURS_PER_YEAR * (reservations if reservations > 1 else 1)
                             + (st_h * stored_h + egress) * self.rpy)
            on_demand_year = rent_run * self.rpy
            rent_year = reserved_year if reserved_year < on_demand_year else on_demand_year
            new = dict(
                rent_run=rent_run, overhead=rate * over_h + egress, rent_hours=over_h, rent_inst=inst, rent_n=n,
                rent_gpu_hour=gpu_hour,
                idle=inst.gpu_count * n - c.gpn * c.nodes,  # GPUs paid for but unused (smallest offer >= count)
                spot_run=(spot_h * n * wall * (1 + self.spot_over) if spot_h else None),
                reserved_year=reserved_year)
        if stem is not None:
            new["capex"] = capex
        return c, new, rent_year, stem

    def _money(self, t: _Template) -> Cand:
        """A ``_template`` priced over this answer's horizon, electricity and budget, scored: the search's
        candidate with the template's fields and the money's, in one copy."""
        c, fields, rent_year, stem = t
        rent_total = rent_year * self.y if rent_year is not None else None
        buy_total: float | None = None
        if stem is not None:
            buy_total = stem.total(self.rates.kwh, self.rates.residual_factor, self.y,
                                   costmod.busy_hours(self.req, c.q.gpu_hours, c.gpn * c.nodes))
        score, how, drop = self._scored(c.q.wall_hours, rent_total, buy_total, fields.get("capex", c.capex))
        if how is None:
            return c.but(fields, rent_total=rent_total, buy_total=buy_total, score=score, drop=drop)
        return c.but(fields, rent_total=rent_total, buy_total=buy_total, score=score, drop=drop, mode=how)

    def _templates(self, found: Enumerated, w: sysmod.Workload) -> list[_Template]:
        """``_template`` of every candidate of a search, kept in the workload's ``_shape_table`` per
        search (a money edit re-prices the same search: core.memo keeps it per plan key)."""
        shapes = self._shape_table(w)
        got = shapes.templates.get(id(found))
        if got is not None and got[0] is found:  # the entry holds the search: its id is not reused
            return got[1]
        out = [self._template(c, w) for c in found.cands]
        if len(shapes.templates) >= TEMPLATES_MAX:
            shapes.templates.clear()
        shapes.templates[id(found)] = (found, out)
        return out

    def _shape_table(self, w: sysmod.Workload) -> _Shapes:
        """The per-shape tables made for ``w``, kept per catalog on every requirement field
        ``_shape_facts`` and ``_sized_stem`` read -- ``facts_key`` (policy, used hardware, country,
        site, pinned), the workload (the dataset staged and stored, the weights sent out, what the
        system is sized for), the runs per year (the standing storage's share) and ``stem_key``
        (owning) -- so an edit of the budget, horizon or electricity reuses them all."""
        last = self._shapes
        if last is not None and last[0] is w:
            return last[1]
        tbl = self.shape_tables
        key = (self.facts_key, w, self.rpy, self.stem_key)
        got = tbl.find(key, memo.MISS) if tbl is not None else memo.MISS
        if got is memo.MISS:
            got = _Shapes(st_h=self.storage_per_hour(w), facts={}, sized={}, templates={})
            if tbl is not None:
                tbl.put(key, got)
        self._shapes = (w, got)
        return got  # type: ignore[no-any-return]

    def _shape_facts(self, c: Cand, w: sysmod.Workload) -> _ShapeFacts:
        """What ``price_rough`` reads for one shape besides its run time and the money fields: the
        cheapest offer (rate, offer, instances, overhead hours, egress $, reserved $/h, spot $/h, $ per
        GPU-hour),
        the rough capex and its owning parts (``PartsStem``); None where it is not rented / bought."""
        hit, capex = self._rough_facts(c)
        offer: tuple[float, CloudInstance, int, float, float, float, float | None, float] | None = None
        if hit:
            rate, inst, n = hit
            over_h, egress = self.overhead(inst, w)
            _inst, usd_h, spot_h, res_h = costmod.usd_rates(self.cat, inst)
            offer = (rate, inst, n, over_h, egress, (res_h or usd_h * (1 - self.r1)) * n, spot_h,
                     usd_h / inst.gpu_count)
        return offer, capex, (self._rough_stem(c, capex) if capex is not None else None)

    def _rough_facts(self, c: Cand) -> tuple[tuple[float, CloudInstance, int] | None, float | None]:
        """What price_rough reads besides the run time and the owning rates: the cheapest offer
        (rate, offer, instances) and the rough capex (None: not bought). Kept per catalog on the
        shape, the host RAM and every requirement field read (``facts_key``)."""
        key = (c.gpu.id, c.gpn, c.nodes, c.q.host_ram_gib, self.facts_key)
        got = self.facts.find(key, memo.MISS) if self.facts is not None else memo.MISS
        if got is memo.MISS:
            gpu, count = c.gpu, c.gpn * c.nodes
            # Only offers whose RAM holds the plan's CPU offload (per node) are priced (cost.instance_ram_ok).
            # (cost.cheapest_rate without its own memo: this table's key holds every field it reads)
            hit = costmod.cheapest_of(self._allowed_offers(gpu), count, c.gpn, host_ram_gib=c.q.host_ram_gib)
            unit = self._unit_price(gpu)
            capex: float | None = None
            # A pinned build is priced as asked (the export / market pitfalls then say why it is hard to buy).
            if unit and (self.pinned or (self._sold_here(gpu) and self._buyable(c))):
                # Epoch: GPUs are ~61 % of a GPU server's price (server_overhead_frac = non-GPU share).
                capex = unit * count / (1 - self.share)
            got = (hit, capex)
            if self.facts is not None:
                self.facts.put(key, got)
        return got  # type: ignore[no-any-return]

    def risky_rent(self, c: Cand) -> bool:
        """A rented multi-GPU build of cards without peer-to-peer or NVLink (GeForce 40/50 series):
        every all-reduce is staged through host memory, and on a rented host -- whose BIOS, IOMMU /
        ACS settings and driver are not the renter's to change -- an NCCL hang cannot be fixed
        (pitfall consumer-no-p2p). The estimate already counts the slower all-reduce; the hang is
        the risk the price does not show."""
        g = c.gpu  # (the GPU's part first: most cards have P2P, and the pricing asks for every candidate)
        return not g.p2p and g.nvlink_gbps <= 0 and c.rent_total is not None and c.count >= 2

    def drop_risky_rent(self, cands: list[Cand]) -> list[Cand]:
        """When one GPU does the run with slack against the deadline, a ``risky_rent`` build is not
        rented (it may still be bought: on an owned box the P2P settings are the owner's). When no
        single GPU suffices, it stays, and the pitfall says what to set."""
        if not any(c.count == 1 and math.isfinite(c.score) and not self.tight(c) for c in cands):
            return cands
        out: list[Cand] = []
        for c in cands:
            if self.risky_rent(c):
                c = self._score(c.but(rent_run=None, rent_total=None, reserved_year=None, spot_run=None,
                                        rent_inst=None))
                if math.isinf(c.score):  # renting was its way; buying is not (budget, price, capacity)
                    c = c.but(drop=DROP_NO_P2P)
            out.append(c)
        return out

    def _buyable(self, c: Cand) -> bool:
        """A chassis one can buy takes these GPUs (system.chassis_fits: cooling, baseboards, site)."""
        return self._buyable_at(c.gpu, c.gpn)

    def _buyable_at(self, gpu: GPU, gpn: int) -> bool:
        got = self.buyable_cache.get((gpu.id, gpn))
        if got is None:
            # (per catalog: chassis_options reads the catalog alone, and the site)
            known: dict[tuple[str, int, str], bool] = self.cat.derived.setdefault(("buyable",), {})
            key = (gpu.id, gpn, self.d.site)
            got = known.get(key)
            if got is None:
                got = known[key] = bool(sysmod.chassis_options(self.cat, gpu, gpn, self.d.site))
            self.buyable_cache[(gpu.id, gpn)] = got
        return got

    def _rough_stem(self, c: Cand, capex: float) -> costmod.PartsStem:
        """The owning parts of the candidate's footprint before the system is sized (cost.onprem_parts;
        power per system.py's rules: HGX 1.82x GPU TDP, PCIe GPUs + ~600 W of platform), from which
        ``price_rough`` takes the horizon cost of owning: the ``PartsStem`` (no electricity price, no
        horizon), kept per catalog on the shape, the capex and ``stem_key``, so a candidate seen
        before builds no footprint."""
        key = (c.gpu.id, c.gpn, c.nodes, capex, self.stem_key)
        stem = self.rough_stems.find(key, memo.MISS) if self.rough_stems is not None else memo.MISS
        if stem is memo.MISS:
            hgx = c.gpu.form_factor in ("sxm", "oam")
            gpu_w = c.gpn * c.gpu.tdp_w
            max_w = gpu_w * sysmod.CHIP_TO_SERVER_HGX if hgx else gpu_w + 600.0
            sustained = max_w * sysmod.TRAIN_LOAD_FRAC if hgx else gpu_w + 420.0
            fp = costmod.Footprint.make(c.nodes, c.gpn, max_w, sustained,
                                        hgx or c.nodes > 1 or c.gpn > 4 or c.gpu.cooling == "passive")
            stem = self.rates.stem(fp, capex)
            if self.rough_stems is not None:
                self.rough_stems.put(key, stem)
        return stem  # type: ignore[no-any-return]

    def _score(self, c: Cand) -> Cand:
        """The candidate with its score (the cheaper allowed way over the horizon) and mode, or no
        score and the reason (budget, capacity, price)."""
        score, how, drop = self._scored(c.q.wall_hours, c.rent_total, c.buy_total, c.capex)
        if how is None:
            return c.but(score=score, drop=drop)
        return c.but(score=score, mode=how, drop=drop)

    def _scored(self, wall: float, rent_total: float | None, buy_total: float | None,
                capex: float | None) -> tuple[float, str | None, str | None]:
        """(score, mode, drop) of ``_score``: mode None when there is no score (the drop says why)."""
        budget = self.d.budget_usd
        mode = self.d.mode
        # An owned build must fit the month's runs into the month; renting can run them in parallel.
        keeps_up = wall * self.runs_pm <= HOURS_PER_MONTH
        # (one allowed way: that way; both: the cheaper, ``min`` of (cost, mode) as over a list of the two)
        rent = (rent_total if mode != "buy" and rent_total is not None  # (mode rent or either)
                and (budget is None or rent_total / self.y <= budget) else None)
        if (mode != "rent" and buy_total is not None and keeps_up  # (mode buy or either)
                and (budget is None or (capex or 0) <= budget)):
            # With the choice open, buying must be clearly cheaper to win (cost.BUY_MARGIN, the
            # verdict's own rule), so the ranking and the verdict agree.
            buy = buy_total / costmod.BUY_MARGIN if mode == "either" else buy_total
            if rent is None:
                return buy, "buy", None
            score, how = min((rent, "rent"), (buy, "buy"))
            return score, how, None
        if rent is not None:
            return rent, "rent", None
        can_rent = mode in ("rent", "either") and rent_total is not None
        can_buy = mode in ("buy", "either") and buy_total is not None
        if can_rent or (can_buy and keeps_up):
            why = DROP_BUDGET  # a price exists and the schedule works: the budget stops it
        elif can_buy:
            why = DROP_CAPACITY
        else:
            why = DROP_PRICE
        return math.inf, None, why

    def exact(self, c: Cand, w: sysmod.Workload) -> Cand:
        """Replace the rough buy cost with the sized system's TCO (its real bill of materials). Over
        the budget, the lean tier (lean chassis, no bulk HDD / ingest NIC, RAM at its floor), then
        used GPUs where the catalog has a used price, are tried before the build is given up."""
        if c.exact:
            return c
        if c.capex is None:
            return c.but(exact=True)
        build, stem = self._sized_stem(c, w, False, None)
        budget = self.d.budget_usd
        # The lean tier saves the platform extras (a few $k at most), used GPUs their price gap:
        # try each only when it could close the gap to the budget.
        if budget is not None and budget < build.capex_usd <= LEAN_REACH * budget and c.nodes == 1:
            lean = self._sized_stem(c, w, True, None)
            if lean[0].capex_usd < build.capex_usd:
                build, stem = lean
            gap = (c.gpu.buy_new_usd or 0) - (c.gpu.price_used_usd or 0)
            if build.capex_usd > budget and c.gpu.price_used_usd and not self.d.used_hardware \
                    and gap * c.count >= build.capex_usd - budget:
                used = self._sized_stem(c, w, True, True)
                if used[0].capex_usd < build.capex_usd:
                    build, stem = used
        busy = costmod.busy_hours(self.req, c.q.gpu_hours, c.count)
        buy_total = stem.total(self.rates.kwh, self.rates.residual_factor, self.y, busy)
        score, how, drop = self._scored(c.q.wall_hours, c.rent_total, buy_total, build.capex_usd)  # as _score
        if how is None:
            return c.but(exact=True, capex=build.capex_usd, buy_total=buy_total, build=build, score=score, drop=drop)
        return c.but(exact=True, capex=build.capex_usd, buy_total=buy_total, build=build, score=score, drop=drop,
                     mode=how)

    def _sized_stem(self, c: Cand, w: sysmod.Workload, lean: bool,
                    used: bool | None) -> tuple[sysmod.Sizing, costmod.PartsStem]:
        """The system sized for ``c`` (system.size_system, on the tier asked) and its owning parts
        (cost.onprem_parts' ``PartsStem``), kept in the workload's ``_shape_table``: its numbers
        alone (system.size_cost), as ranking reads them; the answer sizes what it shows (``_sized``)."""
        shapes = self._shape_table(w)
        key = (c.gpu.id, c.gpn, c.nodes, c.q.host_ram_gib, lean, used)
        got = shapes.sized.get(key)
        if got is None:
            # Size with the candidate's own CPU offload (the fast path's pinned host RAM): the workload
            # before any estimate has none, so an offload build was ranked with the RAM of a build without
            # it, and the answer's price (sized from the full estimate) came out dearer than the price it
            # was ranked on -- a pick dominated on its own Pareto front.
            ws = w
            if c.q.host_ram_gib > w.host_ram_gib:
                ws = dataclasses.replace(w, host_ram_gib=c.q.host_ram_gib,
                                         offload=w.offload if w.offload != "none" else "optimizer")
            build = sysmod.size_cost(self.req, self.cat, c.gpu, c.gpn, c.nodes, ws, lean=lean, used=used)
            got = shapes.sized[key] = (build, self.rates.stem(costmod.Footprint.of(build), build.capex_usd))
        return got

    def tight(self, c: Cand, owned: bool = False) -> bool:
        """The run ends after SLACK_FRAC of the deadline (or of the assumed turnaround), or the slow
        (P90) end of its cross-validated time range misses the deadline itself: a pick an expert signs
        finishes in time even when the estimate errs the way published runs did. A rented run ends its
        provisioning and data staging (``rent_hours``) later: a 10.7 h run that first stages 20 TB for
        9.4 h does not make a 14.4 h deadline. ``owned``: ``c`` as the build to own (its data on its own disks),
        whatever its cheaper way."""
        return late(c.q.wall_hours, c.q.wall_hours_p90, 0.0 if owned else self.waits(c), self.slack_h,
                     self.deadline_h)

    @staticmethod
    def waits(c: Cand) -> float:
        """Hours a run of ``c`` spends before it trains: a rented one's provisioning and data staging
        (``rent_hours``), none for a build ranked owned."""
        return c.rent_hours if c.mode == "rent" else 0.0

    def to_result(self, c: Cand) -> float:
        """Hours from the start of a run to its result (the run's and ``waits``)."""
        return c.q.wall_hours + self.waits(c)

    @staticmethod
    def _waits_said(c: Cand) -> str:
        """What a deadline binding adds when it counted ``waits`` ("" when there were none)."""
        h = _Recommender.waits(c)
        return _(" (incl. {h:,.1f} h of provisioning and data staging)").format(h=h) if h > 0 else ""

    def effective(self, c: Cand) -> float:
        """The cost the cheapest objective compares: horizon cost (``score``), with the non-CUDA
        software-stack handicap -- porting kernels such as FlashAttention and fused optimizers, less
        mature distributed training (SemiAnalysis, "MI300X vs H100 vs H200 Benchmark Part 1:
        Training", Dec 2024, found MI300X training far below its paper advantage). A judgement,
        stated in the rocm-caveats pitfall."""
        return c.score * self._stack(c)

    def needs_circuit(self, c: Cand) -> bool:
        """``c``, sized, is a box for the desk that draws more than one office circuit of the country
        carries (system.office_circuit): it needs a dedicated circuit put in first (pitfall
        wall-circuit). False while unsized: the least it can be, as the proofs in ``rank`` read it."""
        return c.build is not None and c.nodes == 1 and c.build.power_w > self.circuit_w

    def off_site(self, c: Cand) -> float:
        """1.0 for a build bought for the desk that needs a dedicated circuit (``needs_circuit``): it
        ranks after every build that the site takes as it is, at the same deadline tier (``key``). A
        judgement: an electrician's visit is a one-off, a run that misses its deadline is not, so the
        deadline comes first; a rented build does not stand at the desk."""
        return 1.0 if c.mode == "buy" and self.needs_circuit(c) else 0.0

    def key(self, c: Cand) -> tuple[float, ...]:
        """Order of the ranked list (alternatives); the winner is ``pick``. Kept per candidate for the
        answer (a candidate is frozen; the ranking and its proofs ask for the same keys many times)."""
        hit = self.keys.get(c)
        if hit is not None:
            return hit
        if self.obj == "cheapest":
            # (tight, off_site and effective inlined: the ranking and its proofs make a few hundred keys
            # an answer; tests/core/test_rank_proofs checks them against the three rules)
            q, b = c.q, c.build
            wall = q.wall_hours
            k: tuple[float, ...] = (
                float(late(wall, q.wall_hours_p90, self.waits(c), self.slack_h, self.deadline_h)) + self.oom_risk(c),
                1.0 if c.mode == "buy" and b is not None and c.nodes == 1 and b.power_w > self.circuit_w else 0.0,
                c.score * (1.0 if c.gpu.vendor == "nvidia" else _NON_CUDA_STACK), wall)
        elif self.obj == "fastest":
            # (a rented run's staging included; runs inside FASTEST_TIE_H are equally fast: cost decides)
            k = (self.oom_risk(c), self.off_site(c), _sig(max(self.to_result(c), FASTEST_TIE_H)), c.score)
        else:  # perf-per-watt
            k = (float(self.tight(c)) + self.oom_risk(c), self.off_site(c), _sig(c.energy_kwh), c.score)
        self.keys[c] = k
        return k

    def pick(self, ranked: list[Cand]) -> Cand:
        """The winner of a list sorted by ``key``. Cheapest: the simplest build -- fewest GPUs, then
        fewest nodes, then a clearly (CLEARLY_FASTER) faster one -- among those within
        SIMPLICITY_TOLERANCE of the lowest effective cost (a multi-GPU job costs engineering time the
        price does not show, so 1 GPU at $104 beats 8 at $100); where that tie holds a build that fits only
        inside the memory headroom asked, among the builds that keep it within ROOMY_TOLERANCE. Only a
        near-tie breaker: the pick never costs more than (1 + PICK_BAND) x the cheapest, so a longer
        deadline -- which only adds candidates -- never makes the pick dearer than the shorter deadline's
        pick by more than that (tests/robustness)."""
        if self.obj != "cheapest" or not ranked:
            return ranked[0]
        first = self.key(ranked[0])
        tier, bound = first[:2], first[2] * (1 + SIMPLICITY_TOLERANCE)  # (a cheapest key's [2]: ``effective``)
        key = self.key
        near = [c for c in ranked if (k := key(c))[:2] == tier and k[2] <= bound]
        if not all(map(self.roomy, near)):  # a near tie with a build inside the headroom: ROOMY_TOLERANCE
            wide = first[2] * (1 + ROOMY_TOLERANCE)
            near = [c for c in ranked if (k := key(c))[:2] == tier and k[2] <= wide and self.roomy(c)] or near
        simple = min(near, key=lambda c: (c.count, c.nodes, self.effective(c), c.q.wall_hours))
        # Value of time: an equally simple build within the tolerance that is clearly faster wins
        # (1.7x faster for 1 % more is what an expert buys; the price gap is inside the estimate's error).
        peers = [c for c in near if (c.count, c.nodes) == (simple.count, simple.nodes)]
        fast = min(peers, key=lambda c: (c.q.wall_hours, self.effective(c)))
        return fast if fast.q.wall_hours * CLEARLY_FASTER <= simple.q.wall_hours else simple

    @staticmethod
    def oom_risk(c: Cand) -> float:
        """1.0 when the P90 end of the plan's memory range (the cross-validated error of measured runs like it) is
        above the card and the plan has nothing lighter to fall back on (``Quick.mem_p90``: micro-batch 1, full
        recompute, one GPU or ZeRO-3): an estimate that errs as published measurements did runs out of memory. Such
        a build ranks after the builds whose range fits (``key``, ``_own_order``), as a run that may end past the
        deadline does (``tight``): an expert does not sign a build that may not start (an SDXL full fine-tune at
        44 GiB on a 48 GiB card, P90 55 GiB, 12 % cheaper than a 96 GiB card). 0.0 otherwise."""
        p90 = c.q.mem_p90
        return 1.0 if p90 is not None and p90 > c.gpu.memory_gib else 0.0

    def roomy(self, c: Cand) -> bool:
        """The plan keeps the memory headroom asked (deployment.headroom), not only the tighter one."""
        return c.q.per_gpu_gib <= c.gpu.memory_gib * (1.0 - self.d.headroom) + 1e-9

    def per_run(self, c: Cand) -> float:
        if c.mode == "rent" and c.rent_run is not None:
            if c.reserved_year is not None and c.reserved_year < c.rent_run * self.rpy:
                return c.reserved_year / self.rpy
            return c.rent_run
        total = c.buy_total if (c.mode == "buy" and c.buy_total is not None) else c.score
        return total / max(self.rpy * self.y, 1e-9)

    def workload0(self, scan: _Scanner) -> sysmod.Workload:
        """Sizing inputs before any estimate: the resolved model's parameters when the fast path has them
        (a preset has no params_b in the requirements; 1B would under-size checkpoints and storage)."""
        w = sysmod.workload_from(self.req, self.cat, None)
        model = getattr(scan.ctx, "model", None)
        total = getattr(model, "params_total", None)
        if total:
            trainable = getattr(scan.ctx, "p_trainable", None) or total
            w = dataclasses.replace(w, params_total=float(total), params_trainable=float(trainable))
        return w

    # -- main --
    def run(self) -> Recommendation:
        """enumerate (+ size by the fast path) -> price -> rank (exact sizing of the shortlist) ->
        explain; suggest when nothing fits. Each stage takes and returns typed, frozen values."""
        scan = _Scanner(self.req, self.cat)
        if scan.ctx is not None and not scan.ctx.total_units:  # e.g. only data.tokens for an image model
            what = (_("data.tokens, data.samples or data.dataset_gb") if scan.ctx.model.is_token_model
                    else _("data.samples, or data.dataset_gb with data.sample_kb "
                           "(an image/audio model counts samples)"))
            raise GpuwizError("data: " + _("no data size this model can use (set {what}): a recommendation needs the "
                                           "time per run").format(what=what),
                              fields=(("data.tokens", "data.samples", "data.dataset_gb")
                                      if scan.ctx.model.is_token_model
                                      else ("data.samples", "data.dataset_gb", "data.sample_kb")),
                              reason=(_("needed: a data size this model can use (tokens, samples or dataset size)")
                                      if scan.ctx.model.is_token_model else
                                      _("needed: this model counts samples "
                                        "(give samples, or dataset and sample size)")))
        priced, ranked = self.search(scan)
        if ranked is not None:
            return self.explain(scan, ranked)
        return self.nothing(scan, self._sized_out(priced) if priced.ok else priced)

    def search(self, scan: _Scanner) -> tuple[Priced, Ranked | None]:
        """The stages before the answer: enumerate, price, rank (None: no build left once sized)."""
        if scan.ctx is not None:
            self.batch_cap = scan.ctx.batch_most
        w0 = self._w0 = self.workload0(scan)
        found = self._found = self.enumerated(scan)
        priced = self.price(found, w0)
        return priced, (self.rank(priced, w0) if priced.ok else None)

    def _sized_out(self, priced: Priced) -> Priced:
        """``priced`` when ``rank`` found every build it sized over the budget: the builds the rough price had
        let through, with their real bill of materials, counted as the filter counts them (over budget), so
        the binding constraint (``binding``: the lean tier's box of each) quotes the cheapest real build and the
        tallies hold every build (a $4,570 RTX 4090 box was missing beside a $4,970 RTX 5090 one)."""
        assert self._w0 is not None  # (``search`` ran)
        t = _Tally(priced.dropped)
        over = list(priced.over_budget)
        for c in priced.ok:
            s = self.exact(c, self._w0)
            if math.isinf(s.score):
                t.drop(s.drop or DROP_PRICE)
                if s.drop == DROP_BUDGET:
                    over.append(s)
        return Priced(ok=(), over_budget=tuple(over), dropped=t.frozen(), considered=priced.considered,
                      fastest_miss=priced.fastest_miss)

    def price(self, found: Enumerated, w0: sysmod.Workload) -> Priced:
        """Stage 2: rent and rough buy prices for every candidate; the ones the rough price puts
        within reach of the budget get their real bill of materials (and the lean / used tiers);
        then the filters (budget, policy, a rented no-P2P pair when one GPU suffices)."""
        pinned = bool(self.req.hardware and self.req.hardware.gpu)
        cands: list[Cand] = []
        for tmpl in self._templates(found, w0):
            c = self._money(tmpl)
            # The budget filter uses the real bill of materials (and the lean / used tiers) for every
            # build the rough price puts within reach (it is off by well under 2x either way).
            if c.drop == DROP_BUDGET and c.capex is not None and self.d.budget_usd is not None \
                    and c.nodes == 1 and c.capex <= ROUGH_REACH * self.d.budget_usd:
                c = self.exact(c, w0)
            cands.append(c)
        if not pinned and self.obj != "fastest":
            cands = self.drop_risky_rent(cands)
        t = _Tally(found.dropped)
        ok: list[Cand] = []
        over: list[Cand] = []
        if pinned:
            ok = cands
        else:
            for c in cands:
                if math.isinf(c.score):
                    t.drop(c.drop or DROP_PRICE)
                    if c.drop == DROP_BUDGET:
                        over.append(c)
                elif c.gpu.segment == "consumer" and c.nodes > 1:
                    t.drop(DROP_CONSUMER_MULTI)
                else:
                    ok.append(c)
        return Priced(ok=tuple(ok), over_budget=tuple(over), dropped=t.frozen(), considered=found.considered,
                      fastest_miss=found.fastest_miss)

    def rank(self, priced: Priced, w0: sysmod.Workload) -> Ranked | None:
        """Stage 3: the top few and the best few shapes of each GPU type (another node count or gpn
        of the same GPU can be cheaper once its real bill of materials is known) get an exact price;
        the winner (``pick``) first. None when no exact-priced build is left (over budget)."""
        pinned = bool(self.req.hardware and self.req.hardware.gpu)
        ok = sorted(priced.ok, key=self.key)
        per_type: dict[str, list[Cand]] = {}
        for c in ok:
            per_type.setdefault(c.gpu.id, []).append(c)
        top = ok[:EXACT_TOP]
        seen = set(top)  # (a Cand hashes by identity)
        # A type's further shapes only when their rough cost -- the ranked one, or owning it (the
        # build to own beside a rented pick) -- is near the best (they could win once sized); the
        # best shape of every type is sized (the alternatives list one per type), and its fastest
        # when that is faster than the top few (the fast end of the Pareto front).
        near = SHAPE_REACH * min((c.score for c in ok), default=math.inf)
        near_buy = SHAPE_REACH * min((c.buy_total for c in ok if c.buy_total is not None), default=math.inf)
        picked = list(top)
        quickest = min((c.q.wall_hours for c in top), default=math.inf)
        for cs in per_type.values():
            fastest = min(cs, key=lambda c: c.q.wall_hours)  # the type's end of the time / cost front
            if fastest.q.wall_hours >= quickest:
                fastest = cs[0]  # no faster than the top few: it cannot extend the front's fast end
            for i, c in enumerate(cs):
                if c in seen:
                    continue
                if c is fastest or (i < SHAPES_PER_TYPE and (
                        i == 0 or c.score <= near or (c.buy_total is not None and c.buy_total <= near_buy))):
                    picked.append(c)
                    seen.add(c)
        # A rented candidate whose sizing provably leaves its score and mode alone (``_rent_stays``) is
        # sized only if it is the pick or could be the build to own (``_best_buy``): unsized, it ranks,
        # lists and sits on the Pareto front exactly as sized (all read its rent price alone).
        lazy = [c for c in picked if prune and self._rent_stays(c)]
        lazy_set = set(lazy)
        # A build only to own (no rent offer) that, even at its owning floor, is neither the pick, nor an
        # alternative, nor the build to own, nor on the Pareto front (``_owned_irrelevant``), is not sized
        # and not shortlisted: sized, it would change nothing the answer shows.
        held = [c for c in picked if prune and not pinned and self._may_hold(c)]
        held_set = set(held)
        sized = {c: self.exact(c, w0) for c in picked if c not in lazy_set and c not in held_set}
        settled = False  # every held build left unsized is proved irrelevant (``_settle_owned``)
        while True:
            shortlist = [sized.get(c, c) for c in picked if c not in held_set or c in sized]
            shortlist = [c for c in shortlist if pinned or not math.isinf(c.score)]
            if not shortlist and not any(c not in sized for c in held):
                return None
            shortlist.sort(key=self.key)
            win = self.pick(shortlist) if shortlist else None
            if settled:
                break
            waiting = [c for c in held if c not in sized]
            shown: list[Cand] = []
            if waiting and win is not None:
                final = [sized.get(c, c) for c in priced.ok if c not in held_set or c in sized]
                irrelevant = self._owned_irrelevant(win, shortlist, final)
                waiting = [c for c in waiting if not irrelevant(c)]
                shown = [c for c in waiting if not irrelevant(c, False)]  # ... whoever the build to own is
                if waiting and not shown:  # each could only be the build to own: one round settles them
                    settled = self._settle_owned(waiting, shortlist, sized, w0)
                    continue  # the shortlist and the pick with the ones it sized (unchanged when settled)
            if not waiting:
                break
            # size those now; else, of the ones that could only be the build to own, the one cheapest to
            # own (it may be it, which proves the others); then the shortlist, the pick and the proofs again
            for c in shown or [min(waiting, key=lambda c: self._buy_floor(c)[1])]:
                sized[c] = self.exact(c, w0)
        assert win is not None
        if lazy:
            # sizing keeps each lazy one's key (same score, mode, run time): the order and the pick stand
            if win in lazy_set:
                sized[win] = self.exact(win, w0)
                win = sized[win]
            best = self._best_buy([sized.get(c, c) for c in shortlist])
            border = self._buy_order(best)
            for c in lazy:
                if c not in sized and not self._beaten(c, border):  # (``_not_best_buy``)
                    sized[c] = self.exact(c, w0)
            shortlist = [sized.get(c, c) for c in shortlist]
        every = tuple(sized.get(c, c) for c in priced.ok)
        shortlist.remove(win)
        return Ranked(shortlist=(win, *shortlist), priced=every, search=priced)

    def _settle_owned(self, waiting: list[Cand], shortlist: list[Cand], sized: dict[Cand, Cand],
                      w0: sysmod.Workload) -> bool:
        """``rank``'s rounds for held builds that could each only be the build to own (``_owned_irrelevant``
        proves all else of them), in one pass: size the one cheapest to own (as a round does), keep the
        build to own (``_best_buy``) up to date and drop the ones it now proves, until none is left. A
        build sized here ranks behind the first of the sorted ``shortlist`` and outside the pick's band
        (checked: then the first, the pick and the band stand), and it only adds to the ranked keys and the
        Pareto points, so every other proof of a round stands and only the build to own moves. True when
        settled; False (a round's full proofs are due: the caller's loop) when a sized build breaks that
        check or ties the build to own (the order of the shortlist would decide). ``sized`` gains each
        build sized."""
        first = self.key(shortlist[0])[:3]
        band = self.effective(shortlist[0]) * (1 + PICK_BAND)
        best = self._best_buy(shortlist)

        def order(b: Cand) -> tuple[float, ...]:  # _best_buy's order
            assert b.buy_total is not None
            return (*self._own_order(b, b.buy_total), b.q.wall_hours)

        # by floor, once (stable: the first is ``min``'s choice of each round, as in the caller's rounds)
        pending = sorted(waiting, key=lambda c: self._buy_floor(c)[1])
        while pending:
            c = pending[0]
            s = sized[c] = self.exact(c, w0)
            if not math.isinf(s.score):  # it joins the shortlist
                if not self._outranks(self.key(s)[:3], first, band):
                    return False
                if self._best_buy([s]) is s:
                    if best is None or order(s) < order(best):
                        best = s
                    elif order(s) == order(best):
                        return False
            border = self._buy_order(best)
            pending = [d for d in pending[1:] if not self._beaten(d, border)]
        return True

    def _buy_floor(self, c: Cand) -> tuple[float, float]:
        """(capex, horizon cost of owning) that ``exact`` cannot go below for ``c``: the GPUs alone at
        their cheapest price (new or used: the lean / used tiers), every other BOM line and the power
        and space at nothing, on either footprint kind (rack or not: the sized chassis decides). Owning
        costs rise with the capex (residual and maintenance are shares of it) and with the power."""
        key = (c.gpu.id, c.gpn, c.nodes)
        got = self.floors.get(key)
        if got is None:
            # The floor's PartsStem per footprint kind (no $/kWh, no horizon), kept per catalog on the
            # shape and ``stem_key``; PartsStem.total is OnPremParts.total to the bit (tests/core/test_price_tables).
            skey = (*key, self.stem_key)
            stems = self.floor_stems.find(skey, memo.MISS) if self.floor_stems is not None else memo.MISS
            if stems is memo.MISS:
                prices = [p for p in (c.gpu.buy_new_usd, c.gpu.price_used_usd) if p]
                capex = max(0.0, min(prices) * c.count - 0.01) if prices else 0.0  # capex is rounded to cents
                stems = (capex, tuple(self.rates.stem(costmod.Footprint.make(c.nodes, c.gpn, 0.0, 0.0, rack), capex)
                                      for rack in (False, True)))
                if self.floor_stems is not None:
                    self.floor_stems.put(skey, stems)
            capex, (off_rack, in_rack) = stems
            kwh, rf, y = self.rates.kwh, self.rates.residual_factor, self.y
            a, b = off_rack.total(kwh, rf, y, 0.0), in_rack.total(kwh, rf, y, 0.0)
            got = self.floors[key] = (capex, b if b < a else a)  # (the lesser, as min() of the two)
        return got

    def _may_hold(self, c: Cand) -> bool:
        """``c`` is ranked on owning alone (no rent price), under the cheapest objective: its sized score
        is at least its owning floor (``_buy_floor``), which ``_owned_irrelevant`` weighs."""
        return (self.obj == "cheapest" and not c.exact and c.capex is not None and c.rent_total is None
                and c.rent_run is None and c.mode == "buy" and self.d.mode in ("buy", "either"))

    def _owned_irrelevant(self, win: Cand, shortlist: list[Cand], final: list[Cand]) -> Callable[..., bool]:
        """A test of whether ``c`` (``_may_hold``), sized, would change nothing the answer shows, whatever
        its real price at or above its floor: it ranks behind the first of the sorted ``shortlist`` and
        outside the pick's near-tie band (``pick``); behind ``N_ALTERNATIVES`` other GPU types, or behind
        a shape of its own type, or is of the pick's type (``alternatives``); it is not the build to own
        (``_not_best_buy``; not asked with ``buy`` False); and it is off the Pareto front, a point of
        ``final`` (the priced candidates as they stand, the pick aside) being faster and no dearer per
        run (``pareto``)."""
        first = self.key(shortlist[0])[:3]
        band = self.effective(shortlist[0]) * (1 + PICK_BAND)
        # The GPU types ranked before a key: the shortlist's keys in order, each type's first place in
        # it, and how many types other than the pick's the first i places hold.
        keyed = sorted((self.key(x)[:3], x.gpu.id) for x in shortlist)
        keys = [k for k, _gid in keyed]
        first_at: dict[str, int] = {}
        others = [0]
        for i, (_k, gid) in enumerate(keyed):
            new = gid not in first_at
            if new:
                first_at[gid] = i
            others.append(others[-1] + (new and gid != win.gpu.id))
        best = self._best_buy(shortlist)
        border = self._buy_order(best)
        point, isinf = self._point, math.isinf
        pts = sorted([point(p) for p in final if p is not win and not isinf(p.score) and self._frontable(p)])
        walls = [w for w, _run in pts]
        least: list[float] = []  # the lowest cost per run up to each point (by run time)
        for _w, run in pts:
            least.append(min(run, least[-1]) if least else run)
        years_runs = max(self.rpy * self.y, 1e-9)

        shown: dict[Cand, bool] = {}  # the tests but the build to own's, per candidate

        def irrelevant(c: Cand, buy: bool = True) -> bool:
            hit = shown.get(c)
            if hit is None:
                hit = shown[c] = unseen(c)
            return hit and (not buy or self._beaten(c, border))  # (``_not_best_buy``)

        def unseen(c: Cand) -> bool:
            floor = self._buy_floor(c)[1] * (1 - 1e-9)
            score = floor / costmod.BUY_MARGIN if self.d.mode == "either" else floor
            # the least its key (``key``) can be: unsized, it may still fit the site as it is
            low = (float(self.tight(c)) + self.oom_risk(c), 0.0, score * self._stack(c))
            if not self._outranks(low, first, band):
                return False
            if c.gpu.id != win.gpu.id:
                n = bisect.bisect_left(keys, low)  # the shortlist's places with a key below ``low``
                if first_at.get(c.gpu.id, n) >= n and others[n] < N_ALTERNATIVES:
                    return False
            i = bisect.bisect_left(walls, round(c.q.wall_hours, 3))  # the points strictly faster
            return i > 0 and least[i - 1] <= round(floor / years_runs, 2)

        return irrelevant

    def _point(self, c: Cand) -> tuple[float, float]:
        """(run time, cost per run) of ``c`` as ``pareto`` rounds them, kept per candidate value."""
        hit = self.points.get(c)
        if hit is None:
            hit = self.points[c] = (round(c.q.wall_hours, 3), round(self.per_run(c), 2))
        return hit

    def _rent_stays(self, c: Cand) -> bool:
        """``exact(c)`` provably keeps ``c``'s score, mode and drop: it is ranked on its rent price and
        owning it cannot win (``_buy_floor`` over the buy margin is above that price), or only renting
        is allowed. Sizing then changes only its buy-side fields (capex, buy_total, build)."""
        if c.exact or c.capex is None or c.mode != "rent" or c.rent_total is None or c.drop is not None \
                or not math.isfinite(c.score) or c.score != c.rent_total:
            return False
        if self.d.mode == "rent":
            return True
        return self.d.mode == "either" and self._buy_floor(c)[1] * (1 - 1e-9) / costmod.BUY_MARGIN > c.rent_total

    def _not_best_buy(self, c: Cand, best: Cand | None) -> bool:
        """``c`` once sized cannot be ``_best_buy``'s answer: it could not keep up with the month's runs
        or stay within the budget, or ``best`` (sized) comes first in that order even against its
        floor (``_buy_floor``)."""
        return self._beaten(c, self._own_order(best, best.buy_total)
                            if best is not None and best.buy_total is not None else None)

    def _buy_order(self, best: Cand | None) -> tuple[float, float, float] | None:
        """``_own_order`` of the build to own (``_best_buy``) at its price; None when there is none."""
        return self._own_order(best, best.buy_total) if best is not None and best.buy_total is not None else None

    def _beaten(self, c: Cand, best: tuple[float, float, float] | None) -> bool:
        """``_not_best_buy`` with the build to own's ``_own_order`` (``best``; None: no build to own)."""
        if c in self.floor_orders:
            order = self.floor_orders[c]
        else:
            order = self.floor_orders[c] = self._floor_order(c)
        return order is None or (best is not None and best < order)

    def _floor_order(self, c: Cand) -> tuple[float, float, float] | None:
        """``_own_order`` of ``c`` at its owning floor (``_buy_floor``), or None when, sized, it could not
        keep up with the month's runs or stay within the budget (never the build to own)."""
        if c.q.wall_hours * self.runs_pm > HOURS_PER_MONTH:
            return None
        capex, total = self._buy_floor(c)
        if self.d.budget_usd is not None and capex > self.d.budget_usd:
            return None
        return self._own_order(c, total * (1 - 1e-9))

    def _sized(self, c: Cand, w: sysmod.Workload) -> Build:
        """The build for ``c`` sized from its own estimate, on the tier the ranking priced."""
        tier = c.build.tier if c.build is not None else "standard"
        return sysmod.size_system(self.req, self.cat, c.gpu, c.gpn, c.nodes, w, lean=tier.startswith("lean"),
                                  used=True if tier_bought_used(tier) else None)

    def _workload(self, scan: _Scanner, c: Cand) -> tuple[Estimate, sysmod.Workload]:
        est = scan.full(c.gpu, c.count, c.gpn)
        return est, sysmod.workload_from(self.req, self.cat, est)

    def _plan_workload(self, scan: _Scanner, c: Cand) -> sysmod.Workload:
        """``_workload``'s sizing inputs alone (they read the plan, not the run time: _Scanner.plan_facts)."""
        return sysmod.workload_from(self.req, self.cat, scan.plan_facts(c.gpu, c.count, c.gpn))

    def overhead(self, inst: CloudInstance | None, w: sysmod.Workload) -> tuple[float, float]:
        """(hours, $) a rented run pays besides training -- the $ are egress plus ``standing_usd`` (the
        dataset kept in object storage between runs) -- and the hours provisioning + image pull
        (cloud_setup_hours), staging the dataset over the instance's front-end / storage network at ~50 %
        of line rate, and the trained weights out of the cloud. The front-end figure is the offer's
        ``frontend_gbps``, or its one network figure when that is not an RDMA compute fabric (an
        InfiniBand / EFA / RoCE figure is GPU-to-GPU only), else STAGING_GBPS."""
        out_gb = (w.params_trainable if w.method in ("lora", "qlora") else w.params_total) * 2 / 1e9
        return (self.wait_hours(staging_gbps(inst), w),
                out_gb * self.cat.fac("egress_usd_per_gb") + self.standing_usd(w))

    def wait_hours(self, gbps: float, w: sysmod.Workload) -> float:
        """Provisioning and image pull (cloud_setup_hours), then the dataset staged at ~50 % of ``gbps``."""
        return self.setup_h + w.dataset_gb * 8 / (gbps * 0.5) / 3600

    def standing_usd(self, w: sysmod.Workload) -> float:
        """A rented run's share of keeping its dataset in object storage all year (S3 Standard rate,
        facility cloud_storage_usd_per_tb_month): 20 TB of images cost ~$460 a month whether one run
        or ten use it; an owned build carries its own disks (its BOM) instead."""
        return w.dataset_gb / 1000.0 * self.cat.fac("cloud_storage_usd_per_tb_month") * 12.0 / max(self.rpy, 1e-9)

    def _datacentre(self, cloud: list[CloudOption], w: sysmod.Workload, gpu: GPU) -> costmod.RentRef | None:
        """Where the first of ``cloud`` (the offer a rent verdict prices) is a community marketplace host's, the
        cheapest data-centre offer of the same build (another tier: its price and capacity are the provider's), as
        the rent side of ``cost.analyse``: on demand or reserved, whichever is cheaper, with its per-run overhead.
        None otherwise."""
        if not cloud or cloud[0].tier != "marketplace-community":
            return None
        best: tuple[float, CloudOption, float] | None = None
        for o in cloud:
            if o.tier == "marketplace-community":
                continue
            over = self._overhead_usd(o, w)
            cost = min(o.cost_per_run_usd + over, o.cost_per_run_reserved_usd or math.inf)
            if best is None or cost < best[0]:
                best = (cost, o, over)
        if best is None:
            return None
        return self._rent_ref(best[1], best[2], gpu)

    def _rent_ref(self, o: CloudOption, over: float, gpu: GPU) -> costmod.RentRef:
        """The rent side of ``cost.analyse`` for one cloud option: on demand with its per-run overhead ``over``
        ($, ``_overhead_usd``), its reservation and spot prices."""
        n = o.gpus_per_instance * o.instances
        reserved = o.cost_per_run_reserved_usd * self.rpy if o.cost_per_run_reserved_usd is not None else None
        return costmod.RentRef(usd_per_run=o.cost_per_run_usd + over,
                               label=rent_label(n, gpu.name, o.provider, o.instance, o.instances),
                               usd_per_gpu_hour=o.usd_per_hour / n, reserved_usd_per_year=reserved,
                               spot_usd_per_run=o.cost_per_run_spot_usd)

    def _overhead_usd(self, o: CloudOption, w: sysmod.Workload) -> float:
        """Per-run overhead of a cloud option in dollars (``overhead`` hours at its rate + egress)."""
        hours, egress = self.overhead(self._instance(o), w)
        return hours * o.usd_per_hour + egress

    def _offer(self, o: CloudOption | None, w: sysmod.Workload) -> RentOffer | None:
        """The cloud offer the verdict prices, with its per-run overhead (``overhead``)."""
        if o is None:
            return None
        inst = self._instance(o)
        hours, usd = self.overhead(inst, w)
        standing = self.standing_usd(w)
        return RentOffer(provider=o.provider, instance=o.instance, region=o.region,
                         country=(inst.country.upper() if inst else ""), tier=(inst.tier if inst else None),
                         instances=o.instances,
                         gpus_per_instance=o.gpus_per_instance, usd_per_hour=o.usd_per_hour,
                         overhead_hours=round(hours, 3), egress_usd=round(usd - standing, 2),
                         storage_usd=round(standing, 2))

    def _instance(self, o: CloudOption) -> CloudInstance | None:
        """The catalog row of a cloud option: one instance type is listed per region, each with its
        own price and (as published) host figures, so the region is part of the match (the first such
        row, indexed once per catalog)."""
        index = self.cat.derived.get(("instance_by_offer",))
        if index is None:
            rows: dict[tuple[str, str, str, str], CloudInstance] = {}
            for inst in self.cat.cloud_instances:
                rows.setdefault((inst.provider, inst.instance_type, inst.gpu, inst.region), inst)
            index = self.cat.derived.setdefault(("instance_by_offer",), rows)
        return index.get((o.provider, o.instance, o.gpu, o.region))  # type: ignore[no-any-return]

    def explain(self, scan: _Scanner, r: Ranked) -> Recommendation:
        """Stage 4: the full estimate, system, cost analysis and pitfalls for the winner, and its
        alternatives and Pareto front."""
        win, ranked = r.win, list(r.shortlist)
        est, w = self._workload(scan, win)
        build = self._sized(win, w)
        wall = est.time.wall_hours if est.feasible else win.q.wall_hours
        gph = est.time.gpu_hours if est.feasible else win.q.gpu_hours
        cloud = costmod.cloud_options(self.req, self.cat, win.gpu.id, win.count, win.gpn, wall,
                                      storage_tb=build.storage_needed_tb,
                                      split=costmod.SplitJob.from_estimate(est, self.req.training.precision),
                                      host_ram_gib=est.memory.host_ram_gib if est.feasible else win.q.host_ram_gib)
        pinned = bool(self.req.hardware and self.req.hardware.gpu)
        renting = win.mode == "rent" and win.rent_run is not None and not (pinned and self.d.mode == "buy")
        buy_build: Build | None = build
        ref_offer: CloudOption | None = None
        offer_w = w
        if renting:
            # The answer is a cloud instance; the on-prem side is the best build one could buy instead.
            buy = self._best_buy(ranked)
            ref_offer = cloud[0] if cloud else None
            rent_ref = costmod.RentRef(
                usd_per_run=((cloud[0].cost_per_run_usd + self._overhead_usd(cloud[0], w)) if cloud
                             else (win.rent_run or 0.0)),
                label=win.rent_label, usd_per_gpu_hour=win.rent_gpu_hour, reserved_usd_per_year=win.reserved_year,
                spot_usd_per_run=win.spot_run)
            if buy is not None:
                bw = self._plan_workload(scan, buy)
                buy_build = self._sized(buy, bw)
                analysis = costmod.analyse(self.req, self.cat, buy_build, buy.q.gpu_hours, cloud, rent_ref,
                                           datacentre=self._datacentre(cloud, w, win.gpu), **self._decided(win, buy))
            else:
                buy_build = None
                site = self.d.site not in ("any", "cloud")
                why = (_("no build you could buy fits the budget, the {site} site and the schedule") if
                       self.d.budget_usd and site else
                       _("no build you could buy fits the budget and the schedule") if self.d.budget_usd else
                       _("no build you could buy fits the {site} site and the schedule") if site else
                       _("no build you could buy fits the schedule")).format(site=self.d.site)
                analysis = costmod.analyse(self.req, self.cat, None, gph, cloud, rent_ref, gpu_priced=False,
                                           no_buy_reason=why)
        else:
            ref = self._best_rent(win, ranked)
            if ref is not None and ref is not win:
                offer_w = self._plan_workload(scan, ref)
                extra = costmod.cloud_options(self.req, self.cat, ref.gpu.id, ref.count, ref.gpn, ref.q.wall_hours,
                                              storage_tb=build.storage_needed_tb, host_ram_gib=ref.q.host_ram_gib)
                cloud = cloud + extra[:1]
                ref_offer = extra[0] if extra else None
            elif ref is win and cloud:
                ref_offer = cloud[0]
            rent_ref = None
            if ref is not None:
                own = cloud[0] if (ref is win and cloud) else None
                rent_ref = costmod.RentRef(
                    usd_per_run=(own.cost_per_run_usd + self._overhead_usd(own, w)) if own else (ref.rent_run or 0.0),
                    label=ref.rent_label,
                    usd_per_gpu_hour=ref.rent_gpu_hour, reserved_usd_per_year=ref.reserved_year,
                    spot_usd_per_run=ref.spot_run)
            elif cloud:  # a GPU asked for by name whose only offers hold it over Ethernet (a split): none priced it
                ref_offer = cloud[0]
                rent_ref = self._rent_ref(cloud[0], self._overhead_usd(cloud[0], w), win.gpu)
            analysis = costmod.analyse(self.req, self.cat, build, gph, cloud, rent_ref,
                                       gpu_priced=win.capex is not None,
                                       **(self._decided(win, ref) if ref is not None else {}))
        offer = self._offer(ref_offer, offer_w)
        analysis = analysis.model_copy(update={"rent_offer": offer})
        rented_verdict = analysis.verdict == "rent" and bool(cloud)  # (no offer: the build stays what one would buy)
        # the wait of a rented run before it trains (hours) and its other $ a run (egress, the dataset kept in object
        # storage), unrounded: the rent total and the verdict's price count them so
        over_h, extra_usd = self.overhead(self._instance(cloud[0]), offer_w) if rented_verdict else (0.0, 0.0)
        if rented_verdict:
            o = cloud[0]
            inst = self._instance(o)
            label = f"{o.provider} {o.instance}" + (f" x{o.instances}" if o.instances > 1 else "")
            if o.reserved_wins(over_h):
                label += _(", 1-year reservation")
            if o.note:
                label += f" ({o.note})"
            build = sysmod.rented_build(build, inst.vcpus if inst else None,
                                        (inst.ram_gb / GB_PER_GIB) if inst and inst.ram_gb else None,
                                        inst.local_nvme_tb if inst else None, f"cloud: {label}")
        alts = self.alternatives(win, ranked)
        ctx = pitmod.Context(req=self.req, cat=self.cat, gpu=win.gpu, build=build, est=est, cost=analysis,
                             buy_build=buy_build if analysis.onprem is not None else None)
        pits = pitmod.check(ctx)
        per_run: float | None
        if rented_verdict:
            # What renting costs the way the ranking priced it: on demand, or a reservation when
            # the year's runs fill it well enough to be cheaper; plus the per-run overhead.
            o = cloud[0]
            if o.reserved_wins(over_h) and o.cost_per_run_reserved_usd is not None:
                per_run = o.cost_per_run_reserved_usd + extra_usd  # (the reservation's hours include the wait)
            else:
                per_run = o.cost_per_run_usd + over_h * o.usd_per_hour + extra_usd
        elif analysis.onprem is not None and not renting:
            per_run = analysis.onprem.total_usd / max(self.rpy * self.y, 1e-9)
        else:
            per_run = self.per_run(win)
        per_run_out = round(per_run, 2) if math.isfinite(per_run) else None  # a pinned GPU with neither price nor offer
        binding = None
        assumptions = [n for n in [turnaround_note(self.req)] if n]
        if self.obj != "fastest" and self.tight(win):
            tight = (_("nothing ends by {slack:.0%} of the {deadline} deadline: this run takes {run} ({share:.0%}), "
                       "no slack for restarts") if self.req.schedule.deadline_days else
                     _("nothing ends by {slack:.0%} of the {deadline} assumed turnaround: this run takes {run} "
                       "({share:.0%}), no slack for restarts"))
            to_result = self.to_result(win)
            binding = BindingConstraint(kind="deadline", message=tight.format(
                slack=SLACK_FRAC, deadline=fmt_hours(self.deadline_h), run=fmt_hours(to_result),
                share=to_result / self.deadline_h) + self._waits_said(win))
        elif self.obj == "fastest" and (to_result := self.to_result(win)) > self.deadline_h:
            binding = BindingConstraint(kind="deadline", message=_(
                "even the fastest build within budget takes {run}, past the {deadline} deadline").format(
                run=fmt_hours(to_result), deadline=fmt_hours(self.deadline_h)) + self._waits_said(win))
        return Recommendation(
            objective=self.obj,  # type: ignore[arg-type]
            found=True, build=build, buy_build=buy_build if analysis.onprem is not None else None, estimate=est,
            cost_per_run_usd=per_run_out,
            cost_per_run_usd_range=(Range(low=per_run_out * est.cost_multipliers.low,
                                          high=per_run_out * est.cost_multipliers.high)
                                    if est.cost_multipliers is not None and per_run_out is not None else None),
            alternatives=alts, cost=analysis, pitfalls=pits, candidates_considered=r.search.considered,
            dropped=dict(sorted(r.search.dropped, key=lambda kv: -kv[1])),
            suggestions=self.suggestions(scan, r.search) if not est.feasible else [],
            pareto=self.pareto(r.priced, win, per_run_out, analysis.verdict == "rent"),
            binding_constraint=binding, assumptions=assumptions,
            market=self._market(win, analysis.rent_offer if renting else None),
            currency=market.currency_info(self.cat, self.req),
        )

    def _market(self, win: Cand, offer: RentOffer | None) -> MarketStatus:
        """``market.assess`` for the pick; with confidential data rented outside the user's jurisdiction, also
        the run kept inside it (``_in_jurisdiction``)."""
        st = market.assess(self.req, self.cat, win.gpu, win.count, win.gpn)
        if (self.d.data_sensitivity != "confidential" or offer is None or not offer.country
                or market.jurisdiction(offer.country) == market.jurisdiction(self.d.country)):
            return st
        return st.model_copy(update={"in_jurisdiction": self._in_jurisdiction(), "in_jurisdiction_checked": True})

    def _in_jurisdiction(self) -> JurisdictionOption | None:
        """The pick of this answer's search priced and ranked again on the offers of the user's jurisdiction
        without community hosts (the rule of ``regulated`` data), rented; None when none of them does the run.
        Not a second search: the same candidates (their fast-path times), so the run time and price are the
        search's (a ``regulated`` question's answer quotes its full estimate)."""
        found, w0 = self._found, self._w0
        if found is None or w0 is None:
            return None
        dep = self.req.deployment.model_copy(update={"data_sensitivity": "regulated", "mode": "rent"})
        inner = _Recommender(self.req.model_copy(update={"deployment": dep}), self.cat, self.obj)
        inner.batch_cap = self.batch_cap
        priced = inner.price(found, w0)
        ranked = inner.rank(priced, w0) if priced.ok else None
        win = ranked.win if ranked is not None else None
        inst = win.rent_inst if win is not None and win.mode == "rent" else None
        if win is None or inst is None:
            return None
        return JurisdictionOption(gpu=win.gpu.id, gpu_name=win.gpu.name, count=win.count, provider=inst.provider,
                                  instance=inst.instance_type + (f" x{win.rent_n}" if win.rent_n > 1 else ""),
                                  region=inst.region, country=inst.country, wall_hours=round(win.q.wall_hours, 3),
                                  cost_per_run_usd=round(inner.per_run(win), 2))

    def pareto(self, priced: tuple[Cand, ...], win: Cand, win_run: float | None,
               win_rented: bool) -> list[ParetoPoint]:
        """The time / cost front over every exact-priced candidate (several shapes of one GPU may be
        on it) the ranking would offer: no point is both slower and dearer per run than another. The pick
        carries the price the answer quotes."""
        pts: list[tuple[float, float, Cand, bool]] = []  # models only for the points on the front
        point, isinf, isfinite, frontable = self._point, math.isinf, math.isfinite, self._frontable
        for c in priced:
            if isinf(c.score):
                continue
            if c is win:
                run = win_run if win_run is not None else self.per_run(c)
                if isfinite(run):
                    pts.append((round(c.q.wall_hours, 3), round(run, 2), c, win_rented))
                continue
            if not frontable(c):
                continue
            wall, rounded = point(c)  # (round(wall, 3), round(per_run, 2)), kept per candidate
            if isfinite(rounded):
                pts.append((wall, rounded, c, c.mode == "rent"))
        pts.sort(key=itemgetter(0, 1))
        front: list[tuple[ParetoPoint, bool]] = []  # (point, is the pick)
        for wall, run, c, rented in pts:
            if not front or run < front[-1][0].cost_per_run_usd:
                front.append((ParetoPoint(gpu=c.gpu.id, count=c.count, nodes=c.nodes, wall_hours=wall,
                                          cost_per_run_usd=run, rented=rented, late=self.tight(c)), c is win))
        pick_run = win_run if win_run is not None else self.per_run(win)
        return trim_front(front, pick_run, win.nodes)

    def _frontable(self, c: Cand) -> bool:
        """``c`` (not the pick) may stand on the time / cost front: its price is exact (a rent price once priced, a
        bought build once sized), the site takes it as it is (no dedicated circuit at a desk: ``off_site``), and its
        memory range fits (``oom_risk``: no option the ranking offers; on the front it read as faster and cheaper
        than the pick, unexplained). ``pareto`` and ``_owned_irrelevant``'s proof ask the same."""
        mode = c.mode
        return ((c.exact or mode == "rent") and not (mode == "buy" and self.needs_circuit(c))
                and not self.oom_risk(c))

    def _best_buy(self, ranked: list[Cand]) -> Cand | None:
        """The build to own instead of renting: cheapest over the horizon as the ranking counts it."""
        ok = [c for c in ranked if c.buy_total is not None and c.exact and c.build is not None
              and c.q.wall_hours * self.runs_pm <= HOURS_PER_MONTH
              and (self.d.budget_usd is None or (c.capex or 0) <= self.d.budget_usd)]
        # one that ends with slack before the deadline first, then one the site takes as it is (the
        # same rules as the pick's: ``key``)
        if not ok:
            return None
        return min(ok, key=lambda c: (*self._own_order(c, c.buy_total), c.q.wall_hours))  # type: ignore[arg-type]

    def _stack(self, c: Cand) -> float:
        """The non-CUDA software-stack handicap on a cost (``effective``)."""
        return 1.0 if c.gpu.vendor == "nvidia" else _NON_CUDA_STACK

    def _own_order(self, c: Cand, total: float) -> tuple[float, float, float]:
        """``_best_buy``'s order of ``c`` owned for ``total`` over the horizon (before its run time): one
        that ends with slack first (and whose memory range fits its card: ``oom_risk``), then one the site takes as
        it is (``needs_circuit``; an unsized build
        counts as one), then the cost with the software-stack handicap -- the pick's rules (``key``)."""
        return (float(self.tight(c, owned=True)) + self.oom_risk(c), float(self.needs_circuit(c)),
                total * self._stack(c))

    def _outranks(self, k: tuple[float, ...], first: tuple[float, ...], band: float) -> bool:
        """A cheapest-objective key (``key(...)[:3]``) that sorts after ``first`` (the shortlist's first)
        and outside the pick's near-tie band (``band``: ``pick``'s tolerance on the first's cost)."""
        return k > first and not (k[:2] == first[:2] and k[2] <= band)

    def _decided(self, win: Cand, other: Cand) -> _Decided:
        """The ranking's rent-or-buy choice for cost.analyse (cheapest objective, mode either), and why
        it may differ from the plain dollar comparison there (``other`` is the other side's build)."""
        if self.obj == "fastest" and self.d.mode == "either" and win.mode in ("rent", "buy") \
                and other.q.wall_hours > win.q.wall_hours * CLEARLY_FASTER:
            # Fastest within budget: the verdict prices the pick, not a slower build on the other side
            # (240 rented H200 in 53 min were called "hybrid" beside an owned 4x RTX 5090 taking days).
            msg = (_("the objective is fastest: the rented {n}-GPU build takes {t:,.1f} h a run, the {m}-GPU build "
                     "to own {u:,.1f} h") if win.mode == "rent" else
                   _("the objective is fastest: the owned {n}-GPU build takes {t:,.1f} h a run, the rented "
                     "{m}-GPU build {u:,.1f} h"))
            return {"decided": win.mode, "decided_why": msg.format(n=win.count, t=win.q.wall_hours, m=other.count,
                                                                   u=other.q.wall_hours)}
        if self.obj != "cheapest" and self.d.mode == "either" and win.mode in ("rent", "buy"):
            # Any other objective: the verdict prices the pick too. A dollar verdict here said "buy"
            # (a different, cheaper build to own) beside a headline 8x H100 NVL picked for its energy
            # per run -- a verdict about another build than the one the answer shows.
            if self.obj == "perf-per-watt" and other.energy_kwh > win.energy_kwh:
                msg = (_("the objective is perf-per-watt: the rented {n}-GPU build uses {kwh:,.0f} kWh a run, the "
                         "{m}-GPU build to own {other:,.0f} kWh") if win.mode == "rent" else
                       _("the objective is perf-per-watt: the owned {n}-GPU build uses {kwh:,.0f} kWh a run, the "
                         "rented {m}-GPU build {other:,.0f} kWh"))
            else:
                msg = (_("the objective is {objective}: the verdict prices the rented {n}-GPU build it picked")
                       if win.mode == "rent" else
                       _("the objective is {objective}: the verdict prices the owned {n}-GPU build it picked"))
            return {"decided": win.mode, "decided_why": msg.format(
                objective=self.obj, n=win.count, m=other.count, kwh=win.energy_kwh, other=other.energy_kwh)}
        if self.obj != "cheapest" or self.d.mode != "either" or win.mode not in ("rent", "buy"):
            return {}
        why = ""
        if self.tight(other) and not self.tight(win):
            why = _("the {n}-GPU build to own ends too late ({days:,.1f} days a run: after {slack:.0%} of the "
                    "deadline, or its P90 misses it)").format(n=other.count, days=other.q.wall_hours / 24,
                                                              slack=SLACK_FRAC)
        elif win.mode == "rent" and self._stack(other) > 1.0:
            why = _("{gpu}'s non-CUDA software stack is counted {pct:.0%} dearer (kernel porting, less mature "
                    "distributed training)").format(gpu=other.gpu.name, pct=NON_CUDA_HANDICAP)
        elif win.count < other.count:
            simpler = (_("the rented {n}-GPU build is simpler than the {other}-GPU alternative and within {pct:.0%} "
                         "of the cheapest") if win.mode == "rent" else
                       _("the owned {n}-GPU build is simpler than the {other}-GPU alternative and within {pct:.0%} "
                         "of the cheapest"))
            why = simpler.format(n=win.count, other=other.count, pct=SIMPLICITY_TOLERANCE)
        return {"decided": win.mode, "decided_why": why}

    def _best_rent(self, win: Cand, ranked: list[Cand]) -> Cand | None:
        ok = [c for c in [win, *ranked] if c.rent_run is not None and c.rent_total is not None]
        return min(ok, key=lambda c: (c.rent_total, c.q.wall_hours)) if ok else None

    def alternatives(self, win: Cand, ranked: list[Cand]) -> list[Alternative]:
        out: list[Alternative] = []
        seen = {win.gpu.id}
        wp = self.per_run(win)
        for c in ranked:
            if c.gpu.id in seen or math.isinf(c.score):
                continue
            seen.add(c.gpu.id)
            out.append(Alternative(gpu=c.gpu.id, gpu_name=c.gpu.name, count=c.count, nodes=c.nodes,
                                   wall_hours=round(c.q.wall_hours, 3), cost_per_run_usd=round(self.per_run(c), 2),
                                   reason=self.reason(c, win, wp), dedicated_circuit=bool(self.off_site(c)),
                                   tight_memory=not self.roomy(c)))
            if len(out) >= N_ALTERNATIVES:
                break
        return out

    def reason(self, c: Cand, win: Cand, win_run: float) -> str:
        t = c.q.wall_hours / win.q.wall_hours if win.q.wall_hours > 0 else 1.0
        speed = (_("{x:.1f}x slower").format(x=t) if t >= 1.05 else _("{x:.1f}x faster").format(x=1 / t) if t <= 0.95
                 else _("about as fast"))
        p = self.per_run(c)
        if win_run > 0:
            r = p / win_run
            if r <= 0.97:
                money = _("{pct:.0%} cheaper per run").format(pct=min(1 - r, 0.99))  # (never "100 %": not free)
            elif r < 1.03:
                money = _("about the same cost per run")
            elif r < 1.95:
                money = _("{pct:.0%} dearer per run").format(pct=r - 1)
            else:
                money = _("{x:.1f}x the cost per run").format(x=r)
        else:
            money = _("cost unknown")
        how = _("rented") if c.mode == "rent" else _("owned")
        if c.mode == "rent" and c.idle > 0:
            how = _("rented: smallest offer has {n} GPUs, {idle} idle").format(n=c.count + c.idle, idle=c.idle)
        tail = ""
        if self.obj == "perf-per-watt":
            tail = _(", {kwh:,.0f} kWh per run").format(kwh=c.energy_kwh)
        if self.obj == "cheapest" and c.score > win.score and p < win_run:
            tail += _(", but dearer over the horizon")
        if not self.roomy(c) and self.roomy(win):
            tail += _(", fits only inside the {headroom:.0%} memory headroom asked").format(headroom=self.d.headroom)
        if self.off_site(c):
            tail += _(", needs a dedicated circuit ({dedicated})").format(
                dedicated=sysmod.dedicated_circuit(sysmod.office_circuit(self.cat, self.d.country)))
        return _("{speed}, {money} ({how}, {n}x{tail})").format(speed=speed, money=money, how=how, n=c.count,
                                                                  tail=tail)

    # -- nothing fits --
    def nothing(self, scan: _Scanner, priced: Priced) -> Recommendation:
        """The answer when nothing fits: the binding constraint and sane suggestions."""
        bc = self.binding(priced)
        sugg = self.suggestions(scan, priced, bc)
        pits = pitmod.check_nothing_fits(self.req, self.cat, sugg)
        return Recommendation(objective=self.obj, found=False, pitfalls=pits,  # type: ignore[arg-type]
                              candidates_considered=priced.considered, market=market.assess(self.req, self.cat),
                              currency=market.currency_info(self.cat, self.req),
                              dropped=dict(sorted(priced.dropped, key=lambda kv: -kv[1])), suggestions=sugg,
                              binding_constraint=bc,
                              assumptions=[n for n in [turnaround_note(self.req)] if n])

    def binding(self, priced: Priced) -> BindingConstraint:
        """What stopped every build, from the drop counts: the budget (with the cheapest fitting
        build's price), then the deadline, the site, memory, and policy (export / CUDA / VDI)."""
        d = priced.counts()
        if d.get(DROP_BUDGET) and self.d.budget_usd is not None:
            cash = market.cash(self.cat, self.req)  # money in the user's currency
            costs: list[float] = []
            for c in priced.over_budget:
                capex = c.capex
                if capex is not None and c.nodes == 1 and self._w0 is not None and self.d.mode != "rent":
                    # the lean tier's box, also past LEAN_REACH (the rough price is a GPU share of a server)
                    capex = min(capex, self._sized_stem(c, self._w0, True, None)[0].capex_usd)
                ways = [capex if self.d.mode != "rent" else None,
                        c.rent_total / self.y if c.rent_total is not None and self.d.mode != "buy" else None]
                known = [x for x in ways if x is not None]
                if known:
                    costs.append(min(known))
            cheapest = _(": the cheapest build that fits costs {usd}").format(usd=cash(min(costs))) if costs else ""
            return BindingConstraint(kind="budget", message=_("budget {usd}").format(usd=cash(self.d.budget_usd))
                                     + cheapest)
        if d.get(DROP_DEADLINE) or d.get(DROP_CAPACITY):
            within = (_("no build that fits finishes a run within the {deadline} deadline")
                      if self.req.schedule.deadline_days else
                      _("no build that fits finishes a run within the {deadline} assumed turnaround"))
            return BindingConstraint(kind="deadline", message=(
                within.format(deadline=fmt_hours(self.deadline_h))
                + (_(" (fastest: {run})").format(run=fmt_hours(priced.fastest_miss))
                   if math.isfinite(priced.fastest_miss) else "")))
        if d.get(DROP_SITE):
            return BindingConstraint(kind="site", message=_("no build that fits suits the {site} site").format(
                site=self.d.site))
        if d.get(DROP_FIT):
            return BindingConstraint(kind="memory",
                                     message=_("the model does not fit in the memory of any GPU count tried"))
        return BindingConstraint(kind="policy", message=_("every GPU is excluded: ")
                                 + _(", ").join(_(k) for k in (DROP_EXPORT, DROP_CUDA, DROP_TRAINING, DROP_PRICE)
                                                if d.get(k)))

    def suggestions(self, scan: _Scanner, priced: Priced, bc: BindingConstraint | None = None) -> list[str]:
        """Changes that would make it work -- only sane ones: never LoRA for a pretraining run, never
        a run longer than the horizon, never a data-centre server to a desk buyer. ``bc``: ``binding(priced)``,
        where the caller has it."""
        out: list[str] = []
        req = self.req
        horizon_h = self.y * HOURS_PER_YEAR
        if self.d.site != "cloud" and self.d.mode != "buy" and (bc or self.binding(priced)).kind == "site":
            # the site is what stops every build that fits: the run rented where a data-centre GPU lives, first
            cloud = self._cloud_fits()
            if cloud:
                out.append(cloud)
        gpus = [g for g in self.cat.gpus if not self.excluded(g)]
        if self.d.site == "desk":
            gpus = [g for g in gpus if sysmod.chassis_options(self.cat, g, 1, "desk")]
        # 1. More GPUs / a longer deadline: the fastest fitting build of a big GPU -- not when builds that fit
        # are only over the budget (the binding constraint then; a bigger box answers nothing).
        budget_bound = bool(priced.counts().get(DROP_BUDGET) and self.d.budget_usd)
        big = [] if budget_bound else sorted(gpus, key=lambda g: -g.memory_gib)[:3]
        ladder = (1,) if self.d.site == "desk" else (1, *NODE_LADDER)
        for g in big:
            gpn = _gpn_options(g)[-1]
            if self.d.site == "desk":
                gpn = max((n for n in _gpn_options(g) if sysmod.chassis_options(self.cat, g, n, "desk")), default=1)
            for nodes in ladder:
                try:
                    q = scan.quick(g, gpn * nodes, gpn)
                except (GpuwizError, *_NUMERIC_ERRORS):
                    break
                if q.fits and math.isfinite(q.wall_hours) and q.wall_hours <= horizon_h:
                    if q.wall_hours > self.deadline_h:
                        out.append((_("{nodes} node(s) of {gpn}x {gpu} would fit but take {run}: a deadline of "
                                       "{need} days") if self.d.site == "desk" else
                                    _("{nodes} node(s) of {gpn}x {gpu} would fit but take {run}: a deadline of "
                                      "{need} days, or more nodes")).format(
                            nodes=nodes, gpn=gpn, gpu=g.name, run=fmt_hours(q.wall_hours),
                            need=math.ceil(q.wall_hours / 24)) + self._over_budget(g, gpn, nodes))
                    else:
                        out.append(_("{nodes} node(s) of {gpn}x {gpu} ({n} GPUs) would fit and finish in {h:,.1f} "
                                     "h").format(nodes=nodes, gpn=gpn, gpu=g.name, n=nodes * gpn, h=q.wall_hours)
                                   + self._over_budget(g, gpn, nodes))
                    break
            if out:
                break
        # 2. Cheaper methods and offload (LoRA changes what a fine-tune learns; a pretraining run needs every weight).
        variants: list[tuple[str, dict[str, Any]]] = []
        if req.training.method == "full":
            variants += [("LoRA", {"method": "lora"}), ("QLoRA", {"method": "qlora"})]
        if req.training.method == "lora":
            variants.append(("QLoRA", {"method": "qlora"}))
        par = req.training.parallel
        if (req.training.method in ("full", "pretrain") and (not par or (par.offload or "none") == "none")):
            # (not for LoRA / QLoRA: their optimizer holds only the adapters' states; what ZeRO-3 would save
            # there is the sharded base, which this label would not say)
            variants.append((_("CPU offload of the optimizer"),
                             {"parallel": {"zero_stage": 3, "offload": "optimizer"}}))
        base = self._smallest_fit(req, {}, gpus) if variants else None  # (what fits as asked: a variant must do better)
        for label, upd in variants:
            hit = self._smallest_fit(req, upd, gpus)
            if hit and base and hit[3] >= base[3]:
                continue  # it needs no smaller a GPU than the run as asked: memory is not what stops it
            if hit and hit[2] <= horizon_h:
                g, n, h, _price = hit
                if h > self.deadline_h:  # it fits, but a run misses the deadline: said so, not offered as a fix
                    out.append(_("{what} would fit on {n}x {gpu} but take {run} per run (deadline {deadline})").format(
                        what=label, n=n, gpu=g.id, run=fmt_hours(h), deadline=fmt_hours(self.deadline_h)))
                else:
                    out.append(_("{what} would fit on {n}x {gpu} ({h:,.1f} h per run)").format(what=label, n=n,
                                                                                              gpu=g.id, h=h))
        dropped = priced.counts()
        if dropped.get(DROP_BUDGET) and self.d.budget_usd:
            out.append(_("{n} fitting build(s) exceed the {usd} budget: raise it or rent").format(
                n=dropped[DROP_BUDGET], usd=market.cash(self.cat, self.req)(self.d.budget_usd)))
            used = self._used_fits()
            if used:
                out.append(used)
        if dropped.get(DROP_EXPORT):
            out.append(_("{n} GPU type(s) are export-restricted for {country}: use in-market GPUs or an in-country "
                         "cloud").format(n=dropped[DROP_EXPORT], country=self.d.country))
        return out

    def _over_budget(self, gpu: GPU, gpn: int, nodes: int) -> str:
        """What a suggested build to buy costs, said where it is over the budget (its leanest box: the least the
        search would price it at), or "" (renting only, no budget, within it, or not for sale here). A $3,000
        buyer was told a 70B full fine-tune "would fit" on a $40k box, given ten days."""
        budget = self.d.budget_usd
        if budget is None or self.d.mode == "rent" or self._w0 is None or not self._buy_route(gpu) \
                or not self._buyable_at(gpu, gpn):
            return ""
        capex = sysmod.size_cost(self.req, self.cat, gpu, gpn, nodes, self._w0, lean=True).capex_usd
        if capex <= budget:
            return ""
        cash = market.cash(self.cat, self.req)
        return _("; its leanest build costs {capex} to buy, over the {budget} budget").format(
            capex=cash(capex), budget=cash(budget))

    def _cloud_fits(self) -> str | None:
        """Bound by the site (no build that fits suits a desk, an office or a server room): the build the same
        question finds rented in the cloud (deployment.site: cloud, mode: rent), said as a suggestion -- the run
        done where the GPUs it needs are rented by the hour; None when none is found (no offer the data policy
        allows, or none within the deadline)."""
        win = self._pick_with(site="cloud", mode="rent")
        if win is None or win.rent_inst is None or win.rent_run is None:
            return None
        cash = market.cash(self.cat, self.req)
        return _("rented in the cloud (deployment.site: cloud): {offer}, {run} and {usd} a run").format(
            offer=win.rent_label, run=fmt_hours(win.q.wall_hours), usd=cash(win.rent_run))

    def _used_fits(self) -> str | None:
        """Over budget buying new: the build the same question finds with used GPUs taken
        (deployment.used_hardware), said as a suggestion; None when it finds none or it is not asked."""
        if self.d.used_hardware or self.d.mode == "rent":
            return None
        win = self._pick_with(used_hardware=True)
        if win is None or win.mode != "buy" or win.build is None or not tier_bought_used(win.build.tier):
            return None
        cash = market.cash(self.cat, self.req)
        return _("with used GPUs (deployment.used_hardware: true): {n}x {gpu} (used), capex {capex}, {run} a "
                 "run").format(n=win.count, gpu=win.gpu.name, capex=cash(win.build.capex_usd),
                               run=fmt_hours(win.q.wall_hours))

    def _pick_with(self, **deployment: Any) -> Cand | None:
        """The pick of the same question with these deployment fields changed (a suggestion's what-if): the search's
        pick and its sized bill of materials; not the whole answer (no explanation, no suggestions)."""
        dep = self.req.deployment.model_copy(update=deployment)
        return _Recommender(self.req.model_copy(update={"deployment": dep}), self.cat, self.obj).pick_only()

    def pick_only(self) -> Cand | None:
        """``search``'s pick (sized), without the answer around it; None when nothing is picked."""
        scan = _Scanner(self.req, self.cat)
        if scan.ctx is None or not scan.ctx.total_units:
            return None
        ranked = self.search(scan)[1]
        return ranked.win if ranked is not None else None

    def _smallest_fit(self, req: Requirements, upd: dict[str, Any],
                      gpus: list[GPU]) -> tuple[GPU, int, float, float] | None:
        """The GPU type and count (per node) the run with ``upd`` applied fits on for the least GPU money:
        (gpu, count, hours a run, that money)."""
        try:
            tr = req.training.model_dump()
            tr.update({k: v for k, v in upd.items() if k != "parallel"})
            if "parallel" in upd:
                tr["parallel"] = {**(tr.get("parallel") or {}), **upd["parallel"]}
            data = req.model_dump()
            data["training"] = tr
            data["hardware"] = None
            req2 = Requirements.model_validate(data)
            scan = _Scanner(req2, self.cat)
        except (GpuwizError, *_NUMERIC_ERRORS):  # the changed settings fail validation or cannot be sized
            return None
        best: tuple[float, GPU, int, float] | None = None
        buy_only = self.d.mode == "buy"
        for g in gpus:
            if buy_only and not self._buy_route(g):
                continue  # (a buyer is not told of a GPU that cannot be bought: no price, not sold here)
            for gpn in _gpn_options(g):
                if buy_only and not self._buyable_at(g, gpn):
                    continue
                try:
                    q = scan.quick(g, gpn, gpn)
                except (GpuwizError, *_NUMERIC_ERRORS):
                    break
                if q.fits and math.isfinite(q.wall_hours):
                    price = (self._unit_price(g) or 1e9) * gpn
                    if best is None or price < best[0]:
                        best = (price, g, gpn, q.wall_hours)
                    break
        return (best[1], best[2], best[3], best[0]) if best else None


instance_ram_ok = costmod.instance_ram_ok  # the one host-RAM rule lives in core.cost


def staging_gbps(inst: CloudInstance | None) -> float:
    """The network a rented run's dataset arrives over (Gb/s): the front-end / storage network, not
    the compute fabric (``Recommender.overhead``)."""
    if inst is None:
        return STAGING_GBPS
    if inst.frontend_gbps:
        return inst.frontend_gbps
    if inst.network_gbps and not inst.rdma:
        return inst.network_gbps
    return STAGING_GBPS


def rent_label(n: int, gpu_name: str, provider: str, instance: str, instances: int) -> str:
    """A rented build as the answer names it: "8x NVIDIA H100 ... on Lambda (gpu_8x_h100_sxm5 x2)"."""
    times = f" x{instances}" if instances > 1 else ""
    return _("{n}x {gpu} on {provider} ({instance})").format(n=n, gpu=gpu_name, provider=provider,
                                                            instance=instance + times)


def slowest_staging(offers: tuple[tuple[CloudInstance, float], ...]) -> float:
    """The least ``staging_gbps`` of the offers (0 when there are none): ``min`` over them, as a loop (no
    generator frame per offer; the search asks it of every GPU)."""
    least = 0.0
    for i, (inst, _usd) in enumerate(offers):
        g = staging_gbps(inst)
        if i == 0 or g < least:
            least = g
    return least


def trim_front(front: list[tuple[ParetoPoint, bool]], pick_usd: float, pick_nodes: int) -> list[ParetoPoint]:
    """The points of the time / cost front an expert would weigh against the pick (the rule, judgement):

    - cost: at most PARETO_COST_REACH x the pick's cost per run (a 16x B200 cluster at 36x the cost of
      the desk box picked is another project, not a faster option);
    - size: at most max(PARETO_MIN_NODES, PARETO_NODE_REACH x the pick's) nodes (13,552 V100 on 1,694
      nodes beside a 48-node pick are no option anyone builds, even when cheaper);
    - one row per build: points with the same GPU, count, nodes and rent / buy whose time and cost are
      within PARETO_SAME of each other look identical in the table (the same offer in two regions):
      the first (faster) is kept, or the pick when it is one of them.

    The pick itself always stays; the front stays non-dominated (only points are removed)."""
    if not math.isfinite(pick_usd) or pick_usd <= 0:
        return [p for p, _is_pick in front]
    max_nodes = max(PARETO_MIN_NODES, PARETO_NODE_REACH * pick_nodes)
    out: list[tuple[ParetoPoint, bool]] = []
    for p, is_pick in front:
        if not is_pick and (p.cost_per_run_usd > PARETO_COST_REACH * pick_usd or p.nodes > max_nodes):
            continue
        same = next((i for i, (q, _q_pick) in enumerate(out)
                     if (q.gpu, q.count, q.nodes, q.rented) == (p.gpu, p.count, p.nodes, p.rented)
                     and abs(q.wall_hours - p.wall_hours) <= PARETO_SAME * max(q.wall_hours, p.wall_hours)
                     and abs(q.cost_per_run_usd - p.cost_per_run_usd)
                     <= PARETO_SAME * max(q.cost_per_run_usd, p.cost_per_run_usd)), None)
        if same is not None:
            if is_pick:
                out[same] = (p, True)
            continue
        out.append((p, is_pick))
    return [p for p, _is_pick in out]


def late(wall: float, hi: float | None, wait: float, slack_h: float, deadline_h: float) -> bool:
    """A run (``wall`` h, P90 end ``hi``) that starts ``wait`` h late ends after ``slack_h``, or its P90 end misses
    ``deadline_h``: the rule ``tight``, the cheapest key, the node ladder and owned hardware (owned.fits_schedule)
    share."""
    return wall + wait > slack_h or (hi is not None and hi + wait > deadline_h)


def _sig(x: float) -> float:
    """Round to 2 significant digits so near-ties fall through to cost."""
    if x <= 0 or not math.isfinite(x):
        return x
    scale = 10.0 ** (math.floor(math.log10(x)) - 1)
    return round(x / scale) * scale
