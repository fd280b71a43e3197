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

# CJK radicals, punctuation, kana, ideographs, compatibility ideographs, fullwidth forms
CJK = "\u2e80-\u2fff\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
OPENING = "（《「『【〔“‘"
CLOSING = "）》」』】〕”’、。，；：？！…·%"
UNIT = rf"[{OPENING}]*(?:[^\s{CJK}]+|[{CJK}])[{CLOSING}]*"

TEXTUAL_CHUNK = re.compile(rf"{UNIT}\s*|\s+")  # textual._wrap.re_chunk was r"\S+\s*|\s+"
RICH_WORD = re.compile(rf"\s*{UNIT}\s*")  # rich._wrap.re_word was r"\s*\S+\s*"


def install() -> None:
    """Use the CJK-aware word patterns (idempotent)."""
    import rich._wrap
    import textual._wrap

    textual._wrap.re_chunk = TEXTUAL_CHUNK
    rich._wrap.re_word = RICH_WORD
