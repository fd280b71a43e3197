"""gpuwiz keeps its own bytecode when Python will not (PYTHONDONTWRITEBYTECODE), never a stale one (gpuwiz/_pyc.py)."""

from __future__ import annotations

import compileall
import json
import os
import py_compile
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpuwiz import _codegen, _pyc

PROBE = ("import json, sys, gpuwiz.core.models, gpuwiz._pyc as p; "
         "print(json.dumps([p.stats, type(gpuwiz.core.models.__spec__.loader).__name__, "
         "any(isinstance(f, p.CachedFinder) for f in sys.meta_path), gpuwiz.__file__]))")


def _package(tmp_path: Path) -> Path:
    """A copy of the gpuwiz package with no bytecode beside its sources (a fresh checkout); its parent folder."""
    root = tmp_path / "checkout"
    shutil.copytree(Path(_pyc.__file__).parent, root / "gpuwiz", ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _run(root: Path, cache: Path) -> list:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "GPUWIZ_CACHE_DIR": str(cache), "PYTHONPATH": str(root)}
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got[3] == str(root / "gpuwiz" / "__init__.py")  # the copy ran, not the installed package
    return got


def test_dont_write_bytecode_start_reads_the_cache_the_first_start_wrote(tmp_path):
    root = _package(tmp_path)
    first = _run(root, tmp_path / "cache")
    assert first[1] == "CachedLoader" and first[2] is True
    assert first[0]["compiled"] >= 2 and first[0]["hits"] == 0
    entries = list((tmp_path / "cache" / "pyc").rglob("models.*.pyc"))
    assert len(entries) == 1
    second = _run(root, tmp_path / "cache")
    assert second[0] == {"hits": first[0]["compiled"], "compiled": 0}
    assert not list(root.rglob("__pycache__"))  # nothing is written beside the sources


