"""The live panel beside every input step: the current pick and its key numbers.

It is a dumb view: the step screen hands it the brief of the App's last valid answer
(gpuwiz.tui.answer.Brief: the key numbers, never the whole Recommendation) and flags (engine
error, an invalid field on screen) and it redraws. It never calls the engine.
"""

from __future__ import annotations

from typing import Any

from rich.cells import cell_len
from rich.console import Console, Group, RenderableType
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual._ansi_theme import DEFAULT_TERMINAL_THEME
from textual._styles_cache import StylesCache
from textual.geometry import Region
from textual.strip import Strip
from textual.style import Style as VisualStyle
from textual.visual import RichVisual, Visual
from textual.widget import Widget

from gpuwiz.core.whatif import fmt_gib, fmt_hours, fmt_span, money_fmt
from gpuwiz.i18n import N_, _
from gpuwiz.tui.answer import Brief
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


_NEWLINE = Text("\n")


def one_line_strip(part: Text, console: Console, base: Style) -> Strip:
    """The line Textual draws for a one-line ``Text`` of a Group in a widget whose base style is
    ``base`` (``Visual.to_strips`` of a ``RichVisual``), without Rich's wrapping pipeline: a part
    with no line break, no tab and no justification, no wider than the widget, wraps to itself, so
    its segments are those of Rich's ``Text.render`` of its one line (joined as Rich joins a
    wrapped text's lines: the part's own style becomes its first span) with the base style added
    under each, as Textual's ``_Styled`` adds it. A new answer's time, cost and range lines came
    through the whole pipeline (a Group's render, the wrap, the join, the split into lines: ~0.7
    of the panel's ~1.3 ms for a new answer, headless). tests/tui/test_live_panel_lines.py checks
    it against Textual's own render."""
    segments: list[Segment] = list(_NEWLINE.join([part]).render(console))
    if base:
        apply = base.__add__
        segments = [Segment(text, apply(style)) for text, style, _control in segments]
    return Strip(segments)


class RowCache(StylesCache):
    """Textual's ``StylesCache`` (a widget's border, padding and filters around its content lines)
    that also remembers each content row it drew by the content line it shows.

    When an answer adds or removes a line of the panel (a range that wraps, two nodes, a pitfall),
    every line below it moves: Textual's cache is per row, so it drew each of them again with its
    border and padding (~20 rows, most of a key's frame). A content row's output depends on its
    content line and the widget's styles, not on its row: a line seen before (the panel keeps its
    parts' lines between answers, the same ``Strip`` objects) comes back as the row it made, with
    the filters and crops Textual cached on it. Border rows, and anything while the styles differ
    from when a row was drawn, go through Textual's code as before; ``clear`` (a full refresh,
    new styles, a new width) forgets them all."""

    MAX_ROWS = 256  # a dozen panels' worth: the oldest go first

    def __init__(self) -> None:
        super().__init__()
        self._rows: dict[int, tuple[Strip, tuple[object, ...], Strip]] = {}  # id(content) -> (content, key, row)
        self._style_key: tuple[object, ...] = ()
        self._gutter = (0, 0)  # the styles' gutter (top, bottom), read once per render

    def clear(self) -> None:
        super().clear()
        self._rows.clear()

    def render(self, styles: Any, size: Any, base_background: Any, background: Any, render_content_line: Any,
               filters: Any, border_title: Any, border_subtitle: Any, content_size: Any = None,
               padding: Any = None, crop: Any = None, opacity: float = 1.0, ansi_theme: Any = DEFAULT_TERMINAL_THEME,
               native_ansi: bool = False) -> list[Strip]:
        # what a content row's drawing reads of the styles besides the arguments (once per render)
        gutter = styles.gutter
        self._gutter = (gutter.top, gutter.bottom)
        self._style_key = (styles.border, styles.outline, styles.tint, styles.text_opacity,
                           styles.hatch if styles.has_rule("hatch") else None, gutter)
        return super().render(styles, size, base_background, background, render_content_line, filters, border_title,
                              border_subtitle, content_size, padding, crop, opacity, ansi_theme, native_ansi)

    def render_line(self, styles: Any, y: int, size: Any, content_size: Any, padding: Any, base_background: Any,
                    background: Any, render_content_line: Any, border_title: Any, border_subtitle: Any,
                    opacity: float, ansi_theme: Any, native_ansi: bool) -> Strip:
        top, bottom = self._gutter
        height = size.height
        if not (0 < y < height - 1 and top <= y < height - bottom and y - top < content_size.height):
            return super().render_line(styles, y, size, content_size, padding, base_background, background,
                                       render_content_line, border_title, border_subtitle, opacity, ansi_theme,
                                       native_ansi)
        content = render_content_line(y - top)
        key = (size, content_size, padding, base_background, background, opacity, ansi_theme, native_ansi,
               self._style_key)
        rows = self._rows
        seen = rows.get(id(content))
        if seen is not None and seen[0] is content and seen[1] == key:
            return seen[2]
        row = super().render_line(styles, y, size, content_size, padding, base_background, background,
                                  lambda _y: content, border_title, border_subtitle, opacity, ansi_theme, native_ansi)
        rows.pop(id(content), None)
        rows[id(content)] = (content, key, row)
        while len(rows) > self.MAX_ROWS:
            del rows[next(iter(rows))]
        return row


