"""Honest state and safe files: new/open reset the answer and the baseline; saving never writes a
value that is not on screen, never overwrites without asking, and never writes what cannot reopen."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.widgets import Input, OptionList
from wizhelp import settle

from gpuwiz.core.config_io import load_config
from gpuwiz.core.models import Requirements
from gpuwiz.tui import drafts
from gpuwiz.tui.app import GpuwizApp
from gpuwiz.tui.dialogs.confirm import ChoiceDialog
from gpuwiz.tui.dialogs.path_dialog import PathDialog
from gpuwiz.tui.screens.steps import StepScreen
from gpuwiz.tui.widgets.live_panel import LivePanel

MakeApp = Callable[..., GpuwizApp]


def notes(app: GpuwizApp) -> str:
    return "\n".join(f"{n.title}: {n.message}" for n in app._notifications)


async def test_new_config_and_example_reset_the_answer_and_the_baseline(make_app: MakeApp, config_file: Path) -> None:
    app = make_app(config_file)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        assert app.step == "result" and app.baseline is not None
        old_gpu = app.recommendation.build.gpu_name  # type: ignore[union-attr]
        app.new_config()
        app.goto("model")
        await settle(pilot, app)
        assert app.baseline is None  # nothing measured against the discarded config
        assert app.answer_for == Requirements() and app.requirements == Requirements()
        panel = app.screen.query_one(LivePanel).text
        assert old_gpu not in panel  # the panel no longer shows the old config's answer
        # an example: its own answer, and a baseline pinned from it (not from the config before)
        from gpuwiz.tui.screens.start import examples

        ex = examples()[0]
        assert app.load_example(ex.name, ex.text) is None
        app.goto("result")
        await settle(pilot, app)
        assert app.baseline is not None and app.baseline[0] == app.requirements


async def test_ctrl_s_with_an_invalid_field_refuses_names_it_and_focuses_it(make_app: MakeApp,
                                                                            config_file: Path) -> None:
    before = config_file.read_bytes()
    app = make_app(config_file)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        app.goto("data")
        await settle(pilot, app)
        app.screen.query_one("#f-data-tokens", Input).value = "-5"
        await settle(pilot, app)
        app.goto("result")
        await settle(pilot, app)
        await pilot.press("m")  # a real change too: the file is dirty
        await settle(pilot, app)
        await pilot.press("ctrl+s")
        await settle(pilot, app)
        assert config_file.read_bytes() == before  # nothing written, not the last valid tokens either
        assert "Tokens" in notes(app)
        assert app.step == "data" and isinstance(app.screen, StepScreen)
        assert app.focused is not None and app.focused.id == "f-data-tokens"


async def test_save_as_and_export_ask_before_replacing_a_file(make_app: MakeApp, config_file: Path,
                                                               tmp_path: Path) -> None:
    other = tmp_path / "other.yaml"
    other.write_text("# someone else's file\n", encoding="utf-8")
    app = make_app(config_file)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("f2")
        await settle(pilot, app)
        app.screen.query_one("#path", Input).value = str(other)
        await pilot.press("enter")
        await settle(pilot, app)
        assert isinstance(app.screen, ChoiceDialog)  # asks
        await pilot.press("enter")  # default: Cancel
        await settle(pilot, app)
        assert other.read_text(encoding="utf-8") == "# someone else's file\n"
        assert isinstance(app.screen, PathDialog)  # back in the dialog, path kept
        await pilot.press("enter")
        await settle(pilot, app)
        assert isinstance(app.screen, ChoiceDialog)
        await pilot.press("right", "enter")  # Replace
        await settle(pilot, app)
        assert load_config(other) == app.requirements and app.config_path == str(other)
        # export proposes a file next to the config and asks before replacing it
        await pilot.press("e")
        await settle(pilot, app)
        assert isinstance(app.screen, PathDialog)
        proposed = app.screen.query_one("#path", Input).value
        assert Path(proposed) == tmp_path / "other-recommendation.md"
        await pilot.press("enter")
        await settle(pilot, app)
        assert (tmp_path / "other-recommendation.md").exists()
        (tmp_path / "other-recommendation.md").write_text("mine", encoding="utf-8")
        await pilot.press("e")
        await settle(pilot, app)
        await pilot.press("enter")
        await settle(pilot, app)
        assert isinstance(app.screen, ChoiceDialog)
        await pilot.press("escape")
        await settle(pilot, app)
        assert (tmp_path / "other-recommendation.md").read_text(encoding="utf-8") == "mine"
        # never onto the config itself
        app.screen.query_one("#path", Input).value = str(other)
        assert app.export_to(str(other), "x") is not None
        assert load_config(other) == app.requirements


def test_new_files_honour_the_umask(tmp_path: Path) -> None:
    from gpuwiz.core.yamlio import atomic_write_text

    old = os.umask(0o022)
    try:
        atomic_write_text(tmp_path / "a.yaml", "x: 1\n")
        os.umask(0o077)
        atomic_write_text(tmp_path / "b.yaml", "x: 1\n")
    finally:
        os.umask(old)
    assert (tmp_path / "a.yaml").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "b.yaml").stat().st_mode & 0o777 == 0o600


async def test_recent_files_on_the_start_screen(make_app: MakeApp, config_file: Path, state_dir: Path) -> None:
    app = make_app(config_file)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
    assert (state_dir / "recent.json").exists()  # in GPUWIZ_STATE_DIR / the given state dir
    app2 = make_app()
    async with app2.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app2)
        menu = app2.screen.query_one("#start-menu", OptionList)
        ids = [menu.get_option_at_index(i).id for i in range(menu.option_count)]
        assert "recent-0" in ids
        menu.highlighted = ids.index("recent-0")
        await pilot.press("enter")
        await settle(pilot, app2)
        assert app2.config_path == str(config_file.resolve()) and app2.step == "result"


async def test_a_config_on_the_command_line_wins_over_a_draft(make_app: MakeApp, config_file: Path,
                                                              state_dir: Path) -> None:
    drafted = Requirements.model_validate({"model": {"preset": "llama-3-70b"}, "data": {"tokens": "1B"}})
    drafts.write_draft(state_dir, drafted, None, "model")
    app = make_app(config_file)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        assert app.requirements == load_config(config_file)  # the named file, not the draft
        assert isinstance(app.screen, ChoiceDialog)  # the draft is offered
        await pilot.press("enter")  # default: keep the file
        await settle(pilot, app)
        assert app.requirements == load_config(config_file)
        assert drafts.read_draft(state_dir) is not None  # the draft is not thrown away


async def test_ctrl_s_asks_when_the_file_changed_on_disk(make_app: MakeApp, config_file: Path) -> None:
    app = make_app(config_file)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        config_file.write_text(config_file.read_text(encoding="utf-8") + "# edited elsewhere\n", encoding="utf-8")
        await pilot.press("m")
        await settle(pilot, app)
        await pilot.press("ctrl+s")
        await settle(pilot, app)
        assert isinstance(app.screen, ChoiceDialog)
        await pilot.press("escape")
        await settle(pilot, app)
        assert config_file.read_text(encoding="utf-8").endswith("# edited elsewhere\n")


async def test_a_config_that_would_not_reopen_is_never_written(make_app: MakeApp, config_file: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    import gpuwiz.core.config_io as cio

    before = config_file.read_bytes()
    app = make_app(config_file)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await pilot.press("m")
        await settle(pilot, app)
        monkeypatch.setattr(cio, "dumps_config", lambda req, header=None: "model: [unclosed\n")
        await pilot.press("ctrl+s")
        await settle(pilot, app)
        assert config_file.read_bytes() == before
        assert "would not open again" in notes(app) and app.dirty
