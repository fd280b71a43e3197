"""A stated global batch is a hyperparameter of the run: the plan trains it (rounded up to whole micro-batches
per replica by at most models.BATCH_SLACK), the search drops shapes whose replicas cannot split it, and a rounded
batch is said (the batch-rounded pitfall). A defaulted batch grows with the replicas up to what a run like this
uses (estimate.batch_most), and no further: the search drops shapes past it, and an asked count past it is said
(the batch-grown pitfall)."""

from __future__ import annotations

import pytest

from gpuwiz.core import memo
from gpuwiz.core.catalog import load_catalog
from gpuwiz.core.estimate import (
    DEFAULT_GB_FINETUNE,
    GROWN_BATCH_MAX_FINETUNE,
    GROWN_BATCH_MAX_NONTOKEN,
    GROWN_BATCH_MAX_PRETRAIN_TOKENS,
    _mb_cap_of,
    batch_most,
    estimate,
    planned_batch,
    prepare,
)
from gpuwiz.core.models import BATCH_SLACK, Requirements
from gpuwiz.core.parallel import pow2_at_most
from gpuwiz.core.recommend import DROP_BATCH_GROWN, DROP_BATCH_SPLIT, recommend

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
    cap = _mb_cap_of(model, 2048, gb, None, dp, (1 + BATCH_SLACK) * gb)
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


def test_the_most_a_step_may_train() -> None:
    """A stated batch within the slack; a defaulted one grown up to its kind's limit, never below the default."""
    llm = prepare(req(), CAT).model
    cnn = prepare(Requirements.model_validate({"model": {"preset": "resnet-50"}, "data": {"samples": 1e6}}), CAT).model
    assert batch_most(llm, "pretrain", 4096, 1024, True) == (1 + BATCH_SLACK) * 1024
    assert batch_most(llm, "pretrain", 4096, 1024, False) == GROWN_BATCH_MAX_PRETRAIN_TOKENS // 4096 == 4096
    assert batch_most(llm, "lora", 4096, DEFAULT_GB_FINETUNE, False) == GROWN_BATCH_MAX_FINETUNE == 512
    assert batch_most(cnn, "full", 224, 256, False) == GROWN_BATCH_MAX_NONTOKEN
    assert batch_most(llm, "full", 4096, 64, False) == 4096  # full training: continued pre-training's batches
    assert batch_most(llm, "lora", 4096, 100_000, False) == 100_000  # (a default above the limit is kept)


def test_a_defaulted_batch_grows_only_to_its_limit() -> None:
    """The micro-batch cap of a defaulted batch keeps whole micro-batches on every replica within the limit."""
    model = prepare(req(training={"method": "pretrain"}), CAT).model
    most = batch_most(model, "pretrain", 2048, 2048, False)
    for dp in (8, 96, 1024, 4096, 8192):
        cap = _mb_cap_of(model, 2048, 2048, None, dp, most)
        assert cap == 1 or planned_batch(2048, pow2_at_most(cap), dp) <= most
        assert cap <= _mb_cap_of(model, 2048, 2048, None, dp)


def test_fastest_never_grows_a_defaulted_batch_past_what_the_run_uses() -> None:
    """Mixtral LoRA on 500M tokens, fastest, no batch stated: the old pick was 26,464 B200s training 26,464
    sequences a step (about five optimizer steps a run). Now the pick trains at most 512 a step, the shapes past it
    are dropped as such, and the assumptions say the default grew."""
    memo.clear()
    r = Requirements.model_validate({
        "model": {"preset": "mixtral-8x7b"}, "training": {"method": "lora"}, "data": {"tokens": 5e8},
        "schedule": {"runs_per_month": 4, "deadline_days": 2},
        "deployment": {"mode": "rent", "objective": "fastest", "country": "US"}})
    rec = recommend(r, CAT)
    assert rec.found and rec.estimate is not None
    p = rec.estimate.plan
    assert p.batch_defaulted and p.batch_limit == GROWN_BATCH_MAX_FINETUNE
    assert DEFAULT_GB_FINETUNE < p.global_batch <= GROWN_BATCH_MAX_FINETUNE
    assert rec.dropped.get(DROP_BATCH_GROWN, 0) > 0
    said = [a for a in rec.estimate.assumptions if a.startswith("global batch")]
    assert said and f"the default {DEFAULT_GB_FINETUNE}" in said[0] and f"{p.global_batch:,}" in said[0]
    assert not [x for x in rec.pitfalls if x.id == "batch-grown"]  # (within the limit: nothing to warn of)


def test_an_asked_count_past_the_limit_is_said() -> None:
    r = req(training={"method": "lora"}, model={"preset": "llama-3-8b"})
    e = estimate(r, CAT, "h100-sxm", 1024, 8)  # (a LoRA fine-tune: at most 512 sequences a step)
    assert e.plan.global_batch > e.plan.batch_limit == GROWN_BATCH_MAX_FINETUNE
    from gpuwiz.core import pitfalls as pit

    ctx = pit.Context(req=r, cat=CAT, gpu=CAT.gpu("h100-sxm"), est=e)
    (hit,) = [p for p in pit.check(ctx) if p.id == "batch-grown"]
    assert f"train {e.plan.global_batch:,} samples a step" in hit.message and "512" in hit.message
    ok = estimate(r, CAT, "h100-sxm", 64, 8)  # 64 replicas: the default as it is
    assert ok.plan.global_batch == DEFAULT_GB_FINETUNE
    assert not [p for p in pit.check(pit.Context(req=r, cat=CAT, gpu=CAT.gpu("h100-sxm"), est=ok))
                if p.id == "batch-grown"]
