"""Text from outside (config values, names, paths, key names, error messages, drafts) is shown as
plain text: markup payloads and escape sequences never crash the wizard, never run an action, and are
shown literally. Plus the crashes found by the monkey (ctrl+p / ctrl+q bursts)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from textual import events
from textual.widgets import Select, Static
from wizhelp import settle

from gpuwiz.core.models import Requirements
from gpuwiz.tui import drafts
from gpuwiz.tui.app import GpuwizApp
from gpuwiz.tui.dialogs.confirm import ChoiceDialog
from gpuwiz.tui.plain import clean, escaped, plain
from gpuwiz.tui.widgets.live_panel import LivePanel

MakeApp = Callable[..., GpuwizApp]

PAYLOADS = ["[bold]x", "[/]", "[@click=app.screenshot('pwned')]x[/]", "[link=file:///etc/passwd]y[/link]",
            "a\x1b[2Jb\x07c", "\x9b31m"]


def notes(app: GpuwizApp) -> str:
    return "\n".join(f"{n.title}: {n.message}" for n in app._notifications)


@pytest.fixture
def no_actions(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records any screenshot/bell action a payload might smuggle in."""
    ran: list[str] = []
    monkeypatch.setattr(GpuwizApp, "action_screenshot", lambda self, *a, **k: ran.append("screenshot"))
    monkeypatch.setattr(GpuwizApp, "action_bell", lambda self, *a, **k: ran.append("bell"))
    return ran


def test_the_helper_keeps_text_literal() -> None:
    for p in PAYLOADS:
        t = plain(p)
        assert "\x1b" not in t.plain and "\x07" not in t.plain and "\x9b" not in t.plain
        assert (t.plain == clean(p) and "[" in t.plain) or "\\x" in t.plain
    assert clean("a\x1b[2Jb") == "a\\x1b[2Jb"
    assert escaped("[/]") == "\\[/]"


@pytest.mark.parametrize("payload", PAYLOADS)
async def test_a_key_name_in_a_config_is_shown_literally(make_app: MakeApp, tmp_path: Path, payload: str,
                                                         no_actions: list[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"version: 1\nmodel:\n  {json.dumps(payload)}: 1\n", encoding="utf-8")
    app = make_app(bad)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        assert app.is_running
        text = notes(app)
        assert "Cannot open config" in text
        assert clean(payload)[:3] in text or repr(payload)[1:4] in text
        assert "\x1b" not in text
    assert no_actions == []


@pytest.mark.parametrize("payload", PAYLOADS)
async def test_a_model_name_and_a_path_are_shown_literally(make_app: MakeApp, tmp_path: Path, payload: str,
                                                           no_actions: list[str]) -> None:
    folder = tmp_path / "d"
    folder.mkdir()
    name = "cfg" + payload.replace("/", "_").replace("\x1b", "E").replace("\x07", "G").replace("\x9b", "C")
    cfg = folder / f"{name}.yaml"
    # a valid config whose preset is the payload: the engine reports an unknown preset
    cfg.write_text("version: 1\nmodel:\n  preset: " + json.dumps(payload) + "\n", encoding="utf-8")
    app = make_app(cfg)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        assert app.is_running
        if app.config_path is None:  # control characters: the loader refuses the file, in one line
            assert "Cannot open config" in notes(app) and "\x1b" not in notes(app) and "\x9b" not in notes(app)
            return
        assert app.requirements.model.preset == payload
        app.goto("model")
        await settle(pilot, app)
        sel = app.screen.query_one("#f-model-preset", Select)
        labels = [str(p) for p, _ in sel._options]
        assert clean(payload) in labels  # the unknown preset is offered under its own, literal name
        panel = app.screen.query_one(LivePanel).text
        assert "\x1b" not in panel
        await pilot.press("ctrl+s")  # a save notification carries the path
        await settle(pilot, app)
        assert app.is_running
    assert no_actions == []


@pytest.mark.parametrize("payload", PAYLOADS)
async def test_a_hostile_draft_is_offered_literally_and_never_crashes(make_app: MakeApp, state_dir: Path,
                                                                      payload: str, no_actions: list[str]) -> None:
    drafts.write_draft(state_dir, Requirements(), payload, "model")
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        if not payload.isprintable():
            # a source path with control characters is no path a user typed: the draft is set aside
            assert not isinstance(app.screen, ChoiceDialog) and app.is_running
            assert list(state_dir.glob("*.bad-*"))
            assert no_actions == []
            return
        assert isinstance(app.screen, ChoiceDialog)
        msg = str(app.screen.query_one(".dialog-message", Static).render())
        assert clean(os.path.abspath(payload)) in msg  # stored absolute (normalised), shown literally
        await pilot.press("enter")  # restore it
        await settle(pilot, app)
        # drafts keep their config path absolute (a restore elsewhere never saves into the new cwd)
        assert app.is_running and app.config_path == os.path.abspath(payload)
        for _ in range(2):
            app.goto("result")
            await settle(pilot, app)
            app.goto("model")
            await settle(pilot, app)
    assert no_actions == []


async def test_ctrl_p_ctrl_q_ctrl_p_with_unsaved_changes(make_app: MakeApp, config_file: Path) -> None:
    app = make_app(config_file)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await pilot.press("m")
        await settle(pilot, app)
        assert app.dirty
        await pilot.press("ctrl+p", "ctrl+q", "ctrl+p")  # used to raise DuplicateIds
        await settle(pilot, app)
        assert app.is_running
        await pilot.press("ctrl+p", "ctrl+q", "ctrl+p", "escape", "escape", "escape", "escape")
        await settle(pilot, app)
        assert app.is_running and app.screen_stack[0] is not None


async def test_ctrl_p_then_ctrl_q_quits_cleanly(make_app: MakeApp) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await pilot.press("ctrl+p", "ctrl+q")
        await pilot.pause()
    assert app.return_code in (0, None)


async def test_key_bursts_over_dialogs_and_screens(make_app: MakeApp, config_file: Path) -> None:
    """Bursts that once raised IndexError / ScreenStackError: every key arrives before the app settles."""
    app = make_app(config_file)
    burst = ["escape", "enter", "ctrl+o", "escape", "escape", "f1", "f1", "escape", "c", "escape", "escape",
             "alt+left", "alt+left", "alt+left", "alt+left", "alt+left", "enter", "enter", "alt+right",
             "alt+right", "alt+right", "alt+right", "alt+right", "alt+right", "e", "enter", "enter", "escape",
             "ctrl+p", "enter", "enter", "escape", "pageup", "pageup", "pagedown", "pagedown", "f2", "escape",
             "ctrl+p", "escape", "escape", "f1", "escape"]
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await pilot.press("m")  # unsaved changes: ctrl+q asks instead of leaving
        await settle(pilot, app)
        await pilot.press(*burst)  # one key per event-loop turn
        await settle(pilot, app)
        assert app.is_running
        for key in burst:  # a real burst: every key queued before the app handles the first
            app.post_message(events.Key(key, key if len(key) == 1 else None))
        await settle(pilot, app)
        assert app.is_running and app._exception is None
