"""What a typed key puts on the terminal: the frames the wizard writes, replayed on a mirror of the
screen, show the typed character and the live panel's new answer in one frame, and after every
key the mirror is what a fresh render of the whole screen shows (nothing the answer changed is
left unpainted). Also: a field's Changed message still applies text that no key typed (a paste)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rich.cells import cell_len
from rich.segment import ControlType
from textual import events
from textual._compositor import ChopsUpdate
from textual.geometry import Region
from wizhelp import child_on_data_field, focus_epochs, settle, until

from gpuwiz.tui import frames
from gpuwiz.tui.app import GpuwizApp
from gpuwiz.tui.widgets.live_panel import LivePanel

MakeApp = Callable[..., GpuwizApp]
EXAMPLES = Path(__file__).resolve().parents[2] / "src" / "gpuwiz" / "examples"


class Mirror:
    """The terminal's cells as the wizard's partial frames leave them (a full frame: the screen afresh)."""

    def __init__(self, app: GpuwizApp) -> None:
        self.app = app
        self.rows = fresh_screen(app)
        self.frames: list[set[tuple[int, int]]] = []  # the cells each partial frame wrote
        display = app._display

        def spy(screen: Any, renderable: Any) -> None:
            if isinstance(renderable, ChopsUpdate):
                self.apply(renderable)
            elif renderable is not None:
                self.rows = fresh_screen(app)
            display(screen, renderable)

        app._display = spy  # type: ignore[method-assign]

    def apply(self, update: ChopsUpdate) -> None:
        console = self.app.console
        x = y = 0
        written: set[tuple[int, int]] = set()
        for seg in update.__rich_console__(console, console.options):
            if seg.control:
                for code in seg.control:
                    if code[0] == ControlType.CURSOR_MOVE_TO:
                        x, y = int(code[1]), int(code[2])
                continue
            for ch in seg.text:
                if ch == "\n":
                    continue
                row = self.rows[y]
                self.rows[y] = row[:x] + ch + row[x + 1:]
                written.add((x, y))
                x += cell_len(ch)
        self.frames.append(written)


def fresh_screen(app: GpuwizApp) -> list[str]:
    """The whole screen's text as Textual renders it with every widget's line cache emptied."""
    for widget in app.screen.walk_children(with_self=True):
        widget._styles_cache.clear()
    for panel in app.screen.query(LivePanel):
        panel._lines = None
    return [strip.text for strip in app.screen._compositor.render_strips()]


def touches(cells: set[tuple[int, int]], region: Region) -> bool:
    return any(region.contains(x, y) for x, y in cells)


@pytest.mark.parametrize("size", [(100, 30), (80, 24)])
async def test_a_key_and_its_answer_reach_the_terminal_in_one_frame_and_nothing_is_left_stale(
        make_app: MakeApp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int]) -> None:
    monkeypatch.setattr(frames, "HOLD_S", 60.0)  # the held frame always waits for the answer (no timing here)
    monkeypatch.setattr(frames, "HOLD_MAX_S", 60.0)
    config = tmp_path / "small-team-lora-7b.yaml"
    config.write_bytes((EXAMPLES / config.name).read_bytes())
    app = make_app(config, engine_process=True)
    async with app.run_test(size=size) as pilot:
        field = await child_on_data_field(pilot, app, "f-data-epochs")
        await settle(pilot, app)
        await pilot.pause()
        panel = app.screen.query_one(LivePanel)
        timer = app.screen._frame_timer
        assert isinstance(timer, frames.FrameTimer)
        mirror = Mirror(app)
        texts = {panel.text}
        for key in ("2", "backspace", "3", "backspace", "3", "4"):
            before = len(mirror.frames)
            await pilot.press(key)
            await until(pilot, lambda n=before: app.answered and not timer.holding and len(mirror.frames) > n,
                        f"the frame of {key!r}")
            await pilot.pause()
            first = mirror.frames[before]
            assert touches(first, field.region), key  # the typed character ...
            assert touches(first, panel.region), key  # ... and its answer, in the same frame
            assert mirror.rows == fresh_screen(app), key
            texts.add(panel.text)
        assert len(texts) >= 3  # the keys did change the answer


async def test_a_burst_of_keys_leaves_the_last_answer_on_the_terminal(
        make_app: MakeApp, tmp_path: Path) -> None:
    config = tmp_path / "small-team-lora-7b.yaml"
    config.write_bytes((EXAMPLES / config.name).read_bytes())
    app = make_app(config, engine_process=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await until(pilot, lambda: app._engine_proc is not None and app._engine_proc.ready, "the child is ready")
        await focus_epochs(pilot, app)
        await pilot.press("ctrl+u")
        await settle(pilot, app)
        mirror = Mirror(app)
        for key in ("2", "backspace", "3", "4", "backspace", "5", "backspace", "backspace", "7"):
            app.post_message(events.Key(key, None if key == "backspace" else key))  # no wait between keys
        await until(pilot, lambda: app.requirements.data.epochs == 7 and app.answered, "the answer for 7 epochs")
        await settle(pilot, app)
        await pilot.pause()
        await until(pilot, lambda: mirror.rows == fresh_screen(app), "the last answer on the terminal")
        assert app.answer_for == app.requirements


async def test_pasted_text_is_applied_like_typed_text(make_app: MakeApp, config_file: Path) -> None:
    """A paste does not go through the key path: the field's Changed message applies it."""
    app = make_app(config_file)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        app.goto("data")
        await pilot.pause()
        field = app.screen.query_one("#f-data-epochs")
        field.focus()
        await pilot.press("ctrl+u")
        await settle(pilot, app)
        field.post_message(events.Paste("5"))
        await until(pilot, lambda: app.requirements.data.epochs == 5, "the pasted epochs applied")
        await settle(pilot, app)
        assert app.dirty and app.answer_for == app.requirements


