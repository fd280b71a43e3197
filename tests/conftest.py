import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


@pytest.fixture(autouse=True)
def _isolated_state(tmp_path_factory, monkeypatch):
    """Tests never touch the user's home: autosave/state goes to a temp dir."""
    monkeypatch.setenv("GPUWIZ_STATE_DIR", str(tmp_path_factory.mktemp("state")))


@pytest.fixture(scope="session")
def catalog():
    from gpuwiz.core.catalog import load_catalog

    return load_catalog()


def run_cli(*args, input=None, cwd=None, env=None):
    import subprocess

    full_env = {**os.environ, **(env or {})}
    full_env.pop("GPUWIZ_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "gpuwiz", *map(str, args)], capture_output=True, text=True,
                          input=input, cwd=cwd, env=full_env, timeout=120)
