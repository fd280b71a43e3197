"""Pick the build: enumerate GPU x count candidates, filter, rank by objective, explain.

``recommend(req, catalog, objective=None) -> Recommendation`` (pure, deterministic, never raises for
valid input). The search uses the estimator's fast path for every candidate, prices the survivors
roughly, sizes the whole system (``core.system``) for the best few, re-ranks them on exact rent
and buy costs (``core.cost``), and builds the full estimate, cost analysis and pitfalls
(``core.pitfalls``) only for the winner and its alternatives.

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

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, TypedDict

from gpuwiz.core import cost as costmod
from gpuwiz.core import pitfalls as pitmod
from gpuwiz.core import system as sysmod
from gpuwiz.core.catalog import GPU, Catalog
from gpuwiz.core.errors import GpuwizError
from gpuwiz.core.models import Alternative, Build, Estimate, Recommendation, Requirements
from gpuwiz.core.units import GB_PER_GIB, HOURS_PER_MONTH, HOURS_PER_YEAR

# What the estimator can raise for one candidate on extreme inputs: a numeric edge (overflow, a zero
# divisor, a log/sqrt domain error) or a result that fails its own model's validation (ValueError).
_NUMERIC_ERRORS = (ArithmeticError, ValueError)

NON_CUDA_HANDICAP = 0.25  # ranking penalty for ROCm / Gaudi stacks under the cheapest objective
# Cheapest objective: among builds within this fraction of the lowest (effective) horizon cost, the
# one with the fewest GPUs wins. The one place this tolerance is stated; see _Recommender.pick.
SIMPLICITY_TOLERANCE = 0.05

GPN_LADDER = (1, 2, 4, 8)
MAX_NODES = 4096
NO_DEADLINE_HOURS = 30 * 24.0  # without a deadline a run longer than 30 days is not a practical build
EXACT_TOP = 14  # candidates that get a full system build for exact ranking
N_ALTERNATIVES = 4

DROP_FIT = "does not fit in GPU memory"
DROP_DEADLINE = "misses the deadline"
DROP_BUDGET = "over budget"
DROP_EXPORT = "export-restricted for your country"
DROP_CUDA = "not CUDA (deployment.require_cuda)"
DROP_SITE = "does not suit the site"
DROP_PRICE = "no price (buy) or cloud offer (rent)"
DROP_CONSUMER_MULTI = "consumer card in a multi-node build"
DROP_CAPACITY = "cannot do the runs per month when owned"
DROP_ERROR = "estimator error"


# ---- estimator adapter ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Quick:
    fits: bool
    wall_hours: float
    gpu_hours: float
    per_gpu_gib: float = 0.0
    problems: tuple[str, ...] = ()
    host_ram_gib: float = 0.0  # per node, CPU offload


class _Scanner:
    """Runs the estimator's fast path (``prepare`` / ``quick``) or, if absent, the full estimate."""

    def __init__(self, req: Requirements, cat: Catalog) -> None:
        from gpuwiz.core import estimate as est_mod

        self.req, self.cat, self.mod = req, cat, est_mod
        self.ctx: Any = None
        prep = getattr(est_mod, "prepare", None)
        self.fast = prep is not None and hasattr(est_mod, "quick")
        if self.fast:
            self.ctx = prep(req, cat)  # type: ignore[misc]

    def quick(self, gpu: GPU, count: int, gpn: int) -> Quick:
        if self.fast:
            r = self.mod.quick(self.ctx, gpu, count, gpn)
            detail = _get(r, "detail")
            blocked = bool(detail is not None and getattr(detail, "problems", None))
            return Quick(
                fits=bool(_get(r, "fits", "feasible")) and not blocked,
                wall_hours=float(_get(r, "wall_hours") or math.inf),
                gpu_hours=float(_get(r, "gpu_hours") or math.inf),
                per_gpu_gib=float(_get(r, "per_gpu_gib") or 0.0),
                host_ram_gib=float(_get(r, "host_ram_gib") or 0.0),
                problems=tuple(_get(r, "problems") or ()) or ((str(_get(r, "reason")),) if _get(r, "reason") else ()),
            )
        e = self.full(gpu, count, gpn)
        return Quick(fits=e.feasible, wall_hours=e.time.wall_hours, gpu_hours=e.time.gpu_hours,
                     per_gpu_gib=e.memory.per_gpu_gib, problems=tuple(e.problems), host_ram_gib=e.memory.host_ram_gib)

    def full(self, gpu: GPU, count: int, gpn: int) -> Estimate:
        if self.fast and hasattr(self.mod, "estimate_from"):
            return self.mod.estimate_from(self.ctx, gpu, count, gpn)
        return self.mod.estimate(self.req, self.cat, gpu=gpu.id, count=count, gpus_per_node=gpn)


