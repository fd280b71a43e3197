"""The one way text from outside reaches the screen: as plain text, never as markup.

Config values, model names, file paths, key names, error messages and draft contents can hold
``[bold]``, ``[@click=...]`` or terminal escape sequences. Textual and Rich read ``[...]`` in a plain
``str`` as markup (a crash on ``[/]``, a clickable action on ``[@click=...]``), and a raw ESC would
reach the terminal. Everything from outside goes through ``plain`` (a Rich ``Text``, which is never
parsed) or ``escaped`` (for the few Textual places that only take markup strings: border titles).
Control characters are shown as visible escapes (``\\x1b``) so what the user sees is what the file holds.
"""

from __future__ import annotations

import re
from typing import Any

from rich.table import Table
from rich.text import Text

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def clean(value: object) -> str:
    """``str(value)`` with control characters (ESC, CSI, BEL, bidi overrides …) made visible."""
    s = value if isinstance(value, str) else str(value)
    return _CONTROL.sub(lambda mt: mt.group(0).encode("unicode_escape").decode("ascii"), s)


def plain(value: object, style: str = "") -> Text:
    """Outside text as a Rich ``Text``: shown literally, whatever brackets it holds."""
    return Text(clean(value), style=style)


def escaped(value: object) -> str:
    """Outside text for a place that parses Textual markup (border titles): brackets escaped."""
    from textual.markup import escape

    return escape(clean(value).replace("\n", " "))


def add_row(table: Table, *cells: Any, **kw: Any) -> None:
    """``table.add_row`` with every ``str`` cell as plain text (a str cell would be read as markup)."""
    table.add_row(*(plain(c) if isinstance(c, str) else c for c in cells), **kw)
