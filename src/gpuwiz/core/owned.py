"""Hardware the team already owns (``have:``): an option beside buying and renting, at its marginal cost.

Owned GPUs cost no purchase; a run costs the energy it draws: the build's sustained power (core.system)
x the run's hours x PUE x the electricity price (the same facility figures the on-prem TCO uses). Space
and staff are already paid for the machine, so they are not charged to the run. Each owned option
goes first among the alternatives; one that does not fit or misses the deadline says so as a pitfall.
"""

from __future__ import annotations

from gpuwiz.core import cost as costmod
from gpuwiz.core import system as sysmod
from gpuwiz.core.catalog import Catalog
from gpuwiz.core.errors import GpuwizError
from gpuwiz.core.estimate import estimate
from gpuwiz.core.models import Alternative, HaveSpec, Pitfall, Recommendation, Requirements

SOURCE = "gpuwiz estimate for the owned hardware (have:); power from core.system, PUE and $/kWh from the catalog"


def run_energy_usd(req: Requirements, cat: Catalog, sustained_w_per_node: int, nodes: int, hours: float) -> float:
    d = req.deployment
    office = d.site in ("desk", "office", "server-room", "any")
    pue = d.pue or (costmod._fac(cat, "pue_office", 1.6) if office else costmod._fac(cat, "pue", 1.25))
    kwh = d.electricity_usd_per_kwh if d.electricity_usd_per_kwh is not None else costmod._fac(
        cat, "electricity_usd_per_kwh", 0.08)
    return sustained_w_per_node / 1000.0 * nodes * hours * pue * kwh


def _option(req: Requirements, cat: Catalog, have: HaveSpec, rec: Recommendation) -> Alternative | Pitfall:
    g = cat.gpu(have.gpu)
    gpn = max(1, min(have.gpus_per_node or min(have.count, g.max_per_node), have.count))
    owned = f"{have.count}x {g.name} (owned)"
    try:
        est = estimate(req, cat, gpu=g.id, count=have.count, gpus_per_node=gpn)
    except GpuwizError as exc:
        return Pitfall(id="owned-no-estimate", severity="info", message=f"{owned}: {exc.problems[0]}", source=SOURCE)
    if not est.feasible:
        why = est.problems[0] if est.problems else "the model does not fit"
        return Pitfall(id="owned-does-not-fit", severity="info", message=f"{owned}: {why}", source=SOURCE)
    build = sysmod.size_system(req, cat, g, est.plan.gpus_per_node, est.plan.nodes,
                               sysmod.workload_from(req, cat, est))
    hours = est.time.wall_hours
    usd = run_energy_usd(req, cat, build.power_w, est.plan.nodes, hours)
    parts = [f"already owned: energy only ({build.power_w * est.plan.nodes / 1000:.1f} kW x {hours:,.1f} h), "
             "no purchase"]
    deadline_h = req.schedule.deadline_days * 24.0 if req.schedule.deadline_days else None
    if deadline_h is not None and hours > deadline_h:
        parts.append(f"misses the {req.schedule.deadline_days:g}-day deadline")
    if rec.cost_per_run_usd:
        ratio = usd / rec.cost_per_run_usd
        parts.append(f"{1 - ratio:.0%} cheaper per run than the pick" if ratio < 1 else
                     f"{ratio:.1f}x the pick's cost per run")
    if rec.estimate is not None and rec.estimate.time.wall_hours > 0:
        t = hours / rec.estimate.time.wall_hours
        parts.append(f"{t:.1f}x the pick's time" if t >= 1.05 else f"{1 / t:.1f}x faster than the pick"
                     if t <= 0.95 else "about as fast as the pick")
    return Alternative(gpu=g.id, gpu_name=g.name, count=have.count, nodes=est.plan.nodes,
                       wall_hours=round(hours, 3), cost_per_run_usd=round(usd, 2), reason="; ".join(parts))


def with_owned(req: Requirements, cat: Catalog, rec: Recommendation) -> Recommendation:
    """``rec`` with the owned hardware first among the alternatives (or a pitfall when it cannot run)."""
    if not req.have:
        return rec
    alts: list[Alternative] = []
    pits: list[Pitfall] = []
    for have in req.have:
        opt = _option(req, cat, have, rec)
        if isinstance(opt, Alternative):
            alts.append(opt)
        else:
            pits.append(opt)
    return rec.model_copy(update={"alternatives": alts + list(rec.alternatives), "pitfalls": list(rec.pitfalls) + pits})
