"""Fixtures for the wizard's Pilot and snapshot tests: an isolated state dir, no cursor blink."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input

from gpuwiz.tui.app import GpuwizApp, create_app

EXAMPLES = Path(__file__).resolve().parents[2] / "src" / "gpuwiz" / "examples"

CONFIG = """\
version: 1
model:
  preset: llama-3-8b
  seq_len: 2048
training:
  method: lora
  precision: bf16
data:
  tokens: 200M
  epochs: 2
schedule:
  runs_per_month: 4
  deadline_days: 2
deployment:
  mode: either
"""


@pytest.fixture(autouse=True)
def _isolate(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GPUWIZ_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setattr(Input, "_toggle_cursor", lambda self: None)  # deterministic snapshots


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    return tmp_path / "state"


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    p = tmp_path / "team.yaml"
    p.write_text(CONFIG, encoding="utf-8")
    return p


@pytest.fixture
def make_app(state_dir: Path) -> Callable[..., GpuwizApp]:
    def make(config_path: Any = None, **kw: Any) -> GpuwizApp:
        kw.setdefault("state_dir", state_dir)
        kw.setdefault("handle_signals", False)
        return create_app(config_path, **kw)

    return make

