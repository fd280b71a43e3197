"""What-if knobs and comparisons for the wizard (pure: no Textual, no I/O).

The TUI's result screen turns single key presses into new ``Requirements`` through the knob
functions here, and shows how the answer moved against a pinned baseline with ``diff``. The compare
view lists the differing requirement fields with ``requirement_changes``. Everything is a pure
function of frozen pydantic models, so it is cheap to test and to call on every key press.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from gpuwiz.core import pitfall_titles
from gpuwiz.core.models import SEVERITY_ORDER, CurrencyInfo, OwnedPick, Pitfall, Range, Recommendation, Requirements
from gpuwiz.i18n import N_, _

METHODS = ("full", "lora", "qlora")
PRECISIONS = ("bf16", "fp8", "fp16", "tf32", "fp32")
MODES = ("rent", "buy", "either")
COUNT_LADDER = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536)
DEADLINE_LADDER = (1, 2, 3, 5, 7, 10, 14, 21, 30, 45, 60, 90, 120, 180, 270, 365, 540, 730, 1095, 1825, 3650)


# --------------------------------------------------------------------------------------------------
# Formatting (shared by the live panel, the result screen and the compare view)
# --------------------------------------------------------------------------------------------------


def fmt_usd(v: float | None) -> str:
    if v is None or not math.isfinite(v):
        return "—"
    a = abs(v)
    sign = "-" if v < 0 else ""
    if a >= 1e9:
        return f"{sign}${a / 1e9:.2f}B"
    if a >= 1e6:
        return f"{sign}${a / 1e6:.2f}M"
    if a >= 10_000:
        return f"{sign}${a / 1e3:.1f}k"
    if a >= 100:
        return f"{sign}${a:,.0f}"
    return f"{sign}${a:.2f}"


def fmt_money(v: float | None, cur: CurrencyInfo | None = None) -> str:
    """``v`` USD shown in the user's currency (``Recommendation.currency``), as compact as
    ``fmt_usd``: ``¥578``, ``¥83.3k``, ``€1.20M``; plain ``fmt_usd`` for USD or no currency."""
    if cur is None or cur.code == "USD" or cur.usd_rate <= 0:
        return fmt_usd(v)
    if v is None or not math.isfinite(v):
        return "—"
    from gpuwiz.core.money import DISPLAY

    sym = DISPLAY.get(cur.code.upper())
    text = fmt_usd(v / cur.usd_rate).replace("$", "", 1)
    sign, num = ("-", text[1:]) if text.startswith("-") else ("", text)
    return f"{sign}{sym}{num}" if sym else f"{sign}{num} {cur.code.upper()}"


def currency_symbol(cur: CurrencyInfo | None) -> str:
    """``$``, ``¥``, ``€`` (the ISO code for a currency without a symbol) for column headings."""
    from gpuwiz.core.money import DISPLAY

    code = "USD" if cur is None else cur.code.upper()
    return DISPLAY.get(code, code)


def money_fmt(cur: CurrencyInfo | None) -> Callable[[float | None], str]:
    """``fmt_money`` bound to one currency (for ``fmt_span`` and the delta table)."""
    return lambda v: fmt_money(v, cur)


def fmt_hours(h: float | None) -> str:
    if h is None or not math.isfinite(h):
        return "—"
    if h * 60 < 0.5:
        return "<1 min"  # (not "0 min": a run that takes seconds still takes time)
    if h < 1:
        return f"{h * 60:.0f} min"
    if h < 48:
        return f"{h:.1f} h"
    d = h / 24
    if d < 365:
        return f"{d:.1f} d"
    return f"{d / 365:.1f} y"


def fmt_gpu_hours(h: float) -> str:
    """GPU-hours as the answers show them: whole hours from 10, one decimal below (a short run is not "0")."""
    return f"{h:,.0f}" if h >= 10 else f"{h:,.1f}"


def fmt_gib(g: float | None) -> str:
    if g is None or not math.isfinite(g):
        return "—"
    return f"{g:.1f} GiB" if g < 1000 else f"{g / 1024:.2f} TiB"


def fmt_human(v: float | None) -> str:
    """2e12 -> '2T', 1.5e9 -> '1.5B', 4.0 -> '4' (parses back through gpuwiz.core.units)."""
    if v is None:
        return ""
    if not math.isfinite(v):
        return str(v)
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(v) >= scale:
            q = v / scale
            text = f"{q:.6g}"
            if float(text) * scale == v or abs(float(text) * scale - v) <= abs(v) * 1e-9:
                return f"{text}{suffix}"
    if float(v).is_integer():
        return str(int(v))
    return f"{v:.6g}"


def fmt_plain(v: float | None) -> str:
    """A number without suffixes (for fields whose suffixes mean bytes)."""
    if v is None:
        return ""
    if float(v).is_integer() and abs(v) < 1e15:
        return str(int(v))
    return f"{v:.6g}"


# --------------------------------------------------------------------------------------------------
# Key numbers of a recommendation
# --------------------------------------------------------------------------------------------------



def fmt_span(r: Range | None, fmt: Callable[[float], str], prefix: str = "") -> str:
    """' (9.5 h–22.8 h)' for a P10-P90 range, '' without one (the live panel and the memo alike)."""
    return f" ({prefix}{fmt(r.low)}–{fmt(r.high)})" if r is not None else ""


OWNED_VERDICT = N_("use what you own")  # the verdict where owned hardware does the run (Recommendation.owned_pick)


def owned_part(pick: OwnedPick) -> str:
    """'8 of your 100000x NVIDIA H100 SXM5 80GB', or 'your 8x ...' when the run takes all of them."""
    return (_("your {owned}x {gpu}") if pick.count >= pick.owned else _("{used} of your {owned}x {gpu}")).format(
        used=pick.count, owned=pick.owned, gpu=pick.gpu_name)


def owned_lead(rec: Recommendation) -> str | None:
    """The verdict's sentence for ``rec.owned_pick`` ('8 of the 100000x NVIDIA H100 SXM5 80GB you own do this run in
    1.0 h for $1.84 of energy'), or None without one (core.owned sets it)."""
    pick = rec.owned_pick
    if pick is None:
        return None
    what = dict(n=pick.count, total=pick.owned, gpu=pick.gpu_name, h=fmt_hours(pick.wall_hours),
                usd=fmt_money(pick.energy_usd, rec.currency))
    return (_("the {n}x {gpu} you own does this run in {h} for {usd} of energy") if pick.count >= pick.owned else
            _("{n} of the {total}x {gpu} you own do this run in {h} for {usd} of energy")).format(**what)


