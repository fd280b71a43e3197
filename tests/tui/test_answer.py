"""The engine child's answers in two parts (gpuwiz.tui.answer): the live panel's brief at once, the
whole Recommendation only when a screen asks for it -- and then always the same answer's."""

from __future__ import annotations

import io
import os
import pickle
import struct
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from rich.console import Console
from textual.widgets import Static
from wizhelp import child_on_data_field, until

from gpuwiz.core.config_io import load_config
from gpuwiz.tui.answer import Answer, Brief
from gpuwiz.tui.app import GpuwizApp
from gpuwiz.tui.engine import Engine, EngineProcess, Outcome
from gpuwiz.tui.widgets.live_panel import LivePanel
from gpuwiz.tui.widgets.result_views import alternatives_view

MakeApp = Callable[..., GpuwizApp]


def plain(renderable: Any, width: int = 80) -> str:
    console = Console(width=width, file=io.StringIO(), color_system=None)
    with console.capture() as cap:
        console.print(renderable)
    return cap.get()


async def test_typing_shows_the_childs_brief_and_never_fetches_the_whole_answer(
        make_app: MakeApp, config_file: Path) -> None:
    """On an input step only the live panel follows the answers: each key's brief is the engine's
    answer for the new value, its whole Recommendation stays unread (the Result screen, mounted
    since the config opened on it, does not ask for it either); the Result screen then shows the
    whole answer of the same run."""
    from gpuwiz.tui.screens.result import ResultScreen

    app = make_app(config_file, engine_process=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await child_on_data_field(pilot, app, "f-data-epochs")
        panel = app.screen.query_one(LivePanel)
        for key, epochs in (("3", 23), ("backspace", 2), ("5", 25)):
            before = panel.text

            def shown(e: int = epochs, was: str = before) -> bool:
                return app.answered and app.requirements.data.epochs == e and panel.text != was

            await pilot.press(key)
            await until(pilot, shown, f"the panel for {epochs} epochs")
            answer = app.answer
            assert answer is not None and not answer.fetched, "typing fetched the whole answer"
            expected = Engine().run(app.requirements).rec
            assert expected is not None and answer.brief == Brief.of(expected, app.requirements)
        app.goto("result")
        await until(pilot, lambda: isinstance(app.screen, ResultScreen), "the Result screen")
        scr = app.screen
        options = scr.query_one("#options", Static)
        want = plain(alternatives_view(Engine().run(app.requirements).rec))  # type: ignore[arg-type]
        await until(pilot, lambda: plain(options.content) == want, "the whole answer's options on the Result screen")
        assert app.answer is not None and app.answer.fetched
        assert app.recommendation == Engine().run(app.requirements).rec


async def test_a_whole_answer_the_child_cannot_give_is_computed_here(
        make_app: MakeApp, config_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """When the child has no whole answer for the shown brief (it skipped it for a newer question,
    or died), ``recommendation`` computes it on the wizard's side: the same answer, never None."""
    app = make_app(config_file, engine_process=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await child_on_data_field(pilot, app, "f-data-epochs")
        proc = app._engine_proc
        assert proc is not None
        asked: list[int] = []
        monkeypatch.setattr(proc, "full", lambda seq, timeout=5.0: asked.append(seq))
        await pilot.press("7")
        await until(pilot, lambda: app.answered and app.requirements.data.epochs == 27, "the answer for 27 epochs")
        assert app.answer is not None and not app.answer.fetched
        assert app.recommendation == Engine().run(app.requirements).rec
        assert asked == [app._seq]  # the child was asked first, for this answer


def frame(obj: object) -> bytes:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return struct.pack(">I", len(data)) + data


def test_full_reads_the_whole_answer_that_follows_its_brief_and_gives_up_once_a_newer_one_came(
        config_file: Path) -> None:
    """``EngineProcess.full`` on the event loop's thread reads the pipe itself until the answer's
    whole form is in; an answer the child sent without it (a newer brief came first) is None at
    once, not after the timeout; unknown frames are no answer."""
    req = load_config(config_file)
    rec = Engine().run(req).rec
    assert rec is not None
    got: list[int] = []
    proc = EngineProcess(None, "en")
    proc.attach(lambda seq, out: got.append(seq), lambda: None)
    proc._proc = SimpleNamespace()  # type: ignore[assignment]  # "running"
    r, w = os.pipe()
    try:
        os.set_blocking(r, False)
        proc._loop_thread, proc._watching = threading.get_ident(), r  # as _watch_on_loop leaves it
        brief = Outcome(None, None, 1.0, brief=Brief.of(rec, req))
        whole = frame(("full", 1, pickle.dumps(rec)))
        os.write(w, frame(("answer", 1, brief)) + whole[:10])
        proc._on_readable(r)
        assert got == [1]

        def rest() -> None:
            time.sleep(0.05)
            os.write(w, whole[10:])
        threading.Thread(target=rest).start()
        assert proc.full(1, timeout=30) == rec  # waited for the rest of its frame
        os.write(w, frame(("answer", 2, brief)) + frame(("answer", 3, brief)))
        t0 = time.monotonic()
        assert proc.full(2, timeout=30) is None
        assert time.monotonic() - t0 < 5 and got == [1, 2, 3]
        assert proc.full(1) == rec  # the whole answer kept is still the one of its own question
    finally:
        os.close(r)
        os.close(w)


def test_an_answer_fetches_its_whole_form_once() -> None:
    calls: list[int] = []
    brief = Brief(numbers=SimpleNamespace(gpu_label="x"))  # type: ignore[arg-type]
    answer = Answer(brief, fetch=lambda: calls.append(1) or "rec")  # type: ignore[arg-type,func-returns-value]
    assert not answer.fetched
    assert answer.rec == "rec" and answer.rec == "rec" and calls == [1] and answer.fetched
    with pytest.raises(ValueError):
        Answer(brief)
