"""The engine in a child process (the command line's wizard): same answers as the thread, the thread
while it starts and when it dies or cannot start; and the debounced draft (at most one write a
second while typing, written at once on exit)."""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from wizhelp import child_on_data_field, focus_epochs, settle, until

from gpuwiz.core.config_io import load_config
from gpuwiz.tui import drafts
from gpuwiz.tui import engine as engine_mod
from gpuwiz.tui.app import GpuwizApp
from gpuwiz.tui.engine import Engine, engine_process_wanted, prestart_engine_process, take_prestarted

MakeApp = Callable[..., GpuwizApp]


async def type_epochs(pilot: Any, app: GpuwizApp, text: str) -> None:
    await focus_epochs(pilot, app)
    await pilot.pause()
    await pilot.press("ctrl+u", *list(text))


def spy_submit(proc: Any) -> list[int]:
    """The sequence numbers of every question ``proc`` (a tui.engine child handle) is sent from now on."""
    sent: list[int] = []
    submit = proc.submit

    def spy(seq: int, req: Any) -> bool:
        sent.append(seq)
        return bool(submit(seq, req))

    proc.submit = spy
    return sent


def test_the_command_line_wants_the_process_unless_told_otherwise() -> None:
    assert engine_process_wanted({}) is True
    assert engine_process_wanted({"GPUWIZ_ENGINE": "thread"}) is False
    assert engine_process_wanted({"GPUWIZ_ENGINE": "process"}) is True


