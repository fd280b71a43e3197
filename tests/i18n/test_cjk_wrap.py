"""Chinese wraps between characters, never before 、。，or after （; English wraps as before."""

from __future__ import annotations

import re

import rich._wrap
import textual._wrap
from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from gpuwiz.tui import cjk

HELP_ZH = ("gpuwiz 询问你训练什么、用什么数据、多久训练一次、租用还是购买，然后给出一套配置方案。"
           "数字可按习惯输入：2T、1.5B、150 GB。ctrl+p 打开命令面板（所有步骤与操作）。")
ENGLISH = ["Pick a preset, or describe the architecture.  two  spaces\tand a tab", "a · b … 100% (x)",
           "  leading", "trailing  ", "", "NVIDIA H100 SXM5 80GB × 1 — $1,234.50"]


def test_english_words_are_cut_exactly_as_before() -> None:
    old_t, old_r = re.compile(r"\S+\s*|\s+"), re.compile(r"\s*\S+\s*")
    for text in ENGLISH:
        assert [m.group(0) for m in cjk.TEXTUAL_CHUNK.finditer(text)] == [m.group(0) for m in old_t.finditer(text)]
        assert [m.group(0) for m in cjk.RICH_WORD.finditer(text)] == [m.group(0) for m in old_r.finditer(text)]


def test_chinese_breaks_between_characters_with_punctuation_kept_beside() -> None:
    cjk.install()
    assert textual._wrap.re_chunk is cjk.TEXTUAL_CHUNK and rich._wrap.re_word is cjk.RICH_WORD
    chunks = [c for _, _, c in textual._wrap.chunks(HELP_ZH)]
    assert "".join(chunks) == HELP_ZH  # nothing lost
    assert chunks[:3] == ["gpuwiz ", "询", "问"]
    assert "么、" in chunks and "2T、" in chunks and "（所" in chunks
    for width in (20, 33, 40, 57):
        console = Console(width=width, record=True, color_system=None)
        console.print(Text(HELP_ZH))
        lines = console.export_text().splitlines()
        assert lines[0].startswith("gpuwiz 询")  # not pushed whole to the next line
        for line in lines:
            assert cell_len(line) <= width
            assert not line.startswith(("、", "，", "。", "）", "：")), line
            assert not line.rstrip().endswith("（"), line
