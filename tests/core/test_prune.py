"""Pruning in the recommender's search (core.recommend ``prune``): a candidate whose outcome a cheap
check proves is booked without the estimator, and the answer -- every field of the JSON: candidates
considered, the drop counts, the binding constraint, the Pareto front, alternatives, cloud rows -- is
the one the unpruned search gives, on every example and every scenario, also after price-only edits."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from gpuwiz.core import estimate as est_mod
from gpuwiz.core import memo
from gpuwiz.core import recommend as rec_mod
from gpuwiz.core.catalog import load_catalog
from gpuwiz.core.config_io import load_config
from gpuwiz.core.errors import GpuwizError
from gpuwiz.core.models import Requirements
from gpuwiz.core.recommend import recommend, unpruned
from gpuwiz.core.system import chassis_options
from scenario_set import EXAMPLES, ROOT, SCENARIOS, scenario_requirements

CAT = load_catalog()


def _json(req: Requirements) -> str:
    try:
        return recommend(req, CAT).model_dump_json()
    except GpuwizError as exc:  # a scenario may be a typed refusal; it must be the same refusal
        return f"error: {exc}"


def _price_edits(req: Requirements) -> list[Requirements]:
    d, s, dep = req.data, req.schedule, req.deployment
    return [
        req.model_copy(update={"data": d.model_copy(update={"epochs": d.epochs * 3})}),
        req.model_copy(update={"schedule": s.model_copy(update={"runs_per_month": s.runs_per_month * 4})}),
        req.model_copy(update={"deployment": dep.model_copy(update={"budget_usd": 30_000.0, "horizon_years": 1.0})}),
    ]


def _same_pruned_and_not(reqs: list[Requirements]) -> None:
    memo.clear()
    for i, req in enumerate(reqs):
        with memo.disabled(), unpruned():
            want = _json(req)
        with memo.disabled():
            assert _json(req) == want, f"step {i}, no memo"
        assert _json(req) == want, f"step {i}, memoised"


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_pruned_search_equals_the_unpruned_one_on_every_example(path: Path) -> None:
    req = load_config(path)
    _same_pruned_and_not([req, *_price_edits(req), req])


@pytest.mark.parametrize("sc", SCENARIOS, ids=[s["id"] for s in SCENARIOS])
def test_pruned_search_equals_the_unpruned_one_on_every_scenario(sc: dict[str, Any]) -> None:
    _same_pruned_and_not([scenario_requirements(sc)])


def test_a_desk_search_sizes_only_what_a_desk_chassis_takes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The desk example: GPUs no desk chassis takes are booked 'does not suit the site' without an
    estimate, so the pruned search makes far fewer estimator calls for the same answer."""
    req = load_config(ROOT / "examples" / "llama3-8b-qlora.yaml")
    assert req.deployment.site == "desk"
    calls: list[tuple[Any, int]] = []
    real = est_mod.quick

    def counting(ctx: Any, gpu: Any, count: int, gpn: int | None = None, **kw: Any) -> Any:
        calls.append((CAT.gpu(gpu) if isinstance(gpu, str) else gpu, gpn or count))
        return real(ctx, gpu, count, gpn, **kw)

    monkeypatch.setattr(est_mod, "quick", counting)
    with memo.disabled(), unpruned():
        want = recommend(req, CAT)
    unpruned_calls = len(calls)
    calls.clear()
    with memo.disabled():
        got = recommend(req, CAT)
    assert got.model_dump_json() == want.model_dump_json()
    assert got.dropped[rec_mod.DROP_SITE] > 0
    assert len(calls) < unpruned_calls / 2
    # every shape still sized is one a desk chassis takes (the others could only be dropped)
    assert all(chassis_options(CAT, g, gpn, "desk") for g, gpn in calls)
    assert not all(chassis_options(CAT, g, gpn, "desk") for g in CAT.gpus for gpn in (1, 2))


def _every_requirement() -> list[Requirements]:
    return [load_config(p) for p in EXAMPLES] + [scenario_requirements(sc) for sc in SCENARIOS]


def test_the_buy_floor_is_below_every_sized_build(monkeypatch: pytest.MonkeyPatch) -> None:
    """rank leaves a rented candidate unsized when its buy floor (_Recommender._buy_floor) proves
    that owning it cannot win or be the build to own: the floor must be at or below the capex and the
    horizon cost ``exact`` gives, for every candidate sized on every example and scenario (unpruned:
    every shortlisted candidate is sized)."""
    real = rec_mod._Recommender.exact
    checked: list[str] = []

    def checking(self: Any, c: Any, w: Any) -> Any:
        out = real(self, c, w)
        if not c.exact and out.build is not None and out.buy_total is not None:
            capex, total = self._buy_floor(c)
            assert capex <= out.capex + 1e-6, (c.gpu.id, c.gpn, c.nodes, capex, out.capex)
            assert total <= out.buy_total + 1e-6, (c.gpu.id, c.gpn, c.nodes, total, out.buy_total)
            checked.append(c.gpu.id)
        return out

    monkeypatch.setattr(rec_mod._Recommender, "exact", checking)
    for req in _every_requirement():
        with memo.disabled(), unpruned():
            try:
                recommend(req, CAT)
            except GpuwizError:
                continue
    assert len(checked) > 500 and len(set(checked)) > 20  # the floor met many builds of many GPUs


