"""Text bars: memory per GPU against capacity, and memory by component (Rich Text, no widgets)."""

from __future__ import annotations

from rich.text import Text

from gpuwiz.core.models import MemoryBreakdown
from gpuwiz.i18n import N_, _

FULL = "█"
PARTS = " ▏▎▍▌▋▊▉"
COMPONENTS: tuple[tuple[str, str, str], ...] = (
    # field, label, style (colour) - NO_COLOR users still get the legend letters
    ("weights", N_("weights"), "bold blue"),
    ("gradients", N_("grads"), "bold magenta"),
    ("optimizer", N_("optimizer"), "bold yellow"),
    ("activations", N_("activations"), "bold cyan"),
    ("overhead", N_("overhead"), "bold white"),
)
GLYPHS = {"weights": "█", "gradients": "▓", "optimizer": "▒", "activations": "░", "overhead": "▪"}


def fill_bar(frac: float, width: int, style: str = "") -> Text:
    """A horizontal bar ``frac`` (0..1) of ``width`` cells with eighth-cell resolution."""
    width = max(1, width)
    frac = min(max(frac, 0.0), 1.0)
    eighths = round(frac * width * 8)
    full, rem = divmod(eighths, 8)
    s = FULL * full + (PARTS[rem] if rem and full < width else "")
    return Text(s.ljust(width, "·"), style=style)


def memory_bar(used_gib: float, capacity_gib: float, usable_gib: float | None, width: int) -> Text:
    """``████████▌······│··  61.2/80 GiB`` with a marker at the usable limit (headroom)."""
    width = max(4, width)
    frac = used_gib / capacity_gib if capacity_gib > 0 else 1.0
    over = frac > 1.0 or (usable_gib is not None and used_gib > usable_gib)
    style = "bold red" if over else ("yellow" if frac > 0.8 else "green")
    bar = fill_bar(frac, width, style)
    if usable_gib is not None and capacity_gib > 0:
        pos = min(width - 1, int(usable_gib / capacity_gib * width))
        ch = bar.plain[pos]
        if ch == "·":
            bar = bar[:pos] + Text("│", style="dim") + bar[pos + 1:]
    if frac > 1.0:
        bar = bar[:-1] + Text("▶", style="bold red")
    return bar


def breakdown_bar(b: MemoryBreakdown, capacity_gib: float, width: int) -> Text:
    """Stacked bar, one glyph per component, scaled to the GPU's capacity."""
    width = max(4, width)
    total = sum(getattr(b, f) for f, _, _ in COMPONENTS)
    scale = max(capacity_gib, total) or 1.0
    out = Text()
    used = 0
    for f, _label, style in COMPONENTS:
        n = round(getattr(b, f) / scale * width)
        n = min(n, width - used)
        if n > 0:
            out.append(GLYPHS[f] * n, style=style)
            used += n
    out.append("·" * (width - used), style="dim")
    return out


def breakdown_legend(b: MemoryBreakdown) -> Text:
    out = Text()
    for f, label, style in COMPONENTS:
        v = getattr(b, f)
        out.append(GLYPHS[f] + " ", style=style)
        out.append(f"{_(label)} {v:.1f} GiB   ")
    return out
