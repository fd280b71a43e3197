"""Which language a run gets: --lang, then LANGUAGE / LC_ALL / LC_MESSAGES / LANG; the encoding
fallback; and that English start-up never reads the catalog."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpuwiz import i18n
from gpuwiz.i18n import _, choose_language

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _english_after() -> Iterator[None]:
    yield
    i18n.set_language("en")
EXAMPLE = ROOT / "examples" / "small-team-lora-7b.yaml"


@pytest.mark.parametrize(("env", "want"), [
    ({}, "en"),
    ({"LANG": "zh_CN.UTF-8"}, "zh-CN"),
    ({"LANG": "zh_CN.GB2312"}, "zh-CN"),
    ({"LANG": "de_DE.UTF-8"}, "en"),
    ({"LANG": "C"}, "en"),
    ({"LC_MESSAGES": "zh_CN.UTF-8", "LANG": "en_US.UTF-8"}, "zh-CN"),  # LC_MESSAGES before LANG
    ({"LC_ALL": "en_US.UTF-8", "LC_MESSAGES": "zh_CN.UTF-8"}, "en"),  # LC_ALL before LC_MESSAGES
    ({"LC_ALL": "zh_CN.UTF-8", "LANG": "C"}, "zh-CN"),
    ({"LANGUAGE": "zh_CN:en", "LANG": "en_US.UTF-8"}, "zh-CN"),  # LANGUAGE first of all
    ({"LANGUAGE": "en:zh_CN", "LC_ALL": "zh_CN.UTF-8"}, "en"),
    ({"LANGUAGE": "fr:zh", "LANG": "C"}, "zh-CN"),  # a colon list: its first entry gpuwiz has
    ({"LANGUAGE": "fr:de", "LANG": "zh_CN.UTF-8"}, "zh-CN"),  # none known: the next variable decides
    ({"LANGUAGE": "", "LANG": "zh_CN.UTF-8"}, "zh-CN"),  # set but empty counts as unset
    ({"LANG": "zh_TW.UTF-8"}, "en"),  # Traditional Chinese is not this catalog
])
def test_environment_order(env: dict[str, str], want: str) -> None:
    assert choose_language(None, env) == want


def test_the_flag_wins_over_the_environment() -> None:
    assert choose_language("en", {"LANGUAGE": "zh_CN", "LC_ALL": "zh_CN.UTF-8"}) == "en"
    assert choose_language("zh-CN", {"LANG": "C"}) == "zh-CN"
    assert choose_language("zh_CN", {}) == "zh-CN"
    with pytest.raises(ValueError, match="unknown language 'fr'"):
        choose_language("fr", {})


def test_set_language_switches_what_underscore_returns() -> None:
    assert _("Live answer") == "Live answer"
    i18n.set_language("zh-CN")
    assert _("Live answer") == "实时结果"
    assert _("a text no catalog has") == "a text no catalog has"
    i18n.set_language("en")
    assert _("Live answer") == "Live answer"


@pytest.mark.parametrize(("encoding", "ok"), [("utf-8", True), ("gb2312", True), ("gb18030", True),
                                              ("ascii", False), ("latin-1", False), (None, False),
                                              ("no-such-codec", False)])
def test_which_encodings_carry_chinese(encoding: str | None, ok: bool) -> None:
    assert i18n.can_show(encoding) is ok


def test_setup_falls_back_to_english_with_one_line_when_the_terminal_cannot_show_chinese() -> None:
    note = i18n.setup(None, "ascii", {"LANG": "zh_CN.UTF-8"})
    assert note is not None and "\n" not in note and "ascii" in note
    assert i18n.current_language() == "en"
    assert i18n.setup(None, "utf-8", {"LANG": "zh_CN.UTF-8"}) is None
    assert i18n.current_language() == "zh-CN"


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in __import__("os").environ.items()
             if k not in ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG", "PYTHONIOENCODING", "GPUWIZ_DEBUG")}
    return subprocess.run([sys.executable, "-m", "gpuwiz", *args], capture_output=True, text=True,
                          env={**clean, **env}, timeout=120, encoding="utf-8", errors="replace")


def test_cli_language_from_lang_and_from_the_flag() -> None:
    zh = _cli("recommend", "--help", env={"LANG": "zh_CN.UTF-8", "PYTHONIOENCODING": "utf-8"})
    assert zh.returncode == 0 and "用法：" in zh.stdout and "界面语言" in zh.stdout
    en = _cli("recommend", "--help", "--lang", "en", env={"LANG": "zh_CN.UTF-8", "PYTHONIOENCODING": "utf-8"})
    assert en.returncode == 0 and "usage:" in en.stdout and "用法" not in en.stdout
    flag = _cli("--lang=zh-CN", "--help", env={"LANG": "C.UTF-8", "PYTHONIOENCODING": "utf-8"})
    assert "打开向导" in flag.stdout


def test_cli_bad_lang_is_one_line_and_exit_2() -> None:
    out = _cli("recommend", str(EXAMPLE), "--lang", "klingon", env={"PYTHONIOENCODING": "utf-8"})
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == ["gpuwiz: --lang: unknown language 'klingon' (choose from: en, zh-CN)"]


def test_cli_ascii_terminal_gets_english_and_a_note() -> None:
    out = _cli("recommend", "--help", env={"LANG": "zh_CN.UTF-8", "PYTHONIOENCODING": "ascii"})
    assert out.returncode == 0
    assert "usage:" in out.stdout
    assert out.stderr.count("\n") == 1 and "cannot show Chinese; using English" in out.stderr


_OPENED = """
import sys
opened = []
sys.addaudithook(lambda event, args: opened.append(str(args[0])) if event == "open" and args else None)
from gpuwiz.cli import main
code = main(sys.argv[1:])
print("MO-OPENED" if any(p.endswith(".mo") for p in opened) else "MO-NOT-OPENED", file=sys.stderr)
"""


@pytest.mark.parametrize(("lang", "opened"), [("en", False), ("zh-CN", True)])
def test_english_start_up_reads_no_catalog(lang: str, opened: bool) -> None:
    clean = {k: v for k, v in __import__("os").environ.items() if k not in ("LANGUAGE", "LC_ALL", "LC_MESSAGES")}
    out = subprocess.run([sys.executable, "-c", _OPENED, "recommend", str(EXAMPLE), "--format", "md", "--lang", lang],
                         capture_output=True, text=True, encoding="utf-8", timeout=120,
                         env={**clean, "LANG": "C.UTF-8", "PYTHONIOENCODING": "utf-8"})
    assert out.returncode == 0, out.stderr
    assert ("MO-OPENED" if opened else "MO-NOT-OPENED") in out.stderr