def _ranked_candidates(req: Requirements) -> tuple[Any, list[Any]]:
    """The recommender of ``req`` and the candidates its rank stage considers (priced, within budget)."""
    r = rec_mod._Recommender(req, CAT, req.deployment.objective)
    scan = rec_mod._Scanner(req, CAT)
    w0 = r.workload0(scan)
    return r, list(r.price(r.enumerate(scan), w0).ok)


def test_a_rented_build_whose_owning_floor_is_near_its_rent_is_still_sized() -> None:
    """_rent_stays at its edge: rented at a price just above what owning it could cost at the least
    (floor x buy margin), sizing might make buying win, so it is sized; just below, it is not."""
    req = load_config(ROOT / "examples" / "small-team-lora-7b.yaml")
    assert req.deployment.mode == "either"
    r, cands = _ranked_candidates(req)
    c = next(c for c in cands if c.mode == "rent" and c.capex is not None and r._rent_stays(c))
    floor = r._buy_floor(c)[1] / rec_mod.costmod.BUY_MARGIN
    above = c.but(rent_total=floor * 1.001, score=floor * 1.001)
    below = c.but(rent_total=floor * 0.999, score=floor * 0.999)
    assert not r._rent_stays(above)
    assert r._rent_stays(below)
    # ... and a candidate ranked on owning, or one whose score is not its rent price, is always sized
    assert not r._rent_stays(below.but(mode="buy"))
    assert not r._rent_stays(below.but(score=floor * 0.5))


def test_a_lazy_build_that_could_be_the_build_to_own_is_sized() -> None:
    """_not_best_buy at its edge: a sized build to own dearer than the lazy candidate's floor does not
    prove anything (the lazy one, sized, might be cheaper to own), one cheaper than the floor does."""
    req = load_config(ROOT / "examples" / "small-team-lora-7b.yaml")
    r, cands = _ranked_candidates(req)
    c = next(c for c in cands if r._rent_stays(c) and c.q.wall_hours * req.schedule.runs_per_month < 730
             and (req.deployment.budget_usd is None or r._buy_floor(c)[0] <= req.deployment.budget_usd))
    floor = r._buy_floor(c)[1] * r._stack(c)
    owned = next(b for b in cands if b.capex is not None and b is not c)
    best = r.exact(owned, r.workload0(rec_mod._Scanner(req, CAT)))
    assert best.buy_total is not None
    q = dataclasses.replace(c.q, mem_p90=None)  # (c's run on best's card: no memory range read against that card)
    assert r._not_best_buy(c, best.but(buy_total=floor / r._stack(best) * 0.999, q=q))
    assert not r._not_best_buy(c, best.but(buy_total=floor / r._stack(best) * 1.001, q=q))
    assert not r._not_best_buy(c, None)  # nothing sized to own yet: the lazy one might be it


def _calls_pruned_and_not(monkeypatch: pytest.MonkeyPatch, owner: Any, attr: str, name: str) -> tuple[int, int]:
    """How often ``owner.attr`` runs in one answer for examples/NAME.yaml with pruning on and off (the
    memo off both times); asserts both give the same JSON."""
    req = load_config(ROOT / "examples" / f"{name}.yaml")
    calls = [0]
    real = getattr(owner, attr)

    def counting(*a: Any, **k: Any) -> Any:
        calls[0] += 1
        return real(*a, **k)

    monkeypatch.setattr(owner, attr, counting)
    with memo.disabled(), unpruned():
        want = recommend(req, CAT).model_dump_json()
    plain, calls[0] = calls[0], 0
    with memo.disabled():
        got = recommend(req, CAT).model_dump_json()
    assert got == want
    return calls[0], plain


