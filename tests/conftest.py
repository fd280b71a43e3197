import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

# Tests never read or write the user's cache: one fresh catalog cache per test process (and its subprocesses).
_CACHE_DIR = tempfile.mkdtemp(prefix="gpuwiz-test-cache-")
os.environ["GPUWIZ_CACHE_DIR"] = _CACHE_DIR
atexit.register(shutil.rmtree, _CACHE_DIR, True)

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


@pytest.fixture
def zh():
    """The Chinese interface for one test (tests/i18n); English again afterwards, whatever happens."""
    from gpuwiz import i18n

    i18n.set_language("zh-CN")
    try:
        yield
    finally:
        i18n.set_language("en")
