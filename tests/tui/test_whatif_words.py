"""What the wizard re-drive left on the what-if strip and the live panel: English words in the
Chinese strip, "nothing fits" for a config with no answer at all, a P10-P90 range wrapped inside
itself at 80 columns. Each test drives what the user touches (Pilot)."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console
from textual.widgets import Static
from wizhelp import settle

from gpuwiz import i18n
from gpuwiz.core.models import Pitfall
from gpuwiz.core.pitfall_titles import TITLES
from gpuwiz.core.pitfalls import RULES
from gpuwiz.core.whatif import KeyNumbers, diff
from gpuwiz.tui.app import GpuwizApp
from gpuwiz.tui.widgets.live_panel import LivePanel

MakeApp = Callable[..., GpuwizApp]


def on_screen(widget: Static | LivePanel) -> list[str]:
    """The lines a widget shows at its own width, as the terminal wraps them."""
    console = Console(width=widget.content_size.width, file=io.StringIO(), color_system=None)
    with console.capture() as cap:
        console.print(widget.content if isinstance(widget, Static) else widget.render())
    return cap.get().splitlines()


def test_every_pitfall_rule_has_a_title() -> None:
    assert {r.id for r in RULES} <= set(TITLES)


def test_the_worst_pitfall_delta_names_severity_and_title_in_chinese(zh: None) -> None:
    p = Pitfall(id="stale-price", severity="medium", message="x", source="s")
    row = next(d for d in diff(KeyNumbers(found=False), KeyNumbers(found=False, worst_pitfall=p)) if d.key == "pitfall")
    assert row.after == "中：云价格过时", row
    assert "stale" not in row.after and "medium" not in row.after


async def test_the_chinese_strip_says_its_last_change_and_worst_pitfall_in_chinese(make_app: MakeApp,
                                                                                   config_file: Path) -> None:
    """LANG=zh_CN: `method → qlora`, `rent/buy → either` and `medium: stale-price` stayed English."""
    i18n.set_language("zh-CN")
    try:
        app = make_app(config_file)
        async with app.run_test(size=(100, 30)) as pilot:
            await settle(pilot, app)
            assert app.step == "result" and app.recommendation is not None
            strip = app.screen.query_one("#whatif", Static)
            await pilot.press("m")
            await settle(pilot, app)
            sub = str(strip.border_subtitle)
            assert re.search(r"训练方法 → (full|lora|qlora)", sub), sub  # the value as the form's option shows it
            assert "method" not in sub
            await pilot.press("r")
            await settle(pilot, app)
            sub = str(strip.border_subtitle)
            assert re.search(r"租用/购买 → (rent|buy|either)", sub) and "rent/buy" not in sub, sub
            req_line = str(app.screen.query_one("#result-req", Static).render())
            assert "租用/购买：" in req_line, req_line
            shown = "\n".join(on_screen(strip))
            worst = next(d for d in app.screen.deltas if d.key == "pitfall")  # type: ignore[attr-defined]
            assert app.recommendation.pitfalls, "the example config has pitfalls"
            assert worst.after in shown and "：" in worst.after, (worst, shown)
            assert not any(p.id in shown for p in app.recommendation.pitfalls), shown
            assert not re.search(r"\b(block|high|medium|info):", shown), shown
    finally:
        i18n.set_language("en")


async def test_a_refused_config_with_no_answer_says_so_not_nothing_fits(make_app: MakeApp, tmp_path: Path) -> None:
    """A config the engine refuses (no data size) opened on the result screen: the strip said
    `Build  nothing fits` though there was no answer. It says the config was refused, naming the field."""
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("version: 1\nmodel: {preset: llama-3-8b}\n", encoding="utf-8")
    app = make_app(cfg)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        assert app.step == "result" and app.recommendation is None and app.engine_error
        shown = "\n".join(on_screen(app.screen.query_one("#whatif", Static)))
        assert "nothing fits" not in shown.lower(), shown
        assert "refused" in shown and "Tokens (Data step)" in shown, shown


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
async def test_the_live_panel_at_80_columns_never_wraps_inside_a_range(make_app: MakeApp, config_file: Path,
                                                                        lang: str) -> None:
    """80×24: the time range wrapped as `(12.2 h–21.0` / `h)`. A range stays on one line."""
    i18n.set_language(lang)
    try:
        app = make_app(config_file)
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot, app)
            for step in ("model", "data", "schedule", "deployment"):
                app.goto(step)
                await settle(pilot, app)
                lines = on_screen(app.screen.query_one(LivePanel))
                assert any("–" in line for line in lines), lines  # the config has P10-P90 ranges
                for line in lines:
                    assert line.count("(") == line.count(")"), (step, lines)  # no line ends inside a range
    finally:
        i18n.set_language("en")