async def test_an_answer_that_restyles_the_panel_is_painted_with_its_key(
        make_app: MakeApp, config_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An engine refusal turns the panel's border to the warning colour (new styles, not only new
    lines): that answer takes Textual's own way to the frame, and still releases the held frame
    (a hold of a minute here: a frame that waited for it would never come in time)."""
    monkeypatch.setattr(frames, "HOLD_S", 60.0)
    monkeypatch.setattr(frames, "HOLD_MAX_S", 60.0)
    app = make_app(config_file, engine_process=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await child_on_data_field(pilot, app, "f-data-tokens")
        await settle(pilot, app)
        panel = app.screen.query_one(LivePanel)
        timer = app.screen._frame_timer
        assert isinstance(timer, frames.FrameTimer)
        mirror = Mirror(app)
        for keys, stale in ((("ctrl+u",), True), (("1",), False)):  # no data size: refused; then 1 token
            before = len(mirror.frames)
            await pilot.press(*keys)
            await until(pilot, lambda n=before: app.answered and not timer.holding and len(mirror.frames) > n,
                        f"the frame of {keys}", limit_s=20.0)
            await pilot.pause()
            assert panel.has_class("-stale") is stale
            assert touches(mirror.frames[before], panel.region)
            assert mirror.rows == fresh_screen(app)


async def test_a_held_frame_is_released_behind_a_widget_that_needs_more_than_a_repaint(
        make_app: MakeApp, config_file: Path) -> None:
    """release_frame hands a widget that only needs a repaint to the frame itself; one that needs
    more (a layout here) takes Textual's way, and the release follows it as a message."""
    app = make_app(config_file)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        app.goto("data")
        await settle(pilot, app)
        scr = app.screen
        panel = scr.query_one(LivePanel)
        scr.hold_frame(60.0)
        timer = scr._frame_timer
        assert isinstance(timer, frames.FrameTimer) and timer.holding
        panel.refresh(layout=True)
        scr.release_frame(panel)
        assert timer.holding  # not yet: the release waits behind the widget's own messages
        await until(pilot, lambda: not timer.holding, "the held frame released")
        scr.hold_frame(60.0)
        panel.refresh()
        scr.release_frame(panel)  # a repaint only: handed over and released at once
        assert not timer.holding and panel in scr._dirty_widgets
