"""Renderings of an Estimate or a Recommendation: plain text, Markdown (a procurement memo), JSON.

Pure functions from result models to strings; the CLI prints them, the TUI exports them.
"""

from __future__ import annotations

import json
import math
from typing import Any, Literal

from gpuwiz.core.models import SEVERITY_ORDER, Build, Estimate, ParetoPoint, Recommendation, Requirements
from gpuwiz.core.ranges import fmt_range
from gpuwiz.core.whatif import fmt_hours, fmt_span, fmt_usd

Format = Literal["text", "md", "json"]
SEVERITY_LABEL = {"block": "BLOCKER", "high": "HIGH", "medium": "MEDIUM", "info": "INFO"}


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
    """Where the data may go, what the policy excluded, and the export rules that apply."""
    st = rec.market
    if st is None:
        return []
    names_j = {"EU": "the EU/EEA", "CN": "mainland China (not HK/MO)", "GB": "the UK"}
    where = names_j.get(st.jurisdiction, st.jurisdiction)
    policy = {"regulated": f"regulated data: rent only in {where}, no community marketplace hosts",
              "confidential": "confidential data: no community marketplace hosts",
              "internal": ("internal data: any offer (marketplace hosts and regions abroad are allowed; "
                           "the trade-off is noted per offer)"),
              "public": "public data: any offer"}[st.data_sensitivity]
    if st.regions:
        policy += f"; only in {', '.join(st.regions)}"
    lines = [f"- Policy: {policy}."]
    names = {"out-of-jurisdiction": f"outside {where}", "community-host": "community marketplace hosts",
             "not-in-regions": "outside deployment.regions"}
    if st.excluded:
        what = f"{st.gpus}x {st.gpu}" if st.gpu else "any GPU"
        lines.append(f"- Offers for {what} excluded by the policy: "
                     + ", ".join(f"{n} {names.get(k, k)}" for k, n in st.excluded.items()) + ".")
    if st.no_compliant_offer:
        what = f"{st.gpus}x {st.gpu}-class" if st.gpu else "this workload"
        lines.append(f"- No compliant offer in the catalog for {what}"
                     + (f"; closest compliant: {st.closest_compliant}." if st.closest_compliant
                        else "; the policy allows none of the catalog's offers (add your own with --catalog)."))
    for f in st.export:
        lines.append(f"- Export rule ({f.kind}, {f.effect}): {f.summary} [{f.source}, {f.observed}]")
    if len(lines) == 1 and st.data_sensitivity in ("internal", "public") and not st.export:
        return []
    return ["", f"{h2}Where it may run" if md else "Where it may run:", *lines]


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
    rate = (f"{th.tokens_per_s_per_gpu:,.0f} tokens/s/GPU" if th.tokens_per_s_per_gpu is not None
            else f"{th.samples_per_s_per_gpu:,.1f} samples/s/GPU" if th.samples_per_s_per_gpu is not None
            else "n/a")
    fits = "fits" if m.fits else "DOES NOT FIT"
    rows = [
        ("Model", f"{est.model.name} ({est.model.family}), {fmt_count(est.model.params_total)} params"
                  + (f", {fmt_count(est.model.params_active)} active"
                     if est.model.params_active != est.model.params_total else "")
                  + (f", {fmt_count(est.model.params_trainable)} trainable"
                     if est.model.params_trainable != est.model.params_total else "")),
        ("Hardware", f"{p.gpus}x {est.gpu_name} ({p.nodes} node{'s' if p.nodes > 1 else ''} x {p.gpus_per_node})"),
        ("Plan", f"{p.framework}: DP {p.dp}, TP {p.tp}, PP {p.pp}, ZeRO {p.zero_stage}, offload {p.offload}, "
                 f"micro-batch {p.micro_batch} x accum {p.grad_accum}, checkpointing {p.activation_checkpointing}"),
        ("Memory / GPU", f"{m.per_gpu_gib:.1f} GiB of {m.capacity_gib:.0f} GiB ({fits}; "
                         f"{fmt_pct(m.headroom_frac)} free, plan limit {m.usable_gib:.1f} GiB)"),
        ("  breakdown", f"weights {b.weights:.1f}, gradients {b.gradients:.1f}, optimizer {b.optimizer:.1f}, "
                        f"activations {b.activations:.1f}, overhead {b.overhead:.1f} GiB"),
        ("Throughput", f"{rate}, MFU {th.mfu:.2f} ({th.achieved_tflops:.0f} of {th.peak_tflops:.0f} TFLOPS)"),
        ("Time / run", f"{fmt_hours(t.wall_hours)} wall, {t.gpu_hours:,.0f} GPU-hours, {t.total_pflop:,.0f} PFLOP"),
    ]
    if m.host_ram_gib:
        rows.append(("Host RAM", f"{m.host_ram_gib:.0f} GiB per node for CPU offload"))
    rows += _range_rows(est)
    out: list[str] = []
    if md:
        out += ["| | |", "|---|---|"] + [f"| {k.strip()} | {v} |" for k, v in rows]
    else:
        out += [f"{k:<14}{v}" for k, v in rows]
    if est.problems:
        out.append("")
        out += [("- " if md else "! ") + pr for pr in est.problems]
    if est.assumptions:
        out += ["", "**Assumptions**" if md else "Assumptions:"]
        out += [("- " if md else "  - ") + a for a in est.assumptions]
    return out