def _get(obj: Any, *names: str) -> Any:
    for n in names:
        if isinstance(obj, dict) and n in obj:
            return obj[n]
        if hasattr(obj, n):
            return getattr(obj, n)
    return None


# ---- candidates ----------------------------------------------------------------------------------


class _Decided(TypedDict, total=False):
    """cost.analyse's ``decided`` / ``decided_why`` keywords."""

    decided: str
    decided_why: str


@dataclass
class Cand:
    gpu: GPU
    gpn: int
    nodes: int
    q: Quick
    rent_run: float | None = None  # on-demand, cheapest offer
    rent_label: str = ""
    rent_gpu_hour: float = 0.0
    spot_run: float | None = None
    reserved_year: float | None = None
    capex: float | None = None
    buy_total: float | None = None
    rent_total: float | None = None
    score: float = math.inf
    mode: str = "rent"  # the cheaper way for this candidate
    exact: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def count(self) -> int:
        return self.gpn * self.nodes

    @property
    def energy_kwh(self) -> float:
        return self.q.wall_hours * self.count * self.gpu.tdp_w / 1000.0


def _gpn_options(gpu: GPU) -> list[int]:
    opts = [g for g in GPN_LADDER if g <= gpu.max_per_node]
    if gpu.max_per_node not in opts and gpu.max_per_node <= 72:
        opts.append(gpu.max_per_node)
    return opts


def _deadline_hours(req: Requirements) -> float:
    return req.schedule.deadline_days * 24.0 if req.schedule.deadline_days else NO_DEADLINE_HOURS


def recommend(req: Requirements, catalog: Catalog, objective: str | None = None) -> Recommendation:
    obj = objective or req.deployment.objective
    if obj not in ("cheapest", "fastest", "perf-per-watt"):
        raise GpuwizError(f"objective: unknown objective {obj!r} (cheapest, fastest, perf-per-watt)")
    if not req.data.tokens and not req.data.samples:
        raise GpuwizError("data: no data size given (set data.tokens or data.samples): a recommendation "
                          "needs the time per run")
    rec = _Recommender(req, catalog, obj).run()
    if req.have:  # owned hardware (have:) as an option beside buying and renting: core.owned
        from gpuwiz.core.owned import with_owned

        rec = with_owned(req, catalog, rec)
    return rec


