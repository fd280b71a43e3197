"""The bridge between the wizard and the pure core: load the catalog once, run the engine safely.

The engine is imported lazily (it is not needed to draw the first frame). Errors a user can cause
(``GpuwizError``) come back as one-line messages; anything else is a bug, reported in one line too
and never as a traceback on screen.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import select
import struct
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING

from gpuwiz.core.errors import GpuwizError

if TYPE_CHECKING:
    from gpuwiz.core.catalog import Catalog
    from gpuwiz.core.models import Recommendation, Requirements
    from gpuwiz.tui.answer import Brief


@dataclass(frozen=True)
class Outcome:
    rec: Recommendation | None  # the answer (Engine.run); None from the child, which sends ``brief`` first
    error: str | None
    ms: float
    fields: tuple[str, ...] = ()  # the config paths an engine refusal is about (GpuwizError.fields)
    reason: str | None = None  # the refusal in words, without paths (GpuwizError.reason)
    brief: Brief | None = None  # the child's answer for the live panel; its whole answer: EngineProcess.full


class Engine:
    def __init__(self, catalog_overlay: str | os.PathLike[str] | None = None) -> None:
        self.catalog_overlay = catalog_overlay
        self._catalog: Catalog | None = None
        self._regions: set[str] | None = None

    def catalog(self) -> Catalog:
        if self._catalog is None:
            from gpuwiz.core.catalog import load_catalog

            self._catalog = load_catalog(self.catalog_overlay)
        return self._catalog

    def try_catalog(self) -> Catalog | None:
        try:
            return self.catalog()
        except (GpuwizError, OSError):  # a bad overlay: run() reports it
            return None

    def gpu_ids(self) -> list[str]:
        cat = self.try_catalog()
        return [g.id for g in cat.gpus] if cat else []

    def region_ids(self) -> set[str] | None:
        """The cloud regions (and their countries) of the catalog's offers; None without a catalog."""
        cat = self.try_catalog()
        if cat is None:
            return None
        if self._regions is None:
            self._regions = {r for inst in cat.cloud_instances for r in (inst.region, inst.country) if r}
        return self._regions

    def run(self, req: Requirements) -> Outcome:
        t0 = time.perf_counter()
        try:
            from gpuwiz.core.recommend import recommend

            rec = recommend(req, self.catalog())
            return Outcome(rec, None, (time.perf_counter() - t0) * 1e3)
        except GpuwizError as exc:
            return Outcome(None, str(exc).splitlines()[0], (time.perf_counter() - t0) * 1e3, exc.fields, exc.reason)
        except ImportError as exc:
            return Outcome(None, f"engine not available: {exc}", (time.perf_counter() - t0) * 1e3)
        except Exception as exc:  # noqa: BLE001 - the TUI's boundary to the engine: a bug is one line, not a crash
            return Outcome(None, f"internal error: {type(exc).__name__}: {exc}".splitlines()[0],
                           (time.perf_counter() - t0) * 1e3)

    def markdown(self, rec: Recommendation, req: Requirements) -> str:
        from gpuwiz.core.report import render_recommendation

        return render_recommendation(rec, req, "md")


# ---- the engine in a child process -------------------------------------------------------------
# The engine is pure Python: in a thread of the wizard's own process it holds the GIL in 5 ms
# slices (sys.getswitchinterval) while the UI thread, Textual's input thread and its writer thread
# each wait for it to echo a typed character. In a child process it shares nothing with them.
# Frames on the pipes are a 4-byte big-endian length and a pickle (both ends are this program).
# An answer is two frames: ("answer", seq, Outcome with its Brief) and, unless the engine refused
# or a newer question was already waiting, ("full", seq, the Recommendation's own pickle), kept as
# bytes until a screen asks for it (gpuwiz.tui.answer).

_HEAD = struct.Struct(">I")  # a frame's length, parsed once (not per frame by struct.pack/unpack)
ENV_ENGINE = "GPUWIZ_ENGINE"  # "thread" keeps the engine in the wizard's process (the tests' default)


def engine_process_wanted(environ: dict[str, str] | None = None) -> bool:
    """The wizard run from the command line uses a child process unless GPUWIZ_ENGINE=thread."""
    env = os.environ if environ is None else environ
    return env.get(ENV_ENGINE, "process").strip().lower() != "thread"


