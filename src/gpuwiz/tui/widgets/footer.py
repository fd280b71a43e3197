"""Textual's Footer with each key's description in the interface language.

Key descriptions are written in English where the bindings are declared (class attributes, built
before the language is chosen); here they are looked up in the catalog as the footer draws them.
"""

from __future__ import annotations

from textual.app import ComposeResult
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
