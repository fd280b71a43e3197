"""Textual's Footer with each key's description in the interface language.

Key descriptions are written in English where the bindings are declared (class attributes, built
before the language is chosen); here they are looked up in the catalog as the footer draws them.
"""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from gpuwiz.i18n import _


class LocalFooter(Footer):
    def compose(self) -> ComposeResult:
        for widget in super().compose():
            if isinstance(widget, FooterKey):
                # the class its compact watcher sets on mount, set now: that watcher then changes
                # nothing (otherwise a style update per key, ~0.5 ms each, ~30 ms to open a config)
                widget.set_class(self.compact, "-compact", update=False)
                widget.description = _(widget.description) if widget.description else ""
                if isinstance(widget.tooltip, str) and widget.tooltip:
                    widget.tooltip = _(widget.tooltip)
            yield widget

    # Every refresh_bindings (focus, screen stack, resize, a reactive with bindings=True) queues a
    # full rebuild of the keys (~8-25 ms each); while a config opens five pile up and run after the
    # answer arrives. One rebuild is queued at a time, and none when the keys would come out the same.
    _rebuild_queued = False
    _built_from: tuple[object, ...] | None = None

    def bindings_changed(self, screen: Screen[Any]) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus:
            return
        if self.is_attached and screen is self.screen and not self._rebuild_queued:
            self._rebuild_queued = True
            self.call_after_refresh(self._rebuild)

    async def _rebuild(self) -> None:
        self._rebuild_queued = False
        if not self.is_attached:
            return
        keys = self._keys_shown()
        if keys == self._built_from:
            return
        self._built_from = keys
        await self.recompose()

    def _keys_shown(self) -> tuple[object, ...]:
        """What compose reads: each binding's key, display, words, action, state and group."""
        app = self.app
        return (self.compact, self.show_command_palette, tuple(
            (key, b.key, app.get_key_display(b), b.description, b.action, b.show, enabled, tooltip, b.group)
            for key, (_node, b, enabled, tooltip) in self.screen.active_bindings.items()))
