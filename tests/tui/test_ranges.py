"""The live panel shows the cross-validated P10-P90 range beside the time and cost of a run."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from wizhelp import settle

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
