"""Regressions found by driving the wizard in tmux (100×30, 80×24, nested tmux, NO_COLOR), each
as a Pilot test of what the user touched."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from rich.console import Console
from textual.widgets import Input, Static
from wizhelp import settle, written

from gpuwiz.core.models import Requirements
from gpuwiz.tui.app import GpuwizApp
from gpuwiz.tui.screens.steps import StepScreen
from gpuwiz.tui.widgets.live_panel import LivePanel

MakeApp = Callable[..., GpuwizApp]


def on_screen(widget: Static) -> str:
    """What a Static shows at its own width (a Rich table cut to fit, as the terminal shows it)."""
    console = Console(width=widget.content_size.width, file=io.StringIO(), color_system=None)
    with console.capture() as cap:
        console.print(widget.content)
    return cap.get()


def err_text(scr: StepScreen, fid: str) -> str:
    return str(scr.query_one(f"#err-{fid}", Static).render())


async def type_keys(pilot, app: GpuwizApp, fid: str, text: str) -> None:  # type: ignore[no-untyped-def]
    app.screen.query_one(f"#{fid}").focus()
    await settle(pilot, app)
    await pilot.press("ctrl+u", *list(text))
    await settle(pilot, app)


async def test_the_mark_survives_a_new_config_after_a_step_showed_the_old_data(make_app: MakeApp,
                                                                              config_file: Path) -> None:
    """Driven in tmux: Data step seen with 200M tokens, then start screen → New config → Discard. The
    Data step's reload empties Tokens; that is no edit of the user's, so the refusal keeps its mark
    (words on the field and in the live panel, not the config path) and Next stays blocked."""
    app = make_app(config_file)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        app.goto("data")
        await settle(pilot, app)
        await type_keys(pilot, app, "f-data-epochs", "3")  # unsaved changes: New config asks
        app.goto("start")
        await settle(pilot, app)
        await pilot.press("home", "enter")  # New config
        await settle(pilot, app)
        await pilot.press("tab", "enter")  # Discard
        await settle(pilot, app)
        assert app.requirements == Requirements()
        app.goto("data")
        await settle(pilot, app)
        scr = app.screen
        assert isinstance(scr, StepScreen) and scr.query_one("#f-data-tokens", Input).value == ""
        assert app.engine_fields and "Tokens: needed: how much data" in err_text(scr, "f-data-tokens")
        assert "Tokens (Data step): needed" in scr.query_one(LivePanel).text
        assert "data.tokens" not in scr.query_one(LivePanel).text
        assert app.check_action("next", ()) is None


async def test_the_what_if_strip_keeps_the_gpu_count_after_the_too_small_notice(make_app: MakeApp,
                                                                                 config_file: Path) -> None:
    """tmux at 80×24 made smaller (the "Terminal too small" notice), then big again: the strip is
    drawn for its new width, the GPU count whole (it once came back as `80GB ×…`)."""
    app = make_app(config_file)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        assert app.step == "result"
        strip = app.screen.query_one("#whatif", Static)
        count = app.recommendation.build.gpus_per_node * app.recommendation.build.nodes  # type: ignore[union-attr]
        assert re.search(rf"× {count}\b", on_screen(strip))
        await pilot.resize_terminal(60, 16)
        await settle(pilot, app)
        await pilot.resize_terminal(80, 24)
        await settle(pilot, app)
        await pilot.pause()
        text = on_screen(strip)
        assert re.search(rf"× {count}\b", text), text
        assert "×…" not in text


async def test_the_gpu_count_in_the_strip_is_never_followed_by_a_cut(make_app: MakeApp, config_file: Path) -> None:
    """At 80×24 after `g` (another GPU type, often another count) the Build cell read `H100 NVL 94… × 8…`:
    the change mark did not fit and the cell was cut after the count. The name gives way instead."""
    app = make_app(config_file)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        strip = app.screen.query_one("#whatif", Static)
        changed = 0
        for _key in range(6):
            await pilot.press("g")
            await settle(pilot, app)
            await pilot.pause()
            build_line = on_screen(strip).splitlines()[0]
            cell = build_line.split("Memory/GPU")[0]
            assert re.search(r"× \d+(  [▲▼◆]|\s*$)", cell.rstrip()), build_line
            changed += "◆" in cell
        assert changed  # the check ran on a changed build (the mark shows)


NO_BUY = """\
version: 1
model: {preset: mistral-7b, seq_len: 4096}
training: {method: lora, precision: bf16}
data: {tokens: 300M, epochs: 2}
schedule: {runs_per_month: 6, deadline_days: 1}
deployment: {mode: either, budget_usd: 5000, site: office}
"""


async def test_the_chart_draws_no_buy_line_when_nothing_can_be_bought(make_app: MakeApp, tmp_path: Path) -> None:
    """Rent wins because no build fits the budget: the chart drew "buy (on-prem TCO)" flat along $0,
    crossing rent as `◆ both`. Now only rent is drawn and the legend says there is nothing to own."""
    from gpuwiz.tui.widgets.cost_plot import CostPlot

    app = make_app(written(tmp_path / "nobuy.yaml", NO_BUY))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        rec = app.recommendation
        assert rec is not None and rec.cost is not None and rec.cost.verdict == "rent"
        assert not any(p.buy_usd for p in rec.cost.monthly)  # the case: no buy series
        await pilot.press("4")
        await settle(pilot, app)
        plot = app.screen.query_one(CostPlot)
        await pilot.pause()
        text = plot.render().plain
        assert not re.search("[▀▄█◆]", text), text  # no buy glyphs, no crossing
        assert re.search("[\u2801-\u28ff]", text)  # the rent line, in braille
        assert "buy (on-prem TCO)" not in text and "no build to own" in text
        assert "rent (cloud)" in text


@pytest.mark.parametrize("lang", ["en", "zh-CN"])
async def test_the_compare_view_at_80x24_keeps_quit_back_save_open_help(make_app: MakeApp, config_file: Path,
                                                                         lang: str) -> None:
    """`c` at 80×24: the footer was `... s Swap ^q Quit alt+← Back ^s Save ^` (Open and Help cut off);
    the baseline/now words stayed English in Chinese."""
    from textual.widgets import Footer

    from gpuwiz import i18n
    from gpuwiz.tui.screens.compare import CompareScreen

    i18n.set_language(lang)
    try:
        app = make_app(config_file)
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot, app)
            await pilot.press("m", "c")
            await settle(pilot, app)
            assert isinstance(app.screen, CompareScreen)
            footer = app.screen.query_one(Footer)
            await pilot.pause()
            keys = [fk for fk in footer.query("FooterKey")]
            shown_keys = " ".join(str(fk.render()) for fk in keys)
            for word in ("Quit", "Back", "Save", "Open", "Help"):
                assert i18n._(word) in shown_keys, (word, shown_keys)
            for fk in keys:  # every key whole on the 80-column line
                assert fk.region.right <= footer.region.right, str(fk.render())
            numbers = on_screen(app.screen.query_one("#compare-numbers", Static))
            assert i18n._("rent") in numbers  # the verdict word in the interface language
            await pilot.press("s")  # the keys the footer no longer shows still act
            await settle(pilot, app)
            assert app.screen.left.label == "now"  # type: ignore[attr-defined]
    finally:
        i18n.set_language("en")


async def test_the_deadline_at_one_day_reads_as_one_day(make_app: MakeApp, config_file: Path) -> None:
    """`[` down to the shortest deadline said `deadline → 1 days`; one more `[` says nothing changed."""
    app = make_app(config_file)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        for _key in range(3):
            await pilot.press("left_square_bracket")
            await settle(pilot, app)
        assert app.requirements.schedule.deadline_days == 1
        assert app.last_change == "deadline → 1 day"
        await pilot.press("left_square_bracket")
        await settle(pilot, app)
        assert any(n.message == "nothing changed: deadline → 1 day" for n in app._notifications)


async def test_choosing_a_preset_shows_what_it_fills_in(make_app: MakeApp) -> None:
    """New config, Preset → llama-3-8b: Layers, Hidden size, Sequence length and Params showed
    `e.g. 32`; they now show the preset's own values as placeholders (typing still replaces them)."""
    from textual.widgets import Select

    from gpuwiz.core.catalog import load_catalog

    preset = next(p for p in load_catalog().models if p.id == "llama-3-8b")
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("enter")  # New config
        await settle(pilot, app)
        scr = app.screen
        layers = scr.query_one("#f-model-layers", Input)
        assert layers.placeholder == "e.g. 32"
        scr.query_one("#f-model-preset", Select).value = "llama-3-8b"
        await settle(pilot, app)
        assert layers.value == "" and layers.placeholder == f"{preset.layers} (preset)"
        assert scr.query_one("#f-model-seq-len", Input).placeholder == f"{preset.seq_len:,} (preset)"
        assert scr.query_one("#f-model-hidden", Input).placeholder == f"{preset.hidden:,} (preset)"
        await type_keys(pilot, app, "f-model-layers", "16")  # typing replaces the placeholder
        assert app.requirements.model.layers == 16
        scr.query_one("#f-model-preset", Select).value = "__none__"
        await settle(pilot, app)
        assert scr.query_one("#f-model-hidden", Input).placeholder == "e.g. 4096"  # no preset: the example again


