"""A box bought for the desk must run on the country's office circuit (issue 12's rule: the build fits
its site). Builds that need a dedicated circuit rank after the ones the desk takes as they are, are
marked in the alternatives, and stay off the time / cost front; when nothing else meets the deadline
the pick may still need one, and the wall-circuit pitfall says what to install."""

from __future__ import annotations

from typing import Any

import pytest

from gpuwiz.core.catalog import Catalog, load_catalog
from gpuwiz.core.models import Recommendation, Requirements
from gpuwiz.core.recommend import recommend

CAT: Catalog = load_catalog()

# LoRA on Llama 3 8B, 200M tokens a run, four runs a month, one day each: 4x RTX 4090 (~2.3 kW) is the
# cheapest build per run, 2x RTX 6000 Ada (~1.1 kW) fits one US office circuit (15 A / 120 V: 1,440 W).
DESK: dict[str, Any] = {
    "model": {"preset": "llama-3-8b"}, "training": {"method": "lora"}, "data": {"tokens": 2e8},
    "schedule": {"runs_per_month": 4, "deadline_days": 1},
    "deployment": {"mode": "buy", "budget_usd": 40000, "country": "US", "site": "desk"},
}


def _req(**deployment: Any) -> Requirements:
    return Requirements.model_validate({**DESK, "deployment": {**DESK["deployment"], **deployment}})


def _site_kind_of(req: Requirements, gpu: str, count: int) -> str:
    """Where the build of ``count`` x ``gpu`` stands, sized on its own (the engine pinned to it)."""
    data = {**req.model_dump(exclude_none=True), "hardware": {"gpu": gpu, "count": count}}
    pinned = Requirements.model_validate(data)
    r = recommend(pinned, CAT)
    assert r.found and r.build is not None
    return r.build.site_kind


@pytest.fixture(scope="module")
def us_desk() -> Recommendation:
    return recommend(_req(), CAT)


def test_the_desk_pick_runs_on_one_office_circuit(us_desk: Recommendation) -> None:
    b = us_desk.build
    assert b is not None and not b.rented
    assert b.site_kind == "desk", b.site
    assert "wall-circuit" not in {p.id for p in us_desk.pitfalls}
    # ... and a build that needs a dedicated circuit was cheaper per run: the rule decided it
    over = [a for a in us_desk.alternatives if a.dedicated_circuit]
    assert over and min(a.cost_per_run_usd for a in over) < (us_desk.cost_per_run_usd or 0)


def test_alternatives_that_need_a_circuit_are_marked_and_say_so(us_desk: Recommendation) -> None:
    assert us_desk.alternatives
    for a in us_desk.alternatives:
        kind = _site_kind_of(_req(), a.gpu, a.count)
        assert a.dedicated_circuit == (kind == "office"), (a, kind)
        assert ("dedicated circuit" in a.reason) == a.dedicated_circuit, a.reason


def test_the_front_holds_only_builds_the_desk_takes(us_desk: Recommendation) -> None:
    b = us_desk.build
    assert b is not None
    assert any(p.gpu == b.gpu and p.count == b.gpus_per_node for p in us_desk.pareto), us_desk.pareto
    for p in us_desk.pareto:
        assert _site_kind_of(_req(), p.gpu, p.count) == "desk", p


def test_a_bigger_circuit_takes_the_cheaper_build() -> None:
    """The same job in Germany: one 16 A / 230 V circuit carries 2,944 W, so nothing needs a dedicated
    circuit and the cheapest build per run is the pick again."""
    de = recommend(_req(country="DE"), CAT)
    assert de.build is not None and de.build.site_kind == "desk"
    assert not any(a.dedicated_circuit for a in de.alternatives)
    assert all(a.cost_per_run_usd >= 0.95 * (de.cost_per_run_usd or 0) for a in de.alternatives)


def test_when_only_a_big_box_meets_the_deadline_it_is_picked_and_warned() -> None:
    """A deadline no circuit-sized desk box meets with slack: the deadline comes first, the pick needs a
    dedicated circuit, and the wall-circuit pitfall names it."""
    r = recommend(Requirements.model_validate({**DESK, "schedule": {"runs_per_month": 4, "deadline_days": 0.5}}), CAT)
    assert r.found and r.build is not None and not r.build.rented
    assert r.build.site_kind == "office", r.build.site
    assert "wall-circuit" in {p.id for p in r.pitfalls}