def _range_rows(est: Estimate) -> list[tuple[str, str]]:
    """P10-P90 ranges (cross-validated) and the same run on other stacks."""
    m, t, th = est.memory, est.time, est.throughput
    parts: list[str] = []
    head = th.tokens_per_s_per_gpu if th.tokens_per_s_per_gpu is not None else th.samples_per_s_per_gpu
    unit = "tokens/s/GPU" if th.tokens_per_s_per_gpu is not None else "samples/s/GPU"
    if th.range and head is not None:
        parts.append(fmt_range(head, th.range.low, th.range.high, unit))
    if t.wall_hours_range:
        parts.append(f"{fmt_hours(t.wall_hours)} wall ({fmt_hours(t.wall_hours_range.low)}–"
                     f"{fmt_hours(t.wall_hours_range.high)})")
    if m.per_gpu_gib_range:
        parts.append(fmt_range(m.per_gpu_gib, m.per_gpu_gib_range.low, m.per_gpu_gib_range.high, "GiB/GPU")
                     + (" -- P90 above the card" if m.p90_exceeds_capacity else ""))
    rows = [("P10-P90", "; ".join(parts))] if parts else []
    for a in est.stack_alternatives:
        rows.append(("  stack", f"{a.name} would take {fmt_hours(a.wall_hours)} instead of {fmt_hours(t.wall_hours)} "
                                f"({a.change * 100:+.0f}%)" + ("" if a.feasible else ", does not fit")))
    return rows


def render_estimate(est: Estimate, fmt: Format = "text") -> str:
    if fmt == "json":
        return _json(estimate_data(est))
    md = fmt == "md"
    head = [f"# gpuwiz estimate: {est.model.name} on {est.plan.gpus}x {est.gpu_name}", ""] if md else []
    return "\n".join(head + _estimate_lines(est, md)) + "\n"


# ---- Recommendation ------------------------------------------------------------------------------


def _build_lines(build: Build, md: bool, h2: str, title: str) -> list[str]:
    out = [f"{h2}{title}" if md else title]
    rows = [[b.item, str(b.qty), fmt_usd(b.unit_usd), fmt_usd(b.total_usd), b.note] for b in build.bom]
    out += _table(["Item", "Qty", "Unit", "Total", "Note"], rows, md)
    out += ["", f"{'**' if md else ''}Capex {fmt_usd(build.capex_usd)}{'**' if md else ''}", ""]
    sysrows = [
        ("GPUs", f"{build.nodes} node(s) x {build.gpus_per_node}x {build.gpu_name}"),
        ("CPU", f"{build.cpu_count}x {build.cpu} ({build.cpu_cores} cores, {build.pcie_lanes} PCIe lanes per node)"),
        ("RAM", f"{build.ram_gb} GB per node"),
        ("Storage", "; ".join(build.storage)),
        ("Network", build.network),
        ("Power", f"{build.power_w:,} W sustained, PSU {build.psu_w or 0:,} W per node; "
                  f"{build.heat_kw:.1f} kW of heat"),
        ("Site", build.site),
        ("Software", "; ".join(build.software)),
    ]
    out += [f"- **{k}**: {v}" for k, v in sysrows] if md else [f"  {k:<9}{v}" for k, v in sysrows]
    return [*out, ""]


