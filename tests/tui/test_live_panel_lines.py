"""The live panel draws a new one-line part straight from its spans (live_panel.one_line_strip):
the same segments as Textual's own render of it (``Visual.to_strips`` of the part in a Group), for
plain, styled, overlapping and wide (CJK) text, a part as wide as the panel, in the panel's normal
and its stale styles; and the panel keeps drawing what Textual draws while its answers change."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rich.cells import cell_len
from rich.console import Group
from rich.text import Text
from textual.visual import RichVisual, Visual
from wizhelp import assert_draws_as_textual, focus_epochs, settle

from gpuwiz.tui.app import GpuwizApp
from gpuwiz.tui.widgets.live_panel import LivePanel, one_line_strip

MakeApp = Callable[..., GpuwizApp]


def _parts(width: int) -> list[Text]:
    label = Text()
    label.append("Time/run  ", style="dim")
    label.append("22.6 h", style="bold")
    label.append(" (18–28)", style="dim")
    badge = Text()
    badge.append(" MEDIUM ", style="bold white on red")
    badge.append(" observed 2025")
    nested = Text("cost ¥2,197 a year", style="italic")
    nested.stylize("bold", 0, 9)
    nested.stylize("yellow", 5, 12)
    return [Text("H100 SXM5 80GB × 8", style="bold"), Text("plain words"), label, badge, nested,
            Text("显存/GPU 44.0（共 80）", style="bold"), Text("  leading, trailing  "),
            Text("⚠ a field is invalid", style="yellow"), Text("x" * width), Text("中" * (width // 2)),
            Text("")]


async def test_a_one_line_part_is_drawn_as_textual_draws_it(make_app: MakeApp, config_file: Path) -> None:
    app = make_app(config_file)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        app.goto("data")
        await settle(pilot, app)
        panel = app.screen.query_one(LivePanel)
        for stale in (False, True):
            panel.set_class(stale, "-stale")
            await pilot.pause()
            width, style = panel.content_size.width, panel.visual_style
            for part in _parts(width):
                assert cell_len(part.plain) <= width, part.plain  # one line each: the fast path's case
                textual = Visual.to_strips(panel, RichVisual(panel, Group(part)), width, None, style)
                assert [one_line_strip(part, app.console, style.rich_style)] == textual, part.plain


async def test_the_panel_draws_what_textual_draws_while_its_answers_change(
        make_app: MakeApp, config_file: Path) -> None:
    """New values (their lines drawn afresh), values seen before, an invalid one, at 80 columns too."""
    app = make_app(config_file)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await focus_epochs(pilot, app)
        panel = app.screen.query_one(LivePanel)
        seen: set[str] = set()
        for keys in (("end", "4"), ("5",), ("backspace",), ("ctrl+u", "x"), ("ctrl+u", "9")):
            await pilot.press(*keys)
            await settle(pilot, app)
            await pilot.pause()
            seen.add(panel.text)
            assert_draws_as_textual(panel, keys)
        assert len(seen) >= 4
