"""Rich renderables for the result and compare screens (pure functions of the answer)."""

from __future__ import annotations

import re

from rich.cells import cell_len, set_cell_size
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from gpuwiz.core.models import Build, CurrencyInfo, Recommendation
from gpuwiz.core.report import how_label, pareto_against_pick, pick_point, where_it_may_run
from gpuwiz.core.whatif import (
    OWNED_VERDICT,
    Delta,
    currency_symbol,
    fmt_gib,
    fmt_gpu_hours,
    fmt_hours,
    fmt_span,
    money_fmt,
    owned_lead,
    pitfalls_by_severity,
)
from gpuwiz.i18n import _
from gpuwiz.tui.plain import add_row, plain
from gpuwiz.tui.widgets.bars import breakdown_bar, breakdown_legend, memory_bar
from gpuwiz.tui.widgets.live_panel import SEVERITY_STYLE

DIRECTION_STYLE = {"better": "bold green", "worse": "bold red", "changed": "bold yellow", "same": "dim"}
DIRECTION_MARK = {"better": "▼ ", "worse": "▲ ", "changed": "◆ ", "same": ""}


def _titled_table(title: str) -> Table:
    """The borderless, full-width table with a bold left title used on the result tabs."""
    return Table(title=title, title_justify="left", title_style="bold", expand=True, box=None,
                 header_style="bold", padding=(0, 1), pad_edge=False)


def nothing_fits(rec: Recommendation) -> RenderableType:
    parts: list[RenderableType] = [Text(_("Nothing fits these requirements."), style="bold red")]
    bc = rec.binding_constraint
    if bc is not None:  # what stops every build: budget, deadline, memory, policy or site
        line = Text()
        line.append(_("Binding constraint ({kind}): ").format(kind=bc.kind), style="bold")
        line.append_text(plain(bc.message))
        parts.append(line)
    if rec.dropped:
        parts.append(Text(_("Candidates dropped: ") + ", ".join(f"{_(k)} ({v})" for k, v in rec.dropped.items()),
                          style="dim"))
    for s in rec.suggestions:
        parts.append(plain("• " + s))
    return Group(*parts)


def deltas_table(deltas: list[Delta], two_columns: bool, width: int | None = None,
                 spans: dict[str, str] | None = None) -> Table:
    """Key numbers with their change against the baseline. ``spans``: text after a value by delta key
    (the P10-P90 range, ``whatif.fmt_span``). Given ``width`` (the box's), what would not fit is
    dropped instead of being cut: the change's percentage, then the range, then the change (the
    mark stays)."""
    table = Table(box=None, expand=True, show_header=False, padding=(0, 1), pad_edge=False)
    cols = 2 if two_columns else 1
    for _col in range(cols):
        table.add_column("what", style="dim", no_wrap=True)
        table.add_column("value", no_wrap=True, ratio=1)
    label_w = max((cell_len(_(d.label)) for d in deltas), default=0)
    room = None if not width else (width - cols * (label_w + 2)) // cols
    cells: list[Text] = []
    for d in deltas:
        after = _(d.after)  # a word (none, nothing fits, rent) in the interface language; numbers pass
        # a long GPU name: cut the name, never the count (nor the change mark after it)
        fit = None if room is None else room - (cell_len("  " + DIRECTION_MARK[d.direction]) if d.change else 0)
        if fit is not None and cell_len(after) > fit and " × " in after:
            name, count = after.rsplit(" × ", 1)
            keep = max(1, fit - cell_len(count) - 4)
            after = set_cell_size(name, keep).rstrip() + "… × " + count
        value = plain(after, "bold")
        span = (spans or {}).get(d.key, "")
        change = d.change
        if _too_wide(room, after, span, d.change, change):
            change = re.sub(r" \([^)]*%\)$", "", change)
        if _too_wide(room, after, span, d.change, change):
            span = ""
        if _too_wide(room, after, span, d.change, change):
            change = ""
        if span:
            value.append(span, style="dim")
        if d.change:
            value.append("  " + DIRECTION_MARK[d.direction] + change, style=DIRECTION_STYLE[d.direction])
        cells.extend([Text(_(d.label)), value])
    per_row = 2 * cols
    for i in range(0, len(cells), per_row):
        row = cells[i:i + per_row]
        row += [Text("")] * (per_row - len(row))
        add_row(table, *row)
    return table