class EngineProcess:
    """A persistent child process (``python -m gpuwiz.tui.engine_child``) that runs the engine.

    ``submit`` sends (seq, requirements) and returns at once; the answer comes back as
    ``on_answer(seq, outcome)`` (the outcome's ``brief``; ``full(seq)`` is its whole answer): on the
    caller's event loop when ``attach`` gave one (the loop watches the pipe itself: no thread to
    wake, no GIL to wait for, ~1.5 ms p50 / 3 ms p95 of a key at load 2 in tmux), else on a reader
    thread. ``ready`` turns True once the child has loaded the
    core and the catalog (until then the caller uses its thread). When the child cannot start or
    dies, ``broken`` turns True and ``on_broken()`` is called once: the caller falls back to the
    thread."""

    def __init__(self, catalog_overlay: str | os.PathLike[str] | None, language: str,
                 on_answer: Callable[[int, Outcome], None] | None = None,
                 on_broken: Callable[[], None] | None = None) -> None:
        self.catalog_overlay = catalog_overlay
        self.language = language
        self.on_answer = on_answer  # None until the wizard takes a prestarted child (attach)
        self.on_broken = on_broken
        self.ready = False
        self.broken = False
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None  # where the answers are read (attach)
        self._handoff = threading.Event()  # set by attach: the reader thread knows where answers go
        if on_answer is not None:
            self._handoff.set()  # answers on the reader thread
        self._watching: int | None = None  # the pipe's fd while the event loop watches it
        self._buf = bytearray()  # bytes of a frame not complete yet (loop mode)
        self._loop_thread: int | None = None  # the thread of the loop that reads the answers (attach)
        self._full: tuple[int, bytes] | None = None  # the newest whole answer, pickled: (seq, bytes)
        self._newest = 0  # the newest seq the child has answered (its frames come in order)
        self._arrived = threading.Condition()  # notified on every frame (full() off the reading thread)

    def start(self) -> bool:
        import sys

        cmd = [sys.executable, "-m", "gpuwiz.tui.engine_child", "--lang", self.language]
        if self.catalog_overlay is not None:
            cmd += ["--catalog", os.fspath(self.catalog_overlay)]
        try:
            # unbuffered: the reader thread reads exactly the "ready" frame, nothing the loop should see
            self._proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=subprocess.DEVNULL, close_fds=True, bufsize=0)
        except OSError:
            self.broken = True
            return False
        threading.Thread(target=self._read_loop, name="gpuwiz-engine-reader", daemon=True).start()
        return True

    def attach(self, on_answer: Callable[[int, Outcome], None], on_broken: Callable[[], None],
               loop: asyncio.AbstractEventLoop | None = None) -> None:
        """Where the answers go, and on which event loop they are read (None: the reader thread);
        called from that loop's thread. A child that died before this is ``broken``."""
        self.on_answer = on_answer
        self.on_broken = on_broken
        self._loop = loop
        self._loop_thread = threading.get_ident() if loop is not None else None
        self._handoff.set()

    def submit(self, seq: int, req: Requirements) -> bool:
        """Send one request; False (and broken) when the child is gone."""
        proc = self._proc
        if proc is None or proc.stdin is None or self.broken:
            return False
        data = pickle.dumps((seq, req), protocol=pickle.HIGHEST_PROTOCOL)
        try:
            with self._lock:
                proc.stdin.write(_HEAD.pack(len(data)) + data)
                proc.stdin.flush()
        except (OSError, ValueError):  # a closed pipe: the child died
            self._fail()
            return False
        return True

    def full(self, seq: int, timeout: float = 5.0) -> Recommendation | None:
        """The whole answer to question ``seq`` (whose brief came in an "answer" frame), unpickled
        now; waits for its frame if it is still on its way (it follows the brief at once). None when
        it will not come: the child skipped it (a newer question was waiting), died, or took longer
        than ``timeout`` -- the caller computes it itself."""
        deadline = time.monotonic() + timeout
        on_loop = self._loop_thread is not None and self._loop_thread == threading.get_ident()
        while True:
            got = self._full
            if got is not None and got[0] == seq:
                return pickle.loads(got[1])  # type: ignore[no-any-return]
            left = deadline - time.monotonic()
            if self._newest > seq or (got is not None and got[0] > seq) or self.broken or self._proc is None \
                    or left <= 0:
                return None
            fd = self._watching
            if on_loop and fd is not None:  # this thread reads the pipe: read it here until the frame is in
                try:
                    readable, _w, _x = select.select([fd], [], [], left)
                except (OSError, ValueError):
                    return None
                if readable:
                    self._on_readable(fd)
            elif on_loop:  # the loop has not taken the pipe over yet: nothing reads it while we wait
                return None
            else:
                with self._arrived:
                    if self._full is got and self._newest <= seq:
                        self._arrived.wait(left)

    def close(self) -> None:
        """End the child (from the attached loop's thread, if any)."""
        proc, self._proc = self._proc, None
        self._handoff.set()  # a reader thread waiting to hand over ends
        self._stop_watching()
        if proc is None:
            return
        try:
            if proc.stdin is not None:
                proc.stdin.close()  # the child's loop ends on end of file
        except OSError:
            pass
        try:
            proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def _fail(self) -> None:
        with self._lock:
            if self.broken:
                return
            self.broken = True
        if self.on_broken is not None:
            self.on_broken()

    def _read_loop(self) -> None:
        """The reader thread: the "ready" frame, then the answers here or, once attached to an
        event loop, there (the thread ends)."""
        proc = self._proc
        out = proc.stdout if proc is not None else None
        while out is not None:
            if self.ready:
                self._handoff.wait()
                if self._proc is None:
                    return  # closed
                loop = self._loop
                if loop is not None:
                    try:
                        loop.call_soon_threadsafe(self._watch_on_loop)
                        return
                    except RuntimeError:  # the loop has closed: read here
                        self._loop = None
            try:
                frame = _read_frame(out)
            except (OSError, ValueError):  # closed under us
                frame = None
            if frame is None:
                break
            if not self._dispatch(frame):
                break
        if self._proc is not None:  # not closed by us: the child died or spoke nonsense
            self._fail()

    def _dispatch(self, frame: bytes) -> bool:
        try:
            kind, seq, outcome = pickle.loads(frame)
        except (pickle.UnpicklingError, ValueError, TypeError, EOFError, AttributeError, ImportError):
            return False
        if kind == "ready":
            self.ready = True
        elif kind == "full" and isinstance(outcome, bytes):
            self._full = (seq, outcome)  # unpickled only if asked for (full)
            self._notify()
        elif kind == "answer" and isinstance(outcome, Outcome):
            self._newest = max(self._newest, seq)
            self._notify()
            if self.on_answer is not None:
                self.on_answer(seq, outcome)
        return True

    def _notify(self) -> None:
        with self._arrived:  # full() may be waiting on another thread
            self._arrived.notify_all()

    def _watch_on_loop(self) -> None:
        """On the event loop: read the pipe when it has bytes (answers arrive on the loop itself)."""
        proc, loop = self._proc, self._loop
        if proc is None or proc.stdout is None or loop is None:
            return
        fd = proc.stdout.fileno()
        try:
            os.set_blocking(fd, False)
            loop.add_reader(fd, self._on_readable, fd)
        except (NotImplementedError, RuntimeError, ValueError, OSError):  # a loop that cannot watch pipes
            os.set_blocking(fd, True)
            self._loop = None
            threading.Thread(target=self._read_loop, name="gpuwiz-engine-reader", daemon=True).start()
            return
        self._watching = fd

    def _on_readable(self, fd: int) -> None:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:  # end of file: the child is gone
            self._stop_watching()
            if self._proc is not None:
                self._fail()
            return
        buf = self._buf
        buf += chunk
        while len(buf) >= 4:
            (size,) = _HEAD.unpack_from(buf)
            if len(buf) < 4 + size:
                break
            frame = bytes(buf[4:4 + size])
            del buf[:4 + size]
            if not self._dispatch(frame):
                self._stop_watching()
                if self._proc is not None:
                    self._fail()
                return

    def _stop_watching(self) -> None:
        fd, self._watching = self._watching, None
        if fd is not None and self._loop is not None:
            try:
                self._loop.remove_reader(fd)
            except (RuntimeError, ValueError, OSError):
                pass