async def test_the_child_process_answers_as_the_thread_would(make_app: MakeApp, config_file: Path) -> None:
    app = make_app(config_file, engine_process=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await until(pilot, lambda: app._engine_proc is not None and app._engine_proc.ready, "the child is ready")
        proc = app._engine_proc
        assert proc is not None
        sent = spy_submit(proc)
        await type_epochs(pilot, app, "3")
        await until(pilot, lambda: app.answered and app.requirements.data.epochs == 3, "the answer for 3 epochs")
        assert sent and sent[-1] == app._seq  # asked of the child, not of the thread
        assert app.recommendation == Engine().run(app.requirements).rec
        assert app.answer_for == app.requirements


async def test_a_typed_key_is_sent_at_once_and_its_frame_waits_for_the_answer(
        make_app: MakeApp, config_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the child answering, a typed key's requirements go to it and its frame is held for the
    answer (one frame for the character and the live panel, gpuwiz.tui.frames); the answer releases it."""
    from gpuwiz.tui import frames
    from gpuwiz.tui.widgets.live_panel import LivePanel

    calls: list[str] = []
    hold, release = frames.FrameTimer.hold, frames.FrameTimer.release
    monkeypatch.setattr(frames.FrameTimer, "hold", lambda self, *a: (calls.append("hold"), hold(self, *a))[1])
    monkeypatch.setattr(frames.FrameTimer, "release", lambda self: (calls.append("release"), release(self))[1])
    app = make_app(config_file, engine_process=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await child_on_data_field(pilot, app, "f-data-epochs")
        await until(pilot, lambda: app.answered, "settled")
        panel = app.screen.query_one(LivePanel)
        before = panel.text
        proc = app._engine_proc
        assert proc is not None
        submit = proc.submit

        def spy(seq: int, req: Any) -> bool:
            calls.append("submit")
            return submit(seq, req)

        proc.submit = spy  # type: ignore[method-assign]
        calls.clear()
        await pilot.press("7")
        await until(pilot, lambda: app.answered and panel.text != before, "the answer for the new epochs")
        await until(pilot, lambda: "release" in calls, "the held frame released")
        assert calls[:2] == ["submit", "hold"]
        timer = app.screen._frame_timer
        assert isinstance(timer, frames.FrameTimer) and not timer.holding


async def test_a_slow_engine_holds_the_typed_keys_frame_longer(
        make_app: MakeApp, config_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The child's answer times set the next key's hold (frames.hold_for): the answers it gives are
    counted, and after slow ones the hold is long enough for them."""
    from gpuwiz.tui import frames

    holds: list[float | None] = []
    hold = frames.FrameTimer.hold
    monkeypatch.setattr(frames.FrameTimer, "hold", lambda self, s=None: (holds.append(s), hold(self, s))[1])
    app = make_app(config_file, engine_process=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await until(pilot, lambda: app._engine_proc is not None and app._engine_proc.ready, "the child is ready")
        await type_epochs(pilot, app, "3")
        await until(pilot, lambda: app.answered and app.requirements.data.epochs == 3, "the answer for 3 epochs")
        assert app._child_ms and app._child_ms[-1] == app.last_engine_ms  # the child's answers are counted
        assert holds and all(frames.HOLD_S <= h <= frames.HOLD_MAX_S for h in holds if h is not None)
        app._child_ms.clear()
        app._child_ms.extend([0.2, 12.0, 0.1])  # as after a 70B config's new values
        await pilot.press("4")
        await until(pilot, lambda: app.answered and app.requirements.data.epochs == 34, "the answer for 34 epochs")
        assert holds[-1] == pytest.approx(0.012 + frames.ANSWER_OVERHEAD_S)


async def test_a_child_started_before_the_app_answers_from_the_first_question_on(
        make_app: MakeApp, config_file: Path) -> None:
    prestart_engine_process(None, "en")  # as `gpuwiz FILE.yaml` does, before Textual is imported
    early = engine_mod._prestarted
    assert early is not None
    deadline = time.monotonic() + 60
    while not early.ready:  # the command line's head start: here the child is up before the app
        assert time.monotonic() < deadline and not early.broken, "the prestarted child never came up"
        await asyncio.sleep(0.02)
    sent = spy_submit(early)
    app = make_app(config_file, engine_process=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.answered and app.recommendation is not None, "the first answer")
        assert app._engine_proc is early and engine_mod._prestarted is None  # taken over, once
        assert sent == [app._seq]  # the first answer came from the child, not from the thread
        assert app.recommendation == Engine().run(app.requirements).rec
    assert early._proc is None  # closed with the app


def test_a_prestarted_child_for_another_catalog_or_language_is_not_used(tmp_path: Path) -> None:
    prestart_engine_process(None, "en")
    early = engine_mod._prestarted
    assert early is not None and early._proc is not None
    assert take_prestarted(None, "zh_CN") is None  # the app's language differs: closed, not used
    assert early._proc is None and engine_mod._prestarted is None
    prestart_engine_process(None, "en")
    assert take_prestarted(tmp_path / "overlay.yaml", "en") is None
    assert engine_mod._prestarted is None


async def test_a_prestarted_child_that_died_leaves_the_thread(make_app: MakeApp, config_file: Path) -> None:
    prestart_engine_process(None, "en")
    early = engine_mod._prestarted
    assert early is not None and early._proc is not None
    early._proc.kill()
    early._proc.wait()
    deadline = time.monotonic() + 30
    while not early.broken:  # its reader thread sees the end of the pipe
        assert time.monotonic() < deadline, "the dead child was never noticed"
        await asyncio.sleep(0.02)
    app = make_app(config_file, engine_process=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)  # the thread answers
        assert app.recommendation is not None and app._engine_proc is not early
        await type_epochs(pilot, app, "3")
        await settle(pilot, app)
        assert app.requirements.data.epochs == 3 and app.answer_for == app.requirements


async def test_a_dead_child_hands_over_to_the_thread(make_app: MakeApp, config_file: Path) -> None:
    app = make_app(config_file, engine_process=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await until(pilot, lambda: app._engine_proc is not None and app._engine_proc.ready, "the child is ready")
        proc = app._engine_proc
        assert proc is not None and proc._proc is not None
        proc._proc.kill()
        proc._proc.wait()
        await type_epochs(pilot, app, "4")
        await until(pilot, lambda: app._engine_proc is None, "the app noticed the child is gone")
        await until(pilot, lambda: app.answered and app.requirements.data.epochs == 4, "the thread's answer")
        assert app.recommendation == Engine().run(app.requirements).rec
        await type_epochs(pilot, app, "5")  # and it keeps answering on the thread
        await settle(pilot, app)
        assert app.requirements.data.epochs == 5 and app.answer_for == app.requirements


async def test_a_child_that_cannot_start_leaves_the_thread(make_app: MakeApp, config_file: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    def no_popen(*_a: object, **_k: object) -> None:
        raise OSError("no processes left")

    monkeypatch.setattr(subprocess, "Popen", no_popen)
    app = make_app(config_file, engine_process=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        assert app._engine_proc is None and app.recommendation is not None
        await type_epochs(pilot, app, "3")
        await settle(pilot, app)
        assert app.requirements.data.epochs == 3 and app.answer_for == app.requirements


async def test_typing_writes_the_draft_at_most_once_a_second_and_keeps_up(
        make_app: MakeApp, config_file: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    writes: list[float] = []
    real = drafts.write_draft

    def counted(*a: Any, **k: Any) -> Any:
        writes.append(time.monotonic())
        return real(*a, **k)

    monkeypatch.setattr(drafts, "write_draft", counted)
    app = make_app(config_file)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await focus_epochs(pilot, app)
        await pilot.pause()
        writes.clear()
        t0 = time.monotonic()
        for key in "3" * 5 + "4":  # 2 → 23333… → a burst of edits
            await pilot.press("ctrl+u", key)
        assert app.requirements.data.epochs == 4 and app.dirty
        # the last edit reaches the disk by itself (at most ~1 s later), the app still running
        await until(pilot, lambda: (d := drafts.read_draft(state_dir, live=True)) is not None
                    and d.requirements == app.requirements, "the draft has the last edit", 10.0)
        # from the first key to the last edit on disk: written, but not once per key (a write just
        # before the burst may hold the first one back until after it, so they are counted to here)
        elapsed = time.monotonic() - t0
        assert 1 <= len(writes) <= 2 + int(elapsed), (len(writes), elapsed)


async def test_an_exit_right_after_an_edit_writes_the_draft(make_app: MakeApp, config_file: Path,
                                                            state_dir: Path) -> None:
    app = make_app(config_file)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, app)
        await type_epochs(pilot, app, "7")
        await type_epochs(pilot, app, "8")  # within the second: this one waits for the timer
        await asyncio.sleep(0)
        edited = app.requirements
        assert edited.data.epochs == 8
    draft = drafts.read_draft(state_dir)
    assert draft is not None and draft.requirements == edited
    assert load_config(config_file).data.epochs != 8  # only the draft has it


def test_the_event_loop_reader_puts_frames_split_across_reads_together() -> None:
    """Answers read on the event loop arrive in whatever pieces the pipe gives: each is handed on
    once whole, in order; the end of the pipe marks the child gone."""
    import os
    import pickle
    import struct
    from types import SimpleNamespace

    from gpuwiz.tui.engine import EngineProcess, Outcome

    got: list[tuple[int, str | None]] = []
    lost: list[bool] = []
    proc = EngineProcess(None, "en")
    proc.attach(lambda seq, out: got.append((seq, out.error)), lambda: lost.append(True))
    proc._proc = SimpleNamespace()  # type: ignore[assignment]  # "running": an end of file is a death
    r, w = os.pipe()
    try:
        os.set_blocking(r, False)

        def frame(obj: object) -> bytes:
            data = pickle.dumps(obj)
            return struct.pack(">I", len(data)) + data

        data = frame(("answer", 1, Outcome(None, "one", 1.0))) + frame(("answer", 2, Outcome(None, "two", 2.0)))
        for piece in (data[:3], data[3:40], data[40:-1]):
            os.write(w, piece)
            proc._on_readable(r)
        assert got == [(1, "one")]  # the second frame is still one byte short
        proc._on_readable(r)  # nothing to read now: nothing happens
        os.write(w, data[-1:])
        proc._on_readable(r)
        assert got == [(1, "one"), (2, "two")] and not lost
        os.close(w)
        w = -1
        proc._on_readable(r)
        assert lost == [True] and proc.broken
    finally:
        os.close(r)
        if w >= 0:
            os.close(w)


def test_the_child_keeps_its_generated_code_in_the_cache_folder(
        tmp_path: Path, config_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine's child loads the code dataclasses & co. generate from its own table in the cache
    folder (as the command line does, gpuwiz._pyc): written by the first child, read by the next,
    which has nothing to add; the answers are the same."""
    import threading

    monkeypatch.setenv("GPUWIZ_CACHE_DIR", str(tmp_path / "cache"))
    req = load_config(config_file)

    def answer_once() -> Any:
        got: list[Any] = []
        done = threading.Event()
        proc = engine_mod.EngineProcess(None, "en", on_answer=lambda seq, out: (got.append(out), done.set()))
        assert proc.start()
        deadline = time.monotonic() + 60
        while not proc.ready and time.monotonic() < deadline:
            time.sleep(0.01)
        assert proc.ready and proc.submit(1, req)
        assert done.wait(60)
        full = proc.full(1)  # its whole answer, which follows the brief (read by the reader thread)
        proc.close()
        return full

    first = answer_once()
    table = next((tmp_path / "cache" / "codegen").glob("engine.*.bin"))
    written = table.stat().st_mtime_ns
    second = answer_once()
    assert table.stat().st_mtime_ns == written  # everything came from the table: nothing to rewrite
    assert first is not None and first == second == Engine().run(req).rec


def test_the_child_sweeps_its_frozen_heap_only_when_idle_after_many_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The child's answers join its frozen objects (core.gcpause.keep_frozen); a full collection frees any cycle
    among them once enough answers went by and the wizard sent nothing for a while -- never while a request
    waits, and never after only a few answers."""
    import os

    from gpuwiz.core import gcpause
    from gpuwiz.tui import engine_child

    sweeps: list[int] = []
    monkeypatch.setattr(gcpause, "sweep", lambda: sweeps.append(1) or 0)
    monkeypatch.setattr(engine_child, "SWEEP_IDLE_S", 0.01)
    r, w = os.pipe()
    with os.fdopen(r, "rb", buffering=0) as stream, os.fdopen(w, "wb", buffering=0) as writer:
        few = engine_child.SWEEP_AFTER - 1
        assert engine_child._sweep_when_idle(stream, few) == few and sweeps == []  # too few answers yet
        writer.write(b"x")  # a request is waiting: it is answered first
        many = engine_child.SWEEP_AFTER
        assert engine_child._sweep_when_idle(stream, many) == many and sweeps == []
        stream.read(1)
        assert engine_child._sweep_when_idle(stream, many) == 0 and sweeps == [1]  # idle: swept, count restarts
