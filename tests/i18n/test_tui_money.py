"""The wizard shows money in the user's currency (``deployment.currency``, else the country's):
the live panel, the result screen's what-if strip, rent-vs-buy summary, build, options and cost
chart axis. The engine's numbers and the JSON stay USD. And the Chinese result screen has no
English sentences left (the heuristic of test_zh_untranslated)."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from textual.widgets import Input, Static

from gpuwiz.core.whatif import fmt_money
from gpuwiz.tui.app import GpuwizApp, create_app
from gpuwiz.tui.screens.result import ResultScreen
from gpuwiz.tui.widgets.cost_plot import CostPlot
from gpuwiz.tui.widgets.live_panel import LivePanel

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tui"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_zh_untranslated import untranslated
from wizhelp import settle

CONFIG = """\
version: 1
model: {{preset: qwen2.5-7b}}
training: {{method: lora}}
data: {{tokens: 200M}}
schedule: {{runs_per_month: 4, deadline_days: 3}}
deployment: {{mode: {mode}, country: {country}}}
"""
MakeApp = Callable[..., GpuwizApp]


@pytest.fixture
def make_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> MakeApp:
    monkeypatch.setattr(Input, "_toggle_cursor", lambda self: None)

    def make(config_path: Any = None, **kw: Any) -> GpuwizApp:
        kw.setdefault("state_dir", tmp_path / "state")
        kw.setdefault("handle_signals", False)
        return create_app(config_path, **kw)

    return make


def shown(renderable: Any, width: int = 100) -> str:
    if isinstance(renderable, str):
        return renderable
    console = Console(width=width, file=io.StringIO(), color_system=None, legacy_windows=False)
    with console.capture() as cap:
        console.print(renderable)
    return cap.get()


@pytest.mark.parametrize(("country", "mode", "sym", "other"), [("CN", "either", "¥", "$"), ("US", "either", "$", "¥")])
async def test_money_follows_the_configs_currency(make_app: MakeApp, tmp_path: Path, country: str, mode: str,
                                                  sym: str, other: str) -> None:
    cfg = tmp_path / "team.yaml"
    cfg.write_text(CONFIG.format(country=country, mode=mode), encoding="utf-8")
    app = make_app(cfg)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        rec = app.recommendation
        assert rec is not None and rec.found and rec.cost_per_run_usd is not None and rec.currency is not None
        assert rec.currency.code == ("CNY" if country == "CN" else "USD")
        scr = app.screen
        assert isinstance(scr, ResultScreen)
        per_run = fmt_money(rec.cost_per_run_usd, rec.currency)
        assert per_run.startswith(sym)
        strip = shown(scr.query_one("#whatif", Static).content)
        assert per_run in strip and other not in strip
        summary = shown(scr.query_one("#cost-summary", Static).content)
        assert per_run in summary
        build = shown(scr.query_one("#build", Static).content) if scr.query("#build") else ""
        options = shown(scr.query_one("#options", Static).content)
        for text in (summary, options, build):
            money = [w for w in text.split() if w[:1] in "$¥" or w[1:2] in "$¥"]
            assert money and all(other not in w for w in money), text
        plot = scr.query_one(CostPlot)
        if plot.points:
            axis = str(plot.render())
            assert sym + "0" in axis and other + "0" not in axis
        app.goto("model")
        await settle(pilot, app)
        panel = app.screen.query_one(LivePanel).text
        assert per_run in panel and other not in panel
    # the engine's own numbers stay USD whatever is shown
    assert rec.cost_per_run_usd > 0


async def test_chinese_result_screen_has_no_english_sentences(make_app: MakeApp, tmp_path: Path,
                                                              catalog) -> None:  # type: ignore[no-untyped-def]
    from gpuwiz import i18n

    cfg = tmp_path / "team.yaml"
    cfg.write_text(CONFIG.format(country="CN", mode="either"), encoding="utf-8")
    i18n.set_language("zh-CN")
    try:
        app = make_app(cfg)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot, app)
            scr = app.screen
            assert isinstance(scr, ResultScreen)
            texts = [shown(w.content, 2000) for w in scr.query(Static) if w.id in
                     ("whatif", "cost-summary", "options", "pitfalls", "build")]
    finally:
        i18n.set_language("en")
    assert len(texts) >= 4
    page = "\n".join(texts)
    assert "¥" in page
    assert untranslated(page, catalog) == []
