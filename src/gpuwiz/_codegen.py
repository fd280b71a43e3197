"""The code that dataclasses, typing and namedtuple generate at import, compiled once and kept in a table
in gpuwiz's cache folder (issue 16). Loaded through gpuwiz._pyc's finder, so its own bytecode is cached too."""

from __future__ import annotations

import builtins
import marshal
import os
import sys
from types import CodeType
from typing import Any

from gpuwiz._pyc import cache_folder, read_regular, write_entry

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
    """Code objects compiled from generated source text, by (mode, text); see the comment above."""

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
        data = read_regular(self.path, CODEGEN_MAX_BYTES)  # (a FIFO or device planted there is a miss, not a hang)
        if data is None:
            return
        head = self.header()
        if not data.startswith(head):
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
