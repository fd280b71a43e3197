"""The estimator's sentences (assumptions, problems, notes) follow the interface language, and what
the estimator memoises with a plan (a candidate's problems and notes, the stack reason) holds no
language: it is rendered where shown."""

from __future__ import annotations

import re

from gpuwiz import i18n
from gpuwiz.core.config_io import loads_config
from gpuwiz.core.estimate import estimate, estimate_from, prepare, quick
from gpuwiz.i18n import Msg

HAN = re.compile(r"[\u4e00-\u9fff]")
PINNED = """
version: 1
model: {preset: llama-3-8b}
training: {method: full, parallel: {tp: 2, cp: 3, ep: 2, vp: 2}}
data: {tokens: 1e9}
"""
TOO_BIG = """
version: 1
model: {preset: llama-3-70b}
training: {method: full}
data: {tokens: 1e9}
"""


def test_assumptions_and_problems_are_chinese(zh: None, catalog) -> None:  # type: ignore[no-untyped-def]
    req = loads_config(PINNED, catalog=catalog)
    est = estimate(req, catalog, gpu="h100-sxm", count=8)
    assert not est.feasible and len(est.problems) >= 3
    assert all(HAN.search(p) for p in est.problems), est.problems
    assert all(p.startswith("training.parallel.") for p in est.problems)  # the field path stays as written
    assert est.assumptions and all(HAN.search(a) for a in est.assumptions), est.assumptions


def test_english_assumptions_have_no_chinese(catalog) -> None:  # type: ignore[no-untyped-def]
    req = loads_config(PINNED, catalog=catalog)
    est = estimate(req, catalog, gpu="h100-sxm", count=8)
    assert not any(HAN.search(a) for a in est.assumptions + est.problems)
    assert "training.parallel.ep: expert parallelism needs a mixture-of-experts model (model.experts)" in est.problems


def test_memoised_candidate_holds_no_language(catalog) -> None:  # type: ignore[no-untyped-def]
    """A candidate planned in English and shown in Chinese (and the other way round) reads in the
    language it is shown in; its English form is the same whichever language planned it."""
    req = loads_config(TOO_BIG, catalog=catalog)
    ctx = prepare(req, catalog)
    q = quick(ctx, "rtx-4090", 1)  # planned in English
    assert not q.fits and isinstance(q.reason, Msg)
    english = str(q.reason)
    assert english.startswith("does not fit: needs ") and not HAN.search(english)
    i18n.set_language("zh-CN")
    try:
        assert str(q.reason) == english  # the memoised form stays English
        assert HAN.search(q.reason.text()) and "NVIDIA GeForce RTX 4090" in q.reason.text()
        zh_est = estimate_from(ctx, "rtx-4090", 1)  # the same context: its plan tables are warm
        assert zh_est.problems and all(HAN.search(p) for p in zh_est.problems)
        assert any(a.startswith("软件栈：") for a in zh_est.assumptions)  # the memoised stack reason, translated
        zh_q = quick(prepare(req, catalog), "rtx-4090", 1)  # planned in Chinese
        assert str(zh_q.reason) == english
    finally:
        i18n.set_language("en")
    en_est = estimate_from(ctx, "rtx-4090", 1)
    assert en_est.problems[0] == english
    assert not any(HAN.search(a) for a in en_est.assumptions)
