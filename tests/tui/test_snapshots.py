"""Snapshot of every screen at 80×24 and at a wide size (pytest --snapshot-update to accept changes)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gpuwiz.tui.app import GpuwizApp

SIZES = {"80x24": (80, 24), "wide": (132, 40)}

# screen -> keys from the opened config (which lands on the Result screen); None = start screen
SCREENS: dict[str, list[str] | None] = {
    "start": None,
    "model": ["ctrl+b", "ctrl+b", "ctrl+b", "ctrl+b"],
    "data": ["ctrl+b", "ctrl+b", "ctrl+b"],
    "schedule": ["ctrl+b", "ctrl+b"],
    "deploy": ["ctrl+b"],
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
    assert snap_compare(app, press=keys or [], terminal_size=SIZES[size])


def test_invalid_field(snap_compare: Any, make_app: Callable[..., GpuwizApp], config_file: Path) -> None:
    app = make_app(config_file)
    assert snap_compare(app, press=["ctrl+b", "ctrl+b", "ctrl+b", "tab", "ctrl+u", "minus", "5"],
                        terminal_size=(80, 24))


def test_too_small(snap_compare: Any, make_app: Callable[..., GpuwizApp]) -> None:
    assert snap_compare(make_app(), terminal_size=(60, 20))
