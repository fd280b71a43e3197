"""The Result screen draws only when what it shows changes (issue 16: opening a config asked it to
redraw ~7 times), yet still follows the terminal's width: a resize redraws the memory bars and the
what-if strip for the new width, and the answer stays on screen. The footer keeps its keys."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from test_result_fields import shown
from textual.widgets import Static
from textual.widgets._footer import FooterKey
from wizhelp import settle

from gpuwiz.tui.app import GpuwizApp
from gpuwiz.tui.screens.result import ResultScreen

MakeApp = Callable[..., GpuwizApp]
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "small-team-lora-7b.yaml"


def _bar_width(text: str) -> int:
    """How wide the memory tab's first bar is drawn (its bars are as wide as the tab)."""
    lines = text.splitlines()
    return len(lines[1].rstrip()) if len(lines) > 1 and "█" in lines[1] else 0


async def test_a_resize_redraws_the_answer_for_the_new_width(make_app: MakeApp, tmp_path: Path) -> None:
    cfg = tmp_path / "lora.yaml"
    cfg.write_text(EXAMPLE.read_text(), encoding="utf-8")
    app = make_app(cfg)
    async with app.run_test(size=(90, 30)) as pilot:
        await settle(pilot, app)
        scr = app.screen
        assert isinstance(scr, ResultScreen)
        build = scr.query_one("#build", Static)
        picked = shown(build, 200)
        assert "NVIDIA" in picked and " × " in picked  # the pick: GPU × count
        memory = scr.query_one("#memory", Static)
        await pilot.press("2")  # the memory tab: its bars fit the tab's width
        await pilot.pause()
        narrow = _bar_width(shown(memory, 200))
        assert narrow > 0
        drawn = memory.content
        scr._refresh()  # nothing changed: nothing is drawn again
        assert memory.content is drawn

        await pilot.resize_terminal(140, 40)
        for _ in range(200):  # bounded: wait for the redraw at the new width, not for time
            await pilot.pause()
            if _bar_width(shown(memory, 200)) > narrow:
                break
        assert _bar_width(shown(memory, 200)) > narrow  # redrawn for the wider tab
        assert shown(build, 200) == picked  # the answer is still on screen
        assert "What-if" in str(scr.query_one("#whatif", Static).border_title)
        assert app.screen.query(FooterKey)  # the footer still shows its keys

        await pilot.press("b")  # a change the screen shows (the baseline pinned): drawn again
        await pilot.pause()
        assert "baseline pinned" in str(scr.query_one("#whatif", Static).border_subtitle)
