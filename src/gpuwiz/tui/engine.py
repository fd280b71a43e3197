"""The bridge between the wizard and the pure core: load the catalog once, run the engine safely.

The engine is imported lazily (it is not needed to draw the first frame). Errors a user can cause
(``GpuwizError``) come back as one-line messages; anything else is a bug, reported in one line too
and never as a traceback on screen.
"""

from __future__ import annotations

import os
import pickle
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


@dataclass(frozen=True)
class Outcome:
    rec: Recommendation | None
    error: str | None
    ms: float
    fields: tuple[str, ...] = ()  # the config paths an engine refusal is about (GpuwizError.fields)
    reason: str | None = None  # the refusal in words, without paths (GpuwizError.reason)


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

ENV_ENGINE = "GPUWIZ_ENGINE"  # "thread" keeps the engine in the wizard's process (the tests' default)


def engine_process_wanted(environ: dict[str, str] | None = None) -> bool:
    """The wizard run from the command line uses a child process unless GPUWIZ_ENGINE=thread."""
    env = os.environ if environ is None else environ
    return env.get(ENV_ENGINE, "process").strip().lower() != "thread"


class EngineProcess:
    """A persistent child process (``python -m gpuwiz.tui.engine_child``) that runs the engine.

    ``submit`` sends (seq, requirements) and returns at once; the answer comes back on a reader
    thread as ``on_answer(seq, outcome)``. ``ready`` turns True once the child has loaded the core and
    the catalog (until then the caller uses its thread). When the child cannot start or dies,
    ``broken`` turns True and ``on_broken()`` is called once: the caller falls back to the thread."""

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

    def start(self) -> bool:
        import sys

        cmd = [sys.executable, "-m", "gpuwiz.tui.engine_child", "--lang", self.language]
        if self.catalog_overlay is not None:
            cmd += ["--catalog", os.fspath(self.catalog_overlay)]
        try:
            self._proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=subprocess.DEVNULL, close_fds=True)
        except OSError:
            self.broken = True
            return False
        threading.Thread(target=self._read_loop, name="gpuwiz-engine-reader", daemon=True).start()
        return True

    def attach(self, on_answer: Callable[[int, Outcome], None], on_broken: Callable[[], None]) -> None:
        """Where a prestarted child's answers go. A child that died before this is ``broken``."""
        self.on_answer = on_answer
        self.on_broken = on_broken

    def submit(self, seq: int, req: Requirements) -> bool:
        """Send one request; False (and broken) when the child is gone."""
        proc = self._proc
        if proc is None or proc.stdin is None or self.broken:
            return False
        data = pickle.dumps((seq, req), protocol=pickle.HIGHEST_PROTOCOL)
        try:
            with self._lock:
                proc.stdin.write(struct.pack(">I", len(data)) + data)
                proc.stdin.flush()
        except (OSError, ValueError):  # a closed pipe: the child died
            self._fail()
            return False
        return True

    def close(self) -> None:
        proc, self._proc = self._proc, None
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
        proc = self._proc
        out = proc.stdout if proc is not None else None
        while out is not None:
            frame = _read_frame(out)
            if frame is None:
                break
            try:
                kind, seq, outcome = pickle.loads(frame)
            except (pickle.UnpicklingError, ValueError, TypeError, EOFError, AttributeError, ImportError):
                break
            if kind == "ready":
                self.ready = True
            elif kind == "answer" and isinstance(outcome, Outcome) and self.on_answer is not None:
                self.on_answer(seq, outcome)
        if self._proc is not None:  # not closed by us: the child died or spoke nonsense
            self._fail()


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
    (size,) = struct.unpack(">I", head)
    return _read_exact(stream, size)


def write_frame(stream: IO[bytes], obj: object) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(struct.pack(">I", len(data)) + data)
    stream.flush()


def read_request(stream: IO[bytes]) -> tuple[int, Requirements] | None:
    frame = _read_frame(stream)
    if frame is None:
        return None
    seq, req = pickle.loads(frame)
    return int(seq), req