@dataclass(frozen=True)
class KeyNumbers:
    found: bool
    gpu: str | None = None
    gpu_name: str | None = None
    count: int | None = None
    nodes: int | None = None
    mem_per_gpu_gib: float | None = None
    capacity_gib: float | None = None
    usable_gib: float | None = None
    wall_hours: float | None = None
    wall_hours_range: Range | None = None  # P10-P90 (cross-validated)
    cost_per_run_usd: float | None = None
    cost_per_run_usd_range: Range | None = None
    cost_per_year_usd: float | None = None
    capex_usd: float | None = None
    verdict: str | None = None
    worst_pitfall: Pitfall | None = None
    currency: CurrencyInfo | None = None  # what the money is shown in (the engine's numbers stay USD)

    @property
    def gpu_label(self) -> str:
        if not self.found or self.gpu is None:
            return "nothing fits"
        return f"{self.gpu_name or self.gpu} × {self.count}"


def worst_pitfall(pitfalls: list[Pitfall]) -> Pitfall | None:
    if not pitfalls:
        return None
    return sorted(pitfalls, key=lambda p: SEVERITY_ORDER.get(p.severity, 9))[0]


def pitfalls_by_severity(pitfalls: list[Pitfall]) -> list[Pitfall]:
    return sorted(pitfalls, key=lambda p: SEVERITY_ORDER.get(p.severity, 9))


def _capex(build: Any) -> float | None:
    """The build's capex, or None (shown as unknown) when there is none or a line of it has no price."""
    return build.capex_usd if build is not None and build.capex_usd and build.capex_known else None


