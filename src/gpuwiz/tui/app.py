"""The gpuwiz wizard: one App that owns the requirements, the answer, the file and the draft.

State flows one way. The App holds ONE frozen ``Requirements`` (the last valid one) and the last
valid answer (``answer``: the live panel's brief of it, and its ``Recommendation``, fetched when a
screen first asks for ``recommendation``, gpuwiz.tui.answer); screens edit through ``edit_field`` /
``replace_requirements`` and follow the App's reactives with ``self.watch(self.app, ...)``. Every
change recomputes the answer (coalesced: a burst of changes in one event-loop turn costs one engine
call; the engine is pure and takes a few milliseconds) and rewrites the autosaved draft.

``create_app`` is the one factory used by the CLI, the tests, the screenshot script and the bench.
"""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import events, work
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.reactive import var
from textual.screen import ModalScreen, Screen

from gpuwiz.core.errors import GpuwizError
from gpuwiz.i18n import N_, _
from gpuwiz.tui.engine import Engine, Outcome
from gpuwiz.tui.plain import clean
from gpuwiz.tui.stepnames import STEP_IDS, STEP_TITLES

if TYPE_CHECKING:  # pydantic and the core load after the first frame (startup budget)
    from gpuwiz.core.models import Recommendation, Requirements
    from gpuwiz.tui import drafts
    from gpuwiz.tui.answer import Answer
    from gpuwiz.tui.engine import EngineProcess
    from gpuwiz.tui.forms import FieldSpec

_T_IMPORT = time.perf_counter()
DRAFT_EVERY_S = 1.0  # typing rewrites the draft at most this often (a killed session loses at most this much)


class EngineDone(Message):
    """The engine worker's answer for requirements revision ``seq`` (older answers are dropped)."""

    def __init__(self, seq: int, req: Requirements, outcome: Outcome) -> None:
        super().__init__()
        self.seq = seq
        self.req = req
        self.outcome = outcome


class EngineLost(Message):
    """The engine's child process died (or never started): the thread takes over."""