def pareto_against_pick(rec: Recommendation) -> list[tuple[ParetoPoint, str]]:
    """Each point of the time / cost front with how it compares to the pick ('2.1x faster for +13%',
    'the pick'); empty when there is no front to show. The report and the TUI both print these."""
    b = rec.build
    if b is None or len(rec.pareto) < 2 or rec.cost_per_run_usd is None:
        return []
    me = next((p for p in rec.pareto if p.gpu == b.gpu and p.count == b.gpus_per_node * b.nodes
               and p.nodes == b.nodes), None)
    base_h = me.wall_hours if me else (rec.estimate.time.wall_hours if rec.estimate else 0.0)
    base_c = rec.cost_per_run_usd
    out: list[tuple[ParetoPoint, str]] = []
    for p in rec.pareto:
        speed = base_h / p.wall_hours if p.wall_hours > 0 else 1.0
        dc = p.cost_per_run_usd / base_c - 1 if base_c > 0 else 0.0
        if p is me:
            what = "the pick"
        elif speed >= 1:
            what = f"{speed:.1f}x faster for {dc:+.0%}" if dc >= 0 else f"{speed:.1f}x faster and {-dc:.0%} cheaper"
        else:
            what = f"{1 / speed:.1f}x slower, {-dc:.0%} cheaper" if dc < 0 else f"{1 / speed:.1f}x slower"
        out.append((p, what))
    return out


def _pareto_lines(rec: Recommendation, md: bool, h2: str) -> list[str]:
    """The time / cost front against the pick: '2.1x faster for 13 % more'."""
    pts = pareto_against_pick(rec)
    if not pts:
        return []
    rows = [[f"{p.count}x {p.gpu}" + (f" ({p.nodes} nodes)" if p.nodes > 1 else ""),
             "rent" if p.rented else "buy", fmt_hours(p.wall_hours), fmt_usd(p.cost_per_run_usd), what]
            for p, what in pts]
    out = [f"{h2}Time vs cost (Pareto front)" if md else "Time vs cost (Pareto front):"]
    return out + _table(["Build", "How", "Time/run", "Cost/run", "Against the pick"], rows, md) + [""]


def _pitfall_lines(rec: Recommendation, md: bool) -> list[str]:
    out = []
    for p in sorted(rec.pitfalls, key=lambda p: SEVERITY_ORDER[p.severity]):
        label = SEVERITY_LABEL[p.severity]
        out.append(f"- **{label}** {p.message} _(source: {p.source})_" if md else f"  [{label:<7}] {p.message}")
    return out


