"""The engine's own sentences (pitfalls, verdict reasons, alternatives, suggestions, binding
constraints) follow the interface language, and nothing the engine memoises between calls carries a
sentence from an earlier call's language."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuwiz import i18n
from gpuwiz.core import memo
from gpuwiz.core.config_io import load_config, loads_config
from gpuwiz.core.models import Recommendation
from gpuwiz.core.recommend import recommend
from gpuwiz.core.report import render_recommendation

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
HAN = re.compile(r"[\u4e00-\u9fff]")


def _run(path: Path, lang: str, catalog) -> tuple[Recommendation, str]:  # type: ignore[no-untyped-def]
    i18n.set_language(lang)
    try:
        req = load_config(str(path), catalog=catalog)
        rec = recommend(req, catalog)
        return rec, render_recommendation(rec, req, "md")
    finally:
        i18n.set_language("en")


@pytest.mark.parametrize("path", EXAMPLES[:2], ids=lambda p: p.stem)
def test_languages_do_not_leak_through_the_memo(path: Path, catalog) -> None:  # type: ignore[no-untyped-def]
    """English, then Chinese, then English in one process (the plan memo warm from the first call):
    each answer equals a fresh run in its own language."""
    memo.clear()
    warm = [_run(path, lang, catalog) for lang in ("en", "zh-CN", "en")]
    for lang, (rec, md) in zip(("en", "zh-CN", "en"), warm, strict=True):
        memo.clear()
        fresh_rec, fresh_md = _run(path, lang, catalog)
        assert md == fresh_md, lang
        assert rec.model_dump() == fresh_rec.model_dump(), lang
    en_rec = warm[0][0]
    zh_rec = warm[1][0]
    # the sentences differ by language, the numbers do not
    assert not any(HAN.search(p.message) for p in en_rec.pitfalls)
    assert zh_rec.pitfalls and all(HAN.search(p.message) for p in zh_rec.pitfalls)
    assert [p.id for p in en_rec.pitfalls] == [p.id for p in zh_rec.pitfalls]
    assert en_rec.cost is not None and zh_rec.cost is not None
    assert HAN.search(zh_rec.cost.verdict_reason) and not HAN.search(en_rec.cost.verdict_reason)
    assert en_rec.cost_per_run_usd == zh_rec.cost_per_run_usd
    assert all(HAN.search(a.reason) for a in zh_rec.alternatives)
    # the JSON keys of dropped candidates stay English (the views translate them)
    assert list(en_rec.dropped) == list(zh_rec.dropped)


def test_nothing_fits_explains_itself_in_chinese(zh: None, catalog) -> None:  # type: ignore[no-untyped-def]
    """A 70B full fine-tune on one desk box under a tiny budget: the blocking pitfall, the binding
    constraint and the suggestions are Chinese sentences around English ids and numbers."""
    req = loads_config("""
version: 1
model: {preset: llama-3-70b}
training: {method: full}
data: {tokens: 1e9}
deployment: {mode: buy, budget_usd: 3000, site: desk}
""", catalog=catalog)
    rec = recommend(req, catalog)
    assert not rec.found
    assert rec.binding_constraint is not None and HAN.search(rec.binding_constraint.message)
    assert rec.pitfalls and rec.pitfalls[0].severity == "block" and HAN.search(rec.pitfalls[0].message)
    assert rec.suggestions and all(HAN.search(s) for s in rec.suggestions)
    md = render_recommendation(rec, req, "md")
    assert "超出预算" in md or "显存放不下" in md  # the drop reasons, translated where shown


def test_a_value_outside_the_list_names_the_allowed_ones_in_chinese(zh: None) -> None:
    """pydantic lists a Literal's values as "'a', 'b' or 'c'": in Chinese the list reads 'a'、'b' 或 'c' (no English
    'or' inside the Chinese sentence), with the file, line and field."""
    from gpuwiz.core.errors import GpuwizError

    with pytest.raises(GpuwizError) as err:
        loads_config("version: 1\nmodel: {preset: llama-3-8b}\ndeployment:\n  site: datacenter\n", "cfg.yaml")
    text = str(err.value)
    assert "cfg.yaml:4" in text and "deployment.site" in text
    assert "'colo' 或 'cloud'" in text and "'any'、'desk'" in text and " or " not in text


def test_a_binding_constraint_is_one_sentence_as_each_language_writes_it(catalog) -> None:  # type: ignore[no-untyped-def]
    """A pick that ends too late names its binding constraint in one sentence: in Chinese with no space after the
    full-width colon and a full-width stop (it was '主要约束（deadline）： ……。.' style English joins)."""
    text = ("version: 1\nmodel: {preset: vit-b-16}\ntraining: {method: pretrain, global_batch: 4096}\n"
            "data: {samples: 100M, epochs: 3, dataset_gb: 20000, sample_kb: 200}\n"
            "schedule: {runs_per_month: 1, deadline_days: 0.03}\ndeployment: {mode: rent}\n")
    cases = (("en", "**Binding constraint (deadline):** ", "."), ("zh-CN", "**主要约束（deadline）：**", "。"))
    for lang, head, end in cases:
        i18n.set_language(lang)
        try:
            req = loads_config(text, catalog=catalog)
            rec = recommend(req, catalog)
            md = render_recommendation(rec, req, "md")
        finally:
            i18n.set_language("en")
        assert rec.binding_constraint is not None
        (line,) = [ln for ln in md.splitlines() if ln.startswith("**" + head.strip("*")[:4])]
        assert line.startswith(head) and line.endswith(end) and not line.endswith(end + ".")
        if lang == "zh-CN":
            assert not line.startswith(head + " ") and HAN.search(line[len(head):])
