"""The first frame needs neither pydantic nor the engine (the startup budget: <= 1.5x a minimal
Textual app): building the App and drawing the start screen imports no core model."""

from __future__ import annotations

import subprocess
import sys

CODE = """
import sys
from gpuwiz.tui.app import GpuwizApp, create_app
seen = {}
class Probe(GpuwizApp):
    def on_ready(self):
        seen["mods"] = sorted(m for m in ("pydantic", "gpuwiz.core.models", "gpuwiz.core.recommend", "yaml")
                              if m in sys.modules)
        self.exit()
app = create_app(state_dir=sys.argv[1], handle_signals=False, offer_restore=False)
app.__class__ = Probe
app.run(headless=True, size=(80, 24))
print("LOADED", seen["mods"])
"""


def test_first_frame_loads_no_core(tmp_path):
    out = subprocess.run([sys.executable, "-c", CODE, str(tmp_path / "state")], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert "LOADED []" in out.stdout, out.stdout


async def test_a_config_on_the_command_line_is_the_first_screen_drawn(make_app, config_file) -> None:  # type: ignore[no-untyped-def]
    """``gpuwiz FILE.yaml`` (the core loaded by the command line's catalog check): the first frame
    is the config's Result screen; the start screen is never built only to be replaced."""
    from wizhelp import settle

    from gpuwiz.core.config_io import load_config
    from gpuwiz.tui.screens.result import ResultScreen

    app = make_app(config_file)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        assert isinstance(app.screen, ResultScreen)
        assert app.requirements == load_config(config_file) and app.config_path == str(config_file)
        assert not app.get_screen("start").is_mounted
        assert [type(s).__name__ for s in app.screen_stack][1:] == ["ResultScreen"]
        await pilot.press("pageup")  # Back works from it as after the start screen
        await settle(pilot, app)
        assert app.step == "deploy"


async def test_a_config_that_cannot_be_opened_leaves_the_start_screen_and_says_why_once(  # type: ignore[no-untyped-def]
        make_app, tmp_path) -> None:
    from wizhelp import settle

    from gpuwiz.tui.screens.start import StartScreen

    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nmodel: [\n", encoding="utf-8")
    app = make_app(bad)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await pilot.pause()
        assert isinstance(app.screen, StartScreen)
        said = [n.message for n in app._notifications if "bad.yaml" in n.message]
        assert len(said) == 1
