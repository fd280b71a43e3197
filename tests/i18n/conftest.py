"""Fixtures of the i18n tests that drive the wizard."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input

from gpuwiz.tui.app import GpuwizApp, create_app


@pytest.fixture
def make_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., GpuwizApp]:
    """The wizard as the command line builds it, its draft in a temporary folder, no blinking cursor."""
    monkeypatch.setattr(Input, "_toggle_cursor", lambda self: None)

    def make(config_path: Any = None, **kw: Any) -> GpuwizApp:
        kw.setdefault("state_dir", tmp_path / "state")
        kw.setdefault("handle_signals", False)
        return create_app(config_path, **kw)

    return make