async def test_no_color_marks_the_highlighted_menu_entry_without_colour(make_app: MakeApp,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """NO_COLOR: the start menu's and a dropdown's highlighted entry differed only by a grey shade;
    it is underlined (and bold), the other entries are not."""
    from textual.widgets import OptionList, Select
    from textual.widgets._select import SelectOverlay

    def styles(ol: OptionList, y: int) -> set[str]:
        return {str(seg.style) for seg in ol.render_line(y) if seg.text.strip()}

    monkeypatch.setenv("NO_COLOR", "1")
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        assert app.no_color
        menu = app.screen.query_one(OptionList)
        await pilot.press("down")
        await pilot.pause()
        assert menu.highlighted == 1
        assert all("underline" in s for s in styles(menu, 1))
        assert not any("underline" in s for s in styles(menu, 0))
        await pilot.press("up", "enter")  # New config: the Model step, a dropdown
        await settle(pilot, app)
        sel = app.screen.query_one("#f-training-method", Select)
        sel.focus()
        await pilot.press("enter")
        await pilot.pause()
        overlay = sel.query_one(SelectOverlay)
        assert overlay.has_focus and overlay.highlighted is not None
        assert all("underline" in s for s in styles(overlay, overlay.highlighted - overlay.scroll_offset.y))
        other = 1 if overlay.highlighted == 0 else 0
        assert not any("underline" in s for s in styles(overlay, other))


async def test_the_live_panel_names_the_refused_field_in_chinese(make_app: MakeApp) -> None:
    """LANG=zh_CN, New config: the live panel said `Tokens (Data step): 需要：…` (label and step in English)."""
    from gpuwiz import i18n

    i18n.set_language("zh-CN")
    try:
        app = make_app()
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot, app)
            await pilot.press("enter")  # New config
            await settle(pilot, app)
            text = app.screen.query_one(LivePanel).text
            assert "Token 数（数据步骤）：" in text, text
            assert "Data step" not in text and "Tokens" not in text
    finally:
        i18n.set_language("en")