def _table(headers: list[str], rows: list[list[str]], md: bool) -> list[str]:
    if md:
        return ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)] + [
            "| " + " | ".join(r) + " |" for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    def line(cells: list[str]) -> str:
        return "  " + "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=False))

    return [line(headers)] + [line(r) for r in rows]


def render_recommendation(rec: Recommendation, req: Requirements | None = None, fmt: Format = "text") -> str:
    if fmt == "json":
        return _json(recommendation_data(rec))
    md = fmt == "md"
    h1, h2 = ("# ", "## ") if md else ("", "")
    out: list[str] = []
    est, build, cost = rec.estimate, rec.build, rec.cost
    model_name = est.model.name if est else (req.model.preset or req.model.name or "custom model") if req else "model"
    if not rec.found or build is None or est is None:
        out += [f"{h1}gpuwiz: no build meets the requirements for {model_name}", ""]
        if rec.dropped:
            out.append(f"Considered {rec.candidates_considered} candidate builds; dropped: "
                       + ", ".join(f"{n} {why}" for why, n in rec.dropped.items()) + ".")
        if rec.binding_constraint:
            out += ["", f"Binding constraint ({rec.binding_constraint.kind}): {rec.binding_constraint.message}."]
        out += [f"Assumed: {a}." for a in rec.assumptions]
        if rec.suggestions:
            out += ["", f"{h2}What would work" if md else "What would work:"]
            out += [f"- {s}" for s in rec.suggestions]
        out += _market_lines(rec, md, h2)
        if rec.pitfalls:
            out += ["", f"{h2}Warnings" if md else "Warnings:", *_pitfall_lines(rec, md)]
        return "\n".join(out) + "\n"

    n_gpus = build.gpus_per_node * build.nodes
    verdict = cost.verdict.upper() if cost else "n/a"
    out += [f"{h1}gpuwiz recommendation: {n_gpus}x {build.gpu_name} for {model_name}", ""]
    summary = (f"{'**Verdict: ' + verdict + '.**' if md else 'Verdict: ' + verdict + '.'} "
               + (cost.verdict_reason[:1].upper() + cost.verdict_reason[1:] if cost else ""))
    out += [summary, ""]
    tr, cr, mr = est.time.wall_hours_range, rec.cost_per_run_usd_range, est.memory.per_gpu_gib_range
    out += [f"Time per run {fmt_hours(est.time.wall_hours)}{fmt_span(tr, fmt_hours, 'P10-P90 ')}"
            + f" ({est.time.gpu_hours:,.0f} GPU-hours), cost per run {_money(rec.cost_per_run_usd, rec)}"
            + fmt_span(cr, fmt_usd)
            + f", memory {est.memory.per_gpu_gib:.1f}{fmt_span(mr, lambda v: f'{v:.1f}')}"
            + f" of {est.memory.capacity_gib:.0f} GiB per GPU. Objective: {rec.objective}; "
            f"{rec.candidates_considered} builds considered. Ranges: the cross-validated errors of published runs "
            "like this one (docs/VALIDATION.md).", ""]
    if rec.binding_constraint:
        out += [f"{'**' if md else ''}Binding constraint ({rec.binding_constraint.kind}):{'**' if md else ''} "
                f"{rec.binding_constraint.message}.", ""]
    if rec.assumptions:
        out += [f"Assumed: {a}." for a in rec.assumptions] + [""]
    out += _pareto_lines(rec, md, h2)

    rented = build.rented
    if rented:
        out += [f"{h2}Rent" if md else "Rent:"]
        offer = cost.rent_offer if cost else None
        shape = (f"{offer.instances} instance{'s' if offer.instances > 1 else ''} x {offer.gpus_per_instance} "
                 f"GPU{'s' if offer.gpus_per_instance > 1 else ''}"
                 if offer else f"{n_gpus} GPUs")
        out += [f"- {build.site.removeprefix('cloud: ')}: {n_gpus}x {build.gpu_name} ({shape}), "
                f"{fmt_usd(rec.cost_per_run_usd)} per run"
                + (f" incl. {offer.overhead_hours:,.1f} h of provisioning, image pull and data staging and "
                   f"{fmt_usd(offer.egress_usd)} egress" if offer else "")]
        inst = build.instance
        if inst is not None:
            host = ", ".join(x for x in (f"{inst.vcpus} vCPUs" if inst.vcpus else "",
                                         f"{inst.ram_gib:,.0f} GiB RAM" if inst.ram_gib else "",
                                         f"{inst.local_nvme_tb:g} TB local NVMe" if inst.local_nvme_tb else "") if x)
            unknown = "vCPUs, RAM and local disk not published by the provider: check before renting"
            out += [f"- Host: {host or unknown}"]
        tb = build.storage_needed_tb
        need = f"{max(tb * 1000, 1):,.0f} GB" if tb < 1 else f"{tb:,.1f} TB"
        ckpt = f", checkpoints ~{build.checkpoint_gb:,.0f} GB each" if build.checkpoint_gb >= 1 else ""
        out += [f"- Storage: {need} for data and checkpoints on the instance's local NVMe or a network volume"
                f"{ckpt}; keep an off-site copy of checkpoints in object storage"]
        out += [f"- Software: {'; '.join(build.software)}", ""]
    else:
        out += _build_lines(build, md, h2, "Bill of materials" if md else "Bill of materials (per node unless noted):")
    if rented and rec.buy_build is not None:
        out += _build_lines(rec.buy_build, md, h2, "If you would rather own it" if md
                            else "If you would rather own it (bill of materials, per node unless noted):")
    out += [f"{h2}Estimate" if md else "Estimate:", *_estimate_lines(est, md)]

    if rec.alternatives:
        out += ["", f"{h2}Alternatives" if md else "Alternatives:"]
        rows = [[f"{a.count}x {a.gpu_name}", fmt_hours(a.wall_hours), fmt_usd(a.cost_per_run_usd), a.reason]
                for a in rec.alternatives]
        out += _table(["Build", "Time/run", "Cost/run", "Why"], rows, md)

    if cost:
        out += ["", f"{h2}Rent vs buy" if md else "Rent vs buy:"]
        if cost.cloud:
            noted = any(c.note for c in cost.cloud)
            # A reservation is billed 24/7: its per-run share only means something when it is
            # cheaper than on-demand; otherwise say so rather than print a $30k "run".
            rows = [[c.provider, f"{c.instances}x {c.instance}", f"{c.instances * c.gpus_per_instance}",
                     (c.country or "-") + (f" {c.tier}" if c.tier else ""),
                     _price_cell(c.usd_per_hour, c.currency, c.price_per_hour_local),
                     fmt_usd(c.cost_per_run_usd), fmt_usd(c.cost_per_run_spot_usd),
                     fmt_usd(c.cost_per_run_reserved_usd) if (c.cost_per_run_reserved_usd or 0) < c.cost_per_run_usd
                     else "not worth it", fmt_usd(c.cost_per_year_usd), c.observed or "-"]
                    + ([c.note] if noted else []) for c in cost.cloud]
            out += _table(["Cloud", "Instances", "GPUs", "Where", "Price", "Run (on-demand)", "Run (spot)",
                           "Run (reserved)", "Per year", "Price observed"] + (["Note"] if noted else []), rows, md)
        if cost.onprem:
            o = cost.onprem
            out += ["", f"Buy: capex {fmt_usd(o.capex_usd)}; per year power {fmt_usd(o.power_usd_per_year)}, "
                        f"space {fmt_usd(o.space_usd_per_year)}, maintenance {fmt_usd(o.maintenance_usd_per_year)}, "
                        f"staff {fmt_usd(o.staff_usd_per_year)}; residual value {fmt_usd(o.residual_value_usd)}; "
                        f"total {fmt_usd(o.total_usd)} over the horizon = {fmt_usd(o.usd_per_gpu_hour)} per delivered "
                        f"GPU-hour at {fmt_pct(o.utilization)} utilisation."]
        facts = []
        if cost.rent_usd_per_gpu_hour is not None:
            facts.append(f"rent {fmt_usd(cost.rent_usd_per_gpu_hour)} per GPU-hour")
        if cost.breakeven_utilization is not None:
            be = cost.breakeven_utilization
            facts.append(f"break-even at {fmt_pct(be)} utilisation" if be <= 1
                         else f"buying never breaks even (it would need {fmt_pct(be)} utilisation)")
        if cost.payback_months is not None:
            facts.append(f"payback {cost.payback_months:.0f} months")
        if facts:
            joined = "; ".join(facts)
            out += ["", joined[:1].upper() + joined[1:] + "."]
        if cost.flip_inputs:
            out += ["", "What would flip the verdict:"] + [f"- {f}" for f in cost.flip_inputs]

    out += _market_lines(rec, md, h2)
    if rec.pitfalls:
        out += ["", f"{h2}Warnings" if md else "Warnings:", *_pitfall_lines(rec, md)]
    if rec.dropped:
        out += ["", "Dropped candidates: " + ", ".join(f"{n} {why}" for why, n in rec.dropped.items()) + "."]
    return "\n".join(out) + "\n"
