"""No English sentences inside the Chinese memo.

A heuristic walk over ``gpuwiz recommend CONFIG --lang zh-CN --format md`` for every example and a
CN regulated-data scenario: after removing what stays English on purpose -- names and ids from the
catalog (GPUs, CPUs, parts, providers, instance types, software versions), config keys, code spans,
quoted error messages, the cited sources -- a stretch of text between Chinese characters that
holds three or more lowercase English words is an untranslated sentence. Technical words that
stay English (config values such as ``lora`` or ``none``, units) are allowed by name.

The memo's "假设条件" block (the estimator's assumption lines) is walked like every other line.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from gpuwiz.cli import main
from gpuwiz.core.catalog import Catalog

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = sorted((ROOT / "examples").glob("*.yaml"))
CN_REGULATED = """\
version: 1
model: {preset: qwen2.5-7b}
training: {method: lora}
data: {tokens: 200M}
schedule: {runs_per_month: 4, deadline_days: 3}
deployment: {mode: rent, country: CN, data_sensitivity: regulated, currency: CNY}
"""
NOTHING_FITS = """\
version: 1
model: {preset: llama-3-70b}
training: {method: full}
data: {tokens: 1e9}
deployment: {mode: buy, budget_usd: 3000, site: desk}
"""

CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]+")
NAME_KEYS = {"name", "provider", "instance_type", "id", "region", "driver", "cuda", "torch", "label", "framework"}
# English words that are values or terms, not prose (config values, units, part words)
ALLOWED = {"none", "full", "selective", "cheapest", "fastest", "either", "rent", "buy", "lora", "qlora", "pretrain",
           "decoder", "encoder", "token", "tokens", "samples", "optimizer", "class", "rpm", "per", "wheel",
           "desktop", "server", "workstation", "tower", "hgx", "neocloud", "hyperscaler", "regional",
           "marketplace-community", "marketplace-secure", "perf-per-watt", "internal", "confidential", "regulated"}


def _names(cat: Catalog) -> re.Pattern[str]:
    found: set[str] = set()

    def walk(x: Any, key: str | None = None) -> None:
        if isinstance(x, dict):
            for k, v in x.items():
                walk(v, k)
        elif isinstance(x, list):
            for v in x:
                walk(v, key)
        elif isinstance(x, str) and key in NAME_KEYS and 2 <= len(x) < 100:
            found.add(x)

    walk(cat.model_dump(mode="json"))
    alts = sorted(found, key=len, reverse=True)
    return re.compile("|".join(r"(?<![\w-])" + re.escape(n) + r"(?![\w-])" for n in alts))


def untranslated(text: str, cat: Catalog) -> list[str]:
    """The lines of ``text`` that look like English sentences left in a Chinese page."""
    names = _names(cat)
    bad = []
    for line in text.splitlines():
        if line.lstrip().startswith("来源："):
            continue  # (the TUI shows a pitfall's source on its own line)
        s = re.sub(r"`[^`]*`", " ", line)
        s = re.sub(r"_\(来源：.*?\)_", " ", s)  # cited sources stay as written
        s = re.sub(r'"[^"]*"', " ", s)  # quoted titles of cited articles
        s = re.sub(r"\[[^\]]*\]\s*$", " ", s)  # an export rule's [source, date], cited as published
        s = re.sub(r"\S+\.(com|org|edu|io|net|gov)\b\S*", " ", s)  # cited web addresses
        s = re.sub(r"'[^']*'", " ", s)  # quoted error messages stay as the software prints them
        s = re.sub(r"\b[a-z_]+\.[a-z_.]+\b", " ", s)  # config keys: schedule.deadline_days
        s = names.sub(" ", s)
        for seg in CJK.split(s):
            words = [w for w in re.findall(r"[A-Za-z][A-Za-z'\-]*", seg)
                     if len(w) >= 3 and w.islower() and w not in ALLOWED]
            if len(words) >= 3:
                bad.append(line)
                break
    return bad


def test_the_heuristic_catches_an_english_sentence(catalog) -> None:  # type: ignore[no-untyped-def]
    page = ("- **中** 每卡需要 44 GiB 显存\n"
            "- **中** Spot on Vast.ai would cut a run from $30 to $20\n"
            "| NVIDIA H100 SXM5 80GB | 1 | $25,000 | $25,000 | 数据导入 |\n"
            "- 软件：Ubuntu 22.04/24.04 LTS; CUDA 12.6; `gpuwiz catalog import skypilot vms.csv`\n")
    assert untranslated(page, catalog) == ["- **中** Spot on Vast.ai would cut a run from $30 to $20"]


def _memo(tmp_path: Path, config: Path, capsys: pytest.CaptureFixture[str]) -> str:
    out = tmp_path / "memo.md"
    assert main(["recommend", str(config), "--lang", "zh-CN", "--format", "md", "-o", str(out)]) == 0
    capsys.readouterr()
    return out.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", [p.name for p in CONFIGS] + ["cn-regulated", "nothing-fits"])
def test_chinese_memo_has_no_english_sentences(name: str, tmp_path: Path, catalog,  # type: ignore[no-untyped-def]
                                               capsys: pytest.CaptureFixture[str]) -> None:
    from gpuwiz import i18n

    if name == "cn-regulated":
        config = tmp_path / "cn.yaml"
        config.write_text(CN_REGULATED, encoding="utf-8")
    elif name == "nothing-fits":
        config = tmp_path / "nf.yaml"
        config.write_text(NOTHING_FITS, encoding="utf-8")
    else:
        config = ROOT / "examples" / name
    try:
        md = _memo(tmp_path, config, capsys)
    finally:
        i18n.set_language("en")
    assert md.startswith("# gpuwiz")
    assert untranslated(md, catalog) == []