_prestarted: EngineProcess | None = None


def prestart_engine_process(catalog_overlay: str | os.PathLike[str] | None, language: str) -> None:
    """Start the engine's child now, before the wizard imports Textual and the core (``gpuwiz
    FILE.yaml``): it loads the core and the catalog on the other core meanwhile, and is often
    ready, warm, for the wizard's first answer (which the wizard's thread would otherwise compute
    cold). The wizard takes it over (``take_prestarted``); a failed start leaves the thread."""
    global _prestarted
    proc = EngineProcess(catalog_overlay, language)
    if proc.start():
        _prestarted = proc


def take_prestarted(catalog_overlay: str | os.PathLike[str] | None, language: str) -> EngineProcess | None:
    """The prestarted child, if it was started for this catalog and language and is alive."""
    global _prestarted
    proc, _prestarted = _prestarted, None
    if proc is None:
        return None
    same = (proc.catalog_overlay is None) == (catalog_overlay is None) and (
        catalog_overlay is None or os.fspath(proc.catalog_overlay or "") == os.fspath(catalog_overlay))
    if proc.broken or not same or proc.language != language:
        proc.close()
        return None
    return proc


def _read_exact(stream: IO[bytes], size: int) -> bytes | None:
    """``size`` bytes (an unbuffered stream may return fewer per read), or None at end of file."""
    chunks: list[bytes] = []
    left = size
    while left > 0:
        chunk = stream.read(left)
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _read_frame(stream: IO[bytes]) -> bytes | None:
    head = _read_exact(stream, 4)
    if head is None:
        return None
    (size,) = _HEAD.unpack(head)
    return _read_exact(stream, size)


def write_frame(stream: IO[bytes], obj: object) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEAD.pack(len(data)) + data)
    stream.flush()


def read_request(stream: IO[bytes]) -> tuple[int, Requirements] | None:
    frame = _read_frame(stream)
    if frame is None:
        return None
    seq, req = pickle.loads(frame)
    return int(seq), req
