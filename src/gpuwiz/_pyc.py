"""Bytecode for gpuwiz's own modules where Python does not keep any (issue 16).

Python compiles every module it imports and, unless told not to, keeps the bytecode in
``__pycache__`` beside the source, so the next start only reads it. Under ``PYTHONDONTWRITEBYTECODE=1``
(common in containers and CI) a checkout or editable install without ``__pycache__`` compiles all of
gpuwiz again on every start: ~40 % of a headless ``gpuwiz estimate`` (bench/bench_cli.py). There,
and only there, :func:`install` puts a finder in front of the import system for ``gpuwiz.*`` modules
whose loader keeps the bytecode in gpuwiz's user cache folder (``GPUWIZ_CACHE_DIR``, see core/cache.py),
never beside the source.

An entry ``<cache>/pyc/<mirrored source path>.<tag>.pyc`` starts with a header naming the interpreter
(``sys.version``, cache tag, optimisation level) and the source's size and modification time in
nanoseconds; an entry whose header does not match the source as it is now is recompiled and
replaced (written to a temporary file and renamed, so a concurrent start sees a whole file or none).
Every failure falls back to compiling the source, as Python would: the cache only makes a start
faster, it never changes what runs. An installed wheel ships its ``__pycache__``: then nothing is
installed and Python reads its own files.
"""

from __future__ import annotations

import marshal
import os
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec, PathFinder, SourceFileLoader
from types import CodeType, ModuleType

FORMAT = b"gpuwiz-pyc 1"
PREFIX = "gpuwiz."
stats = {"hits": 0, "compiled": 0}  # for tests and bench/: entries read / sources compiled this process


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
    """A source loader that keeps the module's bytecode under ``folder``."""

    def __init__(self, fullname: str, path: str, folder: str) -> None:
        super().__init__(fullname, path)
        self.folder = folder

    def get_code(self, fullname: str) -> CodeType | None:
        source_path = self.get_filename(fullname)
        try:
            st = os.stat(source_path)
        except OSError:
            return super().get_code(fullname)
        target = entry_path(self.folder, source_path)
        head = header(source_path, st)
        try:
            with open(target, "rb") as fh:
                data = fh.read()
        except OSError:
            data = b""
        if data.startswith(head):
            try:
                code = marshal.loads(memoryview(data)[len(head):])
            except (EOFError, ValueError, TypeError):  # a damaged entry: compile again
                code = None
            if isinstance(code, CodeType):
                stats["hits"] += 1
                return code
        code = self.source_to_code(self.get_data(source_path), source_path)
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


def ships_bytecode() -> bool:
    """Whether this installation has Python's own bytecode beside the sources (a wheel pip installed)."""
    here = os.path.dirname(os.path.abspath(__file__))
    opt = f".opt-{sys.flags.optimize}" if sys.flags.optimize else ""
    return os.path.exists(os.path.join(here, "__pycache__", f"cli.{sys.implementation.cache_tag}{opt}.pyc"))


def install() -> bool:
    """Put the finder in place when Python keeps no bytecode for gpuwiz; True when it did."""
    if not sys.dont_write_bytecode or sys.implementation.cache_tag is None or ships_bytecode():
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