def key_numbers(rec: Recommendation | None, req: Requirements | None = None) -> KeyNumbers:
    if rec is None:
        return KeyNumbers(found=False)
    est = rec.estimate
    build = rec.build
    count = None
    nodes = None
    if est is not None:
        count = est.plan.gpus
        nodes = est.plan.nodes
    elif build is not None:
        count = build.gpus_per_node * build.nodes
        nodes = build.nodes
    per_year = None
    if rec.cost_per_run_usd is not None and req is not None:
        per_year = rec.cost_per_run_usd * req.schedule.runs_per_month * 12
    return KeyNumbers(
        found=rec.found,
        gpu=(est.gpu if est else build.gpu if build else None),
        gpu_name=(est.gpu_name if est else build.gpu_name if build else None),
        count=count,
        nodes=nodes,
        mem_per_gpu_gib=est.memory.per_gpu_gib if est else None,
        capacity_gib=est.memory.capacity_gib if est else None,
        usable_gib=est.memory.usable_gib if est else None,
        wall_hours=est.time.wall_hours if est else None,
        wall_hours_range=est.time.wall_hours_range if est else None,
        cost_per_run_usd=rec.cost_per_run_usd,
        cost_per_run_usd_range=rec.cost_per_run_usd_range,
        cost_per_year_usd=per_year,
        # the money to own the hardware: the build to own (= the chosen build when buying; the owned
        # alternative when renting wins), not the rented build's notional price
        capex_usd=_capex(rec.buy_build or build),
        verdict=OWNED_VERDICT if rec.owned_pick is not None else rec.cost.verdict if rec.cost else None,
        worst_pitfall=worst_pitfall(rec.pitfalls),
        currency=rec.currency,
    )


# --------------------------------------------------------------------------------------------------
# Deltas against a baseline
# --------------------------------------------------------------------------------------------------

Direction = Literal["better", "worse", "same", "changed"]


@dataclass(frozen=True)
class Delta:
    key: str
    label: str
    before: str
    after: str
    change: str  # "" when unchanged
    direction: Direction


def _num_delta(key: str, label: str, a: float | None, b: float | None, fmt: Any, lower_is_better: bool = True,
               rel: bool = True) -> Delta:
    before, after = fmt(a), fmt(b)
    if a is None or b is None:
        same = a is None and b is None
        return Delta(key, label, before, after, "" if same else "n/a", "same" if same else "changed")
    if math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12):
        return Delta(key, label, before, after, "", "same")
    diff = b - a
    sign = "+" if diff > 0 else "−"
    change = f"{sign}{fmt(abs(diff)).lstrip('-')}"
    if rel and a != 0:
        change += f" ({sign}{abs(diff) / abs(a) * 100:.0f}%)"
    better = (diff < 0) == lower_is_better
    return Delta(key, label, before, after, change, "better" if better else "worse")


def _text_delta(key: str, label: str, a: str | None, b: str | None) -> Delta:
    before, after = a or "—", b or "—"
    if before == after:
        return Delta(key, label, before, after, "", "same")
    return Delta(key, label, before, after, _("was {before}").format(before=before), "changed")


def diff(base: KeyNumbers, now: KeyNumbers) -> list[Delta]:
    """How each key number moved from ``base`` to ``now`` (labels in display order); money in
    ``now``'s currency (both sides are USD underneath)."""
    money = money_fmt(now.currency)
    build = _text_delta("gpu", "Build", base.gpu_label, now.gpu_label)
    if build.change and base.found and now.found and base.gpu == now.gpu:
        build = Delta("gpu", "Build", build.before, build.after, _("was ×{n}").format(n=base.count), "changed")
    out = [
        build,
        _num_delta("mem", "Memory/GPU", base.mem_per_gpu_gib, now.mem_per_gpu_gib, fmt_gib),
        _num_delta("time", "Time/run", base.wall_hours, now.wall_hours, fmt_hours),
        _num_delta("cost", "Cost/run", base.cost_per_run_usd, now.cost_per_run_usd, money),
        _num_delta("year", "Cost/year", base.cost_per_year_usd, now.cost_per_year_usd, money),
        _num_delta("capex", "Capex (buy)", base.capex_usd, now.capex_usd, money),
        _text_delta("verdict", "Verdict", base.verdict, now.verdict),
    ]
    wp_a = _pitfall_words(base.worst_pitfall)
    wp_b = _pitfall_words(now.worst_pitfall)
    out.append(_text_delta("pitfall", "Worst pitfall", wp_a or "none", wp_b or "none"))
    return out


def _pitfall_words(p: Pitfall | None) -> str | None:
    """``medium: stale cloud price``: the severity and the rule's title in the interface language."""
    if p is None:
        return None
    return _("{severity}: {title}").format(severity=pitfall_titles.severity_word(p.severity),
                                          title=pitfall_titles.title(p.id))


def flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(data, dict):
        for k, v in data.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
    else:
        out[prefix] = data
    return out


def requirement_changes(a: Requirements, b: Requirements) -> list[tuple[str, str, str]]:
    """Dotted field paths whose values differ, with both values as text."""
    fa = flatten(a.model_dump(mode="json"))
    fb = flatten(b.model_dump(mode="json"))
    out = []
    for key in sorted(set(fa) | set(fb)):
        va, vb = fa.get(key), fb.get(key)
        if va != vb:
            out.append((key, "—" if va is None else str(va), "—" if vb is None else str(vb)))
    return out


