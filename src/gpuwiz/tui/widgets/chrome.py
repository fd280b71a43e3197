"""Small pieces of screen furniture: the step bar and the "terminal too small" notice."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from gpuwiz.tui.stepnames import STEP_IDS, STEP_TITLES

MIN_WIDTH = 80
MIN_HEIGHT = 22  # an 80×24 terminal inside tmux inside tmux: two status lines leave 22 rows


class StepBar(Static):
    """``gpuwiz · llama.yaml ●   1 Model › 2 Data › …`` with the current step highlighted."""

    current: reactive[str] = reactive("model")
    file_label: reactive[str] = reactive("new config")
    dirty: reactive[bool] = reactive(False)

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
        label = self.file_label if len(self.file_label) <= 24 else "…" + self.file_label[-23:]
        out.append(label, style="bold")
        if self.dirty:
            out.append(" ●" if short else " ● unsaved", style="bold yellow")
        out.append("  ")
        for i, sid in enumerate(STEP_IDS, 1):
            if i > 1:
                out.append("›" if short else " › ", style="dim")
            title = STEP_TITLES[sid]
            label = f"{i} {title}" if not short or sid == self.current else f"{i} {title[:3]}"
            if sid == self.current:
                out.append(f"[{label}]", style="bold reverse")
            else:
                out.append(label, style="dim" if self.current != "start" else "")
        return out


class TooSmall(Static):
    """Shown instead of the screen body below 80×24 (CSS breakpoints decide)."""

    def __init__(self) -> None:
        super().__init__(
            f"Terminal too small.\n\ngpuwiz needs at least {MIN_WIDTH}×{MIN_HEIGHT} characters.\n"
            "Enlarge the window (or zoom out); your work is kept.\n\nctrl+q quits.",
            classes="too-small",
        )
