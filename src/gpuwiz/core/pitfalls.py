"""Pitfall rules: (requirements, build, estimate, cost) -> warnings that quote their numbers.

Each rule has an id, a severity (block / high / medium / info), a message built from the numbers
that triggered it, and its source. The rules and their sources come from
../shared/research/tco_and_pitfalls.md §B and §D (rule ids P01-P30 noted beside each rule).
``check(ctx)`` runs them all and returns the pitfalls sorted by severity.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from gpuwiz.core import market
from gpuwiz.core.catalog import GPU, Catalog
from gpuwiz.core.models import (
    SEVERITY_ORDER,
    Build,
    CostAnalysis,
    Estimate,
    Pitfall,
    Requirements,
    Severity,
    tier_bought_used,
)
from gpuwiz.core.ranges import FAMILY_LABEL
from gpuwiz.core.system import (
    DIMM_TOLERANCE,
    chassis_options,
    dedicated_circuit,
    office_circuit,
    packed_open_air,
    workload_from,
)
from gpuwiz.core.units import GB_PER_GIB, HOURS_PER_MONTH, HOURS_PER_YEAR
from gpuwiz.i18n import _


@dataclass(frozen=True)
class Context:
    req: Requirements
    cat: Catalog
    gpu: GPU | None = None
    build: Build | None = None
    est: Estimate | None = None
    cost: CostAnalysis | None = None
    found: bool = True
    buy_build: Build | None = None  # the build to own the verdict prices (beside a rented pick: another one)

    @property
    def buying(self) -> bool:
        if self.req.deployment.mode == "buy":
            return True
        return bool(self.cost and self.cost.verdict in ("buy", "hybrid"))

    @property
    def owns_hardware(self) -> bool:
        """Physical rules (power, heat, PSU, lanes) matter only for hardware the user will host."""
        if self.req.deployment.mode == "rent" or self.req.deployment.site == "cloud":
            return False
        return not (self.cost and self.cost.verdict == "rent")

    @property
    def renting(self) -> bool:
        if self.req.deployment.mode == "rent":
            return True
        return bool(self.cost and self.cost.verdict in ("rent", "hybrid"))

    @property
    def gpus_per_node(self) -> int:
        if self.build:
            return self.build.gpus_per_node
        return self.est.plan.gpus_per_node if self.est else 1

    @property
    def nodes(self) -> int:
        if self.build:
            return self.build.nodes
        return self.est.plan.nodes if self.est else 1

    def cash(self, usd: float | None, decimals: int = 0) -> str:
        """A USD amount as the messages show it: in the user's currency (``market.cash``)."""
        return self._cash(usd, decimals)

    @cached_property
    def _cash(self) -> Callable[..., str]:
        """``market.cash`` of this context's catalog and requirements, made once per context."""
        return market.cash(self.cat, self.req)

    def on_site(self, *kinds: str) -> bool:
        """Is the build going to live at one of these sites (user's choice, else inferred)?"""
        site = self.req.deployment.site
        if site != "any":
            return site in kinds
        return self.build is not None and self.build.site_kind in kinds  # system.place_kind's fact


RuleFn = Callable[[Context], tuple[Severity, str] | str | None]


@dataclass(frozen=True)
class Rule:
    id: str
    severity: Severity  # the usual severity; a rule may escalate or lower it
    source: str
    fn: RuleFn = field(repr=False)


RULES: list[Rule] = []


def rule(rid: str, severity: Severity, source: str) -> Callable[[RuleFn], RuleFn]:
    def deco(fn: RuleFn) -> RuleFn:
        RULES.append(Rule(rid, severity, source, fn))
        return fn
    return deco


def check(ctx: Context) -> list[Pitfall]:
    out: list[Pitfall] = []
    for r in RULES:
        res = r.fn(ctx)
        if res is None:
            continue
        sev, msg = (res if isinstance(res, tuple) else (r.severity, res))
        out.append(Pitfall(id=r.id, severity=sev, message=msg, source=r.source))
    out.sort(key=lambda p: SEVERITY_ORDER[p.severity])
    return out


def _is(gpu: GPU | None, *needles: str) -> bool:
    return bool(gpu) and any(n in gpu.id for n in needles)  # type: ignore[union-attr]


# ---- memory and sizing ---------------------------------------------------------------------------


@rule("vram-headroom", "medium", "HF Accelerate / EleutherAI (+20 %); pytorch/pytorch#107667 (CUDA context); "
      "PyTorch devlog 2026-06-01 (fragmentation)")
def _vram_headroom(c: Context) -> tuple[Severity, str] | None:  # P01
    if not c.est or not c.est.memory.fits:
        return None
    m = c.est.memory
    free = 1.0 - m.per_gpu_gib / m.capacity_gib if m.capacity_gib else 0.0
    # The plan already keeps deployment.headroom free (its micro-batch fills the card up to that limit);
    # warn only when it bites: under 15 % free, or within 5 % of the plan's limit with the slow (P90)
    # end of the memory estimate above the card -- then the plan may not fit and the user plans a
    # smaller micro-batch. Near the limit with the P90 inside the card, the warning changes nothing.
    near = m.per_gpu_gib > 0.95 * m.usable_gib and m.p90_exceeds_capacity
    if free >= 0.15 and not near:
        return None
    sev: Severity = "high" if free < 0.10 else "medium"
    p90 = (" " + _("The high end of the memory estimate (P90 {p90:.1f} GiB) is above the card.").format(
        p90=m.per_gpu_gib_range.high) if m.p90_exceeds_capacity and m.per_gpu_gib_range is not None else "")
    return sev, (_("Estimated {gib:.1f} GiB per GPU on a {cap:.0f} GiB card leaves {free:.0%} free.").format(
        gib=m.per_gpu_gib, cap=m.capacity_gib, free=free) + p90 + " "
        + _("CUDA context (0.3-1 GB per process), allocator fragmentation and activation spikes often take "
            "20 %+; if you estimate 40 GB, get the 80 GB card, or plan activation checkpointing / a smaller "
            "micro-batch."))


@rule("does-not-fit", "block",
      "ZeRO (Rajbhandari et al. 2019, 16 B/param); ml-engineering training/performance (18 B/param)")
def _does_not_fit(c: Context) -> str | None:  # P02
    if c.est is None or c.est.feasible:
        return None
    m = c.est.memory
    why = "; ".join(c.est.problems[:2])
    head = _("Needs {gib:.1f} GiB per GPU but {n} x {gpu} give {usable:.1f} GiB usable each").format(
        gib=m.per_gpu_gib, n=c.est.plan.gpus, gpu=c.est.gpu_name, usable=m.usable_gib)
    return (head + (_(" ({why})").format(why=why) if why else "")
            + _(". Add GPUs, shard with ZeRO-3/FSDP, offload, or fine-tune with LoRA/QLoRA."))