# --------------------------------------------------------------------------------------------------
# Knobs: each returns (new requirements, what changed in words)
# --------------------------------------------------------------------------------------------------


def _update(req: Requirements, section: str, **values: Any) -> Requirements:
    """Validated copy of ``req`` with ``section``'s fields replaced (nested-safe)."""
    data = req.model_dump()
    current = data.get(section) or {}
    data[section] = {**current, **values}
    return Requirements.model_validate(data)


def _cycle(options: tuple[str, ...], current: str, step: int) -> str:
    if current in options:
        return options[(options.index(current) + step) % len(options)]
    return options[0]


def cycle_method(req: Requirements, step: int = 1) -> tuple[Requirements, str]:
    new = _cycle(METHODS, req.training.method, step)
    return _update(req, "training", method=new), _("method → {value}").format(value=new)


def cycle_precision(req: Requirements, step: int = 1) -> tuple[Requirements, str]:
    new = _cycle(PRECISIONS, req.training.precision, step)
    return _update(req, "training", precision=new), _("precision → {value}").format(value=new)


def cycle_mode(req: Requirements, step: int = 1) -> tuple[Requirements, str]:
    new = _cycle(MODES, req.deployment.mode, step)
    return _update(req, "deployment", mode=new), _("rent/buy → {value}").format(value=new)


def cycle_gpu(req: Requirements, gpu_ids: list[str], current: str | None, step: int = 1) -> tuple[Requirements, str]:
    """Pin the next (or previous) GPU type of the catalog; keeps a pinned count."""
    if not gpu_ids:
        return req, _("no GPUs in the catalog")
    cur = (req.hardware.gpu if req.hardware and req.hardware.gpu else None) or current
    if cur in gpu_ids:
        new = gpu_ids[(gpu_ids.index(cur) + step) % len(gpu_ids)]
    else:
        new = gpu_ids[0] if step > 0 else gpu_ids[-1]
    return _update(req, "hardware", gpu=new), _("GPU → {gpu}").format(gpu=new)


def step_count(req: Requirements, current: int | None, step: int,
               current_gpu: str | None = None) -> tuple[Requirements, str]:
    """Pin the GPU count one rung up or down the 1, 2, 4, 8, ... ladder (and the current GPU type)."""
    cur = (req.hardware.count if req.hardware and req.hardware.count else None) or current or 1
    if step > 0:
        new = next((c for c in COUNT_LADDER if c > cur), cur)
    else:
        new = next((c for c in reversed(COUNT_LADDER) if c < cur), cur)
    values: dict[str, Any] = {"count": new}
    if current_gpu and not (req.hardware and req.hardware.gpu):
        values["gpu"] = current_gpu
    return _update(req, "hardware", **values), _("GPU count → {n}").format(n=new)


def unpin_hardware(req: Requirements) -> tuple[Requirements, str]:
    data = req.model_dump()
    data["hardware"] = None
    return Requirements.model_validate(data), _("hardware → automatic pick")


def scale_data(req: Requirements, factor: float) -> tuple[Requirements, str]:
    """Dataset ×factor: scales tokens, samples and dataset size, whichever are set."""
    d = req.data
    values: dict[str, Any] = {}
    for name in ("tokens", "samples", "dataset_gb"):
        v = getattr(d, name)
        if v is not None:
            values[name] = v * factor
    if not values:
        return req, _("no dataset size set (Data step)")
    try:
        new = _update(req, "data", **values)
    except ValidationError:  # past a documented limit: keep the old answer
        return req, _("dataset size is at its limit")
    word = f"×{factor:g}" if factor >= 1 else f"÷{1 / factor:g}"
    return new, _("dataset {factor}").format(factor=word)


def shift_deadline(req: Requirements, step: int) -> tuple[Requirements, str]:
    """Move the deadline one rung along 1, 2, 3, 5, 7, 10, 14, 21, 30 ... days."""
    cur = req.schedule.deadline_days
    if cur is None:
        new: float = 30 if step > 0 else 21
    elif step > 0:
        new = next((c for c in DEADLINE_LADDER if c > cur), cur)
    else:
        new = next((c for c in reversed(DEADLINE_LADDER) if c < cur), cur)
    words = _("deadline → {n} day") if new == 1 else _("deadline → {n} days")
    return _update(req, "schedule", deadline_days=new), words.format(n=f"{new:g}")