def test_python_s_own_bytecode_is_read_while_it_matches_and_a_stale_module_comes_from_the_cache(tmp_path):
    """A __pycache__ beside the sources (a wheel, or a checkout run once without PYTHONDONTWRITEBYTECODE) is read
    as Python reads it; a module whose source changed since (a `git pull`) is compiled once and then comes from
    the cache folder. It was compiled at every start: Python reads a stale entry but may not rewrite it."""
    root = _package(tmp_path)
    compileall.compile_dir(str(root / "gpuwiz"), quiet=1)
    own = _run(root, tmp_path / "cache")
    assert own[0] == {"hits": 0, "compiled": 0} and own[1] == "CachedLoader"
    models = root / "gpuwiz" / "core" / "models.py"
    models.write_text(models.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    stale = _run(root, tmp_path / "cache")
    assert stale[0] == {"hits": 0, "compiled": 1}
    again = _run(root, tmp_path / "cache")
    assert again[0] == {"hits": 1, "compiled": 0}


def test_python_that_writes_bytecode_gets_no_finder(monkeypatch):
    """Where Python keeps bytecode itself (no PYTHONDONTWRITEBYTECODE), nothing changes."""
    monkeypatch.setattr(sys, "meta_path", [f for f in sys.meta_path if not isinstance(f, _pyc.CachedFinder)])
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    assert _pyc.install() is False
    assert not any(isinstance(f, _pyc.CachedFinder) for f in sys.meta_path)


@pytest.fixture(autouse=True)
def _no_bytecode_written(monkeypatch):
    """The loader tests below run as under PYTHONDONTWRITEBYTECODE (where the finder is installed), whatever
    the environment of the test run: Python writes no __pycache__ entry of its own for their modules."""
    monkeypatch.setattr(sys, "dont_write_bytecode", True)


def _module(tmp_path: Path, text: str) -> tuple[_pyc.CachedLoader, Path]:
    src = tmp_path / "src" / "mod.py"
    src.parent.mkdir(exist_ok=True)
    src.write_text(text, encoding="utf-8")
    return _pyc.CachedLoader("mod", str(src), str(tmp_path / "cache")), src


def _value(code) -> object:
    ns: dict[str, object] = {}
    exec(code, ns)
    return ns["VALUE"]


def test_an_edited_source_is_compiled_again_never_served_stale(tmp_path):
    loader, src = _module(tmp_path, "VALUE = 1\n")
    before = dict(_pyc.stats)
    assert _value(loader.get_code("mod")) == 1
    assert _value(loader.get_code("mod")) == 1
    assert _pyc.stats["hits"] == before["hits"] + 1
    st = src.stat()
    src.write_text("VALUE = 2\n", encoding="utf-8")  # same size: only the mtime tells
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert _value(loader.get_code("mod")) == 2
    src.write_text("VALUE = 333\n", encoding="utf-8")
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # same mtime, other size
    assert _value(loader.get_code("mod")) == 333


def test_a_matching_own_bytecode_file_is_read_and_a_stale_one_is_not(tmp_path):
    loader, src = _module(tmp_path, "VALUE = 'own'\n")
    py_compile.compile(str(src), doraise=True)  # Python's own entry, in __pycache__ beside the source
    before = dict(_pyc.stats)
    assert _value(loader.get_code("mod")) == "own"
    assert _pyc.stats == before  # read as Python reads it: neither compiled nor taken from the cache folder
    assert not Path(_pyc.entry_path(loader.folder, str(src))).exists()
    st = src.stat()
    src.write_text("VALUE = 'new'\n", encoding="utf-8")
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
    assert _value(loader.get_code("mod")) == "new"  # the stale own entry is not served...
    assert _pyc.stats["compiled"] == before["compiled"] + 1
    assert _value(loader.get_code("mod")) == "new"  # ...and the next start reads the cache folder's
    assert _pyc.stats["hits"] == before["hits"] + 1


def test_a_damaged_or_foreign_entry_is_compiled_again(tmp_path):
    loader, src = _module(tmp_path, "VALUE = 'ok'\n")
    loader.get_code("mod")
    entry = Path(_pyc.entry_path(loader.folder, str(src)))
    good = entry.read_bytes()
    entry.write_bytes(good[: len(good) - 5])  # truncated
    assert _value(loader.get_code("mod")) == "ok"
    entry.write_bytes(good.replace(b"gpuwiz-pyc 1", b"gpuwiz-pyc 0"))  # another format / interpreter
    assert _value(loader.get_code("mod")) == "ok"
    assert entry.read_bytes() == good  # rewritten


def test_an_unwritable_cache_folder_still_imports(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder", encoding="utf-8")
    src = tmp_path / "mod.py"
    src.write_text("VALUE = 5\n", encoding="utf-8")
    loader = _pyc.CachedLoader("mod", str(src), str(blocker / "cache"))
    assert _value(loader.get_code("mod")) == 5
    assert _pyc.write_entry(str(blocker / "cache" / "x.pyc"), b"x") is False


def test_cache_folder_is_the_catalog_cache_folder(monkeypatch, tmp_path):
    from gpuwiz.core import cache

    monkeypatch.setenv(cache.ENV_CACHE_DIR, str(tmp_path))
    assert _pyc.cache_folder() == str(cache.cache_dir())
    monkeypatch.delenv(cache.ENV_CACHE_DIR)
    assert _pyc.cache_folder() == str(cache.cache_dir())


@pytest.mark.parametrize("xdg", [None, "", "   ", "/tmp/gpuwiz-xdg", "/tmp/gpuwiz-xdg/", "relative/cache"])
def test_cache_folder_is_the_folder_platformdirs_names(monkeypatch, xdg):
    """On Linux the folder is worked out without importing platformdirs (a tenth of the start-up floor);
    it must be the folder platformdirs names, whatever XDG_CACHE_HOME says."""
    import platformdirs

    monkeypatch.delenv("GPUWIZ_CACHE_DIR", raising=False)
    if xdg is None:
        monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    else:
        monkeypatch.setenv("XDG_CACHE_HOME", xdg)
    assert _pyc.cache_folder() == platformdirs.user_cache_dir("gpuwiz", appauthor=False)


# ---- generated code (dataclasses, typing, namedtuple): _codegen.CodeCache ------------------------------------

GENERATED = "def __create_fn__(_type):\n def f(self, x: int) -> _type:\n  return x + 1\n return f"


def _make(cache: _codegen.CodeCache) -> object:
    ns: dict[str, object] = {}
    cache.exec(GENERATED, {"__name__": "probe"}, ns)
    return ns["__create_fn__"](str)  # type: ignore[operator]


def test_generated_code_is_compiled_once_then_read_back_from_the_table(tmp_path):
    path = str(tmp_path / "codegen" / "t.bin")
    first = _codegen.CodeCache(path)
    f = _make(first)
    assert f(None, 1) == 2  # type: ignore[operator]
    # compiled as the builtin compiles it for dataclasses (no flags inherited: this test module has
    # `from __future__ import annotations`, which would make the annotations strings)
    assert f.__annotations__ == {"x": int, "return": str}  # type: ignore[attr-defined]
    assert first.added == 1 and first.hits == 0
    assert first.save() is True and first.save() is False  # nothing new the second time
    second = _codegen.CodeCache(path)
    g = _make(second)
    assert second.hits == 1 and second.added == 0
    assert g(None, 41) == 42 and g.__annotations__ == f.__annotations__  # type: ignore[operator,attr-defined]
    assert second.eval("1 + 2", {}) == 3 and second.compile("x", "<string>", "eval").co_names == ("x",)
    assert second.compile("x", "other.py", "eval").co_filename == "other.py"  # not generated code: the builtin's


def test_a_damaged_or_foreign_table_is_ignored_and_rewritten(tmp_path):
    path = tmp_path / "t.bin"
    c = _codegen.CodeCache(str(path))
    _make(c)
    c.save()
    good = path.read_bytes()
    for bad in (good[:-7], good.replace(b"gpuwiz-codegen 1", b"gpuwiz-codegen 0"),
                c.header() + b"\x00garbage", c.header() + __import__("marshal").dumps({("exec", "x"): "not code"})):
        path.write_bytes(bad)
        again = _codegen.CodeCache(str(path))
        assert _make(again)(None, 2) == 3  # type: ignore[operator]
        assert again.hits == 0 and again.added == 1
        assert again.save() is True
        assert _codegen.CodeCache(str(path)).code(GENERATED, "exec") is not None


def test_an_unwritable_table_still_runs(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder", encoding="utf-8")
    c = _codegen.CodeCache(str(blocker / "codegen" / "t.bin"))
    assert _make(c)(None, 0) == 1  # type: ignore[operator]
    assert c.save() is False


PROBE_CODEGEN = """
import dataclasses, json, sys, typing
from collections import namedtuple
import gpuwiz._codegen as p
cache = p.install_codegen("probe") if sys.argv[1:] != ["plain"] else p.CodeCache("")
@dataclasses.dataclass(frozen=True, order=True)
class D:
    a: int
    b: "tuple[str, ...]" = dataclasses.field(default_factory=tuple)
N = namedtuple("N", "x y")
class T(typing.TypedDict):
    k: "int"
print(json.dumps([cache.hits, cache.added, repr(D(1)), D(1) < D(2), D(1) == D(1, ()), hash(D(3)) == hash(D(3)),
                  repr(N(1, 2)), str(typing.get_type_hints(T)), str(typing.get_type_hints(D.__init__))]))
"""


def test_a_process_reads_the_code_an_earlier_process_generated(tmp_path):
    env = {**os.environ, "GPUWIZ_CACHE_DIR": str(tmp_path)}

    def run(*args: str) -> list:
        out = subprocess.run([sys.executable, "-c", PROBE_CODEGEN, *args], capture_output=True, text=True,
                             timeout=120, env=env)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    first, second = run(), run()
    assert first[0] == 0 and first[1] >= 5  # __init__, __repr__, __eq__, order, __setattr__, ..., N.__new__
    assert second[0] == first[1] and second[1] == 0
    plain = run("plain")  # the builtins compile: the classes must behave exactly as they do there
    assert first[2:] == second[2:] == plain[2:]
    assert plain[2:6] == ["D(a=1, b=())", True, True, True] and "tuple[str, ...]" in plain[-1]
    assert list((tmp_path / "codegen").glob("probe.*.bin"))


def test_headless_commands_keep_their_generated_code_in_the_cache_folder(tmp_path):
    env = {**os.environ, "GPUWIZ_CACHE_DIR": str(tmp_path)}
    config = Path(__file__).parents[1] / "examples" / "small-team-lora-7b.yaml"
    cmd = [sys.executable, "-m", "gpuwiz", "estimate", str(config), "--gpu", "a100-80gb-sxm", "--format", "json"]
    first = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    table = next((tmp_path / "codegen").glob("cli.*.bin"))
    written = table.stat().st_mtime_ns
    second = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env)
    assert first.returncode == second.returncode == 0 and first.stdout == second.stdout
    assert table.stat().st_mtime_ns == written  # everything came from the table: nothing to rewrite
    subprocess.run([sys.executable, "-m", "gpuwiz", "--help"], capture_output=True, timeout=120, env=env, check=True)
    assert [p.name.split(".")[0] for p in (tmp_path / "codegen").iterdir()] == ["cli"]  # --help installs none
