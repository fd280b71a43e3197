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


def test_a_line_of_wide_characters_ending_in_a_space_is_not_ellipsized() -> None:
    """Rich's Text.rstrip_end counted characters, not cells: a wrapped line with a full-width bracket that ended in
    a space stayed a cell over, and a column that ellipsizes (a table's default) cut its last word -- the Chinese
    build tab at 80x24 showed '也放在 NVM…' where 'NVMe' fit."""
    from rich.table import Table

    cjk.install()
    text = ("1x Consumer NVMe M.2 PCIe 4.0 SSD 2 TB (Samsung 990 PRO class)（2 TB NVMe，读取约 7 GB/s）; "
            "原始数据和历史检查点（28 GB）也放在 NVMe 上：不需要大容量硬盘; "
            "检查点（每个 < 1 GB）在对象存储中保留异地副本")
    for width in range(30, 120):
        console = Console(width=width, record=True, color_system=None)
        table = Table(box=None, show_header=False, padding=(0, 1), pad_edge=False)
        table.add_column(no_wrap=True)
        table.add_column()
        table.add_row("存储", text)
        console.print(table)
        out = console.export_text()
        assert "…" not in out, width
        assert all(cell_len(line) <= width for line in out.splitlines())
        assert "".join(out.replace("存储", "", 1).split()) == "".join(text.split())  # every character shown
