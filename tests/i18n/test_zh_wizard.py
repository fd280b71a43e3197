"""The whole wizard in Chinese, driven with the keyboard at 80×24: every step, an invalid value, the
result tabs, help, and save; no label, step bar or panel line wider than its box."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rich.cells import cell_len
from textual.widgets import Footer, Input, Label, Select, Static

from gpuwiz.core.config_io import load_config
from gpuwiz.tui.app import GpuwizApp, create_app
from gpuwiz.tui.dialogs.help import HelpScreen
from gpuwiz.tui.dialogs.path_dialog import PathDialog
from gpuwiz.tui.screens.result import ResultScreen
from gpuwiz.tui.screens.steps import StepScreen
from gpuwiz.tui.widgets.chrome import StepBar
from gpuwiz.tui.widgets.live_panel import LivePanel

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tui"))
from wizhelp import settle

MakeApp = Callable[..., GpuwizApp]


@pytest.fixture
def make_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> MakeApp:
    monkeypatch.setattr(Input, "_toggle_cursor", lambda self: None)

    def make(config_path: Any = None, **kw: Any) -> GpuwizApp:
        kw.setdefault("state_dir", tmp_path / "state")
        kw.setdefault("handle_signals", False)
        return create_app(config_path, **kw)

    return make


def shown(widget: Static, width: int = 100) -> str:
    import io

    from rich.console import Console

    content = widget.content
    if isinstance(content, str):
        return content
    console = Console(width=width, file=io.StringIO(), color_system=None, legacy_windows=False)
    with console.capture() as cap:
        console.print(content)
    return cap.get()


def footer_text(app: GpuwizApp) -> str:
    return " ".join(str(w.render()) for w in app.screen.query_one(Footer).query("FooterKey"))


def assert_fits(app: GpuwizApp) -> None:
    """Labels are not cut, the step bar fits the width, the live panel's lines fit the panel."""
    scr = app.screen
    bar = scr.query_one(StepBar)
    assert bar.render().cell_len <= app.size.width
    for label in scr.query(".field-label").results(Label):
        text = str(label.render())
        assert cell_len(text.rstrip()) <= label.size.width, text
    for panel in scr.query(LivePanel):
        width = panel.content_size.width
        for line in panel.text.splitlines():
            assert cell_len(line) <= max(width, 1) or " " in line, line  # long lines wrap at spaces


async def type_into(pilot: Any, app: GpuwizApp, path: tuple[str, ...], text: str) -> None:
    scr = app.screen
    assert isinstance(scr, StepScreen)
    scr.field_widget(path).focus()
    await settle(pilot, app)
    await pilot.press("ctrl+u", *list(text))
    await settle(pilot, app)


async def test_the_whole_wizard_in_chinese_at_80x24(zh: None, make_app: MakeApp, tmp_path: Path) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        assert "该租用或购买哪种 GPU 服务器？" in shown(app.screen.query_one("#start-title", Static))
        assert "退出" in footer_text(app) and "帮助" in footer_text(app)
        await pilot.press("enter")  # 新建配置
        await settle(pilot, app)
        assert app.step == "model"
        scr = app.screen
        assert isinstance(scr, StepScreen)
        assert "训练什么？" in shown(scr.query_one(".step-intro", Static))
        assert "▶ 预设" in str(scr.query_one("#row-f-model-preset .field-label", Label).render())
        assert "下一步" in footer_text(app)
        assert_fits(app)
        sel = scr.query_one("#f-model-preset", Select)
        assert sel.has_focus
        await pilot.press("enter", "down", "enter")
        await settle(pilot, app)
        assert app.requirements.model.preset is not None
        sel.value = "llama-3-8b"
        await settle(pilot, app)
        await type_into(pilot, app, ("model", "seq_len"), "2048")
        await pilot.press("alt+right")
        await settle(pilot, app)
        assert app.step == "data"
        await type_into(pilot, app, ("data", "tokens"), "1B")
        await type_into(pilot, app, ("data", "tokens"), "-5")
        err = str(app.screen.query_one("#err-f-data-tokens", Static).render())
        assert err == "↳ Token 数: 不能小于 1", err  # the field's label and why, in Chinese
        assert "显示上一个有效结果" in app.screen.query_one(LivePanel).text  # the last valid answer, said in Chinese
        await type_into(pilot, app, ("data", "tokens"), "1B")
        assert app.requirements.data.tokens == 1e9
        panel = app.screen.query_one(LivePanel).text
        assert "单次耗时" in panel and "单次成本" in panel and "单卡显存" in panel
        assert_fits(app)
        await pilot.press("alt+right")
        await settle(pilot, app)
        assert app.step == "schedule"
        await type_into(pilot, app, ("schedule", "runs_per_month"), "weekly")
        assert abs(app.requirements.schedule.runs_per_month - 52 / 12) < 1e-9
        assert_fits(app)
        await pilot.press("alt+right")
        await settle(pilot, app)
        assert app.step == "deploy"
        assert "租用还是购买" in shown(app.screen.query_one(".step-intro", Static))
        assert_fits(app)
        await pilot.press("alt+right")
        await settle(pilot, app)
        assert app.step == "result" and isinstance(app.screen, ResultScreen)
        whatif = shown(app.screen.query_one("#whatif", Static))
        assert "单次耗时" in whatif and "结论" in whatif
        assert "1 配置" in shown(app.screen.query_one("#result-tabs").query("Tab").first())  # type: ignore[arg-type]
        for tab, words in (("2", "按组成部分"), ("4", "结论："), ("5", "")):
            await pilot.press(tab)
            await settle(pilot, app)
            if words:
                box = {"2": "#memory", "4": "#cost-summary"}[tab]
                assert words in shown(app.screen.query_one(box, Static))
        assert app.screen.query_one(StepBar).render().cell_len <= 80
        await pilot.press("f1")
        await settle(pilot, app)
        assert isinstance(app.screen, HelpScreen)
        assert "退出 gpuwiz" in shown(app.screen.query_one("#help-table", Static), 76)
        await pilot.press("escape")
        await settle(pilot, app)
        await pilot.press("ctrl+s")  # a new config: save as
        await settle(pilot, app)
        assert isinstance(app.screen, PathDialog)
        assert "配置另存为" in str(app.screen.query_one(".dialog-title", Label).render())
        target = tmp_path / "团队.yaml"
        app.screen.query_one("#path", Input).value = str(target)
        await pilot.press("enter")
        await settle(pilot, app)
        assert target.exists() and not app.dirty
        assert load_config(str(target)).data.tokens == 1e9


async def test_footer_and_notices_follow_the_language(zh: None, make_app: MakeApp, tmp_path: Path) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        app.notify("Draft restored. ctrl+s saves it.", title="Restored")
        await pilot.pause()
        said = [(n.title, n.message) for n in app._notifications]
        assert ("已恢复", "草稿已恢复。按 ctrl+s 保存。") in said, said
