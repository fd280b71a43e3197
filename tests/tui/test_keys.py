"""Keys that survive terminals (tmux's ctrl+b, no F-keys), a keymap from settings.yaml, help with full
names, a focus marker that needs no colour, and no key acting behind the "too small" notice."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from textual.widgets import Footer, Input, Label
from wizhelp import settle

from gpuwiz.tui.app import GpuwizApp
from gpuwiz.tui.dialogs.help import HelpScreen
from gpuwiz.tui.screens.steps import StepScreen

MakeApp = Callable[..., GpuwizApp]


def footer_text(app: GpuwizApp) -> str:
    return " ".join(
        str(w.render()) for w in app.screen.query_one(Footer).query("FooterKey"))


async def test_alt_arrows_walk_the_steps_and_show_in_the_footer_at_80x24(make_app: MakeApp, config_file: Path,
                                                                        tmp_path: Path) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await pilot.press("alt+right")
        await settle(pilot, app)
        assert app.step == "model"
        await pilot.press("alt+right")
        await settle(pilot, app)
        assert app.step == "data"
        await pilot.press("alt+left")
        await settle(pilot, app)
        assert app.step == "model"
        keys = footer_text(app)
        assert "alt+←" in keys and "alt+→" in keys
        for word in ("Quit", "Back", "Save", "Open", "Help"):
            assert word in keys, (word, keys)
    app2 = make_app(config_file)
    async with app2.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app2)
        assert app2.step == "result"
        keys = footer_text(app2)
        for word in ("Quit", "Back", "Save", "Open", "Help"):  # the result footer keeps them at 80 columns
            assert word in keys, (word, keys)
        # every footer key is visible on the 80-column line
        region = app2.screen.query_one(Footer).region
        for fk in app2.screen.query_one(Footer).query("FooterKey"):
            assert fk.region.right <= region.right, str(fk.render())


async def test_a_keymap_from_settings_yaml_rebinds_by_id(make_app: MakeApp, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "conf"
    cfg.mkdir()
    (cfg / "settings.yaml").write_text("keys:\n  next: ctrl+right\n  back: ctrl+left\n", encoding="utf-8")
    monkeypatch.setenv("GPUWIZ_CONFIG_DIR", str(cfg))
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("ctrl+right")
        await settle(pilot, app)
        assert app.step == "model"
        await pilot.press("ctrl+right", "ctrl+left")
        await settle(pilot, app)
        assert app.step == "model"
        await pilot.press("f1")
        await settle(pilot, app)
        assert isinstance(app.screen, HelpScreen)
        rows = app.help_rows()
        assert any(k == "ctrl+right" and "Next" in d for k, d, _ in rows)


@pytest.mark.parametrize("content", ["keys: [1, 2\n", "keys:\n  no-such-binding: x\n", "keys:\n  next: 5 + ]\n",
                                     "- just a list\n"])
async def test_a_bad_settings_yaml_is_one_line_and_the_defaults(make_app: MakeApp, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch, content: str) -> None:
    cfg = tmp_path / "conf"
    cfg.mkdir()
    (cfg / "settings.yaml").write_text(content, encoding="utf-8")
    monkeypatch.setenv("GPUWIZ_CONFIG_DIR", str(cfg))
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        msgs = [n for n in app._notifications if "settings.yaml" in n.title]
        assert len(msgs) == 1 and "\n" not in msgs[0].message and "default keys" in msgs[0].message
        await pilot.press("alt+right")
        await settle(pilot, app)
        assert app.step == "model"  # the defaults work


async def test_help_lists_full_action_names(make_app: MakeApp, config_file: Path) -> None:
    app = make_app(config_file)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        descs = [d for _, d, _ in app.help_rows()]
        assert "Prec" not in descs and "Data×2" not in descs
        assert any("precision" in d for d in descs) and any("double the data" in d for d in descs)
        assert any(k == "alt+←" for k, _, _ in app.help_rows())


async def test_the_focused_field_has_a_marker_without_colour(make_app: MakeApp,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        app.goto("data")
        await settle(pilot, app)
        scr = app.screen
        assert isinstance(scr, StepScreen)
        scr.field_widget(("data", "epochs")).focus()
        await settle(pilot, app)
        row = scr.query_one("#row-f-data-epochs")
        assert str(row.query_one(Label).render()).startswith("▶")
        assert row.query_one(Label).styles.text_style.reverse  # reverse video too
        others = [str(lab.render()) for lab in scr.query(".field-label") if lab.parent is not row]
        assert all(not t.startswith("▶") for t in others)
        help_line = scr.query_one("#help-f-data-epochs")
        assert help_line.display and "passes" in str(help_line.render())  # one line of help under it


async def test_shift_tab_from_the_first_field_lands_on_a_visible_field(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        app.goto("data")
        await settle(pilot, app)
        scr = app.screen
        assert isinstance(scr, StepScreen)
        scr.field_widget(("data", "tokens")).focus()
        await settle(pilot, app)
        await pilot.press("shift+tab")
        await settle(pilot, app)
        assert app.focused is not None and "field-input" in app.focused.classes


async def test_no_key_acts_behind_the_too_small_notice(make_app: MakeApp, config_file: Path) -> None:
    app = make_app(config_file)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        before = app.requirements
        await pilot.resize_terminal(60, 20)
        await settle(pilot, app)
        await pilot.press("m", "p", "g", "alt+left", "pageup")
        await settle(pilot, app)
        assert app.requirements == before and app.step == "result"
        await pilot.resize_terminal(100, 30)
        await settle(pilot, app)
        await pilot.press("alt+left")
        await settle(pilot, app)
        assert app.step == "deploy"
        inp = app.screen.query_one("#f-hardware-count", Input)
        inp.focus()
        await pilot.resize_terminal(60, 20)
        await settle(pilot, app)
        await pilot.press("7")
        await settle(pilot, app)
        assert inp.value == ""  # typing does not reach a hidden field


@pytest.mark.parametrize("rows", [23, 22])
async def test_an_80x24_terminal_in_tmux_or_nested_tmux_is_big_enough(make_app: MakeApp, config_file: Path,
                                                                      rows: int) -> None:
    """tmux's status line leaves 23 rows of an 80×24 terminal, a tmux inside tmux 22: the wizard works
    there (no "too small" notice; the result footer, the what-if strip and the chart's legend show)."""
    from textual.widgets import Static

    from gpuwiz.tui.widgets.cost_plot import CostPlot

    app = make_app(config_file)
    async with app.run_test(size=(80, rows)) as pilot:
        await settle(pilot, app)
        assert app.step == "result"
        assert not app.screen.query_one(".too-small").display
        footer = app.screen.query_one(Footer)
        assert footer.region.bottom == rows and footer.region.height == 1
        strip = app.screen.query_one("#whatif", Static)
        assert strip.region.height >= 6 and strip.region.bottom < rows
        await pilot.press("4")
        await settle(pilot, app)
        plot = app.screen.query_one(CostPlot)
        assert plot.region.height > 0 and plot.region.bottom <= footer.region.y  # axis and legend above the footer
        await pilot.press("alt+left")  # keys act: back to the Deploy step, its first field focused
        await settle(pilot, app)
        assert app.step == "deploy" and app.focused is not None and app.focused.id == "f-deployment-mode"
