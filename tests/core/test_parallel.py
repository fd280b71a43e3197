"""Plan choice: the simplest layout that fits, pinned values respected."""

from __future__ import annotations

import pytest

from gpuwiz.core.catalog import load_catalog
from gpuwiz.core.estimate import estimate
from gpuwiz.core.models import Requirements
from gpuwiz.core.parallel import Pinned, Shape, candidate_shapes


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def req(**kw) -> Requirements:
    return Requirements.model_validate(kw)


def test_candidate_order_is_simplest_first():
    shapes = candidate_shapes(16, 8, 2, 8, True, 32, 8, 32, Pinned())
    assert shapes[0] == Shape(0, 1, 1, "none")
    assert [s.zero for s in shapes[1:4]] == [1, 2, 3]
    kinds = ["offload" if s.offload != "none" else "pp" if s.pp > 1 else "tp" if s.tp > 1 else "dp" for s in shapes]
    # DP/ZeRO, then TP, then PP, then offload
    assert kinds == sorted(kinds, key=["dp", "tp", "pp", "offload"].index)
    assert all(s.tp <= 8 for s in shapes)


def test_no_tp_without_nvlink():
    shapes = candidate_shapes(4, 4, 1, 1, True, 32, 32, 32, Pinned())
    assert all(s.tp == 1 for s in shapes)
    assert any(s.pp > 1 for s in shapes)  # PP inside a PCIe box is allowed


def test_small_model_uses_ddp(cat):
    e = estimate(req(model={"preset": "gpt2-124m"}), cat, "a100-80gb-sxm", 8)
    assert e.plan.zero_stage == 0 and e.plan.tp == 1 and e.plan.pp == 1 and e.plan.framework == "PyTorch DDP"
    assert e.plan.activation_checkpointing == "none"
    one = estimate(req(model={"preset": "gpt2-124m"}), cat, "a100-80gb-sxm", 1)
    assert one.plan.framework == "PyTorch (single GPU)"


def test_7b_full_on_8_gpus_needs_sharding(cat):
    e = estimate(req(model={"preset": "llama-2-7b"}, training={"micro_batch": 1}), cat, "a100-80gb-sxm", 8)
    assert e.feasible and e.plan.zero_stage >= 1
    assert e.plan.dp * e.plan.tp * e.plan.pp == 8


def test_70b_on_64_h100_shards_without_offload(cat):
    e = estimate(req(model={"preset": "llama-2-70b"}), cat, "h100-sxm", 64)
    assert e.feasible and e.plan.offload == "none"
    assert e.plan.zero_stage == 3 or e.plan.tp > 1 or e.plan.pp > 1


def test_pinned_plan_is_kept(cat):
    e = estimate(req(model={"preset": "llama-2-7b"},
                     training={"micro_batch": 2, "activation_checkpointing": "selective",
                               "parallel": {"zero_stage": 1, "tp": 2, "pp": 1}}), cat, "h100-sxm", 8)
    p = e.plan
    assert (p.zero_stage, p.tp, p.pp, p.micro_batch, p.activation_checkpointing) == (1, 2, 1, 2, "selective")
    assert p.dp == 4 and p.framework == "Megatron-LM TP=2 + ZeRO-1"


def test_impossible_pinned_tp_is_a_problem_not_an_exception(cat):
    e = estimate(req(model={"preset": "llama-2-7b"}, training={"parallel": {"tp": 3}}), cat, "h100-sxm", 8)
    assert not e.feasible and any("tp" in p for p in e.problems)


def test_checkpointing_chosen_to_fit(cat):
    # Llama-3-8B at 8k context: the activations of one sequence do not fit without recompute on 8x A100-40GB
    e = estimate(req(model={"preset": "llama-3-8b"}), cat, "a100-40gb-sxm", 8)
    assert e.feasible and e.plan.activation_checkpointing == "full"
    assert any("activation checkpointing: full (chosen to fit)" in a for a in e.assumptions)


def test_micro_batch_is_power_of_two_and_grad_accum_covers_global_batch(cat):
    e = estimate(req(model={"preset": "gpt2-124m"}, training={"global_batch": 100}), cat, "h100-sxm", 4)
    mb = e.plan.micro_batch
    assert mb & (mb - 1) == 0
    assert mb * e.plan.dp * e.plan.grad_accum >= 100


def test_offload_is_last_resort_and_reports_host_ram(cat):
    e = estimate(req(model={"preset": "llama-2-13b"}), cat, "rtx-4090", 1)
    if e.feasible:
        assert e.plan.offload != "none" and e.memory.host_ram_gib > 100
