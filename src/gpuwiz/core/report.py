"""Renderings of an Estimate or a Recommendation: plain text, Markdown (a procurement memo), JSON.

Pure functions from result models to strings; the CLI prints them, the TUI exports them.
"""

from __future__ import annotations

import json
import math
from typing import Any, Literal

from gpuwiz.core import market
from gpuwiz.core.models import SEVERITY_ORDER, Build, Estimate, ParetoPoint, Recommendation, Requirements
from gpuwiz.core.ranges import fmt_range
from gpuwiz.core.whatif import OWNED_VERDICT, fmt_gpu_hours, fmt_hours, fmt_span, fmt_usd, owned_lead, owned_part
from gpuwiz.i18n import N_, _, cells, ljust

Format = Literal["text", "md", "json"]
SEVERITY_LABEL = {"block": N_("BLOCKER"), "high": N_("HIGH"), "medium": N_("MEDIUM"), "info": N_("INFO")}


# ---- number formatting (money and hours: gpuwiz.core.whatif, shared with the TUI) -----------------


def fmt_count(n: float | None) -> str:
    if n is None:
        return "n/a"
    for div, suf in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= div:
            return f"{n / div:.3g}{suf}"
    return f"{n:.3g}"


def fmt_pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x * 100:.0f}%"


# ---- JSON ----------------------------------------------------------------------------------------


def estimate_data(est: Estimate) -> dict[str, Any]:
    return est.model_dump(mode="json")


# Headline money fields that get a ``*_local`` twin in the user's currency (the ``*_usd`` stay USD).
LOCAL_TWINS: dict[tuple[str, ...], tuple[str, ...]] = {
    (): ("cost_per_run_usd",),
    ("build",): ("capex_usd",),
    ("buy_build",): ("capex_usd",),
    ("cost",): ("rent_usd_total", "hybrid_usd_total", "rent_usd_per_gpu_hour"),
    ("cost", "onprem"): ("capex_usd", "total_usd", "power_usd_per_year", "staff_usd_per_year", "usd_per_gpu_hour"),
}


def _local_name(key: str) -> str:
    """``rent_usd_total`` -> ``rent_total_local``, ``usd_per_gpu_hour`` -> ``per_gpu_hour_local``."""
    base = key.replace("_usd", "").replace("usd_", "")
    return base + "_local"


def recommendation_data(rec: Recommendation) -> dict[str, Any]:
    data = rec.model_dump(mode="json")
    cur = rec.currency
    if cur is None or cur.usd_rate <= 0:
        return data
    for path, keys in LOCAL_TWINS.items():
        node: Any = data
        for part in path:
            node = node.get(part) if isinstance(node, dict) else None
        if not isinstance(node, dict):
            continue
        for key in keys:
            v = node.get(key)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                node[_local_name(key)] = round(v / cur.usd_rate, 2)
    return data


def _money(usd: float | None, rec: Recommendation) -> str:
    """USD, with the user's currency beside it when that is not USD: ``$1,234 (¥8,860)``."""
    from gpuwiz.core.money import format_money

    cur = rec.currency
    if usd is None or cur is None or cur.code == "USD" or cur.usd_rate <= 0:
        return fmt_usd(usd)
    return f"{fmt_usd(usd)} ({format_money(usd / cur.usd_rate, cur.code)})"


def _price_cell(usd_per_hour: float, currency: str, local_per_hour: float | None) -> str:
    """An offer's hourly price in USD, and in the currency it is listed in when that is not USD:
    ``$3.99/h (¥28.64/h)``."""
    from gpuwiz.core.money import format_money

    if currency == "USD" or local_per_hour is None:
        return fmt_usd(usd_per_hour) + "/h"
    return f"{fmt_usd(usd_per_hour)}/h ({format_money(local_per_hour, currency)}/h)"


