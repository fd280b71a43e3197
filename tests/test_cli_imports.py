"""Start-up stays near the floor only if a command imports what it uses: each headless command runs in its
own process under `python -X importtime`, and the modules it loaded are checked (names, never timings)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CONFIG = str(Path(__file__).resolve().parents[1] / "examples" / "small-team-lora-7b.yaml")
UI = {"textual", "rich", "gpuwiz.tui"}
# the engine's recommend-only modules and the calibration runner
RECOMMEND_ONLY = {"gpuwiz.core.recommend", "gpuwiz.core.cost", "gpuwiz.core.pitfalls", "gpuwiz.core.system"}
VALIDATE_ONLY = {"gpuwiz.core.validation"}


def imported(*args: str, env_update: dict[str, str | None] | None = None) -> set[str]:
    env = {**os.environ}
    env.pop("GPUWIZ_DEBUG", None)
    for key, value in (env_update or {}).items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    out = subprocess.run([sys.executable, "-X", "importtime", "-m", "gpuwiz", *args], capture_output=True,
                         text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    mods = {line.rsplit("|", 1)[1].strip() for line in out.stderr.splitlines()
            if line.startswith("import time:") and line.count("|") == 2}
    mods.discard("package")  # the header line
    assert "gpuwiz.cli" in mods  # the probe sees the command's own imports
    return mods


def _loaded(mods: set[str], prefixes: set[str]) -> list[str]:
    return sorted(m for m in mods if any(m == p or m.startswith(p + ".") for p in prefixes))


def test_help_imports_no_engine_no_pydantic_no_yaml() -> None:
    mods = imported("--help")
    assert _loaded(mods, {"pydantic", "pydantic_core", "yaml", "gpuwiz.core", *UI}) == []


@pytest.mark.parametrize("command", ["estimate", "recommend"])
def test_headless_commands_import_only_what_they_use(command: str) -> None:
    args = [command, CONFIG, "--format", "json"]
    if command == "estimate":
        args += ["--gpu", "a100-80gb-sxm", "--count", "8"]
    mods = imported(*args)
    assert {"gpuwiz.core.catalog", "gpuwiz.core.config_io"} <= mods
    unused = UI | VALIDATE_ONLY | (RECOMMEND_ONLY if command == "estimate" else set())
    assert _loaded(mods, unused) == []


ESTIMATE_AT = ("--gpu", "a100-80gb-sxm", "--count", "8")


@pytest.mark.parametrize("command", ["estimate", "recommend"])
def test_headless_commands_import_neither_platformdirs_nor_zipfile(command: str, tmp_path: Path) -> None:
    """Where the cache lives is worked out without platformdirs on Linux (gpuwiz/_pyc.py), and the bundled
    data files are read as files, not through importlib.resources' readers (which import zipfile)."""
    env = {"GPUWIZ_CACHE_DIR": None, "XDG_CACHE_HOME": str(tmp_path)}  # the user's default cache folder
    mods = imported(command, CONFIG, "--format", "json", *(ESTIMATE_AT if command == "estimate" else ()),
                    env_update=env)
    unused = {"zipfile", "importlib.resources.readers", *({"platformdirs"} if sys.platform.startswith("linux") else ())}
    assert _loaded(mods, unused) == []
    assert list(tmp_path.glob("gpuwiz/catalog-*.cache"))  # the cache went where platformdirs says


@pytest.mark.parametrize("command", ["estimate", "recommend"])
def test_headless_commands_do_not_import_pydantics_plugin_loader(command: str) -> None:
    """With plugins off (gpuwiz's default), importing the loader would only import importlib.metadata."""
    mods = imported(command, CONFIG, "--format", "json", *(ESTIMATE_AT if command == "estimate" else ()))
    assert _loaded(mods, {"importlib.metadata", "pydantic.plugin._loader"}) == []


STANDIN = """
import sys
from gpuwiz import cli
cli.skip_plugin_loader()
from pydantic import BaseModel
class M(BaseModel):
    x: int
assert M(x="3").x == 3
assert "importlib.metadata" not in sys.modules
from pydantic.plugin._loader import PYDANTIC_ENTRY_POINT_GROUP  # anything else: the real loader
assert "importlib.metadata" in sys.modules
print(PYDANTIC_ENTRY_POINT_GROUP)
"""


def test_the_plugin_loader_stand_in_validates_and_hands_over_to_the_real_loader() -> None:
    env = {**os.environ, "PYDANTIC_DISABLE_PLUGINS": "__all__"}
    out = subprocess.run([sys.executable, "-c", STANDIN], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "pydantic"


def test_an_explicit_plugin_setting_loads_the_real_loader() -> None:
    env = {**os.environ, "PYDANTIC_DISABLE_PLUGINS": "some-plugin"}
    out = subprocess.run([sys.executable, "-X", "importtime", "-m", "gpuwiz", "estimate", CONFIG, *ESTIMATE_AT],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "pydantic.plugin._loader" in out.stderr


def test_the_engine_runs_with_the_cycle_collector_on_and_main_leaves_it_as_it_found_it(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Start-up runs without the cycle collector (cli.STARTUP_WITHOUT_GC); the engine and the caller do not."""
    import gc

    from gpuwiz import cli
    from gpuwiz.core import estimate as est_mod

    seen: list[bool] = []
    real = est_mod.estimate

    def spy(*args: object, **kwargs: object) -> object:
        seen.append(gc.isenabled())
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(est_mod, "estimate", spy)
    assert gc.isenabled()
    assert cli.main(["estimate", CONFIG, *ESTIMATE_AT, "--format", "json"]) == 0
    assert seen == [True]
    assert gc.isenabled() and gc.get_freeze_count() == 0
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nmodel: [\n", encoding="utf-8")
    assert cli.main(["estimate", str(bad)]) == 2  # an error before the inputs were loaded
    assert gc.isenabled() and gc.get_freeze_count() == 0
    capsys.readouterr()


FAST_EXIT_PROBE = """
import atexit, io, sys
atexit.register(lambda: sys.stderr.write("exit handler ran\\n"))
from gpuwiz.cli import main
sys.argv = ["gpuwiz", *sys.argv[1:]]
rc = main()
sys.stderr.write("main returned\\n")  # only when the process did not end in main (in-process callers)
raise SystemExit(rc)
"""


@pytest.mark.parametrize("args", [("catalog", "gpus"), ("estimate", CONFIG, *ESTIMATE_AT, "--format", "json"),
                                  ("recommend", "/nonexistent/config.yaml")])
def test_a_headless_process_ends_after_its_output_and_exit_handlers(args: tuple[str, ...], tmp_path: Path) -> None:
    """`gpuwiz estimate|recommend|catalog` skip the interpreter's teardown (cli.fast_exit): every byte of the
    output still arrives, the exit code is the command's, and exit handlers still run."""
    from gpuwiz.cli import main

    out = subprocess.run([sys.executable, "-c", FAST_EXIT_PROBE, *args], capture_output=True, text=True,
                         timeout=120)
    assert "exit handler ran" in out.stderr and "main returned" not in out.stderr
    want_rc = 2 if args[0] == "recommend" else 0
    assert out.returncode == want_rc, out.stderr[-2000:]
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
        assert main(list(args)) == want_rc  # in-process: main returns
    assert out.stdout == buf.getvalue() and (want_rc or len(out.stdout) > 1000)