class GpuwizApp(App[None]):
    CSS_PATH = "app.tcss"
    TITLE = "gpuwiz"
    # Textual declares these `ClassVar[...] | None`, which mypy reads as instance variables: match it.
    HORIZONTAL_BREAKPOINTS: list[tuple[int, str]] | None = [(0, "-too-narrow"), (80, "-narrow"), (120, "-wide")]  # noqa: RUF012
    VERTICAL_BREAKPOINTS: list[tuple[int, str]] | None = [(0, "-too-short"), (22, "-short"), (34, "-tall")]  # noqa: RUF012

    # Every action has a key that is neither ctrl+b (tmux's prefix) nor an F-key; ids are what
    # settings.yaml's ``keys:`` rebinds (see gpuwiz.tui.settings).
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+q", "quit", "Quit", priority=True, id="quit"),
        Binding("alt+left", "back", "Back", key_display="alt+←", priority=True, id="back"),
        Binding("alt+right", "next", "Next", key_display="alt+→", priority=True, id="next"),
        Binding("ctrl+n", "next", "Next", show=False, priority=True, id="next-ctrl"),
        Binding("ctrl+b", "back", "Back", show=False, priority=True, id="back-ctrl"),
        Binding("pagedown", "next", "Next", show=False, id="next-alt"),
        Binding("pageup", "back", "Back", show=False, id="back-alt"),
        Binding("ctrl+s", "save", "Save", id="save"),
        Binding("f2", "save_as", "Save as", show=False, id="save-as"),
        Binding("ctrl+o", "open", "Open", id="open"),
        Binding("f1", "help", "Help", id="help"),
    ]
    # full names for the help screen (the footer shows the short descriptions)
    ACTION_NAMES: ClassVar[dict[str, str]] = {
        "quit": N_("Quit gpuwiz (asks when there are unsaved changes)"),
        "back": N_("Back: the previous step"), "next": N_("Next: the next step (greyed while a field is invalid)"),
        "next-ctrl": N_("Next: the next step"), "back-ctrl": N_("Back: the previous step (outside tmux)"),
        "next-alt": N_("Next: the next step"), "back-alt": N_("Back: the previous step"),
        "save": N_("Save the config (refuses while a field is invalid)"),
        "save-as": N_("Save the config as a new file"),
        "open": N_("Open a config file"), "help": N_("Help: this list of keys"),
    }

    # ``var``, not ``reactive``: an App reactive repaints the WHOLE screen on every change (every
    # widget's lines again, ~10 ms a key); the screens' watchers update exactly what shows the value.
    requirements: var[Requirements] = var(None, init=False)  # type: ignore[arg-type]
    answer: var[Answer | None] = var(None, init=False)  # the last valid answer (watched: it is new on every one)
    engine_error: var[str | None] = var(None, init=False)
    answers: var[int] = var(0, init=False)  # bumps on every engine answer (the step screens' marks)
    revision: var[int] = var(0, init=False)  # bumps when requirements are replaced wholesale
    config_path: var[str | None] = var(None, init=False)
    dirty: var[bool] = var(False, init=False)  # no check_action depends on it (a Footer rebuild costs ~30 ms)
    step: var[str] = var("start")

    def __init__(
        self,
        *,
        config_path: str | None = None,
        catalog_overlay: str | os.PathLike[str] | None = None,
        state_dir: str | os.PathLike[str] | None = None,
        no_mouse: bool = False,
        handle_signals: bool = True,
        offer_restore: bool = True,
        engine_process: bool = False,
    ) -> None:
        super().__init__()
        from gpuwiz.tui.drafts import state_dir as _state_dir

        self.engine = Engine(catalog_overlay)
        self._want_engine_process = engine_process
        self._engine_proc: EngineProcess | None = None  # the engine's child process, once started
        self._last_sent: tuple[int, Requirements] | None = None  # the newest request sent to it
        self._child_ms: deque[float] = deque(maxlen=8)  # its last answers' engine times (frames.hold_for)
        self.state_dir = _state_dir(state_dir)
        self.no_mouse = no_mouse
        self.handle_signals = handle_signals
        self.offer_restore = offer_restore
        self._initial_config = config_path
        self._opened_first = False  # the config was opened before the first frame (_open_first)
        self._saved: Requirements | None = None
        self._core_ready = False
        self._recompute_pending = False
        self._key_sends = False  # within _key_in_order: it sends the key's change itself
        self._seq = 0  # requirements revision sent to the engine worker
        self._answered_seq = 0  # the revision whose answer is shown
        self.answer_for: Requirements | None = None  # the requirements the shown answer is for
        self._fingerprint: str | None = None  # sha256 of the config file as opened / last saved
        self._draft_error_shown = False
        self._draft_written_at = -DRAFT_EVERY_S  # time.monotonic() of the last draft write
        self._draft_timer: Any = None  # the pending debounced write (a Textual Timer)
        self._keep_foreign_draft = False  # a draft of an earlier session, offered but not chosen
        self._signals_installed: list[int] = []
        self.baseline: tuple[Requirements, Recommendation] | None = None
        self.last_change: str = ""
        self.last_engine_ms: float = 0.0
        self.engine_fields: tuple[str, ...] = ()  # what the engine's refusal is about (typed, GpuwizError.fields)
        self.engine_reason: str | None = None
        self.ready_at: float | None = None

    # ---- a guard for Textual 8.2.8 -----------------------------------------------------------------
    async def run_action(self, action: Any, default_namespace: Any = None, namespaces: Any = None) -> bool:
        """Drop a PageDown/PageUp meant for an option list that has not been laid out yet.

        Textual 8.2.8's ``OptionList._move_page`` indexes its line cache, which stays empty until the
        list has a size, so a page key that arrives with the key that opened the list (the command
        palette, a Select dropdown, the start menu right after a resize; one read over ssh) raises
        KeyError and kills the app. Bindings run through here, at the moment the action would run.
        """
        if isinstance(action, str) and "page_" in action and _page_to_undrawn_list(action, default_namespace):
            return True  # handled: nothing to page through yet
        return await super().run_action(action, default_namespace, namespaces)

    async def on_event(self, event: Any) -> None:
        if isinstance(event, events.Key) and not event.is_forwarded and await self._key_in_order(event):
            return
        await super().on_event(event)

    async def _key_in_order(self, event: events.Key) -> bool:
        """Handle a key now, in arrival order; False leaves it to Textual's usual dispatch.

        Textual 8.2.8 types a printable key into the focused Input at once, but runs every other key
        (backspace, ctrl+u, ←/→, tab, enter) as a binding only after the key has bubbled up the
        widget tree, one message hop per parent. Keys that arrive together (one terminal read: fast
        typing over ssh, a loaded machine, the key right after a step switch) are then reordered:
        ``1 backspace 2`` leaves ``1``, ``ctrl+u 1 2`` right after ``alt+→`` leaves an empty field.
        Here the same steps (priority bindings, the character, the focus chain's bindings) run
        synchronously, so each key acts before the next one is looked at."""
        from textual.command import CommandPalette
        from textual.widgets import Input

        focused = self.focused
        if not isinstance(focused, Input) or self.screen.maximized is not None:
            return False
        if isinstance(self.screen, CommandPalette):  # the palette runs its own keys (enter selects and
            return False  # dismisses): handled here too, a queued enter would dismiss it twice
        self.app_focus = True
        if await self._check_bindings(event.key, priority=True):
            return True
        self._key_sends = True  # a change this key makes goes to the engine at its end (no call_later)
        try:
            if event.is_printable and event.character is not None:
                restart = getattr(focused, "_restart_blink", None)  # the cursor stays lit while typing
                if callable(restart):
                    restart()
                selection = focused.selection
                if selection.is_empty:
                    focused.insert_text_at_cursor(event.character)
                else:
                    focused.replace(event.character, *selection)
                self._field_typed(focused)
                return True
            if event.key == "enter" and self._core_ready:
                from gpuwiz.tui.screens.steps import StepScreen

                scr = self.screen
                if isinstance(scr, StepScreen) and focused.has_class("field-input"):
                    scr.advance_from(focused)  # to the next field now (a Submitted message would come later)
                    return True
            if await self._check_bindings(event.key):
                self._field_typed(focused)
                return True
            return False
        finally:
            self._key_sends = False
            self._recompute_now_if_pending()

    def _field_typed(self, widget: Any) -> None:
        """A step field's new text counts at once (Next, ctrl+s and the marks see it), not when its
        Changed message comes round."""
        if not self._core_ready:
            return
        from gpuwiz.tui.screens.steps import StepScreen

        scr = self.screen
        if isinstance(scr, StepScreen) and widget.has_class("field-input"):
            scr.field_text(widget.id, widget.value)

    def action_command_palette(self) -> None:
        """Textual's palette, minus a crash when it is closed in the burst that opened it."""
        from textual.command import CommandPalette

        from gpuwiz.tui.widgets.palette import SafeCommandPalette

        if self.use_command_palette and not any(isinstance(s, CommandPalette) for s in self.screen_stack):
            self.push_screen(SafeCommandPalette(id="--command-palette"))

    def get_driver_class(self) -> Any:
        """On Linux/macOS, Textual's driver with an input loop that survives bytes that are not UTF-8
        and CSI numbers Textual's parser cannot take (see gpuwiz.tui.driver); TEXTUAL_DRIVER still wins."""
        from textual import constants

        base = super().get_driver_class()
        if constants.DRIVER is None and base.__module__ == "textual.drivers.linux_driver":
            from gpuwiz.tui.driver import SafeInputDriver

            return SafeInputDriver
        return base

    def _display(self, screen: Screen[Any], renderable: Any) -> None:
        """Textual's, with the frame's writes handed to the writer thread as one (SafeInputDriver)."""
        driver = self._driver
        begin = getattr(driver, "begin_frame", None)
        if begin is None:  # headless (tests), another driver
            super()._display(screen, renderable)
            return
        begin()
        try:
            super()._display(screen, renderable)
        finally:
            driver.end_frame()  # type: ignore[union-attr]

    # ---- running ---------------------------------------------------------------------------------
    def run(self, *, headless: bool = False, inline: bool = False, inline_no_clear: bool = False,
            mouse: bool | None = None, size: tuple[int, int] | None = None, auto_pilot: Any = None,
            loop: Any = None) -> None:
        """``App.run`` with ``mouse`` defaulting to the factory's ``no_mouse``."""
        if mouse is None:
            mouse = not self.no_mouse
        return super().run(headless=headless, inline=inline, inline_no_clear=inline_no_clear, mouse=mouse,
                           size=size, auto_pilot=auto_pilot, loop=loop)

    def on_mount(self) -> None:
        from gpuwiz.tui.screens.start import StartScreen

        self.install_screen(StartScreen(), "start")
        if not self._open_first():
            self.push_screen("start")
        self._install_signal_handlers()
        if self._want_engine_process:  # a child the command line started early: ours from the first answer on
            from gpuwiz.i18n import current_language
            from gpuwiz.tui.engine import take_prestarted

            proc = take_prestarted(self.engine.catalog_overlay, current_language())
            if proc is not None:
                self._want_engine_process = False
                self._adopt_engine_process(proc)

    def _open_first(self) -> bool:
        """``gpuwiz FILE.yaml``: the config opens before the first frame, whose screen is its answer
        (the start screen is never built and drawn only to be replaced; the engine starts on it
        while the Result screen is built). Only where the command line has loaded the core already
        (its catalog check), so a first frame without a config never waits for pydantic; False:
        the start screen first, the config after it, as before."""
        import sys

        if not self._initial_config or "gpuwiz.core.models" not in sys.modules:
            return False
        self.ensure_core()
        self._opened_first = True  # _open_initial does not open it again (nor say twice why it cannot)
        self._keep_foreign_draft = self.offer_restore  # no draft is touched before _startup has offered it
        error = self.open_config(self._initial_config)
        if error:
            self.notify(error, title="Cannot open config", severity="error", timeout=10)
            return False  # the start screen, the error on it
        self.step = "result"
        self.push_screen("result")
        return True

    def on_ready(self) -> None:
        self.ready_at = time.perf_counter()
        self.call_after_refresh(self._startup)

    def ensure_core(self) -> None:
        """Load pydantic, the core and the input screens (after the first frame, or on demand)."""
        if self._core_ready:
            return
        self._core_ready = True
        from gpuwiz.core.models import Requirements
        from gpuwiz.tui.forms import STEPS
        from gpuwiz.tui.screens.result import ResultScreen
        from gpuwiz.tui.screens.steps import StepScreen

        self.set_reactive(GpuwizApp.requirements, Requirements())
        self._saved = Requirements()
        for spec in STEPS:
            self.install_screen(StepScreen(spec), spec.id)
        self.install_screen(ResultScreen(), "result")
        self._schedule_recompute()

    def _startup(self) -> None:
        from gpuwiz.tui import drafts

        self.ensure_core()
        self._apply_settings()
        # Textual, pydantic, the core and the catalog are loaded and live as long as the app: move
        # them out of the collector's sight, or every full collection walks them all (a ~50 ms pause
        # in the middle of typing, every few hundred keys).
        gc.freeze()
        notices: list[str] = []
        draft = drafts.read_draft(self.state_dir, notices) if self.offer_restore else None
        for notice in notices:  # a bad draft was set aside: say so once, as plain text
            self.notify(notice, title="Draft set aside", severity="warning", timeout=15, markup=False)
        if draft is not None:
            draft = drafts.claim_draft(self.state_dir, draft)  # this session's now (None: another took it)
        if draft is not None:
            from gpuwiz.tui.dialogs.confirm import ChoiceDialog

            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(draft.saved_at)) if draft.saved_at else _("earlier")
            src = draft.source or _("a new config")
            choices = [("restore", N_("Restore")), ("discard", N_("Discard"))]
            msg = _("An unsaved draft of {src} from {when} was left behind (the last session ended "
                    "without saving). Restore it?").format(src=src, when=when)
            if self._initial_config:  # the file named on the command line wins; the draft is only offered
                self._keep_foreign_draft = True
                self._open_initial()
                msg = _("An unsaved draft of {src} from {when} was left behind. You opened "
                        "{path}: keep it, or restore the draft instead?").format(
                    src=src, when=when, path=self._initial_config)
                choices = [("keep", _("Keep {name}").format(name=Path(self._initial_config).name)),
                           ("restore", N_("Restore draft")), ("discard", N_("Discard draft"))]

            def done(choice: str | None) -> None:
                if choice == "restore":
                    self._keep_foreign_draft = False
                    self.restore_draft(draft)
                elif choice == "keep":
                    pass  # the old draft stays on disk (until this session has a draft of its own)
                else:
                    self._keep_foreign_draft = False
                    drafts.clear_draft(self.state_dir)
                    if not self._initial_config:
                        self._open_initial()

            self.push_screen(ChoiceDialog("Restore draft?", msg, choices), done)
        else:
            self._keep_foreign_draft = False  # none to offer (_open_first kept them untouched till now)
            self._open_initial()

    def binding_ids(self) -> set[str]:
        from gpuwiz.tui.screens.compare import CompareScreen
        from gpuwiz.tui.screens.result import ResultScreen

        return {b.id for bs in (self.BINDINGS, ResultScreen.BINDINGS, CompareScreen.BINDINGS) for b in bs
                if isinstance(b, Binding) and b.id}

    def _apply_settings(self) -> None:
        """Key bindings from settings.yaml (by binding id); a bad file: one line, the defaults."""
        from gpuwiz.tui.settings import load_settings

        settings = load_settings(self.binding_ids())
        if settings.problem:
            self.notify(settings.problem, title="settings.yaml ignored", severity="warning", timeout=10)
        elif settings.keymap:
            self.set_keymap(settings.keymap)

    def _open_initial(self) -> None:
        if self._opened_first:
            self._opened_first = False  # opened before the first frame (_open_first): once
            return
        if self._initial_config:
            error = self.open_config(self._initial_config)
            if error:
                self.notify(error, title="Cannot open config", severity="error", timeout=10)
            else:
                self.goto("result")

    # ---- signals ---------------------------------------------------------------------------------
    def _install_signal_handlers(self) -> None:
        if not self.handle_signals or threading.current_thread() is not threading.main_thread():
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        for sig in (signal.SIGHUP, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, self._on_signal, sig)
                self._signals_installed.append(sig)
            except (NotImplementedError, RuntimeError, ValueError, AttributeError):
                pass

    def _remove_signal_handlers(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        for sig in self._signals_installed:
            try:
                loop.remove_signal_handler(sig)
            except (RuntimeError, ValueError):
                pass
        self._signals_installed.clear()

    def _on_signal(self, sig: int) -> None:
        """SIGHUP (dropped ssh) / SIGTERM: flush the draft, then leave."""
        self.flush_draft()
        self.exit(return_code=128 + int(sig))

    async def on_unmount(self) -> None:
        self._remove_signal_handlers()
        if self._draft_timer is not None:  # an exit with an edit not yet written: write it now
            self.flush_draft()
        proc, self._engine_proc = self._engine_proc, None
        if proc is not None:
            proc.close()

    # ---- state -----------------------------------------------------------------------------------
    def watch_requirements(self, old: Requirements, new: Requirements) -> None:
        self.dirty = new != self._saved
        self._schedule_recompute()
        self._draft_soon()

    def watch_dirty(self) -> None:
        self._refresh_chrome()

    def watch_config_path(self) -> None:
        self._refresh_chrome()

    def _refresh_chrome(self) -> None:
        bar = getattr(self.screen, "step_bar", None)  # a WizScreen's (a dialog has none); no DOM query per key
        if bar is not None:
            bar.file_label = self.file_label
            bar.dirty = self.dirty

    @property
    def file_label(self) -> str:
        return Path(self.config_path).name if self.config_path else _("new config")

    def _schedule_recompute(self) -> None:
        """Send the current requirements to the engine worker (a burst of changes in one event-loop
        turn sends one). The UI thread never runs the engine: typing stays immediate whatever it costs."""
        if not self._recompute_pending:
            self._recompute_pending = True
            if not self._key_sends:  # else _key_in_order sends it before it returns
                self.call_later(self._recompute)

    def _recompute_now_if_pending(self) -> None:
        """A typed key's requirements go to the engine now, before the typed character is painted
        (the child computes while this thread draws), not a loop turn later."""
        if self._recompute_pending:
            self._recompute()

    def _recompute(self) -> None:
        if not self._recompute_pending:
            return  # sent already (_recompute_now_if_pending)
        self._recompute_pending = False
        if self.requirements is None:
            return
        self._seq += 1
        self.engine.try_catalog()  # loaded once, here (the worker thread only reads it)
        proc = self._engine_proc
        if proc is not None and proc.ready:
            self._last_sent = (self._seq, self.requirements)
            if proc.submit(self._seq, self.requirements):
                hold = getattr(self.screen, "hold_frame", None)
                if callable(hold):  # a step screen: the typed character waits a little for the live panel
                    from gpuwiz.tui.frames import hold_for

                    hold(hold_for(self._child_ms))
                return
        self._engine_worker(self._seq, self.requirements)

    def _start_engine_process(self) -> None:
        """The engine in a child process (see gpuwiz.tui.engine.EngineProcess): the thread answers
        until it is ready, and again if it dies."""
        from gpuwiz.i18n import current_language
        from gpuwiz.tui.engine import EngineProcess

        proc = EngineProcess(self.engine.catalog_overlay, current_language())
        if proc.start():
            self._adopt_engine_process(proc)

    def _adopt_engine_process(self, proc: EngineProcess) -> None:
        proc.attach(self._answer_from_process, self._engine_lost, asyncio.get_running_loop())
        self._engine_proc = proc
        if proc.broken:  # died before it was ours: the thread goes on answering
            self._engine_lost()

    def _engine_lost(self) -> None:
        self.post_message(EngineLost())  # from the event loop or the engine reader thread: handled on the loop

    def _answer_from_process(self, seq: int, outcome: Outcome) -> None:
        """On the event loop (or the engine reader's thread): the answer as a message (a stale one is dropped)."""
        self._child_ms.append(outcome.ms)  # how long the next keys' frames wait for their answers
        sent = self._last_sent
        if sent is not None and sent[0] == seq:
            self.post_message(EngineDone(seq, sent[1], outcome))

    def on_engine_lost(self, _message: EngineLost) -> None:
        proc, self._engine_proc = self._engine_proc, None
        if proc is not None:
            proc.close()
        if not self.answered:
            self._schedule_recompute()  # the question the child took with it, asked again on the thread

    @work(thread=True, exclusive=True, group="engine", exit_on_error=False)
    def _engine_worker(self, seq: int, req: Requirements) -> None:
        out = self.engine.run(req)
        self.post_message(EngineDone(seq, req, out))

    def on_engine_done(self, message: EngineDone) -> None:
        if self._want_engine_process:  # after the first answer (the thread's): start-up stays as fast
            self._want_engine_process = False  # once: after a death the thread keeps answering
            self._start_engine_process()
        if message.seq != self._seq or self._recompute_pending:
            return  # a newer change is on its way: this answer is already stale
        self._answered_seq = message.seq
        self.answer_for = message.req
        self._apply_outcome(message.outcome, message.seq)

    @property
    def recommendation(self) -> Recommendation | None:
        """The last valid answer in full (the Result screen, Compare, Export): from the engine's
        child the first time it is asked for, kept after that."""
        answer = self.answer
        return answer.rec if answer is not None else None

    def _fetch_full(self, seq: int, req: Requirements) -> Callable[[], Recommendation | None]:
        """How the child's answer ``seq`` (for ``req``) gets its full form: from the child, else
        computed here (the child died or skipped it; the engine is pure: the same answer)."""
        proc = self._engine_proc

        def fetch() -> Recommendation | None:
            rec = proc.full(seq) if proc is not None else None
            return rec if rec is not None else self.engine.run(req).rec

        return fetch

    def _apply_outcome(self, out: Outcome, seq: int = 0) -> None:
        self.last_engine_ms = out.ms
        if out.error is None and (out.rec is not None or out.brief is not None):
            from gpuwiz.tui.answer import Answer, Brief

            req = self.answer_for
            self.engine_fields, self.engine_reason = (), None
            self.engine_error = None
            if out.rec is not None:  # the thread's: whole already
                self.answer = Answer(Brief.of(out.rec, req), out.rec)
            else:
                assert out.brief is not None and req is not None
                self.answer = Answer(out.brief, fetch=self._fetch_full(seq, req))
        else:
            self.engine_fields, self.engine_reason = out.fields, out.reason
            self.engine_error = out.error
        self.answers += 1  # also for the same refusal again: a mark its field's edit cleared comes back

    @property
    def answered(self) -> bool:
        """True when the answer on screen belongs to the current requirements (tests wait for it)."""
        return not self._recompute_pending and self._answered_seq == self._seq

    def recompute_now(self) -> None:
        """Synchronous recompute on the calling thread (tests and the bench)."""
        self._recompute_pending = False
        self._seq += 1
        self._answered_seq = self._seq
        self.answer_for = self.requirements
        self._apply_outcome(self.engine.run(self.requirements))

    # ---- plain text for everything from outside --------------------------------------------------
    def notify(self, message: str, *, title: str = "", severity: Any = "information",
               timeout: float | None = None, markup: bool = False) -> None:
        """Notifications carry file names, paths and error messages: never read as markup."""
        super().notify(clean(_(message)), title=clean(_(title)), severity=severity, timeout=timeout, markup=False)

    def edit_field(self, spec: FieldSpec, raw: str) -> str | None:
        """Apply one field's text; returns why it is invalid, or None (requirements updated)."""
        from gpuwiz.tui.forms import apply_edit

        known: Collection[str] | None = (self.engine.region_ids() if spec.parse == "list" else
                                         (set(self.engine.gpu_ids()) or None) if spec.parse == "have" else None)
        new, error = apply_edit(self.requirements, spec, raw, known)
        if error is not None or new is None:
            return error or _("invalid value")
        edited = new != self.requirements  # the same value again (a step's reload) keeps the refusal
        if edited and ".".join(spec.path) in self.engine_fields:  # the field the engine refused is edited: its mark
            self.engine_fields = ()  # goes now (Next works at once); the engine's answer puts it back if needed
        self.requirements = new
        return None

    def engine_target(self) -> tuple[str, FieldSpec, str] | None:
        """(step id, form field, why) of the field the engine's refusal is about, if it is in the form."""
        if self.engine_error is None or not self.engine_fields or not self._core_ready:
            return None
        from gpuwiz.tui.forms import STEPS

        for dotted in self.engine_fields:
            path = tuple(dotted.split("."))
            for spec in STEPS:
                for f in spec.fields:
                    if f.path == path:
                        return spec.id, f, self.engine_reason or _("the engine cannot use this value")
        return None

    def engine_yaml_key(self) -> tuple[str, str] | None:
        """(step id, config key) of an engine refusal about a key the form has no field for
        (``model.top_k``, ``model.kv_heads`` ... set in an opened YAML file): the step of the key's
        section (model/training: Model, data: Data, ...) says so and blocks Next."""
        if self.engine_error is None or not self.engine_fields or not self._core_ready:
            return None
        if self.engine_target() is not None:
            return None  # a field of the form is about it: that field is marked
        from gpuwiz.tui.forms import STEPS

        key = self.engine_fields[0]
        section = key.split(".")[0]
        for spec in STEPS:
            if any(f.path[0] == section for f in spec.fields):
                return spec.id, key
        return None

    def engine_error_words(self) -> str | None:
        """The engine's refusal as the live panel says it: the field by its label, the reason in words."""
        target = self.engine_target()
        if target is None:
            return self.engine_error
        step, f, why = target
        return _("{field} ({step} step): {why}").format(field=_(f.label), step=_(STEP_TITLES[step]), why=why)

    def replace_requirements(self, req: Requirements, change: str = "") -> None:
        """Replace the whole requirements (open, restore, what-if): input screens reload."""
        self.ensure_core()
        self.last_change = change
        self.requirements = req
        self.revision += 1
        self._schedule_recompute()  # also when req equals the old one (its answer was forgotten)

    def _draft_soon(self) -> None:
        """The draft for an edit: written now when the last write is over DRAFT_EVERY_S old, else
        once that much time has passed (a burst of keys costs one write a second, not one a key).
        Quit, SIGHUP/SIGTERM, a step change and saving write it at once (flush_draft)."""
        if self._draft_timer is not None:
            return  # already due
        wait = self._draft_written_at + DRAFT_EVERY_S - time.monotonic()
        if wait <= 0:
            self.flush_draft()
        else:
            self._draft_timer = self.set_timer(wait, self.flush_draft, name="draft")

    def _cancel_draft_timer(self) -> None:
        timer, self._draft_timer = self._draft_timer, None
        if timer is not None:
            timer.stop()

    def flush_draft(self) -> None:
        from gpuwiz.tui import drafts

        self._cancel_draft_timer()
        if not self._core_ready:
            return
        self._draft_written_at = time.monotonic()
        try:
            if self.dirty:
                drafts.write_draft(self.state_dir, self.requirements, self.config_path, self.step)
            elif not self._keep_foreign_draft:
                drafts.clear_draft(self.state_dir)
        except OSError as exc:
            if not self._draft_error_shown:
                self._draft_error_shown = True
                self.notify(_("cannot autosave the draft to {dir}: {why}").format(
                    dir=self.state_dir, why=exc.strerror or exc), severity="warning")

    def restore_draft(self, draft: drafts.Draft) -> None:
        from gpuwiz.core.models import Requirements

        self.config_path = draft.source
        self._saved = Requirements() if draft.source is None else self._saved_from(draft.source)
        self.replace_requirements(draft.requirements, N_("restored draft"))
        self.dirty = self.requirements != self._saved
        self.flush_draft()
        self.goto(draft.step if draft.step in STEP_IDS else "model")
        self.notify(_("Draft restored. ctrl+s saves it."), title=_("Restored"))

    def _saved_from(self, path: str) -> Requirements:
        from gpuwiz.core.config_io import load_config
        from gpuwiz.core.models import Requirements

        try:
            return load_config(path)
        except (GpuwizError, OSError, RuntimeError, ValueError):  # as open_config: compare against a blank config
            return Requirements()

    # ---- navigation ------------------------------------------------------------------------------
    def goto(self, step: str) -> None:
        if step not in ("start", *STEP_IDS):
            return
        self.ensure_core()
        while len(self.screen_stack) > 2:  # close dialogs / compare first
            self.pop_screen()
        self.step = step
        self.switch_screen(step)
        self.call_after_refresh(self._refresh_chrome)
        self.flush_draft()

    def _modal_open(self) -> bool:
        return isinstance(self.screen, ModalScreen)

    def current_step_invalid(self) -> bool:
        if not self._core_ready:
            return False
        from gpuwiz.tui.screens.steps import StepScreen

        scr = self.screen
        return isinstance(scr, StepScreen) and bool(scr.invalid or scr.engine_marks or scr.yaml_mark)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action not in ("quit", "help") and getattr(self.screen, "too_small", False):
            return False  # keys do not act behind the "Terminal too small" notice
        if action in ("next", "back"):
            if self._core_ready:
                from gpuwiz.tui.screens.compare import CompareScreen

                if isinstance(self.screen, CompareScreen):
                    return action == "back"
            if self._modal_open():
                return False
            if action == "next":
                if self.step == "result":
                    return False
                if self.current_step_invalid():
                    return None
            if action == "back" and self.step == "start":
                return False
        return True

    def action_next(self) -> None:
        if self.step == "start":
            self.goto("model")
            return
        if self.step in STEP_IDS:
            i = STEP_IDS.index(self.step)
            if i + 1 < len(STEP_IDS):
                self.goto(STEP_IDS[i + 1])

    def action_back(self) -> None:  # type: ignore[override]  # App's is async; Textual runs sync actions alike
        self.ensure_core()
        from gpuwiz.tui.screens.compare import CompareScreen

        if isinstance(self.screen, CompareScreen):
            self.pop_screen()
            return
        if self.step in STEP_IDS:
            i = STEP_IDS.index(self.step)
            self.goto(STEP_IDS[i - 1] if i > 0 else "start")

    # ---- files -----------------------------------------------------------------------------------
    def open_config(self, path: str) -> str | None:
        """Load ``path`` as the current config; returns an error message or None."""
        from gpuwiz.core.config_io import load_config

        try:
            req = load_config(path)
        except GpuwizError as exc:
            return str(exc).splitlines()[0]
        except (OSError, RuntimeError, ValueError) as exc:  # never a traceback (resolve(), deep nesting, ...)
            return f"{path}: cannot open: {exc}"
        self._saved = req
        self.config_path = path
        self._fingerprint = _fingerprint(path)
        self._forget_answer()
        self.replace_requirements(req, _("opened {name}").format(name=Path(path).name))
        self.dirty = False
        self.flush_draft()
        from gpuwiz.tui import recent

        recent.remember(self.state_dir, path)
        return None

    def _forget_answer(self) -> None:
        """A new config starts with no answer and no pinned baseline (nothing is measured against
        the discarded one); the engine worker fills both in for the new requirements."""
        self.baseline = None
        self.last_change = ""
        self.engine_fields, self.engine_reason = (), None
        self.engine_error = None
        self.answer = None

    def load_example(self, name: str, text: str) -> str | None:
        from gpuwiz.core.config_io import loads_config
        from gpuwiz.core.models import Requirements

        try:
            req = loads_config(text, name)
        except GpuwizError as exc:
            return str(exc).splitlines()[0]
        self._saved = Requirements()
        self.config_path = None
        self._fingerprint = None
        self._forget_answer()
        self.replace_requirements(req, _("example {name}").format(name=name))
        return None

    def new_config(self) -> None:
        from gpuwiz.core.models import Requirements

        self._saved = Requirements()
        self.config_path = None
        self._fingerprint = None
        self._forget_answer()
        self.replace_requirements(Requirements(), N_("new config"))

    def save_to(self, path: str) -> str | None:
        from gpuwiz.core.config_io import dumps_config, leading_comments, loads_config
        from gpuwiz.core.yamlio import atomic_write_text, read_text

        # the opening comment lines of the file replaced, or (saved as a new file) of the config opened, stay
        # (other comments do not)
        header = None
        for where in (path, self.config_path):
            if where and os.path.isfile(where):
                try:
                    header = leading_comments(read_text(where, what="config file")) or None
                except GpuwizError:
                    header = None  # unreadable (too big, not UTF-8, gone): gpuwiz's own header
                break
        text = dumps_config(self.requirements, header)
        try:  # never write a file this wizard could not open again
            back = loads_config(text, path)
        except GpuwizError as exc:
            return _("not saved: the file would not open again: {why}").format(why=str(exc).splitlines()[0])
        if back != self.requirements:
            return _("not saved: the file would not read back as what is on screen")
        if self._draft_timer is not None:
            self.flush_draft()  # an edit still waiting for its draft write: on disk first, in case the save fails
        try:
            atomic_write_text(path, text)
        except GpuwizError as exc:
            return str(exc).splitlines()[0]
        except OSError as exc:
            return _("{path}: cannot save: {why}").format(path=path, why=exc.strerror or exc)
        self._saved = self.requirements
        self.config_path = path
        self._fingerprint = _fingerprint(path)
        self.dirty = False
        self.flush_draft()
        from gpuwiz.tui import recent

        recent.remember(self.state_dir, path)
        self.notify(_("Saved {path}").format(path=path), title="Saved")
        return None

    def first_invalid_field(self) -> tuple[str, FieldSpec, str] | None:
        """(step id, field, why) of the first field whose text on screen is not accepted."""
        if not self._core_ready:
            return None
        from gpuwiz.tui.forms import STEPS
        from gpuwiz.tui.screens.steps import StepScreen

        for spec in STEPS:
            scr = self.get_screen(spec.id)
            if isinstance(scr, StepScreen) and scr.invalid:
                for f in spec.fields:
                    if f.id in scr.invalid:
                        return spec.id, f, scr.invalid[f.id]
        return None

    def _warn_incomplete(self) -> None:
        """Saving a config the engine refuses (no data size yet, ...) is allowed -- it is valid YAML
        that reopens, and the user may be saving half-way -- but says what is still missing."""
        target = self.engine_target()
        if target is not None:
            _step, f, why = target
            self.notify(_("{label}: {why}. The config is saved without it.").format(label=_(f.label), why=why),
                        title=_("Incomplete"), severity="warning", timeout=8)

    def _refuse_invalid(self) -> bool:
        """True (and the field shown, named and focused) when a field on screen is invalid: saving
        then would write the last valid value instead of what the user sees."""
        bad = self.first_invalid_field()
        if bad is None:
            return False
        step, f, why = bad
        self.notify(_("{label} is not valid: {why}. Fix it first; nothing was written.").format(
            label=_(f.label), why=why), title=_("Not saved"), severity="error", timeout=8)
        from gpuwiz.tui.screens.steps import StepScreen

        if self.step != step or len(self.screen_stack) > 2:
            self.goto(step)
        scr = self.get_screen(step)
        if isinstance(scr, StepScreen):
            self.call_after_refresh(scr.focus_field, f)
        return True

    def action_save(self, then: Callable[[], None] | None = None) -> None:
        if self._refuse_invalid():
            return
        self._warn_incomplete()
        if self.config_path:
            path = self.config_path
            if self._fingerprint is not None and _fingerprint(path) != self._fingerprint:
                from gpuwiz.tui.dialogs.confirm import ChoiceDialog

                def done(choice: str | None) -> None:
                    if choice == "overwrite":
                        self._save_then(path, then)
                    elif choice == "save-as":
                        self.action_save_as(then)

                self.push_screen(ChoiceDialog(
                    "File changed on disk",
                    _("{path} was changed since gpuwiz opened it. Overwrite those changes?").format(path=path),
                    [("save-as", N_("Save as…")), ("overwrite", N_("Overwrite")), ("cancel", N_("Cancel"))],
                    default="save-as"),
                    done)
                return
            self._save_then(path, then)
        else:
            self.action_save_as(then)

    def _save_then(self, path: str, then: Callable[[], None] | None) -> None:
        error = self.save_to(path)
        if error:
            self.notify(error, title=_("Not saved"), severity="error", timeout=10)
            return
        if then:
            then()

    def action_save_as(self, then: Callable[[], None] | None = None) -> None:
        from gpuwiz.tui.dialogs.path_dialog import PathDialog

        if self._refuse_invalid():
            return
        self._warn_incomplete()
        initial = self.config_path or "gpuwiz.yaml"

        def done(path: str | None) -> None:
            if path and then:
                then()

        def ask(path: str) -> bool:  # the config being edited is not "another file"
            return not (self.config_path and _same_file(path, self.config_path))

        self.push_screen(PathDialog("Save config as", initial, self.save_to, verb="Save", confirm_overwrite=ask,
                                    hint="YAML; written atomically (the old file survives any failure)."), done)

    def _guard_unsaved(self, then: Callable[[], None], what: str) -> None:
        if not self.dirty:
            then()
            return
        from gpuwiz.tui.dialogs.confirm import ChoiceDialog

        def done(choice: str | None) -> None:
            if choice == "save":
                self.action_save(then)
            elif choice == "discard":
                then()

        self.push_screen(
            ChoiceDialog("Unsaved changes", _("Save your changes before you {what}?").format(what=_(what)),
                         [("save", N_("Save")), ("discard", N_("Discard")), ("cancel", N_("Cancel"))], default="save"),
            done,
        )

    def action_open(self) -> None:
        from gpuwiz.tui.dialogs.path_dialog import PathDialog

        def ask() -> None:
            def done(path: str | None) -> None:
                if path:
                    self.goto("result")

            self.push_screen(PathDialog("Open config", self.config_path or "", self.open_config, verb="Open"), done)

        self._guard_unsaved(ask, N_("open another config"))

    async def action_quit(self) -> None:
        from gpuwiz.tui import drafts

        def leave() -> None:
            self._cancel_draft_timer()  # the draft is cleared now, never written again after
            if self.dirty or not self._keep_foreign_draft:
                drafts.clear_draft(self.state_dir)
            self.exit()

        if not self.dirty:
            leave()
            return
        from gpuwiz.tui.dialogs.confirm import ChoiceDialog

        def done(choice: str | None) -> None:
            if choice == "save":
                self.action_save(leave)
            elif choice == "discard":
                leave()

        self.push_screen(
            ChoiceDialog("Quit gpuwiz?", "You have unsaved changes.",
                         [("save", N_("Save and quit")), ("discard", N_("Quit without saving")),
                          ("cancel", N_("Cancel"))],
                         default="cancel"),
            done,
        )

    # ---- results: export, copy, compare ------------------------------------------------------------
    def markdown(self) -> str | None:
        rec = self.recommendation
        if rec is None:
            self.notify("No answer yet to export.", severity="warning")
            return None
        try:
            return self.engine.markdown(rec, self.requirements)
        except Exception as exc:  # noqa: BLE001 - the TUI's boundary to the report renderer: a bug there is a notice
            self.notify(_("cannot render the report: {why}").format(why=exc), severity="error")
            return None

    def export_to(self, path: str, text: str) -> str | None:
        from gpuwiz.core.yamlio import atomic_write_text

        if self.config_path and _same_file(path, self.config_path):
            return _("{path} is the config itself; choose another file for the report").format(path=path)
        try:
            atomic_write_text(path, text)
        except GpuwizError as exc:
            return str(exc).splitlines()[0]
        self.notify(_("Wrote {path}").format(path=path), title="Exported")
        return None

    def export_path(self) -> str:
        """Where Export proposes to write: next to the config (``a/team.yaml`` → ``a/team-recommendation.md``)."""
        if self.config_path:
            p = Path(self.config_path)
            return str(p.with_name(p.stem + "-recommendation.md"))
        return "gpuwiz-recommendation.md"

    def action_export(self) -> None:
        from gpuwiz.tui.dialogs.path_dialog import PathDialog

        text = self.markdown()
        if text is None:
            return
        self.push_screen(PathDialog("Export recommendation (Markdown)", self.export_path(),
                                    lambda p: self.export_to(p, text), verb="Export", confirm_overwrite=True))

    def action_copy(self) -> None:
        text = self.markdown()
        if text is None:
            return
        self.copy_to_clipboard(text)
        self.notify("Copied the Markdown report (OSC 52). If nothing arrived, your terminal ignores OSC 52: "
                    "use export (e) instead. In tmux: set -g set-clipboard on.", title="Copied", timeout=6)

    def pin_baseline(self) -> None:
        if self.recommendation is not None:
            self.baseline = (self.requirements, self.recommendation)

    def action_compare(self) -> None:
        from gpuwiz.tui.screens.compare import CompareScreen, Side

        if self.recommendation is None:
            self.notify("No answer yet to compare.", severity="warning")
            return
        if self.baseline is None:
            self.pin_baseline()
        assert self.baseline is not None
        left = Side("baseline", self.baseline[0], self.baseline[1], None)
        right = Side("now", self.requirements, self.recommendation, None)
        self.push_screen(CompareScreen(left, right))

    def action_compare_files(self) -> None:
        from gpuwiz.tui.screens.compare import CompareScreen, Side

        if self.recommendation is None:
            return
        right = Side("now", self.requirements, self.recommendation, None)
        left = Side("baseline", *(self.baseline or (self.requirements, self.recommendation)), None)
        screen = CompareScreen(left, right)
        self.push_screen(screen)
        screen.action_load("left")

    def side_from_file(self, path: str) -> Any:
        """(Requirements, Recommendation) for a config file, or an error string."""
        from gpuwiz.core.config_io import load_config

        try:
            req = load_config(path)
        except GpuwizError as exc:
            return str(exc).splitlines()[0]
        out = self.engine.run(req)
        if out.rec is None:
            return out.error or _("no answer")
        return req, out.rec

    # ---- help and the command palette -----------------------------------------------------------------
    def help_rows(self) -> list[tuple[str, str, str]]:
        rows: list[tuple[str, str, str]] = []
        seen: set[tuple[str, str]] = set()

        def add(bindings: Iterable[Any], where: str) -> None:
            for b in bindings:
                if not isinstance(b, Binding) or not b.description:
                    continue
                key = self.get_key_display(b)
                if b.id and b.id in self._keymap:  # a key the user chose in settings.yaml
                    key = self._keymap[b.id]
                desc = self.ACTION_NAMES.get(b.id or "") or FULL_NAMES.get(b.id or "", b.description)
                if (key, desc) in seen:
                    continue
                seen.add((key, desc))
                rows.append((key, desc, where))

        from gpuwiz.tui.screens.result import ResultScreen
        from gpuwiz.tui.screens.steps import StepScreen

        add(self.BINDINGS, N_("everywhere"))
        rows.append(("ctrl+p", N_("Command palette: every step and action"), N_("everywhere")))
        rows.append(("tab / shift+tab", N_("Next / previous field"), N_("input steps")))
        rows.append(("enter", N_("Next field; on the last field, the next step"), N_("input steps")))
        add(StepScreen.BINDINGS, N_("input steps"))
        add(ResultScreen.BINDINGS, N_("result"))
        from gpuwiz.tui.screens.compare import CompareScreen

        add(CompareScreen.BINDINGS, N_("compare"))
        return rows

    def action_help(self) -> None:
        from gpuwiz.tui.dialogs.help import HelpScreen

        if isinstance(self.screen, HelpScreen):
            return
        self.push_screen(HelpScreen(self.help_rows()))

    def _result_action(self, name: str) -> Callable[[], None]:
        def run() -> None:
            from gpuwiz.tui.screens.result import ResultScreen

            if self.step != "result":
                self.goto("result")
            else:
                self._close_overlays()
            scr = self.get_screen("result")
            assert isinstance(scr, ResultScreen)
            self.call_after_refresh(getattr(scr, f"action_{name}"))

        return run

    def _close_overlays(self) -> None:
        """Close dialogs and the compare view over the current step (a command from the palette
        acts on the wizard, not on top of whatever dialog the palette was opened over)."""
        while len(self.screen_stack) > 2:
            self.pop_screen()

    def _command(self, fn: Callable[[], Any]) -> Callable[[], None]:
        def run() -> None:
            self._close_overlays()
            fn()

        return run

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        cmd = self._command
        for sid in ("start", *STEP_IDS):
            title = _("Start screen") if sid == "start" else _(STEP_TITLES[sid])
            yield SystemCommand(_("Go to: {title}").format(title=title), _("Show the {title} step").format(title=title),
                                lambda s=sid: self.goto(s))
        yield SystemCommand(_("Save"), _("Save the config (ctrl+s)"), cmd(self.action_save))
        yield SystemCommand(_("Save as…"), _("Save the config to a new path (f2)"), cmd(self.action_save_as))
        yield SystemCommand(_("Open config…"), _("Open a YAML config (ctrl+o)"), cmd(self.action_open))
        yield SystemCommand(_("Export Markdown…"), _("Write the recommendation as Markdown"), cmd(self.action_export))
        yield SystemCommand(_("Copy Markdown"), _("Copy the recommendation to the clipboard (OSC 52)"),
                            self.action_copy)
        yield SystemCommand(_("Compare: baseline vs now"), _("Side by side, with the differences"),
                            cmd(self.action_compare))
        yield SystemCommand(_("Compare with a config file…"), _("Load another config as the left side"),
                            cmd(self.action_compare_files))
        yield SystemCommand(_("Help"), _("All keys (f1)"), self.action_help)
        from gpuwiz.tui.screens.result import WHATIF_COMMANDS

        for name, title, help_text in WHATIF_COMMANDS:
            yield SystemCommand(_("What-if: {title}").format(title=_(title)), _(help_text), self._result_action(name))
        yield from super().get_system_commands(screen)


def _fingerprint(path: str) -> str | None:
    """sha256 of the file's bytes (None when it cannot be read): "changed on disk since opened"."""
    import hashlib

    from gpuwiz.core.yamlio import read_file_bytes

    try:  # the one safe reader: a config swapped for a FIFO since it was opened must not hang ctrl+s
        return hashlib.sha256(read_file_bytes(path, max_bytes=16 * 2**20, what="config")).hexdigest()
    except GpuwizError:
        return None


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        pass
    try:  # a looping symlink makes resolve() raise RuntimeError (found by the hostile-path dialog test)
        return Path(a).resolve() == Path(b).resolve()
    except (OSError, RuntimeError, ValueError):
        return os.path.abspath(a) == os.path.abspath(b)


# full action names for the help screen, by binding id (the footer keeps its short labels)
FULL_NAMES: dict[str, str] = {
    "whatif-gpu": N_("What-if: the next GPU type (the count may change to one that fits)"),
    "whatif-gpu-prev": N_("What-if: the previous GPU type"),
    "whatif-count-up": N_("What-if: one step more GPUs"), "whatif-count-down": N_("What-if: one step fewer GPUs"),
    "whatif-method": N_("What-if: cycle the training method (full / LoRA / QLoRA)"),
    "whatif-precision": N_("What-if: cycle the precision (bf16 / fp8 / fp16 / tf32 / fp32)"),
    "whatif-data-double": N_("What-if: double the data"), "whatif-data-half": N_("What-if: halve the data"),
    "whatif-deadline-later": N_("What-if: a later deadline"),
    "whatif-deadline-sooner": N_("What-if: a sooner deadline"),
    "whatif-mode": N_("What-if: cycle rent / buy / either"), "whatif-auto": N_("What-if: automatic hardware again"),
    "whatif-pin": N_("Pin the current answer as the baseline"), "whatif-reset": N_("Back to the pinned baseline"),
    "compare": N_("Compare the baseline with now"), "export": N_("Export the recommendation as Markdown"),
    "copy": N_("Copy the Markdown report to the clipboard"), "help-alt": N_("Help: this list of keys"),
    "tab-1": N_("Result tab 1: Build"), "tab-2": N_("Result tab 2: Memory"), "tab-3": N_("Result tab 3: Options"),
    "tab-4": N_("Result tab 4: Rent vs buy"), "tab-5": N_("Result tab 5: Pitfalls"),
    "compare-close": N_("Close the comparison"), "compare-left": N_("Load the left side from a config file"),
    "compare-right": N_("Load the right side from a config file"), "compare-swap": N_("Swap the two sides"),
}

_PAGE_ACTIONS = ("page_down", "page_up")


def _page_to_undrawn_list(action: str, target: Any) -> bool:
    from textual.command import CommandList, CommandPalette
    from textual.widgets import OptionList

    lst: OptionList | None = None
    if action in _PAGE_ACTIONS and isinstance(target, OptionList):
        lst = target
    elif isinstance(target, CommandPalette) and action.replace('"', "'") in (
            "command_list('page_down')", "command_list('page_up')"):
        lst = target.query(CommandList).first() if target.query(CommandList) else None
    return lst is not None and lst.option_count > 0 and not lst.scrollable_content_region


def create_app(
    config_path: str | os.PathLike[str] | None = None,
    *,
    catalog_overlay: str | os.PathLike[str] | None = None,
    state_dir: str | os.PathLike[str] | None = None,
    no_mouse: bool = False,
    theme: str | None = None,
    handle_signals: bool = True,
    offer_restore: bool = True,
    engine_process: bool = False,
) -> GpuwizApp:
    """Build the wizard. Raises GpuwizError for an unknown theme.

    ``config_path`` opens that config (errors are shown in the app); ``catalog_overlay`` merges a
    user catalog; ``state_dir`` overrides where the draft lives (default: ``$GPUWIZ_STATE_DIR`` or
    the platform's user state dir); ``no_mouse`` makes ``run()`` default to ``mouse=False``;
    ``engine_process`` runs the engine in a child process (the command line's default; the thread
    in this process answers until it is ready, and if it dies);
    ``theme`` is any Textual theme name (``ansi-dark``, ``ansi-light``, ``textual-dark`` …).
    """
    from gpuwiz.tui import cjk

    cjk.install()  # Chinese wraps between characters, never before 、。，
    app = GpuwizApp(
        config_path=os.fspath(config_path) if config_path is not None else None,
        catalog_overlay=catalog_overlay,
        state_dir=state_dir,
        no_mouse=no_mouse,
        handle_signals=handle_signals,
        offer_restore=offer_restore,
        engine_process=engine_process,
    )
    if theme is not None:
        names = sorted(app.available_themes)
        if theme not in names:
            from gpuwiz.core.catalog import did_you_mean

            raise GpuwizError(f"--theme: unknown theme {theme!r}{did_you_mean(theme, names)}; "
                              f"choose one of {', '.join(names)}")
        app.theme = theme
    return app