def _too_wide(room: int | None, after: str, span: str, marked: str, change: str) -> bool:
    return room is not None and cell_len(after) + cell_len(span) + (4 + cell_len(change) if marked else 0) > room


def build_view(rec: Recommendation) -> RenderableType:
    m = money_fmt(rec.currency)  # money in the user's currency (the engine's numbers are USD)
    if not rec.found or rec.build is None:
        return nothing_fits(rec)
    b = rec.build
    head = Text()
    head.append(f"{b.gpu_name} × {b.gpus_per_node}", style="bold")
    head.append((_(" per node, {n} node") if b.nodes == 1 else _(" per node, {n} nodes")).format(n=b.nodes))
    if rec.estimate is not None:
        p = rec.estimate.plan
        head.append(f"  ·  {p.framework}, DP {p.dp}", style="dim")
        if p.tp > 1:
            head.append(f" TP {p.tp}", style="dim")
        if p.pp > 1:
            head.append(f" PP {p.pp}", style="dim")
        if p.zero_stage:
            head.append(f" ZeRO-{p.zero_stage}", style="dim")
        if p.offload != "none":
            head.append(_(" offload {what}").format(what=p.offload), style="dim")
    lead = owned_lead(rec)
    if lead is not None:  # owned hardware does the run: the build below is for adding capacity
        owned = Text.assemble((_("Use what you own: "), "bold"), _("{sentence}.").format(sentence=lead),
                              "\n", (_("To add capacity: "), "bold"))
        head = Text.assemble(owned, head)
    tight: list[RenderableType] = []
    if rec.binding_constraint is not None:  # found, but e.g. no build ends with slack before the deadline
        bc = rec.binding_constraint
        tight.append(Text.assemble((_("Binding constraint ({kind}): ").format(kind=bc.kind), "bold yellow"),
                                   plain(bc.message)))
    if b.bom:
        return Group(head, *tight, Text(""), *_build_block(b, _("Bill of materials"), rec.currency))
    rented = Text()
    rented.append(_("Rent: "), style="bold")
    rented.append(b.site.removeprefix("cloud: "))
    if rec.cost_per_run_usd is not None:
        rented.append(_(", {money} per run").format(money=m(rec.cost_per_run_usd)))
    parts: list[RenderableType] = [head, *tight, rented, *_instance_lines(rec)]
    if b.software:
        parts.append(Text(_("Software: ") + ", ".join(b.software), style="dim"))
    if rec.buy_build is not None:
        bb = rec.buy_build
        parts += [Text(""), Text(_("If you would rather own it: ") + f"{bb.gpu_name} × {bb.gpus_per_node}"
                                 + (_(" × {n} nodes").format(n=bb.nodes) if bb.nodes > 1 else ""), style="bold")]
        parts += _build_block(bb, _("Bill of materials (to own)"), rec.currency)
    else:
        parts.append(Text(_("No build you could buy meets these requirements; cloud offers are on tab 3."),
                          style="dim"))
    return Group(*parts)