@rule("legacy-gpu", "high", "ml-engineering; Dettmers GPU guide (via ukcamo) [weak]")
def _legacy(c: Context) -> str | None:  # P03
    g = c.gpu
    if g is None:
        return None
    params_b = (c.est.model.params_total / 1e9) if c.est else (c.req.model.params_b or 0)
    old = g.architecture.lower() in ("maxwell", "pascal", "kepler")
    small = g.memory_gib < 12 and params_b >= 1
    if not (old or small):
        return None
    what = (_("{arch} has no tensor cores").format(arch=g.architecture.title()) if old
            else _("{gib:g} GiB is too little for a {b:.1f}B model").format(gib=g.memory_gib, b=params_b))
    return _("{gpu}: {what}; modern training on it is impractical.").format(gpu=g.name, what=what)


def _staging_hours(c: Context) -> float:
    """Hours a rented run spends before it trains (provisioning, image pull, dataset staging): part of its time to a
    result, which the deadline rules weigh (0 for an owned build: its data is on its own disks)."""
    return c.cost.rent_offer.overhead_hours if c.renting and c.cost and c.cost.rent_offer else 0.0


def _staging_said(extra: float) -> str:
    return _(" The time counts {h:,.1f} h of provisioning and data staging a rented run takes first.").format(
        h=extra) if extra > 0 else ""


@rule("underprovisioned", "high", "tco_and_pitfalls §B18; the estimate's wall-clock time vs schedule")
def _under(c: Context) -> str | None:  # seeds: under-provisioning
    if not c.est or not c.est.feasible:
        return None
    h = c.est.time.wall_hours
    extra = _staging_hours(c)
    dl = c.req.schedule.deadline_days
    if dl and h + extra > dl * 24:
        return _("One run takes {h:,.0f} h ({days:,.1f} days) on {n} x {gpu}, past the {dl:g}-day deadline; add "
                 "GPUs or relax the deadline.").format(h=h + extra, days=(h + extra) / 24, n=c.est.plan.gpus,
                                                       gpu=c.est.gpu_name, dl=dl) + _staging_said(extra)
    monthly = h * c.req.schedule.runs_per_month  # (training hours: what a month of the build holds)
    if monthly > HOURS_PER_MONTH:
        return _("{runs:g} runs/month x {h:,.0f} h = {monthly:,.0f} h, more than the {month:.0f} h in a month: "
                 "this build cannot keep up; add GPUs or rent bursts.").format(
            runs=c.req.schedule.runs_per_month, h=h, monthly=monthly, month=HOURS_PER_MONTH)
    return None


@rule("deadline-tight", "medium", "Llama 3 paper (419 interruptions in 54 days); ml-engineering fault-tolerance")
def _deadline_tight(c: Context) -> str | None:
    if not c.est or not c.est.feasible or not c.req.schedule.deadline_days:
        return None
    extra = _staging_hours(c)
    h, dl = c.est.time.wall_hours + extra, c.req.schedule.deadline_days * 24
    if h <= 0.8 * dl or h > dl:
        return None
    return _("A run takes {h:,.0f} h of a {dl:,.0f} h deadline ({share:.0%}): no slack for failures, restarts or "
             "a slower-than-estimated pipeline; plan ~20 % margin.").format(h=h, dl=dl, share=h / dl) + _staging_said(
        extra)


@rule("batch-rounded", "medium",
      "Megatron-LM (global batch must equal micro-batch x data-parallel size x accumulation); DeepSpeed "
      "(train_batch_size = micro-batch x accumulation x GPUs / model-parallel)")