SEVERITY_STYLE = {"block": "bold white on red", "high": "bold red", "medium": "yellow", "info": "dim"}


class LivePanel(Widget):
    """Renders itself (a fixed-size box): an update repaints it without a layout pass, and only
    the lines whose text changed (a key usually changes two or three of its ~20: the time, the
    cost, the memory bar). Its lines are what Textual would draw for ``render()``'s Group (each
    part rendered as Textual renders a Rich renderable), kept per part between answers."""

    MAX_PARTS = 256  # parts whose lines are kept (an answer has ~10-15)

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._styles_cache = RowCache()  # a moved line is not drawn again (see RowCache)
        self.auto_links = False  # no links here: Textual looked up the link style for every part (~40 % of a render)
        self.version = 0  # bumps on every show() (the benchmark waits for it)
        self.border_title = _("Live answer")
        self._brief: Brief | None = None
        self._error: str | None = None
        self._stale: bool = False
        self._lines: list[Strip] | None = None  # the content lines on screen (None: to be rendered)
        self._lines_key: tuple[object, ...] | None = None  # (width, visual style, selection) they are for
        self._checked = False  # within render_lines: _lines is for the current key
        self._part_cache: dict[tuple[object, ...], list[Strip]] = {}  # a part's lines, by its text and styles

    def show(self, brief: Brief | None, error: str | None, stale: bool) -> None:
        same = brief is self._brief and error == self._error and stale == self._stale
        self._brief, self._error, self._stale = brief, error, stale
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

    def render_lines(self, crop: Region) -> list[Strip]:
        if self._lines is None or self._lines_key != self._key():  # checked once, not for every line
            self._lines = self._render_strips()
        self._checked = True
        try:
            return super().render_lines(crop)
        finally:
            self._checked = False

    def render_line(self, y: int) -> Strip:
        if not self._checked and (self._lines is None or self._lines_key != self._key()):
            self._lines = self._render_strips()
        lines = self._lines
        assert lines is not None
        return lines[y] if y < len(lines) else Strip.blank(self.content_size.width, self.visual_style.rich_style)

    def _key(self) -> tuple[int, VisualStyle, object]:
        return (self.content_size.width, self.visual_style, self.text_selection)

    def _render_strips(self) -> list[Strip]:
        """The panel's content lines: each part of the Group as Textual renders a Rich renderable
        (``Visual.to_strips`` of a ``RichVisual``), a part seen before from the cache."""
        key = self._key()
        if key != self._lines_key:
            self._part_cache = {}
            self._lines_key = key
        width, style, _selection = key
        renderable = self._renderable()
        parts = renderable.renderables if isinstance(renderable, Group) else [renderable]
        cache = self._part_cache
        keys = [(part.plain, tuple(part.spans), str(part.style), part.end) if isinstance(part, Text) else None
                for part in parts]
        found: list[list[Strip] | None] = [cache.get(pk) if pk is not None else None for pk in keys]
        # the new parts that are one line each (no line break, not wider than the panel)
        single = [i for i, part in enumerate(parts) if found[i] is None and isinstance(part, Text)
                  and part.end == "\n" and "\n" not in part.plain and cell_len(part.plain) <= width]
        if single and self._plain_lines_ok():  # drawn straight from their spans (see one_line_strip)
            console, base = self.app.console, style.rich_style
            for i in single:
                part = parts[i]
                if part.justify is None and "\t" not in part.plain:  # type: ignore[union-attr]
                    found[i] = [one_line_strip(part, console, base)]  # type: ignore[arg-type]
            single = [i for i in single if found[i] is None]
        if len(single) > 1:  # rendered together, as one Group: one render's overhead, not one per part
            together = Visual.to_strips(self, RichVisual(self, Group(*(parts[i] for i in single))), width, None, style)
            if len(together) == len(single):  # one line each, as expected (else each part on its own)
                for i, strip in zip(single, together, strict=True):
                    found[i] = [strip]
        lines: list[Strip] = []
        for part, pk, strips in zip(parts, keys, found, strict=True):
            if strips is None:
                strips = Visual.to_strips(self, RichVisual(self, part), width, None, style)
            if pk is not None:
                cache.pop(pk, None)
                cache[pk] = strips  # the most recently shown last: the oldest go first
            lines.extend(strips)
        while len(cache) > self.MAX_PARTS:  # the parts of the last twenty or so answers (a value typed
            del cache[next(iter(cache))]  # again, a backspace to one before, finds its lines)
        return lines

    def _plain_lines_ok(self) -> bool:
        """Whether Textual draws a one-line part as its spans' segments on the base style and nothing
        else: no content alignment, no justification asked by the console, no link styling."""
        return (tuple(self.styles.content_align) == ("left", "top") and self.app.console_options.justify is None
                and not self.auto_links)

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
        brief = self._brief
        if brief is None:
            parts.append(Text(self._error or _("computing…"), style="yellow" if self._error else "dim"))
            return Group(*parts)
        kn = brief.numbers
        if not kn.found:
            parts.append(Text(_("Nothing fits these requirements."), style="bold red"))
            for s in brief.suggestions:
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
