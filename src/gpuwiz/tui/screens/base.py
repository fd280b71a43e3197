"""Every full screen: the step bar on top, the body, the Footer, and the too-small notice."""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING, cast

from textual.app import ComposeResult
from textual.containers import Container
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widget import Widget

from gpuwiz.tui.compositor import SpanCompositor
from gpuwiz.tui.frames import FrameTimer
from gpuwiz.tui.widgets.chrome import StepBar, TooSmall
from gpuwiz.tui.widgets.footer import LocalFooter

if TYPE_CHECKING:
    from gpuwiz.tui.app import GpuwizApp


class ReleaseFrame(Message):
    """Posted by a screen to itself after the Updates of an engine answer: the held frame may go."""


class WizScreen(Screen[None]):
    STEP = "start"
    LIVES_WITH_APP = True
    _focus_before_small: Widget | None = None  # focus taken away behind the too-small notice

    _frame_timer: Timer | None = None
    step_bar: StepBar | None = None  # the bar on top (set in compose)

    def __init__(self, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._compositor = SpanCompositor()  # partial frames ask only the changed lines (gpuwiz.tui.compositor)

    @property
    def wiz(self) -> GpuwizApp:
        return cast("GpuwizApp", self.app)

    @property
    def _update_timer(self) -> Timer:
        """Textual's frame clock, as a FrameTimer: a change (the live panel's answer) is painted as
        soon as the last frame is one interval old, not on the slot after next (gpuwiz.tui.frames)."""
        if self._frame_timer is None:
            from textual import screen as textual_screen

            timer = FrameTimer(self, textual_screen.UPDATE_PERIOD, name="screen_update",
                               callback=self._on_timer_update, pause=True)
            timer._start()
            self._timers.add(timer)
            self._frame_timer = timer
        return self._frame_timer

    def hold_frame(self, seconds: float | None = None) -> None:
        """The next frame waits a few ms for the engine's answer (gpuwiz.tui.frames.FrameTimer.hold):
        a typed key and its live panel in one frame."""
        timer = self._update_timer
        if isinstance(timer, FrameTimer):
            timer.hold(seconds)

    def release_frame(self, *changed: Widget) -> None:
        """The answer is applied: ``changed`` (the widgets it repainted) go to the frame now and the
        held frame with them, in that order. A widget that only needs a repaint is handed to this
        screen's next frame here, as Textual's ``Update`` message would be a few message hops later
        (``Screen._on_update``), and the frame is released at once; one that needs more (new styles,
        a layout) takes Textual's own way, with the release as a message behind its ``Update``."""
        timer = self._frame_timer
        if not isinstance(timer, FrameTimer) or not timer.holding:
            return
        direct = True
        for widget in changed:
            if not widget._repaint_required:
                continue
            if (widget._refresh_styles_required or widget._scroll_required or widget._layout_required
                    or widget._recompose_required or not widget.display or widget.screen is not self):
                widget._check_refresh()  # Textual's own idle step: posts the widget's Update to this screen
                direct = False
                continue
            widget._repaint_required = False
            if self in self._compositor:
                self._dirty_widgets.add(widget)
        if direct:
            self.check_idle()  # the screen's idle step resumes its frame clock for the dirty widgets
            timer.release()
        else:
            self.post_message(ReleaseFrame())

    def on_release_frame(self, _message: ReleaseFrame) -> None:
        timer = self._frame_timer
        if isinstance(timer, FrameTimer):
            timer.release()

    def compose(self) -> ComposeResult:
        bar = StepBar(id="stepbar")
        bar.current = self.STEP
        self.step_bar = bar
        yield bar
        yield TooSmall()
        with Container(id="body"):
            yield from self.compose_body()
        yield LocalFooter(compact=True, show_command_palette=False)

    def compose_body(self) -> ComposeResult:
        yield from ()

    def on_mount(self) -> None:
        # The installed screens live as long as the app: once built, keep the collector off them
        # (see GpuwizApp._startup). Not for short-lived screens (compare): frozen cycles are never freed.
        if self.LIVES_WITH_APP:
            self.call_after_refresh(gc.freeze)

    @property
    def too_small(self) -> bool:
        from gpuwiz.tui.widgets.chrome import MIN_HEIGHT, MIN_WIDTH

        w, h = self.app.size
        return w < MIN_WIDTH or h < MIN_HEIGHT

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Behind the "Terminal too small" notice no key acts (only ctrl+q, an App binding, does)."""
        if self.too_small:
            return False
        return super().check_action(action, parameters)

    def on_resize(self) -> None:
        # no typing into a field the notice hides: focus comes back when the terminal is big enough
        if self.too_small:
            if self.focused is not None:
                self._focus_before_small = self.focused
                self.set_focus(None)
        else:
            w = self._focus_before_small
            if w is not None and self.focused is None and w.is_attached:
                self.set_focus(w)
            self._focus_before_small = None
        self.refresh_bindings()

    def on_screen_resume(self) -> None:
        bar = self.step_bar or self.query_one(StepBar)
        bar.file_label = self.wiz.file_label
        bar.dirty = self.wiz.dirty