def _market_lines(rec: Recommendation, md: bool, h2: str) -> list[str]:
    """The "Where it may run" section with its heading ([] when there is nothing to say)."""
    lines = where_it_may_run(rec)
    return ["", f"{h2}" + _("Where it may run") if md else _("Where it may run:"), *lines] if lines else []


def where_it_may_run(rec: Recommendation) -> list[str]:
    """The "Where it may run" lines, without a heading (the memo's section; the wizard's rent-vs-buy tab): where
    the data may go, what the policy excluded, the run kept in the jurisdiction, the export rules that apply; []
    when there is nothing to say."""
    st = rec.market
    if st is None:
        return []
    where = market.jurisdiction_name(st.jurisdiction, exact=True)
    policy = {"regulated": _("regulated data: rent only in {where}, no community marketplace hosts").format(
                  where=where),
              "confidential": _("confidential data: no community marketplace hosts"),
              "internal": _("internal data: any offer (marketplace hosts and regions abroad are allowed; "
                            "the trade-off is noted per offer)"),
              "public": _("public data: any offer")}[st.data_sensitivity]
    if st.regions:
        policy += _("; only in {regions}").format(regions=", ".join(st.regions))
    lines = [_("- Policy: {policy}.").format(policy=policy)]
    names = {"out-of-jurisdiction": _("outside {where}").format(where=where),
             "community-host": _("community marketplace hosts"), "not-in-regions": _("outside deployment.regions")}
    if st.excluded:
        what = f"{st.gpus}x {st.gpu}" if st.gpu else _("any GPU")
        lines.append(_("- Offers for {what} excluded by the policy: ").format(what=what)
                     + ", ".join(f"{n} {names.get(k, k)}" for k, n in st.excluded.items()) + ".")
    if st.no_compliant_offer:
        what = _("{n}x {gpu}-class").format(n=st.gpus, gpu=st.gpu) if st.gpu else _("this workload")
        lines.append(_("- No compliant offer in the catalog for {what}").format(what=what)
                     + (_("; closest compliant: {offer}.").format(offer=st.closest_compliant) if st.closest_compliant
                        else _("; the policy allows none of the catalog's offers (add your own with --catalog).")))
    j = st.in_jurisdiction
    if j is not None:
        ratio = j.cost_per_run_usd / rec.cost_per_run_usd if rec.cost_per_run_usd else None
        lines.append(_("- Kept in {where}: {n}x {gpu} on {provider} {instance} ({region}), {run} and {cost} a run"
                       ).format(where=where, n=j.count, gpu=j.gpu_name, provider=j.provider, instance=j.instance,
                                region=j.region or j.country, run=fmt_hours(j.wall_hours),
                                cost=_money(j.cost_per_run_usd, rec))
                     + (_(" ({ratio:.1f}x the pick's cost).").format(ratio=ratio) if ratio else "."))
    elif st.in_jurisdiction_checked:
        lines.append(_("- Kept in {where}: no offer in the catalog does this run (add your own with --catalog)."
                       ).format(where=where))
    for f in st.export:
        lines.append(_("- Export rule ({kind}, {effect}): {summary} [{source}, {observed}]").format(
            kind=f.kind, effect=f.effect, summary=_(f.summary), source=f.source, observed=f.observed))
    if len(lines) == 1 and st.data_sensitivity in ("internal", "public") and not st.export:
        return []
    return lines


