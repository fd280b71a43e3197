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
    sized[c] = self.exact(c, w0)
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


def test_the_ranking_key_and_the_floor_order_are_their_rules_on_every_ranked_candidate() -> None:
    """``key`` inlines ``tight`` (with ``oom_risk``), ``off_site`` and ``effective`` under the cheapest objective, and
    ``_beaten`` keeps ``_own_order`` at the owning floor per candidate: on every candidate the ranking of
    every example, scenario and money edit saw, both are what the named rules give (with runs that end
    without slack, memory ranges above the card, desk boxes that need a circuit and non-CUDA stacks among them)."""
    seen = {"tight": 0, "oom": 0, "off_site": 0, "stack": 0, "floors": 0}
    for name, req in _cases():
        if req.deployment.objective != "cheapest":
            continue
        memo.clear()
        rec = _Recommender(req, CAT, "cheapest")
        try:
            scan = _Scanner(req, CAT)
            found = rec.enumerated(scan)
            w0 = rec.workload0(scan)
            priced = rec.price(found, w0)
            r = rec.rank(priced, w0) if priced.ok else None
        except GpuwizError:
            continue
        if r is None:
            continue
        d = rec.deadline_h
        variants = [c.but(q=dataclasses.replace(c.q, wall_hours=w, wall_hours_p90=hi), mode=m)
                    for c in r.shortlist[:3] for w, hi in ((0.9 * d, None), (0.8 * d, 1.1 * d), (0.8 * d, 0.9 * d))
                    for m in ("rent", "buy")]  # in the slack band, past the deadline at P90, neither
        variants += [c.but(q=dataclasses.replace(c.q, mem_p90=f * c.gpu.memory_gib)) for c in r.shortlist[:3]
                     for f in (0.9, 1.1)]  # the memory range inside the card, above it
        for c in {*priced.ok, *r.priced, *r.shortlist, *variants}:
            want = (float(rec.tight(c)) + rec.oom_risk(c), rec.off_site(c), rec.effective(c), c.q.wall_hours)
            assert rec.key(c) == want, (name, c.gpu.id, c.count)
            seen["tight"] += rec.tight(c)
            seen["oom"] += rec.oom_risk(c) > 0
            seen["off_site"] += rec.off_site(c) > 0
            seen["stack"] += rec._stack(c) > 1
            if c in rec.floor_orders:  # kept by ``_beaten``: as computed now
                seen["floors"] += 1
                assert rec.floor_orders[c] == rec._floor_order(c), (name, c.gpu.id, c.count)
        for c in r.priced:  # _not_best_buy against the pick's build to own, from a fresh table
            best = rec._best_buy(list(r.shortlist))
            fresh = _Recommender(req, CAT, "cheapest")
            assert rec._not_best_buy(c, best) == fresh._not_best_buy(c, best), (name, c.gpu.id, c.count)
    assert all(n > 0 for n in seen.values()), seen


def test_a_buy_floor_kept_across_answers_is_the_one_computed_for_this_answer() -> None:
    """``_buy_floor`` keeps (capex, horizon cost) per catalog on the shape and the money fields it reads:
    after the answers of other horizons, electricity prices, sites and budgets, every floor is the one
    a recommender without the memo computes for these requirements."""
    for name in ("resnet50-imagenet", "small-team-lora-7b"):
        req = load_config(EXAMPLES[0].parent / f"{name}.yaml")
        dep = req.deployment
        edits = [req] + [req.model_copy(update={"deployment": dep.model_copy(update=u)}) for u in (
            {"horizon_years": 1.5}, {"electricity_usd_per_kwh": 0.41}, {"pue": 1.6}, {"site": "colo"},
            {"budget_usd": (dep.budget_usd or 1e5) * 0.6}, {"staff_usd_per_year": 5000.0})] + [req]
        memo.clear()
        for r in edits:
            rec = _Recommender(r, CAT, "cheapest")
            scan = _Scanner(r, CAT)
            priced = rec.price(rec.enumerated(scan), rec.workload0(scan))
            got = {(c.gpu.id, c.gpn, c.nodes): rec._buy_floor(c) for c in priced.ok if c.capex is not None}
            assert got, name
            with memo.disabled():
                fresh = _Recommender(r, CAT, "cheapest")
                for c in priced.ok:
                    if c.capex is not None:
                        assert fresh._buy_floor(c) == got[c.gpu.id, c.gpn, c.nodes], (name, r.deployment, c.gpu.id)


def _scored_as_a_list(rec: _Recommender, wall: float, rent_total: float | None, buy_total: float | None,
                      capex: float | None) -> tuple[float, str | None, str | None]:
    """``_scored`` as it was written: the allowed ways in a list, the cheapest (``min``) of them."""
    from gpuwiz.core import cost as costmod
    from gpuwiz.core.recommend import DROP_BUDGET, DROP_CAPACITY, DROP_PRICE, HOURS_PER_MONTH

    budget, mode = rec.d.budget_usd, rec.d.mode
    opts: list[tuple[float, str]] = []
    keeps_up = wall * rec.req.schedule.runs_per_month <= HOURS_PER_MONTH
    if mode in ("rent", "either") and rent_total is not None and (budget is None or rent_total / rec.y <= budget):
        opts.append((rent_total, "rent"))
    if mode in ("buy", "either") and buy_total is not None and keeps_up and (budget is None or (capex or 0) <= budget):
        opts.append((buy_total / costmod.BUY_MARGIN if mode == "either" else buy_total, "buy"))
    if not opts:
        can_rent = mode in ("rent", "either") and rent_total is not None
        can_buy = mode in ("buy", "either") and buy_total is not None
        why = DROP_BUDGET if can_rent or (can_buy and keeps_up) else DROP_CAPACITY if can_buy else DROP_PRICE
        return float("inf"), None, why
    score, how = min(opts)
    return score, how, None


def test_scoring_picks_the_way_a_list_of_the_allowed_ways_did() -> None:
    """``_scored`` returns early when one way is allowed: on every mode, budget, capacity and tie it gives
    what the list of allowed ways and its ``min`` gave."""
    from gpuwiz.core import cost as costmod

    base = load_config(EXAMPLES[0].parent / "small-team-lora-7b.yaml")
    n = 0
    for mode in ("rent", "buy", "either"):
        for budget in (None, 50_000.0, 400_000.0):
            dep = base.deployment.model_copy(update={"mode": mode, "budget_usd": budget})
            rec = _Recommender(base.model_copy(update={"deployment": dep}), CAT, "cheapest")
            for wall in (10.0, 1e5):  # keeps up with the month's runs, or not
                for rent in (None, 30_000.0, 300_000.0, 100_000.0):
                    for buy in (None, 20_000.0, 500_000.0, 100_000.0 * costmod.BUY_MARGIN, 100_000.0):
                        for capex in (None, 10_000.0, 90_000.0):
                            want = _scored_as_a_list(rec, wall, rent, buy, capex)
                            assert rec._scored(wall, rent, buy, capex) == want, (mode, budget, wall, rent, buy, capex)
                            n += want[1] == "buy"
    assert n > 20
