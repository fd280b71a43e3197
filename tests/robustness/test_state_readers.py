"""The files gpuwiz reads on its own (recent-files list, catalog cache, the config's fingerprint for
"changed on disk since opened") go through the one safe reader too, and the generated-code table
(gpuwiz/_codegen.py) and the bytecode cache (gpuwiz/_pyc.py) read the same way: a FIFO, a device node or a
folder planted where one of them lives is treated as absent, at once, never waited on."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from gpuwiz.core import cache
from gpuwiz.tui import recent
from gpuwiz.tui.app import _fingerprint


def _plant(path: Path, kind: str) -> None:
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    else:
        try:  # the numbers of /dev/zero, in tmp: reading it would never end
            os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 5))
        except OSError:
            pytest.skip("cannot make device nodes here (not root)")


KINDS = ["fifo", "folder", "device"]


@pytest.mark.parametrize("kind", KINDS)
def test_recent_list(tmp_path, kind):
    _plant(tmp_path / recent.RECENT_NAME, kind)
    assert recent.recent_files(tmp_path) == []


@pytest.mark.parametrize("kind", KINDS)
def test_cache_entry(tmp_path, monkeypatch, kind):
    monkeypatch.setenv(cache.ENV_CACHE_DIR, str(tmp_path))
    path = cache._path("catalog", "k" * 64)
    assert path is not None
    _plant(path, kind)
    assert cache.read_bytes("catalog", "k" * 64) is None


@pytest.mark.parametrize("kind", KINDS)
def test_fingerprint(tmp_path, kind):
    _plant(tmp_path / "team.yaml", kind)
    assert _fingerprint(str(tmp_path / "team.yaml")) is None


def test_recent_list_nested_too_deeply(tmp_path):
    (tmp_path / recent.RECENT_NAME).write_text("[" * 30_000 + "]" * 30_000)
    assert recent.recent_files(tmp_path) == []


def test_fingerprint_of_a_regular_file(tmp_path):
    f = tmp_path / "team.yaml"
    f.write_text("version: 1\n")
    a = _fingerprint(str(f))
    f.write_text("version: 1\n# edited\n")
    assert a is not None and _fingerprint(str(f)) not in (None, a)


@pytest.mark.parametrize("kind", KINDS)
def test_generated_code_table(tmp_path, kind):
    from gpuwiz import _codegen

    _plant(tmp_path / "t.bin", kind)
    table = _codegen.CodeCache(str(tmp_path / "t.bin"))
    table.load()
    assert table.codes == {} and table.loaded


@pytest.mark.parametrize("kind", KINDS)
def test_bytecode_entry(tmp_path, monkeypatch, kind):
    """A module whose cache-folder entry is a FIFO (a start of gpuwiz waited on it for ever), a device or a
    folder is compiled from its source."""
    from gpuwiz import _pyc

    monkeypatch.setattr("sys.dont_write_bytecode", True)
    src = tmp_path / "mod.py"
    src.write_text("VALUE = 7\n", encoding="utf-8")
    loader = _pyc.CachedLoader("mod", str(src), str(tmp_path / "cache"))
    entry = Path(_pyc.entry_path(loader.folder, str(src)))
    entry.parent.mkdir(parents=True)
    _plant(entry, kind)
    ns: dict[str, object] = {}
    exec(loader.get_code("mod"), ns)
    assert ns["VALUE"] == 7
