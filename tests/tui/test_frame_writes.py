"""A frame reaches Textual's writer thread as one write (gpuwiz.tui.driver.SafeInputDriver): the
same bytes in the same order as Textual's three writes (synchronized output's start, the frame, its
end), and writes outside a frame go through as before."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.app import App
from wizhelp import settle

from gpuwiz.tui.app import GpuwizApp
from gpuwiz.tui.driver import SafeInputDriver

MakeApp = Callable[..., GpuwizApp]


class Writer:
    def __init__(self) -> None:
        self.items: list[str] = []

    def write(self, text: str) -> None:
        self.items.append(text)


def driver() -> tuple[SafeInputDriver, Writer]:
    drv = SafeInputDriver.__new__(SafeInputDriver)  # no terminal: only its writes
    writer = Writer()
    drv._writer_thread = writer  # type: ignore[assignment]
    return drv, writer


def test_a_frames_writes_go_to_the_writer_thread_as_one() -> None:
    drv, writer = driver()
    drv.write("\x1b[?1049h")  # outside a frame: at once, as Textual's
    drv.begin_frame()
    for part in ("\x1b[?2026h", "\x1b[3;5Hab", "\x1b[?2026l"):
        drv.write(part)
    assert writer.items == ["\x1b[?1049h"]  # nothing of the frame before it is complete
    drv.end_frame()
    assert writer.items == ["\x1b[?1049h", "\x1b[?2026h\x1b[3;5Hab\x1b[?2026l"]
    drv.begin_frame()
    drv.end_frame()  # a frame that wrote nothing writes nothing
    drv.write("x")
    assert writer.items[2:] == ["x"]


async def test_the_wizard_brackets_each_frame_it_displays(make_app: MakeApp, config_file: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """GpuwizApp._display: Textual's display runs between the driver's begin_frame and end_frame,
    also when it fails (the frame's writes are never left held)."""
    events: list[str] = []
    display = App._display

    def textual_display(self: Any, screen: Any, renderable: Any) -> None:
        events.append("display")
        display(self, screen, renderable)

    monkeypatch.setattr(App, "_display", textual_display)
    app = make_app(config_file)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        drv = app._driver
        assert drv is not None
        monkeypatch.setattr(drv, "begin_frame", lambda: events.append("begin"), raising=False)
        monkeypatch.setattr(drv, "end_frame", lambda: events.append("end"), raising=False)
        events.clear()
        app.screen.refresh()
        await pilot.pause()
        assert events and events[:3] == ["begin", "display", "end"], events
        events.clear()
        monkeypatch.setattr(App, "_display", lambda *a: (events.append("display"), 1 / 0))
        with pytest.raises(ZeroDivisionError):
            app._display(app.screen, None)
        assert events == ["begin", "display", "end"]
