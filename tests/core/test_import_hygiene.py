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


def test_cli_choices_match_the_modules_they_stand_in_for():
    """cli spells the launch targets and log formats so that building the parser imports neither module."""
    from gpuwiz import cli
    from gpuwiz.calibrate.logs import DEFAULT_WARMUP_STEPS, FORMATS
    from gpuwiz.launch.targets import TARGETS

    assert tuple(cli.LAUNCH_TARGETS) == tuple(TARGETS)
    assert tuple(cli.LOG_FORMATS) == tuple(FORMATS)
    assert cli.WARMUP_STEPS == DEFAULT_WARMUP_STEPS


def test_estimate_imports_only_what_it_uses(tmp_path):
    """`gpuwiz estimate` loads neither the TUI, the launch generators, the log readers, the validation
    harness, nor the catalog's YAML parser on a cache hit (python -X importtime keeps this honest)."""
    import os
    from pathlib import Path

    config = Path(__file__).resolve().parents[2] / "examples" / "small-team-lora-7b.yaml"
    probe = ("import sys; from gpuwiz.cli import main; rc = main(['estimate', sys.argv[1], '--gpu', 'h100-sxm', "
             "'--format', 'json']); print(sorted(m for m in sys.modules if m.startswith('gpuwiz')), file=sys.stderr)")
    env = {**os.environ, "GPUWIZ_CACHE_DIR": str(tmp_path)}
    for _ in range(2):  # the first run fills the catalog cache, the second reads it
        out = subprocess.run([sys.executable, "-c", probe, str(config)], capture_output=True, text=True, timeout=120,
                             env=env)
        assert out.returncode == 0, out.stderr
    loaded = set(eval(out.stderr.strip().splitlines()[-1]))
    for banned in ("gpuwiz.tui", "gpuwiz.launch", "gpuwiz.calibrate.logs", "gpuwiz.validation", "gpuwiz.probe"):
        assert not any(m == banned or m.startswith(banned + ".") for m in loaded), banned


def test_no_pydantic_schema_for_result_types_at_import():
    """Importing the models builds the schemas of the validated inputs only; the engine's result types are
    plain classes (re-adding a BaseModel result makes every CLI start build its schema again)."""
    probe = ("import sys; import gpuwiz.core.models as m; from pydantic import BaseModel; "
             "bad = [n for n in ('Estimate', 'Recommendation', 'Build', 'CostAnalysis', 'Plan', 'Memory', 'Pitfall') "
             "if issubclass(getattr(m, n), BaseModel)]; print(bad)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
