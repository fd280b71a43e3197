"""Hardware the team already owns (``have:``): an option beside buying and renting, at its marginal cost.

Owned GPUs cost no purchase; a run costs the energy it draws: the build's sustained power (core.system)
x the run's hours x PUE x the electricity price (the same facility figures the on-prem TCO uses). Space
and staff are already paid for the machine, so they are not charged to the run. Each owned option
goes first among the alternatives; one that does not fit or misses the deadline says so as a pitfall.
"""

from __future__ import annotations

from gpuwiz.core import system as sysmod
from gpuwiz.core.catalog import Catalog
from gpuwiz.core.errors import GpuwizError
from gpuwiz.core.estimate import estimate
from gpuwiz.core.models import (
    Alternative,
    Estimate,
    HaveSpec,
    OwnedPick,
    ParetoPoint,
    Pitfall,
    Recommendation,
    Requirements,
)
from gpuwiz.core.units import HOURS_PER_MONTH
from gpuwiz.core.whatif import fmt_hours
from gpuwiz.i18n import _

SOURCE = "gpuwiz estimate for the owned hardware (have:); power from core.system, PUE and $/kWh from the catalog"


def run_energy_usd(req: Requirements, cat: Catalog, sustained_w_per_node: int, nodes: int, hours: float) -> float:
    d = req.deployment
    office = d.site in ("desk", "office", "server-room", "any")
    pue = d.pue or (cat.fac("pue_office") if office else cat.fac("pue"))  # keys the loader guarantees
    kwh = d.electricity_usd_per_kwh if d.electricity_usd_per_kwh is not None else cat.fac("electricity_usd_per_kwh")
    return sustained_w_per_node / 1000.0 * nodes * hours * pue * kwh


def _slices(count: int, gpn: int) -> list[int]:
    """The GPU counts of an owned fleet a run may take, smallest first: one node (or the whole fleet when it is
    smaller), then whole nodes doubling, then the whole fleet."""
    node = min(gpn, count)
    out = [node]
    k = 2
    while k * node < count:
        out.append(k * node)
        k *= 2
    if count > node:
        out.append(count)
    return out


def _over_batch(est: Estimate) -> bool:
    """The plan trains more samples a step than the run may (a stated batch its replicas cannot split, or a default
    grown past what such a run uses: estimate.batch_most): more GPUs would make it another run."""
    p = est.plan
    return bool(p.batch_limit) and p.global_batch > p.batch_limit


def _sized(req: Requirements, cat: Catalog, have: HaveSpec, gpn: int) -> Estimate | str:
    """The estimate of the part of the owned fleet this run takes, or why none can run it.

    A job runs on a whole node of the fleet (the norm for a training job: DDP or FSDP inside the node), on more
    whole nodes where one does not fit it or, under the cheapest or perf-per-watt objective, does not end with
    slack before the deadline (``fits_schedule``), and on no more than help: the scan stops where more nodes gain
    under 3 % or would train a bigger batch than the run's. Under the fastest objective it takes as many as help.
    A fleet of 100,000 H100 was costed whole for a 7B LoRA ("<1 min for $2.81 of energy", 95,550 kW) -- a plan
    with 12,500x the replicas its batch of 64 has samples."""
    objective = req.deployment.objective
    best: Estimate | None = None
    why = ""
    for n in _slices(have.count, gpn):
        est = estimate(req, cat, gpu=have.gpu, count=n, gpus_per_node=min(gpn, n))
        if not est.feasible:
            why = est.problems[0] if est.problems else _("the model does not fit")
            continue
        if _over_batch(est) or (best is not None and est.time.wall_hours > 0.97 * best.time.wall_hours):
            break
        best = est
        if objective != "fastest" and fits_schedule(req, est):
            break
    if best is None and not why:  # the first node's plan already outgrows the batch: fewer of its GPUs
        n = min(gpn, have.count) // 2
        while n >= 1 and best is None:
            est = estimate(req, cat, gpu=have.gpu, count=n, gpus_per_node=n)
            if est.feasible and not _over_batch(est):
                best = est
            n //= 2
        why = _("no part of it trains the run's batch")
    return best if best is not None else why


