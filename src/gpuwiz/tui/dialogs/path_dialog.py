"""Ask for a file path (open / save as / export). Returns the path, or None when cancelled.

The action runs inside the dialog: if it fails (bad YAML, unwritable folder) the error is shown in
the dialog and the user can fix the path without losing what they typed.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Input, Label, Static

from gpuwiz.i18n import N_, _
from gpuwiz.tui.dialogs.base import Dialog
from gpuwiz.tui.plain import plain

MAX_SHOWN = 300  # an error naming a 5,000-character path would push its reason off the dialog


def shorten(text: str, limit: int = MAX_SHOWN) -> str:
    """``text`` cut in the middle when longer than ``limit`` (the reason at its end stays visible)."""
    if len(text) <= limit:
        return text
    head = limit // 3
    return f"{text[:head]} … {text[len(text) - (limit - head - 3):]}"


class PathDialog(Dialog[str | None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="dialog-cancel")]

    def __init__(self, title: str, initial: str = "", action: Callable[[str], str | None] | None = None,
                 verb: str = "OK", hint: str = "",
                 confirm_overwrite: bool | Callable[[str], bool] = False) -> None:
        super().__init__(classes="dialog-screen")
        self._confirm_overwrite = confirm_overwrite
        self._title = title
        self._initial = initial
        self._action = action
        self._verb = verb
        self._hint = hint

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(plain(_(self._title)), classes="dialog-title")
            if self._hint:
                yield Static(plain(_(self._hint)), classes="dialog-hint")
            yield Input(self._initial, id="path", placeholder=_("path/to/file.yaml"))
            yield Static("", id="path-error", classes="field-error")
            with Horizontal(classes="dialog-buttons"):
                yield Button(_(self._verb), id="ok", variant="primary")
                yield Button(_("Cancel"), id="cancel")

    def on_mount(self) -> None:
        inp = self.query_one("#path", Input)
        inp.focus()
        inp.cursor_position = len(inp.value)

    @on(Input.Submitted, "#path")
    @on(Button.Pressed, "#ok")
    def _submit(self) -> None:
        if self.dismissed:  # a second Enter of a burst: the first one already answered
            return
        path = self.query_one("#path", Input).value.strip()
        err_box = self.query_one("#path-error", Static)
        if not path:
            err_box.update(_("give a file path"))
            return
        ask = self._confirm_overwrite(path) if callable(self._confirm_overwrite) else self._confirm_overwrite
        if ask and os.path.lexists(path):
            if os.path.isdir(path):
                err_box.update(plain(shorten(_("{path} is a folder; give a file name").format(path=path))))
                return
            from gpuwiz.core.errors import GpuwizError
            from gpuwiz.core.yamlio import check_output_target

            try:  # a link, FIFO or device is refused at once: "Replace it?" would only be refused after
                check_output_target(path)
            except GpuwizError as exc:
                err_box.update(plain(shorten(str(exc))))
                return
            from gpuwiz.tui.dialogs.confirm import ChoiceDialog

            def answered(choice: str | None) -> None:
                if choice == "replace":
                    self._run(path)

            self.app.push_screen(ChoiceDialog("Replace file?",
                                              _("{path} already exists. Replace it?").format(path=path),
                                              [("cancel", N_("Cancel")), ("replace", N_("Replace"))], default="cancel"),
                                 answered)
            return
        self._run(path)

    def _run(self, path: str) -> None:
        if self.dismissed:
            return
        if self._action is not None:
            error = self._action(path)
            if error:
                self.query_one("#path-error", Static).update(plain(shorten(error)))
                return
        self.dismiss(path)

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)
