"""Small pieces of screen furniture: the step bar and the "terminal too small" notice."""

from __future__ import annotations

from rich.cells import cell_len, set_cell_size
from rich.text import Text
from textual.reactive import reactive
from textual.strip import Strip
from textual.widgets import Static

from gpuwiz.i18n import _, current_language
from gpuwiz.tui.stepnames import STEP_IDS, STEP_TITLES

MIN_WIDTH = 80
MIN_HEIGHT = 22  # an 80×24 terminal inside tmux inside tmux: two status lines leave 22 rows


class StepBar(Static):
    """``gpuwiz · llama.yaml ●   1 Model › 2 Data › …`` with the current step highlighted."""

    current: reactive[str] = reactive("model")
    file_label: reactive[str] = reactive("new config")
    dirty: reactive[bool] = reactive(False)

    # Its line as Textual renders it, kept for the last few states: a key that changes a field flips
    # ``dirty`` (typing a value, then backspace back to the saved one), and each flip made Textual
    # render the whole bar again (~1 ms of the UI thread's ~10 per key, headless, Data step, engine
    # in the child, thread CPU time: its frames 3.8 -> 3.1 ms a key for the 70B example, 6.8 -> 4.5
    # for the small one, at load 10 on 2 cores). A state seen before reuses its lines.
    _lines_for: dict[tuple[object, ...], list[Strip]] | None = None

    def render_line(self, y: int) -> Strip:
        key = (self.current, self.file_label, self.dirty, self.size, self.visual_style, self.text_selection,
               current_language())
        seen = self._lines_for
        if seen is None:
            seen = self._lines_for = {}
        lines = seen.get(key)
        if lines is None:
            self._render_content()
            lines = seen[key] = self._render_cache.lines
            while len(seen) > 4:
                del seen[next(iter(seen))]
        else:
            self._dirty_regions.clear()
        return lines[y] if y < len(lines) else Strip.blank(self.size.width, self.visual_style.rich_style)

    def render(self) -> Text:
        width = self.size.width or 80
        for short in (False, True):
            out = self._line(short)
            if out.cell_len <= width:
                break
        return out

    def _line(self, short: bool) -> Text:
        out = Text()
        out.append(" gpuwiz ", style="bold reverse")
        out.append(" ")
        label = self.file_label if cell_len(self.file_label) <= 24 else "…" + _tail_cells(self.file_label, 23)
        out.append(label, style="bold")
        if self.dirty:
            out.append(" ●" if short else " ● " + _("unsaved"), style="bold yellow")
        out.append("  ")
        for i, sid in enumerate(STEP_IDS, 1):
            if i > 1:
                out.append("›" if short else " › ", style="dim")
            title = _(STEP_TITLES[sid])
            label = f"{i} {title}" if not short or sid == self.current else f"{i} {set_cell_size(title, 3).rstrip()}"
            if sid == self.current:
                out.append(f"[{label}]", style="bold reverse")
            else:
                out.append(label, style="dim" if self.current != "start" else "")
        return out


def _tail_cells(text: str, cells: int) -> str:
    """The end of ``text`` that fits in ``cells`` terminal cells (a wide character is never cut)."""
    out = ""
    for ch in reversed(text):
        if cell_len(ch + out) > cells:
            break
        out = ch + out
    return out


class TooSmall(Static):
    """Shown instead of the screen body below 80×24 (CSS breakpoints decide)."""

    def __init__(self) -> None:
        super().__init__(
            _("Terminal too small.\n\ngpuwiz needs at least {w}×{h} characters.\n"
              "Enlarge the window (or zoom out); your work is kept.\n\nctrl+q quits.").format(
                  w=MIN_WIDTH, h=MIN_HEIGHT),
            classes="too-small",
        )
