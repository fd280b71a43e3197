"""Snapshot of every screen at 80×24 and at a wide size (pytest --snapshot-update to accept changes)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from wizhelp import settle

from gpuwiz.tui.app import GpuwizApp


def keys_then_settle(app: GpuwizApp, keys: list[str]) -> Callable[[Any], Any]:
    """Press the keys, then wait until the answer on screen is the one for what is on screen."""
    async def run_before(pilot: Any) -> None:
        await settle(pilot, app)
        for key in keys:
            await pilot.press(key)
        await settle(pilot, app)

    return run_before

SIZES = {"80x24": (80, 24), "wide": (132, 40)}

# screen -> keys from the opened config (which lands on the Result screen); None = start screen
SCREENS: dict[str, list[str] | None] = {
    "start": None,
    "model": ["alt+left", "alt+left", "alt+left", "alt+left"],
    "data": ["alt+left", "alt+left", "alt+left"],
    "schedule": ["alt+left", "alt+left"],
    "deploy": ["alt+left"],
    "result": [],
    "result-rent-vs-buy": ["4"],
    "whatif": ["m", "plus"],
    "compare": ["m", "c"],
    "help": ["f1"],
}


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("screen", list(SCREENS))
def test_screen(snap_compare: Any, make_app: Callable[..., GpuwizApp], config_file: Path, screen: str,
                size: str) -> None:
    keys = SCREENS[screen]
    app = make_app(None if keys is None else config_file)
    assert snap_compare(app, run_before=keys_then_settle(app, keys or []), terminal_size=SIZES[size])


def test_invalid_field(snap_compare: Any, make_app: Callable[..., GpuwizApp], config_file: Path) -> None:
    app = make_app(config_file)
    keys = ["alt+left", "alt+left", "alt+left", "tab", "ctrl+u", "minus", "5"]
    assert snap_compare(app, run_before=keys_then_settle(app, keys), terminal_size=(80, 24))


def test_too_small(snap_compare: Any, make_app: Callable[..., GpuwizApp]) -> None:
    app = make_app()
    assert snap_compare(app, run_before=keys_then_settle(app, []), terminal_size=(60, 20))
