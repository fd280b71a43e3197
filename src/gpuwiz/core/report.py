"""Renderings of an Estimate or a Recommendation: plain text, Markdown (a procurement memo), JSON.

Pure functions from result models to strings; the CLI prints them, the TUI exports them.
"""

from __future__ import annotations

import json
import math
from typing import Any, Literal

from gpuwiz.core.models import SEVERITY_ORDER, Build, Estimate, Recommendation, Requirements
from gpuwiz.core.whatif import fmt_hours, fmt_usd

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


def recommendation_data(rec: Recommendation) -> dict[str, Any]:
    return rec.model_dump(mode="json")


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
        ("Power", f"{build.power_w:,} W sustained, PSU {build.psu_w:,} W per node; {build.heat_kw:.1f} kW of heat"),
        ("Site", build.site),
        ("Software", "; ".join(build.software)),
    ]
    out += [f"- **{k}**: {v}" for k, v in sysrows] if md else [f"  {k:<9}{v}" for k, v in sysrows]
    return [*out, ""]


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
        if rec.suggestions:
            out += ["", f"{h2}What would work" if md else "What would work:"]
            out += [f"- {s}" for s in rec.suggestions]
        if rec.pitfalls:
            out += ["", f"{h2}Warnings" if md else "Warnings:", *_pitfall_lines(rec, md)]
        return "\n".join(out) + "\n"

    n_gpus = build.gpus_per_node * build.nodes
    verdict = cost.verdict.upper() if cost else "n/a"
    out += [f"{h1}gpuwiz recommendation: {n_gpus}x {build.gpu_name} for {model_name}", ""]
    summary = (f"{'**Verdict: ' + verdict + '.**' if md else 'Verdict: ' + verdict + '.'} "
               + (cost.verdict_reason[:1].upper() + cost.verdict_reason[1:] if cost else ""))
    out += [summary, ""]
    out += [f"Time per run {fmt_hours(est.time.wall_hours)} ({est.time.gpu_hours:,.0f} GPU-hours), "
            f"cost per run {fmt_usd(rec.cost_per_run_usd)}, memory {est.memory.per_gpu_gib:.1f} of "
            f"{est.memory.capacity_gib:.0f} GiB per GPU. Objective: {rec.objective}; "
            f"{rec.candidates_considered} builds considered.", ""]

    rented = cost is not None and cost.verdict == "rent" and build.capex_usd == 0 and not build.bom
    if rented:
        out += [f"{h2}Rent" if md else "Rent:"]
        out += [f"- {build.site.removeprefix('cloud: ')}: {n_gpus}x {build.gpu_name}, "
                f"{fmt_usd(rec.cost_per_run_usd)} per run"]
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
            rows = [[c.provider, f"{c.instances}x {c.instance}", fmt_usd(c.usd_per_hour) + "/h",
                     fmt_usd(c.cost_per_run_usd), fmt_usd(c.cost_per_run_spot_usd),
                     fmt_usd(c.cost_per_run_reserved_usd), fmt_usd(c.cost_per_year_usd)]
                    + ([c.note] if noted else []) for c in cost.cloud]
            out += _table(["Cloud", "Instances", "Price", "Run (on-demand)", "Run (spot)", "Run (reserved)",
                           "Per year"] + (["Note"] if noted else []), rows, md)
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

    if rec.pitfalls:
        out += ["", f"{h2}Warnings" if md else "Warnings:", *_pitfall_lines(rec, md)]
    if rec.dropped:
        out += ["", "Dropped candidates: " + ", ".join(f"{n} {why}" for why, n in rec.dropped.items()) + "."]
    return "\n".join(out) + "\n"
