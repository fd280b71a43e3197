"""Helpers shared by the wizard's Pilot tests (imported as ``wizhelp``: tests/tui is on sys.path)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpuwiz.tui.app import GpuwizApp


def written(path: Path, text: str) -> Path:
    """``path`` with ``text`` written to it (a config a test opens the wizard on)."""
    path.write_text(text, encoding="utf-8")
    return path


async def settle(pilot: Any, app: GpuwizApp) -> None:
    """Let the app process pending events and the engine worker deliver the current answer."""
    await pilot.pause()
    for _ in range(200):  # bounded: each round waits for a condition, not for time
        await app.workers.wait_for_complete()
        await pilot.pause()
        if app.answered:
            return
    raise AssertionError("the engine answer never arrived")


async def until(pilot: Any, cond: Callable[[], bool], what: str, limit_s: float = 60.0) -> None:
    """Wait for a condition (bounded; the engine's child process needs a moment to load the core)."""
    deadline = time.monotonic() + limit_s
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        await pilot.pause(0.01)


async def child_on_data_field(pilot: Any, app: GpuwizApp, field_id: str) -> Any:
    """Settle the wizard, wait for its engine child, and put the cursor at the end of a Data field; the field."""
    await settle(pilot, app)
    await until(pilot, lambda: app._engine_proc is not None and app._engine_proc.ready, "the child is ready")
    app.goto("data")
    await pilot.pause()
    field = app.screen.query_one(f"#{field_id}")
    field.focus()
    await pilot.press("end")
    return field


def assert_draws_as_textual(panel: Any, label: object = None) -> None:
    """The live panel's lines (its own drawing: cached parts, one-line strips) equal what Textual draws for its
    renderable at its width."""
    from textual.visual import Visual, visualize

    textual = Visual.to_strips(panel, visualize(panel, panel.render()), panel.content_size.width, None,
                               panel.visual_style)
    assert [panel.render_line(y) for y in range(len(textual))] == textual, label


async def focus_epochs(pilot: Any, app: GpuwizApp) -> None:
    """The Data step with its Epochs field focused (the field the key tests type into)."""
    app.goto("data")
    await pilot.pause()
    app.screen.query_one("#f-data-epochs").focus()
