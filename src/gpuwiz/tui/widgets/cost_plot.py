"""Cumulative cost of renting vs buying over the horizon, drawn with braille dots.

Each terminal cell holds a 2×4 braille grid, so a 40×10 cell plot has 80×40 dots. Rent is drawn
with braille dots, buy with half blocks (▀ ▄ █) and a cell where both meet with ◆, so the lines and
the legend differ in glyph, not only in colour (NO_COLOR). The break-even month is marked under the
x axis.
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from gpuwiz.core.models import CurrencyInfo, MonthPoint
from gpuwiz.core.whatif import fmt_money
from gpuwiz.i18n import _

_DOT_BITS = ((0x01, 0x08), (0x02, 0x10), (0x04, 0x20), (0x40, 0x80))  # [row][col] within a cell


def _rasterise(values: list[float], vmax: float, cols: int, rows: int) -> list[list[int]]:
    """Braille bit masks (rows × cols cells) for a series sampled across the width."""
    grid = [[0] * cols for _ in range(rows)]
    if not values or vmax <= 0:
        return grid
    w, h = cols * 2, rows * 4
    prev_y: int | None = None
    for x in range(w):
        i = x * (len(values) - 1) / max(1, w - 1)
        lo = int(i)
        hi = min(lo + 1, len(values) - 1)
        v = values[lo] + (values[hi] - values[lo]) * (i - lo)
        y = h - 1 - round(min(max(v / vmax, 0.0), 1.0) * (h - 1))
        ys = range(min(y, prev_y), max(y, prev_y) + 1) if prev_y is not None else range(y, y + 1)
        for yy in ys:  # connect steep segments vertically
            grid[yy // 4][x // 2] |= _DOT_BITS[yy % 4][x % 2]
        prev_y = y
    return grid


BOTH = "◆"  # a cell where the two lines meet
_TOP = 0x01 | 0x08 | 0x02 | 0x10  # braille rows 0-1
_BOTTOM = 0x04 | 0x20 | 0x40 | 0x80  # braille rows 2-3


def _put(cells: list[str], start: int, text: str, limit: int) -> None:
    """Write ``text`` into one-cell slots from ``start``, stopping before ``limit``; a wide (CJK)
    character takes two slots, the second left empty, and is never cut in half."""
    pos = start
    for ch in text:
        w = cell_len(ch)
        if pos < 0 or pos + w > limit:
            break
        cells[pos] = ch
        for k in range(1, w):
            cells[pos + k] = ""
        pos += w


def _half_block(bits: int) -> str:
    """The buy line in half blocks: a different glyph from the rent line's braille dots (NO_COLOR)."""
    top, bottom = bool(bits & _TOP), bool(bits & _BOTTOM)
    return "█" if top and bottom else ("▀" if top else "▄")


def render_plot(points: list[MonthPoint], width: int, height: int, breakeven: float | None = None,
                currency: CurrencyInfo | None = None) -> Text:
    label_w = 9
    cols = max(8, width - label_w - 1)
    rows = max(3, height - 3)
    # a series that is zero throughout is an option the answer does not have (no cloud offer, no
    # build to buy): it is not drawn as a line along $0, and the legend says it is missing
    rent = [p.rent_usd for p in points] if any(p.rent_usd for p in points) else []
    buy = [p.buy_usd for p in points] if any(p.buy_usd for p in points) else []
    vmax = max(rent + buy + [1.0])
    g_rent = _rasterise(rent, vmax, cols, rows)
    g_buy = _rasterise(buy, vmax, cols, rows)
    out = Text()
    for r in range(rows):
        if r == 0:
            lab = fmt_money(vmax, currency)
        elif r == rows - 1:
            lab = fmt_money(0.0, currency).split(".")[0]  # "$0", "¥0"
        elif r == rows // 2:
            lab = fmt_money(vmax / 2, currency)
        else:
            lab = ""
        out.append(lab.rjust(label_w - 1) + " ┤" if lab else " " * (label_w - 1) + " │", style="dim")
        for c in range(cols):
            a, b = g_rent[r][c], g_buy[r][c]
            if a and b:
                out.append(BOTH, style="bold magenta")
            elif b:
                out.append(_half_block(b), style="bold yellow")
            elif a:
                out.append(chr(0x2800 | a), style="bold cyan")
            else:
                out.append(" ")
        out.append("\n")
    months = points[-1].month if points else 0
    axis = " " * (label_w - 1) + " └" + "─" * cols
    out.append(axis + "\n", style="dim")
    ticks = [" "] * cols
    marks = "0"
    ticks[0] = marks
    end = _("{n} mo").format(n=months)
    _put(ticks, max(0, cols - cell_len(end)), end, cols)
    if breakeven is not None and months > 0 and 0 < breakeven <= months:
        pos = min(cols - 1, int(breakeven / months * (cols - 1)))
        tag = "▲ " + _("break-even {n:.0f} mo").format(n=breakeven)
        start = min(pos, max(0, cols - cell_len(end) - cell_len(tag) - 1))
        _put(ticks, start, tag, cols - cell_len(end) - 1)
    out.append(" " * (label_w + 1) + "".join(ticks) + "\n", style="dim")
    out.append(" " * (label_w + 1))
    if rent:
        out.append("⠒⠒ " + _("rent (cloud)") + " ", style="bold cyan")
    else:
        out.append(_("rent: no cloud offer") + " ", style="dim")
    if buy:
        out.append(" ▀▄ " + _("buy (on-prem TCO)") + " ", style="bold yellow")
    else:
        out.append(" " + _("buy: no build to own") + " ", style="dim")
    if rent and buy:
        out.append(f" {BOTH} " + _("both"), style="bold magenta")
    return out


class CostPlot(Widget):
    """Cumulative rent vs buy cost; set ``points`` and ``breakeven``."""

    points: reactive[tuple[MonthPoint, ...]] = reactive(tuple, layout=False)
    breakeven: reactive[float | None] = reactive(None)
    currency: reactive[CurrencyInfo | None] = reactive(None)  # axis labels in the user's currency

    def render(self) -> Text:
        if not self.points:
            return Text(_("No month-by-month cost data for this answer."), style="dim")
        return render_plot(list(self.points), self.size.width, self.size.height, self.breakeven, self.currency)
