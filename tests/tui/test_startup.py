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
