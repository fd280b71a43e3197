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

import builtins
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


# ---- generated code (issue 16) -----------------------------------------------------------------------------
#
# Some libraries write Python source at import and compile it: dataclasses (each class's __init__, __repr__,
# __eq__, ...), typing (each string annotation of a TypedDict or NamedTuple, a ForwardRef) and namedtuple.
# pydantic and gpuwiz define hundreds of such classes, so a headless `gpuwiz estimate` spent a fifth of its
# instructions in Python's parser and compiler on text that is the same at every start. :func:`install_codegen`
# gives those three modules an ``exec`` / ``compile`` / ``eval`` that first looks the text up in a table of
# code objects compiled from it in an earlier run (one file per process kind in the cache folder, marshal);
# a text not in the table is compiled as the builtin would (the same mode and flags, '<string>'), and the
# table is rewritten at exit when it grew. The key is the whole text, so an entry is never stale: a changed
# class makes another text. Every failure falls back to the builtin.

CODEGEN_FORMAT = b"gpuwiz-codegen 1"
CODEGEN_MAX_ENTRIES = 20_000  # a table past this is started afresh (each process kind needs ~1-2k)
CODEGEN_MAX_BYTES = 32 << 20
# (module, builtin it stands in for): the generated-code sites named above (Python 3.11-3.13)
CODEGEN_SITES = (("dataclasses", "exec"), ("typing", "compile"), ("collections", "eval"))
_real_compile, _real_exec, _real_eval = builtins.compile, builtins.exec, builtins.eval


class CodeCache:
    """Code objects compiled from generated source text, by (mode, text); see the section's comment."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.codes: dict[tuple[str, str], CodeType] = {}
        self.loaded = False
        self.added = 0
        self.hits = 0

    def header(self) -> bytes:
        tag = f"{sys.version}|{sys.implementation.cache_tag}|O{sys.flags.optimize}"
        return CODEGEN_FORMAT + b"\n" + tag.encode("utf-8", "backslashreplace") + b"\n"

    def load(self) -> None:
        self.loaded = True
        try:  # a FIFO or device planted there is a miss, not a hang: open without blocking, read regular files only
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
            try:
                if not S_ISREG(os.fstat(fd).st_mode):
                    return
                with os.fdopen(fd, "rb", closefd=False) as fh:
                    data = fh.read(CODEGEN_MAX_BYTES + 1)
            finally:
                os.close(fd)
        except OSError:
            return
        head = self.header()
        if len(data) > CODEGEN_MAX_BYTES or not data.startswith(head):
            return
        try:
            table = marshal.loads(memoryview(data)[len(head):])
        except (EOFError, ValueError, TypeError):
            return
        if type(table) is dict and all(type(k) is tuple and len(k) == 2 and type(k[0]) is str
                                       and type(k[1]) is str and type(v) is CodeType for k, v in table.items()):
            self.codes = table

    def code(self, source: str, mode: str) -> CodeType:
        """The code of ``source`` compiled in ``mode`` with no inherited flags, from the table when it is there."""
        if not self.loaded:
            self.load()
        key = (mode, source)
        code = self.codes.get(key)
        if code is not None:
            self.hits += 1
            return code
        code = _real_compile(source, "<string>", mode, 0, True)
        if not self.added:
            import atexit

            atexit.register(self.save)
        self.added += 1
        self.codes[key] = code
        return code

    def save(self) -> bool:
        """Rewrite the table when this process compiled something new; False (silently) when it cannot."""
        if not self.added:
            return False
        table = self.codes if len(self.codes) <= CODEGEN_MAX_ENTRIES else {}
        try:
            blob = self.header() + marshal.dumps(table)
        except ValueError:
            return False
        self.added = 0
        return len(blob) <= CODEGEN_MAX_BYTES and write_entry(self.path, blob)

    # the stand-ins: generated text through the table, anything else to the builtin unchanged
    def exec(self, source: Any, globals: Any = None, locals: Any = None, /) -> None:
        if globals is None:  # the builtin's default: the caller's namespaces
            frame = sys._getframe(1)
            globals, locals = frame.f_globals, frame.f_locals if locals is None else locals
        if type(source) is str and type(globals) is dict:
            source = self.code(source, "exec")
        _real_exec(source, globals, locals)

    def eval(self, source: Any, globals: Any = None, locals: Any = None, /) -> Any:
        if globals is None:
            frame = sys._getframe(1)
            globals, locals = frame.f_globals, frame.f_locals if locals is None else locals
        if type(source) is str and type(globals) is dict:
            source = self.code(source, "eval")
        return _real_eval(source, globals, locals)

    def compile(self, source: Any, filename: Any, mode: str, flags: int = 0, dont_inherit: bool = False,
                optimize: int = -1, **kwargs: Any) -> Any:
        if type(source) is str and filename == "<string>" and not flags and optimize == -1 and not kwargs:
            return self.code(source, mode)
        return _real_compile(source, filename, mode, flags, True, optimize, **kwargs)


def install_codegen(kind: str) -> CodeCache | None:
    """Route the generated-code sites through a :class:`CodeCache` kept as ``codegen-<kind>`` in the cache
    folder; None (nothing changed) when there is no cache folder or another cache is in place."""
    import importlib

    folder = cache_folder()
    if folder is None or sys.implementation.cache_tag is None:
        return None
    cache = CodeCache(os.path.join(folder, "codegen", f"{kind}.{sys.implementation.cache_tag}.bin"))
    for module_name, name in CODEGEN_SITES:
        module = importlib.import_module(module_name)
        if name in module.__dict__:  # already routed (or the module defines its own): leave it
            return None
    for module_name, name in CODEGEN_SITES:
        setattr(sys.modules[module_name], name, getattr(cache, name))
    return cache
