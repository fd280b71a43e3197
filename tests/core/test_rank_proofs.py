"""rank()'s proofs for held builds (buy-only candidates it may leave unsized): ``_settle_owned`` does in
one pass what the round-by-round loop did (size the held build cheapest to own, prove again, repeat),
so it must size the same builds, in the same order, and leave every ranked candidate as the rounds
do -- on every example, every scenario and money edits of them."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from gpuwiz.core import memo
from gpuwiz.core import recommend as rec_mod
from gpuwiz.core.catalog import load_catalog
from gpuwiz.core.config_io import load_config
from gpuwiz.core.errors import GpuwizError
from gpuwiz.core.models import Requirements
from gpuwiz.core.recommend import Cand, _Recommender, _Scanner
from scenario_set import EXAMPLES, SCENARIOS, scenario_requirements

CAT = load_catalog()


def _one_round(self: _Recommender, waiting: list[Cand], shortlist: list[Cand], sized: dict[int, Cand],
               w0: Any) -> bool:
    """What a round did before ``_settle_owned``: size the waiting build cheapest to own, prove again."""
    c = min(waiting, key=lambda c: self._buy_floor(c)[1])
    sized[id(c)] = self.exact(c, w0)
    return False


def _v(c: Cand) -> tuple[Any, ...]:
    """Every field of a candidate (Cand compares by identity)."""
    return tuple(getattr(c, f.name) for f in dataclasses.fields(Cand))


def _ranked(req: Requirements) -> tuple[Any, ...] | None:
    rec = _Recommender(req, CAT, req.deployment.objective)
    scan = _Scanner(req, CAT)
    found = rec.enumerated(scan)
    w0 = rec.workload0(scan)
    priced = rec.price(found, w0)
    if not priced.ok:
        return None
    sizes: list[tuple[str, int, int]] = []
    real = rec.exact

    def exact(c: Cand, w: Any) -> Cand:
        sizes.append((c.gpu.id, c.gpn, c.nodes))
        return real(c, w)

    rec.exact = exact  # type: ignore[method-assign]
    r = rec.rank(priced, w0)
    if r is None:
        return (tuple(sizes),)
    return (tuple(sizes), tuple(map(_v, r.shortlist)), tuple(map(_v, r.priced)))


def _cases() -> list[tuple[str, Requirements]]:
    out = [(p.stem, load_config(p)) for p in EXAMPLES]
    for i, sc in enumerate(SCENARIOS):
        try:
            out.append((str(sc.get("id", i)), scenario_requirements(sc)))
        except GpuwizError:
            continue
    money: list[tuple[str, Requirements]] = []
    for name, req in out[:len(EXAMPLES)]:
        dep = req.deployment
        for u in ({"budget_usd": (dep.budget_usd or 1e5) * 0.6}, {"horizon_years": 1.5},
                  {"electricity_usd_per_kwh": 0.41}, {"mode": "buy"}):
            money.append((f"{name}+{next(iter(u))}", req.model_copy(update={"deployment": dep.model_copy(update=u)})))
    return out + money


def test_one_pass_settles_as_the_rounds_on_every_example_scenario_and_money_edit(
        monkeypatch: pytest.MonkeyPatch) -> None:
    held_settled = 0
    settles = 0
    real = rec_mod._Recommender._settle_owned

    def counting(self: _Recommender, *a: Any) -> bool:
        nonlocal settles
        settles += 1
        return real(self, *a)

    for name, req in _cases():
        memo.clear()
        before = settles
        try:
            with monkeypatch.context() as m:
                m.setattr(rec_mod._Recommender, "_settle_owned", counting)
                got = _ranked(req)
        except GpuwizError:
            continue
        with monkeypatch.context() as m:
            m.setattr(rec_mod._Recommender, "_settle_owned", _one_round)
            memo.clear()
            want = _ranked(req)
        assert got == want, name
        held_settled += settles > before
    assert held_settled > 10  # cases where the one pass ran (held builds that could only be the build to own)


def test_settling_sizes_fewer_rounds_than_one_per_held_build() -> None:
    """The one pass runs the full proofs once where the rounds ran them once per build they sized
    (resnet50: seven rounds before)."""
    req = load_config(EXAMPLES[0].parent / "resnet50-imagenet.yaml")
    calls = 0
    real = _Recommender._owned_irrelevant

    def counting(self: _Recommender, *a: Any) -> Any:
        nonlocal calls
        calls += 1
        return real(self, *a)

    memo.clear()
    rec = _Recommender(req, CAT, req.deployment.objective)
    rec._owned_irrelevant = counting.__get__(rec)  # type: ignore[method-assign]
    scan = _Scanner(req, CAT)
    found = rec.enumerated(scan)
    w0 = rec.workload0(scan)
    assert rec.rank(rec.price(found, w0), w0) is not None
    assert calls == 1
