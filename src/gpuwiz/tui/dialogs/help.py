"""The help screen: every key of the app and of the screen it was opened from."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Label, Static

from gpuwiz.i18n import N_, _
from gpuwiz.tui.dialogs.base import Dialog
from gpuwiz.tui.plain import plain

INTRO = N_(
    "gpuwiz asks what you train, on what data, how often and whether you rent or buy, and answers "
    "with a build. Every input step has a live answer on the right. Type human numbers: 2T, 1.5B, "
    "150 GB. ctrl+p opens the command palette (every step and action). alt+←/alt+→ (or pgup/pgdn) go back "
    "and on; inside tmux use those, not ctrl+b. Keys can be changed by id in settings.yaml."
)


KEY_WORDS = {"escape": "esc", "question_mark": "?", "left_square_bracket": "[", "right_square_bracket": "]",
             "plus": "+", "minus": "-"}


def shown_keys(key: str) -> str:
    """A binding's keys as the help lists them: ``escape,q`` is ``esc / q``."""
    return " / ".join(KEY_WORDS.get(k.strip(), k.strip()) for k in key.split(",") if k.strip()) or key


class HelpScreen(Dialog[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,f1,q,question_mark", "close", "Close", id="help-close"),
    ]

    def __init__(self, rows: list[tuple[str, str, str]]) -> None:
        super().__init__(classes="dialog-screen")
        self._rows = rows

    def compose(self) -> ComposeResult:
        table = Table(box=None, expand=True, show_header=True, header_style="bold")
        table.add_column(_("Key"), no_wrap=True)
        table.add_column(_("Action"))
        table.add_column(_("Where"), style="dim", no_wrap=True)
        for key, desc, where in self._rows:
            table.add_row(plain(shown_keys(key)), plain(_(desc)), plain(_(where)))
        with Vertical(classes="dialog help"):
            yield Label(_("Keys"), classes="dialog-title")
            with VerticalScroll():
                yield Static(_(INTRO), classes="dialog-message")
                yield Static(table, id="help-table")
            yield Static(_("esc / f1 / q closes"), classes="dialog-hint")

    def action_close(self) -> None:
        self.dismiss(None)