async def test_save_as_onto_a_fifo_or_a_link_is_refused_without_asking_to_replace(make_app: MakeApp,
                                                                                   config_file: Path,
                                                                                   tmp_path: Path) -> None:
    """f2 → a FIFO, a symlink to another file, /dev/null: the dialog asked "… already exists. Replace it?" (and
    refused only after Replace). It says what the path is at once; nothing is touched."""
    import os
    import stat

    from gpuwiz.tui.dialogs.confirm import ChoiceDialog
    from gpuwiz.tui.dialogs.path_dialog import PathDialog

    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    other = tmp_path / "other.yaml"
    other.write_text("# someone else's\n", encoding="utf-8")
    link = tmp_path / "link.yaml"
    link.symlink_to(other)
    before = config_file.read_bytes()
    app = make_app(config_file)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        for target, words in [(fifo, "named pipe"), (link, "symbolic link"), (Path(os.devnull), "device")]:
            await pilot.press("f2")
            await settle(pilot, app)
            app.screen.query_one("#path", Input).value = str(target)
            await pilot.press("enter")
            await settle(pilot, app)
            assert isinstance(app.screen, PathDialog) and not isinstance(app.screen, ChoiceDialog), target
            assert words in str(app.screen.query_one("#path-error", Static).render())
            await pilot.press("escape")
            await settle(pilot, app)
        # export (e) onto the FIFO: the same refusal
        await pilot.press("e")
        await settle(pilot, app)
        app.screen.query_one("#path", Input).value = str(fifo)
        await pilot.press("enter")
        await settle(pilot, app)
        assert isinstance(app.screen, PathDialog)
        assert "named pipe" in str(app.screen.query_one("#path-error", Static).render())
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and link.is_symlink() and config_file.read_bytes() == before
    assert other.read_text(encoding="utf-8") == "# someone else's\n"
    assert app.config_path == str(config_file)


async def test_the_what_if_keys_show_in_the_strip_when_a_config_is_opened(make_app: MakeApp, config_file: Path) -> None:
    """80×24 (the footer has no room for them): the strip's subtitle said `last change: opened team.yaml`,
    so the what-if keys showed nowhere on screen. At the fresh baseline it lists them; after a
    what-if it names the change; pinning says so."""
    app = make_app(config_file)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        strip = app.screen.query_one("#whatif", Static)
        assert "g + - m p d r" in str(strip.border_subtitle)
        await pilot.press("m")
        await settle(pilot, app)
        assert "last change: method →" in str(strip.border_subtitle)
        await pilot.press("b")
        await settle(pilot, app)
        assert "baseline pinned" in str(strip.border_subtitle)