class _Recommender:
    def __init__(self, req: Requirements, cat: Catalog, objective: str) -> None:
        self.req, self.cat, self.obj = req, cat, objective
        self.d = req.deployment
        self.deadline_h = _deadline_hours(req)
        # Scale-out stops at this time per run: the deadline, or tighter when the build may be owned.
        self.stop_h = self.deadline_h
        if self.d.mode in ("buy", "either"):
            self.stop_h = min(self.stop_h, HOURS_PER_MONTH / req.schedule.runs_per_month)
        self.dropped: dict[str, int] = {}
        self.considered = 0
        self.cap_cache: dict[tuple[str, int, int], float] = {}
        self.ram_cap: dict[tuple[str, int], float] = {}
        self.restricted = self.d.country.upper() in {c.upper() for c in cat.export_controlled_countries}
        self.y = costmod.years(req)
        self.rpy = costmod.runs_per_year(req)
        self.storage_usd_per_hour = 0.0  # cloud volume for the data and checkpoints (set in run)

    def drop(self, reason: str, n: int = 1) -> None:
        self.dropped[reason] = self.dropped.get(reason, 0) + n

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
        if self.restricted and gpu.export_restricted:
            return DROP_EXPORT
        if self.d.require_cuda and gpu.vendor != "nvidia":
            return DROP_CUDA
        return None

    def enumerate(self, scan: _Scanner) -> list[Cand]:
        out: list[Cand] = []
        pinned = bool(self.req.hardware and self.req.hardware.gpu)
        for gpu in self.gpus():
            if not pinned:
                excluded = self.excluded(gpu)
                if excluded:
                    self.drop(excluded)
                    continue
                if self.d.site == "desk" and gpu.form_factor in ("sxm", "oam"):
                    self.drop(DROP_SITE)
                    continue
            shapes = self.shapes(gpu)
            if shapes is not None:
                for gpn, nodes in shapes:
                    self.considered += 1
                    c = self._try(scan, gpu, gpn, nodes, pinned=True)
                    if c:
                        out.append(c)
                continue
            gpns = _gpn_options(gpu)
            if self.req.hardware and self.req.hardware.gpus_per_node:
                gpns = [min(self.req.hardware.gpus_per_node, gpu.max_per_node)]
            for gpn in gpns:
                self.considered += 1
                c = self._try(scan, gpu, gpn, 1)
                if c:
                    out.append(c)
            # Scale out with full nodes: keep every shape that meets the deadline, and stop once a
            # shape also meets the tighter of (deadline, an owned build's time per run -- the month's
            # runs must fit in the month). Stopping at the deadline alone made the search depend on
            # it: a longer deadline stopped earlier and lost the bigger cluster that could be owned
            # (B4). Past that point more nodes only cost more (GPU-hours grow with the node count).
            # "fastest" goes one doubling further.
            if gpu.segment == "consumer" or self.d.site == "desk":
                continue
            gpn = gpns[-1]
            nodes = 2
            met_once = False
            prev: Quick | None = None
            while nodes <= MAX_NODES:
                self.considered += 1
                c = self._try(scan, gpu, gpn, nodes, count_drops=False)
                q = c.q if c else None
                if c and c.q.fits and c.q.wall_hours <= self.deadline_h:
                    out.append(c)
                    if c.q.wall_hours <= self.stop_h and (met_once or self.obj == "cheapest"):
                        break
                    met_once = met_once or c.q.wall_hours <= self.stop_h
                elif (q is not None and prev is not None and q.fits and prev.fits
                      and q.wall_hours > 0.9 * prev.wall_hours):
                    break  # doubling no longer helps
                prev = q
                nodes *= 2
        return out

    def _try(self, scan: _Scanner, gpu: GPU, gpn: int, nodes: int, pinned: bool = False,
             count_drops: bool = True) -> Cand | None:
        try:
            q = scan.quick(gpu, gpn * nodes, gpn)
        except GpuwizError:
            raise
        except _NUMERIC_ERRORS:  # a numeric edge for one candidate must not sink the search
            self.drop(DROP_ERROR)
            return None
        c = Cand(gpu=gpu, gpn=gpn, nodes=nodes, q=q)
        if pinned:
            return c
        if self.d.site == "desk" and not sysmod.chassis_options(self.cat, gpu, gpn, "desk"):
            if count_drops:
                self.drop(DROP_SITE)
            return None
        if q.fits and q.host_ram_gib * GB_PER_GIB > self.max_host_ram_gb(gpu, gpn):
            q = Quick(fits=False, wall_hours=q.wall_hours, gpu_hours=q.gpu_hours, per_gpu_gib=q.per_gpu_gib,
                      problems=("CPU offload needs more host RAM than the platform takes",),
                      host_ram_gib=q.host_ram_gib)
            c.q = q
        if not q.fits:
            if count_drops:
                self.drop(DROP_FIT)
            return None
        if q.wall_hours > self.deadline_h:
            if count_drops:
                self.drop(DROP_DEADLINE)
            return c if not count_drops else None
        return c

    def max_host_ram_gb(self, gpu: GPU, gpn: int) -> float:
        """Most host RAM any chassis + CPU for these GPUs can hold (offload must fit in it)."""
        key = (gpu.form_factor, gpn)
        if key not in self.ram_cap:
            best = 0.0
            for ch in sysmod.chassis_options(self.cat, gpu, gpn, self.d.site):
                for cpu in self.cat.platforms.cpus:
                    if cpu.segment == ch.cpu_segment:
                        best = max(best, cpu.max_memory_gb * min(ch.sockets, cpu.max_sockets))
            # No catalog chassis: a generic dual-socket server (12 TB = 2 x EPYC 9004 maximum).
            self.ram_cap[key] = best if best > 0 else 12_288.0
        return self.ram_cap[key]

    # -- pricing --
    def price_rough(self, c: Cand, w: sysmod.Workload) -> None:
        hit = costmod.cheapest_rate(self.cat, c.gpu.id, c.count, c.gpn)
        if hit:
            rate, inst, n = hit
            # The cloud volume is paid while the run lasts, as in cost.cloud_options.
            c.rent_run = rate * c.q.wall_hours + self.storage_usd_per_hour * max(c.q.wall_hours, 1.0)
            c.rent_label = (f"{c.count}x {c.gpu.name} on {inst.provider} "
                            f"({inst.instance_type}{f' x{n}' if n > 1 else ''})")
            c.rent_gpu_hour = inst.price_usd_per_hour / inst.gpu_count
            c.extra["idle"] = inst.gpu_count * n - c.count  # GPUs paid for but unused (smallest offer >= count)
            if inst.spot_usd_per_hour:
                c.spot_run = (inst.spot_usd_per_hour * n * c.q.wall_hours
                              * (1 + costmod._fac(self.cat, "spot_overhead_frac", 0.1)))
            r1 = costmod._fac(self.cat, "reserved_1y_discount", 0.3)
            res_rate = (inst.reserved_1y_usd_per_hour or inst.price_usd_per_hour * (1 - r1)) * n
            # One reservation holds 8,760 h a year; the year's runs may need several.
            c.reserved_year = (res_rate * HOURS_PER_YEAR * max(1, math.ceil(c.q.wall_hours * self.rpy / HOURS_PER_YEAR))
                               + self.storage_usd_per_hour * max(c.q.wall_hours, 1.0) * self.rpy)
            c.rent_total = min(c.rent_run * self.rpy, c.reserved_year) * self.y
        unit = c.gpu.price_used_usd if (self.d.used_hardware and c.gpu.price_used_usd) else c.gpu.price_new_usd
        pinned = bool(self.req.hardware and self.req.hardware.gpu)
        if unit and (self._buyable(c) or pinned):  # a pinned build is priced as asked
            # Epoch: GPUs are ~61 % of a GPU server's price (server_overhead_frac = non-GPU share).
            share = min(max(costmod._fac(self.cat, "server_overhead_frac", 0.39), 0.0), 0.9)
            c.capex = unit * c.count / (1 - share)
            c.buy_total = self._buy_total_rough(c)
        self._score(c)

    def _buyable(self, c: Cand) -> bool:
        """SXM / OAM GPUs are sold on 4- or 8-GPU baseboards, not one at a time."""
        if c.gpu.form_factor not in ("sxm", "oam"):
            return True
        sizes = {ch.max_gpus for ch in self.cat.platforms.chassis if ch.gpu_form == c.gpu.form_factor}
        return not sizes or c.gpn in sizes

    def _buy_total_rough(self, c: Cand) -> float:
        assert c.capex is not None
        resid: float = (costmod._fac(self.cat, "residual_value_frac", 0.2)
                 ** (self.y / costmod._fac(self.cat, "depreciation_years", 5.0)))
        maint = costmod._fac(self.cat, "maintenance_frac_per_year", 0.1)
        kwh = (self.d.electricity_usd_per_kwh if self.d.electricity_usd_per_kwh is not None
               else costmod._fac(self.cat, "electricity_usd_per_kwh", 0.08))
        busy = costmod.busy_hours(self.req, c.q.gpu_hours, c.count)
        power = (0.25 * c.count * HOURS_PER_YEAR + 0.75 * busy) * c.gpu.tdp_w / 1000 * 1.4 * kwh
        return c.capex * (1 - resid) + self.y * (maint * c.capex + power)

    def _score(self, c: Cand) -> None:
        budget = self.d.budget_usd
        mode = self.d.mode
        opts: list[tuple[float, str]] = []
        # An owned build must fit the month's runs into the month; renting can run them in parallel.
        keeps_up = c.q.wall_hours * self.req.schedule.runs_per_month <= HOURS_PER_MONTH
        if (mode in ("rent", "either") and c.rent_total is not None
                and (budget is None or c.rent_total / self.y <= budget)):
            opts.append((c.rent_total, "rent"))
        if (mode in ("buy", "either") and c.buy_total is not None and keeps_up
                and (budget is None or (c.capex or 0) <= budget)):
            # With the choice open, buying must be clearly cheaper to win (cost.BUY_MARGIN, the
            # verdict's own rule), so the ranking and the verdict agree.
            opts.append((c.buy_total / costmod.BUY_MARGIN if mode == "either" else c.buy_total, "buy"))
        if not opts:
            c.score = math.inf
            can_rent = mode in ("rent", "either") and c.rent_total is not None
            can_buy = mode in ("buy", "either") and c.buy_total is not None
            if can_rent or (can_buy and keeps_up):
                c.extra["drop"] = DROP_BUDGET  # a price exists and the schedule works: the budget stops it
            elif can_buy:
                c.extra["drop"] = DROP_CAPACITY
            else:
                c.extra["drop"] = DROP_PRICE
            return
        c.score, c.mode = min(opts)

    def exact(self, c: Cand, w: sysmod.Workload) -> None:
        """Replace the rough buy cost with the sized system's TCO."""
        if c.exact:
            return
        c.exact = True
        if c.capex is None:
            return
        build = sysmod.size_system(self.req, self.cat, c.gpu, c.gpn, c.nodes, w)
        parts = costmod.onprem_parts(self.req, self.cat, build)
        busy = costmod.busy_hours(self.req, c.q.gpu_hours, c.count)
        c.capex = build.capex_usd
        c.buy_total = parts.total(self.y, busy)
        c.extra["build"] = build
        self._score(c)

    def effective(self, c: Cand) -> float:
        """The cost the cheapest objective compares: horizon cost (``score``), with the non-CUDA
        software-stack handicap -- porting kernels such as FlashAttention and fused optimizers, less
        mature distributed training (SemiAnalysis, "MI300X vs H100 vs H200 Benchmark Part 1:
        Training", Dec 2024, found MI300X training far below its paper advantage). A judgement,
        stated in the rocm-caveats pitfall."""
        return c.score * (1.0 if c.gpu.vendor == "nvidia" else 1.0 + NON_CUDA_HANDICAP)

    def key(self, c: Cand) -> tuple[float, ...]:
        """Order of the ranked list (alternatives); the winner is ``pick``."""
        if self.obj == "fastest":
            return (_sig(c.q.wall_hours), c.score)
        if self.obj == "perf-per-watt":
            return (_sig(c.energy_kwh), c.score)
        return (self.effective(c), c.q.wall_hours)

    def pick(self, ranked: list[Cand]) -> Cand:
        """The winner of a list sorted by ``key``. Cheapest: the simplest build -- fewest GPUs, then
        fewest nodes -- among those within SIMPLICITY_TOLERANCE of the lowest effective cost (a
        multi-GPU job costs engineering time the price does not show, so 1 GPU at $104 beats 8 at
        $100). Only a near-tie breaker: the pick never costs more than (1 + tolerance) x the
        cheapest, so a longer deadline -- which only adds candidates -- never makes the pick dearer
        than the shorter deadline's pick by more than the tolerance (tests/robustness)."""
        if self.obj != "cheapest" or not ranked:
            return ranked[0]
        floor = self.effective(ranked[0])
        near = [c for c in ranked if self.effective(c) <= floor * (1 + SIMPLICITY_TOLERANCE)]
        return min(near, key=lambda c: (c.count, c.nodes, self.effective(c), c.q.wall_hours))

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
        scan = _Scanner(self.req, self.cat)
        pinned = bool(self.req.hardware and self.req.hardware.gpu)
        cands = self.enumerate(scan)
        w0 = self.workload0(scan)
        self.storage_usd_per_hour = (sysmod.storage_needed_tb(w0)
                                     * costmod._fac(self.cat, "cloud_storage_usd_per_tb_month", 23.0)
                                     / HOURS_PER_MONTH)
        for c in cands:
            self.price_rough(c, w0)
        if pinned:
            ok = cands
        else:
            ok = []
            for c in cands:
                if math.isinf(c.score):
                    self.drop(c.extra.get("drop", DROP_PRICE))
                elif c.gpu.segment == "consumer" and c.nodes > 1:
                    self.drop(DROP_CONSUMER_MULTI)
                else:
                    ok.append(c)
        if not ok:
            return self.nothing(scan)
        ok.sort(key=self.key)
        # Exact ranking for the top few and the best of each GPU type.
        best_per_type: dict[str, Cand] = {}
        for c in ok:
            best_per_type.setdefault(c.gpu.id, c)
        shortlist = ok[:EXACT_TOP] + [c for c in best_per_type.values() if c not in ok[:EXACT_TOP]][:EXACT_TOP]
        for c in shortlist:
            self.exact(c, w0)
        shortlist = [c for c in shortlist if pinned or not math.isinf(c.score)]
        if not shortlist:
            return self.nothing(scan)
        shortlist.sort(key=self.key)
        win = self.pick(shortlist)
        shortlist.remove(win)
        shortlist.insert(0, win)
        return self.finish(scan, win, shortlist)

    def finish(self, scan: _Scanner, win: Cand, ranked: list[Cand]) -> Recommendation:
        est = scan.full(win.gpu, win.count, win.gpn)
        w = sysmod.workload_from(self.req, self.cat, est)
        build = sysmod.size_system(self.req, self.cat, win.gpu, win.gpn, win.nodes, w)
        wall = est.time.wall_hours if est.feasible else win.q.wall_hours
        gph = est.time.gpu_hours if est.feasible else win.q.gpu_hours
        cloud = costmod.cloud_options(self.req, self.cat, win.gpu.id, win.count, win.gpn, wall,
                                      storage_tb=build.storage_needed_tb,
                                      split=costmod.SplitJob.from_estimate(est, self.req.training.precision))
        pinned = bool(self.req.hardware and self.req.hardware.gpu)
        renting = win.mode == "rent" and win.rent_run is not None and not (pinned and self.d.mode == "buy")
        buy_build: Build | None = build
        if renting:
            # The answer is a cloud instance; the on-prem side is the best build one could buy instead.
            label = (f"{cloud[0].provider} {cloud[0].instance}"
                     + (f" x{cloud[0].instances}" if cloud[0].instances > 1 else "") if cloud else win.rent_label)
            if cloud and _reserved_wins(cloud[0]):
                label += ", 1-year reservation"
            if cloud and cloud[0].note:
                label += f" ({cloud[0].note})"
            buy = self._best_buy(ranked)
            rent_ref = costmod.RentRef(
                usd_per_run=cloud[0].cost_per_run_usd if cloud else (win.rent_run or 0.0), label=win.rent_label,
                usd_per_gpu_hour=win.rent_gpu_hour, reserved_usd_per_year=win.reserved_year,
                spot_usd_per_run=win.spot_run)
            if buy is not None:
                bw = self.workload0(scan)
                buy_build = (buy.extra.get("build")
                             or sysmod.size_system(self.req, self.cat, buy.gpu, buy.gpn, buy.nodes, bw))
                analysis = costmod.analyse(self.req, self.cat, buy_build, buy.q.gpu_hours, cloud, rent_ref,
                                           **self._decided(win, buy))
            else:
                buy_build = None
                why = "no build you could buy fits" + (" the budget" if self.d.budget_usd else "") + \
                    (f", the {self.d.site} site" if self.d.site not in ("any", "cloud") else "") + " and the schedule"
                analysis = costmod.analyse(self.req, self.cat, None, gph, cloud, rent_ref, gpu_priced=False,
                                           no_buy_reason=why)
            if analysis.verdict == "rent":
                build = build.model_copy(update={"bom": [], "capex_usd": 0.0, "site": f"cloud: {label}"})
        else:
            ref = self._best_rent(win, ranked)
            if ref is not None and ref is not win:
                extra = costmod.cloud_options(self.req, self.cat, ref.gpu.id, ref.count, ref.gpn, ref.q.wall_hours,
                                              storage_tb=build.storage_needed_tb)
                cloud = cloud + extra[:1]
            rent_ref = None
            if ref is not None:
                own = cloud[0] if (ref is win and cloud) else None
                rent_ref = costmod.RentRef(
                    usd_per_run=own.cost_per_run_usd if own else (ref.rent_run or 0.0), label=ref.rent_label,
                    usd_per_gpu_hour=ref.rent_gpu_hour, reserved_usd_per_year=ref.reserved_year,
                    spot_usd_per_run=ref.spot_run)
            analysis = costmod.analyse(self.req, self.cat, build, gph, cloud, rent_ref,
                                       gpu_priced=win.capex is not None,
                                       **(self._decided(win, ref) if ref is not None else {}))
        alts = self.alternatives(win, ranked)
        ctx = pitmod.Context(req=self.req, cat=self.cat, gpu=win.gpu, build=build, est=est, cost=analysis)
        pits = pitmod.check(ctx)
        per_run: float | None
        if analysis.verdict == "rent" and cloud:
            # What renting costs the way the ranking priced it: on demand, or a reservation when
            # the year's runs fill it well enough to be cheaper.
            o = cloud[0]
            per_run = (o.cost_per_run_reserved_usd if _reserved_wins(o) and o.cost_per_run_reserved_usd is not None
                       else o.cost_per_run_usd)
        elif analysis.onprem is not None and not renting:
            per_run = analysis.onprem.total_usd / max(self.rpy * self.y, 1e-9)
        else:
            per_run = self.per_run(win)
        if not math.isfinite(per_run):  # a pinned GPU with neither a price nor a cloud offer
            per_run = None
        return Recommendation(
            objective=self.obj,  # type: ignore[arg-type]
            found=True, build=build, buy_build=buy_build if analysis.onprem is not None else None, estimate=est,
            cost_per_run_usd=round(per_run, 2) if per_run is not None else None,
            alternatives=alts, cost=analysis, pitfalls=pits, candidates_considered=self.considered,
            dropped=dict(sorted(self.dropped.items(), key=lambda kv: -kv[1])),
            suggestions=self.suggestions(scan) if not est.feasible else [],
        )

    def _best_buy(self, ranked: list[Cand]) -> Cand | None:
        """The build to own instead of renting: cheapest over the horizon as the ranking counts it."""
        ok = [c for c in ranked if c.buy_total is not None and c.exact and "build" in c.extra
              and c.q.wall_hours * self.req.schedule.runs_per_month <= HOURS_PER_MONTH
              and (self.d.budget_usd is None or (c.capex or 0) <= self.d.budget_usd)]
        return min(ok, key=lambda c: (c.buy_total * self._stack(c), c.q.wall_hours)) if ok else None  # type: ignore[operator]

    def _stack(self, c: Cand) -> float:
        return 1.0 if c.gpu.vendor == "nvidia" else 1.0 + NON_CUDA_HANDICAP

    def _decided(self, win: Cand, other: Cand) -> _Decided:
        """The ranking's rent-or-buy choice for cost.analyse (cheapest objective, mode either), and why
        it may differ from the plain dollar comparison there (``other`` is the other side's build)."""
        if self.obj != "cheapest" or self.d.mode != "either" or win.mode not in ("rent", "buy"):
            return {}
        why = ""
        if win.mode == "rent" and self._stack(other) > 1.0:
            why = (f"{other.gpu.name}'s non-CUDA software stack is counted {NON_CUDA_HANDICAP:.0%} dearer "
                   "(kernel porting, less mature distributed training)")
        elif win.count < other.count:
            how = "rented" if win.mode == "rent" else "owned"
            why = (f"the {how} {win.count}-GPU build is simpler than the {other.count}-GPU alternative and within "
                   f"{SIMPLICITY_TOLERANCE:.0%} of the cheapest")
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
                                   reason=self.reason(c, win, wp)))
            if len(out) >= N_ALTERNATIVES:
                break
        return out

    def reason(self, c: Cand, win: Cand, win_run: float) -> str:
        t = c.q.wall_hours / win.q.wall_hours if win.q.wall_hours > 0 else 1.0
        speed = (f"{t:.1f}x slower" if t >= 1.05 else f"{1 / t:.1f}x faster" if t <= 0.95 else "about as fast")
        p = self.per_run(c)
        if win_run > 0:
            r = p / win_run
            if r <= 0.97:
                money = f"{1 - r:.0%} cheaper per run"
            elif r < 1.03:
                money = "about the same cost per run"
            elif r < 1.95:
                money = f"{r - 1:.0%} dearer per run"
            else:
                money = f"{r:.1f}x the cost per run"
        else:
            money = "cost unknown"
        how = "rented" if c.mode == "rent" else "owned"
        if c.mode == "rent" and c.extra.get("idle", 0) > 0:
            how = f"rented: smallest offer has {c.count + c.extra['idle']} GPUs, {c.extra['idle']} idle"
        tail = ""
        if self.obj == "perf-per-watt":
            tail = f", {c.energy_kwh:,.0f} kWh per run"
        if self.obj == "cheapest" and c.score > win.score and p < win_run:
            tail += ", but dearer over the horizon"
        return f"{speed}, {money} ({how}, {c.count}x{tail})"

    # -- nothing fits --
    def nothing(self, scan: _Scanner) -> Recommendation:
        sugg = self.suggestions(scan)
        pits = pitmod.check_nothing_fits(self.req, self.cat, sugg)
        return Recommendation(objective=self.obj, found=False, pitfalls=pits,  # type: ignore[arg-type]
                              candidates_considered=self.considered,
                              dropped=dict(sorted(self.dropped.items(), key=lambda kv: -kv[1])), suggestions=sugg)

    def suggestions(self, scan: _Scanner) -> list[str]:
        out: list[str] = []
        req = self.req
        gpus = [g for g in self.cat.gpus if not self.excluded(g)]
        # 1. More GPUs / a longer deadline: the fastest fitting multi-node build of a big GPU.
        big = sorted(gpus, key=lambda g: -g.memory_gib)[:3]
        for g in big:
            gpn = _gpn_options(g)[-1]
            for nodes in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024):
                try:
                    q = scan.quick(g, gpn * nodes, gpn)
                except (GpuwizError, *_NUMERIC_ERRORS):
                    break
                if q.fits and math.isfinite(q.wall_hours):
                    if q.wall_hours > self.deadline_h:
                        out.append(f"{nodes} node(s) of {gpn}x {g.name} would fit but take {q.wall_hours / 24:,.1f} "
                                   f"days: a deadline of {math.ceil(q.wall_hours / 24)} days, or more nodes")
                    else:
                        out.append(f"{nodes} node(s) of {gpn}x {g.name} ({nodes * gpn} GPUs) would fit and finish in "
                                   f"{q.wall_hours:,.1f} h")
                    break
            if out:
                break
        # 2. Cheaper methods and offload.
        variants: list[tuple[str, dict[str, Any]]] = []
        if req.training.method in ("full", "pretrain"):
            variants += [("LoRA", {"method": "lora"}), ("QLoRA", {"method": "qlora"})]
        if req.training.method == "lora":
            variants.append(("QLoRA", {"method": "qlora"}))
        par = req.training.parallel
        if not par or (par.offload or "none") == "none":
            variants.append(("CPU offload of the optimizer", {"parallel": {"zero_stage": 3, "offload": "optimizer"}}))
        for label, upd in variants:
            hit = self._smallest_fit(req, upd, gpus)
            if hit:
                g, n, h = hit
                out.append(f"{label} would fit on {n}x {g.id} ({h:,.1f} h per run)")
        if self.dropped.get(DROP_BUDGET) and self.d.budget_usd:
            out.append(f"{self.dropped[DROP_BUDGET]} fitting build(s) exceed the ${self.d.budget_usd:,.0f} budget: "
                       "raise it or rent")
        if self.dropped.get(DROP_EXPORT):
            out.append(f"{self.dropped[DROP_EXPORT]} GPU type(s) are export-restricted for {self.d.country}: use "
                       "in-market GPUs or an in-country cloud")
        return out

    def _smallest_fit(self, req: Requirements, upd: dict[str, Any], gpus: list[GPU]) -> tuple[GPU, int, float] | None:
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
        for g in gpus:
            for gpn in _gpn_options(g):
                try:
                    q = scan.quick(g, gpn, gpn)
                except (GpuwizError, *_NUMERIC_ERRORS):
                    break
                if q.fits and math.isfinite(q.wall_hours):
                    price = (g.price_new_usd or 1e9) * gpn
                    if best is None or price < best[0]:
                        best = (price, g, gpn, q.wall_hours)
                    break
        return (best[1], best[2], best[3]) if best else None


def _reserved_wins(o: Any) -> bool:
    """A 1-year reservation is cheaper per run than on-demand for this cloud option."""
    return o.cost_per_run_reserved_usd is not None and o.cost_per_run_reserved_usd < o.cost_per_run_usd


def _sig(x: float) -> float:
    """Round to 2 significant digits so near-ties fall through to cost."""
    if x <= 0 or not math.isfinite(x):
        return x
    scale = 10.0 ** (math.floor(math.log10(x)) - 1)
    return round(x / scale) * scale
