"""The command palette, hardened against keys that arrive in one burst (Textual 8.2.8).

ctrl+p is a priority binding, so it runs as soon as it is read, while an Esc read just before it is
still queued at the focused widget: that Esc then closes the palette it meets, right after it opened.
A character typed in the same burst reaches the palette's input after that, and Textual starts a new
search worker on a palette whose widgets are being removed; the worker fails (NoMatches on
CommandList) and takes the app down. Here a closing palette starts no more searches.
"""

from __future__ import annotations

from typing import Any

from textual.app import ScreenError
from textual.command import CommandList, CommandPalette


class SafeCommandPalette(CommandPalette):
    def _palette_gone(self) -> bool:
        try:
            return self.app.screen is not self or not self.query(CommandList)
        except (RuntimeError, ScreenError):  # no app (NoActiveAppError is a RuntimeError) / no screen any more
            return True

    def _gather_commands(self, search_value: str) -> Any:
        if self._palette_gone():
            return None
        return super()._gather_commands(search_value)