def _instance_lines(rec: Recommendation) -> list[RenderableType]:
    """A rented pick is instances, not a chassis: how many, of which offer, and each one's host."""
    m = money_fmt(rec.currency)  # money in the user's currency (the engine's numbers are USD)
    b, offer = rec.build, rec.cost.rent_offer if rec.cost else None
    out: list[RenderableType] = []
    if offer is not None:
        where = ", ".join(x for x in (offer.region, offer.country) if x)
        fmt = (_("Instances: {n} × {offer} ({gpus} GPU each{where}), {usd}/h in all") if offer.gpus_per_instance == 1
               else _("Instances: {n} × {offer} ({gpus} GPUs each{where}), {usd}/h in all"))
        out.append(plain(fmt.format(
            n=offer.instances, offer=f"{offer.provider} {offer.instance}", gpus=offer.gpus_per_instance,
            where=f", {where}" if where else "", usd=m(offer.usd_per_hour))))
    inst = b.instance if b is not None else None
    if inst is not None:
        host = [_("{n} vCPUs").format(n=inst.vcpus) if inst.vcpus else _("vCPUs not published"),
                _("{gib} RAM").format(gib=fmt_gib(inst.ram_gib)) if inst.ram_gib else _("RAM not published"),
                _("{tb} TB local NVMe").format(tb=f"{inst.local_nvme_tb:g}") if inst.local_nvme_tb
                else _("no local NVMe published")]
        out.append(plain(_("Each instance: ") + ", ".join(host)))
        need = rec.estimate.memory.host_ram_gib if rec.estimate is not None else 0.0
        if need > 0:
            out.append(plain(_("CPU offload needs {gib} of host RAM per node").format(gib=fmt_gib(need)), "dim"))
    return out


def pareto_view(rec: Recommendation) -> RenderableType | None:
    """The time / cost front against the pick ('2.1x faster for +13%'), or None without one."""
    m = money_fmt(rec.currency)  # money in the user's currency (the engine's numbers are USD)
    pts = pareto_against_pick(rec)
    if not pts:
        return None
    table = _titled_table(_("Time vs cost (Pareto front)"))
    table.add_column(_("Build"), ratio=1)
    table.add_column(_("How"), no_wrap=True)
    table.add_column(_("Time"), justify="right", no_wrap=True)
    table.add_column(_("{sym}/run").format(sym=currency_symbol(rec.currency)), justify="right", no_wrap=True)
    table.add_column(_("Against the pick"), ratio=1)
    me = pick_point(rec)
    for p, what in pts:
        label = f"{p.count} × {p.gpu}" + (_(" ({n} nodes)").format(n=p.nodes) if p.nodes > 1 else "")
        add_row(table, plain(label, "bold" if p is me else ""), how_label(p),
                fmt_hours(p.wall_hours), m(p.cost_per_run_usd), what)
    return table


def _build_block(b: Build, title: str, cur: CurrencyInfo | None = None) -> list[RenderableType]:
    """Spec lines and bill of materials of one physical build (money in ``cur``)."""
    m = money_fmt(cur)
    spec = Table(box=None, show_header=False, padding=(0, 1), pad_edge=False)
    spec.add_column(style="dim", no_wrap=True)
    spec.add_column()
    add_row(spec, _("CPU"), f"{b.cpu_count} × {b.cpu}"
            + (_(" ({n} cores/node)").format(n=b.cpu_cores) if b.cpu_cores else ""))
    if b.ram_gb:
        add_row(spec, _("RAM"), _("{n} GB per node").format(n=b.ram_gb))
    if b.storage:
        add_row(spec, _("Storage"), "; ".join(b.storage))
    if b.network:
        add_row(spec, _("Network"), b.network)
    if b.power_w:
        add_row(spec, _("Power"), _("{w:,} W sustained per node (PSU {psu:,} W); heat {kw:.1f} kW").format(
            w=b.power_w, psu=b.psu_w or 0, kw=b.heat_kw))
    if b.site:
        add_row(spec, _("Site"), b.site)
    if b.software:
        add_row(spec, _("Software"), ", ".join(b.software))
    bom = _titled_table(title)
    bom.add_column(_("Item"), ratio=1)
    bom.add_column(_("Qty"), justify="right", no_wrap=True)
    bom.add_column(_("Unit"), justify="right", no_wrap=True)
    bom.add_column(_("Total"), justify="right", no_wrap=True)
    for line in b.bom:
        item = plain(line.item)
        if line.note:
            item.append_text(plain(f" ({line.note})", "dim"))
        add_row(bom, item, str(line.qty), m(line.unit_usd), m(line.total_usd))
    add_row(bom, plain(_("Capex") if b.capex_known else _("Capex without the items whose price is unknown"), "bold"),
            "", "", plain(m(b.capex_usd), "bold"))
    return [spec, Text(""), bom]


