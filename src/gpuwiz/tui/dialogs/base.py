"""The base of every dialog: a modal screen that can be dismissed once.

Keys arrive in bursts (a double tap, key repeat, or several keys in one read over ssh). A second
Enter or Esc that reaches a dialog after it has been dismissed (it is still on the stack until the
pop runs) would otherwise call ``dismiss`` again, and ``App.pop_screen`` would pop the screen
*under* the dialog. Here a second dismiss, or a dismiss of a screen that is not on top, is ignored.
"""

from __future__ import annotations

from typing import TypeVar

from textual.await_complete import AwaitComplete
from textual.screen import ModalScreen, Screen

T = TypeVar("T")


def dismiss_once(screen: Screen[T], result: T | None, parent: type[Screen[T]]) -> AwaitComplete:
    """Dismiss ``screen`` unless it was dismissed already or is not the active screen."""
    if getattr(screen, "_gpuwiz_dismissed", False) or screen.app.screen is not screen:
        return AwaitComplete.nothing()  # type: ignore[no-untyped-call, no-any-return]  # untyped in Textual 8.2.8
    screen._gpuwiz_dismissed = True  # type: ignore[attr-defined]
    return parent.dismiss(screen, result)


class Dialog(ModalScreen[T]):
    """A modal screen whose ``dismiss`` runs at most once."""

    @property
    def dismissed(self) -> bool:
        return bool(getattr(self, "_gpuwiz_dismissed", False))

    def dismiss(self, result: T | None = None) -> AwaitComplete:
        return dismiss_once(self, result, ModalScreen)
