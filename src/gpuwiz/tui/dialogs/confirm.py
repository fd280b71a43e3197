"""A question with a few labelled answers; dismisses with the chosen answer's id (or "cancel")."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Label, Static

from gpuwiz.i18n import _
from gpuwiz.tui.dialogs.base import Dialog
from gpuwiz.tui.plain import plain


class ChoiceDialog(Dialog[str]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "choose('cancel')", "Cancel", id="dialog-cancel"),
        Binding("left", "app.focus_previous", show=False),
        Binding("right", "app.focus_next", show=False),
    ]

    def __init__(self, title: str, message: str, choices: list[tuple[str, str]], default: str | None = None) -> None:
        super().__init__(classes="dialog-screen")
        self._title = title
        self._message = message
        self._choices = choices
        self._default = default or choices[0][0]

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(plain(_(self._title)), classes="dialog-title")
            yield Static(plain(_(self._message)), classes="dialog-message")
            with Horizontal(classes="dialog-buttons"):
                for cid, label in self._choices:
                    yield Button(plain(_(label)), id=f"choice-{cid}",
                                 variant="primary" if cid == self._default else "default")

    def on_mount(self) -> None:
        self.query_one(f"#choice-{self._default}", Button).focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        if event.button.id and event.button.id.startswith("choice-"):
            self.dismiss(event.button.id.removeprefix("choice-"))

    def action_choose(self, cid: str) -> None:
        self.dismiss(cid)
