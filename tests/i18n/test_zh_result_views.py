"""The Result screen's views say their own words in Chinese: every string cell of their tables that renders
the same in both languages and holds English words is a label left untranslated (the rent-vs-buy tab's
"Per run ... (P10–P90 in brackets)" was, while the memo's line was translated).

Each view is rendered for every example in English and in Chinese; the tables' string cells are recorded
as ``tui.plain.add_row`` receives them, and compared position by position."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from gpuwiz import i18n
from gpuwiz.core.config_io import load_config
from gpuwiz.core.recommend import recommend
from gpuwiz.tui import plain
from gpuwiz.tui.widgets import result_views as rv

ROOT = Path(__file__).resolve().parents[2]
UNITS = {"min"}  # durations are written with units in both languages (whatif.fmt_hours: 38 min, 4.2 h, 3.5 d)
WORD = re.compile(r"(?<![\w.-])[a-z]{3,}(?![\w.-])")  # (not inside ids: a3-highgpu-1g, gpu_4x_a6000)


def _cells(rec_for, lang: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:  # type: ignore[no-untyped-def]
    seen: list[str] = []
    real = plain.add_row

    def spy(table, *cells, **kw):  # type: ignore[no-untyped-def]
        seen.extend(c for c in cells if isinstance(c, str))
        real(table, *cells, **kw)

    monkeypatch.setattr(rv, "add_row", spy)
    i18n.set_language(lang)
    try:
        rec = rec_for()
        console = Console(width=100, file=io.StringIO())
        for view in (rv.build_view(rec), rv.cost_summary(rec), rv.alternatives_view(rec), rv.pitfalls_view(rec),
                     rv.memory_view(rec, 100), rv.pareto_view(rec)):
            if view is not None:
                console.print(view)
    finally:
        i18n.set_language("en")
    return seen


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "examples").glob("*.yaml")))
def test_result_views_have_no_english_labels_in_chinese(name: str, catalog,  # type: ignore[no-untyped-def]
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    req = load_config(ROOT / "examples" / name)
    en = _cells(lambda: recommend(req, catalog), "en", monkeypatch)
    zh = _cells(lambda: recommend(req, catalog), "zh-CN", monkeypatch)
    assert len(en) == len(zh) and en, (len(en), len(zh))
    left = [a for a, b in zip(en, zh, strict=True) if a == b and set(WORD.findall(a)) - UNITS]
    assert left == [], left


def test_rent_vs_buy_tab_says_where_it_may_run(catalog) -> None:  # type: ignore[no-untyped-def]
    """The wizard's rent-vs-buy tab carries the memo's "Where it may run" lines: the data policy and, for
    confidential data rented abroad (the enterprise example: US data, picked at Nebius in Finland), the run kept
    at home."""
    rec = recommend(load_config(ROOT / "examples" / "enterprise-70b-pretrain.yaml"), catalog)
    assert rec.market is not None and rec.market.in_jurisdiction is not None
    console = Console(width=120, file=io.StringIO(), record=True)
    console.print(rv.cost_summary(rec))
    text = console.export_text()
    assert "Where it may run" in text and f"Kept in the US: {rec.market.in_jurisdiction.count}x" in text