def memory_view(rec: Recommendation, width: int) -> RenderableType:
    if rec.estimate is None:
        return nothing_fits(rec)
    e = rec.estimate
    m = e.memory
    bar_w = max(10, width - 2)
    parts: list[RenderableType] = [
        Text.assemble((_("Memory per GPU "), "bold"), _("{used} of {cap} (usable {usable}, {free:.0f}% free)").format(
            used=fmt_gib(m.per_gpu_gib), cap=fmt_gib(m.capacity_gib), usable=fmt_gib(m.usable_gib),
            free=m.headroom_frac * 100)),
        memory_bar(m.per_gpu_gib, m.capacity_gib, m.usable_gib, bar_w),
        Text(""),
        Text(_("By component"), style="bold"),
        breakdown_bar(m.breakdown, m.capacity_gib, bar_w),
        breakdown_legend(m.breakdown),
    ]
    if m.host_ram_gib:
        parts.append(Text(_("Host RAM for offload: {gib} per node").format(gib=fmt_gib(m.host_ram_gib))))
    t = e.throughput
    perf = Table(box=None, show_header=False, padding=(0, 1), pad_edge=False)
    perf.add_column(style="dim", no_wrap=True)
    perf.add_column()
    if t.tokens_per_s_per_gpu:
        add_row(perf, _("Throughput"), _("{n:,.0f} tokens/s per GPU").format(n=t.tokens_per_s_per_gpu))
    if t.samples_per_s_per_gpu:
        add_row(perf, _("Throughput"), _("{n:,.1f} samples/s per GPU").format(n=t.samples_per_s_per_gpu))
    add_row(perf, "MFU", _("{pct:.0f}% of {peak:,.0f} TFLOPS peak").format(pct=t.mfu * 100, peak=t.peak_tflops))
    add_row(perf, _("Time per run"), _("{wall} wall, {gpuh} GPU-hours").format(
        wall=fmt_hours(e.time.wall_hours), gpuh=fmt_gpu_hours(e.time.gpu_hours)))
    p = e.plan
    add_row(perf, _("Plan"), _("micro-batch {mb} × accum {acc}, checkpointing {ckpt}").format(
        mb=p.micro_batch, acc=p.grad_accum, ckpt=p.activation_checkpointing))
    parts += [Text(""), perf]
    for a in e.assumptions[:6]:
        parts.append(Text("· " + a, style="dim"))
    return Group(*parts)


def alternatives_view(rec: Recommendation) -> RenderableType:
    m = money_fmt(rec.currency)  # money in the user's currency (the engine's numbers are USD)
    parts: list[RenderableType] = []
    front = pareto_view(rec)
    if front is not None:
        parts += [front, Text("")]
    alt = _titled_table(_("Alternatives"))
    alt.add_column("GPU", ratio=1)
    alt.add_column("×", justify="right", no_wrap=True)
    alt.add_column(_("Time"), justify="right", no_wrap=True)
    alt.add_column(_("{sym}/run").format(sym=currency_symbol(rec.currency)), justify="right", no_wrap=True)
    alt.add_column(_("Why"), ratio=2)
    for a in rec.alternatives:
        add_row(alt, a.gpu_name, str(a.count), fmt_hours(a.wall_hours), m(a.cost_per_run_usd), a.reason)
    if not rec.alternatives:
        add_row(alt, "—", "", "", "", _("no other feasible build"))
    parts.append(alt)
    if rec.cost and rec.cost.cloud:
        cloud = _titled_table(_("Cloud offers"))
        cloud.add_column(_("Provider / instance"), ratio=1)
        cloud.add_column("n", justify="right", no_wrap=True)
        cloud.add_column(currency_symbol(rec.currency) + "/h", justify="right", no_wrap=True)
        cloud.add_column(_("{sym}/run").format(sym=currency_symbol(rec.currency)), justify="right", no_wrap=True)
        cloud.add_column(_("spot"), justify="right", no_wrap=True)
        for c in rec.cost.cloud[:8]:
            add_row(cloud, f"{c.provider} {c.instance}", str(c.instances), m(c.usd_per_hour),
                          m(c.cost_per_run_usd), m(c.cost_per_run_spot_usd))
        parts += [Text(""), cloud]
    parts.append(Text(_("{n} candidates considered").format(n=rec.candidates_considered), style="dim"))
    return Group(*parts)


