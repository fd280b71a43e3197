"""Line breaking for Chinese in Textual and Rich.

Both wrap text at spaces only: a run of Chinese (which has no spaces) is one "word", so a
sentence that does not fit is pushed whole to the next line, or folded wherever the width ends,
with 、or ，at the start of a line. Chinese may break between any two characters except before
closing punctuation (、。，）…) and after opening punctuation (（“《…). ``install`` makes each
Chinese character its own word for the wrappers of Textual 8.2.8 and Rich, with its punctuation
kept beside it. Text without CJK characters is cut exactly as before (the word patterns match
the same runs).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.text import Text

# CJK radicals, punctuation, kana, ideographs, compatibility ideographs, fullwidth forms
CJK = "\u2e80-\u2fff\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
OPENING = "（《「『【〔“‘"
CLOSING = "）》」』】〕”’、。，；：？！…·%"
UNIT = rf"[{OPENING}]*(?:[^\s{CJK}]+|[{CJK}])[{CLOSING}]*"

TEXTUAL_CHUNK = re.compile(rf"{UNIT}\s*|\s+")  # textual._wrap.re_chunk was r"\S+\s*|\s+"
RICH_WORD = re.compile(rf"\s*{UNIT}\s*")  # rich._wrap.re_word was r"\s*\S+\s*"


_TRAILING = re.compile(r"\s+$")


def rstrip_end(self: Text, size: int) -> None:
    """``rich.text.Text.rstrip_end`` counted in cells: Rich's counts characters, so a wrapped line of wide
    characters that ends in a space stays one cell over the width, and a column that ellipsizes cut its last
    word ("也放在 NVM…" where "NVMe" fit)."""
    from rich.cells import cell_len

    excess = cell_len(self.plain) - size
    if excess > 0:
        trailing = _TRAILING.search(self.plain)
        if trailing is not None:  # (whitespace: a cell per character)
            self.right_crop(min(len(trailing.group(0)), excess))


def install() -> None:
    """Use the CJK-aware word patterns, and trailing space cut by cells (idempotent)."""
    import rich._wrap
    import rich.text
    import textual._wrap

    textual._wrap.re_chunk = TEXTUAL_CHUNK
    rich._wrap.re_word = RICH_WORD
    rich.text.Text.rstrip_end = rstrip_end  # type: ignore[method-assign]