def finite(value: Any) -> Any:
    """``value`` with every non-finite float (NaN, +-inf) made null, recursively (JSON has neither)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def to_json(data: Any) -> str:
    """Strict JSON (``allow_nan=False``): numbers are finite or null, never NaN / Infinity."""
    return json.dumps(finite(data), indent=2, sort_keys=False, allow_nan=False) + "\n"


def _json(data: dict[str, Any]) -> str:
    return to_json(data)


# ---- Estimate ------------------------------------------------------------------------------------


def _estimate_lines(est: Estimate, md: bool) -> list[str]:
    m, p, t, th = est.memory, est.plan, est.time, est.throughput
    b = m.breakdown
    rate = (_("{n:,.0f} tokens/s/GPU").format(n=th.tokens_per_s_per_gpu) if th.tokens_per_s_per_gpu is not None
            else _("{n:,.1f} samples/s/GPU").format(n=th.samples_per_s_per_gpu)
            if th.samples_per_s_per_gpu is not None else "n/a")
    fits = _("fits") if m.fits else _("DOES NOT FIT")
    rows = [
        (_("Model"), _("{name} ({family}), {n} params").format(name=est.model.name, family=est.model.family,
                                                               n=fmt_count(est.model.params_total))
                     + (_(", {n} active").format(n=fmt_count(est.model.params_active))
                        if est.model.params_active != est.model.params_total else "")
                     + (_(", {n} trainable").format(n=fmt_count(est.model.params_trainable))
                        if est.model.params_trainable != est.model.params_total else "")),
        (_("Hardware"), (_("{gpus}x {gpu} ({nodes} nodes x {per})") if p.nodes > 1
                         else _("{gpus}x {gpu} ({nodes} node x {per})")).format(
            gpus=p.gpus, gpu=est.gpu_name, nodes=p.nodes, per=p.gpus_per_node)),
        (_("Plan"), _("{fw}: DP {dp}, TP {tp}, PP {pp}, ZeRO {zero}, offload {offload}, "
                      "micro-batch {mb} x accum {acc}, checkpointing {ckpt}").format(
            fw=p.framework, dp=p.dp, tp=p.tp, pp=p.pp, zero=p.zero_stage, offload=p.offload, mb=p.micro_batch,
            acc=p.grad_accum, ckpt=p.activation_checkpointing)),
        (_("Memory / GPU"), _("{used:.1f} GiB of {cap:.0f} GiB ({fits}; {free} free, "
                              "plan limit {limit:.1f} GiB)").format(
            used=m.per_gpu_gib, cap=m.capacity_gib, fits=fits, free=fmt_pct(m.headroom_frac), limit=m.usable_gib)),
        ("  " + _("breakdown"), _("weights {w:.1f}, gradients {g:.1f}, optimizer {o:.1f}, "
                                  "activations {a:.1f}, overhead {x:.1f} GiB").format(
            w=b.weights, g=b.gradients, o=b.optimizer, a=b.activations, x=b.overhead)),
        (_("Throughput"), _("{rate}, MFU {mfu:.2f} ({got:.0f} of {peak:.0f} TFLOPS)").format(
            rate=rate, mfu=th.mfu, got=th.achieved_tflops, peak=th.peak_tflops)),
        (_("Time / run"), _("{wall} wall, {gpuh} GPU-hours, {pflop:,.0f} PFLOP").format(
            wall=fmt_hours(t.wall_hours), gpuh=fmt_gpu_hours(t.gpu_hours), pflop=t.total_pflop)),
    ]
    if m.host_ram_gib:
        rows.append((_("Host RAM"), _("{n:.0f} GiB per node for CPU offload").format(n=m.host_ram_gib)))
    rows += _range_rows(est)
    out: list[str] = []
    if md:
        out += ["| | |", "|---|---|"] + [f"| {k.strip()} | {v} |" for k, v in rows]
    else:
        out += [ljust(k, 14) + v for k, v in rows]
    if est.problems:
        out.append("")
        out += [("- " if md else "! ") + pr for pr in est.problems]
    if est.assumptions:
        out += ["", "**" + _("Assumptions") + "**" if md else _("Assumptions:")]
        out += [("- " if md else "  - ") + a for a in est.assumptions]
    return out


def _range_rows(est: Estimate) -> list[tuple[str, str]]:
    """P10-P90 ranges (cross-validated) and the same run on other stacks."""
    m, t, th = est.memory, est.time, est.throughput
    parts: list[str] = []
    head = th.tokens_per_s_per_gpu if th.tokens_per_s_per_gpu is not None else th.samples_per_s_per_gpu
    unit = _("tokens/s/GPU") if th.tokens_per_s_per_gpu is not None else _("samples/s/GPU")
    if th.range and head is not None:
        parts.append(fmt_range(head, th.range.low, th.range.high, unit))
    if t.wall_hours_range:
        parts.append(_("{wall} wall ({low}–{high})").format(wall=fmt_hours(t.wall_hours),
                                                            low=fmt_hours(t.wall_hours_range.low),
                                                            high=fmt_hours(t.wall_hours_range.high)))
    if m.per_gpu_gib_range:
        parts.append(fmt_range(m.per_gpu_gib, m.per_gpu_gib_range.low, m.per_gpu_gib_range.high, "GiB/GPU")
                     + (_(" -- P90 above the card") if m.p90_exceeds_capacity else ""))
    rows = [("P10-P90", "; ".join(parts))] if parts else []
    # a stack whose time rounds to the same per cent is named once, with the others like it (not "16.4 h instead
    # of 16.4 h (-0%)" per stack)
    same: list[str] = []
    for a in est.stack_alternatives:
        if a.feasible and abs(a.change) < 0.005:
            same.append(a.name)
            continue
        rows.append(("  " + _("stack"), _("{name} would take {wall} instead of {base} ({pct:+.0f}%)").format(
            name=a.name, wall=fmt_hours(a.wall_hours), base=fmt_hours(t.wall_hours), pct=a.change * 100)
            + ("" if a.feasible else _(", does not fit"))))
    if same:
        rows.append(("  " + _("stack"), _("{names}: about the same time (within 0.5%)").format(names="; ".join(same))))
    return rows


def render_estimate(est: Estimate, fmt: Format = "text") -> str:
    if fmt == "json":
        return _json(estimate_data(est))
    md = fmt == "md"
    head = ["# " + _("gpuwiz estimate: {model} on {n}x {gpu}").format(model=est.model.name, n=est.plan.gpus,
                                                                       gpu=est.gpu_name), ""] if md else []
    return "\n".join(head + _estimate_lines(est, md)) + "\n"


# ---- Recommendation ------------------------------------------------------------------------------


def _build_lines(build: Build, md: bool, h2: str, title: str) -> list[str]:
    out = [f"{h2}{title}" if md else title]
    rows = [[b.item, str(b.qty), fmt_usd(b.unit_usd), fmt_usd(b.total_usd), b.note] for b in build.bom]
    out += _table([_("Item"), _("Qty"), _("Unit"), _("Total"), _("Note")], rows, md)
    capex = (_("Capex {money}") if build.capex_known else
             _("Capex {money} without the items whose price is unknown")).format(money=fmt_usd(build.capex_usd))
    out += ["", f"{'**' if md else ''}" + capex + f"{'**' if md else ''}", ""]
    sysrows = [
        (_("GPUs"), _("{nodes} node(s) x {per}x {gpu}").format(nodes=build.nodes, per=build.gpus_per_node,
                                                              gpu=build.gpu_name)),
        (_("CPU"), _("{n}x {cpu} ({cores} cores, {lanes} PCIe lanes per node)").format(
            n=build.cpu_count, cpu=build.cpu, cores=build.cpu_cores, lanes=build.pcie_lanes)),
        (_("RAM"), _("{n} GB per node").format(n=build.ram_gb)),
        (_("Storage"), "; ".join(build.storage)),
        (_("Network"), build.network),
        (_("Power"), _("{w:,} W sustained, PSU {psu:,} W per node; {kw:.1f} kW of heat").format(
            w=build.power_w, psu=build.psu_w or 0, kw=build.heat_kw)),
        (_("Site"), build.site),
        (_("Software"), "; ".join(build.software)),
    ]
    out += [f"- **{k}**: {v}" for k, v in sysrows] if md else ["  " + ljust(k, 9) + v for k, v in sysrows]
    return [*out, ""]


def pick_point(rec: Recommendation) -> ParetoPoint | None:
    """The point of the time / cost front that is the recommended build, if it is on the front."""
    b = rec.build
    if b is None:
        return None
    return next((p for p in rec.pareto if p.gpu == b.gpu and p.count == b.gpus_per_node * b.nodes
                 and p.nodes == b.nodes and not p.owned), None)


def how_label(p: ParetoPoint) -> str:
    """How a point of the front is had: rented, bought, or owned already (its energy alone)."""
    return _("already owned") if p.owned else _("rent") if p.rented else _("buy")


def pareto_against_pick(rec: Recommendation) -> list[tuple[ParetoPoint, str]]:
    """Each point of the time / cost front with how it compares to the pick ('2.1x faster for +13%',
    'the pick'); empty when there is no front to show. The report and the TUI both print these."""
    b = rec.build
    if b is None or len(rec.pareto) < 2 or rec.cost_per_run_usd is None:
        return []
    me = pick_point(rec)
    base_h = me.wall_hours if me else (rec.estimate.time.wall_hours if rec.estimate else 0.0)
    base_c = rec.cost_per_run_usd
    out: list[tuple[ParetoPoint, str]] = []
    for p in rec.pareto:
        # (a run of seconds rounds to 0 h: no ratio then -- it read 1 / 0 for a 1,000-sample run)
        speed = base_h / p.wall_hours if p.wall_hours > 0 and base_h > 0 else 1.0
        dc = p.cost_per_run_usd / base_c - 1 if base_c > 0 else 0.0
        if p is me:
            what = _("the pick")
        elif speed >= 1:
            what = (_("{x:.1f}x faster for {pct}").format(x=speed, pct=f"{dc:+.0%}") if dc >= 0
                    else _("{x:.1f}x faster and {pct} cheaper").format(x=speed, pct=f"{-dc:.0%}"))
        else:
            what = (_("{x:.1f}x slower, {pct} cheaper").format(x=1 / speed, pct=f"{-dc:.0%}") if dc < 0
                    else _("{x:.1f}x slower").format(x=1 / speed))
        if p.late and p is not me:  # why the ranking put it after the pick (it may be faster and cheaper)
            what = _("{what}; may miss the deadline").format(what=what)
        out.append((p, what))
    return out


def _pareto_lines(rec: Recommendation, md: bool, h2: str) -> list[str]:
    """The time / cost front against the pick: '2.1x faster for 13 % more'."""
    pts = pareto_against_pick(rec)
    if not pts:
        return []
    rows = [[f"{p.count}x {p.gpu}" + (_(" ({n} nodes)").format(n=p.nodes) if p.nodes > 1 else ""),
             how_label(p), fmt_hours(p.wall_hours), _money(p.cost_per_run_usd, rec), what]
            for p, what in pts]
    out = [f"{h2}" + _("Time vs cost (Pareto front)") if md else _("Time vs cost (Pareto front):")]
    return out + _table([_("Build"), _("How"), _("Time/run"), _("Cost/run"), _("Against the pick")], rows, md) + [""]


def _pitfall_lines(rec: Recommendation, md: bool) -> list[str]:
    out = []
    for p in sorted(rec.pitfalls, key=lambda p: SEVERITY_ORDER[p.severity]):
        label = _(SEVERITY_LABEL[p.severity])
        out.append(f"- **{label}** {p.message} _(" + _("source: {source}").format(source=p.source) + ")_" if md
                   else f"  [{ljust(label, 7)}] {p.message}")
    return out


def _table(headers: list[str], rows: list[list[str]], md: bool) -> list[str]:
    if md:
        return ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)] + [
            "| " + " | ".join(r) + " |" for r in rows]
    widths = [max(cells(h), *(cells(r[i]) for r in rows)) if rows else cells(h) for i, h in enumerate(headers)]
    def line(row: list[str]) -> str:
        return "  " + "  ".join(ljust(c, w) for c, w in zip(row, widths, strict=False))

    return [line(headers)] + [line(r) for r in rows]


def render_recommendation(rec: Recommendation, req: Requirements | None = None, fmt: Format = "text") -> str:
    if fmt == "json":
        return _json(recommendation_data(rec))
    md = fmt == "md"
    h1, h2 = ("# ", "## ") if md else ("", "")
    out: list[str] = []
    est, build, cost = rec.estimate, rec.build, rec.cost
    model_name = (est.model.name if est else (req.model.preset or req.model.name or _("custom model")) if req
                  else _("model"))
    if not rec.found or build is None or est is None:
        out += [h1 + _("gpuwiz: no build meets the requirements for {model}").format(model=model_name), ""]
        if rec.dropped:
            out.append(_("Considered {n} candidate builds; dropped: ").format(n=rec.candidates_considered)
                       + ", ".join(f"{n} {_(why)}" for why, n in rec.dropped.items()) + ".")
        if rec.binding_constraint:
            out += ["", _("Binding constraint ({kind}): {message}.").format(kind=rec.binding_constraint.kind,
                                                                           message=rec.binding_constraint.message)]
        out += [_("Assumed: {what}.").format(what=a) for a in rec.assumptions]
        if rec.suggestions:
            out += ["", f"{h2}" + _("What would work") if md else _("What would work:")]
            out += [f"- {s}" for s in rec.suggestions]
        out += _market_lines(rec, md, h2)
        if rec.pitfalls:
            out += ["", f"{h2}" + _("Warnings") if md else _("Warnings:"), *_pitfall_lines(rec, md)]
        return "\n".join(out) + "\n"

    n_gpus = build.gpus_per_node * build.nodes
    verdict = _(cost.verdict).upper() if cost else "n/a"
    own = rec.owned_pick
    if own is None:
        title = _("gpuwiz recommendation: {n}x {gpu} for {model}").format(n=n_gpus, gpu=build.gpu_name,
                                                                          model=model_name)
    else:  # owned hardware does the run: that first; the build below is to add capacity
        title = _("gpuwiz recommendation: {owned} for {model} (to add capacity: {n}x {other})").format(
            owned=owned_part(own), model=model_name, n=n_gpus, other=build.gpu_name)
    out += [h1 + title, ""]
    said = _("Verdict: {verdict}.").format(verdict=verdict)
    reason = cost.verdict_reason[:1].upper() + cost.verdict_reason[1:] if cost else ""
    lead = owned_lead(rec)
    if lead is not None:  # owned hardware does the run: use it; the rent-vs-buy verdict is for adding capacity
        said = _("Verdict: {verdict}.").format(verdict=_(OWNED_VERDICT).upper())
        more = _("To add capacity: {verdict}.").format(verdict=verdict)
        said_owned = _("{sentence}.").format(sentence=lead[:1].upper() + lead[1:])
        reason = f"{said_owned} {'**' + more + '**' if md else more} {reason}"
    summary = f"{'**' + said + '**' if md else said} {reason}"
    out += [summary, ""]
    tr, cr, mr = est.time.wall_hours_range, rec.cost_per_run_usd_range, est.memory.per_gpu_gib_range
    out += [_("Time per run {wall}{wall_range} ({gpuh} GPU-hours), cost per run {cost}{cost_range}, "
              "memory {mem:.1f}{mem_range} of {cap:.0f} GiB per GPU. Objective: {objective}; "
              "{n} builds considered. Ranges: the cross-validated errors of published runs "
              "like this one (docs/VALIDATION.md).").format(
        wall=fmt_hours(est.time.wall_hours), wall_range=fmt_span(tr, fmt_hours, "P10-P90 "),
        gpuh=fmt_gpu_hours(est.time.gpu_hours), cost=_money(rec.cost_per_run_usd, rec),
        cost_range=fmt_span(cr, fmt_usd),
        mem=est.memory.per_gpu_gib, mem_range=fmt_span(mr, lambda v: f"{v:.1f}"), cap=est.memory.capacity_gib,
        objective=rec.objective, n=rec.candidates_considered), ""]
    if rec.binding_constraint:
        bold = "**" if md else ""
        head = bold + _("Binding constraint ({kind}):").format(kind=rec.binding_constraint.kind) + bold
        # (one sentence, joined as the language joins them: no space and a full-width stop in Chinese)
        out += [_("{head} {message}.").format(head=head, message=rec.binding_constraint.message), ""]
    if rec.assumptions:
        out += [_("Assumed: {what}.").format(what=a) for a in rec.assumptions] + [""]
    out += _pareto_lines(rec, md, h2)

    rented = build.rented
    if rented:
        out += [f"{h2}" + _("Rent") if md else _("Rent:")]
        offer = cost.rent_offer if cost else None
        if offer:
            shape = (_("{n} instances") if offer.instances > 1 else _("{n} instance")).format(n=offer.instances) + (
                _(" x {n} GPUs") if offer.gpus_per_instance > 1 else _(" x {n} GPU")).format(n=offer.gpus_per_instance)
        else:
            shape = _("{n} GPUs").format(n=n_gpus)
        out += [f"- {build.site.removeprefix('cloud: ')}: {n_gpus}x {build.gpu_name} ({shape}), "
                + _("{money} per run").format(money=fmt_usd(rec.cost_per_run_usd))
                + (_(" incl. {h:,.1f} h of provisioning, image pull and data staging and {egress} egress").format(
                    h=offer.overhead_hours, egress=fmt_usd(offer.egress_usd)) if offer else "")
                + (_(", and {usd} to keep the dataset in object storage between runs").format(
                    usd=fmt_usd(offer.storage_usd)) if offer and offer.storage_usd >= 0.5 else "")]
        inst = build.instance
        if inst is not None:
            host = ", ".join(x for x in (_("{n} vCPUs").format(n=inst.vcpus) if inst.vcpus else "",
                                         _("{n:,.0f} GiB RAM").format(n=inst.ram_gib) if inst.ram_gib else "",
                                         _("{n:g} TB local NVMe").format(n=inst.local_nvme_tb)
                                         if inst.local_nvme_tb else "") if x)
            unknown = _("vCPUs, RAM and local disk not published by the provider: check before renting")
            out += [_("- Host: {host}").format(host=host or unknown)]
        tb = build.storage_needed_tb
        need = f"{max(tb * 1000, 1):,.0f} GB" if tb < 1 else f"{tb:,.1f} TB"
        ckpt = _(", checkpoints ~{n:,.0f} GB each").format(n=build.checkpoint_gb) if build.checkpoint_gb >= 1 else ""
        out += [_("- Storage: {need} for data and checkpoints on the instance's local NVMe or a network volume"
                  "{ckpt}; keep an off-site copy of checkpoints in object storage").format(need=need, ckpt=ckpt)]
        out += [_("- Software: {software}").format(software="; ".join(build.software)), ""]
    else:
        out += _build_lines(build, md, h2, _("Bill of materials") if md
                            else _("Bill of materials (per node unless noted):"))
    if rented and rec.buy_build is not None:
        out += _build_lines(rec.buy_build, md, h2, _("If you would rather own it") if md
                            else _("If you would rather own it (bill of materials, per node unless noted):"))
    out += [f"{h2}" + _("Estimate") if md else _("Estimate:"), *_estimate_lines(est, md)]

    if rec.alternatives:
        out += ["", f"{h2}" + _("Alternatives") if md else _("Alternatives:")]
        rows = [[f"{a.count}x {a.gpu_name}", fmt_hours(a.wall_hours), fmt_usd(a.cost_per_run_usd), a.reason]
                for a in rec.alternatives]
        out += _table([_("Build"), _("Time/run"), _("Cost/run"), _("Why")], rows, md)

    if cost:
        out += ["", f"{h2}" + _("Rent vs buy") if md else _("Rent vs buy:")]
        if cost.cloud:
            noted = any(c.note for c in cost.cloud)
            # A reservation is billed 24/7: its per-run share only means something when it is
            # cheaper than on-demand; otherwise say so rather than print a $30k "run". (The offer the verdict
            # prices counts its wait before training, which a reservation has already paid.)
            ro = cost.rent_offer
            rows = [[c.provider, f"{c.instances}x {c.instance}", f"{c.instances * c.gpus_per_instance}",
                     (c.country or "-") + (f" {c.tier}" if c.tier else ""),
                     _price_cell(c.usd_per_hour, c.currency, c.price_per_hour_local),
                     fmt_usd(c.cost_per_run_usd), fmt_usd(c.cost_per_run_spot_usd),
                     fmt_usd(c.cost_per_run_reserved_usd) if c.reserved_wins(
                         ro.overhead_hours if ro is not None and (ro.provider, ro.instance, ro.region)
                         == (c.provider, c.instance, c.region) else 0.0)
                     else _("not worth it"), fmt_usd(c.cost_per_year_usd), c.observed or "-"]
                    + ([c.note] if noted else []) for c in cost.cloud]
            out += _table([_("Cloud"), _("Instances"), _("GPUs"), _("Where"), _("Price"), _("Run (on-demand)"),
                           _("Run (spot)"), _("Run (reserved)"), _("Per year"), _("Price observed")]
                          + ([_("Note")] if noted else []), rows, md)
        if cost.onprem:
            o = cost.onprem
            out += ["", _("Buy: capex {capex}; per year power {power}, space {space}, maintenance {maint}, "
                          "staff {staff}; residual value {residual}; total {total} over the horizon = {per} per "
                          "delivered GPU-hour at {util} utilisation.").format(
                capex=fmt_usd(o.capex_usd), power=fmt_usd(o.power_usd_per_year), space=fmt_usd(o.space_usd_per_year),
                maint=fmt_usd(o.maintenance_usd_per_year), staff=fmt_usd(o.staff_usd_per_year),
                residual=fmt_usd(o.residual_value_usd), total=fmt_usd(o.total_usd), per=fmt_usd(o.usd_per_gpu_hour),
                util=fmt_pct(o.utilization))]
        facts = []
        if cost.rent_usd_per_gpu_hour is not None:
            facts.append(_("rent {money} per GPU-hour").format(money=fmt_usd(cost.rent_usd_per_gpu_hour)))
        if cost.breakeven_utilization is not None:
            be = cost.breakeven_utilization
            facts.append(_("break-even at {pct} utilisation").format(pct=fmt_pct(be)) if be <= 1
                         else _("buying never breaks even (it would need {pct} utilisation)").format(pct=fmt_pct(be)))
        if cost.payback_months is not None:
            facts.append(_("payback {n:.0f} months").format(n=cost.payback_months))
        if facts:
            joined = _("; ").join(facts)
            out += ["", joined[:1].upper() + joined[1:] + _(".")]
        if cost.flip_inputs:
            out += ["", _("What would flip the verdict:")] + [f"- {f}" for f in cost.flip_inputs]

    out += _market_lines(rec, md, h2)
    if rec.pitfalls:
        out += ["", f"{h2}" + _("Warnings") if md else _("Warnings:"), *_pitfall_lines(rec, md)]
    if rec.dropped:
        out += ["", _("Dropped candidates: ") + ", ".join(f"{n} {_(why)}" for why, n in rec.dropped.items()) + "."]
    return "\n".join(out) + "\n"
