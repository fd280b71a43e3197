"""The memo, the text report, validation errors and --help in Chinese; English stays as it was."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuwiz.cli import main
from gpuwiz.core.catalog import load_catalog
from gpuwiz.core.config_io import load_config, loads_config
from gpuwiz.core.errors import GpuwizError
from gpuwiz.core.recommend import recommend
from gpuwiz.core.report import render_estimate, render_recommendation
from gpuwiz.i18n import cells

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "small-team-lora-7b.yaml"
HAN = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture(scope="module")
def answer():  # type: ignore[no-untyped-def]
    cat = load_catalog()
    req = load_config(str(EXAMPLE), catalog=cat)
    return req, recommend(req, cat)


def test_markdown_memo_in_chinese(zh: None, answer) -> None:  # type: ignore[no-untyped-def]
    req, rec = answer
    md = render_recommendation(rec, req, "md")
    assert md.startswith("# gpuwiz 推荐：")
    for heading in ("## 估算", "## 租用与购买", "## 警告"):
        assert f"\n{heading}\n" in md
    assert "**结论：" in md
    assert "| 云厂商 | 实例 |" in md and "每次（按量付费）" in md and "每次（抢占式实例）" in md
    # every number of the English memo is still there: translation moved words, not figures
    en_numbers = _numbers(_english(rec, req))
    assert en_numbers and en_numbers <= _numbers(md) | {"1", "2", "3", "4", "5"}


def _english(rec, req) -> str:  # type: ignore[no-untyped-def]
    from gpuwiz import i18n

    i18n.set_language("en")
    try:
        return render_recommendation(rec, req, "md")
    finally:
        i18n.set_language("zh-CN")


def _numbers(text: str) -> set[str]:
    return set(re.findall(r"\$\d+(?:,\d{3})*(?:\.\d+)?|\d+(?:,\d{3})*\.\d+", text))


def test_english_memo_has_no_chinese(answer) -> None:  # type: ignore[no-untyped-def]
    req, rec = answer
    md = render_recommendation(rec, req, "md")
    assert md.startswith("# gpuwiz recommendation: ")
    assert not HAN.search(md)


def test_text_tables_line_up_in_terminal_cells(zh: None, answer) -> None:  # type: ignore[no-untyped-def]
    """Chinese headers are two cells a character: columns are padded by cells, not by len()."""
    req, rec = answer
    text = render_recommendation(rec, req, "text")
    lines = text.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.strip().startswith("配置") and "方式" in ln)
    table = [ln for ln in lines[head:head + len(rec.pareto) + 1]]
    # the third column (时间) starts at the same cell on every row
    starts = set()
    for ln in table:
        parts = re.split(r"(\s{2,})", ln.strip())
        starts.add(cells("  " + "".join(parts[:4])))
    assert len(starts) == 1, table
    # the estimate's row labels (Chinese) are padded to one 14-cell column
    est = render_estimate(rec.estimate, "text").splitlines()
    assert est[0].startswith("模型") and cells(est[0].split("Mistral")[0]) == 14


def test_cli_writes_a_chinese_memo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "memo.md"
    assert main(["recommend", str(EXAMPLE), "--lang", "zh-CN", "--format", "md", "-o", str(out)]) == 0
    memo = out.read_text(encoding="utf-8")
    assert memo.startswith("# gpuwiz 推荐：") and "## 估算" in memo


BAD = """\
version: 1
model:
  preset: llama-3-8b
data:
  tokens: 200M
  epochs: 0
hardware:
  count: 0
trainng:
  method: lora
"""


def test_validation_errors_in_chinese_keep_file_line_and_field_path(zh: None) -> None:
    with pytest.raises(GpuwizError) as err:
        loads_config(BAD, "team.yaml")
    assert err.value.problems == [
        "team.yaml:6: data.epochs: 必须大于 0（实际为 0）",
        "team.yaml:8: hardware.count: 不能小于 1（实际为 0）",
        "team.yaml:9: trainng: 未知的键（是否想输入 training？）",
    ]


def test_validation_errors_in_english_are_pydantics_words() -> None:
    with pytest.raises(GpuwizError) as err:
        loads_config(BAD, "team.yaml")
    assert err.value.problems[1] == "team.yaml:8: hardware.count: Input should be greater than or equal to 1 (got 0)"


def test_every_subcommand_help_in_chinese(capsys: pytest.CaptureFixture[str]) -> None:
    for cmd in ("estimate", "recommend", "catalog", "validate", "launch", "calibrate", "probe"):
        with pytest.raises(SystemExit) as done:
            main([cmd, "--help", "--lang", "zh-CN"])
        assert done.value.code == 0
        text = capsys.readouterr().out
        assert text.startswith("用法："), cmd
        assert "显示此帮助信息并退出" in text and "界面语言" in text
    assert main(["--help", "--lang", "zh-CN"]) == 0
    assert "打开向导" in capsys.readouterr().out