async def test_help_shows_keys_as_typed_not_as_binding_strings(make_app: MakeApp, config_file: Path) -> None:
    """f1 listed the compare view's close key as `escape,q`."""
    from gpuwiz.tui.dialogs.help import HelpScreen

    app = make_app(config_file)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("f1")
        await settle(pilot, app)
        assert isinstance(app.screen, HelpScreen)
        table = on_screen(app.screen.query_one("#help-table", Static))
        assert "escape,q" not in table and "," not in "".join(line[:20] for line in table.splitlines())
        assert re.search(r"esc / q\s+Close the comparison", table), table


async def test_a_refused_config_opened_on_the_result_screen_names_the_field_in_words(make_app: MakeApp,
                                                                                      tmp_path: Path) -> None:
    """`gpuwiz cfg.yaml` with an unknown preset: the Result screen said `model.preset: unknown preset …
    (showing the last valid answer)` though there was no answer. It names the field and its step."""
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("version: 1\nmodel: {preset: '[red]evil[/red]'}\ndata: {tokens: 1B}\n", encoding="utf-8")
    app = make_app(cfg)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        assert app.step == "result" and app.recommendation is None and app.engine_fields == ("model.preset",)
        strip = app.screen.query_one("#whatif", Static)
        sub = str(strip.border_subtitle)
        assert "Preset (Model step):" in sub and "last valid answer" not in sub and "model.preset" not in sub
        body = str(app.screen.query_one("#build", Static).render())
        assert body.startswith("Preset (Model step): not a preset gpuwiz knows"), body


async def test_a_config_opened_and_quit_at_once_closes_without_a_traceback(
        make_app: Callable[..., GpuwizApp], config_file: Path) -> None:
    """The Result screen can be resumed before its tabs are composed (open a config, quit at once):
    drawing it then raised NoMatches('#build') out of the app."""
    from gpuwiz.tui.screens.base import WizScreen

    app = make_app(config_file)
    async with app.run_test(size=(100, 30)) as pilot:
        for _ in range(500):
            if isinstance(app.screen, WizScreen):
                break
            await pilot.pause(0.01)
        assert isinstance(app.screen, WizScreen), app.screen
    # leaving the block shuts the app down: an exception in a handler is raised here


@pytest.mark.parametrize("no_color", [True, False])
async def test_a_disabled_footer_key_is_marked_without_colour(make_app: MakeApp, config_file: Path,
                                                              monkeypatch: pytest.MonkeyPatch, no_color: bool) -> None:
    """NO_COLOR: Next, disabled while the step has an invalid field, differed from the enabled keys
    by a grey shade only (its dim turns into a colour, which NO_COLOR drops); it is struck through.
    With colours the footer is as before (dim only)."""
    from textual.geometry import Region
    from textual.widgets._footer import FooterKey

    from gpuwiz.tui.widgets.footer import LocalFooter

    def attrs(key: FooterKey) -> set[str]:
        """The text attributes of the key as the screen draws it (colours left out)."""
        line = key.render_lines(Region(0, 0, *key.size))[0]
        return {a for seg in line if seg.text.strip() and seg.style is not None
                for a in ("bold", "strike", "underline", "reverse", "italic") if getattr(seg.style, a)}

    def key_for(action: str) -> FooterKey | None:
        return next((k for k in app.screen.query(FooterKey) if k.action == action), None)

    if no_color:
        monkeypatch.setenv("NO_COLOR", "1")
    else:
        monkeypatch.delenv("NO_COLOR", raising=False)
    app = make_app(config_file)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        assert app.no_color == no_color
        app.goto("data")
        await settle(pilot, app)
        await type_keys(pilot, app, "f-data-epochs", "x")  # invalid: Next cannot act
        assert app.check_action("next", ()) is None
        footer = app.screen.query_one(LocalFooter)
        for _ in range(100):  # the footer rebuilds after a refresh: wait for it (bounded, no sleep)
            nxt = key_for("next")
            if nxt is not None and nxt.has_class("-disabled"):
                break
            await footer._rebuild()
            await pilot.pause()
        nxt, save = key_for("next"), key_for("save")
        assert nxt is not None and nxt.has_class("-disabled") and save is not None and not save.has_class("-disabled")
        assert ("strike" in attrs(nxt)) == no_color
        assert "strike" not in attrs(save)
        await type_keys(pilot, app, "f-data-epochs", "2")  # valid again: Next is a key like the others
        for _ in range(100):
            nxt = key_for("next")
            if nxt is not None and not nxt.has_class("-disabled"):
                break
            await footer._rebuild()
            await pilot.pause()
        nxt = key_for("next")
        assert nxt is not None and not nxt.has_class("-disabled") and "strike" not in attrs(nxt)
