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
from gpuwiz.core.models import Alternative, Estimate, HaveSpec, Pitfall, Recommendation, Requirements
from gpuwiz.core.units import HOURS_PER_MONTH
from gpuwiz.core.whatif import fmt_hours, fmt_money
from gpuwiz.i18n import _

SOURCE = "gpuwiz estimate for the owned hardware (have:); power from core.system, PUE and $/kWh from the catalog"


def run_energy_usd(req: Requirements, cat: Catalog, sustained_w_per_node: int, nodes: int, hours: float) -> float:
    d = req.deployment
    office = d.site in ("desk", "office", "server-room", "any")
    pue = d.pue or (cat.fac("pue_office") if office else cat.fac("pue"))  # keys the loader guarantees
    kwh = d.electricity_usd_per_kwh if d.electricity_usd_per_kwh is not None else cat.fac("electricity_usd_per_kwh")
    return sustained_w_per_node / 1000.0 * nodes * hours * pue * kwh


def _option(req: Requirements, cat: Catalog, have: HaveSpec, rec: Recommendation) -> tuple[Alternative, bool] | Pitfall:
    """The owned hardware as an alternative, and whether it does the job -- ends with slack before the deadline and
    keeps up with the month's runs (``fits_schedule``) -- or a pitfall when it cannot run."""
    g = cat.gpu(have.gpu)
    gpn = max(1, min(have.gpus_per_node or min(have.count, g.max_per_node), have.count))
    owned = _("{n}x {gpu} (owned)").format(n=have.count, gpu=g.name)
    try:
        est = estimate(req, cat, gpu=g.id, count=have.count, gpus_per_node=gpn)
    except GpuwizError as exc:
        return Pitfall(id="owned-no-estimate", severity="info", message=f"{owned}: {exc.problems[0]}", source=SOURCE)
    if not est.feasible:
        why = est.problems[0] if est.problems else _("the model does not fit")
        return Pitfall(id="owned-does-not-fit", severity="info", message=f"{owned}: {why}", source=SOURCE)
    build = sysmod.size_system(req, cat, g, est.plan.gpus_per_node, est.plan.nodes,
                               sysmod.workload_from(req, cat, est))
    hours = est.time.wall_hours
    usd = run_energy_usd(req, cat, build.power_w, est.plan.nodes, hours)
    parts = [_("already owned: energy only ({kw:.1f} kW x {h:,.1f} h), no purchase").format(
        kw=build.power_w * est.plan.nodes / 1000, h=hours)]
    deadline_h = req.schedule.deadline_days * 24.0 if req.schedule.deadline_days else None
    if deadline_h is not None and hours > deadline_h:
        parts.append(_("misses the {days:g}-day deadline").format(days=req.schedule.deadline_days))
    if rec.cost_per_run_usd:
        ratio = usd / rec.cost_per_run_usd
        parts.append(_("{pct:.0%} cheaper per run than the pick").format(pct=1 - ratio) if ratio < 1 else
                     _("{x:.1f}x the pick's cost per run").format(x=ratio))
    if rec.estimate is not None and rec.estimate.time.wall_hours > 0:
        t = hours / rec.estimate.time.wall_hours
        parts.append(_("{x:.1f}x the pick's time").format(x=t) if t >= 1.05 else
                     _("{x:.1f}x faster than the pick").format(x=1 / t) if t <= 0.95 else
                     _("about as fast as the pick"))
    alt = Alternative(gpu=g.id, gpu_name=g.name, count=have.count, nodes=est.plan.nodes,
                      wall_hours=round(hours, 3), cost_per_run_usd=round(usd, 2), reason="; ".join(parts))
    return alt, fits_schedule(req, est)


def fits_schedule(req: Requirements, est: Estimate) -> bool:
    """The owned build does the job: its run (the P90 end of its range too) ends within the deadline, the run
    itself within SLACK_FRAC of it -- the pick's rule (recommend.tight), with no rented wait -- and the month's runs
    fit in the month."""
    from gpuwiz.core.recommend import SLACK_FRAC, deadline_hours, late

    deadline_h = deadline_hours(req)
    hi = est.time.wall_hours_range.high if est.time.wall_hours_range is not None else None
    return (not late(est.time.wall_hours, hi, 0.0, SLACK_FRAC * deadline_h, deadline_h)
            and est.time.wall_hours * req.schedule.runs_per_month <= HOURS_PER_MONTH)


def with_owned(req: Requirements, cat: Catalog, rec: Recommendation) -> Recommendation:
    """``rec`` with the owned hardware first among the alternatives (or a pitfall when it cannot run); when an owned
    build does the job (``fits_schedule``), the verdict says so first: the answer below it is for what to rent or
    buy beyond it (a team with 8x A100 80GB was told to rent 8x A100 40GB at $259 a run, its own cards taking as long
    for $43 of energy)."""
    if not req.have:
        return rec
    alts: list[Alternative] = []
    pits: list[Pitfall] = []
    doing: Alternative | None = None
    for have in req.have:
        opt = _option(req, cat, have, rec)
        if isinstance(opt, Pitfall):
            pits.append(opt)
            continue
        alt, does = opt
        alts.append(alt)
        if does and (doing is None or alt.cost_per_run_usd < doing.cost_per_run_usd):
            doing = alt
    update: dict[str, object] = {"alternatives": alts + list(rec.alternatives), "pitfalls": list(rec.pitfalls) + pits}
    if doing is not None and rec.cost is not None:
        lead = _("the {n}x {gpu} you own does this run in {h} for {usd} of energy: use it; to add capacity, ").format(
            n=doing.count, gpu=doing.gpu_name, h=fmt_hours(doing.wall_hours),
            usd=fmt_money(doing.cost_per_run_usd, rec.currency))
        update["cost"] = rec.cost.model_copy(update={"verdict_reason": lead + rec.cost.verdict_reason})
    return rec.model_copy(update=update)