def _batch_rounded(c: Context) -> str | None:
    """A stated global batch the plan cannot keep: its data-parallel replicas do not divide it, so the planned
    step takes whole micro-batches per replica and trains with a larger batch (a hyperparameter of the run)."""
    gb = c.req.training.global_batch
    if not c.est or not c.est.feasible or not gb:
        return None
    p = c.est.plan
    replicas, planned = p.replicas, p.global_batch
    if planned == gb:
        return None
    lower = p.micro_batch * (gb // (p.micro_batch * replicas)) * replicas
    alt = (_(" (or {lower:,} with {ga} accumulation steps)").format(lower=lower, ga=gb // (p.micro_batch * replicas))
           if 0 < lower < gb else "")
    return _("The plan trains with a global batch of {planned:,} ({mb} x {ga} accumulation x {dp} replicas), not the "
             "{gb:,} asked: {dp} data-parallel replicas do not divide it, and Megatron-LM and DeepSpeed need the "
             "batch to be micro-batch x accumulation x replicas. Set training.global_batch to {planned:,}{alt}, "
             "or choose a GPU count whose replicas divide {gb:,}.").format(
        planned=planned, mb=p.micro_batch, ga=p.grad_accum, dp=replicas, gb=gb, alt=alt)


@rule("batch-grown", "medium",
      "Goyal et al. 2017 (ResNet-50 accuracy lost past a batch of 8k); Meta 2024, The Llama 3 Herd of Models "
      "§3.4.1 (16M-token batches at 405B scale); estimate.GROWN_BATCH_MAX_*")
def _batch_grown(c: Context) -> str | None:
    """No batch stated, and the plan's replicas take more samples a step than a run like this uses: the default
    grows with the replicas (whole micro-batches on each), and past the limit it is another run."""
    if not c.est or not c.est.feasible:
        return None
    p = c.est.plan
    if not p.batch_defaulted or not p.batch_limit or p.global_batch <= p.batch_limit:
        return None
    return _("No global batch is set, and {dp:,} data-parallel replicas train {planned:,} samples a step "
             "({mb} x {ga} accumulation x {dp}): more than the {most:,} a run like this uses -- fewer optimizer steps "
             "and a learning rate no recipe was tuned for. Set training.global_batch, or use fewer GPUs.").format(
        dp=p.replicas, planned=p.global_batch, mb=p.micro_batch, ga=p.grad_accum, most=p.batch_limit)


@rule("overprovisioned", "high",
      "tco_and_pitfalls §C3 (break-even); Uptime Institute 'Sweat dedicated GPU clusters' (2024)")
def _over(c: Context) -> tuple[Severity, str] | None:  # P04
    if not c.buying or not c.cost or not c.cost.onprem:
        return None
    u = c.cost.onprem.utilization
    be = c.cost.breakeven_utilization
    if be is not None and u >= be:
        return None
    if be is None and u >= 0.5:
        return None
    gpus = c.nodes * c.gpus_per_node
    need = u * gpus * HOURS_PER_YEAR
    # (no rented build priced -- mode buy and no cloud offer for the builds ranked: no claim about renting)
    priced = bool(c.cost.rent_usd_per_gpu_hour)
    rent = (_(" Renting at {rate}/GPU-h is cheaper.").format(rate=c.cash(c.cost.rent_usd_per_gpu_hour, 2))
            if priced else "")
    be_txt = (_("below the {be:.0%} break-even").format(be=be) if be is not None and be <= 1
              else _("and no utilisation breaks even at this cloud price") if priced
              else _("no rental was priced to compare"))
    # High only when the owned build would sit idle most of the time (under half the break-even, or
    # under 30 % busy); near the break-even it is a judgement call, not a mistake.
    sev: Severity = "high" if (u < 0.3 or (be is not None and u < 0.5 * be)) else "medium"
    offer = (_("You need ~{need:,.0f} GPU-h/yr; {n} owned GPUs offer {have:,.0f}. ") if gpus != 1
             else _("You need ~{need:,.0f} GPU-h/yr; {n} owned GPU offers {have:,.0f}. "))
    return sev, (offer.format(need=need, n=gpus, have=gpus * HOURS_PER_YEAR)
                 + _("At {u:.0%} utilisation ({be}) the hardware would sit idle {idle:.0%} of the year.").format(
                     u=u, be=be_txt, idle=1 - u) + rent)


@rule("over-budget", "high", "deployment.budget_usd; the build's bill of materials")
def _over_budget(c: Context) -> str | None:
    """The hardware asked for by name (hardware.gpu) costs more to buy than the budget: the search keeps every build
    it picks within the budget, a pinned GPU it prices as asked -- which an answer must say, not pass over."""
    budget = c.req.deployment.budget_usd
    b = c.build
    if budget is None or not c.buying or b is None or b.rented or b.capex_usd <= budget:
        return None
    pinned = bool(c.req.hardware and c.req.hardware.gpu)
    return (_("Buying {n}x {gpu} costs {capex}, over the {budget} budget (deployment.budget_usd).").format(
        n=b.gpus_per_node * b.nodes, gpu=b.gpu_name, capex=c.cash(b.capex_usd), budget=c.cash(budget))
        + (" " + _("It is the hardware asked for (hardware.gpu): leave that out and gpuwiz searches within the "
                   "budget, or raise it.") if pinned else ""))


@rule("short-horizon", "high", "tco_and_pitfalls §C3 (payback)")
def _short_horizon(c: Context) -> str | None:  # P05
    if not c.buying or not c.cost:
        return None
    months = c.req.deployment.horizon_years * 12
    pb = c.cost.payback_months
    if pb is not None and pb <= months:
        return None
    if pb is None and c.cost.verdict != "buy" and c.req.deployment.mode != "buy":
        return None
    if pb is None and not c.cost.rent_usd_per_gpu_hour:
        return None  # no rented build was priced: nothing says renting is cheaper
    if pb is None:
        return _("Buying never pays back: renting is cheaper every month of the {months:.0f}-month horizon. "
                 "Rent or lease instead of buying.").format(months=months)
    return _("Payback takes {pb:.0f} months, longer than the {months:.0f}-month horizon: rent or lease instead of "
             "buying.").format(pb=pb, months=months)


@rule("reserved-vs-buy", "info",
      "tco_and_pitfalls §A3 (reserved capacity is paid 24/7); GCP/AWS/Azure commitment tables")
def _reserved(c: Context) -> str | None:  # P06
    if not c.cost or not c.cost.onprem or not c.cost.cloud or not c.build:
        return None
    tco = c.cost.onprem
    own = c.buy_build or c.build
    if own.gpu != c.build.gpu:
        return None  # a GPU-hour of another GPU is other work: the verdict compares the two builds
    gpus = own.nodes * own.gpus_per_node
    y = c.req.deployment.horizon_years
    full_hours = gpus * HOURS_PER_YEAR * y
    owned_full = (tco.capex_usd - tco.residual_value_usd + y * (tco.space_usd_per_year + tco.maintenance_usd_per_year
                  + tco.staff_usd_per_year + tco.power_usd_per_year / max(tco.utilization, 0.05))) / full_hours
    best = c.cost.cloud[0]
    if best.cost_per_run_reserved_usd is None:
        return None
    r1 = c.cat.facility["reserved_1y_discount"].value if "reserved_1y_discount" in c.cat.facility else 0.3
    res_rate = best.usd_per_hour * (1 - r1) / (best.gpus_per_instance * best.instances)
    if owned_full >= res_rate:
        return None
    return _("A 24/7 reservation ({provider} {instance}, ~{res}/GPU-h) costs more than owning at full "
             "utilisation (~{own}/GPU-h): if you would reserve anyway and can host it, buying is cheaper.").format(
        provider=best.provider, instance=best.instance, res=c.cash(res_rate, 2), own=c.cash(owned_full, 2))


# ---- used and consumer hardware ------------------------------------------------------------------


def _bought_used(c: Context) -> bool:
    """The hardware is (or would be) used units: asked for (deployment.used_hardware), or the build to own is
    priced used (a GPU no longer sold new: catalog ``sold_new``)."""
    b = c.build
    return c.req.deployment.used_hardware or bool(b and not b.rented and tier_bought_used(b.tier))


@rule("ex-mining", "medium", "gregable.com eBay scrape 2022-09-17 (the Merge); svethardware.cz 2021 (GDDR6X 110 C); "
      "gearverify checklist 2026 [weak]")
def _mining(c: Context) -> str | None:  # P07
    g = c.gpu
    if not (g and g.mining_era and _bought_used(c)):
        return None
    return _("A used {gpu} from the 2017-2022 mining era is likely ex-mining (the Ethereum Merge of 2022-09-15 "
             "dumped ~20 M cards). Check fans, PCB/memory discoloration, an unmodified BIOS (not flashed or spoofed), "
             "run a VRAM burn-in for hours watching memory-junction temperature and Xid errors, and whether the "
             "warranty survives mining use and transfers.").format(gpu=g.name)


@rule("gddr6x-thermals", "medium", "svethardware.cz 2021 (3090 FE 110 C); reviews4000 2020 [weak]; Micron GDDR6X 95 C")
def _gddr6x(c: Context) -> str | None:  # P08
    if not _is(c.gpu, "3080", "3090"):
        return None
    if not (_bought_used(c) or c.gpus_per_node >= 3):
        return None
    return _("{gpu} GDDR6X is rated to ~95 C; mining and dense builds ({n} per box) have seen 104-110 C. Monitor "
             "memory-junction temperature and re-pad cards that run above 100 C.").format(
        gpu=c.gpu.name, n=c.gpus_per_node)  # type: ignore[union-attr]


@rule("baseboard-gpu", "high", "NVIDIA HGX / AMD OAM platform specs (SXM / OAM modules ship on 4- or 8-GPU "
      "baseboards); catalog platforms.chassis")
def _baseboard_gpu(c: Context) -> str | None:
    """SXM / OAM modules are sold on baseboards (HGX, OAM UBB), not one by one: a count asked for by name that no
    baseboard server in the catalog holds (2 B200 SXM) was sized as a generic 2-GPU server, a product no one sells.
    (A module with no server in the catalog at all, an Ascend 910C, is the catalog's gap, not the count's.)"""
    b, g = c.build, c.gpu
    if b is None or g is None or b.rented or b.chassis or g.form_factor not in ("sxm", "oam") or not c.owns_hardware:
        return None
    sizes = [k for k in range(1, 9) if chassis_options(c.cat, g, k, "any")]
    if not sizes:
        return None
    return _("{n}x {gpu} per node is no product: {form} modules are sold on {sizes}-GPU baseboard servers, not one "
             "by one. Buy a whole baseboard server (its other GPUs idle or shared), choose a PCIe card, or rent "
             "{n}.").format(n=b.gpus_per_node, gpu=g.name, form=g.form_factor.upper(),
                            sizes=" / ".join(map(str, sizes)))


@rule("consumer-no-p2p", "medium",
      "TweakTown 2022 (no NVLink on Ada); NVIDIA/nccl#1127; nccl-tests#117; tinygrad/open-gpu-kernel-modules#45")
def _p2p(c: Context) -> tuple[Severity, str] | None:  # P09
    g = c.gpu
    if not g or g.segment != "consumer" or g.p2p or g.nvlink_gbps > 0 or c.gpus_per_node < 2:
        return None
    plan = c.est.plan if c.est else None
    heavy = bool(plan and (plan.tp > 1 or plan.pp > 1 or plan.zero_stage >= 3))
    sev: Severity = "high" if heavy else "medium"
    what = (_(" and the plan uses {fw} (TP={tp}, ZeRO-{zero})").format(fw=plan.framework, tp=plan.tp,
                                                                        zero=plan.zero_stage)
            if heavy and plan else "")
    return sev, _("{n} x {gpu}: no NVLink and no supported peer-to-peer{what}; all-reduce goes through host memory "
                  "and NCCL can hang (set NCCL_P2P_DISABLE=1). Prefer data-parallel with small gradients, or "
                  "workstation / data-centre GPUs.").format(n=c.gpus_per_node, gpu=g.name, what=what)


@rule("consumer-density", "high", "Puget Systems ML hardware recommendations (via sipoch) [weak]")
def _density(c: Context) -> str | None:  # P10
    g = c.gpu
    if not c.owns_hardware or not g or g.cooling != "open-air" or c.gpus_per_node <= 2:
        return None
    ch = next((x for x in c.cat.platforms.chassis if c.build and x.name == c.build.chassis), None)
    if ch is not None and not packed_open_air(ch, g, c.gpus_per_node):
        return None  # a chassis with a gap between the cards (90 mm pitch GPU server), built for them
    return _("{n} x {gpu} ({slots}-slot open-air coolers) recirculate each other's heat; more than 2 in one box "
             "needs blower or liquid-cooled cards, or a GPU server chassis.").format(
        n=c.gpus_per_node, gpu=g.name, slots=g.slot_width)


@rule("geforce-eula", "medium", "NVIDIA GeForce driver licence §2.1.3 'No Datacenter Deployment'; Lambda forum 2018")
def _eula(c: Context) -> str | None:  # P11
    g = c.gpu
    if not g or g.datacenter_licence_ok or not c.buying or not c.on_site("colo", "server-room"):
        return None
    return _("The GeForce driver licence forbids data-centre deployment; {gpu} cards in a colocation or server "
             "room carry legal exposure. Use data-centre or workstation SKUs there.").format(gpu=g.name)


@rule("power-connector", "info", "Tom's Hardware 2025-06 (5090 at the 600 W limit); CableMod / PCI-SIG 2022")
def _connector(c: Context) -> str | None:  # P12
    g = c.gpu
    if not g or g.segment != "consumer" or g.tdp_w < 400:
        return None
    return _("{gpu} ({w:.0f} W) runs its 12VHPWR/12V-2x6 connector near the 600 W limit: seat it fully, no bend "
             "within 35 mm of the plug, use a native ATX 3.x cable, and consider a ~80 % power limit (~95 % of the "
             "speed).").format(gpu=g.name, w=g.tdp_w)


# ---- platform ------------------------------------------------------------------------------------


@rule("pcie-lanes", "medium", "io.net docs (Intel ARK lane counts); hardforum 2021")
def _lanes(c: Context) -> str | None:  # P13
    b = c.build
    if not c.owns_hardware or not b or not b.pcie_lanes or b.pcie_lanes >= b.pcie_lanes_needed:
        return None
    return _("{need} PCIe lanes needed ({n} GPUs + NVMe + NIC) but {cpu} gives {have}: GPUs will run at x4/x8 or "
             "behind the chipset. Use Threadripper PRO / Xeon W / EPYC (up to 128 lanes).").format(
        need=b.pcie_lanes_needed, n=b.gpus_per_node, cpu=b.cpu, have=b.pcie_lanes)


@rule("wall-circuit", "block", "NEC 80 % continuous-load rule; the country's mains (catalog economics); Puget Systems "
      "2020 (4x3090 at 1,717 W at the wall)")
def _circuit(c: Context) -> tuple[Severity, str] | None:  # P14
    b = c.build
    if not c.owns_hardware or not b or b.nodes > 1:
        return None
    # The circuit of the country the build stands in (its mains voltage and breaker; system.office_circuit).
    oc = office_circuit(c.cat, c.req.deployment.country)
    if b.power_w <= oc.continuous_w:
        return None
    fmt = {"w": b.power_w, "circuit": oc.continuous_w, "a": oc.amps, "v": oc.volts,
           "dedicated": dedicated_circuit(oc)}
    if c.req.deployment.site in ("desk", "office"):
        return "block", _("Sustained draw of ~{w:,} W exceeds the {circuit:,.0f} W continuous limit of a {a:g} A/"
                          "{v:g} V office circuit. Add a dedicated circuit ({dedicated}) or power-limit the GPUs "
                          "(~95 % speed at ~80 % power).").format(**fmt)
    if c.on_site("office", "desk") or b.site_kind == "office":
        return "medium", _("~{w:,} W sustained is more than one {a:g} A/{v:g} V circuit carries ({circuit:,.0f} W): it "
                           "needs a dedicated circuit ({dedicated}).").format(**fmt)
    return None


@rule("psu-undersized", "high", "Puget / thefpsreview 2020; Micro Center PSU guide; clankerbuilder 2026 [weak]")
def _psu(c: Context) -> str | None:  # P15
    """The build's PSU against system.psu_needed_w (the one PSU-margin rule). gpuwiz's own builds
    carry the extra PSU capacity in their BOM, so this fires only for a build sized elsewhere."""
    b = c.build
    if not c.owns_hardware or not b or b.psu_w is None or not b.psu_needed_w or b.psu_w >= b.psu_needed_w:
        return None
    return _("The PSU ({psu:,} W) is too small for ~{peak:,} W peak with transient margin = {need:,} W (4x3090 at "
             "300 W peaked at 1,717 W at the wall).").format(psu=b.psu_w, peak=b.max_power_w, need=b.psu_needed_w)


@rule("office-heat-noise", "medium",
      "Epoch (DGX H100 10.2 kW); Upsite 2017 (noise vs inlet temperature); zaro.info [weak]")
def _heat(c: Context) -> str | None:  # P16
    b = c.build
    if not c.owns_hardware or not b or not c.on_site("desk", "office"):
        return None
    kw = b.power_w / 1000.0
    ch = next((x for x in c.cat.platforms.chassis if x.name == b.chassis), None)
    rack = bool(ch and ch.rack_units)
    if kw <= 1.5 and not rack:
        return None
    return (_("This build dumps ~{kw:.1f} kW of heat (about {heaters:.1f} space heaters)").format(
        kw=kw, heaters=kw / 1.5)
            + (_(" and is a rack server built for data-centre airflow and noise") if rack else "")
            + _(": plan cooling (a server room or colocation), not an open office."))


@rule("rack-density", "medium", "Uptime Institute survey 2023 (few racks > 20 kW); AFCOM 2024 (avg ~12 kW per rack)")
def _rack(c: Context) -> str | None:  # P17
    b = c.build
    if not b or not c.buying:
        return None
    kw = b.max_power_w / 1000.0  # racks are provisioned for the node's maximum draw
    if kw <= 10 or not (c.on_site("colo", "server-room") or b.nodes > 1):
        return None
    return _("~{kw:.1f} kW per node exceeds a typical colocation cabinet (~12 kW average; most operators have "
             "nothing above 20 kW): budget for high-density space or {n} node(s) per rack.").format(
        kw=kw, n=max(1, int(20 // kw)))


@rule("cpu-dataloader", "medium",
      "ml-engineering compute/cpu (cores = GPUs x (workers+1) + 4); mlsysim (5,300 vs 850 img/s)")
def _cpu(c: Context) -> str | None:  # P18
    b = c.build
    if not c.owns_hardware or not b or not b.cpu_cores or b.cpu_cores >= b.cpu_cores_needed:
        return None
    return _("Need >= {need} CPU cores to feed {n} GPUs but {cpu} has {have}; JPEG decode and augmentation can "
             "starve the GPUs (an A100 trains ~5,300 img/s, a CPU pipeline decodes ~850).").format(
        need=b.cpu_cores_needed, n=b.gpus_per_node, cpu=b.cpu, have=b.cpu_cores)


@rule("host-ram", "high", "ml-engineering compute/cpu-memory; DGX-1 (2x), AWS p4d (3.6x), p5 (3.2x) reference systems")
def _ram(c: Context) -> tuple[Severity, str] | None:  # P19
    b = c.build
    if not c.owns_hardware or not b or not b.ram_gb or not b.vram_gb:
        return None
    ratio = b.ram_gb / b.vram_gb
    offload = bool(c.est and c.est.plan.offload != "none")
    want = 3.0 if offload else 2.0
    if ratio >= want * DIMM_TOLERANCE:  # the sizing rule's own fill tolerance (system.pick_memory)
        return None
    if ratio < 1.0:
        return "high", ((_("{ram} GB host RAM for {vram:,.0f} GB of VRAM ({ratio:.1f}x): below the 1x floor for data "
                           "loaders, checkpoint assembly and CPU offload.") if offload else
                         _("{ram} GB host RAM for {vram:,.0f} GB of VRAM ({ratio:.1f}x): below the 1x floor for data "
                           "loaders, checkpoint assembly.")).format(ram=b.ram_gb, vram=b.vram_gb, ratio=ratio))
    return "info", ((_("{ram} GB host RAM is {ratio:.1f}x the {vram:,.0f} GB of VRAM; reference systems ship 2-3.6x "
                       "and CPU offload wants ~3x.") if offload else
                     _("{ram} GB host RAM is {ratio:.1f}x the {vram:,.0f} GB of VRAM; reference systems ship "
                       "2-3.6x.")).format(ram=b.ram_gb, vram=b.vram_gb, ratio=ratio))


@rule("storage-io", "medium",
      "ml-engineering storage/README (16 KiB files ~1.0 GB/s vs 2.7 GB/s); NVIDIA DGX best practices")
def _io(c: Context) -> tuple[Severity, str] | None:  # P20
    b = c.build
    if not b:
        return None
    kb = c.req.data.sample_kb
    if b.read_gbps and b.read_gbps_needed > b.read_gbps:
        return "medium", _("The data pipeline needs ~{need:.1f} GB/s per node; local storage gives ~{have:.1f} GB/s. "
                           "Pack samples into shards, use a RAID-0 NVMe cache, avoid streaming from object "
                           "storage.").format(need=b.read_gbps_needed, have=b.read_gbps)
    if kb is not None and kb < 64:
        return "info", _("Samples average {kb:g} KB: small files read ~2.7x slower and can exhaust inodes; pack them "
                         "into WebDataset/TFRecord-style shards.").format(kb=kb)
    return None


@rule("multinode-network", "high",
      "ml-engineering network/README; Cheah 2024 (8 x 400 Gb/s per H100 node); Lambda TCO blog")
def _mnet(c: Context) -> str | None:  # P21
    b = c.build
    if not b or b.nodes <= 1:
        return None
    if b.rdma and b.network_gbps_per_gpu >= 100:
        return None
    head = (_("{nodes} nodes with {gbps:g} Gb/s per GPU: ") if b.rdma
            else _("{nodes} nodes with {gbps:g} Gb/s per GPU without RDMA: "))
    return (head.format(nodes=b.nodes, gbps=b.network_gbps_per_gpu)
            + _("multi-node training is communication-bound below ~100 Gb/s per GPU with RDMA (IB/RoCE + "
                "GPUDirect); on 100GbE TCP expect scaling efficiency to collapse; H100 nodes normally use 8 x 400 "
                "Gb/s."))


@rule("checkpoint-storage", "medium", "ml-engineering training/fault-tolerance (BLOOM 2.3 TB checkpoints, 18 TB/day)")
def _ckpt(c: Context) -> tuple[Severity, str] | None:  # P26
    b = c.build
    if not b or b.checkpoint_gb <= 0:
        return None
    need_tb = b.checkpoint_gb * 3 / 1000
    if b.nodes == 1 and b.storage_tb and need_tb > b.storage_tb:
        return "medium", _("Each full checkpoint is ~{gb:,.0f} GB; keeping 2 plus one being written needs {need:,.1f} "
                           "TB but local storage is {have:g} TB.").format(
            gb=b.checkpoint_gb, need=need_tb, have=b.storage_tb)
    if b.checkpoint_gb >= 100 and c.buying:
        return "info", _("Each full checkpoint is ~{gb:,.0f} GB: keep the 2 latest locally (the last may be "
                         "corrupt), copy every few hours off-site, and checkpoint at least every 1-3 h.").format(
            gb=b.checkpoint_gb)
    return None


# ---- software ------------------------------------------------------------------------------------


@rule("cuda-arch", "medium", "pytorch/pytorch#90761, #110153 (Hopper CUDA >= 11.8); pytorch#150733, llm-d#5 "
      "(Blackwell CUDA >= 12.8); NVIDIA MIG user guide driver table")
def _cuda(c: Context) -> tuple[Severity, str] | None:  # P22
    g = c.gpu
    if not g or g.vendor != "nvidia":
        return None
    arch = g.architecture.lower()
    if arch == "blackwell":
        return "medium", _("{gpu} (Blackwell) needs CUDA >= 12.8, PyTorch >= 2.7 (cu128 wheels) and driver R570+; "
                           "older containers fail with 'no kernel image is available for execution'. Pin your "
                           "images.").format(gpu=g.name)
    if arch == "hopper":
        return "info", _("{gpu} (Hopper, sm_90) needs CUDA >= 11.8 and PyTorch >= 2.0; images built for older CUDA "
                         "warn 'sm_90 is not compatible' and fall back or fail.").format(gpu=g.name)
    return None


@rule("rocm-caveats", "high", "ROCm#1726; ROCm#2038; OneTrainer#1381; pytorch.org (ROCm wheels Linux only)")
def _rocm(c: Context) -> tuple[Severity, str] | None:  # P23
    g = c.gpu
    if not g or g.vendor == "nvidia":
        return None
    if g.vendor == "intel":
        return "medium", _("{gpu} uses the Gaudi software stack, not CUDA: check that your training code and kernels "
                           "(FlashAttention, bitsandbytes) have Gaudi ports before buying.").format(gpu=g.name)
    if g.segment == "consumer":
        return "high", _("{gpu}: PyTorch ROCm wheels are Linux-only and consumer Radeon support is partial "
                         "(overrides, missing libraries, no bitsandbytes on some versions). Budget porting time or "
                         "choose NVIDIA.").format(gpu=g.name)
    return "info", _("{gpu} runs PyTorch on ROCm (Linux): most training code works, but check custom CUDA kernels "
                     "and libraries (FlashAttention, bitsandbytes, DeepSpeed ops) for ROCm builds.").format(gpu=g.name)


@rule("precision-unsupported", "medium", "NVIDIA architecture whitepapers (bf16 from Ampere, fp8 from Hopper/Ada)")
def _precision(c: Context) -> str | None:
    g = c.gpu
    p = c.req.training.precision
    if not g or p in ("fp32",) or g.supports(p):
        return None
    fb = "bf16/fp16" if p == "fp8" else _("fp16 (with loss scaling) or fp32")
    return _("{gpu} has no native {p} tensor-core support; training falls back to {fb}, slower than estimated for "
             "{p}.").format(gpu=g.name, p=p, fb=fb)


# ---- rent / buy / cloud --------------------------------------------------------------------------


@rule("start-in-cloud", "info", "ml-engineering ai-battlefield ('deploy 24/7 for years or rent'); tco_and_pitfalls §A3")
def _start_cloud(c: Context) -> str | None:  # seeds: start in the cloud when the workload is uncertain
    if not c.buying or c.req.calibration is not None:
        return None
    return _("The estimate is a model, not a measurement: rent the same GPU for a day first, measure tokens/s (or "
             "samples/s) and peak memory, put them in the config's calibration section, then buy.")


@rule("spot-checkpointing", "high",
      "AWS Spot (2-min notice), GCP Spot (30 s); AWS Spot Advisor 2026-02 (H100 15-20 %); Llama 3 paper")
def _spot(c: Context) -> tuple[Severity, str] | None:  # P27
    if not c.renting or not c.cost or not c.cost.cloud:
        return None
    cheapest = c.cost.cloud[0]
    picked = c.cost.rent_offer.provider if c.cost.rent_offer else cheapest.provider
    spot = [o for o in c.cost.cloud if o.cost_per_run_spot_usd is not None and o.provider == picked]
    if not spot:
        return None
    opt = min(spot, key=lambda o: o.cost_per_run_spot_usd or 0.0)
    if (opt.cost_per_run_spot_usd or 0.0) >= cheapest.cost_per_run_usd:
        return None
    multi = opt.instances > 1
    sev: Severity = "high" if multi else "medium"
    msg = (_("Spot on {provider} {instance} would cut a run from {od} to {spot}, but instances are "
             "reclaimed with 30 s-2 min notice: checkpoint every 10-30 min and make jobs resumable; {n} synchronous "
             "instances on spot stop whenever any one is reclaimed.") if multi else
           _("Spot on {provider} {instance} would cut a run from {od} to {spot}, but instances are "
             "reclaimed with 30 s-2 min notice: checkpoint every 10-30 min and make jobs resumable."))
    return sev, msg.format(provider=opt.provider, instance=opt.instance, od=c.cash(opt.cost_per_run_usd),
                           spot=c.cash(opt.cost_per_run_spot_usd), n=opt.instances)


@rule("data-residency", "high",
      "Uptime Institute survey 2023 (security is the top cloud blocker); PIPL / GDPR transfer rules [weak summaries]")
def _residency(c: Context) -> tuple[Severity, str] | None:  # P28
    sens = c.req.deployment.data_sensitivity
    if sens not in ("confidential", "regulated") or not c.renting:
        return None
    country = c.req.deployment.country.upper()
    if c.cost and c.cost.cloud:
        # The countries of the offers priced (one instance type is listed per region: match the region too,
        # or an EU-only answer counted the same instance type's US regions).
        keys = {(o.provider, o.instance, o.region) for o in c.cost.cloud}
        countries = {i.country.upper() for i in c.cat.cloud_instances
                     if (i.provider, i.instance_type, i.region) in keys}
    else:
        countries = set()
    # Abroad = another data-protection area (a DE user renting in FI or NL stays inside the GDPR's EU/EEA).
    home = market.jurisdiction(country)
    abroad = sorted(x for x in countries if market.jurisdiction(x) != home)
    if countries and not abroad:
        return "medium", _("{kind} data in the cloud (offers priced: {n}, all in {area}): sign the provider's "
                           "data-processing agreement, pin the job and its storage to those regions, and encrypt the "
                           "data at rest.").format(kind=_("Regulated") if sens == "regulated" else _("Confidential"),
                                                   n=len(c.cost.cloud) if c.cost else 0,
                                                   area=market.jurisdiction_name(country))
    sev: Severity = ("block" if (sens == "regulated" and country == "CN" and abroad)
                     else ("high" if sens == "regulated" else "medium"))
    where = _(" (offers found in {countries})").format(countries=", ".join(abroad)) if abroad else ""
    head = (_("Regulated data in the cloud{where}: ") if sens == "regulated"
            else _("Confidential data in the cloud{where}: "))
    return sev, (head.format(where=where)
                 + _("moving it needs a legal transfer path (GDPR / PIPL; in CN a CAC assessment above 1 M people). "
                     "Use an in-country region with a data-processing agreement, or train on-prem."))


@rule("export-control", "block",
      "US BIS rules 2022-10-07, 2023-10-17, 2025-04; CSET explainer; Tom's Hardware 2025-04-15")
def _export(c: Context) -> tuple[Severity, str] | str | None:  # P25
    g = c.gpu
    country = c.req.deployment.country.upper()
    if not g or not market.purchase_blocked(c.cat, country, g):
        return None
    # Buying (shipping the GPU to the user) and renting it abroad are different rules (catalog export_rules).
    remote = market.remote_rule(c.cat, country, g)
    offer = c.cost.rent_offer if c.cost else None
    if not c.buying and offer is not None and offer.country.upper() == country:
        return None  # rented in the user's own country: nothing crosses a border (a CN team on Alibaba Cloud's A100s)
    if not c.buying and remote is not None and not market.remote_blocked(c.cat, country, g):
        return "info", _("Renting {gpu} outside {country} falls under the remote-access rule, not the export licence "
                         "for buying one: {summary} ({source}, {observed})").format(
            gpu=g.name, country=country, summary=_(remote.summary), source=remote.source, observed=remote.observed)
    alts = [x.name for x in c.cat.gpus
            if not x.export_restricted and x.vendor == "nvidia" and x.release_year >= 2022][:4]
    alt = (_(" In-market options: {gpus}, or an in-country cloud.").format(gpus=", ".join(alts)) if alts
           else _(" Use an in-country cloud."))
    return _("{gpu} needs a US export licence for {country}; grey-market units carry no warranty or "
             "support.").format(gpu=g.name, country=country) + alt


@rule("stale-price", "medium", "catalog cloud_instances `observed` dates")
def _stale_price(c: Context) -> str | None:
    if not c.cost or not c.cost.cloud or not c.cost.rent_option:
        return None
    o = c.cost.cloud[0]
    if not o.observed:
        return None
    age = market.offer_age_months(c.cat, o.observed)
    if age <= market.STALE_MONTHS:
        return None
    return _("The rent price used ({provider} {instance}) was observed {observed}, {age} months before this catalog "
             "({as_of}); cloud prices move: check the current price or refresh it with `gpuwiz catalog import "
             "skypilot vms.csv -o prices.yaml` and --catalog prices.yaml.").format(
        provider=o.provider, instance=o.instance, observed=o.observed, age=age, as_of=c.cat.as_of)


@rule("stale-purchase-price", "medium", "catalog gpus `price_new_observed` / `price_used_observed` dates")
def _stale_purchase_price(c: Context) -> str | None:
    """The buy side's GPU price (new, or used when the build is priced used) older than 12 months."""
    b, g = c.build, c.gpu
    if not c.buying or not b or b.rented or g is None:
        return None
    used = tier_bought_used(b.tier)
    observed = g.price_used_observed if used else g.price_new_observed
    if not observed:
        return None
    age = market.offer_age_months(c.cat, observed)
    if age <= market.STALE_MONTHS:
        return None
    msg = (_("The used price of {gpu} in the build to own was observed {observed}, {age} months before this "
             "catalog ({as_of}); used GPU prices move: check a current listing or set price_used_usd for it in "
             "an overlay (--catalog).") if used else
           _("The purchase price of {gpu} in the build to own was observed {observed}, {age} months before this "
             "catalog ({as_of}); GPU prices move: ask for a current quote or set price_new_usd for it in an "
             "overlay (--catalog)."))
    return msg.format(gpu=g.name, observed=observed, age=age, as_of=c.cat.as_of)


@rule("family-not-validated", "medium", "docs/VALIDATION.md (leave-one-source-out groups); README, How accurate is it?")
def _family_not_validated(c: Context) -> str | None:
    """The speed of a model family with too few published runs in the validation data to check it (or to set
    its own P10-P90 range): the time per run, and every cost from it, is the model's alone."""
    n = c.est.family_runs_validated if c.est else None
    if n is None:
        return None
    fam = FAMILY_LABEL.get(c.est.model.family, c.est.model.family) if c.est else ""
    return (_("No published {family} training run is in gpuwiz's validation data: this time per run is the model's "
              "alone, unchecked for {family} models, and its P10-P90 range is borrowed from other groups. Rent the "
              "GPU for a day, measure samples or tokens per second, and put them in the config's calibration: "
              "section before you commit.") if n == 0 else
            _("Only {n} published {family} training run(s) are in gpuwiz's validation data, too few to check this "
              "family: this time per run is the model's alone, and its P10-P90 range is borrowed from other "
              "groups. Measure a run and put it in the config's calibration: section before you commit.")
            ).format(family=fam, n=n)


@rule("obsolescence", "info",
      "CNBC / Computex 2024-06-02 (yearly NVIDIA cadence); ml-engineering when-to-upgrade-gpus; Epoch (value x0.72/yr)")
def _obsolete(c: Context) -> tuple[Severity, str] | None:  # P29
    if not c.buying or c.gpu is None:
        return None
    y = c.req.deployment.horizon_years
    age = int(c.cat.as_of[:4]) - c.gpu.release_year  # (the catalog's year, not this code's)
    if y <= 3 and age < 3:
        return None
    sev: Severity = "medium" if (y > 3 and c.req.training.method == "pretrain") or age >= 4 else "info"
    return sev, _("A {y:g}-year horizon on {gpu} (released {year}): NVIDIA now ships a data-centre generation "
                  "roughly yearly (B200 ~2.2-2.4x H200); resale value falls ~28 %/year. Plan a 3-year economic "
                  "life.").format(y=y, gpu=c.gpu.name, year=c.gpu.release_year)


@rule("reliability-spares", "info",
      "ml-engineering fault-tolerance (up to 10 % early failures); Meta Llama 3 paper (GPU fault per ~86k GPU-h)")
def _spares(c: Context) -> str | None:  # P30
    if not c.buying or not c.build:
        return None
    if c.build.nodes < 4 and not _bought_used(c):
        return None
    gpus = c.build.nodes * c.build.gpus_per_node
    per_year = gpus * HOURS_PER_YEAR / 86_000
    return _("{n} GPUs running all year see ~{per_year:.1f} GPU faults/year (Llama 3: one per ~86k GPU-h) plus "
             "early-life failures: keep spares or an RMA SLA, and check that warranties transfer on used "
             "parts.").format(n=gpus, per_year=per_year)


@rule("failures-per-run", "medium", "Meta Llama 3 paper (419 interruptions in 54 days on 16k H100s)")
def _failures(c: Context) -> str | None:
    if not c.est or not c.est.feasible:
        return None
    gph = c.est.time.gpu_hours
    expected = gph / 86_000
    if expected < 1:
        return None
    return _("A run is {gph:,.0f} GPU-hours: expect ~{n:.0f} hardware interruption(s) per run. Automate "
             "checkpoint-restart and budget ~5-10 % lost time (goodput).").format(gph=gph, n=expected)


@rule("energy-efficiency", "info", "Epoch AI (power ~5 % of an H100 node's yearly cost); EIA electricity prices")
def _energy(c: Context) -> str | None:  # seeds: energy efficiency
    if not c.cost or not c.cost.onprem or not c.buying:
        return None
    t = c.cost.onprem
    y = c.req.deployment.horizon_years
    yearly = ((t.capex_usd - t.residual_value_usd) / y + t.power_usd_per_year + t.space_usd_per_year
              + t.maintenance_usd_per_year + t.staff_usd_per_year)
    share = t.power_usd_per_year / yearly if yearly else 0.0
    if share < 0.10:
        return None
    g = c.gpu
    prec = c.req.training.precision
    ppw = (_(" {gpu} gives {gfw:.0f} GFLOPS/W at {prec}.").format(
        gpu=g.name, gfw=g.peak_tflops(prec) / g.tdp_w * 1000, prec=prec) if g else "")
    return (_("Power is {share:.0%} of the yearly cost ({usd}/yr).").format(share=share,
                                                                            usd=c.cash(t.power_usd_per_year))
            + ppw + _(" A more efficient GPU, a power limit (~95 % speed at ~80 % power) or cheaper electricity "
                      "matter here; try --objective perf-per-watt."))


@rule("passive-cooling-in-tower", "block",
      "NVIDIA data-centre product briefs ('Thermal solution: Passive': needs server "
      "airflow); NVIDIA Qualified System Catalog")
def _passive_tower(c: Context) -> str | None:
    g, b = c.gpu, c.build
    if not c.owns_hardware or g is None or b is None or g.cooling != "passive" or b.rented:
        return None
    tower = b.chassis_kind in ("desktop", "workstation") or (b.chassis_kind is None and c.req.deployment.site == "desk")
    if not tower:
        return None
    return _("{gpu} is passively cooled: it relies on a server's front-to-back airflow and overheats and throttles "
             "in a tower. Put it in a GPU server chassis (server room / colo) or pick an actively cooled card (RTX "
             "PRO / RTX 6000 class, GeForce).").format(gpu=g.name)


@rule("marketplace-host", "medium",
      "Vast.ai docs (hosts are third parties; 'secure cloud' datacenter tier); RunPod docs "
      "(Community vs Secure Cloud)")
def _marketplace(c: Context) -> tuple[Severity, str] | None:
    if not c.renting or not c.cost or not c.cost.rent_offer:
        return None
    o = c.cost.rent_offer
    # The offer's tier (catalog data). The verified data-centre tier is what this warning advises:
    # on it, the warning would change nothing.
    if o.tier != "marketplace-community":
        return None
    sens = c.req.deployment.data_sensitivity
    sev: Severity = ("high" if sens in ("confidential", "regulated") and o.tier == "marketplace-community"
                     else "medium")
    n = o.instances * o.gpus_per_instance
    head = (_("{provider} {instance} ({n} GPUs) runs on a marketplace host operated by a third party: ") if n > 1
            else _("{provider} {instance} ({n} GPU) runs on a marketplace host operated by a third party: "))
    tail = (_("your data, weights and credentials sit on a machine you do not control. Use its verified data-centre "
              "tier, encrypt data at rest, keep secrets out of the image, or a hyperscaler for confidential data.")
            if sev == "high" else
            _("your data, weights and credentials sit on a machine you do not control. Use its verified data-centre "
              "tier, encrypt data at rest, keep secrets out of the image."))
    return sev, head.format(provider=o.provider, instance=o.instance, n=n) + tail


# Rented clusters of this many instances or more are seldom free on demand at once (judgement: single 8-GPU nodes
# usually are; tens of interconnected ones are booked ahead).
CLUSTER_RESERVE_INSTANCES = 8


@rule("rent-cluster-capacity", "medium",
      "AWS EC2 User Guide, Capacity Blocks for ML (up to 64 instances a block, whole days, up to 8 weeks ahead; "
      "retrieved 2026-12)")
def _cluster_capacity(c: Context) -> str | None:
    if not c.renting or not c.cost or not c.cost.rent_offer or not c.est:
        return None
    o = c.cost.rent_offer
    if o.instances < CLUSTER_RESERVE_INSTANCES:
        return None
    msg = _("{n} x {provider} {instance} at once: on-demand capacity for that many interconnected nodes is seldom "
            "free; clusters this size are booked ahead (AWS Capacity Blocks: up to 64 instances a block, whole days, "
            "up to 8 weeks ahead). Ask the provider for the capacity before you plan on this price.").format(
        n=o.instances, provider=o.provider, instance=o.instance)
    h = c.est.time.wall_hours + _staging_hours(c)
    if h < 24:
        msg += _(" A reservation bills whole days: a day of these instances is ~{day}, against ~{run} for the "
                 "{h:,.1f} h a run takes on demand.").format(
            day=c.cash(o.usd_per_hour * 24), run=c.cash(o.usd_per_hour * h), h=h)
    return msg


@rule("data-staging", "medium",
      "AWS / GCP egress price lists ($0.08-0.12/GB); ml-engineering storage (staging to local NVMe)")
def _staging(c: Context) -> str | None:
    if not c.renting or not c.cost or not c.cost.rent_offer or not c.build:
        return None
    o = c.cost.rent_offer
    # The dataset the overhead hours stage (system.workload_from, the one home of the dataset size),
    # not the storage the run needs (that adds checkpoints, which are written, not staged).
    data_gb = workload_from(c.req, c.cat, c.est).dataset_gb
    if o.overhead_hours < 1.0 and data_gb < 1000:
        return None
    msg = _("Each rented run first stages ~{gb:,.0f} GB and pulls the image (~{h:,.1f} h paid at {rate}/h on "
            "{provider} {instance}); keep the dataset in object storage in the same region, and budget egress "
            "({egress} per run for the weights; more if you pull checkpoints out).").format(
        gb=data_gb, h=o.overhead_hours, rate=c.cash(o.usd_per_hour, 2), provider=o.provider, instance=o.instance,
        egress=c.cash(o.egress_usd))
    if data_gb >= 1000:  # the standing bill of the bucket (counted in the price per run: RentOffer.storage_usd)
        msg += " " + _("Keeping it there costs ~{month} a month ({run} a run, in the price above).").format(
            month=c.cash(data_gb / 1000.0 * c.cat.fac("cloud_storage_usd_per_tb_month")), run=c.cash(o.storage_usd))
    return msg


@rule("hgx-lead-time", "info",
      "Supermicro / Dell HGX H100-H200-B200 lead times 8-20 weeks (2024-2025 reseller notes) [weak]")
def _hgx_lead(c: Context) -> str | None:
    b = c.build
    if not c.buying or not b or b.rented or b.chassis_kind != "hgx":
        return None
    return _("{nodes} x {chassis}: HGX baseboard systems ship in roughly 8-20 weeks; order early, ask for the "
             "delivery date in the quote, and rent the first runs if the schedule cannot wait.").format(
        nodes=b.nodes, chassis=b.chassis)


@rule("host-ram-offload", "high",
      "DeepSpeed ZeRO-Offload / ZeRO-Infinity docs (pinned host memory for optimizer states)")
def _offload_ram(c: Context) -> str | None:
    if not c.est or not c.build or c.est.memory.host_ram_gib <= 0:
        return None
    need_gb = c.est.memory.host_ram_gib * GB_PER_GIB
    b = c.build
    if b.rented:
        have = b.instance.ram_gib * GB_PER_GIB if b.instance and b.instance.ram_gib else None
        if have is not None and have >= need_gb:
            return None
        where = (_("the instance has {gb:,.0f} GB").format(gb=have) if have
                 else _("the provider does not publish the instance's RAM"))
        return _("CPU offload needs ~{need:,.0f} GB of host RAM per node; {where}: confirm it before renting, or pick "
                 "a shape that fits without offload.").format(need=need_gb, where=where)
    if b.ram_gb >= need_gb:
        return None
    return _("CPU offload needs ~{need:,.0f} GB of host RAM per node but the build has {have:,} GB: add "
             "memory.").format(need=need_gb, have=b.ram_gb)


def check_nothing_fits(req: Requirements, cat: Catalog, suggestions: list[str]) -> list[Pitfall]:
    """The single blocking pitfall when no candidate fits."""
    msg = (_("No GPU in the catalog fits this workload within the limits; {hint}").format(hint=suggestions[0])
           if suggestions else _("No GPU in the catalog fits this workload within the limits."))
    return [Pitfall(id="does-not-fit", severity="block", message=msg,
                    source="ZeRO (Rajbhandari et al. 2019, 16 B/param); ml-engineering training/performance")]


def rule_ids() -> list[str]:
    return [r.id for r in RULES]

