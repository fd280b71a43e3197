"""The live panel shows the cross-validated P10-P90 range beside the time and cost of a run."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from wizhelp import settle, written

from gpuwiz.core.whatif import fmt_hours, fmt_usd
from gpuwiz.tui.app import GpuwizApp
from gpuwiz.tui.widgets.live_panel import LivePanel


async def test_live_panel_shows_time_and_cost_ranges(make_app: Callable[..., GpuwizApp], config_file: Path) -> None:
    app = make_app(config_file)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        app.goto("model")
        await settle(pilot, app)
        rec = app.recommendation
        assert rec is not None and rec.estimate is not None
        t, c = rec.estimate.time.wall_hours_range, rec.cost_per_run_usd_range
        assert t is not None and c is not None
        assert t.low < rec.estimate.time.wall_hours < t.high
        assert rec.cost_per_run_usd is not None and c.low < rec.cost_per_run_usd < c.high
        text = app.screen.query_one(LivePanel).text
        assert f"({fmt_hours(t.low)}–{fmt_hours(t.high)})" in text
        assert f"({fmt_usd(c.low)}–{fmt_usd(c.high)})" in text


@pytest.mark.parametrize("size", [(100, 30), (80, 24)])
async def test_result_screen_shows_the_ranges_in_the_strip_and_the_summary(
        make_app: Callable[..., GpuwizApp], config_file: Path, size: tuple[int, int]) -> None:
    from textual.widgets import Static

    from gpuwiz.core.whatif import fmt_span
    from gpuwiz.tui.screens.result import ResultScreen

    app = make_app(config_file)
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        scr = app.screen
        assert isinstance(scr, ResultScreen)
        rec = app.recommendation
        assert rec is not None and rec.estimate is not None
        t_span = fmt_span(rec.estimate.time.wall_hours_range, fmt_hours)
        c_span = fmt_span(rec.cost_per_run_usd_range, fmt_usd)
        assert t_span and c_span
        strip = shown(scr.query_one("#whatif", Static), size[0])
        assert fmt_hours(rec.estimate.time.wall_hours) + t_span in strip  # "4.6 h (3.9 h–5.8 h)"
        assert c_span in strip
        await pilot.press("4")  # the rent-vs-buy tab: its summary says the same per run
        await settle(pilot, app)
        summary = shown(scr.query_one("#cost-summary", Static), size[0])
        assert fmt_hours(rec.estimate.time.wall_hours) + t_span in summary
        assert fmt_usd(rec.cost_per_run_usd or 0) + c_span in summary
        # after a what-if change the strip shows the new answer's range, next to its change
        await pilot.press("m")
        await settle(pilot, app)
        new = app.recommendation
        assert new is not None and new.estimate is not None and new is not rec
        strip = shown(scr.query_one("#whatif", Static), size[0])
        new_t = fmt_hours(new.estimate.time.wall_hours)
        if size == (100, 30):
            span = fmt_span(new.estimate.time.wall_hours_range, fmt_hours)
            assert any(f"{new_t}{span} {mark}" in strip for mark in "▲▼")
        else:  # at 80x24 the range gives way to the change when both do not fit (the summary keeps it)
            assert any(f"{new_t} {mark}" in strip for mark in "▲▼")


def shown(widget: object, width: int) -> str:
    import io

    from rich.console import Console

    content = widget.content  # type: ignore[attr-defined]
    console = Console(width=width, file=io.StringIO(), color_system=None, legacy_windows=False)
    with console.capture() as cap:
        console.print(content)
    return " ".join(cap.get().split())


OWNED = """\
version: 1
model: {preset: mistral-7b, seq_len: 4096}
training: {method: lora, global_batch: 64}
data: {tokens: 300M}
schedule: {runs_per_month: 6, deadline_days: 3}
deployment: {mode: either, country: US}
have:
  - {gpu: h100-sxm, count: 100000}
"""


async def test_result_screen_leads_with_the_owned_hardware_that_does_the_run(
        make_app: Callable[..., GpuwizApp], tmp_path: Path) -> None:
    """A team with a fleet of H100 that does the run: the live panel's verdict, the Build tab and the rent-vs-buy
    tab say to use it (the part of the fleet the run takes) before the build to add capacity."""
    from textual.widgets import Static

    from gpuwiz.tui.screens.result import ResultScreen

    app = make_app(written(tmp_path / "fleet.yaml", OWNED))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        scr = app.screen
        assert isinstance(scr, ResultScreen)
        rec = app.recommendation
        assert rec is not None and rec.owned_pick is not None and rec.owned_pick.count == 8
        said = "8 of the 100000x NVIDIA H100 SXM5 80GB you own do this run in"
        build = shown(scr.query_one("#build", Static), 80)
        assert build.startswith("Use what you own: " + said) and "To add capacity:" in build
        assert "use what you own" in shown(scr.query_one("#whatif", Static), 80)
        await pilot.press("4")
        await settle(pilot, app)
        summary = shown(scr.query_one("#cost-summary", Static), 80)
        assert summary.startswith("Verdict: USE WHAT YOU OWN " + said)
        assert f"To add capacity: {rec.cost.verdict.upper() if rec.cost else ''}" in summary