@pytest.mark.parametrize("name", ["small-team-lora-7b", "resnet50-imagenet"])
def test_rank_sizes_fewer_builds_for_the_same_answer(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """rank leaves the builds whose sizing cannot change the answer unsized (rented ones whose owning
    floor is above their rent, builds only to own that cannot show): fewer system sizings
    (core.system.size_cost, the sizing the ranking prices), the same JSON as the unpruned search."""
    pruned, plain = _calls_pruned_and_not(monkeypatch, rec_mod.sysmod, "size_cost", name)
    assert pruned < plain * 0.8, (pruned, plain)


def test_a_no_fit_proof_never_claims_a_shape_that_fits(monkeypatch: pytest.MonkeyPatch) -> None:
    """The search books 'does not fit' without the estimator where a GPU of the same fit class with at
    least as much memory fitted no layout at that shape (_Scanner.no_fit_proved): on every example and
    scenario, the estimator agrees for every shape so booked."""
    real = rec_mod._Scanner.no_fit_proved
    proved: list[tuple[str, int]] = []

    def checking(self: Any, gpu: Any, count: int, gpn: int) -> bool:
        got = real(self, gpu, count, gpn)
        if got:
            q = self.quick(gpu, count, gpn)
            assert not q.fits and not q.plan_fits, (gpu.id, count, gpn)
            proved.append((gpu.id, count))
        return got

    monkeypatch.setattr(rec_mod._Scanner, "no_fit_proved", checking)
    for req in _every_requirement():
        with memo.disabled():
            try:
                recommend(req, CAT)
            except GpuwizError:
                continue
    assert len(proved) > 100 and len({g for g, _n in proved}) >= 5


def test_a_gpu_with_a_little_more_memory_or_another_fit_class_is_still_tried() -> None:
    """no_fit_proved at its edges: a GPU with more memory than the largest one that fitted no layout,
    or one of another fit class (NVLink, vendor), is not booked without the estimator."""
    req = load_config(ROOT / "examples" / "enterprise-70b-pretrain.yaml")
    scan = rec_mod._Scanner(req, CAT)
    a10 = CAT.gpu("a10")
    q = scan.quick(a10, 64, 8)
    assert not q.fits and not q.plan_fits  # 70B on 64 A10s: no layout fits 24 GB
    scan.note_fit(a10, 64, 8, q)
    assert scan.no_fit_proved(a10.model_copy(update={"memory_gib": a10.memory_gib}), 64, 8)
    assert scan.no_fit_proved(a10.model_copy(update={"memory_gib": a10.memory_gib - 8}), 64, 8)
    assert not scan.no_fit_proved(a10.model_copy(update={"memory_gib": a10.memory_gib + 0.5}), 64, 8)
    assert not scan.no_fit_proved(a10, 128, 8)  # another shape
    assert not scan.no_fit_proved(a10.model_copy(update={"nvlink_gbps": 112.5}), 64, 8)
    assert not scan.no_fit_proved(a10.model_copy(update={"vendor": "amd"}), 64, 8)
    # a shape that fits proves nothing
    h100 = CAT.gpu("h100-sxm")
    fit = scan.quick(h100, 1024, 8)
    assert fit.fits and fit.plan_fits
    scan.note_fit(h100, 1024, 8, fit)
    assert not scan.no_fit_proved(h100.model_copy(update={"memory_gib": 40.0}), 1024, 8)


def test_the_70b_search_asks_the_estimator_less_for_the_same_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """70B pretraining: the small cards that fit no layout at any count tried are proved so from the
    largest of their fit class; fewer estimator calls, the same JSON as the unpruned search."""
    pruned, plain = _calls_pruned_and_not(monkeypatch, est_mod, "quick", "enterprise-70b-pretrain")
    assert pruned < plain * 0.75, (pruned, plain)


def test_a_build_only_to_own_is_left_unsized_only_when_it_cannot_show() -> None:
    """rank leaves a build that can only be owned unsized when even at its owning floor it is not the
    pick, an alternative, the build to own or a Pareto point (_Recommender._owned_irrelevant). Each
    part of that proof blocks it: without a faster, no dearer point it might be on the front; without
    four other GPU types ranked ahead it might be an alternative; faster than everything, it might be
    the front's fast end."""
    req = load_config(ROOT / "examples" / "resnet50-imagenet.yaml")
    r = rec_mod._Recommender(req, CAT, req.deployment.objective)
    scan = rec_mod._Scanner(req, CAT)
    w0 = r.workload0(scan)
    priced = r.price(r.enumerate(scan), w0)
    ranked = r.rank(priced, w0)
    assert ranked is not None
    shortlist = sorted(ranked.shortlist, key=r.key)
    final = [c for c in ranked.priced if c.exact or not r._may_hold(c)]
    held = [c for c in ranked.priced if r._may_hold(c)]
    assert held  # some builds only to own were left unsized ...
    assert all(c not in ranked.shortlist for c in held)  # ... and not shortlisted
    check = r._owned_irrelevant(ranked.win, shortlist, final)
    assert all(check(c) for c in held)
    c = next(c for c in held if c.gpu.id != ranked.win.gpu.id)
    assert not r._owned_irrelevant(ranked.win, shortlist, [])(c)  # nothing faster on the front
    alone = [x for x in shortlist if x.gpu.id == ranked.win.gpu.id]  # no other type ranked ahead
    assert not r._owned_irrelevant(ranked.win, alone, final)(c)  # it might be an alternative
    fast = c.but(q=dataclasses.replace(c.q, wall_hours=min(x.q.wall_hours for x in final) / 2))
    assert not check(fast)  # the front's fast end
    # sized, each is indeed no pick, alternative or front point: the answer is the unpruned one
    with memo.disabled(), unpruned():
        want = recommend(req, CAT).model_dump_json()
    with memo.disabled():
        assert recommend(req, CAT).model_dump_json() == want