def cost_summary(rec: Recommendation) -> RenderableType:
    m = money_fmt(rec.currency)  # money in the user's currency (the engine's numbers are USD)
    c = rec.cost
    if c is None:
        return Text(_("No rent-vs-buy analysis for this answer."), style="dim")
    t = Text()
    t.append(_("Verdict: "), style="bold")
    lead = owned_lead(rec)
    if lead is not None:  # owned hardware does the run: use it; the rent-vs-buy verdict is for adding capacity
        t.append(f" {_(OWNED_VERDICT).upper()} ", style="bold reverse")
        t.append(" " + _("{sentence}.").format(sentence=lead[:1].upper() + lead[1:]) + " ")
        t.append(_("To add capacity: "), style="bold")
    t.append(f" {_(c.verdict).upper()} ", style="bold reverse")
    t.append(" " + c.verdict_reason)
    rows = Table(box=None, show_header=False, padding=(0, 1), pad_edge=False)
    rows.add_column(style="dim", no_wrap=True)
    rows.add_column()
    if rec.cost_per_run_usd is not None:  # the P10-P90 ranges, as in the live panel and the memo
        per_run = m(rec.cost_per_run_usd) + fmt_span(rec.cost_per_run_usd_range, m)
        if rec.estimate is not None:
            t_run = rec.estimate.time
            per_run = f"{fmt_hours(t_run.wall_hours)}{fmt_span(t_run.wall_hours_range, fmt_hours)}, " + per_run
        add_row(rows, _("Per run"), per_run + _(" (P10–P90 in brackets)"))
    if c.rent_usd_per_gpu_hour is not None:
        add_row(rows, _("Rent"), _("{money} per GPU-hour").format(money=m(c.rent_usd_per_gpu_hour)))
    if c.onprem is not None:
        o = c.onprem
        add_row(rows, _("Buy"), _("capex {capex}, TCO {tco} over the horizon, {per}/GPU-h at {busy:.0f}% busy").format(
            capex=m(o.capex_usd), tco=m(o.total_usd), per=m(o.usd_per_gpu_hour),
            busy=o.utilization * 100))
    if c.breakeven_utilization is not None:
        be = c.breakeven_utilization
        add_row(rows, _("Break-even"), (_("buying wins above {pct:.0f}% utilisation") if be <= 1 else
                                        _("never: buying would need {pct:.0f}% utilisation")).format(pct=be * 100))
    if c.payback_months is not None:
        add_row(rows, _("Payback"), _("{n:.0f} months").format(n=c.payback_months))
    parts: list[RenderableType] = [t, rows]
    if c.flip_inputs:
        parts.append(Text(_("Would flip the verdict: ") + "; ".join(c.flip_inputs), style="dim"))
    where = where_it_may_run(rec)  # the data policy, the run kept at home, the export rules (as the memo says them)
    if where:
        parts += [Text(""), Text(_("Where it may run"), style="bold"), *(plain(line) for line in where)]
    return Group(*parts)


def pitfalls_view(rec: Recommendation) -> RenderableType:
    if not rec.pitfalls:
        return Text(_("No pitfalls found for this build."), style="green")
    parts: list[RenderableType] = []
    for p in pitfalls_by_severity(rec.pitfalls):
        t = Text()
        badge = _(p.severity.upper())
        t.append(f" {badge}{' ' * max(0, 6 - cell_len(badge))} ", style=SEVERITY_STYLE.get(p.severity, ""))
        t.append_text(plain(" " + p.message))
        parts.append(t)
        if p.source:
            parts.append(plain("        " + _("source: ") + p.source, "dim"))
    return Group(*parts)
