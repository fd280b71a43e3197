"""The live panel beside every input step: the current pick and its key numbers.

It is a dumb view: the step screen hands it the App's last valid recommendation and flags
(engine error, an invalid field on screen) and it redraws. It never calls the engine.
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.console import Group, RenderableType
from rich.text import Text
from textual.geometry import Region
from textual.strip import Strip
from textual.style import Style as VisualStyle
from textual.visual import RichVisual, Visual
from textual.widget import Widget

from gpuwiz.core.models import Recommendation, Requirements
from gpuwiz.core.whatif import fmt_gib, fmt_hours, fmt_span, key_numbers, money_fmt
from gpuwiz.i18n import N_, _
from gpuwiz.tui.widgets.bars import memory_bar

SEVERITY_WORDS = (N_("BLOCK"), N_("HIGH"), N_("MEDIUM"), N_("INFO"))  # the badge, translated where shown
VERDICT_WORDS = (N_("rent"), N_("buy"), N_("nothing fits"))  # engine values, translated where shown
LABEL_CELLS = 10  # "Time/run  ": labels padded to one column (in cells: a Chinese character is two)


def _label(text: str) -> str:
    return text + " " * max(1, LABEL_CELLS - cell_len(text))


def _with_span(line: Text, span: str, width: int) -> list[Text]:
    """``line`` with its P10-P90 ``span`` after it, or, where both do not fit ``width``, the span on
    the next line under the value: a range wraps as a whole, never inside (``(12.2 h–21.0`` / ``h)``)."""
    if not span:
        return [line]
    if cell_len(line.plain) + cell_len(span) <= width:
        line.append(span, style="dim")
        return [line]
    indent = " " * LABEL_CELLS if LABEL_CELLS + cell_len(span.strip()) <= width else ""
    return [line, Text(indent + span.strip(), style="dim")]


SEVERITY_STYLE = {"block": "bold white on red", "high": "bold red", "medium": "yellow", "info": "dim"}


class LivePanel(Widget):
    """Renders itself (a fixed-size box): an update repaints it without a layout pass, and only
    the lines whose text changed (a key usually changes two or three of its ~20: the time, the
    cost, the memory bar). Its lines are what Textual would draw for ``render()``'s Group (each
    part rendered as Textual renders a Rich renderable), kept per part between answers."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.auto_links = False  # no links here: Textual looked up the link style for every part (~40 % of a render)
        self.version = 0  # bumps on every show() (the benchmark waits for it)
        self.border_title = _("Live answer")
        self._rec: Recommendation | None = None
        self._req: Requirements | None = None
        self._error: str | None = None
        self._stale: bool = False
        self._lines: list[Strip] | None = None  # the content lines on screen (None: to be rendered)
        self._lines_key: tuple[object, ...] | None = None  # (width, visual style, selection) they are for
        self._part_cache: dict[tuple[object, ...], list[Strip]] = {}
        self._last_parts: dict[tuple[object, ...], list[Strip]] = {}

    def show(self, rec: Recommendation | None, req: Requirements | None, error: str | None, stale: bool) -> None:
        same = rec is self._rec and req is self._req and error == self._error and stale == self._stale
        self._rec, self._req, self._error, self._stale = rec, req, error, stale
        self.version += 1
        if same and self._lines is not None:
            return  # shown already (an answer calls this for each of the App's values it changed)
        self.set_class(stale or error is not None, "-stale")
        old = self._lines
        if old is None or not self.is_mounted or self._lines_key != self._key():
            self._lines = None
            self.refresh()
            return
        new = self._render_strips()
        self._lines = new
        width = self.content_size.width
        changed = [Region(0, y, width, 1) for y in range(max(len(old), len(new)))
                   if y >= len(old) or y >= len(new) or old[y] != new[y]]
        if changed:
            self.refresh(*changed)

    def render(self) -> RenderableType:
        return self._renderable()

    def render_line(self, y: int) -> Strip:
        if self._lines is None or self._lines_key != self._key():
            self._lines = self._render_strips()
        lines = self._lines
        return lines[y] if y < len(lines) else Strip.blank(self.content_size.width, self.visual_style.rich_style)

    def _key(self) -> tuple[int, VisualStyle, object]:
        return (self.content_size.width, self.visual_style, self.text_selection)

    def _render_strips(self) -> list[Strip]:
        """The panel's content lines: each part of the Group as Textual renders a Rich renderable
        (``Visual.to_strips`` of a ``RichVisual``), a part seen before from the cache."""
        key = self._key()
        if key != self._lines_key:
            self._part_cache, self._last_parts = {}, {}
            self._lines_key = key
        width, style, _selection = key
        renderable = self._renderable()
        parts = renderable.renderables if isinstance(renderable, Group) else [renderable]
        cache = self._part_cache
        used: dict[tuple[object, ...], list[Strip]] = {}
        keys = [(part.plain, tuple(part.spans), str(part.style), part.end) if isinstance(part, Text) else None
                for part in parts]
        found: list[list[Strip] | None] = [cache.get(pk) if pk is not None else None for pk in keys]
        # the new parts that are one line each (no line break, not wider than the panel) are rendered
        # together, as one Group: one render's overhead instead of one per part (~0.3 ms of ~1 ms)
        single = [i for i, part in enumerate(parts) if found[i] is None and isinstance(part, Text)
                  and part.end == "\n" and "\n" not in part.plain and cell_len(part.plain) <= width]
        if len(single) > 1:
            together = Visual.to_strips(self, RichVisual(self, Group(*(parts[i] for i in single))), width, None, style)
            if len(together) == len(single):  # one line each, as expected (else each part on its own)
                for i, strip in zip(single, together, strict=True):
                    found[i] = [strip]
        lines: list[Strip] = []
        for part, pk, strips in zip(parts, keys, found, strict=True):
            if strips is None:
                strips = Visual.to_strips(self, RichVisual(self, part), width, None, style)
            if pk is not None:
                used[pk] = strips
            lines.extend(strips)
        self._part_cache = {**self._last_parts, **used}  # this answer's parts and the one before's
        self._last_parts = used  # (keys that go back and forth find both): it never outgrows two panels
        return lines

    @property
    def text(self) -> str:
        """Plain text of what the panel shows (tests and the benchmark read it)."""
        r = self._renderable()
        if isinstance(r, Text):
            return r.plain
        return "\n".join(t.plain for t in r.renderables if isinstance(t, Text))  # type: ignore[union-attr]

    def _renderable(self) -> RenderableType:
        width = max(10, self.content_size.width or 30)
        parts: list[Text] = []
        rec = self._rec
        if rec is None:
            parts.append(Text(self._error or _("computing…"), style="yellow" if self._error else "dim"))
            return Group(*parts)
        kn = key_numbers(rec, self._req)
        if not kn.found:
            parts.append(Text(_("Nothing fits these requirements."), style="bold red"))
            for s in rec.suggestions[:3]:
                parts.append(Text("• " + s))
        else:
            parts.append(Text(_(kn.gpu_label), style="bold"))
            if kn.nodes and kn.nodes > 1:
                parts.append(Text(_("{n} nodes").format(n=kn.nodes), style="dim"))
            if kn.mem_per_gpu_gib is not None and kn.capacity_gib:
                parts.append(Text(_("Memory/GPU {used} of {cap:.0f}").format(used=fmt_gib(kn.mem_per_gpu_gib),
                                                                            cap=kn.capacity_gib)))
                parts.append(memory_bar(kn.mem_per_gpu_gib, kn.capacity_gib, kn.usable_gib, width))
            t = Text()
            t.append(_label(_("Time/run")), style="dim")
            t.append(fmt_hours(kn.wall_hours), style="bold")
            parts.extend(_with_span(t, fmt_span(kn.wall_hours_range, fmt_hours), width))  # cross-validated P10-P90
            c = Text()
            c.append(_label(_("Cost/run")), style="dim")
            money = money_fmt(kn.currency)  # the user's currency (deployment.currency / country)
            c.append(money(kn.cost_per_run_usd), style="bold")
            parts.extend(_with_span(c, fmt_span(kn.cost_per_run_usd_range, money), width))
            if kn.cost_per_year_usd is not None:
                y = Text()
                y.append(_label(_("Cost/year")), style="dim")
                y.append(money(kn.cost_per_year_usd))
                parts.append(y)
            if kn.verdict:
                v = Text()
                v.append(_label(_("Verdict")), style="dim")
                v.append(_(kn.verdict), style="bold")
                parts.append(v)
        wp = kn.worst_pitfall
        if wp is not None:
            p = Text()
            p.append(f" {_(wp.severity.upper())} ", style=SEVERITY_STYLE.get(wp.severity, ""))
            p.append(" " + wp.message)
            parts.append(Text(""))
            parts.append(p)
        if self._error:
            parts.append(Text(""))
            parts.append(Text("⚠ " + self._error, style="bold red"))
            parts.append(Text(_("showing the last valid answer"), style="dim"))
        elif self._stale:
            parts.append(Text(""))
            parts.append(Text("⚠ " + _("a field is invalid; showing the last valid answer"), style="yellow"))
        return Group(*parts)