def _option(req: Requirements, cat: Catalog, have: HaveSpec,
            rec: Recommendation) -> tuple[Alternative, Estimate, bool] | Pitfall:
    """The owned hardware (the part of it the run takes: ``_sized``) as an alternative, its estimate, and whether it
    does the job -- ends with slack before the deadline and keeps up with the month's runs (``fits_schedule``) -- or
    a pitfall when it cannot run."""
    g = cat.gpu(have.gpu)
    gpn = max(1, min(have.gpus_per_node or min(have.count, g.max_per_node), have.count))
    owned = _("{n}x {gpu} (owned)").format(n=have.count, gpu=g.name)
    try:
        got = _sized(req, cat, have, gpn)
    except GpuwizError as exc:
        return Pitfall(id="owned-no-estimate", severity="info", message=f"{owned}: {exc.problems[0]}", source=SOURCE)
    if isinstance(got, str):
        return Pitfall(id="owned-does-not-fit", severity="info", message=f"{owned}: {got}", source=SOURCE)
    est = got
    build = sysmod.size_system(req, cat, g, est.plan.gpus_per_node, est.plan.nodes,
                               sysmod.workload_from(req, cat, est))
    hours = est.time.wall_hours
    usd = run_energy_usd(req, cat, build.power_w, est.plan.nodes, hours)
    parts = [_("already owned: energy only ({kw:,.1f} kW for {h}), no purchase").format(
        kw=build.power_w * est.plan.nodes / 1000, h=fmt_hours(hours))]
    if est.plan.gpus < have.count:
        parts.append(_("{n} of the {total} you own").format(n=est.plan.gpus, total=have.count))
    deadline_h = req.schedule.deadline_days * 24.0 if req.schedule.deadline_days else None
    if deadline_h is not None and hours > deadline_h:
        parts.append(_("misses the {days:g}-day deadline").format(days=req.schedule.deadline_days))
    if rec.cost_per_run_usd:
        ratio = usd / rec.cost_per_run_usd
        parts.append(_("{pct:.0%} cheaper per run than the pick").format(pct=min(1 - ratio, 0.99)) if ratio < 1 else
                     _("{x:,.1f}x the pick's cost per run").format(x=ratio))
    if rec.estimate is not None and rec.estimate.time.wall_hours > 0:
        t = hours / rec.estimate.time.wall_hours
        parts.append(_("{x:,.1f}x the pick's time").format(x=t) if t >= 1.05 else
                     _("{x:,.1f}x faster than the pick").format(x=1 / t) if t <= 0.95 else
                     _("about as fast as the pick"))
    alt = Alternative(gpu=g.id, gpu_name=g.name, count=est.plan.gpus, nodes=est.plan.nodes,
                      wall_hours=round(hours, 3), cost_per_run_usd=round(usd, 2), reason="; ".join(parts))
    return alt, est, fits_schedule(req, est)


def _late(req: Requirements, est: Estimate) -> bool:
    """The owned run may miss the deadline: past its slack, or the P90 end of its range past it (recommend.late)."""
    from gpuwiz.core.recommend import SLACK_FRAC, deadline_hours, late

    deadline_h = deadline_hours(req)
    hi = est.time.wall_hours_range.high if est.time.wall_hours_range is not None else None
    return late(est.time.wall_hours, hi, 0.0, SLACK_FRAC * deadline_h, deadline_h)


def fits_schedule(req: Requirements, est: Estimate) -> bool:
    """The owned build does the job: its run (the P90 end of its range too) ends within the deadline, the run
    itself within SLACK_FRAC of it -- the pick's rule (recommend.tight), with no rented wait -- and the month's runs
    fit in the month."""
    return not _late(req, est) and est.time.wall_hours * req.schedule.runs_per_month <= HOURS_PER_MONTH


def with_owned(req: Requirements, cat: Catalog, rec: Recommendation) -> Recommendation:
    """``rec`` with the owned hardware first among the alternatives (or a pitfall when it cannot run); when an owned
    build does the job (``fits_schedule``), ``owned_pick`` says which (the cheapest per run of those that do): the
    verdict is to use it, and the answer's build and rent-vs-buy verdict are for adding capacity (a team with 8x
    A100 80GB was told to rent 8x A100 40GB at $259 a run, its own cards taking as long for $43 of energy)."""
    if not req.have:
        return rec
    alts: list[Alternative] = []
    pits: list[Pitfall] = []
    owned_points: list[ParetoPoint] = []
    doing: OwnedPick | None = None
    for have in req.have:
        opt = _option(req, cat, have, rec)
        if isinstance(opt, Pitfall):
            pits.append(opt)
            continue
        alt, est, does = opt
        alts.append(alt)
        owned_points.append(ParetoPoint(gpu=alt.gpu, count=alt.count, nodes=alt.nodes, wall_hours=alt.wall_hours,
                                        cost_per_run_usd=alt.cost_per_run_usd, rented=False, late=_late(req, est),
                                        owned=True))
        if does and (doing is None or alt.cost_per_run_usd < doing.energy_usd):
            doing = OwnedPick(gpu=alt.gpu, gpu_name=alt.gpu_name, count=alt.count, owned=have.count, nodes=alt.nodes,
                              gpus_per_node=est.plan.gpus_per_node, wall_hours=alt.wall_hours,
                              energy_usd=alt.cost_per_run_usd)
    update: dict[str, object] = {"alternatives": alts + list(rec.alternatives), "pitfalls": list(rec.pitfalls) + pits,
                                 "pareto": _front_with_owned(rec, owned_points)}
    if doing is not None:
        update["owned_pick"] = doing
    return rec.model_copy(update=update)


def _front_with_owned(rec: Recommendation, owned: list[ParetoPoint]) -> list[ParetoPoint]:
    """The time / cost front with the owned builds beside it, in run-time order, at their cost per run (the energy
    alone: a sunk cost, so they stand beside the front rather than on it -- they dominate nothing). The same shape
    bought leaves it unless it is the pick: the team has it (it read $3,924 a run beside the alternatives' $281
    of energy for the same four RTX PRO 6000)."""
    if not owned or not rec.pareto:
        return list(rec.pareto)
    b = rec.build
    pick = (b.gpu, b.gpus_per_node * b.nodes, b.nodes) if b is not None and not b.rented else None
    mine = {(p.gpu, p.count, p.nodes) for p in owned}
    kept = [p for p in rec.pareto if p.rented or (p.gpu, p.count, p.nodes) not in mine
            or (p.gpu, p.count, p.nodes) == pick]
    return sorted(kept + owned, key=lambda p: (p.wall_hours, p.owned))
