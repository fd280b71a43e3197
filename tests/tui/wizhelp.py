"""Helpers shared by the wizard's Pilot tests (imported as ``wizhelp``: tests/tui is on sys.path)."""

from __future__ import annotations

from typing import Any

from gpuwiz.tui.app import GpuwizApp


async def settle(pilot: Any, app: GpuwizApp) -> None:
    """Let the app process pending events and the engine worker deliver the current answer."""
    await pilot.pause()
    for _ in range(200):  # bounded: each round waits for a condition, not for time
        await app.workers.wait_for_complete()
        await pilot.pause()
        if app.answered:
            return
    raise AssertionError("the engine answer never arrived")
