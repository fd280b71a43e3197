"""Bytecode for gpuwiz's own modules where Python does not keep any (issue 16).

Python compiles every module it imports and, unless told not to, keeps the bytecode in
``__pycache__`` beside the source, so the next start only reads it. Under ``PYTHONDONTWRITEBYTECODE=1``
(common in containers and CI) a checkout or editable install compiles every gpuwiz module whose
``__pycache__`` entry is missing or stale on every start: ~40 % of a headless ``gpuwiz estimate``
(bench/bench_cli.py). There :func:`install` puts a finder in front of the import system for ``gpuwiz.*``
modules whose loader reads Python's own bytecode as Python does when it matches the source, and
otherwise keeps the bytecode in gpuwiz's user cache folder (``GPUWIZ_CACHE_DIR``, see core/cache.py),
never beside the source. (A ``__pycache__`` left by an earlier run without the variable goes stale
module by module as the sources change -- a ``git pull`` -- and Python then compiles those modules at
every start: 180 M more instructions for `gpuwiz recommend`, measured on 2026-12-07.)

An entry ``<cache>/pyc/<mirrored source path>.<tag>.pyc`` starts with a header naming the interpreter
(``sys.version``, cache tag, optimisation level) and the source's size and modification time in
nanoseconds; an entry whose header does not match the source as it is now is recompiled and
replaced (written to a temporary file and renamed, so a concurrent start sees a whole file or none).
Entries are read without blocking and only from regular files (a FIFO or device planted there is a
miss, never a hang). Every failure falls back to compiling the source, as Python would: the cache only
makes a start faster, it never changes what runs.

This module is compiled from source at every such start (nothing can cache the code that installs the
cache), so it holds only the finder; the generated-code table is gpuwiz._codegen, loaded through it.
"""

from __future__ import annotations

import marshal
import os
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec, PathFinder, SourceFileLoader
from stat import S_ISREG
from types import CodeType, ModuleType
from typing import Any

FORMAT = b"gpuwiz-pyc 1"
PREFIX = "gpuwiz."
MAX_ENTRY_BYTES = 16 << 20  # the largest module's bytecode is ~200 KB
stats = {"hits": 0, "compiled": 0}  # for tests and bench/: entries read / sources compiled this process


def read_regular(path: str, limit: int) -> bytes | None:
    """The bytes of the regular file ``path`` (None: absent, not a regular file, over ``limit`` bytes or
    unreadable). Opened without blocking: a FIFO or device planted there is never waited on."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
        try:
            if not S_ISREG(os.fstat(fd).st_mode):
                return None
            with os.fdopen(fd, "rb", closefd=False) as fh:
                data = fh.read(limit + 1)
        finally:
            os.close(fd)
    except OSError:
        return None
    return data if len(data) <= limit else None


def header(source_path: str, st: os.stat_result) -> bytes:
    """What an entry for ``source_path`` (as it is now, ``st``) must start with."""
    tag = f"{sys.version}|{sys.implementation.cache_tag}|O{sys.flags.optimize}|{st.st_size}|{st.st_mtime_ns}|"
    return FORMAT + b"\n" + tag.encode("utf-8", "backslashreplace") + os.fsencode(source_path) + b"\n"


def entry_path(folder: str, source_path: str) -> str:
    """The entry for ``source_path``: its absolute path mirrored under ``folder`` (as sys.pycache_prefix does)."""
    drive, rest = os.path.splitdrive(os.path.abspath(source_path))
    rest = rest.lstrip("\\/")
    if drive:
        rest = os.path.join(drive.replace(":", "").strip("\\/"), rest)
    return os.path.join(folder, rest + f".{sys.implementation.cache_tag}.pyc")


class CachedLoader(SourceFileLoader):
    """A source loader that reads Python's own bytecode when it matches the source (``SourceFileLoader``'s
    rules: timestamp or hash) and otherwise keeps the module's bytecode under ``folder``."""

    def __init__(self, fullname: str, path: str, folder: str) -> None:
        super().__init__(fullname, path)
        self.folder = folder
        self.st: os.stat_result | None = None

    def path_stats(self, path: str) -> dict[str, Any]:
        st = self.st = os.stat(path)
        return {"mtime": st.st_mtime, "size": st.st_size}

    def source_to_code(self, data: Any, path: Any, *, _optimize: int = -1) -> CodeType:  # type: ignore[override]
        # reached only when Python has no bytecode for the source as it is now (get_code checked its own first)
        st = self.st
        if st is None:
            try:
                st = os.stat(path)
            except OSError:
                return super().source_to_code(data, path, _optimize=_optimize)
        target = entry_path(self.folder, path)
        head = header(path, st)
        blob = read_regular(target, MAX_ENTRY_BYTES)
        if blob is not None and blob.startswith(head):
            try:
                code = marshal.loads(memoryview(blob)[len(head):])
            except (EOFError, ValueError, TypeError):  # a damaged entry: compile again
                code = None
            if isinstance(code, CodeType):
                stats["hits"] += 1
                return code
        code = super().source_to_code(data, path, _optimize=_optimize)
        stats["compiled"] += 1
        write_entry(target, head + marshal.dumps(code))
        return code


def write_entry(target: str, blob: bytes) -> bool:
    """Write ``blob`` to ``target`` atomically; False (silently) when it cannot."""
    tmp = f"{target}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with os.fdopen(fd, "wb") as fh:
            fh.write(blob)
        os.replace(tmp, target)
        return True
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return False


class CachedFinder:
    """Finds ``gpuwiz.*`` modules as the path finder does and gives their sources a :class:`CachedLoader`."""

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def find_spec(self, name: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        if not name.startswith(PREFIX):
            return None
        spec = PathFinder.find_spec(name, path, target)
        if spec is not None and type(spec.loader) is SourceFileLoader and spec.origin:
            spec.loader = CachedLoader(name, spec.origin, self.folder)
        return spec


def install() -> bool:
    """Put the finder in place when Python writes no bytecode; True when it did. (An installed wheel's
    ``__pycache__`` is read through it as Python reads it: each module's own entry when it matches.)"""
    if not sys.dont_write_bytecode or sys.implementation.cache_tag is None:
        return False
    if any(isinstance(f, CachedFinder) for f in sys.meta_path):
        return True
    folder = cache_folder()
    if folder is None:
        return False
    sys.meta_path.insert(0, CachedFinder(os.path.join(folder, "pyc")))
    return True


def cache_folder() -> str | None:
    """= gpuwiz.core.cache.cache_dir(), without importing the engine package (`gpuwiz --help` stays light)."""
    env = os.environ.get("GPUWIZ_CACHE_DIR")
    if env:
        return env
    if sys.platform.startswith("linux"):  # what platformdirs answers there, without importing it (~38 M
        # instructions, a tenth of the `import pydantic, yaml` floor): the XDG base directory rule
        xdg = os.environ.get("XDG_CACHE_HOME", "")
        if os.path.isabs(xdg):
            return os.path.join(xdg, "gpuwiz")
        if os.path.isabs(os.environ.get("HOME", "")):
            return os.path.join(os.path.expanduser("~/.cache"), "gpuwiz")
    try:
        import platformdirs
    except ImportError:  # pragma: no cover - platformdirs is a dependency
        return None
    return str(platformdirs.user_cache_dir("gpuwiz", appauthor=False))
