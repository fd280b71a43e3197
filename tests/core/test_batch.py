"""A stated global batch is a hyperparameter of the run: the plan trains it (rounded up to whole micro-batches
per replica by at most models.BATCH_SLACK), the search drops shapes whose replicas cannot split it, and a rounded
batch is said (the batch-rounded pitfall)."""

from __future__ import annotations

import pytest

from gpuwiz.core import memo
from gpuwiz.core.catalog import load_catalog
from gpuwiz.core.estimate import _mb_cap_of, estimate, planned_batch, prepare
from gpuwiz.core.models import BATCH_SLACK, Requirements
from gpuwiz.core.parallel import pow2_at_most
from gpuwiz.core.recommend import DROP_BATCH_SPLIT, recommend

CAT = load_catalog()


def req(**kw: object) -> Requirements:
    base: dict[str, object] = {"model": {"preset": "llama-3-8b"},
                               "training": {"method": "pretrain", "global_batch": 1024}, "data": {"tokens": 1e11},
                               "schedule": {"runs_per_month": 0.5, "deadline_days": 30},
                               "deployment": {"mode": "rent", "objective": "fastest", "budget_usd": 5e6}}
    base.update(kw)
    return Requirements.model_validate(base)


@pytest.mark.parametrize(("gb", "dp"), [(1024, 8), (1024, 96), (4096, 56), (1024, 928), (256, 240), (1000, 3)])
def test_the_micro_batch_cap_keeps_a_stated_batch_within_the_slack(gb: int, dp: int) -> None:
    model = prepare(req(), CAT).model
    free = _mb_cap_of(model, 2048, gb, None, dp)
    cap = _mb_cap_of(model, 2048, gb, None, dp, stated=True)
    assert 1 <= cap <= free
    top = pow2_at_most(cap)  # the largest micro-batch the planner may pick under the cap
    if cap > 1 or planned_batch(gb, 1, dp) <= (1 + BATCH_SLACK) * gb:
        assert planned_batch(gb, top, dp) <= (1 + BATCH_SLACK) * gb
    if planned_batch(gb, pow2_at_most(free), dp) <= (1 + BATCH_SLACK) * gb:
        assert cap == free  # a batch the replicas split well loses nothing


def test_planned_batch_is_whole_micro_batches_per_replica() -> None:
    assert planned_batch(1024, 1, 96) == 1056 and planned_batch(1024, 2, 8) == 1024
    assert planned_batch(1024, 1, 928) == 1856 and planned_batch(4096, 64, 56) == 7168


def test_fastest_never_trains_another_batch() -> None:
    """With 1,024 sequences a step, 928 replicas would train 1,856 (the old pick): the fastest build now splits the
    batch, and the shapes that cannot are dropped as such."""
    memo.clear()
    rec = recommend(req(), CAT)
    assert rec.found and rec.estimate is not None
    p = rec.estimate.plan
    trained = p.micro_batch * p.grad_accum * (p.dp // max(1, p.cp))
    assert 1024 <= trained <= (1 + BATCH_SLACK) * 1024
    assert rec.dropped.get(DROP_BATCH_SPLIT, 0) > 0


def test_an_estimate_on_a_count_that_cannot_split_the_batch_says_so() -> None:
    r = req()
    e = estimate(r, CAT, "h100-sxm", 928, 8)
    trained = e.plan.micro_batch * e.plan.grad_accum * (e.plan.dp // max(1, e.plan.cp))
    assert trained > (1 + BATCH_SLACK) * 1024  # asked for this count: planned as asked, ...
    from gpuwiz.core import pitfalls as pit

    ctx = pit.Context(req=r, cat=CAT, gpu=CAT.gpu("h100-sxm"), est=e)
    (hit,) = [p for p in pit.check(ctx) if p.id == "batch-rounded"]  # ... and said
    assert f"global batch of {trained:,}" in hit.message


def test_a_defaulted_batch_is_the_estimators_to_round() -> None:
    r = req(training={"method": "pretrain"})
    model = prepare(r, CAT).model
    assert _mb_cap_of(model, 2048, 1024, None, 96) == _mb_cap_of(model, 2048, 1024, None, 96, stated=False)
