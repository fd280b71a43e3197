"""The core must import (and run) without Textual: headless use and fast CLI start depend on it."""

import subprocess
import sys

PROBE = r"""
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "textual" or name.startswith("textual."):
            raise ImportError("textual is blocked in this test")
        return None
sys.meta_path.insert(0, Block())
import gpuwiz.core.models, gpuwiz.core.catalog, gpuwiz.core.config_io, gpuwiz.core.report
import gpuwiz.core.estimate, gpuwiz.core.recommend, gpuwiz.cli
from gpuwiz.core.catalog import load_catalog
cat = load_catalog()
assert "textual" not in sys.modules
print("ok", len(cat.gpus))
"""


def test_core_imports_and_runs_without_textual():
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ok ")


def test_headless_cli_does_not_import_textual(tmp_path):
    probe = "import sys; from gpuwiz.cli import main; rc = main(['catalog', 'gpus']); " \
            "print('TEXTUAL' if 'textual' in sys.modules else 'CLEAN', rc)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("CLEAN 0")
