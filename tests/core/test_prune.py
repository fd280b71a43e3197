"""Pruning in the recommender's search (core.recommend ``prune``): a candidate whose outcome a cheap
check proves is booked without the estimator, and the answer -- every field of the JSON: candidates
considered, the drop counts, the binding constraint, the Pareto front, alternatives, cloud rows -- is
the one the unpruned search gives, on every example and every scenario, also after price-only edits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from scenario_set import EXAMPLES, ROOT, SCENARIOS, scenario_requirements

from gpuwiz.core import estimate as est_mod
from gpuwiz.core import memo
from gpuwiz.core import recommend as rec_mod
from gpuwiz.core.catalog import load_catalog
from gpuwiz.core.config_io import load_config
from gpuwiz.core.errors import GpuwizError
from gpuwiz.core.models import Requirements
from gpuwiz.core.recommend import recommend, unpruned
from gpuwiz.core.system import chassis_options

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

    def counting(ctx: Any, gpu: Any, count: int, gpn: int | None = None) -> Any:
        calls.append((CAT.gpu(gpu) if isinstance(gpu, str) else gpu, gpn or count))
        return real(ctx, gpu, count, gpn)

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
