"""User stories, driven through the keyboard with Pilot."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.widgets import Input, Select, Static
from wizhelp import settle

from gpuwiz.core.config_io import load_config
from gpuwiz.core.errors import GpuwizError
from gpuwiz.core.models import Requirements
from gpuwiz.tui import drafts
from gpuwiz.tui.app import GpuwizApp, create_app
from gpuwiz.tui.dialogs.confirm import ChoiceDialog
from gpuwiz.tui.dialogs.help import HelpScreen
from gpuwiz.tui.dialogs.path_dialog import PathDialog
from gpuwiz.tui.screens.compare import CompareScreen
from gpuwiz.tui.screens.result import ResultScreen
from gpuwiz.tui.screens.steps import StepScreen
from gpuwiz.tui.widgets.live_panel import LivePanel

MakeApp = Callable[..., GpuwizApp]


def shown(widget: Static, width: int = 100) -> str:
    """The plain text a Static shows (Rich renderables rendered as on screen)."""
    import io

    from rich.console import Console

    content = widget.content
    if isinstance(content, str):
        return content
    console = Console(width=width, file=io.StringIO(), color_system=None, legacy_windows=False)
    with console.capture() as cap:
        console.print(content)
    return cap.get()


def panel_text(app: GpuwizApp) -> str:
    return app.screen.query_one(LivePanel).text


async def submit_path(pilot, app: GpuwizApp, path: object) -> None:  # type: ignore[no-untyped-def]
    """Fill the open path dialog (typing a long path key by key is slow) and press enter."""
    assert isinstance(app.screen, PathDialog)
    app.screen.query_one("#path", Input).value = str(path)
    await pilot.press("enter")
    await settle(pilot, app)


async def focus_field(pilot, app: GpuwizApp, path: tuple[str, ...]) -> Input:  # type: ignore[no-untyped-def]
    scr = app.screen
    assert isinstance(scr, StepScreen)
    w = scr.field_widget(path)
    w.focus()
    await settle(pilot, app)
    assert isinstance(w, Input)
    return w


async def type_into(pilot, app: GpuwizApp, path: tuple[str, ...], text: str) -> Input:  # type: ignore[no-untyped-def]
    w = await focus_field(pilot, app, path)
    await pilot.press("ctrl+u", *list(text))
    await settle(pilot, app)
    return w


async def test_walk_all_steps_with_the_keyboard(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        assert app.step == "start"
        await pilot.press("enter")  # "New config"
        await settle(pilot, app)
        assert app.step == "model" and isinstance(app.screen, StepScreen)
        # defaults are incomplete: the engine's refusal is shown in words, naming the field, nothing crashes
        assert app.recommendation is None and app.engine_error
        assert "Tokens (Data step): needed" in panel_text(app)
        # choose a preset with the keyboard: the Select has focus first
        sel = app.screen.query_one("#f-model-preset", Select)
        assert sel.has_focus
        await pilot.press("enter", "down", "enter")
        await settle(pilot, app)
        assert app.requirements.model.preset is not None  # picked with the keyboard
        sel.value = "llama-3-8b"  # the story needs a token model; the catalog order may change
        await settle(pilot, app)
        assert app.requirements.model.preset == "llama-3-8b"
        await type_into(pilot, app, ("model", "seq_len"), "2048")
        assert app.requirements.model.seq_len == 2048
        await pilot.press("ctrl+n")
        await settle(pilot, app)
        assert app.step == "data"
        await type_into(pilot, app, ("data", "tokens"), "1B")
        assert app.requirements.data.tokens == 1e9
        await settle(pilot, app)
        assert app.recommendation is not None and app.recommendation.found
        assert "×" in panel_text(app) and "Time/run" in panel_text(app)
        await pilot.press("pagedown")  # the alternative "next" key works inside an Input
        await settle(pilot, app)
        assert app.step == "schedule"
        await type_into(pilot, app, ("schedule", "runs_per_month"), "3")
        await pilot.press("enter", "enter")  # enter walks the fields, then the steps
        await settle(pilot, app)
        assert app.step == "deploy"
        await pilot.press("ctrl+b")
        await settle(pilot, app)
        assert app.step == "schedule"
        assert app.screen.query_one("#f-schedule-runs-per-month", Input).value == "3"  # kept
        await pilot.press("ctrl+n", "ctrl+n")
        await settle(pilot, app)
        assert app.step == "result" and isinstance(app.screen, ResultScreen)
        assert app.requirements.schedule.runs_per_month == 3
        assert app.dirty
        whatif_text = shown(app.screen.query_one("#whatif", Static))
        assert app.baseline is not None
        assert "Time/run" in whatif_text and "Cost/run" in whatif_text
        await pilot.press("ctrl+n")  # no step after the result: nothing happens
        await settle(pilot, app)
        assert app.step == "result"


async def test_invalid_input_marks_field_and_keeps_last_answer(make_app: MakeApp, config_file: Path) -> None:
    app = make_app(config_file)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await pilot.press("ctrl+b", "ctrl+b", "ctrl+b")  # result -> deploy -> schedule -> data
        await settle(pilot, app)
        assert app.step == "data"
        await type_into(pilot, app, ("data", "tokens"), "300M")
        before_req, before_rec = app.requirements, app.recommendation
        assert before_rec is not None and before_req.data.tokens == 3e8
        await pilot.press("end", "x")  # "300Mx"
        await settle(pilot, app)
        scr = app.screen
        assert isinstance(scr, StepScreen)
        assert app.requirements == before_req and app.recommendation == before_rec
        assert scr.query_one("#row-f-data-tokens").has_class("-invalid")
        assert "must be a number" in str(scr.query_one("#err-f-data-tokens", Static).render())
        scr.query_one("#f-data-tokens", Input).value = "-5"
        await settle(pilot, app)
        assert app.requirements == before_req
        err = str(scr.query_one("#err-f-data-tokens", Static).render())
        assert "Tokens" in err and "at least 1" in err
        assert "last valid answer" in panel_text(app)
        await pilot.press("ctrl+n")  # Next is disabled while the step is invalid
        await settle(pilot, app)
        assert app.step == "data"
        await type_into(pilot, app, ("data", "epochs"), "lots")  # a second invalid field, independently
        assert "#row-f-data-epochs" and scr.query_one("#row-f-data-epochs").has_class("-invalid")
        await type_into(pilot, app, ("data", "tokens"), "400M")
        assert app.requirements.data.tokens == 4e8
        assert not scr.query_one("#row-f-data-tokens").has_class("-invalid")
        await type_into(pilot, app, ("data", "epochs"), "3")
        assert not scr.invalid
        await settle(pilot, app)
        assert app.recommendation != before_rec  # the answer followed the valid change
        await pilot.press("ctrl+n")
        await settle(pilot, app)
        assert app.step == "schedule"


async def test_whatif_keys_change_the_answer_against_the_baseline(make_app: MakeApp, config_file: Path) -> None:
    app = make_app(config_file)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        assert app.step == "result" and not app.dirty
        base_req = app.requirements
        await pilot.press("m")  # lora -> qlora
        await settle(pilot, app)
        assert app.requirements.training.method == "qlora"
        assert app.dirty
        await pilot.press("d")
        await settle(pilot, app)
        assert app.requirements.data.tokens == 4e8
        await pilot.press("D", "D")
        await settle(pilot, app)
        assert app.requirements.data.tokens == 1e8
        rec = app.recommendation
        assert rec is not None and rec.estimate is not None
        count = rec.estimate.plan.gpus
        await pilot.press("plus")
        await settle(pilot, app)
        assert app.requirements.hardware is not None and app.requirements.hardware.count is not None
        assert app.requirements.hardware.count > count
        scr = app.screen
        assert isinstance(scr, ResultScreen)
        changed = {d.key for d in scr.deltas if d.change}
        assert "gpu" in changed
        await pilot.press("g")
        await settle(pilot, app)
        assert app.requirements.hardware is not None and app.requirements.hardware.gpu is not None
        await pilot.press("right_square_bracket", "r", "p")
        await settle(pilot, app)
        assert app.requirements.schedule.deadline_days == 3
        assert app.requirements.deployment.mode == "rent"
        assert app.requirements.training.precision == "fp8"
        await pilot.press("b")  # pin: deltas go quiet
        await settle(pilot, app)
        assert all(not d.change for d in scr.deltas)
        await pilot.press("0")  # back to the pinned baseline = now
        await pilot.press("a")  # unpin hardware
        await settle(pilot, app)
        assert app.requirements.hardware is None
        # the input steps follow what-if changes
        await pilot.press("ctrl+b", "ctrl+b", "ctrl+b", "ctrl+b")
        await settle(pilot, app)
        assert app.step == "model"
        assert app.screen.query_one("#f-training-method", Select).value == "qlora"
        assert base_req.training.method == "lora"


async def test_save_and_open_round_trip(make_app: MakeApp, config_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "saved.yaml"
    app = make_app(config_file)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await pilot.press("m", "f2")
        await settle(pilot, app)
        assert isinstance(app.screen, PathDialog)
        await submit_path(pilot, app, out)
        assert not isinstance(app.screen, PathDialog)
        assert out.exists() and not app.dirty and app.config_path == str(out)
        saved = app.requirements
        assert load_config(out) == saved
        # a bad path keeps the dialog open and says why
        await pilot.press("f2")
        await submit_path(pilot, app, tmp_path / "nope" / "x.yaml")
        assert isinstance(app.screen, PathDialog)
        assert "does not exist" in str(app.screen.query_one("#path-error", Static).render())
        await pilot.press("escape")
        await settle(pilot, app)
    app2 = make_app()
    async with app2.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app2)
        await pilot.press("ctrl+o")
        await settle(pilot, app2)
        assert isinstance(app2.screen, PathDialog)
        await pilot.press(*list("missing.yaml"), "enter")  # typed for real once
        await settle(pilot, app2)
        assert isinstance(app2.screen, PathDialog)  # error shown in the dialog
        await submit_path(pilot, app2, out)
        assert app2.requirements == saved and app2.step == "result" and not app2.dirty
        await pilot.press("m")  # change, then ctrl+s saves in place
        await pilot.press("ctrl+s")
        await settle(pilot, app2)
        assert not app2.dirty and load_config(out) == app2.requirements


async def test_restore_after_a_killed_session(make_app: MakeApp, config_file: Path, state_dir: Path) -> None:
    app = make_app(config_file)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await pilot.press("m", "d", "plus")
        await settle(pilot, app)
        edited = app.requirements
        deadline = time.monotonic() + 20  # typing is debounced: the draft follows within DRAFT_EVERY_S
        while (drafts.read_draft(state_dir) is None or drafts.read_draft(state_dir).requirements != edited) \
                and time.monotonic() < deadline:
            await pilot.pause(0.05)
        assert drafts.read_draft(state_dir) is not None
        # the session dies here (no quit): the draft stays behind
    draft = drafts.read_draft(state_dir)
    assert draft is not None and draft.requirements == edited and draft.source == str(config_file)
    app2 = make_app()
    async with app2.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app2)
        assert isinstance(app2.screen, ChoiceDialog)
        await pilot.press("enter")  # Restore
        await settle(pilot, app2)
        assert app2.requirements == edited
        assert app2.config_path == str(config_file) and app2.dirty
        await pilot.press("ctrl+s")
        await settle(pilot, app2)
        assert drafts.read_draft(state_dir) is None
        assert load_config(config_file) == edited


async def test_sighup_flushes_the_draft_and_exits(make_app: MakeApp, config_file: Path, state_dir: Path) -> None:
    app = make_app(config_file, handle_signals=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await pilot.press("m")
        await settle(pilot, app)
        edited = app.requirements
        drafts.clear_draft(state_dir)  # prove the handler writes it
        if signal.SIGHUP not in app._signals_installed:
            pytest.skip("signal handlers unavailable here")
        os.kill(os.getpid(), signal.SIGHUP)
        await pilot.pause(0.1)
        assert app.return_code == 128 + signal.SIGHUP
    draft = drafts.read_draft(state_dir)
    assert draft is not None and draft.requirements == edited


async def test_discarding_the_draft_starts_clean(make_app: MakeApp, state_dir: Path) -> None:
    drafts.write_draft(state_dir, Requirements.model_validate({"model": {"preset": "llama-3-8b"}}), None, "data")
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        assert isinstance(app.screen, ChoiceDialog)
        await pilot.press("right", "enter")  # Discard
        await settle(pilot, app)
        assert app.requirements == Requirements() and app.step == "start"
    assert drafts.read_draft(state_dir) is None


async def test_compare_baseline_vs_now_and_a_file(make_app: MakeApp, config_file: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.yaml"
    other.write_text(config_file.read_text().replace("method: lora", "method: full"))
    app = make_app(config_file)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("m", "c")
        await settle(pilot, app)
        scr = app.screen
        assert isinstance(scr, CompareScreen)
        changes = shown(scr.query_one("#compare-changes", Static))
        assert "training.method" in changes and "lora" in changes and "qlora" in changes
        numbers = shown(scr.query_one("#compare-numbers", Static))
        assert "baseline" in numbers and "now" in numbers and "Time/run" in numbers
        await pilot.press("l")
        await settle(pilot, app)
        assert isinstance(app.screen, PathDialog)
        await submit_path(pilot, app, other)
        assert app.screen is scr and scr.left.label == "other.yaml"
        assert "full" in shown(scr.query_one("#compare-changes", Static))
        await pilot.press("ctrl+b")  # back closes the compare view
        await settle(pilot, app)
        assert isinstance(app.screen, ResultScreen)


async def test_quit_with_unsaved_changes_asks(make_app: MakeApp, config_file: Path, state_dir: Path) -> None:
    app = make_app(config_file)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await pilot.press("m", "ctrl+q")
        await settle(pilot, app)
        assert isinstance(app.screen, ChoiceDialog)
        await pilot.press("escape")  # cancel
        await settle(pilot, app)
        assert app.is_running and isinstance(app.screen, ResultScreen)
        await pilot.press("ctrl+q")
        await settle(pilot, app)
        app.screen.query_one("#choice-discard").press()
        await settle(pilot, app)
    assert app.return_code == 0
    assert drafts.read_draft(state_dir) is None  # a deliberate discard leaves no draft


async def test_export_markdown_and_copy(make_app: MakeApp, config_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "rec.md"
    app = make_app(config_file)
    copied: list[str] = []
    app.copy_to_clipboard = copied.append  # type: ignore[method-assign]
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await pilot.press("e")
        await settle(pilot, app)
        assert isinstance(app.screen, PathDialog)
        await submit_path(pilot, app, out)
        assert out.read_text().startswith("#")
        await pilot.press("y")
        await settle(pilot, app)
        assert copied and copied[0] == out.read_text()


async def test_help_palette_and_too_small(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await pilot.press("f1")
        await settle(pilot, app)
        assert isinstance(app.screen, HelpScreen)
        keys = [r[0] for r in app.help_rows()]
        assert "^n" in keys and "g" in keys and "^s" in keys and "+/-" in keys and "-" in keys
        await pilot.press("escape")
        await settle(pilot, app)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for needed in ("Go to: Model", "Go to: Deploy", "Go to: Result", "Save as…", "Export Markdown…",
                       "Compare: baseline vs now", "What-if: next GPU type"):
            assert needed in titles
        await pilot.press("ctrl+p", *list("go to deploy"))
        await pilot.pause(0.3)
        await pilot.press("enter")
        await settle(pilot, app)
        assert app.step == "deploy"
        await pilot.resize_terminal(60, 20)
        await settle(pilot, app)
        assert app.screen.query_one(".too-small").display
        assert not app.screen.query_one("#body").display
        await pilot.resize_terminal(80, 24)
        await settle(pilot, app)
        assert not app.screen.query_one(".too-small").display


async def test_broken_config_shows_one_line_error(make_app: MakeApp, tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\ndata:\n  tokens: -3\n")
    app = make_app(bad)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        assert app.step == "start"
        msgs = [n.message for n in app._notifications]
        assert any("bad.yaml:3" in m for m in msgs)


def test_theme_option() -> None:
    assert create_app(theme="ansi-dark", handle_signals=False).theme == "ansi-dark"
    with pytest.raises(GpuwizError, match="unknown theme"):
        create_app(theme="nope")


async def test_the_strip_shows_the_capex_of_the_build_to_own_when_renting_wins(make_app, config_file, monkeypatch):
    """When the verdict is rent, Recommendation.buy_build is the build one would own: its capex is the
    "Capex (buy)" number (it used to show "—"). At 80 columns a change too long for its cell drops its
    percentage instead of being cut."""

    app = make_app(config_file)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        for _ in range(40):
            if app.recommendation is not None and isinstance(app.screen, ResultScreen):
                break
            await pilot.pause(0.05)
        rec = app.recommendation
        assert rec is not None and rec.buy_build is not None and rec.buy_build.capex_usd > 0
        scr = app.screen
        assert isinstance(scr, ResultScreen)
        capex = next(d for d in scr.deltas if d.key == "capex")
        assert capex.after.startswith("$"), capex
        await pilot.press("m", "plus", "plus")
        await settle(pilot, app)
        assert any("%" in d.change for d in scr.deltas)
        from rich.console import Console

        from gpuwiz.tui.widgets.result_views import deltas_table

        width = scr.query_one("#whatif").content_size.width
        console = Console(width=width, record=True, color_system=None)
        console.print(deltas_table(scr.deltas, two_columns=True, width=width))
        for line in console.export_text().splitlines():
            assert "(+" not in line or "%)" in line, line  # a percentage is shown whole or not at all
